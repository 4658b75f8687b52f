"""Printing and writing the subcommands' results."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

from .._io import atomic_write_text, to_jsonable


def write(out, name: str, result: dict, table=None) -> list:
    """Write ``out/name.json`` and, given a DataFrame ``table``, ``out/name.csv`` (atomically); return the paths."""
    if out is None:
        return []
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    paths = [d / f"{name}.json"]
    atomic_write_text(paths[0], json.dumps(to_jsonable(result), indent=1) + "\n")
    if table is not None:
        paths.append(atomic_write_text(d / f"{name}.csv", table.to_csv(index=False)))
    for p in paths:
        print(f"wrote {p}")
    return paths


def show(table, title: str | None = None) -> None:
    import pandas as pd

    if title:
        print(title)
    with pd.option_context("display.max_rows", 200, "display.max_columns", 50, "display.width", 120,
                           "display.max_colwidth", 80):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))


def guarded(func):
    """Turn ValueError / TypeError / FileNotFoundError into a one-line message and exit status 2."""
    @functools.wraps(func)
    def wrapper(args):
        try:
            return func(args) or 0
        except (ValueError, TypeError, FileNotFoundError) as exc:
            print(f"clkit {args.cmd}: error: {exc}", file=sys.stderr)
            return 2
    return wrapper


def add_out(parser: argparse.ArgumentParser) -> None:
    """The ``--out DIR`` option of a protocol subcommand."""
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="write the result as JSON (and CSV where tabular) into DIR")
