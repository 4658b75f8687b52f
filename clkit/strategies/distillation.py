"""Learning without Forgetting (Li & Hoiem, 2017): output distillation from the previous model.

Before each new task the current model is frozen as a *teacher*. While the
task is learned, the loss adds ``lwf_alpha * D(student(x), teacher(x))`` on
the incoming batch:

- classification: ``D = T^2 * KL(softmax(teacher / T) || softmax(student / T))``
  over the logits of the classes of *earlier* tasks (temperature
  ``T = lwf_temperature``, batch mean), computed on the raw, unmasked logits so the old
  tasks' outputs are kept in the task-incremental scenario too;
- regression (``loss="mse"``): ``D`` is the mean squared difference between
  the student's and the teacher's outputs (the natural distillation target for
  real-valued outputs; documented choice).

The first task is plain training. Needs task boundaries (``task_free = False``).

Teacher outputs are *recorded* once at the start of each task, as in Li & Hoiem's Algorithm 1
("record responses of the old tasks for each new-task image", before training), in one batched
no-grad pass over the task, and looked up by row during :meth:`~LwF.train_task`; a step on a
batch that does not come from ``train_task`` (an own loop through ``train_step``) runs the teacher
forward on that batch instead. Both give the same outputs: the teacher is frozen and in
evaluation mode, and the rows are the task's own (no augmentation in clkit's loops).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._validate import check_real
from ._common import TaskAwareStrategy
from .base import Task, register, take

__all__ = ["LwF", "distillation_loss"]


def distillation_loss(student: torch.Tensor, teacher: torch.Tensor, temperature: float = 2.0) -> torch.Tensor:
    """Temperature-scaled KL divergence ``T^2 KL(softmax(teacher/T) || softmax(student/T))``.

    Parameters
    ----------
    student, teacher : Tensor, shape (B, C)
        Logits over the same classes.
    temperature : float

    Examples
    --------
    >>> z = torch.tensor([[1.0, 2.0, 0.5]])
    >>> float(distillation_loss(z, z))
    0.0
    >>> float(distillation_loss(torch.zeros(1, 2), torch.tensor([[0.0, 10.0]]), 1.0)) > 0.6
    True
    """
    t = temperature
    log_p = F.log_softmax(student / t, dim=1)
    q = F.softmax(teacher / t, dim=1)
    return F.kl_div(log_p, q, reduction="batchmean") * t * t


class _FusedDistillation(torch.autograd.Function):
    """:func:`distillation_loss` as one autograd node: its gradient with respect to the student's
    logits, ``T (softmax(student / T) - softmax(teacher / T)) / B``, comes from the forward pass."""

    @staticmethod
    def forward(ctx, student, teacher, temperature):
        t = temperature
        log_p = F.log_softmax(student / t, dim=1)
        log_q = F.log_softmax(teacher / t, dim=1)
        q = log_q.exp()
        b = student.shape[0]
        # kl_div's own terms: q (log q - log p), zero where q is 0
        loss = torch.where(q > 0, q * (log_q - log_p), 0.0).sum() * (t * t / b)
        ctx.save_for_backward((log_p.exp() - q).mul_(t / b))
        return loss

    @staticmethod
    def backward(ctx, grad_out):
        (g,) = ctx.saved_tensors
        return g * grad_out, None, None


def _columns(classes):
    """A slice when ``classes`` are consecutive (a view, no copy), else the list itself."""
    if classes and list(classes) == list(range(classes[0], classes[0] + len(classes))):
        return slice(classes[0], classes[0] + len(classes))
    return list(classes)


@register("lwf")
class LwF(TaskAwareStrategy):
    """Learning without Forgetting.

    Parameters
    ----------
    model : torch.nn.Module
    lwf_alpha : float
        Weight of the distillation term (paper: 2).
    lwf_temperature : float
        Softmax temperature ``T`` (Li & Hoiem: 2).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = LwF(MLP(2, 4, hidden=()), epochs=1)
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([0, 1] * 4), task_id=0))
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([2, 3] * 4), task_id=1))
    >>> s.old_classes
    [0, 1]
    """

    task_free = False
    #: largest recorded teacher output (elements) per task; above it the teacher runs per batch
    record_limit = 2 ** 26

    def __init__(self, model, *, lwf_alpha: float = 2.0, lwf_temperature: float = 2.0, **kwargs):
        super().__init__(model, **kwargs)
        self.lwf_alpha = check_real("lwf_alpha", lwf_alpha, low=0)
        self.lwf_temperature = check_real("lwf_temperature", lwf_temperature, low=0, low_open=True)
        self.teacher = None
        self.old_classes: list[int] = []
        self.recorded = None      # teacher outputs on the current task's rows (shape (N, ...))
        self._rows = None         # teacher outputs for the batch of the running train_batch

    def before_task(self, task: Task) -> None:
        self.recorded = None
        if self.steps > 0:
            self.teacher = self.clone_model().eval()
            for p in self.teacher.parameters():
                p.requires_grad_(False)
            self.old_classes = sorted({c for t, cl in self.task_classes.items() if t != task.task_id for c in cl})
            self.recorded = self.record(task)

    @torch.no_grad()
    def record(self, task: Task, batch_size: int = 4096):
        """The teacher's outputs on every row of ``task`` (one batched no-grad pass); ``None`` when
        they would exceed :attr:`record_limit` elements."""
        n = len(task)
        if n == 0:
            return None
        first = self.teacher(take(task.x, slice(0, min(n, batch_size))))
        if first.numel() // len(first) * n > self.record_limit:
            return None
        rest = [self.teacher(take(task.x, slice(s, s + batch_size))) for s in range(batch_size, n, batch_size)]
        return torch.cat([first, *rest]) if rest else first

    def after_task(self, task: Task) -> None:
        self.recorded = None

    def train_batch(self, task: Task, idx: torch.Tensor) -> float:
        """A step on rows ``idx`` of ``task`` with the teacher outputs recorded for them."""
        if self.recorded is not None and len(self.recorded) == len(task):
            self._rows = self.recorded.index_select(0, idx.to(self.recorded.device))
        try:
            return super().train_batch(task, idx)
        finally:
            self._rows = None

    def distillation(self, raw: torch.Tensor, x) -> torch.Tensor | float:
        """The distillation term for the student's raw outputs ``raw`` on batch ``x``."""
        if self.teacher is None:
            return 0.0
        old = self._rows
        if old is None:
            with torch.no_grad():   # one teacher forward, no graph
                old = self.teacher(x)
        if self.loss_fn is F.mse_loss or raw.ndim != 2 or not self.old_classes:
            return F.mse_loss(raw, old)
        key = (tuple(self.old_classes), raw.device)
        if getattr(self, "_cols_key", None) != key:
            cols = _columns(self.old_classes)
            self._cols_key = key
            self._cols = cols if isinstance(cols, slice) else torch.as_tensor(cols, device=raw.device)
        return _FusedDistillation.apply(raw[:, self._cols], old[:, self._cols], self.lwf_temperature)

    def train_step(self, x, y, task: Task | None = None) -> torch.Tensor:
        self.train_mode()
        self.optimizer.zero_grad(set_to_none=True)
        with self.amp.autocast():
            raw = self.model(x)
            classes = task.classes if task is not None else None
            loss = self.criterion(self.mask_logits(raw, classes), y) + self.lwf_alpha * self.distillation(raw, x)
        self.amp.backward(loss, self.optimizer)
        self.after_backward(x, y, task)
        self.amp.step(self.optimizer)
        self.after_step(x, y, task)
        self.steps += 1
        return loss.detach()
