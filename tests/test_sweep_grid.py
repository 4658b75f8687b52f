"""Grid files, case keys and the case store of ``clkit sweep`` (no cluster needed)."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
import sys
import time

import pytest

from clkit import notebooks
from clkit.cli import main
from clkit.sweep import case_key, case_status, expand_grid, load_grid, notebook_hash, plan_sweep
from clkit.sweep.grid import grid_files
from clkit.sweep.store import (MAX_NAME, case_dir, case_name, case_names, clean_line, clean_work, publish_case,
                               work_dir)
from clkit.sweep.table import group_table


def test_cartesian_product_then_explicit_cases_without_duplicates():
    g = load_grid({"grid": {"a": [1, 2, 3], "b": ["x", "y"]}, "cases": [{"a": 7}, {"a": 1, "b": "x"}]})
    cases = expand_grid(g)
    assert len(cases) == 3 * 2 + 1  # the explicit {"a": 1, "b": "x"} is already in the product
    assert cases[:2] == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}]  # last name varies fastest
    assert cases[-1] == {"a": 7}
    assert g.names == ["a", "b"]


def test_short_form_and_list_valued_parameters():
    g = load_grid({"seeds": [[1], [2]], "sigma": [1.0]})
    assert expand_grid(g) == [{"seeds": [1], "sigma": 1.0}, {"seeds": [2], "sigma": 1.0}]


@pytest.mark.parametrize("content, match", [
    ("- 1\n- 2\n", "must be a mapping of parameter names to lists"),
    ("sigma: 0.5\n", "parameter 'sigma' must map to a list of values, got float 0.5"),
    ("grid:\n  sigma: []\n", "the grid is empty"),
    ("grid: {}\n", "the grid is empty"),
    ("", "must be a mapping"),
    ("grid:\n  a: [1]\nseed: [0]\n", r"unknown top-level key\(s\) \['seed'\]"),
    ("grid:\n  a: [1]\ncases: [3]\n", "'cases' must be a list of mappings"),
    ("grid: [1, 2]\n", "'grid' must be a mapping"),
    ("grid: {a: [1]}\nparams: 3\n", "'params' must name a parameter set"),
    ("a: [1\n", "not valid YAML"),
])
def test_bad_grid_files_name_the_problem(tmp_path, content, match):
    path = tmp_path / "g.yaml"
    path.write_text(content)
    with pytest.raises(ValueError, match=match):
        load_grid(path)


def test_missing_grid_file_names_both_places(tmp_path):
    with pytest.raises(ValueError, match=r"grid must be a YAML file or one of .*looked for"):
        plan_sweep("03", str(tmp_path / "nope.yaml"), out=tmp_path)


def test_unknown_parameter_and_wrong_type_fail_before_anything_runs(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"03_temporal_metrics has no parameter\(s\) \['sigmaa'\]"):
        plan_sweep("03", {"sigmaa": [1.0]}, params="smoke", out=out)
    with pytest.raises(TypeError, match=r"case 1 \{'delta': '0.5'\}: parameter delta .* must be float"):
        plan_sweep("03", {"delta": [0.9, "0.5"]}, params="smoke", out=out)
    assert not out.exists()


def test_cli_reports_bad_grid_with_exit_code_2(tmp_path, capsys):
    grid = tmp_path / "g.yaml"
    grid.write_text("grid:\n  nope: [1, 2]\n")
    assert main(["sweep", "03", "--grid", str(grid), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "no parameter(s) ['nope']" in err and str(grid) in err


def test_cli_rejects_zero_workers(tmp_path, capsys):
    grid = tmp_path / "g.yaml"
    grid.write_text("grid:\n  seed: [0]\n")
    assert main(["sweep", "03", "--grid", str(grid), "--params", "smoke", "--workers", "0",
                 "--out", str(tmp_path / "o")]) == 2
    assert "workers" in capsys.readouterr().err


def test_case_keys_are_stable_and_change_with_what_matters(tmp_path):
    a = plan_sweep("03", {"seed": [0, 1]}, params="smoke", out=tmp_path)
    b = plan_sweep("03", {"seed": [0, 1]}, params="smoke", out=tmp_path / "elsewhere")
    assert [c["key"] for c in a["cases"]] == [c["key"] for c in b["cases"]]  # not tied to the folder
    assert len({c["key"] for c in a["cases"]}) == 2
    c = plan_sweep("03", {"seed": [0, 1]}, params="default", out=tmp_path)  # other base values
    assert not {x["key"] for x in a["cases"]} & {x["key"] for x in c["cases"]}
    params = a["cases"][0]["params"]
    assert case_key("n", "h1", params, "0.1") != case_key("n", "h2", params, "0.1")  # notebook edited
    assert case_key("n", "h1", params, "0.1") != case_key("n", "h1", params, "0.2")  # clkit upgraded
    assert a["cases"][1]["values"] == {"seed": 1} and a["cases"][1]["params"]["n"] == 2  # smoke base


def test_notebook_hash_ignores_outputs_but_not_code(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, str(path))
    h = notebook_hash(path)
    nb.cells[0].execution_count = 3
    nb.metadata["anything"] = 1
    nbformat.write(nb, str(path))
    assert notebook_hash(path) == h
    nb.cells[0].source = "x = 2"
    nbformat.write(nb, str(path))
    assert notebook_hash(path) != h


def _fake_case(root, key, status, pid=None):
    work = work_dir(root, pid)
    work.mkdir(parents=True)
    (work / "results.json").write_text("{}")
    (work / "run.json").write_text(json.dumps({"key": key, "status": status, "error": None}))
    return work


def test_a_case_is_complete_only_once_published(tmp_path):
    key, name = "ab" * 32, "seed=1"
    assert case_status(tmp_path, key, name)["status"] == "pending"
    work = _fake_case(tmp_path, key, "failed")
    assert case_status(tmp_path, key, name)["status"] == "pending"  # still in .work
    publish_case(work, tmp_path, key, name)
    assert case_status(tmp_path, key, name)["status"] == "failed"
    assert case_dir(tmp_path, name) == tmp_path / "seed=1"
    publish_case(_fake_case(tmp_path, key, "ok"), tmp_path, key, name)  # a retry replaces the failure
    assert case_status(tmp_path, key, name)["status"] == "ok"
    publish_case(_fake_case(tmp_path, key, "failed"), tmp_path, key, name)  # never replaces a complete case
    assert case_status(tmp_path, key, name)["status"] == "ok"
    other = "cd" * 32  # the notebook changed: same folder, new key
    assert case_status(tmp_path, other, name)["status"] == "pending"
    publish_case(_fake_case(tmp_path, other, "ok"), tmp_path, other, name)  # replaces the old key's result
    assert case_status(tmp_path, other, name)["status"] == "ok"
    assert case_status(tmp_path, key, name)["status"] == "pending"
    assert [p.name for p in tmp_path.iterdir() if p.name != ".work"] == ["seed=1"]
    assert not list((tmp_path / ".work").iterdir())  # the replaced result was deleted, not left aside
    (case_dir(tmp_path, name) / "run.json").write_text('{"key": "other", "status": "ok"}')
    assert case_status(tmp_path, other, name)["status"] == "pending"  # a folder of another key does not count


# -- readable case folder names ---------------------------------------------------------------------

SAFE = re.compile(r"[A-Za-z0-9._=,+-]+")


@pytest.mark.parametrize("case, name", [
    ({"seed": 1, "lr": 0.01}, "lr=0.01,seed=1"),                              # sorted by name
    ({"learner": "ewc", "seed": 3}, "learner=ewc,seed=3"),
    ({}, "base"),
    ({"learner_kwargs.ewc.ewc_lambda": 100}, "learner_kwargs.ewc.ewc_lambda=100"),
    ({"seeds": [1, 2, 3]}, "seeds=1+2+3"),
    ({"seeds": [7]}, "seeds=7"),
    ({"learner_kwargs": {"si": {"si_lambda": 1.0}, "ewc": {"ewc_lambda": 100}}},
     "learner_kwargs=ewc.ewc_lambda=100+si.si_lambda=1.0"),
    ({"x": -1, "y": 1e-05, "z": 1e20}, "x=-1,y=1e-05,z=1e20"),
    ({"flag": True, "none": None, "s": ""}, "flag=true,none=null,s="),
    ({"x": 1, "y": 1.0}, "x=1,y=1.0"),
])
def test_case_name_hand_written_examples(case, name):
    assert case_name(case) == name


def test_case_name_marks_what_it_cannot_write_exactly_with_a_digest():
    name = case_name({"device": "cuda:0"})
    assert re.fullmatch(r"device=cuda_0-[0-9a-f]{8}", name), name
    assert re.fullmatch(r"x=1-[0-9a-f]{8}", case_name({"x": "1"}))   # the string "1" is not the number 1
    assert case_name({"x": "1"}) != case_name({"x": 1}) == "x=1"
    assert re.fullmatch(r"x=true-[0-9a-f]{8}", case_name({"x": "true"}))


def test_case_names_differ_for_near_collisions():
    cases = [{"a": 1, "b": 2}, {"a": "1,b=2"}, {"a": "1", "b": 2}, {"a": 1, "b": "2"}, {"a": [1, 2]},
             {"a": "1+2"}, {"a": [1]}, {"a": 1}, {"a": [[1, 2]]}, {"a": ["1_2"]}, {"a": "x y"}, {"a": "x_y"},
             {"a": "x/y"}, {"a": {"b": 1}}, {"a": "b=1"}, {"a.b": 1}, {}, {"a": []}, {"a": ""}, {"a": [""]}]
    names = case_names(cases)
    assert len(set(names)) == len(cases), names
    assert names[0] == "a=1,b=2" and names[7] != "a=1"  # {"a": [1]} and {"a": 1} would both be a=1
    assert names[11] == "a=x_y" and names[16] == "base" and names[15] == "a.b=1"
    assert all(SAFE.fullmatch(n) and len(n) <= MAX_NAME for n in names[:16]), names
    assert case_names(cases) == names                                    # deterministic


def test_case_names_are_filesystem_safe_and_unique_over_a_grid(tmp_path):
    grid = load_grid({"grid": {"learner": ["ewc", "si", "a b", "a/b", "ä"], "lr": [0.1, 1e-3, 10.0],
                               "seeds": [[1], [1, 2], []]},
                      "cases": [{"path": "../../etc"}, {"path": ".."}, {"x": "\\"}, {"x": "-"}]})
    cases = expand_grid(grid)
    names = case_names(cases)
    assert len(set(names)) == len(cases)
    for n in names:
        assert SAFE.fullmatch(n) and len(n) <= MAX_NAME and not n.startswith("."), n
        (tmp_path / n).mkdir()                                            # a real folder, one level deep
    assert len(list(tmp_path.iterdir())) == len(cases)


def test_case_name_is_stable_across_dict_order():
    a = {"seed": 1, "learner_kwargs": {"ewc": {"ewc_lambda": 1, "gamma": 2}, "si": {"c": 0.1}}, "lr": 0.1}
    b = {"lr": 0.1, "learner_kwargs": {"si": {"c": 0.1}, "ewc": {"gamma": 2, "ewc_lambda": 1}}, "seed": 1}
    assert case_name(a) == case_name(b) == "learner_kwargs=ewc.ewc_lambda=1+ewc.gamma=2+si.c=0.1,lr=0.1,seed=1"
    assert case_name({"device": "cuda:0", "s": 1}) == case_name({"s": 1, "device": "cuda:0"})


def test_long_names_keep_a_readable_prefix_and_a_digest():
    a = {f"param_{i}": 1000 + i for i in range(10)}
    b = {**a, "param_9": 2000}  # differs only after the cut
    na, nb = case_name(a), case_name(b)
    assert len(na) == MAX_NAME and na != nb
    assert na.startswith("param_0=1000,param_1=1001,") and re.fullmatch(r".*[^,=+]-[0-9a-f]{8}", na)
    assert na[:-9] == nb[:-9]                      # the same readable prefix, told apart by the digest
    assert case_name({"x": "y" * (MAX_NAME - 2)}) == "x=" + "y" * (MAX_NAME - 2)  # exactly 80: kept whole
    assert len(case_name({"x": "y" * (MAX_NAME - 1)})) == MAX_NAME


def test_case_name_rejects_what_is_not_a_case():
    with pytest.raises(ValueError, match=r"case must be a mapping of parameter names to values, got list \[1\]"):
        case_name([1])


# -- leftover work folders ---------------------------------------------------------------------------

def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_clean_work_removes_dead_owners_and_keeps_live_and_foreign_ones(tmp_path):
    dead = _fake_case(tmp_path, "ab" * 32, "ok", pid=_dead_pid())
    live = _fake_case(tmp_path, "ab" * 32, "ok", pid=os.getpid())
    foreign = tmp_path / ".work" / "elsewhere-node7_123_0a1b2c3d"
    foreign.mkdir()
    legacy = tmp_path / ".work" / "0123456789ab.deadbeef"  # an older clkit's work folder: unknown owner
    legacy.mkdir()
    old = time.time() - 7 * 3600
    os.utime(legacy, (old, old))
    cleaned = clean_work(tmp_path)
    assert cleaned == {"removed": [dead.name], "running": 1, "left": [legacy.name]}
    assert not dead.exists() and live.exists() and foreign.exists() and legacy.exists()
    line = clean_line(cleaned, tmp_path)
    assert "\n" not in line and f"removed 1 leftover work folder(s) of processes gone from this host ({dead.name})" \
        in line and "kept 1 of running processes" in line and "left 1 older than 6 h" in line
    assert clean_line(clean_work(tmp_path, stale_h=24), tmp_path) is None  # nothing removed, nothing old
    for d in (live, foreign, legacy):
        shutil.rmtree(d)
    assert clean_work(tmp_path) == {"removed": [], "running": 0, "left": []}
    assert not (tmp_path / ".work").exists()
    with pytest.raises(ValueError, match=r"stale_h must be >= 0 hours, got -1"):
        clean_work(tmp_path, stale_h=-1)


def test_group_table_mean_and_sample_std_over_seeds():
    import pandas as pd

    df = pd.DataFrame({"notebook": "nb", "case": list("abcde"), "index": range(5),
                       "status": ["ok", "ok", "ok", "ok", "failed"], "sigma": [1, 1, 1, 3, 3],
                       "seed": [1, 2, 3, 1, 2], "acc": [0.2, 0.4, 0.9, 0.5, None],
                       "runtime_s": 1.0, "error": None})
    df.attrs["grid_params"] = ["sigma", "seed"]
    g = group_table(df, ["sigma"]).set_index("sigma")
    assert list(g.columns) == ["n", "acc_mean", "acc_std"]  # the seed is a parameter, never averaged
    assert g.loc[1, "n"] == 3 and g.loc[3, "n"] == 1  # the failed case is left out
    assert g.loc[1, "acc_mean"] == pytest.approx(0.5)
    assert g.loc[1, "acc_std"] == pytest.approx(((0.09 + 0.01 + 0.16) / 2) ** 0.5)
    with pytest.raises(ValueError, match=r"group_by: no column 'sigmaa' in the table; closest: \['sigma'\]; "
                                         r"other columns: \['seed', 'acc'\] \(every column is in summary.csv\)"):
        group_table(df, ["sigmaa"])


def test_every_shipped_grid_is_valid_for_its_notebook(tmp_path):
    shipped = {nb: grid_files(nb) for nb in notebooks.list_notebooks()}
    assert all(shipped.values()), f"a notebook without an example grid: {shipped}"
    for nb, names in shipped.items():
        for name in names:
            plan = plan_sweep(nb, name, out=tmp_path)  # raises on unknown names or wrong types
            # example grids sweep the smoke set; a paper set's split (paper_*.yaml) cuts a paper set
            want = ("paper",) if Path(name).stem.startswith("paper") else ("smoke",)
            assert plan["params_set"].startswith(want) and len(plan["cases"]) >= 2, (nb, name, plan["params_set"])
