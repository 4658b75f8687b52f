"""Plasticity and stability profiles, the profile distance (Eq. 2) and BPS.

For a taskification :math:`\\tau` with task discrepancies :math:`D_{ij} = d(P_i, P_j)`:

- plasticity profile :math:`\\Pi_{pl}^\\tau` -- the empirical distribution of the
  adjacent discrepancies :math:`D_{k,k+1}`, :math:`k = 1..K-1`;
- stability profile :math:`\\Pi_{st}^\\tau` -- the empirical distribution of
  :math:`D_{ij}` over pairs with :math:`j - i \\ge \\ell_{min}`;
- profile distance :math:`D_{prof}(\\tau, \\sigma) = [\\alpha D_{pl}^2 + \\beta D_{st}^2]^{1/2}`,
  where :math:`D_{pl}` and :math:`D_{st}` are the exact 1-D first-order Wasserstein
  distances between the two taskifications' plasticity and stability profiles
  (the paper leaves this distribution distance open; we use W1, like ``d``);
- :math:`BPS(\\tau; \\delta)` -- the mean of :math:`D_{prof}(\\tau, \\sigma)` over
  ``num_samples`` draws :math:`\\sigma` from the boundary neighbourhood
  :math:`N_\\delta(\\tau)` (:func:`~clkit.taskification.boundaries.perturb_boundaries`).
  :class:`BPSReport` also keeps the means of :math:`D_{pl}` and :math:`D_{st}`, the
  "plasticity" and "stability" rows of the paper's Tables 3-4.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import check_int, check_matrix, check_real
from ..distances import wasserstein_1d
from .boundaries import Taskification, perturb_boundaries
from .discrepancy import _SortedStream, _quantile_distances, distance_matrix, prepare_stream, use_exact

__all__ = ["Profile", "plasticity_profile", "stability_profile", "taskification_profile", "profile_components",
           "profile_distance", "BPSReport", "bps_report", "bps", "bps_over_series", "check_weights", "null_stream"]


def _check_l_min(l_min) -> int:
    l_min = check_int("l_min", l_min)
    if l_min < 2:
        raise ValueError(f"l_min must be an integer >= 2 (1 would count adjacent tasks as long-range), got {l_min}")
    return l_min


def check_weights(alpha, beta) -> tuple[float, float]:
    """Check the profile-distance weights: both ``> 0``.

    Examples
    --------
    >>> check_weights(0.5, 0.5)
    (0.5, 0.5)
    >>> check_weights(0.5, 0)
    Traceback (most recent call last):
    ...
    ValueError: beta must be a number > 0, got 0.0
    """
    return (check_real("alpha", alpha, low=0, low_open=True), check_real("beta", beta, low=0, low_open=True))


def plasticity_profile(dist) -> np.ndarray:
    """Adjacent-task discrepancies :math:`D_{k,k+1}`, shape (num_tasks - 1,).

    Examples
    --------
    >>> plasticity_profile([[0, 1, 2], [1, 0, 3], [2, 3, 0]]).tolist()
    [1.0, 3.0]
    """
    D = check_matrix("dist", dist, square=True, allow_nan=False)
    return np.diagonal(D, offset=1).copy()


def stability_profile(dist, l_min: int = 2) -> np.ndarray:
    """Long-range discrepancies :math:`D_{ij}`, :math:`j - i \\ge \\ell_{min}`, in row-major order.

    Parameters
    ----------
    dist : array_like, shape (num_tasks, num_tasks)
    l_min : int
        Smallest task lag counted (``>= 2``: immediate neighbours are excluded).

    Returns
    -------
    ndarray, shape ((K - l_min) (K - l_min + 1) / 2,)

    Examples
    --------
    >>> D = np.arange(16.0).reshape(4, 4)
    >>> stability_profile(D, l_min=2).tolist()    # pairs (0,2), (0,3), (1,3)
    [2.0, 3.0, 7.0]
    """
    D = check_matrix("dist", dist, square=True, allow_nan=False)
    l_min = _check_l_min(l_min)
    K = D.shape[0]
    if K - 1 < l_min:
        raise ValueError(f"l_min={l_min} leaves no task pairs: the taskification has only {K} tasks "
                         f"(l_min must be <= num_tasks - 1 = {K - 1})")
    i, j = np.triu_indices(K, k=l_min)
    return D[i, j]


@dataclass(frozen=True)
class Profile:
    """The plasticity and stability profiles of one taskification (1-D sample arrays)."""

    plasticity: np.ndarray
    stability: np.ndarray


def taskification_profile(stream, taskification: Taskification, l_min: int = 2, **distance_kw) -> Profile:
    """Profiles of ``taskification`` on ``stream`` (``distance_kw`` go to :func:`distance_matrix`).

    Examples
    --------
    >>> x = np.r_[np.zeros(4), np.ones(4), np.zeros(4)]
    >>> p = taskification_profile(x, Taskification([0, 4, 8, 12]), standardize=False)
    >>> p.plasticity.tolist(), p.stability.tolist()
    ([1.0, 1.0], [0.0])
    """
    D = distance_matrix(stream, taskification, **distance_kw)
    return Profile(plasticity_profile(D), stability_profile(D, l_min))


def profile_components(tau: Profile, sigma: Profile) -> tuple[float, float]:
    """``(D_pl, D_st)``: exact 1-D W1 between the plasticity and between the stability profiles.

    Examples
    --------
    >>> profile_components(Profile(np.array([0.0, 1.0]), np.array([2.0])),
    ...                    Profile(np.array([0.0, 3.0]), np.array([2.5])))
    (1.0, 0.5)
    """
    for name, p in (("tau", tau), ("sigma", sigma)):
        if not isinstance(p, Profile):
            raise TypeError(f"{name} must be a Profile, got {type(p).__name__}")
    return wasserstein_1d(tau.plasticity, sigma.plasticity), wasserstein_1d(tau.stability, sigma.stability)


def profile_distance(tau: Profile, sigma: Profile, alpha: float = 0.5, beta: float = 0.5) -> float:
    """Profile distance of Eq. 2: :math:`[\\alpha D_{pl}^2 + \\beta D_{st}^2]^{1/2}`.

    Works for taskifications with different numbers of tasks (the profiles are
    compared as distributions).

    Examples
    --------
    >>> a = Profile(np.array([0.0, 1.0]), np.array([2.0]))
    >>> b = Profile(np.array([0.0, 3.0]), np.array([2.5]))
    >>> round(profile_distance(a, b), 6)       # sqrt(0.5 * 1^2 + 0.5 * 0.5^2)
    0.790569
    """
    alpha, beta = check_weights(alpha, beta)
    d_pl, d_st = profile_components(tau, sigma)
    return float(np.sqrt(alpha * d_pl ** 2 + beta * d_st ** 2))


def _w1_equal_size(a: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Exact W1 between one sample ``a`` (n,) and each row of ``B`` (S, n): equal sizes, sorted matching."""
    return np.abs(np.sort(B, axis=1) - np.sort(a)[None, :]).mean(axis=1)


@dataclass(frozen=True)
class BPSReport:
    """Boundary-Profile Sensitivity of one taskification.

    Attributes
    ----------
    bps : float
        Mean :math:`D_{prof}` over the sampled neighbourhood.
    plasticity, stability : float
        Mean :math:`D_{pl}` and mean :math:`D_{st}` over the same samples.
    d_prof, d_pl, d_st : ndarray, shape (num_samples,)
        Per-sample values.
    boundaries : ndarray, shape (num_samples, num_tasks + 1)
        The sampled taskifications.
    """

    bps: float
    plasticity: float
    stability: float
    d_prof: np.ndarray
    d_pl: np.ndarray
    d_st: np.ndarray
    boundaries: np.ndarray


def bps_report(stream, taskification: Taskification, delta: int, num_samples: int = 100, seed: int = 0, *,
               l_min: int = 2, alpha: float = 0.5, beta: float = 0.5, method: str = "quantile",
               num_quantiles: int = 64, num_projections: int = 32, standardize: bool = True,
               exact_below: int | None = None) -> BPSReport:
    """BPS with its plasticity / stability components (see module docstring).

    The stream is sorted once; every sampled taskification reuses that sort for
    its task quantiles, and since all samples have the same number of tasks their
    profiles have equal sizes, so :math:`D_{pl}, D_{st}` are computed for all
    samples at once. ``method="exact"`` computes exact W1 for every sample (slow
    for long tasks). The quantile and sliced forms switch to exact W1 when the
    shortest task of ``taskification`` has fewer than ``exact_below`` steps
    (default ``8 * num_quantiles``; see :mod:`~clkit.taskification.discrepancy`);
    the decision is taken once, so the taskification and all its perturbations use
    the same form.

    Parameters
    ----------
    stream : array_like, shape (T,) or (T, F)
    taskification : Taskification or array_like of int
        The taskification, or its boundaries ``(t_0, ..., t_K)``.
    delta : int
        Largest boundary move, in steps.
    num_samples : int
        Draws from :math:`N_\\delta(\\tau)`.
    seed : int
        Seeds the boundary draws (and the sliced directions).
    l_min, alpha, beta, method, num_quantiles, num_projections, standardize, exact_below
        As in :func:`stability_profile`, :func:`profile_distance` and
        :func:`~clkit.taskification.discrepancy.distance_matrix`.

    Returns
    -------
    BPSReport

    Examples
    --------
    >>> from clkit.taskification import changepoint_stream, fixed_windows
    >>> x = changepoint_stream(3000, t1=1200, t2=1260)        # a short regime at [1200, 1260]
    >>> near = bps_report(x, fixed_windows(3000, 300), delta=30)             # a boundary at 1200
    >>> far = bps_report(x, fixed_windows(3000, 300, offset=150), delta=30)  # regime mid-task
    >>> bool(near.bps > 1.5 * far.bps)
    True
    """
    if not isinstance(taskification, Taskification):
        if isinstance(taskification, (str, bytes)) or not hasattr(taskification, "__len__"):
            raise TypeError(f"taskification must be a Taskification or a sequence of boundaries, "
                            f"got {type(taskification).__name__}")
        taskification = Taskification(np.asarray(taskification), length=len(np.asarray(stream)))
    alpha, beta = check_weights(alpha, beta)
    l_min = _check_l_min(l_min)
    if taskification.num_tasks - 1 < l_min:
        raise ValueError(f"l_min={l_min} leaves no task pairs: the taskification has only "
                         f"{taskification.num_tasks} tasks (l_min must be <= num_tasks - 1)")
    B = perturb_boundaries(taskification, delta, num_samples, seed)
    x = prepare_stream(stream, taskification, standardize=standardize, method=method,
                       num_projections=num_projections, seed=seed)
    sorted_stream = _SortedStream(x)
    num_quantiles = check_int("num_quantiles", num_quantiles, low=1)
    if use_exact(taskification, method, num_quantiles, exact_below):
        dist = sorted_stream.exact_distances
    else:
        def dist(b):
            return _quantile_distances(sorted_stream.quantiles(b, num_quantiles))
    K = taskification.num_tasks
    iu, ju = np.triu_indices(K, k=l_min)
    D0 = dist(taskification.boundaries)
    pl0, st0 = np.diagonal(D0, offset=1), D0[iu, ju]
    Ds = np.stack([dist(b) for b in B])                                    # (S, K, K)
    d_pl = _w1_equal_size(pl0, np.diagonal(Ds, offset=1, axis1=1, axis2=2))
    d_st = _w1_equal_size(st0, Ds[:, iu, ju])
    d_prof = np.sqrt(alpha * d_pl ** 2 + beta * d_st ** 2)
    return BPSReport(float(d_prof.mean()), float(d_pl.mean()), float(d_st.mean()), d_prof, d_pl, d_st, B)


def bps(stream, taskification: Taskification, delta: int, num_samples: int = 100, seed: int = 0,
        **kwargs) -> float:
    """Boundary-Profile Sensitivity :math:`BPS(\\tau;\\delta)`: mean :math:`D_{prof}` over :math:`N_\\delta(\\tau)`.

    Same parameters as :func:`bps_report`; returns only the BPS value.

    Examples
    --------
    >>> x = np.tile([0.0, 0.0, 1.0, 1.0], 10)        # period-4 stream, 4-step tasks
    >>> bps(x, np.arange(0, 41, 4), delta=0, num_samples=3)
    0.0
    """
    return bps_report(stream, taskification, delta, num_samples, seed, **kwargs).bps


def bps_over_series(values, taskification: Taskification, delta: int, num_samples: int = 100, seed: int = 0, *,
                    n_jobs: int = 1, **kwargs) -> dict:
    """:func:`bps_report` for every series of ``values``; means and standard deviations over series.

    Each series gets its own independent neighbourhood draws (seed ``seed + s``).
    ``n_jobs > 1`` runs series in threads (NumPy's sorts release the GIL); the
    result does not depend on ``n_jobs``.

    Parameters
    ----------
    values : array_like, shape (num_series, T, F)
    taskification, delta, num_samples, seed, **kwargs
        As in :func:`bps_report`.
    n_jobs : int

    Returns
    -------
    dict
        ``bps``, ``plasticity``, ``stability``: arrays of shape (num_series,);
        ``<name>_mean`` and ``<name>_std`` (sample std, ``ddof=1``; 0 for one series).

    Examples
    --------
    >>> from clkit.taskification import fixed_windows
    >>> v = np.random.default_rng(0).normal(size=(3, 200, 2))
    >>> out = bps_over_series(v, fixed_windows(200, 40), delta=5, num_samples=10, n_jobs=2)
    >>> out["bps"].shape, bool(out["bps_mean"] > 0)
    ((3,), True)
    """
    arr = np.asarray(values)
    if arr.ndim != 3:
        raise ValueError(f"values must have shape (num_series, T, F), got {arr.shape}")
    n_jobs = check_int("n_jobs", n_jobs, low=1)
    seed = check_int("seed", seed)

    def one(s):
        return bps_report(arr[s], taskification, delta, num_samples, seed + s, **kwargs)

    if n_jobs == 1:
        reports = [one(s) for s in range(arr.shape[0])]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(n_jobs) as pool:
            reports = list(pool.map(one, range(arr.shape[0])))
    out = {}
    for name in ("bps", "plasticity", "stability"):
        v = np.array([getattr(r, name) for r in reports])
        out[name] = v
        out[f"{name}_mean"] = float(v.mean())
        out[f"{name}_std"] = float(v.std(ddof=1)) if v.size > 1 else 0.0
    return out


def null_stream(values, seed: int = 0) -> np.ndarray:
    """A structureless twin of ``values``: every series' time steps in a random order.

    Each series keeps its marginal distribution (the same multiset of feature
    vectors) but loses all temporal structure: its steps are exchangeable, i.e.
    i.i.d. draws without replacement from its own empirical distribution. BPS on this
    stream is the value that sampling noise alone produces for a taskification of
    that length and ``delta`` -- and it is not zero and not flat: with ``delta`` fixed,
    shorter tasks give noisier task distributions and a higher null BPS. A BPS is
    informative through its ratio to the null, not its rank alone.

    Parameters
    ----------
    values : array_like, shape (T,), (T, F) or (num_series, T, F)
        Time is the first axis of a single series, the second of a stack.
    seed : int

    Returns
    -------
    ndarray, same shape, permuted along time (independently per series)

    Examples
    --------
    >>> x = np.arange(10.0)
    >>> z = null_stream(x, seed=0)
    >>> sorted(z.tolist()) == x.tolist(), bool((z != x).any())
    (True, True)
    """
    arr = np.asarray(values)
    if arr.ndim not in (1, 2, 3) or arr.size == 0:
        raise ValueError(f"values must have shape (T,), (T, F) or (num_series, T, F), got {arr.shape}")
    rng = np.random.default_rng(check_int("seed", seed))
    if arr.ndim < 3:
        return arr[rng.permutation(arr.shape[0])]
    return np.stack([a[rng.permutation(a.shape[0])] for a in arr])
