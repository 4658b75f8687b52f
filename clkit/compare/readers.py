"""Readers: runs from a tidy folder, a long CSV or Avalanche's ``CSVLogger``, all into one :class:`Runs`.

Every reader returns :class:`~clkit.compare.runs.Runs`: one :class:`~clkit.compare.runs.Run` per
run with its accuracy matrix on the fraction scale, the file it came from and what was used from
it. Nothing is dropped without a word: a value read but not used is named in the run's ``used``
(or in ``Runs.notes``), and anything that cannot be read raises ``ValueError`` naming the file,
the run and the field (:mod:`clkit.compare.checks`).

Formats (see ``docs/compare.md``)
---------------------------------
**Tidy folder** -- a folder with a manifest ``runs.csv`` (or ``runs.yaml``: a list of mappings,
or ``{"runs": [...]}``), one row per run:

=====================  =====================================================================
column                 meaning
=====================  =====================================================================
``file``               the run's accuracy matrix, relative to the manifest's folder (required):
                       a CSV matrix ``R`` (T x T, row i = after training task i, column j =
                       task j; empty / NaN cells only above the diagonal; a header row or index
                       column with text is recognised as by ``clkit metrics cl``), an
                       Avalanche ``eval_results.csv`` (or the folder holding one), or a ``.json``
                       file of Avalanche's ``strategy.eval`` results dicts
``method``, ``seed``   required
``order``              class-order id (optional; runs pair on seed, order, taskification)
``taskification``      optional
``reported_acc``,      the framework's own summary numbers (optional), on the matrices'
``reported_bwt``,      scale; compared with the recomputed ones, never used in their place
``reported_fwt``,
``reported_forgetting``
``format``             optional: ``matrix``, ``avalanche``, ``mammoth`` (``logs.pyd``), ``pycil``
                       (PyCIL's log; :mod:`clkit.compare.frameworks`), ``mlflow`` or ``wandb``
                       (:mod:`clkit.compare.trackers`); empty: an MLflow run folder or a table
                       with columns ``key, value, step`` MLflow, a ``.csv`` / ``.json`` /
                       ``.jsonl`` with ``_step`` W&B, another ``*.json`` Avalanche's results
                       dicts, ``*.pyd`` mammoth, a first line ``<time> [<file>.py] => ...``
                       PyCIL, Avalanche's header Avalanche, anything else a matrix
``metric_pattern``     optional, ``mlflow`` / ``wandb`` rows: the regex naming the evaluated task
                       in the metric keys (a named group ``task``)
=====================  =====================================================================

**Long CSV** -- one file, one row per matrix cell: ``method, seed, [order], [taskification], i,
j, accuracy`` (``i`` = task trained up to, ``j`` = task evaluated, 0-based). Cells not given are
missing (allowed above the diagonal only).

**Avalanche 0.6 ``CSVLogger``** -- ``eval_results.csv`` with the header
``eval_exp,training_exp,eval_accuracy,eval_loss,forgetting`` and one row per evaluated
experience after each training experience (``training_exp`` is ``None`` for an evaluation before
any training), written by ``avalanche/logging/csv_logger.py``. Its ``eval_accuracy`` is
``Top1_Acc_Exp`` (a fraction, written with ``%.4f``);
``eval_loss`` and ``forgetting`` (Avalanche's ``ExperienceForgetting``, written as 0 when that
metric is not monitored) are read but not used, and rows with ``training_exp = None`` (scores
before training) are listed as not used. The file carries no method or seed: a manifest names them.

**Avalanche 0.6's ``eval`` results dicts** -- what ``strategy.eval(benchmark.test_stream)`` returns
(``{"Top1_Acc_Exp/eval_phase/test_stream/Task000/Exp001": 0.475, ...}``), one dict per training
experience in training order, as a Python list or a JSON file holding that list
(``json.dump(results, fh, default=str)``); a manifest row's ``file`` ending in ``.json`` is read
so (:func:`read_avalanche_results`). ``R[i, j]`` is ``Top1_Acc_Exp`` of experience ``j`` in dict
``i``; the last dict's ``Top1_Acc_Stream`` becomes the reported ACC (equal to clkit's ``acc`` when
the experiences' test sets are equal in size); other keys are counted as read, not used.

Both Avalanche formats were checked against real runs of avalanche-lib 0.6.0 (PyPI) with torch
2.14 on 2026-11-27 (``tests/test_compare_avalanche.py`` trains Naive and Replay on a tiny
3-experience benchmark for two seeds and reads what they wrote); the CSV matched the format read
here, inferred first from ``avalanche/logging/csv_logger.py`` at tag v0.6.0 (commit
b34abe5c93adb0cfd5a38aaf9e2bb22144a8c3aa).

**mammoth / PyCIL** -- a folder without a manifest holding ``**/logs.pyd`` or ``**/*.log``, a
single such file, or manifest rows: see :mod:`clkit.compare.frameworks` (formats inferred from their
code; both log percentages, always divided by 100).

**MLflow / W&B** -- an MLflow file store (or one experiment or run folder of it), a folder of W&B
history exports with their config sidecars, a single such export, or manifest rows: see
:mod:`clkit.compare.trackers` (per-task accuracies logged as metrics, the step = the task trained).
Their options (``metric_pattern``, ``method_key``, ``seed_key``, ``steps``, ``task_base``) are
keyword arguments of :func:`read_runs` and :func:`read_folder`.

Percent or fraction: matrices hold fractions in [0, 1]; with ``percent=True`` they hold
percentages in [0, 100] and are divided by 100 (the reported numbers too). A value outside the
scale is refused, naming the file, the run and the cell.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np

from .._io import MAX_LINE_BYTES, check_lines, read_text
from .checks import check_scores
from .frameworks import FORMATS as _FRAMEWORK_FORMATS
from .runs import Run, Runs
from .trackers import TRACKER_FORMATS, TRACKER_OPTIONS, read_tracker_file, read_tracker_folder, sniff_tracker

__all__ = ["REPORTED", "AVALANCHE_HEADER", "read_runs", "read_folder", "read_long_csv", "read_avalanche_csv",
           "read_avalanche_results", "read_matrix_file"]

#: manifest column -> metric key of the framework's own summary numbers
REPORTED = {"reported_acc": "acc", "reported_bwt": "bwt", "reported_fwt": "fwt", "reported_forgetting": "forgetting"}
#: the header Avalanche 0.6's CSVLogger writes to eval_results.csv
AVALANCHE_HEADER = ("eval_exp", "training_exp", "eval_accuracy", "eval_loss", "forgetting")
#: values of a manifest's ``format`` column
FORMATS = _FRAMEWORK_FORMATS + TRACKER_FORMATS
_MANIFEST = ("file", "method", "seed", "order", "taskification", "format", "metric_pattern") + tuple(REPORTED)
_LONG = ("method", "seed", "order", "taskification", "i", "j", "accuracy")
_AV_EXP = re.compile(r"Top1_Acc_Exp/eval_phase/(?P<stream>[^/]+)/Task(?P<task>\d+)/Exp(?P<exp>\d+)")
_AV_STREAM = re.compile(r"Top1_Acc_Stream/eval_phase/(?P<stream>[^/]+)/Task(?P<task>\d+)")
_AV_SFORG = re.compile(r"Stream(?P<what>Forgetting|BWT)/eval_phase/(?P<stream>[^/]+)")
_AV_EFORG = re.compile(r"ExperienceForgetting/eval_phase/(?P<stream>[^/]+)/Task(?P<task>\d+)/Exp(?P<exp>\d+)")


def _label(method, seed, order=None, taskification=None) -> str:
    return Run(method, seed, order, taskification, np.eye(2), "").label


def _text(value):
    """A manifest cell as text, or None when empty."""
    if value is None:
        return None
    text = str(value).strip()
    return text if text and text.lower() not in ("nan", "none", "null") else None


def _tracker_options(tracker: dict) -> dict:
    unknown = sorted(set(tracker) - set(TRACKER_OPTIONS))
    if unknown:
        raise TypeError(f"unknown option(s) {unknown}; the tracker readers take {', '.join(TRACKER_OPTIONS)}")
    return {k: v for k, v in tracker.items() if v is not None}


def read_runs(path, *, percent: bool = False, **tracker) -> Runs:
    """Runs from ``path``: a folder with ``runs.csv`` / ``runs.yaml``, a manifest file, a long CSV, a framework's
    or tracker's folder or file (mammoth, PyCIL, MLflow, W&B).

    ``tracker`` holds the MLflow / W&B readers' options (``metric_pattern``, ``method_key``,
    ``seed_key``, ``steps``, ``task_base``: :mod:`clkit.compare.trackers`).

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> _ = open(os.path.join(d, "long.csv"), "w").write(
    ...     "method,seed,i,j,accuracy\\na,0,0,0,0.9\\na,0,1,0,0.7\\na,0,1,1,0.8\\n")
    >>> rs = read_runs(os.path.join(d, "long.csv"))
    >>> rs.format, rs.runs[0].R.tolist()
    ('long', [[0.9, nan], [0.7, 0.8]])
    """
    p = Path(path)
    tracker = _tracker_options(tracker)
    if p.is_dir() and not any((p / n).exists() for n in ("runs.csv", "runs.yaml", "runs.yml")):
        from .frameworks import read_framework_folder

        found = read_tracker_folder(p, percent=percent, **tracker)  # first: a W&B run folder holds *.log files
        if found is not None:
            return found

        found = read_framework_folder(p)
        if found is not None:
            return found
    if p.is_dir() or p.name in ("runs.csv", "runs.yaml", "runs.yml"):
        return read_folder(p, percent=percent, **tracker)
    if p.exists() and _sniff(p) in TRACKER_FORMATS:
        return read_tracker_file(p, _sniff(p), percent=percent, **tracker)
    if p.exists() and _sniff(p) in ("mammoth", "pycil"):
        from .frameworks import read_mammoth_log, read_pycil_log

        return (read_mammoth_log if _sniff(p) == "mammoth" else read_pycil_log)(p)
    if not p.exists():
        raise FileNotFoundError(f"runs: {str(p)!r} does not exist; give a folder with runs.csv / runs.yaml or a "
                                "long CSV (method, seed, [order], i, j, accuracy)")
    return read_long_csv(p, percent=percent)


def _manifest(p: Path) -> tuple[Path, list]:
    if p.is_dir():
        found = [p / n for n in ("runs.csv", "runs.yaml", "runs.yml") if (p / n).exists()]
        if not found:
            raise FileNotFoundError(f"runs folder {str(p)!r} has no manifest runs.csv or runs.yaml (one row per run: "
                                    "file, method, seed, [order], [taskification], [reported_acc, ...])")
        if len(found) > 1:
            raise ValueError(f"runs folder {str(p)!r} has two manifests ({', '.join(f.name for f in found)}); keep one")
        p = found[0]
    if p.suffix in (".yaml", ".yml"):
        import yaml

        data = yaml.safe_load(read_text(p, "runs manifest"))
        rows = data.get("runs") if isinstance(data, dict) else data
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ValueError(f"manifest {str(p)!r}: expected a list of runs (mappings with file, method, seed), "
                             "or a mapping with the key 'runs' holding one")
        rows = [{str(k): v for k, v in r.items()} for r in rows]
    else:
        with open(check_lines(p, "runs manifest"), newline="") as fh:
            rows = [dict(r) for r in csv.DictReader(fh)]
    if not rows:
        raise ValueError(f"manifest {str(p)!r} lists no runs")
    return p, rows


def read_folder(path, *, percent: bool = False, **tracker) -> Runs:
    """Runs listed in a manifest (``runs.csv`` / ``runs.yaml``), each file a matrix or Avalanche's log.

    Parameters
    ----------
    path : str or Path
        The folder holding the manifest, or the manifest itself.
    percent : bool
        Scores (and reported numbers) are percentages.
    **tracker
        Options of the MLflow / W&B readers for rows of those formats (:mod:`clkit.compare.trackers`);
        a row's ``metric_pattern`` takes precedence.

    Returns
    -------
    Runs
        ``format="folder"``; manifest columns that are not part of the format are named in ``notes``.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> _ = open(os.path.join(d, "a0.csv"), "w").write("0.9,\\n0.6,0.8\\n")
    >>> _ = open(os.path.join(d, "runs.csv"), "w").write("file,method,seed,reported_acc\\na0.csv,a,0,0.7\\n")
    >>> r = read_folder(d).runs[0]
    >>> r.label, r.reported, r.R.tolist()
    ('a seed 0', {'acc': 0.7}, [[0.9, nan], [0.6, 0.8]])
    """
    tracker = _tracker_options(tracker)
    mpath, rows = _manifest(Path(path))
    where_m = f"manifest {str(mpath)!r}"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    for need in ("file", "method", "seed"):
        if need not in cols:
            raise ValueError(f"{where_m} has no column {need!r} (columns: {cols}); each run needs file, method, seed")
    extra = [c for c in cols if c not in _MANIFEST]
    runs = []
    for n, row in enumerate(rows, start=2 if mpath.suffix == ".csv" else 1):
        at = f"{where_m} {'line' if mpath.suffix == '.csv' else 'entry'} {n}"
        vals = {k: _text(row.get(k)) for k in ("file", "method", "seed", "order", "taskification")}
        for need in ("file", "method", "seed"):
            if vals[need] is None:
                raise ValueError(f"{at}: field {need} is empty; each run needs file, method, seed")
        label = _label(vals["method"], vals["seed"], vals["order"], vals["taskification"])
        f = (mpath.parent / vals["file"])
        reported = {}
        for col, key in REPORTED.items():
            cell = _text(row.get(col))
            if cell is None:
                continue
            try:
                x = float(cell)
            except ValueError:
                raise ValueError(f"{at} (run {label}): field {col} = {cell!r} is not a number") from None
            if not np.isfinite(x):
                raise ValueError(f"{at} (run {label}): field {col} = {cell!r} is not a finite number")
            reported[key] = x / 100.0 if percent else x
        fmt = _text(row.get("format"))
        if fmt is not None and fmt.lower() not in FORMATS:
            raise ValueError(f"{at} (run {label}): field format = {fmt!r}; expected one of {', '.join(FORMATS)} "
                             "(empty: recognised from the file)")
        fmt = fmt.lower() if fmt else (_sniff(f) if f.exists() else "avalanche" if f.suffix == ".json" else None)
        if fmt == "avalanche" and f.suffix == ".json":
            R, own, used = read_avalanche_results(f, run=label, percent=percent)
            source = str(f)
            overridden = sorted(set(reported) & set(own))
            reported = {**own, **reported}
            if overridden:
                used += "; manifest's " + ", ".join(f"reported_{k}" for k in overridden) + " used over the dicts'"
            fmt = "avalanche results"
        elif fmt in TRACKER_FORMATS:
            opts = {**tracker, "metric_pattern": _text(row.get("metric_pattern")) or tracker.get("metric_pattern")}
            one = read_tracker_file(f, fmt, percent=percent, method=vals["method"], seed=vals["seed"], label=label,
                                    **opts).runs[0]
            R, source, used = one.R, one.source, one.used
            if reported:
                used += "; reported " + ", ".join(sorted(reported)) + " from the manifest (compared, not used)"
        elif fmt in ("mammoth", "pycil"):
            from .frameworks import read_mammoth_log, read_pycil_log

            one = (read_mammoth_log if fmt == "mammoth" else read_pycil_log)(
                f, method=vals["method"], seed=vals["seed"], label=label).runs[0]
            R, source, used = one.R, one.source, one.used
            overridden = sorted(set(reported) & set(one.reported))
            reported = {**one.reported, **reported}
            if overridden:
                used += "; manifest's " + ", ".join(f"reported_{k}" for k in overridden) + " used over the log's"
        else:
            if fmt == "avalanche" and f.is_file() and not _is_avalanche(f):
                raise ValueError(f"{str(f)!r} (run {label}): field format = avalanche, but the header is not "
                                 f"{','.join(AVALANCHE_HEADER)}")
            manifest_keys = sorted(reported)
            R, source, used, own = read_matrix_file(f, run=label, percent=percent, with_reported=True)
            reported = {**own, **reported}
            if manifest_keys:
                used += "; reported " + ", ".join(manifest_keys) + " from the manifest (compared, not used)"
        extra_here = [c for c in extra if _text(row.get(c)) is not None]
        if extra_here:
            used += "; manifest columns not used: " + ", ".join(extra_here)
        runs.append(Run(vals["method"], vals["seed"], vals["order"], vals["taskification"], R, source, reported,
                        used))
    notes = [f"manifest columns not part of the format, read and not used: {', '.join(extra)}"] if extra else []
    return Runs(runs, str(mpath), "folder", notes)


def _sniff(f: Path) -> str | None:
    """The format of one run's file when the manifest gives none: an MLflow or W&B export
    (:func:`~clkit.compare.trackers.sniff_tracker`) ``mlflow`` / ``wandb``, another folder None (a matrix
    reader's ``CSVLogger`` folder), another ``*.json`` Avalanche's results dicts, ``*.pyd`` mammoth's
    ``logs.pyd``, a file whose first line is ``<date> <time>,<ms> [<file>.py] => ...`` PyCIL's log,
    Avalanche's header ``avalanche``, anything else a ``matrix``."""
    tracker = sniff_tracker(f)
    if tracker is not None or f.is_dir():
        return tracker
    if f.suffix == ".json":
        return "avalanche"
    if f.suffix == ".pyd":
        return "mammoth"
    if f.suffix == ".log" and f.is_file() and f.stat().st_size == 0:
        return "pycil"  # a later seed's log of a multi-seed PyCIL run (clkit.compare.frameworks)
    with open(f, newline="", errors="replace") as fh:
        first = fh.readline(MAX_LINE_BYTES)
    if re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ \[[^\]]+\.py\] => ", first):
        return "pycil"
    return "avalanche" if tuple(c.strip() for c in first.strip().split(",")) == AVALANCHE_HEADER else "matrix"


def _is_avalanche(f: Path) -> bool:
    with open(f, newline="") as fh:
        first = fh.readline(MAX_LINE_BYTES).strip()
    return tuple(c.strip() for c in first.split(",")) == AVALANCHE_HEADER


def read_matrix_file(path, *, run: str, percent: bool = False, with_reported: bool = False) -> tuple:
    """``(R, source, used)`` of one run's file: a matrix CSV, or Avalanche's ``eval_results.csv`` (or its folder).

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "R.csv")
    >>> _ = open(f, "w").write("t0,t1\\n90,\\n60,80\\n")
    >>> R, source, used = read_matrix_file(f, run="a seed 0", percent=True)
    >>> R.tolist(), used
    ([[0.9, nan], [0.6, 0.8]], 'R 2 x 2 (header row: yes; index column: no; scale 0-100, divided by 100)')
    """
    f = Path(path)
    if f.is_dir():
        if not (f / "eval_results.csv").exists():
            raise FileNotFoundError(f"{str(f)!r} (run {run}): field file is a folder without eval_results.csv "
                                    "(Avalanche's CSVLogger); give a matrix CSV or a CSVLogger folder")
        f = f / "eval_results.csv"
    if not f.exists():
        raise FileNotFoundError(f"{str(f)!r} (run {run}): field file: no such file")
    if _is_avalanche(f):
        R, reported, used = read_avalanche_csv(f, run=run, percent=percent, with_reported=True)
        if with_reported:
            return R, str(f), used, reported
        return R, str(f), used
    from ..data.user import load_matrix_csv

    lines = []
    try:
        R = load_matrix_csv(f, name="R", nan_allowed="above", scale="any", log=lines.append)
    except ValueError as exc:
        raise ValueError(f"{str(f)!r} (run {run}): field accuracy: {exc}") from None
    R = check_scores(R, where=f"{str(f)!r} (run {run})", percent=percent)
    how = lines[0].split(": read ", 1)[-1].rstrip(")").replace("scale as given", "") if lines else ""
    how = how.split(" (", 1)[1] if " (" in how else how
    how = how.rstrip("; ")
    scale = "scale 0-100, divided by 100" if percent else "scale 0-1"
    used = f"R {len(R)} x {len(R)} ({how}; {scale})"
    return (R, str(f), used, {}) if with_reported else (R, str(f), used)


def _from_cells(cells: dict, T: int, *, where: str, percent: bool) -> np.ndarray:
    """The checked T x T matrix of ``{(i, j): score}``, NaN where no cell is given."""
    R = np.full((T, T), np.nan)
    for (i, j), x in cells.items():
        R[i, j] = x
    return check_scores(R, where=where, percent=percent)


def read_avalanche_csv(path, *, run: str = "", percent: bool = False, with_reported: bool = False) -> tuple:
    """``(R, used)`` from Avalanche 0.6's ``CSVLogger`` ``eval_results.csv`` (format inferred from its code:
    see the module docstring).

    ``R[i, j]`` is ``eval_accuracy`` of the row with ``training_exp = i`` and ``eval_exp = j``. A pair
    logged twice (``eval`` called twice after one training experience) keeps the last row, and the
    ``used`` text says so; rows with ``training_exp = None`` (evaluation before training) are not used.

    CSVLogger starts every row's values at the integer ``0`` and writes a measured float with
    ``%.4f`` (``avalanche/logging/csv_logger.py``, ``after_eval_exp`` / ``_val_to_str``): an
    ``eval_accuracy`` written ``0`` (not ``0.0000``) was never measured (the plugin lacks
    ``accuracy_metrics(experience=True)``) and the file is refused, naming that fix. The
    ``forgetting`` column is Avalanche's ``ExperienceForgetting``, ``R[k, k] - R[i, k]`` for ``k < i``
    (``0`` elsewhere and when not monitored); where the last training experience's rows hold measured
    values, ``with_reported=True`` returns them as ``reported["forgetting_exp"]`` (one per ``k < T-1``),
    checked cell by cell against R (:mod:`clkit.compare.metrics`).

    Returns
    -------
    R : ndarray, shape (T, T)
    reported : dict
        Only with ``with_reported=True``: ``{"forgetting_exp": [...]}`` or ``{}``.
    used : str

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "eval_results.csv")
    >>> _ = open(f, "w").write("eval_exp,training_exp,eval_accuracy,eval_loss,forgetting\\n"
    ...     "0,0,0.9000,0.3000,0\\n1,0,0.1000,2.0000,0\\n0,1,0.6000,1.1000,0.3000\\n1,1,0.8000,0.5000,0\\n")
    >>> R, used = read_avalanche_csv(f, run="naive seed 0")
    >>> R.tolist()
    [[0.9, 0.1], [0.6, 0.8]]
    """
    f = Path(path)
    where = f"{str(f)!r} (run {run})" if run else repr(str(f))
    with open(check_lines(f, "matrix"), newline="") as fh:
        table = list(csv.reader(fh))
    if not table or tuple(c.strip() for c in table[0]) != AVALANCHE_HEADER:
        raise ValueError(f"{where}: not Avalanche's eval_results.csv: the header must be {','.join(AVALANCHE_HEADER)}")
    cells, before, repeated, texts, forg = {}, 0, 0, {}, {}
    for n, row in enumerate(table[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(AVALANCHE_HEADER):
            raise ValueError(f"{where} line {n}: {len(row)} cells, expected {len(AVALANCHE_HEADER)} "
                             f"({','.join(AVALANCHE_HEADER)}); a tensor-valued metric (written over several lines "
                             "by CSVLogger) cannot be read")
        ev, tr, acc = (c.strip() for c in row[:3])
        if tr == "None":
            before += 1
            continue
        try:
            i, j = int(tr), int(ev)
        except ValueError:
            raise ValueError(f"{where} line {n}: field training_exp / eval_exp must be experience numbers, got "
                             f"{tr!r} / {ev!r}") from None
        try:
            x = float(acc)
        except ValueError:
            raise ValueError(f"{where} line {n}: field eval_accuracy = {acc!r} is not a number") from None
        if i < 0 or j < 0:
            raise ValueError(f"{where} line {n}: field training_exp / eval_exp must be >= 0, got {tr} / {ev}")
        repeated += (i, j) in cells
        cells[(i, j)] = x
        texts[(i, j)] = (acc, n)
        forg[(i, j)] = row[4].strip()
    if not cells:
        raise ValueError(f"{where}: no evaluation after training (no row with a training_exp number)")
    literal = [(n, t) for t, n in texts.values() if re.fullmatch(r"[+-]?\d+", t)]
    if literal:
        n, t = literal[0]
        raise ValueError(f"{where} line {n}: field eval_accuracy is the literal {t!r} in {len(literal)} of "
                         f"{len(texts)} row(s) (a measured accuracy is written with 4 decimals, e.g. 0.0000): "
                         "CSVLogger writes this placeholder when no experience accuracy was computed, i.e. the "
                         "EvaluationPlugin lacks accuracy_metrics(experience=True). Add it to the plugin's metrics "
                         "and train again (or keep strategy.eval's results dicts, docs/compare.md)")
    T = 1 + max(max(k) for k in cells)
    R = _from_cells(cells, T, where=where, percent=percent)
    used = (f"R {T} x {T} from eval_accuracy (Avalanche CSVLogger, {len(cells)} cells"
            + ("; percent, divided by 100" if percent else "") + "); eval_loss read, not used")
    last = [forg.get((T - 1, k)) for k in range(T - 1)]
    reported = {}
    if all(t is not None and re.fullmatch(r"[+-]?\d*\.\d+", t) for t in last):
        reported["forgetting_exp"] = [float(t) / (100.0 if percent else 1.0) for t in last]
        used += "; reported forgetting_exp from the last training experience's forgetting (ExperienceForgetting)"
    else:
        used += "; forgetting not monitored (CSVLogger's placeholder 0), not used"
    if before:
        used += f"; {before} row(s) before training (training_exp None) not used"
    if repeated:
        used += f"; {repeated} repeated (training_exp, eval_exp) row(s): the last one used"
    if with_reported:
        return R, reported, used
    return R, used


def read_avalanche_results(results, *, run: str = "", stream: str | None = None,
                           percent: bool = False) -> tuple[np.ndarray, dict, str]:
    """``(R, reported, used)`` from Avalanche 0.6's ``strategy.eval`` results dicts (or a JSON file of them).

    Parameters
    ----------
    results : list of dict, or str or Path
        What ``strategy.eval(benchmark.test_stream)`` returned after each ``strategy.train(exp)``, in
        training order (one dict per training experience), or a JSON file holding that list
        (``json.dump(results, fh, default=str)``).
    run : str
        The run's label for messages (``"naive seed 0"``).
    stream : str, optional
        The evaluation stream to read (``"test_stream"``); by default the only one in the dicts.
    percent : bool
        The accuracies are percentages (Avalanche writes fractions; kept for symmetry with the other readers).

    Returns
    -------
    R : ndarray, shape (T, T)
        ``R[i, j]`` = ``Top1_Acc_Exp/eval_phase/<stream>/Task<t>/Exp<j>`` of dict ``i``; experiences not
        evaluated are NaN (allowed above the diagonal only).
    reported : dict
        From the last dict, each under the key of its definition (:data:`clkit.compare.metrics.FORMS`):
        ``acc_stream`` from ``Top1_Acc_Stream/eval_phase/<stream>/Task<t>`` when it has one task label
        (the accuracy over the whole stream's samples: clkit's ``acc`` when the experiences' test sets
        are equal in size); ``forgetting_stream`` from ``StreamForgetting/eval_phase/<stream>``
        (Avalanche 0.6: the mean over k < T-1 of ``R[k, k] - R[T-1, k]``, not Chaudhry's maximum);
        ``bwt`` from ``StreamBWT/eval_phase/<stream>`` (minus the former: Lopez-Paz's BWT); and
        ``forgetting_exp`` from ``ExperienceForgetting/.../Exp<k>``, k < T-1.
    used : str
        What was read and what was not.

    Examples
    --------
    >>> k = "Top1_Acc_Exp/eval_phase/test_stream/Task000/Exp00{}".format
    >>> dicts = [{k(0): 0.9, k(1): 0.1, "Loss_Exp/eval_phase/test_stream/Task000/Exp000": 0.3},
    ...          {k(0): 0.6, k(1): 0.8, "Top1_Acc_Stream/eval_phase/test_stream/Task000": 0.7}]
    >>> R, reported, used = read_avalanche_results(dicts, run="naive seed 0")
    >>> R.tolist(), reported
    ([[0.9, 0.1], [0.6, 0.8]], {'acc_stream': 0.7})
    >>> used
    'R 2 x 2 from Top1_Acc_Exp of test_stream (Avalanche eval results, 2 dicts, 4 cells); reported acc_stream from Top1_Acc_Stream (compared, not used); 1 other key(s) read, not used'
    """
    where = f"run {run}" if run else "Avalanche results"
    if isinstance(results, (str, Path)):
        f = Path(results)
        where = f"{str(f)!r} (run {run})" if run else repr(str(f))
        if not f.exists():
            raise FileNotFoundError(f"{where}: field file: no such file")
        import json

        try:
            results = json.loads(read_text(f, "results"))
        except ValueError as exc:
            raise ValueError(f"{where}: not JSON ({exc}); expected the list of strategy.eval results dicts") from None
    if isinstance(results, dict):
        results = [results]
    if not isinstance(results, (list, tuple)) or not results or not all(isinstance(d, dict) for d in results):
        raise ValueError(f"{where}: expected a non-empty list of strategy.eval results dicts (one per training "
                         "experience, in training order)")
    streams = sorted({m["stream"] for d in results for k in d if (m := _AV_EXP.fullmatch(str(k)))})
    if not streams:
        raise ValueError(f"{where}: no key Top1_Acc_Exp/eval_phase/<stream>/Task<t>/Exp<e>; monitor "
                         "accuracy_metrics(experience=True) in the EvaluationPlugin")
    if stream is None:
        if len(streams) > 1:
            raise ValueError(f"{where}: field stream: the dicts hold several streams ({', '.join(streams)}); "
                             "choose one with stream=...")
        stream = streams[0]
    elif stream not in streams:
        raise ValueError(f"{where}: field stream = {stream!r} is not in the dicts (streams: {', '.join(streams)})")
    cells, other = {}, 0
    for i, d in enumerate(results):
        for k, v in d.items():
            m = _AV_EXP.fullmatch(str(k))
            if not m or m["stream"] != stream:
                other += 1
                continue
            j = int(m["exp"])
            if (i, j) in cells:
                raise ValueError(f"{where} dict {i}: field {k}: experience {j} appears under two task labels")
            try:
                cells[(i, j)] = float(v)
            except (TypeError, ValueError):
                raise ValueError(f"{where} dict {i}: field {k} = {v!r} is not a number") from None
    T, width = len(results), 1 + max(j for _, j in cells)
    if width != T:
        raise ValueError(f"{where}: {T} results dict(s) but experiences 0..{width - 1} evaluated; give one dict per "
                         "training experience (strategy.eval after each strategy.train), in training order")
    R = _from_cells(cells, T, where=where, percent=percent)
    used = (f"R {T} x {T} from Top1_Acc_Exp of {stream} (Avalanche eval results, {T} dicts, {len(cells)} cells"
            + ("; percent, divided by 100" if percent else "") + ")")
    reported, taken = {}, 0
    scale = 100.0 if percent else 1.0

    def number(k, v):
        try:
            return float(v) / scale
        except (TypeError, ValueError):
            raise ValueError(f"{where} dict {T - 1}: field {k} = {v!r} is not a number") from None

    last = results[-1]
    accs = [(k, v) for k, v in last.items() if (m := _AV_STREAM.fullmatch(str(k))) and m["stream"] == stream]
    if len(accs) == 1:
        reported["acc_stream"] = number(*accs[0])
        taken += 1
    for k, v in last.items():
        m = _AV_SFORG.fullmatch(str(k))
        if m and m["stream"] == stream:
            reported["forgetting_stream" if m["what"] == "Forgetting" else "bwt"] = number(k, v)
            taken += 1
    exp_f = {int(m["exp"]): (k, v) for k, v in last.items()
             if (m := _AV_EFORG.fullmatch(str(k))) and m["stream"] == stream}
    if exp_f and sorted(exp_f) == list(range(T - 1)):
        reported["forgetting_exp"] = [number(*exp_f[k]) for k in range(T - 1)]
        taken += len(exp_f)
    if reported:
        names = {"acc_stream": "Top1_Acc_Stream", "forgetting_stream": "StreamForgetting", "bwt": "StreamBWT",
                 "forgetting_exp": "ExperienceForgetting"}
        used += "; reported " + ", ".join(f"{k} from {names[k]}" for k in reported) + " (compared, not used)"
    if other - taken:
        used += f"; {other - taken} other key(s) read, not used"
    return R, reported, used


def read_long_csv(path, *, percent: bool = False) -> Runs:
    """Runs from one long CSV: ``method, seed, [order], [taskification], i, j, accuracy``, a row per cell.

    Columns other than these are named in ``Runs.notes`` (read, not used). A cell given twice for
    one run is refused.

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "long.csv")
    >>> _ = open(f, "w").write("method,seed,order,i,j,accuracy\\n"
    ...     + "".join(f"a,{s},o1,{i},{j},{v}\\n" for s in (0, 1) for i, j, v in
    ...               [(0, 0, 0.9), (1, 0, 0.6), (1, 1, 0.8)]))
    >>> rs = read_long_csv(f)
    >>> [r.label for r in rs], rs.runs[1].source.endswith("rows 5-7")
    (['a seed 0 order o1', 'a seed 1 order o1'], True)
    """
    f = Path(path)
    if not f.exists():
        raise FileNotFoundError(f"long CSV {str(f)!r} does not exist")
    with open(check_lines(f, "long CSV"), newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
        cols = list(reader.fieldnames or [])
    where = f"long CSV {str(f)!r}"
    for need in ("method", "seed", "i", "j", "accuracy"):
        if need not in cols:
            raise ValueError(f"{where} has no column {need!r} (columns: {cols}); the long format is method, seed, "
                             "[order], [taskification], i, j, accuracy")
    groups: dict = {}
    for n, row in enumerate(rows, start=2):
        ident = tuple(_text(row.get(k)) for k in ("method", "seed", "order", "taskification"))
        if ident[0] is None or ident[1] is None:
            raise ValueError(f"{where} line {n}: field {'method' if ident[0] is None else 'seed'} is empty")
        label = _label(*ident)
        try:
            i, j = int(row["i"]), int(row["j"])
        except (TypeError, ValueError):
            raise ValueError(f"{where} line {n} (run {label}): fields i, j must be task numbers, got "
                             f"{row.get('i')!r}, {row.get('j')!r}") from None
        if i < 0 or j < 0:
            raise ValueError(f"{where} line {n} (run {label}): fields i, j must be >= 0, got {i}, {j}")
        cell = _text(row.get("accuracy"))
        try:
            x = float("nan") if cell is None else float(cell)
        except ValueError:
            raise ValueError(f"{where} line {n} (run {label}): field accuracy = {cell!r} is not a number") from None
        g = groups.setdefault(ident, {"cells": {}, "lines": []})
        if (i, j) in g["cells"]:
            raise ValueError(f"{where} line {n} (run {label}): field accuracy for (i, j) = ({i}, {j}) is given twice")
        g["cells"][(i, j)] = x
        g["lines"].append(n)
    if not groups:
        raise ValueError(f"{where} has no rows")
    extra = [c for c in cols if c not in _LONG]
    runs = []
    for ident, g in groups.items():
        label = _label(*ident)
        T = 1 + max(max(k) for k in g["cells"])
        R = np.full((T, T), np.nan)
        for (i, j), x in g["cells"].items():
            R[i, j] = x
        lines = g["lines"]
        span = f"rows {lines[0]}-{lines[-1]}" if lines[-1] - lines[0] + 1 == len(lines) else f"{len(lines)} rows"
        source = f"{f} {span}"
        R = check_scores(R, where=f"{source} (run {label})", percent=percent)
        used = f"R {T} x {T} from {len(lines)} cells" + ("; percent, divided by 100" if percent else "")
        if extra:
            used += "; columns not used: " + ", ".join(extra)
        runs.append(Run(ident[0], ident[1], ident[2], ident[3], R, source, {}, used))
    notes = [f"long CSV columns not part of the format, read and not used: {', '.join(extra)}"] if extra else []
    return Runs(runs, str(f), "long", notes)
