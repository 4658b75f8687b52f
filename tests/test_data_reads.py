"""Every data file a run reads is in its manifest with its SHA-256 (issue 42): clkit.data._reads."""

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from clkit import manifest as mf
from clkit.cli import main
from clkit.data import _reads
from clkit.data.shipped import PLANETOID_FILES, SHIPPED_PLANETOID, shipped_planetoid_dir

FMNIST = Path("/usr/share/datasets/fashion-mnist")


@pytest.fixture
def reads(tmp_path, monkeypatch):
    """An empty record, an empty data cache (no user copies) and the test's folder as $PWD."""
    monkeypatch.setenv("CLKIT_DATA", str(tmp_path / "cache"))
    monkeypatch.setenv("PWD", str(tmp_path))
    _reads.forget_reads()
    yield tmp_path
    _reads.forget_reads()


def test_shipped_cora_is_recorded_with_the_pinned_checksums(reads):
    from clkit.data.graphs import load_graph

    assert load_graph("cora").num_nodes == 2708
    files = {f["path"]: f for f in _reads.data_files()}
    assert sorted(files) == sorted(f"clkit/data/planetoid/cora/ind.cora.{s}.gz" for s in PLANETOID_FILES)
    folder = shipped_planetoid_dir("cora")
    for suffix, pinned in SHIPPED_PLANETOID["cora"].items():
        entry = files[f"clkit/data/planetoid/cora/ind.cora.{suffix}.gz"]
        raw = (folder / f"ind.cora.{suffix}.gz").read_bytes()
        # shipped.py pins the uncompressed files; the manifest has the .gz file's own digest beside it
        assert entry["uncompressed_sha256"] == pinned == hashlib.sha256(gzip.decompress(raw)).hexdigest()
        assert entry["sha256"] == hashlib.sha256(raw).hexdigest() and entry["bytes"] == len(raw)
    assert mf.manifest(gpu=False)["data_files"] == _reads.data_files()


def test_synthetic_data_records_nothing(reads):
    from clkit.data.graphs import load_graph

    load_graph("csbm", num_nodes=60, num_classes=3, seed=0)
    assert _reads.data_files() == []


@pytest.mark.skipif(not (FMNIST / "t10k-images-idx3-ubyte.gz").is_file(), reason="no Fashion-MNIST at " + str(FMNIST))
def test_fashion_mnist_files_are_recorded(reads):
    from clkit.data.images import load_fashion_mnist

    x, y, _ = load_fashion_mnist("test")
    assert len(x) == len(y) == 10000
    got = {f["path"]: f for f in _reads.data_files()}
    want = [FMNIST / "t10k-images-idx3-ubyte.gz", FMNIST / "t10k-labels-idx1-ubyte.gz"]
    assert sorted(got) == [str(p) for p in want]      # a system path stays as it is (no user's prefix)
    for p in want:
        assert got[str(p)]["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
        assert got[str(p)]["bytes"] == p.stat().st_size


def test_user_files_relative_to_the_project_and_hash_cached_per_version(reads):
    from clkit.data.user import load_class_names_file

    f = reads / "classes.txt"
    f.write_text("cat\ndog\n")
    assert load_class_names_file("classes.txt") == ["cat", "dog"]   # relative to $PWD, as typed in a shell
    [entry] = _reads.data_files()
    assert entry == {"path": "classes.txt", "sha256": hashlib.sha256(b"cat\ndog\n").hexdigest(), "bytes": 8}
    f.write_text("cat\ndog\nfrog\n")                  # changed after the read: listed as it is now
    assert _reads.data_files()[0]["sha256"] == hashlib.sha256(b"cat\ndog\nfrog\n").hexdigest()


def test_image_folder_is_one_entry_covering_every_file(reads):
    from PIL import Image

    from clkit.data.user import load_image_folder

    for c in ("cat", "dog"):
        (reads / "imgs" / c).mkdir(parents=True)
        for i in range(2):
            Image.fromarray(np.full((4, 4), 40 * i, np.uint8)).save(reads / "imgs" / c / f"{i}.png")
    load_image_folder(reads / "imgs")
    [entry] = _reads.data_files()
    assert entry["path"] == "imgs" and entry["files"] == 4
    lines = "".join(f"{c}/{i}.png\t{_reads.file_sha256(reads / 'imgs' / c / f'{i}.png')}\n"
                    for c in ("cat", "dog") for i in range(2))
    assert entry["sha256"] == hashlib.sha256(lines.encode()).hexdigest()


def test_summary_names_differing_data_checksums(tmp_path, capsys):
    for name, digest in (("a", "ab" * 32), ("b", "cd" * 32)):
        (tmp_path / name).mkdir()
        m = {"clkit": "0.1.0", "libraries": {}, "data_files": [{"path": "<data>/x.csv", "sha256": digest, "bytes": 3}]}
        rec = {"notebook": "x", "manifest": m, "params": {}, "results": {"acc": 0.5}}
        (tmp_path / name / "results.json").write_text(json.dumps(rec))
    assert main(["summary", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "data <data>/x.csv: sha256 abababababab (a), cdcdcdcdcdcd (b)" in err
