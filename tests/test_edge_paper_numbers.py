"""The EDGE paper's Tables 1-2 as clkit holds them, and a run's table set beside them."""

import math

import pandas as pd
import pytest

from clkit.edge import paper_numbers as pn
from clkit.edge.tables import ROWS, paper_table


def test_twelve_methods_two_tables_and_the_printed_shape():
    assert len(pn.PAPER_METHODS) == 12 and set(pn.PAPER_METHODS) == set(pn.METHOD_NAMES)
    # Table 1: six methods on both datasets; Table 2: five on CIFAR-100, six on ImageNet-R (as printed)
    assert len(pn.PAPER_TABLES["cifar100"]) == 11 and "tagfex" not in pn.PAPER_TABLES["cifar100"]
    assert len(pn.PAPER_TABLES["imagenet_r"]) == 12
    for dataset, methods in pn.PAPER_TABLES.items():
        for name, values in methods.items():
            assert len(values) == len(ROWS), (dataset, name)
            lo, lo_rs, lo_edge, hi, hi_rs, hi_edge, *_ = values
            # the true extremes bound what any protocol saw (a check on the transcription)
            assert lo <= min(lo_rs, lo_edge) and hi >= max(hi_rs, hi_edge), (dataset, name)
            assert all(0 <= v <= 1 for v in values[6:8]), (dataset, name)   # JSDs


def test_spot_values_as_printed():
    assert pn.PAPER_TABLES["cifar100"]["l2p"][0] == 71.83          # Table 1, min truth, L2P, CIFAR-100
    assert pn.PAPER_TABLES["imagenet_r"]["ranpac"][-1] == 1.07      # Table 1, W_EDGE, RanPAC, ImageNet-R
    assert pn.PAPER_TABLES["cifar100"]["memo"][5] == 56.67          # Table 2, max EDGE, MEMO, CIFAR-100
    assert pn.PAPER_TABLES["imagenet_r"]["tagfex"][8] == 3.14       # Table 2, W_RS, TagFex, ImageNet-R


def test_beside_paper_pairs_each_learner_and_marks_additions():
    rec = {"icarl/truth": {"min": 30.0, "max": 50.0}, "icarl/RS": {"min": 40.0, "max": 45.0, "jsd": 0.3,
           "wasserstein": 2.0}, "tagfex/truth": {"min": 1.0, "max": 2.0}, "ncm/truth": {"min": 5.0, "max": 6.0}}
    t = pn.beside_paper(paper_table(rec), "cifar100")
    assert t[("iCaRL", "paper")].tolist() == list(pn.PAPER_TABLES["cifar100"]["icarl"])
    assert t[("iCaRL", "this run")].tolist()[:2] == [30.0, 40.0]
    assert all(math.isnan(v) for v in t[("TagFex", "paper")])       # the paper prints none on CIFAR-100
    assert ("ncm (not in the paper)", "paper") in t.columns
    t = pn.beside_paper(paper_table(rec), "imagenet_r")
    assert t[("TagFex", "paper")].tolist()[0] == 11.73


def test_missing_methods_and_refusals():
    assert pn.missing_methods(pn.PAPER_METHODS) == []
    assert pn.missing_methods([]) == list(pn.PAPER_METHODS)
    with pytest.raises(ValueError, match="dataset must be one of"):
        pn.beside_paper(paper_table({"ewc/truth": {"min": 1.0, "max": 2.0}}), "cub200")
    with pytest.raises(TypeError, match="table must be a pandas DataFrame"):
        pn.beside_paper({"ewc": 1}, "cifar100")
    with pytest.raises(ValueError, match="table's rows must be"):
        pn.beside_paper(pd.DataFrame({"ewc": [1.0]}), "cifar100")


def test_tables_beside_paper_compare_only_at_the_papers_setting():
    from clkit.edge.paper_numbers import PAPER_METHODS, paper_setting, tables_beside_paper

    rec = {"ewc/truth": {"min": 10.0, "max": 30.0}, "l2p/truth": {"min": 80.0, "max": 95.0}}
    fams = {"Table 1": ["l2p"], "Table 2": ["ewc"]}
    tabs, note = tables_beside_paper(rec, fams, dataset="cifar100", classes=list(range(6)), num_tasks=3)
    t2 = dict(tabs)["Table 2"]
    # the difference column: run - paper (EWC's true minimum 12.50 in the paper's Table 2)
    assert t2[("EWC", "run - paper")].iloc[0] == pytest.approx(10.0 - 12.50)
    assert "no difference is judged" in note and "CODA-Prompt" in note and "TagFex" in note
    tabs, note = tables_beside_paper(rec, fams, dataset="cifar100", classes=list(range(6)), num_tasks=3,
                                     rehearse=True)
    assert ("EWC", "run - paper") not in dict(tabs)["Table 2"].columns
    assert "not meaningful" in note and "rehearsal" in note
    every = {f"{m}/truth": {"min": 1.0, "max": 2.0} for m in PAPER_METHODS}
    _, note = tables_beside_paper(every, {"T": list(PAPER_METHODS)}, dataset="imagenet_r", classes=list(range(6)),
                                  num_tasks=3)
    assert "all twelve" in note
    assert not paper_setting("cifar100", [0, 1, 2, 3, 4, 6], 3) and not paper_setting("cub200", list(range(6)), 3)
