"""GIN and GAT as DRIFT's released code builds them (clkit.models.gnn; issue 40, 05.3)."""

import math

import numpy as np
import pytest
import torch

import clkit.drift as drift
from clkit._seed import torch_seeded
from clkit.data.graphs import csbm
from clkit.models.gnn import GAT, GIN, make_graph_backbone

# the path 0 - 1 - 2 (both directions)
EI = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
X = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])


def _set(lin, w, b=None):
    with torch.no_grad():
        lin.weight.copy_(torch.as_tensor(w, dtype=torch.float32))
        if b is not None:
            lin.bias.copy_(torch.as_tensor(b, dtype=torch.float32))


def test_gin_forward_by_hand():
    net = GIN(X, EI, num_classes=1, hidden=2, eps=0.5).eval()
    _set(net.lin1, [[1.0, 0.0], [0.0, 1.0]], [0.0, -1.0])
    _set(net.head, [[1.0, 1.0]], [0.0])
    # layer 1: (1 + eps) x_i + sum over N(i) and i itself (the authors' graphs carry self-loops)
    agg = {0: 1.5 * X[0] + X[0] + X[1], 1: 1.5 * X[1] + X[1] + X[0] + X[2], 2: 1.5 * X[2] + X[2] + X[1]}
    h = {i: torch.relu(v + torch.tensor([0.0, -1.0])) for i, v in agg.items()}
    # h0 = relu([2.5, 1] + [0, -1]) = [2.5, 0]; h1 = [2, 3.5 - 1]; h2 = [2.5, 3.5 - 1]
    assert h[0].tolist() == [2.5, 0.0] and h[1].tolist() == [2.0, 2.5] and h[2].tolist() == [2.5, 2.5]
    z0 = 2.5 * h[0] + h[1]            # node 0: (1 + eps) h_0 + h_0 + h_1
    z1 = 2.5 * h[1] + h[0] + h[2]
    expected = [float(z0.sum()), float(z1.sum())]
    assert net(torch.tensor([0, 1])).flatten().tolist() == pytest.approx(expected)
    assert expected == pytest.approx([2.5 * 2.5 + 4.5, 2.5 * 4.5 + 2.5 + 5.0])
    # isolated: only its self-loop, (2 + eps) x twice through the layers
    hi = torch.relu(2.5 * X[0] + torch.tensor([0.0, -1.0]))
    assert net(torch.tensor([-1])).item() == pytest.approx(float((2.5 * hi).sum()))


def test_gin_equals_torch_geometric_gin_conv():
    pyg = pytest.importorskip("torch_geometric.nn")
    from torch_geometric.utils import add_self_loops

    g = csbm(60, 3, avg_degree=4, seed=0)
    with torch_seeded(0):
        net = GIN(g.x, g.edge_index, num_classes=3, hidden=8).eval()
    c1, c2 = pyg.GINConv(net.lin1, eps=0.0), pyg.GINConv(net.head, eps=0.0)
    ei, _ = add_self_loops(g.edge_index, num_nodes=g.num_nodes)   # the authors' graphs hold self-loops
    ref = c2(torch.relu(c1(g.x, ei)), ei)
    assert torch.allclose(net(torch.arange(g.num_nodes)), ref, atol=1e-4)


def test_gat_attention_sums_to_one_over_the_neighbours_and_self_loop():
    with torch_seeded(1):
        net = GAT(X, EI, num_classes=2, hidden=4, heads=2).eval()
    adj = net.adjacency
    assert adj.col[adj.row == 1].tolist() == [0, 1, 2]        # node 1's in-edges: 0, 2 and itself
    alpha = net.attention(net.fc1(X), adj, 1)
    sums = torch.zeros(3, 2).index_add_(0, adj.row, alpha)
    assert torch.allclose(sums, torch.ones(3, 2), atol=1e-6)
    # by hand: e_ij = LeakyReLU(a_src . W h_j + a_dst . W h_i), softmax over j in {i} + N(i)
    wh = net.fc1(X).reshape(3, 2, 2)
    el, er = (wh * net.att_src1).sum(-1), (wh * net.att_dst1).sum(-1)
    e = torch.nn.functional.leaky_relu(torch.stack([el[0] + er[1], el[1] + er[1], el[2] + er[1]]), 0.2)
    assert torch.allclose(alpha[adj.row == 1], torch.softmax(e, 0), atol=1e-6)


def test_gat_forward_by_hand_with_uniform_attention():
    net = GAT(X, EI, num_classes=1, hidden=2, heads=1).eval()
    with torch.no_grad():
        for a in (net.att_src1, net.att_dst1, net.att_src2, net.att_dst2):
            a.zero_()                     # e = 0 everywhere: alpha = 1 / (degree + 1)
    _set(net.fc1, [[1.0, 0.0], [0.0, 2.0]])
    _set(net.head, [[1.0, -1.0]])
    wx = X * torch.tensor([1.0, 2.0])
    h = torch.nn.functional.elu(torch.stack([(wx[0] + wx[1]) / 2, (wx[0] + wx[1] + wx[2]) / 3,
                                             (wx[1] + wx[2]) / 2]))
    out1 = float(((h[0] + h[1] + h[2]) / 3) @ torch.tensor([1.0, -1.0]))
    assert net(torch.tensor([1])).item() == pytest.approx(out1)
    assert net(torch.tensor([-2])).item() == pytest.approx(float(torch.nn.functional.elu(wx[1]) @
                                                                 torch.tensor([1.0, -1.0])))


def test_gat_equals_torch_geometric_gat_conv_without_dropout():
    pyg = pytest.importorskip("torch_geometric.nn")
    g = csbm(60, 3, avg_degree=4, seed=0)
    with torch_seeded(0):
        net = GAT(g.x, g.edge_index, num_classes=3, hidden=8, heads=2).eval()
    c1 = pyg.GATConv(g.x.shape[1], 4, heads=2, negative_slope=0.2, bias=False)
    c2 = pyg.GATConv(8, 3, heads=1, concat=False, negative_slope=0.2, bias=False)
    with torch.no_grad():
        c1.lin.weight.copy_(net.fc1.weight)
        c1.att_src.copy_(net.att_src1)
        c1.att_dst.copy_(net.att_dst1)
        c2.lin.weight.copy_(net.head.weight)
        c2.att_src.copy_(net.att_src2)
        c2.att_dst.copy_(net.att_dst2)
    ref = c2(torch.nn.functional.elu(c1(g.x, g.edge_index)), g.edge_index)
    assert torch.allclose(net(torch.arange(g.num_nodes)), ref, atol=1e-4)


def test_the_authors_gat_sizes_and_dropout():
    net = GAT(torch.zeros(5, 7), torch.zeros((2, 0), dtype=torch.int64), num_classes=4)
    assert (net.heads, net.hidden // net.heads, net.feat_drop, net.attn_drop, net.negative_slope) == \
        (8, 32, 0.6, 0.6, 0.2)
    assert net.fc1.bias is None and net.head.bias is None and net.head.in_features == 256
    assert GIN(torch.zeros(5, 7), torch.zeros((2, 0), dtype=torch.int64), 4).lin1.out_features == 256
    with pytest.raises(ValueError, match="hidden must be a multiple of heads=8"):
        GAT(torch.zeros(5, 7), torch.zeros((2, 0), dtype=torch.int64), num_classes=4, hidden=12)
    with pytest.raises(ValueError, match="fanouts"):
        GIN(torch.zeros(5, 7), torch.zeros((2, 0), dtype=torch.int64), 4, fanouts=(10,))


@pytest.mark.parametrize("cls", [GIN, GAT])
def test_same_seed_same_outputs_and_training(cls):
    g = csbm(80, 4, avg_degree=5, seed=2)

    def run():
        with torch_seeded(3):
            net = cls(g.x, g.edge_index, num_classes=4, hidden=16, fanouts=(2, 3), seed=3)
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        for step in range(3):
            idx = torch.arange(step * 10, step * 10 + 10)
            loss = torch.nn.functional.cross_entropy(net(idx), g.y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        return net.eval()(torch.arange(g.num_nodes))

    a, b = run(), run()
    assert torch.equal(a, b)
    with torch_seeded(4):
        other = cls(g.x, g.edge_index, num_classes=4, hidden=16).eval()
    assert not torch.equal(other(torch.arange(g.num_nodes)), a)


@pytest.mark.parametrize("cls", [GIN, GAT])
def test_sampled_training_keeps_fanout_edges_and_eval_uses_all(cls):
    g = csbm(80, 4, avg_degree=8, seed=2)
    net = cls(g.x, g.edge_index, num_classes=4, hidden=8, fanouts=(2, 3), seed=0)
    m1, m2 = net._masks(net.adjacency)
    per_row = torch.zeros(g.num_nodes, dtype=torch.int64).index_add_(0, net.row, m1.long())
    deg = net.degrees() + 1
    assert torch.equal(per_row, torch.minimum(deg, torch.tensor(2)))
    assert net.eval()._masks(net.adjacency) == (None, None)
    # the embedding is the head's input: head(embed) = forward
    idx = torch.tensor([0, 5, -3])
    assert torch.allclose(net.head(net.embed(idx)), net(idx))


@pytest.mark.parametrize("cls", [GIN, GAT])
def test_on_meta_the_shapes_only(cls):
    g = csbm(40, 4, seed=0)
    net = cls(g.x, g.edge_index, num_classes=4, hidden=8, fanouts=(10, 25)).to("meta")
    out = net(torch.tensor([0, 3, -2], device="meta"))
    assert out.shape == (3, 4) and out.device.type == "meta"
    out.sum().backward()
    adj = net.adjacency
    assert net.forward_blocks(torch.arange(40, device="meta"), adj, torch.tensor([1], device="meta")).shape == (1, 4)


@pytest.mark.parametrize("backbone", ["gin", "gat"])
@pytest.mark.parametrize("protocol", ["text", "authors"])
def test_the_graph_strategies_train_with_them(backbone, protocol):
    g = csbm(200, 4, feature_signal=1.0, seed=1)
    g2, sp = drift.protocol_data(g, 2, 0.2, seed=1, protocol=protocol)
    cfg = drift.StreamConfig("gaussian", sigma=2.0)
    methods = ["bare", "er", "ssm", "mas_star"] + (["dmsg"] if protocol == "text" else [])
    rows, curves, _ = drift.run_grid(g2, sp, [cfg], methods, [1], hidden=8, eval_every=4, cache=False,
                                     progress=False, protocol=protocol, backbone=backbone, joint_epochs=1)
    assert [r["method"] for r in rows] == methods
    for r in rows:
        assert 0.0 <= r["A_AUC"] <= 1.0 and math.isfinite(r["AF_s"])
    model = make_graph_backbone(backbone, g2.x, g2.edge_index, 4, hidden=8, protocol=protocol)
    assert model.fanouts == ((10, 25) if protocol == "authors" else None)


def test_backbone_is_a_notebook_parameter():
    kw = dict(dataset="csbm", setting="gaussian", sigma=1.0, sigmas=[1.0], p=0.3, k_bl=2, batch_size=10,
              batch_sizes=[10], sampling="without", methods=["bare"], memory_size=100, eval_every=5, seeds=[1],
              classes_per_task=2, tau=0.9, hidden=16, lr=0.005, joint_epochs=5, test_fraction=0.2)
    drift.check_params(**kw, backbone="gin")
    with pytest.raises(ValueError, match="backbone must be one of"):
        drift.check_params(**kw, backbone="sage")
    with pytest.raises(ValueError, match="multiple of 8"):
        drift.check_params(**{**kw, "hidden": 12}, backbone="gat")
    assert "backbone" in drift.NOTEBOOK_PARAMETERS
    np.testing.assert_equal(drift.NOTEBOOK_PARAMETERS.index("backbone"), drift.NOTEBOOK_PARAMETERS.index("hidden") + 1)
