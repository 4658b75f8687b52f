"""Architectural strategies: MSTE, PNN and CWR*.

- **MSTE** (``"mste"``, multiple single-task experts): a fresh copy of the
  initial model for every task, trained on that task only; prediction routes
  by task id. Task-incremental only. For a task not trained yet (the
  forward-transfer entries ``R[i, j], j > i``) the untrained initial model
  answers -- no knowledge can flow to it, which is what MSTE means.
- **PNN** (``"pnn"``, Rusu et al., 2016): one column per task, earlier columns
  frozen; column ``k`` receives lateral connections from the same depth of every
  earlier column. Needs a model with ``features`` (an ``nn.Sequential``) and a
  linear ``head`` (:class:`~clkit.models.MLP`, :class:`~clkit.models.cnn.SmallCNN`).
  Laterals enter at every ``nn.Linear`` of ``features`` after the first and at
  the head; convolutional features are one block (lateral at the head only:
  the paper notes that the reference implementation supports fully connected
  layers only). Each column is initialised from the initial model's weights.
  Task-incremental only; a task not trained yet uses the newest column.
- **CWR*** (``"cwr"``, Lomonaco et al., 2019): the whole model learns the
  first task; afterwards everything but the output layer is frozen. Per task
  the output rows of the task's classes are reset to zero and trained with the
  softmax restricted to the task's classes (in both scenarios); at the
  task's end they are *consolidated* into the kept weights:
  ``cw_j = (cw_j n_j + (tw_j - mean_task(tw)) m_j) / (n_j + m_j)`` with ``n_j``
  past and ``m_j`` current examples of class ``j``; rows of other classes stay
  untouched. Prediction uses the consolidated weights. Classification only;
  the model needs a linear ``head``.
"""

from __future__ import annotations

import contextlib
import copy

import numpy as np
import torch
from torch import nn

from .._seed import torch_seeded
from .base import Strategy, Task, register

__all__ = ["MSTE", "PNN", "CWRStar", "ProgressiveNet"]


def _need_head(model, who: str):
    if not isinstance(getattr(model, "head", None), nn.Linear):
        raise TypeError(f"{who} needs a model with a linear `head` (e.g. clkit.models.MLP), "
                        f"got {type(model).__name__}")


@register("mste")
class MSTE(Strategy):
    """Multiple single-task experts (task-incremental upper-bound baseline).

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = MSTE(MLP(2, 4, hidden=()), scenario="task")
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([0, 1] * 4), task_id=0))
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([2, 3] * 4), task_id=1))
    >>> len(s.experts)
    2
    """

    task_free = False
    task_incremental_only = True

    def __init__(self, model, **kwargs):
        super().__init__(model, **kwargs)
        self.initial = copy.deepcopy(self.model)
        self.experts = nn.ModuleDict()

    def before_task(self, task: Task) -> None:
        key = str(task.task_id)
        if key not in self.experts:
            self.experts[key] = copy.deepcopy(self.initial)
        self.model = self.experts[key]
        self.optimizer = self.make_optimizer(self.model.parameters())

    def forward(self, x, task: Task | None = None, classes=None):
        if task is None:
            raise ValueError("MSTE needs the task (task id) to pick an expert: pass task=")
        key = str(task.task_id)
        expert = self.experts[key] if key in self.experts else self.initial
        expert.train(self.model.training)
        return self.mask_logits(expert(x), classes if classes is not None else task.classes)


class ProgressiveNet(nn.Module):
    """Columns of a base model with lateral connections (the network behind :class:`PNN`).

    Parameters
    ----------
    base : torch.nn.Module
        Has ``features`` (``nn.Sequential``) and a linear ``head``.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> net = ProgressiveNet(MLP(3, 2, hidden=(5, 4)))
    >>> net.add_column(); net.add_column()
    >>> net(torch.zeros(6, 3), column=1).shape
    torch.Size([6, 2])
    >>> [tuple(a.weight.shape) for a in net.laterals[1]]   # (col 0 -> col 1): before layer 2 and the head
    [(4, 5), (2, 4)]
    """

    def __init__(self, base: nn.Module):
        super().__init__()
        _need_head(base, "PNN")
        if not isinstance(getattr(base, "features", None), nn.Sequential):
            raise TypeError(f"PNN needs a model whose `features` is an nn.Sequential, got {type(base).__name__}")
        self.base = copy.deepcopy(base)
        # blocks: split features before every nn.Linear but the first
        mods = list(self.base.features)
        linear_at = [i for i, m in enumerate(mods) if isinstance(m, nn.Linear)][1:]
        cuts = [0, *linear_at, len(mods)]
        self.cuts = cuts
        self.columns = nn.ModuleList()
        self.laterals = nn.ModuleList()   # laterals[k]: adapters of column k, per entry point and source

    def add_column(self, seed: int | None = None) -> None:
        """Append a column (a copy of the base) and its lateral adapters; freeze the older columns.

        ``seed``: the adapters are initialised from a generator seeded with ``(seed, column index)``
        (:func:`clkit._seed.torch_seeded`), so a rerun gives the same adapters whatever else drew from
        torch's global generator before (issue 55); ``None`` draws from the global generator."""
        for col in self.columns:
            col.requires_grad_(False)
        for lat in self.laterals:
            lat.requires_grad_(False)
        col = nn.ModuleDict({"features": copy.deepcopy(self.base.features), "head": copy.deepcopy(self.base.head)})
        entries = [m for m in col["features"] if isinstance(m, nn.Linear)][1:] + [col["head"]]
        k = len(self.columns)
        adapters = nn.ModuleList()
        local = (contextlib.nullcontext() if seed is None
                 else torch_seeded(int(np.random.SeedSequence([int(seed), k]).generate_state(1)[0])))
        with local:
            for layer in entries:
                for _ in range(k):
                    # initialised on the CPU, then moved: the same initial weights on every device
                    adapters.append(nn.Linear(layer.in_features, layer.out_features, bias=False)
                                    .to(layer.weight.device))
        self.columns.append(col)
        self.laterals.append(adapters)

    def forward(self, x, column: int = -1):
        column = column % len(self.columns)
        acts = []   # acts[j][e]: input of entry point e in column j
        out = None
        for j in range(column + 1):
            col = self.columns[j]
            blocks = list(col["features"])
            h = x
            entry_inputs = []
            e = 0
            for b, (a, z) in enumerate(zip(self.cuts[:-1], self.cuts[1:])):
                for i in range(a, z):
                    m = blocks[i]
                    if b > 0 and i == a:   # first (linear) module of a later block: add laterals
                        entry_inputs.append(h)
                        h = m(h) + self._lateral(j, e, acts)
                        e += 1
                    else:
                        h = m(h)
            entry_inputs.append(h)
            out = col["head"](h) + self._lateral(j, e, acts)
            acts.append(entry_inputs)
        return out

    def _lateral(self, j: int, e: int, acts) -> torch.Tensor | float:
        if j == 0:
            return 0.0
        adapters = self.laterals[j]
        return sum(adapters[e * j + src](acts[src][e]) for src in range(j))


@register("pnn")
class PNN(Strategy):
    """Progressive neural networks (task-incremental only).

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = PNN(MLP(2, 4, hidden=(3,)), scenario="task")
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([0, 1] * 4), task_id=0))
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([2, 3] * 4), task_id=1))
    >>> len(s.model.columns), s.column_of
    (2, {0: 0, 1: 1})
    """

    task_free = False
    task_incremental_only = True

    def __init__(self, model, **kwargs):
        super().__init__(ProgressiveNet(model), **kwargs)
        self.column_of: dict[int, int] = {}

    def before_task(self, task: Task) -> None:
        if task.task_id not in self.column_of:
            self.model.add_column(seed=self.seed)
            self.column_of[task.task_id] = len(self.model.columns) - 1
        self.refresh_train_mode()
        self.optimizer = self.make_optimizer([p for p in self.model.parameters() if p.requires_grad])

    def frozen_modules(self) -> list:
        """The frozen columns and adapters (all but the newest column's), batch-norm statistics included."""
        return [m for m in (*self.model.columns, *self.model.laterals)
                if not any(p.requires_grad for p in m.parameters())]

    def forward(self, x, task: Task | None = None, classes=None):
        if task is None:
            raise ValueError("PNN needs the task (task id) to pick a column: pass task=")
        if not self.model.columns:
            self.model.add_column(seed=self.seed)
        out = self.model(x, column=self.column_of.get(task.task_id, -1))
        return self.mask_logits(out, classes if classes is not None else task.classes)


@register("cwr")
class CWRStar(Strategy):
    """CWR*: frozen representation after the first task, consolidated output layer.

    CWR* as Lomonaco, Maltoni and Pellegrini (2019, "Rehearsal-free continual learning over
    small non-i.i.d. batches", Algorithm CWR*) define it and Avalanche's ``CWRStarPlugin`` (the
    code the M2I/I2M authors ran) implements it: before a task, the output rows of its classes
    start from their consolidated weights (zero for a class not seen before); after it, each
    trained row ``tw[j]`` is centred by the *scalar* average of the trained rows of the task's
    classes and consolidated as

    ``cw[j] = (cw[j] * wpast_j + (tw[j] - avg(tw))) / (wpast_j + 1)``,
    ``wpast_j = sqrt(past_j / cur_j)``,

    where ``past_j`` counts class ``j``'s examples of earlier tasks and ``cur_j`` this task's
    (a class seen for the first time takes ``tw[j] - avg(tw)``). The bias, which Avalanche
    leaves to train freely, is consolidated by the same rule here (so evaluation uses one
    consolidated layer). Documented choice: during training only the task's classes compete
    (the other outputs are masked, as in every clkit task-boundary strategy); Avalanche sets
    the other rows to zero, so their logits are their biases.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = CWRStar(MLP(2, 4, hidden=(3,)))
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([0, 1] * 4), task_id=0))
    >>> s.class_counts.tolist()
    [4.0, 4.0, 0.0, 0.0]
    """

    task_free = False
    supports_regression = False

    def __init__(self, model, **kwargs):
        _need_head(model, "CWR*")
        super().__init__(model, **kwargs)
        head = self.model.head
        self.cw_weight = torch.zeros_like(head.weight.detach())
        self.cw_bias = torch.zeros(head.out_features, device=head.weight.device)
        self.class_counts = torch.zeros(head.out_features)   # on the host: bookkeeping

    def before_task(self, task: Task) -> None:
        head = self.model.head
        if self.class_counts.sum() > 0:   # after the first task: only the output layer learns
            for name, p in self.model.named_parameters():
                p.requires_grad_(name.startswith("head."))
            self.refresh_train_mode()
        with torch.no_grad():  # the task's rows start from their consolidated weights (0 if new)
            cls = list(task.classes)
            head.weight[cls] = self.cw_weight[cls]
            if head.bias is not None:
                head.bias[cls] = self.cw_bias[cls]
        self.optimizer = self.make_optimizer([p for p in self.model.parameters() if p.requires_grad])

    def frozen_modules(self) -> list:
        """After the first task, everything but the output layer (batch-norm statistics included)."""
        if self.class_counts.sum() == 0:
            return []
        return [m for name, m in self.model.named_children() if name != "head"]

    def forward(self, x, task: Task | None = None, classes=None):
        out = self.model(x)
        if self.model.training and task is not None:   # training: only the current classes compete
            return self.mask_logits(out, task.classes, "task")
        return self.mask_logits(out, classes if classes is not None else (task.classes if task else None))

    def after_task(self, task: Task) -> None:
        head = self.model.head
        classes = list(task.classes)
        counts = np.bincount(task.labels_host().astype(np.int64), minlength=head.out_features)[classes]
        m_host = torch.as_tensor(counts, dtype=torch.float32)
        dev = head.weight.device
        cls = torch.as_tensor(classes, device=dev)
        m, n = m_host.to(dev), self.class_counts[classes].to(dev)
        wpast = torch.where(m > 0, torch.sqrt(n / m.clamp(min=1)), torch.zeros_like(m))  # sqrt(past_j / cur_j)
        tw = head.weight.detach()[cls]
        self.cw_weight[cls] = (self.cw_weight[cls] * wpast[:, None] + (tw - tw.mean())) / (wpast + 1)[:, None]
        if head.bias is not None:
            tb = head.bias.detach()[cls]
            self.cw_bias[cls] = (self.cw_bias[cls] * wpast + (tb - tb.mean())) / (wpast + 1)
        self.class_counts[classes] += m_host
        self._load_consolidated()

    def _load_consolidated(self) -> None:
        head = self.model.head
        with torch.no_grad():
            head.weight.copy_(self.cw_weight)
            if head.bias is not None:
                head.bias.copy_(self.cw_bias)
