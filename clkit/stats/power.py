"""What the rule can detect: power, the smallest detectable effect, pairs needed, and the notebooks'
default designs.

Every figure here is taken at ``alpha / m`` for a Holm family of ``m``: Holm rejects a row whose raw
p is below ``alpha / m`` whatever the other rows do (every row ranked before it has a smaller p, below
its own step), so a power computed at ``alpha / m`` is kept under the rule as applied. A figure at
the row's own Holm step ``alpha / (m - i + 1)`` is not: that step is reached only when every row
before it was rejected (issue 53 measured 36-55 % instead of 80 % at the notebooks' defaults).
``tests/test_stats_simulation.py`` simulates the rule at every default design and checks it.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

__all__ = ["POWER", "DEFAULT_DESIGNS", "min_detectable_effect", "power", "pairs_needed", "smallest_constant"]

#: power at which :func:`min_detectable_effect` reports the smallest detectable effect
POWER = 0.8

#: the notebooks' default designs: (notebook, family) -> (pairs n, family size m, where n is read).
#: ``n`` is read from ``notebooks/params/<notebook>/default.yaml`` at the key named (a test fails when
#: they drift apart); ``m`` is the size of the primary family the notebook builds (06: its example runs
#: hold 8 seeds).
DEFAULT_DESIGNS = {
    ("01_taskification", "BPS of adjacent splits"): (6, 2, "num_series"),
    ("01_taskification", "CL average MSE of adjacent splits"): (7, 8, "cl_seeds"),
    ("02_edge", "JSD and W1 per learner"): (30, 8, "num_draws"),
    ("03_temporal_metrics", "TAS/SH/DH against finetune"): (8, 9, "verdict_seeds"),
    ("04_curriculum", "M2I − I2M of replay, generative_replay, gem"): (6, 3, "seeds"),
    ("05_drift", "findings (1), (3a), (3b) under both protocols"): (7, 6, "seeds"),
    ("06_your_runs", "methods against the reference"): (8, 3, None),
}


def min_detectable_effect(n: int, sd: float, alpha: float = 0.05, power: float = POWER) -> float:
    """Smallest ``|mean difference|`` a two-sided paired t-test detects with ``power``.

    ``d_z`` at which the test reaches ``power`` at ``n`` pairs (:func:`_detectable_dz`,
    scipy's noncentral t), times ``sd`` (the spread of the paired differences). NaN for fewer than
    2 pairs or an undefined spread. In a Holm family of ``m`` pass ``alpha / m``.

    Examples
    --------
    >>> round(min_detectable_effect(5, 1.0), 2)   # in units of the differences' sd
    1.68
    >>> round(min_detectable_effect(5, 0.02), 4)
    0.0336
    """
    if n < 2 or not np.isfinite(sd):
        return float("nan")
    if sd == 0:
        return 0.0
    return _detectable_dz(int(n), float(alpha), float(power)) * sd


@lru_cache(maxsize=256)
def _detectable_dz(n: int, alpha: float, power: float) -> float:
    """``d_z`` at which the two-sided paired t-test at ``n`` pairs and ``alpha`` has ``power``.

    Root of the test's power under the noncentral t (scipy's ``nct``; brentq on a
    widening bracket). The lower tail ``nct.cdf(-t_crit)`` is NaN in scipy for large
    noncentralities, where it is negligible, and counts as 0 there. (statsmodels'
    ``TTestPower.solve_power`` returned non-solutions at small ``n`` and ``alpha``, where
    those NaNs occur: 3.40 at n = 4, alpha = 0.05/12, whose power is 0.47, not 0.8.)
    """
    from scipy import optimize

    def reach(dz):
        return _power(n, dz, alpha) - power

    hi = 1.0
    while reach(hi) < 0:
        hi *= 2
    return float(optimize.brentq(reach, 0.0, hi, xtol=1e-10))


def _power(n: int, dz: float, alpha: float) -> float:
    from scipy import stats

    df = n - 1
    t_crit = stats.t.ppf(1 - alpha / 2, df)
    nc = dz * math.sqrt(n)
    lower = stats.nct.cdf(-t_crit, df, nc)
    return float(stats.nct.sf(t_crit, df, nc) + (lower if np.isfinite(lower) else 0.0))


def power(n: int, dz: float, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test at ``n`` pairs for a true effect of ``dz`` spreads.

    Examples
    --------
    >>> round(power(5, 1.68), 2), round(power(4, 2.0, 0.05 / 3), 2)
    (0.8, 0.44)
    """
    if n < 2:
        return float("nan")
    return _power(int(n), float(dz), float(alpha))


def pairs_needed(effect: float, sd: float, *, family: int = 1, alpha: float = 0.05, power_target: float = POWER,
                 max_pairs: int = 100_000) -> int | None:
    """The fewest pairs (seeds, series, ...) at which the paired t-test detects ``effect`` with
    ``power_target`` at ``alpha / family`` (the level at which Holm decides a row whatever the other
    rows do: the power is kept under the rule as applied).

    ``effect`` and ``sd`` in the same units (``sd``: of the paired differences, e.g. a pilot
    run's, floored at the metric's resolution as the rule floors it). ``None`` when no effect is
    given (0) or none is needed beyond ``max_pairs``; 2 when ``sd`` is 0 (no spread at all).

    Examples
    --------
    >>> pairs_needed(2.0, 1.0), pairs_needed(2.0, 1.0, family=13), pairs_needed(0.0, 1.0)
    (5, 8, None)
    """
    if not (np.isfinite(effect) and np.isfinite(sd)) or effect == 0 or sd < 0:
        return None
    level = alpha / max(family, 1)
    if sd == 0:
        return 2
    dz = abs(effect) / sd
    lo, hi = 2, 2
    while power(hi, dz, level) < power_target:
        lo, hi = hi, hi * 2
        if hi > max_pairs:
            return None
    while lo < hi:   # power grows with n: bisect for the first n that reaches the target
        mid = (lo + hi) // 2
        if power(mid, dz, level) >= power_target:
            hi = mid
        else:
            lo = mid + 1
    return int(hi)


def smallest_constant(n: int, family: int = 1, alpha: float = 0.05) -> float:
    """The smallest constant difference, in units of the metric's resolution, that the rule calls a
    finding at ``n`` pairs in a family of ``family``: ``t_{1 - alpha/(2m), n-1} / sqrt(n)``.

    With the spread floored at the resolution ``r``, a difference ``c`` in every pair has
    ``t = c sqrt(n) / r``, so any ``|c|`` above this many ``r`` is a finding; p has no floor
    (unlike a sign-flip test, whose smallest p is ``2 / 2**n``).

    Examples
    --------
    >>> round(smallest_constant(4), 2), round(smallest_constant(6, 3), 2)
    (1.59, 1.44)
    """
    from scipy import stats

    return float(stats.t.ppf(1 - alpha / (2 * max(family, 1)), n - 1) / math.sqrt(n))
