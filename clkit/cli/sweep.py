"""``clkit sweep``: a notebook over a grid of parameters, resumable, on Dask (:mod:`clkit.sweep`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register"]


def register(sub) -> None:
    """Add ``sweep`` to ``clkit``'s subparsers."""
    w = sub.add_parser("sweep", help="run a notebook over a grid of parameters (resumable, on Dask)")
    w.add_argument("notebook", help="stem or number prefix")
    w.add_argument("--grid", required=True,
                   help="grid YAML file, or the name of a shipped grid (notebooks/grids/<notebook>/NAME.yaml)")
    w.add_argument("--params", default=None,
                   help="base parameter set or YAML file (default: the grid's 'params', else default)")
    w.add_argument("--out", default="runs/sweep",
                   help="sweep folder; each case goes to OUT/<notebook>/<name>/, named by the values the grid "
                        "sets, e.g. seed=1,sigma=3.0")
    w.add_argument("--workers", type=int, default=None, help="local worker processes (default: the core count)")
    w.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on an existing Dask cluster, e.g. tcp://host:8786 (workers need a shared file system)")
    w.add_argument("--cluster", default=None, metavar="slurm",
                   help="start the Dask workers as batch jobs: slurm (dask-jobqueue; pip install 'clkit[slurm]'); "
                        "each job is one worker running one case at a time")
    g = w.add_argument_group("--cluster slurm: each job's resources")
    g.add_argument("--jobs", default=None, help="batch jobs (workers) to ask for (default 1)")
    g.add_argument("--cores", default=None, help="CPUs per job (default 1)")
    g.add_argument("--memory", default=None, help="memory per job, e.g. 16GB (default 4GB)")
    g.add_argument("--walltime", default=None, help="time limit per job, HH:MM:SS (default 01:00:00)")
    g.add_argument("--gpus", default=None, help="GPUs per job, as --gres=gpu:N (default 0)")
    g.add_argument("--queue", default=None, help="Slurm partition")
    g.add_argument("--account", default=None, help="Slurm account")
    w.add_argument("--retry-failed", action="store_true", help="also rerun cases that failed before")
    w.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: when stderr is a terminal)")
    w.add_argument("--print-cases", action="store_true",
                   help="job-array mode: write the sweep's plan, print one line per case (index, key, status, "
                        "values, folder) and run nothing; each array task then runs "
                        "'clkit run-case OUT/NOTEBOOK INDEX'")
    w.set_defaults(func=_cmd_sweep)
    r = sub.add_parser("run-case", help="run one case of a sweep prepared with 'clkit sweep --print-cases' "
                                        "(a job-array task: no Dask, no open ports)")
    r.add_argument("root", help="the sweep's folder OUT/<notebook> (it holds sweep.json)")
    r.add_argument("case", help="the case's index (e.g. $SLURM_ARRAY_TASK_ID), its key or its folder name")
    r.set_defaults(func=_cmd_run_case)


def _cmd_sweep(args):
    from ..summary import summarize
    from ..sweep import SweepInterrupted, run_sweep

    if args.print_cases:
        return _print_cases(args)
    try:
        cluster = _batch_cluster(args)
    except (ValueError, TypeError, ImportError) as exc:
        print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
        return 2
    scheduler = cluster.scheduler_address if cluster is not None else args.scheduler
    try:
        counts = run_sweep(args.notebook, args.grid, params=args.params, out=args.out, workers=args.workers,
                           scheduler=scheduler, retry_failed=args.retry_failed, progress=args.progress,
                           log=lambda line: print(line, flush=True))
    except SweepInterrupted as exc:  # run_sweep said what finished, in one line
        return 143 if exc.terminated else 130
    except (ValueError, TypeError, ConnectionError) as exc:
        print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
        return 2
    finally:
        if cluster is not None:
            cluster.close()   # cancels the batch jobs
    summarize(counts["root"])
    print(f"[clkit] table of the cases: {Path(counts['root']) / 'summary.csv'} "
          f"(clkit summary {counts['root']} [--group-by COLUMN])", flush=True)
    return 1 if counts["failed"] else 0


_SLURM_OPTIONS = ("jobs", "cores", "memory", "walltime", "gpus", "queue", "account")


def _batch_cluster(args):
    """``--cluster slurm``: the SLURMCluster with ``--jobs`` jobs asked for; ``None`` without ``--cluster``."""
    given = {k: getattr(args, k) for k in _SLURM_OPTIONS if getattr(args, k) is not None}
    if args.cluster is None:
        if given:
            raise ValueError(f"--{next(iter(given))} sets a batch job's resources: it needs --cluster slurm")
        return None
    from ..cluster import CLUSTERS, _count, check_gpu_workers, slurm_kwargs, start_slurm
    from ..sweep import plan_sweep

    if args.cluster not in CLUSTERS:
        raise ValueError(f"--cluster must be one of {', '.join(CLUSTERS)}, got {args.cluster!r}")
    if args.scheduler is not None:
        raise ValueError("--cluster starts its own Dask scheduler: leave --scheduler out")
    jobs = given.pop("jobs", 1)
    try:
        _count("jobs", jobs, 1)
        kw = slurm_kwargs(**given)
    except ValueError as exc:   # "cores must be ...": name the option as typed
        raise ValueError(f"--{exc}" if str(exc).split()[0] in _SLURM_OPTIONS else str(exc)) from None
    if not kw["worker_extra_args"]:   # no GPU worker will come: refuse GPU cases before asking Slurm for jobs
        plan = plan_sweep(args.notebook, args.grid, params=args.params, out=args.out)
        check_gpu_workers(plan["cases"], [], f"--cluster {args.cluster} without --gpus")
    cluster = start_slurm(jobs, **given)
    print(f"[clkit] {args.cluster}: asked for {jobs} job(s); the cases start as the jobs do "
          f"(squeue --me), scheduler {cluster.scheduler_address}", flush=True)
    return cluster


def _print_cases(args) -> int:
    """``--print-cases``: the plan written, one tab-separated line per case, nothing run."""
    import json

    from ..sweep import case_status, prepare_cases

    try:
        plan = prepare_cases(args.notebook, args.grid, params=args.params, out=args.out)
    except (ValueError, TypeError) as exc:
        print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
        return 2
    root = Path(plan["root"])
    pending = 0
    for c in plan["cases"]:
        status = case_status(root, c["key"], c["name"])["status"]
        pending += status != "ok"
        print(f"{c['index']}\t{c['key']}\t{status}\t{json.dumps(c['values'], sort_keys=True)}\t{c['name']}")
    n = len(plan["cases"])
    print(f"[clkit] {n} cases ({pending} not complete) in {root}; a job array runs each with\n"
          f"  clkit run-case {root} $SLURM_ARRAY_TASK_ID      # e.g. sbatch --array=0-{n - 1}", file=sys.stderr)
    return 0


def _cmd_run_case(args):
    from ..sweep import run_case_of
    from ..sweep.store import case_dir

    try:
        meta = run_case_of(args.root, args.case)
    except (ValueError, TypeError) as exc:
        print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
        return 2
    print(f"[clkit] case {meta.get('index')} ({meta.get('name')}): {meta.get('status')}"
          + (f": {meta['error']}" if meta.get("error") else "") + f" -> {case_dir(args.root, str(meta.get('name')))}",
          flush=True)
    return 0 if meta.get("status") == "ok" else 1
