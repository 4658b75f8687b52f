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


#: columns that describe a run rather than measure it (kept on every long row, never melted)
ID_COLUMNS = ("run", "notebook", "case", "index", "key", "params_set", "status", "runtime_s", "error", "summary")


def long_table(df) -> "pandas.DataFrame":  # noqa: F821
    """The wide summary as tidy rows: one per run x numeric result, ``(run columns..., parameters...,
    metric, value)`` -- the shape seaborn, R's ggplot2 and SQL want.

    Parameters (``param.<name>`` columns and a sweep's grid columns) stay columns on every row; text
    results (closing paragraphs, sources) are left out, as are non-numeric and boolean values.

    Examples
    --------
    >>> import pandas as pd
    >>> wide = pd.DataFrame({"run": ["a", "b"], "param.seed": [0, 1], "acc": [0.5, 0.7], "bwt": [-0.1, -0.2],
    ...                      "summary": ["x", "y"]})
    >>> long_table(wide).to_dict("records")[:2]
    [{'run': 'a', 'param.seed': 0, 'metric': 'acc', 'value': 0.5}, {'run': 'a', 'param.seed': 0, 'metric': 'bwt', 'value': -0.1}]
    """
    import pandas as pd

    params = [c for c in df.columns if str(c).startswith("param.")] + list(df.attrs.get("grid_params", ()))
    ids = [c for c in df.columns if c in ID_COLUMNS and c not in ("error", "summary")] + \
        [c for c in params if c in df.columns]
    values = [c for c in df.columns if c not in ids and c not in ID_COLUMNS
              and pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]
    if not values:
        raise ValueError("the summary has no numeric result column to write as long rows")
    long = df[ids + values].melt(id_vars=ids, value_vars=values, var_name="metric", value_name="value")
    order = {c: i for i, c in enumerate(values)}
    long["_order"] = long["metric"].map(order)
    sort_by = [c for c in ("run", "index", "case") if c in long.columns] + ["_order"]
    return long.sort_values(sort_by, kind="stable").drop(columns="_order").reset_index(drop=True)
