"""The EDGE paper's class-incremental RGB benchmarks: CIFAR-100, ImageNet-R and CUB-200-2011.

The loaders of clkit.data.images read the layouts that clkit.data.fixtures.images fabricates
(the real on-disk formats, a few real classes). Every test writes under pytest's tmp_path and
loads with download=False: no network, nothing read outside the temporary folders.
"""

import shutil

import numpy as np
import pytest

from clkit.data._cache import DatasetNotFoundError
from clkit.data.class_names import load_class_names
from clkit.data.fixtures import images as fx
from clkit.data.images import (IMAGE_DATASETS, RGB_CIL_DATASETS, imagenet_r_split, load_image_dataset,
                               read_cifar100, read_cifar100_meta, read_imagenet_r_readme)

WRITERS = {"cifar100": fx.write_cifar100, "imagenet_r": fx.write_imagenet_r, "cub200": fx.write_cub200}
#: name -> (title in error messages, folder under the cache, words of the how-to, a file whose loss hides the data)
MISSING = {"cifar100": ("CIFAR-100", "cifar-100-python", "CIFAR100", "cifar-100-python/meta"),
           "imagenet_r": ("ImageNet-R", "imagenet-r", "imagenet-r.tar", "imagenet-r"),
           "cub200": ("CUB-200-2011", "CUB_200_2011", "CUB_200_2011.tgz", "CUB_200_2011/images.txt")}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty clkit data cache in tmp_path."""
    monkeypatch.setenv("CLKIT_DATA", str(tmp_path))
    return tmp_path


def _check_arrays(d, size):
    for x, y in ((d.x_train, d.y_train), (d.x_test, d.y_test)):
        assert x.dtype == np.uint8 and x.shape[1:] == (size, size, 3) and x.flags.c_contiguous
        assert y.dtype == np.int64 and y.shape == (len(x),)


def test_the_names_are_registered_beside_not_inside_the_curriculum_list():
    assert set(RGB_CIL_DATASETS) == {"cifar100", "imagenet_r", "cub200"}
    assert not set(RGB_CIL_DATASETS) & set(IMAGE_DATASETS)   # the 10-class curriculum benchmark draws from these


def test_cifar100_reads_its_layout_in_official_label_order(cache):
    folder = fx.write_cifar100(cache, seed=1, per_class_train=3, per_class_test=2, classes=5)
    assert sorted(p.name for p in folder.iterdir()) == ["meta", "test", "train"]
    assert not [p for p in cache.rglob("*") if ".tmp" in p.name]
    d = load_image_dataset("cifar100")
    _check_arrays(d, 32)
    assert d.name == "cifar100" and d.source == str(folder)
    assert d.classes == tuple(load_class_names("cifar100"))          # 02's shipped names, same order
    assert sorted(set(d.y_train.tolist())) == [0, 25, 50, 74, 99] == sorted(set(d.y_test.tolist()))
    assert len(d.y_train) == 15 and len(d.y_test) == 10
    x, y = read_cifar100(folder / "test")                              # the loader keeps the file's pixels
    assert np.array_equal(d.x_test[d.y_test == 99], x[y == 99])
    assert read_cifar100_meta(folder / "meta")[-1] == "worm"


def test_cifar100_class_subset_is_relabelled_in_the_given_order(cache):
    fx.write_cifar100(cache, seed=0, per_class_train=3, per_class_test=2, classes=5)
    full = load_image_dataset("cifar100")
    d = load_image_dataset("cifar100", classes=[99, 0], max_per_class=2)
    assert d.classes == ("worm", "apple")
    assert d.y_train.tolist() == [0, 0, 1, 1] and d.y_test.tolist() == [0, 0, 1, 1]
    assert np.array_equal(d.x_train[:2], full.x_train[full.y_train == 99][:2])


def test_imagenet_r_split_sizes_names_and_resize(cache):
    folder = fx.write_imagenet_r(cache, seed=0, per_class_train=8, per_class_test=2, classes=4)
    d = load_image_dataset("imagenet_r", image_size=48)
    _check_arrays(d, 48)
    assert d.classes == ("goldfish", "great white shark", "hammerhead", "stingray")   # README, sorted wnids
    assert np.bincount(d.y_train).tolist() == [8] * 4 and np.bincount(d.y_test).tolist() == [2] * 4
    assert "80/20" in d.source and str(folder) in d.source
    # same order as 02's shipped list (sorted WordNet ids): the names differ only where CLIP renamed a class
    shipped = load_class_names("imagenet_r")[:4]
    assert [a == b for a, b in zip(d.classes, shipped)] == [True, True, False, True]
    assert shipped[2] == "hammerhead shark"


def test_imagenet_r_default_size_and_wnid_names_without_readme(cache):
    folder = fx.write_imagenet_r(cache, per_class_train=3, per_class_test=1, classes=2)
    (folder / "README.txt").unlink()
    d = load_image_dataset("imagenet_r", max_per_class=1)
    _check_arrays(d, 224)
    assert d.classes == ("n01443537", "n01484850")
    assert d.y_train.tolist() == [0, 1] and d.y_test.tolist() == [0, 1]


def test_imagenet_r_split_is_deterministic_and_seeded(cache):
    fx.write_imagenet_r(cache, seed=0, per_class_train=8, per_class_test=2, classes=2)
    a = load_image_dataset("imagenet_r", image_size=16)
    b = load_image_dataset("imagenet_r", image_size=16)
    assert np.array_equal(a.x_train, b.x_train) and np.array_equal(a.x_test, b.x_test)
    c = load_image_dataset("imagenet_r", image_size=16, seed=3)
    assert not np.array_equal(a.x_test, c.x_test)
    # a class's split depends on its own files only: the same with the other class left out
    one = load_image_dataset("imagenet_r", image_size=16, classes=[1])
    assert np.array_equal(one.x_test, a.x_test[a.y_test == 1])
    names = [f"art_{i}.jpg" for i in range(150)]
    train, test = imagenet_r_split(names, "n01443537", seed=0)
    assert (len(train), len(test)) == (120, 30) and not set(train) & set(test)
    assert imagenet_r_split(names[::-1], "n01443537", seed=0) == (train, test)
    assert imagenet_r_split(names, "n01484850", seed=0) != (train, test)
    assert [len(imagenet_r_split(names[:n], "n1")[1]) for n in (1, 2, 3, 5, 7)] == [0, 0, 1, 1, 1]


def test_imagenet_r_readme_parser_skips_prose(tmp_path):
    path = tmp_path / "README.txt"
    path.write_text("ImageNet-R has renditions of 200 classes. n0 is not an id\n\nn01443537 goldfish\n"
                    "n01484850   great_white_shark  \n")
    assert read_imagenet_r_readme(path) == {"n01443537": "goldfish", "n01484850": "great white shark"}


def test_cub200_official_split_and_class_order(cache):
    folder = fx.write_cub200(cache, seed=2, per_class_train=3, per_class_test=2, classes=4)
    d = load_image_dataset("cub200", image_size=40)
    _check_arrays(d, 40)
    assert d.classes == tuple(load_class_names("cub200")[:4])
    assert np.bincount(d.y_train).tolist() == [3] * 4 and np.bincount(d.y_test).tolist() == [2] * 4
    flags = dict(line.split() for line in (folder / "train_test_split.txt").read_text().splitlines())
    assert sum(v == "1" for v in flags.values()) == len(d.y_train)
    sub = load_image_dataset("cub200", image_size=40, classes=[2], max_per_class=1)
    assert sub.classes == ("Sooty Albatross",) and sub.y_train.tolist() == [0] and sub.y_test.tolist() == [0]
    assert np.array_equal(sub.x_train[0], d.x_train[d.y_train == 2][0])


def test_fixtures_are_byte_reproducible(tmp_path):
    for name, write in WRITERS.items():
        a, b = write(tmp_path / "a", seed=4), write(tmp_path / "b", seed=4)
        files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()), name
        assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files), name


@pytest.mark.parametrize("name", RGB_CIL_DATASETS)
def test_missing_data_names_dataset_place_and_how(name, cache):
    title, folder, how, lost = MISSING[name]
    with pytest.raises(DatasetNotFoundError) as err:
        load_image_dataset(name, download=False)
    msg = str(err.value)
    assert title in msg and str(cache / folder) in msg and how in msg and "download=True" in msg
    WRITERS[name](cache)
    path = cache / lost
    shutil.rmtree(path) if path.is_dir() else path.unlink()
    with pytest.raises(DatasetNotFoundError, match=title):
        load_image_dataset(name, download=False)


@pytest.mark.parametrize("kwargs, param", [
    (dict(name="imagenet_r", image_size=0), "image_size"),
    (dict(name="cub200", image_size=5000), "image_size"),
    (dict(name="cifar100", image_size=64), "image_size"),       # CIFAR-100 has one size
    (dict(name="cifar10", classes=[0]), "classes"),             # not a class-incremental benchmark here
    (dict(name="cifar100", classes=[]), "classes"),
    (dict(name="cifar100", classes=[1, 1]), "classes"),
    (dict(name="cifar100", classes=[-1]), "classes"),
    (dict(name="imagenet_r", max_per_class=0), "max_per_class"),
    (dict(name="imagenet_r", seed=-1), "seed"),
    (dict(name="cub200", seed=1), "seed"),                      # CUB's split is the official one
    (dict(name="cifar1000"), "dataset"),
])
def test_bad_parameters_raise_value_error_naming_them(kwargs, param, cache):
    with pytest.raises(ValueError, match=param):
        load_image_dataset(**kwargs)


def test_a_class_index_beyond_the_dataset_is_a_value_error_not_missing_data(cache):
    fx.write_cub200(cache, classes=2)
    with pytest.raises(ValueError, match="classes must be indices below 2") as err:
        load_image_dataset("cub200", classes=[5])
    assert not isinstance(err.value, DatasetNotFoundError)


@pytest.mark.parametrize("write, kwargs, param", [
    (fx.write_cifar100, dict(classes=1), "classes"),
    (fx.write_imagenet_r, dict(classes=7), "classes"),
    (fx.write_cub200, dict(per_class_test=0), "per_class_test"),
    (fx.write_imagenet_r, dict(seed=-1), "seed"),
])
def test_fixture_writers_check_their_sizes(write, kwargs, param, tmp_path):
    with pytest.raises(ValueError, match=param):
        write(tmp_path, **kwargs)


def test_shipped_imagenet_r_names_follow_the_loaders_sorted_wnid_order():
    """02's shipped ImageNet-R names are the CLIP names of the 200 ImageNet-R WordNet ids, sorted (timm's lists)."""
    timm = pytest.importorskip("timm")
    metadata = pytest.importorskip("open_clip.zero_shot_metadata")
    from pathlib import Path

    info = Path(timm.__file__).parent / "data" / "_info"
    if not (info / "imagenet_r_synsets.txt").is_file():
        pytest.skip("this timm ships no ImageNet-R synset list")
    clip = dict(zip((info / "imagenet_synsets.txt").read_text().split(), metadata.IMAGENET_CLASSNAMES))
    wnids = sorted((info / "imagenet_r_synsets.txt").read_text().split())
    assert [clip[w] for w in wnids] == load_class_names("imagenet_r")
    assert wnids[:4] == list(fx.IMAGENET_R_README_NAMES)[:4]       # the fixture's classes are the first real ones
