"""Task-free strategies that need no task boundaries: GSS and MAS*.

- **GSS** (Aljundi et al., 2019, "Gradient based sample selection", the greedy
  variant): a memory of ``memory_size`` rows, each with a score ``C_j``. An
  incoming row gets ``c = 1 + max_j cos(g, g_j)`` over the gradients of
  ``gss_constraints`` random memory rows (``c = 0`` while the memory is empty). While
  there is room the row is stored with score ``c``; otherwise, when ``c < 2``, a
  slot ``j`` is drawn with probability proportional to ``C_j`` and replaced with
  probability ``C_j / (C_j + c)``. Rows whose gradients point in new directions
  therefore enter the memory; aligned ones rarely do. Training mixes a uniform
  memory sample of the incoming batch's size into every step (1:1, as ER).

  *Choice where the method is open*: per-row gradients are those of the output
  layer, in closed form -- for cross-entropy the gradient with respect to
  ``(W, b)`` of a linear head is ``(softmax - onehot) ⊗ [z, 1]`` with ``z`` the
  penultimate features, so the cosine of two rows is
  ``<a, a'> <z̃, z̃'> / (|a||z̃||a'||z̃'|)`` -- exact for the head, no per-row backward.
  Models without ``embed``/``head`` (penultimate features) fall back to
  per-row backward passes over all parameters. DRIFT's "gradient memory
  strength 5" is a setting of GSS's QP variant and has no role in the greedy one.

- **MAS*** (Aljundi et al., 2019, "Task-free continual learning"): MAS
  importance ``Omega = |d mean_i ||f(x_i)||^2 / d theta|`` (computed on the
  ``window_length`` most recent batches, a batch gradient) is refreshed only
  when a loss-based shift detector fires, then ``mas_lambda * sum Omega (theta - theta*)^2``
  anchors the weights at that moment. Detector (original implementation): a
  window of the last ``window_length`` batch losses; a *peak* is flagged when the
  window mean exceeds the previous plateau's mean by more than its standard
  deviation; a *plateau* -- window mean below ``window_mean_threshold`` and
  variance below ``window_variance_threshold`` -- after a peak triggers the
  update, ``Omega <- Omega (1 - 1/n) + Omega_new / n`` (n = number of updates so far).

**Devices.** Both keep their tensors on the model's device and draw from CPU
generators (the same draws on every device). Each decides on the host from one value
per step, read once (:func:`clkit.device.to_host`; NaN on ``meta``): GSS reads its
incoming rows' scores ``c`` (its replacement draws use the host generator with
probabilities from them), MAS* the batch loss its detector watches (whether to run the
importance pass at all depends on it). Every other step of theirs reads nothing.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import torch
import torch.nn.functional as F

from .._validate import check_int, check_real
from ..device import host_float, to_host
from ._common import TaskAwareStrategy, trainable
from .base import Task, _cat, register, take
from .importance import quadratic_penalty

__all__ = ["GSS", "MASStar", "head_gradient_cosine", "LossShiftDetector"]


def head_gradient_cosine(a: torch.Tensor, z: torch.Tensor, a2: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    """Cosines between the closed-form linear-head gradients ``a_i ⊗ [z_i, 1]`` and ``a2_j ⊗ [z2_j, 1]``.

    Parameters
    ----------
    a, a2 : Tensor, shape (n, C), (m, C)
        Output-space gradients (softmax minus one-hot for cross-entropy).
    z, z2 : Tensor, shape (n, d), (m, d)
        Penultimate features.

    Returns
    -------
    Tensor, shape (n, m)

    Examples
    --------
    >>> a, z = torch.tensor([[1., -1.]]), torch.tensor([[2., 0.]])
    >>> g = torch.outer(a[0], torch.tensor([2., 0., 1.])).ravel()   # explicit flattened gradient
    >>> round(float(head_gradient_cosine(a, z, a, z)), 6)
    1.0
    >>> a2, z2 = torch.tensor([[1., 0.]]), torch.tensor([[0., 1.]])
    >>> g2 = torch.outer(a2[0], torch.tensor([0., 1., 1.])).ravel()
    >>> bool(torch.isclose(head_gradient_cosine(a, z, a2, z2)[0, 0], F.cosine_similarity(g, g2, dim=0)))
    True
    """
    zt = F.pad(z, (0, 1), value=1.0)
    zt2 = F.pad(z2, (0, 1), value=1.0)
    num = (a @ a2.T) * (zt @ zt2.T)
    den = (a.norm(dim=1)[:, None] * zt.norm(dim=1)[:, None]) * (a2.norm(dim=1)[None, :] * zt2.norm(dim=1)[None, :])
    return num / den.clamp_min(1e-12)


@register("gss")
class GSS(TaskAwareStrategy):
    """Gradient-based sample selection (greedy), task-free; see the module docstring.

    Parameters
    ----------
    model : torch.nn.Module
    memory_size : int
        Memory rows (DRIFT: n_sampled = 100).
    gss_constraints : int
        Random memory rows whose gradients score a candidate (DRIFT: n_constraints = 10).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = GSS(MLP(2, 2, hidden=(4,)), memory_size=6, batch_size=4)
    >>> for _ in range(5):
    ...     _ = s.observe(torch.randn(4, 2), torch.tensor([0, 1, 0, 1]))
    >>> len(s.mem_y), bool((s.mem_score >= 0).all())
    (6, True)
    """

    task_free = True

    def __init__(self, model, *, memory_size: int = 100, gss_constraints: int = 10, **kwargs):
        super().__init__(model, **kwargs)
        self.memory_size = check_int("memory_size", memory_size, low=1)
        self.gss_constraints = check_int("gss_constraints", gss_constraints, low=1)
        self.mem_x = None
        self.mem_y = torch.zeros(0, dtype=torch.int64, device=self.device)
        self.mem_score = np.zeros(0)   # C_j, on the host (read with the scores)

    def replay(self, x, y, task: Task | None):
        tids = self.task_ids_of(len(y), task)
        m = len(self.mem_y)
        if m == 0:
            return x, y, tids
        idx = torch.randperm(m, generator=self.generator)[: len(y)]
        return (_cat(x, take(self.mem_x, idx)), torch.cat([y, self.mem_y[idx]]),
                torch.cat([tids, torch.full((len(idx),), -1, dtype=tids.dtype, device=tids.device)]))

    # ---------------------------------------------------------------- scores
    @torch.no_grad()
    def _head_terms(self, x, y):
        model = self.model
        z = model.embed(x)
        a = torch.softmax(model.head(z), 1) - F.one_hot(y, model.head.out_features).float()
        return a, z

    def _flat_grads(self, x, y):
        rows = []
        params = [p for _, p in trainable(self.model)]
        for i in range(len(y)):
            out = self.model(take(x, slice(i, i + 1)))
            g = torch.autograd.grad(self.criterion(out, y[i:i + 1]), params, allow_unused=True)
            rows.append(torch.cat([(gi if gi is not None else torch.zeros_like(p)).reshape(-1)
                                   for gi, p in zip(g, params)]))
        return torch.stack(rows)

    def scores(self, x, y) -> np.ndarray:
        """``c = 1 + max cos`` of each incoming row against ``gss_constraints`` random memory rows
        (computed on the device, read once: the step's one read)."""
        m = len(self.mem_y)
        if m == 0:
            return np.zeros(len(y))
        ref = torch.randperm(m, generator=self.generator)[: self.gss_constraints]
        rx, ry = take(self.mem_x, ref), self.mem_y[ref]
        was = self.model.training
        self.model.eval()
        if hasattr(self.model, "embed") and isinstance(getattr(self.model, "head", None), torch.nn.Linear):
            a, z = self._head_terms(x, y)
            a2, z2 = self._head_terms(rx, ry)
            cos = head_gradient_cosine(a, z, a2, z2)
        else:
            g, g2 = self._flat_grads(x, y), self._flat_grads(rx, ry)
            cos = F.cosine_similarity(g[:, None, :], g2[None, :, :], dim=2)
        self.model.train(was)
        return to_host(1.0 + cos.max(dim=1).values)

    def after_step(self, x, y, task) -> None:
        c = self.scores(x, y)
        x_d = x.detach() if torch.is_tensor(x) else x
        for i in range(len(y)):
            m = len(self.mem_y)
            row = take(x_d, slice(i, i + 1))
            if m < self.memory_size:
                self.mem_x = row if self.mem_x is None else _cat(self.mem_x, row)
                self.mem_y = torch.cat([self.mem_y, y[i:i + 1]])
                self.mem_score = np.append(self.mem_score, c[i])
            elif c[i] < 2.0:
                total = self.mem_score.sum()
                prob = self.mem_score / total if total > 0 else np.full(m, 1.0 / m)
                j = int(self.rng.choice(m, p=prob))
                if self.rng.random() < self.mem_score[j] / (self.mem_score[j] + c[i] + 1e-12):
                    if torch.is_tensor(self.mem_x):
                        self.mem_x[j] = row[0]
                    else:
                        for s, v in zip(self.mem_x, row):
                            s[j] = v[0]
                    self.mem_y[j] = y[i]
                    self.mem_score[j] = c[i]


class LossShiftDetector:
    """MAS*'s loss-window detector: a loss peak followed by a low, stable plateau.

    Parameters
    ----------
    window_length : int
    window_mean_threshold, window_variance_threshold : float

    Examples
    --------
    >>> d = LossShiftDetector(window_length=2, window_mean_threshold=0.5, window_variance_threshold=0.1)
    >>> [d.update(v) for v in [2.0, 2.0, 0.3, 0.3, 0.3, 2.5, 2.5, 0.2, 0.2]]
    [False, False, False, True, False, False, False, False, True]
    """

    def __init__(self, window_length: int = 5, window_mean_threshold: float = 0.2,
                 window_variance_threshold: float = 0.1):
        self.window_length = check_int("window_length", window_length, low=1)
        self.mean_threshold = check_real("window_mean_threshold", window_mean_threshold, low=0)
        self.var_threshold = check_real("window_variance_threshold", window_variance_threshold, low=0)
        self.window: deque = deque(maxlen=self.window_length)
        self.last_mean = 0.0
        self.last_var = 0.0
        self.peak = True  # the first plateau counts (nothing learned yet)
        self.fired: list[int] = []
        self.t = 0

    def update(self, loss: float) -> bool:
        """Feed one batch loss; ``True`` when the importance update should happen now."""
        self.t += 1
        self.window.append(float(loss))
        if len(self.window) < self.window_length:
            return False
        mean, var = float(np.mean(self.window)), float(np.var(self.window))
        if not self.peak and mean > self.last_mean + np.sqrt(self.last_var):
            self.peak = True
        if self.peak and mean < self.mean_threshold and var < self.var_threshold:
            self.last_mean, self.last_var, self.peak = mean, var, False
            self.fired.append(self.t)
            return True
        return False


@register("mas_star")
class MASStar(TaskAwareStrategy):
    """Task-free MAS with the loss-based shift detector; see the module docstring.

    Parameters
    ----------
    model : torch.nn.Module
    mas_lambda : float
        Penalty strength (DRIFT: 0.5).
    window_length, window_mean_threshold, window_variance_threshold
        Detector settings (original implementation: 5, 0.2, 0.1).
    memory_size : int, optional
        Accepted for a uniform interface and ignored (MAS* keeps no replay memory).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = MASStar(MLP(2, 2, hidden=()), window_length=2, window_mean_threshold=10.0, window_variance_threshold=10.0)
    >>> _ = s.observe(torch.randn(4, 2), torch.tensor([0, 1, 0, 1]))
    >>> _ = s.observe(torch.randn(4, 2), torch.tensor([0, 1, 0, 1]))
    >>> s.num_updates, float(s.penalty(None).detach()) == 0.0
    (1, True)
    """

    task_free = True

    def __init__(self, model, *, mas_lambda: float = 0.5, window_length: int = 5, window_mean_threshold: float = 0.2,
                 window_variance_threshold: float = 0.1, memory_size: int | None = None, **kwargs):
        super().__init__(model, **kwargs)
        self.mas_lambda = check_real("mas_lambda", mas_lambda, low=0)
        self.detector = LossShiftDetector(window_length, window_mean_threshold, window_variance_threshold)
        self.recent: deque = deque(maxlen=self.detector.window_length)
        self.omega: dict[str, torch.Tensor] = {}
        self.anchor: dict[str, torch.Tensor] = {}
        self.num_updates = 0
        self._task_loss = 0.0   # the step's task loss, a tensor on the device until after_step reads it

    def rows_loss(self, x, y, task_ids):
        loss = super().rows_loss(x, y, task_ids)
        self._task_loss = loss.detach()
        return loss

    def watched_loss(self) -> float:
        """The loss the detector sees this step, read from the device (the step's one read)."""
        return host_float(self._task_loss)

    def penalty(self, task):
        if not self.omega:
            return 0.0
        return self.mas_lambda * quadratic_penalty(self.model, [(self.omega, self.anchor)])

    def importance(self, x) -> dict[str, torch.Tensor]:
        """``|d mean_i ||f(x_i)||^2 / d theta|`` for every trainable parameter."""
        params = trainable(self.model)
        out = self.model(x)
        grads = torch.autograd.grad((out ** 2).sum(1).mean(), [p for _, p in params], allow_unused=True)
        return {n: (g.abs() if g is not None else torch.zeros_like(p)).detach() for (n, p), g in zip(params, grads)}

    def after_step(self, x, y, task) -> None:
        self.recent.append(x.detach() if torch.is_tensor(x) else x)
        if self.detector.update(self.watched_loss()):
            self.num_updates += 1
            xs = self.recent[0] if len(self.recent) == 1 else _cat_all(list(self.recent))
            new = self.importance(xs)
            w = 1.0 / self.num_updates
            self.omega = {n: (1 - w) * self.omega[n] + w * v if n in self.omega else v for n, v in new.items()}
            self.anchor = {n: p.detach().clone() for n, p in trainable(self.model)}


def _cat_all(xs):
    out = xs[0]
    for v in xs[1:]:
        out = _cat(out, v)
    return out
