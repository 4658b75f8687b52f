"""Quadratic weight-importance regularisers: EWC, SI and MAS.

All three add ``sum_k Omega_k * (theta_k - theta*_k)^2`` to the loss, where
``theta*`` are the weights after an earlier task and ``Omega`` says how much
each weight mattered for it. They differ in ``Omega``:

- **EWC** (Kirkpatrick et al., 2017): the diagonal *empirical Fisher* of the
  loss, ``F = mean_i (d loss(x_i, y_i) / d theta)^2`` over the task's samples
  (per-sample gradients, not batch gradients), one anchor per task
  ("separate" EWC): ``penalty = ewc_lambda / 2 * sum_t sum_k F_t,k (theta_k - theta*_t,k)^2``.
  Works for any loss, so regression (``loss="mse"``) too.
- **SI** (Zenke et al., 2017): the path integral of the gradient along the
  training trajectory, ``w_k = -sum_steps g_k * delta theta_k`` with ``g`` the
  gradient of the *unregularised* loss (the penalty's own gradient is
  subtracted), normalised at the end of a task: ``Omega_k += w_k / (Delta_k^2 + si_eps)``
  with ``Delta`` the change of the weight over the task. Contributions are
  clipped at zero (momentum can make ``w_k`` slightly negative; a negative
  importance would reward forgetting). ``penalty = si_lambda * sum_k Omega_k (theta_k - theta*_k)^2``.
- **MAS** (Aljundi et al., 2018): unsupervised importance, the mean absolute
  per-sample gradient of the squared L2 norm of the model output,
  ``Omega_k += mean_i |d ||f(x_i)||^2 / d theta_k|``; in the task-incremental
  scenario the output is restricted to the task's classes.
  ``penalty = mas_lambda * sum_k Omega_k (theta_k - theta*_k)^2``.

SI and MAS accumulate ``Omega`` over tasks (sum) and anchor at the weights
after the latest task. All three need task boundaries (``task_free = False``).
"""

from __future__ import annotations

import torch

from .._validate import check_real
from ._common import TaskAwareStrategy, mask_to, per_sample_mean, trainable
from .base import Task, register

__all__ = ["EWC", "SI", "MAS", "quadratic_penalty"]


def quadratic_penalty(model, terms) -> torch.Tensor | float:
    """``sum over (importance, anchor) in terms of sum_k importance_k (theta_k - anchor_k)^2``.

    Parameters
    ----------
    model : torch.nn.Module
    terms : list of (dict name -> Tensor, dict name -> Tensor)
        Importances and anchors of the trainable parameters.

    Examples
    --------
    >>> lin = torch.nn.Linear(1, 1, bias=False)
    >>> with torch.no_grad():
    ...     _ = lin.weight.fill_(3.0)
    >>> float(quadratic_penalty(lin, [({"weight": torch.tensor([[2.0]])}, {"weight": torch.tensor([[1.0]])})]))
    8.0
    """
    if not terms:
        return 0.0
    params = dict(trainable(model))
    total = 0.0
    for importance, anchor in terms:
        for name, omega in importance.items():
            total = total + (omega * (params[name] - anchor[name]) ** 2).sum()
    return total


def _snapshot(model) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in trainable(model)}


class _Quadratic(TaskAwareStrategy):
    """Shared machinery: a list of ``(importance, anchor)`` terms and their penalty."""

    task_free = False
    coefficient = 1.0

    def __init__(self, model, **kwargs):
        super().__init__(model, **kwargs)
        self.terms: list[tuple[dict, dict]] = []

    def penalty(self, task: Task | None):
        return self.coefficient * quadratic_penalty(self.model, self.terms)

    def _accumulate(self, importance: dict) -> None:
        """Add ``importance`` to the single running term and re-anchor at the current weights."""
        if self.terms:
            importance = {k: self.terms[0][0][k] + v for k, v in importance.items()}
        self.terms = [(importance, _snapshot(self.model))]


@register("ewc")
class EWC(_Quadratic):
    """Elastic Weight Consolidation with the per-sample empirical Fisher (one anchor per task).

    Parameters
    ----------
    model : torch.nn.Module
    ewc_lambda : float
        Penalty strength ``lambda`` (paper: 1).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = EWC(MLP(2, 2, hidden=()), ewc_lambda=1.0, epochs=1)
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([0, 1] * 4)))
    >>> float(s.penalty(None).detach())   # zero at the anchor
    0.0
    """

    def __init__(self, model, *, ewc_lambda: float = 1.0, **kwargs):
        super().__init__(model, **kwargs)
        self.ewc_lambda = check_real("ewc_lambda", ewc_lambda, low=0)
        self.coefficient = self.ewc_lambda / 2

    def fisher(self, task: Task) -> dict[str, torch.Tensor]:
        """Diagonal empirical Fisher ``mean_i (d loss_i / d theta)^2`` on ``task`` (eval mode)."""
        was = self.model.training
        self.model.eval()
        classes = task.classes

        def loss(out, y):
            return self.loss_fn(mask_to(out, classes, self.scenario), y)

        try:
            return per_sample_mean(self.model, loss, task.x, task.y, torch.square)
        finally:
            self.model.train(was)

    def after_task(self, task: Task) -> None:
        self.terms.append((self.fisher(task), _snapshot(self.model)))


@register("si")
class SI(_Quadratic):
    """Synaptic Intelligence: importance from the path integral of the gradient.

    Parameters
    ----------
    model : torch.nn.Module
    si_lambda : float
        Penalty strength ``c`` (paper: 1).
    si_eps : float
        Damping ``xi`` of the normalisation ``w / (Delta^2 + xi)`` (Zenke et al.: 0.1).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = SI(MLP(2, 2, hidden=()), epochs=2)
    >>> _ = s.train_task(Task(torch.randn(16, 2), torch.tensor([0, 1] * 8)))
    >>> bool(all((om >= 0).all() for om in s.terms[0][0].values()))
    True
    """

    def __init__(self, model, *, si_lambda: float = 1.0, si_eps: float = 0.1, **kwargs):
        super().__init__(model, **kwargs)
        self.si_lambda = check_real("si_lambda", si_lambda, low=0)
        self.si_eps = check_real("si_eps", si_eps, low=0, low_open=True)
        self.coefficient = self.si_lambda
        self.path = {}          # running w_k of the current task
        self._start = {}
        self._grad = {}
        self._before = {}

    def before_task(self, task: Task) -> None:
        self._start = _snapshot(self.model)
        self.path = {k: torch.zeros_like(v) for k, v in self._start.items()}

    def after_backward(self, x, y, task) -> None:
        params = dict(trainable(self.model))
        omega, anchor = self.terms[0] if self.terms else ({}, {})
        for name, p in params.items():
            g = p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
            if name in omega:  # remove the penalty's own gradient 2 c Omega (theta - theta*)
                g -= 2 * self.coefficient * omega[name] * (p.detach() - anchor[name])
            self._grad[name] = g
            self._before[name] = p.detach().clone()

    def after_step(self, x, y, task) -> None:
        for name, p in trainable(self.model):
            self.path[name] -= self._grad[name] * (p.detach() - self._before[name])

    def after_task(self, task: Task) -> None:
        now = _snapshot(self.model)
        importance = {k: (self.path[k] / ((now[k] - self._start[k]) ** 2 + self.si_eps)).clamp_min(0)
                      for k in now}
        self._accumulate(importance)


@register("mas")
class MAS(_Quadratic):
    """Memory Aware Synapses: importance = mean |gradient of the squared output norm|.

    Parameters
    ----------
    model : torch.nn.Module
    mas_lambda : float
        Penalty strength (Aljundi et al.: 1).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = MAS(MLP(2, 2, hidden=()), epochs=1)
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([0, 1] * 4)))
    >>> sorted(s.terms[0][0])
    ['head.bias', 'head.weight']
    """

    def __init__(self, model, *, mas_lambda: float = 1.0, **kwargs):
        super().__init__(model, **kwargs)
        self.mas_lambda = check_real("mas_lambda", mas_lambda, low=0)
        self.coefficient = self.mas_lambda

    def importance(self, task: Task) -> dict[str, torch.Tensor]:
        """``mean_i |d ||f(x_i)||^2 / d theta|`` on ``task`` (eval mode)."""
        was = self.model.training
        self.model.eval()
        classes = task.classes if (self.scenario == "task" and not torch.is_floating_point(task.y)) else None

        def norm2(out, y):
            out = out[:, list(classes)] if classes is not None and out.ndim == 2 else out
            return out.pow(2).sum()

        try:
            return per_sample_mean(self.model, norm2, task.x, task.y, torch.abs)
        finally:
            self.model.train(was)

    def after_task(self, task: Task) -> None:
        self._accumulate(self.importance(task))
