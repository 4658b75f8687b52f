"""clkit.data.fixtures.graphs: Reddit's and Roman-Empire's raw files, read by torch-geometric's own loaders.

Each fabricated dataset goes through the real loader path -- ``load_online_graph`` ->
``torch_geometric.datasets.Reddit`` / ``HeterophilousGraphDataset`` -> their ``process()`` --
offline: every test forbids sockets and points the clkit data cache at a temporary folder.
"""

import numpy as np
import pytest
import torch

from clkit.data import fixtures, graphs
from clkit.data.fixtures.graphs import (REDDIT_HOMOPHILY, ROMAN_EMPIRE_AVG_DEGREE, ROMAN_EMPIRE_HOMOPHILY,
                                        write_reddit, write_roman_empire)
from clkit.data.graphs import edge_homophily, load_online_graph
from test_data_fixtures_graph_clip import offline  # noqa: F401 -- autouse: the cache in tmp_path, no socket

REDDIT = dict(num_nodes=300, num_classes=7, num_features=24, avg_degree=20.0)
ROMAN = dict(num_nodes=400, num_classes=18, num_features=30)


@pytest.fixture(autouse=True)
def no_host_probe(offline, monkeypatch):
    """The loaders find their raw files and never ask whether the download host answers."""
    monkeypatch.setattr(graphs, "_host_reachable", lambda host, timeout: pytest.fail("network probe"))


def _undirected(ei):
    return set(map(tuple, ei.T.tolist())) == set(map(tuple, ei.flip(0).T.tolist()))


def _centroid_accuracy(g) -> float:
    """Nearest class mean on held-out nodes: the features carry the class."""
    x, y = g.x.numpy(), g.y.numpy()
    test = np.random.default_rng(0).random(g.num_nodes) < 0.3
    means = np.stack([x[~test & (y == c)].mean(0) for c in range(g.num_classes)])
    dist = ((x[test, None, :] - means[None]) ** 2).sum(-1)
    return float((dist.argmin(1) == y[test]).mean())


# --------------------------------------------------------------------------- Reddit

def test_reddit_is_read_by_torch_geometric_offline(tmp_path):
    raw = write_reddit(tmp_path, seed=0, **REDDIT)
    assert raw == tmp_path / "reddit" / "raw"
    assert sorted(p.name for p in raw.iterdir()) == ["reddit_data.npz", "reddit_graph.npz"]
    with np.load(raw / "reddit_data.npz") as f:
        assert (f["feature"].dtype, f["label"].dtype, f["feature"].shape) == (np.float32, np.int64, (300, 24))
        assert set(np.unique(f["node_types"])) == {1, 2, 3}
    g = load_online_graph("reddit")
    assert g.source == f"reddit via Reddit from {tmp_path / 'reddit'}"
    assert (g.num_nodes, g.num_classes, g.x.shape[1]) == (300, 7, 24)
    assert g.x.dtype == torch.float32 and g.y.dtype == torch.int64
    ei = g.edge_index
    assert (ei[0] != ei[1]).all() and _undirected(ei)   # stored both ways, as the real file; no self-loop
    assert 14 < g.stats()["avg_degree"] < 21
    assert REDDIT_HOMOPHILY - 0.1 < edge_homophily(ei, g.y) < REDDIT_HOMOPHILY + 0.05
    assert _centroid_accuracy(g) > 0.5   # chance: 1/7
    # the loader kept the real split's masks from node_types (torch-geometric's process())
    data = torch.load(tmp_path / "reddit" / "processed" / "data.pt", weights_only=False)[0]
    assert {"train_mask", "val_mask", "test_mask"} <= set(data)
    # a second load reads the processed copy; rewriting with another seed replaces it
    again = load_online_graph("reddit")
    assert torch.equal(again.edge_index, g.edge_index) and torch.equal(again.x, g.x)
    write_reddit(tmp_path, seed=1, **REDDIT)
    assert not (tmp_path / "reddit" / "processed").exists()
    assert not torch.equal(load_online_graph("reddit").y, g.y)


def test_reddit_is_deterministic_for_a_seed(tmp_path):
    a = write_reddit(tmp_path / "a", seed=3, **REDDIT)
    b = fixtures.write("reddit", tmp_path / "b", seed=3, **REDDIT)
    c = write_reddit(tmp_path / "c", seed=4, **REDDIT)
    for name in ("reddit_data.npz", "reddit_graph.npz"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
        assert (a / name).read_bytes() != (c / name).read_bytes()


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_classes=42), r"num_classes must be an integer in \[2, 41\], got 42"),
    (dict(num_nodes=50, num_classes=6), r"num_nodes must be an integer in \[60, 232965\], got 50"),
    (dict(num_features=603), r"num_features must be an integer in \[2, 602\], got 603"),
    (dict(num_nodes=500, avg_degree=0.0), r"avg_degree must be a number in \(0, 125.0\], got 0.0"),
])
def test_reddit_refuses_bad_sizes_naming_them(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        write_reddit(tmp_path, **kwargs)


# --------------------------------------------------------------------------- Roman-Empire

def test_roman_empire_is_read_by_torch_geometric_offline(tmp_path):
    path = write_roman_empire(tmp_path, seed=0, **ROMAN)
    assert path == tmp_path / "roman_empire" / "roman_empire" / "raw" / "roman_empire.npz"
    with np.load(path) as f:
        assert sorted(f) == ["edges", "node_features", "node_labels", "test_masks", "train_masks", "val_masks"]
        assert f["edges"].shape[1] == 2 and (f["edges"][:, 0] < f["edges"][:, 1]).all()   # each edge once
        masks = np.stack([f["train_masks"], f["val_masks"], f["test_masks"]])
        assert masks.shape == (3, 10, 400) and masks.dtype == bool
        assert (masks.sum(0) == 1).all()   # ten splits, each node in exactly one part of each
        assert masks[0].sum(1).tolist() == [200] * 10 and masks[1].sum(1).tolist() == [100] * 10
    g = load_online_graph("roman_empire")
    assert g.source == f"roman_empire via HeterophilousGraphDataset from {tmp_path / 'roman_empire'}"
    assert (g.num_nodes, g.num_classes, g.x.shape[1]) == (400, 18, 30)
    assert g.x.dtype == torch.float32 and g.y.dtype == torch.int64
    assert int(torch.bincount(g.y).min()) >= 4
    ei = g.edge_index
    assert (ei[0] != ei[1]).all() and _undirected(ei)   # torch-geometric made the edges undirected
    assert abs(g.stats()["avg_degree"] - ROMAN_EMPIRE_AVG_DEGREE) < 0.3
    assert edge_homophily(ei, g.y) < ROMAN_EMPIRE_HOMOPHILY + 0.08   # heterophilous, as the real graph
    assert _centroid_accuracy(g) > 0.3   # chance: 1/18
    data = torch.load(tmp_path / "roman_empire" / "roman_empire" / "processed" / "data.pt", weights_only=False)[0]
    assert tuple(data["train_mask"].shape) == (400, 10)   # transposed by torch-geometric


def test_roman_empire_is_deterministic_for_a_seed(tmp_path):
    a = write_roman_empire(tmp_path / "a", seed=3, **ROMAN).read_bytes()
    b = fixtures.write("roman_empire", tmp_path / "b", seed=3, **ROMAN).read_bytes()
    c = write_roman_empire(tmp_path / "c", seed=4, **ROMAN).read_bytes()
    assert a == b and a != c


def test_roman_empire_refuses_bad_sizes_naming_them(tmp_path):
    with pytest.raises(ValueError, match=r"num_classes must be an integer in \[2, 18\], got 19"):
        write_roman_empire(tmp_path, num_classes=19)
    with pytest.raises(ValueError, match=r"num_features must be an integer in \[2, 300\], got 301"):
        write_roman_empire(tmp_path, num_features=301)


# --------------------------------------------------------------------------- the rehearsal's sizes

@pytest.mark.parametrize("name", ["ogbn_arxiv", "reddit", "roman_empire"])
def test_rehearsal_sizes_load_with_three_latent_tasks(tmp_path, name):
    """At notebook 05's rehearsal sizes every dataset loads through its real loader and makes at least three
    latent tasks of two classes, each class with stream and test nodes under both protocols."""
    import clkit.drift as drift
    from clkit.drift.rehearsal import FIXTURE_SIZES

    fixtures.write(name, tmp_path, seed=0, **FIXTURE_SIZES[name])
    g = load_online_graph(name)
    assert g.num_nodes == FIXTURE_SIZES[name]["num_nodes"] and g.num_classes == FIXTURE_SIZES[name]["num_classes"]
    for protocol in ("text", "authors"):
        _, split = drift.protocol_data(g, 2, 0.2, seed=1, protocol=protocol)
        assert split.num_tasks >= 3 and all(len(t) > 0 for t in split.task_nodes)
