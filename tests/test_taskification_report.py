"""01_taskification's package side: per-learner settings, the EWC calibration grid, the verdicts."""

import numpy as np
import pytest

from clkit import stats
from clkit.notebooks import load_params
from clkit.sweep.grid import expand_grid, load_grid, resolve_grid
from clkit.taskification import report, verdicts
from clkit.taskification.params import EWC_LAMBDA, LEARNER_DEFAULTS, check_learner_settings

NB = "01_taskification"


def test_learner_settings_are_checked_and_merged_with_the_defaults():
    checked, settings = check_learner_settings({"ewc": {"ewc_lambda": 5.0}}, ["naive", "ewc"])
    assert checked == {"ewc": {"ewc_lambda": 5.0}} and settings == {"naive": {}, "ewc": {"ewc_lambda": 5.0}}
    assert check_learner_settings({}, ["ewc"])[1] == {"ewc": LEARNER_DEFAULTS["ewc"]}
    with pytest.raises(ValueError, match=r"learner_kwargs\['ewc'\]: unknown keyword 'lam'.*ewc_lambda"):
        check_learner_settings({"ewc": {"lam": 5.0}}, ["ewc"])
    with pytest.raises(ValueError, match="'si' is not a learner of this run"):
        check_learner_settings({"si": {"si_lambda": 5.0}}, ["naive", "ewc"])
    with pytest.raises(TypeError, match=r"learner_kwargs\['ewc'\]\['ewc_lambda'\] must be float"):
        check_learner_settings({"ewc": {"ewc_lambda": "big"}}, ["ewc"])
    with pytest.raises(ValueError, match="'lr'"):  # the notebook supplies lr itself
        check_learner_settings({"replay": {"lr": 0.1}}, ["replay"])


def _smoke_tasks(values):
    data, _, cl_series = report.load_data("synthetic", num_series=1, cl_series=values["cl_series"],
                                          num_weeks=values["num_weeks"], seed=values["seed"])
    names, splits, _, _ = report.make_splits(data.length, data.interval_minutes, values["window_days"][-1:],
                                             values["offset_days"], values["delta_days"])
    tasks, _ = report.cl_tasks(data.values[:cl_series], splits, values["context_steps"], data.target_index,
                               stride=values["stride"], seed=values["seed"])
    return data, tasks


def test_settings_reach_the_strategy(monkeypatch):
    """A recording stand-in for make_strategy sees each method's own settings, nothing else's, and the
    run's device and precision (run-wide, never per learner)."""
    import clkit.taskification.forecasting as fc

    seen, run_wide = [], set()
    real = fc.make_strategy
    common = ("loss", "optimizer", "lr", "batch_size", "seed", "device", "precision")

    def recording(name, model, **kw):
        seen.append((name, {k: kw[k] for k in kw if k not in common}))
        run_wide.add((str(kw["device"]), kw["precision"]))
        return real(name, model, **kw)

    monkeypatch.setattr(fc, "make_strategy", recording)
    values = load_params(NB, "smoke")
    data, tasks = _smoke_tasks(values)
    from clkit.models.transformer import TimeSeriesTransformer

    def model_fn():
        return TimeSeriesTransformer(num_features=len(data.features), context=values["context_steps"], d_model=8,
                                     num_layers=1, num_heads=2, target_index=data.target_index)

    _, settings = check_learner_settings({"ewc": {"ewc_lambda": 7.0}, "replay": {"memory_size": 33}},
                                         ["naive", "ewc", "replay"])
    report.run_cl(tasks, model_fn, ["naive", "ewc", "replay"], 1, seed=0, strategy_kwargs=settings, max_epochs=1)
    assert seen == [("naive", {}), ("ewc", {"ewc_lambda": 7.0}), ("replay", {"memory_size": 33})]
    assert run_wide == {("cpu", "fp32")}


def test_ewc_calibration_grid_runs_at_smoke_scale():
    """The shipped grid over learner_kwargs.ewc.ewc_lambda: every case's settings reach EWC and change it."""
    grid = load_grid(resolve_grid(NB, "ewc_lambda"))
    cases = expand_grid(grid)
    lambdas = [c["learner_kwargs.ewc.ewc_lambda"] for c in cases]
    assert lambdas == sorted(lambdas) and len(lambdas) >= 3 and EWC_LAMBDA in lambdas  # the default is measured
    from clkit.models.transformer import TimeSeriesTransformer

    Ms = {}
    for case in cases:
        values = load_params(NB, grid["params"], list(case.items()))
        assert values["learner_kwargs"] == {"ewc": {"ewc_lambda": case["learner_kwargs.ewc.ewc_lambda"]}}
        data, tasks = _smoke_tasks(values)

        def model_fn():
            return TimeSeriesTransformer(num_features=len(data.features), context=values["context_steps"],
                                         d_model=values["d_model"], num_layers=values["num_layers"],
                                         num_heads=values["num_heads"], target_index=data.target_index)

        _, settings = check_learner_settings(values["learner_kwargs"], values["methods"])
        cl = report.run_cl(tasks, model_fn, values["methods"], 1, seed=values["seed"], strategy_kwargs=settings,
                           max_epochs=1, patience=values["patience"], lr=values["lr"],
                           batch_size=values["batch_size"])
        Ms[case["learner_kwargs.ewc.ewc_lambda"]] = {m: cl[(m, n, 0)]["M"] for m, n, _ in cl}
    for lam, M in Ms.items():
        assert all(np.isfinite(v).all() for v in M.values())
        assert np.array_equal(M["naive"], Ms[lambdas[0]]["naive"])  # finetune does not see lambda
    # lambda reaches EWC: the strongest penalty changes EWC's errors, the weakest barely differs from finetune
    strong, weak = Ms[lambdas[-1]], Ms[lambdas[0]]
    assert np.abs(strong["ewc"] - strong["naive"]).max() > np.abs(weak["ewc"] - weak["naive"]).max()


def test_split_verdicts_primary_adjacent_splits_and_controls_alone():
    rng = np.random.default_rng(0)
    aligned = {n: m + 0.05 * rng.normal(size=6) for n, m in (("2d", 1.0), ("4d", 0.6), ("6d", 0.4))}
    null = {n: m + 0.01 * rng.normal(size=6) for n, m in (("2d", 0.1), ("4d", 0.08), ("6d", 0.07))}
    vs = verdicts.split_verdicts(aligned, null, 0.1 + 0.01 * rng.normal(size=6))
    by = {v.comparison: v for v in vs}
    assert by["BPS 2d − 4d"].decision == "2d more fragile"
    assert by["null BPS 2d: shuffle − another shuffle"].decision == "no difference"
    assert by["BPS 2d: stream − shuffled stream"].control_ok is True
    # issue 38: the paper's ranking (adjacent splits) is the primary family; the rest exploratory, apart
    primary = [v.comparison for v in vs if v.role == "finding" and v.scope == "primary"]
    assert primary == ["BPS 2d − 4d", "BPS 4d − 6d"]
    assert {v.family_name for v in vs if v.comparison in primary} == {verdicts.FAMILIES["bps"]}
    explo = [v for v in vs if v.scope == "exploratory"]
    assert {v.comparison for v in explo} == {"BPS 2d − 6d", "BPS/null 2d − 4d", "BPS/null 4d − 6d",
                                             "BPS/null 2d − 6d"}
    assert all(v.family == 4 and v.family_name == verdicts.FAMILIES["bps_other"] for v in explo)
    controls = [v for v in vs if v.role != "finding"]
    assert len(controls) == 2 and all(v.family == 1 and v.p == v.p_raw for v in controls)   # judged alone
    # with fewer pairs than the rule needs, the oracle is reported as an exploratory row, not a failed control
    small = verdicts.split_verdicts({k: v[:2] for k, v in aligned.items()}, {k: v[:2] for k, v in null.items()},
                                    [0.1, 0.11])
    assert [v.role for v in small].count("oracle control") == 0
    assert {v.scope for v in small if v.comparison == "BPS 2d: stream − shuffled stream"} == {"exploratory"}
    # on a user's stream there is no oracle
    assert "oracle control" not in [v.role for v in verdicts.split_verdicts(aligned, null, null["2d"], oracle=False)]


def test_the_bps_null_control_trips_when_series_x_perturbations_are_pooled_as_pairs():
    """The BPS rows pair series. A broken pipeline that hands the rule every (series, perturbation) profile
    distance as a pair finds a 'difference' between two shuffles of the same values: each shuffle moves a
    series' distances together."""
    rng = np.random.default_rng(4)
    tripped = {"series": 0, "pooled": 0}
    for _ in range(8):
        series, draws = 6, 30
        arms = [0.1 + rng.normal(0, 0.01, size=(series, 1)) + rng.normal(0, 0.002, size=(series, draws))
                for _ in range(2)]
        for how, (a, b) in {"series": (arms[0].mean(1), arms[1].mean(1)),
                            "pooled": (arms[0].ravel(), arms[1].ravel())}.items():
            al = {"2d": a + 1.0, "4d": a + 0.5}
            vs = verdicts.split_verdicts(al, {"2d": a, "4d": a * 0.9}, b)
            tripped[how] += not stats.controls_hold(vs)[0]
    assert tripped["pooled"] >= 5 and tripped["series"] <= 2


def test_cl_verdicts_families_and_null_controls():
    rng = np.random.default_rng(2)
    cl = {}
    for s in range(8):
        for m, shift in (("naive", 0.0), ("ewc", 0.5)):
            for n, level in (("2d", 5.0), ("4d", 3.0)):
                cl[(m, n, s)] = {"avg_mse": level + shift + 0.1 * rng.normal(), "forgetting": 0.01 * rng.normal()}
    cl = {k: v for k, v in cl.items() if k[2] < 4 or (k[0] == "naive" and k[1] == "2d")}
    base = {"2d": {"constant_mean": 50.0, "persistence_mean": 6.0}, "4d": {"constant_mean": 9.0,
                                                                            "persistence_mean": 4.0}}
    vs = verdicts.cl_verdicts(cl, base, ["naive", "ewc"], ["2d", "4d"], {"naive": "Finetune", "ewc": "EWC"}, 4)
    by = {v.comparison: v for v in vs}
    # primary: each method's average MSE on adjacent splits (the paper's "the CL metrics differ across splits")
    primary = [v for v in vs if v.role == "finding" and v.scope == "primary"]
    assert [v.comparison for v in primary] == ["Finetune avg MSE 2d − 4d", "EWC avg MSE 2d − 4d"]
    assert by["Finetune avg MSE 2d − 4d"].decision == "Finetune higher on 2d"
    assert all(v.family == 2 and v.family_name == verdicts.FAMILIES["cl"] for v in primary)
    assert by["Finetune 2d − best baseline (avg MSE)"].decision == "Finetune beats both baselines"
    assert by["Finetune 2d − best baseline (avg MSE)"].scope == "exploratory"
    controls = [v for v in vs if v.role == "null control"]
    assert [(v.comparison, v.scope, v.family) for v in controls] == [
        ("Finetune 2d: seeds − other seeds (avg MSE)", "primary", 1),
        ("Finetune 2d: seeds − other seeds (forgetting)", "exploratory", 1)]
    assert by["EWC − Finetune 2d (avg MSE)"].decision == "EWC worse"
    rel = by["EWC / Finetune − 1 (avg MSE, mean over splits)"]
    assert rel.b == () and rel.n == 4 and rel.effect > 0.1 and rel.family_name == verdicts.FAMILIES["ewc"]
    assert by["EWC − Finetune 2d (avg MSE)"].family == 5 and by["Finetune 2d − best baseline (avg MSE)"].family == 4
    # an arm shifted: the seed-offset control trips, and the text lists no findings
    shifted = {k: ({**v, "avg_mse": v["avg_mse"] + 1.0} if k[2] >= 4 else v) for k, v in cl.items()}
    vs2 = verdicts.cl_verdicts(shifted, base, ["naive", "ewc"], ["2d", "4d"], {"naive": "Finetune", "ewc": "EWC"}, 4)
    assert not stats.controls_hold(vs2)[0]
    text = report.verdict_text(vs2)
    assert "**Controls fail**" in text and "**Findings**" not in text and "not read: a control fails" in text
    pairs = verdicts.ewc_pairs(cl, ["2d", "4d"], 4)
    assert pairs["pairs"] == 8 and pairs["higher"] == 8 and 0 < pairs["low"] <= pairs["high"]


def test_pipeline_checks_stop_the_findings():
    x = np.random.default_rng(0).normal(size=(2, 40, 3))
    cl = {(m, n, s): {"M": [[1.0, 2.0], [1.5, 1.0]]} for m in ("naive",) for n in ("2d",) for s in range(4)}
    assert all(c["holds"] for c in verdicts.pipeline_checks(x, 0, cl, 4))
    broken = verdicts.pipeline_checks(x, 0, {k: v for k, v in cl.items() if k[2] != 2}, 4)
    assert [c["holds"] for c in broken] == [True, False] and "seeds [0, 1, 3] of 4" in broken[1]["detail"]
    v = stats.paired([1.0, 1.2, 1.1, 1.3], [0.0] * 4, comparison="BPS 2d − 4d", higher="2d more fragile")
    assert "**Findings** (1 of 1)" in report.verdict_text([v], verdicts.pipeline_checks(x, 0, cl, 4))
    text = report.verdict_text([v], broken)
    assert text.startswith("**Pipeline checks fail**") and "**Findings**" not in text


def test_findings_table_shows_the_level_of_each_decision():
    rows = [v.to_dict() for v in stats.holm([stats.paired([1.0, 1.2, 1.1, 1.3], [0.0] * 4, comparison=c)
                                             for c in ("a", "b")], name="f")]
    text = report.findings_markdown({"verdicts": rows, "controls_hold": True, "summary": ""})
    assert "95 % CI" not in text and "CI (level of the decision)" in text and "(97.5 %)" in text


def test_forgetting_share():
    share = verdicts.forgetting_share({("naive", "2d"): {"forgetting": 0.02, "avg_mse": 4.0}}, "naive", ["2d"])
    assert share == {"2d": pytest.approx(0.5)}


# issue 53, part B: 01's CL control on the tightest split, MSE on the log-ratio scale, texts from the rows

def _cl(mse: dict, null_split=None, cl_seeds=7, null_factor=1.0, seed=0):
    """CL results {(m, n, s)}: ``mse[n]`` the per-seed average MSE of Finetune; the null runs on ``null_split``."""
    rng = np.random.default_rng(seed)
    cl = {("naive", n, s): {"avg_mse": float(v), "forgetting": 0.01 * rng.standard_normal()}
          for n, vals in mse.items() for s, v in enumerate(vals)}
    if null_split:   # other seeds of the same split: its values in another order (another draw of the seeds)
        other = np.roll(np.asarray(mse[null_split], dtype=float), 2)
        for s in range(cl_seeds):
            cl[("naive", null_split, cl_seeds + s)] = {"avg_mse": float(other[s]) * null_factor,
                                                       "forgetting": 0.01 * rng.standard_normal()}
    return cl


def test_cl_null_control_runs_on_the_tightest_split_and_mse_is_tested_as_a_log_ratio():
    rng = np.random.default_rng(1)
    d30 = 10 + rng.random(7)
    d9 = d30 * np.exp(0.3 + 0.05 * rng.standard_normal(7))
    d9[3] *= 3                                     # one seed's blow-up: positive on 7 of 7, skewed differences
    mse = {"9d": d9, "30d": d30}
    assert verdicts.tightest_split(_cl(mse), ["9d", "30d"], 7) == "30d"
    cl = _cl(mse, null_split="30d")
    base = {n: {"constant_mean": 99.0, "persistence_mean": 99.0} for n in mse}
    vs = verdicts.cl_verdicts(cl, base, ["naive"], ["9d", "30d"], {"naive": "Finetune"}, 7)
    null = next(v for v in vs if v.role == "null control" and "avg MSE" in v.comparison)
    assert null.comparison.startswith("Finetune 30d:") and null.scale == "log_ratio" and null.control_ok
    row = next(v for v in vs if v.comparison == "Finetune avg MSE 9d − 30d")
    assert row.scale == "log_ratio" and row.decision == "Finetune higher on 9d"
    # the same values on the difference scale: the blow-up hides the ordering (what the issue found)
    assert stats.paired(d9, d30).decision == "no difference"
    # the control on the tightest split sees a one-arm bias the noisy split would let through
    loud = verdicts.cl_verdicts(_cl(mse, null_split="9d"), base, ["naive"], ["9d", "30d"], {"naive": "Finetune"}, 7)
    assert null.mde < next(v for v in loud if v.role == "null control" and "avg MSE" in v.comparison).mde
    # and it fails under a one-arm bias the size of the finding's ratio
    biased = verdicts.cl_verdicts(_cl(mse, null_split="30d", null_factor=float(np.exp(row.effect))), base, ["naive"],
                                  ["9d", "30d"], {"naive": "Finetune"}, 7)
    assert next(v for v in biased if v.role == "null control" and "avg MSE" in v.comparison).control_ok is False


def test_run_cl_refuses_an_unknown_null_split_before_training():
    with pytest.raises(ValueError, match="null_split must be a split name"):
        report.run_cl({"9d": [], "30d": []}, None, ["naive"], 2, seed=0, null_control=True, null_split="7d")
    with pytest.raises(ValueError, match="a case"):
        report.run_cl({"9d": []}, None, ["naive"], 2, seed=0, null_control=True, null_split="tightest",
                      only=[("naive", "9d", 0)])


@pytest.mark.parametrize("ratio, expect", [([0.1, -0.1, 0.2, -0.3], "is mechanical"),
                                           ([0.5, 0.6, 0.55, 0.7], "is not only mechanical"),
                                           ([-0.5, -0.6, -0.55, -0.7], "reverses")])
def test_a_bps_finding_is_called_mechanical_exactly_when_its_ratio_row_says_no_difference(ratio, expect):
    f = stats.paired([1.0, 1.2, 1.1, 1.3], [0.0] * 4, comparison="BPS 9d − 30d", higher="9d more fragile",
                     lower="30d more fragile")
    r = stats.paired(ratio, [0.0] * 4, comparison="BPS/null 9d − 30d", scope="exploratory",
                     higher="9d higher by ratio", lower="30d higher by ratio")
    text = report.mechanical_text([f, r])
    assert expect in text and "partly" not in text
    assert ("is mechanical" in text) == (not r.significant)
    assert report.mechanical_text([r]) == ""                          # no finding, nothing to read


def test_ranking_words_only_from_findings_and_the_spread_sentence_follows_its_numbers():
    up = stats.paired([3.0, 3.2, 3.1, 3.3], [1.0] * 4, comparison="Finetune avg MSE 9d − 30d")
    flat = stats.paired([0.1, -0.2, 0.1, 0.0], [0.0] * 4, comparison="Finetune avg MSE 30d − 44d")
    lab = {"naive": "Finetune"}
    assert report.order_established([up], ["9d", "30d"], lab, ["naive"])
    assert not report.order_established([up, flat], ["9d", "30d", "44d"], lab, ["naive"])
    assert not report.order_established([], ["9d", "30d"], lab, ["naive"])
    # "no larger than the baseline's own" was printed for 60.1 vs 50.1
    assert "no larger" not in report.spread_vs_baseline_text(60.1, 50.1)
    assert "is larger than" in report.spread_vs_baseline_text(60.1, 50.1)
    assert "no larger" in report.spread_vs_baseline_text(50.0, 50.1)
    assert report.spread_vs_baseline_text(80.0, 50.1) == ""
