"""Learners and backbones from outside clkit: registry names, import paths, entry points.

Every notebook parameter that names learners (``methods`` in 01, ``learners`` in 02
and 03, ``strategies`` in 04, ``methods`` in 05) accepts, besides the notebook's own
names,

- a clkit registry name (``clkit.strategies.available_strategies()``);
- an import path ``"package.module:ClassName"`` of a :class:`clkit.strategies.Strategy`
  subclass;
- the name of an entry point in the group ``clkit.strategies`` of an installed
  distribution, declared in its ``pyproject.toml``::

      [project.entry-points."clkit.strategies"]
      my_method = "my_package.module:MyStrategy"

A plugin declares its **capabilities** with the class attributes the built-in
strategies use (see :data:`CAPABILITIES`); a notebook refuses, before any training, a
learner lacking one it needs (:func:`require_capabilities`), naming the learner, the
missing capability and the notebook.

Backbones: ``backbone`` / ``model`` parameters accept ``"package.module:factory"``, a
callable returning an ``nn.Module``; it is called with the keyword arguments listed
per notebook in :data:`FACTORY_SIGNATURES` (:func:`build_model`).

EDGE's ground truth (notebook 02) trains every class sequence at once with batched
learners; an ordinary ``Strategy`` runs there one sequence after the other through
:func:`train_sequences_sequentially`, which returns exactly what
``clkit.edge.learners.train_sequences`` returns.
"""

from __future__ import annotations

import inspect
from typing import Callable

import numpy as np

from ._import_path import is_plugin_name, load_object

__all__ = ["ENTRY_POINT_GROUP", "CAPABILITIES", "NOTEBOOK_NEEDS", "FACTORY_SIGNATURES", "capabilities",
           "strategy_entry_points", "available_strategies", "load_object", "resolve_strategy",
           "is_plugin_name", "require_capabilities", "split_learners", "use_strategies", "resolve_factory",
           "build_model", "train_sequences_sequentially"]

#: capability -> (class attribute, its value when the attribute is missing, meaning)
CAPABILITIES = {
    "task_free": ("task_free", True, "trains online without task boundaries (observe())"),
    "regression": ("supports_regression", True, "defined for regression (loss='mse')"),
    "class_scenario": ("task_incremental_only", False,
                       "class-incremental (single head, no task id at test time); "
                       "declared by task_incremental_only = False"),
    "task_scenario": ("supports_task_scenario", True, "task-incremental (task id known)"),
    "graph": ("supports_graph", True, "trains a graph model that takes node indices"),
    "generic_model": ("needs_graph_model", False,
                      "works with any nn.Module (not only a graph model); "
                      "declared by needs_graph_model = False"),
    "any_backbone": ("needs_vit_model", False,
                     "trains on an MLP or CNN (not only a timm ViT, as L2P's prompts need); "
                     "declared by needs_vit_model = False"),
}
#: capabilities whose attribute says the opposite (True = lacking the capability)
_NEGATED = {"class_scenario", "generic_model", "any_backbone"}

#: what each notebook needs of every learner (04 adds the scenario it runs)
NOTEBOOK_NEEDS = {
    "01_taskification": ("regression", "class_scenario", "generic_model", "any_backbone"),
    "02_edge": ("class_scenario", "generic_model"),   # its image protocols give L2P a ViT; else any_backbone
    "03_temporal_metrics": ("class_scenario", "generic_model", "any_backbone"),
    "04_curriculum": ("generic_model", "any_backbone"),
    "05_drift": ("task_free", "graph", "class_scenario"),
}

#: keyword arguments a backbone factory ``"package.module:factory"`` receives, per notebook
FACTORY_SIGNATURES = {
    "01_taskification": "factory(num_features: int, context: int) -> nn.Module mapping windows "
                        "(batch, context, num_features) to the next target value (batch, 1)",
    "02_edge": "factory(in_features: int, num_classes: int) -> nn.Module mapping (batch, in_features) "
               "to logits (batch, num_classes)",
    "03_temporal_metrics": "factory(in_features: int, num_classes: int) -> nn.Module mapping "
                           "(batch, in_features) to logits (batch, num_classes)",
    "04_curriculum": "factory(in_channels: int, num_classes: int, image_size: int) -> nn.Module mapping "
                     "(batch, in_channels, image_size, image_size) to logits (batch, num_classes)",
    "05_drift": "factory(x: Tensor (num_nodes, num_features), edge_index: Tensor (2, num_edges), "
                "num_classes: int) -> nn.Module mapping node indices (batch,) to logits "
                "(batch, num_classes)",
}


# --------------------------------------------------------------------------- discovery

#: names resolved in :mod:`clkit.strategies.registry`, re-exported here on first access (so that
#: ``import clkit.plugins`` stays cheap: importing that module imports every strategy and torch)
_REGISTRY_NAMES = ("ENTRY_POINT_GROUP", "strategy_entry_points", "available_strategies", "resolve_strategy")


def __getattr__(name):
    """``ENTRY_POINT_GROUP``, ``strategy_entry_points``, ``available_strategies``, ``resolve_strategy``.

    They live in :mod:`clkit.strategies.registry` (below both this module and
    :mod:`clkit.strategies`, issue 42) and are looked up there on first access.
    """
    if name in _REGISTRY_NAMES:
        from .strategies import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _resolve(name: str, parameter: str):
    from .strategies.registry import resolve_strategy

    return resolve_strategy(name, parameter=parameter)


# --------------------------------------------------------------------------- capabilities

def capabilities(cls) -> frozenset:
    """The capabilities a strategy class declares (see :data:`CAPABILITIES`).

    Examples
    --------
    >>> from clkit.plugins import resolve_strategy
    >>> sorted(capabilities(resolve_strategy("pnn")))
    ['any_backbone', 'generic_model', 'graph', 'regression', 'task_scenario']
    """
    out = set()
    for cap, (attr, default, _) in CAPABILITIES.items():
        value = bool(getattr(cls, attr, default))
        if value != (cap in _NEGATED):
            out.add(cap)
    return frozenset(out)


def require_capabilities(learner: str, needed, notebook: str, *, parameter: str = "learners"):
    """Refuse ``learner`` unless its class has every capability in ``needed``.

    Returns the strategy class. The ``ValueError`` names the learner, the missing
    capabilities (with the class attribute that declares each) and the notebook.

    Examples
    --------
    >>> require_capabilities("ewc", ["task_free"], "05_drift", parameter="methods")
    Traceback (most recent call last):
    ...
    ValueError: methods: learner 'ewc' lacks capability 'task_free' (trains online without task boundaries (observe()); declare task_free = True) needed by notebook 05_drift
    """
    cls = _resolve(learner, parameter)
    have = capabilities(cls)
    missing = [c for c in needed if c not in have]
    for c in missing:
        if c not in CAPABILITIES:
            raise ValueError(f"unknown capability {c!r}; allowed: {list(CAPABILITIES)}")
    if missing:
        def decl(c):
            attr, _, meaning = CAPABILITIES[c]
            if "declared by" in meaning:
                return meaning
            return f"{meaning}; declare {attr} = True"
        what = "; ".join(f"capability {c!r} ({decl(c)})" for c in missing)
        raise ValueError(f"{parameter}: learner {learner!r} lacks {what} needed by notebook {notebook}")
    return cls


def split_learners(names, builtin, *, parameter: str, notebook: str, needs=None, extra_needs=()):
    """Split a notebook's learner list into its own names and plugin learners.

    Parameters
    ----------
    names : list of str
        The notebook parameter's value.
    builtin : iterable of str
        The notebook's own learner names (kept as they are, validated by the notebook).
    parameter : str
        The parameter's name, for messages.
    notebook : str
        The notebook's stem; its needs come from :data:`NOTEBOOK_NEEDS`.
    needs : iterable of str, optional
        Overrides the notebook's needs.
    extra_needs : iterable of str
        Added to the needs (e.g. ``"task_scenario"`` for 04 in the task scenario).

    Returns
    -------
    own, plugins : lists of str
        ``own`` in the order given; ``plugins``: every other name, resolved (registry name,
        entry point or import path), capability-checked and registered, so that
        ``make_strategy(name, model)`` builds it. Nothing is trained here.

    Examples
    --------
    >>> split_learners(["finetune", "clkit.strategies.importance:SI"], ["finetune", "ewc"],
    ...                parameter="learners", notebook="02_edge")
    (['finetune'], ['clkit.strategies.importance:SI'])
    """
    if isinstance(names, (str, bytes)) or not isinstance(names, (list, tuple)):
        raise TypeError(f"{parameter} must be a list of names, got {type(names).__name__} {names!r}")
    builtin = set(builtin)
    needed = list(NOTEBOOK_NEEDS[notebook] if needs is None else needs) + list(extra_needs)
    own, plugins = [], []
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"{parameter} must hold strings, got {type(n).__name__} {n!r}")
        if n in builtin:
            own.append(n)
        else:
            require_capabilities(n, needed, notebook, parameter=parameter)
            plugins.append(n)
    if len(set(names)) != len(names):
        raise ValueError(f"{parameter} has duplicates: {list(names)!r}")
    return own, plugins


def use_strategies(names, *, notebook: str, parameter: str = "strategies", extra_needs=()) -> list:
    """Resolve, capability-check and register every strategy of ``names``; return the list.

    For notebooks whose learners are ``clkit.strategies`` names (04): afterwards
    ``available_strategies()`` and ``make_strategy`` know every name, plugins included.
    Built-in names are left to the notebook's own validation.
    """
    from .strategies.registry import _builtin_registry

    reg = _builtin_registry()
    builtin = [n for n in names if isinstance(n, str) and dict.__contains__(reg, n)
               and not getattr(reg[n], "_clkit_origin", {}).get(n)]
    split_learners(names, builtin, parameter=parameter, notebook=notebook, extra_needs=extra_needs)
    return list(names)


# --------------------------------------------------------------------------- backbones

def resolve_factory(spec, notebook: str, *, parameter: str = "backbone") -> Callable:
    """The callable behind ``"package.module:factory"``, checked against the notebook's signature.

    Raises ``ValueError`` for an unimportable path and ``TypeError`` for an object that
    is not callable or cannot take the keyword arguments of
    ``FACTORY_SIGNATURES[notebook]``.
    """
    names = _factory_kwargs(notebook)
    obj = load_object(spec, parameter=parameter)
    if not callable(obj):
        raise TypeError(f"{parameter}: {spec!r} is not callable; expected {FACTORY_SIGNATURES[notebook]}")
    try:
        inspect.signature(obj).bind(**{k: None for k in names})
    except TypeError as exc:
        raise TypeError(f"{parameter}: {spec!r} has the wrong signature ({exc}); notebook {notebook} calls "
                        f"{FACTORY_SIGNATURES[notebook]}") from exc
    except ValueError:  # builtins without a signature: trust them
        pass
    return obj


def _factory_kwargs(notebook: str) -> list:
    if notebook not in FACTORY_SIGNATURES:
        raise ValueError(f"notebook must be one of {list(FACTORY_SIGNATURES)}, got {notebook!r}")
    sig = FACTORY_SIGNATURES[notebook]
    inner = sig[sig.index("(") + 1: sig.index(")")]
    return [p.split(":")[0].strip() for p in inner.split(", ") if p.strip()]


def build_model(spec, notebook: str, *, parameter: str = "backbone", **sizes):
    """Call the factory ``spec`` with ``sizes`` (the notebook's keyword arguments); check the result.

    Examples
    --------
    >>> build_model("clkit.plugins:_example_mlp", "02_edge", in_features=4, num_classes=3)
    Sequential(
      (0): Linear(in_features=4, out_features=3, bias=True)
    )
    """
    from torch import nn

    factory = resolve_factory(spec, notebook, parameter=parameter)
    model = factory(**sizes)
    if not isinstance(model, nn.Module):
        raise TypeError(f"{parameter}: {spec!r} returned {type(model).__name__}, not a torch.nn.Module; "
                        f"notebook {notebook} calls {FACTORY_SIGNATURES[notebook]}")
    return model


def _example_mlp(in_features: int, num_classes: int):
    """A linear classifier: the smallest backbone factory (used in doctests)."""
    from torch import nn

    return nn.Sequential(nn.Linear(in_features, num_classes))


# --------------------------------------------------------------------------- EDGE ground truth

def train_sequences_sequentially(x_train, x_test, sequences, learner: str, config=None, *, seed: int = 0,
                                 model_factory=None, progress=None, num_threads: int | None = 1,
                                 strategy_kwargs: dict | None = None, device=None,
                                 precision: str | None = None) -> dict:
    """Train an ordinary ``Strategy`` on every class sequence, one sequence after the other.

    The drop-in for ``clkit.edge.learners.train_sequences`` for learners that are not
    batched: same inputs, same protocol, same output. For each sequence a fresh model
    (identical initialisation for every sequence: ``seed``) is wrapped in the strategy
    (SGD with ``config.lr`` / ``config.momentum``, ``config.epochs`` per task,
    ``config.batch_size``, ``scenario="class"``) and trained task after task with
    ``train_task``; after task ``t`` it predicts among the classes seen so far on the
    test images of every seen task. The loop over tasks, the evaluation and the prefix
    tree (sequences that share their first tasks share that training: the strategy is
    deep-copied where they part) are the batched learners' own
    (:func:`clkit.edge.learners.train_strategy_sequences`).

    Parameters
    ----------
    x_train, x_test : array_like, shape (C, n, D)
    sequences : array_like of int, shape (L, K, M)
    learner : str
        Strategy name, entry point or import path.
    config : clkit.edge.learners.LearnerConfig, optional
    seed : int
    model_factory : callable, optional
        ``model_factory(in_features=D, num_classes=C)`` (default: the batched learners'
        one-hidden-layer MLP of width ``config.hidden``).
    progress : callable, optional
        Called after each task position (once all sequences have trained it).
    num_threads : int or None
        Torch threads while training.
    strategy_kwargs : dict, optional
        Extra keyword arguments of the strategy (they may override ``lr``, ``momentum``,
        ``epochs`` and ``batch_size``).
    device, precision : optional
        Where and in which autocast dtype the strategy trains (a ``clkit.device.RunDevice``, a
        ``torch.device`` or a name; default the CPU, fp32), as in
        :func:`clkit.edge.learners.train_strategy_sequences`.

    Returns
    -------
    dict
        ``acc_matrix`` (L, K, K), ``seen_acc`` (L, K), ``avg_acc`` (L,), ``final_acc`` (L,).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = (rng.normal(size=(4, 20, 3)) + 3 * np.eye(4, 3)[:, None, :]).astype("float32")
    >>> out = train_sequences_sequentially(x, x, [[[0, 1], [2, 3]]], "naive")
    >>> out["acc_matrix"].shape, out["avg_acc"].shape
    ((1, 2, 2), (1,))
    """
    from .edge.learners import LearnerConfig, train_strategy_sequences

    strategy_class = _resolve(learner, "learners")
    return train_strategy_sequences(x_train, x_test, sequences, strategy_class,
                                    LearnerConfig() if config is None else config, seed=seed,
                                    model_factory=model_factory, progress=progress, num_threads=num_threads,
                                    strategy_kwargs=strategy_kwargs, device=device, precision=precision)
