"""Import paths ``"package.module:Name"``: recognise one, load the object behind it.

A leaf module (it imports nothing of clkit), shared by the strategy registry
(:mod:`clkit.strategies.registry`: strategies given by import path) and by
:mod:`clkit.plugins` (backbone factories).
"""

from __future__ import annotations

import importlib

__all__ = ["is_plugin_name", "load_object"]


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
