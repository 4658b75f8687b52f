"""Splitting notebook 01's CL part into cases, and reading the finished cases back.

The CL runs of section 7 -- one per (method, split, seed), and Finetune's null control on the
first split under the seeds after ``cl_seeds`` -- are independent: each builds its model under
its own seed and trains over its split's tasks alone. At the paper's size one run is about
9-18 h of one GPU when every epoch runs (:func:`clkit.taskification.budget.gpu_days`), so the set
is cut into one case per run (``notebooks/grids/01_taskification/paper_split.yaml``):

- a **case** is the notebook with ``cl_runs: ["METHOD|SPLIT|SEED", ...]``: it loads the data,
  builds the same tasks, trains only those runs and records them under ``cl`` (the other
  sections are skipped: the merge computes them once);
- the **merge** (``clkit merge SWEEP_DIR --out DIR``, :mod:`clkit.sweep.merge`) runs the notebook
  once more with ``cl_from: SWEEP_DIR``: every section runs as in one run, and section 7 reads the
  runs' error matrices from the cases (:func:`read_cl_runs`) instead of training. The metrics are
  recomputed from the matrices, which JSON holds exactly (float64 round-trips), so the merged
  ``results.json`` holds the numbers and verdicts of one run.

The notebook declares this to :mod:`clkit.sweep.merge` by :data:`MERGE`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .forecasting import regression_cl_metrics

__all__ = ["MERGE", "all_runs", "run_key", "parse_runs", "read_cl_runs", "CASE_SKIPS"]

#: how notebook 01's cases combine (read by :mod:`clkit.sweep.merge`): the grid parameter that cuts the set
#: into cases, its value in a whole run, and the parameter that makes a run read the finished cases
MERGE = {"case_parameter": "cl_runs", "whole_value": [], "merge_parameter": "cl_from"}

#: parameters that may differ between the cases and the merged run (what a case is, where it ran)
CASE_SKIPS = ("cl_runs", "cl_from", "device", "precision", "cl_workers", "torch_threads")


def run_key(method: str, split: str, seed_index: int) -> str:
    """``"naive|9d|0"``: one CL run, as ``cl_runs`` and ``results.json``'s ``cl`` name it."""
    return f"{method}|{split}|{int(seed_index)}"


def all_runs(methods, names, cl_seeds: int, null_control: bool = True) -> list[tuple]:
    """Every CL run of a whole run, in :func:`clkit.taskification.report.run_cl`'s order.

    Examples
    --------
    >>> all_runs(["naive", "ewc"], ["9d"], 1)
    [('naive', '9d', 0), ('ewc', '9d', 0), ('naive', '9d', 1)]
    """
    runs = [(m, n, s) for m in methods for n in names for s in range(cl_seeds)]
    if null_control and "naive" in methods and names:
        runs += [("naive", names[0], cl_seeds + s) for s in range(cl_seeds)]
    return runs


def parse_runs(cl_runs, methods, names, cl_seeds: int, null_control: bool = True) -> list[tuple]:
    """The runs ``cl_runs`` selects (``[]``: every run), checked against this run's methods, splits and seeds.

    Raises
    ------
    ValueError
        Naming ``cl_runs``, the entry and the runs allowed.

    Examples
    --------
    >>> parse_runs(["ewc|9d|0"], ["naive", "ewc"], ["9d"], 1)
    [('ewc', '9d', 0)]
    >>> parse_runs(["sgd|9d|0"], ["naive"], ["9d"], 1)
    Traceback (most recent call last):
    ...
    ValueError: cl_runs: 'sgd|9d|0' is not a CL run of this set; allowed: naive|9d|0, naive|9d|1
    """
    every = all_runs(methods, names, cl_seeds, null_control)
    if not isinstance(cl_runs, (list, tuple)):
        raise TypeError(f"cl_runs must be a list of 'METHOD|SPLIT|SEED' strings, got {cl_runs!r}")
    if not cl_runs:
        return every
    known = {run_key(*r): r for r in every}
    out = []
    for entry in cl_runs:
        if entry not in known:
            raise ValueError(f"cl_runs: {entry!r} is not a CL run of this set; allowed: {', '.join(known)}")
        if known[entry] not in out:
            out.append(known[entry])
    return out


def _case_results(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).rglob("results.json") if ".work" not in p.parts)


def read_cl_runs(root, runs, params: dict) -> dict:
    """The CL runs ``runs`` read from the finished cases under ``root`` (a sweep folder).

    Every ``results.json`` under ``root`` whose parameters equal ``params`` (but for
    :data:`CASE_SKIPS`) contributes its ``cl`` records; each needed run must come from exactly
    one such case. The metrics are recomputed from the error matrices.

    Returns
    -------
    dict
        ``{(method, split, seed): {"M", "avg_mse", "bwt", "forgetting"}}``, as
        :func:`clkit.taskification.report.run_cl` returns it.

    Raises
    ------
    ValueError
        ``cl_from`` naming the folder and what is missing or differs.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"cl_from: {str(root)!r} is not a folder of finished cases (a clkit sweep's --out)")
    want = {k: v for k, v in params.items() if k not in CASE_SKIPS}
    found, differing = {}, []
    for path in _case_results(root):
        res = json.loads(path.read_text())
        if res.get("notebook") not in (None, "01_taskification"):
            continue
        got = {k: v for k, v in res.get("params", {}).items() if k not in CASE_SKIPS}
        diff = sorted(k for k in set(want) | set(got) if json.dumps(want.get(k), sort_keys=True, default=str)
                      != json.dumps(got.get(k), sort_keys=True, default=str))
        if diff:
            differing.append(f"{path.parent.name} ({', '.join(diff[:4])})")
            continue
        for key, rec in res.get("results", {}).get("cl", {}).items():
            if key in found:
                raise ValueError(f"cl_from: run {key} is in two cases under {root}: {found[key][0]} and {path.parent}")
            found[key] = (path.parent, rec)
    missing = [run_key(*r) for r in runs if run_key(*r) not in found]
    if missing:
        extra = f"; cases with other parameters: {', '.join(differing[:3])}" if differing else ""
        raise ValueError(f"cl_from: {len(missing)} CL run(s) missing under {root}: {', '.join(missing[:6])}"
                         f"{' ...' if len(missing) > 6 else ''} (run the split grid's cases first: clkit sweep 01 "
                         f"--grid notebooks/grids/01_taskification/paper_split.yaml){extra}")
    out = {}
    for r in runs:
        M = np.array(found[run_key(*r)][1]["M"], dtype=np.float64)
        out[r] = {"M": M, **regression_cl_metrics(M)}
    return out
