"""Notebook 01's continual forecasting on a device other than the CPU, its budget and its rehearsal plan.

No GPU is needed: ``torch.device("meta")`` holds shapes but no values, so the CL loop run there
(under :class:`clkit.device.DeviceAudit`) fails on any window, batch order or target left on the
CPU and on any value read inside a step. Every learner the notebook trains (Finetune, Replay, EWC,
LwF) runs on the transformer this way; every kernel they use has a meta implementation. What meta
cannot check: numbers (it has none -- the validation MSE is NaN there, so early stopping runs out
its patience instead of tracking the best epoch; the CPU tests and the smoke run check the
numbers) and speed.
"""

import numpy as np
import pytest
import torch

from clkit import device as dv
from clkit.models.transformer import TimeSeriesTransformer
from clkit.strategies import Task, make_strategy
from clkit.strategies import _all  # noqa: F401 -- registers every strategy
from clkit.taskification import budget as tb
from clkit.taskification import fixed_windows
from clkit.taskification.forecasting import (ForecastTask, continual_forecasting, forecast_task_sizes,
                                             make_forecast_tasks, mse_row, train_with_early_stopping)
from clkit.taskification.params import LEARNER_DEFAULTS, METHODS
from clkit.taskification.report import run_cl

META = torch.device("meta")


def _tasks(seed=0, num_series=1, length=120, window=60, features=3, stride=4, **kw):
    v = np.random.default_rng(seed).random((num_series, length, features)).astype(np.float32)
    return make_forecast_tasks(v, fixed_windows(length, window), 8, 0, stride=stride, **kw)


def _model():
    return TimeSeriesTransformer(3, 8, 8, 2, 2, target_index=0)


# ------------------------------------------------------------------------------------ on meta

@pytest.mark.parametrize("method", METHODS)
def test_every_notebook_learner_forecasts_on_a_non_cpu_device(method):
    """A whole CL run (tasks given on the CPU, moved once) with every tensor on meta, no CPU tensor
    mixed in and no value read inside a step; M comes back NaN (meta has no values)."""
    with dv.DeviceAudit(META):
        M = continual_forecasting(_tasks(), _model, method, max_epochs=2, batch_size=4, device=META,
                                  strategy_kwargs=LEARNER_DEFAULTS.get(method))
    assert M.shape == (2, 2) and np.isnan(M).all()


@pytest.mark.parametrize("method", METHODS)
def test_early_stopping_loop_steps_on_meta(method):
    s = make_strategy(method, _model(), loss="mse", optimizer="adamw", batch_size=4, device=META,
                      **LEARNER_DEFAULTS.get(method, {}))
    with dv.DeviceAudit(META):
        for task in _tasks():
            epochs = train_with_early_stopping(s, task, max_epochs=3, patience=2, lr_patience=0)
    assert s.steps > 0 and epochs == 2            # NaN validation never improves: patience ends it
    assert all(p.device == META for p in s.model.parameters())


def test_the_audit_catches_windows_left_on_the_cpu(monkeypatch):
    """The meta tests can fail: a run that forgets to move its windows stops at the first step."""
    from clkit.data.timeseries_windows import WindowView
    from clkit.strategies import Task

    monkeypatch.setattr(Task, "to", lambda self, device, **kw: self)
    monkeypatch.setattr(WindowView, "to", lambda self, device, **kw: self)   # windows are views (issue 52)
    # the audit's own word, or torch's (a CPU series indexed by meta start rows: views, issue 52)
    with pytest.raises(RuntimeError, match="mixes a CPU tensor|Cannot copy out of meta tensor"), \
            dv.DeviceAudit(META):
        continual_forecasting(_tasks(), _model, "naive", max_epochs=1, batch_size=4, device=META)


def test_run_cl_refuses_worker_processes_on_an_accelerator():
    tasks = {"a": _tasks()}
    with pytest.raises(ValueError, match="workers must be 1 on device meta"):
        run_cl(tasks, _model, ["naive"], 1, seed=0, workers=2, device=META)


# ------------------------------------------------------------------------------------ on the CPU

def test_mse_row_reads_the_same_numbers_as_evaluate():
    tasks = _tasks(num_series=2)
    s = make_strategy("naive", _model(), loss="mse", optimizer="adamw", batch_size=8)
    s.train_task(tasks[0].train)
    row = mse_row(s, tasks)
    assert row.tolist() == [1e3 * s.evaluate(t.test, metric="mse") for t in tasks]


def test_bf16_forecasting_on_the_cpu_runs_in_float32_parameters():
    tasks = _tasks()
    M = continual_forecasting(tasks, _model, "lwf", max_epochs=2, batch_size=4, precision="bf16")
    assert np.isfinite(M).all()
    s = make_strategy("ewc", _model(), loss="mse", optimizer="adamw", batch_size=4, precision="bf16")
    train_with_early_stopping(s, tasks[0], max_epochs=1)
    assert all(p.dtype == torch.float32 for p in s.model.parameters())


def test_fp16_on_the_cpu_is_refused():
    with pytest.raises(ValueError, match="precision 'fp16' needs a CUDA device"):
        continual_forecasting(_tasks(), _model, "naive", precision="fp16")


def test_tasks_move_once_per_run():
    tasks = _tasks()
    assert tasks[0].to("cpu") is tasks[0]
    moved = tasks[0].to(META)
    assert moved.train.x.device == META and moved.to(META) is moved
    assert moved.train.labels_host().shape == (len(tasks[0].train), 1)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("method", METHODS)
def test_cuda_forecasting_matches_the_cpu(method):
    """A CL run on CUDA ends within float32 rounding of the CPU's (same initial weights, same batch
    orders from the CPU generators). Without dropout: with it, CUDA's generator would draw other masks."""
    def model():
        return TimeSeriesTransformer(3, 8, 8, 2, 2, target_index=0, dropout=0.0)

    tasks = _tasks(num_series=2)
    kw = dict(max_epochs=2, batch_size=8, strategy_kwargs=LEARNER_DEFAULTS.get(method))
    cpu = continual_forecasting(tasks, model, method, **kw)
    cuda = continual_forecasting(tasks, model, method, device="cuda", **kw)
    assert np.isfinite(cuda).all() and np.allclose(cuda, cpu, rtol=0.05, atol=1e-3)


def test_forked_cl_runs_fall_back_to_one_process_where_a_fork_could_not_train(monkeypatch):
    """On a machine with an accelerator (faked here) the jobs run in this process, with a warning,
    and the results equal the forked run's; RunDevice.workers(fork=True) plans for one process."""
    from clkit import _jobs
    from clkit.taskification import forecasting as fc

    tasks = _tasks()
    jobs = [lambda s=s: continual_forecasting(tasks, _model, "naive", max_epochs=1, batch_size=4, seed=s)
            for s in range(2)]
    forked = fc.run_jobs(jobs, workers=2) if dv.fork_safe() else None
    monkeypatch.setattr(_jobs, "fork_safe", lambda: False)
    monkeypatch.setattr(dv, "fork_safe", lambda: False)
    with pytest.warns(RuntimeWarning, match="one after another"):
        here = fc.run_jobs(jobs, workers=2)
    sequential = [job() for job in jobs]
    assert all(np.array_equal(a, b) for a, b in zip(here, sequential))
    if forked is not None:
        assert all(np.array_equal(a, b) for a, b in zip(forked, sequential))
    rd = dv.RunDevice(torch.device("cpu"))
    assert rd.workers(2) == 2 and rd.workers(2, fork=True) == 1


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_cl_runs_with_workers_on_a_gpu_machine():
    """The failure gpu_check found: after a backward pass, forked CPU runs on a machine with a GPU
    raised autograd's fork error; now they run (in one process) and equal the sequential runs."""
    from clkit.taskification.forecasting import run_jobs

    tasks = _tasks()
    continual_forecasting(tasks, _model, "naive", max_epochs=1, batch_size=4)   # autograd's threads start
    jobs = [lambda s=s: continual_forecasting(tasks, _model, "naive", max_epochs=1, batch_size=4, seed=s)
            for s in range(2)]
    with pytest.warns(RuntimeWarning, match="one after another"):
        got = run_jobs(jobs, workers=2)
    assert all(np.array_equal(a, job()) for a, job in zip(got, jobs))


# ------------------------------------------------------------------------------------ budget

@pytest.mark.parametrize("kw", [{}, {"context_across_tasks": True}, {"split_order": "random"},
                                {"stride": 3, "num_series": 3}])
def test_task_sizes_are_counted_as_make_forecast_tasks_cuts_them(kw):
    tau = fixed_windows(300, 70)
    stride, series = kw.pop("stride", 1), kw.pop("num_series", 2)
    tasks = _tasks(num_series=series, length=300, window=70, stride=stride, **kw)
    sizes = forecast_task_sizes(tau, 8, num_series=series, stride=stride,
                                context_across_tasks=kw.get("context_across_tasks", False))
    assert sizes.tolist() == [[len(t.train), len(t.val), len(t.test)] for t in tasks]


def test_cl_work_hand_count():
    """One split of two tasks (train 5 and 3 windows, 1 validation, 1 test each), batch 2, 2 epochs,
    one seed, memory 1: steps per run 2 * (3 + 2) = 10."""
    sizes = {"s": np.array([[5, 1, 1], [3, 1, 1]])}
    w = tb.cl_work(sizes, ["naive", "replay", "ewc", "lwf"], 1, epochs=2, batch_size=2,
                   settings={"replay": {"memory_size": 1}})
    assert w["trainings"] == 4 + 1 and w["runs"][("naive", "s")] == 2
    assert w["steps"] == 5 * 10
    # 5 runs x 2 epochs x 8 rows, Replay's memory adds 1 row to each of the second task's 2 steps per epoch
    assert w["train_windows"] == 5 * 16 + 2 * 2
    assert (w["fisher_passes"], w["fisher_windows"]) == (2, 8)
    # a run: 2 epochs x 2 validation passes + 2 tasks x 2 test passes = 8 passes of 8 windows;
    # LwF records the second task (1 pass, 3 rows) and runs its teacher on its 2 x 2 steps (6 rows)
    assert w["passes"] == 5 * 8 + 1 + 4 and w["forward_windows"] == 5 * 8 + 3 + 6
    assert w["task_trainings"] == {"naive": 4, "replay": 2, "ewc": 2, "lwf": 2}


def test_cl_budget_counts_times_and_states_memory():
    rd = dv.setup("cpu")
    splits = {"a": fixed_windows(240, 120), "b": fixed_windows(240, 80)}
    b = tb.cl_budget(splits, methods=["naive", "ewc"], cl_seeds=2, cl_series=1, context=8, stride=4,
                     context_across_tasks=False, epochs=3, batch_size=4, model_fn=_model, num_features=3,
                     device=rd, workers=2, settings={"ewc": {"ewc_lambda": 1.0}})
    # (2 methods x 2 splits + the null control on each of the 2 splits) x 2 seeds
    assert b.trainings == 12 and b.parallel == 2
    rec = b.record()
    assert [w["name"].split(" (")[0] for w in rec["work"]] == ["training steps", "forward passes",
                                                               "task boundaries"]
    sizes = {n: forecast_task_sizes(t, 8, stride=4) for n, t in splits.items()}
    assert rec["work"][0]["count"] == tb.cl_work(sizes, ["naive", "ewc"], 2, epochs=3, batch_size=4)["steps"]
    assert rec["estimated_seconds"] > 0 and all(w["seconds_each"] >= 0 for w in rec["work"])
    total = sum(int(s.sum()) for s in sizes.values())
    views = sum(tb.view_bytes_of(t, 8, num_series=1, num_features=3, stride=4, context_across_tasks=False)
                for t in splits.values())
    # windows are views over the series (issue 52): the plan holds the views, far below stored windows
    assert rec["window_bytes_host"] == views < total * (8 * 3 + 1) * 4 and rec["window_bytes_device"] == 0
    assert rec["host_bytes_planned"] >= views
    text = b.text()
    assert text.startswith("**Budget:** 12 trainings ((2 methods x 2 splits + the null control on each split) x 2 seeds")
    assert "with 2 worker processes" in text and "NumPy on the CPU" in text
    big = tb.CLBudget("01", "cpu", 1, [], host_bytes=2 ** 40, host_memory_gib=16.0)
    assert "exceeds the host memory" in big.text()


# ------------------------------------------------------------------------------------ rehearsal

PAPER = dict(dataset="cesnet", num_series=100, cl_series=100, num_weeks=40, num_perturbations=100,
             case_length=3000, context_steps=288, epochs=100, cl_seeds=6, window_days=[9, 30, 44], stride=1)


def test_rehearsal_plan_cuts_and_writes_a_database_the_real_loader_reads(tmp_path, monkeypatch):
    from clkit.data.timeseries import load_cesnet_timeseries24
    from clkit.rehearsal import MIN_SEEDS
    from clkit.taskification import rehearsal

    monkeypatch.setenv("CLKIT_DATA", str(tmp_path / "elsewhere"))    # both restored after the test
    monkeypatch.delenv("CLKIT_DATA_BEFORE_REHEARSAL", raising=False)
    rh = rehearsal.prepare({**PAPER, "lr": 1e-4}, root=tmp_path, seed=3)
    assert rh.changes == dict(num_series=4, cl_series=1, num_weeks=20, num_perturbations=5, case_length=1200,
                              context_steps=36, epochs=1, cl_seeds=MIN_SEEDS, stride=126)
    assert {r["parameter"] for r in rh.rows} == set(rh.changes)
    db = rh.files["cesnet"]
    assert db.is_file() and db.is_relative_to(tmp_path) and db.name.endswith("ip_addresses_full-minutes.h5")
    data = load_cesnet_timeseries24(4)      # CLKIT_DATA now points at the rehearsal's folder
    assert data.values.shape == (4, 20 * 1008, 12)
    assert (tmp_path / "cesnet_timeseries24" / "ip_addresses_10_minutes_top4.npz").is_file()   # read via tszoo
    # the stride floor leaves the shortest task its ten target steps
    tau = fixed_windows(20 * 1008, 9 * 144)
    assert forecast_task_sizes(tau, 36, stride=126).sum(axis=1).min() == 10


def test_rehearsal_keeps_a_stride_above_the_floor_and_writes_nothing_for_synthetic(tmp_path, monkeypatch):
    from clkit.taskification import rehearsal

    monkeypatch.setenv("CLKIT_DATA", str(tmp_path))
    monkeypatch.delenv("CLKIT_DATA_BEFORE_REHEARSAL", raising=False)
    rh = rehearsal.prepare({**PAPER, "dataset": "synthetic", "stride": 500}, root=tmp_path)
    assert "stride" not in rh.changes and rh.files == {}


def test_paper_set_has_the_seeds_its_verdicts_need():
    from clkit.notebooks import load_params
    from clkit.rehearsal import MIN_SEEDS

    p = load_params("01_taskification", "paper")
    assert p["cl_seeds"] >= MIN_SEEDS and p["dataset"] == "cesnet"
    assert (p["d_model"], p["num_layers"], p["num_heads"], p["context_steps"]) == (32, 8, 4, 288)
