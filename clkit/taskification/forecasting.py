"""Continual forecasting under a taskification (the paper's Sec. 5.1 protocol).

Every task ``k`` of a taskification holds the windows of all series whose target
lies in ``[t_{k-1}, t_k)``. By default the context must lie in the task too
(``context_across_tasks=False``): the first ``context`` steps of every task give no
target, which costs a short task a larger share (22 % of a 9-day task at the paper's
two-day context). The paper does not say; we keep tasks self-contained so that a
task's windows see no data of another task. ``context_across_tasks=True`` lets a
context reach back into the previous task (the first task still starts at
``context``).

Inside each task the target steps are split 80/10/10 (the paper's proportions). The
paper does not give the order; ``split_order="chronological"`` (default) takes the
first 80 % of target steps for training, the next 10 % for validation and the last
10 % for test, so no test step precedes a training step and overlapping windows leak
little; the price is that the test set is always the task's last 10 %.
``split_order="random"`` assigns target steps at random (seeded) in the same
proportions: the test set covers the whole task, but test contexts overlap training
windows.

The target of series ``s`` in task ``k`` is divided by a per-series maximum
(``target_scaling="task"``, the paper: the maximum over the task's training steps;
``"stream"``: the maximum over the whole analysed span, one scale for all tasks).
The input's target channel is divided by the same number, so inputs and target share
units (the model's de-normalisation needs this). Per-task scaling changes the units
of the error from task to task: a task whose training part happens to be low gets a
small divisor and a large scaled error. :func:`baseline_mse` measures that effect
with no learning at all.

A strategy from :mod:`clkit.strategies` is trained task after task with AdamW,
``ReduceLROnPlateau`` (factor 0.1 after ``lr_patience`` stagnant epochs) and early
stopping on the task's validation MSE (``patience`` epochs; the best weights are
restored before ``after_task``). ``M[i, j]`` is the test MSE x 10^3 on task ``j``
after training on task ``i``; average MSE is the mean of the last row, and BWT
and forgetting are the paper's regression forms (:mod:`clkit.metrics` with
``higher_is_better=False``).

**Device.** The training loop runs on the strategy's device (``device=``: a
``torch.device`` or :class:`clkit.device.RunDevice`; the model is built on the CPU
under the run's seed and moved there by the strategy, so its initial weights are the
same on every device). A run moves every task's windows to the device once, before the
first task; batch orders come from the strategy's CPU generator and move once per
epoch; no step reads a value back. The host reads the device at evaluation
boundaries only: one validation MSE per epoch (early stopping and the LR schedule
need it) and one row of ``M`` per task. ``precision`` is the strategy's autocast
(:class:`clkit.device.Amp`), which the transformer's forward passes run under.

**Windows on the fly.** By default (``windows="view"``) a task's inputs are a
:class:`~clkit.data.timeseries_windows.WindowView`: each task keeps its scaled stretch of every
series once and the first row of every window, and a batch gathers its windows when it is
drawn. Stored windows (``windows="copy"``) repeat every step ``context`` times: 134 GiB of host
memory for the paper set at stride 1, against well under 1 GiB for the views. A batch gathered
from a view holds the same floats as the stored one, so training and evaluation give bitwise the
same numbers (``tests/test_timeseries_windows.py``).

**Checkpoints.** With ``checkpoint_dir=`` a run writes its state after every finished task and a
rerun resumes from the next one, to the same ``M`` bitwise (:mod:`clkit.taskification.resume`): a
paper-scale run is longer than a cluster job's wall time and cannot be cut into independent pieces.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from .._seed import torch_seeded, torch_threads
from .._validate import check_choice, check_int, check_real
from .._jobs import run_jobs
from ..device import to_host
from ..metrics import average_accuracy, backward_transfer, forgetting
from ..strategies import Task, make_strategy, take
from ..data.timeseries_windows import WindowView
from . import resume
from .boundaries import Taskification

__all__ = ["WINDOW_MODES", "ForecastTask", "make_forecast_tasks", "forecast_task_sizes", "train_with_early_stopping",
           "continual_forecasting", "mse_row", "regression_cl_metrics", "baseline_mse", "run_jobs",
           "TARGET_SCALINGS", "SPLIT_ORDERS"]

TARGET_SCALINGS = ["task", "stream"]
SPLIT_ORDERS = ["chronological", "random"]
#: how a task holds its input windows: gathered on demand from the series (view) or stored (copy)
WINDOW_MODES = ["view", "copy"]


@dataclass
class ForecastTask:
    """Train / validation / test windows of one task (tensors ``x`` (N, context, F), ``y`` (N, 1))."""

    train: Task
    val: Task
    test: Task

    def to(self, device) -> "ForecastTask":
        """The three parts on ``device`` (each moved once; ``self`` when they are there already)."""
        moved = ForecastTask(_task_to(self.train, device), _task_to(self.val, device), _task_to(self.test, device))
        return self if all(a is b for a, b in zip((moved.train, moved.val, moved.test),
                                                   (self.train, self.val, self.test))) else moved


def _task_to(task: Task, device) -> Task:
    """``task.to(device)``, moving a :class:`WindowView` input too (its series and start rows, once)."""
    if not isinstance(task.x, WindowView):
        return task.to(device)
    x = task.x.to(device)
    if x is task.x:
        return task
    moved = Task(x, task.y.to(x.device, non_blocking=True), task.task_id, task.classes, dict(task.meta))
    moved._labels_host = task.labels_host()
    return moved


def make_forecast_tasks(values, taskification: Taskification, context: int, target_index: int, *,
                        stride: int = 1, split=(0.8, 0.1, 0.1), target_scaling: str = "task",
                        split_order: str = "chronological", context_across_tasks: bool = False,
                        seed: int = 0, windows: str = "view") -> list[ForecastTask]:
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
        Train / validation / test shares of each task's target steps.
    target_scaling : {"task", "stream"}
        Divide each series' target (and its input channel) by its maximum over the
        task's training steps (the paper) or over the whole analysed span.
    split_order : {"chronological", "random"}
        Train / validation / test in time order, or target steps drawn at random.
    context_across_tasks : bool
        Let a context start in the previous task (see the module docstring).
    seed : int
        Seeds the ``"random"`` split.
    windows : {"view", "copy"}
        ``"view"``: every part's inputs are a :class:`~clkit.data.timeseries_windows.WindowView`
        over the task's scaled stretch of the series (memory of the series, not of the windows);
        ``"copy"``: stored windows, a tensor ``(N, context, F)``. The same values either way.

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
    >>> copied = make_forecast_tasks(v, fixed_windows(100, 50), 10, 0, windows="copy")
    >>> torch.equal(tasks[1].val.x[:], copied[1].val.x)      # a view gathers the stored windows
    True
    >>> len(make_forecast_tasks(v, fixed_windows(100, 50), 10, 0, context_across_tasks=True)[1].train)
    80
    """
    arr = np.asarray(values, dtype=np.float32)
    if arr.ndim != 3:
        raise ValueError(f"values must have shape (num_series, T, F), got {arr.shape}")
    if not isinstance(taskification, Taskification):
        raise TypeError(f"taskification must be a Taskification, got {type(taskification).__name__}")
    S, T, F = arr.shape
    context = check_int("context", context, low=1)
    target_index = check_int("target_index", target_index, low=0, high=F - 1)
    stride = check_int("stride", stride, low=1)
    target_scaling = check_choice("target_scaling", target_scaling, TARGET_SCALINGS)
    split_order = check_choice("split_order", split_order, SPLIT_ORDERS)
    if not isinstance(context_across_tasks, (bool, np.bool_)):
        raise TypeError(f"context_across_tasks must be True or False, got {context_across_tasks!r}")
    rng = np.random.default_rng(check_int("seed", seed))
    windows = check_choice("windows", windows, WINDOW_MODES)
    split = _check_split(split)
    if taskification.boundaries[-1] > T:
        raise ValueError(f"taskification ends at {int(taskification.boundaries[-1])}, beyond T={T}")
    b = taskification.boundaries
    starts = _target_starts(taskification, context, stride, context_across_tasks)
    lo, hi = taskification.span
    stream_scale = arr[:, lo:hi, target_index].max(axis=1)                          # (S,) whole-span maximum
    slid = np.lib.stride_tricks.sliding_window_view(arr, context, axis=1) if windows == "copy" else None
    out = []
    for k, (start, end) in enumerate(zip(starts, b[1:])):
        targets = np.arange(start, end, stride)                                   # target steps in the task
        n = targets.size
        cut1, cut2 = _cuts(n, split)
        if split_order == "random":
            perm = rng.permutation(n)
            parts = tuple(np.sort(targets[perm[i:j]]) for i, j in ((0, cut1), (cut1, cut2), (cut2, n)))
        else:
            parts = (targets[:cut1], targets[cut1:cut2], targets[cut2:])
        scale = arr[:, parts[0], target_index].max(axis=1) if target_scaling == "task" else stream_scale
        scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
        if windows == "view":
            out.append(ForecastTask(*_view_parts(arr, parts, start - context, end, context, target_index, scale, k)))
            continue
        made = []
        for p in parts:
            x = slid[:, p - context].transpose(0, 1, 3, 2).copy()                   # (S, n, context, F)
            x[..., target_index] /= scale[:, None, None]                             # input target in y's units
            x = x.reshape(-1, context, F)                                            # window ends at t - 1
            y = (arr[:, p, target_index] / scale[:, None]).reshape(-1, 1)
            made.append(Task(torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y), task_id=k))
        out.append(ForecastTask(*made))
    return out


def _view_parts(arr, parts, lo: int, hi: int, context: int, target_index: int, scale, k: int) -> list[Task]:
    """The three parts of task ``k`` as views over one scaled copy of steps ``[lo, hi)`` of every series.

    The copy is scaled exactly as :func:`make_forecast_tasks` scales stored windows (the target
    channel divided by ``scale`` in float32), so a gathered window holds the same floats.
    """
    S, _, F = arr.shape
    seg = arr[:, lo:hi].copy()                                                     # (S, L, F)
    seg[..., target_index] /= scale[:, None]
    L = hi - lo
    base = torch.from_numpy(seg.reshape(S * L, F))
    made = []
    for p in parts:
        starts = (np.arange(S)[:, None] * L + (p - context - lo)[None, :]).reshape(-1)   # series-major, as stored
        y = (arr[:, p, target_index] / scale[:, None]).reshape(-1, 1)
        made.append(Task(WindowView(base, torch.from_numpy(starts.astype(np.int64)), context),
                         torch.from_numpy(y), task_id=k))
    return made


def _check_split(split) -> np.ndarray:
    split = np.asarray(split, dtype=float)
    if split.shape != (3,) or (split <= 0).any() or abs(split.sum() - 1) > 1e-9:
        raise ValueError(f"split must be three positive shares summing to 1, got {split.tolist()}")
    return split


def _cuts(n: int, split: np.ndarray) -> tuple[int, int]:
    """Where the validation and the test part of ``n`` target steps begin."""
    return int(round(split[0] * n)), int(round((split[0] + split[1]) * n))


def _target_starts(taskification: Taskification, context: int, stride: int, context_across_tasks: bool):
    """The first target step of every task (shape (K,)); refuses tasks with fewer than ``10 * stride``
    target steps."""
    b = taskification.boundaries
    starts = np.array([a + context if (k == 0 or not context_across_tasks) else max(a, context)
                       for k, a in enumerate(b[:-1])])
    usable = b[1:] - starts
    if usable.min() < 10 * stride:
        k = int(np.argmin(usable))
        raise ValueError(f"context={context} (stride={stride}) leaves too few windows: task {k} has "
                         f"{int(taskification.lengths[k])} steps and {max(int(usable[k]), 0)} target steps "
                         f"(need at least 10 * stride)")
    return starts


def forecast_task_sizes(taskification: Taskification, context: int, *, num_series: int = 1, stride: int = 1,
                        split=(0.8, 0.1, 0.1), context_across_tasks: bool = False) -> np.ndarray:
    """Windows per task and part that :func:`make_forecast_tasks` cuts, counted without building them.

    The same arithmetic as :func:`make_forecast_tasks` (targets every ``stride``-th step
    from each task's first target step, 80/10/10 cuts; the random split order draws the
    same sizes), for budgets of runs whose windows would not fit in memory.

    Returns
    -------
    ndarray of int, shape (num_tasks, 3)
        Train, validation and test windows of every task, all ``num_series`` series.

    Examples
    --------
    >>> from clkit.taskification import fixed_windows
    >>> forecast_task_sizes(fixed_windows(100, 50), context=10, num_series=2).tolist()
    [[64, 8, 8], [64, 8, 8]]
    >>> v = np.zeros((2, 100, 3))
    >>> [len(t.train) for t in make_forecast_tasks(v, fixed_windows(100, 50), 10, 0)]
    [64, 64]
    """
    if not isinstance(taskification, Taskification):
        raise TypeError(f"taskification must be a Taskification, got {type(taskification).__name__}")
    context = check_int("context", context, low=1)
    num_series = check_int("num_series", num_series, low=1)
    stride = check_int("stride", stride, low=1)
    split = _check_split(split)
    starts = _target_starts(taskification, context, stride, bool(context_across_tasks))
    out = []
    for start, end in zip(starts, taskification.boundaries[1:]):
        n = len(range(int(start), int(end), stride))
        cut1, cut2 = _cuts(n, split)
        out.append([cut1, cut2 - cut1, n - cut2])
    return num_series * np.array(out, dtype=np.int64).reshape(-1, 3)


def baseline_mse(tasks: list[ForecastTask], target_index: int) -> dict:
    """Test MSE x 10^3 of two no-learning forecasters on every task.

    - ``"constant"``: the mean of the task's training targets (all series pooled;
      with per-series scaling the series share units), predicted for every test step;
    - ``"persistence"``: the last observed target value, ``x[:, -1, target_index]``
      (inputs are in the target's units, see :func:`make_forecast_tasks`).

    A forecaster that learns something must beat both on the same test windows.

    Returns
    -------
    dict
        ``"constant"`` and ``"persistence"``: arrays of shape (num_tasks,), and their
        means over tasks under ``"constant_mean"`` / ``"persistence_mean"`` (comparable
        with the average MSE, the mean over tasks of the last row of ``M``).

    Examples
    --------
    >>> from clkit.strategies import Task
    >>> tr = Task(torch.zeros(2, 3, 1), torch.tensor([[1.0], [3.0]]))
    >>> te = Task(torch.tensor([[[0.0], [0.0], [4.0]]]), torch.tensor([[5.0]]))
    >>> out = baseline_mse([ForecastTask(tr, tr, te)], target_index=0)
    >>> out["constant"].tolist(), out["persistence"].tolist()      # (5-2)^2, (5-4)^2, x 10^3
    ([9000.0], [1000.0])
    """
    target_index = check_int("target_index", target_index, low=0)
    const, pers = [], []
    for t in tasks:
        y = t.test.y[:, 0].double()
        if len(y) == 0:
            const.append(np.nan)
            pers.append(np.nan)
            continue
        if target_index >= t.test.x.shape[2]:
            raise ValueError(f"target_index={target_index} is not a feature of the windows "
                             f"({t.test.x.shape[2]} features)")
        mu = float(t.train.y.double().mean())
        const.append(1e3 * float(((y - mu) ** 2).mean()))
        last = t.test.x.last(target_index) if isinstance(t.test.x, WindowView) else t.test.x[:, -1, target_index]
        pers.append(1e3 * float(((y - last.double()) ** 2).mean()))
    out = {"constant": np.array(const), "persistence": np.array(pers)}
    out.update({f"{k}_mean": float(np.nanmean(v)) for k, v in list(out.items())})
    return out


def _mse(strategy, task: Task) -> float:
    """Test MSE of ``strategy`` on ``task``: one value read from the device (NaN for an empty task)."""
    return strategy.evaluate(task, metric="mse") if len(task) else float("nan")


def mse_row(strategy, tasks: list[ForecastTask]) -> np.ndarray:
    """Test MSE x 10^3 of ``strategy`` on every task's test windows: one row of ``M``, read from the
    device once (an evaluation boundary).

    The same numbers as :meth:`~clkit.strategies.Strategy.evaluate` with ``metric="mse"`` task by
    task (the strategy's :meth:`~clkit.strategies.Strategy.predict` in its precision, the MSE on
    the device); an empty test part gives NaN.

    Returns
    -------
    ndarray, shape (len(tasks),)

    Examples
    --------
    >>> from clkit.strategies import Strategy
    >>> lin = torch.nn.Linear(1, 1)
    >>> _ = torch.nn.init.ones_(lin.weight), torch.nn.init.zeros_(lin.bias)     # predicts x
    >>> t = ForecastTask(*(Task(torch.ones(2, 1), torch.full((2, 1), 3.0)),) * 3)
    >>> empty = ForecastTask(t.train, t.val, Task(torch.ones(0, 1), torch.ones(0, 1)))
    >>> mse_row(Strategy(lin, loss="mse"), [t, empty]).tolist()     # (3 - 1)^2 x 10^3
    [4000.0, nan]
    """
    out = np.full(len(tasks), np.nan)
    mses = []
    for t in tasks:
        if len(t.test):
            pred = strategy.predict(t.test.x, t.test)
            mses.append(torch.nn.functional.mse_loss(pred, t.test.y.to(pred.device)))
    if mses:
        out[[k for k, t in enumerate(tasks) if len(t.test)]] = to_host(torch.stack(mses)).astype(np.float64)
    return 1e3 * out


def train_with_early_stopping(strategy, task: ForecastTask, max_epochs: int, patience: int = 10,
                              lr_patience: int = 5, lr_factor: float = 0.1) -> int:
    """Train ``strategy`` on one task with LR reduction and early stopping on validation MSE.

    The strategy's hooks run as in :meth:`~clkit.strategies.Strategy.train_task`
    (``before_task`` once, ``train_step`` per batch, ``after_task`` once, after
    the best-validation weights are restored). The task is moved to the strategy's
    device (once; nothing is moved when :func:`continual_forecasting` has moved it
    already), the batch order of each epoch moves there once, and the only value read
    from the device is the validation MSE after each epoch. Returns the epochs run.
    """
    max_epochs = check_int("max_epochs", max_epochs, low=1)
    patience = check_int("patience", patience, low=1)
    lr_patience = check_int("lr_patience", lr_patience, low=0)
    lr_factor = check_real("lr_factor", lr_factor, low=0, high=1, low_open=True)
    task = task.to(strategy.device)
    train = task.train
    strategy.begin_task(train, max_epochs)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(strategy.optimizer, factor=lr_factor, patience=lr_patience)
    best, best_state, stale, epoch = float("inf"), None, 0, 0
    for epoch in range(1, max_epochs + 1):
        for idx in strategy.batches(len(train), strategy.device):
            # train_step, not train_batch: LwF's teacher runs on each batch, as before (its recorded
            # outputs would round differently in the last bit)
            strategy.train_step(take(train.x, idx), take(train.y, idx), train)
        val = _mse(strategy, task.val)          # the epoch's one read: an evaluation boundary
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
                          progress=None, device="cpu", precision: str = "fp32", checkpoint_dir=None) -> np.ndarray:
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
    device : str, torch.device or clkit.device.RunDevice
        Where the model trains and every task's windows live (moved once, before the
        first task). The model is built on the CPU by ``model_fn`` and moved by the strategy.
    precision : {"fp32", "bf16", "fp16"}
        The strategy's autocast (``fp16`` needs CUDA).
    checkpoint_dir : str or Path, optional
        Resume from and checkpoint into this folder (:mod:`clkit.taskification.resume`): after
        every finished task the strategy's state, the generators and the rows of ``M`` so far
        are written atomically; a rerun with the same arguments goes on from the next task and
        returns the ``M`` of an uninterrupted run, bitwise. A checkpoint of other arguments is
        refused (``ValueError``). ``None`` (default): no checkpoint. Methods:
        :data:`~clkit.taskification.resume.CHECKPOINT_METHODS`.

    Examples
    --------
    >>> from clkit.taskification import fixed_windows
    >>> from clkit.models.transformer import TimeSeriesTransformer
    >>> v = np.random.default_rng(0).random((1, 120, 2)).astype(np.float32)
    >>> tasks = make_forecast_tasks(v, fixed_windows(120, 60), context=8, target_index=0, stride=4)
    >>> M = continual_forecasting(tasks, lambda: TimeSeriesTransformer(2, 8, 4, 1, 1, target_index=0),
    ...                           "naive", max_epochs=2, batch_size=4)
    >>> M.shape, bool(np.isfinite(M).all())
    ((2, 2), True)
    """
    seed = check_int("seed", seed)
    with torch_threads(num_threads):
        return _continual(tasks, model_fn, method, max_epochs, patience, lr_patience, lr, batch_size, seed,
                          strategy_kwargs, progress, device, precision, checkpoint_dir)


def _continual(tasks, model_fn, method, max_epochs, patience, lr_patience, lr, batch_size, seed, strategy_kwargs,
               progress, device, precision, checkpoint_dir=None):
    # the whole run inside torch_seeded: model init *and* dropout draw from a generator seeded here,
    # and the caller's global torch state is restored afterwards
    with torch_seeded(seed):
        model = model_fn()                      # on the CPU under the seed: the same weights on every device
        strategy = make_strategy(method, model, loss="mse", optimizer="adamw", lr=lr, batch_size=batch_size,
                                 seed=seed, device=device, precision=precision, **(strategy_kwargs or {}))
        K, start, M = len(tasks), 0, np.full((len(tasks), len(tasks)), np.nan)
        if checkpoint_dir is not None:   # the digest is of the host tasks and the model as built
            resume.check_method(method, strategy)
            digest = resume.run_digest(tasks, model, dict(
                method=method, max_epochs=max_epochs, patience=patience, lr_patience=lr_patience, lr=lr,
                batch_size=batch_size, seed=seed, strategy_kwargs=strategy_kwargs or {}, precision=strategy.precision,
                device=strategy.device.type))
            start, M = resume.load_checkpoint(checkpoint_dir, digest, strategy, K) or (0, M)
        tasks = [t.to(strategy.device) for t in tasks]     # every window moves once per run
        for i, task in enumerate(tasks):
            if i >= start:
                train_with_early_stopping(strategy, task, max_epochs, patience, lr_patience)
                M[i] = mse_row(strategy, tasks)    # one read per task: an evaluation boundary
                if checkpoint_dir is not None:
                    resume.save_checkpoint(checkpoint_dir, digest, i, M, strategy)
            if progress is not None:
                progress()
    return M


