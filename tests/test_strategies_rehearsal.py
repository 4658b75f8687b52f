"""Replay, ER, Cumulative, GDumb, A-GEM and GEM: the property that defines each."""

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from clkit._seed import torch_seeded
from clkit.models import MLP
from clkit.strategies import AGEM, GEM, ER, Cumulative, GDumb, Replay, Task, make_strategy
from clkit.strategies.projection import gem_project

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _stream(num_tasks=3, n=60, seed=0, d=4):
    """Conflicting tasks: task t labels by the sign of a different feature, its own 2 classes."""
    g = torch.Generator().manual_seed(seed)
    tasks = []
    for t in range(num_tasks):
        x = torch.randn(n, d, generator=g)
        tasks.append(Task(x, 2 * t + (x[:, t % d] > 0).long(), task_id=t))
    return tasks


def test_replay_mixes_memory_rows_of_earlier_tasks():
    t = _stream()
    with torch_seeded(0):
        s = Replay(MLP(4, 6, hidden=(8,)), memory_size=12, batch_size=10)
    s.train_task(t[0])
    s.train_task(t[1])
    xb, yb, tb = s.replay(t[2].x[:10], t[2].y[:10], t[2])
    assert len(yb) == 20 and (tb[:10] == 2).all() and set(tb[10:].tolist()) <= {0, 1}
    # memory rows are real rows of their task
    for row, lab, tid in zip(xb[10:], yb[10:], tb[10:]):
        src = t[int(tid)]
        k = int(((src.x - row).abs().sum(1) == 0).nonzero()[0])
        assert int(src.y[k]) == int(lab)


def test_task_incremental_masks_each_memory_row_to_its_own_task():
    t = _stream()
    with torch_seeded(0):
        s = Replay(MLP(4, 6, hidden=(8,)), memory_size=12, scenario="task")
    s.train_task(t[0])
    s.train_task(t[1])
    out = s.rows_forward(t[0].x[:3], torch.tensor([0, 1, -1]))
    assert torch.isinf(out[0, 2:]).all() and torch.isfinite(out[0, :2]).all()
    assert torch.isinf(out[1, [0, 1, 4, 5]]).all() and torch.isfinite(out[1, 2:4]).all()
    assert torch.isfinite(out[2]).all()


def test_er_is_task_free_and_its_reservoir_sees_every_row():
    t = _stream(n=40)
    with torch_seeded(0):
        s = ER(MLP(4, 6, hidden=(8,)), memory_size=16, batch_size=8)
    for task in t:
        for i in range(0, 40, 8):
            s.observe(task.x[i:i + 8], task.y[i:i + 8])
    assert s.memory.seen == 120 and len(s.memory) == 16


def test_replay_reduces_forgetting_against_naive():
    t = _stream(num_tasks=2, n=200)
    accs = {}
    for name in ["naive", "replay"]:
        with torch_seeded(0):
            s = make_strategy(name, MLP(4, 4, hidden=(32,)), lr=0.05, epochs=10, batch_size=20,
                              **({"memory_size": 100} if name == "replay" else {}))
        for task in t:
            s.train_task(task)
        accs[name] = s.evaluate(t[0])
    assert accs["replay"] > accs["naive"] + 0.1


def test_cumulative_trains_on_the_union():
    t = _stream(n=20)
    with torch_seeded(0):
        s = Cumulative(MLP(4, 6, hidden=(8,)), batch_size=10, epochs=2)
    for task in t:
        s.train_task(task)
    assert s.steps == 2 * (2 + 4 + 6)


def test_gdumb_stays_class_balanced_and_trains_from_scratch():
    t = _stream(num_tasks=3, n=100)
    with torch_seeded(0):
        s = GDumb(MLP(4, 6, hidden=(8,)), memory_size=30, epochs=3, batch_size=10)
    for task in t:
        s.train_task(task)
        counts = s.memory.class_counts()
        assert max(counts.values()) - min(counts.values()) <= 1
    assert s.memory.class_counts() == {c: 5 for c in range(6)}
    # training from scratch: the result equals fitting a fresh copy of the initial model on the memory
    with torch_seeded(0):
        fresh = GDumb(MLP(4, 6, hidden=(8,)), memory_size=30, epochs=3, batch_size=10)
    fresh.memory = s.memory
    fresh.generator.set_state(s.generator.get_state())
    s.fit_memory()
    fresh.fit_memory()
    for a, b in zip(s.model.parameters(), fresh.model.parameters()):
        torch.testing.assert_close(a, b)


def test_gdumb_task_free_refits_lazily_and_refuses_regression():
    with torch_seeded(0):
        s = GDumb(MLP(4, 6, hidden=(8,)), memory_size=10, epochs=1)
    t = _stream(n=20)
    s.observe(t[0].x, t[0].y)
    assert s._stale and s.steps == 0
    s.predict(t[0].x)
    assert not s._stale and s.steps > 0
    with pytest.raises(ValueError, match="regression"):
        GDumb(MLP(2, 2), loss="mse")


def test_agem_step_never_opposes_the_reference_gradient():
    t = _stream(n=100)
    seen_conflict = 0

    class Check(AGEM):
        def after_backward(self, x, y, task):
            nonlocal seen_conflict
            from clkit.strategies._common import flat_grad
            raw = flat_grad(self._params)
            super().after_backward(x, y, task)
            if self.reference_grad is not None:
                seen_conflict += int(torch.dot(raw, self.reference_grad) < 0)
                assert float(torch.dot(flat_grad(self._params), self.reference_grad)) >= -1e-6

    with torch_seeded(0):
        s = Check(MLP(4, 6, hidden=(16,)), memory_size=40, agem_sample_size=20, lr=0.1, epochs=3, batch_size=10)
    for task in t:
        s.train_task(task)
    assert seen_conflict > 0  # the projection was actually exercised
    # task-free use fills the reservoir online
    with torch_seeded(0):
        online = AGEM(MLP(4, 6, hidden=(16,)), memory_size=40)
    for task in t:
        online.observe(task.x[:20], task.y[:20])
    assert online.memory.seen == 60


def test_gem_projection_satisfies_every_constraint_and_is_the_qp_optimum():
    rng = np.random.default_rng(0)
    for margin in (0.0, 0.5):
        for _ in range(20):
            G = rng.normal(size=(4, 12))
            g = rng.normal(size=12) - 1.5 * G.sum(0)  # usually violating
            new = gem_project(g, G, margin=margin)
            assert (G @ new >= -1e-9).all()
            if margin == 0.0 and (G @ g < 0).any():
                # compare with a general-purpose solver of the primal QP
                res = minimize(lambda z: 0.5 * np.sum((z - g) ** 2), g, jac=lambda z: z - g,
                               constraints=[{"type": "ineq", "fun": lambda z: G @ z, "jac": lambda z: G}],
                               method="SLSQP", options={"ftol": 1e-12, "maxiter": 500})
                np.testing.assert_allclose(new, res.x, atol=1e-5)


@pytest.mark.parametrize("margin", [0.5, 0.0])
def test_gem_training_steps_respect_stored_constraints(margin):
    """Every projected step keeps G_k . g~ >= 0 (margin 0: on the boundary, up to float32 rounding
    of g~ and of the float32 Gram matrix the QP is solved from)."""
    t = _stream(n=60)

    class Check(GEM):
        def after_backward(self, x, y, task):
            super().after_backward(x, y, task)
            if self.constraints is not None:
                from clkit.strategies._common import flat_grad
                g = flat_grad(self._params)
                dots = self.constraints @ g
                assert (dots >= -1e-4 * self.constraints.norm(dim=1) * g.norm()).all(), dots
                self.checked += 1

    with torch_seeded(0):
        s = Check(MLP(4, 6, hidden=(8,)), gem_patterns_per_task=20, gem_memory_strength=margin, lr=0.1,
                  epochs=2, batch_size=20)
    s.checked = 0
    for task in t:
        s.train_task(task)
    assert s.checked == 2 * 3 * 2 and sorted(s.memories) == [0, 1, 2]


@pytest.mark.parametrize("name", ["naive", "ewc", "si", "mas", "lwf", "replay", "er", "cumulative", "agem", "gem"])
def test_regression_targets_train(name):
    g = torch.Generator().manual_seed(0)
    tasks = [Task(torch.randn(32, 3, generator=g), torch.randn(32, 2, generator=g), task_id=i) for i in range(2)]
    with torch_seeded(0):
        s = make_strategy(name, MLP(3, 2, hidden=(8,)), loss="mse", epochs=2, batch_size=8)
    before = s.evaluate(tasks[1], "mse")
    for task in tasks:
        s.train_task(task)
    assert np.isfinite(s.evaluate(tasks[0], "mse"))
    assert s.evaluate(tasks[1], "mse") < before


@pytest.mark.parametrize("name", ["replay", "er", "agem", "gem", "gdumb", "cumulative", "ewc", "lwf"])
def test_same_seed_same_model(name):
    t = _stream(n=30)
    weights = []
    for _ in range(2):
        with torch_seeded(3):
            s = make_strategy(name, MLP(4, 6, hidden=(8,)), seed=5, epochs=2, batch_size=10)
        for task in t:
            s.train_task(task)
        weights.append(torch.cat([p.detach().reshape(-1) for p in s.model.parameters()]))
    assert torch.equal(weights[0], weights[1])


def test_unknown_strategy_and_negative_memory_are_named():
    with pytest.raises(ValueError, match="strategy"):
        make_strategy("ewcc", MLP(2, 2))
    with pytest.raises(ValueError, match="memory_size"):
        make_strategy("replay", MLP(2, 2), memory_size=-1)
    with pytest.raises(ValueError, match="gem_memory_strength"):
        make_strategy("gem", MLP(2, 2), gem_memory_strength=-0.1)


def test_small_dual_equals_the_solver_in_every_active_set():
    """The closed-form dual for one or two constraints equals the Cholesky + NNLS solution, and
    every one of the four active sets of k = 2 occurs among the draws."""
    from clkit.strategies.projection import gem_dual, small_dual

    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(2000):
        k = int(rng.integers(1, 3))
        G = rng.normal(size=(k, 6))
        Gg = rng.normal(size=k) * rng.choice([0.1, 1.0, 5.0])
        margin = float(rng.choice([0.0, 0.5]))
        gram = G @ G.T
        got = small_dual(gram, Gg, margin)
        want = gem_dual(gram, Gg, margin)
        assert got is not None
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * (1 + np.abs(want).max()))
        if k == 2:
            seen.add(tuple(np.asarray(got) > margin + 1e-12))
    assert seen == {(False, False), (True, False), (False, True), (True, True)}
    assert small_dual(np.ones((2, 2)), np.array([-1.0, -1.0])) is None      # singular: left to the solver
    assert small_dual(np.eye(3), np.zeros(3)) is None                        # three constraints
