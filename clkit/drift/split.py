"""Splitting notebook 05's study into cases, and reading the finished cases back.

The runs of notebook 05_drift's study (:func:`clkit.drift.experiment.grid_plan`) are independent
per method and seed: every online run builds its model and learner under its seed alone, on a
stream that depends on the configuration and the seed alone (built from the stream cache, or
again, identically), and Joint trains once per seed. The null controls run Bare and the sweep's
CL method on the shifted seeds ``s + null_offset``. At Reddit's size the whole study is one to
two weeks of one GPU (``notebooks/params/05_drift/paper_reddit.yaml``), so it is cut into one case
per (method, seed) and one per seed's null controls
(``notebooks/grids/05_drift/paper_reddit_split.yaml``):

- a **case** is the notebook with ``drift_cases: ["METHOD|SEED", ...]`` (or ``"null|SEED"``):
  :func:`run_cases` trains only those runs, under every protocol and on every configuration the
  whole study runs them on, and returns their rows (metrics per configuration) for ``results.json``
  (``drift_case``); the accuracy curves of the first seed (those the notebook draws) go beside it in
  ``drift_case_curves.npz``;
- the **merge** (``clkit merge SWEEP_DIR --out DIR``, :mod:`clkit.sweep.merge`) runs the notebook
  once more with ``drift_from: SWEEP_DIR``: :func:`read_cases` returns what
  :func:`~clkit.drift.experiment.run_protocols` and :func:`~clkit.drift.experiment.run_null_control`
  return in one run -- the rows in one run's order, the curves, the streams (rebuilt: they depend on
  configuration and seed only) -- and every later section runs on them as in one run. JSON holds the
  float64 metrics exactly (``NaN`` is written as the string ``"NaN"``), so the merged numbers and
  verdicts are one run's.

The notebook declares this to :mod:`clkit.sweep.merge` by :data:`MERGE`.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np

from .experiment import grid_plan, run_grid
from .streams import TIME_SETTING

__all__ = ["MERGE", "CASE_SKIPS", "CURVES_FILE", "SPLIT_GRIDS", "case_key", "all_cases", "parse_cases", "run_cases",
           "read_cases", "encode_rows", "decode_rows", "split_note"]

#: how notebook 05's cases combine (read by :mod:`clkit.sweep.merge`)
MERGE = {"case_parameter": "drift_cases", "whole_value": [], "merge_parameter": "drift_from"}

#: parameters that may differ between the cases and the merged run (what a case is, where it ran)
CASE_SKIPS = ("drift_cases", "drift_from", "device", "precision", "workers", "torch_threads")

#: the file beside a case's ``results.json`` holding the first seed's accuracy curves
CURVES_FILE = "drift_case_curves.npz"

NULL = "null"

#: the split grid shipped for a dataset whose paper set is too long for one machine
SPLIT_GRIDS = {"reddit": "notebooks/grids/05_drift/paper_reddit_split.yaml"}


def case_key(method: str, seed: int) -> str:
    """``"er|1"``: one case, as ``drift_cases`` names it (``"null|1"``: seed 1's null controls).

    Examples
    --------
    >>> case_key("er", 1), case_key("null", 3)
    ('er|1', 'null|3')
    """
    return f"{method}|{int(seed)}"


def all_cases(methods, sweep_methods, seeds) -> list[tuple]:
    """Every case of a whole study: each method of ``methods`` then each sweep-only method, per seed, then
    the null controls per seed.

    Examples
    --------
    >>> all_cases(["bare", "er"], ["bare", "agem"], [1, 2])
    [('bare', 1), ('bare', 2), ('er', 1), ('er', 2), ('agem', 1), ('agem', 2), ('null', 1), ('null', 2)]
    """
    ms = list(dict.fromkeys(list(methods) + list(sweep_methods)))
    return [(m, int(s)) for m in ms for s in seeds] + [(NULL, int(s)) for s in seeds]


def parse_cases(drift_cases, methods, sweep_methods, seeds) -> list[tuple]:
    """The cases ``drift_cases`` selects (``[]``: every case), checked against the study's methods and seeds.

    Raises
    ------
    TypeError, ValueError
        Naming ``drift_cases``, the entry and the cases allowed.

    Examples
    --------
    >>> parse_cases(["er|2", "null|1"], ["bare", "er"], ["bare"], [1, 2])
    [('er', 2), ('null', 1)]
    >>> parse_cases(["gss|1"], ["bare"], ["bare"], [1])
    Traceback (most recent call last):
    ...
    ValueError: drift_cases: 'gss|1' is not a case of this study; allowed: bare|1, null|1
    """
    if not isinstance(drift_cases, (list, tuple)):
        raise TypeError(f"drift_cases must be a list of 'METHOD|SEED' strings, got {drift_cases!r}")
    every = all_cases(methods, sweep_methods, seeds)
    if not drift_cases:
        return every
    known = {case_key(*c): c for c in every}
    out = []
    for entry in drift_cases:
        if entry not in known:
            raise ValueError(f"drift_cases: {entry!r} is not a case of this study; allowed: {', '.join(known)}")
        if known[entry] not in out:
            out.append(known[entry])
    return out


def split_note(dataset: str, drift_cases=(), drift_from: str = "") -> str:
    """The budget's sentence on the split: what this run is (a case, a merge) or the grid that splits its set.

    Examples
    --------
    >>> split_note("reddit")[:74]
    'Split: notebooks/grids/05_drift/paper_reddit_split.yaml cuts this set into'
    >>> split_note("reddit", ["er|1"])
    'A case of the split grid notebooks/grids/05_drift/paper_reddit_split.yaml: it trains er|1 only (clkit.drift.split); the budget above counts the whole set.'
    >>> split_note("cora")
    ''
    """
    grid = SPLIT_GRIDS.get(dataset, "")
    if drift_cases:
        return (f"A case of the split grid {grid or '(a split grid)'}: it trains {', '.join(drift_cases)} only "
                "(clkit.drift.split); the budget above counts the whole set.")
    if drift_from:
        return (f"A merge of the split's cases in {drift_from}: nothing is trained here; the budget above is what "
                "the cases took together.")
    if grid:
        return (f"Split: {grid} cuts this set into one case per method and seed and one per seed's null controls, "
                "each a few hours of one GPU by a rough count; clkit sweep runs them and clkit merge writes one "
                "run's results.json from them.")
    return ""


# ------------------------------------------------------------------------------------------- JSON rows
def _plain(v):
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def encode_rows(rows) -> list[dict]:
    """Rows (dicts or a DataFrame) as JSON-exact dicts: NumPy scalars as Python's, ``NaN`` as ``"NaN"``.

    Examples
    --------
    >>> encode_rows([{"AA": float("nan"), "seed": np.int64(2), "sigma": None}])
    [{'AA': 'NaN', 'seed': 2, 'sigma': None}]
    """
    if hasattr(rows, "to_dict"):
        rows = rows.to_dict("records")
    return [{k: _plain(v) for k, v in r.items()} for r in rows]


def decode_rows(rows) -> list[dict]:
    """:func:`encode_rows` undone.

    Examples
    --------
    >>> decode_rows([{"AA": "NaN", "seed": 2}])[0]["AA"]
    nan
    """
    return [{k: (float("nan") if v == "NaN" else v) for k, v in r.items()} for r in rows]


# ------------------------------------------------------------------------------------------- the cases
def _part_kwargs(kwargs: dict, protocol: str) -> dict:
    every = kwargs.get("eval_every", 10)
    return {**{k: v for k, v in kwargs.items() if k != "eval_every"},
            "eval_every": every[protocol] if isinstance(every, dict) else every}


def run_cases(cases, data: dict, configs: dict, methods, sweep_methods, seeds, *, null_configs, null_offset: int,
              out_dir=None, **kwargs) -> dict:
    """Train the runs of ``cases`` (from :func:`parse_cases`) as the whole study trains them.

    For a case ``(method, seed)`` every part of :func:`~clkit.drift.experiment.grid_plan` that runs
    ``method`` runs it on ``seed`` (:func:`~clkit.drift.experiment.run_grid`, same arguments); for
    ``("null", seed)`` the null controls run on ``seed + null_offset``.

    Parameters
    ----------
    cases : list of (str, int)
    data, configs, methods, sweep_methods, seeds
        As the notebook gives :func:`~clkit.drift.experiment.run_protocols`.
    null_configs, null_offset
        As it gives :func:`~clkit.drift.experiment.run_null_control`.
    out_dir : path, optional
        Where the curves of the first seed go (:data:`CURVES_FILE`; default: the run's results folder,
        :func:`clkit.results.results_dir`); ``None`` with ``kwargs["dataset"]`` unset writes nothing.
    **kwargs
        :func:`~clkit.drift.experiment.run_grid`'s (``eval_every`` may be a dict per protocol).

    Returns
    -------
    dict
        For ``results.json`` (``drift_case``): ``cases`` (their keys), ``runs`` (protocol -> encoded rows),
        ``nulls`` (protocol -> encoded rows), ``curves`` (the curve keys written to :data:`CURVES_FILE`).
    """
    seeds = [int(s) for s in seeds]
    s0 = min(seeds)
    runs: dict = {pr: [] for pr in data}
    nulls: dict = {pr: [] for pr in data}
    curves = {}
    for method, seed in cases:
        if method == NULL:
            for part in grid_plan(list(data), {"main": [], "sigma": [], "sampling": [], "batch": []}, [],
                                  sweep_methods, [seed], null_configs=null_configs, null_offset=null_offset):
                g, s = data[part.protocol]
                rows, _, _ = run_grid(g, s, list(part.configs), list(part.methods), list(part.seeds),
                                      protocol=part.protocol, **_part_kwargs(kwargs, part.protocol))
                nulls[part.protocol] += encode_rows(rows)
            continue
        for part in grid_plan(list(data), configs, methods, sweep_methods, seeds):
            if method not in part.methods:
                continue
            g, s = data[part.protocol]
            rows, c, _ = run_grid(g, s, list(part.configs), [method], [seed], protocol=part.protocol,
                                  **_part_kwargs(kwargs, part.protocol))
            runs[part.protocol] += encode_rows(rows)
            if seed == s0:
                for (cfg, m, sd), (when, acc) in c.items():
                    key = f"{part.protocol}|{cfg.label()}|{m}|{sd}"
                    curves[key + "|when"], curves[key + "|acc"] = np.asarray(when), np.asarray(acc)
    written = []
    if curves:
        from ..results import results_dir

        folder = Path(out_dir) if out_dir is not None else results_dir("05_drift")
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".npz.partial")
        os.close(fd)
        with open(tmp, "wb") as fh:                 # never half a file: written aside, then renamed
            np.savez_compressed(fh, **curves)
        os.replace(tmp, folder / CURVES_FILE)
        written = sorted({k.rsplit("|", 1)[0] for k in curves})
    return {"cases": [case_key(*c) for c in cases], "runs": runs, "nulls": nulls, "curves": written}


# ------------------------------------------------------------------------------------------- the merge
def _case_results(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).rglob("results.json") if ".work" not in p.parts)


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _streams(data: dict, part, *, dataset: str, cache: bool) -> dict:
    """The streams of a part, built as :func:`~clkit.drift.experiment.run_grid` builds them."""
    from .cache import build_stream
    from .protocol import get_protocol
    from .streams import time_stream

    g, split = data[part.protocol]
    p = get_protocol(part.protocol)
    out = {}
    for cfg in part.configs:
        for seed in part.seeds:
            if cfg.setting == TIME_SETTING:
                out[(cfg, seed)] = time_stream(split.task_nodes, np.asarray(g.node_year), cfg.batch_size, seed=seed)
            else:
                out[(cfg, seed)] = build_stream(split.task_nodes, cfg.setting, dataset=dataset,
                                                batch_size=cfg.batch_size, sampling=cfg.sampling, seed=seed,
                                                sigma=cfg.sigma, p=cfg.p, k_bl=cfg.k_bl, cache=cache,
                                                protocol=p.name)
    return out


def read_cases(root, params: dict, data: dict, configs: dict, methods, sweep_methods, seeds, *, null_configs,
               null_offset: int, dataset: str = "graph", cache: bool = True) -> tuple[dict, dict]:
    """The whole study read from the finished cases under ``root`` (a sweep folder).

    Every ``results.json`` under ``root`` whose parameters equal ``params`` (but for :data:`CASE_SKIPS`)
    contributes its ``drift_case`` rows, and the :data:`CURVES_FILE` beside it its curves; each run
    must come from exactly one case.

    Returns
    -------
    (runs, nulls)
        As :func:`~clkit.drift.experiment.run_protocols` (``protocol -> (rows DataFrame, curves, streams)``,
        the curves of the first seed) and :func:`~clkit.drift.experiment.run_null_control`
        (``protocol -> rows DataFrame``) return them in one run, rows in one run's order.

    Raises
    ------
    ValueError
        ``drift_from``, naming the folder and what is missing, doubled or differs.
    """
    import pandas as pd

    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"drift_from: {str(root)!r} is not a folder of finished cases (a clkit sweep's --out)")
    want = {k: v for k, v in params.items() if k not in CASE_SKIPS}
    rows: dict = {}
    curve_files: dict = {}
    differing = []
    seen_cases: dict = {}
    for path in _case_results(root):
        res = json.loads(path.read_text())
        if res.get("notebook") not in (None, "05_drift"):
            continue
        case = res.get("results", {}).get("drift_case")
        if case is None:
            continue
        got = {k: v for k, v in res.get("params", {}).items() if k not in CASE_SKIPS}
        diff = sorted(k for k in set(want) | set(got) if not _same(want.get(k), got.get(k)))
        if diff:
            differing.append(f"{path.parent.name} ({', '.join(diff[:4])})")
            continue
        for key in case["cases"]:
            if key in seen_cases:
                raise ValueError(f"drift_from: case {key} is in two runs under {root}: {seen_cases[key]} and "
                                 f"{path.parent}")
            seen_cases[key] = path.parent
        for kind in ("runs", "nulls"):
            for pr, rs in case[kind].items():
                for r in decode_rows(rs):
                    rows[(kind, pr, r["config"], r["method"], int(r["seed"]))] = r
        if case.get("curves"):
            curve_files[path.parent] = case["curves"]
    cases = all_cases(methods, sweep_methods, seeds)
    missing = [case_key(*c) for c in cases if case_key(*c) not in seen_cases]
    if missing:
        extra = f"; runs with other parameters: {', '.join(differing[:3])}" if differing else ""
        raise ValueError(f"drift_from: {len(missing)} case(s) missing under {root}: {', '.join(missing[:6])}"
                         f"{' ...' if len(missing) > 6 else ''} (run the split grid's cases first: clkit sweep 05 "
                         f"--grid notebooks/grids/05_drift/paper_reddit_split.yaml){extra}")
    curves_by_key = {}
    for folder, keys in curve_files.items():
        with np.load(folder / CURVES_FILE) as z:
            for key in keys:
                curves_by_key[key] = (z[key + "|when"], z[key + "|acc"])
    runs = {pr: ([], {}, {}) for pr in data}
    for part in grid_plan(list(data), configs, methods, sweep_methods, seeds):
        r0, c0, s0 = runs[part.protocol]
        for cfg in part.configs:              # one process's order: config, seed, method
            for seed in part.seeds:
                for m in part.methods:
                    r0.append(rows[("runs", part.protocol, cfg.label(), m, int(seed))])
                    key = f"{part.protocol}|{cfg.label()}|{m}|{seed}"
                    if key in curves_by_key:
                        c0[(cfg, m, seed)] = curves_by_key[key]
        s0.update(_streams(data, part, dataset=dataset, cache=cache))
    nulls = {}
    for part in grid_plan(list(data), {"main": [], "sigma": [], "sampling": [], "batch": []}, [], sweep_methods,
                          seeds, null_configs=null_configs, null_offset=null_offset):
        nulls[part.protocol] = pd.DataFrame([rows[("nulls", part.protocol, cfg.label(), m, int(seed))]
                                             for cfg in part.configs for seed in part.seeds for m in part.methods])
    return {pr: (pd.DataFrame(r), c, s) for pr, (r, c, s) in runs.items()}, nulls
