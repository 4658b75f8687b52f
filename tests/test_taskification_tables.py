"""The paper's Tables 1-4 in the paper's layout (clkit.taskification.tables), checked by hand.

The inputs are the paper's own printed numbers (arXiv 2604.21930, Sec. 5): fed back through the
table functions they must come out as the paper prints them. The standard deviations of Table 1
were recomputed by hand from its rounded cells (e.g. Finetune's average MSE 12.58, 10.58, 30.38:
mean 17.85, squared deviations 27.74 + 52.81 + 157.08 = 237.63, / 2 = 118.81, sqrt 10.90) and agree
with the paper's last three columns to the printed decimals.
"""

import pytest

from clkit.notebooks import load_params
from clkit.taskification import tables
from clkit.taskification.params import METHOD_LABELS

NAMES = ["9d", "30d", "44d"]
#: the paper's Table 1: avg MSE, BWT, forgetting per split, then MSE / BWT / Fgt std across splits
PAPER_T1 = {
    "ER": ([13.04, 10.88, 30.88], [1.67, 0.45, -1.95], [0.20, -0.01, 2.15], ["10.98", "1.84", "1.19"]),
    "EWC": ([13.43, 10.77, 26.95], [0.60, 0.11, 0.75], [-0.03, -0.01, -0.27], ["8.68", "0.33", "0.14"]),
    "Finetune": ([12.58, 10.58, 30.38], [0.36, 0.10, -5.65], [0.08, 0.11, 5.71], ["10.90", "3.40", "3.24"]),
    "LwF": ([12.57, 10.52, 27.04], [0.89, 0.21, 0.62], [0.07, 0.10, -0.54], ["9.00", "0.34", "0.36"]),
}
CODE = {label: m for m, label in METHOD_LABELS.items()}


def _table1(methods=("naive", "replay", "ewc", "lwf")):
    cl_mean = {}
    for label, (mse, bwt, fgt, _) in PAPER_T1.items():
        for i, n in enumerate(NAMES):
            cl_mean[(CODE[label], n)] = {"avg_mse": mse[i], "bwt": bwt[i], "forgetting": fgt[i]}
    baselines = {"9d": {"constant_mean": 20.0, "persistence_mean": 15.0},
                 "30d": {"constant_mean": 22.0, "persistence_mean": 15.0},
                 "44d": {"constant_mean": 24.0, "persistence_mean": 18.0}}
    return tables.table1(cl_mean, baselines, list(methods), NAMES, METHOD_LABELS, cl_seeds=4)


def test_table1_reproduces_the_papers_printed_table_from_its_cells():
    t = _table1()
    f = t.frame
    # rows: the paper's order (alphabetical labels), whatever the run's order; then the two baselines
    assert list(f.index) == ["ER", "EWC", "Finetune", "LwF", "Constant (training mean)", "Persistence (last value)"]
    assert t.paper_rows == ["ER", "EWC", "Finetune", "LwF"] and f.index.name == "Algorithm"
    assert list(f.columns) == ([("Average MSE ↓", n) for n in NAMES] + [("BWT ↑", n) for n in NAMES]
                               + [("Forgetting ↓", n) for n in NAMES]
                               + [("Std. across taskifications", s) for s in ("MSE Std.", "BWT Std.", "Fgt Std.")])
    for label, (mse, bwt, fgt, std) in PAPER_T1.items():
        assert list(f.loc[label]) == [f"{v:.2f}" for v in mse + bwt + fgt] + std, label
    # baselines: average MSE and its sd only (sd of 15, 15, 18 = sqrt(3) = 1.73)
    assert list(f.loc["Persistence (last value)"]) == ["15.00", "15.00", "18.00"] + [""] * 6 + ["1.73", "", ""]
    assert "no BWT or forgetting" in t.note and "mean over 4 seed(s)" in t.note and "MSE x 10^3" in t.note


def test_table1_names_the_papers_rows_a_run_lacks_and_handles_one_split():
    t = _table1(methods=("naive", "lwf"))
    assert t.paper_rows == ["Finetune", "LwF"] and "Rows of the paper not run here: ER, EWC" in t.note
    cl_mean = {("naive", "9d"): {"avg_mse": 1.0, "bwt": -0.004, "forgetting": 0.0}}
    one = tables.table1(cl_mean, {"9d": {"constant_mean": 2.0, "persistence_mean": 1.5}}, ["naive"], ["9d"],
                        METHOD_LABELS)
    assert list(one.frame.loc["Finetune"]) == ["1.00", "0.00", "0.00", "", "", ""]   # no "-0.00"
    assert "no standard deviation across taskifications" in one.note
    with pytest.raises(ValueError, match=r"cl_mean has no entry for \(method, split\) \('ewc', '9d'\)"):
        tables.table1(cl_mean, {"9d": {}}, ["naive", "ewc"], ["9d"], METHOD_LABELS)
    with pytest.raises(ValueError, match="split name must look like '9d'"):
        tables.table1(cl_mean, {}, ["naive"], ["9 days"], METHOD_LABELS)


def test_table2_reproduces_the_papers_layout_and_rounding():
    cells = {("9d", "30d"): (0.85, 1.1), ("30d", "9d"): (0.85, 1.2), ("9d", "44d"): (1.19, 1.6),
             ("44d", "9d"): (1.19, 1.6), ("30d", "44d"): (0.75, 0.9), ("44d", "30d"): (0.75, 0.9)}
    dprof = {f"{a}|{b}": {"mean": m, "std": s} for (a, b), (m, s) in cells.items()}
    t = tables.table2(dprof, NAMES, num_series=100)
    assert list(t.frame.index) == list(t.frame.columns) == ["9 days", "30 days", "44 days"]
    assert t.frame.values.tolist() == [["", "0.85 ± 1.1", "1.19 ± 1.6"],
                                       ["0.85 ± 1.2", "", "0.75 ± 0.9"],
                                       ["1.19 ± 1.6", "0.75 ± 0.9", ""]]
    assert "across 100 series" in t.note and "round to 0.00" not in t.note
    # a mean below 0.005 prints as 0.00 (the paper's rounding), and the note says how many did
    small = {k: {"mean": 0.0031, "std": 0.002} for k in dprof}
    assert tables.table2(small, NAMES, num_series=4).frame.loc["9 days", "30 days"] == "0.00 ± 0.0"
    assert "6 of the 6 means round to 0.00" in tables.table2(small, NAMES, num_series=4).note
    with pytest.raises(ValueError, match="dprof has no pair '9d|30d'"):
        tables.table2({}, NAMES, num_series=4)
    with pytest.raises(ValueError, match="num_series must be a positive integer"):
        tables.table2(dprof, NAMES, num_series=0)


PAPER_T3 = {"9d": (0.15, 0.16, 0.08, 0.10, 0.12, 0.13), "30d": (0.08, 0.09, 0.07, 0.07, 0.08, 0.08),
            "44d": (0.06, 0.08, 0.05, 0.07, 0.06, 0.07)}


def _bps_rows(cells):
    keys = ("plasticity", "plasticity_std", "stability", "stability_std", "bps", "bps_std")
    return {n: dict(zip(keys, v)) for n, v in cells.items()}


def test_tables3_and_4_reproduce_the_papers_layout_with_the_null_rows_below():
    rows = _bps_rows(PAPER_T3)
    null = {"9d": {"bps": 0.04, "bps_std": 0.01}, "30d": {"bps": 0.02, "bps_std": 0.01},
            "44d": {"bps": 0.02, "bps_std": 0.005}}
    t3 = tables.bps_table(rows, NAMES, null=null, num_series=100)
    assert t3.number == 3 and t3.paper_rows == ["Plasticity", "Stability", "BPS"]
    assert list(t3.frame.index) == ["Plasticity", "Stability", "BPS", "null BPS", "BPS / null"]
    assert list(t3.frame.columns) == ["9 days", "30 days", "44 days"]
    assert t3.frame.loc[["Plasticity", "Stability", "BPS"]].values.tolist() == [
        ["0.15 ± 0.16", "0.08 ± 0.09", "0.06 ± 0.08"],
        ["0.08 ± 0.10", "0.07 ± 0.07", "0.05 ± 0.07"],
        ["0.12 ± 0.13", "0.08 ± 0.08", "0.06 ± 0.07"]]
    assert t3.frame.loc["BPS / null"].tolist() == ["3.00", "4.00", "3.00"]     # 0.12 / 0.04, 0.08 / 0.02, ...
    # the paper's bold (highest mean per row) and blue (second), named in the note
    assert "Plasticity 9 days (second: 30 days)" in t3.note and "BPS 9 days (second: 30 days)" in t3.note
    assert "clkit's reference, not in the paper" in t3.note
    t4 = tables.bps_table(rows, NAMES, offset_days=2.0, num_series=100)
    assert t4.number == 4 and list(t4.frame.index) == ["Plasticity", "Stability", "BPS"]
    assert list(t4.frame.columns) == ["9 days + Δ2 days", "30 days + Δ2 days", "44 days + Δ2 days"]
    assert "after shifting all task boundaries by 2 days" in t4.note
    with pytest.raises(ValueError, match="offset_days must be > 0"):
        tables.bps_table(rows, NAMES, offset_days=0.0, num_series=100)
    with pytest.raises(ValueError, match="rows has no split '6d'"):
        tables.bps_table(rows, ["6d"], num_series=100)


def test_record_is_json_ready_and_keeps_the_layout():
    import json

    rec = _table1().record()
    assert rec["columns"][0] == "Average MSE ↓ / 9d" and rec["columns"][-1] == "Std. across taskifications / Fgt Std."
    assert rec["index"][0] == "ER" and rec["cells"][0][0] == "13.04" and rec["paper_rows"][-1] == "LwF"
    assert json.loads(json.dumps(rec)) == rec


def test_paper_settings_agree_with_the_paper_parameter_set():
    paper = load_params("01_taskification", "paper")
    for key, value in tables.PAPER_SETTINGS.items():
        assert paper[key] == value, key
    assert tables.differences(paper, 1) == [] and tables.differences(paper, 4) == []


def test_differences_name_the_data_and_the_settings_per_table():
    paper = load_params("01_taskification", "paper")
    assert tables.differences(paper, 3, rehearsal=True) == [
        "data: a fabricated CESNET-TimeSeries24 database (rehearsal), not the real one"]
    smoke = load_params("01_taskification", "smoke")
    d2 = tables.differences(smoke, 2, source="synthetic stream")
    assert d2 == ["data: synthetic stream, not CESNET-TimeSeries24", "num_series 2 (the paper: 100)",
                  "window_days [2, 4, 6] (the paper: [9, 30, 44])"]
    d1 = tables.differences(smoke, 1, source="synthetic stream")
    assert "context_steps 24 (the paper: 288)" in d1 and "num_series 2 (the paper: 100)" not in d1
    assert d1[-1].startswith("epochs 1 per task at most, so the paper's early stopping (after 10 epochs")
    assert "offset_days 1.0 (the paper: 2.0)" in tables.differences(smoke, 4) and \
        "offset_days 1.0 (the paper: 2.0)" not in tables.differences(smoke, 3)
    with pytest.raises(ValueError, match=r"table must be one of \[1, 2, 3, 4\], got 5"):
        tables.differences(paper, 5)
