"""The prefix tree of a set of class sequences: training shared by sequences that start alike.

Class-incremental training is causal: what a learner holds after task ``t`` depends
only on the tasks ``1..t`` (and on randomness keyed by them). Sequences that share
their first ``t`` tasks therefore share everything up to task ``t``, so the ground
truth trains each distinct *prefix* once and hands its state to every continuation.
For all sequences of ``N`` classes in ``K`` tasks of ``M`` there are
``N! / ((N - tM)! (M!)^t)`` prefixes of length ``t``: at 8 classes / 4 tasks
28 + 420 + 2,520 + 2,520 = 5,488 task trainings instead of 4 x 2,520 = 10,080
(the last task is determined by the others, so the last two levels are equal).

:func:`prefix_tree` returns the levels; :func:`prefix_code` keys the randomness of a
prefix (minibatch orders), so a sequence trains identically alone, among others, or
as a leaf of a shared prefix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PrefixLevel", "prefix_tree", "prefix_code", "count_prefixes"]


@dataclass(frozen=True)
class PrefixLevel:
    """One level ``t`` (0-based) of the prefix tree.

    Attributes
    ----------
    parent : ndarray of int, shape (n_t,)
        Index of each node's parent among the nodes of level ``t - 1`` (0 at ``t = 0``:
        the single root, before any task).
    prefixes : ndarray of int, shape (n_t, t + 1, M)
        The tasks ``0..t`` of each node (canonical: classes ascending within a task).
    node_of : ndarray of int, shape (L,)
        The node of level ``t`` that each input sequence passes through.
    codes : list of int
        :func:`prefix_code` of each node.
    """

    parent: np.ndarray
    prefixes: np.ndarray
    node_of: np.ndarray
    codes: list


def prefix_code(prefix, num_classes: int) -> int:
    """A stable integer for a prefix of tasks: its classes as digits in base ``num_classes``.

    Unique among prefixes of the same length (the task boundaries follow from the
    task size), so it can key the randomness of a prefix.

    Examples
    --------
    >>> prefix_code([[0, 1]], 4), prefix_code([[0, 1], [2, 3]], 4), prefix_code([[2, 3]], 4)
    (4, 228, 14)
    """
    flat = np.asarray(prefix).ravel()
    return int(sum(int(c) * num_classes ** i for i, c in enumerate(flat)))


def prefix_tree(sequences, *, share: bool = True) -> list[PrefixLevel]:
    """The levels of the prefix tree of ``sequences`` (shape (L, K, M), canonical).

    Parameters
    ----------
    sequences : array_like of int, shape (L, K, M)
    share : bool
        ``False`` gives the trivial tree (one node per sequence at every level): the same
        results, trained without sharing (for checks and timings).

    Returns
    -------
    list of PrefixLevel, one per task

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> levels = prefix_tree(enumerate_sequences(6, 3))
    >>> [len(lv.parent) for lv in levels]
    [15, 90, 90]
    >>> levels[1].prefixes[levels[1].node_of[5]].tolist()  # sequence 5 is [[0, 1], [4, 5], [2, 3]]
    [[0, 1], [4, 5]]
    """
    seqs = np.sort(np.asarray(sequences, dtype=np.int64), axis=-1)
    if seqs.ndim != 3:
        raise ValueError(f"sequences must have shape (L, K, M), got {seqs.shape}")
    L, K, M = seqs.shape
    n = K * M
    levels = []
    prev_node = np.zeros(L, dtype=np.int64)
    for t in range(K):
        flat = seqs[:, : t + 1].reshape(L, -1)
        if share:
            uniq, first, node_of = np.unique(flat, axis=0, return_index=True, return_inverse=True)
            node_of = node_of.ravel()
            parent = prev_node[first]
        else:
            uniq, node_of = flat, np.arange(L)
            parent = np.arange(L) if t else np.zeros(L, dtype=np.int64)
        prefixes = uniq.reshape(len(uniq), t + 1, M)
        levels.append(PrefixLevel(parent=np.asarray(parent, dtype=np.int64), prefixes=prefixes,
                                  node_of=np.asarray(node_of, dtype=np.int64),
                                  codes=[prefix_code(p, n) for p in prefixes]))
        prev_node = node_of
    return levels


def count_prefixes(sequences) -> list[int]:
    """Distinct prefixes per length: the task trainings the tree needs (``L`` each without it).

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> count_prefixes(enumerate_sequences(8, 4))
    [28, 420, 2520, 2520]
    """
    return [len(lv.parent) for lv in prefix_tree(sequences)]
