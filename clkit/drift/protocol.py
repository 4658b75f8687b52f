"""Two evaluation protocols for DRIFT: the paper's text and the authors' released code.

DRIFT's paper (Sun, Zhang, Ni & Song) describes its protocol in words; its numbers
come from the released code (github.com/UConn-DSIS/DRIFT), which differs in ways
that change the conclusions. Both are available, selected by one name:

``"text"`` -- the protocol as the paper describes it (the kit's reading):
    batch ``t`` of the schedule evaluated at its midpoint ``t + 1/2``; 80/20 per-class
    train/test split; every test node scored over *all* classes on the whole graph;
    per-task accuracies averaged with equal weight; evaluations every ``eval_every``
    batches and at the end; AF = final minus the best accuracy seen; the kit's GCN
    (symmetric normalisation, bias, full neighbourhoods); Adam without weight decay,
    loss over every output; replayed nodes keep their edges; Joint trained for
    ``joint_epochs`` epochs.

``"authors"`` -- what the released code does:
    - schedule at integer ``t`` with the authors' arithmetic and rounding (equal to
      their ``gaussian_utils.py``; tested), overlap threshold ``tau = 0.9``;
    - test nodes of task k scored only over classes ``0 .. (highest class of task k)``
      (rounded up to an even count), each task on its own induced subgraph (its
      train and test nodes), accuracy *pooled* over all test nodes;
    - evaluations at batch 0 (the untrained model), every ``eval_every`` batches and
      at the end, all counted in A_AUC and in AF_s's maximum (their default
      interval is 100 batches);
    - the hard, boundary-local and global settings run their per-task loops
      (``pipeline.py``: ``pipeline_tfocis`` with ``Continuum``, ``pipeline_tfobb``,
      ``pipeline_tfo`` for ``tfo_blurry``): the stream is a sequence of task *segments*
      (:attr:`clkit.drift.streams.Stream.segment`), cut into batches that never cross a
      segment (the last one partial), each batch trained on its segment's own subgraph
      (its train nodes and its task's test nodes), an evaluation also before the first
      batch of every new segment (``(i % log_every == 0) or (t != current_task)``), AA =
      mean over tasks of the final per-task accuracies (``metrics.confusion_matrix``'s
      ``fin.mean()``) and AF = final minus the accuracy at the end of the task's own
      segment (the last evaluation tagged with that task), so it can be positive. The
      segments are the latent tasks (hard); ``[block k-1 | task k's rest | block k]`` with
      each boundary's mixed block trained twice (boundary-local,
      ``data_prepare_boundaryblurry``; :func:`clkit.drift.streams.authors_boundary_local_stream`);
      task k's first ``int(N_k (1 - p))`` shuffled nodes plus a ``1/K`` chunk of the pooled
      rest (global, ``data_prepare_blurry``; :func:`clkit.drift.streams.authors_global_stream`).
      Each task is then also *evaluated* on its segment's subgraph (their ``subgraphs[t]``).
      The paper's text describes neither the task-change evaluations nor these
      constructions (App. A.3: the boundary samples spread once over ``2 K_bl`` batches;
      the pool "injected into all stream regions"), which the text protocol follows;
    - 60/20/20 split (validation nodes are dropped from the graph the model sees);
      weight decay 5e-4; loss over the classes seen so far; replayed nodes enter as
      isolated nodes; their backbone (:class:`clkit.models.gcn.AuthorsGCN`); Joint
      trained for 1 epoch with batches of 2000.

The method variants of the released code are in :mod:`clkit.drift.authors`
(``Protocol.learners``); their ER adds two means (:class:`clkit.drift.authors.AuthorsER`,
``loss_form``).

Streams: the kit draws every stream from its seed (``seed`` in the cache key), so
seeds vary the batch order as well as the model. The released code caches a stream
per dataset, σ, batch size and sampling *without* the seed
(``data_prepare_gaussian``'s file name), so after the first run every seed reuses the
first seed's stream and seeds vary only the model and the methods; the kit does not
copy that (its seed spread includes the stream's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._validate import check_choice, check_int
from ..metrics import stream_auc, stream_average_accuracy, stream_forgetting
from .schedule import (AUTHORS_TAU, SCHEDULE_AT, authors_gaussian_weights, authors_largest_remainder,
                       authors_overlap_index, mixing_schedule)

__all__ = ["PROTOCOLS", "AUTHORS_TAU", "Protocol", "get_protocol", "authors_gaussian_weights",
           "authors_largest_remainder", "authors_overlap_index", "schedule", "class_limit", "induced_subgraph",
           "TaskEvaluator", "AUTHORS_EVAL_EVERY", "eval_intervals", "eval_points", "protocol_eval_points", "segment_references", "stream_metrics",
           "protocol_metrics"]

PROTOCOLS = ["text", "authors"]
#: evaluation interval of the authors' code, in batches (``main.py --log_every``, default 100)
AUTHORS_EVAL_EVERY = 100


@dataclass(frozen=True)
class Protocol:
    """The choices that differ between the two protocols (see the module docstring)."""

    name: str
    schedule_at: str  # "midpoint" | "integer"
    eval_at_start: bool
    class_mask: bool
    induced_subgraph: bool
    pooled: bool
    hard_af: str  # "max" | "segment"
    val_fraction: float
    weight_decay: float
    seen_class_loss: bool
    learners: str  # "kit" | "authors": the methods as clkit.drift.authors runs them (isolated replay, ...)
    backbone: str  # "gcn" | "authors"
    joint_epochs: int | None  # None: the caller's joint_epochs
    joint_batch_size: int
    default_eval_every: int | None = None  # None: the caller's eval_every; authors: their log_every (100)
    hard_task_loop: bool = False  # hard setting as the authors' per-task loop (see the module docstring)


_PROTOCOLS = {
    "text": Protocol("text", SCHEDULE_AT["text"], False, False, False, False, "max", 0.0, 0.0, False, "kit", "gcn", None, 256),
    "authors": Protocol("authors", SCHEDULE_AT["authors"], True, True, True, True, "segment", 0.2, 5e-4, True,
                        "authors", "authors",
                        1, 2000, AUTHORS_EVAL_EVERY, True),
}


def get_protocol(protocol) -> Protocol:
    """The :class:`Protocol` named ``protocol`` (``"text"`` or ``"authors"``); a Protocol passes through.

    Examples
    --------
    >>> get_protocol("authors").weight_decay
    0.0005
    >>> get_protocol("paper")
    Traceback (most recent call last):
    ...
    ValueError: protocol must be one of ['text', 'authors'], got 'paper'
    """
    if isinstance(protocol, Protocol):
        return protocol
    return _PROTOCOLS[check_choice("protocol", protocol, PROTOCOLS)]


def schedule(task_sizes, batch_size: int, sigma: float, protocol="text"):
    """Weights and batch counts of the Gaussian schedule under ``protocol``
    (:func:`clkit.drift.schedule.mixing_schedule` at the protocol's ``schedule_at``).

    Examples
    --------
    >>> w, c = schedule([20, 20], 10, 1.0, "authors")
    >>> c.tolist()
    [[10, 0], [9, 1], [5, 5], [1, 9]]
    """
    return mixing_schedule(task_sizes, batch_size, sigma, at=get_protocol(protocol).schedule_at)


# ------------------------------------------------------------------ evaluation
def eval_intervals(protocols, eval_every: int, eval_every_authors: int | None = None) -> tuple[dict, list]:
    """Each protocol's evaluation interval Δ, and a note for every interval that departs from its protocol's.

    ``"text"`` evaluates every ``eval_every`` batches (the paper names no interval);
    ``"authors"`` every ``eval_every_authors``, by default the released code's 100
    (:data:`AUTHORS_EVAL_EVERY`). A run that sets another value for the authors gets a
    note saying so.

    Returns
    -------
    intervals : dict -- ``protocol -> Δ``
    notes : list of str -- one sentence per override

    Examples
    --------
    >>> eval_intervals(["text", "authors"], 20)
    ({'text': 20, 'authors': 100}, [])
    >>> print(eval_intervals(["authors"], 20, 4)[1][0])
    authors protocol: evaluated every 4 batches (eval_every_authors = 4), not every 100 as the released code (log_every)
    """
    eval_every = check_int("eval_every", eval_every, low=1)
    out, notes = {}, []
    for name in protocols:
        p = get_protocol(name)
        if p.default_eval_every is None:
            out[p.name] = eval_every
            continue
        given = p.default_eval_every if eval_every_authors is None else \
            check_int("eval_every_authors", eval_every_authors, low=1)
        out[p.name] = given
        if given != p.default_eval_every:
            notes.append(f"{p.name} protocol: evaluated every {given} batches (eval_every_authors = {given}), "
                         f"not every {p.default_eval_every} as the released code (log_every)")
    return out, notes


def class_limit(task_classes, k: int) -> int:
    """Classes scored for task ``k`` under the authors' protocol: ``0 .. max class of tasks <= k``.

    ``max + 1``, rounded up to an even number as in their ``eval_tasks_cis``.

    Examples
    --------
    >>> class_limit([(0, 1), (2, 3), (4,)], 2)
    6
    """
    return _even(max(max(c) for c in task_classes[: k + 1]) + 1)


def _even(n: int) -> int:
    return n + (n % 2)


def induced_subgraph(edge_index, nodes):
    """Edges among ``nodes`` in local numbering (position in ``nodes``).

    Examples
    --------
    >>> induced_subgraph(torch.tensor([[0, 1, 2, 3], [1, 0, 3, 2]]), [2, 3, 0]).tolist()
    [[0, 1], [1, 0]]
    """
    ei = torch.as_tensor(edge_index, dtype=torch.int64)
    nodes = torch.as_tensor(np.asarray(nodes), dtype=torch.int64)
    n = int(max(int(ei.max()) + 1 if ei.numel() else 0, int(nodes.max()) + 1))
    local = torch.full((n,), -1, dtype=torch.int64)
    local[nodes] = torch.arange(len(nodes))
    keep = (local[ei[0]] >= 0) & (local[ei[1]] >= 0)
    return torch.stack([local[ei[0][keep]], local[ei[1][keep]]])


class TaskEvaluator:
    """Accuracy of a model on every latent task's test set, under a protocol.

    ``evaluator(model)`` returns ``(acc, pooled)``: per-task accuracies, shape
    (num_tasks,), and the accuracy pooled over all test nodes. Under ``"text"`` every
    test node is scored over all classes on the whole graph (``model(test_idx)``);
    under ``"authors"`` each task is scored on its own induced subgraph (its train and
    test nodes) over classes ``0 .. class_limit``.

    One pass per evaluation, on ``device``: the tasks' induced subgraphs are disjoint, so
    a model that holds its graph (:class:`clkit.models.gcn.GCN`) scores them all at once
    on their block-diagonal union (normalised once on the host per aggregation, moved to
    the device once), each row then masked to its task's classes; hits are counted per
    task on the device and read once per evaluation (NaN on ``meta``). Other models are
    scored task by task through ``model.forward_subgraph`` (host edge lists).

    Parameters
    ----------
    edge_index : Tensor of int64, shape (2, E) -- the graph the model holds
    y : Tensor of int64, shape (N,)
    split : LatentTaskSplit
    protocol : str or Protocol
    device : str, torch.device or RunDevice
        Where the model is (the test nodes, labels and subgraphs move there once).
    precision : {"fp32", "bf16", "fp16"}
        Autocast of the evaluation's forward pass.

    Examples
    --------
    >>> from clkit.drift.experiment import LatentTaskSplit
    >>> sp = LatentTaskSplit([np.array([0]), np.array([2])], np.array([1, 3]), np.array([0, 1]), [(0, 1), (2, 3)])
    >>> class Const(torch.nn.Module):   # always predicts class 3, then 1
    ...     logit_limit = None
    ...     def forward(self, idx): return torch.tensor([[0., 1., 0., 2.]]).repeat(len(idx), 1)
    ...     def forward_subgraph(self, nodes, ei, centers): return self(centers)
    >>> y = torch.tensor([0, 1, 2, 3])
    >>> ei = torch.zeros((2, 0), dtype=torch.int64)
    >>> TaskEvaluator(ei, y, sp, "text")(Const())[0].tolist()
    [0.0, 1.0]
    >>> TaskEvaluator(ei, y, sp, "authors")(Const())[0].tolist()   # task 0 only scores classes 0, 1
    [1.0, 1.0]
    """

    def __init__(self, edge_index, y, split, protocol="text", *, device="cpu", precision: str = "fp32"):
        from ..device import as_device, check_precision, move

        self.protocol = get_protocol(protocol)
        self.device = as_device(device)
        self.precision = check_precision(precision, self.device)
        self.y = torch.as_tensor(y, dtype=torch.int64)
        self.split = split
        self.num_tasks = split.num_tasks
        self.test_idx = torch.as_tensor(np.asarray(split.test_idx), dtype=torch.int64)
        self.test_task = np.asarray(split.test_task)
        self.parts = []
        if self.protocol.induced_subgraph or self.protocol.class_mask:
            for k in range(self.num_tasks):
                test_k = np.asarray(split.test_idx)[self.test_task == k]
                nodes = np.concatenate([np.asarray(split.task_nodes[k]), test_k])
                centers = torch.arange(len(split.task_nodes[k]), len(nodes))
                sub = induced_subgraph(edge_index, nodes) if self.protocol.induced_subgraph else None
                limit = class_limit(split.task_classes, k) if self.protocol.class_mask else None
                self.parts.append((torch.as_tensor(nodes), sub, centers, torch.as_tensor(test_k), limit))
        # the rows scored, in order: their node, task, label and class limit (moved to the device once)
        if self.parts:
            rows = torch.cat([p[3] for p in self.parts])
            task = np.concatenate([np.full(len(p[3]), k) for k, p in enumerate(self.parts)])
        else:
            rows, task = self.test_idx, self.test_task
        self.n = np.bincount(task.astype(np.int64), minlength=self.num_tasks).astype(np.float64)
        self._rows = move(rows, self.device)
        self._task = move(torch.as_tensor(task, dtype=torch.int64), self.device)
        self._y = move(self.y[rows], self.device)
        self._limit = None
        if self.protocol.class_mask:
            limits = np.concatenate([np.full(len(p[3]), p[4]) for p in self.parts])
            self._limit = move(torch.as_tensor(limits, dtype=torch.int64), self.device)
        self._blocks = {}   # the model's aggregation (normalised or not) -> (nodes, Adjacency, centres) on the device

    def _union(self, normalize: bool):
        """The tasks' induced subgraphs as one block-diagonal graph on the device (built once per aggregation)."""
        if normalize not in self._blocks:
            from ..device import move
            from ..models.gcn import Adjacency

            adj = Adjacency.block_diag([Adjacency.from_edges(sub, len(nodes), normalize)
                                        for nodes, sub, _, _, _ in self.parts])
            offsets = np.cumsum([0] + [len(p[0]) for p in self.parts[:-1]])
            centers = torch.cat([c + int(o) for (_, _, c, _, _), o in zip(self.parts, offsets)])
            self._blocks[normalize] = (move(torch.cat([p[0] for p in self.parts]), self.device),
                                       adj.to(self.device), move(centers, self.device))
        return self._blocks[normalize]

    def logits(self, model) -> torch.Tensor:
        """The logits of the scored rows (test nodes, task by task under the authors' protocol), on the device."""
        if not self.protocol.induced_subgraph:
            return model(self._rows)
        if hasattr(model, "forward_blocks"):
            nodes, adj, centers = self._union(getattr(model, "normalize", True))
            return model.forward_blocks(nodes, adj, centers)
        return torch.cat([model.forward_subgraph(nodes, sub, centers) for nodes, sub, centers, _, _ in self.parts])

    @torch.no_grad()
    def __call__(self, model):
        from ..device import autocast, to_host

        was, limit = model.training, getattr(model, "logit_limit", None)
        model.eval()
        model.logit_limit = None
        try:
            with autocast(self.device, self.precision):
                logits = self.logits(model)
            if self._limit is not None:   # each row scored over its task's classes only
                cols = torch.arange(logits.shape[1], device=logits.device)
                logits = logits.masked_fill(cols[None, :] >= self._limit[:, None], float("-inf"))
            correct = (logits.argmax(1) == self._y).float()
            hits = torch.zeros(self.num_tasks, device=correct.device).index_add_(0, self._task, correct)
        finally:
            model.train(was)
            model.logit_limit = limit
        hits = to_host(hits).astype(np.float64)   # the evaluation's one read
        n = self.n
        with np.errstate(invalid="ignore", divide="ignore"):
            acc = np.where(n > 0, hits / np.maximum(n, 1), np.nan)
        return acc, float(hits.sum() / max(n.sum(), 1))


def eval_points(num_batches: int, eval_every: int) -> np.ndarray:
    """Batches after which to evaluate: ``Δ, 2Δ, ...`` and always the last batch.

    Examples
    --------
    >>> eval_points(10, 4).tolist()
    [4, 8, 10]
    """
    eval_every = check_int("eval_every", eval_every, low=1)
    pts = np.arange(eval_every, num_batches + 1, eval_every)
    if pts.size == 0 or pts[-1] != num_batches:
        pts = np.append(pts, num_batches)
    return pts


def protocol_eval_points(num_batches: int, eval_every: int, protocol="text", task_of_batch=None) -> np.ndarray:
    """Batches trained at each evaluation: ``Δ, 2Δ, ..., T`` (text) or ``0, Δ, 2Δ, ..., T`` (authors).

    With ``task_of_batch`` (shape (T,), the task segment of every batch in the authors'
    loop: hard, boundary-local and global settings) the authors' loop also
    evaluates before the first batch of every new task: at ``i`` whenever
    ``task_of_batch[i] != task_of_batch[i - 1]`` (their ``t != current_task``).

    Examples
    --------
    >>> protocol_eval_points(10, 4, "text").tolist(), protocol_eval_points(10, 4, "authors").tolist()
    ([4, 8, 10], [0, 4, 8, 10])
    >>> protocol_eval_points(8, 4, "authors").tolist()   # the authors' loop: 0, 4 before training, 8 at the end
    [0, 4, 8]
    >>> protocol_eval_points(8, 4, "authors", task_of_batch=[0, 0, 0, 1, 1, 1, 2, 2]).tolist()
    [0, 3, 4, 6, 8]
    """
    p = get_protocol(protocol)
    pts = eval_points(num_batches, eval_every)
    if p.eval_at_start:
        pts = np.concatenate([[0], pts])
    if task_of_batch is not None and p.hard_task_loop:
        tb = np.asarray(task_of_batch)
        changes = np.flatnonzero(tb[1:] != tb[:-1]) + 1
        pts = np.union1d(pts, changes)
    return pts.astype(np.int64)


def segment_references(weights, eval_batches, segments=None) -> np.ndarray:
    """For every task, the evaluation that closes its own segment (-1 when none does).

    An evaluation after ``p`` batches belongs to the task of batch ``p - 1`` (task 0
    for ``p = 0``), as the authors' ``task_list``: ``segments[p - 1]`` when given (the
    task segment of each batch in their loop, :attr:`clkit.drift.streams.Stream.segment`),
    else the task that dominated it (``argmax`` of ``weights``); a task's reference is
    its last evaluation.

    Examples
    --------
    >>> w = np.eye(2)[[0, 0, 1, 1]]
    >>> segment_references(w, [0, 2, 4]).tolist()
    [1, 2]
    >>> segment_references(w, [0, 1, 2, 4], segments=[0, 0, 0, 1]).tolist()   # batch 2 still task 0's
    [2, 3]
    """
    w = np.asarray(weights)
    owner = np.argmax(w, axis=1) if segments is None else np.asarray(segments, dtype=np.int64)
    ev = np.asarray(eval_batches, dtype=np.int64)
    tags = np.where(ev > 0, owner[np.maximum(ev - 1, 0)], 0)
    ref = np.full(w.shape[1], -1, dtype=np.int64)
    for i, k in enumerate(tags):
        ref[k] = i
    return ref


def stream_metrics(acc) -> dict:
    """The paper's four metrics from an accuracy-over-time array (num_evals, num_tasks).

    AA and AF (hard transitions) and A_AUC and AF_s (mixing) via :mod:`clkit.metrics`;
    AF and AF_s are the same formula (Eqs. in Sect. 5.1 and Eq. 8) and are both reported.

    Examples
    --------
    >>> stream_metrics([[0.5, 0.1], [0.3, 0.7]])
    {'AA': 0.5, 'AF': -0.1, 'A_AUC': 0.4, 'AF_s': -0.1}
    """
    return {"AA": stream_average_accuracy(acc), "AF": stream_forgetting(acc), "A_AUC": stream_auc(acc),
            "AF_s": stream_forgetting(acc)}


def protocol_metrics(acc, pooled, protocol="text", *, weights=None, eval_batches=None, hard: bool = False,
                     segments=None) -> dict:
    """AA, AF, A_AUC and AF_s of one run under ``protocol`` (fractions; forgetting <= 0 is worse).

    text: AA = mean final per-task accuracy, A_AUC = mean over evaluations of the
    per-task mean, AF = AF_s = mean over tasks of (final - max). authors: AA = final
    pooled accuracy, A_AUC = mean of the pooled accuracy over all evaluations (batch 0
    included), AF_s = mean over tasks of (final - max); with ``hard=True`` (and
    ``weights``, ``eval_batches``) AF = mean over tasks of (final - accuracy at the end of
    the task's own segment) (``hard_af="segment"``) and AA = mean over tasks of the
    final per-task accuracies (``hard_task_loop``: their ``confusion_matrix``, which
    scores every non-Gaussian setting), else AF = AF_s. ``segments`` (the task segment of
    every batch, :attr:`clkit.drift.streams.Stream.segment`) tags the evaluations as their
    loop does; without it a batch belongs to its dominant task.

    Examples
    --------
    >>> acc = np.array([[0.0, 0.0], [0.8, 0.0], [0.2, 0.9]])
    >>> m = protocol_metrics(acc, [0.0, 0.5, 0.5], "authors", weights=np.eye(2)[[0, 1]],
    ...                      eval_batches=[0, 1, 2], hard=True)
    >>> [round(m[k], 3) for k in ("AA", "AF", "A_AUC", "AF_s")]   # AA: mean of 0.2 and 0.9
    [0.55, -0.3, 0.333, -0.3]
    """
    p = get_protocol(protocol)
    if not p.pooled:
        return stream_metrics(acc)
    a = np.asarray(acc, dtype=float)
    pooled = np.asarray(pooled, dtype=float)
    af_s = float(np.nanmean(a[-1] - np.nanmax(a, axis=0)))
    af, aa = af_s, float(pooled[-1])
    if hard and weights is not None and eval_batches is not None:
        if p.hard_af == "segment":
            ref = segment_references(weights, eval_batches, segments)
            k = np.flatnonzero(ref >= 0)
            af = float(np.nanmean(a[-1, k] - a[ref[k], k])) if k.size else float("nan")
        if p.hard_task_loop:
            aa = float(np.nanmean(a[-1]))
    return {"AA": aa, "AF": af, "A_AUC": float(np.mean(pooled)), "AF_s": af_s}
