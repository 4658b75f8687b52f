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
    w.add_argument("--out", default="runs/sweep", help="sweep folder; cases go to OUT/<notebook>/<key>/")
    w.add_argument("--workers", type=int, default=None, help="local worker processes (default: the core count)")
    w.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on an existing Dask cluster, e.g. tcp://host:8786 (workers need a shared file system)")
    w.add_argument("--retry-failed", action="store_true", help="also rerun cases that failed before")
    w.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: when stderr is a terminal)")
    w.set_defaults(func=_cmd_sweep)


def _cmd_sweep(args):
    from ..summary import summarize
    from ..sweep import SweepInterrupted, run_sweep

    try:
        counts = run_sweep(args.notebook, args.grid, params=args.params, out=args.out, workers=args.workers,
                           scheduler=args.scheduler, retry_failed=args.retry_failed, progress=args.progress,
                           log=lambda line: print(line, flush=True))
    except SweepInterrupted:  # run_sweep said what finished, in one line
        return 130
    except (ValueError, TypeError, ConnectionError) as exc:
        print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
        return 2
    summarize(counts["root"])
    print(f"[clkit] table of the cases: {Path(counts['root']) / 'summary.csv'} "
          f"(clkit summary {counts['root']} [--group-by COLUMN])", flush=True)
    return 1 if counts["failed"] else 0
