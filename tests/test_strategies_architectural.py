"""MSTE, PNN, CWR* and generative replay: the property that defines each."""

import pytest
import torch

from clkit._seed import torch_seeded
from clkit.models import MLP
from clkit.strategies import CWRStar, GenerativeReplay, MSTE, PNN, Task, make_strategy

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _stream(num_tasks=3, n=60, seed=0, d=4):
    g = torch.Generator().manual_seed(seed)
    tasks = []
    for t in range(num_tasks):
        x = torch.randn(n, d, generator=g)
        tasks.append(Task(x, 2 * t + (x[:, t % d] > 0).long(), task_id=t))
    return tasks


def _snapshot(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def test_pnn_leaves_earlier_columns_unchanged():
    t = _stream()
    with torch_seeded(0):
        s = PNN(MLP(4, 6, hidden=(8, 8)), scenario="task", lr=0.1, epochs=3, batch_size=10)
    s.train_task(t[0])
    col0 = _snapshot(s.model.columns[0])
    out0 = s.predict(t[0].x, t[0])
    s.train_task(t[1])
    s.train_task(t[2])
    assert len(s.model.columns) == 3
    for k, v in _snapshot(s.model.columns[0]).items():
        assert torch.equal(v, col0[k]), k
    assert torch.equal(s.predict(t[0].x, t[0]), out0)   # no forgetting at all
    # column 2 has laterals from both earlier columns at both entry points (layer 2 and head)
    assert len(s.model.laterals[2]) == 2 * 2
    # and they carry signal: zeroing them changes column 2's outputs
    before = s.predict(t[2].x, t[2])
    with torch.no_grad():
        for a in s.model.laterals[2]:
            a.weight.zero_()
    assert not torch.allclose(before, s.predict(t[2].x, t[2]))


def test_task_incremental_only_strategies_refuse_class_il():
    for name in ["pnn", "mste"]:
        with pytest.raises(ValueError, match="scenario"):
            make_strategy(name, MLP(2, 2), scenario="class")


def test_mste_experts_are_independent():
    t = _stream()
    with torch_seeded(0):
        s = MSTE(MLP(4, 6, hidden=(8,)), scenario="task", lr=0.1, epochs=3, batch_size=10)
    out_untrained = s.predict(t[1].x, t[1])
    s.train_task(t[0])
    assert torch.equal(s.predict(t[1].x, t[1]), out_untrained)  # task 1 answered by the initial model
    out0 = s.predict(t[0].x, t[0])
    s.train_task(t[1])
    assert torch.equal(s.predict(t[0].x, t[0]), out0)
    with pytest.raises(ValueError, match="task"):
        s.predict(t[0].x)


def test_cwr_consolidates_only_the_output_layer():
    t = _stream()
    with torch_seeded(0):
        s = CWRStar(MLP(4, 6, hidden=(8,)), lr=0.1, epochs=3, batch_size=10)
    s.train_task(t[0])
    feats = _snapshot(s.model.features)
    head_w = s.model.head.weight.detach().clone()
    s.train_task(t[1])
    for k, v in _snapshot(s.model.features).items():
        assert torch.equal(v, feats[k]), k      # representation frozen after the first task
    w = s.model.head.weight.detach()
    assert torch.equal(w[[0, 1]], head_w[[0, 1]])   # other classes' consolidated rows untouched
    assert not torch.equal(w[[2, 3]], head_w[[2, 3]])
    # consolidated rows of a task are zero-mean over the task's classes (tw - mean) for a first visit
    torch.testing.assert_close(w[[2, 3]].sum(0), torch.zeros(8), atol=1e-6, rtol=0)
    assert s.class_counts.tolist()[:4] == [float((t[0].y == 0).sum()), float((t[0].y == 1).sum()),
                                           float((t[1].y == 2).sum()), float((t[1].y == 3).sum())]
    # training uses only the current task's outputs, evaluation the consolidated head over all classes
    s.model.train()
    assert torch.isinf(s.forward(t[2].x[:2], t[2])[:, :4]).all()
    s.model.eval()
    assert torch.isfinite(s.forward(t[2].x[:2], t[2])).all()
    with pytest.raises(ValueError, match="regression"):
        CWRStar(MLP(2, 2), loss="mse")


def test_cwr_consolidation_is_the_papers_rule():
    """Lomonaco et al. (2019) / Avalanche's CWRStarPlugin: rows start from their consolidated
    weights, are centred by the scalar average of the task's trained rows, and are averaged with
    the consolidated ones at weight sqrt(past_j / cur_j)."""
    with torch_seeded(0):
        s = CWRStar(MLP(2, 2, hidden=()), lr=0.1, epochs=1)
    x = torch.randn(6, 2)
    first = Task(x, torch.tensor([0, 0, 0, 1, 1, 1]), task_id=0)
    s.before_task(first)
    assert torch.equal(s.model.head.weight.detach(), torch.zeros(2, 2))   # new classes start at 0
    tw0 = torch.tensor([[1.0, 3.0], [2.0, 6.0]])
    with torch.no_grad():
        s.model.head.weight.copy_(tw0)
    s.after_task(first)
    torch.testing.assert_close(s.cw_weight, tw0 - 3.0)          # first visit: tw - avg(tw), avg = 3
    cw = s.cw_weight.clone()
    # a second visit of the same classes, 2 and 4 examples (past 3 and 3)
    task = Task(x, torch.tensor([0, 0, 1, 1, 1, 1]), task_id=1)
    s.before_task(task)
    torch.testing.assert_close(s.model.head.weight.detach(), cw)  # seen classes start consolidated
    tw = torch.tensor([[1.0, 2.0], [3.0, 0.0]])
    with torch.no_grad():
        s.model.head.weight.copy_(tw)
    s.after_task(task)
    tw = tw - 1.5                                               # the scalar average of the rows
    w0, w1 = (3 / 2) ** 0.5, (3 / 4) ** 0.5
    expected = torch.stack([(cw[0] * w0 + tw[0]) / (w0 + 1), (cw[1] * w1 + tw[1]) / (w1 + 1)])
    torch.testing.assert_close(s.cw_weight, expected)
    assert s.class_counts.tolist() == [5.0, 7.0]


class _NormNet(torch.nn.Module):
    """A small model with batch normalisation in its representation."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU())
        self.head = torch.nn.Linear(8, 6)

    def forward(self, x):
        return self.head(self.features(x))


def _bn_stats(module):
    return {k: v.clone() for k, v in module.state_dict().items() if "running" in k}


def test_frozen_parts_keep_their_batch_norm_statistics():
    """Freezing weights alone would let BatchNorm's running statistics move: CWR*'s representation
    after the first task and PNN's earlier columns stay in evaluation mode while later tasks train."""
    t = _stream()
    with torch_seeded(0):
        cwr = CWRStar(_NormNet(), lr=0.1, epochs=2, batch_size=10)
    cwr.train_task(t[0])
    before = _bn_stats(cwr.model.features)
    cwr.train_task(t[1])
    after = _bn_stats(cwr.model.features)
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert cwr.model.head.training and not cwr.model.features.training   # the head trains, alone
    with torch_seeded(0):
        pnn = PNN(_NormNet(), lr=0.1, epochs=2, batch_size=10, scenario="task")
    pnn.train_task(t[0])
    col0 = _bn_stats(pnn.model.columns[0])
    out0 = pnn.predict(t[0].x, t[0])
    pnn.train_task(t[1])
    assert all(torch.equal(v, _bn_stats(pnn.model.columns[0])[k]) for k, v in col0.items())
    assert torch.equal(pnn.predict(t[0].x, t[0]), out0)
    # the newest column does learn its statistics (it started from the base's initial ones)
    fresh = _bn_stats(pnn.model.base.features)
    learned = _bn_stats(pnn.model.columns[1]["features"])
    assert not torch.equal(learned["1.running_mean"], fresh["1.running_mean"])


def test_generative_replay_samples_the_learned_classes():
    g = torch.Generator().manual_seed(0)
    centres = torch.tensor([[-4.0, 0.0], [4.0, 0.0]])
    y = torch.arange(300) % 2
    x = centres[y] + 0.5 * torch.randn(300, 2, generator=g)
    with torch_seeded(0):
        s = GenerativeReplay(MLP(2, 4, hidden=(16,)), lr=0.05, epochs=60, batch_size=50,
                             generator_latent=2, generator_hidden=32, generator_lr=1e-2)
    s.train_task(Task(x, y, task_id=0))
    xg = s.old_vae.sample(1000, torch.Generator().manual_seed(1))
    dist = torch.cdist(xg, centres)
    near = dist.min(1).values
    assert float(near.median()) < 1.0          # samples lie on the learned data (class std 0.5, centres 8 apart)
    share = (dist.argmin(1) == 0).float().mean()
    assert 0.25 < float(share) < 0.75          # both classes are generated
    # the replayed labels are the old solver's, only old classes
    xb, yb, tb = s.replay(torch.zeros(100, 2), torch.full((100,), 2), Task(torch.zeros(1, 2), torch.tensor([2]), 1))
    labels = yb[100:]
    assert set(labels.tolist()) == {0, 1}
    agree = (labels == torch.cdist(xb[100:], centres).argmin(1)).float().mean()
    assert float(agree) > 0.9
    assert (tb[100:] == 0).all()


def test_generative_replay_reduces_forgetting_and_supports_regression():
    t = _stream(num_tasks=2, n=100)
    accs = {}
    for name in ["naive", "generative_replay"]:
        with torch_seeded(0):
            s = make_strategy(name, MLP(4, 4, hidden=(32,)), lr=0.05, epochs=10, batch_size=20,
                              **({"generator_hidden": 32, "generator_latent": 4} if name != "naive" else {}))
        for task in t:
            s.train_task(task)
        accs[name] = s.evaluate(t[0])
    assert accs["generative_replay"] > accs["naive"]
    with torch_seeded(0):
        r = GenerativeReplay(MLP(3, 2, hidden=(8,)), loss="mse", epochs=1)
    r.train_task(Task(torch.randn(16, 3), torch.randn(16, 2), task_id=0))
    xb, yb, tb = r.replay(torch.randn(4, 3), torch.randn(4, 2), Task(torch.zeros(1, 3), torch.zeros(1, 2), 1))
    assert yb.shape == (8, 2) and (tb[4:] == -1).all()
    with pytest.raises(TypeError, match="float tensor"):
        GenerativeReplay(MLP(1, 2)).train_task(Task(torch.arange(4)[:, None], torch.tensor([0, 1, 0, 1])))
