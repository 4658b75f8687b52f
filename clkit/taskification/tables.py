"""The taskification paper's Tables 1-4 in the paper's own layout.

The paper (arXiv 2604.21930, Sec. 5) reports four tables on CESNET-TimeSeries24:

- **Table 1**: rows ER, EWC, Finetune, LwF; columns Average MSE ↓, BWT ↑ and Forgetting ↓ per
  taskification (9d 30d 44d), then "Std. across taskifications" (MSE Std., BWT Std., Fgt Std.,
  the sample standard deviation over the three splits); MSE x 10^3, two decimals.
- **Table 2**: D_prof between taskification pairs, rows and columns "9 days", "30 days",
  "44 days", the diagonal empty; mean ± sd across the 100 IPs, the mean with two decimals and
  the sd with one.
- **Tables 3 and 4**: rows Plasticity, Stability, BPS; columns "9 days", "30 days", "44 days"
  (Table 4: "9 days + Δ2 days", ...); mean ± sd across the 100 IPs, two decimals; the highest
  mean of each row in bold and the second highest in blue.

Each function here returns a :class:`PaperTable`: the paper's rows and columns first, in the
paper's order, with the paper's labels and rounding, then clkit's reference rows (no-learning
baselines, null stream), which the paper does not have and the note names. The note also says
where this run's data and settings are not the paper's (:func:`differences`) and what the
table cannot show (colour marks, cells that round to zero at the paper's decimals).

**Beside the paper's numbers.** Each :class:`PaperTable` also holds ``beside``: the same cells
with the paper's own number next to each (:mod:`clkit.taskification.paper_numbers`, transcribed
from the paper's Tables 1-4), every header naming its unit (MSE x 10^3; W1 in sd units of the
standardised features). At paper scale (:func:`differences` finds nothing: the paper's data and
stated settings) a clkit mean outside the paper's mean ± 1 sd ends in `` ✗`` (Tables 2-4; Table 1
prints no spread per cell, so nothing there is marked); at teaching scale the note says the
comparison is not meaningful and the paper's numbers are there for reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import paper_numbers as pn

__all__ = ["PaperTable", "PAPER_SETTINGS", "TABLE_SETTINGS", "PAPER_METHOD_ROWS", "differences", "table1", "table2",
           "bps_table", "split_label"]

#: the settings the paper states (Sec. 5.1), by notebook parameter; what it leaves unstated
#: (epochs, the 80/10/10 order, l_min, the neighbourhood's size, seeds) is not listed
PAPER_SETTINGS = {
    "dataset": "cesnet", "num_series": 100, "cl_series": 100, "window_days": [9, 30, 44],
    "offset_days": 2.0, "delta_days": 1.0, "alpha": 0.5, "beta": 0.5,
    "context_steps": 288, "stride": 1, "d_model": 32, "num_layers": 8, "num_heads": 4,
    "lr": 1e-4, "batch_size": 256, "patience": 10, "lr_patience": 5, "target_scaling": "task",
}

#: which of :data:`PAPER_SETTINGS` each table depends on
TABLE_SETTINGS = {
    1: ("dataset", "cl_series", "window_days", "context_steps", "stride", "d_model", "num_layers", "num_heads", "lr",
        "batch_size", "patience", "lr_patience", "target_scaling"),
    2: ("dataset", "num_series", "window_days", "alpha", "beta"),
    3: ("dataset", "num_series", "window_days", "delta_days", "alpha", "beta"),
    4: ("dataset", "num_series", "window_days", "offset_days", "delta_days", "alpha", "beta"),
}

#: Table 1's rows, in the paper's order (clkit's method labels)
PAPER_METHOD_ROWS = ["ER", "EWC", "Finetune", "LwF"]

_BASELINES = [("constant_mean", "Constant (training mean)"), ("persistence_mean", "Persistence (last value)")]


@dataclass(frozen=True)
class PaperTable:
    """One of the paper's tables as this run fills it.

    Attributes
    ----------
    number : int
        The paper's table number (1-4).
    frame : pandas.DataFrame
        Formatted cells (strings; ``""`` where the table has no value): the paper's rows and
        columns first, in its order, then clkit's reference rows.
    paper_rows : list of str
        The rows of ``frame`` that are the paper's.
    note : str
        Markdown: what the table shows, where this run differs from the paper, what it cannot show,
        and how it compares with the paper's numbers.
    beside : pandas.DataFrame, optional
        ``frame``'s cells with the paper's number beside each: every column of ``frame`` becomes a
        ``"clkit"`` and a ``"paper"`` column, under a header naming the unit; ``"-"`` where the paper
        prints nothing; a clkit cell outside the paper's spread ends in `` ✗`` (paper scale only).
    scale : str
        ``"paper"`` or ``"teaching"`` (:func:`clkit.taskification.paper_numbers.comparison_scale`).
    outside : list of str
        The marked cells, ``"row | column"``.
    """

    number: int
    frame: object
    paper_rows: list
    note: str
    beside: object = None
    scale: str = "teaching"
    outside: tuple = ()

    def record(self) -> dict:
        """For ``results.json``: ``columns`` (a column of several header levels is joined by " / "),
        ``index``, ``cells`` (row by row), ``paper_rows`` and ``note``."""
        cols = [" / ".join(c) if isinstance(c, tuple) else str(c) for c in self.frame.columns]
        out = {"columns": cols, "index": [str(i) for i in self.frame.index],
               "cells": self.frame.astype(str).values.tolist(), "paper_rows": list(self.paper_rows),
               "note": self.note, "scale": self.scale, "outside": list(self.outside)}
        if self.beside is not None:
            out["beside"] = {"columns": [" / ".join(map(str, c)) if isinstance(c, tuple) else str(c)
                                         for c in self.beside.columns],
                             "index": [str(i) for i in self.beside.index],
                             "cells": self.beside.astype(str).values.tolist()}
        return out


def split_label(name: str, offset_days: float | None = None) -> str:
    """The paper's column label of a split named like ``"9d"`` (Tables 2-4).

    Examples
    --------
    >>> split_label("9d"), split_label("1d"), split_label("44d", offset_days=2.0)
    ('9 days', '1 day', '44 days + Δ2 days')
    """
    if not isinstance(name, str) or not name.endswith("d"):
        raise ValueError(f"split name must look like '9d' (days), got {name!r}")
    days = name[:-1]
    label = f"{days} day" + ("" if days == "1" else "s")
    if offset_days is not None:
        label += f" + Δ{offset_days:g} day" + ("" if offset_days == 1 else "s")
    return label


def _fmt(v: float, decimals: int) -> str:
    s = f"{v:.{decimals}f}"
    return s[1:] if s.startswith("-") and float(s) == 0 else s   # no "-0.00"


def _pm(ref, sd_decimals: int = 2) -> str:
    """A paper cell as printed: ``"0.85 ± 1.1"``, ``"13.04"`` (no spread), ``"-"`` (none)."""
    if ref is None:
        return "-"
    mean, sd = ref
    return f"{mean:.2f}" + ("" if sd is None else f" ± {sd:.{sd_decimals}f}")


def _comparison_note(number: int, scale: str, marked: int, compared: int, *, spread_printed: bool = True) -> str:
    head = f"**Beside the paper's numbers** (Table {number} of {pn.PAPER}; {pn.UNITS[number]}): "
    if not compared:
        return head + "the paper prints no number for these splits or rows."
    if scale == "teaching":
        return head + ("teaching scale: this run's data or settings are not the paper's, so the comparison is not "
                       "meaningful; the paper's numbers are shown for reference only.")
    if not spread_printed:
        return head + ("paper scale; the paper prints no spread for this table's cells (its Std. columns are "
                       "across taskifications), so no cell is marked: read the two columns side by side.")
    return head + (f"paper scale: {marked} of {compared} clkit means lie outside the paper's mean ± 1 sd "
                   "(across its 100 IPs) and are marked ✗.")


def _beside(frame, table: int, lookup, scale: str, top: str, sd_decimals: int = 2):
    """``frame`` with a ``paper`` column beside each of its columns, under ``top`` (the unit), and the marks.

    ``lookup(row, column) -> (paper ref, clkit mean or None)``; returns ``(beside, outside, compared)``."""
    import pandas as pd

    cols = []
    for c in frame.columns:
        base = c if isinstance(c, tuple) else (top, c)
        cols += [(*base, "clkit"), (*base, "paper")]
    out = pd.DataFrame("", index=frame.index, columns=pd.MultiIndex.from_tuples(cols), dtype=object)
    marked, compared = [], 0
    for r in frame.index:
        for c in frame.columns:
            base = c if isinstance(c, tuple) else (top, c)
            ref, value = lookup(r, c)
            text = str(frame.loc[r, c])
            if ref is not None:
                compared += 1
                if scale == "paper" and pn.outside(value, ref):
                    text += " ✗"
                    marked.append(f"{r} | {' / '.join(map(str, c)) if isinstance(c, tuple) else c}")
            out.loc[r, (*base, "clkit")] = text
            out.loc[r, (*base, "paper")] = _pm(ref, sd_decimals) if ref is not None else ("-" if text else "")
    out.index.name = frame.index.name
    return out, tuple(marked), compared


def differences(params: dict, table: int, *, source: str = "", rehearsal: bool = False) -> list:
    """Where this run's data and settings are not the paper's, for one table.

    Parameters
    ----------
    params : dict
        The run's parameters (notebook names); keys it lacks are not compared.
    table : int
        The paper's table number, 1-4 (:data:`TABLE_SETTINGS`).
    source : str
        The data source as the loader names it.
    rehearsal : bool
        True when the data are a fabricated rehearsal database.

    Returns
    -------
    list of str
        One phrase per difference; empty when the table's data and stated settings are the paper's.

    Examples
    --------
    >>> differences({"dataset": "cesnet", "num_series": 4, "window_days": [9, 30, 44]}, 2)
    ['num_series 4 (the paper: 100)']
    >>> differences({"dataset": "synthetic"}, 3, source="synthetic CESNET-shaped stream")
    ['data: synthetic CESNET-shaped stream, not CESNET-TimeSeries24']
    """
    if table not in TABLE_SETTINGS:
        raise ValueError(f"table must be one of {sorted(TABLE_SETTINGS)}, got {table!r}")
    out = []
    if rehearsal:
        out.append("data: a fabricated CESNET-TimeSeries24 database (rehearsal), not the real one")
    elif "dataset" in params and params["dataset"] != PAPER_SETTINGS["dataset"]:
        out.append(f"data: {source or params['dataset']}, not CESNET-TimeSeries24")
    for key in TABLE_SETTINGS[table]:
        if key == "dataset" or key not in params:
            continue
        given, paper = params[key], PAPER_SETTINGS[key]
        same = (list(given) == list(paper)) if isinstance(paper, list) else given == paper
        if not same:
            out.append(f"{key} {given} (the paper: {paper})")
    if table == 1 and "epochs" in params and "patience" in params and params["epochs"] <= params["patience"]:
        out.append(f"epochs {params['epochs']} per task at most, so the paper's early stopping (after "
                   f"{params['patience']} epochs without improvement) never acts")
    return out


def _data_sentence(diffs) -> str:
    if not diffs:
        return "This run uses the paper's data and the settings the paper states for this table."
    return "**This run's data or settings are not the paper's**: " + "; ".join(diffs) + "."


def _ranks(means: dict) -> str:
    order = sorted(means, key=lambda c: -means[c])
    return f"{order[0]}" + (f" (second: {order[1]})" if len(order) > 1 else "")


def _check_names(names):
    names = list(names)
    if not names:
        raise ValueError(f"names must list at least one split, got {names}")
    for n in names:
        split_label(n)
    return names


def table1(cl_mean: dict, baselines: dict, methods, names, labels: dict, *, cl_seeds: int = 1,
           diffs=()) -> PaperTable:
    """The paper's Table 1: average MSE, BWT and forgetting per split, and their sd across splits.

    Parameters
    ----------
    cl_mean : dict
        ``{(method, split): {"avg_mse", "bwt", "forgetting"}}`` (seed means, MSE x 10^3).
    baselines : dict
        ``{split: {"constant_mean", "persistence_mean"}}``: the no-learning forecasters' average MSE.
    methods : list of str
        The run's learners; ``labels[m]`` names each row. Rows follow the paper's order
        (:data:`PAPER_METHOD_ROWS`), then other learners in run order, then the two baselines.
    names : list of str
        The splits (``"9d"``, ...), in column order.
    labels : dict
        Row label per method.
    cl_seeds : int
        Seeds averaged per cell (said in the note).
    diffs : list of str
        :func:`differences` for table 1.

    Returns
    -------
    PaperTable
        Columns ``("Average MSE ↓", split)``, ``("BWT ↑", split)``, ``("Forgetting ↓", split)``,
        ``("Std. across taskifications", "MSE Std." | "BWT Std." | "Fgt Std.")``; two decimals.
        The baselines have no BWT or forgetting (they are refitted on every task, not trained in sequence).

    Examples
    --------
    >>> m = {("naive", "9d"): {"avg_mse": 12.581, "bwt": 0.36, "forgetting": 0.08},
    ...      ("naive", "30d"): {"avg_mse": 10.58, "bwt": 0.10, "forgetting": 0.11}}
    >>> b = {"9d": {"constant_mean": 20.0, "persistence_mean": 15.0},
    ...      "30d": {"constant_mean": 18.0, "persistence_mean": 14.0}}
    >>> t = table1(m, b, ["naive"], ["9d", "30d"], {"naive": "Finetune"})
    >>> f = t.frame.loc["Finetune"]
    >>> f[("Average MSE ↓", "9d")], f[("Std. across taskifications", "MSE Std.")]
    ('12.58', '1.41')
    >>> list(t.frame.index)
    ['Finetune', 'Constant (training mean)', 'Persistence (last value)']
    """
    import pandas as pd

    names = _check_names(names)
    methods = list(methods)
    missing = [(m, n) for m in methods for n in names if (m, n) not in cl_mean]
    if missing:
        raise ValueError(f"cl_mean has no entry for (method, split) {missing[0]}")
    missing = [n for n in names if n not in baselines]
    if missing:
        raise ValueError(f"baselines has no split {missing[0]!r}")
    metrics = [("avg_mse", "Average MSE ↓", "MSE Std."), ("bwt", "BWT ↑", "BWT Std."),
               ("forgetting", "Forgetting ↓", "Fgt Std.")]
    std_head = "Std. across taskifications"
    columns = [(head, n) for _, head, _ in metrics for n in names] + [(std_head, s) for _, _, s in metrics]
    sd = (lambda v: _fmt(np.std(v, ddof=1), 2)) if len(names) > 1 else (lambda v: "")
    by_label = {labels[m]: m for m in methods}
    order = [r for r in PAPER_METHOD_ROWS if r in by_label] + [labels[m] for m in methods
                                                               if labels[m] not in PAPER_METHOD_ROWS]
    rows = {}
    for label in order:
        m = by_label[label]
        row = {}
        for key, head, std_label in metrics:
            vals = [cl_mean[(m, n)][key] for n in names]
            row.update({(head, n): _fmt(v, 2) for n, v in zip(names, vals)})
            row[(std_head, std_label)] = sd(vals)
        rows[label] = row
    for key, label in _BASELINES:
        vals = [baselines[n][key] for n in names]
        row = {c: "" for c in columns}
        row.update({("Average MSE ↓", n): _fmt(v, 2) for n, v in zip(names, vals)})
        row[(std_head, "MSE Std.")] = sd(vals)
        rows[label] = row
    frame = pd.DataFrame.from_dict(rows, orient="index")[pd.MultiIndex.from_tuples(columns)]
    frame.index.name = "Algorithm"
    absent = [r for r in PAPER_METHOD_ROWS if r not in by_label]
    note = ("**The paper's Table 1**: effect of the taskification on CL performance, MSE x 10^3 (lower is better "
            "for average MSE and forgetting, higher for BWT); the last three columns are the sample standard "
            f"deviation of each metric across this run's {len(names)} taskification(s) for a fixed algorithm. "
            f"Each cell is the mean over {cl_seeds} seed(s) (the paper does not say how many runs it averages). "
            "The last two rows are clkit's no-learning baselines, not in the paper: they are refitted on each "
            "task rather than trained in sequence, so they have no BWT or forgetting. "
            + (f"Rows of the paper not run here: {', '.join(absent)}. " if absent else "")
            + ("With one taskification there is no standard deviation across taskifications. "
               if len(names) < 2 else "")
            + _data_sentence(list(diffs)))
    scale = pn.comparison_scale(diffs)
    unit = pn.UNITS[1]
    renamed = frame.copy()
    renamed.columns = pd.MultiIndex.from_tuples([(f"{a} ({unit})", b) for a, b in frame.columns])
    metric_of = {head: key for key, head, _ in metrics}
    std_index = {std_label: i for i, (_, _, std_label) in enumerate(metrics)}
    full = list(names) == list(pn.PAPER_SPLITS)

    def lookup(r, c):
        head, sub = c[0].rsplit(" (", 1)[0], c[1]
        if r not in pn.TABLE1:
            return None, None
        if head == std_head:
            if not full:
                return None, None
            return (pn.TABLE1_STD[r][std_index[sub]], None), None
        return pn.paper_cell(1, r, (metric_of[head], sub)), cl_mean[(by_label[r], sub)][metric_of[head]]

    beside, marked, compared = _beside(renamed, 1, lookup, scale, "")
    note += " " + _comparison_note(1, scale, len(marked), compared, spread_printed=False)
    return PaperTable(1, frame, [r for r in order if r in PAPER_METHOD_ROWS], note, beside, scale, marked)


def table2(dprof: dict, names, *, num_series: int, diffs=()) -> PaperTable:
    """The paper's Table 2: D_prof between every pair of taskifications, mean ± sd across series.

    Parameters
    ----------
    dprof : dict
        ``{"a|b": {"mean", "std"}}`` for every ordered pair of distinct splits
        (:func:`clkit.taskification.report.profile_distance_table`).
    names : list of str
        The splits, in row and column order.
    num_series : int
        Series the mean and sd are over (the paper: 100 IPs).
    diffs : list of str
        :func:`differences` for table 2.

    Returns
    -------
    PaperTable
        Rows and columns ``"9 days"``, ...; the diagonal empty; ``mean ± sd`` with the mean to
        two decimals and the sd to one, as the paper prints them.

    Examples
    --------
    >>> d = {"9d|30d": {"mean": 0.854, "std": 1.14}, "30d|9d": {"mean": 0.854, "std": 1.14}}
    >>> table2(d, ["9d", "30d"], num_series=100).frame
               9 days   30 days
    9 days             0.85 ± 1.1
    30 days  0.85 ± 1.1
    """
    import pandas as pd

    names = _check_names(names)
    if not isinstance(num_series, (int, np.integer)) or num_series < 1:
        raise ValueError(f"num_series must be a positive integer, got {num_series!r}")
    labels = [split_label(n) for n in names]
    frame = pd.DataFrame("", index=labels, columns=labels)
    small = 0
    for a in names:
        for b in names:
            if a == b:
                continue
            key = f"{a}|{b}"
            if key not in dprof:
                raise ValueError(f"dprof has no pair {key!r}")
            mean, std = dprof[key]["mean"], dprof[key]["std"]
            small += float(_fmt(mean, 2)) == 0
            frame.loc[split_label(a), split_label(b)] = f"{_fmt(mean, 2)} ± {_fmt(std, 1)}"
    note = (f"**The paper's Table 2**: D_prof (Eq. 2) mean ± standard deviation across {num_series} series "
            "(the paper: 100 IPs) for each pair of taskifications, at the paper's rounding (mean to two decimals, "
            "sd to one). "
            + (f"{small} of the {len(names) * (len(names) - 1)} means round to 0.00 at that rounding; section 4's "
               "table and results.json (`d_prof`) hold them unrounded. " if small else "")
            + _data_sentence(list(diffs)))
    scale = pn.comparison_scale(diffs)
    name_of = {split_label(n): n for n in names}

    def lookup(r, c):
        a, b = name_of[r], name_of[c]
        if a == b:
            return None, None
        return pn.paper_cell(2, a, b), dprof[f"{a}|{b}"]["mean"]

    beside, marked, compared = _beside(frame, 2, lookup, scale, f"D_prof ({pn.UNITS[2]})", sd_decimals=1)
    note += " " + _comparison_note(2, scale, len(marked), compared)
    return PaperTable(2, frame, labels, note, beside, scale, marked)


def bps_table(rows: dict, names, *, null: dict | None = None, offset_days: float | None = None,
              num_series: int, diffs=()) -> PaperTable:
    """The paper's Table 3 (``offset_days=None``) or Table 4 (boundaries shifted by ``offset_days``).

    Parameters
    ----------
    rows : dict
        Per split: ``plasticity``, ``stability``, ``bps`` and their ``*_std`` across series
        (``bps_tables(...)["aligned"]`` or ``["shifted"]``).
    names : list of str
        The splits, in column order.
    null : dict, optional
        Per split: ``bps`` and ``bps_std`` of the null stream (``bps_tables(...)["null"]``); adds
        clkit's rows "null BPS" and "BPS / null" below the paper's three.
    offset_days : float, optional
        The shift of Table 4 (column labels ``"9 days + Δ2 days"``); None for Table 3.
    num_series : int
        Series the mean and sd are over (the paper: 100 IPs).
    diffs : list of str
        :func:`differences` for table 3 or 4.

    Returns
    -------
    PaperTable
        Rows Plasticity, Stability, BPS (then the null rows); ``mean ± sd`` to two decimals. The note
        names, per row, the split of the highest mean (the paper's bold) and the second (its blue).

    Examples
    --------
    >>> r = {"9d": {"plasticity": 0.151, "plasticity_std": 0.16, "stability": 0.08, "stability_std": 0.1,
    ...             "bps": 0.12, "bps_std": 0.13},
    ...      "30d": {"plasticity": 0.08, "plasticity_std": 0.09, "stability": 0.07, "stability_std": 0.07,
    ...              "bps": 0.08, "bps_std": 0.08}}
    >>> t = bps_table(r, ["9d", "30d"], num_series=100)
    >>> t.frame
                     9 days      30 days
    Plasticity  0.15 ± 0.16  0.08 ± 0.09
    Stability   0.08 ± 0.10  0.07 ± 0.07
    BPS         0.12 ± 0.13  0.08 ± 0.08
    >>> t.number, bps_table(r, ["9d", "30d"], offset_days=2, num_series=100).frame.columns[0]
    (3, '9 days + Δ2 days')
    """
    import pandas as pd

    names = _check_names(names)
    if not isinstance(num_series, (int, np.integer)) or num_series < 1:
        raise ValueError(f"num_series must be a positive integer, got {num_series!r}")
    if offset_days is not None and not offset_days > 0:
        raise ValueError(f"offset_days must be > 0 (Table 4) or None (Table 3), got {offset_days!r}")
    for n in names:
        if n not in rows:
            raise ValueError(f"rows has no split {n!r}")
        if null is not None and n not in null:
            raise ValueError(f"null has no split {n!r}")
    cols = {n: split_label(n, offset_days) for n in names}
    paper_rows = [("plasticity", "Plasticity"), ("stability", "Stability"), ("bps", "BPS")]
    cells, marks, small = {}, [], 0
    for key, label in paper_rows:
        cells[label] = {cols[n]: f"{_fmt(rows[n][key], 2)} ± {_fmt(rows[n][f'{key}_std'], 2)}" for n in names}
        small += sum(float(_fmt(rows[n][key], 2)) == 0 for n in names)
        marks.append(f"{label} {_ranks({cols[n]: rows[n][key] for n in names})}")
    if null is not None:
        cells["null BPS"] = {cols[n]: f"{_fmt(null[n]['bps'], 2)} ± {_fmt(null[n]['bps_std'], 2)}" for n in names}
        cells["BPS / null"] = {cols[n]: _fmt(rows[n]["bps"] / null[n]["bps"], 2) for n in names}
    frame = pd.DataFrame.from_dict(cells, orient="index")[[cols[n] for n in names]]
    number = 3 if offset_days is None else 4
    what = ("" if offset_days is None else f" after shifting all task boundaries by {offset_days:g} day"
            + ("" if offset_days == 1 else "s"))
    note = (f"**The paper's Table {number}**: mean ± standard deviation of plasticity, stability and BPS across "
            f"{num_series} series (the paper: 100 IPs){what}, two decimals. The paper marks the highest mean of "
            "each row in bold and the second highest in blue; here: highest "
            + "; ".join(marks) + ". "
            + ("The rows \"null BPS\" (the same split on the series shuffled in time) and \"BPS / null\" are "
               "clkit's reference, not in the paper. " if null is not None else "")
            + (f"{small} of the paper's {3 * len(names)} means round to 0.00 at two decimals; section 5's table "
               "and results.json hold them unrounded. " if small else "")
            + _data_sentence(list(diffs)))
    scale = pn.comparison_scale(diffs)
    key_of = {label: key for key, label in paper_rows}
    name_of = {cols[n]: n for n in names}

    def lookup(r, c):
        if r not in key_of:
            return None, None
        n = name_of[c]
        return pn.paper_cell(number, key_of[r], n), rows[n][key_of[r]]

    beside, marked, compared = _beside(frame, number, lookup, scale, f"mean ± sd ({pn.UNITS[number]})")
    note += " " + _comparison_note(number, scale, len(marked), compared)
    return PaperTable(number, frame, [label for _, label in paper_rows], note, beside, scale, marked)
