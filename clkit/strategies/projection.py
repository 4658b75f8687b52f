"""Gradient-projection rehearsal: GEM and A-GEM.

Both keep past rows in memory but never train on them directly; they change
the *direction* of each update so the loss on the memory does not increase.

- **A-GEM** (Chaudhry et al., 2019): a reference gradient ``g_ref`` on
  ``agem_sample_size`` random memory rows; when the proposed gradient ``g``
  points against it (``g . g_ref < 0``) it is projected to
  ``g - (g . g_ref / g_ref . g_ref) g_ref``, so ``g~ . g_ref = 0``; otherwise
  it is left alone. The memory is a reservoir
  (:class:`~clkit.strategies.memory.ReservoirBuffer`): filled with each whole
  task at its end when trained task by task, and with every incoming batch
  after its step when used task-free through :meth:`observe`.
- **GEM** (Lopez-Paz & Ranzato, 2017): ``gem_patterns_per_task`` random rows
  per earlier task, one gradient ``G_k`` per task; if any ``G_k . g < 0`` the
  update solves the quadratic programme
  ``min_g~ 1/2 ||g~ - g||^2  s.t.  G g~ >= 0`` through its dual
  ``min_{v >= m} 1/2 v' G G' v + (G g)' v`` with ``g~ = G' v + g`` and the margin
  ``m = gem_memory_strength`` (the original code's ``margin``). The dual is a
  non-negative least-squares problem after a Cholesky factorisation and is solved
  exactly by ``scipy.optimize.nnls`` (no heuristic): every constraint holds at the
  solution (a tiny ridge is added to ``G G'`` only when it is singular).
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.linalg import cho_factor, solve_triangular
from scipy.optimize import nnls

from .._validate import check_int, check_real
from ._common import TaskAwareStrategy, aligned_rows, flat_views, grads_of
from .base import Task, _cat, register, take
from .memory import ReservoirBuffer

__all__ = ["AGEM", "GEM", "agem_project", "gem_project", "gem_dual"]


def agem_project(g: torch.Tensor, g_ref: torch.Tensor) -> torch.Tensor:
    """A-GEM's projection of the gradient ``g`` (shape (P,)) against ``g_ref`` (shape (P,)).

    Examples
    --------
    >>> agem_project(torch.tensor([1.0, -1.0]), torch.tensor([0.0, 1.0])).tolist()
    [1.0, 0.0]
    >>> agem_project(torch.tensor([1.0, 1.0]), torch.tensor([0.0, 1.0])).tolist()   # no conflict
    [1.0, 1.0]
    """
    dot = torch.dot(g, g_ref)
    if dot >= 0:
        return g
    return g - dot / torch.dot(g_ref, g_ref).clamp_min(1e-12) * g_ref


def gem_project(g: np.ndarray, G: np.ndarray, margin: float = 0.5, ridge: float = 1e-10) -> np.ndarray:
    """GEM's projection of ``g`` (shape (P,)) onto ``{g~ : G g~ >= 0}`` (``G`` shape (K, P)).

    Solves the dual ``min_{v >= margin} 1/2 v'Pv + (Gg)'v`` with ``P = GG'`` exactly:
    with ``u = v - margin`` and ``P = L L'`` it is the non-negative least squares
    problem ``min_{u >= 0} ||L'u + L^{-1}d||^2``, ``d = P margin + Gg``. Only when
    ``GG'`` is singular (more constraints than independent gradients) is a ridge
    ``ridge * mean(diag(GG')) I`` added, which can leave a constraint violated by
    at most that ridge times ``v``.

    Returns
    -------
    ndarray, shape (P,)
        ``g~ = G'v + g``; unchanged ``g`` when no constraint is violated.

    Examples
    --------
    >>> G = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> g_new = gem_project(np.array([-1.0, 2.0]), G, margin=0.0)
    >>> np.round(g_new, 6).tolist()
    [0.0, 2.0]
    >>> bool((G @ gem_project(np.array([-1.0, -3.0]), G, margin=0.5) >= -1e-12).all())
    True
    """
    g = np.asarray(g, dtype=np.float64)
    G = np.asarray(G, dtype=np.float64)
    Gg = G @ g
    if (Gg >= 0).all():
        return g
    return G.T @ gem_dual(G @ G.T, Gg, margin, ridge) + g


def gem_dual(gram: np.ndarray, Gg: np.ndarray, margin: float = 0.5, ridge: float = 1e-10) -> np.ndarray:
    """The exact solution ``v`` of GEM's dual ``min_{v >= margin} 1/2 v' gram v + Gg' v``.

    ``gram = G G'`` (shape (K, K)) and ``Gg = G g`` (shape (K,)) are all the dual needs, so the
    gradients themselves (length P) never enter the solver; ``g~ = G' v + g``. See
    :func:`gem_project` for the method (Cholesky, then non-negative least squares).
    """
    k = len(Gg)
    P = np.asarray(gram, dtype=np.float64)
    P = 0.5 * (P + P.T)
    try:
        lower, _ = cho_factor(P, lower=True)
    except np.linalg.LinAlgError:
        P = P + np.eye(k) * ridge * max(np.trace(P) / k, 1e-12)
        lower, _ = cho_factor(P, lower=True)
    L = np.tril(lower)
    m = np.full(k, float(margin))
    d = P @ m + np.asarray(Gg, dtype=np.float64)
    u, _ = nnls(L.T, -solve_triangular(L, d, lower=True))
    return u + m


class _Projection(TaskAwareStrategy):
    """Flat gradient rows: row ``k`` of ``self._rows(n)`` is a contiguous vector over the
    parameters, with one view per parameter, reused from step to step."""

    @property
    def _params(self):
        return [p for p in self.model.parameters() if p.requires_grad]

    def _rows(self, n: int, params):
        numel = sum(p.numel() for p in params)
        buf = getattr(self, "_row_buffer", None)
        if buf is None or buf.shape[0] < n or buf.shape[1] != numel or buf.dtype != params[0].dtype:
            buf = aligned_rows(n, numel, params[0].dtype, params[0].device)   # dot is slow on unaligned rows
            self._row_buffer = buf
            self._row_views = [flat_views(row, params) for row in buf]
        return buf[:n], self._row_views[:n]

    def _memory_gradient(self, views, x, y, tids, params) -> None:
        """Write the gradient of the loss on rows ``(x, y)`` of tasks ``tids`` into ``views``
        (``.grad`` is left alone: it keeps the incoming batch's gradient)."""
        grads = torch.autograd.grad(self.rows_loss(x, y, tids), params, allow_unused=True)
        torch._foreach_copy_(views, [g if g is not None else torch.zeros_like(p) for g, p in zip(grads, params)])

    @staticmethod
    def _current_gradient(views, params) -> list[torch.Tensor]:
        """Copy the parameters' ``.grad`` (zeros where missing) into ``views``; return the grads."""
        grads = grads_of(params)
        torch._foreach_copy_(views, grads)
        return grads


@register("agem")
class AGEM(_Projection):
    """Averaged GEM with a reservoir memory (task-aware or task-free).

    Parameters
    ----------
    model : torch.nn.Module
    memory_size : int
        Memory rows (paper: 200).
    agem_sample_size : int
        Memory rows per reference gradient (Chaudhry et al.: 256).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = AGEM(MLP(2, 4, hidden=()), memory_size=10)
    >>> _ = s.train_task(Task(torch.randn(30, 2), torch.tensor([0, 1] * 15), task_id=0))
    >>> len(s.memory)
    10
    """

    task_free = True

    def __init__(self, model, *, memory_size: int = 200, agem_sample_size: int = 256, **kwargs):
        super().__init__(model, **kwargs)
        self.memory_size = check_int("memory_size", memory_size, low=0)
        self.agem_sample_size = check_int("agem_sample_size", agem_sample_size, low=1)
        self.memory = ReservoirBuffer(self.memory_size, seed=self.seed)
        self.reference_grad = None
        self._online = False

    def after_backward(self, x, y, task) -> None:
        """Project ``.grad`` in place: one memory-batch backward, two dot products, one update.

        ``self.reference_grad`` (flat) is valid until the next step.
        """
        if len(self.memory) == 0:
            self.reference_grad = None
            return
        params = self._params
        (g, ref), (g_views, ref_views) = self._rows(2, params)
        grads = self._current_gradient(g_views, params)
        mx, my, mt = self.memory.sample(self.agem_sample_size, self.generator)
        self._memory_gradient(ref_views, mx, my, mt, params)
        self.reference_grad = ref
        dot = torch.dot(g, ref)
        if dot < 0:   # g - (g . g_ref / g_ref . g_ref) g_ref, as agem_project
            scale = float(dot / torch.dot(ref, ref).clamp_min(1e-12))
            torch._foreach_add_(grads, ref_views, alpha=-scale)

    def after_step(self, x, y, task) -> None:
        if self._online:
            self.memory.add(x, y, task.task_id if task is not None else -1)

    def after_task(self, task: Task) -> None:
        self.memory.add(task.x, task.y, task.task_id)

    def observe(self, x, y, task: Task | None = None) -> float:
        self._online = True
        try:
            return super().observe(x, y, task)
        finally:
            self._online = False


@register("gem")
class GEM(_Projection):
    """Gradient Episodic Memory: one constraint per earlier task, exact QP projection.

    Parameters
    ----------
    model : torch.nn.Module
    gem_patterns_per_task : int
        Memory rows per task (paper: 256).
    gem_memory_strength : float
        Margin ``m`` of the dual variables (paper: 0.5).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = GEM(MLP(2, 4, hidden=()), gem_patterns_per_task=5)
    >>> _ = s.train_task(Task(torch.randn(30, 2), torch.tensor([0, 1] * 15), task_id=0))
    >>> _ = s.train_task(Task(torch.randn(30, 2), torch.tensor([2, 3] * 15), task_id=1))
    >>> sorted(s.memories), len(s.memories[1][1])
    ([0, 1], 5)
    """

    task_free = False

    def __init__(self, model, *, gem_patterns_per_task: int = 256, gem_memory_strength: float = 0.5, **kwargs):
        super().__init__(model, **kwargs)
        self.gem_patterns_per_task = check_int("gem_patterns_per_task", gem_patterns_per_task, low=0)
        self.gem_memory_strength = check_real("gem_memory_strength", gem_memory_strength, low=0)
        self.memories: dict[int, tuple] = {}
        self.constraints = None

    def after_backward(self, x, y, task) -> None:
        past = [t for t in self.memories if task is None or t != task.task_id]
        if not past:
            self.constraints = None
            return
        params = self._params
        k = len(past)
        rows, views = self._rows(k + 1, params)       # G (k rows), then g
        grads = self._current_gradient(views[k], params)
        for i, t in enumerate(past):
            self._memory_gradient(views[i], *self.memories[t], params)
        self.constraints = rows[:k]                    # valid until the next step
        # everything the exact QP needs, G G' and G g, from one float64 Gram matrix of [G; g]
        rows64 = getattr(self, "_rows64", None)
        if rows64 is None or rows64.shape != rows.shape or rows64.device != rows.device:
            rows64 = self._rows64 = torch.empty(rows.shape, dtype=torch.float64, device=rows.device)
        rows64.copy_(rows)
        gram = rows64 @ rows64[:k].T                   # (k + 1, k): G G' over G g
        Gg = gram[k]
        if bool((Gg >= 0).all()):
            return
        v = gem_dual(gram[:k].numpy(force=True), Gg.numpy(force=True), self.gem_memory_strength)
        for vi, view in zip(v.tolist(), views[:k]):    # g~ = g + G' v, in place
            torch._foreach_add_(grads, view, alpha=vi)

    def after_task(self, task: Task) -> None:
        n = len(task)
        idx = torch.as_tensor(self.rng.permutation(n)[: self.gem_patterns_per_task])
        if len(idx):
            self.memories[task.task_id] = (take(task.x, idx), task.y[idx], self.task_ids_of(len(idx), task))
