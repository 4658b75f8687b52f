"""Task distributions and the discrepancy ``d`` between them (first-order Wasserstein).

Each task :math:`I_k = [t_{k-1}, t_k)` of a stream ``X`` of shape ``(T, F)``
induces an empirical distribution :math:`P_k`. The discrepancy is

.. math:: d(P_i, P_j) = \\frac{1}{F}\\sum_{f=1}^F W_1(P_i^{(f)}, P_j^{(f)}),

the mean over features of the exact 1-D first-order Wasserstein distance
(``method="exact"``, all pairs at once from the merged quantile levels), or of its quantile form
:math:`W_1 = \\int_0^1 |F_i^{-1}(q) - F_j^{-1}(q)|\\,dq` evaluated on
``num_quantiles`` mid-point levels :math:`q_g = (g + 1/2)/G` (``method="quantile"``,
the default: all tasks' quantiles come from one global sort of every feature, and all
pairs reuse them). With ``G`` equal to the task length of equal-length tasks the
quantile form is exact; otherwise its error is below one quantile step.
``method="sliced"`` replaces the ``F`` features by ``num_projections`` random unit
directions (a sliced W1 that sees dependence between features).

Features are standardised over the analysed span first (``standardize=True``), so
that features in bytes and in ratios weigh alike.

**Automatic switch to exact W1 for short tasks.** The quantile form weighs a task of
``n < G`` values unevenly (each value is read 1-3 times), and when the boundaries move
by a step the reading pattern changes, which BPS -- a mean of small profile changes
-- picks up as structure. We measured the relative BPS error of ``G = 64`` against
exact W1 on six streams (three synthetic CESNET-shaped series, the river occupancy
stream, the recurrence case study, an i.i.d. Student-t stream; ``delta`` = task
length / 6, 20 draws): 6-19 % (max over streams) for tasks of 16-96 steps, 132 % at
``n = 2G = 128`` (the unperturbed split is read exactly, its neighbours are not),
3.6-5.2 % at 192-512 steps, 1.2-1.3 % at 768-1024 steps, and 0.3-2.1 % on the 40-week
synthetic stream at 9/30/44-day tasks (1296-6336 steps, ``delta`` = 1 day). So
``method="quantile"`` and ``"sliced"`` switch to the exact W1 (:meth:`_SortedStream.
exact_distances`, exact for all pairs at once) when the shortest task has fewer than
``exact_below`` steps, by default ``EXACT_BELOW_QUANTILES * G = 8 * G`` (512 for
``G = 64``). On a structureless (shuffled) stream, where BPS is smallest, the
64-quantile error was larger still: 27 % / 222 % / 7 % at 48 / 128 / 384 steps
(``benchmarks/bench_taskification.py``). Below the threshold the exact form costs
10-20x the quantile form (84 tasks of 48 steps, 100 draws: 16 s against 1.1 s on a
loaded 2-core machine), affordable at those lengths; above it the exact form costs
10-80x more (35-47 s per 9-day series and 20 draws) and the quantile error stays at
0.3-3 %, not below 1 % everywhere: use ``method="exact"`` where that matters.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

from .._validate import check_choice, check_int
from .boundaries import Taskification

__all__ = ["check_stream", "prepare_stream", "task_quantiles", "distance_matrix", "random_directions",
           "use_exact", "EXACT_BELOW_QUANTILES"]

#: The quantile form switches to exact W1 when the shortest task has fewer than this many times
#: ``num_quantiles`` steps (see the module docstring for the measurements behind it).
EXACT_BELOW_QUANTILES = 8


def use_exact(taskification: Taskification, method: str = "quantile", num_quantiles: int = 64,
              exact_below: int | None = None) -> bool:
    """Whether ``method`` is computed with exact W1 for ``taskification`` (the automatic switch).

    ``"exact"`` always is; ``"quantile"`` and ``"sliced"`` are when the shortest task has
    fewer than ``exact_below`` steps (default ``EXACT_BELOW_QUANTILES * num_quantiles``;
    ``exact_below=0`` never switches).

    Examples
    --------
    >>> use_exact(Taskification([0, 500, 1000])), use_exact(Taskification([0, 512, 1024]))
    (True, False)
    >>> use_exact(Taskification([0, 500, 1000]), num_quantiles=32), use_exact(Taskification([0, 5, 9]), exact_below=0)
    (False, False)
    """
    check_choice("method", method, ["quantile", "exact", "sliced"])
    num_quantiles = check_int("num_quantiles", num_quantiles, low=1)
    exact_below = (EXACT_BELOW_QUANTILES * num_quantiles if exact_below is None
                   else check_int("exact_below", exact_below, low=0))
    return method == "exact" or int(taskification.lengths.min()) < exact_below


def check_stream(stream, name: str = "stream") -> np.ndarray:
    """Return ``stream`` as a float array of shape (T, F); reject NaN / inf.

    Examples
    --------
    >>> check_stream([1.0, 2.0]).shape
    (2, 1)
    >>> check_stream([1.0, float("nan")])
    Traceback (most recent call last):
    ...
    ValueError: stream contains NaN or inf at step 1 (feature 0); fill or drop missing values first
    """
    x = np.asarray(stream, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} must have shape (T,) or (T, F) with T, F >= 1, got shape {np.shape(stream)}")
    bad = ~np.isfinite(x)
    if bad.any():
        t, f = np.argwhere(bad)[0]
        raise ValueError(f"{name} contains NaN or inf at step {t} (feature {f}); fill or drop missing values first")
    return x


def random_directions(num_features: int, num_projections: int, seed: int = 0) -> np.ndarray:
    """Unit directions for the sliced discrepancy, shape (num_features, num_projections).

    Examples
    --------
    >>> P = random_directions(3, 5, seed=0)
    >>> P.shape, bool(np.allclose((P ** 2).sum(0), 1))
    ((3, 5), True)
    """
    num_features = check_int("num_features", num_features, low=1)
    num_projections = check_int("num_projections", num_projections, low=1)
    g = np.random.default_rng(check_int("seed", seed)).standard_normal((num_features, num_projections))
    return g / np.linalg.norm(g, axis=0, keepdims=True)


def prepare_stream(stream, taskification: Taskification | None = None, *, standardize: bool = True,
                   method: str = "quantile", num_projections: int = 32, seed: int = 0) -> np.ndarray:
    """Validate, standardise (over the analysed span) and, for ``method="sliced"``, project.

    Returns
    -------
    ndarray, shape (T, F) or (T, num_projections)

    Examples
    --------
    >>> x = prepare_stream(np.c_[np.arange(4.0), 10 * np.arange(4.0)])
    >>> bool(np.allclose(x[:, 0], x[:, 1]))
    True
    """
    check_choice("method", method, ["quantile", "exact", "sliced"])
    x = check_stream(stream)
    if taskification is not None and taskification.boundaries[-1] > x.shape[0]:
        raise ValueError(f"taskification ends at step {int(taskification.boundaries[-1])}, beyond the stream "
                         f"length {x.shape[0]}")
    if standardize:
        lo, hi = taskification.span if taskification is not None else (0, x.shape[0])
        mu = x[lo:hi].mean(0)
        sd = x[lo:hi].std(0)
        x = (x - mu) / np.where(sd > 0, sd, 1.0)
    if method == "sliced":
        x = x @ random_directions(x.shape[1], num_projections, seed)
    return x


class _SortedStream:
    """A stream sorted once per feature; task quantiles for any boundaries reuse the sort.

    For new boundaries, every sorted value gets its task label (a gather through
    the stored order), and a stable counting sort (radix sort of small integers)
    groups the values by task while keeping them sorted inside each task.
    """

    def __init__(self, x: np.ndarray):
        xt = np.ascontiguousarray(x.T)                                # (F, T)
        self.length = xt.shape[1]
        self.order = np.argsort(xt, axis=1, kind="stable")           # time index of each rank
        self.values = np.take_along_axis(xt, self.order, axis=1)     # sorted values, (F, T)

    def quantiles(self, boundaries: np.ndarray, num_quantiles: int) -> np.ndarray:
        b = np.asarray(boundaries, dtype=np.int64)
        K = b.size - 1
        dtype = np.int16 if K + 2 < np.iinfo(np.int16).max else np.int32
        # task label of every step (-1 before t_0, K from t_K on), then of every sorted value
        counts = np.concatenate([[b[0]], np.diff(b), [self.length - b[-1]]])
        step_label = np.repeat(np.arange(-1, K + 1, dtype=dtype), counts)
        perm = np.argsort(step_label[self.order], axis=1, kind="stable")   # (F, T), values stay sorted per task
        # group k starts at rank b[k] (all steps before b[k] have a smaller label)
        n = np.diff(b)
        q = (np.arange(num_quantiles) + 0.5) / num_quantiles
        idx = np.ceil(q[None, :] * n[:, None]).astype(np.int64) - 1
        idx = (b[:-1, None] + np.clip(idx, 0, n[:, None] - 1)).ravel()     # (K * G,)
        out = np.take_along_axis(self.values, perm[:, idx], axis=1)          # (F, K * G)
        return out.reshape(-1, K, num_quantiles).transpose(1, 2, 0)          # (K, G, F)

    def exact_distances(self, boundaries: np.ndarray) -> np.ndarray:
        """Exact W1 matrix (mean over features) for the tasks of ``boundaries``.

        Every task's empirical quantile function is constant between consecutive
        levels of ``U``, the union of all ``l / n_k`` (``n_k`` the task lengths), so the
        quantile form on the mid-points of ``U``, weighted by the interval widths, is
        the exact W1 for every pair at once. ``|U| <= sum(n_k)``; it is small when the
        tasks are short (few distinct denominators).
        """
        b = np.asarray(boundaries, dtype=np.int64)
        n = np.diff(b)
        levels = np.unique(np.concatenate([np.arange(1, m + 1) / m for m in np.unique(n)]))
        edges = np.concatenate([[0.0], levels])
        mids, widths = (edges[1:] + edges[:-1]) / 2, np.diff(edges)
        K = n.size
        dtype = np.int16 if K + 2 < np.iinfo(np.int16).max else np.int32
        counts = np.concatenate([[b[0]], n, [self.length - b[-1]]])
        step_label = np.repeat(np.arange(-1, K + 1, dtype=dtype), counts)
        perm = np.argsort(step_label[self.order], axis=1, kind="stable")
        idx = np.ceil(mids[None, :] * n[:, None]).astype(np.int64) - 1
        idx = (b[:-1, None] + np.clip(idx, 0, n[:, None] - 1)).ravel()      # (K * U,)
        Q = np.take_along_axis(self.values, perm[:, idx], axis=1)            # (F, K * U)
        Q = Q.reshape(-1, K, mids.size).transpose(1, 2, 0) * widths[None, :, None]
        return cdist(Q.reshape(K, -1), Q.reshape(K, -1), metric="cityblock") / Q.shape[2]


def task_quantiles(stream, taskification: Taskification, num_quantiles: int = 64) -> np.ndarray:
    """Quantile functions of every task and feature on mid-point levels.

    Parameters
    ----------
    stream : array_like, shape (T,) or (T, F)
    taskification : Taskification
    num_quantiles : int
        Levels ``q_g = (g + 1/2) / G``; each task's lower empirical quantile.

    Returns
    -------
    ndarray, shape (num_tasks, num_quantiles, F)

    Examples
    --------
    >>> Q = task_quantiles([5.0, 1.0, 3.0, 9.0, 7.0, 8.0], Taskification([0, 3, 6]), num_quantiles=3)
    >>> Q[:, :, 0].tolist()
    [[1.0, 3.0, 5.0], [7.0, 8.0, 9.0]]
    """
    x = check_stream(stream)
    num_quantiles = check_int("num_quantiles", num_quantiles, low=1)
    return _SortedStream(x).quantiles(taskification.boundaries, num_quantiles)


def _quantile_distances(Q: np.ndarray) -> np.ndarray:
    K, G, F = Q.shape
    return cdist(Q.reshape(K, G * F), Q.reshape(K, G * F), metric="cityblock") / (G * F)


def distance_matrix(stream, taskification: Taskification, *, method: str = "quantile", num_quantiles: int = 64,
                    num_projections: int = 32, standardize: bool = True, seed: int = 0,
                    exact_below: int | None = None) -> np.ndarray:
    """Task-to-task discrepancy matrix :math:`D_{ij} = d(P_i, P_j)`.

    Parameters
    ----------
    stream : array_like, shape (T,) or (T, F)
    taskification : Taskification
    method : {"quantile", "exact", "sliced"}
        See the module docstring. ``"exact"``: exact W1 for every pair (slow for
        long tasks); ``"sliced"`` projects on ``num_projections`` directions drawn
        with ``seed`` and uses the quantile form.
    num_quantiles : int
    num_projections : int
    standardize : bool
    seed : int
    exact_below : int, optional
        The quantile / sliced forms use exact W1 when the shortest task is shorter
        (default ``8 * num_quantiles``, see :func:`use_exact`).

    Returns
    -------
    ndarray, shape (num_tasks, num_tasks)
        Symmetric, zero diagonal.

    Examples
    --------
    >>> x = np.r_[np.zeros(4), np.ones(4), np.zeros(4)]
    >>> distance_matrix(x, Taskification([0, 4, 8, 12]), standardize=False).tolist()
    [[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    """
    if not isinstance(taskification, Taskification):
        raise TypeError(f"taskification must be a Taskification, got {type(taskification).__name__}")
    x = prepare_stream(stream, taskification, standardize=standardize, method=method,
                       num_projections=num_projections, seed=seed)
    num_quantiles = check_int("num_quantiles", num_quantiles, low=1)
    if use_exact(taskification, method, num_quantiles, exact_below):
        return _SortedStream(x).exact_distances(taskification.boundaries)
    return _quantile_distances(_SortedStream(x).quantiles(taskification.boundaries, num_quantiles))
