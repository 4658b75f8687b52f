"""DRIFT learners (GSS, MAS*, SSM, SEM, DMSG), the online runner and the paper's qualitative findings."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import clkit.drift as drift
from clkit._seed import torch_seeded
from clkit.data.graphs import csbm
from clkit.models.gcn import GCN
from clkit.strategies import available_strategies
from clkit.strategies.graph import forman_curvature, sparsified_subgraph
from clkit.strategies.task_free import LossShiftDetector, head_gradient_cosine


@pytest.fixture(scope="module")
def small():
    g = csbm(600, 8, feature_signal=0.7, seed=1)
    split = drift.split_tasks(g.y.numpy(), 2, 0.2, seed=1)
    return g, split


def _run(method, g, split, stream, seed=1, hidden=32, **kw):
    with torch_seeded(seed):
        model = GCN(g.x, g.edge_index, g.num_classes, hidden=hidden)
    learner = drift.make_learner(method, model, seed=seed, memory_size=40, **kw)
    return learner, drift.run_stream(learner, stream, g.y, split.test_idx, split.test_task, eval_every=3)


def test_all_drift_methods_are_registered():
    names = available_strategies()
    for m, reg in drift.evaluate.REGISTRY_NAME.items():
        assert reg in names, m


@pytest.mark.parametrize("name", ["ssm", "sem", "dmsg"])
def test_graph_strategies_refuse_other_models(name):
    from clkit.models import MLP
    from clkit.strategies import make_strategy
    from clkit.strategies.base import _REGISTRY

    assert _REGISTRY[name].needs_graph_model
    with pytest.raises(TypeError, match="model must hold its graph"):
        make_strategy(name, MLP(2, 2))


def test_head_gradient_cosine_matches_autograd():
    g = csbm(200, 4, seed=0)
    net = GCN(g.x, g.edge_index, 4, hidden=8)
    idx = torch.tensor([0, 5, 9, 40])
    grads = []
    for i in idx:
        out = net(i.view(1))
        gw, gb = torch.autograd.grad(F.cross_entropy(out, g.y[i].view(1)), [net.head.weight, net.head.bias])
        grads.append(torch.cat([gw.ravel(), gb]))
    G = torch.stack(grads)
    ref = F.cosine_similarity(G[:, None], G[None], dim=2)
    with torch.no_grad():
        z = net.embed(idx)
        a = torch.softmax(net.head(z), 1) - F.one_hot(g.y[idx], 4).float()
    torch.testing.assert_close(head_gradient_cosine(a, z, a, z), ref, atol=1e-5, rtol=1e-4)


def test_loss_shift_detector_needs_a_peak_then_a_plateau():
    d = LossShiftDetector(window_length=3, window_mean_threshold=0.5, window_variance_threshold=0.05)
    fired = [d.update(v) for v in [2.0] * 5 + [0.2] * 6 + [0.2] * 10]
    assert sum(fired) == 1  # the first plateau; a flat loss afterwards never fires again
    fired = [d.update(v) for v in [3.0] * 5 + [0.1] * 5]
    assert sum(fired) == 1  # a new peak, then a plateau


def test_mas_star_without_a_detection_is_exactly_bare(small):
    g, split = small
    stream = drift.gaussian_stream(split.task_nodes, 10, sigma=3.0, seed=1)
    never = dict(window_mean_threshold=0.0)  # the plateau test can never pass
    mas, r_mas = _run("mas_star", g, split, stream, **never)
    _, r_bare = _run("bare", g, split, stream)
    assert mas.num_updates == 0
    np.testing.assert_array_equal(r_mas.acc, r_bare.acc)


def test_gss_memory_stays_within_budget_and_prefers_new_directions(small):
    g, split = small
    stream = drift.hard_stream(split.task_nodes, 10, seed=1)
    gss, run = _run("gss", g, split, stream)
    assert len(gss.mem_y) == 40 and (gss.mem_score >= 0).all() and (gss.mem_score <= 2).all()
    # a row identical to a memory row it is compared with (cosine 1 -> score 2) never enters
    gss.gss_constraints = 40
    before = gss.mem_x.clone()
    x = gss.mem_x[:5].clone()
    gss.after_step(x, gss.mem_y[:5].clone(), None)
    assert torch.equal(torch.sort(before).values, torch.sort(gss.mem_x).values)


def test_subgraph_memories_store_sparsified_subgraphs(small):
    g, split = small
    net = GCN(g.x, g.edge_index, g.num_classes, hidden=8)
    edges = set(map(tuple, g.edge_index.T.tolist()))
    for rule in ("degree", "curvature"):
        nodes, e = sparsified_subgraph(net, 3, (5, 5), rule, seed=0)
        assert nodes[0] == 3 and len(nodes) <= 1 + 5 + 25
        assert all((int(nodes[a]), int(nodes[b])) in edges for a, b in e.T.tolist())
        assert len(set(e[1][e[0] == 0].tolist())) == min(5, len(net.neighbors(3)))
    # SEM keeps the highest-curvature neighbours
    nb = net.neighbors(3)
    curv = forman_curvature(net, 3, nb)
    nodes, e = sparsified_subgraph(net, 3, (5,), "curvature")
    kept = nodes[1:]
    assert forman_curvature(net, 3, kept).min() >= torch.sort(curv, descending=True).values[min(5, len(nb)) - 1]


@pytest.mark.parametrize("method", ["ssm", "sem", "dmsg", "er", "agem"])
def test_memory_methods_run_and_fill_memory(small, method):
    g, split = small
    stream = drift.hard_stream(split.task_nodes, 10, seed=1)
    learner, run = _run(method, g, split, stream)
    assert run.acc.shape == (len(drift.eval_points(stream.num_batches, 3)), split.num_tasks)
    assert np.isfinite(run.acc).all() and np.isfinite(run.losses).all()
    size = len(learner.mem_nodes) if method == "dmsg" else len(learner.memory)
    assert size == 40
    if method == "dmsg":  # class-balanced diversified memory
        counts = np.bincount(learner.mem_y.numpy(), minlength=g.num_classes)
        assert counts.max() - counts.min() <= 1


@pytest.mark.parametrize("method", ["er", "gss", "dmsg", "ssm"])
def test_runs_are_deterministic_whatever_the_global_rng(small, method):
    g, split = small
    stream = drift.gaussian_stream(split.task_nodes, 10, sigma=3.0, seed=1)
    torch.manual_seed(123)
    _, a = _run(method, g, split, stream)
    torch.manual_seed(456)
    np.random.seed(7)
    _, b = _run(method, g, split, stream)
    np.testing.assert_array_equal(a.acc, b.acc)


def test_paper_findings_at_small_scale():
    """Hard transitions: Bare forgets; replay keeps more; Joint bounds everything. Overlap helps Bare."""
    g = csbm(2000, 20, feature_signal=0.7, seed=0)
    split = drift.split_tasks(g.y.numpy(), 2, 0.2, seed=0)
    hard = drift.hard_stream(split.task_nodes, 10, seed=0)
    res = {}
    for m in ["bare", "er"]:
        _, r = _run(m, g, split, hard, seed=0, hidden=64)
        res[m] = drift.stream_metrics(r.acc)
    assert res["bare"]["AF"] < -0.2  # catastrophic forgetting
    assert res["er"]["AA"] > res["bare"]["AA"] + 0.1
    joint = drift.train_joint(lambda: GCN(g.x, g.edge_index, 20, hidden=64), g.y, np.concatenate(split.task_nodes),
                              split.test_idx, split.test_task, split.num_tasks, epochs=20, seed=0)
    assert joint.mean() > max(r["AA"] for r in res.values()) + 0.2
    auc = []
    for s in [1.0, 30.0]:
        _, r = _run("bare", g, split, drift.gaussian_stream(split.task_nodes, 10, sigma=s, seed=0), seed=0, hidden=64)
        auc.append(drift.stream_metrics(r.acc)["A_AUC"])
    assert auc[1] > auc[0]  # implicit rehearsal


def test_make_learner_and_check_params_bad_input():
    net = GCN(torch.zeros(3, 2), torch.tensor([[0, 1], [1, 0]]), 2, hidden=4)
    with pytest.raises(ValueError, match="method"):
        drift.make_learner("ewc", net)
    with pytest.raises(ValueError, match="memory_size"):
        drift.make_learner("er", net, memory_size=0)
    base = dict(dataset="csbm", setting="gaussian", sigma=1.0, sigmas=[1.0], p=0.3, k_bl=2, batch_size=10,
                batch_sizes=[10], sampling="without", methods=["bare"], memory_size=100, eval_every=5, seeds=[1],
                classes_per_task=2, tau=0.98, hidden=8, lr=0.005, joint_epochs=5, test_fraction=0.2)
    for key, bad in [("p", 1.0), ("k_bl", 0), ("tau", 0.0), ("batch_size", 0), ("sigmas", [1.0, -2.0]),
                     ("methods", ["bare", "lwf"]), ("sigma", float("inf")), ("seeds", [])]:
        with pytest.raises((ValueError, TypeError), match=key):
            drift.check_params(**{**base, key: bad})


def test_learner_kwargs_reach_the_drift_strategy_under_both_protocols(monkeypatch):
    """Issue 26: per-learner settings are checked against the method's class in every protocol and passed on."""
    from clkit.drift import experiment
    from clkit.drift.experiment import check_learner_settings

    assert check_learner_settings({"mas_star": {"mas_lambda": 10.0}}, ["bare", "mas_star"],
                                  ["text", "authors"]) == {"mas_star": {"mas_lambda": 10.0}}
    with pytest.raises(ValueError, match=r"learner_kwargs\['joint'\]: unknown keyword 'epochs'"):
        check_learner_settings({"joint": {"epochs": 3}}, ["joint"])
    seen = []
    for name in ("make_learner", "make_authors_learner"):
        real = getattr(experiment, name, None) or getattr(__import__("clkit.drift.authors").drift.authors, name)

        def recording(method, model, _real=real, _name=name, **kw):
            seen.append((_name, method, kw.get("mas_lambda")))
            return _real(method, model, **kw)

        if hasattr(experiment, name):
            monkeypatch.setattr(experiment, name, recording)
        else:
            monkeypatch.setattr("clkit.drift.authors." + name, recording)
    g = csbm(120, 4, feature_signal=1.0, seed=1)
    for protocol in ("text", "authors"):
        g2, sp = drift.protocol_data(g, 2, 0.2, seed=1, protocol=protocol)
        drift.run_grid(g2, sp, [drift.StreamConfig("gaussian", sigma=2.0)], ["mas_star"], [1], hidden=8,
                       eval_every=100, cache=False, progress=False, protocol=protocol,
                       learner_kwargs={"mas_star": {"mas_lambda": 7.0}})
    assert {(m, lam) for _, m, lam in seen} == {("mas_star", 7.0)} and len({n for n, _, _ in seen}) == 2
