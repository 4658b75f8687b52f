"""Strategy names: built-ins, entry points and import paths resolved to their classes.

The one place where a strategy name becomes a class (issue 42). It sits below both
:mod:`clkit.strategies` (whose ``make_strategy`` and ``available_strategies`` call it,
and whose registry falls back to :func:`resolve_strategy` for a name no module
registered) and :mod:`clkit.plugins` (which re-exports its public names), so neither of
those imports the other's way up.

- built-ins: every strategy module registers its classes in
  :data:`clkit.strategies.base._REGISTRY` (:mod:`clkit.strategies._all` imports them all);
- entry points of the group ``clkit.strategies`` (:data:`ENTRY_POINT_GROUP`) of an
  installed distribution, imported on first use;
- import paths ``"package.module:ClassName"`` of a :class:`clkit.strategies.Strategy`
  subclass.

An entry point or import path, once resolved, is registered under its name, so that
``make_strategy(name, model)`` builds it like a built-in.
"""

from __future__ import annotations

import inspect

from .._import_path import is_plugin_name, load_object
from .base import _REGISTRY, Strategy

__all__ = ["ENTRY_POINT_GROUP", "strategy_entry_points", "available_strategies", "resolve_strategy"]

ENTRY_POINT_GROUP = "clkit.strategies"


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
    from . import _all  # noqa: F401  (registers every built-in strategy)

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


def _check_strategy_class(obj, name: str, parameter: str):
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
