"""One table of many runs: ``summary.csv`` (and Parquet) of a folder of runs or sweeps.

``clkit summary DIR`` (:mod:`clkit.cli.summary`) and ``clkit run all`` call
:func:`summarize`.
"""

from __future__ import annotations

import json
from pathlib import Path

from ._io import flatten_scalars
from .sweep.table import DEPTH, find_sweeps, sweep_table, write_table

__all__ = ["summarize"]


def summarize(folder) -> "pandas.DataFrame":  # noqa: F821
    """One table of the runs under ``folder``, saved as ``summary.csv`` (and ``summary.parquet``).

    A folder holding sweeps (``sweep.json``) gives one row per case with the grid
    parameters as columns (:func:`clkit.sweep.sweep_table`); otherwise one row
    per ``results.json`` with the parameters as ``param.<name>`` columns. Only
    scalar results are tabulated.
    """
    import pandas as pd

    folder = Path(folder)
    if find_sweeps(folder):
        df = sweep_table(folder)
        write_table(df, folder / "summary.csv")
        return df
    rows = []
    for res in sorted(folder.rglob("results.json")):
        rec = json.loads(res.read_text())
        row = {"run": str(res.parent.relative_to(folder)) or ".", "notebook": rec.get("notebook")}
        meta = res.parent / "run.json"
        if meta.exists():
            m = json.loads(meta.read_text())
            row.update({"params_set": m.get("params_set"), "status": m.get("status"),
                        "runtime_s": m.get("runtime_s")})
        row.update({f"param.{k}": v for k, v in flatten_scalars(rec.get("params", {}), depth=0).items()})
        row.update(flatten_scalars(rec.get("results", {}), depth=DEPTH))
        rows.append(row)
    if not rows:
        raise ValueError(f"no results.json or sweep.json found under {folder}")
    df = pd.DataFrame(rows)
    write_table(df, folder / "summary.csv")
    return df
