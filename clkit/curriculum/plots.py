"""Notebook 04's figures: task difficulty, the accuracy matrices, the M2I − I2M gaps.

Each function returns the figure it draws (the notebook saves it through
:meth:`clkit.results.RunRecord.figure`).
"""

from __future__ import annotations

import numpy as np

from ..plot import matrix_heatmap
from .difficulty import Curriculum

__all__ = ["difficulty", "acc_matrices", "gaps"]


def difficulty(c: Curriculum):
    """Bar per candidate dataset: mean single-task accuracy ± seed sd, dots per seed, chosen tasks in blue."""
    import matplotlib.pyplot as plt

    ranked, seeds = c.ranked, c.seeds
    fig, ax = plt.subplots(figsize=(5.5, 3))
    xs = np.arange(len(ranked))
    ax.bar(xs, [c.table[n]["mean"] for n in ranked], yerr=[np.nan_to_num(c.table[n]["sd"]) for n in ranked],
           capsize=4, color=["tab:blue" if n in c.tasks else "lightgrey" for n in ranked])
    for k, n in enumerate(ranked):
        ax.plot([k] * len(seeds), [c.accuracy[s][n] for s in seeds], "k.", ms=4)
    ax.set_xticks(xs, ranked, rotation=20, ha="right")
    ax.set_ylabel("single-task test accuracy")
    ax.set_title(f"Task difficulty: mean ± sd over {len(seeds)} seed(s), dots: seeds")
    ax.set_ylim(0, 1)
    fig.tight_layout()
    return fig


def acc_matrices(R_mean: dict, orders: dict, strategy: str):
    """``R`` of one strategy under both orders, side by side (rows: trained up to; columns: evaluated on).

    Parameters
    ----------
    R_mean : dict order -> strategy -> ndarray (T, T)
        Averaged over seeds (:func:`clkit.curriculum.analysis.mean_matrices`).
    orders : dict order -> list of dataset names
    strategy : str
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.2))
    for ax, (o, order) in zip(axes, orders.items()):
        matrix_heatmap(R_mean[o][strategy], ax=ax, vmin=0, vmax=1, title=f"{strategy} — {o}",
                       ticklabels=order, annot=len(order) <= 6)
    fig.tight_layout()
    return fig


def gaps(gaps: dict, ref_gap: dict, strategies, *, scenario: str, seeds: int):
    """M2I − I2M per strategy: ACC gap and final-row gap (mean ± sd), the weighting-only gap as a line."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.8))
    xs = np.arange(len(strategies))
    for off, key, label, color in [(-0.2, "ACC", "ACC gap", "tab:blue"),
                                   (0.2, "final_acc", "final-row gap", "tab:orange")]:
        ax.bar(xs + off, [gaps[k][key]["mean"] for k in strategies], width=0.4,
               yerr=[np.nan_to_num(gaps[k][key]["sd"]) for k in strategies], capsize=3, color=color, label=label)
    ax.axhline(ref_gap["mean"], color="k", ls="--", lw=1, label=f"weighting only ({ref_gap['mean']:+.3f})")
    if np.isfinite(ref_gap["sd"]):
        ax.axhspan(ref_gap["mean"] - ref_gap["sd"], ref_gap["mean"] + ref_gap["sd"], color="k", alpha=0.1)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(xs, strategies, rotation=30, ha="right")
    ax.set_ylabel("M2I − I2M")
    ax.set_title(f"Direct minus inverse curriculum ({scenario}-incremental), mean ± sd over {seeds} seed(s)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
