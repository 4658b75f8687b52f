"""The ``clkit`` command: run notebooks headless through papermill.

Usage
-----
::

    clkit list
    clkit run NOTEBOOK|all [--params smoke|default|paper|FILE.yaml] [-p NAME VALUE ...]
              [--out DIR] [--figures DIR]
    clkit summary DIR

``NOTEBOOK`` is a stem (``03_temporal_metrics``) or its number prefix (``03``).
Parameter sets live in ``notebooks/params/<notebook>/<set>.yaml``; ``-p`` values
are parsed as YAML (``-p epochs 3``, ``-p learners "[naive, ewc]"``).

Each run writes into ``OUT/<notebook>/``: the executed notebook, ``results.json``
(the notebook's recorded numbers; identical for identical parameters and seed),
``run.json`` (parameters, timing, status) and the figures (under ``figures/``,
or ``--figures DIR/<notebook>/``). A failing cell exits non-zero and prints
the cell's error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import yaml

from ._io import atomic_write_json, atomic_write_text, repo_root

__all__ = ["notebooks_dir", "list_notebooks", "resolve_notebook", "load_params", "run_notebook",
           "summarize", "main"]

PARAM_SETS = ("smoke", "default", "paper")
_TYPES = {"int": (int,), "float": (float, int), "str": (str,), "bool": (bool,), "list": (list,),
          "dict": (dict,)}


def notebooks_dir() -> Path:
    """Folder holding the notebooks (``$CLKIT_NOTEBOOKS`` overrides)."""
    env = os.environ.get("CLKIT_NOTEBOOKS")
    return Path(env) if env else repo_root() / "notebooks"


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

    nb = nbformat.read(str(notebooks_dir() / f"{notebook}.ipynb"), as_version=4)
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
    declared = notebook_parameters(notebook)
    for name, value in values.items():
        if name not in declared:
            raise ValueError(f"{notebook} has no parameter {name!r}; parameters: {sorted(declared)}")
        types = _TYPES.get(declared[name]["type"])
        bad_bool = isinstance(value, bool) and declared[name]["type"] in ("int", "float")
        if types and (bad_bool or not isinstance(value, types)):
            raise TypeError(f"parameter {name} of {notebook} must be {declared[name]['type']}, "
                            f"got {type(value).__name__} {value!r}")
    return values


def run_notebook(notebook: str, params: str = "default", overrides=(), out="runs",
                 figures=None, progress=None) -> Path:
    """Execute one notebook with papermill; return its output folder.

    Raises ``RuntimeError`` with the failing cell's error when execution fails
    (the partly executed notebook is kept as ``<notebook>.failed.ipynb``).
    """
    import papermill as pm

    notebook = resolve_notebook(notebook)
    values = load_params(notebook, params, overrides)
    outdir = Path(out) / notebook
    outdir.mkdir(parents=True, exist_ok=True)
    figdir = Path(figures) / notebook if figures else outdir / "figures"
    final = outdir / f"{notebook}.ipynb"
    partial = outdir / f".{notebook}.partial.ipynb"
    env_before = {k: os.environ.get(k) for k in ("CLKIT_OUT_DIR", "CLKIT_FIGURES_DIR")}
    os.environ["CLKIT_OUT_DIR"] = str(outdir.resolve())
    os.environ["CLKIT_FIGURES_DIR"] = str(figdir.resolve())
    (outdir / "results.json").unlink(missing_ok=True)
    t0 = time.perf_counter()
    status, error = "ok", None
    try:
        pm.execute_notebook(str(notebooks_dir() / f"{notebook}.ipynb"), str(partial), parameters=values,
                            kernel_name="python3", cwd=str(notebooks_dir()),
                            progress_bar=sys.stderr.isatty() if progress is None else progress)
        os.replace(partial, final)
    except pm.PapermillExecutionError as exc:
        status = "failed"
        os.replace(partial, outdir / f"{notebook}.failed.ipynb")
        error = f"{notebook} failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}"
    finally:
        for k, v in env_before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    meta = {"notebook": notebook, "params_set": params, "params": values, "status": status,
            "error": error, "runtime_s": round(time.perf_counter() - t0, 2),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}
    atomic_write_json(outdir / "run.json", meta)
    if error:
        raise RuntimeError(error)
    return outdir


def _flatten(d, prefix="", depth=2):
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and depth > 0:
            out.update(_flatten(v, key + ".", depth - 1))
        elif isinstance(v, (int, float, str, bool)) or v is None:
            out[key] = v
    return out


def summarize(folder) -> "pandas.DataFrame":  # noqa: F821
    """One table of every ``results.json`` under ``folder`` (scalars only), saved as ``summary.csv``."""
    import pandas as pd

    folder = Path(folder)
    rows = []
    for res in sorted(folder.rglob("results.json")):
        rec = json.loads(res.read_text())
        row = {"run": str(res.parent.relative_to(folder)) or ".", "notebook": rec.get("notebook")}
        meta = res.parent / "run.json"
        if meta.exists():
            m = json.loads(meta.read_text())
            row.update({"params_set": m.get("params_set"), "status": m.get("status"),
                        "runtime_s": m.get("runtime_s")})
        row.update({f"param.{k}": v for k, v in _flatten(rec.get("params", {}), depth=0).items()})
        row.update(_flatten(rec.get("results", {})))
        rows.append(row)
    if not rows:
        raise ValueError(f"no results.json found under {folder}")
    df = pd.DataFrame(rows)
    atomic_write_text(folder / "summary.csv", df.to_csv(index=False))
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
    if args.notebook == "all" and len(failures) < len(names):
        df = summarize(args.out)
        print(f"[clkit] summary of {len(df)} run(s) -> {Path(args.out) / 'summary.csv'}")
    if failures:
        print(f"[clkit] failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


def _cmd_summary(args):
    import pandas as pd

    try:
        df = summarize(args.dir)
    except ValueError as exc:
        print(f"[clkit] ERROR: {exc}", file=sys.stderr)
        return 1
    with pd.option_context("display.max_columns", None, "display.width", 200):
        print(df.to_string(index=False))
    print(f"\nwritten: {Path(args.dir) / 'summary.csv'}")
    return 0


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
                   help="papermill progress bar (default: when stderr is a terminal)")
    r.set_defaults(func=_cmd_run)
    s = sub.add_parser("summary", help="one table of the results of many runs")
    s.add_argument("dir")
    s.set_defaults(func=_cmd_summary)
    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
