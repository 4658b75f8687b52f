"""``clkit run --out``: a file, a busy folder and an interrupted first run each get one clear line (issue 43)."""

import json

import pytest

from clkit import run as run_mod
from clkit.cli import main


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    from tiny_notebook import write_tiny_notebook

    write_tiny_notebook(tmp_path / "nb", {"plain": {"seed": 1}})
    monkeypatch.setenv("CLKIT_NOTEBOOKS", str(tmp_path / "nb"))
    return tmp_path


def test_out_naming_a_file_is_refused_before_running(tiny, capsys):
    f = tiny / "results.txt"
    f.write_text("keep me")
    assert main(["run", "00", "--params", "plain", "--out", str(f), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"--out {f} is a file, not a folder" in err and "Traceback" not in err
    assert f.read_text() == "keep me"


def test_a_file_where_the_runs_folder_goes_is_refused(tiny, capsys):
    (tiny / "runs").mkdir()
    (tiny / "runs" / "00_tiny").write_text("x")
    assert main(["run", "00", "--params", "plain", "--out", str(tiny / "runs"), "--no-progress"]) == 2
    assert "is a file where the run's folder goes" in capsys.readouterr().err


def test_a_second_run_into_a_busy_folder_is_refused_and_the_first_finishes(tiny, capsys):
    out = tiny / "runs"
    with run_mod.run_lock(out / "00_tiny"):
        # refused before any work, nothing written: bad input's exit status (docs/running.md)
        assert main(["run", "00", "--params", "plain", "--out", str(out), "--no-progress"]) == 2
        assert "another clkit run (process" in capsys.readouterr().err
        assert not (out / "00_tiny").exists()
    assert main(["run", "00", "--params", "plain", "--out", str(out), "--no-progress"]) == 0
    assert json.loads((out / "00_tiny" / "run.json").read_text())["status"] == "ok"
    assert sorted(p.name for p in out.iterdir()) == ["00_tiny"]          # no lock, no staging folder left


def test_a_stale_lock_is_taken_over(tiny):
    out = tiny / "runs"
    out.mkdir()
    (out / ".00_tiny.lock").write_text("999999999 2026-01-01 00:00:00\n")   # no such process
    assert main(["run", "00", "--params", "plain", "--out", str(out), "--no-progress"]) == 0


def test_an_interrupted_first_run_says_so_and_leaves_no_folder(tiny, capsys, monkeypatch):
    def interrupted(*a, **k):
        raise KeyboardInterrupt()

    monkeypatch.setattr(run_mod, "execute", interrupted)
    out = tiny / "fresh"
    assert main(["run", "00", "--params", "plain", "--out", str(out), "--no-progress"]) == 130
    assert "00_tiny did not finish; nothing was written" in capsys.readouterr().err
    assert not out.exists()


def test_summary_of_a_sweep_whose_cases_all_failed_says_so(tmp_path, capsys):
    """The sweep example of running.md once failed in all 8 cases, and ``--group-by`` printed pandas'
    "No objects to concatenate"; now one line says no case completed and shows the first failure."""
    import pandas as pd

    from clkit.sweep import group_table

    df = pd.DataFrame({"notebook": "04", "case": ["a", "b"], "index": [0, 1], "status": "failed",
                       "error": ["cell 4: ValueError: learner_kwargs names ewc", None], "seed": [0, 1]})
    with pytest.raises(ValueError, match=r"none of the 2 cases completed, so there is nothing to group by seed; "
                                         r"the first failure: cell 4: ValueError: learner_kwargs names ewc"):
        group_table(df, ["seed"])
