"""On-the-fly windows (clkit.data.timeseries_windows) and notebook 01's host-memory plan (issue 52)."""

import numpy as np
import pytest
import torch

from clkit.budget import MemoryPlan
from clkit.models.transformer import TimeSeriesTransformer
from clkit.taskification import budget, fixed_windows, report
from clkit.taskification.forecasting import continual_forecasting, make_forecast_tasks


@pytest.mark.parametrize("kw", [{}, {"split_order": "random"}, {"context_across_tasks": True, "stride": 3},
                                {"target_scaling": "stream"}])
def test_views_give_bitwise_the_stored_windows_and_results(kw):
    v = np.random.default_rng(0).random((2, 400, 3)).astype(np.float32)
    a = make_forecast_tasks(v, fixed_windows(400, 200), 16, 1, windows="view", **kw)
    b = make_forecast_tasks(v, fixed_windows(400, 200), 16, 1, windows="copy", **kw)
    for ta, tb in zip(a, b):
        for pa, pb in zip((ta.train, ta.val, ta.test), (tb.train, tb.val, tb.test)):
            assert torch.equal(pa.x[:], pb.x) and torch.equal(pa.y, pb.y)
            idx = torch.randperm(len(pb), generator=torch.Generator().manual_seed(1))[:7]
            assert torch.equal(pa.x[idx], pb.x[idx])           # a training batch
    for m in (("naive", "replay", "ewc", "lwf") if not kw else ("replay",)):
        mf = lambda: TimeSeriesTransformer(3, 16, 8, 1, 2, target_index=1)  # noqa: E731
        Ma = continual_forecasting(a, mf, m, max_epochs=1, batch_size=16)
        Mb = continual_forecasting(b, mf, m, max_epochs=1, batch_size=16)
        assert np.array_equal(Ma, Mb), m


def test_paper_plan_fits_32_gib_and_stored_windows_do_not():
    names, splits, *_ = report.make_splits(40 * 7 * 144, 10.0, [9, 30, 44], 2.0, 1.0)
    kw = dict(cl_series=100, context=288, stride=1, context_across_tasks=False, num_features=12, batch_size=256,
              memory_size=500, analysed_bytes=100 * 40 * 7 * 144 * 12 * 4, process_bytes=2 * 2 ** 30)
    view = budget.memory_plan(splits, **kw)
    copy = budget.memory_plan(splits, windows="copy", **kw)
    assert view.gib < 32 and view.check(32.0) is view
    assert 130 < copy.gib < 140                                 # the 134 GiB of stored windows
    with pytest.raises(ValueError, match="cl_series: the run plans .* more than this machine's 32 GiB"):
        copy.check(32.0)


def test_budget_refuses_a_machine_too_small_before_timing():
    v = np.zeros((1, 2000, 3), dtype=np.float32)
    splits = {"a": fixed_windows(2000, 500)}
    with pytest.raises(ValueError, match="^cl_series: the run plans"):
        budget.cl_budget(splits, methods=["naive"], cl_seeds=1, cl_series=1, context=16, stride=1,
                         context_across_tasks=False, epochs=1, batch_size=8,
                         model_fn=lambda: (_ for _ in ()).throw(AssertionError("timed before the check")),
                         num_features=3, device="cpu", machine_memory_gib=1e-3)
    assert v.size


def test_plan_sums_its_items():
    p = MemoryPlan((("a", 3), ("b", 4)), "x", "y")
    assert p.bytes == 7 and p.record()["items"] == {"a": 3, "b": 4}
