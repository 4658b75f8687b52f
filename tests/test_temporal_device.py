"""Notebook 03 on the device it is given: its learners, A(t, tau), the verdict seeds, the budget and the
paper rehearsal.

No GPU is needed for most of it: on ``torch.device("meta")`` (shapes, no values) under
:class:`clkit.device.DeviceAudit`, any tensor made on the CPU instead of the device and any value
read inside a step fails, as it would on a GPU. Every learner the notebook trains (erm, finetune,
ewc, si, agem: MLPs with their clkit strategies) runs there, through ``accuracy_matrix`` and the
verdicts' ``seed_metrics``; nothing of theirs lacks a meta kernel. What meta cannot check: the
numbers (they are NaN there; the CPU tests compare them with the per-cell reference) and speed.
"""

import json
import time

import numpy as np
import pytest
import torch
import yaml

import clkit.temporal as tm
import clkit.temporal.verdicts as tmv
from clkit import device as dv
from clkit.data.temporal import make_drifting_gaussians
from clkit.run import run_notebook
from clkit.temporal import budget as tb
from clkit.temporal import experiment as tex
from clkit.temporal import rehearsal as trh

META = torch.device("meta")
NB = "03_temporal_metrics"
TRAIN = dict(epochs=2, hidden=(8,), lr=5e-3, batch_size=8)


@pytest.fixture(scope="module")
def stream():
    return make_drifting_gaussians(4, 40, drift=0.4, seed=0)


# ------------------------------------------------------------------------------------- library level

@pytest.mark.parametrize("learner", tm.LEARNERS)
def test_every_learner_fills_A_on_a_non_cpu_device(stream, learner, monkeypatch):
    """Each learner trains through the periods on meta (periods moved once, before), a row of A read
    once per training period, never a cell by cell ``evaluate``."""
    tasks = tm.period_tasks(stream, META)
    assert all(t.x.device == META and t.y.device == META for t in (*tasks.train, *tasks.test))
    rows = []
    real_row = tex.accuracy_row
    monkeypatch.setattr(tex, "accuracy_row", lambda s, tests: rows.append(len(tests)) or real_row(s, tests))
    monkeypatch.setattr("clkit.strategies.base.Strategy.evaluate",
                        lambda *a, **k: pytest.fail("A is read per row, not per cell"))
    moved = []
    real_to = type(tasks.train[0]).to
    monkeypatch.setattr(type(tasks.train[0]), "to", lambda self, d, **k: (
        moved.append(self) if self.y.device != dv.as_device(d) else None) or real_to(self, d, **k))
    with dv.DeviceAudit(META):
        A = tm.accuracy_matrix(tasks, learner, backward=True, **TRAIN)
    assert A.shape == (4, 4) and np.isnan(A).all()
    assert rows == [4, 4, 4, 4] and moved == []


def test_accuracy_row_reads_the_device_once(stream, monkeypatch):
    s = tm.build_learner("finetune", 8, 2, seed=0, hidden=(8,))
    tasks = tm.period_tasks(stream, "cpu")
    reads = []
    real = dv.to_host
    monkeypatch.setattr(dv, "to_host", lambda x: reads.append(x) or real(x))
    row = tm.accuracy_row(s, tasks.test)
    assert len(reads) == 1 and row.shape == (4,) and row.dtype == np.float64
    assert row.tolist() == [s.evaluate(t) for t in tasks.test]


def test_verdict_seeds_train_on_a_non_cpu_device(stream):
    tasks = tm.period_tasks(stream, META)
    kw = dict(TRAIN, seed=0, device=META, precision="fp32")
    with dv.DeviceAudit(META):
        per_seed, null = tmv.seed_metrics(tasks, ["finetune", "ewc", "si", "agem"], [0, 1], train_kw=kw,
                                          metric_kw=dict(delta=0.9, epsilon=0.02, lam=0.15, n=2))
    assert [len(v) for v in per_seed.values()] == [2, 2, 2, 2] and len(null) == 2


def test_cpu_numbers_are_the_per_cell_reference(stream):
    """The device plumbing changes no number on the CPU: A equals the former loop (a strategy built on
    the CPU, ``train_task`` then ``evaluate`` cell by cell)."""
    from clkit._seed import torch_seeded
    from clkit.models.mlp import MLP
    from clkit.strategies import make_strategy

    for learner, (name, fresh) in (("erm", ("naive", True)), ("agem", ("agem", False))):
        A = tm.accuracy_matrix(stream, learner, backward=True, seed=3, **TRAIN)
        ref = np.full((4, 4), np.nan)
        train, test = stream.tasks("train"), stream.tasks("test")
        s = None
        for t in range(4):
            if fresh or s is None:
                seed = 3 + (1000 * t if fresh else 0)
                with torch_seeded(seed):
                    model = MLP(8, 2, hidden=TRAIN["hidden"])
                s = make_strategy(name, model, seed=seed, optimizer="adam", lr=TRAIN["lr"], epochs=TRAIN["epochs"],
                                  batch_size=TRAIN["batch_size"])
            s.train_task(train[t])
            ref[t] = [s.evaluate(task) for task in test]
        np.testing.assert_array_equal(A, ref)


def test_bf16_on_cpu_gives_accuracies(stream):
    A = tm.accuracy_matrix(stream, "ewc", precision="bf16", device=dv.setup("cpu", "bf16").device, **TRAIN)
    upper = A[np.triu_indices(4)]
    assert ((0 <= upper) & (upper <= 1)).all()


def test_majority_baseline_takes_device_labels(stream):
    tasks = tm.period_tasks(stream, "cpu")
    host = tm.majority_accuracy_matrix([y for _, y in stream.train], [y for _, y in stream.test])
    tensors = tm.majority_accuracy_matrix([t.y for t in tasks.train], [t.labels_host() for t in tasks.test])
    np.testing.assert_array_equal(host, tensors)


def test_precision_is_a_run_parameter_not_a_learner_setting():
    with pytest.raises(ValueError, match="precision"):
        tm.check_learner_settings({"ewc": {"precision": "bf16"}}, ["ewc"])


# ------------------------------------------------------------------------------------------ budget

def test_budget_counts_by_hand():
    """2 periods of 100 and 30 samples, batch 32: 4 + 1 = 5 steps per epoch, 3 epochs = 15 per pass.
    Runs: erm 1, finetune 1 + (4 - 1) + 4 = 8, si 1 + 3 = 4; Part 1: 2 streams x 3 periods x
    ceil(10 / 32) = 1 step x 2 epochs."""
    w = tb.count_work(learners=["erm", "finetune", "si"], train_sizes=[100, 30], epochs=3, batch_size=32,
                      judged=["finetune", "si"], verdict_seeds=4, synthetic_periods=3, synthetic_samples=20,
                      synthetic_epochs=2)
    assert w["runs"] == {"erm": 1, "finetune": 8, "si": 4}
    assert w["steps"] == {"erm": 15, "finetune": 120, "si": 60}
    assert w["trainings"] == 13 * 2 + 2 * 3 and w["eval_passes"] == 13 * 4
    assert w["part1_steps"] == 12 and w["part1_eval_passes"] == 2 * 6
    none = tb.count_work(learners=["erm", "finetune"], train_sizes=[100], epochs=1, batch_size=32,
                         judged=["finetune"], verdict_seeds=4)
    assert none["runs"] == {"erm": 1, "finetune": 1} and "verdicts" not in none["detail"]


def test_budget_calibrates_every_learner_on_a_non_cpu_device(stream):
    kw = dict(TRAIN, seed=0, device=META, precision="fp32")
    with dv.DeviceAudit(META):
        b = tb.run_budget(tm.period_tasks(stream, META), learners=list(tm.LEARNERS), train_kw=kw,
                          judged=["finetune", "ewc", "si", "agem"], verdict_seeds=2, synthetic_periods=3,
                          synthetic_samples=20, synthetic_epochs=1, repeats=1)
    names = [w.name for w in b.work]
    assert names[:len(tm.LEARNERS)] == [f"training steps ({m})" for m in tm.LEARNERS]
    assert "Part 1 training steps (erm)" in names
    assert all(w.seconds_each > 0 for w in b.work) and b.record()["device"] == "meta"


def test_published_shape_and_its_budget_counts():
    s = tb.published_shape("yearbook", period_length=10, max_per_period=50)
    assert len(s.train_sizes) == 9 and max(s.test_sizes) <= 500 and s.input_shape == (1, 32, 32)
    with pytest.raises(ValueError, match="name"):
        tb.published_shape("arxiv")


# ------------------------------------------------------------------------------- the notebook's run

def _outputs(path):
    nb = json.loads((path / f"{NB}.ipynb").read_text())
    return "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/markdown", ""))
                     for c in nb["cells"] for o in c.get("outputs", []))


@pytest.mark.notebook
def test_smoke_records_device_precision_and_the_hand_counted_budget(run_smoke):
    """Smoke: 9 rainfall periods of 1,277 training days (20 batches of 64) x 3 epochs = 60 steps per pass;
    runs erm 1, finetune 1 + 1 + 2 = 4, ewc/si/agem 2 each (verdict_seeds 2); Part 1: 2 streams x 6
    periods x 20 epochs x 3 batches of 150 samples."""
    res, out = run_smoke(NB)
    r = res["results"]
    assert r["device"]["device"] == "cpu" and r["device"]["requested"] == "auto" and r["device"]["precision"] == "fp32"
    assert res["params"]["device"] == "auto" and res["params"]["rehearse"] is False and "rehearsal" not in r
    b = r["budget"]
    counts = {w["name"]: w["count"] for w in b["work"]}
    assert counts["training steps (erm)"] == 540 and counts["training steps (finetune)"] == 2160
    assert counts["training steps (ewc)"] == counts["training steps (agem)"] == 1080
    assert counts["evaluation passes (cells of A, one test period each)"] == 11 * 81
    assert counts["Part 1 training steps (erm)"] == 720 and counts["Part 1 evaluation passes"] == 42
    assert b["trainings"] == 11 * 9 + 12 and 0 < b["estimated_seconds"] < 600
    assert "**Budget:** 111 trainings" in _outputs(out) and "cpu (chosen by device=auto" in _outputs(out)


@pytest.mark.notebook
def test_device_cpu_and_deterministic_give_the_auto_run_numbers(run_smoke):
    auto, _ = run_smoke(NB)
    cpu, out = run_smoke(NB, device="cpu", deterministic=True)
    assert cpu["results"]["device"]["requested"] == "cpu" and cpu["results"]["device"]["deterministic"] is True
    assert "deterministic algorithms on" in _outputs(out)
    for key in ("learners", "acc_matrix", "part1", "backward", "verdicts"):
        assert cpu["results"][key] == auto["results"][key], key


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without CUDA")
def test_cuda_without_cuda_is_refused_in_the_validation_cell(tmp_path):
    with pytest.raises(RuntimeError, match=r"device 'cuda' needs CUDA.*available: cpu"):
        run_notebook(NB, "smoke", [("device", "cuda")], out=tmp_path, progress=False)
    with pytest.raises(RuntimeError, match="precision 'fp16' needs a CUDA device"):
        run_notebook(NB, "smoke", [("precision", "fp16")], out=tmp_path / "fp16", progress=False)


def test_paper_set_has_the_verdict_seeds_and_says_its_cost():
    from clkit.notebooks import notebooks_dir

    path = notebooks_dir() / "params" / NB / "paper_32px.yaml"      # paper.yaml: tests/test_temporal_paper_sets.py
    paper = yaml.safe_load(path.read_text())
    assert paper["verdict_seeds"] >= trh.MIN_SEEDS
    text = path.read_text()
    assert "CPU" in text and "GPU" in text and "gpu_check.py" in text and " h " in text


@pytest.mark.notebook
@pytest.mark.paper_rehearsal
@pytest.mark.parametrize("dataset, periods, params", [("fmow", 12, "paper_32px"), ("fmow", 12, "paper"),
                                                      ("yearbook", 12, "paper_yearbook")])
def test_paper_set_rehearsed_end_to_end(tmp_path, dataset, periods, params):
    """``--params paper -p rehearse true``: the Wild-Time loader reads the fabricated HDF5 file of the
    rehearsal folder, every learner trains on the paper set's backbone, verdicts over the rule's 4 seeds and
    the figures come out, and results.json says what was cut (FMoW's 16 and Yearbook's 84 periods to 12)."""
    # the backbones: Yearbook's own (Wild-Time's CNN); for FMoW the MLP, since the paper set's DenseNet-121 is
    # far beyond this test's time on 2 CPU cores (a rehearsal of it ran over 10 minutes; its pieces are tested
    # in test_temporal_learners_paper.py)
    # `paper` keeps its 224-px ImageNet-normalised images (the loader's path, the memory plan) on an MLP of one narrow
    # layer: the paper set's 3-channel 224-px input makes the 256-128 MLP's first layer 38.5 M weights (over 6 minutes)
    overrides = [("rehearse", True)] + ([] if dataset != "fmow" else [("backbone", "mlp")]) + (
        [("hidden", [16])] if params == "paper" else [])
    start = time.perf_counter()
    path = run_notebook(NB, params, overrides, out=tmp_path, progress=False)
    seconds = time.perf_counter() - start
    res = json.loads((path / "results.json").read_text())
    r = res["results"]
    assert f"Wild-Time {dataset} via wild-time-data" in r["data_source"]
    assert f"{r['rehearsal']['data_root']}/wild-time/{dataset}.hdf5" in r["data_source"]
    assert r["rehearsal"]["data_root"].endswith("rehearsal/03_temporal_metrics")
    assert r["num_periods"] == periods
    cut = {c["parameter"]: (c["given"], c["used"]) for c in r["rehearsal"]["cut"]}
    assert cut["verdict_seeds"] == (6, trh.MIN_SEEDS)
    if params == "paper_32px":
        assert cut["epochs"] == (20, 2) and res["params"]["hidden"] == [256, 128] and "train_update_iter" not in cut
    else:   # Wild-Time's iterations a year dropped (a fabricated year is 8 images); nothing judged on a rehearsal
        iters = {"default": 100} if dataset == "yearbook" else {"erm": 3000, "coral": 3000, "default": 500}
        assert cut["train_update_iter"] == (iters, {}) and cut["paper_scale"] == (True, False)
        assert res["params"]["train_update_iter"] == {} and res["params"]["paper_scale"] is False
        beside = r["beside_paper"]          # Table 2's headers are "ID Avg", "OOD Avg", ...; Table 1's "ID", "OOD", ...
        head, value = ("ID Avg", "95.4%") if dataset == "yearbook" else ("ID", "32.5%")
        assert [b["layout"] for b in beside] == [dataset] and beside[0]["paper_scale"] is False
        assert beside[0]["rows"]["FT"][head]["paper"] == value and beside[0]["marked"] == 0
        assert {c["vs_paper"] for row in beside[0]["rows"].values() for c in row.values()} == {"not comparable"}
    if dataset == "fmow":               # the plan counted the images the run loads (16 per split and year at most)
        size = res["params"]["image_size"]
        assert r["memory_plan"]["images_bytes"] <= 2 * 16 * 16 * 3 * size * size * 4 and r["memory_plan"]["fits_host"]
    assert cut.get("max_periods") == (0, 12)       # FMoW's 16 years and Yearbook's 84 cut to the rule's 12 periods
    assert list(r["rehearsal"]["files"]) == [dataset]
    # one null control per metric (6) and 5 learners (ewc, si, agem, coral, moco_sml) x 6 metrics against
    # finetune (issue 38: DH joined; issue 40: the paper's CORAL and MoCo+SML joined)
    assert {v["n"] for v in r["verdicts"]} == {trh.MIN_SEEDS} and len(r["verdicts"]) == 6 + 30
    assert set(r["learners"]) == set(tm.LEARNERS) and r["budget"]["trainings"] > 0 and r["device"]["device"] == "cpu"
    for fig in ("part1_adaptation_vs_difficulty", "A_and_g_heatmaps", "id_ood_tas_over_time", "sh_dh_per_period",
                "paper_fig3_id_ood_tas"):
        assert (path / "figures" / f"{fig}.png").stat().st_size > 1000
    text = _outputs(path)           # the note comes first, and opens the closing text
    assert text.index("**Rehearsal run**") < text.index("**Budget:**") < text.rindex("**Rehearsal run**")
    assert text[text.rindex("**Rehearsal run**"):].count("On **" + dataset + "**") == 1
    print(f"the {dataset} paper rehearsal took {seconds:.0f} s")   # reported, never judged (timings decide no test)


# ------------------------------------------------------------------------------------------- CUDA

@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_A_matches_the_cpu(stream):
    """On CUDA every learner gives the CPU's accuracies up to a few test samples: same initial weights
    and batch orders, kernels that round differently (20 test samples per period, one is 0.05): every
    cell within 0.15, the mean of A within 0.05."""
    for learner in tm.LEARNERS:
        cpu = tm.accuracy_matrix(stream, learner, backward=True, **TRAIN)
        gpu = tm.accuracy_matrix(tm.period_tasks(stream, dv.setup("cuda").device), learner, backward=True, **TRAIN)
        assert np.nanmax(np.abs(cpu - gpu)) <= 0.15 and abs(np.nanmean(cpu) - np.nanmean(gpu)) <= 0.05, learner
