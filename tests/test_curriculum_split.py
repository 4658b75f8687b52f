"""Notebook 04's split (clkit.curriculum.split): the cases' selection and refusals, a case's record, and the
merge of fabricated cases back into one run's single-task accuracies and accuracy matrices (fast; the
split-then-merge of a real run is tests/test_curriculum_split_rehearsal.py)."""

import json

import numpy as np
import pytest

from clkit.curriculum import split
from clkit.curriculum.controls import NullControl
from clkit.sweep.merge import merge_declaration

STRATEGIES = ["naive", "replay"]
SEEDS = [0, 1]
ORDERS = {"M2I": ["a", "b"], "I2M": ["b", "a"]}
PARAMS = {"backbone": "mlp", "strategies": STRATEGIES, "seeds": 2, "curriculum_cases": [], "device": "cpu"}


class _Record:
    def __init__(self, params=None):
        self.params, self.results = dict(params or {}), {}

    def log(self, **kw):
        self.results.update(kw)


def _matrix(seed, order, strategy):
    """A distinct float64 matrix per stream, with NaN above the diagonal and values JSON must keep exactly."""
    R = np.full((2, 2), np.nan)
    base = 0.1 * seed + (0.3 if order == "M2I" else 0.7) + len(strategy) / 97
    R[0, 0], R[1, 0], R[1, 1] = base / 3, base / 7, base / 11
    return R


def _fake_run(benches, orders, strategies, **kw):
    return {s: {o: {k: _matrix(s, o, k) for k in strategies} for o in orders} for s in benches}


def _control():
    return NullControl.plan(STRATEGIES, SEEDS, ["replay"])


def _acc(seeds):
    return {s: {"a": 0.9 - s / 101, "b": 0.5 + s / 103} for s in seeds}


def _write_case(root, name, cases, *, params=PARAMS, orders=ORDERS, acc=None):
    record = _Record(params)
    control = _control()
    benches = {s: None for s in SEEDS + list(control.offset_seeds)}
    acc = acc or _acc(split.difficulty_seeds(cases, STRATEGIES, SEEDS, control.offset_seeds))
    out = split.train(benches, cases, STRATEGIES, SEEDS, orders, control, record=record, run=_fake_run,
                      acc_single=acc)
    assert out == (None, None)
    folder = root / "04_curriculum" / name
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps({"notebook": "04_curriculum", "params": dict(
        params, curriculum_cases=cases), "results": record.results}))
    return record.results["curriculum_case"]


def test_declaration_and_cases():
    assert merge_declaration("04_curriculum") == {"case_parameter": "curriculum_cases", "whole_value": [],
                                                  "merge_parameter": "curriculum_from"}
    assert split.all_cases(STRATEGIES) == ["naive", "replay", "null"]
    assert split.parse_cases([], STRATEGIES) == ["naive", "replay", "null"]
    assert split.parse_cases(["null", "naive", "null"], STRATEGIES) == ["null", "naive"]
    with pytest.raises(ValueError, match="curriculum_cases: 'mste' is not a case of this run; allowed: naive, "):
        split.parse_cases(["mste"], STRATEGIES)
    with pytest.raises(TypeError, match="curriculum_cases must be a list"):
        split.parse_cases("naive", STRATEGIES)
    with pytest.raises(ValueError, match="curriculum_cases and curriculum_from: .* give one"):
        split.parse_cases(["naive"], STRATEGIES, "runs/x")
    # only the null case (and a whole run) measures the offset seeds
    c = _control()
    assert split.difficulty_seeds(["naive"], STRATEGIES, SEEDS, c.offset_seeds) == [0, 1]
    assert split.difficulty_seeds(split.all_cases(STRATEGIES), STRATEGIES, SEEDS, c.offset_seeds) == [0, 1, 2, 3]


def test_whole_run_trains_everything_and_logs_no_case():
    record, control = _Record(), _control()
    R, Rc = split.train({s: None for s in range(4)}, split.all_cases(STRATEGIES), STRATEGIES, SEEDS, ORDERS,
                        control, record=record, run=_fake_run)
    assert set(R) == {0, 1} and list(R[0]["M2I"]) == STRATEGIES and set(Rc) == {2, 3}
    assert list(Rc[2]) == ["M2I"] and list(Rc[2]["M2I"]) == ["replay"] and record.results == {}


def test_merge_equals_one_run_exactly(tmp_path):
    _write_case(tmp_path, "c1", ["replay", "null"])
    _write_case(tmp_path, "c0", ["naive"])
    control = _control()
    got = split.read_cases(tmp_path, dict(PARAMS, curriculum_from=str(tmp_path), device="cuda"), STRATEGIES,
                           SEEDS, control)
    R, Rc = split.train({s: None for s in range(4)}, split.all_cases(STRATEGIES), STRATEGIES, SEEDS, ORDERS,
                        control, run=_fake_run)
    for s in SEEDS:
        for o in ORDERS:
            assert list(got["R"][s][o]) == STRATEGIES
            for k in STRATEGIES:       # bitwise, NaN in place
                np.testing.assert_array_equal(got["R"][s][o][k], R[s][o][k], strict=True)
    np.testing.assert_array_equal(got["R_control"][2]["M2I"]["replay"], Rc[2]["M2I"]["replay"], strict=True)
    assert got["acc_single"] == _acc([0, 1, 2, 3]) and list(got["acc_single"]) == [0, 1, 2, 3]
    assert got["orders"] == ORDERS


def test_merge_takes_the_first_case_difficulty_and_refuses_another_curriculum(tmp_path):
    _write_case(tmp_path, "a", ["naive"], acc={0: {"a": 0.8, "b": 0.4}, 1: {"a": 0.7, "b": 0.5}})
    _write_case(tmp_path, "b", ["replay", "null"])
    got = split.read_cases(tmp_path, PARAMS, STRATEGIES, SEEDS, _control())
    assert got["acc_single"][0] == {"a": 0.8, "b": 0.4} and got["acc_single"][2] == _acc([2])[2]
    other = tmp_path / "other"
    _write_case(other, "a", ["naive"])
    _write_case(other, "b", ["replay", "null"], orders={"M2I": ["b", "a"], "I2M": ["a", "b"]})
    with pytest.raises(ValueError, match="case replay chose the curriculum .* deterministic: true"):
        split.read_cases(other, PARAMS, STRATEGIES, SEEDS, _control())


def test_merge_refusals(tmp_path):
    with pytest.raises(ValueError, match="curriculum_from: .* is not a folder of finished cases"):
        split.read_cases(tmp_path / "nope", PARAMS, STRATEGIES, SEEDS, _control())
    _write_case(tmp_path, "a", ["naive", "null"])
    with pytest.raises(ValueError, match=r"1 case\(s\) missing under .*: replay \(run the split grid's cases"):
        split.read_cases(tmp_path, PARAMS, STRATEGIES, SEEDS, _control())
    _write_case(tmp_path, "b", ["replay"], params=dict(PARAMS, backbone="small_cnn"))
    with pytest.raises(ValueError, match=r"missing .*runs with other parameters: b \(backbone\)"):
        split.read_cases(tmp_path, PARAMS, STRATEGIES, SEEDS, _control())
    _write_case(tmp_path, "c", ["replay", "naive"])
    with pytest.raises(ValueError, match="case naive is in two runs"):
        split.read_cases(tmp_path, PARAMS, STRATEGIES, SEEDS, _control())


def test_split_note_names_the_grid():
    from pathlib import Path

    for scenario in ("class", "task"):
        note = split.split_note("efficientnet_b1", scenario, True)
        grid = split.SPLIT_GRIDS[("efficientnet_b1", scenario)]
        assert note.startswith(f"Split: {grid}") and (Path(__file__).parents[1] / grid).is_file()
    assert split.split_note("efficientnet_b1", "class", False) == ""      # not the paper set: no split named
    assert split.split_note("resnet34_bn", "class", True) == ""
    assert "merge" in split.split_note("efficientnet_b1", "class", True, curriculum_from="runs/x")


def test_the_notebook_refuses_a_bad_case_and_a_case_with_a_merge(run_smoke):
    """The validation cell names the parameter, the value and what is allowed (a ParameterError: exit 2)."""
    from clkit.run import ParameterError

    with pytest.raises(ParameterError, match="curriculum_cases: 'gem' is not a case of this run; allowed: naive, "
                                             "cumulative, mste, replay, null"):
        run_smoke("04_curriculum", curriculum_cases=["gem"])
    with pytest.raises(ParameterError, match="curriculum_cases and curriculum_from"):
        run_smoke("04_curriculum", curriculum_cases=["naive"], curriculum_from="runs/x")
