"""The curriculum paper's Tables 3-8 layout, filled from one run per scenario.

Each of the paper's Tables 3-8 is one backbone and one order (M2I or I2M): the strategies
as rows, grouped by type (regularization, rehearsal, architectural, baseline, top to
bottom), and per learning setting (class-incremental, task-incremental) the average
performance -- ACC, BWT and, in the task-incremental setting only, FWT -- with the ACC rank.
A notebook 04 run covers one scenario, so :func:`paper_tables` takes the results of one
run per scenario (``results.json``'s ``"results"``, or the notebook's own record) and lays
their seed means out that way.
"""

from __future__ import annotations

import pandas as pd

from .paper_numbers import PAPER_BACKBONES, paper_acc

__all__ = ["GROUPS", "UNITS", "paper_tables"]

#: the unit of the tables' cells, named in their header (the metric level's name)
UNITS = "ACC, BWT, FWT as fractions (0-1); rank 1 = highest ACC"

#: the paper's grouping of its strategies (Tables 3-8, top to bottom); generative replay is
#: rehearsal with generated samples (pseudo-rehearsal, Sect. 2.2)
GROUPS = {"regularization": ("ewc", "lwf", "si", "mas"),
          "rehearsal": ("gdumb", "replay", "generative_replay", "gem", "agem"),
          "architectural": ("pnn", "cwr"),
          "baseline": ("naive", "cumulative", "mste")}

_SCENARIOS = {"class": "class-incremental", "task": "task-incremental"}


def _group(name: str) -> str:
    return next((g for g, members in GROUPS.items() if name in members), "other")


def paper_tables(runs: dict, *, bwt: str = "BWT_eq2", digits: int = 3, backbone: str | None = None) -> dict:
    """The paper's Tables 3-8 layout: ``{order: DataFrame}``, one table per order.

    Parameters
    ----------
    runs : dict
        ``{scenario: results}`` with ``scenario`` in ``{"class", "task"}`` and ``results``
        a notebook 04 record (its ``"metrics"``: order -> strategy -> ``ACC``, ``BWT_eq2``,
        ``BWT_code``, ``FWT``, ``rank``, seed means).
    bwt : {"BWT_eq2", "BWT_code"}
        Which BWT the tables show: the paper's Eq. 2 or the authors' code (see
        :mod:`clkit.curriculum.evaluate`).
    digits : int
        Rounding of the shown values.
    backbone : str, optional
        The runs' backbone: with one of the paper's (:data:`clkit.curriculum.paper_numbers.PAPER_BACKBONES`)
        a column ``ACC (paper)`` follows ``ACC`` in each setting, the paper's value where its text
        quotes one (:func:`clkit.curriculum.paper_numbers.paper_acc`), else NaN.

    Returns
    -------
    dict
        ``{order: DataFrame}``; rows ``(group, strategy)`` in the paper's group order,
        columns ``(setting, metric)`` with metrics ``ACC``, ``BWT``, ``FWT`` (task-incremental
        only) and ``rank`` (1 = highest ACC in that run). ACC, BWT and FWT are fractions (0-1, as
        clkit records them; the paper prints percent): the header says so (the columns' level names,
        :data:`UNITS`). A strategy a run did not train is NaN
        there (e.g. PNN, task-incremental only).

    Examples
    --------
    >>> run = {"metrics": {"M2I": {"ewc": {"ACC": 0.5, "BWT_eq2": -0.2, "BWT_code": -0.1, "FWT": 0.0, "rank": 2},
    ...                            "naive": {"ACC": 0.6, "BWT_eq2": -0.3, "BWT_code": -0.2, "FWT": 0.0, "rank": 1}}}}
    >>> t = paper_tables({"class": run})["M2I"]
    >>> t.index.tolist(), t.columns.tolist()
    ([('regularization', 'ewc'), ('baseline', 'naive')], [('class-incremental', 'ACC'), ('class-incremental', 'BWT'), ('class-incremental', 'rank')])
    >>> paper_tables({"class": run}, backbone="wide_vgg9_bn")["M2I"].columns.get_level_values(1).tolist()
    ['ACC', 'ACC (paper)', 'BWT', 'rank']
    >>> paper_tables({"domain": run})
    Traceback (most recent call last):
    ...
    ValueError: runs must be keyed by scenario, one of ['class', 'task'], got ['domain']
    """
    if not isinstance(runs, dict) or not runs:
        raise ValueError(f"runs must be a non-empty dict {{scenario: results}}, got {runs!r}")
    bad = [s for s in runs if s not in _SCENARIOS]
    if bad:
        raise ValueError(f"runs must be keyed by scenario, one of {list(_SCENARIOS)}, got {bad}")
    if bwt not in ("BWT_eq2", "BWT_code"):
        raise ValueError(f"bwt must be one of ['BWT_eq2', 'BWT_code'], got {bwt!r}")
    orders = sorted({o for r in runs.values() for o in r["metrics"]}, key=lambda o: (o != "M2I", o))
    out = {}
    for order in orders:
        names = sorted({k for r in runs.values() for k in r["metrics"].get(order, {})},
                       key=lambda k: (list(GROUPS).index(_group(k)) if _group(k) in GROUPS else len(GROUPS),
                                      GROUPS.get(_group(k), (k,)).index(k) if _group(k) in GROUPS else 0, k))
        columns, data = [], {}
        for scenario in (s for s in _SCENARIOS if s in runs):
            setting = _SCENARIOS[scenario]
            metrics = [("ACC", "ACC"), ("BWT", bwt)] + ([("FWT", "FWT")] if scenario == "task" else []) + [
                ("rank", "rank")]
            rows = runs[scenario]["metrics"].get(order, {})
            for label, key in metrics:
                columns.append((setting, label))
                data[(setting, label)] = [rows.get(k, {}).get(key, float("nan")) for k in names]
                if label == "ACC" and backbone in PAPER_BACKBONES:
                    columns.append((setting, "ACC (paper)"))
                    data[(setting, "ACC (paper)")] = [paper_acc(backbone, order, scenario, k) for k in names]
        frame = pd.DataFrame(data, index=pd.MultiIndex.from_tuples([(_group(k), k) for k in names]),
                             columns=pd.MultiIndex.from_tuples(columns, names=["setting", UNITS])
                             ).astype(float).round(digits)
        out[order] = frame
    return out
