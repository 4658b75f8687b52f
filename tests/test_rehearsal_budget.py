"""The shared rehearsal rule (clkit.rehearsal) and the run budget (clkit.budget)."""

import math
import os

import pytest
import torch

from clkit.budget import Budget, Work, format_duration, time_per_call
from clkit.rehearsal import MIN_SEEDS, RULE, Cap, Plan, cut_value


def _forget_rehearsals(monkeypatch):
    """No earlier rehearsal in this process; whatever the test's rehearsal sets is undone after it."""
    monkeypatch.setenv("CLKIT_DATA_BEFORE_REHEARSAL", "")
    monkeypatch.delenv("CLKIT_DATA_BEFORE_REHEARSAL")


def test_the_rule_caps_sizes_and_keeps_everything_else():
    plan = Plan("nb", (Cap("epochs", 2, "epochs per task"), Cap("seeds", MIN_SEEDS, "seeds"),
                       Cap("sigmas", 2, "stream widths")), {"download": False})
    values = {"epochs": 50, "seeds": [1, 2, 3, 4, 5, 6], "sigmas": [3.0], "download": True,
              "backbone": "wide_vgg9", "lr": 0.001}
    changes, rows = plan.cut(values)
    assert changes == {"epochs": 2, "seeds": [1, 2, 3, 4], "download": False}
    assert [r["parameter"] for r in rows] == ["epochs", "seeds", "download"]
    assert rows[0] == {"parameter": "epochs", "given": 50, "used": 2, "what": "epochs per task"}
    # a value under its cap, and parameters the plan does not name, are left alone
    assert "sigmas" not in changes and "backbone" not in changes and "lr" not in changes
    assert "min(given, cap)" in RULE and str(MIN_SEEDS) in RULE


def test_cut_value_never_raises_a_value_and_keeps_types():
    assert cut_value(3, 10) == 3 and cut_value(30, 10) == 10 and isinstance(cut_value(3.5, 2), float)
    assert cut_value(False, 0) is False and cut_value({"a": 1}, 0) == {"a": 1}


def test_prepare_writes_fixtures_points_the_cache_and_records(tmp_path, monkeypatch):
    monkeypatch.setenv("CLKIT_DATA", "/nonexistent")
    _forget_rehearsals(monkeypatch)
    calls = []

    def fixtures(values):
        calls.append(values["n"])
        return {"mnist": {"per_class_train": values["n"], "per_class_test": 1}}

    plan = Plan("nb", (Cap("n", 2, "images per class"),), fixtures=fixtures,
                after=lambda values, files: {"path": str(files["mnist"])})
    rh = plan.prepare({"n": 500, "path": ""}, tmp_path / "rh", seed=3)
    assert calls == [2]                                   # fixtures see the cut values
    assert os.environ["CLKIT_DATA"] == str(tmp_path / "rh")
    assert (tmp_path / "rh" / "MNIST" / "raw").is_dir()
    assert rh.changes == {"n": 2, "path": str(rh.files["mnist"])}
    assert list(rh.table().index) == ["n", "path"]
    rec = rh.record()
    assert rec["data_root"] == str(tmp_path / "rh") and rec["cut"][0]["used"] == 2
    assert "Rehearsal run" in rh.note() and "mnist" in rh.note()
    from clkit.data.images import load_image_dataset

    d = load_image_dataset("mnist")                       # the real loader reads the fabricated files
    assert d.x_train.shape == (20, 28, 28) and str(tmp_path / "rh") in d.source


def test_budget_adds_work_and_divides_by_workers():
    b = Budget("nb", "cpu", 12, [Work("training steps", 1000, 0.01, "3 steps"),
                                 Work("evaluation passes", 20, 0.5)], parallel=2, detail="3 x 4")
    assert b.seconds == pytest.approx((10 + 10) / 2)
    rec = b.record()
    assert rec["estimated_seconds"] == pytest.approx(10) and rec["work"][1]["count"] == 20
    assert "12 trainings (3 x 4)" in b.text() and "1,000 training steps at 10.0 ms" in b.text()
    assert "about 10 s on cpu with 2 worker processes" in b.text()


def test_format_duration_and_timing():
    assert format_duration(math.inf) == "unknown" and format_duration(0.004) == "0.004 s"
    assert format_duration(3600 * 5 + 60) == "5 h 1 min"
    calls = []
    t = time_per_call(lambda: calls.append(1), warmup=2, repeats=3)
    assert len(calls) == 5 and t >= 0
    x = torch.randn(64, 64)
    assert time_per_call(lambda: x @ x, device="cpu", repeats=2) > 0


def test_default_root_is_in_the_users_cache_and_stays_there(tmp_path, monkeypatch):
    """Rehearsal files go to <cache>/rehearsal/<notebook> (paths stay valid after the run); a second
    rehearsal in the same process still finds the user's cache, not the first rehearsal's folder."""
    from clkit.rehearsal import default_root

    monkeypatch.setenv("CLKIT_DATA", str(tmp_path / "cache"))
    _forget_rehearsals(monkeypatch)
    first = default_root("01_x")
    assert first == tmp_path / "cache" / "rehearsal" / "01_x"
    Plan("01_x", ()).prepare({}, first)
    assert os.environ["CLKIT_DATA"] == str(first)
    assert default_root("02_y") == tmp_path / "cache" / "rehearsal" / "02_y"


# ------------------------------------------------------------- one GPU, estimated from FLOPs (issue 39)

def test_training_flops_count_a_linear_layer_exactly():
    """A linear layer on N rows is 2 N in out FLOPs forward; backward computes the weight gradient (as
    much again) and, where the input needs one, the input gradient: 3x the forward in all."""
    from clkit.budget import training_flops

    N, i, o = 16, 7, 5
    layer = torch.nn.Linear(i, o)
    f = training_flops(layer, torch.zeros(N, i))
    assert f["forward"] == 2 * N * i * o and f["backward"] == 2 * N * i * o and f["rows"] == N
    # a second layer needs its input gradient: the step is 3x its forward
    net = torch.nn.Sequential(torch.nn.Linear(i, i), torch.nn.Linear(i, o))
    f2 = training_flops(net, torch.zeros(N, i))
    assert f2["step"] - f["step"] == 2 * N * i * i * 2 + 2 * N * i * o   # layer 1: fwd + weight grad; layer 2: input grad
    assert training_flops(layer, torch.zeros(2 * N, i))["step"] == 2 * f["step"]   # linear in the rows


def test_training_flops_count_grouped_convolutions_exactly():
    """Each gradient of a convolution costs its forward, for any groups (torch's own backward formula
    counts a depthwise convolution's weight gradient channels times over)."""
    from clkit.budget import training_flops

    C, k, hw, N = 32, 3, 8, 4
    for groups in (1, C):
        conv = torch.nn.Conv2d(C, C, k, padding=1, groups=groups, bias=False)
        net = torch.nn.Sequential(torch.nn.Conv2d(C, C, 1, bias=False), conv, torch.nn.Flatten())
        f = training_flops(net, torch.zeros(N, C, hw, hw), loss=lambda out, y: out.sum())
        first = 2 * N * hw * hw * C * C            # the 1x1 conv: forward, and its weight gradient only
        second = 2 * N * hw * hw * C * (C // groups) * k * k
        assert f["forward"] == first + second
        assert f["backward"] == first + 2 * second


def test_the_gpu_line_is_labelled_an_estimate_and_adds_up():
    from clkit.budget import GPU_THROUGHPUT, H100_FP32_PEAK, SUSTAINED_FRACTION, FlopEstimate

    assert GPU_THROUGHPUT == H100_FP32_PEAK * SUSTAINED_FRACTION
    e = FlopEstimate(GPU_THROUGHPUT * 3600, detail="x")
    b = Budget("nb", "cpu", 2, [Work("training steps", 10, 1.0)], gpu=e)
    assert e.seconds == pytest.approx(3600) and "**On one GPU: about 1 h 0 min, estimated from FLOPs, not measured**" \
        in b.text()
    assert b.text().startswith("**Budget:**") and b.record()["gpu_estimate"]["measured"] is False
    assert "gpu_estimate" not in Budget("nb", "cpu", 2, [Work("training steps", 10, 1.0)]).record()


def test_the_curriculum_budget_prices_its_counted_rows_in_flops():
    """04's one-GPU line: every row through a training step (memory and per-sample rows included) at a
    training step's FLOPs per row, every forward row at a forward pass's, over the same counts as the
    CPU line."""
    from clkit.curriculum import budget as cb

    flops = cb.step_flops(backbone="mlp", image_size=8, channels=1, batch_size=8, num_classes=20)
    timings = {"per_step": 0.0, "per_row": 1e-3, "forward": 1e-3, "per_sample": 1e-3, "what": "given"}
    b = cb.estimate({"a": (2, 1), "b": (2, 1)}, ["naive", "ewc", "replay"], seeds=2, epochs=1, difficulty_epochs=1,
                    batch_size=8, backbone="mlp", image_size=8, channels=1, timings=timings, flops=flops,
                    hyper={"memory_size": 4})
    count = {w.name: w.count for w in b.work}
    trained = count["rows through training steps"] + count["per-sample gradient rows"]
    assert b.gpu.flops == pytest.approx(trained * flops["step_per_row"]
                                        + count["test rows evaluated"] * flops["forward_per_row"])
    assert cb.estimate({"a": (2, 1), "b": (2, 1)}, ["naive"], seeds=1, epochs=1, difficulty_epochs=1, batch_size=8,
                       backbone="mlp", image_size=8, channels=1, timings=timings, flops=False).gpu is None
