"""Difficulty of each dataset and the choice of the curriculum's tasks (the paper's Table 2).

The difficulty ordering is *computed*: the backbone is trained on each dataset alone
and its test accuracy ranks the datasets -- highest accuracy first is the direct
curriculum (M2I, "most easy to ill"), the reverse the inverse one (I2M).
:func:`difficulty_table` and :func:`select_tasks` compute it from single-task
accuracies over several seeds and keep only tasks whose difficulties differ by more
than their seed spread.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .._validate import check_int

__all__ = ["curriculum_orders", "difficulty_table", "select_tasks", "Curriculum", "choose_curriculum"]


def curriculum_orders(accuracy: dict):
    """Direct (M2I: easiest, i.e. most accurate, first) and inverse (I2M) orders.

    Ties are broken by name so the order is deterministic.

    Examples
    --------
    >>> curriculum_orders({"cifar10": 0.4, "mnist": 0.99, "svhn": 0.8})
    (['mnist', 'svhn', 'cifar10'], ['cifar10', 'svhn', 'mnist'])
    """
    m2i = sorted(accuracy, key=lambda n: (-accuracy[n], n))
    return m2i, m2i[::-1]


def difficulty_table(runs: dict) -> dict:
    """Mean and seed spread of single-task accuracies measured over several seeds.

    Parameters
    ----------
    runs : dict name -> list of float
        One accuracy per seed.

    Returns
    -------
    dict name -> {"mean": float, "sd": float, "n": int}
        ``sd`` is the sample standard deviation over seeds (NaN for one seed).

    Examples
    --------
    >>> difficulty_table({"a": [0.8, 0.9, 1.0]})["a"]
    {'mean': 0.9, 'sd': 0.1, 'n': 3}
    """
    out = {}
    for name, values in runs.items():
        v = np.asarray(values, dtype=float)
        if v.ndim != 1 or len(v) == 0:
            raise ValueError(f"runs: {name!r} needs a list of accuracies, one per seed, got {values!r}")
        out[name] = {"mean": round(float(v.mean()), 12),
                     "sd": round(float(v.std(ddof=1)), 12) if len(v) > 1 else float("nan"), "n": len(v)}
    return out


def _gap_threshold(d1: dict, d2: dict) -> float:
    """Seed spread of the difference of two difficulties: the root sum of their variances."""
    return math.sqrt(d1["sd"] ** 2 + d2["sd"] ** 2)


def select_tasks(table: dict, num_tasks: int = 0):
    """Choose the curriculum's tasks so that neighbouring difficulties differ by more than the seed spread.

    Candidates are sorted by mean single-task accuracy (easiest first). Two neighbours
    are *separated* when their difference in mean accuracy exceeds
    :math:`\\sqrt{sd_1^2 + sd_2^2}`, the seed spread of that difference. Among subsets of
    ``num_tasks`` candidates (``0``: of any size, the largest one whose neighbours are all
    separated), the one whose smallest neighbour gap is the largest multiple of its spread
    wins; ties go to the earlier names.

    Parameters
    ----------
    table : dict
        From :func:`difficulty_table` (at least 2 seeds, so the spread is known).
    num_tasks : int
        ``0`` or between 2 and the number of candidates.

    Returns
    -------
    names : list of str
        The chosen tasks, easiest first (the M2I order).
    gaps : list of dict
        For each neighbouring pair: ``easier``, ``harder``, ``gap``, ``spread``, ``separated``.

    Examples
    --------
    >>> t = {"a": {"mean": 0.95, "sd": 0.01, "n": 3}, "b": {"mean": 0.94, "sd": 0.02, "n": 3},
    ...      "c": {"mean": 0.70, "sd": 0.03, "n": 3}}
    >>> select_tasks(t)[0]                     # a and b are tied within their spread
    ['a', 'c']
    >>> [g["separated"] for g in select_tasks(t, num_tasks=3)[1]]
    [False, True]
    """
    names = sorted(table, key=lambda n: (-table[n]["mean"], n))
    if len(names) < 2:
        raise ValueError(f"table: need at least 2 candidate tasks, got {names}")
    if any(not np.isfinite(table[n]["sd"]) for n in names):
        raise ValueError("table: the seed spread is unknown (one seed); measure difficulty with at least 2 seeds")
    num_tasks = check_int("num_tasks", num_tasks, low=0, high=len(names))
    if num_tasks == 1:
        raise ValueError(f"num_tasks must be 0 (as many as are separated) or 2..{len(names)}, got 1")

    def gaps(sub):
        return [{"easier": a, "harder": b, "gap": table[a]["mean"] - table[b]["mean"],
                 "spread": _gap_threshold(table[a], table[b]),
                 "separated": bool(table[a]["mean"] - table[b]["mean"] > _gap_threshold(table[a], table[b]))}
                for a, b in zip(sub, sub[1:])]

    def score(sub):
        g = gaps(sub)
        return min(x["gap"] / x["spread"] if x["spread"] > 0 else math.inf for x in g)

    sizes = [num_tasks] if num_tasks else range(len(names), 1, -1)
    best = None
    for k in sizes:
        subs = [list(c) for c in itertools.combinations(names, k)]
        ok = [c for c in subs if all(x["separated"] for x in gaps(c))]
        pool = ok or (subs if num_tasks or k == 2 else [])
        if pool:
            best = max(pool, key=score)   # max keeps the first of equals
            break
    return best, gaps(best)


@dataclass
class Curriculum:
    """The tasks of a curriculum, chosen by measured difficulty, and its two orders.

    Attributes
    ----------
    accuracy : dict seed -> dataset -> float
        Single-task accuracies per seed.
    table : dict
        :func:`difficulty_table` of ``accuracy`` over seeds.
    tasks : list of str
        The chosen tasks, easiest first (the M2I order).
    gaps : list of dict
        Neighbouring difficulty gaps (:func:`select_tasks`; empty for one seed).
    """

    accuracy: dict
    table: dict
    tasks: list
    gaps: list

    @property
    def m2i(self) -> list:
        """Easiest first (the direct curriculum)."""
        return list(self.tasks)

    @property
    def i2m(self) -> list:
        """Hardest first (the inverse curriculum)."""
        return list(self.tasks)[::-1]

    @property
    def orders(self) -> dict:
        """``{"M2I": ..., "I2M": ...}``."""
        return {"M2I": self.m2i, "I2M": self.i2m}

    @property
    def separated(self) -> bool:
        """Whether every pair of neighbouring tasks differs beyond its seed spread."""
        return all(g["separated"] for g in self.gaps) if self.gaps else False

    @property
    def seeds(self) -> list:
        return list(self.accuracy)

    @property
    def ranked(self) -> list:
        """Every candidate, easiest first."""
        return sorted(self.table, key=lambda n: -self.table[n]["mean"])


def choose_curriculum(accuracy: dict, num_tasks: int = 0) -> Curriculum:
    """The curriculum's tasks from single-task accuracies over seeds.

    With several seeds, :func:`select_tasks`; with one seed (no spread known) every
    candidate, easiest first.

    Parameters
    ----------
    accuracy : dict seed -> dataset -> float
    num_tasks : int
        As for :func:`select_tasks`.

    Examples
    --------
    >>> c = choose_curriculum({0: {"a": 0.9, "b": 0.5}, 1: {"a": 0.92, "b": 0.52}})
    >>> c.orders, c.separated
    ({'M2I': ['a', 'b'], 'I2M': ['b', 'a']}, True)
    """
    seeds = list(accuracy)
    names = list(accuracy[seeds[0]])
    table = difficulty_table({n: [accuracy[s][n] for s in seeds] for n in names})
    if len(seeds) > 1:
        tasks, gaps = select_tasks(table, num_tasks)
    else:
        tasks, gaps = curriculum_orders({n: d["mean"] for n, d in table.items()})[0], []
    return Curriculum(accuracy, table, tasks, gaps)
