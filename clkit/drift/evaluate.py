"""Online training along a DRIFT stream with periodic evaluation on every latent task.

The learner sees one batch at a time through :meth:`Strategy.observe` (one
optimisation step per incoming batch, a single pass, no task identity). Every
``eval_every`` batches (Δ) it is evaluated on the test set of every latent
task with *one* inference pass over the graph; the result is the
accuracy-over-time array ``acc[i, k]`` of shape (num_evals, num_tasks) that
:mod:`clkit.metrics` turns into AA, AF (hard transitions), A_AUC and AF_s.

Devices: a run computes on its strategy's device. The labels, the test nodes and the
whole stream of node-index batches move there once per run; each step indexes them
there. Step losses stay on the device and are read once, at the end of the stream;
each evaluation reads its accuracies once (:class:`clkit.drift.protocol.TaskEvaluator`).
What the host needs per step -- the batch's node ids and labels for the authors'
per-step hook (classes seen so far, the hard loop's task subgraph) -- comes from the
host copy of the stream.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._seed import torch_seeded, torch_threads
from .._validate import check_choice, check_int, check_real
from ..device import as_device, host_float, move, to_host
from ..strategies import Strategy, Task, make_strategy
from ..strategies.base import epoch_means
from .protocol import eval_points
from .streams import Stream

__all__ = ["METHODS", "REGISTRY_NAME", "StreamRun", "task_accuracy", "eval_points", "run_stream", "make_learner",
           "train_joint"]

#: DRIFT's method names (``"joint"`` is the offline upper bound, not a strategy)
METHODS = ["bare", "joint", "er", "agem", "gss", "mas_star", "ssm", "sem", "dmsg"]
#: DRIFT method name -> clkit.strategies registry name
REGISTRY_NAME = {"bare": "naive", "er": "er", "agem": "agem", "gss": "gss", "mas_star": "mas_star",
                 "ssm": "ssm", "sem": "sem", "dmsg": "dmsg"}


@dataclass
class StreamRun:
    """Result of :func:`run_stream`.

    Attributes
    ----------
    acc : ndarray, shape (num_evals, num_tasks)
        ``acc[i, k]`` = accuracy on latent task k's test set after ``eval_batches[i]`` batches.
    eval_batches : ndarray of int, shape (num_evals,)
    losses : ndarray, shape (num_batches,)
        Training loss of every step.
    pooled : ndarray, shape (num_evals,) or None
        Accuracy pooled over all test nodes at each evaluation (with an ``evaluator``).
    """

    acc: np.ndarray
    eval_batches: np.ndarray
    losses: np.ndarray
    pooled: np.ndarray | None = None


def task_accuracy(logits: torch.Tensor, y: torch.Tensor, test_task, num_tasks: int) -> np.ndarray:
    """Accuracy per latent task from the logits of all test nodes (one vectorised pass).

    Parameters
    ----------
    logits : Tensor, shape (n_test, num_classes)
    y : Tensor of int, shape (n_test,)
    test_task : array_like of int, shape (n_test,)
        Latent task of each test node.
    num_tasks : int

    Returns
    -------
    ndarray, shape (num_tasks,) (NaN for a task without test nodes; every value NaN on ``meta``)

    Examples
    --------
    >>> logits = torch.tensor([[1., 0.], [0., 1.], [1., 0.], [1., 0.]])
    >>> task_accuracy(logits, torch.tensor([0, 1, 1, 0]), [0, 0, 1, 1], 2).tolist()
    [1.0, 0.5]
    """
    correct = to_host(logits.argmax(1) == move(y, logits.device)).astype(float)
    t = np.asarray(test_task)
    hits = np.bincount(t, weights=correct, minlength=num_tasks)
    n = np.bincount(t, minlength=num_tasks)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, hits / np.maximum(n, 1), np.nan)


def run_stream(strategy: Strategy, stream: Stream, y, test_idx, test_task, *, eval_every: int = 10,
               progress: bool = False, desc: str | None = None, num_threads: int | None = 1,
               evaluator=None, eval_at_start: bool = False, before_step=None, points=None) -> StreamRun:
    """Train ``strategy`` online along ``stream`` and evaluate every ``eval_every`` batches.

    Parameters
    ----------
    strategy : Strategy
        Wrapping a model that maps node-index tensors to logits (e.g. :class:`clkit.models.gcn.GCN`).
    stream : Stream
    y : Tensor of int64, shape (num_nodes,)
        Labels of all nodes (on the host; moved to the strategy's device once).
    test_idx : array_like of int, shape (n_test,)
    test_task : array_like of int, shape (n_test,)
        Latent task of each test node.
    eval_every : int
        Δ, in batches (A_AUC's evaluation interval). AF / AF_s take the maximum
        over these evaluation points (Δ = 1 gives the paper's max over all batches).
    progress : bool
        Show a progress bar (:mod:`clkit.progress`: text once finished).
    num_threads : int or None
        torch intra-op threads while streaming (restored afterwards). One thread
        is fastest for steps on 10 nodes; None leaves the setting alone.
    evaluator : callable, optional
        ``evaluator(model) -> (per-task accuracies, pooled accuracy)``
        (:class:`clkit.drift.protocol.TaskEvaluator`); default: every test node
        scored over all classes on the whole graph.
    eval_at_start : bool
        Also evaluate the untrained model (batch 0), as the authors' code does.
    before_step : callable, optional
        ``before_step(node_idx, labels)`` called before each step with the batch's node
        ids and labels *on the host* (the authors' protocol updates the classes seen so
        far here).
    points : array_like of int, optional
        Batches trained at each evaluation (0: the untrained model), replacing
        ``eval_every`` / ``eval_at_start`` (:func:`clkit.drift.protocol.protocol_eval_points`).
        Negative node ids in a batch are padding (a partial batch) and are dropped.

    Returns
    -------
    StreamRun
    """
    with torch_threads(num_threads):
        return _run_stream(strategy, stream, y, test_idx, test_task, eval_every, progress, desc, evaluator,
                           eval_at_start, before_step, points)


def _run_stream(strategy, stream, y, test_idx, test_task, eval_every, progress, desc, evaluator=None,
                eval_at_start=False, before_step=None, points=None) -> StreamRun:
    device = getattr(strategy, "device", torch.device("cpu"))
    y_host = torch.as_tensor(y, dtype=torch.int64)
    y = move(y_host, device)                                           # once per run
    test_idx = move(torch.as_tensor(np.asarray(test_idx), dtype=torch.int64), device)
    test_task = np.asarray(test_task)
    num_tasks = stream.num_tasks
    if points is None:
        points = set(eval_points(stream.num_batches, eval_every).tolist())
    else:
        points = {int(q) for q in np.asarray(points)}
        eval_at_start = 0 in points
    batches_host = torch.as_tensor(stream.batches, dtype=torch.int64)
    batches = move(batches_host, device)                               # the whole stream, once per run
    sizes = (stream.batches >= 0).sum(1)   # -1 pads a partial batch at its end (host copy of the stream)
    padded = bool((sizes < stream.batch_size).any())
    it = range(stream.num_batches)
    if progress:
        from ..progress import tqdm

        it = tqdm(it, desc=desc or type(strategy).__name__, leave=False)
    losses = []
    accs, when, pooled = [], [], []

    def evaluate(t):
        if evaluator is not None:
            a, p = evaluator(strategy.model)
        else:
            logits = strategy.predict(test_idx, batch_size=max(1, len(test_idx)))
            a = task_accuracy(logits, y[test_idx], test_task, num_tasks)
            p = host_float((logits.argmax(1) == y[test_idx]).float().mean()) if len(test_idx) else float("nan")
        accs.append(a)
        pooled.append(p)
        when.append(t)

    if eval_at_start:
        evaluate(0)
    for t in it:
        idx = batches[t, :sizes[t]] if padded else batches[t]
        if before_step is not None:
            host = batches_host[t, :sizes[t]]
            before_step(host, y_host[host])
        losses.append(strategy.observe(idx, y[idx]))
        if t + 1 in points:
            evaluate(t + 1)
    losses = np.asarray(epoch_means([[v] for v in losses]), dtype=float)   # one read for the whole stream
    return StreamRun(np.array(accs), np.array(when), losses, np.array(pooled))


def make_learner(method: str, model: torch.nn.Module, *, lr: float = 5e-3, memory_size: int = 100, seed: int = 0,
                 device="cpu", precision: str = "fp32", **kwargs) -> Strategy:
    """The DRIFT learner ``method`` around ``model``: Adam (lr 5e-3), class-incremental head.

    Memory-based methods get ``memory_size`` (DRIFT: 100 nodes); ``device`` and ``precision``
    are the run's (:mod:`clkit.device`; the model moves to the device); ``kwargs`` go to the
    strategy.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> type(make_learner("bare", MLP(2, 2))).__name__
    'Strategy'
    """
    if method in METHODS:
        check_choice("method", method, [m for m in METHODS if m != "joint"])
    lr = check_real("lr", lr, low=0, low_open=True)
    if method not in METHODS:  # a clkit strategy name, installed plugin or "package.module:Class"
        import inspect

        from ..plugins import require_capabilities

        cls = require_capabilities(method, ("task_free", "graph", "class_scenario"), "05_drift",
                                   parameter="methods")
        if "memory_size" in inspect.signature(cls.__init__).parameters:
            kwargs["memory_size"] = check_int("memory_size", memory_size, low=1)
    elif method != "bare":
        kwargs["memory_size"] = check_int("memory_size", memory_size, low=1)
    return make_strategy(REGISTRY_NAME.get(method, method), model, optimizer="adam", lr=lr, scenario="class",
                         seed=seed, device=device, precision=precision, **kwargs)


def train_joint(model_fn, y, train_idx, test_idx, test_task, num_tasks: int, *, epochs: int = 50,
                batch_size: int = 256, lr: float = 5e-3, seed: int = 0, num_threads: int | None = 1,
                weight_decay: float = 0.0, evaluator=None, device="cpu", precision: str = "fp32"):
    """Joint (offline) upper bound: all training nodes at once, several shuffled epochs.

    Parameters
    ----------
    model_fn : callable
        ``model_fn()`` builds a fresh model (called inside ``torch_seeded(seed)``).
    y : Tensor of int64, shape (num_nodes,)
    train_idx, test_idx, test_task : array_like of int
    num_tasks : int
    epochs, batch_size, lr : training settings (Adam).
    seed : int
    num_threads : int or None
        torch intra-op threads while training (restored afterwards).
    weight_decay : float
        Adam's weight decay (the authors' protocol: 5e-4).
    evaluator : callable, optional
        ``evaluator(model) -> (acc, pooled)``; when given, that pair is returned.
    device, precision
        The run's (:mod:`clkit.device`): the model is built on the CPU and moved there, the
        training nodes move once, the epochs' losses are read once.

    Returns
    -------
    ndarray, shape (num_tasks,) -- final accuracy on every latent task's test set
    (``(acc, pooled)`` with an ``evaluator``).
    """
    y = torch.as_tensor(y, dtype=torch.int64)
    with torch_seeded(seed):
        model = model_fn()
    learner = Strategy(model, optimizer="adam", lr=lr, epochs=epochs, batch_size=batch_size, seed=seed,
                       weight_decay=weight_decay, device=as_device(device), precision=precision)
    tr = torch.as_tensor(np.asarray(train_idx), dtype=torch.int64)
    te = torch.as_tensor(np.asarray(test_idx), dtype=torch.int64)
    with torch_threads(num_threads):
        learner.train_task(Task(tr, y[tr], task_id=0))
        if evaluator is not None:
            return evaluator(learner.model)
        logits = learner.predict(te, batch_size=max(1, len(te)))
    return task_accuracy(logits, y[te], test_task, num_tasks)
