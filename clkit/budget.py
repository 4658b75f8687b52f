"""A budget before every long run: how much work a run will do and how long it should take here.

Before it trains, every notebook counts its work -- how many models it trains and how many
optimisation steps and evaluation passes that makes -- and times a few real steps of its own
model on its own device (:func:`time_per_call`: warm-up calls first, CUDA synchronised, the
median of the timed calls). :class:`Budget` multiplies the two, divides by the worker
processes that share the work, prints one paragraph and goes into ``results.json``. It is an
estimate from a few steps: data loading, figures and verdicts are not in it, and the first
steps of a run can be slower than the rest (caches, autotuning).

**One GPU, estimated from FLOPs.** Where no GPU is at hand, a budget also says what the same work
would take on one: :func:`training_flops` counts the floating-point operations of a real training
step (forward and backward, :class:`torch.utils.flop_counter.FlopCounterMode` on the real model,
on the ``meta`` device so nothing is computed), and :class:`FlopEstimate` divides the run's total
by a sustained throughput: the one a step of the same backbone reached when
``benchmarks/gpu_check.py`` timed it on a GPU (:data:`MEASURED_STEPS`, :func:`measured_throughput`),
else an assumed one (:data:`GPU_THROUGHPUT`: a quarter of an H100's FP32 peak). That line is
labelled "estimated from FLOPs, not measured" wherever it appears: only single steps were timed.

**On which card.** Every one-GPU line names its card (:func:`target_card`: the run's own CUDA card,
else :data:`DEFAULT_CARD`, the H100 SXM the project's goal names) and the card its figure comes
from (:data:`MEASURED_CARD` for measured steps, the H100 SXM for the assumed throughput). When the
two differ, :func:`card_scale` scales the time by the published specifications in :data:`CARDS`:
a memory-bound step (:func:`step_bound`: a measured throughput under :data:`GPU_THROUGHPUT`, e.g.
EfficientNet's depthwise convolutions, the graph models, 01's narrow transformer) by the ratio of
memory bandwidths, a compute-bound one by the ratio of FP32 peaks; a card not in :data:`CARDS` is
not scaled, and the line says so.

**A step has a floor.** A GPU step of a small model is bound by the host launching its kernels and
the optimiser's update, not by FLOPs: a FLOP count of a few kFLOP per row gives microseconds where
a real step takes a millisecond. :data:`STEP_FLOOR_S` (1 ms per training step) and
:data:`PASS_FLOOR_S` (0.3 ms per forward pass) are **assumed, not measured** (no GPU measured an
empty step here; see their comments), and :class:`FlopEstimate` takes the larger of the FLOP time
and the floors over its steps and passes.

**Worker processes on a CPU.** A budget that divides by worker processes on the CPU checks the cores
free to it (:func:`free_cores`: ``os.sched_getaffinity`` less the load average of other programs)
and divides by no more than those (:class:`Budget`'s ``cores``), saying so in its line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .cards import (CARDS, DEFAULT_CARD, FLOOR_ASSUMPTION, MEASURED_CARD_MODEL, PASS_FLOOR_S, STEP_FLOOR_S,
                    CoreCheck, card_scale, card_spec, free_cores, target_card)

__all__ = ["Work", "Budget", "time_per_call", "format_duration", "format_flops", "training_flops", "FlopEstimate",
           "H100_FP32_PEAK", "SUSTAINED_FRACTION", "GPU_THROUGHPUT", "GPU_ASSUMPTION", "MEASURED_CARD",
           "MEASURED_STEPS", "measured_throughput", "measured_assumption", "MemoryPlan", "host_memory_gib",
           "process_memory_bytes", "CARDS", "DEFAULT_CARD", "MEASURED_CARD_MODEL", "card_spec", "target_card",
           "card_scale", "step_bound", "STEP_FLOOR_S", "PASS_FLOOR_S", "FLOOR_ASSUMPTION", "CoreCheck", "free_cores"]

#: FP32 peak of one NVIDIA H100 SXM without tensor cores, FLOP/s (NVIDIA's H100 datasheet: 67 TFLOPS FP32)
H100_FP32_PEAK = 67e12

#: the fraction of that peak fp32 training of small convnets is assumed to sustain: conservative for
#: batch 128 at 64 px (kernel launches, batch norm, pooling, the optimiser and memory-bound layers such
#: as EfficientNet's depthwise convolutions do few FLOPs for their time); no tensor cores, no TF32
SUSTAINED_FRACTION = 0.25

#: the sustained FLOP/s a one-GPU estimate divides by (16.75 TFLOP/s)
GPU_THROUGHPUT = H100_FP32_PEAK * SUSTAINED_FRACTION

#: the assumption, said with every one-GPU estimate
GPU_ASSUMPTION = (f"{SUSTAINED_FRACTION:.0%} of an H100's {H100_FP32_PEAK / 1e12:.0f} TFLOP/s FP32 peak, "
                  f"{GPU_THROUGHPUT / 1e12:.2f} TFLOP/s sustained".replace("%", " %"))


#: where :data:`MEASURED_STEPS` were timed
MEASURED_CARD = "one NVIDIA H200 (torch 2.11.0+cu130, CUDA 13.0; benchmarks/gpu_check.py, 2026-11-27)"

#: SGD training steps of ``clkit.models.cnn`` backbones timed by ``benchmarks/gpu_check.py`` on
#: :data:`MEASURED_CARD` (the median of 5 steps after 2 warm-ups, CUDA synchronised; fp32 under
#: PyTorch's defaults, which let cuDNN use TF32): ``{backbone: (image size, batch, classes, seconds)}``;
#: docs/generated/gpu-check.md holds the run. Against :data:`GPU_THROUGHPUT` the large convolutions ran
#: 1.3-5x faster and the small or depthwise ones 3.7-14x slower, so these replace the assumption for
#: the backbones they cover.
MEASURED_STEPS = {
    "wide_vgg9": (64, 128, 60, 4.8e-3),
    "wide_vgg9_bn": (64, 128, 60, 6.9e-3),
    "efficientnet_b1": (64, 128, 60, 31.0e-3),
    "resnet34_bn": (64, 128, 60, 10.8e-3),
    "resnet32": (32, 128, 6, 11.6e-3),
}


def step_bound(throughput: float | None) -> str:
    """``"memory"`` or ``"compute"``: how a step that sustained ``throughput`` FLOP/s scales across cards.

    A step sustaining less than :data:`GPU_THROUGHPUT` (a quarter of the FP32 peak) spends its time
    moving memory or launching kernels, not multiplying: it is taken as memory-bound (EfficientNet-B1 at
    1.2 TFLOP/s, ResNet-32 at 32 px at 4.5); one at or above it as compute-bound (Wide-VGG9-BN at 60,
    ResNet34-BN at 21). The assumed throughput itself (``None``) is compute-bound by construction.

    Examples
    --------
    >>> step_bound(1.2e12), step_bound(60e12), step_bound(None)
    ('memory', 'compute', 'compute')
    """
    return "memory" if throughput is not None and throughput < GPU_THROUGHPUT else "compute"


def measured_throughput(backbone: str) -> float | None:
    """The FLOP/s a measured training step of ``backbone`` sustained on :data:`MEASURED_CARD`.

    :func:`training_flops` of the backbone at the measured size and batch (3 channels, counted on
    ``meta``) divided by the measured seconds (:data:`MEASURED_STEPS`); ``None`` for a backbone
    never measured. The throughput of other sizes and batches differs (small batches and images
    keep a GPU less busy): a budget applies it as the best figure at hand and says so.

    Examples
    --------
    >>> round(measured_throughput("wide_vgg9_bn") / 1e12)        # 413 GFLOP in 6.9 ms
    60
    >>> measured_throughput("mlp") is None
    True
    """
    if backbone not in MEASURED_STEPS:
        return None
    return _measured_throughput(backbone)


def measured_assumption(backbone: str) -> str:
    """The sentence a budget says with :func:`measured_throughput`.

    Examples
    --------
    >>> measured_assumption("resnet32")[:60]
    'the 4.5 TFLOP/s of a resnet32 training step (batch 128, 32x3'
    """
    size, batch, _, seconds = MEASURED_STEPS[backbone]
    return (f"the {measured_throughput(backbone) / 1e12:.1f} TFLOP/s of a {backbone} training step (batch {batch}, "
            f"{size}x{size}, {seconds * 1e3:.1f} ms) measured on {MEASURED_CARD}")


_THROUGHPUT_CACHE: dict = {}


def _measured_throughput(backbone: str) -> float:
    if backbone not in _THROUGHPUT_CACHE:
        import torch

        from ._seed import torch_seeded
        from .models.cnn import make_backbone

        size, batch, classes, seconds = MEASURED_STEPS[backbone]
        with torch_seeded(0):          # the initial weights draw from a forked generator, not the global one
            model = make_backbone(backbone, 3, classes, size)
        _THROUGHPUT_CACHE[backbone] = training_flops(model, torch.zeros(batch, 3, size, size))["step"] / seconds
    return _THROUGHPUT_CACHE[backbone]

def format_duration(seconds: float) -> str:
    """A duration for people: ``"42 s"``, ``"3 min 5 s"``, ``"2 h 14 min"``, ``"3.4 days"``.

    Examples
    --------
    >>> format_duration(42.4), format_duration(185), format_duration(8040), format_duration(3.4 * 86400)
    ('42 s', '3 min 5 s', '2 h 14 min', '3.4 days')
    """
    if not np.isfinite(seconds):
        return "unknown"
    s = int(round(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 1 else f"{seconds:.2g} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    if s < 2 * 86400:
        return f"{s // 3600} h {(s % 3600) // 60} min"
    return f"{seconds / 86400:.1f} days"


def time_per_call(fn, *, device=None, warmup: int = 2, repeats: int = 5, max_seconds: float = 10.0) -> float:
    """Seconds per call of ``fn()``: the median of up to ``repeats`` timed calls after ``warmup`` calls.

    On CUDA the device is synchronised around every timed call (kernels run asynchronously).
    Timing stops early once ``max_seconds`` have been spent, keeping at least one timed call.

    Examples
    --------
    >>> t = time_per_call(lambda: sum(range(1000)), warmup=1, repeats=3)
    >>> 0 < t < 1
    True
    """
    import torch

    sync = (lambda: torch.cuda.synchronize(device)) if (
        device is not None and torch.device(str(device)).type == "cuda") else (lambda: None)
    start = time.perf_counter()
    for _ in range(warmup):
        fn()
        if time.perf_counter() - start > max_seconds / 2:
            break
    times = []
    for _ in range(max(repeats, 1)):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - start > max_seconds:
            break
    return float(np.median(times))


def _conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed,
                        _output_padding, _groups, output_mask, out_shape=None, **kwargs) -> int:
    """FLOPs of a convolution's backward: each gradient computed (input, weight) costs what the forward
    convolution costs. torch's own formula leaves ``groups`` out of the weight gradient, so it counts a
    depthwise convolution's (EfficientNet's) ``channels`` times over; this one is exact for any groups."""
    from torch.utils.flop_counter import conv_flop_count

    forward = conv_flop_count(list(x_shape), list(w_shape), list(grad_out_shape), transposed)
    return forward * (int(bool(output_mask[0])) + int(bool(output_mask[1])))


def format_flops(flops: float) -> str:
    """A FLOP count for people, in powers of 1000.

    Examples
    --------
    >>> format_flops(413e9), format_flops(2.5e18), format_flops(120)
    ('413 GFLOP', '2.5 EFLOP', '120 FLOP')
    """
    for unit, size in (("EFLOP", 1e18), ("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6),
                       ("kFLOP", 1e3)):
        if flops >= size:
            return f"{flops / size:.3g} {unit}"
    return f"{flops:.3g} FLOP"


def training_flops(model, x, y=None, *, loss=None) -> dict:
    """FLOPs of one training step of ``model`` on the batch ``x``: forward, backward and their sum.

    Counted by :class:`torch.utils.flop_counter.FlopCounterMode` on a copy of the real model on
    the ``meta`` device (shapes only: nothing is computed, so a large model at a large batch is
    counted in a fraction of a second), with the convolution backward counted exactly for grouped
    and depthwise convolutions (torch's formula overcounts them). A multiply-add is 2 FLOPs;
    matrix products and convolutions are counted, element-wise work (activations, batch norm,
    pooling, the loss, the optimiser's update) is not -- a few per cent of a convnet's step. The
    input ``x`` needs no gradient, as in training, so the first layer computes no input gradient
    (a step is then a little under three forward passes).

    Parameters
    ----------
    model : torch.nn.Module
        In training mode, as a step runs it.
    x : torch.Tensor
        A batch of inputs (its shape and dtype are used, not its values).
    y : torch.Tensor, optional
        Class labels (default: zeros); the loss is cross-entropy unless ``loss(output, y)`` is given.

    Returns
    -------
    dict
        ``forward``, ``backward``, ``step`` (FLOPs for the whole batch) and ``rows`` (its size).

    Examples
    --------
    A linear layer of ``in`` inputs and ``out`` outputs on ``N`` rows: ``2 N in out`` FLOPs forward;
    backward, the weight gradient costs as much again, and the input gradient once more when the
    input needs one (in a deeper network: every layer but the first), so 3x with backward.

    >>> import torch
    >>> N, i, o = 8, 5, 3
    >>> f = training_flops(torch.nn.Linear(i, o), torch.zeros(N, i))
    >>> f["forward"] == 2 * N * i * o, f["backward"] == 2 * N * i * o
    (True, True)
    >>> net = torch.nn.Sequential(torch.nn.Linear(i, 4), torch.nn.ReLU(), torch.nn.Linear(4, o))
    >>> f = training_flops(net, torch.zeros(N, i))
    >>> f["forward"] == 2 * N * (i * 4 + 4 * o), f["backward"] == 2 * N * (i * 4 + 2 * 4 * o)
    (True, True)
    """
    import copy

    import torch
    import torch.nn.functional as F
    from torch.utils.flop_counter import FlopCounterMode

    aten = torch.ops.aten
    meta = copy.deepcopy(model).to("meta")
    meta.train(model.training)
    xm = torch.empty(x.shape, dtype=x.dtype, device="meta")
    rows = int(x.shape[0])
    ym = (torch.zeros(rows, dtype=torch.long, device="meta") if y is None
          else torch.empty(y.shape, dtype=y.dtype, device="meta"))
    mapping = {aten.convolution_backward: _conv_backward_flop}
    with FlopCounterMode(display=False, custom_mapping=mapping) as fwd:
        out = meta(xm)
        value = (loss or F.cross_entropy)(out, ym)
    with FlopCounterMode(display=False, custom_mapping=mapping) as bwd:
        value.backward()
    forward, backward = int(fwd.get_total_flops()), int(bwd.get_total_flops())
    return {"forward": forward, "backward": backward, "step": forward + backward, "rows": rows}


@dataclass(frozen=True)
class FlopEstimate:
    """The time a run's work would take on one GPU, **estimated from its FLOPs, not measured**.

    The FLOP time is ``flops / throughput``, scaled from the card the throughput belongs to
    (``source_card``) to the card priced for (``card``) by :func:`card_scale`. It is then held to the
    floor of ``steps`` training steps and ``passes`` forward passes (:data:`STEP_FLOOR_S`,
    :data:`PASS_FLOOR_S`, assumed): ``seconds = max(FLOP time, steps x step_floor + passes x
    pass_floor)``. Taking the larger of the two totals rather than of each step is exact when the
    steps are alike and low otherwise (a sum of maxima is at least the maximum of the sums).

    Attributes
    ----------
    flops : float
        The run's floating-point operations (e.g. training rows x :func:`training_flops` per row).
    throughput : float
        Sustained FLOP/s on ``source_card`` (default :data:`GPU_THROUGHPUT`, a quarter of an H100's FP32 peak).
    assumption : str
        The throughput's source, said with the estimate.
    detail : str
        How ``flops`` was counted.
    card : str
        The card priced for (:func:`target_card`; default :data:`DEFAULT_CARD`).
    source_card : str
        The card ``throughput`` was measured (or assumed) on: a :data:`CARDS` key or a CUDA name.
    bound : str
        ``"compute"`` or ``"memory"`` (:func:`step_bound`): how the time scales across cards.
    steps, passes : int
        Training steps and forward passes the floor applies to (0: no floor).
    step_floor, pass_floor : float
        Seconds each, at least.

    Examples
    --------
    >>> e = FlopEstimate(GPU_THROUGHPUT * 7200, detail="one step: 413 GFLOP")
    >>> e.seconds, e.record()["measured"]
    (7200.0, False)
    >>> print(e.text())
    **On one GPU: about 2 h 0 min, estimated from FLOPs, not measured** (card: H100 SXM; 121 PFLOP: one step: 413 GFLOP; at 25 % of an H100's 67 TFLOP/s FP32 peak, 16.75 TFLOP/s sustained; `python benchmarks/gpu_check.py` measures the step).

    The floor: 26,064 steps of a few kFLOP each take 26 s, not the 0.14 s their FLOPs give.

    >>> e = FlopEstimate(GPU_THROUGHPUT * 0.14, steps=26064)
    >>> round(e.flop_seconds, 2), round(e.seconds, 3), e.floored
    (0.14, 26.064, True)

    A memory-bound step measured on the H200, priced for the H100 SXM, takes 4.8 / 3.35 times as long:

    >>> e = FlopEstimate(1.2e12 * 100, throughput=1.2e12, source_card="H200", bound="memory")
    >>> round(e.seconds, 1)
    143.3
    """

    flops: float
    throughput: float = GPU_THROUGHPUT
    assumption: str = GPU_ASSUMPTION
    detail: str = ""
    card: str = DEFAULT_CARD
    source_card: str = DEFAULT_CARD
    bound: str = "compute"
    steps: int = 0
    passes: int = 0
    step_floor: float = STEP_FLOOR_S
    pass_floor: float = PASS_FLOOR_S

    def __post_init__(self):
        if self.bound not in ("compute", "memory"):
            raise ValueError(f"bound: {self.bound!r} is not a step's bound; use 'compute' or 'memory'")

    @property
    def scale(self) -> float:
        """The factor from ``source_card`` to ``card`` (1 where it cannot scale)."""
        f, _ = card_scale(self.source_card, self.card, self.bound)
        return 1.0 if f is None else f

    @property
    def flop_seconds(self) -> float:
        """The FLOPs over the throughput, scaled to :attr:`card`."""
        return self.flops / self.throughput * self.scale

    @property
    def floor_seconds(self) -> float:
        """``steps x step_floor + passes x pass_floor``."""
        return self.steps * self.step_floor + self.passes * self.pass_floor

    @property
    def floored(self) -> bool:
        """Whether the floor, not the FLOPs, sets the time."""
        return self.floor_seconds > self.flop_seconds

    @property
    def seconds(self) -> float:
        return max(self.flop_seconds, self.floor_seconds)

    def _card_note(self) -> str:
        f, why = card_scale(self.source_card, self.card, self.bound)
        return "" if f == 1.0 else f"; {why}"

    def _floor_note(self) -> str:
        if not self.floored:
            return ""
        return (f"; the floor sets it: {self.steps:,} steps and {self.passes:,} forward passes at "
                f"{FLOOR_ASSUMPTION.removeprefix('a floor of ')}, where the FLOPs alone give "
                f"{format_duration(self.flop_seconds)}")

    def text(self) -> str:
        """One Markdown sentence, labelled as an estimate from FLOPs, naming the card."""
        detail = f": {self.detail}" if self.detail else ""
        card = self.card if card_spec(self.card) is None else card_spec(self.card)
        return (f"**On one GPU: about {format_duration(self.seconds)}, estimated from FLOPs, not measured** "
                f"(card: {card}; {format_flops(self.flops)}{detail}; at {self.assumption}{self._card_note()}"
                f"{self._floor_note()}; `python benchmarks/gpu_check.py` measures the step).")

    def record(self) -> dict:
        """For ``results.json``: ``measured`` is False."""
        return {"flops": self.flops, "throughput": self.throughput, "assumption": self.assumption,
                "detail": self.detail, "estimated_seconds": self.seconds, "measured": False,
                "card": self.card, "source_card": self.source_card, "bound": self.bound, "card_scale": self.scale,
                "flop_seconds": self.flop_seconds, "steps": self.steps, "passes": self.passes,
                "floor_seconds": self.floor_seconds, "floored": self.floored,
                "floor": FLOOR_ASSUMPTION if (self.steps or self.passes) else None}


@dataclass(frozen=True)
class Work:
    """One kind of work in a run: how many units and the timed seconds of one.

    Attributes
    ----------
    name : str
        e.g. ``"training steps"``, ``"evaluation passes"``.
    count : int
    seconds_each : float
    calibration : str
        What was timed, e.g. ``"5 steps of WideVGG9 (batch 128, 64x64) with naive"``.
    """

    name: str
    count: int
    seconds_each: float
    calibration: str = ""

    @property
    def seconds(self) -> float:
        return self.count * self.seconds_each


@dataclass
class Budget:
    """The work a run will do and its estimated time on its device.

    Parameters
    ----------
    notebook : str
    device : str
        Where the run computes (``RunDevice.describe()`` or a name).
    trainings : int
        Models trained (learner x setting x seed ...).
    work : list of Work
    parallel : int
        Processes sharing the work (the estimate divides by it).
    detail : str
        How the trainings are counted, e.g. ``"14 strategies x 2 orders x 6 seeds"``.
    leaves_out : str
        What the estimate does not count (said in the text).
    gpu : FlopEstimate, optional
        The same work on one GPU, estimated from FLOPs.
    cores : CoreCheck, optional
        The cores free to a CPU run (:func:`free_cores`): the estimate divides by no more workers than
        are free, and the text says what it found. ``None``: the workers are taken as given (a GPU run,
        or one process).
    note : str
        A sentence said after the estimate (e.g. the split grid of a set too long for one machine).

    Examples
    --------
    >>> b = Budget("04_curriculum", "cpu", 168, [Work("training steps", 10000, 0.004, "5 steps")], parallel=2,
    ...            detail="14 strategies x 2 orders x 6 seeds")
    >>> b.seconds
    20.0
    >>> print(b.text())
    **Budget:** 168 trainings (14 strategies x 2 orders x 6 seeds): 10,000 training steps at 4.0 ms each (5 steps); about 20 s on cpu with 2 worker processes. An estimate from timed steps; loading, figures and verdicts are not in it.
    """

    notebook: str
    device: str
    trainings: int
    work: list = field(default_factory=list)
    parallel: int = 1
    detail: str = ""
    leaves_out: str = "loading, figures and verdicts"
    gpu: FlopEstimate | None = None
    cores: CoreCheck | None = None
    note: str = ""

    @property
    def dividing(self) -> int:
        """The workers the estimate divides by: ``parallel``, at most the free cores (:attr:`cores`)."""
        n = max(self.parallel, 1)
        return min(n, self.cores.free) if self.cores is not None else n

    @property
    def seconds(self) -> float:
        return sum(w.seconds for w in self.work) / self.dividing

    def text(self) -> str:
        """One Markdown paragraph: the counts, the timed unit costs and the estimate."""
        what = f" ({self.detail})" if self.detail else ""
        parts = [f"{w.count:,} {w.name} at {_ms(w.seconds_each)} each" + (f" ({w.calibration})" if w.calibration else "")
                 for w in self.work]
        workers = f" with {self.parallel} worker processes" if self.parallel > 1 else ""
        if self.parallel > 1 and self.cores is not None:
            workers += f" ({self.cores.text(self.parallel)})"
        return (f"**Budget:** {self.trainings:,} trainings{what}: {'; '.join(parts)}; about "
                f"{format_duration(self.seconds)} on {self.device}{workers}. An estimate from timed steps"
                + (f"; {self.leaves_out} are not in it." if self.leaves_out else ".")
                + (f" {self.note}" if self.note else "")
                + (f"\n\n{self.gpu.text()}" if self.gpu is not None else ""))

    def record(self) -> dict:
        """For ``results.json``: counts, unit costs and the estimate in seconds."""
        return {"device": self.device, "trainings": self.trainings, "detail": self.detail, "parallel": self.parallel,
                **({"cores": {**self.cores.record(), "divides_by": self.dividing}} if self.cores is not None else {}),
                "work": [{"name": w.name, "count": w.count, "seconds_each": w.seconds_each,
                          "calibration": w.calibration} for w in self.work],
                "estimated_seconds": self.seconds, **({"note": self.note} if self.note else {}),
                **({"gpu_estimate": self.gpu.record()} if self.gpu is not None else {})}


def _ms(seconds: float) -> str:
    """A unit cost: two significant digits below a millisecond (a cost per row is often microseconds).

    Examples
    --------
    >>> _ms(1.77e-05), _ms(0.004), _ms(2.2)
    ('0.018 ms', '4.0 ms', '2.20 s')
    """
    if seconds < 1e-3:
        return f"{seconds * 1e3:.2g} ms"
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def host_memory_gib() -> float | None:
    """This machine's memory in GiB, whatever device a run trains on: the physical memory, or the
    container's limit (cgroup v2 ``memory.max`` / v1 ``memory.limit_in_bytes``) when that is smaller;
    ``None`` when neither can be read.

    Examples
    --------
    >>> m = host_memory_gib()
    >>> m is None or m > 0
    True
    """
    import os

    sizes = []
    try:
        sizes.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = open(path).read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2 ** 60:
            sizes.append(int(text))
    return round(min(sizes) / 2 ** 30, 2) if sizes else None


def process_memory_bytes() -> int:
    """The resident memory of this process now, in bytes (0 where it cannot be read).

    Examples
    --------
    >>> process_memory_bytes() > 0
    True
    """
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:   # noqa: BLE001 - psutil missing or refused: the plan says 0 for it
        return 0


@dataclass(frozen=True)
class MemoryPlan:
    """The host memory a run will hold, item by item, checked against the machine before it starts.

    Attributes
    ----------
    items : tuple of (str, int)
        What is held and its bytes (the process as it stands, the data, the windows, ...).
    parameter : str
        What to change when the plan does not fit, named in the error (e.g. ``"stride"``).
    advice : str
        How to change it, said with the parameter.

    Examples
    --------
    >>> p = MemoryPlan((("process", 2 * 2 ** 30), ("windows", 6 * 2 ** 30)), "stride", "raise it")
    >>> p.gib
    8.0
    >>> p.check(16.0) is p
    True
    >>> p.check(4.0)
    Traceback (most recent call last):
    ...
    ValueError: stride: the run plans 8 GiB of host memory (process 2 GiB, windows 6 GiB), more than this machine's 4 GiB; raise it
    """

    items: tuple
    parameter: str = ""
    advice: str = ""

    @property
    def bytes(self) -> int:
        return int(sum(b for _, b in self.items))

    @property
    def gib(self) -> float:
        return self.bytes / 2 ** 30

    def describe(self) -> str:
        """``8 GiB (process 2 GiB, windows 6 GiB)``."""
        return f"{_gib(self.bytes)} ({', '.join(f'{n} {_gib(b)}' for n, b in self.items)})"

    def check(self, memory_gib: float | None = None) -> "MemoryPlan":
        """Refuse (``ValueError`` naming :attr:`parameter`) a plan over ``memory_gib`` (default: this machine's,
        :func:`host_memory_gib`); ``self`` when it fits or the machine's memory is unknown."""
        have = host_memory_gib() if memory_gib is None else float(memory_gib)
        if have is not None and self.bytes > have * 2 ** 30:
            items = ", ".join(f"{n} {_gib(b)}" for n, b in self.items)
            raise ValueError(f"{self.parameter}: the run plans {_gib(self.bytes)} of host memory ({items}), more than "
                             f"this machine's {have:g} GiB; {self.advice}")
        return self

    def record(self) -> dict:
        return {"bytes": self.bytes, "items": {n: int(b) for n, b in self.items}, "parameter": self.parameter}


def _gib(b: int) -> str:
    return f"{b / 2 ** 30:.3g} GiB"
