"""clkit.stats for issue 38: rows that never contradict their decision, controls outside the findings'
family, degenerate differences, per-row gates, primary and exploratory rows, power and planning, and
verdicts derived again from their record."""

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats as st

from clkit import stats
from clkit.plan import plan, verdict_rows


def _family(seed=0, m=8, n=4, shift=0.6):
    rng = np.random.default_rng(seed)
    rows = [stats.paired(rng.normal(shift * (j % 3 == 0), 1.0, n), np.zeros(n), comparison=f"c{j}")
            for j in range(m)]
    return stats.holm(rows, name="fam")


@pytest.mark.parametrize("seed", range(40))
def test_intervals_are_simultaneous_at_one_level_per_family(seed):
    """Every row of a family of m has its interval at 1 - alpha/m (issue 53: before, alpha * p_raw / p_adj,
    a level the data chose). An interval excluding 0 is a finding (raw p < alpha/m); a finding's interval
    may touch 0 only when Holm rejected it at a later step."""
    rows = _family(seed, n=4 + seed % 4)
    m = rows[0].family
    for v in rows:
        assert v.ci_level == pytest.approx(1 - 0.05 / m)
        excludes = v.ci_low > 0 or v.ci_high < 0
        assert excludes == (v.p_raw < 0.05 / m), (v.comparison, v.ci_low, v.ci_high, v.p_raw)
        if excludes:
            assert v.significant
        if v.significant and not excludes:
            assert v.p_raw >= 0.05 / m


def test_detectable_effect_is_at_alpha_over_m():
    """The detectable effect is taken at alpha/m for every row, not at the row's Holm step: Holm rejects
    any row with raw p < alpha/m whatever the others do, so its stated power holds (issue 53)."""
    rows = _family(1, m=6)
    for v in rows:
        assert v.mde == pytest.approx(stats.min_detectable_effect(v.n, v.sd, 0.05 / 6))


def test_controls_stay_outside_the_findings_family_and_are_judged_among_controls():
    n = 5
    rows = [stats.paired([0.3, 0.2, 0.25, 0.35, 0.3], [0.0] * n, comparison="a"),
            stats.paired([0.1, -0.1, 0.2, 0.0, 0.1], [0.0] * n, comparison="b"),
            stats.paired([0.02, 0.05, -0.01, 0.03, 0.04], [0.0] * n, comparison="null", role="null control",
                         expect="no difference")]
    adj = stats.holm(rows, name="f")
    assert [v.family for v in adj] == [2, 2, 1]
    assert adj[2].p == adj[2].p_raw == rows[2].p and adj[2].guards == "f"     # untouched, marked as guarding f
    judged = stats.judge_controls(adj + [replace(rows[2], comparison="null 2")])
    assert [v.family for v in judged] == [2, 2, 2, 2] and judged[2].family_name == stats.CONTROLS
    assert judged[2].p == pytest.approx(min(1.0, 2 * rows[2].p_raw))


def test_a_null_control_fails_when_the_rule_treats_items_as_independent_pairs():
    """A rule that pools seeds x items as if every item were a pair finds the 'difference' between two
    seed offsets of one learner (the items share each seed's offset); the rule over seeds does not."""
    rng = np.random.default_rng(3)
    seeds, items = 4, 50
    offsets = rng.normal(0, 1, size=(2, seeds, 1))                   # per-seed shifts of each arm
    a = offsets[0] + rng.normal(0, 0.1, size=(seeds, items))
    b = offsets[1] + rng.normal(0, 0.1, size=(seeds, items))
    wrong = stats.paired(a.ravel(), b.ravel(), comparison="pooled", role="null control", expect="no difference")
    right = stats.paired(a.mean(1), b.mean(1), comparison="by seed", role="null control", expect="no difference")
    assert wrong.control_ok is False and right.control_ok is True


def test_zero_spread_is_judged_against_the_resolution():
    same = stats.paired([0.5, 0.6, 0.7, 0.8], [0.5, 0.6, 0.7, 0.8])
    assert same.p == 1.0 and same.decision == "no difference"
    four = stats.paired([0.51, 0.61, 0.71, 0.81], [0.50, 0.60, 0.70, 0.80], resolution=0.01)
    # one resolution step in every pair: t = sqrt(4) = 2 at df 3
    assert four.p == pytest.approx(2 * st.t.sf(2.0, 3)) and four.decision == "no difference"
    assert four.mde == pytest.approx(stats.min_detectable_effect(4, 0.01))
    assert "%" in stats.verdict_table([four]).iloc[0][stats.CI_COLUMN]
    assert stats.sign_flip_p([1.0, 2.0, -1.0]) == pytest.approx(6 / 8)


def test_the_gate_is_per_row_and_exploratory_rows_are_never_findings():
    big = stats.paired([0.3, 0.32, 0.31, 0.29, 0.3], [0.0] * 5, comparison="enough", higher="A")
    few = stats.paired([0.3, 0.32, 0.31], [0.0] * 3, comparison="few", higher="A")
    side = stats.paired([0.3, 0.32, 0.31, 0.29, 0.3], [0.0] * 5, comparison="side", higher="A", scope="exploratory")
    text = stats.closing_text([big, few, side], small_n=4)
    assert "**Findings** (1 of 1): enough" in text
    assert "**Too few pairs** (fewer than 4; shown, not findings): few" in text
    assert "**Exploratory** (shown beside the claims, not findings): side" in text
    assert stats.verdict_table([side]).iloc[0]["role"] == "exploratory"
    with pytest.raises(ValueError, match="scope must be one of"):
        stats.paired([1, 2], [0, 0], scope="secondary")


def test_power_and_pairs_needed_agree():
    for m in (1, 3, 13):
        n = stats.pairs_needed(2.0, 1.0, family=m)
        assert stats.power(n, 2.0, 0.05 / m) >= 0.8 > stats.power(n - 1, 2.0, 0.05 / m)
    assert stats.pairs_needed(0.0, 1.0) is None and stats.pairs_needed(1.0, 0.0) == 2
    # the promise holds at the resolution: pairs_needed(c, r) pairs decide a constant c, as the rule does
    n = stats.pairs_needed(0.01, 0.005, family=3)
    assert stats.paired([0.01] * n, resolution=0.005).p < 0.05 / 3
    v = stats.paired([0.02, -0.01, 0.03, 0.00], [0.0] * 4, comparison="small")
    assert v.decision == "no difference" and v.pairs_for_observed > 4
    assert f"about {v.pairs_for_observed} pairs would detect" in v.wording
    text = stats.family_power_text(_family(2, m=3, n=4))
    assert text.startswith("**What the run could detect**: fam (3 comparisons, 4 pairs)") and "6 pairs" in text


def test_every_verdict_derives_again_from_its_record():
    rows = _family(4, m=5) + [stats.paired([0.1, 0.0, 0.05, 0.02], [0.0] * 4, comparison="alone",
                                           role="null control", expect="no difference")]
    again = stats.rederive([v.to_dict() for v in rows])
    for v, w in zip(rows, again):
        assert (w.comparison, w.decision, w.family, w.family_name) == (v.comparison, v.decision, v.family, v.family_name)
        assert w.p == pytest.approx(v.p) and w.ci_low == pytest.approx(v.ci_low)


def test_plan_reads_a_results_record(tmp_path):
    import json

    rows = [v.to_dict() for v in _family(5, m=3, n=5)]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"results": {"verdicts": rows, "other": {"nested": rows[:1]}}}))
    assert len(verdict_rows(path)) == 4
    t = plan(path, effect_sds=2.0, effect=0.5)
    assert list(t.columns) == ["family", "pairs now", "sd of differences", "observed effect",
                               "detectable now (α/family)", "pairs for 2 spreads", "pairs for effect 0.5",
                               "pairs for the observed"]
    assert (t["pairs for 2 spreads"] == stats.pairs_needed(2.0, 1.0, family=3)).all()
    # issue 53: clkit plan states the same figures as the verdict rows (both at alpha / m)
    t = t[~t.index.duplicated()]
    for v in _family(5, m=3, n=5):
        assert t.loc[v.comparison, "detectable now (α/family)"] == pytest.approx(v.mde)
        need = t.loc[v.comparison, "pairs for the observed"]
        assert (need == v.pairs_for_observed) or (v.pairs_for_observed is None and not np.isfinite(need))
    with pytest.raises(ValueError, match="no such file"):
        plan(tmp_path / "missing.json")


def test_clkit_plan_prints_the_table(tmp_path, capsys):
    import json

    from clkit.cli import main

    path = tmp_path / "results.json"
    path.write_text(json.dumps({"results": {"verdicts": [v.to_dict() for v in _family(6, m=2)]}}))
    assert main(["plan", str(path), "--effect-sds", "1.5"]) == 0
    out = capsys.readouterr().out
    assert "pairs for 1.5 spreads" in out and "c0" in out and "80 % power" in out
    assert "NaN" not in out and "caution" not in out          # 6 pairs: no caution
    assert main(["plan", str(tmp_path / "none.json")]) == 2   # bad input: exit 2, as every command
    # issue 55: the run folder is accepted (it wanted the file), NaN is blank as the legend says, and a
    # 2-pair pilot gets a caution
    assert main(["plan", str(tmp_path)]) == 0
    rows = [v.to_dict() for v in _family(0, m=2, n=2)]
    rows[0]["b"] = list(rows[0]["a"])                          # no effect observed: NaN pairs -> blank
    path.write_text(json.dumps({"results": {"verdicts": rows}}))
    assert main(["plan", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "NaN" not in out and "nan" not in out
    assert "caution: 2 row(s) rest on a pilot of fewer than 4 pairs (2)" in out
    assert main(["plan", str(tmp_path / "empty")]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["plan", str(tmp_path / "empty")]) == 2
    assert "is a folder without results.json" in capsys.readouterr().err


def test_a_failed_exploratory_control_keeps_the_findings_but_not_its_family():
    main = stats.paired([0.3, 0.32, 0.31, 0.29, 0.3], [0.0] * 5, comparison="claim", higher="A")
    side = stats.paired([0.3, 0.32, 0.31, 0.29, 0.3], [0.0] * 5, comparison="side", higher="A", scope="exploratory")
    bad = dict(role="null control", expect="no difference")
    side_control = stats.paired([0.2, 0.21, 0.19, 0.2, 0.22], [0.0] * 5, comparison="side null", scope="exploratory",
                                **bad)
    text = stats.closing_text([main, side, side_control])
    assert "**Findings** (1 of 1): claim" in text and "Only controls of exploratory comparisons failed" in text
    assert "**Exploratory**" not in text
    main_control = stats.paired([0.2, 0.21, 0.19, 0.2, 0.22], [0.0] * 5, comparison="claim null", **bad)
    text = stats.closing_text([main, main_control])
    assert "**Findings**" not in text and "cannot be read" in text
