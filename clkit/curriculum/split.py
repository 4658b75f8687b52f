"""Splitting notebook 04's streams into cases, and reading the finished cases back.

The streams of notebook 04_curriculum (:func:`clkit.curriculum.run_streams`) are independent per
strategy: every stream builds its model from its seed, and reseeds its batches and memories from
the seed and the dataset before each task (:func:`clkit.curriculum.task_seed`), so a strategy's
streams do not depend on which other strategies run beside them; the single-task runs that measure
difficulty depend on the seed and the dataset alone. The EfficientNet-B1 paper set is more than a
day of one GPU (``notebooks/params/04_curriculum/paper_efficientnet_b1.yaml``), so it is cut, per
scenario (one run each already), into one case per strategy and one for the null control
(``notebooks/grids/04_curriculum/paper_efficientnet_b1_split.yaml``, class-incremental;
``paper_efficientnet_b1_task_split.yaml``, task-incremental):

- a **case** is the notebook with ``curriculum_cases: ["STRATEGY", ...]`` (or ``"null"``, the null
  control's streams): it loads the data, measures difficulty on the run's seeds (the control case
  on the offset seeds too), chooses the same curriculum, trains only its strategies' streams
  (both orders, every seed; :func:`train`) and records them as ``curriculum_case``. Every case
  measures the run's difficulty itself (the cases run in parallel, none waits for another): that
  is 0.73 h of each case on an H100 SXM by the budget's count at the paper's size;
- the **merge** (``clkit merge SWEEP_DIR --out DIR``, :mod:`clkit.sweep.merge`) runs the notebook
  once more with ``curriculum_from: SWEEP_DIR``: :func:`read_cases` returns the single-task
  accuracies and the accuracy matrices a whole run computes, nothing is trained, and every later
  section runs on them as in one run. JSON holds float64 exactly (``NaN`` is written ``"NaN"``),
  so the merged numbers and verdicts are one run's.

Choice (the cases' difficulties): the merge takes the run's seeds' single-task accuracies from the
first case in the order of :func:`all_cases`, and refuses cases that chose another curriculum (on a
GPU without ``deterministic: true`` two cases may measure slightly different accuracies; a
different order would make their streams incomparable).

The notebook declares this to :mod:`clkit.sweep.merge` by :data:`MERGE`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

__all__ = ["MERGE", "CASE_SKIPS", "NULL", "SPLIT_GRIDS", "all_cases", "parse_cases", "difficulty_seeds", "measure",
           "train", "read_cases", "split_note"]

#: how notebook 04's cases combine (read by :mod:`clkit.sweep.merge`)
MERGE = {"case_parameter": "curriculum_cases", "whole_value": [], "merge_parameter": "curriculum_from"}

#: parameters that may differ between the cases and the merged run (what a case is, where it ran)
CASE_SKIPS = ("curriculum_cases", "curriculum_from", "device", "precision", "workers", "num_threads")

#: the case of the null control's streams
NULL = "null"

#: (backbone, scenario) -> the split grid shipped for its paper set (the sets over a day of one GPU; a merge
#: takes cases that differ in ``curriculum_cases`` alone, so one grid per scenario)
SPLIT_GRIDS = {("efficientnet_b1", "class"): "notebooks/grids/04_curriculum/paper_efficientnet_b1_split.yaml",
               ("efficientnet_b1", "task"): "notebooks/grids/04_curriculum/paper_efficientnet_b1_task_split.yaml"}


def all_cases(strategies) -> list[str]:
    """Every case of a whole run: one per strategy, then the null control's.

    Examples
    --------
    >>> all_cases(["naive", "replay"])
    ['naive', 'replay', 'null']
    """
    return list(dict.fromkeys(strategies)) + [NULL]


def parse_cases(curriculum_cases, strategies, curriculum_from: str = "") -> list[str]:
    """The cases ``curriculum_cases`` selects (``[]``: a whole run, every case), checked.

    Parameters
    ----------
    curriculum_cases : list of str
        Strategy names of this run (after the scenario's skips) or ``"null"``.
    strategies : list of str
        The strategies this run trains.
    curriculum_from : str
        The merge's sweep folder; a case and a merge exclude each other.

    Raises
    ------
    TypeError, ValueError
        Naming the parameter, the entry and what is allowed.

    Examples
    --------
    >>> parse_cases(["null", "replay"], ["naive", "replay"])
    ['null', 'replay']
    >>> parse_cases([], ["naive"])
    ['naive', 'null']
    >>> parse_cases(["gem"], ["naive"])
    Traceback (most recent call last):
    ...
    ValueError: curriculum_cases: 'gem' is not a case of this run; allowed: naive, null
    """
    if not isinstance(curriculum_cases, (list, tuple)):
        raise TypeError(f"curriculum_cases must be a list of strategy names or 'null', got {curriculum_cases!r}")
    if not isinstance(curriculum_from, str):
        raise TypeError(f"curriculum_from must be a folder path (str), got {curriculum_from!r}")
    if curriculum_cases and curriculum_from:
        raise ValueError(f"curriculum_cases and curriculum_from: a case trains streams, a merge reads them; give "
                         f"one, got {list(curriculum_cases)!r} and {curriculum_from!r}")
    every = all_cases(strategies)
    if not curriculum_cases:
        return every
    out = []
    for entry in curriculum_cases:
        if entry not in every:
            raise ValueError(f"curriculum_cases: {entry!r} is not a case of this run; allowed: {', '.join(every)}")
        if entry not in out:
            out.append(entry)
    return out


def difficulty_seeds(cases, strategies, seed_list, offset_seeds) -> list[int]:
    """The seeds whose single-task runs a run needs: the run's seeds, and the offset seeds where the
    null control's streams run (a whole run, or the ``"null"`` case).

    Examples
    --------
    >>> difficulty_seeds(["replay"], ["replay"], [0, 1], (2, 3)), difficulty_seeds(["null"], ["replay"], [0, 1], (2, 3))
    ([0, 1], [0, 1, 2, 3])
    """
    extra = list(offset_seeds) if NULL in cases else []
    return [int(s) for s in seed_list] + [int(s) for s in extra]


def measure(benches: dict, cases, strategies, seed_list, control, merged: dict | None = None, **kwargs) -> dict:
    """The single-task accuracies: measured on :func:`difficulty_seeds` (a whole run, a case), or read
    by the merge (``merged``, :func:`read_cases`).

    ``kwargs`` go to :func:`clkit.curriculum.measure_difficulty`. Returns seed -> dataset -> accuracy.
    """
    if merged is not None:
        return merged["acc_single"]
    from .streams import measure_difficulty

    seeds = difficulty_seeds(cases, strategies, seed_list, control.offset_seeds)
    return measure_difficulty({s: benches[s] for s in seeds}, **kwargs)


# ------------------------------------------------------------------------------------------- JSON
def _encode(R) -> list:
    return [[("NaN" if math.isnan(v) else v) for v in row] for row in np.asarray(R, dtype=float).tolist()]


def _decode(rows) -> np.ndarray:
    return np.array([[(float("nan") if v == "NaN" else float(v)) for v in row] for row in rows], dtype=float)


def _encode_runs(R: dict) -> dict:
    return {str(s): {o: {k: _encode(m) for k, m in by.items()} for o, by in orders.items()} for s, orders in R.items()}


def _decode_runs(R: dict) -> dict:
    return {int(s): {o: {k: _decode(m) for k, m in by.items()} for o, by in orders.items()} for s, orders in R.items()}


def train(benches: dict, cases, strategies, seed_list, orders: dict, control, *, record=None,
          merged: dict | None = None, run=None, **kwargs) -> tuple:
    """The streams ``(R, R_control)`` of a whole run; a case's own (logged, then ``(None, None)``); or the
    merge's (read).

    - A whole run (``cases`` is :func:`all_cases`): every strategy, then the control on the offset seeds.
    - A case: its strategies' streams (both orders, every seed of ``seed_list``) and, for ``"null"``,
      the control's, trained as a whole run trains them; logged as ``curriculum_case`` (``cases``,
      ``difficulty`` of the seeds it measured, ``orders``, ``R``, ``R_control``).
    - A merge (``merged``): what :func:`read_cases` read.

    Parameters
    ----------
    benches : dict seed -> Benchmark
    cases : list of str
        :func:`parse_cases`'s.
    strategies, seed_list, orders, control
        The notebook's (``control``: a :class:`~clkit.curriculum.controls.NullControl`).
    record : RunRecord, optional
        Where a case logs ``curriculum_case``.
    run : callable, optional
        :func:`clkit.curriculum.run_streams` (the default).
    **kwargs
        ``acc_single`` (for a case's log) and :func:`~clkit.curriculum.run_streams`'s keywords.

    Returns
    -------
    (R, R_control)
        seed -> order -> strategy -> accuracy matrix (T, T), as :func:`~clkit.curriculum.run_streams`.
    """
    acc_single = kwargs.pop("acc_single", None)
    if merged is not None:
        return merged["R"], merged["R_control"]
    if run is None:
        from .streams import run_streams as run
    whole = list(cases) == all_cases(strategies)
    own = [k for k in strategies if k in cases]
    R = run({s: benches[s] for s in seed_list}, orders, own, **kwargs) if own else {}
    R_control = (run({s: benches[s] for s in control.offset_seeds}, control.orders(orders), [control.strategy],
                     **kwargs) if NULL in cases else {})
    if whole:
        return R, R_control
    if record is not None:
        record.log(curriculum_case={
            "cases": list(cases), "orders": {o: list(v) for o, v in orders.items()},
            "difficulty": {str(s): {d: float(a) for d, a in acc.items()} for s, acc in (acc_single or {}).items()},
            "R": _encode_runs(R), "R_control": _encode_runs(R_control)})
    return None, None


# ------------------------------------------------------------------------------------------- the merge
def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def read_cases(root, params: dict, strategies, seed_list, control) -> dict:
    """The whole run read from the finished cases under ``root`` (a sweep folder).

    Every ``results.json`` under ``root`` from notebook 04 whose parameters equal ``params`` (but for
    :data:`CASE_SKIPS`) contributes its ``curriculum_case``; each case must come from exactly one run,
    and every case of :func:`all_cases` must be there.

    Returns
    -------
    dict
        ``acc_single`` (seed -> dataset -> accuracy: the run's seeds from the first case of
        :func:`all_cases`, the offset seeds from ``"null"``), ``R`` and ``R_control`` (as
        :func:`~clkit.curriculum.run_streams` returns them, strategies in ``strategies``' order),
        ``orders`` (the curriculum the cases chose).

    Raises
    ------
    ValueError
        ``curriculum_from``, naming the folder and what is missing, doubled or differs.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"curriculum_from: {str(root)!r} is not a folder of finished cases (a clkit sweep's --out)")
    want = {k: v for k, v in params.items() if k not in CASE_SKIPS}
    found: dict = {}
    where: dict = {}
    differing = []
    for path in sorted(p for p in root.rglob("results.json") if ".work" not in p.parts):
        res = json.loads(path.read_text())
        if res.get("notebook") not in (None, "04_curriculum"):
            continue
        case = res.get("results", {}).get("curriculum_case")
        if case is None:
            continue
        got = {k: v for k, v in res.get("params", {}).items() if k not in CASE_SKIPS}
        diff = sorted(k for k in set(want) | set(got) if not _same(want.get(k), got.get(k)))
        if diff:
            differing.append(f"{path.parent.name} ({', '.join(diff[:4])})")
            continue
        for key in case["cases"]:
            if key in where:
                raise ValueError(f"curriculum_from: case {key} is in two runs under {root}: {where[key]} and "
                                 f"{path.parent}")
            where[key] = path.parent
            found[key] = case
    every = all_cases(strategies)
    missing = [k for k in every if k not in found]
    if missing:
        extra = f"; runs with other parameters: {', '.join(differing[:3])}" if differing else ""
        raise ValueError(f"curriculum_from: {len(missing)} case(s) missing under {root}: {', '.join(missing)} (run "
                         f"the split grid's cases first, e.g. clkit sweep 04 --grid "
                         f"{SPLIT_GRIDS[('efficientnet_b1', 'class')]}){extra}")
    first = found[every[0]]
    for key in every[1:]:
        if found[key]["orders"] != first["orders"]:
            raise ValueError(f"curriculum_from: case {key} chose the curriculum {found[key]['orders']} and case "
                             f"{every[0]} {first['orders']} (measured difficulties differ: run the cases with "
                             "deterministic: true)")
    acc = {int(s): dict(a) for s, a in first["difficulty"].items() if int(s) in set(map(int, seed_list))}
    acc.update({int(s): dict(found[NULL]["difficulty"][str(s)]) for s in control.offset_seeds})
    runs = {k: _decode_runs(found[k]["R"]) for k in strategies}
    R = {int(s): {o: {k: runs[k][int(s)][o][k] for k in strategies} for o in first["orders"]} for s in seed_list}
    return {"acc_single": {s: acc[s] for s in sorted(acc)}, "R": R,
            "R_control": _decode_runs(found[NULL]["R_control"]), "orders": first["orders"]}


def split_note(backbone: str, scenario: str, paper_scale: bool, curriculum_cases=(), curriculum_from: str = "") -> str:
    """The budget's sentence on the split: what this run is (a case, a merge) or the grid that splits its set.

    Examples
    --------
    >>> split_note("efficientnet_b1", "class", True)[:79]
    'Split: notebooks/grids/04_curriculum/paper_efficientnet_b1_split.yaml cuts this'
    >>> split_note("efficientnet_b1", "class", False, ["gem"])[:44]
    'A case of a split: it trains gem only (clkit'
    >>> split_note("wide_vgg9_bn", "class", True)
    ''
    """
    if curriculum_cases:
        return (f"A case of a split: it trains {', '.join(curriculum_cases)} only (clkit.curriculum.split) after "
                "measuring difficulty; the budget above counts the whole run.")
    if curriculum_from:
        return (f"A merge of the split's cases in {curriculum_from}: nothing is trained here; the budget above is "
                "what the cases took together.")
    grid = SPLIT_GRIDS.get((backbone, scenario), "")
    if grid and paper_scale:
        return (f"Split: {grid} cuts this set (per scenario) into one case per strategy and one for the null "
                "control, each at most 8.8 h of an H100 SXM by this budget's count (GEM; difficulty included); "
                "clkit sweep runs them and clkit merge writes one run's results.json from them.")
    return ""
