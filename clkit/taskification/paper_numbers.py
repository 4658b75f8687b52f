"""The taskification paper's own numbers (Tables 1-4), as printed, to set beside a run's tables.

Copied from "Temporal Taskification in Streaming Continual Learning: A Source of Evaluation
Instability" (arXiv 2604.21930, Sec. 5), CESNET-TimeSeries24, 100 IPs, the 9-, 30- and 44-day
taskifications:

=======  ================================================  =====================================
Table    what                                              unit and spread
=======  ================================================  =====================================
1        Average MSE, BWT, Forgetting per taskification    MSE x 10^3 (BWT and forgetting are
         and method (ER, EWC, Finetune, LwF); sample sd     differences of MSEs, same scale); no
         of each across the three taskifications           spread per cell (runs not stated)
2        D_prof between taskification pairs                mean ± sd across the 100 IPs; W1 of
                                                           standardised features (sd units)
3        plasticity, stability, BPS per taskification      mean ± sd across the 100 IPs, same
4        the same, every boundary shifted by 2 days        units as Table 2
=======  ================================================  =====================================

Table 2 is printed as a full matrix whose two triangles differ in one sd (9 days / 30 days:
0.85 ± 1.1 above the diagonal, 0.85 ± 1.2 below); both are kept as printed.

**The marking rule** (:func:`outside`): at paper scale (this run's data and stated settings are
the paper's: :func:`clkit.taskification.tables.differences` finds none, and no rehearsal) a clkit
mean is marked when ``|clkit - paper mean| > spread x paper sd`` (``spread`` 1: the paper prints
one sd). Table 1's cells carry no spread in the paper (its "Std." columns are across
taskifications, not runs), so no Table 1 cell is marked: its paper numbers are shown for
reading by eye. At teaching scale nothing is marked and the tables say the comparison is not
meaningful.
"""

from __future__ import annotations

import math

__all__ = ["PAPER", "UNITS", "TABLE1", "TABLE1_STD", "TABLE2", "TABLE3", "TABLE4", "PAPER_SPLITS", "paper_cell",
           "outside", "comparison_scale"]

#: the paper, as the tables cite it
PAPER = ("Temporal Taskification in Streaming Continual Learning: A Source of Evaluation Instability "
         "(arXiv 2604.21930)")

#: the taskifications the paper reports, clkit's split names
PAPER_SPLITS = ("9d", "30d", "44d")

#: the unit of each table's cells, as the headers say it
UNITS = {1: "MSE x 10^3", 2: "W1, sd units", 3: "W1, sd units", 4: "W1, sd units"}

#: Table 1: ``{row: {(metric, split): value}}``, metric ``avg_mse`` / ``bwt`` / ``forgetting``, MSE x 10^3
TABLE1 = {
    "ER": {("avg_mse", "9d"): 13.04, ("avg_mse", "30d"): 10.88, ("avg_mse", "44d"): 30.88,
           ("bwt", "9d"): 1.67, ("bwt", "30d"): 0.45, ("bwt", "44d"): -1.95,
           ("forgetting", "9d"): 0.20, ("forgetting", "30d"): -0.01, ("forgetting", "44d"): 2.15},
    "EWC": {("avg_mse", "9d"): 13.43, ("avg_mse", "30d"): 10.77, ("avg_mse", "44d"): 26.95,
            ("bwt", "9d"): 0.60, ("bwt", "30d"): 0.11, ("bwt", "44d"): 0.75,
            ("forgetting", "9d"): -0.03, ("forgetting", "30d"): -0.01, ("forgetting", "44d"): -0.27},
    "Finetune": {("avg_mse", "9d"): 12.58, ("avg_mse", "30d"): 10.58, ("avg_mse", "44d"): 30.38,
                 ("bwt", "9d"): 0.36, ("bwt", "30d"): 0.10, ("bwt", "44d"): -5.65,
                 ("forgetting", "9d"): 0.08, ("forgetting", "30d"): 0.11, ("forgetting", "44d"): 5.71},
    "LwF": {("avg_mse", "9d"): 12.57, ("avg_mse", "30d"): 10.52, ("avg_mse", "44d"): 27.04,
            ("bwt", "9d"): 0.89, ("bwt", "30d"): 0.21, ("bwt", "44d"): 0.62,
            ("forgetting", "9d"): 0.07, ("forgetting", "30d"): 0.10, ("forgetting", "44d"): -0.54},
}

#: Table 1's last three columns: the sample sd across the three taskifications, ``{row: (MSE, BWT, Fgt)}``
TABLE1_STD = {"ER": (10.98, 1.84, 1.19), "EWC": (8.68, 0.33, 0.14), "Finetune": (10.90, 3.40, 3.24),
              "LwF": (9.00, 0.34, 0.36)}

#: Table 2: ``{(row split, column split): (mean, sd)}`` as printed (both triangles)
TABLE2 = {("9d", "30d"): (0.85, 1.1), ("9d", "44d"): (1.19, 1.6),
          ("30d", "9d"): (0.85, 1.2), ("30d", "44d"): (0.75, 0.9),
          ("44d", "9d"): (1.19, 1.6), ("44d", "30d"): (0.75, 0.9)}

#: Table 3: ``{row: {split: (mean, sd)}}``, rows ``plasticity`` / ``stability`` / ``bps``
TABLE3 = {"plasticity": {"9d": (0.15, 0.16), "30d": (0.08, 0.09), "44d": (0.06, 0.08)},
          "stability": {"9d": (0.08, 0.10), "30d": (0.07, 0.07), "44d": (0.05, 0.07)},
          "bps": {"9d": (0.12, 0.13), "30d": (0.08, 0.08), "44d": (0.06, 0.07)}}

#: Table 4 (boundaries shifted by 2 days): as :data:`TABLE3`
TABLE4 = {"plasticity": {"9d": (0.15, 0.17), "30d": (0.11, 0.12), "44d": (0.06, 0.07)},
          "stability": {"9d": (0.08, 0.09), "30d": (0.09, 0.09), "44d": (0.05, 0.06)},
          "bps": {"9d": (0.12, 0.13), "30d": (0.10, 0.10), "44d": (0.05, 0.06)}}


def paper_cell(table: int, row, column) -> tuple | None:
    """``(mean, sd)`` of one of the paper's cells (sd ``None`` in Table 1), ``None`` where it prints none.

    ``row`` and ``column``: Table 1 a row label and ``(metric, split)``; Table 2 two splits; Tables 3
    and 4 ``plasticity`` / ``stability`` / ``bps`` and a split.

    Examples
    --------
    >>> paper_cell(1, "Finetune", ("bwt", "44d")), paper_cell(2, "30d", "9d"), paper_cell(4, "bps", "30d")
    ((-5.65, None), (0.85, 1.2), (0.1, 0.1))
    >>> paper_cell(3, "bps", "7d") is None, paper_cell(1, "Constant (training mean)", ("avg_mse", "9d")) is None
    (True, True)
    """
    if table == 1:
        v = TABLE1.get(row, {}).get(tuple(column))
        return None if v is None else (v, None)
    if table == 2:
        return TABLE2.get((row, column))
    if table in (3, 4):
        return (TABLE3 if table == 3 else TABLE4).get(row, {}).get(column)
    raise ValueError(f"table must be 1, 2, 3 or 4 (the taskification paper's), got {table!r}")


def outside(value: float, ref: tuple | None, spread: float = 1.0) -> bool:
    """Whether ``value`` lies outside the paper's ``mean ± spread x sd`` (False without a paper spread).

    Examples
    --------
    >>> outside(0.30, (0.15, 0.16)), outside(0.32, (0.15, 0.16)), outside(20.0, (13.04, None))
    (False, True, False)
    >>> outside(float("nan"), (0.1, 0.1)), outside(0.5, None)
    (False, False)
    """
    if ref is None or ref[1] is None or value is None or not math.isfinite(float(value)):
        return False
    return abs(float(value) - ref[0]) > spread * ref[1] + 1e-12


def comparison_scale(diffs, rehearsal: bool = False) -> str:
    """``"paper"`` when the run's data and the table's stated settings are the paper's (``diffs`` empty, no
    rehearsal), else ``"teaching"``.

    Examples
    --------
    >>> comparison_scale([]), comparison_scale(["num_series 4 (the paper: 100)"]), comparison_scale([], True)
    ('paper', 'teaching', 'teaching')
    """
    return "paper" if not list(diffs) and not rehearsal else "teaching"
