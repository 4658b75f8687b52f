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

from .sequences import TIE_RTOL

__all__ = ["score_classes", "eta_squared", "first_task_classes", "midrank_percentiles", "tie_members",
           "tie_pairs", "tie_percentiles", "reversal_pairs", "structure_table", "beyond_chance", "ceiling",
           "MAX_TIE_PAIRS", "CHANCE_MAX", "ROOM"]

#: eta^2 by chance above which the S-class ceiling says nothing (most S-classes hold one or two sequences,
#: e.g. a sample of 256 of 2,520 sequences: 0.93)
CHANCE_MAX = 0.8
#: how much more than R^2 a function of S must explain beyond chance before a text says there is room
ROOM = 0.1

#: most (hard, easy) pairs a tie-averaged statistic averages over (evenly spaced members beyond)
MAX_TIE_PAIRS = 64


def score_classes(scores, rtol: float = TIE_RTOL) -> np.ndarray:
    """Group index of each sequence: ``S(O)`` equal within ``rtol * max(1, |S|)`` share one.

    The same tolerance as the hard / easy search's tie rule
    (:func:`~clkit.edge.sequences.canonical_order`): sorted scores start a new class where
    the gap to the previous one exceeds it, so float rounding never splits a tie.

    Examples
    --------
    >>> score_classes([0.3, 0.1, 0.3 + 1e-13, 0.2]).tolist()
    [2, 0, 2, 1]
    """
    s = np.asarray(scores, dtype=float).ravel()
    order = np.argsort(s, kind="stable")
    srt = s[order]
    new = np.diff(srt) > rtol * np.maximum(1.0, np.abs(srt[1:]))
    out = np.empty(len(s), dtype=np.int64)
    out[order] = np.concatenate([[0], np.cumsum(new)]) if len(s) else []
    return out


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


def tie_members(scores, index, rtol: float = TIE_RTOL) -> np.ndarray:
    """Positions (ascending) of every sequence whose ``S(O)`` equals that of sequence ``index``.

    Examples
    --------
    >>> tie_members([0.5, 0.7, 0.5, 0.9], 2).tolist()
    [0, 2]
    """
    cls = score_classes(scores, rtol)
    return np.nonzero(cls == cls[int(index)])[0]


def tie_pairs(scores, hard, easy, *, max_pairs: int = MAX_TIE_PAIRS, rtol: float = TIE_RTOL) -> np.ndarray:
    """Every (hard, easy) pair EDGE could have returned: the S-tie of ``hard`` times that of ``easy``.

    A search that ranks sequences by ``S(O)`` cannot tell tie-mates apart (every sequence ties
    with its reverse), so a statistic of EDGE's sequences is averaged over these pairs: then it
    does not depend on which member float rounding or the tie rule picked. Pairs are listed in
    position order (hard first); a tie too large for ``max_pairs`` is thinned to evenly spaced
    members, the same whichever member was given.

    Parameters
    ----------
    scores : array_like, shape (L,)
        The score the search ranked by (``S(O)``, or the generalised score).
    hard, easy : int
        Positions of the search's sequences.

    Returns
    -------
    ndarray of int, shape (P, 2)

    Examples
    --------
    >>> tie_pairs([0.1, 0.9, 0.1, 0.5, 0.9], 2, 1).tolist()
    [[0, 1], [0, 4], [2, 1], [2, 4]]
    """
    th, te = tie_members(scores, hard, rtol), tie_members(scores, easy, rtol)
    per = max(1, int(np.sqrt(max_pairs)))
    if len(th) * len(te) > max_pairs:
        th, te = (t if len(t) <= per else t[np.unique(np.linspace(0, len(t) - 1, per).round().astype(int))]
                  for t in (th, te))
    return np.array([[a, b] for a in th for b in te], dtype=np.int64)


def tie_percentiles(values, scores, index, rtol: float = TIE_RTOL, population=None) -> dict:
    """Accuracy percentile of sequence ``index`` averaged over its S-tie, with the tie's range.

    Parameters
    ----------
    values : array_like, shape (L,)
        Accuracy of every sequence (``NaN`` allowed outside ``population`` and the tie).
    scores : array_like, shape (L,)
        ``S(O)`` of every sequence.
    index : int
        The sequence reported (e.g. EDGE's hard sequence).
    rtol : float
        Tolerance of a tie (:func:`score_classes`).
    population : array_like of int, optional
        Positions of the sequences the percentiles are taken among (default: all ``L``;
        a uniform sample for a sampled ground truth, :mod:`clkit.edge.truth`).

    Returns
    -------
    dict
        ``pct`` (tie-averaged mid-rank percentile), ``pct_min`` / ``pct_max`` (over the
        tie), ``pct_member`` (of ``index`` itself), ``tie_size``, ``pct_se``, the
        sampling error of ``pct`` (0 when the population is all ``L`` sequences;
        :func:`clkit.edge.truth.percentile_se` otherwise), and ``pct_low`` / ``pct_high``, its
        95 % Wilson interval (:func:`clkit.edge.truth.percentile_interval`: never of width 0
        at 0 or 100 under a sample; the point itself for the whole population). Every member
        of a tie gets the same ``pct``, ``pct_min`` and ``pct_max``.

    Examples
    --------
    >>> out = tie_percentiles([1.0, 2.0, 3.0, 4.0], [0.5, 0.7, 0.5, 0.9], 0)
    >>> out["pct"], out["pct_min"], out["pct_max"], out["tie_size"], out["pct_se"], out["pct_low"]
    (37.5, 12.5, 62.5, 2, 0.0, 37.5)
    """
    from .truth import percentile_interval, percentile_se

    v = np.asarray(values, dtype=float)
    pop = np.arange(len(v)) if population is None else np.asarray(population, dtype=np.int64)
    ref = np.sort(v[pop])
    if not np.isfinite(ref).all():
        raise ValueError("values must be known (finite) for every sequence of the population")
    members = tie_members(scores, index, rtol)
    if not np.isfinite(v[members]).all():
        raise ValueError(f"values must be known for every member of the S-tie of sequence {int(index)}")
    pct = midrank_percentiles(ref, v[members])
    i = int(np.nonzero(members == int(index))[0][0])
    low, high = percentile_interval(float(pct.mean()), len(ref), len(v))
    return {"pct": float(pct.mean()), "pct_min": float(pct.min()), "pct_max": float(pct.max()),
            "pct_member": float(pct[i]), "tie_size": int(len(members)),
            "pct_se": percentile_se(float(pct.mean()), len(ref), len(v)), "pct_low": low, "pct_high": high}


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


def structure_table(truth: dict, scores, sequences, rtol: float = TIE_RTOL):
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
        little), and ``eta^2 first task by chance`` likewise for the first task's groups.
    """
    import pandas as pd

    s = np.asarray(scores, dtype=float)
    cls = score_classes(s, rtol)
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
                      "eta^2 by chance": float(cls.max()) / (len(a) - 1),
                      "eta^2 first task by chance": float(first.max()) / (len(a) - 1)}
    return pd.DataFrame(rows).T


def beyond_chance(eta2: float, chance: float) -> float:
    """The share of the variance a grouping explains beyond what as many groups explain by chance.

    ``(eta^2 - chance) / (1 - chance)`` (the adjusted eta^2, epsilon^2): 0 when accuracy is
    unrelated to the groups, negative when members of a group differ *more* than random
    sequences do.

    Examples
    --------
    >>> round(beyond_chance(0.6, 0.5), 2), round(beyond_chance(0.22, 0.5), 2)
    (0.2, -0.56)
    """
    return float((eta2 - chance) / (1 - chance)) if chance < 1 else float("nan")


def ceiling(table) -> dict:
    """What the S-class ceiling says per learner, from :func:`structure_table`'s numbers -- only what holds.

    Returns
    -------
    dict
        ``informative`` (False when ``eta^2 by chance`` exceeds :data:`CHANCE_MAX`: the
        ceiling says nothing, e.g. on a small sample), ``chance``, ``beyond`` (``{learner:
        beyond_chance(eta^2 S-classes)}``), ``first_beyond`` (the same for the first task),
        and the learners of each case: ``at_chance`` (eta^2 at or below its chance value:
        sequences of equal S differ at least as much as random ones, no function of S ranks
        them), ``near`` (a function of S could explain at most ``ROOM`` more than R^2 beyond
        chance), ``room`` (it could explain ``ROOM`` or more than R^2), ``first`` (the first
        task alone explains more, beyond chance, than any function of S).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"R^2": [0.0, 0.0, 0.0], "eta^2 S-classes": [0.22, 0.54, 0.63],
    ...                   "eta^2 by chance": [0.5] * 3, "eta^2 first task": [0.7, 0.43, 0.47],
    ...                   "eta^2 first task by chance": [0.01] * 3}, index=["ncm", "ewc", "finetune"])
    >>> c = ceiling(t)
    >>> c["at_chance"], c["near"], c["room"], c["first"]
    (['ncm'], ['ewc'], ['finetune'], ['ncm', 'ewc', 'finetune'])
    """
    chance = float(table["eta^2 by chance"].iloc[0]) if len(table) else float("nan")
    out = {"informative": bool(np.isfinite(chance) and chance <= CHANCE_MAX), "chance": chance, "beyond": {},
           "first_beyond": {}, "at_chance": [], "near": [], "room": [], "first": []}
    for name, row in table.iterrows():
        b = beyond_chance(row["eta^2 S-classes"], row["eta^2 by chance"])
        f = beyond_chance(row["eta^2 first task"], row.get("eta^2 first task by chance", 0.0))
        out["beyond"][name], out["first_beyond"][name] = b, f
        if not out["informative"]:
            continue
        out["at_chance" if b <= 0 else "near" if b - row["R^2"] < ROOM else "room"].append(name)
        if f > max(b, 0.0):
            out["first"].append(name)
    return out
