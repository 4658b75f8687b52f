"""The DRIFT paper's tables in its layout (clkit.drift.tables): hand-computed cells, ranks, Table 10's Δ."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from clkit.drift.tables import paper_tables


def _rows(dataset_shift=0.0, seeds=(1, 2), sizes=(10, 20), sweep=(3.0, 10.0), p=0.1):
    out = []
    score = {"bare": 0.20, "joint": 0.90, "er": 0.40, "agem": 0.30, "dmsg": 0.40}
    for seed in seeds:
        for m, a in score.items():
            a = a + dataset_shift + 0.02 * (seed - 1)
            for setting in ("hard", "boundary_local", "global"):
                out.append(dict(setting=setting, sigma=np.nan, p=p, k_bl=5, batch_size=10, sampling="without",
                                method=m, seed=seed, overlap=0.0, AA=a, AF=np.nan if m == "joint" else -a,
                                A_AUC=a, AF_s=-a))
            for s in sweep:
                for b in sizes:
                    if b != 10 and s != 10.0:
                        continue
                    out.append(dict(setting="gaussian", sigma=s, p=0.1, k_bl=5, batch_size=b, sampling="without",
                                    method=m, seed=seed, overlap=s / 20, AA=a, AF=-a,
                                    A_AUC=a + 0.01 * s + 0.05 * (b == 20), AF_s=np.nan if m == "joint" else -a))
    return pd.DataFrame(out)


def test_tables_numbers_rows_and_cells():
    ts = paper_tables({"Cora": _rows(), "CiteSeer": _rows(0.1)}, sigma=10.0, sigmas=[3.0, 10.0], p=0.1, k_bl=5,
                      batch_size=10, batch_sizes=[10, 20])
    assert [t.number for t in ts] == ["2", "3", "7", "9", "5/6", "10", "5/6", "10"]
    t2 = ts[0]
    assert list(t2.mean.index) == ["Bare", "Joint (Offline)", "A-GEM", "ER", "DMSG"]   # the paper's order
    assert list(t2.mean.columns) == [("Cora", "A_AUC %"), ("Cora", "AF_s %"), ("CiteSeer", "A_AUC %"),
                                     ("CiteSeer", "AF_s %")]
    # ER on Cora, Gaussian σ=10, B=10: seeds 0.40 + 0.1 and 0.42 + 0.1 -> 51 ± 1 (population sd)
    assert t2.formatted(marks=False).loc["ER", ("Cora", "A_AUC %")] == "51.0 ± 1.0"
    assert t2.formatted().loc["Joint (Offline)", ("Cora", "AF_s %")] == "-"        # no stream, no forgetting
    assert "Joint (Offline)" not in list(ts[1].mean.index)                         # Table 3: online methods


def test_top_two_are_marked_ties_share_and_joint_is_unranked():
    t3 = paper_tables({"Cora": _rows()}, sigma=10.0, sigmas=[], p=0.1, k_bl=5, batch_size=10,
                      batch_sizes=[10])[1]
    f = t3.formatted()
    # ER and DMSG tie at 41 (AA): both first; A-GEM second; Bare unmarked
    assert f.loc["ER", ("Cora", "AA %")] == f.loc["DMSG", ("Cora", "AA %")] == "**41.0 ± 1.0**"
    assert f.loc["A-GEM", ("Cora", "AA %")] == "<u>31.0 ± 1.0</u>" and f.loc["Bare", ("Cora", "AA %")] == "21.0 ± 1.0"
    t2 = paper_tables({"Cora": _rows()}, sigma=10.0, sigmas=[], p=0.1, k_bl=5, batch_size=10, batch_sizes=[10])[0]
    assert t2.ranks().loc["Joint (Offline)"].eq(0).all()                          # the offline bound is not ranked


def test_sigma_sweep_and_batch_size_tables():
    ts = {t.number: t for t in paper_tables({"Cora": _rows(p=0.3)}, sigma=10.0, sigmas=[3.0, 10.0], p=0.3, k_bl=5,
                                            batch_size=10, batch_sizes=[10, 20])}
    assert "8" in ts                                                               # p = 0.3: Table 8
    sweep = ts["5/6"]
    assert [g for g, _ in sweep.mean.columns[::2]] == ["σ=3, O=0.15", "σ=10, O=0.50"]
    t10 = ts["10"]
    assert np.allclose(t10.delta.to_numpy(), 0.05)                                 # B=20 adds 0.05 everywhere
    assert t10.formatted().loc["ER", ("", "ΔA_AUC points")] == "+5.0"
    rec = t10.record()
    assert rec["number"] == "10" and rec["cells"]["ER"]["B=10 | A_AUC %"]["n"] == 2


def test_one_seed_has_no_spread_and_bad_input_is_named():
    t = paper_tables({"Cora": _rows(seeds=(1,))}, sigma=10.0, sigmas=[], p=0.1, k_bl=5, batch_size=10,
                     batch_sizes=[10])[1]
    assert t.formatted(marks=False).loc["ER", ("Cora", "AA %")] == "40.0"
    with pytest.raises(ValueError, match=r"rows_by_dataset\['Cora'\] lacks the columns \['AF_s'\]"):
        paper_tables({"Cora": _rows().drop(columns="AF_s")}, sigma=10.0, sigmas=[], p=0.1, k_bl=5, batch_size=10,
                     batch_sizes=[10])
    with pytest.raises(ValueError, match="methods \\['gss'\\] have no rows"):
        paper_tables({"Cora": _rows()}, sigma=10.0, sigmas=[], p=0.1, k_bl=5, batch_size=10, batch_sizes=[10],
                     methods=["bare", "gss"])
    with pytest.raises(ValueError, match="non-empty dict"):
        paper_tables({}, sigma=10.0, sigmas=[], p=0.1, k_bl=5, batch_size=10, batch_sizes=[10])


def test_styled_marks_the_same_cells_as_the_ranks():
    t = paper_tables({"Cora": _rows()}, sigma=10.0, sigmas=[], p=0.1, k_bl=5, batch_size=10, batch_sizes=[10])[1]
    html = t.styled().to_html()
    assert html.count("font-weight: bold") >= 1 and html.count("text-decoration: underline") >= 1
    assert "**" not in html and "&lt;u&gt;" not in html and "41.0 ± 1.0" in html
