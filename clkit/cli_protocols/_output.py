"""Printing and writing the subcommands' results."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import numpy as np


def to_jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        return v if np.isfinite(v) else None
    return obj


def write(out, name: str, result: dict, table=None) -> list:
    """Write ``out/name.json`` and, given a DataFrame ``table``, ``out/name.csv``; return the paths."""
    if out is None:
        return []
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    paths = [d / f"{name}.json"]
    paths[0].write_text(json.dumps(to_jsonable(result), indent=1) + "\n")
    if table is not None:
        paths.append(d / f"{name}.csv")
        table.to_csv(paths[-1], index=False)
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
