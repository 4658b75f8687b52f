"""benchmarks/gpu_check.py: its comparison of two runs, and the script itself on the CPU at quick sizes."""

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
gpu_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_check)


def test_numbers_within_tolerance_and_the_largest_difference_named():
    a = {"acc": {"ewc": 0.80, "si": 0.50}, "n": 4, "device": {"memory": 80.0},
         "budget": {"estimated_seconds": 3.0}, "curve": [0.1, None]}
    b = {"acc": {"ewc": 0.81, "si": 0.70}, "n": 4, "device": {"memory": 0.0},
         "budget": {"estimated_seconds": 9.0}, "curve": [0.1, None]}
    c = gpu_check.compare_results(a, b)
    # acc.ewc: |0.01| <= 0.02 + 0.05 * 0.81; acc.si: 0.2 is not; NaN == NaN; device/budget left out
    assert c["numbers"] == 5 and c["close"] == 4
    assert c["largest"][0] == "acc.si" and math.isclose(c["largest"][2], 0.70)
    assert c["missing"] == []


def test_moved_verdicts_are_named():
    va = [{"comparison": "ewc: M2I - I2M", "decision": "higher"}, {"comparison": "si", "decision": "no difference"}]
    vb = [{"comparison": "ewc: M2I - I2M", "decision": "no difference"}, {"comparison": "si", "decision": "no difference"}]
    c = gpu_check.compare_results({"verdicts": va}, {"verdicts": vb})
    assert c["verdicts"] == 2 and c["same_verdicts"] == 1 and c["moved"] == ["ewc: M2I - I2M"]


def test_the_script_runs_its_timed_units_on_the_cpu(tmp_path):
    md = tmp_path / "gpu-check.md"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--device", "cpu", "--quick",
                           "--only", "steps", "--markdown", str(md)], capture_output=True, text=True, cwd=ROOT,
                          env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = md.read_text()
    assert text.startswith("### GPU check on ") and "(cpu; torch" in text
    for unit in ("WideVGG9 SGD step", "wide_vgg9_bn SGD step", "efficientnet_b1 SGD step", "resnet34_bn SGD step",
                 "resnet32 SGD step", "L2P step", "transformer AdamW step", "GCN online step", "GCN evaluation",
                 "EDGE truth"):
        assert unit in text
    assert "error" not in text and "| nan" not in text


def test_paper_sized_models_take_a_step_on_the_cpu(one_torch_thread):
    """The paper-only architectures at their paper sizes -- WideVGG9 on 64x64 images, the 8-block
    forecaster on 288 steps of context -- take a training step (a small batch) on the CPU and on meta,
    so the sizes the GPU check times are ones the code runs."""
    import torch

    from clkit.device import DeviceAudit
    from clkit.models.cnn import make_backbone
    from clkit.models.transformer import TimeSeriesTransformer
    from clkit.strategies import Task, make_strategy

    cases = [(lambda: make_backbone("wide_vgg9", 3, 60, 64), (3, 64, 64), "cross_entropy", torch.tensor([0, 1, 2, 3])),
             (lambda: TimeSeriesTransformer(num_features=12, context=288, d_model=32, num_layers=8, num_heads=4,
                                            target_index=0), (288, 12), "mse", torch.zeros(4, 1))]
    for build, shape, loss, y in cases:
        for device in ("cpu", "meta"):
            torch.manual_seed(0)
            s = make_strategy("naive", build(), device=device, loss=loss, batch_size=4)
            task = Task(torch.randn(4, *shape), y)
            with DeviceAudit(device):
                history = s.train_task(task)
            assert len(history) == 1 and (device == "meta" or math.isfinite(history[0]))
