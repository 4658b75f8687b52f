"""Continual-learning metrics as pure functions of a performance matrix.

Convention: ``R[i, j]`` is the score on task ``j`` after training on task ``i``
(shape ``(num_tasks, num_tasks)``, 0-based). Scores are accuracies (higher is
better) unless ``higher_is_better=False`` marks an error such as MSE. Cells that
were not evaluated are NaN and are ignored where a definition allows it.

Variants follow the five papers of the kit:

==========================  =============================================================
function                    definitions
==========================  =============================================================
:func:`average_accuracy`    ``"final"`` (Lopez-Paz & Ranzato 2017), ``"all_seen"``
                            (Díaz-Rodríguez et al. 2018, used by the curriculum paper)
:func:`backward_transfer`   ``"lopez_paz"``, ``"diaz_rodriguez"`` (the curriculum paper's
                            Eq. 2), ``"consecutive"`` (the curriculum authors' released
                            code); regression BWT of the taskification paper with
                            ``higher_is_better=False``
:func:`forward_transfer`    ``"lopez_paz"`` (needs baseline ``b``), ``"diaz_rodriguez"``
:func:`forgetting`          Chaudhry et al. 2018; regression forgetting of the
                            taskification paper with ``higher_is_better=False``
:func:`stream_average_accuracy`, :func:`stream_forgetting`, :func:`stream_auc`
                            DRIFT's AA, AF / AF_s and A_AUC on accuracy over time
==========================  =============================================================

The temporal-shift metrics (TTR, SH, DH, TAS) over ``A(t, tau)`` live in
:mod:`clkit.temporal`, which builds on the same conventions.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._validate import check_choice, check_matrix

__all__ = [
    "average_accuracy",
    "backward_transfer",
    "forward_transfer",
    "forgetting",
    "stream_average_accuracy",
    "stream_forgetting",
    "stream_auc",
]


def _square(R, name="R"):
    R = check_matrix(name, R, square=True)
    return R, R.shape[0]


def average_accuracy(R, mode: str = "final") -> float:
    """Average performance.

    Parameters
    ----------
    R : array_like, shape (num_tasks, num_tasks)
        ``R[i, j]`` = score on task j after training on task i.
    mode : {"final", "all_seen"}
        ``"final"``: mean of the last row, :math:`\\frac1T\\sum_j R_{T,j}`
        (Lopez-Paz & Ranzato 2017; DRIFT's AA on a task matrix).
        ``"all_seen"``: mean over the lower triangle incl. the diagonal,
        :math:`\\sum_{i\\ge j} R_{i,j} / (T(T+1)/2)` (Díaz-Rodríguez et al. 2018).
        The curriculum paper (Sect. 2.3) prints the normaliser as
        :math:`T(T-1)/2`, which would allow values above 100 % for a perfect
        learner; its reported numbers are consistent with the number of summed
        cells, :math:`T(T+1)/2`, which we use.

    Returns
    -------
    float
        NaN cells are ignored (mean over evaluated cells).

    Examples
    --------
    >>> R = [[0.9, 0.1], [0.6, 0.8]]
    >>> average_accuracy(R)
    0.7
    >>> round(average_accuracy(R, mode="all_seen"), 4)  # (0.9 + 0.6 + 0.8) / 3
    0.7667
    """
    R, T = _square(R)
    check_choice("mode", mode, ["final", "all_seen"])
    if mode == "final":
        return float(np.nanmean(R[-1]))
    return float(np.nanmean(R[np.tril_indices(T)]))


def backward_transfer(R, mode: str = "lopez_paz", higher_is_better: bool = True) -> float:
    """Backward transfer: how training on later tasks changed earlier ones.

    Parameters
    ----------
    R : array_like, shape (num_tasks, num_tasks)
    mode : {"lopez_paz", "diaz_rodriguez", "consecutive"}
        ``"lopez_paz"``: :math:`\\frac{1}{T-1}\\sum_{j<T} (R_{T,j} - R_{j,j})`.
        ``"diaz_rodriguez"``: :math:`\\sum_{i=2}^T\\sum_{j<i} (R_{i,j} - R_{j,j}) / (T(T-1)/2)`
        (all stages; the curriculum paper's Eq. 2 as printed).
        ``"consecutive"``: :math:`\\sum_{i=2}^T\\sum_{j<i} (R_{i,j} - R_{i-1,j}) / (T(T-1)/2)`,
        the change caused by each single training stage -- what the curriculum paper's
        released code computes (github.com/lifelonglab/M2I_I2M_benchmark,
        ``analysis/metrics/eval_results_metrics.py``) and what its Tables 3-4 report.
        Each column telescopes to :math:`R_{T,j} - R_{j,j}`, so it equals
        ``"lopez_paz"`` times :math:`2/T` (a third of it for the paper's six tasks) and
        is not comparable with ``"diaz_rodriguez"``.
    higher_is_better : bool
        ``False`` for an error matrix ``M`` (e.g. MSE): the differences are negated so
        that positive BWT still means improvement. With ``"lopez_paz"`` this is the
        taskification paper's :math:`\\frac{1}{T-1}\\sum_{j<T} (M_{j,j} - M_{T,j})`.

    Returns
    -------
    float
        NaN for a single task.

    Examples
    --------
    >>> R = [[0.9, 0.0, 0.0], [0.5, 0.8, 0.0], [0.3, 0.6, 0.7]]
    >>> round(backward_transfer(R), 4)   # ((0.3-0.9) + (0.6-0.8)) / 2
    -0.4
    >>> round(backward_transfer(R, mode="diaz_rodriguez"), 4)  # (-0.4 - 0.6 - 0.2) / 3
    -0.4
    >>> round(backward_transfer(R, mode="consecutive"), 4)  # ((0.5-0.9) + (0.3-0.5) + (0.6-0.8)) / 3
    -0.2667
    >>> M = [[1.0, 9.0], [3.0, 2.0]]     # MSE grows on task 0: negative BWT
    >>> backward_transfer(M, higher_is_better=False)
    -2.0
    """
    R, T = _square(R)
    check_choice("mode", mode, ["lopez_paz", "diaz_rodriguez", "consecutive"])
    if T < 2:
        return float("nan")
    sign = 1.0 if higher_is_better else -1.0
    diag = np.diag(R)
    if mode == "lopez_paz":
        return float(sign * np.nanmean(R[-1, :-1] - diag[:-1]))
    i, j = np.tril_indices(T, k=-1)
    if mode == "consecutive":
        return float(sign * np.nanmean(R[i, j] - R[i - 1, j]))
    return float(sign * np.nanmean(R[i, j] - diag[j]))


def forward_transfer(R, b=None, mode: str = "lopez_paz") -> float:
    """Forward transfer: performance on tasks before training on them.

    Parameters
    ----------
    R : array_like, shape (num_tasks, num_tasks)
    b : array_like, shape (num_tasks,), optional
        Scores of a model at random initialisation on each task (needed by
        ``"lopez_paz"``).
    mode : {"lopez_paz", "diaz_rodriguez"}
        ``"lopez_paz"``: :math:`\\frac{1}{T-1}\\sum_{j=2}^T (R_{j-1,j} - b_j)`.
        ``"diaz_rodriguez"``: :math:`\\sum_{i<j} R_{i,j} / (T(T-1)/2)` (the curriculum
        paper's FWT: mean of the upper triangle; it is only meaningful in the
        task-incremental scenario, where the masked head can predict unseen classes).

    Examples
    --------
    >>> R = [[0.9, 0.2, 0.1], [0.5, 0.8, 0.3], [0.3, 0.6, 0.7]]
    >>> round(forward_transfer(R, b=[0.1, 0.1, 0.1]), 4)   # ((0.2-0.1) + (0.3-0.1)) / 2
    0.15
    >>> round(forward_transfer(R, mode="diaz_rodriguez"), 4)  # (0.2 + 0.1 + 0.3) / 3
    0.2
    """
    R, T = _square(R)
    check_choice("mode", mode, ["lopez_paz", "diaz_rodriguez"])
    if T < 2:
        return float("nan")
    if mode == "diaz_rodriguez":
        return _mean_of_known(R[np.triu_indices(T, k=1)])
    if b is None:
        raise ValueError("b (baseline scores at initialisation, shape (num_tasks,)) is required for mode='lopez_paz'")
    b = np.asarray(b, dtype=float)
    if b.shape != (T,):
        raise ValueError(f"b must have shape ({T},), got {b.shape}")
    idx = np.arange(1, T)
    return _mean_of_known(R[idx - 1, idx] - b[idx])


def _mean_of_known(values) -> float:
    """Mean of the non-NaN ``values``; NaN (without a warning) when none is known."""
    values = np.asarray(values, dtype=float)
    known = values[~np.isnan(values)]
    return float(known.mean()) if known.size else float("nan")


def forgetting(R, higher_is_better: bool = True) -> float:
    """Average forgetting over the first ``T - 1`` tasks.

    Accuracy (Chaudhry et al. 2018):
    :math:`f_j = \\max_{k \\in [j, T-1]} R_{k,j} - R_{T,j}`.
    Error matrix ``M`` (``higher_is_better=False``, the taskification paper):
    :math:`f_j = M_{T,j} - \\min_{k \\in [j, T-1]} M_{k,j}`.
    Both are averaged as :math:`\\frac{1}{T-1}\\sum_{j=1}^{T-1} f_j` (1-based); larger
    means more forgetting. Neither is bounded below by 0: the best earlier stage is
    taken over rows :math:`j .. T-1`, which exclude the final row, so a task the final
    model does better on than at any earlier stage (positive backward transfer) gives
    :math:`f_j < 0`, and so can the average -- the taskification paper's Table 1 reports
    a forgetting of -0.27.

    Examples
    --------
    >>> R = [[0.9, 0.0, 0.0], [0.5, 0.8, 0.0], [0.3, 0.6, 0.7]]
    >>> round(forgetting(R), 4)       # ((0.9-0.3) + (0.8-0.6)) / 2
    0.4
    >>> M = [[1.0, 5.0, 5.0], [2.0, 1.5, 5.0], [4.0, 1.0, 1.0]]
    >>> round(forgetting(M, higher_is_better=False), 4)   # ((4-1) + (1-1.5)) / 2
    1.25
    >>> round(forgetting([[0.5, 0.0], [0.7, 0.9]]), 4)   # task 0 improved: 0.5 - 0.7
    -0.2
    """
    R, T = _square(R)
    if T < 2:
        return float("nan")
    lower = np.where(np.tril(np.ones((T, T), dtype=bool)), R, np.nan)[:-1, :-1]  # rows k<T-1, k>=j
    with warnings.catch_warnings():  # all-NaN columns: nanmax/nanmin of an empty slice
        warnings.simplefilter("ignore", RuntimeWarning)
        if higher_is_better:
            f = np.nanmax(lower, axis=0) - R[-1, :-1]
        else:
            f = R[-1, :-1] - np.nanmin(lower, axis=0)
    return float(np.nanmean(f))


def _acc_over_time(A):
    A = check_matrix("acc_over_time", A)
    return A


def stream_average_accuracy(A) -> float:
    """DRIFT's Average Accuracy :math:`AA = \\frac1K\\sum_k A_{B,k}`.

    Parameters
    ----------
    A : array_like, shape (num_evals, num_tasks)
        ``A[i, k]`` = accuracy on the test set of latent task k at the i-th
        evaluation point; the last row is the end of the stream (batch B).

    Examples
    --------
    >>> stream_average_accuracy([[0.5, 0.1], [0.3, 0.7]])
    0.5
    """
    A = _acc_over_time(A)
    return float(np.nanmean(A[-1]))


def stream_forgetting(A) -> float:
    """DRIFT's AF (hard transitions) and AF_s (Eq. 8), with the paper's reported sign.

    Eq. 8 prints :math:`AF_s = \\frac1K\\sum_k (\\max_{i\\le B} A_{i,k} - A_{B,k})`, which is
    never negative, yet the paper's tables report AF_s as negative percentages with
    "higher is better" (e.g. ER −37.6 %). Following the numbers, we return
    :math:`\\frac1K\\sum_k (A_{B,k} - \\max_{i\\le B} A_{i,k}) \\le 0`; 0 means no forgetting.

    Parameters
    ----------
    A : array_like, shape (num_evals, num_tasks)

    Examples
    --------
    >>> stream_forgetting([[0.5, 0.1], [0.3, 0.7]])   # ((0.3-0.5) + (0.7-0.7)) / 2
    -0.1
    """
    A = _acc_over_time(A)
    return float(np.nanmean(A[-1] - np.nanmax(A, axis=0)))


def stream_auc(A) -> float:
    """DRIFT's area under the accuracy curve, Eq. 7.

    :math:`A_{AUC} = \\frac1M\\sum_{j=1}^M \\bar A(j\\Delta)`, with :math:`\\bar A(t)` the
    mean accuracy over all latent-task test sets after t batches. Pass the rows
    evaluated every Δ batches (``A[j-1]`` = evaluation after :math:`j\\Delta` batches).

    Parameters
    ----------
    A : array_like, shape (num_evals, num_tasks)

    Examples
    --------
    >>> stream_auc([[0.5, 0.1], [0.3, 0.7]])   # (0.3 + 0.5) / 2
    0.4
    """
    A = _acc_over_time(A)
    return float(np.nanmean(np.nanmean(A, axis=1)))
