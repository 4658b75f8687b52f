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
The configuration (:class:`LearnerConfig`, the keywords, PyCIL's schedule) lives in
:mod:`clkit.edge.learner_config` and the batched backend in :mod:`clkit.edge.batched`;
this module re-exports both, so ``from clkit.edge.learners import ...`` keeps working.

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

import math
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from .._seed import torch_seeded, torch_threads
from .._validate import check_choice, check_int
from ..device import Amp, RunDevice, as_device, check_precision, move, to_host
from .batched import _Batched, _features, _logits, _NodeScaler  # noqa: F401 (re-exported for callers)
from .learner_config import (
    LEARNER_KEYWORDS,
    LEARNERS,
    SCHEDULE_KEYWORDS,
    LearnerConfig,
    batch_order,
    init_params,
    learner_config,
    scheduled_train_task,
    split_schedule,
)
from .memory import chunk_plan, node_bytes, sequence_chunks
from .node_accuracy import class_accuracy as _class_accuracy
from .prefix import prefix_code, prefix_tree
from .shared import node_bytes_shared, node_copy

__all__ = ["LEARNERS", "LEARNER_KEYWORDS", "SCHEDULE_KEYWORDS", "LearnerConfig", "split_schedule",
           "scheduled_train_task", "learner_config", "init_params", "batch_order",
           "prefix_code", "train_sequences", "train_strategy_sequences", "batched_plan", "torch_threads",
           "train_mlp_classifier", "feature_map"]

_CPU = torch.device("cpu")


# --------------------------------------------------------------------------- backends

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
