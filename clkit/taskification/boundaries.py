"""Temporal taskifications: ordered task boundaries over one stream, and their neighbourhood.

A taskification (Eq. 1 of the taskification paper) is an ordered partition
:math:`\\tau = (t_0, \\dots, t_K)`, :math:`t_0 < t_1 < \\dots < t_K`, whose task
intervals are :math:`I_k = [t_{k-1}, t_k)`. Here :math:`t_0` may be larger than 0
and :math:`t_K` smaller than the stream length: the analysed span is
``[t_0, t_K)`` (a shifted split drops the first ``offset`` steps, and a trailing
remainder shorter than one window is not a task). All positions are in stream
steps; :func:`days_to_steps` converts days at a sampling interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import check_int, check_real

__all__ = ["Taskification", "fixed_windows", "days_to_steps", "perturb_boundaries", "check_delta"]


def days_to_steps(days: float, interval_minutes: float = 10.0) -> int:
    """Number of stream steps in ``days`` at one sample every ``interval_minutes``.

    Examples
    --------
    >>> days_to_steps(9)          # 9 days at 10 minutes
    1296
    >>> days_to_steps(0.5, interval_minutes=60)
    12
    """
    days = check_real("days", days, low=0)
    interval_minutes = check_real("interval_minutes", interval_minutes, low=0, low_open=True)
    steps = days * 24 * 60 / interval_minutes
    if abs(steps - round(steps)) > 1e-9:
        raise ValueError(f"days={days} is not a whole number of {interval_minutes}-minute steps ({steps})")
    return int(round(steps))


@dataclass(frozen=True)
class Taskification:
    """Validated task boundaries ``t_0 < t_1 < ... < t_K`` in stream steps.

    Parameters
    ----------
    boundaries : array_like of int, shape (num_tasks + 1,)
        Strictly increasing, ``>= 0``; task ``k`` is ``[boundaries[k], boundaries[k+1])``.
    length : int, optional
        Stream length ``T``; when given, ``boundaries[-1] <= length`` is checked.

    Examples
    --------
    >>> tau = Taskification([0, 3, 7, 10])
    >>> tau.num_tasks, tau.lengths.tolist()
    (3, [3, 4, 3])
    >>> Taskification([0, 5, 5])
    Traceback (most recent call last):
    ...
    ValueError: boundaries must be strictly increasing (every task non-empty), got [0, 5, 5]
    """

    boundaries: np.ndarray
    length: int | None = None

    def __post_init__(self):
        b = np.asarray(self.boundaries)
        if b.ndim != 1 or b.size < 2:
            raise ValueError(f"boundaries must be a 1-D sequence of at least 2 positions, got shape {b.shape}")
        if not np.issubdtype(b.dtype, np.integer):
            if not np.all(np.isfinite(b)) or not np.all(b == np.round(b)):
                raise ValueError(f"boundaries must be integer stream positions, got {b.tolist()}")
            b = b.astype(np.int64)
        b = b.astype(np.int64)
        if b[0] < 0:
            raise ValueError(f"boundaries must be >= 0, got {b.tolist()}")
        if np.any(np.diff(b) <= 0):
            raise ValueError(f"boundaries must be strictly increasing (every task non-empty), got {b.tolist()}")
        if self.length is not None:
            length = check_int("length", self.length, low=1)
            if b[-1] > length:
                raise ValueError(f"boundaries end at {int(b[-1])}, beyond the stream length {length}")
        b.setflags(write=False)
        object.__setattr__(self, "boundaries", b)

    @property
    def num_tasks(self) -> int:
        """Number of tasks ``K``."""
        return int(self.boundaries.size - 1)

    @property
    def lengths(self) -> np.ndarray:
        """Task lengths in steps, shape (num_tasks,)."""
        return np.diff(self.boundaries)

    @property
    def span(self) -> tuple[int, int]:
        """The analysed span ``(t_0, t_K)``."""
        return int(self.boundaries[0]), int(self.boundaries[-1])

    def slices(self) -> list[slice]:
        """One ``slice`` per task, for indexing the stream."""
        b = self.boundaries
        return [slice(int(b[k]), int(b[k + 1])) for k in range(self.num_tasks)]

    def task_ids(self) -> np.ndarray:
        """Task index of every step of the span, shape (t_K - t_0,)."""
        return np.repeat(np.arange(self.num_tasks), self.lengths)


def fixed_windows(length: int, window: int, offset: int = 0) -> Taskification:
    """Fixed-length windows over a stream: boundaries ``offset + k * window``.

    Parameters
    ----------
    length : int
        Stream length ``T`` in steps.
    window : int
        Task length in steps (e.g. ``days_to_steps(9)``).
    offset : int
        Steps skipped at the start (the paper's shifted split uses two days).
        The remainder after the last whole window is not a task.

    Returns
    -------
    Taskification
        ``K = (length - offset) // window`` tasks.

    Examples
    --------
    >>> fixed_windows(10, 3).boundaries.tolist()
    [0, 3, 6, 9]
    >>> fixed_windows(10, 3, offset=2).boundaries.tolist()
    [2, 5, 8]
    >>> fixed_windows(10, 11)
    Traceback (most recent call last):
    ...
    ValueError: window must be <= the stream length after offset (10 steps), got 11
    """
    length = check_int("length", length, low=1)
    window = check_int("window", window, low=1)
    offset = check_int("offset", offset, low=0)
    if offset >= length:
        raise ValueError(f"offset must be < the stream length {length}, got {offset}")
    if window > length - offset:
        raise ValueError(f"window must be <= the stream length after offset ({length - offset} steps), got {window}")
    num_tasks = (length - offset) // window
    return Taskification(offset + window * np.arange(num_tasks + 1), length=length)


def check_delta(taskification: Taskification, delta: int) -> int:
    """Check that moving every internal boundary by up to ``delta`` keeps all tasks non-empty.

    Two neighbouring internal boundaries may move towards each other, so an
    interior task needs more than ``2 * delta`` steps and the first and last
    task more than ``delta``.

    Examples
    --------
    >>> check_delta(Taskification([0, 10, 20, 30]), 4)
    4
    >>> check_delta(Taskification([0, 10, 20, 30]), 5)
    Traceback (most recent call last):
    ...
    ValueError: delta=5 is so large that tasks can vanish: the shortest interior task has 10 steps, so delta must be < 5.0
    """
    delta = check_int("delta", delta, low=0)
    lengths = taskification.lengths
    if taskification.num_tasks < 2:
        return delta
    ends = min(lengths[0], lengths[-1])
    if delta >= ends:
        raise ValueError(f"delta={delta} is so large that tasks can vanish: the first/last task has {ends} steps, "
                         f"so delta must be < {ends}")
    if taskification.num_tasks > 2:
        inner = lengths[1:-1].min()
        if 2 * delta >= inner:
            raise ValueError(f"delta={delta} is so large that tasks can vanish: the shortest interior task has "
                             f"{inner} steps, so delta must be < {inner / 2}")
    return delta


def perturb_boundaries(taskification: Taskification, delta: int, num_samples: int, seed: int = 0) -> np.ndarray:
    """Draw taskifications from the boundary neighbourhood :math:`N_\\delta(\\tau)`.

    Each internal boundary :math:`t_1, \\dots, t_{K-1}` moves by an integer drawn
    uniformly from ``[-delta, delta]`` (independently); :math:`t_0` and :math:`t_K`
    stay. :func:`check_delta` guarantees every draw is a valid taskification.

    Parameters
    ----------
    taskification : Taskification
    delta : int
        Largest move in steps (the paper uses one day).
    num_samples : int
    seed : int

    Returns
    -------
    ndarray of int64, shape (num_samples, num_tasks + 1)

    Examples
    --------
    >>> tau = Taskification([0, 10, 20, 30])
    >>> B = perturb_boundaries(tau, 2, 50, seed=0)
    >>> B.shape, bool((B[:, [0, -1]] == [0, 30]).all()), int(abs(B - tau.boundaries).max()) <= 2
    ((50, 4), True, True)
    """
    if not isinstance(taskification, Taskification):
        raise TypeError(f"taskification must be a Taskification, got {type(taskification).__name__}")
    delta = check_delta(taskification, delta)
    num_samples = check_int("num_samples", num_samples, low=1)
    rng = np.random.default_rng(check_int("seed", seed))
    moves = np.zeros((num_samples, taskification.num_tasks + 1), dtype=np.int64)
    moves[:, 1:-1] = rng.integers(-delta, delta + 1, size=(num_samples, taskification.num_tasks - 1))
    return taskification.boundaries[None, :] + moves
