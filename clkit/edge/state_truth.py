"""The ground truth by state: one training per state a method's training depends on, not per prefix.

The prefix tree (:mod:`clkit.edge.prefix`) trains every distinct prefix of tasks once. A
method may declare that its state after task ``t`` depends on less -- its ``truth_state``
attribute (a class attribute, or a property where the constructor's settings decide it), one
of :data:`~clkit.edge.prefix.TRUTH_STATES`:

- ``"prefix"`` (the default of every strategy that declares nothing): the tasks ``1..t`` in order;
- ``"set"``: the set of classes seen (SimpleCIL's class means; RanPAC with a fixed ridge: its
  ``G`` and ``C`` are sums over the rows seen);
- ``"set_last"``: the set and the last task (RanPAC choosing its ridge on the last task's rows;
  the split's permutation comes from the strategy's generator, whose state after ``t`` tasks of
  equal size depends on ``t`` only);
- ``"first_set"`` / ``"first_set_last"``: the same with the first task too (RanPAC whose
  backbone is adapted on the first task: its features -- hence its statistics -- depend on
  which classes the first task held, so each first task needs its own adapted ViT: at 10
  classes / 5 tasks 45 adapted ViTs, one per first task, each shared by every state below it).

:func:`state_truth` trains each state once (:func:`~clkit.edge.prefix.state_tree`: each node
from the node of its representative's previous state, depth first, so ``K + 1`` strategies are
alive at a time), evaluates it once -- the accuracy on every class, predicting among the
classes seen -- and looks every sequence up: ``R[l, t, j]`` is the mean over task ``j``'s
classes of sequence ``l``'s state after task ``t``. The result is the prefix-tree walk's
(:func:`~clkit.edge.learners.train_strategy_sequences`), bit for bit where the declaration holds
and sums in another order give the same prediction (tested on all 90 orders at 6/3 for
SimpleCIL, RanPAC with a fixed and with a chosen ridge). At 6/3 that is 31 (``"set"``) or 120
(``"set_last"``) trainings instead of 195; at 10/5, 511 or 5,760 instead of 247,005.

A declaration is a claim about the method: a wrong one gives wrong accuracies (a method whose
state depends on the order would get the representative's order for every member). Declare
``"prefix"`` when unsure.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import torch

from ..device import move, to_host
from .node_accuracy import class_accuracy
from .prefix import TRUTH_STATES, check_truth_state, count_states, state_tree

__all__ = ["TRUTH_STATES", "declared_state", "state_truth", "state_counts", "by_declared_state"]


def declared_state(strategy) -> str:
    """The ``truth_state`` a strategy (class or instance) declares; ``"prefix"`` when it declares none.

    Examples
    --------
    >>> from clkit.strategies.prototype import SimpleCIL
    >>> from clkit.strategies import Strategy
    >>> declared_state(SimpleCIL), declared_state(Strategy)
    ('set', 'prefix')
    """
    state = getattr(strategy, "truth_state", "prefix")
    if not isinstance(state, str):                # a property read on the class
        return "prefix"
    return check_truth_state(state)


def state_counts(sequences, state: str) -> dict:
    """Trainings the truth by ``state`` needs against the prefix tree's, per task and in all.

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> c = state_counts(enumerate_sequences(6, 3), "set_last")
    >>> c["states"], c["prefix_nodes"], c["states_per_task"]
    (120, 195, [15, 90, 15])
    """
    per = count_states(sequences, state)
    pre = count_states(sequences, "prefix")
    return {"state": check_truth_state(state), "states_per_task": per, "states": int(sum(per)),
            "prefix_nodes_per_task": pre, "prefix_nodes": int(sum(pre))}


def _accuracy_per_class(backend, state, xall, yall, nte, seen):
    """Accuracy (C,) of one strategy on every class's test images, predicting among ``seen`` (1, C)."""
    return class_accuracy(backend, state, xall, yall, nte, seen, 1)[0]


def state_truth(backend, xte, seqs, state: str, progress=None, root=None) -> dict:
    """Train ``backend`` (a one-strategy-per-node backend of :mod:`clkit.edge.learners`) once per state of
    ``seqs`` and look every sequence up; the same dictionary as the prefix-tree walk.

    Parameters
    ----------
    backend : clkit.edge.learners._Sequential
        ``root()``, ``train(state, prefixes, codes, t, seen, old)``, ``scores(state, rows, x)`` and ``device``.
    xte : torch.Tensor, shape (C, n_test, ...)
        Test inputs per class.
    seqs : ndarray of int, shape (L, K, M)
        Canonical sequences.
    state : str
        One of :data:`~clkit.edge.prefix.TRUTH_STATES`.
    progress : callable, optional
        Called after each task level is complete (``K`` calls).
    root : list, optional
        ``backend.root()`` when the caller has built it already.

    Returns
    -------
    dict
        ``acc_matrix`` (L, K, K), ``seen_acc`` (L, K), ``avg_acc`` (L,), ``final_acc`` (L,) as
        :func:`~clkit.edge.learners.train_sequences`; ``truth_state``; ``states_per_task`` (the
        trainings made per task).
    """
    state = check_truth_state(state)
    seqs = np.sort(np.asarray(seqs, dtype=np.int64), axis=-1)
    L, K, M = seqs.shape
    C, nte = xte.shape[:2]
    dev = backend.device
    xall = move(xte.reshape(C * nte, *xte.shape[2:]), dev)
    yall = torch.arange(C, device=dev).repeat_interleave(nte)
    levels = state_tree(seqs, state)
    children = [[[] for _ in range(len(levels[t].parent))] for t in range(K - 1)]
    for t in range(1, K):
        for i, p in enumerate(levels[t].parent):
            children[t - 1][int(p)].append(i)
    class_acc = [torch.full((len(lv.parent), C), float("nan"), device=dev) for lv in levels]
    left = [len(lv.parent) for lv in levels]

    def visit(t, i, st):
        level = levels[t]
        prefix = level.prefixes[i]
        seen = torch.zeros(1, C, dtype=torch.bool, device=dev)
        seen[0, move(torch.as_tensor(prefix[:t].reshape(-1)), dev)] = True
        old = seen.clone()
        seen[0, move(torch.as_tensor(prefix[t]), dev)] = True
        st = backend.train(st, level.prefixes[i:i + 1], level.codes[i:i + 1], t, seen, old)
        class_acc[t][i] = _accuracy_per_class(backend, st, xall, yall, nte, seen)
        left[t] -= 1
        if left[t] == 0 and progress is not None:
            progress()
        if t + 1 < K:
            kids = children[t][i]
            for j, k in enumerate(kids):
                visit(t + 1, k, st if j == len(kids) - 1 else copy.deepcopy(st))

    root = backend.root() if root is None else root
    first = range(len(levels[0].parent))
    for j, i in enumerate(first):
        visit(0, i, root if j == len(first) - 1 else copy.deepcopy(root))
    R = np.full((L, K, K), np.nan)
    for t, level in enumerate(levels):
        # the lookup: sequence l's tasks 0..t read from its state's accuracy per class, averaged over each
        # task's classes on the device as the prefix walk averages them (a float32 mean over the M classes)
        per_seq = class_acc[t][move(torch.as_tensor(level.node_of), dev)]                       # (L, C)
        tasks = move(torch.as_tensor(seqs[:, : t + 1].reshape(L, -1)), dev)
        R[:, t, : t + 1] = to_host(per_seq.gather(1, tasks).reshape(L, t + 1, M).mean(dim=2)).astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        seen_acc = np.stack([np.nanmean(R[:, t, : t + 1], axis=1) for t in range(K)], axis=1)
    return {"acc_matrix": R, "seen_acc": seen_acc, "avg_acc": seen_acc.mean(axis=1), "final_acc": seen_acc[:, -1],
            "truth_state": state, "states_per_task": [len(lv.parent) for lv in levels]}


def by_declared_state(backend, xte, seqs, progress=None):
    """:func:`state_truth` with the state the backend's strategy declares, or ``None`` when it declares
    ``"prefix"`` (the caller then walks the prefix tree). The hook of
    :func:`~clkit.edge.learners.train_strategy_sequences`."""
    root = backend.root()
    state = declared_state(root[0])
    if state == "prefix":
        return None
    return state_truth(backend, xte, seqs, state, progress, root=root)
