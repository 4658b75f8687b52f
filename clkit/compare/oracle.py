"""The oracle control of a comparison: a planted effect the rule must find on the user's own runs.

The null control (:func:`clkit.compare.verdicts.null_pairs`) checks that the rule does not see a
difference where there is none. The oracle checks the other side on the same runs: that an effect
of a known size *can* show. It is a copy of one method's runs with every cell of the final row of
``R`` moved ``shift`` of the way to perfect accuracy, ``R'[T-1, j] = R[T-1, j] + shift (1 -
R[T-1, j])``, paired with the originals seed by seed. The copy stays a valid accuracy matrix (every
cell in [0, 1]) and its ACC rises by exactly ``shift (1 - ACC)`` per run, so the planted effect
on ACC is ``shift`` times the mean error of the method. The rule must call the copy "higher".
Each run is paired with its own copy, so the differences carry no seed noise: the oracle checks
the pipeline (reading, pairing, the metric and its direction), not the power. How small an effect
the runs can show is each verdict's ``detectable`` and :func:`clkit.compare.verdicts.planner`.

This moves the final row only, so of the other metrics BWT and forgetting move too and FWT does
not; the oracle is decided on ACC (the final-row mean), alone at α (it is a check, not a finding).
"""

from __future__ import annotations

import numpy as np

from .. import stats
from .metrics import run_metrics
from .runs import Run, seed_key

__all__ = ["planted_copy", "oracle_verdict"]


def planted_copy(runs, method: str, shift: float, *, name: str = "planted") -> list:
    """Copies of ``method``'s runs, final row moved ``shift`` of the way to 1, renamed ``name``.

    Parameters
    ----------
    runs : iterable of Run
    method : str
        The method whose runs are copied.
    shift : float
        In (0, 1]: the fraction of each final-row cell's error removed.
    name : str
        The copies' method name.

    Returns
    -------
    list of Run

    Examples
    --------
    >>> r = Run("a", "0", None, None, np.array([[0.9, np.nan], [0.6, 0.8]]), "a0.csv")
    >>> planted_copy([r], "a", 0.5)[0].R.tolist()
    [[0.9, nan], [0.8, 0.9]]
    """
    from .._validate import check_real

    shift = check_real("oracle_shift", shift, low=0, high=1, low_open=True)
    out = []
    for r in runs:
        if r.method != method:
            continue
        R = np.array(r.R, dtype=float)
        R[-1] = R[-1] + shift * (1.0 - R[-1])
        out.append(Run(name, r.seed, r.order, r.taskification, R, f"{r.source} (final row moved {shift:g} of the "
                       "way to 1)", used="planted copy for the oracle control"))
    if not out:
        methods = sorted({r.method for r in runs})
        raise ValueError(f"oracle method {method!r} is not among the runs' methods {methods}")
    return out


def oracle_verdict(runs, method: str, shift: float):
    """The oracle control: :func:`planted_copy` of ``method`` against ``method``, paired over runs, on ACC.

    Returns a :class:`clkit.stats.Verdict` with role ``"oracle control"`` that must read
    ``"planted higher"``; its ``effect`` is the planted mean ACC gain.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> rs = [Run("a", str(s), None, None, np.tril(0.5 + 0.05 * rng.standard_normal((3, 3))), "x")
    ...       for s in range(6)]
    >>> v = oracle_verdict(rs, "a", 0.2)
    >>> v.decision, v.control_ok
    ('planted higher', True)
    """
    runs = list(runs)
    planted = {r.key: r for r in planted_copy(runs, method, shift)}
    base = sorted((r for r in runs if r.method == method), key=lambda r: tuple(seed_key(x) for x in r.key))
    a = [run_metrics(planted[r.key].R)["acc"] for r in base]
    b = [run_metrics(r.R)["acc"] for r in base]
    return stats.paired(a, b, comparison=f"ACC: {method} planted ({shift:g} of the final row's error removed) − "
                                         f"{method}", higher="planted higher", lower="planted lower",
                        role="oracle control", expect="planted higher")
