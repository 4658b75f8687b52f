"""Readers of experiment-tracker exports (MLflow, Weights & Biases) into :class:`~clkit.compare.runs.Runs`.

A tracker holds no accuracy matrix: a training loop logs, after training task ``i``, one metric per
evaluated task ``j`` -- the key names the task, the step is the task trained. These readers turn such
per-step accuracies back into ``R`` (row i = after training task i, column j = task j).

Metric keys
-----------
A key names the evaluated task when it matches :data:`METRIC_PATTERN` (the whole key), e.g.
``acc_task_3``, ``acc/task_3``, ``acc_task3``, ``accuracy/exp_3``, ``eval_accuracy_task_3``,
``test/acc_experience_3``: an optional prefix ending in ``/``, ``_`` or ``.``, then ``acc`` or
``accuracy``, a separator, ``task``, ``exp`` or ``experience``, an optional separator and the task
number. Any other scheme: ``metric_pattern``, a regular expression with a named group ``task``
matched against the whole key (``r"val/top1/t(?P<task>\\d+)"``). Task numbers count from
``task_base`` (0; 1 for keys ``acc_task_1 .. acc_task_T``). Two keys naming one task (``val_acc_task_0``
and ``test_acc_task_0``) are refused: choose one with ``metric_pattern``. Keys not matched are
listed as read, not used.

Steps
-----
``steps="index"`` (default): the step is the index of the task trained (0-based), ``R[step, task]``.
``steps="order"``: the k-th distinct step at which a task accuracy was logged is row k (for a step
that counts epochs, batches or ``wandb.log`` calls). A value logged twice at one step keeps the last
one (MLflow: latest timestamp; W&B: last row), and ``used`` says so. A cell on or below the diagonal
that was never logged is refused, naming the run, the file and the metric key; cells above the
diagonal (tasks not yet trained, often not evaluated) may be missing and are NaN.

**MLflow** (checked against mlflow-skinny 3.17.2, ``tests/test_compare_trackers.py`` logs real runs)

- a **file store**: ``mlruns/<experiment_id>/<run_id>/`` with ``meta.yaml`` (``run_id``,
  ``run_name``, ``lifecycle_stage``), ``metrics/<key>`` (one line per logged value,
  ``<timestamp ms> <value> <step>``; a key with ``/`` is a sub-folder; 2-field lines are step 0 and
  5-field lines carry a dataset name and digest, as ``FileStore._get_metric_from_line`` reads them),
  ``params/<key>`` and ``tags/<key>`` (the value as the file's text). The store root, one
  experiment folder or one run folder can be given; deleted runs and experiments are skipped and
  listed in ``notes``. Method and seed come from ``params/<method_key>`` (else ``tags/<method_key>``)
  and likewise ``seed_key`` (defaults ``method``, ``seed``; a dotted key ``cfg.seed`` is a param
  named so).
- a **metric history table**: ``MlflowClient().get_metric_history(run_id, key)`` per key, saved as
  CSV, JSON (a list of records) or JSON lines, with the columns of ``Metric.to_dictionary()``:
  ``key, value, timestamp, step`` (and ``run_id``, ``model_id``, ``dataset_name``, ``dataset_digest``,
  read and not used). Rows of several runs are told apart by ``run_id``; method and seed come from
  columns ``<method_key>``, ``params.<method_key>`` or ``tags.<method_key>``, from ``runs_table``
  (what ``mlflow.search_runs(...)`` returns, or its ``to_csv``: ``run_id`` and ``params.*`` /
  ``tags.*`` columns), or from a manifest row. ``search_runs``'s own ``metrics.<key>`` columns hold
  each metric's **last** value only (the final row of R), so that table alone is refused.

**Weights & Biases** (wandb is not installed here: the formats below were inferred from wandb
0.31.0's source, ``wandb/apis/public/runs.py`` (``Run.history``, ``Run.scan_history``,
``Run.json_config``) and ``wandb/sdk/lib/config_util.py`` (``config.yaml``), not produced by a run)

- the run **history**: ``run.history(samples=...)`` (a DataFrame built from the history rows,
  ``pd.DataFrame.from_records``) saved with ``to_csv`` -- the unnamed index column it writes is
  ignored -- or ``run.scan_history()`` / ``run.history(pandas=False)`` saved as JSON lines or a JSON
  list: one row per ``wandb.log`` call with ``_step`` (and ``_runtime``, ``_timestamp``) and the
  metrics logged in that call; a metric not logged in a row is empty / NaN / absent. The step is
  ``step_key`` (default ``_step``: ``wandb.log({...}, step=i)`` after training task i; a column you
  logged such as ``task`` works too). ``run.history()`` samples 500 rows by default: a row left out
  is a missing cell, refused -- use ``scan_history`` for long runs.
- the app's **line-plot "Export CSV"** (not in the wandb package, so not checked): a ``Step``
  column and ``<run name> - <metric>`` columns (``__MIN`` / ``__MAX`` columns ignored); one run per
  file.
- the run **config**: a sidecar ``<history stem>.config.yaml`` / ``.config.json`` or, for a folder
  with one history file, ``config.yaml`` / ``config.json`` beside it: wandb's ``config.yaml``
  (``wandb_version: 1``, then ``key: {desc: null, value: ...}``), ``run.json_config`` (the same as
  JSON) or a plain mapping (``json.dump(run.config, ...)``); ``_wandb`` is not used, a dotted
  ``method_key`` (``cl.method``) reads a nested value. ``wandb-summary.json`` (or
  ``<stem>.summary.json``) beside it is read for a field the config lacks. A manifest row's
  method and seed take precedence over all of them.

Scores are fractions unless ``percent=True`` (then divided by 100), checked by
:func:`~clkit.compare.checks.check_scores`. Errors are ``ValueError`` naming the file, the run
and the field.

Examples
--------
>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> _ = open(os.path.join(d, "er_0.csv"), "w").write("_step,_runtime,acc_task_0,acc_task_1,loss\\n"
...     "0,1.5,0.9,0.1,0.3\\n1,3.0,0.6,0.8,0.2\\n")
>>> _ = open(os.path.join(d, "er_0.config.yaml"), "w").write(
...     "wandb_version: 1\\n\\nmethod:\\n  desc: null\\n  value: er\\nseed:\\n  desc: null\\n  value: 0\\n")
>>> r = read_wandb_history(os.path.join(d, "er_0.csv")).runs[0]
>>> r.label, r.R.tolist()
('er seed 0', [[0.9, 0.1], [0.6, 0.8]])
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

from .runs import Run, Runs
from .tracker_series import (METRIC_PATTERN, _check_options, _field, _first, _lookup, _matrix,  # noqa: F401
                             _no_reruns, _pick_one, _rx)

__all__ = ["TRACKER_FORMATS", "METRIC_PATTERN", "WANDB_VERSION", "MLFLOW_VERSION", "TRACKER_OPTIONS",
           "read_mlflow_store", "read_mlflow_history", "read_wandb_history", "read_tracker_folder",
           "read_tracker_file", "sniff_tracker"]

#: values of a manifest's ``format`` column read here
TRACKER_FORMATS = ("mlflow", "wandb")
#: the wandb release whose source the W&B formats were inferred from
WANDB_VERSION = "0.31.0"
#: the mlflow(-skinny) release the MLflow formats were checked against
MLFLOW_VERSION = "3.17.2"
#: keyword options of the tracker readers that :func:`~clkit.compare.readers.read_runs` passes on
TRACKER_OPTIONS = ("metric_pattern", "method_key", "seed_key", "steps", "task_base")
_HISTORY_COLS = ("key", "value", "step")
_WANDB_SUFFIXES = (".csv", ".jsonl", ".json")


def _yaml(path: Path, where: str) -> dict:
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ValueError(f"{where}: {path.name} is not YAML ({exc})") from None
    return data if isinstance(data, dict) else {}


def _mlflow_kind(p: Path) -> str | None:
    """``"run"``, ``"experiment"`` or ``"store"`` for an MLflow file-store folder, else None."""
    meta = p / "meta.yaml"
    if meta.is_file():
        text = meta.read_text(errors="replace")
        if re.search(r"^run_(?:id|uuid):", text, re.M):
            return "run"
        if re.search(r"^experiment_id:", text, re.M):
            return "experiment"
    if p.is_dir() and any(_mlflow_kind(c) == "experiment" for c in p.iterdir() if c.is_dir()):
        return "store"
    return None


def _files(folder: Path) -> dict:
    """``{key: path}`` of an MLflow run's ``metrics`` / ``params`` / ``tags`` folder (keys with ``/`` nest)."""
    if not folder.is_dir():
        return {}
    return {q.relative_to(folder).as_posix(): q for q in sorted(folder.rglob("*")) if q.is_file()}


def _mlflow_run(d: Path, *, exp_name: str, metric_pattern, method_key, seed_key, steps, task_base, percent,
                method=None, seed=None, label="") -> Run:
    """One run folder."""
    meta = _yaml(d / "meta.yaml", repr(str(d)))
    run_id, name = str(meta.get("run_id") or meta.get("run_uuid") or d.name), meta.get("run_name")
    where_id = f"{str(d)!r} (run {run_id}" + (f" {name!r}" if name else "")
    params, tags = _params_tags(d)
    hint = ("log it (mlflow.log_param('{key}', ...)), pass {opt}=<the param or tag naming it>, or name the "
            "run in a manifest (file, method, seed, format mlflow)")
    sources = [("params/", params), ("tags/", tags)]
    m, m_from = _field(sources, method_key, given=method, where=where_id + ")", what="method",
                       hint=hint.format(key=method_key, opt="method_key"))
    s, s_from = _field(sources, seed_key, given=seed, where=where_id + ")", what="seed",
                       hint=hint.format(key=seed_key, opt="seed_key"))
    run_label = label or f"{m} seed {s}"
    where = f"{where_id}, {run_label})"
    series = {}
    for key, q in _files(d / "metrics").items():
        pts = []
        for n, line in enumerate(q.read_text(errors="replace").splitlines(), start=1):
            parts = line.split()
            if not parts:
                continue
            try:
                if len(parts) not in (2, 3, 5):
                    raise ValueError
                ts, v = int(parts[0]), float(parts[1])
                step = int(parts[2]) if len(parts) >= 3 else 0
            except ValueError:
                raise ValueError(f"{str(q)!r} line {n} (run {run_id}, {run_label}): field {key}: expected "
                                 f"'<timestamp> <value> <step>', got {line.strip()!r}") from None
            pts.append((step, v, (ts, n)))
        series[key] = pts
    R, used = _matrix(series, where=where, metric_pattern=metric_pattern, steps=steps, task_base=task_base,
                      percent=percent)
    rest = sorted(k for k in params if k not in (method_key, seed_key))
    used = (f"{used} (MLflow run {run_id}" + (f" {name!r}" if name else "") + f", experiment {exp_name!r}); "
            f"method from {m_from}, seed from {s_from}")
    if rest:
        used += "; params read, not used: " + ", ".join(rest)
    return Run(m, s, None, None, R, str(d), {}, used)


def _params_tags(d: Path) -> tuple[dict, dict]:
    return tuple({k: q.read_text(errors="replace") for k, q in _files(d / sub).items()} for sub in ("params", "tags"))


def _logged(d: Path, keys) -> tuple:
    """A run folder's logged ``(method, seed)`` (param, else tag; ``""`` when absent)."""
    params, tags = _params_tags(d)
    return tuple(str(_lookup(params, k) or _lookup(tags, k) or "").strip() for k in keys)


def read_mlflow_store(path, *, experiment: str | None = None, metric_pattern: str | None = None,
                      method_key: str = "method", seed_key: str = "seed", steps: str = "index",
                      task_base: int = 0, percent: bool = False, method: str | None = None,
                      seed: str | None = None, label: str = "") -> Runs:
    """Runs of an MLflow file store (``mlruns``), one experiment folder of it, or one run folder.

    Parameters
    ----------
    path : str or Path
        ``mlruns`` (the ``file://`` tracking URI's folder), ``mlruns/<experiment_id>`` or
        ``mlruns/<experiment_id>/<run_id>``.
    experiment : str, optional
        Read only the experiment of this name or id (default: every active one).
    metric_pattern : str, optional
        A regex with a named group ``task`` matching the whole metric key (default
        :data:`METRIC_PATTERN`: ``acc_task_3``, ``acc/task_3``, ``eval_accuracy_task_3``, ...).
    method_key, seed_key : str
        The param (else tag) holding the run's method and seed.
    steps : {"index", "order"}
        The step is the task trained, or the k-th evaluation step is row k.
    task_base : {0, 1}
        The number of the first task in the metric keys.
    percent : bool
        The accuracies are percentages: divided by 100.
    method, seed, label : str, optional
        From a manifest row: they name the run (the logged params are then not needed), and
        ``seed`` (then ``method``) chooses the run when ``path`` holds several.

    Returns
    -------
    Runs
        ``format="mlflow"``, one run per MLflow run (``source`` its folder); deleted runs and
        experiments are skipped and named in ``notes``.

    Examples
    --------
    >>> import tempfile, os
    >>> d = os.path.join(tempfile.mkdtemp(), "mlruns", "1", "abc")
    >>> for sub, key, text in [("metrics", "acc_task_0", "1 0.9 0\\n2 0.6 1\\n"), ("metrics", "acc_task_1", "2 0.8 1\\n"),
    ...                        ("params", "method", "er"), ("params", "seed", "0")]:
    ...     os.makedirs(os.path.join(d, sub), exist_ok=True)
    ...     _ = open(os.path.join(d, sub, key), "w").write(text)
    >>> _ = open(os.path.join(d, "meta.yaml"), "w").write("run_id: abc\\nrun_name: er_0\\nlifecycle_stage: active\\n")
    >>> _ = open(os.path.join(d, "..", "meta.yaml"), "w").write("experiment_id: '1'\\nname: cl\\n")
    >>> r = read_mlflow_store(os.path.join(d, "..", "..")).runs[0]
    >>> r.label, r.R.tolist()
    ('er seed 0', [[0.9, nan], [0.6, 0.8]])
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{str(p)!r}{f' (run {label})' if label else ''}: field file: no such MLflow store")
    kind = _mlflow_kind(p)
    if kind is None:
        raise ValueError(f"{str(p)!r}{f' (run {label})' if label else ''}: not an MLflow file store, experiment or "
                         "run folder (no meta.yaml with experiment_id or run_id)")
    exps = {"store": lambda: [c for c in sorted(p.iterdir()) if _mlflow_kind(c) == "experiment"],
            "experiment": lambda: [p], "run": lambda: [p.parent]}[kind]()
    todo, notes = [], []
    for e in exps:
        emeta = _yaml(e / "meta.yaml", repr(str(e))) if (e / "meta.yaml").is_file() else {}
        ename, eid = str(emeta.get("name", e.name)), str(emeta.get("experiment_id", e.name))
        if experiment is not None and str(experiment) not in (ename, eid):
            continue
        if emeta.get("lifecycle_stage") == "deleted":
            notes.append(f"experiment {ename!r} ({e}) is deleted: not read")
            continue
        folders = [p] if kind == "run" else sorted(c for c in e.iterdir() if _mlflow_kind(c) == "run")
        for d in folders:
            if _yaml(d / "meta.yaml", repr(str(d))).get("lifecycle_stage") == "deleted":
                notes.append(f"run {d.name} ({d}) is deleted: not read")
                continue
            todo.append((d, ename))
    if not todo:
        what = f" of experiment {experiment!r}" if experiment is not None else ""
        raise ValueError(f"{str(p)!r}{f' (run {label})' if label else ''}: no active MLflow run{what}"
                         + (f" ({'; '.join(notes)})" if notes else ""))
    todo = _pick_one(todo, where=repr(str(p)), method=method, seed=seed,
                     logged=[_logged(d, (method_key, seed_key)) for d, _ in todo])
    runs = [_mlflow_run(d, exp_name=ename, metric_pattern=metric_pattern, method_key=method_key, seed_key=seed_key,
                        steps=steps, task_base=task_base, percent=percent, method=method, seed=seed, label=label)
            for d, ename in todo]
    _no_reruns(runs)
    return Runs(runs, str(p), "mlflow", notes)


def _table(path, label: str) -> tuple[Path, str, list, list]:
    """``(file, where, columns, rows)`` of one exported table (:func:`_records`)."""
    f = Path(path)
    where = f"{str(f)!r}" + (f" (run {label})" if label else "")
    if not f.is_file():
        raise FileNotFoundError(f"{where}: field file: no such file")
    return (f, where) + _records(f, where)


def _records(f: Path, where: str) -> tuple[list, list]:
    """``(columns, rows)`` of a CSV, a JSON list of records or JSON lines; rows are dicts, ``_line`` added."""
    if f.suffix in (".json", ".jsonl"):
        text = f.read_text()
        try:
            if f.suffix == ".json" and text.lstrip().startswith("["):
                rows = json.loads(text)
                lines = list(range(1, len(rows) + 1))
            else:
                pairs = [(n, json.loads(t)) for n, t in enumerate(text.splitlines(), start=1) if t.strip()]
                lines, rows = [n for n, _ in pairs], [r for _, r in pairs]
        except ValueError as exc:
            raise ValueError(f"{where}: not JSON lines or a JSON list of records ({exc})") from None
        if not all(isinstance(r, dict) for r in rows):
            raise ValueError(f"{where}: expected records (JSON objects), one per logged row")
        cols = list(dict.fromkeys(k for r in rows for k in r))
        return cols, [{**r, "_line": n} for r, n in zip(rows, lines)]
    with open(f, newline="") as fh:
        reader = csv.DictReader(fh)
        rows = [{**r, "_line": n} for n, r in enumerate(reader, start=2)]
        cols = list(reader.fieldnames or [])
    return cols, rows


def _num(v) -> float | None:
    """A logged cell as a float; None when empty / NaN / absent."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return None if math.isnan(v) else float(v)
    text = str(v).strip()
    if text.lower() in ("", "nan", "none", "null"):
        return None
    return float(text)


def _int_step(v, *, where: str, field: str) -> int:
    try:
        x = float(str(v).strip())
    except ValueError:
        raise ValueError(f"{where}: field {field} = {v!r} is not a step number") from None
    if not x.is_integer():
        raise ValueError(f"{where}: field {field} = {v!r} is not a whole step number")
    return int(x)


def read_mlflow_history(path, *, runs_table=None, metric_pattern: str | None = None, method_key: str = "method",
                        seed_key: str = "seed", steps: str = "index", task_base: int = 0, percent: bool = False,
                        method: str | None = None, seed: str | None = None, label: str = "") -> Runs:
    """Runs of MLflow metric histories saved as a table (``get_metric_history`` rows: ``key, value, timestamp,
    step``, optionally ``run_id``).

    Parameters
    ----------
    path : str or Path
        A CSV, a JSON list of records or JSON lines, e.g.
        ``pd.DataFrame([m.to_dictionary() for k in keys for m in client.get_metric_history(run_id, k)])``
        concatenated over runs and written with ``to_csv(index=False)``.
    runs_table : str, Path or DataFrame, optional
        ``mlflow.search_runs(...)`` (or its CSV): ``run_id`` with ``params.<method_key>`` /
        ``tags.<method_key>`` and likewise the seed, for histories without those columns.
    metric_pattern, method_key, seed_key, steps, task_base, percent
        As :func:`read_mlflow_store`.
    method, seed, label : str, optional
        From a manifest row (a file holding one run, or several told apart by the seed).

    Returns
    -------
    Runs
        ``format="mlflow"``, one run per ``run_id`` (or one run when there is no ``run_id``).

    Examples
    --------
    >>> import tempfile
    >>> rows = ["key,value,timestamp,step,run_id,params.method,params.seed", "acc/task_0,90,1,0,r1,er,0",
    ...         "acc/task_0,70,2,1,r1,er,0", "acc/task_1,80,2,1,r1,er,0"]
    >>> f = Path(tempfile.mkdtemp()) / "history.csv"
    >>> n = f.write_text("\\n".join(rows) + "\\n")
    >>> r = read_mlflow_history(f, percent=True).runs[0]
    >>> r.label, r.R.tolist()
    ('er seed 0', [[0.9, nan], [0.7, 0.8]])
    """
    f, where_f, cols, rows = _table(path, label)
    if any(c not in cols for c in _HISTORY_COLS):
        if any(str(c).startswith("metrics.") for c in cols):
            raise ValueError(f"{where_f}: this is mlflow.search_runs's table: its metrics.<key> columns hold each "
                             "metric's last value only (the final row of R), not the per-step history; save "
                             "MlflowClient().get_metric_history(run_id, key) for each key (docs/compare.md) and "
                             "give this table as runs_table, for method and seed")
        raise ValueError(f"{where_f}: field key/value/step: columns {cols} lack "
                         f"{[c for c in _HISTORY_COLS if c not in cols]}; expected MlflowClient().get_metric_history "
                         "rows (key, value, timestamp, step[, run_id])")
    table = {}
    if runs_table is not None:
        import pandas as pd

        is_df = isinstance(runs_table, pd.DataFrame)
        df = runs_table if is_df else pd.read_csv(runs_table, dtype=str)
        if "run_id" not in df.columns:
            raise ValueError(f"runs_table{'' if is_df else f' {str(runs_table)!r}'}: field run_id: no such column "
                             "(expected mlflow.search_runs's table)")
        table = {str(r["run_id"]): {k: v for k, v in r.items() if isinstance(v, str) or not pd.isna(v)}
                 for r in df.to_dict("records")}
    groups: dict = {}
    for r in rows:
        groups.setdefault(str(r.get("run_id") or ""), []).append(r)
    own = {p + k for p in ("", "params.", "tags.") for k in (method_key, seed_key)}
    extra = [c for c in cols if c not in _HISTORY_COLS + ("timestamp", "run_id") and c not in own]
    todo = []
    for run_id, rs in groups.items():
        lines = [r["_line"] for r in rs]
        span = "" if len(groups) == 1 else (f"rows {lines[0]}-{lines[-1]}" if lines[-1] - lines[0] + 1 == len(lines)
                                            else f"{len(lines)} rows")
        head = repr(str(f)) + (f" {span}" if span else "")
        sources = []
        for prefix in ("", "params.", "tags."):
            vals = {}
            for k in (method_key, seed_key):
                seen = {str(r[prefix + k]).strip() for r in rs if _num_or_text(r.get(prefix + k)) is not None}
                if len(seen) > 1:
                    raise ValueError(f"{head} (run {run_id or '?'}): field {prefix + k}: one run holds several values "
                                     f"{sorted(seen)}")
                if seen:
                    vals[k] = seen.pop()
            sources.append((f"column {prefix}", vals))
        for prefix in ("params.", "tags.") if run_id in table else ():
            sources.append((f"runs_table {prefix}", {k[len(prefix):]: v for k, v in table[run_id].items()
                                                     if str(k).startswith(prefix)}))
        todo.append((run_id, rs, span, head, sources))
    if len(todo) > 1:
        todo = _pick_one(todo, where=repr(str(f)), method=method, seed=seed,
                         logged=[tuple(_first(t[4], k) for k in (method_key, seed_key)) for t in todo])
    runs = []
    for run_id, rs, span, head, sources in todo:
        def hint(key):
            return (f"add a column {key} (or params.{key}), give runs_table=mlflow.search_runs(...), or name the run "
                    "in a manifest (file, method, seed, format mlflow)")

        where_id = f"{head} (run {run_id})" if run_id else head
        m, m_from = _field(sources, method_key, given=method, where=where_id, what="method", hint=hint(method_key))
        s, s_from = _field(sources, seed_key, given=seed, where=where_id, what="seed", hint=hint(seed_key))
        run_label = label or f"{m} seed {s}"
        where = f"{head} (run {run_id + ', ' if run_id else ''}{run_label})"
        series = {}
        for r in rs:
            at = f"{str(f)!r} line {r['_line']} (run {run_label})"
            step = _int_step(r.get("step"), where=at, field="step")
            try:
                v = _num(r.get("value"))
            except ValueError:
                raise ValueError(f"{at}: field value = {r.get('value')!r} is not a number") from None
            ts = _num_or_text(r.get("timestamp"))
            tie = (float(ts) if ts is not None and _is_number(ts) else 0.0, r["_line"])
            series.setdefault(str(r["key"]), []).append((step, float("nan") if v is None else v, tie))
        R, used = _matrix(series, where=where, metric_pattern=metric_pattern, steps=steps, task_base=task_base,
                          percent=percent)
        used += (" (MLflow metric history" + (f", run {run_id}" if run_id else "") + f"); method from {m_from}, "
                 f"seed from {s_from}" + (f"; columns read, not used: {', '.join(extra)}" if extra else ""))
        runs.append(Run(m, s, None, None, R, f"{f}" + (f" {span}" if span else ""), {}, used))
    _no_reruns(runs)
    return Runs(runs, str(f), "mlflow", [])


def _num_or_text(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    text = str(v).strip()
    return None if text.lower() in ("", "nan", "none", "null") else text


def _is_number(text) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


# ---------------------------------------------------------------------------------------------- W&B


def _wandb_config(path: Path, where: str) -> dict:
    """A run config: wandb's ``config.yaml`` / ``json_config`` (``{key: {value, desc}}``) or a plain mapping."""
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text())
        except ValueError as exc:
            raise ValueError(f"{where}: {path.name} is not JSON ({exc})") from None
    else:
        data = _yaml(path, where)
    if not isinstance(data, dict):
        raise ValueError(f"{where}: {path.name} is not a mapping of config keys")
    return _wandb_config_dict(data)


def _sidecars(f: Path, alone: bool) -> list:
    """The config / summary files that go with a history file ``f`` (``alone``: the only one in its folder)."""
    names = [(f"{f.stem}.config.yaml", "config"), (f"{f.stem}.config.yml", "config"),
             (f"{f.stem}.config.json", "config"), (f"{f.stem}.summary.json", "summary")]
    if alone:
        names += [("config.yaml", "config"), ("config.json", "config"), ("wandb-summary.json", "summary")]
    found = [(f.parent / n, kind) for n, kind in names if (f.parent / n).is_file()]
    configs = [q for q, kind in found if kind == "config"]
    return configs[:1] + [q for q, kind in found if kind == "summary"][:1]


def _wandb_columns(cols: list, step_key: str) -> tuple[str, dict, list]:
    """``(step column, {metric: column}, ignored columns)`` of a history table."""
    step = step_key if step_key in cols else ("Step" if step_key == "_step" and "Step" in cols else None)
    # the unnamed index column of to_csv, and wandb's own keys (_runtime, _timestamp, _wandb, ...)
    ignored = [c for c in cols if c != step and (c == "" or c.startswith(("Unnamed:", "_")))]
    metrics = {c: c for c in cols if c not in ignored and c != step}
    if step == "Step":  # the app's line-plot export: "<run name> - <metric>", plus __MIN / __MAX
        ignored += [c for c in metrics if c.endswith(("__MIN", "__MAX"))]
        named = [c for c in metrics if c not in ignored]
        prefixes = {c.split(" - ", 1)[0] for c in named if " - " in c}
        if len(prefixes) > 1:
            raise ValueError(f"field column: the plot export holds several runs ({sorted(prefixes)}); export one run "
                             "per file")
        metrics = {c.split(" - ", 1)[1] if " - " in c else c: c for c in named}
    return step, metrics, ["(index column)" if c == "" or c.startswith("Unnamed:") else c
                           for c in ignored if c != "_line"]


def read_wandb_history(path, *, config=None, metric_pattern: str | None = None, method_key: str = "method",
                       seed_key: str = "seed", step_key: str = "_step", steps: str = "index", task_base: int = 0,
                       percent: bool = False, method: str | None = None, seed: str | None = None,
                       label: str = "", alone: bool = True) -> Runs:
    """One run of a W&B history export (format inferred from wandb 0.31.0's code: see the module docstring).

    Parameters
    ----------
    path : str or Path
        ``run.history(...).to_csv(...)``, ``run.scan_history()`` as JSON lines, a JSON list of history
        rows, or the app's line-plot "Export CSV".
    config : dict, str or Path, optional
        The run config (method, seed): a mapping, or a ``config.yaml`` / JSON file; by default the
        sidecar ``<stem>.config.yaml`` (``.json``) or, when ``alone``, ``config.yaml`` beside it.
    metric_pattern, method_key, seed_key, steps, task_base, percent
        As :func:`read_mlflow_store` (``method_key`` and ``seed_key`` are config keys; dotted for nested).
    step_key : str
        The column holding the step (``_step``; or a column you logged, e.g. ``task``).
    method, seed, label : str, optional
        From a manifest row: they name the run.
    alone : bool
        ``path`` is the only history file in its folder (so ``config.yaml`` there is its config).

    Returns
    -------
    Runs
        ``format="wandb"`` with one run.

    Examples
    --------
    >>> import json, tempfile
    >>> rows = [{"_step": 0, "acc/task_0": 90, "loss": 0.1}, {"_step": 1, "loss": 0.2},
    ...         {"_step": 1, "acc/task_0": 60, "acc/task_1": 80}]
    >>> f = Path(tempfile.mkdtemp()) / "history.jsonl"
    >>> n = f.write_text("".join(json.dumps(r) + "\\n" for r in rows))
    >>> r = read_wandb_history(f, config={"method": "er", "seed": 1}, percent=True).runs[0]
    >>> r.label, r.R.tolist()
    ('er seed 1', [[0.9, nan], [0.6, 0.8]])
    """
    f, where_f, cols, rows = _table(path, label)
    try:
        step_col, metrics, ignored = _wandb_columns(cols, step_key)
    except ValueError as exc:
        raise ValueError(f"{where_f}: {exc}") from None
    if step_col is None:
        raise ValueError(f"{where_f}: field {step_key}: no such column (columns: {cols[:12]}); a W&B history has "
                         "_step, or pass step_key=<the column holding the task trained>")
    if isinstance(config, (str, Path)):
        cfg_files = [Path(config)]
    else:
        cfg_files = [] if config is not None else _sidecars(f, alone)
    sources = []
    if isinstance(config, dict):
        sources.append(("config ", _wandb_config_dict(config)))
    for q in cfg_files:
        if not q.is_file():
            raise FileNotFoundError(f"{where_f}: field config: {str(q)!r} does not exist")
        sources.append((f"{q.name} ", _wandb_config(q, f"{str(q)!r} (history {f.name})")))

    def hint(opt):
        return (f"put it in the run's config (wandb.init(config=...)) and save run.config beside the history as "
                f"{f.stem}.config.yaml, pass config= or {opt}=, or name the run in a manifest (file, method, seed, "
                "format wandb)")

    m, m_from = _field(sources, method_key, given=method, where=where_f, what="method", hint=hint("method_key"))
    s, s_from = _field(sources, seed_key, given=seed, where=where_f, what="seed", hint=hint("seed_key"))
    run_label = label or f"{m} seed {s}"
    where = f"{str(f)!r} (run {run_label})"
    series, rx = {}, _rx(metric_pattern)
    for r in rows:
        at = f"{str(f)!r} line {r['_line']} (run {run_label})"
        raw_step = r.get(step_col)
        if _num_or_text(raw_step) is None:
            continue
        step = None
        for name, col in metrics.items():
            try:
                v = _num(r.get(col))
            except (TypeError, ValueError):
                if rx.fullmatch(name):
                    raise ValueError(f"{at}: field {name} = {r.get(col)!r} is not a number") from None
                continue  # text, media or a histogram: not a score
            if v is None:
                continue
            if step is None:
                step = _int_step(raw_step, where=at, field=step_col)
            series.setdefault(name, []).append((step, v, r["_line"]))
    R, used = _matrix(series, where=where, metric_pattern=metric_pattern, steps=steps, task_base=task_base,
                      percent=percent)
    other_cols = [c for c in metrics if c not in series]
    used += (f" (W&B history, step {step_col}); method from {m_from}, seed from {s_from}"
             + (f"; columns read, not used: {', '.join(ignored + other_cols)}" if ignored or other_cols else ""))
    return Runs([Run(m, s, None, None, R, str(f), {}, used)], str(f), "wandb", [])


def _wandb_config_dict(config: dict) -> dict:
    return {k: (v["value"] if isinstance(v, dict) and "value" in v and set(v) <= {"value", "desc"} else v)
            for k, v in config.items() if k not in ("wandb_version", "_wandb")}


# ---------------------------------------------------------------------------------------------- dispatch


def sniff_tracker(f) -> str | None:
    """``"mlflow"`` / ``"wandb"`` when ``f`` is an MLflow run folder or store, an MLflow metric-history table or
    ``search_runs`` table, or a W&B history file; else None.

    Examples
    --------
    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "h.csv"
    >>> f.write_text("key,value,timestamp,step\\nacc_task_0,0.9,1,0\\n") > 0, sniff_tracker(f)
    (True, 'mlflow')
    """
    from .mlflow_db import is_sqlite

    p = Path(f)
    if p.is_dir():
        return "mlflow" if _mlflow_kind(p) or _db_in(p) else None
    if is_sqlite(p):
        return "mlflow"  # MLflow 3's default store, sqlite:///mlflow.db (clkit.compare.mlflow_db)
    if not p.is_file() or p.suffix not in _WANDB_SUFFIXES:
        return None
    try:
        if p.suffix == ".json":
            data = json.loads(p.read_text(errors="replace"))
            first = data[0] if isinstance(data, list) and data else data
            cols = list(first) if isinstance(first, dict) else []
        else:
            with open(p, newline="", errors="replace") as fh:
                first = fh.readline()
            if p.suffix == ".jsonl":
                cols = list(json.loads(first)) if first.strip().startswith("{") else []
            else:
                cols = [c.strip() for c in next(csv.reader([first]), [])]
    except (ValueError, TypeError):
        return None
    if all(c in cols for c in _HISTORY_COLS) or any(str(c).startswith("metrics.") for c in cols) and "run_id" in cols:
        return "mlflow"
    if "_step" in cols or ("Step" in cols and any(" - " in str(c) for c in cols)):
        return "wandb"
    return None


def read_tracker_file(path, fmt: str, *, percent: bool = False, method=None, seed=None, label: str = "",
                      **options) -> Runs:
    """Runs of one tracker export named by a manifest row or given alone: ``fmt`` ``mlflow`` (a store, run folder
    or metric-history table) or ``wandb`` (a history file).

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "h.csv")
    >>> _ = open(f, "w").write("_step,acc_task_0,acc_task_1\\n0,0.9,\\n1,0.6,0.8\\n")
    >>> read_tracker_file(f, "wandb", method="er", seed="0").runs[0].R.tolist()
    [[0.9, nan], [0.6, 0.8]]
    """
    own = {"mlflow": ("experiment", "runs_table"), "wandb": ("config", "step_key", "alone")}
    unknown = sorted(set(options) - set(TRACKER_OPTIONS) - {k for v in own.values() for k in v})
    if unknown:
        raise TypeError(f"unknown tracker option(s) {unknown}; expected {', '.join(TRACKER_OPTIONS)}")
    options = {k: v for k, v in options.items() if v is not None and (k in TRACKER_OPTIONS or k in own.get(fmt, ()))}
    p = Path(path)
    kw = dict(percent=percent, method=method, seed=seed, label=label)
    if fmt == "mlflow":
        from .mlflow_db import is_sqlite, read_mlflow_db

        if p.is_dir() and not _mlflow_kind(p) and _db_in(p):
            p = _db_in(p)
        if is_sqlite(p):
            return read_mlflow_db(p, **{k: v for k, v in options.items() if k != "runs_table"}, **kw)
        if p.is_dir() or not p.exists():
            return read_mlflow_store(p, **{k: v for k, v in options.items() if k != "runs_table"}, **kw)
        return read_mlflow_history(p, **{k: v for k, v in options.items() if k != "experiment"}, **kw)
    if fmt == "wandb":
        if p.is_dir():
            found = _wandb_histories(p)
            if len(found) != 1:
                raise ValueError(f"{str(p)!r}{f' (run {label})' if label else ''}: field file: the folder holds "
                                 f"{len(found)} W&B history files; name one")
            p = found[0]
        return read_wandb_history(p, **options, **kw)
    raise ValueError(f"format {fmt!r} is not a tracker format ({', '.join(TRACKER_FORMATS)})")


def _db_in(p: Path):
    """A folder's ``mlflow.db`` when it is an MLflow SQLite store (MLflow 3's default tracking URI), else None."""
    from .mlflow_db import is_mlflow_db

    f = p / "mlflow.db"
    return f if is_mlflow_db(f) else None


def _wandb_histories(p: Path) -> list:
    return sorted(q for q in p.rglob("*") if q.is_file() and q.suffix in _WANDB_SUFFIXES
                  and not q.name.endswith((".config.json", ".summary.json", "wandb-summary.json",
                                           "wandb-metadata.json", "config.json"))
                  and sniff_tracker(q) == "wandb")


def read_tracker_folder(path, *, percent: bool = False, **options) -> Runs | None:
    """Runs of a folder with no manifest that is an MLflow file store (or experiment / run folder of one), or
    that holds W&B history files (each with its config sidecar); ``None`` when it is neither.

    Examples
    --------
    >>> import tempfile
    >>> empty = Path(tempfile.mkdtemp())
    >>> print(read_tracker_folder(empty))
    None
    """
    p = Path(path)
    if _mlflow_kind(p) or _db_in(p):
        return read_tracker_file(p, "mlflow", percent=percent, **options)
    found = _wandb_histories(p)
    if not found:
        binary = sorted(q.name for q in p.rglob("*.wandb"))[:3]
        if binary:  # a local wandb/run-*/ folder: its history is only in the binary log
            raise ValueError(f"{str(p)!r} is a local W&B run folder ({', '.join(binary)}): W&B keeps the history in "
                             "its binary .wandb log, which clkit does not read. Export it first, e.g. "
                             "wandb.Api().run(PATH).history().to_csv('history.csv') beside a config.yaml "
                             "(docs/compare.md, 'Input: MLflow and W&B run exports')")
        return None
    per_folder = {}
    for q in found:
        per_folder[q.parent] = per_folder.get(q.parent, 0) + 1
    runs = [r for q in found for r in read_tracker_file(q, "wandb", percent=percent, alone=per_folder[q.parent] == 1,
                                                        **options).runs]
    _no_reruns(runs)
    return Runs(runs, str(p), "wandb", [f"W&B history files read: {len(found)}"])
