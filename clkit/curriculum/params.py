"""Validation of notebook 04's parameters."""

from __future__ import annotations

from .._validate import check_choice, check_choices, check_int, check_real, check_type
from ..data.images import IMAGE_DATASETS
from ..models.cnn import BACKBONES
from ..strategies import available_strategies
from ..strategies.base import _REGISTRY

__all__ = ["check_params"]


def check_params(*, datasets, scenario, strategies, backbone, epochs, difficulty_epochs, memory_size,
                 per_class_train, per_class_test, image_size, channels, lr, momentum, batch_size, seed,
                 optimizer: str = "sgd", seeds: int = 1, num_tasks: int = 0, workers: int = 1, **others) -> None:
    """Validate notebook 04's parameters; raise ``ValueError``/``TypeError`` naming the parameter.

    Examples
    --------
    >>> check_params(datasets=["digits"], scenario="class", strategies=["pnn"], backbone="small_cnn", epochs=1,
    ...              difficulty_epochs=1, memory_size=10, per_class_train=5, per_class_test=5, image_size=16,
    ...              channels=3, lr=0.01, momentum=0.9, batch_size=8, seed=0)
    Traceback (most recent call last):
    ...
    ValueError: strategies: 'pnn' is task-incremental only; with scenario='class' choose from ...
    """
    check_choices("datasets", datasets, IMAGE_DATASETS)
    check_choice("scenario", scenario, ["class", "task"])
    # graph-specific strategies (SSM, SEM, DMSG) need a model that holds its graph
    names = [n for n in available_strategies() if not getattr(_REGISTRY[n], "needs_graph_model", False)]
    check_choices("strategies", strategies, names)
    if scenario == "class":
        for s in strategies:
            if _REGISTRY[s].task_incremental_only:
                allowed = [n for n in names if not _REGISTRY[n].task_incremental_only]
                raise ValueError(f"strategies: {s!r} is task-incremental only; with scenario='class' choose from {allowed}")
    check_choice("backbone", backbone, list(BACKBONES))
    check_int("epochs", epochs, low=1)
    check_int("difficulty_epochs", difficulty_epochs, low=1)
    check_int("memory_size", memory_size, low=0)
    check_int("per_class_train", per_class_train, low=1)
    check_int("per_class_test", per_class_test, low=1)
    check_int("image_size", image_size, low=8)
    check_choice("channels", channels, [1, 3])
    check_choice("optimizer", optimizer, ["sgd", "adam", "adamw"])
    check_real("lr", lr, low=0, low_open=True)
    check_real("momentum", momentum, low=0, high=1)
    check_int("batch_size", batch_size, low=1)
    check_int("seed", seed)
    check_int("seeds", seeds, low=1)
    check_int("workers", workers, low=1)
    check_int("num_tasks", num_tasks, low=0, high=len(datasets))
    if num_tasks == 1:
        raise ValueError(f"num_tasks must be 0 (as many tasks as differ in difficulty beyond the seed spread) "
                         f"or 2..{len(datasets)} (len(datasets)), got 1")
    if "num_threads" in others:
        check_int("num_threads", others.pop("num_threads"), low=0)
    for name, value in others.items():
        if isinstance(value, bool):
            check_type(name, value, bool)
        elif isinstance(value, (int, float)):
            check_real(name, value, low=0)
