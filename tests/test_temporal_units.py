"""Every table header of notebook 03 names its unit (issue 55): fractions for accuracies, years or periods for SH/DH."""

import re

import numpy as np

from clkit import temporal as tm

UNIT = re.compile(r"\((fraction|years|periods)\)$")


def _summary(A):
    return tm.summarize_learner(A, n=2, horizon=2, delta=0.6, epsilon=0.02, lam=0.15)


def _rows():
    A = np.array([[0.9, 0.7, 0.5], [np.nan, 0.85, 0.7], [np.nan, np.nan, 0.8]])
    B = np.array([[0.8, 0.75, 0.7], [np.nan, 0.8, 0.76], [np.nan, np.nan, 0.79]])
    return {"finetune": _summary(A), "ewc": _summary(B)}, _summary(np.full((3, 3), 0.5))


def test_every_header_names_its_unit_and_the_values_are_unchanged():
    rows, base = _rows()
    t2 = tm.learner_table(rows, base, 0.25, unit=tm.horizon_unit("fmow", 1))
    assert all(UNIT.search(c) for c in t2.columns), list(t2.columns)
    assert t2.loc["finetune", "ID (fraction)"] == rows["finetune"]["id"] and 0 <= t2["OOD (fraction)"].max() <= 1
    assert t2.loc["ewc", "SH (years)"] == rows["ewc"]["sh"] and t2.loc["chance (baseline)", "OOD min (fraction)"] == 0.25
    assert np.isnan(t2.loc["chance (baseline)", "TAS (fraction)"])
    t1 = tm.part1_table({"s": {"true": rows["finetune"], "erm": rows["ewc"]}})
    assert all(UNIT.search(c) for c in t1.columns) and "SH (periods)" in t1.columns     # synthetic: no calendar
    assert t1.loc[("s", "erm"), "ID-OOD gap (fraction)"] == rows["ewc"]["id"] - rows["ewc"]["ood"]
    hz = tm.horizons_table(rows, ["finetune"], [2010, 2011, 2012], unit="years")
    assert [c[1] for c in hz.columns] == ["SH (years)", "DH (years)"]
    bw = tm.backward_table({"ft": tm.backward_summary([[0.9, 0.2], [0.6, 0.8]])})
    assert all(UNIT.search(c) for c in bw.columns) and bw.iloc[0]["forgetting (fraction)"] == 0.9 - 0.6


def test_horizon_unit_and_closing_text_read_the_unit_headers():
    assert tm.horizon_unit("fmow", 1) == "years" and tm.horizon_unit("fmow", 2) == "periods"
    assert tm.horizon_unit("synthetic", 1) == "periods"
    rows, base = _rows()
    t2 = tm.learner_table(rows, base, 0.25, unit="years")
    text = tm.closing_text(dataset_name="toy", rows=rows, table=t2, baseline=base, chance=0.25, n=2, seed=0,
                           delta=0.6, horizon=2)
    lo, hi = sorted([rows["finetune"]["ood"], rows["ewc"]["ood"]])
    assert f"OOD accuracy ranges from {lo:.1%} to {hi:.1%}" in text
