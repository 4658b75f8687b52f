"""clkit.data.graphs and clkit.models.gcn."""

import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from clkit.data import DatasetNotFoundError
from clkit.data import graphs
from clkit.data.graphs import csbm, edge_homophily, load_graph, load_online_graph, load_planetoid, split_per_class
from clkit.models.gcn import GCN

PLANETOID = Path(__file__).resolve().parents[2] / "shared" / "data" / "planetoid"
if not PLANETOID.exists():
    PLANETOID = Path("/work/shared/data/planetoid")


@pytest.mark.parametrize("h", [0.05, 0.5, 0.8])
def test_csbm_homophily_is_tunable(h):
    g = csbm(3000, 20, homophily=h, avg_degree=10, seed=0)
    assert abs(edge_homophily(g.edge_index, g.y) - h) < 0.03
    assert g.num_classes == 20 and g.source.startswith("synthetic")
    ei = g.edge_index
    assert (ei[0] != ei[1]).all()
    # undirected: every edge present in both directions
    fwd = set(map(tuple, ei.T.tolist()))
    assert all((b, a) in fwd for a, b in list(fwd)[:500])


def test_csbm_features_carry_the_class_only_when_asked():
    def centroid_acc(signal):
        g = csbm(2000, 10, feature_signal=signal, seed=1)
        x, y = g.x.numpy(), g.y.numpy()
        means = np.stack([x[y == c].mean(0) for c in range(10)])
        return (np.argmin(((x[:, None] - means[None]) ** 2).sum(-1), 1) == y).mean()

    assert centroid_acc(2.0) > 0.9
    assert centroid_acc(0.0) < 0.25


def test_csbm_imbalance_and_determinism():
    a, b = csbm(1000, 10, class_imbalance=1.0, seed=3), csbm(1000, 10, class_imbalance=1.0, seed=3)
    counts = np.bincount(a.y.numpy())
    assert counts[0] > 3 * counts[-1] and counts.min() >= 4
    assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x)


def test_split_per_class_gives_every_class_train_and_test():
    y = np.repeat(np.arange(6), [2, 3, 10, 50, 7, 4])
    tr, te = split_per_class(y, 0.2, seed=0)
    assert len(np.intersect1d(tr, te)) == 0 and len(tr) + len(te) == len(y)
    assert set(y[tr]) == set(range(6)) and set(y[te]) == set(range(6))
    assert (y[te] == 3).sum() == 10
    with pytest.raises(ValueError, match="fewer than 2 nodes"):
        split_per_class([0, 1, 1], 0.5)
    with pytest.raises(ValueError, match="test_fraction"):
        split_per_class(y, 1.0)


@pytest.mark.skipif(not PLANETOID.exists(), reason="shared Planetoid raw files not present")
@pytest.mark.parametrize("name, n, c", [("Cora", 2708, 7), ("CiteSeer", 3327, 6)])
def test_planetoid_from_a_copy(tmp_path, name, n, c):
    shutil.copytree(PLANETOID / name, tmp_path / name)
    g = load_planetoid(name, root=tmp_path)
    assert g.num_nodes == n and g.num_classes == c
    assert 0.7 < g.stats()["homophily"] < 0.85
    assert (tmp_path / name / "processed").exists()


def test_planetoid_missing_names_where_it_looked(tmp_path, monkeypatch):
    # Cora and CiteSeer are shipped (tests/test_shipped_cora.py, tests/test_citeseer.py): an install whose
    # package data is gone must still name the dataset and every folder it looked in
    from clkit.data import shipped

    monkeypatch.setattr(shipped, "has_shipped_planetoid", lambda name: False)
    with pytest.raises(DatasetNotFoundError, match="CiteSeer") as err:
        load_planetoid("CiteSeer", root=tmp_path)
    assert str(tmp_path) in str(err.value)


@pytest.mark.parametrize("name", ["corafull", "reddit", "roman_empire", "ogbn_arxiv"])
def test_online_loaders_fail_fast_offline(tmp_path, monkeypatch, name):
    monkeypatch.setattr(graphs, "_host_reachable", lambda host, timeout: False)
    t0 = time.perf_counter()
    with pytest.raises(DatasetNotFoundError, match=name):
        load_online_graph(name, root=tmp_path / name)
    assert time.perf_counter() - t0 < 2


def test_online_loader_really_offline_is_quick(tmp_path):
    t0 = time.perf_counter()
    try:
        load_online_graph("corafull", root=tmp_path / "cf", timeout=2.0)
    except DatasetNotFoundError:
        pass
    assert time.perf_counter() - t0 < 10


def test_load_graph_rejects_unknown_dataset():
    with pytest.raises(ValueError, match="dataset"):
        load_graph("cora_full")


def test_gcn_equals_two_gcnconv_layers():
    from torch_geometric.nn import GCNConv

    g = csbm(300, 5, seed=0)
    torch.manual_seed(0)
    net = GCN(g.x, g.edge_index, 5, hidden=16)
    c1, c2 = GCNConv(g.x.shape[1], 16), GCNConv(16, 5)
    with torch.no_grad():
        c1.lin.weight.copy_(net.lin1.weight)
        c1.bias.copy_(net.lin1.bias)
        c2.lin.weight.copy_(net.head.weight)
        c2.bias.copy_(net.head.bias)
        ref = c2(torch.relu(c1(g.x, g.edge_index)), g.edge_index)
        torch.testing.assert_close(net(torch.arange(300)), ref, atol=1e-5, rtol=1e-5)
        idx = torch.tensor([3, 17, 17, 250])
        torch.testing.assert_close(net(idx), ref[idx], atol=1e-5, rtol=1e-5)


def test_gcn_partial_forward_gradients_match_full():
    g = csbm(200, 4, seed=2)
    torch.manual_seed(0)
    net = GCN(g.x, g.edge_index, 4, hidden=8)
    idx = torch.tensor([1, 5, 9])
    net(idx).sum().backward()
    part = net.lin1.weight.grad.clone()
    net.zero_grad()
    net(torch.arange(200))[idx].sum().backward()
    torch.testing.assert_close(part, net.lin1.weight.grad, atol=1e-5, rtol=1e-5)


def test_forward_subgraph_on_full_two_hop_ego_graph_equals_forward():
    from torch_geometric.utils import k_hop_subgraph

    g = csbm(300, 4, avg_degree=4, seed=1)
    net = GCN(g.x, g.edge_index, 4, hidden=8)
    center = 7
    # GCN normalisation uses degrees, so the ego graph must contain 3 hops of edges
    # for exact agreement at the centre (hop-2 nodes need their full degree)
    subset, ei, mapping, _ = k_hop_subgraph(center, 3, g.edge_index, relabel_nodes=True)
    with torch.no_grad():
        sub = net.forward_subgraph(subset, ei, mapping)
        torch.testing.assert_close(sub, net(torch.tensor([center])), atol=1e-5, rtol=1e-5)


def test_normalized_adjacency_equals_torch_geometric_gcn_norm():
    from torch_geometric.nn.conv.gcn_conv import gcn_norm

    from clkit.models.gcn import normalized_adjacency

    g = csbm(150, 3, seed=4)
    ei = torch.cat([g.edge_index, torch.tensor([[5, 9], [5, 9]])], 1)  # with two existing self-loops
    crow, col, val = normalized_adjacency(ei, 150)
    dense = torch.sparse_csr_tensor(crow, col, val, (150, 150)).to_dense()
    ref_ei, ref_w = gcn_norm(ei, None, 150, add_self_loops=True)
    ref = torch.zeros(150, 150).index_put_((ref_ei[1], ref_ei[0]), ref_w.float(), accumulate=True)
    torch.testing.assert_close(dense, ref)
