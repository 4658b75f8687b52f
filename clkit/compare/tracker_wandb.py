"""Weights & Biases history exports read into :class:`~clkit.compare.runs.Runs` (a part of
:mod:`clkit.compare.trackers`, which documents the formats and re-exports this reader)."""

from __future__ import annotations

import json
from pathlib import Path

from .._io import read_text
from .runs import Run, Runs
from .tracker_series import (METRIC_PATTERN, _check_options, _field, _first, _lookup, _matrix,  # noqa: F401
                             _no_reruns, _pick_one, _rx)
from .tracker_mlflow import _int_step, _is_number, _num, _num_or_text, _records, _table, _yaml  # noqa: F401

__all__ = ["read_wandb_history"]

_WANDB_SUFFIXES = (".csv", ".jsonl", ".json")


def _wandb_config(path: Path, where: str) -> dict:
    """A run config: wandb's ``config.yaml`` / ``json_config`` (``{key: {value, desc}}``) or a plain mapping."""
    if path.suffix == ".json":
        try:
            data = json.loads(read_text(path, where))
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


