"""Figures of the 01_taskification notebook.

Each function draws one figure from numbers the notebook has already computed
(:mod:`clkit.taskification.report`) and returns the ``matplotlib`` figure; the notebook
saves it with ``record.figure``. No function computes a result of its own.
"""

from __future__ import annotations

import numpy as np

from ..plot import matrix_heatmap
from .compare import upsample_matrix

__all__ = ["case_studies", "stream", "wasserstein_matrices", "bps_bars", "cl_vs_baselines",
           "cl_error_matrices"]


def _plt():
    import matplotlib.pyplot as plt

    return plt


def case_studies(cases: dict, reports: dict):
    """Fig. 1: each case-study stream with its near / far boundaries, and the three BPS bars.

    Parameters
    ----------
    cases : dict name -> CaseStudy
    reports : dict name -> {"near", "far", "null"} -> BPSReport
    """
    fig, axes = _plt().subplots(len(cases), 2, figsize=(12, 8), gridspec_kw=dict(width_ratios=[4, 1]),
                                squeeze=False)
    for row, (name, cs) in enumerate(cases.items()):
        ax = axes[row, 0]
        ax.plot(cs.stream, lw=0.5, color="grey")
        for b in cs.near.boundaries:
            ax.axvspan(b - cs.delta, b + cs.delta, color="tab:red", alpha=0.15, lw=0)
            ax.axvline(b, color="tab:red", lw=0.8)
        for b in cs.far.boundaries:
            ax.axvline(b, color="tab:blue", lw=0.8, ls="--")
        ax.set_title(f"{name}: near boundaries (red, shaded $\\pm\\delta$) vs far (blue dashed)")
        ax.set_ylabel("value")
        r = reports[name]
        axes[row, 1].bar(["near", "far", "null"], [r["near"].bps, r["far"].bps, r["null"].bps],
                         color=["tab:red", "tab:blue", "grey"])
        axes[row, 1].set_title("BPS")
        axes[row, 1].set_ylabel("BPS")
    axes[-1, 0].set_xlabel("time step")
    fig.tight_layout()
    return fig


def stream(data, boundaries, steps_per_day: int, split_name: str):
    """Series 0's target over time with one split's boundaries."""
    fig, ax = _plt().subplots(figsize=(12, 3))
    ti = data.target_index
    ax.plot(np.arange(data.length) / steps_per_day, data.values[0, :, ti], lw=0.3)
    for b in boundaries:
        ax.axvline(b / steps_per_day, color="tab:red", lw=0.5)
    ax.set(xlabel="day", ylabel=data.target, title=f"series 0, {data.target}, with the {split_name} boundaries")
    return fig


def wasserstein_matrices(mats: dict, mse_table):
    """Fig. 2: each split's mean task-to-task W1 matrix, and neighbouring splits' upsampled differences."""
    names = list(mats)
    size = max(m.shape[0] for m in mats.values())
    fig, axes = _plt().subplots(2, len(names), figsize=(4.2 * len(names), 8), squeeze=False)
    for c, n in enumerate(names):
        matrix_heatmap(mats[n], ax=axes[0, c], title=f"{n}: W1 between tasks", xlabel="task", ylabel="task",
                       annot=False)
        a, b = names[c], names[(c + 1) % len(names)]
        diff = np.abs(upsample_matrix(mats[a], size) - upsample_matrix(mats[b], size))
        matrix_heatmap(diff, ax=axes[1, c], annot=False, xlabel="", ylabel="",
                       title=f"|{a} - {b}| upsampled, MSE={mse_table.loc[a, b]:.4f}")
    fig.tight_layout()
    return fig


def bps_bars(aligned: dict, shifted: dict, null: dict, offset_days: float):
    """Tables 3-4 as bars: plasticity, stability, BPS and null BPS per split (error bars: sd over series)."""
    names = list(aligned)
    fig, axes = _plt().subplots(1, 2, figsize=(11, 3.5), sharey=True)
    for ax, (title, res) in zip(axes, [("aligned", aligned), (f"shifted {offset_days:g} d", shifted)]):
        x = np.arange(len(names))
        for i, k in enumerate(["plasticity", "stability", "bps"]):
            ax.bar(x + (i - 1.5) * 0.2, [res[n][k] for n in names], 0.2, yerr=[res[n][f"{k}_std"] for n in names],
                   label=k if k != "bps" else "BPS", capsize=2)
        ax.bar(x + 1.5 * 0.2, [null[n]["bps"] for n in names], 0.2, yerr=[null[n]["bps_std"] for n in names],
               color="grey", label="null BPS", capsize=2)
        ax.set_xticks(x, names)
        ax.set_title(title)
    axes[0].legend()
    axes[0].set_ylabel("mean over series")
    return fig


def cl_vs_baselines(cl_mean: dict, cl_sd: dict, baselines: dict, methods, names, labels: dict, cl_seeds: int):
    """Average MSE of every (method, split) beside the two no-learning baselines (log scale).

    Error bars are the sample sd over seeds; with one seed there is no spread and the
    bars are drawn without error bars (never a zero-width bar that reads as "no spread").
    """
    fig, ax = _plt().subplots(figsize=(3.4 + 2.4 * len(names), 3.8))
    bars = [(labels[m], [cl_mean[(m, n)]["avg_mse"] for n in names],
             [cl_sd[(m, n)]["avg_mse"] for n in names] if cl_seeds > 1 else None) for m in methods]
    bars += [("Constant", [baselines[n]["constant_mean"] for n in names], None),
             ("Persistence", [baselines[n]["persistence_mean"] for n in names], None)]
    width = 0.8 / len(bars)
    x = np.arange(len(names))
    for i, (label, vals, err) in enumerate(bars):
        kw = dict(color="grey", hatch="//" if label == "Constant" else "..") if label in ("Constant",
                                                                                          "Persistence") else {}
        if err is not None:
            kw.update(yerr=err, capsize=2)
        ax.bar(x + (i - (len(bars) - 1) / 2) * width, vals, width, label=label, **kw)
    ax.set_yscale("log")
    ax.set_xticks(x, names)
    spread = f"error bars: sd over {cl_seeds} seeds" if cl_seeds > 1 else "one seed: no error bars"
    ax.set(xlabel="taskification", ylabel="average MSE x 1e3 (log)",
           title=f"CL methods vs no-learning baselines ({spread})")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: never over a bar
    fig.tight_layout()
    return fig


def cl_error_matrices(cl: dict, method: str, names, label: str):
    """The error matrix ``M`` (MSE x 1e3) of ``method`` under each split, seed 0."""
    fig, axes = _plt().subplots(1, len(names), figsize=(4.2 * len(names), 3.8), squeeze=False)
    for ax, n in zip(axes[0], names):
        M = cl[(method, n, 0)]["M"]
        matrix_heatmap(M, ax=ax, title=f"{label}, {n}: M (MSE x1e3)", annot=M.shape[0] <= 8)
    fig.tight_layout()
    return fig
