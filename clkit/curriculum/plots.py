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

    Bars are the mean paired differences over seeds, error bars their intervals at the level each
    row is decided at (Holm within its family: 95 % alone, higher in a family; the legend gives
    the range). A filled triangle above a bar marks a primary finding, an open one an
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
    ax.set_title(f"Direct minus inverse curriculum ({scenario}-incremental), mean over {n} seeds; intervals at "
                 "each decision's level", fontsize=10)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", fontsize=8, ncol=2)
    return fig
