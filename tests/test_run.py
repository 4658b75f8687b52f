"""The clkit command: listing, parameter resolution, summaries."""

import json
from pathlib import Path

import pytest

from clkit import run


def test_list_includes_notebook_and_param_sets(capsys):
    assert run.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "03_temporal_metrics" in out and "smoke" in out and "paper" in out


def test_resolve_by_prefix_and_unknown():
    assert run.resolve_notebook("03") == "03_temporal_metrics"
    with pytest.raises(ValueError, match="notebook must be one of"):
        run.resolve_notebook("99_nothing")


def test_parameters_are_read_from_the_tagged_cell():
    params = run.notebook_parameters("03_temporal_metrics")
    assert params["delta"]["type"] == "float" and params["delta"]["help"]
    assert params["learners"]["type"] == "list"


def test_load_params_overrides_and_checks():
    p = run.load_params("03_temporal_metrics", "smoke", [("n", "4")])
    assert p["n"] == 4
    with pytest.raises(ValueError, match="no parameter 'nope'"):
        run.load_params("03_temporal_metrics", "smoke", [("nope", "1")])
    with pytest.raises(TypeError, match="delta"):
        run.load_params("03_temporal_metrics", "smoke", [("delta", "[1]")])
    with pytest.raises(ValueError, match="params"):
        run.load_params("03_temporal_metrics", "nonexistent.yaml")


def test_every_param_set_matches_declared_parameters():
    for nb in run.list_notebooks():
        sets = run.param_sets(nb)
        assert {"smoke", "default", "paper"} <= set(sets), nb
        for s in sets:
            run.load_params(nb, s)  # raises on unknown names or wrong types


def test_summary_tabulates_results(tmp_path, capsys):
    for i, seed in enumerate((0, 1)):
        d = tmp_path / f"run{i}" / "03_temporal_metrics"
        d.mkdir(parents=True)
        (d / "results.json").write_text(json.dumps(
            {"notebook": "03_temporal_metrics", "params": {"seed": seed},
             "results": {"tas": 0.9 + i / 100, "learners": {"erm": {"id": 0.8}}}}))
        (d / "run.json").write_text(json.dumps({"params_set": "smoke", "status": "ok", "runtime_s": 1.0}))
    assert run.main(["summary", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "learners.erm.id" in out and "param.seed" in out
    csv = (tmp_path / "summary.csv").read_text().splitlines()
    assert len(csv) == 3
    assert run.main(["summary", str(tmp_path / "empty")]) == 1


def test_papermill_can_parse_every_parameters_cell():
    """papermill's own inspector rejects a parameter line whose comment contains '='."""
    import papermill as pm

    for nb in run.list_notebooks():
        declared = pm.inspect_notebook(str(run.notebooks_dir() / f"{nb}.ipynb"))
        assert set(declared) == set(run.notebook_parameters(nb)), nb


def test_interactive_outputs_go_to_the_working_directory(tmp_path, monkeypatch):
    """Issue 15 item 1: never inside the installed package; notebooks/ maps to its parent."""
    from clkit import results
    from clkit.plot import save_figure

    monkeypatch.delenv("CLKIT_OUT_DIR", raising=False)
    monkeypatch.delenv("CLKIT_FIGURES_DIR", raising=False)
    (tmp_path / "notebooks").mkdir()
    for cwd in (tmp_path, tmp_path / "notebooks"):
        monkeypatch.chdir(cwd)
        assert results.results_dir("03_x") == tmp_path / "runs" / "interactive" / "03_x"
        assert results.figures_dir("03_x") == tmp_path / "figures" / "03_x"
    rec = results.RunRecord("03_x")
    rec.log(a=1)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure()
    path = save_figure(fig, "f", notebook="03_x")
    plt.close(fig)
    saved = rec.save()
    pkg = Path(results.__file__).resolve().parent
    for p in (saved, path):
        assert p.resolve().is_relative_to(tmp_path) and not p.resolve().is_relative_to(pkg)
    monkeypatch.setenv("CLKIT_OUT_DIR", str(tmp_path / "o"))
    monkeypatch.setenv("CLKIT_FIGURES_DIR", str(tmp_path / "f"))
    assert results.results_dir("03_x") == tmp_path / "o"
    assert results.figures_dir("03_x") == tmp_path / "f"
