"""The DRIFT paper's own numbers (clkit.drift.paper_numbers) and the paper-table grids of notebook 05."""

from pathlib import Path

import pytest
import yaml

from clkit.drift import paper_numbers as pn
from clkit.drift.tables import paper_tables

GRIDS = Path(__file__).resolve().parents[1] / "notebooks" / "grids" / "05_drift"


def test_cells_match_the_papers_text_where_it_is_readable():
    """Spot checks, read off the paper's text by hand (one per table)."""
    assert pn.paper_cell("2", "reddit", "mas_star", "AF_s") == (-83.5, 1.2)
    assert pn.paper_cell("2", "corafull", "joint", "A_AUC") == (86.3, 0.1)
    assert pn.paper_cell("3", "roman_empire", "gss", "AA") == (68.3, 1.5)
    assert pn.paper_cell("4", "ogbn_arxiv", "mas_star", "A_AUC", "gin") == (39.7, 4.9)
    assert pn.paper_cell("4", "roman_empire", "sem", "AF_s", "gat") == (-37.3, 1.1)
    assert pn.paper_cell("5", "corafull", "bare", "A_AUC", 3) == (10.6, 0.2)
    assert pn.paper_cell("6", "roman_empire", "bare", "AF_s", 120) == (-8.0, 0.5)
    assert pn.paper_cell("7", "ogbn_arxiv", "dmsg", "AA") == (23.8, 0.0)
    assert pn.paper_cell("8", "reddit", "sem", "AA") == (81.4, 1.9)
    assert pn.paper_cell("9", "corafull", "dmsg", "AA") == (63.9, 3.5)
    assert pn.paper_cell("10", "ogbn_arxiv", "gss", "A_AUC", 20) == (30.9, 2.5)


def test_tables_are_internally_consistent():
    """The paper repeats cells: Table 2's Arxiv column is Table 10's B = 10; Table 5's sigma = 20 is Table 2's
    CoraFull; Table 6's sigma = 40 is Table 2's RomanEmpire; Table 10's printed delta is B=20 - B=10."""
    for m in ("bare", "agem", "er", "gss", "mas_star", "ssm", "sem", "dmsg"):
        for k in ("A_AUC", "AF_s"):
            assert pn.paper_cell("2", "ogbn_arxiv", m, k) == pn.paper_cell("10", "ogbn_arxiv", m, k, 10)
            assert pn.paper_cell("2", "corafull", m, k) == pn.paper_cell("5", "corafull", m, k, 20)
            assert pn.paper_cell("2", "roman_empire", m, k) == pn.paper_cell("6", "roman_empire", m, k, 40)
        d = pn._T10[m][-1]
        b10, b20 = pn.paper_cell("10", "ogbn_arxiv", m, "A_AUC", 10), pn.paper_cell("10", "ogbn_arxiv", m, "A_AUC", 20)
        assert d == pytest.approx(b20[0] - b10[0], abs=0.051)
    # Bare's p = 10 % -> 30 % gains the text quotes (+11.1, +7.2, +26.3, +13.6 AA)
    for ds, gain in zip(pn.PAPER_DATASETS, (11.1, 7.2, 26.3, 13.6)):
        assert pn.paper_cell("8", ds, "bare", "AA")[0] - pn.paper_cell("7", ds, "bare", "AA")[0] == pytest.approx(
            gain, abs=0.051)
    # every std is non-negative; every forgetting is <= 0
    for key, v in pn._NUMBERS.items():
        if v is not None:
            assert v[1] >= 0 and (v[0] <= 0 if key[-1] in ("AF", "AF_s") else v[0] >= 0), key


def _rows(setting, means, **cfg):
    base = dict(sigma=20.0, p=0.3, k_bl=5, batch_size=10, sampling="without", overlap=0.9)
    base.update(cfg)
    return [dict(base, setting=setting, method=m, seed=s, AA=a, AF=-0.7, A_AUC=a, AF_s=-0.6)
            for m, a in means.items() for s in (1, 2, 3)]


def test_paper_scale_marks_cells_outside_the_spread():
    # CoraFull Gaussian (Table 2): Bare 21.9 +- 0.8, ER 27.8 +- 0.6 -> 22.0 inside, 30.0 outside
    rows = _rows("gaussian", {"bare": 0.22, "er": 0.30})
    t2 = paper_tables({"corafull": rows}, sigma=20.0, sigmas=[], p=0.3, k_bl=5, batch_size=10, batch_sizes=[10])[0]
    c = pn.beside_paper(t2, "corafull", scale="paper")
    assert c.paper_table == "2" and not c.outside.loc["Bare", ("corafull", "A_AUC %")]
    assert c.outside.loc["ER", ("corafull", "A_AUC %")]
    assert c.table.loc["ER", ("corafull", "A_AUC %", "paper")] == "27.8 ± 0.6"
    assert c.table.loc["ER", ("corafull", "A_AUC %", "clkit")].endswith("✗")
    # AF_s -60 %: Bare's paper -60.5 +- 7.3 (inside), ER's -48.0 +- 5.2 (outside)
    assert not c.outside.loc["Bare", ("corafull", "AF_s %")] and c.outside.loc["ER", ("corafull", "AF_s %")]
    assert "2 of 4" in c.note and "Paper scale" in c.note
    # a wider spread admits ER's A_AUC (2.2 points off, std 0.6: inside at 4 std)
    assert not pn.beside_paper(t2, "corafull", scale="paper", spread=4.0).outside.loc["ER", ("corafull", "A_AUC %")]
    # the same run with a GAT backbone compares with Table 4 (CoraFull GAT: Bare 39.2 +- 2.8)
    c4 = pn.beside_paper(t2, "corafull", scale="paper", backbone="gat")
    assert c4.paper_table == "4" and c4.table.loc["Bare", ("corafull", "A_AUC %", "paper")] == "39.2 ± 2.8"
    assert c4.outside.loc["Bare", ("corafull", "A_AUC %")]


def test_teaching_scale_marks_nothing_and_says_so():
    rows = _rows("global", {"bare": 0.9, "er": 0.9}, p=0.1)
    t7 = [t for t in paper_tables({"reddit": rows}, sigma=20.0, sigmas=[], p=0.1, k_bl=5, batch_size=10,
                                  batch_sizes=[10]) if t.number == "7"][0]
    c = pn.beside_paper(t7, "reddit", scale="teaching")
    assert c.paper_table == "7" and not c.outside.to_numpy().any()
    assert "not meaningful" in c.note and c.table.loc["Bare", ("reddit", "AA %", "paper")] == "52.8 ± 3.9"
    assert "✗" not in "".join(c.table.to_numpy().ravel())
    # a graph the paper does not use: no paper numbers at all
    c = pn.beside_paper(t7, "cora", scale="teaching")
    assert c.paper_table == "" and "no numbers" in c.note


def test_sweep_and_batch_tables_match_by_group():
    rows = (_rows("gaussian", {"bare": 0.106}, sigma=3.0) + _rows("gaussian", {"bare": 0.30}, sigma=20.0))
    ts = paper_tables({"corafull": rows}, sigma=20.0, sigmas=[3.0, 20.0], p=0.3, k_bl=5, batch_size=10,
                      batch_sizes=[10])
    sweep = [t for t in ts if t.number == "5/6"][0]
    c = pn.beside_paper(sweep, "corafull", scale="paper")
    groups = [g for g, _ in c.outside.columns]
    assert c.paper_table == "5"
    assert not c.outside.loc["Bare", (groups[0], "A_AUC %")] and c.outside.loc["Bare", (groups[-1], "A_AUC %")]
    rows = _rows("gaussian", {"bare": 0.185}, sigma=60.0) + _rows("gaussian", {"bare": 0.252}, sigma=60.0,
                                                                    batch_size=20)
    ts = paper_tables({"ogbn_arxiv": rows}, sigma=60.0, sigmas=[], p=0.3, k_bl=5, batch_size=10, batch_sizes=[10, 20])
    c = pn.beside_paper([t for t in ts if t.number == "10"][0], "ogbn_arxiv", scale="paper")
    assert c.paper_table == "10"
    assert not c.outside.loc["Bare", ("B=10", "A_AUC %")] and not c.outside.loc["Bare", ("B=20", "A_AUC %")]
    # AF_s -60 %: outside B=10's -65.4 +- 3.1, inside B=20's -61.3 +- 12.3
    assert c.outside.loc["Bare", ("B=10", "AF_s %")] and not c.outside.loc["Bare", ("B=20", "AF_s %")]


def test_bad_arguments():
    t = paper_tables({"corafull": _rows("hard", {"bare": 0.1})}, sigma=20.0, sigmas=[], p=0.3, k_bl=5,
                     batch_size=10, batch_sizes=[10])[0]
    with pytest.raises(ValueError, match="scale must be one of"):
        pn.beside_paper(t, "corafull", scale="full")
    with pytest.raises(ValueError, match="backbone must be one of"):
        pn.beside_paper(t, "corafull", scale="paper", backbone="sage")
    with pytest.raises(ValueError, match="spread must be a positive number"):
        pn.beside_paper(t, "corafull", scale="paper", spread=0)


# the paper sets of datasets, as the grids must copy them
_MAIN_SIGMA = {"ogbn_arxiv": 60.0, "corafull": 20.0, "reddit": 120.0, "roman_empire": 40.0}


@pytest.mark.parametrize("grid, table", [("paper_table7_global10", "7"), ("paper_table4_backbones", "4")])
def test_paper_table_grids_plan_the_papers_cases(grid, table, tmp_path):
    """Each grid case resolves to its dataset's paper setting; the header names the table and what it is not."""
    from clkit.sweep.execute import plan_sweep

    g = yaml.safe_load((GRIDS / f"{grid}.yaml").read_text())
    assert f"Table {table}" in g["description"] and "What it is not" in g["description"]
    plan = plan_sweep("05", str(GRIDS / f"{grid}.yaml"), out=tmp_path)
    got = {(c["params"]["dataset"], c["params"].get("backbone", "gcn")) for c in plan["cases"]}
    for case in plan["cases"]:
        prm = case["params"]
        assert prm["sigma"] == _MAIN_SIGMA[prm["dataset"]] and prm["sigmas"] == [prm["sigma"]]
        assert prm["hidden"] == 256 and prm["lr"] == 0.005 and prm["eval_every"] == 1 and prm["protocol"] == "both"
        assert prm["neighbour_sampling"] == "auto" and prm["batch_sizes"] == [10]
        if table == "7":
            assert prm["p"] == 0.1 and "dmsg" in prm["methods"]
        else:
            assert prm["methods"] == ["bare", "joint", "er", "agem", "gss", "mas_star", "ssm", "sem"]
    if table == "7":
        assert got == {(d, "gcn") for d in _MAIN_SIGMA}
    else:
        assert got == {(d, b) for d in ("ogbn_arxiv", "corafull", "roman_empire") for b in ("gat", "gin")}
