"""Accuracy per class of trained nodes, predicting among the classes each has seen.

The one evaluation shared by the prefix-tree walk (:mod:`clkit.edge.learners`), the ground truth by
state (:mod:`clkit.edge.state_truth`) and the budget's timer (:mod:`clkit.edge.budget`): every test
image of every class is scored by each node, the logits of the classes a node has not seen are masked
out, and the accuracy is averaged per class (each class has ``n_test`` images). It imports nothing of
theirs, so the imports go one way (learners -> state_truth -> node_accuracy).
"""

from __future__ import annotations

import torch

__all__ = ["NEG", "masked_logits", "class_accuracy"]

#: the logit given to a class a node has not seen (never its argmax)
NEG = -1e9


def masked_logits(logits, mask):
    """``logits`` (n, B, C) with the classes outside ``mask`` (n, C) set to :data:`NEG`.

    Examples
    --------
    >>> masked_logits(torch.zeros(1, 2, 3), torch.tensor([[True, False, True]]))[0, 0].tolist()
    [0.0, -1000000000.0, 0.0]
    """
    return logits.masked_fill(~mask[:, None, :], NEG)


def class_accuracy(backend, state, xall, yall, nte: int, seen, eval_nodes: int):
    """Accuracy per class of a level's ``n`` nodes, predicting among the classes each has ``seen``.

    Parameters
    ----------
    backend : object
        Has ``scores(state, rows, x) -> (len(rows), N, C)`` logits.
    state : object
        The backend's state of the level's nodes.
    xall : torch.Tensor, shape (N, ...)
        Every test input, class by class (``N = C * nte``).
    yall : torch.Tensor of int, shape (N,)
        Their labels (``arange(C).repeat_interleave(nte)``).
    nte : int
        Test inputs per class.
    seen : torch.Tensor of bool, shape (n, C)
        The classes each node predicts among.
    eval_nodes : int
        Nodes scored at a time.

    Returns
    -------
    torch.Tensor, shape (n, C)
        On ``xall``'s device.

    Examples
    --------
    >>> class B:
    ...     def scores(self, state, rows, x):
    ...         return torch.tensor([[[2.0, 1.0, 0.0], [0.0, 1.0, 3.0], [0.0, 1.0, 3.0]]])[rows]
    >>> acc = class_accuracy(B(), None, torch.zeros(3, 1), torch.tensor([0, 1, 2]), 1,
    ...                      torch.tensor([[True, True, False]]), 1)
    >>> acc.tolist()          # class 2 unseen: its image's best seen class is 1
    [[1.0, 1.0, 0.0]]
    """
    n, C = seen.shape
    out = torch.empty(n, C, device=xall.device)
    with torch.no_grad():
        for s in range(0, n, eval_nodes):
            rows = slice(s, min(n, s + eval_nodes))
            pred = masked_logits(backend.scores(state, rows, xall), seen[rows]).argmax(dim=-1)
            out[rows] = (pred == yall).float().reshape(-1, C, nte).mean(dim=2)
    return out
