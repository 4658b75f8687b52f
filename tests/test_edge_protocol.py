"""Notebook 02's two settings (clkit.edge.protocol): the paper's text and the EDGE authors' released code."""

import numpy as np
import pytest

from clkit.edge.combinatorics import random_sequences
from clkit.edge.protocol import SETTINGS, check_pretrained, protocol_learner_kwargs, rs_shuffle


def test_rs_orders_of_the_two_generators_are_pinned():
    """Seeds 0 / 42 / 1993 on the six classes: PyCIL's RandomState stream and the release's default_rng."""
    assert np.random.RandomState(0).permutation(6).tolist() == [5, 2, 1, 3, 0, 4]
    assert np.random.default_rng(0).permutation(6).tolist() == [3, 2, 5, 4, 0, 1]
    assert random_sequences(6, 3).tolist() == [[[2, 5], [1, 3], [0, 4]], [[0, 1], [2, 5], [3, 4]],
                                               [[0, 2], [3, 4], [1, 5]]]
    rel = random_sequences(6, 3, shuffle="edge_release")
    assert rel.tolist() == [[[2, 3], [4, 5], [0, 1]], [[2, 3], [4, 5], [0, 1]], [[0, 5], [3, 4], [1, 2]]]
    # default_rng's seeds 0 and 42 shuffle six classes into the same sequence (tasks are sets)
    assert len({r.tobytes() for r in rel}) == 2
    # the release draws its orders over the whole dataset: the same generator at N = 100
    assert np.random.default_rng(1993).permutation(100)[:4].tolist() == [40, 99, 72, 35]
    with pytest.raises(ValueError, match="shuffle must be one of"):
        random_sequences(6, 3, shuffle="torch")


def test_protocol_selects_the_shuffle():
    assert rs_shuffle("paper") == "pycil" and rs_shuffle("authors") == "edge_release"
    assert rs_shuffle("paper", "edge_release") == "edge_release"
    with pytest.raises(ValueError, match="rs_shuffle must be one of"):
        rs_shuffle("paper", "numpy")


def test_authors_settings_are_pycils_module_constants():
    """PyCIL/models/{ewc,icarl,der}.py of AIGNLAI/EDGE: init_epoch 200, init_milestones [60, 120, 170],
    init_weight_decay 5e-4; epochs 180 / 170 / 170, milestones [70, 120, 150] / [80, 120] / [80, 120, 150],
    weight_decay 2e-4; iCaRL's T = 2 and the head's accuracy."""
    a = SETTINGS["authors"]
    for name, (epochs, ms) in {"ewc": (180, [70, 120, 150]), "icarl": (170, [80, 120]),
                               "der": (170, [80, 120, 150])}.items():
        s = a[name]
        assert (s["init_epochs"], s["init_lr"], s["init_milestones"], s["init_weight_decay"]) == \
            (200, 0.1, [60, 120, 170], 0.0005)
        assert (s["epochs"], s["lr"], s["milestones"], s["weight_decay"], s["lr_decay"], s["batch_size"]) == \
            (epochs, 0.1, ms, 0.0002, 0.1, 128)
        assert s["reset_optimizer"] is True
    assert (a["icarl"]["loss_variant"], a["icarl"]["icarl_temperature"], a["icarl"]["classifier"]) == \
        ("pycil", 2.0, "head")
    p = SETTINGS["paper"]["icarl"]   # App. E.1.1 as written
    assert (p["epochs"], p["milestones"], p["weight_decay"], p["loss_variant"], p["classifier"]) == \
        (170, [60, 120, 170], 0.0005, "paper", "nme")


def test_new_methods_authors_settings_are_the_releases():
    """PyCIL's exps/foster.json, exps/memo.json (MEMO_CIFAR100) and models/tagfex.py's constants."""
    from clkit.strategies.memo import MEMO_CIFAR100

    a, p = SETTINGS["authors"], SETTINGS["paper"]
    f = a["foster"]
    assert (f["init_epochs"], f["epochs"], f["compression_epochs"], f["lr"], f["weight_decay"], f["batch_size"]) == \
        (200, 170, 130, 0.1, 0.0005, 128)
    m = a["memo"]
    for key in ("init_epochs", "init_lr", "init_weight_decay", "epochs", "lr", "weight_decay", "batch_size"):
        assert m[key] == MEMO_CIFAR100[key], key
    assert tuple(m["init_milestones"]) == tuple(MEMO_CIFAR100["init_milestones"]) == (60, 120, 170)
    assert tuple(m["milestones"]) == tuple(MEMO_CIFAR100["milestones"]) == (80, 120, 150)
    t = a["tagfex"]
    assert (t["init_epochs"], t["init_milestones"], t["init_weight_decay"], t["epochs"], t["milestones"],
            t["weight_decay"], t["batch_size"]) == (200, [60, 120, 170], 0.0005, 170, [80, 120, 150], 0.0002, 128)
    # App. E.1.1: 170 epochs every task, steps 60 / 120 / 170, weight decay 5e-4
    assert p["memo"]["init_epochs"] == p["memo"]["epochs"] == p["tagfex"]["epochs"] == p["foster"]["init_epochs"] == 170
    assert p["memo"]["milestones"] == p["tagfex"]["milestones"] == [60, 120, 170]
    assert p["memo"]["weight_decay"] == p["tagfex"]["weight_decay"] == 0.0005


@pytest.mark.parametrize("name", ["l2p", "coda_prompt", "hide_prompt", "ease", "mos"])
def test_vit_settings_are_the_strategies_defaults(name):
    """The ViT methods' PILOT settings in SETTINGS equal what each strategy does when given nothing (L2P: its
    release's exps/l2p.json, which its constructor does not default to); the authors protocol uses them (the paper
    protocol: App. E.1.1's line, tests/test_edge_protocol_vit.py)."""
    from clkit.models.vit import vit_backbone
    from clkit.plugins import resolve_strategy
    from clkit.strategies.base import Strategy

    s = SETTINGS["authors"][name]
    built = resolve_strategy(name)(vit_backbone(num_classes=4, tiny=True, seed=0))
    if name == "l2p":
        assert (s["optimizer"], s["lr"], s["batch_size"], s["epochs"]) == ("adam", 0.03 * 16 / 256, 16, 5)
        return
    for key in ("lr", "batch_size", "epochs", "weight_decay", "momentum"):
        if key in s:
            assert getattr(built, key) == pytest.approx(s[key]), key
    assert built._optimizer_spec == s["optimizer"]
    assert isinstance(built, Strategy)


def test_stream_sets_coda_tasks_and_hide_pool():
    kw = protocol_learner_kwargs("authors", "cifar100", ["coda_prompt", "hide_prompt"], {}, num_tasks=12)
    assert kw["coda_prompt"]["n_tasks"] == 12 and kw["hide_prompt"]["pool_size"] == 12
    kw = protocol_learner_kwargs("authors", "cifar100", ["coda_prompt"], {"coda_prompt": {"n_tasks": 5}},
                                 num_tasks=3)
    assert kw["coda_prompt"]["n_tasks"] == 5


def test_run_values_win_and_only_image_protocols_change():
    kw = protocol_learner_kwargs("authors", "cifar100", ["ewc", "icarl", "simplecil"],
                                 {"icarl": {"memory_size": 120, "epochs": 3}})
    assert kw["icarl"]["epochs"] == 3 and kw["icarl"]["memory_size"] == 120 and kw["icarl"]["init_epochs"] == 200
    assert kw["ewc"]["epochs"] == 180 and "simplecil" not in kw
    assert protocol_learner_kwargs("authors", "fashion_mnist", ["ewc"], {"ewc": {"ewc_lambda": 5.0}}) == \
        {"ewc": {"ewc_lambda": 5.0}}


def test_protocol_settings_pass_the_notebooks_keyword_check():
    """Every setting is a keyword the strategy (or the schedule) accepts."""
    from clkit.edge.report import check_edge_learner_kwargs

    from clkit.edge.paper_numbers import PAPER_METHODS

    for protocol in ("paper", "authors"):
        kw = protocol_learner_kwargs(protocol, "cifar100", ["ewc", "icarl", "der"], {})
        assert check_edge_learner_kwargs(kw, ["ewc", "icarl", "der"], batched=["ncm"]) == kw
        every = list(PAPER_METHODS)
        kw = protocol_learner_kwargs(protocol, "cifar100", every, {}, num_tasks=3)
        assert sorted(kw) == sorted(every)          # RanPAC too: frozen-feature (paper) or the authors' adapter one
        assert check_edge_learner_kwargs(kw, every, batched=["ncm"]) == kw
    with pytest.raises(ValueError, match="init_epoch"):
        check_edge_learner_kwargs({"ewc": {"init_epoch": 200}}, ["ewc"], batched=["ncm"])


def test_strategies_train_under_the_authors_schedule():
    """iCaRL (PyCIL variant, head) on three toy orders through the prefix tree: init_epochs for the first task,
    the strategy's epochs after; the same numbers alone as in the tree."""
    from clkit.edge import enumerate_sequences
    from clkit.edge.learners import LearnerConfig, train_strategy_sequences
    from clkit.strategies.icarl import ICaRL

    rng = np.random.default_rng(0)
    centres = 2 * rng.normal(size=(4, 6))
    xtr = (centres[:, None] + rng.normal(size=(4, 12, 6))).astype(np.float32)
    xte = (centres[:, None] + rng.normal(size=(4, 8, 6))).astype(np.float32)
    seqs = enumerate_sequences(4, 2)
    kw = dict(protocol_learner_kwargs("authors", "cifar100", ["icarl"], {"icarl": {"memory_size": 8}})["icarl"],
              init_epochs=3, epochs=2, init_milestones=[2], milestones=[1], batch_size=8)
    cfg = LearnerConfig(hidden=8, epochs=1, batch_size=8, lr=0.05)
    out = train_strategy_sequences(xtr, xte, seqs, ICaRL, cfg, seed=0, strategy_kwargs=kw)
    alone = train_strategy_sequences(xtr, xte, seqs[[4]], ICaRL, cfg, seed=0, strategy_kwargs=kw)
    np.testing.assert_allclose(alone["acc_matrix"][0], out["acc_matrix"][4], atol=1e-6)
    assert np.all(out["final_acc"] > 0.5)


def test_paper_runs_need_their_weights(tmp_path):
    from clkit.edge.images import ViTSpec

    spec = ViTSpec("vit_base_patch16_224.augreg_in21k_ft_in1k")
    with pytest.raises(ValueError, match=r"vit_weights: .*require_pretrained: true.*timm.create_model"):
        check_pretrained(True, spec=spec, encoder="glove", clip_model="ViT-B-16", clip_pretrained="openai")
    check_pretrained(False, spec=spec, encoder="clip", clip_model="ViT-B-16", clip_pretrained="openai")
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"0")
    ok = ViTSpec(spec.model, str(weights))
    check_pretrained(True, spec=ok, encoder="glove", clip_model="ViT-B-16", clip_pretrained="openai")
    with pytest.raises(ValueError, match=r"clip_model / clip_pretrained: .*not cached"):
        check_pretrained(True, spec=ok, encoder="clip", clip_model=f"local-dir:{tmp_path / 'none'}",
                         clip_pretrained="openai")
    with pytest.raises(TypeError, match="require_pretrained must be a bool"):
        check_pretrained("yes", spec=ok, encoder="glove", clip_model="x", clip_pretrained="y")
