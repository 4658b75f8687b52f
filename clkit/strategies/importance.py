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
from ._common import TaskAwareStrategy, flat_views, mask_to, per_sample_mean, trainable
from .base import Task, register

__all__ = ["EWC", "SI", "MAS", "quadratic_penalty", "FusedQuadratic"]


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


class FusedQuadratic:
    """``coefficient * sum_t sum_k Omega_t,k (theta_k - anchor_t,k)^2`` as one fused pass.

    The terms are merged once (when they change) into one importance ``A = sum_t Omega_t``, one
    anchor ``B = sum_t Omega_t anchor_t / A`` and a constant ``C = sum_t sum_k Omega_t,k
    (anchor_t,k - B_k)^2`` (merging is exact algebra: ``sum_t Omega_t (theta - a_t)^2 =
    A (theta - B)^2 + C``; ``B`` and ``C`` are formed in float64). ``A`` and ``B`` are kept as
    contiguous vectors over the parameters; a step then costs a copy of the parameters into a
    flat buffer, one subtraction, one multiplication and one dot product, and its gradient
    ``2 coefficient A (theta - B)`` is already computed by the forward pass (one autograd node).

    Parameters
    ----------
    params : list of (name, Parameter)
        The parameters the importances refer to, in a fixed order.
    terms : list of (dict name -> Tensor, dict name -> Tensor)
        Importances and anchors, as for :func:`quadratic_penalty`.
    coefficient : float

    Examples
    --------
    >>> lin = torch.nn.Linear(1, 1, bias=False)
    >>> with torch.no_grad():
    ...     _ = lin.weight.fill_(3.0)
    >>> w = {"weight": torch.tensor([[2.0]])}
    >>> f = FusedQuadratic(list(lin.named_parameters()), [(w, {"weight": torch.tensor([[1.0]])}),
    ...                                                   (w, {"weight": torch.tensor([[2.0]])})], 1.0)
    >>> float(f())    # 2 (3 - 1)^2 + 2 (3 - 2)^2
    10.0
    """

    def __init__(self, params, terms, coefficient: float):
        names = list(terms[0][0])
        lookup = dict(params)
        self.params = [lookup[n] for n in names]
        self.names = names
        self.coefficient = float(coefficient)
        p0 = self.params[0]
        sizes = [p.numel() for p in self.params]
        with torch.no_grad():
            a = torch.zeros(sum(sizes), dtype=torch.float64)   # float64 on the CPU (not every device has it)
            s = torch.zeros_like(a)
            for omega, anchor in terms:
                o = torch.cat([omega[n].reshape(-1).cpu() for n in names]).double()
                a += o
                s += o * torch.cat([anchor[n].reshape(-1).cpu() for n in names]).double()
            last = torch.cat([terms[-1][1][n].reshape(-1).cpu() for n in names]).double()
            b = torch.where(a > 0, s / torch.where(a > 0, a, torch.ones_like(a)), last)
            const = 0.0
            if len(terms) > 1:   # one term: its anchor is B, the constant is exactly 0
                for omega, anchor in terms:
                    o = torch.cat([omega[n].reshape(-1).cpu() for n in names]).double()
                    const += float((o * (torch.cat([anchor[n].reshape(-1).cpu() for n in names]).double() - b) ** 2).sum())
            dtype = p0.dtype
            self.scaled = (2 * self.coefficient * a).to(p0.device, dtype)     # 2 c A
            self.anchor = b.to(p0.device, dtype)                              # B
        self.const = self.coefficient * const
        self.diff = torch.empty_like(self.anchor)                 # theta - B
        self.grad = torch.empty_like(self.anchor)                 # 2 c A (theta - B)
        self.diff_views = flat_views(self.diff, self.params)
        self.grad_views = flat_views(self.grad, self.params)

    def __call__(self) -> torch.Tensor:
        """The penalty at the current parameters (differentiable with respect to them)."""
        return _FusedPenalty.apply(self, *self.params)

    def value_and_grad(self) -> torch.Tensor:
        """Fill ``self.grad`` with the penalty's gradient and return its value (no autograd)."""
        with torch.no_grad():
            torch._foreach_copy_(self.diff_views, self.params)
            self.diff.sub_(self.anchor)
            torch.mul(self.diff, self.scaled, out=self.grad)
            value = torch.dot(self.diff, self.grad).mul_(0.5)
            return value.add_(self.const) if self.const else value


class _FusedPenalty(torch.autograd.Function):
    """One autograd node for :class:`FusedQuadratic`: its gradient comes from the forward pass."""

    @staticmethod
    def forward(ctx, fused, *params):
        ctx.fused = fused
        return fused.value_and_grad()

    @staticmethod
    def backward(ctx, grad_out):
        views = ctx.fused.grad_views
        if not (grad_out.numel() == 1 and float(grad_out) == 1.0):
            views = torch._foreach_mul(views, grad_out)
        # else: the views themselves; the engine never writes into a tensor whose storage is
        # shared (it sums into a new tensor, or clones before storing it as ``.grad``)
        return (None, *views)


def _snapshot(model) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in trainable(model)}


class _Quadratic(TaskAwareStrategy):
    """Shared machinery: a list of ``(importance, anchor)`` terms and their penalty."""

    task_free = False
    coefficient = 1.0

    def __init__(self, model, **kwargs):
        super().__init__(model, **kwargs)
        self.terms: list[tuple[dict, dict]] = []
        self._fused = None
        self._fused_key = None

    def fused(self) -> FusedQuadratic | None:
        """The merged penalty of ``self.terms`` (rebuilt whenever the terms or the coefficient change)."""
        if not self.terms:
            return None
        key = (float(self.coefficient), [d for term in self.terms for d in term])
        old = self._fused_key
        if old is None or old[0] != key[0] or len(old[1]) != len(key[1]) or \
                any(a is not b for a, b in zip(old[1], key[1])):
            self._fused = FusedQuadratic(trainable(self.model), self.terms, self.coefficient)
            self._fused_key = key
        return self._fused

    def penalty(self, task: Task | None):
        """``coefficient * sum_t sum_k Omega_t,k (theta_k - theta*_t,k)^2`` (one fused node;
        :func:`quadratic_penalty` is the per-parameter reference)."""
        fused = self.fused()
        return 0.0 if fused is None else fused()

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
        self._grad = {}         # unregularised gradient of the latest step
        self._before = {}       # weights before the latest step

    def before_task(self, task: Task) -> None:
        self._start = _snapshot(self.model)
        named = trainable(self.model)
        self._names = [n for n, _ in named]
        self._params = [p for _, p in named]
        flat = torch.zeros(2, sum(p.numel() for p in self._params), dtype=self._params[0].dtype,
                           device=self._params[0].device) if named else torch.zeros(2, 0)
        # running w_k and the pre-step weights: contiguous rows, with a view per parameter
        self._flat_path, self._flat_before = flat
        self._path_views = flat_views(flat[0], self._params)
        self._before_views = flat_views(flat[1], self._params)
        self.path = dict(zip(self._names, self._path_views))
        self._before = dict(zip(self._names, self._before_views))
        self._grad = {}

    def after_backward(self, x, y, task) -> None:
        with torch.no_grad():
            params = self._params
            grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
            fused = self.fused()
            if fused is None:
                unreg = torch._foreach_sub(grads, 0.0)   # a copy
            elif len(fused.params) == len(self._params) and all(
                    a is b for a, b in zip(fused.params, self._params)):
                # remove the penalty's own gradient 2 c Omega (theta - theta*)
                unreg = torch._foreach_sub(grads, fused.grad_views)
            else:
                pen = dict(zip(fused.names, fused.grad_views))
                unreg = [g - pen[n] if n in pen else g.clone() for n, g in zip(self._names, grads)]
            self._grad_views = unreg
            self._grad = dict(zip(self._names, unreg))
            torch._foreach_copy_(self._before_views, params)

    def after_step(self, x, y, task) -> None:
        with torch.no_grad():   # w -= g (theta_new - theta_old), i.e. w += g (theta_old - theta_new)
            delta = torch._foreach_sub(self._before_views, self._params)
            torch._foreach_addcmul_(self._path_views, self._grad_views, delta)

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
