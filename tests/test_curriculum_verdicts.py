"""Notebook 04's verdicts: the primary family, the exploratory families, controls that can fail,
pipeline checks, rows near their level and the closing text."""

import numpy as np
import pytest

import clkit.curriculum as cur
from clkit import stats
from clkit.curriculum import report
from clkit.curriculum.controls import NullControl, pipeline_checks
from clkit.curriculum.verdicts import (FAMILY_NAMES, WEIGHTING, bound_verdicts, family_of, is_near,
                                       order_verdicts)

TASKS = ["easy", "mid", "hard"]
STRATEGIES = ["better_m2i", "same", "mste"]
PRIMARY = ("better_m2i",)


def _no_forgetting(acc, order):
    T = len(order)
    return np.array([[acc[order[j]] if i >= j else 0.1 for j in range(T)] for i in range(T)])


def _study(n=6, gain=0.0, noise=0.01, seed=0):
    """Hand-built runs on ``n`` seeds and the null control's ``n`` offset seeds.

    ``mste`` never forgets (its R is the weighting reference's); ``better_m2i`` keeps a learner's
    accuracies but ends ``gain`` higher on every task under M2I; ``same`` ends alike. The control
    runs ``better_m2i`` under M2I on the offset seeds.
    """
    rng = np.random.default_rng(seed)
    acc = {s: {"easy": 0.95 + rng.normal(0, noise), "mid": 0.75 + rng.normal(0, noise),
               "hard": 0.55 + rng.normal(0, noise)} for s in range(2 * n)}
    main = list(range(n))
    c = cur.Curriculum({s: acc[s] for s in main},
                       cur.difficulty_table({k: [acc[s][k] for s in main] for k in TASKS}), TASKS, [])
    R = {}
    for s in acc:
        R[s] = {}
        for o, order in c.orders.items():
            base = _no_forgetting(acc[s], order)
            bump = gain + rng.normal(0, noise) if o == "M2I" else 0.0
            same = _no_forgetting({k: acc[s][k] - 0.1 + rng.normal(0, noise) for k in TASKS}, order)
            R[s][o] = {"mste": base, "better_m2i": np.clip(base - 0.2 + bump, 0, 1), "same": same}
    control = NullControl.plan(STRATEGIES, main, PRIMARY)
    R_main = {s: R[s] for s in main}
    R_ctrl = {s: {"M2I": {"better_m2i": R[s]["M2I"]["better_m2i"]}} for s in control.offset_seeds}
    per_seed = cur.analysis.metrics_per_seed(R_main, c, STRATEGIES, "task")
    ctrl = cur.analysis.metrics_per_seed(R_ctrl, c, ["better_m2i"], "task", accuracy=acc)
    return c, per_seed, control, ctrl, R_main


def _verdicts(c, per_seed, control, ctrl):
    return order_verdicts(per_seed, c, STRATEGIES, primary=PRIMARY, control=control, control_per_seed=ctrl)


def _summary(c, per_seed, vs, **kw):
    return report.summary(c=c, metrics=cur.analysis.metrics_summary(per_seed, STRATEGIES)[1], verdicts=vs,
                          bounds=kw.pop("bounds", {}), strategies=STRATEGIES, scenario="task", backbone="mlp",
                          image_size=8, per_class_train=10, epochs=1, primary=PRIMARY, **kw)


def test_one_primary_family_exploratory_families_and_controls_judged_alone():
    c, per_seed, control, ctrl, R = _study(gain=0.08)
    vs = _verdicts(c, per_seed, control, ctrl)
    by = {v.comparison: v for v in vs}
    prim = [v for v in vs if v.role == "finding" and v.scope == "primary"]
    assert [v.comparison for v in prim] == ["better_m2i: M2I − I2M (final-row mean)"]
    assert prim[0].family_name == FAMILY_NAMES[("order", "primary")] and prim[0].decision == "M2I higher"
    # every other finding row is exploratory, in its own named family
    explo = {v.family_name for v in vs if v.role == "finding" and v.scope == "exploratory"}
    assert explo == {FAMILY_NAMES[k] for k in [("order", "exploratory"), ("ACC", "exploratory"),
                                               ("excess", "exploratory")]}
    assert by["same: M2I − I2M (final-row mean)"].scope == "exploratory"
    assert by["better_m2i: M2I − I2M (ACC)"].family == 2       # better_m2i and same; MSTE is an oracle
    # MSTE and the weighting reference: no order verdict (pipeline checks), oracles of ACC
    assert not any(v.comparison.startswith(("mste", WEIGHTING)) and family_of(v) != "ACC" for v in vs)
    for who in ("mste", WEIGHTING):
        v = by[f"{who}: M2I − I2M (ACC)"]
        assert v.role == "oracle control" and v.decision == "M2I higher" and v.family == 1
    # one stochastic null control per metric: the control strategy against itself, seeds offset
    nulls = [v for v in vs if v.role == "null control"]
    assert [family_of(v) for v in nulls] == ["order", "ACC", "excess"]
    assert nulls[0].comparison == "better_m2i against itself: M2I, seeds 6–11 − seeds 0–5 (final-row mean)"
    assert all(v.family == 1 and v.family_name == "" and v.ci_level == 0.95 for v in nulls)
    assert stats.controls_hold(vs)[0]
    assert list(nulls[0].a) == cur.analysis.seed_values(ctrl, "M2I", "better_m2i", "final_acc")
    assert list(nulls[0].b) == cur.analysis.seed_values(per_seed, "M2I", "better_m2i", "final_acc")
    # every row re-derives from its recorded values; no row contradicts its interval
    again = stats.rederive([v.to_dict() for v in vs])
    for v, w in zip(vs, again):
        assert (w.decision, w.family, w.family_name) == (v.decision, v.family, v.family_name)
        assert w.p == pytest.approx(v.p) and w.ci_low == pytest.approx(v.ci_low)
        if np.isfinite(v.ci_low):
            assert (v.ci_low > 0 or v.ci_high < 0) == v.significant


@pytest.mark.parametrize("broken", ["shifted arm", "another learner"])
def test_the_null_control_trips_when_the_pairing_or_an_arm_is_broken(broken):
    """The control can fail: an arm shifted by 0.05 (a pipeline that favours later seeds), or the
    offset arm paired with another learner's runs; then the closing text lists no findings."""
    c, per_seed, control, ctrl, R = _study(gain=0.08)
    bad = ctrl.copy()
    if broken == "shifted arm":
        bad["final_acc"] += 0.05 + np.random.default_rng(1).normal(0, 0.005, len(bad))
    else:
        same = per_seed[(per_seed.strategy == "same") & (per_seed.order == "M2I")]
        bad["final_acc"] = same["final_acc"].to_numpy()
    vs = _verdicts(c, per_seed, control, bad)
    ok, failed = stats.controls_hold(vs)
    assert not ok and [family_of(v) for v in failed] == ["order"] and failed[0].role == "null control"
    text, facts = _summary(c, per_seed, vs, checks=pipeline_checks(R, c, STRATEGIES), control=control)
    assert "Controls fail" in text and "**Findings**" not in text and facts["strategies_better_under_m2i"] == []
    assert "rerun with another `seed`" in text and "Exploratory: the paper's comparison" not in text


def test_an_exploratory_control_guards_its_own_family_only():
    """The ACC family's null control failing stops the reading of that family, not the findings."""
    c, per_seed, control, ctrl, R = _study(gain=0.08)
    bad = ctrl.copy()
    bad["ACC"] += 0.05 + np.random.default_rng(2).normal(0, 0.005, len(bad))
    vs = _verdicts(c, per_seed, control, bad)
    assert [family_of(v) for v in stats.controls_hold(vs)[1]] == ["ACC", "excess"]   # excess is ACC − ACC_ref
    text, facts = _summary(c, per_seed, vs, checks=pipeline_checks(R, c, STRATEGIES), control=control)
    assert "**Findings** (1 of 1): better_m2i" in text and facts["conclusive"]
    assert facts["primary_controls_hold"] and not facts["controls_hold"]
    assert "that family is not read below" in text
    assert "**Exploratory: the paper's comparison (ACC)** is not read: its null control failed." in text
    assert "**Exploratory: the paper's comparison (ACC).** At" not in text


def test_a_failed_pipeline_check_stops_the_findings():
    c, per_seed, control, ctrl, R = _study(gain=0.08)
    vs = _verdicts(c, per_seed, control, ctrl)
    checks = pipeline_checks(R, c, STRATEGIES)
    assert [k.holds for k in checks] == [True, True, True]
    text, facts = _summary(c, per_seed, vs, checks=checks, control=control)
    assert "**Pipeline checks hold** (3 of 3" in text and "**Findings** (1 of 1): better_m2i" in text
    assert facts["conclusive"] and facts["strategies_better_under_m2i"] == ["better_m2i"]
    broken = {s: {o: dict(R[s][o]) for o in R[s]} for s in R}
    broken[2]["I2M"]["mste"] = broken[2]["I2M"]["mste"] + np.eye(3) * 0.01    # MSTE no longer paired
    checks = pipeline_checks(broken, c, STRATEGIES)
    assert [k.holds for k in checks] == [False, True, True] and "seed 2" in checks[0].detail
    text, facts = _summary(c, per_seed, vs, checks=checks, control=control)
    assert "**Pipeline checks fail** (1 of 3)" in text and "**Findings**" not in text
    assert not facts["conclusive"] and facts["pipeline_checks_hold"] is False
    assert "Measured differences (not findings): better_m2i" in text


def test_rows_near_their_level_are_said_so_from_their_numbers():
    """A primary p between α/2 and 2α is named near its level in the closing text; one far from it is not."""
    near = far = None
    for seed in range(40):
        c, per_seed, control, ctrl, R = _study(gain=0.012, noise=0.01, seed=seed)
        vs = _verdicts(c, per_seed, control, ctrl)
        p = vs[0].p
        if near is None and 0.025 <= p < 0.1 and stats.controls_hold(vs)[0]:
            near = (c, per_seed, control, vs)
        if far is None and p < 0.005 and stats.controls_hold(vs)[0]:
            far = (c, per_seed, control, vs)
        if near and far:
            break
    c, per_seed, control, vs = near
    assert is_near(vs[0])
    text, facts = _summary(c, per_seed, vs, control=control)
    para = next(p for p in text.split("\n\n") if p.startswith("**Near the level**"))
    assert "better_m2i: M2I − I2M (final-row mean) (primary: " in para and f"{stats._level(vs[0].ci_level)} % CI" in para
    assert vs[0].comparison in facts["near_level"]
    c, per_seed, control, vs = far
    text, facts = _summary(c, per_seed, vs, control=control)
    assert not is_near(vs[0]) and vs[0].comparison not in text.split("**Near the level**")[-1].split("\n\n")[0]


def test_small_runs_draw_no_conclusion_and_report_their_power():
    c, per_seed, control, ctrl, R = _study(n=2, gain=0.08)
    vs = _verdicts(c, per_seed, control, ctrl)
    text, facts = _summary(c, per_seed, vs, control=control)
    assert "Too few pairs to conclude" in text and not facts["conclusive"]
    assert not any(v.significant for v in vs if v.role == "null control")
    assert facts["detectable"]["d_z_alone"] == pytest.approx(stats.min_detectable_effect(2, 1.0))


def test_conclusive_text_names_the_primary_findings_and_labels_the_rest_exploratory():
    c, per_seed, control, ctrl, R = _study(gain=0.08)
    vs = _verdicts(c, per_seed, control, ctrl)
    bounds = {"mste": bound_verdicts(per_seed, "mste", STRATEGIES, c.orders)}
    text, facts = _summary(c, per_seed, vs, bounds=bounds, checks=pipeline_checks(R, c, STRATEGIES),
                           control=control)
    assert facts["conclusive"] and facts["strategies_better_under_m2i"] == ["better_m2i"]
    assert facts["primary"] == ["better_m2i"]
    findings = next(p for p in text.split("\n\n") if p.startswith("**Findings**"))
    assert "(ACC)" not in findings and "same:" not in findings                 # exploratory rows never findings
    assert "**Exploratory: the paper's comparison (ACC).**" in text and "**Exploratory: mste as an upper bound" in text
    assert "better_m2i against itself" in text and "Null control: better_m2i against itself under M2I" in text
    assert "MSTE is a pipeline check and an oracle" in text
    assert "What the run could detect" in text and "Holm over 1" in text
    assert facts["above_mste"] == {"M2I": [], "I2M": []}
    assert all(v.decision == "below mste" and v.scope == "exploratory" for v in bounds["mste"]["I2M"])
    assert bounds["mste"]["I2M"][0].family_name == "final-row mean against mste, I2M (exploratory)"
    cl, _ = report.summary(c=c, metrics=cur.analysis.metrics_summary(per_seed, STRATEGIES)[1], verdicts=vs,
                           bounds=bounds, strategies=STRATEGIES, scenario="task", backbone="small_cnn", image_size=8,
                           per_class_train=10, epochs=1, memory_format="channels_last", primary=PRIMARY)
    assert "backbone `small_cnn` (channels_last) on 8x8" in cl


def test_tables_figure_and_guide_show_the_level_of_each_decision():
    """No "95 % CI" beside a Holm decision: the tables, the figure and the guide's table name the level."""
    import matplotlib

    matplotlib.use("Agg")
    c, per_seed, control, ctrl, R = _study(gain=0.08)
    vs = _verdicts(c, per_seed, control, ctrl)
    tables = report.verdict_tables(vs)
    assert list(tables)[0].startswith("Primary: the order verdict")
    first = tables[list(tables)[0]]
    assert list(first.index) == ["better_m2i: M2I − I2M (final-row mean)", control.label("final-row mean")]
    acc = next(t for k, t in tables.items() if "ACC, the paper's" in k)
    levels = acc[stats.CI_COLUMN].tolist()
    # simultaneous intervals: every row of the family (here 2) at the same level 1 − α/2; controls alone at 95 %
    fam = [x for x, r in zip(levels, acc["role"]) if r == "exploratory"]
    assert len(fam) == 2 and all(x.endswith("(97.5 %)") for x in fam)
    assert all(x.endswith("(95 %)") for x, r in zip(levels, acc["role"]) if "control" in r)
    assert "near its level" in acc.columns
    md = report.findings_markdown({"results": {"seeds": list(range(6)), "tasks": TASKS, "summary": "x",
                                               "controls_hold": True, "pipeline_checks": [],
                                               "verdicts": [v.to_dict() for v in vs]}})
    assert "95 % CI |" not in md and f"| {stats.CI_COLUMN} |" in md
    assert "| better_m2i: M2I − I2M (final-row mean) | primary |" in md and "| same:" not in md
    fig = cur.plots.gaps(vs, scenario="task")
    title, labels = fig.axes[0].get_title(), fig.axes[0].get_legend_handles_labels()[1]
    assert "95 % CI" not in title and "simultaneous intervals per family" in title
    assert any(x.startswith("ACC gap (intervals ") for x in labels)
    assert any("primary finding" in x for x in labels)
    matplotlib.pyplot.close(fig)


def test_bwt_code_identity_on_random_matrices():
    rng = np.random.default_rng(1)
    for T in (2, 3, 6):
        R = rng.random((T, T))
        b = report.bwt_identity(R)
        assert b["BWT_code"] == pytest.approx(b["identity"], abs=1e-12)
        assert b["identity"] == pytest.approx(2 / T * b["final_row_BWT"], abs=1e-12)
        assert b["factor"] == pytest.approx(2 / (T * (T - 1)))


def test_effects_are_flat_per_gap_and_keep_the_null_learners():
    c, per_seed, *_ = _study(gain=0.08)
    e = cur.verdicts.effects(per_seed, c, STRATEGIES)
    assert set(e) == {"m2i_minus_i2m_final", "m2i_minus_i2m_acc", "m2i_minus_i2m_excess"}
    assert e["m2i_minus_i2m_final"]["mste"] == 0.0 and e["m2i_minus_i2m_final"][WEIGHTING] == 0.0
    assert e["m2i_minus_i2m_acc"]["mste"] == pytest.approx(e["m2i_minus_i2m_acc"][WEIGHTING])
    assert WEIGHTING not in e["m2i_minus_i2m_excess"]


def test_write_findings_replaces_only_its_block(tmp_path):
    doc = tmp_path / "guide.md"
    doc.write_text("## Intro\nkept\n<!-- BEGIN generated: findings-04_curriculum -->\nold\n<!-- END generated: findings-04_curriculum -->\n"
                   "## After\nkept too\n")
    r = {"seeds": [0, 1, 2, 3], "tasks": ["a", "b"], "summary": "**Setting.** new", "controls_hold": False,
         "verdicts": []}
    report.write_findings(doc, {"results": r})
    text = doc.read_text()
    assert "old" not in text and "**Setting.** new" in text and "controls FAIL" in text
    assert text.startswith("## Intro\nkept\n") and text.endswith("## After\nkept too\n")
    with pytest.raises(ValueError, match="no generated block"):
        report.write_findings(doc, r, name="other")


def test_one_seed_runs_say_so_instead_of_printing_nan():
    """A one-seed run: no test, no power, and the text says it (no 'nan')."""
    c, per_seed, control, ctrl, R = _study(n=1, gain=0.08)
    vs = _verdicts(c, per_seed, control, ctrl)
    text, facts = report.summary(c=c, metrics=cur.analysis.metrics_summary(per_seed, STRATEGIES)[1], verdicts=vs,
                                 bounds={"mste": bound_verdicts(per_seed, "mste", STRATEGIES, c.orders)},
                                 strategies=STRATEGIES, scenario="task", backbone="mlp", image_size=64,
                                 per_class_train=500, epochs=1, primary=PRIMARY)
    assert "One seed: no paired test" in text and not facts["conclusive"]
    assert "± nan" not in text and "nan standard" not in text and "seed spread, so whether" in text
    assert "Small scale" not in text            # the paper's scale
    assert not any(v.significant for v in vs)


def test_no_primary_strategy_run_leaves_every_row_exploratory():
    c, per_seed, control, ctrl, R = _study(gain=0.08)
    vs = order_verdicts(per_seed, c, STRATEGIES, primary=("gem",))
    assert not any(v.scope == "primary" and v.role == "finding" for v in vs)
    text, _ = report.summary(c=c, metrics=cur.analysis.metrics_summary(per_seed, STRATEGIES)[1], verdicts=vs,
                             bounds={}, strategies=STRATEGIES, scenario="task", backbone="mlp", image_size=8,
                             per_class_train=10, epochs=1, primary=("gem",))
    assert "**No primary comparison**: none of the strategies whose order verdict is the claim (gem) ran" in text
    assert "**Findings**" not in text
