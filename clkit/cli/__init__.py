"""The ``clkit`` command: the one command layer, on top of the libraries.

Usage
-----
::

    clkit list
    clkit run NOTEBOOK|all [--params smoke|default|paper|FILE.yaml] [-p NAME VALUE ...]
              [--out DIR] [--figures DIR] [--top-cells N]
    clkit sweep NOTEBOOK --grid GRID.yaml [--params BASE] [--out DIR] [--workers N]
                [--scheduler ADDRESS] [--retry-failed]
    clkit summary DIR [--group-by COLUMN ...] [--columns PATTERN ...]
    clkit plan RESULTS.json [--effect-sds K] [--effect X] [--power P] [--family M]
    clkit compare RUNS [--reference METHOD | --compare A:B ...] [--out DIR]
    clkit export RUNS --to mlflow|tensorboard [--out DIR|URI] [--figures DIR]
    clkit sweep NOTEBOOK --grid GRID.yaml --print-cases; clkit run-case ROOT INDEX
    clkit merge SWEEP_DIR [--out DIR]
    clkit notebooks copy DIR | clkit cite NN | clkit --version
    clkit edge orders | metrics cl|temporal | drift stream | taskify bps ...
    clkit course build | grade ...
    clkit data list [NN] | check NN --params SET | get NN --params SET

``NOTEBOOK`` is a stem (``03_temporal_metrics``) or its number prefix (``03``).
Parameter sets live in ``notebooks/params/<notebook>/<set>.yaml``; ``-p`` values
are parsed as YAML (``-p epochs 3``, ``-p learners "[naive, ewc]"``).

Each run writes into ``OUT/<notebook>/``: the executed notebook, ``results.json``
(the notebook's recorded numbers; identical for identical parameters and seed),
``run.json`` (parameters, timing, status) and the figures (under ``figures/``,
or ``--figures DIR/<notebook>/``). Exit status, the same for every subcommand: 0 done,
2 bad input (one line naming it; nothing ran), 1 a failed run (the failing cell's error
is printed), 130 Ctrl-C.

``clkit sweep`` runs one case per grid point on Dask (:mod:`clkit.sweep`);
``clkit summary`` tabulates runs and sweeps (CSV, and Parquet beside it).

Layout: one module per subcommand (:mod:`.run` holds ``list`` and ``run``), each
with ``register(subparsers)`` adding its parser and a function per command that
parses, calls the library (:mod:`clkit.run`, :mod:`clkit.sweep`,
:mod:`clkit.course`, the paper packages) and prints. Library modules never import
this package (``tests/test_imports.py`` checks it).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from . import cite, compare, course, data, drift, edge, export, merge, metrics, notebooks, plan, run, summary, sweep, taskify

__all__ = ["main", "build_parser", "SUBCOMMANDS"]

#: the clkit package's folder: warnings raised from inside it print as ``[clkit] note: ...``
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: subcommand modules, in the order ``clkit --help`` lists them
SUBCOMMANDS = (run, sweep, merge, summary, export, plan, compare, edge, metrics, drift, taskify, course, cite, notebooks,
               data)


def version_line() -> str:
    """``clkit X (commit C[, uncommitted changes])``: what ``clkit --version`` prints.

    Examples
    --------
    >>> version_line().startswith("clkit ")
    True
    """
    from ..manifest import git_state, version

    git = git_state()
    where = "" if git is None else f" (commit {git['commit'][:12]}{', uncommitted changes' if git['dirty'] else ''})"
    return f"clkit {version()}{where}"


def build_parser() -> argparse.ArgumentParser:
    """The ``clkit`` argument parser with every subcommand registered."""
    ap = argparse.ArgumentParser(prog="clkit", description="Run clkit notebooks headless via papermill.")
    ap.add_argument("--version", action="version", version=version_line())
    sub = ap.add_subparsers(dest="cmd", required=True)
    for mod in SUBCOMMANDS:
        mod.register(sub)
    return ap


def main(argv=None) -> int:
    """Entry point of the ``clkit`` command; returns the exit status (130 after Ctrl-C, 143 after SIGTERM,
    which every command handles as Ctrl-C: :mod:`clkit._signals`)."""
    from .._signals import exit_status, stop_word, terminate_as_interrupt

    args = build_parser().parse_args(argv)
    if args.cmd != "run":   # clkit run checks its folders per notebook (clkit.cli.run)
        from .._outpath import check_out_folder

        for flag in ("out", "figures"):
            value = getattr(args, flag, None)
            if isinstance(value, str) and value:
                try:
                    check_out_folder(f"--{flag}", value)
                except ValueError as exc:   # before any work: one line, nothing written
                    print(f"[clkit] ERROR: {exc}; nothing was written", file=sys.stderr, flush=True)
                    return 2
    try:
        with warnings.catch_warnings(), terminate_as_interrupt():
            default = warnings.showwarning

            def note(message, category, filename, lineno, file=None, line=None):
                """clkit's own warnings as one line (``[clkit] note: ...``); others as Python prints them."""
                if os.path.dirname(os.path.abspath(filename)).startswith(_PACKAGE):
                    print(f"[clkit] note: {message}", file=sys.stderr, flush=True)
                else:
                    default(message, category, filename, lineno, file, line)

            warnings.showwarning = note
            return args.func(args)
    except OSError as exc:   # a full disk in any command: one line naming the folder (clkit._io.DiskFull)
        from .._io import DiskFull, is_disk_full

        if not is_disk_full(exc):
            raise
        folder = exc.folder if isinstance(exc, DiskFull) else (
            os.path.dirname(os.path.abspath(exc.filename)) if exc.filename else getattr(args, "out", None) or ".")
        print(f"[clkit] ERROR: {exc if isinstance(exc, DiskFull) else DiskFull(folder)}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt as exc:  # a command that has no more to say about it than this
        print(f"[clkit] {stop_word(exc)}: clkit {args.cmd} stopped", file=sys.stderr, flush=True)
        return exit_status(exc)
