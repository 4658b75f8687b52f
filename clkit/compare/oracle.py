"""The oracle control of a comparison, and the pipeline check of a planted copy.

The null control (:func:`clkit.compare.verdicts.verdicts`) checks that the rule does not see a
difference where there is none. The **oracle control** checks the other side on the same runs:
that an effect of a stated size in seed-noise units *is* found. It takes the null control's own
pairs (the control method against its rerun on the same keys, or the split-half pairs without a
rerun), which carry the seed noise of two independent draws of the same training, and plants a
gain of ``gain`` on ACC into one arm of every pair (:func:`plant_gain`):

    gain = sds · sd_unit,

``sd_unit`` the spread of the paired ACC differences of the sharpest comparison of the run (the
smallest sd of the findings' ACC differences: the scale the findings are decided on), ``sds``
a number of such spreads (default 3). The rule must call the planted arm "higher". Because the
planted pairs keep their noise, the oracle is a test of the rule on the runs' own noise: under a
rule that cannot find anything, or with a gain far below the noise, it fails. Its stated power is
:func:`clkit.stats.power` at the pairs' standardised effect ``gain / sd(null differences)``.

The **pipeline check** (:func:`pipeline_check`) is the older copy-of-itself check: each run of
the control method against a copy whose final row is moved ``shift`` of the way to perfect
accuracy, ``R'[T-1, j] = R[T-1, j] + shift (1 - R[T-1, j])``. Its differences carry no noise, so
it tests no statistics: it checks that reading, pairing, the metric and its direction return
exactly the planted ``shift (1 - ACC)`` per run. It is listed as a pipeline check, not as a control.

Both move the final row only, so of the other metrics BWT and forgetting move too and FWT does
not; both are decided on ACC (the final-row mean).
"""

from __future__ import annotations

import numpy as np

from .. import stats
from .metrics import run_metrics
from .runs import Run, seed_key

__all__ = ["planted_copy", "plant_gain", "pipeline_check", "oracle_verdict"]


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
                       "way to 1)", used="planted copy for the pipeline check"))
    if not out:
        methods = sorted({r.method for r in runs})
        raise ValueError(f"oracle method {method!r} is not among the runs' methods {methods}")
    return out


def plant_gain(R, gain: float) -> np.ndarray:
    """``R`` with its ACC raised by exactly ``gain``: each final-row cell moved ``s = gain / (1 - ACC)``
    of the way to 1 (so every cell stays in [0, 1]); ``s`` is capped at 1 (all final-row cells at 1),
    where the gain is then ``1 - ACC``.

    Parameters
    ----------
    R : array, shape (T, T)
    gain : float
        ``>= 0``, on the fraction scale.

    Returns
    -------
    array, shape (T, T)

    Examples
    --------
    >>> R = np.array([[0.9, np.nan], [0.6, 0.8]])
    >>> plant_gain(R, 0.1)[-1].tolist(), round(float(np.mean(plant_gain(R, 0.1)[-1]) - 0.7), 12)
    ([0.7333333333333333, 0.8666666666666667], 0.1)
    """
    if not (np.isfinite(gain) and gain >= 0):
        raise ValueError(f"gain must be a finite number >= 0, got {gain!r}")
    R = np.array(R, dtype=float)
    err = 1.0 - float(np.mean(R[-1]))
    s = 1.0 if err <= gain else gain / err
    R[-1] = R[-1] + s * (1.0 - R[-1])
    return R


def pipeline_check(runs, method: str, shift: float, tol: float = 1e-9) -> dict:
    """The copy-of-itself check: :func:`planted_copy` of ``method`` against ``method``, run by run.

    Returns
    -------
    dict
        ``check`` (its name), ``passed`` (every run's recomputed ACC gain equals ``shift (1 - ACC)``
        within ``tol``), ``n`` (runs), ``gain`` (the mean planted gain), ``text`` (one sentence).

    Examples
    --------
    >>> rs = [Run("a", str(s), None, None, np.array([[0.9, np.nan], [0.6, 0.8]]), "x") for s in range(3)]
    >>> c = pipeline_check(rs, "a", 0.1)
    >>> c["passed"], c["n"], round(c["gain"], 4)
    (True, 3, 0.03)
    """
    runs = list(runs)
    copies = {r.key: r for r in planted_copy(runs, method, shift)}
    base = [r for r in runs if r.method == method]
    got = np.array([run_metrics(copies[r.key].R)["acc"] - run_metrics(r.R)["acc"] for r in base])
    want = np.array([shift * (1.0 - run_metrics(r.R)["acc"]) for r in base])
    passed = bool(np.all(np.abs(got - want) <= tol))
    name = f"ACC: {method} copy with {shift:g} of the final row's error removed − {method}"
    text = (f"{name}: the recomputed gain equals the planted {shift:g} (1 − ACC) on "
            + (f"all {len(base)} runs" if passed else
               f"{int(np.sum(np.abs(got - want) <= tol))} of {len(base)} runs only: reading, pairing or the metric "
               "is broken"))
    return {"check": name, "passed": passed, "n": len(base), "gain": float(got.mean()), "text": text}


def oracle_verdict(pairs, gain: float, *, unit: str = "", alpha: float = stats.ALPHA):
    """The oracle control: ``gain`` planted on ACC into the second arm of each null-control pair.

    Parameters
    ----------
    pairs : list of (Run, Run)
        The null control's pairs (:func:`clkit.compare.verdicts.rerun_pairs` or
        :func:`~clkit.compare.verdicts.null_pairs`), first the control's run.
    gain : float
        The ACC gain to plant (``sds · sd_unit``, see the module docstring).
    unit : str
        How ``gain`` was sized, printed in the row's note.
    alpha : float
        The level it is decided at.

    Returns
    -------
    clkit.stats.Verdict
        Role ``"oracle control"``, must read ``"planted higher"``; its note states the power the
        rule has to find ``gain`` on these pairs' noise (:func:`clkit.stats.power`).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> rs = [Run(m, str(s), None, None, np.tril(0.5 + 0.02 * rng.standard_normal((3, 3))), "x")
    ...       for m in ("a", "b") for s in range(8)]
    >>> pairs = [(rs[i], rs[i + 8]) for i in range(8)]
    >>> v = oracle_verdict(pairs, 0.05)
    >>> v.decision, v.control_ok, round(v.effect, 3)
    ('planted higher', True, 0.051)
    >>> oracle_verdict(pairs, 1e-9).control_ok
    False
    """
    pairs = sorted(pairs, key=lambda p: tuple(seed_key(x) for x in p[0].key))
    if len(pairs) < 2:
        raise ValueError(f"the oracle control needs at least 2 null-control pairs, got {len(pairs)}")
    b = np.array([run_metrics(x.R)["acc"] for x, _ in pairs])
    raw = np.array([run_metrics(y.R)["acc"] for _, y in pairs])
    a = np.array([run_metrics(plant_gain(y.R, gain))["acc"] for _, y in pairs])
    capped = int(np.sum(a - raw < gain - 1e-12))
    sd = float(np.std(raw - b, ddof=1))
    pw = 1.0 if sd == 0 and gain > 0 else stats.power(len(pairs), gain / sd, alpha) if sd > 0 else 0.0
    method = pairs[0][0].method
    v = stats.paired(a, b, comparison=f"ACC: {pairs[0][1].method} + planted {stats._num(gain)} − {method}",
                     higher="planted higher", lower="planted lower", role="oracle control",
                     expect="planted higher", alpha=alpha)
    note = (f"(planted +{stats._num(gain)} on ACC{', ' + unit if unit else ''}; on these pairs' noise, sd "
            f"{stats._num(sd)}, the rule finds it with {100 * pw:.0f} % power at α = {alpha:g}"
            + (f"; capped at ACC = 1 on {capped} run(s)" if capped else "") + ")")
    from dataclasses import replace

    return replace(v, note=(v.note + " " + note).strip())
