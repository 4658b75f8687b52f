"""Figures of a comparison: per-method distributions over runs, and each method's mean R."""

from __future__ import annotations

import numpy as np

from ..plot import matrix_heatmap, new_axes
from .metrics import METRICS

__all__ = ["metric_strip", "mean_matrices"]


def metric_strip(table, metric: str = "acc", ax=None):
    """Box plot of ``metric`` per method with every run drawn as a point (one per seed / order).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`clkit.compare.metrics.metrics_table`.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"method": ["a", "a", "b", "b"], "acc": [0.5, 0.6, 0.7, 0.8]})
    >>> metric_strip(t).get_ylabel()
    'ACC'
    """
    import seaborn as sns

    ax = new_axes(ax, figsize=(1.2 + 1.1 * table["method"].nunique(), 3.6))
    order = list(dict.fromkeys(table["method"]))
    sns.boxplot(data=table, x="method", y=metric, order=order, ax=ax, color="lightgrey", showfliers=False,
                width=0.5)
    sns.stripplot(data=table, x="method", y=metric, order=order, ax=ax, color="C0", size=4, jitter=0.15)
    ax.set_ylabel(METRICS.get(metric, (metric,))[0])
    ax.set_xlabel("")
    ax.set_title(f"{METRICS.get(metric, (metric,))[0]} over runs (one point per run)")
    return ax


def mean_matrices(runs, methods=None):
    """A figure with one heatmap per method: its mean R over runs (cells missing in some run are
    averaged over the runs that have them; missing in all: grey).

    Examples
    --------
    >>> from clkit.compare.runs import Run
    >>> fig = mean_matrices([Run("a", "0", None, None, np.array([[0.9, np.nan], [0.6, 0.8]]), "x")])
    >>> len(fig.axes) >= 1
    True
    """
    import matplotlib.pyplot as plt

    runs = list(runs)
    methods = list(dict.fromkeys(r.method for r in runs)) if methods is None else list(methods)
    fig, axes = plt.subplots(1, len(methods), figsize=(3.6 * len(methods), 3.2), squeeze=False)
    for ax, m in zip(axes[0], methods):
        Rs = np.stack([r.R for r in runs if r.method == m])
        with np.errstate(invalid="ignore"):
            count = np.sum(~np.isnan(Rs), axis=0)
            mean = np.where(count > 0, np.nansum(Rs, axis=0) / np.maximum(count, 1), np.nan)
        matrix_heatmap(mean, ax=ax, vmin=0.0, vmax=1.0, title=f"{m}: mean R over {len(Rs)} runs")
    fig.tight_layout()
    return fig
