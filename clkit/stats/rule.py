"""The rule: one paired comparison (:func:`paired`), a Holm family (:func:`holm`), and verdicts
derived again from their record (:func:`rederive`).

The paired t-test with its spread floored at the metric's resolution
---------------------------------------------------------------------
On the differences ``d`` (on the metric's scale, ``METRIC_SCALES``) the statistic is
``t = mean(d) / (s / sqrt(n))`` with ``s = max(sd(d), r)``: ``r`` is the smallest difference the
metric resolves (accuracy on ``n_test`` examples: one example, ``1 / n_test``; when unknown
``DEFAULT_RELATIVE_RESOLUTION`` of the values' magnitude, float32 evaluation noise being about
``1e-7`` of it). Where the differences spread more than ``r`` -- every real run -- this is exactly
the paired t-test (scipy's ``ttest_1samp`` gives the same p). Where they spread less, ``s = r``: the
differences are judged against what the metric can resolve, and p moves continuously as the spread
goes to 0 (a jitter far below ``r`` changes nothing). The earlier rule switched to an exact
sign-flip test on bit-identical differences: ``+0.01`` on 4 seeds gave ``p = 0.125``, the same with
a ``1e-10`` jitter ``p = 1.5e-25`` (issue 53).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace
from typing import Sequence

import numpy as np

from .power import min_detectable_effect
from .verdict import ALPHA, NOT_TESTABLE, SCALES, SCOPES, ROLES, Verdict, decide

__all__ = ["DEFAULT_RELATIVE_RESOLUTION", "METRIC_SCALES", "CONTROLS", "scale_for", "paired", "paired_p", "holm",
           "holm_adjust", "effect_size", "sign_flip_p", "empirical_p", "outlier_share"]

#: the spread's floor when the metric's resolution is not given: this share of the values' largest
#: magnitude (difference scale) or this log ratio (log-ratio scale). float32 evaluation noise is about
#: 1e-7 of a value, so a jitter from a non-deterministic GPU run stays below it.
DEFAULT_RELATIVE_RESOLUTION = 1e-6
#: the family name of null controls judged together (:func:`clkit.stats.judge_controls`)
CONTROLS = "controls"
_TESTS = ("t", "sign_flip")

#: metric -> (scale it is tested on, its resolution). Chosen per metric, in advance, never per run:
#: accuracy-like metrics move in steps of one test example and their seed differences are roughly
#: symmetric; MSE-like and ratio metrics are positive with a rare blow-up (one seed's diverging loss),
#: so their differences are skewed and their log ratios are not.
METRIC_SCALES = {
    "accuracy": ("difference", "1 / n_test (one test example)"),
    "acc": ("difference", "1 / n_test (one test example)"),
    "aia": ("difference", "1 / n_test (one test example)"),
    "bwt": ("difference", "1 / n_test (one test example)"),
    "forgetting": ("difference", "1 / n_test (one test example)"),
    "fwt": ("difference", "1 / n_test (one test example)"),
    "mse": ("log_ratio", f"{DEFAULT_RELATIVE_RESOLUTION:g} (relative)"),
    "rmse": ("log_ratio", f"{DEFAULT_RELATIVE_RESOLUTION:g} (relative)"),
    "mae": ("log_ratio", f"{DEFAULT_RELATIVE_RESOLUTION:g} (relative)"),
    "loss": ("log_ratio", f"{DEFAULT_RELATIVE_RESOLUTION:g} (relative)"),
    "ratio": ("log_ratio", f"{DEFAULT_RELATIVE_RESOLUTION:g} (relative)"),
    "distance": ("difference", f"{DEFAULT_RELATIVE_RESOLUTION:g} of the values' magnitude"),
}


def scale_for(metric: str, n_test: int | None = None) -> tuple[str, float | None]:
    """The scale a metric is tested on and its resolution (``METRIC_SCALES``), for :func:`paired`.

    Parameters
    ----------
    metric : str
        A key of ``METRIC_SCALES`` (case-insensitive).
    n_test : int, optional
        Test examples behind an accuracy-like metric (its resolution is ``1 / n_test``); without it
        the resolution is ``None`` (the default floor).

    Returns
    -------
    (scale, resolution) : (str, float or None)

    Examples
    --------
    >>> scale_for("ACC", n_test=200), scale_for("mse")
    (('difference', 0.005), ('log_ratio', 1e-06))
    """
    key = str(metric).lower()
    if key not in METRIC_SCALES:
        raise ValueError(f"metric must be one of {sorted(METRIC_SCALES)}, got {metric!r}")
    scale, _ = METRIC_SCALES[key]
    if scale == "log_ratio":
        return scale, DEFAULT_RELATIVE_RESOLUTION
    if "n_test" in METRIC_SCALES[key][1]:
        if n_test is None:
            return scale, None
        if not (isinstance(n_test, (int, np.integer)) and n_test > 0):
            raise ValueError(f"n_test must be a positive integer, got {n_test!r}")
        return scale, 1.0 / int(n_test)
    return scale, None


def sign_flip_p(d) -> float:
    """Exact two-sided p of the paired sign-flip test on differences ``d`` (all ``2**n`` sign patterns).

    The share of sign patterns whose mean is at least as far from 0 as the observed one. Its
    smallest value is ``2 / 2**n``: with fewer than 6 pairs it never falls below 0.05. At most 20 pairs.

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


def _values(x) -> np.ndarray:
    return np.asarray(x, dtype=float).ravel()


def _differences(a, b, scale: str = "difference") -> np.ndarray:
    a = _values(a)
    if b is None:
        d = a
    else:
        b = _values(b)
        if a.shape != b.shape:
            raise ValueError(f"a and b must pair one to one (same length), got {a.size} and {b.size} values")
        if scale == "log_ratio":
            if not (np.all(a > 0) and np.all(b > 0)):
                raise ValueError(f"scale='log_ratio' needs positive values in both arms, got a = {a.tolist()}, "
                                 f"b = {b.tolist()}")
            d = np.log(a) - np.log(b)
        else:
            d = a - b
    if not np.all(np.isfinite(d)):
        raise ValueError(f"paired values must be finite, got differences {d.tolist()}")
    return d


def _floor(a, b, scale: str, resolution: float | None) -> float:
    """The spread's floor: ``resolution`` when given, else the documented default."""
    if resolution is not None:
        return float(resolution)
    if scale == "log_ratio":
        return DEFAULT_RELATIVE_RESOLUTION
    vals = np.abs(_values(a)) if b is None else np.abs(np.concatenate([_values(a), _values(b)]))
    return DEFAULT_RELATIVE_RESOLUTION * float(vals.max()) if vals.size else 0.0


def outlier_share(d) -> float:
    """``max |d_i| / sum |d_i|``: the share of the differences' total size carried by the largest pair.

    ``1/n`` when every pair differs by as much; 1 when one pair carries everything; NaN when all are 0.
    A row above ``SKEW_CAUTION`` is printed with a caution.

    Examples
    --------
    >>> outlier_share([1.0, 1.0, 1.0, 1.0]), outlier_share([0.1, 0.1, 0.1, 2.7])
    (0.25, 0.9)
    """
    d = np.abs(_values(d))
    total = float(d.sum())
    return float(d.max() / total) if total > 0 else float("nan")


def paired_p(d, resolution) -> np.ndarray:
    """p of the rule's t-test on differences ``d`` of shape ``(..., n)``, the spread floored at
    ``resolution`` (scalar or broadcastable to ``d``'s leading shape). Vectorised: the simulations
    of ``tests/test_stats_simulation.py`` and ``benchmarks/stats_false_positives.py`` use it.

    Examples
    --------
    >>> paired_p([[0.01] * 4, [0.01, -0.01, 0.02, 0.0]], 0.005).round(3).tolist()
    [0.028, 0.495]
    """
    from scipy import stats

    d = np.asarray(d, dtype=float)
    n = d.shape[-1]
    spread = np.maximum(d.std(axis=-1, ddof=1), resolution)
    mean = d.mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(spread > 0, mean / (spread / math.sqrt(n)), 0.0)
    return 2 * stats.t.sf(np.abs(t), n - 1)


def _t_interval(d: np.ndarray, spread: float, level: float) -> tuple[float, float]:
    from scipy import stats

    n = d.size
    half = float(stats.t.ppf(1 - level / 2, n - 1)) * spread / math.sqrt(n)
    return float(d.mean() - half), float(d.mean() + half)


def _check_alpha(alpha: float) -> None:
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")


def _check_role(role: str, expect) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {list(ROLES)}, got {role!r}")
    if role != "finding" and expect is None:
        raise ValueError(f"a {role} needs expect= (the decision it must come out with)")


def effect_size(a, b=None, confidence: float = 0.95) -> dict:
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
           n_resamples: int = 9999, seed: int = 0, scope: str = "primary", scale: str = "difference",
           resolution: float | None = None) -> Verdict:
    """Decide a paired comparison over seeds (or series, or any pairing unit).

    Parameters
    ----------
    a, b : array-like, shape (n,)
        Paired values (``a[i]`` and ``b[i]`` share seed ``i``); ``b=None`` takes ``a``
        as the differences themselves (on ``scale``).
    comparison : str
        Name of the comparison in tables and text.
    higher, lower : str
        How a significant positive / negative mean difference reads.
    test : {"t", "sign_flip"}
        Paired t-test with the spread floored at ``resolution`` (default, the notebooks' rule) or the
        paired sign-flip permutation test (exact when ``2**n <= n_resamples``) with a bootstrap
        percentile interval.
    alpha : float
        Level of the decision (and ``1 - alpha`` the interval's).
    role, expect : str
        ``"finding"``, or a control with the decision it must come out with.
    scope : {"primary", "exploratory"}
        Whether a finding row tests one of the claims the run is about (``"primary"``) or is
        shown beside them (``"exploratory"``: never listed as a finding).
    scale : {"difference", "log_ratio"}
        Test ``a - b`` or ``log a - log b`` (MSE-like and ratio metrics; both arms positive). Chosen
        per metric in advance (``METRIC_SCALES``, :func:`scale_for`), never per run.
    resolution : float, optional
        The smallest difference the metric resolves, on ``scale`` (accuracy on ``n_test`` examples:
        ``1 / n_test``): the spread is never taken below it. Default: ``DEFAULT_RELATIVE_RESOLUTION``
        of the values' largest magnitude (difference scale) or ``DEFAULT_RELATIVE_RESOLUTION``
        (log-ratio scale).
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

    The same difference in every pair is judged against the metric's resolution (here one of
    200 test examples), and a jitter far below it changes nothing:

    >>> round(paired([0.01] * 4, resolution=0.005).p, 4), round(paired([0.01, 0.01 + 1e-10, 0.01, 0.01],
    ...                                                                resolution=0.005).p, 4)
    (0.028, 0.028)
    >>> v = paired([2.0, 2.2, 1.9, 9.0], [1.0, 1.1, 1.0, 1.2], scale="log_ratio")
    >>> v.rule, round(v.effect, 2), v.skewed
    ('paired t on log ratios, df = 3, two-sided, α = 0.05', 1.01, False)
    """
    from scipy import stats

    if test not in _TESTS:
        raise ValueError(f"test must be one of {list(_TESTS)}, got {test!r}")
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {list(SCALES)}, got {scale!r}")
    if scale == "log_ratio" and b is None:
        raise ValueError("scale='log_ratio' needs both arms (a and b), got b=None")
    if resolution is not None and not (isinstance(resolution, (int, float)) and np.isfinite(resolution)
                                       and resolution > 0):
        raise ValueError(f"resolution must be a positive number (the smallest difference the metric resolves) "
                         f"or None, got {resolution!r}")
    _check_alpha(alpha)
    _check_role(role, expect)
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {list(SCOPES)}, got {scope!r}")
    d = _differences(a, b, scale)
    n = int(d.size)
    values = dict(a=tuple(float(v) for v in _values(a)), b=() if b is None else tuple(float(v) for v in _values(b)))
    common = dict(comparison=comparison, higher=higher, lower=lower, role=role, expect=expect, alpha=alpha,
                  scope=scope, scale=scale, **values)
    if n < 2:
        return Verdict(effect=float(d.mean()) if n else float("nan"), ci_low=float("nan"),
                       ci_high=float("nan"), p=float("nan"), n=n, rule=f"paired {test}",
                       decision=NOT_TESTABLE, note=f"{n} pair(s): a paired test needs at least 2", **common)
    floor = _floor(a, b, scale, resolution)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    spread = max(sd, floor)
    on = " on log ratios" if scale == "log_ratio" else ""
    if test == "t":
        p = float(paired_p(d, floor)) if spread > 0 else 1.0
        lo, hi = _t_interval(d, spread, alpha)
        rule = f"paired t{on}, df = {n - 1}, two-sided, α = {alpha:g}"
    elif sd == 0:   # no spread: every sign pattern's mean is as far from 0; the bootstrap has one value
        p, lo, hi = sign_flip_p(d) if n <= 20 else (1.0 if mean == 0 else 2.0 ** (1 - n)), mean, mean
        rule = f"paired sign-flip{on} (exact), two-sided, α = {alpha:g}"
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            rng = np.random.default_rng(seed)
            res = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=n_resamples,
                                         alternative="two-sided", random_state=rng)
            boot = stats.bootstrap((d,), np.mean, confidence_level=1 - alpha, n_resamples=n_resamples,
                                   method="percentile", random_state=rng)
        p, lo, hi = float(res.pvalue), float(boot.confidence_interval.low), float(boot.confidence_interval.high)
        exact = 2 ** n <= n_resamples
        rule = (f"paired sign-flip{on} ({'exact' if exact else f'{n_resamples} resamples'}), two-sided, "
                f"α = {alpha:g}")
    mde = min_detectable_effect(n, spread, alpha) if spread > 0 else float("nan")
    return Verdict(effect=mean, ci_low=lo, ci_high=hi, p=p, n=n, rule=rule,
                   decision=decide(mean, p, alpha, higher, lower), p_raw=p, sd=sd, mde=mde, ci_level=1 - alpha,
                   resolution=floor, outlier_share=outlier_share(d), **common)


def holm(verdicts: Sequence[Verdict], alpha: float | None = None, name: str = "") -> list[Verdict]:
    """Holm-adjust the findings of a family judged together; decisions re-taken on the adjusted p.

    Only finding rows form the family: control rows are judged among the controls
    (:func:`clkit.stats.judge_controls`) and keep here their own values, with ``guards`` set to
    ``name`` (the family whose findings they vouch for); "not testable" rows stay so. Every row of a
    family of ``m`` gets its interval at the simultaneous (Bonferroni) level ``1 - alpha / m`` -- the
    same for every row, so the ``m`` intervals cover their true effects together with probability at
    least ``1 - alpha`` -- and its detectable effect at ``alpha / m`` (the level at which Holm decides
    a row whatever the others do: its 80 % power is kept under the rule).

    An interval that excludes 0 means a finding (its raw p is below ``alpha / m``). Holm's later
    steps reject at up to ``alpha``, so a finding's interval may still touch 0: the direction is
    decided by the step-down test, the interval bounds the size at the family's simultaneous level.

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
    out = [replace(v, guards=name) if v.role != "finding" and name and not v.guards else v for v in verdicts]
    if not idx:
        return out
    raw = np.array([verdicts[i].p_raw for i in idx], dtype=float)
    adjusted = holm_adjust(raw)
    m = len(idx)
    for i, p in zip(idx, adjusted):
        out[i] = _adjusted(verdicts[i], float(p), m, name, alpha, "Holm over")
    return out


def _adjusted(v: Verdict, p: float, m: int, name: str, alpha: float | None, how: str) -> Verdict:
    """``v`` decided at the adjusted ``p`` in a family of ``m``: interval and detectable at ``alpha / m``."""
    a = v.alpha if alpha is None else alpha
    level = a / m
    lo, hi = _interval(v, level)
    mde = min_detectable_effect(v.n, v.spread, level) if np.isfinite(v.spread) and v.spread > 0 else v.mde
    base = v.rule.split(", Holm over")[0]
    rule = base + (f", {how} {m}" if m > 1 else "")
    return replace(v, p=p, alpha=a, family=m, family_name=name, rule=rule, ci_low=lo, ci_high=hi,
                   ci_level=1 - level, mde=mde, decision=decide(v.effect, p, a, v.higher, v.lower))


def holm_adjust(p) -> np.ndarray:
    """Holm's step-down adjusted p-values: ``max_{j <= i} min(1, (m - j + 1) p_(j))`` in sorted order.

    The same values as statsmodels' ``multipletests(p, method="holm")`` (``tests/test_stats.py``
    checks it), without its garbage collection on every call. A 2-D ``p`` of shape ``(runs, m)`` is
    adjusted row by row (the simulations use it).

    Examples
    --------
    >>> holm_adjust([0.01, 0.04, 0.03]).tolist()
    [0.03, 0.06, 0.06]
    >>> holm_adjust([[0.01, 0.04], [0.5, 0.01]]).tolist()
    [[0.02, 0.04], [0.5, 0.02]]
    """
    p = np.asarray(p, dtype=float)
    flat = p.ndim == 1
    p = np.atleast_2d(p) if flat else p
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1)
    stepped = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * ranked, axis=-1))
    out = np.empty_like(p)
    np.put_along_axis(out, order, stepped, axis=-1)
    return out[0] if flat else out


def _interval(v: Verdict, level: float) -> tuple[float, float]:
    """The interval of ``v``'s mean difference at significance ``level``, by ``v``'s own rule,
    from its recorded values (``v.a``, ``v.b``)."""
    from scipy import stats

    d = _differences(v.a, v.b if v.b else None, v.scale) if v.a else None
    if d is None or d.size < 2:
        return float("nan"), float("nan")
    if v.rule.startswith("paired sign-flip"):
        if v.sd == 0:
            return float(d.mean()), float(d.mean())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            boot = stats.bootstrap((d,), np.mean, confidence_level=1 - level, n_resamples=9999, method="percentile",
                                   random_state=np.random.default_rng(0))
        return float(boot.confidence_interval.low), float(boot.confidence_interval.high)
    return _t_interval(d, v.spread, level)


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
