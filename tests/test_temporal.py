"""clkit.temporal: the paper's metrics on hand-computed matrices and their edge cases."""

import numpy as np
import pytest

from clkit import temporal as tm
from clkit.data.temporal import gaussian_ground_truth, make_drifting_gaussians

nan = np.nan


def test_transfer_ratio_clips_above_one():
    A = [[0.5, 0.9], [nan, 0.6]]          # 0.9 / 0.6 = 1.5 -> clipped to 1
    g = tm.transfer_ratio(A)
    assert g[0, 1] == 1.0 and np.isnan(g[1, 0]) and g[1, 1] == 1.0


def test_transfer_ratio_external_oracle_and_zero_oracle():
    A = [[0.5, 0.3], [nan, 0.0]]
    g = tm.transfer_ratio(A, oracle=[0.5, 0.0])
    assert g[0, 1] == 1.0              # oracle 0: cannot do worse than the oracle
    g = tm.transfer_ratio([[0.4, 0.3], [nan, 0.6]], oracle=[0.8, 0.6])
    assert g[0, 0] == pytest.approx(0.5) and g[0, 1] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="oracle"):
        tm.transfer_ratio(A, oracle=[1.0])


def test_stability_horizon_hand_example():
    A = [[0.9, 0.85, 0.7, 0.9],       # g = 1, .944, .778, 1
         [nan, 0.9, 0.9, 0.9],
         [nan, nan, 0.9, 0.3],
         [nan, nan, nan, 0.9]]
    assert tm.stability_horizon(A, delta=0.8).tolist() == [1.0, 2.0, 0.0, 0.0]
    assert tm.stability_horizon(A, delta=0.8, contiguous=False).tolist() == [3.0, 2.0, 0.0, 0.0]
    # never crossed -> censored at the last available step; delta = 0 never crosses
    assert tm.stability_horizon(A, delta=0.0).tolist() == [3.0, 2.0, 1.0, 0.0]
    # horizon caps h
    assert tm.stability_horizon(A, delta=0.0, horizon=1).tolist() == [1.0, 1.0, 1.0, 0.0]


def test_stability_horizon_skips_nan_cells():
    A = [[0.9, nan, 0.88, 0.2], [nan, 0.9, 0.9, 0.9], [nan, nan, 0.9, 0.9], [nan, nan, nan, 0.9]]
    assert tm.stability_horizon(A, delta=0.9)[0] == 2.0


def _dh_reference(A, eps, lam, H):
    """Literal recursion of Eq. 4-5."""
    A = np.asarray(A, float)
    T = len(A)
    out = []
    for t in range(T):
        S, dh = 0.0, H + 1
        for h in range(1, H + 1):
            if t + h < T and not np.isnan(A[t, t + h]):
                S = max(0.0, S + abs(A[t, t + h] - A[t, t]) - eps)
            if S > lam:
                dh = h
                break
        out.append(dh)
    return np.array(out, float)


def test_drift_horizon_hand_example_and_sentinel():
    A = [[0.9, 0.85, 0.6, 0.5], [nan, 0.9, 0.88, 0.87], [nan, nan, 0.9, 0.9], [nan, nan, nan, 0.9]]
    # row 0: S1 = max(0, .05-.02) = .03; S2 = .03 + .30 - .02 = .31 > .15 -> DH = 2
    # row 1: S1 = 0, S2 = .01 -> never -> sentinel H + 1 = 4
    assert tm.drift_horizon(A, epsilon=0.02, lam=0.15).tolist() == [2.0, 4.0, 4.0, 4.0]
    assert tm.drift_horizon(A, epsilon=0.02, lam=0.15, horizon=6).tolist() == [2.0, 7.0, 7.0, 7.0]


def test_drift_horizon_statistic_resets_at_zero():
    # deviations below epsilon pull S down but never below 0
    A = [[0.9, 0.9, 0.9, 0.7], [nan] * 4, [nan] * 4, [nan] * 4]
    A[1][1] = A[2][2] = A[3][3] = 0.9
    assert tm.drift_horizon(A, epsilon=0.05, lam=0.1)[0] == 3.0  # S = 0, 0, 0.15 > 0.1


def test_drift_horizon_matches_literal_recursion():
    rng = np.random.default_rng(1)
    for _ in range(30):
        A = np.triu(rng.random((7, 7))) + np.tril(np.full((7, 7), nan), -1)
        A[rng.random((7, 7)) < 0.1] = nan
        np.fill_diagonal(A, rng.random(7))
        for H in (3, 6):
            got = tm.drift_horizon(A, epsilon=0.05, lam=0.2, horizon=H)
            np.testing.assert_array_equal(got, _dh_reference(A, 0.05, 0.2, H))


def test_tas_hand_example_partial_and_clipping():
    A = [[0.8, 0.6, 0.3], [nan, 0.8, 0.4], [nan, nan, 0.5]]
    tas = tm.temporal_adaptation_score(A, n=2)
    assert tas[0] == pytest.approx((0.6 + 0.3) / (0.8 + 0.5))
    assert tas[1] == pytest.approx(0.4 / 0.5)      # only one future step exists
    assert np.isnan(tas[2])                        # last period: no future
    assert np.isnan(tm.temporal_adaptation_score(A, n=2, partial=False)[1])
    # n beyond the stream: uses what exists
    assert tm.temporal_adaptation_score(A, n=10)[0] == pytest.approx(tas[0])
    # above the oracle -> clipped to 1
    assert tm.temporal_adaptation_score([[0.5, 0.9], [nan, 0.6]], n=1)[0] == 1.0


def test_tas_nan_pairs_and_zero_oracle():
    A = [[0.8, nan, 0.3], [nan, 0.8, 0.4], [nan, nan, 0.5]]
    assert tm.temporal_adaptation_score(A, n=2)[0] == pytest.approx(0.3 / 0.5)
    with pytest.warns(UserWarning, match=r"TAS is 1 by convention at period\(s\) \[0\]"):   # said (issue 55)
        assert tm.temporal_adaptation_score([[0.5, 0.0], [nan, 0.0]], n=1)[0] == 1.0


def test_id_ood():
    A = [[0.9, 0.5, 0.4], [nan, 0.8, 0.6], [nan, nan, 0.7]]
    np.testing.assert_allclose(tm.id_accuracy(A), [0.9, 0.8, 0.7])
    np.testing.assert_allclose(tm.ood_accuracy(A)[:2], [0.45, 0.6])
    np.testing.assert_allclose(tm.ood_accuracy(A, n=1)[:2], [0.5, 0.6])


def test_metrics_on_200x200_are_consistent():
    rng = np.random.default_rng(0)
    A = np.triu(rng.uniform(0.5, 1.0, (200, 200)))
    A[np.tril_indices(200, -1)] = nan
    s = tm.summarize_learner(A, delta=0.8, epsilon=0.01, lam=0.2, n=5, horizon=20)
    assert 0 <= s["tas"] <= 1 and 0 <= s["sh"] <= 20 and 1 <= s["dh"] <= 21


@pytest.mark.parametrize("call, name", [
    (lambda: tm.transfer_ratio([[1, 2, 3]]), "square"),
    (lambda: tm.stability_horizon(np.eye(2), delta=1.5), "delta"),
    (lambda: tm.stability_horizon(np.eye(2), delta=-0.1), "delta"),
    (lambda: tm.drift_horizon(np.eye(2), epsilon=-1, lam=0.1), "epsilon"),
    (lambda: tm.drift_horizon(np.eye(2), epsilon=0.1, lam=-1), "lam"),
    (lambda: tm.temporal_adaptation_score(np.eye(2), n=0), "n"),
    (lambda: tm.check_params(dataset="mnist", learners=["erm"], period_length=1, delta=0.5, epsilon=0,
                             lam=0, n=1, horizon=0, epochs=1, seed=0), "dataset"),
    (lambda: tm.check_params(dataset="rainfall", learners=["erm", "lwf"], period_length=1, delta=0.5,
                             epsilon=0, lam=0, n=1, horizon=0, epochs=1, seed=0), "learners"),
    (lambda: tm.check_params(dataset="rainfall", learners=["erm"], period_length=1, delta=0.5,
                             epsilon=0, lam=0, n=1.5, horizon=0, epochs=1, seed=0), "n"),
])
def test_bad_input_names_parameter(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


# ----------------------------------------------------------------- the paper's claim, ground truth

def test_ground_truth_separates_shift_from_difficulty():
    T = 8
    difficulty = gaussian_ground_truth(np.linspace(4, 1, T), np.zeros(T))
    shift = gaussian_ground_truth(np.full(T, 4.0), 0.5 * np.arange(T))
    kw = dict(delta=0.9, epsilon=0.01, lam=0.1, n=3)
    d = tm.summarize_learner(difficulty["acc_matrix"], oracle=difficulty["oracle"], **kw)
    s = tm.summarize_learner(shift["acc_matrix"], oracle=shift["oracle"], **kw)
    assert d["id"] - d["ood"] > 0.05 and s["id"] - s["ood"] > 0.05   # both show an ID-OOD gap
    assert d["tas"] == pytest.approx(1.0)                            # difficulty: perfect adaptation
    assert s["tas"] < 0.9                                            # shift: adaptation lag


def test_learned_erm_recovers_the_distinction():
    kw = dict(epochs=20, hidden=(16,), lr=0.01, batch_size=64, seed=0)
    dif = make_drifting_gaussians(6, 400, drift=0.0, separation_start=4, separation_end=1, seed=0)
    shf = make_drifting_gaussians(6, 400, drift=0.5, separation_start=4, separation_end=4, seed=0)
    tas_d = np.nanmean(tm.temporal_adaptation_score(tm.accuracy_matrix(dif, "erm", **kw), n=3))
    tas_s = np.nanmean(tm.temporal_adaptation_score(tm.accuracy_matrix(shf, "erm", **kw), n=3))
    assert tas_d > 0.95 and tas_s < tas_d - 0.05


def test_accuracy_matrix_is_deterministic_and_upper_triangular():
    ds = make_drifting_gaussians(4, 100, seed=3)
    A1 = tm.accuracy_matrix(ds, "finetune", epochs=2, seed=5)
    A2 = tm.accuracy_matrix(ds, "finetune", epochs=2, seed=5)
    np.testing.assert_array_equal(A1, A2)
    assert np.isnan(A1[np.tril_indices(4, -1)]).all() and np.isfinite(A1[np.triu_indices(4)]).all()
    with pytest.raises(ValueError, match="learner"):
        tm.accuracy_matrix(ds, "no_such_learner")


def test_stability_horizon_never_crossed_conventions():
    # g rows (oracle = diagonal): row 0 crosses at h=2; rows 1-3 never cross.
    A = np.array([[1.0, 0.95, 0.5, 0.9],
                  [np.nan, 1.0, 0.95, 0.95],
                  [np.nan, np.nan, 1.0, 0.99],
                  [np.nan, np.nan, np.nan, 1.0]])
    avail = tm.stability_horizon(A, delta=0.9)
    assert avail.tolist() == [1.0, 2.0, 1.0, 0.0]        # capped at the steps that exist
    capped = tm.stability_horizon(A, delta=0.9, never_crossed="horizon")
    assert capped.tolist() == [1.0, 3.0, 3.0, 3.0]       # never crossed -> H = T - 1 = 3
    # with an explicit horizon H = 2, the paper's FMoW convention reports H
    assert tm.stability_horizon(A, delta=0.9, horizon=2, never_crossed="horizon").tolist() == [
        1.0, 2.0, 2.0, 2.0]
    # the conventions agree on every row that crosses
    assert capped[0] == avail[0]
    with pytest.raises(ValueError, match="never_crossed"):
        tm.stability_horizon(A, delta=0.9, never_crossed="cap")


def test_majority_baseline_matrix_hand_example():
    train = [np.array([0, 0, 1]), np.array([1, 1, 0]), np.array([2, 2, 2])]
    test = [np.array([0, 1, 1, 1]), np.array([1, 1]), np.array([2, 0])]
    A = tm.majority_accuracy_matrix(train, test)
    expected = np.array([[0.25, 0.0, 0.5], [nan, 1.0, 0.0], [nan, nan, 0.5]])
    np.testing.assert_array_equal(np.isnan(A), np.isnan(expected))
    np.testing.assert_allclose(A[~np.isnan(A)], expected[~np.isnan(expected)])
    # a constant predictor that is the oracle of its own period keeps g = 1 only where
    # the label mix does not move: TAS of the baseline is finite and within [0, 1]
    tas = tm.temporal_adaptation_score(A, n=1)
    assert np.all((tas[:-1] >= 0) & (tas[:-1] <= 1))
    with pytest.raises(ValueError, match="train_labels"):
        tm.majority_accuracy_matrix([np.array([0])], [])


def test_backward_cells_never_change_the_papers_metrics():
    """The paper's metrics look forward only: filling tau < t changes none of them."""
    rng = np.random.default_rng(3)
    full = rng.uniform(0.3, 1.0, size=(6, 6))
    kw = dict(delta=0.9, epsilon=0.02, lam=0.15, n=2)
    a, b = tm.summarize_learner(full, **kw), tm.summarize_learner(tm.forward_view(full), **kw)
    assert {k: v for k, v in a.items() if k != "per_period"} == \
        pytest.approx({k: v for k, v in b.items() if k != "per_period"}, nan_ok=True)


def test_backward_summary_by_hand():
    A = np.array([[0.9, 0.1, 0.1, 0.1],
                  [0.7, 0.8, 0.1, 0.1],
                  [0.8, 0.6, 0.9, 0.1],
                  [0.5, 0.6, 0.7, 0.8]])
    s = tm.backward_summary(A)
    ba = s["per_period"]["backward_accuracy"]
    assert np.isnan(ba[0]) and ba[1:] == pytest.approx([0.7, 0.7, 0.6])
    # F(0) = max(0.9, 0.7, 0.8) - 0.5; F(1) = max(0.8, 0.6) - 0.6; F(2) = 0.9 - 0.7
    assert s["per_period"]["forgetting"][:3] == pytest.approx([0.4, 0.2, 0.2])
    assert s["forgetting"] == pytest.approx(0.8 / 3) and s["max_forgetting"] == pytest.approx(0.4)
    assert s["final_backward_accuracy"] == pytest.approx(0.6)
    # a forward-only matrix (the paper's protocol, a user's CSV) has no backward view
    assert tm.backward_summary(tm.forward_view(A))["evaluated"] is False


def test_learner_settings_reach_the_strategy_and_bad_ones_name_the_learner():
    settings = tm.check_learner_settings({"si": {"si_lambda": 100.0}}, ["erm", "finetune", "si"])
    assert settings == {"erm": {}, "finetune": {}, "si": {"si_lambda": 100.0}}
    with pytest.raises(ValueError, match=r"learner_kwargs\['ewc'\]: unknown keyword 'si_lambda'"):
        tm.check_learner_settings({"ewc": {"si_lambda": 1.0}}, ["ewc"])
    with pytest.raises(ValueError, match="'agem' is not a learner of this run"):
        tm.check_learner_settings({"agem": {"memory_size": 10}}, ["finetune"])


def test_strength_grid_reaches_the_strategies_at_smoke_scale():
    """The shipped calibration grid: each case's strengths reach EWC / SI and change what they forget.

    Measured on this stream (4 periods, rotating boundary): at strength 1 EWC and SI forget as
    much as fine-tuning (0.089), at 100 about half (0.036 / 0.040).
    """
    from clkit.notebooks import load_params
    from clkit.sweep.grid import expand_grid, load_grid, resolve_grid

    grid = load_grid(resolve_grid("03_temporal_metrics", "strengths"))
    cases = expand_grid(grid)
    assert len(cases) == 4
    ds = make_drifting_gaussians(4, 300, drift=0.8, seed=1)
    forgetting = {}
    for case in cases:
        values = load_params("03_temporal_metrics", grid["params"], list(case.items()))
        settings = tm.check_learner_settings(values["learner_kwargs"], values["learners"])
        assert settings["si"] == {"si_lambda": case["learner_kwargs.si.si_lambda"]}
        assert settings["ewc"] == {"ewc_lambda": case["learner_kwargs.ewc.ewc_lambda"]}
        key = (case["learner_kwargs.ewc.ewc_lambda"], case["learner_kwargs.si.si_lambda"])
        forgetting[key] = {m: tm.backward_summary(tm.accuracy_matrix(
            ds, m, epochs=3, batch_size=16, backward=True, strategy_kwargs=settings[m]))["forgetting"]
            for m in ("finetune", "ewc", "si")}
    assert len({round(f["finetune"], 12) for f in forgetting.values()}) == 1  # finetune never sees them
    weak, strong = forgetting[(1.0, 1.0)], forgetting[(100.0, 100.0)]
    assert strong["ewc"] < weak["ewc"] and strong["si"] < weak["si"] < weak["finetune"] + 1e-9
