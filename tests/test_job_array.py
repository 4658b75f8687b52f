"""Job-array sweeps: ``clkit sweep --print-cases`` plans, ``clkit run-case ROOT INDEX`` runs one case with no
Dask and no open ports, ``clkit summary`` tabulates (issue 42)."""

import json

import pytest

from clkit.cli import main
from clkit.sweep.store import case_dir


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    from tiny_notebook import write_tiny_notebook

    write_tiny_notebook(tmp_path / "nb", {"plain": {"seed": 1}})
    monkeypatch.setenv("CLKIT_NOTEBOOKS", str(tmp_path / "nb"))
    grid = tmp_path / "grid.yaml"
    grid.write_text("params: plain\ngrid:\n  seed: [3, 4, 5]\n")
    return tmp_path, grid


def test_print_cases_then_one_task_per_case(tiny, capsys):
    tmp, grid = tiny
    out = tmp / "sweep"
    assert main(["sweep", "00", "--grid", str(grid), "--out", str(out), "--print-cases"]) == 0
    captured = capsys.readouterr()
    lines = [ln.split("\t") for ln in captured.out.strip().splitlines()]
    assert [ln[0] for ln in lines] == ["0", "1", "2"] and {ln[2] for ln in lines} == {"pending"}
    assert [json.loads(ln[3]) for ln in lines] == [{"seed": 3}, {"seed": 4}, {"seed": 5}]
    assert [ln[4] for ln in lines] == ["seed=3", "seed=4", "seed=5"]     # the case folders
    assert "run-case" in captured.err and "--array=0-2" in captured.err
    root = out / "00_tiny"
    assert not [d for d in root.iterdir() if d.is_dir()]            # nothing ran
    for task in ("0", lines[1][1], "seed=5"):                       # an index, a key or a folder name
        assert main(["run-case", str(root), task]) == 0
    assert f"case 2 (seed=5): ok -> {root / 'seed=5'}" in capsys.readouterr().out
    assert sorted(d.name for d in root.iterdir() if d.is_dir()) == ["seed=3", "seed=4", "seed=5"]
    for i, ln in enumerate(lines):
        res = json.loads((case_dir(root, ln[4]) / "results.json").read_text())
        assert res["params"]["seed"] == 3 + i
        assert json.loads((root / ln[4] / "run.json").read_text())["key"] == ln[1]  # the full key
    assert main(["run-case", str(root), "0"]) == 0                 # complete: not rerun
    capsys.readouterr()
    assert main(["sweep", "00", "--grid", str(grid), "--out", str(out), "--print-cases"]) == 0
    assert {ln.split("\t")[2] for ln in capsys.readouterr().out.strip().splitlines()} == {"ok"}
    assert main(["summary", str(root)]) == 0
    summary = (root / "summary.csv").read_text().splitlines()
    assert [row.split(",")[1] for row in summary[1:]] == ["seed=3", "seed=4", "seed=5"]


def test_an_edited_notebook_reruns_into_the_same_folder(tiny, capsys):
    tmp, grid = tiny
    out = tmp / "sweep"
    root = out / "00_tiny"
    assert main(["sweep", "00", "--grid", str(grid), "--out", str(out), "--print-cases"]) == 0
    assert main(["run-case", str(root), "0"]) == 0
    old_key = json.loads((root / "seed=3" / "run.json").read_text())["key"]
    nb = tmp / "nb" / "00_tiny.ipynb"
    nb.write_text(nb.read_text().replace("A tiny notebook", "An edited notebook"))
    capsys.readouterr()
    assert main(["sweep", "00", "--grid", str(grid), "--out", str(out), "--print-cases"]) == 0
    lines = [ln.split("\t") for ln in capsys.readouterr().out.strip().splitlines()]
    assert lines[0][2] == "pending" and lines[0][1] != old_key and lines[0][4] == "seed=3"
    assert main(["run-case", str(root), "seed=3"]) == 0
    assert json.loads((root / "seed=3" / "run.json").read_text())["key"] == lines[0][1]
    assert sorted(d.name for d in root.iterdir() if d.is_dir()) == ["seed=3"]


def test_run_case_removes_leftovers_of_dead_workers_and_keeps_live_ones(tiny, capsys):
    import subprocess
    import sys

    from clkit.sweep.store import work_dir

    tmp, grid = tiny
    out = tmp / "sweep"
    root = out / "00_tiny"
    assert main(["sweep", "00", "--grid", str(grid), "--out", str(out), "--print-cases"]) == 0
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    dead, live = work_dir(root, proc.pid), work_dir(root)  # a killed worker's, and one of a running sweep
    for d in (dead, live):
        d.mkdir(parents=True)
        (d / "case.json").write_text("{}")
    capsys.readouterr()
    assert main(["run-case", str(root), "1"]) == 0
    err = capsys.readouterr().err
    assert not dead.exists() and live.exists()
    said = [ln for ln in err.splitlines() if ".work" in ln]
    assert len(said) == 1 and f"removed 1 leftover work folder(s) of processes gone from this host ({dead.name})" \
        in said[0] and "kept 1 of running processes" in said[0], err
    live.rmdir() if not any(live.iterdir()) else (live / "case.json").unlink() or live.rmdir()
    assert main(["run-case", str(root), "2"]) == 0
    assert not (root / ".work").exists()                                 # nothing left: the folder goes too
    assert ".work" not in capsys.readouterr().err


def test_run_case_refuses_what_it_cannot_run(tiny, capsys):
    tmp, grid = tiny
    out = tmp / "sweep"
    assert main(["run-case", str(out / "00_tiny"), "0"]) == 2
    assert "holds no sweep.json" in capsys.readouterr().err
    assert main(["sweep", "00", "--grid", str(grid), "--out", str(out), "--print-cases"]) == 0
    assert main(["run-case", str(out / "00_tiny"), "7"]) == 2
    assert "has cases 0..2" in capsys.readouterr().err
    nb = tmp / "nb" / "00_tiny.ipynb"
    nb.write_text(nb.read_text().replace("A tiny notebook", "An edited notebook"))
    assert main(["run-case", str(out / "00_tiny"), "0"]) == 2
    assert "changed since this sweep was prepared" in capsys.readouterr().err
