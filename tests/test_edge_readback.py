"""EDGE's loop (issue 41): ``clkit edge orders`` -> a trainer elsewhere -> ``clkit edge analyse``.

(a) from ``edge orders``' manifest through fabricated per-order accuracies (tidy CSV, long matrix
CSV, mammoth logs listed in a runs.csv) to a report; (b) given notebook 02's own per-order table
(its ground truth trained by its own functions, exact and sampled), the read-back analysis equals
the notebook's calls exactly; (c) bad inputs are refused naming file, run / order and field.
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clkit.cli import main
from clkit.edge import enumerate_sequences, prototype_similarity
from clkit.edge import report
from clkit.edge.readback import analyse_orders, load_manifest, order_manifest, read_order_results
from clkit.edge.truth import GroundTruth

NAMES = ["apple", "pear", "car", "truck", "dog", "cat"]
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "data" / "edge_loop"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def fabricate(manifest_csv, seeds=(0, 1), methods=("l2p", "simplecil")):
    """Accuracies (fractions) of every order of a manifest: a fixed function of the order plus seed noise."""
    m = pd.read_csv(manifest_csv)
    rng = np.random.default_rng(1)
    w = rng.normal(size=len(m["class_order"][0].split()))
    rows = []
    for k, meth in enumerate(methods):
        for _, r in m.iterrows():
            order = np.array(r["class_order"].split(), dtype=int)
            base = 0.6 + 0.02 * (k + 1) * (w[order] * np.arange(1, len(order) + 1)).sum() / len(order)
            rows += [{"method": meth, "order_id": r["order_id"], "seed": s,
                      "accuracy": round(base + rng.normal(0, 0.003), 5)} for s in seeds]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def orders_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("loop")
    (d / "names.txt").write_text("\n".join(NAMES) + "\n")
    assert main(["edge", "orders", str(d / "names.txt"), "--tasks", "3", "--encoder", "glove", "--truth", "exact",
                 "--num-random", "500", "--num-draws", "10", "--out", str(d / "o")]) == 0
    return d


# -- (a) the loop ------------------------------------------------------------------------------

def test_orders_writes_a_manifest_of_every_order_with_id_and_kind(orders_dir):
    res = json.loads((orders_dir / "o" / "orders.json").read_text())
    m = res["manifest"]
    assert m["protocols"]["RS"] == ["rs_seed0", "rs_seed42", "rs_seed1993"]
    assert m["protocols"]["EDGE"] == ["edge_hard", "rs_seed0", "edge_easy"]
    by_id = {o["order_id"]: o for o in m["orders"]}
    assert by_id["edge_hard"]["tasks"] == res["orders"]["hard"]["tasks"]
    assert {"edge-hard", "truth"} <= set(by_id["edge_hard"]["kinds"])
    assert len(m["orders"]) == 90 and sorted(o["position"] for o in m["orders"]) == list(range(90))
    csv = pd.read_csv(orders_dir / "o" / "orders_manifest.csv")
    assert list(csv.columns) == ["order_id", "kinds", "position", "class_order"] and len(csv) == 90


def test_loop_from_orders_to_a_report(orders_dir, tmp_path, capsys):
    acc = fabricate(orders_dir / "o" / "orders_manifest.csv")
    acc.to_csv(tmp_path / "acc.csv", index=False)
    code, out, err = run(capsys, "edge", "analyse", orders_dir / "o", tmp_path / "acc.csv", "--out", tmp_path / "a")
    assert code == 0, err
    assert "360 runs read" in out and "The paper's claim" in out
    rec = json.loads((tmp_path / "a" / "results.json").read_text())
    assert rec["notebook"] == "02_edge" and rec["params"]["source"] == "clkit edge analyse"
    assert {"protocols", "verdicts", "draws", "structure", "bounds", "text"} <= set(rec["results"])
    assert len(rec["results"]["verdicts"]) == 2 * 2 + 3 * 2 + 4      # primary, exploratory, controls
    assert sorted(rec["figures"]) == ["bounds_rs_vs_edge.png", "distributions_rs_vs_edge.png",
                                      "similarity_vs_accuracy.png"]
    assert all((tmp_path / "a" / "figures" / f).stat().st_size > 0 for f in rec["figures"])
    assert (tmp_path / "a" / "report.md").read_text().startswith("**Ground truth.** Exact ground truth")
    listing = pd.read_csv(tmp_path / "a" / "runs_read.csv")
    assert len(listing) == 360 and listing["source"].str.contains("acc.csv line").all()
    # the per-order mean over seeds, in percent, is what the truth holds
    truth = rec["results"]["true_accuracy"]["l2p"]
    m = load_manifest(orders_dir / "o")
    first = next(o["order_id"] for o in m["orders"] if o["position"] == 0)
    assert truth[0] == pytest.approx(100 * acc[(acc.method == "l2p") & (acc.order_id == first)].accuracy.mean(),
                                     abs=1e-4)


def test_matrices_and_framework_logs_read_back_like_the_tidy_table(orders_dir, tmp_path):
    """A long matrix CSV (clkit compare's format) and mammoth logs listed in a runs.csv give the same table."""
    m = load_manifest(orders_dir / "o")
    rng = np.random.default_rng(0)
    long_rows, tidy_rows, runs_rows = [], [], []
    (tmp_path / "mammoth").mkdir()
    for n, o in enumerate(m["orders"]):
        R = np.tril(rng.uniform(0.3, 0.9, (3, 3)))
        R[np.triu_indices(3, 1)] = np.nan
        long_rows += [{"method": "der", "seed": 0, "order": o["order_id"], "i": i, "j": j, "accuracy": R[i, j]}
                      for i in range(3) for j in range(i + 1)]
        tidy_rows.append({"order_id": o["order_id"], "seed": 0, "method": "der", "accuracy": R[2].mean(),
                          "incremental": np.mean([R[i, :i + 1].mean() for i in range(3)])})
        line = {"model": "der", "seed": 0, **{f"accmean_task{i + 1}": 100 * R[i, :i + 1].mean() for i in range(3)},
                **{f"accuracy_{j + 1}_task{i + 1}": 100 * R[i, j] for i in range(3) for j in range(i + 1)}}
        f = tmp_path / "mammoth" / f"{o['order_id']}.pyd"
        f.write_text(str(line) + "\n")
        runs_rows.append({"file": f.name, "method": "der", "seed": 0, "order": o["order_id"], "format": "mammoth"})
    pd.DataFrame(long_rows).to_csv(tmp_path / "long.csv", index=False)
    pd.DataFrame(runs_rows).to_csv(tmp_path / "mammoth" / "runs.csv", index=False)
    tidy = pd.DataFrame(tidy_rows)
    for src in (tmp_path / "long.csv", tmp_path / "mammoth" / "runs.csv"):
        for metric, col in (("final", "accuracy"), ("incremental", "incremental")):
            table, listing = read_order_results(src, m, metric=metric)
            assert len(listing) == 90 and listing["used"].str.contains(metric).all()
            np.testing.assert_allclose(table["accuracy"].to_numpy(), 100 * tidy[col].to_numpy(), atol=1e-9)


# -- (b) equal to notebook 02's analysis on its own table ------------------------------------------

@pytest.fixture(scope="module")
def nb02():
    """Notebook 02's objects on a tiny enumerable setting, computed with its own functions."""
    from clkit.edge.learners import LearnerConfig

    C, rng = 6, np.random.default_rng(0)
    centres = rng.normal(0.0, 2.0, size=(C, 1, 8))

    def blobs(per_class):            # C classes of Gaussian blobs, (C, per_class, 8) float32
        return (centres + rng.normal(size=(C, per_class, 8))).astype("float32")

    train, test = blobs(20), blobs(10)
    data = {"x_train": train, "x_test": test, "f_train": train, "f_test": test}
    names = [f"class{i}" for i in range(C)]
    K, seeds, seed = 3, [0, 42, 1993], 0
    sim = prototype_similarity(data["f_train"], names)
    ext = report.extreme_sequences(sim, K, names, num_random=200, seed=seed)
    all_seqs = enumerate_sequences(C, K)
    GT = report.ground_truth(data, all_seqs, ["finetune", "ncm"], seed=seed, progress=False,
                             config=LearnerConfig(hidden=8, epochs=1, batch_size=10, lr=0.05))
    img = prototype_similarity(data["x_train"].reshape(C, 20, -1) ** 2, names)     # a second similarity (EDGE-img)
    return dict(sim=sim, img=img, hard=ext["hard"], easy=ext["easy"], names=names, K=K, seeds=seeds, seed=seed,
                all_seqs=all_seqs, GT=GT)


def notebook_cells(GT, nb, num_draws):
    """Sections 5-7 of notebook 02, its calls and arguments (EDGE-img included, as the notebook runs it)."""
    N, K, seed, all_seqs = len(nb["names"]), nb["K"], nb["seed"], nb["all_seqs"]
    seqs = report.protocol_sequences(N, K, nb["hard"], nb["easy"], nb["img"], seeds=nb["seeds"], edge_num_random=1)
    ties = report.protocol_ties(all_seqs, seqs, {"EDGE": nb["sim"].matrix, "EDGE-img": nb["img"].matrix})
    ev = report.evaluate_protocols(GT, all_seqs, seqs, ties=ties, num_bins=10, seed=seed)
    S_all = __import__("clkit.edge", fromlist=["sequence_scores"]).sequence_scores(nb["sim"], all_seqs)
    V = report.edge_verdicts(GT, all_seqs, nb["hard"], nb["easy"], num_draws=num_draws, num_bins=10, seed=seed,
                             scores=S_all)
    D = report.draws_report(GT, all_seqs, nb["hard"], nb["easy"], scores=S_all, num_bins=10, seed=seed)
    struct = report.structure_report(GT, S_all, all_seqs, nb["hard"], nb["easy"])
    truth_values = GT.population_values()
    corr = report.correlations(S_all[GT.population], truth_values)
    rank_rows, rank_err = report.rankings(truth_values, ev["values"], ev["protocols"], ev["variants"])
    return dict(ev=ev, V=V, D=D, struct=struct, corr=corr, rank_err=rank_err, truth_values=truth_values)


def table_of(GT, manifest, tmp_path):
    """02's per-order table as a user would hand it back: one row per learner and manifest order (percent)."""
    rows = [{"method": name, "order_id": o["order_id"], "seed": 0, "accuracy": repr(float(v[o["position"]]))}
            for name, v in GT.values.items() for o in manifest["orders"]]
    f = tmp_path / "nb02.csv"
    pd.DataFrame(rows).to_csv(f, index=False)
    return read_order_results(f, manifest, percent=True)[0]


def assert_same(a, b):
    """The read-back analysis ``a`` equals the notebook's ``b`` exactly on RS and EDGE."""
    for key, row in b["ev"]["table"].items():
        if key[1] != "EDGE-img":
            assert a["ev"]["table"][key] == row, key
    assert a["ev"]["log"]["protocols"] == {k: v for k, v in b["ev"]["log"]["protocols"].items()
                                           if not k.endswith("EDGE-img")}
    assert [v.to_dict() for v in a["V"]["verdicts"]] == [v.to_dict() for v in b["V"]["verdicts"]]
    assert a["V"]["summary"] == b["V"]["summary"] and a["V"]["checks"] == b["V"]["checks"]
    pd.testing.assert_frame_equal(a["D"]["frame"], b["D"]["frame"])
    assert a["D"]["text"] == b["D"]["text"]
    pd.testing.assert_frame_equal(a["struct"]["table"], b["struct"]["table"])
    assert a["struct"]["text"] == b["struct"]["text"] and a["struct"]["log"] == b["struct"]["log"]
    assert a["corr"] == b["corr"]
    assert {p: e for p, e in a["rank_err"].items()} == {p: b["rank_err"][p] for p in ("RS", "EDGE")}
    for n, v in b["truth_values"].items():
        np.testing.assert_array_equal(a["truth_values"][n], v)


@pytest.mark.parametrize("truth", ["exact", "sample"])
def test_readback_equals_notebook_02_on_its_own_table(nb02, tmp_path, truth):
    nb = nb02
    m = order_manifest(nb["names"], nb["K"], nb["sim"], hard=nb["hard"], easy=nb["easy"], rs_seeds=nb["seeds"],
                       truth=truth, truth_samples=20, seed=nb["seed"], num_draws=8)
    exact = nb["GT"]
    if truth == "exact":
        GT = exact
    else:       # the notebook's sampled truth: an order's accuracy is the same as in the exact one (prefix keys)
        GT = GroundTruth(lambda s: {n: v[exact.index(s)] for n, v in exact.values.items()}, nb["all_seqs"],
                         mode="sample", samples=20, seed=nb["seed"])
    expected = notebook_cells(GT, nb, num_draws=8)
    got = analyse_orders(table_of(exact, m, tmp_path), m, figures=False)
    assert_same(got["truth"], expected)
    if truth == "sample":      # the sample plus what the analysis looks up, nothing else, and it sufficed
        kinds = [set(o["kinds"]) for o in m["orders"]]
        assert sum("truth" in k for k in kinds) == 20 and any(k == {"lookup"} for k in kinds)
        assert got["log"]["truth_population"] == 20 and got["log"]["truth_mode"] == "sample"


# -- (c) bad inputs --------------------------------------------------------------------------------

def test_bad_inputs_are_refused_naming_file_run_and_field(orders_dir, tmp_path, capsys):
    m = load_manifest(orders_dir / "o")
    acc = fabricate(orders_dir / "o" / "orders_manifest.csv", methods=("l2p",))
    f = tmp_path / "acc.csv"

    def refused(frame, match, **kw):
        frame.to_csv(f, index=False)
        with pytest.raises(ValueError, match=match):
            read_order_results(f, m, **kw)

    bad = acc.copy()
    bad.loc[5, "order_id"] = "rs_seed7"
    refused(bad, r"acc.csv line 7 \(run l2p order rs_seed7 seed 1\): field order_id = 'rs_seed7' is not an order")
    refused(acc.drop(index=[3]), r"method 'l2p' order '\w+' misses field seed 1 \(its other orders have seeds 0, 1\)")
    refused(acc[acc.order_id != "edge_easy"], r"method 'l2p' has no run of order 'edge_easy' \(field order_id")
    pct = acc.assign(accuracy=100 * acc.accuracy)
    refused(pct, r"line 2 \(run l2p order edge_hard seed 0\): field accuracy = [\d.]+ is outside \[0, 1\].*"
                 r"looks like percent")
    refused(acc, r"every value is at most 1 percent with percent=True; these look like fractions", percent=True)
    mixed = pct.copy()
    mixed.loc[7, "accuracy"] = acc.loc[7, "accuracy"]
    refused(mixed, r"line 9 \(run l2p order \w+ seed 1\): field accuracy = [\d.]+ percent among percentages of "
                   r"median [\d.]+: a fraction among percentages", percent=True)
    refused(pd.concat([acc, acc.iloc[:1]]), r"line 182 \(run l2p order edge_hard seed 0\): field seed: the run is "
                                            r"given twice \(first at .*line 2\)")
    refused(acc.drop(columns=["seed"]), r"has no column 'seed'")
    refused(acc.assign(accuracy="x"), r"field accuracy = 'x' is not a number")
    # a long CSV run without its order
    pd.DataFrame({"method": "a", "seed": 0, "i": [0, 1, 1], "j": [0, 0, 1], "accuracy": 0.5}).to_csv(f, index=False)
    with pytest.raises(ValueError, match=r"\(run a seed 0\): field order is empty"):
        read_order_results(f, m)
    with pytest.raises(ValueError, match=r"metric must be one of \['final', 'incremental'\], got 'last'"):
        read_order_results(f, m, metric="last")
    with pytest.raises(TypeError, match="table must be a DataFrame with columns"):
        analyse_orders({"a": 1}, m)
    # the command says it in one line, exit status 2
    code, _, err = run(capsys, "edge", "analyse", orders_dir / "o", tmp_path / "none.csv", "--out", tmp_path / "x")
    assert code == 2 and "does not exist" in err
    code, _, err = run(capsys, "edge", "analyse", tmp_path, f, "--out", tmp_path / "x")
    assert code == 2 and "orders.json' does not exist" in err
    with pytest.raises(ValueError, match=r"truth='exact': 100 classes in 10 tasks have .* use truth='none'"):
        order_manifest([str(i) for i in range(100)], 10, np.eye(100), hard=np.arange(100).reshape(10, 10),
                       easy=np.arange(100).reshape(10, 10)[::-1], truth="exact")


def test_shipped_example_analyses(tmp_path, capsys):
    """examples/data/edge_loop: the names and accuracies docs/02_edge.md's commands use."""
    code, _, err = run(capsys, "edge", "orders", EXAMPLE / "names.txt", "--tasks", 3, "--encoder", "glove", "--truth",
                       "exact", "--out", tmp_path / "o")
    assert code == 0, err
    code, out, err = run(capsys, "edge", "analyse", tmp_path / "o", EXAMPLE / "accuracies.csv", "--out", tmp_path / "r")
    assert code == 0, err
    assert "360 runs read" in out
    rec = json.loads((tmp_path / "r" / "results.json").read_text())
    assert rec["results"]["methods"] == ["method_a", "method_b"] and rec["results"]["truth_mode"] == "exact"
