"""The M2I / I2M curriculum benchmark (Sect. 3 of the curriculum paper).

Heterogeneous 10-class image datasets become the tasks of one continual
stream. The builder

1. loads each dataset (:func:`clkit.data.images.load_image_dataset`),
2. takes a class-balanced sample -- ``per_class_train`` and ``per_class_test``
   images per class (paper: 500 and 500). When a dataset has fewer images in
   some class (Omniglot: 10 per class and split; sklearn digits: ~90), every
   class of that dataset gets the *smallest* available count, so each task stays
   balanced; the counts used are recorded in :attr:`Benchmark.per_class`,
3. resizes every image to ``image_size`` x ``image_size`` (bilinear, antialiased)
   and to ``channels`` channels (grey images replicated to RGB, RGB averaged to
   grey), scaled to ``[0, 1]``.

The difficulty ordering is *computed* (the paper's Table 2 procedure): the
backbone is trained on each dataset alone and its test accuracy ranks the
datasets -- highest accuracy first is the direct curriculum (M2I, "most easy to
ill"), the reverse the inverse one (I2M).

Streams: task ``k`` of an order has labels ``10 k .. 10 k + 9`` of a single head
over ``10 T`` outputs. In the class-incremental scenario the head is used as a
whole; in the task-incremental one the strategies mask it to the task's ten
classes (:class:`clkit.strategies.Strategy`, ``scenario="task"``).
``R[i, j]`` is the test accuracy on task ``j`` after training on task ``i``; the
paper's ACC, BWT and FWT (Sect. 2.3) come from :mod:`clkit.metrics`
(:func:`stream_metrics`).

Order versus weighting. ACC averages the lower triangle of ``R``, so the task in
position ``j`` (0-based) is counted ``T - j`` times: putting the easiest task first
raises ACC with no continual-learning effect at all (the paper itself warns of
this, Sect. 5). :func:`weighting_reference` gives the ACC of a learner that neither
forgets nor transfers, from the single-task accuracies alone; the M2I - I2M gap of
that reference is what weighting alone produces. The final-row mean counts every
task once and has no such term.

Seeds. :func:`difficulty_table` and :func:`select_tasks` compute the difficulty
ordering from single-task accuracies over several seeds and keep only tasks whose
difficulties differ by more than their seed spread; :func:`run_streams` trains
every (seed, order, strategy) stream, optionally in worker processes.
"""

from __future__ import annotations

import inspect
import itertools
import math
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from ._seed import torch_seeded
from ._validate import check_choice, check_choices, check_int, check_real, check_type
from .data._cache import DatasetNotFoundError
from .data.images import IMAGE_DATASETS, ImageDataset, load_image_dataset
from .metrics import average_accuracy, backward_transfer, forward_transfer
from .models.cnn import BACKBONES, make_backbone
from .strategies import Task, available_strategies, make_strategy
from .strategies.base import _REGISTRY

__all__ = ["PAPER_ORDER", "Benchmark", "prepare_images", "balanced_indices", "build_benchmark",
           "single_task_accuracy", "curriculum_orders", "run_stream", "stream_metrics", "strategy_kwargs",
           "check_params", "weighting_reference", "difficulty_table", "select_tasks", "run_streams",
           "paired_gap", "verdict"]

#: the paper's direct curriculum (M2I), from its Table 2 accuracies
PAPER_ORDER = ("mnist", "omniglot", "fashion_mnist", "svhn", "cifar10", "tinyimagenet")


def prepare_images(x: np.ndarray, image_size: int, channels: int) -> torch.Tensor:
    """uint8 images -> float tensor in ``[0, 1]`` of one size and channel count.

    Parameters
    ----------
    x : ndarray of uint8, shape (N, H, W) or (N, H, W, 3)
    image_size : int
    channels : {1, 3}

    Returns
    -------
    Tensor, shape (N, channels, image_size, image_size)

    Examples
    --------
    >>> prepare_images(np.full((2, 8, 8), 255, np.uint8), 4, 3).shape
    torch.Size([2, 3, 4, 4])
    >>> float(prepare_images(np.full((1, 8, 8, 3), 255, np.uint8), 16, 1).max())
    1.0
    """
    check_choice("channels", channels, [1, 3])
    t = torch.as_tensor(np.ascontiguousarray(x)).float().div_(255.0)
    t = t.unsqueeze(1) if t.ndim == 3 else t.permute(0, 3, 1, 2)
    if t.shape[1] != channels:
        t = t.expand(-1, 3, -1, -1) if channels == 3 else t.mean(1, keepdim=True)
    if t.shape[-1] != image_size or t.shape[-2] != image_size:
        t = F.interpolate(t, size=(image_size, image_size), mode="bilinear", antialias=True, align_corners=False)
    return t.clamp(0, 1).contiguous()


def balanced_indices(y: np.ndarray, per_class: int, seed: int = 0):
    """A class-balanced random subset: ``min(per_class, smallest class)`` rows of every class.

    Returns
    -------
    idx : ndarray of int64, sorted by class then at random
    n : int
        Rows taken per class.

    Examples
    --------
    >>> idx, n = balanced_indices(np.array([0, 0, 0, 1, 1, 2, 2, 2]), 5)
    >>> n, np.bincount(np.array([0, 0, 0, 1, 1, 2, 2, 2])[idx]).tolist()
    (2, [2, 2, 2])
    """
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(y, return_counts=True)
    n = int(min(per_class, counts.min()))
    idx = np.concatenate([rng.permutation(np.flatnonzero(y == c))[:n] for c in classes])
    return idx.astype(np.int64), n


@dataclass
class Benchmark:
    """Prepared datasets of a curriculum benchmark, keyed by dataset name.

    Attributes
    ----------
    names : list of str
        Loaded datasets, in the requested order.
    train, test : dict name -> (Tensor (N, C, S, S), Tensor (N,) of labels 0..9)
    per_class : dict name -> (train images per class, test images per class)
    sources : dict name -> str
    missing : dict name -> str
        Requested datasets that could not be loaded, with the reason.
    """

    names: list
    train: dict
    test: dict
    per_class: dict
    sources: dict
    missing: dict = field(default_factory=dict)
    image_size: int = 64
    channels: int = 3

    def tasks(self, order, scenario: str = "class"):
        """Train and test :class:`~clkit.strategies.Task` lists for the datasets in ``order``.

        Task ``k`` gets labels ``10 k .. 10 k + 9`` (one head over ``10 T`` outputs).

        Examples
        --------
        >>> b = build_benchmark(["digits", "mnist_subset"], per_class_train=3, per_class_test=2, image_size=8)
        >>> train, test = b.tasks(["mnist_subset", "digits"])
        >>> train[1].classes, len(test[0]), train[0].x.shape[1:]
        ((10, 11, 12, 13, 14, 15, 16, 17, 18, 19), 20, torch.Size([3, 8, 8]))
        """
        check_choice("scenario", scenario, ["class", "task"])
        check_choices("order", list(order), self.names)
        train, test = [], []
        for k, name in enumerate(order):
            classes = tuple(range(10 * k, 10 * k + 10))
            for split, out in ((self.train, train), (self.test, test)):
                x, y = split[name]
                out.append(Task(x, y + 10 * k, task_id=k, classes=classes, meta={"dataset": name}))
        return train, test


def build_benchmark(datasets, *, per_class_train: int = 500, per_class_test: int = 500, image_size: int = 64,
                    channels: int = 3, seed: int = 0, download: bool = False, skip_missing: bool = False) -> Benchmark:
    """Load, balance and resize the datasets of a curriculum benchmark.

    Parameters
    ----------
    datasets : list of str or ImageDataset
        Names from :data:`clkit.data.images.IMAGE_DATASETS`, or ready
        :class:`~clkit.data.images.ImageDataset` objects; each must have exactly 10 classes.
    per_class_train, per_class_test : int
        Images per class (paper: 500 each); fewer when a class has fewer (see module docstring).
    image_size : int
        Side of the square images (paper: 64).
    channels : {1, 3}
        Paper: 3 (grey replicated).
    seed : int
        Seeds the class-balanced subsampling.
    download : bool
        Allow online loaders.
    skip_missing : bool
        Skip (and record in ``missing``) datasets that cannot be loaded instead of raising.

    Returns
    -------
    Benchmark

    Examples
    --------
    >>> b = build_benchmark(["digits"], per_class_train=200, per_class_test=5, image_size=8, channels=1)
    >>> b.per_class["digits"], tuple(b.train["digits"][0].shape)
    ((87, 5), (870, 1, 8, 8))
    """
    if isinstance(datasets, (str, ImageDataset)) or not isinstance(datasets, (list, tuple)):
        raise TypeError(f"datasets must be a list of dataset names, got {type(datasets).__name__} {datasets!r}")
    if not datasets:
        raise ValueError("datasets must name at least one dataset, got []")
    per_class_train = check_int("per_class_train", per_class_train, low=1)
    per_class_test = check_int("per_class_test", per_class_test, low=1)
    image_size = check_int("image_size", image_size, low=4)
    check_choice("channels", channels, [1, 3])
    names = [d.name if isinstance(d, ImageDataset) else d for d in datasets]
    check_choices("datasets", names, list(IMAGE_DATASETS) + [d.name for d in datasets if isinstance(d, ImageDataset)])
    bench = Benchmark([], {}, {}, {}, {}, {}, image_size, channels)
    for k, d in enumerate(datasets):
        if not isinstance(d, ImageDataset):
            try:
                d = load_image_dataset(d, download=download)
            except DatasetNotFoundError as exc:
                if not skip_missing:
                    raise
                bench.missing[d] = str(exc)
                continue
        for split, y in (("train", d.y_train), ("test", d.y_test)):
            found = np.unique(y)
            if len(found) != 10 or len(d.classes) != 10:
                raise ValueError(f"datasets: {d.name!r} must have exactly 10 classes, its {split} split has "
                                 f"{len(found)} ({len(d.classes)} class names)")
        itr, ntr = balanced_indices(d.y_train, per_class_train, seed + 7919 * k)
        ite, nte = balanced_indices(d.y_test, per_class_test, seed + 7919 * k + 1)
        bench.train[d.name] = (prepare_images(d.x_train[itr], image_size, channels), torch.as_tensor(d.y_train[itr]))
        bench.test[d.name] = (prepare_images(d.x_test[ite], image_size, channels), torch.as_tensor(d.y_test[ite]))
        bench.per_class[d.name] = (ntr, nte)
        bench.sources[d.name] = d.source
        bench.names.append(d.name)
    if not bench.names:
        raise DatasetNotFoundError(", ".join(names), list(bench.missing), "None of the datasets could be loaded; "
                                   "use offline ones (digits, mnist_subset, fashion_mnist) or download=True.")
    return bench


def strategy_kwargs(name: str, hyper: dict) -> dict:
    """The entries of ``hyper`` that strategy ``name``'s constructor accepts.

    Examples
    --------
    >>> sorted(strategy_kwargs("ewc", {"ewc_lambda": 1.0, "memory_size": 200, "lr": 0.1}))
    ['ewc_lambda', 'lr']
    """
    check_choice("strategy", name, available_strategies())
    accepted = set()
    for klass in _REGISTRY[name].__mro__:
        if "__init__" in vars(klass):
            accepted |= set(inspect.signature(klass.__init__).parameters)
    return {k: v for k, v in hyper.items() if k in accepted}


def _train_eval(strategy_name, order, train, test, *, backbone, scenario, epochs, seed, hyper, progress=None):
    channels, size = train[0].x.shape[1], train[0].x.shape[-1]
    with torch_seeded(seed):
        model = make_backbone(backbone, channels, 10 * len(order), size)
    strat = make_strategy(strategy_name, model, scenario=scenario, epochs=epochs, seed=seed,
                          **strategy_kwargs(strategy_name, hyper))
    T = len(order)
    R = np.full((T, T), np.nan)
    for i, task in enumerate(train):
        strat.train_task(task)
        R[i] = [strat.evaluate(t) for t in test]
        if progress is not None:
            progress.update(1)
    return R


def single_task_accuracy(bench: Benchmark, *, backbone: str = "small_cnn", epochs: int = 5, seed: int = 0,
                         progress=None, **hyper) -> dict:
    """The paper's Table 2: test accuracy of the backbone trained on each dataset alone.

    Parameters
    ----------
    bench : Benchmark
    backbone : str
        See :func:`clkit.models.cnn.make_backbone`.
    epochs : int
    seed : int
    **hyper
        Optimiser settings passed to the naive strategy (``lr``, ``momentum``, ``batch_size``).

    Returns
    -------
    dict name -> accuracy
    """
    out = {}
    for name in bench.names:
        train, test = bench.tasks([name])
        with torch_seeded(seed):
            out[name] = float(_train_eval("naive", [name], train, test, backbone=backbone, scenario="class",
                                          epochs=epochs, seed=seed, hyper=hyper, progress=progress)[0, 0])
    return out


def curriculum_orders(accuracy: dict):
    """Direct (M2I: easiest, i.e. most accurate, first) and inverse (I2M) orders.

    Ties are broken by name so the order is deterministic.

    Examples
    --------
    >>> curriculum_orders({"cifar10": 0.4, "mnist": 0.99, "svhn": 0.8})
    (['mnist', 'svhn', 'cifar10'], ['cifar10', 'svhn', 'mnist'])
    """
    m2i = sorted(accuracy, key=lambda n: (-accuracy[n], n))
    return m2i, m2i[::-1]


def run_stream(bench: Benchmark, order, strategy: str, *, scenario: str = "class", backbone: str = "small_cnn",
               epochs: int = 5, seed: int = 0, progress=None, **hyper) -> np.ndarray:
    """Train ``strategy`` through the datasets in ``order``; return ``R`` (accuracy matrix).

    Parameters
    ----------
    bench : Benchmark
    order : list of str
    strategy : str
        A registered strategy name.
    scenario : {"class", "task"}
    backbone : str
    epochs : int
    seed : int
        Model initialisation, batch order and memory sampling.
    **hyper
        Strategy and optimiser settings; each strategy takes the ones it accepts
        (:func:`strategy_kwargs`).

    Returns
    -------
    R : ndarray, shape (num_tasks, num_tasks)
        ``R[i, j]`` test accuracy on task ``j`` after training on task ``i`` (all cells,
        so forward transfer can be read above the diagonal).
    """
    train, test = bench.tasks(order, scenario)
    # torch's global generator is seeded for the whole stream as well, so code that draws from it
    # (e.g. layers a strategy adds while it trains) gives the same R whatever ran before in this
    # process -- the condition for results that do not depend on ``run_streams``' workers
    with torch_seeded(seed):
        return _train_eval(strategy, list(order), train, test, backbone=backbone, scenario=scenario,
                           epochs=epochs, seed=seed, hyper=hyper, progress=progress)


def stream_metrics(R, scenario: str) -> dict:
    """The paper's metrics (Sect. 2.3) of one accuracy matrix, with the variants needed to read them.

    Returns
    -------
    dict with

    ``ACC``
        The paper's Eq. 1: ``R[i, j]`` averaged over ``i >= j``, divided by the number
        of those cells, :math:`T(T+1)/2`, as the authors' code does (the paper prints
        :math:`T(T-1)/2`). Task ``j`` counts ``T - j`` times (see :func:`weighting_reference`).
    ``final_acc``
        Mean of the final row: every task once, after the whole stream.
    ``BWT_eq2``
        The paper's Eq. 2: mean over ``i > j`` of ``R[i, j] - R[j, j]`` (Díaz-Rodríguez
        et al.; :func:`clkit.metrics.backward_transfer` ``mode="diaz_rodriguez"``).
    ``BWT_code``
        What the paper's tables report: the authors' released code averages
        ``R[i, j] - R[i-1, j]`` over ``i > j`` (``mode="consecutive"``), which telescopes to
        :math:`2/T` times the final-row BWT -- about a third of ``BWT_eq2``'s scale for the
        paper's six tasks. Compare *this* one with the paper's Tables 3-4.
    ``FWT``
        Mean of ``R[i, j]`` over ``i < j``; NaN in the class-incremental scenario, where it
        is ill-defined (unseen classes are never predicted).

    Examples
    --------
    >>> R = [[0.9, 0.1, 0.0], [0.5, 0.8, 0.2], [0.3, 0.6, 0.7]]
    >>> {k: round(v, 3) for k, v in stream_metrics(R, "task").items()}
    {'ACC': 0.633, 'final_acc': 0.533, 'BWT_eq2': -0.4, 'BWT_code': -0.267, 'FWT': 0.1}
    >>> bool(np.isnan(stream_metrics(R, "class")["FWT"]))
    True
    """
    check_choice("scenario", scenario, ["class", "task"])
    return {"ACC": average_accuracy(R, mode="all_seen"),
            "final_acc": average_accuracy(R, mode="final"),
            "BWT_eq2": backward_transfer(R, mode="diaz_rodriguez"),
            "BWT_code": backward_transfer(R, mode="consecutive"),
            "FWT": forward_transfer(R, mode="diaz_rodriguez") if scenario == "task" else float("nan")}


def weighting_reference(accuracy: dict, order) -> dict:
    """ACC and final-row mean of a learner that neither forgets nor transfers.

    Such a learner has ``R[i, j] = a_j`` for ``i >= j``, with ``a_j`` the single-task
    accuracy of the task in position ``j``. Its ACC is
    :math:`\\sum_j (T - j)\\, a_j / (T(T+1)/2)` (0-based ``j``): a weighted mean in which
    earlier tasks count more. The difference of this reference between two orders of the
    same tasks is the ACC gap produced by weighting alone; its final-row mean is the plain
    mean of the ``a_j`` and the same for every order.

    Parameters
    ----------
    accuracy : dict name -> float
        Single-task accuracies (e.g. :func:`single_task_accuracy`).
    order : list of str

    Returns
    -------
    dict with ``ACC`` and ``final_acc``

    Examples
    --------
    >>> a = {"easy": 0.9, "mid": 0.6, "hard": 0.3}
    >>> m2i = weighting_reference(a, ["easy", "mid", "hard"])["ACC"]   # (3*.9 + 2*.6 + .3) / 6
    >>> i2m = weighting_reference(a, ["hard", "mid", "easy"])["ACC"]   # (3*.3 + 2*.6 + .9) / 6
    >>> round(m2i, 3), round(i2m, 3), round(m2i - i2m, 3)
    (0.7, 0.5, 0.2)
    """
    order = list(order)
    check_choices("order", order, list(accuracy))
    T = len(order)
    a = np.array([float(accuracy[n]) for n in order])
    weights = (T - np.arange(T)) / (T * (T + 1) / 2)
    return {"ACC": float(weights @ a), "final_acc": float(a.mean())}


def difficulty_table(runs: dict) -> dict:
    """Mean and seed spread of single-task accuracies measured over several seeds.

    Parameters
    ----------
    runs : dict name -> list of float
        One accuracy per seed.

    Returns
    -------
    dict name -> {"mean": float, "sd": float, "n": int}
        ``sd`` is the sample standard deviation over seeds (NaN for one seed).

    Examples
    --------
    >>> difficulty_table({"a": [0.8, 0.9, 1.0]})["a"]
    {'mean': 0.9, 'sd': 0.1, 'n': 3}
    """
    out = {}
    for name, values in runs.items():
        v = np.asarray(values, dtype=float)
        if v.ndim != 1 or len(v) == 0:
            raise ValueError(f"runs: {name!r} needs a list of accuracies, one per seed, got {values!r}")
        out[name] = {"mean": round(float(v.mean()), 12),
                     "sd": round(float(v.std(ddof=1)), 12) if len(v) > 1 else float("nan"), "n": len(v)}
    return out


def _gap_threshold(d1: dict, d2: dict) -> float:
    """Seed spread of the difference of two difficulties: the root sum of their variances."""
    return math.sqrt(d1["sd"] ** 2 + d2["sd"] ** 2)


def select_tasks(table: dict, num_tasks: int = 0):
    """Choose the curriculum's tasks so that neighbouring difficulties differ by more than the seed spread.

    Candidates are sorted by mean single-task accuracy (easiest first). Two neighbours
    are *separated* when their difference in mean accuracy exceeds
    :math:`\\sqrt{sd_1^2 + sd_2^2}`, the seed spread of that difference. Among subsets of
    ``num_tasks`` candidates (``0``: of any size, the largest one whose neighbours are all
    separated), the one whose smallest neighbour gap is the largest multiple of its spread
    wins; ties go to the earlier names.

    Parameters
    ----------
    table : dict
        From :func:`difficulty_table` (at least 2 seeds, so the spread is known).
    num_tasks : int
        ``0`` or between 2 and the number of candidates.

    Returns
    -------
    names : list of str
        The chosen tasks, easiest first (the M2I order).
    gaps : list of dict
        For each neighbouring pair: ``easier``, ``harder``, ``gap``, ``spread``, ``separated``.

    Examples
    --------
    >>> t = {"a": {"mean": 0.95, "sd": 0.01, "n": 3}, "b": {"mean": 0.94, "sd": 0.02, "n": 3},
    ...      "c": {"mean": 0.70, "sd": 0.03, "n": 3}}
    >>> select_tasks(t)[0]                     # a and b are tied within their spread
    ['a', 'c']
    >>> [g["separated"] for g in select_tasks(t, num_tasks=3)[1]]
    [False, True]
    """
    names = sorted(table, key=lambda n: (-table[n]["mean"], n))
    if len(names) < 2:
        raise ValueError(f"table: need at least 2 candidate tasks, got {names}")
    if any(not np.isfinite(table[n]["sd"]) for n in names):
        raise ValueError("table: the seed spread is unknown (one seed); measure difficulty with at least 2 seeds")
    num_tasks = check_int("num_tasks", num_tasks, low=0, high=len(names))
    if num_tasks == 1:
        raise ValueError(f"num_tasks must be 0 (as many as are separated) or 2..{len(names)}, got 1")

    def gaps(sub):
        return [{"easier": a, "harder": b, "gap": table[a]["mean"] - table[b]["mean"],
                 "spread": _gap_threshold(table[a], table[b]),
                 "separated": bool(table[a]["mean"] - table[b]["mean"] > _gap_threshold(table[a], table[b]))}
                for a, b in zip(sub, sub[1:])]

    def score(sub):
        g = gaps(sub)
        return min(x["gap"] / x["spread"] if x["spread"] > 0 else math.inf for x in g)

    sizes = [num_tasks] if num_tasks else range(len(names), 1, -1)
    best = None
    for k in sizes:
        subs = [list(c) for c in itertools.combinations(names, k)]
        ok = [c for c in subs if all(x["separated"] for x in gaps(c))]
        pool = ok or (subs if num_tasks or k == 2 else [])
        if pool:
            best = max(pool, key=score)   # max keeps the first of equals
            break
    return best, gaps(best)


def _stream_job(job):
    """Worker body of :func:`run_streams` (module level so worker processes can import it)."""
    key, bench, order, strategy, kwargs, num_threads = job
    if num_threads:
        torch.set_num_threads(num_threads)
    return key, run_stream(bench, order, strategy, **kwargs)


def run_streams(benches: dict, orders: dict, strategies, *, workers: int = 1, num_threads: int = 1, progress=None,
                **kwargs) -> dict:
    """Every (seed, order, strategy) stream; optionally in worker processes.

    Parameters
    ----------
    benches : dict seed -> Benchmark
        One benchmark per seed (the seed also drives :func:`run_stream`).
    orders : dict order name -> list of dataset names
    strategies : list of str
    workers : int
        Processes to use; ``1`` runs in this process. Every stream seeds its own model,
        batches and memories, so the results do not depend on ``workers``.
    num_threads : int
        torch threads in each worker (0: leave torch's default).
    progress : tqdm-like, optional
        Advanced by one per finished stream.
    **kwargs
        Passed to :func:`run_stream` (``scenario``, ``backbone``, ``epochs``, strategy settings).

    Returns
    -------
    dict seed -> order -> strategy -> R
    """
    workers = check_int("workers", workers, low=1)
    jobs = [((seed, o, s), bench, orders[o], s, {**kwargs, "seed": seed}, num_threads)
            for seed, bench in benches.items() for o in orders for s in strategies]
    out = {seed: {o: {} for o in orders} for seed in benches}

    def keep(key, R):
        seed, o, s = key
        out[seed][o][s] = R
        if progress is not None:
            progress.update(1)

    if workers == 1:
        for job in jobs:
            keep(*_stream_job(job))
        return out
    import multiprocessing as mp

    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(_stream_job, job) for job in jobs]
        for fut in as_completed(futures):
            keep(*fut.result())
    return out


def paired_gap(values_a, values_b) -> dict:
    """Mean and seed spread of paired differences ``a - b`` (one pair per seed).

    Returns
    -------
    dict with ``mean``, ``sd`` (sample standard deviation of the per-seed differences,
    NaN for one seed) and ``per_seed``.

    Examples
    --------
    >>> paired_gap([0.8, 0.7, 0.9], [0.7, 0.7, 0.7])
    {'mean': 0.1, 'sd': 0.1, 'per_seed': [0.1, 0.0, 0.2]}
    """
    d = np.asarray(values_a, dtype=float) - np.asarray(values_b, dtype=float)
    return {"mean": round(float(d.mean()), 12), "sd": round(float(d.std(ddof=1)), 12) if len(d) > 1 else float("nan"),
            "per_seed": [round(float(x), 12) for x in d]}


def verdict(gap: dict, positive: str = "M2I higher", negative: str = "I2M higher",
            within: str = "within spread") -> str:
    """Name the sign of a :func:`paired_gap` only when ``|mean|`` exceeds its seed ``sd``.

    Examples
    --------
    >>> verdict({"mean": 0.05, "sd": 0.02}), verdict({"mean": -0.05, "sd": 0.02}), verdict({"mean": 0.01, "sd": 0.02})
    ('M2I higher', 'I2M higher', 'within spread')
    """
    if not np.isfinite(gap["sd"]) or abs(gap["mean"]) <= gap["sd"]:
        return within
    return positive if gap["mean"] > 0 else negative


def check_params(*, datasets, scenario, strategies, backbone, epochs, difficulty_epochs, memory_size,
                 per_class_train, per_class_test, image_size, channels, lr, momentum, batch_size, seed,
                 optimizer: str = "sgd", seeds: int = 1, num_tasks: int = 0, workers: int = 1, **others) -> None:
    """Validate notebook 04's parameters; raise ``ValueError``/``TypeError`` naming the parameter.

    Examples
    --------
    >>> check_params(datasets=["digits"], scenario="class", strategies=["pnn"], backbone="small_cnn", epochs=1,
    ...              difficulty_epochs=1, memory_size=10, per_class_train=5, per_class_test=5, image_size=16,
    ...              channels=3, lr=0.01, momentum=0.9, batch_size=8, seed=0)
    Traceback (most recent call last):
    ...
    ValueError: strategies: 'pnn' is task-incremental only; with scenario='class' choose from ...
    """
    check_choices("datasets", datasets, IMAGE_DATASETS)
    check_choice("scenario", scenario, ["class", "task"])
    # graph-specific strategies (SSM, SEM, DMSG) need a model that holds its graph
    names = [n for n in available_strategies() if not getattr(_REGISTRY[n], "needs_graph_model", False)]
    check_choices("strategies", strategies, names)
    if scenario == "class":
        for s in strategies:
            if _REGISTRY[s].task_incremental_only:
                allowed = [n for n in names if not _REGISTRY[n].task_incremental_only]
                raise ValueError(f"strategies: {s!r} is task-incremental only; with scenario='class' choose from {allowed}")
    check_choice("backbone", backbone, list(BACKBONES))
    check_int("epochs", epochs, low=1)
    check_int("difficulty_epochs", difficulty_epochs, low=1)
    check_int("memory_size", memory_size, low=0)
    check_int("per_class_train", per_class_train, low=1)
    check_int("per_class_test", per_class_test, low=1)
    check_int("image_size", image_size, low=8)
    check_choice("channels", channels, [1, 3])
    check_choice("optimizer", optimizer, ["sgd", "adam", "adamw"])
    check_real("lr", lr, low=0, low_open=True)
    check_real("momentum", momentum, low=0, high=1)
    check_int("batch_size", batch_size, low=1)
    check_int("seed", seed)
    check_int("seeds", seeds, low=1)
    check_int("workers", workers, low=1)
    check_int("num_tasks", num_tasks, low=0, high=len(datasets))
    if num_tasks == 1:
        raise ValueError(f"num_tasks must be 0 (as many tasks as differ in difficulty beyond the seed spread) "
                         f"or 2..{len(datasets)} (len(datasets)), got 1")
    if "num_threads" in others:
        check_int("num_threads", others.pop("num_threads"), low=0)
    for name, value in others.items():
        if isinstance(value, bool):
            check_type(name, value, bool)
        elif isinstance(value, (int, float)):
            check_real(name, value, low=0)
