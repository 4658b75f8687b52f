"""DER: expansion, frozen extractors (weights and batch-norm statistics), the rebuilt unified head,
the auxiliary head's labels, weight aligning, rehearsal memory, determinism and refusals."""

import numpy as np
import pytest
import torch
from torch import nn

from clkit._seed import torch_seeded
from clkit.models import MLP
from clkit.strategies import DER, Task, make_strategy
from clkit.strategies.der import aux_targets, weight_align

from strategy_helpers import TinyBN, blob_stream as _stream, state as _state

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _der(seed=0, **kw):
    with torch_seeded(0):
        model = TinyBN()
    kw = {"lr": 0.05, "epochs": 3, "batch_size": 16, "memory_size": 12, "seed": seed, **kw}
    return DER(model, **kw)


def test_expansion_freezes_old_extractors_weights_and_bn_statistics():
    tasks = _stream()
    s = _der()
    s.train_task(tasks[0])
    assert len(s.model.extractors) == 1 and s.model.aux_head is None
    for t in (1, 2):
        frozen = [_state(e) for e in s.model.extractors]   # before the expansion of task t
        s.train_task(tasks[t])
        exts = s.model.extractors
        assert len(exts) == t + 1
        assert all(not p.requires_grad for e in exts[:-1] for p in e.parameters())
        assert all(p.requires_grad for p in exts[-1].parameters())
        for k, e in enumerate(exts[:-1]):   # weights and running statistics did not move
            now = _state(e)
            assert set(now) >= {"1.running_mean", "1.running_var", "1.num_batches_tracked"}
            for name, v in frozen[k].items():
                assert torch.equal(now[name], v), (t, k, name)
        # the newest extractor did train (its statistics moved)
        assert not torch.equal(_state(exts[-1])["1.running_mean"], frozen[-1]["1.running_mean"])


def test_new_extractor_copies_the_previous_and_the_head_keeps_old_rows():
    tasks = _stream()
    s = _der()
    s.train_task(tasks[0])
    ext0, head0 = _state(s.model.extractors[0]), _state(s.model.head)
    s.begin_task(tasks[1])   # expands; training has not started
    assert len(s.model.extractors) == 2
    for k, v in _state(s.model.extractors[1]).items():   # PyCIL: load_state_dict of the previous one
        assert torch.equal(v, ext0[k]), k
    head = s.model.head
    assert head.in_features == 2 * 8 and head.out_features == 6
    old = [0, 1]
    assert torch.equal(head.weight[old, :8], head0["weight"][old])
    assert torch.equal(head.bias[old], head0["bias"][old])
    assert torch.equal(head.bias[2:], torch.zeros(4))   # re-initialised rows: SimpleLinear's zero bias
    bound = (3 / 16) ** 0.5
    assert head.weight[2:].abs().max() <= bound and not torch.equal(head.weight[old, 8:], torch.zeros(2, 8))
    assert s.model.aux_head.in_features == 8 and s.model.aux_head.out_features == 2 + 1
    # the optimizer holds the trainable parameters only
    params = {id(p) for g in s.optimizer.param_groups for p in g["params"]}
    assert params == {id(p) for p in s.model.parameters() if p.requires_grad}
    assert not any(id(p) in params for p in s.model.extractors[0].parameters())


def test_aux_labels_map_old_classes_to_zero():
    assert aux_targets(6, (2, 3)).tolist() == [0, 0, 1, 2, 0, 0]
    assert aux_targets(5, (4, 1)).tolist() == [0, 2, 0, 0, 1]
    tasks = _stream()
    s = _der()
    s.train_task(tasks[0])
    s.begin_task(tasks[1])
    assert s._aux_table[torch.tensor([0, 1, 2, 3, 1])].tolist() == [0, 0, 1, 2, 0]


def test_weight_align_by_hand_and_after_a_task():
    w = torch.tensor([[3.0, 4.0], [0.0, 2.0], [1.0, 0.0], [0.0, 3.0]])
    gamma = weight_align(w, old=[0, 1], new=[2, 3])   # old mean 3.5, new mean 2
    assert float(gamma) == pytest.approx(1.75)
    assert w.tolist() == [[3.0, 4.0], [0.0, 2.0], [1.75, 0.0], [0.0, 5.25]]
    tasks = _stream()
    s = _der()
    s.train_task(tasks[0])
    s.train_task(tasks[1])
    norms = s.model.head.weight.detach().norm(dim=1)
    assert float(norms[[2, 3]].mean()) == pytest.approx(float(norms[[0, 1]].mean()), rel=1e-5)
    # without aligning the norms differ
    s2 = _der(align_weights=False)
    s2.train_task(tasks[0])
    s2.train_task(tasks[1])
    n2 = s2.model.head.weight.detach().norm(dim=1)
    assert float(n2[[2, 3]].mean()) != pytest.approx(float(n2[[0, 1]].mean()), rel=1e-5)


def test_memory_is_class_balanced_and_mixed_into_training():
    tasks = _stream()
    s = _der(memory_size=12)
    s.train_task(tasks[0])
    assert sorted(np.bincount(s.memory_labels).tolist()) == [6, 6]
    s.train_task(tasks[1])
    assert np.bincount(s.memory_labels, minlength=4).tolist() == [3, 3, 3, 3]
    assert torch.equal(s.memory_y, torch.as_tensor(s.memory_labels))
    steps = s.steps
    s.train_task(tasks[2])   # 60 task rows + 12 memory rows, batches of 16: 5 steps per epoch
    assert s.steps - steps == 3 * 5
    assert np.bincount(s.memory_labels, minlength=6).tolist() == [2] * 6
    # memory rows are rows of their task
    for c in range(6):
        rows = s.memory_x[s.memory_y == c]
        src = tasks[c // 2]
        assert all((src.x == r).all(1).any() for r in rows)


def test_unseen_classes_are_masked_and_task_scenario_runs():
    tasks = _stream()
    s = _der()
    s.train_task(tasks[0])
    out = s.predict(tasks[0].x)
    assert torch.isinf(out[:, 2:]).all() and torch.isfinite(out[:, :2]).all()
    st = _der(scenario="task")
    for t in tasks:
        assert np.isfinite(st.train_task(t)).all()
    assert st.evaluate(tasks[0]) > 0.5


def test_same_seed_same_model():
    tasks = _stream()
    runs = []
    for seed in (3, 3, 4):
        s = _der(seed=seed)
        for t in tasks:
            s.train_task(t)
        runs.append((_state(s.model), s.memory_labels.copy()))
    for k, v in runs[0][0].items():
        assert torch.equal(v, runs[1][0][k]), k
    assert np.array_equal(runs[0][1], runs[1][1])
    assert any(not torch.equal(v, runs[2][0][k]) for k, v in runs[0][0].items())


def test_bad_parameters_raise_naming_them():
    with pytest.raises(ValueError, match="memory_size must be an integer >= 0, got -1"):
        _der(memory_size=-1)
    with pytest.raises(ValueError, match="aux_weight"):
        _der(aux_weight=-0.5)
    with pytest.raises(ValueError, match="align_weights must be True or False, got 'yes'"):
        _der(align_weights="yes")
    with pytest.raises(ValueError, match="loss must be 'cross_entropy', got 'mse'"):
        _der(loss="mse")
    with pytest.raises(ValueError, match="scenario"):
        _der(scenario="domain")
    with pytest.raises(TypeError, match="linear `head`"):
        DER(nn.Sequential(nn.Linear(2, 2)))
    assert "der" in __import__("clkit.strategies", fromlist=["x"]).available_strategies()


def test_der_beats_naive_fine_tuning():
    tasks = _stream(n=80, seed=1)
    tests = _stream(n=80, seed=1)   # same class means; fresh rows below
    g = torch.Generator().manual_seed(9)
    tests = [Task(t.x + 0.5 * torch.randn(t.x.shape, generator=g), t.y, task_id=t.task_id) for t in tests]
    acc = {}
    for name, kw in [("naive", {}), ("der", {"memory_size": 30})]:
        with torch_seeded(0):
            model = MLP(4, 6, hidden=(16,))
        s = make_strategy(name, model, lr=0.05, epochs=5, batch_size=16, seed=0, **kw)
        for t in tasks:
            s.train_task(t)
        acc[name] = float(np.mean([s.evaluate(t) for t in tests]))
    assert acc["naive"] < 0.5
    assert acc["der"] > acc["naive"] + 0.25, acc
