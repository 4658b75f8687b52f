"""Graph datasets for continual node classification (notebook 05_drift).

- **Offline default**: :func:`csbm`, a contextual stochastic block model --
  many classes, a tunable edge homophily (so heterophilous graphs such as
  Roman-Empire, h = 0.05, can be imitated as well as homophilous citation
  graphs, h ~ 0.6-0.8), class-dependent Gaussian features. Synthetic: the
  returned ``source`` says so.
- **Planetoid** Cora / CiteSeer through torch-geometric from raw files already on
  disk (no download is attempted: torch-geometric's downloader has no timeout).
  Cora and CiteSeer are also shipped inside the package (:mod:`clkit.data.shipped`,
  MIT licence, see ``docs/cora.md`` and ``docs/citeseer.md``): used when no user copy
  is found, and the returned
  ``source`` says which copy was read.
- **Online** (the paper's datasets): CoraFull, Reddit, Roman-Empire through
  torch-geometric and ogbn-arxiv through ``ogb``; each first checks that its
  download host answers within a few seconds and otherwise raises
  :class:`DatasetNotFoundError` at once. Never the default.

All loaders return a :class:`GraphData`; :func:`split_per_class` makes the
per-class train/test split that gives every latent task a test set.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .._validate import check_choice, check_int, check_real, check_type
from ._cache import DatasetNotFoundError, data_root
from ._pyg import import_pyg
from ._reads import record_read

__all__ = [
    "GraphData",
    "GRAPH_DATASETS",
    "ONLINE_GRAPH_DATASETS",
    "csbm",
    "edge_homophily",
    "split_per_class",
    "load_planetoid",
    "load_online_graph",
    "load_graph",
    "resolve_auto",
]

#: Datasets only reachable through their online loaders: name -> (host, how to get it)
ONLINE_GRAPH_DATASETS = {
    "corafull": ("github.com", "torch_geometric.datasets.CoraFull (downloads from github.com)"),
    "reddit": ("data.dgl.ai", "torch_geometric.datasets.Reddit (downloads from data.dgl.ai)"),
    "roman_empire": ("raw.githubusercontent.com",
                     "torch_geometric.datasets.HeterophilousGraphDataset('Roman-empire')"),
    "ogbn_arxiv": ("snap.stanford.edu", "`pip install ogb`; ogb.nodeproppred.PygNodePropPredDataset('ogbn-arxiv')"),
}
GRAPH_DATASETS = ["csbm", "cora", "citeseer", *ONLINE_GRAPH_DATASETS]


@dataclass
class GraphData:
    """A node-classification graph.

    Attributes
    ----------
    x : Tensor of float32, shape (num_nodes, num_features)
    edge_index : Tensor of int64, shape (2, num_edges)
        Directed edge list (both directions present for undirected graphs).
    y : Tensor of int64, shape (num_nodes,)
    name : str
    source : str
        Where the data came from ("synthetic: ..." for generated graphs).
    node_year : Tensor of int64, shape (num_nodes,), or None
        Each node's publication year where the dataset has one (ogbn-arxiv), for
        time-ordered streams (:func:`clkit.drift.streams.time_stream`).
    """

    x: torch.Tensor
    edge_index: torch.Tensor
    y: torch.Tensor
    name: str
    source: str
    node_year: torch.Tensor | None = None

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_classes(self) -> int:
        return int(self.y.max()) + 1

    def stats(self) -> dict:
        """Table-1-style statistics: nodes, edges (undirected), classes, homophily, average degree."""
        e = int(self.edge_index.shape[1])
        return {"num_nodes": self.num_nodes, "num_edges": e // 2, "num_classes": self.num_classes,
                "homophily": edge_homophily(self.edge_index, self.y), "avg_degree": e / self.num_nodes}


def edge_homophily(edge_index, y) -> float:
    """Fraction of edges joining two nodes of the same class (Table 1's h).

    Examples
    --------
    >>> edge_homophily(torch.tensor([[0, 1, 1], [1, 2, 0]]), torch.tensor([0, 0, 1]))
    0.6666666666666666
    """
    ei = torch.as_tensor(edge_index)
    y = torch.as_tensor(y)
    if ei.shape[1] == 0:
        return float("nan")
    return float((y[ei[0]] == y[ei[1]]).double().mean())


def csbm(num_nodes: int = 3000, num_classes: int = 20, *, avg_degree: float = 10.0, homophily: float = 0.7,
         num_features: int = 64, feature_signal: float = 1.0, class_imbalance: float = 0.0,
         seed: int = 0) -> GraphData:
    """Contextual stochastic block model: a synthetic many-class graph.

    Classes: sizes proportional to ``(c + 1) ** -class_imbalance`` (0 = equal;
    1 = Zipf-like long tail), every class at least 4 nodes, classes in shuffled
    node order. Features: ``x_i = m_{y_i} + eps_i``, class means
    ``m_c ~ N(0, feature_signal^2 / num_features * 4 I)`` and unit Gaussian noise,
    so a class's own mean is about ``2 * feature_signal`` noise-units away from
    another's. Edges: ``num_nodes * avg_degree / 2`` undirected edges; each picks
    a uniform source node, then with probability ``homophily`` a uniform node of
    the same class, else a uniform node of another class (the expected edge
    homophily is ``homophily``). Self-loops and duplicates are dropped.

    Parameters
    ----------
    num_nodes, num_classes : int
    avg_degree : float > 0
    homophily : float in [0, 1]
    num_features : int
    feature_signal : float >= 0
        0 makes features uninformative (only the graph carries the label).
    class_imbalance : float >= 0
    seed : int

    Returns
    -------
    GraphData (``source`` begins with ``"synthetic"``)

    Examples
    --------
    >>> g = csbm(400, 4, homophily=0.8, seed=0)
    >>> g.x.shape, g.num_classes, abs(g.stats()["homophily"] - 0.8) < 0.05
    (torch.Size([400, 64]), 4, True)
    """
    num_nodes = check_int("num_nodes", num_nodes, low=1)
    num_classes = check_int("num_classes", num_classes, low=2)
    if num_nodes < 4 * num_classes:
        raise ValueError(f"num_nodes must be >= 4 * num_classes = {4 * num_classes}, got {num_nodes}")
    avg_degree = check_real("avg_degree", avg_degree, low=0, low_open=True)
    homophily = check_real("homophily", homophily, low=0, high=1)
    num_features = check_int("num_features", num_features, low=1)
    feature_signal = check_real("feature_signal", feature_signal, low=0)
    class_imbalance = check_real("class_imbalance", class_imbalance, low=0)
    rng = np.random.default_rng(seed)
    share = (np.arange(1, num_classes + 1, dtype=float)) ** -class_imbalance
    extra = num_nodes - 4 * num_classes
    sizes = 4 + np.floor(share / share.sum() * extra).astype(np.int64)
    sizes[: num_nodes - sizes.sum()] += 1
    y = rng.permutation(np.repeat(np.arange(num_classes), sizes))
    means = rng.normal(0.0, 2.0 * feature_signal / np.sqrt(num_features), size=(num_classes, num_features))
    x = means[y] + rng.normal(size=(num_nodes, num_features))
    # edges
    m = int(round(num_nodes * avg_degree / 2))
    by_class = np.argsort(y, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)])
    src = rng.integers(0, num_nodes, m)
    same = rng.random(m) < homophily
    cls = np.where(same, y[src], (y[src] + rng.integers(1, num_classes, m)) % num_classes)
    dst = by_class[starts[cls] + np.floor(rng.random(m) * sizes[cls]).astype(np.int64)]
    keep = src != dst
    pairs = np.unique(np.sort(np.stack([src[keep], dst[keep]], 1), axis=1), axis=0)
    ei = np.concatenate([pairs, pairs[:, ::-1]], 0).T
    return GraphData(torch.tensor(x, dtype=torch.float32), torch.tensor(np.ascontiguousarray(ei), dtype=torch.int64),
                     torch.tensor(y, dtype=torch.int64), "csbm",
                     f"synthetic: contextual SBM (n={num_nodes}, classes={num_classes}, h={homophily}, "
                     f"degree={avg_degree}, seed={seed})")


def split_per_class(y, test_fraction: float = 0.2, seed: int = 0):
    """Per-class random train/test split: every class gets at least one node of each.

    Parameters
    ----------
    y : array_like of int, shape (N,)
        Labels (negative = unlabelled, left out of both sets).
    test_fraction : float in (0, 1)
    seed : int

    Returns
    -------
    train_idx, test_idx : ndarray of int64 (sorted)

    Examples
    --------
    >>> tr, te = split_per_class([0, 0, 0, 0, 1, 1], test_fraction=0.25)
    >>> len(tr), len(te), sorted(set(np.array([0, 0, 0, 0, 1, 1])[te].tolist()))
    (4, 2, [0, 1])
    """
    y = np.asarray(y)
    test_fraction = check_real("test_fraction", test_fraction, low=0, high=1, low_open=True, high_open=True)
    rng = np.random.default_rng(seed)
    labelled = np.flatnonzero(y >= 0)
    counts = np.bincount(y[labelled])
    small = np.flatnonzero((counts > 0) & (counts < 2))
    if small.size:
        raise ValueError(f"classes {small.tolist()} have fewer than 2 nodes; cannot give them train and test nodes")
    # random order within class: sort by (class, random key)
    order = labelled[np.lexsort((rng.random(labelled.size), y[labelled]))]
    rank = np.arange(order.size) - np.repeat(np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    n_test = np.clip(np.round(counts * test_fraction).astype(np.int64), 1, counts - 1)
    is_test = rank < n_test[y[order]]
    return np.sort(order[~is_test]), np.sort(order[is_test])


def _from_pyg(data, name: str, source: str) -> GraphData:
    y = data.y.view(-1).long()
    year = getattr(data, "node_year", None)
    year = None if year is None else torch.as_tensor(year).view(-1).long()
    return GraphData(data.x.float(), data.edge_index.long(), y, name, source, year)


def load_planetoid(name: str = "Cora", root=None) -> GraphData:
    """Cora or CiteSeer (Planetoid) through torch-geometric, offline.

    Looks for ``<dir>/<name>/raw/ind.<name>.*`` in ``root`` (when given), then
    ``data_root()/planetoid``, and reads the first copy found with
    ``torch_geometric.datasets.Planetoid`` (which writes ``processed/`` beside
    ``raw/``, so that folder must be writable). When neither has the files and the
    dataset is shipped with clkit (Cora and CiteSeer, :mod:`clkit.data.shipped`), the
    shipped copy is read instead (no network, nothing written); ``source`` names the copy
    used and where a user copy was looked for. No download is attempted. Both copies go
    through torch-geometric's Planetoid reader, so CiteSeer's 15 ids missing from its
    test index come out with zero features and label 0 either way
    (:data:`clkit.data.shipped.CITESEER_MISSING_TEST`).

    Examples
    --------
    >>> g = load_planetoid("Cora", root="/nonexistent")
    >>> g.num_nodes, g.num_classes, g.source.startswith("Planetoid Cora shipped with clkit")
    (2708, 7, True)
    >>> c = load_planetoid("CiteSeer", root="/nonexistent")
    >>> c.num_nodes, c.num_classes, c.stats()["num_edges"], c.source.startswith("Planetoid CiteSeer shipped")
    (3327, 6, 4552, True)
    >>> load_planetoid("PubMed")   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: name must be one of ['Cora', 'CiteSeer'], got 'PubMed'...
    """
    check_choice("name", name, ["Cora", "CiteSeer"])
    dirs = ([Path(root)] if root is not None else []) + [data_root() / "planetoid"]
    looked = []
    for d in dirs:
        raw = d / name / "raw"
        looked.append(raw)
        if (raw / f"ind.{name.lower()}.graph").exists():
            Planetoid = import_pyg("torch_geometric.datasets").Planetoid
            ds = Planetoid(str(d), name)
            for suffix in ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"):
                record_read(raw / f"ind.{name.lower()}.{suffix}")
            return _from_pyg(ds[0], name.lower(), f"Planetoid {name} (torch-geometric) from {raw}")
    from .shipped import has_shipped_planetoid, read_shipped_planetoid, shipped_planetoid_dir

    if has_shipped_planetoid(name):
        return _from_pyg(read_shipped_planetoid(name), name.lower(),
                         f"Planetoid {name} shipped with clkit (MIT, github.com/kimiyoung/planetoid) from "
                         f"{shipped_planetoid_dir(name)}; no user copy in {', '.join(map(str, looked))}")
    raise DatasetNotFoundError(name, looked, "Put the Planetoid raw files (ind.<name>.x, .y, .graph, ...) under "
                               "<dir>/<name>/raw/ and pass root=<dir>, or set CLKIT_DATA.")


def _host_reachable(host: str, timeout: float) -> bool:
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


#: the raw files ``ogb`` processes into ogbn-arxiv (``<root>/ogbn_arxiv/raw/<name>.csv.gz``)
OGBN_ARXIV_RAW = ("edge", "node-feat", "node-label", "node_year", "num-node-list", "num-edge-list")


def _ogb_safe_globals():
    """Allow torch-geometric's storage classes in ``torch.load(weights_only=True)`` (ogb's processed file)."""
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import GlobalStorage

    return torch.serialization.safe_globals([DataEdgeAttr, DataTensorAttr, GlobalStorage])


def load_online_graph(name: str, root=None, timeout: float = 3.0) -> GraphData:
    """One of the paper's datasets through its ecosystem loader (needs network on first use).

    ``name`` in ``"corafull"``, ``"reddit"``, ``"roman_empire"``, ``"ogbn_arxiv"``.
    A copy already under ``root`` (default ``data_root()/<name>``) is used without
    network: the raw files torch-geometric reads (it downloads only when one is
    missing; e.g. CoraFull's ``<root>/cora/raw/cora.npz``, placed there by hand or
    by :func:`clkit.data.fixtures.write`), or for ogbn-arxiv a processed copy or
    the raw CSVs ``ogb`` processes (``<root>/ogbn_arxiv/raw/*.csv.gz`` beside
    ``RELEASE_v1.txt``). ogbn-arxiv keeps each paper's year (``GraphData.node_year``).
    Otherwise the download host must answer within ``timeout`` seconds, else
    :class:`DatasetNotFoundError` (naming where it looked) is raised at once.
    """
    check_choice("name", name, list(ONLINE_GRAPH_DATASETS))
    host, how = ONLINE_GRAPH_DATASETS[name]
    root = Path(root) if root is not None else data_root() / name
    raw = [root / f for f in {"corafull": ["cora/raw/cora.npz"], "roman_empire": ["roman_empire/raw/roman_empire.npz"],
                              "reddit": ["raw/reddit_data.npz", "raw/reddit_graph.npz"],
                              "ogbn_arxiv": [f"ogbn_arxiv/raw/{f}.csv.gz" for f in OGBN_ARXIV_RAW]}.get(name, [])]
    processed = root.exists() and any(root.rglob("processed/*.pt"))
    local = all(f.is_file() for f in raw) or (name == "ogbn_arxiv" and processed)
    if not local and not _host_reachable(host, timeout):
        offline = f"; or copy its raw files to {', '.join(map(str, raw))}" if raw else ""
        raise DatasetNotFoundError(name, [*(raw or [root]), f"https://{host} (unreachable within {timeout:g} s)"],
                                   f"Run once with network access: {how}{offline}.")
    try:
        import_pyg()  # ogb imports it too
        if name == "corafull":
            from torch_geometric.datasets import CoraFull

            ds = CoraFull(str(root))
        elif name == "reddit":
            from torch_geometric.datasets import Reddit

            ds = Reddit(str(root))
        elif name == "roman_empire":
            from torch_geometric.datasets import HeterophilousGraphDataset

            ds = HeterophilousGraphDataset(str(root), "Roman-empire")
        else:
            from ogb.nodeproppred import PygNodePropPredDataset

            with _ogb_safe_globals():   # ogb's torch.load(processed) predates torch's weights_only default
                ds = PygNodePropPredDataset("ogbn-arxiv", root=str(root))
        data = ds[0]
        for f in raw:
            record_read(f)
    except Exception as exc:  # network, missing ogb, corrupt download
        raise DatasetNotFoundError(name, [root, f"https://{host}"], f"Run once with network access: {how}.",
                                   exc) from exc
    if name == "ogbn_arxiv":  # directed citations: make them undirected as GCN expects
        to_undirected = import_pyg("torch_geometric.utils").to_undirected

        data.edge_index = to_undirected(data.edge_index)
    return _from_pyg(data, name, f"{name} via {type(ds).__name__} from {root}")


def resolve_auto(root=None) -> str:
    """``"cora"`` when real Cora can be read offline, else ``"csbm"``.

    Cora is readable when its Planetoid raw files are in ``root`` or the clkit data
    cache, or when the copy shipped with clkit is installed (:mod:`clkit.data.shipped`);
    :func:`load_planetoid` says which copy it read.

    Examples
    --------
    >>> resolve_auto(root="/nonexistent")
    'cora'
    """
    from .shipped import has_shipped_planetoid

    dirs = ([Path(root)] if root else []) + [data_root() / "planetoid"]
    found = any((d / "Cora" / "raw" / "ind.cora.graph").exists() for d in dirs)
    return "cora" if found or has_shipped_planetoid("Cora") else "csbm"


def load_graph(dataset: str = "csbm", *, root=None, seed: int = 0, **csbm_kwargs) -> GraphData:
    """Load ``dataset`` by name: ``"csbm"`` (offline default), ``"cora"``, ``"citeseer"`` or an online one.

    ``"auto"`` is real Cora (a user copy, else the copy shipped with clkit;
    :func:`resolve_auto`), the contextual SBM only when neither can be read.

    Examples
    --------
    >>> load_graph("csbm", num_nodes=200, num_classes=4, seed=1).name
    'csbm'
    """
    check_type("dataset", dataset, str)
    check_choice("dataset", dataset, ["auto", *GRAPH_DATASETS])
    if dataset == "auto":
        dataset = resolve_auto(root)
    if dataset == "csbm":
        return csbm(seed=seed, **csbm_kwargs)
    if dataset in ("cora", "citeseer"):
        return load_planetoid("Cora" if dataset == "cora" else "CiteSeer", root=root)
    return load_online_graph(dataset, root=root)
