"""What S(O) *can* explain: ties, the explainable-variance ceiling, the first task's share.

EDGE ranks sequences by their inter-task similarity score ``S(O)`` (Eq. 5), which sums
the similarity of *adjacent* tasks. That score has structure a reader must know before
judging a correlation ``R`` between ``S(O)`` and accuracy:

* **Ties.** Sequences with the same ``S`` are indistinguishable to EDGE. With 3 tasks
  ``S`` depends only on the middle task (``S = sim(T1, T2) + sim(T2, T3)`` and the
  union of T1 and T3 is fixed by T2): 6 classes in 3 tasks give 15 distinct values for
  90 sequences, each a 6-way tie. A percentile reported for *one* member of a tie
  (picked by float rounding) is arbitrary: :func:`tie_percentiles` reports the mean
  over the tie (tie-averaged) and its range.
* **Ceiling.** Whatever function of ``S`` one fits, it cannot explain the accuracy
  variance *within* an S-class. The share it can explain at most is the correlation
  ratio ``eta^2 = SS_between / SS_total`` of accuracy grouped by S-class
  (:func:`eta_squared`); ``R^2 <= eta^2``. The same ratio grouped by the first task
  (:func:`first_task_classes`) says how much of the spread the first task alone
  explains.
* **Reversal.** ``S`` of a sequence equals ``S`` of its reverse (adjacency is
  symmetric), while learners generally do not treat a sequence and its reverse alike:
  :func:`reversal_pairs` pairs them so the difference can be measured.
"""

from __future__ import annotations

import numpy as np

__all__ = ["score_classes", "eta_squared", "first_task_classes", "midrank_percentiles", "tie_members",
           "tie_percentiles", "reversal_pairs",
           "structure_table"]


def score_classes(scores, decimals: int = 9) -> np.ndarray:
    """Group index of each sequence: equal ``S(O)`` (after rounding to ``decimals``) share one.

    Examples
    --------
    >>> score_classes([0.3, 0.1, 0.3 + 1e-13, 0.2]).tolist()
    [2, 0, 2, 1]
    """
    s = np.round(np.asarray(scores, dtype=float), decimals)
    return np.unique(s, return_inverse=True)[1].ravel()


def eta_squared(values, groups) -> float:
    """Correlation ratio: the share of the variance of ``values`` explained by ``groups``.

    ``SS_between / SS_total``; the most any function of the group can explain. NaN when
    ``values`` are constant.

    Examples
    --------
    >>> round(eta_squared([1.0, 3.0, 5.0, 7.0], [0, 0, 1, 1]), 3)   # (4*4) / 20
    0.8
    >>> eta_squared([1.0, 3.0, 1.0, 3.0], [0, 0, 1, 1])
    0.0
    """
    v = np.asarray(values, dtype=float)
    g = np.asarray(groups).ravel()
    if v.shape != g.shape:
        raise ValueError(f"values and groups must have the same length, got {v.shape} and {g.shape}")
    total = ((v - v.mean()) ** 2).sum()
    if total <= 0:
        return float("nan")
    _, inv, counts = np.unique(g, return_inverse=True, return_counts=True)
    means = np.bincount(inv, weights=v) / counts
    return float((counts * (means - v.mean()) ** 2).sum() / total)


def first_task_classes(sequences) -> np.ndarray:
    """Group index of each sequence by its first task (as a set of classes).

    Examples
    --------
    >>> first_task_classes([[[0, 1], [2, 3]], [[1, 0], [3, 2]], [[2, 3], [0, 1]]]).tolist()
    [0, 0, 1]
    """
    first = np.sort(np.asarray(sequences)[:, 0], axis=-1)
    return np.unique(first, axis=0, return_inverse=True)[1].ravel()


def midrank_percentiles(reference, values) -> np.ndarray:
    """Mid-rank percentile (0-100) of each of ``values`` among ``reference``.

    ``100 * (#below + #equal / 2) / len(reference)``, with equality up to a relative
    tolerance of 1e-9 (so float rounding does not split a tie).

    Examples
    --------
    >>> midrank_percentiles([1.0, 2.0, 3.0, 4.0], [1.0, 4.0, 2.5]).tolist()
    [12.5, 87.5, 50.0]
    """
    ref = np.sort(np.asarray(reference, dtype=float))
    x = np.atleast_1d(np.asarray(values, dtype=float))
    tol = 1e-9 * np.maximum(1.0, np.abs(x))
    below = np.searchsorted(ref, x - tol, side="left")
    upto = np.searchsorted(ref, x + tol, side="right")
    return 100.0 * (below + 0.5 * (upto - below)) / len(ref)


def tie_members(scores, index, decimals: int = 9) -> np.ndarray:
    """Positions of every sequence whose ``S(O)`` equals that of sequence ``index``.

    Examples
    --------
    >>> tie_members([0.5, 0.7, 0.5, 0.9], 2).tolist()
    [0, 2]
    """
    cls = score_classes(scores, decimals)
    return np.nonzero(cls == cls[int(index)])[0]


def tie_percentiles(values, scores, index, decimals: int = 9, population=None) -> dict:
    """Accuracy percentile of sequence ``index`` averaged over its S-tie, with the tie's range.

    Parameters
    ----------
    values : array_like, shape (L,)
        Accuracy of every sequence (``NaN`` allowed outside ``population`` and the tie).
    scores : array_like, shape (L,)
        ``S(O)`` of every sequence.
    index : int
        The sequence reported (e.g. EDGE's hard sequence).
    decimals : int
        Rounding of ``S`` before grouping (:func:`score_classes`).
    population : array_like of int, optional
        Positions of the sequences the percentiles are taken among (default: all ``L``;
        a uniform sample for a sampled ground truth, :mod:`clkit.edge.truth`).

    Returns
    -------
    dict
        ``pct`` (tie-averaged mid-rank percentile), ``pct_min`` / ``pct_max`` (over the
        tie), ``pct_member`` (of ``index`` itself), ``tie_size`` and ``pct_se``, the
        sampling error of ``pct`` (0 when the population is all ``L`` sequences;
        :func:`clkit.edge.truth.percentile_se` otherwise). Every member of a tie gets the
        same ``pct``, ``pct_min`` and ``pct_max``.

    Examples
    --------
    >>> out = tie_percentiles([1.0, 2.0, 3.0, 4.0], [0.5, 0.7, 0.5, 0.9], 0)
    >>> out["pct"], out["pct_min"], out["pct_max"], out["tie_size"], out["pct_se"]
    (37.5, 12.5, 62.5, 2, 0.0)
    """
    from .truth import percentile_se

    v = np.asarray(values, dtype=float)
    pop = np.arange(len(v)) if population is None else np.asarray(population, dtype=np.int64)
    ref = np.sort(v[pop])
    if not np.isfinite(ref).all():
        raise ValueError("values must be known (finite) for every sequence of the population")
    cls = score_classes(scores, decimals)
    members = np.nonzero(cls == cls[int(index)])[0]
    if not np.isfinite(v[members]).all():
        raise ValueError(f"values must be known for every member of the S-tie of sequence {int(index)}")
    pct = midrank_percentiles(ref, v[members])
    i = int(np.nonzero(members == int(index))[0][0])
    return {"pct": float(pct.mean()), "pct_min": float(pct.min()), "pct_max": float(pct.max()),
            "pct_member": float(pct[i]), "tie_size": int(len(members)),
            "pct_se": percentile_se(float(pct.mean()), len(ref), len(v))}


def reversal_pairs(sequences) -> np.ndarray:
    """Index of each sequence's reverse among ``sequences`` (-1 where it is absent).

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> seqs = enumerate_sequences(4, 2)
    >>> rev = reversal_pairs(seqs)
    >>> bool((rev[rev] == np.arange(len(seqs))).all())
    True
    """
    seqs = np.sort(np.asarray(sequences), axis=-1)
    lookup = {s.tobytes(): i for i, s in enumerate(seqs)}
    return np.array([lookup.get(np.ascontiguousarray(s[::-1]).tobytes(), -1) for s in seqs], dtype=np.int64)


def structure_table(truth: dict, scores, sequences, decimals: int = 9):
    """Per learner: ``R``, ``R^2``, the S-class ceiling, the first task's share, reversal gap.

    Parameters
    ----------
    truth : dict
        ``{learner: accuracy of every sequence (L,)}``.
    scores : array_like, shape (L,)
        ``S(O)`` of the same sequences.
    sequences : array_like, shape (L, K, M)

    Returns
    -------
    pandas.DataFrame
        Index learner; columns ``R``, ``R^2``, ``eta^2 S-classes`` (ceiling of R^2),
        ``eta^2 first task``, ``mean |A(O) - A(reverse)|`` (points), the number of
        distinct S values in ``S classes`` and ``eta^2 by chance`` = ``(G - 1) / (L - 1)``,
        the expected eta^2 of ``G`` groups when accuracy is unrelated to them (with
        many small S-classes, e.g. 1,260 pairs at 8/4, the ceiling is near it and says
        little).
    """
    import pandas as pd

    s = np.asarray(scores, dtype=float)
    cls = score_classes(s, decimals)
    first = first_task_classes(sequences)
    rev = reversal_pairs(sequences)
    has = rev >= 0
    rows = {}
    for name, acc in truth.items():
        a = np.asarray(acc, dtype=float)
        r = float(np.corrcoef(s, a)[0, 1]) if np.ptp(s) > 0 and np.ptp(a) > 0 else float("nan")
        rows[name] = {"R": r, "R^2": r * r, "eta^2 S-classes": eta_squared(a, cls),
                      "eta^2 first task": eta_squared(a, first),
                      "mean |A(O) - A(reverse)|": float(np.abs(a[has] - a[rev[has]]).mean()) if has.any()
                      else float("nan"),
                      "S classes": int(cls.max() + 1),
                      "eta^2 by chance": float(cls.max()) / (len(a) - 1)}
    return pd.DataFrame(rows).T
