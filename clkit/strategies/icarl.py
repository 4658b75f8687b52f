"""iCaRL (Rebuffi, Kolesnikov, Sperl & Lampert, CVPR 2017): exemplars, distillation, nearest mean.

The three parts of the paper, on any model that exposes a feature extractor ``features`` and a
linear ``head`` (clkit's MLP and CNN backbones; an ``nn.Sequential`` ending in ``nn.Linear`` is
split before its last layer):

1. **Exemplar memory** of a fixed total size ``K = memory_size``, ``m = K // s`` exemplars for each
   of the ``s`` classes seen so far. After a task, every new class gets ``m`` exemplars chosen by
   *herding* (:func:`herding`, the paper's Algorithm 4) on the L2-normalised features of the model
   just trained; the sets of the older classes are cut to their first ``m`` exemplars
   (Algorithm 5: herding order makes every prefix a good approximation of the class mean).
2. **Representation learning** (Algorithm 3) on the union of the new task's rows and all
   exemplars, with a sigmoid binary cross-entropy over the seen classes' outputs: the new
   classes' targets are one-hot, the old classes' targets are the sigmoid outputs of the model
   as it was before the task (distillation), for new rows and exemplars alike.
3. **Classification by the nearest mean of exemplars** (NME, Algorithm 1): the class means of
   the normalised exemplar features, re-normalised (the paper's footnote: "the results of any
   operation on feature vectors, e.g. averages, are also re-normalized"), computed once after
   each task; a sample goes to the class whose mean is nearest to its normalised features.
   :meth:`ICaRL.predict` returns ``-||phi(x) - mu_y||^2`` as scores (``-inf`` for classes not
   seen yet), so ``argmax`` is the NME prediction and :meth:`~Strategy.evaluate` works unchanged.

Choices (documented differences):

- The BCE is summed over the seen classes' outputs and averaged over the batch (the paper's
  loss sums over samples and classes; the batch mean is the usual minibatch scaling). Outputs of
  classes not seen yet (clkit's heads have a fixed width) are left out of the loss, as in the
  paper, whose network only has outputs for the classes seen so far.
- ``loss_variant="pycil"`` gives PyCIL's iCaRL loss instead (``models/icarl.py`` of
  G-U-N/PyCIL): softmax cross-entropy over the seen classes plus, from the second task,
  ``KD_T = -sum softmax(old / T) * log_softmax(new / T)`` over the old classes (batch mean,
  weight 1, no ``T^2`` factor, ``T = icarl_temperature``, PyCIL: 2). Memory and NME are the same.
- The paper (and PyCIL) also train and compute the class means on horizontally flipped images;
  clkit's loops do no augmentation (the models are modality agnostic), so neither is done here.
- Herding picks each exemplar without replacement; a class with fewer than ``m`` rows keeps all
  of them, in herding order. Features for herding and for the means are computed in float32,
  in evaluation mode.
- A class that gets no exemplars (``memory_size`` smaller than the number of seen classes) has
  no mean and scores ``-inf`` (a warning says so).
- In the task-incremental scenario the NME scores are masked to the task's classes at
  prediction; training is the same in both scenarios.
- The exemplars are used by :meth:`ICaRL.train_task`; a caller that drives its own loop
  through :meth:`~Strategy.train_step` trains on the rows it passes (plus distillation).

Devices: exemplar rows, features, herding and the class means stay on the strategy's device;
which rows belong to which class, and how many exemplars each class keeps, are known on the host
(:meth:`Task.labels_host`, host counts), so nothing is read back from the device.

Not defined for regression (one-hot targets, class means); needs task boundaries.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._validate import check_choice, check_int, check_real
from ..device import move
from ._common import TaskAwareStrategy, features_and_head
from .base import Task, _cat, epoch_means, register, take

__all__ = ["ICaRL", "herding", "split_model"]


def herding(features: torch.Tensor, m: int) -> torch.Tensor:
    """iCaRL's herding (Algorithm 4): indices of ``m`` rows whose running mean tracks the class mean.

    With ``mu`` the mean of the rows, pick ``p_k = argmin_j || mu - (f_j + sum_{i<k} f_{p_i}) / k ||``
    over the rows not picked yet, for ``k = 1 .. m``. The rows are used as given (normalise them
    first for iCaRL's selection).

    Parameters
    ----------
    features : Tensor, shape (n, H)
    m : int
        Number of rows to pick, ``0 <= m <= n``.

    Returns
    -------
    Tensor of int64, shape (m,)
        The picked rows in herding order (on the device of ``features``).

    Examples
    --------
    >>> f = torch.tensor([[0.0], [1.0], [2.0], [10.0]])     # mean 3.25
    >>> herding(f, 3).tolist()
    [2, 1, 3]
    """
    m = check_int("m", m, low=0, high=len(features))
    f = features.float()
    n = f.shape[0]
    mu = f.mean(dim=0)
    chosen = torch.zeros(n, dtype=torch.bool, device=f.device)
    total = torch.zeros_like(mu)
    picks = []
    for k in range(1, m + 1):
        dist = ((mu - (total + f) / k) ** 2).sum(dim=1).masked_fill(chosen, float("inf"))
        j = dist.argmin().reshape(1)
        picks.append(j)
        chosen[j] = True
        total = total + f.index_select(0, j)[0]
    return torch.cat(picks) if picks else torch.zeros(0, dtype=torch.int64, device=f.device)


def split_model(model: nn.Module):
    """``(features, head)`` of ``model``: its ``features`` and ``head`` attributes, or, for an
    ``nn.Sequential`` ending in ``nn.Linear``, everything before that layer and the layer.

    Raises ``TypeError`` for other models (iCaRL needs a feature space and a linear head).

    Examples
    --------
    >>> f, h = split_model(nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)))
    >>> len(f), h.out_features
    (2, 2)
    """
    feats, head = features_and_head(model)
    if feats is not None and head is not None:
        return feats, head
    raise TypeError(f"iCaRL needs a model with a feature extractor `features` and a linear `head` (clkit's "
                    f"backbones), or an nn.Sequential ending in nn.Linear; got {type(model).__name__}")


def _unit(z: torch.Tensor) -> torch.Tensor:
    return z / z.norm(dim=-1, keepdim=True).clamp_min(1e-12)


@register("icarl")
class ICaRL(TaskAwareStrategy):
    """iCaRL: herding exemplars, BCE with distillation, nearest-mean-of-exemplars classifier.

    Parameters
    ----------
    model : torch.nn.Module
        A model with ``features`` and a linear ``head`` (see :func:`split_model`).
    memory_size : int
        Total number of exemplars ``K`` (``>= 1``; paper: 2000 for CIFAR-100); each of the ``s``
        seen classes keeps ``K // s``.
    loss_variant : {"paper", "pycil"}
        ``"paper"``: sigmoid BCE, old classes' targets the old model's sigmoid outputs;
        ``"pycil"``: cross-entropy plus temperature KD on the old classes (PyCIL's iCaRL).
    icarl_temperature : float
        KD temperature of ``loss_variant="pycil"`` (PyCIL: 2); unused by ``"paper"``.
    classifier : {"nme", "head"}
        Prediction by the nearest mean of exemplars (the paper) or by the head's logits over
        the seen classes (the paper's "hybrid1" ablation).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> g = torch.Generator().manual_seed(0)
    >>> s = ICaRL(MLP(2, 4, hidden=(8,)), memory_size=6, epochs=1, batch_size=4)
    >>> _ = s.train_task(Task(torch.randn(8, 2, generator=g), torch.tensor([0, 1] * 4), task_id=0))
    >>> s.exemplar_counts
    {0: 3, 1: 3}
    >>> _ = s.train_task(Task(torch.randn(8, 2, generator=g), torch.tensor([2, 3] * 4), task_id=1))
    >>> s.exemplar_counts, s.predict(torch.zeros(1, 2)).isinf().tolist()
    ({0: 1, 1: 1, 2: 1, 3: 1}, [[False, False, False, False]])
    """

    task_free = False
    supports_regression = False
    task_incremental_only = False

    def __init__(self, model, *, memory_size: int = 2000, loss_variant: str = "paper",
                 icarl_temperature: float = 2.0, classifier: str = "nme", **kwargs):
        if kwargs.get("loss", "cross_entropy") != "cross_entropy":
            raise ValueError(f"strategy 'icarl' is for classification: loss must be 'cross_entropy', "
                             f"got {kwargs['loss']!r}")
        super().__init__(model, **kwargs)
        self.memory_size = check_int("memory_size", memory_size, low=1)
        self.loss_variant = check_choice("loss_variant", loss_variant, ["paper", "pycil"])
        self.icarl_temperature = check_real("icarl_temperature", icarl_temperature, low=0, low_open=True)
        self.classifier = check_choice("classifier", classifier, ["nme", "head"])
        self.features, self.head = split_model(self.model)
        self.teacher = None
        self.old_classes: list[int] = []
        self.exemplars: dict[int, object] = {}        # class -> its exemplar rows, herding order (device)
        self.exemplar_counts: dict[int, int] = {}     # class -> number of exemplars (host)
        self.class_means = None                       # (C, H) unit means on the device, zeros where none
        self._mean_bias = None                        # (C,) 0 where a class has a mean, -inf elsewhere
        self._cols = None
        self._known: set[int] = set()                 # classes of the tasks finished so far

    # ------------------------------------------------------------------ memory
    @property
    def memory_per_class(self) -> int:
        """``K // s`` for the ``s`` classes seen so far (``K`` before any class)."""
        return self.memory_size // max(1, len(self._seen_classes))

    def memory(self):
        """All exemplars as ``(x, y)``, class by class (ascending), each in herding order;
        ``(None, None)`` when the memory is empty."""
        classes = [c for c in sorted(self.exemplars) if self.exemplar_counts[c] > 0]
        if not classes:
            return None, None
        x = self.exemplars[classes[0]]
        for c in classes[1:]:
            x = _cat(x, self.exemplars[c])
        y = torch.cat([torch.full((self.exemplar_counts[c],), c, dtype=torch.int64) for c in classes])
        return x, move(y, self.device)

    @torch.no_grad()
    def embed(self, x, batch_size: int = 4096) -> torch.Tensor:
        """L2-normalised float32 features of the rows ``x`` (evaluation mode, no autocast)."""
        self.model.eval()   # train_mode() sees it and sets training mode again at the next step
        n = len(x[0]) if isinstance(x, (tuple, list)) else len(x)
        return torch.cat([_unit(self.features(move(take(x, slice(s, s + batch_size)), self.device)).float().flatten(1))
                          for s in range(0, n, batch_size)])

    def _update_memory(self, task: Task) -> None:
        """Algorithm 5 (reduce the old sets to ``m``) then Algorithm 4 (herd ``m`` of each new class)."""
        m = self.memory_per_class
        if m == 0:
            warnings.warn(f"icarl: memory_size={self.memory_size} is smaller than the {len(self._seen_classes)} "
                          "classes seen; classes without exemplars get no class mean", stacklevel=3)
        for c in list(self.exemplars):   # a class seen before keeps a prefix of its exemplars
            k = min(m, self.exemplar_counts[c])
            self.exemplars[c] = take(self.exemplars[c], slice(0, k))
            self.exemplar_counts[c] = k
        labels = task.labels_host()
        for c in task.classes:
            if c in self.exemplars:
                continue
            rows = np.nonzero(labels == c)[0]
            xc = take(task.x, torch.from_numpy(rows))
            pick = herding(self.embed(xc), min(m, len(rows)))
            self.exemplars[c] = take(xc, pick)
            self.exemplar_counts[c] = int(min(m, len(rows)))

    @torch.no_grad()
    def _update_means(self) -> None:
        """The unit class means of the exemplars' unit features, on the device (once per task)."""
        C = self.head.out_features
        dim = None
        means, bias = [], torch.full((C,), float("-inf"))
        for c in range(C):
            if self.exemplar_counts.get(c, 0) > 0:
                means.append((c, _unit(self.embed(self.exemplars[c]).mean(dim=0))))
                bias[c] = 0.0
                dim = means[-1][1].shape[0]
        if dim is None:
            self.class_means = self._mean_bias = None
            return
        table = torch.zeros((C, dim), device=self.device)
        if means:
            idx = torch.tensor([c for c, _ in means])
            table[idx] = torch.stack([v for _, v in means])
        self.class_means, self._mean_bias = table, move(bias, self.device)

    # ------------------------------------------------------------------ training
    def before_task(self, task: Task) -> None:
        self.old_classes = sorted(self._known)
        self.teacher = None
        if self.steps > 0 and self.old_classes:
            self.teacher = self.clone_model().eval()
            for p in self.teacher.parameters():
                p.requires_grad_(False)
        new = [c for c in sorted(task.classes or ()) if c not in self.old_classes]
        self._n_old = len(self.old_classes)
        cols = self.old_classes + new
        C = self.head.out_features
        pos = torch.zeros(C, dtype=torch.int64)
        pos[cols] = torch.arange(len(cols))
        self._cols, self._pos = move(torch.tensor(cols, dtype=torch.int64), self.device), move(pos, self.device)
        self._range = move(torch.arange(len(cols)), self.device)

    def train_task(self, task: Task, epochs: int | None = None) -> list[float]:
        """Train on the task's rows together with all exemplars (Algorithm 3), then update the
        memory and the class means; returns the mean loss per epoch."""
        task = task.to(self.device)
        epochs = self.begin_task(task, epochs)
        mx, my = self.memory()
        data = task if mx is None else Task(_cat(task.x, mx), torch.cat([task.y, my]), task.task_id, task.classes)
        history = []
        for _ in range(epochs):
            history.append([self.train_batch(data, idx) for idx in self.batches(len(data), self.device)])
        self.after_task(task)
        return epoch_means(history)

    def icarl_loss(self, raw: torch.Tensor, y: torch.Tensor, old: torch.Tensor | None) -> torch.Tensor:
        """iCaRL's loss of the outputs ``raw`` (B, C) for labels ``y`` given the old model's outputs
        ``old`` (B, C; ``None`` on the first task), over the seen classes' columns."""
        z = raw.float().index_select(1, self._cols)
        pos = self._pos[y]
        n_old = self._n_old if old is not None else 0
        if self.loss_variant == "paper":
            target = (pos[:, None] == self._range).float()
            if n_old:
                target = torch.cat([torch.sigmoid(old.float().index_select(1, self._cols[:n_old])),
                                    target[:, n_old:]], dim=1)
            return F.binary_cross_entropy_with_logits(z, target, reduction="sum") / len(z)
        loss = F.cross_entropy(z, pos)
        if n_old:
            t = self.icarl_temperature
            soft = torch.softmax(old.float().index_select(1, self._cols[:n_old]) / t, dim=1)
            loss = loss - (soft * torch.log_softmax(z[:, :n_old] / t, dim=1)).sum() / len(z)
        return loss

    def train_step(self, x, y, task: Task | None = None) -> torch.Tensor:
        if self._cols is None:
            raise ValueError("icarl needs task boundaries: start a task with train_task or begin_task")
        self.train_mode()
        self.optimizer.zero_grad(set_to_none=True)
        with self.amp.autocast():
            raw = self.model(x)
            old = None
            if self.teacher is not None:
                with torch.no_grad():
                    old = self.teacher(x)
        loss = self.icarl_loss(raw, y, old)
        self.amp.backward(loss, self.optimizer)
        self.after_backward(x, y, task)
        self.amp.step(self.optimizer)
        self.after_step(x, y, task)
        self.steps += 1
        return loss.detach()

    def after_task(self, task: Task) -> None:
        self.teacher = None
        self._known.update(task.classes or ())
        self._update_memory(task)
        self._update_means()

    # ------------------------------------------------------------------ inference
    @torch.no_grad()
    def predict(self, x, task: Task | None = None, batch_size: int = 4096) -> torch.Tensor:
        """Class scores: ``-||phi(x) - mu_y||^2`` (NME; ``-inf`` for classes without a mean), or the
        head's logits with unseen classes at ``-inf`` (``classifier="head"``, or before any exemplar);
        masked to the task's classes in the task-incremental scenario."""
        if self.classifier == "nme" and self.class_means is not None:
            f = self.embed(x, batch_size)
            out = -((f[:, None, :] - self.class_means[None]) ** 2).sum(-1) + self._mean_bias
        else:
            out = super().predict(x, None, batch_size)
            seen = sorted(self._seen_classes)
            if seen and out.ndim == 2:
                bias = torch.full((out.shape[1],), float("-inf"))
                bias[seen] = 0.0
                out = out + move(bias, out.device)
        return self.mask_logits(out, task.classes if task is not None else None)

    def __repr__(self) -> str:
        return (f"ICaRL(memory_size={self.memory_size}, loss_variant={self.loss_variant!r}, "
                f"classifier={self.classifier!r}, scenario={self.scenario!r}, lr={self.lr}, epochs={self.epochs})")
