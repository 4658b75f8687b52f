"""The paper's metrics of one accuracy matrix and the weighting reference.

Order versus weighting. ACC averages the lower triangle of ``R``, so the task in
position ``j`` (0-based) is counted ``T - j`` times: putting the easiest task first
raises ACC with no continual-learning effect at all (the paper itself warns of
this, Sect. 5). :func:`weighting_reference` gives the ACC of a learner that neither
forgets nor transfers, from the single-task accuracies alone; the M2I - I2M gap of
that reference is what weighting alone produces. The final-row mean counts every
task once and has no such term.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_choice, check_choices
from ..metrics import average_accuracy, backward_transfer, forward_transfer

__all__ = ["stream_metrics", "weighting_reference", "bwt_identity"]


def _order_free_mean(values) -> float:
    """Mean with an exactly rounded sum (``math.fsum``): the same float for any order of the values.

    Two orders of the same tasks give the final row's values in another order; a plain
    floating-point mean can then differ in the last bit and a paired test would judge
    that rounding noise. (Equal to :func:`clkit.metrics.average_accuracy` ``"final"`` up to
    rounding.)

    Examples
    --------
    >>> v = [0.1, 0.7, 0.2, 0.3]
    >>> _order_free_mean(v) == _order_free_mean(v[::-1])
    True
    """
    v = [float(x) for x in values]
    return math.fsum(v) / len(v)


def stream_metrics(R, scenario: str) -> dict:
    """The paper's metrics (Sect. 2.3) of one accuracy matrix, with the variants needed to read them.

    Returns
    -------
    dict with

    ``ACC``
        The paper's Eq. 1: ``R[i, j]`` averaged over ``i >= j``, divided by the number
        of those cells, :math:`T(T+1)/2`, as the authors' code does (the paper prints
        :math:`T(T-1)/2`). Task ``j`` counts ``T - j`` times (see :func:`weighting_reference`).
    ``final_acc``
        Mean of the final row: every task once, after the whole stream.
    ``BWT_eq2``
        The paper's Eq. 2: mean over ``i > j`` of ``R[i, j] - R[j, j]`` (Díaz-Rodríguez
        et al.; :func:`clkit.metrics.backward_transfer` ``mode="diaz_rodriguez"``).
    ``BWT_code``
        What the paper's tables report: the authors' released code averages
        ``R[i, j] - R[i-1, j]`` over ``i > j`` (``mode="consecutive"``), which telescopes to
        :math:`2/T` times the final-row BWT -- about a third of ``BWT_eq2``'s scale for the
        paper's six tasks. Compare *this* one with the paper's Tables 3-4.
    ``FWT``
        Mean of ``R[i, j]`` over ``i < j``; NaN in the class-incremental scenario, where it
        is ill-defined (unseen classes are never predicted).

    Examples
    --------
    >>> R = [[0.9, 0.1, 0.0], [0.5, 0.8, 0.2], [0.3, 0.6, 0.7]]
    >>> {k: round(v, 3) for k, v in stream_metrics(R, "task").items()}
    {'ACC': 0.633, 'final_acc': 0.533, 'BWT_eq2': -0.4, 'BWT_code': -0.267, 'FWT': 0.1}
    >>> bool(np.isnan(stream_metrics(R, "class")["FWT"]))
    True
    """
    check_choice("scenario", scenario, ["class", "task"])
    return {"ACC": average_accuracy(R, mode="all_seen"),
            "final_acc": _order_free_mean(np.asarray(R, dtype=float)[-1]),
            "BWT_eq2": backward_transfer(R, mode="diaz_rodriguez"),
            "BWT_code": backward_transfer(R, mode="consecutive"),
            "FWT": forward_transfer(R, mode="diaz_rodriguez") if scenario == "task" else float("nan")}


def weighting_reference(accuracy: dict, order) -> dict:
    """ACC and final-row mean of a learner that neither forgets nor transfers.

    Such a learner has ``R[i, j] = a_j`` for ``i >= j``, with ``a_j`` the single-task
    accuracy of the task in position ``j``. Its ACC is
    :math:`\\sum_j (T - j)\\, a_j / (T(T+1)/2)` (0-based ``j``): a weighted mean in which
    earlier tasks count more. The difference of this reference between two orders of the
    same tasks is the ACC gap produced by weighting alone; its final-row mean is the plain
    mean of the ``a_j`` and the same for every order.

    Parameters
    ----------
    accuracy : dict name -> float
        Single-task accuracies (e.g. :func:`single_task_accuracy`).
    order : list of str

    Returns
    -------
    dict with ``ACC`` and ``final_acc``

    Examples
    --------
    >>> a = {"easy": 0.9, "mid": 0.6, "hard": 0.3}
    >>> m2i = weighting_reference(a, ["easy", "mid", "hard"])["ACC"]   # (3*.9 + 2*.6 + .3) / 6
    >>> i2m = weighting_reference(a, ["hard", "mid", "easy"])["ACC"]   # (3*.3 + 2*.6 + .9) / 6
    >>> round(m2i, 3), round(i2m, 3), round(m2i - i2m, 3)
    (0.7, 0.5, 0.2)
    """
    order = list(order)
    check_choices("order", order, list(accuracy))
    T = len(order)
    a = np.array([float(accuracy[n]) for n in order])
    weights = (T - np.arange(T)) / (T * (T + 1) / 2)
    return {"ACC": float(weights @ a), "final_acc": _order_free_mean(a)}


def bwt_identity(R) -> dict:
    """Both sides of the telescoping identity of the authors' BWT (code form).

    ``BWT_code`` averages ``R[i, j] - R[i-1, j]`` over the ``T(T-1)/2`` cells ``i > j``;
    each column ``j`` telescopes to ``R[T-1, j] - R[j, j]``, so
    ``BWT_code = 2 / (T (T-1)) * sum_{j < T-1} (R[T-1, j] - R[j, j])`` -- that is ``2 / T``
    times the final-row BWT (the mean of ``R[T-1, j] - R[j, j]`` over ``j < T-1``).

    Returns
    -------
    dict with ``BWT_code`` (from :func:`clkit.metrics.backward_transfer`), ``identity``
    (the right-hand side), ``final_row_BWT`` and ``factor`` (``2 / (T (T-1))``)

    Examples
    --------
    >>> R = [[0.9, 0.1, 0.0], [0.5, 0.8, 0.2], [0.3, 0.6, 0.7]]
    >>> {k: round(v, 4) for k, v in bwt_identity(R).items()}
    {'BWT_code': -0.2667, 'identity': -0.2667, 'final_row_BWT': -0.4, 'factor': 0.3333}
    """
    R = np.asarray(R, dtype=float)
    T = R.shape[0]
    drops = [R[T - 1, j] - R[j, j] for j in range(T - 1)]
    factor = 2 / (T * (T - 1))
    return {"BWT_code": backward_transfer(R, mode="consecutive"), "identity": factor * float(np.sum(drops)),
            "final_row_BWT": float(np.mean(drops)), "factor": factor}
