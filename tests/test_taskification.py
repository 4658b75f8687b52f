"""Science tests of clkit.taskification: boundaries, discrepancy, profiles, D_prof, BPS, case studies."""

import numpy as np
import pytest

import clkit.taskification as tk
from clkit.distances import wasserstein_1d


# ---------------------------------------------------------------- boundaries
def test_fixed_windows_days_and_shift():
    T = tk.days_to_steps(280)                    # 40 weeks at 10 minutes
    assert T == 40320
    tau = tk.fixed_windows(T, tk.days_to_steps(9))
    assert tau.num_tasks == 31 and set(tau.lengths) == {1296}
    shifted = tk.fixed_windows(T, tk.days_to_steps(44), offset=tk.days_to_steps(2))
    assert shifted.boundaries[0] == 288 and shifted.num_tasks == 6
    assert shifted.boundaries[-1] <= T
    # 9, 30 and 44 are all 2 mod 7: every split starts its tasks on the same weekday pattern
    assert all(w % 7 == 2 for w in (9, 30, 44))


@pytest.mark.parametrize("bad, match", [
    (dict(length=100, window=101), "window"),
    (dict(length=100, window=0), "window"),
    (dict(length=100, window=10, offset=100), "offset"),
])
def test_fixed_windows_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        tk.fixed_windows(**bad)


@pytest.mark.parametrize("b", [[0, 5, 5, 9], [0, 6, 3], [-1, 4]])
def test_taskification_rejects_invalid(b):
    with pytest.raises(ValueError, match="boundaries"):
        tk.Taskification(b)


def test_neighbourhood_is_valid_uniform_and_seeded():
    tau = tk.fixed_windows(1000, 100)
    B = tk.perturb_boundaries(tau, 20, 4000, seed=1)
    moves = B - tau.boundaries
    assert (moves[:, [0, -1]] == 0).all() and np.abs(moves).max() == 20
    assert (np.diff(B, axis=1) > 0).all()
    counts = np.bincount((moves[:, 1:-1] + 20).ravel(), minlength=41)
    assert counts.min() > 0.7 * counts.mean()           # roughly uniform on [-20, 20]
    assert (tk.perturb_boundaries(tau, 20, 10, seed=1) == B[:10]).all()
    assert not (tk.perturb_boundaries(tau, 20, 10, seed=2) == B[:10]).all()


def test_delta_too_large_or_negative():
    tau = tk.fixed_windows(1000, 100)
    with pytest.raises(ValueError, match="delta=50 is so large that tasks can vanish"):
        tk.perturb_boundaries(tau, 50, 5)
    with pytest.raises(ValueError, match="delta"):
        tk.perturb_boundaries(tau, -1, 5)


# ---------------------------------------------------------------- discrepancy
def test_quantile_w1_matches_exact_pot_for_equal_tasks():
    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(0, 1, (64, 3)), rng.normal(1, 2, (64, 3)), rng.exponential(1, (64, 3))]
    tau = tk.Taskification([0, 64, 128, 192])
    Dq = tk.distance_matrix(x, tau, num_quantiles=64, standardize=False)   # G = task length: exact
    De = tk.distance_matrix(x, tau, method="exact", standardize=False)
    np.testing.assert_allclose(Dq, De, atol=1e-12)
    assert De[0, 1] == pytest.approx(np.mean(wasserstein_1d(x[:64], x[64:128])))


def test_quantile_w1_close_to_exact_for_unequal_tasks():
    rng = np.random.default_rng(1)
    x = rng.standard_t(3, size=(1000, 2)) + np.linspace(0, 3, 1000)[:, None]
    tau = tk.Taskification([0, 230, 610, 1000])
    Dq = tk.distance_matrix(x, tau, num_quantiles=512)
    De = tk.distance_matrix(x, tau, method="exact")
    np.testing.assert_allclose(Dq, De, rtol=0.05, atol=0.01)


def test_sort_once_quantiles_equal_per_task_sort():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(500, 4))
    tau = tk.Taskification([17, 100, 260, 480])
    Q = tk.task_quantiles(x, tau, num_quantiles=7)
    q = (np.arange(7) + 0.5) / 7
    for k, s in enumerate(tau.slices()):
        part = np.sort(x[s], axis=0)
        idx = np.ceil(q * len(part)).astype(int) - 1
        np.testing.assert_array_equal(Q[k], part[idx])


def test_distance_matrix_invariants_and_sliced():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(600, 3)) * np.repeat([1, 2, 1, 3, 1, 2], 100)[:, None]
    tau = tk.fixed_windows(600, 100)
    for method in ("quantile", "sliced"):
        D = tk.distance_matrix(x, tau, method=method, seed=0)
        assert D.shape == (6, 6) and np.allclose(D, D.T) and np.allclose(np.diag(D), 0) and (D >= 0).all()
        # tasks 0, 2, 4 share a distribution: closer to each other than to task 5
        assert D[0, 2] < D[0, 5] and D[2, 4] < D[4, 5]


def test_nan_in_stream_is_named():
    x = np.zeros((100, 2))
    x[37, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or inf at step 37"):
        tk.bps(x, tk.fixed_windows(100, 20), 2, 5)


# ---------------------------------------------------------------- profiles and D_prof
def test_profiles_hand_example():
    D = np.array([[0, 1, 4, 6], [1, 0, 2, 5], [4, 2, 0, 3], [6, 5, 3, 0]], dtype=float)
    assert tk.plasticity_profile(D).tolist() == [1, 2, 3]
    assert tk.stability_profile(D, l_min=2).tolist() == [4, 6, 5]
    assert tk.stability_profile(D, l_min=3).tolist() == [6]
    with pytest.raises(ValueError, match="l_min"):
        tk.stability_profile(D, l_min=1)
    with pytest.raises(ValueError, match="l_min=4 leaves no task pairs"):
        tk.stability_profile(D, l_min=4)


def test_profile_distance_formula_and_weights():
    a = tk.Profile(np.array([1.0, 2.0, 3.0]), np.array([4.0, 6.0, 5.0]))
    b = tk.Profile(np.array([1.0, 2.0]), np.array([5.0]))         # different task count
    d_pl = wasserstein_1d(a.plasticity, b.plasticity)
    d_st = wasserstein_1d(a.stability, b.stability)
    assert tk.profile_distance(a, b, 0.3, 0.7) == pytest.approx(np.sqrt(0.3 * d_pl ** 2 + 0.7 * d_st ** 2))
    assert tk.profile_distance(a, a) == 0.0
    assert tk.profile_distance(a, b) == pytest.approx(tk.profile_distance(b, a))
    for bad in (dict(alpha=0.0), dict(beta=-1.0)):
        with pytest.raises(ValueError, match="alpha|beta"):
            tk.profile_distance(a, b, **bad)


def test_bps_is_mean_dprof_over_neighbourhood():
    rng = np.random.default_rng(4)
    x = np.r_[rng.normal(0, 1, (300, 2)), rng.normal(2, 1, (300, 2)), rng.normal(0, 1, (300, 2))]
    tau = tk.fixed_windows(900, 100)
    r = tk.bps_report(x, tau, 10, 8, seed=5, num_quantiles=32)
    base = tk.taskification_profile(x, tau, num_quantiles=32)
    z = (x - x.mean(0)) / x.std(0)      # bps standardises over tau's span once
    manual = [tk.profile_distance(base, tk.taskification_profile(z, tk.Taskification(b), num_quantiles=32,
                                                                 standardize=False)) for b in r.boundaries]
    np.testing.assert_allclose(r.d_prof, manual, rtol=1e-9, atol=1e-12)
    assert r.bps == pytest.approx(np.mean(manual))
    assert tk.bps(x, tau, 10, 8, seed=5, num_quantiles=32) == r.bps                # deterministic


def test_bps_zero_without_perturbation_and_exact_path_agrees():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(400, 2))
    tau = tk.fixed_windows(400, 50)
    assert tk.bps(x, tau, 0, 3) == 0.0
    a = tk.bps(x, tau, 5, 4, seed=1, method="exact")
    b = tk.bps(x, tau, 5, 4, seed=1, num_quantiles=2048)
    assert a == pytest.approx(b, rel=0.15)


def test_bps_over_series_independent_of_threads():
    v = np.random.default_rng(6).normal(size=(3, 300, 2))
    tau = tk.fixed_windows(300, 50)
    one = tk.bps_over_series(v, tau, 5, 6, n_jobs=1)
    two = tk.bps_over_series(v, tau, 5, 6, n_jobs=2)
    np.testing.assert_array_equal(one["bps"], two["bps"])
    assert one["bps_std"] == pytest.approx(np.std(one["bps"], ddof=1))


# ---------------------------------------------------------------- case studies (Fig. 1)
@pytest.mark.parametrize("name", ["changepoint", "transient", "recurrence"])
def test_boundary_at_structure_has_higher_bps(name):
    cs = tk.case_studies(3000, seed=0)[name]
    near = tk.bps_report(cs.stream, cs.near, cs.delta, 100, seed=0)
    far = tk.bps_report(cs.stream, cs.far, cs.delta, 100, seed=0)
    assert near.bps > 1.5 * far.bps
    # the mechanism the paper names: plasticity for Eqs. 3-4; for Eq. 5 both profiles move
    if name in ("changepoint", "transient"):
        assert near.plasticity > 1.5 * far.plasticity
    else:
        assert near.stability > far.stability


def test_case_study_near_boundaries_sit_on_the_structure():
    cs = tk.case_studies(3000)
    assert cs["changepoint"].structure[0] in cs["changepoint"].near.boundaries
    assert set(cs["transient"].structure) <= set(cs["transient"].near.boundaries.tolist())
    far = cs["changepoint"].far.boundaries
    assert np.min(np.abs(far[:, None] - np.array(cs["changepoint"].structure)[None])) > cs["changepoint"].delta


# ---------------------------------------------------------------- matrix comparison (Fig. 2)
def test_upsampling_preserves_constant_and_block_structure():
    assert np.allclose(tk.upsample_matrix(np.full((3, 3), 2.0), 9), 2.0)
    A = np.kron(np.array([[0.0, 1.0], [1.0, 0.0]]), np.ones((2, 2)))    # 4x4 blocks of a 2x2 pattern
    assert tk.matrix_mse(A, [[0.0, 1.0], [1.0, 0.0]], size=4, method="nearest") == 0.0
    T = tk.matrix_mse_table({"a": np.zeros((2, 2)), "b": np.ones((4, 4)), "c": np.full((3, 3), 3.0)})
    np.testing.assert_allclose(T, [[0, 1, 9], [1, 0, 4], [9, 4, 0]])


def test_sliced_wasserstein_of_a_shift():
    from clkit.distances import sliced_wasserstein

    x = np.random.default_rng(0).normal(size=(2000, 3))
    # a translation by s along e_0: W1 on direction theta is |s theta_0|; E|theta_0| = 1/2 on the 3-D sphere
    assert sliced_wasserstein(x, x + [3.0, 0.0, 0.0], num_projections=2000, seed=1) == pytest.approx(1.5, abs=0.05)
    assert sliced_wasserstein(x, x, seed=1) == 0.0


def test_bps_accepts_raw_boundaries_and_validates_them():
    x = np.random.default_rng(7).normal(size=(300, 2))
    b = [0, 60, 120, 180, 240, 300]
    assert tk.bps(x, b, 5, 4, seed=3) == tk.bps(x, tk.Taskification(b), 5, 4, seed=3)
    with pytest.raises(ValueError, match="strictly increasing"):
        tk.bps(x, [0, 120, 60, 300], 5, 4)
    with pytest.raises(ValueError, match="beyond the stream length"):
        tk.bps(x, [0, 200, 400], 5, 4)


# ---------------------------------------------------------------- exact W1 switch, null stream
def test_exact_all_pairs_matches_pot_for_unequal_tasks():
    from clkit.taskification.discrepancy import _SortedStream

    rng = np.random.default_rng(11)
    x = rng.standard_t(3, size=(500, 3))
    tau = tk.Taskification([0, 37, 100, 180, 260, 333, 500])
    D = _SortedStream(x).exact_distances(tau.boundaries)
    for i, j in [(0, 1), (0, 5), (2, 4), (3, 3)]:
        si, sj = tau.slices()[i], tau.slices()[j]
        assert D[i, j] == pytest.approx(np.mean(wasserstein_1d(x[si], x[sj])), abs=1e-12)


def test_w1_switches_to_exact_below_eight_quantile_counts():
    assert tk.EXACT_BELOW_QUANTILES == 8
    short, long_ = tk.fixed_windows(3000, 500), tk.fixed_windows(3000, 600)
    assert tk.use_exact(short, num_quantiles=64) and not tk.use_exact(long_, num_quantiles=64)
    assert tk.use_exact(long_, num_quantiles=128) and not tk.use_exact(short, num_quantiles=64, exact_below=0)
    assert tk.use_exact(long_, "exact")
    rng = np.random.default_rng(12)
    x = rng.standard_t(3, size=(3000, 2)) + np.repeat(rng.normal(size=(30, 2)), 100, axis=0)
    # below the threshold the default equals exact W1 (matrix and BPS) ...
    np.testing.assert_allclose(tk.distance_matrix(x, short), tk.distance_matrix(x, short, method="exact"))
    assert tk.bps(x, short, 40, 6, seed=1) == pytest.approx(tk.bps(x, short, 40, 6, seed=1, method="exact"))
    # ... and differs from the 64-quantile form it replaces
    assert tk.bps(x, short, 40, 6, seed=1) != tk.bps(x, short, 40, 6, seed=1, exact_below=0)
    # above it the default is the quantile form
    assert tk.bps(x, long_, 40, 6, seed=1) == tk.bps(x, long_, 40, 6, seed=1, exact_below=0)
    with pytest.raises(ValueError, match="exact_below"):
        tk.bps(x, long_, 40, 6, exact_below=-1)


def test_quantile_error_on_short_tasks_is_what_the_switch_removes():
    # tasks of 2G steps: the unperturbed split is read exactly by G = 64 levels, its neighbours are not, so the
    # quantile-form BPS of a noisy stream (small BPS, as on a null stream) is far off (45 % here)
    x = np.random.default_rng(1).standard_t(3, size=(3000, 2))
    tau = tk.fixed_windows(3000, 128)
    exact = tk.bps(x, tau, 20, 20, seed=0, method="exact")
    quant = tk.bps(x, tau, 20, 20, seed=0, exact_below=0)
    assert abs(quant - exact) / exact > 0.2
    assert tk.bps(x, tau, 20, 20, seed=0) == pytest.approx(exact)


def test_null_stream_keeps_marginals_and_gives_the_sampling_floor():
    v = np.random.default_rng(13).normal(size=(2, 600, 3))
    z = tk.null_stream(v, seed=0)
    assert z.shape == v.shape
    for s in range(2):                                   # same rows, other order, per series
        assert sorted(map(tuple, z[s])) == sorted(map(tuple, v[s])) and not np.array_equal(z[s], v[s])
    assert np.array_equal(tk.null_stream(v, seed=0), z)
    # a structured stream (a regime change) is far above its null; the null itself falls with task length
    cs = tk.case_studies(3000)["changepoint"]
    near = tk.bps(cs.stream, cs.near, cs.delta, 30, seed=0)
    assert near > 3 * tk.bps(tk.null_stream(cs.stream, seed=0), cs.near, cs.delta, 30, seed=0)
    iid = np.random.default_rng(14).normal(size=(6000, 2))
    nulls = [tk.bps(iid, tk.fixed_windows(6000, w), 100, 30, seed=0) for w in (300, 1200)]
    assert nulls[0] > nulls[1] > 0
    with pytest.raises(ValueError, match="values"):
        tk.null_stream(np.zeros((1, 2, 3, 4)))
