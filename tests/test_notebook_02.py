"""Notebook 02_edge executed with smoke parameters through papermill."""

import json

import numpy as np
import pytest

from clkit.run import run_notebook

pytestmark = pytest.mark.notebook

LEARNERS = ["finetune", "ewc", "lwf", "icarl", "ncm"]


def test_smoke_run_records_the_edge_experiment(run_smoke):
    res, out = run_smoke("02_edge")
    r = res["results"]
    assert "Fashion-MNIST" in r["data_source"] and r["encoder_used"].startswith("glove")
    # combinatorics and sample sizes
    assert r["num_sequences"]["6/3"] == "90" and r["num_sequences"]["9/3"] == "1680"
    assert 10**4 <= r["theorem1_L_100_10"] <= 3 * 10**4 and r["theorem2_L_100_10_R01"] < 200
    # hard / easy sequences: extremes of S(O), never worse than the paper's algorithm
    assert r["hard_score"] <= r["hard_paper_score"] and r["easy_score"] >= r["easy_paper_score"]
    assert r["hard_percentile"] < 5 and r["easy_percentile"] > 95
    # the ground truth: every sequence, every learner
    assert r["num_enumerated"] == 90
    for name in LEARNERS:
        acc = np.array(r["true_accuracy"][name])
        assert acc.shape == (90,) and 0 < acc.min() <= acc.max() <= 100
        for proto in ("RS", "EDGE", "EDGE-img"):
            row = r["protocols"][f"{name}/{proto}"]
            assert 0 <= row["jsd"] <= 1 and row["wasserstein"] >= 0
            assert acc.min() <= row["min"] <= row["max"] <= acc.max()
    # replay beats fine-tuning; NCM on frozen features beats fine-tuning
    mean = {n: np.mean(r["true_accuracy"][n]) for n in LEARNERS}
    assert mean["icarl"] > mean["finetune"] + 10 and mean["ncm"] > mean["finetune"]
    agree = r["similarity_agreement"]
    assert 0 <= agree["mae"] <= 2 and -1 <= agree["spearman"] <= 1 and 0 <= agree["csg"] <= 1
    assert set(r["ranking_error"]) == {"RS", "EDGE", "EDGE-img"}
    for ds in ("cifar100", "imagenet_r"):
        c = r["classic"][ds]
        assert c["hard_S"] < c["random_S_min"] and c["easy_S"] > c["random_S_max"]
        assert c["hard_S"] <= c["hard_paper_S"] and c["easy_S"] >= c["easy_paper_S"]
    for fig in ("similarity_heatmap", "distributions_rs_vs_edge", "similarity_vs_accuracy"):
        assert (out / "figures" / f"{fig}.png").stat().st_size > 1000
    assert json.loads((out / "run.json").read_text())["status"] == "ok"


@pytest.mark.parametrize("name,value,match", [("num_tasks", "4", "num_tasks"),
                                              ("learners", "[finetune, gdumb]", "learners")])
def test_bad_parameters_fail_in_the_validation_cell(tmp_path, name, value, match):
    with pytest.raises(RuntimeError, match=match):
        run_notebook("02_edge", "smoke", [(name, value)], out=tmp_path, progress=False)
