"""SimpleCIL and RanPAC (clkit.strategies.prototype): known answers computed by hand with NumPy."""

import numpy as np
import pytest
import torch
from torch import nn

from clkit.models import MLP
from clkit.strategies import RanPAC, SimpleCIL, Task, available_strategies, make_strategy
from clkit.strategies.prototype import RIDGE_GRID

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _three_classes(n=30, seed=0):
    """2-D features of 3 classes around different directions; tasks A = {0, 1}, B = {2}."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.tensor([[2.0, 0.0], [0.0, 2.0], [-1.5, -1.5]])
    y = torch.arange(3).repeat_interleave(n)
    x = centres[y] + 0.8 * torch.randn(3 * n, 2, generator=g)
    a, b = y < 2, y == 2
    return Task(x[a], y[a], task_id=0), Task(x[b], y[b], task_id=1), x, y


def _relu_features(W_rand, x):
    return np.maximum(x.numpy().astype(np.float32) @ W_rand.numpy(), 0).astype(np.float64)


# ------------------------------------------------------------------------------------------ SimpleCIL

def test_simplecil_prototypes_are_class_means_and_predictions_are_argmax_cosine():
    ta, tb, x, y = _three_classes()
    s = SimpleCIL(nn.Identity(), num_classes=3)
    s.train_task(ta)
    s.train_task(tb)
    X, Y = x.numpy().astype(np.float64), y.numpy()
    means = np.stack([X[Y == c].mean(0) for c in range(3)])
    np.testing.assert_allclose(s.prototypes.numpy(), means, rtol=1e-12, atol=1e-12)
    q = torch.randn(50, 2, generator=torch.Generator().manual_seed(5))
    Q = q.numpy().astype(np.float64)
    cos = (Q / np.linalg.norm(Q, axis=1, keepdims=True)) @ (means / np.linalg.norm(means, axis=1, keepdims=True)).T
    out = s.predict(q)
    np.testing.assert_allclose(out.numpy(), cos, atol=1e-6)
    assert out.argmax(1).tolist() == cos.argmax(1).tolist()


def test_simplecil_uses_the_model_features_frozen_and_in_eval_mode():
    ta, tb, x, y = _three_classes()
    torch.manual_seed(0)
    model = MLP(2, 3, hidden=(5,), dropout=0.5)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    s = make_strategy("simplecil", model, batch_size=7)
    assert s.num_classes == 3 and s.optimizer is None and s.task_free
    s.train_task(ta)
    s.train_task(tb)
    model.eval()
    with torch.no_grad():
        feats = model.features(x).double().numpy()
    means = np.stack([feats[y.numpy() == c].mean(0) for c in range(3)])
    np.testing.assert_allclose(s.prototypes.numpy(), means, rtol=1e-6, atol=1e-7)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    s.model.train()
    assert not s.model.features.training
    assert torch.equal(s.model(x), s.predict(x))   # dropout stays off: the extractor is frozen


def test_simplecil_masks_unseen_classes_keeps_old_prototypes_and_observes_online():
    ta, tb, x, y = _three_classes()
    s = SimpleCIL(nn.Identity(), num_classes=3)
    assert s.predict(x[:2]).eq(0).all()                       # nothing seen: all logits 0
    s.train_task(ta)
    assert torch.isneginf(s.predict(x)[:, 2]).all()            # class 2 not seen yet
    old = s.prototypes[:2].clone()
    s.train_task(tb)
    assert torch.equal(s.prototypes[:2], old)                  # no forgetting of the statistics
    online = SimpleCIL(nn.Identity(), num_classes=3)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(1))
    for i in range(0, len(y), 8):
        online.observe(x[perm[i:i + 8]], y[perm[i:i + 8]])
    torch.testing.assert_close(online.prototypes, s.prototypes, rtol=1e-12, atol=1e-12)
    assert online.seen_classes == {0, 1, 2}


def test_task_scenario_masks_to_the_task_classes():
    ta, tb, x, y = _three_classes()
    s = SimpleCIL(nn.Identity(), num_classes=3, scenario="task")
    s.train_task(ta)
    s.train_task(tb)
    out = s.predict(ta.x, ta)
    assert torch.isneginf(out[:, 2]).all() and torch.isfinite(out[:, :2]).all()
    assert s.evaluate(ta) >= s.evaluate(Task(ta.x, ta.y, classes=(0, 1, 2)))


# ------------------------------------------------------------------------------------------ RanPAC

def test_ranpac_head_equals_numpy_ridge_solution():
    ta, tb, x, y = _three_classes()
    lam = 0.7
    s = RanPAC(nn.Identity(), num_classes=3, projection_dim=16, ridge=lam, seed=3, batch_size=11)
    s.train_task(ta)
    s.train_task(tb)
    W_rand = s.model.head.W_rand
    assert W_rand.shape == (2, 16)
    torch.testing.assert_close(W_rand, torch.randn(2, 16, generator=torch.Generator().manual_seed(3)))
    H = _relu_features(W_rand, x)
    Y = np.eye(3)[y.numpy()]
    G, C = H.T @ H, H.T @ Y
    np.testing.assert_allclose(s.G.numpy(), G, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(s.C.numpy(), C, rtol=1e-10, atol=1e-9)
    W = np.linalg.solve(G + lam * np.eye(16), C)
    assert s.head_weight.dtype == torch.float64
    np.testing.assert_allclose(s.head_weight.numpy(), W, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(s.predict(x).numpy(), H @ W, rtol=1e-4, atol=1e-4)
    assert s.ridges == [lam, lam]
    assert s.evaluate(Task(x, y)) > 0.9


def test_ranpac_head_does_not_depend_on_the_task_order():
    ta, tb, x, y = _three_classes()
    heads = []
    for order in ((ta, tb), (tb, ta)):
        s = RanPAC(nn.Identity(), num_classes=3, projection_dim=16, ridge=0.1, seed=1)
        for t in order:
            s.train_task(t)
        heads.append((s.G.clone(), s.C.clone(), s.head_weight.clone(), s.predict(x)))
    for a, b in zip(*heads):
        assert torch.equal(a, b)


def test_ranpac_chooses_lambda_like_the_paper_on_a_held_out_split():
    """Re-derive the choice by hand: fit on a seeded 80 % of the task's rows, MSE on the rest."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(60, 2, generator=g)
    y = ((x[:, 0] + 0.7 * torch.randn(60, generator=g)) > 0).long()   # noisy: needs some ridge
    s = RanPAC(nn.Identity(), num_classes=2, projection_dim=24, seed=4)
    s.train_task(Task(x, y))
    perm = torch.randperm(60, generator=torch.Generator().manual_seed(4)).numpy()   # the strategy's seed
    fit, val = perm[:48], perm[48:]
    H = _relu_features(s.model.head.W_rand, x)
    Y = np.eye(2)[y.numpy()]
    errors = [np.mean((H[val] @ np.linalg.solve(H[fit].T @ H[fit] + lam * np.eye(24), H[fit].T @ Y[fit])
                       - Y[val]) ** 2) for lam in RIDGE_GRID]
    best = RIDGE_GRID[int(np.argmin(errors))]
    assert sorted(errors)[1] > 1.0001 * min(errors)   # the hand-made answer is not a near tie
    assert s.ridges == [best]
    W = np.linalg.solve(H.T @ H + best * np.eye(24), H.T @ Y)   # then solved with every row
    np.testing.assert_allclose(s.head_weight.numpy(), W, rtol=1e-7, atol=1e-9)


def test_ranpac_own_loop_solves_once_per_task_as_train_task_does():
    """Issue 55: ``train_step`` kept re-solving the ridge head, with its lambda search, on every
    batch. Now the own-loop route (begin_task, train_step per batch, after_task) keeps the
    features and solves once in after_task: the same lambda and head as train_task."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(60, 2, generator=g)
    y = ((x[:, 0] + 0.7 * torch.randn(60, generator=g)) > 0).long()
    tasks = [Task(x[:30], y[:30], task_id=0), Task(x[30:], y[30:], task_id=1)]
    whole = RanPAC(nn.Identity(), num_classes=2, projection_dim=24, seed=4)
    loop = RanPAC(nn.Identity(), num_classes=2, projection_dim=24, seed=4)
    for task in tasks:
        whole.train_task(task)
        loop.begin_task(task)
        for s in range(0, 30, 7):                        # batches of 7 rows, each row once
            loop.train_step(task.x[s:s + 7], task.y[s:s + 7], task)
        loop.after_task(task)
    assert loop.ridges == whole.ridges and len(loop.ridges) == 2   # one choice per task, not per batch
    torch.testing.assert_close(loop.head_weight, whole.head_weight, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(loop.predict(x), whole.predict(x))
    fresh = RanPAC(nn.Identity(), num_classes=2, projection_dim=24, seed=4)
    fresh.begin_task(tasks[0])
    fresh.train_step(tasks[0].x, tasks[0].y, tasks[0])
    assert fresh.ridges == [] and float(fresh.model.head.G.abs().sum()) == 0.0   # kept, not absorbed yet


def test_same_seed_same_run_other_seed_other_projection():
    ta, tb, x, y = _three_classes()

    def run(seed):
        s = make_strategy("ranpac", MLP(2, 3, hidden=(6,)), projection_dim=32, seed=seed)
        for t in (ta, tb):
            assert len(s.train_task(t, epochs=2)) == 2
        return s

    torch.manual_seed(0)
    a = run(5)
    torch.manual_seed(0)
    b = run(5)
    torch.manual_seed(0)
    c = run(6)
    assert torch.equal(a.head_weight, b.head_weight) and a.ridges == b.ridges
    assert torch.equal(a.predict(x), b.predict(x))
    assert not torch.equal(a.model.head.W_rand, c.model.head.W_rand)


def test_epochs_read_each_row_once_and_zero_epochs_absorb_nothing():
    ta, tb, x, y = _three_classes()
    s = RanPAC(nn.Identity(), num_classes=3, projection_dim=8, ridge=1.0, batch_size=7)
    losses = s.train_task(ta, epochs=3)
    assert len(losses) == 3 and len(set(losses)) == 1 and np.isfinite(losses[0])
    assert s.steps == -(-len(ta) // 7)   # one feature pass: the loss reuses the task's features
    G = s.G.clone()
    assert s.train_task(tb, epochs=0) == [] and torch.equal(s.G, G)
    one = RanPAC(nn.Identity(), num_classes=3, projection_dim=8, ridge=1.0)
    one.train_task(ta, epochs=1)
    assert torch.equal(one.G, G)


# ------------------------------------------------------------------------------------------ checks

@pytest.mark.parametrize("kwargs, parameter", [
    (dict(ridge=0.0), "ridge"), (dict(ridge=-1.0), "ridge"), (dict(projection_dim=0), "projection_dim"),
    (dict(ridge_grid=[]), "ridge_grid"), (dict(ridge_grid=[1.0, -1.0]), "ridge_grid"),
    (dict(val_fraction=1.0), "val_fraction"), (dict(val_fraction=0.0), "val_fraction"),
    (dict(num_classes=0), "num_classes"), (dict(loss="mse"), "regression"),
])
def test_bad_parameters_are_refused_naming_them(kwargs, parameter):
    with pytest.raises(ValueError, match=parameter):
        RanPAC(MLP(2, 3, hidden=()), **kwargs)


def test_refusals_of_the_model_and_the_labels():
    with pytest.raises(ValueError, match="num_classes must be given"):
        SimpleCIL(nn.Identity())
    s = SimpleCIL(nn.Identity(), num_classes=2)
    with pytest.raises(ValueError, match=r"class\(es\) \[2\].*num_classes"):
        s.train_task(Task(torch.zeros(3, 2), torch.tensor([0, 1, 2])))


def test_registered_with_their_capabilities():
    from clkit.plugins import capabilities

    names = available_strategies()
    assert "simplecil" in names and "ranpac" in names
    assert "task_free" in capabilities(SimpleCIL) and "task_free" not in capabilities(RanPAC)
    for cls in (SimpleCIL, RanPAC):
        assert "class_scenario" in capabilities(cls) and "regression" not in capabilities(cls)


# ---------------------------------------------------------------------------- as EDGE learners

@pytest.mark.parametrize("name, kwargs", [("simplecil", {}), ("ranpac", {"projection_dim": 32, "ridge": 1.0})])
def test_the_prefix_tree_truth_of_all_90_orders_equals_training_each_order_alone(name, kwargs):
    """EDGE's ground truth on frozen features (6 classes in 3 tasks: all 6!/(2!)^3 = 90 orders,
    EDGE's default MLP as the frozen extractor): the prefix tree, which trains each shared prefix
    once, gives the same accuracies as training every order on its own; the final accuracy does
    not depend on the order (order-invariant statistics, fixed ridge), the average incremental
    accuracy does."""
    from clkit.edge.combinatorics import enumerate_sequences
    from clkit.edge.learners import LearnerConfig, train_strategy_sequences
    from clkit.plugins import resolve_strategy

    rng = np.random.default_rng(0)
    centres = 2.0 * rng.normal(size=(6, 5))
    x_train = centres[:, None, :] + rng.normal(size=(6, 12, 5))
    x_test = centres[:, None, :] + rng.normal(size=(6, 10, 5))
    seqs = enumerate_sequences(6, 3)
    assert len(seqs) == 90
    cfg = LearnerConfig(hidden=16, epochs=1, batch_size=8)
    learner = resolve_strategy(name)
    tree = train_strategy_sequences(x_train, x_test, seqs, learner, cfg, seed=0, strategy_kwargs=kwargs)
    alone = train_strategy_sequences(x_train, x_test, seqs, learner, cfg, seed=0, strategy_kwargs=kwargs,
                                     share_prefixes=False)
    np.testing.assert_array_equal(tree["acc_matrix"], alone["acc_matrix"])
    np.testing.assert_allclose(tree["final_acc"], tree["final_acc"][0], atol=1e-12)
    assert np.ptp(tree["avg_acc"]) > 0
