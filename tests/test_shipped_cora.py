"""Real Cora shipped inside the package (issue 25, item 5): offline, no cache, same graph."""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch

from clkit.data import shipped
from clkit.data.graphs import load_graph, load_planetoid, resolve_auto

ROOT = Path(__file__).resolve().parents[1]
PLANETOID = ROOT.parent / "shared" / "data" / "planetoid"
if not PLANETOID.exists():
    PLANETOID = Path("/work/shared/data/planetoid")
CORA_DIR = shipped.shipped_planetoid_dir("cora")
SHIPPED = sorted(p.name for p in CORA_DIR.iterdir() if p.is_file())


def test_shipped_files_with_licence_and_provenance():
    gz = [f"ind.cora.{s}.gz" for s in shipped.PLANETOID_FILES]
    assert SHIPPED == sorted(gz + ["LICENSE", "PROVENANCE.md"])
    assert "MIT License" in (CORA_DIR / "LICENSE").read_text() and "Zhilin Yang" in (CORA_DIR / "LICENSE").read_text()
    prov = (CORA_DIR / "PROVENANCE.md").read_text()
    assert "kimiyoung/planetoid" in prov and "Sen" in prov and "McCallum" in prov
    assert sum((CORA_DIR / f).stat().st_size for f in gz) < 200_000  # small: ~124 KB gzipped


def test_package_data_globs_cover_every_shipped_file():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = conf["tool"]["setuptools"]["package-data"]["clkit.data"]
    rel = [f"planetoid/cora/{f}" for f in SHIPPED]
    assert all(any(fnmatch.fnmatch(r, g) for g in globs) for r in rel)


def test_shipped_files_are_tracked_by_git():
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", str(CORA_DIR.relative_to(ROOT))], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    assert sorted(Path(p).name for p in out) == SHIPPED


def test_shipped_cora_is_planetoid_cora():
    g = load_planetoid("Cora", root="/nonexistent")
    assert (g.num_nodes, g.x.shape[1], g.num_classes, g.edge_index.shape[1]) == (2708, 1433, 7, 10556)
    assert g.stats()["num_edges"] == 5278
    assert torch.bincount(g.y).tolist() == [351, 217, 418, 818, 426, 298, 180]
    assert 0.80 < g.stats()["homophily"] < 0.82
    assert "shipped with clkit" in g.source and "/nonexistent/Cora/raw" in g.source


@pytest.mark.skipif(not (PLANETOID / "Cora" / "raw").exists(), reason="no Planetoid copy to compare with")
def test_shipped_copy_equals_the_downloaded_one(tmp_path):
    shutil.copytree(PLANETOID / "Cora", tmp_path / "Cora")
    user = load_planetoid("Cora", root=tmp_path)
    ship = load_planetoid("Cora", root=tmp_path / "elsewhere")
    assert "shipped with clkit" not in user.source and str(tmp_path) in user.source
    assert torch.equal(user.x, ship.x) and torch.equal(user.y, ship.y)
    assert torch.equal(user.edge_index, ship.edge_index)


def test_auto_is_real_cora():
    assert resolve_auto("/nonexistent") == "cora"
    assert load_graph("auto", root="/nonexistent").name == "cora"


def test_altered_file_is_refused(tmp_path, monkeypatch):
    fake = tmp_path / "cora"
    shutil.copytree(CORA_DIR, fake)
    import gzip

    with gzip.open(fake / "ind.cora.y.gz", "wb") as f:
        f.write(b"not the labels")
    monkeypatch.setattr(shipped, "shipped_planetoid_dir", lambda name="cora": fake)
    with pytest.raises(ValueError, match="SHA-256"):
        shipped.read_shipped_planetoid("cora")
    with pytest.raises(ValueError, match="name must be one of"):
        shipped.read_shipped_planetoid("pubmed")


_OFFLINE = """
import socket
def _no_network(*a, **k):
    raise OSError("network disabled in this test")
socket.socket.connect = _no_network
socket.create_connection = _no_network
from clkit.data.graphs import load_graph, resolve_auto
g = load_graph(resolve_auto())
print(g.name, g.num_nodes, g.num_classes, g.edge_index.shape[1])
print(g.source)
"""


def test_fresh_clone_loads_cora_offline_without_cache(tmp_path):
    """Only the package's tracked files, an empty data cache, sockets disabled: real Cora, nothing written."""
    clone = tmp_path / "clone"
    shutil.copytree(ROOT / "clkit", clone / "clkit", ignore=shutil.ignore_patterns("__pycache__"))
    data, home = tmp_path / "data", tmp_path / "home"
    data.mkdir()
    home.mkdir()
    env = {**os.environ, "PYTHONPATH": str(clone), "CLKIT_DATA": str(data), "HOME": str(home),
           "XDG_CACHE_HOME": str(home / ".cache"), "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    out = subprocess.run([sys.executable, "-c", _OFFLINE], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    first, source = out.stdout.strip().splitlines()[-2:]
    assert first == "cora 2708 7 10556"
    assert source.startswith("Planetoid Cora shipped with clkit") and str(clone / "clkit") in source
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if not p.is_relative_to(home))
    assert after == [p for p in before if not (tmp_path / p).is_relative_to(home)]  # no cache, no processed/
