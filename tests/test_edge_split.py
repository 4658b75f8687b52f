"""Notebook 02's split (issue 50): units parse, cases record exactly, and the merge of fabricated cases gives
the ground truth and Fig. 5 of one run, bit for bit."""

import json

import numpy as np
import pytest

from clkit.edge import enumerate_sequences, split
from clkit.edge.learners import LearnerConfig
from clkit.edge.report import ground_truth

PARAMS = {"dataset": "cifar100", "seed": 0, "learners": ["finetune", "ewc", "naive"], "edge_cases": [],
          "cases_from": "", "device": "cpu"}


def _data():
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(4, 12, 8)) + 2 * rng.normal(size=(4, 1, 8))).astype("float32")
    return {"x_train": x, "x_test": x[:, :6], "f_train": x, "f_test": x[:, :6]}


CFG = LearnerConfig(hidden=8, epochs=2, batch_size=8)


def _write_case(root, name, params, results):
    d = root / "02_edge" / name
    d.mkdir(parents=True)
    (d / "results.json").write_text(json.dumps({"notebook": "02_edge", "params": params, "results": results}))


def test_units_parse_select_and_refuse():
    every = split.all_cases(["ewc", "l2p"], ["cifar100", "cub200"], ["l2p"])
    assert every == ["truth|ewc", "truth|l2p", "bounds|cifar100|l2p", "bounds|cub200|l2p"]
    whole = split.parse_cases([], ["ewc", "l2p"], ["cifar100", "cub200"], ["l2p"])
    assert whole.whole and whole.truth == ["ewc", "l2p"] and whole.bounds == {"cifar100": ["l2p"], "cub200": ["l2p"]}
    assert whole.keys() == every
    case = split.parse_cases(["bounds|cub200|l2p", "truth|ewc"], ["ewc", "l2p"], ["cifar100", "cub200"], ["l2p"])
    assert not case.whole and case.truth == ["ewc"] and case.bounds == {"cub200": ["l2p"]}
    assert case.pick(["ncm", "ewc"]) == ["ewc"] and "truth|ewc, bounds|cub200|l2p" in split.split_note(case)
    with pytest.raises(ValueError, match=r"edge_cases: 'bounds\|cub200\|ewc' is not a unit of this set"):
        split.parse_cases(["bounds|cub200|ewc"], ["ewc", "l2p"], ["cub200"], ["l2p"])
    with pytest.raises(TypeError, match="edge_cases must be a list"):
        split.parse_cases("truth|ewc", ["ewc"])


def test_merge_is_declared_for_the_sweep():
    from clkit.sweep.merge import merge_declaration

    assert merge_declaration("02_edge") == {"case_parameter": "edge_cases", "whole_value": [],
                                            "merge_parameter": "cases_from"}


def test_truth_split_by_learner_then_merged_equals_one_run(tmp_path):
    """Each learner's truth trained alone equals its truth trained beside the others (the batched learners
    and a strategy); written as cases and merged, the GroundTruth holds the same floats, final ones too."""
    data, seqs = _data(), enumerate_sequences(4, 2)
    whole = ground_truth(data, seqs, ["finetune", "ewc"], ["naive"], CFG, progress=False)
    parts = [ground_truth(data, seqs, ["finetune", "ewc"], [], CFG, progress=False),
             ground_truth(data, seqs, [], ["naive"], CFG, progress=False)]
    for i, gt in enumerate(parts):
        _write_case(tmp_path, f"case{i}", {**PARAMS, "edge_cases": [f"part {i}"], "device": f"cuda:{i}"},
                    {"truth_case": split.truth_record(gt)})
    sel = split.parse_cases([], ["finetune", "ewc", "naive"])
    cases = split.read_cases(tmp_path, {**PARAMS, "cases_from": str(tmp_path)}, sel)
    merged = split.merged_truth(cases, seqs, ["finetune", "ewc", "naive"])
    assert list(merged.values) == list(whole.values) == ["finetune", "ewc", "naive"]
    for name in whole.values:
        assert np.array_equal(merged.values[name], whole.values[name])       # bitwise: JSON round-trips float64
        assert np.array_equal(merged.final[name], whole.final[name])
    assert merged.exact and merged.describe() == whole.describe()


def test_merged_sampled_truth_refuses_an_order_no_case_trained(tmp_path):
    seqs = enumerate_sequences(6, 3)
    from clkit.edge.truth import GroundTruth

    gt = GroundTruth(lambda q: {"a": np.asarray(q)[:, 0, 0] * 1.0}, seqs, mode="sample", samples=10, seed=0)
    _write_case(tmp_path, "a", PARAMS, {"truth_case": split.truth_record(gt)})
    merged = split.merged_truth(split.read_cases(tmp_path, PARAMS), seqs, ["a"], mode="sample", samples=10, seed=0)
    assert np.array_equal(merged.population, gt.population)
    assert np.array_equal(merged.population_values()["a"], gt.population_values()["a"])
    outside = np.setdiff1d(np.arange(len(seqs)), gt.population)[0]
    with pytest.raises(ValueError, match="cases_from: the order .* was trained by no case"):
        merged.require(positions=[outside])


def test_read_cases_refuses_missing_twice_and_other_parameters(tmp_path):
    seqs = enumerate_sequences(4, 2)
    from clkit.edge.truth import GroundTruth

    rec = split.truth_record(GroundTruth(lambda q: {"ewc": np.ones(len(q))}, seqs))
    _write_case(tmp_path, "a", PARAMS, {"truth_case": rec})
    _write_case(tmp_path, "b", {**PARAMS, "seed": 1}, {"truth_case": rec})      # another run: not read
    sel = split.parse_cases([], ["ewc", "naive"])
    with pytest.raises(ValueError, match=r"1 unit\(s\) missing .*truth\|naive.*other parameters: b \(seed\)"):
        split.read_cases(tmp_path, PARAMS, sel)
    _write_case(tmp_path, "c", {**PARAMS, "device": "cuda"}, {"truth_case": rec})
    with pytest.raises(ValueError, match="the truth of ewc is in two cases"):
        split.read_cases(tmp_path, PARAMS)
    with pytest.raises(ValueError, match="cases_from: .* is not a folder"):
        split.read_cases(tmp_path / "nowhere", PARAMS)


def test_bounds_split_by_learner_then_merged_equals_one_run(tmp_path):
    """Fig. 5 trained per learner (each case its own classic_bounds) and merged equals one run's record."""
    from clkit.edge.bounds import classic_bounds

    names = [f"c{i}" for i in range(8)]
    S = np.random.default_rng(1).uniform(size=(8, 8))
    S = (S + S.T) / 2
    np.fill_diagonal(S, 1.0)

    def train_for(learners):
        def train(q):
            q = np.asarray(q)
            return {n: q[:, 0, 0] * (j + 1.0) + q[:, -1, -1] / 7 for j, n in enumerate(["ewc", "l2p"]) if n in learners}
        return train

    whole = classic_bounds(names, 2, S, train_for(["ewc", "l2p"]))
    whole.notes.insert(0, "data: fabricated")
    for n in ("ewc", "l2p"):
        b = classic_bounds(names, 2, S, train_for([n]))
        b.notes.insert(0, "data: fabricated")
        _write_case(tmp_path, n, {**PARAMS, "edge_cases": [split.bounds_key("cifar100", n)]},
                    {"bounds": {"cifar100": json.loads(json.dumps(b.record()))}})
    cases = split.read_cases(tmp_path, PARAMS, split.CaseSelection(False, [], {"cifar100": ["ewc", "l2p"]}))
    merged = split.merged_bounds(cases, "cifar100", ["ewc", "l2p"], class_names=names)
    assert merged.record() == json.loads(json.dumps(whole.record()))
    with pytest.raises(ValueError, match=r"Fig. 5 on cifar100 of \['der'\] is in no case"):
        split.merged_bounds(cases, "cifar100", ["ewc", "der"])


def test_a_case_trains_its_units_and_a_merge_reads_them(tmp_path):
    """The notebook's calls: a case hands train() only its learners and logs its truth exactly; the merge
    (prepare with cases_from) reads every unit before any work and trains nothing."""
    from clkit.results import RunRecord

    data, seqs = _data(), enumerate_sequences(4, 2)
    calls = []

    def train(own, user):
        calls.append((own, user))
        return ground_truth(data, seqs, own, user, CFG, progress=False)

    units = [["truth|finetune", "truth|ewc"], ["truth|naive"]]
    for i, unit in enumerate(units):
        sp = split.prepare(unit, "", learners=["finetune", "ewc", "naive"], params=PARAMS)
        assert not sp.whole and sp.trains_truth() and "A case of the split" in sp.note()
        gt = sp.truth(train, ["finetune", "ewc"], ["naive"], seqs)
        rec = RunRecord("02_edge", params={**PARAMS, "edge_cases": unit})
        sp.log(rec, gt)
        rec.save(tmp_path / "02_edge" / f"case{i}" / "results.json")
    assert calls == [(["finetune", "ewc"], []), ([], ["naive"])]
    assert json.loads((tmp_path / "02_edge" / "case1" / "results.json").read_text())["results"]["split_case"] == \
        ["truth|naive"]
    whole = ground_truth(data, seqs, ["finetune", "ewc"], ["naive"], CFG, progress=False)
    sp = split.prepare([], str(tmp_path), learners=["finetune", "ewc", "naive"],
                       params={**PARAMS, "cases_from": str(tmp_path)})
    merged = sp.truth(lambda *a: pytest.fail("a merge trains nothing"), ["finetune", "ewc"], ["naive"], seqs)
    assert all(np.array_equal(merged.values[n], whole.values[n]) for n in whole.values)
    rec = RunRecord("02_edge", params=PARAMS)
    sp.log(rec, merged)
    assert rec.results == {} and "The merge of a split run" in sp.note()
    with pytest.raises(ValueError, match=r"unit\(s\) missing .*truth\|lwf"):
        split.prepare([], str(tmp_path), learners=["finetune", "lwf"], params=PARAMS)
