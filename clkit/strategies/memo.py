"""MEMO: memory-efficient expandable model (shared generalised blocks, one specialised block per task).

**MEMO** (``"memo"``; Zhou, Wang, Ye and Zhan, ICLR 2023, "A Model or 603 Exemplars: Towards
Memory-Efficient Class-Incremental Learning"), as the EDGE authors ran it: the PyCIL tree of
AIGNLAI/EDGE at commit ``a60c1179cf762e8c1197ab876a3c06db3a49b639`` -- ``PyCIL/models/memo.py``
(``MEMO``), ``PyCIL/utils/inc_net.py`` (``AdaptiveNet``), ``PyCIL/convs/memo_cifar_resnet.py``
(``GeneralizedResNet_cifar`` / ``SpecializedResNet_cifar``) and ``PyCIL/exps/memo.json`` (CIFAR-100).
Read, not copied; the numbers of ``tests/test_strategies_memo.py`` come from running that code.

- The model is a :class:`MEMONet`: the base model's ``features`` (an ``nn.Sequential``) are cut at
  ``split``: ``features[:split]`` are the **generalised blocks**, shared by every task;
  ``features[split:]`` is the first **specialised block**. Each specialised block maps the
  generalised feature map to ``d`` values; their outputs are concatenated into the representation
  read by a *unified* linear head. ``split=None`` puts the cut before the last module of
  ``features`` that has parameters (with the modules after it): for clkit's
  :class:`~clkit.models.cnn.CifarResNet` that is its last stage (plus pooling), MEMO's own cut of
  ResNet-32 (PyCIL: stem and stages 1-2 generalised, stage 3 specialised); for
  :class:`~clkit.models.MLP` it is the last hidden ``Linear`` (and its ReLU).
- At each task after the first a new specialised block is appended, **initialised with the
  weights and batch-norm statistics of the previous one** (PyCIL: ``load_state_dict``); the older
  specialised blocks are frozen (no gradient, evaluation mode) unless ``train_adaptive``; the
  generalised blocks keep training when ``train_base`` (the CIFAR-100 config: ``true``), else they
  are frozen after the first task (no gradient, evaluation mode).
- The unified head is rebuilt ``(t + 1) d`` wide for task ``t``: rows of the classes seen before
  keep their old columns and biases, every other entry is re-initialised as PyCIL's
  ``SimpleLinear`` (Kaiming uniform, gain 1; bias 0); the auxiliary head (``|new| + 1``
  outputs: 0 for "old", ``i + 1`` for the task's ``i``-th class) reads the newest block's
  features; loss = CE(unified) + ``aux_weight`` * CE(aux) from the second task on, CE(unified)
  alone on the first (PyCIL's ``_init_train``). These pieces are :class:`~clkit.strategies.der.DER`'s
  (whose code this class reuses): MEMO's network is DER's with the shallow part shared.
- Each task trains on its rows with the rehearsal memory appended; after each task but the first,
  **weight aligning** (:func:`~clkit.strategies.der.weight_align`).
- **Schedules** (PyCIL's ``_train``): SGD, momentum 0.9; the first task with ``init_lr`` and
  ``init_weight_decay`` for ``init_epochs`` epochs, the lr multiplied by ``init_lr_decay`` at each
  of ``init_milestones``; later tasks with ``lr``, ``weight_decay``, ``epochs``, ``milestones``
  and ``lr_decay`` (``MultiStepLR`` stepped once per epoch).
- **Memory** (PyCIL's ``build_rehearsal_memory``, ``fixed_memory = false``):
  ``memory_size // num_seen_classes`` rows per seen class; older classes are cut to their first
  rows, the new classes' rows are chosen by herding (:func:`~clkit.strategies.icarl.herding`) on
  the L2-normalised concatenated features, in evaluation mode.
- Prediction: argmax of the unified head (PyCIL's CNN accuracy); classes not seen yet are ``-inf``.

Choices against the authors' code, documented:

- ``init_epochs=None`` (the default) runs the first task for ``epochs`` epochs; the CIFAR-100
  config runs 200 then 170: pass ``**MEMO_CIFAR100`` (:data:`MEMO_CIFAR100`) for all its settings.
- The first task trains the base model's own ``features`` and ``head`` with the user's
  initialisation (PyCIL builds fresh ones); no data augmentation (clkit's loops have none); the
  unseen classes are masked to ``-inf`` instead of being absent from the head (same loss and
  gradients); the task-incremental scenario masks each row to its task's classes (DER's rule).
- PyCIL's ``skip`` (load a first-task checkpoint) and NME evaluation are not provided.

The model needs ``features`` (an ``nn.Sequential`` ending in a flat ``(N, d)``; a plain
``nn.Sequential`` ending in ``nn.Linear`` is split before that layer) and a linear ``head`` with
``in_features = d``. Classification only; needs task boundaries. No cached frozen features: the
generalised blocks train on every task under the authors' config (``train_base=True``).
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from .._validate import check_int, check_real
from ..device import move
from ._common import TaskAwareStrategy, features_and_head
from .base import Task, _cat, _sgd, epoch_means, register, take
from .der import DER, aux_targets, expand_heads, prior_classes, seen_mask, weight_align
from .icarl import herding

__all__ = ["MEMO", "MEMONet", "MEMO_CIFAR100", "default_split", "lr_at"]

#: ``PyCIL/exps/memo.json`` (CIFAR-100, 10 tasks of 10 classes) as MEMO's keywords.
MEMO_CIFAR100 = dict(memory_size=2000, train_base=True, train_adaptive=False, init_epochs=200, init_lr=0.1,
                     init_weight_decay=5e-4, init_lr_decay=0.1, init_milestones=(60, 120, 170), epochs=170,
                     lr=0.1, weight_decay=2e-4, lr_decay=0.1, milestones=(80, 120, 150), batch_size=128,
                     aux_weight=1.0, momentum=0.9)


def default_split(features: nn.Sequential) -> int:
    """Index of the last module of ``features`` that has parameters (0 if none): where MEMO's
    specialised part starts by default.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> default_split(MLP(6, 6, hidden=(8, 8)).features)    # Flatten, Linear, ReLU | Linear, ReLU
    3
    """
    last = 0
    for i, m in enumerate(features):
        if any(True for _ in m.parameters()):
            last = i
    return last


def lr_at(base_lr: float, epoch: int, milestones, decay: float) -> float:
    """The learning rate of 0-based ``epoch`` under ``MultiStepLR`` stepped once per epoch:
    ``base_lr * decay ** (number of milestones <= epoch)``.

    Examples
    --------
    >>> [lr_at(0.1, e, (1, 3), 0.5) for e in range(4)]
    [0.1, 0.05, 0.05, 0.025]
    """
    return base_lr * decay ** sum(1 for m in milestones if m <= epoch)


class MEMONet(nn.Module):
    """Shared generalised blocks, one specialised block per task, unified and auxiliary heads.

    Parameters
    ----------
    base : torch.nn.Module
        Has ``features`` (an ``nn.Sequential``) and a linear ``head``; see :class:`MEMO`.
    split : int or None
        ``features[:split]`` are the generalised blocks, ``features[split:]`` the first
        specialised block (``None``: :func:`default_split`).

    Examples
    --------
    >>> from clkit.models import MLP
    >>> net = MEMONet(MLP(3, 4, hidden=(5,)))
    >>> net.expand(torch.Generator().manual_seed(0), old_classes=[0, 1], new_classes=[2, 3])
    >>> len(net.generalized), len(net.specialized), net.head.in_features, net.aux_head.out_features
    (1, 2, 10, 3)
    >>> [t.shape for t in net(torch.zeros(2, 3), aux=True)]
    [torch.Size([2, 4]), torch.Size([2, 3])]
    """

    def __init__(self, base: nn.Module, split: int | None = None):
        super().__init__()
        feats, head = features_and_head(base)
        if not isinstance(head, nn.Linear):
            raise TypeError(f"MEMO needs a model with a linear `head` (e.g. clkit.models.MLP), got {type(base).__name__}")
        if not isinstance(feats, nn.Sequential) or len(feats) == 0:
            raise TypeError(f"MEMO needs a model whose `features` is a non-empty nn.Sequential (to cut into "
                            f"generalised and specialised blocks), got {type(feats).__name__}")
        split = default_split(feats) if split is None else check_int("split", split, low=0, high=len(feats) - 1)
        self.split = split
        self.feature_dim = head.in_features
        self.num_classes = head.out_features
        self.generalized = feats[:split]
        self.specialized = nn.ModuleList([feats[split:]])
        self.head = head
        self.aux_head: nn.Linear | None = None

    def expand(self, generator: torch.Generator, old_classes, new_classes) -> None:
        """Append a specialised block (a copy of the newest: weights and statistics, trainable),
        widen the unified head by ``d`` columns (rows ``old_classes`` keep their old columns and
        biases, the rest re-initialised) and build a fresh auxiliary head of ``len(new_classes) + 1``
        outputs; new layers are drawn from ``generator`` on the CPU. Freezing is the strategy's."""
        new = copy.deepcopy(self.specialized[-1])
        new.requires_grad_(True)
        self.specialized.append(new)
        expand_heads(self, len(self.specialized), generator, old_classes, new_classes)

    def extract(self, x) -> torch.Tensor:
        """The representation: the specialised blocks' features concatenated, ``(N, t d)``."""
        base = self.generalized(x)
        feats = [block(base) for block in self.specialized]
        return feats[0] if len(feats) == 1 else torch.cat(feats, 1)

    def forward(self, x, aux: bool = False):
        """Unified logits ``(N, C)``; with ``aux=True`` also the auxiliary logits of the newest
        block's features (``None`` before the first expansion)."""
        feats = self.extract(x)
        logits = self.head(feats)
        if not aux:
            return logits
        return logits, (self.aux_head(feats[:, -self.feature_dim:]) if self.aux_head is not None else None)


def _milestones(name: str, value) -> tuple:
    try:
        out = tuple(check_int(name, m, low=0) for m in value)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of non-negative ints, got {value!r}") from None
    return out


@register("memo")
class MEMO(DER):
    """MEMO: shared generalised blocks, a specialised block per task, unified + auxiliary heads, herding memory.

    Parameters
    ----------
    model : torch.nn.Module
        Has ``features`` (an ``nn.Sequential``) and a linear ``head`` (see :class:`MEMONet`);
        ``head.out_features`` is the number of classes of the stream.
    split : int or None
        Where ``features`` is cut into generalised / specialised blocks (``None``: :func:`default_split`).
    memory_size : int
        Rehearsal rows over all classes (``memo.json``: 2000).
    aux_weight : float
        Weight of the auxiliary cross-entropy (``alpha_aux``: 1).
    train_base : bool
        Keep training the generalised blocks after the first task (``train_base``: true).
    train_adaptive : bool
        Keep training the older specialised blocks (``train_adaptive``: false).
    init_epochs : int or None
        Epochs of the first task (``init_epoch``: 200); ``None``: ``epochs``.
    init_lr, init_weight_decay, init_lr_decay, init_milestones
        First task's SGD (``init_lr`` 0.1, ``init_weight_decay`` 5e-4, ``init_lr_decay`` 0.1,
        ``init_milestones`` (60, 120, 170)).
    lr, weight_decay, lr_decay, milestones, epochs
        Later tasks' SGD (``lrate`` 0.1, ``weight_decay`` 2e-4, ``lrate_decay`` 0.1, ``milestones``
        (80, 120, 150), ``epochs`` 170).
    momentum, batch_size
        0.9 (PyCIL's SGD) and 128 (``batch_size``).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy` (``optimizer``: ``"sgd"`` as PyCIL; another
        name gets the phase's lr and weight decay; a callable gets the parameters only).

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = MEMO(MLP(2, 4, hidden=(3,)), memory_size=4, epochs=1, batch_size=8)
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([0, 1] * 4), task_id=0))
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([2, 3] * 4), task_id=1))
    >>> len(s.model.specialized), s.model.head.in_features, sorted(s.memory_labels.tolist())
    (2, 6, [0, 1, 2, 3])
    """

    task_free = False
    supports_regression = False

    def __init__(self, model, *, split: int | None = None, memory_size: int = 2000, aux_weight: float = 1.0,
                 train_base: bool = True, train_adaptive: bool = False, init_epochs: int | None = None,
                 init_lr: float = 0.1, init_weight_decay: float = 5e-4, init_lr_decay: float = 0.1,
                 init_milestones=(60, 120, 170), lr: float = 0.1, weight_decay: float = 2e-4,
                 lr_decay: float = 0.1, milestones=(80, 120, 150), epochs: int = 170, momentum: float = 0.9,
                 batch_size: int = 128, **kwargs):
        self.memory_size = check_int("memory_size", memory_size, low=0)
        self.aux_weight = check_real("aux_weight", aux_weight, low=0)
        for name, flag in (("train_base", train_base), ("train_adaptive", train_adaptive)):
            if not isinstance(flag, bool):
                raise ValueError(f"{name} must be True or False, got {flag!r}")
        self.train_base, self.train_adaptive = train_base, train_adaptive
        self.init_epochs = None if init_epochs is None else check_int("init_epochs", init_epochs, low=0)
        self.init_lr = check_real("init_lr", init_lr, low=0, low_open=True)
        self.init_weight_decay = check_real("init_weight_decay", init_weight_decay, low=0)
        self.init_lr_decay = check_real("init_lr_decay", init_lr_decay, low=0)
        self.lr_decay = check_real("lr_decay", lr_decay, low=0)
        self.init_milestones = _milestones("init_milestones", init_milestones)
        self.milestones = _milestones("milestones", milestones)
        self.align_weights = True
        if kwargs.get("loss", "cross_entropy") != "cross_entropy":
            raise ValueError(f"strategy 'memo' is classification only: loss must be 'cross_entropy', "
                             f"got {kwargs['loss']!r}")
        TaskAwareStrategy.__init__(self, MEMONet(model, split), lr=lr, weight_decay=weight_decay, epochs=epochs,
                                   momentum=momentum, batch_size=batch_size, **kwargs)
        self.init_generator = torch.Generator().manual_seed(self.seed)   # new heads' weights
        self.trained_tasks: list[int] = []
        self.classes_before: tuple = ()
        self._aux_table: torch.Tensor | None = None
        self._seen_mask: torch.Tensor | None = None
        self._phase = (self.init_lr, self.init_weight_decay, self.init_milestones, self.init_lr_decay)
        self.memory_x = self.memory_y = self.memory_tids = None
        self.memory_labels = np.zeros(0, dtype=np.int64)
        self.memory_tids_host = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ structure
    def _first(self, task: Task) -> bool:
        return not self.trained_tasks or self.trained_tasks == [task.task_id]

    def before_task(self, task: Task) -> None:
        if task.task_id in self.trained_tasks:
            return
        prior = prior_classes(self, task, "MEMO")
        dev = self.model.head.weight.device
        net = self.model
        if self.trained_tasks:
            net.expand(self.init_generator, self.classes_before, task.classes)
            self._aux_table = move(aux_targets(net.num_classes, task.classes), dev)
            for block in list(net.specialized)[:-1]:
                block.requires_grad_(self.train_adaptive)
            net.generalized.requires_grad_(self.train_base)
            self._phase = (self.lr, self.weight_decay, self.milestones, self.lr_decay)
        self._seen_mask = seen_mask(net.num_classes, prior | set(task.classes), dev)
        self.trained_tasks.append(task.task_id)
        self.refresh_train_mode()
        self.optimizer = self._phase_optimizer([p for p in net.parameters() if p.requires_grad])

    def _phase_optimizer(self, params):
        """The optimizer of the current phase (first task or later ones): its lr and weight decay."""
        spec, (lr, wd) = self._optimizer_spec, self._phase[:2]
        if callable(spec):
            return spec(params)
        if spec == "sgd":
            return _sgd(params, lr=lr, momentum=self.momentum, weight_decay=wd)
        if spec == "adam":
            return torch.optim.Adam(params, lr=lr, weight_decay=wd)
        return torch.optim.AdamW(params, lr=lr, weight_decay=wd)

    def frozen_modules(self) -> list:
        """The older specialised blocks (unless ``train_adaptive``) and, after the first task, the
        generalised blocks (unless ``train_base``): evaluation mode, statistics kept."""
        net = self.model
        frozen = [] if self.train_adaptive else list(net.specialized)[:-1]
        if not self.train_base and len(net.specialized) > 1:
            frozen.append(net.generalized)
        return frozen

    # ------------------------------------------------------------------ training
    def train_task(self, task: Task, epochs: int | None = None) -> list[float]:
        """Train on the task's rows and the memory shuffled together under the phase's step
        schedule (the lr set per epoch), then align the weights and update the memory."""
        if epochs is None and self.init_epochs is not None and self._first(task):
            epochs = self.init_epochs
        task = task.to(self.device)
        epochs = self.begin_task(task, epochs)
        base_lr, _, milestones, decay = self._phase
        x, y, tids = task.x, task.y, self.task_ids_of(len(task), task)
        if self.memory_y is not None and len(self.memory_y):
            x, y, tids = _cat(x, self.memory_x), torch.cat([y, self.memory_y]), torch.cat([tids, self.memory_tids])
        history = []
        for epoch in range(epochs):
            if not callable(self._optimizer_spec):
                for group in self.optimizer.param_groups:
                    group["lr"] = lr_at(base_lr, epoch, milestones, decay)
            history.append([self.step_rows(take(x, i), y[i], tids[i], task) for i in self.batches(len(y), self.device)])
        self.after_task(task)
        return epoch_means(history)

    # ------------------------------------------------------------------ after a task
    def after_task(self, task: Task) -> None:
        new = [c for c in task.classes if c not in self.classes_before]
        if self.classes_before and new and len(self.model.specialized) > 1:
            weight_align(self.model.head.weight.data, self.classes_before, new)
        self._update_memory(task)

    @torch.no_grad()
    def _embed(self, x) -> torch.Tensor:
        """L2-normalised representation in evaluation mode, float32 (PyCIL: norm + 1e-8)."""
        self.model.eval()
        f = self.model.extract(x).float()
        return f / (f.norm(dim=1, keepdim=True) + 1e-8)

    def _update_memory(self, task: Task) -> None:
        """``memory_size // num_seen_classes`` rows per class: the first rows kept of the older
        classes, herding picks of the task's classes (PyCIL's reduce-then-construct)."""
        reduced = self._reduce_memory(task)
        if reduced is None:
            return
        labels, per_class, keep = reduced
        xs, ys, hosts = [], [], []
        for c in task.classes:
            rows = np.nonzero(labels == int(c))[0]
            m = min(per_class, len(rows))
            if m == 0:
                continue
            idx = move(torch.from_numpy(rows), self.device)
            xc = take(task.x, idx)
            pick = herding(self._embed(xc), m)
            xs.append(take(xc, pick))
            ys.append(take(task.y, idx)[pick])
            hosts.append(np.full(m, int(c), dtype=np.int64))
        parts_x, parts_y = [], []
        keep = np.asarray(keep, dtype=np.int64)
        labels_new = np.zeros(0, dtype=np.int64)
        t_new = np.zeros(0, dtype=np.int64)
        if len(keep) and self.memory_y is not None:
            keep_t = move(torch.from_numpy(keep), self.device)
            parts_x.append(take(self.memory_x, keep_t))
            parts_y.append(take(self.memory_y, keep_t))
            labels_new, t_new = self.memory_labels[keep], self.memory_tids_host[keep]
        parts_x += xs
        parts_y += ys
        if hosts:
            added = np.concatenate(hosts)
            labels_new = np.concatenate([labels_new, added])
            t_new = np.concatenate([t_new, np.full(len(added), task.task_id, dtype=np.int64)])
        if not parts_y:
            return
        x_new = parts_x[0]
        for part in parts_x[1:]:
            x_new = _cat(x_new, part)
        self.memory_x, self.memory_y = x_new, torch.cat(parts_y)
        self.memory_labels, self.memory_tids_host = labels_new, t_new
        self.memory_tids = move(torch.from_numpy(t_new.copy()), self.device)
