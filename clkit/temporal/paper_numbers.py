"""The paper's own Tables 1-2 (Iovine, Ziffer & Della Valle), as printed, to set beside a run's numbers.

Table 1 (FMoW-Time) and Table 2 (Yearbook, 1930-2013) are copied from the paper's text
(its Sect. 5.3-5.4) with their units: accuracies and TAS
in percent, SH and DH in years, one decimal. **The paper reports no spread**: one number per
cell, no seeds, standard deviations or intervals (Wild-Time's scripts run one seed,
``--random_seed=1``). So :data:`PAPER_SPREAD` is ``None`` for every cell, and a run cannot be
checked against "the paper's spread". What :func:`beside_paper` does instead, at paper scale:
it marks a cell when the paper's value lies outside the run's own mean ± 2 sd over its
training seeds (``OUTSIDE_SD``) -- the paper's number is then unlikely under the run's seed
variation. A cell with one seed has no spread and is not judged (said so, not marked).
At teaching scale (other data, or a cut-down run) nothing is judged: the table says the
comparison is not meaningful and shows the paper's numbers for reference.

Learners: Table 1 has MoCo, SI, CORAL, ERM, A-GEM and FT (the text says "six evaluated
models"; EWC is not in it), Table 2 adds EWC (:data:`clkit.temporal.tables.PAPER_LAYOUTS`).
"""

from __future__ import annotations

import numpy as np

from .tables import PAPER_LAYOUTS, PaperTable

__all__ = ["PAPER_TABLES", "PAPER_SPREAD", "OUTSIDE_SD", "beside_paper", "beside_note", "beside_record"]

_T1_COLS = ("ID", "OOD", "TAS", "SH", "DH")
_T1 = {"MoCo": (32.8, 21.3, 63.4, 2.9, 6.1), "SI": (30.8, 26.8, 80.1, 4.8, 6.0), "CORAL": (30.9, 24.8, 74.2, 4.9, 6.5),
       "ERM": (31.9, 25.7, 74.6, 4.5, 6.7), "A-GEM": (16.2, 6.9, 42.9, 1.7, 6.3), "FT": (32.5, 27.1, 75.9, 5.1, 6.4)}
_T2_COLS = ("ID Avg", "OOD Avg", "OOD Min", "TAS Avg", "TAS Min")
_T2 = {"MoCo": (95.0, 92.8, 76.8, 97.8, 89.3), "SI": (93.8, 90.9, 73.3, 96.2, 75.8),
       "CORAL": (91.0, 87.5, 61.3, 96.3, 82.5), "EWC": (95.2, 92.6, 70.3, 96.4, 72.9),
       "ERM": (94.7, 91.8, 70.3, 96.8, 73.1), "A-GEM": (90.4, 87.2, 56.5, 96.2, 61.0),
       "FT": (95.4, 92.4, 70.3, 96.2, 72.9)}

#: layout -> {paper label: {column: value}}; percent for accuracies and TAS, years for SH and DH
PAPER_TABLES = {"fmow": {m: dict(zip(_T1_COLS, v)) for m, v in _T1.items()},
                "yearbook": {m: dict(zip(_T2_COLS, v)) for m, v in _T2.items()}}

#: the paper's spread per layout: none reported (one number per cell)
PAPER_SPREAD = {"fmow": None, "yearbook": None}

#: at paper scale a cell is marked when the paper's value is further than this many of the run's sd from its mean
OUTSIDE_SD = 2.0


def _unit(kind: str, horizon_unit: str) -> tuple:
    return (100.0, "%") if kind == "%" else (1.0, " y" if horizon_unit == "y" else f" {horizon_unit}")


def beside_paper(table: PaperTable, *, paper_scale: bool):
    """The run's table with the paper's number beside each cell, and at paper scale a mark where they disagree.

    Parameters
    ----------
    table : PaperTable
        From :func:`clkit.temporal.tables.paper_table` (its ``layout`` picks the paper's table).
    paper_scale : bool
        The run is the paper's experiment (its dataset, its settings, all of the data). False:
        no cell is judged (the "vs paper" column says "not comparable").

    Returns
    -------
    pandas.DataFrame
        Rows: the paper's learners present in the run (in its order); columns: for each of the
        paper's headers, ``(header, "clkit")``, ``(header, "paper")``, ``(header, "vs paper")``.
        "vs paper" is ``"outside ±2 sd"`` (marked), ``"within ±2 sd"``, ``"one seed: not judged"``
        or ``"not comparable"`` (teaching scale). Baseline rows are left out (the paper has none).

    Examples
    --------
    >>> from clkit.temporal.tables import paper_table
    >>> rows = {"finetune": {"id": 0.30, "ood": 0.27, "tas": 0.76, "sh": 5.0, "dh": 6.0}}
    >>> per = {"finetune": [{"id": 0.30, "ood": 0.20}, {"id": 0.34, "ood": 0.22}, {"id": 0.32, "ood": 0.21}]}
    >>> t = paper_table(rows, "fmow", per_seed=per, seeds=[0, 1, 2], horizon_unit="y")
    >>> b = beside_paper(t, paper_scale=True)
    >>> b.loc["FT", ("ID", "paper")], b.loc["FT", ("ID", "vs paper")], b.loc["FT", ("OOD", "vs paper")]
    ('32.5%', 'within ±2 sd', 'outside ±2 sd')
    >>> b.loc["FT", ("TAS", "vs paper")], beside_paper(t, paper_scale=False).loc["FT", ("ID", "vs paper")]
    ('one seed: not judged', 'not comparable')
    """
    import pandas as pd

    if not isinstance(table, PaperTable):
        raise TypeError(f"table must be a PaperTable (clkit.temporal.tables.paper_table), got {type(table).__name__}")
    if not isinstance(paper_scale, bool):
        raise TypeError(f"paper_scale must be a bool, got {paper_scale!r}")
    _, order, columns = PAPER_LAYOUTS[table.layout]
    paper = PAPER_TABLES[table.layout]
    labels = [label for _, label in order if label in table.mean.index]
    cols = pd.MultiIndex.from_tuples([(h, w) for h, _, _ in columns for w in ("clkit", "paper", "vs paper")])
    out = pd.DataFrame(index=pd.Index(labels, name="Model"), columns=cols, dtype=object)
    shown = table.formatted()
    for label in labels:
        for head, _, kind in columns:
            scale, unit = _unit(kind, table.horizon_unit)
            ref = paper[label][head]
            out.loc[label, (head, "clkit")] = shown.loc[label, head]
            out.loc[label, (head, "paper")] = f"{ref:.1f}{unit}"
            m, s, k = table.mean.loc[label, head], table.sd.loc[label, head], table.n.loc[label, head]
            if not paper_scale:
                verdict = "not comparable"
            elif k < 2 or not np.isfinite(s) or not np.isfinite(m):
                verdict = "one seed: not judged"
            else:
                far = abs(ref / scale - m) > OUTSIDE_SD * s
                verdict = f"outside ±{OUTSIDE_SD:g} sd" if far else f"within ±{OUTSIDE_SD:g} sd"
            out.loc[label, (head, "vs paper")] = verdict
    return out


def beside_note(table: PaperTable, *, paper_scale: bool, why: str = "") -> str:
    """The sentence under :func:`beside_paper`'s table: what the paper's column is and what a mark means.

    Examples
    --------
    >>> from clkit.temporal.tables import paper_table
    >>> t = paper_table({"finetune": {"id": .3, "ood": .2, "tas": .7, "sh": 5.0, "dh": 6.0}}, "fmow")
    >>> beside_note(t, paper_scale=False, why="rainfall, not FMoW").split(':')[0]
    'Teaching scale (rainfall, not FMoW)'
    """
    common = (f"The paper column is copied from {table.title} as printed; the paper reports no spread (one number per "
              "cell, one run per method), so no cell can be checked against a spread of the paper's.")
    if not paper_scale:
        return (f"Teaching scale{f' ({why})' if why else ''}: the comparison with the paper is not meaningful; the "
                f"paper's numbers are shown for reference only. {common}")
    marked = int((beside_paper(table, paper_scale=True).xs("vs paper", axis=1, level=1) == f"outside ±{OUTSIDE_SD:g} sd")
                 .to_numpy().sum())
    return (f"Paper scale: {common} A cell is marked \"outside ±{OUTSIDE_SD:g} sd\" when the paper's value lies "
            f"further than {OUTSIDE_SD:g} of this run's standard deviations (over its training seeds) from this "
            f"run's mean; cells with one seed are not judged. {marked} cell{'s' if marked != 1 else ''} marked.")


def beside_record(table: PaperTable, *, paper_scale: bool) -> dict:
    """JSON-ready :func:`beside_paper`: ``{layout, paper_scale, marked, rows: {label: {column: {clkit, paper, vs_paper}}}}``.

    Examples
    --------
    >>> from clkit.temporal.tables import paper_table
    >>> t = paper_table({"finetune": {"id": .3, "ood": .2, "tas": .7, "sh": 5.0, "dh": 6.0}}, "fmow")
    >>> beside_record(t, paper_scale=False)["rows"]["FT"]["ID"]
    {'clkit': '30.0%', 'paper': '32.5%', 'vs_paper': 'not comparable'}
    """
    paper_scale = bool(paper_scale)
    b = beside_paper(table, paper_scale=paper_scale)
    heads = list(dict.fromkeys(h for h, _ in b.columns))
    rows = {label: {h: {"clkit": b.loc[label, (h, "clkit")], "paper": b.loc[label, (h, "paper")],
                        "vs_paper": b.loc[label, (h, "vs paper")]} for h in heads} for label in b.index}
    marked = sum(c["vs_paper"].startswith("outside") for r in rows.values() for c in r.values())
    return {"layout": table.layout, "paper_scale": paper_scale, "marked": marked, "paper_spread": None, "rows": rows}
