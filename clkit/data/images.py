"""Image datasets available offline from package registries.

- Fashion-MNIST (full, 70,000 images): the Debian package ``dataset-fashion-mnist``
  installs ``/usr/share/datasets/fashion-mnist/*-ubyte.gz``; torchvision downloads it
  into the clkit cache when online.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from ._cache import DatasetNotFoundError, data_root

__all__ = ["FASHION_MNIST_CLASSES", "load_fashion_mnist", "read_idx"]

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
