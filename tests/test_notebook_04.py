"""Notebook 04_curriculum, executed with its smoke parameters."""

from pathlib import Path

import numpy as np
import pytest

from clkit import curriculum as cur
from clkit import metrics as m

pytestmark = pytest.mark.notebook


def test_smoke_run_records_the_curriculum_study(run_smoke):
    results, out = run_smoke("04_curriculum")
    r = results["results"]
    assert r["datasets_loaded"] == ["digits", "mnist_subset", "fashion_mnist"] and r["datasets_missing"] == []
    assert set(r["data_source"]) == set(r["datasets_loaded"]) and r["seeds"] == [0, 1, 2]
    # difficulty: mean and spread over seeds; the ordering is computed from them, I2M is its reverse
    d, sd = r["difficulty"], r["difficulty_sd"]
    for n, per in ((n, [r["difficulty_per_seed"][str(s)][n] for s in r["seeds"]]) for n in d):
        assert d[n] == pytest.approx(np.mean(per)) and sd[n] == pytest.approx(np.std(per, ddof=1))
    assert r["order_m2i"] == sorted(r["tasks"], key=lambda n: -d[n]) and r["order_i2m"] == r["order_m2i"][::-1]
    assert all(0.1 < v <= 1.0 for v in d.values())        # every task learnable above chance
    for g in r["difficulty_gaps"]:
        assert g["separated"] == (g["gap"] > g["spread"])
    # the weighting-only reference is recomputed from the recorded single-task accuracies
    refs = {o: [cur.weighting_reference(r["difficulty_per_seed"][str(s)], r[f"order_{o.lower()}"])["ACC"]
                for s in r["seeds"]] for o in ("M2I", "I2M")}
    w = r["weighting_reference"]
    assert w["M2I"] == pytest.approx(np.mean(refs["M2I"])) and w["I2M"] == pytest.approx(np.mean(refs["I2M"]))
    assert w["gap"]["mean"] == pytest.approx(np.mean(np.subtract(refs["M2I"], refs["I2M"])))
    assert w["gap"]["mean"] > 0                            # easiest first: weighting favours M2I
    for o in ("M2I", "I2M"):                               # shown beside every strategy's ACC
        assert all(v["ACC_ref"] == pytest.approx(w[o]) for v in r["metrics"][o].values())
    strategies = {"naive", "cumulative", "replay"}
    for order in ("M2I", "I2M"):
        mo = r["metrics"][order]
        assert set(mo) == strategies
        for s, v in mo.items():
            assert {"ACC", "ACC_ref", "final_acc", "BWT_eq2", "BWT_code", "FWT", "rank"} <= set(v)
            assert 0 <= v["ACC"] <= 1 and 0 <= v["final_acc"] <= 1 and v["FWT"] is None   # class-IL: no FWT
            # both BWT forms, recomputed from the per-seed matrices
            Rs = [np.array(r["acc_matrix_per_seed"][str(k)][order][s]) for k in r["seeds"]]
            assert v["BWT_eq2"] == pytest.approx(np.mean([m.backward_transfer(R, "diaz_rodriguez") for R in Rs]))
            assert v["BWT_code"] == pytest.approx(np.mean([m.backward_transfer(R, "consecutive") for R in Rs]))
            assert v["final_acc"] == pytest.approx(np.mean([R[-1].mean() for R in Rs]))
        # class-incremental fine-tuning forgets; training on all data seen so far does not
        assert mo["naive"]["BWT_eq2"] < -0.2 and mo["naive"]["BWT_code"] < -0.1
        assert mo["cumulative"]["final_acc"] > mo["naive"]["final_acc"]
        R = np.array(r["acc_matrix"][order]["naive"])
        assert R.shape == (3, 3) and np.all(np.triu(R, 1) == 0)   # unseen classes are never predicted
    # every M2I - I2M difference comes with its spread; a verdict only beyond it
    for s in strategies:
        g = r["m2i_minus_i2m"][s]
        for key in ("ACC", "final_acc", "ACC_minus_weighting"):
            assert len(g[key]["per_seed"]) == 3 and g[key]["sd"] >= 0
        f = g["final_acc"]
        assert (g["verdict_final"] == "within spread") == (abs(f["mean"]) <= f["sd"])
        assert r["m2i_minus_i2m_final"][s] == pytest.approx(f["mean"])
    assert "weighting" in r["summary"] and "Final-row mean" in r["summary"]
    figures = {Path(f).name for f in results["figures"]}
    assert figures == {"difficulty.png", "m2i_vs_i2m.png"} | {f"acc_matrix_{s}.png" for s in strategies}
    assert all((out / "figures" / f).exists() or (out / f).exists() for f in figures)


def test_bad_parameters_fail_naming_the_parameter(run_smoke):
    with pytest.raises(RuntimeError, match="memory_size"):
        run_smoke("04_curriculum", memory_size=-1)
    with pytest.raises(RuntimeError, match="task-incremental only"):
        run_smoke("04_curriculum", strategies=["naive", "pnn"])
    with pytest.raises(RuntimeError, match="num_tasks"):
        run_smoke("04_curriculum", num_tasks=1)
