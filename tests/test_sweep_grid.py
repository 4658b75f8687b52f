"""Grid files, case keys and the case store of ``clkit sweep`` (no cluster needed)."""

import json

import pytest

from clkit import notebooks
from clkit.cli import main
from clkit.sweep import case_key, case_status, expand_grid, load_grid, notebook_hash, plan_sweep
from clkit.sweep.grid import grid_files
from clkit.sweep.store import case_dir, clean_work, publish_case, work_dir
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


def _fake_case(root, key, status):
    work = work_dir(root, key)
    work.mkdir(parents=True)
    (work / "results.json").write_text("{}")
    (work / "run.json").write_text(json.dumps({"key": key, "status": status, "error": None}))
    return work


def test_a_case_is_complete_only_once_published(tmp_path):
    key = "ab" * 32
    assert case_status(tmp_path, key)["status"] == "pending"
    work = _fake_case(tmp_path, key, "failed")
    assert case_status(tmp_path, key)["status"] == "pending"  # still in .work
    publish_case(work, tmp_path, key)
    assert case_status(tmp_path, key)["status"] == "failed"
    publish_case(_fake_case(tmp_path, key, "ok"), tmp_path, key)  # a retry replaces the failure
    assert case_status(tmp_path, key)["status"] == "ok"
    publish_case(_fake_case(tmp_path, key, "failed"), tmp_path, key)  # never replaces a complete case
    assert case_status(tmp_path, key)["status"] == "ok"
    (case_dir(tmp_path, key) / "run.json").write_text('{"key": "other", "status": "ok"}')
    assert case_status(tmp_path, key)["status"] == "pending"  # a folder of another key does not count
    _fake_case(tmp_path, key, "ok")
    assert clean_work(tmp_path) == 1 and not (tmp_path / ".work").exists()


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
            assert plan["params_set"] == "smoke" and len(plan["cases"]) >= 2, (nb, name)
