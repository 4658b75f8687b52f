"""clkit.metrics: hand-computed examples, invariants, paper conventions."""

import warnings

import numpy as np
import pytest

from clkit import metrics as m

R3 = np.array([[0.9, 0.2, 0.1],
               [0.5, 0.8, 0.3],
               [0.3, 0.6, 0.7]])


def test_average_accuracy_variants():
    assert m.average_accuracy(R3) == pytest.approx((0.3 + 0.6 + 0.7) / 3)
    # Díaz-Rodríguez: lower triangle incl. diagonal over T(T+1)/2 = 6 cells
    assert m.average_accuracy(R3, mode="all_seen") == pytest.approx((0.9 + 0.5 + 0.8 + 0.3 + 0.6 + 0.7) / 6)


def test_all_seen_accuracy_of_perfect_learner_is_one():
    # the curriculum paper's printed normaliser T(T-1)/2 would give 2.0 here; we follow its numbers
    assert m.average_accuracy(np.ones((3, 3)), mode="all_seen") == pytest.approx(1.0)


def test_backward_transfer_variants():
    assert m.backward_transfer(R3) == pytest.approx(((0.3 - 0.9) + (0.6 - 0.8)) / 2)
    dr = ((0.5 - 0.9) + (0.3 - 0.9) + (0.6 - 0.8)) / 3
    assert m.backward_transfer(R3, mode="diaz_rodriguez") == pytest.approx(dr)


def test_both_curriculum_bwt_forms_on_a_hand_built_matrix():
    R = np.array([[0.90, 0.05, 0.10, 0.10],
                  [0.60, 0.80, 0.10, 0.10],
                  [0.50, 0.70, 0.95, 0.10],
                  [0.55, 0.40, 0.85, 0.70]])
    # Eq. 2 of the curriculum paper: R_ij - R_jj over i > j, divided by T(T-1)/2 = 6
    eq2 = ((0.60 - 0.90) + (0.50 - 0.90) + (0.70 - 0.80) + (0.55 - 0.90) + (0.40 - 0.80) + (0.85 - 0.95)) / 6
    # the authors' code: R_ij - R_(i-1)j over i > j, divided by 6
    code = ((0.60 - 0.90) + (0.50 - 0.60) + (0.70 - 0.80) + (0.55 - 0.50) + (0.40 - 0.70) + (0.85 - 0.95)) / 6
    assert eq2 == pytest.approx(-1.65 / 6) and code == pytest.approx(-0.85 / 6)
    assert m.backward_transfer(R, mode="diaz_rodriguez") == pytest.approx(eq2)
    assert m.backward_transfer(R, mode="consecutive") == pytest.approx(code)
    # the code's form telescopes: 2/T times the final-row (Lopez-Paz) BWT
    assert m.backward_transfer(R, mode="consecutive") == pytest.approx(2 / 4 * m.backward_transfer(R))


def test_forgetting_can_be_negative():
    # the final model improves on an earlier task: negative forgetting (taskification paper, Table 1: -0.27)
    assert m.forgetting([[0.5, 0.0], [0.7, 0.9]]) == pytest.approx(-0.2)
    assert m.forgetting([[2.0, 5.0], [1.5, 1.0]], higher_is_better=False) == pytest.approx(-0.5)


def test_regression_bwt_is_taskification_definition():
    M = np.array([[1.0, 0, 0], [2.0, 1.5, 0], [4.0, 1.0, 1.0]])
    # BWT = 1/(T-1) sum_j (M_jj - M_Tj): task 0 got worse (1 -> 4), task 1 better (1.5 -> 1)
    assert m.backward_transfer(M, higher_is_better=False) == pytest.approx(((1 - 4) + (1.5 - 1)) / 2)


def test_forward_transfer():
    assert m.forward_transfer(R3, b=[0.1, 0.1, 0.1]) == pytest.approx(((0.2 - 0.1) + (0.3 - 0.1)) / 2)
    assert m.forward_transfer(R3, mode="diaz_rodriguez") == pytest.approx((0.2 + 0.1 + 0.3) / 3)
    with pytest.raises(ValueError, match="b"):
        m.forward_transfer(R3)
    # cells not measured (NaN) are skipped; none measured gives NaN without a warning
    R = np.array(R3, dtype=float)
    R[0, 2] = np.nan
    assert m.forward_transfer(R, mode="diaz_rodriguez") == pytest.approx((0.2 + 0.3) / 2)
    blank = np.tril(np.ones((3, 3)))
    blank[np.triu_indices(3, k=1)] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(m.forward_transfer(blank, mode="diaz_rodriguez"))
        assert np.isnan(m.forward_transfer(blank, b=[0.1, 0.1, 0.1]))


def test_forgetting_accuracy_and_regression():
    assert m.forgetting(R3) == pytest.approx(((0.9 - 0.3) + (0.8 - 0.6)) / 2)
    M = np.array([[1.0, 5, 5], [2.0, 1.5, 5], [4.0, 1.0, 1.0]])
    # f_0 = M_T0 - min(M_00, M_10) = 4 - 1; f_1 = M_T1 - min(M_11) = 1 - 1.5
    assert m.forgetting(M, higher_is_better=False) == pytest.approx((3 + -0.5) / 2)


def test_forgetting_matches_definition_on_random_matrices():
    rng = np.random.default_rng(0)
    for _ in range(50):
        R = rng.random((5, 5))
        # f_j = max_{k in [j, T-1)} R_kj - R_Tj (0-based rows j..T-2)
        f = np.array([R[j:-1, j].max() - R[-1, j] for j in range(4)])
        assert m.forgetting(R) == pytest.approx(f.mean())


def test_no_forgetting_when_nothing_changes():
    R = np.tile([0.7, 0.8, 0.9], (3, 1))
    assert m.forgetting(R) == pytest.approx(0.0)
    assert m.backward_transfer(R) == pytest.approx(0.0)


def test_single_task_is_nan():
    assert np.isnan(m.backward_transfer([[0.5]]))
    assert np.isnan(m.forgetting([[0.5]]))


def test_stream_metrics_drift_conventions():
    A = np.array([[0.5, 0.0], [0.4, 0.6], [0.3, 0.7]])
    assert m.stream_average_accuracy(A) == pytest.approx(0.5)
    # reported sign: A_B,k - max_i A_i,k  -> ((0.3-0.5) + 0) / 2
    assert m.stream_forgetting(A) == pytest.approx(-0.1)
    assert m.stream_forgetting(A) <= 0
    assert m.stream_auc(A) == pytest.approx(np.mean([0.25, 0.5, 0.5]))


@pytest.mark.parametrize("bad", [[[1, 2, 3]], [[1, 2], [3, 4], [5, 6]]])
def test_non_square_rejected(bad):
    with pytest.raises(ValueError, match="square"):
        m.average_accuracy(bad)


def test_unknown_mode_rejected():
    with pytest.raises(ValueError, match="mode"):
        m.backward_transfer(R3, mode="foo")
