"""Budgets on the card (issue 52): the one-GPU line names its card, scales a step measured on another card by
the published bandwidth (memory-bound) or FP32 peak (compute-bound), holds every step to an assumed floor, and
a CPU budget divides by no more worker processes than cores are free. Hand-computed examples."""

import pytest

from clkit import budget as B
from clkit.budget import Budget, CoreCheck, FlopEstimate, Work


# ------------------------------------------------------------------------------------------------ the floor
def test_the_floor_sets_the_time_of_many_small_steps():
    """04's default: 26,064 steps whose FLOPs take 0.14 s at the assumed throughput take at least
    26,064 x 1 ms = 26.064 s; with 1,602 test passes at 0.3 ms, 26.5446 s."""
    e = FlopEstimate(B.GPU_THROUGHPUT * 0.14, steps=26064)
    assert e.flop_seconds == pytest.approx(0.14) and e.seconds == pytest.approx(26.064) and e.floored
    e = FlopEstimate(B.GPU_THROUGHPUT * 0.14, steps=26064, passes=1602)
    assert e.seconds == pytest.approx(26.064 + 1602 * 0.3e-3)
    text = e.text()
    assert "the floor sets it: 26,064 steps and 1,602 forward passes" in text
    assert "assumed, not measured" in text and "where the FLOPs alone give 0.14 s" in text
    rec = e.record()
    assert rec["floored"] is True and rec["floor_seconds"] == pytest.approx(26.5446) and rec["measured"] is False


def test_the_floor_does_not_apply_where_the_flops_take_longer():
    """100 steps (0.1 s of floor) of work that takes an hour by FLOPs: an hour, nothing said of a floor."""
    e = FlopEstimate(B.GPU_THROUGHPUT * 3600, steps=100, passes=10)
    assert e.seconds == pytest.approx(3600) and not e.floored and "floor" not in e.text()


def test_the_floor_is_one_millisecond_a_step_and_labelled_assumed():
    assert B.STEP_FLOOR_S == 1e-3 and B.PASS_FLOOR_S == 0.3e-3
    assert "assumed, not measured" in B.FLOOR_ASSUMPTION


# --------------------------------------------------------------------------------------------- the card
def test_a_memory_bound_step_scales_by_bandwidth():
    """EfficientNet-B1 (1.2 TFLOP/s on the H200: memory-bound) on an H100 SXM: x 4.8 / 3.35 = 1.4328;
    on an A100 80GB SXM: x 4.8 / 2.039 = 2.3541."""
    thr = B.measured_throughput("efficientnet_b1")
    assert B.step_bound(thr) == "memory"
    e = FlopEstimate(thr * 10.0, throughput=thr, source_card="H200", bound="memory")
    assert e.seconds == pytest.approx(10.0 * 4.8 / 3.35) and e.scale == pytest.approx(1.43284, rel=1e-5)
    assert "scaled from the H200 to the H100 SXM by memory bandwidth (4.8 / 3.35 TB/s" in e.text()
    a100 = FlopEstimate(thr * 10.0, throughput=thr, source_card="H200", bound="memory",
                        card="NVIDIA A100-SXM4-80GB")
    assert a100.seconds == pytest.approx(10.0 * 4.8 / 2.039) and "card: A100 80GB SXM" in a100.text()


def test_a_compute_bound_step_scales_by_fp32_peak():
    """Wide-VGG9-BN (60 TFLOP/s: compute-bound): the H100 SXM has the H200's 67 TFLOPS, so no change;
    an A100 (19.5 TFLOPS) takes 67 / 19.5 = 3.436 times as long."""
    thr = B.measured_throughput("wide_vgg9_bn")
    assert B.step_bound(thr) == "compute"
    same = FlopEstimate(thr * 2.0, throughput=thr, source_card="H200", bound="compute")
    assert same.seconds == pytest.approx(2.0) and "scaled" not in same.text()
    a100 = FlopEstimate(thr * 2.0, throughput=thr, source_card="H200", bound="compute", card="A100 40GB")
    assert a100.seconds == pytest.approx(2.0 * 67 / 19.5)
    assert "by FP32 peak (67 / 19.5 TFLOPS" in a100.text()


def test_an_unknown_card_is_not_scaled_and_the_line_says_so():
    e = FlopEstimate(1e12, throughput=1e12, source_card="H200", bound="memory", card="Acme Tensor 9000")
    assert e.seconds == pytest.approx(1.0) and e.scale == 1.0
    assert "card: Acme Tensor 9000" in e.text()
    assert "not scaled to Acme Tensor 9000 (its bandwidth and peak are not in clkit.budget.CARDS)" in e.text()
    with pytest.raises(ValueError, match="bound: 'io'.*'compute' or 'memory'"):
        FlopEstimate(1.0, bound="io")


def test_cards_are_recognised_by_their_cuda_names_and_the_default_is_the_h100_sxm():
    names = {"NVIDIA H100 80GB HBM3": "H100 SXM", "NVIDIA H100 PCIe": "H100 PCIe", "NVIDIA H100 NVL": "H100 NVL",
             "NVIDIA H200": "H200", "NVIDIA A100-SXM4-40GB": "A100 40GB", "NVIDIA A100 80GB PCIe": "A100 80GB PCIe",
             "NVIDIA L40S": "L40S", "NVIDIA L4": "L4", "NVIDIA A10": "A10", "Tesla V100-SXM2-32GB": "V100 SXM2",
             "NVIDIA GeForce RTX 4090": "RTX 4090"}
    assert {n: B.card_spec(n) for n in names} == names
    assert B.CARDS["H100 SXM"][:2] == (3.35e12, 67e12) and B.CARDS["H200"][:2] == (4.8e12, 67e12)
    assert B.CARDS["A100 80GB SXM"][0] == 2.039e12
    assert B.target_card("cpu") == B.DEFAULT_CARD == "H100 SXM"
    assert B.target_card("cuda:0", {"name": "NVIDIA H200"}) == "NVIDIA H200"


def test_the_curriculum_gpu_line_names_its_card_and_floors_the_default_run():
    """04's default counts (27,180 steps, 1,602 test passes of an 8-pixel small_cnn): the FLOPs give a
    fraction of a second, the floor 27,180 x 1 ms + 1,602 x 0.3 ms = 27.66 s; the line names the H100 SXM."""
    from clkit.curriculum import budget as cb

    pc = {"digits": (100, 50), "mnist_subset": (100, 50), "fashion_mnist": (100, 50)}
    strategies = ["naive", "cumulative", "mste", "ewc", "si", "mas", "lwf", "replay", "agem", "gem", "gdumb",
                  "generative_replay", "cwr", "pnn"]
    w = cb.count_work(pc, strategies, seeds=6, epochs=3, difficulty_epochs=3, batch_size=64,
                      hyper={"memory_size": 200, "agem_sample_size": 64, "gem_patterns_per_task": 64},
                      control="replay")
    total = w["difficulty"][1] + w["streams"][1]
    f = cb.step_flops(backbone="small_cnn", image_size=8, channels=3, batch_size=64, num_classes=30)
    e = cb.gpu_estimate(total, f)
    assert e.flop_seconds < 1 and e.floored
    assert e.seconds == pytest.approx(total.steps * 1e-3 + total.test_passes * 0.3e-3)
    assert e.seconds > 100 * e.flop_seconds and "card: H100 SXM" in e.text()
    # a measured memory-bound backbone is scaled from the H200; the same counts priced for the H200 are not
    f = cb.step_flops(backbone="efficientnet_b1", image_size=64, channels=3, batch_size=128, num_classes=60)
    h100, h200 = cb.gpu_estimate(total, f), cb.gpu_estimate(total, f, card="NVIDIA H200")
    assert h100.bound == "memory" and h100.seconds == pytest.approx(h200.seconds * 4.8 / 3.35)
    assert "card: H200" in h200.text() and "scaled" not in h200.text()


def test_01s_measured_transformer_step_is_scaled_to_the_card():
    """33.6 ms on the H200, memory-bound: 48.14 ms on an H100 SXM, 33.6 ms on the H200 itself."""
    from clkit.taskification.budget import gpu_days

    w = {"steps": 1000, "fisher_passes": 0, "forward_windows": 0}
    cal = {"forward_window": 1.0, "step_window": 3.0}
    h100 = gpu_days(w, cal, batch_size=256, epochs=100, patience=10)
    h200 = gpu_days(w, cal, batch_size=256, epochs=100, patience=10, card="NVIDIA H200")
    assert h100["card"] == "H100 SXM" and h100["step_s"] == pytest.approx(33.6e-3 * 4.8 / 3.35)
    assert h200["step_s"] == pytest.approx(33.6e-3) and h200["upper_s"] == pytest.approx(33.6)
    assert "memory bandwidth (4.8 / 3.35 TB/s" in h100["scaling"]


# -------------------------------------------------------------------------------------------- the cores
def test_free_cores_subtract_other_programs_load():
    """This process counts 1 of the load: 2 cores at load 1.9 leave 1 free (0.9 elsewhere, rounded);
    at load 0.6 both; at load 3.6 still 1 (never 0); 16 cores at load 5.2: 16 - 4.2 -> 12."""
    assert [CoreCheck(2, x).free for x in (1.9, 0.6, 3.6)] == [1, 2, 1]
    assert CoreCheck(16, 5.2).free == 12 and CoreCheck(4, None).free == 4
    c = B.free_cores()
    assert 1 <= c.free <= c.allowed


def test_a_cpu_budget_divides_by_the_free_cores_only_and_says_so():
    """20 s of work for 2 workers: 10 s with both cores free, 20 s when one is busy elsewhere."""
    work = [Work("training steps", 10, 2.0)]
    free = Budget("nb", "cpu", 2, work, parallel=2, cores=CoreCheck(2, 0.5))
    busy = Budget("nb", "cpu", 2, work, parallel=2, cores=CoreCheck(2, 2.0))
    assert free.seconds == pytest.approx(10) and busy.seconds == pytest.approx(20)
    assert "with 2 worker processes (2 of 2 cores free, load average 0.5)" in free.text()
    assert "only 1 of 2 cores is free, at a load average of 2.0" in busy.text() and "divides by 1, not 2" in busy.text()
    assert busy.record()["cores"] == {"allowed": 2, "load_average": 2.0, "free": 1, "divides_by": 1}
    unknown = Budget("nb", "cpu", 2, work, parallel=2, cores=CoreCheck(2, None))
    assert unknown.seconds == pytest.approx(10) and "all are assumed free" in unknown.text()


# ------------------------------------------------------------------------------- 04 under the authors' protocol
def test_the_curriculum_budget_counts_the_authors_epochs():
    """protocol authors at the paper's 50 epochs: Naive, LwF and A-GEM train 20 (the released configs), the
    rest 50. Two datasets of 2 x 10 rows, batch 8: 3 steps a task, so a Naive stream is 2 x 3 x 20 = 120 steps
    per order (240 for both), an EWC stream 2 x 3 x 50 = 300 (600)."""
    from clkit.curriculum import budget as cb
    from clkit.curriculum.protocol import strategy_epochs

    epochs = strategy_epochs("authors", ["naive", "lwf", "agem", "ewc"], 50)
    assert epochs == {"naive": 20, "lwf": 20, "agem": 20}
    w = cb.count_work({"a": (2, 1), "b": (2, 1)}, ["naive", "lwf", "agem", "ewc"], seeds=1, epochs=50,
                      difficulty_epochs=1, batch_size=8, strategy_epochs=epochs)
    assert {s: x.steps for s, x in w["per_strategy"].items()} == {"naive": 240, "lwf": 240, "agem": 240, "ewc": 600}
    timings = {"per_step": 1e-3, "per_row": 0.0, "forward": 0.0, "per_sample": 0.0, "what": "given"}
    kw = dict(seeds=1, epochs=50, difficulty_epochs=1, batch_size=8, backbone="mlp", image_size=8, channels=1,
              timings=timings, flops=False)
    authors = cb.estimate({"a": (2, 1), "b": (2, 1)}, ["naive", "ewc"], strategy_epochs=epochs, **kw)
    paper = cb.estimate({"a": (2, 1), "b": (2, 1)}, ["naive", "ewc"], **kw)
    # 2 single-task runs of 3 steps; naive 240 (authors) or 600 (paper); ewc 600
    assert authors.work[0].count == 6 + 240 + 600 and paper.work[0].count == 6 + 600 + 600
    assert "20 for naive" in authors.text() and "the authors' configs" in authors.text()
