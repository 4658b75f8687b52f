"""Notebook 03's own learners beyond :mod:`clkit.strategies`: CORAL and MoCo+SML (the paper's Tables 1-2).

Both are :class:`clkit.strategies.Strategy` subclasses around a backbone split as
``features`` + ``head`` (:class:`clkit.models.MLP`, :mod:`clkit.models.wildtime`), so
notebook 03 trains them period after period like its other learners
(:func:`clkit.temporal.accuracy_matrix`), sets them through ``learner_kwargs`` and times
them in its budget (:meth:`~clkit.strategies.Strategy.train_batch` is one step,
:meth:`~clkit.strategies.Strategy.after_task` the end of a period).

- :class:`CORAL` (learner ``"coral"``) -- Deep CORAL as Wild-Time trains it: cross-entropy
  plus ``coral_lambda`` times the mean over pairs of domains of :func:`coral_penalty`.
- :class:`MoCoSML` (learner ``"moco_sml"``) -- a momentum-contrast encoder
  (:func:`info_nce`, :func:`momentum_update`, :class:`KeyQueue`) trained self-supervised on
  each period's inputs, and a streaming softmax classifier trained online on its frozen
  features.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
import torch.nn.functional as F

from .._seed import torch_seeded
from .._validate import check_choice, check_int, check_real
from ..device import move
from ..strategies.base import Strategy, Task, take
from .image_input import model_input

__all__ = ["coral_penalty", "mean_coral_penalty", "CORAL", "info_nce", "momentum_update", "KeyQueue", "augment_view",
           "MoCoSML"]


# --------------------------------------------------------------------------- CORAL

def coral_penalty(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Deep CORAL's distance between two batches of features (Wild-Time's / WILDS's ``coral_penalty``).

    .. math:: \\frac1d\\lVert\\mu_a - \\mu_b\\rVert^2 + \\frac1{d^2}\\lVert C_a - C_b\\rVert_F^2,

    with :math:`\\mu` the feature means and :math:`C` the unbiased covariances (divided by
    ``n - 1``): the *mean* squared difference of the means plus that of the covariance
    entries, as Wild-Time writes it (``.pow(2).mean()``), not Sun & Saenko's
    :math:`\\lVert C_a - C_b\\rVert_F^2 / (4 d^2)`.

    Parameters
    ----------
    a : Tensor, shape (n_a, d)
    b : Tensor, shape (n_b, d)
        Features of two domains (extra middle dimensions are flattened into rows); each
        needs at least 2 rows (a covariance).

    Returns
    -------
    Tensor, 0-dim

    Examples
    --------
    >>> a = torch.tensor([[0.0, 0.0], [2.0, 2.0]])   # mean (1, 1), covariance [[2, 2], [2, 2]]
    >>> b = torch.tensor([[1.0, 0.0], [1.0, 0.0]])   # mean (1, 0), covariance 0
    >>> float(coral_penalty(a, b))                   # (0 + 1) / 2 + (4 + 4 + 4 + 4) / 4
    4.5
    >>> float(coral_penalty(a, a.clone()))
    0.0
    """
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError(f"a and b must be tensors, got {type(a).__name__} and {type(b).__name__}")
    if a.dim() > 2:
        a = a.reshape(-1, a.shape[-1])
    if b.dim() > 2:
        b = b.reshape(-1, b.shape[-1])
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must be (n, d) feature batches of the same width, got {tuple(a.shape)} "
                         f"and {tuple(b.shape)}")
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"a and b need at least 2 rows each (a covariance), got {len(a)} and {len(b)}")
    mean_a, mean_b = a.mean(0, keepdim=True), b.mean(0, keepdim=True)
    ca, cb = a - mean_a, b - mean_b
    cov_a = ca.t() @ ca / (len(a) - 1)
    cov_b = cb.t() @ cb / (len(b) - 1)
    return (mean_a - mean_b).pow(2).mean() + (cov_a - cov_b).pow(2).mean()


def mean_coral_penalty(groups) -> torch.Tensor:
    """The mean of :func:`coral_penalty` over all pairs of ``groups`` (0 with fewer than two groups).

    Groups with fewer than 2 rows are left out (they have no covariance).

    Examples
    --------
    >>> a = torch.tensor([[0.0, 0.0], [2.0, 2.0]]); b = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    >>> float(mean_coral_penalty([a, b, b]))          # pairs (a, b), (a, b), (b, b): (4.5 + 4.5 + 0) / 3
    3.0
    >>> float(mean_coral_penalty([a]))
    0.0
    """
    groups = [g for g in groups if len(g) >= 2]
    pairs = [(i, j) for i in range(len(groups)) for j in range(i + 1, len(groups))]
    if not pairs:
        ref = next(iter(groups), None)
        return torch.zeros((), device=ref.device if ref is not None else None)
    return torch.stack([coral_penalty(groups[i], groups[j]) for i, j in pairs]).mean()


class CORAL(Strategy):
    """Deep CORAL trained as in Wild-Time: cross-entropy plus the mean CORAL penalty between domains.

    **Wild-Time** (``methods/coral``; its Yearbook and FMoW scripts: ``coral_lambda = 0.9``,
    ``num_groups`` 4 and 3) trains at year t on the data of the years seen so far and draws
    each example of a mini-batch with a group id, a sliding window of recent years; the
    loss of a step is the cross-entropy of the whole batch plus ``coral_lambda`` times the
    mean over pairs of groups present in the batch of the CORAL penalty (mean squared
    difference of the means plus that of the covariances, :func:`coral_penalty`). Its code
    computes the penalty on the network's **outputs** (the logits), where Deep CORAL and
    WILDS (which Wild-Time adapts) use the penultimate features; ``coral_on`` picks either.

    **Domains in clkit.** Period t's training with ``coral_groups = G`` has G domains: the
    current period and the G - 1 periods before it (fewer at the start; in the first period
    the penalty is 0 and the step is plain ERM, as in Wild-Time with one group). Each step
    takes a mini-batch of the current period (the strategy's shuffled batches, so an epoch
    is a pass over the current period) and as many rows from each earlier domain, drawn
    with replacement by the strategy's CPU generator; the cross-entropy is over all the
    rows, the penalty between the domains' rows. The earlier periods are kept as
    references to their tasks (their data already sit on the device; nothing is copied).

    Parameters
    ----------
    model : torch.nn.Module
        A backbone with ``features`` and ``head`` (:class:`clkit.models.MLP`,
        :mod:`clkit.models.wildtime`).
    coral_lambda : float >= 0
        Weight of the penalty (default 0.9, Wild-Time's scripts; its command line's default is 1.0).
    coral_groups : int >= 1
        Domains per step: the current period and up to ``coral_groups - 1`` before it
        (default 4, Wild-Time's Yearbook ``num_groups``).
    coral_on : {"logits", "features"}
        Where the penalty is computed: the network's outputs as in Wild-Time's code
        (default), or the penultimate features as in Deep CORAL / WILDS.
    **kwargs
        :class:`~clkit.strategies.Strategy` settings (optimizer, lr, epochs, batch_size, seed, ...).

    Examples
    --------
    >>> from clkit.models import MLP
    >>> from clkit.data.temporal import make_drifting_gaussians
    >>> tasks = make_drifting_gaussians(3, 40, seed=0).tasks()
    >>> s = CORAL(MLP(8, 2, hidden=(8,)), coral_groups=2, batch_size=8, epochs=1, optimizer="adam")
    >>> for t in tasks:
    ...     _ = s.train_task(t)
    >>> len(s.past), s.steps
    (1, 9)
    """

    name = "coral"
    task_free = False
    supports_regression = False

    def __init__(self, model: nn.Module, *, coral_lambda: float = 0.9, coral_groups: int = 4,
                 coral_on: str = "logits", **kwargs):
        super().__init__(model, **kwargs)
        self.coral_lambda = check_real("coral_lambda", coral_lambda, low=0)
        self.coral_groups = check_int("coral_groups", coral_groups, low=1)
        self.coral_on = check_choice("coral_on", coral_on, ["logits", "features"])
        if not hasattr(model, "features") or not hasattr(model, "head"):
            raise TypeError(f"model must have 'features' and 'head' submodules for CORAL, got {type(model).__name__}")
        self.past: list[Task] = []

    def after_task(self, task: Task) -> None:
        """Keep ``task`` as a domain of the next periods (the latest ``coral_groups - 1``)."""
        self.past = ([*self.past, task])[-(self.coral_groups - 1):] if self.coral_groups > 1 else []

    def train_batch(self, task: Task, idx: torch.Tensor) -> torch.Tensor:
        """One step on rows ``idx`` of the current period plus as many rows of each earlier domain."""
        xs, ys = [take(task.x, idx)], [take(task.y, idx)]
        for p in self.past:
            rows = move(torch.randint(len(p), (len(idx),), generator=self.generator), self.device)
            xs.append(take(p.x, rows))
            ys.append(take(p.y, rows))
        sizes = [len(y) for y in ys]
        x, y = torch.cat(xs), torch.cat(ys)
        self.train_mode()
        self.optimizer.zero_grad(set_to_none=True)
        with self.amp.autocast():
            feats = torch.flatten(self.model.features(x), 1)
            logits = self.mask_logits(self.model.head(feats), task.classes)
            ce = self.criterion(logits, y)
            on = (logits if self.coral_on == "logits" else feats).float()
            penalty = mean_coral_penalty(list(torch.split(on, sizes))) if len(sizes) > 1 else on.new_zeros(())
            loss = ce + self.coral_lambda * penalty
        self.amp.backward(loss, self.optimizer)
        self.amp.step(self.optimizer)
        self.steps += 1
        return loss.detach()


# --------------------------------------------------------------------------- MoCo + SML

def info_nce(q: torch.Tensor, k: torch.Tensor, queue: torch.Tensor, temperature: float) -> torch.Tensor:
    """MoCo's InfoNCE loss: each query against its key (positive) and the queue's keys (negatives).

    .. math:: \\mathcal L = -\\frac1N\\sum_i \\log
              \\frac{\\exp(q_i^\\top k_i / \\tau)}{\\exp(q_i^\\top k_i / \\tau) + \\sum_j \\exp(q_i^\\top n_j / \\tau)}

    Parameters
    ----------
    q, k : Tensor, shape (N, d)
        Queries and their positive keys (MoCo passes them L2-normalised).
    queue : Tensor, shape (K, d)
        Negative keys.
    temperature : float > 0

    Examples
    --------
    Two samples, one negative, tau = 1: logits (1, 0) and (1, 1), so the loss is
    ``(log(1 + e^-1) + log 2) / 2``.

    >>> import math
    >>> q = torch.eye(2); k = torch.eye(2); queue = torch.tensor([[0.0, 1.0]])
    >>> round(float(info_nce(q, k, queue, 1.0)), 6), round((math.log(1 + math.exp(-1)) + math.log(2)) / 2, 6)
    (0.503204, 0.503204)
    """
    temperature = check_real("temperature", temperature, low=0, low_open=True)
    if q.shape != k.shape or q.dim() != 2 or queue.dim() != 2 or queue.shape[1] != q.shape[1]:
        raise ValueError(f"q and k must be (N, d) and queue (K, d), got {tuple(q.shape)}, {tuple(k.shape)} and "
                         f"{tuple(queue.shape)}")
    pos = (q * k).sum(1, keepdim=True)
    neg = q @ queue.t()
    logits = torch.cat([pos, neg], dim=1) / temperature
    return F.cross_entropy(logits, torch.zeros(len(q), dtype=torch.long, device=q.device))


@torch.no_grad()
def momentum_update(key: nn.Module, query: nn.Module, m: float) -> None:
    """MoCo's key encoder update, in place: ``theta_k <- m * theta_k + (1 - m) * theta_q`` (an EMA).

    Only parameters are averaged; buffers (batch-norm statistics) stay the key encoder's
    own, as in MoCo.

    Examples
    --------
    >>> qn, kn = nn.Linear(1, 1, bias=False), nn.Linear(1, 1, bias=False)
    >>> _ = nn.init.constant_(qn.weight, 1.0); _ = nn.init.constant_(kn.weight, 3.0)
    >>> momentum_update(kn, qn, 0.75); kn.weight.item()      # 0.75 * 3 + 0.25 * 1
    2.5
    """
    m = check_real("m", m, low=0, high=1)
    pk, pq = list(key.parameters()), list(query.parameters())
    if len(pk) != len(pq):
        raise ValueError(f"key and query must have the same parameters, got {len(pk)} and {len(pq)}")
    for a, b in zip(pk, pq):
        a.mul_(m).add_(b.detach(), alpha=1.0 - m)


class KeyQueue:
    """MoCo's queue of negative keys: a FIFO of the ``size`` latest keys (a ring buffer).

    Starts with ``size`` random unit vectors (MoCo's initialisation, from ``generator``);
    :meth:`enqueue` overwrites the oldest keys first.

    Examples
    --------
    >>> q = KeyQueue(3, 1, generator=torch.Generator().manual_seed(0))
    >>> q.enqueue(torch.tensor([[1.0], [2.0]])); q.enqueue(torch.tensor([[3.0], [4.0]]))
    >>> q.ordered().ravel().tolist()       # oldest first: 1 was pushed out
    [2.0, 3.0, 4.0]
    """

    def __init__(self, size: int, dim: int, *, generator: torch.Generator | None = None, device="cpu"):
        self.size = check_int("size", size, low=1)
        dim = check_int("dim", dim, low=1)
        self.keys = move(F.normalize(torch.randn(self.size, dim, generator=generator), dim=1), device)
        self.ptr = 0

    @torch.no_grad()
    def enqueue(self, keys: torch.Tensor) -> None:
        """Write ``keys`` (shape (B, dim)) over the oldest entries (only the latest ``size`` when B > size)."""
        keys = keys.detach()[-self.size:].to(self.keys.dtype)
        pos = (self.ptr + torch.arange(len(keys), device=self.keys.device)) % self.size
        self.keys[pos] = keys
        self.ptr = (self.ptr + len(keys)) % self.size

    def ordered(self) -> torch.Tensor:
        """The keys oldest first (``keys`` itself is in ring order)."""
        return torch.roll(self.keys, -self.ptr, dims=0)


def augment_view(x: torch.Tensor, generator: torch.Generator, *, noise: float = 0.1, mask: float = 0.1,
                 shift: int = 4) -> torch.Tensor:
    """One random view of a batch, for contrastive learning (draws from a CPU ``generator``).

    - **Vectors** (shape (N, d)): Gaussian noise of standard deviation ``noise`` (inputs are
      standardised features) and each feature set to 0 with probability ``mask``.
    - **Images** (shape (N, C, H, W)): a random translation by up to ``shift`` pixels (crop
      of the zero-padded image, as CIFAR-style random cropping), a horizontal flip with
      probability 1/2, and Gaussian noise of standard deviation ``noise`` (images in [0, 1]).

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> augment_view(torch.zeros(4, 3, 8, 8), g).shape, augment_view(torch.zeros(5, 6), g, mask=1.0).abs().sum().item()
    (torch.Size([4, 3, 8, 8]), 0.0)
    """
    noise = check_real("noise", noise, low=0)
    mask = check_real("mask", mask, low=0, high=1)
    shift = check_int("shift", shift, low=0)
    dev, n = x.device, len(x)
    if x.dim() == 4:
        _, c, h, w = x.shape
        if shift:
            pad = F.pad(x, (shift, shift, shift, shift))
            oy = move(torch.randint(0, 2 * shift + 1, (n,), generator=generator), dev)
            ox = move(torch.randint(0, 2 * shift + 1, (n,), generator=generator), dev)
            rows = (oy[:, None] + torch.arange(h, device=dev))[:, None, :, None]
            cols = (ox[:, None] + torch.arange(w, device=dev))[:, None, None, :]
            x = pad[torch.arange(n, device=dev)[:, None, None, None], torch.arange(c, device=dev)[None, :, None, None],
                    rows, cols]
        flip = move(torch.rand(n, generator=generator) < 0.5, dev)
        x = torch.where(flip[:, None, None, None], x.flip(-1), x)
        if noise:
            x = x + noise * move(torch.randn(x.shape, generator=generator), dev)
        return x
    out = x
    if noise:
        out = out + noise * move(torch.randn(x.shape, generator=generator), dev).to(x.dtype)
    if mask:
        out = out * move(torch.rand(x.shape, generator=generator) >= mask, dev).to(x.dtype)
    return out


class MoCoSML(Strategy):
    """MoCo features plus a streaming classifier: the paper's MoCo+SML pipeline.

    **Encoder (MoCo v2).** The query encoder is the backbone's ``features`` followed by a
    projection (``Linear -> ReLU -> Linear`` to ``moco_dim``); the key encoder is a copy
    updated only as an exponential moving average, :math:`\\theta_k \\leftarrow m\\theta_k
    + (1-m)\\theta_q` (:func:`momentum_update`, ``moco_momentum``). Each step draws two
    views of a mini-batch of the period's inputs (:func:`augment_view`), encodes the
    L2-normalised query and key, takes the InfoNCE loss (:func:`info_nce`, temperature
    ``moco_temperature``) against a queue of ``moco_queue`` earlier keys (:class:`KeyQueue`,
    FIFO), steps the query encoder, and enqueues the keys. Labels are not used; the
    encoder keeps training through the periods (``epochs`` passes over each).

    **Streaming classifier (SML).** At the end of each period the backbone's ``head`` (a
    softmax regression) learns online from the period's labelled examples, each seen once,
    in the period's order, on the frozen, L2-normalised encoder features: plain SGD with
    ``sml_lr`` on the cross-entropy of ``sml_batch_size`` examples at a time (1: one
    example per update, as river's online linear models do). It continues across periods
    (never reset), as a streaming model does. Chosen over river's ``LogisticRegression``
    because that is binary only and learns from Python dicts one at a time (hours for
    FMoW's 62 classes x 1024 features); the update is the same online SGD on the log loss.

    Predictions: ``head(normalize(features(x)))``.

    Parameters
    ----------
    model : torch.nn.Module
        A backbone with ``features`` and a linear ``head``.
    moco_dim : int
        Width of the projection (MoCo: 128).
    moco_queue : int
        Negatives in the queue (MoCo: 65,536; 4,096 suits these smaller streams).
    moco_momentum : float in [0, 1]
        EMA coefficient m of the key encoder (MoCo: 0.999).
    moco_temperature : float > 0
        InfoNCE temperature tau (MoCo v2: 0.2).
    moco_noise, moco_mask : float
        Augmentation: Gaussian noise and, for vectors, feature masking probability.
    moco_shift : int
        Augmentation of images: the largest translation in pixels.
    sml_lr : float > 0
        Learning rate of the streaming classifier's SGD.
    sml_batch_size : int >= 1
        Examples per online update (1: one at a time).
    **kwargs
        :class:`~clkit.strategies.Strategy` settings of the encoder (optimizer, lr, epochs,
        batch_size, seed, ...).

    Examples
    --------
    >>> from clkit.models import MLP
    >>> from clkit.data.temporal import make_drifting_gaussians
    >>> t = make_drifting_gaussians(2, 40, seed=0).tasks()[0]
    >>> s = MoCoSML(MLP(8, 2, hidden=(8,)), moco_dim=4, moco_queue=16, batch_size=8, optimizer="adam")
    >>> _ = s.train_task(t)
    >>> s.predict(t.x).shape, s.sml_updates
    (torch.Size([20, 2]), 20)
    """

    name = "moco_sml"
    task_free = False
    supports_regression = False

    def __init__(self, model: nn.Module, *, moco_dim: int = 128, moco_queue: int = 4096, moco_momentum: float = 0.999,
                 moco_temperature: float = 0.2, moco_noise: float = 0.1, moco_mask: float = 0.1, moco_shift: int = 4,
                 sml_lr: float = 0.1, sml_batch_size: int = 1, **kwargs):
        super().__init__(model, **kwargs)
        if not hasattr(model, "features") or not isinstance(getattr(model, "head", None), nn.Linear):
            raise TypeError(f"model must have 'features' and a linear 'head' for MoCo+SML, got {type(model).__name__}")
        self.moco_dim = check_int("moco_dim", moco_dim, low=1)
        self.moco_momentum = check_real("moco_momentum", moco_momentum, low=0, high=1)
        self.moco_temperature = check_real("moco_temperature", moco_temperature, low=0, low_open=True)
        self.moco_noise = check_real("moco_noise", moco_noise, low=0)
        self.moco_mask = check_real("moco_mask", moco_mask, low=0, high=1)
        self.moco_shift = check_int("moco_shift", moco_shift, low=0)
        self.sml_lr = check_real("sml_lr", sml_lr, low=0, low_open=True)
        self.sml_batch_size = check_int("sml_batch_size", sml_batch_size, low=1)
        width = model.head.in_features
        with torch_seeded(self.seed):
            proj = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, self.moco_dim))
        self.query = nn.ModuleDict({"features": model.features, "proj": proj.to(self.device)})
        self.key = copy.deepcopy(self.query)
        for p in self.key.parameters():
            p.requires_grad_(False)
        self.optimizer = self.make_optimizer(self.query.parameters())
        self.sml_optimizer = torch.optim.SGD(model.head.parameters(), lr=self.sml_lr)
        self.queue = KeyQueue(check_int("moco_queue", moco_queue, low=1), self.moco_dim, generator=self.generator,
                              device=self.device)
        self.sml_updates = 0

    def _encode(self, enc: nn.ModuleDict, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(enc["proj"](torch.flatten(enc["features"](x), 1)).float(), dim=1)

    def train_batch(self, task: Task, idx: torch.Tensor) -> torch.Tensor:
        """One MoCo step on rows ``idx`` of ``task`` (their inputs only)."""
        x = model_input(self.model, take(task.x, idx))  # uint8 images: augmented as the float view
        aug = dict(noise=self.moco_noise, mask=self.moco_mask, shift=self.moco_shift)
        xq, xk = augment_view(x, self.generator, **aug), augment_view(x, self.generator, **aug)
        self.train_mode()
        self.key.train()
        self.optimizer.zero_grad(set_to_none=True)
        with self.amp.autocast():
            q = self._encode(self.query, xq)
            with torch.no_grad():
                momentum_update(self.key, self.query, self.moco_momentum)
                k = self._encode(self.key, xk)
            loss = info_nce(q, k, self.queue.keys, self.moco_temperature)
        self.amp.backward(loss, self.optimizer)
        self.amp.step(self.optimizer)
        self.queue.enqueue(k)
        self.steps += 1
        return loss.detach()

    @torch.no_grad()
    def embed(self, x: torch.Tensor, batch_size: int = 4096) -> torch.Tensor:
        """The frozen, L2-normalised encoder features of ``x`` (evaluation mode), shape (N, width)."""
        self.model.eval()
        with self.amp.autocast():
            out = [torch.flatten(self.model.features(move(take(x, slice(s, s + batch_size)), self.device)), 1).float()
                   for s in range(0, len(x), batch_size)]
        return F.normalize(torch.cat(out), dim=1) if out else torch.empty(0, device=self.device)

    def after_task(self, task: Task) -> None:
        """The streaming classifier learns the period online: each example once, in order (SGD, ``sml_lr``)."""
        task = task.to(self.device)
        z, y = self.embed(task.x), task.y
        head = self.model.head
        head.train()
        for s in range(0, len(y), self.sml_batch_size):
            self.sml_optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(self.mask_logits(head(z[s:s + self.sml_batch_size]), task.classes),
                                   y[s:s + self.sml_batch_size])
            loss.backward()
            self.sml_optimizer.step()
            self.sml_updates += 1

    def forward(self, x, task: Task | None = None, classes=None) -> torch.Tensor:
        """The streaming classifier on the normalised encoder features."""
        z = F.normalize(torch.flatten(self.model.features(x), 1), dim=1)
        return self.mask_logits(self.model.head(z), classes if classes is not None else
                                (task.classes if task is not None else None))
