"""01's host-memory plan against the memory a paper-sized CL part really holds (issue 52).

A fresh interpreter builds the paper set's CL windows at stride 1 -- 100 series of 40 weeks at 10 minutes
(12 features), the 9-, 30- and 44-day splits, context 288 -- as on-the-fly views, draws a training batch
(256 windows) and an evaluation batch (4,096) from every task as the CL loop does, and reports its peak
resident memory (``resource.getrusage``). The plan made for that run must cover the peak, and it must refuse
a machine smaller than itself, naming ``cl_series``."""

import json
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import json, resource
    import numpy as np, torch
    from clkit.budget import process_memory_bytes
    from clkit.taskification import budget, report
    from clkit.taskification.forecasting import make_forecast_tasks

    length = 40 * 7 * 144
    names, splits, *_ = report.make_splits(length, 10.0, [9, 30, 44], 2.0, 1.0)
    values = np.random.default_rng(0).random((100, length, 12), dtype=np.float32)
    plan = budget.memory_plan(splits, cl_series=100, context=288, stride=1, context_across_tasks=False,
                              num_features=12, batch_size=256, memory_size=500, analysed_bytes=values.nbytes,
                              process_bytes=process_memory_bytes())
    g = torch.Generator().manual_seed(0)
    windows = 0
    for name in names:                       # the notebook builds every split's tasks at once
        tasks = make_forecast_tasks(values, splits[name], 288, 1, stride=1, windows="view")
        for t in tasks:
            for part, rows in ((t.train, 256), (t.val, 4096), (t.test, 4096)):
                n = len(part)
                windows += n
                idx = torch.randperm(n, generator=g)[:rows]
                x = part.x[idx]
                assert x.shape[1:] == (288, 12)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024      # KiB on Linux
    print(json.dumps({"peak": peak, "plan": plan.bytes, "items": dict(plan.items), "windows": windows}))
""")


@pytest.mark.paper_rehearsal
def test_the_paper_cl_part_at_stride_1_stays_under_its_memory_plan():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["windows"] > 10_000_000                     # every target step of 100 series, three splits
    assert r["peak"] <= r["plan"], r                     # the plan covers what the run held at its peak
    assert r["plan"] < 32 * 2 ** 30                      # and fits a 32 GiB host


def test_the_plan_refuses_a_machine_smaller_than_itself_naming_cl_series():
    from clkit.taskification import budget, report

    names, splits, *_ = report.make_splits(40 * 7 * 144, 10.0, [9, 30, 44], 2.0, 1.0)
    plan = budget.memory_plan(splits, cl_series=100, context=288, stride=1, context_across_tasks=False,
                              num_features=12, batch_size=256, memory_size=500,
                              analysed_bytes=100 * 40 * 7 * 144 * 12 * 4, process_bytes=2 * 2 ** 30)
    assert plan.check(plan.gib + 0.01) is plan
    with pytest.raises(ValueError, match=r"^cl_series: the run plans .* GiB of host memory .* more than this "
                                         r"machine's 1 GiB; lower cl_series"):
        plan.check(1.0)
