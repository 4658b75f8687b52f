"""How many seeds a study needs: the verdict rule's power, planned from a pilot run.

A pilot run (any notebook's ``results.json``; ``smoke`` or ``default`` sizes) records every
verdict with its per-seed values (:class:`clkit.stats.Verdict`: ``a``, ``b``). From each row's
spread of paired differences, :func:`plan` says how many pairs (seeds, series, orders) the same
rule needs to detect a stated effect -- or the effect the pilot observed -- with the stated power
at ``alpha / family`` -- the level at which Holm decides a row whatever the family's other rows do,
so the stated power holds under the rule as applied (a row's own Holm step does not: issue 53) --
on the row's scale (``log_ratio`` rows on log ratios) with the spread floored at the row's
resolution, as the rule floors it. The figures are those the verdict rows print
(``Verdict.pairs_for_observed``, ``Verdict.mde``).
``clkit plan RESULTS.json`` prints the table.

Examples
--------
>>> rows = [{"comparison": "ewc − finetune", "a": [0.52, 0.48, 0.55, 0.50], "b": [0.50, 0.47, 0.51, 0.49],
...          "family": 3, "alpha": 0.05, "role": "finding", "decision": "no difference"}]
>>> t = plan(rows, effect_sds=2.0)
>>> int(t.loc["ewc − finetune", "pairs for 2 spreads"]), int(t.loc["ewc − finetune", "pairs for the observed"])
(6, 9)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .stats import ALPHA, NOT_TESTABLE, POWER, min_detectable_effect, pairs_needed
from .stats.rule import _differences

__all__ = ["plan", "verdict_rows", "PILOT_PAIRS"]

#: a pilot with fewer pairs than this gets a caution: its spread is a rough guess (chi-square with
#: n - 1 degrees of freedom: at 2 pairs the sd is off by a factor 2 or more in 43 % of pilots)
PILOT_PAIRS = 4


def verdict_rows(results) -> list[dict]:
    """The verdict dicts of a ``results.json`` (its path, the run folder holding it, or its loaded dict):
    every list of dicts with ``comparison``, ``a`` and ``decision`` under ``results`` (``verdicts``, and
    lists nested in dicts)."""
    if not isinstance(results, dict):
        path = Path(results)
        if path.is_dir() and (path / "results.json").is_file():   # a run folder (clkit run's OUT/NOTEBOOK)
            path = path / "results.json"
        if not path.is_file():
            where = f"{str(results)!r} is a folder without results.json" if path.is_dir() else \
                f"no such file {str(results)!r}"
            raise ValueError(f"results must be a run's results.json or its run folder: {where}")
        try:
            results = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ValueError(f"results {str(path)!r} is not a results.json (not JSON)") from None
    found = []

    def walk(obj):
        if isinstance(obj, list):
            if obj and all(isinstance(v, dict) and {"comparison", "decision"} <= set(v) for v in obj):
                found.extend(obj)
            else:
                for v in obj:
                    walk(v)
        elif isinstance(obj, dict):
            for v in obj.values():
                walk(v)

    walk(results.get("results", results))
    return found


def plan(results, *, effect: float | None = None, effect_sds: float | None = 2.0, power: float = POWER,
         family: int | None = None):
    """Pairs needed per verdict row of a pilot run.

    Parameters
    ----------
    results : path, dict or list of dict
        A ``results.json`` (path or loaded), or verdict dicts.
    effect : float, optional
        An effect in the metric's own units to plan for (as ``effect - 0``).
    effect_sds : float, optional
        An effect in spreads of the row's paired differences (default 2).
    power : float
        Target power (default 0.8).
    family : int, optional
        The family size to plan at (default: each row's own Holm family).

    Returns
    -------
    pandas.DataFrame
        One row per finding verdict: family, pairs in the pilot, sd of the differences, the
        observed effect, and the pairs needed for the stated effect(s) and for the observed one.
    """
    import pandas as pd

    if not (0 < power < 1):
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    rows = results if isinstance(results, list) else verdict_rows(results)
    out = []
    for v in rows:
        if v.get("role", "finding") != "finding" or v.get("decision") == NOT_TESTABLE or not v.get("a"):
            continue
        scale = v.get("scale") or "difference"
        d = _differences(v["a"], v["b"] if v.get("b") else None, scale)
        if d.size < 2:
            continue
        res = v.get("resolution")
        res = float(res) if res is not None and np.isfinite(float(res)) else 0.0
        sd, mean = max(float(d.std(ddof=1)), res), float(d.mean())     # the spread the rule uses
        m = family or int(v.get("family", 1) or 1)
        alpha = float(v.get("alpha", ALPHA) or ALPHA)
        row = {"comparison": v["comparison"], "family": m, "pairs now": int(d.size), "sd of differences": sd,
               "observed effect": mean, "detectable now (α/family)": min_detectable_effect(int(d.size), sd, alpha / m)}
        if effect_sds is not None:
            row[f"pairs for {effect_sds:g} spreads"] = pairs_needed(effect_sds, 1.0, family=m, alpha=alpha,
                                                                   power_target=power)
        if effect is not None:
            row[f"pairs for effect {effect:g}"] = pairs_needed(effect, sd, family=m, alpha=alpha, power_target=power)
        row["pairs for the observed"] = pairs_needed(mean, sd, family=m, alpha=alpha, power_target=power)
        out.append(row)
    if not out:
        raise ValueError("no finding verdict with per-pair values (a, b) found; run the notebook with this "
                         "version of clkit first")
    return pd.DataFrame(out).set_index("comparison")
