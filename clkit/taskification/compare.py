"""Comparing task-to-task matrices of taskifications with different numbers of tasks.

The paper (Sec. 5.2, Fig. 2) upsamples the task-to-task Wasserstein matrices of
two taskifications to a common resolution and reports the mean squared error
between them. The resampling method is not stated; we use bilinear interpolation
on cell centres (each matrix is viewed as a piecewise-linear image of the stream
time axis x time axis), written as ``W @ D @ W.T`` with an interpolation matrix ``W``.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_choice, check_int, check_matrix

__all__ = ["interpolation_matrix", "upsample_matrix", "matrix_mse", "matrix_mse_table"]


def interpolation_matrix(size: int, num_tasks: int, method: str = "linear") -> np.ndarray:
    """Weights mapping ``num_tasks`` cells onto ``size`` cells of the same time axis.

    Cell centres are ``(i + 1/2) / n``; ``"linear"`` interpolates between the two
    nearest source centres (constant beyond the outer ones), ``"nearest"`` copies.

    Returns
    -------
    ndarray, shape (size, num_tasks); rows sum to 1

    Examples
    --------
    >>> interpolation_matrix(4, 2).tolist()
    [[1.0, 0.0], [0.75, 0.25], [0.25, 0.75], [0.0, 1.0]]
    """
    size = check_int("size", size, low=1)
    num_tasks = check_int("num_tasks", num_tasks, low=1)
    check_choice("method", method, ["linear", "nearest"])
    pos = (np.arange(size) + 0.5) / size * num_tasks - 0.5          # target centre in source index units
    W = np.zeros((size, num_tasks))
    if method == "nearest" or num_tasks == 1:
        W[np.arange(size), np.clip(np.floor(pos + 0.5), 0, num_tasks - 1).astype(int)] = 1.0
        return W
    pos = np.clip(pos, 0, num_tasks - 1)
    lo = np.minimum(np.floor(pos).astype(int), num_tasks - 2)
    frac = pos - lo
    W[np.arange(size), lo] = 1 - frac
    W[np.arange(size), lo + 1] += frac
    return W


def upsample_matrix(dist, size: int, method: str = "linear") -> np.ndarray:
    """Resample a square matrix of shape (K, K) to (size, size).

    Examples
    --------
    >>> upsample_matrix([[0, 2], [2, 0]], 4).tolist()[1]
    [0.5, 0.75, 1.25, 1.5]
    """
    D = check_matrix("dist", dist, square=True, allow_nan=False)
    W = interpolation_matrix(size, D.shape[0], method)
    return W @ D @ W.T


def matrix_mse(a, b, size: int | None = None, method: str = "linear") -> float:
    """Mean squared error between two task-to-task matrices after upsampling both to ``size``.

    ``size`` defaults to the larger number of tasks.

    Examples
    --------
    >>> matrix_mse([[0, 2], [2, 0]], [[0, 2], [2, 0]], size=8)
    0.0
    >>> matrix_mse(np.zeros((2, 2)), np.ones((3, 3)))
    1.0
    """
    A = check_matrix("a", a, square=True, allow_nan=False)
    B = check_matrix("b", b, square=True, allow_nan=False)
    size = max(A.shape[0], B.shape[0]) if size is None else size
    return float(np.mean((upsample_matrix(A, size, method) - upsample_matrix(B, size, method)) ** 2))


def matrix_mse_table(matrices: dict, size: int | None = None, method: str = "linear") -> np.ndarray:
    """Pairwise :func:`matrix_mse` between named matrices, shape (n, n), in ``matrices`` order.

    Examples
    --------
    >>> matrix_mse_table({"a": np.zeros((2, 2)), "b": np.ones((3, 3))}).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    names = list(matrices)
    size = max(np.shape(m)[0] for m in matrices.values()) if size is None else size
    ups = np.stack([upsample_matrix(matrices[n], size, method) for n in names])
    return ((ups[:, None] - ups[None, :]) ** 2).mean(axis=(2, 3))
