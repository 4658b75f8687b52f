"""The DRIFT paper's own numbers (Tables 2-10), as printed, to set beside a run's tables.

Copied from the paper's text (its Tables 2-10): every cell ``mean ± std`` in
percent over the paper's 3 seeds (Table 10's last column, ΔA_AUC, in points, no spread;
Joint's forgetting printed as ``-``, held as None). Columns as the paper prints them:

=======  ===========================================  ==========================================
Table    setting                                      columns
=======  ===========================================  ==========================================
2        Gaussian mixing, main σ, GCN                 per dataset (Arxiv, CoraFull, Reddit,
                                                      RomanEmpire): A_AUC, AF_s
3        hard transitions                             per dataset: AA, AF
4        Gaussian mixing, GAT and GIN backbones       per dataset (Arxiv, CoraFull, RomanEmpire)
                                                      rows; per backbone: A_AUC, AF_s
5 / 6    σ sweep, CoraFull (σ 3, 10, 20) /            per σ: A_AUC, AF_s
         RomanEmpire (σ 20, 40, 120)
7 / 8    global mixing p = 10 % / 30 %                per dataset: AA, AF
9        boundary-local mixing, K = 5                 per dataset: AA, AF
10       Arxiv, Gaussian σ = 60, B = 10 and 20        per B: A_AUC, AF_s; ΔA_AUC
=======  ===========================================  ==========================================

:func:`beside_paper` sets a :class:`clkit.drift.tables.PaperTable` beside these numbers. At
teaching scale (a synthetic or small graph, a rehearsal) the comparison is not meaningful: the
table says so and shows the paper's numbers for reference only. At paper scale (one of the
paper's four graphs, not rehearsed) a cell whose mean lies outside the paper's reported
spread, ``paper mean ± spread × paper std`` (``spread`` 1 by default: the paper reports one
std), is marked. A choice, stated: the paper's std is over 3 seeds and clkit's over its own
seeds, so a mark says "outside what the paper printed", not "significantly different".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import pandas as pd

from .tables import METHOD_LABELS

__all__ = ["PAPER_DATASETS", "PAPER_SIGMAS", "PAPER_BATCH_SIZES", "paper_cell", "comparison_scale",
           "Comparison", "beside_paper"]

#: clkit dataset name -> the paper's column label, in the paper's column order
PAPER_DATASETS = {"ogbn_arxiv": "Arxiv-CL", "corafull": "CoraFull-CL", "reddit": "Reddit-CL",
                  "roman_empire": "RomanEmpire-CL"}
#: the σ of Tables 5 (CoraFull) and 6 (RomanEmpire)
PAPER_SIGMAS = {"corafull": (3.0, 10.0, 20.0), "roman_empire": (20.0, 40.0, 120.0)}
#: Table 10's batch sizes (Arxiv-CL)
PAPER_BATCH_SIZES = (10, 20)

# As printed, mean and std in %: rows in the paper's order; columns as the table above.
_T2 = {
    "bare": ((18.5, 1.5), (-65.4, 3.1), (21.9, 0.8), (-60.5, 7.3), (35.3, 4.2), (-35.0, 6.5), (39.0, 0.6), (-28.8, 3.6)),
    "joint": ((71.6, 1.4), None, (86.3, 0.1), None, (98.0, 0.1), None, (69.2, 1.1), None),
    "agem": ((34.1, 1.4), (-48.6, 4.4), (29.9, 2.8), (-53.9, 4.8), (34.4, 0.9), (-53.1, 9.1), (47.1, 0.5), (-21.7, 3.8)),
    "er": ((34.9, 0.8), (-37.3, 2.8), (27.8, 0.6), (-48.0, 5.2), (39.9, 0.2), (-40.6, 2.9), (43.6, 0.4), (-17.5, 3.0)),
    "gss": ((24.2, 3.2), (-60.4, 5.6), (29.3, 1.4), (-55.3, 0.1), (27.9, 2.0), (-55.5, 1.0), (46.4, 1.0), (-13.2, 2.2)),
    "mas_star": ((38.4, 2.1), (-22.2, 1.8), (29.8, 2.2), (-44.8, 8.0), (21.6, 2.4), (-83.5, 1.2), (43.0, 1.7), (-16.3, 2.1)),
    "ssm": ((28.0, 4.3), (-64.5, 1.9), (25.4, 2.2), (-58.4, 3.8), (38.0, 1.6), (-45.3, 8.9), (42.2, 1.0), (-23.1, 4.1)),
    "sem": ((26.8, 1.0), (-59.7, 6.9), (27.5, 1.9), (-58.4, 2.6), (34.4, 3.8), (-47.0, 7.8), (42.8, 2.0), (-29.0, 6.5)),
    "dmsg": ((31.6, 0.9), (-31.9, 2.9), (34.1, 1.0), (-37.6, 3.5), (39.2, 1.2), (-47.0, 7.3), (43.8, 1.3), (-7.2, 4.2)),
}
_T3 = {
    "bare": ((12.2, 2.2), (-79.7, 0.9), (14.1, 1.3), (-75.3, 2.0), (28.3, 2.8), (-66.1, 8.1), (49.4, 2.1), (-40.9, 2.7)),
    "agem": ((28.2, 1.6), (-65.3, 1.8), (28.6, 5.4), (-62.5, 5.3), (25.2, 7.1), (-70.3, 5.2), (49.9, 9.0), (-40.5, 9.0)),
    "er": ((47.5, 0.8), (-42.9, 0.9), (39.5, 5.9), (-52.3, 5.6), (55.9, 8.2), (-42.8, 8.1), (59.2, 1.4), (-29.1, 1.1)),
    "gss": ((28.7, 0.9), (-64.1, 0.9), (37.5, 3.4), (-55.0, 3.2), (55.6, 3.6), (-43.5, 3.4), (68.3, 1.5), (-20.7, 1.3)),
    "mas_star": ((55.5, 6.0), (-35.0, 5.9), (17.0, 1.1), (-73.3, 1.4), (49.9, 1.2), (-48.7, 1.5), (47.7, 7.1), (-42.4, 6.4)),
    "ssm": ((27.5, 5.8), (-65.8, 5.9), (20.5, 3.1), (-69.8, 3.0), (40.9, 6.3), (-57.2, 6.1), (46.6, 5.9), (-43.9, 5.9)),
    "sem": ((27.9, 1.6), (-65.4, 1.5), (16.6, 4.2), (-74.7, 4.9), (44.6, 9.2), (-53.6, 9.2), (47.6, 2.9), (-43.1, 3.2)),
    "dmsg": ((42.0, 2.3), (-29.2, 2.3), (59.9, 1.6), (-21.7, 2.5), (28.4, 4.2), (-50.4, 7.7), (47.3, 3.8), (-10.0, 2.5)),
}
_T7 = {
    "bare": ((11.5, 0.9), (-80.3, 0.6), (7.2, 1.4), (-76.3, 1.0), (52.8, 3.9), (-42.6, 4.1), (18.2, 2.5), (-71.4, 2.6)),
    "agem": ((15.6, 1.0), (-76.7, 1.3), (29.2, 3.4), (-56.4, 3.4), (53.6, 2.1), (-41.7, 1.9), (23.3, 1.4), (-66.0, 1.4)),
    "er": ((22.0, 1.1), (-67.0, 2.0), (34.6, 6.3), (-51.5, 6.3), (55.2, 7.6), (-40.0, 7.9), (31.5, 1.0), (-54.5, 1.9)),
    "gss": ((19.0, 1.4), (-72.1, 1.5), (30.6, 8.3), (-60.5, 7.5), (54.5, 0.8), (-41.0, 0.8), (34.3, 0.8), (-52.2, 0.4)),
    "mas_star": ((14.1, 0.8), (-77.7, 0.4), (8.2, 2.9), (-76.2, 1.0), (45.0, 5.1), (-50.4, 6.6), (17.3, 1.8), (-72.1, 2.0)),
    "ssm": ((14.6, 1.1), (-77.6, 1.1), (9.2, 2.4), (-78.4, 3.8), (55.4, 4.5), (-39.3, 4.7), (21.2, 2.1), (-68.1, 1.7)),
    "sem": ((14.3, 1.0), (-78.1, 0.7), (13.0, 5.2), (-75.4, 7.1), (60.2, 3.1), (-35.4, 3.1), (22.1, 0.9), (-67.5, 1.4)),
    "dmsg": ((23.8, 0.0), (-48.5, 1.7), (49.0, 1.1), (-28.4, 2.7), (53.4, 3.7), (-39.3, 4.6), (36.6, 1.2), (-15.4, 3.0)),
}
_T8 = {
    "bare": ((22.6, 1.0), (-65.0, 2.1), (14.4, 2.8), (-74.6, 2.3), (79.1, 4.0), (-14.0, 3.7), (31.8, 3.7), (-55.4, 4.1)),
    "agem": ((25.8, 0.5), (-61.0, 1.1), (32.6, 6.0), (-57.8, 5.8), (76.9, 3.6), (-16.5, 4.0), (34.8, 0.2), (-51.2, 1.2)),
    "er": ((28.1, 0.6), (-54.9, 2.3), (49.0, 2.2), (-40.7, 1.1), (74.0, 4.2), (-19.9, 3.0), (39.0, 1.3), (-41.9, 1.3)),
    "gss": ((27.2, 0.9), (-58.1, 1.3), (42.4, 0.7), (-48.1, 1.6), (81.3, 3.8), (-11.1, 4.8), (43.7, 3.1), (-36.5, 4.7)),
    "mas_star": ((22.5, 1.9), (-64.7, 2.8), (13.9, 3.1), (-75.3, 2.0), (78.4, 2.3), (-14.6, 2.7), (31.9, 3.8), (-55.1, 4.1)),
    "ssm": ((24.0, 0.5), (-63.4, 1.4), (20.2, 4.2), (-71.0, 4.5), (79.0, 4.4), (-13.9, 3.6), (31.0, 2.5), (-55.0, 3.3)),
    "sem": ((23.6, 0.1), (-64.0, 0.9), (21.5, 5.4), (-69.7, 5.1), (81.4, 1.9), (-12.3, 2.2), (31.9, 3.3), (-54.4, 2.2)),
    "dmsg": ((24.8, 2.0), (-43.2, 2.3), (52.2, 0.1), (-23.9, 2.0), (76.6, 6.4), (-16.2, 6.4), (34.7, 1.6), (-16.3, 1.7)),
}
_T9 = {
    "bare": ((24.8, 6.0), (-66.6, 7.9), (19.9, 2.9), (-69.1, 3.9), (23.8, 2.7), (-63.3, 1.5), (31.4, 2.3), (-58.3, 2.4)),
    "agem": ((27.6, 3.1), (-63.2, 2.4), (37.7, 7.6), (-51.3, 7.7), (27.8, 7.1), (-63.8, 6.4), (51.5, 6.3), (-38.9, 6.7)),
    "er": ((46.5, 2.2), (-39.9, 2.4), (47.0, 1.5), (-40.1, 2.1), (53.6, 9.2), (-40.2, 8.5), (55.1, 4.3), (-31.1, 3.5)),
    "gss": ((28.8, 2.1), (-56.9, 1.9), (42.9, 4.0), (-48.1, 4.6), (43.5, 1.0), (-48.2, 2.9), (67.7, 1.6), (-18.3, 1.6)),
    "mas_star": ((41.7, 4.6), (-46.6, 4.4), (25.9, 3.5), (-62.4, 4.0), (58.8, 9.9), (-37.5, 8.9), (45.2, 0.3), (-42.0, 1.0)),
    "ssm": ((30.2, 6.1), (-61.4, 6.0), (21.8, 1.5), (-67.4, 1.1), (28.6, 8.6), (-63.4, 9.2), (48.4, 7.1), (-41.0, 8.0)),
    "sem": ((29.3, 5.1), (-63.8, 5.1), (21.8, 2.4), (-70.7, 2.2), (39.7, 10.7), (-52.2, 11.8), (49.4, 5.3), (-39.8, 6.3)),
    "dmsg": ((42.6, 0.9), (-27.0, 1.4), (63.9, 3.5), (-21.8, 2.9), (37.7, 4.3), (-53.1, 10.1), (48.4, 2.6), (-11.3, 2.7)),
}
_T5 = {
    "bare": ((10.6, 0.2), (-57.1, 4.7), (16.2, 0.8), (-65.4, 2.2), (21.9, 0.8), (-60.5, 7.3)),
    "agem": ((21.1, 1.3), (-38.4, 2.2), (23.5, 0.8), (-53.1, 8.0), (29.9, 2.8), (-53.9, 4.8)),
    "er": ((23.8, 0.5), (-37.6, 1.8), (30.0, 1.7), (-41.6, 3.6), (27.8, 0.6), (-48.0, 5.2)),
    "gss": ((21.5, 1.4), (-51.3, 6.4), (24.5, 1.0), (-52.1, 5.7), (29.3, 1.4), (-55.3, 0.1)),
    "mas_star": ((14.0, 0.9), (-55.0, 0.7), (16.2, 0.4), (-63.8, 2.1), (29.8, 2.2), (-44.8, 8.0)),
    "ssm": ((13.0, 0.6), (-49.0, 2.0), (19.2, 0.2), (-65.2, 2.7), (25.4, 2.2), (-58.4, 3.8)),
    "sem": ((13.5, 0.7), (-55.7, 3.9), (19.6, 1.1), (-64.8, 2.1), (27.5, 1.9), (-58.4, 2.6)),
    "dmsg": ((30.3, 0.3), (-29.6, 4.5), (32.1, 0.4), (-33.2, 3.1), (34.1, 1.0), (-37.6, 3.5)),
}
_T6 = {
    "bare": ((36.7, 1.0), (-36.3, 4.6), (39.0, 0.6), (-28.8, 3.6), (49.1, 0.6), (-8.0, 0.5)),
    "agem": ((43.1, 0.6), (-33.0, 5.4), (47.1, 0.5), (-21.7, 3.8), (49.2, 0.5), (-9.6, 1.5)),
    "er": ((44.2, 0.3), (-23.1, 3.2), (43.6, 0.4), (-17.5, 3.0), (48.6, 0.1), (-6.4, 1.4)),
    "gss": ((42.2, 0.7), (-21.4, 2.1), (46.4, 1.0), (-13.2, 2.2), (49.0, 0.2), (-9.7, 1.4)),
    "mas_star": ((35.5, 1.1), (-37.1, 2.8), (43.0, 1.7), (-16.3, 2.1), (47.8, 1.4), (-12.4, 3.1)),
    "ssm": ((35.3, 0.6), (-39.0, 4.2), (42.2, 1.0), (-23.1, 4.1), (47.2, 2.3), (-10.2, 2.5)),
    "sem": ((38.9, 2.0), (-33.4, 4.5), (42.8, 2.0), (-29.0, 6.5), (48.9, 1.3), (-7.5, 1.2)),
    "dmsg": ((42.0, 0.1), (-14.6, 2.8), (43.8, 1.3), (-7.2, 4.2), (44.7, 0.7), (-4.8, 0.5)),
}
_T10 = {
    "bare": ((18.5, 1.5), (-65.4, 3.1), (25.2, 0.9), (-61.3, 12.3), 6.7),
    "agem": ((34.1, 1.4), (-48.6, 4.4), (36.9, 1.4), (-43.5, 0.9), 2.8),
    "er": ((34.9, 0.8), (-37.3, 2.8), (38.1, 1.3), (-35.0, 2.3), 3.2),
    "gss": ((24.2, 3.2), (-60.4, 5.6), (30.9, 2.5), (-42.9, 3.0), 6.7),
    "mas_star": ((38.4, 2.1), (-22.2, 1.8), (43.3, 2.9), (-12.9, 5.8), 4.9),
    "ssm": ((28.0, 4.3), (-64.5, 1.9), (32.8, 1.4), (-50.3, 4.8), 4.8),
    "sem": ((26.8, 1.0), (-59.7, 6.9), (32.6, 2.2), (-46.1, 3.3), 5.8),
    "dmsg": ((31.6, 0.9), (-31.9, 2.9), (32.8, 0.6), (-32.5, 3.4), 1.2),
}
_T4 = {
    "Arxiv-CL": {
        "bare": ((27.4, 1.9), (-54.6, 1.6), (18.5, 0.3), (-68.2, 5.0)),
        "agem": ((32.1, 0.6), (-48.8, 2.3), (32.6, 0.5), (-53.5, 8.7)),
        "er": ((33.2, 1.6), (-52.2, 7.4), (34.8, 0.9), (-40.7, 1.2)),
        "gss": ((22.1, 1.7), (-64.2, 8.2), (23.1, 0.3), (-64.1, 1.4)),
        "mas_star": ((27.4, 1.9), (-54.6, 1.6), (39.7, 4.9), (-18.9, 3.5)),
        "ssm": ((23.2, 5.2), (-63.5, 2.0), (27.7, 1.2), (-62.6, 4.5)),
        "sem": ((27.7, 5.7), (-63.4, 3.5), (23.8, 2.0), (-59.1, 5.0)),
    },
    "CoraFull-CL": {
        "bare": ((39.2, 2.8), (-38.4, 14.0), (27.2, 1.1), (-56.2, 7.6)),
        "agem": ((39.8, 1.1), (-31.6, 6.5), (32.3, 0.9), (-46.4, 0.9)),
        "er": ((41.2, 0.4), (-28.2, 6.1), (32.8, 1.8), (-44.4, 3.0)),
        "gss": ((36.8, 1.4), (-38.3, 8.9), (30.2, 1.1), (-43.7, 3.1)),
        "mas_star": ((39.2, 2.8), (-38.4, 14.0), (28.3, 3.8), (-47.0, 10.4)),
        "ssm": ((34.5, 3.0), (-37.3, 11.0), (25.7, 1.4), (-63.7, 3.3)),
        "sem": ((35.6, 1.4), (-39.0, 2.2), (27.4, 1.6), (-51.0, 1.5)),
    },
    "RomanEmpire-CL": {
        "bare": ((44.1, 0.5), (-23.7, 6.5), (43.2, 1.4), (-18.7, 1.6)),
        "agem": ((44.9, 2.2), (-22.2, 5.9), (46.7, 0.2), (-30.4, 3.7)),
        "er": ((45.8, 0.9), (-24.0, 4.7), (47.0, 1.0), (-21.3, 2.5)),
        "gss": ((43.6, 1.4), (-21.7, 2.2), (45.1, 1.5), (-17.1, 1.4)),
        "mas_star": ((44.2, 0.4), (-21.6, 3.7), (45.9, 1.5), (-18.3, 6.7)),
        "ssm": ((38.8, 4.0), (-35.1, 3.9), (40.4, 3.3), (-27.6, 7.6)),
        "sem": ((35.6, 4.4), (-37.3, 1.1), (40.9, 0.9), (-25.5, 1.4)),
    },
}

_ALL4 = ("ogbn_arxiv", "corafull", "reddit", "roman_empire")
_T4_DATASETS = {"Arxiv-CL": "ogbn_arxiv", "CoraFull-CL": "corafull", "RomanEmpire-CL": "roman_empire"}


def _index() -> dict:
    """``{(table, dataset, group, method, metric): (mean, sd) or None}``; group: σ, B, backbone or None."""
    out = {}
    for table, rows, metrics in (("2", _T2, ("A_AUC", "AF_s")), ("3", _T3, ("AA", "AF")), ("7", _T7, ("AA", "AF")),
                                 ("8", _T8, ("AA", "AF")), ("9", _T9, ("AA", "AF"))):
        for method, cells in rows.items():
            for i, ds in enumerate(_ALL4):
                for j, metric in enumerate(metrics):
                    out[(table, ds, None, method, metric)] = cells[2 * i + j]
    for table, ds in (("5", "corafull"), ("6", "roman_empire")):
        for method, cells in (_T5 if table == "5" else _T6).items():
            for i, s in enumerate(PAPER_SIGMAS[ds]):
                for j, metric in enumerate(("A_AUC", "AF_s")):
                    out[(table, ds, s, method, metric)] = cells[2 * i + j]
    for method, cells in _T10.items():
        for i, b in enumerate(PAPER_BATCH_SIZES):
            for j, metric in enumerate(("A_AUC", "AF_s")):
                out[("10", "ogbn_arxiv", b, method, metric)] = cells[2 * i + j]
    for label, rows in _T4.items():
        for method, cells in rows.items():
            for i, bb in enumerate(("gat", "gin")):
                for j, metric in enumerate(("A_AUC", "AF_s")):
                    out[("4", _T4_DATASETS[label], bb, method, metric)] = cells[2 * i + j]
    return out


_NUMBERS = _index()


def paper_cell(table: str, dataset: str, method: str, metric: str, group=None):
    """The paper's ``(mean, std)`` in % for one cell, or None where it prints none.

    Parameters
    ----------
    table : str
        ``"2"`` ... ``"10"`` (``"4"``: GAT / GIN, ``group`` the backbone).
    dataset : str
        clkit's name (``"ogbn_arxiv"``, ``"corafull"``, ``"reddit"``, ``"roman_empire"``).
    method : str
        clkit's method name (``"bare"``, ``"joint"``, ``"agem"``, ``"er"``, ...).
    metric : {"A_AUC", "AF_s", "AA", "AF"}
    group : float, int, str or None
        σ (Tables 5, 6), B (Table 10), ``"gat"`` / ``"gin"`` (Table 4); None otherwise.

    Examples
    --------
    >>> paper_cell("2", "ogbn_arxiv", "er", "A_AUC"), paper_cell("7", "reddit", "sem", "AA")
    ((34.9, 0.8), (60.2, 3.1))
    >>> paper_cell("4", "corafull", "ssm", "A_AUC", group="gin"), paper_cell("5", "corafull", "dmsg", "AF_s", 10.0)
    ((25.7, 1.4), (-33.2, 3.1))
    >>> paper_cell("2", "cora", "er", "A_AUC") is None, paper_cell("2", "reddit", "joint", "AF_s") is None
    (True, True)
    """
    if isinstance(group, (int, float)) and not isinstance(group, bool) and table in ("5", "6"):
        group = float(group)
    if table == "10" and group is not None:
        group = int(group)
    return _NUMBERS.get((str(table), dataset, group, method, metric))


def comparison_scale(dataset: str, rehearse: bool = False) -> str:
    """``"paper"`` where a run's numbers can be held against the paper's (one of its four graphs, not a
    rehearsal), else ``"teaching"``.

    >>> comparison_scale("corafull"), comparison_scale("corafull", rehearse=True), comparison_scale("cora")
    ('paper', 'teaching', 'teaching')
    """
    return "paper" if dataset in PAPER_DATASETS and not rehearse else "teaching"


@dataclass
class Comparison:
    """A run's paper-layout table beside the paper's numbers (:func:`beside_paper`).

    Attributes
    ----------
    table : pandas.DataFrame
        Rows: the methods; columns ``(group, metric, "clkit" | "paper")``: text cells, ``34.9 ± 0.8``;
        at paper scale a clkit cell outside the paper's spread ends in `` ✗``.
    outside : pandas.DataFrame of bool
        ``(group, metric)`` columns: True where the clkit mean is outside the paper's spread (paper
        scale only; False where the paper prints nothing).
    paper_table : str
        The paper's table the numbers come from (``""``: none).
    scale : str
    note : str
    """

    table: pd.DataFrame
    outside: pd.DataFrame
    paper_table: str
    scale: str
    note: str

    def record(self) -> dict:
        """JSON-ready: ``{paper_table, scale, note, outside: ["row | group | metric", ...]}``."""
        marked = [f"{r} | {g} | {m}" for (g, m) in self.outside.columns for r in self.outside.index
                  if bool(self.outside.loc[r, (g, m)])]
        return {"paper_table": self.paper_table, "scale": self.scale, "note": self.note, "outside": marked}


def _group_value(group: str):
    m = re.match(r"\s*(σ|B)=([0-9.eE+-]+)", str(group))
    return None if m is None else float(m.group(2))


def _which(number: str, dataset: str, backbone: str) -> str:
    if number == "2":
        return "2" if backbone == "gcn" else "4"
    if number == "5/6":
        return {"corafull": "5", "roman_empire": "6"}.get(dataset, "")
    if number == "10":
        return "10" if dataset == "ogbn_arxiv" else ""
    return number if number in ("3", "7", "8", "9") else ""


def beside_paper(table, dataset: str, *, scale: str, backbone: str = "gcn", spread: float = 1.0) -> Comparison:
    """``table`` (a :class:`clkit.drift.tables.PaperTable` of one dataset's run) beside the paper's numbers.

    Parameters
    ----------
    table : PaperTable
    dataset : str
        The run's dataset (clkit's name); only the paper's four graphs have paper numbers.
    scale : {"paper", "teaching"}
        :func:`comparison_scale`. ``"teaching"``: no cell is marked and the note says the comparison is
        not meaningful; the paper's numbers are shown for reference.
    backbone : {"gcn", "gin", "gat"}
        Table 2's numbers are the GCN's; GAT / GIN runs compare with Table 4 (Arxiv, CoraFull, RomanEmpire).
    spread : float
        A cell is outside when ``|clkit mean - paper mean| > spread * paper std`` (in %).

    Returns
    -------
    Comparison

    Examples
    --------
    >>> from clkit.drift.tables import paper_tables
    >>> rows = [dict(setting="hard", sigma=20.0, p=0.3, k_bl=5, batch_size=10, sampling="without", method=m,
    ...              seed=s, overlap=0.0, AA=a, AF=-0.5, A_AUC=a, AF_s=-0.4)
    ...         for m, a in (("bare", 0.141), ("er", 0.20)) for s in (1, 2)]
    >>> t3 = paper_tables({"CoraFull": rows}, sigma=20.0, sigmas=[], p=0.3, k_bl=5, batch_size=10,
    ...                   batch_sizes=[10])[0]
    >>> c = beside_paper(t3, "corafull", scale="paper")
    >>> c.paper_table, c.table.loc["ER", ("CoraFull", "AA %", "paper")], c.table.loc["ER", ("CoraFull", "AA %", "clkit")]
    ('3', '39.5 ± 5.9', '20.0 ± 0.0 ✗')
    >>> bool(c.outside.loc["Bare", ("CoraFull", "AA %")]), c.record()["outside"][:1]
    (False, ['ER | CoraFull | AA %'])
    """
    from .._validate import check_choice

    scale = check_choice("scale", scale, ["paper", "teaching"])
    backbone = check_choice("backbone", backbone, ["gcn", "gin", "gat"])
    if isinstance(spread, bool) or not isinstance(spread, (int, float)) or not spread > 0:
        raise ValueError(f"spread must be a positive number (paper std units), got {spread!r}")
    label_to_method = {lab: m for m, lab in METHOD_LABELS}
    which = _which(table.number, dataset, backbone)
    cols, outside_cols = [], []
    for g, metric in table.mean.columns:
        cols += [(g, metric, "clkit"), (g, metric, "paper")]
        outside_cols.append((g, metric))
    out = pd.DataFrame("", index=table.mean.index, columns=pd.MultiIndex.from_tuples(cols), dtype=object)
    outside = pd.DataFrame(False, index=table.mean.index, columns=pd.MultiIndex.from_tuples(outside_cols))
    found = 0
    for r in table.mean.index:
        method = label_to_method.get(r, r)
        for g, metric in table.mean.columns:
            key = metric.replace(" %", "")
            group = None
            if which in ("5", "6", "10"):
                group = _group_value(g)
            elif which == "4":
                group = backbone
            ref = paper_cell(which, dataset, method, key, group) if which else None
            m, s = float(table.mean.loc[r, (g, metric)]), float(table.sd.loc[r, (g, metric)])
            text = "-" if not math.isfinite(m) else f"{100 * m:.1f}" + (f" ± {100 * s:.1f}" if math.isfinite(s) else "")
            out.loc[r, (g, metric, "paper")] = "-" if ref is None else f"{ref[0]:.1f} ± {ref[1]:.1f}"
            if ref is not None:
                found += 1
                if scale == "paper" and math.isfinite(m) and abs(100 * m - ref[0]) > spread * ref[1] + 1e-9:
                    outside.loc[r, (g, metric)] = True
                    text += " ✗"
            out.loc[r, (g, metric, "clkit")] = text
    out.index.name = "Method"
    name = PAPER_DATASETS.get(dataset, dataset)
    if not which or not found:
        note = (f"The paper prints no numbers for this table on {name}" +
                ("" if dataset in PAPER_DATASETS else " (not one of its four graphs)") + ".")
    elif scale == "teaching":
        note = (f"Teaching scale: the paper's Table {which} ({name}) is shown for reference only; the comparison "
                "is not meaningful (another graph or size, fewer epochs or seeds).")
    else:
        n = int(outside.to_numpy().sum())
        note = (f"Paper scale: beside the paper's Table {which} ({name}, mean ± std over its 3 seeds); {n} of "
                f"{found} cells outside the paper's mean ± {spread:g} std are marked ✗.")
    return Comparison(out, outside, which if found else "", scale, note)
