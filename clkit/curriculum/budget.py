"""Notebook 04's budget: the trainings, steps and evaluations a run will do, and their time here.

Before its first training the notebook counts its work (:func:`count_work`) and times a few
real steps of its own backbone on its own device (:func:`calibrate`); :func:`estimate` puts the
two into a :class:`clkit.budget.Budget`, which prints one paragraph and goes into
``results.json``.

**What is counted.** The trainings are the single-task runs that measure difficulty (naive,
``difficulty_epochs``, one per dataset and seed) and the streams (every strategy under M2I and
I2M, one per seed). The streams are counted over every loaded dataset: the curriculum may keep
fewer tasks (``num_tasks``, or those separated in difficulty), so the count is an upper bound
until the difficulties are known. Each strategy's work follows its own loop over the data (:func:`stream_work`):

- **training steps**, ``ceil(rows / batch_size)`` per epoch over the task's rows -- over every
  row so far for Cumulative, over its memory (``min(memory_size, rows seen)``) for GDumb, which
  retrains from scratch after each task -- and the **rows** they take (forward and backward);
- **memory rows stacked into steps** beside the incoming rows: Replay's memory batch (as many
  rows as the incoming batch, at most the memory), A-GEM's ``agem_sample_size`` rows, GEM's
  ``gem_patterns_per_task`` rows of every earlier task, generative replay's generated batch --
  all from the second task on;
- **per-sample gradient rows**: EWC's Fisher and MAS's importance over each task's rows;
- **forward rows**: the evaluations (after every task, every task's test set: ``T x T`` test
  passes per stream), LwF's teacher outputs on each later task, generative replay's old solver
  on its generated rows.

**What is timed** (:func:`calibrate`, on the run's device, precision, backbone, layout, image
size and batch size, a warm-up call and the median of three): naive training steps of
``batch_size`` rows and of a quarter of them, which give a step's cost as a fixed part plus a
part per row (:func:`step_model`), so a partial last batch and stacked memory rows are costed
by their rows; a no-gradient forward pass of a batch (evaluation rows at its time per row;
evaluation runs in chunks of up to 4096 rows, often cheaper per row on an accelerator); and,
when EWC or MAS runs, EWC's per-sample Fisher on as many rows as one of its chunks holds
(per-sample gradients are formed a memory-bounded chunk at a time).

**What is left out** (:data:`LEFT_OUT`, said with every budget): loading and resizing the data,
figures and verdicts; the strategies' work that is not a pass over rows (penalty terms, GEM's
quadratic program, A-GEM's projection, SI's path integral, CWR*'s consolidation), generative
replay's VAE training, PNN's earlier columns, and worker start-up. So the estimate is low for
GEM and generative replay.

**One GPU, estimated from FLOPs** (:func:`step_flops`, :class:`clkit.budget.FlopEstimate`): the
same counts priced in FLOPs instead of seconds -- every row through a training step, stacked
memory row and per-sample gradient row at a training step's FLOPs per row (forward and
backward, counted on the real backbone by :func:`clkit.budget.training_flops`), every
forward row at a forward pass's -- divided by the throughput a training step of the same
backbone reached when ``benchmarks/gpu_check.py`` timed it on an H200
(:func:`clkit.budget.measured_throughput`: wide_vgg9, wide_vgg9_bn, efficientnet_b1,
resnet34_bn, resnet32), else by :data:`clkit.budget.GPU_THROUGHPUT` (a quarter of an H100's
FP32 peak). It is said as "estimated from FLOPs, not measured": only single steps were timed.
The line names its card (the run's CUDA card, else the H100 SXM: :func:`clkit.budget.target_card`)
and scales a step measured on the H200 to it (by memory bandwidth for a memory-bound step such as
EfficientNet-B1's, by FP32 peak otherwise: :func:`clkit.budget.card_scale`). Every training step
and test pass costs at least the assumed floor (:data:`clkit.budget.STEP_FLOOR_S`,
:data:`clkit.budget.PASS_FLOOR_S`: kernel launches and the optimiser's update), which sets the time
of a small model's small steps (04's default: 26,064 steps of an 8-pixel small_cnn, 0.14 s by FLOPs,
at least 26 s by the floor). It leaves out what the CPU line leaves out.

**Workers on the CPU.** The CPU line divides by the worker processes only as far as cores are free
(:func:`clkit.budget.free_cores`), and says what it found.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

import numpy as np
import torch

from .._seed import torch_seeded
from ..budget import (
    DEFAULT_CARD,
    MEASURED_CARD_MODEL,
    Budget,
    FlopEstimate,
    Work,
    format_flops,
    free_cores,
    measured_assumption,
    measured_throughput,
    step_bound,
    target_card,
    time_per_call,
    training_flops,
)
from ..learner_kwargs import settings_for
from .streams import make_backbone, run_setting

__all__ = ["LEFT_OUT", "StreamWork", "count_work", "stream_work", "step_model", "calibrate",
           "step_flops", "gpu_estimate", "estimate", "nominal_per_class",
           "REAL_PER_CLASS", "MEMORY_STRATEGIES"]

#: per-class images of the paper's datasets where their real files hold fewer than the paper's 500
#: (train, test): Omniglot's Alphabet of the Magi has 20 drawings per character, split 10/10;
#: TinyImageNet's validation split, the test set, has 50 images per class
REAL_PER_CLASS = {"omniglot": (10, 10), "tinyimagenet": (500, 50)}

#: strategies whose steps stack extra rows, and which setting sizes them
MEMORY_STRATEGIES = {"replay": "memory_size", "agem": "agem_sample_size", "gem": "gem_patterns_per_task",
                     "generative_replay": None}

#: strategy defaults the counts fall back on when a setting is not given (the constructors')
_DEFAULTS = {"memory_size": 200, "agem_sample_size": 256, "gem_patterns_per_task": 256}


#: what the estimate leaves out (:attr:`clkit.budget.Budget.leaves_out`, said with every budget)
LEFT_OUT = ("loading and resizing the data, figures, verdicts, worker start-up and the strategies' work that is "
            "no pass over rows (penalties, GEM's quadratic program, A-GEM's projection, SI's path integral, "
            "CWR*'s consolidation, generative replay's VAE training, PNN's earlier columns: GEM and generative "
            "replay take longer than estimated)")


@dataclass(frozen=True)
class StreamWork:
    """The work of one training (one stream, or one single-task run).

    Attributes
    ----------
    steps : int
        Optimisation steps of up to ``batch_size`` rows.
    rows : int
        Incoming rows through those steps (forward and backward), summed over the steps.
    memory_rows : int
        Rows stacked into those steps besides the incoming batch (forward and backward).
    sample_rows : int
        Rows of per-sample gradients (EWC's Fisher, MAS's importance).
    forward_rows : int
        Rows through a forward pass without gradients (evaluation, teachers).
    test_passes : int
        Evaluations of one task's test set.
    """

    steps: int = 0
    rows: int = 0
    memory_rows: int = 0
    sample_rows: int = 0
    forward_rows: int = 0
    test_passes: int = 0

    def __add__(self, other: "StreamWork") -> "StreamWork":
        return StreamWork(*(a + b for a, b in zip(astuple(self), astuple(other))))

    def __mul__(self, k: int) -> "StreamWork":
        return StreamWork(*(a * k for a in astuple(self)))


def _batches(n: int, batch_size: int) -> list:
    """Sizes of the mini-batches of one epoch over ``n`` rows."""
    full, rest = divmod(int(n), batch_size)
    return [batch_size] * full + ([rest] if rest else [])


def stream_work(strategy: str, train_rows, test_rows, *, epochs: int, batch_size: int, settings: dict | None = None
                ) -> StreamWork:
    """The work of one stream of ``strategy`` over tasks of ``train_rows`` / ``test_rows`` rows, in order.

    Follows each strategy's loop over its data (see the module docstring); a strategy this
    module does not know (a plugin) is counted as naive fine-tuning.

    Parameters
    ----------
    strategy : str
    train_rows, test_rows : list of int
        Rows of each task, in the order of the stream.
    epochs, batch_size : int
    settings : dict, optional
        The strategy's settings (``memory_size``, ``agem_sample_size``, ``gem_patterns_per_task``).

    Returns
    -------
    StreamWork

    Examples
    --------
    Two tasks of 100 and 50 rows, batch 32, 2 epochs: naive takes (4 + 2) x 2 steps; Cumulative
    trains the second task on all 150 rows (5 batches); Replay stacks a memory batch onto each of
    the second task's steps, as many rows as the incoming batch and at most the 20 of memory
    (20 + 18 per epoch); every stream evaluates both test sets after each task.

    >>> stream_work("naive", [100, 50], [10, 10], epochs=2, batch_size=32)
    StreamWork(steps=12, rows=300, memory_rows=0, sample_rows=0, forward_rows=40, test_passes=4)
    >>> stream_work("cumulative", [100, 50], [10, 10], epochs=2, batch_size=32).steps
    18
    >>> stream_work("replay", [100, 50], [10, 10], epochs=2, batch_size=32, settings={"memory_size": 20}).memory_rows
    76
    >>> stream_work("gdumb", [100, 50], [10, 10], epochs=1, batch_size=32, settings={"memory_size": 20}).steps
    2
    """
    settings = settings or {}
    size = {k: settings.get(k, v) for k, v in _DEFAULTS.items()}
    T = len(train_rows)
    steps = rows = memory = sample = forward = 0
    seen = 0
    for t, n in enumerate(train_rows):
        before, seen = seen, seen + n
        if strategy == "cumulative":
            batches = _batches(seen, batch_size)
        elif strategy == "gdumb":
            batches = _batches(min(size["memory_size"], seen), batch_size)
        else:
            batches = _batches(n, batch_size)
        steps += epochs * len(batches)
        rows += epochs * sum(batches)
        if t > 0:
            if strategy == "replay":
                stored = min(size["memory_size"], before)
                memory += epochs * sum(min(b, stored) for b in batches)
            elif strategy == "agem":
                memory += epochs * len(batches) * min(size["agem_sample_size"], size["memory_size"], before)
            elif strategy == "gem":
                memory += epochs * len(batches) * sum(min(size["gem_patterns_per_task"], m) for m in train_rows[:t])
            elif strategy == "generative_replay":
                memory += epochs * n          # a generated row per incoming row
                forward += epochs * n         # the old solver labels them
            elif strategy == "lwf":
                forward += n                  # the teacher's outputs on the task, once
        if strategy in ("ewc", "mas"):
            sample += n                       # importance after the task, per sample
        forward += sum(test_rows)             # R[t, :]: every test set
    return StreamWork(steps, rows, memory, sample, forward, T * T)


def nominal_per_class(datasets, per_class_train: int, per_class_test: int) -> dict:
    """Per-class counts the real datasets give for ``per_class_train`` / ``per_class_test``
    (:data:`REAL_PER_CLASS` where a dataset holds fewer), for a budget without the data at hand.

    Examples
    --------
    >>> nominal_per_class(["mnist", "omniglot", "tinyimagenet"], 500, 500)
    {'mnist': (500, 500), 'omniglot': (10, 10), 'tinyimagenet': (500, 50)}
    """
    out = {}
    for d in datasets:
        tr, te = REAL_PER_CLASS.get(d, (per_class_train, per_class_test))
        out[d] = (min(per_class_train, tr), min(per_class_test, te))
    return out


def count_work(per_class: dict, strategies, *, seeds: int, epochs: int, difficulty_epochs: int, batch_size: int,
               hyper: dict | None = None, learner_kwargs: dict | None = None, num_classes: int = 10,
               control: str | None = None, strategy_epochs: dict | None = None) -> dict:
    """Every training of a run and its work: the single-task runs and the M2I / I2M streams.

    Parameters
    ----------
    per_class : dict dataset -> (train images per class, test images per class)
        The loaded datasets, in their given order (:attr:`Benchmark.per_class`).
    strategies : list of str
    seeds, epochs, difficulty_epochs, batch_size : int
    hyper : dict, optional
        The settings every strategy may take (``memory_size``, ...).
    learner_kwargs : dict, optional
        Per-learner settings over ``hyper``.
    num_classes : int
        Classes per dataset.
    control : str, optional
        The strategy of the stochastic null control (:class:`clkit.curriculum.controls.NullControl`):
        its streams under one order on ``seeds`` more seeds, and those seeds' single-task runs.
    strategy_epochs : dict, optional
        Epochs per strategy where they differ from ``epochs`` (the authors' protocol:
        :func:`clkit.curriculum.protocol.strategy_epochs`, 20 for Naive, LwF and A-GEM at the paper's 50),
        as the streams train them.

    Returns
    -------
    dict
        ``difficulty`` and ``streams``: (trainings, :class:`StreamWork` summed over them), the
        null control's included; ``per_strategy``: strategy -> StreamWork of its streams (both
        orders, all seeds); ``control``: (trainings, StreamWork) of the null control's streams;
        ``tasks``: the datasets the streams are counted over.

    Examples
    --------
    Two datasets of 20 + 10 images (2 + 1 per class), batch 8, 1 epoch, 2 seeds: each
    single-task run takes 3 steps; a naive stream 3 + 3 steps; both orders of both seeds.

    >>> w = count_work({"a": (2, 1), "b": (2, 1)}, ["naive"], seeds=2, epochs=1, difficulty_epochs=1, batch_size=8)
    >>> w["difficulty"][0], w["difficulty"][1].steps, w["streams"][0], w["streams"][1].steps
    (4, 12, 4, 24)

    With the null control on naive: 2 more seeds' single-task runs, and one order of naive on them.

    >>> w = count_work({"a": (2, 1), "b": (2, 1)}, ["naive"], seeds=2, epochs=1, difficulty_epochs=1, batch_size=8,
    ...                control="naive")
    >>> w["difficulty"][0], w["difficulty"][1].steps, w["streams"][0], w["streams"][1].steps, w["control"][0]
    (8, 24, 6, 36, 2)

    Under the authors' protocol Naive trains 20 epochs where the others train 50: its streams take
    20 x (3 + 3) steps per order and seed.

    >>> w = count_work({"a": (2, 1), "b": (2, 1)}, ["naive", "ewc"], seeds=1, epochs=50, difficulty_epochs=1,
    ...                batch_size=8, strategy_epochs={"naive": 20})
    >>> w["per_strategy"]["naive"].steps, w["per_strategy"]["ewc"].steps
    (240, 600)
    """
    hyper = dict(hyper or {})
    names = list(per_class)
    train = [num_classes * per_class[n][0] for n in names]
    test = [num_classes * per_class[n][1] for n in names]
    single = sum((stream_work("naive", [a], [b], epochs=difficulty_epochs, batch_size=batch_size)
                  for a, b in zip(train, test)), StreamWork())
    per_strategy = {}

    def kw(s):
        return dict(epochs=int((strategy_epochs or {}).get(s, epochs)), batch_size=batch_size,
                    settings=settings_for(s, {k: v for k, v in hyper.items() if k in _DEFAULTS}, learner_kwargs))

    for s in strategies:
        both = stream_work(s, train, test, **kw(s)) + stream_work(s, train[::-1], test[::-1], **kw(s))
        per_strategy[s] = both * seeds
    streams = sum(per_strategy.values(), StreamWork())
    runs = 2 * seeds if control is not None else seeds   # the null control's seeds need their single-task runs
    extra = (seeds, stream_work(control, train, test, **kw(control)) * seeds) if control else (0, StreamWork())
    return {"difficulty": (runs * len(names), single * runs),
            "streams": (2 * seeds * len(strategies) + extra[0], streams + extra[1]),
            "per_strategy": per_strategy, "control": extra, "tasks": names}


def step_model(t_full: float, t_part: float, full: int, part: int) -> tuple[float, float]:
    """``(seconds per step, seconds per row)`` of a step time ``a + c * rows`` through two timed steps.

    ``t_full`` and ``t_part`` are the times of steps of ``full`` and ``part`` rows. When the
    two do not give a positive slope and intercept (timing noise, or ``full == part``), all of
    the full step's time is taken per row (``a = 0``).

    Examples
    --------
    >>> step_model(0.5, 0.2, 16, 4)
    (0.1, 0.025)
    >>> step_model(0.5, 0.6, 16, 4)
    (0.0, 0.03125)
    """
    if full > part:
        c = (t_full - t_part) / (full - part)
        a = t_full - c * full
        if c > 0 and a >= 0:
            return round(a, 12), round(c, 12)
    return 0.0, t_full / full


def _per_sample_chunk(model, most: int = 32) -> int:
    """Rows to time per-sample gradients on: as many as one chunk of
    :func:`clkit.strategies._common.per_sample_mean` holds (its memory budget over the model's
    per-sample gradient), between 2 and ``most`` -- a chunk's cost per row is what a task pays."""
    import inspect

    from ..strategies._common import per_sample_mean

    budget = inspect.signature(per_sample_mean).parameters["budget_bytes"].default
    numel = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return int(max(2, min(most, budget // (4 * max(numel, 1)))))


def calibrate(device="cpu", precision: str | None = None, *, backbone: str, image_size: int, channels: int,
              batch_size: int, num_classes: int, memory_format: str = "contiguous", optimizer: str = "sgd",
              lr: float = 0.001, momentum: float = 0.9, per_sample: bool = False, per_sample_rows: int = 0,
              seed: int = 0) -> dict:
    """Seconds of training steps, forward passes and (optionally) per-sample gradients, timed on ``device``.

    The backbone is built as the streams build it (on the CPU under ``seed``, then moved by the
    strategy), with random images of the run's shape already on the device, so only the work
    is timed (:func:`clkit.budget.time_per_call`: a warm-up call, CUDA synchronised, the median
    of three). Naive steps of ``batch_size`` rows and of a quarter of them give the step's cost
    ``per_step + per_row * rows`` (:func:`step_model`): a task's last, partial batch and the
    memory rows stacked into a step are costed by their rows; when timing noise gives the pair no
    positive fit, it is timed again (three tries at most). Per-sample gradients are timed on
    ``per_sample_rows`` rows (0: as many as one chunk of them holds, 2 to 32).

    Returns
    -------
    dict
        ``step`` (one naive step of ``batch_size`` rows), ``per_step`` and ``per_row`` (its
        model), ``forward`` (a no-gradient forward pass of ``batch_size`` rows), ``per_sample``
        (EWC's Fisher per row; only with ``per_sample``), ``what`` (a description).

    Examples
    --------
    >>> t = calibrate("cpu", backbone="mlp", image_size=8, channels=1, batch_size=4, num_classes=20)
    >>> t["step"] > 0 and t["forward"] > 0 and t["per_row"] > 0, t["what"]
    (True, 'mlp on 1x8x8 images, batch 4, fp32, timed on cpu')
    """
    from ..strategies import Task, make_strategy

    dev, precision, _ = run_setting(device, precision, False)
    with torch_seeded(seed):
        model = make_backbone(backbone, channels, num_classes, image_size, memory_format)
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(batch_size, channels, image_size, image_size, generator=g).to(dev)
    y = torch.randint(0, num_classes, (batch_size,), generator=g).to(dev)
    common = dict(optimizer=optimizer, lr=lr, momentum=momentum, batch_size=batch_size, device=dev,
                  precision=precision, seed=seed)
    strat = make_strategy("naive", model, **common)
    part = max(1, batch_size // 4)
    timing = dict(device=dev, warmup=1, repeats=3, max_seconds=8.0)
    out = {}
    for _ in range(3):  # timing noise can hide the fixed cost of a small step (no positive fit): time the pair again
        out["step"] = time_per_call(lambda: strat.train_step(x, y), **timing)
        t_part = (time_per_call(lambda: strat.train_step(x[:part], y[:part]), **timing) if part < batch_size
                  else out["step"])
        out["per_step"], out["per_row"] = step_model(out["step"], t_part, batch_size, part)
        if out["per_step"] > 0 or part >= batch_size:
            break
    out["forward"] = time_per_call(lambda: strat.predict(x), **timing)
    if per_sample:
        with torch_seeded(seed):
            ewc = make_strategy("ewc", make_backbone(backbone, channels, num_classes, image_size, memory_format),
                                **common)
        k = per_sample_rows or _per_sample_chunk(ewc.model)
        xs = torch.rand(k, channels, image_size, image_size, generator=g).to(dev)
        task = Task(xs, torch.randint(0, num_classes, (k,), generator=g).to(dev), classes=tuple(range(num_classes)))
        out["per_sample"] = time_per_call(lambda: ewc.fisher(task), **{**timing, "repeats": 2}) / k
    layout = "" if memory_format == "contiguous" else f" ({memory_format})"
    out["what"] = (f"{backbone}{layout} on {channels}x{image_size}x{image_size} images, batch {batch_size}, "
                   f"{precision}, timed on {dev}")
    return out


def step_flops(*, backbone: str, image_size: int, channels: int, batch_size: int, num_classes: int,
               memory_format: str = "contiguous", seed: int = 0) -> dict:
    """FLOPs of one naive training step and one forward pass of the run's backbone, per batch and per row.

    The backbone is built as the streams build it and counted by :func:`clkit.budget.training_flops`
    (forward and backward on a batch of ``batch_size`` images, the ``meta`` device: nothing runs).

    Returns
    -------
    dict
        ``step`` and ``forward`` (FLOPs of a batch), ``step_per_row`` and ``forward_per_row``,
        ``what`` (a description).

    Examples
    --------
    >>> f = step_flops(backbone="mlp", image_size=8, channels=1, batch_size=4, num_classes=20)
    >>> f["step_per_row"] * 4 == f["step"], 2.5 < f["step"] / f["forward"] < 3, f["what"]
    (True, True, 'mlp on 1x8x8 images, batch 4: a training step 278 kFLOP per row')
    """
    with torch_seeded(seed):
        model = make_backbone(backbone, channels, num_classes, image_size, memory_format)
    f = training_flops(model, torch.zeros(batch_size, channels, image_size, image_size))
    per_row = f["step"] / batch_size
    return {"step": f["step"], "forward": f["forward"], "step_per_row": per_row,
            "forward_per_row": f["forward"] / batch_size, "backbone": backbone,
            "what": (f"{backbone} on {channels}x{image_size}x{image_size} images, batch {batch_size}: a training "
                     f"step {format_flops(per_row)} per row")}


def gpu_estimate(work: StreamWork, flops: dict, card: str = DEFAULT_CARD) -> FlopEstimate:
    """The work of a run on one GPU from its FLOPs (:class:`clkit.budget.FlopEstimate`, not measured).

    Rows through training steps, stacked memory rows and per-sample gradient rows cost a training
    step's FLOPs per row (forward and backward); forward rows a forward pass's. The FLOPs are
    divided by the throughput a step of ``flops["backbone"]`` reached on a GPU where one was
    measured (:func:`clkit.budget.measured_throughput`), else by the assumed
    :data:`clkit.budget.GPU_THROUGHPUT`. A measured step is scaled from the H200 to ``card``
    (:func:`clkit.budget.card_scale`, memory-bound or compute-bound by :func:`clkit.budget.step_bound`);
    every training step and test pass costs at least the assumed floor.

    Examples
    --------
    >>> e = gpu_estimate(StreamWork(steps=1, rows=100, memory_rows=20, sample_rows=10, forward_rows=50),
    ...                  {"step_per_row": 3e9, "forward_per_row": 1e9, "step": 3.84e11, "what": "x"})
    >>> e.flops == 130 * 3e9 + 50 * 1e9, e.record()["measured"], e.card
    (True, False, 'H100 SXM')

    Small steps: 10,000 steps of 1 MFLOP and 40 test passes take the floor's 10 s + 12 ms.

    >>> e = gpu_estimate(StreamWork(steps=10000, rows=640000, forward_rows=0, test_passes=40),
    ...                  {"step_per_row": 1e6 / 64, "forward_per_row": 0.0, "step": 1e6, "what": "x"})
    >>> round(e.seconds, 3), e.floored
    (10.012, True)
    """
    trained = work.rows + work.memory_rows + work.sample_rows
    total = trained * flops["step_per_row"] + work.forward_rows * flops["forward_per_row"]
    detail = (f"{trained:,} rows forward and backward at {format_flops(flops['step_per_row'])} each, "
              f"{work.forward_rows:,} forward rows at {format_flops(flops['forward_per_row'])}; a step of "
              f"{format_flops(flops['step'])}, counted on {flops['what'].split(':')[0]}; one process")
    measured = measured_throughput(flops["backbone"]) if flops.get("backbone") else None
    floor = dict(card=card, steps=work.steps, passes=work.test_passes)
    if measured:
        return FlopEstimate(total, throughput=measured, assumption=measured_assumption(flops["backbone"]),
                            detail=detail, source_card=MEASURED_CARD_MODEL, bound=step_bound(measured), **floor)
    return FlopEstimate(total, detail=detail, **floor)


def estimate(per_class: dict, strategies, *, device="cpu", precision: str | None = None, seeds: int, epochs: int,
             difficulty_epochs: int, batch_size: int, backbone: str, image_size: int, channels: int,
             memory_format: str = "contiguous", workers: int = 1, hyper: dict | None = None,
             learner_kwargs: dict | None = None, timings: dict | None = None,
             control: str | None = None, flops: dict | bool = True, strategy_epochs: dict | None = None,
             split_note: str = "") -> Budget:
    """The run's budget (a :class:`clkit.budget.Budget`): :func:`count_work` costed by :func:`calibrate`.

    Parameters
    ----------
    per_class : dict dataset -> (train, test images per class)
        ``bench.per_class`` of the loaded benchmark, or :func:`nominal_per_class` for a run
        whose data are not at hand.
    strategies : list of str
    device : str, torch.device or clkit.device.RunDevice
    workers : int
        Processes sharing the trainings (``rd.workers(workers)``): the estimate divides by it.
    timings : dict, optional
        :func:`calibrate`'s result, to cost other counts without timing again.
    control : str, optional
        The null control's strategy (:func:`count_work`).
    strategy_epochs : dict, optional
        Epochs per strategy where the protocol's differ (:func:`count_work`; the notebook's
        ``run_epochs``): the authors' protocol's 20 epochs of Naive, LwF and A-GEM are counted as 20.
    flops : dict or bool
        :func:`step_flops`'s result, or True to count it: the budget then also says the time on
        one GPU, estimated from FLOPs, not measured (:func:`gpu_estimate`); False: no GPU line.
    split_note : str
        Said after the estimate: the split grid of a set over a day of one GPU, or what a case or a
        merge of it is (:func:`clkit.curriculum.split.split_note`).
    Other parameters
        The notebook's (optimiser settings in ``hyper``).

    Examples
    --------
    Two datasets of 20 + 10 images, batch 8, one seed: two single-task runs of 3 steps (8 + 8 + 4
    rows); a naive and an EWC stream under both orders, each of 3 + 3 steps; EWC's Fisher over
    each task's 20 rows; every stream evaluates both test sets (10 rows each) after each task,
    every single-task run its own.

    >>> b = estimate({"a": (2, 1), "b": (2, 1)}, ["naive", "ewc"], seeds=1, epochs=1, difficulty_epochs=1,
    ...              batch_size=8, backbone="mlp", image_size=8, channels=1,
    ...              timings={"per_step": 0.002, "per_row": 0.001, "forward": 0.004, "per_sample": 0.002,
    ...                       "what": "given"})
    >>> b.trainings, [(w.name, w.count) for w in b.work]
    (6, [('training steps', 30), ('rows through training steps', 200), ('per-sample gradient rows', 80), ('test rows evaluated', 180)])
    >>> round(b.seconds, 3)   # 30 x 0.002 + 200 x 0.001 + 80 x 0.002 + 180 x 0.004 / 8
    0.51

    On one GPU, from FLOPs (here given; by default counted on the backbone): the 200 training rows and
    80 per-sample rows at a step's FLOPs per row, the 180 test rows at a forward pass's.

    >>> flops = {"step": 2.4e6, "forward": 8e5, "step_per_row": 3e5, "forward_per_row": 1e5, "what": "given"}
    >>> b = estimate({"a": (2, 1), "b": (2, 1)}, ["naive", "ewc"], seeds=1, epochs=1, difficulty_epochs=1,
    ...              batch_size=8, backbone="mlp", image_size=8, channels=1, flops=flops,
    ...              timings={"per_step": 0.002, "per_row": 0.001, "forward": 0.004, "per_sample": 0.002,
    ...                       "what": "given"})
    >>> b.gpu.flops == (200 + 80) * 3e5 + 180 * 1e5, "estimated from FLOPs, not measured" in b.text()
    (True, True)
    """
    hyper = dict(hyper or {})
    dev, precision, _ = run_setting(device, precision, False)
    work = count_work(per_class, strategies, seeds=seeds, epochs=epochs, difficulty_epochs=difficulty_epochs,
                      batch_size=batch_size, hyper=hyper, learner_kwargs=learner_kwargs, control=control,
                      strategy_epochs=strategy_epochs)
    T = len(work["tasks"])
    if timings is None:
        timings = calibrate(dev, precision, backbone=backbone, image_size=image_size, channels=channels,
                            batch_size=batch_size, num_classes=10 * T, memory_format=memory_format,
                            per_sample=any(s in ("ewc", "mas") for s in strategies),
                            **{k: hyper[k] for k in ("optimizer", "lr", "momentum") if k in hyper})
    (n_single, single), (n_streams, streams) = work["difficulty"], work["streams"]
    total = single + streams
    memory = f", {total.memory_rows:,} of them memory rows" if total.memory_rows else ""
    items = [Work("training steps", total.steps, timings["per_step"],
                  f"the fixed part of naive steps of {timings['what']}"),
             Work("rows through training steps", total.rows + total.memory_rows, timings["per_row"],
                  f"forward and backward{memory}; the step's time per row"),
             Work("per-sample gradient rows", total.sample_rows, timings.get("per_sample", np.nan),
                  "EWC's Fisher, timed per row"),
             Work("test rows evaluated", total.forward_rows, timings["forward"] / batch_size,
                  f"{total.test_passes:,} test passes and teacher outputs; a forward pass's time per row")]
    items = [w for w in items if w.count]
    runs = n_single // max(len(per_class), 1)
    detail = (f"{n_single} single-task runs ({len(per_class)} datasets x {runs} seeds, {difficulty_epochs} "
              f"epoch{'s' * (difficulty_epochs != 1)}) + {n_streams} streams ({len(strategies)} strategies x 2 "
              f"orders x {seeds} seeds"
              + (f", and the null control: {control} under one order on {seeds} more seeds" if control else "")
              + f"; {epochs} epoch{'s' * (epochs != 1)} per task"
              + ("".join(f", {e} for {n}" for n, e in (strategy_epochs or {}).items() if n in strategies)
                 + " (the authors' configs)" if strategy_epochs else "")
              + f", over all {T} loaded "
              "datasets: an upper bound, the curriculum may keep fewer)")
    gpu = None
    if flops is True:
        flops = step_flops(backbone=backbone, image_size=image_size, channels=channels, batch_size=batch_size,
                           num_classes=10 * T, memory_format=memory_format)
    if flops:
        gpu = gpu_estimate(total, flops, card=target_card(device))
    name = getattr(device, "info", {}).get("name") if dev.type == "cuda" else None
    cores = free_cores() if dev.type == "cpu" and workers > 1 else None
    return Budget("04_curriculum", f"{dev}{f' ({name})' if name else ''}, {precision}", n_single + n_streams, items,
                  parallel=max(1, workers), detail=detail, leaves_out=LEFT_OUT, gpu=gpu, cores=cores,
                  note=split_note)
