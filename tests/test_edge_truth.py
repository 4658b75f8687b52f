"""The sampled ground truth of notebook 02 (clkit.edge.truth): error bars that hold, values that match."""

import numpy as np
import pytest

from clkit.edge import enumerate_sequences, sequence_scores
from clkit.edge.compare import compare_sources
from clkit.edge.learners import LearnerConfig
from clkit.edge.params import check_params
from clkit.edge.report import edge_verdicts, evaluate_protocols, ground_truth, structure_report
from clkit.edge.structure import tie_percentiles
from clkit.edge.structure import tie_members
from clkit.edge.truth import GroundTruth, bootstrap, percentile_interval, percentile_se


def _planted(L, seed=0):
    """A synthetic accuracy table over 6 classes / 3 tasks with an order effect."""
    seqs = enumerate_sequences(6, 3)
    rng = np.random.default_rng(seed)
    acc = 60 + 3 * seqs[:, 0].sum(axis=1) - 2 * seqs[:, 2].sum(axis=1) + rng.normal(0, 1.5, len(seqs))
    return seqs, acc


def _sim(n=6, seed=1):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 1, (n, n))
    s = (a + a.T) / 2
    np.fill_diagonal(s, 1.0)
    return s


def test_percentile_se_formula_and_finite_population():
    # hand-computed: p = 20, n = 25 -> sqrt(20 * 80 / 25) = 8; FPC with N = 49: sqrt(24 / 48)
    assert percentile_se(20.0, 25) == pytest.approx(8.0)
    assert percentile_se(20.0, 25, population_size=49) == pytest.approx(8.0 * np.sqrt(0.5))
    assert percentile_se(37.0, 90, population_size=90) == 0.0


def test_sampled_percentile_within_its_reported_error_of_the_exact_one():
    """On an enumerable case (90 sequences) the sampled tie-averaged percentile of EDGE's
    hard sequence lies within 1.96 reported standard errors of the exact one about 95 % of
    the time, and always within 4."""
    seqs, acc = _planted(90)
    S = sequence_scores(_sim(), seqs)
    h = int(np.argmin(S))
    exact = tie_percentiles(acc, S, h)
    assert exact["pct_se"] == 0.0
    inside, worst = 0, 0.0
    trials = 300
    for seed in range(trials):
        pop = np.sort(np.random.default_rng(seed).choice(90, size=30, replace=False))
        est = tie_percentiles(acc, S, h, population=pop)
        z = abs(est["pct"] - exact["pct"]) / est["pct_se"]
        inside += z <= 1.96
        worst = max(worst, z)
    assert 0.88 <= inside / trials <= 1.0
    assert worst < 4.0


def test_wilson_interval_stays_open_at_the_boundary_and_covers_the_exact_percentile():
    """Issue 38: a percentile of 0 in the sample read '0.0 ± 0.0' (its binomial SE is 0); the Wilson
    interval is not of width 0 there, closes on the whole population and covers the exact percentile."""
    low, high = percentile_interval(0.0, 256, 2520)
    assert low == 0.0 and 1.0 < high < 2.0 and percentile_se(0.0, 256, 2520) == 0.0
    assert percentile_interval(100.0, 40, 90)[0] < 100.0
    assert percentile_interval(37.5, 90, 90) == (37.5, 37.5)
    seqs, acc = _planted(90)
    S = sequence_scores(_sim(), seqs)
    h = int(np.argmin(S))
    exact = tie_percentiles(acc, S, h)["pct"]
    covered = [(lambda t: t["pct_low"] <= exact <= t["pct_high"])(
        tie_percentiles(acc, S, h, population=np.sort(np.random.default_rng(seed).choice(90, 30, replace=False))))
        for seed in range(300)]
    assert np.mean(covered) >= 0.9


def test_tie_members_share_one_percentile_range_under_a_sample():
    seqs, acc = _planted(90)
    S = sequence_scores(_sim(), seqs)
    pop = np.arange(0, 90, 2)
    h = int(np.argmin(S))
    members = tie_members(S, h)
    assert len(members) == 6                         # 6 classes / 3 tasks: 6-way ties
    outs = [tie_percentiles(acc, S, int(m), population=pop) for m in members]
    assert len({(o["pct"], o["pct_min"], o["pct_max"]) for o in outs}) == 1


def test_bootstrap_se_of_the_mean_matches_the_textbook_value():
    v = np.random.default_rng(0).normal(0, 2.0, 400)
    se = float(bootstrap(np.mean, v, num_boot=1000, seed=1)["se"])
    assert se == pytest.approx(v.std(ddof=1) / np.sqrt(len(v)), rel=0.15)


def _table_truth(seqs, acc, mode, samples, seed=0):
    calls = []

    def train(s):
        calls.append(len(s))
        return {"planted": acc[_positions(seqs, s)]}

    return GroundTruth(train, seqs, mode=mode, samples=samples, seed=seed), calls


def _positions(seqs, s):
    from clkit.edge.experiment import sequence_index

    return sequence_index(seqs, s)


def test_exact_ground_truth_gives_the_dict_results():
    seqs, acc = _planted(90)
    S = sequence_scores(_sim(), seqs)
    gt, _ = _table_truth(seqs, acc, "exact", 90)
    d = {"planted": acc}
    hard, easy = seqs[int(np.argmin(S))], seqs[int(np.argmax(S))]
    a = evaluate_protocols(d, seqs, {"RS": seqs[[3, 40, 77]]})
    b = evaluate_protocols(gt, seqs, {"RS": seqs[[3, 40, 77]]})
    assert a["table"] == b["table"]
    va = edge_verdicts(d, seqs, hard, easy, num_draws=10, scores=S)
    vb = edge_verdicts(gt, seqs, hard, easy, num_draws=10, scores=S)
    assert [v.to_dict() for v in va["verdicts"]] == [v.to_dict() for v in vb["verdicts"]]
    sa = structure_report(d, S, seqs, hard, easy)
    sb = structure_report(gt, S, seqs, hard, easy)
    assert sa["log"] == sb["log"]
    ra = compare_sources({"x": _sim()}, d, seqs, 3, num_draws=5)
    rb = compare_sources({"x": _sim()}, gt, seqs, 3, num_draws=5)
    assert ra == rb


def test_sampled_truth_trains_only_what_is_needed_and_reports_errors():
    seqs, acc = _planted(90)
    S = sequence_scores(_sim(), seqs)
    gt, calls = _table_truth(seqs, acc, "sample", 30)
    assert len(gt.population) == 30 and int(gt.evaluated.sum()) == 30
    hard, easy = seqs[int(np.argmin(S))], seqs[int(np.argmax(S))]
    ev = evaluate_protocols(gt, seqs, {"EDGE": np.stack([hard, seqs[5], easy])}, num_boot=50)
    row = ev["table"][("planted", "EDGE")]
    assert row["jsd_se"] > 0 and row["wasserstein_se"] > 0
    # the truth row describes the sample, not the looked-up extremes
    assert ev["table"][("planted", "truth")]["mean"] == pytest.approx(acc[gt.population].mean())
    st = structure_report(gt, S, seqs, hard, easy)
    assert all(t["pct_se"] > 0 for t in st["log"]["tie_percentiles"].values())
    # hard's and easy's S-ties were trained on demand, nothing else beyond the sample
    need = np.union1d(np.union1d(tie_members(S, int(np.argmin(S))), tie_members(S, int(np.argmax(S)))), [5])
    assert set(np.flatnonzero(gt.evaluated)) == set(gt.population) | set(need)
    # the population never grows with the looked-up sequences
    assert len(gt.population) == 30
    V = edge_verdicts(gt, seqs, hard, easy, num_draws=10, scores=S)
    assert V["verdicts"]


def test_sampled_accuracy_of_a_sequence_equals_its_exact_accuracy_with_real_learners():
    """All randomness is keyed by the prefix: a sequence trained within a sample, or later on
    demand, gets exactly the accuracy it gets when every sequence is trained."""
    rng = np.random.default_rng(0)
    C, D = 6, 8
    centres = rng.normal(0, 2, (C, D))
    x = lambda n: (centres[:, None, :] + rng.normal(0, 1, (C, n, D))).astype("float32")  # noqa: E731
    data = {"x_train": x(20), "x_test": x(10)}
    data.update(f_train=data["x_train"], f_test=data["x_test"])
    seqs = enumerate_sequences(C, 3)
    cfg = LearnerConfig(hidden=8, epochs=1, batch_size=10, lr=0.05)
    exact = ground_truth(data, seqs, ["finetune", "ncm"], config=cfg, seed=3, progress=False)
    sampled = ground_truth(data, seqs, ["finetune", "ncm"], config=cfg, seed=3, mode="sample", samples=12,
                           progress=False)
    sampled.require(seqs[[0, 89]])
    done = sampled.evaluated
    assert done.sum() >= 12
    for name in ("finetune", "ncm"):
        np.testing.assert_allclose(sampled.values[name][done], exact.values[name][done], atol=1e-9)
        assert np.isnan(sampled.values[name][~done]).all()


def test_truth_parameters_are_validated():
    p = dict(dataset="fashion_mnist", classes=[0, 1, 2, 3, 4, 5], num_tasks=3, encoder="auto",
             learners=["finetune"], n_train=100, n_test=100, epochs=1, hidden=32, batch_size=32, lr=0.05,
             seeds=[0, 42, 1993], seed=0, granularities=[], num_random=1000, num_bins=10,
             classic_datasets=["cifar100"], classic_num_tasks=10)
    assert check_params(**p, truth="sample", truth_samples=40)["truth_samples"] == 40
    with pytest.raises(ValueError, match="truth must be one of"):
        check_params(**p, truth="sampled")
    with pytest.raises(ValueError, match=r"truth_samples must be an integer in \[10, 90\], got 91"):
        check_params(**p, truth="sample", truth_samples=91)
    with pytest.raises(TypeError, match="truth_samples"):
        check_params(**p, truth_samples="many")
    with pytest.raises(ValueError, match="truth_samples"):
        GroundTruth(lambda s: {"a": np.zeros(len(s))}, enumerate_sequences(6, 3), mode="sample", samples=5)
