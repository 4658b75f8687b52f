"""Run DRIFT's comparison: methods x stream configurations x seeds, summarised as tables.

Everything the notebook needs beyond the single pieces: latent tasks of a graph
with a per-class test split, one run of a method on a stream, the paper's
metrics, and a memoised grid over configurations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._seed import torch_seeded, torch_threads
from .._validate import check_choice, check_choices, check_int, check_real, check_type, check_seed
from .cache import build_stream
from .evaluate import METHODS, make_learner, run_stream, train_joint
from .protocol import stream_metrics
from .schedule import DEFAULT_TAU, latent_tasks, mixing_entropy, overlap_index
from .streams import SAMPLINGS, SETTINGS, TIME_SETTING, time_stream, year_bins

#: notebook 05_drift's parameters, in the order results.json records them
NOTEBOOK_PARAMETERS = ("dataset", "data_dir", "protocol", "num_nodes", "num_classes", "homophily",
                       "avg_degree", "feature_signal", "classes_per_task", "test_fraction", "setting", "sigma",
                       "sigmas", "overlaps", "sweep_methods", "p", "k_bl", "batch_size", "batch_sizes",
                       "sampling", "methods", "memory_size", "learner_kwargs", "hidden", "backbone",
                       "neighbour_sampling", "stream", "lr", "eval_every",
                       "eval_every_authors", "joint_epochs", "tau", "seeds", "device", "precision", "workers",
                       "deterministic", "rehearse", "drift_cases", "drift_from")

__all__ = ["NOTEBOOK_PARAMETERS", "check_learner_settings", "LatentTaskSplit", "split_tasks", "protocol_data", "stream_metrics", "StreamConfig", "run_grid",
           "study_configs", "GridPart", "grid_plan", "null_control_configs", "null_control_methods", "run_protocols", "run_null_control",
           "check_params", "STREAMS", "TIME_TASKS", "time_split", "run_time_stream"]

#: notebook 05's ``stream``: the paper's streams over class-based latent tasks only, or also the
#: time-evolving ogbn-arxiv stream (:func:`run_time_stream`)
STREAMS = ["latent", TIME_SETTING]
#: latent tasks of the time-evolving stream: year bins of roughly equal size (:func:`clkit.drift.streams.year_bins`)
TIME_TASKS = 5


@dataclass
class LatentTaskSplit:
    """Latent tasks of a graph with their train nodes (streamed) and test nodes (evaluated).

    Attributes
    ----------
    task_nodes : list of ndarray of int -- training nodes of each latent task
    test_idx : ndarray of int, shape (n_test,)
    test_task : ndarray of int, shape (n_test,) -- latent task of each test node
    task_classes : list of tuple of int
    """

    task_nodes: list
    test_idx: np.ndarray
    test_task: np.ndarray
    task_classes: list
    val_idx: np.ndarray | None = None
    #: a time split's (first year, last year) per task (:func:`time_split`), else None
    task_years: list | None = None

    def relabel(self, new_id) -> "LatentTaskSplit":
        """The split with node ids mapped through ``new_id`` (an array old id -> new id)."""
        new_id = np.asarray(new_id)
        return LatentTaskSplit([new_id[np.asarray(t)] for t in self.task_nodes], new_id[self.test_idx],
                               self.test_task, self.task_classes, None)

    @property
    def num_tasks(self) -> int:
        return len(self.task_classes)


def split_tasks(y, classes_per_task: int = 2, test_fraction: float = 0.2, seed: int = 0,
                drop_remainder: bool = True, val_fraction: float = 0.0) -> LatentTaskSplit:
    """Group classes into latent tasks (label order) and split every class into train/test.

    ``val_fraction`` > 0 also holds out that share of every class as validation nodes
    (``val_idx``; the authors' protocol splits 60/20/20), which neither stream nor test.

    Classes left over when ``classes_per_task`` does not divide the number of
    classes are dropped from both stream and evaluation (``drop_remainder=True``)
    or rejected (``False``).

    Examples
    --------
    >>> s = split_tasks(np.repeat(np.arange(5), 10), classes_per_task=2, test_fraction=0.2)
    >>> s.num_tasks, s.task_classes, [len(t) for t in s.task_nodes], np.bincount(s.test_task).tolist()
    (2, [(0, 1), (2, 3)], [16, 16], [4, 4])
    """
    from ..data.graphs import split_per_class

    y = np.asarray(y)
    task_of_class, task_classes = latent_tasks(y, classes_per_task, drop_remainder=drop_remainder)
    train_idx, test_idx = split_per_class(y, test_fraction, seed=seed)
    val_idx = None
    if val_fraction:
        val_fraction = check_real("val_fraction", val_fraction, low=0, high=1 - test_fraction, high_open=True)
        rest = y.copy()
        rest[test_idx] = -1
        train_idx, val_idx = split_per_class(rest, val_fraction / (1 - test_fraction), seed=seed + 1)
    tr_task = task_of_class[y[train_idx]]
    te_task = task_of_class[y[test_idx]]
    keep = te_task >= 0
    return LatentTaskSplit([train_idx[tr_task == k] for k in range(len(task_classes))], test_idx[keep],
                           te_task[keep], task_classes, val_idx)


def time_split(y, node_year, num_tasks: int = TIME_TASKS, test_fraction: float = 0.2,
               seed: int = 0) -> LatentTaskSplit:
    """Latent tasks that are consecutive year ranges (ogbn-arxiv's time-evolving stream).

    The tasks are :func:`clkit.drift.streams.year_bins` of ``node_year`` (roughly equal node
    counts, a year never split); ``test_fraction`` of every task's nodes, drawn with ``seed``,
    are its test set, the rest its training nodes (streamed in publication order by
    :func:`clkit.drift.streams.time_stream`). A task's classes are those present in it (every
    class may recur: the task is a period, not a set of classes); ``task_years`` names the
    periods.

    Examples
    --------
    >>> years = np.repeat([2001, 2002, 2003, 2004], 10)
    >>> s = time_split(np.arange(40) % 3, years, num_tasks=2, test_fraction=0.2)
    >>> s.task_years, [len(t) for t in s.task_nodes], np.bincount(s.test_task).tolist()
    ([(2001, 2002), (2003, 2004)], [16, 16], [4, 4])
    """
    test_fraction = check_real("test_fraction", test_fraction, low=0, high=1, low_open=True, high_open=True)
    y = np.asarray(y)
    node_year = np.asarray(node_year).reshape(-1)
    if node_year.shape != y.shape:
        raise ValueError(f"node_year must give one year per node ({y.size}), got shape {node_year.shape}")
    task, ranges = year_bins(node_year, num_tasks)
    rng = np.random.default_rng(seed)
    task_nodes, tests, test_task, classes = [], [], [], []
    for k in range(len(ranges)):
        nodes = rng.permutation(np.flatnonzero(task == k))
        n_test = int(round(test_fraction * nodes.size)) if nodes.size > 1 else 0
        n_test = min(max(n_test, 1 if nodes.size > 1 else 0), nodes.size - 1)
        tests.append(np.sort(nodes[:n_test]))
        test_task.append(np.full(n_test, k, dtype=np.int64))
        task_nodes.append(np.sort(nodes[n_test:]))
        classes.append(tuple(int(c) for c in np.unique(y[nodes])))
    return LatentTaskSplit(task_nodes, np.concatenate(tests), np.concatenate(test_task), classes,
                           task_years=ranges)


def protocol_data(graph, classes_per_task: int = 2, test_fraction: float = 0.2, seed: int = 0,
                  protocol: str = "text"):
    """The graph the learners see and its latent-task split under ``protocol``.

    ``"text"``: the whole graph, a per-class train/test split. ``"authors"``: a 60/20/20
    split (with ``test_fraction`` = 0.2) and the graph induced on the stream and test
    nodes of the latent tasks (the authors' merged training subgraph; validation nodes
    and dropped classes are left out), nodes renumbered.

    Examples
    --------
    >>> from clkit.data.graphs import csbm
    >>> g = csbm(200, 4, seed=0)
    >>> g2, s2 = protocol_data(g, 2, 0.2, protocol="authors")
    >>> g2.num_nodes == sum(map(len, s2.task_nodes)) + len(s2.test_idx), round(g2.num_nodes / 200, 1)
    (True, 0.8)
    """
    from .protocol import get_protocol, induced_subgraph
    from ..data.graphs import GraphData

    p = get_protocol(protocol)
    y = graph.y.numpy()
    split = split_tasks(y, classes_per_task, test_fraction, seed=seed, val_fraction=p.val_fraction)
    if not p.induced_subgraph:
        return graph, split
    keep = np.sort(np.concatenate([*split.task_nodes, split.test_idx]))
    new_id = np.full(graph.num_nodes, -1, dtype=np.int64)
    new_id[keep] = np.arange(keep.size)
    sub = GraphData(graph.x[keep], induced_subgraph(graph.edge_index, keep), graph.y[keep], graph.name,
                    graph.source)
    return sub, split.relabel(new_id)


@dataclass(frozen=True)
class StreamConfig:
    """One stream configuration: setting and its parameter, batch size, sampling.

    Examples
    --------
    >>> StreamConfig("gaussian", sigma=4.0).label(), StreamConfig("hard").label()
    ('gaussian σ=4.0 B=10 without', 'hard B=10 without')
    """

    setting: str
    sigma: float | None = None
    p: float | None = None
    k_bl: int | None = None
    batch_size: int = 10
    sampling: str = "without"

    def label(self) -> str:
        par = {"gaussian": f" σ={self.sigma}", "global": f" p={self.p}", "boundary_local": f" K={self.k_bl}"}
        return f"{self.setting}{par.get(self.setting, '')} B={self.batch_size} {self.sampling}"


#: keywords notebook 05 supplies to every learner itself (not user settings)
SUPPLIED_KEYWORDS = ("model", "optimizer", "lr", "scenario", "seed", "memory_size", "weight_decay", "epochs",
                     "batch_size", "loss", "device", "precision")


def check_learner_settings(learner_kwargs, methods, protocols=("text",)) -> dict:
    """Validate per-learner settings ``{method: {keyword: value}}`` for the DRIFT learners.

    A method's allowed keywords are those its class accepts under *every* protocol of the
    run (the text protocol's clkit strategy; the authors' class where the authors' code
    has its own), less :data:`SUPPLIED_KEYWORDS`, so a setting works in both. ``joint``
    (the offline bound) takes none.

    Examples
    --------
    >>> check_learner_settings({"mas_star": {"mas_lambda": 10.0}}, ["bare", "mas_star"])["mas_star"]
    {'mas_lambda': 10.0}
    >>> check_learner_settings({"er": {"lam": 1}}, ["er"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: learner_kwargs['er']: unknown keyword 'lam'; er accepts [...
    """
    from ..learner_kwargs import allowed_keywords, check_learner_kwargs
    from ..plugins import resolve_strategy
    from .authors import _CLASSES
    from .evaluate import METHODS, REGISTRY_NAME

    allowed = {}
    for m in methods:
        if m == "joint":
            allowed[m] = {}
            continue
        cls = resolve_strategy(REGISTRY_NAME.get(m, m), parameter="methods")
        kw = allowed_keywords(cls, exclude=SUPPLIED_KEYWORDS)
        if "authors" in protocols and m in _CLASSES:
            other = allowed_keywords(_CLASSES[m], exclude=SUPPLIED_KEYWORDS)
            kw = {k: v for k, v in kw.items() if k in other}
        elif "authors" in protocols and m in METHODS and m != "bare":
            pass  # the authors' protocol runs the clkit strategy itself
        allowed[m] = kw
    return check_learner_kwargs(learner_kwargs, allowed, learners=list(methods))


def run_grid(graph, split: LatentTaskSplit, configs, methods, seeds, *, hidden: int = 256, lr: float = 5e-3,
             memory_size: int = 100, learner_kwargs: dict | None = None, eval_every: int = 10, joint_epochs: int = 50, tau: float = DEFAULT_TAU,
             dataset: str = "graph", cache: bool = True, progress: bool = True, protocol: str = "text",
             device="cpu", precision: str = "fp32", backbone: str = "gcn", workers: int = 1,
             neighbour_sampling: str = "full"):
    """Run every method on every configuration and seed (each stream built once per config and seed).

    Parameters
    ----------
    graph : clkit.data.graphs.GraphData
    split : LatentTaskSplit
    configs : list of StreamConfig
    methods : list of str
        From :data:`clkit.drift.evaluate.METHODS`; ``"joint"`` trains offline once per
        seed (it does not depend on the stream) and is reported for every configuration.
    seeds : list of int
        Seeds the stream (its own generator) and, separately, the model and method.
    hidden, lr, memory_size, eval_every, joint_epochs : learner settings.
    learner_kwargs : dict, optional
        Per-learner settings ``{method: {keyword: value}}`` (:func:`check_learner_settings`).
    tau : float
        Overlap-index threshold.
    protocol : {"text", "authors"}
        Evaluation protocol (:mod:`clkit.drift.protocol`); ``graph`` and ``split``
        should come from :func:`protocol_data` with the same protocol.
    device : str, torch.device or clkit.device.RunDevice
        Where every model trains and is evaluated (the run's ``rd.device``). Models are
        built on the CPU under their seed (the same initial weights on every device) and
        moved there with their graph; streams, labels and test nodes move once per run.
    precision : {"fp32", "bf16", "fp16"}
        Autocast of the forward passes (learners, Joint and evaluation).
    backbone : {"gcn", "gin", "gat"}
        The graph network (:func:`clkit.models.gnn.make_graph_backbone`): the protocol's GCN,
        or GIN / GAT as the authors' code builds them (``--backbone``).
    workers : int
        On the CPU, the seeds are shared among this many forked processes
        (:func:`clkit._jobs.run_jobs`; one process where a fork could not train, see
        :func:`clkit.device.fork_safe`), each seed with every configuration and method
        (Joint once per seed, as in one process). CPU training runs on one torch thread
        per process: the online steps are small, one thread was faster than two (Cora,
        GCN, hidden 64: 1.92 s against 2.31 s) and kept one core of two idle. The rows,
        curves and streams come back in the order one process gives, with the same
        numbers. An accelerator runs the seeds one after another.
    neighbour_sampling : {"full", "sampled", "auto"}
        How a training step reaches the graph (:mod:`clkit.models.sampling`). ``"full"``: the
        backbone's own path (every step propagates over the whole graph it holds; the default,
        earlier numbers unchanged). ``"sampled"``: every call of the model in training -- the
        batch, a replay buffer's rows, a regulariser's importance pass, Joint's batches -- scores
        its nodes on their own L-hop graph, sampled with the backbone's ``fanouts`` (the
        authors' (10, 25) under their protocol; every in-edge under the text's, which then gives
        the same logits as ``"full"``), from a CPU generator seeded with the run's seed;
        evaluation scores the graph layer by layer in chunks of nodes. ``"auto"``: decided per
        backbone by :func:`clkit.models.sampling.resolve_neighbour_sampling` -- the text's GCN
        never samples (its step gathers 1-hop rows of the fixed ``Â X``); GIN and GAT sample above
        :data:`~clkit.models.sampling.AUTO_NODES_GNN` (5,000) nodes or 50,000 edges (their
        whole-graph step runs over every node and edge); the authors' GCN above
        :data:`~clkit.models.sampling.AUTO_NODES` (100,000) nodes or
        :data:`~clkit.models.sampling.AUTO_EDGES` (1,000,000) edges (ogbn-arxiv, Reddit).

    Returns
    -------
    rows : list of dict
        One per (config, method, seed): config fields, ``method``, ``seed``,
        ``overlap``, ``entropy``, the four metrics, ``protocol`` and, for MAS*,
        ``detector_firings`` (importance updates).
    curves : dict
        ``(config, method, seed) -> (eval_batches, acc)`` with ``acc`` of shape (num_evals, num_tasks).
    streams : dict
        ``(config, seed) -> Stream``.
    """
    from ..device import as_device, check_precision
    from .protocol import get_protocol

    p = get_protocol(protocol)
    device = as_device(device)
    precision = check_precision(precision, device)
    workers = check_int("workers", workers, low=1)
    backbone = check_choice("backbone", backbone, ["gcn", "gin", "gat"])
    from ..models.sampling import resolve_neighbour_sampling

    sampled = resolve_neighbour_sampling(neighbour_sampling, graph.num_nodes, int(graph.edge_index.shape[1]),
                                         backbone=backbone, protocol="authors" if p.backbone == "authors" else "text")
    own = [m for m in methods if m in METHODS]  # others: clkit strategies and plugins (make_learner)
    methods = list(methods) if len(own) < len(methods) else check_choices("methods", list(methods), METHODS)
    seeds = list(seeds)
    if device.type == "cpu" and workers > 1 and len(seeds) > 1:
        return _run_grid_forked(graph, split, list(configs), list(methods), seeds, workers, progress, dict(
            hidden=hidden, lr=lr, memory_size=memory_size, learner_kwargs=learner_kwargs, eval_every=eval_every,
            joint_epochs=joint_epochs, tau=tau, dataset=dataset, cache=cache, protocol=protocol, device=device,
            precision=precision, backbone=backbone, neighbour_sampling="sampled" if sampled else "full"))
    with torch_threads(1 if device.type == "cpu" else None):   # None: an accelerator keeps torch's setting
        return _run_grid(graph, split, configs, methods, seeds, hidden=hidden, lr=lr, memory_size=memory_size,
                         learner_kwargs=learner_kwargs, eval_every=eval_every, joint_epochs=joint_epochs, tau=tau,
                         dataset=dataset, cache=cache, progress=progress, p=p, device=device, precision=precision,
                         backbone=backbone, sampled=sampled)


def _run_grid_forked(graph, split, configs, methods, seeds, workers, progress, kwargs):
    """:func:`run_grid` with its seeds shared among forked processes; results in one process's order."""
    from .._jobs import run_jobs

    def job(seed):
        return lambda: run_grid(graph, split, configs, methods, [seed], progress=False, workers=1, **kwargs)

    bar = None
    if progress:
        from ..progress import tqdm

        bar = tqdm(total=len(configs) * len(seeds), desc=f"streams ({kwargs['protocol']}, {workers} processes)")
    try:
        parts = dict(zip(seeds, run_jobs([job(s) for s in seeds], workers=min(workers, len(seeds)),
                                         progress=(lambda: bar.update(len(configs))) if bar is not None else None)))
    finally:
        if bar is not None:
            bar.close()
    rows, curves, streams = [], {}, {}
    for cfg in configs:   # one process's order: config, seed, method
        label = cfg.label()
        for seed in seeds:
            r, c, st = parts[seed]
            rows += [row for row in r if row["config"] == label]
            streams[(cfg, seed)] = st[(cfg, seed)]
            for method in methods:
                if (cfg, method, seed) in c:
                    curves[(cfg, method, seed)] = c[(cfg, method, seed)]
    return rows, curves, streams


def _run_grid(graph, split, configs, methods, seeds, *, hidden, lr, memory_size, learner_kwargs, eval_every,
              joint_epochs, tau, dataset, cache, progress, p, device, precision, backbone, sampled=False):
    """The body of :func:`run_grid` in this process (arguments checked there)."""
    from ..models.gnn import make_graph_backbone
    from ..models.sampling import set_neighbour_sampling
    from .authors import make_authors_learner
    from .protocol import TaskEvaluator, induced_subgraph, protocol_eval_points, protocol_metrics

    rows, curves, streams = [], {}, {}
    C = graph.num_classes
    evaluator = TaskEvaluator(graph.edge_index, graph.y, split, p, device=device, precision=precision)
    on = dict(device=device, precision=precision)

    def new_model(seed):
        with torch_seeded(seed):
            model = make_graph_backbone(backbone, graph.x, graph.edge_index, C, hidden=hidden,
                                        protocol="authors" if p.backbone == "authors" else "text", seed=seed)
        return set_neighbour_sampling(model, True, seed=seed) if sampled else model

    def segment_graphs(nodes_per_segment):
        """Each segment's training subgraph as the authors' loop trains it: its train and its task's test nodes."""
        out = []
        for k, nodes in enumerate(nodes_per_segment):
            own = np.concatenate([np.asarray(nodes), np.asarray(split.test_idx)[np.asarray(split.test_task) == k]])
            out.append(torch.as_tensor(own)[induced_subgraph(graph.edge_index, own)])
        return out

    hard_graphs = None
    joint_cache: dict[int, tuple] = {}
    todo = [(c, s) for c in configs for s in seeds]
    it = todo
    if progress:
        from ..progress import tqdm

        it = tqdm(todo, desc=f"streams ({p.name})")
    for cfg, seed in it:
        if cfg.setting == TIME_SETTING:
            if getattr(graph, "node_year", None) is None or p.name != "text":
                raise ValueError(f"setting {TIME_SETTING!r} needs a graph with node years (ogbn_arxiv) under "
                                 f"protocol 'text', got graph {graph.name!r} under protocol {p.name!r}")
            stream = time_stream(split.task_nodes, np.asarray(graph.node_year), cfg.batch_size, seed=seed)
        else:
            stream = build_stream(split.task_nodes, cfg.setting, dataset=dataset, batch_size=cfg.batch_size,
                                  sampling=cfg.sampling, seed=seed, sigma=cfg.sigma, p=cfg.p, k_bl=cfg.k_bl,
                                  cache=cache, protocol=p.name)
        streams[(cfg, seed)] = stream
        ov, ent = overlap_index(stream.weights, tau), mixing_entropy(stream.weights)
        # the authors' per-task loop (hard, boundary-local, global): every batch belongs to a task segment,
        # trained on that segment's subgraph, evaluated at every segment change (:mod:`clkit.drift.protocol`)
        segment = stream.segment
        if segment is None and p.hard_task_loop and cfg.setting == "hard":   # a stream cached without it
            segment = stream.counts.argmax(1)
        task_loop = p.hard_task_loop and cfg.setting != "gaussian" and segment is not None
        graphs, stream_evaluator = None, evaluator
        if task_loop and cfg.setting == "hard":   # segments = the latent tasks
            hard_graphs = hard_graphs or segment_graphs(split.task_nodes)
            graphs = hard_graphs
        elif task_loop:   # segments hold the boundary blocks / pool chunks: their own subgraphs and test graphs
            nodes = [np.unique(stream.batches[segment == k]) for k in range(split.num_tasks)]
            nodes = [v[v >= 0] for v in nodes]
            graphs = segment_graphs(nodes)
            stream_evaluator = TaskEvaluator(graph.edge_index, graph.y,
                                             LatentTaskSplit(nodes, split.test_idx, split.test_task,
                                                             split.task_classes), p, device=device,
                                             precision=precision)
        for method in methods:
            firings = float("nan")
            if method == "joint":
                if seed not in joint_cache:
                    acc, pooled = train_joint(lambda: new_model(seed), graph.y, np.concatenate(split.task_nodes),
                                              split.test_idx, split.test_task, split.num_tasks,
                                              epochs=p.joint_epochs or joint_epochs,
                                              batch_size=p.joint_batch_size, lr=lr, seed=seed,
                                              weight_decay=p.weight_decay, evaluator=evaluator, **on)
                    joint_cache[seed] = (acc, pooled)
                acc, pooled = joint_cache[seed]
                final = pooled if p.pooled else float(np.nanmean(acc))
                m = {"AA": final, "AF": float("nan"), "A_AUC": final, "AF_s": float("nan")}
            else:
                model = new_model(seed)
                if p.learners == "authors" and method in METHODS:
                    learner = make_authors_learner(method, model, lr=lr, memory_size=memory_size, seed=seed,
                                                   weight_decay=p.weight_decay, stream_batch_size=cfg.batch_size,
                                                   **on,
                                                   **(learner_kwargs or {}).get(method, {}))
                else:
                    learner = make_learner(method, model, lr=lr, memory_size=memory_size, seed=seed, **on,
                                           **(learner_kwargs or {}).get(method, {}))
                before = _before_step(model, p.seen_class_loss, graphs if task_loop else None, segment)
                points = protocol_eval_points(stream.num_batches, eval_every, p,
                                              task_of_batch=segment if task_loop else None)
                run = run_stream(learner, stream, graph.y, split.test_idx, split.test_task,
                                 evaluator=stream_evaluator, before_step=before, points=points)
                if task_loop:
                    model.set_graph(graph.edge_index)
                curves[(cfg, method, seed)] = (run.eval_batches, run.acc)
                m = protocol_metrics(run.acc, run.pooled, p, weights=stream.weights, eval_batches=run.eval_batches,
                                     hard=cfg.setting != "gaussian", segments=segment if task_loop else None)
                if method == "mas_star":
                    firings = float(learner.num_updates)
            rows.append({"config": cfg.label(), "setting": cfg.setting, "sigma": cfg.sigma, "p": cfg.p,
                         "k_bl": cfg.k_bl, "batch_size": cfg.batch_size, "sampling": cfg.sampling,
                         "method": method, "seed": seed, "overlap": ov, "entropy": ent, "protocol": p.name,
                         "detector_firings": firings, **m})
    return rows, curves, streams


def _before_step(model, seen_class_loss: bool, segment_graphs, segments):
    """The per-step hook of a run: the seen-class logit limit and, in the authors' loop, the segment's subgraph.

    It gets the batch's node ids and labels on the host (:func:`clkit.drift.evaluate.run_stream`), so it
    reads nothing from the device. ``segments`` (shape (T,)) names the task segment of every batch, in
    stream order (the hook counts its calls); a segment change swaps the model's graph to
    ``segment_graphs[k]`` (normalised on the host, moved once). Returns None when there is nothing to do.
    """
    from .protocol import _even

    if not seen_class_loss and segment_graphs is None:
        return None
    state = {"task": None, "step": 0}

    def before(idx, yb):
        if seen_class_loss:
            model.logit_limit = max(model.logit_limit or 0, _even(int(yb.max()) + 1))
        if segment_graphs is not None:
            k = int(segments[state["step"]])
            if k != state["task"]:
                model.set_graph(segment_graphs[k])
                state["task"] = k
        state["step"] += 1

    return before


def check_params(*, dataset, setting, sigma, sigmas, p, k_bl, batch_size, batch_sizes, sampling, methods, memory_size,
                 eval_every, seeds, classes_per_task, tau, hidden, lr, joint_epochs, test_fraction,
                 protocol="text", sweep_methods=None, all_methods=None, eval_every_authors=None, overlaps=None,
                 backbone="gcn", workers=1, neighbour_sampling="full", stream="latent", drift_cases=(),
                 drift_from="", **_):
    """Validate notebook 05_drift's parameters; raises ``ValueError``/``TypeError`` naming the parameter.

    ``sweep_methods`` must name online methods among ``all_methods`` (default:
    ``methods``; the notebook passes its full list, plugins included, while
    ``methods`` holds the kit's own names). ``drift_cases`` (a list of ``"METHOD|SEED"`` strings,
    :func:`clkit.drift.split.parse_cases` checks them against the study) and ``drift_from`` (a folder)
    are exclusive: a case trains runs, a merge reads them.

    Examples
    --------
    >>> check_params(dataset="csbm", setting="gaussian", sigma=0.0, sigmas=[1.0], p=0.3, k_bl=2, batch_size=10,
    ...              batch_sizes=[10], sampling="without", methods=["bare"], memory_size=100, eval_every=5,
    ...              seeds=[1], classes_per_task=2, tau=0.98, hidden=16, lr=0.005, joint_epochs=5,
    ...              test_fraction=0.2)
    Traceback (most recent call last):
    ...
    ValueError: sigma must be a number > 0, got 0.0
    """
    from ..data.graphs import GRAPH_DATASETS
    from .protocol import PROTOCOLS

    check_choice("dataset", dataset, ["auto", *GRAPH_DATASETS])
    if isinstance(protocol, (list, tuple)):
        if not protocol:
            raise ValueError("protocol must name at least one of ['text', 'authors'], got []")
        for name in protocol:
            check_choice("protocol", name, PROTOCOLS)
    else:
        check_choice("protocol", protocol, PROTOCOLS)
    check_choice("setting", setting, SETTINGS)
    check_real("sigma", sigma, low=0, low_open=True)
    check_type("sigmas", sigmas, list)
    for s in sigmas:
        check_real("sigmas", s, low=0, low_open=True)
    check_real("p", p, low=0, high=1, high_open=True)
    check_int("k_bl", k_bl, low=1)
    check_int("batch_size", batch_size, low=1)
    check_type("batch_sizes", batch_sizes, list)
    for b in batch_sizes:
        check_int("batch_sizes", b, low=1)
    check_choice("sampling", sampling, SAMPLINGS)
    check_choices("methods", methods, METHODS)
    check_int("memory_size", memory_size, low=1)
    check_int("eval_every", eval_every, low=1)
    if overlaps is not None:
        check_type("overlaps", overlaps, list)
        for o in overlaps:
            check_real("overlaps", o, low=0, high=1, low_open=True)
    if eval_every_authors is not None:
        check_int("eval_every_authors", eval_every_authors, low=1)
    check_type("seeds", seeds, list)
    if not seeds:
        raise ValueError("seeds must name at least one seed, got []")
    for s in seeds:
        check_seed("seeds", s)
    check_int("classes_per_task", classes_per_task, low=1)
    check_real("tau", tau, low=0, high=1, low_open=True)
    check_int("hidden", hidden, low=1)
    check_int("workers", workers, low=1)
    check_choice("backbone", backbone, ["gcn", "gin", "gat"])
    from ..models.sampling import NEIGHBOUR_SAMPLING

    check_choice("neighbour_sampling", neighbour_sampling, NEIGHBOUR_SAMPLING)
    check_choice("stream", stream, STREAMS)
    if stream == TIME_SETTING and dataset != "ogbn_arxiv":
        raise ValueError(f"stream={TIME_SETTING!r} needs dataset='ogbn_arxiv' (the graph with publication "
                         f"years), got dataset={dataset!r}; allowed with other datasets: 'latent'")
    if backbone == "gat" and hidden % 8:
        raise ValueError(f"hidden must be a multiple of 8 with backbone='gat' (8 heads of hidden / 8, the "
                         f"authors' 8 x 32 at hidden = 256), got {hidden}")
    check_real("lr", lr, low=0, low_open=True)
    check_int("joint_epochs", joint_epochs, low=1)
    check_real("test_fraction", test_fraction, low=0, high=1, low_open=True, high_open=True)
    if sweep_methods is not None:
        if not isinstance(sweep_methods, list) or not sweep_methods:
            raise ValueError(f"sweep_methods must be a non-empty list, got {sweep_methods!r}")
        pool = methods if all_methods is None else all_methods
        for m in sweep_methods:
            if m not in pool or m == "joint":
                raise ValueError(f"sweep_methods must name online methods among methods={pool}, got {m!r}")
    if not isinstance(drift_cases, (list, tuple)) or not all(isinstance(c, str) for c in drift_cases):
        raise TypeError(f"drift_cases must be a list of 'METHOD|SEED' strings (e.g. ['er|1', 'null|1']; []: the "
                        f"whole study), got {drift_cases!r}")
    if not isinstance(drift_from, str):
        raise TypeError(f"drift_from must be a folder (str) of finished cases, or '' to train, got {drift_from!r}")
    if drift_cases and drift_from:
        raise ValueError(f"drift_cases and drift_from: a case trains runs, a merge reads them; give one, got "
                         f"drift_cases={list(drift_cases)!r} and drift_from={drift_from!r}")
    if (drift_cases or drift_from) and stream != "latent":
        raise ValueError(f"drift_cases / drift_from split the latent-task study only; got stream={stream!r} "
                         "(allowed with a split: 'latent')")


def study_configs(*, sigma: float, sigmas, p: float, k_bl: int, batch_size: int, batch_sizes, sampling: str) -> dict:
    """The stream configurations of notebook 05_drift, by role.

    Returns
    -------
    dict of list of StreamConfig
        ``main`` (hard, Gaussian at ``sigma``, boundary-local, global), ``sigma`` (the σ
        sweep), ``sampling`` (the main Gaussian setting with the other sampling),
        ``batch`` (the main Gaussian setting at the other batch sizes).

    Examples
    --------
    >>> c = study_configs(sigma=3.0, sigmas=[1.0, 3.0], p=0.3, k_bl=2, batch_size=10, batch_sizes=[10, 20],
    ...                   sampling="without")
    >>> [x.label() for x in c["main"]][1], len(c["sigma"]), c["sampling"][0].sampling, c["batch"][0].batch_size
    ('gaussian σ=3.0 B=10 without', 2, 'with', 20)
    """
    main = [StreamConfig("hard", batch_size=batch_size, sampling=sampling),
            StreamConfig("gaussian", sigma=sigma, batch_size=batch_size, sampling=sampling),
            StreamConfig("boundary_local", k_bl=k_bl, batch_size=batch_size, sampling=sampling),
            StreamConfig("global", p=p, batch_size=batch_size, sampling=sampling)]
    other = "with" if sampling == "without" else "without"
    return {"main": main,
            "sigma": [StreamConfig("gaussian", sigma=s, batch_size=batch_size, sampling=sampling) for s in sigmas],
            "sampling": [StreamConfig("gaussian", sigma=sigma, batch_size=batch_size, sampling=other)],
            "batch": [StreamConfig("gaussian", sigma=sigma, batch_size=b, sampling=sampling)
                      for b in batch_sizes if b != batch_size]}


@dataclass(frozen=True)
class GridPart:
    """One :func:`run_grid` call of notebook 05_drift's study: a protocol, its configurations, methods and seeds.

    ``role`` is ``"main"`` (every method on the main settings, plus the other sampling under
    the first protocol), ``"sweep"`` (the sweep methods on the σ sweep and, under the first
    protocol, the batch-size study) or ``"null"`` (Bare and the sweep's CL method on shifted seeds,
    the null controls; :func:`null_control_methods`).
    """

    protocol: str
    role: str
    configs: tuple
    methods: tuple
    seeds: tuple


def grid_plan(protocols, configs: dict, methods, sweep_methods, seeds, *, null_configs=None,
              null_offset: int | None = None) -> list:
    """The :func:`run_grid` calls of notebook 05_drift's study, in the order they run.

    :func:`run_protocols` and :func:`run_null_control` run these parts; the budget
    (:mod:`clkit.drift.budget`) counts them.

    Parameters
    ----------
    protocols : list of str -- the first one also runs the other sampling and the batch-size study
    configs : dict -- :func:`study_configs`, or ``protocol -> study_configs(...)``
    methods, sweep_methods, seeds : list
    null_configs : StreamConfig or dict ``protocol -> StreamConfig``, optional
        With ``null_offset``: the null controls' configuration (Bare and the sweep's CL method,
        :func:`null_control_methods`, on seeds ``s + null_offset``).

    Returns
    -------
    list of GridPart

    Examples
    --------
    >>> c = study_configs(sigma=3.0, sigmas=[1.0, 3.0], p=0.3, k_bl=2, batch_size=10, batch_sizes=[10, 20],
    ...                   sampling="without")
    >>> [(g.protocol, g.role, len(g.configs), len(g.methods)) for g in grid_plan(["text", "authors"], c,
    ...  ["bare", "joint", "er"], ["bare", "er"], [1, 2])]
    [('text', 'main', 5, 3), ('text', 'sweep', 2, 2), ('authors', 'main', 4, 3), ('authors', 'sweep', 1, 2)]
    """
    parts = []
    for pr in protocols:
        first = pr == protocols[0]
        cf = configs if "main" in configs else configs[pr]
        main_cfgs = list(dict.fromkeys(cf["main"] + (cf["sampling"] if first else [])))
        if main_cfgs:
            parts.append(GridPart(pr, "main", tuple(main_cfgs), tuple(methods), tuple(seeds)))
        extra = [c for c in cf["sigma"] + (cf["batch"] if first else []) if c not in main_cfgs]
        if extra:
            parts.append(GridPart(pr, "sweep", tuple(extra), tuple(sweep_methods), tuple(seeds)))
    if null_configs is not None and null_offset is not None:
        for pr in protocols:
            cfg = null_configs[pr] if isinstance(null_configs, dict) else null_configs
            parts.append(GridPart(pr, "null", (cfg,), tuple(null_control_methods(sweep_methods)),
                                  tuple(s + null_offset for s in seeds)))
    return parts


def null_control_methods(sweep_methods) -> list:
    """The learners the null controls run on shifted seeds: Bare (the control of the primary family,
    of Bare's A_AUC) and the σ sweep's CL method when there is one (the control of the exploratory
    family, of its AF_s).

    Examples
    --------
    >>> null_control_methods(["bare", "er", "agem"]), null_control_methods(["bare"]), null_control_methods([])
    (['bare', 'er'], ['bare'], ['bare'])
    """
    return ["bare"] + [m for m in sweep_methods if m != "bare"][:1]


def null_control_configs(sweep_sigmas: dict, batch_size: int, sampling: str) -> dict:
    """The null control's configuration per protocol: the Gaussian setting at that protocol's smallest σ.

    Examples
    --------
    >>> null_control_configs({"text": [3.0, 1.0]}, 10, "without")["text"].label()
    'gaussian σ=1.0 B=10 without'
    """
    return {pr: StreamConfig("gaussian", sigma=min(s), batch_size=batch_size, sampling=sampling)
            for pr, s in sweep_sigmas.items()}


def run_protocols(data: dict, configs: dict, methods, sweep_methods, seeds, **kwargs) -> dict:
    """Notebook 05_drift's grid under every protocol of ``data``.

    Every protocol runs ``methods`` on the main configurations; the first protocol
    also on the other sampling. The σ sweep (and, under the first protocol, the
    batch-size study) runs ``sweep_methods`` only (:func:`grid_plan`).

    Parameters
    ----------
    data : dict
        ``protocol -> (graph, split)`` from :func:`protocol_data`, first protocol first.
    configs : dict
        From :func:`study_configs`, or ``protocol -> study_configs(...)`` when the σ
        sweep differs per protocol (σ solved from target overlaps).
    methods, sweep_methods, seeds : list
    **kwargs
        Passed to :func:`run_grid` (hidden, lr, memory_size, device, precision, ...);
        ``eval_every`` may be a dict ``protocol -> Δ`` (:func:`clkit.drift.protocol.eval_intervals`).

    Returns
    -------
    dict
        ``protocol -> (rows DataFrame, curves, streams)`` as :func:`run_grid` returns them.
    """
    import pandas as pd

    every = kwargs.pop("eval_every", 10)
    out = {pr: ([], {}, {}) for pr in data}
    for part in grid_plan(list(data), configs, methods, sweep_methods, seeds):
        g_pr, s_pr = data[part.protocol]
        rows, curves, streams = run_grid(g_pr, s_pr, list(part.configs), list(part.methods), list(part.seeds),
                                         protocol=part.protocol,
                                         eval_every=every[part.protocol] if isinstance(every, dict) else every,
                                         **kwargs)
        r0, c0, s0 = out[part.protocol]
        out[part.protocol] = (r0 + rows, {**c0, **curves}, {**s0, **streams})
    return {pr: (pd.DataFrame(r), c, s) for pr, (r, c, s) in out.items()}


def run_null_control(data: dict, config, seeds, offset: int, sweep_methods=("bare",), **kwargs) -> dict:
    """The null controls' runs: Bare and the sweep's CL method (:func:`null_control_methods`) on ``config``
    with seeds ``s + offset`` under every protocol of ``data``.

    ``config`` may be a dict ``protocol -> StreamConfig`` (σ solved per protocol;
    :func:`null_control_configs`).

    Compared with the same learner on seeds ``s`` (:func:`clkit.drift.report.sweep_verdicts`),
    the two conditions differ only in the seed, so the rule must find no difference.

    Returns
    -------
    dict -- ``protocol -> rows DataFrame``
    """
    import pandas as pd

    every = kwargs.pop("eval_every", 10)
    out = {}
    empty = {"main": [], "sigma": [], "sampling": [], "batch": []}
    for part in grid_plan(list(data), empty, [], sweep_methods, seeds, null_configs=config, null_offset=offset):
        g_pr, s_pr = data[part.protocol]
        rows, _, _ = run_grid(g_pr, s_pr, list(part.configs), list(part.methods), list(part.seeds),
                              protocol=part.protocol,
                              eval_every=every[part.protocol] if isinstance(every, dict) else every, **kwargs)
        out[part.protocol] = pd.DataFrame(rows)
    return out


def run_time_stream(graph, methods, seeds, *, num_tasks: int = TIME_TASKS, test_fraction: float = 0.2,
                    batch_size: int = 10, **kwargs):
    """The time-evolving stream of a graph with node years (ogbn-arxiv) for ``methods`` and ``seeds``.

    Latent tasks are year bins (:func:`time_split`, split with ``min(seeds)``); the stream
    brings every training node once in publication order, shuffled within a year by the
    seed (:func:`clkit.drift.streams.time_stream`); every evaluation scores each year bin's
    test nodes, as the other streams score their latent tasks, under the text protocol.

    Parameters
    ----------
    graph : GraphData with ``node_year``
    methods, seeds : list
    num_tasks, test_fraction, batch_size : the split and the stream
    **kwargs : passed to :func:`run_grid` (hidden, lr, device, neighbour_sampling, ...)

    Returns
    -------
    split : LatentTaskSplit -- its ``task_years`` name the bins
    rows : DataFrame -- :func:`run_grid`'s rows (AA, AF, A_AUC, AF_s per method and seed)
    curves : dict -- ``(config, method, seed) -> (eval_batches, acc)``
    """
    import pandas as pd

    if getattr(graph, "node_year", None) is None:
        raise ValueError(f"graph must carry node years (GraphData.node_year; ogbn_arxiv) for the "
                         f"{TIME_SETTING!r} stream, got graph {graph.name!r} without them")
    seeds = list(seeds)
    split = time_split(graph.y.numpy(), graph.node_year.numpy(), num_tasks, test_fraction, seed=min(seeds))
    cfg = StreamConfig(TIME_SETTING, batch_size=check_int("batch_size", batch_size, low=1))
    kwargs.pop("protocol", None)
    rows, curves, _ = run_grid(graph, split, [cfg], list(methods), seeds, protocol="text", **kwargs)
    return split, pd.DataFrame(rows), curves
