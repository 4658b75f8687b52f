"""Notebook 04's figures: task difficulty, the accuracy matrices, the M2I − I2M gaps.

Each function returns the figure it draws (the notebook saves it through
:meth:`clkit.results.RunRecord.figure`).
"""

from __future__ import annotations

import numpy as np

from ..plot import matrix_heatmap
from .difficulty import Curriculum
from .verdicts import WEIGHTING, family_of

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


def gaps(verdicts, *, scenario: str):
    """M2I − I2M per strategy with 95 % CIs: the ACC gap and the final-row gap (the order verdict).

    Bars are the mean paired differences over seeds, error bars their confidence
    intervals (:mod:`clkit.stats`); a triangle above a bar marks a significant
    difference (Holm), controls are marked "(control)", the weighting-only ACC gap is the
    dashed line with its interval shaded.

    Parameters
    ----------
    verdicts : list of clkit.stats.Verdict
        :func:`clkit.curriculum.verdicts.order_verdicts`.
    scenario : str
    """
    import matplotlib.pyplot as plt

    by = {(family_of(v), v.comparison.split(":")[0]): v for v in verdicts}
    who = [w for (f, w) in by if f == "order" and w != WEIGHTING]
    n = max(v.n for v in verdicts)
    fig, ax = plt.subplots(figsize=(8, 4.4), layout="constrained")
    xs = np.arange(len(who))
    for off, fam, label, color in [(-0.2, "ACC", "ACC gap", "tab:blue"),
                                   (0.2, "order", "final-row gap (order verdict)", "tab:orange")]:
        vs = [by[(fam, w)] for w in who]
        eff = np.array([v.effect for v in vs])
        lo = np.array([v.effect - v.ci_low if np.isfinite(v.ci_low) else 0.0 for v in vs])
        hi = np.array([v.ci_high - v.effect if np.isfinite(v.ci_high) else 0.0 for v in vs])
        ax.bar(xs + off, eff, width=0.4, yerr=[lo, hi], capsize=3, color=color, label=label)
        sig = [k for k, v in enumerate(vs) if v.significant and v.role == "finding"]
        if sig:
            ax.plot(xs[sig] + off, (eff + hi)[sig] + 0.01, "v", color=color, mec="k", ms=6, ls="",
                    label=f"{label}: significant (Holm)")
    ref = by.get(("ACC", WEIGHTING))
    if ref is not None:
        ax.axhline(ref.effect, color="k", ls="--", lw=1, label=f"weighting only ({ref.effect:+.3f})")
        if np.isfinite(ref.ci_low):
            ax.axhspan(ref.ci_low, ref.ci_high, color="k", alpha=0.1)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(xs, [w + (" (control)" if by[("order", w)].role != "finding" else "") for w in who],
                  rotation=30, ha="right")
    ax.set_ylabel("M2I − I2M accuracy")
    ax.set_title(f"Direct minus inverse curriculum ({scenario}-incremental), mean and 95 % CI over {n} seeds",
                 fontsize=10)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", fontsize=8, ncol=2)
    return fig
