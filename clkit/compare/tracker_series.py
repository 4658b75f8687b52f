"""The metric series of a tracker's run made into a performance matrix, and the run fields they need.

Shared by the tracker readers (:mod:`clkit.compare.trackers`: MLflow file stores and exports, W&B
histories) and the MLflow SQLite reader (:mod:`clkit.compare.mlflow_db`), which both import it: it
imports neither, so the two readers form no import circle.
"""

from __future__ import annotations

import re

import numpy as np

from .checks import check_runs, check_scores

__all__ = ["METRIC_PATTERN"]

#: the default metric key pattern: the whole key, the evaluated task in the group ``task``
METRIC_PATTERN = r"(?:[\w./-]*?[/_.])?acc(?:uracy)?[/_.](?:task|exp|experience)[/_.]?(?P<task>\d+)"


def _rx(metric_pattern):
    pattern = METRIC_PATTERN if metric_pattern is None else metric_pattern
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"metric_pattern {pattern!r} is not a regular expression: {exc}") from None
    if "task" not in rx.groupindex:
        raise ValueError(f"metric_pattern {pattern!r} has no named group 'task' (write (?P<task>\\d+) where the "
                         "evaluated task's number is)")
    return rx


def _check_options(steps, task_base):
    if steps not in ("index", "order"):
        raise ValueError(f"steps must be 'index' (the step is the task trained) or 'order' (the k-th evaluation "
                         f"step is row k), got {steps!r}")
    if task_base not in (0, 1):
        raise ValueError(f"task_base must be 0 or 1 (the number of the first task in the metric keys), got "
                         f"{task_base!r}")


def _matrix(series: dict, *, where: str, metric_pattern=None, steps: str = "index", task_base: int = 0,
            percent: bool = False) -> tuple[np.ndarray, str]:
    """``(R, used)`` of one run from ``{key: [(step, value, tiebreak), ...]}``.

    Examples
    --------
    >>> R, used = _matrix({"acc_task_0": [(0, 0.9, 0), (1, 0.6, 0)], "acc_task_1": [(1, 0.8, 0)],
    ...                    "loss": [(0, 0.3, 0)]}, where="x (run a seed 0)")
    >>> R.tolist(), used
    ([[0.9, nan], [0.6, 0.8]], 'R 2 x 2 from acc_task_0 .. acc_task_1 at steps 0-1 (step = task trained; 3 values); other metric(s) read, not used: loss')
    """
    _check_options(steps, task_base)
    rx = _rx(metric_pattern)
    tasks, other = {}, []
    for key in series:
        m = rx.fullmatch(key)
        if not m:
            other.append(key)
            continue
        try:
            task = int(m["task"]) - task_base
        except (TypeError, ValueError):
            raise ValueError(f"{where}: field {key}: metric_pattern's group 'task' matched {m['task']!r}, not a "
                             "task number") from None
        if task < 0:
            raise ValueError(f"{where}: field {key}: task {m['task']} is below task_base={task_base} (task numbers "
                             "in the keys start at 0: pass task_base=0)")
        if task in tasks:
            raise ValueError(f"{where}: fields {tasks[task]} and {key} both name task {task + task_base}; choose one "
                             "with metric_pattern (a regex with a named group 'task', e.g. "
                             "r'test_acc_task_(?P<task>\\d+)')")
        tasks[task] = key
    if not tasks:
        shown = ", ".join(sorted(series)[:12]) + (" ..." if len(series) > 12 else "")
        raise ValueError(f"{where}: field metric key: no key names an evaluated task (pattern "
                         f"{metric_pattern or METRIC_PATTERN!r}); keys: {shown or 'none'}. Log one accuracy per "
                         "task (acc_task_<j>, step = task trained) or pass metric_pattern")
    logged = sorted({s for key in tasks.values() for s, _, _ in series[key]})
    if steps == "order":
        row = {s: k for k, s in enumerate(logged)}
    else:
        if logged[0] < 0:
            raise ValueError(f"{where}: field step: step {logged[0]} is negative; steps='index' needs the task "
                             "trained (0, 1, ...)")
        row = {s: s for s in logged}
    cells, repeated, values = {}, 0, 0
    for task, key in tasks.items():
        last = {}
        for s, v, tie in series[key]:
            values += 1
            if s in last:
                repeated += 1
                if tie < last[s][1]:
                    continue
            last[s] = (v, tie)
        for s, (v, _) in last.items():
            cells[(row[s], task)] = (v, key, s)
    T = max(max(tasks) + 1, max(row.values()) + 1)
    step_of = {i: s for s, i in row.items()}
    if max(row.values()) + 1 > max(tasks) + 1:
        hint = ("; if the step counts epochs, batches or log calls, pass steps='order' (the k-th evaluation step "
                "is row k)" if steps == "index" else "")
        raise ValueError(f"{where}: field step: accuracies logged at {len(logged)} steps ({logged[0]} .. "
                         f"{logged[-1]}) but only {max(tasks) + 1} task(s) evaluated "
                         f"({tasks[min(tasks)]} .. {tasks[max(tasks)]}){hint}")
    for i in range(T):
        for j in range(i + 1):
            if (i, j) in cells:
                continue
            if j not in tasks:
                one = j == 0 and task_base == 0
                hint = " (the keys count tasks from 1? pass task_base=1, --task-base 1)" if one else ""
                raise ValueError(f"{where}: field metric key: no metric names task {j + task_base} (tasks found: "
                                 f"{sorted(t + task_base for t in tasks)}){hint}; R[{i}, {j}] would be missing")
            if i not in step_of:
                what = f"step {i}" if steps == "index" else f"a {i + 1}-th evaluation step"
                raise ValueError(f"{where}: field step: no task accuracy logged at {what} (after training task "
                                 f"{i}; steps logged: {logged}); R[{i}, :] would be missing: a run stopped early, "
                                 "or a sampled history (wandb run.history) that left the row out?")
            raise ValueError(f"{where}: field {tasks[j]} at step {step_of[i]} was not logged: R[{i}, {j}] "
                             f"(task {j} after training task {i}) is missing; only cells above the diagonal (tasks "
                             "not yet trained) may be missing")
    R = np.full((T, T), np.nan)
    for (i, j), (v, _, _) in cells.items():
        R[i, j] = v
    R = check_scores(R, where=where, percent=percent)
    keys = [tasks[t] for t in sorted(tasks)]
    used = (f"R {T} x {T} from {keys[0]}" + (f" .. {keys[-1]}" if len(keys) > 1 else "")
            + f" at steps {logged[0]}-{logged[-1]} ("
            + ("step = task trained" if steps == "index" else "k-th evaluation step = row k")
            + f"; {values} values" + ("; percent, divided by 100" if percent else "") + ")")
    if repeated:
        used += f"; {repeated} value(s) logged twice at one step: the last one used"
    if other:
        used += "; other metric(s) read, not used: " + ", ".join(sorted(other))
    return R, used


def _lookup(mapping: dict, key: str):
    """``mapping[key]``, or a nested ``mapping[a][b]`` for a dotted ``a.b``; None when absent."""
    if key in mapping:
        return mapping[key]
    node = mapping
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _first(sources: list, key: str) -> str:
    """The first value of ``key`` in ``[(name, mapping), ...]``, as text; ``""`` when none holds it."""
    for _, mapping in sources:
        v = _lookup(mapping, key)
        if v is not None and str(v).strip() != "":
            return str(v).strip()
    return ""


def _field(sources: list, key: str, *, given, where: str, what: str, hint: str) -> tuple[str, str]:
    """``(value, from)`` of method or seed: the manifest's ``given``, else the first source holding ``key``."""
    def named(name):  # "params/" + "seed", "column params." + "seed", "config.yaml " + "seed"
        return name + key if name.endswith(("/", ".", " ")) else f"{name} {key}"

    if given is not None:
        return str(given), "the manifest"
    for name, mapping in sources:
        v = _lookup(mapping, key)
        if v is not None and str(v).strip() != "":
            return str(v).strip(), named(name)
    looked = ", ".join(named(name) for name, _ in sources) or "nothing"
    raise ValueError(f"{where}: field {key} ({what}) is missing: not in {looked}; {hint}")


def _pick_one(runs: list, *, where: str, method, seed, logged: list) -> list:
    """The run a manifest row names when ``path`` holds several: ``logged`` is each run's ``(method, seed)``."""
    from .frameworks import pick_logged

    return pick_logged(runs, [s for _, s in logged], seed, where, f"{method} seed {seed}", method=method,
                       logged_methods=[m for m, _ in logged])


def _no_reruns(runs: list) -> None:
    """A rerun (one method and seed twice) refused by :func:`~clkit.compare.checks.check_runs`, naming both sources;
    runs of different task counts are left to the comparison's checks."""
    from collections import Counter

    ids = Counter((r.method,) + r.key for r in runs)
    check_runs([r for r in runs if ids[(r.method,) + r.key] > 1], methods=[])


# --------------------------------------------------------------------------------------------- MLflow
