"""Notebook 04's device plumbing at library level: the streams, the difficulty runs and the budget on a
device other than the CPU, the run setting reaching worker processes, and the budget's counts.

No GPU is needed: ``torch.device("meta")`` holds shapes but no values, so every stream of every learner
the notebook trains runs there under :class:`clkit.device.DeviceAudit` -- a tensor made on the CPU
instead of the model's device, or a value read inside a step, fails as it would on a GPU. What meta
cannot show: the numbers (every accuracy is NaN there, so the difficulty ranking and the verdicts are
checked on the CPU in tests/test_notebook_04.py), and kernels without a meta implementation: EWC's and
MAS's per-sample gradients of a convolutional backbone go through ``torch.func.vmap`` (it runs on meta
with torch 2.14, so they are covered here too). The CUDA-only comparison is marked ``gpu``.
"""

import math

import numpy as np
import pytest
import torch

import clkit.curriculum as cur
from clkit import device as dv
from clkit.curriculum import budget as cb
from clkit.curriculum import streams as cs
from clkit.data.images import ImageDataset

META = torch.device("meta")
#: every learner notebook 04 trains: the paper's 14 strategies (mste and pnn in the task scenario)
STRATEGIES = ["naive", "cumulative", "mste", "ewc", "si", "mas", "lwf", "replay", "agem", "gem", "gdumb",
              "generative_replay", "cwr", "pnn"]
SMALL = dict(optimizer="sgd", lr=0.01, momentum=0.9, batch_size=8, memory_size=6, agem_sample_size=4,
             gem_patterns_per_task=3)


def _fake(name, n=2, seed=0, side=16):
    """A 10-class ImageDataset of ``n`` images per class and split."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(10), n)
    x = rng.integers(0, 255, (len(y), side, side, 3), dtype=np.uint8)
    return ImageDataset(name, x, y, x.copy(), y.copy(), tuple(map(str, range(10))), "synthetic test data")


def _benches(seeds=(0,), image_size=16, names=("a", "b", "c"), per_class=2):
    data = [_fake(n, seed=k) for k, n in enumerate(names)]
    return {s: cur.build_benchmark(data, per_class_train=per_class, per_class_test=1, image_size=image_size, seed=s)
            for s in seeds}


@pytest.fixture
def spy_strategies(monkeypatch):
    """Every strategy the streams build: (name, the model as given, the keywords, the strategy)."""
    built = []
    real = cs.make_strategy

    def spy(name, model, **kw):
        given = [(p.device, p.is_contiguous(memory_format=torch.channels_last)) for p in model.parameters()]
        s = real(name, model, **kw)
        built.append((name, given, kw, s))
        return s

    monkeypatch.setattr(cs, "make_strategy", spy)
    return built


# ------------------------------------------------------------------------------------- on meta

@pytest.mark.parametrize("scenario,backbone,strategies", [
    ("task", "small_cnn", STRATEGIES),
    ("class", "wide_vgg9", [s for s in STRATEGIES if s not in ("mste", "pnn")])])   # the paper set's
def test_every_learner_of_the_notebook_streams_on_a_non_cpu_device(scenario, backbone, strategies, spy_strategies):
    """Each strategy trains both orders of three tasks on meta (class-incrementally with the paper's
    WideVGG9): the models are built on the CPU and moved, the images moved once per seed, no CPU
    tensor meets device work."""
    benches = _benches(per_class=1)
    moves = []
    real_to = cur.Benchmark.to

    def count_to(self, device):
        out = real_to(self, device)
        if out is not self:
            moves.append(device)
        return out

    orders = {"M2I": ["a", "b", "c"], "I2M": ["c", "b", "a"]}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cur.Benchmark, "to", count_to)
        with dv.DeviceAudit(META):
            R = cur.run_streams(benches, orders, strategies, device=META, scenario=scenario, backbone=backbone,
                                epochs=1, workers=2, **SMALL)
    assert moves == [META]                       # once for the seed, for every stream (workers=2 ignored)
    assert {k for k in R[0]["M2I"]} == set(strategies) and R[0]["I2M"]["naive"].shape == (3, 3)
    assert all(np.isnan(R[0][o][s]).all() for o in orders for s in strategies)   # meta: no values read
    assert len(spy_strategies) == 2 * len(strategies)
    for name, given, kw, s in spy_strategies:
        assert all(d == torch.device("cpu") for d, _ in given)      # built on the CPU under the seed ...
        assert kw["device"] == META and kw["precision"] == "fp32"
        assert all(p.device == META for p in s.model.parameters())  # ... then moved
        assert s.steps > 0


def test_difficulty_runs_on_the_device_with_a_run_device(monkeypatch, spy_strategies):
    benches = _benches(seeds=(0, 1))
    rd = dv.RunDevice(META, "bf16", False, "meta")
    with dv.DeviceAudit(META):
        acc = cur.measure_difficulty(benches, backbone="small_cnn", epochs=1, device=rd, workers=2, **SMALL)
    assert set(acc) == {0, 1} and set(acc[0]) == {"a", "b", "c"} and all(math.isnan(v) for v in acc[1].values())
    assert {kw["precision"] for _, _, kw, _ in spy_strategies} == {"bf16"}


def test_channels_last_and_a_plugin_backbone_keep_their_layout_on_the_device(spy_strategies):
    benches = _benches()
    for backbone in ("small_cnn", "test_curriculum:cnn_factory"):
        with dv.DeviceAudit(META):
            cur.run_stream(benches[0], ["a", "b"], "naive", device=META, backbone=backbone, epochs=1,
                           memory_format="channels_last", **SMALL)
    for _, given, _, s in spy_strategies:
        conv = s.model.features[3].weight               # the second convolution (more than one input channel)
        assert conv.device == META and conv.is_contiguous(memory_format=torch.channels_last)
        assert not conv.is_contiguous()
        assert given[2] == (torch.device("cpu"), True)


def test_benchmark_to_moves_images_once_and_keeps_labels_on_the_host():
    b = _benches()[0]
    m = b.to(META)
    assert m.to(META) is m and b.to("cpu") is b and b.device.type == "cpu"
    train, test = m.tasks(["b", "a"], "class", blocks=["a", "b"])
    assert train[0].x is m.train["b"][0]             # the tasks share the moved images
    assert train[0].y.device == META and train[0].labels_host().tolist() == (b.train["b"][1] + 10).tolist()
    assert m.train["a"][1].device.type == "cpu"


# ------------------------------------------------------------------------------- the run setting

def test_run_setting_takes_a_run_device_and_refuses_what_the_device_cannot():
    rd = dv.setup("cpu", "bf16")
    assert cs.run_setting(rd) == (torch.device("cpu"), "bf16", False)
    assert cs.run_setting(rd, precision="fp32", deterministic=True) == (torch.device("cpu"), "fp32", True)
    assert cs.run_setting("cpu")[1:] == ("fp32", torch.are_deterministic_algorithms_enabled())
    with pytest.raises(ValueError, match="precision 'fp16' needs a CUDA device"):
        cs.run_setting("cpu", "fp16")
    with pytest.raises(TypeError, match="deterministic must be true or false"):
        cs.run_setting("cpu", deterministic="yes")


def test_worker_processes_take_the_deterministic_setting_and_threads():
    """A spawned process starts with torch's defaults (not deterministic): the pool's initializer sets it."""
    assert not torch.are_deterministic_algorithms_enabled()
    with cs.worker_pool(1, num_threads=1, deterministic=True) as pool:
        assert pool.submit(torch.are_deterministic_algorithms_enabled).result() is True
        assert pool.submit(torch.get_num_threads).result() == 1


def test_run_streams_hands_the_run_setting_to_its_workers(monkeypatch, spy_strategies):
    """The pool gets the RunDevice's deterministic flag, each stream its device and precision; in this
    process the streams run with the same setting, which is undone afterwards."""
    from concurrent.futures import ThreadPoolExecutor

    pools = []

    def fake_pool(workers, *, num_threads, deterministic):
        pools.append((workers, num_threads, deterministic))
        return ThreadPoolExecutor(workers)

    monkeypatch.setattr(cs, "worker_pool", fake_pool)
    benches = _benches(image_size=8)
    kw = dict(backbone="mlp", epochs=1, **SMALL)
    rd = dv.RunDevice(torch.device("cpu"), "bf16", True, "cpu")
    cur.run_streams(benches, {"M2I": ["a", "b"]}, ["naive"], device=rd, workers=2, num_threads=1, **kw)
    assert pools == [(2, 1, True)]
    assert spy_strategies[-1][2]["precision"] == "bf16"
    seen = []
    real = cs._stream_job
    monkeypatch.setattr(cs, "_stream_job", lambda job: seen.append(torch.are_deterministic_algorithms_enabled())
                        or real(job))
    assert not torch.are_deterministic_algorithms_enabled()
    cur.run_streams(benches, {"M2I": ["a", "b"]}, ["naive"], device=rd, workers=1, **kw)
    assert seen == [True] and not torch.are_deterministic_algorithms_enabled()


# ------------------------------------------------------------------------------------- the budget

def test_budget_counts_match_a_hand_count():
    """Three tasks of 30, 20 and 10 rows (3, 2, 1 per class), batch 8, 2 epochs, test sets of 10 rows."""
    per_class = {"a": (3, 1), "b": (2, 1), "c": (1, 1)}
    hyper = dict(memory_size=12, agem_sample_size=5, gem_patterns_per_task=4)
    w = cb.count_work(per_class, ["naive", "cumulative", "replay", "agem", "gem", "gdumb", "ewc", "lwf"], seeds=3,
                      epochs=2, difficulty_epochs=1, batch_size=8, hyper=hyper,
                      learner_kwargs={"replay": {"memory_size": 6}})
    ps = w["per_strategy"]
    # naive, one order: batches 4 + 3 + 2 per epoch (30 = 8+8+8+6, 20 = 8+8+4, 10 = 8+2), 2 epochs
    assert cb.stream_work("naive", [30, 20, 10], [10] * 3, epochs=2, batch_size=8).steps == 18
    assert ps["naive"].steps == 2 * 3 * 18 and ps["naive"].rows == 2 * 3 * 2 * 60
    # the test sets after every task: 3 x 3 passes of 10 rows, per order and seed
    assert ps["naive"].test_passes == 6 * 9 and ps["naive"].forward_rows == 6 * 90
    # cumulative: 30, 50, 60 rows -> 4 + 7 + 8 batches (M2I) and 10, 30, 60 -> 2 + 4 + 8 (reverse)
    assert ps["cumulative"].steps == 3 * 2 * ((4 + 7 + 8) + (2 + 4 + 8))
    # replay (its own memory_size 6): tasks 2 and 3 stack min(batch, 6) rows per batch
    m2i = (6 + 6 + 4) + (6 + 2)          # 20 = 8+8+4 rows; 10 = 8+2 rows
    i2m = (6 + 6 + 4) + (6 + 6 + 6 + 6)  # reverse: 20, then 30 = 8+8+8+6
    assert ps["replay"].memory_rows == 3 * 2 * (m2i + i2m)
    # A-GEM: min(5, 12, rows before) per step from task 2 on: 5 x (3 + 2) steps, both orders
    assert ps["agem"].memory_rows == 3 * 2 * 5 * ((3 + 2) + (3 + 4))
    # GEM: 4 rows of every earlier task per step
    assert ps["gem"].memory_rows == 3 * 2 * ((4 * 3 + 8 * 2) + (4 * 3 + 8 * 4))
    # GDumb retrains on min(12, rows seen) rows: 12, 12, 12 -> 2 batches per task
    assert ps["gdumb"].steps == 3 * 2 * 2 * 3 * 2
    assert ps["ewc"].sample_rows == 3 * 2 * 60
    # the teacher on the second and third task: 20 + 10 rows (M2I), 20 + 30 (reverse)
    assert ps["lwf"].forward_rows == ps["naive"].forward_rows + 3 * ((20 + 10) + (20 + 30))
    (n_single, single), (n_streams, streams) = w["difficulty"], w["streams"]
    assert (n_single, n_streams) == (9, 3 * 2 * 8)
    assert single.steps == 3 * (4 + 3 + 2) and single.forward_rows == 3 * 30


def test_budget_is_calibrated_on_the_device_and_printed():
    rd = dv.RunDevice(META, "fp32", False, "meta")
    b = cb.estimate({"a": (2, 1), "b": (2, 1)}, ["naive", "ewc", "replay"], device=rd, seeds=4, epochs=1,
                    difficulty_epochs=1, batch_size=8, backbone="small_cnn", image_size=16, channels=3, workers=2,
                    hyper={"memory_size": 5})
    assert b.trainings == 4 * 2 + 3 * 2 * 4 and b.parallel == 2
    names = [w.name for w in b.work]
    assert names == ["training steps", "rows through training steps", "per-sample gradient rows",
                     "test rows evaluated"]
    assert "small_cnn on 3x16x16 images, batch 8, fp32, timed on meta" in b.work[0].calibration
    text, rec = b.text(), b.record()
    cpu, gpu = text.split("\n\n")   # the timed line, then one GPU estimated from FLOPs (not measured)
    assert cpu.startswith("**Budget:** 32 trainings") and cpu.endswith(f"; {cb.LEFT_OUT} are not in it.")
    assert gpu.startswith("**On one GPU: about") and "estimated from FLOPs, not measured" in gpu
    assert rec["gpu_estimate"]["measured"] is False and rec["gpu_estimate"]["flops"] > 0
    assert "an upper bound, the curriculum may keep fewer" in text
    assert rec["trainings"] == 32 and rec["work"][0]["count"] > 0 and rec["estimated_seconds"] >= 0


def test_the_gpu_line_divides_by_the_measured_throughput_of_its_backbone():
    """wide_vgg9_bn's step was timed on an H200: the GPU line's seconds are its FLOPs over the
    FLOP/s of that measured step (hand: 413 GFLOP in 6.9 ms is about 60 TFLOP/s), so one step at
    the measured size takes the measured time; a backbone never timed keeps the assumption."""
    from clkit import budget as B

    work = cb.StreamWork(steps=1, rows=128, memory_rows=0, sample_rows=0, forward_rows=0)
    f = cb.step_flops(backbone="wide_vgg9_bn", image_size=64, channels=3, batch_size=128, num_classes=60)
    e = cb.gpu_estimate(work, f)
    assert e.seconds == pytest.approx(B.MEASURED_STEPS["wide_vgg9_bn"][3], rel=1e-6)
    assert 55e12 < e.throughput < 65e12 and "H200" in e.assumption and e.record()["measured"] is False
    mlp = cb.gpu_estimate(work, cb.step_flops(backbone="mlp", image_size=8, channels=1, batch_size=4,
                                              num_classes=20))
    assert mlp.throughput == B.GPU_THROUGHPUT and mlp.assumption == B.GPU_ASSUMPTION


def test_step_model_splits_a_step_into_a_fixed_part_and_a_part_per_row():
    a, c = cb.step_model(1.0, 0.4, 128, 32)
    assert c == pytest.approx(0.6 / 96) and a == pytest.approx(1.0 - 128 * 0.6 / 96)
    assert cb.step_model(1.0, 1.0, 8, 8) == (0.0, 1.0 / 8)


# ------------------------------------------------------------------------------------ the rehearsal

def test_rehearsal_caps_every_size_and_switches_download_off():
    from clkit.notebooks import load_params, notebook_parameters

    values = {k: d["default"] for k, d in notebook_parameters("04_curriculum").items()}
    values.update(load_params("04_curriculum", "paper"))
    changes, rows = cur.rehearsal.PLAN.cut(values)
    assert changes["download"] is False and changes["image_size"] == 16 and changes["epochs"] == 1
    assert {r["parameter"] for r in rows} >= {"per_class_train", "per_class_test", "epochs", "difficulty_epochs",
                                              "batch_size", "memory_size", "gem_patterns_per_task", "image_size"}
    kept = ("datasets", "backbone", "scenario", "strategies", "optimizer", "lr", "learner_kwargs", "num_tasks")
    assert not set(kept) & set(changes)
    sizes = cur.rehearsal.fixture_sizes({**values, **changes})
    assert sorted(sizes) == sorted(values["datasets"])


# ------------------------------------------------------------------------------------------- CUDA

@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("strategy", ["naive", "ewc", "replay", "agem", "gem", "lwf"])
def test_streams_on_cuda_match_the_cpu(strategy):
    """The same streams on CUDA and on the CPU: the same initial weights and batch orders (CPU
    generators), accuracies within a test image or two (float rounding moves a few predictions)."""
    benches = _benches(seeds=(0,))
    kw = dict(scenario="class", backbone="small_cnn", epochs=2, **SMALL)
    orders = {"M2I": ["a", "b", "c"]}
    cpu = cur.run_streams(benches, orders, [strategy], device=dv.setup("cpu"), **kw)
    gpu = cur.run_streams(benches, orders, [strategy], device=dv.setup("cuda"), **kw)
    np.testing.assert_allclose(gpu[0]["M2I"][strategy], cpu[0]["M2I"][strategy], atol=0.21)
