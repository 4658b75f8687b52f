"""Notebook 06_your_runs (bring your runs) with smoke parameters, its example runs and its oracle control."""


import numpy as np
import pytest

from clkit.compare import compare, read_runs
from clkit.compare.examples import METHODS, RERUNS, SEEDS, example_runs_path, make_example_runs
from clkit.compare.metrics import run_metrics
from clkit.compare.oracle import oracle_verdict, planted_copy
from clkit.compare.runs import Run
from clkit.run import ParameterError


@pytest.mark.notebook
def test_smoke_run_reads_the_example_runs_and_decides_with_both_controls(run_smoke):
    res, out = run_smoke("06_your_runs")
    r = res["results"]
    assert "example runs shipped with clkit" in r["data_source"]
    assert r["num_runs"] == (len(METHODS) + len(RERUNS)) * len(SEEDS)
    assert set(r["methods"]) == set(METHODS) | {m + "-rerun" for m in RERUNS}
    rows = {v["comparison"]: v for v in r["verdicts"]}
    # the controls: the null control reads "no difference", the planted oracle is found
    roles = {v["role"] for v in r["verdicts"]}
    assert {"null control", "oracle control"} <= roles and r["controls_hold"] is True
    oracle = next(v for v in r["verdicts"] if v["role"] == "oracle control")
    assert oracle["decision"] == "planted higher"
    # the qualitative finding of class-incremental learning on these runs: replay beats fine-tuning
    assert rows["ACC: replay − naive"]["decision"] == "replay higher"
    assert r["acc_mean"]["replay"] > r["acc_mean"]["naive"] + 0.3
    # the example's reported_acc is the average incremental accuracy, not ACC: every run disagrees
    assert r["disagreements"] == r["num_runs"]
    assert r["planner"] and r["summary"].startswith("**Controls hold**")
    nb = (out / "06_your_runs.ipynb").read_text()
    assert "Runs read:" in nb and "Traceback" not in nb
    for fig in ("acc_per_method.png", "mean_R.png"):
        assert (out / "figures" / fig).is_file()


@pytest.mark.notebook
@pytest.mark.parametrize("override, message", [
    ({"metric": "auc"}, "metric must be one of"),
    ({"reference": "nobody"}, "'nobody' is not among the runs' methods"),
    ({"compare": ["replay-naive"]}, "compare entries must read 'A:B'"),
    ({"oracle_shift": 1.5}, "oracle_shift"),
    ({"runs": "/nonexistent/runs"}, "/nonexistent/runs"),
])
def test_bad_parameters_are_refused_in_the_validation_cells(tmp_path, override, message):
    from clkit.run import run_notebook

    with pytest.raises((ParameterError, RuntimeError), match=message):
        run_notebook("06_your_runs", "smoke", list(override.items()), out=tmp_path, progress=False)


def test_shipped_example_runs_are_what_the_generator_writes(tmp_path):
    """The shipped runs are a real run of make_example_runs (4 decimals; the generator is deterministic)."""
    make_example_runs(tmp_path / "a", methods=["naive"], seeds=[0])   # with its rerun (another training seed)
    make_example_runs(tmp_path / "b", methods=["replay"], seeds=[5], reruns=())
    shipped = {(r.method, r.seed): r for r in read_runs(example_runs_path())}
    fresh = list(read_runs(tmp_path / "a" / "runs.csv")) + list(read_runs(tmp_path / "b" / "runs.csv"))
    assert sorted((r.method, r.seed) for r in fresh) == [("naive", "0"), ("naive-rerun", "0"), ("replay", "5")]
    # the rerun is another draw of the same training on the same split: not a copy of naive
    assert not np.array_equal(fresh[0].R, fresh[1].R)
    for r in fresh:
        np.testing.assert_allclose(r.R, shipped[(r.method, r.seed)].R, atol=2e-4, equal_nan=True)
        assert r.reported["acc"] == pytest.approx(shipped[(r.method, r.seed)].reported["acc"], abs=2e-4)


def test_example_reported_acc_is_the_average_incremental_accuracy():
    for r in read_runs(example_runs_path()):
        incremental = np.mean([np.mean(r.R[i, :i + 1]) for i in range(r.num_tasks)])
        assert r.reported["acc"] == pytest.approx(incremental, abs=1e-4), r.label


def _runs(shift_b=0.0, n=8, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for m in ("a", "b"):
        for s in range(n):
            R = np.clip(np.tril(0.6 + 0.05 * rng.standard_normal((4, 4))), 0, 1)
            R[-1] += shift_b if m == "b" else 0.0
            R[np.triu_indices(4, 1)] = np.nan
            out.append(Run(m, str(s), None, None, R, f"{m}{s}"))
    return out


def test_planted_copy_stays_an_accuracy_matrix_and_plants_exactly_s_times_the_error():
    runs = _runs()
    for s in (0.05, 0.5, 1.0):
        for base, copy in zip([r for r in runs if r.method == "a"], planted_copy(runs, "a", s)):
            assert np.nanmin(copy.R) >= 0 and np.nanmax(copy.R) <= 1
            np.testing.assert_array_equal(copy.R[:-1], base.R[:-1])   # only the final row moves
            acc, acc2 = run_metrics(base.R)["acc"], run_metrics(copy.R)["acc"]
            assert acc2 - acc == pytest.approx(s * (1 - acc))
            # FWT-free metrics: the final row's cells only rise, so forgetting never increases
            assert run_metrics(copy.R)["forgetting"] <= run_metrics(base.R)["forgetting"] + 1e-12


def _with_rerun(runs, noise=0.05, seed=7):
    """``runs`` plus a rerun of ``a`` (same keys, fresh noise): the paired null control's runs."""
    rng = np.random.default_rng(seed)
    out = list(runs)
    for r in [r for r in runs if r.method == "a"]:
        R = np.clip(np.tril(0.6 + noise * rng.standard_normal(r.R.shape)), 0, 1)
        R[np.triu_indices(R.shape[0], 1)] = np.nan
        out.append(Run("a-rerun", r.seed, None, None, R, f"a-rerun{r.seed}"))
    return out


def test_null_control_is_paired_with_as_many_pairs_as_the_findings():
    """Issue 53: the null control was seeds 0-3 against 4-7 (4 unpaired pairs against the findings' 8)."""
    res = compare(_with_rerun(_runs()), reference="a", oracle_shift=0.1)
    assert res["rerun"] == "a-rerun" and "a-rerun" not in {m for c in res["comparisons"] for m in c}
    null = next(v for v in res["verdicts"] if v.role == "null control" and v.comparison.startswith("ACC: "))
    finding = next(v for v in res["verdicts"] if v.comparison == "ACC: b − a")
    assert null.comparison == "ACC: a-rerun − a (same keys, retrained)" and null.n == finding.n == 8
    # paired: the rerun arm of seed s is paired with the control's seed s
    r = {(x.method, x.seed): run_metrics(x.R)["acc"] for x in _with_rerun(_runs())}
    np.testing.assert_allclose(null.a, [r[("a-rerun", str(s))] for s in range(8)])
    np.testing.assert_allclose(null.b, [r[("a", str(s))] for s in range(8)])
    # without a rerun: the split-half fallback, half the pairs, and its note says why it is blunter
    old = compare(_runs(), reference="a")
    null = next(v for v in old["verdicts"] if v.role == "null control")
    assert null.n == 4 and "split-half" in null.note and "a-rerun" in null.note


def test_null_control_fails_under_a_planted_one_arm_bias_the_size_of_the_findings():
    """A rerun biased by the smallest finding's size (+0.08 on the final row) is caught."""
    runs = _with_rerun(_runs(shift_b=0.08))
    biased = [Run(r.method, r.seed, None, None, r.R + np.where(np.arange(4) == 3, 0.08, 0.0)[:, None]
                  if r.method == "a-rerun" else r.R, r.source) for r in runs]
    ok = compare(runs, reference="a")
    bad = compare(biased, reference="a")
    name = "ACC: a-rerun − a (same keys, retrained)"
    assert ok["table"].loc[name, "control"] == "holds"
    assert bad["table"].loc[name, "control"] == "FAILS"
    assert bad["paragraph"].startswith("**Controls fail**")


def test_oracle_is_sized_in_seed_noise_and_fails_under_a_broken_rule(monkeypatch):
    """Issue 53: the old oracle (a copy paired with itself) gave p = 8.6e-12 for shift 1 and 1e-9 alike.
    The oracle now plants a gain of k spreads into the null control's own noisy pairs."""
    import clkit.stats as stats
    from clkit.compare.verdicts import rerun_pairs

    runs = _with_rerun(_runs())
    pairs = rerun_pairs(runs, "a", "a-rerun")
    assert len(pairs) == 8
    v = oracle_verdict(pairs, 0.08)
    assert v.decision == "planted higher" and v.control_ok and "power" in v.note
    # the effect is the planted gain plus the pairs' own noise, exactly
    raw = np.mean([run_metrics(y.R)["acc"] - run_metrics(x.R)["acc"] for x, y in pairs])
    assert v.effect == pytest.approx(raw + 0.08, abs=1e-12)
    # a gain far below the noise is not found: the oracle fails, as it must when it cannot see the effect
    assert oracle_verdict(pairs, 1e-9).control_ok is False
    # a rule that never finds anything fails the oracle
    monkeypatch.setattr(stats.rule, "decide", lambda *a, **k: stats.NO_DIFFERENCE, raising=True)
    assert oracle_verdict(pairs, 0.08).control_ok is False


def test_oracle_finds_its_planted_gain_at_the_power_it_states():
    """Simulated: healthy reruns with seed noise, a gain of 1.2 spreads of the null differences; the share
    of runs where the oracle holds matches the power it prints (within the binomial error of 300 runs)."""
    from clkit.compare.verdicts import rerun_pairs
    from clkit.stats import power

    rng = np.random.default_rng(11)
    n, noise, found = 8, 0.02, []
    sd_d = noise * np.sqrt(2) / 2          # sd of the difference of two final-row means of 4 cells
    gain = 1.2 * sd_d
    for _ in range(300):
        runs = []
        for m in ("a", "a-rerun"):
            for s in range(n):
                R = np.tril(np.full((4, 4), 0.6))
                R[-1] += noise * rng.standard_normal(4)
                R[np.triu_indices(4, 1)] = np.nan
                runs.append(Run(m, str(s), None, None, R, "x"))
        found.append(oracle_verdict(rerun_pairs(runs, "a", "a-rerun"), gain).control_ok)
    stated = power(n, gain / sd_d)
    assert abs(np.mean(found) - stated) < 3 * np.sqrt(stated * (1 - stated) / 300) + 0.02, (np.mean(found), stated)


def test_compare_sizes_the_oracle_from_the_sharpest_comparison():
    res = compare(_with_rerun(_runs(shift_b=0.08)), reference="a", oracle_sds=3.0)
    oracle = next(v for v in res["verdicts"] if v.role == "oracle control")
    sd = min(v.sd for v in res["verdicts"] if v.role == "finding" and v.comparison.startswith("ACC: "))
    assert f"+{stats_num(3 * sd)}" in oracle.comparison.replace("planted ", "planted +") and oracle.control_ok
    assert "3 sd of the sharpest comparison's ACC differences" in oracle.note
    assert compare(_with_rerun(_runs()), reference="a", oracle_sds=None)["table"]["role"].ne("oracle control").all()


def stats_num(x):
    from clkit.stats import _num
    return _num(x)


def test_pipeline_check_is_listed_apart_and_catches_a_broken_metric(monkeypatch):
    """The copy-of-itself check is exact arithmetic: listed under pipeline checks, not counted as a control."""
    import clkit.compare.oracle as oracle

    res = compare(_with_rerun(_runs()), reference="a", oracle_shift=0.1)
    assert res["pipeline"] and res["pipeline"][0]["passed"]
    assert "**Pipeline checks** (1 of 1 pass" in res["paragraph"]
    controls = [v for v in res["verdicts"] if v.role != "finding"]
    assert all("copy with" not in v.comparison for v in controls)
    assert f"({len(controls)} of {len(controls)}" in res["paragraph"].splitlines()[0]
    real = oracle.run_metrics
    monkeypatch.setattr(oracle, "run_metrics", lambda R: {**real(R), "acc": float(np.mean(R[0][:1]))})
    broken = oracle.pipeline_check(_runs(), "a", 0.1)
    assert not broken["passed"] and "broken" in broken["text"]


def test_bwt_and_forgetting_mirrors_are_tested_once_and_plan_agrees_with_text():
    """Forgetting = −BWT per run when no task peaks after its own step: one hypothesis, one row."""
    rng = np.random.default_rng(2)
    runs = []
    for m in ("a", "b", "c"):
        for s in range(8):
            d = 0.9 + 0.02 * rng.standard_normal(4)
            R = np.tril(np.tile(d, (4, 1)))
            R[-1, :3] = d[:3] - (0.2 if m == "b" else 0.3) - 0.03 * rng.standard_normal(3)
            np.fill_diagonal(R, d)
            R[np.triu_indices(4, 1)] = np.nan
            runs.append(Run(m, str(s), None, None, R, "x"))
    for r in runs:
        assert run_metrics(r.R)["forgetting"] == pytest.approx(-run_metrics(r.R)["bwt"])
    res = compare(runs, reference="a")
    names = [v.comparison for v in res["verdicts"] if v.role == "finding"]
    assert "BWT: b − a" in names and "forgetting: b − a" not in names
    bwt = next(v for v in res["verdicts"] if v.comparison == "BWT: b − a")
    assert "forgetting: b − a is the same comparison with the sign reversed" in bwt.note
    # one detectable figure per row: the plan repeats the table's and the closing text's
    from clkit.stats import _num
    nulls = [v for v in res["verdicts"] if v.role == "finding" and v.scope == "primary" and not v.significant]
    assert [v.comparison for v in nulls] == ["ACC: c − a"]
    for v in nulls:
        fig = f"detectable ≥ {_num(v.mde)}"
        assert fig in res["paragraph"] and any(fig in line for line in res["planner"])


def test_oracle_refuses_unknown_method_and_bad_shift():
    with pytest.raises(ValueError, match="oracle method 'z' is not among"):
        planted_copy(_runs(), "z", 0.1)
    with pytest.raises(ValueError, match="oracle_shift"):
        planted_copy(_runs(), "a", 0.0)


def test_shown_tables_carry_no_machine_path():
    """Issue 54: 06's disagreement table showed `.../site-packages/...`; sources are relative to the runs' folder."""
    from clkit.compare.params import data_label, data_note, shown_sources

    res = compare(read_runs(example_runs_path()), reference="naive")
    raw = res["disagreements"]
    assert len(raw) and raw["source"].str.startswith(str(example_runs_path())).all()  # what the library keeps
    shown = shown_sources(raw, "example")["source"]
    assert shown.str.startswith("example_runs/").all() and not shown.str.contains("/home|site-packages|^/").any()
    mine = str(example_runs_path())  # a user's absolute runs path (as `clkit run 06 -p runs DIR` now passes it)
    assert data_label(mine) == "your runs from example_runs"
    assert "`example_runs`" in data_note(mine, read_runs(mine)) and mine not in data_note(mine, read_runs(mine))


def test_every_table_names_its_unit_fractions_or_percent_read():
    """Issue 55: 06's tables name their unit in the header (columns' name): fractions (0-1); with ``percent``
    the header says the runs' percentages were divided by 100, and the numbers are the fraction run's."""
    import json
    import tempfile

    from clkit.compare.params import shown_sources
    from clkit.compare.report import write_report

    runs = read_runs(example_runs_path())
    res = compare(runs, reference="naive")
    assert res["table"].columns.name == res["unit"] == "effect, CI and detectable: fractions (0-1)"
    assert res["disagreements"].columns.name == "reported, recomputed and difference: fractions (0-1)"
    assert shown_sources(res["disagreements"], "example").columns.name == res["disagreements"].columns.name
    means = res["metrics"].drop(columns=["source"]).groupby("method", sort=False).mean(numeric_only=True)
    assert "fractions (0-1)" in means.columns.name       # the metrics table the notebook shows
    assert 0 <= means["acc"].min() and means["acc"].max() <= 1
    # runs read with percent (their scores divided by 100): the same fractions, the header says what was divided
    res_p = compare(runs, reference="naive", percent=True)
    assert res_p["table"].columns.name == ("effect, CI and detectable: fractions (0-1; the runs' percentages "
                                           "0-100 were divided by 100)")
    np.testing.assert_allclose(res_p["table"]["effect"].astype(float), res["table"]["effect"].astype(float))
    out = tempfile.mkdtemp()
    write_report(res_p, out)
    with open(f"{out}/results.json") as fh:
        assert "percentages 0-100 were divided by 100" in json.load(fh)["results"]["unit"]
