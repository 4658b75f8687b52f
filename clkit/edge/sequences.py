"""Inter-task similarity S(O) (Eq. 5) and extreme (hard / easy) class sequences.

:func:`hard_sequence` / :func:`easy_sequence` follow the paper's Algorithms 1-2
(hierarchical clustering at several granularities, balancing clusters into equal
tasks, greedy ordering, best candidate by S) and then improve the best candidate
by a local search that only ever lowers (hard) or raises (easy) S:

* class swaps between two tasks, best improvement first, with an O(N^2) vectorised
  evaluation of all swaps at once (see :func:`_swap_gains`);
* the exact best task order for the current partition (Held-Karp dynamic
  programme over task subsets for ``num_tasks <= 12``; 2-opt segment reversals
  beyond), since S only depends on adjacent tasks.

Both moves repeat until neither improves S, so the result is never worse than the
paper's candidate; the paper's own candidate is reported in ``info``. The search
starts from the three best distinct candidates (``N <= 64``; the best one beyond). When the whole space is small
(``|Omega| <= exact_limit``, default 20,000, e.g. 6 classes / 3 tasks or 9 / 3),
every sequence is scored instead and the exact extreme is returned
(``info["method"] == "exhaustive"``).

**Ties.** Every sequence has the same S(O) as its reverse, and the floats of the two may
differ in the last bits (the similarities are summed in another order), so which one a plain
``argmin`` returns depends on the machine's rounding. Scores within a relative
:data:`TIE_RTOL` are one tie, and the search returns its lexicographically smallest member
(canonical form; :func:`canonical_order`), the same on every machine. Statistics of the
returned sequences should still be averaged over the tie
(:func:`clkit.edge.structure.tie_pairs`): a relabelling of the classes picks another member.

Choices where the paper leaves details open (documented and tested):

* clustering: average linkage on the dissimilarity ``1 - sim`` (diagonal 0);
  granularities (numbers of clusters) default to every value in ``2..N`` for
  ``N <= 64`` and about 24 geometrically spaced values (plus ``num_tasks``) otherwise;
* hard balancing: clusters largest first, each placed whole into the task with the
  smallest sufficient free room (best fit); a cluster too big for any task fills the
  emptiest task with its first members in dendrogram-leaf order (so the members
  that stay together are the most similar ones) and the rest continues;
* easy balancing: classes dealt round-robin across tasks cluster by cluster
  (clusters largest first, members in leaf order), so similar classes land in
  different tasks;
* greedy ordering: both variants of the text are tried as candidates -- the next
  task is the least (most) similar to the *last* task (Sect. D.2) or to *all* tasks
  chosen so far (Algorithm 2, step 13).
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from .._validate import check_int, check_type
from .combinatorics import canonical, check_num_tasks, check_sequence

__all__ = [
    "check_similarity",
    "sequence_score",
    "sequence_scores",
    "inter_task_similarity",
    "hard_sequence",
    "easy_sequence",
    "random_scores",
    "score_percentile",
    "intra_task_scores",
    "generalised_scores",
    "default_granularities",
    "TIE_RTOL",
    "canonical_order",
]

#: relative tolerance within which two scores are one tie: a sequence and its reverse have the same
#: S(O) but sum the similarities in another order, so their floats may differ in the last bits
TIE_RTOL = 1e-9


def check_similarity(sim, name: str = "sim") -> np.ndarray:
    """Validate a class-similarity matrix: square, at least 2 x 2, finite, symmetric.

    Examples
    --------
    >>> check_similarity([[1, 0.5], [0.5, 1]]).shape
    (2, 2)
    >>> check_similarity([[1, 0.5], [0.2, 1]])
    Traceback (most recent call last):
    ...
    ValueError: sim must be symmetric (sim[i, j] == sim[j, i]); largest asymmetry 0.3 at (0, 1)
    """
    arr = np.asarray(sim, dtype=float)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
        raise ValueError(f"{name} must be a square (N, N) matrix with N >= 2, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name} must contain only finite values; found {arr[tuple(bad)]} at {tuple(bad.tolist())}")
    asym = np.abs(arr - arr.T)
    if asym.max() > 1e-6 * max(1.0, np.abs(arr).max()):
        i, j = np.unravel_index(np.argmax(asym), asym.shape)
        raise ValueError(f"{name} must be symmetric (sim[i, j] == sim[j, i]); largest asymmetry "
                         f"{asym[i, j]:.3g} at {(int(min(i, j)), int(max(i, j)))}")
    return (arr + arr.T) / 2


def canonical_order(sequences, objective, rtol: float = TIE_RTOL) -> np.ndarray:
    """Positions of ``sequences`` by increasing ``objective``, ties broken by a canonical rule.

    Objectives within ``rtol * max(1, |value|)`` of each other (float rounding: a sequence and
    its reverse have the same S(O) up to the last bits) form one tie, ordered by the
    lexicographic order of the sequences in canonical form (classes sorted within a task). The
    first position is the search's pick, the same on every machine whatever the rounding.

    Examples
    --------
    >>> seqs = [[[2, 3], [0, 1]], [[0, 1], [2, 3]], [[0, 2], [1, 3]]]
    >>> canonical_order(seqs, [0.5, 0.5 + 1e-15, 0.2]).tolist()   # 0 and 1 tie: [[0, 1], ...] first
    [2, 1, 0]
    """
    obj = np.asarray(objective, dtype=float).ravel()
    seqs = canonical(sequences).reshape(len(obj), -1)
    order = np.argsort(obj, kind="stable")
    srt = obj[order]
    new = np.diff(srt) > rtol * np.maximum(1.0, np.abs(srt[1:]))     # a gap starts a new tie
    group = np.concatenate([[0], np.cumsum(new)])
    keys = [seqs[order][:, j] for j in range(seqs.shape[1] - 1, -1, -1)] + [group]
    return order[np.lexsort(keys)]


def _pick(sequences, objective) -> int:
    """Position of the smallest ``objective``, ties by :func:`canonical_order`'s rule (only the tie sorted)."""
    obj = np.asarray(objective, dtype=float).ravel()
    best = obj.min()
    cand = np.flatnonzero(obj <= best + TIE_RTOL * max(1.0, abs(best)))
    if len(cand) == 1:
        return int(cand[0])
    return int(cand[canonical_order(np.asarray(sequences)[cand], obj[cand])[0]])


def _coef(n, k):
    return k / ((k - 1) * n)


def sequence_scores(sim, sequences) -> np.ndarray:
    """S(O) of Eq. 5 for many sequences at once.

    Parameters
    ----------
    sim : array_like, shape (N, N)
    sequences : array_like of int, shape (L, K, M)

    Returns
    -------
    ndarray, shape (L,)

    Examples
    --------
    >>> sim = np.eye(4)
    >>> sequence_scores(sim, [[[0, 1], [2, 3]], [[0, 2], [1, 3]]]).tolist()
    [0.0, 0.0]
    """
    sim = check_similarity(sim)
    seqs = np.asarray(sequences, dtype=np.int64)
    if seqs.ndim != 3:
        raise ValueError(f"sequences must have shape (L, K, M), got {seqs.shape}")
    n, k = sim.shape[0], seqs.shape[1]
    if seqs.shape[1] * seqs.shape[2] != n:
        raise ValueError(f"sequences must cover the {n} classes of sim, got shape {seqs.shape}")
    a = seqs[:, :-1, :, None]
    b = seqs[:, 1:, None, :]
    return _coef(n, k) * sim[a, b].sum(axis=(1, 2, 3))


def sequence_score(sim, sequence) -> float:
    """Inter-task similarity of one class sequence, Eq. 5.

    .. math:: S(O) = \\frac{K}{(K-1)N} \\sum_{i=1}^{K-1} \\sum_{c \\in C_i}
              \\sum_{c' \\in C_{i+1}} \\mathrm{Sim}(c, c')

    Parameters
    ----------
    sim : array_like, shape (N, N)
        Symmetric class similarity.
    sequence : list of lists of int, shape (K, M)
        Tasks in order, each a list of class indices.

    Examples
    --------
    >>> sim = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    >>> round(sequence_score(sim, [[0, 1], [2, 3]]), 4)  # 2/(1*4) * (.1+.2+.3+.4)
    0.5
    >>> round(sequence_score(sim, [[0, 2], [1, 3]]), 4)  # 2/4 * (.9+.2+.3+.8)
    1.1
    """
    sim = check_similarity(sim)
    seq = check_sequence("sequence", sequence, sim.shape[0])
    return float(sequence_scores(sim, seq[None])[0])


def intra_task_scores(sim, sequences) -> np.ndarray:
    """Intra-task similarity I(O) of many sequences (beyond the paper).

    .. math:: I(O) = \\frac{2}{N} \\sum_{i=1}^{K} \\sum_{\\{c, c'\\} \\subset C_i} \\mathrm{Sim}(c, c')

    (unordered pairs of distinct classes within a task; ``(M - 1)`` times their mean,
    on the same scale as S(O), which is ``M`` times the mean adjacent-task similarity).

    Examples
    --------
    >>> sim = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    >>> intra_task_scores(sim, [[[0, 1], [2, 3]]]).round(4).tolist()   # 2/4 * (.9 + .8)
    [0.85]
    """
    sim = check_similarity(sim)
    seqs = np.asarray(sequences, dtype=np.int64)
    if seqs.ndim != 3 or seqs.shape[1] * seqs.shape[2] != sim.shape[0]:
        raise ValueError(f"sequences must have shape (L, K, M) covering the {sim.shape[0]} classes, "
                         f"got {seqs.shape}")
    block = sim[seqs[:, :, :, None], seqs[:, :, None, :]].sum(axis=(1, 2, 3)) - np.trace(sim)
    return block / sim.shape[0]


def generalised_scores(sim, sequences, intra_weight: float = 0.0) -> np.ndarray:
    """``S(O) + intra_weight * I(O)`` for many sequences (``intra_weight=0``: the paper's S).

    A negative weight scores a sequence as easier when its tasks hold *dissimilar*
    classes (easy to tell apart within a task), a positive one the opposite.

    Examples
    --------
    >>> sim = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    >>> generalised_scores(sim, [[[0, 1], [2, 3]]], -1.0).round(4).tolist()   # 0.5 - 0.85
    [-0.35]
    """
    from .._validate import check_real

    w = check_real("intra_weight", intra_weight)
    out = sequence_scores(sim, sequences)
    return out + w * intra_task_scores(sim, sequences) if w else out


def inter_task_similarity(sim, sequence) -> np.ndarray:
    """ITS matrix: mean similarity between the classes of every pair of tasks.

    Returns
    -------
    ndarray, shape (K, K); ``ITS[i, j] = mean(sim[C_i][:, C_j])``

    Examples
    --------
    >>> inter_task_similarity(np.eye(4), [[0, 1], [2, 3]]).tolist()
    [[0.5, 0.0], [0.0, 0.5]]
    """
    sim = check_similarity(sim)
    seq = np.asarray(sequence, dtype=np.int64)
    return sim[seq[:, None, :, None], seq[None, :, None, :]].mean(axis=(2, 3))


def default_granularities(num_classes: int, num_tasks: int) -> list[int]:
    """Numbers of clusters tried by the generators (see module docstring).

    Examples
    --------
    >>> default_granularities(6, 3)
    [2, 3, 4, 5, 6]
    >>> default_granularities(100, 10)[:10], len(default_granularities(100, 10))
    ([2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 23)
    """
    if num_classes <= 64:
        return list(range(2, num_classes + 1))
    return sorted({int(round(g)) for g in np.geomspace(2, num_classes, 24)} | {num_tasks})[:24]


def _check_granularities(granularities, n, k):
    if granularities is None:
        return default_granularities(n, k)
    check_type("granularities", granularities, (list, tuple), "a list of cluster counts")
    if not granularities:
        raise ValueError("granularities must name at least one number of clusters, got []")
    return [check_int("granularities", g, low=1, high=n) for g in granularities]


# --------------------------------------------------------------------------- partitions

def _clusters(sim, granularities):
    """Clusters per granularity from one pass over the average-linkage dendrogram.

    Returns ``{g: [members, ...]}``: the clusters after ``N - g`` merges (exactly
    ``g`` clusters), members in dendrogram-leaf order, clusters largest first (ties:
    first leaf). The linkage of the last matrix is cached (hard and easy share it).
    """
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform

    key = (sim.shape, hash(sim.tobytes()))
    hit = _LINKAGE_CACHE.get(key)
    if hit is None:
        dis = 1.0 - sim
        np.fill_diagonal(dis, 0.0)
        dis = np.maximum(dis, 0.0)
        Z = linkage(squareform(dis, checks=False), method="average")
        hit = (Z, leaves_list(Z))
        _LINKAGE_CACHE.clear()
        _LINKAGE_CACHE[key] = hit
    Z, leaves = hit
    n = sim.shape[0]
    rank = np.empty(n, dtype=np.int64)
    rank[leaves] = np.arange(n)
    rank = rank.tolist()
    want = set(granularities)
    members = {c: [c] for c in range(n)}
    out = {}

    def snapshot():
        return sorted(members.values(), key=lambda mem: (-len(mem), rank[mem[0]]))

    if n in want:
        out[n] = snapshot()
    for r, (a, b) in enumerate(Z[:, :2].astype(np.int64).tolist()):
        members[n + r] = members.pop(a) + members.pop(b)   # left then right: leaf order
        if n - r - 1 in want:
            out[n - r - 1] = snapshot()
    return out


_LINKAGE_CACHE: dict = {}


def _hard_partition(clusters, k, m):
    tasks = [[] for _ in range(k)]
    free = [m] * k
    for members in clusters:
        rest = members
        while rest:
            size, j, room = len(rest), -1, m + 1
            for t in range(k):                            # best fit (first on ties)
                if size <= free[t] < room:
                    j, room = t, free[t]
            if j >= 0:
                tasks[j].extend(rest)
                free[j] -= size
                break
            j = free.index(max(free))                     # emptiest task (first on ties)
            tasks[j].extend(rest[: free[j]])
            rest = rest[free[j]:]
            free[j] = 0
    return np.array(tasks, dtype=np.int64)


def _easy_partition(clusters, k, m):
    tasks = [[] for _ in range(k)]
    j = 0
    for members in clusters:
        for c in members:
            while len(tasks[j]) >= m:
                j = (j + 1) % k
            tasks[j].append(c)
            j = (j + 1) % k
    return np.array(tasks, dtype=np.int64)


# --------------------------------------------------------------------------- orders

def _greedy_orders(X, sign):
    """Greedy task orders on the (K, K) cross-similarity sums X (minimising sign * X)."""
    k = X.shape[0]
    Y = sign * X
    off = Y.copy()
    np.fill_diagonal(off, 0.0)
    start = int(np.argmin(off.sum(axis=1)))
    Yl = Y.tolist()
    orders = []
    for variant in ("last", "all"):
        order, left = [start], [j for j in range(k) if j != start]
        cost = list(Yl[start])                 # "all": summed cost to the tasks chosen so far
        while left:
            row = Yl[order[-1]] if variant == "last" else cost
            nxt = min(left, key=row.__getitem__)   # first minimum in ascending task index
            order.append(nxt)
            left.remove(nxt)
            if variant == "all":
                cost = [a + b for a, b in zip(cost, Yl[nxt])]
        orders.append(order)
    return orders


def _task_sums(W, tasks):
    """(K, K) sums of W between the classes of every pair of tasks (one-hot products)."""
    tasks = np.asarray(tasks)
    k = tasks.shape[0]
    P = np.zeros((W.shape[0], k))
    P[tasks.ravel(), np.repeat(np.arange(k), tasks.shape[1])] = 1.0
    return P.T @ W @ P


def _path_cost(Y, order):
    order = np.asarray(order)
    return float(Y[order[:-1], order[1:]].sum())


@functools.lru_cache(maxsize=16)
def _subset_layers(k):
    """Subsets of range(k) as bit masks, grouped by size (index = size)."""
    masks = np.arange(1 << k)
    pop = np.zeros(1 << k, dtype=np.int64)
    for b in range(k):
        pop += (masks >> b) & 1
    return [masks[pop == r] for r in range(k + 1)]


def _best_order(Y, order):
    """Order of the K tasks minimising the sum of Y over adjacent pairs.

    Exact (Held-Karp) for K <= 12, otherwise 2-opt starting from ``order``.
    """
    k = Y.shape[0]
    if k <= 3:
        perms = list(itertools.permutations(range(k)))
        costs = [_path_cost(Y, p) for p in perms]
        return list(perms[int(np.argmin(costs))])
    if k <= 12:
        full = 1 << k
        layers = _subset_layers(k)
        dp = np.full((full, k), np.inf)
        dp[1 << np.arange(k), np.arange(k)] = 0.0
        bits = 1 << np.arange(k)
        for masks in layers[2:]:                   # pull: best path over `mask` ending at t
            has = (masks[:, None] & bits[None, :]) != 0                 # (C, K): t in mask
            prev = np.where(has, masks[:, None] ^ bits[None, :], 0)
            best = (dp[prev] + Y.T[None]).min(axis=2)                   # min over the previous end j
            dp[masks] = np.where(has, best, np.inf)
        mask, j = full - 1, int(np.argmin(dp[full - 1]))
        out = [j]
        while mask != (1 << j):                    # backtrack by recomputing the argmin
            prev = mask ^ (1 << j)
            cand = dp[prev] + Y[:, j]
            cand[(prev & bits) == 0] = np.inf
            j, mask = int(np.argmin(cand)), prev
            out.append(j)
        return out[::-1]
    order = list(order)
    improved = True
    while improved:
        improved = False
        for a in range(k - 1):
            for b in range(a + 1, k):
                new = order[:a] + order[a:b + 1][::-1] + order[b + 1:]
                if _path_cost(Y, new) < _path_cost(Y, order) - 1e-12:
                    order, improved = new, True
    return order


# --------------------------------------------------------------------------- local search

def _reorder_tasks(A, idx, pos, k, m, tol):
    """The exact best order of a partition's K tasks, if it beats the current one by ``tol``.

    ``A[c, p]``: summed W of class c to the task at position p; ``idx``: classes in task
    order, shape (K * M,); ``pos[c]``: task position of class c. Returns the re-ordered
    ``(A, idx, pos)``, or ``None`` when the current order is already best.
    """
    X = A[idx].reshape(k, m, k).sum(axis=1)                # (K, K) task-to-task sums
    order = _best_order(X, list(range(k)))
    if not _path_cost(X, order) < _path_cost(X, list(range(k))) - tol:
        return None
    new_pos = np.empty(k, dtype=np.int64)
    new_pos[order] = np.arange(k)
    return A[:, order], idx.reshape(k, m)[order].ravel().copy(), new_pos[pos]


def _local_search(W, tasks, max_rounds=10_000, multi=False):
    """Minimise the sum over adjacent tasks of W by class swaps and exact re-ordering.

    Incremental best-improvement search. ``A[c, p]`` is the summed W of class c to
    the classes of the task at position p and ``NB[c, p] = A[c, p-1] + A[c, p+1]``.
    Swapping class c (task p) with class d (task q) changes the objective by

    ``G[c, q] + G[d, p] - adj(p, q) * (W_cc + W_dd - 2 W_cd)``,
    ``G[c, r] = NB[c, r] - NB[c, p]``

    (tested against a brute-force rescoring of every swap). For tasks that are not
    neighbours the two terms are independent, so the best swap between them is the
    best mover of p into q plus the best mover of q into p (a column minimum per
    task, O(N K)); only the K - 1 neighbouring pairs need their M x M blocks
    (O(N M), their correction terms kept up to date per swap). The default applies the
    single best swap per round. With ``multi=True`` a round applies, best first, every
    best-per-task-pair swap whose tasks lie two or more positions from the tasks already
    swapped in that round (their gains are unaffected, so each still improves by exactly
    its gain): fewer rounds, but it reached a slightly different (not always better) local
    optimum in benchmarks, so it is off by default. An accepted swap updates
    two columns of ``A`` in O(N) and four rows / columns of the corrections in O(M). When no swap
    improves, the exact best task order for the partition is applied (Held-Karp,
    :func:`_best_order`) and the swaps resume if it changed anything.
    """
    W = np.asarray(W, dtype=float)
    tasks = np.array(tasks, dtype=np.int64)
    k, m = tasks.shape
    n = k * m
    idx = tasks.ravel().copy()                          # slot -> class
    pos = np.empty(n, dtype=np.int64)                   # class -> task position
    pos[idx] = np.repeat(np.arange(k), m)
    P = np.zeros((n, k))
    P[np.arange(n), pos] = 1.0
    A = W @ P
    dW = np.diag(W).copy()
    ar, kp = np.arange(n), np.arange(k - 1)
    far = np.abs(np.arange(k)[:, None] - np.arange(k)[None, :]) >= 2
    tol = 1e-9 * max(1.0, float(np.abs(W).max()))
    NB = np.zeros((n, k))
    rounds = 0
    while True:
        # PEN[t, a, b] = -(W_cc + W_dd - 2 W_cd) for c = slot a of task t, d = slot b of
        # task t + 1: the correction of a swap between neighbouring tasks
        C = idx.reshape(k, m)
        X, Y = C[:-1], C[1:]
        PEN = 2 * W[X[:, :, None], Y[:, None, :]] - dW[X][:, :, None] - dW[Y][:, None, :]
        while rounds < max_rounds:
            NB[:, 1:] = A[:, :-1]
            NB[:, 0] = 0.0
            NB[:, :-1] += A[:, 1:]
            G = NB - NB[ar, pos][:, None]
            Gs = G[idx].reshape(k, m, k)                 # Gs[p, i, q]: slot i of task p into q
            cands = []                                   # (gain, p, i, q, j): best swap per task pair
            if k > 2:
                Mn = Gs.min(axis=1)                      # (K, K) best mover of p into q
                pair = np.where(far, Mn + Mn.T, np.inf)
                for p, q in zip(*np.nonzero(np.triu(pair < -tol))):
                    cands.append((pair[p, q], p, None, q, None))
            gadj = Gs[kp, :, kp + 1][:, :, None] + Gs[kp + 1, :, kp][:, None, :] + PEN
            flat = gadj.reshape(k - 1, m * m)
            bi = flat.argmin(axis=1)
            for t in np.flatnonzero(flat[kp, bi] < -tol):
                cands.append((flat[t, bi[t]], t, bi[t] // m, t + 1, bi[t] % m))
            if not cands:
                break
            cands.sort(key=lambda c: c[0])
            if not multi:
                cands = cands[:1]
            touched = np.zeros(k + 2, dtype=bool)        # padded: task t is touched[t + 1]
            for _, p, i, q, j in cands:
                # swaps between tasks two or more apart from every swapped task are
                # independent (their gains only read NB columns of their own tasks)
                if touched[p:p + 3].any() or touched[q:q + 3].any():
                    continue
                if i is None:
                    i, j = int(np.argmin(Gs[p, :, q])), int(np.argmin(Gs[q, :, p]))
                touched[p + 1] = touched[q + 1] = True
                c, d = idx[p * m + i], idx[q * m + j]
                diff = W[:, d] - W[:, c]
                A[:, p] += diff
                A[:, q] -= diff
                idx[p * m + i], idx[q * m + j] = d, c
                pos[c], pos[d] = q, p
                C = idx.reshape(k, m)
                for t, off, cls in ((p, i, d), (q, j, c)):    # the PEN rows / columns of both slots
                    if t < k - 1:
                        PEN[t, off, :] = 2 * W[cls, C[t + 1]] - dW[cls] - dW[C[t + 1]]
                    if t > 0:
                        PEN[t - 1, :, off] = 2 * W[C[t - 1], cls] - dW[C[t - 1]] - dW[cls]
            rounds += 1
        # exact best order of the tasks for this partition
        better = None if rounds >= max_rounds else _reorder_tasks(A, idx, pos, k, m, tol)
        if better is None:
            break
        A, idx, pos = better
        rounds += 1
    return idx.reshape(k, m)


def _local_search_dense(W, tasks, T, max_rounds=10_000):
    """Minimise ``1/2 sum_{c != d} T[pos c, pos d] W[c, d]`` by class swaps and re-ordering.

    ``T`` is a symmetric (K, K) weight on task pairs: 1 for neighbours, ``t`` on the
    diagonal (pairs inside a task), 0 elsewhere. With ``NB = A @ T`` the swap of c
    (task p) and d (task q) changes the objective by

    ``NB[c,q] - NB[c,p] - W_cc (T_pq - T_pp) + NB[d,p] - NB[d,q] - W_dd (T_pq - T_qq)
    - (T_pp + T_qq - 2 T_pq) W_cd``;

    all N^2 swaps are scored at once (tested against brute-force rescoring). Used when
    the score has an intra-task term (the within-task term couples every pair of
    tasks, so the per-task-pair shortcut of :func:`_local_search` does not apply).
    """
    W = np.asarray(W, dtype=float)
    T = np.asarray(T, dtype=float)
    tasks = np.array(tasks, dtype=np.int64)
    k, m = tasks.shape
    n = k * m
    idx = tasks.ravel().copy()
    pos = np.empty(n, dtype=np.int64)
    pos[idx] = np.repeat(np.arange(k), m)
    P = np.zeros((n, k))
    P[np.arange(n), pos] = 1.0
    A = W @ P
    dW = np.diag(W).copy()
    ar = np.arange(n)
    tol = 1e-9 * max(1.0, float(np.abs(W).max()) * max(1.0, float(np.abs(T).max())))
    rounds = 0
    while True:
        while rounds < max_rounds:
            NB = A @ T
            H = NB[:, pos]                                  # H[c, d] = NB[c, pos d]
            own = NB[ar, pos]
            Tpq = T[pos][:, pos]
            Tpp = np.diag(T)[pos]
            half = H - own[:, None] - dW[:, None] * (Tpq - Tpp[:, None])
            gain = half + half.T - (Tpp[:, None] + Tpp[None, :] - 2 * Tpq) * W
            gain[pos[:, None] == pos[None, :]] = np.inf
            f = int(np.argmin(gain))
            if not gain.flat[f] < -tol:
                break
            c, d = divmod(f, n)
            p, q = pos[c], pos[d]
            diff = W[:, d] - W[:, c]
            A[:, p] += diff
            A[:, q] -= diff
            i, j = int(np.flatnonzero(idx == c)[0]), int(np.flatnonzero(idx == d)[0])
            idx[i], idx[j] = d, c
            pos[c], pos[d] = q, p
            rounds += 1
        # (the intra-task term does not depend on the task order)
        better = None if rounds >= max_rounds else _reorder_tasks(A, idx, pos, k, m, tol)
        if better is None:
            break
        A, idx, pos = better
        rounds += 1
    return idx.reshape(k, m)


def _extreme(sim, num_tasks, granularities, improve, sign, exact_limit, num_starts=None, intra_weight=0.0):
    from .._validate import check_real
    from .combinatorics import enumerate_sequences, num_sequences

    sim = check_similarity(sim)
    n, k, m = check_num_tasks(sim.shape[0], num_tasks)
    exact_limit = check_int("exact_limit", exact_limit, low=0)
    w = check_real("intra_weight", intra_weight)
    if num_starts is None:
        num_starts = 3 if n <= 64 else 1
    gs = _check_granularities(granularities, n, k)
    clusters = _clusters(sim, gs)
    make = _hard_partition if sign > 0 else _easy_partition
    cands, seen_parts = [], {}
    for g in gs:
        tasks = make(clusters[g], k, m)
        key = tasks.tobytes()
        if key in seen_parts:            # same partition as a coarser/finer granularity
            continue
        seen_parts[key] = g
        X = _task_sums(sim, tasks)
        for order in _greedy_orders(X, sign):
            seq = canonical(tasks[order])
            cands.append((_path_cost(X, order) * _coef(n, k), g, seq))
    # rank the candidates (by the generalised score when w != 0), ties by the canonical rule
    objs = generalised_scores(sim, np.stack([c[2] for c in cands]), w) if w else np.array([c[0] for c in cands])
    cands = [cands[i] for i in canonical_order(np.stack([c[2] for c in cands]), sign * objs)]
    best_s, best_g, best = cands[0]
    info = {"paper_sequence": best.tolist(), "paper_score": float(best_s), "granularity": best_g,
            "granularities": gs, "method": "paper", "intra_weight": w}
    if improve and num_sequences(n, k) <= exact_limit:
        allseq = enumerate_sequences(n, k)
        scores = generalised_scores(sim, allseq, w)
        best = allseq[_pick(allseq, sign * scores)]
        info["method"] = "exhaustive"
    elif improve:
        info["method"] = "local search"
        # local search from the best few distinct candidates; keep the best result
        starts, seen = [], set()
        for _, _, seq in cands:
            key = seq.tobytes()
            if key not in seen:
                seen.add(key)
                starts.append(seq)
            if len(starts) == num_starts:
                break
        if w:
            T = (np.abs(np.arange(k)[:, None] - np.arange(k)[None, :]) == 1).astype(float)
            np.fill_diagonal(T, w * 2 * (k - 1) / k)
            results = [canonical(_local_search_dense(sign * sim, st, T)) for st in starts]
        else:
            results = [canonical(_local_search(sign * sim, st)) for st in starts]
        results = np.stack(results + [r[::-1] for r in results])   # each ties with its reverse
        best = results[_pick(results, sign * generalised_scores(sim, results, w))]
    info["score"] = float(sequence_scores(sim, best[None])[0])
    info["objective"] = float(generalised_scores(sim, best[None], w)[0])
    return best, info


def hard_sequence(sim, num_tasks: int, *, granularities=None, improve: bool = True,
                  exact_limit: int = 20_000, intra_weight: float = 0.0, return_info: bool = False):
    """The hardest class sequence found: minimal inter-task similarity S(O).

    Parameters
    ----------
    sim : array_like, shape (N, N)
        Symmetric class similarity (e.g. :func:`clkit.edge.class_similarity`).
    num_tasks : int
        ``K >= 2``, must divide ``N``.
    granularities : list of int, optional
        Numbers of clusters to try (see :func:`default_granularities`).
    improve : bool
        Improve on the paper's algorithm (default): exhaustive search when
        ``|Omega| <= exact_limit``, else the local search. With ``False`` the paper's
        Algorithm 1 candidate is returned as is.
    exact_limit : int
        Largest number of sequences scored exhaustively (0: always local search).
    intra_weight : float
        0 (default): the paper's S(O). Otherwise optimise the generalised score
        ``S(O) + intra_weight * I(O)`` (:func:`generalised_scores`; beyond the paper):
        the paper's candidates are ranked by it and the local search scores every
        swap with the intra-task term (O(N^2) per swap).
    return_info : bool
        Also return a dict with ``paper_sequence``, ``paper_score`` (the paper's
        candidate and its S), ``score`` (S of the result), ``objective`` (its
        generalised score), ``method`` and the chosen ``granularity``.

    Returns
    -------
    ndarray of int, shape (K, M)
        Tasks in order (classes ascending within a task).

    Examples
    --------
    >>> sim = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    >>> hard_sequence(sim, 2).tolist()   # similar classes together in a task
    [[0, 1], [2, 3]]
    """
    seq, info = _extreme(sim, num_tasks, granularities, improve, +1, exact_limit, intra_weight=intra_weight)
    return (seq, info) if return_info else seq


def easy_sequence(sim, num_tasks: int, *, granularities=None, improve: bool = True,
                  exact_limit: int = 20_000, intra_weight: float = 0.0, return_info: bool = False):
    """The easiest class sequence found: maximal inter-task similarity S(O).

    Same parameters and return value as :func:`hard_sequence` (Algorithm 2 of the paper,
    then local search).

    Examples
    --------
    >>> sim = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    >>> easy_sequence(sim, 2).tolist()   # similar classes split across adjacent tasks
    [[0, 2], [1, 3]]
    """
    seq, info = _extreme(sim, num_tasks, granularities, improve, -1, exact_limit, intra_weight=intra_weight)
    return (seq, info) if return_info else seq


def random_scores(sim, num_tasks: int, num_random: int = 10_000, seed: int = 0) -> np.ndarray:
    """S(O) of ``num_random`` uniformly random class sequences (vectorised).

    Returns
    -------
    ndarray, shape (num_random,)

    Examples
    --------
    >>> random_scores(np.eye(4), 2, num_random=3).tolist()
    [0.0, 0.0, 0.0]
    """
    sim = check_similarity(sim)
    n, k, m = check_num_tasks(sim.shape[0], num_tasks)
    num_random = check_int("num_random", num_random, low=1)
    seed = check_int("seed", seed, low=0)
    rng = np.random.default_rng(seed)
    perms = rng.permuted(np.tile(np.arange(n), (num_random, 1)), axis=1)
    return sequence_scores(sim, perms.reshape(num_random, k, m))


def score_percentile(sim, sequence, num_random: int = 10_000, seed: int = 0) -> float:
    """Percentile (0-100) of a sequence's S(O) among random sequences.

    Mid-rank convention: ``100 * (#{S_r < S} + 0.5 #{S_r == S}) / num_random``, so a
    hard sequence scores near 0 and an easy one near 100.

    Examples
    --------
    >>> sim = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    >>> score_percentile(sim, [[0, 1], [2, 3]], num_random=600) < 25
    True
    """
    sim = check_similarity(sim)
    seq = check_sequence("sequence", sequence, sim.shape[0])
    s = sequence_scores(sim, seq[None])[0]
    r = random_scores(sim, seq.shape[0], num_random, seed)
    tol = 1e-12 * max(1.0, abs(s))
    return float(100.0 * ((r < s - tol).sum() + 0.5 * (np.abs(r - s) <= tol).sum()) / len(r))
