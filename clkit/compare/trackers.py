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
from pathlib import Path

from .._io import MAX_LINE_BYTES, LineTooLong, read_text
from .runs import Runs
from .tracker_series import (METRIC_PATTERN, _check_options, _field, _first, _lookup, _matrix,  # noqa: F401
                             _no_reruns, _pick_one, _rx)
from .tracker_mlflow import (_HISTORY_COLS, _files, _mlflow_kind, _mlflow_run, _yaml,  # noqa: F401
                             read_mlflow_history, read_mlflow_store)
from .tracker_wandb import _WANDB_SUFFIXES, _sidecars, _wandb_config, read_wandb_history  # noqa: F401

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
            data = json.loads(read_text(p, "history", errors="replace"))
            first = data[0] if isinstance(data, list) and data else data
            cols = list(first) if isinstance(first, dict) else []
        else:
            with open(p, newline="", errors="replace") as fh:
                first = fh.readline(MAX_LINE_BYTES)
            if p.suffix == ".jsonl":
                cols = list(json.loads(first)) if first.strip().startswith("{") else []
            else:
                cols = [c.strip() for c in next(csv.reader([first]), [])]
    except LineTooLong:
        raise
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
