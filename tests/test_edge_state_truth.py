"""The ground truth by state (clkit.edge.state_truth, clkit.edge.prefix.state_tree): the counts of issue 50,
and the same accuracies as the prefix-tree walk on all 90 orders at 6 classes / 3 tasks."""

import numpy as np
import pytest
import torch

from clkit.edge import enumerate_sequences
from clkit.edge.learners import LearnerConfig, train_strategy_sequences
from clkit.edge.prefix import TRUTH_STATES, count_states, prefix_tree, state_keys, state_tree
from clkit.edge.state_truth import declared_state, state_counts
from clkit.edge.truth import GroundTruth
from clkit.strategies import Naive, RanPAC, SimpleCIL

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _data(seed=0):
    rng = np.random.default_rng(seed)
    centres = 2.0 * rng.normal(size=(6, 5))
    x_train = centres[:, None, :] + rng.normal(size=(6, 12, 5))
    x_test = centres[:, None, :] + rng.normal(size=(6, 10, 5))
    return x_train, x_test


def _as_prefix(cls):
    """The same strategy declaring no smaller state: the shared truth walks the prefix tree."""
    return type(f"Prefix{cls.__name__}", (cls,), {"truth_state": "prefix"})


def test_counts_of_states_against_prefix_nodes():
    """Issue 50's figures: 6/3: 31 sets or 120 (set, last task) against 195 prefixes; 10/5: 511 or 5,760
    against 247,005 (the prefix count by its formula: 45 + 45*28 + 45*28*15 + 2 * 45*28*15*6)."""
    s6 = enumerate_sequences(6, 3)
    assert [sum(count_states(s6, k)) for k in ("prefix", "set", "set_last", "first_set", "first_set_last")] == \
        [195, 31, 120, 120, 195]
    assert count_states(s6, "set") == [15, 15, 1]                  # C(6,2), C(6,4), C(6,6)
    assert state_counts(s6, "set")["prefix_nodes"] == 195
    s10 = enumerate_sequences(10, 5)
    assert count_states(s10, "set") == [45, 210, 210, 45, 1]       # C(10, 2k)
    assert count_states(s10, "set_last") == [45, 210 * 6, 210 * 15, 45 * 28, 45]
    assert sum(count_states(s10, "set_last")) == 5760 and 45 + 45 * 28 + 45 * 28 * 15 + 2 * 45 * 28 * 15 * 6 == 247005


def test_state_tree_of_prefixes_is_the_prefix_tree_and_members_share_their_state():
    seqs = enumerate_sequences(6, 3)
    for a, b in zip(prefix_tree(seqs), state_tree(seqs, "prefix")):
        assert np.array_equal(a.parent, b.parent) and np.array_equal(a.node_of, b.node_of)
        assert np.array_equal(a.prefixes, b.prefixes)
    for state in TRUTH_STATES:
        levels = state_tree(seqs, state)
        for t, lv in enumerate(levels):
            keys = state_keys(seqs, t, state)
            # every member of a node has the representative's key, and the parent is the representative's
            first = np.array([np.flatnonzero(lv.node_of == i)[0] for i in range(len(lv.parent))])
            assert np.array_equal(keys, keys[first][lv.node_of])
            if t:
                assert np.array_equal(lv.parent, levels[t - 1].node_of[first])
    with pytest.raises(ValueError, match="truth_state must be one of"):
        state_tree(seqs, "order")


@pytest.mark.parametrize("cls, kwargs, state, per_task", [
    (SimpleCIL, {}, "set", [15, 15, 1]),
    (RanPAC, {"projection_dim": 32, "ridge": 1.0}, "set", [15, 15, 1]),
    (RanPAC, {"projection_dim": 32}, "set_last", [15, 90, 15]),
])
def test_truth_by_state_equals_the_prefix_tree_walk_on_all_90_orders(cls, kwargs, state, per_task):
    """Exactly equal accuracy matrices (all 90 orders, every task) with 31 or 120 trainings instead of 195."""
    x_train, x_test = _data()
    seqs = enumerate_sequences(6, 3)
    cfg = LearnerConfig(hidden=16, epochs=1, batch_size=8)
    by_state = train_strategy_sequences(x_train, x_test, seqs, cls, cfg, seed=0, strategy_kwargs=kwargs)
    walk = train_strategy_sequences(x_train, x_test, seqs, _as_prefix(cls), cfg, seed=0, strategy_kwargs=kwargs)
    assert by_state["truth_state"] == state and by_state["states_per_task"] == per_task
    assert "truth_state" not in walk
    np.testing.assert_array_equal(by_state["acc_matrix"], walk["acc_matrix"])
    np.testing.assert_array_equal(by_state["avg_acc"], walk["avg_acc"])
    assert np.ptp(walk["avg_acc"]) > 0                  # the orders do differ: the lookup is not trivially equal


def test_a_wrong_declaration_gives_wrong_accuracies():
    """Fine-tuning depends on the order: declared "set" it would get its representative's order for every
    member of a set, so the truth differs from the walk (the check above can fail)."""
    x_train, x_test = _data()
    seqs = enumerate_sequences(6, 3)[::3]
    cfg = LearnerConfig(hidden=8, epochs=1, batch_size=8, lr=0.1)
    wrong = type("SetNaive", (Naive,), {"truth_state": "set"})
    a = train_strategy_sequences(x_train, x_test, seqs, wrong, cfg, seed=0)
    b = train_strategy_sequences(x_train, x_test, seqs, Naive, cfg, seed=0)
    assert not np.array_equal(a["acc_matrix"], b["acc_matrix"])


def test_declared_states_and_the_sampled_truth_looks_states_up():
    assert declared_state(SimpleCIL) == "set" and declared_state(Naive) == "prefix"
    assert declared_state(RanPAC) == "prefix"              # a property: only an instance knows its settings
    x_train, x_test = _data()
    seqs = enumerate_sequences(6, 3)
    cfg = LearnerConfig(hidden=16, epochs=1, batch_size=8)

    def train(s):
        return {"simplecil": 100 * train_strategy_sequences(x_train, x_test, s, SimpleCIL, cfg, seed=0)["avg_acc"]}

    exact = GroundTruth(train, seqs, mode="exact")
    sampled = GroundTruth(train, seqs, mode="sample", samples=20, seed=3)
    pop = sampled.population
    np.testing.assert_array_equal(sampled.values["simplecil"][pop], exact.values["simplecil"][pop])


def test_no_sharing_still_trains_every_order_alone():
    x_train, x_test = _data()
    seqs = enumerate_sequences(6, 3)[:12]
    cfg = LearnerConfig(hidden=16, epochs=1, batch_size=8)
    alone = train_strategy_sequences(x_train, x_test, seqs, SimpleCIL, cfg, seed=0, share_prefixes=False)
    shared = train_strategy_sequences(x_train, x_test, seqs, SimpleCIL, cfg, seed=0)
    assert "truth_state" not in alone and shared["truth_state"] == "set"
    np.testing.assert_array_equal(alone["acc_matrix"], shared["acc_matrix"])


def test_ranpac_with_the_adapter_stage_keys_on_the_first_task_and_equals_the_walk():
    """With the adapter stage the features depend on the first task: one adapted ViT per first task (15 at
    6/3), states (first task, set) -- 120 trainings instead of 195 for all 90 orders; here 30 orders, 15 + 30 + 15
    against 15 + 30 + 30 -- and the walk's accuracies exactly."""
    from clkit.models.vit import vit_backbone

    g = torch.Generator().manual_seed(0)
    templates = torch.randn(6, 3, 32, 32, generator=g)
    x_train = (templates[:, None] + 2.0 * torch.randn(6, 4, 3, 32, 32, generator=g)).numpy()
    x_test = (templates[:, None] + 2.0 * torch.randn(6, 3, 3, 32, 32, generator=g)).numpy()
    seqs = enumerate_sequences(6, 3)[::3]                  # 30 orders: every first task, 2 orders each
    cfg = LearnerConfig(epochs=1, batch_size=8)
    kw = dict(projection_dim=16, ridge=1.0, head="cosine", first_session_adaptation=True, ffn_num=2, tuned_epochs=1,
              adapter_batch_size=8, adapter_lr=0.05)

    def factory(in_features, num_classes):
        return vit_backbone(num_classes=num_classes, tiny=True, seed=0)

    by_state = train_strategy_sequences(x_train, x_test, seqs, RanPAC, cfg, seed=0, strategy_kwargs=kw,
                                        model_factory=factory)
    walk = train_strategy_sequences(x_train, x_test, seqs, _as_prefix(RanPAC), cfg, seed=0, strategy_kwargs=kw,
                                    model_factory=factory)
    assert by_state["truth_state"] == "first_set" and by_state["states_per_task"] == [15, 30, 15]
    np.testing.assert_array_equal(by_state["acc_matrix"], walk["acc_matrix"])
    # the final accuracy depends on the first task (one adapted ViT each), not on the rest of the order
    final = walk["final_acc"]
    first = [tuple(s[0]) for s in seqs]
    for f in set(first):
        members = final[[i for i, x in enumerate(first) if x == f]]
        np.testing.assert_allclose(members, members[0], atol=1e-7)     # the same, up to the mean's rounding
