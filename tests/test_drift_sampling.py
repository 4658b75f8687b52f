"""Neighbour-sampled mini-batches (clkit.models.sampling) and their wiring into DRIFT's run_grid."""

import numpy as np
import pytest
import torch

from clkit.data.graphs import csbm
from clkit.models.gcn import GCN, Adjacency, AuthorsGCN
from clkit.models.gnn import GAT, GIN
from clkit.models.sampling import (layerwise_inference, resolve_neighbour_sampling, sample_blocks,
                                   set_neighbour_sampling)

# the 6-node graph: 0-1, 0-2, 1-3, 2-3, 3-4, 4-5 (undirected)
SIX = torch.tensor([[0, 1, 0, 2, 1, 3, 2, 3, 3, 4, 4, 5], [1, 0, 2, 0, 3, 1, 3, 2, 4, 3, 5, 4]])


@pytest.fixture(scope="module")
def graph():
    return csbm(120, 4, avg_degree=5.0, seed=3)


def _models(g, kind, big=1000):
    """Two copies of one backbone (same weights; dropout off), fanouts >= the largest degree."""
    def build():
        torch.manual_seed(0)
        if kind == "gcn":
            return GCN(g.x, g.edge_index, g.num_classes, hidden=8)
        if kind == "authors_gcn":
            return AuthorsGCN(g.x, g.edge_index, g.num_classes, hidden=8, fanouts=(big, big))
        if kind == "gin":
            return GIN(g.x, g.edge_index, g.num_classes, hidden=8, fanouts=(big, big))
        return GAT(g.x, g.edge_index, g.num_classes, hidden=8, heads=2, feat_drop=0.0, attn_drop=0.0,
                   fanouts=(big, big))
    return build(), set_neighbour_sampling(build(), True, seed=1)


def test_six_node_two_hop_set():
    a = Adjacency.from_edges(SIX, 6, normalize=False)
    b = sample_blocks(a.crow, a.col, torch.tensor([5]), [None, None])
    assert b.nodes.tolist()[0] == 5 and sorted(b.nodes.tolist()) == [3, 4, 5]
    b = sample_blocks(a.crow, a.col, torch.tensor([0]), [None, None])
    assert b.nodes[0] == 0 and sorted(b.nodes.tolist()) == [0, 1, 2, 3]     # 2 hops of node 0
    assert [adj.num_nodes for adj in b.adjs] == [3, 1]                      # layer 1 for {0, 1, 2}, then 0
    first_hop = b.nodes[:3].tolist()
    assert sorted(first_hop) == [0, 1, 2]
    # the last block: node 0's in-edges (self-loop, 1, 2) in local ids
    assert sorted(b.nodes[b.adjs[-1].col].tolist()) == [0, 1, 2]


def test_fanout_respected_and_self_loop_included():
    g = csbm(300, 3, avg_degree=12.0, seed=0)
    a = Adjacency.from_edges(g.edge_index, g.num_nodes, normalize=False)
    targets = torch.arange(0, 300, 7)
    b = sample_blocks(a.crow, a.col, targets, [3, 5], generator=torch.Generator().manual_seed(0))
    deg = a.crow[1:] - a.crow[:-1]
    for adj, fan in zip(b.adjs, [3, 5]):
        per_row = adj.crow[1:] - adj.crow[:-1]
        rows = b.nodes[:adj.num_nodes]
        assert torch.equal(per_row, torch.minimum(deg[rows], torch.tensor(fan)))
        # every kept edge is an edge of the graph, no duplicates within a row
        for i in range(adj.num_nodes):
            src = b.nodes[adj.col[adj.crow[i]:adj.crow[i + 1]]]
            nb = a.col[a.crow[rows[i]]:a.crow[rows[i] + 1]]
            assert set(src.tolist()) <= set(nb.tolist()) and len(set(src.tolist())) == len(src)
    assert b.nodes[:len(targets)].tolist() == targets.tolist()
    assert len(set(b.nodes.tolist())) == len(b.nodes)


def test_determinism_under_a_seed():
    g = csbm(300, 3, avg_degree=12.0, seed=0)
    a = Adjacency.from_edges(g.edge_index, g.num_nodes, normalize=False)
    t = torch.tensor([4, 90, 17])

    def draw(seed):
        b = sample_blocks(a.crow, a.col, t, [2, 4], generator=torch.Generator().manual_seed(seed))
        return b.nodes.tolist(), [adj.col.tolist() for adj in b.adjs]

    state = torch.random.get_rng_state()
    assert draw(5) == draw(5)
    assert draw(5) != draw(6)
    assert torch.equal(state, torch.random.get_rng_state())   # the global RNG is not touched


def test_bad_arguments():
    a = Adjacency.from_edges(SIX, 6, normalize=False)
    with pytest.raises(ValueError, match="fanouts"):
        sample_blocks(a.crow, a.col, torch.tensor([0]), [0, 2])
    with pytest.raises(ValueError, match="distinct"):
        sample_blocks(a.crow, a.col, torch.tensor([0, 0]), [2, 2])
    with pytest.raises(ValueError, match=r"targets must be node ids in \[0, 6\)"):
        sample_blocks(a.crow, a.col, torch.tensor([6]), [2, 2])
    with pytest.raises(ValueError, match="neighbour_sampling must be one of"):
        resolve_neighbour_sampling("blocks", 10, 10)


@pytest.mark.parametrize("kind", ["gcn", "authors_gcn", "gin", "gat"])
def test_sampled_training_equals_full_training(graph, kind):
    full, sampled = _models(graph, kind)
    full.train(), sampled.train()
    idx = torch.tensor([5, 17, 3, 80, 17, -3])           # a duplicate and an isolated (replayed) node
    idx = idx if kind != "gat" else idx[:-1]
    y = graph.y[idx.clamp(min=0)]
    out_f, out_s = full(idx), sampled(idx)
    torch.testing.assert_close(out_s, out_f, atol=1e-5, rtol=1e-5)
    for net, out in ((full, out_f), (sampled, out_s)):
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(out, y).backward()
        opt.step()
    for (name, p), q in zip(full.named_parameters(), sampled.parameters()):
        torch.testing.assert_close(q, p, atol=1e-5, rtol=1e-5, msg=name)
    # evaluation: a few nodes on their exact 2-hop graph, many layer by layer
    full.eval(), sampled.eval()
    torch.testing.assert_close(sampled(idx), full(idx), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(sampled(torch.arange(graph.num_nodes)), full(torch.arange(graph.num_nodes)),
                               atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kind", ["gcn", "gin", "gat"])
def test_layerwise_chunked_inference_equals_full(graph, kind):
    full, _ = _models(graph, kind)
    full.eval()
    for chunk in (1, 7, 1000):
        z = layerwise_inference(full, full.x, full.adjacency, chunk_size=chunk)
        torch.testing.assert_close(full.head(z), full(torch.arange(graph.num_nodes)), atol=1e-5, rtol=1e-5)


def test_sampled_forward_blocks_in_eval_is_layerwise(graph):
    full, sampled = _models(graph, "gin")
    full.eval(), sampled.eval().__setattr__("inference_chunk", 13)
    nodes = torch.arange(10, 60)
    adj = Adjacency.from_edges(torch.tensor([[0, 1, 2], [1, 2, 3]]), 50, normalize=False)
    torch.testing.assert_close(sampled.forward_blocks(nodes, adj, torch.tensor([0, 3])),
                               full.forward_blocks(nodes, adj, torch.tensor([0, 3])), atol=1e-5, rtol=1e-5)


def test_small_fanouts_sample_and_stay_deterministic(graph):
    def run():
        torch.manual_seed(0)
        net = set_neighbour_sampling(GIN(graph.x, graph.edge_index, graph.num_classes, hidden=8, fanouts=(1, 1)),
                                     True, seed=4)
        return net.train()(torch.tensor([1, 2, 3]))
    a, b = run(), run()
    assert torch.equal(a, b)
    full, _ = _models(graph, "gin")
    assert not torch.allclose(a, full.train()(torch.tensor([1, 2, 3])))


def test_run_grid_sampled_equals_full_on_small_graph():
    """neighbour_sampling='sampled' with full fanouts (the text GCN has none) gives the same metrics."""
    from clkit.drift.experiment import StreamConfig, run_grid, split_tasks

    g = csbm(160, 4, avg_degree=4.0, seed=1)
    split = split_tasks(g.y.numpy(), 2, 0.2, seed=0)
    cfg = [StreamConfig("gaussian", sigma=2.0, batch_size=10)]
    out = {}
    for mode in ("full", "sampled"):
        rows, curves, _ = run_grid(g, split, cfg, ["bare", "er"], [1], hidden=8, eval_every=3, cache=False,
                                   progress=False, neighbour_sampling=mode)
        out[mode] = (rows, curves)
    for rf, rs in zip(out["full"][0], out["sampled"][0]):
        for key in ("AA", "A_AUC"):
            assert rf[key] == pytest.approx(rs[key], abs=1e-6)
    with pytest.raises(ValueError, match="neighbour_sampling must be one of"):
        run_grid(g, split, cfg, ["bare"], [1], cache=False, progress=False, neighbour_sampling="yes")


def test_auto_threshold():
    assert not resolve_neighbour_sampling("auto", 19_793, 126_842)
    assert resolve_neighbour_sampling("auto", 169_343, 2_315_598)
    assert resolve_neighbour_sampling("sampled", 10, 10) and not resolve_neighbour_sampling("full", 10**9, 10**9)
    assert np.isscalar(resolve_neighbour_sampling("auto", 1, 1))


# (nodes, directed edges) of the paper's four graphs and of Cora
_GRAPHS = {"cora": (2_708, 10_556), "corafull": (19_793, 126_842), "roman_empire": (22_662, 65_854),
           "ogbn_arxiv": (169_343, 2_315_598), "reddit": (232_965, 114_615_892)}


@pytest.mark.parametrize("name", list(_GRAPHS))
def test_auto_decides_per_backbone(name):
    """The text GCN never samples; GIN and GAT above 5,000 nodes; the authors' GCN by the size rule."""
    n, e = _GRAPHS[name]
    big = name in ("ogbn_arxiv", "reddit")
    assert resolve_neighbour_sampling("auto", n, e, backbone="gcn", protocol="text") is False
    assert resolve_neighbour_sampling("auto", n, e, backbone="gcn", protocol="authors") is big
    assert resolve_neighbour_sampling("auto", n, e) is big                       # no backbone: the size rule
    for pr in ("text", "authors"):
        for bb in ("gin", "gat"):
            assert resolve_neighbour_sampling("auto", n, e, backbone=bb, protocol=pr) is (name != "cora")
        # explicit modes are not overridden by the backbone
        assert resolve_neighbour_sampling("sampled", n, e, backbone="gcn", protocol=pr) is True
        assert resolve_neighbour_sampling("full", n, e, backbone="gat", protocol=pr) is False
    with pytest.raises(ValueError, match="backbone must be one of"):
        resolve_neighbour_sampling("auto", n, e, backbone="sage")
    with pytest.raises(ValueError, match="protocol must be one of"):
        resolve_neighbour_sampling("auto", n, e, backbone="gcn", protocol="paper")


def test_run_grid_auto_resolves_per_backbone_and_protocol(monkeypatch):
    """run_grid asks the rule with its backbone and protocol (the rule's answers are tested above)."""
    import clkit.drift.experiment as ex
    from clkit.models import sampling

    seen = []

    def spy(mode, n, e, **kw):
        seen.append(kw)
        raise RuntimeError("stop")
    monkeypatch.setattr(sampling, "resolve_neighbour_sampling", spy)
    g = csbm(60, 4, avg_degree=3.0, seed=1)
    split = ex.split_tasks(g.y.numpy(), 2, 0.2, seed=0)
    cfg = [ex.StreamConfig("gaussian", sigma=2.0, batch_size=10)]
    for backbone, protocol in (("gat", "text"), ("gcn", "authors")):
        with pytest.raises(RuntimeError, match="stop"):
            ex.run_grid(g, split, cfg, ["bare"], [1], hidden=8, cache=False, progress=False, backbone=backbone,
                        protocol=protocol, neighbour_sampling="auto")
    assert seen == [{"backbone": "gat", "protocol": "text"}, {"backbone": "gcn", "protocol": "authors"}]


def test_rehearsal_after_resolves_auto_per_backbone():
    from clkit.drift.rehearsal import after

    assert after({"dataset": "roman_empire", "neighbour_sampling": "auto", "backbone": "gat"}, {}) \
        ["neighbour_sampling"] == "sampled"
    assert after({"dataset": "roman_empire", "neighbour_sampling": "auto", "backbone": "gin"}, {}) \
        ["neighbour_sampling"] == "sampled"
    assert after({"dataset": "roman_empire", "neighbour_sampling": "auto", "backbone": "gcn"}, {}) == {}
    assert after({"dataset": "reddit", "neighbour_sampling": "auto", "protocol": "text"}, {}) == {}
    assert after({"dataset": "reddit", "neighbour_sampling": "auto", "protocol": "both"}, {}) \
        ["neighbour_sampling"] == "sampled"


def _chi_square_p(counts):
    from scipy.stats import chisquare

    return chisquare(counts).pvalue


def test_draws_are_uniform_without_replacement():
    """Every fanout-subset of a long row is equally likely, in rows of different degrees drawn in one call
    (Floyd's algorithm vectorised over rows): chi-square over the C(n, k) subsets, fixed seed."""
    from itertools import combinations

    from clkit.models.sampling import _rows

    # node 0: in-edges from 1..6 (7 with its self-loop); node 7: from 8, 9, 10 (4 with the self-loop);
    # node 11: from 12 (2 with the self-loop: under the fanout, always kept whole)
    src = [1, 2, 3, 4, 5, 6, 8, 9, 10, 12]
    dst = [0] * 6 + [7] * 3 + [11]
    a = Adjacency.from_edges(torch.tensor([src, dst]), 13, normalize=False)
    gen = torch.Generator().manual_seed(2024)
    k, draws = 2, 4200
    rows = torch.tensor([0, 7, 11]).repeat(draws)               # 4,200 draws of each row in one call
    rowid, cols, vals = _rows(a.crow, a.col, None, rows, k, gen)
    assert torch.equal(torch.bincount(rowid), torch.tensor([k, k, 2]).repeat(draws))
    assert torch.equal(vals, torch.ones(len(cols)))
    per_row = cols.reshape(draws, 2 * k + 2)
    assert torch.equal(torch.sort(per_row[:, 2 * k:], 1).values, torch.tensor([[11, 12]]).expand(draws, 2))
    for v, part, neighbours in ((0, per_row[:, :k], range(7)), (7, per_row[:, k:2 * k], [7, 8, 9, 10])):
        assert bool((part[:, 0] != part[:, 1]).all())             # without replacement
        counts = {}
        for key in map(tuple, torch.sort(part, 1).values.tolist()):
            counts[key] = counts.get(key, 0) + 1
        subsets = list(combinations(sorted(neighbours), k))
        assert set(counts) == set(subsets)                        # every subset occurs, nothing else
        obs = np.array([counts[s] for s in subsets])
        assert _chi_square_p(obs) > 1e-3, (v, obs)
    # a deliberately biased count fails the same check (the check can fail)
    biased = np.array([draws // 21 * (2 if i == 0 else 1) for i in range(21)])
    assert _chi_square_p(biased) < 1e-3
    # through sample_blocks: one call per draw, the same rule
    hits = np.zeros(7, dtype=int)
    for _ in range(300):
        b = sample_blocks(a.crow, a.col, torch.tensor([0]), [3], generator=gen)
        got = b.nodes[b.adjs[0].col].tolist()
        assert len(set(got)) == 3
        hits[got] += 1
    assert _chi_square_p(hits) > 1e-3


def test_floyd_pairs_uniform_at_a_larger_fanout():
    """Inclusion: each of n positions kept with probability k / n (n = 40, k = 25, the authors' fanout)."""
    from clkit.models.sampling import _floyd

    gen = torch.Generator().manual_seed(7)
    picks = _floyd(torch.full((4000,), 40), 25, gen)
    for row in picks[:50]:
        assert len(set(row.tolist())) == 25 and 0 <= int(row.min()) and int(row.max()) < 40
    counts = torch.bincount(picks.reshape(-1), minlength=40).numpy()
    assert counts.sum() == 4000 * 25
    assert _chi_square_p(counts) > 1e-3


def test_sampler_allocates_nothing_of_the_graph_size():
    """Work follows the kept entries: on a 2M-node graph, no allocation of the sampler reaches N bytes
    (the earlier sampler filled a node-id map of 8 N bytes on every call)."""
    from torch.profiler import ProfilerActivity, profile

    n = 2_000_000
    crow = torch.arange(n + 1, dtype=torch.int64) * 4            # 4 in-edges a node
    col = torch.remainder(torch.arange(4 * n, dtype=torch.int64) * 7919, n)
    gen = torch.Generator().manual_seed(0)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        b = sample_blocks(crow, col, torch.tensor([3, 99, 1_500_000]), [2, 3], generator=gen)
    assert len(b.nodes) <= 3 + 3 * 3 + (3 + 3 * 3) * 2     # targets, 3 in-edges each, then 2 of every node
    biggest = max((e.cpu_memory_usage for e in prof.events()), default=0)
    assert 0 < biggest < n              # bytes: far below even one byte per node


def test_budget_times_sampled_steps_where_the_run_samples():
    """The budget calibrates on the model the run trains: with neighbour_sampling 'sampled' its model samples,
    and its text says so; 'auto' on a small graph is the whole-graph path."""
    import clkit.drift as drift
    from clkit.data.graphs import csbm
    from clkit.drift import budget as db

    g = csbm(120, 4, seed=0)
    data = {pr: drift.protocol_data(g, 2, 0.2, seed=0, protocol=pr) for pr in ("text",)}
    c = drift.study_configs(sigma=2.0, sigmas=[2.0], p=0.3, k_bl=1, batch_size=10, batch_sizes=[10],
                            sampling="without")
    kw = dict(eval_every={"text": 4}, joint_epochs=1, hidden=16, cache=False, steps=2)
    b = db.estimate(data, c, ["bare"], ["bare"], [1], neighbour_sampling="sampled", **kw)
    assert "sampled neighbourhoods" in b.text()
    assert db._sampled(data, "sampled") and not db._sampled(data, "auto") and not db._sampled(data, "full")
    assert "sampled neighbourhoods" not in db.estimate(data, c, ["bare"], ["bare"], [1], **kw).text()
    assert db._model(g, "text", 16, 0, "gcn", sampled=True).neighbour_sampling is True
