"""A budget before every long run: how much work a run will do and how long it should take here.

Before it trains, every notebook counts its work -- how many models it trains and how many
optimisation steps and evaluation passes that makes -- and times a few real steps of its own
model on its own device (:func:`time_per_call`: warm-up calls first, CUDA synchronised, the
median of the timed calls). :class:`Budget` multiplies the two, divides by the worker
processes that share the work, prints one paragraph and goes into ``results.json``. It is an
estimate from a few steps: data loading, figures and verdicts are not in it, and the first
steps of a run can be slower than the rest (caches, autotuning).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Work", "Budget", "time_per_call", "format_duration"]


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

    @property
    def seconds(self) -> float:
        return sum(w.seconds for w in self.work) / max(self.parallel, 1)

    def text(self) -> str:
        """One Markdown paragraph: the counts, the timed unit costs and the estimate."""
        what = f" ({self.detail})" if self.detail else ""
        parts = [f"{w.count:,} {w.name} at {_ms(w.seconds_each)} each" + (f" ({w.calibration})" if w.calibration else "")
                 for w in self.work]
        workers = f" with {self.parallel} worker processes" if self.parallel > 1 else ""
        return (f"**Budget:** {self.trainings:,} trainings{what}: {'; '.join(parts)}; about "
                f"{format_duration(self.seconds)} on {self.device}{workers}. An estimate from timed steps"
                + (f"; {self.leaves_out} are not in it." if self.leaves_out else "."))

    def record(self) -> dict:
        """For ``results.json``: counts, unit costs and the estimate in seconds."""
        return {"device": self.device, "trainings": self.trainings, "detail": self.detail, "parallel": self.parallel,
                "work": [{"name": w.name, "count": w.count, "seconds_each": w.seconds_each,
                          "calibration": w.calibration} for w in self.work],
                "estimated_seconds": self.seconds}


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
