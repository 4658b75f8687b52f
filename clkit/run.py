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
import errno
import json
import os
import shutil
import sys
import signal
import threading
import time
import uuid
from pathlib import Path

from ._io import DiskFull, atomic_write_json, is_disk_full, replace_dir
from ._signals import HELD_SIGNALS
# the notebooks' names and parameters, importable from here as before
from .notebooks import (PARAM_SETS, check_values, list_notebooks, load_params, notebook_parameters,  # noqa: F401
                        notebook_path, notebooks_dir, param_sets, resolve_notebook)

__all__ = ["execute", "run_notebook", "ParameterError", "check_notebook", "validation_cell", "write_timings", "read_timings", "kernel_did_not_start", "KERNEL_ARGS", "TIMINGS",
           "notebooks_dir", "notebook_path", "list_notebooks", "resolve_notebook", "param_sets",
           "notebook_parameters", "load_params", "check_values", "check_output_folder", "run_lock"]

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
    done / total, section, elapsed; see :mod:`clkit.run_progress`). A kernel that does not start
    (:func:`kernel_did_not_start`) is started once more.

    Returns
    -------
    dict
        ``status`` ("ok" or "failed"), ``error`` (``"<stem> failed in cell N:
        Type: message"`` or ``None``), ``ename``, ``runtime_s`` and, for a failed run,
        ``bad_input``: the ``ValueError`` / ``TypeError`` came from the notebook's
        validation cell or a cell before it (:func:`validation_cell`), i.e. a parameter
        was refused before any work began.
    """
    import nbformat
    import papermill as pm
    from papermill.engines import papermill_engines

    from .run_progress import CellProgress, progress_engine

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
        engine = "clkit-progress"   # also names the cause of a cell that failed without an error output
        if progress:
            # papermill injects a parameters cell after the tagged one: count it too
            cells = nbformat.read(str(notebook_path), as_version=4).cells
            tagged = [i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", [])]
            if params and tagged:
                cells = cells[:tagged[0] + 1] + [cells[tagged[0]]] + cells[tagged[0] + 1:]
            bar = CellProgress(stem, cells)
        else:
            bar = contextlib.nullcontext()
        papermill_engines.register(engine, progress_engine(bar if progress else None))
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
                       error=f"{stem} failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue or _no_reason(exc.ename)}",
                       bad_input=exc.ename in ("ValueError", "TypeError") and _failed_validating(final,
                                                                                                exc.exec_count))
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


def _cell_disk_full(res: dict) -> bool:
    """Whether a run failed because a cell could not write for want of space (``OSError: [Errno 28]``).

    >>> _cell_disk_full({"ename": "OSError", "error": "nb failed in cell 9: OSError: [Errno 28] No space left on device"})
    True
    """
    error = res.get("error") or ""
    return res.get("ename") in ("OSError", "DiskFull") and ("[Errno 28]" in error or "No space left" in error
                                                           or "no space left" in error)


def _no_reason(ename: str) -> str:
    """What to say of an error the kernel sent without a message (a bare ``MemoryError``).

    >>> _no_reason("MemoryError")[:13]
    'out of memory'
    """
    if ename == "MemoryError":
        return ("out of memory (under an address-space limit, ulimit -v, as on many cluster login nodes: "
                "raise the limit, run on a compute node, or choose smaller parameters)")
    return "(no message; see the cell's output in the failed notebook)"


class ParameterError(ValueError, RuntimeError):
    """A parameter the notebook refused before any work (its validation cell, or a cell before it).

    A ``ValueError`` (bad input: ``clkit run`` exits 2 and writes nothing), and a
    ``RuntimeError`` like every other error a notebook raises through :func:`run_notebook`.

    Examples
    --------
    >>> issubclass(ParameterError, ValueError) and issubclass(ParameterError, RuntimeError)
    True
    """


def _failed_validating(executed: Path, exec_count) -> bool:
    """Whether the cell of ``executed`` that ran as ``exec_count`` is the validation cell or one before it."""
    import nbformat

    try:
        cells = nbformat.read(str(executed), as_version=4).cells
        failed = next(i for i, c in enumerate(cells)
                      if c.cell_type == "code" and c.get("execution_count") == exec_count)
        return failed <= validation_cell(cells)
    except (OSError, ValueError, StopIteration):
        return False


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
    from .run_progress import cell_timings

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
    ``RuntimeError`` with the failing cell's error is raised. A parameter refused by
    the notebook's validation cell (a ``ValueError`` / ``TypeError`` there or before
    it) is bad input, not a failed run: nothing is published, the previous result is
    kept, and :class:`ParameterError` is raised (``clkit run`` exits 2).

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
    created = [d for d in (Path(out), Path(figures) if figures else None) if d is not None and not d.exists()]
    for flag, d in (("--out", Path(out)), ("--figures", Path(figures) if figures else None)):
        if d is not None:
            check_output_folder(flag, d, notebook)
    tag = f".{notebook}.partial-{uuid.uuid4().hex[:8]}"
    stage = outdir.parent / tag
    stage_fig = figdir.parent / tag if figdir else None
    published, res = False, None
    try:
        with run_lock(outdir):
            _remove_stale_partials(notebook, [outdir.parent] + ([figdir.parent] if figdir else []), keep=tag)
            try:
                res = execute(notebook_path(notebook), stage, values, figdir=stage_fig,
                              progress=True if progress is None else progress)
                if _cell_disk_full(res):   # a cell's write failed for want of space: not the notebook's fault
                    raise OSError(errno.ENOSPC, res["error"])
                published = _publish(res, notebook, params, values, stage, stage_fig, outdir, figdir)
            except OSError as exc:
                if not is_disk_full(exc) or isinstance(exc, DiskFull) and exc.folder == outdir.parent:
                    raise
                kept = (f"{notebook} was not written (the earlier result in {outdir} is kept)" if outdir.is_dir()
                        else f"{notebook} was not written")
                raise DiskFull(outdir.parent, kept) from None
    finally:
        for d in (stage, stage_fig):
            if d is not None:
                shutil.rmtree(d, ignore_errors=True)
        if not published:   # an interrupted or broken first run leaves no empty folder behind
            for d in created:
                with contextlib.suppress(OSError):
                    d.rmdir()
    if res["error"]:
        raise (ParameterError if res.get("bad_input") else RuntimeError)(res["error"])
    return outdir


def validation_cell(cells) -> int:
    """Index of a notebook's validation cell: the first code cell after the ``parameters`` cell that
    calls a ``check_params(...)`` (every shipped notebook has one; it raises ``ValueError`` naming a bad
    parameter before anything is trained or loaded).

    Raises ``ValueError`` when the notebook has no ``parameters`` cell or no such cell after it.

    Examples
    --------
    >>> import nbformat
    >>> v4 = nbformat.v4
    >>> validation_cell([v4.new_code_cell("a = 1", metadata={"tags": ["parameters"]}), v4.new_code_cell("import x"),
    ...                  v4.new_markdown_cell("check_params("), v4.new_code_cell("P = x.check_params(a=a)")])
    3
    """
    tagged = [i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not tagged:
        raise ValueError("the notebook has no cell tagged 'parameters': nothing to check")
    for i in range(tagged[0] + 1, len(cells)):
        if cells[i].cell_type == "code" and "check_params(" in cells[i].source:
            return i
    raise ValueError("the notebook has no validation cell (a code cell calling check_params(...) after "
                     "its parameters cell): --check cannot tell whether the parameters are valid")


def check_notebook(notebook: str, params: str = "default", overrides=()) -> dict:
    """``clkit run --check``: validate a run's parameters without running it; nothing is written.

    Resolves the notebook and its parameters (:func:`load_params`: unknown names, values of
    the wrong type), then executes the notebook only up to and including its validation cell
    (:func:`validation_cell`: the cells before it import clkit and, with ``rehearse``, prepare
    the rehearsal) in this process, without a kernel, its ``results.json`` and figures folders pointed at a
    temporary folder that is removed afterwards. A parameter that does not
    fit the notebook (a learner it does not know, ``learner_kwargs`` for a learner the run does not
    train, a device this machine lacks, ...) fails there, in seconds, as it would at the start of
    the run.

    Returns ``{"notebook", "cells", "runtime_s"}`` (``cells``: how many cells ran); raises
    ``ValueError`` with the validation cell's error (``"<notebook> failed in cell N: Type: message"``).
    """
    import io
    import tempfile

    import nbformat

    notebook = resolve_notebook(notebook)
    values = load_params(notebook, params, overrides)
    source = notebook_path(notebook)
    cells = nbformat.read(str(source), as_version=4).cells
    last = validation_cell(cells)
    code = [(i, c) for i, c in enumerate(cells[:last + 1]) if c.cell_type == "code"]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"clkit-check-{notebook}-") as tmp, _ENV_LOCK, \
            contextlib.ExitStack() as stack:
        env_before = {k: os.environ.get(k) for k in ("CLKIT_OUT_DIR", "CLKIT_FIGURES_DIR")}
        os.environ["CLKIT_OUT_DIR"] = str(Path(tmp) / "out")
        os.environ["CLKIT_FIGURES_DIR"] = str(Path(tmp) / "figures")
        cwd = os.getcwd()
        namespace = {"__name__": "__main__"}
        try:
            os.chdir(source.parent)   # where a kernel of `clkit run` runs
            stack.enter_context(contextlib.redirect_stdout(io.StringIO()))   # the cells' displays are not shown
            n = 0   # the cell's number as a run counts it (papermill's injected parameters cell included)
            for i, cell in code:
                n += 1
                try:
                    exec(compile(_python_source(cell.source), f"<{notebook} cell {i}>", "exec"), namespace)
                except Exception as exc:   # the notebook's own error, as a run reports it
                    raise ValueError(f"{notebook} failed in cell {n}: {type(exc).__name__}: {exc}") from None
                if "parameters" in cell.metadata.get("tags", []):
                    namespace.update(values)   # what papermill's injected cell does
                    n += bool(values)
        finally:
            os.chdir(cwd)
            for k, v in env_before.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return {"notebook": notebook, "cells": len(code), "runtime_s": round(time.perf_counter() - t0, 2)}


def _python_source(source: str) -> str:
    """A cell's source as Python (IPython's ``%magic`` and ``!shell`` lines transformed, as a kernel does)."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def _publish(res, notebook, params, values, stage, stage_fig, outdir, figdir) -> bool:
    """Write ``run.json`` and move the finished run into place (Ctrl-C held meanwhile)."""
    if res["ename"] == "KeyboardInterrupt":  # Ctrl-C reached the kernel: not the notebook's fault
        raise KeyboardInterrupt(res["error"])
    if res.get("bad_input"):   # a parameter refused before any work: nothing is written
        return False
    meta = {"notebook": notebook, "params_set": params, "params": values, "status": res["status"],
            "error": res["error"], "runtime_s": res["runtime_s"],
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S"), "manifest": _kernel_manifest(stage, values)}
    atomic_write_json(stage / "run.json", meta)
    with _interrupt_held():
        if stage_fig is not None:
            _merge_dir(stage_fig, figdir)
        replace_dir(stage, outdir)
    return True


def _kernel_manifest(stage: Path, params: dict | None = None) -> dict:
    """The manifest the kernel wrote into ``results.json`` (it saw the device the run used); when the run
    wrote none (it failed early), this process's own, without asking CUDA, with the seeds of ``params``."""
    from .manifest import manifest

    found = sorted(stage.rglob("results.json"))
    if found:
        try:
            m = json.loads(found[0].read_text()).get("manifest")
            if m:
                return m
        except (OSError, ValueError):
            pass
    return manifest(gpu=False, params=params)


def check_output_folder(flag: str, folder, notebook: str) -> None:
    """Refuse, in one line, an output folder a run could not write: a file, a file at
    ``folder/<notebook>``, or a folder without write permission (created here when missing).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "results.txt"
    >>> _ = f.write_text("x")
    >>> check_output_folder("--out", f, "03_temporal_metrics")
    Traceback (most recent call last):
    ...
    ValueError: --out ...results.txt is a file, not a folder; give a folder (it is created when missing)
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{flag} {folder} is a file, not a folder; give a folder (it is created when missing)")
    if (folder / notebook).exists() and not (folder / notebook).is_dir():
        raise ValueError(f"{flag} {folder}: {folder / notebook} is a file where the run's folder goes; "
                         "move it or give another folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{flag} {folder} cannot be created: {exc.strerror}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {folder} is not writable (a read-only folder?); give a folder you can write")


def _remove_stale_partials(notebook: str, folders, keep: str) -> list:
    """Remove the ``.<notebook>.partial-*`` folders a killed run left in ``folders`` (SIGKILL, a power cut:
    no ``finally`` ran); called under :func:`run_lock`, so no live run of ``notebook`` into the same
    folder owns one. Says each on stderr in one line; returns the removed paths.

    Examples
    --------
    >>> import tempfile, pathlib, contextlib, io
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / ".03_temporal_metrics.partial-0badf00d").mkdir()
    >>> with contextlib.redirect_stderr(io.StringIO()):
    ...     [p.name for p in _remove_stale_partials("03_temporal_metrics", [d], keep="x")]
    ['.03_temporal_metrics.partial-0badf00d']
    """
    removed = []
    for folder in folders:
        for path in sorted(Path(folder).glob(f".{notebook}.partial-*")) if Path(folder).is_dir() else ():
            if path.name != keep and path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
                print(f"[clkit] note: removed {path}, left by an earlier run of {notebook} that was killed",
                      file=sys.stderr, flush=True)
    return removed


@contextlib.contextmanager
def run_lock(outdir):
    """Hold ``<out>/.<notebook>.lock`` while a run writes ``outdir``: a second run into the same folder
    is refused (naming the first one's process), not allowed to overwrite it silently. A lock left by a
    process that no longer exists is taken over.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "03_temporal_metrics"
    >>> with run_lock(d):
    ...     with run_lock(d):
    ...         pass
    Traceback (most recent call last):
    ...
    ValueError: another clkit run (process ...) is writing .../03_temporal_metrics since ...; wait for it to finish or give another --out
    """
    outdir = Path(outdir)
    lock = outdir.parent / f".{outdir.name}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                pid, since = lock.read_text().split(" ", 1)
                os.kill(int(pid), 0)            # raises when no such process
            except (OSError, ValueError):
                lock.unlink(missing_ok=True)    # stale: its process is gone
                continue
            raise ValueError(f"another clkit run (process {pid}) is writing {outdir} since {since.strip()}; "
                             "wait for it to finish or give another --out") from None
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{os.getpid()} {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        break
    try:
        yield lock
    finally:
        lock.unlink(missing_ok=True)


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
    """Hold Ctrl-C (SIGINT) and SIGTERM until the block is done, so that publishing a run is never left half done.

    Only in the main thread (elsewhere Python delivers no signal); a held Ctrl-C is
    raised as ``KeyboardInterrupt`` after the block.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = []
    previous = {s: signal.signal(s, lambda signum, frame: held.append((signum, frame))) for s in HELD_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if held and callable(previous[held[0][0]]):
            previous[held[0][0]](*held[0])
