"""Limits (issue 55): a run failing under an address-space limit names its cause, and the failed
notebook keeps it; a full disk is one line naming the folder, the earlier result kept."""

import os
import subprocess
import sys
import textwrap

import nbformat
import pytest

from clkit.run import execute

v4 = nbformat.v4


def _notebook(path, sources):
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, str(path))


def _error_outputs(path):
    nb = nbformat.read(str(path), as_version=4)
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]


def test_a_cell_failing_without_an_error_output_is_named(tmp_path):
    """The kernel reports the failure but sends no error output (as when, out of memory, it cannot format
    its traceback): the run's message and the failed notebook name the error from the cell's last output."""
    _notebook(tmp_path / "nb.ipynb", [
        "import sys\nget_ipython().showtraceback = lambda *a, **k: print('Traceback (most recent call last):\\n'\n"
        "    '  File \"x\", line 1\\nMemoryError', file=sys.stderr)",
        "raise MemoryError()",
    ])
    res = execute(tmp_path / "nb.ipynb", tmp_path / "out", {})
    assert res["status"] == "failed"
    assert res["ename"] == "MemoryError", res
    assert res["error"].startswith("nb failed in cell 2: MemoryError: "), res
    assert "out of memory" in res["error"] or "could not report" in res["error"], res
    errors = _error_outputs(tmp_path / "out" / "nb.failed.ipynb")
    assert [e.ename for e in errors] == ["MemoryError"]


_CHILD = textwrap.dedent("""
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (1500 * 2**20, 1500 * 2**20))
    from clkit.run import execute
    print(json.dumps(execute(sys.argv[1], sys.argv[2], {})))
""")


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux")
def test_a_run_out_of_address_space_names_memory_error(tmp_path):
    import json

    _notebook(tmp_path / "fill.ipynb", ["print('start')",
                                        "x = []\nwhile True:\n    x.append(bytearray(10**6))"])
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "fill.ipynb"), str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=150, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["ename"] == "MemoryError", out
    assert out["error"].startswith("fill failed in cell 2: MemoryError: ") and not out["error"].endswith(": "), out
    assert [e.ename for e in _error_outputs(tmp_path / "out" / "fill.failed.ipynb")] == ["MemoryError"]


def test_a_full_disk_is_one_sentence_naming_the_folder_and_the_earlier_file_stays(tmp_path):
    import errno

    from clkit._io import DiskFull, atomic_write_text

    target = atomic_write_text(tmp_path / "results.json", "old\n")

    def full(tmp):
        with open(tmp, "w") as fh:
            fh.write("half")
        raise OSError(errno.ENOSPC, "No space left on device", tmp)

    from clkit._io import atomic_save

    with pytest.raises(DiskFull) as info:
        atomic_save(target, full)
    assert str(info.value).startswith(f"no space left on the device holding {tmp_path} ")
    assert "\n" not in str(info.value) and "results.json was not written" in str(info.value)
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


@pytest.mark.parametrize("where", ["writer", "cell"])
def test_clkit_run_on_a_full_disk_keeps_the_earlier_result(tmp_path, monkeypatch, capsys, where):
    """ENOSPC while clkit run writes (papermill's writer, or a cell's own write): one line naming the folder,
    no traceback, the earlier run kept, no partial folder left."""
    import errno

    from clkit import run as run_mod
    from clkit.cli import main

    nb = "03_temporal_metrics"
    old = tmp_path / "runs" / nb
    old.mkdir(parents=True)
    (old / "run.json").write_text('{"status": "ok"}\n')

    def execute(path, outdir, params, figdir=None, progress=False):
        outdir.mkdir(parents=True, exist_ok=True)
        (outdir / "results.json").write_text("{}")
        if where == "writer":
            raise OSError(errno.ENOSPC, "No space left on device", str(outdir / f".{nb}.partial.ipynb"))
        return {"status": "failed", "ename": "OSError", "runtime_s": 1.0, "bad_input": False,
                "error": f"{nb} failed in cell 9: OSError: [Errno 28] No space left on device: 'x.npz'"}

    monkeypatch.setattr(run_mod, "execute", execute)
    code = main(["run", nb, "--params", "smoke", "--out", str(tmp_path / "runs"), "--no-progress"])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "ERROR" in ln]
    assert code == 1, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"no space left on the device holding {tmp_path / 'runs'}" in lines[0], err
    assert "the earlier result in" in lines[0], err
    assert (old / "run.json").read_text() == '{"status": "ok"}\n'
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [nb]
