"""Notebook 03's paper learners (issue 40): CORAL and MoCo+SML, and Wild-Time's backbones."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from clkit.data.temporal import make_drifting_gaussians
from clkit.models.wildtime import YearbookCNN, densenet121, make_wildtime_backbone
from clkit.temporal import LEARNERS, accuracy_matrix, build_learner, check_learner_settings, majority_accuracy_matrix
from clkit.temporal.learners import (CORAL, KeyQueue, MoCoSML, augment_view, coral_penalty, info_nce,
                                     mean_coral_penalty, momentum_update)


# --------------------------------------------------------------------------- CORAL

def test_coral_penalty_equals_hand_value():
    # a: rows (1, 0, 2), (3, 2, 0) -> mean (2, 1, 1); centred +-(1, 1, -1); covariance (n - 1 = 1):
    #    [[2, 2, -2], [2, 2, -2], [-2, -2, 2]]
    # b: rows (0, 0, 0), (0, 0, 0), (0, 0, 3) -> mean (0, 0, 1); centred (0,0,-1),(0,0,-1),(0,0,2);
    #    covariance (n - 1 = 2): only [2, 2] = (1 + 1 + 4) / 2 = 3
    # mean term: ((2-0)^2 + (1-0)^2 + (1-1)^2) / 3 = 5 / 3
    # covariance term: differences [[2,2,-2],[2,2,-2],[-2,-2,-1]] -> (8 * 4 + 1) / 9 = 33 / 9
    a = torch.tensor([[1.0, 0.0, 2.0], [3.0, 2.0, 0.0]])
    b = torch.tensor([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 3.0]])
    assert float(coral_penalty(a, b)) == pytest.approx(5 / 3 + 33 / 9)
    assert float(coral_penalty(b, a)) == pytest.approx(5 / 3 + 33 / 9)


def test_coral_penalty_is_zero_on_identical_groups():
    g = torch.randn(6, 4, generator=torch.Generator().manual_seed(0))
    assert float(coral_penalty(g, g.clone())) == 0.0
    assert float(mean_coral_penalty([g, g.clone(), g.clone()])) == 0.0


def test_mean_coral_penalty_is_the_mean_over_pairs():
    a = torch.tensor([[0.0, 0.0], [2.0, 2.0]])
    b = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    # pairs (a, b) = 4.5, (a, a) = 0, (b, a) = 4.5 -> 3
    assert float(mean_coral_penalty([a, b, a])) == pytest.approx(3.0)
    assert float(mean_coral_penalty([a, torch.zeros(1, 2)])) == 0.0      # a 1-row group has no covariance


def test_coral_penalty_refuses_bad_input():
    with pytest.raises(ValueError, match="same width"):
        coral_penalty(torch.zeros(3, 2), torch.zeros(3, 4))
    with pytest.raises(ValueError, match="at least 2 rows"):
        coral_penalty(torch.zeros(1, 2), torch.zeros(3, 2))
    with pytest.raises(TypeError, match="tensors"):
        coral_penalty(np.zeros((3, 2)), torch.zeros(3, 2))


def test_coral_step_adds_the_weighted_penalty_between_domains():
    """With coral_lambda = 0 the CORAL learner's first-period steps are those of plain cross-entropy; after
    a period, a step's loss is CE over all rows + lambda * penalty of the domains (checked by hand)."""
    from clkit.models import MLP
    from clkit.strategies.base import Task

    from clkit._seed import torch_seeded

    ds = make_drifting_gaussians(3, 40, seed=0).tasks()
    with torch_seeded(0):
        model = MLP(8, 2, hidden=(4,))
    s = CORAL(model, coral_lambda=2.0, coral_groups=2, batch_size=20, epochs=1, optimizer="sgd",
              lr=1e-9, momentum=0.0, seed=0)
    s.train_task(ds[0])
    assert s.past == [ds[0]]
    idx = torch.arange(20)
    gen = torch.Generator().manual_seed(123)
    s.generator = gen
    rows = torch.randint(20, (20,), generator=torch.Generator().manual_seed(123))
    x = torch.cat([ds[1].x[idx], ds[0].x[rows]])
    y = torch.cat([ds[1].y[idx], ds[0].y[rows]])
    with torch.no_grad():
        logits = s.model(x)
        want = nn.functional.cross_entropy(logits, y) + 2.0 * coral_penalty(logits[:20], logits[20:])
    got = s.train_batch(ds[1], idx)
    assert float(got) == pytest.approx(float(want), rel=1e-5)
    assert isinstance(ds[1], Task)


def test_coral_settings_are_checked():
    with pytest.raises(ValueError, match="coral_on"):
        CORAL(make_wildtime_backbone("mlp", (8,), 2), coral_on="inputs")
    with pytest.raises(ValueError, match="coral_lambda"):
        CORAL(make_wildtime_backbone("mlp", (8,), 2), coral_lambda=-1.0)
    with pytest.raises(TypeError, match="features"):
        CORAL(nn.Linear(8, 2))


# --------------------------------------------------------------------------- MoCo

def test_momentum_update_is_an_exact_ema():
    q, k = nn.Linear(2, 1), nn.Linear(2, 1)
    with torch.no_grad():
        q.weight.copy_(torch.tensor([[1.0, -2.0]])), q.bias.fill_(4.0)
        k.weight.copy_(torch.tensor([[3.0, 0.0]])), k.bias.fill_(0.0)
    momentum_update(k, q, 0.9)
    # 0.9 * 3 + 0.1 * 1 = 2.8;  0.9 * 0 + 0.1 * -2 = -0.2;  0.9 * 0 + 0.1 * 4 = 0.4
    assert k.weight.ravel().tolist() == pytest.approx([2.8, -0.2]) and float(k.bias.detach()) == pytest.approx(0.4)
    assert q.weight.tolist() == [[1.0, -2.0]]                        # the query is untouched
    momentum_update(k, q, 1.0)                                       # m = 1: the key stays
    assert k.weight.ravel().tolist() == pytest.approx([2.8, -0.2])
    with torch.no_grad():
        k.weight.copy_(torch.tensor([[3.0, 0.0]])), k.bias.fill_(0.0)
    momentum_update(k, q, 0.75)                                      # dyadic numbers: exact in float32
    assert k.weight.tolist() == [[2.5, -0.5]] and float(k.bias.detach()) == 1.0
    momentum_update(k, q, 0.0)                                       # m = 0: the key becomes the query
    assert k.weight.tolist() == [[1.0, -2.0]] and float(k.bias.detach()) == 4.0


def test_info_nce_on_two_samples_equals_hand_value():
    # q1 = (1, 0), k1 = (0.6, 0.8): positive 0.6; negatives (0, 1) -> 0, (-1, 0) -> -1
    # q2 = (0, 1), k2 = (0, 1): positive 1; negatives 1 and 0; tau = 0.5 doubles the logits
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    k = torch.tensor([[0.6, 0.8], [0.0, 1.0]])
    queue = torch.tensor([[0.0, 1.0], [-1.0, 0.0]])
    l1 = -math.log(math.exp(1.2) / (math.exp(1.2) + math.exp(0.0) + math.exp(-2.0)))
    l2 = -math.log(math.exp(2.0) / (math.exp(2.0) + math.exp(2.0) + math.exp(0.0)))
    assert float(info_nce(q, k, queue, 0.5)) == pytest.approx((l1 + l2) / 2, rel=1e-6)
    with pytest.raises(ValueError, match="temperature"):
        info_nce(q, k, queue, 0.0)


def test_queue_is_fifo():
    queue = KeyQueue(4, 1, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(queue.keys.norm(dim=1), torch.ones(4))    # starts as random unit keys
    for start in (1.0, 4.0, 7.0):
        queue.enqueue(torch.tensor([[start], [start + 1], [start + 2]]))
    assert queue.ordered().ravel().tolist() == [6.0, 7.0, 8.0, 9.0]   # the 4 latest, oldest first
    queue.enqueue(torch.arange(10.0, 16.0)[:, None])                 # more than the queue holds
    assert queue.ordered().ravel().tolist() == [12.0, 13.0, 14.0, 15.0]


def test_augment_view_is_seeded_and_keeps_shapes():
    x = torch.rand(5, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    a = augment_view(x, torch.Generator().manual_seed(1))
    b = augment_view(x, torch.Generator().manual_seed(1))
    assert a.shape == x.shape and torch.equal(a, b) and not torch.equal(a, x)
    v = augment_view(torch.ones(4, 6), torch.Generator().manual_seed(0), noise=0.0, mask=0.0)
    assert torch.equal(v, torch.ones(4, 6))


def test_moco_sml_beats_the_majority_baseline_on_drifting_gaussians():
    ds = make_drifting_gaussians(4, 400, drift=0.3, seed=0)
    A = accuracy_matrix(ds, "moco_sml", epochs=3, hidden=(32,), lr=1e-3, batch_size=32, seed=0,
                        strategy_kwargs={"moco_queue": 256, "moco_dim": 16})
    major = majority_accuracy_matrix([y for _, y in ds.train], [y for _, y in ds.test])
    assert A.shape == (4, 4) and np.isnan(A[np.tril_indices(4, -1)]).all()
    diag, base = np.diag(A), np.diag(major)
    assert (diag > base + 0.1).all(), (diag, base)
    again = accuracy_matrix(ds, "moco_sml", epochs=3, hidden=(32,), lr=1e-3, batch_size=32, seed=0,
                            strategy_kwargs={"moco_queue": 256, "moco_dim": 16})
    np.testing.assert_array_equal(A, again)                          # seeded


def test_coral_accuracy_matrix_has_the_right_shape_and_learns():
    ds = make_drifting_gaussians(4, 200, drift=0.3, seed=0)
    A = accuracy_matrix(ds, "coral", epochs=3, hidden=(16,), lr=5e-3, batch_size=32, seed=0,
                        strategy_kwargs={"coral_groups": 3})
    major = majority_accuracy_matrix([y for _, y in ds.train], [y for _, y in ds.test])
    assert A.shape == (4, 4) and (np.diag(A) > np.diag(major) + 0.1).all()


def test_new_learners_are_listed_and_take_learner_kwargs():
    assert {"coral", "moco_sml"} <= set(LEARNERS)
    got = check_learner_settings({"coral": {"coral_lambda": 0.5, "coral_on": "features"},
                                  "moco_sml": {"moco_momentum": 0.99, "sml_lr": 0.05}}, ["erm", "coral", "moco_sml"])
    assert got["coral"] == {"coral_lambda": 0.5, "coral_on": "features"} and got["erm"] == {}
    with pytest.raises(ValueError, match="moco_sml.*unknown keyword 'queue'"):
        check_learner_settings({"moco_sml": {"queue": 10}}, ["moco_sml"])
    with pytest.raises(TypeError, match="moco_queue"):
        check_learner_settings({"moco_sml": {"moco_queue": 1.5}}, ["moco_sml"])
    s = build_learner("moco_sml", 8, 2, seed=0, hidden=(4,), strategy_kwargs={"moco_momentum": 0.5, "moco_queue": 8})
    assert s.moco_momentum == 0.5 and s.queue.size == 8


# --------------------------------------------------------------------------- backbones

def test_yearbook_cnn_is_wild_times_network():
    net = YearbookCNN(3, 2)
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size, c.padding) for c in convs] == \
        [(3, 32, (3, 3), (1, 1))] + [(32, 32, (3, 3), (1, 1))] * 3
    assert sum(isinstance(m, nn.BatchNorm2d) for m in net.modules()) == 4
    assert sum(isinstance(m, nn.MaxPool2d) for m in net.modules()) == 4
    assert (net.head.in_features, net.head.out_features) == (32, 2)
    assert net(torch.zeros(2, 3, 32, 32)).shape == (2, 2)


def test_densenet121_random_or_from_a_local_file(tmp_path):
    from torchvision.models import densenet121 as tv

    net = densenet121(62)
    assert "random" in net.weights_source and net.head.in_features == 1024
    state = tv(weights=None).state_dict()
    state["features.conv0.weight"] = torch.full_like(state["features.conv0.weight"], 0.5)
    torch.save(state, tmp_path / "dn.pth")
    loaded = densenet121(10, weights=tmp_path / "dn.pth")
    assert str(tmp_path / "dn.pth") in loaded.weights_source
    assert torch.all(loaded.features[0].conv0.weight == 0.5)
    with pytest.raises(ValueError, match="weights"):
        densenet121(10, weights=tmp_path / "missing.pth")


def test_backbone_choice_is_validated_and_mlp_is_unchanged():
    with pytest.raises(ValueError, match="backbone must be one of"):
        make_wildtime_backbone("vgg", (8,), 2)
    with pytest.raises(ValueError, match="input_shape"):
        make_wildtime_backbone("yearbook_cnn", (8,), 2)
    a = build_learner("finetune", 8, 2, seed=3, hidden=(4,))
    b = build_learner("finetune", 8, 2, seed=3, hidden=(4,), backbone="mlp", input_shape=(8,))
    for p, q in zip(a.model.parameters(), b.model.parameters()):
        assert torch.equal(p, q)


def test_image_backbone_trains_through_accuracy_matrix():
    from clkit.data.temporal import PeriodDataset

    rng = np.random.default_rng(0)
    train = [(rng.random((16, 3, 32, 32), dtype=np.float32), rng.integers(0, 2, 16)) for _ in range(2)]
    test = [(rng.random((8, 3, 32, 32), dtype=np.float32), rng.integers(0, 2, 8)) for _ in range(2)]
    ds = PeriodDataset("tiny", "random images", ["0", "1"], train, test, 2)
    for learner in ("coral", "moco_sml"):
        A = accuracy_matrix(ds, learner, epochs=1, batch_size=8, backbone="yearbook_cnn",
                            strategy_kwargs={"moco_queue": 16} if learner == "moco_sml" else None)
        assert A.shape == (2, 2) and np.isfinite(A[np.triu_indices(2)]).all()
