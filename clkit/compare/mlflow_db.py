"""Runs of an MLflow SQLite store (``mlflow.db``, MLflow 3's default tracking URI ``sqlite:///mlflow.db``).

MLflow 3 keeps runs in a database unless told otherwise: with no ``MLFLOW_TRACKING_URI`` the
tracking URI is ``sqlite:///mlflow.db`` in the working folder (a ``file://`` store, the
``mlruns`` folder :func:`clkit.compare.trackers.read_mlflow_store` reads, is written only with
``MLFLOW_ALLOW_FILE_STORE=true``). The database is read through MLflow's own client,
``MlflowClient(tracking_uri="sqlite:///<absolute path>")`` (``search_experiments``,
``search_runs``, ``get_metric_history``), never by SQL of our own: its schema is MLflow's to change.
MLflow (``mlflow-skinny`` is enough, with SQLAlchemy and Alembic) must be installed
(``pip install 'clkit[interop]'``).

The file is opened only when it is an SQLite database holding MLflow's ``experiments``, ``runs``
and ``metrics`` tables: MLflow's store would otherwise create its tables in any SQLite file it is
given. A database of an older MLflow schema is refused by MLflow (``mlflow db upgrade``), and the
message says so.

Each run becomes one :class:`~clkit.compare.runs.Run` exactly as from a file store: per-task
accuracies logged as metrics whose key names the evaluated task, at the step of the task trained;
method and seed from the run's params, then tags (``method_key``, ``seed_key``). Deleted runs and
experiments are skipped and named in ``notes``.

Examples
--------
>>> import tempfile
>>> f = Path(tempfile.mkdtemp()) / "mlflow.db"
>>> _ = f.write_bytes(b"not a database")
>>> is_sqlite(f)
False
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .runs import Run, Runs

__all__ = ["SQLITE_MAGIC", "is_sqlite", "is_mlflow_db", "read_mlflow_db"]

#: the first 16 bytes of every SQLite 3 database file
SQLITE_MAGIC = b"SQLite format 3\x00"
_TABLES = {"experiments", "runs", "metrics", "params", "tags"}


def is_sqlite(path) -> bool:
    """Whether ``path`` is an SQLite 3 database file (by its header).

    Examples
    --------
    >>> import tempfile, sqlite3
    >>> f = Path(tempfile.mkdtemp()) / "x.db"
    >>> sqlite3.connect(f).execute("create table t (a)").connection.commit()
    >>> is_sqlite(f)
    True
    """
    p = Path(path)
    if not p.is_file():
        return False
    with open(p, "rb") as fh:
        return fh.read(16) == SQLITE_MAGIC


def _tables(p: Path) -> set:
    con = sqlite3.connect(f"file:{p.resolve()}?mode=ro", uri=True)
    try:
        return {r[0] for r in con.execute("select name from sqlite_master where type = 'table'")}
    finally:
        con.close()


def is_mlflow_db(path) -> bool:
    """Whether ``path`` is an SQLite database holding MLflow's tracking tables (opened read-only).

    Examples
    --------
    >>> import tempfile, sqlite3
    >>> f = Path(tempfile.mkdtemp()) / "other.db"
    >>> sqlite3.connect(f).execute("create table t (a)").connection.commit()
    >>> is_mlflow_db(f)
    False
    """
    p = Path(path)
    if not is_sqlite(p):
        return False
    try:
        return _TABLES <= _tables(p)
    except sqlite3.Error:
        return False


def _client(p: Path, where: str):
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise ImportError(f"{where}: an MLflow SQLite store is read with MLflow's own client; install it "
                          "(pip install 'clkit[interop]', or mlflow-skinny), or export the runs' metric histories "
                          "as a table (docs/compare.md)") from None
    try:
        return MlflowClient(tracking_uri=f"sqlite:///{p.resolve()}")
    except Exception as exc:  # MLflow's own refusal (an out-of-date schema: mlflow db upgrade)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{where}: MLflow could not open the store: {first}. If the database was written by an "
                         "older MLflow, upgrade a copy of it with "
                         f"`mlflow db upgrade sqlite:///{p.resolve()}`") from None


def read_mlflow_db(path, *, experiment: str | None = None, metric_pattern: str | None = None,
                   method_key: str = "method", seed_key: str = "seed", steps: str = "index", task_base: int = 0,
                   percent: bool = False, method: str | None = None, seed: str | None = None,
                   label: str = "") -> Runs:
    """Runs of an MLflow SQLite store, read with ``MlflowClient(tracking_uri="sqlite:///PATH")``.

    Parameters
    ----------
    path : str or Path
        The database file (``mlflow.db``).
    experiment, metric_pattern, method_key, seed_key, steps, task_base, percent, method, seed, label
        As :func:`clkit.compare.trackers.read_mlflow_store`.

    Returns
    -------
    Runs
        ``format="mlflow"``, one run per active MLflow run; ``source`` is ``<file> run <run_id>``.

    Examples
    --------
    >>> import tempfile, sqlite3
    >>> f = Path(tempfile.mkdtemp()) / "other.db"
    >>> sqlite3.connect(f).execute("create table t (a)").connection.commit()
    >>> read_mlflow_db(f)
    Traceback (most recent call last):
    ...
    ValueError: ...: an SQLite database without MLflow's tables (experiments, metrics, params, runs, tags): not an MLflow store
    """
    from .tracker_series import _field, _matrix, _no_reruns, _pick_one

    p = Path(path)
    where_f = f"{str(p)!r}" + (f" (run {label})" if label else "")
    if not p.is_file():
        raise FileNotFoundError(f"{where_f}: field file: no such MLflow database")
    if not is_sqlite(p):
        raise ValueError(f"{where_f}: not an SQLite database (MLflow's sqlite:/// store)")
    if not is_mlflow_db(p):
        raise ValueError(f"{where_f}: an SQLite database without MLflow's tables ({', '.join(sorted(_TABLES))}): not "
                         "an MLflow store")
    from mlflow.entities import ViewType

    client = _client(p, where_f)
    notes, todo = [], []
    for e in client.search_experiments(view_type=ViewType.ALL):
        if experiment is not None and str(experiment) not in (e.name, e.experiment_id):
            continue
        if e.lifecycle_stage == "deleted":
            notes.append(f"experiment {e.name!r} (id {e.experiment_id}) is deleted: not read")
            continue
        token = None
        while True:
            page = client.search_runs([e.experiment_id], run_view_type=ViewType.ALL, max_results=1000,
                                      page_token=token, order_by=["attributes.start_time ASC"])
            for run in page:
                if run.info.lifecycle_stage == "deleted":
                    notes.append(f"run {run.info.run_id} of experiment {e.name!r} is deleted: not read")
                    continue
                todo.append((run, e.name))
            token = page.token
            if not token:
                break
    if not todo:
        what = f" of experiment {experiment!r}" if experiment is not None else ""
        raise ValueError(f"{where_f}: no active MLflow run{what}" + (f" ({'; '.join(notes)})" if notes else ""))

    def logged(run):
        d = run.data
        return tuple(str(d.params.get(k) or d.tags.get(k) or "").strip() for k in (method_key, seed_key))

    todo = _pick_one(todo, where=repr(str(p)), method=method, seed=seed, logged=[logged(r) for r, _ in todo])
    hint = ("log it (mlflow.log_param('{key}', ...)), pass {opt}=<the param or tag naming it>, or name the run in a "
            "manifest (file, method, seed, format mlflow)")
    runs = []
    for run, ename in todo:
        run_id, name = run.info.run_id, run.info.run_name
        where_id = f"{str(p)!r} (run {run_id}" + (f" {name!r}" if name else "")
        sources = [("params/", dict(run.data.params)), ("tags/", dict(run.data.tags))]
        m, m_from = _field(sources, method_key, given=method, where=where_id + ")", what="method",
                           hint=hint.format(key=method_key, opt="method_key"))
        s, s_from = _field(sources, seed_key, given=seed, where=where_id + ")", what="seed",
                           hint=hint.format(key=seed_key, opt="seed_key"))
        run_label = label or f"{m} seed {s}"
        series = {}
        for key in sorted(run.data.metrics):
            hist = client.get_metric_history(run_id, key)
            series[key] = [(int(h.step), float(h.value), (int(h.timestamp), n)) for n, h in enumerate(hist)]
        R, used = _matrix(series, where=f"{where_id}, {run_label})", metric_pattern=metric_pattern, steps=steps,
                          task_base=task_base, percent=percent)
        rest = sorted(k for k in run.data.params if k not in (method_key, seed_key))
        used = (f"{used} (MLflow SQLite store, run {run_id}" + (f" {name!r}" if name else "")
                + f", experiment {ename!r}, read with MlflowClient); method from {m_from}, seed from {s_from}")
        if rest:
            used += "; params read, not used: " + ", ".join(rest)
        runs.append(Run(m, s, None, None, R, f"{p} run {run_id}", {}, used))
    _no_reruns(runs)
    return Runs(runs, str(p), "mlflow", notes)
