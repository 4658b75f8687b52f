"""Notebook 02's split on the paper set's rehearsal (issue 50): cases of a sweep over ``edge_cases``, merged by
``clkit merge``, give the results.json of one run -- every number and verdict. Needs the notebook's
``edge_cases`` / ``cases_from`` parameters (clkit.edge.split). Minutes on 2 cores: ``make rehearse``."""

import json

import pytest

pytestmark = pytest.mark.paper_rehearsal

#: one learner of each kind keeps the rehearsal short; Fig. 5 is trained by the same three
LEARNERS = ["ewc", "ranpac", "l2p"]
KWARGS = {"ranpac": {"projection_dim": 10000}}


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

    over = [("rehearse", True), ("learners", LEARNERS), ("learner_kwargs", KWARGS)]
    whole = run_notebook("02_edge", "paper", over, out=tmp_path / "whole", progress=False)
    cases = [["truth|ewc", "truth|l2p", "bounds|cifar100|ranpac"],
             ["truth|ranpac", "bounds|cifar100|ewc", "bounds|cifar100|l2p"]]
    grid = {"params": "paper", "grid": {"edge_cases": cases, "rehearse": [True], "learners": [LEARNERS],
                                        "learner_kwargs": [KWARGS]}}
    run_sweep("02", grid, out=tmp_path / "sweep", workers=1)
    merged = merge_sweep(tmp_path / "sweep", out=tmp_path / "merged", progress=False)
    a = json.loads((whole / "results.json").read_text())
    b = json.loads((merged / "results.json").read_text())
    assert _strip(a) == _strip(b)                        # every number, bitwise (JSON keeps float64)
    assert [v["decision"] for v in a["results"]["verdicts"]] == [v["decision"] for v in b["results"]["verdicts"]]
    assert set(b["results"]["true_accuracy"]) == set(LEARNERS) and set(b["results"]["bounds"]["cifar100"]["bounds"]) \
        == set(LEARNERS)
    # a case trains only its units, records them exactly and skips the analysis
    for path in (tmp_path / "sweep" / "02_edge").glob("edge_cases=*/results.json"):
        rc = json.loads(path.read_text())["results"]
        assert rc["split_case"] in cases and "verdicts" not in rc and "protocols" not in rc
        units = rc["split_case"]
        assert set(rc["truth_case"]["values"]) == {u.split("|")[1] for u in units if u.startswith("truth|")}
        assert len(rc["truth_case"]["positions"]) == 90                          # every order of 6 in 3
        assert set(rc["bounds"]["cifar100"]["values"]) == {u.split("|")[2] for u in units if u.startswith("bounds|")}
