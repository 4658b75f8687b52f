"""From accuracy matrices to the notebook's numbers: per-seed metrics, means, paired gaps.

Every function takes the results of :func:`clkit.curriculum.streams.run_streams`
(``R[seed][order][strategy]``) and the :class:`~clkit.curriculum.difficulty.Curriculum`
they were trained on, and returns plain data (DataFrames, dicts) that
:mod:`clkit.curriculum.report` turns into tables and text.
"""

from __future__ import annotations

import numpy as np

from .difficulty import Curriculum
from .evaluate import paired_gap, stream_metrics, verdict, weighting_reference

__all__ = ["METRIC_COLUMNS", "metrics_per_seed", "metrics_summary", "seed_values", "mean_matrices",
           "order_gaps", "reference_verdicts"]

#: columns of the metric table, in the order shown
METRIC_COLUMNS = ["ACC", "ACC_ref", "final_acc", "BWT_eq2", "BWT_code", "FWT", "rank"]


def metrics_per_seed(R: dict, curriculum: Curriculum, strategies, scenario: str):
    """One row per (seed, order, strategy): :func:`stream_metrics` and the weighting reference ``ACC_ref``.

    Returns
    -------
    pandas.DataFrame with columns seed, order, strategy, ACC_ref, ACC, final_acc, BWT_eq2,
    BWT_code, FWT
    """
    import pandas as pd

    rows = []
    for s in R:
        for o, order in curriculum.orders.items():
            ref = weighting_reference(curriculum.accuracy[s], order)
            for k in strategies:
                rows.append({"seed": s, "order": o, "strategy": k, "ACC_ref": ref["ACC"],
                             **stream_metrics(R[s][o][k], scenario)})
    return pd.DataFrame(rows)


def metrics_summary(per_seed, strategies):
    """Means over seeds with the ACC rank per order.

    Returns
    -------
    mean : pandas.DataFrame
        Indexed by (order, strategy), columns :data:`METRIC_COLUMNS`.
    metrics : dict order -> strategy -> column -> float (``rank`` an int, 1 = highest ACC)
    """
    mean = per_seed.drop(columns="seed").groupby(["order", "strategy"]).mean()
    mean["rank"] = mean.groupby("order")["ACC"].rank(ascending=False, method="min")
    orders = list(dict.fromkeys(per_seed["order"]))
    metrics = {o: {k: {c: float(mean.loc[(o, k), c]) for c in METRIC_COLUMNS} for k in strategies}
               for o in orders}
    for o in orders:
        for k in strategies:
            metrics[o][k]["rank"] = int(metrics[o][k]["rank"])
    return mean, metrics


def seed_values(per_seed, order: str, strategy: str, column: str) -> list:
    """The per-seed values of one metric, in seed order."""
    rows = per_seed[(per_seed.order == order) & (per_seed.strategy == strategy)]
    return [float(rows[rows.seed == s][column].iloc[0]) for s in dict.fromkeys(per_seed["seed"])]


def mean_matrices(R: dict, orders, strategies) -> dict:
    """``R`` averaged over seeds: order -> strategy -> ndarray (T, T)."""
    return {o: {k: np.mean([R[s][o][k] for s in R], axis=0) for k in strategies} for o in orders}


def order_gaps(per_seed, curriculum: Curriculum, strategies):
    """M2I − I2M per strategy, paired by seed: the ACC gap, its excess over weighting, the final-row gap.

    Returns
    -------
    gaps : dict strategy -> dict
        ``ACC``, ``ACC_minus_weighting``, ``final_acc`` (:func:`paired_gap`) and the
        verdicts ``verdict_final``, ``verdict_ACC``, ``verdict_ACC_minus_weighting``.
    ref_acc : dict order -> list of float
        The weighting reference's ACC per seed.
    ref_gap : dict
        Its paired M2I − I2M gap.
    """
    seeds = list(dict.fromkeys(per_seed["seed"]))
    ref_acc = {o: [weighting_reference(curriculum.accuracy[s], order)["ACC"] for s in seeds]
               for o, order in curriculum.orders.items()}
    ref_gap = paired_gap(ref_acc["M2I"], ref_acc["I2M"])
    gaps = {}
    for k in strategies:
        def vals(o, col):
            return seed_values(per_seed, o, k, col)

        acc_gap = paired_gap(vals("M2I", "ACC"), vals("I2M", "ACC"))
        excess = paired_gap(np.subtract(vals("M2I", "ACC"), vals("M2I", "ACC_ref")),
                            np.subtract(vals("I2M", "ACC"), vals("I2M", "ACC_ref")))
        final = paired_gap(vals("M2I", "final_acc"), vals("I2M", "final_acc"))
        gaps[k] = {"ACC": acc_gap, "ACC_minus_weighting": excess, "final_acc": final,
                   "verdict_final": verdict(final), "verdict_ACC": verdict(acc_gap),
                   "verdict_ACC_minus_weighting": verdict(excess, "above", "below")}
    return gaps, ref_acc, ref_gap


def reference_verdicts(per_seed, ref: str, strategies, orders) -> dict:
    """Final-row mean of every strategy against a reference learner (``mste``, ``cumulative``), per order."""
    return {o: {k: verdict(paired_gap(seed_values(per_seed, o, k, "final_acc"),
                                      seed_values(per_seed, o, ref, "final_acc")), "above", "below")
                for k in strategies if k != ref} for o in orders}
