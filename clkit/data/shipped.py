"""Graph data shipped inside the clkit package: Planetoid Cora, readable offline.

The eight raw Planetoid files of Cora (``ind.cora.{x,y,tx,ty,allx,ally,graph,test.index}``,
576 KB; 124 KB gzipped) are package data under ``clkit/data/planetoid/cora/``, with
the licence (MIT, Copyright (c) 2016 Zhilin Yang -- the licence of the
``kimiyoung/planetoid`` repository that torch-geometric downloads them from) and
their provenance (``PROVENANCE.md``: McCallum et al.'s Cora as released by LINQS,
Sen et al. 2008, preprocessed by Yang, Cohen & Salakhutdinov, ICML 2016) beside
them. See ``docs/cora.md``.

Reading needs no network and writes no cache: the files are decompressed into a
temporary folder, checked against their SHA-256, read with torch-geometric's own
Planetoid reader (:func:`torch_geometric.io.read_planetoid_data`) and the folder is
deleted. :func:`clkit.data.graphs.load_planetoid` falls back to this copy when the
user's data folders have none.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
import tempfile
from pathlib import Path

from .._validate import check_choice

__all__ = ["SHIPPED_PLANETOID", "PLANETOID_FILES", "shipped_planetoid_dir", "has_shipped_planetoid",
           "read_shipped_planetoid"]

#: suffixes of the eight Planetoid raw files (``ind.<name>.<suffix>``)
PLANETOID_FILES = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")

#: name -> SHA-256 of each *uncompressed* raw file, identical to the files of
#: github.com/kimiyoung/planetoid (commit af6abf4, ``data/``) that
#: ``torch_geometric.datasets.Planetoid`` downloads.
SHIPPED_PLANETOID = {
    "cora": {
        "allx": "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
        "ally": "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
        "graph": "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
        "test.index": "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
        "tx": "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
        "ty": "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
        "x": "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
        "y": "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
    },
}


def shipped_planetoid_dir(name: str = "cora") -> Path:
    """Folder of the shipped copy of Planetoid ``name`` (inside the installed package).

    Examples
    --------
    >>> shipped_planetoid_dir("cora").parts[-3:]
    ('data', 'planetoid', 'cora')
    """
    name = check_choice("name", str(name).lower(), list(SHIPPED_PLANETOID))
    return Path(__file__).resolve().parent / "planetoid" / name


def has_shipped_planetoid(name: str) -> bool:
    """Whether all eight gzipped raw files of ``name`` are shipped (any name; False if not shipped).

    Examples
    --------
    >>> has_shipped_planetoid("Cora"), has_shipped_planetoid("PubMed")
    (True, False)
    """
    key = str(name).lower()
    if key not in SHIPPED_PLANETOID:
        return False
    d = shipped_planetoid_dir(key)
    return all((d / f"ind.{key}.{s}.gz").is_file() for s in PLANETOID_FILES)


def read_shipped_planetoid(name: str = "cora"):
    """The shipped Planetoid graph ``name`` as torch-geometric reads it (no network, no cache).

    Parameters
    ----------
    name : {"cora"} (case-insensitive)

    Returns
    -------
    torch_geometric.data.Data
        ``x`` (num_nodes, num_features) float, ``edge_index`` (2, num_edges) int64 with
        both directions of every undirected edge, ``y`` (num_nodes,) int64 and the
        Planetoid ``train_mask`` / ``val_mask`` / ``test_mask``. Cora: 2708 nodes,
        1433 features, 7 classes, 10556 directed edges = 5278 undirected edges (the
        raw ``graph`` dict lists LINQS's 5429 citation links in both directions; 151
        pairs of papers cite each other, so 5278 distinct pairs).

    Raises
    ------
    ValueError
        When ``name`` is not shipped, or a shipped file is incomplete or altered
        (its SHA-256 differs from :data:`SHIPPED_PLANETOID`).

    Examples
    --------
    >>> d = read_shipped_planetoid("Cora")
    >>> d.num_nodes, d.x.shape[1], int(d.y.max()) + 1, d.edge_index.shape[1]
    (2708, 1433, 7, 10556)
    """
    key = check_choice("name", str(name).lower(), list(SHIPPED_PLANETOID))
    src = shipped_planetoid_dir(key)
    from torch_geometric.io import read_planetoid_data

    with tempfile.TemporaryDirectory(prefix=f"clkit-{key}-") as tmp:
        for suffix, digest in SHIPPED_PLANETOID[key].items():
            gz = src / f"ind.{key}.{suffix}.gz"
            if not gz.is_file():
                raise ValueError(f"shipped Planetoid {key!r} is incomplete: {gz} is missing; reinstall clkit")
            out = Path(tmp) / f"ind.{key}.{suffix}"
            with gzip.open(gz, "rb") as fin, open(out, "wb") as fout:
                shutil.copyfileobj(fin, fout)
            got = hashlib.sha256(out.read_bytes()).hexdigest()
            if got != digest:
                raise ValueError(f"shipped Planetoid file {gz} has SHA-256 {got}, expected {digest}; "
                                 "reinstall clkit")
        return read_planetoid_data(tmp, key)
