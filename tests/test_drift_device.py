"""DRIFT on a device other than the CPU, and the accelerator paths checked against the CPU's.

Every method of the ``paper`` set trains along DRIFT streams under both protocols on
``torch.device("meta")`` (shapes, no values) inside :class:`clkit.device.DeviceAudit`: the
GCN and its graph, the authors' backbone and sampler, the learners, Joint and the evaluation
all run there, so a CPU-made tensor mixed into device work, or a read of a value in a step
(``.item()``, ``.tolist()``, ``.numpy()``, ``float()``), fails as it would on a GPU.

What meta cannot cover, and where it is covered instead:

- meta has no sparse kernels: the GCN's CSR products run there as the same sum over the
  nonzeros with ``index_add_`` (:func:`clkit.models.gcn.propagate`);
  ``test_index_add_propagation_equals_the_csr_product`` checks the two agree on the CPU.
- the few documented host reads (:func:`clkit.strategies.graph.host_ids`, GSS's scores,
  MAS*'s loss, AuthorsGSS's cosines; see those modules) read NaN, or ids 0, on meta, so the
  decisions taken from them (replacements, detector firings, DMSG's pruning) do not happen
  there by themselves: ``test_value_driven_branches_on_meta`` forces each branch on meta.
- numbers: the accelerator paths (whole-graph propagation for a batch, isolated rows by
  ``torch.where``, the device neighbour sampler, block-diagonal replay and evaluation) are
  run on the CPU against the CPU paths below.
"""

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

import clkit.drift as drift
from clkit import device as dv
from clkit._seed import torch_seeded
from clkit.data.graphs import csbm
from clkit.drift import budget as drift_budget
from clkit.drift.authors import make_authors_learner
from clkit.models.gcn import GCN, Adjacency, AuthorsGCN, normalized_adjacency, propagate, rows_of
from clkit.strategies.graph import DMSG, SSM, sparsified_subgraph

META = torch.device("meta")
PAPER = yaml.safe_load((Path(__file__).parents[1] / "notebooks/params/05_drift/paper.yaml").read_text())


@pytest.fixture(scope="module")
def graph():
    return csbm(80, 4, avg_degree=4, feature_signal=0.8, seed=0)


def _configs():
    return [drift.StreamConfig("hard", batch_size=10), drift.StreamConfig("gaussian", sigma=2.0, batch_size=10)]


# ------------------------------------------------------------------------------------------- on meta

@pytest.mark.parametrize("protocol", ["text", "authors"])
@pytest.mark.parametrize("method", PAPER["methods"])
def test_every_paper_method_runs_the_stream_on_meta(graph, protocol, method):
    """run_grid with the run's device: the hard setting (the authors' per-task loop, partial batches)
    and a Gaussian mixture, evaluated under the protocol, every tensor on meta."""
    g, split = drift.protocol_data(graph, 2, 0.2, seed=0, protocol=protocol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # NaN metrics: meta has no values
        with dv.DeviceAudit(META):
            rows, curves, streams = drift.run_grid(g, split, _configs(), [method], [1], hidden=8, memory_size=12,
                                                   eval_every=3, joint_epochs=2, cache=False, progress=False,
                                                   protocol=protocol, device=META)
    assert len(rows) == 2 and {r["method"] for r in rows} == {method}
    assert all(np.isnan(r["A_AUC"]) for r in rows)   # evaluated on meta: no values to read
    if method != "joint":
        when, acc = curves[(_configs()[1], method, 1)]
        assert len(when) == len(acc) > 0 and np.isnan(acc).all()


def test_learners_keep_their_model_and_memory_on_meta(graph):
    g, split = drift.protocol_data(graph, 2, 0.2, seed=0, protocol="text")
    stream = drift.gaussian_stream(split.task_nodes, 10, sigma=2.0, seed=1)
    for method in ("er", "ssm", "dmsg", "gss"):
        with torch_seeded(1):
            model = GCN(g.x, g.edge_index, g.num_classes, hidden=8)
        learner = drift.make_learner(method, model, memory_size=12, device=META)
        with dv.DeviceAudit(META):
            run = drift.run_stream(learner, stream, g.y, split.test_idx, split.test_task, eval_every=4)
        assert np.isnan(run.losses).all() and len(run.losses) == stream.num_batches
        assert all(t.device == META for t in [*model.parameters(), *model.buffers()])
        assert model.neighbors(0).device.type == "cpu"   # the host copy of the graph stays on the host


def test_value_driven_branches_on_meta(graph, monkeypatch):
    """The branches a value decides (GSS replacing, the detector firing, DMSG pruning), forced on meta."""
    g, split = drift.protocol_data(graph, 2, 0.2, seed=0, protocol="text")
    x = torch.as_tensor(np.concatenate(split.task_nodes)[:60]).reshape(6, 10)

    def learner(method, authors=False, **kw):
        with torch_seeded(0):
            model = (AuthorsGCN if authors else GCN)(g.x, g.edge_index, g.num_classes, hidden=8)
        make = make_authors_learner if authors else drift.make_learner
        return make(method, model, memory_size=10, device=META, **kw)

    def stream(s):
        with dv.DeviceAudit(META):
            for b in x:
                s.observe(b.to(META), g.y[b].to(META))

    gss = learner("gss")
    monkeypatch.setattr(type(gss), "scores", lambda self, xb, yb: np.zeros(len(yb)))   # c = 0 < 2: replace
    stream(gss)
    assert len(gss.mem_y) == 10 and gss.mem_x.device == META

    agss = learner("gss", authors=True)
    monkeypatch.setattr(type(agss), "_read", staticmethod(lambda cos: [-1.0 for _ in cos]))   # below threshold
    stream(agss)
    assert len(agss.mem_y) == 10 and agss.mem_x.device == META

    for authors in (False, True):
        mas = learner("mas_star", authors=authors)
        monkeypatch.setattr(mas.detector, "update", lambda loss: True)   # fires every step
        stream(mas)
        assert mas.num_updates == 6 and all(v.device == META for v in mas.omega.values())

    emb = torch.randn(12, 4).to(META)
    labels = torch.tensor([0, 1, 2] * 4).to(META)
    with dv.DeviceAudit(META):
        keep = DMSG._diverse_prune(emb, labels, 3, 3)
    assert keep.shape == (9,) and keep.device == META


@pytest.mark.parametrize("name", ["gss", "mas_star"])
def test_task_free_strategies_on_vector_inputs_on_meta(name):
    """GSS and MAS* on an MLP (GSS's per-row gradients without a graph model's head), on meta
    (tests/test_device.py leaves the graph and task-free DRIFT strategies to this file)."""
    from clkit.models import MLP
    from clkit.strategies import make_strategy

    s = make_strategy(name, MLP(6, 4, hidden=(8,)), device=META, memory_size=8)
    g = torch.Generator().manual_seed(1)
    with dv.DeviceAudit(META):
        for _ in range(5):
            s.observe(torch.randn(4, 6, generator=g).to(META), torch.tensor([0, 1, 2, 3]).to(META))
    assert s.steps == 5 and all(p.device == META for p in s.model.parameters())


# ------------------------------------------------------------- the accelerator paths, on the CPU

class _AcceleratorGCN(GCN):
    on_host = False   # take the accelerator's paths on the CPU


class _AcceleratorAuthorsGCN(AuthorsGCN):
    on_host = False


def test_index_add_propagation_equals_the_csr_product(graph):
    crow, col, val = normalized_adjacency(graph.edge_index, graph.num_nodes)
    row = rows_of(crow, len(col))
    assert torch.equal(row, torch.repeat_interleave(torch.arange(graph.num_nodes), crow[1:] - crow[:-1]))
    h = torch.randn(graph.num_nodes, 5)
    by_index = torch.zeros(graph.num_nodes, 5).index_add_(0, row, val[:, None] * h[col])
    torch.testing.assert_close(propagate(crow, col, val, row, h, graph.num_nodes), by_index)


def test_accelerator_forward_equals_the_neighbourhood_gather(graph):
    with torch_seeded(0):
        cpu = GCN(graph.x, graph.edge_index, 4, hidden=8)
    acc = _AcceleratorGCN(graph.x, graph.edge_index, 4, hidden=8)
    acc.load_state_dict(cpu.state_dict())
    idx = torch.tensor([3, 17, 17, 50, -6, -1])   # repeated and isolated (negative) nodes
    for net in (cpu, acc):
        net.zero_grad()
        net(idx).square().sum().backward()
    torch.testing.assert_close(acc(idx), cpu(idx), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(acc.lin1.weight.grad, cpu.lin1.weight.grad, atol=1e-5, rtol=1e-4)


def test_device_sampler_keeps_up_to_fanout_edges_per_node(graph):
    net = _AcceleratorAuthorsGCN(graph.x, graph.edge_index, 4, hidden=8, seed=3)
    lens = net.crow[1:] - net.crow[:-1]
    for fanout in (1, 3, 25):
        keep = net.sampled_nonzeros(fanout)
        assert torch.equal(torch.bincount(net.row[keep], minlength=net.num_nodes), lens.clamp(max=fanout))
    assert not torch.equal(net.sampled_nonzeros(2), net.sampled_nonzeros(2))   # a fresh draw every call
    cpu = AuthorsGCN(graph.x, graph.edge_index, 4, hidden=8, seed=3)
    cpu.load_state_dict(net.state_dict())
    idx = torch.arange(0, 80, 7)
    torch.testing.assert_close(net.eval()(idx), cpu.eval()(idx), atol=1e-4, rtol=1e-5)   # full neighbourhoods
    full = AuthorsGCN(graph.x, graph.edge_index, 4, hidden=8, fanouts=(100, 100))
    full_acc = _AcceleratorAuthorsGCN(graph.x, graph.edge_index, 4, hidden=8, fanouts=(100, 100))
    full_acc.load_state_dict(full.state_dict())
    torch.testing.assert_close(full_acc.train()(idx), full.eval()(idx), atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("normalize", [True, False])
def test_block_diagonal_adjacency_equals_normalising_the_union(normalize):
    g = torch.Generator().manual_seed(0)
    parts, edges, offset = [], [], 0
    for n in (5, 1, 7, 3):
        e = torch.randint(0, n, (2, 2 * n), generator=g)
        e = torch.cat([e, e.flip(0)], 1)
        parts.append(Adjacency.from_edges(e, n, normalize))
        edges.append(e + offset)
        offset += n
    union = Adjacency.from_edges(torch.cat(edges, 1), offset, normalize)
    block = Adjacency.block_diag(parts)
    for a, b in zip((union.crow, union.col, union.val, union.row), (block.crow, block.col, block.val, block.row)):
        assert torch.equal(a, b)   # bitwise: the replay's and the evaluation's numbers do not change


def test_ssm_replays_the_sampled_subgraphs_in_one_pass_as_before(graph):
    with torch_seeded(0):
        net = GCN(graph.x, graph.edge_index, 4, hidden=8)
    s = SSM(net, memory_size=6, optimizer="adam", seed=2)
    for t in range(4):
        idx = torch.arange(10 * t, 10 * t + 10)
        s.observe(idx, graph.y[idx])
    assert sorted(s.memory.stored_ids().tolist()) == sorted(s.memory.data()[0].tolist())
    gen = s.generator.get_state()
    new = s.replay_loss(5)
    s.generator.set_state(gen)
    mx, my, _ = s.memory.sample(5, s.generator)   # the same draw, scored as the kit did before
    nodes, edges, centers, off = [], [], [], 0
    for v in mx.tolist():
        sn, se = sparsified_subgraph(net, v, (5, 5), "degree", 2)
        nodes.append(sn)
        edges.append(se + off)
        centers.append(off)
        off += len(sn)
    old = s.criterion(net.forward_subgraph(torch.cat(nodes), torch.cat(edges, 1), torch.tensor(centers)), my)
    assert torch.equal(new, old)


def test_task_evaluator_in_one_pass_equals_task_by_task(graph):
    g, split = drift.protocol_data(graph, 2, 0.2, seed=0, protocol="authors")
    with torch_seeded(0):
        net = AuthorsGCN(g.x, g.edge_index, g.num_classes, hidden=8)

    class TaskByTask(torch.nn.Module):   # no forward_blocks: scored task by task
        logit_limit = None

        def forward_subgraph(self, *a):
            return net.forward_subgraph(*a)

    ev = drift.TaskEvaluator(g.edge_index, g.y, split, "authors")
    acc, pooled = ev(net)
    acc2, pooled2 = ev(TaskByTask())
    assert np.array_equal(acc, acc2) and pooled == pooled2 and np.isfinite(acc).all()


def _old_prune(emb, labels, excess):
    """DMSG's pruning as the kit wrote it before it ran on the device (reads in the loop)."""
    alive = torch.ones(len(labels), dtype=torch.bool)
    dist = torch.cdist(emb, emb)
    dist.fill_diagonal_(float("inf"))
    dist[labels[:, None] != labels[None, :]] = float("inf")
    for _ in range(excess):
        counts = torch.bincount(labels[alive], minlength=int(labels.max()) + 1)
        cand = torch.nonzero(alive & (labels == int(torch.argmax(counts)))).ravel()
        drop = cand[int(torch.argmin(dist[cand][:, alive].min(dim=1).values))]
        alive[drop] = False
    return torch.nonzero(alive).ravel()


@pytest.mark.parametrize("seed", range(6))
def test_dmsg_pruning_on_the_device_keeps_the_same_rows(seed):
    g = torch.Generator().manual_seed(seed)
    emb = torch.randn(30, 4, generator=g)
    labels = torch.randint(0, 4, (30,), generator=g)
    labels[0] = 5   # a class of one row: no neighbour of its class
    assert torch.equal(DMSG._diverse_prune(emb, labels, 12, 6), _old_prune(emb, labels, 12))


@pytest.mark.parametrize("protocol", ["text", "authors"])
def test_bf16_runs_on_the_cpu(graph, protocol):
    g, split = drift.protocol_data(graph, 2, 0.2, seed=0, protocol=protocol)
    rows, _, _ = drift.run_grid(g, split, _configs()[1:], ["bare", "joint", "er", "ssm", "mas_star"], [1], hidden=8,
                                memory_size=12, eval_every=3, joint_epochs=2, cache=False, progress=False,
                                protocol=protocol, precision="bf16")
    assert all(0.0 <= r["A_AUC"] <= 1.0 for r in rows)


@pytest.mark.skipif(not __import__("clkit.device", fromlist=["fork_safe"]).fork_safe(),
                    reason="a fork could not train here (a GPU is present): run_grid runs one process")
@pytest.mark.parametrize("protocol", ["text", "authors"])
def test_seeds_in_forked_processes_equal_one_process(graph, protocol):
    """run_grid(workers=2) shares the seeds among two processes: rows, curves and streams as one process
    gives them, in its order, with the same numbers; torch's thread setting is left as it was."""
    import pandas as pd

    g, split = drift.protocol_data(graph, 2, 0.2, seed=0, protocol=protocol)
    kw = dict(hidden=8, memory_size=12, eval_every=3, joint_epochs=2, cache=False, progress=False,
              protocol=protocol)
    methods = ["bare", "joint", "er", "mas_star"]
    threads = torch.get_num_threads()
    r1, c1, s1 = drift.run_grid(g, split, _configs(), methods, [1, 2, 3], workers=1, **kw)
    r2, c2, s2 = drift.run_grid(g, split, _configs(), methods, [1, 2, 3], workers=2, **kw)
    assert torch.get_num_threads() == threads
    assert pd.DataFrame(r1).equals(pd.DataFrame(r2)) and len(r1) == len(_configs()) * len(methods) * 3
    assert list(c1) == list(c2) and list(s1) == list(s2)
    for k in c1:
        assert np.array_equal(c1[k][0], c2[k][0]) and np.array_equal(c1[k][1], c2[k][1], equal_nan=True)
    with pytest.raises(ValueError, match="workers"):
        drift.run_grid(g, split, _configs(), methods, [1], workers=0, **kw)


# ----------------------------------------------------------------------------------------- budget

def test_budget_counts_match_a_hand_count(graph):
    """text protocol, the five main configurations, Bare and ER on two seeds, Joint, Δ = 3."""
    data = {"text": drift.protocol_data(graph, 2, 0.2, seed=0, protocol="text")}
    split = data["text"][1]
    configs = drift.study_configs(sigma=2.0, sigmas=[2.0], p=0.3, k_bl=1, batch_size=10, batch_sizes=[10],
                                  sampling="without")
    study = drift_budget.count(data, configs, ["bare", "joint", "er"], ["bare"], [1, 2], eval_every=3,
                               joint_epochs=4, cache=False)
    cfgs = configs["main"] + configs["sampling"]
    lengths = [drift.build_stream(split.task_nodes, c.setting, dataset="x", batch_size=10, sampling=c.sampling,
                                  seed=1, sigma=c.sigma, p=c.p, k_bl=c.k_bl, cache=False).num_batches for c in cfgs]
    n_train = sum(map(len, split.task_nodes))   # 64: ceil(64 / 256) = 1 Joint step per epoch
    assert study.online_runs == 5 * 2 * 2 and study.joint_trainings == 2 and study.trainings == 22
    assert study.steps() == sum(lengths) * 2 * 2
    assert study.evaluations() == sum(-(-T // 3) for T in lengths) * 2 * 2 + 2
    assert study.joint == [{"protocol": "text", "trainings": 2, "steps": 4 * -(-n_train // 256), "batch_size": 256,
                            "epochs": 4}]
    b = drift_budget.estimate(data, configs, ["bare", "joint", "er"], ["bare"], [1, 2], eval_every=3,
                              joint_epochs=4, hidden=8, cache=False, steps=2)
    rec = b.record()
    assert rec["trainings"] == 22 and [w["name"] for w in rec["work"]] == ["online steps", "evaluation passes",
                                                                         "Joint steps"]
    assert rec["work"][0]["count"] == study.steps() and rec["estimated_seconds"] > 0
    assert "22 trainings" in b.text() and "text bare" in rec["work"][0]["calibration"]
    assert "the σ calibration" in b.text()   # what the estimate leaves out is said


def test_budget_counts_the_authors_hard_loop(graph):
    data = {"authors": drift.protocol_data(graph, 2, 0.2, seed=0, protocol="authors")}
    configs = {"main": [drift.StreamConfig("hard")], "sigma": [], "sampling": [], "batch": []}
    study = drift_budget.count(data, configs, ["bare"], ["bare"], [1], eval_every=100, joint_epochs=1, cache=False)
    (run,) = study.runs
    tasks = study.streams[("authors", configs["main"][0])].counts.argmax(1)
    assert run["task_changes"] == data["authors"][1].num_tasks == len(np.unique(tasks))
    assert run["evals"] == 2 + run["task_changes"] - 1   # batch 0, every task change, the end


# ------------------------------------------------------------------------------- parameter sets

def test_paper_set_has_the_seeds_its_verdicts_need():
    from clkit.rehearsal import MIN_SEEDS

    assert len(PAPER["seeds"]) >= MIN_SEEDS and len(set(PAPER["seeds"])) == len(PAPER["seeds"])


def test_rehearsal_plan_cuts_sizes_and_keeps_the_structure():
    from clkit.drift.rehearsal import FIXTURE_SIZES, PLAN

    changes, rows = PLAN.cut(PAPER)
    assert changes["joint_epochs"] <= 5 and len(changes.get("seeds", PAPER["seeds"])) == 4
    for kept in ("methods", "hidden", "protocol", "sigmas", "batch_sizes", "eval_every", "dataset"):
        assert kept not in changes
    assert PLAN.fixtures(PAPER) == {"corafull": FIXTURE_SIZES["corafull"]}
    for graph in ("ogbn_arxiv", "reddit", "roman_empire"):    # the other paper sets' graphs are fabricated too
        assert PLAN.fixtures({**PAPER, "dataset": graph}) == {graph: FIXTURE_SIZES[graph]}
    with pytest.raises(ValueError, match="dataset 'graph.pt' has no fabricated copy"):
        PLAN.fixtures({**PAPER, "dataset": "graph.pt"})
