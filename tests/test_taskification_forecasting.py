"""Transformer forecaster and the continual forecasting protocol of the taskification paper."""

import numpy as np
import pytest
import torch

import clkit.taskification as tk
from clkit.models.transformer import TimeSeriesTransformer, standardize_windows
from clkit.taskification.forecasting import (continual_forecasting, make_forecast_tasks, regression_cl_metrics,
                                             train_with_early_stopping)


def test_paper_configuration_shapes():
    m = TimeSeriesTransformer()                       # 12 -> 32-d, 8 blocks, 4 heads, 288 steps, next step
    assert len(m.encoder.layers) == 8 and m.embed.out_features == 32
    assert m.encoder.layers[0].self_attn.num_heads == 4
    assert m(torch.randn(2, 288, 12)).shape == (2, 1)
    with pytest.raises(ValueError, match="num_heads"):
        TimeSeriesTransformer(d_model=30, num_heads=4)
    with pytest.raises(ValueError, match="x must have shape"):
        m(torch.randn(2, 100, 12))


def test_per_sample_standardisation_makes_scale_invariant():
    x = torch.randn(4, 16, 3)
    z = standardize_windows(x)
    assert torch.allclose(z.mean(1), torch.zeros(4, 3), atol=1e-5)
    torch.manual_seed(0)
    m = TimeSeriesTransformer(3, 16, 8, 1, 2, dropout=0.0).eval()
    assert torch.allclose(m(x), m(100 * x + 7), atol=1e-4)


def test_windows_split_in_time_and_target_normalised():
    T = 400
    v = np.zeros((2, T, 2), dtype=np.float32)
    v[:, :, 0] = np.arange(T)                                # target = time index
    v[1, :, 0] *= 3
    tau = tk.fixed_windows(T, 200)
    tasks = make_forecast_tasks(v, tau, context=20, target_index=0)
    t0 = tasks[0]
    # targets 20..199 -> 180 steps per series: 144 / 18 / 18
    assert len(t0.train) == 2 * 144 and len(t0.val) == 2 * 18 and len(t0.test) == 2 * 18
    # divided by the series' training maximum (step 163): equal for both series after scaling
    assert float(t0.train.y.max()) == pytest.approx(1.0)
    assert float(t0.test.y.min()) > 1.0                      # test steps come after training steps
    # the window ends right before its target: last input value = target step - 1 (un-normalised)
    x, y = t0.train.x[0], t0.train.y[0]
    assert float(x[-1, 0]) == 20 - 1 and float(y) == pytest.approx(20 / 163)
    with pytest.raises(ValueError, match="context"):
        make_forecast_tasks(v, tau, context=195, target_index=0)


def test_regression_metrics_follow_paper_definitions():
    M = np.array([[2.0, 9.0, 9.0], [3.0, 1.0, 9.0], [5.0, 0.5, 4.0]])
    out = regression_cl_metrics(M)
    assert out["avg_mse"] == pytest.approx((5 + 0.5 + 4) / 3)
    assert out["bwt"] == pytest.approx(((2 - 5) + (1 - 0.5)) / 2)
    # f_j = M_{T,j} - min over rows j..T-1 (the last row excluded)
    assert out["forgetting"] == pytest.approx(((5 - 2) + (0.5 - 1)) / 2)


def _tiny_stream():
    rng = np.random.default_rng(0)
    t = np.arange(600)
    level = np.where(t < 300, 1.0, 3.0)
    y = level + 0.3 * np.sin(2 * np.pi * t / 24) + 0.05 * rng.normal(size=600)
    x = np.stack([y, rng.normal(size=600)], axis=-1)[None].astype(np.float32)
    return tk.fixed_windows(600, 150), x


def test_training_reduces_error_and_is_deterministic():
    tau, x = _tiny_stream()
    tasks = make_forecast_tasks(x, tau, context=24, target_index=0, stride=2)

    def model_fn():
        return TimeSeriesTransformer(2, 24, 8, 1, 2, dropout=0.1)      # dropout draws from the seeded generator

    M1 = continual_forecasting(tasks, model_fn, "naive", max_epochs=8, lr=3e-3, batch_size=32, seed=1)
    M2 = continual_forecasting(tasks, model_fn, "naive", max_epochs=8, lr=3e-3, batch_size=32, seed=1)
    np.testing.assert_array_equal(M1, M2)
    assert M1.shape == (4, 4) and np.isfinite(M1).all()
    untrained = continual_forecasting(tasks, model_fn, "naive", max_epochs=1, lr=1e-9, batch_size=32, seed=1)
    assert np.mean(np.diag(M1)) < np.mean(np.diag(untrained))


@pytest.mark.parametrize("method", ["replay", "ewc", "lwf"])
def test_cl_strategies_run_on_regression(method):
    tau, x = _tiny_stream()
    tasks = make_forecast_tasks(x, tau, context=24, target_index=0, stride=4)
    M = continual_forecasting(tasks, lambda: TimeSeriesTransformer(2, 24, 8, 1, 2), method, max_epochs=1,
                              lr=1e-3, batch_size=32)
    assert M.shape == (4, 4) and np.isfinite(M).all()


def test_early_stopping_restores_best_weights():
    tau, x = _tiny_stream()
    task = make_forecast_tasks(x, tau, context=24, target_index=0, stride=2)[0]
    from clkit.strategies import make_strategy

    from clkit._seed import torch_seeded

    def run(max_epochs):
        with torch_seeded(0):
            s = make_strategy("naive", TimeSeriesTransformer(2, 24, 8, 1, 2, dropout=0.0), loss="mse",
                              optimizer="adamw", lr=0.3, batch_size=16, seed=0)   # a large LR: noisy validation
            epochs = train_with_early_stopping(s, task, max_epochs=max_epochs, patience=2, lr_patience=0)
            return epochs, s.evaluate(task.val, "mse")

    _, val_one_epoch = run(1)
    epochs, val_best = run(30)
    assert epochs < 30                                   # stopped early
    assert val_best <= val_one_epoch + 1e-9              # the best epoch (epoch 1 included) was restored
