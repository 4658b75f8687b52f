"""Notebook 01's split: cases of the split grid, merged, give the results.json of one run (issue 52)."""

import json

import numpy as np
import pytest

from clkit.taskification import split

pytestmark = pytest.mark.paper_rehearsal


def test_runs_parse_and_refuse():
    assert split.parse_runs([], ["naive"], ["2d"], 1) == [("naive", "2d", 0), ("naive", "2d", 1)]
    assert split.parse_runs(["naive|2d|1"], ["naive"], ["2d"], 1) == [("naive", "2d", 1)]
    with pytest.raises(ValueError, match="cl_runs: 'naive|4d|0' is not a CL run"):
        split.parse_runs(["naive|4d|0"], ["naive"], ["2d"], 1)


def _strip(res):
    """What a merge may change: where it ran, how long the budget's timings were, the split's own parameters."""
    r = dict(res["results"])
    for k in ("budget", "device", "summary"):
        r.pop(k, None)
    return r


def test_split_then_merge_equals_one_run(tmp_path):
    from clkit.run import run_notebook
    from clkit.sweep import run_sweep
    from clkit.sweep.merge import merge_sweep

    small = {"methods": ["naive", "ewc"], "window_days": [2, 4], "cl_seeds": 2, "num_series": 2}
    over = [f"{k}={json.dumps(v)}" for k, v in small.items()]
    whole = run_notebook("01", "smoke", [(k, json.dumps(v)) for k, v in small.items()], out=tmp_path / "whole",
                         progress=False)
    runs = [split.run_key(*r) for r in split.all_runs(small["methods"], ["2d", "4d"], 2)]
    grid = {"params": "smoke", "grid": {"cl_runs": [runs[:5], runs[5:]]},
            "cases": []}
    grid["grid"].update({k: [v] for k, v in small.items()})
    run_sweep("01", grid, out=tmp_path / "sweep", workers=1)
    # the merge refuses a grid varying more than cl_runs only when they vary: here the others have one value each
    merged = merge_sweep(tmp_path / "sweep", out=tmp_path / "merged", progress=False)
    a = json.loads((whole / "results.json").read_text())
    b = json.loads((merged / "results.json").read_text())
    assert over and b["params"]["cl_from"] and a["params"]["cl_from"] == ""
    assert _strip(a) == _strip(b)          # every number and verdict, bitwise
    assert [v["decision"] for v in a["results"]["verdicts"]] == [v["decision"] for v in b["results"]["verdicts"]]
    # a case trains only its runs and skips the analysis
    case = next((tmp_path / "sweep" / "01_taskification").glob("cl_runs=*/results.json"))
    rc = json.loads(case.read_text())["results"]
    assert len(rc["cl"]) == 5 or len(rc["cl"]) == len(runs) - 5
    assert "bps" not in rc and "verdicts" not in rc
    assert np.isfinite(np.array(next(iter(rc["cl"].values()))["M"], dtype=float)).all()
