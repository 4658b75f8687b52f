"""FLOPs and passes of one strategy's training, for notebook 02's budgets (:mod:`clkit.edge.budget`,
:mod:`clkit.edge.budget_set`): its epochs per task with every stage counted (:func:`strategy_epochs`), the
extra first-task passes of a stage before its own (:func:`first_task_extra`), and the FLOPs of a training
step and of a forward pass per input row of its model, counted on ``meta`` (nothing computed).
"""

from __future__ import annotations

import torch

from ..budget import training_flops

__all__ = ["strategy_epochs", "first_task_extra"]


def strategy_epochs(strat, config, t: int) -> int:
    """Passes over its task's rows a strategy node makes in task ``t`` (0-based), every stage counted.

    The driver's schedule (``config.task_epochs``: its ``init_epochs`` for the first task) or, for a
    strategy that schedules itself, its own ``init_epochs`` (MEMO, FOSTER); plus the stages that pass
    over the task's rows again: FOSTER's compression (``compression_epochs``, default its epochs) after
    every task but the first, HiDe-Prompt's task-identity training (``tii_epochs``, on cached features:
    counted as passes, an over-estimate). Classifier alignment on sampled features (HiDe-Prompt's and
    MOS's ``ca_epochs``) does not touch the images and is not counted.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from clkit.edge.learners import LearnerConfig
    >>> foster = SimpleNamespace(epochs=170, init_epochs=200, compression_epochs=130)
    >>> [strategy_epochs(foster, LearnerConfig(), t) for t in (0, 1)]
    [200, 300]
    >>> strategy_epochs(SimpleNamespace(epochs=170), LearnerConfig(init_epochs=200), 0)
    200
    """
    own_init = getattr(strat, "init_epochs", None)
    if t == 0 and isinstance(own_init, int):
        n = own_init
    else:
        n = config.task_epochs(t, strat.epochs) if config is not None else strat.epochs
    if t > 0 and hasattr(strat, "compression_epochs"):
        comp = strat.compression_epochs
        n += strat.epochs if comp is None else int(comp)
    if isinstance(getattr(strat, "tii_epochs", None), int):
        n += strat.tii_epochs
    return int(n)


def _row_flops(strat, xtr) -> tuple | None:
    """``(training step, forward pass)`` FLOPs per input row of a strategy's model
    (:func:`clkit.budget.training_flops` on two rows, on ``meta``). A model none of whose parameters needs a
    gradient (RanPAC's frozen extractor and closed-form head) has no backward: its pass is a forward, counted
    alone. ``None`` when the counter cannot trace it."""
    try:
        f = training_flops(strat.model, xtr[0, :2].clone())
    except Exception:  # noqa: BLE001 -- no backward to count (or none that traces): the forward alone
        try:
            fwd = _forward_flops(strat.model, xtr[0, :2].clone()) / 2
        except Exception:  # noqa: BLE001 -- a model the counter cannot trace is left out of the estimate
            return None
        return fwd, fwd
    return f["step"] / 2, f["forward"] / 2


def _forward_flops(model, x) -> float:
    """FLOPs of a forward pass of ``model`` on ``x`` (a copy on ``meta``, nothing computed)."""
    import copy

    from torch.utils.flop_counter import FlopCounterMode

    meta = copy.deepcopy(model).to("meta").eval()
    with torch.no_grad(), FlopCounterMode(display=False) as count:
        meta(torch.empty(x.shape, dtype=x.dtype, device="meta"))
    return float(count.get_total_flops())


def first_task_extra(strat) -> float:
    """Extra passes over the first task's rows, in forward passes, of a stage before a strategy's own: RanPAC's
    first-session adapter (``tuned_epochs`` epochs of training through the ViT, each about three forward
    passes: forward and backward), else 0.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> first_task_extra(SimpleNamespace(first_session_adaptation=True, tuned_epochs=20)), first_task_extra(object())
    (60.0, 0.0)
    """
    if getattr(strat, "first_session_adaptation", False):
        return 3.0 * float(getattr(strat, "tuned_epochs", 0))
    return 0.0


def _strategy_flops(strat, xtr, widths, M: int, ntr: int, nte: int, config=None, rows=None) -> float | None:
    """FLOPs of a strategy's ground truth: every node's ``epochs`` passes over its task's ``M * ntr`` rows at a
    training step's FLOPs per row (:func:`clkit.budget.training_flops` on its model, on ``meta``) and its
    evaluation on the test rows of the classes seen so far at a forward pass's; ``None`` when its model cannot
    be counted (the estimate then leaves it out). ``rows``: :func:`_row_flops`, when already counted."""
    rows = _row_flops(strat, xtr) if rows is None else rows
    if rows is None:
        return None
    f = {"step": 2 * rows[0], "forward": 2 * rows[1]}
    closed = getattr(strat, "optimizer", True) is None                       # closed-form heads: one pass

    def epochs(t):
        return 1 if closed else strategy_epochs(strat, config, t)
    rows = sum(n * epochs(t) * M * ntr for chunk in widths for t, n in enumerate(chunk))
    evals = sum(n * (t + 1) * M * nte for chunk in widths for t, n in enumerate(chunk))
    first = sum(chunk[0] for chunk in widths) * M * ntr * first_task_extra(strat)    # RanPAC's adapter stage
    return float(rows * f["step"] / 2 + (evals + first) * f["forward"] / 2)
