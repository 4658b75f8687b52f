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

import importlib
import inspect
from typing import Callable

import numpy as np

__all__ = ["ENTRY_POINT_GROUP", "CAPABILITIES", "NOTEBOOK_NEEDS", "FACTORY_SIGNATURES", "capabilities",
           "strategy_entry_points", "available_strategies", "load_object", "resolve_strategy",
           "is_plugin_name", "require_capabilities", "split_learners", "use_strategies", "resolve_factory",
           "build_model", "train_sequences_sequentially"]

ENTRY_POINT_GROUP = "clkit.strategies"

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

def strategy_entry_points() -> dict:
    """Entry points of the group ``clkit.strategies`` of every installed distribution.

    Returns ``{name: importlib.metadata.EntryPoint}``; nothing is imported. The first
    distribution on ``sys.path`` wins when two declare the same name.
    """
    from importlib.metadata import entry_points

    out = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        out.setdefault(ep.name, ep)
    return out


def _builtin_registry() -> dict:
    from .strategies import _all  # noqa: F401  (registers every built-in strategy)
    from .strategies.base import _REGISTRY

    return _REGISTRY


def _origin_of_entry_point(ep) -> str:
    dist = getattr(ep, "dist", None)
    who = f"{dist.name} {dist.version}" if dist is not None else "an installed distribution"
    return f"entry point of {who} ({ep.value})"


def available_strategies() -> dict:
    """Every strategy name usable in the notebooks, and where it comes from.

    Returns
    -------
    dict
        ``{name: origin}``, sorted by name. ``origin`` is ``"built-in (module:Class)"``,
        ``"entry point of DIST VERSION (module:Class)"`` (not imported until used) or
        ``"import path"`` for a class registered under its ``"package.module:Class"``.

    Examples
    --------
    >>> available_strategies()["ewc"]
    'built-in (clkit.strategies.importance:EWC)'
    """
    reg = _builtin_registry()
    out = {}
    for name, cls in reg.items():
        if getattr(cls, "_clkit_origin", None) and cls._clkit_origin.get(name):
            out[name] = cls._clkit_origin[name]
        else:
            out[name] = f"built-in ({cls.__module__}:{cls.__qualname__})"
    for name, ep in strategy_entry_points().items():
        out.setdefault(name, _origin_of_entry_point(ep))
    return _StrategyNames(sorted(out.items()))


class _StrategyNames(dict):
    """``{name: origin}``; ``"package.module:Class" in names`` is true when that path resolves.

    So a check ``name in available_strategies()`` accepts an import path in any process
    (e.g. a worker that has not registered it yet).
    """

    def __contains__(self, name):
        if dict.__contains__(self, name):
            return True
        if is_plugin_name(name):
            try:
                resolve_strategy(name)
            except (ValueError, TypeError):
                return False
            return True
        return False


def is_plugin_name(name) -> bool:
    """Whether ``name`` looks like an import path ``"package.module:Name"``."""
    return isinstance(name, str) and ":" in name


def load_object(path: str, *, parameter: str = "learner"):
    """Import ``"package.module:Name"`` (``Name`` may be dotted) and return the object.

    Raises ``ValueError`` naming the parameter and the path when the module cannot be
    imported or has no such attribute.

    Examples
    --------
    >>> load_object("clkit.models.mlp:MLP").__name__
    'MLP'
    >>> load_object("clkit.models.mlp:Nope", parameter="backbone")
    Traceback (most recent call last):
    ...
    ValueError: backbone: 'clkit.models.mlp:Nope' cannot be loaded: module 'clkit.models.mlp' has no attribute 'Nope'
    """
    if not isinstance(path, str) or path.count(":") != 1 or not all(path.split(":")):
        raise ValueError(f"{parameter}: {path!r} is not an import path; allowed: 'package.module:Name'")
    mod_name, attr = path.split(":")
    try:
        obj = importlib.import_module(mod_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's to see
        raise ValueError(f"{parameter}: {path!r} cannot be loaded: importing {mod_name!r} failed with "
                         f"{type(exc).__name__}: {exc}") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{parameter}: {path!r} cannot be loaded: module {mod_name!r} has no attribute "
                             f"{attr!r}")
        obj = getattr(obj, part)
    return obj


def _check_strategy_class(obj, name: str, parameter: str):
    from .strategies.base import Strategy

    if not (inspect.isclass(obj) and issubclass(obj, Strategy)):
        what = f"class {obj.__name__}" if inspect.isclass(obj) else type(obj).__name__
        raise TypeError(f"{parameter}: {name!r} must name a subclass of clkit.strategies.Strategy, got {what}")
    return obj


def _register(name: str, cls, origin: str):
    reg = _builtin_registry()
    if "name" not in vars(cls):
        cls.name = name
    if "_clkit_origin" not in vars(cls):
        cls._clkit_origin = {}
    cls._clkit_origin[name] = origin
    dict.__setitem__(reg, name, cls)
    return cls


def resolve_strategy(name: str, *, parameter: str = "strategy"):
    """The strategy class behind ``name``: a registry name, an entry point or an import path.

    Entry points and import paths are imported on first use and registered, so that
    ``clkit.strategies.make_strategy(name, model)`` builds them like built-ins.

    Raises
    ------
    ValueError
        Unknown name (the message lists the available names), or an import path /
        entry point that cannot be imported.
    TypeError
        The object is not a ``clkit.strategies.Strategy`` subclass.

    Examples
    --------
    >>> resolve_strategy("ewc").__name__
    'EWC'
    >>> resolve_strategy("clkit.strategies.importance:SI").__name__
    'SI'
    """
    if not isinstance(name, str):
        raise TypeError(f"{parameter} must be a strategy name or 'package.module:ClassName', "
                        f"got {type(name).__name__} {name!r}")
    reg = _builtin_registry()
    if name in reg:
        return reg[name]
    if is_plugin_name(name):
        cls = _check_strategy_class(load_object(name, parameter=parameter), name, parameter)
        return _register(name, cls, "import path")
    eps = strategy_entry_points()
    if name in eps:
        ep = eps[name]
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001
            raise ValueError(f"{parameter}: entry point {name!r} = {ep.value!r} ({ENTRY_POINT_GROUP}) cannot be "
                             f"loaded: {type(exc).__name__}: {exc}") from exc
        cls = _check_strategy_class(obj, name, parameter)
        return _register(name, cls, _origin_of_entry_point(ep))
    allowed = sorted(set(reg) | set(eps))
    raise ValueError(f"{parameter} must be one of {allowed} or an import path 'package.module:ClassName', "
                     f"got {name!r}")


# --------------------------------------------------------------------------- capabilities

def capabilities(cls) -> frozenset:
    """The capabilities a strategy class declares (see :data:`CAPABILITIES`).

    Examples
    --------
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
    cls = resolve_strategy(learner, parameter=parameter)
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

    strategy_class = resolve_strategy(learner, parameter="learners")
    return train_strategy_sequences(x_train, x_test, sequences, strategy_class,
                                    LearnerConfig() if config is None else config, seed=seed,
                                    model_factory=model_factory, progress=progress, num_threads=num_threads,
                                    strategy_kwargs=strategy_kwargs, device=device, precision=precision)
