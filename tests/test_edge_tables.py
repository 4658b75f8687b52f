"""The EDGE paper's Tables 1-2 layout (clkit.edge.tables)."""

import math

import numpy as np
import pytest

from clkit.edge.estimation import distribution_distances, gaussian_estimate
from clkit import stats
from clkit.edge.tables import ROWS, UNITS, draw_table, paper_table


def test_the_table_reads_each_row_from_its_protocol_in_the_papers_order():
    rng = np.random.default_rng(0)
    truth = rng.normal(60, 5, size=90)
    rec = {"ewc/truth": {"min": truth.min(), "max": truth.max()}}
    for proto, idx in (("RS", [3, 7, 11]), ("EDGE", [int(truth.argmin()), 5, int(truth.argmax())])):
        vals = truth[idx]
        d = distribution_distances(truth, *gaussian_estimate(vals))
        rec[f"ewc/{proto}"] = {"min": vals.min(), "max": vals.max(), "jsd": d["jsd"], "wasserstein": d["wasserstein"]}
    t = paper_table(rec, digits=6)
    assert list(t.index) == [r[0] for r in ROWS] and list(t.columns) == ["ewc"]
    # EDGE saw the true extremes here: its min/max rows equal the truth's
    assert t.loc["min EDGE, %", "ewc"] == t.loc["min (truth), %", "ewc"] == pytest.approx(truth.min(), abs=1e-6)
    assert t.loc["max EDGE, %", "ewc"] == pytest.approx(truth.max(), abs=1e-6)
    assert t.loc["JSD_RS, bits (one draw)", "ewc"] == pytest.approx(rec["ewc/RS"]["jsd"], abs=1e-6)
    assert 0 <= t.loc["JSD_EDGE, bits (one draw)", "ewc"] <= 1 and t.loc["W_EDGE, % points (one draw)", "ewc"] >= 0


def test_a_protocol_not_evaluated_stays_empty_and_bad_input_is_refused():
    t = paper_table({"ncm/truth": {"min": 1.0, "max": 2.0}, "ncm/RS": {"min": 1.5, "max": 1.8, "jsd": 0.1,
                                                                      "wasserstein": 0.2}})
    assert math.isnan(t.loc["JSD_EDGE, bits (one draw)", "ncm"]) and t.loc["W_RS, % points (one draw)", "ncm"] == 0.2
    with pytest.raises(ValueError, match="learners must be among"):
        paper_table({"ncm/truth": {"min": 1.0, "max": 2.0}}, ["ewc"])
    with pytest.raises(TypeError, match="protocols must be a dict"):
        paper_table([("ncm", 1.0)])


def test_the_units_note_states_the_papers_two_readings():
    assert "bits" in UNITS and "ln 2" in UNITS and "2-Wasserstein" in UNITS


def test_every_row_and_header_names_its_unit_and_one_draw_rows_say_so():
    """Issue 55: every table header of 02 names its unit; issue 53: a one-draw figure is labelled as such."""
    from clkit.edge.report_protocols import FRAME_UNITS

    for label, proto, key in ROWS:
        assert any(u in label for u in ("%", "bits")), label
        assert ("one draw" in label) == (proto == "RS" or key in ("jsd", "wasserstein")), label
    assert all(any(u in h for u in ("%", "bits")) for h in FRAME_UNITS.values())
    assert "one draw" in FRAME_UNITS["jsd"] and "one draw" in FRAME_UNITS["wasserstein"]


def test_the_key_number_table_shows_the_draw_averaged_paired_effects_with_their_intervals():
    """Issue 53: the table gave W1 EDGE 1.269 vs RS 1.398 from one draw while the 30-draw paired mean had
    the opposite sign (+0.12). The key numbers are the paired means over the draws, with intervals."""
    rng = np.random.default_rng(4)
    w1 = 0.12 + 0.1 * rng.standard_normal(30)        # RS closer on average, over 30 draws
    jsd = -0.02 + 0.01 * rng.standard_normal(30)     # EDGE closer
    vs = stats.holm([stats.paired(w1, comparison="ewc: W1 EDGE − RS", higher="RS closer", lower="EDGE closer"),
                     stats.paired(jsd, comparison="ewc: JSD EDGE − RS", higher="RS closer", lower="EDGE closer")],
                    name="primary")
    vs.append(stats.paired(0.1 * rng.standard_normal(30), comparison="ewc: W1 RS' − RS (null)", role="null control",
                           expect="no difference"))
    t = draw_table(vs)
    w_col, j_col = "W1 EDGE − RS, % points (mean over 30 draws)", "JSD EDGE − RS, bits (mean over 30 draws)"
    assert list(t.index) == ["ewc"]
    assert t.loc["ewc", w_col] == pytest.approx(w1.mean(), abs=1e-3)
    assert t.loc["ewc", j_col] == pytest.approx(jsd.mean(), abs=1e-3)
    assert t.loc["ewc", "W1 decision"] == "RS closer" and t.loc["ewc", "JSD decision"] == "EDGE closer"
    lo, hi = (float(x) for x in t.loc["ewc", "W1 CI (97.5 %)"].split(" … "))
    assert lo < w1.mean() < hi
    with pytest.raises(ValueError, match="no primary"):
        draw_table(vs[2:])


def test_the_report_tables_name_their_units():
    """Issue 55: the truth table and the similarity-source summary name the unit of every number column."""
    from clkit.edge.report import summarise_sources, truth_table

    assert all(c.endswith(", %") for c in truth_table({"ewc": np.array([50.0, 60.0, 70.0])}).columns)
    rows = [{"source": s, "r": 0.1, "hard_pct": 10.0, "easy_pct": 90.0, "edge_jsd": 0.2, "rs_jsd": 0.3, "edge_w1": 1.0,
             "rs_w1": 1.5, "jsd_winner": "EDGE", "w1_winner": "RS"} for s in ("features", "random 0", "random 1")]
    summary = summarise_sources(rows, ["random 0", "random 1"])
    unitless = {"R (mean over learners)", "R sd over null seeds", "EDGE wins JSD", "RS wins JSD", "EDGE wins W1",
                "RS wins W1", "cases"}                           # Pearson's R and counts
    for c in summary.columns:
        assert c in unitless or any(u in c for u in (", bits", ", % points", ", percentile")), c
