"""Every writing command checks its ``--out`` before any work (issue 55): an existing file, a path under a
file, or a read-only folder is one line and exit 2, with nothing written and no traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clkit.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "clkit" / "compare" / "example_runs"

# each writing command with arguments that would otherwise do real work (the shipped example runs)
COMMANDS = {
    "metrics cl": lambda tmp: ["metrics", "cl", str(_matrix(tmp))],
    "compare": lambda tmp: ["compare", str(EXAMPLES)],
    "edge orders": lambda tmp: ["edge", "orders", "cat,dog,car,bus", "--tasks", "2"],
    "edge analyse": lambda tmp: ["edge", "analyse", str(tmp / "orders.json"), str(tmp / "results.csv")],
    "export mlflow": lambda tmp: ["export", str(tmp), "--to", "mlflow"],
    "export tensorboard": lambda tmp: ["export", str(tmp), "--to", "tensorboard"],
}


def _matrix(tmp):
    p = tmp / "R.csv"
    p.write_text("0.9,0.1\n0.8,0.9\n")
    return p


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_out_an_existing_file_is_refused_before_any_work(name, tmp_path, capsys):
    target = tmp_path / "taken.txt"
    target.write_text("keep me")
    assert main([*COMMANDS[name](tmp_path), "--out", str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"[clkit] ERROR: --out {target} is a file, not a folder; give a folder (it is created "
                   "when missing); nothing was written"], err
    assert target.read_text() == "keep me"

    assert main([*COMMANDS[name](tmp_path), "--out", str(target / "sub")]) == 2
    assert f"cannot be created: {target} is a file, not a folder" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_read_only_folder_is_refused(name, tmp_path, capsys, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    real = os.access
    # as root a chmod does not stop writing; a read-only mount does (os.access says so): simulate it
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == ro else real(p, mode, **kw))
    assert main([*COMMANDS[name](tmp_path), "--out", str(ro)]) == 2
    assert f"--out {ro} is not writable (a read-only folder?)" in capsys.readouterr().err
    assert main([*COMMANDS[name](tmp_path), "--out", str(ro / "new")]) == 2
    assert f"--out {ro / 'new'} cannot be created: {ro} is not writable" in capsys.readouterr().err
    assert list(ro.iterdir()) == []


def test_uris_are_left_to_their_client_and_file_uris_are_checked(tmp_path, capsys):
    from clkit._outpath import check_out_folder

    check_out_folder("--out", "sqlite:///" + str(tmp_path / "taken.txt"))       # a store file: mlflow's business
    (tmp_path / "taken.txt").write_text("x")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        check_out_folder("--out", "file://" + str(tmp_path / "taken.txt"))


def test_export_interrupted_says_what_stays_and_how_to_resume(tmp_path, capsys, monkeypatch):
    import clkit.export

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(clkit.export, "export_runs", stop)
    assert main(["export", str(tmp_path), "--to", "tensorboard", "--out", str(tmp_path / "tb")]) == 130
    err = capsys.readouterr().err
    assert "export stopped; the runs already written to" in err and "rerunning the same command resumes" in err


@pytest.mark.parametrize("argv", [
    ["edge", "analyse", "orders.json", "results.csv", "--out", "{file}"],
    ["compare", "runs", "--out", "{file}"],
    ["drift", "stream", "{labels}", "--sigma", "inf"],
    ["drift", "stream", "{labels}", "--batch-size", "100000000"],
    ["drift", "stream", "graph.pt", "--sigma", "0"],
])
def test_refused_arguments_import_nothing_heavy(argv, tmp_path):
    """Fast refusals (issue 55: --sigma inf was refused after 15-17 s and 766 MB): a refused argument
    is told before torch, torch-geometric or pandas is imported (checked, not timed)."""
    import numpy as np

    (tmp_path / "taken.txt").write_text("x")
    np.save(tmp_path / "y.npy", np.arange(60) % 6)
    argv = [a.format(file=tmp_path / "taken.txt", labels=tmp_path / "y.npy") for a in argv]
    code = ("import sys; from clkit.cli import main; rc = main(sys.argv[1:]); "
            "print(rc, sorted(m for m in ('torch', 'torch_geometric', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=tmp_path,
                         timeout=120)
    assert out.stdout.split("\n")[-2] == "2 []", out.stdout + out.stderr
