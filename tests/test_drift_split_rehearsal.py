"""Notebook 05's split on the Reddit paper set's rehearsal (issue 52): cases of a sweep over ``drift_cases``, merged
by ``clkit merge``, give the results.json of one run -- every number and verdict. The notebook runs end to end on
Reddit's fabricated files (torch-geometric's loader, sampled neighbourhoods as on the real graph), with the methods
cut to Bare, Joint and ER to keep it short (about a minute on 2 cores: ``make rehearse``)."""

import json

import pytest

pytestmark = pytest.mark.paper_rehearsal

METHODS = ["bare", "joint", "er"]
SWEEP = ["bare", "er"]
SEEDS = [1, 2, 3, 4]                 # the rehearsal's (and the verdict rule's) minimum
#: two cases, each mixing methods, seeds and null controls; the first seed's curves come from both
CASES = [["bare|1", "bare|2", "bare|3", "bare|4", "er|1", "er|2", "null|1", "null|2"],
         ["joint|1", "joint|2", "joint|3", "joint|4", "er|3", "er|4", "null|3", "null|4"]]


def _strip(res):
    """What a merge may change: where it ran, the budget (its note says it is a merge), the rehearsal's cache
    folder."""
    r = dict(res["results"])
    for k in ("budget", "device", "rehearsal"):
        r.pop(k, None)
    return r


def test_reddit_split_then_merge_equals_one_run(tmp_path):
    from clkit.drift import split as ds
    from clkit.run import run_notebook
    from clkit.sweep import run_sweep
    from clkit.sweep.merge import merge_sweep

    assert sorted(sum(CASES, [])) == sorted(ds.case_key(*c) for c in ds.all_cases(METHODS, SWEEP, SEEDS))
    over = {"rehearse": True, "methods": METHODS, "sweep_methods": SWEEP, "seeds": SEEDS}
    whole = run_notebook("05_drift", "paper_reddit", list(over.items()), out=tmp_path / "whole", progress=False)
    grid = {"params": "paper_reddit", "grid": {"drift_cases": CASES, **{k: [v] for k, v in over.items()}}}
    run_sweep("05", grid, out=tmp_path / "sweep", workers=1)
    merged = merge_sweep(tmp_path / "sweep", out=tmp_path / "merged", progress=False)
    a = json.loads((whole / "results.json").read_text())
    b = json.loads((merged / "results.json").read_text())
    assert a["results"]["dataset_used"] == "reddit" and a["params"]["neighbour_sampling"] == "sampled"
    assert _strip(a) == _strip(b)                        # every number, bitwise (JSON keeps float64)
    va, vb = a["results"]["verdicts"], b["results"]["verdicts"]
    assert len(va) == 12 and [v["decision"] for v in va] == [v["decision"] for v in vb]
    assert a["results"]["controls_hold"] == b["results"]["controls_hold"]
    assert sorted(a["figures"]) == sorted(b["figures"]) and len(a["figures"]) == 5
    for fig in a["figures"]:   # the same pixels: the curves (Fig. 2) read from the cases, the streams rebuilt
        assert (whole / "figures" / fig).read_bytes() == (merged / "figures" / fig).read_bytes(), fig
    assert b["params"]["drift_from"] and b["params"]["drift_cases"] == []
    assert "A merge of the split's cases" in b["results"]["budget"]["note"]
    # a case trains only its runs, records them exactly and skips the analysis
    found = []
    for path in (tmp_path / "sweep" / "05_drift").glob("*/results.json"):
        rc = json.loads(path.read_text())["results"]
        case = rc["drift_case"]
        assert case["cases"] in CASES and "verdicts" not in rc and "results" not in rc and "summary" not in rc
        methods = {k.split("|")[0] for k in case["cases"]} - {"null"}
        for pr, rows in case["runs"].items():
            assert {r["method"] for r in rows} == methods
            assert {r["seed"] for r in rows} == {int(k.split("|")[1]) for k in case["cases"] if not k.startswith("n")}
        for pr, rows in case["nulls"].items():     # the controls' seeds are the case's seeds + 1000
            assert {r["seed"] - 1000 for r in rows} == {int(k.split("|")[1]) for k in case["cases"]
                                                          if k.startswith("null|")}
        # the first seed's accuracy curves of an online method (Joint has none) go beside results.json
        online_first = [k for k in case["cases"] if k.split("|")[0] in ("bare", "er") and k.endswith("|1")]
        assert bool(case["curves"]) == bool(online_first) == (path.parent / ds.CURVES_FILE).is_file()
        assert {c.split("|")[2] for c in case["curves"]} == {k.split("|")[0] for k in online_first}
        assert "A case of the split grid" in rc["budget"]["note"]
        found.append(case["cases"])
    assert sorted(found) == sorted(CASES)
