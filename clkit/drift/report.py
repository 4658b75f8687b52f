"""Tables, findings and closing text of notebook 05_drift, from :func:`clkit.drift.experiment.run_protocols`.

Every function takes the run's rows (a DataFrame with one row per configuration,
method and seed) or their per-protocol summaries, and returns a DataFrame, a dict for
``results.json`` or Markdown text; nothing here trains or draws.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

__all__ = ["METRICS", "summarise", "setting_table", "firings_table", "sweep_rows", "sweep_series",
           "advantage_series", "sigmas_of", "finding_series", "sweep_verdicts", "study_verdicts", "contraction_verdict", "verdict_findings",
           "NULL_SEED_OFFSET", "findings_markdown", "update_findings_block", "overlap_fits_table", "intervals_markdown", "sweep_table", "sweep_record", "replacement",
           "batch_size_table", "advantage_table", "data_markdown", "closing_text", "keyed"]

#: the columns summarised per (configuration, method)
METRICS = ["AA", "AF", "A_AUC", "AF_s", "overlap", "detector_firings"]


def summarise(df: pd.DataFrame):
    """Mean and (population) standard deviation over seeds per (config, method).

    Examples
    --------
    >>> df = pd.DataFrame({"config": ["c", "c"], "method": ["bare", "bare"], "seed": [1, 2], "AA": [0.5, 0.7],
    ...                    "AF": [0, 0], "A_AUC": [0.4, 0.6], "AF_s": [0, 0], "overlap": [0.1, 0.1],
    ...                    "detector_firings": [np.nan, np.nan]})
    >>> m, s = summarise(df)
    >>> [round(float(m.loc[("c", "bare"), "AA"]), 3), round(float(s.loc[("c", "bare"), "AA"]), 3)]
    [0.6, 0.1]
    """
    g = df.groupby(["config", "method"], sort=False)[METRICS]
    return g.mean(), g.std(ddof=0)


def keyed(mean: pd.DataFrame) -> dict:
    """``{"<config> | <method>": {metric: value}}`` for results.json."""
    return {f"{c} | {m}": r for (c, m), r in mean.to_dict("index").items()}


def setting_table(stats, cfg, cols, n_seeds: int) -> pd.DataFrame:
    """Percentages of one configuration, ``mean ± std`` over seeds; Joint's forgetting is n/a (no stream)."""
    mm, ss = stats
    m, s = 100 * mm.loc[cfg.label()][cols], 100 * ss.loc[cfg.label()][cols]
    out = m.round(1).astype(str) if n_seeds == 1 else m.round(1).astype(str) + " ± " + s.round(1).astype(str)
    for c in cols:
        if c in ("AF", "AF_s") and "joint" in out.index:
            out.loc["joint", c] = "n/a (no stream)"
    return out


def firings_table(stats_by: dict, configs_main, methods) -> tuple[pd.DataFrame, pd.DataFrame]:
    """MAS*'s detector firings per setting and protocol, and MAS* − Bare in points.

    Returns ``(table, fire)``: the displayed table and the firings alone (protocol columns).
    """
    protocols = list(stats_by)
    fire = pd.DataFrame({pr: [stats_by[pr][0].loc[(c.label(), "mas_star"), "detector_firings"] for c in configs_main]
                         for pr in protocols}, index=[c.label() for c in configs_main])
    gaps = pd.DataFrame({f"{pr}: MAS* − Bare (points)": [
        100 * (stats_by[pr][0].loc[(c.label(), "mas_star"), k] - stats_by[pr][0].loc[(c.label(), "bare"), k])
        for c, k in zip(configs_main, ["AA", "A_AUC", "AA", "AA"])] for pr in protocols if "bare" in methods},
        index=fire.index)
    return pd.concat([fire.add_suffix(": detector firings"), gaps.round(1)], axis=1), fire


def sigmas_of(sigmas, protocol: str) -> list:
    """The σ sweep of ``protocol``: ``sigmas`` itself, or ``sigmas[protocol]`` when σ was solved per protocol.

    Examples
    --------
    >>> sigmas_of([1.0, 8.0], "text"), sigmas_of({"text": [2.0], "authors": [3.0]}, "authors")
    ([1.0, 8.0], [3.0])
    """
    return list(sigmas[protocol] if isinstance(sigmas, dict) else sigmas)


def sweep_rows(df: pd.DataFrame, sigmas, batch_size: int, sampling: str) -> pd.DataFrame:
    """The rows of the σ sweep: Gaussian setting at the main batch size and sampling, σ in ``sigmas``."""
    return df[(df.setting == "gaussian") & (df.batch_size == batch_size) & (df.sampling == sampling)
              & df.sigma.isin(sigmas)]


def sweep_series(df, method: str, key: str, sigmas, batch_size: int, sampling: str):
    """Mean and std over seeds of ``key`` for ``method`` at every σ of the sweep (Series indexed by σ)."""
    d = sweep_rows(df, sigmas, batch_size, sampling)
    g = d[d.method == method].groupby("sigma")[key]
    return g.mean().reindex(sigmas), g.std(ddof=0).reindex(sigmas)


def advantage_series(df, cl: str, sigmas, batch_size: int, sampling: str):
    """``cl`` − Bare in A_AUC per σ (paired by seed): mean, std and the overlap index of each σ."""
    d = sweep_rows(df, sigmas, batch_size, sampling)
    piv = d.pivot_table(index=["sigma", "seed"], columns="method", values="A_AUC")
    diff = (piv[cl] - piv["bare"]).groupby("sigma")
    ov = d.groupby("sigma")["overlap"].mean().reindex(sigmas)
    return diff.mean().reindex(sigmas), diff.std(ddof=0).reindex(sigmas), ov


def finding_series(runs: dict, sweep_methods, sigmas, batch_size: int, sampling: str) -> dict:
    """The σ sweep's series behind the three findings, for the figure.

    Returns
    -------
    dict -- ``(protocol, "bare" | "forget" | "adv") -> (mean, std[, overlap])`` over seeds
    (Bare's A_AUC, the CL method's AF_s, CL − Bare in A_AUC) per σ.
    """
    cl_sweep = [m for m in sweep_methods if m != "bare"]
    series, all_sigmas = {}, sigmas
    for pr, (df, _, _) in runs.items():
        sigmas = sigmas_of(all_sigmas, pr)
        if "bare" in sweep_methods:
            series[(pr, "bare")] = sweep_series(df, "bare", "A_AUC", sigmas, batch_size, sampling)
        if cl_sweep:
            series[(pr, "forget")] = sweep_series(df, cl_sweep[0], "AF_s", sigmas, batch_size, sampling)
            if "bare" in sweep_methods:
                series[(pr, "adv")] = advantage_series(df, cl_sweep[0], sigmas, batch_size, sampling)
    return series


def sweep_table(runs: dict, sweep_methods, sigmas, batch_size: int, sampling: str) -> pd.DataFrame:
    """A_AUC and AF_s (%) of the sweep methods at every σ, per protocol (σ as columns)."""
    tab = pd.concat({pr: (100 * sweep_rows(df, sigmas_of(sigmas, pr), batch_size, sampling)
                          .loc[lambda d: d.method.isin(sweep_methods)]
                          .groupby(["method", "sigma"])[["A_AUC", "AF_s"]].mean()).round(1)
                     for pr, (df, _, _) in runs.items()}, axis=1)
    return tab.unstack("sigma")


def sweep_record(runs: dict, sigmas, batch_size: int, sampling: str) -> dict:
    """``{protocol: {"sigma=<σ> | <method>": {"A_AUC", "AF_s"}}}`` for results.json (every method of the sweep)."""
    return {pr: {f"sigma={s:g} | {m}": {"A_AUC": r.A_AUC, "AF_s": r.AF_s}
                 for (m, s), r in sweep_rows(df, sigmas_of(sigmas, pr), batch_size, sampling)
                 .groupby(["method", "sigma"])[["A_AUC", "AF_s"]].mean().iterrows()}
            for pr, (df, _, _) in runs.items()}


def replacement(mean: pd.DataFrame, online, sigma: float, batch_size: int) -> pd.DataFrame:
    """A_AUC (%) of every online method on the main Gaussian setting without and with replacement."""
    from .experiment import StreamConfig

    cols = {}
    for s in ("without", "with"):
        cfg = StreamConfig("gaussian", sigma=sigma, batch_size=batch_size, sampling=s)
        cols[s] = [100 * mean.loc[(cfg.label(), m), "A_AUC"] for m in online]
    return pd.DataFrame(cols, index=list(online))


def batch_size_table(mean: pd.DataFrame, sigma: float, batch_sizes, sampling: str, methods) -> pd.DataFrame:
    """A_AUC (%) of ``methods`` on the main Gaussian setting at every batch size, and ΔA_AUC first to last."""
    from .experiment import StreamConfig

    configs_bs = [StreamConfig("gaussian", sigma=sigma, batch_size=b, sampling=sampling) for b in batch_sizes]
    bt = pd.DataFrame({f"B={c.batch_size}": 100 * mean.loc[c.label()]["A_AUC"] for c in configs_bs})
    bt = bt.loc[list(methods)]
    if len(configs_bs) > 1:
        bt["ΔA_AUC"] = bt.iloc[:, -1] - bt.iloc[:, 0]
    return bt


def advantage_table(stats_by: dict, configs_main, methods) -> pd.DataFrame:
    """Per protocol and main configuration: the best CL method's AA and A_AUC minus Bare's (fractions)."""
    cl = [m for m in methods if m not in ("bare", "joint")]
    adv = []
    if "bare" in methods and cl:
        for pr, (mm, _) in stats_by.items():
            for c in configs_main:
                block = mm.loc[c.label()]
                row = {"protocol": pr, "config": c.label(), "setting": c.setting,
                       "overlap": block["overlap"].iloc[0]}
                for key in ("AA", "A_AUC"):
                    best = block.loc[cl, key].idxmax()
                    row[f"best_{key}"] = best
                    row[f"advantage_{key}"] = block.loc[best, key] - block.loc["bare", key]
                adv.append(row)
    return pd.DataFrame(adv)


def data_markdown(graph, stats: dict, data: dict, dataset: str, name: str, dropped, classes_per_task: int) -> str:
    """One paragraph naming the data this run used, its size and each protocol's stream and test nodes."""
    split0 = next(iter(data.values()))[1]
    if dataset == "auto" and name == "cora":
        why = " (dataset='auto': real Cora, read offline)"
    elif dataset == "auto":
        why = " (dataset='auto': Cora could not be read, so the synthetic CSBM)"
    else:
        why = ""
    return (f"**Data used:** {graph.source}{why}.  \n{stats['num_nodes']} nodes, {stats['num_edges']} edges, "
            f"{stats['num_classes']} classes, homophily {stats['homophily']:.2f}, "
            f"average degree {stats['avg_degree']:.1f}; {split0.num_tasks} latent tasks. "
            + " ".join(f"Protocol {pr}: {sum(map(len, s.task_nodes))} stream nodes, {len(s.test_idx)} test nodes."
                       for pr, (_, s) in data.items())
            + (f" Classes {dropped} do not fill a task of {classes_per_task} and are left out." if dropped else ""))


def closing_text(stats_by: dict, verdicts, *, source: str, name: str, num_tasks: int, configs_main, methods,
                 sigma: float, batch_size: int, n_seeds: int, small_n: int = 4) -> str:
    """The closing Markdown, generated from the verdicts (:func:`clkit.stats.closing_text`) and the summaries.

    Finding 3 is stated only as :func:`contraction_verdict` decides it; with failed
    controls or fewer than ``small_n`` seeds no finding is read.
    """
    from .. import stats

    cfg_gauss = configs_main[1]
    lines = [f"Data: {source} ({num_tasks} latent tasks, batches of {batch_size}, {n_seeds} seed(s))."]
    if verdicts:
        lines.append(stats.closing_text(verdicts, subject="this run", small_n=small_n))
    for pr, (mm, _) in stats_by.items():
        part = [f"**{pr} protocol.**"]
        if "joint" in methods:
            part.append(f"Joint reaches {100 * mm.loc[(cfg_gauss.label(), 'joint'), 'AA']:.1f}%"
                        + (" (one optimisation step, as the released code trains it on a graph this small)"
                           if pr == "authors" else "") + ".")
        if "bare" in methods:
            part.append(f"Bare: A_AUC {100 * mm.loc[(cfg_gauss.label(), 'bare'), 'A_AUC']:.1f}% "
                        f"under Gaussian mixing (σ = {sigma:g}), AA "
                        f"{100 * mm.loc[(configs_main[0].label(), 'bare'), 'AA']:.1f}% after hard transitions.")
        if any(v.comparison.startswith(f"{pr}: (3a)") for v in verdicts):
            part.append(f"(3) The CL advantage contracts with overlap: {contraction_verdict(verdicts, pr, small_n)}.")
        if "mas_star" in methods:
            n = mm.loc[(cfg_gauss.label(), "mas_star"), "detector_firings"]
            part.append(f"MAS*'s detector fired {n:.1f} time(s) on average under Gaussian mixing"
                        + (" -- so MAS* stayed Bare." if n == 0 else "."))
        lines.append(" ".join(part))
    scale = "a synthetic graph" if source.startswith("synthetic") else f"{name}"
    lines.append(f"This is a small-scale run on {scale}: compare the direction of each effect with the paper "
                 "(CoraFull, ogbn-arxiv, Reddit, Roman-Empire), not the exact numbers. Under the authors' "
                 "protocol, SEM's curvature proxy and DMSG's losses are not theirs.")
    return "\n\n".join(lines)


def findings_markdown(results: dict) -> str:
    """The user guide's findings block from a run's results.json (``summary``, verdicts, key numbers).

    Parameters
    ----------
    results : dict -- the parsed results.json of a notebook 05_drift run
    """
    r = results.get("results", results)
    params = results.get("params", {})
    source = str(r.get("data_source", "?"))
    short = source.split(" from /")[0]  # no machine-local paths in the guide
    sweep = (f"overlaps {params['overlaps']} (σ solved per protocol)" if params.get("overlaps")
             else f"σ sweep {params.get('sigmas', '?')}")
    lines = [f"Run: dataset `{r.get('dataset_used', '?')}` ({short}), seeds {params.get('seeds', '?')}, "
             f"{sweep}, evaluation interval {r.get('eval_every', '?')}.", ""]
    verdicts = r.get("verdicts") or []
    if verdicts:
        lines += ["| comparison | decision | effect (points) | 95 % CI | p | n |", "|---|---|---|---|---|---|"]
        for v in verdicts:
            ci = (f"{v['ci_low']:+.1f} … {v['ci_high']:+.1f}" if v.get("ci_low") is not None else "")
            eff = f"{v['effect']:+.1f}" if v.get("effect") is not None else ""
            p = f"{v['p']:.2g}" if v.get("p") is not None else ""
            lines.append(f"| {v['comparison']} | {v['decision']} | {eff} | {ci} | {p} | {v['n']} |")
        lines.append("")
    lines.append(f"Controls hold: **{r.get('controls_hold')}**.")
    lines += ["", str(r.get("summary", "")).replace(source, short)]
    return "\n".join(lines)


# ------------------------------------------------------------------ verdicts (clkit.stats)
#: seed offset of the null control's second Bare run (seeds never used by the comparison)
NULL_SEED_OFFSET = 1000


def _by_seed(d: pd.DataFrame, method: str, sigma: float, key: str) -> np.ndarray:
    """``key`` of ``method`` at ``sigma``, one value per seed in seed order (points)."""
    r = d[(d.method == method) & (d.sigma == sigma)].sort_values("seed")
    return 100 * r[key].to_numpy(dtype=float)


def sweep_verdicts(df: pd.DataFrame, null_df: pd.DataFrame | None, protocol: str, sweep_methods, sigmas,
                   batch_size: int, sampling: str) -> list:
    """The σ sweep's findings under one protocol, each a paired test over seeds (:func:`clkit.stats.paired`).

    Findings (one Holm family per protocol), in points of A_AUC / AF_s:

    - (1) Bare's A_AUC at the largest σ minus at the smallest (the paper: rises);
    - (2) the CL method's AF_s at the largest σ minus at the smallest (the paper: falls, i.e.
      forgetting grows);
    - (3a) CL − Bare at the lowest overlap (the advantage that could contract);
    - (3b) (CL − Bare) at the highest overlap minus at the lowest (the paper: contracts).

    Null control: Bare at the lowest-overlap σ on seeds ``s + NULL_SEED_OFFSET`` minus Bare on
    seeds ``s`` (``null_df``): two runs of the same learner on the same configuration that
    differ only in the seed (stream, initialisation, batch order), so the true difference is
    zero and the rule must say "no difference". (Bare against ER with an empty buffer would be
    the same computation twice -- every difference exactly 0 -- and could never fail.)

    Returns
    -------
    list of clkit.stats.Verdict -- the control last
    """
    from .. import stats

    cl_sweep = [m for m in sweep_methods if m != "bare"]
    sigmas = sigmas_of(sigmas, protocol)
    d = sweep_rows(df, sigmas, batch_size, sampling)
    out = []
    s_lo, s_hi = min(sigmas), max(sigmas)
    ov = d.groupby("sigma")["overlap"].mean().reindex(sigmas)
    o_lo, o_hi = ov.idxmin(), ov.idxmax()
    pr = protocol

    def at(sig) -> str:  # "σ = 38.6 (overlap 0.80)": σ to 3 digits, with the overlap it gives
        o = ov.get(sig, float("nan"))
        return f"σ = {sig:.3g}" + (f" (overlap {o:.2f})" if o == o else "")

    if len(sigmas) >= 2 and "bare" in sweep_methods:
        out.append(stats.paired(_by_seed(d, "bare", s_hi, "A_AUC"), _by_seed(d, "bare", s_lo, "A_AUC"),
                                comparison=f"{pr}: (1) Bare A_AUC, {at(s_hi)} − {at(s_lo)}",
                                higher="rises with σ (as the paper)", lower="falls with σ"))
    if cl_sweep:
        cl = cl_sweep[0]
        if len(sigmas) >= 2:
            out.append(stats.paired(_by_seed(d, cl, s_hi, "AF_s"), _by_seed(d, cl, s_lo, "AF_s"),
                                    comparison=f"{pr}: (2) {cl} AF_s, {at(s_hi)} − {at(s_lo)}",
                                    higher="forgetting shrinks with σ", lower="forgetting grows with σ (as the paper)"))
        if "bare" in sweep_methods:
            adv_lo = _by_seed(d, cl, o_lo, "A_AUC") - _by_seed(d, "bare", o_lo, "A_AUC")
            out.append(stats.paired(adv_lo, comparison=f"{pr}: (3a) {cl} − Bare A_AUC at the lowest overlap "
                                                       f"({at(o_lo)})",
                                    higher=f"{cl} higher", lower="Bare higher"))
            if len(sigmas) >= 2:
                adv_hi = _by_seed(d, cl, o_hi, "A_AUC") - _by_seed(d, "bare", o_hi, "A_AUC")
                out.append(stats.paired(adv_hi, adv_lo,
                                        comparison=f"{pr}: (3b) {cl} − Bare, highest − lowest overlap "
                                                   f"({at(o_hi)} − {at(o_lo)})",
                                        higher="advantage grows with overlap",
                                        lower="advantage contracts with overlap (as the paper)"))
    out = stats.holm(out) if len(out) > 1 else out
    if null_df is not None and len(null_df) and "bare" in sweep_methods:
        s_null = float(null_df["sigma"].iloc[0])
        shifted = 100 * null_df.sort_values("seed")["A_AUC"].to_numpy(dtype=float)
        out.append(stats.paired(shifted, _by_seed(d, "bare", s_null, "A_AUC"),
                                comparison=f"{pr}: null control, Bare (seed + {NULL_SEED_OFFSET}) − Bare (seed), "
                                           f"σ = {s_null:.3g}",
                                role="null control", expect=stats.NO_DIFFERENCE))
    return out


def study_verdicts(runs: dict, nulls: dict, sweep_methods, sigmas, batch_size: int, sampling: str) -> list:
    """:func:`sweep_verdicts` of every protocol of ``runs``, in protocol order (each family with its control)."""
    return [v for pr, (df, _, _) in runs.items()
            for v in sweep_verdicts(df, nulls.get(pr), pr, sweep_methods, sigmas, batch_size, sampling)]


def contraction_verdict(verdicts, protocol: str, small_n: int = 4) -> str:
    """Finding 3 in words: "contracts" only when CL beat Bare at low overlap and the gap shrank, both significantly.

    Not judged when a control of ``verdicts`` failed or the comparisons have fewer than
    ``small_n`` pairs.

    Examples
    --------
    >>> from clkit.stats import paired
    >>> vs = [paired([-1.0, -0.5, -0.8, -1.2], comparison="authors: (3a) er − Bare ...", higher="er higher",
    ...              lower="Bare higher")]
    >>> contraction_verdict(vs, "authors")
    'not testable here (no advantage of the CL method at low overlap: Bare higher, -0.875)'
    """
    from ..stats import NOT_TESTABLE, controls_hold

    a = next((v for v in verdicts if v.comparison.startswith(f"{protocol}: (3a)")), None)
    b = next((v for v in verdicts if v.comparison.startswith(f"{protocol}: (3b)")), None)
    if a is None:
        return "not judged (the sweep lacks Bare or a CL method)"
    if not controls_hold(verdicts)[0]:
        return "not judged: a control failed"
    if a.n < small_n:
        return f"not judged: {a.n} seed(s), fewer than {small_n}"
    if a.decision == NOT_TESTABLE or a.decision != a.higher:
        what = "no difference" if not a.significant else a.decision
        return (f"not testable here (no advantage of the CL method at low overlap: {what}, "
                f"{a.effect:+.3g})")
    if b is None:
        return "not judged (one σ)"
    if b.decision == b.lower:
        return f"reproduced: the advantage contracts ({b.effect:+.3g} points, p = {b.p:.2g})"
    if b.decision == b.higher:
        return f"opposite: the advantage grows ({b.effect:+.3g} points, p = {b.p:.2g})"
    return f"not reproduced: no significant contraction ({b.effect:+.3g} points, p = {b.p:.2g})"


def verdict_findings(verdicts, protocols, small_n: int = 4) -> pd.DataFrame:
    """One column per protocol, one row per finding: the decision and effect of each verdict, and finding 3."""
    from .. import stats

    cols = {}
    for pr in protocols:
        col = {}
        for v in verdicts:
            if v.comparison.startswith(f"{pr}: (") and v.role == "finding":
                # the row names the finding; each protocol's own σ (solved per protocol) goes in its cell
                key = re.sub(r",? \(?σ = .*$", "", v.comparison.split(": ", 1)[1])
                where = re.findall(r"σ = [^ ,)]+(?: \(overlap [^)]+\))?", v.comparison)
                col[key] = (f"{v.decision}, {v.effect:+.1f} ({stats._p_text(v.p)}, n = {v.n})"
                            + (f"; {' − '.join(where)}" if where else ""))
            elif v.comparison.startswith(f"{pr}: null"):
                col["null control (must be no difference)"] = \
                    f"{v.decision}, {v.effect:+.1f} ({stats._p_text(v.p)}) — {'holds' if v.control_ok else 'FAILS'}"
        col["(3) verdict: CL advantage contracts with overlap"] = contraction_verdict(verdicts, pr, small_n)
        cols[pr] = pd.Series(col)
    return pd.DataFrame(cols)


def update_findings_block(doc_path, results: dict, name: str = "findings-05_drift") -> str:
    """Rewrite the ``<!-- BEGIN generated: name -->`` … ``END`` block of ``doc_path`` with :func:`findings_markdown`.

    The file is written atomically; returns the new text. Raises ``ValueError`` naming
    the file when it has no such block.
    """
    from pathlib import Path

    from .._io import atomic_write_text

    path = Path(doc_path)
    text = path.read_text(encoding="utf-8")
    begin, end = f"<!-- BEGIN generated: {name} -->", f"<!-- END generated: {name} -->"
    if begin not in text or end not in text:
        raise ValueError(f"{path} has no generated block {name!r} (lines {begin!r} and {end!r})")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    new = f"{head}{begin}\n{findings_markdown(results).strip()}\n{end}{tail}"
    atomic_write_text(path, new)
    return new


def overlap_fits_table(fits: dict) -> pd.DataFrame:
    """σ solved for each target overlap, per protocol, with the overlap it achieves (both reported).

    Parameters
    ----------
    fits : dict -- ``protocol -> list of SigmaFit`` (:func:`clkit.drift.calibrate.sigmas_for_overlaps`)
    """
    return pd.DataFrame([{"protocol": pr, "target overlap": f.target, "σ (batches)": round(f.sigma, 3),
                          "achieved overlap": round(f.overlap, 3)} for pr, fs in fits.items() for f in fs])


def intervals_markdown(intervals: dict, notes) -> str:
    """One line naming each protocol's evaluation interval, with every override's note.

    Examples
    --------
    >>> intervals_markdown({"text": 20, "authors": 100}, [])
    'Evaluation interval Δ: text every 20 batches, authors every 100 batches.'
    """
    return ("Evaluation interval Δ: " + ", ".join(f"{pr} every {d} batches" for pr, d in intervals.items())
            + "".join(f". **Note:** {n}" for n in notes) + ".")
