"""DER: dynamically expandable representation (a non-pretrained dynamic network).

**DER** (``"der"``; Yan, Xie and He, CVPR 2021, "DER: Dynamically Expandable Representation
for Class Incremental Learning"), as PyCIL implements it (``models/der.py`` and
``utils/inc_net.py:DERNet``; the code the EDGE paper ran):

- the model is a :class:`DERNet`: a list of feature extractors, each a copy of the base
  model's ``features``, whose outputs (``d`` values each) are concatenated into the
  representation, and a *unified* linear head over it;
- at each new task after the first, a new extractor is appended, **initialised with the
  weights of the previous extractor** (PyCIL: ``convnets[-1].load_state_dict(
  convnets[-2].state_dict())``; batch-norm statistics included); the older extractors are
  frozen (``requires_grad`` off, evaluation mode, so their batch-norm statistics never move);
- the unified head is rebuilt ``(t + 1) d`` wide for task ``t`` (0-based): the rows of the
  classes seen before keep their weights on the old columns and their biases; every other
  entry (old rows on the new columns, rows of the other classes) is re-initialised as
  PyCIL's ``SimpleLinear`` (Kaiming uniform, gain 1: ``U(-sqrt(3 / fan_in), sqrt(3 / fan_in))``,
  bias 0);
- an auxiliary linear head on the newest extractor's features predicts the task's classes
  plus one "old" class (``|new| + 1`` outputs: label 0 for every class not of the task,
  ``i + 1`` for the task's ``i``-th class in ``task.classes`` order); its cross-entropy is
  added with weight ``aux_weight`` (1, as PyCIL);
- every task trains on its rows together with the rehearsal memory (PyCIL: the task's
  dataset with the exemplars appended, shuffled together);
- after each task but the first, **weight aligning** (PyCIL's ``weight_align``): the rows of
  the task's classes are scaled by ``gamma = mean ||w_old|| / mean ||w_new||`` (row norms
  of the whole weight, bias untouched; :func:`weight_align`);
- the memory keeps ``memory_size // num_seen_classes`` rows per seen class (PyCIL's default
  ``fixed_memory = False``): the rows of older classes are cut to the first rows kept, those
  of the task's classes are a uniform random subset drawn with the memory's own seeded
  generator.

Choices against PyCIL and the paper, documented:

- exemplars are a random subset per class, not herding (PyCIL selects by herding on the
  new representation); the per-class budget and the reduce-then-add order are PyCIL's;
- no channel-level masks, sparsity loss or pruning (the paper's second stage): PyCIL's DER
  implements none of them either;
- the first task trains the base model as given (its ``features`` and ``head``, their
  initialisation the user's); PyCIL builds a fresh network and head there;
- logits of classes not seen yet are ``-inf`` (PyCIL's head has rows for the seen classes
  only), except before the first task, when every logit is the head's; in the
  task-incremental scenario every training row is masked to the classes of its own task
  (memory rows keep their task id) and evaluation to the task's classes;
- one optimizer and learning rate for every task (PyCIL runs longer schedules with other
  settings on the first task).

The model needs ``features`` (any module mapping a batch to ``(N, d)``) and a linear ``head``
with ``in_features = d`` (:class:`~clkit.models.MLP`, the CNNs of :mod:`clkit.models.cnn`).
Classification only; needs task boundaries.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._validate import check_int, check_real
from ..device import move
from ._common import TaskAwareStrategy
from .base import Task, _cat, epoch_means, register, take

__all__ = ["DER", "DERNet", "weight_align", "aux_targets"]


def _init_linear(in_features: int, out_features: int, generator: torch.Generator, device) -> nn.Linear:
    """A linear layer initialised as PyCIL's ``SimpleLinear`` (Kaiming uniform, gain 1; bias 0), drawn
    on the CPU from ``generator`` (the same weights on every device, no global generator used) and
    moved to ``device``."""
    bound = math.sqrt(3.0 / in_features)
    weight = (torch.rand(out_features, in_features, generator=generator) * 2 - 1) * bound
    layer = torch.nn.utils.skip_init(nn.Linear, in_features, out_features, device=device)
    with torch.no_grad():
        layer.weight.copy_(weight)
        layer.bias.zero_()
    return layer


def keep_old_rows(head: nn.Linear, old: nn.Linear, old_classes) -> nn.Linear:
    """Copy the rows ``old_classes`` of ``old`` into the new ``head`` in place (PyCIL's ``update_fc``):
    their weights into the first ``old.in_features`` columns, their biases; returns ``head``.

    Examples
    --------
    >>> old, new = nn.Linear(2, 3), nn.Linear(4, 3)
    >>> _ = keep_old_rows(new, old, [0, 2])
    >>> torch.equal(new.weight[[0, 2], :2], old.weight[[0, 2]]), torch.equal(new.bias[[0, 2]], old.bias[[0, 2]])
    (True, True)
    """
    rows = sorted(int(c) for c in old_classes)
    if rows:
        idx = move(torch.as_tensor(rows, dtype=torch.int64), head.weight.device)
        with torch.no_grad():
            head.weight[idx, :old.in_features] = old.weight.detach()[idx]
            if old.bias is not None:
                head.bias[idx] = old.bias.detach()[idx]
    return head


def expand_heads(net: nn.Module, blocks: int, generator: torch.Generator, old_classes, new_classes) -> None:
    """Widen ``net.head`` to ``blocks * net.feature_dim`` inputs (rows ``old_classes`` kept, see
    :func:`keep_old_rows`, the rest re-initialised) and give ``net`` a fresh ``aux_head`` of
    ``len(new_classes) + 1`` outputs, both drawn from ``generator`` in that order on the CPU and
    moved to the old head's device (the head expansion of :class:`DERNet`, MEMO's and TagFex's nets)."""
    old = net.head
    dev = old.weight.device
    net.head = keep_old_rows(_init_linear(net.feature_dim * blocks, net.num_classes, generator, dev), old,
                             old_classes)
    net.aux_head = _init_linear(net.feature_dim, len(new_classes) + 1, generator, dev)


def prior_classes(strategy, task: Task, name: str) -> set:
    """The classes of the tasks ``strategy`` trained before (``strategy.trained_tasks``); sets
    ``strategy.classes_before`` (those not in ``task``, sorted). A ``ValueError`` naming ``name``
    when the task has no classes."""
    if not task.classes:
        raise ValueError(f"{name} needs the task's classes (integer labels)")
    prior = set()
    for t in strategy.trained_tasks:
        prior.update(strategy.task_classes.get(t, ()))
    strategy.classes_before = tuple(sorted(prior - set(task.classes)))
    return prior


def seen_mask(num_classes: int, classes, device) -> torch.Tensor:
    """``(num_classes,)``: 0 at ``classes``, ``-inf`` elsewhere, on ``device``."""
    seen = torch.full((num_classes,), float("-inf"))
    seen[sorted(classes)] = 0.0
    return move(seen, device)


def weight_align(weight: torch.Tensor, old, new) -> torch.Tensor:
    """Scale the rows ``new`` of ``weight`` in place so that their mean L2 norm equals that of the
    rows ``old`` (PyCIL's ``DERNet.weight_align``); returns the factor ``gamma`` (a 0-dim tensor on
    ``weight``'s device: nothing is read from it).

    Parameters
    ----------
    weight : Tensor, shape (C, D)
    old, new : sequence of int
        Row indices (classes seen before the task, the task's classes).

    Examples
    --------
    >>> w = torch.tensor([[3.0, 4.0], [0.0, 1.0], [0.0, 2.0], [6.0, 8.0]])
    >>> float(weight_align(w, old=[0, 1], new=[2, 3]))   # old mean norm 3, new mean norm 6
    0.5
    >>> w.tolist()
    [[3.0, 4.0], [0.0, 1.0], [0.0, 1.0], [3.0, 4.0]]
    """
    dev = weight.device
    old_i = move(torch.as_tensor(list(old), dtype=torch.int64), dev)
    new_i = move(torch.as_tensor(list(new), dtype=torch.int64), dev)
    with torch.no_grad():
        gamma = weight[old_i].norm(dim=1).mean() / weight[new_i].norm(dim=1).mean()
        weight[new_i] = weight[new_i] * gamma
    return gamma


def aux_targets(num_classes: int, classes) -> torch.Tensor:
    """Lookup table of the auxiliary head's labels: ``table[c]`` is 0 ("old") for every class
    ``c`` not in ``classes`` and ``i + 1`` for ``c = classes[i]``.

    Examples
    --------
    >>> table = aux_targets(6, (4, 2))
    >>> table.tolist(), table[torch.tensor([0, 2, 4, 5])].tolist()
    ([0, 0, 2, 0, 1, 0], [0, 2, 1, 0])
    """
    table = torch.zeros(num_classes, dtype=torch.int64)
    for i, c in enumerate(classes):
        table[int(c)] = i + 1
    return table


class DERNet(nn.Module):
    """Concatenated feature extractors with a unified head and an auxiliary head (behind :class:`DER`).

    Parameters
    ----------
    base : torch.nn.Module
        Has ``features`` (mapping a batch to ``(N, d)``) and a linear ``head`` (``d`` inputs).
        Its ``features`` and ``head`` are the first extractor and the first unified head.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> net = DERNet(MLP(3, 4, hidden=(5,)))
    >>> net.expand(torch.Generator().manual_seed(0), old_classes=[0, 1], new_classes=[2, 3])
    >>> len(net.extractors), net.head.in_features, net.aux_head.out_features
    (2, 10, 3)
    >>> logits, aux = net(torch.zeros(2, 3), aux=True)
    >>> logits.shape, aux.shape
    (torch.Size([2, 4]), torch.Size([2, 3]))
    """

    def __init__(self, base: nn.Module):
        super().__init__()
        head = getattr(base, "head", None)
        if not isinstance(head, nn.Linear):
            raise TypeError(f"DER needs a model with a linear `head` (e.g. clkit.models.MLP), "
                            f"got {type(base).__name__}")
        if not isinstance(getattr(base, "features", None), nn.Module):
            raise TypeError(f"DER needs a model with a `features` module, got {type(base).__name__}")
        self.feature_dim = head.in_features
        self.num_classes = head.out_features
        self.extractors = nn.ModuleList([base.features])
        self.head = head
        self.aux_head: nn.Linear | None = None

    def expand(self, generator: torch.Generator, old_classes, new_classes) -> None:
        """Append an extractor (a copy of the newest, weights and statistics), freeze the older ones,
        widen the unified head by ``d`` columns (the rows ``old_classes`` keep their old columns and
        biases, the rest is re-initialised) and build a fresh auxiliary head of
        ``len(new_classes) + 1`` outputs. New layers are drawn from ``generator`` on the CPU and
        moved to the head's device."""
        for ext in self.extractors:
            ext.requires_grad_(False)
        new = copy.deepcopy(self.extractors[-1])
        new.requires_grad_(True)
        self.extractors.append(new)
        expand_heads(self, len(self.extractors), generator, old_classes, new_classes)

    def forward(self, x, aux: bool = False):
        """Unified logits ``(N, C)``; with ``aux=True`` also the auxiliary logits of the newest
        extractor's features (``None`` before the first expansion)."""
        feats = [ext(x) for ext in self.extractors]
        logits = self.head(feats[0] if len(feats) == 1 else torch.cat(feats, 1))
        if not aux:
            return logits
        return logits, (self.aux_head(feats[-1]) if self.aux_head is not None else None)


@register("der")
class DER(TaskAwareStrategy):
    """DER: a new feature extractor per task, old ones frozen, unified + auxiliary heads, rehearsal.

    Parameters
    ----------
    model : torch.nn.Module
        Has ``features`` and a linear ``head`` (see :class:`DERNet`); ``head.out_features`` is the
        number of classes of the stream.
    memory_size : int
        Rehearsal rows kept over all classes, ``memory_size // num_seen_classes`` per class
        (PyCIL's default 2000).
    aux_weight : float
        Weight of the auxiliary head's cross-entropy (PyCIL: 1).
    align_weights : bool
        Weight aligning after each task but the first (PyCIL: always on).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = DER(MLP(2, 4, hidden=(3,)), memory_size=4)
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([0, 1] * 4), task_id=0))
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([2, 3] * 4), task_id=1))
    >>> len(s.model.extractors), s.model.head.in_features, s.model.aux_head.out_features
    (2, 6, 3)
    >>> sorted(s.memory_labels.tolist())
    [0, 1, 2, 3]
    """

    task_free = False
    supports_regression = False

    def __init__(self, model, *, memory_size: int = 2000, aux_weight: float = 1.0, align_weights: bool = True,
                 **kwargs):
        self.memory_size = check_int("memory_size", memory_size, low=0)
        self.aux_weight = check_real("aux_weight", aux_weight, low=0)
        if not isinstance(align_weights, bool):
            raise ValueError(f"align_weights must be True or False, got {align_weights!r}")
        self.align_weights = align_weights
        if kwargs.get("loss", "cross_entropy") != "cross_entropy":
            raise ValueError(f"strategy 'der' is classification only: loss must be 'cross_entropy', "
                             f"got {kwargs['loss']!r}")
        super().__init__(DERNet(model), **kwargs)
        self.init_generator = torch.Generator().manual_seed(self.seed)   # new heads' weights
        self.memory_rng = np.random.default_rng(self.seed)               # exemplar choice
        self.trained_tasks: list[int] = []
        self.classes_before: tuple = ()       # classes seen before the current task
        self._aux_table: torch.Tensor | None = None
        self._seen_mask: torch.Tensor | None = None
        # memory: rows on the device, labels and task ids mirrored on the host
        self.memory_x = None
        self.memory_y = None
        self.memory_tids = None
        self.memory_labels = np.zeros(0, dtype=np.int64)
        self.memory_tids_host = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ structure
    def before_task(self, task: Task) -> None:
        if task.task_id in self.trained_tasks:
            return
        prior = prior_classes(self, task, "DER")
        dev = self.model.head.weight.device
        if self.trained_tasks:
            self.model.expand(self.init_generator, self.classes_before, task.classes)
            self._aux_table = move(aux_targets(self.model.num_classes, task.classes), dev)
        self._seen_mask = seen_mask(self.model.num_classes, prior | set(task.classes), dev)
        self.trained_tasks.append(task.task_id)
        self.refresh_train_mode()
        self.optimizer = self.make_optimizer([p for p in self.model.parameters() if p.requires_grad])

    def frozen_modules(self) -> list:
        """Every extractor but the newest (evaluation mode: batch-norm statistics stay)."""
        return list(self.model.extractors)[:-1]

    # ------------------------------------------------------------------ forward and step
    def _rows_mask(self, out: torch.Tensor, task_ids: torch.Tensor) -> torch.Tensor:
        """``out`` plus the unseen-class mask; in the task-incremental scenario each row masked to
        the classes of its own task (a row of task id -1 is not masked)."""
        if self._seen_mask is not None:
            out = out + self._seen_mask
        if self.scenario != "task" or not self.task_classes:
            return out
        size = max(max(self.task_classes), max(self.seen_tasks, default=0)) + 2
        key = (size, out.shape[1], out.device, tuple(self.task_classes.items()))
        if getattr(self, "_mask_key", None) != key:
            table = torch.zeros((size, out.shape[1]))   # last row: task id -1, no mask
            for t, classes in self.task_classes.items():
                table[t] = float("-inf")
                table[t, list(classes)] = 0.0
            self._mask_key, self._mask_table = key, move(table, out.device)
        return out + self._mask_table[task_ids]

    def forward(self, x, task: Task | None = None, classes=None):
        out = self.model(x)
        if self._seen_mask is not None:
            out = out + self._seen_mask
        return self.mask_logits(out, classes if classes is not None else (task.classes if task is not None else None))

    def rows_loss(self, x, y, task_ids: torch.Tensor) -> torch.Tensor:
        """Cross-entropy of the unified head plus ``aux_weight`` times the auxiliary head's."""
        logits, aux = self.model(x, aux=True)
        loss = self.criterion(self._rows_mask(logits, task_ids), y)
        if aux is not None and self.aux_weight > 0:
            loss = loss + self.aux_weight * F.cross_entropy(aux, self._aux_table[y])
        return loss

    def train_task(self, task: Task, epochs: int | None = None) -> list[float]:
        """Train on the task's rows and the memory shuffled together (``epochs`` passes), then align
        the weights and update the memory."""
        task = task.to(self.device)
        epochs = self.begin_task(task, epochs)
        x, y, tids = task.x, task.y, self.task_ids_of(len(task), task)
        if self.memory_y is not None and len(self.memory_y):
            x, y, tids = _cat(x, self.memory_x), torch.cat([y, self.memory_y]), torch.cat([tids, self.memory_tids])
        history = []
        for _ in range(epochs):
            history.append([self.step_rows(take(x, i), y[i], tids[i], task) for i in self.batches(len(y), self.device)])
        self.after_task(task)
        return epoch_means(history)

    # ------------------------------------------------------------------ after a task
    def after_task(self, task: Task) -> None:
        new = [c for c in task.classes if c not in self.classes_before]
        if self.align_weights and self.classes_before and new and len(self.model.extractors) > 1:
            weight_align(self.model.head.weight.data, self.classes_before, new)
        self._update_memory(task)

    def _reduce_memory(self, task: Task):
        """PyCIL's reduce step, shared by DER, MEMO and TagFex: ``(labels, per_class, keep)`` -- the task's
        labels on the host, ``memory_size // num_seen_classes`` and the memory rows kept of the older
        classes (their first ``per_class``) -- or ``None`` when nothing is to be kept."""
        labels = task.labels_host().astype(np.int64)
        seen = sorted(set(self.memory_labels.tolist()) | set(int(c) for c in task.classes))
        if self.memory_size == 0 or not seen:
            return None
        per_class = self.memory_size // len(seen)
        keep = []
        for c in sorted(set(self.memory_labels.tolist()) - set(task.classes)):
            keep.extend(np.nonzero(self.memory_labels == c)[0][:per_class].tolist())
        return labels, per_class, keep

    def _update_memory(self, task: Task) -> None:
        """Keep ``memory_size // num_seen_classes`` rows per class: the first rows kept of older
        classes, a random subset of the task's classes."""
        reduced = self._reduce_memory(task)
        if reduced is None:
            return
        labels, per_class, keep = reduced
        keep = np.asarray(keep, dtype=np.int64)
        new = []
        for c in task.classes:
            rows = np.nonzero(labels == int(c))[0]
            new.extend(self.memory_rng.permutation(rows)[:per_class].tolist())
        new = np.asarray(new, dtype=np.int64)
        new_t = torch.from_numpy(new)
        x_new, y_new = take(task.x, new_t), take(task.y, new_t)
        t_new = np.full(len(new), task.task_id, dtype=np.int64)
        if len(keep) and self.memory_y is not None:
            keep_t = torch.from_numpy(keep)
            x_new = _cat(take(self.memory_x, keep_t), x_new)
            y_new = torch.cat([take(self.memory_y, keep_t), y_new])
            labels_new = np.concatenate([self.memory_labels[keep], labels[new]])
            t_new = np.concatenate([self.memory_tids_host[keep], t_new])
        else:
            labels_new = labels[new]
        self.memory_x, self.memory_y = x_new, y_new
        self.memory_labels, self.memory_tids_host = labels_new, t_new
        self.memory_tids = move(torch.from_numpy(t_new.copy()), self.device)
