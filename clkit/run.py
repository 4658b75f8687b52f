"""Running a notebook headless: papermill execution, a run's folder and its cell timings.

:func:`run_notebook` resolves a notebook and its parameters (:mod:`clkit.notebooks`)
and executes it into ``OUT/<notebook>/``: the executed notebook, ``results.json``
(the notebook's recorded numbers; identical for identical parameters and seed),
``run.json`` (parameters, timing, status), ``timings.csv`` and the figures (under
``figures/``, or ``FIGURES/<notebook>/``). :func:`execute` is the papermill call
itself, shared with the sweeps (:mod:`clkit.sweep`). The ``clkit run`` command
(:mod:`clkit.cli.run`) calls :func:`run_notebook`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import time
import uuid
from pathlib import Path

from ._io import atomic_write_json, replace_dir
# the notebooks' names and parameters, importable from here as before
from .notebooks import (PARAM_SETS, check_values, list_notebooks, load_params, notebook_parameters,  # noqa: F401
                        notebook_path, notebooks_dir, param_sets, resolve_notebook)

__all__ = ["execute", "run_notebook", "write_timings", "read_timings", "kernel_did_not_start", "KERNEL_ARGS", "TIMINGS",
           "notebooks_dir", "notebook_path", "list_notebooks", "resolve_notebook", "param_sets",
           "notebook_parameters", "load_params", "check_values"]

_ENV_LOCK = threading.Lock()
# The kernel logs only critical errors: its "running over TCP without encryption"
# warning (a local kernel, reached on 127.0.0.1) and the "KeyboardInterrupt caught in
# kernel" error (jupyter_client interrupts every kernel before shutting it down) would
# otherwise end every healthy run's log. A failing cell still reports its own error.
KERNEL_ARGS = ["--IPKernelApp.log_level=CRITICAL"]
TIMINGS = "timings.csv"


def execute(notebook_path, outdir, params: dict, figdir=None, progress=False) -> dict:
    """Run one notebook with papermill into ``outdir``; never raises on a failing cell.

    The executed notebook is written as ``.<stem>.partial.ipynb`` and renamed to
    ``<stem>.ipynb`` when every cell ran, or to ``<stem>.failed.ipynb`` when one
    failed; ``timings.csv`` beside it gives each code cell's duration. The kernel
    sees ``CLKIT_OUT_DIR=outdir`` and ``CLKIT_FIGURES_DIR`` (``figdir``, default
    ``outdir/figures``); a process-wide lock keeps concurrent calls from seeing
    each other's folders. ``progress=True`` shows a live line on stderr (cells
    done / total, section, elapsed; see :mod:`clkit._progress`). A kernel that does not start
    (:func:`kernel_did_not_start`) is started once more.

    Returns
    -------
    dict
        ``status`` ("ok" or "failed"), ``error`` (``"<stem> failed in cell N:
        Type: message"`` or ``None``), ``ename`` and ``runtime_s``.
    """
    import nbformat
    import papermill as pm
    from papermill.engines import papermill_engines

    from ._progress import CellProgress, progress_engine

    notebook_path = Path(notebook_path)
    stem = notebook_path.stem
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    figdir = Path(figdir) if figdir else outdir / "figures"
    partial = outdir / f".{stem}.partial.ipynb"
    t0 = time.perf_counter()
    out = {"status": "ok", "error": None, "ename": None}
    with _ENV_LOCK:
        env_before = {k: os.environ.get(k) for k in ("CLKIT_OUT_DIR", "CLKIT_FIGURES_DIR")}
        os.environ["CLKIT_OUT_DIR"] = str(outdir.resolve())
        os.environ["CLKIT_FIGURES_DIR"] = str(figdir.resolve())
        engine = None
        if progress:
            # papermill injects a parameters cell after the tagged one: count it too
            cells = nbformat.read(str(notebook_path), as_version=4).cells
            tagged = [i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", [])]
            if params and tagged:
                cells = cells[:tagged[0] + 1] + [cells[tagged[0]]] + cells[tagged[0] + 1:]
            bar = CellProgress(stem, cells)
            engine = "clkit-progress"
            papermill_engines.register(engine, progress_engine(bar))
        else:
            bar = contextlib.nullcontext()
        try:
            with bar:
                for attempt in (1, 2):
                    try:
                        pm.execute_notebook(str(notebook_path), str(partial), parameters=params,
                                            kernel_name="python3", cwd=str(notebook_path.parent),
                                            progress_bar=False, extra_arguments=KERNEL_ARGS,
                                            engine_name=engine)
                        break
                    except RuntimeError as exc:
                        if attempt == 2 or not kernel_did_not_start(exc):
                            raise
            final = outdir / f"{stem}.ipynb"
            os.replace(partial, final)
        except pm.PapermillExecutionError as exc:
            final = outdir / f"{stem}.failed.ipynb"
            os.replace(partial, final)
            out.update(status="failed", ename=exc.ename,
                       error=f"{stem} failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}")
        finally:
            partial.unlink(missing_ok=True)
            for k, v in env_before.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    out["runtime_s"] = round(time.perf_counter() - t0, 2)
    write_timings(final, outdir / TIMINGS)
    return out


def kernel_did_not_start(exc: BaseException) -> bool:
    """Whether ``exc`` says the kernel never started (no cell ran), so starting it again is safe.

    It happens on a loaded machine, and when two kernels start at once and jupyter_client hands
    both the same free port (the second one's bind fails: ``Address already in use``, then
    ``Kernel didn't respond in 60 seconds``); :func:`execute` then starts the kernel once more.

    Examples
    --------
    >>> kernel_did_not_start(RuntimeError("Kernel didn't respond in 60 seconds")), kernel_did_not_start(ValueError("x"))
    (True, False)
    """
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("Kernel didn't respond" in text or "Kernel died before replying" in text)


def write_timings(executed, path) -> Path:
    """``timings.csv`` of an executed notebook: cell, section, duration_s, first_line."""
    import csv
    import io

    import nbformat

    from ._io import atomic_write_text
    from ._progress import cell_timings

    rows = cell_timings(nbformat.read(str(executed), as_version=4))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["cell", "section", "duration_s", "first_line"], lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return atomic_write_text(path, buf.getvalue())


def read_timings(path) -> list[dict]:
    """Rows of a ``timings.csv`` (``duration_s`` as float)."""
    import csv

    with open(path, newline="") as f:
        return [{**r, "cell": int(r["cell"]), "duration_s": float(r["duration_s"])} for r in csv.DictReader(f)]


def run_notebook(notebook: str, params: str = "default", overrides=(), out="runs",
                 figures=None, progress=None) -> Path:
    """Execute one notebook with papermill; return its output folder ``out/<notebook>``.

    The run goes into a temporary folder beside ``out/<notebook>`` (and beside
    ``figures/<notebook>`` when ``figures`` is given) and replaces the previous
    result only once the notebook has run to its end, so an interrupted rerun
    (Ctrl-C, a kernel that dies, an error of clkit itself) keeps the previous
    ``results.json``, ``run.json``, executed notebook and figures. A run whose
    cell fails has run to its end too: it is published (``run.json`` says
    ``failed``, the notebook is kept as ``<notebook>.failed.ipynb``) and a
    ``RuntimeError`` with the failing cell's error is raised.

    Raises
    ------
    KeyboardInterrupt
        On Ctrl-C (also when the kernel received it): nothing is published and the
        temporary folders are removed.
    """
    notebook = resolve_notebook(notebook)
    values = load_params(notebook, params, overrides)
    outdir = Path(out) / notebook
    figdir = Path(figures) / notebook if figures else None
    tag = f".{notebook}.partial-{uuid.uuid4().hex[:8]}"
    stage = outdir.parent / tag
    stage_fig = figdir.parent / tag if figdir else None
    try:
        res = execute(notebook_path(notebook), stage, values, figdir=stage_fig,
                      progress=True if progress is None else progress)
        if res["ename"] == "KeyboardInterrupt":  # Ctrl-C reached the kernel: not the notebook's fault
            raise KeyboardInterrupt(res["error"])
        meta = {"notebook": notebook, "params_set": params, "params": values, "status": res["status"],
                "error": res["error"], "runtime_s": res["runtime_s"],
                "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}
        atomic_write_json(stage / "run.json", meta)
        with _interrupt_held():
            if stage_fig is not None:
                _merge_dir(stage_fig, figdir)
            replace_dir(stage, outdir)
    finally:
        for d in (stage, stage_fig):
            if d is not None:
                shutil.rmtree(d, ignore_errors=True)
    if res["error"]:
        raise RuntimeError(res["error"])
    return outdir


def _merge_dir(src: Path, dst: Path) -> None:
    """Move every file of ``src`` into ``dst`` (same relative path; one rename each), then drop ``src``.

    For a shared figures folder (``--figures``), where files the run did not write stay.
    """
    if not src.is_dir():
        return
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        target = dst / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
    shutil.rmtree(src, ignore_errors=True)


@contextlib.contextmanager
def _interrupt_held():
    """Hold Ctrl-C (SIGINT) until the block is done, so that publishing a run is never left half done.

    Only in the main thread (elsewhere Python delivers no signal); a held Ctrl-C is
    raised as ``KeyboardInterrupt`` after the block.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append((signum, frame)))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held and callable(previous):
            previous(*held[0])
