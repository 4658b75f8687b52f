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
paper's ACC, BWT and FWT (Sect. 2.3) come from :mod:`clkit.metrics`.
"""

from __future__ import annotations

import inspect
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
           "check_params"]

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
    return _train_eval(strategy, list(order), train, test, backbone=backbone, scenario=scenario, epochs=epochs,
                       seed=seed, hyper=hyper, progress=progress)


def stream_metrics(R, scenario: str) -> dict:
    """The paper's ACC, BWT and FWT (Sect. 2.3) of one accuracy matrix.

    ACC averages ``R[i, j]`` over ``i >= j``, BWT ``R[i, j] - R[j, j]`` over ``i > j``
    and FWT ``R[i, j]`` over ``i < j`` (Díaz-Rodríguez et al.). FWT is NaN in the
    class-incremental scenario, where it is ill-defined (unseen classes are never
    predicted).

    Examples
    --------
    >>> R = [[0.9, 0.1], [0.5, 0.8]]
    >>> {k: round(v, 3) for k, v in stream_metrics(R, "task").items()}
    {'ACC': 0.733, 'BWT': -0.4, 'FWT': 0.1}
    >>> bool(np.isnan(stream_metrics(R, "class")["FWT"]))
    True
    """
    check_choice("scenario", scenario, ["class", "task"])
    return {"ACC": average_accuracy(R, mode="all_seen"),
            "BWT": backward_transfer(R, mode="diaz_rodriguez"),
            "FWT": forward_transfer(R, mode="diaz_rodriguez") if scenario == "task" else float("nan")}


def check_params(*, datasets, scenario, strategies, backbone, epochs, difficulty_epochs, memory_size,
                 per_class_train, per_class_test, image_size, channels, lr, momentum, batch_size, seed,
                 optimizer: str = "sgd", **others) -> None:
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
    if "num_threads" in others:
        check_int("num_threads", others.pop("num_threads"), low=0)
    for name, value in others.items():
        if isinstance(value, bool):
            check_type(name, value, bool)
        elif isinstance(value, (int, float)):
            check_real(name, value, low=0)
