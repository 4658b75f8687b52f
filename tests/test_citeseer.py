"""Real CiteSeer shipped beside Cora (issue 40, part A): offline, checked against torch-geometric's reader."""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import torch

from clkit.data import shipped
from clkit.data.graphs import load_graph, load_planetoid

ROOT = Path(__file__).resolve().parents[1]
PLANETOID = ROOT.parent / "shared" / "data" / "planetoid"
if not PLANETOID.exists():
    PLANETOID = Path("/work/shared/data/planetoid")
CS_DIR = shipped.shipped_planetoid_dir("citeseer")
SHIPPED = sorted(p.name for p in CS_DIR.iterdir() if p.is_file())


def test_shipped_files_with_licence_and_provenance():
    gz = [f"ind.citeseer.{s}.gz" for s in shipped.PLANETOID_FILES]
    assert SHIPPED == sorted(gz + ["LICENSE", "PROVENANCE.md"])
    lic = (CS_DIR / "LICENSE").read_text()
    assert "MIT License" in lic and "Zhilin Yang" in lic
    prov = (CS_DIR / "PROVENANCE.md").read_text()
    assert "kimiyoung/planetoid" in prov and "Sen" in prov and "Giles" in prov and "gzip only" in prov
    for digest in shipped.SHIPPED_PLANETOID["citeseer"].values():   # the checksums are written down
        assert digest in prov
    assert sum((CS_DIR / f).stat().st_size for f in gz) < 300_000  # small: ~226 KB gzipped


def test_package_data_globs_cover_every_shipped_file():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = conf["tool"]["setuptools"]["package-data"]["clkit.data"]
    assert all(any(fnmatch.fnmatch(f"planetoid/citeseer/{f}", g) for g in globs) for f in SHIPPED)


def test_shipped_files_are_tracked_by_git():
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", str(CS_DIR.relative_to(ROOT))], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    if not out:
        pytest.skip("CiteSeer files not committed yet")
    assert sorted(Path(p).name for p in out) == SHIPPED


def test_shipped_citeseer_statistics():
    """3327 nodes, 3703 features, 6 classes, 4552 undirected edges (PyG's count after symmetrisation)."""
    g = load_planetoid("CiteSeer", root="/nonexistent")
    assert (g.num_nodes, g.x.shape[1], g.num_classes) == (3327, 3703, 6)
    assert g.edge_index.shape[1] == 9104 and g.stats()["num_edges"] == 4552
    # symmetric, no self-loops, no repeats
    pairs = set(map(tuple, g.edge_index.T.tolist()))
    assert len(pairs) == 9104 and all((b, a) in pairs for a, b in pairs) and not any(a == b for a, b in pairs)
    assert torch.bincount(g.y).tolist() == [264, 590, 668, 701, 596, 508]   # class 0 holds the 15 placeholders
    assert "shipped with clkit" in g.source and "/nonexistent/CiteSeer/raw" in g.source
    assert load_graph("citeseer", root="/nonexistent").num_nodes == 3327


def test_missing_test_indices_are_zero_rows_as_in_pyg():
    """The 15 ids missing from test.index: zero features, label 0, in no split mask (they keep their edges)."""
    d = shipped.read_shipped_planetoid("citeseer")
    miss = torch.tensor(shipped.CITESEER_MISSING_TEST)
    test_index = d.test_mask.nonzero().view(-1)
    gaps = sorted(set(range(int(test_index.min()), int(test_index.max()) + 1)) - set(test_index.tolist()))
    assert gaps == list(shipped.CITESEER_MISSING_TEST) and len(gaps) == 15
    assert int(d.x[miss].abs().sum()) == 0 and d.y[miss].tolist() == [0] * 15
    assert not (d.train_mask | d.val_mask | d.test_mask)[miss].any()
    deg = torch.bincount(d.edge_index[0], minlength=d.num_nodes)
    assert deg[miss].tolist() == [1] * 8 + [2] + [1] * 6   # cited or citing: 16 edges
    assert int((deg == 0).sum()) == 48   # isolated nodes, none of them placeholders
    # every other node has a non-zero feature row
    assert int((d.x.abs().sum(1) == 0).sum()) == 15
    assert (int(d.train_mask.sum()), int(d.val_mask.sum()), int(d.test_mask.sum())) == (120, 500, 1000)


@pytest.mark.skipif(not (PLANETOID / "CiteSeer" / "raw").exists(), reason="no Planetoid copy to compare with")
def test_shipped_copy_equals_torch_geometric_planetoid(tmp_path):
    """torch_geometric.datasets.Planetoid on the raw files (copied: it writes processed/) gives the same graph."""
    from torch_geometric.datasets import Planetoid

    shutil.copytree(PLANETOID / "CiteSeer", tmp_path / "CiteSeer")
    ref = Planetoid(str(tmp_path), "CiteSeer")[0]
    ship = shipped.read_shipped_planetoid("citeseer")
    assert torch.equal(ref.x, ship.x) and torch.equal(ref.y, ship.y)
    assert torch.equal(ref.edge_index, ship.edge_index)
    for m in ("train_mask", "val_mask", "test_mask"):
        assert torch.equal(getattr(ref, m), getattr(ship, m))
    user = load_planetoid("CiteSeer", root=tmp_path)   # a user copy is preferred to the shipped one
    assert "shipped with clkit" not in user.source and str(tmp_path) in user.source
    assert torch.equal(user.edge_index, ship.edge_index)


def test_altered_file_is_refused(tmp_path, monkeypatch):
    import gzip

    fake = tmp_path / "citeseer"
    shutil.copytree(CS_DIR, fake)
    with gzip.open(fake / "ind.citeseer.graph.gz", "wb") as f:
        f.write(b"not the graph")
    monkeypatch.setattr(shipped, "shipped_planetoid_dir", lambda name="cora": fake)
    with pytest.raises(ValueError, match="SHA-256"):
        shipped.read_shipped_planetoid("citeseer")


def test_nothing_in_clkit_reads_shared():
    for py in (ROOT / "clkit").rglob("*.py"):
        assert "shared/data" not in py.read_text(), py
