"""Figures of notebook 05_drift: mixing curves, accuracy over the stream, the σ-sweep findings, scatters.

Every function returns the matplotlib Figure (the notebook saves it with
``record.figure``); nothing here trains.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

__all__ = ["STYLE", "PROTOCOL_MARKER", "mixing_curves", "dynamics", "protocol_findings", "method_scatter",
           "advantage_vs_overlap", "time_stream_curves"]

#: line style per method: Bare a thick grey line under the others, each CL method its own style and marker
STYLE = {
    "bare": dict(color="k", ls="-", lw=2.4, alpha=0.5, zorder=1),
    "er": dict(color="C0", ls="-", marker="o"),
    "agem": dict(color="C1", ls="--", marker="s"),
    "gss": dict(color="C2", ls="-.", marker="^"),
    "mas_star": dict(color="C3", ls=":", marker="v", lw=1.8),
    "ssm": dict(color="C4", ls="--", marker="D"),
    "sem": dict(color="C5", ls="-.", marker="P"),
    "dmsg": dict(color="C6", ls=":", marker="X"),
}
#: marker per protocol
PROTOCOL_MARKER = {"text": "o", "authors": "s"}


def mixing_curves(streams: dict, configs_main, seed: int, grid_sigma, overlap_curve, entropy_curve,
                  sweep_overlap: dict, tau: float, protocol: str):
    """alpha_k(t) of the four main settings, and overlap index / mixing entropy against σ."""
    fig, axes = plt.subplots(2, 3, figsize=(11, 6.2))
    axes = axes.ravel()
    for ax, cfg in zip(axes[:4], configs_main):
        w = streams[(cfg, seed)].weights
        for k in range(w.shape[1]):
            ax.plot(np.arange(len(w)), w[:, k], lw=1.2, label=f"task {k}")
        ax.set(title=cfg.label(), xlabel="batch t", ylabel=r"$\alpha_k(t)$", ylim=(0, 1.05))
    axes[4].semilogx(grid_sigma, overlap_curve, label=rf"overlap $\mathcal{{O}}$ ($\tau$={tau:g})")
    axes[4].semilogx(grid_sigma, entropy_curve, label="mixing entropy / log K")
    axes[4].scatter(list(sweep_overlap), list(sweep_overlap.values()), color="k", zorder=3, label="σ sweep")
    axes[4].set(xlabel="σ (batches)", title="overlap grows with σ")
    axes[4].legend(fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    axes[5].axis("off")
    if len(handles) <= 12:
        axes[5].legend(handles, labels, loc="center", title="latent task", fontsize=9)
    fig.suptitle(f"mixing curves ({protocol} protocol, seed {seed})")
    fig.tight_layout()
    return fig


def dynamics(runs: dict, stats_by: dict, cfg, methods, seed: int):
    """Mean accuracy over the stream, one panel per protocol; Joint as a dashed line."""
    protocols = list(runs)
    online = [m for m in methods if m != "joint"]
    fig, axes = plt.subplots(1, len(protocols), figsize=(5.5 * len(protocols), 3.8), squeeze=False)
    for ax, pr in zip(axes[0], protocols):
        for m in online:
            when, acc = runs[pr][1][(cfg, m, seed)]
            ax.plot(when, np.nanmean(acc, axis=1), label=m, markersize=4, markevery=max(1, len(when) // 8),
                    **STYLE.get(m, {}))
        if "joint" in methods:
            ax.axhline(stats_by[pr][0].loc[(cfg.label(), "joint"), "AA"], color="k", ls="--", lw=1, label="joint")
        ax.set(xlabel="batches seen", ylabel=r"$\bar A(t)$ (mean over tasks)", ylim=(0, 1),
               title=f"{pr} protocol: {cfg.label()}")
    axes[0][-1].legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def protocol_findings(series: dict, protocols, sigmas, cl: str | None):
    """The σ sweep's three findings, one panel each, one error-bar line per protocol (± std over seeds).

    ``sigmas``: the sweep, or ``{protocol: sweep}`` when σ was solved per protocol.
    """
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    per_protocol = isinstance(sigmas, dict) and len({tuple(sigmas[pr]) for pr in protocols}) > 1
    for pr in protocols:
        for ax, key in zip(axes, ("bare", "forget", "adv")):
            if (pr, key) in series:
                m, s, *ov = series[(pr, key)]
                x = ov[0] if ov else list(m.index)
                ax.errorbar(x, 100 * m, yerr=100 * s, marker=PROTOCOL_MARKER[pr], capsize=3, label=pr)
    axes[0].set(xscale="log", xlabel="σ (batches)", ylabel=r"Bare $A_{AUC}$ (%)", title="(1) implicit rehearsal")
    axes[1].set(xscale="log", xlabel="σ (batches)", ylabel=rf"{cl or ''} $AF_s$ (%)", title="(2) forgetting vs σ")
    axes[2].axhline(0, color="k", lw=0.8)
    axes[2].set(xlabel=r"overlap index $\mathcal{O}$", ylabel=f"{cl or 'CL'} − Bare, $A_{{AUC}}$ (points)",
                title="(3) CL advantage vs overlap")
    for ax in axes[:2]:  # plain numbers, no crowded log-scale labels
        if not per_protocol:  # one sweep: ticks at the swept sigmas
            ax.set_xticks(sigmas[protocols[0]] if isinstance(sigmas, dict) else sigmas)
        else:  # sweeps solved per protocol: round ticks 1, 2, 3, 5, 10, 20, ...
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
        ax.xaxis.set_major_formatter(FormatStrFormatter("%.3g"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    for ax in axes:
        ax.legend(title="protocol", fontsize=8)
    fig.tight_layout()
    return fig


def method_scatter(x, y, labels, styles, *, xlabel: str, ylabel: str, title: str, diagonal: bool = False,
                   zero_line: bool = False, figsize=(6.5, 4.5)):
    """One marker per point, told apart by colour and marker (legend at the right), not by text labels.

    ``styles[i]`` holds ``color`` and ``marker`` of point i; ``diagonal`` draws y = x,
    ``zero_line`` the line y = 0.
    """
    fig, ax = plt.subplots(figsize=figsize)
    for a, b, lab, st in zip(x, y, labels, styles):
        ax.scatter(a, b, color=st.get("color"), marker=st.get("marker", "o"), s=60, alpha=0.8, label=lab)
    if diagonal:
        lo, hi = min(list(x) + list(y)) - 2, max(list(x) + list(y)) + 2
        ax.plot([lo, hi], [lo, hi], "k--", lw=1)
    if zero_line:
        ax.axhline(0, color="k", lw=0.8)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def advantage_vs_overlap(adv, configs_main):
    """Best CL − Bare in A_AUC against each main configuration's overlap; colour: setting, marker: protocol."""
    colors = {c.setting: f"C{i}" for i, c in enumerate(configs_main)}
    groups = list(adv.groupby(["protocol", "setting"], sort=False))
    xs, ys, labels, styles = [], [], [], []
    for (pr, st), g in groups:
        xs.append(g["overlap"])
        ys.append(100 * g["advantage_A_AUC"])
        labels.append(f"{st} ({pr})")
        styles.append({"color": colors[st], "marker": PROTOCOL_MARKER[pr]})
    return method_scatter(xs, ys, labels, styles, xlabel=r"overlap index $\mathcal{O}$",
                          ylabel=r"best CL − Bare, $A_{AUC}$ (points)", title="CL advantage vs overlap",
                          zero_line=True, figsize=(7.5, 4))


def time_stream_curves(curves: dict, seed: int, *, dataset: str = "ogbn-arxiv"):
    """Mean accuracy over the year bins along the time-ordered stream, one line per method (seed ``seed``).

    ``curves`` is :func:`clkit.drift.experiment.run_time_stream`'s ``{(protocol, method, seed): (when, acc)}``
    with ``acc`` of shape (evaluations, year bins); line styles differ so coinciding curves stay visible.

    Examples
    --------
    >>> c = {("text", "bare", 0): (np.array([10, 20]), np.array([[0.5, 0.0], [0.4, 0.6]]))}
    >>> time_stream_curves(c, 0).axes[0].get_ylabel()
    'mean accuracy over year bins (%)'
    """
    fig, ax = plt.subplots(figsize=(7, 3.5))
    mine = [(k[1], v) for k, v in curves.items() if k[2] == seed]
    for i, (m, (when, acc)) in enumerate(mine):
        ax.plot(when, 100 * np.nanmean(acc, axis=1), label=m, ls=["-", "--", ":", "-."][i % 4],
                marker="osD^v<>"[i % 7], markevery=max(1, len(when) // 8))
    ax.set(xlabel="batches", ylabel="mean accuracy over year bins (%)",
           title=f"{dataset} in publication order (seed {seed})")
    ax.legend()
    return fig
