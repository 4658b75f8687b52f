"""The space of class sequences: counting (Lemma 1), enumeration and RS sampling.

A *class sequence* splits ``num_classes`` classes into ``num_tasks`` ordered tasks of
equal size ``M = num_classes / num_tasks``. The order of tasks matters, the order of
classes inside a task does not. In clkit a sequence is either a list of tasks, each a
list of class indices, or an integer array of shape ``(num_tasks, M)``; many sequences
are an array of shape ``(L, num_tasks, M)``. Canonical form: classes sorted inside each
task.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .._validate import check_int, check_type

__all__ = [
    "num_sequences",
    "enumerate_sequences",
    "random_sequences",
    "check_sequence",
    "check_num_tasks",
    "canonical",
    "log_num_sequences",
    "RS_SEEDS",
    "RS_SHUFFLES",
]

#: The random seeds of the conventional RS protocol (PyCIL and the papers it cites).
RS_SEEDS = (0, 42, 1993)

#: the RS protocol's class-order generators (:func:`random_sequences`): PyCIL's ``RandomState`` stream and
#: the EDGE release's ``default_rng``
RS_SHUFFLES = ("pycil", "edge_release")


def check_num_tasks(num_classes, num_tasks) -> tuple[int, int, int]:
    """Validate a split of ``num_classes`` into ``num_tasks`` equal tasks; return (N, K, M).

    Examples
    --------
    >>> check_num_tasks(6, 3)
    (6, 3, 2)
    >>> check_num_tasks(10, 3)
    Traceback (most recent call last):
    ...
    ValueError: num_tasks must divide num_classes into equal tasks: 10 classes cannot be split into 3 tasks (allowed: a divisor of 10 that is >= 2, e.g. [2, 5, 10])
    """
    num_classes = check_int("num_classes", num_classes, low=2)
    num_tasks = check_int("num_tasks", num_tasks, low=2)
    if num_classes % num_tasks:
        divisors = [d for d in range(2, num_classes + 1) if num_classes % d == 0]
        raise ValueError(
            f"num_tasks must divide num_classes into equal tasks: {num_classes} classes cannot be "
            f"split into {num_tasks} tasks (allowed: a divisor of {num_classes} that is >= 2, "
            f"e.g. {divisors[:6]})")
    return num_classes, num_tasks, num_classes // num_tasks


def num_sequences(num_classes: int, num_tasks: int) -> int:
    """Number of distinct class sequences, :math:`|\\Omega| = N! / (M!)^K` (Lemma 1).

    Exact Python integer for any size.

    Parameters
    ----------
    num_classes : int
        ``N``, the number of classes.
    num_tasks : int
        ``K``, the number of tasks; must divide ``N``.

    Returns
    -------
    int

    Examples
    --------
    >>> num_sequences(6, 3)
    90
    >>> num_sequences(9, 3)
    1680
    >>> len(str(num_sequences(100, 10)))  # about 10^92
    93
    """
    n, k, m = check_num_tasks(num_classes, num_tasks)
    return math.factorial(n) // math.factorial(m) ** k


def log_num_sequences(num_classes: int, num_tasks: int) -> float:
    """Natural logarithm of :func:`num_sequences` (via ``lgamma``; fast for any size).

    Examples
    --------
    >>> round(log_num_sequences(6, 3), 6) == round(math.log(90), 6)
    True
    """
    n, k, m = check_num_tasks(num_classes, num_tasks)
    return math.lgamma(n + 1) - k * math.lgamma(m + 1)


def enumerate_sequences(num_classes: int, num_tasks: int, *, max_bytes: int = 2**30) -> np.ndarray:
    """All ordered equal partitions of ``range(num_classes)`` into ``num_tasks`` tasks.

    Parameters
    ----------
    num_classes, num_tasks : int
    max_bytes : int
        Refuse (``ValueError``) when the result would take more memory than this.

    Returns
    -------
    ndarray of int64, shape (num_sequences(N, K), K, M)
        Canonical form (classes ascending within a task), in lexicographic order.

    Examples
    --------
    >>> seqs = enumerate_sequences(4, 2)
    >>> seqs.shape
    (6, 2, 2)
    >>> seqs[0].tolist(), seqs[-1].tolist()
    ([[0, 1], [2, 3]], [[2, 3], [0, 1]])
    """
    n, k, m = check_num_tasks(num_classes, num_tasks)
    total = num_sequences(n, k)
    need = total * n * 8
    if need > max_bytes:
        raise ValueError(
            f"num_classes={n}, num_tasks={k} has {total:.3e} sequences ({need / 2**30:.3g} GiB as int64), "
            f"more than max_bytes={max_bytes} allows; enumerate only small settings (e.g. 6/3 -> 90, "
            f"9/3 -> 1680, 8/4 -> 2520) and sample larger ones with random_sequences")
    # build task by task: partial sequences (P, t*m) and the classes still free
    combos_cache = {}
    partial = np.zeros((1, 0), dtype=np.int64)
    for t in range(k):
        free_count = n - t * m
        if free_count not in combos_cache:
            combos_cache[free_count] = np.array(list(itertools.combinations(range(free_count), m)),
                                                dtype=np.int64).reshape(-1, m)
        combos = combos_cache[free_count]                      # (C, m) positions among free classes
        used = np.zeros((partial.shape[0], n), dtype=bool)
        if partial.shape[1]:
            np.put_along_axis(used, partial, True, axis=1)
        free = np.nonzero(~used)[1].reshape(partial.shape[0], free_count)   # ascending per row
        chosen = free[:, combos]                                # (P, C, m)
        P, C = chosen.shape[:2]
        partial = np.concatenate([np.repeat(partial, C, axis=0), chosen.reshape(P * C, m)], axis=1)
    out = partial.reshape(total, k, m)
    return out


def random_sequences(num_classes: int, num_tasks: int, seeds=RS_SEEDS, *, shuffle: str = "pycil") -> np.ndarray:
    """The RS protocol: one class sequence per seed, from a shuffled class order.

    Each seed shuffles ``range(num_classes)`` with a local generator and cuts the order into
    ``num_tasks`` consecutive tasks. Two generators, named by ``shuffle`` (:data:`RS_SHUFFLES`):

    * ``"pycil"``: ``numpy.random.RandomState(seed).permutation(N)``, the same stream as PyCIL's
      ``DataManager`` (``np.random.seed(seed); np.random.permutation(N)``), so seeds 0, 42 and
      1993 give the class orders of the papers that follow that code;
    * ``"edge_release"``: ``numpy.random.default_rng(seed).permutation(N)``, what the EDGE
      authors' released trainers do (``PyCIL/trainer.py`` and ``PILOT/trainer.py`` of
      AIGNLAI/EDGE, ``--eval random``; there over all classes of the dataset).

    Parameters
    ----------
    num_classes, num_tasks : int
    seeds : sequence of int
        Default: ``(0, 42, 1993)``.
    shuffle : {"pycil", "edge_release"}

    Returns
    -------
    ndarray of int64, shape (len(seeds), K, M), canonical form

    Examples
    --------
    >>> random_sequences(6, 3, seeds=(0,)).tolist()
    [[[2, 5], [1, 3], [0, 4]]]
    >>> random_sequences(6, 3, seeds=(0,), shuffle="edge_release").tolist()
    [[[2, 3], [4, 5], [0, 1]]]
    """
    from .._validate import check_choice

    n, k, m = check_num_tasks(num_classes, num_tasks)
    check_type("seeds", seeds, (list, tuple), "a list of integer seeds")
    check_choice("shuffle", shuffle, list(RS_SHUFFLES))
    if len(seeds) == 0:
        raise ValueError("seeds must name at least one seed, got []")
    out = []
    for s in seeds:
        s = check_int("seeds", s, low=0, high=2**32 - 1)
        rng = np.random.RandomState(s) if shuffle == "pycil" else np.random.default_rng(s)
        order = rng.permutation(n)
        out.append(order.reshape(k, m))
    return canonical(np.stack(out))


def canonical(sequences) -> np.ndarray:
    """Sort classes within each task (the canonical form of a sequence).

    Examples
    --------
    >>> canonical([[3, 1], [2, 0]]).tolist()
    [[1, 3], [0, 2]]
    """
    return np.sort(np.asarray(sequences, dtype=np.int64), axis=-1)


def check_sequence(name: str, sequence, num_classes: int | None = None) -> np.ndarray:
    """Validate one class sequence (list of equal-size tasks covering each class once).

    Returns it as an int64 array of shape ``(K, M)``.

    Examples
    --------
    >>> check_sequence("sequence", [[0, 1], [2, 3]]).shape
    (2, 2)
    >>> check_sequence("sequence", [[0, 1], [1, 3]])
    Traceback (most recent call last):
    ...
    ValueError: sequence must use every class index 0..3 exactly once, got [[0, 1], [1, 3]]
    """
    try:
        arr = np.asarray(sequence)
    except ValueError:  # ragged
        arr = None
    if arr is None or arr.ndim != 2 or arr.dtype == object:
        raise ValueError(f"sequence must be a list of tasks of equal size (a K x M integer array), "
                         f"got {sequence!r}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integer class indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.shape[0] < 2:
        raise ValueError(f"{name} must have at least 2 tasks, got {arr.shape[0]}")
    n = arr.size if num_classes is None else num_classes
    if sorted(arr.ravel().tolist()) != list(range(n)):
        raise ValueError(f"{name} must use every class index 0..{n - 1} exactly once, got {arr.tolist()}")
    return arr
