"""FOSTER: feature boosting and compression (a non-pretrained two-stage dynamic network).

**FOSTER** (``"foster"``; Wang, Zhou, Ye and Zhan, ECCV 2022, "FOSTER: Feature Boosting and
Compression for Class-Incremental Learning"), as the PyCIL tree that the EDGE authors ran implements
it: repository AIGNLAI/EDGE, commit ``a60c1179cf762e8c1197ab876a3c06db3a49b639``, files
``PyCIL/models/foster.py`` (``FOSTER``), ``PyCIL/utils/inc_net.py`` (``FOSTERNet``) and
``PyCIL/exps/foster.json`` (the CIFAR-100 settings, the defaults here):

- **first task**: the base model (``features`` + linear ``head``) trains with cross-entropy
  (SGD, ``lr`` 0.1, momentum 0.9, weight decay 5e-4, cosine schedule over the task's epochs);
- **boosting** (every later task): a :class:`FOSTERNet` of two extractors, the old one (frozen,
  evaluation mode) and a new one initialised with its weights and statistics; the head is rebuilt
  ``2 d`` wide (rows of the classes seen before keep their weights on the old columns and their
  biases, every other entry re-initialised as PyCIL's ``SimpleLinear``: Kaiming uniform, bias 0),
  the previous head becomes the frozen ``old_head`` and a fresh ``fe_head`` reads the new
  extractor's features. The loss (:func:`boosting_loss`) is the logits-adjusted cross-entropy
  ``CE(logits / w, y)`` with the class-balanced weights ``w`` of ``beta1`` (:func:`class_weights`),
  plus ``CE(fe_logits, y)``, plus ``lambda_okd`` times the distillation of the old head's logits
  into the new head's old-class logits, ``-sum softmax(old / T) log_softmax(new / T)`` (batch mean,
  no ``T^2``). ``oofc="az"`` zeroes the new classes' weights on the old columns and their
  gradients; ``"ft"`` (the config's) trains them. Optional weight aligning of the new rows
  (``is_teacher_wa``; :func:`foster_weight_align`);
- **compression**: a student with one extractor (a copy of the *old* extractor) and a head whose
  old rows are the old head's, the rest re-initialised, trains in training mode on the same rows
  to match the two-extractor teacher (evaluation mode) with the class-balanced distillation
  :func:`bkd_loss` (weights of ``beta2``; SGD without weight decay, cosine schedule over
  ``compression_epochs``), then optional weight aligning (``is_student_wa``);
- **prediction** (what PyCIL reports: ``eval_task`` runs on ``self._network``, which after a task
  is still the two-extractor teacher): the teacher's logits over the seen classes; the student
  replaces the teacher only when the next task starts (PyCIL: ``self._network = self._snet``).
  ``predict_with="student"`` gives the student's logits instead (PyCIL only logs them);
- **memory** (PyCIL's ``fixed_memory = true``, ``memory_per_class = 20``): ``memory_per_class``
  rows per new class; ``fixed_memory=False`` gives PyCIL's other mode, ``memory_size //
  num_seen_classes`` per class, older classes cut to their first rows kept. Training rows are the
  task's rows and the memory shuffled together; the class counts behind the weights ``w`` are
  PyCIL's: the nominal per-class memory for old classes, the task's rows of each new class.

Choices against PyCIL, documented:

- exemplars are a uniform random subset per class (the memory's own seeded generator), not
  herding on the teacher's features (as clkit's DER);
- the first task trains the base model as given (its ``features`` and ``head``, their
  initialisation the user's); PyCIL builds a fresh network there;
- heads keep a row for every class of the stream; logits of classes not seen yet are ``-inf``
  (PyCIL's heads have rows for the seen classes only): losses and predictions are the same;
- one learning rate and weight decay for the first task and boosting (the config's values are
  the same); epochs: ``epochs`` per task (PyCIL: 200 on the first task, 170 boosting), with
  ``init_epochs`` and ``compression_epochs`` (PyCIL: 130) overriding their stages when given;
- for CIFAR-100 PyCIL hard-codes 500 rows per new class in the weights; here the task's counts
  (500 on CIFAR-100, the same); a nominal count of 0 counts as 1 (PyCIL would divide by zero);
- in the task-incremental scenario only prediction is masked to the task's classes.

The model needs ``features`` (a module mapping a batch to ``(N, d)``) and a linear ``head``
(``d`` inputs, one output per class): :class:`~clkit.models.MLP`, the CNNs of
:mod:`clkit.models.cnn`. Classification only; needs task boundaries.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._validate import check_choice, check_int, check_real
from ..device import move
from ._common import TaskAwareStrategy
from .base import Task, _cat, _sgd, epoch_means, register, take
from .der import _init_linear, keep_old_rows, prior_classes, seen_mask

__all__ = ["FOSTER", "FOSTERNet", "class_weights", "kd_loss", "bkd_loss", "boosting_loss", "foster_weight_align"]


def class_weights(counts, beta: float) -> np.ndarray:
    """FOSTER's class-balanced weights ``w_c = (1 - beta) / (1 - beta^n_c)``, scaled to sum to the
    number of classes (PyCIL's ``per_cls_weights``; effective numbers of Cui et al. 2019).

    Examples
    --------
    >>> class_weights([20, 20, 500], 0.96).round(4).tolist()
    [1.1728, 1.1728, 0.6544]
    >>> class_weights([5, 5], 0.9).tolist()
    [1.0, 1.0]
    """
    n = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    w = (1.0 - beta) / (1.0 - np.power(beta, n))
    return w / w.sum() * len(n)


def kd_loss(pred: torch.Tensor, soft: torch.Tensor, T: float) -> torch.Tensor:
    """``-sum softmax(soft / T) * log_softmax(pred / T) / N`` (PyCIL's ``_KD_loss``: no ``T^2``).

    Examples
    --------
    >>> round(float(kd_loss(torch.zeros(2, 4), torch.zeros(2, 4), 2.0)), 4)   # log 4
    1.3863
    """
    return -(torch.softmax(soft / T, dim=1) * torch.log_softmax(pred / T, dim=1)).sum() / pred.shape[0]


def bkd_loss(pred: torch.Tensor, soft: torch.Tensor, T: float, weights: torch.Tensor) -> torch.Tensor:
    """Class-balanced distillation (PyCIL's ``FOSTER.BKD``): the teacher's ``softmax(soft / T)``
    multiplied by ``weights`` and renormalised per row, then as :func:`kd_loss`.

    Examples
    --------
    >>> z = torch.zeros(1, 2)
    >>> round(float(bkd_loss(z, z, 2.0, torch.tensor([1.0, 3.0]))), 4)   # log 2 whatever the target
    0.6931
    """
    p = torch.softmax(soft / T, dim=1) * weights
    p = p / p.sum(1)[:, None]
    return -(p * torch.log_softmax(pred / T, dim=1)).sum() / pred.shape[0]


def boosting_loss(logits, fe_logits, old_logits, y, weights, old_cols, lambda_okd: float, T: float):
    """The boosting stage's loss and its three terms ``(total, clf, fe, kd)``: ``CE(logits / weights, y)``,
    ``CE(fe_logits, y)`` and ``lambda_okd * kd_loss(logits[:, old_cols], old_logits, T)``.

    Examples
    --------
    >>> z = torch.zeros(2, 3)
    >>> out = boosting_loss(z, z, torch.zeros(2, 2), torch.tensor([0, 2]), torch.ones(3), torch.tensor([0, 1]), 1.0, 2.0)
    >>> [round(float(v), 4) for v in out]   # log 3 + log 3 + log 2
    [2.8904, 1.0986, 1.0986, 0.6931]
    """
    clf = F.cross_entropy(logits / weights, y)
    fe = F.cross_entropy(fe_logits, y)
    kd = lambda_okd * kd_loss(logits.index_select(1, old_cols), old_logits, T)
    return clf + fe + kd, clf, fe, kd


def foster_weight_align(weight: torch.Tensor, old, new, value: float = 1.0) -> torch.Tensor:
    """Scale the rows ``new`` of ``weight`` in place by ``gamma = mean ||w_old|| / mean ||w_new|| *
    value ** (len(old) / len(new))`` (PyCIL's ``FOSTERNet.weight_align``); returns ``gamma`` (0-dim,
    on ``weight``'s device, not read).

    Examples
    --------
    >>> w = torch.tensor([[3.0, 4.0], [0.0, 2.0]])
    >>> round(float(foster_weight_align(w, [0], [1], value=0.5)), 4), w[1].tolist()   # 5 / 2 * 0.5
    (1.25, [0.0, 2.5])
    """
    dev = weight.device
    old_i = move(torch.as_tensor(list(old), dtype=torch.int64), dev)
    new_i = move(torch.as_tensor(list(new), dtype=torch.int64), dev)
    with torch.no_grad():
        gamma = weight[old_i].norm(dim=1).mean() / weight[new_i].norm(dim=1).mean() * value ** (len(old) / len(new))
        weight[new_i] = weight[new_i] * gamma
    return gamma


def _check_base(base: nn.Module):
    head = getattr(base, "head", None)
    if not isinstance(head, nn.Linear):
        raise TypeError(f"FOSTER needs a model with a linear `head` (e.g. clkit.models.MLP), got {type(base).__name__}")
    if not isinstance(getattr(base, "features", None), nn.Module):
        raise TypeError(f"FOSTER needs a model with a `features` module, got {type(base).__name__}")
    return base.features, head


class FOSTERNet(nn.Module):
    """One or two extractors with a head over their concatenated features (behind :class:`FOSTER`).

    With one extractor it is the base model (first task) or a compressed student; :meth:`boost`
    makes it the two-extractor teacher of a new task (``old_head`` and ``fe_head`` then exist).

    Examples
    --------
    >>> from clkit.models import MLP
    >>> net = FOSTERNet(MLP(3, 4, hidden=(5,)))
    >>> net.boost(torch.Generator().manual_seed(0), old_classes=[0, 1])
    >>> len(net.extractors), net.head.in_features, net.fe_head.in_features, net.old_head.in_features
    (2, 10, 5, 5)
    >>> [t.shape for t in net(torch.zeros(2, 3), parts=True)]
    [torch.Size([2, 4]), torch.Size([2, 4]), torch.Size([2, 4])]
    """

    def __init__(self, base: nn.Module):
        super().__init__()
        features, head = _check_base(base)
        self.feature_dim, self.num_classes = head.in_features, head.out_features
        self.extractors = nn.ModuleList([features])
        self.head = head
        self.old_head: nn.Linear | None = None
        self.fe_head: nn.Linear | None = None

    def boost(self, generator: torch.Generator, old_classes) -> None:
        """Add a new extractor (a copy of the current one, weights and statistics), freeze the old one
        and the old head, rebuild the head ``2 d`` wide and draw a fresh ``fe_head`` (PyCIL's
        ``update_fc``); new layers are drawn from ``generator`` on the CPU."""
        if len(self.extractors) != 1:
            raise ValueError("FOSTERNet.boost needs a one-extractor network (compress the teacher first)")
        old_ext = self.extractors[0].requires_grad_(False)
        new = copy.deepcopy(old_ext).requires_grad_(True)
        self.extractors.append(new)
        old = self.head.requires_grad_(False)
        dev = old.weight.device
        self.old_head, self.head = old, keep_old_rows(_init_linear(2 * self.feature_dim, self.num_classes,
                                                                   generator, dev), old, old_classes)
        self.fe_head = _init_linear(self.feature_dim, self.num_classes, generator, dev)

    def student(self, generator: torch.Generator, old_classes) -> "FOSTERNet":
        """The compression stage's student: a copy of the old extractor and a head whose rows
        ``old_classes`` are the old head's, the rest re-initialised (PyCIL's ``_snet``)."""
        ext = copy.deepcopy(self.extractors[0]).requires_grad_(True)
        dev = self.head.weight.device
        head = keep_old_rows(_init_linear(self.feature_dim, self.num_classes, generator, dev), self.old_head,
                             old_classes)
        net = FOSTERNet.__new__(FOSTERNet)
        nn.Module.__init__(net)
        net.feature_dim, net.num_classes = self.feature_dim, self.num_classes
        net.extractors, net.head, net.old_head, net.fe_head = nn.ModuleList([ext]), head, None, None
        return net

    def forward(self, x, parts: bool = False):
        """Logits ``(N, C)``; with ``parts=True`` (two extractors) also the ``fe_head``'s logits of the
        new features and the old head's logits of the old features: ``(logits, fe, old)``."""
        feats = [ext(x) for ext in self.extractors]
        logits = self.head(feats[0] if len(feats) == 1 else torch.cat(feats, 1))
        if not parts:
            return logits
        return logits, self.fe_head(feats[-1]), self.old_head(feats[0])


@register("foster")
class FOSTER(TaskAwareStrategy):
    """FOSTER: feature boosting (two extractors) then compression into one, with rehearsal.

    Parameters
    ----------
    model : torch.nn.Module
        Has ``features`` and a linear ``head`` (see :class:`FOSTERNet`); ``head.out_features`` is the
        number of classes of the stream.
    memory_size : int
        Total rows kept when ``fixed_memory=False`` (PyCIL: 2000).
    memory_per_class : int
        Rows kept per class when ``fixed_memory=True`` (PyCIL's CIFAR-100 config: 20).
    fixed_memory : bool
        PyCIL's ``fixed_memory`` (config: true).
    beta1, beta2 : float in [0, 1)
        Class-balancing of the boosting CE and of the compression distillation (0.96, 0.97).
    lambda_okd : float
        Weight of the old-class distillation while boosting (1).
    T : float
        Distillation temperature (2).
    oofc : {"ft", "az"}
        New classes' weights on the old extractor's columns: trained (``"ft"``, config) or kept at zero.
    is_teacher_wa, is_student_wa : bool
        Weight aligning after boosting / after compression (config: both false).
    wa_value : float
        The aligning factor's extra ``value ** (old / new)`` (1).
    init_epochs, compression_epochs : int, optional
        Epochs of the first task and of compression (PyCIL: 200 and 130); ``None``: the task's epochs.
    lr_schedule : {"cosine", "constant"}
        PyCIL anneals every stage's learning rate with ``CosineAnnealingLR(T_max=epochs)``.
    predict_with : {"teacher", "student"}
        The network that predicts after a task (PyCIL reports the teacher).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy` (defaults here: ``lr=0.1``, ``weight_decay=5e-4``).

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = FOSTER(MLP(2, 4, hidden=(3,)), memory_per_class=2, epochs=1)
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([0, 1] * 4), task_id=0))
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([2, 3] * 4), task_id=1))
    >>> len(s.model.extractors), len(s.student.extractors), sorted(s.memory_labels.tolist())
    (2, 1, [0, 0, 1, 1, 2, 2, 3, 3])
    """

    task_free = False
    supports_regression = False

    def __init__(self, model, *, memory_size: int = 2000, memory_per_class: int = 20, fixed_memory: bool = True,
                 beta1: float = 0.96, beta2: float = 0.97, lambda_okd: float = 1.0, T: float = 2.0, oofc: str = "ft",
                 is_teacher_wa: bool = False, is_student_wa: bool = False, wa_value: float = 1.0,
                 init_epochs: int | None = None, compression_epochs: int | None = None, lr_schedule: str = "cosine",
                 predict_with: str = "teacher", **kwargs):
        self.memory_size = check_int("memory_size", memory_size, low=0)
        self.memory_per_class = check_int("memory_per_class", memory_per_class, low=0)
        self.beta1 = check_real("beta1", beta1, low=0, high=1, high_open=True)
        self.beta2 = check_real("beta2", beta2, low=0, high=1, high_open=True)
        self.lambda_okd = check_real("lambda_okd", lambda_okd, low=0)
        self.T = check_real("T", T, low=0, low_open=True)
        self.wa_value = check_real("wa_value", wa_value, low=0, low_open=True)
        self.oofc = check_choice("oofc", oofc, ["ft", "az"])
        self.lr_schedule = check_choice("lr_schedule", lr_schedule, ["cosine", "constant"])
        self.predict_with = check_choice("predict_with", predict_with, ["teacher", "student"])
        for name, v in (("fixed_memory", fixed_memory), ("is_teacher_wa", is_teacher_wa),
                        ("is_student_wa", is_student_wa)):
            if not isinstance(v, bool):
                raise ValueError(f"{name} must be True or False, got {v!r}")
        self.fixed_memory, self.is_teacher_wa, self.is_student_wa = fixed_memory, is_teacher_wa, is_student_wa
        self.init_epochs = None if init_epochs is None else check_int("init_epochs", init_epochs, low=0)
        self.compression_epochs = (None if compression_epochs is None
                                   else check_int("compression_epochs", compression_epochs, low=0))
        if kwargs.get("loss", "cross_entropy") != "cross_entropy":
            raise ValueError(f"strategy 'foster' is classification only: loss must be 'cross_entropy', "
                             f"got {kwargs['loss']!r}")
        kwargs.setdefault("lr", 0.1)
        kwargs.setdefault("weight_decay", 5e-4)
        super().__init__(FOSTERNet(model), **kwargs)
        self.init_generator = torch.Generator().manual_seed(self.seed)   # new heads' weights
        self.memory_rng = np.random.default_rng(self.seed)               # exemplar choice
        self.student: FOSTERNet | None = None
        self.trained_tasks: list[int] = []
        self.classes_before: tuple = ()
        self.new_classes: tuple = ()
        self.compression_history: list[float] = []
        self._seen_mask = self._weights = self._old_cols = None
        self.memory_x = self.memory_y = None
        self.memory_labels = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ stages
    def _optimizer(self, params, weight_decay: float):
        if self._optimizer_spec == "sgd":
            return _sgd(params, lr=self.lr, momentum=self.momentum, weight_decay=weight_decay)
        return self.make_optimizer(params)

    def _schedule(self, optimizer, epochs: int):
        if self.lr_schedule == "cosine" and epochs > 0:
            return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
        return None

    def _counts(self, task: Task) -> list[int]:
        """PyCIL's ``cls_num_list`` over the seen classes (old classes first, in ``classes_before`` order)."""
        old = (self.memory_per_class if self.fixed_memory
               else self.memory_size // max(1, len(self.classes_before)))
        labels = task.labels_host()
        return [old] * len(self.classes_before) + [int((labels == c).sum()) for c in self.new_classes]

    def _weight_vector(self, task: Task, beta: float) -> torch.Tensor:
        w = torch.ones(self.model.num_classes)
        seen = list(self.classes_before) + list(self.new_classes)
        w[seen] = torch.as_tensor(class_weights(self._counts(task), beta), dtype=torch.float32)
        return move(w, self.device)

    def before_task(self, task: Task) -> None:
        if task.task_id in self.trained_tasks:
            return
        prior = prior_classes(self, task, "FOSTER")
        self.new_classes = tuple(sorted(set(task.classes) - prior))
        dev = self.device
        if self.trained_tasks:
            if self.student is not None:       # PyCIL: self._network = self._snet
                self.model = self.student
                self.student = None
            self.model.boost(self.init_generator, self.classes_before)
            self._old_cols = move(torch.as_tensor(self.classes_before, dtype=torch.int64), dev)
            self._weights = self._weight_vector(task, self.beta1)
            if self.oofc == "az":
                self._az_rows = move(torch.as_tensor(self.new_classes, dtype=torch.int64), dev)
                with torch.no_grad():
                    self.model.head.weight[self._az_rows, :self.model.feature_dim] = 0.0
        self._seen_mask = seen_mask(self.model.num_classes, prior | set(task.classes), dev)
        self.trained_tasks.append(task.task_id)
        self.refresh_train_mode()
        self.optimizer = self._optimizer([p for p in self.model.parameters() if p.requires_grad], self.weight_decay)
        self._scheduler = None

    def frozen_modules(self) -> list:
        """The old extractor while boosting (evaluation mode: its batch-norm statistics stay)."""
        return list(self.model.extractors)[:-1]

    def rows_loss(self, x, y, task_ids) -> torch.Tensor:
        """Cross-entropy on the first task, :func:`boosting_loss` later (unseen classes at ``-inf``)."""
        if len(self.model.extractors) == 1:
            return F.cross_entropy(self.model(x) + self._seen_mask, y)
        logits, fe, old = self.model(x, parts=True)
        return boosting_loss(logits + self._seen_mask, fe + self._seen_mask, old.detach().index_select(1, self._old_cols),
                             y, self._weights, self._old_cols, self.lambda_okd, self.T)[0]

    def after_backward(self, x, y, task) -> None:
        if self.oofc == "az" and len(self.model.extractors) == 2 and self.model.head.weight.grad is not None:
            self.model.head.weight.grad[self._az_rows, :self.model.feature_dim] = 0.0

    def _rows(self, task: Task):
        x, y = task.x, task.y
        if self.memory_y is not None and len(self.memory_y):
            x, y = _cat(x, self.memory_x), torch.cat([y, self.memory_y])
        return x, y

    def train_task(self, task: Task, epochs: int | None = None) -> list[float]:
        """First task: cross-entropy; later: boosting (``epochs``), then compression in
        :meth:`after_task`; rows are the task's and the memory's. Returns the mean loss per epoch of
        the first stage (compression's in :attr:`compression_history`)."""
        task = task.to(self.device)
        epochs = self.begin_task(task, epochs)
        if len(self.model.extractors) == 1 and self.init_epochs is not None:
            epochs = self.init_epochs
        x, y = self._rows(task)
        tids = self.task_ids_of(len(y), task)
        sched = self._schedule(self.optimizer, epochs)
        history = []
        for _ in range(epochs):
            history.append([self.step_rows(take(x, i), y[i], tids[i], task) for i in self.batches(len(y), self.device)])
            if sched is not None:
                sched.step()
        self.after_task(task)
        return epoch_means(history)

    def after_task(self, task: Task) -> None:
        """Teacher weight aligning, compression into the student, student aligning, memory update."""
        task = task.to(self.device)
        self.compression_history = []
        if len(self.model.extractors) == 2:
            if self.is_teacher_wa:
                foster_weight_align(self.model.head.weight.data, self.classes_before, self.new_classes, self.wa_value)
            self._compress(task)
        self._update_memory(task)

    def _compress(self, task: Task) -> None:
        teacher = self.model
        student = teacher.student(self.init_generator, self.classes_before)
        cols = move(torch.as_tensor(sorted(self.classes_before + self.new_classes), dtype=torch.int64), self.device)
        weights = self._weight_vector(task, self.beta2).index_select(0, cols)   # seen columns only: 0 * -inf is NaN
        epochs = self.compression_epochs if self.compression_epochs is not None else self.epochs
        opt = self._optimizer([p for p in student.parameters() if p.requires_grad], 0.0)
        sched = self._schedule(opt, epochs)
        x, y = self._rows(task)
        teacher.eval()
        history = []
        for _ in range(epochs):
            student.train()
            steps = []
            for i in self.batches(len(y), self.device):
                xb = take(x, i)
                opt.zero_grad(set_to_none=True)
                with self.amp.autocast():
                    out = student(xb).index_select(1, cols)
                    with torch.no_grad():
                        soft = teacher(xb).index_select(1, cols)
                loss = bkd_loss(out.float(), soft.float(), self.T, weights)
                self.amp.backward(loss, opt)
                self.amp.step(opt)
                self.steps += 1
                steps.append(loss.detach())
            history.append(steps)
            if sched is not None:
                sched.step()
        self.compression_history = epoch_means(history)
        if self.is_student_wa:
            foster_weight_align(student.head.weight.data, self.classes_before, self.new_classes, self.wa_value)
        self.student = student.eval()

    def _update_memory(self, task: Task) -> None:
        """PyCIL's memory: ``memory_per_class`` rows per new class (``fixed_memory``), or
        ``memory_size // num_seen`` per class with older classes cut to their first rows kept; the rows
        of a new class are a random subset (the memory's generator)."""
        labels = task.labels_host().astype(np.int64)
        seen = sorted(set(self.memory_labels.tolist()) | set(int(c) for c in task.classes))
        if self.fixed_memory:
            m = self.memory_per_class
        else:
            m = self.memory_size // max(1, len(seen))
        keep = []
        for c in sorted(set(self.memory_labels.tolist()) - set(task.classes)):
            keep.extend(np.nonzero(self.memory_labels == c)[0][:m].tolist())
        new = []
        for c in task.classes:
            rows = np.nonzero(labels == int(c))[0]
            new.extend(self.memory_rng.permutation(rows)[:m].tolist())
        keep, new = np.asarray(keep, dtype=np.int64), np.asarray(new, dtype=np.int64)
        new_t = torch.from_numpy(new)
        x_new, y_new, labels_new = take(task.x, new_t), take(task.y, new_t), labels[new]
        if len(keep) and self.memory_y is not None:
            keep_t = torch.from_numpy(keep)
            x_new = _cat(take(self.memory_x, keep_t), x_new)
            y_new = torch.cat([take(self.memory_y, keep_t), y_new])
            labels_new = np.concatenate([self.memory_labels[keep], labels_new])
        self.memory_x, self.memory_y, self.memory_labels = x_new, y_new, labels_new

    # ------------------------------------------------------------------ prediction
    def forward(self, x, task: Task | None = None, classes=None):
        net = self.student if (self.predict_with == "student" and self.student is not None) else self.model
        out = net(x)
        if self._seen_mask is not None:
            out = out + self._seen_mask
        return self.mask_logits(out, classes if classes is not None else (task.classes if task is not None else None))

    def predict(self, x, task: Task | None = None, batch_size: int = 4096) -> torch.Tensor:
        if self.student is not None:
            self.student.eval()
        return super().predict(x, task, batch_size)

    def __repr__(self) -> str:
        return (f"FOSTER(memory_per_class={self.memory_per_class}, fixed_memory={self.fixed_memory}, "
                f"T={self.T}, scenario={self.scenario!r}, lr={self.lr}, epochs={self.epochs})")
