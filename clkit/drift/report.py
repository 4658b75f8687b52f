"""Tables, findings and closing text of notebook 05_drift, from :func:`clkit.drift.experiment.run_protocols`.

Every function takes the run's rows (a DataFrame with one row per configuration,
method and seed) or their per-protocol summaries, and returns a DataFrame, a dict for
``results.json`` or Markdown text; nothing here trains or draws.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np
import pandas as pd

__all__ = ["time_stream_table", "year_bins_markdown", "METRICS", "summarise", "setting_table", "firings_table", "sweep_rows", "sweep_series",
           "advantage_series", "sigmas_of", "finding_series", "sweep_verdicts", "study_verdicts", "judge_families",
           "family_names", "PRIMARY", "PAPER_FORGETTING", "PipelineCheck", "pipeline_checks", "checks_hold",
           "pipeline_table", "claim3_gated", "contraction_verdict", "forgetting_verdict", "verdict_findings", "NULL_SEED_OFFSET",
           "findings_markdown", "update_findings_block", "overlap_fits_table", "intervals_markdown", "sweep_table",
           "sweep_record", "replacement", "batch_size_table", "advantage_table", "data_markdown", "closing_text",
           "keyed"]

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
    """A_AUC and AF_s (%) of the sweep methods: one row per protocol and σ, methods as columns.

    When σ is solved per protocol (the same overlap targets give each protocol its
    own σ), a shared σ column would be empty for the other protocol; so σ labels the
    rows of its protocol, and the mean overlap index of that σ's streams stands
    beside it (rows with the same overlap are comparable across protocols).

    Returns
    -------
    DataFrame
        Index (protocol, σ to 4 significant digits); columns ``("overlap", "")``, then
        ``(metric, method)`` for A_AUC and AF_s.

    Examples
    --------
    >>> rows = [dict(setting="gaussian", batch_size=10, sampling="without", sigma=s, method=m, seed=0,
    ...              A_AUC=a, AF_s=-a / 2, overlap=ov)
    ...         for s, ov in ((1.0, 0.2), (2.0, 0.5)) for m, a in (("bare", 0.3), ("er", 0.5))]
    >>> df = pd.DataFrame(rows)
    >>> t = sweep_table({"text": (df, None, None), "authors": (df.assign(sigma=df.sigma * 3), None, None)},
    ...                 ["bare", "er"], {"text": [1.0, 2.0], "authors": [3.0, 6.0]}, 10, "without")
    >>> t.shape, bool(t.isna().any().any()), float(t.loc[("authors", 6.0), ("A_AUC", "er")])
    ((4, 5), False, 50.0)
    """
    parts = {}
    for pr, (df, _, _) in runs.items():
        d = sweep_rows(df, sigmas_of(sigmas, pr), batch_size, sampling)
        overlap = d.groupby("sigma")["overlap"].mean()
        d = d[d.method.isin(sweep_methods)]
        t = (100 * d.groupby(["sigma", "method"])[["A_AUC", "AF_s"]].mean()).round(1).unstack("method")
        t.insert(0, ("overlap", ""), overlap.reindex(t.index).round(3))
        t.index = [float(f"{s:.4g}") for s in t.index]
        parts[pr] = t
    tab = pd.concat(parts, names=["protocol", "σ"])
    return tab


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


def time_stream_table(rows: pd.DataFrame) -> pd.DataFrame:
    """AA, AF and A_AUC per method on the time-ordered stream: mean and sd over seeds, in %, one decimal.

    Examples
    --------
    >>> r = pd.DataFrame({"method": ["bare", "bare"], "AA": [0.5, 0.7], "AF": [0.1, 0.1], "A_AUC": [0.4, 0.4]})
    >>> float(time_stream_table(r).loc["bare", ("AA", "mean")])
    60.0
    """
    return (100 * rows.groupby("method", sort=False)[["AA", "AF", "A_AUC"]].agg(["mean", "std"])).round(1)


def year_bins_markdown(task_years) -> str:
    """``Year bins: task 0: 1971-2010, ...`` for the time-ordered stream's tasks.

    Examples
    --------
    >>> year_bins_markdown([(1971, 2010), (2011, 2014)])
    'Year bins: task 0: 1971-2010, task 1: 2011-2014'
    """
    return "Year bins: " + ", ".join(f"task {k}: {a}-{b}" for k, (a, b) in enumerate(task_years))


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
                 sigma: float, batch_size: int, n_seeds: int, small_n: int = 4, checks=None) -> str:
    """The closing Markdown, generated from the verdicts (:func:`clkit.stats.closing_text`), the pipeline
    checks and the summaries.

    Pipeline checks first: when one fails the text says so and reads no finding (as a failed
    control does). Then :func:`clkit.stats.closing_text` (controls, the primary findings, the
    exploratory rows apart, what the run could detect); per protocol, findings 2 and 3 in words
    (:func:`forgetting_verdict`, :func:`contraction_verdict`).
    """
    from .. import stats

    cfg_gauss = configs_main[1]
    lines = [f"Data: {source} ({num_tasks} latent tasks, batches of {batch_size}, {n_seeds} seed(s))."]
    failed = [c for c in checks or [] if not c.holds]
    if failed:
        lines.append(f"**Pipeline checks fail** ({len(failed)} of {len(checks)}): "
                     + "; ".join(f"{c.name} ({c.detail})" for c in failed)
                     + ". The comparisons do not measure what they name, so none is read as a finding.")
        if verdicts:
            lines.append("Measured differences (not findings): " + "; ".join(
                f"{v.comparison} {v.effect:+.2g} ({stats._p_text(v.p)})" for v in verdicts
                if v.role == "finding" and v.n) + ".")
    else:
        if checks:
            lines.append(f"**Pipeline checks hold** ({len(checks)} of {len(checks)}): "
                         + "; ".join(c.name for c in checks) + ".")
        if verdicts:
            lines.append(stats.closing_text(claim3_gated(verdicts, small_n, checks), subject="this run",
                                            small_n=small_n))
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
        if any(v.comparison.startswith(f"{pr}: (2)") for v in verdicts):
            part.append(f"(2) Forgetting with σ: {forgetting_verdict(verdicts, pr, small_n, checks)}.")
        if any(v.comparison.startswith(f"{pr}: (3a)") for v in verdicts):
            part.append(f"(3) The CL advantage contracts with overlap: "
                        f"{contraction_verdict(verdicts, pr, small_n, checks)}.")
        if "mas_star" in methods:
            n = mm.loc[(cfg_gauss.label(), "mas_star"), "detector_firings"]
            part.append(f"MAS*'s detector fired {n:.1f} time(s) on average under Gaussian mixing"
                        + (" -- so MAS* stayed Bare." if n == 0 else "."))
        lines.append(" ".join(part))
    scale = "a synthetic graph" if source.startswith("synthetic") else f"{name}"
    lines.append(f"This is a small-scale run on {scale}: compare the direction of each effect with the paper "
                 "(CoraFull, ogbn-arxiv, Reddit, Roman-Empire), not the exact numbers.")
    return "\n\n".join(lines)


def findings_markdown(results: dict) -> str:
    """The user guide's findings block from a run's results.json (``summary``, verdicts, key numbers).

    Every verdict's interval is shown at the level its decision uses (``ci_level``), with its
    role (primary, exploratory, or the control's kind).

    Parameters
    ----------
    results : dict -- the parsed results.json of a notebook 05_drift run

    Examples
    --------
    >>> from clkit.stats import holm, paired
    >>> vs = holm([paired([1.0, 2.0, 1.5, 1.2], [0.0, 0.1, 0.0, 0.2], comparison="text: (3a) er − Bare"),
    ...            paired([0.3, -0.2, 0.1, 0.4], [0.0] * 4, comparison="text: (1) Bare")], name="p")
    >>> md = findings_markdown({"results": {"verdicts": [v.to_dict() for v in vs], "controls_hold": True}})
    >>> [line for line in md.splitlines() if line.startswith("| text: (3a)")]
    ['| text: (3a) er − Bare | primary | higher | +1.4 | +0.4 … +2.3 (97.5 %) | 0.017 | 4 |']
    """
    from ..stats import _level

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
        lines += ["| comparison | role | decision | effect (points) | CI (level of the decision) | p | n |",
                  "|---|---|---|---|---|---|---|"]
        for v in verdicts:
            level = _level(v.get("ci_level") or 0.95)
            if v.get("ci_low") is not None and v.get("ci_high") is not None:
                ci = f"{v['ci_low']:+.1f} … {v['ci_high']:+.1f} ({level} %)"
            else:
                ci = "unbounded at this n" if v.get("n", 0) >= 2 and v.get("decision") != "not testable" else ""
            role = v.get("role", "finding")
            role = v.get("scope", "primary") if role == "finding" else role
            eff = f"{v['effect']:+.1f}" if v.get("effect") is not None else ""
            p = f"{v['p']:.2g}" if v.get("p") is not None else ""
            lines.append(f"| {v['comparison']} | {role} | {v['decision']} | {eff} | {ci} | {p} | {v['n']} |")
        lines.append("")
    checks = r.get("pipeline_checks")
    if checks is not None:
        lines.append(f"Pipeline checks hold: **{r.get('pipeline_checks_hold')}** "
                     f"({sum(bool(c['holds']) for c in checks)} of {len(checks)}).")
    lines.append(f"Controls hold: **{r.get('controls_hold')}**.")
    lines += ["", str(r.get("summary", "")).replace(source, short)]
    return "\n".join(lines)


# ------------------------------------------------------------------ verdicts (clkit.stats)
#: seed offset of the null controls' second runs (seeds never used by the comparisons)
NULL_SEED_OFFSET = 1000

#: the σ-sweep comparisons that test the paper's claims and decide the run's findings (primary):
#: (1) implicit rehearsal, (3a) the CL method beats Bare at low overlap, (3b) that advantage contracts.
#: (2), forgetting with σ, is exploratory: the paper reports both directions (:data:`PAPER_FORGETTING`).
PRIMARY = ("(1)", "(3a)", "(3b)")

#: AF_s (points) the paper reports for each method at the smallest and the largest σ of its two σ
#: sweeps: CoraFull-CL (Table 5; Section 5.3 reads it as forgetting that grows with σ) and
#: RomanEmpire-CL (Table 6; Appendix B.2: "strong overlap effectively mitigates forgetting").
PAPER_FORGETTING = {
    "CoraFull": {"where": "Section 5.3, Table 5", "sigmas": (3, 20),
                 "af_s": {"bare": (-57.1, -60.5), "agem": (-38.4, -53.9), "er": (-37.6, -48.0),
                          "gss": (-51.3, -55.3), "mas_star": (-55.0, -44.8), "ssm": (-49.0, -58.4),
                          "sem": (-55.7, -58.4), "dmsg": (-29.6, -37.6)}},
    "Roman-Empire": {"where": "Table 6, Appendix B.2", "sigmas": (20, 120),
                     "af_s": {"bare": (-36.3, -8.0), "agem": (-33.0, -9.6), "er": (-23.1, -6.4),
                              "gss": (-21.4, -9.7), "mas_star": (-37.1, -12.4), "ssm": (-39.0, -10.2),
                              "sem": (-33.4, -7.5), "dmsg": (-14.6, -4.8)}},
}


class PipelineCheck(NamedTuple):
    """A condition of the run that holds by construction (not a statistical control): when one fails,
    the comparisons do not measure what they name and no finding is read."""

    name: str
    holds: bool
    detail: str


def family_names(protocols) -> tuple[str, str]:
    """The names of the primary and the exploratory Holm family of a run under ``protocols``.

    Examples
    --------
    >>> family_names(["text", "authors"])[0]
    "the paper's σ-sweep claims (1), (3a), (3b) under text + authors"
    """
    who = " + ".join(protocols)
    return (f"the paper's σ-sweep claims (1), (3a), (3b) under {who}",
            f"forgetting with σ (2) under {who}, exploratory")


def _paper_directions(method: str) -> dict:
    """``{dataset: (method shown, AF_s at the smallest σ, at the largest, "grows" | "shrinks")}`` of the
    paper's two σ sweeps; ER's numbers for a method the paper did not run."""
    out = {}
    for name, sweep in PAPER_FORGETTING.items():
        shown = method if method in sweep["af_s"] else "er"
        lo, hi = sweep["af_s"][shown]
        out[name] = (shown, lo, hi, "grows" if hi < lo else "shrinks")
    return out


def _forgetting_labels(cl: str) -> tuple[str, str]:
    """How (2)'s two directions read, each naming the paper's sweeps that show it."""
    sides = {"grows": [], "shrinks": []}
    for name, (_, _, _, way) in _paper_directions(cl).items():
        sides[way].append(name)
    tag = {k: f" (as the paper's {' and '.join(v)} sweep{'s' * (len(v) > 1)})" if v else "" for k, v in sides.items()}
    return f"forgetting shrinks with σ{tag['shrinks']}", f"forgetting grows with σ{tag['grows']}"


def _scope(tag: str) -> str:
    """``"primary"`` for the comparisons in :data:`PRIMARY`, else ``"exploratory"``."""
    return "primary" if tag in PRIMARY else "exploratory"


def _by_seed(d: pd.DataFrame, method: str, sigma: float, key: str) -> np.ndarray:
    """``key`` of ``method`` at ``sigma``, one value per seed in seed order (points)."""
    r = d[(d.method == method) & (d.sigma == sigma)].sort_values("seed")
    return 100 * r[key].to_numpy(dtype=float)


def sweep_verdicts(df: pd.DataFrame, null_df: pd.DataFrame | None, protocol: str, sweep_methods, sigmas,
                   batch_size: int, sampling: str, adjust: bool = True) -> list:
    """The σ sweep's comparisons under one protocol, each a paired test over seeds (:func:`clkit.stats.paired`).

    In points of A_AUC / AF_s:

    - (1) Bare's A_AUC at the largest σ minus at the smallest (the paper: rises) -- primary;
    - (2) the CL method's AF_s at the largest σ minus at the smallest -- exploratory: the paper
      reports it growing on CoraFull and shrinking on Roman-Empire (:data:`PAPER_FORGETTING`);
    - (3a) CL − Bare at the lowest overlap (the advantage that could contract) -- primary;
    - (3b) (CL − Bare) at the highest overlap minus at the lowest (the paper: falls; "contracts" only
      with an advantage at low overlap, :func:`contraction_verdict`) -- primary.

    Null controls, each judged alone at α: Bare's A_AUC at the lowest-overlap σ on seeds
    ``s + NULL_SEED_OFFSET`` minus on seeds ``s`` (the primary family's), and the CL method's
    AF_s the same way (the exploratory family's) when ``null_df`` holds its runs: two runs of
    one learner on one configuration that differ only in the seed (stream, initialisation,
    batch order), so the true difference is zero and the rule must say "no difference".

    Parameters
    ----------
    df, null_df : DataFrame -- the run's rows and the null controls' rows (``method``, ``seed``, ...)
    adjust : bool
        Holm-adjust the findings by family (:func:`judge_families`; ``False`` leaves that to a caller that
        judges several protocols together, :func:`study_verdicts`).

    Returns
    -------
    list of clkit.stats.Verdict -- the findings, then the controls
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
                                higher="rises with σ (as the paper)", lower="falls with σ", scope=_scope("(1)")))
    if cl_sweep:
        cl = cl_sweep[0]
        if len(sigmas) >= 2:
            shrinks, grows = _forgetting_labels(cl)
            out.append(stats.paired(_by_seed(d, cl, s_hi, "AF_s"), _by_seed(d, cl, s_lo, "AF_s"),
                                    comparison=f"{pr}: (2) {cl} AF_s, {at(s_hi)} − {at(s_lo)}",
                                    higher=shrinks, lower=grows, scope=_scope("(2)")))
        if "bare" in sweep_methods:
            adv_lo = _by_seed(d, cl, o_lo, "A_AUC") - _by_seed(d, "bare", o_lo, "A_AUC")
            out.append(stats.paired(adv_lo, comparison=f"{pr}: (3a) {cl} − Bare A_AUC at the lowest overlap "
                                                       f"({at(o_lo)})",
                                    higher=f"{cl} higher", lower="Bare higher", scope=_scope("(3a)")))
            if len(sigmas) >= 2:
                adv_hi = _by_seed(d, cl, o_hi, "A_AUC") - _by_seed(d, "bare", o_hi, "A_AUC")
                out.append(stats.paired(adv_hi, adv_lo,
                                        comparison=f"{pr}: (3b) {cl} − Bare, highest − lowest overlap "
                                                   f"({at(o_hi)} − {at(o_lo)})",
                                        higher=f"{cl} − Bare rises with overlap",
                                        lower=f"{cl} − Bare falls with overlap (as the paper)",
                                        scope=_scope("(3b)")))
    if adjust:
        out = judge_families(out, [protocol])
    if null_df is not None and len(null_df):
        nd = null_df if "method" in null_df else null_df.assign(method="bare")
        s_null = float(nd["sigma"].iloc[0])
        controls = [("bare", "A_AUC", "primary", "bare" in sweep_methods),
                    (cl_sweep[0] if cl_sweep else "", "AF_s", "exploratory", bool(cl_sweep) and len(sigmas) >= 2)]
        for method, key, family, wanted in controls:
            shifted = nd[nd.method == method].sort_values("seed")
            if not wanted or shifted.empty:
                continue
            who = "Bare" if method == "bare" else method
            out.append(stats.paired(100 * shifted[key].to_numpy(dtype=float), _by_seed(d, method, s_null, key),
                                    comparison=f"{pr}: null control of the {family} family, {who} {key} "
                                               f"(seed + {NULL_SEED_OFFSET}) − {who} (seed), σ = {s_null:.3g}",
                                    role="null control", expect=stats.NO_DIFFERENCE, scope=family))
    return out


def judge_families(verdicts, protocols) -> list:
    """Holm-adjust the findings of ``verdicts`` in their two families (:func:`family_names`): the primary
    rows together, the exploratory rows together; controls stay at their own level (:func:`clkit.stats.holm`).

    Examples
    --------
    >>> from clkit.stats import paired
    >>> vs = judge_families([paired([3.0, 2.5, 3.4, 2.9], comparison="text: (1) a"),
    ...              paired([1.0, -0.5, 0.4, 0.2], comparison="text: (2) b", scope="exploratory")], ["text"])
    >>> [(v.family_name.split(" under")[0], v.family) for v in vs]
    [("the paper's σ-sweep claims (1), (3a), (3b)", 1), ('forgetting with σ (2)', 1)]
    """
    from .. import stats

    out = list(verdicts)
    for scope, name in zip(("primary", "exploratory"), family_names(protocols)):
        idx = [i for i, v in enumerate(out) if v.role == "finding" and v.scope == scope]
        if idx:
            for i, v in zip(idx, stats.holm([out[i] for i in idx], name=name)):
                out[i] = v
    return out


def study_verdicts(runs: dict, nulls: dict, sweep_methods, sigmas, batch_size: int, sampling: str) -> list:
    """:func:`sweep_verdicts` of every protocol of ``runs``, in protocol order, judged together: one primary
    family over every protocol's (1), (3a), (3b) and one exploratory family over every (2)
    (:func:`judge_families`), each protocol's findings followed by its controls."""
    rows = [v for pr, (df, _, _) in runs.items()
            for v in sweep_verdicts(df, nulls.get(pr), pr, sweep_methods, sigmas, batch_size, sampling,
                                    adjust=False)]
    return judge_families(rows, list(runs))


def pipeline_checks(runs: dict, nulls: dict, sweep_methods, sigmas, batch_size: int, sampling: str, seeds,
                    offset: int = NULL_SEED_OFFSET, exact: bool = True) -> list:
    """Conditions every comparison rests on, true by construction (not statistical controls).

    Per protocol:

    - *pairs*: every arm of the σ sweep (each sweep method at each σ) has one value per seed of
      the run, the same seeds, so ``a[i]`` and ``b[i]`` share seed ``i``;
    - *null seeds*: the null controls ran on exactly the seeds ``s + offset`` and none of them is a
      seed of the run (else the control would compare a run with itself);
    - *overlap*: the overlap index at the largest σ of the sweep is above the one at the smallest
      (else (1), (2) and (3b) do not compare low with high overlap);
    - *MAS\\* is Bare*: wherever MAS*'s detector never fired, its A_AUC and AA equal Bare's exactly
      (the notebook's "with 0 firings MAS* is Bare"); only with ``exact`` (a run reproducible bit for
      bit: the CPU, or deterministic algorithms) and where such a run exists.

    Returns
    -------
    list of PipelineCheck

    Examples
    --------
    >>> rows = [dict(setting="gaussian", batch_size=10, sampling="without", sigma=s, seed=k, overlap=o,
    ...              method="bare", A_AUC=0.5, AF_s=-0.1) for s, o in ((1.0, 0.0), (8.0, 0.9)) for k in (1, 2)]
    >>> null = pd.DataFrame([dict(sigma=1.0, seed=k, method="bare", A_AUC=0.5) for k in (1001, 1002)])
    >>> [c.holds for c in pipeline_checks({"text": (pd.DataFrame(rows), {}, {})}, {"text": null}, ["bare"],
    ...                                   [1.0, 8.0], 10, "without", [1, 2])]
    [True, True, True]
    """
    want = sorted(int(s) for s in seeds)
    out = []
    for pr, (df, _, _) in runs.items():
        sig = sigmas_of(sigmas, pr)
        d = sweep_rows(df, sig, batch_size, sampling)
        bad = []
        for m in sweep_methods:
            for s in sig:
                got = sorted(int(k) for k in d[(d.method == m) & (d.sigma == s)]["seed"])
                if got != want:
                    bad.append(f"{m} at σ = {s:.3g} has seeds {got}")
        out.append(PipelineCheck(f"{pr}: every σ-sweep arm pairs the run's seeds", not bad,
                                 "; ".join(bad) if bad else f"{len(sweep_methods)} method(s) x {len(sig)} σ, "
                                                             f"seeds {want}"))
        nd = nulls.get(pr) if nulls else None
        if nd is not None and len(nd):
            shifted = sorted(s + offset for s in want)
            methods = list(dict.fromkeys(nd["method"])) if "method" in nd else ["bare"]
            got = {m: sorted(int(k) for k in (nd[nd.method == m] if "method" in nd else nd)["seed"]) for m in methods}
            clash = sorted(set(shifted) & set(want))
            ok = not clash and all(g == shifted for g in got.values())
            out.append(PipelineCheck(f"{pr}: the null controls ran on seeds s + {offset}, none a seed of the run", ok,
                                     f"seeds {shifted}" + (f"; shared with the run: {clash}" if clash else "")
                                     + "".join(f"; {m} ran on {g}" for m, g in got.items() if g != shifted)))
        if len(sig) >= 2:
            ov = d.groupby("sigma")["overlap"].mean().reindex(sig)
            o_small, o_large = ov.loc[min(sig)], ov.loc[max(sig)]
            out.append(PipelineCheck(f"{pr}: overlap rises along the σ sweep", bool(o_large > o_small),
                                     ", ".join(f"O = {o:.2f} at σ = {s:.3g}" for s, o in ov.sort_index().items())))
        if exact and {"mas_star", "bare"} <= set(df.method):
            key = ["config", "seed"]
            mas = df[df.method == "mas_star"].set_index(key)
            bare = df[df.method == "bare"].set_index(key).reindex(mas.index)
            idle = mas["detector_firings"] == 0
            if idle.any():
                same = ((mas.loc[idle, "A_AUC"] == bare.loc[idle, "A_AUC"])
                        & (mas.loc[idle, "AA"] == bare.loc[idle, "AA"]))
                out.append(PipelineCheck(f"{pr}: MAS* is Bare wherever its detector never fired", bool(same.all()),
                                         f"{int(same.sum())} of {int(idle.sum())} run(s) without a firing equal "
                                         "Bare's A_AUC and AA exactly"))
    return out


def checks_hold(checks) -> bool:
    """True when every pipeline check holds (also for none)."""
    return all(c.holds for c in checks or [])


def pipeline_table(checks) -> pd.DataFrame:
    """The pipeline checks, one row each: holds / FAILS and what was checked."""
    return pd.DataFrame([{"pipeline check": c.name, "result": "holds" if c.holds else "FAILS", "detail": c.detail}
                         for c in checks]).set_index("pipeline check") if checks else pd.DataFrame()


def _gate(verdicts, checks, n: int, small_n: int) -> str | None:
    """Why a protocol's findings are not judged (a failed pipeline check or control, too few seeds), or None."""
    from ..stats import controls_hold

    if not checks_hold(checks):
        return "not judged: a pipeline check failed"
    if not controls_hold(verdicts)[0]:
        return "not judged: a control failed"
    if n < small_n:
        return f"not judged: {n} seed(s), fewer than {small_n}"
    return None


def _stats_text(v) -> str:
    """``+1.2 points (98.3 % CI -0.4 to +2.9, p = 0.12, n = 7)``: the numbers a sentence cites, at the
    level of the row's decision."""
    from .. import stats

    return (f"{v.effect:+.1f} points ({stats._ci_text(v.ci_low, v.ci_high, v.ci_level)}, "
            f"{stats._p_text(v.p)}, n = {v.n})")


_AS_PAPER = " (as the paper)"


def claim3_gated(verdicts, small_n: int = 4, checks=None) -> list:
    """The verdicts with each (3b) row read through claim (3)'s gate, so no text calls it "as the paper"
    where claim (3) is not testable.

    Claim (3) is that the CL method's advantage over Bare *contracts* with overlap; a fall of
    ``CL − Bare`` (3b) is that contraction only when there is an advantage to contract, (3a). Where
    :func:`contraction_verdict` says "not testable here" for a protocol, its (3b) row keeps its
    numbers and decision, its "(as the paper)" is dropped from its labels, and its note says why.

    Examples
    --------
    >>> from clkit.stats import paired
    >>> vs = [paired([-1.0, -0.5, -0.8, -1.2], comparison="authors: (3a) er − Bare ...", higher="er higher",
    ...              lower="Bare higher"),
    ...       paired([-2.0, -2.5, -2.2, -1.9], comparison="authors: (3b) er − Bare, ...",
    ...              higher="er − Bare rises with overlap", lower="er − Bare falls with overlap (as the paper)")]
    >>> g = claim3_gated(vs)[1]
    >>> g.decision, "not testable here" in g.note
    ('er − Bare falls with overlap', True)
    >>> claim3_gated(vs[1:])[0].decision   # no (3a) row: nothing to gate on, left as it is
    'er − Bare falls with overlap (as the paper)'
    """
    from dataclasses import replace

    out = []
    for v in verdicts:
        m = re.match(r"^(.*?): \(3b\)", v.comparison)
        if m is None or not any(w.comparison.startswith(f"{m.group(1)}: (3a)") for w in verdicts):
            out.append(v)
            continue
        why = contraction_verdict(verdicts, m.group(1), small_n, checks)
        if why.startswith("not testable here"):
            note = (f"(claim (3) is {why}: a fall of the difference is not the paper's contraction without an "
                    "advantage to contract)")
            v = replace(v, decision=v.decision.replace(_AS_PAPER, ""), higher=v.higher.replace(_AS_PAPER, ""),
                        lower=v.lower.replace(_AS_PAPER, ""), note=(v.note + " " + note).strip())
        out.append(v)
    return out


def contraction_verdict(verdicts, protocol: str, small_n: int = 4, checks=None) -> str:
    """Finding 3 in words: "contracts" only when CL beat Bare at low overlap and the gap shrank, both significantly.

    Not judged when a pipeline check or a control of ``verdicts`` failed or the comparisons have
    fewer than ``small_n`` pairs.

    Examples
    --------
    >>> from clkit.stats import paired
    >>> vs = [paired([-1.0, -0.5, -0.8, -1.2], comparison="authors: (3a) er − Bare ...", higher="er higher",
    ...              lower="Bare higher")]
    >>> contraction_verdict(vs, "authors")
    'not testable here (no advantage of the CL method at low overlap: Bare higher, -0.875)'
    """
    from ..stats import NOT_TESTABLE

    a = next((v for v in verdicts if v.comparison.startswith(f"{protocol}: (3a)")), None)
    b = next((v for v in verdicts if v.comparison.startswith(f"{protocol}: (3b)")), None)
    if a is None:
        return "not judged (the sweep lacks Bare or a CL method)"
    why = _gate(verdicts, checks, a.n, small_n)
    if why:
        return why
    if a.decision == NOT_TESTABLE or a.decision != a.higher:
        what = "no difference" if not a.significant else a.decision
        return (f"not testable here (no advantage of the CL method at low overlap: {what}, "
                f"{a.effect:+.3g})")
    if b is None:
        return "not judged (one σ)"
    if b.decision == b.lower:
        return f"reproduced: the advantage contracts, {_stats_text(b)}"
    if b.decision == b.higher:
        return f"opposite: the advantage grows, {_stats_text(b)}"
    return f"not reproduced: no significant contraction, {_stats_text(b)}"


#: how the paper's tables name the kit's methods
_PAPER_NAMES = {"bare": "Bare", "er": "ER", "agem": "A-GEM", "gss": "GSS", "mas_star": "MAS*", "ssm": "SSM",
                "sem": "SEM", "dmsg": "DMSG"}


def _paper_sweeps(cl: str, way: str | None = None) -> tuple[list, str]:
    """The paper's σ sweeps in which the CL method's forgetting goes ``way`` (all when None), and their
    citation: ``CoraFull sweep (ER AF_s -37.6 → -48.0 from σ = 3 to 20; Section 5.3, Table 5)``."""
    names, cites = [], []
    for name, (shown, lo, hi, w) in _paper_directions(cl).items():
        if way in (None, w):
            sweep = PAPER_FORGETTING[name]
            names.append(name)
            cites.append(f"{name} sweep ({_PAPER_NAMES.get(shown, shown)} AF_s {lo:.1f} → {hi:.1f} from "
                         f"σ = {sweep['sigmas'][0]} to {sweep['sigmas'][1]}; {sweep['where']})")
    return names, " and ".join(cites)


def forgetting_verdict(verdicts, protocol: str, small_n: int = 4, checks=None) -> str:
    """Finding 2 (exploratory) in words, beside what the paper itself reports in its two σ sweeps.

    The paper's Section 5.3 reads its CoraFull sweep as forgetting that grows with σ, while its
    Roman-Empire sweep (Table 6, Appendix B.2) shows forgetting shrinking; the sentence cites both
    (:data:`PAPER_FORGETTING`, for the sweep's CL method) and says, from this run's (2) decision,
    which one the run sides with.

    Examples
    --------
    >>> from clkit.stats import paired
    >>> vs = [paired([-3.0, -2.5, -3.4, -2.9], comparison="text: (2) er AF_s ...", scope="exploratory",
    ...              higher="shrinks", lower="grows")]
    >>> print(forgetting_verdict(vs, "text"))
    forgetting grows with σ, -3.0 points (95 % CI -3.5 to -2.4, p = 0.00053, n = 4), as the paper's CoraFull sweep (ER AF_s -37.6 → -48.0 from σ = 3 to 20; Section 5.3, Table 5), against its own Roman-Empire sweep (ER AF_s -23.1 → -6.4 from σ = 20 to 120; Table 6, Appendix B.2); exploratory, not a finding
    """
    from ..stats import NOT_TESTABLE

    v = next((v for v in verdicts if v.comparison.startswith(f"{protocol}: (2)")), None)
    if v is None:
        return "not judged (the sweep lacks a CL method or a second σ)"
    cl = v.comparison.split(": (2) ", 1)[1].split(" ", 1)[0]
    grows, grows_text = _paper_sweeps(cl, "grows")
    shrinks, shrinks_text = _paper_sweeps(cl, "shrinks")
    if grows and shrinks:
        paper = (f"the paper itself reports both directions, forgetting growing in its {grows_text} and "
                 f"shrinking in its {shrinks_text}")
    else:
        paper = (f"the paper reports forgetting {'growing' if grows else 'shrinking'} in its "
                 f"{grows_text or shrinks_text}")
    why = _gate(verdicts, checks, v.n, small_n)
    if why or v.decision == NOT_TESTABLE:
        return f"{why or 'not testable'}; {paper}"
    if v.decision not in (v.lower, v.higher):
        return f"no change of forgetting with σ detected, {_stats_text(v)}; {paper}; exploratory"
    way = "grows" if v.decision == v.lower else "shrinks"
    side, side_text, other, other_text = ((grows, grows_text, shrinks, shrinks_text) if way == "grows"
                                          else (shrinks, shrinks_text, grows, grows_text))
    text = f"forgetting {way} with σ, {_stats_text(v)}"
    if side:
        text += f", as the paper's {side_text}"
    if other:
        text += f", against {'its own' if side else 'the paper' + chr(39) + 's'} {other_text}"
    return text + "; exploratory, not a finding"


def verdict_findings(verdicts, protocols, small_n: int = 4, checks=None) -> pd.DataFrame:
    """One column per protocol, one row per finding: decision, effect, the interval at the level of the
    decision, p and n of each verdict (primary or exploratory, as named), the controls, findings 2 and 3."""
    from .. import stats

    cols = {}
    shown = claim3_gated(verdicts, small_n, checks)
    for pr in protocols:
        col = {}
        for v in shown:
            if v.comparison.startswith(f"{pr}: (") and v.role == "finding":
                # the row names the finding; each protocol's own σ (solved per protocol) goes in its cell
                key = re.sub(r",? \(?σ = .*$", "", v.comparison.split(": ", 1)[1])
                where = re.findall(r"σ = [^ ,)]+(?: \(overlap [^)]+\))?", v.comparison)
                ci = stats._ci_text(v.ci_low, v.ci_high, v.ci_level)
                col[f"{key} [{v.scope}]"] = (f"{v.decision}, {v.effect:+.1f} ({ci}; {stats._p_text(v.p)}, n = {v.n})"
                                             + (f"; {' − '.join(where)}" if where else ""))
            elif v.comparison.startswith(f"{pr}: null"):
                fam = re.search(r"of the (\w+) family", v.comparison)
                ci = stats._ci_text(v.ci_low, v.ci_high, v.ci_level)
                col[f"null control{' of the ' + fam.group(1) + ' family' if fam else ''} (must be no difference)"] = \
                    (f"{v.decision}, {v.effect:+.1f} ({ci}; {stats._p_text(v.p)}) — "
                     f"{'holds' if v.control_ok else 'FAILS'}")
        mine = [c for c in checks or [] if c.name.startswith(f"{pr}: ")]
        if mine:
            col["pipeline checks"] = (f"{sum(c.holds for c in mine)} of {len(mine)} hold"
                                      + "".join(f"; FAILS: {c.name.split(': ', 1)[1]}" for c in mine if not c.holds))
        col["(2) verdict beside the paper's two σ sweeps [exploratory]"] = forgetting_verdict(verdicts, pr, small_n,
                                                                                             checks)
        col["(3) verdict: CL advantage contracts with overlap [primary]"] = contraction_verdict(verdicts, pr, small_n,
                                                                                                checks)
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
