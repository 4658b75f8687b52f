"""clkit.drift.schedule: Eqs. 5, 6, 9, 10 and 11 on hand-computed examples and invariants."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from clkit.drift import (DEFAULT_TAU, gaussian_weights, hard_weights, largest_remainder, latent_tasks, mixing_entropy,
                         overlap_index, task_centers)


def test_task_centers_eq9():
    mu, bk, T = task_centers(np.array([20, 25, 10]), 10)
    assert bk.tolist() == [2, 3, 1] and T == 6
    # mu_k = sum_{i<k} ceil(N_i/B) + ceil(N_k/B)/2
    assert mu.tolist() == [0 + 1.0, 2 + 1.5, 5 + 0.5]


def test_gaussian_weights_hand_value():
    w = gaussian_weights([1.0, 3.0], 4, sigma=1.0)
    t = 0.5  # batch 0 evaluated at its midpoint
    a = math.exp(-(t - 1) ** 2 / 2)
    b = math.exp(-(t - 3) ** 2 / 2)
    assert w[0, 0] == pytest.approx(a / (a + b))
    np.testing.assert_allclose(w.sum(1), 1.0)
    # symmetric centres -> mirrored weights
    np.testing.assert_allclose(w[::-1, ::-1], w)


def test_small_sigma_recovers_hard_schedule_for_equal_tasks():
    mu, bk, T = task_centers([50] * 4, 10)
    w = gaussian_weights(mu, T, sigma=1e-3)
    np.testing.assert_array_equal(w, hard_weights(bk))


def test_hard_weights_blocks():
    assert hard_weights([2, 1]).argmax(1).tolist() == [0, 0, 1]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8), st.integers(1, 40), st.integers(0, 10_000))
def test_largest_remainder_sums_to_batch_and_is_within_one(K, B, seed):
    w = np.random.default_rng(seed).dirichlet(np.ones(K), size=7)
    n = largest_remainder(w, B)
    assert (n.sum(1) == B).all()
    assert (np.abs(n - w * B) < 1 + 1e-9).all()
    assert (n >= np.floor(w * B - 1e-9)).all()


def test_largest_remainder_hand_example():
    # floors 4, 3, 2 (sum 9); one slot left goes to the largest remainder 0.5 (task 0)
    assert largest_remainder([[0.45, 0.35, 0.2]], 10).tolist() == [[5, 3, 2]]


def test_overlap_index_hand_and_hard():
    w = np.array([[1.0, 0.0], [0.6, 0.4], [0.5, 0.5], [0.0, 1.0]])
    assert overlap_index(w, tau=0.9) == 0.5
    assert overlap_index(w, tau=0.55) == 0.25
    assert overlap_index(hard_weights([3, 4, 5])) == 0.0


def test_overlap_rises_with_sigma():
    mu, _, T = task_centers([300] * 10, 10)
    o = [overlap_index(gaussian_weights(mu, T, s)) for s in [0.5, 2, 5, 10, 20, 40]]
    assert all(b >= a for a, b in zip(o, o[1:]))
    assert o[0] == 0.0 and o[-1] == 1.0


def test_default_tau_matches_paper_corafull_magnitudes():
    # CoraFull-CL: 35 tasks, ~565 nodes each of which 60% are streamed, B = 10;
    # paper: O = 0.04 / 0.38 / 0.92 at sigma 3 / 10 / 20 (tau = 0.9, the authors' value)
    assert DEFAULT_TAU == 0.9
    mu, _, T = task_centers([339] * 35, 10)
    o3, o10, o20 = (overlap_index(gaussian_weights(mu, T, s), DEFAULT_TAU) for s in (3, 10, 20))
    assert o3 < 0.1 and 0.25 < o10 < 0.5 and o20 > 0.85


def test_mixing_entropy_extremes():
    assert mixing_entropy(hard_weights([2, 2])) == 0.0
    assert mixing_entropy(np.full((3, 4), 0.25)) == pytest.approx(1.0)


def test_latent_tasks_label_order_and_remainder():
    toc, tc = latent_tasks(np.arange(6))
    assert tc == [(0, 1), (2, 3), (4, 5)] and toc.tolist() == [0, 0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="classes_per_task=4 does not divide num_classes=6.*remainder 2"):
        latent_tasks(np.arange(6), classes_per_task=4)
    toc, tc = latent_tasks(np.arange(7), classes_per_task=2, drop_remainder=True)
    assert toc[6] == -1 and len(tc) == 3


@pytest.mark.parametrize("sigma", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_sigma(sigma):
    with pytest.raises(ValueError, match="sigma"):
        gaussian_weights([1.0], 3, sigma)


@pytest.mark.parametrize("tau", [0.0, 1.5, -0.2])
def test_bad_tau(tau):
    with pytest.raises(ValueError, match="tau"):
        overlap_index([[1.0]], tau)


def test_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size"):
        task_centers([10], 0)
    with pytest.raises(ValueError, match="batch_size"):
        largest_remainder([[1.0]], 0)
    with pytest.raises(TypeError, match="batch_size"):
        task_centers([10], 2.5)
