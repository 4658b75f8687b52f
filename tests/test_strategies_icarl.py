"""iCaRL as a clkit strategy: herding, memory budget, NME, distillation loss, determinism, checks."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from clkit import plugins
from clkit.models import MLP
from clkit.strategies import ICaRL, Task, make_strategy
from clkit.strategies.icarl import herding


def np_herding(f: np.ndarray, m: int) -> list[int]:
    """Greedy mean matching, written out: row k makes the mean of the picks closest to the class mean."""
    mu = f.mean(axis=0)
    picks, total = [], np.zeros_like(mu)
    for k in range(1, m + 1):
        best, best_d = None, np.inf
        for j in range(len(f)):
            if j in picks:
                continue
            d = np.sum((mu - (total + f[j]) / k) ** 2)
            if d < best_d:
                best, best_d = j, d
        picks.append(best)
        total = total + f[best]
    return picks


def unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def blobs(classes, per_class, seed, dim=8, spread=0.3):
    """Well separated Gaussian blobs, one fixed centre per class."""
    centres = np.random.default_rng(123).normal(size=(16, dim)) * 3.0
    rng = np.random.default_rng(seed)
    x = np.concatenate([centres[c] + spread * rng.normal(size=(per_class, dim)) for c in classes])
    y = np.repeat(classes, per_class)
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y)


def stream(num_tasks=3, per_task=2, per_class=30, seed=0):
    return [Task(*blobs([per_task * t + i for i in range(per_task)], per_class, seed + t), task_id=t)
            for t in range(num_tasks)]


def icarl(**kw):
    torch.manual_seed(0)
    model = MLP(8, 6, hidden=(16,))
    base = dict(memory_size=12, epochs=2, batch_size=16, lr=0.05, seed=0)
    base.update(kw)
    return ICaRL(model, **base)


def test_herding_matches_greedy_mean_matching_by_hand():
    f = torch.tensor([[0.0], [1.0], [2.0], [10.0]])   # mean 3.25: 2, then (2 + 1) / 2, then (3 + 10) / 3
    assert herding(f, 3).tolist() == [2, 1, 3]
    g = np.random.default_rng(0)
    for n, m in [(7, 4), (10, 10), (5, 0)]:
        f = unit(g.normal(size=(n, 3)))
        assert herding(torch.tensor(f, dtype=torch.float32), m).tolist() == np_herding(f, m)
    with pytest.raises(ValueError, match="m"):
        herding(torch.zeros(3, 2), 4)


def test_memory_is_k_over_classes_and_old_sets_are_prefixes_in_herding_order():
    s = icarl(memory_size=12)
    tasks = stream()
    before = {}
    for t, task in enumerate(tasks):
        s.train_task(task)
        seen = 2 * (t + 1)
        assert s.exemplar_counts == {c: 12 // seen for c in range(seen)}
        mx, my = s.memory()
        assert len(mx) == len(my) == 12 // seen * seen
        for c in (2 * t, 2 * t + 1):   # the new classes' sets: herding on the current model's unit features
            rows = task.x[task.y == c]
            feats = unit(s.features(rows).detach().numpy())
            expected = rows[np_herding(feats, 12 // seen)]
            torch.testing.assert_close(s.exemplars[c], expected)
        for c, old in before.items():
            torch.testing.assert_close(s.exemplars[c], old[: 12 // seen])
        before = {c: v.clone() for c, v in s.exemplars.items()}


def test_nme_prediction_is_the_nearest_normalised_class_mean():
    s = icarl()
    for task in stream(num_tasks=2):
        s.train_task(task)
    x, _ = blobs([0, 1, 2, 3], 5, seed=9)
    with torch.no_grad():
        f = unit(s.features(x).numpy())
        means = np.stack([unit(unit(s.features(s.exemplars[c]).numpy()).mean(0)) for c in range(4)])
    d = ((f[:, None, :] - means[None]) ** 2).sum(-1)
    scores = s.predict(x)
    np.testing.assert_allclose(scores[:, :4].numpy(), -d, rtol=1e-5, atol=1e-5)
    assert torch.isinf(scores[:, 4:]).all()          # classes not seen yet are never predicted
    assert scores.argmax(1).tolist() == d.argmin(1).tolist()
    head = icarl(classifier="head")
    head.train_task(stream(num_tasks=1)[0])
    assert torch.isinf(head.predict(x)[:, 2:]).all()


@pytest.mark.parametrize("variant", ["paper", "pycil"])
def test_loss_uses_the_old_models_outputs_as_targets(variant):
    s = icarl(loss_variant=variant, icarl_temperature=2.0)
    t0, t1 = stream(num_tasks=2)
    s.train_task(t0)
    s.begin_task(t1)                       # the teacher is the model as it is now
    x = torch.cat([t1.x[:3], s.exemplars[0][:2]])
    y = torch.tensor([2, 3, 2, 0, 0])
    with torch.no_grad():
        z = s.model(x).double().numpy()[:, :4]   # seen classes 0..3; 0, 1 old
    if variant == "paper":
        sig = 1 / (1 + np.exp(-z))
        target = np.zeros_like(z)
        target[:, :2] = sig[:, :2]           # the old model's sigmoid outputs (the same model here)
        target[np.arange(5), y.numpy()] = np.where(y.numpy() >= 2, 1.0, target[np.arange(5), y.numpy()])
        bce = -(target * np.log(sig) + (1 - target) * np.log(1 - sig))
        expected = bce.sum() / 5
    else:
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))
        ce = -logp[np.arange(5), y.numpy()].mean()
        soft = np.exp(z[:, :2] / 2) / np.exp(z[:, :2] / 2).sum(1, keepdims=True)
        kd = -(soft * np.log(soft)).sum() / 5
        expected = ce + kd
    loss = s.train_step(x, y, t1)
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_paper_loss_on_the_first_task_is_plain_one_hot_bce():
    s = icarl()
    t0 = stream(num_tasks=1)[0]
    s.begin_task(t0)
    x, y = t0.x[:4], t0.y[:4]
    with torch.no_grad():
        z = s.model(x)[:, :2]
    expected = F.binary_cross_entropy_with_logits(z, F.one_hot(y, 2).float(), reduction="sum") / 4
    assert float(s.train_step(x, y, t0)) == pytest.approx(float(expected), rel=1e-6)


def test_same_seed_same_run():
    runs = []
    for _ in range(2):
        s = icarl(seed=3)
        losses = [s.train_task(t) for t in stream()]
        runs.append((losses, [p.detach().clone() for p in s.model.parameters()], s.memory()[0]))
    assert runs[0][0] == runs[1][0]
    for a, b in zip(runs[0][1], runs[1][1]):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    torch.testing.assert_close(runs[0][2], runs[1][2], rtol=0, atol=0)


@pytest.mark.parametrize("kw, name", [
    (dict(memory_size=0), "memory_size"), (dict(memory_size=2.5), "memory_size"),
    (dict(loss_variant="ce"), "loss_variant"), (dict(icarl_temperature=0.0), "icarl_temperature"),
    (dict(classifier="knn"), "classifier"), (dict(loss="mse"), "loss"),
])
def test_bad_parameters_are_named(kw, name):
    with pytest.raises((ValueError, TypeError), match=name):
        icarl(**kw)


def test_capabilities_and_model_checks():
    caps = plugins.capabilities(ICaRL)
    assert {"class_scenario", "generic_model"} <= caps and not {"task_free", "regression"} & caps
    assert isinstance(make_strategy("icarl", MLP(8, 6), memory_size=4), ICaRL)
    with pytest.raises(TypeError, match="features"):
        ICaRL(torch.nn.Linear(8, 6))
    seq = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 6))
    s = ICaRL(seq, memory_size=6, epochs=1, batch_size=16)
    s.train_task(stream(num_tasks=1)[0])
    assert s.exemplars[0].shape == (3, 8)
    with pytest.raises(ValueError, match="task boundaries"):
        s.observe(torch.zeros(2, 8), torch.tensor([0, 1]))


def test_icarl_beats_naive_fine_tuning_on_a_separable_stream():
    tasks = stream(per_class=40)
    test_x, test_y = blobs(list(range(6)), 30, seed=100)
    test = Task(test_x, test_y)
    acc = {}
    for name, kw in [("naive", {}), ("icarl", dict(memory_size=30))]:
        torch.manual_seed(0)
        s = make_strategy(name, MLP(8, 6, hidden=(16,)), epochs=5, batch_size=16, lr=0.05, seed=0, **kw)
        for t in tasks:
            s.train_task(t)
        acc[name] = s.evaluate(test)
    assert acc["icarl"] > 0.9 and acc["icarl"] > acc["naive"] + 0.3, acc
