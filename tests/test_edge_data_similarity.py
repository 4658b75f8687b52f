"""Class similarity from data (features, confusion, random null): planted clusters and bad input."""

import numpy as np
import pytest

from clkit import edge
from clkit.edge import class_similarity
from clkit.edge.data_similarity import data_class_similarity


def planted(num_groups=3, per_group=3, n=60, d=20, spread=0.1, seed=0):
    """Classes in planted groups: class centres = group centre + small offset."""
    rng = np.random.default_rng(seed)
    groups = rng.normal(size=(num_groups, d)) * 3
    labels = np.repeat(np.arange(num_groups), per_group)
    centres = groups[labels] + spread * 3 * rng.normal(size=(len(labels), d))
    x = centres[:, None, :] + rng.normal(size=(len(labels), n, d))
    return x.astype(np.float32), labels


def within_minus_between(S, labels):
    same = labels[:, None] == labels[None, :]
    off = ~np.eye(len(labels), dtype=bool)
    return S[same & off].min() - S[~same].max()


@pytest.mark.parametrize("source", ["features", "confusion"])
def test_data_sources_recover_planted_clusters(source):
    x, labels = planted()
    res = class_similarity(source=source, x=x, epochs=5, seed=0)
    S = res.matrix
    assert S.shape == (9, 9) and np.allclose(S, S.T) and np.allclose(np.diag(S), 1.0)
    assert within_minus_between(S, labels) > 0, res.encoder     # every within-group pair beats every cross pair


def test_flat_inputs_with_labels_give_the_same_classes():
    x, labels = planted(num_groups=2, per_group=2, n=40)
    y = np.repeat(np.arange(4), 40)
    a = data_class_similarity("features", x=x.reshape(-1, x.shape[-1]), y=y, seed=1).matrix
    b = data_class_similarity("features", x=x, seed=1).matrix
    assert np.allclose(a, b, atol=1e-5)


def test_backbone_features_are_class_means_of_the_backbone():
    x, labels = planted()
    proj = np.random.default_rng(3).normal(size=(20, 8)).astype(np.float32)
    res = class_similarity(source="features", x=x, backbone=lambda z: z @ proj, center=False)
    means = (x @ proj).mean(axis=1)
    assert np.allclose(res.matrix, edge.cosine_similarity(means), atol=1e-5)
    assert "backbone" in res.encoder


def test_hard_and_easy_sequences_from_data_land_at_the_planted_extremes():
    # 3 groups of 3 classes in 3 tasks. Hard: no class shares a group with a class of a
    # neighbouring task; easy: the most same-group pairs across neighbouring tasks (each of
    # the 3 middle-task classes can meet at most its 2 group mates: 6).
    x, labels = planted(seed=2)
    S = class_similarity(source="features", x=x, seed=0).matrix
    hard, easy = edge.hard_sequence(S, 3), edge.easy_sequence(S, 3)
    groups_hard = [sorted(set(labels[t])) for t in hard]
    assert all(not set(a) & set(b) for a, b in zip(groups_hard[:-1], groups_hard[1:]))
    pairs = sum(int((labels[a][:, None] == labels[b][None, :]).sum()) for a, b in zip(easy[:-1], easy[1:]))
    assert pairs == 6
    # and they are the extremes of S over all 1680 sequences
    allS = edge.sequence_scores(S, edge.enumerate_sequences(9, 3))
    assert edge.sequence_score(S, hard) == pytest.approx(allS.min())
    assert edge.sequence_score(S, easy) == pytest.approx(allS.max())


def test_precomputed_confusion_is_row_normalised_and_symmetrised():
    C = np.array([[8, 2, 0], [1, 9, 0], [0, 5, 5]])
    S = class_similarity(source="confusion", confusion=C).matrix
    assert S[0, 1] == pytest.approx((0.2 + 0.1) / 2) and S[1, 2] == pytest.approx(0.25)
    assert S[0, 2] == 0.0 and np.allclose(np.diag(S), 1)


def test_random_source_is_a_seeded_null():
    a = class_similarity(source="random", num_classes=6, seed=4).matrix
    b = class_similarity(source="random", num_classes=6, seed=4).matrix
    c = class_similarity(source="random", num_classes=6, seed=5).matrix
    assert np.array_equal(a, b) and not np.allclose(a, c)
    assert class_similarity(["a", "b", "c"], source="random").matrix.shape == (3, 3)


@pytest.mark.parametrize("kwargs,err,match", [
    ({"source": "pixels", "num_classes": 3}, ValueError, r"source must be one of \['names', 'features', "
                                                         r"'confusion', 'random'\], got 'pixels'"),
    ({"source": 3}, TypeError, "source must be one of"),
    ({"source": "features", "features": np.ones((4, 5)), "class_names": ["a", "b", "c"]}, ValueError,
     "features has 4 classes but there are 3 classes"),
    ({"source": "features", "features": np.ones(5)}, ValueError, r"features must have shape \(N, d\)"),
    ({"source": "confusion", "confusion": np.ones((3, 4))}, ValueError,
     r"confusion must be a square \(N, N\) matrix, got shape \(3, 4\)"),
    ({"source": "confusion", "confusion": np.ones((3, 3)), "class_names": ["a", "b"]}, ValueError,
     "confusion has 3 classes but class_names name 2"),
    ({"source": "confusion", "confusion": [[1, -1], [0, 1]]}, ValueError, "non-negative"),
    ({"source": "features"}, ValueError, "needs labelled inputs x"),
    ({"source": "random"}, ValueError, "needs num_classes"),
    ({"source": "features", "x": np.ones((3, 5, 2)), "lr": 0}, ValueError, "lr must be"),
    ({"source": "features", "x": np.ones((3, 5, 2)), "holdout": 1.5}, ValueError, "holdout"),
    ({"source": "features", "x": np.ones((3, 5, 2)), "backbone": "resnet"}, TypeError, "backbone must be a callable"),
    ({"source": "features", "x": np.ones((10, 2)), "y": np.arange(3)}, ValueError, "y must be a 1-D label array"),
    ({"source": "names", "x": np.ones((3, 5, 2)), "class_names": ["a", "b", "c"]}, TypeError, "takes no data"),
])
def test_bad_sources_and_inputs_are_refused_naming_the_value(kwargs, err, match):
    with pytest.raises(err, match=match):
        class_similarity(**kwargs)
