"""Notebook 04's verdicts: the clkit.stats rule over strategies, its control rows, the closing text."""

import numpy as np
import pytest

import clkit.curriculum as cur
from clkit import stats
from clkit.curriculum import report
from clkit.curriculum.verdicts import WEIGHTING, bound_verdicts, family_of, order_verdicts

TASKS = ["easy", "mid", "hard"]


def _no_forgetting(acc, order):
    T = len(order)
    return np.array([[acc[order[j]] if i >= j else 0.1 for j in range(T)] for i in range(T)])


def _study(n=6, gain=0.0, noise=0.01, seed=0, mste_acc=None):
    """Hand-built runs: single-task accuracies per seed and R of three learners.

    ``mste`` never forgets (its R is the weighting reference's, from ``mste_acc``); ``better_m2i``
    keeps a learner's accuracies but ends ``gain`` higher on every task under M2I; ``same`` ends alike.
    """
    rng = np.random.default_rng(seed)
    acc = {s: {"easy": 0.95 + rng.normal(0, noise), "mid": 0.75 + rng.normal(0, noise),
               "hard": 0.55 + rng.normal(0, noise)} for s in range(n)}
    c = cur.Curriculum(acc, cur.difficulty_table({k: [acc[s][k] for s in acc] for k in TASKS}), TASKS, [])
    R = {}
    for s in acc:
        a = mste_acc[s] if mste_acc else acc[s]
        R[s] = {}
        for o, order in c.orders.items():
            base = _no_forgetting(a, order)
            bump = gain + rng.normal(0, noise) if o == "M2I" else 0.0
            same = _no_forgetting({k: acc[s][k] - 0.1 + rng.normal(0, noise) for k in TASKS}, order)
            R[s][o] = {"mste": base, "better_m2i": np.clip(base - 0.2 + bump, 0, 1), "same": same}
    per_seed = cur.analysis.metrics_per_seed(R, c, ["mste", "better_m2i", "same"], "task")
    return c, per_seed


def test_controls_and_families_follow_the_rule():
    c, per_seed = _study(gain=0.08)
    vs = order_verdicts(per_seed, c, ["better_m2i", "same", "mste"])
    by = {(family_of(v), v.comparison.split(":")[0]): v for v in vs}
    # the order verdict: MSTE and the weighting reference are null controls, exactly zero, never findings
    for who in ("mste", WEIGHTING):
        v = by[("order", who)]
        assert v.role == "null control" and v.effect == 0.0 and v.decision == stats.NO_DIFFERENCE
        assert v.family == 1                                  # judged alone, unadjusted
    assert by[("order", "better_m2i")].decision == "M2I higher" and by[("order", "better_m2i")].family == 2
    # ACC: weighting alone favours M2I; both oracles must (and do) come out so
    for who in ("mste", WEIGHTING):
        assert by[("ACC", who)].role == "oracle control" and by[("ACC", who)].decision == "M2I higher"
    assert by[("ACC", "mste")].effect == pytest.approx(by[("ACC", WEIGHTING)].effect)   # same accuracies here
    # excess: MSTE is left out (it would measure its experts, not the order)
    assert ("excess", "mste") not in by and ("excess", "better_m2i") in by
    assert stats.controls_hold(vs)[0]
    # the paired t with n - 1 degrees of freedom, Holm over the findings (and oracles) of a family
    d = np.subtract(cur.analysis.seed_values(per_seed, "M2I", "better_m2i", "final_acc"),
                    cur.analysis.seed_values(per_seed, "I2M", "better_m2i", "final_acc"))
    raw = stats.paired(d).p_raw
    assert by[("order", "better_m2i")].p_raw == pytest.approx(raw)
    assert by[("order", "better_m2i")].p >= raw and "df = 5" in by[("order", "better_m2i")].rule


def test_a_failing_control_stops_the_findings():
    """An MSTE whose accuracies change with the order (no pairing) fails its null control: no findings listed."""
    rng = np.random.default_rng(5)
    c, per_seed = _study(gain=0.08)
    rows = per_seed.copy()
    m = (rows.strategy == "mste") & (rows.order == "M2I")
    rows.loc[m, "final_acc"] += 0.05 + rng.normal(0, 0.002, m.sum())
    vs = order_verdicts(rows, c, ["better_m2i", "same", "mste"])
    ok, failed = stats.controls_hold(vs)
    assert not ok and [v.comparison.split(":")[0] for v in failed] == ["mste"]
    text, facts = report.summary(c=c, metrics=cur.analysis.metrics_summary(rows, ["better_m2i", "same", "mste"])[1],
                                 verdicts=vs, bounds={}, strategies=["better_m2i", "same", "mste"], scenario="task",
                                 backbone="mlp", image_size=8, per_class_train=10, epochs=1)
    assert "Controls fail" in text and "**Findings**" not in text and "Order verdict" not in text
    assert facts["controls_hold"] is False and facts["strategies_better_under_m2i"] == []


def test_small_runs_draw_no_conclusion_and_report_their_power():
    c, per_seed = _study(n=2, gain=0.08)
    vs = order_verdicts(per_seed, c, ["better_m2i", "same", "mste"])
    text, facts = report.summary(c=c, metrics=cur.analysis.metrics_summary(per_seed, ["better_m2i", "same", "mste"])[1],
                                 verdicts=vs, bounds={}, strategies=["better_m2i", "same", "mste"], scenario="task",
                                 backbone="mlp", image_size=8, per_class_train=10, epochs=1)
    assert "Too few pairs to conclude" in text and not facts["conclusive"]
    assert not any(v.significant for v in vs if v.role == "null control")
    assert facts["detectable"]["d_z_alone"] == pytest.approx(stats.min_detectable_effect(2, 1.0))


def test_conclusive_text_names_the_findings_and_the_bounds():
    c, per_seed = _study(gain=0.08)
    strategies = ["better_m2i", "same", "mste"]
    vs = order_verdicts(per_seed, c, strategies)
    bounds = {"mste": bound_verdicts(per_seed, "mste", strategies, c.orders)}
    text, facts = report.summary(c=c, metrics=cur.analysis.metrics_summary(per_seed, strategies)[1], verdicts=vs,
                                 bounds=bounds, strategies=strategies, scenario="task", backbone="mlp", image_size=8,
                                 per_class_train=10, epochs=1)
    assert facts["conclusive"] and facts["strategies_better_under_m2i"] == ["better_m2i"]
    assert "MSTE is a control, not a finding" in text and "better_m2i" in text.split("Order verdict")[1]
    assert facts["above_mste"] == {"M2I": [], "I2M": []}
    assert all(v.decision == "below mste" for v in bounds["mste"]["I2M"])
    assert "backbone `mlp` on 8x8" in text
    cl, _ = report.summary(c=c, metrics=cur.analysis.metrics_summary(per_seed, strategies)[1], verdicts=vs,
                           bounds=bounds, strategies=strategies, scenario="task", backbone="small_cnn", image_size=8,
                           per_class_train=10, epochs=1, memory_format="channels_last")
    assert "backbone `small_cnn` (channels_last) on 8x8" in cl
    md = report.findings_markdown({"results": {"seeds": list(range(6)), "tasks": TASKS, "summary": text,
                                               "controls_hold": True, "verdicts": [v.to_dict() for v in vs]}})
    assert md.startswith("Default run: 6 seeds") and "| mste | null control | +0.000 |" in md


def test_bwt_code_identity_on_random_matrices():
    rng = np.random.default_rng(1)
    for T in (2, 3, 6):
        R = rng.random((T, T))
        b = report.bwt_identity(R)
        assert b["BWT_code"] == pytest.approx(b["identity"], abs=1e-12)
        assert b["identity"] == pytest.approx(2 / T * b["final_row_BWT"], abs=1e-12)
        assert b["factor"] == pytest.approx(2 / (T * (T - 1)))


def test_effects_are_flat_per_family():
    c, per_seed = _study(gain=0.08)
    e = cur.verdicts.effects(order_verdicts(per_seed, c, ["better_m2i", "same", "mste"]))
    assert set(e) == {"m2i_minus_i2m_final", "m2i_minus_i2m_acc", "m2i_minus_i2m_excess"}
    assert e["m2i_minus_i2m_final"]["mste"] == 0.0 and WEIGHTING in e["m2i_minus_i2m_acc"]


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
    """paper.yaml runs one seed: no test, no power, and the text says it (no 'nan')."""
    c, per_seed = _study(n=1, gain=0.08)
    strategies = ["better_m2i", "same", "mste"]
    vs = order_verdicts(per_seed, c, strategies)
    text, facts = report.summary(c=c, metrics=cur.analysis.metrics_summary(per_seed, strategies)[1], verdicts=vs,
                                 bounds={"mste": bound_verdicts(per_seed, "mste", strategies, c.orders)},
                                 strategies=strategies, scenario="task", backbone="mlp", image_size=64,
                                 per_class_train=500, epochs=1)
    assert "One seed: no paired test" in text and not facts["conclusive"]
    assert "± nan" not in text and "nan standard" not in text and "seed spread, so whether" in text
    assert "Small scale" not in text            # the paper's scale
    assert not any(v.significant for v in vs)
