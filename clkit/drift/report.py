"""Tables, findings and closing text of notebook 05_drift, from :func:`clkit.drift.experiment.run_protocols`.

Every function takes the run's rows (a DataFrame with one row per configuration,
method and seed) or their per-protocol summaries, and returns a DataFrame, a dict for
``results.json`` or Markdown text; nothing here trains or draws.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["METRICS", "summarise", "setting_table", "firings_table", "sweep_rows", "sweep_series",
           "advantage_series", "verdict", "findings", "sweep_table", "sweep_record", "replacement",
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


def verdict(lo, hi, s_lo, s_hi, up_is_paper: bool, words: dict, n_sigmas: int, n_seeds: int) -> str:
    """'reproduced' / 'opposite' / 'within the seed spread' for a change ``lo -> hi`` (spread: sum of the sds).

    Examples
    --------
    >>> verdict(0.30, 0.40, 0.01, 0.02, True, {True: "rises", False: "falls"}, 2, 2)
    'reproduced: rises (+10.0, spread 3.0)'
    >>> verdict(0.30, 0.31, 0.01, 0.02, True, {True: "rises", False: "falls"}, 2, 2)
    'within the seed spread (+1.0 ± 3.0)'
    """
    change, spread = hi - lo, s_lo + s_hi
    if n_sigmas < 2:
        return "not judged: the sweep has one σ"
    if n_seeds < 2:
        return f"not judged: one seed, no spread ({100 * change:+.1f})"
    if abs(change) <= spread:
        return f"within the seed spread ({100 * change:+.1f} ± {100 * spread:.1f})"
    agrees = (change > 0) == up_is_paper
    return (f"{'reproduced' if agrees else 'opposite'}: {words[change > 0]} "
            f"({100 * change:+.1f}, spread {100 * spread:.1f})")


def findings(runs: dict, sweep_methods, sigmas, n_seeds: int, batch_size: int, sampling: str):
    """The σ sweep's three findings under every protocol, and the series behind them.

    (1) Bare's A_AUC rises with σ; (2) the CL method's AF_s grows (more negative) with σ;
    (3) CL − Bare in A_AUC contracts as the overlap grows.

    Returns
    -------
    table : DataFrame -- one column per protocol, one row per finding (text with its verdict)
    series : dict -- ``(protocol, "bare" | "forget" | "adv") -> (mean, std[, overlap])``
    """
    cl_sweep = [m for m in sweep_methods if m != "bare"]
    rows, series = [], {}
    s_lo, s_hi = min(sigmas), max(sigmas)
    kw = dict(n_sigmas=len(sigmas), n_seeds=n_seeds)
    for pr, (df, _, _) in runs.items():
        row = {"protocol": pr}
        if "bare" in sweep_methods:
            m, s = sweep_series(df, "bare", "A_AUC", sigmas, batch_size, sampling)
            row["(1) Bare A_AUC rises with σ"] = (
                f"{100 * m[s_lo]:.1f} → {100 * m[s_hi]:.1f}; "
                + verdict(m[s_lo], m[s_hi], s[s_lo], s[s_hi], True, {True: "rises", False: "falls"}, **kw))
            series[(pr, "bare")] = (m, s)
        if cl_sweep:
            cl = cl_sweep[0]
            m, s = sweep_series(df, cl, "AF_s", sigmas, batch_size, sampling)
            row[f"(2) {cl} forgetting grows with σ"] = (
                f"AF_s {100 * m[s_lo]:.1f} → {100 * m[s_hi]:.1f}; "
                + verdict(m[s_lo], m[s_hi], s[s_lo], s[s_hi], False, {True: "shrinks", False: "grows"}, **kw))
            series[(pr, "forget")] = (m, s)
            if "bare" in sweep_methods:
                a, sa, ov = advantage_series(df, cl, sigmas, batch_size, sampling)
                lo_i, hi_i = ov.idxmin(), ov.idxmax()
                joined = " / ".join(f"{100 * v:+.1f}" for v in a)
                row[f"(3) {cl} − Bare contracts with overlap"] = (
                    f"{joined} over σ = {', '.join(f'{x:g}' for x in sigmas)}; "
                    + verdict(a[lo_i], a[hi_i], sa[lo_i], sa[hi_i], False, {True: "grows", False: "contracts"},
                              **kw))
                series[(pr, "adv")] = (a, sa, ov)
        rows.append(row)
    return pd.DataFrame(rows).set_index("protocol").T, series


def sweep_table(runs: dict, sweep_methods, sigmas, batch_size: int, sampling: str) -> pd.DataFrame:
    """A_AUC and AF_s (%) of the sweep methods at every σ, per protocol (σ as columns)."""
    tab = pd.concat({pr: (100 * sweep_rows(df, sigmas, batch_size, sampling)
                          .loc[lambda d: d.method.isin(sweep_methods)]
                          .groupby(["method", "sigma"])[["A_AUC", "AF_s"]].mean()).round(1)
                     for pr, (df, _, _) in runs.items()}, axis=1)
    return tab.unstack("sigma")


def sweep_record(runs: dict, sigmas, batch_size: int, sampling: str) -> dict:
    """``{protocol: {"sigma=<σ> | <method>": {"A_AUC", "AF_s"}}}`` for results.json (every method of the sweep)."""
    return {pr: {f"sigma={s:g} | {m}": {"A_AUC": r.A_AUC, "AF_s": r.AF_s}
                 for (m, s), r in sweep_rows(df, sigmas, batch_size, sampling)
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
        why = " (dataset='auto': Cora's files were found)"
    elif dataset == "auto":
        why = " (dataset='auto': Cora's files are not in the clkit data cache, so the synthetic CSBM)"
    else:
        why = ""
    return (f"**Data used:** {graph.source}{why}.  \n{stats['num_nodes']} nodes, {stats['num_edges']} edges, "
            f"{stats['num_classes']} classes, homophily {stats['homophily']:.2f}, "
            f"average degree {stats['avg_degree']:.1f}; {split0.num_tasks} latent tasks. "
            + " ".join(f"Protocol {pr}: {sum(map(len, s.task_nodes))} stream nodes, {len(s.test_idx)} test nodes."
                       for pr, (_, s) in data.items())
            + (f" Classes {dropped} do not fill a task of {classes_per_task} and are left out." if dropped else ""))


def closing_text(stats_by: dict, findings_table: pd.DataFrame, *, source: str, name: str, num_tasks: int,
                 configs_main, methods, sigma: float, batch_size: int, n_seeds: int) -> str:
    """The closing Markdown, generated from the summaries and the findings table."""
    cfg_gauss = configs_main[1]
    lines = [f"Data: {source} ({num_tasks} latent tasks, batches of {batch_size}, {n_seeds} seed(s))."]
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
        for key, text in findings_table[pr].items():
            if isinstance(text, str):
                part.append(f"{key}: {text}.")
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
