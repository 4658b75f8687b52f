"""Splitting notebook 03's run into cases, and reading the finished cases back.

Every number of notebook 03's Part 2 comes from accuracy matrices ``A(t, tau)``, one per learner
and training seed (:func:`clkit.temporal.accuracy_matrix` with the backward cells): each builds
its model under its seed on the CPU, draws its batch orders from a CPU generator seeded with it,
and trains on the same periods, so the matrices are independent of each other and of the order
they are trained in. The run trains every learner on ``seed``; with verdicts, each judged learner
on the further seeds ``seed + 1, ..., seed + verdict_seeds - 1`` and fine-tuning on the null
control's shifted seeds ``s + 10000`` (:data:`clkit.temporal.verdicts.NULL_SEED_OFFSET`).
At the ``paper`` set's scale (FMoW at 224 px, DenseNet-121) that is several days of one GPU, so
it is cut into one case per (learner, seed) (``notebooks/grids/03_temporal_metrics/paper_split.yaml``):

- a **case** is the notebook with ``temporal_cases: ["LEARNER|SEED", ...]``: :func:`run_cases`
  trains those matrices exactly as the whole run does and returns them for ``results.json``
  (``temporal_case``); a case computes no table, figure or verdict;
- the **merge** (``clkit merge SWEEP_DIR --out DIR``, :mod:`clkit.sweep.merge`) runs the notebook
  once more with ``temporal_from: SWEEP_DIR``: :func:`read_cases` returns every matrix the whole
  run would train, and every later cell reads them instead of training, so the merged
  ``results.json`` holds one run's numbers and verdicts. JSON holds the float64 accuracies
  exactly (``NaN`` written as the string ``"NaN"``).

The notebook declares this to :mod:`clkit.sweep.merge` by :data:`MERGE`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

__all__ = ["MERGE", "CASE_SKIPS", "SPLIT_GRIDS", "case_key", "all_cases", "parse_cases", "run_cases",
           "read_cases", "encode_matrix", "decode_matrix", "split_note", "case_hours", "ASSUMED_H100", "STEP_FACTOR"]

#: how notebook 03's cases combine (read by :mod:`clkit.sweep.merge`)
MERGE = {"case_parameter": "temporal_cases", "whole_value": [], "merge_parameter": "temporal_from"}

#: parameters that may differ between the cases and the merged run (what a case is, where it ran)
CASE_SKIPS = ("temporal_cases", "temporal_from", "device", "precision", "deterministic")

#: seconds on one H100 SXM for DenseNet-121 at 224 px in fp32, ASSUMED (not measured: no GPU has timed it;
#: ``benchmarks/gpu_check.py`` row "03_temporal_metrics paper" measures it): a training step of 64 images
#: (about twice what a TF32 DenseNet-121 step usually costs) and an evaluation pass of one FMoW test period
ASSUMED_H100 = {"step_s": 0.2, "eval_s": 2.0}

#: images a learner's step carries relative to a plain step: CORAL the current period's batch and as many
#: from each of its 3 earlier domains; MoCo+SML two views through the query encoder (with its backward
#: pass) and the key encoder
STEP_FACTOR = {"coral": 4.0, "moco_sml": 2.5}

#: (dataset, image_size) -> the split grid shipped for a set too long for one machine
SPLIT_GRIDS = {("fmow", 224): "notebooks/grids/03_temporal_metrics/paper_split.yaml"}


def case_key(learner: str, seed: int) -> str:
    """``"ewc|2"``: one case, as ``temporal_cases`` names it.

    Examples
    --------
    >>> case_key("ewc", 2), case_key("finetune", 10_000)
    ('ewc|2', 'finetune|10000')
    """
    return f"{learner}|{int(seed)}"


def all_cases(learners, judged, seed: int, verdict_seeds: int, *, verdicts: bool) -> list[tuple]:
    """Every matrix a whole run trains, in its order: each learner on ``seed``; with ``verdicts``, each judged
    learner on the further seeds, then fine-tuning on the null control's shifted seeds.

    Examples
    --------
    >>> all_cases(["erm", "finetune", "ewc"], ["finetune", "ewc"], 0, 2, verdicts=True)
    [('erm', 0), ('finetune', 0), ('ewc', 0), ('finetune', 1), ('ewc', 1), ('finetune', 10000), ('finetune', 10001)]
    >>> all_cases(["erm", "finetune"], ["finetune"], 3, 4, verdicts=False)
    [('erm', 3), ('finetune', 3)]
    """
    from .verdicts import NULL_SEED_OFFSET

    out = [(m, int(seed)) for m in learners]
    if verdicts:
        seeds = [int(seed) + i for i in range(int(verdict_seeds))]
        out += [(m, s) for m in judged for s in seeds[1:]]
        out += [("finetune", s + NULL_SEED_OFFSET) for s in seeds]
    return list(dict.fromkeys(out))


def parse_cases(temporal_cases, every) -> list[tuple]:
    """The cases ``temporal_cases`` selects (``[]``: every case of ``every``, :func:`all_cases`), checked.

    Raises
    ------
    TypeError, ValueError
        Naming ``temporal_cases``, the entry and the cases allowed.

    Examples
    --------
    >>> every = all_cases(["erm", "finetune"], ["finetune"], 0, 0, verdicts=False)
    >>> parse_cases(["finetune|0"], every)
    [('finetune', 0)]
    >>> parse_cases(["ewc|0"], every)
    Traceback (most recent call last):
    ...
    ValueError: temporal_cases: 'ewc|0' is not a case of this run; allowed: erm|0, finetune|0
    """
    if not isinstance(temporal_cases, (list, tuple)) or not all(isinstance(c, str) for c in temporal_cases):
        raise TypeError(f"temporal_cases must be a list of 'LEARNER|SEED' strings, got {temporal_cases!r}")
    if not temporal_cases:
        return list(every)
    known = {case_key(*c): c for c in every}
    out = []
    for entry in temporal_cases:
        if entry not in known:
            raise ValueError(f"temporal_cases: {entry!r} is not a case of this run; allowed: {', '.join(known)}")
        if known[entry] not in out:
            out.append(known[entry])
    return out


def encode_matrix(A) -> list:
    """``A`` as JSON-exact nested lists (float64 as Python floats, ``NaN`` as ``"NaN"``).

    Examples
    --------
    >>> encode_matrix(np.array([[0.5, np.nan], [0.25, 1.0]]))
    [[0.5, 'NaN'], [0.25, 1.0]]
    """
    return [["NaN" if math.isnan(v) else float(v) for v in row] for row in np.asarray(A, dtype=np.float64)]


def decode_matrix(rows) -> np.ndarray:
    """:func:`encode_matrix` undone.

    Examples
    --------
    >>> decode_matrix([[0.5, "NaN"]]).tolist()[0][0], bool(np.isnan(decode_matrix([[0.5, "NaN"]])[0, 1]))
    (0.5, True)
    """
    return np.array([[np.nan if v == "NaN" else float(v) for v in row] for row in rows], dtype=np.float64)


def _settings(learner: str, learner_settings) -> dict:
    from ..learner_kwargs import settings_for

    return settings_for(learner, None, learner_settings)


def run_cases(cases, tasks, *, train_kw: dict, learner_settings=None) -> dict:
    """Train the matrices of ``cases`` (from :func:`parse_cases`) as the whole run trains them.

    Parameters
    ----------
    cases : list of (str, int)
    tasks : clkit.temporal.PeriodTasks
        The run's periods on its device.
    train_kw : dict
        The notebook's :func:`~clkit.temporal.accuracy_matrix` settings (``seed`` is replaced by each case's).
    learner_settings : dict, optional
        ``{learner: {keyword: value}}`` (:func:`~clkit.temporal.check_learner_settings`).

    Returns
    -------
    dict
        For ``results.json`` (``temporal_case``): ``cases`` (their keys) and ``A`` (key -> :func:`encode_matrix`).

    Examples
    --------
    >>> from clkit.data.temporal import make_drifting_gaussians
    >>> from clkit.temporal import period_tasks
    >>> out = run_cases([("finetune", 1)], period_tasks(make_drifting_gaussians(3, 20, seed=0)),
    ...                 train_kw=dict(epochs=1, hidden=[4], seed=0))
    >>> out["cases"], len(out["A"]["finetune|1"])
    (['finetune|1'], 3)
    """
    from .experiment import accuracy_matrix

    A = {}
    for learner, s in cases:
        A[case_key(learner, s)] = encode_matrix(accuracy_matrix(
            tasks, learner, backward=True, strategy_kwargs=_settings(learner, learner_settings),
            **(dict(train_kw) | {"seed": int(s)})))
    return {"cases": [case_key(*c) for c in cases], "A": A}


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def read_cases(root, params: dict, every) -> dict:
    """Every matrix of ``every`` (:func:`all_cases`) read from the finished cases under ``root`` (a sweep folder).

    Each ``results.json`` under ``root`` of notebook 03 whose parameters equal ``params`` (but for
    :data:`CASE_SKIPS`) contributes its ``temporal_case`` matrices; each case must come from
    exactly one run.

    Returns
    -------
    dict
        ``{(learner, seed): A}``, ``A`` of shape (T, T), float64, backward cells included.

    Raises
    ------
    ValueError
        Naming ``temporal_from``, the folder and what is missing, doubled or differs.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"temporal_from: {str(root)!r} is not a folder of finished cases (a clkit sweep's --out)")
    want = {k: v for k, v in params.items() if k not in CASE_SKIPS}
    found: dict = {}
    where: dict = {}
    differing = []
    for path in sorted(p for p in root.rglob("results.json") if ".work" not in p.parts):
        res = json.loads(path.read_text())
        if res.get("notebook") not in (None, "03_temporal_metrics"):
            continue
        case = res.get("results", {}).get("temporal_case")
        if case is None:
            continue
        got = {k: v for k, v in res.get("params", {}).items() if k not in CASE_SKIPS}
        diff = sorted(k for k in set(want) | set(got) if not _same(want.get(k), got.get(k)))
        if diff:
            differing.append(f"{path.parent.name} ({', '.join(diff[:4])})")
            continue
        for key in case["cases"]:
            if key in where:
                raise ValueError(f"temporal_from: case {key} is in two runs under {root}: {where[key]} and "
                                 f"{path.parent}")
            where[key] = path.parent
            found[key] = decode_matrix(case["A"][key])
    missing = [case_key(*c) for c in every if case_key(*c) not in found]
    if missing:
        extra = f"; runs with other parameters: {', '.join(differing[:3])}" if differing else ""
        raise ValueError(f"temporal_from: {len(missing)} case(s) missing under {root}: {', '.join(missing[:6])}"
                         f"{' ...' if len(missing) > 6 else ''} (run the split grid's cases first: clkit sweep "
                         f"03_temporal_metrics --grid {SPLIT_GRIDS[('fmow', 224)]}){extra}")
    return {c: found[case_key(*c)] for c in every}


def split_note(dataset: str, image_size: int, temporal_cases=(), temporal_from: str = "") -> str:
    """The budget's sentence on the split: what this run is (a case, a merge) or the grid that splits its set.

    Examples
    --------
    >>> split_note("fmow", 224)[:78]
    'Split: notebooks/grids/03_temporal_metrics/paper_split.yaml cuts this set into'
    >>> split_note("fmow", 224, ["ewc|1"])[:60]
    'A case of the split grid notebooks/grids/03_temporal_metrics'
    >>> split_note("rainfall", 32)
    ''
    """
    grid = SPLIT_GRIDS.get((dataset, int(image_size)), "")
    if temporal_cases:
        return (f"A case of the split grid {grid or '(a split grid)'}: it trains {', '.join(temporal_cases)} only "
                "(clkit.temporal.split); the budget above counts the whole run.")
    if temporal_from:
        return (f"A merge of the split's cases in {temporal_from}: nothing is trained here; the budget above is what "
                "the cases took together.")
    if grid:
        return (f"Split: {grid} cuts this set into one case per learner and training seed (at most about 12 h of "
                "one H100 each by the budget's step count, clkit.temporal.split.case_hours); clkit sweep runs them "
                "and clkit merge writes one run's results.json from them.")
    return ""


def case_hours(learner: str, shape, *, batch_size: int, train_update_iter: dict, step_s: float | None = None,
               eval_s: float | None = None) -> float:
    """Hours of one case (one learner, one seed) of a stream of ``shape``: the budget's step count times times.

    Steps: :func:`clkit.temporal.budget.count_work` for the learner alone (Wild-Time's iterations a
    year turned into whole epochs), each ``step_s`` x :data:`STEP_FACTOR` of the learner; evaluation
    passes: ``T * T`` (the backward view included), ``eval_s`` each. Default times:
    :data:`ASSUMED_H100` (assumed, not measured).

    Examples
    --------
    >>> from clkit.temporal.budget import published_shape
    >>> s = published_shape("fmow")                       # 16 years of 7,970 training images each
    >>> it = {"erm": 3000, "coral": 3000, "default": 500}
    >>> [round(case_hours(m, s, batch_size=64, train_update_iter=it), 1) for m in ("erm", "coral", "finetune")]
    [2.9, 11.3, 0.7]
    """
    from .budget import count_work

    step_s = ASSUMED_H100["step_s"] if step_s is None else step_s
    eval_s = ASSUMED_H100["eval_s"] if eval_s is None else eval_s
    counts = count_work(learners=[learner], train_sizes=shape.train_sizes, epochs=1, batch_size=batch_size,
                        train_update_iter=train_update_iter)
    T = len(shape.train_sizes)
    return (counts["steps"][learner] * step_s * STEP_FACTOR.get(learner, 1.0) + T * T * eval_s) / 3600.0
