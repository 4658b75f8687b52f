"""Class-incremental learners trained on many class sequences at once.

The enumerable experiment trains the same learner on every class sequence (90
for 6 classes in 3 tasks). Instead of a Python loop of 90 runs, all sequences
are trained together: each sequence ``l`` owns its own MLP, stored as a slice of
batched weight tensors ``W1 (L, D, H)``, ``W2 (L, H, C)``, and one optimisation
step is a batched matrix product (``torch.baddbmm``) over the leading sequence
dimension. The loss is the *sum* over sequences of each sequence's mean loss, so
the gradient of slice ``l`` is exactly the gradient of an independent model, and
SGD (with momentum, elementwise) updates each slice as if it were trained alone
(``tests/test_edge_learners.py`` checks one sequence against a plain loop).

Class-incremental protocol: one head over all ``C`` classes of the experiment;
at task ``t`` the logits of classes not yet seen in that sequence are masked to
``-1e9`` (softmax weight exactly 0, so they get no gradient: the same as a head
that grows with each task). Evaluation after task ``t`` uses the test images of
all classes seen so far and predicts among them.

Learners (batched re-implementations; the generic ones live in
``clkit.strategies`` and follow the same definitions):

``finetune``
    cross-entropy on the current task only.
``ewc``
    Kirkpatrick et al. (2017): after each task the diagonal Fisher
    ``F = mean over minibatches of (d loss / d theta)^2`` (the minibatch
    empirical Fisher, as Avalanche and PyCIL compute it) and the parameters
    ``theta*`` are stored; later tasks add ``lambda/2 * sum_k F_k (theta - theta*_k)^2``.
``lwf``
    Li & Hoiem (2017): cross-entropy plus ``lambda * KD_T`` between the old
    model's and the new model's softmax (temperature ``T``) over the old classes
    (PyCIL's ``_KD_loss``: ``-sum softmax(old/T) * log_softmax(new/T)`` per sample).
``icarl``
    Rebuffi et al. (2017), in PyCIL's form: LwF's loss on the current data plus
    a memory of ``memory_per_class`` exemplars per old class chosen by herding on
    the normalised hidden features; prediction by the nearest mean of exemplars
    (NME) in that feature space.
``ncm``
    nearest class mean on frozen features (a prototype learner of the
    pre-trained family): class means of the training features; no training.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from .._seed import torch_seeded, torch_threads
from .._validate import check_choice, check_int, check_real

__all__ = ["LEARNERS", "LearnerConfig", "init_params", "batch_order", "sequence_code",
           "train_sequences", "torch_threads", "train_mlp_classifier"]

LEARNERS = ("finetune", "ewc", "lwf", "icarl", "ncm")
_NEG = -1e9


@dataclass(frozen=True)
class LearnerConfig:
    """Hyper-parameters shared by the batched learners.

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


def sequence_code(sequence) -> int:
    """A stable integer for a class sequence (its flattened classes in base ``N``).

    Examples
    --------
    >>> sequence_code([[0, 1], [2, 3]]), sequence_code([[2, 3], [0, 1]])
    (228, 78)
    """
    flat = np.asarray(sequence).ravel()
    n = len(flat)
    return int(sum(int(c) * n ** i for i, c in enumerate(flat)))


def batch_order(seed: int, code: int, task: int, epoch: int, n: int) -> torch.Tensor:
    """Minibatch order of one sequence's task data for one epoch.

    Depends only on ``(seed, sequence, task, epoch)``, so a sequence is trained on
    the same batches whether it runs alone or with others.

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


# --------------------------------------------------------------------------- training

def train_sequences(x_train, x_test, sequences, learner: str, config: LearnerConfig = LearnerConfig(),
                    *, seed: int = 0, progress=None, num_threads: int | None = 1) -> dict:
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
    seed : int
        Model initialisation (identical for every sequence, so sequences differ only
        by their class order) and minibatch orders.
    progress : callable, optional
        Called with no argument after each task (e.g. a tqdm ``update``).
    num_threads : int or None
        torch intra-op threads while training (restored afterwards). The batched
        products are small, and one thread is fastest and avoids oversubscribing a
        shared CPU; ``None`` keeps torch's setting. Results do not depend on it.

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
    with torch_threads(num_threads):
        return _train(x_train, x_test, sequences, learner, config, seed, progress)


def _train(x_train, x_test, sequences, learner, config, seed, progress):
    if not isinstance(config, LearnerConfig):
        raise TypeError(f"config must be a LearnerConfig, got {type(config).__name__}")
    seed = check_int("seed", seed, low=0)
    xtr = torch.as_tensor(np.asarray(x_train), dtype=torch.float32)
    xte = torch.as_tensor(np.asarray(x_test), dtype=torch.float32)
    seqs_np = np.asarray(sequences, dtype=np.int64)
    if xtr.ndim != 3 or xte.ndim != 3 or xtr.shape[0] != xte.shape[0] or xtr.shape[2] != xte.shape[2]:
        raise ValueError(f"x_train and x_test must have shapes (C, n, D) with equal C and D, got "
                         f"{tuple(xtr.shape)} and {tuple(xte.shape)}")
    if seqs_np.ndim != 3 or seqs_np.shape[1] * seqs_np.shape[2] != xtr.shape[0]:
        raise ValueError(f"sequences must have shape (L, K, M) with K * M = {xtr.shape[0]} classes, "
                         f"got {seqs_np.shape}")
    L, K, M = seqs_np.shape
    C = xtr.shape[0]
    seqs = torch.as_tensor(seqs_np)
    codes = [sequence_code(s) for s in seqs_np]
    R = np.full((L, K, K), np.nan)
    seen = torch.zeros(L, C, dtype=torch.bool)
    ar = torch.arange(L)

    params = None
    if learner != "ncm":
        base = init_params(xtr.shape[2], config.hidden, C, seed)
        params = [p.unsqueeze(0).repeat(L, *([1] * p.ndim)).requires_grad_(True) for p in base]
        opt = torch.optim.SGD(params, lr=config.lr, momentum=config.momentum)
    anchors = []          # EWC: (fisher, theta*) per finished task
    old_params = None     # LwF / iCaRL: frozen copy after the previous task
    mem_x = mem_y = None  # iCaRL memory (L, n_mem, D), (L, n_mem)
    ncm_means = None

    for t in range(K):
        old_mask = seen.clone()
        seen[ar[:, None], seqs[:, t]] = True
        if learner == "ncm":
            ncm_means = _unit(_unit(xtr).mean(dim=1))            # (C, D)
        else:
            xs, ys = _gather_task(xtr, seqs[:, t])
            if learner == "icarl" and mem_x is not None:
                xs, ys = torch.cat([xs, mem_x], dim=1), torch.cat([ys, mem_y], dim=1)
            n = xs.shape[1]
            for epoch in range(config.epochs):
                order = torch.stack([batch_order(seed, codes[l], t, epoch, n) for l in range(L)])
                for start in range(0, n, config.batch_size):
                    idx = order[:, start:start + config.batch_size]
                    xb = xs[ar[:, None], idx]
                    yb = ys[ar[:, None], idx]
                    logits = _logits(params, xb)
                    loss = _ce(_masked(logits, seen), yb)
                    if learner == "ewc" and anchors:
                        loss = loss + 0.5 * config.ewc_lambda * sum(
                            (f * (p - a) ** 2).sum() for fis, anc in anchors for p, f, a in zip(params, fis, anc))
                    if learner in ("lwf", "icarl") and old_params is not None:
                        with torch.no_grad():
                            old_logits = _logits(old_params, xb)
                        lam = config.lwf_lambda if learner == "lwf" else config.kd_lambda
                        loss = loss + lam * _kd(logits, old_logits, old_mask, config.temperature)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
            if learner == "ewc":
                fisher = [torch.zeros_like(p) for p in params]
                xs_t, ys_t = _gather_task(xtr, seqs[:, t])
                nb = 0
                for start in range(0, xs_t.shape[1], config.batch_size):
                    xb, yb = xs_t[:, start:start + config.batch_size], ys_t[:, start:start + config.batch_size]
                    grads = torch.autograd.grad(_ce(_masked(_logits(params, xb), seen), yb), params)
                    for f, g in zip(fisher, grads):
                        f += g.detach() ** 2
                    nb += 1
                anchors.append(([f / nb for f in fisher], [p.detach().clone() for p in params]))
            if learner in ("lwf", "icarl"):
                old_params = [p.detach().clone() for p in params]
            if learner == "icarl":
                with torch.no_grad():
                    new_x = xtr[seqs[:, t]]                          # (L, M, n, D)
                    feats = _unit(torch.stack([_features(params, new_x[:, j]) for j in range(M)], dim=1))
                    pick = _herding(feats.reshape(L * M, *feats.shape[2:]), config.memory_per_class)
                    ex = new_x.reshape(L * M, *new_x.shape[2:])[torch.arange(L * M)[:, None], pick]
                    ex = ex.reshape(L, M * config.memory_per_class, -1)
                    ey = seqs[:, t][:, :, None].expand(L, M, config.memory_per_class).reshape(L, -1)
                    mem_x = ex if mem_x is None else torch.cat([mem_x, ex], dim=1)
                    mem_y = ey if mem_y is None else torch.cat([mem_y, ey], dim=1)
        # ---- evaluate on the test images of every seen task
        with torch.no_grad():
            for j in range(t + 1):
                xe, ye = _gather_task(xte, seqs[:, j])
                if learner == "ncm":
                    scores = _unit(xe) @ ncm_means.T                  # (L, B, C)
                elif learner == "icarl":
                    fm = _unit(_features(params, mem_x))             # (L, n_mem, H)
                    onehot = F.one_hot(mem_y, C).float()              # (L, n_mem, C)
                    means = _unit(torch.einsum("lnc,lnh->lch", onehot, fm)
                                  / onehot.sum(1).clamp_min(1).unsqueeze(-1))
                    scores = torch.einsum("lbh,lch->lbc", _unit(_features(params, xe)), means)
                else:
                    scores = _logits(params, xe)
                pred = _masked(scores, seen).argmax(dim=-1)
                R[:, t, j] = (pred == ye).float().mean(dim=1).numpy()
        if progress is not None:
            progress()
    seen_acc = np.stack([np.nanmean(R[:, t, : t + 1], axis=1) for t in range(K)], axis=1)
    return {"acc_matrix": R, "seen_acc": seen_acc, "avg_acc": seen_acc.mean(axis=1),
            "final_acc": seen_acc[:, -1]}


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
