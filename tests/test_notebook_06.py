"""Notebook 06_your_runs (bring your runs) with smoke parameters, its example runs and its oracle control."""

import json

import numpy as np
import pytest

from clkit.compare import compare, read_runs
from clkit.compare.examples import METHODS, SEEDS, example_runs_path, make_example_runs
from clkit.compare.metrics import run_metrics
from clkit.compare.oracle import oracle_verdict, planted_copy
from clkit.compare.runs import Run
from clkit.run import ParameterError


@pytest.mark.notebook
def test_smoke_run_reads_the_example_runs_and_decides_with_both_controls(run_smoke):
    res, out = run_smoke("06_your_runs")
    r = res["results"]
    assert "example runs shipped with clkit" in r["data_source"]
    assert r["num_runs"] == len(METHODS) * len(SEEDS) and set(r["methods"]) == set(METHODS)
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
    make_example_runs(tmp_path, methods=["naive", "replay"], seeds=[0, 5])
    shipped = {(r.method, r.seed): r for r in read_runs(example_runs_path())}
    fresh = read_runs(tmp_path / "runs.csv")
    assert len(fresh) == 4
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


def test_oracle_is_found_and_a_seed_shifted_copy_is_not():
    runs = _runs()
    v = oracle_verdict(runs, "a", 0.1)
    assert v.decision == "planted higher" and v.control_ok
    # a method with a planted effect is found; b with no effect is "no difference" (same process)
    res = compare(_runs(shift_b=0.08), reference="a", oracle_shift=0.1)
    assert res["table"].loc["ACC: b − a", "decision"] == "b higher"
    res0 = compare(_runs(shift_b=0.0, seed=3), reference="a", oracle_shift=0.1)
    assert res0["table"].loc["ACC: b − a", "decision"] == "no difference"
    assert "oracle control" in set(res0["table"]["role"])


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
