"""Validation of notebook 04's parameters."""

from __future__ import annotations

from .._validate import check_choice, check_choices, check_int, check_real, check_type, check_seed
from ..data.images import IMAGE_DATASETS
from ..learner_kwargs import allowed_keywords, check_learner_kwargs, settings_for
from ..models.cnn import BACKBONES, MEMORY_FORMATS, MIN_IMAGE_SIZE
from ..strategies import available_strategies, make_strategy
from ..strategies.base import _REGISTRY
from .controls import NULL_LEARNERS, PRIMARY
from .protocol import check_protocol
from .streams import strategy_kwargs

__all__ = ["check_params", "check_primary", "scenario_strategies", "task_only", "SUPPLIED", "allowed_learner_keywords", "check_learner_settings"]

#: keywords the notebook gives every strategy itself: not per-learner settings
SUPPLIED = ("model", "scenario", "epochs", "seed", "loss", "device", "precision")


def _needs_special_model(name: str) -> bool:
    """A strategy 04's CNN backbones cannot serve: a graph model's (SSM, SEM, DMSG) or a ViT's (L2P)."""
    cls = _REGISTRY[name]
    return bool(getattr(cls, "needs_graph_model", False) or getattr(cls, "needs_vit_model", False))


def allowed_learner_keywords(strategies) -> dict:
    """Per strategy, the keywords ``learner_kwargs`` may set: its constructor's, less :data:`SUPPLIED`.

    Examples
    --------
    >>> kw = allowed_learner_keywords(["ewc", "naive"])
    >>> kw["ewc"]["ewc_lambda"], "lr" in kw["naive"], "epochs" in kw["naive"]
    (1.0, True, False)
    """
    return {name: allowed_keywords(_REGISTRY[name], exclude=SUPPLIED) for name in strategies}


def check_learner_settings(learner_kwargs, strategies, *, scenario: str = "class", **hyper) -> dict:
    """Validate ``learner_kwargs`` against each strategy's constructor; return the checked settings.

    Names and types: :func:`clkit.learner_kwargs.check_learner_kwargs` (an unknown
    learner or keyword fails naming the learner and what it accepts). Values: every
    strategy of the run is built once around a tiny model with its final settings
    (``hyper`` updated by ``learner_kwargs``), so the constructors' own range checks fail
    here, before any training, with the learner named.

    Parameters
    ----------
    learner_kwargs : dict
        ``{learner: {keyword: value}}``.
    strategies : list of str
        The run's strategies.
    scenario : {"class", "task"}
    **hyper
        The settings every strategy may take (each picks those its constructor accepts).

    Examples
    --------
    >>> check_learner_settings({"ewc": {"ewc_lambda": 100}}, ["naive", "ewc"], lr=0.01)
    {'ewc': {'ewc_lambda': 100}}
    >>> check_learner_settings({"ewc": {"ewc_lambda": -1.0}}, ["ewc"])
    Traceback (most recent call last):
    ...
    ValueError: learner_kwargs['ewc']: ewc_lambda must be a number >= 0, got -1.0
    >>> check_learner_settings({"ewc": {"lam": 1.0}}, ["ewc"])
    Traceback (most recent call last):
    ...
    ValueError: learner_kwargs['ewc']: unknown keyword 'lam'; ewc accepts [...]
    """
    from ..models import MLP

    checked = check_learner_kwargs(learner_kwargs, allowed_learner_keywords(strategies), learners=strategies)
    for name in checked:
        try:
            make_strategy(name, MLP(4, 20, hidden=(4,)), scenario=scenario,
                          **settings_for(name, strategy_kwargs(name, hyper), checked))
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"learner_kwargs[{name!r}]: {exc}") from None
    return checked


def task_only(name) -> bool:
    """Whether strategy ``name`` needs the task id (task-incremental only: ``mste``, ``pnn``); a name
    clkit does not register (a plugin, ``package.module:Class``) is not known to need it.

    Examples
    --------
    >>> task_only("pnn"), task_only("mste"), task_only("replay"), task_only("pkg.mod:Learner")
    (True, True, False, False)
    """
    return bool(getattr(_REGISTRY.get(name), "task_incremental_only", False))


def scenario_strategies(strategies, scenario: str) -> tuple[list, str]:
    """The strategies a run trains in ``scenario``, and a note naming those it skips.

    In the ``class`` scenario the task-incremental-only strategies (:func:`task_only`: MSTE and
    PNN, which need the task id; the paper runs PNN task-incrementally only) are skipped, so one
    parameter set with the paper's 14 strategies runs in both scenarios (``-p scenario class``,
    ``-p scenario task``); the note says which were skipped and why (empty when none). When
    every strategy is task-incremental only, nothing is left to run: ``ValueError`` naming
    ``strategies``.

    Examples
    --------
    >>> scenario_strategies(["naive", "mste", "replay", "pnn"], "task")
    (['naive', 'mste', 'replay', 'pnn'], '')
    >>> kept, note = scenario_strategies(["naive", "mste", "replay", "pnn"], "class")
    >>> kept
    ['naive', 'replay']
    >>> print(note)
    Skipped in the class-incremental scenario: mste, pnn (task-incremental only: they need the task id); they run with scenario='task'.
    >>> scenario_strategies(["pnn"], "class")
    Traceback (most recent call last):
    ...
    ValueError: strategies: 'pnn' is task-incremental only; with scenario='class' choose from ...
    """
    if scenario != "class":
        return list(strategies), ""
    skipped = [s for s in strategies if task_only(s)]
    kept = [s for s in strategies if not task_only(s)]
    if not kept:
        allowed = [n for n in available_strategies() if not _REGISTRY[n].task_incremental_only
                   and not _needs_special_model(n)]
        raise ValueError(f"strategies: {', '.join(map(repr, skipped))} {'is' if len(skipped) == 1 else 'are'} "
                         f"task-incremental only; with scenario='class' choose from {allowed}")
    if not skipped:
        return kept, ""
    return kept, (f"Skipped in the class-incremental scenario: {', '.join(skipped)} (task-incremental only: "
                  f"{'it needs' if len(skipped) == 1 else 'they need'} the task id); "
                  f"{'it runs' if len(skipped) == 1 else 'they run'} with scenario='task'.")


def check_primary(primary, strategies) -> list:
    """The primary strategies of a run: a list of names, none of them a learner that cannot forget.

    Names not among ``strategies`` are allowed (the closing text names them as not run); the
    primary family is the order verdict of those the run has.

    Examples
    --------
    >>> check_primary(["replay", "gem"], ["naive", "replay"])
    ['replay']
    >>> check_primary(["mste"], ["mste"])
    Traceback (most recent call last):
    ...
    ValueError: primary: 'mste' cannot forget or transfer: its order gap is zero by construction (a pipeline check), never a claim; name strategies that can forget (default ['replay', 'generative_replay', 'gem'])
    """
    if not isinstance(primary, (list, tuple)) or not all(isinstance(k, str) for k in primary):
        raise TypeError(f"primary must be a list of strategy names, got {primary!r}")
    for k in primary:
        if k in NULL_LEARNERS:
            raise ValueError(f"primary: {k!r} cannot forget or transfer: its order gap is zero by construction (a "
                             f"pipeline check), never a claim; name strategies that can forget (default {list(PRIMARY)})")
    return [k for k in primary if k in strategies]


def check_params(*, datasets, scenario, strategies, backbone, epochs, difficulty_epochs, memory_size,
                 per_class_train, per_class_test, image_size, channels, lr, momentum, batch_size, seed,
                 optimizer: str = "sgd", seeds: int = 1, num_tasks: int = 0, workers: int = 1,
                 memory_format: str = "contiguous", **others) -> None:
    """Validate notebook 04's parameters; raise ``ValueError``/``TypeError`` naming the parameter.

    Examples
    --------
    >>> check_params(datasets=["digits"], scenario="class", strategies=["pnn"], backbone="small_cnn", epochs=1,
    ...              difficulty_epochs=1, memory_size=10, per_class_train=5, per_class_test=5, image_size=16,
    ...              channels=3, lr=0.01, momentum=0.9, batch_size=8, seed=0)
    Traceback (most recent call last):
    ...
    ValueError: strategies: 'pnn' is task-incremental only; with scenario='class' choose from ...

    The batch-normalised backbones need images of at least 33 pixels (a final feature map of 2x2, so
    that even a task's last batch of one row trains):

    >>> check_params(datasets=["digits"], scenario="class", strategies=["naive"], backbone="resnet34_bn", epochs=1,
    ...              difficulty_epochs=1, memory_size=10, per_class_train=5, per_class_test=5, image_size=32,
    ...              channels=3, lr=0.01, momentum=0.9, batch_size=8, seed=0)
    Traceback (most recent call last):
    ...
    ValueError: image_size must be >= 33 with backbone='resnet34_bn' (batch normalisation needs ...
    """
    check_choices("datasets", datasets, IMAGE_DATASETS)
    check_choice("scenario", scenario, ["class", "task"])
    # graph-specific strategies (SSM, SEM, DMSG) need a model that holds its graph, L2P a ViT
    names = [n for n in available_strategies() if not _needs_special_model(n)]
    check_choices("strategies", strategies, names)
    if scenario == "class":
        for s in strategies:
            if _REGISTRY[s].task_incremental_only:
                allowed = [n for n in names if not _REGISTRY[n].task_incremental_only]
                raise ValueError(f"strategies: {s!r} is task-incremental only; with scenario='class' choose from {allowed}")
    check_choice("backbone", backbone, list(BACKBONES))
    check_choice("memory_format", memory_format, list(MEMORY_FORMATS))
    check_int("epochs", epochs, low=1)
    check_int("difficulty_epochs", difficulty_epochs, low=1)
    check_int("memory_size", memory_size, low=0)
    check_int("per_class_train", per_class_train, low=1)
    check_int("per_class_test", per_class_test, low=1)
    check_int("image_size", image_size, low=8)
    if isinstance(backbone, str) and image_size < MIN_IMAGE_SIZE.get(backbone, 0):
        raise ValueError(f"image_size must be >= {MIN_IMAGE_SIZE[backbone]} with backbone={backbone!r} (batch "
                         f"normalisation needs more than one value per channel in a training batch of one row: "
                         f"the final feature map is ceil(image_size / 32) pixels wide), got {image_size}")
    check_choice("channels", channels, [1, 3])
    check_choice("optimizer", optimizer, ["sgd", "adam", "adamw"])
    check_real("lr", lr, low=0, low_open=True)
    check_real("momentum", momentum, low=0, high=1)
    check_int("batch_size", batch_size, low=1)
    check_seed("seed", seed)
    check_int("seeds", seeds, low=1)
    check_int("workers", workers, low=1)
    check_int("num_tasks", num_tasks, low=0, high=len(datasets))
    if num_tasks == 1:
        raise ValueError(f"num_tasks must be 0 (as many tasks as differ in difficulty beyond the seed spread) "
                         f"or 2..{len(datasets)} (len(datasets)), got 1")
    if "protocol" in others:
        check_protocol(others.pop("protocol"))
    if "primary" in others:
        check_primary(others.pop("primary"), strategies)
    if "num_threads" in others:
        check_int("num_threads", others.pop("num_threads"), low=0)
    if "learner_kwargs" in others:
        hyper = dict(optimizer=optimizer, lr=lr, momentum=momentum, batch_size=batch_size, memory_size=memory_size,
                     **{k: v for k, v in others.items() if k != "learner_kwargs" and not isinstance(v, (str, list))})
        check_learner_settings(others.pop("learner_kwargs"), strategies, scenario=scenario, **hyper)
    for name, value in others.items():
        if isinstance(value, bool):
            check_type(name, value, bool)
        elif isinstance(value, (int, float)):
            check_real(name, value, low=0)
