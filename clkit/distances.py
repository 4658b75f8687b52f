"""Distances between distributions given by samples or histograms.

Shared by the taskification notebook (Wasserstein distances between the data of
two tasks, and between two empirical profiles) and the EDGE notebook.

- :func:`wasserstein_1d` -- exact first-order Wasserstein distance between two
  1-D empirical distributions, column by column (POT).
- :func:`jensen_shannon` -- Jensen-Shannon divergence between histograms (scipy).
- :func:`sliced_wasserstein` -- Monte-Carlo sliced W1 between multivariate samples (POT).
"""

from __future__ import annotations

import numpy as np

from ._validate import check_int

__all__ = ["wasserstein_1d", "jensen_shannon", "sliced_wasserstein", "histogram", "gaussian_histogram"]


def _samples(name, a):
    arr = np.asarray(a, dtype=float)
    if arr.ndim not in (1, 2) or arr.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty array of shape (n,) or (n, d), got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return arr


def wasserstein_1d(u, v, u_weights=None, v_weights=None):
    """Exact first-order Wasserstein distance between 1-D empirical distributions.

    :math:`W_1(P, Q) = \\int_0^1 |F_P^{-1}(q) - F_Q^{-1}(q)|\\,dq`.

    Parameters
    ----------
    u : array_like, shape (n,) or (n, d)
        Samples of the first distribution; with ``d`` columns, ``d`` independent
        1-D distances are computed (one per feature).
    v : array_like, shape (m,) or (m, d)
        Samples of the second distribution (``m`` may differ from ``n``).
    u_weights, v_weights : array_like, shape (n,) / (m,), optional
        Sample weights (uniform when omitted).

    Returns
    -------
    float or ndarray of shape (d,)

    Examples
    --------
    >>> wasserstein_1d([0.0, 1.0], [2.0, 3.0])
    2.0
    >>> wasserstein_1d([[0.0, 0.0], [1.0, 0.0]], [[0.0, 5.0]]).tolist()
    [0.5, 5.0]
    """
    import ot

    u = _samples("u", u)
    v = _samples("v", v)
    if u.ndim != v.ndim or (u.ndim == 2 and u.shape[1] != v.shape[1]):
        raise ValueError(f"u and v must have the same number of columns, got shapes {u.shape} and {v.shape}")
    uw = None if u_weights is None else np.asarray(u_weights, dtype=float)
    vw = None if v_weights is None else np.asarray(v_weights, dtype=float)
    d = ot.wasserstein_1d(u, v, uw, vw, p=1)
    return float(d) if u.ndim == 1 else np.asarray(d, dtype=float)


def jensen_shannon(p, q, base: float = 2.0) -> float:
    """Jensen-Shannon divergence between two histograms (normalised to sum 1).

    Parameters
    ----------
    p, q : array_like, shape (k,)
        Non-negative weights over the same ``k`` bins.
    base : float
        Logarithm base (2 gives a value in ``[0, 1]``).

    Examples
    --------
    >>> jensen_shannon([1, 0], [0, 1])
    1.0
    >>> jensen_shannon([1, 1], [1, 1])
    0.0
    """
    from scipy.spatial.distance import jensenshannon

    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if p.shape != q.shape or p.ndim != 1:
        raise ValueError(f"p and q must be 1-D histograms of equal length, got shapes {p.shape} and {q.shape}")
    if (p < 0).any() or (q < 0).any() or p.sum() <= 0 or q.sum() <= 0:
        raise ValueError("p and q must be non-negative with a positive sum")
    return float(jensenshannon(p, q, base=base) ** 2)


def sliced_wasserstein(x, y, num_projections: int = 50, seed: int = 0) -> float:
    """Sliced first-order Wasserstein distance between multivariate samples.

    The mean of :func:`wasserstein_1d` over ``num_projections`` random unit
    directions drawn with ``seed`` (POT's ``sliced_wasserstein_distance``, p=1).

    Parameters
    ----------
    x : array_like, shape (n, d)
    y : array_like, shape (m, d)
    num_projections : int
    seed : int

    Examples
    --------
    >>> x = np.zeros((10, 3)); y = np.zeros((10, 3))
    >>> sliced_wasserstein(x, y)
    0.0
    """
    import ot

    x = _samples("x", x)
    y = _samples("y", y)
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"x and y must be 2-D with equal columns, got shapes {x.shape} and {y.shape}")
    num_projections = check_int("num_projections", num_projections, low=1)
    proj = ot.sliced.get_random_projections(x.shape[1], num_projections, seed=np.random.RandomState(seed))
    return float(np.mean(wasserstein_1d(x @ proj, y @ proj)))


# --------------------------------------------------------------------------- histograms
# (appended for clkit.edge: discretising an empirical distribution and a Gaussian
# estimate on the same bins before a Jensen-Shannon divergence)

def histogram(values, bin_edges, tails: bool = True) -> np.ndarray:
    """Fraction of ``values`` per bin; with ``tails`` two open bins are added outside.

    Parameters
    ----------
    values : array_like, shape (n,)
    bin_edges : array_like, shape (k + 1,), increasing
    tails : bool
        Prepend ``(-inf, edges[0])`` and append ``[edges[-1], inf)`` as open bins
        (shape ``(k + 2,)``); the last finite bin is closed on the right.

    Examples
    --------
    >>> histogram([0.1, 0.2, 0.9], [0.0, 0.5, 1.0]).tolist()
    [0.0, 0.6666666666666666, 0.3333333333333333, 0.0]
    """
    v = _samples("values", values).ravel()
    e = np.asarray(bin_edges, dtype=float)
    if e.ndim != 1 or len(e) < 2 or not (np.diff(e) > 0).all():
        raise ValueError(f"bin_edges must be a strictly increasing 1-D array of >= 2 edges, got {e!r}")
    inner = np.histogram(v[(v >= e[0]) & (v <= e[-1])], bins=e)[0].astype(float)
    if tails:
        inner = np.concatenate([[(v < e[0]).sum()], inner, [(v > e[-1]).sum()]])
    return inner / len(v)


def gaussian_histogram(mean: float, std: float, bin_edges, tails: bool = True) -> np.ndarray:
    """Probability mass of ``N(mean, std^2)`` per bin (same bins as :func:`histogram`).

    ``std == 0`` is a point mass at ``mean``.

    Examples
    --------
    >>> gaussian_histogram(0.0, 1.0, [-1.0, 0.0, 1.0]).round(4).tolist()
    [0.1587, 0.3413, 0.3413, 0.1587]
    >>> gaussian_histogram(0.5, 0.0, [0.0, 1.0]).tolist()
    [0.0, 1.0, 0.0]
    """
    from scipy.stats import norm

    e = np.asarray(bin_edges, dtype=float)
    if e.ndim != 1 or len(e) < 2 or not (np.diff(e) > 0).all():
        raise ValueError(f"bin_edges must be a strictly increasing 1-D array of >= 2 edges, got {e!r}")
    if not np.isfinite(mean) or not np.isfinite(std) or std < 0:
        raise ValueError(f"mean must be finite and std finite and >= 0, got mean={mean!r}, std={std!r}")
    if std == 0:
        return histogram([mean], e, tails=tails)
    cdf = norm.cdf(e, loc=mean, scale=std)
    inner = np.diff(cdf)
    if tails:
        return np.concatenate([[cdf[0]], inner, [1.0 - cdf[-1]]])
    return inner / inner.sum()
