"""Issue 50, RanPAC per protocol: ``authors`` runs the EDGE authors' RanPAC (adapter on the first task, cosine
head) on the ViT's own inputs; ``paper`` keeps the frozen-feature RanPAC on the cached features."""

import numpy as np
import pytest

from clkit.edge.images import ViTSpec, learner_kind, strategy_inputs
from clkit.edge.protocol import SETTINGS, protocol_learner_kwargs
from clkit.strategies.ranpac import RANPAC_AUTHORS, RanPAC


def _data(C=6, n=3, side=8):
    rng = np.random.default_rng(0)
    raw_tr = rng.integers(0, 256, size=(C, n, side, side, 3), dtype=np.uint8)
    raw_te = rng.integers(0, 256, size=(C, 2, side, side, 3), dtype=np.uint8)
    return {"x_train": raw_tr.transpose(0, 1, 4, 2, 3).astype(np.float32) / 255,
            "x_test": raw_te.transpose(0, 1, 4, 2, 3).astype(np.float32) / 255,
            "raw_train": raw_tr, "raw_test": raw_te,
            "f_train": rng.normal(size=(C, n, 8)).astype(np.float32),
            "f_test": rng.normal(size=(C, 2, 8)).astype(np.float32),
            "dataset": "cifar100", "image_shape": (3, side, side)}


def test_the_protocols_name_both_ranpacs():
    assert SETTINGS["authors"]["ranpac"] == RANPAC_AUTHORS
    assert SETTINGS["authors"]["ranpac"]["first_session_adaptation"] is True
    assert SETTINGS["authors"]["ranpac"]["tuned_epochs"] == 20 and SETTINGS["authors"]["ranpac"]["ffn_num"] == 64
    assert SETTINGS["authors"]["ranpac"]["head"] == "cosine"
    assert SETTINGS["paper"]["ranpac"] == {"first_session_adaptation": False, "head": "linear"}
    # the run's value wins (the paper set's projection), the rest is the protocol's
    kw = protocol_learner_kwargs("authors", "cifar100", ["ranpac"], {"ranpac": {"projection_dim": 64}})["ranpac"]
    assert kw["projection_dim"] == 64 and kw["first_session_adaptation"] is True and kw["ffn_num"] == 64
    # outside the image protocols nothing is filled in
    assert protocol_learner_kwargs("authors", "fashion_mnist", ["ranpac"], {}) == {}


def test_authors_ranpac_is_routed_to_the_vit_and_papers_to_the_features():
    auth = protocol_learner_kwargs("authors", "cifar100", ["ranpac"])
    paper = protocol_learner_kwargs("paper", "cifar100", ["ranpac"])
    assert learner_kind("ranpac", auth["ranpac"]) == "prompt" and learner_kind("ranpac", paper["ranpac"]) == "frozen"
    assert learner_kind("ranpac") == "frozen"                       # no settings: the frozen-feature one
    data, spec = _data(), ViTSpec("tiny")
    xa, _, fa = strategy_inputs(data, ["ranpac"], spec=spec, learner_kwargs=auth)["ranpac"]
    xp, _, fp = strategy_inputs(data, ["ranpac"], spec=spec, learner_kwargs=paper)["ranpac"]
    assert xa.shape == (6, 3, 3, 32, 32) and xp.shape == (6, 3, 8)     # ViT-side images vs cached features
    assert type(fa(in_features=1, num_classes=6)).__name__ == "ViTBackbone"
    # the authors' RanPAC accepts the routed model; the paper's would refuse it without a ViT
    RanPAC(fa(in_features=1, num_classes=6), **{**auth["ranpac"], "projection_dim": 8})
    with pytest.raises(TypeError, match="RanPAC's first_session_adaptation"):
        RanPAC(fp(in_features=8, num_classes=6), **{**auth["ranpac"], "projection_dim": 8})


def test_authors_ranpac_trains_on_the_vit_and_its_state_keeps_the_first_task():
    """The routed inputs train: the ground truth by state keys the authors' RanPAC on (first task, set,
    last task) -- every prefix at 6 classes in 3 tasks, 15 + 90 + 90 -- where the paper's needs (set, last)."""
    from clkit.edge.combinatorics import enumerate_sequences
    from clkit.edge.learners import LearnerConfig, train_strategy_sequences
    from clkit.edge.prefix import count_states

    small = {"projection_dim": 8, "tuned_epochs": 1, "ffn_num": 2, "adapter_batch_size": 6}
    kw = protocol_learner_kwargs("authors", "cifar100", ["ranpac"], {"ranpac": small})
    x_tr, x_te, factory = strategy_inputs(_data(), ["ranpac"], spec=ViTSpec("tiny"), learner_kwargs=kw)["ranpac"]
    seqs = enumerate_sequences(6, 3)[:2]
    out = train_strategy_sequences(x_tr, x_te, seqs, RanPAC, LearnerConfig(epochs=1), seed=0,
                                   model_factory=factory, strategy_kwargs=kw["ranpac"])
    assert out["truth_state"] == "first_set_last" and np.isfinite(out["final_acc"]).all()
    all_seqs = enumerate_sequences(6, 3)
    assert sum(count_states(all_seqs, "first_set_last")) == 195 and sum(count_states(all_seqs, "set_last")) == 120
