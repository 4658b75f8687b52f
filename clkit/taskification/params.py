"""Validation of the 01_taskification notebook's parameters."""

from __future__ import annotations

from .._validate import check_choice, check_choices, check_int, check_real, check_type, check_seed
from .forecasting import SPLIT_ORDERS, TARGET_SCALINGS
from .profiles import check_weights

__all__ = ["check_params", "check_learner_settings", "DATASETS", "METHODS", "METHOD_LABELS", "LEARNER_DEFAULTS",
           "SUPPLIED_KEYWORDS"]

DATASETS = ["synthetic", "cesnet"]
#: CL methods of the paper and the clkit strategy behind each.
METHODS = ["naive", "replay", "ewc", "lwf"]
METHOD_LABELS = {"naive": "Finetune", "replay": "ER", "ewc": "EWC", "lwf": "LwF"}
#: the notebook's own settings per learner, below the user's ``learner_kwargs``. EWC's lambda
#: is chosen by measurement (docs/01_taskification.md, notebooks/grids/01_taskification/
#: ewc_lambda.yaml): see :data:`EWC_LAMBDA`.
EWC_LAMBDA = 1e6
LEARNER_DEFAULTS = {"ewc": {"ewc_lambda": EWC_LAMBDA}}
#: keywords the notebook supplies itself (not per-learner settings)
SUPPLIED_KEYWORDS = ("model", "loss", "optimizer", "lr", "batch_size", "seed", "epochs", "scenario", "device",
                     "precision")


def check_params(*, dataset, num_series, num_weeks, window_days, offset_days, delta_days, num_perturbations, l_min,
                 alpha, beta, discrepancy, num_quantiles, methods, cl_series, context_steps, stride, d_model,
                 num_layers, num_heads, epochs, patience, lr, batch_size, seed, river_windows, river_delta,
                 torch_threads=1, target_scaling="task", split_order="chronological", context_across_tasks=False,
                 lr_patience=5, cl_seeds=1, cl_workers=1) -> dict:
    """Check every parameter (``ValueError`` / ``TypeError`` naming it); return them as a dict.

    Window lengths must be whole numbers of 10-minute steps, strictly increasing,
    and fit the stream after the offset; ``delta_days`` must leave every task
    non-empty (checked again against the actual taskifications).

    Examples
    --------
    >>> p = dict(dataset="synthetic", num_series=2, num_weeks=4, window_days=[3, 6], offset_days=1.0,
    ...          delta_days=0.25, num_perturbations=5, l_min=2, alpha=0.5, beta=0.5, discrepancy="quantile",
    ...          num_quantiles=32, methods=["naive"], cl_series=1, context_steps=36, stride=12, d_model=8,
    ...          num_layers=1, num_heads=2, epochs=1, patience=10, lr=1e-3, batch_size=64, seed=0,
    ...          river_windows=[24, 48], river_delta=4)
    >>> check_params(**p)["window_days"]
    [3, 6]
    >>> check_params(**{**p, "l_min": 1})
    Traceback (most recent call last):
    ...
    ValueError: l_min must be an integer >= 2, got 1
    """
    out = {}
    out["dataset"] = check_choice("dataset", dataset, DATASETS)
    out["num_series"] = check_int("num_series", num_series, low=1)
    out["num_weeks"] = check_int("num_weeks", num_weeks, low=1, high=40)
    check_type("window_days", window_days, list, "a list of window lengths in days")
    if not window_days:
        raise ValueError("window_days must name at least one window length, got []")
    for w in window_days:
        check_real("window_days", w, low=0, low_open=True)
    if sorted(window_days) != list(window_days) or len(set(window_days)) != len(window_days):
        raise ValueError(f"window_days must be strictly increasing, got {window_days}")
    out["window_days"] = list(window_days)
    out["offset_days"] = check_real("offset_days", offset_days, low=0)
    out["delta_days"] = check_real("delta_days", delta_days, low=0)
    if dataset == "synthetic" and max(window_days) + offset_days > 7 * num_weeks:
        raise ValueError(f"window_days contains {max(window_days)} days, longer than the stream after "
                         f"offset_days ({7 * num_weeks - offset_days} days of num_weeks={num_weeks})")
    if 2 * delta_days >= min(window_days):
        raise ValueError(f"delta_days={delta_days} is so large that tasks can vanish: it must be < half the "
                         f"shortest window ({min(window_days) / 2} days)")
    out["num_perturbations"] = check_int("num_perturbations", num_perturbations, low=1)
    out["l_min"] = check_int("l_min", l_min, low=2)
    out["alpha"], out["beta"] = check_weights(alpha, beta)
    out["discrepancy"] = check_choice("discrepancy", discrepancy, ["quantile", "sliced", "exact"])
    out["num_quantiles"] = check_int("num_quantiles", num_quantiles, low=2)
    out["methods"] = check_choices("methods", methods, METHODS, min_len=0)
    out["cl_series"] = check_int("cl_series", cl_series, low=1)
    out["context_steps"] = check_int("context_steps", context_steps, low=2)
    out["stride"] = check_int("stride", stride, low=1)
    out["d_model"] = check_int("d_model", d_model, low=2)
    out["num_layers"] = check_int("num_layers", num_layers, low=1)
    out["num_heads"] = check_int("num_heads", num_heads, low=1)
    if d_model % num_heads:
        raise ValueError(f"num_heads must divide d_model={d_model}, got {num_heads}")
    out["epochs"] = check_int("epochs", epochs, low=1)
    out["patience"] = check_int("patience", patience, low=1)
    out["lr"] = check_real("lr", lr, low=0, low_open=True)
    out["batch_size"] = check_int("batch_size", batch_size, low=1)
    out["seed"] = check_seed("seed", seed)
    check_type("river_windows", river_windows, list, "a list of window lengths in steps")
    for w in river_windows:
        check_int("river_windows", w, low=2)
    out["river_windows"] = list(river_windows)
    out["river_delta"] = check_int("river_delta", river_delta, low=0)
    out["torch_threads"] = check_int("torch_threads", torch_threads, low=1)
    out["target_scaling"] = check_choice("target_scaling", target_scaling, TARGET_SCALINGS)
    out["split_order"] = check_choice("split_order", split_order, SPLIT_ORDERS)
    if not isinstance(context_across_tasks, bool):
        raise TypeError(f"context_across_tasks must be true or false, got {context_across_tasks!r}")
    out["context_across_tasks"] = context_across_tasks
    out["lr_patience"] = check_int("lr_patience", lr_patience, low=0)
    out["cl_seeds"] = check_int("cl_seeds", cl_seeds, low=1)
    out["cl_workers"] = check_int("cl_workers", cl_workers, low=1)
    return out


def check_learner_settings(learner_kwargs, methods) -> tuple[dict, dict]:
    """Validate ``learner_kwargs`` against each method's strategy; return it and every method's settings.

    Allowed keywords are the strategy constructor's (:func:`clkit.learner_kwargs.allowed_keywords`)
    less those the notebook supplies (:data:`SUPPLIED_KEYWORDS`). The settings of a method are
    :data:`LEARNER_DEFAULTS` updated by the user's.

    Returns
    -------
    (checked, settings)
        ``checked``: the validated ``{learner: {keyword: value}}``; ``settings[m]``: the
        keyword arguments method ``m`` is built with.

    Examples
    --------
    >>> check_learner_settings({"ewc": {"ewc_lambda": 10.0}}, ["naive", "ewc"])[1]
    {'naive': {}, 'ewc': {'ewc_lambda': 10.0}}
    >>> check_learner_settings({"ewc": {"lam": 10.0}}, ["ewc"])
    Traceback (most recent call last):
    ...
    ValueError: learner_kwargs['ewc']: unknown keyword 'lam'; ewc accepts ['ewc_lambda', ...
    """
    from ..learner_kwargs import allowed_keywords, check_learner_kwargs, settings_for
    from ..plugins import resolve_strategy

    allowed = {m: allowed_keywords(resolve_strategy(m, parameter="methods"), exclude=SUPPLIED_KEYWORDS)
               for m in methods}
    checked = check_learner_kwargs(learner_kwargs, allowed, learners=list(methods))
    return checked, {m: settings_for(m, LEARNER_DEFAULTS.get(m), checked) for m in methods}
