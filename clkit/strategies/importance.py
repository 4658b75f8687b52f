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
after the latest task. MAS can instead keep a running average,
``Omega <- alpha Omega + (1 - alpha) Omega_new`` from ``Omega = 0`` (``importance_update="average"``,
Avalanche 0.2.1's ``MASPlugin``, which the curriculum paper's released code calls). All three need task boundaries (``task_free = False``).
"""

from __future__ import annotations

import torch

from .._validate import check_choice, check_real
from ..device import host_float
from ._common import (TaskAwareStrategy, aligned_rows, flat_views, grads_of, mask_to, per_sample_mean,
                      trainable)
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
    >>> float(quadratic_penalty(lin, [({"weight": torch.tensor([[2.0]])}, {"weight": torch.tensor([[1.0]])})]).detach())
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
    """``coefficient * sum_t sum_k Omega_t,k (theta_k - anchor_t,k)^2`` in a few fused passes.

    The terms are merged once (when they change) into one importance ``A = sum_t Omega_t``, one
    anchor ``B = sum_t Omega_t anchor_t / A`` and a constant ``C = sum_t sum_k Omega_t,k
    (anchor_t,k - B_k)^2`` (merging is exact algebra: ``sum_t Omega_t (theta - a_t)^2 =
    A (theta - B)^2 + C``; formed in float64). With ``S = 2 coefficient A`` two contiguous
    vectors over the parameters are kept, ``r = sqrt(S)`` and ``B``, and a step costs four
    passes over the parameters, plus one to copy them into a flat buffer where the caller has no
    flat copy (``torch._foreach_*``, no per-parameter arithmetic in Python):

    - the residual ``u = r (theta - B) = sqrt(S) (theta - B)`` (a subtraction, exact at the
      anchor, then a multiplication in place),
    - the value ``1/2 u.u + coefficient C`` (one dot product),
    - the gradient ``r u = S (theta - B) = 2 coefficient A (theta - B)``, added into ``.grad``
      in place (:meth:`add_grad_`, one ``addcmul``) or returned by the autograd node of
      :meth:`__call__`.

    Value and gradient are exactly 0 at the anchor and equal the per-parameter
    :func:`quadratic_penalty` to float32 precision elsewhere (tested to 1e-6).

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
    >>> round(float(f().detach()), 5)    # 2 (3 - 1)^2 + 2 (3 - 2)^2
    10.0
    >>> lin.weight.grad = torch.zeros(1, 1)
    >>> f.add_grad_([lin.weight.grad], f.residual())
    >>> [round(v, 5) for v in lin.weight.grad.flatten().tolist()]   # 4 (3 - 1) + 4 (3 - 2)
    [12.0]
    """

    def __init__(self, params, terms, coefficient: float):
        names = list(terms[0][0])
        lookup = dict(params)
        self.params = [lookup[n] for n in names]
        self.names = names
        self.coefficient = float(coefficient)
        p0 = self.params[0]
        # merged in float64 on the CPU (not every device has float64), once per change of the
        # terms; on ``meta`` (shapes only) where the values are
        work = p0.device if p0.device.type == "meta" else torch.device("cpu")

        def flat(d):
            return torch.cat([d[n].reshape(-1).to(work) for n in names]).double()

        with torch.no_grad():
            a = torch.zeros(sum(p.numel() for p in self.params), dtype=torch.float64, device=work)
            s = torch.zeros_like(a)
            for omega, anchor in terms:
                o = flat(omega)
                a += o
                s += o * flat(anchor)
            last = flat(terms[-1][1])
            b = torch.where(a > 0, s / torch.where(a > 0, a, torch.ones_like(a)), last)
            const = 0.0
            if len(terms) > 1:   # one term: its anchor is B, the constant is exactly 0
                for omega, anchor in terms:
                    const += host_float((flat(omega) * (flat(anchor) - b) ** 2).sum())
            root = (2 * self.coefficient * a).sqrt()
            self.root = root.to(p0.device, p0.dtype)                  # r = sqrt(S)
            self.anchor = b.to(p0.device, p0.dtype)                   # B
        self.const = self.coefficient * const
        self.root_views = flat_views(self.root, self.params)
        self.anchor_views = flat_views(self.anchor, self.params)
        self.u = torch.empty_like(self.anchor)                            # residual buffer
        self.u_views = flat_views(self.u, self.params)
        self.last_residual = None
        self._lent = False   # the residual buffer holds gradients handed out by total_over_residual
        # theta - B per parameter (a Python call each) when the tensors are large on average
        self._per_parameter = len(self.anchor) >= 16384 * len(self.params)

    def __call__(self) -> torch.Tensor:
        """The penalty at the current parameters (differentiable with respect to them)."""
        return _FusedPenalty.apply(self, *self.params)

    def residual(self, theta: torch.Tensor | None = None, *, in_step: bool = False) -> list[torch.Tensor]:
        """``u = sqrt(S) (theta - B)`` at the current parameters, into a reused flat buffer.

        Parameters
        ----------
        theta : Tensor, shape (P,), optional
            The parameters already copied into one flat vector (SI keeps such a copy); read
            from the parameters otherwise.
        in_step : bool
            Called by a strategy's step after ``zero_grad``: the buffer is reused even where
            :meth:`total_over_residual` handed it out as the previous step's gradients (a call
            from anywhere else then takes a new buffer, so those gradients stay as they are).

        Returns
        -------
        list of Tensor
            Views of the buffer shaped like each parameter; valid until the next call.
        """
        if self._lent and not in_step:
            self.u = torch.empty_like(self.anchor)
            self.u_views = flat_views(self.u, self.params)
        self._lent = False
        with torch.no_grad():
            if theta is not None:
                torch.sub(theta, self.anchor, out=self.u)
            elif self._per_parameter:   # few large tensors: theta - B straight into the buffer, one pass
                for p, b, u in zip(self.params, self.anchor_views, self.u_views):
                    torch.sub(p, b, out=u)
            else:                       # many small tensors: one foreach copy, one subtraction
                torch._foreach_copy_(self.u_views, self.params)
                self.u.sub_(self.anchor)
            self.u.mul_(self.root)
        self.last_residual = self.u_views
        return self.u_views

    def value_float(self) -> float:
        """:meth:`value` as a Python number (no tensor operations beyond the dot product)."""
        with torch.no_grad():
            return 0.5 * float(torch.dot(self.u, self.u)) + self.const

    def value(self) -> torch.Tensor:
        """The penalty ``1/2 ||u||^2 + coefficient C`` for the latest :meth:`residual`."""
        with torch.no_grad():
            value = torch.dot(self.u, self.u).mul_(0.5)
            return value.add_(self.const) if self.const else value

    def gradient(self, u) -> list[torch.Tensor]:
        """The penalty's gradient ``sqrt(S) u = S (theta - B)`` per parameter (new tensors)."""
        with torch.no_grad():
            return torch._foreach_mul(self.root_views, u)

    def plus_grad(self, grads, u) -> list[torch.Tensor]:
        """``grads`` plus the penalty's gradient for the residual ``u`` (new tensors)."""
        with torch.no_grad():
            return torch._foreach_addcmul(grads, self.root_views, u)

    def add_grad_(self, grads, u) -> None:
        """Add the penalty's gradient for the residual ``u`` into ``grads`` in place."""
        with torch.no_grad():
            torch._foreach_addcmul_(grads, self.root_views, u)

    def total_over_residual(self, grads) -> list[torch.Tensor]:
        """``grads`` plus the penalty's gradient for the latest :meth:`residual` (``grads`` are left
        as they are), equal to :meth:`plus_grad`.

        For few large tensors (``_per_parameter``) the sums are written over the residual buffer,
        one ``addcmul`` per parameter (no new tensors, and the residual and its value have just
        brought the buffer into the cache), and its views are returned: the residual is gone
        afterwards, and the views are the step's gradients until the next in-step
        :meth:`residual` (SI), as the projections' gradient rows are. For many small tensors
        they are new tensors (one ``foreach`` call).
        """
        if not self._per_parameter:
            return self.plus_grad(grads, self.u_views)
        with torch.no_grad():
            for g, r, u in zip(grads, self.root_views, self.u_views):
                torch.addcmul(g, r, u, out=u)
        self.last_residual = None
        self._lent = True
        return self.u_views


class _FusedPenalty(torch.autograd.Function):
    """One autograd node for :class:`FusedQuadratic` (for callers outside a strategy's step)."""

    @staticmethod
    def forward(ctx, fused, *params):
        ctx.fused = fused
        ctx.u = [u.clone() for u in fused.residual()]   # the buffer is reused by later calls
        return fused.value()

    @staticmethod
    def backward(ctx, grad_out):
        grads = ctx.fused.gradient(ctx.u)
        if not (grad_out.numel() == 1 and float(grad_out) == 1.0):
            torch._foreach_mul_(grads, grad_out)
        return (None, *grads)


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

    def step_rows(self, xb, yb, tb, task, incoming=None) -> float:
        """One step; inside it the penalty's gradient is added into ``.grad`` in place."""
        self._in_step = True
        try:
            return super().step_rows(xb, yb, tb, task, incoming)
        finally:
            self._in_step = False
            self._pending = None

    def penalty(self, task: Task | None):
        """``coefficient * sum_t sum_k Omega_t,k (theta_k - theta*_t,k)^2`` (fused passes;
        :func:`quadratic_penalty` is the per-parameter reference).

        Called by a strategy's own step (:meth:`step_rows`) it returns the value without an
        autograd graph and :meth:`after_backward` adds the gradient into ``.grad`` in place (no
        autograd node, no extra gradient tensor); called from anywhere else it returns a
        differentiable tensor (one autograd node).
        """
        fused = self.fused()
        if fused is None:
            return 0.0
        if getattr(self, "_in_step", False):   # after the step's zero_grad(set_to_none=True)
            self._pending = fused.residual(self._flat_theta(fused), in_step=True)
            # the value only enters the reported loss: read on the CPU, a tensor on an accelerator
            return fused.value() if self.sync_free else fused.value_float()
        return fused()

    def _flat_theta(self, fused) -> torch.Tensor | None:
        """A flat copy of the parameters in ``fused``'s order, where a subclass keeps one (SI)."""
        return None

    def after_backward(self, x, y, task) -> None:
        """Add the penalty's gradient ``2 coefficient A (theta - B)`` into ``.grad`` (in a step)."""
        u = getattr(self, "_pending", None)
        if u is not None:
            self._pending = None
            fused = self._fused
            fused.add_grad_(grads_of(fused.params), u)

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
        self._change = {}       # weights before the latest step; after it, the step's change
        self._copied = False    # the pre-step weights are already in ``_change`` (by the penalty)

    def before_task(self, task: Task) -> None:
        self._start = _snapshot(self.model)
        named = trainable(self.model)
        self._names = [n for n, _ in named]
        self._params = [p for _, p in named]
        flat = aligned_rows(2, sum(p.numel() for p in self._params), self._params[0].dtype,
                            self._params[0].device) if named else torch.zeros(2, 0)
        # running w_k and the pre-step weights (after a step, in place, the step's change
        # theta_old - theta_new): contiguous rows, with a view per parameter
        self._flat_path, self._flat_change = flat
        self._path_views = flat_views(flat[0], self._params)
        self._change_views = flat_views(flat[1], self._params)
        self.path = dict(zip(self._names, self._path_views))
        self._change = dict(zip(self._names, self._change_views))

    def after_backward(self, x, y, task) -> None:
        """Keep the unregularised gradient and the pre-step weights; then add the penalty's gradient.

        In a step ``.grad`` holds the task loss's gradient only; those tensors are kept as they are
        (no copy) and each parameter gets a new ``.grad``: loss gradient plus penalty gradient,
        written over the penalty's residual buffer once its value is read
        (:meth:`FusedQuadratic.total_over_residual`: no new tensors, and the buffer is still in
        the cache), a view of that buffer until the next step.
        """
        with torch.no_grad():
            params = self._params
            grads = grads_of(params)
            u = getattr(self, "_pending", None)
            if u is not None:
                self._pending = None
                fused = self._fused
                total = fused.total_over_residual(grads_of(fused.params))
                for p, g in zip(fused.params, total):
                    p.grad = g
            else:   # a penalty from outside a step (autograd): remove its gradient 2 c Omega (theta - theta*)
                grads = [g.clone() for g in grads]
                fused = self.fused()
                if fused is not None and fused.last_residual is not None:
                    pen = dict(zip(fused.names, fused.gradient(fused.last_residual)))
                    for n, g in zip(self._names, grads):
                        if n in pen:
                            g.sub_(pen[n])
            self._unreg = grads
            if u is None:   # the in-step penalty (_flat_theta) has not looked at the optimizer yet
                self._step_from = self._sgd_step_source()
            if not self._copied and self._step_from is None:
                torch._foreach_copy_(self._change_views, params)
            self._copied = False

    def _sgd_step_source(self):
        """``(lr, 'buffer' | 'grad')`` where the coming step is ``theta -= lr * source`` exactly by
        construction of ``torch.optim.SGD`` (one group, no Nesterov, no maximize; weight decay only
        with momentum, which folds it into the buffer), fused or not; ``None`` for any other optimizer."""
        opt = getattr(self, "optimizer", None)
        if type(opt) is not torch.optim.SGD or len(opt.param_groups) != 1:
            return None
        group = opt.param_groups[0]
        lr = group["lr"]
        if (not isinstance(lr, float) or group.get("nesterov") or group.get("maximize")
                or group.get("differentiable")):
            return None
        if group["momentum"] == 0:
            return None if group["weight_decay"] else (lr, "grad")
        return lr, "buffer"

    def _flat_theta(self, fused) -> torch.Tensor | None:
        """Copy the pre-step weights now (the penalty reads them as one flat vector) where the
        path integral needs them (not with SGD, whose step is read from its own tensors: then the
        penalty reads the parameters themselves)."""
        self._step_from = self._sgd_step_source()   # after_backward reuses it in this step
        if self._step_from is not None:
            return None
        checked = getattr(self, "_order_checked", None)   # (penalty, parameters, same order?)
        if checked is None or checked[0] is not fused or checked[1] is not self._params:
            same = len(fused.params) == len(self._params) and all(
                a is b for a, b in zip(fused.params, self._params))
            checked = self._order_checked = (fused, self._params, same)
        if not checked[2]:
            return None
        with torch.no_grad():
            torch._foreach_copy_(self._change_views, self._params)
        self._copied = True
        return self._flat_change

    @property
    def unregularised_gradient(self) -> dict:
        """The latest step's gradient of the task loss alone (the one the path integral uses),
        by parameter name."""
        return dict(zip(self._names, getattr(self, "_unreg", None) or ()))

    def _momentum_buffers(self) -> list:
        """SGD's momentum buffer of each parameter (``None`` where it has none yet); the list is
        kept while the optimizer keeps the same buffer objects (it updates them in place)."""
        state = self.optimizer.state
        cached = getattr(self, "_buffers", None)
        if (cached is not None and cached[0] is state and cached[1] is self._params
                and all(state.get(p, {}).get("momentum_buffer") is b for p, b in zip(self._params[:1], cached[2]))):
            return cached[2]
        bufs = [state[p].get("momentum_buffer") if p in state else None for p in self._params]
        if all(b is not None for b in bufs):
            self._buffers = (state, self._params, bufs)
        return bufs

    def after_step(self, x, y, task) -> None:
        """Update the path integral ``w += g (theta_old - theta_new)`` every step.

        With ``torch.optim.SGD`` the step's change is ``lr * b`` (``b`` its momentum buffer, or the
        gradient it used without momentum), so the update is one ``addcmul`` on the optimizer's own
        tensors and the pre-step weights are not copied; otherwise the change is formed from a copy
        of the pre-step weights (two ``torch._foreach_*`` ops). Both are exact up to rounding
        (tests/test_strategies_fused.py compares them with the per-parameter reference).
        """
        source = getattr(self, "_step_from", None)
        with torch.no_grad():
            if source is not None:
                lr, kind = source
                if kind == "grad":
                    changes = [p.grad for p in self._params]
                else:
                    changes = self._momentum_buffers()
                if all(c is not None for c in changes):
                    torch._foreach_addcmul_(self._path_views, self._unreg, changes, value=lr)
                    return
                raise RuntimeError("SI: a parameter took no SGD step (no gradient); use optimizer='adam' "
                                   "or give every trainable parameter a gradient")
            torch._foreach_sub_(self._change_views, self._params)   # in place: the step's change
            torch._foreach_addcmul_(self._path_views, self._unreg, self._change_views)

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
    importance_update : {"sum", "average"}
        How a task's importance ``Omega_new`` enters the running one. ``"sum"`` (default):
        ``Omega <- Omega + Omega_new`` (Aljundi et al.'s accumulation). ``"average"``:
        ``Omega <- mas_alpha * Omega + (1 - mas_alpha) * Omega_new``, starting from
        ``Omega = 0``, so after the first task ``Omega = (1 - mas_alpha) Omega_1`` -- the form of
        Avalanche 0.2.1's ``MASPlugin.after_training_exp`` (``avalanche/training/plugins/mas.py``
        at tag v0.2.1, commit ce65eb007f60acfce9087e57ff1d710a586bfd8a, whose ``before_training``
        sets the importance to zeros), the version the curriculum paper's code pins
        (lifelonglab/M2I_I2M_benchmark ``requirements.txt``, commit
        254e26e7f36e468027860a52e8b85a5c6bce1d49). Later Avalanche releases start from the
        first task's importance instead; with ``mas_lambda`` fixed the two differ by the factor
        ``1 - mas_alpha`` on every term.
    mas_alpha : float
        Weight of the old importance in ``"average"``, in [0, 1] (Avalanche's default and the
        authors' config: 0.5); ignored by ``"sum"``.
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = MAS(MLP(2, 2, hidden=()), epochs=1)
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([0, 1] * 4)))
    >>> sorted(s.terms[0][0])
    ['head.bias', 'head.weight']
    >>> MAS(MLP(2, 2, hidden=()), importance_update="mean")
    Traceback (most recent call last):
    ...
    ValueError: importance_update must be one of ['sum', 'average'], got 'mean'
    """

    def __init__(self, model, *, mas_lambda: float = 1.0, importance_update: str = "sum", mas_alpha: float = 0.5,
                 **kwargs):
        super().__init__(model, **kwargs)
        self.mas_lambda = check_real("mas_lambda", mas_lambda, low=0)
        self.importance_update = check_choice("importance_update", importance_update, ["sum", "average"])
        self.mas_alpha = check_real("mas_alpha", mas_alpha, low=0, high=1)
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
        new = self.importance(task)
        if self.importance_update == "sum":
            self._accumulate(new)
            return
        a = self.mas_alpha    # running average from zero (Avalanche 0.2.1)
        old = self.terms[0][0] if self.terms else {}
        self.terms = [({k: (a * old[k] if k in old else 0.0) + (1 - a) * v for k, v in new.items()},
                       _snapshot(self.model))]
