"""SEM and DMSG as the DRIFT authors' released code runs them (issue 40, part B), against hand-computed steps."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import clkit.drift as drift
from clkit._seed import torch_seeded
from clkit.data.graphs import csbm
from clkit.drift.authors import AuthorsDMSG, AuthorsSEM, AuthorsSSM, isolate, make_authors_learner, small_subgraph
from clkit.drift.authors_methods import (_out_nbrs, diverse_select, dmsg_loss_terms, overlap_curvature,
                                         overlap_subgraph, sample_blocks)
from clkit.models.gcn import GCN, AuthorsGCN

# the hand graph: 0-1, 0-2, 0-3, 0-5, 1-5, 1-6, 2-5, 3-4 (every node has its self-loop in the blocks)
HAND = [(0, 1), (0, 2), (0, 3), (0, 5), (1, 5), (1, 6), (2, 5), (3, 4)]


def _hand_model(cls=GCN, **kw):
    ei = torch.tensor(HAND + [(b, a) for a, b in HAND]).T
    return cls(torch.eye(7), ei, num_classes=2, hidden=3, **kw)


def _sets(block):
    dst, inn = block
    return {d: set(int(u) for u in inn[d]) for d in dst}, _out_nbrs(dst, inn)


def test_blocks_of_the_hand_batch():
    (dst0, in0), (dst1, in1) = sample_blocks(_hand_model(), [0, 5, 6], fanouts=None)
    assert dst1 == [0, 5, 6] and dst0 == [0, 5, 6, 1, 2, 3]   # destinations first, then the new sources
    assert {d: in1[d].tolist() for d in dst1} == {0: [0, 1, 2, 3, 5], 5: [0, 1, 2, 5], 6: [1, 6]}
    assert in0[3].tolist() == [0, 3, 4] and in0[2].tolist() == [0, 2, 5]


def test_overlap_proxy_equals_the_hand_computed_values():
    """kappa(s, d) = (|N_in(d) ∩ N_out(s)| + 1) / (max(|N_in(d)|, |N_out(s)|) + 1), worked by hand."""
    b0, b1 = sample_blocks(_hand_model(), [0, 5, 6], fanouts=None)
    inn, out = _sets(b1)
    # output block: N_in(0) = {0,1,2,3,5}; N_out(1) = {0,5,6} (the batch nodes 1 sends to): ∩ = {0,5}
    assert out[1] == {0, 5, 6} and overlap_curvature(1, 0, inn, out) == 3 / 6
    assert out[3] == {0} and overlap_curvature(3, 0, inn, out) == 2 / 6       # ∩ = {0}
    assert overlap_curvature(0, 0, inn, out) == 3 / 6                        # the self-loop: ∩ = {0,5}
    inn, out = _sets(b0)
    # input block: N_in(5) = {0,1,2,5}; N_out(0) = {0,5,1,2,3}: ∩ = {0,1,2,5} -> 5 / (max(4, 5) + 1)
    assert overlap_curvature(0, 5, inn, out) == 5 / 6
    assert overlap_curvature(1, 5, inn, out) == 4 / 5                        # N_out(1) = {0,5,6,1}: ∩ = 3
    assert overlap_curvature(6, 1, inn, out) == 3 / 5                        # N_in(1) = {0,1,5,6}, N_out(6) = {6,1}
    assert overlap_curvature(5, 5, inn, out) == 1.0                          # a self-loop inside the block
    assert overlap_curvature(3, 0, inn, out) == 3 / 6


def test_overlap_subgraph_keeps_the_highest_proxy_edges():
    """Hop 1 (budget 4 of 5 candidates): 3 -> 0 (1/3) is dropped, the others score 1/2. Hop 2 (budget 4
    of 16): the four self-loops of the targets score 1, the next 5/6. Edges point toward the centre."""
    blocks = sample_blocks(_hand_model(), [0, 5, 6], fanouts=None)
    nodes, e = overlap_subgraph(blocks, 0, fanouts=(4, 4))
    assert nodes.tolist() == [0, 1, 2, 5]
    hop1 = [(0, 0), (1, 0), (2, 0), (3, 0)]            # local ids: 5 -> 3
    hop2 = [(0, 0), (3, 3), (1, 1), (2, 2)]
    loops = [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert list(map(tuple, e.T.tolist())) == hop1 + hop2 + loops
    with pytest.raises(ValueError, match="center 4 is not a destination"):
        overlap_subgraph(blocks, 4)


def test_sampled_blocks_respect_their_fanouts_and_seed():
    g = csbm(300, 4, avg_degree=30, seed=0)
    net = GCN(g.x, g.edge_index, 4, hidden=4)
    a = sample_blocks(net, np.arange(10), fanouts=(10, 25), seed=3)
    b = sample_blocks(net, np.arange(10), fanouts=(10, 25), seed=3)
    assert all(len(v) <= 25 for v in a[1][1].values()) and all(len(v) <= 10 for v in a[0][1].values())
    assert all(np.array_equal(a[0][1][k], b[0][1][k]) for k in a[0][1])
    full = sample_blocks(net, np.arange(10), fanouts=None)
    assert any(len(v) > 25 for v in full[1][1].values())


def test_authors_sem_stores_the_subgraph_of_the_batch_it_came_in():
    g = csbm(200, 4, avg_degree=8, seed=1)
    model = AuthorsGCN(g.x, g.edge_index, 4, hidden=8, fanouts=None)
    s = make_authors_learner("sem", model, memory_size=100, seed=0)
    assert isinstance(s, AuthorsSEM) and s.memory_size == 10 and s.curvature == "overlap"
    assert s.block_fanouts is None   # the backbone's sampler: none here
    batch = torch.arange(10)
    s.observe(batch, g.y[batch])
    for v in s.memory.stored_ids().tolist():
        nodes, e = s.subgraph(v)
        want = overlap_subgraph(sample_blocks(model, batch.numpy(), None), v, (5, 5))
        assert torch.equal(nodes, want[0]) and torch.equal(e, want[1]) and int(nodes[0]) == v
        assert len(nodes) <= 11
    # the released sampler's fanouts are the backbone's
    assert make_authors_learner("sem", AuthorsGCN(g.x, g.edge_index, 4, hidden=8)).block_fanouts == (10, 25)


def test_kept_self_loop_counts_twice_in_the_replayed_block():
    model = _hand_model(AuthorsGCN, fanouts=None)
    s = AuthorsSEM(model, memory_size=10, fanouts=(4, 4), seed=0)
    s._subgraphs[0] = overlap_subgraph(sample_blocks(model, [0, 5, 6], None), 0, (4, 4))
    nodes, adj = s._block(0)
    vals = {(int(r), int(c)): float(v) for r, c, v in zip(adj.row, adj.col, adj.val)}
    # centre: its own row 3 times (hop 1, hop 2, the self-loop), each first-hop node once, toward it
    assert vals == {(0, 0): 3.0, (0, 1): 1.0, (0, 2): 1.0, (0, 3): 1.0, (1, 1): 2.0, (2, 2): 2.0, (3, 3): 2.0}


def test_forman_variant_is_kept_and_bad_names_are_refused():
    g = csbm(200, 4, avg_degree=8, seed=1)
    s = AuthorsSEM(GCN(g.x, g.edge_index, 4, hidden=8), curvature="forman", seed=0)
    for v in (0, 5, 9):
        a, b = s.subgraph(v), small_subgraph(s.model, v, (5, 5), "curvature", 0)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    with pytest.raises(ValueError, match="curvature must be one of"):
        AuthorsSEM(GCN(g.x, g.edge_index, 4, hidden=8), curvature="ollivier")
    with pytest.raises(ValueError, match="loss_weights must hold 4"):
        AuthorsDMSG(GCN(g.x, g.edge_index, 4, hidden=8), loss_weights=(1.0, 20.0))
    with pytest.raises(TypeError, match="model must hold its graph"):
        AuthorsDMSG(torch.nn.Linear(2, 2))


# --------------------------------------------------------------------------------------------- DMSG

def test_dmsg_loss_terms_equal_the_hand_computed_sum():
    """Two replayed nodes, worked by hand: CE = (ln 2 + ln 4) / 2; z z^T = I against labels [0, 1] gives
    BCE(0, 0) = ln 2 on the two off-diagonal entries, / 4 entries; KL = mean(1/2, 1/2) / ln 2; adv = ln 2."""
    logits = torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]])
    y = torch.tensor([0, 1])
    eye = torch.eye(2)
    t = dmsg_loss_terms(logits, y, eye, eye, torch.ones(2, 2), torch.zeros(4))
    ln2 = math.log(2.0)
    assert float(t["replay"]) == pytest.approx(1.5 * ln2)
    assert float(t["similarity"]) == pytest.approx(2 * ln2 / 4)
    assert float(t["kl"]) == pytest.approx(0.5 / ln2)
    assert float(t["adv"]) == pytest.approx(ln2)
    total = 20 * t["replay"] + t["adv"] + t["vae"]
    assert float(total) == pytest.approx(20 * 1.5 * ln2 + ln2 + ln2 / 2 + 0.5 / ln2)


def test_dmsg_step_loss_is_batch_ce_plus_weighted_replay_terms():
    g = csbm(200, 4, seed=2)
    model = AuthorsGCN(g.x, g.edge_index, 4, hidden=6, fanouts=None)   # full neighbourhoods: no sampler draws
    s = make_authors_learner("dmsg", model, memory_size=8, seed=0, stream_batch_size=10)
    assert isinstance(s, AuthorsDMSG) and s.stream_batch_size == 10
    for t in range(3):
        idx = torch.arange(10 * t, 10 * t + 10)
        s.observe(idx, g.y[idx])
    x, y = torch.arange(40, 50), g.y[40:50]
    state = s.generator.get_state()
    with torch.no_grad():
        m = len(s.mem_ids)
        sel = torch.randperm(m, generator=s.generator)[: min(10, m)]
        nodes, ym = s.mem_nodes[sel], s.mem_y[sel]
        xv = model.x[nodes]
        mu = torch.relu(model.lin1(xv))                          # isolated: S x = x (no bias)
        std = F.softplus(torch.relu(s.std_layer(xv)), beta=10)
        z = mu + torch.randn(mu.shape, generator=s.generator) * std
        t = dmsg_loss_terms(model.head(z), ym, z, mu, std, s.discriminator(torch.cat([z, mu])).view(-1))
        expected = F.cross_entropy(model(x), y) + 20 * t["replay"] + t["adv"] + t["vae"]
    s.generator.set_state(state)
    got = s.observe(x, y)
    assert float(got) == pytest.approx(float(expected), rel=1e-5)
    assert set(s.last_terms) == {"replay", "similarity", "kl", "vae", "adv"}


def test_dmsg_discriminator_is_fixed_and_its_gradient_reversed():
    g = csbm(120, 4, seed=0)
    s = AuthorsDMSG(AuthorsGCN(g.x, g.edge_index, 4, hidden=6, fanouts=None), memory_size=6, seed=0,
                    optimizer="adam")
    before = [p.clone() for p in s.discriminator.parameters()]
    for t in range(4):
        idx = torch.arange(10 * t, 10 * t + 10)
        s.observe(idx, g.y[idx])
    assert all(torch.equal(a, b) for a, b in zip(before, s.discriminator.parameters()))
    assert all(p.grad is None for p in s.discriminator.parameters())


def test_dmsg_chooses_five_diverse_nodes_then_a_reservoir():
    reps = torch.tensor([[3.0, 0.0], [2.9, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 2.0]])
    # largest norm: row 0; softmax rows; farthest from row 0 is row 4 ([0.12, 0.88]); then from {0, 4}: row 3
    assert diverse_select(reps, 3).tolist() == [0, 4, 3]
    g = csbm(300, 4, seed=0)
    s = AuthorsDMSG(AuthorsGCN(g.x, g.edge_index, 4, hidden=6), memory_size=12, seed=1, optimizer="adam")
    idx = torch.arange(10)
    s.observe(idx, g.y[idx])
    assert len(s.mem_ids) == 5 and s.num_chosen == 5 and set(s.mem_ids) <= set(range(10))
    assert torch.equal(s.mem_y, g.y[torch.tensor(s.mem_ids)])
    for t in range(1, 8):
        idx = torch.arange(10 * t, 10 * t + 10)
        s.observe(idx, g.y[idx])
    assert len(s.mem_ids) == 12 and s.num_chosen == 40
    assert torch.equal(s.mem_y, g.y[torch.tensor(s.mem_ids)]) and torch.equal(s.mem_nodes, torch.tensor(s.mem_ids))


def test_released_methods_are_deterministic_and_replay_isolated_nodes():
    g = csbm(200, 4, avg_degree=8, seed=0)

    def losses(method):
        with torch_seeded(3):   # the initial weights (the experiment builds models this way)
            model = AuthorsGCN(g.x, g.edge_index, 4, hidden=8, seed=3)
        s = make_authors_learner(method, model, memory_size=30, seed=5)
        return [float(s.observe(torch.arange(10 * t, 10 * t + 10), g.y[10 * t:10 * t + 10])) for t in range(5)], s

    for method in ("sem", "dmsg"):
        a, s = losses(method)
        b, _ = losses(method)
        assert a == b and all(np.isfinite(a))
    # DMSG's replayed nodes enter isolated: their representation ignores the graph
    nodes = s.mem_nodes[:3]
    assert torch.allclose(s.model.embed(isolate(nodes)), torch.relu(s.model.lin1(s.model.x[nodes])))


def test_authors_protocol_runs_the_released_sem_and_dmsg():
    g = csbm(240, 4, feature_signal=1.0, seed=1)
    g2, sp = drift.protocol_data(g, 2, 0.2, seed=1, protocol="authors")
    cfg = drift.StreamConfig("gaussian", sigma=2.0)
    rows, curves, _ = drift.run_grid(g2, sp, [cfg], ["sem", "dmsg"], [1], hidden=8, memory_size=20, eval_every=3,
                                     cache=False, progress=False, protocol="authors")
    assert {r["method"] for r in rows} == {"sem", "dmsg"}
    assert all(np.isfinite(r["AA"]) and np.isfinite(r["A_AUC"]) for r in rows)
    # a setting must hold under both protocols: the text DMSG's kl_weight has no released counterpart
    with pytest.raises(ValueError, match="unknown keyword 'kl_weight'"):
        drift.check_learner_settings({"dmsg": {"kl_weight": 0.1}}, ["dmsg"], ("text", "authors"))
    assert drift.check_learner_settings({"dmsg": {"kl_weight": 0.1}}, ["dmsg"], ("text",))["dmsg"] == {
        "kl_weight": 0.1}
    # the Forman-Ricci reading stays available by name (AuthorsSEM(curvature="forman")); the text protocol runs it
    rows, _, _ = drift.run_grid(g2, sp, [cfg], ["sem"], [1], hidden=8, memory_size=20, eval_every=3, cache=False,
                                progress=False, protocol="authors", learner_kwargs={"sem": {"fanouts": (5, 5)}})
    assert np.isfinite(rows[0]["AA"])


def test_ssm_is_unchanged():
    g = csbm(200, 4, avg_degree=8, seed=0)
    assert type(make_authors_learner("ssm", GCN(g.x, g.edge_index, 4, hidden=8))) is AuthorsSSM
