"""Rehearsal: train on stored past rows alongside the new ones.

- **Replay** (``"replay"``, Rolnick et al., 2019, as in the paper): a
  :class:`~clkit.strategies.memory.TaskBalancedBuffer` of ``memory_size`` rows
  with an equal share per task, filled at the end of each task; every training
  step appends a random memory mini-batch (as many rows as the incoming batch,
  at most the memory) to the incoming batch. Needs task boundaries.
- **ER** (``"er"``, experience replay with a reservoir): the same mixing, but
  the memory is a :class:`~clkit.strategies.memory.ReservoirBuffer` updated
  with every incoming batch after its step, so it works task-free.
- **Cumulative** (``"cumulative"``): unlimited memory; each task is trained on
  the union of all tasks so far (the paper's upper-bound baseline).
- **GDumb** (``"gdumb"``, Prabhu et al., 2020): a
  :class:`~clkit.strategies.memory.ClassBalancedBuffer` collects rows greedily
  class-balanced; the model is *re-initialised* and trained from scratch on
  the memory only (``epochs`` passes) -- after each task, or, task-free, lazily
  the next time it predicts. Classification only.

In the task-incremental scenario every memory row is masked to the classes of
its own task (the task id is stored with the row).
"""

from __future__ import annotations

import copy

import torch

from .._validate import check_int
from ._common import TaskAwareStrategy
from .base import Task, _cat, epoch_means, register, take
from .memory import ClassBalancedBuffer, ReservoirBuffer, TaskBalancedBuffer

__all__ = ["Replay", "ER", "Cumulative", "GDumb"]


class _MemoryMix(TaskAwareStrategy):
    """Appends a random memory mini-batch to each incoming batch."""

    def replay(self, x, y, task: Task | None):
        tids = self.task_ids_of(len(y), task)
        mx, my, mt = self.memory.sample(len(y), self.generator)
        if mx is None or len(my) == 0:
            return x, y, tids
        return _cat(x, mx), torch.cat([y, my]), torch.cat([tids, mt])


@register("replay")
class Replay(_MemoryMix):
    """Replay with a task-balanced memory filled at task ends.

    Parameters
    ----------
    model : torch.nn.Module
    memory_size : int
        Rows kept over all tasks (paper: 200).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = Replay(MLP(2, 4, hidden=()), memory_size=10)
    >>> _ = s.train_task(Task(torch.randn(30, 2), torch.tensor([0, 1] * 15), task_id=0))
    >>> _ = s.train_task(Task(torch.randn(30, 2), torch.tensor([2, 3] * 15), task_id=1))
    >>> torch.bincount(s.memory.data()[2]).tolist()
    [5, 5]
    """

    task_free = False

    def __init__(self, model, *, memory_size: int = 200, **kwargs):
        super().__init__(model, **kwargs)
        self.memory_size = check_int("memory_size", memory_size, low=0)
        self.memory = TaskBalancedBuffer(self.memory_size, seed=self.seed)

    def after_task(self, task: Task) -> None:
        self.memory.add_task(task.x, task.y, task.task_id)


@register("er")
class ER(_MemoryMix):
    """Experience replay with a reservoir memory (task-free).

    Parameters
    ----------
    model : torch.nn.Module
    memory_size : int
        Reservoir slots (paper: 200).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = ER(MLP(2, 2, hidden=()), memory_size=5, batch_size=4)
    >>> for _ in range(3):
    ...     _ = s.observe(torch.randn(4, 2), torch.tensor([0, 1, 0, 1]))
    >>> len(s.memory), s.memory.seen
    (5, 12)
    """

    task_free = True

    def __init__(self, model, *, memory_size: int = 200, **kwargs):
        super().__init__(model, **kwargs)
        self.memory_size = check_int("memory_size", memory_size, low=0)
        self.memory = ReservoirBuffer(self.memory_size, seed=self.seed)

    def after_step(self, x, y, task) -> None:
        self.memory.add(x, y, task.task_id if task is not None else -1)


@register("cumulative")
class Cumulative(TaskAwareStrategy):
    """Retrain on the union of all tasks seen so far (unlimited memory).

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = Cumulative(MLP(2, 4, hidden=()), batch_size=8)
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([0, 1] * 4), task_id=0))
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([2, 3] * 4), task_id=1))
    >>> s.steps   # 1 batch for task 0, then 2 batches over 16 rows
    3
    """

    task_free = False

    def __init__(self, model, **kwargs):
        super().__init__(model, **kwargs)
        self.stored: list[Task] = []

    def train_task(self, task: Task, epochs: int | None = None) -> list[float]:
        task = task.to(self.device)
        epochs = self.begin_task(task, epochs)
        self.stored.append(task)
        x, y = self.stored[0].x, self.stored[0].y
        tids = self.task_ids_of(len(y), self.stored[0])
        for t in self.stored[1:]:
            x, y, tids = _cat(x, t.x), torch.cat([y, t.y]), torch.cat([tids, self.task_ids_of(len(t), t)])
        history = []
        for _ in range(epochs):
            history.append([self.step_rows(take(x, i), y[i], tids[i], task) for i in self.batches(len(y), self.device)])
        self.after_task(task)
        return epoch_means(history)


@register("gdumb")
class GDumb(TaskAwareStrategy):
    """Greedy class-balanced memory + training from scratch on the memory only.

    Parameters
    ----------
    model : torch.nn.Module
    memory_size : int
        Rows kept over all classes (paper: 200).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`; ``epochs`` is the number
        of passes over the memory.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = GDumb(MLP(2, 4, hidden=()), memory_size=8)
    >>> _ = s.train_task(Task(torch.randn(30, 2), torch.tensor([0, 1] * 15), task_id=0))
    >>> _ = s.train_task(Task(torch.randn(30, 2), torch.tensor([2, 3] * 15), task_id=1))
    >>> s.memory.class_counts()
    {0: 2, 1: 2, 2: 2, 3: 2}
    """

    task_free = True
    supports_regression = False

    def __init__(self, model, *, memory_size: int = 200, **kwargs):
        super().__init__(model, **kwargs)
        self.memory_size = check_int("memory_size", memory_size, low=0)
        self.memory = ClassBalancedBuffer(self.memory_size, seed=self.seed)
        self.initial_state = copy.deepcopy(self.model.state_dict())
        self._stale = False

    def fit_memory(self, epochs: int | None = None) -> list[float]:
        """Re-initialise the model and train it from scratch on the memory."""
        epochs = self.epochs if epochs is None else epochs
        self.model.load_state_dict(self.initial_state)
        self.optimizer = self.make_optimizer(self.model.parameters())
        x, y, tids = self.memory.data()
        history = []
        if x is not None:
            for _ in range(epochs):
                history.append([self.step_rows(take(x, i), y[i], tids[i], None)
                                for i in self.batches(len(y), self.device)])
        self._stale = False
        return epoch_means(history)

    def train_task(self, task: Task, epochs: int | None = None) -> list[float]:
        task = task.to(self.device)
        epochs = self.begin_task(task, epochs)
        self.memory.add(task.x, task.y, task.task_id, labels=task.labels_host())
        history = self.fit_memory(epochs)
        self.after_task(task)
        return history

    def observe(self, x, y, task: Task | None = None) -> float:
        """Task-free: store the batch; the model is refitted lazily at the next prediction."""
        if task is not None:
            self._register_task(task)
        self.memory.add(x, y, task.task_id if task is not None else -1)
        self._stale = True
        return float("nan")

    def predict(self, x, task: Task | None = None, batch_size: int = 4096) -> torch.Tensor:
        if self._stale:
            self.fit_memory()
        return super().predict(x, task, batch_size)
