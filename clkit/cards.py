"""The GPU cards a budget prices for, the floor of a step, and the CPU cores free to a run.

Split from :mod:`clkit.budget` (which re-exports every name here): the published specifications of
NVIDIA's cards (:data:`CARDS`) and how a step timed on one scales to another (:func:`card_scale`),
the assumed floor of a GPU step (:data:`STEP_FLOOR_S`, :data:`PASS_FLOOR_S`), and the cores a CPU
run's worker processes can have (:func:`free_cores`). See :mod:`clkit.budget`'s docstring.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CARDS", "DEFAULT_CARD", "MEASURED_CARD_MODEL", "card_spec", "target_card", "card_scale", "STEP_FLOOR_S",
           "PASS_FLOOR_S", "FLOOR_ASSUMPTION", "CoreCheck", "free_cores"]


#: the model of :data:`clkit.budget.MEASURED_CARD` (where the measured steps were timed), a key of :data:`CARDS`
MEASURED_CARD_MODEL = "H200"

#: the card a one-GPU line prices for when the run is not on a CUDA card itself: the H100 the project's
#: goal names ("runnable on one H100"), in its SXM form
DEFAULT_CARD = "H100 SXM"

#: published specifications of NVIDIA data-centre cards: ``{model: (memory bandwidth B/s, FP32 peak FLOP/s
#: without tensor cores, source)}``. The figures are the vendor's datasheets' (boost clocks, dense):
#: NVIDIA H100 Tensor Core GPU datasheet (SXM 3.35 TB/s, PCIe 2 TB/s, NVL 3.9 TB/s; FP32 67 / 51 / 60
#: TFLOPS), NVIDIA H200 Tensor Core GPU datasheet (SXM 4.8 TB/s, 67 TFLOPS; NVL 4.8 TB/s, 60 TFLOPS),
#: NVIDIA A100 Tensor Core GPU datasheet (80GB SXM 2,039 GB/s, 80GB PCIe 1,935 GB/s, 40GB 1,555 GB/s;
#: FP32 19.5 TFLOPS), NVIDIA L40S datasheet (864 GB/s, 91.6 TFLOPS), NVIDIA L4 datasheet (300 GB/s,
#: 30.3 TFLOPS), NVIDIA A10 datasheet (600 GB/s, 31.2 TFLOPS), NVIDIA V100 datasheet (SXM2 900 GB/s,
#: 15.7 TFLOPS) and the NVIDIA Ada GPU architecture whitepaper (GeForce RTX 4090: 1,008 GB/s, 82.6 TFLOPS)
CARDS = {
    "H100 SXM": (3.35e12, 67e12, "NVIDIA H100 Tensor Core GPU datasheet"),
    "H100 PCIe": (2.0e12, 51e12, "NVIDIA H100 Tensor Core GPU datasheet"),
    "H100 NVL": (3.9e12, 60e12, "NVIDIA H100 Tensor Core GPU datasheet"),
    "H200": (4.8e12, 67e12, "NVIDIA H200 Tensor Core GPU datasheet"),
    "H200 NVL": (4.8e12, 60e12, "NVIDIA H200 Tensor Core GPU datasheet"),
    "A100 80GB SXM": (2.039e12, 19.5e12, "NVIDIA A100 Tensor Core GPU datasheet"),
    "A100 80GB PCIe": (1.935e12, 19.5e12, "NVIDIA A100 Tensor Core GPU datasheet"),
    "A100 40GB": (1.555e12, 19.5e12, "NVIDIA A100 Tensor Core GPU datasheet"),
    "L40S": (0.864e12, 91.6e12, "NVIDIA L40S datasheet"),
    "L4": (0.300e12, 30.3e12, "NVIDIA L4 datasheet"),
    "A10": (0.600e12, 31.2e12, "NVIDIA A10 datasheet"),
    "V100 SXM2": (0.900e12, 15.7e12, "NVIDIA V100 datasheet"),
    "RTX 4090": (1.008e12, 82.6e12, "NVIDIA Ada GPU architecture whitepaper"),
}

#: ``torch.cuda.get_device_name`` patterns (upper case, in order) -> :data:`CARDS` key
_CARD_NAMES = (
    (r"H200.*NVL", "H200 NVL"), (r"H200", "H200"),
    (r"H100.*NVL", "H100 NVL"), (r"H100.*PCIE", "H100 PCIe"), (r"H100", "H100 SXM"),
    (r"A100.*80.*PCIE|A100.*PCIE.*80", "A100 80GB PCIe"), (r"A100.*80", "A100 80GB SXM"), (r"A100", "A100 40GB"),
    (r"L40S", "L40S"), (r"\bL4\b", "L4"), (r"\bA10\b", "A10"), (r"V100.*SXM2", "V100 SXM2"),
    (r"RTX 4090", "RTX 4090"),
)


def card_spec(name: str | None) -> str | None:
    """The :data:`CARDS` model of a card named ``name`` (a key, or CUDA's device name); ``None`` if unknown.

    Examples
    --------
    >>> card_spec("NVIDIA H100 80GB HBM3"), card_spec("NVIDIA H200"), card_spec("NVIDIA A100-SXM4-80GB")
    ('H100 SXM', 'H200', 'A100 80GB SXM')
    >>> card_spec("H100 PCIe"), card_spec("Some Future GPU") is None
    ('H100 PCIe', True)
    """
    import re

    if not name:
        return None
    if name in CARDS:
        return name
    upper = str(name).upper()
    for pattern, model in _CARD_NAMES:
        if re.search(pattern, upper):
            return model
    return None


def target_card(device=None, info: dict | None = None) -> str:
    """The card a one-GPU line prices for: the run's CUDA card (its name as CUDA gives it) where the run is
    on one, else :data:`DEFAULT_CARD`.

    ``device`` is a ``RunDevice``, a ``torch.device`` or a name; ``info`` a device record with ``name``.

    Examples
    --------
    >>> target_card("cpu"), target_card("cuda:0", {"name": "NVIDIA A100-SXM4-80GB"})
    ('H100 SXM', 'NVIDIA A100-SXM4-80GB')
    """
    kind = getattr(getattr(device, "device", device), "type", None) or str(device or "cpu").split(":")[0]
    info = info if info is not None else getattr(device, "info", None) or {}
    if kind == "cuda" and info.get("name"):
        return str(info["name"])
    return DEFAULT_CARD


def card_scale(source: str, card: str, bound: str) -> tuple[float | None, str]:
    """``(factor, sentence)``: how a step timed (or assumed) on ``source`` scales to ``card``.

    A memory-bound step scales by the ratio of memory bandwidths (source / card), a compute-bound one by
    the ratio of FP32 peaks (:data:`CARDS`). The factor is 1 on the same card; ``None`` (no scaling)
    when either card is not in :data:`CARDS`, and the sentence says the figure is the source card's.

    Examples
    --------
    An EfficientNet step timed on the H200 (4.8 TB/s), priced for an H100 SXM (3.35 TB/s):

    >>> f, why = card_scale("H200", "H100 SXM", "memory")
    >>> round(f, 3), why
    (1.433, 'scaled from the H200 to the H100 SXM by memory bandwidth (4.8 / 3.35 TB/s, x1.43), the step being memory-bound')
    >>> card_scale("H200", "NVIDIA H100 80GB HBM3", "compute")[0]      # same FP32 peak, 67 TFLOPS
    1.0
    >>> card_scale("H200", "Some Future GPU", "memory")
    (None, 'not scaled to Some Future GPU (its bandwidth and peak are not in clkit.budget.CARDS): the H200 figure')
    """
    src, dst = card_spec(source), card_spec(card)
    if src is None or dst is None:
        whose = "its" if dst is None else f"the {source}'s"
        return None, f"not scaled to {card} ({whose} bandwidth and peak are not in clkit.budget.CARDS): the {source} figure"
    if src == dst:
        return 1.0, f"on the {dst} itself"
    (bw_s, peak_s, _), (bw_d, peak_d, _) = CARDS[src], CARDS[dst]
    if bound == "memory":
        f = bw_s / bw_d
        return f, (f"scaled from the {src} to the {dst} by memory bandwidth ({bw_s / 1e12:.3g} / {bw_d / 1e12:.3g} "
                   f"TB/s, x{f:.3g}), the step being memory-bound")
    f = peak_s / peak_d
    return f, (f"scaled from the {src} to the {dst} by FP32 peak ({peak_s / 1e12:.3g} / {peak_d / 1e12:.3g} TFLOPS, "
               f"x{f:.3g}), the step being compute-bound")


#: the least time one training step (forward, backward, optimiser update) of any model takes on a GPU,
#: s. **Assumed, not measured**: eager PyTorch launches every kernel from Python, a few to 20 us each,
#: and a small network's step launches 50-150 of them (forward, loss, backward, the update, zeroing the
#: gradients) besides the strategy's own bookkeeping; 1 ms is the round figure of that count, and close
#: to the bare PyTorch step of clkit's MLP on the CPU (0.99 ms, docs/generated/bench-strategies.md), where
#: dispatch dominates too. No GPU has timed an empty step here (``benchmarks/gpu_check.py`` times full steps)
STEP_FLOOR_S = 1.0e-3

#: the least time one forward pass without gradients takes on a GPU, s (assumed, not measured: about a
#: third of a step's kernels, as :data:`STEP_FLOOR_S`)
PASS_FLOOR_S = 0.3e-3

#: said with every floor that applies
FLOOR_ASSUMPTION = (f"a floor of {STEP_FLOOR_S * 1e3:g} ms per training step and {PASS_FLOOR_S * 1e3:g} ms per "
                    "forward pass (kernel launches and the optimiser's update; assumed, not measured)")


@dataclass(frozen=True)
class CoreCheck:
    """The CPU cores a run's worker processes can have: those this process may run on, less other programs' load.

    Attributes
    ----------
    allowed : int
        Cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` where that is missing).
    load : float or None
        The one-minute load average (``os.getloadavg``), ``None`` where it cannot be read.

    Examples
    --------
    Two cores, a load of 1.9 of which about 1 is this process (it is running while it asks): 0.9 of
    another program's, so one core free.

    >>> CoreCheck(2, 1.9).free, CoreCheck(2, 0.6).free, CoreCheck(16, None).free
    (1, 2, 16)
    >>> CoreCheck(2, 1.9).text(2)
    'only 1 of 2 cores is free, at a load average of 1.9 with this process counted as 1: the estimate divides by 1, not 2'
    """

    allowed: int
    load: float | None

    @property
    def free(self) -> int:
        """``allowed`` less the load of other programs (the load less this process's 1), rounded, at least 1."""
        if self.load is None:
            return max(1, self.allowed)
        others = max(0.0, self.load - 1.0)
        return int(max(1, min(self.allowed, np.floor(self.allowed - others + 0.5))))

    def text(self, workers: int) -> str:
        """What the check found, said with the budget."""
        if self.load is None:
            return f"{self.allowed} cores allowed; the load average could not be read, so all are assumed free"
        if workers <= self.free:
            return f"{self.free} of {self.allowed} cores free, load average {self.load:.1f}"
        return (f"only {self.free} of {self.allowed} cores {'is' if self.free == 1 else 'are'} free, at a load "
                f"average of {self.load:.1f} with this process counted as 1: the estimate divides by {self.free}, "
                f"not {workers}")

    def record(self) -> dict:
        return {"allowed": self.allowed, "load_average": self.load, "free": self.free}


def free_cores() -> CoreCheck:
    """The cores free to this run now (:class:`CoreCheck`): ``os.sched_getaffinity`` and ``os.getloadavg``.

    Examples
    --------
    >>> c = free_cores()
    >>> 1 <= c.free <= c.allowed
    True
    """
    import os

    try:
        allowed = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed = os.cpu_count() or 1
    try:
        load = float(os.getloadavg()[0])
    except (AttributeError, OSError):
        load = None
    return CoreCheck(int(allowed), load)

