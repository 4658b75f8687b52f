"""Per-learner settings: the notebooks' ``learner_kwargs`` parameter.

Every notebook takes one parameter ``learner_kwargs`` mapping a learner name to the
keyword arguments it is built with, e.g. ``{"ewc": {"ewc_lambda": 100}, "si":
{"si_lambda": 10}}``. A notebook states, per learner, which keywords it accepts (for a
:class:`clkit.strategies.Strategy` subclass: its constructor's keyword arguments, found
by :func:`allowed_keywords`; for a notebook's own learner: the list it documents) and
calls :func:`check_learner_kwargs` in its validation cell, so that an unknown learner,
an unknown keyword or a value of the wrong type fails before any training with a
message naming the learner, the keyword and what is allowed. The checked settings are
recorded in ``results.json`` with the other parameters; from the command line a single
setting is ``clkit run NN -p learner_kwargs.ewc.ewc_lambda 100`` and a sweep grid varies
``learner_kwargs.ewc.ewc_lambda``.

Examples
--------
>>> from clkit.strategies.importance import EWC
>>> allowed = {"ewc": allowed_keywords(EWC, exclude=("model",)), "naive": {}}
>>> check_learner_kwargs({"ewc": {"ewc_lambda": 100}}, allowed)
{'ewc': {'ewc_lambda': 100}}
>>> check_learner_kwargs({"ewc": {"lam": 100}}, allowed)
Traceback (most recent call last):
...
ValueError: learner_kwargs['ewc']: unknown keyword 'lam'; ewc accepts ...
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any, Iterable, Mapping

__all__ = ["allowed_keywords", "check_learner_kwargs", "settings_for", "RUN_KEYWORDS"]

#: keywords every learner of a run gets from the notebook's own parameters, never per learner
RUN_KEYWORDS = {"device": "device", "precision": "precision"}

_ANY = object()


def allowed_keywords(target, exclude: Iterable[str] = ()) -> dict[str, Any]:
    """Keyword arguments a class (its ``__init__`` through the MRO) or callable accepts.

    A constructor that forwards ``**kwargs`` to its base class contributes its own named
    arguments and the base's; the walk stops at the first ``__init__`` without
    ``**kwargs``. A callable whose keywords cannot be listed (``**kwargs`` all the way)
    accepts anything and is reported as ``{"**": ...}``.

    Parameters
    ----------
    target : type or callable
    exclude : iterable of str
        Names the notebook supplies itself (``model``, sizes, ...), not user settings.

    Returns
    -------
    dict
        ``{keyword: default}`` (``inspect.Parameter.empty`` for a required one).

    Examples
    --------
    >>> from clkit.strategies.importance import SI
    >>> kw = allowed_keywords(SI, exclude=("model",))
    >>> kw["si_lambda"], kw["si_eps"], "lr" in kw, "model" in kw
    (1.0, 0.1, True, False)
    """
    exclude = set(exclude) | {"self"}
    out: dict[str, Any] = {}
    chain = [c.__init__ for c in inspect.getmro(target) if "__init__" in vars(c)] if isinstance(target, type) \
        else [target]
    open_ended = True
    for fn in chain:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        var_kw = False
        for name, p in sig.parameters.items():
            if p.kind is p.VAR_KEYWORD:
                var_kw = True
            elif p.kind is not p.VAR_POSITIONAL and name not in exclude:
                out.setdefault(name, p.default)
        if not var_kw:
            open_ended = False
            break
    if open_ended:
        out["**"] = _ANY
    return out


def _type_ok(value, default) -> bool:
    if default is inspect.Parameter.empty or default is None or default is _ANY:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and not isinstance(value, bool) \
            and (isinstance(default, float) or isinstance(value, int))
    if isinstance(default, str):
        return isinstance(value, str)
    return True


def check_learner_kwargs(learner_kwargs, allowed: Mapping[str, Mapping | Iterable[str]], *,
                         parameter: str = "learner_kwargs", learners: Iterable[str] | None = None) -> dict:
    """Validate per-learner settings; return them as a plain ``{learner: {keyword: value}}``.

    Parameters
    ----------
    learner_kwargs : dict
        The notebook parameter: ``{learner: {keyword: value}}``.
    allowed : mapping
        Per learner of this run, the keywords it accepts: a ``{keyword: default}`` mapping
        (from :func:`allowed_keywords`; a value must then have the default's type) or an
        iterable of names.
    parameter : str
        The parameter's name in messages.
    learners : iterable of str, optional
        The learners this run trains (default: the keys of ``allowed``); settings for a
        learner not in the run are refused (they would silently do nothing).

    Raises
    ------
    TypeError
        Not a mapping of mappings, or a value of the wrong type (named).
    ValueError
        A learner not in this run, or a keyword the learner does not accept (the message
        lists the accepted keywords and the closest match).

    Examples
    --------
    >>> check_learner_kwargs({"agem": {"memory_size": 500}}, {"agem": ["memory_size", "sample_size"]})
    {'agem': {'memory_size': 500}}
    >>> check_learner_kwargs({"ewc": {"ewc_lambda": 1}}, {"naive": []})
    Traceback (most recent call last):
    ...
    ValueError: learner_kwargs: 'ewc' is not a learner of this run; settings can be given for ['naive'] (to drop a parameter set's settings: -p learner_kwargs '{}')
    >>> check_learner_kwargs({"ewc": {"device": "cuda"}}, {"ewc": {"ewc_lambda": 1.0}})
    Traceback (most recent call last):
    ...
    ValueError: learner_kwargs['ewc']: 'device' is set for the whole run by the notebook's 'device' parameter (e.g. -p device cuda), not per learner
    >>> check_learner_kwargs({"ewc": {"ewc_lambda": "big"}}, {"ewc": {"ewc_lambda": 1.0}})
    Traceback (most recent call last):
    ...
    TypeError: learner_kwargs['ewc']['ewc_lambda'] must be float like its default 1.0, got str 'big'
    """
    if learner_kwargs is None:
        return {}
    if not isinstance(learner_kwargs, Mapping):
        raise TypeError(f"{parameter} must be a mapping {{learner: {{keyword: value}}}}, got "
                        f"{type(learner_kwargs).__name__} {learner_kwargs!r}")
    run = list(learners) if learners is not None else list(allowed)
    out = {}
    for learner, kwargs in learner_kwargs.items():
        if learner not in run:
            raise ValueError(f"{parameter}: {learner!r} is not a learner of this run; settings can be given "
                             f"for {run} (to drop a parameter set's settings: -p {parameter} '{{}}')")
        if not isinstance(kwargs, Mapping):
            raise TypeError(f"{parameter}[{learner!r}] must be a mapping {{keyword: value}}, got "
                            f"{type(kwargs).__name__} {kwargs!r}")
        spec = allowed.get(learner, {})
        spec = dict(spec) if isinstance(spec, Mapping) else {k: inspect.Parameter.empty for k in spec}
        open_ended = "**" in spec
        names = sorted(k for k in spec if k != "**")
        for key, value in kwargs.items():
            if not isinstance(key, str):
                raise TypeError(f"{parameter}[{learner!r}]: keywords must be strings, got {key!r}")
            if key in RUN_KEYWORDS:
                raise ValueError(f"{parameter}[{learner!r}]: {key!r} is set for the whole run by the notebook's "
                                 f"{RUN_KEYWORDS[key]!r} parameter (e.g. -p {RUN_KEYWORDS[key]} "
                                 f"{'cuda' if key == 'device' else 'bf16'}), not per learner")
            if key not in spec and not open_ended:
                close = difflib.get_close_matches(key, names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                what = f"accepts {names}" if names else "takes no settings"
                raise ValueError(f"{parameter}[{learner!r}]: unknown keyword {key!r}; {learner} {what}{hint}")
            default = spec.get(key, inspect.Parameter.empty)
            if not _type_ok(value, default):
                raise TypeError(f"{parameter}[{learner!r}][{key!r}] must be {type(default).__name__} like its "
                                f"default {default!r}, got {type(value).__name__} {value!r}")
        out[str(learner)] = dict(kwargs)
    return out


def settings_for(learner: str, defaults: Mapping | None, learner_kwargs: Mapping | None) -> dict:
    """A learner's keyword arguments: the notebook's ``defaults`` updated by the user's settings.

    Examples
    --------
    >>> settings_for("ewc", {"lr": 0.01, "ewc_lambda": 1.0}, {"ewc": {"ewc_lambda": 100}})
    {'lr': 0.01, 'ewc_lambda': 100}
    >>> settings_for("naive", {"lr": 0.01}, {"ewc": {"ewc_lambda": 100}})
    {'lr': 0.01}
    """
    out = dict(defaults or {})
    out.update((learner_kwargs or {}).get(learner, {}))
    return out
