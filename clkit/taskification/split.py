"""Splitting notebook 01's CL part into cases, and reading the finished cases back.

The CL runs of section 7 -- one per (method, split, seed), and Finetune's null control on the
first split under the seeds after ``cl_seeds`` -- are independent: each builds its model under
its own seed and trains over its split's tasks alone, so the set is cut into one case per run
(``notebooks/grids/01_taskification/paper_split.yaml``). At the paper's size, priced for one H100
SXM (the transformer step measured at 33.6 ms on an H200 and scaled by memory bandwidth to 48.1 ms,
:func:`clkit.taskification.budget.gpu_days`; :func:`case_hours`), a case is 13.2-16.4 h when every
epoch runs (Replay 23.1-25.9 h: its memory rows double each step) and 1.5-1.8 h (Replay 2.5-2.8 h)
if every task stops at the earliest early stopping allows (the forward passes priced at the
forward/step ratio measured on the CPU, 0.076 per window).

A case is one CL run and cannot be cut further (task ``k`` trains the model task ``k - 1`` left),
so it checkpoints after every finished task (:mod:`clkit.taskification.resume`) into the folder
the sweep runners give it (``SWEEP/.checkpoints/<case key>``, :func:`checkpoint_dir`), and a rerun
goes on from the next task with the numbers of an uninterrupted run. With ``--walltime 12:00:00``
a job killed at its wall time loses at most the task it was in (0.4-2.7 h, Replay 0.8-4.5 h); a
case whose every epoch runs needs 2 jobs, one rerun (Replay 3 jobs, two reruns), counting 30 min
per job for loading and building the tasks (:func:`attempts`). Rerun ``clkit sweep`` with the same
arguments, or resubmit the array of ``clkit run-case`` tasks, until every case is complete: a
complete case returns at once.

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
from .resume import checkpoint_dir

__all__ = ["MERGE", "all_runs", "run_key", "parse_runs", "read_cl_runs", "CASE_SKIPS", "checkpoint_dir", "attempts",
           "case_hours"]

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
    The null control's runs (Finetune under the seeds after ``cl_seeds``) are on every split: the
    verdicts judge it on the split where the main seeds agree most
    (:func:`clkit.taskification.verdicts.null_split_of`), which no case can know in advance.

    >>> all_runs(["naive", "ewc"], ["9d", "30d"], 1)
    [('naive', '9d', 0), ('naive', '30d', 0), ('ewc', '9d', 0), ('ewc', '30d', 0), ('naive', '9d', 1), ('naive', '30d', 1)]
    """
    runs = [(m, n, s) for m in methods for n in names for s in range(cl_seeds)]
    if null_control and "naive" in methods and names:
        runs += [("naive", n, cl_seeds + s) for n in names for s in range(cl_seeds)]
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


def attempts(task_s, wall_s: float, startup_s: float = 0.0) -> int:
    """Jobs of ``wall_s`` seconds one CL run needs when every job resumes from its last finished task.

    Each job spends ``startup_s`` (loading, building the tasks) and then finishes whole tasks
    (``task_s``: seconds of each task, in order) while they fit; the task a job's wall time cuts
    is lost and starts over in the next job (:mod:`clkit.taskification.resume`).

    Raises
    ------
    ValueError
        When one task alone does not fit in a job (no number of reruns finishes the run).

    Examples
    --------
    >>> attempts([4, 4, 4], wall_s=10)        # 4 + 4 fit, the third task goes to a second job
    2
    >>> attempts([4, 4, 4], wall_s=10, startup_s=3)   # 3 + 4 per job
    3
    >>> attempts([], wall_s=10)
    1
    """
    wall = float(wall_s) - float(startup_s)
    jobs, used = 1, 0.0
    for k, t in enumerate(task_s):
        if t > wall:
            raise ValueError(f"task {k} takes {t / 3600:.3g} h, more than a job's {wall / 3600:.3g} h after its "
                             f"start-up: raise the wall time")
        if used + t > wall:
            jobs, used = jobs + 1, 0.0
        used += t
    return jobs


def case_hours(splits: dict, methods, *, cl_series: int, context: int, stride: int = 1,
               context_across_tasks: bool = False, epochs: int, batch_size: int, patience: int, cal: dict,
               settings: dict | None = None, card: str | None = None, walltime_h: float = 12.0,
               startup_h: float = 0.5) -> dict:
    """One case's GPU hours (one CL run per case) for every (method, split), and the jobs it needs.

    The work of a run is counted by :func:`clkit.taskification.budget.cl_work` and priced by
    :func:`clkit.taskification.budget.gpu_days` (the measured transformer step scaled to ``card``,
    default the H100 SXM; ``cal``: the forward/step cost per window, :func:`~clkit.taskification.budget.calibrate`).
    A task's share is the difference between the runs over the first ``k + 1`` and the first ``k``
    tasks. ``attempts`` is :func:`attempts` at every epoch run, with ``walltime_h`` jobs that each
    spend ``startup_h`` before training.

    Returns
    -------
    dict
        ``{(method, split): {"tasks", "upper_h", "lower_h", "longest_task_h", "attempts"}}``:
        ``upper_h`` runs every epoch, ``lower_h`` stops every task at the earliest early stopping allows.

    Examples
    --------
    >>> from clkit.taskification import fixed_windows
    >>> h = case_hours({"a": fixed_windows(2000, 1000)}, ["naive"], cl_series=1, context=10, epochs=10,
    ...                batch_size=256, patience=1, cal={"forward_window": 0.0, "step_window": 1.0}, card="H200")
    >>> r = h[("naive", "a")]                  # 2 tasks x 10 epochs x ceil(792 / 256) = 80 steps of 33.6 ms
    >>> r["tasks"], round(r["upper_h"] * 3600, 3), round(r["lower_h"] * 3600, 3), r["attempts"]
    (2, 2.688, 0.538, 1)
    """
    from .budget import cl_work, gpu_days
    from .forecasting import forecast_task_sizes
    from ..budget import DEFAULT_CARD

    card = card or DEFAULT_CARD
    out = {}
    for n, tau in splits.items():
        sizes = forecast_task_sizes(tau, context, num_series=cl_series, stride=stride,
                                    context_across_tasks=context_across_tasks)
        for m in methods:
            def cost(k, which="upper_s", n=n, m=m, sizes=sizes):   # the run over the first k tasks
                if k == 0:
                    return 0.0
                w = cl_work({n: sizes[:k]}, [m], 1, epochs=epochs, batch_size=batch_size, null_control=False,
                            settings=settings)
                return gpu_days(w, cal, batch_size=batch_size, epochs=epochs, patience=patience, card=card)[which]
            K = len(sizes)
            prefix = [cost(k) for k in range(K + 1)]
            per = np.diff(prefix)
            out[(m, n)] = {"tasks": K, "upper_h": prefix[-1] / 3600, "lower_h": cost(K, "lower_s") / 3600,
                           "longest_task_h": float(per.max()) / 3600,
                           "attempts": attempts(per, walltime_h * 3600, startup_h * 3600)}
    return out
