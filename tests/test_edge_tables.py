"""The EDGE paper's Tables 1-2 layout (clkit.edge.tables)."""

import math

import numpy as np
import pytest

from clkit.edge.estimation import distribution_distances, gaussian_estimate
from clkit.edge.tables import ROWS, UNITS, paper_table


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
    assert t.loc["min EDGE", "ewc"] == t.loc["min (truth)", "ewc"] == pytest.approx(truth.min(), abs=1e-6)
    assert t.loc["max EDGE", "ewc"] == pytest.approx(truth.max(), abs=1e-6)
    assert t.loc["JSD_RS", "ewc"] == pytest.approx(rec["ewc/RS"]["jsd"], abs=1e-6)
    assert 0 <= t.loc["JSD_EDGE", "ewc"] <= 1 and t.loc["W_EDGE", "ewc"] >= 0


def test_a_protocol_not_evaluated_stays_empty_and_bad_input_is_refused():
    t = paper_table({"ncm/truth": {"min": 1.0, "max": 2.0}, "ncm/RS": {"min": 1.5, "max": 1.8, "jsd": 0.1,
                                                                      "wasserstein": 0.2}})
    assert math.isnan(t.loc["JSD_EDGE", "ncm"]) and t.loc["W_RS", "ncm"] == 0.2
    with pytest.raises(ValueError, match="learners must be among"):
        paper_table({"ncm/truth": {"min": 1.0, "max": 2.0}}, ["ewc"])
    with pytest.raises(TypeError, match="protocols must be a dict"):
        paper_table([("ncm", 1.0)])


def test_the_units_note_states_the_papers_two_readings():
    assert "bits" in UNITS and "ln 2" in UNITS and "2-Wasserstein" in UNITS
