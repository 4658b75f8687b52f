"""Sizes that could exhaust a shared machine fail at once, naming the input (issue 43); no allocation."""

import numpy as np
import pytest

from clkit._validate import check_fits


def test_check_fits_compares_with_half_the_free_memory():
    check_fits("x", 1, 2**30, "a thing", available=2**31)           # exactly half: allowed
    with pytest.raises(ValueError, match=r"x 2 needs about 1\.0 GiB for a thing; 1\.0 GiB is free"):
        check_fits("x", 2, 2**30 + 1, "a thing", available=2**30)


def test_edge_orders_random_is_bounded_by_the_distinct_orders():
    from clkit.cli.edge import orders_result

    names = ["cat", "dog", "bird", "fish"]
    with pytest.raises(ValueError, match=r"--random 1000000000: 4 classes in 2 tasks have only 6 distinct orders"):
        orders_result(names, 2, num_random_orders=10**9)
    with pytest.raises(ValueError, match=r"--num-random 1000000000000 needs about .* GiB"):
        orders_result(names, 2, num_random=10**12)
    res = orders_result(names, 2, num_random_orders=6, num_random=200)    # all 6 is fine
    assert sum(k.startswith("random") for k in res["orders"]) == 6


def test_drift_stream_batch_size_is_bounded_by_the_nodes():
    from clkit.cli.drift import stream_result

    y = np.repeat(np.arange(4), 30)
    with pytest.raises(ValueError, match=r"--batch-size must be an integer in \[1, 120\], got 100000000"):
        stream_result(y, batch_size=10**8)
    assert stream_result(y, setting="hard", batch_size=120)["num_batches"] >= 1


def test_a_huge_label_is_refused_before_per_class_arrays(tmp_path):
    from clkit.data.user import load_labels

    y = np.zeros(120, dtype=np.int64)
    y[5] = 10**12
    np.save(tmp_path / "y.npy", y)
    with pytest.raises(ValueError, match=r"has the label 1000000000000 but 2 distinct labels; allowed: 0\.\.C-1"):
        load_labels(tmp_path / "y.npy")
    y[5] = 40_000                                                   # many classes, few nodes: still allowed
    np.save(tmp_path / "y.npy", y)
    assert load_labels(tmp_path / "y.npy").max() == 40_000


def test_synthetic_periods_too_large_for_memory_are_refused(monkeypatch):
    from clkit import _validate
    from clkit.data.temporal import make_drifting_gaussians

    monkeypatch.setattr(_validate, "available_memory", lambda: 2**30)
    with pytest.raises(ValueError, match=r"samples_per_period 1000000000 needs about .* GiB for 12 periods"):
        make_drifting_gaussians(12, 10**9)
    assert make_drifting_gaussians(3, 20).num_periods == 3


def test_the_temporal_budget_times_a_huge_period_on_at_most_cal_rows():
    """``-p synthetic_samples 1000000000`` killed 03's kernel in its budget cell (8 test periods of that
    size were built to time an evaluation); the calibration now times CAL_ROWS rows and scales up."""
    from clkit.temporal import budget as tb

    small = tb.calibrate(["erm"], (8,), 2, train_size=64, eval_size=tb.CAL_ROWS, repeats=1)
    huge = tb.calibrate(["erm"], (8,), 2, train_size=64, eval_size=10**9, repeats=1)
    assert huge["eval"] > 10**9 / tb.CAL_ROWS * small["eval"] / 10      # scaled up, same order (timing noise)
