"""Notebook 02's budget counts the whole set (issue 50): per-learner epochs reach it, Fig. 4 and Fig. 5 are
priced by hand-checkable formulas, and a set over a day names its split."""

from types import SimpleNamespace

import numpy as np
import pytest

from clkit.budget import GPU_ASSUMPTION, GPU_THROUGHPUT
from clkit.edge import enumerate_sequences
from clkit.edge.budget import truth_budget
from clkit.edge.budget_set import (CLASSIC_ROWS, SPLIT_GRID, _scratch_row_flops, _vit_forward_flops, classic_orders,
                                   set_budget, text_encoder_flops)
from clkit.edge.images import ViTSpec
from clkit.edge.learners import LearnerConfig


def _truth(learners, device="cpu", levels=(15, 90, 90)):
    return SimpleNamespace(learners=learners, levels=list(levels), budget=SimpleNamespace(device=device),
                           text=lambda: "truth", record=lambda: {"trainings": 1})


def _line(name, gpu_s=None, timed_s=1.0, row_step=None, row_forward=None, epochs=(2, 2), rate=None):
    kind = "batched" if gpu_s is None else "strategy"
    return {"kind": kind, "timed_s": timed_s, "gpu_s": gpu_s, "row_step": row_step, "row_forward": row_forward,
            "epochs": epochs, "rate": rate}


def test_a_learners_own_epochs_reach_its_budget_line():
    """Doubling EWC's epochs in learner_kwargs raises its FLOPs line (training part doubles, evaluation stays),
    and its first-task / later-task epochs are the ones given."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 16, 8)).astype("float32")
    data = {"x_train": x, "x_test": x[:, :8], "f_train": x, "f_test": x[:, :8]}
    cfg = LearnerConfig(hidden=8, epochs=2, batch_size=16)
    seqs = enumerate_sequences(4, 2)
    lines = {}
    for e in (3, 6):
        tb = truth_budget(data, seqs, [], ["ewc"], config=cfg, seconds_per_timing=0.05,
                          learner_kwargs={"ewc": {"epochs": e}})
        sb = set_budget(tb, dataset="fashion_mnist", num_classes=4, num_tasks=2)
        lines[e] = (tb.learners["ewc"], sb.units["truth|ewc"])
    (a, ua), (b, ub) = lines[3], lines[6]
    assert a["epochs"] == (3, 3) and b["epochs"] == (6, 6)
    assert ub > ua and b["gpu_s"] > a["gpu_s"] and a["row_step"] > a["row_forward"] > 0
    # by hand: 6 first-task nodes and 6 second-task nodes, each trains 2 classes x 16 rows for its epochs and
    # evaluates the classes seen (8 test rows each): 6 (32 e s + 16 f) + 6 (32 e s + 32 f) = 384 e s + 288 f
    for line, e in ((a, 3), (b, 6)):
        s, f = line["row_step"], line["row_forward"]
        assert line["gpu_s"] == pytest.approx((384 * e * s + 288 * f) / line["rate"][0])


def test_fig5_is_priced_per_split_and_learner_by_the_formula():
    """Fig. 5 on CIFAR-100 (100 classes, 10 tasks, 5 distinct orders) for a from-scratch learner: D x sum_t
    (epochs_t x M x n_train x step + (t + 1) x M x n_test x forward), its FLOPs scaled by the backbone's at the
    split's classes, at the assumed throughput; a frozen-feature learner adds the ViT's pass over the split."""
    truth = _truth({"ewc": _line("ewc", gpu_s=10.0, row_step=300.0, row_forward=100.0, epochs=(4, 2),
                                 rate=(GPU_THROUGHPUT, GPU_ASSUMPTION)),
                    "ranpac": _line("ranpac", gpu_s=1.0, row_step=30.0, row_forward=10.0, epochs=(1, 1),
                                    rate=(GPU_THROUGHPUT, GPU_ASSUMPTION))})
    spec = ViTSpec(model="tiny")
    b = set_budget(truth, dataset="cifar100", num_classes=6, num_tasks=3, n_train=20, n_test=5,
                   bounds_datasets=["cifar100"], bounds_learners=["ewc", "ranpac"], backbone="resnet8", spec=spec)
    scale = _scratch_row_flops("cifar100", "resnet8", 100)[1] / _scratch_row_flops("cifar100", "resnet8", 6)[1]
    D, K, M = classic_orders(3), 10, 10
    assert D == 5

    def flops(step, fwd, e0, e1):
        return D * sum((e0 if t == 0 else e1) * M * 20 * step + (t + 1) * M * 5 * fwd for t in range(K))

    feat = 100 * (20 + 5) * _vit_forward_flops(spec, 100) / GPU_THROUGHPUT
    ewc = flops(300.0 * scale, 100.0 * scale, 4, 2) / GPU_THROUGHPUT
    ranpac = flops(30.0, 10.0, 1, 1) / GPU_THROUGHPUT
    assert b.units["bounds|cifar100|ewc"] == pytest.approx(ewc + feat)
    assert b.units["bounds|cifar100|ranpac"] == pytest.approx(ranpac + feat)
    fig5 = b.stages[-1]
    assert fig5.name == "Fig. 5 (classic splits)" and fig5.seconds == pytest.approx(ewc + ranpac + feat)  # features once
    assert b.seconds == pytest.approx(11.0 + ewc + ranpac + feat)
    assert "100 classes in 10 tasks, 20 / 5 images a class at most, 5 orders" in b.text()


def test_classic_rows_cap_at_the_split_and_sample_truth_prices_its_orders():
    truth = _truth({"ewc": _line("ewc", gpu_s=195.0, row_step=3.0, row_forward=1.0, rate=(GPU_THROUGHPUT, "x"))})
    b = set_budget(truth, dataset="cifar100", num_classes=6, num_tasks=3, n_train=500, n_test=100,
                   bounds_datasets=["cub200"], bounds_learners=["ewc"], backbone="resnet8", mode="sample")
    assert CLASSIC_ROWS["cub200"] == (30, 29) and "30 / 29 images a class at most" in b.text()
    est = next(s for s in b.stages if s.name == "RS and EDGE estimates")
    assert est.seconds == pytest.approx(2 * (3 + 2 + 1) * 195.0 * 3 / 195)     # 12 orders x 3 tasks a node's cost


def test_fig4_counts_each_encoder_and_names_unknown_ones():
    truth = _truth({"ewc": _line("ewc")})
    b = set_budget(truth, dataset="cifar100", num_classes=6, num_tasks=3, encoder_sizes=["ViT-B-16", "nope-enc"])
    fig4 = b.stages[-1]
    assert fig4.seconds == pytest.approx(text_encoder_flops("ViT-B-16", 6) / GPU_THROUGHPUT)
    assert "not priced (no open_clip architecture of that name): nope-enc" in fig4.detail


def test_a_set_over_a_day_names_its_split_and_the_longest_case():
    truth = _truth({"l2p": _line("l2p", gpu_s=20 * 3600.0, row_step=1.0, row_forward=1.0, rate=(1.0, "card A")),
                    "ewc": _line("ewc", gpu_s=6 * 3600.0, row_step=1.0, row_forward=1.0, rate=(1.0, "card B"))})
    b = set_budget(truth, dataset="cifar100", num_classes=6, num_tasks=3)
    text, rec = b.text(), b.record()
    assert "More than a day on one GPU: split it" in text and SPLIT_GRID in text
    assert "the longest, truth|l2p, about 20 h 0 min" in text and "1 case(s) over 12 h (truth|l2p)" in text
    assert "Priced at card A; card B." in text
    assert rec["split"] == {"grid": SPLIT_GRID, "needed": True, "cases": 2, "longest_s": 72000.0}
    assert rec["set_gpu_seconds"] == pytest.approx(26 * 3600.0) and rec["trainings"] == 1
    small = set_budget(_truth({"ewc": _line("ewc", gpu_s=60.0, rate=(1.0, "c"))}), dataset="cifar100",
                       num_classes=6, num_tasks=3)
    assert "Under a day on one GPU" in small.text() and not small.record()["split"]["needed"]


def test_on_a_gpu_run_the_truth_uses_its_timed_steps_and_names_the_card():
    truth = _truth({"ewc": _line("ewc", gpu_s=5.0, timed_s=9.0, row_step=1.0, row_forward=1.0, rate=(1.0, "c"))},
                   device="cuda:0 (NVIDIA H100 80GB HBM3)")
    b = set_budget(truth, dataset="cifar100", num_classes=6, num_tasks=3)
    assert b.units["truth|ewc"] == 9.0 and "steps timed on cuda:0 (NVIDIA H100 80GB HBM3)" in b.text()


def test_a_frozen_model_is_counted_by_its_forward_and_ranpacs_adapter_by_its_epochs():
    """RanPAC's model has no parameter that needs a gradient (frozen extractor, closed-form head): its pass is
    a forward, 2 x in x out FLOPs a row for a linear layer; its adapter stage (tuned_epochs, about 3 forward
    passes each) adds first-task passes to Fig. 5's line."""
    import torch

    from clkit.edge.strategy_flops import _row_flops, first_task_extra

    lin = torch.nn.Linear(5, 3)
    lin.requires_grad_(False)
    assert _row_flops(SimpleNamespace(model=lin), torch.zeros(1, 4, 5)) == (30.0, 30.0)
    assert first_task_extra(SimpleNamespace(first_session_adaptation=True, tuned_epochs=20)) == 60.0
    base = {"ranpac": {**_line("ranpac", gpu_s=1.0, row_step=10.0, row_forward=10.0, epochs=(1, 1),
                                rate=(GPU_THROUGHPUT, GPU_ASSUMPTION)), "first_extra": 0.0}}
    adapted = {"ranpac": {**base["ranpac"], "first_extra": 60.0}}
    kw = {"dataset": "cifar100", "num_classes": 6, "num_tasks": 3, "n_train": 20, "n_test": 5,
          "bounds_datasets": ["cifar100"], "bounds_learners": ["ranpac"]}
    a, b = (set_budget(_truth(t), **kw).units["bounds|cifar100|ranpac"] for t in (base, adapted))
    assert b - a == pytest.approx(5 * 10 * 20 * 10.0 * 60.0 / GPU_THROUGHPUT)     # 5 orders x 10 classes x 20 rows


def test_a_learner_without_a_flop_count_is_priced_by_its_timed_steps():
    """A model the FLOP counter cannot trace (HiDe-Prompt's) is priced in Fig. 5 by its timed minibatch step:
    5 orders x (first task 3 epochs + 9 later tasks x 2 epochs) x ceil(10 classes x 20 rows / 16) steps."""
    line = {**_line("hide_prompt", timed_s=9.0, epochs=(3, 2)), "kind": "strategy", "step_s": 0.5, "batch_size": 16}
    b = set_budget(_truth({"hide_prompt": line}, device="cuda:0 (NVIDIA H100)"), dataset="cifar100", num_classes=6,
                   num_tasks=3, n_train=20, n_test=5, bounds_datasets=["cifar100"], bounds_learners=["hide_prompt"])
    assert b.units["bounds|cifar100|hide_prompt"] == pytest.approx(5 * (3 + 9 * 2) * 13 * 0.5)
    assert b.units["truth|hide_prompt"] == 9.0 and "steps timed on cuda:0 (NVIDIA H100)" in b.stages[-1].sources
