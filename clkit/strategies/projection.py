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
import torch.nn.functional as F
from scipy.linalg import solve_triangular
from scipy.optimize import nnls

from .._validate import check_int, check_real
from ._common import TaskAwareStrategy, aligned_rows, flat_views, grads_of
from ._onepass import GroupGradients
from ..device import to_host
from .base import Strategy, Task, _cat, _reported, register, take
from .memory import ReservoirBuffer

__all__ = ["AGEM", "GEM", "agem_project", "gem_project", "gem_dual", "small_dual"]

_ROWS_FORWARD = TaskAwareStrategy.rows_forward
_CRITERION = Strategy.criterion


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
        L = np.linalg.cholesky(P)
    except np.linalg.LinAlgError:
        P = P + np.eye(k) * ridge * max(np.trace(P) / k, 1e-12)
        L = np.linalg.cholesky(P)
    m = np.full(k, float(margin))
    d = P @ m + np.asarray(Gg, dtype=np.float64)
    u, _ = nnls(L.T, -solve_triangular(L, d, lower=True, check_finite=False))
    return u + m


def small_dual(gram, Gg, margin: float = 0.5) -> list[float] | None:
    """GEM's dual for one or two constraints in closed form, in Python floats (no solver call).

    The dual ``min_{v >= margin} 1/2 v' P v + Gg' v`` (``P = gram``, shape (k, k), ``k <= 2``)
    is, with ``u = v - margin`` and ``q = P margin + Gg``, ``min_{u >= 0} 1/2 u'Pu + q'u``; for
    positive definite ``P`` its solution is the one active set whose KKT conditions hold
    (``u >= 0``, ``Pu + q >= 0``, ``u_i (Pu + q)_i = 0``): for ``k = 1``, ``u = max(0, -q/P)``
    (A-GEM's projection when the margin is 0); for ``k = 2`` the four sets are tried in turn,
    each solved exactly on its active coordinates and accepted when the rest of KKT holds.
    The same solution as :func:`gem_dual` (tested to 1e-9), without its fixed cost of
    ~15 us in NumPy and SciPy calls (~60 us inside a training step, where the caches are cold).

    Returns
    -------
    list of float, or None
        ``v``; ``None`` when ``k > 2`` or ``P`` is not safely positive definite (then use
        :func:`gem_dual`, which adds a ridge).

    Examples
    --------
    >>> small_dual([[1.0, 0.0], [0.0, 1.0]], [-1.0, 2.0], margin=0.0)
    [1.0, 0.0]
    """
    if not 1 <= len(Gg) <= 2:
        return None
    P = [[float(v) for v in row] for row in gram]
    d = [float(v) for v in Gg]
    m = float(margin)
    if len(d) == 1:
        a = P[0][0]
        if not a > 0:
            return None
        q = a * m + d[0]
        return [m + max(0.0, -q / a)]
    a, c, b = P[0][0], P[1][1], 0.5 * (P[0][1] + P[1][0])
    det = a * c - b * b
    if not (a > 0 and c > 0 and det > 1e-10 * a * c):
        return None
    q1, q2 = a * m + b * m + d[0], b * m + c * m + d[1]
    if q1 >= 0 and q2 >= 0:                              # no constraint active
        return [m, m]
    x, y = -q1 / a, -q2 / c
    if x > 0 and b * x + q2 >= 0:                        # only the first active
        return [m + x, m]
    if y > 0 and b * y + q1 >= 0:                        # only the second active
        return [m, m + y]
    x, y = (-q1 * c + q2 * b) / det, (-q2 * a + q1 * b) / det
    if x >= 0 and y >= 0:                                # both active
        return [m + x, m + y]
    return None                                          # rounding at a boundary: the solver decides


class _Projection(TaskAwareStrategy):
    """The step both projection methods share: the incoming batch's gradient and one gradient per
    group of memory rows (A-GEM: one group, GEM: one per earlier task), then :meth:`project`.

    Gradients live in flat rows (``self._rows``): row 0 the incoming batch's, row ``1 + i`` memory
    group ``i``'s; each row is a contiguous vector over the parameters with one view per
    parameter, reused from step to step.

    Two ways to fill them, equal to float rounding (tested to 1e-6):

    - **one pass** (default where the model allows it): the incoming rows and every memory group
      stacked in one forward and one backward, each group's gradient formed from the layer
      inputs and output gradients (:class:`~clkit.strategies._onepass.GroupGradients`);
    - **separate passes** (``one_pass=False``, and the fallback): the step's backward for the
      batch, then one forward and backward per memory group. Used for models the one-pass path
      cannot serve (batch normalisation, unknown module types, ...) and for mixed precision
      (``precision`` other than fp32); ``self.one_pass_reason`` says why.

    ``one_pass_channels_last`` (``None``, ``True`` or ``False``) chooses the memory layout of the
    one-pass step's stacked rows when they are images (a 4-D input) and every trainable parameter
    is contiguous: ``True`` copies the stacked rows into ``channels_last`` (NHWC) before the forward,
    so the convolutions and poolings run oneDNN's NHWC kernels instead of reordering NCHW to their
    blocked layout and back; the parameters are left as they are and the gradient rows stay in the
    parameters' layout. ``None`` (the default) does so on the CPU for a model with a 4-D
    (convolution) weight, where it was measured faster (``small_cnn``, 64 reference rows, one
    thread, 32x32 pixels: A-GEM 2.1x -> 1.5x and GEM at 64 rows per task 3.0x -> 2.2x the bare
    step; 20-30 % less time at 8x8 and 64x64 too; ``benchmarks/bench_strategies.py``,
    docs/benchmarks.md), and not on other devices (not measured there); ``False`` never. The gradients equal separate autograd passes to float32 rounding either way, but the
    two layouts round differently, so a run's numbers differ from the contiguous step's at that
    level (``self.last_layout`` says which the latest step used).
    """

    def __init__(self, model, *, one_pass: bool = True, one_pass_channels_last: bool | None = None, **kwargs):
        super().__init__(model, **kwargs)
        if not isinstance(one_pass, bool):
            raise TypeError(f"one_pass must be True or False, got {one_pass!r}")
        if not (one_pass_channels_last is None or isinstance(one_pass_channels_last, bool)):
            raise ValueError(f"one_pass_channels_last must be None, True or False, got {one_pass_channels_last!r}")
        self.one_pass = one_pass
        self.one_pass_channels_last = one_pass_channels_last
        self._layout_for = None         # (parameters, device, whether channels_last applies to them)
        self._nhwc = None               # the channels_last copy of the stacked rows, reused
        #: the memory layout of the latest one-pass step's stacked rows: "channels_last",
        #: "contiguous" or None (no one-pass step yet)
        self.last_layout = None
        self._groups_state = None       # (trainable parameters, GroupGradients) of the latest check
        self._memory_rows = None        # this step's memory groups: (x, y, task_ids, sizes)
        self._filled = False            # the rows already hold this step's gradients (one pass)
        self._stack = None              # (buffer the step stacks its rows in, what its tail holds)
        self._stack_views = {}          # (a, b) -> rows [a, b) of that buffer
        self._batch_rows = 0            # rows of this step's incoming batch
        self._trainable = None          # cache of _params
        self._row_params = None         # the parameter list the gradient rows were laid out for
        self._row_slices = {}           # n -> (first n rows, their views)
        self._grads_in_row = False      # .grad are views of gradient row 0 (one pass)
        #: which path the latest step took: "one pass", "separate passes" or None (no memory yet)
        self.last_pass = None

    @property
    def _params(self):
        """The trainable parameters, as of the start of the task (as SI takes them) or the first
        step; taken again when one of them stops requiring gradients."""
        cached = self._trainable
        if cached is None or not all(p.requires_grad for p in cached):
            cached = self._trainable = [p for p in self.model.parameters() if p.requires_grad]
        return cached

    def before_task(self, task: Task) -> None:
        self._trainable = None
        super().before_task(task)

    @property
    def one_pass_reason(self) -> str | None:
        """Why the one-pass path cannot serve this model (``None`` when it can)."""
        return self._group_gradients(self._params).reason

    def _group_gradients(self, params):
        state = self._groups_state
        if state is not None and state[0] is params:
            return state[1]
        if state is None or len(state[0]) != len(params) or any(a is not b for a, b in zip(state[0], params)):
            if state is not None:
                state[1].close()
            state = (params, GroupGradients(self.model))
        self._groups_state = state = (params, state[1])   # the identity check first next time
        return state[1]

    def _rows(self, n: int, params):
        """The first ``n`` gradient rows and their per-parameter views (``self._row_list`` holds
        each row as a vector); reused from step to step, slices included."""
        buf = getattr(self, "_row_buffer", None)
        if buf is not None and params is self._row_params:
            cached = self._row_slices.get(n)
            if cached is not None:
                return cached
        numel = sum(p.numel() for p in params)
        fresh = (buf is None or buf.shape[0] < n or buf.shape[1] != numel or buf.dtype != params[0].dtype
                 or buf.device != params[0].device)
        if fresh:
            buf = aligned_rows(n, numel, params[0].dtype, params[0].device)   # dot is slow on unaligned rows
            self._row_buffer = buf
        if fresh or params is not self._row_params:
            self._row_params = params
            self._row_views = [flat_views(row, params) for row in buf]   # shaped like these parameters
            self._row_list = list(buf.unbind(0))
            self._row_slices = {}
        cached = self._row_slices[n] = (buf[:n], self._row_views[:n])
        return cached

    def memory_groups(self, task):
        """This step's memory rows, stacked: ``(x, y, task_ids, sizes)`` (rows per group), or
        ``None`` while there is no memory. Subclasses define it."""
        raise NotImplementedError

    def project(self, rows, views, grads) -> None:
        """Change ``grads`` (the parameters' ``.grad``) in place from the gradient rows."""
        raise NotImplementedError

    def step_rows(self, xb, yb, tb, task, incoming=None) -> torch.Tensor:
        """One step; the gradients come from one stacked pass where the model allows it."""
        self._batch_rows = n = yb.size(0)   # (len() of a tensor is a Python-level call)
        self._memory_rows = memory = self.memory_groups(task)
        self._filled = False
        params = self._params
        # the one-pass products are formed in float32: other precisions take separate passes
        gg = (self._group_gradients(params) if memory is not None and params and self.one_pass
              and self.precision == "fp32" else None)
        if gg is None or gg.reason is not None:
            self.last_pass = None if memory is None else "separate passes"
            return super().step_rows(xb, yb, tb, task, incoming)
        self.last_pass = "one pass"
        self.train_mode()
        # no optimizer.zero_grad(): every trainable parameter's .grad is replaced below
        mx, my, mt, sizes = memory
        bounds = [0, n]
        for size in sizes:
            bounds.append(bounds[-1] + size)
        ys = torch.cat([yb, my])
        # the row task ids only mask the outputs in the task-incremental scenario
        tids = (torch.cat([tb, mt]) if self.scenario == "task" or type(self).rows_forward is not _ROWS_FORWARD
                else None)

        def losses_of(out):
            return [self.criterion(out[a:b], ys[a:b]) for a, b in zip(bounds, bounds[1:])]

        total_of = None
        if self.loss_fn is F.cross_entropy and type(self).criterion is _CRITERION and ys.ndim == 1:
            def total_of(out):
                """Sum over groups of each group's mean cross-entropy, as one weighted sum over rows
                (weights 1 / group size): one loss call and one backward node for all groups."""
                per = F.cross_entropy(out, ys, reduction="none")
                return torch.dot(per, self._row_weights(n, sizes, per)), per[:n].detach().mean()

        rows, views = self._rows(len(sizes) + 1, params)
        losses = gg(lambda x: self.rows_forward(x, tids), self._layout_rows(self._stacked_inputs(xb, mx), params),
                    [n, *sizes], losses_of, params, views, rows, total_of)
        penalty = self.penalty(task)
        if isinstance(penalty, torch.Tensor) and penalty.requires_grad:   # a penalty with a graph (subclasses)
            grads = torch.autograd.grad(penalty, params, allow_unused=True)
            torch._foreach_add_(views[0], [torch.zeros_like(p) if g is None else g for g, p in zip(grads, params)])
            penalty = penalty.detach()
        for p, v in zip(params, views[0]):
            p.grad = v
        self._filled = True
        self.after_backward(xb, yb, task)
        self.amp.step(self.optimizer)
        x, y = incoming if incoming is not None else (xb, yb)
        self.after_step(x, y, task)
        self.steps += 1
        return _reported(losses[0], penalty)

    def _layout_rows(self, x, params):
        """The stacked rows ``x`` in the layout the one-pass step runs them in: a ``channels_last``
        copy (into a buffer kept from step to step) where ``one_pass_channels_last`` asks for it
        (see the class docstring), else ``x`` itself."""
        choice = self.one_pass_channels_last
        if choice is False or not isinstance(x, torch.Tensor) or x.dim() != 4:
            self.last_layout = "contiguous"
            return x
        key = self._layout_for
        if key is None or key[0] is not params or key[1] != x.device:
            images = any(p.dim() == 4 for p in params) or choice is True
            applies = images and all(p.is_contiguous() for p in params) and (
                choice is True or x.device.type == "cpu")
            key = self._layout_for = (params, x.device, applies)
        if not key[2] or x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous():
            self.last_layout = "contiguous" if not key[2] else "channels_last"
            return x
        buf = self._nhwc
        if buf is None or buf.shape != x.shape or buf.dtype != x.dtype or buf.device != x.device:
            buf = self._nhwc = torch.empty_like(x, memory_format=torch.channels_last)
        buf.copy_(x)
        self.last_layout = "channels_last"
        return buf

    def _row_weights(self, n, sizes, like):
        """``1 / size`` of each stacked row's group (batch rows first), in ``like``'s dtype and
        device; cached while the group sizes stay the same."""
        key = (n, *sizes, like.dtype, like.device)
        cached = getattr(self, "_weights", None)
        if cached is None or cached[0] != key:
            w = torch.cat([torch.full((size,), 1.0 / size, dtype=like.dtype, device=like.device)
                           for size in (n, *sizes)])
            cached = self._weights = (key, w)
        return cached[1]

    def train_batch(self, task: Task, idx: torch.Tensor) -> float:
        """The step on rows ``idx`` of ``task``, their inputs gathered straight into the head of
        the buffer where the step stacks them with the memory rows (no second copy)."""
        if self.one_pass and isinstance(idx, torch.Tensor) and idx.ndim == 1 and idx.dtype in (torch.int64, torch.int32):
            n = idx.size(0)
            head = self._buffer_rows(0, n, task.x, room=1)   # room for at least one memory row after it
            if head is not None:
                return self.train_step(take(task.x, idx, out=head), take(task.y, idx), task)
        return super().train_batch(task, idx)

    def _buffer_rows(self, a: int, b: int, like, room: int = 0):
        """Rows ``[a, b)`` of the stacking buffer when it holds ``b + room`` rows of ``like``'s
        shape, dtype and device, for rows to be gathered into (the batch into its head, A-GEM's
        memory sample into its tail); ``None`` otherwise."""
        stack = self._stack[0] if self._stack is not None else None
        if (stack is None or b + room > stack.size(0) or not isinstance(like, torch.Tensor)
                or stack.shape[1:] != like.shape[1:] or stack.dtype != like.dtype or stack.device != like.device):
            return None
        return self._stack_view(a, b)

    def _stacked_inputs(self, xb, mx):
        """``cat([xb, mx])``, in a buffer kept from step to step. Whatever already sits in place
        is not copied again: the batch when :meth:`train_batch` gathered it into the buffer's head,
        the memory rows when they were gathered into its tail (A-GEM) or are the same unchanged
        tensor as in the previous step (GEM's stacked memory)."""
        if not (isinstance(xb, torch.Tensor) and isinstance(mx, torch.Tensor)):
            return _cat(xb, mx)
        n, m = xb.size(0), mx.size(0)
        views = self._stack_views
        if xb is views.get((0, n)):   # the batch was gathered into the head (train_batch)
            key = self._stack[1]
            if mx is views.get((n, n + m)) or (key[0] is mx and key[1] == mx._version and key[2] == n):
                self._stack = (self._stack[0], (mx, mx._version, n))
                return self._stack_view(0, n + m)   # both already in place: nothing to check or copy
        if mx.shape[1:] != xb.shape[1:] or mx.dtype != xb.dtype or mx.device != xb.device:
            return _cat(xb, mx)
        buf, key = self._stack if self._stack is not None else (None, None)
        if buf is None or buf.size(0) < n + m or buf.shape[1:] != xb.shape[1:] or buf.dtype != xb.dtype \
                or buf.device != xb.device:
            buf, key = torch.empty((n + m, *xb.shape[1:]), dtype=xb.dtype, device=xb.device), None
            self._stack_views = {}
        self._stack = (buf, (mx, mx._version, n))
        if not (xb.data_ptr() == buf.data_ptr() and xb.is_contiguous()):
            self._stack_view(0, n).copy_(xb)
        tail = self._stack_view(n, n + m)
        if not (mx.data_ptr() == tail.data_ptr() and mx.is_contiguous()
                or key is not None and key[0] is mx and key[1] == mx._version and key[2] == n):
            tail.copy_(mx)
        return self._stack_view(0, n + m)

    def _stack_view(self, a: int, b: int):
        """Rows ``[a, b)`` of the stacking buffer (views kept while the buffer is)."""
        views = self._stack_views
        view = views.get((a, b))
        if view is None:
            view = views[(a, b)] = self._stack[0][a:b]
        return view

    def after_backward(self, x, y, task) -> None:
        """Fill the gradient rows (unless one pass already did) and :meth:`project` ``.grad``.

        After one pass, ``.grad`` of every trainable parameter is a view of gradient row 0, so
        :meth:`project` receives those views and may update row 0 as one vector
        (``self._grads_in_row``)."""
        memory = self._memory_rows
        if memory is None:
            self.project(None, None, None)
            return
        params = self._params
        rows, views = self._rows(len(memory[3]) + 1, params)
        self._grads_in_row = self._filled
        if self._filled:
            self._filled = False
            self.project(rows, views, views[0])
            return
        grads = grads_of(params)
        torch._foreach_copy_(views[0], grads)
        mx, my, mt, sizes = memory
        start = 0
        for i, size in enumerate(sizes):
            idx = slice(start, start + size)
            start += size
            self._memory_gradient(views[i + 1], take(mx, idx), my[idx], mt[idx], params)
        self.project(rows, views, grads)

    def _memory_gradient(self, views, x, y, tids, params) -> None:
        """Write the gradient of the loss on rows ``(x, y)`` of tasks ``tids`` into ``views``
        (``.grad`` is left alone: it keeps the incoming batch's gradient)."""
        grads = torch.autograd.grad(self.rows_loss(x, y, tids), params, allow_unused=True)
        torch._foreach_copy_(views, [g if g is not None else torch.zeros_like(p) for g, p in zip(grads, params)])


@register("agem")
class AGEM(_Projection):
    """Averaged GEM with a reservoir memory (task-aware or task-free).

    Parameters
    ----------
    model : torch.nn.Module
    memory_size : int
        Memory rows (paper: 200).
    agem_sample_size : int
        Memory rows per reference gradient (Chaudhry et al.: 256; Avalanche's ``AGEM`` default:
        64).
    agem_patterns_per_task : int
        ``0`` (default): one reservoir of ``memory_size`` rows over the whole stream (task-free).
        ``> 0``: Avalanche's episodic memory instead (``AGEMPlugin`` at tag v0.2.1, commit
        ce65eb007f60acfce9087e57ff1d710a586bfd8a, ``update_memory`` and
        ``GroupBalancedInfiniteDataLoader``): after each task a uniform random subset of
        ``agem_patterns_per_task`` of its rows is kept (all of them when the task has fewer),
        so the memory grows by a task's share per task and ``memory_size`` is not used; each
        reference gradient draws ``max(1, agem_sample_size // k)`` rows from each of the ``k``
        stored tasks (uniformly, without replacement within a step; Avalanche cycles through
        shuffled passes of each task's share, clkit draws afresh each step). The curriculum
        paper's code builds ``AGEM(patterns_per_exp=256)`` and leaves ``sample_size`` at 64
        (lifelonglab/M2I_I2M_benchmark ``strategies/strategies_provider.py``, commit
        254e26e7f36e468027860a52e8b85a5c6bce1d49: the configs' ``sample_size: 1300`` is never
        passed).
    one_pass : bool
        Differentiate the batch and the memory rows in one stacked pass where the model allows it
        (default); ``False``: separate passes.
    one_pass_channels_last : bool or None
        The stacked pass's memory layout for images on a contiguous model: ``None`` (default)
        channels_last on the CPU for a model with convolution weights, ``True`` always, ``False``
        never (the class docstring of ``_Projection`` gives the measurements).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = AGEM(MLP(2, 4, hidden=()), memory_size=10)
    >>> _ = s.train_task(Task(torch.randn(30, 2), torch.tensor([0, 1] * 15), task_id=0))
    >>> len(s.memory)
    10

    Avalanche's per-task memory (``agem_patterns_per_task``): 8 rows of each task are kept.

    >>> s = AGEM(MLP(2, 4, hidden=()), agem_patterns_per_task=8, agem_sample_size=64)
    >>> _ = s.train_task(Task(torch.randn(30, 2), torch.tensor([0, 1] * 15), task_id=0))
    >>> _ = s.train_task(Task(torch.randn(30, 2), torch.tensor([2, 3] * 15), task_id=1))
    >>> {t: len(m[1]) for t, m in s.task_memories.items()}
    {0: 8, 1: 8}
    """

    task_free = True

    def __init__(self, model, *, memory_size: int = 200, agem_sample_size: int = 256, agem_patterns_per_task: int = 0,
                 one_pass: bool = True, **kwargs):
        super().__init__(model, one_pass=one_pass, **kwargs)
        self.memory_size = check_int("memory_size", memory_size, low=0)
        self.agem_sample_size = check_int("agem_sample_size", agem_sample_size, low=1)
        self.agem_patterns_per_task = check_int("agem_patterns_per_task", agem_patterns_per_task, low=0)
        self.memory = ReservoirBuffer(self.memory_size, seed=self.seed)
        self.task_memories: dict[int, tuple] = {}   # per-task memory (agem_patterns_per_task > 0)
        self.reference_grad = None
        self._online = False

    def _tail_for_memory(self):
        """Where this step's memory rows go: the stacking buffer's tail (one-pass steps)."""
        if not self.one_pass or self._stack is None:
            return None
        n = self._batch_rows
        return self._buffer_rows(n, n + min(self.agem_sample_size, len(self.memory)), self.memory.x)

    def _per_task_sample(self):
        """``max(1, agem_sample_size // k)`` rows from each of the ``k`` stored tasks (one group)."""
        parts = list(self.task_memories.values())
        share = max(1, self.agem_sample_size // len(parts))
        xs, ys, ts = None, [], []
        for x, y, t in parts:
            idx = torch.randperm(len(y), generator=self.generator)[:share].to(y.device)
            xi = take(x, idx)
            xs = xi if xs is None else _cat(xs, xi)
            ys.append(y[idx])
            ts.append(t[idx])
        my = torch.cat(ys)
        return xs, my, torch.cat(ts), [my.size(0)]

    def memory_groups(self, task):
        """``agem_sample_size`` rows drawn from the reservoir (one group), or from each stored task's
        share (``agem_patterns_per_task > 0``); ``None`` while the memory is empty."""
        if self.agem_patterns_per_task:
            return self._per_task_sample() if self.task_memories else None
        if len(self.memory) == 0:
            return None
        mx, my, mt = self.memory.sample(self.agem_sample_size, self.generator, out=self._tail_for_memory())
        return mx, my, mt, [my.size(0)]

    def project(self, rows, views, grads) -> None:
        """``g - (g . g_ref / g_ref . g_ref) g_ref`` when ``g . g_ref < 0`` (two dot products, one
        in-place update of ``.grad``); ``self.reference_grad`` (flat) is valid until the next step."""
        if rows is None:
            self.reference_grad = None
            return
        g, ref = self._row_list[0], self._row_list[1]    # (rows[0], rows[1] without an indexing op)
        self.reference_grad = ref
        prod = torch.mv(rows[:2] if rows.size(0) != 2 else rows, ref)   # g.ref, ref.ref
        if self.sync_free:   # on an accelerator: the projection test on the device, no read
            # -min(g.ref, 0) / max(ref.ref, 1e-12): 0 (and g unchanged) without a conflict
            scale = prod[0].clamp(max=0).neg_().div_(prod[1].clamp(min=1e-12))
            if self._grads_in_row:
                g.add_(ref * scale)
            else:
                torch._foreach_add_(grads, torch._foreach_mul(views[1], scale))
            return
        dot, ref_sq = prod.tolist()
        if dot < 0:   # as agem_project
            scale = dot / max(ref_sq, 1e-12)
            if self._grads_in_row:
                g.add_(ref, alpha=-scale)
            else:
                torch._foreach_add_(grads, views[1], alpha=-scale)

    def after_step(self, x, y, task) -> None:
        if self._online and not self.agem_patterns_per_task:
            self.memory.add(x, y, task.task_id if task is not None else -1)

    def after_task(self, task: Task) -> None:
        if not self.agem_patterns_per_task:
            self.memory.add(task.x, task.y, task.task_id)
            return
        idx = torch.as_tensor(self.rng.permutation(len(task))[: self.agem_patterns_per_task])
        if len(idx):   # Avalanche's random_split: a uniform subset of the task (all rows when fewer)
            idx = idx.to(task.y.device)
            self.task_memories[task.task_id] = (take(task.x, idx), task.y[idx], self.task_ids_of(len(idx), task))

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
    one_pass, one_pass_channels_last
        As for :class:`AGEM`.
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

    def __init__(self, model, *, gem_patterns_per_task: int = 256, gem_memory_strength: float = 0.5,
                 one_pass: bool = True, **kwargs):
        super().__init__(model, one_pass=one_pass, **kwargs)
        self.gem_patterns_per_task = check_int("gem_patterns_per_task", gem_patterns_per_task, low=0)
        self.gem_memory_strength = check_real("gem_memory_strength", gem_memory_strength, low=0)
        self.memories: dict[int, tuple] = {}
        self.constraints = None

    def memory_groups(self, task):
        """The memory of every earlier task, stacked (cached until the memories change)."""
        past = [t for t in self.memories if task is None or t != task.task_id]
        if not past:
            return None
        parts = [self.memories[t] for t in past]
        cached = getattr(self, "_stacked", None)
        if cached is None or len(cached[0]) != len(parts) or any(a is not b for a, b in zip(cached[0], parts)):
            x = parts[0][0]
            for part in parts[1:]:
                x = _cat(x, part[0])
            stacked = (x, torch.cat([p[1] for p in parts]), torch.cat([p[2] for p in parts]),
                       [len(p[1]) for p in parts])
            cached = self._stacked = (parts, stacked)
        return cached[1]

    def project(self, rows, views, grads) -> None:
        """The exact QP projection against every constraint ``G_k . g~ >= 0``; ``self.constraints``
        (rows of ``G``) is valid until the next step."""
        if rows is None:
            self.constraints = None
            return
        k = rows.shape[0] - 1
        self.constraints = rows[1:]
        # everything the exact QP needs, G g and G G', from the Gram matrix of [g; G] formed in
        # the gradients' float32 (the reference implementations, GEM's and Avalanche's, form it
        # in float64 with NumPy) and solved in float64. Measured on bench_strategies' MLP rows:
        # relative Gram difference <= 1.1e-5, no constraint violated beyond the float32
        # rounding of g~ itself in 300 steps (tests/test_strategies_rehearsal.py checks the
        # constraints with margin 0 too). Column j, <r_i, r_j> for i <= j, is one matrix-vector
        # product: measured 1.3-1.6x faster than one (k + 1, P) x (P, k) product for k = 2..9.
        # On an accelerator the columns are formed there and read to the host together, once per
        # step: the QP is solved on the host (a (k + 1) x k matrix), and v goes back to the device.
        cols = [torch.mv(rows[:j + 1], rows[j]) for j in range(1, k + 1)]
        if self.sync_free:
            cols = [to_host(c) for c in torch.cat(cols).split([j + 1 for j in range(1, k + 1)])]
        else:
            cols = [c.numpy(force=True) for c in cols]
        gram = np.zeros((k + 1, k))
        for j, col in enumerate(cols, start=1):
            gram[:j + 1, j - 1] = col
            gram[j, :j - 1] = col[1:j]
        if rows.device.type == "meta":      # shapes only: apply the margin as v (no values to solve)
            v = [self.gem_memory_strength] * k
        elif (gram[0] >= 0).all():
            return
        else:
            v = small_dual(gram[1:], gram[0], self.gem_memory_strength)
            if v is None:
                v = gem_dual(gram[1:], gram[0], self.gem_memory_strength).tolist()
        if self._grads_in_row:              # g~ = g + G' v, in place on the flat row
            rows[0].addmv_(rows[1:k + 1].T, torch.tensor(v, dtype=rows.dtype).to(rows.device))
        else:
            for vi, view in zip(v, views[1:k + 1]):
                torch._foreach_add_(grads, view, alpha=vi)

    def after_task(self, task: Task) -> None:
        n = len(task)
        idx = torch.as_tensor(self.rng.permutation(n)[: self.gem_patterns_per_task])
        if len(idx):
            self.memories[task.task_id] = (take(task.x, idx), task.y[idx], self.task_ids_of(len(idx), task))
