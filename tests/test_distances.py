"""clkit.distances: Wasserstein, Jensen-Shannon and the histogram helpers."""

import numpy as np
import pytest

from clkit.distances import gaussian_histogram, histogram, jensen_shannon, wasserstein_1d


def test_wasserstein_1d_is_the_shift_between_translated_samples():
    x = np.random.default_rng(0).normal(size=500)
    assert wasserstein_1d(x, x + 3.0) == pytest.approx(3.0)


def test_jensen_shannon_bounds_and_symmetry():
    p, q = np.array([0.2, 0.8]), np.array([0.6, 0.4])
    assert jensen_shannon(p, q) == pytest.approx(jensen_shannon(q, p))
    assert 0 < jensen_shannon(p, q) < 1
    m = (p + q) / 2
    kl = lambda a, b: float(np.sum(a * np.log2(a / b)))  # noqa: E731
    assert jensen_shannon(p, q) == pytest.approx(0.5 * kl(p, m) + 0.5 * kl(q, m))


def test_histogram_counts_tails_and_closed_last_bin():
    h = histogram([-1.0, 0.0, 0.5, 1.0, 2.0], [0.0, 0.5, 1.0])
    assert h.tolist() == [0.2, 0.2, 0.4, 0.2]
    assert h.sum() == pytest.approx(1.0)
    assert histogram([0.2, 0.7], [0.0, 0.5, 1.0], tails=False).tolist() == [0.5, 0.5]


def test_gaussian_histogram_sums_to_one_and_matches_cdf():
    from scipy.stats import norm

    edges = np.linspace(-2, 2, 9)
    h = gaussian_histogram(0.3, 1.2, edges)
    assert h.sum() == pytest.approx(1.0)
    assert h[0] == pytest.approx(norm.cdf(-2, 0.3, 1.2))
    assert h[3] == pytest.approx(norm.cdf(-0.5, 0.3, 1.2) - norm.cdf(-1.0, 0.3, 1.2))


def test_histogram_helpers_refuse_bad_edges():
    with pytest.raises(ValueError, match="bin_edges"):
        histogram([1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="std"):
        gaussian_histogram(0.0, -1.0, [0.0, 1.0])
