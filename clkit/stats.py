"""One statistical rule for every verdict a notebook prints.

A notebook compares two conditions (M2I vs I2M, ER vs Bare, a method vs fine-tuning)
over seeds that pair everything random between them. Every such comparison is decided
here, by one rule, and reported as one :class:`Verdict` from which the notebook's
tables and closing text are generated.

The rule
--------
- **Paired t-test** on the per-seed differences ``d = a - b`` with ``n - 1`` degrees of
  freedom, two-sided, at ``alpha = 0.05`` (:func:`paired`; scipy's ``ttest_1samp``).
  Its 95 % confidence interval for the mean difference comes from the same t
  distribution. Where normality of ``d`` is doubtful, ``test="sign_flip"`` uses the
  paired permutation (sign-flip) test instead, exact for ``2**n <= n_resamples``,
  with a bootstrap percentile interval (scipy's ``permutation_test`` and
  ``bootstrap``). A sign-flip test cannot reach ``p < 0.05`` with fewer than 6 pairs
  (its smallest p is ``2 / 2**n``), so it is an option, not the default.
- **Holm's correction** when a notebook judges many comparisons at once
  (:func:`holm`, :func:`holm_adjust`: statsmodels' ``multipletests`` values): the family's
  p-values are adjusted and every decision is taken at ``alpha`` on the adjusted value.
- A difference is called a finding only when its (adjusted) ``p < alpha``; otherwise the
  verdict is "no difference", reported with the **smallest effect the run could have
  detected** (:func:`min_detectable_effect`: 80 % power at this ``n``, ``alpha`` and the
  observed spread), so "no difference" is never read as "equal".
- **Controls.** A verdict table carries control rows: a *null control* (a comparison
  that must come out "no difference", e.g. a learner that cannot forget, or a method
  against itself with another seed offset) and, where one exists, an *oracle control*
  (a comparison that must come out in a known direction). :func:`controls_hold` checks
  them and :func:`closing_text` refuses to list findings when one fails.

Effect sizes (:func:`effect_size`) are Cohen's ``d_z = mean(d) / sd(d)`` with an exact
confidence interval from the noncentral t distribution (scipy's ``nct``).

Examples
--------
>>> v = paired([0.80, 0.82, 0.79, 0.81, 0.83], [0.70, 0.71, 0.72, 0.69, 0.73],
...            comparison="M2I − I2M", higher="M2I higher", lower="I2M higher")
>>> v.decision, round(v.effect, 3), v.n
('M2I higher', 0.1, 5)
>>> paired([0.1, -0.1, 0.05], [0.0, 0.0, 0.0]).decision
'no difference'
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np

__all__ = ["ALPHA", "CONFIDENCE", "POWER", "NO_DIFFERENCE", "NOT_TESTABLE", "ROLES", "SCOPES", "Verdict",
           "paired", "decide", "holm", "effect_size", "min_detectable_effect", "empirical_p", "sign_flip_p",
           "power", "pairs_needed", "holm_adjust", "rederive", "controls_hold", "verdict_table", "closing_text", "family_power_text"]

#: significance level of every verdict
ALPHA = 0.05
#: confidence level of every interval
CONFIDENCE = 0.95
#: power at which :func:`min_detectable_effect` reports the smallest detectable effect
POWER = 0.8
NO_DIFFERENCE = "no difference"
NOT_TESTABLE = "not testable"
#: what a row of a verdict table is: a finding, or a control whose outcome is known
ROLES = ("finding", "null control", "oracle control")
#: a finding row tests one of the run's claims (primary) or is shown beside them (exploratory)
SCOPES = ("primary", "exploratory")
_TESTS = ("t", "sign_flip")


@dataclass(frozen=True)
class Verdict:
    """The decision on one comparison, with everything needed to report it.

    Attributes
    ----------
    comparison : str
        What is compared, e.g. ``"ewc: M2I − I2M (final-row mean)"``.
    effect : float
        Mean paired difference ``a - b`` (or the statistic named in ``rule``).
    ci_low, ci_high : float
        Its ``CONFIDENCE`` interval.
    p : float
        The p-value the decision uses (Holm-adjusted inside a family).
    n : int
        Number of pairs (seeds, series, ...).
    rule : str
        The test and level, in words (e.g. ``"paired t, df = 4, two-sided, α = 0.05"``).
    decision : str
        ``higher`` or ``lower`` when ``p < alpha`` (by the sign of ``effect``),
        ``"no difference"`` otherwise, ``"not testable"`` when the test cannot run.
    higher, lower : str
        How a positive / negative significant effect reads.
    role : str
        ``"finding"``, ``"null control"`` or ``"oracle control"``.
    expect : str or None
        For a control: the decision it must come out with.
    p_raw : float
        The unadjusted p-value.
    sd : float
        Sample standard deviation of the paired differences.
    mde : float
        Smallest ``|effect|`` detectable with ``POWER`` at this ``n``, ``alpha`` and ``sd``.
    alpha : float
        Level of the decision.
    family : int
        Size of the Holm family (1: no correction).
    note : str
        Why a verdict is not testable, or any caveat to print beside it.
    ci_level : float
        Confidence of ``ci_low``/``ci_high``: ``CONFIDENCE`` for a row judged alone; in a Holm
        family the level its decision uses (:func:`holm`), so that the interval excludes 0
        exactly when the row is a finding.
    scope : {"primary", "exploratory"}
        A primary row tests one of the paper's claims and can be a finding; an exploratory one
        is shown with its interval and never listed as a finding.
    family_name : str
        The family it was Holm-adjusted in (``""``: judged alone).
    a, b : tuple of float
        The paired values (``b`` empty when ``a`` holds the differences): every verdict can be
        derived again from ``results.json``.
    """

    comparison: str
    effect: float
    ci_low: float
    ci_high: float
    p: float
    n: int
    rule: str
    decision: str
    higher: str = "higher"
    lower: str = "lower"
    role: str = "finding"
    expect: str | None = None
    p_raw: float = float("nan")
    sd: float = float("nan")
    mde: float = float("nan")
    alpha: float = ALPHA
    family: int = 1
    note: str = ""
    ci_level: float = CONFIDENCE
    scope: str = "primary"
    family_name: str = ""
    a: tuple = ()
    b: tuple = ()

    @property
    def significant(self) -> bool:
        """True when the decision names a direction (``p < alpha``)."""
        return self.decision in (self.higher, self.lower)

    @property
    def control_ok(self) -> bool | None:
        """For a control row: did it come out as it must? ``None`` for a finding."""
        if self.role == "finding" or self.expect is None:
            return None
        return self.decision == self.expect

    @property
    def wording(self) -> str:
        """One sentence: the decision, the effect with its interval, the rule.

        Examples
        --------
        >>> v = paired([3.0, 2.5, 3.5, 3.2], [1.0, 1.2, 0.9, 1.1], comparison="ER − Bare",
        ...            higher="ER higher", lower="Bare higher")
        >>> v.wording
        'ER − Bare: ER higher, +2.0 (95 % CI +1.1 to +2.9; paired t, df = 3, two-sided, α = 0.05, p = 0.005, n = 4).'
        """
        if self.decision == NOT_TESTABLE:
            return f"{self.comparison}: not testable ({self.note or 'too few pairs'})."
        stats = (f"{_num(self.effect, True)} ({_ci_text(self.ci_low, self.ci_high, self.ci_level)}; "
                 f"{self.rule}, {_p_text(self.p)}, n = {self.n})")
        if self.significant:
            text = f"{self.comparison}: {self.decision}, {stats}"
        else:
            mde = (f"; the run could detect |effect| ≥ {_num(self.mde)} with {round(100 * POWER)} % power"
                   if np.isfinite(self.mde) and self.mde > 0 else "")
            need = self.pairs_for_observed
            if need is not None and need > self.n:
                mde += f"; about {need} pairs would detect the observed {_num(self.effect, True)}"
            text = f"{self.comparison}: no difference detected, {stats}{mde}"
        if self.role != "finding" and self.expect is not None:
            text += (f" [{self.role}: must be '{self.expect}' — "
                     + ("holds" if self.control_ok else "FAILS") + "]")
        return text + (f" {self.note}" if self.note else "") + "."

    @property
    def pairs_for_observed(self) -> int | None:
        """How many pairs the rule would need to detect the observed effect with ``POWER`` at this
        row's level (:func:`pairs_needed`, the family's strictest step); ``None`` for a zero effect."""
        if self.decision == NOT_TESTABLE or not np.isfinite(self.sd):
            return None
        return pairs_needed(self.effect, self.sd, family=self.family, alpha=self.alpha)

    def to_dict(self) -> dict:
        """A JSON-ready dict (non-finite floats become ``None`` when saved by clkit)."""
        out = asdict(self)
        out.update(a=list(self.a), b=list(self.b), significant=self.significant, control_ok=self.control_ok,
                   wording=self.wording, pairs_for_observed=self.pairs_for_observed)
        return out


def _num(x: float, sign: bool = False) -> str:
    """Two significant digits past the leading ones: enough for a seed-level effect."""
    if x is None or not np.isfinite(x):
        return "nan"
    mag = abs(x)
    digits = 2 if mag == 0 else max(0, 1 - int(math.floor(math.log10(mag))))
    text = f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"
    return text


def _level(level: float) -> str:
    """A confidence level in percent, as short as it can be: ``95``, ``98.3``, ``99.6``.

    Examples
    --------
    >>> _level(0.95), _level(1 - 0.05 / 3), _level(1 - 0.05 / 13)
    ('95', '98.3', '99.6')
    """
    pct = 100 * level
    text = f"{pct:.0f}" if abs(pct - round(pct)) < 1e-9 else f"{pct:.1f}" if pct < 99.95 else f"{pct:.2f}"
    return text


def _ci_text(low: float, high: float, level: float) -> str:
    """``95 % CI +0.01 to +0.05``; an interval a test at this level cannot bound reads ``unbounded``."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return f"{_level(level)} % CI unbounded at this n"
    return f"{_level(level)} % CI {_num(low, True)} to {_num(high, True)}"


def _p(p: float) -> str:
    if not np.isfinite(p):
        return "nan"
    return "< 0.0001" if p < 1e-4 else f"{p:.2g}"


def _p_text(p: float) -> str:
    """``p = 0.005``, ``p < 0.0001``, or ``no p (one pair)`` where none is defined.

    Examples
    --------
    >>> _p_text(0.00512), _p_text(1e-7), _p_text(float("nan"))
    ('p = 0.0051', 'p < 0.0001', 'no p (one pair)')
    """
    if not np.isfinite(p):
        return "no p (one pair)"
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.2g}"


def sign_flip_p(d) -> float:
    """Exact two-sided p of the paired sign-flip test on differences ``d`` (all ``2**n`` sign patterns).

    The share of sign patterns whose mean is at least as far from 0 as the observed one. Its
    smallest value is ``2 / 2**n``: with fewer than 6 pairs it never falls below 0.05. Used where
    the t-test has nothing to stand on (differences without spread). At most 20 pairs.

    Examples
    --------
    >>> sign_flip_p([0.01, 0.01, 0.01, 0.01]), sign_flip_p([0.01] * 6), sign_flip_p([0.0, 0.0])
    (0.125, 0.03125, 1.0)
    """
    d = np.asarray(d, dtype=float).ravel()
    n = d.size
    if n > 20:
        raise ValueError(f"sign_flip_p enumerates 2**n patterns: at most 20 pairs, got {n}")
    if n == 0:
        return float("nan")
    signs = 1 - 2 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
    means = np.abs(signs @ d) / n
    observed = abs(d.sum()) / n
    return float(np.mean(means >= observed - 1e-12 * max(1.0, observed)))


def _differences(a, b) -> np.ndarray:
    a = np.asarray(a, dtype=float).ravel()
    if b is None:
        d = a
    else:
        b = np.asarray(b, dtype=float).ravel()
        if a.shape != b.shape:
            raise ValueError(f"a and b must pair one to one (same length), got {a.size} and {b.size} values")
        d = a - b
    if not np.all(np.isfinite(d)):
        raise ValueError(f"paired values must be finite, got differences {d.tolist()}")
    return d


def _check_alpha(alpha: float) -> None:
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")


def _check_role(role: str, expect) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {list(ROLES)}, got {role!r}")
    if role != "finding" and expect is None:
        raise ValueError(f"a {role} needs expect= (the decision it must come out with)")


def decide(effect: float, p: float, alpha: float = ALPHA, higher: str = "higher", lower: str = "lower") -> str:
    """The decision of the rule: a direction when ``p < alpha``, else "no difference".

    Examples
    --------
    >>> decide(0.1, 0.01), decide(-0.1, 0.01), decide(0.1, 0.2), decide(0.1, float("nan"))
    ('higher', 'lower', 'no difference', 'not testable')
    """
    if not np.isfinite(p) or not np.isfinite(effect):
        return NOT_TESTABLE
    if p < alpha and effect != 0:
        return higher if effect > 0 else lower
    return NO_DIFFERENCE


def min_detectable_effect(n: int, sd: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Smallest ``|mean difference|`` a two-sided paired t-test detects with ``power``.

    ``d_z`` at which the test reaches ``power`` at ``n`` pairs (:func:`_detectable_dz`,
    scipy's noncentral t), times ``sd`` (the spread of the paired differences). NaN for fewer than 2 pairs or an undefined spread.

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
    from scipy import optimize, stats

    df = n - 1
    t_crit = stats.t.ppf(1 - alpha / 2, df)

    def reach(dz):
        nc = dz * math.sqrt(n)
        lower = stats.nct.cdf(-t_crit, df, nc)
        return float(stats.nct.sf(t_crit, df, nc) + (lower if np.isfinite(lower) else 0.0)) - power

    hi = 1.0
    while reach(hi) < 0:
        hi *= 2
    return float(optimize.brentq(reach, 0.0, hi, xtol=1e-10))


def effect_size(a, b=None, confidence: float = CONFIDENCE) -> dict:
    """Cohen's ``d_z`` of paired differences with its exact confidence interval.

    ``d_z = mean(d) / sd(d)``; the interval inverts the noncentral t distribution of
    ``t = d_z sqrt(n)`` (scipy's ``nct``), which is exact under normality.

    Returns
    -------
    dict with ``d_z``, ``ci_low``, ``ci_high`` (NaN for fewer than 2 pairs or zero spread).

    Examples
    --------
    >>> e = effect_size([1.2, 0.8, 1.1, 0.9, 1.0])
    >>> round(e["d_z"], 2), round(e["ci_low"], 2), round(e["ci_high"], 2)
    (6.32, 2.09, 10.63)
    """
    from scipy import optimize, stats

    d = _differences(a, b)
    n = d.size
    sd = float(d.std(ddof=1)) if n > 1 else float("nan")
    if n < 2 or not np.isfinite(sd) or sd == 0:
        return {"d_z": float("nan"), "ci_low": float("nan"), "ci_high": float("nan")}
    dz = float(d.mean() / sd)
    t, df, root = dz * math.sqrt(n), n - 1, math.sqrt(n)
    tail = (1 - confidence) / 2

    def nc_for(prob):  # noncentrality at which P(T <= t) = prob (decreasing in nc)
        f = lambda nc: stats.nct.cdf(t, df, nc) - prob  # noqa: E731
        step = 1.0 + abs(t) / 4
        lo, hi = t - step, t + step
        while f(lo) < 0:  # widen in small steps: nct.cdf is NaN far from t
            lo -= step
        while f(hi) > 0:
            hi += step
        return optimize.brentq(f, lo, hi)

    return {"d_z": dz, "ci_low": nc_for(1 - tail) / root, "ci_high": nc_for(tail) / root}


def paired(a, b=None, *, comparison: str = "a − b", higher: str = "higher", lower: str = "lower",
           test: str = "t", alpha: float = ALPHA, role: str = "finding", expect: str | None = None,
           n_resamples: int = 9999, seed: int = 0, scope: str = "primary") -> Verdict:
    """Decide a paired comparison over seeds (or series, or any pairing unit).

    Parameters
    ----------
    a, b : array-like, shape (n,)
        Paired values (``a[i]`` and ``b[i]`` share seed ``i``); ``b=None`` takes ``a``
        as the differences themselves.
    comparison : str
        Name of the comparison in tables and text.
    higher, lower : str
        How a significant positive / negative ``mean(a - b)`` reads.
    test : {"t", "sign_flip"}
        Paired t-test (default, the notebooks' rule) or the paired sign-flip
        permutation test (exact when ``2**n <= n_resamples``) with a bootstrap
        percentile interval.
    alpha : float
        Level of the decision (and ``1 - CONFIDENCE`` is the interval's).
    role, expect : str
        ``"finding"``, or a control with the decision it must come out with.
    scope : {"primary", "exploratory"}
        Whether a finding row tests one of the claims the run is about (``"primary"``) or is
        shown beside them (``"exploratory"``: never listed as a finding).
    n_resamples, seed : int
        Sign-flip / bootstrap resamples and their seed (local generator).

    Returns
    -------
    Verdict
        ``"not testable"`` with fewer than 2 pairs.

    Examples
    --------
    >>> v = paired([0.82, 0.80, 0.85], [0.80, 0.81, 0.80], comparison="mste: M2I − I2M",
    ...            role="null control", expect="no difference")
    >>> v.decision, v.control_ok, v.rule
    ('no difference', True, 'paired t, df = 2, two-sided, α = 0.05')
    >>> paired([1.0], [0.0]).decision
    'not testable'
    """
    from scipy import stats

    if test not in _TESTS:
        raise ValueError(f"test must be one of {list(_TESTS)}, got {test!r}")
    _check_alpha(alpha)
    _check_role(role, expect)
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {list(SCOPES)}, got {scope!r}")
    d = _differences(a, b)
    n = int(d.size)
    common = dict(comparison=comparison, higher=higher, lower=lower, role=role, expect=expect, alpha=alpha,
                  scope=scope)
    if n < 2:
        return Verdict(effect=float(d.mean()) if n else float("nan"), ci_low=float("nan"),
                       ci_high=float("nan"), p=float("nan"), n=n, rule=f"paired {test}",
                       decision=NOT_TESTABLE, note=f"{n} pair(s): a paired test needs at least 2",
                       a=tuple(float(v) for v in np.asarray(a, dtype=float).ravel()),
                       b=() if b is None else tuple(float(v) for v in np.asarray(b, dtype=float).ravel()),
                       **common)
    values = dict(a=tuple(float(v) for v in np.asarray(a, dtype=float).ravel()),
                  b=() if b is None else tuple(float(v) for v in np.asarray(b, dtype=float).ravel()))
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd <= 1e-9 * float(np.abs(d).max()):   # the same difference in every pair (up to float rounding)
        return _without_spread(d, alpha, common, values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if test == "t":
            res = stats.ttest_1samp(d, 0.0)
            ci = res.confidence_interval(confidence_level=1 - alpha)
            p, lo, hi = float(res.pvalue), float(ci.low), float(ci.high)
            rule = f"paired t, df = {n - 1}, two-sided, α = {alpha:g}"
        else:
            rng = np.random.default_rng(seed)
            res = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=n_resamples,
                                         alternative="two-sided", random_state=rng)
            boot = stats.bootstrap((d,), np.mean, confidence_level=1 - alpha, n_resamples=n_resamples,
                                   method="percentile", random_state=rng)
            p, lo, hi = float(res.pvalue), float(boot.confidence_interval.low), float(boot.confidence_interval.high)
            exact = 2 ** n <= n_resamples
            rule = (f"paired sign-flip ({'exact' if exact else f'{n_resamples} resamples'}), two-sided, "
                    f"α = {alpha:g}")
    return Verdict(effect=mean, ci_low=lo, ci_high=hi, p=p, n=n, rule=rule,
                   decision=decide(mean, p, alpha, higher, lower), p_raw=p, sd=sd,
                   mde=min_detectable_effect(n, sd, alpha), ci_level=1 - alpha, **common, **values)


def _without_spread(d, alpha, common, values) -> Verdict:
    """A comparison whose pairs all differ by the same amount ``c``: decided by the exact sign-flip test.

    The t-test has no spread to stand on there (it would call any ``c != 0`` certain, whatever
    ``n``). The exact sign-flip p is ``2 / 2**n`` for ``c != 0`` and 1 for ``c = 0``; its interval
    is ``[c, c]`` where the test rejects every other value at this level (``n >= 6`` at 0.05) and
    unbounded where it cannot reject any.
    """
    n, mean = int(d.size), float(d.mean())
    p = sign_flip_p(d) if n <= 20 else (1.0 if mean == 0 else 2.0 ** (1 - n))
    can_reject = 2.0 ** (1 - n) < common["alpha"]
    lo, hi = (mean, mean) if can_reject else (-math.inf, math.inf)
    what = "identical in every pair" if mean == 0 else "the same difference in every pair"
    return Verdict(effect=mean, ci_low=lo, ci_high=hi, p=p, n=n,
                   rule=f"exact sign-flip (no spread), two-sided, α = {alpha:g}",
                   decision=decide(mean, p, alpha, common["higher"], common["lower"]), p_raw=p, sd=0.0,
                   mde=0.0 if can_reject else math.inf, note=f"({what})", ci_level=1 - alpha,
                   **common, **values)


def holm(verdicts: Sequence[Verdict], alpha: float | None = None, name: str = "") -> list[Verdict]:
    """Holm-adjust the findings of a family judged together; decisions re-taken on the adjusted p.

    Only finding rows form the family: control rows keep their own nominal level (a control
    adjusted with the findings would almost never fail), and "not testable" rows stay so. Each
    adjusted row's interval is recomputed at the level its decision uses, ``alpha * p_raw / p``
    (``p`` the adjusted value), so a row is a finding exactly when its interval excludes 0
    (``ci_level`` says the level); its detectable effect at its Holm step, ``alpha / (m - i + 1)``
    for the row with the ``i``-th smallest p (the level its raw p had to beat).

    Parameters
    ----------
    verdicts : sequence of Verdict
        One family (e.g. every strategy's M2I − I2M); control rows may be among them.
    alpha : float, optional
        Level (default: each verdict's own).
    name : str
        The family's name, recorded in each adjusted row (``family_name``).

    Examples
    --------
    >>> vs = [paired([0.30, 0.32, 0.31, 0.29], [0.0, 0.0, 0.0, 0.0], comparison="big"),
    ...       paired([0.03, 0.00, 0.05, 0.02], [0.0, 0.0, 0.0, 0.0], comparison="small")]
    >>> [(v.comparison, v.decision) for v in vs]
    [('big', 'higher'), ('small', 'no difference')]
    >>> adj = holm(vs, name="demo")
    >>> adj[0].family, adj[0].p >= vs[0].p, adj[0].rule.endswith("Holm over 2"), round(adj[0].ci_level, 3)
    (2, True, True, 0.975)
    """
    verdicts = list(verdicts)
    idx = [i for i, v in enumerate(verdicts)
           if v.role == "finding" and v.decision != NOT_TESTABLE and np.isfinite(v.p_raw)]
    out = list(verdicts)
    if not idx:
        return out
    raw = np.array([verdicts[i].p_raw for i in idx], dtype=float)
    adjusted = holm_adjust(raw)
    m = len(idx)
    rank = np.empty(m, dtype=int)
    rank[np.argsort(raw, kind="stable")] = np.arange(m)
    for i, p, r in zip(idx, adjusted, rank):
        v = verdicts[i]
        a = v.alpha if alpha is None else alpha
        level = float(a * v.p_raw / p) if p > 0 else float(a)      # the level this row is decided at
        lo, hi = _interval(v, level)
        step = a / (m - r)                                        # its Holm step: alpha / (m - i + 1)
        mde = v.mde if v.sd == 0 or not np.isfinite(v.sd) else min_detectable_effect(v.n, v.sd, step)
        rule = v.rule.split(", Holm over")[0] + (f", Holm over {m}" if m > 1 else "")
        out[i] = replace(v, p=float(p), alpha=a, family=m, family_name=name, rule=rule, ci_low=lo, ci_high=hi,
                         ci_level=1 - level, mde=mde, decision=decide(v.effect, float(p), a, v.higher, v.lower))
    return out


def holm_adjust(p) -> np.ndarray:
    """Holm's step-down adjusted p-values: ``max_{j <= i} min(1, (m - j + 1) p_(j))`` in sorted order.

    The same values as statsmodels' ``multipletests(p, method="holm")`` (``tests/test_stats.py``
    checks it), without its garbage collection on every call (about 0.1 s, which a simulation of
    thousands of families cannot afford).

    Examples
    --------
    >>> holm_adjust([0.01, 0.04, 0.03]).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p, dtype=float).ravel()
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = stepped
    return out


def _interval(v: Verdict, level: float) -> tuple[float, float]:
    """The interval of ``v``'s mean difference at significance ``level``, by ``v``'s own rule,
    from its recorded values (``v.a``, ``v.b``)."""
    from scipy import stats

    d = _differences(v.a, v.b if v.b else None) if v.a else None
    if d is None or d.size < 2:
        return float("nan"), float("nan")
    if v.rule.startswith("exact sign-flip"):   # no spread: a point where the test can reject, else nothing
        return ((v.effect, v.effect) if 2.0 ** (1 - d.size) < level else (-math.inf, math.inf))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if v.rule.startswith("paired sign-flip"):
            boot = stats.bootstrap((d,), np.mean, confidence_level=1 - level, n_resamples=9999, method="percentile",
                                   random_state=np.random.default_rng(0))
            return float(boot.confidence_interval.low), float(boot.confidence_interval.high)
        ci = stats.ttest_1samp(d, 0.0).confidence_interval(confidence_level=1 - level)
        return float(ci.low), float(ci.high)


def power(n: int, dz: float, alpha: float = ALPHA) -> float:
    """Power of the two-sided paired t-test at ``n`` pairs for a true effect of ``dz`` spreads.

    Examples
    --------
    >>> round(power(5, 1.68), 2), round(power(4, 2.0, 0.05 / 3), 2)
    (0.8, 0.44)
    """
    from scipy import stats

    if n < 2:
        return float("nan")
    df = n - 1
    t_crit = stats.t.ppf(1 - alpha / 2, df)
    nc = dz * math.sqrt(n)
    lower = stats.nct.cdf(-t_crit, df, nc)
    return float(stats.nct.sf(t_crit, df, nc) + (lower if np.isfinite(lower) else 0.0))


def pairs_needed(effect: float, sd: float, *, family: int = 1, alpha: float = ALPHA, power_target: float = POWER,
                 max_pairs: int = 100_000) -> int | None:
    """The fewest pairs (seeds, series, ...) at which the paired t-test detects ``effect`` with
    ``power_target`` at ``alpha / family`` (Holm's strictest step: a sure bound for a family).

    ``effect`` and ``sd`` in the same units (``sd``: of the paired differences, e.g. a pilot
    run's). ``None`` when no effect is given (0) or none is needed beyond ``max_pairs``.

    Examples
    --------
    >>> pairs_needed(2.0, 1.0), pairs_needed(2.0, 1.0, family=13), pairs_needed(0.0, 1.0)
    (5, 8, None)

    Without spread (every difference the same) the rule's exact sign-flip test decides, and it
    cannot reach ``p < alpha`` before ``2 / 2**n < alpha / family``:

    >>> pairs_needed(0.01, 0.0), pairs_needed(0.01, 0.0, family=3)
    (6, 7)
    """
    if not (np.isfinite(effect) and np.isfinite(sd)) or effect == 0 or sd < 0:
        return None
    level = alpha / max(family, 1)
    if sd == 0:   # no spread: the rule decides by the exact sign-flip test, whose smallest p is 2 / 2**n
        return int(max(2, np.floor(np.log2(2 / level)) + 1))
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


def empirical_p(value: float, null, alternative: str = "less", exact: bool = False) -> float:
    """p-value of ``value`` against draws (or the full enumeration) of a null distribution.

    ``alternative="less"``: how often the null is at most ``value`` (is ``value``
    unusually small?); ``"greater"``: at least. With sampled draws the estimate is
    ``(k + 1) / (N + 1)`` (never 0); with ``exact=True`` (the null enumerated
    completely) it is ``k / N``.

    Examples
    --------
    >>> empirical_p(0.1, [0.2, 0.3, 0.1, 0.4], exact=True)
    0.25
    >>> empirical_p(0.05, [0.2, 0.3, 0.1, 0.4])
    0.2
    """
    if alternative not in ("less", "greater"):
        raise ValueError(f"alternative must be 'less' or 'greater', got {alternative!r}")
    null = np.asarray(null, dtype=float).ravel()
    if null.size == 0:
        raise ValueError("null must hold at least one value")
    k = int(np.sum(null <= value)) if alternative == "less" else int(np.sum(null >= value))
    return k / null.size if exact else (k + 1) / (null.size + 1)


def rederive(rows: Sequence[dict]) -> list[Verdict]:
    """The verdicts of a ``results.json`` decided again from their recorded values alone.

    Each row (a ``Verdict.to_dict()``) is decided again by :func:`paired` from its ``a`` and ``b``
    with its own comparison, role, expectation, scope, level and test; rows that share a
    ``family_name`` are Holm-adjusted together as they were. Equal to the recorded verdicts when
    the record is whole (``tests`` check it for every notebook's smoke run).

    Examples
    --------
    >>> vs = holm([paired([0.3, 0.2, 0.4], [0.0] * 3, comparison="x"),
    ...            paired([0.1, -0.1, 0.05], [0.0] * 3, comparison="y")], name="f")
    >>> again = rederive([v.to_dict() for v in vs])
    >>> [(v.comparison, v.decision, round(v.p, 6) == round(w.p, 6)) for v, w in zip(again, vs)]
    [('x', 'no difference', True), ('y', 'no difference', True)]
    """
    out, families = [], {}
    for i, r in enumerate(rows):
        rule = str(r.get("rule", ""))
        test = "sign_flip" if rule.startswith("paired sign-flip") else "t"
        v = paired(r["a"], r["b"] or None, comparison=r["comparison"], higher=r.get("higher", "higher"),
                   lower=r.get("lower", "lower"), test=test, alpha=r.get("alpha", ALPHA), role=r.get("role", "finding"),
                   expect=r.get("expect"), scope=r.get("scope", "primary"))
        out.append(v)
        if r.get("family_name"):
            families.setdefault(r["family_name"], []).append(i)
    for name, idx in families.items():
        for i, v in zip(idx, holm([out[i] for i in idx], name=name)):
            out[i] = v
    return out


def controls_hold(verdicts: Iterable[Verdict]) -> tuple[bool, list[Verdict]]:
    """Whether every control row came out as it must, and the failing ones.

    Examples
    --------
    >>> ok = paired([0.1, -0.1, 0.0], [0.0, 0.0, 0.0], comparison="null", role="null control",
    ...             expect="no difference")
    >>> controls_hold([ok])
    (True, [])
    """
    failed = [v for v in verdicts if v.control_ok is False]
    return (not failed, failed)


def verdict_table(verdicts: Iterable[Verdict], digits: int = 3):
    """A DataFrame of verdicts: one row each, controls marked, for ``display``.

    Columns: comparison, role (finding, exploratory, or the control's kind), effect, the interval
    at the level of the row's decision (95 % alone; in a Holm family the level its adjusted p is
    decided at: the interval excludes 0 exactly when the row is a finding), p, n, decision,
    control (holds / FAILS / blank), detectable (the smallest effect the run could detect at
    that level).

    Examples
    --------
    >>> t = verdict_table([paired([1.0, 1.1, 0.9], [0.0, 0.1, 0.0], comparison="x")])
    >>> list(t.columns)
    ['role', 'effect', 'CI (level of the decision)', 'p', 'n', 'decision', 'control', 'detectable']
    """
    import pandas as pd

    rows = []
    for v in verdicts:
        fmt = f"{{:+.{digits}f}}"
        if np.isfinite(v.ci_low) and np.isfinite(v.ci_high):
            ci = f"{fmt.format(v.ci_low)} … {fmt.format(v.ci_high)} ({_level(v.ci_level)} %)"
        else:
            ci = "unbounded at this n" if v.decision != NOT_TESTABLE and v.n >= 2 else ""
        rows.append({
            "comparison": v.comparison, "role": v.role if v.role != "finding" or v.scope == "primary"
            else "exploratory",
            "effect": round(v.effect, digits) if np.isfinite(v.effect) else np.nan,
            "CI (level of the decision)": ci,
            "p": _p(v.p), "n": v.n, "decision": v.decision,
            "control": "" if v.control_ok is None else ("holds" if v.control_ok else "FAILS"),
            "detectable": (f"≥ {_num(v.mde)}" if np.isfinite(v.mde) and v.mde > 0 and not v.significant
                           else "none at this n" if v.mde == math.inf else ""),
        })
    return pd.DataFrame(rows).set_index("comparison")


def closing_text(verdicts: Sequence[Verdict], *, subject: str = "this run",
                 small_n: int | None = None, effect_sds: float = 2.0) -> str:
    """Markdown for a notebook's closing paragraph, generated from its verdicts.

    Controls are checked first: when a control of the primary comparisons (``scope="primary"``,
    the default) fails, the text says so and lists no findings; when only a control of exploratory
    comparisons (``scope="exploratory"``) fails, the exploratory differences are not listed.
    Otherwise the primary findings (significant primary rows) are listed with their numbers,
    then the primary comparisons with no detected difference, the smallest effect each could
    detect and how many pairs would detect the observed one; exploratory rows that differ are
    listed apart, as exploratory. With ``small_n`` set, a row on fewer pairs is never read as a
    finding (the gate is per row; when no row has enough, the text says the run is too small
    to conclude). Last, what the primary comparisons could detect: the power of each primary
    family to find an effect of ``effect_sds`` spreads of the differences at its Holm level.

    Examples
    --------
    >>> vs = [paired([0.30, 0.32, 0.31, 0.29], [0.0, 0.0, 0.0, 0.0], comparison="ER − Bare",
    ...              higher="ER higher", lower="Bare higher"),
    ...       paired([0.01, -0.02, 0.0, 0.01], [0.0, 0.0, 0.0, 0.0], comparison="Bare − Bare'",
    ...              role="null control", expect="no difference")]
    >>> print(closing_text(vs).splitlines()[0])
    **Controls hold** (1 of 1): Bare − Bare' came out 'no difference' as it must.
    """
    verdicts = list(verdicts)
    controls = [v for v in verdicts if v.control_ok is not None]
    findings = [v for v in verdicts if v.role == "finding"]
    enough = (lambda v: True) if small_n is None else (lambda v: v.n >= small_n)
    lines = []
    findings_ok = True
    if small_n is not None and verdicts and not any(enough(v) for v in verdicts):
        lines.append(f"**Too few pairs to conclude**: {subject} has at most "
                     f"{max(v.n for v in verdicts)} pair(s) per comparison (fewer than {small_n}); "
                     "the numbers below are shown, but no difference is read as a finding.")
        findings_ok = False
    ok, failed = controls_hold(verdicts)
    guarding = [v for v in failed if v.scope == "primary"]   # a primary family's control guards the findings
    exploring_ok = not any(v.scope == "exploratory" for v in failed)
    if controls:
        if ok:
            lines.append(f"**Controls hold** ({len(controls)} of {len(controls)}): "
                         + "; ".join(f"{v.comparison} came out '{v.decision}' as it must" for v in controls) + ".")
        else:
            lines.append(f"**Controls fail** ({len(failed)} of {len(controls)}): "
                         + "; ".join(f"{v.comparison} came out '{v.decision}', must be '{v.expect}'"
                                     for v in failed)
                         + (f". The findings of {subject} cannot be read, so no difference below is read as a "
                            "finding." if guarding else
                            ". Only controls of exploratory comparisons failed: those comparisons are not read."))
            findings_ok = findings_ok and not guarding
    primary = [v for v in findings if v.scope == "primary" and enough(v)]
    exploratory = [v for v in findings if v.scope == "exploratory" and enough(v)] if exploring_ok else []
    small = [v for v in findings if not enough(v) and v.decision != NOT_TESTABLE]
    sig = [v for v in primary if v.significant]
    null = [v for v in primary if v.decision == NO_DIFFERENCE]
    untestable = [v for v in findings if v.decision == NOT_TESTABLE]
    if findings_ok:
        if sig:
            lines.append("**Findings** (" + f"{len(sig)} of {len(primary)}): " + " ".join(v.wording for v in sig))
        elif primary:
            lines.append(f"**No finding**: none of the {len(primary)} comparison(s) differs under the rule.")
        if null:
            lines.append("**No difference detected**: " + "; ".join(_null_text(v) for v in null) + ".")
        moved = [v for v in exploratory if v.significant]
        if moved:
            lines.append("**Exploratory** (shown beside the claims, not findings): "
                         + " ".join(v.wording for v in moved))
        if small:
            lines.append(f"**Too few pairs** (fewer than {small_n}; shown, not findings): " + "; ".join(
                f"{v.comparison} {_num(v.effect, True)} ({_p_text(v.p)}, n = {v.n})" for v in small) + ".")
    else:
        lines.append("Measured differences (not findings): " + "; ".join(
            f"{v.comparison} {_num(v.effect, True)} ({_p_text(v.p)})" for v in findings if v.n) + ".")
    if untestable:
        lines.append("**Not testable**: " + "; ".join(f"{v.comparison} ({v.note})" for v in untestable) + ".")
    reach = family_power_text(primary, effect_sds)
    if reach and findings_ok:
        lines.append(reach)
    return "\n\n".join(lines)


def _null_text(v: Verdict) -> str:
    text = f"{v.comparison} ({_num(v.effect, True)}, {_p_text(v.p)}"
    if np.isfinite(v.mde) and v.mde > 0:
        text += f", detectable ≥ {_num(v.mde)}"
    need = v.pairs_for_observed
    if need is not None and need > v.n:
        text += f"; about {need} pairs would detect it"
    return text + ")"


def family_power_text(verdicts: Sequence[Verdict], effect_sds: float = 2.0) -> str:
    """What the primary comparisons could detect: per family (name, size ``m``, pairs ``n``), the power
    of the paired t-test at Holm's strictest level ``alpha / m`` to find an effect of ``effect_sds``
    spreads of the differences (and how many pairs 80 % power would take when it is short of it).

    Examples
    --------
    >>> vs = holm([paired([0.3, 0.1, 0.2, 0.25], [0.0] * 4, comparison=c) for c in "abc"], name="main")
    >>> print(family_power_text(vs))
    **What the run could detect**: main (3 comparisons, 4 pairs): an effect of 2 spreads with 44 % power at α/3 (80 % would take 6 pairs).
    """
    groups: dict = {}
    for v in verdicts:
        if v.role == "finding" and v.scope == "primary" and v.decision != NOT_TESTABLE and v.n >= 2:
            groups.setdefault((v.family_name, v.family), []).append(v)
    parts = []
    for (name, m), rows in groups.items():
        n = min(v.n for v in rows)
        pw = power(n, effect_sds, rows[0].alpha / max(m, 1))
        need = pairs_needed(effect_sds, 1.0, family=m, alpha=rows[0].alpha)
        what = name or ", ".join(v.comparison for v in rows[:2]) + (" ..." if len(rows) > 2 else "")
        text = (f"{what} ({m} comparison{'s' if m != 1 else ''}, {n} pairs): an effect of {effect_sds:g} spreads "
                f"with {100 * pw:.0f} % power at α" + (f"/{m}" if m > 1 else ""))
        if pw < POWER and need is not None:
            text += f" ({round(100 * POWER)} % would take {need} pairs)"
        parts.append(text)
    return ("**What the run could detect**: " + "; ".join(parts) + ".") if parts else ""
