"""Continual forecasting under a taskification (the paper's Sec. 5.1 protocol).

Every task ``k`` of a taskification holds the windows of all series whose context
and target lie in ``[t_{k-1}, t_k)``. Inside each task the windows are split in
time order: the first 80 % of target steps for training, the next 10 % for
validation, the last 10 % for test (the paper gives the 80/10/10 proportions; the
chronological order is our choice, so no test step precedes a training step). The
target of series ``s`` in task ``k`` is divided by its maximum over the task's
training steps (the paper's per-task target normalisation); inputs are
standardised per window inside the model.

A strategy from :mod:`clkit.strategies` is trained task after task with AdamW,
``ReduceLROnPlateau`` (factor 0.1 after ``lr_patience`` stagnant epochs) and early
stopping on the task's validation MSE (``patience`` epochs; the best weights are
restored before ``after_task``). ``M[i, j]`` is the test MSE x 10^3 on task ``j``
after training on task ``i``; average MSE is the mean of the last row, and BWT
and forgetting are the paper's regression forms (:mod:`clkit.metrics` with
``higher_is_better=False``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from .._seed import torch_seeded, torch_threads
from .._validate import check_int, check_real
from ..metrics import average_accuracy, backward_transfer, forgetting
from ..strategies import Task, make_strategy, take
from .boundaries import Taskification

__all__ = ["ForecastTask", "make_forecast_tasks", "train_with_early_stopping", "continual_forecasting",
           "regression_cl_metrics"]


@dataclass
class ForecastTask:
    """Train / validation / test windows of one task (tensors ``x`` (N, context, F), ``y`` (N, 1))."""

    train: Task
    val: Task
    test: Task


def make_forecast_tasks(values, taskification: Taskification, context: int, target_index: int, *,
                        stride: int = 1, split=(0.8, 0.1, 0.1)) -> list[ForecastTask]:
    """Cut ``values`` (num_series, T, F) into per-task forecasting windows (next-step target).

    Parameters
    ----------
    values : array_like, shape (num_series, T, F)
    taskification : Taskification
    context : int
        Input length in steps (paper: two days = 288 steps at 10 minutes).
    target_index : int
        Feature predicted at the next step.
    stride : int
        Keep every ``stride``-th target step (a cheaper, thinner sample).
    split : tuple of 3 floats
        Train / validation / test shares of each task's target steps, in time order.

    Returns
    -------
    list of ForecastTask, one per task

    Examples
    --------
    >>> from clkit.taskification import fixed_windows
    >>> v = np.random.default_rng(0).random((2, 100, 3))
    >>> tasks = make_forecast_tasks(v, fixed_windows(100, 50), context=10, target_index=0)
    >>> len(tasks), tuple(tasks[0].train.x.shape), tuple(tasks[0].train.y.shape)
    (2, (64, 10, 3), (64, 1))
    >>> float(tasks[0].train.y.max())     # divided by the training maximum
    1.0
    """
    arr = np.asarray(values, dtype=np.float32)
    if arr.ndim != 3:
        raise ValueError(f"values must have shape (num_series, T, F), got {arr.shape}")
    S, T, F = arr.shape
    context = check_int("context", context, low=1)
    target_index = check_int("target_index", target_index, low=0, high=F - 1)
    stride = check_int("stride", stride, low=1)
    split = np.asarray(split, dtype=float)
    if split.shape != (3,) or (split <= 0).any() or abs(split.sum() - 1) > 1e-9:
        raise ValueError(f"split must be three positive shares summing to 1, got {split.tolist()}")
    if taskification.boundaries[-1] > T:
        raise ValueError(f"taskification ends at {int(taskification.boundaries[-1])}, beyond T={T}")
    short = taskification.lengths.min()
    if short < context + 10:
        raise ValueError(f"context={context} leaves too few windows: the shortest task has {short} steps "
                         f"(need at least context + 10)")
    windows = np.lib.stride_tricks.sliding_window_view(arr, context, axis=1)     # (S, T-context+1, F, context)
    out = []
    for k, (a, b) in enumerate(zip(taskification.boundaries[:-1], taskification.boundaries[1:])):
        targets = np.arange(a + context, b, stride)                               # target steps in the task
        n = targets.size
        cut1, cut2 = int(round(split[0] * n)), int(round((split[0] + split[1]) * n))
        parts = (targets[:cut1], targets[cut1:cut2], targets[cut2:])
        scale = arr[:, parts[0], target_index].max(axis=1)                          # (S,) training maximum
        scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
        made = []
        for p in parts:
            x = windows[:, p - context].transpose(0, 1, 3, 2).reshape(-1, context, F)  # window ends at t - 1
            y = (arr[:, p, target_index] / scale[:, None]).reshape(-1, 1)
            made.append(Task(torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y), task_id=k))
        out.append(ForecastTask(*made))
    return out


def _mse(strategy, task: Task) -> float:
    return strategy.evaluate(task, metric="mse") if len(task) else float("nan")


def train_with_early_stopping(strategy, task: ForecastTask, max_epochs: int, patience: int = 10,
                              lr_patience: int = 5, lr_factor: float = 0.1) -> int:
    """Train ``strategy`` on one task with LR reduction and early stopping on validation MSE.

    The strategy's hooks run as in :meth:`~clkit.strategies.Strategy.train_task`
    (``before_task`` once, ``train_step`` per batch, ``after_task`` once, after
    the best-validation weights are restored). Returns the epochs run.
    """
    max_epochs = check_int("max_epochs", max_epochs, low=1)
    patience = check_int("patience", patience, low=1)
    lr_patience = check_int("lr_patience", lr_patience, low=0)
    lr_factor = check_real("lr_factor", lr_factor, low=0, high=1, low_open=True)
    train = task.train
    strategy.begin_task(train, max_epochs)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(strategy.optimizer, factor=lr_factor, patience=lr_patience)
    best, best_state, stale, epoch = float("inf"), None, 0, 0
    for epoch in range(1, max_epochs + 1):
        for idx in strategy.batches(len(train)):
            strategy.train_step(take(train.x, idx), train.y[idx], train)
        val = _mse(strategy, task.val)
        sched.step(val)
        if val < best:
            best, best_state, stale = val, copy.deepcopy(strategy.model.state_dict()), 0
        else:
            stale += 1
            if stale >= patience:
                break
    if best_state is not None:
        strategy.model.load_state_dict(best_state)
    strategy.after_task(train)
    return epoch


def regression_cl_metrics(M) -> dict:
    """Average MSE, BWT and forgetting of an error matrix ``M`` (num_tasks, num_tasks).

    Examples
    --------
    >>> regression_cl_metrics([[1.0, 5.0], [3.0, 2.0]])
    {'avg_mse': 2.5, 'bwt': -2.0, 'forgetting': 2.0}
    """
    return {"avg_mse": average_accuracy(M), "bwt": backward_transfer(M, higher_is_better=False),
            "forgetting": forgetting(M, higher_is_better=False)}


def continual_forecasting(tasks: list[ForecastTask], model_fn, method: str, *, max_epochs: int = 1,
                          patience: int = 10, lr_patience: int = 5, lr: float = 1e-4, batch_size: int = 256,
                          seed: int = 0, strategy_kwargs: dict | None = None, num_threads: int | None = 1,
                          progress=None) -> np.ndarray:
    """Train ``method`` over ``tasks`` in order; return ``M`` (num_tasks, num_tasks), test MSE x 10^3.

    Parameters
    ----------
    tasks : list of ForecastTask
    model_fn : callable
        ``model_fn()`` builds a fresh model; it is called inside ``torch_seeded(seed)``.
    method : str
        A strategy name (``"naive"`` = continual finetuning, ``"replay"``, ``"ewc"``, ``"lwf"``, ...).
    max_epochs, patience, lr_patience, lr, batch_size, seed
        The paper: AdamW 1e-4, batch 256, LR x0.1 after 5 stagnant epochs, early stopping 10.
    strategy_kwargs : dict, optional
        Extra strategy settings (``memory_size``, ``ewc_lambda``, ...).
    num_threads : int or None
        torch CPU threads while training (restored afterwards). One thread is the
        fastest for small models, and far faster on a busy machine where several
        threads contend for cores; ``None`` leaves torch's setting alone.
    progress : callable, optional
        Called with no arguments after each task (e.g. a tqdm bar's ``update``).
    """
    seed = check_int("seed", seed)
    with torch_threads(num_threads):
        return _continual(tasks, model_fn, method, max_epochs, patience, lr_patience, lr, batch_size, seed,
                          strategy_kwargs, progress)


def _continual(tasks, model_fn, method, max_epochs, patience, lr_patience, lr, batch_size, seed, strategy_kwargs,
               progress):
    # the whole run inside torch_seeded: model init *and* dropout draw from a generator seeded here,
    # and the caller's global torch state is restored afterwards
    with torch_seeded(seed):
        model = model_fn()
        strategy = make_strategy(method, model, loss="mse", optimizer="adamw", lr=lr, batch_size=batch_size,
                                 seed=seed, **(strategy_kwargs or {}))
        K = len(tasks)
        M = np.full((K, K), np.nan)
        for i, task in enumerate(tasks):
            train_with_early_stopping(strategy, task, max_epochs, patience, lr_patience)
            M[i] = [1e3 * _mse(strategy, t.test) for t in tasks]
            if progress is not None:
                progress()
    return M
