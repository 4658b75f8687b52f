"""``clkit export --to mlflow|tensorboard`` (issue 42): two fabricated runs written to a real MLflow
file store and real TensorBoard event files, read back with mlflow's and tensorboard's own readers."""

import json

import numpy as np
import pytest

from clkit.cli import main

pytest.importorskip("mlflow", reason="the trackers extra: pip install 'clkit[trackers]'")
pytest.importorskip("tensorboard", reason="the trackers extra: pip install 'clkit[trackers]'")

VERDICT = {"comparison": "A_AUC: ewc − naive", "decision": "higher", "effect": 0.12, "ci_low": 0.05,
           "ci_high": 0.2, "p": 0.01, "n": 5, "a": [1, 2], "b": [0, 1], "wording": "ewc higher"}


def _fabricate(root, name, seed, acc):
    import matplotlib.pyplot as plt

    d = root / name
    (d / "figures").mkdir(parents=True)
    rec = {"notebook": "03_temporal_metrics", "figures": ["curve.png"],
           "manifest": {"clkit": "0.1.0", "git": {"commit": "abc123", "dirty": False}, "python": "3.11"},
           "params": {"seed": seed, "learners": ["naive", "ewc"], "opt": {"lr": 0.1}, "long": "x" * 7000},
           "results": {"acc": acc, "metrics": {"order": {"ewc": {"A_AUC": acc / 2}}}, "text": "words",
                       "flag": True, "verdicts": [VERDICT]}}
    (d / "results.json").write_text(json.dumps(rec))
    (d / "run.json").write_text(json.dumps({"notebook": "03_temporal_metrics", "params_set": "smoke",
                                            "status": "ok", "runtime_s": 2.5, "finished": "2026-01-02T03:04:05"}))
    plt.imsave(d / "figures" / "curve.png", np.linspace(0, 1, 12).reshape(3, 4))
    return d


@pytest.fixture
def runs(tmp_path):
    root = tmp_path / "runs"
    _fabricate(root, "seed0", 0, 0.5)
    _fabricate(root, "seed1", 1, 0.7)
    return root


def test_mlflow_store_read_back(runs, tmp_path, monkeypatch, capsys):
    from mlflow.tracking import MlflowClient

    store = tmp_path / "mlruns"
    assert main(["export", str(runs), "--to", "mlflow", "--out", str(store)]) == 0
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient(tracking_uri=store.as_uri())
    exp = client.get_experiment_by_name("03_temporal_metrics")
    found = {r.info.run_name: r for r in client.search_runs([exp.experiment_id])}
    assert sorted(found) == ["seed0", "seed1"]
    r = found["seed1"]
    assert r.info.status == "FINISHED"
    assert r.data.params["seed"] == "1" and r.data.params["learners"] == '["naive", "ewc"]'
    assert r.data.params["opt.lr"] == "0.1" and len(r.data.params["long"]) == 6000
    assert r.data.params["long"].endswith("params.json artifact]")
    assert r.data.metrics["acc"] == 0.7 and r.data.metrics["metrics.order.ewc.A_AUC"] == 0.35
    # readable names (issue 55: 'verdict.A_AUC_ ewc _ naive.effect'), and p, the interval and the decision too
    assert r.data.metrics["runtime_s"] == 2.5 and r.data.metrics["verdict.A_AUC / ewc - naive.effect"] == 0.12
    assert r.data.metrics["verdict.A_AUC / ewc - naive.p"] == 0.01
    assert r.data.metrics["verdict.A_AUC / ewc - naive.ci_low"] == 0.05
    assert r.data.metrics["verdict.A_AUC / ewc - naive.finding"] == 1.0
    assert r.data.tags["verdict.A_AUC / ewc - naive.decision"] == "higher"
    assert "text" not in r.data.metrics and "flag" not in r.data.metrics
    tags = r.data.tags
    assert (tags["clkit.notebook"], tags["clkit.params_set"], tags["clkit.status"]) == \
        ("03_temporal_metrics", "smoke", "ok")
    assert tags["clkit.git_commit"] == "abc123" and tags["clkit.version"] == "0.1.0"
    arts = {a.path for a in client.list_artifacts(r.info.run_id)}
    assert {"params.json", "verdicts.json", "verdicts.csv", "figures", "clkit"} <= arts
    assert [a.path for a in client.list_artifacts(r.info.run_id, "figures")] == ["figures/curve.png"]
    local = client.download_artifacts(r.info.run_id, "params.json", str(tmp_path))
    assert len(json.loads(open(local).read())["long"]) == 7000
    out = capsys.readouterr().out
    assert "2 written" in out
    assert f"open it with: MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri {store.as_uri()}" in out

    # again: nothing duplicated; a changed run replaces its old one
    assert main(["export", str(runs), "--to", "mlflow", "--out", str(store)]) == 0
    assert "2 unchanged" in capsys.readouterr().out
    rec = json.loads((runs / "seed0" / "results.json").read_text())
    rec["results"]["acc"] = 0.9
    (runs / "seed0" / "results.json").write_text(json.dumps(rec))
    assert main(["export", str(runs), "--to", "mlflow", "--out", str(store)]) == 0
    assert "1 replaced, 1 unchanged" in capsys.readouterr().out
    again = client.search_runs([exp.experiment_id])
    assert sorted(r.info.run_name for r in again) == ["seed0", "seed1"]
    assert {r.info.run_name: r.data.metrics["acc"] for r in again}["seed0"] == 0.9


def test_tensorboard_events_read_back(runs, tmp_path, capsys):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tb = tmp_path / "tb"
    assert main(["export", str(runs), "--to", "tensorboard", "--out", str(tb)]) == 0
    assert sorted(p.name for p in tb.iterdir()) == ["seed0", "seed1"]
    acc = EventAccumulator(str(tb / "seed0"), size_guidance={"images": 0, "scalars": 0, "tensors": 0})
    acc.Reload()
    tags = acc.Tags()
    assert {"acc", "metrics.order.ewc.A_AUC", "runtime_s"} <= set(tags["scalars"])
    assert acc.Scalars("acc")[0].value == pytest.approx(0.5)
    assert tags["images"] == ["figures/curve"]
    img = acc.Images("figures/curve")[0]
    assert (img.height, img.width) == (3, 4)
    assert img.encoded_image_string == (runs / "seed0" / "figures" / "curve.png").read_bytes()
    assert "verdicts/text_summary" in tags["tensors"]
    assert "_hparams_/session_start_info" in acc.summary_metadata
    capsys.readouterr()
    assert main(["export", str(runs), "--to", "tensorboard", "--out", str(tb)]) == 0
    assert "2 unchanged" in capsys.readouterr().out
    assert sorted(p.name for p in tb.iterdir()) == ["seed0", "seed1"]


@pytest.mark.parametrize("argv, words", [
    (["--to", "wandb"], "to must be one of 'mlflow', 'tensorboard', got 'wandb'"),
    (["--to", "mlflow", "--runs-missing"], None),
])
def test_bad_input_is_one_line_exit_2(runs, tmp_path, capsys, argv, words):
    if words is None:   # a folder without runs
        empty = tmp_path / "empty"
        empty.mkdir()
        assert main(["export", str(empty), "--to", "mlflow", "--out", str(tmp_path / "m")]) == 2
        words = "no results.json found"
    else:
        assert main(["export", str(runs), *argv, "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


def test_missing_extra_names_the_install_command(runs, tmp_path, monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "mlflow", None)
    monkeypatch.setitem(sys.modules, "mlflow.tracking", None)
    monkeypatch.setitem(sys.modules, "mlflow.entities", None)
    assert main(["export", str(runs), "--to", "mlflow", "--out", str(tmp_path / "m")]) == 2
    assert "pip install 'clkit[trackers]'" in capsys.readouterr().err
