"""Readers of mammoth's ``logs.pyd`` and PyCIL's training log, into :class:`~clkit.compare.runs.Runs`.

Both formats were **inferred from the frameworks' code**, not produced by running them (neither
is installable here, offline); the fixtures in ``tests/data/compare/mammoth`` and
``tests/data/compare/pycil`` are written by ``tests/make_framework_fixtures.py`` in that format.

**mammoth** (aimagelab/mammoth, commit e75a491c69fd729edeb01431afb753d9157d9a81 of 2026-05-20;
``utils/loggers.py`` last changed in dc1ca3834d11b52b204dfdd2efa1aec8a5965c2e): ``Logger.write``
appends one line per run to ``<results_path>/<setting>/<dataset>/<model>/logs.pyd``: ``str()`` of
a dict holding the run's arguments (``vars(args)``: ``model``, ``dataset``, ``seed``, ...) plus

- ``accmean_task{i}`` (i = 1..T): the mean accuracy after training task i,
- ``accuracy_{j}_task{i}`` (j = 1..i): the accuracy on task j after training task i
  (``utils/evaluate.py``: ``correct / total * 100``, a **percentage**),
- ``forward_transfer``, ``backward_transfer``, ``forgetting``: ``None`` unless the run had
  ``--enable_other_metrics`` (``utils/metrics.py``), percentage points,
- ``cpu_memory_usage``, ``gpu_memory_usage``.

A class-il run writes a second line, the same keys with Task-IL accuracies, to
``<results_path>/task-il/<dataset>/<model>/logs.pyd``. Values may be plain numbers or, with
NumPy 2, ``np.float64(...)``; the line is parsed with :mod:`ast` (never evaluated). ``R[i, j]`` is
``accuracy_{j+1}_task{i+1} / 100``; the reported numbers are ``accmean_task{T}`` (ACC),
``backward_transfer``, ``forward_transfer`` and ``forgetting``, divided by 100. Runs with
``--eval_epochs``, ``--eval_future`` or ``--validation`` log extra rows (mammoth appends a row per
call to ``Logger.log_fullacc``); those are refused, since their rows are not one per task.

**PyCIL** (LAMDA-CL/PyCIL, commit f3509b8ca3f20660ce4aa13f19d5283de81b4b35 of 2026-01-29;
``trainer.py`` and ``utils/toolkit.py`` last changed in 8b35a47154b3347b0a6e2eaff3477782053165b5):
``trainer._train`` logs through :mod:`logging` with the format
``%(asctime)s [%(filename)s] => %(message)s`` to ``logs/<model_name>/<dataset>/<init_cls or 0>/
<increment>/<prefix>_<seed>_<convnet_type>.log``. Of the ``[trainer.py]`` lines it writes, this
reader uses

- the arguments, one ``key: value`` line each (``print_args``) before the first task:
  ``model_name``, ``seed``, ``init_cls``, ``increment``, ``dataset``;
- per task, ``All params: N`` (a task begins), ``CNN: {...}`` (and ``NME: {...}`` for methods
  with class means): the ``grouped`` accuracy dict of ``models/base.py``'s ``_evaluate``, with
  ``total`` (all seen classes), ``old``, ``new`` and one key ``"aa-bb"`` per **group of 10
  classes** (``utils/toolkit.accuracy`` is called without ``increment``, so its default 10
  applies whatever the run's increment), percentages rounded to 2 decimals;
- at the end, ``Forgetting (CNN): x`` (and ``(NME)``), which marks the run as complete.

Row i of R is the grouped dict logged after task i: ``R[i, j]`` is the mean of the 10-class groups
inside task j's classes (task 0 = classes ``0 .. init_cls - 1``, then ``increment`` each), divided
by 100. This is exact when each task is one group (``init_cls = increment = 10``) and, for tasks of
several groups, when the groups have equal test sets (CIFAR-100, ImageNet's validation set); a
task count not a multiple of 10 cannot be recovered and is refused. Reported numbers: ACC = the
last ``total`` (accuracy over all classes), forgetting = ``Forgetting (CNN)``, divided by 100.
``CNN top1 curve`` and the other lines are read by no one here. A new run starts at the first
``[trainer.py]`` line after a task's lines that is none of the task messages (the next
``print_args`` block): ``train`` loops over seeds in one process, and :func:`logging.basicConfig`
keeps the first file, so one log can hold several seeds.

Both frameworks log percentages; the formats fix that, so these readers always divide by 100
(``--percent`` is for matrix, long and Avalanche files and the manifest's ``reported_*``).

Examples
--------
>>> import tempfile, os
>>> f = os.path.join(tempfile.mkdtemp(), "logs.pyd")
>>> _ = open(f, "w").write(str({"model": "derpp", "seed": 0, "accmean_task1": 90.0,
...     "accuracy_1_task1": 90.0, "accmean_task2": 70.0, "accuracy_1_task2": 60.0,
...     "accuracy_2_task2": 80.0, "forgetting": None}) + "\\n")
>>> read_mammoth_log(f).runs[0].R.tolist()
[[0.9, nan], [0.6, 0.8]]
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import numpy as np

from .._io import read_text
from .checks import check_scores
from .runs import Run, Runs

__all__ = ["MAMMOTH_COMMIT", "PYCIL_COMMIT", "parse_dict", "read_mammoth_log", "read_pycil_log",
           "read_framework_folder", "FORMATS"]

MAMMOTH_COMMIT = "e75a491c69fd729edeb01431afb753d9157d9a81"
PYCIL_COMMIT = "f3509b8ca3f20660ce4aa13f19d5283de81b4b35"
#: values of a manifest's ``format`` column
FORMATS = ("matrix", "avalanche", "mammoth", "pycil")
_NUMPY_SCALARS = {"float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool_", "str_"}
_CELL = re.compile(r"accuracy_(\d+)_task(\d+)")
_MEAN = re.compile(r"accmean_task(\d+)")
_PYCIL_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ \[(?P<file>[^\]]+)\] => (?P<msg>.*)$")
_GROUP = re.compile(r"(\d+)-(\d+)")
_PYCIL_TASK_MSGS = ("All params:", "Trainable params:", "CNN:", "NME:", "No NME accuracy.", "CNN top1 curve:",
                    "CNN top5 curve:", "NME top1 curve:", "NME top5 curve:", "Average Accuracy (CNN):",
                    "Average Accuracy (NME):", "Forgetting (CNN):", "Forgetting (NME):")


class _Unparsed(str):
    """The source text of a value that is not a literal (kept, never evaluated)."""


def _value(node, src):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(e, src) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_value(k, src) if k is not None else None: _value(v, src) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _value(node.operand, src)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.Name) and node.id in ("nan", "inf"):
        return float(node.id)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _NUMPY_SCALARS
            and isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy")
            and len(node.args) == 1 and not node.keywords):
        return _value(node.args[0], src)  # np.float64(93.2): NumPy 2's repr of a scalar
    return _Unparsed(ast.get_source_segment(src, node) or "?")


def parse_dict(text: str, *, where: str) -> dict:
    """A ``str(dict)`` line as a dict, without evaluating it: literals and ``np.float64(x)`` read, anything
    else kept as its source text.

    Examples
    --------
    >>> parse_dict("{'a': np.float64(93.5), 'b': None, 'c': [1, -2], 'd': Foo(3), 'e': <Foo at 0x1>}", where="x")
    {'a': 93.5, 'b': None, 'c': [1, -2], 'd': 'Foo(3)', 'e': '<…>'}
    >>> parse_dict("{'a': np.float64(93.5), 'b': No", where="x")
    Traceback (most recent call last):
    ...
    ValueError: x: not a Python dict as str() writes it (truncated?): '{' was never closed at column 1
    """
    text = text.strip()
    try:
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError:
            # an object's default repr (``<... at 0x...>``) is not Python: keep it as a placeholder string
            text = re.sub(r"<[^<>'\"]*>", "'<…>'", text)
            tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"{where}: not a Python dict as str() writes it (truncated?): {exc.msg} at column "
                         f"{exc.offset}") from None
    if not isinstance(tree.body, ast.Dict):
        raise ValueError(f"{where}: not a Python dict as str() writes it (expected '{{...}}')")
    out = {}
    for k, v in zip(tree.body.keys, tree.body.values):
        key = _value(k, text) if k is not None else None
        if not isinstance(key, str):
            raise ValueError(f"{where}: dict key {key!r} is not a string")
        out[key] = _value(v, text)
    return out


def _number(value, *, where: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: field {field} = {value!r} is not a number")
    if not math.isfinite(value):
        raise ValueError(f"{where}: field {field} = {value!r} is not a finite number")
    return float(value)


def pick_logged(runs: list, logged: list, seed, where: str, label: str, *, method=None, logged_methods=None) -> list:
    """The run of a file (or store) holding several whose logged seed is ``seed``: a manifest row's choice.

    ``logged`` holds each run's logged seed; where several runs have ``seed`` and
    ``logged_methods`` is given, the one whose logged method is ``method``. ``seed=None`` or
    one run: all of ``runs``. Used by the framework logs (mammoth, PyCIL) and the trackers
    (MLflow, W&B).

    Examples
    --------
    >>> pick_logged(["r1", "r2"], [1, 2], "2", "'log'", "er seed 2")
    ['r2']
    >>> pick_logged(["a", "b"], [1, 1], 1, "'store'", "b seed 1", method="b", logged_methods=["a", "b"])
    ['b']
    """
    if seed is None or len(runs) <= 1:
        return runs
    hit = [i for i, s in enumerate(logged) if str(s) == str(seed)]
    if len(hit) > 1 and logged_methods is not None:
        hit = [i for i in hit if str(logged_methods[i]) == str(method)]
    if len(hit) != 1:
        also = f" and method {method}" if logged_methods is not None else ""
        raise ValueError(f"{where} (run {label}): field seed: it holds {len(runs)} runs with seeds "
                         f"{[str(s) for s in logged]}, and {'none' if not hit else len(hit)} of them has seed {seed}"
                         f"{also}; the manifest's seed chooses the run (or point its file at the run's own folder)")
    return [runs[i] for i in hit]


def read_mammoth_log(path, *, method: str | None = None, seed: str | None = None, label: str = "") -> Runs:
    """Runs of mammoth's ``logs.pyd`` (one line per run; format inferred from its code, see the module docstring).

    Parameters
    ----------
    path : str or Path
        A ``logs.pyd`` as ``utils/loggers.py``'s ``Logger.write`` appends it.
    method, seed : str, optional
        Given by a manifest: the method name replaces the logged ``model``, and ``seed`` chooses the
        line whose logged ``seed`` matches when the file holds several runs (then labels the run).
    label : str
        How messages name the run (a manifest's run label).

    Returns
    -------
    Runs
        ``format="mammoth"``; each run's ``reported`` holds ``acc`` (``accmean_task{T}``) and, where
        logged, ``bwt`` (``backward_transfer``), ``fwt_random`` (``forward_transfer``: minus a random
        model's accuracy, not checkable from R) and ``forgetting_max`` (``forgetting``: the maximum over
        all rows, the last included), all divided by 100, each under the key of its definition
        (:data:`clkit.compare.metrics.FORMS`).

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "logs.pyd")
    >>> cells = {f"accuracy_{j}_task{i}": 100.0 - 10 * (i - j) for i in (1, 2) for j in range(1, i + 1)}
    >>> _ = open(f, "w").write("".join(str({"model": "er", "seed": s, "accmean_task1": 100.0,
    ...     "accmean_task2": 95.0, **cells, "forgetting": np.float64(10.0)}) + "\\n" for s in (0, 1)))
    >>> rs = read_mammoth_log(f)
    >>> [r.label for r in rs], rs.runs[0].R.tolist(), rs.runs[0].reported
    (['er seed 0', 'er seed 1'], [[1.0, nan], [0.9, 1.0]], {'acc': 0.95, 'forgetting_max': 0.1})
    """
    f = Path(path)
    if not f.exists():
        raise FileNotFoundError(f"{str(f)!r}{f' (run {label})' if label else ''}: field file: no such file")
    lines = [(n, t) for n, t in enumerate(read_text(f, "field file").splitlines(), start=1) if t.strip()]
    if not lines:
        raise ValueError(f"{str(f)!r}{f' (run {label})' if label else ''}: mammoth log with no runs (no lines)")
    runs, logged = [], []
    for n, text in lines:
        where = f"{str(f)!r} line {n}"
        if not label:  # name the run even when the line cannot be parsed
            mm, ss = re.search(r"'model': '([^']*)'", text), re.search(r"'seed': ([^,}]*)", text)
            guess = f"{method or (mm.group(1) if mm else '?')} seed {ss.group(1) if ss else '?'}"
        d = parse_dict(text, where=f"{where} (run {label or guess}): field line")
        m = method if method is not None else d.get("model")
        s = d.get("seed") if seed is None else seed
        run_label = label or f"{m} seed {s}"
        where_r = f"{where} (run {run_label})"
        if m is None or isinstance(m, _Unparsed):
            raise ValueError(f"{where_r}: field model is missing; name the method in a manifest")
        if s is None and seed is None:
            raise ValueError(f"{where_r}: field seed is None (mammoth ran without --seed); name the seed in a "
                             "manifest (file, method, seed, format=mammoth)")
        cells = {}
        for key, v in d.items():
            hit = _CELL.fullmatch(key)
            if hit:
                j, i = int(hit.group(1)) - 1, int(hit.group(2)) - 1
                cells[(i, j)] = _number(v, where=where_r, field=key)
        means = {int(h.group(1)) - 1: _number(v, where=where_r, field=k)
                 for k, v in d.items() if (h := _MEAN.fullmatch(k))}
        if not cells:
            raise ValueError(f"{where_r}: field accuracy_J_taskI: no per-task accuracies (mammoth writes them for "
                             "class-il, task-il and biased-class-il only; a domain-il log has only accmean_taskI)")
        T = 1 + max(i for i, _ in cells)
        if set(means) != set(range(T)):
            raise ValueError(f"{where_r}: field accmean_taskI: logged for tasks {sorted(k + 1 for k in means)}, "
                             f"but accuracy_J_taskI rows for tasks 1-{T}; truncated or edited line?")
        for i in range(T):
            js = sorted(j for ii, j in cells if ii == i)
            if js != list(range(i + 1)):
                extra = [j + 1 for j in js if j > i]
                why = (f"has tasks {[j + 1 for j in js]} after task {i + 1}; rows beyond the trained tasks come "
                       f"from --eval_epochs / --eval_future / --validation (eval_epochs={d.get('eval_epochs')!r}, "
                       f"eval_future={d.get('eval_future')!r}, validation={d.get('validation')!r}), which log "
                       "extra rows: not readable as one row per task") if extra else (
                       f"misses task(s) {[j + 1 for j in range(i + 1) if j not in js]} after task {i + 1}")
                raise ValueError(f"{where_r}: field accuracy_J_task{i + 1} {why}")
        R = np.full((T, T), np.nan)
        for (i, j), x in cells.items():
            R[i, j] = x
        R = check_scores(R, where=where_r, percent=True, declared=False)
        reported = {"acc": means[T - 1] / 100.0}
        for key, name in (("backward_transfer", "bwt"), ("forward_transfer", "fwt_random"),
                          ("forgetting", "forgetting_max")):
            if d.get(key) is not None:
                reported[name] = _number(d[key], where=where_r, field=key) / 100.0
        used = (f"R {T} x {T} from accuracy_J_taskI (mammoth logs.pyd line {n}; percent, divided by 100); reported "
                f"{', '.join(sorted(reported))} from accmean_task{T}"
                + ("".join(f", {k}" for k in ("backward_transfer", "forward_transfer", "forgetting")
                           if d.get(k) is not None)) + " (compared, not used); arguments and memory usage not used")
        runs.append(Run(str(m), str(s), None, None, R, f"{f} line {n}", reported, used))
        logged.append(d.get("seed"))
    runs = pick_logged(runs, logged, seed, repr(str(f)), label or f"{method} seed {seed}")
    return Runs(runs, str(f), "mammoth", [])


def _pycil_runs(f: Path) -> list:
    """Split a PyCIL log into runs: ``{"args": {...}, "cnn": [...], "nme": [...], ...}`` with line numbers."""
    runs, cur = [], None
    for n, raw in enumerate(read_text(f, "PyCIL log").splitlines(), start=1):
        hit = _PYCIL_LINE.match(raw)
        if not hit or hit.group("file") != "trainer.py":
            continue
        msg = hit.group("msg")
        task_msg = msg.startswith(_PYCIL_TASK_MSGS)
        if cur is None or (not task_msg and cur["tasks"]):
            cur = {"args": {}, "tasks": 0, "cnn": [], "nme": [], "forgetting": {}, "first": n, "last": n}
            runs.append(cur)
        cur["last"] = n
        if not task_msg:
            key, sep, value = msg.partition(": ")
            if sep:
                cur["args"][key.strip()] = (value.strip(), n)
            continue
        if msg.startswith("All params:"):
            cur["tasks"] += 1
        elif msg.startswith(("CNN:", "NME:")):
            head = msg[:3].lower()
            where = f"{str(f)!r} line {n}"
            seed = cur["args"].get("seed", ("?",))[0]
            model = cur["args"].get("model_name", ("?",))[0]
            d = parse_dict(msg[4:], where=f"{where} (run {model} seed {seed})")
            cur[head].append((d, n, cur["tasks"]))
        elif msg.startswith("Forgetting ("):
            cur["forgetting"][msg[12:15].lower()] = (msg.split(": ", 1)[1].strip(), n)
    return runs


def read_pycil_log(path, *, method: str | None = None, seed: str | None = None, label: str = "",
                   head: str = "cnn") -> Runs:
    """Runs of one PyCIL training log (format inferred from its code, see the module docstring).

    Parameters
    ----------
    path : str or Path
        ``logs/<model>/<dataset>/<init_cls>/<increment>/<prefix>_<seed>_<convnet>.log``.
    method, seed : str, optional
        Given by a manifest: the method name replaces the logged ``model_name``, and ``seed``
        chooses the run whose logged ``seed`` matches when the log holds several.
    label : str
        How messages name the run (a manifest's run label).
    head : {"cnn", "nme"}
        Which classifier's accuracies: the network's (``CNN:``) or nearest-mean-of-exemplars (``NME:``).

    Returns
    -------
    Runs
        ``format="pycil"``; ``reported`` holds ``acc_stream`` (the last ``total``: accuracy over all
        test samples) and ``forgetting_max`` (``Forgetting (CNN)``: ``trainer.py`` takes each 10-class
        group's maximum over all rows, the last included, minus its last accuracy, averaged over the
        first T-1 groups), divided by 100.

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "reproduce_1993_resnet32.log")
    >>> t = "2024-01-01 00:00:00,000 [trainer.py] => "
    >>> _ = open(f, "w").write("".join(t + s + "\\n" for s in [
    ...     "model_name: icarl", "init_cls: 10", "increment: 10", "seed: 1993", "All params: 5",
    ...     "CNN: {'total': np.float64(90.0), '00-09': np.float64(90.0), 'old': 0, 'new': np.float64(90.0)}",
    ...     "All params: 5", "CNN: {'total': np.float64(70.0), '00-09': np.float64(60.0), "
    ...     "'10-19': np.float64(80.0), 'old': np.float64(60.0), 'new': np.float64(80.0)}",
    ...     "Forgetting (CNN): 30.0"]))
    >>> r = read_pycil_log(f).runs[0]
    >>> r.label, r.R.tolist(), r.reported
    ('icarl seed 1993', [[0.9, nan], [0.6, 0.8]], {'acc_stream': 0.7, 'forgetting_max': 0.3})
    """
    if head not in ("cnn", "nme"):
        raise ValueError(f"head must be 'cnn' or 'nme', got {head!r}")
    f = Path(path)
    if not f.exists():
        raise FileNotFoundError(f"{str(f)!r}{f' (run {label})' if label else ''}: field file: no such file")
    if not read_text(f, "PyCIL log", errors="replace").strip():
        return _empty_pycil_log(f, method=method, seed=seed, label=label, head=head)
    parsed = _pycil_runs(f)
    if not parsed:
        raise ValueError(f"{str(f)!r}{f' (run {label})' if label else ''}: no '[trainer.py] => ' lines: not a PyCIL "
                         "log (format '%(asctime)s [%(filename)s] => %(message)s')")
    runs, logged = [], []
    for p in parsed:
        a = {k: v for k, (v, _) in p["args"].items()}
        m = method if method is not None else a.get("model_name")
        s = a.get("seed") if seed is None else seed
        run_label = label or f"{m} seed {s}"
        where = f"{str(f)!r} lines {p['first']}-{p['last']} (run {run_label})"
        for need, val in (("model_name", m), ("seed", s)):
            if val is None:
                raise ValueError(f"{where}: field {need} is missing (no '{need}: ...' argument line); name it in a "
                                 "manifest")
        rows = p[head]
        if not rows:
            raise ValueError(f"{where}: field {head.upper()}: no '{head.upper()}: {{...}}' accuracy lines"
                             + (" (this method logs no NME accuracy)" if head == "nme" and p["cnn"] else ""))
        if head not in p["forgetting"]:
            raise ValueError(f"{where}: field Forgetting ({head.upper()}): the run's closing line is missing: the log "
                             f"is truncated (it ends after task {len(rows)})")
        sizes = {}
        for k in ("init_cls", "increment"):
            if k not in a:
                raise ValueError(f"{where}: field {k} is missing (no '{k}: ...' argument line)")
            try:
                sizes[k] = int(a[k])
            except ValueError:
                raise ValueError(f"{where}: field {k} = {a[k]!r} is not a class count") from None
            if sizes[k] <= 0 or sizes[k] % 10:
                raise ValueError(f"{where}: field {k} = {sizes[k]}: PyCIL logs accuracy per group of 10 classes "
                                 "(utils/toolkit.accuracy's default increment), so tasks of a size that is not a "
                                 "multiple of 10 cannot be recovered from its log")
        T = len(rows)
        bounds = [0] + [sizes["init_cls"] + k * sizes["increment"] for k in range(T)]
        R = np.full((T, T), np.nan)
        for i, (d, n, _) in enumerate(rows):
            at = f"{str(f)!r} line {n} (run {run_label})"
            groups = {}
            for key, v in d.items():
                g = _GROUP.fullmatch(key)
                if g:
                    groups[int(g.group(1))] = _number(v, where=at, field=f"{head.upper()} {key!r}")
            end = bounds[i + 1]
            if i == T - 1 and groups and bounds[i] < max(groups) + 10 < end:
                end = max(groups) + 10  # DataManager's last task holds the classes left over
            expect = list(range(0, end, 10))
            if sorted(groups) != expect:
                missing = [f"{c:02d}-{c + 9:02d}" for c in expect if c not in groups]
                extra = [f"{c:02d}-{c + 9:02d}" for c in sorted(groups) if c not in expect]
                raise ValueError(f"{at}: field {head.upper()} groups after task {i + 1}: expected classes 0-"
                                 f"{end - 1} (init_cls {sizes['init_cls']}, increment "
                                 f"{sizes['increment']}), missing {missing or 'none'}, unexpected {extra or 'none'}")
            for j in range(i + 1):
                R[i, j] = np.mean([groups[c] for c in range(bounds[j], min(bounds[j + 1], end), 10)])
        R = check_scores(R, where=where, percent=True, declared=False)
        last, n_last, _ = rows[-1]
        reported = {"acc_stream": _number(last.get("total"), where=f"{str(f)!r} line {n_last} (run {run_label})",
                                          field=f"{head.upper()} 'total'") / 100.0}
        ftext, fline = p["forgetting"][head]
        try:
            reported["forgetting_max"] = float(ftext) / 100.0
        except ValueError:
            raise ValueError(f"{str(f)!r} line {fline} (run {run_label}): field Forgetting ({head.upper()}) = "
                             f"{ftext!r} is not a number") from None
        if not math.isfinite(reported["forgetting_max"]):
            del reported["forgetting_max"]
        per = max(sizes.values()) // 10
        used = (f"R {T} x {T} from the {head.upper()} grouped accuracies (PyCIL log lines {p['first']}-{p['last']}; "
                f"{'one 10-class group per task' if sizes == {'init_cls': 10, 'increment': 10} else f'mean of up to {per} 10-class groups per task, assumes equal test sets per group'}"
                f"; percent, divided by 100); reported {', '.join(sorted(reported))} from the last 'total' and "
                f"Forgetting ({head.upper()}) (compared, not used); curves, old/new and top5 not used")
        runs.append(Run(str(m), str(s), None, None, R, f"{f} lines {p['first']}-{p['last']}", reported, used))
        logged.append(a.get("seed"))
    runs = pick_logged(runs, logged, seed, repr(str(f)), label or f"{method} seed {seed}")
    return Runs(runs, str(f), "pycil", [])


_MULTI_SEED = ("PyCIL logs every seed of a multi-seed run (\"seed\": [1993, 1994]) into the first seed's file "
               "(trainer.py's logging.basicConfig runs once) and leaves a 0-byte log for each later seed")


def _logged_seeds(f: Path) -> list:
    return [p["args"].get("seed", (None,))[0] for p in _pycil_runs(f)]


def _empty_pycil_log(f: Path, *, method, seed, label, head) -> Runs:
    """An empty PyCIL log named by a manifest: the run of ``seed`` from the sibling log that holds it, else a
    ``ValueError`` naming the cause."""
    siblings = [q for q in sorted(f.parent.glob("*.log")) if q != f and q.is_file() and q.stat().st_size]
    holding = [q for q in siblings if seed is not None and str(seed) in map(str, _logged_seeds(q))]
    if len(holding) == 1:
        rs = read_pycil_log(holding[0], method=method, seed=seed, label=label, head=head)
        for r in rs.runs:
            r.used += f"; read from {holding[0].name}: {f.name} is empty ({_MULTI_SEED})"
        return rs
    where = f"{str(f)!r}{f' (run {label})' if label else ''}"
    found = "; ".join(f"{q.name} holds seeds {_logged_seeds(q)}" for q in siblings) or "no other log beside it"
    raise ValueError(f"{where}: the log is empty (0 bytes). {_MULTI_SEED}: point at the first seed's log (or the "
                     f"folder) instead ({found})")


def read_framework_folder(path) -> Runs | None:
    """Runs of a mammoth results folder (``**/logs.pyd``) or a PyCIL ``logs`` folder (``**/*.log``) with no
    manifest; ``None`` when the folder holds neither.

    A mammoth folder must hold one setting and dataset (``<results>/<setting>/<dataset>``): mammoth
    writes class-il and task-il scores of the same runs to sibling folders.

    Examples
    --------
    >>> import tempfile
    >>> read_framework_folder(tempfile.mkdtemp()) is None
    True
    """
    p = Path(path)
    pyd = sorted(p.rglob("logs.pyd"))
    logs = sorted(q for q in p.rglob("*.log") if q.is_file())
    if pyd and logs:
        raise ValueError(f"runs folder {str(p)!r} holds both mammoth logs.pyd and .log files (PyCIL?); point at one "
                         "framework's folder, or list the runs in a manifest with a format column")
    if pyd:
        where = {(q.parts[-4], q.parts[-3]) if len(q.parts) >= 4 else ("?", "?") for q in pyd}
        if len(where) > 1:
            raise ValueError(f"runs folder {str(p)!r} holds mammoth logs of several settings / datasets "
                             f"({sorted(where)}): point at <results>/<setting>/<dataset>")
        runs = [r for q in pyd for r in read_mammoth_log(q).runs]
        return Runs(runs, str(p), "mammoth", [f"mammoth logs.pyd read: {len(pyd)}"])
    if logs:
        empty = [q for q in logs if not read_text(q, "PyCIL log", errors="replace").strip()]
        full = [q for q in logs if q not in empty]
        seeds = {q: [str(x) for x in _logged_seeds(q)] for q in full}
        skipped = []
        for q in empty:
            holders = [h for h in full if h.parent == q.parent and any(f"_{x}_" in f"_{q.stem}_" for x in seeds[h])]
            if not holders:
                raise ValueError(f"{str(q)!r}: the PyCIL log is empty (0 bytes) and no log beside it holds its seed: "
                                 "the run wrote nothing (it stopped before its first line?). Remove it or run it "
                                 f"again ({_MULTI_SEED}, which is not the case here)")
            skipped.append(f"{q.name} (its seed is in {holders[0].name})")
        runs = [r for q in full for r in read_pycil_log(q).runs]
        notes = [f"PyCIL logs read: {len(full)}"]
        if skipped:
            notes.append(f"skipped {len(skipped)} empty PyCIL log(s), expected in a multi-seed run (PyCIL logs every "
                         f"seed into the first seed's file): {', '.join(skipped)}")
        return Runs(runs, str(p), "pycil", notes)
    return None
