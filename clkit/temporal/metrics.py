"""The paper's metrics on a temporal accuracy matrix ``A`` (see :mod:`clkit.temporal`).

``transfer_ratio`` (Eq. 2), ``stability_horizon`` (Eq. 3), ``drift_horizon`` (Eq. 4-5),
``temporal_adaptation_score`` (Eq. 6), Wild-Time's ``id_accuracy`` / ``ood_accuracy``,
their per-learner summary (``summarize_learner``) and the forward view the paper reads
them from (``forward_view``).
"""

from __future__ import annotations

import warnings

import numpy as np

from .._validate import check_choice, check_int, check_matrix, check_real

__all__ = ["transfer_ratio", "stability_horizon", "drift_horizon", "temporal_adaptation_score", "id_accuracy",
           "ood_accuracy", "summarize_learner", "forward_view"]


def _accuracy_matrix(A):
    return check_matrix("A", A, square=True)


def _oracle(A, oracle):
    if oracle is None:
        return np.diag(A).copy()
    o = np.asarray(oracle, dtype=float)
    if o.shape != (A.shape[0],):
        raise ValueError(f"oracle must have shape ({A.shape[0]},) (one accuracy per period), got {o.shape}")
    return o


def _future(A, horizon):
    """Matrix F[t, h] = A[t, t + h] for h = 0..H (NaN beyond the stream)."""
    T = A.shape[0]
    H = T - 1 if horizon is None else check_int("horizon", horizon, low=1)
    t = np.arange(T)[:, None]
    h = np.arange(H + 1)[None, :]
    tau = t + h
    F = np.full((T, H + 1), np.nan)
    ok = tau < T
    F[ok] = A[np.broadcast_to(t, tau.shape)[ok], tau[ok]]
    return F, H


def transfer_ratio(A, oracle=None):
    """Temporal Transfer Ratio g(t, tau) = A(t, tau) / A(tau, tau), clipped to [0, 1].

    Parameters
    ----------
    A : array_like, shape (num_periods, num_periods)
        Accuracies in [0, 1]; NaN where not evaluated.
    oracle : array_like, shape (num_periods,), optional
        Oracle accuracy per target period (default: the diagonal of ``A``).

    Returns
    -------
    g : ndarray, shape (num_periods, num_periods)
        NaN where ``A`` is NaN. Where the oracle is 0 the model cannot be worse
        than the oracle, so ``g = 1``.

    Examples
    --------
    >>> A = [[0.8, 0.6, 0.9], [np.nan, 0.75, 0.3], [np.nan, np.nan, 0.6]]
    >>> transfer_ratio(A).round(2)
    array([[1. , 0.8, 1. ],
           [nan, 1. , 0.5],
           [nan, nan, 1. ]])
    """
    A = _accuracy_matrix(A)
    o = _oracle(A, oracle)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = A / o[None, :]
    g = np.where(np.isnan(A), np.nan, np.where(o[None, :] == 0, 1.0, g))
    return np.clip(g, 0.0, 1.0)


def stability_horizon(A, delta: float, oracle=None, horizon: int | None = None,
                      contiguous: bool = True, never_crossed: str = "available") -> np.ndarray:
    """Stability Horizon SH_delta(t) (Eq. 3): steps a model stays within delta of the oracle.

    Parameters
    ----------
    A : array_like, shape (num_periods, num_periods)
    delta : float in [0, 1]
        Tolerance: the model must keep at least ``delta`` of the oracle accuracy.
    oracle : array_like, shape (num_periods,), optional
    horizon : int, optional
        Largest ``h`` considered (default: all future periods).
    contiguous : bool
        ``True`` (default): the largest ``h`` such that ``g(t, t+k) >= delta`` for
        every evaluated ``k <= h`` -- the horizon ends at the first crossing below
        delta, as the paper's text and Fig. 2 describe ("crossing below delta marks
        the end of the Stability Horizon"). ``False``: Eq. 3 read literally,
        ``max{h >= 0 : g(t, t+h) >= delta}``, which lets a later recovery count.
    never_crossed : {"available", "horizon"}
        What a row reports when ``g`` never falls below ``delta`` within its
        observable window. ``"available"`` (default): the last evaluated step, i.e.
        SH is capped at the steps that exist (late rows are right-censored by the
        end of the stream). ``"horizon"``: ``H``, the maximum evaluation horizon,
        even when fewer than ``H`` future steps exist -- the convention the paper's
        FMoW results imply: Fine-Tuning's ``SH_t = [4, 6, 5, 5, 5, 5, 4, 4, 6, 6, 6]``
        lists 11 training years (Wild-Time's FMoW-Time trains on 2002-2012 and
        tests up to 2017) with ``H = 6``, yet the last training year, which has
        only 5 future years, reports 6. Read so, a never-crossed SH is "stable for
        the whole window" (like DH's sentinel), not a duration; averages over
        rows then mix durations and caps, which is why the default keeps the
        observable count.

    Returns
    -------
    sh : ndarray of float, shape (num_periods,)
        ``SH(t)`` in ``[0, H]``; with ``never_crossed="available"`` right-censored at
        the last evaluated step (a value equal to the number of available steps
        means "never crossed"). ``g(t, t)``
        is 1 whenever ``A(t, t)`` is the oracle, so ``SH >= 0``; if even ``h = 0``
        fails (external oracle), SH is 0 as well -- the model is never reliable.
        NaN when the row has no evaluated cell.

    Examples
    --------
    >>> A = [[0.9, 0.8, 0.3, 0.85], [np.nan, 0.9, 0.8, 0.7],
    ...      [np.nan, np.nan, 0.9, 0.9], [np.nan, np.nan, np.nan, 0.9]]
    >>> stability_horizon(A, delta=0.8).tolist()    # row 1 crosses at h=2 (0.7/0.9)
    [1.0, 1.0, 1.0, 0.0]
    >>> stability_horizon(A, delta=0.8, contiguous=False).tolist()  # row 0 recovers at h=3
    [3.0, 1.0, 1.0, 0.0]
    >>> stability_horizon(A, delta=0.8, never_crossed="horizon").tolist()  # rows 2, 3 never cross
    [1.0, 1.0, 3.0, 3.0]
    """
    A = _accuracy_matrix(A)
    delta = check_real("delta", delta, low=0, high=1)
    never_crossed = check_choice("never_crossed", never_crossed, ["available", "horizon"])
    g = transfer_ratio(A, oracle)
    G, H = _future(g, horizon)
    h = np.arange(H + 1, dtype=float)[None, :]
    evaluated = ~np.isnan(G)
    ok = evaluated & (G >= delta)
    if contiguous:
        bad = evaluated & (G < delta)
        # first failing step (H + 1 when none); keep the successes before it
        first_bad = np.where(bad.any(1), bad.argmax(1), H + 1)
        ok &= h < first_bad[:, None]
    sh = np.where(ok, h, -np.inf).max(1)
    sh = np.where(np.isfinite(sh), sh, 0.0)
    if never_crossed == "horizon":
        crossed = (evaluated & (G < delta)).any(1)
        sh = np.where(crossed, sh, float(H))
    return np.where(evaluated.any(1), sh, np.nan)


def drift_horizon(A, epsilon: float, lam: float, horizon: int | None = None) -> np.ndarray:
    """Drift Horizon DH_t (Eq. 4-5): when the accuracy change becomes significant.

    The cumulative statistic (a one-sided CUSUM on absolute deviations) is

    .. math:: S_0 = 0,\\quad S_h = \\max\\bigl(0,\\ S_{h-1} + |A(t, t+h) - A(t, t)| - \\epsilon\\bigr)

    and :math:`DH_t = \\min\\{h \\in [1, H] : S_h > \\lambda\\}`.

    Parameters
    ----------
    A : array_like, shape (num_periods, num_periods)
    epsilon : float >= 0
        Per-step tolerance that filters random fluctuations.
    lam : float >= 0
        Significance threshold lambda.
    horizon : int, optional
        H, the maximum evaluation horizon (default ``num_periods - 1``).

    Returns
    -------
    dh : ndarray of float, shape (num_periods,)
        ``DH_t`` in ``[1, H]``, or the paper's sentinel ``H + 1`` when the statistic
        never exceeds lambda within the observable window (also for late periods
        with fewer than H future steps: their missing steps are simply not
        observed). NaN cells leave ``S`` unchanged. NaN when ``A(t, t)`` is NaN.

    Examples
    --------
    >>> A = [[0.9, 0.85, 0.6, 0.5], [np.nan, 0.9, 0.88, 0.87],
    ...      [np.nan, np.nan, 0.9, 0.9], [np.nan, np.nan, np.nan, 0.9]]
    >>> drift_horizon(A, epsilon=0.02, lam=0.15)   # row 0: S = 0.03, 0.31 > 0.15 at h=2
    array([2., 4., 4., 4.])
    """
    A = _accuracy_matrix(A)
    epsilon = check_real("epsilon", epsilon, low=0)
    lam = check_real("lam", lam, low=0)
    F, H = _future(A, horizon)
    dev = np.abs(F[:, 1:] - F[:, :1]) - epsilon  # (T, H)
    dev = np.where(np.isnan(dev), 0.0, dev)       # not evaluated: S unchanged
    # S_h = max(0, S_{h-1} + d_h) has the closed form S_h = C_h - min(0, min_{k<=h} C_k)
    C = np.cumsum(dev, axis=1)
    S = C - np.minimum(0.0, np.minimum.accumulate(C, axis=1))
    crossed = S > lam
    dh = np.where(crossed.any(1), crossed.argmax(1) + 1.0, H + 1.0)
    return np.where(np.isnan(F[:, 0]), np.nan, dh)


def _future_window(A, n, partial):
    """Columns k = 1..n of the future matrix, with rows lacking n steps blanked if not partial."""
    F, _ = _future(A, n)
    W = F[:, 1:]
    if not partial:
        T = A.shape[0]
        short = (np.arange(T) + n) > T - 1
        W[short] = np.nan
    return W


def temporal_adaptation_score(A, n: int, oracle=None, partial: bool = True) -> np.ndarray:
    """Temporal Adaptation Score TAS_t (Eq. 6), clipped to [0, 1].

    .. math:: TAS_t = \\frac{\\frac1n\\sum_{k=1}^n A(t, t+k)}{\\frac1n\\sum_{k=1}^n A(t+k, t+k)}

    with the oracle accuracies in the denominator (default: the diagonal).

    Parameters
    ----------
    A : array_like, shape (num_periods, num_periods)
    n : int >= 1
        Number of future periods averaged.
    oracle : array_like, shape (num_periods,), optional
    partial : bool
        With fewer than ``n`` future periods available, average over those that
        exist (default) or return NaN (``False``). The last period has no future
        and always gives NaN. Pairs where either term is NaN are dropped from
        both averages. A zero oracle mean gives 1 (no lower accuracy is possible), said in a
        ``UserWarning`` naming the periods (an all-zero ``A`` is more often a broken run than a
        learner that adapts perfectly).

    Returns
    -------
    tas : ndarray, shape (num_periods,)

    Examples
    --------
    >>> A = [[0.8, 0.6, 0.3], [np.nan, 0.8, 0.4], [np.nan, np.nan, 0.5]]
    >>> temporal_adaptation_score(A, n=2).round(3)   # row 0: (0.6+0.3)/(0.8+0.5)
    array([0.692, 0.8  ,   nan])
    >>> temporal_adaptation_score(A, n=2, partial=False).round(3)
    array([0.692,   nan,   nan])
    """
    A = _accuracy_matrix(A)
    n = check_int("n", n, low=1)
    o = _oracle(A, oracle)
    W = _future_window(A, n, partial)
    T = A.shape[0]
    tau = np.arange(T)[:, None] + np.arange(1, n + 1)[None, :]
    O = np.where(tau < T, o[np.minimum(tau, T - 1)], np.nan)
    both = ~np.isnan(W) & ~np.isnan(O)
    num = np.where(both, W, 0.0).sum(1)
    den = np.where(both, O, 0.0).sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tas = np.where(den > 0, num / den, 1.0)
    zero = np.flatnonzero(both.any(1) & (den <= 0))
    if len(zero):
        warnings.warn(f"TAS is 1 by convention at period(s) {zero.tolist()}: their future oracle accuracies (up to "
                      f"{n}) "
                      "are all 0, so no lower accuracy is possible; zero accuracies are more often a broken "
                      "run (check A) than perfect adaptation", UserWarning, stacklevel=2)
    return np.where(both.any(1), np.clip(tas, 0.0, 1.0), np.nan)


def id_accuracy(A) -> np.ndarray:
    """In-distribution accuracy per period: the diagonal ``A[t, t]``, shape (num_periods,).

    Examples
    --------
    >>> id_accuracy([[0.9, 0.5], [np.nan, 0.8]])
    array([0.9, 0.8])
    """
    return np.diag(_accuracy_matrix(A)).copy()


def ood_accuracy(A, n: int | None = None, partial: bool = True) -> np.ndarray:
    """Out-of-distribution accuracy per training period: mean of ``A[t, t+k]``, k = 1..n.

    Parameters
    ----------
    A : array_like, shape (num_periods, num_periods)
    n : int, optional
        Future periods averaged (default: all that follow, as Wild-Time's
        "eval-fix" OOD average).
    partial : bool
        As in :func:`temporal_adaptation_score`.

    Returns
    -------
    ood : ndarray, shape (num_periods,)
        NaN for the last period (no future).

    Examples
    --------
    >>> ood_accuracy([[0.9, 0.5, 0.4], [np.nan, 0.8, 0.6], [np.nan, np.nan, 0.7]])
    array([0.45, 0.6 ,  nan])
    """
    A = _accuracy_matrix(A)
    n = A.shape[0] - 1 if n is None else check_int("n", n, low=1)
    if n < 1:
        return np.full(A.shape[0], np.nan)
    W = _future_window(A, n, partial)
    with warnings.catch_warnings():  # the last period's row is all NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(W, axis=1)


def summarize_learner(A, *, delta: float, epsilon: float, lam: float, n: int,
                      horizon: int | None = None, oracle=None,
                      never_crossed: str = "available") -> dict:
    """All metrics of one learner, per period and averaged (the notebook's table row).

    Averages skip NaN periods (e.g. the last period has no OOD, TAS or horizon).
    SH and DH averages are over periods with at least one future step.

    ``sh`` is the first-crossing Stability Horizon, ``sh_eq3`` the literal maximum of
    Eq. 3 (a later recovery counts); both use ``never_crossed`` (see
    :func:`stability_horizon`).

    Returns
    -------
    dict
        ``id``, ``ood``, ``tas``, ``tas_min``, ``ood_min``, ``sh``, ``sh_eq3``, ``dh``
        (averages) and ``per_period`` with the lists ``id``, ``ood``, ``tas``, ``sh``,
        ``sh_eq3``, ``dh``.

    Examples
    --------
    >>> A = [[0.9, 0.8, 0.6], [np.nan, 0.9, 0.85], [np.nan, np.nan, 0.8]]
    >>> s = summarize_learner(A, delta=0.8, epsilon=0.01, lam=0.1, n=1)
    >>> round(s["id"], 3), s["per_period"]["sh"]
    (0.867, [1.0, 1.0, 0.0])
    """
    A = _accuracy_matrix(A)
    T = A.shape[0]
    ids = id_accuracy(A)
    ood = ood_accuracy(A, n=n)
    tas = temporal_adaptation_score(A, n=n, oracle=oracle)
    sh = stability_horizon(A, delta, oracle=oracle, horizon=horizon, never_crossed=never_crossed)
    sh_eq3 = stability_horizon(A, delta, oracle=oracle, horizon=horizon, contiguous=False,
                               never_crossed=never_crossed)
    dh = drift_horizon(A, epsilon, lam, horizon=horizon)
    has_future = np.arange(T) < T - 1

    def mean(v, mask=None):
        v = v[mask] if mask is not None else v
        return float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")

    def vmin(v):
        return float(np.nanmin(v)) if np.isfinite(v).any() else float("nan")

    return {
        "id": mean(ids), "ood": mean(ood), "ood_min": vmin(ood), "tas": mean(tas), "tas_min": vmin(tas),
        "sh": mean(sh, has_future), "sh_eq3": mean(sh_eq3, has_future), "dh": mean(dh, has_future),
        "per_period": {"id": ids.tolist(), "ood": ood.tolist(), "tas": tas.tolist(), "sh": sh.tolist(),
                       "sh_eq3": sh_eq3.tolist(), "dh": dh.tolist()},
    }


def forward_view(A) -> np.ndarray:
    """The paper's matrix: ``A`` with every cell tau < t set to NaN (a copy).

    Examples
    --------
    >>> forward_view([[0.9, 0.5], [0.7, 0.8]]).tolist()
    [[0.9, 0.5], [nan, 0.8]]
    """
    A = np.array(_accuracy_matrix(A), dtype=float)
    A[np.tril_indices(A.shape[0], -1)] = np.nan
    return A
