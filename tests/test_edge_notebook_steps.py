"""Notebook 02 stays a tutorial (issue 50): at most 600 lines, its multi-call steps in
clkit.edge.notebook_steps, tested here outside the notebook."""

from pathlib import Path

import pytest

from clkit.edge import notebook_steps as steps
from clkit.run import notebook_parameters

ROOT = Path(__file__).resolve().parents[1]
#: notebooks held to the 600-line rule: every one of the six
SHORT_NOTEBOOKS = ["01_taskification", "02_edge", "03_temporal_metrics", "04_curriculum", "05_drift",
                   "06_your_runs"]


@pytest.mark.parametrize("name", SHORT_NOTEBOOKS)
def test_the_notebook_is_at_most_600_lines(name):
    n = len((ROOT / "notebooks" / f"{name}.py").read_text().splitlines())
    assert n <= 600, f"notebooks/{name}.py has {n} lines; move logic into the package (at most 600)"


def test_the_edge_modules_split_from_learners_stay_small():
    for name in ("learners", "learner_config", "batched", "notebook_steps"):
        n = len((ROOT / "clkit" / "edge" / f"{name}.py").read_text().splitlines())
        assert n < 600, f"clkit/edge/{name}.py has {n} lines"


def test_the_learners_split_keeps_every_import():
    from clkit.edge import batched, learner_config, learners

    for name in learners.__all__:
        assert hasattr(learners, name), name
    assert learners.LearnerConfig is learner_config.LearnerConfig and learners._Batched is batched._Batched
    assert learners.scheduled_train_task is learner_config.scheduled_train_task


def test_parameters_are_the_notebooks():
    assert set(steps.PARAMETERS) == set(notebook_parameters("02_edge"))


def _smoke_values(**over):
    from clkit.notebooks import load_params

    values = {k: v["default"] for k, v in notebook_parameters("02_edge").items()}
    values.update(load_params("02_edge", "smoke"))
    values.update(over)
    return values


def test_check_params_sets_the_run_up_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = steps.check_params(_smoke_values(device="cpu"))
    assert run.N == 6 and run.K == 3 and run.spec is None and run.grans is None
    assert run.own_learners == ["finetune", "ewc", "lwf", "icarl", "ncm"] and run.user_learners == []
    assert run.shuffle == "pycil" and run.bounds_by == run.own_learners
    assert run.record.params["protocol"] == "paper" and run.record.params["rs_shuffle"] == "pycil"
    assert str(run.device.device) == "cpu" and list(tmp_path.iterdir()) == []


def test_check_params_names_the_bad_parameter():
    with pytest.raises(ValueError, match="num_tasks must divide"):
        steps.check_params(_smoke_values(num_tasks=4, device="cpu"))
    with pytest.raises(ValueError, match="protocol must be one of"):
        steps.check_params(_smoke_values(protocol="text", device="cpu"))
    with pytest.raises(TypeError, match="rehearse"):
        steps.check_params(_smoke_values(rehearse="yes", device="cpu"))
    values = _smoke_values()
    del values["seeds"]
    with pytest.raises(TypeError, match=r"parameters \['seeds'\] are missing"):
        steps.check_params(values)


def test_the_authors_protocol_reaches_the_learners_settings():
    run = steps.check_params(_smoke_values(dataset="cifar100", learners=["ewc", "ranpac"], protocol="authors",
                                           vit_model="tiny", device="cpu", bounds_datasets=[]))
    kw = run.P["learner_kwargs"]
    assert kw["ewc"]["ewc_lambda"] == 1000.0 and kw["ranpac"]["first_session_adaptation"] is True
    assert run.shuffle == "edge_release" and run.user_learners == ["ewc", "ranpac"]


def test_check_params_checks_the_split():
    with pytest.raises(ValueError, match="edge_cases: 'truth|der' is not a unit of this set"):
        steps.check_params(_smoke_values(device="cpu", edge_cases=["truth|der"]))
    with pytest.raises(ValueError, match="a case trains units, a merge reads them; give one"):
        steps.check_params(_smoke_values(device="cpu", edge_cases=["truth|ewc"], cases_from="runs/x"))
    with pytest.raises(TypeError, match="cases_from must be a string"):
        steps.check_params(_smoke_values(device="cpu", cases_from=3))
    with pytest.raises(ValueError, match="cases_from: 'no/such/sweep' is not a folder"):
        steps.check_params(_smoke_values(device="cpu", cases_from="no/such/sweep"))
    run = steps.check_params(_smoke_values(device="cpu", edge_cases=["truth|ewc"]))
    assert not run.whole and run.split.selection.truth == ["ewc"] and "truth|ewc" in run.describe()


def test_a_case_trains_its_unit_as_the_whole_run_does_and_skips_the_analysis(tmp_path, monkeypatch):
    """The split's premise at the unit level: a learner's truth is the same trained alone (a case) or beside
    the others (a whole run), bitwise; the case records it at full precision and skips sections 4-9."""
    import numpy as np

    from clkit import edge
    from clkit.edge.learners import LearnerConfig

    monkeypatch.chdir(tmp_path)
    small = {"device": "cpu", "learners": ["finetune", "ncm"], "n_train": 12, "n_test": 10, "epochs": 1}
    whole = steps.check_params(_smoke_values(**small))
    case = steps.check_params(_smoke_values(**small, edge_cases=["truth|finetune"]))
    data, inputs = steps.load_data(whole)
    seqs = edge.enumerate_sequences(whole.N, whole.K)
    config = LearnerConfig(hidden=8, epochs=1, batch_size=16, lr=0.05)
    gt_case = steps.ground_truth(case, data, inputs, seqs, config)
    gt_whole = steps.ground_truth(whole, data, inputs, seqs, config)
    assert list(gt_case.values) == ["finetune"] and set(gt_whole.values) == {"finetune", "ncm"}
    np.testing.assert_array_equal(gt_case.values["finetune"], gt_whole.values["finetune"])
    rc, rw = case.record.results, whole.record.results
    assert rc["split_case"] == ["truth|finetune"] and len(rc["truth_case"]["positions"]) == 90
    assert rc["truth_case"]["values"]["finetune"] == gt_whole.values["finetune"].tolist()   # full precision
    assert "true_accuracy" not in rc and "split_case" not in rw and rw["num_enumerated"] == 90
    assert steps.classic_settings(case) == ({}, None, []) and steps.encoder_sizes(case, data["class_names"], gt_case) \
        is None and "classic" not in rc
    assert steps.classic_bounds(case, config) == {} and rc["bounds"] == {}


def test_a_case_prices_the_truth_it_trains(tmp_path, monkeypatch):
    from clkit import edge
    from clkit.edge.learners import LearnerConfig

    monkeypatch.chdir(tmp_path)
    small = {"device": "cpu", "learners": ["finetune", "ncm"], "n_train": 12, "n_test": 10, "epochs": 1}
    case = steps.check_params(_smoke_values(**small, edge_cases=["truth|ncm"]))
    data, inputs = steps.load_data(case)
    seqs, config = edge.enumerate_sequences(case.N, case.K), LearnerConfig(hidden=8, epochs=1, batch_size=16)
    work = steps.budget(case, data, inputs, seqs, config)
    assert work.units.keys() == {"truth|ncm"} and case.record.results["budget"]["stages"][0]["name"] == "ground truth"
    assert "The whole set on one GPU" in work.text()
