"""clkit.temporal.tables (the paper's Tables 1 and 2) and plots.id_ood_tas_trends (its Fig. 3)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from clkit.temporal import plots as tplots  # noqa: E402
from clkit.temporal import tables as tt  # noqa: E402

nan = np.nan


def _row(id_, ood, ood_min, tas, tas_min, sh, dh):
    return {"id": id_, "ood": ood, "ood_min": ood_min, "tas": tas, "tas_min": tas_min, "sh": sh, "sh_eq3": sh + 1,
            "dh": dh}


# a tiny fabricated run: four learners (ewc is not in Table 1), two seeds of finetune and si
ROWS = {"erm": _row(0.80, 0.70, 0.60, 0.90, 0.85, 2.0, 3.0),
        "finetune": _row(0.82, 0.74, 0.65, 0.95, 0.90, 3.5, 4.25),
        "si": _row(0.78, 0.71, 0.55, 0.93, 0.80, 2.5, 5.0),
        "ewc": _row(0.79, 0.72, 0.50, 0.94, 0.70, 3.0, 4.0)}
BASE = _row(0.60, 0.58, 0.40, 0.88, 0.70, 4.0, 6.0)
PER_SEED = {"finetune": [{"tas": 0.95, "sh": 3.5, "dh": 4.25, "ood": 0.74},
                         {"tas": 0.91, "sh": 2.5, "dh": 4.75, "ood": 0.70}],
            "si": [{"tas": 0.93, "sh": 2.5, "dh": 5.0, "ood": 0.71},
                   {"tas": 0.93, "sh": 3.5, "dh": 5.0, "ood": 0.75}],
            "ewc": [{"tas": 0.94, "sh": 3.0, "dh": 4.0, "ood": 0.72},
                    {"tas": 0.90, "sh": 3.0, "dh": 4.0, "ood": 0.72}]}


def test_table1_rows_columns_and_units_by_hand():
    t = tt.paper_table(ROWS, "fmow", baseline=BASE, chance=0.5, horizon_unit="y")
    f = t.formatted()
    # the paper's order (MoCo, SI, CORAL, ERM, A-GEM, FT) without the absent ones, then the baselines
    assert list(f.index) == ["SI", "ERM", "FT", "majority (baseline)", "chance (baseline)"]
    assert list(f.columns) == ["ID", "OOD", "TAS", "SH", "DH"]
    assert f.loc["FT"].tolist() == ["82.0%", "74.0%", "95.0%", "3.5 y", "4.2 y"]  # 4.25 -> 4.2 (half to even)
    assert f.loc["SI"].tolist() == ["78.0%", "71.0%", "93.0%", "2.5 y", "5.0 y"]
    assert f.loc["majority (baseline)"].tolist() == ["60.0%", "58.0%", "88.0%", "4.0 y", "6.0 y"]
    assert f.loc["chance (baseline)"].tolist() == ["50.0%", "50.0%", "—", "—", "—"]
    assert "not in this run: MoCo (moco_sml), CORAL (coral) and A-GEM (agem)" in t.note
    assert "in this run but not in that table (left out here): ewc" in t.note
    assert "One seed (the run's seed)" in t.note and "SH and DH in years" in t.note
    # unformatted values: fractions and periods
    assert t.mean.loc["ERM", "ID"] == pytest.approx(0.80) and t.mean.loc["ERM", "SH"] == 2.0


def test_table2_layout_with_ewc_and_min_columns():
    f = tt.paper_table(ROWS, "yearbook", baseline=BASE, chance=0.5).formatted()
    assert list(f.index) == ["SI", "EWC", "ERM", "FT", "majority (baseline)", "chance (baseline)"]
    assert list(f.columns) == ["ID Avg", "OOD Avg", "OOD Min", "TAS Avg", "TAS Min"]
    assert f.loc["EWC"].tolist() == ["79.0%", "72.0%", "50.0%", "94.0%", "70.0%"]
    assert f.loc["chance (baseline)"].tolist() == ["50.0%", "50.0%", "50.0%", "—", "—"]


def test_seed_spread_is_mean_and_sample_sd_where_the_seeds_have_the_column():
    t = tt.paper_table(ROWS, "fmow", baseline=BASE, per_seed=PER_SEED, seeds=[0, 1], horizon_unit="y")
    f = t.formatted()
    # FT: TAS (0.95, 0.91) -> 93.0 ± 2.8 (sd = 0.04 / sqrt 2 = 0.0283); SH (3.5, 2.5) -> 3.0 ± 0.7;
    # DH (4.25, 4.75) -> 4.5 ± 0.4; OOD (0.74, 0.70) -> 72.0 ± 2.8; ID has no per-seed value: seed 0's
    assert f.loc["FT"].tolist() == ["82.0%", "72.0 ± 2.8%", "93.0 ± 2.8%", "3.0 ± 0.7 y", "4.5 ± 0.4 y"]
    assert t.sd.loc["FT", "TAS"] == pytest.approx(0.04 / np.sqrt(2))
    assert t.n.loc["FT", "TAS"] == 2 and t.n.loc["FT", "ID"] == 1 and t.n.loc["ERM", "TAS"] == 1
    assert t.n.loc["majority (baseline)", "ID"] == 0
    assert f.loc["SI", "DH"] == "5.0 ± 0.0 y"        # equal seeds: sd 0, still a spread
    assert f.loc["ERM"].tolist() == ["80.0%", "70.0%", "90.0%", "2.0 y", "3.0 y"]  # not retrained per seed
    assert ("Mean ± sd (sample standard deviation, ddof = 1) over the 2 training seeds 0–1 for OOD, TAS, SH "
            "and DH of SI and FT") in t.note
    assert "single values from seed 0's run for ID of SI and FT; every column of ERM (not recomputed" in t.note
    rec = t.record()
    assert rec["rows"]["FT"]["TAS"] == {"mean": pytest.approx(0.93), "sd": pytest.approx(0.0282843, rel=1e-5),
                                        "n": 2}
    assert rec["columns"] == ["ID", "OOD", "TAS", "SH", "DH"] and rec["layout"] == "fmow"
    assert rec["row_order"] == ["SI", "ERM", "FT", "majority (baseline)"]
    assert np.isnan(rec["rows"]["ERM"]["TAS"]["sd"])  # to_jsonable turns it into null in results.json


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="layout"):
        tt.paper_table(ROWS, "cifar")
    with pytest.raises(ValueError, match="rows"):
        tt.paper_table({}, "fmow")
    with pytest.raises(ValueError, match="chance"):
        tt.paper_table(ROWS, "fmow", chance=2.0)
    with pytest.raises(ValueError, match="same number of seeds"):
        tt.paper_table(ROWS, "fmow", per_seed={"si": [{}], "finetune": [{}, {}]})
    with pytest.raises(ValueError, match="seeds"):
        tt.paper_table(ROWS, "fmow", per_seed=PER_SEED, seeds=[0, 1, 2])
    with pytest.raises(ValueError, match="not in rows"):
        tt.paper_table(ROWS, "fmow", per_seed={"agem": [{}, {}]})
    with pytest.raises(ValueError, match="lacks"):
        tt.paper_table({"si": {"id": 0.5}}, "fmow")
    with pytest.raises(ValueError, match="period_length"):
        tt.period_unit("yearbook", 0)


def test_fig3_plots_exactly_the_inputs_in_percent():
    s = {"per_period": {"id": [0.99, 0.95, 0.9, 0.8], "ood": [0.77, 0.7, 0.65, nan],
                        "tas": [0.9, 0.85, 0.92, nan]}}
    fig = tplots.id_ood_tas_trends(s, ["1968", "1969", "1970", "1971"], learner="moco_sml", dataset="yearbook",
                                   n=3)
    (ax,) = fig.axes
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == ["ID", "OOD", "TAS"]
    for ln, key in zip(lines, ("id", "ood", "tas")):
        np.testing.assert_array_equal(ln.get_xdata(), [1968.0, 1969.0, 1970.0, 1971.0])
        np.testing.assert_allclose(ln.get_ydata(), 100 * np.array(s["per_period"][key]), equal_nan=True)
    assert ax.get_ylabel() == "%" and "moco_sml on yearbook" in ax.get_title() and "(next 3)" in ax.get_title()
    plt.close(fig)
    # non-numeric labels: x is the period index, the axis label names the first and last period
    fig = tplots.id_ood_tas_trends(s, ["days 0-364", "b", "c", "days 1095-1459"], learner="finetune")
    ax = fig.axes[0]
    np.testing.assert_array_equal(ax.get_lines()[2].get_xdata(), [0.0, 1.0, 2.0, 3.0])
    assert "0 = days 0-364, 3 = days 1095-1459" in ax.get_xlabel()
    plt.close(fig)
    with pytest.raises(ValueError, match="has 4 values, periods 3"):
        tplots.id_ood_tas_trends(s, ["a", "b", "c"], learner="x")
    with pytest.raises(ValueError, match="per_period"):
        tplots.id_ood_tas_trends({"id": 1}, ["a"], learner="x")


def test_the_header_names_the_units():
    """Issue 55: every table header names its unit (percent here, the horizon unit for SH and DH)."""
    f = tt.paper_table(ROWS, "fmow", horizon_unit="y").formatted()
    assert f.columns.name == "ID, OOD, TAS in %; SH, DH in y"
    f = tt.paper_table(ROWS, "yearbook").formatted()
    assert f.columns.name == "ID Avg, OOD Avg, OOD Min, TAS Avg, TAS Min in %"
