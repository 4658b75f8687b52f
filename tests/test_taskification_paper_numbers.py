"""01's tables beside the taskification paper's own numbers (issue 52): transcribed cells spot-checked by hand
against the paper's Tables 1-4, the marking rule on a hand example, teaching scale unmarked, units in headers."""

import pytest

from clkit.taskification import paper_numbers as pn
from clkit.taskification import tables as T

NAMES = ["9d", "30d", "44d"]


def test_transcribed_cells_spot_checks():
    # Table 1 (MSE x 10^3): Finetune's 44-day BWT -5.65 and forgetting 5.71; EWC's 44-day MSE 26.95;
    # the std across taskifications of ER: 10.98, 1.84, 1.19
    assert pn.paper_cell(1, "Finetune", ("bwt", "44d")) == (-5.65, None)
    assert pn.TABLE1["Finetune"][("forgetting", "44d")] == 5.71
    assert pn.TABLE1["EWC"][("avg_mse", "44d")] == 26.95 and pn.TABLE1_STD["ER"] == (10.98, 1.84, 1.19)
    # Table 2 as printed, its two triangles differing in one sd
    assert pn.paper_cell(2, "9d", "30d") == (0.85, 1.1) and pn.paper_cell(2, "30d", "9d") == (0.85, 1.2)
    assert pn.paper_cell(2, "44d", "30d") == (0.75, 0.9)
    # Table 3: BPS 0.12 ± 0.13 at 9 days; Table 4: stability 0.09 ± 0.09 at 30 days + 2
    assert pn.paper_cell(3, "bps", "9d") == (0.12, 0.13) and pn.paper_cell(4, "stability", "30d") == (0.09, 0.09)
    assert pn.UNITS[1] == "MSE x 10^3" and "arXiv 2604.21930" in pn.PAPER
    with pytest.raises(ValueError, match="table must be 1, 2, 3 or 4"):
        pn.paper_cell(5, "x", "y")


def test_table1_std_columns_agree_with_its_cells():
    """The paper's 'Std. across taskifications' is the sample sd of its three cells (to the printed decimals)."""
    import numpy as np

    for row, stds in pn.TABLE1_STD.items():
        for metric, printed in zip(("avg_mse", "bwt", "forgetting"), stds):
            sd = np.std([pn.TABLE1[row][(metric, n)] for n in NAMES], ddof=1)
            assert sd == pytest.approx(printed, abs=0.006), (row, metric)


def test_the_marking_rule_on_a_hand_example():
    """Paper 0.15 ± 0.16: 0.30 is 0.15 away (inside one sd), 0.32 is 0.17 away (outside); no sd: never marked."""
    assert not pn.outside(0.30, (0.15, 0.16)) and pn.outside(0.32, (0.15, 0.16))
    assert not pn.outside(99.0, (13.04, None))
    rows = {n: {"plasticity": p, "plasticity_std": 0.1, "stability": 0.08, "stability_std": 0.1, "bps": b,
                "bps_std": 0.1} for n, p, b in (("9d", 0.32, 0.12), ("30d", 0.08, 0.08), ("44d", 0.06, 0.20))}
    t = T.bps_table(rows, NAMES, num_series=100)          # no diffs: paper scale
    assert t.scale == "paper" and t.outside == ("Plasticity | 9 days", "BPS | 44 days")   # 0.20 vs 0.06 ± 0.07
    unit = "mean ± sd (W1, sd units)"
    assert t.beside.loc["Plasticity", (unit, "9 days", "clkit")] == "0.32 ± 0.10 ✗"
    assert t.beside.loc["Plasticity", (unit, "9 days", "paper")] == "0.15 ± 0.16"
    assert t.beside.loc["Stability", (unit, "9 days", "clkit")] == "0.08 ± 0.10"
    assert "2 of 9 clkit means lie outside" in t.note and t.record()["outside"] == list(t.outside)
    t4 = T.bps_table(rows, NAMES, num_series=100, offset_days=2)
    assert t4.beside.loc["Plasticity", (unit, "30 days + Δ2 days", "paper")] == "0.11 ± 0.12"


def test_teaching_scale_marks_nothing_and_says_so():
    rows = {n: {"plasticity": 0.9, "plasticity_std": 0.1, "stability": 0.9, "stability_std": 0.1, "bps": 0.9,
                "bps_std": 0.1} for n in NAMES}
    t = T.bps_table(rows, NAMES, num_series=4, diffs=["num_series 4 (the paper: 100)"])
    assert t.scale == "teaching" and t.outside == () and "✗" not in t.beside.to_string()
    assert "comparison is not meaningful" in t.note and "shown for reference only" in t.note


def test_table2_and_table1_beside_the_paper():
    d = {f"{a}|{b}": {"mean": 0.85, "std": 1.0} for a in NAMES for b in NAMES if a != b}
    d["9d|44d"] = {"mean": 3.0, "std": 1.0}                       # 1.19 ± 1.6: 1.81 away, outside
    t2 = T.table2(d, NAMES, num_series=100)
    top = "D_prof (W1, sd units)"
    assert t2.beside.loc["30 days", (top, "9 days", "paper")] == "0.85 ± 1.2"
    assert t2.outside == ("9 days | 44 days",) and t2.beside.loc["9 days", (top, "9 days", "paper")] == ""
    m = {(mm, n): {"avg_mse": 12.0, "bwt": 0.1, "forgetting": 0.2} for mm in ("naive", "replay") for n in NAMES}
    b = {n: {"constant_mean": 20.0, "persistence_mean": 15.0} for n in NAMES}
    t1 = T.table1(m, b, ["naive", "replay"], NAMES, {"naive": "Finetune", "replay": "ER"})
    assert t1.beside.loc["ER", ("Average MSE ↓ (MSE x 10^3)", "44d", "paper")] == "30.88"
    assert t1.beside.loc["Finetune", ("Std. across taskifications (MSE x 10^3)", "BWT Std.", "paper")] == "3.40"
    assert t1.beside.loc["Constant (training mean)", ("Average MSE ↓ (MSE x 10^3)", "9d", "paper")] == "-"
    assert t1.outside == () and "no cell is marked" in t1.note           # Table 1 prints no spread per cell
    assert all("MSE x 10^3" in c[0] for c in t1.beside.columns)
    assert "beside" in t1.record() and t1.record()["scale"] == "paper"
