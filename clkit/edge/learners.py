"""Class-incremental learners trained on many class sequences at once.

The ground truth of EDGE trains the same learner on many class sequences (all 90 of 6
classes in 3 tasks, or a sample of the 2,520 of 8 classes in 4 tasks). Two ideas make
that cheap:

* **Batching across sequences.** Each sequence ``l`` owns its own MLP, stored as a slice
  of batched weight tensors ``W1 (L, D, H)``, ``W2 (L, H, C)``, and one optimisation step
  is a batched matrix product (``torch.baddbmm``) over the leading dimension. The loss
  is the *sum* over sequences of each sequence's mean loss, so the gradient of slice
  ``l`` is exactly the gradient of an independent model, and SGD with momentum
  (elementwise) updates each slice as if it were trained alone
  (``tests/test_edge_learners.py`` checks one sequence against a plain loop).
* **A prefix tree** (:mod:`clkit.edge.prefix`). Training is causal, and every random
  choice (minibatch order) is keyed by the tasks seen so far, so sequences that share
  their first ``t`` tasks share their state after task ``t``: each distinct prefix is
  trained once and its state handed to every continuation (the batched state is indexed
  by parent; an ordinary Strategy is deep-copied). At 8 classes in 4 tasks this trains
  5,488 tasks instead of 10,080; the results equal training every sequence on its own
  (tested).

One driver, :func:`train_sequences`, walks the tree for both kinds of learner: the
batched learners below, and any ``clkit.strategies.Strategy`` (registry name, entry
point or import path) through :func:`clkit.plugins.train_sequences_sequentially`.

**Device.** Both train on the ``device`` they are given (a ``RunDevice``, a
``torch.device`` or a name; default the CPU) in its ``precision``: the data move there
once, the initial weights are drawn on the CPU under the seed and moved, the minibatch
orders come from CPU generators keyed by the prefix and move once per epoch, so every
device trains on the same numbers; no value is read inside a step, and the accuracies of a
level come back to the host once (``tests/test_edge_device.py`` runs every learner on the
``meta`` device). The sequence dimension is cut into chunks that fit the device's memory
(:mod:`clkit.edge.memory`); chunks change no number.

Class-incremental protocol: one head over all ``C`` classes of the experiment; at task
``t`` the logits of classes not yet seen in that sequence are masked to ``-1e9``
(softmax weight exactly 0, so they get no gradient: the same as a head that grows with
each task). Evaluation after task ``t`` uses the test images of all classes seen so far
and predicts among them. The optimizer (SGD, momentum 0.9) keeps its momentum across
tasks, as a :class:`~clkit.strategies.Strategy` does, unless the schedule of
:class:`LearnerConfig` asks for PyCIL's (a new SGD per task, a first task of its own, MultiStepLR;
strategies follow it through :func:`scheduled_train_task`).

Learners (batched re-implementations; the generic ones live in ``clkit.strategies``
and follow the same definitions). The keywords each accepts in the notebook's
``learner_kwargs`` are :data:`LEARNER_KEYWORDS` (fields of :class:`LearnerConfig`):

``finetune``
    cross-entropy on the current task only.
``ewc``
    Kirkpatrick et al. (2017): after each task the diagonal Fisher
    ``F = mean over minibatches of (d loss / d theta)^2`` (the minibatch empirical
    Fisher, as Avalanche and PyCIL compute it) and the parameters ``theta*`` are
    stored; later tasks add ``lambda/2 * sum_k F_k (theta - theta*_k)^2``, whose
    gradient ``lambda (sum_k F_k theta - sum_k F_k theta*_k)`` is kept as two running
    sums (the same gradient as one term per task, in constant memory).
``lwf``
    Li & Hoiem (2017): cross-entropy plus ``lambda * KD_T`` between the old model's and
    the new model's softmax (temperature ``T``) over the old classes (PyCIL's
    ``_KD_loss``: ``-sum softmax(old/T) * log_softmax(new/T)`` per sample).
``icarl``
    Rebuffi et al. (2017), in PyCIL's form: LwF's loss on the current data plus a memory
    of ``memory_per_class`` exemplars per old class chosen by herding on the normalised
    hidden features; prediction by the nearest mean of exemplars (NME) in that feature
    space, or with ``icarl_classifier="head"`` by the head's logits (what PyCIL's trainer reports).
``ncm``
    nearest class mean on frozen features (a prototype learner of the pre-trained
    family): class means of the training features; no training. Its final accuracy is
    the same for every order (all classes seen, same means); its A(O) (Eq. 1) still
    depends on the order through the test sets of the intermediate steps.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from .._seed import torch_seeded, torch_threads
from .._validate import check_choice, check_int, check_real
from ..device import Amp, RunDevice, as_device, autocast, check_precision, move, to_host
from .memory import chunk_plan, node_bytes, sequence_chunks
from .node_accuracy import NEG as _NEG, class_accuracy as _class_accuracy, masked_logits as _masked
from .shared import node_bytes_shared, node_copy
from .prefix import prefix_code, prefix_tree

__all__ = ["LEARNERS", "LEARNER_KEYWORDS", "SCHEDULE_KEYWORDS", "LearnerConfig", "split_schedule",
           "scheduled_train_task", "learner_config", "init_params", "batch_order",
           "prefix_code", "train_sequences", "train_strategy_sequences", "batched_plan", "torch_threads",
           "train_mlp_classifier", "feature_map"]

LEARNERS = ("finetune", "ewc", "lwf", "icarl", "ncm")
#: the schedule fields of :class:`LearnerConfig` (a strategy's ``learner_kwargs`` may set them too)
SCHEDULE_KEYWORDS = ("init_epochs", "init_lr", "init_milestones", "milestones", "lr_decay", "weight_decay",
                     "init_weight_decay", "reset_optimizer")
_OPTIM = ("hidden", "epochs", "batch_size", "lr", "momentum") + SCHEDULE_KEYWORDS
#: the keywords of :class:`LearnerConfig` each built-in learner uses (its ``learner_kwargs``)
LEARNER_KEYWORDS = {
    "finetune": _OPTIM,
    "ewc": _OPTIM + ("ewc_lambda",),
    "lwf": _OPTIM + ("lwf_lambda", "temperature"),
    "icarl": _OPTIM + ("kd_lambda", "temperature", "memory_per_class", "icarl_classifier"),
    "ncm": (),
}
_CPU = torch.device("cpu")


@dataclass(frozen=True)
class LearnerConfig:
    """Hyper-parameters of the batched learners (and the optimiser of plugin strategies).

    Attributes
    ----------
    hidden : int
        Width of the MLP's hidden layer.
    epochs : int
        Passes over each task's training data.
    batch_size : int
    lr : float
        SGD learning rate.
    momentum : float
    ewc_lambda : float
        EWC penalty weight.
    lwf_lambda : float
        LwF distillation weight (PyCIL's ``lamda = 3``).
    kd_lambda : float
        iCaRL distillation weight (PyCIL adds the KD term with weight 1).
    temperature : float
        Distillation temperature ``T``.
    memory_per_class : int
        iCaRL exemplars per class.
    icarl_classifier : {"nme", "head"}
        How the batched iCaRL predicts: the nearest mean of exemplars (the paper's iCaRL) or the
        head's logits over the seen classes (what PyCIL's trainer reports, its "CNN" accuracy).
        Its loss is PyCIL's either way (cross-entropy plus ``kd_lambda`` x KD at ``temperature``).

    **Schedule** (the defaults are one constant rate, the same ``epochs`` every task and one
    optimizer for the whole sequence; PyCIL's ``_init_train`` / ``_update_representation`` are
    ``init_epochs=200, init_milestones=(60, 120, 170), init_weight_decay=5e-4`` for the first
    task and ``milestones``, ``lr_decay=0.1``, ``weight_decay=2e-4``, a new SGD each task after;
    :mod:`clkit.edge.protocol` holds both settings). Strategies (:func:`train_strategy_sequences`)
    take these from their ``learner_kwargs`` (:data:`SCHEDULE_KEYWORDS`), except ``weight_decay``,
    which is their own constructor keyword (the later tasks' decay there):

    init_epochs : int, optional
        Epochs of the first task (``None``: ``epochs``).
    init_lr : float, optional
        Learning rate of the first task (``None``: ``lr``; a strategy: its own ``lr``).
    init_milestones, milestones : tuple of int
        Epochs (0-based, strictly increasing) from which the rate is multiplied by one more
        ``lr_decay`` -- ``torch.optim.lr_scheduler.MultiStepLR`` stepped once per epoch -- in the
        first task and in every later task.
    lr_decay : float
        The factor of each milestone (PyCIL's ``lrate_decay`` / ``init_lr_decay``).
    weight_decay : float
        SGD weight decay of the batched learners (``p`` added to the gradient times it, as
        ``torch.optim.SGD`` does) in the tasks after the first.
    init_weight_decay : float, optional
        Weight decay of the first task (``None``: the later tasks').
    reset_optimizer : bool
        A new optimizer at the start of every task (momentum buffers back to zero), as PyCIL
        builds one in each ``_train``; ``False`` keeps one optimizer (and its momentum) throughout.

    Examples
    --------
    >>> c = LearnerConfig(lr=0.1, epochs=170, init_epochs=200, init_milestones=[60, 120, 170],
    ...                   milestones=[80, 120], weight_decay=2e-4, init_weight_decay=5e-4)
    >>> c.task_epochs(0), c.task_epochs(1), c.scheduled
    (200, 170, True)
    >>> [round(c.task_lr(0, e), 6) for e in (0, 59, 60, 120, 170)]
    [0.1, 0.1, 0.01, 0.001, 0.0001]
    >>> [round(c.task_lr(2, e), 6) for e in (79, 80, 169)], c.task_weight_decay(0), c.task_weight_decay(1)
    ([0.1, 0.01, 0.001], 0.0005, 0.0002)
    >>> LearnerConfig().scheduled
    False
    """

    hidden: int = 64
    epochs: int = 3
    batch_size: int = 32
    lr: float = 0.05
    momentum: float = 0.9
    ewc_lambda: float = 1000.0
    lwf_lambda: float = 3.0
    kd_lambda: float = 1.0
    temperature: float = 2.0
    memory_per_class: int = 20
    icarl_classifier: str = "nme"
    init_epochs: int | None = None
    init_lr: float | None = None
    init_milestones: tuple = ()
    milestones: tuple = ()
    lr_decay: float = 0.1
    weight_decay: float = 0.0
    init_weight_decay: float | None = None
    reset_optimizer: bool = False

    def __post_init__(self):
        check_int("hidden", self.hidden, low=1)
        check_int("epochs", self.epochs, low=1)
        check_int("batch_size", self.batch_size, low=1)
        check_real("lr", self.lr, low=0, low_open=True)
        check_real("momentum", self.momentum, low=0, high=1, high_open=True)
        check_real("ewc_lambda", self.ewc_lambda, low=0)
        check_real("lwf_lambda", self.lwf_lambda, low=0)
        check_real("kd_lambda", self.kd_lambda, low=0)
        check_real("temperature", self.temperature, low=0, low_open=True)
        check_int("memory_per_class", self.memory_per_class, low=1)
        check_choice("icarl_classifier", self.icarl_classifier, ["nme", "head"])
        if self.init_epochs is not None:
            check_int("init_epochs", self.init_epochs, low=1)
        if self.init_lr is not None:
            check_real("init_lr", self.init_lr, low=0, low_open=True)
        for name in ("init_milestones", "milestones"):
            object.__setattr__(self, name, _milestones(name, getattr(self, name)))
        check_real("lr_decay", self.lr_decay, low=0, low_open=True)
        check_real("weight_decay", self.weight_decay, low=0)
        if self.init_weight_decay is not None:
            check_real("init_weight_decay", self.init_weight_decay, low=0)
        if not isinstance(self.reset_optimizer, bool):
            raise TypeError(f"reset_optimizer must be a bool (true: a new optimizer every task), "
                            f"got {self.reset_optimizer!r}")

    @property
    def scheduled(self) -> bool:
        """Whether any schedule field differs from the constant default (strategies then train task by task
        under :meth:`task_lr`; otherwise exactly as before the schedule existed)."""
        return (self.init_epochs is not None or self.init_lr is not None or bool(self.init_milestones)
                or bool(self.milestones) or self.init_weight_decay is not None or self.reset_optimizer)

    def task_epochs(self, task: int, base: int | None = None) -> int:
        """Epochs of task ``task`` (0-based): ``init_epochs`` for the first where set, else ``base`` or ``epochs``."""
        if task == 0 and self.init_epochs is not None:
            return self.init_epochs
        return self.epochs if base is None else base

    def task_lr(self, task: int, epoch: int, base: float | None = None) -> float:
        """Learning rate of epoch ``epoch`` (0-based) of task ``task``: the task's initial rate times
        ``lr_decay`` to the number of its milestones ``<= epoch`` (MultiStepLR stepped after each epoch)."""
        import bisect

        first = task == 0
        lr0 = self.init_lr if first and self.init_lr is not None else (self.lr if base is None else base)
        ms = self.init_milestones if first else self.milestones
        return lr0 * self.lr_decay ** bisect.bisect_right(ms, epoch)

    def task_weight_decay(self, task: int, base: float | None = None) -> float:
        """Weight decay of task ``task``: ``init_weight_decay`` for the first where set, else ``base`` or
        ``weight_decay``."""
        if task == 0 and self.init_weight_decay is not None:
            return self.init_weight_decay
        return self.weight_decay if base is None else base


def _milestones(name: str, value) -> tuple:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list of epochs (0-based, increasing), e.g. [60, 120, 170], got {value!r}")
    out = tuple(check_int(name, v, low=1) for v in value)
    if any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError(f"{name} must be strictly increasing, got {list(out)}")
    return out


def learner_config(learner: str, config: LearnerConfig, kwargs: dict | None = None) -> LearnerConfig:
    """``config`` with one built-in learner's settings (its ``learner_kwargs`` entry) applied.

    Raises ``ValueError`` naming the learner and its allowed keywords for any other key.

    Examples
    --------
    >>> learner_config("ewc", LearnerConfig(), {"ewc_lambda": 10.0}).ewc_lambda
    10.0
    >>> learner_config("finetune", LearnerConfig(), {"ewc_lambda": 10.0})
    Traceback (most recent call last):
    ...
    ValueError: learner_kwargs['finetune']: unknown keyword 'ewc_lambda'; finetune accepts ['batch_size', 'epochs', 'hidden', 'init_epochs', 'init_lr', 'init_milestones', 'init_weight_decay', 'lr', 'lr_decay', 'milestones', 'momentum', 'reset_optimizer', 'weight_decay']
    """
    check_choice("learner", learner, LEARNERS)
    kwargs = dict(kwargs or {})
    bad = [k for k in kwargs if k not in LEARNER_KEYWORDS[learner]]
    if bad:
        raise ValueError(f"learner_kwargs[{learner!r}]: unknown keyword {bad[0]!r}; {learner} accepts "
                         f"{sorted(LEARNER_KEYWORDS[learner])}")
    return dataclasses.replace(config, **kwargs) if kwargs else config


def init_params(in_features: int, hidden: int, num_classes: int, seed: int):
    """Initial MLP weights (PyTorch's ``nn.Linear`` default init under ``seed``).

    Returns
    -------
    tuple of tensors ``(W1 (D, H), b1 (H,), W2 (H, C), b2 (C,))``; ``x @ W1 + b1``.

    Examples
    --------
    >>> [tuple(p.shape) for p in init_params(4, 3, 2, seed=0)]
    [(4, 3), (3,), (3, 2), (2,)]
    """
    with torch_seeded(seed):
        l1 = torch.nn.Linear(in_features, hidden)
        l2 = torch.nn.Linear(hidden, num_classes)
    return (l1.weight.detach().T.contiguous(), l1.bias.detach().clone(),
            l2.weight.detach().T.contiguous(), l2.bias.detach().clone())


def batch_order(seed: int, code: int, task: int, epoch: int, n: int) -> torch.Tensor:
    """Minibatch order of one prefix's task data for one epoch.

    Depends only on ``(seed, prefix, task, epoch)`` (``code``: :func:`prefix_code` of the
    tasks up to this one), so a sequence is trained on the same batches whether it runs
    alone, with others, or shares its prefix.

    Examples
    --------
    >>> bool((batch_order(0, 5, 1, 0, 10) == batch_order(0, 5, 1, 0, 10)).all())
    True
    """
    g = torch.Generator().manual_seed((seed * 1_000_003 + code * 7919 + task * 101 + epoch) % (2**63 - 1))
    return torch.randperm(n, generator=g)


# --------------------------------------------------------------------------- batched MLP

def _features(params, x):
    W1, b1 = params[0], params[1]
    return torch.relu(torch.baddbmm(b1.unsqueeze(1), x, W1))


def _logits(params, x):
    W2, b2 = params[2], params[3]
    return torch.baddbmm(b2.unsqueeze(1), _features(params, x), W2)


def _ce(logits, y):
    """Sum over sequences of the per-sequence mean cross-entropy; logits (L, B, C), y (L, B)."""
    L, B, C = logits.shape
    return F.cross_entropy(logits.reshape(L * B, C), y.reshape(L * B), reduction="sum") / B


def _kd(new_logits, old_logits, old_mask, T):
    """PyCIL's KD loss over the old classes, summed over sequences (mean over the batch)."""
    m = old_mask[:, None, :]
    soft = torch.softmax(old_logits.masked_fill(~m, _NEG) / T, dim=-1)
    logp = torch.log_softmax(new_logits.masked_fill(~m, _NEG) / T, dim=-1)
    return -(torch.where(m, soft * logp, soft.new_zeros(()))).sum() / new_logits.shape[1]


def _herding(feats, m):
    """Herding selection: feats (G, n, H) unit rows -> indices (G, m)."""
    G, n, _ = feats.shape
    dev = feats.device
    rows = torch.arange(G, device=dev)
    mu = feats.mean(dim=1, keepdim=True)                       # (G, 1, H)
    chosen = torch.zeros(G, n, dtype=torch.bool, device=dev)
    total = torch.zeros(G, 1, feats.shape[2], device=dev)
    idx = []
    for k in range(1, m + 1):
        cand = (total + feats) / k                              # (G, n, H)
        dist = ((mu - cand) ** 2).sum(-1).masked_fill(chosen, math.inf)
        j = dist.argmin(dim=1)                                  # (G,)
        idx.append(j)
        chosen[rows, j] = True
        total = total + feats[rows, j].unsqueeze(1)
    return torch.stack(idx, dim=1)


def _unit(z):
    return z / z.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _bcast(v, like):
    """A per-node vector (n,) shaped to broadcast against ``like`` (n, ...)."""
    return v.view(-1, *([1] * (like.dim() - 1)))


class _NodeScaler:
    """fp16 loss scaling for every node (sequence) on its own, on the device.

    :class:`torch.amp.GradScaler` keeps one scale for a whole model and skips a step when any
    gradient overflows; here every node is an independent model, so each keeps its own scale
    (``state["scale"]``, ``state["growth"]``, selected along the prefix tree like the
    parameters) and only a node whose gradients overflowed skips its step. GradScaler's
    rules: start at 2**16, halve on an overflow, double after 2,000 steps without one.
    The gradient of the logits is multiplied by the node's scale in the backward pass (so
    the half-precision products see scaled values) and the parameter gradients are divided
    by it; no value is read on the host.
    """

    INIT, GROWTH_INTERVAL = 2.0 ** 16, 2000

    @staticmethod
    def root(device):
        return {"scale": torch.full((1,), _NodeScaler.INIT, device=device),
                "growth": torch.zeros(1, dtype=torch.int32, device=device)}

    @staticmethod
    def scale_backward(logits, scale):
        logits.register_hook(lambda g: g * scale.view(-1, 1, 1))
        return logits

    @staticmethod
    def unscale(grads, scale):
        """``(gradients / scale, ok)``: ``ok`` (n,) is True where every gradient of the node is finite."""
        inv = 1.0 / scale
        grads = [g * _bcast(inv, g) for g in grads]
        ok = torch.stack([torch.isfinite(g).flatten(1).all(dim=1) for g in grads]).all(dim=0)
        return grads, ok

    @staticmethod
    def update(state, ok):
        grown = state["growth"] + 1
        double = ok & (grown >= _NodeScaler.GROWTH_INTERVAL)
        state["scale"] = torch.where(ok, torch.where(double, state["scale"] * 2, state["scale"]),
                                     state["scale"] * 0.5)
        state["growth"] = torch.where(ok & ~double, grown, torch.zeros_like(grown))


# --------------------------------------------------------------------------- backends

class _Batched:
    """The batched learners: state = tensors with a leading node dimension, on ``device``."""

    def __init__(self, learner, config, seed, xtr, device=_CPU, precision="fp32", herd_nodes=None):
        self.learner, self.cfg, self.seed = learner, config, seed
        self.device, self.precision = device, precision
        self.xtr = move(xtr, device)                                      # once per run
        self.C, self.ntr = xtr.shape[0], xtr.shape[1]
        self.herd_nodes = herd_nodes
        self.fp16 = precision == "fp16"
        if learner == "ncm":
            self.means = _unit(_unit(self.xtr).mean(dim=1))                # (C, D)

    def autocast(self):
        return autocast(self.device, self.precision)

    def root(self):
        if self.learner == "ncm":
            return {}
        base = move(init_params(self.xtr.shape[2], self.cfg.hidden, self.C, self.seed), self.device)
        state = {"params": [p.unsqueeze(0) for p in base], "buf": [torch.zeros_like(p).unsqueeze(0) for p in base]}
        if self.fp16:
            state.update(_NodeScaler.root(self.device))
        return state

    def select(self, state, idx):
        idx = move(torch.as_tensor(idx), self.device)

        def pick(v):
            if v is None:
                return None
            if isinstance(v, list):
                return [pick(u) for u in v]
            return v[idx]
        return {k: pick(v) for k, v in state.items()}

    def _batch(self, classes, idx, mem_x, mem_y, ar):
        """Rows ``idx`` (n, b) of each node's task data (its M classes, then its memory); ``ar``: arange(n)[:, None]."""
        T = classes.shape[1] * self.ntr
        slot = torch.clamp(idx // self.ntr, max=classes.shape[1] - 1)
        cls = classes[ar, slot]
        xb = self.xtr[cls, idx % self.ntr]
        if mem_x is None:
            return xb, cls
        in_mem = idx >= T
        j = torch.clamp(idx - T, min=0)
        xb = torch.where(in_mem[..., None], mem_x[ar, j], xb)
        return xb, torch.where(in_mem, mem_y[ar, j], cls)

    def _loss(self, params, xb, yb, seen, old, old_mask, scale=None):
        """The step's loss (summed over nodes) under autocast; fp16: the logits' gradient scaled per node."""
        cfg = self.cfg
        with self.autocast():
            logits = _logits(params, xb).float()
            if scale is not None:
                _NodeScaler.scale_backward(logits, scale)
            loss = _ce(_masked(logits, seen), yb)
            if old is not None:
                with torch.no_grad():
                    old_logits = _logits(old, xb).float()
                lam = cfg.lwf_lambda if self.learner == "lwf" else cfg.kd_lambda
                loss = loss + lam * _kd(logits, old_logits, old_mask, cfg.temperature)
        return loss

    def step(self, state, params, buf, xb, yb, seen, old_mask, lr=None, wd=0.0):
        """One SGD-with-momentum step of every node on its minibatch (xb (n, b, D), yb (n, b)), in place;
        ``lr`` (default ``cfg.lr``) and weight decay ``wd`` (``torch.optim.SGD``'s: ``wd * p`` added to the
        gradient before the momentum) from the schedule."""
        cfg = self.cfg
        lr = cfg.lr if lr is None else lr
        fis, fth = state.get("fisher"), state.get("fisher_theta")
        scale = state.get("scale")
        loss = self._loss(params, xb, yb, seen, state.get("old"), old_mask, scale)
        grads = torch.autograd.grad(loss, params)
        ok = None
        if scale is not None:
            grads, ok = _NodeScaler.unscale(grads, scale)
        with torch.no_grad():
            for i, (p, g, b) in enumerate(zip(params, grads, buf)):
                if fis is not None:               # EWC: lambda (sum_k F_k p - sum_k F_k theta*_k)
                    g = g + cfg.ewc_lambda * (fis[i] * p - fth[i])
                if wd:
                    g = g + wd * p
                if ok is None:
                    b.mul_(cfg.momentum).add_(g)
                    p.sub_(lr * b)
                else:                             # fp16: a node whose gradients overflowed skips its step
                    keep = _bcast(ok, b)
                    b.copy_(torch.where(keep, b * cfg.momentum + g, b))
                    p.sub_(torch.where(keep, lr * b, b.new_zeros(())))
            if ok is not None:
                _NodeScaler.update(state, ok)

    def start(self, state):
        """Trainable copies of a level's parameters and momentum (the state itself is kept)."""
        params = [p.detach().clone().requires_grad_(True) for p in state["params"]]
        return params, [b.clone() for b in state["buf"]]

    def train(self, state, prefixes, codes, t, seen, old_mask):
        if self.learner == "ncm":
            return state
        cfg, learner, dev = self.cfg, self.learner, self.device
        classes = move(torch.as_tensor(prefixes[:, t]), dev)
        n = len(classes)
        ar = torch.arange(n, device=dev)[:, None]
        state = dict(state)
        params, buf = self.start(state)
        if cfg.reset_optimizer:                   # a new SGD for this task: momentum from zero
            buf = [torch.zeros_like(b) for b in buf]
        mem_x, mem_y = state.get("mem_x"), state.get("mem_y")
        total = classes.shape[1] * self.ntr + (mem_x.shape[1] if mem_x is not None else 0)
        wd = cfg.task_weight_decay(t)
        for epoch in range(cfg.task_epochs(t)):
            lr = cfg.task_lr(t, epoch)
            # batch orders from CPU generators keyed by the prefix, moved once per epoch
            order = move(torch.stack([batch_order(self.seed, c, t, epoch, total) for c in codes]), dev)
            for start in range(0, total, cfg.batch_size):
                xb, yb = self._batch(classes, order[:, start:start + cfg.batch_size], mem_x, mem_y, ar)
                self.step(state, params, buf, xb, yb, seen, old_mask, lr, wd)
        fis, fth = state.get("fisher"), state.get("fisher_theta")
        out = {"params": [p.detach() for p in params], "buf": buf}
        if self.fp16:
            out.update(scale=state["scale"], growth=state["growth"])
        if learner == "ewc":
            fisher = self._fisher(params, classes, seen, ar)
            theta = out["params"]
            out["fisher"] = fisher if fis is None else [a + f for a, f in zip(fis, fisher)]
            out["fisher_theta"] = ([f * p for f, p in zip(fisher, theta)] if fth is None
                                   else [a + f * p for a, f, p in zip(fth, fisher, theta)])
        if learner in ("lwf", "icarl"):
            out["old"] = [p.clone() for p in out["params"]]
        if learner == "icarl":
            ex, ey = self._exemplars(out["params"], classes)
            out["mem_x"] = ex if mem_x is None else torch.cat([mem_x, ex], dim=1)
            out["mem_y"] = ey if mem_y is None else torch.cat([mem_y, ey], dim=1)
        return out

    def _fisher(self, params, classes, seen, ar):
        """EWC's minibatch empirical Fisher of the task just trained, in float32 (no autocast: squared
        gradients underflow in half precision)."""
        cfg, n = self.cfg, len(classes)
        fisher = [torch.zeros_like(p) for p in params]
        nb, T = 0, classes.shape[1] * self.ntr
        for start in range(0, T, cfg.batch_size):
            rows = torch.arange(start, min(T, start + cfg.batch_size), device=self.device).expand(n, -1)
            xb, yb = self._batch(classes, rows, None, None, ar)
            grads = torch.autograd.grad(_ce(_masked(_logits(params, xb), seen), yb), params)
            for f, g in zip(fisher, grads):
                f += g.detach() ** 2
            nb += 1
        return [f / nb for f in fisher]

    def _exemplars(self, params, classes):
        """iCaRL's herding on the new classes (float32), in groups of ``herd_nodes`` nodes."""
        n, M = classes.shape
        m = self.cfg.memory_per_class
        group = self.herd_nodes or n
        ex, ey = [], []
        with torch.no_grad():
            for s in range(0, n, group):
                cl = classes[s:s + group]
                g = len(cl)
                new_x = self.xtr[cl]                                           # (g, M, ntr, D)
                feats = _unit(torch.stack([_features([p[s:s + group] for p in params], new_x[:, j])
                                           for j in range(M)], dim=1))
                pick = _herding(feats.reshape(g * M, *feats.shape[2:]), m)
                flat = new_x.reshape(g * M, *new_x.shape[2:])
                ex.append(flat[torch.arange(g * M, device=self.device)[:, None], pick].reshape(g, M * m, -1))
                ey.append(cl[:, :, None].expand(g, M, m).reshape(g, -1))
        return torch.cat(ex), torch.cat(ey)

    def scores(self, state, rows, x):
        """Class scores (r, B, C) of nodes ``rows`` (a slice) on the inputs ``x`` (B, D) shared by all nodes."""
        if self.learner == "ncm":
            return (_unit(x) @ self.means.T).expand(rows.stop - rows.start, -1, -1)
        params = [p[rows] for p in state["params"]]
        with self.autocast():
            hid = torch.relu(torch.matmul(x, params[0]) + params[1].unsqueeze(1))     # (r, B, H)
            if self.learner == "icarl" and self.cfg.icarl_classifier == "nme":
                fm = _unit(_features(params, state["mem_x"][rows]))           # (r, n_mem, H)
                onehot = F.one_hot(state["mem_y"][rows], self.C).to(fm.dtype)  # (r, n_mem, C)
                means = _unit(torch.einsum("lnc,lnh->lch", onehot, fm) / onehot.sum(1).clamp_min(1).unsqueeze(-1))
                return torch.einsum("lbh,lch->lbc", _unit(hid), means).float()
            return torch.baddbmm(params[3].unsqueeze(1), hid, params[2]).float()


class _Sequential:
    """Any clkit Strategy, one model per node; children of a shared prefix are deep copies.

    The strategies run on ``device`` in ``precision`` (each moves a task's data once per
    task); the test inputs are on the device already.
    """

    def __init__(self, learner, config, seed, xtr, model_factory, strategy_kwargs, device=_CPU, precision="fp32"):
        if not isinstance(learner, type):
            raise TypeError(f"learner must be a Strategy class (clkit.plugins.resolve_strategy resolves names), "
                            f"got {learner!r}")
        config, strategy_kwargs = split_schedule(config, strategy_kwargs, learner)   # schedule keys -> config
        self.learner, self.cfg, self.seed, self.xtr = learner, config, seed, xtr
        self.C, self.D = xtr.shape[0], math.prod(xtr.shape[2:])
        # images (C, n, channels, H, W) are scored in slices of this many (the default 4,096 rows
        # suits vectors, not a ViT's 224x224 activations)
        self.eval_batch = 4096 if xtr.ndim == 3 else 256
        self.model_factory, self.kwargs = model_factory, dict(strategy_kwargs or {})
        self.device, self.precision = device, precision

    def root(self):
        cfg = self.cfg
        with torch_seeded(self.seed):            # built on the CPU under the seed, then moved by the strategy
            if self.model_factory is not None:
                model = self.model_factory(in_features=self.D, num_classes=self.C)
            else:
                model = torch.nn.Sequential(torch.nn.Linear(self.D, cfg.hidden), torch.nn.ReLU(),
                                            torch.nn.Linear(cfg.hidden, self.C))
        kw = dict(optimizer="sgd", lr=cfg.lr, momentum=cfg.momentum, epochs=cfg.epochs, batch_size=cfg.batch_size)
        kw.update(self.kwargs)
        return [self.learner(model, scenario="class", seed=self.seed, device=self.device, precision=self.precision,
                             **kw)]

    @staticmethod
    def select(state, idx):
        out, used = [], set()
        for p in np.asarray(idx).tolist():
            out.append(node_copy(state[p]) if p in used else state[p])
            used.add(p)
        return out

    def train(self, state, prefixes, codes, t, seen, old_mask):
        from ..strategies.base import Task

        for strat, prefix in zip(state, prefixes):
            cls = [int(c) for c in prefix[t]]
            xs = torch.cat([self.xtr[c] for c in cls])
            ys = torch.tensor(np.repeat(cls, self.xtr.shape[1]), dtype=torch.long)
            task = Task(xs, ys, task_id=t, classes=tuple(cls))
            if self.cfg.scheduled:
                scheduled_train_task(strat, task, t, self.cfg)
            else:
                strat.train_task(task)
        return state

    def scores(self, state, rows, x):
        return torch.stack([s.predict(x, batch_size=self.eval_batch) for s in state[rows]])


def scheduled_train_task(strategy, task, t: int, config: LearnerConfig):
    """``strategy.train_task(task)`` as task ``t`` (0-based) of a sequence under ``config``'s schedule.

    The strategy's own ``lr`` / ``weight_decay`` / ``epochs`` (its constructor's, from
    ``learner_kwargs``) are the later tasks' values; the first task takes ``init_lr`` /
    ``init_weight_decay`` / ``init_epochs`` where set. With ``reset_optimizer`` a new optimizer
    (:meth:`~clkit.strategies.Strategy.make_optimizer`, over the parameter groups of the one in
    place after the strategy's ``before_task``) starts the task, as PyCIL builds one per task; every
    epoch sets its rate, ``task_lr`` (MultiStepLR). Works with any strategy whose ``train_task`` draws
    one :meth:`~clkit.strategies.Strategy.batches` per epoch (every clkit strategy does): the rate is
    set when an epoch's batches are drawn.

    Examples
    --------
    >>> from clkit.strategies import Strategy, Task
    >>> s = Strategy(torch.nn.Linear(2, 2), lr=0.1, epochs=3, batch_size=4)
    >>> cfg = LearnerConfig(init_epochs=2, init_lr=0.5, init_milestones=[1], reset_optimizer=True)
    >>> task = Task(torch.zeros(4, 2), torch.tensor([0, 1, 0, 1]), task_id=0)
    >>> len(scheduled_train_task(s, task, 0, cfg)), s.optimizer.param_groups[0]["lr"]
    (2, 0.05)
    >>> len(scheduled_train_task(s, task, 1, cfg)), s.optimizer.param_groups[0]["lr"]
    (3, 0.1)
    """
    base = getattr(strategy, "_edge_schedule_base", None)
    if base is None:                       # the constructor's values: the later tasks' settings
        base = strategy._edge_schedule_base = (strategy.lr, strategy.weight_decay, strategy.epochs)
    lr0, wd0, ep0 = base
    wd = config.task_weight_decay(t, wd0)
    strategy.lr, strategy.weight_decay = config.task_lr(t, 0, lr0), wd
    epochs = config.task_epochs(t, ep0)
    draw = strategy.batches
    epoch = {"i": 0}

    def batches(n, device=None):
        if epoch["i"] == 0 and config.reset_optimizer:
            groups = [{"params": g["params"]} for g in strategy.optimizer.param_groups]
            strategy.optimizer = strategy.make_optimizer(groups)
        for g in strategy.optimizer.param_groups:
            g["lr"] = config.task_lr(t, epoch["i"], lr0)
            if "weight_decay" in g:
                g["weight_decay"] = wd
        epoch["i"] += 1
        return draw(n, device)

    strategy.batches = batches
    try:
        return strategy.train_task(task, epochs=epochs)
    finally:
        del strategy.batches               # the class's method again (deep copies carry no patch)
        strategy.lr = lr0


# --------------------------------------------------------------------------- the driver

def _check_inputs(x_train, x_test, sequences, *, images: bool = False):
    """Tensors and sequences, checked: ``(C, n, D)`` inputs, or with ``images`` also ``(C, n, *shape)``
    (e.g. ``(C, n, 3, H, W)``, for a strategy whose model takes images)."""
    xtr = torch.as_tensor(np.asarray(x_train), dtype=torch.float32)
    xte = torch.as_tensor(np.asarray(x_test), dtype=torch.float32)
    seqs = np.asarray(sequences, dtype=np.int64)
    ok = (xtr.ndim == 3 or (images and xtr.ndim > 3)) and xte.ndim == xtr.ndim
    if not ok or xtr.shape[0] != xte.shape[0] or xtr.shape[2:] != xte.shape[2:]:
        allowed = "(C, n, D) or (C, n, *image_shape)" if images else "(C, n, D)"
        raise ValueError(f"x_train and x_test must have shapes {allowed} with equal C and trailing shape, got "
                         f"{tuple(xtr.shape)} and {tuple(xte.shape)}")
    if seqs.ndim != 3 or seqs.shape[1] * seqs.shape[2] != xtr.shape[0]:
        raise ValueError(f"sequences must have shape (L, K, M) with K * M = {xtr.shape[0]} classes, "
                         f"got {seqs.shape}")
    return xtr, xte, seqs


def _run_device(device, precision):
    """``(torch.device, precision)`` from a RunDevice, a torch.device or a name (``None``: the CPU)."""
    if device is None:
        device = _CPU
    if isinstance(device, RunDevice):
        return device.device, device.precision if precision is None else check_precision(precision, device.device)
    device = as_device(device)
    return device, check_precision("fp32" if precision is None else precision, device)


def _walk_tree(backend, xall, yall, nte, seqs, progress, share, eval_nodes):
    """Train ``backend`` over the prefix tree of ``seqs`` (one chunk); the accuracy matrices (L, K, K)."""
    L, K, M = seqs.shape
    C = len(yall) // nte
    dev = xall.device
    levels = prefix_tree(seqs, share=share)
    R = np.full((L, K, K), np.nan)
    state = backend.root()
    for t, level in enumerate(levels):
        state = backend.select(state, level.parent)
        pre = move(torch.as_tensor(level.prefixes), dev)                   # (n, t + 1, M)
        n = len(pre)
        ar = torch.arange(n, device=dev)[:, None]
        seen = torch.zeros(n, C, dtype=torch.bool, device=dev)
        seen[ar, pre[:, :t].reshape(n, -1)] = True
        old_mask = seen.clone()
        seen[ar, pre[:, t]] = True
        state = backend.train(state, level.prefixes, level.codes, t, seen, old_mask)
        class_acc = _class_accuracy(backend, state, xall, yall, nte, seen, eval_nodes)
        # a task's test set has nte images per class: its accuracy is the mean over its classes;
        # the level's accuracies are read from the device once (an evaluation boundary)
        acc = to_host(class_acc[ar[:, :, None], pre].mean(dim=2)).astype(np.float64)    # (n, t + 1)
        R[:, t, : t + 1] = acc[level.node_of]
        if progress is not None:
            progress()
    return R


def _node_masks(prefix, t, C, dev):
    """``(seen, old)`` class masks (1, C) of one node whose prefix is ``prefix`` (t + 1, M)."""
    seen = torch.zeros(1, C, dtype=torch.bool, device=dev)
    seen[0, move(torch.as_tensor(prefix[:t].reshape(-1)), dev)] = True
    old = seen.clone()
    seen[0, move(torch.as_tensor(prefix[t]), dev)] = True
    return seen, old


def _walk_tree_depth_first(backend, xall, yall, nte, seqs, progress, share, eval_nodes):
    """:func:`_walk_tree` for one-model-per-node backends (:class:`_Sequential`), depth first.

    The same prefix tree, each node trained once from its parent's state, and evaluated right
    after it is trained; the walk goes down one branch at a time, so only the states along the
    current path are alive (``K + 1`` at most, against a whole level -- 90 ResNets at 6 classes
    in 3 tasks -- breadth first). A parent's state is deep-copied for every child but its last,
    which takes the state itself: every child starts from the parent's state as it was, so the
    accuracies equal the breadth-first walk's (tested).
    """
    L, K, M = seqs.shape
    C = len(yall) // nte
    dev = xall.device
    levels = prefix_tree(seqs, share=share)
    children = [[[] for _ in range(len(levels[t].parent))] for t in range(K - 1)]
    for t in range(1, K):
        for i, p in enumerate(levels[t].parent):
            children[t - 1][int(p)].append(i)
    acc = [np.full((len(lv.parent), t + 1), np.nan) for t, lv in enumerate(levels)]
    left = [len(lv.parent) for lv in levels]

    def visit(t, i, state):
        level = levels[t]
        prefix = level.prefixes[i]
        seen, old = _node_masks(prefix, t, C, dev)
        state = backend.train(state, level.prefixes[i:i + 1], level.codes[i:i + 1], t, seen, old)
        class_acc = _class_accuracy(backend, state, xall, yall, nte, seen, eval_nodes)
        pre = move(torch.as_tensor(prefix), dev)
        acc[t][i] = to_host(class_acc[0, pre].mean(dim=1)).astype(np.float64)
        left[t] -= 1
        if left[t] == 0 and progress is not None:
            progress()
        if t + 1 < K:
            kids = children[t][i]
            for j, k in enumerate(kids):
                visit(t + 1, k, state if j == len(kids) - 1 else [node_copy(state[0])])

    root = backend.root()
    first = list(range(len(levels[0].parent)))
    for j, i in enumerate(first):
        visit(0, i, root if j == len(first) - 1 else [node_copy(root[0])])
    R = np.full((L, K, K), np.nan)
    for t, level in enumerate(levels):
        R[:, t, : t + 1] = acc[t][level.node_of]
    return R


def _walk(backend, xte, seqs, progress, share, plan):
    """Train ``backend`` on ``seqs`` chunk by chunk (``plan``); the accuracy matrices of every sequence."""
    L, K, M = seqs.shape
    C, nte = xte.shape[:2]
    dev = backend.device
    xall = move(xte.reshape(C * nte, *xte.shape[2:]), dev)                       # every test image, class-major, moved once
    yall = torch.arange(C, device=dev).repeat_interleave(nte)
    R = np.full((L, K, K), np.nan)
    walk = _walk_tree_depth_first if isinstance(backend, _Sequential) else _walk_tree
    for part in sequence_chunks(seqs, plan.num_chunks):
        R[part] = walk(backend, xall, yall, nte, seqs[part], progress, share, plan.eval_nodes)
    with warnings.catch_warnings():             # all NaN on the meta device (no values)
        warnings.simplefilter("ignore", RuntimeWarning)
        seen_acc = np.stack([np.nanmean(R[:, t, : t + 1], axis=1) for t in range(K)], axis=1)
    return {"acc_matrix": R, "seen_acc": seen_acc, "avg_acc": seen_acc.mean(axis=1), "final_acc": seen_acc[:, -1],
            "chunks": plan}


def batched_plan(learner: str, config: LearnerConfig, x_train, x_test, sequences, device=None, *,
                 memory_budget: int | None = None):
    """The :class:`~clkit.edge.memory.ChunkPlan` :func:`train_sequences` follows for these inputs on ``device``.

    ``x_train`` / ``x_test`` may be arrays or their shapes ``(C, n, D)``, ``sequences`` an
    array or its shape ``(L, K, M)``.

    Examples
    --------
    >>> p = batched_plan("ewc", LearnerConfig(hidden=32), (8, 100, 196), (8, 200, 196), (2520, 4, 2), "cpu")
    >>> p.num_chunks, p.max_nodes
    (1, 2520)
    """
    check_choice("learner", learner, LEARNERS)
    (C, ntr, D), (_, nte, _) = _shape(x_train), _shape(x_test)
    L, K, _ = _shape(sequences)
    device, _ = _run_device(device, None)
    nb = node_bytes(learner, config, num_classes=C, n_train=ntr, n_test=nte, in_features=D, num_tasks=K)
    return chunk_plan(nb, L, device, budget=memory_budget)


def _shape(x) -> tuple:
    return tuple(int(v) for v in x) if isinstance(x, tuple) else tuple(np.shape(x))


def train_sequences(x_train, x_test, sequences, learner: str, config: LearnerConfig = LearnerConfig(),
                    *, seed: int = 0, progress=None, num_threads: int | None = 1,
                    share_prefixes: bool = True, device=None, precision: str | None = None,
                    memory_budget: int | None = None, chunks=None) -> dict:
    """Train one learner on every class sequence at once; evaluate after every task.

    Parameters
    ----------
    x_train : array_like, shape (C, n_train, D)
        Training inputs per class (class ``c`` = row ``c``); for ``"ncm"`` the
        frozen features.
    x_test : array_like, shape (C, n_test, D)
        Test inputs (or frozen features) per class.
    sequences : array_like of int, shape (L, K, M)
        Class sequences over the ``C = K * M`` classes.
    learner : {"finetune", "ewc", "lwf", "icarl", "ncm"}
    config : LearnerConfig
        With the learner's own settings applied (:func:`learner_config`).
    seed : int
        Model initialisation (identical for every sequence, so sequences differ only
        by their class order) and minibatch orders (keyed by the prefix).
    progress : callable, optional
        Called with no argument after each task of each chunk (``K * num_chunks`` calls;
        the chunks: ``out["chunks"]``, or :func:`batched_plan` beforehand).
    num_threads : int or None
        torch intra-op threads while training (restored afterwards). The batched
        products are small, and one thread is fastest and avoids oversubscribing a
        shared CPU; ``None`` keeps torch's setting. Results do not depend on it.
    share_prefixes : bool
        Train each distinct prefix once (default); ``False`` trains every sequence on
        its own (the same results, slower).
    device : clkit.device.RunDevice, torch.device or str, optional
        Where the learners train (default the CPU). The data move there once; the
        initial weights are drawn on the CPU under ``seed`` and moved, and the batch
        orders come from CPU generators, so every device trains on the same numbers.
        Accuracies are read back once per task of the prefix tree.
    precision : {"fp32", "bf16", "fp16"}, optional
        Autocast of the forward passes (default: the RunDevice's, else fp32); fp16
        scales the loss of every sequence on its own (:class:`_NodeScaler`). EWC's
        Fisher and iCaRL's herding stay in float32.
    memory_budget : int, optional
        Bytes the batched state may use (default :func:`clkit.edge.memory.memory_budget`:
        on CUDA 80 % of the free memory). The sequences are cut into chunks that fit
        (:func:`clkit.edge.memory.chunk_plan`); the results do not depend on it.
    chunks : clkit.edge.memory.ChunkPlan, optional
        A plan made beforehand (:func:`batched_plan`), followed instead of a new one.

    Returns
    -------
    dict
        ``acc_matrix`` (L, K, K): ``R[l, i, j]`` accuracy on task j's test images
        after training task i (NaN for j > i), predicting among the classes seen so
        far; ``seen_acc`` (L, K): accuracy on all seen classes after each task;
        ``avg_acc`` (L,): Eq. 1, the mean of ``seen_acc`` over tasks;
        ``final_acc`` (L,): ``seen_acc[:, -1]``; ``chunks``: the
        :class:`~clkit.edge.memory.ChunkPlan` followed.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(4, 20, 3)) + 3 * np.eye(4, 3)[:, None, :]
    >>> out = train_sequences(x, x, [[[0, 1], [2, 3]]], "ncm")
    >>> out["acc_matrix"].shape, bool(out["avg_acc"][0] > 0.5)
    ((1, 2, 2), True)
    """
    check_choice("learner", learner, LEARNERS)
    if not isinstance(config, LearnerConfig):
        raise TypeError(f"config must be a LearnerConfig, got {type(config).__name__}")
    seed = check_int("seed", seed, low=0)
    xtr, xte, seqs = _check_inputs(x_train, x_test, sequences)
    dev, precision = _run_device(device, precision)
    plan = chunks if chunks is not None else batched_plan(learner, config, tuple(xtr.shape), tuple(xte.shape),
                                                          seqs.shape, dev, memory_budget=memory_budget)
    if plan.num_sequences != len(seqs):
        raise ValueError(f"chunks plans {plan.num_sequences} sequences, got {len(seqs)}")
    with torch_threads(num_threads):
        backend = _Batched(learner, config, seed, xtr, dev, precision, plan.herd_nodes)
        return _walk(backend, xte, np.sort(seqs, axis=-1), progress, share_prefixes, plan)


def split_schedule(config: LearnerConfig, strategy_kwargs: dict | None, learner=None) -> tuple:
    """``(config, kwargs)``: a strategy's ``learner_kwargs`` split into the schedule fields of ``config``
    (:data:`SCHEDULE_KEYWORDS` but ``weight_decay``, the strategy's own keyword) and its constructor's keywords.

    A keyword that ``learner`` (a Strategy class)'s constructor names itself stays with the strategy: a
    method that schedules its own stages (MEMO's ``init_epochs`` / ``milestones``, FOSTER's
    ``init_epochs``) gets its values, and the driver's schedule stays off for it.

    Examples
    --------
    >>> cfg, kw = split_schedule(LearnerConfig(), {"init_epochs": 200, "milestones": [80, 120], "lr": 0.1})
    >>> cfg.init_epochs, cfg.milestones, kw
    (200, (80, 120), {'lr': 0.1})
    >>> from clkit.strategies.memo import MEMO
    >>> cfg, kw = split_schedule(LearnerConfig(), {"init_epochs": 200, "milestones": [80, 120]}, MEMO)
    >>> cfg.scheduled, kw
    (False, {'init_epochs': 200, 'milestones': [80, 120]})
    """
    import inspect

    kw = dict(strategy_kwargs or {})
    own = set(inspect.signature(learner.__init__).parameters) if isinstance(learner, type) else set()
    sched = {k: kw.pop(k) for k in SCHEDULE_KEYWORDS if k in kw and k != "weight_decay" and k not in own}
    return (dataclasses.replace(config, **sched) if sched else config), kw


def train_strategy_sequences(x_train, x_test, sequences, learner, config: LearnerConfig = LearnerConfig(),
                             *, seed: int = 0, model_factory=None, progress=None, num_threads: int | None = 1,
                             strategy_kwargs: dict | None = None, share_prefixes: bool = True, device=None,
                             precision: str | None = None, memory_budget: int | None = None) -> dict:
    """:func:`train_sequences` for an ordinary ``clkit.strategies.Strategy`` (one model per node).

    ``x_train`` / ``x_test`` are ``(C, n, D)`` vectors or ``(C, n, *shape)`` inputs of any
    shape the model takes (images ``(C, n, 3, H, W)``; ``D`` is then the product of ``shape``).
    The strategy is built around the model (``model_factory(in_features=D,
    num_classes=C)``, default the batched learners' one-hidden-layer MLP) with SGD
    (``config.lr`` / ``config.momentum``), ``config.epochs`` per task,
    ``config.batch_size``, ``scenario="class"``, ``seed``, ``device`` and ``precision``
    (as :func:`train_sequences`; the model is built on the CPU under ``seed`` and moved
    by the strategy); ``strategy_kwargs`` are added (and may override those);
    ``learner`` is a Strategy class (names are resolved by
    :func:`clkit.plugins.resolve_strategy`, which imports this module). The root strategy
    is deep-copied at every branch of the prefix tree, so each sequence trains as a fresh
    strategy would; the sequences are cut into chunks by ``memory_budget`` as in
    :func:`train_sequences` (a node's bytes: :func:`clkit.edge.shared.node_bytes_shared`). A frozen
    pre-trained ViT is shared between the nodes, not copied (:func:`clkit.edge.shared.node_copy`).
    Public entry point: :func:`clkit.plugins.train_sequences_sequentially`.
    """
    seed = check_int("seed", seed, low=0)
    xtr, xte, seqs = _check_inputs(x_train, x_test, sequences, images=True)
    dev, precision = _run_device(device, precision)
    backend = _Sequential(learner, config, seed, xtr, model_factory, strategy_kwargs, dev, precision)
    with torch_threads(num_threads):
        # -- ground truth by state (issue 50; clkit/edge/state_truth.py): a strategy declaring a state smaller
        # than the prefix (its `truth_state`) trains once per state; share_prefixes=False keeps the plain walk
        if share_prefixes:
            from .state_truth import by_declared_state
            out = by_declared_state(backend, xte, np.sort(seqs, axis=-1), progress)
            if out is not None:
                return out
        # -- end of the ground truth by state
        plan = chunk_plan(node_bytes_shared(backend.root()[0]), len(seqs), dev, budget=memory_budget)
        return _walk(backend, xte, np.sort(seqs, axis=-1), progress, share_prefixes, plan)


def train_mlp_classifier(x, y, num_classes: int, hidden: int, *, epochs: int, batch_size: int,
                         lr: float, seed: int, device=None, precision: str | None = None) -> torch.nn.Sequential:
    """Train a one-hidden-layer ReLU MLP ``Linear-ReLU-Linear`` with SGD (momentum 0.9).

    The helper behind the data-driven class similarities and the image-prototype
    features: one thread, initialisation and batch order from ``seed`` (local
    generators), so the same inputs and seed give the same network.

    Parameters
    ----------
    x : ndarray, shape (n, d)
    y : ndarray of int, shape (n,)
        Labels in ``0..num_classes-1``.
    device : clkit.device.RunDevice, torch.device or str, optional
        Where it trains (default the CPU): built on the CPU under ``seed``, then moved with
        the data (once); the batch orders come from a CPU generator (once per epoch).
    precision : {"fp32", "bf16", "fp16"}, optional
        Autocast of the forward passes (:class:`clkit.device.Amp`; default the RunDevice's,
        else fp32).

    Returns
    -------
    torch.nn.Sequential
        The trained network on ``device`` in eval mode; ``net[:2]`` is its feature map.

    Examples
    --------
    >>> x = np.array([[0.0], [0.1], [1.0], [1.1]], dtype=np.float32)
    >>> net = train_mlp_classifier(x, np.array([0, 0, 1, 1]), 2, 4, epochs=50,
    ...                            batch_size=4, lr=0.5, seed=0)
    >>> net(torch.as_tensor(x)).argmax(1).tolist()
    [0, 0, 1, 1]
    """
    dev, precision = _run_device(device, precision)
    with torch_seeded(seed):
        net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], hidden), torch.nn.ReLU(),
                                  torch.nn.Linear(hidden, num_classes))
    net = net.to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    amp = Amp(precision, dev)
    xt, yt = move((torch.as_tensor(x), torch.as_tensor(y, dtype=torch.long)), dev)
    g = torch.Generator().manual_seed(seed)
    with torch_threads(1):
        for _ in range(epochs):
            perm = move(torch.randperm(len(xt), generator=g), dev)
            for s in range(0, len(xt), batch_size):
                b = perm[s:s + batch_size]
                with amp.autocast():
                    loss = F.cross_entropy(net(xt[b]).float(), yt[b])
                opt.zero_grad()
                amp.backward(loss, opt)
                amp.step(opt)
    return net.eval()


def feature_map(net, *, num_threads: int | None = None):
    """``features(z) -> ndarray``: a trained network's map (e.g. ``net[:2]``) applied to host inputs.

    The inputs move to the network's device, the features come back to the host (one read
    per call: an evaluation boundary); ``num_threads`` torch threads while it runs (``None``:
    torch's setting).

    Examples
    --------
    >>> net = torch.nn.Linear(2, 3)
    >>> feature_map(net)(np.zeros((4, 2))).shape
    (4, 3)
    """
    dev = next(net.parameters()).device

    def features(z):
        with torch.no_grad(), torch_threads(num_threads):
            return to_host(net(move(torch.as_tensor(np.asarray(z, dtype=np.float32)), dev)))
    return features
