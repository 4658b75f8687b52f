"""``benchmarks/gpu_check.py --paper-units`` (issue 51): its plan names one unit for every paper set and runs
without a GPU (``--dry-run``); a unit builds, steps and is compared with the budget's FLOP estimate."""

import importlib.util
import subprocess
import sys
from pathlib import Path

from clkit.notebooks import list_notebooks, param_sets

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gpu_check_units", ROOT / "benchmarks" / "gpu_check.py")
gpu_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_check)


def test_the_plan_covers_every_paper_set_and_runs_without_a_gpu():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--paper-units", "--dry-run"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for nb in list_notebooks():
        for s in param_sets(nb):
            if s.startswith("paper") or s == "imagenet_r":
                assert f"| {nb} {s} |" in proc.stdout, (nb, s)
    bad = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--dry-run"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and "--dry-run goes with --paper-units" in bad.stderr


def test_a_unit_steps_and_is_compared_with_the_flop_estimate(one_torch_thread):
    unit = next(u for u in gpu_check.paper_units_plan() if u["set"] == "03_temporal_metrics paper_yearbook")
    name, step, model, x, y = unit["build"]("cpu", True)
    step()
    assert "yearbook_cnn SGD step, 32x32" in name and x.shape == (8, 1, 32, 32)
    from clkit.budget import FlopEstimate, training_flops

    flops = training_flops(model, x, y)["step"]
    assert flops > 0 and FlopEstimate(flops, steps=1).seconds > 0
    assert gpu_check.RATIO_FLAG == 1.5
