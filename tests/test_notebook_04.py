"""Notebook 04_curriculum, executed with its smoke parameters."""

from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.notebook


def test_smoke_run_records_the_curriculum_study(run_smoke):
    results, out = run_smoke("04_curriculum")
    r = results["results"]
    assert r["datasets_loaded"] == ["digits", "mnist_subset", "fashion_mnist"] and r["datasets_missing"] == []
    assert set(r["data_source"]) == set(r["datasets_loaded"])
    # the ordering is computed from the single-task accuracies, I2M is its reverse
    d = r["difficulty"]
    assert r["order_m2i"] == sorted(d, key=lambda n: -d[n]) and r["order_i2m"] == r["order_m2i"][::-1]
    assert all(0.1 < v <= 1.0 for v in d.values())        # every task learnable above chance
    for order in ("M2I", "I2M"):
        m = r["metrics"][order]
        assert set(m) == {"naive", "cumulative", "ewc", "replay"}
        for s, v in m.items():
            assert 0 <= v["ACC"] <= 1 and -1 <= v["BWT"] <= 1 and v["FWT"] is None   # class-IL: no FWT
        # class-incremental fine-tuning forgets; cumulative training (all data) is the upper bound
        assert m["naive"]["BWT"] < -0.2
        assert m["cumulative"]["ACC"] > m["replay"]["ACC"] > m["naive"]["ACC"]
        assert m["cumulative"]["rank"] == 1
        R = np.array(r["acc_matrix"][order]["naive"])
        assert R.shape == (3, 3) and np.all(np.triu(R, 1) == 0)   # unseen classes are never predicted
    figures = {Path(f).name for f in results["figures"]}
    assert figures == {"difficulty.png", "m2i_vs_i2m.png"} | {f"acc_matrix_{s}.png" for s in m}
    assert all((out / "figures" / f).exists() or (out / f).exists() for f in figures)


def test_bad_parameters_fail_naming_the_parameter(run_smoke):
    with pytest.raises(RuntimeError, match="memory_size"):
        run_smoke("04_curriculum", memory_size=-1)
    with pytest.raises(RuntimeError, match="task-incremental only"):
        run_smoke("04_curriculum", strategies=["naive", "pnn"])
