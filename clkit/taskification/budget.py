"""The 01_taskification run's budget: its continual-forecasting work, counted and timed on its device.

Only the CL part (section 7 of the notebook) trains, and it dominates a paper-scale run.
:func:`cl_work` counts it from the task sizes alone (:func:`~clkit.taskification.forecasting.forecast_task_sizes`,
so a budget never builds windows that might not fit in memory):

- **trainings**: ``(len(methods) + null control) * len(splits) * cl_seeds`` runs, the null control
  being Finetune on every split under ``cl_seeds`` further seeds (when ``naive`` is among the
  methods; the verdicts judge it on the tightest split);
- **training steps**: per run, ``epochs * sum_k ceil(train_k / batch_size)``, an *upper bound*
  (early stopping on the validation MSE ends most tasks sooner);
- **training windows** (one forward and backward each): the steps' rows, plus Replay's memory
  rows (up to one memory row per incoming row from the second task on, at most ``memory_size``
  per step); EWC's Fisher passes (one per task, one gradient per training window);
- **forward passes** and their windows (no gradient): validation after every epoch, the test
  windows of every task after every task (``K`` rows of ``M``), and LwF's teacher (once per task
  to record, then on every batch from the second task on).

:func:`calibrate` times a few real steps of the notebook's own model with a strategy on the
run's device (:func:`clkit.budget.time_per_call`) on windows of the real shape (random
values: the cost of a step does not depend on them), at the largest batch the run will
use and at one window (a fixed part per call and a part per window), and a forward pass
the same way; :func:`task_overheads` times a two-task run of each method for the work at
task boundaries (set-up, weight copies, EWC's Fisher set-up, LwF's teacher, Replay's
memory). :func:`cl_budget` multiplies and prints a :class:`clkit.budget.Budget`
paragraph with the memory the windows take.

The profile, BPS and discrepancy analyses (sections 1-6) are NumPy on the CPU and not in
the estimate.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass

import numpy as np
import torch

from .._seed import torch_seeded, torch_threads
from .._validate import check_int
from ..budget import (
    DEFAULT_CARD,
    MEASURED_CARD_MODEL,
    STEP_FLOOR_S,
    Budget,
    MemoryPlan,
    Work,
    card_scale,
    format_duration,
    free_cores,
    host_memory_gib,
    process_memory_bytes,
    target_card,
    time_per_call,
)
from ..device import as_device, move
from .forecasting import _target_starts, forecast_task_sizes

__all__ = ["cl_work", "calibrate", "task_overheads", "cl_budget", "CLBudget", "window_bytes", "view_bytes_of",
           "memory_plan"]


def _replay_memory(settings: dict | None) -> int:
    """Replay's ``memory_size`` in this run (its settings, else the strategy's default)."""
    from ..strategies import Replay

    given = (settings or {}).get("replay", {}).get("memory_size")
    return int(given if given is not None else inspect.signature(Replay.__init__).parameters["memory_size"].default)


def _batches(rows: int, batch_size: int) -> list[int]:
    """The rows of each step over ``rows`` windows (the last batch may be short)."""
    full, rest = divmod(int(rows), batch_size)
    return [batch_size] * full + ([rest] if rest else [])


def cl_work(sizes: dict, methods, cl_seeds: int, *, epochs: int, batch_size: int, null_control: bool = True,
            settings: dict | None = None) -> dict:
    """Count the CL runs, steps, evaluation passes and windows of a run from its task sizes.

    Parameters
    ----------
    sizes : dict
        ``{split: array (num_tasks, 3)}``: train, validation and test windows per task, all
        series (:func:`~clkit.taskification.forecasting.forecast_task_sizes`).
    methods : list of str
    cl_seeds : int
    epochs : int
        Maximum epochs per task (an upper bound: early stopping).
    batch_size : int
    null_control : bool
        Finetune on the first split under ``cl_seeds`` further seeds (with ``naive`` in ``methods``).
    settings : dict, optional
        ``{method: keyword arguments}``: Replay's ``memory_size``.

    Returns
    -------
    dict
        ``trainings``; ``runs`` (``{(method, split): count}``); ``steps`` and ``train_windows``
        (the rows they train on, Replay's memory rows included); ``fisher_passes`` and
        ``fisher_windows`` (EWC, one pass over each task's training windows); ``passes`` and
        ``forward_windows`` (evaluation and LwF's teacher: forward passes without a gradient);
        ``steps_per_run`` (``{split: steps of one run}``); ``task_trainings`` (``{method: tasks
        trained over all its runs}``). Steps, windows and validation passes are upper bounds
        (every epoch run).

    Examples
    --------
    Two splits (2 tasks of 10/2/2 windows, 1 task of 20/3/3), batch 4, 2 epochs, one seed; the
    null control adds a Finetune run on each split:

    >>> sizes = {"a": np.array([[10, 2, 2], [10, 2, 2]]), "b": np.array([[20, 3, 3]])}
    >>> w = cl_work(sizes, ["naive"], 1, epochs=2, batch_size=4)
    >>> w["trainings"], w["runs"], w["steps_per_run"]
    (4, {('naive', 'a'): 2, ('naive', 'b'): 2}, {'a': 12, 'b': 10})
    >>> w["steps"], w["train_windows"]          # 2 * 12 + 2 * 10 steps; 2 * (2 * 20) + 2 * (2 * 20) rows
    (44, 160)
    >>> w["passes"], w["forward_windows"], w["task_trainings"]   # a run of a: 2 * 2 validation + 2 * 2 test passes
    (22, 50, {'naive': 6})
    """
    cl_seeds = check_int("cl_seeds", cl_seeds, low=1)
    epochs = check_int("epochs", epochs, low=1)
    batch_size = check_int("batch_size", batch_size, low=1)
    names = list(sizes)
    runs = {(m, n): cl_seeds for m in methods for n in names}
    if null_control and "naive" in methods and names:     # the null control on every split (the verdicts use
        for n in names:                                      # the tightest: clkit.taskification.verdicts.null_split_of)
            runs[("naive", n)] += cl_seeds
    memory = _replay_memory(settings) if "replay" in methods else 0
    out = dict.fromkeys(("steps", "train_windows", "fisher_passes", "fisher_windows", "passes", "forward_windows"), 0)
    steps_per_run, tasks = {}, dict.fromkeys(methods, 0)
    for n in names:
        s = np.asarray(sizes[n], dtype=np.int64).reshape(-1, 3)
        tr, va, te = s[:, 0], s[:, 1], s[:, 2]
        K = len(s)
        batches = [_batches(v, batch_size) for v in tr]
        run_steps = epochs * sum(len(b) for b in batches)
        steps_per_run[n] = run_steps
        later_steps = epochs * sum(len(b) for b in batches[1:])     # steps from the second task on
        later_rows = int(tr[1:].sum())
        base = {"steps": run_steps, "train_windows": epochs * int(tr.sum()),
                # validation after every epoch, then every task's test windows after each task (a row of M)
                "passes": epochs * int((va > 0).sum()) + K * int((te > 0).sum()),
                "forward_windows": epochs * int(va.sum()) + K * int(te.sum())}
        for m in methods:
            tasks[m] += runs[(m, n)] * K
            work = dict(base)
            if m == "replay":      # a memory row per incoming row from the second task on, at most memory_size
                work["train_windows"] += epochs * sum(min(r, memory) for b in batches[1:] for r in b)
            elif m == "ewc":       # the Fisher after each task: one gradient per training window
                work["fisher_passes"] = K
                work["fisher_windows"] = int(tr.sum())
            elif m == "lwf":       # the teacher records each later task once, then runs on every batch
                work["passes"] += (K - 1) + later_steps
                work["forward_windows"] += later_rows + epochs * later_rows
            for k, v in work.items():
                out[k] += runs[(m, n)] * v
    return {"trainings": sum(runs.values()), "runs": runs, **out, "steps_per_run": steps_per_run,
            "task_trainings": tasks}


def window_bytes(num_windows: int, context: int, num_features: int) -> int:
    """Bytes of ``num_windows`` float32 windows ``(context, num_features)`` and their targets.

    Examples
    --------
    >>> window_bytes(1000, 288, 12)
    13828000
    """
    return int(num_windows) * (int(context) * int(num_features) + 1) * 4


def view_bytes_of(taskification, context: int, *, num_series: int, num_features: int, stride: int = 1,
                  context_across_tasks: bool = False) -> int:
    """Bytes of one split's windows as :func:`~clkit.taskification.forecasting.make_forecast_tasks` holds them
    by default (``windows="view"``): each task's scaled stretch of every series (its target steps and the
    ``context`` steps before the first), one int64 start and one float32 target per window.

    Examples
    --------
    >>> from clkit.taskification import fixed_windows
    >>> view_bytes_of(fixed_windows(100, 50), 10, num_series=2, num_features=3)   # 2 x 50 x 3 x 4 x 2 + 160 x 12
    4320
    """
    starts = _target_starts(taskification, context, stride, bool(context_across_tasks))
    rows = int(sum(int(end) - (int(a) - context) for a, end in zip(starts, taskification.boundaries[1:])))
    windows = int(forecast_task_sizes(taskification, context, num_series=num_series, stride=stride,
                                      context_across_tasks=context_across_tasks).sum())
    return num_series * rows * num_features * 4 + windows * (8 + 4)


def memory_plan(splits: dict, *, cl_series: int, context: int, stride: int, context_across_tasks: bool,
                num_features: int, batch_size: int, workers: int = 1, memory_size: int = 0,
                analysed_bytes: int = 0, process_bytes: int | None = None, windows: str = "view") -> MemoryPlan:
    """The host memory of the notebook's CL part, item by item (:class:`clkit.budget.MemoryPlan`).

    - **this process now**: its resident memory when the plan is made (the loaded stream included);
    - **the CL windows** of every split, built at once: views (:func:`view_bytes_of`), or stored
      windows with ``windows="copy"`` (:func:`window_bytes`, 134 GiB at the paper's stride 1);
    - **the profile and BPS analyses**: two float64 copies of the analysed series (``analysed_bytes``
      is their float32 size), standardised and sorted;
    - **per worker process** (``workers``): an evaluation batch (4,096 windows gathered, the strategy's
      ``predict``), a training batch with Replay's memory rows and Replay's memory.

    The model's own weights, gradients and optimiser state are kilobytes to a few MiB and sit in the
    process's memory; the device holds its copy.

    Examples
    --------
    >>> from clkit.taskification import fixed_windows
    >>> p = memory_plan({"a": fixed_windows(100, 50)}, cl_series=2, context=10, stride=1, context_across_tasks=False,
    ...                 num_features=3, batch_size=4, process_bytes=0)
    >>> [(n, b) for n, b in p.items]
    [('this process now', 0), ('CL windows (views over the series)', 4320), ('profile and BPS analyses', 0), ('per worker: batches and memory', 508896)]
    """
    if windows == "view":
        held = sum(view_bytes_of(t, context, num_series=cl_series, num_features=num_features, stride=stride,
                                 context_across_tasks=context_across_tasks) for t in splits.values())
        label = "CL windows (views over the series)"
    else:
        held = window_bytes(sum(int(forecast_task_sizes(t, context, num_series=cl_series, stride=stride,
                                                        context_across_tasks=context_across_tasks).sum())
                                for t in splits.values()), context, num_features)
        label = "CL windows (stored)"
    per_worker = window_bytes(4096 + 2 * int(batch_size) + int(memory_size), context, num_features)
    return MemoryPlan(
        (("this process now", process_memory_bytes() if process_bytes is None else int(process_bytes)),
         (label, held), ("profile and BPS analyses", 4 * int(analysed_bytes)),
         ("per worker: batches and memory", max(int(workers), 1) * per_worker)),
        parameter="cl_series",
        advice="lower cl_series (the series whose windows form the CL tasks), or run the CL part as the split "
               "grid's cases on machines that have the memory (notebooks/grids/01_taskification/paper_split.yaml)")


def _linear(t_one: float, t_batch: float, batch: int) -> tuple[float, float]:
    """``(fixed, per_window)`` of ``t(n) = fixed + per_window * n`` through ``t(1)`` and ``t(batch)`` (both >= 0).

    Examples
    --------
    >>> _linear(3.0, 21.0, 10)
    (1.0, 2.0)
    """
    if batch <= 1:
        return 0.0, t_batch
    per = max(t_batch - t_one, 0.0) / (batch - 1)
    return max(t_one - per, 0.0), per


def calibrate(model_fn, *, num_features: int, context: int, batch: int, device="cpu", precision: str = "fp32",
              seed: int = 0, method: str = "naive", num_threads: int | None = 1, repeats: int = 3,
              max_seconds: float = 10.0) -> dict:
    """Seconds of a real training step and of a forward pass of ``model_fn()`` on ``device``: fixed + per window.

    The model is built on the CPU under ``seed`` (the run's global random state is left as it
    was) and trained by ``method`` on random windows of shape ``(n, context, num_features)``
    moved to the device once; :func:`clkit.budget.time_per_call` gives the median of
    ``repeats`` steps after a warm-up step (CUDA synchronised), at ``n = 1`` and at
    ``n = batch``. A straight line through the two gives each call's fixed part (the
    kernels of eight blocks, the optimizer) and its part per window.

    Returns
    -------
    dict
        ``step_fixed``, ``step_window``, ``forward_fixed``, ``forward_window`` (seconds),
        ``step`` and ``forward`` (seconds per call at ``batch``), ``batch``, ``method``,
        ``text`` (what was timed).

    Examples
    --------
    >>> from clkit.models.transformer import TimeSeriesTransformer
    >>> c = calibrate(lambda: TimeSeriesTransformer(3, 8, 4, 1, 1, target_index=0), num_features=3, context=8,
    ...               batch=4, repeats=1)
    >>> c["step"] > 0 and c["forward"] > 0, c["text"][:7]
    (True, '1 steps')
    """
    from ..strategies import make_strategy

    batch = check_int("batch", batch, low=1)
    device = as_device(device)
    gen = torch.Generator().manual_seed(int(seed))
    x = move(torch.randn(batch, context, num_features, generator=gen), device)
    y = move(torch.randn(batch, 1, generator=gen), device)
    timed = {}
    with torch_threads(num_threads), torch_seeded(seed):
        strategy = make_strategy(method, model_fn(), loss="mse", optimizer="adamw", batch_size=batch, seed=seed,
                                 device=device, precision=precision)
        for n in sorted({1, batch}):
            xb, yb = x[:n], y[:n]
            timed[n] = (time_per_call(lambda: strategy.train_step(xb, yb), device=device, warmup=1, repeats=repeats,
                                      max_seconds=max_seconds),
                        time_per_call(lambda: strategy.predict(xb), device=device, warmup=1, repeats=repeats,
                                      max_seconds=max_seconds))
    step_fixed, step_window = _linear(timed[1][0], timed[batch][0], batch)
    fwd_fixed, fwd_window = _linear(timed[1][1], timed[batch][1], batch)
    model = strategy.model
    size = sum(p.numel() for p in model.parameters())
    text = (f"{repeats} steps of {type(model).__name__} ({size:,} parameters) with {method} at batch 1 and "
            f"{batch} on {device} ({precision}): a step {_ms(step_fixed)} + {_ms(step_window)} per window, a "
            f"forward pass {_ms(fwd_fixed)} + {_ms(fwd_window)} per window")
    return {"step_fixed": step_fixed, "step_window": step_window, "forward_fixed": fwd_fixed,
            "forward_window": fwd_window, "step": timed[batch][0], "forward": timed[batch][1], "batch": batch,
            "method": method, "text": text}


def _priced(work: dict, cal: dict) -> tuple[float, float]:
    """Seconds of the counted training (steps, Fisher passes) and forward work at the calibrated unit costs."""
    train = ((work["steps"] + work["fisher_passes"]) * cal["step_fixed"]
             + (work["train_windows"] + work["fisher_windows"]) * cal["step_window"])
    return train, work["passes"] * cal["forward_fixed"] + work["forward_windows"] * cal["forward_window"]


def task_overheads(model_fn, methods, cal: dict, *, num_features: int, context: int, batch_size: int, device="cpu",
                   precision: str = "fp32", seed: int = 0, num_threads: int | None = 1,
                   settings: dict | None = None) -> dict:
    """Seconds per task that each method spends besides its steps and forward passes.

    Runs :func:`~clkit.taskification.forecasting.continual_forecasting` on two tasks of
    two training, one validation and one test window (random values of the real shape),
    twice per method, and subtracts what ``cal`` (:func:`calibrate`) prices its steps and
    passes at: what remains is the work at a task boundary -- building the model and the
    strategy, copying the best weights, EWC's Fisher set-up, LwF's teacher copy, Replay's
    memory -- split over the two tasks.

    Returns
    -------
    dict
        ``{method: seconds per task}`` (>= 0).
    """
    from ..strategies import Task
    from .forecasting import ForecastTask, continual_forecasting

    gen = torch.Generator().manual_seed(int(seed))

    def part(n):
        return Task(torch.randn(n, context, num_features, generator=gen), torch.randn(n, 1, generator=gen))

    tasks = [ForecastTask(part(2), part(1), part(1)) for _ in range(2)]
    sizes = {"two tasks": np.array([[2, 1, 1], [2, 1, 1]])}
    out = {}
    for m in methods:
        times = []
        for _ in range(2):    # the first run pays one-off costs (allocations, imports)
            start = time.perf_counter()
            continual_forecasting(tasks, model_fn, m, max_epochs=1, batch_size=batch_size, seed=seed,
                                  strategy_kwargs=(settings or {}).get(m), num_threads=num_threads, device=device,
                                  precision=precision)
            times.append(time.perf_counter() - start)
        work = cl_work(sizes, [m], 1, epochs=1, batch_size=batch_size, null_control=False, settings=settings)
        out[m] = max(min(times) - sum(_priced(work, cal)), 0.0) / 2
    return out


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


#: the paper's transformer step measured by ``benchmarks/gpu_check.py`` (docs/generated/gpu-check.md):
#: ``(card, context, d_model, num_layers, num_heads, batch, seconds)``; AdamW, fp32 under PyTorch's defaults
MEASURED_GPU_STEP = ("one NVIDIA H200 (torch 2.11.0+cu130, CUDA 13.0; benchmarks/gpu_check.py, 2026-11-27)",
                     288, 32, 8, 4, 256, 33.6e-3)

#: how :data:`MEASURED_GPU_STEP` scales to another card (:func:`clkit.budget.card_scale`): memory-bound. Eight
#: blocks of width 32 over 288 steps of context make small matrices (32 x 32 projections, 288 x 288 attention
#: per head) whose products finish long before their operands stream through memory, and layer norms,
#: softmaxes and AdamW's update move memory without multiplying
MEASURED_GPU_BOUND = "memory"


def gpu_days(work: dict, cal: dict, *, batch_size: int, epochs: int, patience: int, card: str = DEFAULT_CARD
             ) -> dict | None:
    """The CL work priced at :data:`MEASURED_GPU_STEP`, scaled to ``card``: the card's step for every step and
    Fisher pass, and the forward windows at the step's cost per window times the forward/step ratio ``cal``
    measured here.

    The step was timed on an H200; on another card it is scaled by memory bandwidth
    (:data:`MEASURED_GPU_BOUND`, :func:`clkit.budget.card_scale`; a card not in :data:`clkit.budget.CARDS`
    keeps the H200's figure, and ``scaling`` says so), and held to the assumed floor of a step
    (:data:`clkit.budget.STEP_FLOOR_S`).

    Returns ``{"card", "measured_on", "step_s", "measured_step_s", "scaling", "upper_s", "lower_s"}``:
    ``upper_s`` runs every epoch; ``lower_s`` stops every task at the earliest early stopping allows
    (``patience + 1`` epochs), so a real run lies between.

    Examples
    --------
    On the H200 itself, 1000 steps of 33.6 ms; on the default H100 SXM, 4.8 / 3.35 times as long:

    >>> w = {"steps": 1000, "fisher_passes": 0, "forward_windows": 0}
    >>> d = gpu_days(w, {"forward_window": 1.0, "step_window": 3.0}, batch_size=256, epochs=100, patience=10,
    ...              card="H200")
    >>> round(d["upper_s"], 1), round(d["lower_s"], 2)          # 1000 x 33.6 ms; 11 of 100 epochs
    (33.6, 3.7)
    >>> d = gpu_days(w, {"forward_window": 1.0, "step_window": 3.0}, batch_size=256, epochs=100, patience=10)
    >>> d["card"], round(d["step_s"] * 1e3, 1), round(d["upper_s"], 1)     # 33.6 ms x 4.8 / 3.35
    ('H100 SXM', 48.1, 48.1)
    """
    measured_on, *_, batch, measured = MEASURED_GPU_STEP
    factor, scaling = card_scale(MEASURED_CARD_MODEL, card, MEASURED_GPU_BOUND)
    step = max(measured * (factor or 1.0), STEP_FLOOR_S)
    per_window = step / batch * (cal["forward_window"] / cal["step_window"] if cal["step_window"] > 0 else 1 / 3)
    # a step's cost grows with its rows (Replay's memory rows double a batch): the larger of the steps and
    # the rows in batches of the measured size
    rows = work.get("train_windows", 0) + work.get("fisher_windows", 0)
    train = max(work["steps"] + work["fisher_passes"], rows / batch) * step
    upper = train + work["forward_windows"] * per_window
    share = min(patience + 1, epochs) / epochs
    return {"card": card, "measured_on": measured_on, "step_s": step, "measured_step_s": measured,
            "scaling": scaling, "upper_s": upper, "lower_s": upper * share}


@dataclass
class CLBudget(Budget):
    """A :class:`clkit.budget.Budget` that also states the memory the run holds and its time on the measured GPU."""

    host_bytes: int = 0
    device_bytes: int = 0
    host_memory_gib: float | None = None
    device_memory_gib: float | None = None
    host_plan: MemoryPlan | None = None
    gpu_time: dict | None = None
    split_note: str = ""

    def text(self) -> str:
        gib = lambda b: f"{b / 2 ** 30:.3g} GiB"  # noqa: E731
        plan = f" ({', '.join(f'{n} {gib(b)}' for n, b in self.host_plan.items)})" if self.host_plan else ""
        mem = (f" Host memory planned: {gib(self.host_bytes)}{plan}"
               + (f" of this machine's {self.host_memory_gib:g} GiB" if self.host_memory_gib else "")
               + (f"; on the device the windows take {gib(self.device_bytes)} (one split per run, moved once)"
                  + (f" of its {self.device_memory_gib:g} GiB" if self.device_memory_gib else "")
                  if self.device_bytes else "") + ".")
        if self.host_memory_gib and self.host_bytes > self.host_memory_gib * 2 ** 30:
            mem += " That exceeds the host memory: lower `cl_series` to run here (the plan's check refuses it)."
        if self.device_memory_gib and self.device_bytes > self.device_memory_gib * 2 ** 30:
            mem += " That exceeds the device memory: lower `cl_series` to run here."
        gpu = ""
        if self.gpu_time:
            g = self.gpu_time
            card = g["card"]
            gpu = (f" **On one GPU ({card}, the paper's transformer step at {g['step_s'] * 1e3:.1f} ms):"
                   f" {format_duration(g['lower_s'])} to {format_duration(g['upper_s'])}** (every task stopped at the"
                   f" earliest early stopping allows, to every epoch run; the step measured at "
                   f"{g.get('measured_step_s', g['step_s']) * 1e3:.1f} ms on {g.get('measured_on', 'the H200')}, "
                   f"{g.get('scaling', '')}).")
        split = f" {self.split_note}" if self.split_note else ""
        return super().text() + mem + gpu + split

    def record(self) -> dict:
        windows = [b for n, b in self.host_plan.items if n.startswith("CL windows")] if self.host_plan else []
        return {**super().record(), "window_bytes_host": windows[0] if windows else self.host_bytes,
                "host_bytes_planned": self.host_bytes, "window_bytes_device": self.device_bytes,
                **({"host_plan": self.host_plan.record()} if self.host_plan else {}),
                **({"gpu_time": self.gpu_time} if self.gpu_time else {})}


def cl_budget(splits: dict, *, methods, cl_seeds: int, cl_series: int, context: int, stride: int,
              context_across_tasks: bool, epochs: int, batch_size: int, model_fn, num_features: int, device,
              seed: int = 0, workers: int = 1, num_threads: int | None = 1, null_control: bool = True,
              settings: dict | None = None, max_seconds: float = 10.0, analysed_bytes: int = 0,
              machine_memory_gib: float | None = None, patience: int = 10, d_model: int | None = None,
              num_layers: int | None = None, num_heads: int | None = None, split_note: str = "") -> CLBudget:
    """The budget of the notebook's CL part: counted (:func:`cl_work`), timed (:func:`calibrate`), priced.

    Parameters
    ----------
    splits : dict
        ``{name: Taskification}``.
    device : clkit.device.RunDevice
        The run's device and precision (a ``torch.device`` or name is taken as fp32).
    workers : int
        Processes sharing the runs (``RunDevice.workers(cl_workers)``).
    Other parameters
        As the notebook's (``cl_series`` series, ``stride``, ...); ``settings`` are the
        learners' settings (Replay's ``memory_size``).
    analysed_bytes : int
        float32 bytes of the series the profile and BPS analyses read (in the memory plan).
    machine_memory_gib : float, optional
        The host memory to check the plan against (default: this machine's,
        :func:`clkit.budget.host_memory_gib`; a test passes a small one).
    patience, d_model, num_layers, num_heads
        Early stopping and the transformer's size: at the paper's size the budget also prices the
        work at the measured GPU step (:data:`MEASURED_GPU_STEP`, :func:`gpu_days`), scaled to the
        run's CUDA card, else to the H100 SXM (:func:`clkit.budget.target_card`).
    split_note : str
        A sentence naming the split grid of a set too long for one machine.

    Returns
    -------
    CLBudget

    Raises
    ------
    ValueError
        When the host-memory plan (:func:`memory_plan`) exceeds the machine's memory, on every device,
        before anything is timed: it names ``cl_series``.
    """
    from ..device import RunDevice

    precision = device.precision if isinstance(device, RunDevice) else "fp32"
    info = device.info if isinstance(device, RunDevice) else {}
    dev = as_device(device)
    memory = _replay_memory(settings) if "replay" in methods else 0
    plan = memory_plan(splits, cl_series=cl_series, context=context, stride=stride,
                       context_across_tasks=context_across_tasks, num_features=num_features, batch_size=batch_size,
                       workers=workers, memory_size=memory, analysed_bytes=analysed_bytes)
    machine = host_memory_gib() if machine_memory_gib is None else float(machine_memory_gib)
    plan.check(machine)
    sizes = {n: forecast_task_sizes(tau, context, num_series=cl_series, stride=stride,
                                    context_across_tasks=context_across_tasks) for n, tau in splits.items()}
    work = cl_work(sizes, methods, cl_seeds, epochs=epochs, batch_size=batch_size, null_control=null_control,
                   settings=settings)
    largest = max(int(s[:, 0].max()) for s in sizes.values())
    cal = calibrate(model_fn, num_features=num_features, context=context, batch=max(1, min(batch_size, largest)),
                    device=dev, precision=precision, seed=seed, num_threads=num_threads, max_seconds=max_seconds)
    train_s, eval_s = _priced(work, cal)
    overhead = task_overheads(model_fn, methods, cal, num_features=num_features, context=context,
                              batch_size=batch_size, device=dev, precision=precision, seed=seed,
                              num_threads=num_threads, settings=settings)
    boundaries = sum(work["task_trainings"].values())
    boundary_s = sum(work["task_trainings"][m] * overhead[m] for m in methods)
    counts = {n: len(s) for n, s in sizes.items()}
    windows = {n: "/".join(str(int(v)) for v in s.sum(axis=0)) for n, s in sizes.items()}
    null = "naive" in methods and null_control
    detail = (f"({len(methods)} methods x {len(splits)} splits{' + the null control on each split' if null else ''}) x "
              f"{cl_seeds} seeds; tasks per split " + ", ".join(f"{n}: {k}" for n, k in counts.items())
              + "; train/validation/test windows per split (all tasks, " + f"{cl_series} series) "
              + ", ".join(f"{n}: {w}" for n, w in windows.items())
              + f"; at most {epochs} epoch{'s' if epochs != 1 else ''} per task (early stopping ends most tasks "
              "sooner)")
    total = {n: int(s.sum()) for n, s in sizes.items()}
    on_device = max(view_bytes_of(t, context, num_series=cl_series, num_features=num_features, stride=stride,
                                  context_across_tasks=context_across_tasks)
                    for t in splits.values()) if dev.type != "cpu" else 0
    _, m_context, m_width, m_layers, m_heads, _, _ = MEASURED_GPU_STEP
    gpu = (gpu_days(work, cal, batch_size=batch_size, epochs=epochs, patience=patience,
                    card=target_card(dev, info))
           if (context, d_model, num_layers, num_heads) == (m_context, m_width, m_layers, m_heads) else None)
    return CLBudget(
        "01_taskification", f"{dev} ({info.get('name', dev.type)})", work["trainings"],
        [Work("training steps (an upper bound)", work["steps"], train_s / max(work["steps"], 1),
              cal["text"] + f"; {work['train_windows']:,} windows in the steps (Replay's memory rows included) "
              f"and EWC's {work['fisher_passes']:,} Fisher passes over {work['fisher_windows']:,} windows priced "
              "as steps"),
         Work("forward passes (validation every epoch, every task's test windows after each task, LwF's "
              "teacher)", work["passes"], eval_s / max(work["passes"], 1),
              f"{work['forward_windows']:,} windows, priced as the timed forward passes"),
         Work("task boundaries (model and strategy set-up, best-weight copies, Fisher set-up, teacher copies, "
              "memory updates)", boundaries, boundary_s / max(boundaries, 1),
              "a two-task run of each method timed, less its steps and passes: "
              + ", ".join(f"{m} {_ms(v)}" for m, v in overhead.items()) + " per task")],
        parallel=max(int(workers), 1), detail=detail,
        cores=free_cores() if dev.type == "cpu" and int(workers) > 1 else None,
        leaves_out="loading, figures, verdicts and the profile, BPS and baseline analyses (NumPy on the CPU "
                   "whatever the device)", host_bytes=plan.bytes, device_bytes=on_device,
        host_memory_gib=machine, device_memory_gib=info.get("memory_gib") if dev.type == "cuda" else None,
        host_plan=plan, gpu_time=gpu, split_note=split_note)
