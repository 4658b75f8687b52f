"""clkit.edge.estimation: Gaussian estimates, JSD/W1 to the truth, sample sizes, rankings, tests."""

import math

import numpy as np
import pytest

from clkit.edge.estimation import (distribution_distances, extremes, gaussian_estimate, normality_tests,
                                   rank_methods, ranking_distance, similarity_correlation,
                                   theorem1_sample_size, theorem2_sample_size)
from clkit.edge.experiment import evaluate_protocol


def test_gaussian_estimate_uses_population_std():
    mu, sd = gaussian_estimate([26.17, 27.5, 12.5])
    assert mu == pytest.approx((26.17 + 27.5 + 12.5) / 3)
    assert sd == pytest.approx(np.sqrt(np.mean((np.array([26.17, 27.5, 12.5]) - mu) ** 2)))


def test_wasserstein_to_a_point_estimate_is_mean_absolute_deviation():
    truth = np.array([50.0, 52.0, 53.0, 57.0])
    d = distribution_distances(truth, 52.0, 0.0)
    assert d["wasserstein"] == pytest.approx(np.abs(truth - 52.0).mean())


def test_wasserstein_between_gaussians_is_the_mean_shift():
    truth = np.random.default_rng(0).normal(60, 3, size=200_000)
    d = distribution_distances(truth, 62.0, 3.0)
    assert d["wasserstein"] == pytest.approx(2.0, abs=0.05)


def test_jsd_is_in_bits_and_penalises_mass_outside_the_true_range():
    truth = np.random.default_rng(1).normal(60, 3, size=2000)
    same = distribution_distances(truth, truth.mean(), truth.std())["jsd"]
    far = distribution_distances(truth, 200.0, 1.0)["jsd"]
    narrow = distribution_distances(truth, truth.mean(), 0.3 * truth.std())["jsd"]
    assert 0 <= same < 0.02 < narrow < far
    assert far == pytest.approx(1.0)          # disjoint supports: 1 bit


def test_better_estimates_are_closer():
    truth = np.random.default_rng(2).normal(70, 4, size=90)
    good, bad = evaluate_protocol(truth, truth[[0, 1, 2, 3, 4, 5]]), evaluate_protocol(truth, [70.5, 70.6, 70.7])
    assert good["jsd"] < bad["jsd"] and good["wasserstein"] < bad["wasserstein"]


def test_extremes_report_capture():
    e = extremes([1, 2, 3, 4, 5], [1, 3, 5])
    assert (e["min_gap"], e["max_gap"], e["range_coverage"]) == (0.0, 0.0, 1.0)
    e = extremes([1, 2, 3, 4, 5], [2, 3])
    assert (e["min_gap"], e["max_gap"], e["range_coverage"]) == (1.0, 2.0, 0.25)


def test_theorem1_matches_the_papers_numbers():
    # exact ln|Omega| for N = 100, K = 10: 212.7; (ln 40 + 212.7) / 0.02
    L = theorem1_sample_size(100, 10, 0.1, 0.05)
    log_omega = math.lgamma(101) - 10 * math.lgamma(11)
    assert L == math.ceil((math.log(2 / 0.05) + log_omega) / (2 * 0.1**2))
    assert 10**4 <= L <= 3 * 10**4                            # "on the order of 2 x 10^4"
    assert theorem1_sample_size(100, 10, approx=True) == pytest.approx(2 * 10**4, rel=0.1)


def test_theorem1_accounts_for_the_finite_population():
    # 9 classes / 3 tasks: |Omega| = 1680; the returned L is the smallest satisfying Eq. 2
    om, eps, delta = 1680, 0.2, 0.05
    rhs = math.log(2 * om / delta) / (2 * eps**2)
    L = theorem1_sample_size(9, 3, eps, delta)
    assert L * (om - L) / (om - 1) >= rhs > (L - 1) * (om - L + 1) / (om - 1)
    assert L > math.ceil(rhs) - 1                              # at least the infinite-population bound
    assert theorem1_sample_size(6, 3, 0.1, 0.05) is None      # 90 sequences: no sample suffices


def test_theorem2_shrinks_the_sample_by_r_squared():
    L2 = theorem2_sample_size(100, 10, value_range=0.1)
    assert L2 == 109                                           # natural log; the paper's "around 50" uses log10
    assert theorem1_sample_size(100, 10) / L2 == pytest.approx(100, rel=0.02)
    assert theorem2_sample_size(50, 10, value_range=0.1) == pytest.approx(50, abs=5)
    assert theorem2_sample_size(100, 10, value_range=0.0) == 0


def test_sample_size_arguments_are_checked():
    with pytest.raises(ValueError, match="delta"):
        theorem1_sample_size(100, 10, 0.1, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        theorem2_sample_size(100, 10, 0.1, epsilon=0)
    with pytest.raises(ValueError, match="num_tasks must divide"):
        theorem1_sample_size(100, 7)


def test_rankings_and_ranking_distance():
    vals = {"a": [10, 20, 30], "b": [15, 16, 17], "c": [5, 40, 41]}
    assert rank_methods(vals, "lower") == {"a": 2, "b": 1, "c": 3}
    assert rank_methods(vals, "upper") == {"a": 2, "b": 3, "c": 1}
    assert rank_methods(vals, "stability") == {"a": 2, "b": 1, "c": 3}
    assert ranking_distance({"a": 1, "b": 2, "c": 3}, {"a": 3, "b": 2, "c": 1}) == 4
    with pytest.raises(ValueError, match="dimension"):
        rank_methods(vals, "median")


def test_normality_tests_tell_gaussian_from_skewed_bimodal():
    rng = np.random.default_rng(3)
    g = normality_tests(rng.normal(60, 3, size=90))
    assert g["shapiro_p"] > 0.05 and g["ks_p"] > 0.05 and np.isfinite(g["lambda"])
    bimodal = np.concatenate([rng.normal(40, 1, 45), rng.normal(80, 1, 45)])
    b = normality_tests(bimodal)
    assert b["shapiro_p"] < 0.01
    assert np.isnan(normality_tests([5.0, 5.0, 5.0])["shapiro_p"])


def test_ks_p_is_the_one_sample_ks_test_against_the_fitted_normal():
    """Hand check: the KS statistic of the Box-Cox values against N(mean, sample sd) is the
    largest gap between their empirical cdf and that normal cdf; its p is kstest's on the
    standardised values (the form every SciPy takes)."""
    from scipy import stats

    v = np.random.default_rng(5).normal(60, 3, size=40)
    z, _ = stats.boxcox(v)
    u = np.sort((z - z.mean()) / z.std(ddof=1))
    F = stats.norm.cdf(u)
    n = len(u)
    d = max((np.arange(1, n + 1) / n - F).max(), (F - np.arange(n) / n).max())
    ref = stats.kstest(u, "norm")
    assert ref.statistic == pytest.approx(d)
    assert normality_tests(v)["ks_p"] == pytest.approx(ref.pvalue)


def test_similarity_correlation_sign():
    s = np.linspace(0, 1, 30)
    assert similarity_correlation(s, 50 + 10 * s)["r"] == pytest.approx(1.0)
    assert similarity_correlation(s, 50 - 10 * s)["r"] == pytest.approx(-1.0)
