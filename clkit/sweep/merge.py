"""Merging a split run: the finished cases of a sweep become the results of one run.

A paper set too long for one machine ships a grid that cuts it into independent cases (one
CL run each for notebook 01: ``notebooks/grids/01_taskification/paper_split.yaml``), run with
``clkit sweep --cluster slurm`` or ``clkit run-case``. :func:`merge_sweep` then runs the notebook
once more with the grid's case parameter at its whole-run value and the notebook's merge
parameter pointing at the sweep: the notebook reads the cases' results instead of computing
them, and everything else runs as in one run, so ``results.json`` holds the numbers and
verdicts one run would have written.

Each notebook declares how its cases combine in its paper package, as a mapping
(:data:`MERGES` names where): ``case_parameter`` (the one parameter the split grid varies),
``whole_value`` (its value in a whole run) and ``merge_parameter`` (the parameter that takes
the sweep folder). Notebook 01 declares it in :data:`clkit.taskification.split.MERGE`.
"""

from __future__ import annotations

import importlib
import tempfile
from pathlib import Path

import yaml

from .store import case_status, read_manifest

__all__ = ["MERGES", "merge_declaration", "merge_plan", "merge_sweep"]

#: notebook -> ``module:NAME`` of its merge declaration
MERGES = {"01_taskification": "clkit.taskification.split:MERGE", "02_edge": "clkit.edge.split:MERGE",
          "03_temporal_metrics": "clkit.temporal.split:MERGE",
          "04_curriculum": "clkit.curriculum.split:MERGE",
          "05_drift": "clkit.drift.split:MERGE"}


def merge_declaration(notebook: str) -> dict:
    """How ``notebook``'s cases combine, or a ``ValueError`` naming the notebooks that can be merged.

    Examples
    --------
    >>> merge_declaration("01_taskification")["case_parameter"]
    'cl_runs'
    """
    if notebook not in MERGES:
        raise ValueError(f"notebook: {notebook} declares no merge of split cases; notebooks that do: "
                         f"{', '.join(MERGES)}")
    module, name = MERGES[notebook].split(":")
    return getattr(importlib.import_module(module), name)


def _root(sweep_dir) -> Path:
    """The folder holding ``sweep.json``: ``sweep_dir`` itself or its one notebook folder."""
    d = Path(sweep_dir)
    if (d / "sweep.json").is_file():
        return d
    found = sorted(p.parent for p in d.glob("*/sweep.json"))
    if len(found) == 1:
        return found[0]
    raise ValueError(f"SWEEP_DIR: {str(d)!r} holds {'no' if not found else len(found)} sweep(s) (a sweep.json in it "
                     "or in one folder below); give the folder clkit sweep --out wrote, or its notebook folder")


def merge_plan(sweep_dir) -> tuple[str, dict, Path]:
    """``(notebook, parameters of the merged run, sweep root)`` of a finished split sweep.

    Raises
    ------
    ValueError
        When the cases differ in another parameter than the declared case parameter, or a case
        is not finished (naming them).
    """
    root = _root(sweep_dir)
    plan = read_manifest(root)
    notebook = plan["notebook"]
    decl = merge_declaration(notebook)
    case_param = decl["case_parameter"]
    cases = plan["cases"]
    if not cases:
        raise ValueError(f"SWEEP_DIR: {root} has no cases")
    todo = [c["name"] for c in cases if case_status(root, c["key"], c["name"]).get("status") != "ok"]
    if todo:
        raise ValueError(f"SWEEP_DIR: {len(todo)} of {len(cases)} case(s) under {root} are not finished: "
                         f"{', '.join(todo[:5])}{' ...' if len(todo) > 5 else ''} (clkit sweep or clkit run-case "
                         "runs them)")
    base = {k: v for k, v in cases[0]["params"].items() if k != case_param}
    for c in cases[1:]:
        other = {k: v for k, v in c["params"].items() if k != case_param}
        if other != base:
            diff = sorted(k for k in set(base) | set(other) if base.get(k) != other.get(k))
            raise ValueError(f"SWEEP_DIR: case {c['name']} differs from {cases[0]['name']} in {diff}")
    params = {**base, case_param: decl["whole_value"], decl["merge_parameter"]: str(root.resolve())}
    return notebook, params, root


def merge_sweep(sweep_dir, out="runs/merged", progress=None) -> Path:
    """Run the merge of a finished split sweep; returns the run folder ``out/<notebook>`` (its
    ``results.json`` is the one a whole run writes)."""
    from ..run import run_notebook

    notebook, params, _ = merge_plan(sweep_dir)
    with tempfile.TemporaryDirectory(prefix="clkit-merge-") as tmp:
        path = Path(tmp) / "merge.yaml"
        path.write_text(yaml.safe_dump(params, sort_keys=False))
        return run_notebook(notebook, str(path), out=out, progress=progress)
