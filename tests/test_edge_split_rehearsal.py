"""Notebook 02's split on the paper set's rehearsal (issue 50): cases of a sweep over ``edge_cases``, merged by
``clkit merge``, give the results.json of one run -- every number and verdict. Needs the notebook's
``edge_cases`` / ``cases_from`` parameters (clkit.edge.split). Four notebook runs (the whole run once, two
cases, the merge); kept to about two minutes on 2 cores (``make rehearse``) by the smallest set that still
exercises every path of the split: one learner trained from scratch (EWC) and one around the ViT (RanPAC,
under the paper set's ``protocol: authors`` with its first-task adapter), Fig. 4 with one CLIP encoder, the
classic settings on one dataset."""

import json

import pytest

pytestmark = pytest.mark.paper_rehearsal

#: one learner of each kind the split merges differently (a batched-tree strategy from scratch, a ViT one);
#: Fig. 5 is trained by the same two (the rehearsal's one learner of each kind)
LEARNERS = ["ewc", "ranpac"]
#: the paper set's RanPAC setting (the rehearsal cuts the projection to its own size)
KWARGS = {"ranpac": {"projection_dim": 10000}}
#: sizes the split does not depend on, cut below the rehearsal's: Fig. 4 with one encoder (its EDGE triplet is
#: still looked up in the merged truth), section 8 on one classic dataset
SMALL = {"encoder_sizes": ["ViT-B-16"], "classic_datasets": ["cifar100"]}
#: two cases, each with the truth of one learner and Fig. 5 of the other: every unit exactly once
CASES = [["truth|ewc", "bounds|cifar100|ranpac"], ["truth|ranpac", "bounds|cifar100|ewc"]]


def _strip(res):
    """What a merge may change: where it ran, the budget (a merge trains nothing, so it prints none), the
    rehearsal's cache folder."""
    r = dict(res["results"])
    for k in ("budget", "device", "rehearsal"):
        r.pop(k, None)
    return r


def test_split_then_merge_equals_one_run(tmp_path):
    from clkit.run import run_notebook
    from clkit.sweep import run_sweep
    from clkit.sweep.merge import merge_sweep

    over = [("rehearse", True), ("learners", LEARNERS), ("learner_kwargs", KWARGS), *SMALL.items()]
    whole = run_notebook("02_edge", "paper", over, out=tmp_path / "whole", progress=False)
    grid = {"params": "paper", "grid": {"edge_cases": CASES, "rehearse": [True], "learners": [LEARNERS],
                                        "learner_kwargs": [KWARGS], **{k: [v] for k, v in SMALL.items()}}}
    run_sweep("02", grid, out=tmp_path / "sweep", workers=1)
    merged = merge_sweep(tmp_path / "sweep", out=tmp_path / "merged", progress=False)
    a = json.loads((whole / "results.json").read_text())
    b = json.loads((merged / "results.json").read_text())
    assert "budget" in a["results"] and "budget" not in b["results"]    # the merge trains nothing
    assert {s["name"] for s in a["results"]["budget"]["stages"]} >= {"ground truth", "Fig. 5 (classic splits)"}
    assert _strip(a) == _strip(b)                        # every number, bitwise (JSON keeps float64)
    assert [v["decision"] for v in a["results"]["verdicts"]] == [v["decision"] for v in b["results"]["verdicts"]]
    assert set(b["results"]["true_accuracy"]) == set(LEARNERS) and set(b["results"]["bounds"]["cifar100"]["bounds"]) \
        == set(LEARNERS)
    assert len(b["results"]["encoder_sizes_result"]["encoders"]) == 1
    # a case trains only its units, records them exactly and skips the analysis
    paths = sorted((tmp_path / "sweep" / "02_edge").glob("*/results.json"))
    assert len(paths) == len(CASES)
    for path in paths:
        rc = json.loads(path.read_text())["results"]
        assert rc["split_case"] in CASES and "verdicts" not in rc and "protocols" not in rc and "classic" not in rc
        units = rc["split_case"]
        assert set(rc["truth_case"]["values"]) == {u.split("|")[1] for u in units if u.startswith("truth|")}
        assert len(rc["truth_case"]["positions"]) == 90                          # every order of 6 in 3
        assert set(rc["bounds"]["cifar100"]["values"]) == {u.split("|")[2] for u in units if u.startswith("bounds|")}
        # a case prices the truth it trains; the whole run's budget prices every unit of the split
        units_priced = {u for s in rc["budget"]["stages"] for u in s["units"]}
        assert units_priced == {u for u in units if u.startswith("truth|")}
    assert {u for s in a["results"]["budget"]["stages"] for u in s["units"]} == {u for c in CASES for u in c}
