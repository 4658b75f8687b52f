"""The ``clkit`` command: run notebooks headless through papermill.

Usage
-----
::

    clkit list
    clkit run NOTEBOOK|all [--params smoke|default|paper|FILE.yaml] [-p NAME VALUE ...]
              [--out DIR] [--figures DIR] [--top-cells N]
    clkit sweep NOTEBOOK --grid GRID.yaml [--params BASE] [--out DIR] [--workers N]
                [--scheduler ADDRESS] [--retry-failed]
    clkit summary DIR [--group-by COLUMN ...] [--columns PATTERN ...]

``NOTEBOOK`` is a stem (``03_temporal_metrics``) or its number prefix (``03``).
Parameter sets live in ``notebooks/params/<notebook>/<set>.yaml``; ``-p`` values
are parsed as YAML (``-p epochs 3``, ``-p learners "[naive, ewc]"``).

Each run writes into ``OUT/<notebook>/``: the executed notebook, ``results.json``
(the notebook's recorded numbers; identical for identical parameters and seed),
``run.json`` (parameters, timing, status) and the figures (under ``figures/``,
or ``--figures DIR/<notebook>/``). A failing cell exits non-zero and prints
the cell's error.

``clkit sweep`` runs one case per grid point on Dask (:mod:`clkit.sweep`);
``clkit summary`` tabulates runs and sweeps (CSV, and Parquet beside it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path

import yaml

from ._io import atomic_write_json, flatten_scalars, repo_root
from .cli_protocols import register as _register_protocols

__all__ = ["notebooks_dir", "list_notebooks", "resolve_notebook", "load_params", "run_notebook",
           "summarize", "main"]

PARAM_SETS = ("smoke", "default", "paper")
_TYPES = {"int": (int,), "float": (float, int), "str": (str,), "bool": (bool,), "list": (list,),
          "dict": (dict,)}


def notebooks_dir() -> Path:
    """Folder holding the notebooks (``$CLKIT_NOTEBOOKS`` overrides)."""
    env = os.environ.get("CLKIT_NOTEBOOKS")
    return Path(env) if env else repo_root() / "notebooks"


def notebook_path(notebook: str) -> Path:
    """Path of the ``.ipynb`` of a notebook stem."""
    return notebooks_dir() / f"{notebook}.ipynb"


def list_notebooks() -> list[str]:
    """Stems of all notebooks, sorted."""
    return sorted(p.stem for p in notebooks_dir().glob("[0-9][0-9]_*.ipynb"))


def resolve_notebook(name: str) -> str:
    """Map a stem or its number prefix to the notebook stem.

    Raises ``ValueError`` naming the known notebooks when nothing matches.
    """
    stems = list_notebooks()
    name = Path(name).stem if name.endswith((".ipynb", ".py")) else name
    matches = [s for s in stems if s == name or s.split("_", 1)[0] == name]
    if len(matches) != 1:
        raise ValueError(f"notebook must be one of {stems} (or its number prefix), got {name!r}")
    return matches[0]


def param_sets(notebook: str) -> list[str]:
    """Named parameter sets of ``notebook`` (file stems under ``notebooks/params/<notebook>/``)."""
    d = notebooks_dir() / "params" / notebook
    return sorted(p.stem for p in d.glob("*.yaml"))


def notebook_parameters(notebook: str) -> dict:
    """The notebook's declared parameters: ``{name: {"type": ..., "default": ..., "help": ...}}``.

    Read with :mod:`ast` from the cell tagged ``parameters`` (papermill's own
    inspector gives up on comments that contain ``=``).
    """
    import ast

    import nbformat

    nb = nbformat.read(str(notebook_path(notebook)), as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    if not cells:
        raise ValueError(f"{notebook} has no code cell tagged 'parameters'")
    src = cells[0].source
    lines = src.splitlines()
    out = {}
    for node in ast.parse(src).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            line = lines[node.lineno - 1]
            out[node.target.id] = {"type": ast.unparse(node.annotation),
                                   "default": ast.literal_eval(node.value) if node.value is not None else None,
                                   "help": line.split("#", 1)[1].strip() if "#" in line else ""}
        elif isinstance(node, ast.Assign):
            for tgt in node.targets:
                if isinstance(tgt, ast.Name):
                    out[tgt.id] = {"type": "None", "default": ast.literal_eval(node.value), "help": ""}
    return out


def load_params(notebook: str, params: str = "default", overrides=()) -> dict:
    """Parameters for a run: a named set or YAML file, then ``(name, value)`` overrides.

    Names are checked against the notebook's parameters cell and values against
    its type annotations; a mismatch raises ``ValueError`` / ``TypeError`` naming
    the parameter.
    """
    if params in PARAM_SETS or (notebooks_dir() / "params" / notebook / f"{params}.yaml").exists():
        path = notebooks_dir() / "params" / notebook / f"{params}.yaml"
        if not path.exists():
            raise ValueError(f"params: {notebook} has no parameter set {params!r} "
                             f"(looked for {path}); available: {param_sets(notebook)}")
    else:
        path = Path(params)
        if not path.exists():
            raise ValueError(f"params must be one of {list(PARAM_SETS)} or a YAML file, got {params!r}")
    values = yaml.safe_load(path.read_text()) or {}
    if not isinstance(values, dict):
        raise ValueError(f"params file {path} must hold a mapping name: value")
    for name, raw in overrides:
        values[name] = yaml.safe_load(raw) if isinstance(raw, str) else raw
    check_values(notebook, values)
    return values


def check_values(notebook: str, values: dict, declared: dict | None = None) -> None:
    """Check parameter names and types against the notebook's parameters cell.

    Raises ``ValueError`` for a name the notebook does not declare and
    ``TypeError`` for a value whose type does not match the annotation.
    """
    declared = notebook_parameters(notebook) if declared is None else declared
    for name, value in values.items():
        if name not in declared:
            raise ValueError(f"{notebook} has no parameter {name!r}; parameters: {sorted(declared)}")
        types = _TYPES.get(declared[name]["type"])
        bad_bool = isinstance(value, bool) and declared[name]["type"] in ("int", "float")
        if types and (bad_bool or not isinstance(value, types)):
            raise TypeError(f"parameter {name} of {notebook} must be {declared[name]['type']}, "
                            f"got {type(value).__name__} {value!r}")


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
    done / total, section, elapsed; see :mod:`clkit._progress`).

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
                pm.execute_notebook(str(notebook_path), str(partial), parameters=params,
                                    kernel_name="python3", cwd=str(notebook_path.parent),
                                    progress_bar=False, extra_arguments=KERNEL_ARGS,
                                    engine_name=engine)
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
    """Execute one notebook with papermill; return its output folder.

    Raises ``RuntimeError`` with the failing cell's error when execution fails
    (the partly executed notebook is kept as ``<notebook>.failed.ipynb``).
    """
    notebook = resolve_notebook(notebook)
    values = load_params(notebook, params, overrides)
    outdir = Path(out) / notebook
    figdir = Path(figures) / notebook if figures else None
    (outdir / "results.json").unlink(missing_ok=True)
    res = execute(notebook_path(notebook), outdir, values, figdir=figdir,
                  progress=True if progress is None else progress)
    meta = {"notebook": notebook, "params_set": params, "params": values, "status": res["status"],
            "error": res["error"], "runtime_s": res["runtime_s"],
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}
    atomic_write_json(outdir / "run.json", meta)
    if res["error"]:
        raise RuntimeError(res["error"])
    return outdir


def summarize(folder) -> "pandas.DataFrame":  # noqa: F821
    """One table of the runs under ``folder``, saved as ``summary.csv`` (and ``summary.parquet``).

    A folder holding sweeps (``sweep.json``) gives one row per case with the grid
    parameters as columns (:func:`clkit.sweep.sweep_table`); otherwise one row
    per ``results.json`` with the parameters as ``param.<name>`` columns. Only
    scalar results are tabulated.
    """
    import pandas as pd

    from .sweep import find_sweeps, sweep_table, write_table
    from .sweep.table import DEPTH

    folder = Path(folder)
    if find_sweeps(folder):
        df = sweep_table(folder)
        write_table(df, folder / "summary.csv")
        return df
    rows = []
    for res in sorted(folder.rglob("results.json")):
        rec = json.loads(res.read_text())
        row = {"run": str(res.parent.relative_to(folder)) or ".", "notebook": rec.get("notebook")}
        meta = res.parent / "run.json"
        if meta.exists():
            m = json.loads(meta.read_text())
            row.update({"params_set": m.get("params_set"), "status": m.get("status"),
                        "runtime_s": m.get("runtime_s")})
        row.update({f"param.{k}": v for k, v in flatten_scalars(rec.get("params", {}), depth=0).items()})
        row.update(flatten_scalars(rec.get("results", {}), depth=DEPTH))
        rows.append(row)
    if not rows:
        raise ValueError(f"no results.json or sweep.json found under {folder}")
    df = pd.DataFrame(rows)
    write_table(df, folder / "summary.csv")
    return df


def _cmd_list(args):
    for nb in list_notebooks():
        print(f"{nb:28s} params: {', '.join(param_sets(nb)) or '-'}")
    return 0


def _cmd_run(args):
    names = list_notebooks() if args.notebook == "all" else [args.notebook]
    failures = []
    for nb in names:
        t0 = time.perf_counter()
        print(f"[clkit] running {nb} with params={args.params} ...", flush=True)
        try:
            outdir = run_notebook(nb, args.params, args.p or (), out=args.out, figures=args.figures,
                                  progress=args.progress)
        except (ValueError, TypeError, RuntimeError) as exc:
            print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
            failures.append(nb)
            continue
        print(f"[clkit] {nb} done in {time.perf_counter() - t0:.1f}s -> {outdir}", flush=True)
        if args.top_cells:
            _print_top_cells(outdir / TIMINGS, args.top_cells)
    if args.notebook == "all" and len(failures) < len(names):
        df = summarize(args.out)
        print(f"[clkit] summary of {len(df)} run(s) -> {Path(args.out) / 'summary.csv'}")
    if failures:
        print(f"[clkit] failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


def _print_top_cells(path, n: int) -> None:
    from ._progress import top_cells

    rows = read_timings(path)
    total = sum(r["duration_s"] for r in rows)
    print(f"[clkit]   slowest {min(n, len(rows))} of {len(rows)} cells ({total:.1f}s in cells):")
    for r in top_cells(rows, n):
        share = 100 * r["duration_s"] / total if total else 0.0
        print(f"[clkit]   {r['duration_s']:8.1f}s {share:4.0f}%  cell {r['cell']:3d}  "
              f"{r['section'][:40]:40s}  {r['first_line'][:50]}")


def _cmd_summary(args):
    import pandas as pd

    from .sweep import group_table, write_table
    from .sweep.table import select_columns

    try:
        df = summarize(args.dir)
        shown = select_columns(df, args.columns) if args.columns else df
        grouped = None
        if args.group_by:
            grouped = group_table(shown, args.group_by)
            grouped_path = Path(args.dir) / f"summary_by_{'_'.join(args.group_by)}.csv"
            write_table(grouped, grouped_path)
    except ValueError as exc:
        print(f"[clkit] ERROR: {exc}", file=sys.stderr)
        return 1
    shown = shown.drop(columns=["error"], errors="ignore")
    with pd.option_context("display.max_columns", _PRINT_COLUMNS, "display.width", 200,
                           "display.max_colwidth", 60):
        print(shown.to_string(index=False, max_cols=_PRINT_COLUMNS))
        if grouped is not None:
            print(f"\nmean ± std over the completed cases of each {', '.join(args.group_by)}:")
            print(_mean_std(grouped, args.group_by).to_string(index=False, max_cols=_PRINT_COLUMNS))
    if shown.shape[1] > _PRINT_COLUMNS:
        print(f"\n({shown.shape[1]} columns, {_PRINT_COLUMNS} printed; pick results with --columns PATTERN, "
              "e.g. --columns '*A_AUC'; every column is in the files)")
    print(f"\nwritten: {Path(args.dir) / 'summary.csv'}" + (f" and {grouped_path}" if grouped is not None else ""))
    return 0


_PRINT_COLUMNS = 16


def _mean_std(grouped, group_by):
    """``x_mean``/``x_std`` column pairs as one ``"m ± s"`` text column each, for printing."""
    out = grouped[[*group_by, "n"]].copy()
    for col in grouped.columns:
        if col.endswith("_mean"):
            name = col[:-5]
            out[name] = [f"{m:.4g} ± {s:.2g}" for m, s in zip(grouped[col], grouped[f"{name}_std"])]
    return out


def _cmd_sweep(args):
    from .sweep import SweepInterrupted, run_sweep

    try:
        counts = run_sweep(args.notebook, args.grid, params=args.params, out=args.out, workers=args.workers,
                           scheduler=args.scheduler, retry_failed=args.retry_failed, progress=args.progress,
                           log=lambda line: print(line, flush=True))
    except SweepInterrupted as exc:
        print(f"[clkit] sweep interrupted: {exc.counts}", file=sys.stderr, flush=True)
        return 130
    except (ValueError, TypeError, ConnectionError) as exc:
        print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
        return 2
    summarize(counts["root"])
    print(f"[clkit] table of the cases: {Path(counts['root']) / 'summary.csv'} "
          f"(clkit summary {counts['root']} [--group-by COLUMN])", flush=True)
    return 1 if counts["failed"] else 0


def main(argv=None) -> int:
    """Entry point of the ``clkit`` command."""
    ap = argparse.ArgumentParser(prog="clkit", description="Run clkit notebooks headless via papermill.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="notebooks and their parameter sets").set_defaults(func=_cmd_list)
    r = sub.add_parser("run", help="execute a notebook (or all) with a parameter set")
    r.add_argument("notebook", help="stem, number prefix, or 'all'")
    r.add_argument("--params", default="default", help="smoke | default | paper | FILE.yaml")
    r.add_argument("-p", nargs=2, action="append", metavar=("NAME", "VALUE"), help="override a parameter")
    r.add_argument("--out", default="runs", help="output folder (default: runs)")
    r.add_argument("--figures", default=None, help="figures go to FIGURES/<notebook>/ (default: OUT/<notebook>/figures)")
    r.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="a progress line per notebook on stderr: cells done/total, section, elapsed "
                        "(default: on; redrawn in place on a terminal, one line per section elsewhere)")
    r.add_argument("--top-cells", type=int, default=0, metavar="N",
                   help="after each notebook, print its N slowest cells (all cell times: OUT/<notebook>/timings.csv)")
    r.set_defaults(func=_cmd_run)
    w = sub.add_parser("sweep", help="run a notebook over a grid of parameters (resumable, on Dask)")
    w.add_argument("notebook", help="stem or number prefix")
    w.add_argument("--grid", required=True,
                   help="grid YAML file, or the name of a shipped grid (notebooks/grids/<notebook>/NAME.yaml)")
    w.add_argument("--params", default=None,
                   help="base parameter set or YAML file (default: the grid's 'params', else default)")
    w.add_argument("--out", default="runs/sweep", help="sweep folder; cases go to OUT/<notebook>/<key>/")
    w.add_argument("--workers", type=int, default=None, help="local worker processes (default: the core count)")
    w.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on an existing Dask cluster, e.g. tcp://host:8786 (workers need a shared file system)")
    w.add_argument("--retry-failed", action="store_true", help="also rerun cases that failed before")
    w.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: when stderr is a terminal)")
    w.set_defaults(func=_cmd_sweep)
    s = sub.add_parser("summary", help="one table of the results of many runs or sweep cases")
    s.add_argument("dir")
    s.add_argument("--group-by", nargs="+", default=None, metavar="COLUMN",
                   help="mean ± std of the results over the cases of each group (e.g. --group-by sigma)")
    s.add_argument("--columns", nargs="+", default=None, metavar="PATTERN",
                   help="result columns to print and group, as glob patterns (e.g. 'main.*.A_AUC')")
    s.set_defaults(func=_cmd_summary)
    _register_protocols(sub)  # clkit edge / metrics / drift / taskify
    __import__("clkit.course.cli", fromlist=["register"]).register(sub)  # clkit course build / grade
    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
