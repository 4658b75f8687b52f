"""Checkpoints of one CL run: a run killed between tasks resumes from its last finished task.

At the paper's size one CL run of notebook 01 takes longer than the wall time a cluster job may
have (see :mod:`clkit.taskification.split`), and it cannot be cut into independent pieces: task
``k`` trains the model task ``k - 1`` left. :func:`~clkit.taskification.forecasting.continual_forecasting`
with ``checkpoint_dir=`` therefore writes, after every finished task, one file
``checkpoint_dir/checkpoint.pt`` (written to a temporary file and renamed over the old one, so
a kill leaves the previous checkpoint or the new one, never half a file) holding

- the rows of the error matrix ``M`` so far and the index of the last finished task;
- the strategy's state: the model's and the optimizer's state dicts (AdamW's moments, and the
  learning rate ``ReduceLROnPlateau`` may have lowered), the fp16 loss scaler's state, the
  strategy's generators (its CPU ``torch.Generator`` for batch orders and memory samples, its
  NumPy generator), its bookkeeping (steps, seen tasks and classes) and what the method keeps
  between tasks (:data:`CHECKPOINT_METHODS`): Replay its memory (rows, targets, task ids and the
  memory's own NumPy generator), EWC its Fisher diagonals and anchors. LwF keeps nothing more:
  its teacher is a copy of the model made when the next task begins;
- torch's global generators (the CPU one, and the device's on CUDA), which dropout draws from;
- a digest of the run (:func:`run_digest`: method, training settings, seed, precision, the
  device type, the model's initial weights and every task's windows and targets).

A rerun with the same arguments loads the checkpoint and goes on with the next task; its ``M``
equals an uninterrupted run's bitwise (``tests/test_taskification_resume.py``: naive, EWC, Replay
and LwF). A checkpoint whose digest differs is refused (``ValueError`` naming the folder).
Only the methods in :data:`CHECKPOINT_METHODS` are checkpointed: another method keeps state this
module does not know, and resuming it would silently differ.

Where the folder lives: the sweep runners (``clkit sweep``, ``clkit run-case``) give every case
a folder that outlives its attempts, ``SWEEP/.checkpoints/<case key>``, in the environment
variable :data:`CHECKPOINT_ENV`; :func:`checkpoint_dir` reads it. A case killed at its wall time
and rerun (``clkit run-case`` again, Slurm ``--requeue``) continues where it stopped; the folder
is removed once the case has finished.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import torch

from .._io import atomic_save

__all__ = ["CHECKPOINT_ENV", "CHECKPOINT_METHODS", "CHECKPOINT_FILE", "checkpoint_dir", "run_digest",
           "strategy_state", "load_strategy_state", "save_checkpoint", "load_checkpoint", "check_method"]

#: environment variable naming a case's checkpoint folder (set by :func:`clkit.sweep.execute.run_case`)
CHECKPOINT_ENV = "CLKIT_CHECKPOINT_DIR"
#: the one file of a checkpoint folder
CHECKPOINT_FILE = "checkpoint.pt"
#: methods whose whole between-task state this module saves, and what each keeps beyond the base state
CHECKPOINT_METHODS = {"naive": (), "replay": ("memory",), "ewc": ("terms",), "lwf": ()}
_FORMAT = 1


def checkpoint_dir(cl_runs) -> Path | None:
    """The checkpoint folder of a case (``cl_runs`` non-empty) from :data:`CHECKPOINT_ENV`, else ``None``.

    :func:`clkit.taskification.report.run_cl` gives each of the case's runs a subfolder of it.

    Examples
    --------
    >>> import os
    >>> os.environ[CHECKPOINT_ENV] = "/tmp/sweep/.checkpoints/ab12"
    >>> str(checkpoint_dir(["naive|9d|0"])), checkpoint_dir([])
    ('/tmp/sweep/.checkpoints/ab12', None)
    >>> del os.environ[CHECKPOINT_ENV]
    >>> checkpoint_dir(["naive|9d|0"]) is None
    True
    """
    env = os.environ.get(CHECKPOINT_ENV)
    if not cl_runs or not env:
        return None
    return Path(env)


def check_method(method: str, strategy) -> None:
    """Refuse a strategy whose between-task state is not known here (``ValueError`` naming the method)."""
    from ..strategies.registry import resolve_strategy

    if method not in CHECKPOINT_METHODS or type(strategy) is not resolve_strategy(method):
        raise ValueError(f"checkpoint_dir: method {method!r} cannot be checkpointed (its state between tasks is not "
                         f"known to clkit.taskification.resume); allowed: {', '.join(CHECKPOINT_METHODS)}, "
                         "or checkpoint_dir=None")


def _hash_tensor(h, t) -> None:
    t = t.detach().to("cpu").contiguous()
    h.update(f"{t.dtype}{tuple(t.shape)}".encode())
    h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")


def _hash_x(h, x, seen: dict) -> None:
    """Hash an input: a tensor, or a ``WindowView`` (its series once per run, its start rows, its context)."""
    base = getattr(x, "base", None)
    if base is not None and hasattr(x, "starts"):
        if id(base) not in seen:
            seen[id(base)] = len(seen)
            _hash_tensor(h, base)
        h.update(f"view{seen[id(base)]}:{x.context}".encode())
        _hash_tensor(h, x.starts)
    else:
        _hash_tensor(h, x)


def run_digest(tasks, model, settings: dict) -> str:
    """SHA-256 of one CL run: ``settings`` (JSON), the model's initial state and every task's data.

    Parameters
    ----------
    tasks : list of ForecastTask
    model : torch.nn.Module
        The freshly built model (its initial weights name the architecture and the seed).
    settings : dict
        Everything else that changes the numbers (method, epochs, lr, seed, precision, ...).

    Examples
    --------
    >>> from clkit.strategies import Task
    >>> from clkit.taskification.forecasting import ForecastTask
    >>> t = Task(torch.zeros(4, 2), torch.ones(4, 1))
    >>> a = run_digest([ForecastTask(t, t, t)], torch.nn.Linear(2, 1), {"lr": 1e-4})
    >>> b = run_digest([ForecastTask(t, t, t)], torch.nn.Linear(2, 1), {"lr": 1e-3})
    >>> len(a), a == b
    (64, False)
    """
    h = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode())
    for name, v in model.state_dict().items():
        h.update(name.encode())
        _hash_tensor(h, v)
    seen: dict = {}
    for k, t in enumerate(tasks):
        for part in (t.train, t.val, t.test):
            h.update(f"task{k}:{len(part)}".encode())
            _hash_x(h, part.x, seen)
            _hash_tensor(h, part.y)
    return h.hexdigest()


def _cpu(v):
    return v.detach().to("cpu") if isinstance(v, torch.Tensor) else v


def strategy_state(strategy) -> dict:
    """Everything ``strategy`` carries from one task to the next, as tensors and plain Python values.

    Returns
    -------
    dict
        ``model``, ``optimizer``, ``scaler`` (or ``None``), ``generator`` (torch CPU generator
        state), ``rng`` (NumPy bit-generator state), ``steps``, ``seen_tasks``, ``seen_classes``,
        ``task_classes`` and the method's own entries (:data:`CHECKPOINT_METHODS`).

    Examples
    --------
    >>> from clkit.strategies import Strategy, Task
    >>> s = Strategy(torch.nn.Linear(2, 1), loss="mse", optimizer="adamw", batch_size=2)
    >>> _ = s.train_task(Task(torch.randn(4, 2), torch.randn(4, 1)), epochs=1)
    >>> st = strategy_state(s)
    >>> st["steps"], sorted(st["optimizer"]["state"][0])
    (2, ['exp_avg', 'exp_avg_sq', 'step'])
    """
    scaler = getattr(getattr(strategy, "amp", None), "scaler", None)
    out = {
        "model": {k: _cpu(v) for k, v in strategy.model.state_dict().items()},
        "optimizer": strategy.optimizer.state_dict(),
        "scaler": scaler.state_dict() if scaler is not None else None,
        "generator": strategy.generator.get_state(),
        "rng": strategy.rng.bit_generator.state,
        "steps": int(strategy.steps),
        "seen_tasks": [int(t) for t in strategy.seen_tasks],
        "seen_classes": sorted(int(c) for c in strategy.seen_classes),
        "task_classes": {int(k): list(v) for k, v in getattr(strategy, "task_classes", {}).items()},
    }
    if hasattr(strategy, "memory"):
        m = strategy.memory
        out["memory"] = {"x": _cpu(m.x), "y": _cpu(m.y), "task_ids": _cpu(m.task_ids),
                         "task_ids_host": torch.from_numpy(m.task_ids_host.copy()), "size": int(m.size),
                         "tasks": [int(t) for t in m.tasks], "rng": m.rng.bit_generator.state}
    if hasattr(strategy, "terms"):
        out["terms"] = [tuple({k: _cpu(v) for k, v in d.items()} for d in term) for term in strategy.terms]
    return out


def load_strategy_state(strategy, state: dict) -> None:
    """Put ``state`` (:func:`strategy_state`) back into ``strategy``, built as the saved one was."""
    device = strategy.device
    strategy.model.load_state_dict(state["model"])
    strategy.optimizer.load_state_dict(state["optimizer"])
    scaler = getattr(getattr(strategy, "amp", None), "scaler", None)
    if scaler is not None and state["scaler"] is not None:
        scaler.load_state_dict(state["scaler"])
    strategy.generator.set_state(state["generator"])
    strategy.rng.bit_generator.state = state["rng"]
    strategy.steps = state["steps"]
    strategy.seen_tasks = list(state["seen_tasks"])
    strategy._seen_classes = set(state["seen_classes"])
    if hasattr(strategy, "task_classes"):
        strategy.task_classes = {k: tuple(v) for k, v in state["task_classes"].items()}
    if "memory" in state:
        m, s = strategy.memory, state["memory"]
        m.x = s["x"].to(device) if s["x"] is not None else None
        m.y = s["y"].to(device) if s["y"] is not None else None
        m.task_ids = s["task_ids"].to(device if s["x"] is not None else "cpu")
        m.task_ids_host = s["task_ids_host"].numpy().copy()
        m.size, m.tasks = s["size"], list(s["tasks"])
        m.rng.bit_generator.state = s["rng"]
    if "terms" in state:
        strategy.terms = [tuple({k: v.to(device) for k, v in d.items()} for d in term) for term in state["terms"]]


def _global_rng(device) -> dict:
    out = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        out["cuda"] = torch.cuda.get_rng_state(device)
    return out


def save_checkpoint(folder, digest: str, task: int, M: np.ndarray, strategy) -> Path:
    """Write the checkpoint after finished task ``task`` (0-based) atomically; returns its path."""
    state = {"format": _FORMAT, "digest": digest, "task": int(task), "M": torch.from_numpy(np.array(M, np.float64)),
             "strategy": strategy_state(strategy), "global_rng": _global_rng(strategy.device)}
    return atomic_save(Path(folder) / CHECKPOINT_FILE, lambda tmp: torch.save(state, tmp))


def load_checkpoint(folder, digest: str, strategy, num_tasks: int):
    """Resume ``strategy`` from ``folder``'s checkpoint: ``(next task, M so far)``, or ``None`` when there is none.

    Restores the strategy (:func:`load_strategy_state`) and torch's global generators.

    Raises
    ------
    ValueError
        Naming the folder, when its checkpoint belongs to another run (digest) or cannot be read.
    """
    path = Path(folder) / CHECKPOINT_FILE
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:   # noqa: BLE001 -- any unreadable file is refused the same way
        raise ValueError(f"checkpoint_dir: {str(folder)!r} holds an unreadable {CHECKPOINT_FILE} ({type(exc).__name__}: "
                         f"{exc}); delete it to start the run over") from None
    if not isinstance(state, dict) or state.get("format") != _FORMAT or state.get("digest") != digest:
        raise ValueError(f"checkpoint_dir: {str(folder)!r} holds the checkpoint of another run (other parameters, "
                         f"data or clkit version: digest {str(state.get('digest'))[:12] if isinstance(state, dict) else '?'}"
                         f", this run {digest[:12]}); give this run its own folder or delete that one")
    M = state["M"].numpy().astype(np.float64)
    if M.shape != (num_tasks, num_tasks):
        raise ValueError(f"checkpoint_dir: {str(folder)!r}: the checkpoint's M is {M.shape}, this run has {num_tasks} tasks")
    load_strategy_state(strategy, state["strategy"])
    torch.set_rng_state(state["global_rng"]["cpu"])
    if "cuda" in state["global_rng"] and strategy.device.type == "cuda":
        torch.cuda.set_rng_state(state["global_rng"]["cuda"], strategy.device)
    return state["task"] + 1, M
