"""Notebook 03's figures: part 1's curves, the A / g heatmaps, SH / DH per period, metrics over time and
the paper's Fig. 3 (ID, OOD and TAS of one learner per period)."""

from __future__ import annotations

import numpy as np

__all__ = ["adaptation_curves", "accuracy_and_ratio_heatmaps", "horizons_per_period", "metrics_over_time",
           "id_ood_tas_trends"]


def adaptation_curves(part1: dict, num_periods: int):
    """ID, OOD and TAS per training period of per-period ERM on each stream, beside the truth.

    ``part1`` is ``{stream: {"true": summary, "erm": summary}}`` of
    :func:`~clkit.temporal.metrics.summarize_learner` summaries (their ``per_period``
    curves). Returns the figure (one panel per stream; dotted: the ground truth).
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(part1), figsize=(11, 3.8), sharey=True, squeeze=False)
    axes = axes[0]
    t = np.arange(num_periods)
    for ax, (name, res) in zip(axes, part1.items()):
        for key, style in (("id", "-o"), ("ood", "-s"), ("tas", "-^")):
            ax.plot(t, res["erm"]["per_period"][key], style, label=f"{key.upper()} (ERM)", ms=4)
            ax.plot(t, res["true"]["per_period"][key], ":", color=ax.lines[-1].get_color(),
                    label=f"{key.upper()} (truth)")
        ax.set_title(name)
        ax.set_xlabel("training period t")
    axes[0].set_ylabel("accuracy / score")
    axes[-1].legend(fontsize=7, ncol=2)
    fig.suptitle("ID, OOD and TAS of per-period ERM on both streams (dotted: ground truth)")
    fig.tight_layout()
    return fig


def accuracy_and_ratio_heatmaps(A, g, delta: float, learner: str):
    """``A(t, tau)`` and the transfer ratio ``g(t, tau)`` side by side, ``g`` diverging at ``delta``.

    The first cell of each row where ``g < delta`` (the first crossing, where the
    Stability Horizon ends) is outlined. Returns the figure.
    """
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.patches import Rectangle

    from ..plot import matrix_heatmap

    A, g = np.asarray(A, dtype=float), np.asarray(g, dtype=float)
    T = len(A)
    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    matrix_heatmap(A, ax=axes[0], cmap="Greens", vmin=0, vmax=1, title=f"A(t, τ) — {learner}",
                   xlabel="test period τ", ylabel="training period t", cbar_label="accuracy")
    norm = TwoSlopeNorm(vmin=0.0, vcenter=min(max(delta, 1e-3), 1 - 1e-3), vmax=1.0)
    matrix_heatmap(g, ax=axes[1], cmap="RdBu", norm=norm, title=f"g(t, τ) — {learner}; white at δ = {delta}",
                   xlabel="test period τ", ylabel="training period t", cbar_label="transfer ratio g")
    for t_row in range(T):
        below = [tau for tau in range(t_row, T) if np.isfinite(g[t_row, tau]) and g[t_row, tau] < delta]
        if below:
            axes[1].add_patch(Rectangle((below[0], t_row), 1, 1, fill=False, lw=1.5, ec="black"))
    fig.tight_layout()
    return fig


def horizons_per_period(rows: dict, learners, *, num_periods: int, horizon: int, delta: float, epsilon: float,
                        lam: float):
    """SH and DH per training period for each learner, beside the steps that exist after ``t``.

    ``rows`` maps learner -> :func:`~clkit.temporal.metrics.summarize_learner` summary;
    ``horizon`` is the effective ``H`` (DH's sentinel is ``H + 1``). Identical curves are
    offset by up to ±0.25 so each stays visible. Returns the figure.
    """
    import matplotlib.pyplot as plt

    T = num_periods
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.6), sharex=True, sharey=True)
    t_idx = np.arange(T - 1)
    for ax, key, title in ((axes[0], "sh", f"Stability Horizon (δ = {delta}, first crossing)"),
                           (axes[1], "dh", f"Drift Horizon (ε = {epsilon}, λ = {lam})")):
        for i, name in enumerate(learners):
            off = 0.25 * (i - (len(learners) - 1) / 2)
            ax.step(t_idx, np.asarray(rows[name]["per_period"][key][:-1]) + off, where="mid",
                    label=name, lw=1.4, ls=("-", "--", "-.", ":")[i % 4])
        ax.plot(t_idx, np.minimum(T - 1 - t_idx, horizon), "k:", lw=1, label="steps available")
        if key == "dh":
            ax.axhline(horizon + 1, color="grey", lw=0.8, ls="--", label=f"sentinel {horizon + 1}")
        ax.set_title(title)
        ax.set_xlabel("training period t")
    axes[0].set_ylabel("periods (curves offset by ±0.25 for visibility)")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def metrics_over_time(rows: dict, learners, num_periods: int, n: int):
    """ID, OOD (next ``n``) and TAS (next ``n``) per training period, one panel each. Returns the figure."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8), sharex=True)
    t = np.arange(num_periods)
    for name in learners:
        for ax, key in zip(axes, ("id", "ood", "tas")):
            ax.plot(t, rows[name]["per_period"][key], "-o", ms=3, label=name)
    for ax, key, ylab in zip(axes, ("ID accuracy", f"OOD accuracy (next {n})", f"TAS (next {n})"),
                             ("accuracy A(t, t)", "mean accuracy on t+1..t+n", "mean g on t+1..t+n")):
        ax.set(title=key, xlabel="training period t", ylabel=ylab)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def id_ood_tas_trends(summary: dict, periods, *, learner: str, dataset: str = "", n: int | None = None):
    """The paper's Fig. 3: ID, OOD and TAS of one learner per training period, in percent, on one axes.

    The paper plots them for MoCo+SML on Yearbook, year by year (1930-2013), to show a large
    ID-OOD gap beside a TAS near 90 %: the drop there is harder data more than a failure to adapt.

    Parameters
    ----------
    summary : dict
        :func:`~clkit.temporal.metrics.summarize_learner` summary of the learner; its
        ``per_period`` lists ``id``, ``ood`` and ``tas`` (fractions; NaN where undefined) are drawn
        times 100.
    periods : sequence
        Period labels, one per training period. Numeric labels (years) are the x values, as in
        the paper; otherwise the x values are the indices 0..T-1 and the axis label names the
        first and last period.
    learner : str
        Named in the title.
    dataset : str, optional
        Named in the title.
    n : int, optional
        Future periods averaged by OOD and TAS (named in the legend).

    Returns
    -------
    matplotlib.figure.Figure
        One axes with three lines, in the order ID, OOD, TAS.

    Examples
    --------
    >>> s = {"per_period": {"id": [0.9, 0.8, 0.7], "ood": [0.6, 0.5, float("nan")],
    ...                     "tas": [0.8, 0.7, float("nan")]}}
    >>> fig = id_ood_tas_trends(s, ["1970", "1971", "1972"], learner="finetune")
    >>> [line.get_label() for line in fig.axes[0].get_lines()], fig.axes[0].get_lines()[0].get_xdata().tolist()
    (['ID', 'OOD', 'TAS'], [1970.0, 1971.0, 1972.0])
    """
    import matplotlib.pyplot as plt

    if not isinstance(summary, dict) or not isinstance(summary.get("per_period"), dict):
        raise ValueError("summary must be a summarize_learner summary with a 'per_period' dict")
    per = summary["per_period"]
    missing = [k for k in ("id", "ood", "tas") if k not in per]
    if missing:
        raise ValueError(f"summary['per_period'] lacks {missing}")
    periods = [str(p) for p in periods]
    T = len(periods)
    for key in ("id", "ood", "tas"):
        if len(per[key]) != T:
            raise ValueError(f"summary['per_period'][{key!r}] has {len(per[key])} values, periods {T}")
    if T < 1:
        raise ValueError("periods must hold at least one period")
    try:
        x = np.array([float(p) for p in periods])
        numeric = True
    except ValueError:
        x, numeric = np.arange(T, dtype=float), False
    fig, ax = plt.subplots(figsize=(8, 3.8))
    more = f" (next {n})" if n else ""
    for key, label, style in (("id", "ID", "-o"), ("ood", "OOD", "-s"), ("tas", "TAS", "-^")):
        ax.plot(x, 100.0 * np.asarray(per[key], dtype=float), style, ms=3, label=label)
    ax.set_xlabel("training period t" if numeric else
                  f"training period t (0 = {periods[0]}, {T - 1} = {periods[-1]})")
    ax.set_ylabel("%")
    ax.set_title(f"ID, OOD{more} and TAS{more} of {learner}" + (f" on {dataset}" if dataset else ""))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
