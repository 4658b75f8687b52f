"""Figures of notebook 02_edge.

Each function draws one figure from numbers the notebook computed and returns the
``matplotlib`` figure (the notebook saves it with ``RunRecord.figure`` and shows it).
"""

from __future__ import annotations

import numpy as np

__all__ = ["similarity_heatmap", "distributions", "similarity_vs_accuracy", "similarity_sources"]


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
