"""DRIFT stream builders: Gaussian, hard, boundary-local and global mixing.

A stream is a fixed sequence of mini-batches of training-node indices, built
from per-task node pools. Builders are vectorised over batches: the only Python
loops run over latent tasks (to shuffle each task's queue) or boundaries.

Sampling (Sect. 4.4 / App. A.3):

- ``"without"`` -- each latent task keeps its own shuffled queue, drawn in order
  and reshuffled (an independent permutation) each time it is exhausted;
- ``"with"`` -- samples drawn independently and uniformly with replacement.

Finally the samples of every batch are shuffled within the batch.

A time-evolving stream (:func:`time_stream`, the notebook's ``setting="arxiv_time"``) has
no mixing curve: nodes arrive in publication order (shuffled within a year by the stream
seed) and its latent tasks are consecutive year ranges (:func:`year_bins`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validate import check_choice, check_int, check_real
from .schedule import SCHEDULE_AT, hard_weights, mixing_schedule, task_centers

__all__ = [
    "Stream",
    "SETTINGS",
    "SAMPLINGS",
    "fill_counts",
    "gaussian_stream",
    "hard_stream",
    "boundary_local_stream",
    "global_stream",
    "authors_boundary_local_stream",
    "authors_global_stream",
    "TIME_SETTING",
    "year_bins",
    "time_stream",
]

#: the time-evolving stream's setting name (ogbn-arxiv's publication years; :func:`time_stream`)
TIME_SETTING = "arxiv_time"

SETTINGS = ["hard", "gaussian", "boundary_local", "global"]
SAMPLINGS = ["without", "with"]


@dataclass
class Stream:
    """A task-free stream of node-index mini-batches.

    Attributes
    ----------
    batches : ndarray of int64, shape (T, B)
        Node indices of each batch (already shuffled within the batch); -1 pads a
        partial batch (the authors' hard setting, :func:`hard_stream`).
    counts : ndarray of int64, shape (T, num_tasks)
        Realised composition: samples of latent task k in batch t (rows sum to B, or
        to a partial batch's size).
    weights : ndarray of float, shape (T, num_tasks)
        The mixing curve :math:`\\alpha_k(t)` the stream was drawn from.
    setting : str
    meta : dict
        Construction parameters (sigma, p, k_bl, sampling, seed, ...).
    segment : ndarray of int64, shape (T,), or None
        The authors' loop only (:func:`hard_stream` with ``partial_last``,
        :func:`authors_boundary_local_stream`, :func:`authors_global_stream`): the task
        segment each batch belongs to (their loop's task index ``t``), which decides
        their task-change evaluations, the subgraph a batch trains on and AF's reference.
    """

    batches: np.ndarray
    counts: np.ndarray
    weights: np.ndarray
    setting: str
    meta: dict = field(default_factory=dict)
    segment: np.ndarray | None = None

    @property
    def num_batches(self) -> int:
        return int(self.batches.shape[0])

    @property
    def batch_size(self) -> int:
        return int(self.batches.shape[1])

    @property
    def num_tasks(self) -> int:
        return int(self.counts.shape[1])


def _queue(nodes: np.ndarray, n: int, replace: bool, rng) -> np.ndarray:
    """``n`` draws from ``nodes``: with replacement, or from reshuffled permutations."""
    if n == 0:
        return nodes[:0]
    if replace:
        return nodes[rng.integers(0, nodes.size, size=n)]
    reps = -(-n // nodes.size)
    keys = rng.random((reps, nodes.size))
    return nodes[np.argsort(keys, axis=1)].ravel()[:n]


def _shuffle_rows(a: np.ndarray, rng) -> np.ndarray:
    return np.take_along_axis(a, np.argsort(rng.random(a.shape), axis=1), axis=1)


def fill_counts(task_nodes, counts, *, sampling: str = "without", rng=None, seed: int = 0) -> np.ndarray:
    """Fill batches with node indices given the per-batch task composition.

    Parameters
    ----------
    task_nodes : list of ndarray of int
        Training nodes of each latent task (each non-empty).
    counts : ndarray of int, shape (T, num_tasks)
        :math:`n_k(t)`; every row sums to the batch size B.
    sampling : {"without", "with"}
    rng : numpy.random.Generator, optional
        Stream generator (default ``np.random.default_rng(seed)``).

    Returns
    -------
    ndarray of int64, shape (T, B)
        Task k's draws are consumed in time order; each row is shuffled.

    Examples
    --------
    >>> b = fill_counts([np.array([0, 1]), np.array([5, 6, 7])], np.array([[2, 0], [1, 1], [0, 2]]))
    >>> b.shape, sorted(b[0].tolist()), bool(np.isin(b[2], [5, 6, 7]).all())
    ((3, 2), [0, 1], True)
    """
    check_choice("sampling", sampling, SAMPLINGS)
    rng = np.random.default_rng(seed) if rng is None else rng
    counts = np.asarray(counts, dtype=np.int64)
    T = counts.shape[0]
    B = int(counts[0].sum()) if T else 0
    if (counts.sum(axis=1) != B).any():
        raise ValueError("counts rows must all sum to the same batch size")
    return _shuffle_rows(_fill_flat(task_nodes, counts, sampling == "with", rng).reshape(T, B), rng)


def _fill_flat(task_nodes, counts, replace: bool, rng) -> np.ndarray:
    """Draws for the slots of ``counts`` (T, K), flat in (batch, task) order, unshuffled."""
    T, K = counts.shape
    # slot labels in (batch, task) order; a stable sort groups them by task, time order kept
    labels = np.repeat(np.tile(np.arange(K), T), counts.ravel())
    order = np.argsort(labels, kind="stable")
    totals = counts.sum(axis=0)
    draws = np.concatenate([_queue(np.asarray(task_nodes[k], dtype=np.int64), int(totals[k]), replace, rng)
                            for k in range(K)])
    flat = np.empty(labels.size, dtype=np.int64)
    flat[order] = draws
    return flat


def _check_common(task_nodes, batch_size, sampling):
    batch_size = check_int("batch_size", batch_size, low=1)
    check_choice("sampling", sampling, SAMPLINGS)
    sizes = np.array([len(n) for n in task_nodes], dtype=np.int64)
    if sizes.size == 0 or (sizes == 0).any():
        raise ValueError(f"every latent task needs at least one training node, got sizes {sizes.tolist()}")
    return batch_size, sizes


def _counts_from_nodes(batches, node_task, K):
    """Realised per-batch task composition (T, K) from a node -> task map."""
    tasks = node_task[batches]
    T = batches.shape[0]
    flat = (np.arange(T)[:, None] * K + tasks).ravel()
    return np.bincount(flat, minlength=T * K).reshape(T, K)


def gaussian_stream(task_nodes, batch_size: int, sigma: float, *, sampling: str = "without",
                    seed: int = 0, protocol: str = "text") -> Stream:
    """Gaussian-mixing stream (Eqs. 9, 10 and 5).

    Parameters
    ----------
    task_nodes : list of ndarray of int
        Training nodes of each latent task, in task order.
    batch_size : int
    sigma : float
        Mixing width in batches (> 0, finite).
    sampling : {"without", "with"}
    seed : int
        Seeds the stream generator (kept separate from any method's generator).
    protocol : {"text", "authors"}
        Batch ``t`` evaluated at its midpoint (text) or at integer ``t`` with the
        authors' arithmetic and tie rule (:func:`clkit.drift.protocol.schedule`).

    Examples
    --------
    >>> s = gaussian_stream([np.arange(20), np.arange(20, 40)], batch_size=5, sigma=1.0)
    >>> s.batches.shape, bool((s.counts.sum(1) == 5).all())
    ((8, 5), True)
    """
    batch_size, sizes = _check_common(task_nodes, batch_size, sampling)
    sigma = check_real("sigma", sigma, low=0, low_open=True)
    protocol = check_choice("protocol", protocol, list(SCHEDULE_AT))
    w, counts = mixing_schedule(sizes, batch_size, sigma, at=SCHEDULE_AT[protocol])
    rng = np.random.default_rng(seed)
    batches = fill_counts(task_nodes, counts, sampling=sampling, rng=rng)
    return Stream(batches, counts, w, "gaussian", {"sigma": sigma, "sampling": sampling, "seed": seed,
                                                   "protocol": protocol})


def hard_stream(task_nodes, batch_size: int, *, sampling: str = "without", seed: int = 0,
                partial_last: bool = False) -> Stream:
    """Hard transitions (Eq. 11, sigma -> 0): task k fills all B slots of its B_k batches.

    ``partial_last=True`` is the authors' loop (their ``Continuum``): every task's
    training nodes are shuffled and cut into batches of ``B`` that never cross a task
    boundary, so each task's last batch holds the ``N_k - (B_k - 1) B`` nodes left
    (padded with -1 in ``batches``; ``counts`` holds the true sizes). ``sampling`` is
    then ignored: every node is seen exactly once.

    Examples
    --------
    >>> s = hard_stream([np.arange(7), np.arange(7, 10)], batch_size=5)
    >>> s.counts.tolist()
    [[5, 0], [5, 0], [0, 5]]
    >>> s = hard_stream([np.arange(7), np.arange(7, 10)], batch_size=5, partial_last=True)
    >>> s.counts.tolist(), int((s.batches[1] < 0).sum())
    ([[5, 0], [2, 0], [0, 3]], 3)
    """
    batch_size, sizes = _check_common(task_nodes, batch_size, sampling)
    _, bk, _ = task_centers(sizes, batch_size)
    w = hard_weights(bk)
    rng = np.random.default_rng(seed)
    if partial_last:
        rows, counts = [], np.zeros_like(w, dtype=np.int64)
        for k, nodes in enumerate(task_nodes):
            order = rng.permutation(np.asarray(nodes, dtype=np.int64))
            for start in range(0, order.size, batch_size):
                chunk = order[start:start + batch_size]
                counts[len(rows), k] = chunk.size
                rows.append(np.concatenate([chunk, np.full(batch_size - chunk.size, -1, dtype=np.int64)]))
        return Stream(np.stack(rows), counts, w, "hard", {"sampling": "without", "seed": seed,
                                                          "partial_last": True},
                      segment=counts.argmax(1).astype(np.int64))
    counts = (w * batch_size).astype(np.int64)
    batches = fill_counts(task_nodes, counts, sampling=sampling, rng=rng)
    return Stream(batches, counts, w, "hard", {"sampling": sampling, "seed": seed})


def boundary_local_stream(task_nodes, batch_size: int, k_bl: int, *, sampling: str = "without",
                          seed: int = 0) -> Stream:
    """Boundary-local mixing: adjacent tasks mixed within ``k_bl`` batches of each boundary.

    The hard stream is built first; then, at each boundary, the last ``k_bl * B``
    samples of task k and the first ``k_bl * B`` samples of task k+1 are pooled and
    permuted uniformly over those ``2 k_bl`` batches (App. A.3). Windows never
    overlap: a side is clipped to ``floor(B_k / 2)`` batches of its task (so a
    one-batch task is not mixed), which is recorded in ``meta["windows"]``.

    Examples
    --------
    >>> s = boundary_local_stream([np.arange(40), np.arange(40, 80)], batch_size=5, k_bl=2)
    >>> s.counts[:6, 0].tolist(), s.counts[10:, 0].tolist()
    ([5, 5, 5, 5, 5, 5], [0, 0, 0, 0, 0, 0])
    >>> int(s.counts[6:10, 0].sum())
    10
    """
    k_bl = check_int("k_bl", k_bl, low=1)
    hard = hard_stream(task_nodes, batch_size, sampling=sampling, seed=seed)
    _, bk, T = task_centers(np.array([len(n) for n in task_nodes]), batch_size)
    B = hard.batch_size
    rng = np.random.default_rng([seed, 1])
    bounds = np.cumsum(bk)[:-1]
    left = np.minimum(k_bl, bk[:-1] // 2)
    right = np.minimum(k_bl, bk[1:] // 2)
    region = np.full(T, -1, dtype=np.int64)
    for i, (b, l, r) in enumerate(zip(bounds, left, right)):
        if l and r:
            region[b - l:b + r] = i
    slots = np.flatnonzero(np.repeat(region, B) >= 0)
    flat = hard.batches.ravel().copy()
    # permute uniformly within each region: sort slots by (region, random key)
    reg = np.repeat(region, B)[slots]
    perm = slots[np.lexsort((rng.random(slots.size), reg))]
    flat[slots] = flat[perm]
    batches = _shuffle_rows(flat.reshape(T, B), rng)
    node_task = _node_task(task_nodes)
    counts = _counts_from_nodes(batches, node_task, len(task_nodes))
    w = hard.weights.copy()
    for i, (b, l, r) in enumerate(zip(bounds, left, right)):
        if l and r:
            w[b - l:b + r] = 0.0
            w[b - l:b + r, i] = l / (l + r)
            w[b - l:b + r, i + 1] = r / (l + r)
    return Stream(batches, counts, w, "boundary_local",
                  {"k_bl": k_bl, "sampling": sampling, "seed": seed,
                   "windows": np.stack([bounds - left, bounds + right], 1).tolist()})


def _node_task(task_nodes):
    n = max(int(np.max(t)) for t in task_nodes) + 1
    node_task = np.full(n, -1, dtype=np.int64)
    for k, t in enumerate(task_nodes):
        node_task[np.asarray(t)] = k
    return node_task


def global_stream(task_nodes, batch_size: int, p: float, *, sampling: str = "without", seed: int = 0) -> Stream:
    """Global mixing: a fraction ``p`` of every task is spread over the whole stream.

    App. A.3: ``round(p * N_k)`` nodes of each task (drawn at random) form a shared
    pool; the rest follow the hard schedule. Choices where the paper is silent:
    the pool takes a fraction ``p`` of the slots of *every* batch, batch t holding
    ``m_t = floor(pB(t+1)) - floor(pBt)`` pool slots (so exactly ``p`` of all slots
    in the long run, spread evenly); task k's main part then owns consecutive
    batches until their ``B - m_t`` main slots hold ``N_k - round(p N_k)`` nodes
    (its last batch is topped up from its own reshuffled queue, as in the hard
    stream). Pool slots draw from the pool's shuffled queue (or with replacement),
    so off-window tasks appear in proportion to their pool share.

    Examples
    --------
    >>> s = global_stream([np.arange(50), np.arange(50, 100)], batch_size=10, p=0.2)
    >>> s.batches.shape, bool((s.counts.sum(1) == 10).all()), bool((s.counts > 0).mean() > 0.5)
    ((10, 10), True, True)
    """
    p = check_real("p", p, low=0, high=1, high_open=True)
    batch_size, sizes = _check_common(task_nodes, batch_size, sampling)
    B = batch_size
    rng = np.random.default_rng(seed)
    K = len(task_nodes)
    reserved, main = [], []
    for nodes in task_nodes:
        nodes = np.asarray(nodes, dtype=np.int64)
        perm = nodes[rng.permutation(nodes.size)]
        r = int(round(p * nodes.size))
        r = min(r, nodes.size - 1)  # keep at least one node in the task's own window
        reserved.append(perm[:r])
        main.append(perm[r:])
    msize = np.array([m.size for m in main])
    # pool slots per batch and cumulative main capacity; generous upper bound on T
    t_max = int(np.sum(-(-msize // max(1, B - int(np.ceil(p * B)))))) + K + 1
    tt = np.arange(t_max + 1)
    cum_pool = np.floor(p * B * tt + 1e-9).astype(np.int64)
    m_t = np.diff(cum_pool)
    cap = B * tt - cum_pool  # main slots in batches [0, t)
    if (B - m_t <= 0).any():
        raise ValueError(f"p={p} leaves no main slots in a batch of size {B}")
    ends = np.empty(K, dtype=np.int64)
    start = 0
    for k in range(K):
        ends[k] = np.searchsorted(cap, cap[start] + msize[k], side="left")
        start = ends[k]
    T = int(ends[-1])
    m_t = m_t[:T]
    starts = np.concatenate([[0], ends[:-1]])
    owner = np.repeat(np.arange(K), ends - starts)
    main_counts = np.zeros((T, K), dtype=np.int64)
    main_counts[np.arange(T), owner] = B - m_t
    main_draws = _fill_flat(main, main_counts, sampling == "with", rng)  # batch order, B - m_t per batch
    pool = np.concatenate(reserved)
    flat = np.empty(T * B, dtype=np.int64)
    is_pool = (np.arange(B)[None, :] < m_t[:, None]).ravel()
    flat[~is_pool] = main_draws
    if is_pool.any():
        if pool.size == 0:
            raise ValueError(f"p={p} reserves no node of any task for the shared pool; increase p")
        flat[is_pool] = _queue(pool, int(is_pool.sum()), sampling == "with", rng)
    batches = _shuffle_rows(flat.reshape(T, B), rng)
    counts = _counts_from_nodes(batches, _node_task(task_nodes), K)
    share = np.array([r.size for r in reserved], dtype=float)
    share = share / share.sum() if share.sum() else share
    w = ((B - m_t) / B)[:, None] * np.eye(K)[owner] + (m_t / B)[:, None] * share[None, :]
    return Stream(batches, counts, w, "global", {"p": p, "sampling": sampling, "seed": seed})


# ------------------------------------------------------------ the authors' constructions
def _segment_stream(segments, task_nodes, batch_size: int, setting: str, meta: dict) -> Stream:
    """Each segment's nodes, in order, cut into batches of ``batch_size`` that never cross a segment
    (the last one partial, padded with -1); ``weights`` is the realised composition."""
    rows, seg = [], []
    for k, nodes in enumerate(segments):
        for start in range(0, nodes.size, batch_size):
            chunk = nodes[start:start + batch_size]
            rows.append(np.concatenate([chunk, np.full(batch_size - chunk.size, -1, dtype=np.int64)]))
            seg.append(k)
    batches = np.stack(rows)
    node_task = _node_task(task_nodes)
    K = len(task_nodes)
    tasks = np.where(batches >= 0, node_task[np.maximum(batches, 0)], K)
    flat = (np.arange(len(rows))[:, None] * (K + 1) + tasks).ravel()
    counts = np.bincount(flat, minlength=len(rows) * (K + 1)).reshape(len(rows), K + 1)[:, :K]
    w = counts / counts.sum(1, keepdims=True)
    return Stream(batches, counts.astype(np.int64), w, setting, meta, segment=np.asarray(seg, dtype=np.int64))


def authors_boundary_local_stream(task_nodes, batch_size: int, k_bl: int, *, mix_ratio: float = 0.5,
                                  seed: int = 0) -> Stream:
    """Boundary-local mixing as the authors' code builds it (``data_prepare_boundaryblurry``, ``tfo_bb``).

    Every task's training nodes are shuffled. At each boundary ``k | k+1`` the last
    ``k_bl * B`` nodes of task k and the first ``k_bl * B`` of task k+1 are removed from
    their tasks; ``k_bl * B * (1 - mix_ratio)`` of the former and ``int(k_bl * B * mix_ratio)``
    of the latter (drawn at random; the rest of both sides is dropped from the stream) form
    the boundary's *mixed block*. Task k's segment is ``[block k-1 | its own remaining
    nodes | block k]``, so every mixed block is trained twice: at the end of task k's
    segment and again at the start of task k+1's. Each segment is cut in order into
    batches of ``B`` that never cross a segment (the last one partial); ``segment`` holds
    each batch's task, as their ``pipeline_tfobb`` loop (its task-change evaluations and
    per-task subgraphs). Sampling is always without replacement.

    The paper (App. A.3) instead pools the ``2 k_bl B`` boundary samples and spreads them
    uniformly over the ``2 k_bl`` batches around the boundary, each sample once
    (:func:`boundary_local_stream`).

    Examples
    --------
    >>> s = authors_boundary_local_stream([np.arange(30), np.arange(30, 60)], batch_size=5, k_bl=2)
    >>> s.segment.tolist()   # 20 own nodes + the block of 10, then the block again + 20 own nodes
    [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
    >>> bool((s.batches[4:6] == s.batches[6:8]).all()), s.counts[4:6].sum(0).tolist()   # the block, twice
    (True, [5, 5])
    """
    k_bl = check_int("k_bl", k_bl, low=1)
    mix_ratio = check_real("mix_ratio", mix_ratio, low=0, high=1)
    batch_size, _ = _check_common(task_nodes, batch_size, "without")
    rng = np.random.default_rng(seed)
    parts = [rng.permutation(np.asarray(n, dtype=np.int64)) for n in task_nodes]
    size = k_bl * batch_size
    blocks = []
    for k in range(len(parts) - 1):
        cur, nxt = parts[k], parts[k + 1]
        nt = min(size, cur.size)
        nn = min(size, nxt.size)
        side_t, side_n = cur[cur.size - nt:], nxt[:nn]
        parts[k], parts[k + 1] = cur[:cur.size - nt], nxt[nn:]
        take_n = int(size * mix_ratio)
        take_t = min(size - take_n, side_t.size)
        take_n = min(take_n, side_n.size)
        block = np.concatenate([rng.permutation(side_t)[:take_t], rng.permutation(side_n)[:take_n]])
        blocks.append(rng.permutation(block))
    segments = [np.concatenate(([blocks[k - 1]] if k > 0 else []) + [parts[k]]
                               + ([blocks[k]] if k < len(blocks) else [])).astype(np.int64)
                for k in range(len(parts))]
    return _segment_stream(segments, task_nodes, batch_size, "boundary_local",
                           {"k_bl": k_bl, "mix_ratio": mix_ratio, "sampling": "without", "seed": seed,
                            "construction": "authors", "block_sizes": [int(b.size) for b in blocks]})


def authors_global_stream(task_nodes, batch_size: int, p: float, *, seed: int = 0) -> Stream:
    """Global mixing as the authors' code builds it (``data_prepare_blurry``, ``tfo_blurry``, ``Continuum``).

    Every task's training nodes are shuffled and the first ``int(N_k (1 - p))`` kept in
    the task (their ``--percentage`` is ``1 - p``); the rest of every task forms one pool,
    shuffled and cut into ``K`` equal chunks of ``int(pool / K)`` (the remainder is
    dropped). Task k's segment is its kept nodes plus chunk k, shuffled, cut into
    batches of ``B`` that never cross a segment (the last one partial); ``segment``
    holds each batch's task, as their ``pipeline_tfo`` loop. So each segment holds about
    a fraction ``p`` of nodes from all tasks (its own included), at random positions.
    Sampling is always without replacement.

    The paper (App. A.3) says the pool is "injected into all stream regions" while the
    rest follows the hard schedule; :func:`global_stream` gives the pool a fraction
    ``p`` of the slots of every batch.

    Examples
    --------
    >>> s = authors_global_stream([np.arange(20), np.arange(20, 40)], batch_size=5, p=0.3)
    >>> s.segment.tolist(), s.counts.sum(0).tolist()   # 14 kept per task, the pool of 12 split 6 + 6
    ([0, 0, 0, 0, 1, 1, 1, 1], [20, 20])
    """
    p = check_real("p", p, low=0, high=1, high_open=True)
    batch_size, _ = _check_common(task_nodes, batch_size, "without")
    rng = np.random.default_rng(seed)
    K = len(task_nodes)
    kept, pool = [], []
    for nodes in task_nodes:
        perm = rng.permutation(np.asarray(nodes, dtype=np.int64))
        n_keep = int(perm.size * (1.0 - p))
        kept.append(perm[:n_keep])
        pool.append(perm[n_keep:])
    pool = rng.permutation(np.concatenate(pool))
    per = int(pool.size / K)
    segments = [rng.permutation(np.concatenate([kept[k], pool[k * per:(k + 1) * per]])) for k in range(K)]
    return _segment_stream(segments, task_nodes, batch_size, "global",
                           {"p": p, "sampling": "without", "seed": seed, "construction": "authors",
                            "dropped": int(pool.size - K * per)})


def year_bins(years, num_tasks: int):
    """Consecutive year ranges with roughly equal node counts: the latent tasks of a time-evolving stream.

    A year is never split: year ``y`` goes to bin ``floor(K * m_y / N)`` with ``m_y`` the
    number of nodes published before ``y`` plus half of those published in ``y`` (its
    midpoint quantile), ``K`` = ``num_tasks``, ``N`` the nodes; empty bins are dropped, so
    a year holding most nodes gives fewer than ``K`` bins. (The OGB split's years -- up to
    2017, 2018, 2019 and later -- would give three tasks of very unequal size.)

    Parameters
    ----------
    years : array_like of int, shape (n,)
    num_tasks : int >= 1

    Returns
    -------
    task : ndarray of int64, shape (n,) -- the bin of every node, 0 = earliest
    ranges : list of (int, int) -- the first and last year of every bin

    Examples
    --------
    >>> task, ranges = year_bins([2001, 2001, 2002, 2003, 2003, 2004, 2005, 2005], 3)
    >>> task.tolist(), ranges
    ([0, 0, 0, 1, 1, 2, 2, 2], [(2001, 2002), (2003, 2003), (2004, 2005)])
    """
    num_tasks = check_int("num_tasks", num_tasks, low=1)
    years = np.asarray(years, dtype=np.int64).reshape(-1)
    if years.size == 0:
        raise ValueError("years must hold at least one node's year, got none")
    uniq, inv, counts = np.unique(years, return_inverse=True, return_counts=True)
    mid = np.cumsum(counts) - counts / 2.0
    bin_of_year = np.minimum((num_tasks * mid / years.size).astype(np.int64), num_tasks - 1)
    used, bin_of_year = np.unique(bin_of_year, return_inverse=True)   # drop empty bins, keep order
    ranges = [(int(uniq[bin_of_year == k].min()), int(uniq[bin_of_year == k].max())) for k in range(used.size)]
    return bin_of_year[inv].astype(np.int64), ranges


def time_stream(task_nodes, node_time, batch_size: int, *, seed: int = 0) -> Stream:
    """The nodes of ``task_nodes`` in time order, cut into batches: a time-evolving stream.

    Nodes arrive ordered by ``node_time`` (e.g. ogbn-arxiv's publication year), those of
    one time in an order drawn from ``seed``; every node is seen once. The last batch is
    partial (padded with -1, as :func:`hard_stream` with ``partial_last``). ``counts`` is
    the realised task composition of every batch and ``weights`` the same as shares: with
    tasks that are consecutive time ranges (:func:`year_bins`) the stream is a sequence of
    hard transitions, a batch mixed only where it spans a boundary.

    Parameters
    ----------
    task_nodes : list of ndarray of int -- training nodes of each latent task
    node_time : array_like, shape (num_nodes,) -- the time of every node of the graph
    batch_size : int
    seed : int -- the order within a time

    Examples
    --------
    >>> s = time_stream([np.array([0, 1, 2]), np.array([3, 4])], np.array([5, 5, 6, 7, 7]), 2, seed=0)
    >>> s.batches[1:].tolist(), s.counts.tolist(), s.setting
    ([[2, 3], [4, -1]], [[2, 0], [1, 1], [0, 1]], 'arxiv_time')
    """
    batch_size, _ = _check_common(task_nodes, batch_size, "without")
    node_time = np.asarray(node_time).reshape(-1)
    nodes = np.concatenate([np.asarray(t, dtype=np.int64) for t in task_nodes])
    task = np.repeat(np.arange(len(task_nodes)), [len(t) for t in task_nodes])
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.random(nodes.size), node_time[nodes]))
    nodes, task = nodes[order], task[order]
    T = -(-nodes.size // batch_size)
    pad = T * batch_size - nodes.size
    batches = np.concatenate([nodes, np.full(pad, -1, dtype=np.int64)]).reshape(T, batch_size)
    slot = np.repeat(np.arange(T), batch_size)[:nodes.size]
    K = len(task_nodes)
    counts = np.bincount(slot * K + task, minlength=T * K).reshape(T, K)
    weights = counts / counts.sum(1, keepdims=True)
    return Stream(batches, counts, weights, TIME_SETTING, {"sampling": "without", "seed": seed,
                                                           "time": "node_time"})
