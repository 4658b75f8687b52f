"""Plot helpers shared by the notebooks.

Every helper takes ``ax=`` (created when ``None``) and returns it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ._io import atomic_save, work_dir

__all__ = ["save_figure", "figures_dir", "matrix_heatmap", "new_axes"]


def new_axes(ax=None, figsize=(5, 4)):
    """Return ``ax`` or a fresh one from a new figure."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize)
    return ax


def figures_dir(notebook: str) -> Path:
    """Folder for the figures of ``notebook``.

    ``$CLKIT_FIGURES_DIR`` when set (``clkit run`` sets it), else
    ``<work>/figures/<notebook>/`` with ``<work>`` the folder the user works in
    (:func:`clkit._io.work_dir`), never the installed package.
    """
    env = os.environ.get("CLKIT_FIGURES_DIR")
    return Path(env) if env else work_dir() / "figures" / notebook


def save_figure(fig, name: str, notebook: str | None = None, folder=None, dpi: int = 120) -> Path:
    """Save ``fig`` as PNG atomically and return the path.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    name : str
        File stem (``.png`` is added).
    notebook : str, optional
        Notebook stem; the folder is then :func:`figures_dir`.
    folder : path-like, optional
        Explicit folder (overrides ``notebook``).
    """
    if folder is None:
        if notebook is None:
            raise ValueError("save_figure needs notebook= or folder=")
        folder = figures_dir(notebook)
    path = Path(folder) / f"{name}.png"
    # PNG without timestamps in metadata, so reruns give identical files
    return atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=dpi, bbox_inches="tight", format="png",
                                                    metadata={"Software": None}))


def matrix_heatmap(M, ax=None, *, title=None, center=None, cmap="viridis", vmin=None, vmax=None,
                   annot=None, fmt=".2f", xlabel="evaluated on", ylabel="trained up to",
                   nan_color="lightgrey", cbar_label=None, ticklabels=None, norm=None):
    """Heatmap of a matrix with NaN cells shown in ``nan_color``.

    Parameters
    ----------
    M : array_like, shape (n_rows, n_cols)
    center : float, optional
        Value at the centre of a diverging colormap.
    annot : bool, optional
        Write values in cells (default: when the matrix is at most 12 x 12).
    norm : matplotlib.colors.Normalize, optional
        Colour normalisation (e.g. ``TwoSlopeNorm(vcenter=delta, vmin=0, vmax=1)``
        for a diverging map whose ends are both saturated); overrides ``center``.
    """
    import matplotlib as mpl
    import seaborn as sns

    M = np.asarray(M, dtype=float)
    ax = new_axes(ax)
    if annot is None:
        annot = max(M.shape) <= 12
    cm = (mpl.colormaps[cmap] if isinstance(cmap, str) else cmap).with_extremes(bad=nan_color)   # a copy
    kws = {}
    if ticklabels is not None:
        kws = dict(xticklabels=ticklabels, yticklabels=ticklabels)
    if norm is not None:
        kws["norm"] = norm
        center = vmin = vmax = None
    sns.heatmap(M, ax=ax, cmap=cm, center=center, vmin=vmin, vmax=vmax, annot=annot, fmt=fmt,
                mask=None, square=M.shape[0] == M.shape[1], cbar_kws={"label": cbar_label} if cbar_label else None,
                annot_kws={"fontsize": 7}, **kws)
    ax.set_facecolor(nan_color)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return ax
