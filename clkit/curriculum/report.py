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
from .controls import seed_span, checks_hold
from .evaluate import bwt_identity
from .verdicts import FAMILIES, NEAR, NULL_LEARNERS, PRIMARY, WEIGHTING, detectable, family_of, guards, is_near

__all__ = ["pm", "names", "data_table", "data_text", "data_record", "difficulty_frame", "curriculum_text",
           "curriculum_record", "metrics_table", "verdict_tables", "bound_tables", "checks_table", "checks_text",
           "near_text", "bwt_identity", "summary", "seeds_plan", "findings_markdown", "write_findings", "FINDINGS_BLOCK",
           "SECTIONS", "SMALL_N"]

#: fewer seeds than this: the closing text draws no conclusion (the rule's power is too low)
SMALL_N = 4
#: headings of the verdict tables -> (metric, scope) of their rows
SECTIONS = {
    "Primary: the order verdict of the paper's headline strategies (final-row mean, M2I − I2M)": ("order", "primary"),
    "Exploratory: the order verdict of the other strategies (final-row mean, M2I − I2M)": ("order", "exploratory"),
    "Exploratory: ACC, the paper's comparison (M2I − I2M)": ("ACC", "exploratory"),
    "Exploratory: ACC beyond weighting (ACC gap − the weighting reference's gap)": ("excess", "exploratory"),
}


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


def _rows(verdicts, fam: str, scope: str) -> list:
    """The finding rows of one metric and scope."""
    return [v for v in verdicts if v.role == "finding" and v.scope == scope and family_of(v) == fam]


def _verdict_frame(rows):
    """:func:`clkit.stats.verdict_table` with a column saying which rows are near their level."""
    t = stats.verdict_table(rows)
    t["near its level"] = ["yes" if is_near(v) else "" for v in rows]
    return t


def verdict_tables(verdicts) -> dict:
    """One table per family (:data:`SECTIONS`), keyed by its heading; the controls of a metric go
    with the first table of that metric (the final-row null control with the primary family).

    Each table is :func:`clkit.stats.verdict_table` (the interval at the level of each row's
    decision) with a column ``near its level`` (:func:`clkit.curriculum.verdicts.is_near`).
    """
    out, placed = {}, set()
    for title, (fam, scope) in SECTIONS.items():
        rows = _rows(verdicts, fam, scope)
        if fam not in placed and (rows or scope == "exploratory"):
            rows += [v for v in verdicts if v.role != "finding" and family_of(v) == fam]
            placed.add(fam)
        if rows:
            out[title] = _verdict_frame(rows)
    return out


def bound_tables(bounds: dict) -> dict:
    """One table per reference and order of :func:`clkit.curriculum.verdicts.bound_verdicts`."""
    return {f"Exploratory: final-row mean against {ref}, {o}": _verdict_frame(vs)
            for ref, per_order in bounds.items() for o, vs in per_order.items() if vs}


def checks_table(checks):
    """The pipeline checks: one row each, whether it holds, and what was compared."""
    import pandas as pd

    return pd.DataFrame([{"pipeline check": k.name, "holds": "holds" if k.holds else "FAILS", "detail": k.detail}
                         for k in checks]).set_index("pipeline check")


def checks_text(checks) -> str:
    """The closing text's line on the pipeline checks (what holds by construction when the pipeline works).

    Examples
    --------
    >>> from clkit.curriculum.controls import Check
    >>> checks_text([Check("a", True, "0"), Check("b", False, "off by 0.1")])
    '**Pipeline checks fail** (1 of 2): b (off by 0.1). The pipeline cannot be trusted on this run, so no difference below is read as a finding.'
    """
    if not checks:
        return ""
    ok, failed = checks_hold(checks)
    if ok:
        return (f"**Pipeline checks hold** ({len(checks)} of {len(checks)}; zero by construction, so they test the "
                "pipeline, not the rule): " + "; ".join(f"{k.name} ({k.detail})" for k in checks) + ".")
    return (f"**Pipeline checks fail** ({len(failed)} of {len(checks)}): "
            + "; ".join(f"{k.name} ({k.detail})" for k in failed)
            + ". The pipeline cannot be trusted on this run, so no difference below is read as a finding.")


def _kind(v) -> str:
    return v.role if v.role != "finding" else v.scope


def near_text(verdicts, factor: float = NEAR) -> str:
    """The rows whose p lies within ``factor`` of their level, each with its interval at that level.

    Examples
    --------
    >>> v = stats.paired([0.30, 0.10, 0.22, -0.05, 0.2], [0.0] * 5, comparison="x", higher="M2I higher")
    >>> print(near_text([v]))
    **Near the level** (α/2 ≤ p < 2α: another seed, or the last bit of a rounding, could move these across it): x (primary: no difference, p = 0.063 at α = 0.05, 95 % CI -0.013 to +0.32).
    """
    near = [v for v in verdicts if v.n >= 2 and is_near(v, factor)]
    if not near:
        return ""
    return (f"**Near the level** (α/{factor:g} ≤ p < {factor:g}α: another seed, or the last bit of a rounding, "
            "could move these across it): " + "; ".join(
                f"{v.comparison} ({_kind(v)}: {v.decision}, {stats._p_text(v.p)} at α = {v.alpha:g}, "
                f"{stats._ci_text(v.ci_low, v.ci_high, v.ci_level)})" for v in near) + ".")


def _f(x: float, sign: bool = True) -> str:
    """An accuracy difference with 3 decimals."""
    return f"{x:+.3f}" if sign else f"{x:.3f}"


def _p(p) -> str:
    return "–" if p is None or not np.isfinite(p) else ("< 0.0001" if p < 1e-4 else f"{p:.2g}")


def _who(v) -> str:
    return v.comparison.split(":")[0]


def _listing(vs) -> str:
    return names([f"{_who(v)} {_f(v.effect)}" for v in vs])


def _by_decision(rows, fam):
    _, up, down = FAMILIES[fam]
    return ([v for v in rows if v.decision == up], [v for v in rows if v.decision == down],
            [v for v in rows if v.decision == stats.NO_DIFFERENCE])


def _control_chance(verdicts) -> str:
    """What a failed null control means when nothing is wrong (5 % each)."""
    nulls = [v for v in verdicts if v.role == "null control"]
    if not any(v.control_ok is False for v in nulls):
        return ""
    k = len(nulls)
    return (f"A null control fails by chance in {100 * stats.ALPHA:.0f} % of runs in which nothing is wrong; "
            f"with {k} of them, in up to {100 * (1 - (1 - stats.ALPHA) ** k):.0f} %: rerun with another `seed` "
            "before reading this as a broken rule.")


def summary(*, c: Curriculum, metrics: dict, verdicts, bounds: dict, strategies, scenario: str, backbone: str,
            image_size: int, per_class_train: int, epochs: int, memory_format: str = "contiguous",
            note: str | None = None, checks=(), control=None, primary=PRIMARY) -> tuple[str, dict]:
    """The closing Markdown of the notebook, generated from its verdicts, and the facts it states.

    The order of the text: the setting and the claim tested; the difficulty of the chosen
    tasks; the pipeline checks; the verdicts' own closing text (:func:`clkit.stats.closing_text`
    over the primary rows and the controls that guard them -- the final-row null control and
    the oracles, :func:`~clkit.curriculum.verdicts.guards`: the controls first, then the
    findings, primary rows only, or, when one of those controls or a pipeline check fails or
    there are fewer than :data:`SMALL_N` seeds, no finding at all; and what the primary family
    could detect); the exploratory families' own null controls; the rows near their level; then
    the exploratory families in words -- read only when the findings could be, and a family only
    when its own null control holds, never as findings; the BWT forms; the run's power.

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
    checks : list of clkit.curriculum.controls.Check
        :func:`clkit.curriculum.controls.pipeline_checks`.
    control : clkit.curriculum.controls.NullControl, optional
        The stochastic null control (named in the setting).
    primary : sequence of str
        The strategies whose order verdict is the claim (those not run are named).

    Returns
    -------
    text : str
    facts : dict
        ``controls_hold`` (every control), ``primary_controls_hold`` (those guarding the findings),
        ``pipeline_checks_hold``, ``conclusive``, ``primary`` (the primary
        strategies run), the primary findings (``strategies_better_under_m2i`` / ``_i2m``),
        ``near_level`` (comparisons near their level), ``above_<reference>``, ``best_strategy``,
        ``detectable`` for ``results.json``.
    """
    T, m2i, diff = len(c.tasks), c.m2i, c.table
    n = min((v.n for v in verdicts), default=0)
    guard = guards(verdicts)
    ok, _ = stats.controls_hold(guard["order"])
    checks_ok, _ = checks_hold(checks)
    conclusive = ok and checks_ok and n >= SMALL_N
    prim = _rows(verdicts, "order", "primary")
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
        _claim_text(prim, primary, strategies, control),
    ]
    if checks:
        lines.append(checks_text(checks))
    if checks_ok:
        lines.append(stats.closing_text(prim + guard["order"], subject="this run", small_n=SMALL_N))
    else:
        lines.append(stats.closing_text(guard["order"], subject="this run", small_n=SMALL_N))
        lines.append("Measured differences (not findings): " + "; ".join(
            f"{v.comparison} {_f(v.effect)} ({stats._p_text(v.p)})" for v in prim) + ".")
    lines += [t for t in (_exploratory_controls_text(guard["ACC"] + guard["excess"]), _control_chance(verdicts),
                          near_text(verdicts)) if t]
    oracle = {_who(v): v for v in guard["order"] if v.role == "oracle control"}
    mste = next((k for k in strategies if k in NULL_LEARNERS), None)
    if mste is not None and mste in oracle:
        gap = metrics["M2I"][mste]["final_acc"] - metrics["I2M"][mste]["final_acc"]
        lines.append(f"**MSTE is a pipeline check and an oracle, not a finding.** One expert per task cannot forget "
                     f"or transfer: with the per-task pairing its final-row gap is {_f(gap)} (a pipeline check), "
                     f"and its ACC gap ({_f(oracle[mste].effect)}) is weighting of its own task accuracies (an "
                     f"oracle that must come out '{oracle[mste].expect}': it came out '{oracle[mste].decision}').")
    facts = {"controls_hold": stats.controls_hold(verdicts)[0], "primary_controls_hold": ok,
             "pipeline_checks_hold": checks_ok, "conclusive": conclusive, "primary": [_who(v) for v in prim],
             "near_level": [v.comparison for v in verdicts if is_near(v)]}
    if conclusive:
        lines += _exploratory_text(verdicts, bounds, oracle.get(WEIGHTING), T, facts, guard)
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
    m = max(len(prim), 1)
    power = detectable(n, m)
    mde = [v.mde for v in prim if np.isfinite(v.mde)]
    if n < 2:
        power_text = "**Power.** One seed: no paired test and no detectable effect; every difference above is one run's."
    else:
        power_text = (
            f"**Power.** With {n} paired seeds the rule detects (80 % power) a difference of {power['alone']:.2f} "
            f"standard deviations of the paired differences alone, {power['holm']:.2f} at Holm's strictest "
            f"level over the {m} primary comparison{'s' * (m != 1)}"
            + ("; in accuracy, the primary order verdicts could detect |gaps| of "
               + ", ".join(f"{_who(v)} {v.mde:.3f}" for v in prim if np.isfinite(v.mde))
               + " (at each row's level, from its seed spread)." if mde else "."))
    if image_size < 64 or per_class_train < 500:   # below the paper's 64x64 and 500 images per class
        power_text += (" Small scale (smaller images or fewer images per class than the paper's 64x64 and 500): "
                       "the paper's numbers are not expected at this size.")
    lines.append(power_text)
    up, down, _ = _by_decision(prim, "order")
    facts.update(strategies_better_under_m2i=[_who(v) for v in up] if conclusive else [],
                 strategies_better_under_i2m=[_who(v) for v in down] if conclusive else [],
                 best_strategy=best, detectable={"d_z_alone": power["alone"], "d_z_holm": power["holm"],
                                                 "order_gap_min": min(mde) if mde else None,
                                                 "order_gap_median": float(np.median(mde)) if mde else None,
                                                 "order_gap_max": max(mde) if mde else None})
    return "\n\n".join(lines), facts


def seeds_plan(verdicts, primary=PRIMARY):
    """How many seeds the primary comparisons would need, or why there is nothing to plan.

    :func:`clkit.plan.plan` over the run's primary finding rows (their recorded per-seed
    values); a run whose strategies include none of ``primary`` (e.g. a plugin learner
    alone) has no primary row and gets a sentence instead of a table.

    Parameters
    ----------
    verdicts : list of Verdict
        The run's verdicts (:func:`clkit.curriculum.verdicts.order_verdicts` and the rest).
    primary : sequence of str
        The strategies whose order verdict is the primary family.

    Returns
    -------
    pandas.DataFrame or str
        The plan (one row per primary comparison), or Markdown saying why there is none.

    Examples
    --------
    >>> seeds_plan([], primary=("replay",))
    'No primary comparison in this run (none of replay was run), so there is no seed count to plan.'
    """
    from ..plan import plan

    rows = [v.to_dict() for v in verdicts if v.role == "finding" and v.scope == "primary"]
    if not any(r.get("a") for r in rows):
        return (f"No primary comparison in this run (none of {names(primary)} was run), so there is no "
                "seed count to plan.")
    return plan(rows)


def _claim_text(prim, primary, strategies, control) -> str:
    """What the run tests as its claim, and its stochastic null control."""
    missing = [k for k in primary if k not in strategies]
    if prim:
        text = (f"**The claim tested** (primary): the order verdict -- final-row mean, M2I − I2M -- of "
                f"{names([_who(v) for v in prim])}, the paper's headline examples of a better M2I, Holm over "
                f"{len(prim)}. Everything else is exploratory: shown with its interval at its family's level, "
                "never a finding.")
    else:
        text = ("**No primary comparison**: none of the strategies whose order verdict is the claim "
                f"({names(list(primary))}) ran, so every verdict below is exploratory.")
    if missing and prim:
        text += f" Not run: {names(missing)}."
    if control is not None:
        text += (f" Null control: {control.strategy} against itself under {control.order}, "
                 f"{seed_span(control.offset_seeds)} against {seed_span(control.seeds)}, one per metric.")
    return text


def _exploratory_controls_text(controls) -> str:
    """The null controls of the exploratory families: each decides whether its family is read."""
    if not controls:
        return ""
    return ("**Controls of the exploratory families** (each guards its own family only): " + "; ".join(
        f"{v.comparison} came out '{v.decision}' as it must" if v.control_ok else
        f"{v.comparison} came out '{v.decision}', must be '{v.expect}': that family is not read below"
        for v in controls) + ".")


def _exploratory_text(verdicts, bounds, weighting, T, facts, guard) -> list:
    """The exploratory families in words (shown, never findings); a family whose own null control
    failed is named and not read."""
    lines = []
    failed = {f for f in ("ACC", "excess") if not stats.controls_hold(guard[f])[0]}
    for f, title in (("ACC", "the paper's comparison (ACC)"), ("excess", "beyond weighting")):
        if f in failed:
            lines.append(f"**Exploratory: {title}** is not read: its null control failed.")
    acc = _rows(verdicts, "ACC", "exploratory") if "ACC" not in failed else []
    if acc:
        up, down, none = _by_decision(acc, "ACC")
        text = (f"**Exploratory: the paper's comparison (ACC).** At its family's Holm level, M2I higher for "
                f"{len(up)} of {len(acc)} strategies ({_listing(up)}), I2M higher for {len(down)} "
                f"({_listing(down)}), no difference for {len(none)}.")
        if weighting is not None:
            text += (f" Weighting alone gives {_f(weighting.effect)} "
                     f"({stats._ci_text(weighting.ci_low, weighting.ci_high, weighting.ci_level)}): ACC counts the "
                     f"first task {T} times and the last once, so an M2I advantage in ACC is expected from a learner "
                     "with no order effect at all.")
        lines.append(text)
    excess = _rows(verdicts, "excess", "exploratory") if "excess" not in failed else []
    if excess:
        up, down, _ = _by_decision(excess, "excess")
        lines.append(
            f"**Exploratory: beyond weighting.** The ACC gap exceeds the weighting gap for {len(up)} "
            f"({_listing(up)}) and falls short of it for {len(down)} ({_listing(down)}); a learner that forgets "
            "counts its first task less often than the reference assumes, so falling short is expected of strong "
            "forgetters and is no I2M advantage.")
    other = _rows(verdicts, "order", "exploratory")
    if other:
        up, down, none = _by_decision(other, "order")
        lines.append(
            f"**Exploratory: the order verdict of the other strategies** (final-row mean, no weighting). M2I "
            f"higher for {len(up)} ({_listing(up)}), I2M higher for {len(down)} ({_listing(down)}), no difference "
            f"detected for {len(none)} ({names([_who(v) for v in none])}).")
    for ref, per_order in bounds.items():
        beat = {o: [_who(v).split(" − ")[0] for v in vs if v.decision == f"above {ref}"]
                for o, vs in per_order.items()}
        facts[f"above_{ref}"] = beat
        lines.append(f"**Exploratory: {ref} as an upper bound.** Final-row mean above {ref}'s (paired t, Holm over "
                     f"the strategies of an order): {names(beat.get('M2I', []))} (M2I); "
                     f"{names(beat.get('I2M', []))} (I2M)"
                     + (f" -- {ref} is no upper bound in this run." if any(beat.values()) else "."))
    return lines


def findings_markdown(results: dict) -> str:
    """The user guide's generated findings block from a default run's ``results.json``.

    The table holds the primary rows and the controls, each interval at the level of its
    decision (named in the column), then the closing text.

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
    checks = r.get("pipeline_checks")
    head = (f"Default run: {len(r['seeds'])} seeds, tasks {' → '.join(r['tasks'])} (easiest first); "
            f"controls {'hold' if r['controls_hold'] else 'FAIL'}"
            + ("" if checks is None else
               f"; pipeline checks {'hold' if all(k['holds'] for k in checks) else 'FAIL'}") + ".")
    rows = [v for v in r.get("verdicts", []) if v.get("scope") == "primary" and v["role"] == "finding"
            or v["role"] != "finding"]
    table = ""
    if rows:
        def ci(v):
            lo, hi, level = v["ci_low"], v["ci_high"], v.get("ci_level") or stats.CONFIDENCE
            if lo is None or hi is None or not (np.isfinite(lo) and np.isfinite(hi)):
                return "–"
            return f"{lo:+.3f} … {hi:+.3f} ({stats._level(level)} %)"

        table = ("\n\n| comparison | role | effect | " + stats.CI_COLUMN + " | p | decision |\n"
                 "|---|---|---|---|---|---|\n"
                 + "\n".join(f"| {v['comparison']} | {v['role'] if v['role'] != 'finding' else v['scope']} | "
                             f"{v['effect']:+.3f} | {ci(v)} | {_p(v['p'])} | {v['decision']} |" for v in rows))
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
