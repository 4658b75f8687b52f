"""Notebook 04's figures: task difficulty, the accuracy matrices, the M2I − I2M gaps.

Each function returns the figure it draws (the notebook saves it through
:meth:`clkit.results.RunRecord.figure`).
"""

from __future__ import annotations

import numpy as np

from ..plot import matrix_heatmap
from .difficulty import Curriculum
from .verdicts import WEIGHTING, family_of

__all__ = ["difficulty", "acc_matrices", "order_matrices", "gaps"]


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


def order_matrices(R_mean: dict, orders: dict, order: str, strategies, *, title: str = ""):
    """``R`` of every strategy under one order, a panel per strategy: the layout of the paper's Figs. 2-13
    (one figure per backbone, order and scenario; rows: trained up to task ``i``, columns: evaluated on
    task ``j``, averaged over seeds), on one colour scale from 0 to 1 with one colour bar.

    Parameters
    ----------
    R_mean, orders : dict
        As :func:`acc_matrices` takes them.
    order : str
        ``"M2I"`` or ``"I2M"``.
    strategies : list of str
        The panels, in this order.
    title : str
        Above the panels (e.g. the backbone and scenario).

    Examples
    --------
    >>> import numpy as np
    >>> R = {"M2I": {"naive": np.eye(2), "replay": np.full((2, 2), 0.5)}}
    >>> fig = order_matrices(R, {"M2I": ["a", "b"]}, "M2I", ["naive", "replay"], title="t")
    >>> [ax.get_title() for ax in fig.axes[:2]], len(fig.axes)
    (['naive', 'replay'], 3)
    """
    import matplotlib.pyplot as plt

    if order not in orders:
        raise ValueError(f"order must be one of {list(orders)}, got {order!r}")
    names = list(strategies)
    if not names:
        raise ValueError("strategies: no strategy to draw")
    labels = list(orders[order])
    T = len(labels)
    cols = min(len(names), 5)
    rows = -(-len(names) // cols)
    side = 1.0 + 0.45 * T
    fig, axes = plt.subplots(rows, cols, figsize=(side * cols + 1.0, side * rows + 0.6), squeeze=False,
                             layout="constrained")
    image = None
    for ax, name in zip(axes.flat, names):
        M = np.asarray(R_mean[order][name], dtype=float)
        image = ax.imshow(np.ma.masked_invalid(M), vmin=0, vmax=1, cmap="viridis")
        if T <= 8:
            for (i, j), v in np.ndenumerate(M):
                if np.isfinite(v):
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                            color="white" if v < 0.6 else "black")
        ax.set_xticks(range(T), labels, rotation=60, ha="right", fontsize=6)
        ax.set_yticks(range(T), labels, fontsize=6)
        ax.set_title(name, fontsize=9)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.colorbar(image, ax=axes, shrink=0.6, label="accuracy (rows: trained up to; columns: evaluated on)")
    fig.suptitle(f"{title + ' — ' if title else ''}{order}: R per strategy, mean over seeds", fontsize=10)
    return fig


def _levels(vs) -> str:
    """The confidence levels of some rows' intervals, as a range: ``95 %`` or ``95–99.2 %``."""
    from ..stats import _level

    levels = sorted({round(v.ci_level, 6) for v in vs if np.isfinite(v.ci_low)})
    if not levels:
        return "no interval"
    return f"{_level(levels[0])} %" if len(levels) == 1 else f"{_level(levels[0])}–{_level(levels[-1])} %"


def gaps(verdicts, *, scenario: str):
    """M2I − I2M per strategy: the ACC gap and the final-row gap (the order verdict), with the
    interval of each row's decision.

    Bars are the mean paired differences over seeds, error bars their simultaneous intervals
    (:data:`clkit.stats.CI_COLUMN`: 1 − α/m for every row of a family of m, 95 % alone; the legend
    gives the levels). A filled triangle above a bar marks a primary finding, an open one an
    exploratory row that differs (not a finding); the primary strategies are marked
    "(primary)", the oracles "(oracle)"; the weighting-only ACC gap is the dashed line with its
    interval shaded.

    Parameters
    ----------
    verdicts : list of clkit.stats.Verdict
        :func:`clkit.curriculum.verdicts.order_verdicts`.
    scenario : str
    """
    import matplotlib.pyplot as plt

    by = {(family_of(v), v.comparison.split(":")[0]): v for v in verdicts if "M2I − I2M" in v.comparison}
    who = list(dict.fromkeys(w for (f, w) in by if f in ("order", "ACC") and w != WEIGHTING))
    n = max(v.n for v in verdicts)
    fig, ax = plt.subplots(figsize=(8, 4.6), layout="constrained")
    xs = np.arange(len(who))
    for off, fam, label, color in [(-0.2, "ACC", "ACC gap", "tab:blue"),
                                   (0.2, "order", "final-row gap (order verdict)", "tab:orange")]:
        ks = [k for k, w in enumerate(who) if (fam, w) in by]
        vs = [by[(fam, who[k])] for k in ks]
        if not vs:
            continue
        eff = np.array([v.effect for v in vs])
        lo = np.array([v.effect - v.ci_low if np.isfinite(v.ci_low) else 0.0 for v in vs])
        hi = np.array([v.ci_high - v.effect if np.isfinite(v.ci_high) else 0.0 for v in vs])
        ax.bar(xs[ks] + off, eff, width=0.4, yerr=[lo, hi], capsize=3, color=color,
               label=f"{label} (intervals {_levels(vs)})")
        for scope, face, what in (("primary", color, "primary finding"), ("exploratory", "white",
                                                                           "exploratory, differs")):
            sig = [j for j, v in enumerate(vs) if v.significant and v.role == "finding" and v.scope == scope]
            if sig:
                ax.plot(xs[ks][sig] + off, (eff + hi)[sig] + 0.01, "v", color=face, mec=color, mew=1.5, ms=6,
                        ls="", label=f"{label}: {what}")
    ref = by.get(("ACC", WEIGHTING))
    if ref is not None:
        ax.axhline(ref.effect, color="k", ls="--", lw=1,
                   label=f"weighting only ({ref.effect:+.3f}, {_levels([ref])} interval shaded)")
        if np.isfinite(ref.ci_low):
            ax.axhspan(ref.ci_low, ref.ci_high, color="k", alpha=0.1)
    ax.axhline(0, color="grey", lw=0.8)

    def tag(w):
        v = by.get(("order", w)) or by.get(("ACC", w))
        return " (oracle)" if v.role != "finding" else " (primary)" if v.scope == "primary" else ""

    ax.set_xticks(xs, [w + tag(w) for w in who], rotation=30, ha="right")
    ax.set_ylabel("M2I − I2M accuracy")
    ax.set_title(f"Direct minus inverse curriculum ({scenario}-incremental), mean over {n} seeds; simultaneous "
                 "intervals per family", fontsize=10)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", fontsize=8, ncol=2)
    return fig
