"""Checks of runs before they are compared: every failure is a ``ValueError`` naming the file, the run and the field.

- :func:`check_scores`: one run's matrix -- square, no NaN on or below the diagonal (only cells
  ``j > i``, tasks not yet trained, may be missing), finite, and on the fraction scale [0, 1]
  (with ``percent=True`` in [0, 100], divided by 100). A value above 1 without ``percent`` is
  refused, never rescaled by a guess. A diagonal that is 0 for every task is refused as a
  logger's placeholder (the accuracy was never measured), naming the cause and the fix.
- :func:`check_runs`: the runs of one comparison -- the same task count within a taskification,
  no duplicated ``(method, seed, order, taskification)``, and every compared method holding the
  same ``(seed, order, taskification)`` keys (the missing ones listed).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .._scale import check_not_fractions

from .runs import seed_key

__all__ = ["check_scores", "check_runs"]


def check_scores(R, *, where: str, percent: bool = False, declared: bool = True) -> np.ndarray:
    """``R`` as a float matrix on the fraction scale, or a ``ValueError`` naming ``where`` and the cell.

    Parameters
    ----------
    R : array_like, shape (num_tasks, num_tasks)
    where : str
        The file and run, e.g. ``"runs/ewc_0.csv (run ewc seed 0)"``.
    percent : bool
        The scores are percentages: divide by 100 (values must lie in [0, 100]).
    declared : bool
        ``percent`` is the user's word (``--percent``): a matrix whose values are all at most 1 is then
        refused as fractions (:func:`clkit._scale.check_not_fractions`). A format that always logs
        percentages (mammoth, PyCIL) passes ``False``.

    Examples
    --------
    >>> check_scores([[90, None], [60, 80]], where="x.csv (run a seed 0)", percent=True).tolist()
    [[0.9, nan], [0.6, 0.8]]
    >>> check_scores([[0.9, 0.1], [float("nan"), 0.8]], where="x.csv (run a seed 0)")
    Traceback (most recent call last):
    ...
    ValueError: x.csv (run a seed 0): field accuracy R[1, 0] is missing (NaN); only cells above the diagonal (tasks not yet trained) may be missing
    """
    M = np.array(R, dtype=float)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] < 2:
        raise ValueError(f"{where}: field accuracy must form a square matrix of at least 2 x 2 (one row and one "
                         f"column per task), got shape {M.shape}")
    T = M.shape[0]
    bad = np.argwhere(np.isnan(M) & ~np.triu(np.ones((T, T), bool), 1))
    if len(bad):
        i, j = bad[0]
        raise ValueError(f"{where}: field accuracy R[{i}, {j}] is missing (NaN); only cells above the diagonal "
                         "(tasks not yet trained) may be missing")
    if np.isinf(M).any():
        i, j = np.argwhere(np.isinf(M))[0]
        raise ValueError(f"{where}: field accuracy R[{i}, {j}] is infinite")
    top = 100.0 if percent else 1.0
    vals = M[np.isfinite(M)]
    out = np.argwhere(np.isfinite(M) & ((M < 0) | (M > top)))
    if len(out):
        i, j = out[0]
        hint = (" It looks like percent: pass percent=True (clkit compare --percent)."
                if not percent and vals.min() >= 0 and vals.max() <= 100 else "")
        raise ValueError(f"{where}: field accuracy R[{i}, {j}] = {M[i, j]:g} is outside [0, {top:g}] (range "
                         f"{vals.min():g} to {vals.max():g}); scores are {'percentages' if percent else 'fractions'}."
                         f"{hint}")
    if percent and declared:
        check_not_fractions(M, where=f"{where}: field accuracy")
    if np.all(np.diag(M) == 0):
        raise ValueError(f"{where}: field accuracy: the diagonal R[k, k] is 0 for all {T} tasks: no trained model "
                         "scores 0 on the task it was just trained on, so the accuracy was most likely never "
                         "measured and a logger wrote a placeholder (Avalanche's CSVLogger writes 0 when the "
                         "EvaluationPlugin lacks accuracy_metrics(experience=True)). Monitor the per-task accuracy "
                         "and log the runs again")
    return M / 100.0 if percent else M


def check_runs(runs, methods=None) -> None:
    """Refuse runs that cannot be compared; ``methods`` (default: all) are the ones compared.

    Raises
    ------
    ValueError
        Different task counts within a taskification (naming the odd runs' files), a duplicated
        ``(method, seed, order, taskification)`` (naming both files), or a compared method missing
        a ``(seed, order, taskification)`` that another compared method has (listing every one).

    Examples
    --------
    >>> from clkit.compare.runs import Run
    >>> eye = np.eye(2)
    >>> rs = [Run("a", "0", None, None, eye, "a0.csv"), Run("a", "1", None, None, eye, "a1.csv"),
    ...       Run("b", "0", None, None, eye, "b0.csv")]
    >>> check_runs(rs)
    Traceback (most recent call last):
    ...
    ValueError: method 'b' is missing runs that other compared methods have (field seed): seed 1 (a has it: a1.csv); every method needs the same seeds (and orders) to be paired
    """
    runs = list(runs)
    seen = {}
    for r in runs:
        ident = (r.method,) + r.key
        if ident in seen:
            raise ValueError(f"duplicated run {r.label} (field seed): in {seen[ident].source} and in {r.source}; "
                             "each (method, seed, order, taskification) may appear once")
        seen[ident] = r
    by_task = {}
    for r in runs:
        by_task.setdefault(r.taskification, []).append(r)
    for tk, group in by_task.items():
        counts = Counter(r.num_tasks for r in group)
        if len(counts) > 1:
            common = counts.most_common(1)[0][0]
            odd = [r for r in group if r.num_tasks != common]
            what = f" of taskification {tk}" if tk is not None else ""
            raise ValueError(f"runs{what} have different task counts (field num_tasks): most have {common}, but "
                             + "; ".join(f"{r.source} (run {r.label}) has {r.num_tasks}" for r in odd)
                             + ". Runs compared with each other must share the tasks")
    methods = list(dict.fromkeys(r.method for r in runs)) if methods is None else list(methods)
    present = {m: {r.key: r for r in runs if r.method == m} for m in methods}
    for m in methods:
        if not present[m]:
            raise ValueError(f"method {m!r} has no runs; the runs read have methods "
                             f"{sorted({r.method for r in runs})}")
    keys = {}
    for m in methods:
        for k, r in present[m].items():
            keys.setdefault(k, r)
    for m in methods:
        missing = sorted((k for k in keys if k not in present[m]), key=lambda k: tuple(seed_key(x) for x in k))
        if missing:
            def name(k):
                text = f"seed {k[0]}" + (f" order {k[1]}" if k[1] is not None else "")
                return text + (f" taskification {k[2]}" if k[2] is not None else "")
            raise ValueError(f"method {m!r} is missing runs that other compared methods have (field seed): "
                             + ", ".join(f"{name(k)} ({keys[k].method} has it: {keys[k].source})" for k in missing)
                             + "; every method needs the same seeds (and orders) to be paired")
