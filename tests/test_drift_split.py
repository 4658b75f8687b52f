"""Notebook 05's split (issue 52): the study cut into (method, seed) cases and null-control cases, run apart and
merged, equals one run -- rows in one run's order, the first seed's curves, the streams, and the verdicts."""

import json

import numpy as np
import pandas as pd
import pytest

import clkit.drift as drift
from clkit.data.graphs import csbm
from clkit.drift import report
from clkit.drift import split as ds
from clkit.sweep.merge import MERGES, merge_declaration

SEEDS = [1, 2, 3, 4]
METHODS = ["bare", "joint", "er"]
SWEEP = ["bare", "er"]


def _study():
    g = csbm(90, 4, seed=0)
    data = {pr: drift.protocol_data(g, 2, 0.2, seed=0, protocol=pr) for pr in ("text", "authors")}
    sweep_sigmas = {pr: [1.0, 3.0] for pr in data}
    configs = {pr: drift.study_configs(sigma=3.0, sigmas=sweep_sigmas[pr], p=0.3, k_bl=1, batch_size=10,
                                       batch_sizes=[10], sampling="without") for pr in data}
    null_cfg = drift.null_control_configs(sweep_sigmas, 10, "without")
    kw = dict(hidden=8, lr=5e-3, memory_size=20, eval_every={"text": 3, "authors": 3}, joint_epochs=2,
              dataset="csbm-split-test", cache=False, progress=False)
    return data, configs, sweep_sigmas, null_cfg, kw


def _write_case(folder, params, record):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps({"notebook": "05_drift", "params": params,
                                                     "results": {"drift_case": record}}))


@pytest.mark.paper_rehearsal
def test_split_then_merge_equals_one_run(tmp_path):
    """18 s on 2 cores: the whole small study once, then as its 16 cases."""
    data, configs, sweep_sigmas, null_cfg, kw = _study()
    off = report.NULL_SEED_OFFSET
    whole = drift.run_protocols(data, configs, METHODS, SWEEP, SEEDS, **kw)
    whole_nulls = drift.run_null_control(data, null_cfg, SEEDS, off, sweep_methods=SWEEP, **kw)

    params = {"dataset": "csbm", "seeds": SEEDS, "methods": METHODS}
    cases = ds.all_cases(METHODS, SWEEP, SEEDS)
    assert len(cases) == 3 * 4 + 4 and ds.case_key(*cases[-1]) == "null|4"
    for i, case in enumerate(cases):
        folder = tmp_path / "sweep" / f"case{i:02d}"
        rec = ds.run_cases([case], data, configs, METHODS, SWEEP, SEEDS, null_configs=null_cfg, null_offset=off,
                           out_dir=folder, **kw)
        _write_case(folder, {**params, "drift_cases": [ds.case_key(*case)], "device": "cpu"}, json.loads(
            json.dumps(rec)))   # as results.json holds it
    runs, nulls = ds.read_cases(tmp_path / "sweep", {**params, "drift_from": "x"}, data, configs, METHODS, SWEEP,
                                SEEDS, null_configs=null_cfg, null_offset=off, dataset=kw["dataset"], cache=False)
    for pr in data:
        pd.testing.assert_frame_equal(runs[pr][0], whole[pr][0])
        pd.testing.assert_frame_equal(nulls[pr], whole_nulls[pr])
        first = {k: v for k, v in whole[pr][1].items() if k[2] == min(SEEDS)}
        assert set(runs[pr][1]) == set(first)
        for k, (when, acc) in first.items():
            np.testing.assert_array_equal(runs[pr][1][k][0], when)
            np.testing.assert_array_equal(runs[pr][1][k][1], acc)
        assert set(runs[pr][2]) == set(whole[pr][2])
        for k, st in whole[pr][2].items():
            np.testing.assert_array_equal(runs[pr][2][k].batches, st.batches)
    # the verdicts the notebook draws from them
    v_whole = report.study_verdicts(whole, whole_nulls, SWEEP, sweep_sigmas, 10, "without")
    v_split = report.study_verdicts(runs, nulls, SWEEP, sweep_sigmas, 10, "without")
    same = lambda vs: json.dumps([v.to_dict() for v in vs], default=str)   # NaN == NaN here
    assert same(v_split) == same(v_whole) and len(v_whole) > 0
    assert {v.decision for v in v_whole} >= {"no difference"}


def test_the_merge_refuses_missing_doubled_and_differing_cases(tmp_path):
    rows = [{"config": "hard B=10 without", "method": "bare", "seed": 1, "AA": 0.5, "AF": float("nan")}]
    rec = {"cases": ["bare|1"], "runs": {"text": ds.encode_rows(rows)}, "nulls": {"text": []}, "curves": []}
    assert rec["runs"]["text"][0]["AF"] == "NaN" and np.isnan(ds.decode_rows(rec["runs"]["text"])[0]["AF"])
    _write_case(tmp_path / "a", {"seeds": [1], "drift_cases": ["bare|1"]}, rec)
    with pytest.raises(ValueError, match=r"drift_from: 1 case\(s\) missing .*null\|1"):
        ds.read_cases(tmp_path, {"seeds": [1]}, {}, {}, ["bare"], ["bare"], [1], null_configs=None, null_offset=100)
    _write_case(tmp_path / "b", {"seeds": [1], "drift_cases": ["bare|1"]}, rec)
    with pytest.raises(ValueError, match="drift_from: case bare\\|1 is in two runs"):
        ds.read_cases(tmp_path, {"seeds": [1]}, {}, {}, ["bare"], ["bare"], [1], null_configs=None, null_offset=100)
    with pytest.raises(ValueError, match=r"missing .*runs with other parameters: a \(seeds\)"):
        ds.read_cases(tmp_path, {"seeds": [2]}, {}, {}, ["bare"], ["bare"], [2], null_configs=None, null_offset=100)
    with pytest.raises(ValueError, match="drift_from: .* is not a folder"):
        ds.read_cases(tmp_path / "none", {}, {}, {}, [], [], [], null_configs=None, null_offset=0)


def test_cases_parse_and_the_merge_is_declared():
    assert ds.parse_cases([], ["bare"], ["bare", "er"], [1]) == [("bare", 1), ("er", 1), ("null", 1)]
    with pytest.raises(ValueError, match="drift_cases: 'x|1' is not a case"):
        ds.parse_cases(["x|1"], ["bare"], ["bare"], [1])
    with pytest.raises(TypeError, match="drift_cases must be a list"):
        ds.parse_cases("bare|1", ["bare"], ["bare"], [1])
    assert MERGES["05_drift"] == "clkit.drift.split:MERGE"
    assert merge_declaration("05_drift") == {"case_parameter": "drift_cases", "whole_value": [],
                                             "merge_parameter": "drift_from"}


def test_the_budget_line_names_the_split():
    from clkit.budget import Budget, Work

    note = ds.split_note("reddit")
    assert "notebooks/grids/05_drift/paper_reddit_split.yaml" in note and "clkit merge" in note
    b = Budget("05_drift", "cpu", 1, [Work("online steps", 1, 1.0)], note=note)
    assert b.text().endswith(note) and b.record()["note"] == note
    assert "trains er|1 only" in ds.split_note("reddit", ["er|1"])
    assert "nothing is trained here" in ds.split_note("reddit", (), "runs/x") and ds.split_note("corafull") == ""


def test_the_merge_puts_fabricated_case_rows_in_one_runs_order(tmp_path):
    """Fabricated cases (no training): each case holds its rows in reverse order, one AF is NaN, seed 1's
    curves sit in the npz beside; the merge returns every row in grid_plan's order (config, seed, method),
    NaN restored, the curves of seed 1 only, and the null rows per protocol."""
    data, configs, _, null_cfg, kw = _study()
    off = report.NULL_SEED_OFFSET
    methods, sweep, seeds = ["bare", "er"], ["bare"], [1, 2]
    plan = drift.grid_plan(list(data), configs, methods, sweep, seeds)
    expect = {pr: [] for pr in data}
    by_case = {}
    for part in plan:
        for cfg in part.configs:
            for seed in part.seeds:
                for m in part.methods:
                    row = {"config": cfg.label(), "method": m, "seed": seed, "protocol": part.protocol,
                           "AA": 0.1 * seed + (0.01 if m == "er" else 0.0), "AF": float("nan") if m == "bare" else 0.2}
                    expect[part.protocol].append(row)
                    by_case.setdefault((m, seed), {pr: [] for pr in data})[part.protocol].insert(0, row)
    nulls = {pr: [] for pr in data}
    for part in drift.grid_plan(list(data), {"main": [], "sigma": [], "sampling": [], "batch": []}, [], sweep,
                                seeds, null_configs=null_cfg, null_offset=off):
        for seed in part.seeds:
            nulls[part.protocol].append({"config": part.configs[0].label(), "method": "bare", "seed": seed,
                                         "protocol": part.protocol, "AA": 0.5, "AF": 0.0})
    params = {"seeds": seeds}
    for (m, seed), rows in by_case.items():
        folder = tmp_path / f"{m}-{seed}"
        curves = {}
        if seed == 1:
            label = configs["text"]["main"][0].label()
            curves = {f"text|{label}|{m}|1|when": np.array([5, 10]), f"text|{label}|{m}|1|acc": np.eye(2)}
            folder.mkdir()
            np.savez(folder / ds.CURVES_FILE, **curves)
        _write_case(folder, {**params, "drift_cases": [ds.case_key(m, seed)]},
                    {"cases": [ds.case_key(m, seed)], "runs": {pr: ds.encode_rows(r) for pr, r in rows.items()},
                     "nulls": {pr: [] for pr in data}, "curves": sorted({k.rsplit("|", 1)[0] for k in curves})})
    for seed in seeds:
        _write_case(tmp_path / f"null-{seed}", {**params, "drift_cases": [ds.case_key("null", seed)]},
                    {"cases": [ds.case_key("null", seed)], "runs": {pr: [] for pr in data},
                     "nulls": {pr: ds.encode_rows([r for r in nulls[pr] if r["seed"] == seed + off]) for pr in data},
                     "curves": []})
    runs, got_nulls = ds.read_cases(tmp_path, params, data, configs, methods, sweep, seeds, null_configs=null_cfg,
                                    null_offset=off, dataset=kw["dataset"], cache=False)
    for pr in data:
        pd.testing.assert_frame_equal(runs[pr][0], pd.DataFrame(expect[pr]))
        pd.testing.assert_frame_equal(got_nulls[pr], pd.DataFrame(nulls[pr]))
    cfg0 = configs["text"]["main"][0]
    assert set(runs["text"][1]) == {(cfg0, "bare", 1), (cfg0, "er", 1)} and runs["authors"][1] == {}
    np.testing.assert_array_equal(runs["text"][1][(cfg0, "er", 1)][1], np.eye(2))
    assert len(runs["text"][2]) == len({(c, s) for part in plan if part.protocol == "text"
                                        for c in part.configs for s in part.seeds})


def _check(**over):
    base = dict(dataset="csbm", setting="gaussian", sigma=3.0, sigmas=[1.0], p=0.3, k_bl=2, batch_size=10,
                batch_sizes=[10], sampling="without", methods=["bare"], memory_size=10, eval_every=5, seeds=[1],
                classes_per_task=2, tau=0.9, hidden=8, lr=0.005, joint_epochs=1, test_fraction=0.2)
    return drift.check_params(**{**base, **over})


def test_check_params_names_bad_split_parameters():
    _check(drift_cases=["bare|1"])                 # a case
    _check(drift_from="runs/x")                    # a merge
    with pytest.raises(ValueError, match=r"drift_cases and drift_from: a case trains runs, a merge reads them; "
                                         r"give one, got drift_cases=\['bare\|1'\] and drift_from='runs/x'"):
        _check(drift_cases=["bare|1"], drift_from="runs/x")
    with pytest.raises(TypeError, match=r"drift_cases must be a list of 'METHOD\|SEED' strings .*got 'bare\|1'"):
        _check(drift_cases="bare|1")
    with pytest.raises(TypeError, match=r"drift_cases must be .*got \[\('bare', 1\)\]"):
        _check(drift_cases=[("bare", 1)])
    with pytest.raises(TypeError, match="drift_from must be a folder .*got 3"):
        _check(drift_from=3)
    with pytest.raises(ValueError, match="stream='arxiv_time'"):
        _check(dataset="ogbn_arxiv", stream="arxiv_time", drift_cases=["bare|1"])


class _Record:
    def __init__(self, params):
        self.params, self.logged = params, {}

    def log(self, **kw):
        self.logged.update(kw)


def test_train_study_trains_whole_a_case_or_reads_the_merge(tmp_path, monkeypatch):
    """The notebook's training step: a whole run trains every run (its null controls later), a case only its
    runs (logged as drift_case, curves beside), a merge reads them back equal to the case's rows."""
    from clkit.drift import notebook_steps as steps

    data, configs, _, null_cfg, kw = _study()
    methods, sweep, seeds = ["bare"], ["bare"], [1]
    P = dict(methods=methods, sweep_methods=sweep, seeds=seeds, drift_cases=[], drift_from="")
    runs, nulls = steps.train_study(P, data, configs, null_cfg, ds.parse_cases([], methods, sweep, seeds), **kw)
    assert nulls is None and set(runs) == {"text", "authors"} and set(runs["text"][0]["method"]) == {"bare"}
    whole_nulls = drift.run_null_control(data, null_cfg, seeds, report.NULL_SEED_OFFSET, sweep_methods=sweep, **kw)
    monkeypatch.setenv("CLKIT_OUT_DIR", str(tmp_path / "case"))
    cases = ["bare|1", "null|1"]
    rec = _Record({**P, "drift_cases": cases})
    got = steps.train_study({**P, "drift_cases": cases}, data, configs, null_cfg,
                            ds.parse_cases(cases, methods, sweep, seeds), rec, **kw)
    assert got == (None, None) and rec.logged["drift_case"]["cases"] == cases
    assert (tmp_path / "case" / ds.CURVES_FILE).is_file()
    _write_case(tmp_path / "case", rec.params, json.loads(json.dumps(rec.logged["drift_case"])))
    merge = _Record({**P, "drift_from": str(tmp_path)})
    runs_m, nulls_m = steps.train_study({**P, "drift_from": str(tmp_path)}, data, configs, null_cfg,
                                        ds.parse_cases([], methods, sweep, seeds), merge, **kw)
    for pr in data:
        pd.testing.assert_frame_equal(runs_m[pr][0], runs[pr][0])
        pd.testing.assert_frame_equal(nulls_m[pr], whole_nulls[pr])
    assert merge.logged == {}
