"""The curriculum paper's own Tables 3-8 numbers (clkit.curriculum.paper_numbers) beside a run's."""

import math
from pathlib import Path

import pytest
import yaml

from clkit.curriculum.paper_numbers import (PAPER_ACC, PAPER_BACKBONES, PAPER_RANK, beside_paper, is_paper_scale,
                                            paper_acc)
from clkit.curriculum.tables import paper_tables

ROOT = Path(__file__).resolve().parents[1]


def test_transcription_spot_values_and_shape():
    # Sect. 5: "Replay (from 0.550 to 0.755 in class-incremental and from 0.571 to 0.730 in task-incremental)"
    assert PAPER_ACC["wide_vgg9_bn"]["M2I"]["class"]["replay"] == 0.755
    assert PAPER_ACC["wide_vgg9_bn"]["I2M"]["class"]["replay"] == 0.550
    assert PAPER_ACC["wide_vgg9_bn"]["M2I"]["task"]["replay"] == 0.730
    # the counterexample that fixes the direction: LwF with EfficientNet is higher under I2M
    assert paper_acc("efficientnet_b1", "I2M", "class", "lwf") == 0.203
    assert paper_acc("efficientnet_b1", "M2I", "class", "lwf") == 0.165
    assert paper_acc("resnet34_bn", "M2I", "task", "agem") == 0.464
    assert paper_acc("resnet34_bn", "I2M", "class", "cumulative") == 0.614
    assert math.isnan(paper_acc("resnet34_bn", "M2I", "class", "agem"))     # not quoted in the text
    # 33 quoted (backbone, strategy, setting) pairs, each under both orders: 66 values in [0, 1]
    cells = [(b, o, s, k) for b in PAPER_ACC for o in PAPER_ACC[b] for s in PAPER_ACC[b][o] for k in PAPER_ACC[b][o][s]]
    assert len(cells) == 66 and set(PAPER_ACC) == set(PAPER_BACKBONES)
    assert all(0 <= PAPER_ACC[b][o][s][k] <= 1 for b, o, s, k in cells)
    for b in PAPER_ACC:
        for s in ("class", "task"):
            assert set(PAPER_ACC[b]["M2I"][s]) == set(PAPER_ACC[b]["I2M"][s])
    # ranks: EfficientNet, AGEM "ranked 10 and 7" (class, task) under M2I; PNN never ranks above 14
    assert PAPER_RANK["efficientnet_b1"]["M2I"]["class"]["agem"] == 10
    assert PAPER_RANK["efficientnet_b1"]["M2I"]["task"]["agem"] == 7
    assert all(1 <= r <= 14 for b in PAPER_RANK.values() for o in b.values() for s in o.values() for r in s.values())


def _run(values):
    metrics = {"M2I": {"replay": {"ACC": 0.70, "BWT_eq2": -0.1, "BWT_code": -0.05, "FWT": 0.1, "rank": 1},
                       "naive": {"ACC": 0.20, "BWT_eq2": -0.5, "BWT_code": -0.3, "FWT": 0.1, "rank": 2}}}
    per_seed = [{"order": "M2I", "strategy": "replay", "ACC": v} for v in values]
    return {"metrics": metrics, "metrics_per_seed": per_seed}


def test_tables_carry_the_papers_acc_beside_the_runs():
    t = paper_tables({"class": _run([0.7])}, backbone="wide_vgg9_bn")["M2I"]
    assert t.loc[("rehearsal", "replay"), ("class-incremental", "ACC (paper)")] == 0.755
    assert math.isnan(t.loc[("baseline", "naive"), ("class-incremental", "ACC (paper)")])
    assert ("class-incremental", "ACC (paper)") not in paper_tables({"class": _run([0.7])})["M2I"].columns


def test_cells_are_marked_by_the_spread_only_at_paper_scale():
    wide, _ = beside_paper(_run([0.60, 0.70, 0.80]), "class", "wide_vgg9_bn", paper_scale=True)
    assert wide["M2I"].loc["replay", "outside"] == "no"                 # |0.755 - 0.7| < 2 sd = 0.2
    narrow, note = beside_paper(_run([0.69, 0.70, 0.71]), "class", "wide_vgg9_bn", paper_scale=True)
    assert narrow["M2I"].loc["replay", "outside"] == "yes" and note.startswith("Paper scale")
    assert narrow["M2I"].loc["naive", "outside"] == ""                  # no paper value, no seeds
    assert narrow["M2I"].loc["replay", "sd"] == pytest.approx(0.01)
    teach, note = beside_paper(_run([0.69, 0.70, 0.71]), "class", "wide_vgg9_bn", paper_scale=False)
    assert teach["M2I"].loc["replay", "outside"] == "" and "not meaningful" in note
    assert teach["M2I"].loc["replay", "paper ACC"] == 0.755               # shown for reference
    _, note = beside_paper(_run([0.7]), "class", "small_cnn", paper_scale=False)
    assert "no table" in note
    with pytest.raises(ValueError, match="scenario"):
        beside_paper(_run([0.7]), "domain", "wide_vgg9_bn", paper_scale=True)


def test_only_the_paper_sets_are_at_paper_scale():
    folder = ROOT / "notebooks" / "params" / "04_curriculum"
    scale = {p.stem: is_paper_scale(yaml.safe_load(p.read_text())) for p in folder.glob("*.yaml")}
    assert scale["paper"] and scale["paper_resnet34"] and scale["paper_efficientnet_b1"]
    assert not scale["smoke"] and not scale["default"]
    assert not is_paper_scale(yaml.safe_load((folder / "paper.yaml").read_text()) | {"rehearse": True})
