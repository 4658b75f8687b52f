"""Metrics for temporal distribution shift (Iovine, Ziffer & Della Valle, 2026).

All functions take the temporal accuracy matrix ``A`` of shape
``(num_periods, num_periods)``: ``A[t, tau]`` is the accuracy on the test data of
period ``tau`` of the model trained up to period ``t`` (NaN where not evaluated;
the paper evaluates ``tau >= t`` only). The *oracle* accuracy of period ``tau`` is
the accuracy of a model trained directly on ``tau``; by default the diagonal
``A[tau, tau]`` (Eq. 2 literally), or any vector passed as ``oracle`` -- e.g. the
diagonal of per-period ERM, shared by all learners so that their scores are
comparable (the notebook's default).

=============================  ==============================================================
metric                         definition (0-based, ``h`` = steps into the future)
=============================  ==============================================================
:func:`transfer_ratio`         g(t, tau) = A(t, tau) / oracle(tau), clipped to [0, 1] (Eq. 2)
:func:`stability_horizon`      SH_delta(t): how many steps g stays >= delta (Eq. 3)
:func:`drift_horizon`          DH_t: first h in [1, H] where the cumulative statistic S_h
                               exceeds lambda; H + 1 when never (Eq. 4-5)
:func:`temporal_adaptation_score`  TAS_t = mean_k A(t, t+k) / mean_k oracle(t+k),
                               k = 1..n, clipped to [0, 1] (Eq. 6)
:func:`id_accuracy`, :func:`ood_accuracy`  Wild-Time's ID (diagonal) and OOD (mean over
                               the next n periods) accuracies per training period
=============================  ==============================================================

Edge cases (all documented per function and tested)
---------------------------------------------------
- NaN cells are "not evaluated": they are skipped, never counted as failures.
- Oracle accuracy 0: a model cannot do worse than an oracle scoring 0, so
  ``g = 1`` there (also for 0/0); TAS likewise gives 1 when the oracle mean is 0.
- Fewer than ``n`` future steps: TAS and OOD use the steps that exist
  (``partial=True``, the default) or give NaN (``partial=False``); the last
  period has no future and always gives NaN.
- Horizons near the end of the stream are right-censored: SH counts at most the
  steps that exist; DH's sentinel ``H + 1`` means "not crossed within the
  observable window", exactly as the paper's Table 1 (H = 6, sentinel 7).
"""

from __future__ import annotations

import warnings

import numpy as np

from ._validate import check_choice, check_choices, check_int, check_matrix, check_real, check_type

__all__ = [
    "transfer_ratio",
    "stability_horizon",
    "drift_horizon",
    "temporal_adaptation_score",
    "id_accuracy",
    "ood_accuracy",
    "summarize_learner",
    "accuracy_matrix",
    "majority_accuracy_matrix",
    "check_params",
    "check_learner_settings",
    "forward_view",
    "backward_summary",
    "backward_table",
    "stability_facts",
    "backward_text",
    "DATASETS",
    "LEARNERS",
]

DATASETS = ("synthetic", "rainfall", "yearbook", "fmow")
LEARNERS = ("erm", "finetune", "ewc", "si", "agem")


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
        both averages. A zero oracle mean gives 1 (no lower accuracy is possible).

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


def check_params(*, dataset, learners, period_length, delta, epsilon, lam, n, horizon, epochs, seed,
                 **extra) -> dict:
    """Validate the parameters of notebook 03 (raises ``ValueError``/``TypeError`` naming one).

    ``horizon = 0`` means "all future periods".

    Examples
    --------
    >>> check_params(dataset="synthetic", learners=["erm"], period_length=365, delta=0.9,
    ...              epsilon=0.01, lam=0.1, n=3, horizon=0, epochs=2, seed=0)["dataset"]
    'synthetic'
    >>> check_params(dataset="synthetic", learners=["erm"], period_length=365, delta=1.2,
    ...              epsilon=0.01, lam=0.1, n=3, horizon=0, epochs=2, seed=0)
    Traceback (most recent call last):
    ...
    ValueError: delta must be a number in [0, 1], got 1.2
    """
    out = dict(
        dataset=check_choice("dataset", check_type("dataset", dataset, str), DATASETS),
        learners=check_choices("learners", learners, LEARNERS),
        period_length=check_int("period_length", period_length, low=1),
        delta=check_real("delta", delta, low=0, high=1),
        epsilon=check_real("epsilon", epsilon, low=0),
        lam=check_real("lam", lam, low=0),
        n=check_int("n", n, low=1),
        horizon=check_int("horizon", horizon, low=0),
        epochs=check_int("epochs", epochs, low=1),
        seed=check_int("seed", seed, low=0),
    )
    out.update(extra)
    return out


# --------------------------------------------------------------------------- producing A(t, tau)

#: learner name -> (strategy name in clkit.strategies, trains one fresh model per period?)
_LEARNER_STRATEGY = {"erm": ("naive", True), "finetune": ("naive", False), "ewc": ("ewc", False),
                     "si": ("si", False), "agem": ("agem", False)}


def accuracy_matrix(dataset, learner: str, *, epochs: int = 5, hidden=(64,), lr: float = 1e-3,
                    batch_size: int = 64, seed: int = 0, strategy_kwargs: dict | None = None,
                    num_threads: int | None = 1, progress: bool = False, backward: bool = False) -> np.ndarray:
    """Train ``learner`` period by period and fill A(t, tau) for tau >= t (and tau < t with ``backward``).

    Parameters
    ----------
    dataset : clkit.data.temporal.PeriodDataset
    learner : {"erm", "finetune", "ewc", "si", "agem"}
        ``"erm"``: a fresh model trained on period t only (Wild-Time's per-period
        ERM; its diagonal is the oracle). The others train one model sequentially
        through the periods with the :mod:`clkit.strategies` of that name
        (``"finetune"`` = naive fine-tuning), and row t is evaluated after period t.
    epochs, hidden, lr, batch_size : training settings (Adam, an MLP with ``hidden`` layers).
    seed : int
        Seeds model initialisation and batch order.
    strategy_kwargs : dict, optional
        Extra strategy hyper-parameters (e.g. ``{"ewc_lambda": 10}``).
    num_threads : int or None
        Torch threads while training (default 1: these small models run fastest on one
        thread; results do not depend on it). ``None`` keeps torch's setting.
    backward : bool
        Also evaluate the past periods (tau < t) after training on t -- the backward view
        (:func:`backward_summary`), beyond the paper. The forward cells are the same either
        way (evaluation does not change the model); :func:`forward_view` gives the paper's
        matrix back.

    Returns
    -------
    A : ndarray, shape (num_periods, num_periods)
        Test accuracies; NaN below the diagonal (not evaluated, as in the paper) unless
        ``backward``.
    """
    from ._seed import torch_seeded, torch_threads
    from .models.mlp import MLP
    from .strategies import make_strategy

    if learner not in LEARNERS:  # a clkit strategy name, entry point or "package.module:Class"
        __import__("clkit.plugins").plugins.resolve_strategy(learner, parameter="learner")
    name, fresh = _LEARNER_STRATEGY.get(learner, (learner, False))
    train, test = dataset.tasks("train"), dataset.tasks("test")
    T = len(train)
    in_features = int(np.prod(dataset.input_shape))
    kw = dict(optimizer="adam", lr=lr, epochs=epochs, batch_size=batch_size)
    kw.update(strategy_kwargs or {})

    def build(s):
        with torch_seeded(s):
            model = MLP(in_features, dataset.num_classes, hidden=tuple(hidden))
        return make_strategy(name, model, seed=s, **kw)

    A = np.full((T, T), np.nan)
    strategy = None
    periods = range(T)
    if progress:
        from .progress import tqdm

        periods = tqdm(periods, desc=learner, leave=False)
    with torch_threads(num_threads):
        for t in periods:
            if fresh or strategy is None:
                strategy = build(seed + (1000 * t if fresh else 0))
            strategy.train_task(train[t])
            for tau in range(0 if backward else t, T):
                A[t, tau] = strategy.evaluate(test[tau])
    return A


def majority_accuracy_matrix(train_labels, test_labels) -> np.ndarray:
    """A(t, tau) of the no-learning baseline that predicts period t's majority class.

    The model "trained up to period t" is the constant predictor of the most frequent
    training label of period t (ties: the smallest label). It learns nothing about
    the inputs, so any learner's A(t, tau) should be read beside it: on an imbalanced
    stream (e.g. rain or no rain) it scores well above chance.

    Parameters
    ----------
    train_labels, test_labels : sequence of array_like, length num_periods
        Integer labels of each period's training and test split.

    Returns
    -------
    A : ndarray, shape (num_periods, num_periods)
        Accuracy on period tau's test labels; NaN below the diagonal (tau < t).

    Examples
    --------
    >>> majority_accuracy_matrix([[0, 0, 1], [1, 1, 0]], [[0, 1], [1, 1]]).tolist()
    [[0.5, 0.0], [nan, 1.0]]
    """
    if len(train_labels) != len(test_labels) or len(train_labels) == 0:
        raise ValueError("train_labels and test_labels must be non-empty lists of the same "
                         f"length (one per period), got {len(train_labels)} and {len(test_labels)}")
    T = len(train_labels)
    majority = []
    for t, y in enumerate(train_labels):
        y = np.asarray(y).astype(int).ravel()
        if y.size == 0:
            raise ValueError(f"train_labels[{t}] is empty: every period needs training labels")
        majority.append(int(np.bincount(y - y.min()).argmax() + y.min()))
    A = np.full((T, T), np.nan)
    for tau, y in enumerate(test_labels):
        y = np.asarray(y).astype(int).ravel()
        if y.size == 0:
            continue
        for t in range(tau + 1):
            A[t, tau] = float(np.mean(y == majority[t]))
    return A


# --------------------------------------------------------------------------- per-learner settings

#: keywords notebook 03 supplies to every strategy itself (not user settings)
SUPPLIED_KEYWORDS = ("model", "loss", "optimizer", "lr", "batch_size", "seed", "epochs", "scenario", "device")


def check_learner_settings(learner_kwargs, learners) -> dict:
    """Validate ``learner_kwargs`` against each learner's strategy; return every learner's settings.

    A learner's allowed keywords are those of its :mod:`clkit.strategies` class
    (``erm`` and ``finetune`` are ``naive``) less :data:`SUPPLIED_KEYWORDS`.

    Returns
    -------
    dict
        ``{learner: {keyword: value}}`` for every learner (``{}`` where none is set).

    Examples
    --------
    >>> check_learner_settings({"si": {"si_lambda": 10.0}}, ["finetune", "si"])
    {'finetune': {}, 'si': {'si_lambda': 10.0}}
    >>> check_learner_settings({"ewc": {"lam": 1.0}}, ["ewc"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: learner_kwargs['ewc']: unknown keyword 'lam'; ewc accepts [...
    """
    from .learner_kwargs import allowed_keywords, check_learner_kwargs, settings_for
    from .plugins import resolve_strategy

    learners = list(learners)
    allowed = {m: allowed_keywords(resolve_strategy(_LEARNER_STRATEGY.get(m, (m, False))[0], parameter="learners"),
                                   exclude=SUPPLIED_KEYWORDS) for m in learners}
    checked = check_learner_kwargs(learner_kwargs, allowed, learners=learners)
    return {m: settings_for(m, None, checked) for m in learners}


# --------------------------------------------------------------------------- the backward view

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


def backward_summary(A) -> dict:
    """The backward view of A(t, tau): accuracy on *past* periods (tau < t), beyond the paper.

    The paper's metrics (TTR, SH, DH, TAS) look only forward (tau >= t), so a method that
    keeps what it learned can only show there as a cost. This view shows the benefit:

    * backward accuracy ``BA(t) = mean_{tau < t} A(t, tau)`` (t >= 1): after training on
      t, how well the model still does on the periods before it;
    * forgetting of period tau ``F(tau) = max_{tau <= t < T-1} A(t, tau) - A(T-1, tau)``
      (tau < T-1; Chaudhry et al.'s definition): the drop from its best to the end.

    Parameters
    ----------
    A : array_like, shape (T, T)
        With the cells tau < t evaluated (:func:`accuracy_matrix` with ``backward=True``).

    Returns
    -------
    dict
        ``backward_accuracy`` (mean of BA over t >= 1), ``final_backward_accuracy``
        (BA(T-1)), ``forgetting`` (mean of F), ``max_forgetting``, and ``per_period`` with
        the lists ``backward_accuracy`` (NaN at t = 0) and ``forgetting`` (NaN at T-1).
        All NaN (and ``evaluated: False``) when ``A`` has no backward cell, as for a
        matrix from the paper's protocol.

    Examples
    --------
    >>> A = [[0.9, 0.2, 0.1], [0.6, 0.8, 0.3], [0.5, 0.7, 0.9]]
    >>> s = backward_summary(A)
    >>> [round(x, 3) for x in s["per_period"]["backward_accuracy"][1:]], round(s["backward_accuracy"], 3)
    ([0.6, 0.6], 0.6)
    >>> [round(x, 3) for x in s["per_period"]["forgetting"][:2]], round(s["forgetting"], 3)
    ([0.4, 0.1], 0.25)
    """
    A = _accuracy_matrix(A)
    T = A.shape[0]
    lower = A[np.tril_indices(T, -1)]
    nan_T = [float("nan")] * T
    if T < 2 or not np.isfinite(lower).any():
        return {"evaluated": False, "backward_accuracy": float("nan"), "final_backward_accuracy": float("nan"),
                "forgetting": float("nan"), "max_forgetting": float("nan"),
                "per_period": {"backward_accuracy": nan_T, "forgetting": nan_T}}
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # rows/columns without a cell give NaN
        ba = np.array([np.nanmean(A[t, :t]) if t else np.nan for t in range(T)])
        fg = np.array([np.nanmax(A[tau:T - 1, tau]) - A[T - 1, tau] for tau in range(T - 1)] + [np.nan])
    return {"evaluated": True,
            "backward_accuracy": float(np.nanmean(ba[1:])), "final_backward_accuracy": float(ba[-1]),
            "forgetting": float(np.nanmean(fg[:-1])), "max_forgetting": float(np.nanmax(fg[:-1])),
            "per_period": {"backward_accuracy": ba.tolist(), "forgetting": fg.tolist()}}


def backward_table(summaries: dict):
    """One row per learner: mean backward accuracy, final backward accuracy, mean and max forgetting.

    ``summaries``: ``{learner: backward_summary(A)}``; learners without backward cells
    (user matrices) are left out.

    Examples
    --------
    >>> s = backward_summary([[0.9, 0.2], [0.6, 0.8]])
    >>> backward_table({"ft": s}).round(2).to_dict("records")
    [{'backward accuracy': 0.6, 'final backward accuracy': 0.6, 'forgetting': 0.3, 'max forgetting': 0.3}]
    """
    import pandas as pd

    return pd.DataFrame({name: {"backward accuracy": s["backward_accuracy"],
                                "final backward accuracy": s["final_backward_accuracy"],
                                "forgetting": s["forgetting"], "max forgetting": s["max_forgetting"]}
                         for name, s in summaries.items() if s.get("evaluated")}).T


def stability_facts(rows: dict, baseline: dict, acc: dict, *, delta: float, oracle=None,
                    periods=None) -> str:
    """Sentences on what the mean Stability Horizon measures in this run, from the numbers.

    Two checks the paper's tables invite: (1) the no-learning baseline's Eq. 3 SH beside
    the learners' range -- a baseline above every learner means a long SH is no sign of
    learning; (2) where the learners' rows first fall below ``delta``: when most rows of
    every learner first cross at the *same* test period, mean SH mostly measures the
    distance to one event in the data.

    Parameters
    ----------
    rows : {learner: summarize_learner(...)}
    baseline : summarize_learner(...) of the majority-class baseline
    acc : {learner: A}
    periods : list, optional
        Period labels for the text (default: indices).

    Examples
    --------
    >>> A = np.array([[1.0, 1.0, 0.5], [np.nan, 1.0, 0.5], [np.nan, np.nan, 1.0]])
    >>> r = {"ft": summarize_learner(A, delta=0.9, epsilon=0.01, lam=0.1, n=1)}
    >>> b = summarize_learner(np.ones((3, 3)), delta=0.9, epsilon=0.01, lam=0.1, n=1)
    >>> print(stability_facts(r, b, {"ft": A}, delta=0.9))  # doctest: +NORMALIZE_WHITESPACE
    The majority-class baseline's Eq. 3 SH is 1.50, above every learner (0.50–0.50): a long
    Stability Horizon here is no sign of learning. Every learner's rows before test period 2
    first fall below δ = 0.9 at test period 2 (2 of 2 such rows), so the mean SH mostly
    measures the distance to that one period.
    """
    names = [m for m in rows if m != "erm"] or list(rows)
    sh3 = {m: rows[m]["sh_eq3"] for m in names}
    lo, hi = min(sh3.values()), max(sh3.values())
    b = baseline["sh_eq3"]
    where = ("above every learner" if b > hi else "below every learner" if b < lo else "within the learners' range")
    text = (f"The majority-class baseline's Eq. 3 SH is {b:.2f}, {where} ({lo:.2f}–{hi:.2f})"
            + (": a long Stability Horizon here is no sign of learning." if b > hi else "."))
    firsts = {}
    for m in names:
        g = transfer_ratio(acc[m], oracle)
        T = g.shape[0]
        f = []
        for t in range(T - 1):
            below = [tau for tau in range(t, T) if np.isfinite(g[t, tau]) and g[t, tau] < delta]
            f.append(below[0] if below else None)
        firsts[m] = f
    counts = {}
    for f in firsts.values():
        for tau in f:
            if tau is not None:
                counts[tau] = counts.get(tau, 0) + 1
    if not counts:
        return text + f" No learner's row falls below δ = {delta}."
    tau_star = max(counts, key=lambda k: (counts[k], -k))
    label = periods[tau_star] if periods is not None else tau_star
    rows_before = [(m, [x for t, x in enumerate(f) if t < tau_star]) for m, f in firsts.items()]
    hit = sum(sum(x == tau_star for x in f) for _, f in rows_before)
    total = sum(len(f) for _, f in rows_before)
    every = all(f and all(x == tau_star for x in f) for _, f in rows_before)
    share = hit / total if total else 0.0
    if every:
        text += (f" Every learner's rows before test period {label} first fall below δ = {delta} at test "
                 f"period {label} ({hit} of {total} such rows), so the mean SH mostly measures the distance "
                 "to that one period.")
    else:
        text += (f" The most common first crossing below δ = {delta} is test period {label}: {hit} of the "
                 f"{total} learner rows before it ({share:.0%}) first cross there"
                 + (", so the mean SH largely measures the distance to that one period." if share >= 0.5 else "."))
    return text


def backward_text(summaries: dict, rows: dict, seeds: int = 1) -> str:
    """Sentences on the backward view beside the forward TAS, from the numbers (descriptive).

    Examples
    --------
    >>> b = {"finetune": backward_summary([[0.9, 0.2], [0.5, 0.8]]),
    ...      "ewc": backward_summary([[0.9, 0.2], [0.8, 0.7]])}
    >>> r = {"finetune": {"tas": 0.6}, "ewc": {"tas": 0.55}}
    >>> print(backward_text(b, r))  # doctest: +NORMALIZE_WHITESPACE
    Backward view (beyond the paper): mean accuracy on past periods ranges from 50.0% (finetune)
    to 80.0% (ewc), mean forgetting from 10.0% (ewc) to 40.0% (finetune); the forward TAS of the
    same learners ranges from 55.0% (ewc) to 60.0% (finetune). With 1 seed these are
    descriptions, not tested differences.
    """
    ok = {m: s for m, s in summaries.items() if s.get("evaluated") and m != "erm"}
    if not ok:
        return "No learner has backward cells (user matrices follow the paper's forward protocol)."
    ba = {m: s["backward_accuracy"] for m, s in ok.items()}
    fg = {m: s["forgetting"] for m, s in ok.items()}
    tas = {m: rows[m]["tas"] for m in ok if m in rows}
    lo_b, hi_b = min(ba, key=ba.get), max(ba, key=ba.get)
    lo_f, hi_f = min(fg, key=fg.get), max(fg, key=fg.get)
    text = (f"Backward view (beyond the paper): mean accuracy on past periods ranges from {ba[lo_b]:.1%} "
            f"({lo_b}) to {ba[hi_b]:.1%} ({hi_b}), mean forgetting from {fg[lo_f]:.1%} ({lo_f}) to "
            f"{fg[hi_f]:.1%} ({hi_f})")
    if tas:
        lo_t, hi_t = min(tas, key=tas.get), max(tas, key=tas.get)
        text += (f"; the forward TAS of the same learners ranges from {tas[lo_t]:.1%} ({lo_t}) to "
                 f"{tas[hi_t]:.1%} ({hi_t})")
    return text + (f". With {seeds} seed{'s' if seeds != 1 else ''} these are descriptions, not tested "
                   "differences." if seeds < 4 else ".")
