"""Synthetic streams of the paper's three case studies (Eqs. 3-5, Fig. 1).

Each generator takes ``seed`` and returns a 1-D stream of shape ``(length,)``.
The paper gives the equations but not their constants; the defaults below are
ours, chosen so that the structure is clear at a few thousand steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import check_int, check_real

__all__ = ["changepoint_stream", "transient_stream", "recurrence_stream", "CaseStudy", "case_studies"]


def _times(length, changepoints):
    length = check_int("length", length, low=2)
    for i, t in enumerate(changepoints):
        check_int(f"t{i + 1}", t, low=0, high=length - 1)
    return length


def changepoint_stream(length: int = 3000, t1: int = 1200, t2: int = 1260, mu1: float = 0.0, mu2: float = 3.0,
                       sigma: float = 0.3, seed: int = 0) -> np.ndarray:
    """Abrupt changepoints (Eq. 3): :math:`N(\\mu_2, \\sigma^2)` on ``[t1, t2]``, :math:`N(\\mu_1, \\sigma^2)` elsewhere.

    Examples
    --------
    >>> x = changepoint_stream(100, 40, 59, mu1=0.0, mu2=5.0, sigma=0.1)
    >>> round(float(x[40:60].mean())), round(float(x[:40].mean()))
    (5, 0)
    """
    length = _times(length, (t1, t2))
    if t2 < t1:
        raise ValueError(f"t2 must be >= t1={t1}, got {t2}")
    sigma = check_real("sigma", sigma, low=0, low_open=True)
    t = np.arange(length)
    mean = np.where((t >= t1) & (t <= t2), check_real("mu2", mu2), check_real("mu1", mu1))
    return mean + sigma * np.random.default_rng(check_int("seed", seed)).standard_normal(length)


def transient_stream(length: int = 3000, t1: int = 1000, t2: int = 2000, amplitude: float = 6.0, eta: float = 15.0,
                     noise: float = 0.3, period: float = 1500.0, seed: int = 0) -> np.ndarray:
    """Narrow transients (Eq. 4): :math:`g(t) + A e^{-(t-t_1)^2/2\\eta^2} + A e^{-(t-t_2)^2/2\\eta^2} + \\xi_t`.

    The smooth background is :math:`g(t) = \\sin(2\\pi t / \\text{period})` and
    :math:`\\xi_t \\sim N(0, \\text{noise}^2)`.

    Examples
    --------
    >>> x = transient_stream(3000, noise=0.0)
    >>> int(np.argmax(x)) in (1000, 2000)
    True
    """
    length = _times(length, (t1, t2))
    amplitude = check_real("amplitude", amplitude)
    eta = check_real("eta", eta, low=0, low_open=True)
    noise = check_real("noise", noise, low=0)
    period = check_real("period", period, low=0, low_open=True)
    t = np.arange(length, dtype=float)
    bumps = amplitude * (np.exp(-(t - t1) ** 2 / (2 * eta ** 2)) + np.exp(-(t - t2) ** 2 / (2 * eta ** 2)))
    xi = noise * np.random.default_rng(check_int("seed", seed)).standard_normal(length)
    return np.sin(2 * np.pi * t / period) + bumps + xi


def recurrence_stream(length: int = 3000, period: float = 200.0, noise: float = 0.1, seed: int = 0) -> np.ndarray:
    """Phase-sensitive recurrence (Eq. 5): :math:`\\sin(\\omega t) + \\xi_t`, :math:`\\omega = 2\\pi/\\text{period}`.

    Examples
    --------
    >>> x = recurrence_stream(400, period=200, noise=0.0)
    >>> round(float(x[50]), 6), round(float(x[150]), 6)
    (1.0, -1.0)
    """
    length = check_int("length", length, low=2)
    period = check_real("period", period, low=0, low_open=True)
    noise = check_real("noise", noise, low=0)
    t = np.arange(length, dtype=float)
    xi = noise * np.random.default_rng(check_int("seed", seed)).standard_normal(length)
    return np.sin(2 * np.pi * t / period) + xi


@dataclass(frozen=True)
class CaseStudy:
    """One case study: a stream, a fragile and a robust taskification of it, and the neighbourhood size."""

    name: str
    stream: np.ndarray
    near: object          # Taskification with a boundary at the structure (fragile)
    far: object           # Taskification whose boundaries avoid the structure (robust)
    delta: int
    structure: list       # positions of the structure (change points, peaks, phase marks)


def case_studies(length: int = 3000, seed: int = 0) -> dict:
    """The three case studies of Fig. 1 at stream length ``length``.

    - ``"changepoint"`` (Eq. 3): a short regime :math:`N(\mu_2, \sigma^2)` on
      ``[0.4 L, 0.42 L]``; tasks of ``L/10`` steps; *near* puts a boundary at
      :math:`t_1^\star`, *far* keeps the regime in the middle of a task.
    - ``"transient"`` (Eq. 4): peaks at ``L/3`` and ``2L/3``; tasks of ``L/6``;
      *near* has boundaries exactly on both peaks, *far* centres each peak in a task.
    - ``"recurrence"`` (Eq. 5): period ``L/15``, tasks of half a period; *near*
      puts the boundaries on the cycle's extremes (then every task is one full
      sweep from -1 to 1, all alike, and a small shift makes neighbouring tasks
      alternate), *far* puts them on the zero crossings (tasks alternate between the
      positive and the negative half-wave, and a small shift only moves values near 0).

    ``delta`` is a tenth of the task length in every case.

    Examples
    --------
    >>> cs = case_studies(3000)
    >>> sorted(cs), cs["transient"].near.boundaries[:3].tolist()
    (['changepoint', 'recurrence', 'transient'], [0, 500, 1000])
    """
    from .boundaries import fixed_windows

    L = check_int("length", length, low=300)
    seed = check_int("seed", seed)
    out = {}
    t1, t2 = int(0.4 * L), int(0.42 * L)
    w = L // 10
    out["changepoint"] = CaseStudy("changepoint", changepoint_stream(L, t1, t2, seed=seed),
                                   fixed_windows(L, w, t1 % w), fixed_windows(L, w, (t1 + (t2 - t1) // 2 + w // 2) % w),
                                   w // 10, [t1, t2])
    p1, p2 = L // 3, 2 * L // 3
    w = L // 6
    out["transient"] = CaseStudy("transient", transient_stream(L, p1, p2, eta=L / 200, period=L / 2, seed=seed),
                                 fixed_windows(L, w, p1 % w), fixed_windows(L, w, (p1 + w // 2) % w), w // 10, [p1, p2])
    period = L // 15
    w = period // 2
    out["recurrence"] = CaseStudy("recurrence", recurrence_stream(L, period, seed=seed),
                                  fixed_windows(L, w, period // 4), fixed_windows(L, w, 0), w // 10,
                                  list(range(period // 4, L, period)))
    return out
