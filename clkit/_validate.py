"""Argument checks shared by every module and every notebook's validation cell.

Each check raises ``ValueError`` or ``TypeError`` whose message names the
parameter, the offending value and what is allowed, so papermill shows a
readable error.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np

__all__ = [
    "check_seed",
    "check_fits",
    "available_memory",
    "MAX_SEED",
    "check_type",
    "check_int",
    "check_real",
    "check_choice",
    "check_choices",
    "check_probability",
    "check_matrix",
]


def check_type(name, value, types, allowed: str | None = None):
    """Raise ``TypeError`` unless ``value`` is an instance of ``types``.

    Examples
    --------
    >>> check_type("seed", 3, int)
    3
    >>> check_type("seed", "3", int)
    Traceback (most recent call last):
    ...
    TypeError: seed must be int, got str '3'
    """
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        if allowed is None:
            tt = types if isinstance(types, tuple) else (types,)
            allowed = " or ".join(t.__name__ for t in tt)
        raise TypeError(f"{name} must be {allowed}, got {type(value).__name__} {value!r}")
    return value


def check_int(name, value, *, low=None, high=None):
    """Check an integer (not bool) in ``[low, high]``; return it as ``int``.

    Examples
    --------
    >>> check_int("n", 2, low=1)
    2
    >>> check_int("n", 0, low=1)
    Traceback (most recent call last):
    ...
    ValueError: n must be an integer >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    _check_bounds(name, value, low, high, True, True, "an integer")
    return value


#: the largest seed a run takes: NumPy's legacy range and most frameworks'; torch.manual_seed takes
#: values below 2**64, and runs derive seeds by adding small offsets (seed + s), so this leaves room
MAX_SEED = 2**32 - 1


def check_seed(name, value):
    """Check a run's seed: an integer in ``[0, MAX_SEED]``; return it as ``int``.

    Examples
    --------
    >>> check_seed("seed", 7)
    7
    >>> check_seed("seed", 99999999999999999999)
    Traceback (most recent call last):
    ...
    ValueError: seed must be an integer in [0, 4294967295], got 99999999999999999999
    """
    return check_int(name, value, low=0, high=MAX_SEED)


def available_memory() -> int | None:
    """Bytes of memory free for this process now (Linux ``/proc/meminfo``'s ``MemAvailable``, else
    ``os.sysconf``), or ``None`` where the system does not say."""
    import os

    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(name, value, nbytes: float, what: str, *, fraction: float = 0.5, available=None):
    """Refuse ``name = value`` when the ``nbytes`` it needs exceed ``fraction`` of the free memory.

    Checked before anything is allocated, so a size that would exhaust a shared machine fails at
    once with one line naming the parameter, the need and what is free. ``available`` overrides
    :func:`available_memory` (tests); with neither, nothing is checked.

    Examples
    --------
    >>> check_fits("--batch-size", 10, 8e3, "the batches", available=2**30)
    >>> check_fits("--random", 10**9, 8e10, "the random orders", available=2**34)
    Traceback (most recent call last):
    ...
    ValueError: --random 1000000000 needs about 74.5 GiB for the random orders; 16.0 GiB is free (at most half is used)
    """
    free = available_memory() if available is None else available
    if free is not None and nbytes > fraction * free:
        share = "half" if fraction == 0.5 else f"{fraction:.0%}"
        raise ValueError(f"{name} {value} needs about {nbytes / 2**30:.1f} GiB for {what}; "
                         f"{free / 2**30:.1f} GiB is free (at most {share} is used)")


def check_real(name, value, *, low=None, high=None, low_open=False, high_open=False, finite=True):
    """Check a real number within bounds; return it as ``float``.

    Examples
    --------
    >>> check_real("delta", 0.5, low=0, high=1)
    0.5
    >>> check_real("delta", 1.5, low=0, high=1)
    Traceback (most recent call last):
    ...
    ValueError: delta must be a number in [0, 1], got 1.5
    >>> check_real("sigma", 0.0, low=0, low_open=True)
    Traceback (most recent call last):
    ...
    ValueError: sigma must be a number > 0, got 0.0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if finite and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    _check_bounds(name, value, low, high, not low_open, not high_open, "a number")
    return value


def _check_bounds(name, value, low, high, low_closed, high_closed, what):
    bad = False
    if low is not None and (value < low or (not low_closed and value == low)):
        bad = True
    if high is not None and (value > high or (not high_closed and value == high)):
        bad = True
    if not bad:
        return
    if low is not None and high is not None:
        rng = f"{'[' if low_closed else '('}{low}, {high}{']' if high_closed else ')'}"
        raise ValueError(f"{name} must be {what} in {rng}, got {value!r}")
    if low is not None:
        raise ValueError(f"{name} must be {what} {'>=' if low_closed else '>'} {low}, got {value!r}")
    raise ValueError(f"{name} must be {what} {'<=' if high_closed else '<'} {high}, got {value!r}")


def check_choice(name, value, choices: Iterable[str]):
    """Check that ``value`` is one of ``choices``.

    Examples
    --------
    >>> check_choice("dataset", "rainfall", ["synthetic", "rainfall"])
    'rainfall'
    >>> check_choice("dataset", "mnist", ["synthetic", "rainfall"])
    Traceback (most recent call last):
    ...
    ValueError: dataset must be one of ['synthetic', 'rainfall'], got 'mnist'
    """
    choices = list(choices)
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_choices(name, values, choices: Iterable[str], *, min_len=1):
    """Check a list of names, each one of ``choices``, without duplicates.

    Examples
    --------
    >>> check_choices("learners", ["naive", "ewc"], ["naive", "ewc", "si"])
    ['naive', 'ewc']
    >>> check_choices("learners", ["naive", "lwf"], ["naive", "ewc"])
    Traceback (most recent call last):
    ...
    ValueError: learners contains 'lwf'; allowed: ['naive', 'ewc']
    """
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a list of names, got {type(values).__name__} {values!r}")
    choices = list(choices)
    for v in values:
        if v not in choices:
            raise ValueError(f"{name} contains {v!r}; allowed: {choices}")
    if len(set(values)) != len(values):
        raise ValueError(f"{name} has duplicates: {list(values)!r}")
    if len(values) < min_len:
        raise ValueError(f"{name} must name at least {min_len} entries, got {list(values)!r}")
    return list(values)


def check_probability(name, value, *, open_high=False):
    """Check a number in ``[0, 1]`` (or ``[0, 1)`` with ``open_high``)."""
    return check_real(name, value, low=0, high=1, high_open=open_high)


def check_matrix(name, A, *, square=False, allow_nan=True):
    """Return ``A`` as a 2-D float array, checking shape and values.

    Examples
    --------
    >>> check_matrix("A", [[1, 2], [3, 4]], square=True).shape
    (2, 2)
    >>> check_matrix("A", [[1, 2, 3], [3, 4, 5]], square=True)
    Traceback (most recent call last):
    ...
    ValueError: A must be a square 2-D matrix, got shape (2, 3)
    """
    arr = np.asarray(A, dtype=float)
    if arr.ndim != 2 or (square and arr.shape[0] != arr.shape[1]):
        kind = "a square 2-D matrix" if square else "a 2-D matrix"
        raise ValueError(f"{name} must be {kind}, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if np.isinf(arr).any() or (not allow_nan and np.isnan(arr).any()):
        raise ValueError(f"{name} must contain only finite values{' or NaN' if allow_nan else ''}")
    return arr
