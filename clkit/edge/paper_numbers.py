"""The EDGE paper's own Tables 1-2, as printed, to set beside a run's numbers.

The paper (Sect. 5.1) reports twelve methods on the first six classes of CIFAR-100 and
ImageNet-R in three tasks (all 90 orders trained): Table 1 the six pre-trained ViT-B/16
methods (L2P, CODA-Prompt, HiDe-Prompt, EASE, MOS, RanPAC), Table 2 the six trained from
scratch (EWC, DER, iCaRL, FOSTER, MEMO, TagFex). Each column gives the true minimum and
maximum accuracy over the 90 orders, the minimum and maximum that RS's three seeds and
EDGE's three sequences saw, and the JSD and Wasserstein distances of each protocol's
Gaussian estimate to the truth (:data:`clkit.edge.tables.ROWS`, in the paper's order).

:data:`PAPER_TABLES` holds the numbers copied from the paper's text, units as printed
(accuracies in %, JSD unitless, W in accuracy points). One gap, stated rather than guessed:
Table 2's CIFAR-100 half prints five columns (EWC, DER, iCaRL, FOSTER, MEMO) and every row has
eleven values, so TagFex has numbers for ImageNet-R only; :func:`beside_paper` shows NaN for
TagFex on CIFAR-100.

Which accuracy the tables use: the paper calls its per-order score ``A`` "accuracy" (Sect.
3) without saying final or average incremental; the authors' trainers (PyCIL's and PILOT's
``trainer.py``) log both and report the final top-1 accuracy on every class seen. A run
records both (:mod:`clkit.edge.learners`); compare the column of the same kind.
"""

from __future__ import annotations

import math

import pandas as pd

from .tables import ROWS

__all__ = ["PAPER_METHODS", "PAPER_TABLES", "METHOD_NAMES", "missing_methods", "beside_paper", "paper_setting",
           "tables_beside_paper"]

#: registry name -> the paper's column label
METHOD_NAMES = {"l2p": "L2P", "coda_prompt": "CODA-Prompt", "hide_prompt": "HiDe-Prompt", "ease": "EASE",
                "mos": "MOS", "ranpac": "RanPAC", "ewc": "EWC", "der": "DER", "icarl": "iCaRL",
                "foster": "FOSTER", "memo": "MEMO", "tagfex": "TagFex"}

#: the paper's twelve methods (registry names): Table 1's pre-trained six, then Table 2's six
PAPER_METHODS = ("l2p", "coda_prompt", "hide_prompt", "ease", "mos", "ranpac",
                 "ewc", "der", "icarl", "foster", "memo", "tagfex")

_T1 = ("l2p", "coda_prompt", "hide_prompt", "ease", "mos", "ranpac")
_T2_CIFAR = ("ewc", "der", "icarl", "foster", "memo")
_T2_INR = ("ewc", "der", "icarl", "foster", "memo", "tagfex")

# The rows as printed (ROWS' order: min truth, min RS, min EDGE, max truth, max RS, max EDGE,
# JSD_RS, JSD_EDGE, W_RS, W_EDGE); each row: the CIFAR-100 half, then the ImageNet-R half.
_TABLE1 = (
    (71.83, 64.67, 72.50, 95.33, 92.17, 98.50, 57.75, 18.72, 65.90, 88.24, 85.56, 90.91),
    (83.83, 76.83, 79.67, 95.50, 95.33, 98.67, 68.98, 39.04, 78.34, 88.77, 87.17, 93.05),
    (72.83, 73.00, 73.00, 95.33, 93.83, 98.67, 66.31, 21.93, 71.89, 88.24, 86.10, 93.05),
    (92.50, 87.00, 91.17, 95.83, 97.67, 98.83, 83.42, 57.75, 82.95, 88.77, 91.98, 96.26),
    (87.33, 81.83, 90.67, 95.50, 95.83, 98.83, 75.40, 43.85, 78.34, 88.77, 87.70, 95.19),
    (92.00, 84.17, 90.75, 95.67, 96.67, 98.83, 77.54, 45.45, 76.04, 88.77, 91.44, 95.19),
    (0.44, 0.38, 0.34, 0.00, 0.15, 0.00, 0.23, 0.65, 0.41, 0.00, 0.37, 0.57),
    (0.30, 0.28, 0.22, 0.00, 0.15, 0.00, 0.21, 0.20, 0.18, 0.00, 0.17, 0.36),
    (2.81, 2.92, 3.89, 0.00, 0.48, 0.00, 1.59, 9.85, 2.44, 0.00, 1.18, 2.25),
    (2.00, 2.03, 1.42, 0.00, 0.22, 0.00, 1.74, 2.37, 1.11, 0.00, 0.77, 1.07),
)
_TABLE2 = (
    (12.50, 16.83, 36.33, 16.00, 21.83, 10.06, 11.73, 10.61, 11.17, 12.85, 11.73),
    (26.17, 24.17, 43.00, 20.67, 36.50, 16.76, 11.73, 14.53, 15.08, 15.05, 18.99),
    (12.50, 26.35, 38.50, 16.67, 35.67, 10.61, 11.97, 14.53, 11.73, 15.44, 14.53),
    (39.00, 45.50, 53.33, 38.33, 56.67, 27.93, 26.26, 43.58, 26.82, 30.73, 21.23),
    (27.50, 34.17, 43.00, 23.50, 51.17, 21.23, 18.99, 22.91, 24.02, 21.23, 20.11),
    (28.17, 41.33, 43.33, 30.17, 56.67, 24.58, 21.23, 26.82, 23.95, 28.49, 20.67),
    (0.51, 0.29, 0.36, 0.58, 0.29, 0.36, 0.32, 0.30, 0.22, 0.38, 0.44),
    (0.29, 0.31, 0.32, 0.40, 0.23, 0.26, 0.20, 0.21, 0.20, 0.16, 0.15),
    (4.74, 4.62, 2.37, 6.25, 2.00, 2.40, 2.14, 3.14, 2.11, 2.99, 3.14),
    (3.44, 3.22, 2.03, 3.91, 1.82, 2.03, 1.07, 2.71, 1.03, 1.66, 0.88),
)


def _columns(rows, left, right) -> dict:
    out = {"cifar100": {}, "imagenet_r": {}}
    for i, name in enumerate(left):
        out["cifar100"][name] = tuple(r[i] for r in rows)
    for i, name in enumerate(right):
        out["imagenet_r"][name] = tuple(r[len(left) + i] for r in rows)
    return out


def _tables() -> dict:
    t1, t2 = _columns(_TABLE1, _T1, _T1), _columns(_TABLE2, _T2_CIFAR, _T2_INR)
    return {d: {**t1[d], **t2[d]} for d in ("cifar100", "imagenet_r")}


#: ``{dataset: {method: (10 values in ROWS' order)}}`` for ``"cifar100"`` and ``"imagenet_r"``
PAPER_TABLES = _tables()


def missing_methods(learners) -> list:
    """The paper's methods (:data:`PAPER_METHODS`, its order) that ``learners`` does not run.

    Examples
    --------
    >>> missing_methods(["ewc", "icarl", "der", "l2p", "ranpac", "simplecil"])
    ['coda_prompt', 'hide_prompt', 'ease', 'mos', 'foster', 'memo', 'tagfex']
    """
    have = set(learners)
    return [m for m in PAPER_METHODS if m not in have]


def beside_paper(table: pd.DataFrame, dataset: str, *, difference: bool = False) -> pd.DataFrame:
    """A run's Tables 1-2 layout (:func:`clkit.edge.tables.paper_table`) with the paper's numbers beside.

    Parameters
    ----------
    table : pandas.DataFrame
        Index: :data:`~clkit.edge.tables.ROWS`' labels; columns: registry names of learners.
    dataset : {"cifar100", "imagenet_r"}
        The paper's dataset whose column to set beside (Table 1-2's two halves).

    Returns
    -------
    pandas.DataFrame
        Columns ``(label, "paper")`` and ``(label, "this run")`` per learner, ``label`` the paper's
        column name (the registry name for a learner the paper does not run, marked
        ``" (not in the paper)"``); the paper's values NaN where it prints none. With ``difference``
        also ``(label, "run - paper")``: the run's value minus the paper's (the paper gives no
        spread for these cells, so the difference is shown, not a test).

    Examples
    --------
    >>> from clkit.edge.tables import paper_table
    >>> rec = {"ewc/truth": {"min": 10.0, "max": 30.0}, "simplecil/truth": {"min": 90.0, "max": 95.0}}
    >>> t = beside_paper(paper_table(rec), "cifar100")
    >>> t[("EWC", "paper")].tolist()[:4], t[("EWC", "this run")].tolist()[0]
    ([12.5, 26.17, 12.5, 39.0], 10.0)
    >>> list(t.columns.get_level_values(0).unique())
    ['EWC', 'simplecil (not in the paper)']
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame (clkit.edge.tables.paper_table), got {type(table).__name__}")
    if dataset not in PAPER_TABLES:
        raise ValueError(f"dataset must be one of {sorted(PAPER_TABLES)} (the paper's Tables 1-2), got {dataset!r}")
    labels = [label for label, _, _ in ROWS]
    if list(table.index) != labels:
        raise ValueError(f"table's rows must be {labels} (clkit.edge.tables.paper_table), got {list(table.index)}")
    cols = {}
    for name in table.columns:
        label = METHOD_NAMES.get(name, f"{name} (not in the paper)")
        paper = PAPER_TABLES[dataset].get(name, (math.nan,) * len(labels))
        cols[(label, "paper")] = list(paper)
        cols[(label, "this run")] = table[name].tolist()
        if difference:
            cols[(label, "run - paper")] = [round(r - q, 2) for r, q in zip(table[name].tolist(), paper)]
    out = pd.DataFrame(cols, index=labels)
    out.columns = pd.MultiIndex.from_tuples(out.columns, names=["method", "source"])
    return out


def paper_setting(dataset: str, classes, num_tasks: int, *, rehearse: bool = False) -> bool:
    """Whether a run is the paper's enumerable setting (its first six classes of CIFAR-100 or ImageNet-R in three
    tasks, not a rehearsal), where its Tables 1-2 numbers are a comparison and not only a reference.

    Examples
    --------
    >>> paper_setting("cifar100", [0, 1, 2, 3, 4, 5], 3), paper_setting("fashion_mnist", [0, 1, 2, 3], 2)
    (True, False)
    >>> paper_setting("cifar100", list(range(6)), 3, rehearse=True)
    False
    """
    return (dataset in PAPER_TABLES and list(classes or ()) == list(range(6)) and int(num_tasks) == 3
            and not rehearse)


def tables_beside_paper(protocols: dict, families: dict, *, dataset: str, classes, num_tasks: int,
                        rehearse: bool = False) -> tuple:
    """Notebook 02's Tables 1-2: ``([(title, DataFrame)], note)``, every method column beside the paper's numbers.

    ``families`` is :func:`clkit.edge.images.table_families`' ``{title: learners}``; each table is
    :func:`clkit.edge.tables.paper_table` of ``protocols`` (results.json's ``protocols``) set beside
    the paper's (:func:`beside_paper`) -- at the paper's setting (:func:`paper_setting`) with the
    difference, elsewhere the paper's CIFAR-100 numbers for reference only. The note (Markdown) says
    which, the units, and names the paper's methods the run does not have (:func:`missing_methods`).

    Examples
    --------
    >>> rec = {"ewc/truth": {"min": 10.0, "max": 30.0}}
    >>> tabs, note = tables_beside_paper(rec, {"T2": ["ewc"]}, dataset="fashion_mnist", classes=[0, 1, 2, 3],
    ...                                  num_tasks=2)
    >>> tabs[0][0], "not meaningful" in note, "TagFex" in note
    ('T2', True, True)
    """
    from .tables import UNITS, paper_table

    at_paper = paper_setting(dataset, classes, num_tasks, rehearse=rehearse)
    ref = dataset if dataset in PAPER_TABLES else "cifar100"
    out = [(title, beside_paper(paper_table(protocols, cols), ref, difference=at_paper))
           for title, cols in families.items()]
    if at_paper:
        head = (f"The paper's setting ({ref}, its first six classes in three tasks): each method's column beside the "
                "paper's own numbers and their difference (run - paper, in the row's unit). The paper prints no "
                "spread for these cells, so no difference is judged significant here.")
    else:
        why = "a rehearsal on fabricated data" if rehearse else (
            f"{dataset}, classes {list(classes)}, {num_tasks} tasks")
        head = (f"Not the paper's setting ({why}; the paper: the first six classes of CIFAR-100 or ImageNet-R in "
                f"three tasks): the comparison is not meaningful; the paper's {ref} numbers are shown for "
                "reference only.")
    learners = [n for cols in families.values() for n in cols]
    missing = missing_methods(learners)
    tail = (" The paper's methods this run does not have: " + ", ".join(METHOD_NAMES[m] for m in missing) + "."
            if missing else " This run has all twelve of the paper's methods.")
    return out, head + tail + " " + UNITS
