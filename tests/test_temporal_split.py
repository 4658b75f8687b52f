"""Notebook 03's split (issue 52): cases of (learner, seed) matrices, read back exactly by the merge; refusals."""

import json

import numpy as np
import pytest

from clkit.data.temporal import make_drifting_gaussians
from clkit.temporal import accuracy_matrix, period_tasks
from clkit.temporal import split as ts

KW = dict(epochs=1, hidden=[4], lr=0.01, batch_size=16, seed=0)
PARAMS = {"dataset": "synthetic", "seed": 0, "learners": ["erm", "finetune", "ewc"], "temporal_cases": [],
          "temporal_from": "", "device": "cpu"}


@pytest.fixture(scope="module")
def tasks():
    return period_tasks(make_drifting_gaussians(3, 24, seed=1))


def _write(root, name, case, params=PARAMS, notebook="03_temporal_metrics"):
    d = root / name
    d.mkdir(parents=True)
    (d / "results.json").write_text(json.dumps({"notebook": notebook, "params": params,
                                                "results": {"temporal_case": case}}))


def test_every_case_of_a_run_in_its_order():
    every = ts.all_cases(["erm", "finetune", "ewc"], ["finetune", "ewc"], 5, 3, verdicts=True)
    assert every == [("erm", 5), ("finetune", 5), ("ewc", 5), ("finetune", 6), ("finetune", 7), ("ewc", 6),
                     ("ewc", 7), ("finetune", 10005), ("finetune", 10006), ("finetune", 10007)]
    assert ts.parse_cases([], every) == every
    assert ts.parse_cases(["ewc|6", "ewc|6", "erm|5"], every) == [("ewc", 6), ("erm", 5)]
    with pytest.raises(ValueError, match=r"temporal_cases: 'si\|5' is not a case of this run; allowed: erm\|5"):
        ts.parse_cases(["si|5"], every)
    with pytest.raises(TypeError, match="temporal_cases must be a list of 'LEARNER|SEED' strings, got 'erm|5'"):
        ts.parse_cases("erm|5", every)


def test_cases_then_read_give_the_matrices_of_one_run_exactly(tasks, tmp_path):
    every = ts.all_cases(["erm", "finetune", "ewc"], ["finetune", "ewc"], 0, 2, verdicts=True)
    half = len(every) // 2
    for i, part in enumerate((every[:half], every[half:])):
        case = ts.run_cases(part, tasks, train_kw=KW, learner_settings={"ewc": {"ewc_lambda": 5.0}})
        assert case["cases"] == [ts.case_key(*c) for c in part]
        _write(tmp_path / "sweep", f"case{i}", json.loads(json.dumps(case)), params={**PARAMS, "device": f"cuda:{i}"})
    _write(tmp_path / "sweep", "other_notebook", {"cases": ["erm|0"], "A": {}}, notebook="05_drift")
    read = ts.read_cases(tmp_path / "sweep", PARAMS, every)
    assert list(read) == every
    for learner, s in every:
        kw = {**KW, "seed": s}
        A = accuracy_matrix(tasks, learner, backward=True,
                            strategy_kwargs={"ewc_lambda": 5.0} if learner == "ewc" else {}, **kw)
        np.testing.assert_array_equal(read[(learner, s)], A)   # bitwise: JSON keeps float64
    assert np.isnan(read[("erm", 0)]).sum() == 0                 # backward cells evaluated


def test_read_refuses_missing_doubled_and_differing_cases(tmp_path):
    every = [("erm", 0), ("finetune", 0)]
    A = ts.encode_matrix(np.array([[0.5, 0.25], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match="temporal_from: '.*nowhere' is not a folder of finished cases"):
        ts.read_cases(tmp_path / "nowhere", PARAMS, every)
    _write(tmp_path / "s", "a", {"cases": ["erm|0"], "A": {"erm|0": A}})
    _write(tmp_path / "s", "b", {"cases": ["finetune|0"], "A": {"finetune|0": A}}, params={**PARAMS, "seed": 3})
    with pytest.raises(ValueError, match=r"temporal_from: 1 case\(s\) missing under .*: finetune\|0 .*"
                                         r"runs with other parameters: b \(seed\)"):
        ts.read_cases(tmp_path / "s", PARAMS, every)
    _write(tmp_path / "s", "c", {"cases": ["erm|0", "finetune|0"], "A": {"erm|0": A, "finetune|0": A}})
    with pytest.raises(ValueError, match=r"temporal_from: case erm\|0 is in two runs"):
        ts.read_cases(tmp_path / "s", PARAMS, every)


def test_the_merge_is_declared_and_the_grid_covers_the_paper_run():
    import yaml

    from clkit.notebooks import notebooks_dir
    from clkit.sweep.merge import merge_declaration

    decl = merge_declaration("03_temporal_metrics")
    assert decl == {"case_parameter": "temporal_cases", "whole_value": [], "merge_parameter": "temporal_from"}
    root = notebooks_dir()
    grid = yaml.safe_load((root / "grids" / "03_temporal_metrics" / "paper_split.yaml").read_text())
    paper = yaml.safe_load((root / "params" / "03_temporal_metrics" / "paper.yaml").read_text())
    judged = [m for m in paper["learners"] if m != "erm"]
    every = ts.all_cases(paper["learners"], judged, paper["seed"], paper["verdict_seeds"], verdicts=True)
    assert grid["params"] == "paper" and sorted(sum(grid["grid"]["temporal_cases"], [])) == sorted(
        ts.case_key(*c) for c in every) and len(every) == 43
    from clkit.temporal.budget import published_shape

    shape = published_shape("fmow")
    hours = {m: ts.case_hours(m, shape, batch_size=paper["batch_size"], train_update_iter=paper["train_update_iter"])
             for m in paper["learners"]}
    assert max(hours.values()) <= 12 and hours["coral"] == max(hours.values())   # CORAL: 4x the images a step
    assert "at most 11.3 h" in (root / "params" / "03_temporal_metrics" / "paper.yaml").read_text()
    assert f"CORAL {hours['coral']:.1f} h" in grid["description"]
    assert "A case of the split grid" in ts.split_note("fmow", 224, ["erm|0"])
    assert ts.split_note("fmow", 224).startswith("Split: notebooks/grids/03_temporal_metrics/paper_split.yaml")
