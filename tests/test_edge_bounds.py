"""clkit.edge.bounds (Fig. 5: min_A / max_A of RS and EDGE on the classic splits)."""

import json

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from clkit.data.class_names import load_class_names  # noqa: E402
from clkit.edge import sequence_scores  # noqa: E402
from clkit.edge.bounds import CLASSIC_SPLITS, classic_bounds, train_distinct  # noqa: E402
from clkit.edge.plots import bounds_bars  # noqa: E402
from clkit.edge.similarity_matrix import ClassSimilarity  # noqa: E402

SIM4 = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
NAMES4 = ["a", "b", "c", "d"]


class Recorder:
    """train(): 'f' = 10 x first class + second class of the first task, 'g' = 100 - f; records its calls."""

    def __init__(self):
        self.calls = []

    def __call__(self, seqs):
        self.calls.append(np.asarray(seqs).tolist())
        f = 10.0 * seqs[:, 0, 0] + seqs[:, 0, 1]
        return {"f": f, "g": 100.0 - f}


def test_classic_splits_follow_the_paper():
    assert {k: (v["num_classes"], v["num_tasks"], v["classes_per_task"]) for k, v in CLASSIC_SPLITS.items()} == {
        "cifar100": (100, 10, 10), "cub200": (200, 10, 20), "imagenet_r": (200, 10, 20)}
    for split in CLASSIC_SPLITS.values():
        assert len(load_class_names(split["class_names"])) == split["num_classes"]
        assert split["num_classes"] == split["num_tasks"] * split["classes_per_task"]


def test_hand_computed_bounds():
    train = Recorder()
    res = classic_bounds(NAMES4, 2, ClassSimilarity(SIM4, "toy", NAMES4, np.eye(4), []), train)
    # RS (seeds 0, 42, 1993): [23|01], [13|02], [02|13]; EDGE: hard [01|23], RS seed 0's [23|01], easy [02|13]
    assert res.sequences["RS"].tolist() == [[[2, 3], [0, 1]], [[1, 3], [0, 2]], [[0, 2], [1, 3]]]
    assert res.sequences["EDGE"].tolist() == [[[0, 1], [2, 3]], [[2, 3], [0, 1]], [[0, 2], [1, 3]]]
    # each distinct sequence trained once, in one call: the 3 RS ones and the hard one
    assert train.calls == [[[[2, 3], [0, 1]], [[1, 3], [0, 2]], [[0, 2], [1, 3]], [[0, 1], [2, 3]]]]
    assert res.num_trained == 4
    assert res.values["f"]["RS"].tolist() == [23.0, 13.0, 2.0]
    assert res.values["f"]["EDGE"].tolist() == [1.0, 23.0, 2.0]
    assert res.bounds["f"] == {"RS": {"min": 2.0, "max": 23.0}, "EDGE": {"min": 1.0, "max": 23.0}}
    assert res.bounds["g"] == {"RS": {"min": 77.0, "max": 98.0}, "EDGE": {"min": 77.0, "max": 99.0}}
    assert res.contains["f"] == {"edge_lower_min": True, "edge_higher_max": False, "edge_contains_rs": True}
    assert res.contains["g"] == {"edge_lower_min": False, "edge_higher_max": True, "edge_contains_rs": True}
    assert (res.hard_S, res.easy_S) == (pytest.approx(0.5), pytest.approx(1.1)) and res.notes == []
    tab = res.table()
    assert list(tab.index) == ["f", "g"]
    assert tab.loc["f"].tolist() == [2.0, 1.0, 23.0, 23.0, True, False, True]
    rec = json.loads(json.dumps(res.record()))
    assert rec["bounds"]["g"]["EDGE"]["max"] == 99.0 and rec["num_trained"] == 4


def test_an_equal_minimum_is_contained_not_lower():
    # a learner that prefers the hard sequence: EDGE's hard one is its best, RS's worst is lower
    res = classic_bounds(NAMES4, 2, SIM4, lambda s: {"h": -np.abs(s[:, 0, 0] - 1.0) - s[:, 0, 1]})
    # values: RS [23|01] -> -4, [13|02] -> -3, [02|13] -> -3; EDGE [01|23] -> -2, -4, -3
    assert res.bounds["h"] == {"RS": {"min": -4.0, "max": -3.0}, "EDGE": {"min": -4.0, "max": -2.0}}
    assert res.contains["h"]["edge_contains_rs"] and not res.contains["h"]["edge_lower_min"]


def test_more_random_sequences_are_shared_with_rs():
    train = Recorder()
    res = classic_bounds(NAMES4, 2, SIM4, train, edge_num_random=3)
    assert len(res.sequences["EDGE"]) == 5
    assert res.num_trained == 4 and len(train.calls) == 1 and len(train.calls[0]) == 4


def test_uninformative_similarity_gives_an_s_tie():
    uniform = np.full((6, 6), 0.5)
    np.fill_diagonal(uniform, 1.0)
    train = Recorder()
    res = classic_bounds(list("abcdef"), 3, uniform, train)
    hard, easy = res.sequences["EDGE"][[0, -1]]
    assert np.array_equal(hard, easy) and res.hard_S == pytest.approx(res.easy_S)
    assert sequence_scores(uniform, res.sequences["RS"]) == pytest.approx([res.hard_S] * 3)
    assert any("S-tie" in n for n in res.notes)
    assert res.num_trained == len({np.sort(s, -1).tobytes() for s in np.concatenate(list(res.sequences.values()))})


def test_train_distinct_checks_the_results():
    seqs = [[[0, 1], [2, 3]], [[2, 3], [0, 1]]]
    with pytest.raises(ValueError, match="2 finite accuracies"):
        train_distinct(lambda s: {"f": [1.0]}, seqs)
    with pytest.raises(ValueError, match=r"learners \['g'\]"):
        train_distinct(lambda s: {"f": [1.0, 2.0]}, seqs, ["g"])
    with pytest.raises(TypeError, match="train must return"):
        train_distinct(lambda s: [1.0, 2.0], seqs)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(num_tasks=3), ValueError, "num_tasks"),
    (dict(class_names=["a", "a", "b", "c"]), ValueError, "class_names"),
    (dict(sim=np.eye(3)), ValueError, "sim"),
    (dict(train="fit"), TypeError, "train"),
    (dict(seeds=1), TypeError, "seeds"),
    (dict(edge_num_random=0), ValueError, "edge_num_random"),
])
def test_bad_input_names_the_parameter(kwargs, exc, match):
    args = dict(class_names=NAMES4, num_tasks=2, sim=SIM4, train=Recorder())
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        classic_bounds(**args)


def test_bounds_bars_one_panel_per_dataset():
    import matplotlib.pyplot as plt

    res = classic_bounds(NAMES4, 2, SIM4, Recorder())
    fig = bounds_bars({"CIFAR-100": res, "CUB-200": res, "ImageNet-R": res})
    assert len(fig.axes) == 3
    ax = fig.axes[0]
    assert len(ax.patches) == 4 * 2                                       # 4 bars x 2 learners
    assert sorted({p.get_hatch() for p in ax.patches}) == [".", "/"]
    assert [ax.get_title() for ax in fig.axes] == ["CIFAR-100", "CUB-200", "ImageNet-R"]
    assert len(bounds_bars(res, learners=["g"]).axes[0].patches) == 4
    with pytest.raises(ValueError, match="learners"):
        bounds_bars(res, learners=["nope"])
    with pytest.raises(TypeError, match="results"):
        bounds_bars({"x": 1})
    plt.close("all")
