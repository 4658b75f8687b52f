"""``clkit list`` and ``clkit run``: the notebooks, and executing one (or all) with a parameter set."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .._signals import exit_status, stop_word
from ..notebooks import list_notebooks, load_params, param_sets, resolve_notebook
from ..run import TIMINGS, ParameterError, check_notebook, read_timings, run_notebook

__all__ = ["register"]


def register(sub) -> None:
    """Add ``list`` and ``run`` to ``clkit``'s subparsers."""
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
    r.add_argument("--check", action="store_true",
                   help="only validate the parameters: run the notebook up to its validation cell in a temporary "
                        "folder (seconds) and write nothing; exit 0 when the run would start, 2 naming the bad value")
    r.set_defaults(func=_cmd_run)


def _cmd_list(args):
    for nb in list_notebooks():
        print(f"{nb:28s} params: {', '.join(param_sets(nb)) or '-'}")
    return 0


def _cmd_run(args):
    from ..summary import summarize

    names = list_notebooks() if args.notebook == "all" else [args.notebook]
    failures, bad_input = [], []
    for nb in names:
        t0 = time.perf_counter()
        try:
            nb = resolve_notebook(nb)  # "2" -> 02_edge, so that every message names the notebook
        except ValueError as exc:
            print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
            bad_input.append(nb)
            continue
        try:   # bad input is told before anything runs: one line, exit status 2
            values = load_params(nb, args.params, args.p or ())
            for flag, folder in (("--out", args.out), ("--figures", args.figures)):
                if folder:
                    _check_folder_before(flag, Path(folder), nb)
        except (ValueError, TypeError) as exc:
            print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
            bad_input.append(nb)
            continue
        from ..data.preflight import preflight_run

        # every file the run opens, before any cell (issue 51); --check checks the parameters only
        # (`clkit data check` checks the files)
        report = None if args.check else preflight_run(nb, values, args.params)
        if report is not None and report.problems:
            print(f"[clkit] ERROR: {report.message()}; nothing was written", file=sys.stderr, flush=True)
            bad_input.append(nb)
            continue
        if args.check:
            try:
                done = check_notebook(nb, args.params, args.p or ())
            except KeyboardInterrupt as exc:
                print(f"[clkit] {stop_word(exc)}: the check of {nb} stopped; nothing was written", file=sys.stderr,
                      flush=True)
                return exit_status(exc)
            except (ValueError, TypeError, RuntimeError) as exc:
                print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
                bad_input.append(nb)
                continue
            print(f"[clkit] {nb}: parameters valid (params={args.params}"
                  + (f", {len(args.p)} override(s)" if args.p else "")
                  + f"; its first {done['cells']} cells ran in {done['runtime_s']:.1f}s); nothing was written",
                  flush=True)
            continue
        print(f"[clkit] running {nb} with params={args.params} ...", flush=True)
        had_result = (Path(args.out) / nb / "run.json").is_file()
        try:
            outdir = run_notebook(nb, args.params, args.p or (), out=args.out, figures=args.figures,
                                  progress=args.progress)
        except KeyboardInterrupt as exc:
            kept = (f"the previous result in {Path(args.out) / nb} is kept" if had_result
                    else "nothing was written")
            print(f"[clkit] {stop_word(exc)}: {nb} did not finish; {kept}; rerun the same command to run it again",
                  file=sys.stderr, flush=True)
            return exit_status(exc)
        except (ParameterError, ValueError, TypeError) as exc:   # refused before any work (validation cell)
            print(f"[clkit] ERROR: {exc}; nothing was written", file=sys.stderr, flush=True)
            bad_input.append(nb)
            continue
        except RuntimeError as exc:
            print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
            failures.append(nb)
            continue
        except OSError as exc:   # a full disk: one line naming the folder (clkit._io.DiskFull), no traceback
            from .._io import DiskFull, is_disk_full

            if not is_disk_full(exc):
                raise
            print(f"[clkit] ERROR: {exc if isinstance(exc, DiskFull) else DiskFull(args.out)}", file=sys.stderr,
                  flush=True)
            failures.append(nb)
            continue
        print(f"[clkit] {nb} done in {time.perf_counter() - t0:.1f}s -> {outdir}", flush=True)
        if args.top_cells:
            _print_top_cells(outdir / TIMINGS, args.top_cells)
    if args.notebook == "all" and not args.check and len(failures) + len(bad_input) < len(names):
        df = summarize(args.out)
        print(f"[clkit] summary of {len(df)} run(s) -> {Path(args.out) / 'summary.csv'}")
    if failures:
        print(f"[clkit] failed: {', '.join(failures)}", file=sys.stderr)
        return 1   # a run failed (its cell's error above)
    return 2 if bad_input else 0   # bad input: nothing ran


def _check_folder_before(flag: str, folder: Path, notebook: str) -> None:
    """:func:`clkit.run.check_output_folder` without creating the folder (nothing is written for bad input)."""
    from ..run import check_output_folder

    if folder.exists():
        check_output_folder(flag, folder, notebook)
        return
    parent = next((p for p in folder.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise ValueError(f"{flag} {folder}: {parent} is a file, not a folder")
    if parent is not None and not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {folder} cannot be created: {parent} is not writable")


def _print_top_cells(path, n: int) -> None:
    from ..run_progress import top_cells

    rows = read_timings(path)
    total = sum(r["duration_s"] for r in rows)
    print(f"[clkit]   slowest {min(n, len(rows))} of {len(rows)} cells ({total:.1f}s in cells):")
    for r in top_cells(rows, n):
        share = 100 * r["duration_s"] / total if total else 0.0
        print(f"[clkit]   {r['duration_s']:8.1f}s {share:4.0f}%  cell {r['cell']:3d}  "
              f"{r['section'][:40]:40s}  {r['first_line'][:50]}")
