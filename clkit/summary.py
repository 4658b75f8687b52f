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
    warn_if_environments_differ(folder)
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


def warn_if_environments_differ(folder) -> list[str]:
    """Warn (``UserWarning``; ``clkit summary`` prints it as a note) when the runs under ``folder`` were made
    by different clkit versions, commits, Pythons, libraries or machines (:func:`clkit.manifest.differences`
    of their ``results.json`` manifests); returns the lines.

    Examples
    --------
    >>> import json, tempfile, pathlib, warnings
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for name, torch in (("a", "2.14.1"), ("b", "2.11.0")):
    ...     (d / name).mkdir()
    ...     _ = (d / name / "results.json").write_text(json.dumps({"manifest": {"libraries": {"torch": torch}}}))
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     warn_if_environments_differ(d)
    ['torch: 2.14.1 (a), 2.11.0 (b)']
    >>> str(w[0].message).split(" environment: ")[1]
    'torch: 2.14.1 (a), 2.11.0 (b)'
    """
    import warnings

    from .manifest import differences

    manifests = {}
    for res in sorted(Path(folder).rglob("results.json")):
        try:
            manifests[str(res.parent.relative_to(folder)) or "."] = json.loads(res.read_text()).get("manifest")
        except (OSError, ValueError):
            continue
    lines = differences(manifests) if len(manifests) > 1 else []
    if lines:
        warnings.warn(f"the runs under {folder} were not made in one environment: " + "; ".join(lines),
                      UserWarning, stacklevel=2)
    return lines
