"""The tidy table of a sweep: one row per case, grid parameters and results as columns.

Columns, in order: ``notebook``, ``case`` (its folder name, as ``sweep.json`` stores it:
``seed=1,sigma=3.0``, see :mod:`clkit.sweep.store`),
``index`` (grid order), ``status`` (ok / failed / pending), the varied
parameters under their own names (list values as JSON text, so the table stays
flat), the scalar results flattened with dots (``learners.erm.id``; lists such
as accuracy matrices, and levels deeper than ``DEPTH``, are left out), then
``runtime_s`` and ``error``. A result whose name equals a parameter's is
prefixed ``result.``.

``group_table`` gives mean and standard deviation (sample, ``ddof=1``; NaN for a
single case) of every numeric result over the completed cases of each group,
e.g. over seeds with ``group_by=["sigma"]``. Parameters are never averaged: the
grid's (kept in ``df.attrs["grid_params"]``) and ``param.*`` columns are left out.
"""

from __future__ import annotations

import json
from pathlib import Path

from .._io import atomic_save, atomic_write_text, flatten_scalars
from .store import case_dir, case_status, manifest_names, read_manifest

__all__ = ["find_sweeps", "sweep_table", "group_table", "write_table", "select_columns"]

META = ("notebook", "case", "index", "status")
DEPTH = 5  # nesting levels of results.json flattened into columns (metrics.<order>.<strategy>.ACC is 3)
TAIL = ("runtime_s", "error")


def find_sweeps(folder) -> list[Path]:
    """Sweep folders (holding ``sweep.json``) at or under ``folder``, sorted."""
    folder = Path(folder)
    return sorted(p.parent for p in folder.rglob("sweep.json"))


def _cell(value):
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def sweep_table(folder) -> "pandas.DataFrame":  # noqa: F821
    """One row per case of every sweep under ``folder`` (see module docstring).

    Raises ``ValueError`` when ``folder`` holds no ``sweep.json``.
    """
    import pandas as pd

    roots = find_sweeps(folder)
    if not roots:
        raise ValueError(f"no sweep (sweep.json) found under {folder}")
    rows, names = [], []
    for root in roots:
        manifest = read_manifest(root)
        names += [n for n in manifest["grid_params"] if n not in names]
        for c, name in zip(manifest["cases"], manifest_names(manifest)):
            st = case_status(root, c["key"], name)
            row = {"notebook": manifest["notebook"], "case": name,
                   "index": c["index"], "status": st["status"]}
            row.update({n: _cell(v) for n, v in c["values"].items()})
            res_path = case_dir(root, name) / "results.json"
            if st["status"] == "ok" and res_path.exists():
                results = flatten_scalars(json.loads(res_path.read_text()).get("results", {}), depth=DEPTH)
                row.update({(f"result.{k}" if k in row or k in names else k): v for k, v in results.items()})
            row.update(runtime_s=st.get("runtime_s"), error=st.get("error"))
            rows.append(row)
    df = pd.DataFrame(rows)
    results = [c for c in df.columns if c not in (*META, *names, *TAIL)]
    df = df[[*META, *[n for n in names if n in df.columns], *results, *TAIL]]
    df.attrs["grid_params"] = names
    return df


def group_table(df, group_by) -> "pandas.DataFrame":  # noqa: F821
    """Mean and std of numeric results per group of completed cases; ``n`` counts them.

    Raises ``ValueError`` naming the allowed columns when a ``group_by`` column
    is not in the table.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"notebook": "x", "case": ["a", "b", "c"], "index": [0, 1, 2], "status": "ok",
    ...                    "sigma": [1, 1, 2], "seed": [0, 1, 0], "acc": [0.5, 0.7, 0.9],
    ...                    "runtime_s": 1.0, "error": None})
    >>> df.attrs["grid_params"] = ["sigma", "seed"]  # as sweep_table sets it
    >>> group_table(df, ["sigma"])
       sigma  n  acc_mean   acc_std
    0      1  2       0.6  0.141421
    1      2  1       0.9       NaN
    """
    import pandas as pd

    group_by = [group_by] if isinstance(group_by, str) else list(group_by)
    allowed = [str(c) for c in df.columns if c not in (*META, *TAIL)]
    bad = [g for g in group_by if g not in df.columns or g in (*META, *TAIL)]
    if not group_by:
        raise ValueError("group_by must name at least one column of the table")
    if bad:
        raise ValueError(f"group_by: no column {bad[0]!r} in the table; {_closest(bad[0], allowed)}")
    params = set(df.attrs.get("grid_params", ())) | {c for c in df.columns if str(c).startswith("param.")}
    ok = df[df["status"] == "ok"]
    if ok.empty:
        failed = df[df["status"] != "ok"]
        first = failed["error"].dropna().astype(str).iloc[0] if "error" in failed and failed["error"].notna().any() \
            else "no error recorded"
        raise ValueError(f"none of the {len(df)} cases completed, so there is nothing to group by "
                         f"{', '.join(group_by)}; the first failure: {first[:300]}")
    values = [c for c in ok.columns if c not in (*META, *TAIL, *group_by) and c not in params
              and pd.api.types.is_numeric_dtype(ok[c]) and not pd.api.types.is_bool_dtype(ok[c])]
    grouped = ok.groupby(group_by, sort=True, dropna=False)
    stats = grouped[values].agg(["mean", "std"])
    stats.columns = [f"{c}_{s}" for c, s in stats.columns]
    return pd.concat([grouped.size().rename("n"), stats], axis=1).reset_index()


def write_table(df, path) -> list[Path]:
    """Write ``df`` as CSV at ``path`` and, when pyarrow is installed, Parquet beside it (atomically)."""
    path = Path(path)
    written = [atomic_write_text(path, df.to_csv(index=False))]
    try:
        import pyarrow  # noqa: F401
    except ImportError:  # pragma: no cover - pyarrow is a dependency, but optional here
        return written
    flat = df.copy()
    for col in flat.columns:  # mixed-type object columns (e.g. a parameter that is sometimes a list)
        if flat[col].dtype == object:
            flat[col] = flat[col].map(lambda v: v if v is None or isinstance(v, str) else json.dumps(v))
    written.append(atomic_save(path.with_suffix(".parquet"), lambda tmp: flat.to_parquet(tmp, index=False)))
    return written


def select_columns(df, patterns) -> "pandas.DataFrame":  # noqa: F821
    """Keep the identifying columns and the result columns matching any glob pattern.

    Raises ``ValueError`` when no result column matches.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"notebook": ["n"], "status": ["ok"], "sigma": [1.0], "main.er.A_AUC": [0.3],
    ...                    "main.er.AF_s": [-0.1], "runtime_s": [2.0]})
    >>> df.attrs["grid_params"] = ["sigma"]
    >>> list(select_columns(df, ["*A_AUC"]).columns)
    ['notebook', 'status', 'sigma', 'main.er.A_AUC', 'runtime_s']
    """
    from fnmatch import fnmatchcase

    params = set(df.attrs.get("grid_params", ())) | {c for c in df.columns if str(c).startswith("param.")}
    fixed = [c for c in df.columns if c in (*META, *TAIL, "run", "params_set") or c in params]
    chosen = [c for c in df.columns if c not in fixed and any(fnmatchcase(str(c), p) for p in patterns)]
    if not chosen:
        results = [str(c) for c in df.columns if c not in fixed]
        raise ValueError(f"columns: no result column matches {list(patterns)}; "
                         f"{_closest(str(patterns[0]), results, what='result columns')}")
    out = df[[c for c in df.columns if c in fixed or c in chosen]]
    out.attrs = dict(df.attrs)
    return out


def _closest(name: str, columns: list, what: str = "columns", shown: int = 10) -> str:
    """``closest: [...]; other columns: [...] and N more (every column is in summary.csv)``, short.

    The closest names by :func:`difflib.get_close_matches` (a name ending in, or
    containing, ``name`` counts as close too), then at most ``shown`` others.

    Examples
    --------
    >>> _closest("sigm", ["sigma", "seed"] + [f"m{i}" for i in range(20)], shown=3)
    "closest: ['sigma']; other columns: ['seed', 'm0', 'm1'] and 18 more (every column is in summary.csv)"
    """
    import difflib

    plain = {c.rsplit(".", 1)[-1]: c for c in columns}  # learners.erm.id matches "id"
    close = [c for c in columns if c.endswith(f".{name}") or (len(name) > 2 and name in c)][:5]
    close += [plain.get(c, c) for c in difflib.get_close_matches(name, [*columns, *plain], n=5, cutoff=0.6)]
    close = list(dict.fromkeys(close))[:5]
    others = [c for c in columns if c not in close]
    text = f"closest: {close}; " if close else ""
    more = f" and {len(others) - shown} more" if len(others) > shown else ""
    return (f"{text}{'other ' if close else ''}{what}: {others[:shown]}{more} "
            "(every column is in summary.csv)")
