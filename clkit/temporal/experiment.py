"""Producing the temporal accuracy matrix ``A(t, tau)``: learners trained period after period.

``accuracy_matrix`` trains one learner through the periods of a stream (with the backward
cells ``tau < t`` when asked); ``majority_accuracy_matrix`` is the no-learning baseline;
``check_learner_settings`` validates the notebook's ``learner_kwargs``.
"""

from __future__ import annotations

import numpy as np

from .params import LEARNERS

__all__ = ["accuracy_matrix", "majority_accuracy_matrix", "check_learner_settings", "SUPPLIED_KEYWORDS"]


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
        way (evaluation does not change the model); :func:`~clkit.temporal.metrics.forward_view` gives the paper's
        matrix back.

    Returns
    -------
    A : ndarray, shape (num_periods, num_periods)
        Test accuracies; NaN below the diagonal (not evaluated, as in the paper) unless
        ``backward``.
    """
    from .._seed import torch_seeded, torch_threads
    from ..models.mlp import MLP
    from ..strategies import make_strategy

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
        from ..progress import tqdm

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
    from ..learner_kwargs import allowed_keywords, check_learner_kwargs, settings_for
    from ..plugins import resolve_strategy

    learners = list(learners)
    allowed = {m: allowed_keywords(resolve_strategy(_LEARNER_STRATEGY.get(m, (m, False))[0], parameter="learners"),
                                   exclude=SUPPLIED_KEYWORDS) for m in learners}
    checked = check_learner_kwargs(learner_kwargs, allowed, learners=learners)
    return {m: settings_for(m, None, checked) for m in learners}
