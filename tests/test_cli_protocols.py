"""``clkit edge|metrics|drift|taskify``: outputs equal the library functions on the same inputs."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from clkit.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "data"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_metrics_cl_matches_clkit_metrics(tmp_path, capsys):
    from clkit import metrics as mt

    R = np.array([[0.9, np.nan, np.nan], [0.6, 0.8, np.nan], [0.5, 0.7, 0.85]])
    f = tmp_path / "R.csv"
    pd.DataFrame(R).to_csv(f, index=False, na_rep="")
    code, out, _ = run(capsys, "metrics", "cl", f, "--header", "--out", tmp_path / "o")
    assert code == 0 and "forgetting" in out
    res = json.loads((tmp_path / "o" / "metrics_cl.json").read_text())
    assert res["acc"] == pytest.approx((0.5 + 0.7 + 0.85) / 3)
    assert res["bwt"] == pytest.approx(((0.5 - 0.9) + (0.7 - 0.8)) / 2) == pytest.approx(mt.backward_transfer(R))
    assert res["forgetting"] == pytest.approx(mt.forgetting(R))
    csv = pd.read_csv(tmp_path / "o" / "metrics_cl.csv")
    assert csv.set_index("metric").loc["bwt", "value"] == pytest.approx(res["bwt"])
    code, out, _ = run(capsys, "metrics", "cl", f, "--header", "--error")
    assert code == 0
    code, _, err = run(capsys, "metrics", "cl", f, "--header", "--baseline", "0.1,0.1")
    assert code == 2 and "--baseline has 2 values; R has 3 tasks" in err


def test_metrics_temporal_matches_summarize_learner(tmp_path, capsys):
    from clkit import temporal as tm
    from clkit.data.user import load_matrix_csv

    f = EXAMPLES / "A.csv"
    code, out, _ = run(capsys, "metrics", "temporal", f, "--delta", 0.9, "--epsilon", 0.02, "--lam", 0.15, "--n", 2,
                       "--out", tmp_path)
    assert code == 0 and "TAS" in out
    res = json.loads((tmp_path / "metrics_temporal.json").read_text())
    s = tm.summarize_learner(load_matrix_csv(f), delta=0.9, epsilon=0.02, lam=0.15, n=2)
    assert res["tas"] == pytest.approx(s["tas"]) and res["dh"] == pytest.approx(s["dh"])
    assert res["per_period"]["sh"] == s["per_period"]["sh"]
    table = pd.read_csv(tmp_path / "metrics_temporal.csv")
    assert table["id"].tolist() == pytest.approx(s["per_period"]["id"])
    bad = tmp_path / "bad.csv"
    bad.write_text("0.9,0.8\n0.7\n")
    code, _, err = run(capsys, "metrics", "temporal", bad)
    assert code == 2 and "ragged" in err and "bad.csv" in err
    code, _, err = run(capsys, "metrics", "temporal", f, "--delta", 2)
    assert code == 2 and "--delta" in err


def test_drift_stream_from_labels_and_graph(tmp_path, capsys):
    from clkit import drift

    y = np.repeat(np.arange(4), 15)
    np.save(tmp_path / "y.npy", y)
    code, out, _ = run(capsys, "drift", "stream", tmp_path / "y.npy", "--sigma", 1.5, "--batch-size", 5, "--seed", 3,
                       "--out", tmp_path / "o")
    assert code == 0 and "overlap index" in out
    res = json.loads((tmp_path / "o" / "stream.json").read_text())
    ref = drift.gaussian_stream([np.arange(30), np.arange(30, 60)], 5, 1.5, seed=3)
    assert np.array_equal(res["batches"], ref.batches) and np.array_equal(res["counts"], ref.counts)
    assert res["overlap_index"] == pytest.approx(drift.overlap_index(ref.weights))
    table = pd.read_csv(tmp_path / "o" / "stream.csv")
    assert table[["task_0", "task_1"]].to_numpy().tolist() == ref.counts.tolist()
    from torch_geometric.data import Data

    torch.save(Data(x=torch.randn(60, 2), edge_index=torch.tensor([[0, 1], [1, 0]]), y=torch.as_tensor(y)),
               tmp_path / "g.pt")
    code, _, _ = run(capsys, "drift", "stream", tmp_path / "g.pt", "--setting", "hard", "--batch-size", 5,
                     "--out", tmp_path / "g")
    res = json.loads((tmp_path / "g" / "stream.json").read_text())
    assert code == 0 and res["setting"] == "hard" and res["num_batches"] == 12
    np.save(tmp_path / "one.npy", np.zeros(10, int))
    code, _, err = run(capsys, "drift", "stream", tmp_path / "one.npy")
    assert code == 2 and "latent task" in err


def test_taskify_bps_matches_bps_over_series(tmp_path, capsys):
    from clkit import taskification as tk
    from clkit.data.user import load_stream_table

    rng = np.random.default_rng(0)
    v = np.r_[rng.normal(0, 1, 120), rng.normal(2, 1, 120)]
    f = tmp_path / "s.csv"
    pd.DataFrame({"step": range(240), "v": v}).to_csv(f, index=False)
    code, out, _ = run(capsys, "taskify", "bps", f, "--time-column", "step", "--window", "30,60", "--delta", 4,
                       "--samples", 10, "--out", tmp_path / "o")
    assert code == 0 and "D_prof" in out
    res = json.loads((tmp_path / "o" / "bps.json").read_text())
    data = load_stream_table(f, time_column="step")
    ref = tk.bps_over_series(data.values, tk.fixed_windows(240, 30), 4, 10, 0)
    assert res["windows"]["30"]["bps"] == pytest.approx(ref["bps_mean"])
    assert res["windows"]["60"]["num_tasks"] == 4
    pa = tk.taskification_profile(data.values[0], tk.fixed_windows(240, 30), 2)
    pb = tk.taskification_profile(data.values[0], tk.fixed_windows(240, 60), 2)
    assert res["d_prof"]["30|60"] == pytest.approx(tk.profile_distance(pa, pb))
    code, _, err = run(capsys, "taskify", "bps", f, "--window", "x", "--delta", 4)
    assert code == 2 and "--window must be comma-separated numbers" in err
    code, _, err = run(capsys, "taskify", "bps", f, "--value-columns", "nope", "--window", "30", "--delta", 4)
    assert code == 2 and "['nope'] not in" in err


def test_edge_orders_from_a_class_name_file(tmp_path, capsys):
    from clkit import edge

    names = ["apple", "pear", "car", "truck", "dog", "cat"]
    f = tmp_path / "names.yaml"
    f.write_text("".join(f"- {n}\n" for n in names))
    code, out, _ = run(capsys, "edge", "orders", f, "--tasks", 3, "--encoder", "glove", "--num-random", 500,
                       "--seed", 1, "--out", tmp_path / "o")
    assert code == 0 and "hard" in out
    res = json.loads((tmp_path / "o" / "orders.json").read_text())
    sim = edge.class_similarity(names, "glove")
    hard = edge.hard_sequence(sim, 3)
    assert res["orders"]["hard"]["tasks"] == np.asarray(hard).tolist()
    assert res["orders"]["hard"]["S"] == pytest.approx(edge.sequence_score(sim, hard))
    assert res["orders"]["hard"]["S"] <= res["orders"]["random"]["S"] <= res["orders"]["easy"]["S"]
    assert res["orders"]["random"]["tasks"] == edge.random_sequences(6, 3, seeds=[1])[0].tolist()
    assert sorted(res["orders"]["easy"]["class_order"]) == list(range(6))
    order, pos = res["orders"]["easy"]["class_order"], res["orders"]["easy"]["position_of_class"]
    assert [pos[c] for c in order] == list(range(6))
    csv = pd.read_csv(tmp_path / "o" / "orders.csv")
    assert list(csv["order"]) == ["hard", "easy", "random"]
    code, _, err = run(capsys, "edge", "orders", f, "--tasks", 4)
    assert code == 2 and "num_tasks" in err
