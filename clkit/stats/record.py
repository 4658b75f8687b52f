"""Verdicts derived again from their record (``results.json``): :func:`rederive`."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from .controls import judge_controls
from .rule import CONTROLS, holm, paired
from .verdict import ALPHA, Verdict

__all__ = ["rederive"]


def rederive(rows: Sequence[dict]) -> list[Verdict]:
    """The verdicts of a ``results.json`` decided again from their recorded values alone.

    Each row (a ``Verdict.to_dict()``) is decided again by :func:`paired` from its ``a`` and ``b``
    with its own comparison, role, expectation, scope, level, test, scale and resolution; rows that
    share a ``family_name`` are Holm-adjusted together as they were, and null controls judged
    together (``family_name == "controls"``) are judged together again. Equal to the recorded
    verdicts when the record is whole (``tests`` check it for every notebook's smoke run).

    Examples
    --------
    >>> vs = holm([paired([0.3, 0.2, 0.4], [0.0] * 3, comparison="x"),
    ...            paired([0.1, -0.1, 0.05], [0.0] * 3, comparison="y")], name="f")
    >>> again = rederive([v.to_dict() for v in vs])
    >>> [(v.comparison, v.decision, round(v.p, 6) == round(w.p, 6)) for v, w in zip(again, vs)]
    [('x', 'no difference', True), ('y', 'no difference', True)]
    """
    out, families, controls = [], {}, []
    for i, r in enumerate(rows):
        rule = str(r.get("rule", ""))
        test = "sign_flip" if rule.startswith("paired sign-flip") else "t"
        res = r.get("resolution")
        res = float(res) if res is not None and np.isfinite(float(res)) and float(res) > 0 else None
        v = paired(r["a"], r["b"] or None, comparison=r["comparison"], higher=r.get("higher", "higher"),
                   lower=r.get("lower", "lower"), test=test, alpha=r.get("alpha", ALPHA), role=r.get("role", "finding"),
                   expect=r.get("expect"), scope=r.get("scope", "primary"), scale=r.get("scale") or "difference",
                   resolution=res)
        if r.get("guards"):
            v = replace(v, guards=r["guards"])
        out.append(v)
        if r.get("family_name") == CONTROLS:
            controls.append(i)
        elif r.get("family_name"):
            families.setdefault(r["family_name"], []).append(i)
    for name, idx in families.items():
        for i, v in zip(idx, holm([out[i] for i in idx], name=name)):
            out[i] = replace(v, guards=out[i].guards)
    if controls:
        for i, v in zip(controls, judge_controls([out[i] for i in controls])):
            out[i] = v
    return out
