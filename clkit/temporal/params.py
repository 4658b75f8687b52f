"""Validation of notebook 03's parameters (one error per bad value, naming it)."""

from __future__ import annotations

from .._validate import check_choice, check_choices, check_int, check_real, check_type, check_seed

__all__ = ["DATASETS", "LEARNERS", "check_params"]

DATASETS = ("synthetic", "rainfall", "yearbook", "fmow")
LEARNERS = ("erm", "finetune", "ewc", "si", "agem", "coral", "moco_sml")


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
        seed=check_seed("seed", seed),
    )
    out.update(extra)
    return out
