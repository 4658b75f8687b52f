"""Line-bounded readers (issue 55): a file with one huge line is refused in one sentence (file, line,
limit), never read whole; a 2 GB line under a 1 GB address-space limit gives that sentence, no MemoryError."""

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from clkit import _io
from clkit._io import LineTooLong, check_lines, read_text


def test_check_lines_counts_lines_and_bytes(tmp_path, monkeypatch):
    f = tmp_path / "m.csv"
    f.write_bytes(b"0.9,0.1\n" * 3 + b"x" * 50 + b"\n0.5\n")
    assert check_lines(f, limit=50) == f                       # a line of exactly the limit is read
    with pytest.raises(LineTooLong, match=r"R matrix: '.*m\.csv' line 4 is longer than 49 bytes"):
        check_lines(f, "R matrix", limit=49)
    monkeypatch.setattr(_io, "_SCAN_CHUNK", 4)                 # pieces smaller than a line, and larger
    for limit, bad in ((49, 4), (7, 4), (6, 1)):
        with pytest.raises(LineTooLong, match=f"line {bad} "):
            check_lines(f, limit=limit)
    f.write_bytes(b"x" * 20)                                   # no newline at all
    with pytest.raises(LineTooLong, match="line 1 is longer than 10 bytes"):
        check_lines(f, limit=10)
    assert read_text(tmp_path / "m.csv") == "x" * 20


def test_every_reader_refuses_a_long_line(tmp_path, monkeypatch):
    """With a 1 KiB limit, each reader of user files refuses a 4 KiB line, naming file, line and limit."""
    from clkit.compare.frameworks import read_pycil_log
    from clkit.compare.readers import read_long_csv, read_matrix_file, read_runs
    from clkit.compare.trackers import read_tracker_file
    from clkit.data.user import load_class_names_file, load_matrix_csv, load_stream_table

    monkeypatch.setattr(_io, "MAX_LINE_BYTES", 1024)
    long = "9" * 4096
    files = {
        "matrix.csv": f"0.9,\n0.6,0.{long}\n",
        "log.txt": "2024-01-01 12:00:00,000 [trainer.py] => Task 0\n" + long + "\n",
        "long.csv": f"method,seed,order,i,j,accuracy\na,0,0,0,0,0.{long}\n",
        "history.csv": f"_step,acc_task_0\n0,0.{long}\n",
        "names.txt": f"cat\n{long}\n",
        "stream.csv": f"t,x,y\n0,1,{long}\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    calls = [
        (lambda: read_matrix_file(tmp_path / "matrix.csv", run="r"), "matrix.csv", 2),
        (lambda: load_matrix_csv(tmp_path / "matrix.csv"), "matrix.csv", 2),
        (lambda: read_runs(tmp_path / "matrix.csv"), "matrix.csv", 2),
        (lambda: read_pycil_log(tmp_path / "log.txt", method="icarl", seed="0"), "log.txt", 2),
        (lambda: read_long_csv(tmp_path / "long.csv"), "long.csv", 2),
        (lambda: read_tracker_file(tmp_path / "history.csv", "wandb", config={"method": "er", "seed": 0}), "history.csv", 2),
        (lambda: load_class_names_file(tmp_path / "names.txt"), "names.txt", 2),
        (lambda: load_stream_table(tmp_path / "stream.csv", target="y"), "stream.csv", 2),
    ]
    for call, name, line in calls:
        with pytest.raises(ValueError, match=rf"{name}' line {line} is longer than 1024 bytes, the most clkit reads"):
            call()


_CHILD = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))
    from clkit.compare.readers import read_runs
    from clkit.compare.frameworks import read_pycil_log
    for call in (lambda: read_runs(sys.argv[1]), lambda: read_pycil_log(sys.argv[2], method="icarl", seed="0")):
        try:
            call()
        except ValueError as exc:
            print("REFUSED", exc)
""")


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux")
def test_a_2gb_line_under_a_1gb_limit_is_refused_in_one_sentence(tmp_path):
    if shutil.disk_usage(tmp_path).free < 64 * 2**20:
        pytest.skip("less than 64 MiB free in the temporary folder")
    size = 2 * 2**30
    paths = []
    for name, head in (("matrix.csv", b"0.9,\n0.6,0."), ("log.txt", b"=> Task 0\n")):
        p = tmp_path / name
        with open(p, "wb") as fh:   # sparse: the 2 GB line takes no disk
            fh.write(head)
            fh.truncate(size)
        paths.append(str(p))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", _CHILD, *paths], capture_output=True, text=True, timeout=120,
                         env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "MemoryError" not in res.stdout + res.stderr
    refused = [ln for ln in res.stdout.splitlines() if ln.startswith("REFUSED")]
    assert len(refused) == 2, res.stdout
    assert "matrix.csv' line 2 is longer than 64 MiB" in refused[0]
    assert "log.txt' line 2 is longer than 64 MiB" in refused[1]
    assert np.all(["\n" not in r for r in refused])
