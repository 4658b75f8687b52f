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

**Smaller states.** Some methods' state after task ``t`` depends on less than the whole prefix
(the ground truth by state, :mod:`clkit.edge.state_truth`): on the *set* of classes seen
(``"set"``: SimpleCIL's class means, RanPAC with a fixed ridge), on that set and the last task
(``"set_last"``: RanPAC choosing its ridge on the last task), or, for a method that adapts its
backbone on the first task, on the first task too (``"first_set"``, ``"first_set_last"``).
:func:`state_tree` groups the prefixes of each level by such a key and keeps one
*representative* sequence per state: the state's node is trained once, from the node of its
representative's previous state, and every sequence of the state looks it up. The parents form
a tree again (each state has one parent), so the depth-first walk keeps ``K + 1`` states alive.
At 6 classes / 3 tasks: 31 states (``"set"``) or 120 (``"set_last"``) instead of 195 prefixes;
at 10 / 5: 511 or 5,760 instead of 247,005 (:func:`count_states`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PrefixLevel", "prefix_tree", "prefix_code", "count_prefixes", "TRUTH_STATES", "check_truth_state",
           "state_keys", "state_tree", "count_states"]

#: the states a method may declare (its ``truth_state``), from the largest to the smallest
TRUTH_STATES = ("prefix", "first_set_last", "first_set", "set_last", "set")


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


def check_truth_state(state) -> str:
    """``state`` if it is one of :data:`TRUTH_STATES`, else a ``ValueError`` naming it.

    Examples
    --------
    >>> check_truth_state("set")
    'set'
    """
    if not isinstance(state, str) or state not in TRUTH_STATES:
        raise ValueError(f"truth_state must be one of {', '.join(TRUTH_STATES)}, got {state!r}")
    return state


def state_keys(sequences, t: int, state: str) -> np.ndarray:
    """The state key of every sequence after task ``t`` (0-based): one row per sequence, equal rows for
    equal states.

    ``"prefix"``: the tasks ``0..t``; ``"set"``: the classes seen, sorted; ``"set_last"``: those and task
    ``t``; ``"first_set"``: task 0 and the set; ``"first_set_last"``: task 0, the set and task ``t``.

    Parameters
    ----------
    sequences : array_like of int, shape (L, K, M)
        Canonical (classes ascending within a task).
    t : int
    state : str
        One of :data:`TRUTH_STATES`.

    Returns
    -------
    ndarray of int, shape (L, w)

    Examples
    --------
    >>> s = np.array([[[0, 1], [2, 3], [4, 5]], [[2, 3], [0, 1], [4, 5]]])
    >>> state_keys(s, 1, "set").tolist(), state_keys(s, 1, "set_last").tolist()
    ([[0, 1, 2, 3], [0, 1, 2, 3]], [[0, 1, 2, 3, 2, 3], [0, 1, 2, 3, 0, 1]])
    """
    seqs = np.asarray(sequences, dtype=np.int64)
    state = check_truth_state(state)
    L = len(seqs)
    prefix = seqs[:, : t + 1].reshape(L, -1)
    if state == "prefix":
        return prefix
    parts = [np.sort(prefix, axis=1)]
    if state.startswith("first_"):
        parts.insert(0, seqs[:, 0])
    if state.endswith("_last"):
        parts.append(seqs[:, t])
    return np.concatenate(parts, axis=1)


def _unique_rows(keys: np.ndarray, base: int):
    """``np.unique(keys, axis=0, return_index=True, return_inverse=True)`` without the rows: each row read as
    one integer in base ``base`` when it fits in 62 bits (ten times faster than the row-wise unique)."""
    w = keys.shape[1]
    if w * np.log2(max(base, 2)) < 62:
        ids = keys @ (base ** np.arange(w - 1, -1, -1, dtype=np.int64))
        _, first, inv = np.unique(ids, return_index=True, return_inverse=True)
    else:
        _, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return first, np.asarray(inv, dtype=np.int64).ravel()


def state_tree(sequences, state: str = "prefix") -> list[PrefixLevel]:
    """The levels of the tree of *states* of ``sequences`` (shape (L, K, M), canonical).

    A level's nodes are the distinct states after its task (:func:`state_keys`); each node's
    ``prefixes`` row is the prefix of its *representative*, the first sequence in the state, and its
    ``parent`` is the node of the representative's previous state. Training each node from its parent
    on the representative's task gives every state once, provided the method's state is what it
    declares (then every sequence of a node holds the representative's state). ``"prefix"`` gives
    :func:`prefix_tree`'s levels.

    Parameters
    ----------
    sequences : array_like of int, shape (L, K, M)
    state : str
        One of :data:`TRUTH_STATES`.

    Returns
    -------
    list of PrefixLevel, one per task

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> [len(lv.parent) for lv in state_tree(enumerate_sequences(6, 3), "set")]
    [15, 15, 1]
    """
    seqs = np.sort(np.asarray(sequences, dtype=np.int64), axis=-1)
    if seqs.ndim != 3:
        raise ValueError(f"sequences must have shape (L, K, M), got {seqs.shape}")
    state = check_truth_state(state)
    L, K, M = seqs.shape
    n = K * M
    levels = []
    prev_node = np.zeros(L, dtype=np.int64)
    for t in range(K):
        first, node_of = _unique_rows(state_keys(seqs, t, state), n)
        prefixes = seqs[first, : t + 1]
        levels.append(PrefixLevel(parent=np.asarray(prev_node[first], dtype=np.int64), prefixes=prefixes,
                                  node_of=node_of, codes=[prefix_code(p, n) for p in prefixes]))
        prev_node = node_of
    return levels


def count_states(sequences, state: str = "prefix") -> list[int]:
    """Distinct states per task: the trainings the ground truth by state needs.

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> s = enumerate_sequences(6, 3)
    >>> [sum(count_states(s, k)) for k in ("prefix", "first_set_last", "first_set", "set_last", "set")]
    [195, 195, 120, 120, 31]
    """
    seqs = np.sort(np.asarray(sequences, dtype=np.int64), axis=-1)
    if seqs.ndim != 3:
        raise ValueError(f"sequences must have shape (L, K, M), got {seqs.shape}")
    n = seqs.shape[1] * seqs.shape[2]
    return [len(_unique_rows(state_keys(seqs, t, state), n)[0]) for t in range(seqs.shape[1])]
