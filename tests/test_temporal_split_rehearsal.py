"""Notebook 03's split on the paper set's rehearsal (issue 52): cases of a sweep over ``temporal_cases``, merged by
``clkit merge``, give the results.json of one run -- every number and verdict. The notebook runs end to end on
the fabricated FMoW file at 224 px (uint8 images converted per batch, the memory plan), with the learners cut
to erm, finetune and EWC on an MLP of one narrow layer and 4 periods to keep it short (``make rehearse``)."""

import json
import time

import pytest

pytestmark = [pytest.mark.paper_rehearsal, pytest.mark.notebook]

OVER = {"rehearse": True, "backbone": "mlp", "hidden": [8], "learners": ["erm", "finetune", "ewc"], "max_periods": 4}
#: two cases mixing learners, verdict seeds (0-3: the rehearsal's 4) and null-control seeds
CASES = [["erm|0", "finetune|0", "finetune|1", "ewc|2", "finetune|10000", "finetune|10001"],
         ["ewc|0", "finetune|2", "finetune|3", "ewc|1", "ewc|3", "finetune|10002", "finetune|10003"]]


def _strip(res):
    """What a merge may change: where it ran (the device, the host's free memory in the memory plan), the budget
    (its note says it is a merge), the rehearsal's folder."""
    r = dict(res["results"])
    for k in ("budget", "device", "rehearsal", "memory_plan"):
        r.pop(k, None)
    return r


def test_paper_split_then_merge_equals_one_run(tmp_path):
    from clkit.run import run_notebook
    from clkit.sweep import run_sweep
    from clkit.sweep.merge import merge_sweep
    from clkit.temporal import split as ts

    every = ts.all_cases(OVER["learners"], ["finetune", "ewc"], 0, 4, verdicts=True)
    assert sorted(sum(CASES, [])) == sorted(ts.case_key(*c) for c in every)
    start = time.perf_counter()
    whole = run_notebook("03_temporal_metrics", "paper", list(OVER.items()), out=tmp_path / "whole", progress=False)
    grid = {"params": "paper", "grid": {"temporal_cases": CASES, **{k: [v] for k, v in OVER.items()}}}
    run_sweep("03_temporal_metrics", grid, out=tmp_path / "sweep", workers=1)
    merged = merge_sweep(tmp_path / "sweep", out=tmp_path / "merged", progress=False)
    seconds = time.perf_counter() - start
    a = json.loads((whole / "results.json").read_text())
    b = json.loads((merged / "results.json").read_text())
    assert a["results"]["memory_plan"]["dtype"] == "uint8" and a["params"]["image_size"] == 224
    assert {k: v for k, v in a["results"]["memory_plan"].items() if "host" not in k and k != "text"} == {
        k: v for k, v in b["results"]["memory_plan"].items() if "host" not in k and k != "text"}
    assert _strip(a) == _strip(b)                        # every number, bitwise (JSON keeps float64)
    va, vb = a["results"]["verdicts"], b["results"]["verdicts"]
    assert len(va) == 6 + 6 and [v["decision"] for v in va] == [v["decision"] for v in vb]
    assert a["results"]["controls_hold"] == b["results"]["controls_hold"]
    assert sorted(a["figures"]) == sorted(b["figures"])
    assert b["params"]["temporal_from"] and b["params"]["temporal_cases"] == []
    assert "A merge of the split's cases" in b["results"]["budget"]["note"]
    found = []     # a case trains only its matrices, records them and skips the analysis
    for path in (tmp_path / "sweep" / "03_temporal_metrics").glob("*/results.json"):
        rc = json.loads(path.read_text())["results"]
        case = rc["temporal_case"]
        assert case["cases"] in CASES and sorted(case["A"]) == sorted(case["cases"])
        assert "verdicts" not in rc and "learners" not in rc and "paper_tables" not in rc
        assert "A case of the split grid" in rc["budget"]["note"]
        found.append(case["cases"])
    assert sorted(found) == sorted(CASES)
    print(f"whole + 2 cases + merge: {seconds:.0f} s")     # reported, never asserted (timings decide no test)
