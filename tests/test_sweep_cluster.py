"""``clkit sweep`` for real: a local Dask cluster, a ``dask scheduler``/``dask worker``
deployment, interruption and resumption, failing cases and ``--retry-failed``.

The notebook is a tiny one written by the test (y = x^2 + seed), so the cases
take about a second each; the machinery is the same as for the paper notebooks.
"""

import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from clkit.cli import main
from clkit.sweep import sweep_table
from tiny_notebook import notebooks_at

pytestmark = pytest.mark.sweep

BIN = Path(sys.executable).parent
CASE_DIR = re.compile(r"[A-Za-z0-9._=,+-]+")  # a readable case folder (clkit.sweep.store.case_name)


def _write_tiny_notebook(folder: Path) -> None:
    v4 = nbformat.v4
    params = ("x: int = 1  # a number\n"
              "seed: int = 0  # a seed\n"
              "sleep: float = 0.0  # seconds the run takes\n"
              "need_file: str = ''  # a file the run needs ('' for none)\n")
    cells = [
        v4.new_markdown_cell("# A tiny notebook for sweep tests"),
        v4.new_code_cell(params, metadata={"tags": ["parameters"]}),
        v4.new_code_cell("import os, time\n"
                         "if x < 0:\n"
                         "    raise ValueError(f'x must be >= 0, got {x}')\n"
                         "if need_file and not os.path.exists(need_file):\n"
                         "    raise FileNotFoundError(f'need_file {need_file} is missing')\n"
                         "time.sleep(sleep)"),
        v4.new_code_cell("from clkit.results import RunRecord\n"
                         "rec = RunRecord('00_tiny', params=dict(x=x, seed=seed))\n"
                         "rec.log(y=x * x + seed, nested={'half': x / 2})\n"
                         "rec.save()"),
    ]
    nb = v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(folder / "00_tiny.ipynb"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("notebooks")
    _write_tiny_notebook(folder)
    with notebooks_at(folder):
        yield folder


def _grid(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def _cases(root: Path) -> dict:
    return {d.name: d for d in root.iterdir()
            if d.is_dir() and not d.name.startswith(".") and CASE_DIR.fullmatch(d.name)}


def _no_partial_files(folder: Path) -> list:
    return [p for p in folder.rglob("*") if ".partial." in p.name or ".tmp" in p.name or ".work" in p.parts]


def _table(folder):
    return sweep_table(folder).drop(columns=["runtime_s"]).sort_values("index").reset_index(drop=True)


def test_local_cluster_runs_every_case_and_reports_the_failing_one(tiny, tmp_path, capsys):
    grid = _grid(tmp_path / "g.yaml", "grid:\n  x: [0, 1, 2]\n  seed: [0, 1]\ncases:\n  - {x: -1, seed: 5}\n")
    out = tmp_path / "out"
    assert main(["sweep", "00", "--grid", grid, "--out", str(out), "--workers", "2"]) == 1
    printed = capsys.readouterr().out
    assert "case 6 {'x': -1, 'seed': 5} failed: 00_tiny failed in cell 3: ValueError: x must be >= 0, got -1" in printed
    assert "7 cases: 6 run, 0 already complete, 1 failed" in printed
    df = _table(out)
    assert len(df) == 7 and list(df.columns[:6]) == ["notebook", "case", "index", "status", "x", "seed"]
    ok = df[df.status == "ok"]
    assert sorted(zip(ok.x, ok.seed)) == [(x, s) for x in (0, 1, 2) for s in (0, 1)]
    assert (ok.y == ok.x ** 2 + ok.seed).all() and (ok["nested.half"] == ok.x / 2).all()
    bad = df[df.status == "failed"].iloc[0]
    assert (bad.x, bad.seed) == (-1, 5) and "x must be >= 0" in bad.error
    assert (out / "00_tiny" / "summary.csv").exists() and (out / "00_tiny" / "summary.parquet").exists()
    assert not _no_partial_files(out) and not (out / "00_tiny" / ".work").exists()
    names = [f"seed={s},x={x}" for x in (0, 1, 2) for s in (0, 1)] + ["seed=5,x=-1"]
    assert sorted(_cases(out / "00_tiny")) == sorted(names)             # readable folders, nothing else
    assert df.case.tolist() == names                                    # the table names them too
    assert json.loads((out / "00_tiny" / "seed=5,x=-1" / "run.json").read_text())["status"] == "failed"

    # Rerun: nothing is executed again, the earlier failure is reported and skipped.
    stamps = {k: (d / "run.json").stat().st_mtime_ns for k, d in _cases(out / "00_tiny").items()}
    assert main(["sweep", "00", "--grid", grid, "--out", str(out), "--workers", "2"]) == 1
    printed = capsys.readouterr().out
    assert "0 run, 6 already complete, 1 failed (1 earlier; --retry-failed reruns them)" in printed
    assert stamps == {k: (d / "run.json").stat().st_mtime_ns for k, d in _cases(out / "00_tiny").items()}

    # Fix the grid: the corrected case runs, the rest stays as it is.
    fixed = _grid(tmp_path / "g.yaml", "grid:\n  x: [0, 1, 2]\n  seed: [0, 1]\ncases:\n  - {x: 3, seed: 5}\n")
    assert main(["sweep", "00", "--grid", fixed, "--out", str(out), "--workers", "2", "--retry-failed"]) == 0
    assert "7 cases: 1 run, 6 already complete, 0 failed" in capsys.readouterr().out
    df = _table(out)
    assert (df.status == "ok").all() and df.iloc[6][["x", "seed", "y"]].tolist() == [3, 5, 14]

    # clkit summary --group-by: mean ± std over seeds.
    assert main(["summary", str(out), "--group-by", "x"]) == 0
    grouped = (out / "summary_by_x.csv").read_text().splitlines()
    assert grouped[0] == "x,n,nested.half_mean,nested.half_std,y_mean,y_std"  # results.json keys are sorted
    assert grouped[1].startswith("0,2,0.0,0.0,0.5,0.7071")
    capsys.readouterr()
    assert main(["summary", str(out), "--group-by", "x", "--columns", "y"]) == 0
    printed = capsys.readouterr().out
    assert "nested.half" not in printed and "0.5 ± 0.71" in printed
    assert (out / "summary_by_x.csv").read_text().splitlines()[0] == "x,n,y_mean,y_std"
    assert main(["summary", str(out), "--columns", "nope*"]) == 2
    assert "no result column matches ['nope*']" in capsys.readouterr().err


def test_retry_failed_reruns_a_case_whose_cause_was_fixed(tiny, tmp_path, capsys):
    need = tmp_path / "data.txt"
    grid = _grid(tmp_path / "g.yaml", f"grid:\n  x: [1, 2]\n  need_file: ['', '{need}']\n")
    out = tmp_path / "out"
    assert main(["sweep", "00", "--grid", grid, "--out", str(out), "--workers", "1"]) == 1
    assert f"FileNotFoundError: need_file {need} is missing" in capsys.readouterr().out
    need.write_text("now here")
    # a killed worker's leftover (its process is gone) is removed; a running sweep's (this process) is kept
    from clkit.sweep.store import work_dir

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead, live = work_dir(out / "00_tiny", gone.pid), work_dir(out / "00_tiny")
    for d in (dead, live):
        d.mkdir(parents=True)
    capsys.readouterr()
    assert main(["sweep", "00", "--grid", grid, "--out", str(out), "--workers", "1"]) == 1  # still skipped
    err = capsys.readouterr().err
    assert not dead.exists() and live.exists()
    assert f"removed 1 leftover work folder(s) of processes gone from this host ({dead.name})" in err, err
    live.rmdir()
    assert main(["sweep", "00", "--grid", grid, "--out", str(out), "--workers", "1", "--retry-failed"]) == 0
    assert "4 cases: 2 run, 2 already complete, 0 failed" in capsys.readouterr().out
    assert (sweep_table(out).status == "ok").all()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sweep_on_a_real_dask_scheduler_and_two_worker_processes(tiny, tmp_path, capsys):
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        procs += [subprocess.Popen([str(BIN / "dask"), "worker", address, "--nthreads", "1", "--no-dashboard",
                                    "--name", f"w{i}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                  for i in range(2)]
        from distributed import Client

        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        grid = _grid(tmp_path / "g.yaml", "grid:\n  x: [0, 1, 2, 3]\n")
        out = tmp_path / "out"
        assert main(["sweep", "00", "--grid", grid, "--out", str(out), "--scheduler", address]) == 0
        assert f"4 of 4 case(s) to run on {address}" in capsys.readouterr().out
        df = _table(out)
        assert (df.status == "ok").all() and df.y.tolist() == [0, 1, 4, 9]
        hosts = {json.loads((d / "run.json").read_text())["host"] for d in _cases(out / "00_tiny").values()}
        assert hosts == {socket.gethostname()}
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGINT)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
    assert all(p.poll() is not None for p in procs)


def test_unreachable_scheduler_fails_within_seconds_naming_the_address(tiny, tmp_path, capsys):
    grid = _grid(tmp_path / "g.yaml", "grid:\n  x: [0]\n")
    address = f"tcp://127.0.0.1:{_free_port()}"
    t0 = time.perf_counter()
    assert main(["sweep", "00", "--grid", grid, "--out", str(tmp_path / "o"), "--scheduler", address]) == 2
    assert time.perf_counter() - t0 < 20
    err = capsys.readouterr().err
    assert f"could not connect to a Dask scheduler at '{address}'" in err


def test_interrupted_sweep_resumes_without_rerunning_or_partial_files(tiny, tmp_path):
    grid = _grid(tmp_path / "g.yaml", "grid:\n  x: [0, 1, 2, 3]\n  sleep: [0.5]\n")   # 4 cases
    out = tmp_path / "out"
    cmd = [str(BIN / "clkit"), "sweep", "00", "--grid", grid, "--out", str(out), "--workers", "2"]
    # SIG_DFL: a test run started in the background inherits SIGINT ignored, and Python then never
    # turns Ctrl-C into KeyboardInterrupt; restore the terminal's default for the sweep.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    root = out / "00_tiny"
    deadline = time.time() + 120
    while not (root.is_dir() and _cases(root)) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    printed, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, printed
    # issue 28 item 4: one line about the interrupt, no worker tracebacks
    assert "Traceback" not in printed and "KeyboardInterrupt" not in printed, printed
    said = [ln for ln in printed.splitlines() if "interrupted" in ln]
    assert len(said) == 1 and said[0].endswith("not run; rerun the same command to resume"), printed
    assert len(printed.splitlines()) == 2, printed  # "N of M case(s) to run on ..." and that line
    finished = _cases(root)
    assert 1 <= len(finished) < 4, printed
    assert not _no_partial_files(out)  # the case that was running left nothing behind
    for d in finished.values():  # every published case is whole
        assert json.loads((d / "run.json").read_text())["status"] == "ok"
        assert json.loads((d / "results.json").read_text())["results"]["y"] >= 0
        assert (d / "00_tiny.ipynb").exists()
    stamps = {k: (d / "run.json").stat().st_mtime_ns for k, d in finished.items()}

    resumed = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"{4 - len(finished)} run, {len(finished)} already complete, 0 failed" in resumed.stdout
    assert stamps == {k: (finished[k] / "run.json").stat().st_mtime_ns for k in finished}
    assert not _no_partial_files(out)

    straight = tmp_path / "straight"
    assert main(["sweep", "00", "--grid", grid, "--out", str(straight), "--workers", "2"]) == 0
    a, b = _table(out), _table(straight)
    assert a.equals(b), (a, b)
