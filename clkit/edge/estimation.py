"""Estimating the performance distribution over class sequences, and judging estimates.

The true distribution is the empirical distribution of the accuracies of all
sequences (enumerable settings). A protocol (RS: three random sequences; EDGE:
the hard, one random and the easy sequence) evaluates a few sequences and
estimates the distribution by the Gaussian ``N(mu, sigma^2)`` of their accuracies,
with the paper's *population* standard deviation (divide by L, Sect. 3.1).

Distances between the truth and a Gaussian estimate (the paper does not fix the
discretisation; our choice, documented and tested):

* **JSD** (bits, in [0, 1]): both are discretised on ``num_bins`` equal-width bins
  spanning the truth's range ``[min, max]`` plus two open tail bins outside it;
  the truth has no mass in the tails, so estimate mass outside the true range is
  penalised. The bins depend on the truth only, so every protocol of a learner is
  compared on the same bins. ``num_bins = 10`` by default (about sqrt(90)).
* **W1** (units of the accuracies): exact first-order Wasserstein distance between
  the empirical truth and the Gaussian, computed by :func:`clkit.distances.wasserstein_1d`
  against ``quantiles`` midpoint quantiles of the Gaussian (error below 1e-3 sigma).
"""

from __future__ import annotations

import functools

import math

import numpy as np

from .._validate import check_int, check_probability, check_real
from ..distances import gaussian_histogram, histogram, jensen_shannon, wasserstein_1d
from .combinatorics import log_num_sequences

__all__ = [
    "gaussian_estimate",
    "range_estimate",
    "expected_extreme_z",
    "distribution_distances",
    "extremes",
    "rank_methods",
    "ranking_distance",
    "theorem1_sample_size",
    "theorem2_sample_size",
    "normality_tests",
    "similarity_correlation",
]


def _values(name, values, min_len=1):
    v = np.asarray(values, dtype=float).ravel()
    if len(v) < min_len:
        raise ValueError(f"{name} must hold at least {min_len} values, got {len(v)}")
    if not np.isfinite(v).all():
        raise ValueError(f"{name} must contain only finite values")
    return v


def gaussian_estimate(values) -> tuple[float, float]:
    """Mean and population standard deviation (``ddof=0``) of sampled accuracies.

    Examples
    --------
    >>> gaussian_estimate([1.0, 2.0, 3.0])
    (2.0, 0.816496580927726)
    """
    v = _values("values", values)
    return float(v.mean()), float(v.std(ddof=0))


def expected_extreme_z(population_size: int) -> float:
    """Expected largest of ``population_size`` standard normal values (Blom's approximation).

    ``Phi^-1((L - 0.375) / (L + 0.25))``: where the extremes of ``L`` Gaussian values lie, in
    standard deviations from the mean (3.5 for the 2,520 orders of 8 classes in 4 tasks).

    Examples
    --------
    >>> round(expected_extreme_z(90), 2), round(expected_extreme_z(2520), 2)
    (2.46, 3.48)
    """
    from scipy.stats import norm

    L = check_int("population_size", population_size, low=2)
    return float(norm.ppf((L - 0.375) / (L + 0.25)))


def range_estimate(values, population_size: int) -> tuple[float, float]:
    """A Gaussian that reads the lowest and highest of ``values`` as the population's extremes.

    EDGE's hard and easy sequences are meant to be the least and most accurate of all
    ``population_size`` orders; the paper's estimate (:func:`gaussian_estimate`) still takes
    the standard deviation of the three values, which a pair of extremes inflates little and a
    pair that misses them shrinks. This estimator (beyond the paper) takes the mean of the
    values and ``sigma = (max - min) / (2 z)``, ``z`` the expected extreme of ``population_size``
    standard normals (:func:`expected_extreme_z`): right when the extremes are the true ones and
    the truth is near Gaussian, too narrow when they are not extremes.

    Examples
    --------
    >>> m, s = range_estimate([40.0, 50.0, 60.0], 2520)
    >>> m, round(s, 2)
    (50.0, 2.87)
    """
    v = _values("values", values, min_len=2)
    return float(v.mean()), float((v.max() - v.min()) / (2 * expected_extreme_z(population_size)))


def distribution_distances(true_values, mean: float, std: float, *, num_bins: int = 10,
                           quantiles: int = 4000) -> dict:
    """JSD and W1 between the true accuracy distribution and ``N(mean, std^2)``.

    Parameters
    ----------
    true_values : array_like, shape (n,)
        Accuracies of all sequences (the ground truth).
    mean, std : float
        The estimate (e.g. from :func:`gaussian_estimate`).
    num_bins : int
        Bins over the truth's range for the JSD (see module docstring).
    quantiles : int
        Gaussian quantiles used for W1.

    Returns
    -------
    dict with ``jsd`` (bits) and ``wasserstein``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.normal(50, 2, size=5000)
    >>> good = distribution_distances(truth, 50, 2)
    >>> bad = distribution_distances(truth, 53, 0.5)
    >>> good["jsd"] < 0.01 < bad["jsd"], good["wasserstein"] < 0.1 < bad["wasserstein"]
    (True, True)
    """
    v = _values("true_values", true_values)
    mean = check_real("mean", mean)
    std = check_real("std", std, low=0)
    num_bins = check_int("num_bins", num_bins, low=1)
    quantiles = check_int("quantiles", quantiles, low=10)
    lo, hi = float(v.min()), float(v.max())
    if hi - lo <= 0:
        pad = 1e-9 * max(1.0, abs(lo))
        lo, hi = lo - pad, hi + pad
    edges = np.linspace(lo, hi, num_bins + 1)
    jsd = jensen_shannon(histogram(v, edges), gaussian_histogram(mean, std, edges))
    if std > 0:
        q = mean + std * _std_normal_quantiles(quantiles)
    else:
        q = np.array([mean])
    return {"jsd": float(jsd), "wasserstein": float(wasserstein_1d(v, q))}


@functools.lru_cache(maxsize=8)
def _std_normal_quantiles(quantiles):
    from scipy.stats import norm

    z = norm.ppf((np.arange(quantiles) + 0.5) / quantiles)
    z.setflags(write=False)
    return z


def extremes(true_values, sampled_values) -> dict:
    """How well sampled sequences capture the extremes of the truth.

    Returns
    -------
    dict
        ``true_min``, ``true_max``, ``min``, ``max`` (of the samples), ``min_gap =
        min - true_min`` and ``max_gap = true_max - max`` (both >= 0, 0 = captured)
        and ``range_coverage = (max - min) / (true_max - true_min)``.

    Examples
    --------
    >>> extremes([1, 2, 3, 4], [2, 4])["range_coverage"]
    0.6666666666666666
    """
    t = _values("true_values", true_values)
    s = _values("sampled_values", sampled_values)
    rng = t.max() - t.min()
    return {"true_min": float(t.min()), "true_max": float(t.max()), "min": float(s.min()),
            "max": float(s.max()), "min_gap": float(s.min() - t.min()), "max_gap": float(t.max() - s.max()),
            "range_coverage": float((s.max() - s.min()) / rng) if rng > 0 else 1.0}


_DIMENSIONS = ("lower", "upper", "stability")


def rank_methods(values_by_method: dict, dimension: str) -> dict:
    """Rank methods (1 = best) as in Tables A5/A6.

    ``"lower"``: by the minimum accuracy, higher is better; ``"upper"``: by the
    maximum, higher is better; ``"stability"``: by the population standard
    deviation, lower is better. Ties share the smallest rank.

    Examples
    --------
    >>> rank_methods({"a": [1, 3], "b": [2, 2.5], "c": [0, 9]}, "lower")
    {'a': 2, 'b': 1, 'c': 3}
    """
    from scipy.stats import rankdata

    if dimension not in _DIMENSIONS:
        raise ValueError(f"dimension must be one of {list(_DIMENSIONS)}, got {dimension!r}")
    names = list(values_by_method)
    if not names:
        raise ValueError("values_by_method must name at least one method")
    vals = [_values(f"values_by_method[{n!r}]", values_by_method[n]) for n in names]
    key = {"lower": lambda v: -v.min(), "upper": lambda v: -v.max(), "stability": lambda v: v.std()}[dimension]
    ranks = rankdata([key(v) for v in vals], method="min")
    return {n: int(r) for n, r in zip(names, ranks)}


def ranking_distance(reference: dict, ranks: dict) -> int:
    """Spearman footrule between two rankings: ``sum_m |rank_ref(m) - rank(m)|``.

    The "ranking error" of Tables A5/A6 (sum over methods, per dimension).

    Examples
    --------
    >>> ranking_distance({"a": 1, "b": 2, "c": 3}, {"a": 2, "b": 1, "c": 3})
    2
    """
    if set(reference) != set(ranks):
        raise ValueError(f"ranks must rank the same methods as reference: {sorted(reference)} vs {sorted(ranks)}")
    return int(sum(abs(int(reference[m]) - int(ranks[m])) for m in reference))


def _solve_fpc(log_omega, rhs, extra=0):
    """Smallest integer L with ``L (|O| - extra - L) / (|O| - extra - 1) >= rhs``; None if none."""
    L = max(1, math.ceil(rhs))
    if log_omega > 700:                      # |Omega| beyond float range: correction factor is 1
        return L
    omega = math.exp(log_omega) - extra
    if omega <= 1:
        return None
    # L * (omega - L) >= rhs * (omega - 1): smaller root of L^2 - omega L + rhs (omega - 1) = 0
    disc = omega * omega - 4.0 * rhs * (omega - 1.0)
    if disc < 0:
        return None
    L = max(1, math.ceil(2.0 * rhs * (omega - 1.0) / (omega + math.sqrt(disc)) - 1e-9))
    while L * (omega - L) < rhs * (omega - 1.0) - 1e-9 * rhs * omega:
        L += 1
    return L if L < omega else None


def theorem1_sample_size(num_classes: int, num_tasks: int, epsilon: float = 0.1, delta: float = 0.05,
                         *, approx: bool = False):
    """Random sequences needed by Theorem 1 (Eq. 2): ``L (|O|-L)/(|O|-1) >= ln(2|O|/delta) / (2 eps^2)``.

    Parameters
    ----------
    num_classes, num_tasks : int
    epsilon : float
        Tolerance on the mean accuracy (accuracies in [0, 1]).
    delta : float
        Failure probability.
    approx : bool
        Use Remark 1's approximation ``ln|O| ~ N ln(N/e)`` (the paper's
        "L >~ 2 x 10^4" for N = 100) instead of the exact ``ln N!/(M!)^K``.

    Returns
    -------
    int or None
        The smallest such L; None when no sample smaller than |O| satisfies it
        (then enumerate everything).

    Examples
    --------
    >>> theorem1_sample_size(100, 10)                 # exact ln|Omega| = 212.7
    10820
    >>> theorem1_sample_size(100, 10, approx=True)    # Remark 1: on the order of 2 x 10^4
    18211
    """
    epsilon = check_real("epsilon", epsilon, low=0, low_open=True)
    delta = check_probability("delta", delta)
    if not 0 < delta < 1:
        raise ValueError(f"delta must be a number in (0, 1), got {delta!r}")
    log_omega = log_num_sequences(num_classes, num_tasks)
    if approx:
        n = num_classes
        rhs = (n * math.log(n / math.e) + math.log(2 / delta)) / (2 * epsilon**2)
        return max(1, math.ceil(rhs))
    rhs = (math.log(2 / delta) + log_omega) / (2 * epsilon**2)
    return _solve_fpc(log_omega, rhs)


def theorem2_sample_size(num_classes: int, num_tasks: int, value_range: float, epsilon: float = 0.1,
                         delta: float = 0.05):
    """Random sequences needed besides the two extremes, Theorem 2 (Eq. 4).

    ``L (|O|-2-L)/(|O|-3) >= ln(2(|O|-2)/delta) R^2 / (2 eps^2)`` with
    ``R = A(w+) - A(w-)`` the accuracy range between the extreme sequences.

    Note: with the natural logarithm, N = 100 classes in 10 tasks, eps = 0.1,
    delta = 0.05 and R = 0.1 give L = 109. The paper's Remark 2 says "around 50",
    which matches ``log10 |Omega|`` (about 92 + 1.6, halved = 47) or, with ln, a
    space of about e^96 sequences (e.g. 50 classes in 10 tasks: 53). Either way the
    bound is ``R^2 / eps^2`` times Theorem 1's (here 100 times smaller).

    Examples
    --------
    >>> theorem2_sample_size(100, 10, value_range=0.1)
    109
    >>> theorem2_sample_size(50, 10, value_range=0.1)
    53
    """
    value_range = check_real("value_range", value_range, low=0)
    epsilon = check_real("epsilon", epsilon, low=0, low_open=True)
    delta = check_probability("delta", delta)
    if not 0 < delta < 1:
        raise ValueError(f"delta must be a number in (0, 1), got {delta!r}")
    log_omega = log_num_sequences(num_classes, num_tasks)
    log_omega2 = log_omega + math.log1p(-2 * math.exp(-log_omega)) if log_omega < 700 else log_omega
    rhs = (math.log(2 / delta) + log_omega2) * value_range**2 / (2 * epsilon**2)
    if rhs == 0:
        return 0
    return _solve_fpc(log_omega, rhs, extra=2)


def normality_tests(values) -> dict:
    """Box-Cox transform then three normality tests (Table A3).

    The Box-Cox ``lambda`` maximises the normal log-likelihood (``scipy.stats.boxcox``;
    values must be positive, accuracies in percent are). Then Shapiro-Wilk,
    D'Agostino's K^2 (needs >= 8 values) and a one-sample Kolmogorov-Smirnov test
    against the normal with the transformed data's mean and sample std.

    Returns
    -------
    dict with ``lambda``, ``shapiro_p``, ``dagostino_p``, ``ks_p`` (NaN where
    undefined, e.g. constant values).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> out = normality_tests(rng.normal(50, 3, size=90))
    >>> out["shapiro_p"] > 0.05 and out["ks_p"] > 0.05
    True
    """
    from scipy import stats

    v = _values("values", values, min_len=3)
    nan = float("nan")
    if np.ptp(v) == 0:
        return {"lambda": nan, "shapiro_p": nan, "dagostino_p": nan, "ks_p": nan}
    if (v <= 0).any():
        raise ValueError("values must be positive for the Box-Cox transform (use accuracies in percent)")
    z, lam = stats.boxcox(v)
    out = {"lambda": float(lam), "shapiro_p": float(stats.shapiro(z).pvalue)}
    out["dagostino_p"] = float(stats.normaltest(z).pvalue) if len(z) >= 8 else nan
    # the fitted normal as a frozen distribution's cdf, not ``"norm"`` with ``args``: SciPy 1.18
    # passes such args on to ``special.ndtr``, which takes none (TypeError; found by gpu_check)
    fitted = stats.norm(loc=z.mean(), scale=z.std(ddof=1))
    out["ks_p"] = float(stats.kstest(z, fitted.cdf).pvalue)
    return out


def similarity_correlation(scores, accuracies) -> dict:
    """Pearson R between inter-task similarity S(O) and accuracy over sequences (Fig. 2c).

    Examples
    --------
    >>> similarity_correlation([1, 2, 3, 4], [10, 20, 30, 41])["r"] > 0.99
    True
    """
    from scipy.stats import pearsonr

    s = _values("scores", scores, min_len=3)
    a = _values("accuracies", accuracies, min_len=3)
    if len(s) != len(a):
        raise ValueError(f"scores and accuracies must have equal length, got {len(s)} and {len(a)}")
    if np.ptp(s) == 0 or np.ptp(a) == 0:
        return {"r": float("nan"), "p": float("nan")}
    res = pearsonr(s, a)
    return {"r": float(res.statistic), "p": float(res.pvalue)}
