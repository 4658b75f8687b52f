"""Notebook 04's split (issue 52): the cases of a sweep over ``curriculum_cases``, merged by ``clkit merge``,
give the results.json of one run -- every number and verdict.

The split does not depend on the backbone or the data (a case trains the same streams a whole run trains,
under the same seeds), so the four runs (whole, two cases, merge) use the smoke set's sizes with naive and
replay (the null control: replay). The same test on the EfficientNet-B1 paper set's rehearsal (three
fabricated datasets) passed too, but took 7 min 34 s wall on 2 loaded cores (2026-12-08): too long for
``make rehearse``, whose own rehearsal of that set checks the set end to end."""

import json

import pytest

pytestmark = pytest.mark.paper_rehearsal

STRATEGIES = ["naive", "replay"]
DATASETS = ["digits", "mnist_subset", "fashion_mnist"]
PARAMS = "smoke"
#: two cases, one with the null control (the merge takes the run's difficulty from naive's case)
CASES = [["naive"], ["replay", "null"]]


def _strip(res):
    """What a merge may change: where it ran, the budget (its note says it is a merge), the rehearsal's folder."""
    r = dict(res["results"])
    for k in ("budget", "device", "rehearsal"):
        r.pop(k, None)
    return r


def test_split_then_merge_equals_one_run(tmp_path):
    from clkit.curriculum import split
    from clkit.run import run_notebook
    from clkit.sweep import run_sweep
    from clkit.sweep.merge import merge_sweep

    assert sorted(sum(CASES, [])) == sorted(split.all_cases(STRATEGIES))
    over = {"strategies": STRATEGIES, "learner_kwargs": {}, "datasets": DATASETS}
    whole = run_notebook("04_curriculum", PARAMS, list(over.items()), out=tmp_path / "whole", progress=False)
    grid = {"params": PARAMS,
            "grid": {"curriculum_cases": CASES, **{k: [v] for k, v in over.items()}}}
    run_sweep("04", grid, out=tmp_path / "sweep", workers=1)
    merged = merge_sweep(tmp_path / "sweep", out=tmp_path / "merged", progress=False)
    a = json.loads((whole / "results.json").read_text())
    b = json.loads((merged / "results.json").read_text())
    assert a["results"]["strategies_run"] == STRATEGIES
    assert a["results"]["datasets_loaded"] == DATASETS
    assert _strip(a) == _strip(b)                        # every number, bitwise (JSON keeps float64)
    va, vb = a["results"]["verdicts"], b["results"]["verdicts"]
    assert len(va) >= 6 and [v["decision"] for v in va] == [v["decision"] for v in vb]
    assert sorted(a["figures"]) == sorted(b["figures"])
    assert b["params"]["curriculum_from"] and b["params"]["curriculum_cases"] == []
    assert "A merge of the split's cases" in b["results"]["budget"]["note"]
    found = []
    for path in (tmp_path / "sweep" / "04_curriculum").glob("*/results.json"):
        rc = json.loads(path.read_text())["results"]
        case = rc["curriculum_case"]           # a case trains its streams only and skips the analysis
        assert case["cases"] in CASES and "verdicts" not in rc and "metrics" not in rc and "summary" not in rc
        assert set(case["R"]["0"]["M2I"]) == set(case["cases"]) - {"null"}
        assert bool(case["R_control"]) == ("null" in case["cases"])
        n_seeds = a["params"]["seeds"]
        assert len(case["difficulty"]) == (2 * n_seeds if "null" in case["cases"] else n_seeds)  # offset seeds' too
        assert "A case of a split" in rc["budget"]["note"]
        found.append(case["cases"])
    assert sorted(found) == sorted(CASES)
