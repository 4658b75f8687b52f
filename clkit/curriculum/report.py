"""Notebook 04's tables and closing text, generated from its numbers.

Each function returns a DataFrame or a Markdown string for the notebook to
``display``, or a dict for :meth:`clkit.results.RunRecord.log`; none computes a
result of its own beyond formatting (the numbers come from
:mod:`clkit.curriculum.analysis`).
"""

from __future__ import annotations

import numpy as np

from .. import stats
from .analysis import METRIC_COLUMNS
from .benchmark import Benchmark
from .difficulty import Curriculum
from .verdicts import FAMILIES, NULL_LEARNERS, WEIGHTING, detectable, family_of

__all__ = ["pm", "names", "data_table", "data_text", "data_record", "difficulty_frame", "curriculum_text",
           "curriculum_record", "metrics_table", "verdict_tables", "bwt_identity", "summary",
           "findings_markdown", "write_findings", "FINDINGS_BLOCK", "SMALL_N"]

#: fewer seeds than this: the closing text draws no conclusion (the rule's power is too low)
SMALL_N = 4
#: headings of the verdict tables, per family
TITLES = {"order": "Order verdict: final-row mean (every task once), M2I − I2M",
          "ACC": "The paper's comparison: ACC, M2I − I2M",
          "excess": "ACC beyond weighting: ACC gap − the weighting reference's gap"}


def pm(mean: float, sd: float, digits: int = 3) -> str:
    """``'mean ± sd'`` for tables (``sd`` left out when not finite).

    Examples
    --------
    >>> pm(0.1234, 0.02), pm(-0.5, float("nan"), 2)
    ('+0.123 ± 0.020', '-0.50')
    """
    text = f"{mean:+.{digits}f}"
    return f"{text} ± {sd:.{digits}f}" if np.isfinite(sd) else text


def names(ks) -> str:
    """A comma-separated list, or ``'none'``.

    Examples
    --------
    >>> names(["ewc", "si"]), names([])
    ('ewc, si', 'none')
    """
    return ", ".join(ks) if ks else "none"


# ---------------------------------------------------------------------------- data
def data_table(bench: Benchmark):
    """One row per loaded dataset: images per class and where they came from."""
    import pandas as pd

    return pd.DataFrame([{"dataset": n, "train per class": bench.per_class[n][0],
                          "test per class": bench.per_class[n][1], "source": bench.sources[n]}
                         for n in bench.names])


def data_text(bench: Benchmark, datasets) -> str:
    """Which candidates were loaded and which could not be."""
    missing = ", ".join(f"`{m}`" for m in bench.missing) or "none"
    return (f"Loaded **{len(bench.names)}** of the {len(datasets)} candidates "
            f"({', '.join(bench.names)}); could not load: {missing}.")


def data_record(bench: Benchmark, seeds) -> dict:
    """The data facts for ``results.json``."""
    return dict(datasets_loaded=bench.names, datasets_missing=list(bench.missing),
                per_class={n: list(v) for n, v in bench.per_class.items()},
                data_source={n: bench.sources[n] for n in bench.names}, seeds=list(seeds))


# ---------------------------------------------------------------------------- difficulty
def difficulty_frame(c: Curriculum):
    """Single-task accuracy of every candidate (easiest first), its seed sd, and whether it was chosen."""
    import pandas as pd

    ranked = c.ranked
    return pd.DataFrame({"single-task accuracy": [c.table[n]["mean"] for n in ranked],
                         "seed sd": [c.table[n]["sd"] for n in ranked],
                         "in the curriculum": [n in c.tasks for n in ranked]}, index=ranked).round(3)


def curriculum_text(c: Curriculum) -> str:
    """The two orders and whether every neighbouring pair differs beyond its spread."""
    return (f"**M2I**: {' → '.join(c.m2i)}  \n**I2M**: {' → '.join(c.i2m)}  \n"
            + ("Every pair of neighbouring tasks differs in difficulty by more "
               "than its seed spread." if c.separated else
               "**Not every pair of neighbouring tasks differs in difficulty "
               "beyond the seed spread**: the curriculum is partly a tie, and M2I "
               "vs I2M partly compares orders of equally hard tasks."))


def curriculum_record(c: Curriculum) -> dict:
    """The difficulty facts for ``results.json``."""
    return dict(difficulty={n: d["mean"] for n, d in c.table.items()},
                difficulty_sd={n: d["sd"] for n, d in c.table.items()},
                difficulty_per_seed={str(s): c.accuracy[s] for s in c.seeds},
                difficulty_gaps=c.gaps, difficulty_separated=c.separated, tasks=c.tasks,
                order_m2i=c.m2i, order_i2m=c.i2m)


# ---------------------------------------------------------------------------- metrics
def metrics_table(mean, strategies):
    """Means over seeds, one column block per metric, M2I and I2M side by side."""
    return mean[METRIC_COLUMNS].unstack("order").loc[list(strategies)].round(3)


def verdict_tables(verdicts) -> dict:
    """One :func:`clkit.stats.verdict_table` per family, keyed by its heading."""
    out = {}
    for fam in FAMILIES:
        rows = [v for v in verdicts if family_of(v) == fam]
        if rows:
            out[TITLES[fam]] = stats.verdict_table(rows)
    return out


def bwt_identity(R) -> dict:
    """Both sides of the telescoping identity of the authors' BWT (code form).

    ``BWT_code`` averages ``R[i, j] - R[i-1, j]`` over the ``T(T-1)/2`` cells ``i > j``;
    each column ``j`` telescopes to ``R[T-1, j] - R[j, j]``, so
    ``BWT_code = 2 / (T (T-1)) * sum_{j < T-1} (R[T-1, j] - R[j, j])`` -- that is ``2 / T``
    times the final-row BWT (the mean of ``R[T-1, j] - R[j, j]`` over ``j < T-1``).

    Returns
    -------
    dict with ``BWT_code`` (from :func:`clkit.metrics.backward_transfer`), ``identity``
    (the right-hand side), ``final_row_BWT`` and ``factor`` (``2 / (T (T-1))``)

    Examples
    --------
    >>> R = [[0.9, 0.1, 0.0], [0.5, 0.8, 0.2], [0.3, 0.6, 0.7]]
    >>> {k: round(v, 4) for k, v in bwt_identity(R).items()}
    {'BWT_code': -0.2667, 'identity': -0.2667, 'final_row_BWT': -0.4, 'factor': 0.3333}
    """
    from ..metrics import backward_transfer

    R = np.asarray(R, dtype=float)
    T = R.shape[0]
    drops = [R[T - 1, j] - R[j, j] for j in range(T - 1)]
    factor = 2 / (T * (T - 1))
    return {"BWT_code": backward_transfer(R, mode="consecutive"), "identity": factor * float(np.sum(drops)),
            "final_row_BWT": float(np.mean(drops)), "factor": factor}


def _f(x: float, sign: bool = True) -> str:
    """An accuracy difference with 3 decimals."""
    return f"{x:+.3f}" if sign else f"{x:.3f}"


def _p(p) -> str:
    return "–" if p is None or not np.isfinite(p) else ("< 0.0001" if p < 1e-4 else f"{p:.2g}")


def _who(v) -> str:
    return v.comparison.split(":")[0]


def _listing(vs) -> str:
    return names([f"{_who(v)} {_f(v.effect)}" for v in vs])


def summary(*, c: Curriculum, metrics: dict, verdicts, bounds: dict, strategies, scenario: str, backbone: str,
            image_size: int, per_class_train: int, epochs: int, memory_format: str = "contiguous",
            note: str | None = None) -> tuple[str, dict]:
    """The closing Markdown of the notebook, generated from its verdicts, and the facts it states.

    The order of the text: the setting; the difficulty of the chosen tasks; the
    verdicts' own closing text (:func:`clkit.stats.closing_text`: the controls first,
    then the findings or, when a control fails or there are fewer than :data:`SMALL_N`
    seeds, no finding at all); then the paper's comparisons in words -- read only when
    the controls hold and the seeds suffice; the BWT forms; the run's power.

    Parameters
    ----------
    c : Curriculum
    metrics : dict order -> strategy -> metric -> value
    verdicts : list of clkit.stats.Verdict
        :func:`clkit.curriculum.verdicts.order_verdicts`.
    bounds : dict reference -> order -> list of Verdict
        :func:`clkit.curriculum.verdicts.bound_verdicts` (``cumulative``, ``mste`` when run).
    memory_format : str
        The backbone's layout; named in the setting where it is not the default.
    note : str, optional
        A paragraph the text starts with (a rehearsal's :meth:`clkit.rehearsal.Rehearsal.note`).

    Returns
    -------
    text : str
    facts : dict
        ``controls_hold``, ``conclusive``, per family the strategies M2I / I2M higher
        (``strategies_better_under_m2i`` / ``_i2m``: the order verdict),
        ``above_<reference>``, ``best_strategy``, ``detectable`` for ``results.json``.
    """
    T, m2i, diff = len(c.tasks), c.m2i, c.table
    n = min(v.n for v in verdicts)
    ok, _ = stats.controls_hold(verdicts)
    conclusive = ok and n >= SMALL_N
    fam = {f: [v for v in verdicts if family_of(v) == f and v.role == "finding"] for f in FAMILIES}
    higher = {f: [v for v in fam[f] if v.decision == FAMILIES[f][1]] for f in FAMILIES}
    lower = {f: [v for v in fam[f] if v.decision == FAMILIES[f][2]] for f in FAMILIES}
    none = {f: [v for v in fam[f] if v.decision == stats.NO_DIFFERENCE] for f in FAMILIES}
    power = detectable(n, len(fam["order"]))
    mde = [v.mde for v in fam["order"] if np.isfinite(v.mde)]
    lines = [note] if note else []
    lines += [
        f"**Setting.** {T} tasks ({', '.join(m2i)}, easiest first), {scenario}-incremental, backbone "
        f"`{backbone}`{'' if memory_format == 'contiguous' else f' ({memory_format})'} on {image_size}x{image_size} "
        f"images, {per_class_train} training images per class, "
        f"{epochs} epochs per task, {n} seeds; every M2I − I2M difference is paired by seed (the same images, "
        f"initial weights and, per task, batch order under both orders).",
        "**Difficulty.** Single-task accuracies " + "; ".join(
            f"{k} {diff[k]['mean']:.3f}" + (f" ± {diff[k]['sd']:.3f}" if np.isfinite(diff[k]['sd']) else "")
            for k in m2i) + ". "
        + ("One seed: no seed spread, so whether the tasks differ in difficulty is not tested." if not c.gaps else
           "Every neighbouring gap ("
           + ", ".join(f"{g['gap']:.3f} vs spread {g['spread']:.3f}" for g in c.gaps)
           + ") exceeds its seed spread." if c.separated else
           "Not every neighbouring gap exceeds its seed spread ("
           + ", ".join(f"{g['easier']}/{g['harder']}: {g['gap']:.3f} vs {g['spread']:.3f}" for g in c.gaps)
           + "), so part of the curriculum is a tie."),
        stats.closing_text(verdicts, subject="this run", small_n=SMALL_N),
    ]
    w = {f: next((v for v in verdicts if _who(v) == WEIGHTING and family_of(v) == f), None) for f in FAMILIES}
    mste = {f: next((v for v in verdicts if _who(v) in NULL_LEARNERS and family_of(v) == f), None)
            for f in FAMILIES}
    if mste["order"] is not None:
        lines.append(f"**MSTE is a control, not a finding.** One expert per task cannot forget or transfer; "
                     f"with the per-task pairing its final-row gap is {_f(mste['order'].effect)} "
                     + (f"(sd {_f(mste['order'].sd, sign=False)} over seeds)" if n > 1 else "(one seed)")
                     + f", and its ACC gap "
                     f"({_f(mste['ACC'].effect)}) is weighting of its own task accuracies.")
    facts = {"controls_hold": ok, "conclusive": conclusive}
    if conclusive:
        k = len(fam["ACC"])
        lines.append(
            f"**The paper's comparison (ACC).** M2I higher for {len(higher['ACC'])} of {k} strategies "
            f"({_listing(higher['ACC'])}), I2M higher for {len(lower['ACC'])} ({_listing(lower['ACC'])}), no "
            f"difference for {len(none['ACC'])}. Weighting alone gives "
            f"{_f(w['ACC'].effect)} (95 % CI {_f(w['ACC'].ci_low)} to "
            f"{_f(w['ACC'].ci_high)}): ACC counts the first task {T} times and the last once, so "
            f"an M2I advantage in ACC is expected from a learner with no order effect at all.")
        lines.append(
            f"**Beyond weighting.** The ACC gap exceeds the weighting gap for {len(higher['excess'])} "
            f"({_listing(higher['excess'])}) and falls short of it for {len(lower['excess'])} "
            f"({_listing(lower['excess'])}); a learner that forgets counts its first task less often than the "
            f"reference assumes, so falling short is expected of strong forgetters and is no I2M advantage.")
        lines.append(
            f"**Order verdict (final-row mean, no weighting).** M2I higher for {len(higher['order'])} "
            f"({_listing(higher['order'])}), I2M higher for {len(lower['order'])} ({_listing(lower['order'])}), "
            f"no difference detected for {len(none['order'])} ({names([_who(v) for v in none['order']])}).")
        for ref, per_order in bounds.items():
            beat = {o: [_who(v).split(" − ")[0] for v in vs if v.decision == f"above {ref}"]
                    for o, vs in per_order.items()}
            facts[f"above_{ref}"] = beat
            lines.append(f"**{ref} as an upper bound.** Final-row mean above {ref}'s (paired t, Holm over the "
                         f"strategies of an order): {names(beat['M2I'])} (M2I); {names(beat['I2M'])} (I2M)"
                         + (f" -- {ref} is no upper bound in this run." if beat["M2I"] or beat["I2M"] else "."))
    best = {o: max(strategies, key=lambda k: metrics[o][k]["final_acc"]) for o in metrics}
    lines.append(f"Highest final-row mean (on average, not a verdict): {best['M2I']} "
                 f"({metrics['M2I'][best['M2I']]['final_acc']:.3f}, M2I), {best['I2M']} "
                 f"({metrics['I2M'][best['I2M']]['final_acc']:.3f}, I2M).")
    if "naive" in strategies:
        nv = metrics
        lines.append(
            f"**BWT, two forms.** Naive fine-tuning: Eq. 2 {nv['M2I']['naive']['BWT_eq2']:+.3f} (M2I) / "
            f"{nv['I2M']['naive']['BWT_eq2']:+.3f} (I2M); the authors' code {nv['M2I']['naive']['BWT_code']:+.3f} / "
            f"{nv['I2M']['naive']['BWT_code']:+.3f}. Only the code's form is comparable with the paper's tables; "
            f"it averages per-stage changes, which telescope to 2/(T(T−1)) · Σ_(j<T) (R_Tj − R_jj), i.e. "
            f"{2 / T:.2f} (= 2/T) times the final-row BWT here.")
    if n < 2:
        power_text = "**Power.** One seed: no paired test and no detectable effect; every difference above is one run's."
    else:
        power_text = (
            f"**Power.** With {n} paired seeds the rule detects (80 % power) a difference of {power['alone']:.2f} "
            f"standard deviations of the paired differences alone, {power['holm']:.2f} at Holm's strictest "
            f"level over the {len(fam['order'])} strategies"
            + (f"; in accuracy, the order verdict could detect |gaps| from {min(mde):.3f} to {max(mde):.3f} "
               f"(median {float(np.median(mde)):.3f}) depending on the strategy's seed spread." if mde else "."))
    if image_size < 64 or per_class_train < 500:   # below the paper's 64x64 and 500 images per class
        power_text += (" Small scale (smaller images or fewer images per class than the paper's 64x64 and 500): "
                       "the paper's numbers are not expected at this size.")
    lines.append(power_text)
    facts.update(strategies_better_under_m2i=[_who(v) for v in higher["order"]] if conclusive else [],
                 strategies_better_under_i2m=[_who(v) for v in lower["order"]] if conclusive else [],
                 best_strategy=best, detectable={"d_z_alone": power["alone"], "d_z_holm": power["holm"],
                                                 "order_gap_min": min(mde) if mde else None,
                                                 "order_gap_median": float(np.median(mde)) if mde else None,
                                                 "order_gap_max": max(mde) if mde else None})
    return "\n\n".join(lines), facts


def findings_markdown(results: dict) -> str:
    """The user guide's generated findings block from a default run's ``results.json``.

    Parameters
    ----------
    results : dict
        The ``results`` of a run's ``results.json`` (or the whole file).

    Examples
    --------
    >>> r = {"seeds": [0, 1], "tasks": ["a", "b"], "summary": "**Setting.** x", "controls_hold": True,
    ...      "verdicts": [], "detectable": {"d_z_alone": 3.3, "d_z_holm": 9.0}}
    >>> print(findings_markdown(r).splitlines()[0])
    Default run: 2 seeds, tasks a → b (easiest first); controls hold.
    """
    r = results.get("results", results)
    head = (f"Default run: {len(r['seeds'])} seeds, tasks {' → '.join(r['tasks'])} (easiest first); "
            f"controls {'hold' if r['controls_hold'] else 'FAIL'}.")
    rows = [v for v in r.get("verdicts", []) if v["comparison"].endswith("(final-row mean)")]
    table = ""
    if rows:
        table = ("\n\n| M2I − I2M, final-row mean | role | effect | 95 % CI | p (Holm) | decision |\n"
                 "|---|---|---|---|---|---|\n"
                 + "\n".join(f"| {v['comparison'].split(':')[0]} | {v['role']} | {v['effect']:+.3f} | "
                              f"{v['ci_low']:+.3f} … {v['ci_high']:+.3f} | {_p(v['p'])} | {v['decision']} |"
                              if v["ci_low"] is not None and np.isfinite(v["ci_low"]) else
                              f"| {v['comparison'].split(':')[0]} | {v['role']} | {v['effect']:+.3f} | – | "
                              f"{_p(v['p'])} | {v['decision']} |" for v in rows))
    return head + table + "\n\n" + r["summary"] + "\n"


#: name of the generated block in ``docs/04_curriculum.md``
FINDINGS_BLOCK = "findings-04_curriculum"


def write_findings(doc, results, name: str = FINDINGS_BLOCK):
    """Replace the generated block ``name`` of the Markdown file ``doc`` by :func:`findings_markdown`.

    The block is delimited by ``<!-- BEGIN generated: NAME -->`` and
    ``<!-- END generated: NAME -->`` lines; the file is rewritten atomically.

    Parameters
    ----------
    doc : str or Path
        The user-guide page (it must hold the block's two lines).
    results : dict or str or Path
        A run's ``results.json`` content, or its path.

    Returns
    -------
    pathlib.Path
        ``doc``.
    """
    import json
    import re
    from pathlib import Path

    from .._io import atomic_write_text

    if not isinstance(results, dict):
        results = json.loads(Path(results).read_text(encoding="utf-8"))
    doc = Path(doc)
    text = doc.read_text(encoding="utf-8")
    begin, end = f"<!-- BEGIN generated: {name} -->", f"<!-- END generated: {name} -->"
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise ValueError(f"{doc} has no generated block {name!r} (lines {begin!r} ... {end!r})")
    block = f"{begin}\n{findings_markdown(results).rstrip()}\n{end}"
    return atomic_write_text(doc, pattern.sub(lambda _: block, text, count=1))
