"""Figures of notebook 02_edge.

Each function draws one figure from numbers the notebook computed and returns the
``matplotlib`` figure (the notebook saves it with ``RunRecord.figure`` and shows it).
"""

from __future__ import annotations

import numpy as np

__all__ = ["similarity_heatmap", "distributions", "similarity_vs_accuracy", "similarity_sources",
           "encoder_distributions", "bounds_bars"]


def similarity_heatmap(sim, class_names, title: str):
    """The class-similarity matrix as an annotated heatmap."""
    import matplotlib.pyplot as plt

    from ..plot import matrix_heatmap

    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    matrix_heatmap(sim, ax=ax, ticklabels=class_names, xlabel="", ylabel="", cbar_label="cosine similarity",
                   title=title)
    return fig


def distributions(truth: dict, table: dict, values: dict, *, num_bins: int = 10,
                  protocols=(("RS", "tab:blue"), ("EDGE", "tab:red"), ("EDGE-img", "tab:green"))):
    """Per learner: the true accuracy histogram, its Gaussian and each protocol's estimate."""
    import matplotlib.pyplot as plt
    from scipy.stats import norm

    fig, axes = plt.subplots(1, len(truth), figsize=(3.6 * len(truth), 4.4), squeeze=False)
    for ax, (name, acc) in zip(axes[0], truth.items()):
        lo, hi = acc.min(), acc.max()
        pad = max(hi - lo, 1.0) * 0.3
        grid = np.linspace(lo - pad, hi + pad, 300)
        dens, _, _ = ax.hist(acc, bins=num_bins, density=True, color="0.8", edgecolor="0.5",
                             label="truth (all sequences)")
        true_pdf = norm.pdf(grid, acc.mean(), max(acc.std(), 1e-6))
        ax.plot(grid, true_pdf, color="black", lw=1.5, label="truth Gaussian")
        top = max(dens.max(), true_pdf.max())
        for proto, color in protocols:
            row = table[(name, proto)]
            pdf = norm.pdf(grid, row["mean"], max(row["std"], 1e-3))
            top = max(top, pdf.max())
            ax.plot(grid, pdf, color=color, lw=1.5, label=f"{proto} (JSD {row['jsd']:.2f}, W {row['wasserstein']:.2f})")
            ax.plot(values[(name, proto)], np.zeros(len(values[(name, proto)])), "|", color=color, ms=14)
        ax.set_title(name)
        ax.set_xlabel("accuracy A(O) (%)")
        ax.set_ylim(0, 1.08 * top)                     # every peak shown in full
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    axes[0][0].set_ylabel("density")
    fig.tight_layout()
    return fig


def similarity_vs_accuracy(scores, truth: dict, corr: dict):
    """Fig. 2c: accuracy of every sequence against its S(O), one panel per learner."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(truth), figsize=(3.0 * len(truth), 2.8), squeeze=False, sharex=True)
    for ax, (name, acc) in zip(axes[0], truth.items()):
        ax.scatter(scores, acc, s=8, alpha=0.6)
        ax.set_title(f"{name}: R = {corr[name]['r']:.2f}")
        ax.set_xlabel("S(O)")
    axes[0][0].set_ylabel("accuracy A(O) (%)")
    fig.tight_layout()
    return fig


def similarity_sources(summary, rows, null_labels):
    """Per source: R(S, A) per learner and where its hard / easy sequences land."""
    import matplotlib.pyplot as plt
    import pandas as pd

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    order_src = list(summary.index)
    dfr = pd.DataFrame(rows)
    dfr["group"] = ["random (null)" if r in null_labels else r for r in dfr["source"]]
    for i, g in enumerate(order_src):
        vals = dfr[dfr["group"] == g]
        axes[0].scatter(np.full(len(vals), i), vals["r"], s=12, alpha=0.6, color="tab:blue")
        axes[0].plot([i - 0.3, i + 0.3], [vals["r"].mean()] * 2, color="black", lw=2)
        axes[1].scatter(np.full(len(vals), i - 0.1), vals["hard_pct"], s=12, color="tab:red",
                        label="hard" if i == 0 else None)
        axes[1].scatter(np.full(len(vals), i + 0.1), vals["easy_pct"], s=12, color="tab:green",
                        label="easy" if i == 0 else None)
    axes[0].axhline(0, color="0.6", lw=0.8)
    axes[0].set_ylabel("Pearson R(S(O), A(O))")
    axes[0].set_title("Does the score predict accuracy? (bar: mean)")
    axes[1].set_ylabel("accuracy percentile")
    axes[1].set_ylim(-3, 103)
    axes[1].axhline(50, color="0.6", lw=0.8)
    axes[1].set_title("Where the hard / easy sequences land")
    axes[1].legend(fontsize=8)
    for ax in axes:
        ax.set_xticks(range(len(order_src)))
        ax.set_xticklabels(order_src, rotation=30, ha="right", fontsize=8)
    fig.tight_layout()
    return fig


def encoder_distributions(comparison, *, learners=None, num_bins: int = 10):
    """Fig. 4: per encoder a panel with the truth (black), RS's Gaussian (blue) and EDGE's (red).

    Parameters
    ----------
    comparison : clkit.edge.encoders.EncoderComparison
        :func:`~clkit.edge.encoders.encoder_comparison`'s result; one column per encoder that
        loaded (skipped ones have no panel).
    learners : sequence of str, optional
        One row of panels per learner (default every learner of the comparison).
    num_bins : int
        Bins of the truth's histogram (drawn as a black outline).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> from clkit.edge import enumerate_sequences
    >>> from clkit.edge.encoders import encoder_comparison
    >>> seqs = enumerate_sequences(4, 2)
    >>> comp = encoder_comparison(list("abcd"), 2, {"f": 10.0 * seqs[:, 0, 0] + seqs[:, 0, 1]}, seqs,
    ...                           [("no-such-model", "openai")])
    >>> len(encoder_distributions(comp).axes)    # no encoder loaded: one panel saying so
    1
    """
    import matplotlib.pyplot as plt
    from scipy.stats import norm

    learners = list(comparison.learners if learners is None else learners)
    bad = [n for n in learners if n not in comparison.truth]
    if bad or not learners:
        raise ValueError(f"learners must be among {comparison.learners}, got {bad or learners}")
    labels = list(comparison.runs)
    if not labels:
        fig, ax = plt.subplots(figsize=(4.5, 2.5))
        ax.axis("off")
        ax.text(0.5, 0.5, "no encoder loaded:\n" + ("\n".join(comparison.skipped) or "none given"),
                ha="center", va="center", fontsize=8, transform=ax.transAxes)
        return fig
    fig, axes = plt.subplots(len(learners), len(labels), figsize=(3.2 * len(labels), 2.9 * len(learners)),
                             squeeze=False)
    for i, name in enumerate(learners):
        acc = comparison.truth[name]
        lo, hi = float(acc.min()), float(acc.max())
        pad = max(hi - lo, 1.0) * 0.3
        grid = np.linspace(lo - pad, hi + pad, 300)
        rs = comparison.rs["estimates"][name]
        for j, lab in enumerate(labels):
            ax = axes[i][j]
            ax.hist(acc, bins=num_bins, density=True, histtype="step", color="black", lw=1.5, label="truth")
            ed = comparison.runs[lab].estimates[name]
            for est, color, proto in ((rs, "tab:blue", "RS"), (ed, "tab:red", "EDGE")):
                ax.plot(grid, norm.pdf(grid, est["mean"], max(est["std"], 1e-3)), color=color, lw=1.5,
                        label=f"{proto} (JSD {est['jsd']:.2f}, W {est['wasserstein']:.2f})")
            ax.set_title(f"{name}: EDGE with {lab}", fontsize=9)
            ax.set_xlabel("accuracy A(O)")
            ax.legend(fontsize=6, loc="upper right")
        axes[i][0].set_ylabel("density")
    fig.tight_layout()
    return fig


def bounds_bars(results, *, learners=None):
    """Fig. 5: per dataset a panel; per learner min and max bars, EDGE hatched '/', RS dotted '.'.

    Parameters
    ----------
    results : clkit.edge.bounds.ClassicBounds or dict
        One result of :func:`~clkit.edge.bounds.classic_bounds`, or ``{dataset label: result}``
        (one panel each, in order).
    learners : sequence of str, optional
        Bar groups, in order (default each result's learners).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> from clkit.edge.bounds import classic_bounds
    >>> sim = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    >>> res = classic_bounds(list("abcd"), 2, sim, lambda s: {"f": 10.0 * s[:, 0, 0] + s[:, 0, 1]})
    >>> len(bounds_bars({"toy": res, "again": res}).axes)
    2
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    if hasattr(results, "bounds"):
        results = {"": results}
    if not isinstance(results, dict) or not results or not all(hasattr(r, "bounds") for r in results.values()):
        raise TypeError("results must be a ClassicBounds or a non-empty dict {dataset: ClassicBounds}")
    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.4), squeeze=False)
    bars = (("min", "RS", "tab:blue", "."), ("min", "EDGE", "tab:blue", "/"),
            ("max", "RS", "tab:orange", "."), ("max", "EDGE", "tab:orange", "/"))
    width = 0.2
    for ax, (title, res) in zip(axes[0], results.items()):
        names = list(res.learners if learners is None else learners)
        bad = [n for n in names if n not in res.bounds]
        if bad:
            raise ValueError(f"learners must be among {res.learners}, got {bad}")
        x = np.arange(len(names))
        vals = []
        for b, (stat, proto, color, hatch) in enumerate(bars):
            v = [res.bounds[n][proto][stat] for n in names]
            vals += v
            ax.bar(x + (b - 1.5) * width, v, width, color=color, alpha=0.55, hatch=hatch, edgecolor="black",
                   lw=0.6)
        lo, hi = min(vals), max(vals)
        pad = max(hi - lo, 1.0) * 0.25
        ax.set_ylim(lo - pad, hi + pad)        # the gaps are a few points: zoom on them
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
        ax.set_title(title)
        ax.set_ylabel("accuracy A(O)")
    handles = [Patch(facecolor="tab:blue", alpha=0.55, label="min_A"),
               Patch(facecolor="tab:orange", alpha=0.55, label="max_A"),
               Patch(facecolor="white", hatch="/", edgecolor="black", label="EDGE"),
               Patch(facecolor="white", hatch=".", edgecolor="black", label="RS")]
    axes[0][-1].legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig
