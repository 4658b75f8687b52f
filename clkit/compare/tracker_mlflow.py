"""MLflow run stores and metric-history exports read into :class:`~clkit.compare.runs.Runs` (a part of
:mod:`clkit.compare.trackers`, which documents the formats and re-exports these readers)."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

from .._io import check_lines, read_text
from .runs import Run, Runs
from .tracker_series import (METRIC_PATTERN, _check_options, _field, _first, _lookup, _matrix,  # noqa: F401
                             _no_reruns, _pick_one, _rx)

__all__ = ["read_mlflow_store", "read_mlflow_history"]

_HISTORY_COLS = ("key", "value", "step")


def _yaml(path: Path, where: str) -> dict:
    import yaml

    try:
        data = yaml.safe_load(read_text(path, where))
    except yaml.YAMLError as exc:
        raise ValueError(f"{where}: {path.name} is not YAML ({exc})") from None
    return data if isinstance(data, dict) else {}


def _mlflow_kind(p: Path) -> str | None:
    """``"run"``, ``"experiment"`` or ``"store"`` for an MLflow file-store folder, else None."""
    meta = p / "meta.yaml"
    if meta.is_file():
        text = read_text(meta, "MLflow meta.yaml", errors="replace")
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
        for n, line in enumerate(read_text(q, "MLflow metric file", errors="replace").splitlines(), start=1):
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
    return tuple({k: read_text(q, f"MLflow {sub}", errors="replace") for k, q in _files(d / sub).items()} for sub in ("params", "tags"))


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
        text = read_text(f, "history")
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
    with open(check_lines(f, "history"), newline="") as fh:
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
        df = runs_table if is_df else pd.read_csv(check_lines(runs_table, "runs table"), dtype=str)
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

