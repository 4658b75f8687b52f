"""``clkit summary``: one table of the results of many runs or sweep cases (:mod:`clkit.summary`)."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["register"]

_PRINT_COLUMNS = 16


def register(sub) -> None:
    """Add ``summary`` to ``clkit``'s subparsers."""
    s = sub.add_parser("summary", help="one table of the results of many runs or sweep cases")
    s.add_argument("dir")
    s.add_argument("--group-by", nargs="+", default=None, metavar="COLUMN",
                   help="mean ± std of the results over the cases of each group (e.g. --group-by sigma)")
    s.add_argument("--columns", nargs="+", default=None, metavar="PATTERN",
                   help="result columns to print and group, as glob patterns (e.g. 'main.*.A_AUC')")
    s.add_argument("--long", action="store_true",
                   help="also write summary_long.csv: one row per run x numeric result (tidy, for seaborn / R)")
    s.set_defaults(func=_cmd_summary)


def _cmd_summary(args):
    import pandas as pd

    from ..summary import summarize
    from ..sweep import group_table, write_table
    from ..sweep.table import select_columns

    try:
        df = summarize(args.dir)
        if args.long:
            from ..summary import long_table

            long_path = Path(args.dir) / "summary_long.csv"
            write_table(long_table(df), long_path)
            print(f"[clkit] long rows -> {long_path}")
        shown = select_columns(df, args.columns) if args.columns else df
        grouped = None
        if args.group_by:
            grouped = group_table(shown, args.group_by)
            grouped_path = Path(args.dir) / f"summary_by_{'_'.join(args.group_by)}.csv"
            write_table(grouped, grouped_path)
    except ValueError as exc:   # nothing to summarise, or a bad --group-by / --columns: bad input
        print(f"[clkit] ERROR: {exc}", file=sys.stderr)
        return 2
    shown = whole_numbers_as_int(shown.drop(columns=["error"], errors="ignore"))
    with pd.option_context("display.max_columns", _PRINT_COLUMNS, "display.width", 200,
                           "display.max_colwidth", 60):
        print(shown.to_string(index=False, max_cols=_PRINT_COLUMNS))
        if grouped is not None:
            print(f"\nmean ± std over the completed cases of each {', '.join(args.group_by)}:")
            print(_mean_std(grouped, args.group_by).to_string(index=False, max_cols=_PRINT_COLUMNS))
    if shown.shape[1] > _PRINT_COLUMNS:
        print(f"\n({shown.shape[1]} columns, {_PRINT_COLUMNS} printed; pick results with --columns PATTERN, "
              "e.g. --columns '*A_AUC'; every column is in the files)")
    print(f"\nwritten: {Path(args.dir) / 'summary.csv'}" + (f" and {grouped_path}" if grouped is not None else ""))
    return 0


def whole_numbers_as_int(df):
    """``df`` with every float column whose values are all whole numbers (NaN aside) as pandas' nullable
    ``Int64``, so counts print as ``3``, not ``3.0`` (a missing value in a column makes pandas store its
    integers as floats; issue 55).

    Examples
    --------
    >>> import pandas as pd
    >>> whole_numbers_as_int(pd.DataFrame({"n": [3.0, float("nan")], "acc": [0.5, 1.0]})).dtypes.tolist()
    [Int64Dtype(), dtype('float64')]
    """
    import numpy as np

    out = df.copy()
    for col in out.columns:
        s = out[col]
        if s.dtype.kind == "f":
            v = s.to_numpy(dtype=float)
            finite = v[np.isfinite(v)]
            if finite.size and np.isnan(v).sum() + finite.size == v.size and (finite == np.round(finite)).all() \
                    and np.abs(finite).max() < 2 ** 53:
                out[col] = s.astype("Int64")
    return out


def _mean_std(grouped, group_by):
    """``x_mean``/``x_std`` column pairs as one ``"m ± s"`` text column each, for printing."""
    out = grouped[[*group_by, "n"]].copy()
    for col in grouped.columns:
        if col.endswith("_mean"):
            name = col[:-5]
            out[name] = [f"{m:.4g} ± {s:.2g}" for m, s in zip(grouped[col], grouped[f"{name}_std"])]
    return out
