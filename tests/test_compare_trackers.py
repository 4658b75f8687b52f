"""MLflow and W&B run exports into clkit compare (issue 41): clkit.compare.trackers.

MLflow is checked for real: a file store is written by mlflow(-skinny)'s own client (two methods x three
seeds, per-task accuracies logged as metrics at the step of the task trained), then read back, and its
metric histories are exported with ``MlflowClient.get_metric_history`` and ``mlflow.search_runs``. wandb
is not installed: the W&B fixtures below are written in the format inferred from wandb 0.31.0's code
(``wandb/apis/public/runs.py``: ``Run.history`` = ``pd.DataFrame.from_records`` of the history rows,
``_step`` / ``_runtime`` / ``_timestamp`` plus the logged keys; ``Run.scan_history`` rows as dicts;
``wandb/sdk/lib/config_util.py``: ``config.yaml`` = ``wandb_version: 1`` then ``key: {desc, value}``),
not produced by a W&B run.
"""

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from clkit.compare import compare, read_folder, read_mlflow_history, read_mlflow_store, read_runs, read_wandb_history
from clkit.compare.trackers import sniff_tracker

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "data"
T = 3
SEEDS = (0, 1, 2)


def _R(method: str, seed: int) -> np.ndarray:
    """The logged matrix, written out by hand: er is higher than finetune on the final row by 0.1, 0.085,
    0.115 for seeds 0, 1, 2 (the planted difference, mean 0.1), a seed moves every cell by 0.01 x seed;
    finetune is also evaluated above the diagonal."""
    base = np.array([[0.90, 0.11, 0.09],
                     [0.52, 0.88, 0.10],
                     [0.41, 0.50, 0.80]])
    R = base + 0.01 * seed
    if method == "er":
        R = R.copy()
        R[2, :] += (0.1, 0.085, 0.115, 0.1, 0.1)[seed]
        R[np.triu_indices(T, 1)] = np.nan
    return np.round(R, 4)


def _client(tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason="the trackers extra: pip install 'clkit[trackers]'")
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 asks for it before writing a file store
    store = tmp_path / "mlruns"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.as_uri())
    return MlflowClient(tracking_uri=store.as_uri()), store


def _log_run(client, exp_id, method, seed, R, *, key="acc_task_{j}", params=None, ts=1_000):
    run = client.create_run(exp_id, run_name=f"{method}_{seed}")
    rid = run.info.run_id
    for k, v in (params if params is not None else {"method": method, "seed": seed, "lr": 0.1}).items():
        client.log_param(rid, k, v)
    client.set_tag(rid, "team", "cl")
    for i in range(T):
        client.log_metric(rid, "train_loss", 1.0 / (i + 1), timestamp=ts + i, step=i)
        for j in range(T):
            if not np.isnan(R[i, j]):
                client.log_metric(rid, key.format(j=j), float(R[i, j]), timestamp=ts + i, step=i)
    client.set_terminated(rid)
    return rid


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A real MLflow file store: finetune logs ``acc_task_<j>``, er ``acc/task_<j>`` (a nested metric folder)."""
    client, path = _client(tmp_path, monkeypatch)
    exp = client.create_experiment("cl-split")
    ids = {}
    for method, key in (("finetune", "acc_task_{j}"), ("er", "acc/task_{j}")):
        for s in SEEDS:
            ids[(method, s)] = _log_run(client, exp, method, s, _R(method, s), key=key)
    return path, client, exp, ids


def test_mlflow_store_matrices_equal_what_was_logged(store):
    path, _, _, ids = store
    rs = read_runs(path)
    assert rs.format == "mlflow" and len(rs) == 6
    for r in rs:
        np.testing.assert_array_equal(r.R, _R(r.method, int(r.seed)))
        assert r.source.endswith(ids[(r.method, int(r.seed))])
        assert "method from params/method, seed from params/seed" in r.used
        assert "train_loss" in r.used and "params read, not used: lr" in r.used
    fine = next(r for r in rs if r.method == "finetune")
    assert "acc_task_0 .. acc_task_2 at steps 0-2" in fine.used and not np.isnan(fine.R[0, 1])
    er = next(r for r in rs if r.method == "er")
    assert "acc/task_0 .. acc/task_2" in er.used and np.isnan(er.R[0, 1])
    # one experiment folder, one run folder
    one = read_mlflow_store(Path(er.source))
    assert len(one) == 1 and one.runs[0].label == er.label
    assert len(read_mlflow_store(Path(er.source).parent)) == 6


def test_planted_difference_found_from_mlflow(store):
    res = compare(read_runs(store[0]), reference="finetune")
    row = res["table"].loc["ACC: er − finetune"]
    assert row["decision"] == "er higher"
    assert row["effect"] == pytest.approx(0.1, abs=1e-9)


def test_mlflow_metric_history_table_and_search_runs(store, tmp_path):
    import mlflow
    import pandas as pd

    path, client, exp, ids = store
    rows = []
    for (method, s), rid in ids.items():
        key = "acc_task_{j}" if method == "finetune" else "acc/task_{j}"
        for k in [key.format(j=j) for j in range(T)] + ["train_loss"]:
            rows += [{**m.to_dictionary(), "run_id": rid} for m in client.get_metric_history(rid, k)]
    hist = tmp_path / "history.csv"
    pd.DataFrame(rows).to_csv(hist, index=False)
    table = tmp_path / "search_runs.csv"
    mlflow.search_runs(experiment_ids=[exp]).to_csv(table, index=False)
    rs = read_mlflow_history(hist, runs_table=table)
    assert len(rs) == 6
    for r in rs:
        np.testing.assert_array_equal(r.R, _R(r.method, int(r.seed)))
        assert "seed from runs_table params.seed" in r.used
    # the same as JSON lines, method and seed as columns
    pd.DataFrame(rows).assign(method=lambda d: d.run_id.map({v: k[0] for k, v in ids.items()}),
                              seed=lambda d: d.run_id.map({v: k[1] for k, v in ids.items()})).to_json(
        tmp_path / "history.jsonl", orient="records", lines=True)
    assert sorted(r.label for r in read_runs(tmp_path / "history.jsonl")) == sorted(
        f"{m} seed {s}" for m, s in ids)
    # without method / seed: refused, naming the file, the run and the field
    with pytest.raises(ValueError, match=r"history\.csv' rows 2-13 \(run [0-9a-f]{32}\): field method \(method\) is "
                                         r"missing: not in column method, column params\.method, column "
                                         r"tags\.method; .*runs_table"):
        read_mlflow_history(hist)
    # search_runs alone holds only each metric's last value
    with pytest.raises(ValueError, match=r"search_runs\.csv.*search_runs's table.*last value only"):
        read_runs(table)


def test_mlflow_missing_fields_cells_and_duplicates(tmp_path, monkeypatch):
    client, path = _client(tmp_path, monkeypatch)
    exp = client.create_experiment("bad")
    rid = _log_run(client, exp, "er", 0, _R("er", 0), params={"strategy": "er", "seed": 0})
    with pytest.raises(ValueError, match=rf"mlruns/{exp}/{rid}.*\(run {rid} 'er_0'\): field method .*missing: not in "
                                         r"params/method, tags/method.*method_key"):
        read_mlflow_store(path)
    assert read_mlflow_store(path, method_key="strategy").runs[0].label == "er seed 0"
    # a cell on the diagonal never logged: refused, naming the key and the step
    (path / exp / rid / "metrics" / "acc_task_1").write_text("5 0.8 2\n")
    with pytest.raises(ValueError, match=rf"{rid}.*er seed 0\): field acc_task_1 at step 1 was not logged: "
                                         r"R\[1, 1\]"):
        read_mlflow_store(path, method_key="strategy")
    # a rerun with the same method and seed: refused, naming both folders
    client2, _ = _client(tmp_path / "b", monkeypatch)
    exp2 = client2.create_experiment("dup")
    a = _log_run(client2, exp2, "er", 0, _R("er", 0))
    b = _log_run(client2, exp2, "er", 0, _R("er", 0), ts=9_000)
    dup = rf"duplicated run er seed 0 \(field seed\): in .*({a}|{b}) and in .*({a}|{b})"
    with pytest.raises(ValueError, match=dup):
        read_runs(tmp_path / "b" / "mlruns")
    client2.delete_run(b)
    rs = read_runs(tmp_path / "b" / "mlruns")
    assert len(rs) == 1 and any(b in n and "deleted" in n for n in rs.notes)


def test_mlflow_percent_steps_order_pattern_and_repeats(tmp_path, monkeypatch):
    client, path = _client(tmp_path, monkeypatch)
    exp = client.create_experiment("pct")
    R = np.round(100 * _R("er", 1), 2)
    run = client.create_run(exp, run_name="x")
    rid = run.info.run_id
    client.log_param(rid, "method", "er")
    client.log_param(rid, "seed", "1")
    for i in range(T):  # 1-based task keys, steps counting epochs (10 per task), one value logged twice
        for j in range(i + 1):
            client.log_metric(rid, f"val/top1/t{j + 1}", float(R[i, j]), timestamp=100 + i, step=10 * (i + 1))
    client.log_metric(rid, "val/top1/t1", 1.0, timestamp=50, step=10)  # older: not the one kept
    kw = dict(metric_pattern=r"val/top1/t(?P<task>\d+)", task_base=1)
    with pytest.raises(ValueError, match=r"'x', er seed 1\): field step: accuracies logged at 3 steps \(10 \.\. 30\).*"
                                         r"steps='order'"):
        read_mlflow_store(path, **kw)
    with pytest.raises(ValueError, match=r"R\[0, 0\] = 91 is outside \[0, 1\].*percent=True"):
        read_mlflow_store(path, steps="order", **kw)
    r = read_mlflow_store(path, steps="order", percent=True, **kw).runs[0]
    np.testing.assert_allclose(r.R, _R("er", 1))
    assert "1 value(s) logged twice at one step: the last one used" in r.used
    with pytest.raises(ValueError, match=r"field metric key: no key names an evaluated task"):
        read_mlflow_store(path, steps="order")
    with pytest.raises(ValueError, match=r"no metric names task 0.*task_base=1"):
        read_mlflow_store(path, steps="order", metric_pattern=r"val/top1/t(?P<task>\d+)")


def _wandb_run(folder: Path, stem: str, method: str, seed: int, R: np.ndarray, *, fmt: str = "csv",
               config: bool = True):
    """A W&B export in the format inferred from wandb 0.31.0 (see the module docstring): one history row per
    ``wandb.log`` call -- a training-loss row per task and an evaluation row ``{"acc_task_<j>": ...}``
    logged with ``step=i`` -- and the run's ``config.yaml``."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(T):
        rows.append({"_step": i, "_runtime": 10.0 * i + 1, "_timestamp": 1.7e9 + i, "train/loss": 0.5 / (i + 1)})
        rows.append({"_step": i, "_runtime": 10.0 * i + 5, "_timestamp": 1.7e9 + i + 0.5,
                     **{f"acc_task_{j}": float(R[i, j]) for j in range(T) if not np.isnan(R[i, j])}})
    cols = list(dict.fromkeys(k for r in rows for k in r))
    if fmt == "csv":  # run.history() -> DataFrame.from_records(...).to_csv(): an unnamed index column first
        lines = ["," + ",".join(cols)] + [f"{n}," + ",".join("" if r.get(c) is None else repr(r[c]) for c in cols)
                                          for n, r in enumerate(rows)]
        (folder / f"{stem}.csv").write_text("\n".join(lines) + "\n")
    else:  # scan_history() rows, one JSON object per line
        (folder / f"{stem}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if config:
        (folder / f"{stem}.config.yaml").write_text(
            "wandb_version: 1\n\n_wandb:\n  desc: null\n  value:\n    cli_version: 0.31.0\n"
            f"method:\n  desc: null\n  value: {method}\nseed:\n  desc: null\n  value: {seed}\n"
            "lr:\n  desc: null\n  value: 0.01\n")


def test_wandb_history_csv_and_jsonl(tmp_path):
    for n, (method, s) in enumerate((m, s) for m in ("finetune", "er") for s in SEEDS):
        _wandb_run(tmp_path / "wb", f"{method}_{s}", method, s, _R(method, s), fmt="csv" if n % 2 else "jsonl")
    rs = read_runs(tmp_path / "wb")
    assert rs.format == "wandb" and len(rs) == 6
    for r in rs:
        np.testing.assert_array_equal(r.R, _R(r.method, int(r.seed)))
        assert f"method from {r.method}_{r.seed}.config.yaml method" in r.used and "train/loss" in r.used
    assert compare(rs, reference="finetune")["table"].loc["ACC: er − finetune", "decision"] == "er higher"
    # a run folder as wandb's files/ holds it: config.yaml beside the one history file
    _wandb_run(tmp_path / "one", "history", "er", 4, _R("er", 4), fmt="jsonl", config=False)
    (tmp_path / "one" / "config.yaml").write_text("wandb_version: 1\n\ncl:\n  desc: null\n  value:\n"
                                                  "    method: er\n    seed: 4\n")
    r = read_wandb_history(tmp_path / "one" / "history.jsonl", method_key="cl.method", seed_key="cl.seed").runs[0]
    assert r.label == "er seed 4" and "seed from config.yaml cl.seed" in r.used
    with pytest.raises(ValueError, match=r"history\.jsonl': field method \(method\) is missing: not in config\.yaml "
                                         r"method;.*history\.config\.yaml"):
        read_wandb_history(tmp_path / "one" / "history.jsonl")


def test_wandb_plot_export_and_missing_cells(tmp_path):
    # the app's line-plot "Export CSV": Step, "<run> - <metric>", __MIN / __MAX
    f = tmp_path / "panel.csv"
    f.write_text('Step,"er_0 - acc_task_0","er_0 - acc_task_0__MIN","er_0 - acc_task_0__MAX","er_0 - acc_task_1"\n'
                 "0,0.9,0.9,0.9,\n1,0.6,0.6,0.6,0.8\n")
    assert sniff_tracker(f) == "wandb"
    r = read_wandb_history(f, config={"method": {"value": "er", "desc": None}, "seed": 0}).runs[0]
    np.testing.assert_array_equal(r.R, [[0.9, np.nan], [0.6, 0.8]])
    assert "acc_task_0__MIN" in r.used
    # an evaluation row not logged (a sampled history): refused below the diagonal
    R = _R("er", 0)
    _wandb_run(tmp_path, "er_0", "er", 0, R)
    text = (tmp_path / "er_0.csv").read_text().splitlines()
    (tmp_path / "er_0.csv").write_text("\n".join(text[:4] + text[5:]) + "\n")  # drop the step-1 evaluation row
    with pytest.raises(ValueError, match=r"er_0\.csv'? \(run er seed 0\): field step: no task accuracy logged at "
                                         r"step 1"):
        read_wandb_history(tmp_path / "er_0.csv")


def test_manifest_rows_with_tracker_formats(store, tmp_path):
    path, _, exp, ids = store
    _wandb_run(tmp_path / "wb", "run7", "er", 7, _R("er", 0), config=False)
    (tmp_path / "runs.csv").write_text(
        "file,method,seed,format,metric_pattern\n"
        f"mlruns/{exp}/{ids[('er', 1)]},ER,1,mlflow,\n"
        f"mlruns/{exp},finetune,2,,acc_task_(?P<task>\\d+)\n"
        "wb/run7.csv,ER,0,wandb,\n")
    rs = read_folder(tmp_path)
    assert [r.label for r in rs] == ["ER seed 1", "finetune seed 2", "ER seed 0"]
    np.testing.assert_array_equal(rs.runs[1].R, _R("finetune", 2))
    assert rs.runs[1].source.endswith(ids[("finetune", 2)]) and "method from the manifest" in rs.runs[0].used
    (tmp_path / "runs.csv").write_text("file,method,seed,format\nwb/run7.csv,ER,0,tensorboard\n")
    with pytest.raises(ValueError, match=r"line 2 \(run ER seed 0\): field format = 'tensorboard'.*mlflow, wandb"):
        read_folder(tmp_path)


def test_cli_compare_mlflow_store(store, tmp_path, capsys):
    from clkit.cli import compare as cli_compare

    ap = argparse.ArgumentParser(prog="clkit")
    sub = ap.add_subparsers(dest="cmd", required=True)
    cli_compare.register(sub)
    args = ap.parse_args(["compare", str(store[0]), "--reference", "finetune", "--metric-pattern",
                          r"acc[_/]task_(?P<task>\d+)", "--out", str(tmp_path / "report")])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "6 run(s) read" in out and "(mlflow)" in out and "ACC: er − finetune" in out
    assert (tmp_path / "report" / "results.json").exists()


@pytest.mark.parametrize("folder, ref", [("mlflow/metric_history.csv", "finetune"), ("wandb", "finetune")])
def test_shipped_examples(folder, ref):
    rs = read_runs(EXAMPLES / folder)
    assert sorted(rs.methods) == ["er", "finetune"] and len(rs) == 6
    res = compare(rs, reference=ref)
    assert "ACC: er − finetune" in res["table"].index


def test_bad_tracker_input_named(tmp_path):
    f = tmp_path / "h.json"  # run.history(pandas=False) dumped as a JSON list
    f.write_text(json.dumps([{"_step": 0, "val_acc_task_0": 0.9, "test_acc_task_0": 0.8},
                             {"_step": 1, "val_acc_task_0": 0.7, "test_acc_task_0": 0.6, "val_acc_task_1": 0.9,
                              "test_acc_task_1": 0.85}]))
    cfg = {"method": "er", "seed": 3}
    with pytest.raises(ValueError, match=r"h\.json' \(run er seed 3\): fields val_acc_task_0 and test_acc_task_0 "
                                         r"both name task 0; choose one with metric_pattern"):
        read_wandb_history(f, config=cfg)
    r = read_wandb_history(f, config=cfg, metric_pattern=r"test_acc_task_(?P<task>\d+)").runs[0]
    np.testing.assert_array_equal(r.R, [[0.8, np.nan], [0.6, 0.85]])
    assert "other metric(s) read, not used: val_acc_task_0, val_acc_task_1" in r.used
    f.write_text(json.dumps([{"_step": 0, "acc_task_0": "high"}]))
    with pytest.raises(ValueError, match=r"h\.json' line 1 \(run er seed 3\): field acc_task_0 = 'high' is not a num"):
        read_wandb_history(f, config=cfg)
    with pytest.raises(ValueError, match=r"metric_pattern 'acc_\(.*\)' has no named group 'task'"):
        read_wandb_history(f, config=cfg, metric_pattern=r"acc_(\d+)")
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['metric_patern'\]"):
        read_runs(f, metric_patern="x")
    # an MLflow metric file with a line that is not '<timestamp> <value> <step>'
    d = tmp_path / "mlruns" / "1" / "r1"
    (d / "metrics").mkdir(parents=True)
    (d / "params").mkdir()
    (d / "meta.yaml").write_text("run_id: r1\nrun_name: x\nlifecycle_stage: active\n")
    (d.parent / "meta.yaml").write_text("experiment_id: '1'\nname: e\nlifecycle_stage: active\n")
    (d / "params" / "method").write_text("er")
    (d / "params" / "seed").write_text("0")
    (d / "metrics" / "acc_task_0").write_text("1 0.9 0\n2 zero 1\n")
    with pytest.raises(ValueError, match=r"acc_task_0' line 2 \(run r1, er seed 0\): field acc_task_0: expected "
                                         r"'<timestamp> <value> <step>', got '2 zero 1'"):
        read_runs(tmp_path / "mlruns")


def test_local_wandb_run_folder_is_named_not_read_as_a_pycil_log(tmp_path):
    """A local wandb/run-*/ folder holds its history only in the binary .wandb log (and .log files that
    used to fall through to the PyCIL reader): the error says so and how to export it."""
    run = tmp_path / "wandb" / "run-20260101_000000-abc123"
    (run / "files").mkdir(parents=True)
    (run / "run-abc123.wandb").write_bytes(b"\x00binary")
    (run / "logs").mkdir()
    (run / "logs" / "debug.log").write_text("2026-01-01 00:00:00,000 INFO    MainThread:1 [wandb_init.py:1] x\n")
    (run / "files" / "output.log").write_text("epoch 1\n")
    with pytest.raises(ValueError, match=r"local W&B run folder \(run-abc123.wandb\).*history\(\)\.to_csv"):
        read_runs(tmp_path / "wandb")
