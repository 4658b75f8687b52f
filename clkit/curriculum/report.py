"""Notebook 04's tables and closing text, generated from its numbers.

Each function returns a DataFrame or a Markdown string for the notebook to
``display``, or a dict for :meth:`clkit.results.RunRecord.log`; none computes a
result of its own beyond formatting (the numbers come from
:mod:`clkit.curriculum.analysis`).
"""

from __future__ import annotations

import numpy as np

from .analysis import METRIC_COLUMNS
from .benchmark import Benchmark
from .difficulty import Curriculum

__all__ = ["pm", "names", "data_table", "data_text", "data_record", "difficulty_frame", "curriculum_text",
           "curriculum_record", "metrics_table", "gap_table", "summary"]


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


def gap_table(gaps: dict, ref_gap: dict, strategies):
    """M2I − I2M per strategy: ACC gap, weighting-only gap, final-row gap, verdicts."""
    import pandas as pd

    rows = []
    for k in strategies:
        g = gaps[k]
        rows.append({"strategy": k, "ACC gap": pm(g["ACC"]["mean"], g["ACC"]["sd"]),
                     "weighting only": pm(ref_gap["mean"], ref_gap["sd"]),
                     "final-row gap": pm(g["final_acc"]["mean"], g["final_acc"]["sd"]),
                     "order verdict (final row)": g["verdict_final"],
                     "ACC gap vs weighting": g["verdict_ACC_minus_weighting"]})
    return pd.DataFrame(rows).set_index("strategy")


# ---------------------------------------------------------------------------- closing text
def summary(*, c: Curriculum, metrics: dict, gaps: dict, ref_gap: dict, ref_verdicts: dict, strategies,
            scenario: str, backbone: str, image_size: int, per_class_train: int, epochs: int) -> tuple[str, dict]:
    """The closing Markdown of the notebook and the verdict lists it is made of.

    Parameters
    ----------
    ref_verdicts : dict reference -> order -> strategy -> verdict
        :func:`clkit.curriculum.analysis.reference_verdicts` for ``mste`` and ``cumulative``
        (those in the run).

    Returns
    -------
    text : str
    facts : dict
        ``above_<reference>``, ``strategies_better_under_m2i`` / ``_i2m`` and ``best_strategy``
        for ``results.json``.
    """
    T, m2i, diff = len(c.tasks), c.m2i, c.table
    seeds = len(c.seeds)

    def by_verdict(key):
        return {v: [k for k in strategies if gaps[k][key] == v]
                for v in ("M2I higher", "I2M higher", "within spread")}

    fin, raw = by_verdict("verdict_final"), by_verdict("verdict_ACC")
    above = [k for k in strategies if gaps[k]["verdict_ACC_minus_weighting"] == "above"]
    lines = [
        f"**Setting.** {T} tasks ({', '.join(m2i)}, easiest first), "
        f"{scenario}-incremental, backbone `{backbone}` on {image_size}x{image_size} images, "
        f"{per_class_train} training images per class, {epochs} epochs per task, {seeds} seed(s).",
        "**Difficulty.** Single-task accuracies " + "; ".join(
            f"{n} {diff[n]['mean']:.3f} ± {diff[n]['sd']:.3f}" for n in m2i) + ". "
        + ("Every neighbouring gap ("
           + ", ".join(f"{g['gap']:.3f} vs spread {g['spread']:.3f}" for g in c.gaps)
           + ") exceeds its seed spread." if c.separated else
           "Not every neighbouring gap exceeds its seed spread ("
           + ", ".join(f"{g['easier']}/{g['harder']}: {g['gap']:.3f} vs {g['spread']:.3f}" for g in c.gaps)
           + "), so part of the curriculum is a tie."),
        f"**Weighting alone.** A learner that never forgets would score ACC "
        f"{ref_gap['mean']:+.3f} ± {ref_gap['sd']:.3f} higher under M2I than under I2M, "
        f"only because ACC counts the first task {T} times and the last once.",
        f"**Raw ACC** is higher under M2I beyond the seed spread for "
        f"{len(raw['M2I higher'])} of {len(strategies)} strategies "
        f"({names(raw['M2I higher'])}) and under I2M for {len(raw['I2M higher'])} "
        f"({names(raw['I2M higher'])}). Its gap exceeds the weighting-only gap beyond the "
        f"spread for {len(above)} ({names(above)}).",
        f"**Final-row mean** (each task once, the order verdict): M2I higher beyond the "
        f"spread for {len(fin['M2I higher'])} ({names(fin['M2I higher'])}), I2M higher for "
        f"{len(fin['I2M higher'])} ({names(fin['I2M higher'])}), within the spread for "
        f"{len(fin['within spread'])} ({names(fin['within spread'])}).",
    ]
    if "mste" in strategies:
        g = gaps["mste"]
        e = g["ACC_minus_weighting"]
        lines.append(
            f"**MSTE** (one expert per task: it cannot forget, BWT (Eq. 2) "
            f"{metrics['M2I']['mste']['BWT_eq2']:+.3f} / {metrics['I2M']['mste']['BWT_eq2']:+.3f}) has an "
            f"ACC gap of {g['ACC']['mean']:+.3f} ± {g['ACC']['sd']:.3f} against "
            f"{ref_gap['mean']:+.3f} ± {ref_gap['sd']:.3f} from weighting alone "
            f"(difference {e['mean']:+.3f} ± {e['sd']:.3f}: "
            + ("consistent with weighting alone" if g["verdict_ACC_minus_weighting"] == "within spread"
               else "beyond the spread: MSTE's ACC weights its own experts' accuracies, which start from "
                    "other initial weights than the single-task runs")
            + f"), and a final-row gap of {g['final_acc']['mean']:+.3f} ± {g['final_acc']['sd']:.3f}: the "
            f"size of what position and seed noise do here.")
    facts = {}
    for ref, vs in ref_verdicts.items():
        what = ("a separate model per task (it measures single-task learning with the task id known)"
                if ref == "mste" else
                "retraining on all data seen so far (it measures joint training on each prefix of the stream)")
        beat = {o: [k for k, v in vs[o].items() if v == "above"] for o in vs}
        tied = {o: [k for k, v in vs[o].items() if v == "within spread"
                    and metrics[o][k]["final_acc"] > metrics[o][ref]["final_acc"]] for o in vs}
        lines.append(f"**{ref}** is {what}. Final-row mean above {ref}'s beyond the seed "
                     f"spread: {names(beat['M2I'])} (M2I); {names(beat['I2M'])} (I2M); "
                     f"above on average but within the spread: {names(tied['M2I'])} (M2I); "
                     f"{names(tied['I2M'])} (I2M)"
                     + (f" -- {ref} is no upper bound in this run." if beat["M2I"] or beat["I2M"] else "."))
        facts[f"above_{ref}"] = beat
    best = {o: max(strategies, key=lambda k: metrics[o][k]["final_acc"]) for o in metrics}
    lines.append(f"Highest final-row mean: {best['M2I']} ({metrics['M2I'][best['M2I']]['final_acc']:.3f}, M2I), "
                 f"{best['I2M']} ({metrics['I2M'][best['I2M']]['final_acc']:.3f}, I2M).")
    if "naive" in strategies:
        n = metrics
        lines.append(
            f"**BWT, two forms.** Naive fine-tuning: Eq. 2 {n['M2I']['naive']['BWT_eq2']:+.3f} (M2I) / "
            f"{n['I2M']['naive']['BWT_eq2']:+.3f} (I2M); the authors' code "
            f"{n['M2I']['naive']['BWT_code']:+.3f} / {n['I2M']['naive']['BWT_code']:+.3f}. "
            f"Only the code's form is comparable with the paper's tables; it averages "
            f"per-stage changes and is {2 / T:.2f} times the final-row BWT here.")
    lines.append("This is a small-scale run (few, small images; few epochs; offline "
                 "stand-ins for the paper's datasets): differences inside the seed spread "
                 "are not findings, and the paper's numbers are not expected at this size.")
    facts.update(strategies_better_under_m2i=fin["M2I higher"], strategies_better_under_i2m=fin["I2M higher"],
                 best_strategy=best)
    return "\n\n".join(lines), facts
