"""DRIFT's mixing schedule: latent tasks, task centres, Gaussian weights, batch counts.

Time is indexed by mini-batch: batch ``t`` (``t = 0 .. T-1``) covers the interval
``[t, t + 1)`` of the stream and is evaluated at its midpoint ``t + 1/2``. With
this convention a task whose batches are ``[s_k, s_k + B_k)`` has its centre
exactly at Eq. 9's :math:`\\mu_k = \\sum_{i<k} B_i + B_k / 2`.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_int, check_real

__all__ = [
    "latent_tasks",
    "task_centers",
    "gaussian_weights",
    "hard_weights",
    "largest_remainder",
    "overlap_index",
    "mixing_entropy",
    "DEFAULT_TAU",
    "AUTHORS_TAU",
    "SCHEDULE_AT",
    "authors_gaussian_weights",
    "authors_largest_remainder",
    "authors_overlap_index",
    "mixing_schedule",
]

#: Default dominance threshold of the overlap index (Eq. 6). The paper does not
#: state its tau; the authors' code uses 0.9 (``gaussian_utils.overlap_index``), so
#: both protocols use it. (An earlier calibration, 0.98, assumed all of CoraFull's
#: nodes are streamed; only the training nodes are.)
DEFAULT_TAU = 0.9
#: dominance threshold of the overlap index in the authors' code (``gaussian_utils.overlap_index``)
AUTHORS_TAU = 0.9
#: where each protocol evaluates the Gaussian kernel of batch t (:mod:`clkit.drift.protocol`)
SCHEDULE_AT = {"text": "midpoint", "authors": "integer"}


def latent_tasks(y, classes_per_task: int = 2, class_order=None, drop_remainder: bool = False):
    """Group classes into latent tasks, ``classes_per_task`` at a time, in label order.

    Parameters
    ----------
    y : array_like of int, shape (N,)
        Class labels ``0 .. num_classes - 1`` (negative labels = unlabelled, ignored).
    classes_per_task : int
        Classes per latent task (DRIFT: 2).
    class_order : sequence of int, optional
        Order of the classes (default: ascending label order, as in the paper).
    drop_remainder : bool
        When ``num_classes`` is not a multiple of ``classes_per_task``: ``False``
        raises ``ValueError``; ``True`` drops the last ``num_classes % classes_per_task``
        classes (in ``class_order``) from the stream.

    Returns
    -------
    task_of_class : ndarray of int, shape (num_classes,)
        Latent task of each class (-1 for a dropped class).
    task_classes : list of tuple of int
        The classes of each latent task.

    Examples
    --------
    >>> toc, tc = latent_tasks([0, 1, 2, 3, 3, 2])
    >>> toc.tolist(), tc
    ([0, 0, 1, 1], [(0, 1), (2, 3)])
    >>> latent_tasks([0, 1, 2], classes_per_task=2)
    Traceback (most recent call last):
    ...
    ValueError: classes_per_task=2 does not divide num_classes=3 (remainder 1 class(es)); pass drop_remainder=True to drop them
    """
    y = np.asarray(y)
    classes_per_task = check_int("classes_per_task", classes_per_task, low=1)
    labelled = y[y >= 0]
    num_classes = int(labelled.max()) + 1 if labelled.size else 0
    order = np.arange(num_classes) if class_order is None else np.asarray(class_order, dtype=int)
    if sorted(order.tolist()) != list(range(num_classes)):
        raise ValueError(f"class_order must be a permutation of 0..{num_classes - 1}, got {order.tolist()}")
    rem = num_classes % classes_per_task
    if rem and not drop_remainder:
        raise ValueError(f"classes_per_task={classes_per_task} does not divide num_classes={num_classes} "
                         f"(remainder {rem} class(es)); pass drop_remainder=True to drop them")
    kept = order[: num_classes - rem]
    if kept.size == 0:
        raise ValueError(f"classes_per_task={classes_per_task} leaves no latent task for num_classes={num_classes}")
    task_of_class = np.full(num_classes, -1, dtype=np.int64)
    task_of_class[kept] = np.arange(kept.size) // classes_per_task
    task_classes = [tuple(int(c) for c in kept[i:i + classes_per_task]) for i in range(0, kept.size, classes_per_task)]
    return task_of_class, task_classes


def task_centers(task_sizes, batch_size: int):
    """Task centres on the batch axis (Eq. 9), batch counts and stream length.

    :math:`B_k = \\lceil N_k / B \\rceil`, :math:`\\mu_k = \\sum_{i<k} B_i + B_k / 2`,
    :math:`T = \\sum_k B_k`.

    Parameters
    ----------
    task_sizes : array_like of int, shape (num_tasks,)
        :math:`N_k`, nodes in each latent task (at least 1 each).
    batch_size : int
        :math:`B`.

    Returns
    -------
    centers : ndarray of float, shape (num_tasks,)
    batch_counts : ndarray of int, shape (num_tasks,)
    total_batches : int

    Examples
    --------
    >>> mu, bk, T = task_centers([20, 25, 10], batch_size=10)
    >>> mu.tolist(), bk.tolist(), T
    ([1.0, 3.5, 5.5], [2, 3, 1], 6)
    """
    batch_size = check_int("batch_size", batch_size, low=1)
    sizes = np.asarray(task_sizes)
    if sizes.ndim != 1 or sizes.size == 0 or not np.issubdtype(sizes.dtype, np.integer) or (sizes < 1).any():
        raise ValueError(f"task_sizes must be a non-empty 1-D array of integers >= 1, got {sizes.tolist()!r}")
    counts = -(-sizes.astype(np.int64) // batch_size)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return starts + counts / 2.0, counts, int(counts.sum())


def gaussian_weights(centers, total_batches: int, sigma: float) -> np.ndarray:
    """Softmax-normalised Gaussian mixing weights :math:`\\alpha_k(t)` (Eq. 10).

    :math:`\\alpha_k(t) = \\exp(-(t-\\mu_k)^2 / 2\\sigma^2) / \\sum_j \\exp(-(t-\\mu_j)^2/2\\sigma^2)`,
    evaluated at batch midpoints ``t + 1/2`` and computed in log space, so a tiny
    ``sigma`` gives one-hot rows instead of 0/0.

    Parameters
    ----------
    centers : array_like, shape (num_tasks,)
    total_batches : int
        :math:`T`.
    sigma : float
        Width in batches, finite and > 0.

    Returns
    -------
    ndarray, shape (total_batches, num_tasks); rows sum to 1.

    Examples
    --------
    >>> w = gaussian_weights([1.0, 3.0], 4, sigma=1.0)
    >>> w.shape, np.allclose(w.sum(1), 1), bool(w[0, 0] > w[0, 1])
    ((4, 2), True, True)
    """
    sigma = check_real("sigma", sigma, low=0, low_open=True)
    total_batches = check_int("total_batches", total_batches, low=1)
    mu = np.asarray(centers, dtype=float)
    t = np.arange(total_batches, dtype=float)[:, None] + 0.5
    logits = -((t - mu[None, :]) ** 2) / (2.0 * sigma * sigma)
    logits -= logits.max(axis=1, keepdims=True)
    w = np.exp(logits)
    return w / w.sum(axis=1, keepdims=True)


def hard_weights(batch_counts) -> np.ndarray:
    """One-hot weights of the hard-transition schedule (Eq. 11, the sigma -> 0 limit).

    Task k owns the batches ``[sum_{i<k} B_i, sum_{i<=k} B_i)``.

    Examples
    --------
    >>> hard_weights([2, 1]).tolist()
    [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]
    """
    counts = np.asarray(batch_counts, dtype=np.int64)
    owner = np.repeat(np.arange(counts.size), counts)
    return np.eye(counts.size)[owner]


def largest_remainder(weights, batch_size: int) -> np.ndarray:
    """Integer batch composition :math:`n_k(t)` by largest-remainder rounding (Eq. 5).

    :math:`n_k(t) = \\lfloor \\alpha_k(t) B \\rfloor`, then the ``B - sum_k n_k(t)``
    left-over slots go to the tasks with the largest fractional parts (ties: lower
    task index first). Every row sums to ``batch_size``.

    Parameters
    ----------
    weights : array_like, shape (T, num_tasks)
        Rows of non-negative weights summing to 1.
    batch_size : int

    Returns
    -------
    ndarray of int64, shape (T, num_tasks)

    Examples
    --------
    >>> largest_remainder([[0.45, 0.35, 0.2]], 10).tolist()
    [[5, 3, 2]]
    >>> largest_remainder([[0.26, 0.37, 0.37]], 4).tolist()
    [[1, 2, 1]]
    """
    batch_size = check_int("batch_size", batch_size, low=1)
    w = np.asarray(weights, dtype=float)
    if w.ndim != 2 or (w < 0).any() or not np.allclose(w.sum(axis=1), 1.0, atol=1e-6):
        raise ValueError("weights must be a 2-D array of non-negative rows summing to 1")
    scaled = w * batch_size
    counts = np.floor(scaled + 1e-9).astype(np.int64)
    left = batch_size - counts.sum(axis=1)
    frac = scaled - counts
    order = np.argsort(-frac, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(w.shape[1])[None, :].repeat(w.shape[0], 0), axis=1)
    return counts + (rank < left[:, None])


def overlap_index(weights, tau: float = DEFAULT_TAU) -> float:
    """Overlap index (Eq. 6): fraction of batches where no task dominates.

    :math:`\\mathcal O = \\frac1T \\sum_t \\mathbb 1(\\max_k \\alpha_k(t) < \\tau)`.

    Parameters
    ----------
    weights : array_like, shape (T, num_tasks)
    tau : float in (0, 1]
        Dominance threshold (default :data:`DEFAULT_TAU` = 0.9, the authors' value).

    Examples
    --------
    >>> overlap_index([[1.0, 0.0], [0.6, 0.4], [0.5, 0.5], [0.0, 1.0]], tau=0.9)
    0.5
    """
    tau = check_real("tau", tau, low=0, high=1, low_open=True)
    w = np.asarray(weights, dtype=float)
    return float(np.mean(w.max(axis=1) < tau))


def mixing_entropy(weights) -> float:
    """Mean normalised mixing entropy :math:`\\frac1T\\sum_t H(\\alpha(t)) / \\log K` in [0, 1].

    0 for a task-pure stream, 1 when every batch is a uniform mixture of all K tasks.

    Examples
    --------
    >>> mixing_entropy([[1.0, 0.0], [0.5, 0.5]])
    0.5
    """
    w = np.asarray(weights, dtype=float)
    if w.shape[1] < 2:
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(w > 0, w * np.log(w), 0.0).sum(axis=1)
    return float(np.mean(h) / math.log(w.shape[1]))


# ------------------------------------------------------------------ the authors' arithmetic
def authors_gaussian_weights(centers, total_batches: int, sigma: float) -> np.ndarray:
    """Gaussian mixing weights at integer batch index ``t``, in the authors' arithmetic.

    ``log w = -0.5 ((t - mu) / sigma)^2``, minus its row maximum, exponentiated and
    normalised -- the same floating-point operations as their ``gaussian_task_weights``,
    so the rounding to batch counts agrees exactly.

    Examples
    --------
    >>> authors_gaussian_weights([0.5, 1.5], 2, 1.0).round(3).tolist()
    [[0.731, 0.269], [0.5, 0.5]]
    """
    sigma = check_real("sigma", sigma, low=0, low_open=True)
    total_batches = check_int("total_batches", total_batches, low=1)
    mu = np.asarray(centers, dtype=np.float64)
    t = np.arange(total_batches, dtype=np.int64)[:, None]
    log_w = -0.5 * ((t - mu[None, :]) / sigma) ** 2
    log_w = log_w - log_w.max(axis=1, keepdims=True)
    w = np.exp(log_w)
    return w / w.sum(axis=1, keepdims=True)


def authors_largest_remainder(weights, batch_size: int) -> np.ndarray:
    """Batch counts by largest remainder with the authors' tie rule.

    ``floor(w B)``, then the left-over slots go to the largest fractional parts,
    ties broken as ``np.argsort(frac)[::-1]`` does (the later task first).

    Examples
    --------
    >>> authors_largest_remainder([[0.25, 0.25, 0.5]], 2).tolist()
    [[0, 1, 1]]
    """
    batch_size = check_int("batch_size", batch_size, low=1)
    w = np.asarray(weights, dtype=np.float64)
    raw = w * batch_size
    counts = np.floor(raw).astype(np.int64)
    left = batch_size - counts.sum(axis=1)
    out = counts.copy()
    for i in range(w.shape[0]):  # one argsort per row, exactly as the authors' code
        if left[i] > 0:
            out[i, np.argsort(raw[i] - counts[i])[::-1][: left[i]]] += 1
    return out


def authors_overlap_index(weights, tau: float = AUTHORS_TAU) -> float:
    """Fraction of batches where no task has weight >= ``tau`` (0.9 in the authors' code)."""
    w = np.asarray(weights, dtype=float)
    return float(np.mean(w.max(axis=1) < tau))


def mixing_schedule(task_sizes, batch_size: int, sigma: float, at: str = "midpoint"):
    """Weights and batch counts of the Gaussian schedule, evaluated at batch midpoints or integers.

    ``at="midpoint"`` (the paper's text): :func:`gaussian_weights` and
    :func:`largest_remainder`; ``at="integer"`` (the authors' code):
    :func:`authors_gaussian_weights` and :func:`authors_largest_remainder`.

    Returns
    -------
    weights : ndarray, shape (T, K)
    counts : ndarray of int64, shape (T, K)

    Examples
    --------
    >>> w, c = mixing_schedule([20, 20], 10, 1.0, "integer")
    >>> c.tolist()
    [[10, 0], [9, 1], [5, 5], [1, 9]]
    """
    if at not in ("midpoint", "integer"):
        raise ValueError(f"at must be one of ['midpoint', 'integer'], got {at!r}")
    mu, _, T = task_centers(np.asarray(task_sizes), batch_size)
    if at == "integer":
        w = authors_gaussian_weights(mu, T, sigma)
        return w, authors_largest_remainder(w, batch_size)
    w = gaussian_weights(mu, T, sigma)
    return w, largest_remainder(w, batch_size)
