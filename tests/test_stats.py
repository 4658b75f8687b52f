"""clkit.stats: the one verdict rule, checked against scipy, hand computation and simulation."""

import math

import numpy as np
import pytest
from scipy import stats as st

from clkit import stats


def test_paired_t_matches_scipy_and_hand_computation():
    a, b = [3.0, 4.0, 6.0], [2.0, 2.0, 3.0]  # d = 1, 2, 3: mean 2, sd 1
    v = stats.paired(a, b)
    ref = st.ttest_rel(a, b)
    assert v.p == pytest.approx(ref.pvalue) and v.p_raw == v.p
    t = 2.0 / (1.0 / math.sqrt(3))
    assert v.p == pytest.approx(2 * st.t.sf(t, 2))
    half = st.t.ppf(0.975, 2) / math.sqrt(3)  # 4.303 * 0.577 = 2.484
    assert (v.ci_low, v.ci_high) == pytest.approx((2 - half, 2 + half))
    assert half == pytest.approx(2.4841, abs=1e-4)
    assert v.effect == pytest.approx(2.0) and v.sd == pytest.approx(1.0) and v.n == 3
    assert v.decision == "no difference"  # p = 0.074 at df = 2
    assert v.rule == "paired t, df = 2, two-sided, α = 0.05"


def test_sign_flip_is_exact_for_small_n():
    d = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # all positive: only the identity and the full flip are as extreme
    v = stats.paired(d, test="sign_flip")
    assert v.p == pytest.approx(2 / 64)
    assert v.decision == "higher" and "exact" in v.rule
    five = stats.paired(d[:5], test="sign_flip")
    assert five.p == pytest.approx(2 / 32) and five.decision == "no difference"


def test_holm_against_hand_computation():
    vs = [stats.Verdict("x", 1.0, 0, 2, p, 5, "r", "higher", p_raw=p) for p in (0.01, 0.04, 0.03)]
    adj = stats.holm(vs)
    # sorted 0.01, 0.03, 0.04 -> 0.03, 0.06, max(0.06, 0.04) = 0.06
    assert [v.p for v in adj] == pytest.approx([0.03, 0.06, 0.06])
    assert [v.decision for v in adj] == ["higher", "no difference", "no difference"]
    assert all(v.family == 3 and v.rule == "r, Holm over 3" for v in adj)
    again = stats.holm(adj)  # re-adjusting starts from the raw p-values
    assert [v.p for v in again] == pytest.approx([0.03, 0.06, 0.06])


def test_not_testable_and_degenerate_cases():
    assert stats.paired([1.0], [0.0]).decision == stats.NOT_TESTABLE
    same = stats.paired([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert same.decision == "no difference" and same.p == 1.0
    # the same difference in every pair is judged against the metric's resolution (issue 53): with one
    # test example in 200 (r = 0.005) a constant +0.5 is far beyond it; a constant +0.005 is one step
    shift = stats.paired([1.5, 2.5, 3.5], [1.0, 2.0, 3.0], resolution=0.005)
    assert shift.decision == "higher" and shift.resolution == 0.005 and shift.sd == pytest.approx(0, abs=1e-12)
    t = 0.5 / (0.005 / np.sqrt(3))     # hand computation: t = c sqrt(n) / r, df = 2
    assert shift.p == pytest.approx(2 * st.t.sf(t, 2))
    step = stats.paired([0.51, 0.52], [0.50, 0.51], resolution=0.01)    # one step, 2 pairs: t = sqrt(2)
    assert step.decision == "no difference" and step.p == pytest.approx(2 * st.t.sf(np.sqrt(2), 1))
    holm = stats.holm([stats.paired([1.0], [0.0]), shift])
    assert holm[0].decision == stats.NOT_TESTABLE and holm[1].family == 1


@pytest.mark.parametrize("bad, match", [
    (dict(a=[1, 2], b=[1, 2, 3]), "same length"),
    (dict(a=[1, np.nan], b=[0, 0]), "finite"),
    (dict(a=[1, 2], b=[0, 0], test="wilcoxon"), "test must be one of"),
    (dict(a=[1, 2], b=[0, 0], alpha=1.5), "alpha must be"),
    (dict(a=[1, 2], b=[0, 0], role="control"), "role must be one of"),
    (dict(a=[1, 2], b=[0, 0], role="null control"), "needs expect"),
    (dict(a=[1, 2], b=[0, 0], resolution=0.0), "resolution must be a positive number"),
    (dict(a=[1, 2], b=[0, 0], scale="log"), "scale must be one of"),
    (dict(a=[1, 2], b=[1, -1], scale="log_ratio"), "needs positive values"),
    (dict(a=[1, 2], scale="log_ratio"), "needs both arms"),
])
def test_bad_input_named(bad, match):
    with pytest.raises(ValueError, match=match):
        stats.paired(**bad)


@pytest.mark.parametrize("n", [3, 4, 5, 8])
def test_false_positive_rate_under_a_true_null(n):
    rng = np.random.default_rng(n)
    data = rng.normal(0.3, 1.7, size=(2000, n, 2))  # same mean in both conditions, paired noise
    data[:, :, 1] += rng.normal(0, 0.5, size=(2000, n))
    rate = np.mean([stats.paired(x[:, 0], x[:, 1]).significant for x in data])
    assert rate <= stats.ALPHA + 0.02


def test_sign_flip_false_positive_rate():
    rng = np.random.default_rng(7)
    d = rng.standard_t(3, size=(2000, 8))  # heavy tails: where the sign-flip test is the safer rule
    rate = np.mean([stats.paired(x, test="sign_flip", n_resamples=999).significant for x in d])
    assert rate <= stats.ALPHA + 0.02


@pytest.mark.parametrize("n", [4, 5])
def test_planted_effect_of_three_sd_is_detected(n):
    """At the notebooks' default number of seeds (4 or more) a 3-sd effect is found >= 90 %."""
    rng = np.random.default_rng(100 + n)
    d = rng.normal(3.0, 1.0, size=(2000, n))
    assert np.mean([stats.paired(x).significant for x in d]) >= 0.90


def test_min_detectable_effect_has_the_stated_power():
    n, sd = 5, 0.02
    mde = stats.min_detectable_effect(n, sd)
    rng = np.random.default_rng(3)
    d = rng.normal(mde, sd, size=(4000, n))
    power = np.mean([stats.paired(x).significant for x in d])
    assert abs(power - stats.POWER) < 0.03
    assert math.isnan(stats.min_detectable_effect(1, sd))


@pytest.mark.parametrize("n, alpha", [(2, 0.05), (4, 0.05 / 12), (6, 0.05 / 12)])
def test_min_detectable_effect_at_small_n_and_holm_levels(n, alpha):
    """Where scipy's noncentral t is NaN in its far tail (small n, small alpha) the power is still 0.8."""
    mde = stats.min_detectable_effect(n, 1.0, alpha)
    rng = np.random.default_rng(11)
    x = rng.normal(mde, 1.0, size=(40000, n))
    t = x.mean(1) / (x.std(1, ddof=1) / math.sqrt(n))
    power = np.mean(2 * st.t.sf(np.abs(t), n - 1) < alpha)
    assert abs(power - stats.POWER) < 0.015
    assert stats.min_detectable_effect(n, 1.0, alpha / 2) > mde    # a stricter level needs a larger effect


def test_effect_size_interval_covers_at_its_level():
    rng = np.random.default_rng(11)
    true_dz, n = 1.0, 6
    hits = 0
    for _ in range(600):
        e = stats.effect_size(rng.normal(true_dz, 1.0, size=n))
        hits += e["ci_low"] <= true_dz <= e["ci_high"]
    assert abs(hits / 600 - 0.95) < 0.03


def test_empirical_p():
    null = np.arange(100) / 100
    assert stats.empirical_p(-1, null) == pytest.approx(1 / 101)
    assert stats.empirical_p(0.0, null, exact=True) == pytest.approx(0.01)
    assert stats.empirical_p(0.985, null, alternative="greater", exact=True) == pytest.approx(0.01)
    with pytest.raises(ValueError, match="alternative"):
        stats.empirical_p(0, null, alternative="two")


def test_closing_text_refuses_findings_when_a_control_fails():
    finding = stats.paired([0.30, 0.32, 0.31, 0.29], [0.0, 0.0, 0.0, 0.0], comparison="ER − Bare",
                           higher="ER higher", lower="Bare higher")
    bad = stats.paired([0.20, 0.22, 0.21, 0.19], [0.0, 0.0, 0.0, 0.0], comparison="Bare − Bare'",
                       role="null control", expect="no difference")
    text = stats.closing_text([finding, bad])
    assert "Controls fail" in text and "Findings" not in text and "Bare − Bare'" in text
    good = stats.paired([0.01, -0.02, 0.0, 0.01], [0.0] * 4, comparison="Bare − Bare'",
                        role="null control", expect="no difference")
    text = stats.closing_text([finding, good])
    assert "Controls hold" in text and "**Findings** (1 of 1)" in text and "ER higher" in text
    small = stats.closing_text([finding, good], small_n=5)
    assert "Too few pairs" in small and "Findings" not in small


def test_verdict_table_and_dict():
    v = stats.paired([0.82, 0.80, 0.85], [0.80, 0.81, 0.80], comparison="mste",
                     role="null control", expect="no difference")
    table = stats.verdict_table([v])
    assert table.loc["mste", "control"] == "holds" and table.loc["mste", "n"] == 3
    d = v.to_dict()
    assert d["control_ok"] is True and d["wording"].startswith("mste: no difference detected")


def test_holm_adjust_matches_statsmodels():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(0)
    for m in (1, 2, 5, 13, 40):   # statsmodels collects garbage on every call: few calls
        for _ in range(4):
            p = rng.uniform(0, 0.2, size=m) ** rng.uniform(0.5, 3)
            p[rng.integers(0, m)] = p[0]             # ties too
            assert np.allclose(stats.holm_adjust(p), multipletests(p, method="holm")[1], rtol=0, atol=1e-15)
