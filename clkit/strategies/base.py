"""The one strategy interface shared by every notebook.

A :class:`Strategy` wraps any ``torch.nn.Module`` and a loss. It is modality
agnostic: a batch is ``(x, y)`` where ``x`` is whatever the model takes (images,
feature vectors, time-series windows, or node indices for a model that holds its
graph) and ``y`` is a label vector (classification) or a target array (regression).

Two ways to train:

- task-aware: :meth:`Strategy.train_task` runs ``epochs`` passes over a
  :class:`Task`, calling :meth:`before_task` / :meth:`after_task` around them;
- task-free (online): :meth:`Strategy.observe` takes one optimisation step on an
  incoming batch; strategies with ``task_free = True`` need no boundaries.

Subclasses customise one training step through hooks, in this order::

    batch = self.augment_batch(x, y, task)        # e.g. replay mixes memory in
    loss  = self.criterion(self.forward(x, task), y) + self.penalty(task)
    loss.backward(); self.after_backward(x, y, task)   # e.g. gradient projection
    self.optimizer.step(); self.after_step(x, y, task)  # e.g. buffer update

Scenarios: ``scenario="class"`` uses a single head over all classes;
``scenario="task"`` masks the logits to the classes of the current task at
training and evaluation time (the task-id is known), so any single-head model
serves task-incremental learning too.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

from .._validate import check_choice, check_int, check_real
from ..device import Amp, as_device, host_float, move, to_host

__all__ = ["Task", "Strategy", "register", "take", "epoch_means"]


class _Registry(dict):
    """The name -> class registry of the strategies.

    Every strategy module registers its classes through :func:`register`, so the
    registry knows the modules imported so far (:mod:`clkit.strategies._all` imports
    them all). A name it lacks goes to ``fallback`` when one is set:
    :mod:`clkit.strategies` sets it to the plugin resolver
    (:func:`clkit.strategies.registry.resolve_strategy`: entry points, import paths), so
    this module never imports the modules above it.
    """

    fallback: Callable[[str], type] | None = None

    def __missing__(self, name):
        if self.fallback is None:
            raise KeyError(name)
        return self.fallback(name)


_REGISTRY: dict[str, type] = _Registry()


def register(name: str):
    """Class decorator: make a strategy available under ``name``."""
    def deco(cls):
        cls.name = name
        _REGISTRY[name] = cls
        return cls
    return deco


def take(x, idx, out=None):
    """Index a tensor, or each tensor of a tuple/list, with ``idx``; with ``out`` (a tensor ``x``
    only, shaped like the result) the rows are written into ``out``, which is returned."""
    if isinstance(x, (tuple, list)):
        return type(x)(take(v, idx) for v in x)
    if (isinstance(x, torch.Tensor) and isinstance(idx, torch.Tensor) and idx.ndim == 1
            and idx.dtype in (torch.int64, torch.int32)):
        try:   # same rows as x[idx], several times faster; it refuses negative indices, which x[idx] counts from the end
            idx = idx if idx.device == x.device else idx.to(x.device)
            return x.index_select(0, idx) if out is None else torch.index_select(x, 0, idx, out=out)
        except (RuntimeError, IndexError):
            pass
    return x[idx] if out is None else out.copy_(x[idx])


def _with_penalty(loss, penalty):
    """``(what to backpropagate, the penalty value still to add to the reported loss)``.

    A penalty with a graph is added to ``loss``; one without (a number, or a tensor that needs no
    gradient, as the fused penalties' value inside a step) cannot change the gradient, so it is
    not added before the backward pass (one operation and one autograd node fewer) and only enters
    the reported value, ``float(loss) + float(penalty)``.
    """
    if isinstance(penalty, torch.Tensor) and penalty.requires_grad:
        return loss + penalty, 0.0
    return loss, penalty


def _reported(loss: torch.Tensor, rest) -> torch.Tensor:
    """The value a step reports: the detached loss plus the penalty not yet in it (a number or a
    tensor without a graph), as a tensor on the loss's device -- nothing is read from the device."""
    loss = loss.detach()
    if isinstance(rest, torch.Tensor):
        return loss + rest.detach()
    return loss + rest if rest else loss


def epoch_means(history) -> list[float]:
    """Mean loss of each epoch from per-step losses (tensors on a device or numbers), reading the
    device once for all epochs: ``history`` is a list (epochs) of lists (steps); an epoch without
    steps gives NaN.

    Examples
    --------
    >>> epoch_means([[torch.tensor(1.0), torch.tensor(3.0)], [], [0.5]])
    [2.0, nan, 0.5]
    """
    flat = [v if isinstance(v, torch.Tensor) else torch.tensor(float(v)) for steps in history for v in steps]
    if not flat:
        return [float("nan")] * len(history)
    device = next((v.device for v in flat if v.device.type != "cpu"), torch.device("cpu"))
    values = to_host(torch.stack([v.detach().float().reshape(()).to(device) for v in flat])).astype(np.float64)
    out, start = [], 0
    for steps in history:
        out.append(float(values[start:start + len(steps)].mean()) if steps else float("nan"))
        start += len(steps)
    return out


def _cat(a, b):
    if isinstance(a, (tuple, list)):
        return type(a)(_cat(u, v) for u, v in zip(a, b))
    return torch.cat([a, b])


@dataclass
class Task:
    """One task (or one period / one experience) of a continual stream.

    Parameters
    ----------
    x : Tensor, shape (N, ...), or tuple of tensors
        Inputs in the form the model takes.
    y : Tensor, shape (N,) (labels) or (N, d) (regression targets)
    task_id : int
        Position of the task in the stream (0-based).
    classes : tuple of int, optional
        Classes of the task; filled from ``y`` for integer labels when omitted.
    """

    x: Any
    y: torch.Tensor
    task_id: int = 0
    classes: tuple | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.classes is None and not torch.is_floating_point(self.y):
            self.classes = tuple(int(c) for c in torch.unique(self.y).tolist())
        n = len(self.y)
        xs = self.x if isinstance(self.x, (tuple, list)) else (self.x,)
        for v in xs:
            if len(v) != n:
                raise ValueError(f"x and y of task {self.task_id} differ in length: {len(v)} vs {n}")

    def __len__(self) -> int:
        return len(self.y)

    @property
    def device(self) -> torch.device:
        """The device of the task's labels (its inputs are moved with them)."""
        return self.y.device

    def to(self, device, *, non_blocking: bool = True) -> "Task":
        """This task on ``device``: ``self`` when it is there already, else a copy whose tensors moved
        once (pinned, non-blocking from the CPU to CUDA; :func:`clkit.device.move`).

        The copy keeps the classes and ``meta``, and remembers the labels as they were on the
        host (:meth:`labels_host`), so bookkeeping that needs label values (class-balanced
        memories, class counts) never reads them back from the device.

        Examples
        --------
        >>> t = Task(torch.zeros(4, 2), torch.tensor([0, 1, 0, 1]), task_id=3)
        >>> m = t.to(torch.device("meta"))
        >>> m.x.device, m.classes, m.task_id, m.labels_host().tolist(), t.to("cpu") is t
        (device(type='meta'), (0, 1), 3, [0, 1, 0, 1], True)
        """
        device = as_device(device)
        if self.y.device == device or (device.index is None and self.y.device.type == device.type):
            return self
        moved = Task(move(self.x, device, non_blocking=non_blocking), move(self.y, device, non_blocking=non_blocking),
                     self.task_id, self.classes, dict(self.meta))
        moved._labels_host = self.labels_host()
        return moved

    def labels_host(self) -> np.ndarray:
        """The labels as a NumPy array on the host, without reading the device when the task was
        moved there by :meth:`to` (NaN on the ``meta`` device otherwise)."""
        cached = getattr(self, "_labels_host", None)
        if cached is None:
            cached = self._labels_host = to_host(self.y)
        return cached


LOSSES: dict[str, Callable] = {
    "cross_entropy": F.cross_entropy,
    "mse": F.mse_loss,
}


def _fused_layout_guard(optimizer, args, kwargs) -> None:
    """Step pre-hook of the strategies' fused SGD: a parameter group in which a parameter or its
    gradient is not contiguous is stepped with the default implementation from then on.

    PyTorch's fused kernel walks every tensor as flat memory, so a parameter whose gradient has
    other strides gets its update scrambled without any error (measured with torch 2.14 on CPU: a
    ``channels_last`` convolution weight with a contiguous gradient, as the gradient-projection
    methods assign it from their flat gradient rows, moved 0.39 away from the SGD update). The
    default implementation follows the strides; the momentum buffers serve both, and a buffer with
    other strides than contiguous (an optimizer state loaded from a ``channels_last`` run) sends the
    group to the default implementation too. A hook rather
    than a subclass: the check costs about 2 us per step for an MLP's four parameter tensors.
    """
    for group in optimizer.param_groups:
        if group["fused"] and not all(p.is_contiguous() and (p.grad is None or p.grad.is_contiguous())
                                      and _buffer_contiguous(optimizer.state.get(p))
                                      for p in group["params"]):
            group["fused"] = False


def _buffer_contiguous(state) -> bool:
    """Whether a parameter's momentum buffer (if any) is contiguous: a ``channels_last`` buffer (an optimizer
    state loaded from a channels_last run) beside a contiguous parameter was stepped wrong by the fused kernel
    too (0.38 from the SGD update, issue 43)."""
    buf = state.get("momentum_buffer") if state else None
    return buf is None or buf.is_contiguous()


def _sgd(params, **kw) -> torch.optim.SGD:
    """``torch.optim.SGD`` with PyTorch's fused kernel (``fused=True``: one kernel over all
    parameters instead of a Python loop with two or three ops per parameter; ~25 us less per step
    for an MLP with four parameter tensors on one CPU core) where every parameter is a floating-point
    tensor on the CPU or a CUDA device, else the default implementation (the fused kernel refuses
    other dtypes and devices only at its first step). The update is the same; the fused kernel
    rounds differently in the last bit (fused multiply-adds), so runs are reproducible but not
    bitwise equal to the default implementation's. Parameters or gradients that are not contiguous
    (e.g. a model in ``channels_last``) get the default implementation (:func:`_fused_layout_guard`):
    the fused kernel would apply their gradients to the wrong entries.

    Examples
    --------
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> _sgd([w], lr=0.1).defaults["fused"], _sgd([torch.nn.Parameter(torch.ones(2, dtype=torch.complex64))], lr=0.1).defaults["fused"]
    (True, None)
    """
    params = list(params)
    tensors = [p for g in params for p in (g["params"] if isinstance(g, dict) else [g])]
    if tensors and all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in tensors):
        opt = torch.optim.SGD(params, fused=True, **kw)
        opt.register_step_pre_hook(_fused_layout_guard)
        return opt
    return torch.optim.SGD(params, **kw)


class Strategy:
    """Naive fine-tuning and the base class of all strategies.

    Parameters
    ----------
    model : torch.nn.Module
        Any module mapping a batch ``x`` to outputs.
    loss : {"cross_entropy", "mse"} or callable
        ``loss(outputs, y)`` -> scalar tensor.
    optimizer : {"sgd", "adam", "adamw"} or callable
        A callable gets ``model.parameters()`` and returns an optimizer. ``"sgd"`` is
        ``torch.optim.SGD`` with PyTorch's fused kernel where the parameters allow it (same
        update, last-bit rounding differs from the default implementation; see ``_sgd``).
    lr, momentum, weight_decay : float
        Optimizer settings (momentum for SGD only).
    epochs : int
        Passes over each task in :meth:`train_task`.
    batch_size : int
    scenario : {"class", "task"}
        Class-incremental (single head) or task-incremental (logits masked to the
        task's classes).
    seed : int
        Seeds the local generators used for shuffling and sampling. They are CPU generators
        on every device, so a run draws the same batch orders and memory samples on a GPU as
        on the CPU.
    device : str, torch.device or clkit.device.RunDevice
        Where the model and every tensor of a step live (``"cpu"`` default). Task data is
        moved there once per task (:meth:`Task.to`); inside the step loops nothing is read
        back to the host: :meth:`train_step` returns the loss as a tensor on the device, and
        :meth:`train_task` reads the losses once, at the end of the task. On the CPU, where a
        read costs nothing, a few steps read small values where that is cheaper (A-GEM's
        projection test, the penalties' value).
    precision : {"fp32", "bf16", "fp16"}
        Autocast dtype of the forward passes (:class:`clkit.device.Amp`); ``fp16`` scales
        the loss and needs CUDA. Parameters stay float32.
    """

    name = "naive"
    #: works without task boundaries (online, through :meth:`observe`)
    task_free = True
    #: defined for regression losses
    supports_regression = True
    #: needs the task id at test time (task-incremental only)
    task_incremental_only = False

    def __init__(self, model: nn.Module, *, loss="cross_entropy", optimizer="sgd", lr: float = 1e-3,
                 momentum: float = 0.9, weight_decay: float = 0.0, epochs: int = 1, batch_size: int = 128,
                 scenario: str = "class", seed: int = 0, device="cpu", precision: str = "fp32"):
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        self.scenario = check_choice("scenario", scenario, ["class", "task"])
        if self.task_incremental_only and scenario != "task":
            raise ValueError(f"strategy {self.name!r} is task-incremental only: scenario must be 'task', "
                             f"got {scenario!r}")
        if isinstance(loss, str):
            check_choice("loss", loss, list(LOSSES))
            if loss == "mse" and not self.supports_regression:
                raise ValueError(f"strategy {self.name!r} is not defined for regression (loss='mse')")
            self.loss_fn = LOSSES[loss]
        elif callable(loss):
            self.loss_fn = loss
        else:
            raise TypeError(f"loss must be a name or a callable, got {type(loss).__name__}")
        self.lr = check_real("lr", lr, low=0, low_open=True)
        self.momentum = check_real("momentum", momentum, low=0, high=1)
        self.weight_decay = check_real("weight_decay", weight_decay, low=0)
        self.epochs = check_int("epochs", epochs, low=0)
        self.batch_size = check_int("batch_size", batch_size, low=1)
        self.seed = check_int("seed", seed)
        self.device = as_device(device)
        self.amp = Amp(precision, self.device)
        self.precision = self.amp.precision
        #: an accelerator: the step loops read nothing back from the device
        self.sync_free = self.device.type != "cpu"
        self.model = model.to(self.device)
        self._optimizer_spec = optimizer
        self.optimizer = self.make_optimizer(self.model.parameters())
        self.generator = torch.Generator().manual_seed(self.seed)
        self.rng = np.random.default_rng(self.seed)
        self.seen_tasks: list[int] = []
        self._seen_classes: set[int] = set()
        self._pending_labels: list[torch.Tensor] = []   # task-free batches' labels, read at the next look
        self.steps = 0

    # ------------------------------------------------------------------ set-up
    def make_optimizer(self, params):
        """Build the optimizer for ``params`` from the constructor's settings."""
        spec = self._optimizer_spec
        if callable(spec):
            return spec(params)
        check_choice("optimizer", spec, ["sgd", "adam", "adamw"])
        if spec == "sgd":
            return _sgd(params, lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay)
        if spec == "adam":
            return torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay)
        return torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay)

    def reseed(self, seed: int) -> None:
        """Restart the local generators (batch order, sampling) from ``seed``.

        A caller that pairs runs task by task calls it before each task, so that a task
        gets the same batch order whatever its position in the stream
        (:func:`clkit.curriculum.streams.run_stream`). Memories keep their own generators
        and ``self.seed`` (what the strategy was built with) is unchanged.

        Examples
        --------
        >>> s = Strategy(nn.Linear(2, 2), batch_size=3)
        >>> s.reseed(7); a = [b.tolist() for b in s.batches(5)]
        >>> s.reseed(7); a == [b.tolist() for b in s.batches(5)]
        True
        """
        seed = check_int("seed", seed)
        self.generator.manual_seed(seed)
        self.rng = np.random.default_rng(seed)

    # ------------------------------------------------------------------ hooks
    def before_task(self, task: Task) -> None:
        """Called before the first step on ``task``."""

    def after_task(self, task: Task) -> None:
        """Called after the last step on ``task`` (consolidation goes here)."""

    def augment_batch(self, x, y, task: Task | None):
        """Return the batch actually trained on (replay methods add memory here)."""
        return x, y

    def penalty(self, task: Task | None) -> torch.Tensor | float:
        """Regularisation term added to the loss (0 for naive fine-tuning)."""
        return 0.0

    def after_backward(self, x, y, task: Task | None) -> None:
        """Called after ``loss.backward()`` and before the optimizer step."""

    def after_step(self, x, y, task: Task | None) -> None:
        """Called after the optimizer step with the incoming (not augmented) batch."""

    # ------------------------------------------------------------------ core
    def forward(self, x, task: Task | None = None, classes=None) -> torch.Tensor:
        """Model outputs; in the task-incremental scenario, logits outside the task's classes are masked."""
        out = self.model(x)
        return self.mask_logits(out, classes if classes is not None else (task.classes if task is not None else None))

    def mask_logits(self, out: torch.Tensor, classes, scenario: str | None = None) -> torch.Tensor:
        """``out`` with the logits outside ``classes`` at ``-inf`` in the task-incremental scenario
        (``scenario`` overrides the strategy's); unchanged otherwise. The mask is built once per
        task on the logits' device."""
        if (scenario or self.scenario) == "task" and classes is not None and out.ndim == 2:
            return out + self._class_mask(tuple(classes), out)
        return out

    def _class_mask(self, classes: tuple, like: torch.Tensor) -> torch.Tensor:
        """``0`` at ``classes`` and ``-inf`` elsewhere, shaped like one row of ``like`` and on its
        device; kept while the classes, width and device stay the same (built once per task)."""
        key = (classes, like.shape[1], like.device, like.dtype)
        cached = getattr(self, "_mask_cache", None)
        if cached is None or cached[0] != key:
            mask = torch.full((like.shape[1],), float("-inf"), dtype=like.dtype)
            mask[list(classes)] = 0.0
            cached = self._mask_cache = (key, mask.to(like.device))
        return cached[1]

    def criterion(self, outputs, y) -> torch.Tensor:
        """The task loss on a batch."""
        return self.loss_fn(outputs, y)

    def train_mode(self) -> None:
        """``self.model.train()``, skipped when every module it would set is in training mode
        already (a check of the modules found by the latest call instead of a walk that sets the
        flag on each); a module attached later in evaluation mode is the one case it misses
        until the next ``eval()`` -- e.g. :meth:`predict` -- makes it walk again."""
        mods = getattr(self, "_train_modules", None)
        if mods is None or not all(m.training for m in mods):
            self.model.train()
            frozen = self.frozen_modules()
            for f in frozen:   # frozen parts keep their normalisation statistics (BatchNorm, dropout off)
                f.eval()
            skip = {id(m) for f in frozen for m in f.modules()}
            self._train_modules = [m for m in self.model.modules() if id(m) not in skip]

    def frozen_modules(self) -> list:
        """Submodules that stay in evaluation mode while the strategy trains (none by default).

        A strategy that freezes part of its model (CWR*'s representation after the first task,
        PNN's earlier columns) lists it here: freezing the weights alone would leave batch
        normalisation updating its running statistics, so the frozen part would still change.
        A strategy whose list changes calls :meth:`refresh_train_mode`.
        """
        return []

    def refresh_train_mode(self) -> None:
        """Forget :meth:`train_mode`'s module cache (call when :meth:`frozen_modules` changes)."""
        self._train_modules = None

    def train_step(self, x, y, task: Task | None = None) -> torch.Tensor:
        """One optimisation step on the batch ``(x, y)`` (on the strategy's device); returns the loss
        (penalty included) as a 0-dim tensor on the device, without reading it (``float()`` reads it)."""
        self.train_mode()
        xb, yb = self.augment_batch(x, y, task)
        self.optimizer.zero_grad(set_to_none=True)
        with self.amp.autocast():
            loss, rest = _with_penalty(self.criterion(self.forward(xb, task), yb), self.penalty(task))
        self.amp.backward(loss, self.optimizer)
        self.after_backward(xb, yb, task)
        self.amp.step(self.optimizer)
        self.after_step(x, y, task)
        self.steps += 1
        return _reported(loss, rest)

    def batches(self, n: int, device=None):
        """Shuffled mini-batch index tensors over ``n`` samples (local CPU generator: the same order
        on every device); with ``device`` the permutation moves there once and the batches are
        slices of it."""
        perm = torch.randperm(n, generator=self.generator)
        if device is not None:
            perm = move(perm, device)
        for start in range(0, n, self.batch_size):
            yield perm[start:start + self.batch_size]

    def train_task(self, task: Task, epochs: int | None = None) -> list[float]:
        """Train on a whole task (``epochs`` passes); returns the mean loss per epoch.

        The task moves to the strategy's device first (once; :meth:`Task.to`), and the losses
        are read from the device once, after the last epoch.
        """
        task = task.to(self.device)
        epochs = self.begin_task(task, epochs)
        history = []
        for _ in range(epochs):
            history.append([self.train_batch(task, idx) for idx in self.batches(len(task), self.device)])
        self.after_task(task)
        return epoch_means(history)

    def train_batch(self, task: Task, idx: torch.Tensor) -> float:
        """One :meth:`train_step` on rows ``idx`` (shape (B,)) of ``task``: the step of :meth:`train_task`.

        Strategies that keep per-row state of the current task (LwF's recorded teacher outputs)
        override this to look it up by ``idx``.
        """
        return self.train_step(take(task.x, idx), take(task.y, idx), task)

    def begin_task(self, task: Task, epochs: int | None = None) -> int:
        """Start ``task``: checks, registration and :meth:`before_task`; returns the epochs to run.

        For callers that drive their own loop over a task (e.g. with early stopping):
        call ``begin_task``, then :meth:`train_step` per batch, then :meth:`after_task`.
        """
        if not isinstance(task, Task):
            raise TypeError(f"task must be a clkit.strategies.Task, got {type(task).__name__}")
        epochs = self.epochs if epochs is None else check_int("epochs", epochs, low=0)
        self._register_task(task)
        self.before_task(task)
        return epochs

    def observe(self, x, y, task: Task | None = None) -> float:
        """Task-free use: one step on an incoming batch, no task boundaries needed."""
        if task is not None:
            self._register_task(task)
        elif not torch.is_floating_point(y):
            self._note_labels(y)
        return self.train_step(x, y, task)

    def _note_labels(self, y: torch.Tensor) -> None:
        """Remember a task-free batch's labels for :attr:`seen_classes` without reading the device
        now (they are read when ``seen_classes`` is looked at, or every 512 batches)."""
        self._pending_labels.append(y.detach())
        if len(self._pending_labels) >= 512:
            self._flush_labels()

    def _flush_labels(self) -> None:
        pending, self._pending_labels = self._pending_labels, []
        if pending:
            labels = to_host(torch.unique(torch.cat(pending)) if pending[0].device.type != "meta" else pending[0])
            self._seen_classes.update(int(c) for c in labels.reshape(-1) if c == c)

    @property
    def seen_classes(self) -> set[int]:
        """The classes of the registered tasks and of the task-free batches seen so far."""
        self._flush_labels()
        return self._seen_classes

    def _register_task(self, task: Task) -> None:
        if task.task_id not in self.seen_tasks:
            self.seen_tasks.append(task.task_id)
        if task.classes:
            self._seen_classes.update(task.classes)

    # ------------------------------------------------------------------ inference
    @torch.no_grad()
    def predict(self, x, task: Task | None = None, batch_size: int = 4096) -> torch.Tensor:
        """Outputs on ``x`` in evaluation mode (batched)."""
        self.model.eval()
        n = len(x[0]) if isinstance(x, (tuple, list)) else len(x)
        with self.amp.autocast():
            outs = [self.forward(move(take(x, slice(s, s + batch_size)), self.device), task)
                    for s in range(0, n, batch_size)]
        return torch.cat(outs).float() if outs else torch.empty(0, device=self.device)

    def evaluate(self, task: Task, metric: str | Callable = "accuracy") -> float:
        """Score on ``task``: ``"accuracy"`` (argmax), ``"mse"`` or ``metric(outputs, y)``.

        An evaluation boundary: the one value is read from the device here (NaN on ``meta``).
        """
        out = self.predict(task.x, task)
        y = move(task.y, out.device)
        if callable(metric):
            return host_float(metric(out, y))
        check_choice("metric", metric, ["accuracy", "mse"])
        if metric == "accuracy":
            return host_float((out.argmax(1) == y).float().mean()) if len(task) else float("nan")
        return host_float(F.mse_loss(out, y))

    def clone_model(self) -> nn.Module:
        """A deep copy of the current model (frozen snapshots, experts, teachers)."""
        return copy.deepcopy(self.model)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(scenario={self.scenario!r}, lr={self.lr}, epochs={self.epochs})"


register("naive")(Strategy)
