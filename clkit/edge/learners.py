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

Class-incremental protocol: one head over all ``C`` classes of the experiment; at task
``t`` the logits of classes not yet seen in that sequence are masked to ``-1e9``
(softmax weight exactly 0, so they get no gradient: the same as a head that grows with
each task). Evaluation after task ``t`` uses the test images of all classes seen so far
and predicts among them. The optimizer (SGD, momentum 0.9) keeps its momentum across
tasks, as a :class:`~clkit.strategies.Strategy` does.

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
    space.
``ncm``
    nearest class mean on frozen features (a prototype learner of the pre-trained
    family): class means of the training features; no training. Its final accuracy is
    the same for every order (all classes seen, same means); its A(O) (Eq. 1) still
    depends on the order through the test sets of the intermediate steps.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from .._seed import torch_seeded, torch_threads
from .._validate import check_choice, check_int, check_real
from .prefix import prefix_code, prefix_tree

__all__ = ["LEARNERS", "LEARNER_KEYWORDS", "LearnerConfig", "learner_config", "init_params", "batch_order",
           "prefix_code", "train_sequences", "train_strategy_sequences", "torch_threads",
           "train_mlp_classifier"]

LEARNERS = ("finetune", "ewc", "lwf", "icarl", "ncm")
_OPTIM = ("hidden", "epochs", "batch_size", "lr", "momentum")
#: the keywords of :class:`LearnerConfig` each built-in learner uses (its ``learner_kwargs``)
LEARNER_KEYWORDS = {
    "finetune": _OPTIM,
    "ewc": _OPTIM + ("ewc_lambda",),
    "lwf": _OPTIM + ("lwf_lambda", "temperature"),
    "icarl": _OPTIM + ("kd_lambda", "temperature", "memory_per_class"),
    "ncm": (),
}
_NEG = -1e9


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
    ValueError: learner_kwargs['finetune']: unknown keyword 'ewc_lambda'; finetune accepts ['batch_size', 'epochs', 'hidden', 'lr', 'momentum']
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


def _masked(logits, mask):
    return logits.masked_fill(~mask[:, None, :], _NEG)


def _ce(logits, y):
    """Sum over sequences of the per-sequence mean cross-entropy; logits (L, B, C), y (L, B)."""
    L, B, C = logits.shape
    return F.cross_entropy(logits.reshape(L * B, C), y.reshape(L * B), reduction="sum") / B


def _kd(new_logits, old_logits, old_mask, T):
    """PyCIL's KD loss over the old classes, summed over sequences (mean over the batch)."""
    m = old_mask[:, None, :]
    soft = torch.softmax(old_logits.masked_fill(~m, _NEG) / T, dim=-1)
    logp = torch.log_softmax(new_logits.masked_fill(~m, _NEG) / T, dim=-1)
    return -(torch.where(m, soft * logp, torch.zeros(()))).sum() / new_logits.shape[1]


def _gather_task(x, classes):
    """x (C, n, D), classes (L, M) -> inputs (L, M*n, D), labels (L, M*n)."""
    L, M = classes.shape
    n = x.shape[1]
    xs = x[classes].reshape(L, M * n, -1)
    ys = classes[:, :, None].expand(L, M, n).reshape(L, M * n)
    return xs, ys


def _herding(feats, m):
    """Herding selection: feats (G, n, H) unit rows -> indices (G, m)."""
    G, n, _ = feats.shape
    mu = feats.mean(dim=1, keepdim=True)                       # (G, 1, H)
    chosen = torch.zeros(G, n, dtype=torch.bool)
    total = torch.zeros(G, 1, feats.shape[2])
    idx = []
    for k in range(1, m + 1):
        cand = (total + feats) / k                              # (G, n, H)
        dist = ((mu - cand) ** 2).sum(-1).masked_fill(chosen, math.inf)
        j = dist.argmin(dim=1)                                  # (G,)
        idx.append(j)
        chosen[torch.arange(G), j] = True
        total = total + feats[torch.arange(G), j].unsqueeze(1)
    return torch.stack(idx, dim=1)


def _unit(z):
    return z / z.norm(dim=-1, keepdim=True).clamp_min(1e-12)


# --------------------------------------------------------------------------- backends

class _Batched:
    """The batched learners: state = tensors with a leading node dimension."""

    def __init__(self, learner, config, seed, xtr):
        self.learner, self.cfg, self.seed, self.xtr = learner, config, seed, xtr
        self.C, self.ntr = xtr.shape[0], xtr.shape[1]
        if learner == "ncm":
            self.means = _unit(_unit(xtr).mean(dim=1))                   # (C, D)

    def root(self):
        if self.learner == "ncm":
            return {}
        base = init_params(self.xtr.shape[2], self.cfg.hidden, self.C, self.seed)
        return {"params": [p.unsqueeze(0) for p in base], "buf": [torch.zeros_like(p).unsqueeze(0) for p in base]}

    @staticmethod
    def select(state, idx):
        idx = torch.as_tensor(idx)

        def pick(v):
            if v is None:
                return None
            if isinstance(v, list):
                return [pick(u) for u in v]
            return v[idx]
        return {k: pick(v) for k, v in state.items()}

    def _batch(self, classes, idx, mem_x, mem_y):
        """Rows ``idx`` (n, b) of each node's task data (its M classes, then its memory)."""
        T = classes.shape[1] * self.ntr
        ar = torch.arange(len(idx))[:, None]
        slot = torch.clamp(idx // self.ntr, max=classes.shape[1] - 1)
        cls = classes[ar, slot]
        xb = self.xtr[cls, idx % self.ntr]
        if mem_x is None:
            return xb, cls
        in_mem = idx >= T
        j = torch.clamp(idx - T, min=0)
        xb = torch.where(in_mem[..., None], mem_x[ar, j], xb)
        return xb, torch.where(in_mem, mem_y[ar, j], cls)

    def train(self, state, prefixes, codes, t, seen, old_mask):
        if self.learner == "ncm":
            return state
        cfg, learner = self.cfg, self.learner
        classes = torch.as_tensor(prefixes[:, t])
        n = len(classes)
        params = [p.detach().clone().requires_grad_(True) for p in state["params"]]
        buf = [b.clone() for b in state["buf"]]
        mem_x, mem_y = state.get("mem_x"), state.get("mem_y")
        old = state.get("old")
        fis, fth = state.get("fisher"), state.get("fisher_theta")
        total = classes.shape[1] * self.ntr + (mem_x.shape[1] if mem_x is not None else 0)
        for epoch in range(cfg.epochs):
            order = torch.stack([batch_order(self.seed, c, t, epoch, total) for c in codes])
            for start in range(0, total, cfg.batch_size):
                xb, yb = self._batch(classes, order[:, start:start + cfg.batch_size], mem_x, mem_y)
                logits = _logits(params, xb)
                loss = _ce(_masked(logits, seen), yb)
                if old is not None:
                    with torch.no_grad():
                        old_logits = _logits(old, xb)
                    lam = cfg.lwf_lambda if learner == "lwf" else cfg.kd_lambda
                    loss = loss + lam * _kd(logits, old_logits, old_mask, cfg.temperature)
                grads = torch.autograd.grad(loss, params)
                with torch.no_grad():
                    for i, (p, g, b) in enumerate(zip(params, grads, buf)):
                        if fis is not None:               # EWC: lambda (sum_k F_k p - sum_k F_k theta*_k)
                            g = g + cfg.ewc_lambda * (fis[i] * p - fth[i])
                        b.mul_(cfg.momentum).add_(g)
                        p.sub_(cfg.lr * b)
        out = {"params": [p.detach() for p in params], "buf": buf}
        if learner == "ewc":
            fisher = [torch.zeros_like(p) for p in params]
            nb, T = 0, classes.shape[1] * self.ntr
            for start in range(0, T, cfg.batch_size):
                rows = torch.arange(start, min(T, start + cfg.batch_size)).expand(n, -1)
                xb, yb = self._batch(classes, rows, None, None)
                grads = torch.autograd.grad(_ce(_masked(_logits(params, xb), seen), yb), params)
                for f, g in zip(fisher, grads):
                    f += g.detach() ** 2
                nb += 1
            fisher = [f / nb for f in fisher]
            theta = out["params"]
            out["fisher"] = fisher if fis is None else [a + f for a, f in zip(fis, fisher)]
            out["fisher_theta"] = ([f * p for f, p in zip(fisher, theta)] if fth is None
                                   else [a + f * p for a, f, p in zip(fth, fisher, theta)])
        if learner in ("lwf", "icarl"):
            out["old"] = [p.clone() for p in out["params"]]
        if learner == "icarl":
            M, m = classes.shape[1], cfg.memory_per_class
            with torch.no_grad():
                new_x = self.xtr[classes]                                  # (n, M, ntr, D)
                feats = _unit(torch.stack([_features(out["params"], new_x[:, j]) for j in range(M)], dim=1))
                pick = _herding(feats.reshape(n * M, *feats.shape[2:]), m)
                ex = new_x.reshape(n * M, *new_x.shape[2:])[torch.arange(n * M)[:, None], pick].reshape(n, M * m, -1)
                ey = classes[:, :, None].expand(n, M, m).reshape(n, -1)
            out["mem_x"] = ex if mem_x is None else torch.cat([mem_x, ex], dim=1)
            out["mem_y"] = ey if mem_y is None else torch.cat([mem_y, ey], dim=1)
        return out

    def scores(self, state, rows, x):
        """Class scores (r, B, C) of nodes ``rows`` on the inputs ``x`` (B, D) shared by all nodes."""
        if self.learner == "ncm":
            return (_unit(x) @ self.means.T).expand(len(rows), -1, -1)
        params = [p[rows] for p in state["params"]]
        hid = torch.relu(torch.matmul(x, params[0]) + params[1].unsqueeze(1))     # (r, B, H)
        if self.learner == "icarl":
            fm = _unit(_features(params, state["mem_x"][rows]))           # (r, n_mem, H)
            onehot = F.one_hot(state["mem_y"][rows], self.C).float()        # (r, n_mem, C)
            means = _unit(torch.einsum("lnc,lnh->lch", onehot, fm) / onehot.sum(1).clamp_min(1).unsqueeze(-1))
            return torch.einsum("lbh,lch->lbc", _unit(hid), means)
        return torch.baddbmm(params[3].unsqueeze(1), hid, params[2])


class _Sequential:
    """Any clkit Strategy, one model per node; children of a shared prefix are deep copies."""

    def __init__(self, learner, config, seed, xtr, model_factory, strategy_kwargs):
        if not isinstance(learner, type):
            raise TypeError(f"learner must be a Strategy class (clkit.plugins.resolve_strategy resolves names), "
                            f"got {learner!r}")
        self.learner, self.cfg, self.seed, self.xtr = learner, config, seed, xtr
        self.C, self.D = xtr.shape[0], xtr.shape[2]
        self.model_factory, self.kwargs = model_factory, dict(strategy_kwargs or {})

    def root(self):
        cfg = self.cfg
        with torch_seeded(self.seed):
            if self.model_factory is not None:
                model = self.model_factory(in_features=self.D, num_classes=self.C)
            else:
                model = torch.nn.Sequential(torch.nn.Linear(self.D, cfg.hidden), torch.nn.ReLU(),
                                            torch.nn.Linear(cfg.hidden, self.C))
        kw = dict(optimizer="sgd", lr=cfg.lr, momentum=cfg.momentum, epochs=cfg.epochs, batch_size=cfg.batch_size)
        kw.update(self.kwargs)
        return [self.learner(model, scenario="class", seed=self.seed, **kw)]

    @staticmethod
    def select(state, idx):
        out, used = [], set()
        for p in np.asarray(idx).tolist():
            out.append(copy.deepcopy(state[p]) if p in used else state[p])
            used.add(p)
        return out

    def train(self, state, prefixes, codes, t, seen, old_mask):
        from ..strategies.base import Task

        for strat, prefix in zip(state, prefixes):
            cls = [int(c) for c in prefix[t]]
            xs = torch.cat([self.xtr[c] for c in cls])
            ys = torch.tensor(np.repeat(cls, self.xtr.shape[1]), dtype=torch.long)
            strat.train_task(Task(xs, ys, task_id=t, classes=tuple(cls)))
        return state

    def scores(self, state, rows, x):
        return torch.stack([state[r].predict(x) for r in np.asarray(rows).tolist()])


# --------------------------------------------------------------------------- the driver

def _check_inputs(x_train, x_test, sequences):
    xtr = torch.as_tensor(np.asarray(x_train), dtype=torch.float32)
    xte = torch.as_tensor(np.asarray(x_test), dtype=torch.float32)
    seqs = np.asarray(sequences, dtype=np.int64)
    if xtr.ndim != 3 or xte.ndim != 3 or xtr.shape[0] != xte.shape[0] or xtr.shape[2] != xte.shape[2]:
        raise ValueError(f"x_train and x_test must have shapes (C, n, D) with equal C and D, got "
                         f"{tuple(xtr.shape)} and {tuple(xte.shape)}")
    if seqs.ndim != 3 or seqs.shape[1] * seqs.shape[2] != xtr.shape[0]:
        raise ValueError(f"sequences must have shape (L, K, M) with K * M = {xtr.shape[0]} classes, "
                         f"got {seqs.shape}")
    return xtr, xte, seqs


def _walk(backend, xte, seqs, progress, share, eval_bytes=2**26):
    """Train ``backend`` over the prefix tree of ``seqs``; the accuracy matrices of every sequence."""
    L, K, M = seqs.shape
    C, nte, D = xte.shape
    levels = prefix_tree(seqs, share=share)
    R = np.full((L, K, K), np.nan)
    state = backend.root()
    xall = xte.reshape(C * nte, D)                                  # every test image, class-major
    yall = torch.arange(C).repeat_interleave(nte)
    chunk = max(1, eval_bytes // max(1, C * nte * max(C, 64) * 4))
    for t, level in enumerate(levels):
        state = backend.select(state, level.parent)
        pre = torch.as_tensor(level.prefixes)                       # (n, t + 1, M)
        n = len(pre)
        ar = torch.arange(n)[:, None]
        seen = torch.zeros(n, C, dtype=torch.bool)
        seen[ar, pre[:, :t].reshape(n, -1)] = True
        old_mask = seen.clone()
        seen[ar, pre[:, t]] = True
        state = backend.train(state, level.prefixes, level.codes, t, seen, old_mask)
        class_acc = torch.empty(n, C)                                  # accuracy per class, per node
        with torch.no_grad():
            for s in range(0, n, chunk):
                rows = torch.arange(s, min(n, s + chunk))
                pred = _masked(backend.scores(state, rows, xall), seen[rows]).argmax(dim=-1)
                class_acc[rows] = (pred == yall).float().reshape(len(rows), C, nte).mean(dim=2)
        # a task's test set has nte images per class: its accuracy is the mean over its classes
        acc = class_acc[ar[:, :, None], pre].mean(dim=2).double().numpy()     # (n, t + 1)
        R[:, t, : t + 1] = acc[level.node_of]
        if progress is not None:
            progress()
    seen_acc = np.stack([np.nanmean(R[:, t, : t + 1], axis=1) for t in range(K)], axis=1)
    return {"acc_matrix": R, "seen_acc": seen_acc, "avg_acc": seen_acc.mean(axis=1), "final_acc": seen_acc[:, -1]}


def train_sequences(x_train, x_test, sequences, learner: str, config: LearnerConfig = LearnerConfig(),
                    *, seed: int = 0, progress=None, num_threads: int | None = 1,
                    share_prefixes: bool = True) -> dict:
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
        Called with no argument after each task (e.g. a tqdm ``update``).
    num_threads : int or None
        torch intra-op threads while training (restored afterwards). The batched
        products are small, and one thread is fastest and avoids oversubscribing a
        shared CPU; ``None`` keeps torch's setting. Results do not depend on it.
    share_prefixes : bool
        Train each distinct prefix once (default); ``False`` trains every sequence on
        its own (the same results, slower).

    Returns
    -------
    dict
        ``acc_matrix`` (L, K, K): ``R[l, i, j]`` accuracy on task j's test images
        after training task i (NaN for j > i), predicting among the classes seen so
        far; ``seen_acc`` (L, K): accuracy on all seen classes after each task;
        ``avg_acc`` (L,): Eq. 1, the mean of ``seen_acc`` over tasks;
        ``final_acc`` (L,): ``seen_acc[:, -1]``.

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
    with torch_threads(num_threads):
        return _walk(_Batched(learner, config, seed, xtr), xte, np.sort(seqs, axis=-1), progress, share_prefixes)


def train_strategy_sequences(x_train, x_test, sequences, learner, config: LearnerConfig = LearnerConfig(),
                             *, seed: int = 0, model_factory=None, progress=None, num_threads: int | None = 1,
                             strategy_kwargs: dict | None = None, share_prefixes: bool = True) -> dict:
    """:func:`train_sequences` for an ordinary ``clkit.strategies.Strategy`` (one model per node).

    The strategy is built around the model (``model_factory(in_features=D,
    num_classes=C)``, default the batched learners' one-hidden-layer MLP) with SGD
    (``config.lr`` / ``config.momentum``), ``config.epochs`` per task,
    ``config.batch_size``, ``scenario="class"`` and ``seed``; ``strategy_kwargs``
    are added (and may override those); ``learner`` is a Strategy class (names are
    resolved by :func:`clkit.plugins.resolve_strategy`, which imports this module). The root strategy is deep-copied at every
    branch of the prefix tree, so each sequence trains as a fresh strategy would.
    Public entry point: :func:`clkit.plugins.train_sequences_sequentially`.
    """
    seed = check_int("seed", seed, low=0)
    xtr, xte, seqs = _check_inputs(x_train, x_test, sequences)
    backend = _Sequential(learner, config, seed, xtr, model_factory, strategy_kwargs)
    with torch_threads(num_threads):
        return _walk(backend, xte, np.sort(seqs, axis=-1), progress, share_prefixes)


def train_mlp_classifier(x, y, num_classes: int, hidden: int, *, epochs: int, batch_size: int,
                         lr: float, seed: int) -> torch.nn.Sequential:
    """Train a one-hidden-layer ReLU MLP ``Linear-ReLU-Linear`` with SGD (momentum 0.9).

    The helper behind the data-driven class similarities and the image-prototype
    features: one thread, initialisation and batch order from ``seed`` (local
    generators), so the same inputs and seed give the same network.

    Parameters
    ----------
    x : ndarray, shape (n, d)
    y : ndarray of int, shape (n,)
        Labels in ``0..num_classes-1``.

    Returns
    -------
    torch.nn.Sequential
        The trained network in eval mode; ``net[:2]`` is its feature map.

    Examples
    --------
    >>> x = np.array([[0.0], [0.1], [1.0], [1.1]], dtype=np.float32)
    >>> net = train_mlp_classifier(x, np.array([0, 0, 1, 1]), 2, 4, epochs=50,
    ...                            batch_size=4, lr=0.5, seed=0)
    >>> net(torch.as_tensor(x)).argmax(1).tolist()
    [0, 0, 1, 1]
    """
    with torch_seeded(seed):
        net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], hidden), torch.nn.ReLU(),
                                  torch.nn.Linear(hidden, num_classes))
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    xt, yt = torch.as_tensor(x), torch.as_tensor(y, dtype=torch.long)
    g = torch.Generator().manual_seed(seed)
    with torch_threads(1):
        for _ in range(epochs):
            perm = torch.randperm(len(xt), generator=g)
            for s in range(0, len(xt), batch_size):
                b = perm[s:s + batch_size]
                loss = F.cross_entropy(net(xt[b]), yt[b])
                opt.zero_grad()
                loss.backward()
                opt.step()
    return net.eval()
