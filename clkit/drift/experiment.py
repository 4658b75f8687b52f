"""Run DRIFT's comparison: methods x stream configurations x seeds, summarised as tables.

Everything the notebook needs beyond the single pieces: latent tasks of a graph
with a per-class test split, one run of a method on a stream, the paper's
metrics, and a memoised grid over configurations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._seed import torch_seeded
from .._validate import check_choice, check_choices, check_int, check_real, check_type
from ..metrics import stream_auc, stream_average_accuracy, stream_forgetting
from .cache import build_stream
from .evaluate import METHODS, make_learner, run_stream, train_joint
from .schedule import DEFAULT_TAU, latent_tasks, mixing_entropy, overlap_index
from .streams import SAMPLINGS, SETTINGS

__all__ = ["LatentTaskSplit", "split_tasks", "stream_metrics", "StreamConfig", "run_grid", "check_params"]


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

    @property
    def num_tasks(self) -> int:
        return len(self.task_classes)


def split_tasks(y, classes_per_task: int = 2, test_fraction: float = 0.2, seed: int = 0,
                drop_remainder: bool = True) -> LatentTaskSplit:
    """Group classes into latent tasks (label order) and split every class into train/test.

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
    tr_task = task_of_class[y[train_idx]]
    te_task = task_of_class[y[test_idx]]
    keep = te_task >= 0
    return LatentTaskSplit([train_idx[tr_task == k] for k in range(len(task_classes))], test_idx[keep],
                           te_task[keep], task_classes)


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


def run_grid(graph, split: LatentTaskSplit, configs, methods, seeds, *, hidden: int = 256, lr: float = 5e-3,
             memory_size: int = 100, eval_every: int = 10, joint_epochs: int = 50, tau: float = DEFAULT_TAU,
             dataset: str = "graph", cache: bool = True, progress: bool = True):
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
    tau : float
        Overlap-index threshold.

    Returns
    -------
    rows : list of dict
        One per (config, method, seed): config fields, ``method``, ``seed``,
        ``overlap``, ``entropy`` and the four metrics.
    curves : dict
        ``(config, method, seed) -> (eval_batches, acc)`` with ``acc`` of shape (num_evals, num_tasks).
    streams : dict
        ``(config, seed) -> Stream``.
    """
    from ..models.gcn import GCN

    methods = check_choices("methods", list(methods), METHODS)
    rows, curves, streams = [], {}, {}
    C = graph.num_classes
    joint_cache: dict[int, np.ndarray] = {}
    todo = [(c, s) for c in configs for s in seeds]
    it = todo
    if progress:
        from ..progress import tqdm

        it = tqdm(todo, desc="streams")
    for cfg, seed in it:
        stream = build_stream(split.task_nodes, cfg.setting, dataset=dataset, batch_size=cfg.batch_size,
                              sampling=cfg.sampling, seed=seed, sigma=cfg.sigma, p=cfg.p, k_bl=cfg.k_bl,
                              cache=cache)
        streams[(cfg, seed)] = stream
        ov, ent = overlap_index(stream.weights, tau), mixing_entropy(stream.weights)
        for method in methods:
            if method == "joint":
                if seed not in joint_cache:
                    joint_cache[seed] = train_joint(lambda: GCN(graph.x, graph.edge_index, C, hidden=hidden), graph.y,
                                                    np.concatenate(split.task_nodes), split.test_idx,
                                                    split.test_task, split.num_tasks, epochs=joint_epochs, lr=lr,
                                                    seed=seed)
                final = joint_cache[seed]
                m = {"AA": float(np.nanmean(final)), "AF": float("nan"), "A_AUC": float(np.nanmean(final)),
                     "AF_s": float("nan")}
            else:
                with torch_seeded(seed):
                    model = GCN(graph.x, graph.edge_index, C, hidden=hidden)
                learner = make_learner(method, model, lr=lr, memory_size=memory_size, seed=seed)
                run = run_stream(learner, stream, graph.y, split.test_idx, split.test_task, eval_every=eval_every)
                curves[(cfg, method, seed)] = (run.eval_batches, run.acc)
                m = stream_metrics(run.acc)
            rows.append({"config": cfg.label(), "setting": cfg.setting, "sigma": cfg.sigma, "p": cfg.p,
                         "k_bl": cfg.k_bl, "batch_size": cfg.batch_size, "sampling": cfg.sampling,
                         "method": method, "seed": seed, "overlap": ov, "entropy": ent, **m})
    return rows, curves, streams


def check_params(*, dataset, setting, sigma, sigmas, p, k_bl, batch_size, batch_sizes, sampling, methods, memory_size,
                 eval_every, seeds, classes_per_task, tau, hidden, lr, joint_epochs, test_fraction, **_):
    """Validate notebook 05_drift's parameters; raises ``ValueError``/``TypeError`` naming the parameter.

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

    check_choice("dataset", dataset, GRAPH_DATASETS)
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
    check_type("seeds", seeds, list)
    if not seeds:
        raise ValueError("seeds must name at least one seed, got []")
    for s in seeds:
        check_int("seeds", s, low=0)
    check_int("classes_per_task", classes_per_task, low=1)
    check_real("tau", tau, low=0, high=1, low_open=True)
    check_int("hidden", hidden, low=1)
    check_real("lr", lr, low=0, low_open=True)
    check_int("joint_epochs", joint_epochs, low=1)
    check_real("test_fraction", test_fraction, low=0, high=1, low_open=True, high_open=True)
