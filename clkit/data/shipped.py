"""Graph data shipped inside the clkit package: Planetoid Cora and CiteSeer, readable offline.

The eight raw Planetoid files of each graph (``ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}``;
Cora 572 KB, 124 KB gzipped; CiteSeer 1,036 KB, 226 KB gzipped) are package data under
``clkit/data/planetoid/<name>/``, with the licence (MIT, Copyright (c) 2016 Zhilin Yang
-- the licence of the ``kimiyoung/planetoid`` repository that torch-geometric downloads
them from) and their provenance (``PROVENANCE.md``: McCallum et al.'s Cora and Giles
et al.'s CiteSeer as released by LINQS, Sen et al. 2008, preprocessed by Yang, Cohen &
Salakhutdinov, ICML 2016) beside them. See ``docs/cora.md`` and ``docs/citeseer.md``.

CiteSeer's known quirk: its ``test.index`` skips 15 ids of the range 2312..3326 (papers
with no features or label in the release), so ``tx`` / ``ty`` hold 1000 rows for 1015
positions. torch-geometric's reader -- used here, unchanged -- inserts a zero feature
row and a zero one-hot label for each missing id, so those 15 nodes have all-zero
features, read as class 0 (the argmax of a zero row), keep their edges (16 in all) and
are in no split mask (:data:`CITESEER_MISSING_TEST`).

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
from ._reads import record_read

__all__ = ["SHIPPED_PLANETOID", "PLANETOID_FILES", "CITESEER_MISSING_TEST", "shipped_planetoid_dir",
           "has_shipped_planetoid", "read_shipped_planetoid"]

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
    "citeseer": {
        "allx": "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",
        "ally": "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",
        "graph": "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",
        "test.index": "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4",
        "tx": "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",
        "ty": "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",
        "x": "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",
        "y": "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",
    },
}

#: CiteSeer's node ids missing from its ``test.index`` (inside its range 2312..3326): torch-geometric's
#: reader gives them zero features and label 0 (a zero one-hot row) and no split mask; they keep their edges
CITESEER_MISSING_TEST = (2407, 2489, 2553, 2682, 2781, 2953, 3042, 3063, 3212, 3214, 3250, 3292, 3305, 3306,
                         3309)


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
    name : {"cora", "citeseer"} (case-insensitive)

    Returns
    -------
    torch_geometric.data.Data
        ``x`` (num_nodes, num_features) float, ``edge_index`` (2, num_edges) int64 with
        both directions of every undirected edge, ``y`` (num_nodes,) int64 and the
        Planetoid ``train_mask`` / ``val_mask`` / ``test_mask``. Cora: 2708 nodes,
        1433 features, 7 classes, 10556 directed edges = 5278 undirected edges (the
        raw ``graph`` dict lists LINQS's 5429 citation links in both directions; 151
        pairs of papers cite each other, so 5278 distinct pairs). CiteSeer: 3327 nodes,
        3703 features, 6 classes, 9104 directed edges = 4552 undirected edges (the raw
        ``graph`` dict lists 9464 entries, with self-loops and repeats; torch-geometric
        drops both), 48 nodes without edges; the 15 ids of
        :data:`CITESEER_MISSING_TEST` have zero features and label 0 (see the module
        docstring).

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
    >>> c = read_shipped_planetoid("citeseer")
    >>> c.num_nodes, c.x.shape[1], int(c.y.max()) + 1, c.edge_index.shape[1] // 2
    (3327, 3703, 6, 4552)
    """
    key = check_choice("name", str(name).lower(), list(SHIPPED_PLANETOID))
    src = shipped_planetoid_dir(key)
    from ._pyg import import_pyg

    read_planetoid_data = import_pyg("torch_geometric.io").read_planetoid_data

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
            record_read(gz, uncompressed_sha256=got)
        return read_planetoid_data(tmp, key)
