"""The clkit command: listing, parameter resolution, summaries."""

import json
from pathlib import Path

import pytest

from clkit import notebooks, run
from clkit.cli import main


def test_list_includes_notebook_and_param_sets(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "03_temporal_metrics" in out and "smoke" in out and "paper" in out


def test_resolve_by_prefix_and_unknown():
    assert notebooks.resolve_notebook("03") == "03_temporal_metrics"
    with pytest.raises(ValueError, match="notebook must be one of"):
        notebooks.resolve_notebook("99_nothing")


def test_parameters_are_read_from_the_tagged_cell():
    params = notebooks.notebook_parameters("03_temporal_metrics")
    assert params["delta"]["type"] == "float" and params["delta"]["help"]
    assert params["learners"]["type"] == "list"


def test_load_params_overrides_and_checks():
    p = notebooks.load_params("03_temporal_metrics", "smoke", [("n", "4")])
    assert p["n"] == 4
    with pytest.raises(ValueError, match="no parameter 'nope'"):
        notebooks.load_params("03_temporal_metrics", "smoke", [("nope", "1")])
    with pytest.raises(TypeError, match="delta"):
        notebooks.load_params("03_temporal_metrics", "smoke", [("delta", "[1]")])
    with pytest.raises(ValueError, match="params"):
        notebooks.load_params("03_temporal_metrics", "nonexistent.yaml")


def test_every_param_set_matches_declared_parameters():
    from clkit.citation import PAPERS

    for nb in notebooks.list_notebooks():
        sets = notebooks.param_sets(nb)
        # a paper notebook reproduces its paper with `paper`; 06 (your runs) has no paper to reproduce
        assert ({"smoke", "default", "paper"} if nb in PAPERS else {"smoke", "default"}) <= set(sets), nb
        for s in sets:
            notebooks.load_params(nb, s)  # raises on unknown names or wrong types


def test_summary_tabulates_results(tmp_path, capsys):
    for i, seed in enumerate((0, 1)):
        d = tmp_path / f"run{i}" / "03_temporal_metrics"
        d.mkdir(parents=True)
        (d / "results.json").write_text(json.dumps(
            {"notebook": "03_temporal_metrics", "params": {"seed": seed},
             "results": {"tas": 0.9 + i / 100, "learners": {"erm": {"id": 0.8}}}}))
        (d / "run.json").write_text(json.dumps({"params_set": "smoke", "status": "ok", "runtime_s": 1.0}))
    assert main(["summary", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "learners.erm.id" in out and "param.seed" in out
    csv = (tmp_path / "summary.csv").read_text().splitlines()
    assert len(csv) == 3
    assert main(["summary", str(tmp_path / "empty")]) == 2


def test_papermill_can_parse_every_parameters_cell():
    """papermill's own inspector rejects a parameter line whose comment contains '='."""
    import papermill as pm

    for nb in notebooks.list_notebooks():
        declared = pm.inspect_notebook(str(notebooks.notebooks_dir() / f"{nb}.ipynb"))
        assert set(declared) == set(notebooks.notebook_parameters(nb)), nb


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


def _tiny_notebook(path, fail=False):
    import nbformat

    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[
        v4.new_markdown_cell("# Title"),
        v4.new_code_cell("n = 1", metadata={"tags": ["parameters"]}),
        v4.new_markdown_cell("## 1. The `data`"),
        v4.new_code_cell("x = n + 1"),
        v4.new_markdown_cell("## 2. Results"),
        v4.new_code_cell("assert x == 3, 'x'" if fail else "print(x)"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, str(path))
    return path


def test_execute_reports_progress_and_cell_timings(tmp_path, monkeypatch):
    """Issue 15 item 7: one line per section off a terminal; timings.csv per run."""
    import io

    from clkit.run_progress import top_cells

    nb = _tiny_notebook(tmp_path / "tiny.ipynb")
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    res = run.execute(nb, tmp_path / "out", {"n": 2}, progress=True)
    assert res["status"] == "ok"
    lines = err.getvalue().splitlines()
    # code cells: parameters, injected parameters, two more = 4; sections entered: Title, 1., 2.
    assert [ln.split("|")[-1].strip() for ln in lines] == ["Title", "1. The data", "2. Results"]
    assert lines[0].startswith("[clkit] tiny  0/4 cells") and " 3/4 cells " in lines[-1]
    rows = run.read_timings(tmp_path / "out" / "timings.csv")
    assert [r["cell"] for r in rows] == [1, 2, 4, 6]
    assert rows[1]["first_line"] == "(injected parameters)" and rows[2]["section"] == "1. The data"
    assert all(r["duration_s"] >= 0 for r in rows)
    assert top_cells(rows, 1)[0]["duration_s"] == max(r["duration_s"] for r in rows)


def test_failed_run_keeps_timings_and_logs_no_kernel_noise(tmp_path, capfd):
    nb = _tiny_notebook(tmp_path / "tiny.ipynb", fail=True)
    res = run.execute(nb, tmp_path / "out", {}, progress=False)
    assert res["status"] == "failed" and res["ename"] == "AssertionError"
    assert (tmp_path / "out" / "tiny.failed.ipynb").exists()
    assert len(run.read_timings(tmp_path / "out" / "timings.csv")) == 3
    captured = capfd.readouterr()
    assert "KeyboardInterrupt" not in captured.err + captured.out
    assert "IPKernelApp" not in captured.err + captured.out


def test_saved_notebook_shows_finished_progress_as_text(tmp_path):
    """Issue 15 item 6: a closed clkit.progress bar leaves text, not a widget reference."""
    import nbformat

    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[
        v4.new_code_cell("from clkit.progress import tqdm, trange\nimport tqdm.notebook as tn\n"
                         "assert issubclass(tqdm, tn.tqdm_notebook)"),
        v4.new_code_cell("for i in tqdm(range(3), desc='kept'):\n    pass\n"
                         "for i in trange(2, desc='gone', leave=False):\n    pass\n"
                         "bar = tqdm(total=4, desc='manual')\nbar.update(2)\nbar.close()"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, str(tmp_path / "bars.ipynb"))
    assert run.execute(tmp_path / "bars.ipynb", tmp_path / "out", {})["status"] == "ok"
    outs = nbformat.read(str(tmp_path / "out" / "bars.ipynb"), as_version=4).cells[1].outputs
    assert all("application/vnd.jupyter.widget-view+json" not in o.get("data", {}) for o in outs)
    texts = [o["data"]["text/plain"] for o in outs if "data" in o]
    assert texts[0].startswith("kept: 100%|##########| 3/3")
    assert texts[1] == ""
    assert texts[2].startswith("manual:  50%|#####     | 2/4") and texts[2].endswith("(stopped)")


def _wait_for_running_cell(out, text: str, proc, timeout: float = 120.0) -> None:
    """Wait until the run's partial notebook says the cell containing ``text`` is executing."""
    import time

    import nbformat

    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        for partial in out.glob(".00_tiny.partial-*/.00_tiny.partial.ipynb"):
            try:
                nb = nbformat.read(str(partial), as_version=4)
            except Exception:  # noqa: BLE001 - being rewritten right now
                continue
            if any(text in c.source and c.metadata.get("papermill", {}).get("status") == "running" for c in nb.cells):
                return
        time.sleep(0.1)
    raise AssertionError(f"the cell with {text!r} never ran (exit status {proc.poll()})")


def test_ctrl_c_during_a_rerun_keeps_the_previous_result(tmp_path, monkeypatch, capsys):
    """Issue 28 item 2: a real SIGINT to the process group, as Ctrl-C in a terminal sends it."""
    import os
    import signal
    import subprocess
    import sys

    from tiny_notebook import write_tiny_notebook

    write_tiny_notebook(tmp_path / "nb", {"plain": {"seed": 1}})
    monkeypatch.setenv("CLKIT_NOTEBOOKS", str(tmp_path / "nb"))
    out, figs = tmp_path / "runs", tmp_path / "figs"
    args = ["run", "00", "--params", "plain", "--out", str(out), "--figures", str(figs), "--no-progress"]
    assert main(args) == 0
    before = {p: p.read_bytes() for p in [out / "00_tiny" / "results.json", out / "00_tiny" / "run.json",
                                         out / "00_tiny" / "00_tiny.ipynb", figs / "00_tiny" / "seed.txt"]}
    assert json.loads(before[out / "00_tiny" / "results.json"])["results"]["y"] == 2

    # SIG_DFL: a test run started in the background inherits SIGINT ignored
    proc = subprocess.Popen([str(Path(sys.executable).parent / "clkit"), *args, "-p", "seed", "2", "-p", "sleep", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait_for_running_cell(out, "time.sleep(sleep)", proc)
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout + stderr
    assert stderr.splitlines() == [f"[clkit] interrupted: 00_tiny did not finish; the previous result in "
                                   f"{out / '00_tiny'} is kept; rerun the same command to run it again"], stderr
    assert {p: p.read_bytes() for p in before} == before  # results.json, run.json, the notebook, the figure
    assert not list(out.glob(".*")) and not list(figs.glob(".*"))  # no staging folder left behind

    # A rerun whose cell fails has run to its end: it replaces the result and says why.
    assert main([*args, "-p", "sleep", "-1"]) == 1
    assert "ValueError: sleep length must be non-negative" in capsys.readouterr().err
    assert json.loads((out / "00_tiny" / "run.json").read_text())["status"] == "failed"
    assert sorted(p.name for p in (out / "00_tiny").iterdir()) == ["00_tiny.failed.ipynb", "run.json",
                                                                  "timings.csv"]


def test_sigterm_during_a_rerun_is_handled_like_ctrl_c(tmp_path, monkeypatch, capsys):
    """Issue 55: SIGTERM (what ``timeout``, ``kill`` and a Slurm time limit send, to the clkit process
    alone) stopped a run with no message and left its lock and ``.partial-*`` folders behind. Now:
    one line, exit 143, the previous result kept, nothing left behind; and a folder a SIGKILLed run
    left is removed by the next run."""
    import os
    import signal
    import subprocess
    import sys

    from tiny_notebook import write_tiny_notebook

    write_tiny_notebook(tmp_path / "nb", {"plain": {"seed": 1}})
    monkeypatch.setenv("CLKIT_NOTEBOOKS", str(tmp_path / "nb"))
    out, figs = tmp_path / "runs", tmp_path / "figs"
    args = ["run", "00", "--params", "plain", "--out", str(out), "--figures", str(figs), "--no-progress"]
    assert main(args) == 0
    before = (out / "00_tiny" / "results.json").read_bytes()

    proc = subprocess.Popen([str(Path(sys.executable).parent / "clkit"), *args, "-p", "seed", "2", "-p", "sleep", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_for_running_cell(out, "time.sleep(sleep)", proc)
        assert list(out.glob(".00_tiny.partial-*")) and (out / ".00_tiny.lock").exists()
        os.kill(proc.pid, signal.SIGTERM)              # the process only, as timeout(1) and kill(1) send it
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stdout + stderr
    assert stderr.splitlines() == [f"[clkit] terminated (SIGTERM): 00_tiny did not finish; the previous result in "
                                   f"{out / '00_tiny'} is kept; rerun the same command to run it again"], stderr
    assert (out / "00_tiny" / "results.json").read_bytes() == before
    assert not list(out.glob(".*")) and not list(figs.glob(".*"))   # no lock, no staging folder

    # a run killed outright (SIGKILL: no handler runs) leaves its staging folders; the next run removes them
    for d in (out, figs):
        (d / ".00_tiny.partial-0badf00d").mkdir()
        (d / ".00_tiny.partial-0badf00d" / "half.ipynb").write_text("{")
    capsys.readouterr()
    assert main(args) == 0
    err = capsys.readouterr().err
    assert err.count("left by an earlier run of 00_tiny that was killed") == 2, err
    assert not list(out.glob(".*")) and not list(figs.glob(".*"))


def test_a_kernel_that_does_not_start_is_started_once_more(tmp_path, monkeypatch):
    """Two kernels starting at once can be handed the same port (jupyter_client), and then one never
    answers: execute starts it once more instead of failing the run; a cell's error is not retried."""
    import papermill as pm

    from clkit.run import execute

    calls = []
    real = pm.execute_notebook

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("Kernel didn't respond in 60 seconds")
        return real(*args, **kwargs)

    monkeypatch.setattr(pm, "execute_notebook", flaky)
    nb = Path(__file__).with_name("tiny_notebook.py")
    import jupytext

    path = tmp_path / "00_tiny.ipynb"
    jupytext.write(jupytext.read(nb), path)
    out = execute(path, tmp_path / "out", {})
    assert len(calls) == 2 and out["status"] == "ok"
    calls.clear()
    monkeypatch.setattr(pm, "execute_notebook", lambda *a, **k: (calls.append(1), (_ for _ in ()).throw(
        RuntimeError("some other failure")))[0])
    with pytest.raises(RuntimeError, match="some other failure"):
        execute(path, tmp_path / "out2", {})
    assert len(calls) == 1


def test_relative_path_parameter_resolves_against_the_callers_folder(tmp_path, monkeypatch):
    """Issue 54: `clkit run 06 -p runs DIR` looked for a relative DIR in notebooks/ (papermill's working folder)."""
    from clkit.notebooks import load_params

    (tmp_path / "myruns").mkdir()
    monkeypatch.chdir(tmp_path)
    values = load_params("06_your_runs", "smoke", [("runs", "myruns")])
    assert values["runs"] == str(tmp_path / "myruns")
    assert load_params("06_your_runs", "smoke", [("runs", "sub/none.csv")])["runs"] == str(tmp_path / "sub" / "none.csv")
    assert load_params("06_your_runs", "smoke", [("runs", "example")])["runs"] == "example"  # a keyword stays
    assert load_params("06_your_runs", "smoke", [("compare", "[replay:naive]")])["compare"] == ["replay:naive"]
    assert load_params("05_drift", "smoke", [("data_dir", "myruns")])["data_dir"] == str(tmp_path / "myruns")
