"""Per-run metrics recomputed with :mod:`clkit.metrics`, and where the framework's own numbers disagree.

The metrics are those of ``clkit metrics cl`` (:func:`clkit.cli.metrics.cl_result` computes the
same): ``acc`` (final-row mean, Lopez-Paz & Ranzato), ``acc_all_seen`` (lower-triangle mean),
``bwt`` (Lopez-Paz), ``fwt`` (mean of the upper triangle, Díaz-Rodríguez et al.; NaN when the
cells above the diagonal were not evaluated) and ``forgetting`` (Chaudhry et al.). A framework's
numbers are never used in their place: :func:`disagreements` lists each one that differs from
the recomputed value by more than ``tol`` (absolute, on the fraction scale).
"""

from __future__ import annotations

import numpy as np

from .. import metrics as mt

__all__ = ["METRICS", "TOLERANCE", "run_metrics", "metrics_table", "disagreements"]

#: metric key -> (label, higher is better)
METRICS = {"acc": ("ACC", True), "acc_all_seen": ("ACC (all seen)", True), "bwt": ("BWT", True),
           "fwt": ("FWT", True), "forgetting": ("forgetting", False)}
#: absolute tolerance (fraction scale) beyond which a reported number disagrees
TOLERANCE = 1e-3


def run_metrics(R) -> dict:
    """ACC, ACC over all seen cells, BWT, FWT and forgetting of one accuracy matrix.

    Examples
    --------
    >>> R = [[0.9, 0.2, 0.1], [0.5, 0.8, 0.3], [0.3, 0.6, 0.7]]
    >>> {k: round(v, 4) for k, v in run_metrics(R).items()}
    {'acc': 0.5333, 'acc_all_seen': 0.6333, 'bwt': -0.4, 'fwt': 0.2, 'forgetting': 0.4}
    """
    return {"acc": mt.average_accuracy(R), "acc_all_seen": mt.average_accuracy(R, mode="all_seen"),
            "bwt": mt.backward_transfer(R), "fwt": mt.forward_transfer(R, mode="diaz_rodriguez"),
            "forgetting": mt.forgetting(R)}


def metrics_table(runs):
    """A DataFrame with one row per run: its identity, source, task count and recomputed metrics.

    Examples
    --------
    >>> from clkit.compare.runs import Run
    >>> t = metrics_table([Run("a", "0", None, None, np.array([[0.9, np.nan], [0.6, 0.8]]), "a0.csv")])
    >>> t.loc[0, "method"], t.loc[0, "seed"], float(round(t.loc[0, "acc"], 4)), float(round(t.loc[0, "bwt"], 4))
    ('a', '0', 0.7, -0.3)
    """
    import pandas as pd

    return pd.DataFrame([{"method": r.method, "seed": r.seed, "order": r.order, "taskification": r.taskification,
                          "num_tasks": r.num_tasks, **run_metrics(r.R), "source": r.source} for r in runs])


def disagreements(runs, tol: float = TOLERANCE):
    """Every reported number that differs from the recomputed one by more than ``tol``.

    Returns
    -------
    pandas.DataFrame
        Columns run, source, metric, reported, recomputed, difference (``reported - recomputed``).
        A reported number whose recomputed value is NaN (e.g. FWT without the upper triangle) is
        listed too: it cannot be checked.

    Examples
    --------
    >>> from clkit.compare.runs import Run
    >>> r = Run("a", "0", None, None, np.array([[0.9, np.nan], [0.6, 0.8]]), "a0.csv",
    ...         reported={"acc": 0.7, "forgetting": 0.25})
    >>> disagreements([r])[["run", "metric", "reported", "recomputed"]].values.tolist()
    [['a seed 0', 'forgetting', 0.25, 0.30000000000000004]]
    """
    import pandas as pd

    rows = []
    for r in runs:
        if not r.reported:
            continue
        got = run_metrics(r.R)
        for key, value in r.reported.items():
            mine = got[key]
            if not np.isfinite(mine) or abs(value - mine) > tol:
                rows.append({"run": r.label, "source": r.source, "metric": key, "reported": value,
                             "recomputed": mine, "difference": value - mine if np.isfinite(mine) else np.nan})
    return pd.DataFrame(rows, columns=["run", "source", "metric", "reported", "recomputed", "difference"])
