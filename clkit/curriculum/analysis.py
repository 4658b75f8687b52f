"""From accuracy matrices to the notebook's numbers: per-seed metrics and their means.

Every function takes the results of :func:`clkit.curriculum.streams.run_streams`
(``R[seed][order][strategy]``) and the :class:`~clkit.curriculum.difficulty.Curriculum`
they were trained on, and returns plain data (DataFrames, dicts) that
:mod:`clkit.curriculum.verdicts` judges and :mod:`clkit.curriculum.report` turns into
tables and text.
"""

from __future__ import annotations

import numpy as np

from .difficulty import Curriculum
from .evaluate import stream_metrics, weighting_reference

__all__ = ["METRIC_COLUMNS", "metrics_per_seed", "metrics_summary", "seed_values", "mean_matrices",
           "weighting_record"]

#: columns of the metric table, in the order shown
METRIC_COLUMNS = ["ACC", "ACC_ref", "final_acc", "BWT_eq2", "BWT_code", "FWT", "rank"]


def metrics_per_seed(R: dict, curriculum: Curriculum, strategies, scenario: str, accuracy: dict | None = None):
    """One row per (seed, order, strategy): :func:`stream_metrics` and the weighting reference ``ACC_ref``.

    Parameters
    ----------
    R : dict seed -> order -> strategy -> ndarray (T, T)
        :func:`clkit.curriculum.streams.run_streams`; only the orders present are read (a null
        control runs one).
    curriculum : Curriculum
    strategies : list of str
    scenario : str
    accuracy : dict seed -> dataset -> float, optional
        Single-task accuracies of seeds the curriculum was not chosen on (a null control's offset
        seeds), for their weighting reference (default: ``curriculum.accuracy``).

    Returns
    -------
    pandas.DataFrame with columns seed, order, strategy, ACC_ref, ACC, final_acc, BWT_eq2,
    BWT_code, FWT
    """
    import pandas as pd

    accuracy = curriculum.accuracy if accuracy is None else accuracy
    rows = []
    for s in R:
        for o, order in curriculum.orders.items():
            if o not in R[s]:
                continue
            ref = weighting_reference(accuracy[s], order)
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


def weighting_record(c: Curriculum, seeds) -> dict:
    """The weighting reference's ACC per order (mean over seeds) and its per-seed values.

    Returns
    -------
    dict with ``M2I``, ``I2M`` (means) and ``per_seed`` (order -> list of float)
    """
    per_seed = {o: [weighting_reference(c.accuracy[s], order)["ACC"] for s in seeds]
                for o, order in c.orders.items()}
    return {**{o: float(np.mean(v)) for o, v in per_seed.items()}, "per_seed": per_seed}
