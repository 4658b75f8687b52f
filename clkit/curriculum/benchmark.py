"""The benchmark's data: class-balanced, resized 10-class datasets, one per task.

The builder

1. loads each dataset (:func:`clkit.data.images.load_image_dataset`),
2. takes a class-balanced sample -- ``per_class_train`` and ``per_class_test``
   images per class (paper: 500 and 500). When a dataset has fewer images in
   some class (Omniglot: 10 per class and split; sklearn digits: ~90), every
   class of that dataset gets the *smallest* available count, so each task stays
   balanced; the counts used are recorded in :attr:`Benchmark.per_class`,
3. resizes every image to ``image_size`` x ``image_size`` (bilinear, antialiased)
   and to ``channels`` channels (grey images replicated to RGB, RGB averaged to
   grey), scaled to ``[0, 1]``.

Streams: task ``k`` of an order has labels ``10 k .. 10 k + 9`` of a single head
over ``10 T`` outputs (:meth:`Benchmark.tasks`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import torch
import torch.nn.functional as F

from .._validate import check_choice, check_choices, check_int
from ..data._cache import DatasetNotFoundError
from ..device import as_device, move
from ..data.images import IMAGE_DATASETS, ImageDataset, load_image_dataset
from ..strategies import Task

__all__ = ["PAPER_ORDER", "Benchmark", "prepare_images", "balanced_indices", "build_benchmark", "build_benchmarks",
           "check_loaded"]


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

    def tasks(self, order, scenario: str = "class", blocks=None):
        """Train and test :class:`~clkit.strategies.Task` lists for the datasets in ``order``.

        Every dataset gets a block of ten labels of one head over ``10 T`` outputs:
        ``10 b .. 10 b + 9`` with ``b`` its index in ``blocks`` (default: ``order``, so task
        ``k`` has labels ``10 k ..``). Passing the same ``blocks`` for two orders of the same
        tasks gives every dataset the same output rows in both -- the same initial head
        weights, which pairs the two orders (:func:`clkit.curriculum.streams.run_stream`).
        ``task_id`` is always the position in ``order``.

        Examples
        --------
        >>> b = build_benchmark(["digits", "mnist_subset"], per_class_train=3, per_class_test=2, image_size=8)
        >>> train, test = b.tasks(["mnist_subset", "digits"])
        >>> train[1].classes, len(test[0]), train[0].x.shape[1:]
        ((10, 11, 12, 13, 14, 15, 16, 17, 18, 19), 20, torch.Size([3, 8, 8]))
        >>> train, _ = b.tasks(["mnist_subset", "digits"], blocks=["digits", "mnist_subset"])
        >>> [(t.task_id, t.meta["dataset"], t.classes[0]) for t in train]
        [(0, 'mnist_subset', 10), (1, 'digits', 0)]
        """
        check_choice("scenario", scenario, ["class", "task"])
        order = list(order)
        check_choices("order", order, self.names)
        blocks = order if blocks is None else list(blocks)
        if sorted(blocks) != sorted(order):
            raise ValueError(f"blocks must hold the datasets of order once each ({sorted(order)}), got {blocks}")
        train, test = [], []
        for k, name in enumerate(order):
            b = blocks.index(name)
            classes = tuple(range(10 * b, 10 * b + 10))
            for split, out in ((self.train, train), (self.test, test)):
                x, y = split[name]
                # the labels are kept on the host: Task.to moves them (a small copy) next to the
                # images and remembers their host values, so no memory reads them from the device
                out.append(Task(x, y + 10 * b, task_id=k, classes=classes, meta={"dataset": name}).to(x.device))
        return train, test

    @property
    def device(self) -> torch.device:
        """Where the images are (the labels stay on the host; :meth:`to`)."""
        first = next(iter(self.train.values()), None)
        return first[0].device if first is not None else torch.device("cpu")

    def to(self, device) -> "Benchmark":
        """This benchmark with its images on ``device``: ``self`` when they are there already, else
        a copy whose images moved once (pinned, non-blocking from the CPU to CUDA;
        :func:`clkit.device.move`).

        The labels stay on the host: :meth:`tasks` builds every task from the images already on the
        device and moves only its labels (``N`` integers), so the tasks of every stream of a seed
        share one copy of the images on the device, and the strategies' memories read their
        labels' values from the host (:meth:`clkit.strategies.Task.labels_host`).

        Parameters
        ----------
        device : str, torch.device or clkit.device.RunDevice

        Examples
        --------
        >>> b = build_benchmark(["digits", "mnist_subset"], per_class_train=3, per_class_test=2, image_size=8)
        >>> m = b.to(torch.device("meta"))
        >>> m.device, m.train["digits"][1].device, b.to("cpu") is b
        (device(type='meta'), device(type='cpu'), True)
        >>> train, _ = m.tasks(["digits", "mnist_subset"])
        >>> train[1].x.device, train[1].y.device, train[1].labels_host()[:3].tolist()
        (device(type='meta'), device(type='meta'), [10, 10, 10])
        """
        device = as_device(device)
        if self.device == device or (device.index is None and self.device.type == device.type):
            return self
        return replace(self, train={n: (move(x, device), y) for n, (x, y) in self.train.items()},
                       test={n: (move(x, device), y) for n, (x, y) in self.test.items()})


def _load(name: str, download: bool, cache: dict | None) -> ImageDataset:
    """``load_image_dataset(name)``, through ``cache`` (name -> dataset, or the error it raised) when given."""
    if cache is not None and name in cache:
        if isinstance(cache[name], Exception):
            raise cache[name]
        return cache[name]
    try:
        d = load_image_dataset(name, download=download)
    except DatasetNotFoundError as exc:
        if cache is not None:
            cache[name] = exc
        raise
    if cache is not None:
        cache[name] = d
    return d


def build_benchmark(datasets, *, per_class_train: int = 500, per_class_test: int = 500, image_size: int = 64,
                    channels: int = 3, seed: int = 0, download: bool = False, skip_missing: bool = False,
                    _cache: dict | None = None) -> Benchmark:
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
                d = _load(d, download, _cache)
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


def build_benchmarks(datasets, seeds, **kwargs) -> dict:
    """One :class:`Benchmark` per seed (each seed draws its own class-balanced sample).

    Every dataset is loaded once and subsampled per seed; the result equals
    :func:`build_benchmark` called seed by seed.

    Parameters
    ----------
    datasets : list of str or ImageDataset
    seeds : list of int
    **kwargs
        Passed to :func:`build_benchmark`.

    Returns
    -------
    dict seed -> Benchmark

    Examples
    --------
    >>> b = build_benchmarks(["digits"], [0, 1], per_class_train=3, per_class_test=2, image_size=8)
    >>> sorted(b), b[1].names
    ([0, 1], ['digits'])
    """
    cache: dict = {}
    return {s: build_benchmark(datasets, seed=s, _cache=cache, **kwargs) for s in seeds}


def check_loaded(bench: Benchmark, datasets) -> None:
    """Raise ``ValueError`` when fewer than 2 of the candidate ``datasets`` could be loaded.

    Examples
    --------
    >>> check_loaded(Benchmark(["digits"], {}, {}, {}, {}), ["digits", "svhn"])
    Traceback (most recent call last):
    ...
    ValueError: datasets: a curriculum needs at least 2 loadable datasets, got ['digits'] of ['digits', 'svhn']
    """
    if len(bench.names) < 2:
        raise ValueError(f"datasets: a curriculum needs at least 2 loadable datasets, got {bench.names} of "
                         f"{list(datasets)}")
