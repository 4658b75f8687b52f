"""Per-run metrics recomputed with :mod:`clkit.metrics`, and every framework number checked against its own definition.

The metrics are those of ``clkit metrics cl`` (:func:`clkit.cli.metrics.cl_result` computes the
same): ``acc`` (final-row mean, Lopez-Paz & Ranzato), ``acc_all_seen`` (lower-triangle mean),
``bwt`` (Lopez-Paz), ``fwt`` (mean of the upper triangle, Díaz-Rodríguez et al.; NaN when the
cells above the diagonal were not evaluated) and ``forgetting`` (Chaudhry et al.). A framework's
numbers are never used in their place.

Frameworks name different quantities alike. Each number a reader takes from a log is stored
under the key of **its own definition** (:data:`FORMS`), and clkit computes that form from the
same matrix beside its own metric; :func:`check_reported` lists every reported number with its
definition, the recomputed value and whether it agrees, and :func:`disagreements` keeps the
real disagreements (beyond ``tol``), each with the reason such a number can differ. A number
that R cannot give (mammoth's ``forward_transfer`` needs a randomly initialised model's
accuracies) is "not checkable", never a disagreement.

=====================  ======================================================================
key                    definition (``R`` T x T, k < T-1 the tasks trained before the last)
=====================  ======================================================================
``acc``                mean of the final row (clkit; mammoth ``accmean_task{T}``)
``acc_stream``         accuracy over all test samples of the stream (Avalanche
                       ``Top1_Acc_Stream``, PyCIL ``total``): not computable from R, compared
                       with ``acc``, equal when the tasks' test sets are equal in size
``bwt``                mean over k of R[T-1, k] - R[k, k] (clkit, Avalanche ``StreamBWT``,
                       mammoth ``backward_transfer``)
``fwt``                mean of the upper triangle (clkit)
``forgetting``         mean over k of max over l < T-1 of R[l, k], minus R[T-1, k] (Chaudhry)
``forgetting_stream``  mean over k of R[k, k] - R[T-1, k] (Avalanche ``StreamForgetting``)
``forgetting_max``     mean over k of max over **all** rows l <= T-1 of R[l, k], minus R[T-1, k]
                       (mammoth ``forgetting``, PyCIL ``Forgetting (CNN)``)
``forgetting_exp``     the last row's R[k, k] - R[T-1, k] for every k, each checked (Avalanche's
                       ``ExperienceForgetting`` column of ``eval_results.csv``; the largest
                       difference is listed)
``fwt_random``         mean over i >= 1 of R[i-1, i] minus a randomly initialised model's
                       accuracy on task i (mammoth ``forward_transfer``): not checkable
=====================  ======================================================================
"""

from __future__ import annotations

import numpy as np

from .. import metrics as mt

__all__ = ["METRICS", "TOLERANCE", "FORMS", "run_metrics", "framework_form", "metrics_table", "check_reported",
           "disagreements"]

#: metric key -> (label, higher is better)
METRICS = {"acc": ("ACC", True), "acc_all_seen": ("ACC (all seen)", True), "bwt": ("BWT", True),
           "fwt": ("FWT", True), "forgetting": ("forgetting", False)}
#: absolute tolerance (fraction scale) beyond which a reported number disagrees
TOLERANCE = 1e-3


def _seen(R) -> np.ndarray:
    return np.asarray(R, dtype=float)


def _forgetting_stream(R) -> float:
    R = _seen(R)
    T = len(R)
    return float(np.mean(np.diag(R)[:T - 1] - R[T - 1, :T - 1]))


def _forgetting_max(R) -> float:
    R = _seen(R)
    T = len(R)
    low = np.where(np.tril(np.ones((T, T), bool)), R, -np.inf)  # cells above the diagonal never count
    return float(np.mean(low[:, :T - 1].max(axis=0) - R[T - 1, :T - 1]))


def _forgetting_exp(R) -> np.ndarray:
    R = _seen(R)
    T = len(R)
    return np.diag(R)[:T - 1] - R[T - 1, :T - 1]


#: reported key -> (definition, how R gives it: a metric key of :func:`run_metrics`, a function, or None,
#: why a reported number of this form can differ from the recomputed one)
FORMS = {
    "acc": ("ACC: mean of the final row R[T-1, :]", "acc",
            "the log's matrix and its summary were computed on different evaluations (or the summary is another "
            "average, e.g. the average incremental accuracy)"),
    "acc_stream": ("accuracy over all of the stream's test samples after the last task (Avalanche "
                   "Top1_Acc_Stream, PyCIL 'total'); compared with ACC", "acc",
                   "the stream accuracy weights tasks by their test-set sizes; it equals ACC (the mean over tasks) "
                   "only when the tasks' test sets are equal in size"),
    "acc_all_seen": ("mean of the lower triangle", "acc_all_seen", "another average of the matrix"),
    "bwt": ("BWT: mean over k < T-1 of R[T-1, k] - R[k, k] (Lopez-Paz & Ranzato; Avalanche StreamBWT, mammoth "
            "backward_transfer)", "bwt", "the log's matrix and its summary come from different evaluations"),
    "fwt": ("FWT: mean of the cells above the diagonal (Díaz-Rodríguez et al.)", "fwt",
            "another forward-transfer definition (e.g. minus a random model's accuracy)"),
    "forgetting": ("forgetting: mean over k < T-1 of max_{l < T-1} R[l, k] - R[T-1, k] (Chaudhry et al.)",
                   "forgetting", "another forgetting definition (the framework's form is listed under its own key)"),
    "forgetting_stream": ("Avalanche StreamForgetting: mean over k < T-1 of R[k, k] - R[T-1, k]", _forgetting_stream,
                          "the log's matrix and its summary come from different evaluations"),
    "forgetting_max": ("mammoth forgetting / PyCIL Forgetting: mean over k < T-1 of max over all rows l <= T-1 of "
                       "R[l, k] - R[T-1, k]", _forgetting_max,
                       "PyCIL takes the maximum per 10-class group, which is a task only when init_cls = increment = "
                       "10; or the matrix and the summary come from different evaluations"),
    "forgetting_exp": ("Avalanche ExperienceForgetting after the last task: R[k, k] - R[T-1, k] for each k < T-1 "
                       "(the largest difference is listed)", _forgetting_exp,
                       "the eval_accuracy and forgetting columns come from different evaluations"),
    "fwt_random": ("mammoth forward_transfer: mean over i >= 1 of R[i-1, i] minus a randomly initialised model's "
                   "accuracy on task i", None,
                   "needs the random model's accuracies (and R's cells above the diagonal), which the log does not "
                   "hold: not checkable from R"),
}


def run_metrics(R) -> dict:
    """ACC, ACC over all seen cells, BWT, FWT and forgetting of one accuracy matrix.

    Examples
    --------
    >>> R = [[0.9, 0.2, 0.1], [0.5, 0.8, 0.3], [0.3, 0.6, 0.7]]
    >>> {k: round(v, 4) for k, v in run_metrics(R).items()}
    {'acc': 0.5333, 'acc_all_seen': 0.6333, 'bwt': -0.4, 'fwt': 0.2, 'forgetting': 0.4}
    """
    return {"acc": mt.average_accuracy(R), "acc_all_seen": mt.average_accuracy(R, mode="all_seen"),
            "bwt": mt.backward_transfer(R), "fwt": mt.forward_transfer(R, mode="diaz_rodriguez"),
            "forgetting": mt.forgetting(R)}


def framework_form(key: str, R):
    """The number of form ``key`` (:data:`FORMS`) computed from ``R``: a float, an array (``forgetting_exp``) or
    ``None`` when R cannot give it.

    Examples
    --------
    >>> R = np.array([[0.9, np.nan, np.nan], [0.5, 0.95, np.nan], [0.6, 0.7, 0.8]])
    >>> round(framework_form("forgetting", R), 4)         # Chaudhry: max over rows before the last
    0.2750
    >>> round(framework_form("forgetting_stream", R), 4)  # Avalanche: R[k, k] - R[T-1, k]
    0.275
    >>> round(framework_form("forgetting_max", R), 4)     # mammoth / PyCIL: max over all rows
    0.275
    >>> R2 = np.array([[0.5, np.nan], [0.7, 0.9]])        # the last row is task 0's best
    >>> framework_form("forgetting", R2), framework_form("forgetting_stream", R2), framework_form("forgetting_max", R2)
    (-0.19999999999999996, -0.19999999999999996, 0.0)
    >>> print(framework_form("fwt_random", R))
    None
    """
    if key not in FORMS:
        raise ValueError(f"reported metric {key!r} has no known definition; known: {', '.join(FORMS)}")
    how = FORMS[key][1]
    if how is None:
        return None
    if isinstance(how, str):
        return run_metrics(R)[how]
    return how(R)


def metrics_table(runs):
    """A DataFrame with one row per run: its identity, source, task count and recomputed metrics.

    Examples
    --------
    >>> from clkit.compare.runs import Run
    >>> t = metrics_table([Run("a", "0", None, None, np.array([[0.9, np.nan], [0.6, 0.8]]), "a0.csv")])
    >>> t.loc[0, "method"], t.loc[0, "seed"], float(round(t.loc[0, "acc"], 4)), float(round(t.loc[0, "bwt"], 4))
    ('a', '0', 0.7, -0.3)
    """
    import pandas as pd

    table = pd.DataFrame([{"method": r.method, "seed": r.seed, "order": r.order, "taskification": r.taskification,
                           "num_tasks": r.num_tasks, **run_metrics(r.R), "source": r.source} for r in runs])
    table.columns.name = UNITS   # the header names the unit (a percent file was divided by 100 when read)
    return table


#: the unit of the recomputed metrics, named in :func:`metrics_table`'s header (its columns' name)
UNITS = "metrics as fractions (0-1)"

_CHECK_COLS = ["run", "source", "metric", "definition", "reported", "recomputed", "difference", "status", "why"]


def check_reported(runs, tol: float = TOLERANCE):
    """Every reported number beside the same form recomputed from the run's R (:data:`FORMS`).

    Returns
    -------
    pandas.DataFrame
        Columns run, source, metric (the form's key), definition, reported, recomputed, difference
        (``reported - recomputed``), status (``agrees`` within ``tol``, ``disagrees``, or ``not checkable``)
        and why (for a disagreement: what makes such numbers differ; for ``not checkable``: what R lacks).

    Examples
    --------
    >>> from clkit.compare.runs import Run
    >>> R = np.array([[0.5, np.nan], [0.7, 0.9]])
    >>> r = Run("a", "0", None, None, R, "log", reported={"forgetting_max": 0.0, "forgetting_stream": -0.2,
    ...                                                    "fwt_random": 0.05})
    >>> check_reported([r])[["metric", "status"]].values.tolist()
    [['forgetting_max', 'agrees'], ['forgetting_stream', 'agrees'], ['fwt_random', 'not checkable']]
    """
    import pandas as pd

    rows = []
    for r in runs:
        for key, value in (r.reported or {}).items():
            definition, _, why = FORMS[key] if key in FORMS else (key, None, "")
            mine = framework_form(key, r.R) if key in FORMS else None
            if mine is None or (np.ndim(mine) == 0 and not np.isfinite(mine)):
                status = "not checkable"
                why = why if mine is None and key in FORMS else "R does not give it (cells above the diagonal " \
                    "were not evaluated)" if key in FORMS else "no known definition"
                rows.append({"run": r.label, "source": r.source, "metric": key, "definition": definition,
                             "reported": _scalar(value), "recomputed": np.nan, "difference": np.nan,
                             "status": status, "why": why})
                continue
            if np.ndim(mine) or np.ndim(value):
                mine_a, value_a = np.atleast_1d(np.asarray(mine, float)), np.atleast_1d(np.asarray(value, float))
                if mine_a.shape != value_a.shape:
                    rows.append({"run": r.label, "source": r.source, "metric": key, "definition": definition,
                                 "reported": np.nan, "recomputed": np.nan, "difference": np.nan,
                                 "status": "disagrees", "why": f"{value_a.size} value(s) logged, {mine_a.size} "
                                                               "expected from R"})
                    continue
                k = int(np.argmax(np.abs(value_a - mine_a)))
                value, mine = float(value_a[k]), float(mine_a[k])
            diff = float(value) - float(mine)
            ok = abs(diff) <= tol
            rows.append({"run": r.label, "source": r.source, "metric": key, "definition": definition,
                         "reported": float(value), "recomputed": float(mine), "difference": diff,
                         "status": "agrees" if ok else "disagrees", "why": "" if ok else why})
    table = pd.DataFrame(rows, columns=_CHECK_COLS)
    table.columns.name = "reported, recomputed, difference: fractions (0-1)"
    return table


def _scalar(value) -> float:
    return float(value) if np.ndim(value) == 0 else float("nan")


def disagreements(runs, tol: float = TOLERANCE):
    """The reported numbers that differ from the same form recomputed from R by more than ``tol``.

    Each row is a real disagreement: the number is compared with clkit's computation of **its own
    definition** (:func:`check_reported`), and ``why`` says what makes such numbers differ. Numbers R
    cannot give (``not checkable``) are in :func:`check_reported`, not here.

    Returns
    -------
    pandas.DataFrame
        Columns run, source, metric, definition, reported, recomputed, difference
        (``reported - recomputed``), status, why.

    Examples
    --------
    >>> from clkit.compare.runs import Run
    >>> r = Run("a", "0", None, None, np.array([[0.9, np.nan], [0.6, 0.8]]), "a0.csv",
    ...         reported={"acc": 0.7, "forgetting": 0.25})
    >>> disagreements([r])[["run", "metric", "reported", "recomputed"]].values.tolist()
    [['a seed 0', 'forgetting', 0.25, 0.30000000000000004]]
    """
    table = check_reported(runs, tol)
    return table[table["status"] == "disagrees"].reset_index(drop=True)
