"""Messages a new user meets (issue 28 item 4): each names the thing, says what is wrong, in one short line.

The Ctrl-C cases are in tests/test_run.py (``clkit run``) and tests/test_sweep_cluster.py
(``clkit sweep``).
"""

import json

import numpy as np
import pytest

from clkit.cli import main
from clkit.notebooks import param_sets, resolve_notebook


def _error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if "ERROR" in ln or "error:" in ln]


def _one_line(err: str, limit: int, path=None) -> str:
    """The one error line of ``err``: asserted one, no traceback, at most ``limit`` characters besides ``path``."""
    lines = _error_lines(err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert len(lines[0]) - len(str(path or "")) <= limit, (len(lines[0]), lines[0])
    return lines[0]


def test_summary_group_by_an_unknown_column_names_it_and_the_closest(tmp_path, capsys):
    """Was a 35,514-character line listing every column."""
    for i, sigma in enumerate((1.0, 3.0)):
        d = tmp_path / f"run{i}" / "05_drift"
        d.mkdir(parents=True)
        results = {f"stream.metric_{k:03d}": k / 7 for k in range(400)}
        (d / "results.json").write_text(json.dumps({"notebook": "05_drift", "params": {"sigma": sigma},
                                                    "results": results}))
    assert main(["summary", str(tmp_path), "--group-by", "sigm"]) == 2
    line = _one_line(capsys.readouterr().err, 500)
    assert line == ("[clkit] ERROR: group_by: no column 'sigm' in the table; closest: ['param.sigma']; other "
                    f"columns: {['run'] + [f'stream.metric_{k:03d}' for k in range(9)]} and 391 more (every column "
                    "is in summary.csv)")
    assert main(["summary", str(tmp_path), "--columns", "*metric_9999"]) == 2
    line = _one_line(capsys.readouterr().err, 500)
    assert "no result column matches ['*metric_9999']" in line and "more (every column is in summary.csv)" in line


def test_a_malformed_parameter_value_names_the_parameter_in_one_line(capsys):
    assert main(["run", "03", "--params", "smoke", "-p", "learners", "[finetune"]) == 2
    line = _one_line(capsys.readouterr().err, 260)
    assert line == ("[clkit] ERROR: -p learners: '[finetune' is not a valid YAML value: expected ',' or ']', but got "
                    "'<stream end>' at column 10 (a list is written \"[a, b]\", a mapping \"{key: value}\"; quote "
                    "text with special characters)")


def test_a_misspelt_parameter_gets_the_closest_name(capsys):
    assert main(["run", "03", "--params", "smoke", "-p", "lerners", "[naive]"]) == 2
    line = _one_line(capsys.readouterr().err, 800)
    assert "03_temporal_metrics has no parameter 'lerners' (did you mean 'learners'" in line and "parameters: [" in line


@pytest.mark.parametrize("name", ["2", "02", "02_edge", "notebooks/02_edge.py"])
def test_a_notebook_is_named_by_its_number_with_or_without_the_zero(name):
    assert resolve_notebook(name) == "02_edge"


def test_run_accepts_the_number_and_a_missing_params_file_says_it_is_missing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "2", "--params", "missing.yaml", "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""   # bad input: one error line, nothing "running"
    line = _one_line(captured.err, 200, tmp_path)
    assert line == (f"[clkit] ERROR: params: the file missing.yaml does not exist (looked for "
                    f"{tmp_path / 'missing.yaml'}); 02_edge's sets: {', '.join(param_sets('02_edge'))}")
    assert {"default", "paper", "smoke"} <= set(param_sets("02_edge"))
    assert main(["run", "3", "--params", "nope", "--out", str(tmp_path)]) == 2
    line = _one_line(capsys.readouterr().err, 200)
    assert line == ("[clkit] ERROR: params: 03_temporal_metrics has no parameter set 'nope'; the shipped sets are "
                    f"{param_sets('03_temporal_metrics')} (or give a YAML file)")
    assert {"default", "paper", "paper_32px", "paper_yearbook", "smoke"} <= set(param_sets("03_temporal_metrics"))
    assert main(["run", "9", "--out", str(tmp_path)]) == 2
    assert "notebook must be one of ['01_taskification'" in _one_line(capsys.readouterr().err, 300)
    assert not list(tmp_path.iterdir())  # nothing ran


def test_a_garbage_npy_is_not_a_numpy_file_and_gets_no_pickle_advice(tmp_path, capsys):
    bad = tmp_path / "labels.npy"
    bad.write_bytes(bytes(range(256)) * 4)
    assert main(["drift", "stream", str(bad)]) == 2
    line = _one_line(capsys.readouterr().err, 160, bad)
    assert line == (f"clkit drift: error: labels: '{bad}' is not a NumPy array file (.npy, as numpy.save writes): "
                    "it does not start with NumPy's header")
    pickled = tmp_path / "objects.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert main(["drift", "stream", str(pickled)]) == 2
    line = _one_line(capsys.readouterr().err, 160, pickled)
    assert "is not a readable NumPy array file: it holds Python objects, not numbers" in line
    assert "allow_pickle" not in line
    assert main(["metrics", "cl", str(bad)]) == 2  # where a matrix is read (CSV)
    line = _one_line(capsys.readouterr().err, 160, bad)
    assert line == (f"clkit metrics: error: R matrix: '{bad}' is not a text CSV file (binary content); write the "
                    "matrix as CSV, one row per line")


@pytest.mark.notebook
def test_a_value_the_validation_cell_refuses_is_bad_input_and_keeps_the_previous_result(tmp_path, capsys):
    """Exit 2 (bad input, as for a refused value before the run), one line, nothing written: the
    previous result stays as it was (a run failing after its validation cell exits 1: tests/test_run.py)."""
    prev = tmp_path / "03_temporal_metrics"
    prev.mkdir()
    (prev / "run.json").write_text('{"status": "ok"}')
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert main(["run", "03", "--params", "smoke", "-p", "delta", "-0.5", "--out", str(tmp_path),
                 "--no-progress"]) == 2
    line = _one_line(capsys.readouterr().err, 400)
    assert "03_temporal_metrics failed in cell" in line and "delta" in line and line.endswith("nothing was written")
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert (prev / "run.json").read_text() == '{"status": "ok"}'
