"""The record of one decision (:class:`Verdict`), the rule's constants and the decision itself.

Everything a notebook prints about a comparison is read from a :class:`Verdict`: the effect with its
interval, p, the rule in words, the smallest effect the run could detect, the skew diagnostic, and the
per-pair values from which the verdict can be derived again.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

from .power import POWER, pairs_needed

__all__ = ["ALPHA", "CONFIDENCE", "POWER", "NO_DIFFERENCE", "NOT_TESTABLE", "ROLES", "SCOPES", "SCALES",
           "SKEW_CAUTION", "Verdict", "decide", "skew_threshold"]

#: significance level of every verdict
ALPHA = 0.05
#: confidence level of an interval judged alone (in a family: simultaneous, ``1 - ALPHA / m``)
CONFIDENCE = 0.95
NO_DIFFERENCE = "no difference"
NOT_TESTABLE = "not testable"
#: what a row of a verdict table is: a finding, or a control whose outcome is known
ROLES = ("finding", "null control", "oracle control")
#: a finding row tests one of the run's claims (primary) or is shown beside them (exploratory)
SCOPES = ("primary", "exploratory")
#: the scale a metric is tested on: the difference ``a - b``, or the log ratio ``log a - log b``
#: (MSE-like and ratio metrics, whose seed differences are skewed; see ``METRIC_SCALES``)
SCALES = ("difference", "log_ratio")
#: a row whose largest pair carries more than this share of ``sum |d|`` (one pair outweighs all the
#: others together) -- and more than normal differences give in 95 % of runs at its n
#: (:func:`skew_threshold`) -- is printed with a caution: its mean, and so its p, rests on that one pair
SKEW_CAUTION = 0.5


@lru_cache(maxsize=64)
def skew_threshold(n: int) -> float:
    """The share of ``sum |d|`` above which the largest of ``n`` pairs draws a caution:
    ``max(SKEW_CAUTION, q95)``, ``q95`` the 95th percentile of that share under normal differences
    (20,000 seeded draws). So normal differences are cautioned at most 5 % of the time, and a caution
    always means that one pair outweighs all the others together.

    Examples
    --------
    >>> round(skew_threshold(4), 2), round(skew_threshold(8), 2)
    (0.68, 0.5)
    """
    d = np.abs(np.random.default_rng([53, n]).normal(size=(20_000, n)))
    return max(SKEW_CAUTION, float(np.quantile(d.max(1) / d.sum(1), 0.95)))


@dataclass(frozen=True)
class Verdict:
    """The decision on one comparison, with everything needed to report it.

    Attributes
    ----------
    comparison : str
        What is compared, e.g. ``"ewc: M2I − I2M (final-row mean)"``.
    effect : float
        Mean paired difference ``a - b`` on the row's ``scale`` (``log_ratio``: the mean of
        ``log a - log b``, whose ``exp`` is the geometric-mean ratio).
    ci_low, ci_high : float
        Its interval at ``ci_level``.
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
        Sample standard deviation of the paired differences (before the resolution floor).
    mde : float
        Smallest ``|effect|`` detectable with ``POWER`` at this ``n``, at ``alpha / family`` (the level
        at which Holm decides a row whatever the other rows do, so the power is kept under the rule as
        applied) and the spread the test used (``max(sd, resolution)``).
    alpha : float
        Level of the decision.
    family : int
        Size of the Holm family (1: no correction).
    note : str
        Why a verdict is not testable, or any caveat to print beside it.
    ci_level : float
        Confidence of ``ci_low``/``ci_high``: ``CONFIDENCE`` for a row judged alone; in a Holm family of
        ``m`` the simultaneous (Bonferroni) level ``1 - alpha / m``, the same for every row of the family.
    scope : {"primary", "exploratory"}
        A primary row tests one of the paper's claims and can be a finding; an exploratory one
        is shown with its interval and never listed as a finding.
    family_name : str
        The family it was Holm-adjusted in (``""``: judged alone; ``"controls"``: the null controls
        judged together, :func:`clkit.stats.judge_controls`).
    a, b : tuple of float
        The paired values (``b`` empty when ``a`` holds the differences): every verdict can be
        derived again from ``results.json``.
    scale : {"difference", "log_ratio"}
        The scale the row is tested on (chosen per metric in advance, ``METRIC_SCALES``).
    resolution : float
        The floor of the spread: the smallest difference the metric resolves, on ``scale``
        (:func:`clkit.stats.paired`).
    outlier_share : float
        ``max |d_i| / sum |d_i|``: the share of the differences' total size carried by the largest
        pair (``1/n`` when all are equal, 1 when one pair carries everything).
    guards : str
        For a control: the family whose findings it vouches for (set by :func:`clkit.stats.holm`).
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
    scale: str = "difference"
    resolution: float = float("nan")
    outlier_share: float = float("nan")
    guards: str = ""

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
    def skewed(self) -> bool:
        """True when the largest pair's share of ``sum |d|`` exceeds :func:`skew_threshold` (one pair
        outweighs all the others together, beyond what normal differences give 95 % of the time),
        at 3 pairs or more (with 2 pairs the larger always carries half)."""
        return (self.n >= 3 and np.isfinite(self.outlier_share)
                and self.outlier_share > skew_threshold(int(self.n)))

    @property
    def caution(self) -> str:
        """The skew caution printed beside the row, or ``""``."""
        if not self.skewed:
            return ""
        return (f"(caution: one pair carries {100 * self.outlier_share:.0f} % of the total |difference|; "
                "the mean rests on it)")

    @property
    def wording(self) -> str:
        """One sentence: the decision, the effect with its interval, the rule.

        Examples
        --------
        >>> from clkit.stats import paired
        >>> v = paired([3.0, 2.5, 3.5, 3.2], [1.0, 1.2, 0.9, 1.1], comparison="ER − Bare",
        ...            higher="ER higher", lower="Bare higher")
        >>> v.wording
        'ER − Bare: ER higher, +2.0 (95 % CI +1.1 to +2.9; paired t, df = 3, two-sided, α = 0.05, p = 0.005, n = 4).'
        """
        if self.decision == NOT_TESTABLE:
            return f"{self.comparison}: not testable ({self.note or 'too few pairs'})."
        ratio = (f" (ratio ×{math.exp(self.effect):.3g})" if self.scale == "log_ratio" and np.isfinite(self.effect)
                 else "")
        stats = (f"{_num(self.effect, True)}{ratio} ({_ci_text(self.ci_low, self.ci_high, self.ci_level)}; "
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
        extra = " ".join(t for t in (self.note, self.caution) if t)
        return text + (f" {extra}" if extra else "") + "."

    @property
    def pairs_for_observed(self) -> int | None:
        """How many pairs the rule would need to detect the observed effect with ``POWER`` at
        ``alpha / family`` (:func:`clkit.stats.pairs_needed`: the level at which Holm decides a row
        whatever the others do); ``None`` for a zero effect."""
        if self.decision == NOT_TESTABLE or not np.isfinite(self.sd):
            return None
        return pairs_needed(self.effect, self.spread, family=self.family, alpha=self.alpha)

    @property
    def spread(self) -> float:
        """The spread the test uses: ``max(sd, resolution)`` (``sd`` where no resolution is recorded)."""
        if not np.isfinite(self.resolution):
            return self.sd
        return max(self.sd, self.resolution)

    def to_dict(self) -> dict:
        """A JSON-ready dict (non-finite floats become ``None`` when saved by clkit)."""
        out = asdict(self)
        out.update(a=list(self.a), b=list(self.b), significant=self.significant, control_ok=self.control_ok,
                   wording=self.wording, pairs_for_observed=self.pairs_for_observed, skewed=self.skewed)
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
