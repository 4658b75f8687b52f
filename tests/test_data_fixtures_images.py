"""The fabricated image datasets (clkit.data.fixtures.images) and the readers that read them (clkit.data.images).

Every test writes under pytest's tmp_path and loads with download=False: no network, nothing read
outside the temporary folders.
"""

import datetime
import gzip
import os
import pickle
import shutil

import numpy as np
import pytest

from clkit.data import fixtures
from clkit.data._cache import DatasetNotFoundError
from clkit.data.fixtures import images as fx
from clkit.data.images import (FASHION_MNIST_CLASSES, TINYIMAGENET_CLASSES, load_image_dataset, read_cifar_batch,
                               read_cifar_meta, read_idx, read_svhn_mat, tinyimagenet_wnids)

DIGITS = tuple(str(i) for i in range(10))
#: name -> (image shape, class names, title in error messages, a file whose loss makes the dataset missing)
DATASETS = {
    "mnist": ((28, 28), DIGITS, "MNIST", "MNIST/raw/t10k-labels-idx1-ubyte"),
    "fashion_mnist": ((28, 28), FASHION_MNIST_CLASSES, "Fashion-MNIST", "fashion-mnist/train-labels-idx1-ubyte.gz"),
    "svhn": ((32, 32, 3), DIGITS, "SVHN", "svhn/test_32x32.mat"),
    "cifar10": ((32, 32, 3), fx.CIFAR10_CLASSES, "CIFAR-10", "cifar-10-batches-py/data_batch_3"),
    "omniglot": ((105, 105), tuple(f"Alphabet_of_the_Magi/character{i:02d}" for i in range(1, 11)), "Omniglot",
                 "omniglot-py/images_background/Alphabet_of_the_Magi"),
    "tinyimagenet": ((64, 64, 3), TINYIMAGENET_CLASSES, "TinyImageNet", "tiny-imagenet-200/val/val_annotations.txt"),
}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty clkit data cache in tmp_path."""
    monkeypatch.setenv("CLKIT_DATA", str(tmp_path))
    return tmp_path


def _files(folder):
    """Relative path -> bytes of every file below ``folder``."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _remove(path):
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


@pytest.mark.parametrize("name", DATASETS)
def test_the_loader_reads_the_fabricated_files(name, cache):
    shape, classes, _, _ = DATASETS[name]
    folder = fixtures.write(name, cache, seed=1, per_class_train=3, per_class_test=2)
    assert folder.is_dir() and cache in folder.parents
    assert not [p for p in cache.rglob("*") if ".tmp" in p.name], "a temporary file was left behind"
    d = load_image_dataset(name, download=False)
    assert d.name == name and d.classes == classes
    for x, y, per_class in ((d.x_train, d.y_train, 3), (d.x_test, d.y_test, 2)):
        assert x.dtype == np.uint8 and x.shape == (10 * per_class, *shape)
        assert y.dtype == np.int64 and y.shape == (10 * per_class,)
        assert np.bincount(y, minlength=10).tolist() == [per_class] * 10 and set(y.tolist()) == set(range(10))
    assert str(cache) in d.source


@pytest.mark.parametrize("name", DATASETS)
def test_classes_carry_a_signal_that_generalises(name, cache):
    """Nearest class mean, fitted on the train split, names the test images' classes."""
    fixtures.write(name, cache)
    d = load_image_dataset(name)
    xtr, xte = (a.reshape(len(a), -1).astype(np.float64) for a in (d.x_train, d.x_test))
    means = np.stack([xtr[d.y_train == k].mean(0) for k in range(10)])
    predicted = ((xte[:, None, :] - means[None]) ** 2).sum(-1).argmin(1)
    assert (predicted == d.y_test).mean() >= 0.9


@pytest.mark.parametrize("name", DATASETS)
def test_the_same_seed_writes_the_same_bytes_another_seed_other_data(name, tmp_path, monkeypatch):
    a, b, c = (_files(fixtures.write(name, tmp_path / sub, seed=seed)) for sub, seed in (("a", 3), ("b", 3), ("c", 4)))
    assert a == b
    assert a.keys() == c.keys() and all(a[k] != c[k] for k in a if k.endswith(("ubyte", ".gz", ".mat", "_batch_1",
                                                                               ".png", ".JPEG")))
    monkeypatch.setenv("CLKIT_DATA", str(tmp_path / "a"))
    x3 = load_image_dataset(name).x_train
    monkeypatch.setenv("CLKIT_DATA", str(tmp_path / "c"))
    assert not np.array_equal(x3, load_image_dataset(name).x_train)


def test_datasets_do_not_share_their_data(tmp_path):
    """MNIST and Fashion-MNIST have the same format; the same seed must still give other images."""
    a = _files(fx.write_mnist(tmp_path, seed=0))
    b = _files(fx.write_fashion_mnist(tmp_path, seed=0))
    assert gzip.decompress(b["train-images-idx3-ubyte.gz"]) != a["train-images-idx3-ubyte"]


@pytest.mark.parametrize("name", DATASETS)
def test_a_missing_file_names_the_dataset_where_it_looked_and_the_file(name, cache):
    _, _, title, lost = DATASETS[name]
    fixtures.write(name, cache, per_class_train=1, per_class_test=1)
    _remove(cache / lost)
    with pytest.raises(DatasetNotFoundError) as err:
        load_image_dataset(name, download=False)
    msg = str(err.value)
    assert repr(title) in msg and str(cache) in msg and os.path.basename(lost) in msg
    assert "download=True" in msg or "reinstall" in msg


# -- the readers, by hand ------------------------------------------------------------------------------------------

def test_cifar_batch_planes_become_hwc_images_whatever_the_key_spelling(tmp_path):
    data = np.zeros((2, 3072), np.uint8)
    data[:, :1024], data[:, 1024:2048], data[:, 2048:] = 10, 20, 30      # red, green, blue planes
    data[1, 2 * 32 + 5] = 200                                             # image 1, red, row 2, column 5
    data[1, 2048 + 31 * 32 + 31] = 99                                     # image 1, blue, last pixel
    for keys, name in ((("data", "labels"), "str_keys"), ((b"data", b"labels"), "bytes_keys")):
        (tmp_path / name).write_bytes(pickle.dumps({keys[0]: data, keys[1]: [4, 9]}, protocol=2))
        x, y = read_cifar_batch(tmp_path / name)
        assert x.shape == (2, 32, 32, 3) and x.dtype == np.uint8 and y.tolist() == [4, 9]
        assert x[0, 0, 0].tolist() == [10, 20, 30] and x[1, 2, 5].tolist() == [200, 20, 30]
        assert x[1, 31, 31].tolist() == [10, 20, 99] and x[1, 5, 2].tolist() == [10, 20, 30]


def test_cifar_meta_gives_the_label_names(tmp_path):
    (tmp_path / "batches.meta").write_bytes(pickle.dumps({b"label_names": [n.encode() for n in fx.CIFAR10_CLASSES],
                                                          b"num_vis": 3072}))
    assert read_cifar_meta(tmp_path / "batches.meta") == fx.CIFAR10_CLASSES


def test_cifar_pickles_may_hold_only_arrays_and_plain_data(tmp_path):
    (tmp_path / "data_batch_1").write_bytes(pickle.dumps({"data": datetime.date(2020, 1, 1), "labels": []}))
    with pytest.raises(pickle.UnpicklingError, match="datetime.date is not allowed"):
        read_cifar_batch(tmp_path / "data_batch_1")
    (tmp_path / "data_batch_2").write_bytes(pickle.dumps({"data": np.zeros((2, 3072), np.float32), "labels": [0, 1]}))
    with pytest.raises(ValueError, match=r"uint8 of shape \(N, 3072\)"):
        read_cifar_batch(tmp_path / "data_batch_2")


def test_svhn_label_10_is_the_digit_0_and_x_becomes_hwc(tmp_path):
    from scipy.io import savemat

    X = np.zeros((32, 32, 3, 3), np.uint8)
    X[4, 7, 1, 2] = 123                                                   # row 4, column 7, green, image 2
    savemat(tmp_path / "train_32x32.mat", {"X": X, "y": np.array([[10.0], [1.0], [9.0]])})
    x, y = read_svhn_mat(tmp_path / "train_32x32.mat")
    assert x.shape == (3, 32, 32, 3) and x.dtype == np.uint8 and x.flags.c_contiguous
    assert y.dtype == np.int64 and y.tolist() == [0, 1, 9]
    assert x[2, 4, 7].tolist() == [0, 123, 0] and int(x.sum()) == 123


def test_svhn_fixture_stores_the_digit_0_as_10(tmp_path):
    from scipy.io import loadmat

    folder = fx.write_svhn(tmp_path, per_class_train=2, per_class_test=1)
    mat = loadmat(folder / "train_32x32.mat")
    assert mat["X"].shape == (32, 32, 3, 20) and mat["X"].dtype == np.uint8 and mat["y"].shape == (20, 1)
    assert sorted(set(mat["y"].ravel().tolist())) == list(range(1, 11))
    x, y = read_svhn_mat(folder / "train_32x32.mat")
    assert np.array_equal(y, np.where(mat["y"].ravel() == 10, 0, mat["y"].ravel()))


def test_mnist_reads_gzipped_files_too(cache):
    raw = fx.write_mnist(cache, per_class_train=2, per_class_test=1)
    plain = load_image_dataset("mnist")
    for p in list(raw.iterdir()):
        (raw / f"{p.name}.gz").write_bytes(gzip.compress(p.read_bytes()))
        p.unlink()
    zipped = load_image_dataset("mnist")
    assert np.array_equal(plain.x_train, zipped.x_train) and np.array_equal(plain.y_test, zipped.y_test)


def test_idx_header_and_size_are_checked(tmp_path):
    (tmp_path / "ok").write_bytes(bytes([0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3, *range(6)]))
    ok = read_idx(tmp_path / "ok")
    assert ok.tolist() == [[0, 1, 2], [3, 4, 5]] and ok.flags.writeable
    (tmp_path / "int32").write_bytes(bytes([0, 0, 0x0C, 1, 0, 0, 0, 1, 0, 0, 0, 7]))
    with pytest.raises(ValueError, match="not an IDX file of unsigned bytes"):
        read_idx(tmp_path / "int32")
    (tmp_path / "short").write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 5, 1, 2]))
    with pytest.raises(ValueError, match=r"holds 10 bytes, its header's shape \(5,\) needs 13"):
        read_idx(tmp_path / "short")


# -- the fabricated files' formats -----------------------------------------------------------------------------------

def test_torchvision_parses_the_fabricated_files_as_clkit_does(cache, monkeypatch):
    """With its md5 checks switched off, torchvision's own classes read the same arrays from the same files."""
    from torchvision.datasets import CIFAR10, MNIST, SVHN, cifar

    monkeypatch.setattr(CIFAR10, "_check_integrity", lambda self: True)
    monkeypatch.setattr(cifar, "check_integrity", lambda path, md5=None: os.path.isfile(path))
    monkeypatch.setattr(SVHN, "_check_integrity", lambda self: True)
    for name in ("mnist", "svhn", "cifar10"):
        fixtures.write(name, cache, per_class_train=2, per_class_test=1)
    ours = {name: load_image_dataset(name) for name in ("mnist", "svhn", "cifar10")}
    for train in (True, False):
        m = MNIST(str(cache), train=train)
        c = CIFAR10(str(cache), train=train)
        s = SVHN(str(cache / "svhn"), split="train" if train else "test")
        for d, x, y in ((ours["mnist"], m.data.numpy(), m.targets.numpy()), (ours["cifar10"], c.data, c.targets),
                        (ours["svhn"], s.data.transpose(0, 2, 3, 1), s.labels)):
            assert np.array_equal(d.x_train if train else d.x_test, x)
            assert np.array_equal(d.y_train if train else d.y_test, y)
        assert tuple(c.classes) == ours["cifar10"].classes


def test_cifar_fixture_has_the_real_batches_and_keys(tmp_path):
    folder = fx.write_cifar10(tmp_path, per_class_train=3, per_class_test=2)
    assert sorted(p.name for p in folder.iterdir()) == ["batches.meta", *(f"data_batch_{i}" for i in range(1, 6)),
                                                       "test_batch"]
    with open(folder / "data_batch_2", "rb") as fh:
        batch = pickle.load(fh, encoding="latin1")
    assert sorted(batch) == ["batch_label", "data", "filenames", "labels"]
    assert batch["batch_label"] == "training batch 2 of 5" and batch["data"].shape == (6, 3072)
    assert all(f.endswith(".png") for f in batch["filenames"]) and all(isinstance(v, int) for v in batch["labels"])


def test_tinyimagenet_fixture_has_the_real_ids_distractors_and_annotation_format(tmp_path):
    base = fx.write_tinyimagenet(tmp_path, per_class_train=2, per_class_test=3)
    wnids = (base / "wnids.txt").read_text().split()
    words = dict(line.split("\t", 1) for line in (base / "words.txt").read_text().splitlines())
    assert len(wnids) == 13 and set(wnids) < set(words) and all(w[0] == "n" and len(w) == 9 for w in words)
    assert [words[w].split(",")[0] for w in fx.TINYIMAGENET_WORDS] == list(TINYIMAGENET_CLASSES)
    assert tinyimagenet_wnids(words, wnids) == list(fx.TINYIMAGENET_WORDS)
    assert sorted(p.name for p in (base / "train").iterdir()) == sorted(wnids)
    w = wnids[0]
    assert sorted(p.name for p in (base / "train" / w / "images").iterdir()) == [f"{w}_0.JPEG", f"{w}_1.JPEG"]
    boxes = (base / "train" / w / f"{w}_boxes.txt").read_text().splitlines()
    assert [b.split("\t")[0] for b in boxes] == [f"{w}_0.JPEG", f"{w}_1.JPEG"] and len(boxes[0].split("\t")) == 5
    ann = [line.split("\t") for line in (base / "val" / "val_annotations.txt").read_text().splitlines()]
    assert len(ann) == 39 and all(len(a) == 6 and a[1] in wnids for a in ann)
    assert sorted(a[0] for a in ann) == sorted(p.name for p in (base / "val" / "images").iterdir())


def test_omniglot_fixture_names_characters_and_drawings_like_the_real_alphabet(tmp_path):
    from PIL import Image

    base = fx.write_omniglot(tmp_path, per_class_train=2, per_class_test=1, characters=11)
    alphabet = base / "images_background" / "Alphabet_of_the_Magi"
    assert sorted(p.name for p in alphabet.iterdir()) == [f"character{i:02d}" for i in range(1, 12)]
    assert sorted(p.name for p in (alphabet / "character01").iterdir()) == ["0709_01.png", "0709_02.png",
                                                                             "0709_03.png"]
    with Image.open(alphabet / "character11" / "0719_03.png") as im:
        assert im.format == "PNG" and im.size == (105, 105) and im.mode == "L"


# -- arguments -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", DATASETS)
def test_bad_sizes_and_seeds_are_refused_by_name(name, tmp_path):
    write = getattr(fx, f"write_{name}")
    for kwargs, error, match in [({"per_class_train": 0}, ValueError, r"per_class_train must be an integer >= 1, got 0"),
                                 ({"per_class_test": 2.5}, TypeError, r"per_class_test must be an integer, got float"),
                                 ({"seed": -1}, ValueError, r"seed must be an integer >= 0, got -1"),
                                 ({"seed": "0"}, TypeError, r"seed must be an integer, got str")]:
        with pytest.raises(error, match=match):
            write(tmp_path, **kwargs)
    with pytest.raises(TypeError, match="root must be a folder path"):
        write(None)
    assert not any(tmp_path.iterdir()), "a refused call wrote files"


def test_omniglot_sizes_must_fit_the_alternating_split_and_the_alphabet(tmp_path):
    for kwargs in ({"per_class_train": 6, "per_class_test": 4}, {"per_class_train": 4, "per_class_test": 5},
                   {"per_class_train": 11, "per_class_test": 10}):
        with pytest.raises(ValueError, match=r"per_class_train must be per_class_test or per_class_test \+ 1"):
            fx.write_omniglot(tmp_path, **kwargs)
    with pytest.raises(ValueError, match=r"characters must be an integer in \[10, 20\], got 9"):
        fx.write_omniglot(tmp_path, characters=9)
