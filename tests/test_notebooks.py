"""Parameters of a run: dotted names into dict parameters (issue 26) in -p, sets and sweep grids.

The notebook is the tiny one of ``tiny_notebook.py`` (a dict parameter
``learner_kwargs``, default ``{"si": {"si_lambda": 1.0}}``); no real notebook is needed.
"""

import json

import pytest

from clkit.cli import main
from clkit.notebooks import load_params, lookup, merge_params, notebook_parameters
from clkit.sweep import plan_sweep, run_case
from clkit.sweep.store import case_dir, write_manifest
from tiny_notebook import STEM, notebooks_at, write_tiny_notebook

BASE = {"seed": 1, "learner_kwargs": {"ewc": {"ewc_lambda": 10, "gamma": 1.0}}}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("notebooks")
    write_tiny_notebook(folder, {"base": BASE, "plain": {"seed": 2}})
    with notebooks_at(folder):
        yield folder


def test_a_dotted_override_sets_one_key_merged_onto_the_base_sets_dict(tiny):
    p = load_params(STEM, "base", [("learner_kwargs.ewc.ewc_lambda", "100"), ("learner_kwargs.lwf.alpha", "0.5")])
    assert p == {"seed": 1, "learner_kwargs": {"ewc": {"ewc_lambda": 100, "gamma": 1.0}, "lwf": {"alpha": 0.5}}}
    assert load_params(STEM, "base") == BASE  # the set itself is untouched
    # a set without the dict: merged onto the notebook's default
    assert load_params(STEM, "plain", [("learner_kwargs.ewc.ewc_lambda", "100")]) == {
        "seed": 2, "learner_kwargs": {"si": {"si_lambda": 1.0}, "ewc": {"ewc_lambda": 100}}}
    # plain names first, then dotted ones: the whole dict, then one key inside it
    assert load_params(STEM, "plain", [("learner_kwargs.ewc.ewc_lambda", "7"), ("learner_kwargs", "{}")]) == {
        "seed": 2, "learner_kwargs": {"ewc": {"ewc_lambda": 7}}}
    # the last -p of a name wins
    assert load_params(STEM, "plain", [("seed", "3"), ("seed", "4")])["seed"] == 4


@pytest.mark.parametrize("name, exc, message", [
    ("seed.x", TypeError, "parameter seed.x of 00_tiny: seed is int, not a dict (a dotted name sets one key "
                          "inside a dict parameter)"),
    ("sed.x", ValueError, "00_tiny has no parameter 'sed' (in 'sed.x') (did you mean 'seed'?); parameters: "
                          "['learner_kwargs', 'seed', 'sleep']"),
    ("learner_kwargs.si.si_lambda.deep", TypeError,
     "parameter learner_kwargs.si.si_lambda.deep of 00_tiny: learner_kwargs.si.si_lambda is float 1.0, "
     "not a mapping"),
    ("learner_kwargs..x", ValueError, "parameter 'learner_kwargs..x' of 00_tiny: empty key in a dotted name"),
])
def test_the_parameter_check_names_the_dotted_parameter(tiny, name, exc, message):
    with pytest.raises(exc) as err:
        load_params(STEM, "plain", [(name, "1")])
    assert str(err.value).startswith(message)


def test_merge_and_lookup_leave_their_inputs_alone(tiny):
    declared = notebook_parameters(STEM)
    base = {"learner_kwargs": {"ewc": {"ewc_lambda": 1}}}
    out = merge_params(STEM, base, {"learner_kwargs.ewc.ewc_lambda": 2}, declared)
    assert base == {"learner_kwargs": {"ewc": {"ewc_lambda": 1}}}
    assert lookup(out, "learner_kwargs.ewc.ewc_lambda", declared) == 2
    assert lookup({}, "learner_kwargs.si.si_lambda", declared) == 1.0  # the notebook default
    assert lookup(out, "learner_kwargs.nope.x", declared) is None


def test_clkit_run_with_a_dotted_parameter_and_a_number_for_the_notebook(tiny, tmp_path, capsys):
    out = tmp_path / "runs"
    assert main(["run", "0", "--params", "plain", "--out", str(out), "--no-progress",
                 "-p", "learner_kwargs.ewc.ewc_lambda", "100", "-p", "seed", "3"]) == 0
    assert f"running {STEM} with params=plain" in capsys.readouterr().out
    rec = json.loads((out / STEM / "results.json").read_text())
    want = {"si": {"si_lambda": 1.0}, "ewc": {"ewc_lambda": 100}}
    assert rec["params"]["learner_kwargs"] == want and rec["results"] == {"ewc_lambda": 100, "y": 6}
    meta = json.loads((out / STEM / "run.json").read_text())
    assert meta["status"] == "ok" and meta["params"] == {"seed": 3, "learner_kwargs": want}
    assert (out / STEM / "figures" / "seed.txt").read_text() == "3"


def test_a_sweep_over_a_dotted_name_shows_it_as_its_own_column(tiny, tmp_path, capsys):
    plan = plan_sweep("00", {"learner_kwargs.ewc.ewc_lambda": [1, 10], "seed": [5]}, params="plain",
                      out=tmp_path)
    assert [c["values"] for c in plan["cases"]] == [{"learner_kwargs.ewc.ewc_lambda": 1, "seed": 5},
                                                    {"learner_kwargs.ewc.ewc_lambda": 10, "seed": 5}]
    assert [c["name"] for c in plan["cases"]] == ["learner_kwargs.ewc.ewc_lambda=1,seed=5",
                                                  "learner_kwargs.ewc.ewc_lambda=10,seed=5"]
    assert plan["cases"][1]["params"] == {"seed": 5, "learner_kwargs": {"si": {"si_lambda": 1.0},
                                                                        "ewc": {"ewc_lambda": 10}}}
    root = tmp_path / STEM
    root.mkdir()
    write_manifest(root, {k: v for k, v in plan.items() if k != "root"})
    for case in plan["cases"]:  # the Dask task itself, run here without a cluster
        spec = {**case, "root": str(root), "notebook": plan["notebook"], "notebook_path": plan["notebook_path"]}
        assert run_case(spec)["status"] == "ok"
        saved = json.loads((case_dir(root, case["name"]) / "results.json").read_text())
        assert saved["params"]["learner_kwargs"]["ewc"] == {"ewc_lambda": case["values"]["learner_kwargs.ewc.ewc_lambda"]}
    assert main(["summary", str(tmp_path), "--group-by", "learner_kwargs.ewc.ewc_lambda"]) == 0
    printed = capsys.readouterr().out
    assert "learner_kwargs.ewc.ewc_lambda" in printed
    header = (tmp_path / "summary.csv").read_text().splitlines()[0].split(",")
    assert header[:6] == ["notebook", "case", "index", "status", "learner_kwargs.ewc.ewc_lambda", "seed"]
    grouped = (tmp_path / "summary_by_learner_kwargs.ewc.ewc_lambda.csv").read_text().splitlines()
    assert grouped[0] == "learner_kwargs.ewc.ewc_lambda,n,ewc_lambda_mean,ewc_lambda_std,y_mean,y_std"
    assert grouped[1].startswith("1,1,1.0,,10.0") and grouped[2].startswith("10,1,10.0,,10.0")


def test_a_bad_dotted_grid_name_fails_before_anything_runs(tiny, tmp_path):
    with pytest.raises(ValueError, match=r"no parameter\(s\) \['nope.x'\]"):
        plan_sweep("00", {"nope.x": [1]}, params="plain", out=tmp_path)
    with pytest.raises(TypeError, match=r"grid, case 0 \{'seed.x': 1\}: parameter seed.x of 00_tiny: seed is int"):
        plan_sweep("00", {"seed.x": [1]}, params="plain", out=tmp_path)
