"""The curriculum paper's Tables 3-8 layout (clkit.curriculum.tables)."""

import math

import pytest

from clkit.curriculum.tables import GROUPS, paper_tables


def _metrics(acc: dict, fwt: float = 0.05) -> dict:
    ranked = sorted(acc, key=acc.get, reverse=True)
    return {k: {"ACC": a, "BWT_eq2": a - 1, "BWT_code": a - 0.9, "FWT": fwt, "rank": ranked.index(k) + 1}
            for k, a in acc.items()}


def test_one_table_per_order_with_both_settings_grouped_as_the_paper():
    cls = {"metrics": {"M2I": _metrics({"naive": 0.2, "replay": 0.6, "ewc": 0.25, "cwr": 0.3}),
                       "I2M": _metrics({"naive": 0.1, "replay": 0.5, "ewc": 0.2, "cwr": 0.1})}}
    task = {"metrics": {"M2I": _metrics({"naive": 0.4, "replay": 0.7, "ewc": 0.45, "cwr": 0.5, "pnn": 0.8}),
                        "I2M": _metrics({"naive": 0.3, "replay": 0.6, "ewc": 0.4, "cwr": 0.3, "pnn": 0.7})}}
    tables = paper_tables({"class": cls, "task": task})
    assert list(tables) == ["M2I", "I2M"]
    t = tables["M2I"]
    # rows: regularization, rehearsal, architectural, baseline, top to bottom
    assert t.index.tolist() == [("regularization", "ewc"), ("rehearsal", "replay"), ("architectural", "pnn"),
                                ("architectural", "cwr"), ("baseline", "naive")]
    # FWT only in the task-incremental setting, as the paper
    assert ("class-incremental", "FWT") not in t.columns and ("task-incremental", "FWT") in t.columns
    assert t.loc[("rehearsal", "replay"), ("class-incremental", "ACC")] == 0.6
    assert t.loc[("rehearsal", "replay"), ("class-incremental", "BWT")] == pytest.approx(-0.4)
    assert t.loc[("architectural", "pnn"), ("task-incremental", "rank")] == 1
    # PNN is task-incremental only: empty in the class-incremental columns
    assert math.isnan(t.loc[("architectural", "pnn"), ("class-incremental", "ACC")])
    code = paper_tables({"class": cls}, bwt="BWT_code")["M2I"]
    assert code.loc[("rehearsal", "replay"), ("class-incremental", "BWT")] == pytest.approx(-0.3)


def test_every_strategy_of_the_paper_has_a_group_and_bad_input_is_refused():
    members = [k for g in GROUPS.values() for k in g]
    assert len(members) == len(set(members)) == 14
    with pytest.raises(ValueError, match="scenario"):
        paper_tables({"domain": {"metrics": {}}})
    with pytest.raises(ValueError, match="bwt"):
        paper_tables({"class": {"metrics": {}}}, bwt="BWT")
    with pytest.raises(ValueError, match="runs"):
        paper_tables({})


@pytest.mark.notebook
def test_a_smoke_run_fills_its_scenarios_columns(run_smoke):
    res, _ = run_smoke("04_curriculum")
    r = res["results"]
    t = paper_tables({r["scenario"]: r})
    for order, frame in t.items():
        for k, row in r["metrics"][order].items():
            assert frame.xs(k, level=1).iloc[0][(f"{r['scenario']}-incremental", "ACC")] == pytest.approx(
                row["ACC"], abs=5e-4)


def test_the_header_names_the_units():
    """Issue 55: the tables hold fractions (the paper prints percent) and their header says so."""
    run = {"metrics": {"M2I": {"ewc": {"ACC": 0.5, "BWT_eq2": -0.2, "BWT_code": -0.1, "FWT": 0.0, "rank": 1}}}}
    t = paper_tables({"class": run})["M2I"]
    assert t.columns.names == ["setting", "ACC, BWT, FWT as fractions (0-1); rank 1 = highest ACC"]
    assert t.loc[("regularization", "ewc"), ("class-incremental", "ACC")] == 0.5
