"""clkit.drift.protocol: the paper's text vs the authors' released code, on hand-built examples."""

import math

import numpy as np
import pytest
import torch

import clkit.drift as drift
from clkit.data.graphs import csbm
from clkit.drift.authors import AuthorsMASStar, AuthorsSSM, isolate, make_authors_learner, small_subgraph
from clkit.drift.experiment import LatentTaskSplit
from clkit.drift.protocol import (TaskEvaluator, authors_overlap_index, class_limit, protocol_eval_points,
                                  protocol_metrics, schedule, segment_references)
from clkit.models.gcn import GCN, AuthorsGCN


# ---------------------------------------------------------------- schedule parity
def _reference_schedule(task_sizes, batch_size, sigma):
    """Per-batch transcription of the algorithm in the authors' ``gaussian_utils.py``:
    ``compute_centers``, ``gaussian_task_weights(b, ...)`` at integer b,
    ``largest_remainder_counts`` (``argsort(frac)[::-1]``) and ``overlap_index`` (max < 0.9)."""
    counts_k = np.array([math.ceil(n / batch_size) for n in task_sizes])
    cum = np.concatenate([[0], np.cumsum(counts_k)])
    centers = cum[:-1] + counts_k / 2.0
    W, C = [], []
    for b in range(int(cum[-1])):
        log_w = -0.5 * ((b - centers) / sigma) ** 2
        log_w -= log_w.max()
        w = np.exp(log_w)
        w = w / w.sum()
        raw = w * batch_size
        c = np.floor(raw).astype(np.int64)
        rem = int(batch_size - c.sum())
        c[np.argsort(raw - c)[::-1][:rem]] += 1
        W.append(w)
        C.append(c)
    W = np.stack(W)
    return W, np.stack(C), float((W.max(axis=1) < 0.9).mean())


@pytest.mark.parametrize("case", range(6))
def test_authors_schedule_equals_their_code_exactly(case):
    rng = np.random.default_rng(case)
    k = int(rng.integers(2, 10))
    sizes = [int(rng.integers(5, 40))] * k if case % 3 == 0 else rng.integers(1, 150, k).tolist()  # ties too
    batch_size = int(rng.integers(3, 21))
    sigma = float(rng.uniform(0.2, 30.0))
    W, C, overlap = _reference_schedule(sizes, batch_size, sigma)
    w, c = schedule(sizes, batch_size, sigma, "authors")
    np.testing.assert_array_equal(w, W)
    np.testing.assert_array_equal(c, C)
    assert drift.overlap_index(w, drift.DEFAULT_TAU) == overlap == authors_overlap_index(w)
    # the stream built under the authors' protocol realises exactly these counts
    nodes = np.split(np.arange(sum(sizes)), np.cumsum(sizes)[:-1])
    s = drift.gaussian_stream(nodes, batch_size, sigma, protocol="authors", seed=case)
    np.testing.assert_array_equal(s.counts, C)


def test_text_schedule_is_the_midpoint_one():
    w, _ = schedule([20, 20], 10, 1.0, "text")
    a, b = math.exp(-(0.5 - 1) ** 2 / 2), math.exp(-(0.5 - 3) ** 2 / 2)
    assert w[0, 0] == pytest.approx(a / (a + b))
    w2, _ = schedule([20, 20], 10, 1.0, "authors")
    assert w2[2].tolist() == [0.5, 0.5]  # t = 2 exactly between the centres 1 and 3


def test_default_tau_is_the_authors():
    assert drift.DEFAULT_TAU == drift.AUTHORS_TAU == 0.9


def test_streams_of_the_two_protocols_are_cached_apart(tmp_path):
    nodes = [np.arange(30), np.arange(30, 60)]
    a = drift.build_stream(nodes, "gaussian", dataset="t", sigma=1.0, root=tmp_path)
    b = drift.build_stream(nodes, "gaussian", dataset="t", sigma=1.0, root=tmp_path, protocol="authors")
    assert a.meta["key"] != b.meta["key"] and not b.meta["cached"]
    assert not np.array_equal(a.weights, b.weights)


# ---------------------------------------------------------------- evaluation choices
class _Fixed(torch.nn.Module):
    """Logits per node from a table; on a subgraph, a centre whose neighbours are absent flips."""

    logit_limit = None

    def __init__(self, table, flip_alone=()):
        super().__init__()
        self.table = torch.as_tensor(table, dtype=torch.float32)
        self.flip_alone = set(flip_alone)

    def forward(self, idx):
        return self.table[torch.as_tensor(idx)]

    def forward_subgraph(self, nodes, edge_index, centers):
        out = self.table[nodes[centers]].clone()
        for i, c in enumerate(centers.tolist()):
            has_nb = bool((edge_index[1] == c).any()) if edge_index.numel() else False
            if int(nodes[c]) in self.flip_alone and not has_nb:
                out[i] = out[i][[1, 0, 3, 2]]
        return out


def _split():
    # task 0: classes (0, 1), train nodes 0, 1, test nodes 2, 3; task 1: classes (2, 3), train 4, test 5, 6, 7
    return LatentTaskSplit([np.array([0, 1]), np.array([4])], np.array([2, 3, 5, 6, 7]), np.array([0, 0, 1, 1, 1]),
                           [(0, 1), (2, 3)])


Y = torch.tensor([0, 1, 0, 1, 2, 2, 3, 3])


def test_class_masking_scores_a_task_over_its_classes_only():
    table = torch.zeros(8, 4)
    table[2] = torch.tensor([1.0, 0.0, 0.0, 5.0])  # true 0: class 3 wins over all, class 0 within 0..1
    table[3] = torch.tensor([0.0, 1.0, 0.0, 0.0])  # true 1: right either way
    table[5] = torch.tensor([0.0, 0.0, 1.0, 0.0])
    table[6] = torch.tensor([0.0, 0.0, 0.0, 1.0])
    table[7] = torch.tensor([0.0, 0.0, 0.0, 1.0])
    ei = torch.tensor([[0, 2, 1, 3, 4, 5, 5, 6, 6, 7], [2, 0, 3, 1, 5, 4, 6, 5, 7, 6]])
    model = _Fixed(table)
    text, _ = TaskEvaluator(ei, Y, _split(), "text")(model)
    authors, _ = TaskEvaluator(ei, Y, _split(), "authors")(model)
    assert text.tolist() == [0.5, 1.0] and authors.tolist() == [1.0, 1.0]
    assert class_limit([(0, 1), (2, 3)], 0) == 2 and class_limit([(0, 1), (2, 3)], 1) == 4


def test_induced_subgraph_removes_edges_to_other_tasks():
    table = torch.zeros(8, 4)
    table[[2, 3, 5, 6, 7], [0, 1, 2, 3, 3]] = 1.0  # every test node right when it keeps its neighbours
    # node 2's only neighbour is node 4 (task 1): inside task 0's induced subgraph it is alone -> flips
    ei = torch.tensor([[2, 4, 1, 3, 5, 6], [4, 2, 3, 1, 6, 5]])
    model = _Fixed(table, flip_alone=[2])
    text, _ = TaskEvaluator(ei, Y, _split(), "text")(model)
    authors, _ = TaskEvaluator(ei, Y, _split(), "authors")(model)
    assert text.tolist() == [1.0, 1.0]
    assert authors[0] == 0.5  # node 2 lost its cross-task edge
    nodes, sub, centers, *_ = TaskEvaluator(ei, Y, _split(), "authors").parts[0]
    assert nodes.tolist() == [0, 1, 2, 3] and centers.tolist() == [2, 3] and sub.tolist() == [[1, 3], [3, 1]]


def test_pooled_accuracy_weights_tasks_by_test_size():
    table = torch.zeros(8, 4)
    table[[2, 3], [0, 1]] = 1.0  # task 0: 2/2 right
    table[[5, 6, 7], [0, 0, 0]] = 1.0  # task 1: 0/3 right (masked to 0..3, class 0 wins)
    acc, pooled = TaskEvaluator(torch.zeros((2, 0), dtype=torch.int64), Y, _split(), "authors")(_Fixed(table))
    assert acc.tolist() == [1.0, 0.0] and pooled == pytest.approx(2 / 5)
    m_text = protocol_metrics(acc[None], [pooled], "text")
    m_auth = protocol_metrics(acc[None], [pooled], "authors")
    assert m_text["A_AUC"] == 0.5 and m_auth["A_AUC"] == pytest.approx(0.4)


def test_batch_zero_is_an_evaluation_point_and_counts_in_a_auc():
    assert protocol_eval_points(9, 3, "text").tolist() == [3, 6, 9]
    assert protocol_eval_points(9, 3, "authors").tolist() == [0, 3, 6, 9]
    # untrained 0.1, then 0.5, 0.5, 0.5
    acc = np.array([[0.1, 0.1], [0.5, 0.5], [0.5, 0.5], [0.5, 0.5]])
    pooled = acc.mean(1)
    assert protocol_metrics(acc[1:], pooled[1:], "text")["A_AUC"] == 0.5
    assert protocol_metrics(acc, pooled, "authors")["A_AUC"] == pytest.approx(0.4)


def test_hard_forgetting_against_the_end_of_the_own_segment():
    # two tasks of 2 batches each, evaluations after 0, 1, 2, 3, 4 batches
    w = np.eye(2)[[0, 0, 1, 1]]
    acc = np.array([[0.0, 0.0], [0.9, 0.0], [0.6, 0.0], [0.4, 0.8], [0.3, 0.9]])
    ev = [0, 1, 2, 3, 4]
    assert segment_references(w, ev).tolist() == [2, 4]
    m = protocol_metrics(acc, acc.mean(1), "authors", weights=w, eval_batches=ev, hard=True)
    # text: max over all evaluations (0.9 for task 0); authors: end of segment (0.6)
    assert m["AF"] == pytest.approx(((0.3 - 0.6) + 0.0) / 2)
    assert m["AF_s"] == pytest.approx(((0.3 - 0.9) + 0.0) / 2)
    assert protocol_metrics(acc, None, "text")["AF"] == pytest.approx(m["AF_s"])


def test_bad_protocol_is_refused_by_name():
    with pytest.raises(ValueError, match="protocol must be one of"):
        drift.get_protocol("code")
    with pytest.raises(ValueError, match="protocol"):
        drift.gaussian_stream([np.arange(5), np.arange(5, 10)], 5, 1.0, protocol="code")
    kw = dict(dataset="csbm", setting="gaussian", sigma=1.0, sigmas=[1.0], p=0.3, k_bl=2, batch_size=10,
              batch_sizes=[10], sampling="without", methods=["bare"], memory_size=10, eval_every=5, seeds=[1],
              classes_per_task=2, tau=0.9, hidden=8, lr=0.005, joint_epochs=5, test_fraction=0.2)
    with pytest.raises(ValueError, match="protocol"):
        drift.check_params(protocol="paper", **kw)
    drift.check_params(protocol=["text", "authors"], **kw)


# ---------------------------------------------------------------- backbone and training
def test_authors_gcn_sums_neighbours_without_bias_or_normalisation():
    x = torch.tensor([[1.0], [2.0], [4.0]])
    net = AuthorsGCN(x, torch.tensor([[0, 1], [1, 0]]), num_classes=1, hidden=1, fanouts=None)
    with torch.no_grad():
        net.lin1.weight.fill_(1.0)
        net.head.weight.fill_(1.0)
    net.eval()
    # h = relu(S x) = [3, 3, 4]; logits = S h = [6, 6, 4]
    assert net(torch.tensor([0, 1, 2])).flatten().tolist() == [6.0, 6.0, 4.0]
    assert net.lin1.bias is None and net.head.bias is None
    # negative index: node 0 entered isolated -> relu(x0) = 1
    assert net(isolate(torch.tensor([0]))).flatten().tolist() == [1.0]
    # the kit's GCN: isolated node = relu(lin1(x)) too
    g = GCN(x, torch.tensor([[0, 1], [1, 0]]), num_classes=2, hidden=3)
    assert torch.allclose(g.embed(torch.tensor([-1, 1])), torch.stack([torch.relu(g.lin1(x[0])), g.embed(torch.tensor([1]))[0]]))


def test_authors_gcn_samples_at_most_the_fanout():
    # a star: node 0 with 40 neighbours (41 in-edges with the self-loop)
    ei = torch.stack([torch.arange(1, 41), torch.zeros(40, dtype=torch.int64)])
    ei = torch.cat([ei, ei.flip(0)], 1)
    net = AuthorsGCN(torch.ones(41, 1), ei, num_classes=1, hidden=1, fanouts=(10, 25), seed=0)
    rowid, cols = net._sample(torch.tensor([0, 5]), 25)
    assert (rowid == 0).sum() == 25 and (rowid == 1).sum() == 2  # node 5: itself and 0
    assert len(set(cols[rowid == 0].tolist())) == 25
    with torch.no_grad():
        net.lin1.weight.fill_(1.0)
        net.head.weight.fill_(1.0)
    net.train()
    # 25 sampled sources, each summing <= 10 inputs of 1: node 0 itself sums 10, leaves sum 2
    out = float(net(torch.tensor([0])).detach())
    assert 25 * 2 <= out <= 10 + 24 * 2
    net.eval()
    assert float(net(torch.tensor([0])).detach()) == 41 + 40 * 2


def test_seen_class_limit_masks_logits():
    g = csbm(60, 4, seed=0)
    net = GCN(g.x, g.edge_index, 4, hidden=4)
    net.logit_limit = 2
    out = net(torch.arange(5))
    assert torch.isinf(out[:, 2:]).all() and torch.isfinite(out[:, :2]).all()


def test_authors_methods_replay_isolated_nodes_and_follow_their_budgets():
    g = csbm(300, 4, avg_degree=12, seed=0)
    y = g.y
    er = make_authors_learner("er", GCN(g.x, g.edge_index, 4, hidden=8), memory_size=20)
    for t in range(3):
        idx = torch.arange(10 * t, 10 * t + 10)
        er.observe(idx, y[idx])
    assert (er.memory.data()[0] < 0).all()
    assert make_authors_learner("agem", GCN(g.x, g.edge_index, 4, hidden=8)).agem_sample_size == 10
    ssm = make_authors_learner("ssm", GCN(g.x, g.edge_index, 4, hidden=8), memory_size=100)
    assert isinstance(ssm, AuthorsSSM) and ssm.memory_size == 10
    for v in range(20):
        nodes, e = small_subgraph(ssm.model, v)
        assert len(nodes) <= 11 and int(nodes[0]) == v


def test_authors_mas_star_penalty_factor_and_current_batch_importance():
    g = csbm(100, 4, seed=0)
    net = GCN(g.x, g.edge_index, 4, hidden=4)
    s = AuthorsMASStar(net, optimizer="adam", lr=0.01, window_length=1, window_mean_threshold=100.0,
                       window_variance_threshold=100.0)
    idx = torch.arange(10)
    s.observe(idx, g.y[idx])  # first plateau fires: importance from this batch only
    assert s.num_updates == 1
    expected = {n: v.clone() for n, v in s.importance(idx).items()}
    assert all(torch.allclose(s.omega[n], expected[n]) for n in expected)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.1)
    from clkit.strategies.importance import quadratic_penalty

    assert float(s.penalty(None).detach()) == pytest.approx(0.25 * float(quadratic_penalty(net, [(s.omega, s.anchor)]).detach()))


def test_authors_data_split_is_60_20_20_and_drops_validation_nodes():
    g = csbm(500, 4, seed=2)
    g2, sp = drift.protocol_data(g, 2, 0.2, seed=1, protocol="authors")
    n_train, n_test = sum(map(len, sp.task_nodes)), len(sp.test_idx)
    assert abs(n_train / 500 - 0.6) < 0.02 and abs(n_test / 500 - 0.2) < 0.02
    assert g2.num_nodes == n_train + n_test
    g1, sp1 = drift.protocol_data(g, 2, 0.2, seed=1, protocol="text")
    assert g1 is g and abs(sum(map(len, sp1.task_nodes)) / 500 - 0.8) < 0.02


def test_run_grid_under_both_protocols():
    g = csbm(240, 4, feature_signal=1.0, seed=1)
    out = {}
    for prot in drift.PROTOCOLS:
        g2, sp = drift.protocol_data(g, 2, 0.2, seed=1, protocol=prot)
        rows, curves, _ = drift.run_grid(g2, sp, [drift.StreamConfig("gaussian", sigma=2.0)],
                                         ["bare", "joint", "mas_star"], [1], hidden=8, memory_size=10, eval_every=3,
                                         joint_epochs=2, cache=False, progress=False, protocol=prot)
        out[prot] = {r["method"]: r for r in rows}
        when, acc = curves[(drift.StreamConfig("gaussian", sigma=2.0), "bare", 1)]
        assert (when[0] == 0) == (prot == "authors")
        assert out[prot]["mas_star"]["detector_firings"] >= 0
        assert math.isnan(out[prot]["joint"]["AF"]) and out[prot]["bare"]["protocol"] == prot


def test_authors_gss_stages_ten_then_fills_then_replaces_only_below_the_threshold():
    g = csbm(400, 4, avg_degree=6, seed=0)
    perm = torch.randperm(400, generator=torch.Generator().manual_seed(0))

    def run(th):
        s = make_authors_learner("gss", GCN(g.x, g.edge_index, 4, hidden=8), memory_size=30)
        s.sim_threshold = th
        for t in range(12):
            idx = perm[10 * t:10 * t + 10]
            s.observe(idx, g.y[idx])
            if t == 0:
                assert len(s.mem_y) == 10 and torch.allclose(s.mem_cos, torch.full((10,), 0.1))  # first flush
        return s

    never = run(-2.0)  # cosines are >= -1: never below the threshold
    assert len(never.mem_y) == 30 and never.replacements == 0
    assert never.mem_x.tolist() == perm[:30].tolist()  # the first 30 nodes, kept
    always = run(2.0)
    assert len(always.mem_y) == 30 and always.replacements > 0


# ---------------------------------------------------------------- evaluation interval per protocol (issue 25, 1)
def test_each_protocol_has_its_own_interval_the_authors_100_unless_set():
    assert drift.AUTHORS_EVAL_EVERY == 100
    assert drift.eval_intervals(["text", "authors"], 20) == ({"text": 20, "authors": 100}, [])
    assert drift.eval_intervals(["text", "authors"], 20, 100) == ({"text": 20, "authors": 100}, [])
    every, notes = drift.eval_intervals(["text", "authors"], 20, 7)
    assert every == {"text": 20, "authors": 7}
    assert len(notes) == 1 and "every 7 batches" in notes[0] and "not every 100" in notes[0]
    assert drift.eval_intervals(["text"], 5, 7) == ({"text": 5}, [])  # no authors run, nothing overridden
    with pytest.raises(ValueError, match="eval_every_authors"):
        drift.eval_intervals(["authors"], 5, 0)


def test_run_protocols_evaluates_each_protocol_at_its_own_interval():
    g = csbm(240, 4, feature_signal=1.0, seed=1)
    data = {pr: drift.protocol_data(g, 2, 0.2, seed=1, protocol=pr) for pr in drift.PROTOCOLS}
    cfg = drift.StreamConfig("gaussian", sigma=2.0)
    configs = {"main": [cfg], "sigma": [], "sampling": [], "batch": []}
    runs = drift.run_protocols(data, configs, ["bare"], ["bare"], [1], hidden=8, memory_size=10,
                               eval_every={"text": 2, "authors": 5}, joint_epochs=1, cache=False, progress=False)
    for pr, every in (("text", 2), ("authors", 5)):
        when, _ = runs[pr][1][(cfg, "bare", 1)]
        T = runs[pr][2][(cfg, 1)].num_batches
        assert when.tolist() == drift.protocol_eval_points(T, every, pr).tolist()


# ---------------------------------------------------------------- the authors' hard setting (issue 25, 2)
def _authors_hard_loop(task_of_batch, log_every, acc_rows):
    """Transcription of the rule read in the authors' ``pipeline_tfocis`` and ``metrics.confusion_matrix``:
    evaluate before batch i when ``i % log_every == 0`` or its task differs from the current one (tagged
    with the current task, which then becomes the batch's), once more after the stream; AA is the mean of
    the final row, AF the mean of final minus the row that closes each task's tags."""
    evals, tags, cur = [], [], 0
    for i, t in enumerate(task_of_batch):
        if i % log_every == 0 or t != cur:
            evals.append(i)
            tags.append(cur)
            cur = t
    evals.append(len(task_of_batch))
    tags.append(cur)
    nt = max(tags) + 1
    changes = [i for i in range(1, len(tags)) if tags[i] != tags[i - 1]]
    rows = np.asarray(acc_rows)[np.array(changes + [len(tags)]) - 1]
    fin = rows[nt - 1]
    return evals, float(fin.mean()), float((fin - np.diag(rows[:nt])).mean())


@pytest.mark.parametrize("log_every", [1, 3, 4, 100])
def test_authors_hard_setting_evaluation_points_and_metrics_equal_their_loop(log_every):
    tasks = [np.arange(0, 23), np.arange(23, 30), np.arange(30, 45)]  # 5 + 2 + 3 batches of 5, last ones partial
    s = drift.hard_stream(tasks, 5, seed=3, partial_last=True)
    assert s.counts.sum(1).tolist() == [5, 5, 5, 5, 3, 5, 2, 5, 5, 5]
    seen = np.sort(s.batches[s.batches >= 0])
    assert seen.tolist() == list(range(45))  # every node exactly once, no batch crosses a task boundary
    task_of_batch = s.counts.argmax(1)
    pts = protocol_eval_points(s.num_batches, log_every, "authors", task_of_batch=task_of_batch)
    acc = np.random.default_rng(log_every).uniform(size=(len(pts), 3))
    evals, aa, af = _authors_hard_loop(task_of_batch.tolist(), log_every, acc)
    assert pts.tolist() == evals
    m = protocol_metrics(acc, np.full(len(pts), 0.5), "authors", weights=s.weights, eval_batches=pts, hard=True)
    assert m["AA"] == pytest.approx(aa) and m["AF"] == pytest.approx(af)
    # the text protocol keeps its own rule: no task-change evaluations, AA the mean final accuracy
    assert protocol_eval_points(s.num_batches, log_every, "text", task_of_batch=task_of_batch).tolist() == \
        drift.eval_points(s.num_batches, log_every).tolist()


def test_authors_hard_setting_trains_each_task_on_its_own_subgraph():
    g = csbm(240, 4, feature_signal=1.0, seed=1)
    g2, sp = drift.protocol_data(g, 2, 0.2, seed=1, protocol="authors")
    cfg = drift.StreamConfig("hard")
    rows, curves, streams = drift.run_grid(g2, sp, [cfg], ["bare"], [1], hidden=8, eval_every=100, cache=False,
                                           progress=False, protocol="authors")
    s = streams[(cfg, 1)]
    assert (s.batches < 0).any() and s.meta["partial_last"]
    when, _ = curves[(cfg, "bare", 1)]
    changes = (np.flatnonzero(np.diff(s.counts.argmax(1))) + 1).tolist()
    assert when.tolist() == sorted({0, *changes, s.num_batches})
    # the hook swaps the model's graph to the task's subgraph when the task changes
    from clkit.drift.experiment import _before_step

    calls = []

    class Spy:
        logit_limit = None

        def set_graph(self, ei):
            calls.append(ei)

    segments = np.array([0, 0, 1, 1])   # the batch's segment, not its first node's task
    hook = _before_step(Spy(), False, ["g0", "g1"], segments)
    for idx in ([0, 1], [3], [2, 3], [0]):
        hook(torch.tensor(idx), torch.tensor([0]))
    assert calls == ["g0", "g1"]
    assert _before_step(Spy(), False, None, None) is None


# ------------------------------------- the authors' boundary-local and global settings (issue 40, 05.1)
def _their_boundary_blurry(task_lists, B, K, mix_ratio=0.5):
    """Transcription of the authors' ``data_prepare_boundaryblurry`` on already shuffled task lists,
    with the random draws replaced by "take in order" (so the result is hand-checkable)."""
    main = [list(t) for t in task_lists]
    blocks = {}
    size = K * B
    for t in range(len(main) - 1):
        cur, nxt = main[t], main[t + 1]
        bt_n, bn_n = min(size, len(cur)), min(size, len(nxt))
        bt, bn = cur[len(cur) - bt_n:], nxt[:bn_n]
        main[t], main[t + 1] = cur[:len(cur) - bt_n], nxt[bn_n:]
        n_next = int(size * mix_ratio)
        n_t = min(size - n_next, len(bt))
        blocks[t] = bt[:n_t] + bn[:min(n_next, len(bn))]
    return [blocks.get(t - 1, []) + main[t] + blocks.get(t, []) for t in range(len(main))]


def test_authors_boundary_local_stream_is_their_construction():
    tasks = [np.arange(0, 23), np.arange(23, 30), np.arange(30, 45)]
    s = drift.authors_boundary_local_stream(tasks, 5, k_bl=1, seed=0)
    # sizes by hand: task 0 keeps 23 - 5 = 18 and gets block 0 (3 from task 0 + 2 from task 1) -> 23;
    # task 1: 7 - 5 (front) - 2 (back, all that is left) = 0 own, block 0 (5) + block 1 (2 + 2) -> 9;
    # task 2: block 1 (4) + 15 - 5 = 10 own -> 14
    segs = [s.batches[s.segment == k] for k in range(3)]
    assert [int((b >= 0).sum()) for b in segs] == [23, 9, 14]
    assert s.segment.tolist() == [0] * 5 + [1] * 2 + [2] * 3
    ref = _their_boundary_blurry([list(t) for t in tasks], 5, 1)
    assert [len(r) for r in ref] == [23, 9, 14]
    assert s.meta["block_sizes"] == [5, 4]
    # the mixed block closes segment k and opens segment k + 1: the same nodes, trained twice
    flat = [b[b >= 0] for b in segs]
    assert flat[0][-5:].tolist() == flat[1][:5].tolist() and flat[1][-4:].tolist() == flat[2][:4].tolist()
    assert s.counts[s.segment == 1].sum(0).tolist() == [3, 4, 2]


def test_authors_global_stream_is_their_construction():
    tasks = [np.arange(0, 20), np.arange(20, 33), np.arange(33, 43)]
    s = drift.authors_global_stream(tasks, 4, p=0.3, seed=2)
    # kept int(N (1 - p)): 14, 9, 7; pool 6 + 4 + 3 = 13 -> 3 chunks of 4 (1 node dropped)
    assert s.meta["dropped"] == 1
    sizes = [int((s.batches[s.segment == k] >= 0).sum()) for k in range(3)]
    assert sizes == [18, 13, 11]
    assert s.segment.tolist() == [0] * 5 + [1] * 4 + [2] * 3   # batches never cross a segment
    seen = np.sort(s.batches[s.batches >= 0])
    assert len(np.unique(seen)) == 42 == seen.size      # every node at most once
    own = [int(s.counts[s.segment == k, k].sum()) for k in range(3)]
    assert all(o >= kept for o, kept in zip(own, [14, 9, 7]))


def _their_loop_on(stream, log_every, acc_rows):
    return _authors_hard_loop(stream.segment.tolist(), log_every, acc_rows)


@pytest.mark.parametrize("setting", ["boundary_local", "global"])
@pytest.mark.parametrize("log_every", [1, 3, 100])
def test_authors_mixing_settings_evaluation_points_and_metrics_equal_their_loop(setting, log_every):
    tasks = [np.arange(0, 23), np.arange(23, 40), np.arange(40, 55)]
    if setting == "boundary_local":
        s = drift.authors_boundary_local_stream(tasks, 5, k_bl=1, seed=1)
    else:
        s = drift.authors_global_stream(tasks, 5, p=0.3, seed=1)
    pts = protocol_eval_points(s.num_batches, log_every, "authors", task_of_batch=s.segment)
    acc = np.random.default_rng(log_every).uniform(size=(len(pts), 3))
    evals, aa, af = _their_loop_on(s, log_every, acc)
    assert pts.tolist() == evals
    # task 0's reference is the evaluation just before segment 1 starts, not the untrained model
    first = int(np.flatnonzero(s.segment == 1)[0])
    assert first in pts.tolist()
    m = protocol_metrics(acc, np.full(len(pts), 0.5), "authors", weights=s.weights, eval_batches=pts, hard=True,
                         segments=s.segment)
    assert m["AA"] == pytest.approx(aa) and m["AF"] == pytest.approx(af)
    # a 3-task hand check at log_every = 100: evaluations 0, the two segment changes and the end
    if log_every == 100:
        changes = (np.flatnonzero(np.diff(s.segment)) + 1).tolist()
        assert pts.tolist() == [0, *changes, s.num_batches]
        ref = acc[[1, 2, 3], [0, 1, 2]]
        assert m["AF"] == pytest.approx(float((acc[3] - ref).mean()))


@pytest.mark.parametrize("cfg", [drift.StreamConfig("boundary_local", k_bl=1), drift.StreamConfig("global", p=0.3)])
def test_authors_mixing_settings_run_their_loop(cfg):
    g = csbm(240, 4, feature_signal=1.0, seed=1)
    g2, sp = drift.protocol_data(g, 2, 0.2, seed=1, protocol="authors")
    rows, curves, streams = drift.run_grid(g2, sp, [cfg], ["bare"], [1], hidden=8, eval_every=100, cache=False,
                                           progress=False, protocol="authors")
    s = streams[(cfg, 1)]
    assert s.meta["construction"] == "authors" and s.segment is not None
    when, acc = curves[(cfg, "bare", 1)]
    changes = (np.flatnonzero(np.diff(s.segment)) + 1).tolist()
    assert when.tolist() == sorted({0, *changes, s.num_batches})
    # AF against the end of the task's own segment: task 0's reference is after training, not batch 0
    assert rows[0]["AF"] == pytest.approx(float(np.mean(acc[-1] - acc[[1, 2], [0, 1]])))
    # the text protocol keeps the paper's constructions
    rows_t, _, streams_t = drift.run_grid(g, drift.protocol_data(g, 2, 0.2, seed=1)[1], [cfg], ["bare"], [1],
                                          hidden=8, eval_every=100, cache=False, progress=False)
    assert streams_t[(cfg, 1)].segment is None


@pytest.mark.parametrize("loss_form", ["two_means", "one_mean"])
def test_authors_er_replays_a_full_batch_with_a_partial_one(loss_form):
    """er_model.py: n_samples = min(batch_size * memory_proportion, buffer_size) = min(10 * 1, stored)."""
    from clkit.drift.authors import AuthorsER

    net = GCN(torch.eye(40), torch.zeros((2, 0), dtype=torch.int64), num_classes=2, hidden=4)
    s = make_authors_learner("er", net, memory_size=100, stream_batch_size=10, loss_form=loss_form, seed=0)
    assert isinstance(s, AuthorsER) and s.replay_size == 10
    rows = []
    net.register_forward_hook(lambda m, inp, out: rows.append(out.shape[0]))
    y = torch.arange(40) % 2
    s.observe(torch.arange(0, 4), y[:4])      # nothing stored yet: the batch alone
    s.observe(torch.arange(4, 7), y[4:7])     # 4 stored: min(10, 4) = 4 replayed with a batch of 3
    for start in (7, 17):
        s.observe(torch.arange(start, start + 10), y[start:start + 10])
    rows.clear()
    s.observe(torch.arange(27, 30), y[27:30])  # 27 stored, partial batch of 3: min(10, 27) = 10 replayed
    batch_then_replay = [3, 10] if loss_form == "two_means" else [13]
    assert rows == batch_then_replay
    assert s.replay_count(3) == 10
    # clkit's rule (the text protocol's ER): as many rows as the batch
    s.replay_size = None
    rows.clear()
    s.observe(torch.arange(30, 33), y[30:33])
    assert rows == ([3, 3] if loss_form == "two_means" else [6])
    with pytest.raises(ValueError, match="replay_size"):
        AuthorsER(net, replay_size=0)


def test_er_loss_forms_are_named_the_authors_two_means_by_default():
    from clkit.drift.authors import ER_LOSS_FORMS, AuthorsER

    assert ER_LOSS_FORMS == ["two_means", "one_mean"]
    net = GCN(torch.eye(6), torch.tensor([[0, 1], [1, 0]]), num_classes=2, hidden=4)
    assert make_authors_learner("er", net).loss_form == "two_means"
    assert make_authors_learner("er", net, loss_form="one_mean").loss_form == "one_mean"
    with pytest.raises(ValueError, match="loss_form"):
        AuthorsER(net, loss_form="sum")
    assert not hasattr(drift.get_protocol("authors"), "isolated_replay")
    assert drift.get_protocol("authors").learners == "authors" and drift.get_protocol("text").learners == "kit"


# ---------------------------------------------------------------- verdicts of the sigma sweep (issue 23)
def _sweep_grid(adv_lo, adv_hi, seeds=(1, 2, 3, 4, 5), bare=(0.40, 0.42, 0.41, 0.43, 0.39)):
    """Rows of a hand-built σ sweep: Bare at σ 1 and 8, ER = Bare + the given per-seed advantages."""
    rows = []
    for i, s in enumerate(seeds):
        for sigma, ov, adv in ((1.0, 0.0, adv_lo[i]), (8.0, 0.9, adv_hi[i])):
            base = dict(setting="gaussian", batch_size=10, sampling="without", sigma=sigma, seed=s, overlap=ov)
            rows.append({**base, "method": "bare", "A_AUC": bare[i] + 0.01 * sigma, "AF_s": -0.1})
            rows.append({**base, "method": "er", "A_AUC": bare[i] + 0.01 * sigma + adv, "AF_s": -0.1 - 0.01 * sigma})
    return rows


def _null(seeds=(1001, 1002, 1003, 1004, 1005), values=(0.41, 0.40, 0.42, 0.42, 0.40)):
    import pandas as pd

    return pd.DataFrame([{"seed": s, "sigma": 1.0, "A_AUC": v, "method": "bare"} for s, v in zip(seeds, values)])


def test_finding_three_reads_not_testable_when_er_never_beats_bare():
    import pandas as pd
    from clkit.drift import report

    df = pd.DataFrame(_sweep_grid(adv_lo=[-0.02, -0.01, -0.03, -0.02, -0.01], adv_hi=[-0.01, 0.0, -0.02, -0.01, 0.0]))
    vs = report.sweep_verdicts(df, _null(), "text", ["bare", "er"], [1.0, 8.0], 10, "without")
    assert [v.role for v in vs].count("null control") == 1 and vs[-1].control_ok
    assert report.contraction_verdict(vs, "text").startswith("not testable here")


def test_finding_three_reproduced_only_with_an_advantage_that_shrinks():
    import pandas as pd
    from clkit.drift import report

    df = pd.DataFrame(_sweep_grid(adv_lo=[0.20, 0.22, 0.19, 0.21, 0.20], adv_hi=[0.02, 0.01, 0.03, 0.02, 0.01]))
    vs = report.sweep_verdicts(df, _null(), "text", ["bare", "er"], [1.0, 8.0], 10, "without")
    assert report.contraction_verdict(vs, "text").startswith("reproduced: the advantage contracts")
    # a failing null control (a planted 20-point gap between two Bare runs) withholds the verdict
    bad = _null(values=(0.61, 0.62, 0.60, 0.63, 0.61))
    vs = report.sweep_verdicts(df, bad, "text", ["bare", "er"], [1.0, 8.0], 10, "without")
    assert not vs[-1].control_ok and report.contraction_verdict(vs, "text") == "not judged: a control failed"
    # fewer than 4 seeds: not judged
    small = pd.DataFrame(_sweep_grid(adv_lo=[0.2, 0.21, 0.19], adv_hi=[0.0, 0.01, 0.02], seeds=(1, 2, 3),
                                     bare=(0.4, 0.41, 0.42)))
    vs = report.sweep_verdicts(small, _null(seeds=(1001, 1002, 1003), values=(0.4, 0.42, 0.41)), "text",
                               ["bare", "er"], [1.0, 8.0], 10, "without")
    assert report.contraction_verdict(vs, "text").startswith("not judged: 3 seed(s)")


def test_findings_block_is_generated_from_results(tmp_path):
    from clkit.drift import report
    from clkit.stats import paired

    v = paired([1.0, 2.0, 1.5, 1.2], [0.0, 0.1, 0.0, 0.2], comparison="text: (3a) er − Bare")
    results = {"params": {"seeds": [1, 2, 3, 4], "sigmas": [1.0, 8.0]},
               "results": {"dataset_used": "cora", "data_source": "real", "eval_every": {"text": 20},
                           "verdicts": [v.to_dict()], "controls_hold": True, "summary": "**Findings** (1 of 1)"}}
    doc = tmp_path / "05.md"
    doc.write_text("intro\n<!-- BEGIN generated: findings-05_drift -->\nold\n<!-- END generated: findings-05_drift -->\nend\n")
    text = report.update_findings_block(doc, results)
    assert "\nold\n" not in text and text.startswith("intro\n") and text.endswith("end\n")
    assert "| text: (3a) er − Bare | primary | higher | +1.4 | +0.7 … +2.0 (95 %) |" in text   # the row's role and level
    assert "Controls hold: **True**" in text
    assert doc.read_text() == text
    with pytest.raises(ValueError, match="no generated block"):
        report.update_findings_block(tmp_path / "05.md", results, name="other")


def test_notebook_parameters_list_matches_the_parameters_cell():
    from clkit.notebooks import notebook_parameters

    assert list(drift.NOTEBOOK_PARAMETERS) == list(notebook_parameters("05_drift"))
