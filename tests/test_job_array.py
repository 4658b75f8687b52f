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
    assert "run-case" in captured.err and "--array=0-2" in captured.err
    root = out / "00_tiny"
    assert not [d for d in root.iterdir() if d.is_dir()]            # nothing ran
    for task in ("0", lines[1][1], "2"):                            # an index or a key
        assert main(["run-case", str(root), task]) == 0
    assert "case 2" in capsys.readouterr().out
    for i, ln in enumerate(lines):
        res = json.loads((case_dir(root, ln[1]) / "results.json").read_text())
        assert res["params"]["seed"] == 3 + i
    assert main(["run-case", str(root), "0"]) == 0                 # complete: not rerun
    capsys.readouterr()
    assert main(["sweep", "00", "--grid", str(grid), "--out", str(out), "--print-cases"]) == 0
    assert {ln.split("\t")[2] for ln in capsys.readouterr().out.strip().splitlines()} == {"ok"}
    assert main(["summary", str(root)]) == 0


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
