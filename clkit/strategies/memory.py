"""Fixed-size rehearsal memories shared by the replay-style strategies.

Every buffer stores whatever the model takes as input -- a tensor of any
shape, a tuple of tensors, or node indices for a model that holds its graph --
as *rows*: slot ``k`` holds ``take(x, k)``, ``y[k]`` and the task id of the row.

- :class:`ReservoirBuffer` -- reservoir sampling (Vitter's algorithm R): after
  ``n`` rows have streamed past, every one of them is in memory with the same
  probability ``memory_size / n``. Task-free; used by ER and A-GEM.
- :class:`ClassBalancedBuffer` -- GDumb's greedy class-balanced sampler: a new
  row is stored while there is room, otherwise it evicts a random row of the
  currently largest class, but only when its own class is smaller than that.
- :class:`TaskBalancedBuffer` -- an equal share of the memory per task, each
  share a uniform random subset of the task (the paper's Replay).

Devices: the rows live on the device of the first rows offered (the learner's); every
decision -- which slot a row takes, which rows are evicted or sampled -- is made on the host
with the buffer's own NumPy / CPU generators, from task ids and labels the host already knows
(a mirror of each slot's task id, and of its label for the class-balanced buffer), so a buffer
never reads the device to decide.
"""

from __future__ import annotations

import numpy as np
import torch

from .._validate import check_int
from ..device import move, to_host
from .base import take

__all__ = ["ReservoirBuffer", "ClassBalancedBuffer", "TaskBalancedBuffer"]


def _rows(x) -> int:
    return len(x[0]) if isinstance(x, (tuple, list)) else len(x)


def _alloc(x, size: int):
    """Empty storage with ``size`` rows shaped like the rows of ``x``."""
    if isinstance(x, (tuple, list)):
        return type(x)(_alloc(v, size) for v in x)
    return torch.zeros((size, *x.shape[1:]), dtype=x.dtype, device=x.device)


def _put(store, slots, x):
    """``store[slots] = x`` for a tensor or each tensor of a tuple."""
    if isinstance(store, (tuple, list)):
        for s, v in zip(store, x):
            s[slots] = v.detach()
    else:
        store[slots] = x.detach()


class _Buffer:
    """Slots ``0 .. len(self) - 1`` of preallocated storage."""

    def __init__(self, memory_size: int, seed: int = 0):
        self.memory_size = check_int("memory_size", memory_size, low=0)
        self.rng = np.random.default_rng(check_int("seed", seed))
        self.x = None
        self.y = None
        self.task_ids = torch.zeros(self.memory_size, dtype=torch.int64)   # on the rows' device once filled
        self.task_ids_host = np.zeros(self.memory_size, dtype=np.int64)    # the same, on the host
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def _ensure(self, x, y) -> None:
        if self.x is None:
            self.x = _alloc(x, self.memory_size)
            self.y = _alloc(y, self.memory_size)
            self.task_ids = move(self.task_ids, self.y.device)

    def _write(self, slots, x, y, task_ids) -> None:
        """Rows ``x, y`` into ``slots``; ``task_ids``: host values (an int or one per row)."""
        slots = np.array(slots, dtype=np.int64, ndmin=1)
        tids = np.array(np.broadcast_to(np.asarray(task_ids, dtype=np.int64), slots.shape))
        self.task_ids_host[slots] = tids
        slots_t = torch.from_numpy(slots)
        _put(self.x, slots_t, x)
        _put(self.y, slots_t, y)
        self.task_ids[slots_t] = move(torch.from_numpy(tids), self.task_ids.device)

    def data(self):
        """All stored rows: ``(x, y, task_ids)``, each with ``len(self)`` rows."""
        if self.size == 0 or self.x is None:
            return None, None, self.task_ids[:0]
        idx = slice(0, self.size)
        return take(self.x, idx), self.y[idx], self.task_ids[idx]

    def sample(self, n: int, generator: torch.Generator | None = None, out: torch.Tensor | None = None):
        """``n`` rows drawn uniformly without replacement (all rows when fewer are stored).

        ``out`` (optional, tensor inputs only): a tensor of ``min(n, len(self))`` rows the inputs
        are gathered into (returned as ``x``).

        Returns
        -------
        x : rows of the stored inputs
        y : Tensor, shape (m,) or (m, d)
        task_ids : Tensor of int64, shape (m,)
        """
        if not (type(n) is int and n >= 0):   # the common case without the validator's call
            n = check_int("n", n, low=0)
        if self.size == 0:
            return None, None, self.task_ids[:0]
        m = min(n, self.size)
        idx = torch.randperm(self.size, generator=generator)[:m]
        out = out if isinstance(out, torch.Tensor) and out.size(0) == m else None
        return take(self.x, idx, out=out), take(self.y, idx), take(self.task_ids, idx)

    def class_counts(self) -> dict[int, int]:
        """Number of stored rows per (integer) label (read from the device: for inspection)."""
        if self.size == 0:
            return {}
        labels, counts = np.unique(to_host(self.y[: self.size]), return_counts=True)
        return {int(c): int(k) for c, k in zip(labels, counts)}


def _host_ids(task_id, b: int) -> np.ndarray:
    """Task ids of ``b`` rows on the host: an int for all, or one per row (array or tensor)."""
    ids = to_host(task_id) if isinstance(task_id, torch.Tensor) else np.asarray(task_id)
    return np.broadcast_to(ids.astype(np.int64), (b,))


class ReservoirBuffer(_Buffer):
    """Reservoir sampling over a stream of rows (uniform sample of everything seen).

    Row number ``n`` of the stream (0-based) is stored directly while
    ``n < memory_size``; afterwards it replaces slot ``j ~ U{0, ..., n}`` when
    ``j < memory_size``. A whole batch is processed at once; when two rows of a
    batch draw the same slot the later one wins, exactly as in the sequential
    algorithm.

    Parameters
    ----------
    memory_size : int
        Number of slots (``>= 0``).
    seed : int
        Seeds the buffer's own generator.

    Examples
    --------
    >>> buf = ReservoirBuffer(5, seed=0)
    >>> buf.add(torch.arange(100.0).reshape(100, 1), torch.arange(100))
    >>> len(buf), buf.seen
    (5, 100)
    """

    def __init__(self, memory_size: int, seed: int = 0):
        super().__init__(memory_size, seed)
        self.seen = 0

    def add(self, x, y, task_id: int = 0) -> None:
        """Offer the rows of ``(x, y)`` to the reservoir.

        Parameters
        ----------
        x : Tensor, shape (B, ...), or tuple of tensors
        y : Tensor, shape (B,) or (B, d)
        task_id : int or Tensor of shape (B,)
        """
        b = _rows(x)
        if b == 0 or self.memory_size == 0:
            self.seen += b
            return
        self._ensure(x, y)
        n = self.seen + np.arange(b)  # stream positions of the rows
        slots = np.where(n < self.memory_size, n, np.floor(self.rng.random(b) * (n + 1)).astype(np.int64))
        keep = slots < self.memory_size
        rows, slots = np.nonzero(keep)[0], slots[keep]
        # the last row wins a slot drawn twice in one batch
        _, last = np.unique(slots[::-1], return_index=True)
        rows, slots = rows[::-1][last], slots[::-1][last]
        tids = _host_ids(task_id, b)[rows]
        idx = torch.from_numpy(rows)
        self._write(slots, take(x, idx), take(y, idx), tids)
        self.size = min(self.memory_size, self.seen + b)
        self.seen += b


class ClassBalancedBuffer(_Buffer):
    """GDumb's greedy class-balancing sampler.

    A row is stored when there is a free slot; when the memory is full it
    replaces a random row of the class with the most rows, provided its own
    class holds fewer rows than that class. The result: class counts differ by
    at most one once enough rows of each class were offered.

    Examples
    --------
    >>> buf = ClassBalancedBuffer(6, seed=0)
    >>> buf.add(torch.zeros(20, 2), torch.tensor([0] * 18 + [1, 2]))
    >>> buf.class_counts()
    {0: 4, 1: 1, 2: 1}
    >>> buf.add(torch.zeros(4, 2), torch.tensor([1, 1, 2, 2]))
    >>> buf.class_counts()
    {0: 2, 1: 2, 2: 2}
    """

    def __init__(self, memory_size: int, seed: int = 0):
        super().__init__(memory_size, seed)
        self.labels_host = np.zeros(self.memory_size, dtype=np.int64)   # each slot's label, on the host

    def add(self, x, y, task_id: int = 0, labels=None) -> None:
        """Offer the rows of ``(x, y)`` (integer labels, shape (B,)) one at a time.

        ``labels``: the same labels on the host (e.g. :meth:`Task.labels_host`), so that the
        greedy choice reads nothing from the device; read from ``y`` when omitted.
        """
        b = _rows(x)
        if b == 0 or self.memory_size == 0:
            return
        if torch.is_floating_point(y):
            raise TypeError("ClassBalancedBuffer needs integer class labels y, got a float tensor")
        self._ensure(x, y)
        labels = to_host(y) if labels is None else np.asarray(labels)
        tids = _host_ids(task_id, b)
        members: dict[int, list[int]] = {}
        for slot, c in enumerate(self.labels_host[: self.size].tolist()):
            members.setdefault(c, []).append(slot)
        chosen = {}   # slot -> row; a slot taken twice in one call keeps the later row
        for r, c in enumerate(labels.tolist()):
            if self.size < self.memory_size:
                slot = self.size
                self.size += 1
            else:
                largest = max(members, key=lambda k: (len(members[k]), k))
                if len(members.get(c, ())) >= len(members[largest]):
                    continue
                pool = members[largest]
                slot = pool.pop(int(self.rng.integers(len(pool))))
            members.setdefault(c, []).append(slot)
            chosen[slot] = r
        if chosen:
            slots = np.fromiter(chosen, dtype=np.int64, count=len(chosen))
            rows = np.fromiter(chosen.values(), dtype=np.int64, count=len(chosen))
            self.labels_host[slots] = labels[rows]
            idx = torch.from_numpy(rows)
            self._write(slots, take(x, idx), take(y, idx), tids[rows])

    def class_counts(self) -> dict[int, int]:
        """Number of stored rows per label (from the host mirror)."""
        labels, counts = np.unique(self.labels_host[: self.size], return_counts=True)
        return {int(c): int(k) for c, k in zip(labels, counts)}


class TaskBalancedBuffer(_Buffer):
    """Equal memory share per task, each share a uniform random subset of its task.

    After ``k`` tasks every task owns ``memory_size // k`` slots (the first
    ``memory_size % k`` tasks one more); adding a task shrinks the older shares
    by dropping random rows of them.

    Examples
    --------
    >>> buf = TaskBalancedBuffer(10, seed=0)
    >>> buf.add_task(torch.zeros(50, 3), torch.zeros(50, dtype=torch.long), task_id=0)
    >>> buf.add_task(torch.ones(50, 3), torch.ones(50, dtype=torch.long), task_id=1)
    >>> torch.bincount(buf.data()[2]).tolist()
    [5, 5]
    """

    def __init__(self, memory_size: int, seed: int = 0):
        super().__init__(memory_size, seed)
        self.tasks: list[int] = []

    def add_task(self, x, y, task_id: int) -> None:
        """Store a uniform random subset of the task ``(x, y)`` and rebalance the shares."""
        n = _rows(x)
        if self.memory_size == 0 or n == 0:
            return
        self._ensure(x, y)
        if task_id not in self.tasks:
            self.tasks.append(task_id)
        k = len(self.tasks)
        quota = {t: self.memory_size // k + (i < self.memory_size % k) for i, t in enumerate(self.tasks)}
        # keep a random subset of each older task's rows, within its new quota
        old_x, old_y, _ = self.data()
        old_t = self.task_ids_host[: self.size]
        keep = []
        for t in self.tasks:
            if t == task_id:
                continue
            rows = np.nonzero(old_t == t)[0]
            keep.extend(self.rng.permutation(rows)[: quota[t]].tolist())
        keep = sorted(keep)
        new_rows = self.rng.permutation(n)[: quota[task_id]]
        if keep:
            keep = np.asarray(keep, dtype=np.int64)
            idx = torch.from_numpy(keep)
            kx, ky, kt = take(old_x, idx), take(old_y, idx).clone(), old_t[keep].copy()
            kx = type(kx)(v.clone() for v in kx) if isinstance(kx, (tuple, list)) else kx.clone()
            self._write(np.arange(len(keep)), kx, ky, kt)
        idx = torch.as_tensor(new_rows, dtype=torch.int64)
        self._write(len(keep) + np.arange(len(new_rows)), take(x, idx), take(y, idx), task_id)
        self.size = len(keep) + len(new_rows)
