"""Prototype methods on frozen features: SimpleCIL, and the plumbing RanPAC shares (:mod:`clkit.strategies.ranpac`).

Both keep the feature extractor frozen and learn no weights by gradient descent; the
classifier is a closed-form function of *sums over the training rows seen so far*, so
absorbing a task never changes what earlier tasks contributed (no forgetting of the
statistics).

- **SimpleCIL** (``"simplecil"``; Zhou et al. 2023, "Revisiting Class-Incremental
  Learning with Pre-Trained Models: Generalizability and Adaptivity are All You Need"):
  the classifier's weight for class ``c`` is the prototype ``p_c``, the mean of the frozen
  features of class ``c``'s training rows; the logit of class ``c`` is the cosine
  similarity ``cos(f(x), p_c)``.
- **RanPAC** (``"ranpac"``, :mod:`clkit.strategies.ranpac`; McDonnell et al., NeurIPS 2023, "RanPAC: Random Projections
  and Pre-trained Models for Continual Learning"): the frozen features ``f`` (dim ``d``)
  go through a fixed random projection and a ReLU, ``h = ReLU(f W_rand)`` with
  ``W_rand`` (``d x M``) drawn once from N(0, 1); the method keeps
  ``G = sum h h^T`` (``M x M``) and ``C = sum h y^T`` (``M x K``, one-hot ``y``) over every
  row seen so far and sets the head to ``W = (G + lambda I)^-1 C``; the logits are ``h W``.

The frozen extractor is the model's ``features`` module when it has one
(:class:`~clkit.models.MLP`, the CNNs of :mod:`clkit.models.cnn`), everything before the last
layer of an ``nn.Sequential`` ending in an ``nn.Linear`` (EDGE's MLP), else the whole model;
it always runs in evaluation mode and under ``torch.no_grad()``, so dropout is off and
batch-norm statistics never move. The strategy's ``model`` is a :class:`FrozenFeatureNet`
(the extractor and the method's head), so ``strategy.model(x)`` gives the strategy's logits
and ``strategy.model.head`` holds the statistics as buffers (they move with ``.to()`` and
are copied by :meth:`~clkit.strategies.Strategy.clone_model`).

Common behaviour:

- classification only (``supports_regression = False``); the number of classes is the
  model's ``head.out_features`` unless ``num_classes`` is given (needed when the model has
  no linear ``head``);
- a class without training rows yet gets logit ``-inf`` (the methods' classifiers cover
  the classes seen so far), except before any row was seen, when every logit is 0;
  in the task-incremental scenario the logits are further masked to the task's classes,
  as for every strategy (:meth:`~clkit.strategies.Strategy.mask_logits`);
- :meth:`train_task` reads each row once, whatever ``epochs`` (the statistics are sums: a
  second pass would count every row twice); ``epochs = 0`` absorbs nothing, as for a
  gradient learner. It returns one value per epoch, each the strategy's loss of the fitted
  classifier on the task's rows (their features are kept on the device for it, ``N x d``
  float32, and dropped at the task's end); ``steps`` counts the feature batches
  (``batch_size`` rows);
- devices: the features, the sums and the solve stay on the strategy's device; nothing is
  read back inside a task except by ``torch.linalg.solve``'s singularity check at the end
  of a RanPAC task. The sums are float64 (the features are computed in the run's precision
  and cast); prediction runs in float32.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from torch import nn

from .._validate import check_int
from ..device import move
from ._common import features_and_head
from .base import Strategy, Task, epoch_means, register, take

__all__ = ["SimpleCIL", "FrozenFeatureNet", "PrototypeHead"]

def _full_precision(device: torch.device):
    """A context that turns autocast off on ``device`` (the heads compute in float32/float64)."""
    if device.type in ("cpu", "cuda"):
        return torch.autocast(device.type, enabled=False)
    return contextlib.nullcontext()


def _seen_mask(logits: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """``logits`` with the classes of zero ``counts`` at ``-inf``, unless no class was seen yet
    (then unchanged); computed on the device, nothing read back."""
    seen = counts > 0
    keep = seen | ~seen.any()
    return logits.masked_fill(~keep, float("-inf"))


class FrozenFeatureNet(nn.Module):
    """A frozen feature extractor followed by a closed-form head.

    ``train()`` leaves the extractor in evaluation mode, and the forward pass computes the
    features under ``torch.no_grad()`` and flattens them to ``(N, d)`` float32.

    Parameters
    ----------
    features : torch.nn.Module
        Maps a batch ``x`` to features of shape ``(N, ...)``.
    head : torch.nn.Module
        Maps features of shape ``(N, d)`` to logits of shape ``(N, K)``.

    Examples
    --------
    >>> net = FrozenFeatureNet(nn.Flatten(), PrototypeHead(3))
    >>> net.train().features.training, net(torch.zeros(2, 1, 4)).shape
    (False, torch.Size([2, 3]))
    """

    def __init__(self, features: nn.Module, head: nn.Module):
        super().__init__()
        self.features = features
        self.head = head
        self.features.eval()

    def train(self, mode: bool = True):
        super().train(mode)
        self.features.eval()
        return self

    def embed(self, x) -> torch.Tensor:
        """The frozen features of ``x``, shape ``(N, d)``, float32."""
        with torch.no_grad():
            return self.features(x).float().flatten(1)

    def forward(self, x) -> torch.Tensor:
        return self.head(self.embed(x))


class PrototypeHead(nn.Module):
    """SimpleCIL's head: cosine similarity to the class means of the features.

    Buffers (created at the first features, float64): ``sums`` ``(K, d)``, the per-class sums
    of the features; ``counts`` ``(K,)``, the rows per class.

    Parameters
    ----------
    num_classes : int

    Examples
    --------
    >>> head = PrototypeHead(2)
    >>> head.absorb(torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 2.0]]), torch.tensor([0, 0, 1]))
    >>> head.prototypes.tolist()
    [[2.0, 0.0], [0.0, 2.0]]
    >>> head(torch.tensor([[1.0, 1.0], [-1.0, 0.2]])).round(decimals=3).tolist()
    [[0.707, 0.707], [-0.981, 0.196]]
    """

    def __init__(self, num_classes: int):
        super().__init__()
        self.num_classes = check_int("num_classes", num_classes, low=1)
        self.register_buffer("sums", None)
        self.register_buffer("counts", torch.zeros(self.num_classes, dtype=torch.float64))

    def _ensure(self, f: torch.Tensor) -> None:
        if self.sums is None:
            self.sums = torch.zeros(self.num_classes, f.shape[1], dtype=torch.float64, device=f.device)
        elif self.sums.shape[1] != f.shape[1]:
            raise ValueError(f"features have {f.shape[1]} dimensions, the prototypes {self.sums.shape[1]}")

    def absorb(self, f: torch.Tensor, y: torch.Tensor) -> None:
        """Add the features ``f`` ``(N, d)`` of rows labelled ``y`` ``(N,)`` to the class sums."""
        self._ensure(f)
        self.sums.index_add_(0, y, f.to(torch.float64))
        self.counts.index_add_(0, y, torch.ones(len(y), dtype=torch.float64, device=y.device))

    @property
    def prototypes(self) -> torch.Tensor:
        """The class means ``(K, d)`` (float64; zero rows for classes not seen yet)."""
        if self.sums is None:
            raise RuntimeError("no features absorbed yet: the prototypes' dimension is unknown")
        return self.sums / self.counts.clamp_min(1.0)[:, None]

    def forward(self, f: torch.Tensor) -> torch.Tensor:
        with _full_precision(f.device):
            f = f.float()
            self._ensure(f)
            protos = F.normalize(self.prototypes.float(), dim=1)
            return _seen_mask(F.normalize(f, dim=1) @ protos.T, self.counts)


def _split(model: nn.Module):
    """``(extractor, linear head or None)`` of a model: its ``features`` and ``head`` when it has
    them; for an ``nn.Sequential`` ending in an ``nn.Linear`` (e.g. EDGE's MLP), everything before
    that layer and the layer; otherwise the whole model and no head.

    Examples
    --------
    >>> f, h = _split(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)))
    >>> len(f), h.out_features
    (2, 3)
    >>> _split(nn.Identity())[1] is None
    True
    """
    features, head = features_and_head(model)
    return model if features is None else features, head if isinstance(head, nn.Linear) else None


class _FrozenFeatureStrategy(Strategy):
    """Shared plumbing of the prototype methods: the frozen extractor, one pass per task."""

    supports_regression = False
    task_incremental_only = False

    def __init__(self, model: nn.Module, *, num_classes: int | None = None, **kwargs):
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        extractor, head = _split(model)
        if num_classes is None:
            if head is None:
                raise ValueError(f"num_classes must be given for a model without a linear `head` "
                                 f"(got {type(model).__name__}); allowed: an int >= 1")
            num_classes = head.out_features
        self.num_classes = check_int("num_classes", num_classes, low=1)
        super().__init__(FrozenFeatureNet(self._wrap_extractor(extractor), self._make_head()), **kwargs)

    def _make_head(self) -> nn.Module:
        raise NotImplementedError

    def _wrap_extractor(self, extractor: nn.Module) -> nn.Module:
        """The extractor the strategy uses (the given one; RanPAC's adapter stage wraps it)."""
        return extractor

    def make_optimizer(self, params):
        """No gradient training: no optimizer (``self.optimizer`` is ``None``)."""
        return None

    # ------------------------------------------------------------------ features
    def _feature_batches(self, x, y, rows: torch.Tensor | None = None, keep: list | None = None,
                         embedded: bool = False):
        """``(features, labels)`` per batch of ``batch_size`` rows of ``x`` (all rows in order, or
        the rows ``rows``, a CPU index tensor); the extractor in evaluation mode, no gradients.
        With ``keep`` (a list) each pair is also appended to it. ``embedded``: ``x`` already holds
        the extractor's features (``(N, d)``), which are passed through."""
        self.model.eval()
        n = (len(x[0]) if isinstance(x, (tuple, list)) else len(x)) if rows is None else len(rows)
        bs = self.batch_size
        for s in range(0, n, bs):
            idx = slice(s, s + bs) if rows is None else rows[s:s + bs]
            if embedded:
                f = take(x, idx)
            else:
                with torch.no_grad(), self.amp.autocast():
                    f = self.model.embed(take(x, idx))
                self.steps += 1
            yb = take(y, idx)
            if keep is not None:
                keep.append((f, yb))
            yield f, yb

    def _check_labels(self, task: Task) -> None:
        classes = task.classes or ()
        bad = [c for c in classes if not 0 <= int(c) < self.num_classes]
        if bad:
            raise ValueError(f"task {task.task_id} has class(es) {bad} outside the {self.num_classes} classes "
                             f"of the strategy; allowed: 0 ... {self.num_classes - 1} (set num_classes)")

    def absorb(self, x, y, task: Task | None = None, keep: list | None = None) -> None:
        """Add the rows ``(x, y)`` (on the strategy's device) to the statistics and refit the head;
        with ``keep`` (a list) the ``(features, labels)`` batches are appended to it."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the interface
    def train_task(self, task: Task, epochs: int | None = None) -> list[float]:
        """Absorb the task's rows once (``epochs = 0``: none) and refit the head.

        Returns one value per epoch, each the loss of the fitted classifier on the task's rows
        (the same value: the rows are read once), read from the device once.
        """
        if isinstance(task, Task):
            self._check_labels(task)
        task = task.to(self.device)
        epochs = self.begin_task(task, epochs)
        if epochs == 0:
            self.after_task(task)
            return []
        if len(task) == 0:
            self.after_task(task)
            return [float("nan")] * epochs
        kept: list = []   # the task's features, computed once, for the loss of the fitted head
        self.absorb(task.x, task.y, task, keep=kept)
        self.model.eval()
        with torch.no_grad():
            losses = []
            for f, yb in kept:
                out = self.mask_logits(self.model.head(f), task.classes)
                losses.append(self.criterion(out, yb).detach() * len(yb))
            loss = torch.stack(losses).sum() / len(task)
        self.after_task(task)
        return epoch_means([[loss]] * epochs)

    def observe(self, x, y, task: Task | None = None):
        """Task-free use: absorb the batch ``(x, y)`` (moved to the strategy's device) and refit
        the head; returns a 0-dim zero tensor on the device (there is no loss to report)."""
        if task is not None:
            self._register_task(task)
        elif not torch.is_floating_point(y):
            self._note_labels(y)
        return self.train_step(move(x, self.device), move(y, self.device), task)

    def train_step(self, x, y, task: Task | None = None):
        """Absorb one batch and refit the head (there is no optimisation step); returns a 0-dim
        zero tensor on the device. A caller that drives its own loop over a task
        (:meth:`begin_task`, ``train_step`` per batch, :meth:`after_task`) should pass each row
        once: the statistics are sums."""
        self.absorb(x, y, task)
        return torch.zeros((), device=self.device)


@register("simplecil")
class SimpleCIL(_FrozenFeatureStrategy):
    """SimpleCIL: cosine classifier on the class means of frozen features.

    The prototype of class ``c`` is the mean of the frozen features of every training row of
    class ``c`` seen so far; the logit of class ``c`` is ``cos(f(x), p_c)``. No gradient
    training, no hyperparameter. A class that appears in several tasks gets the mean over
    all its rows (the authors' code replaces a class's prototype by the latest task's mean
    in class-incremental runs; the two agree when no class repeats). Task-free: the class
    sums can absorb any batch (:meth:`observe`).

    Parameters
    ----------
    model : torch.nn.Module
        Its ``features`` (an ``nn.Sequential`` ending in an ``nn.Linear``: all but that layer;
        else the whole model) is the frozen extractor; its linear ``head`` (that last layer)
        gives the number of classes and is not used otherwise.
    num_classes : int, optional
        Default: ``model.head.out_features``.
    **kwargs
        Those of :class:`~clkit.strategies.Strategy`: ``batch_size`` (rows per feature
        batch), ``scenario``, ``device``, ``precision`` (of the extractor), ``seed``, ``loss``
        (only for the reported loss); the optimizer settings are accepted and unused.

    Examples
    --------
    >>> s = SimpleCIL(nn.Identity(), num_classes=3)
    >>> _ = s.train_task(Task(torch.tensor([[2.0, 0.0], [4.0, 0.0]]), torch.tensor([0, 0]), task_id=0))
    >>> _ = s.train_task(Task(torch.tensor([[0.0, 1.0], [-1.0, -1.0]]), torch.tensor([1, 2]), task_id=1))
    >>> s.prototypes.tolist()
    [[3.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]
    >>> s.predict(torch.tensor([[1.0, 0.1], [-0.2, -0.3]])).argmax(1).tolist()
    [0, 2]
    """

    task_free = True
    #: the smallest state its training depends on (:mod:`clkit.edge.state_truth`): the class means
    #: after a set of tasks are the same in any order
    truth_state = "set"

    def _make_head(self) -> nn.Module:
        return PrototypeHead(self.num_classes)

    @property
    def prototypes(self) -> torch.Tensor:
        """The class means ``(K, d)``, float64 (zero rows for classes not seen yet)."""
        return self.model.head.prototypes

    def absorb(self, x, y, task: Task | None = None, keep: list | None = None) -> None:
        for f, yb in self._feature_batches(x, y, keep=keep):
            self.model.head.absorb(f, yb)
