"""Pieces shared by several strategy families.

- :class:`TaskAwareStrategy` -- remembers the classes of every task so that a
  batch mixing rows of several tasks (replay, gradient memories, cumulative
  training) gets each row's logits masked to *its own* task's classes in the
  task-incremental scenario.
- flat-gradient helpers for the gradient-projection methods;
- :func:`per_sample_mean` -- averages of per-sample gradients with ``torch.func`` (vmap),
  the basis of EWC's empirical Fisher and MAS's importance;
- :func:`features_and_head` -- a model's feature extractor and head, for the strategies that
  work in feature space (iCaRL, SimpleCIL, RanPAC).
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import nn

from .base import Strategy, Task, _reported, _with_penalty, take

__all__ = ["TaskAwareStrategy", "flat_grad", "set_flat_grad", "trainable", "mask_to", "per_sample_mean",
           "aligned_rows", "flat_views", "grads_of", "features_and_head"]


def features_and_head(model: nn.Module) -> tuple:
    """``(features, head)`` of ``model``, either ``None`` where the model has none.

    ``features`` is the model's ``features`` module (clkit's backbones); for an
    ``nn.Sequential`` ending in an ``nn.Linear`` (e.g. EDGE's MLP) it is everything before
    that layer and ``head`` is the layer; otherwise ``head`` is the model's ``head`` module.

    Examples
    --------
    >>> f, h = features_and_head(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)))
    >>> len(f), h.out_features
    (2, 3)
    >>> features_and_head(nn.Identity())
    (None, None)
    """
    feats, head = getattr(model, "features", None), getattr(model, "head", None)
    if isinstance(feats, nn.Module):
        return feats, head if isinstance(head, nn.Module) else None
    if isinstance(model, nn.Sequential) and len(model) > 1 and isinstance(model[-1], nn.Linear):
        return model[:-1], model[-1]
    return None, head if isinstance(head, nn.Module) else None


def trainable(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """``(name, parameter)`` pairs of the parameters that require gradients."""
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def grads_of(params) -> list[torch.Tensor]:
    """The ``.grad`` of each of ``params``, a zero tensor set first where it is missing."""
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    return [p.grad for p in params]


def flat_grad(params) -> torch.Tensor:
    """Concatenate the ``.grad`` of ``params`` into one vector (zeros where a grad is missing)."""
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params])


def set_flat_grad(params, flat: torch.Tensor) -> None:
    """Write the vector ``flat`` back into the ``.grad`` of ``params``."""
    start = 0
    for p in params:
        n = p.numel()
        p.grad = flat[start:start + n].view_as(p).clone()
        start += n


def aligned_rows(n: int, numel: int, dtype=torch.float32, device="cpu") -> torch.Tensor:
    """Zeros of shape ``(n, numel)`` whose every row starts on a 64-byte boundary.

    Rows of a plain ``(n, numel)`` tensor start wherever ``numel`` puts them, and CPU kernels
    are slower on rows that are not 16-byte aligned (measured, torch 2.14, one thread, 203,530
    float32: ``torch.dot`` 170 us against 20 us aligned); rows padded to a multiple of 64 bytes
    avoid that. Each row is contiguous; the tensor is not (its row stride is the padded length).

    Examples
    --------
    >>> rows = aligned_rows(3, 10)
    >>> rows.shape, rows.stride(), rows[1].is_contiguous()
    (torch.Size([3, 10]), (16, 1), True)
    """
    per = max(1, 64 // torch.empty((), dtype=dtype).element_size())
    stride = -(-max(numel, 1) // per) * per
    return torch.zeros((n, stride), dtype=dtype, device=device)[:, :numel]


def flat_views(flat: torch.Tensor, params) -> list[torch.Tensor]:
    """Views of the vector ``flat`` shaped like each of ``params`` (no copy; writes go through)."""
    out, start = [], 0
    for p in params:
        out.append(flat[start:start + p.numel()].view_as(p))
        start += p.numel()
    return out


class TaskAwareStrategy(Strategy):
    """A :class:`Strategy` that knows the classes of every task it has seen.

    ``self.task_classes[task_id]`` holds the classes of each registered task;
    :meth:`rows_forward` masks each row to the classes of its own task in the
    task-incremental scenario (no masking in the class-incremental one, or for
    rows with task id ``-1``).
    """

    def __init__(self, model, **kwargs):
        super().__init__(model, **kwargs)
        self.task_classes: dict[int, tuple] = {}

    def _register_task(self, task: Task) -> None:
        super()._register_task(task)
        if task.classes:
            self.task_classes[task.task_id] = tuple(task.classes)

    def observe(self, x, y, task: Task | None = None) -> float:
        """One online step; refused for strategies that need task boundaries (``task_free = False``)."""
        if not self.task_free:
            raise ValueError(f"strategy {self.name!r} needs task boundaries (task_free = False); "
                             "train it with train_task")
        return super().observe(x, y, task)

    def replay(self, x, y, task: Task | None):
        """The rows actually trained on, with their task ids: ``(x, y, task_ids)``.

        The incoming batch by default; rehearsal strategies append memory rows.
        """
        return x, y, self.task_ids_of(len(y), task)

    def train_step(self, x, y, task: Task | None = None) -> torch.Tensor:
        """One optimisation step on the incoming batch plus whatever :meth:`replay` adds."""
        xb, yb, tb = self.replay(x, y, task)
        return self.step_rows(xb, yb, tb, task, incoming=(x, y))

    def step_rows(self, xb, yb, tb, task: Task | None, incoming=None) -> torch.Tensor:
        """One step on rows ``(xb, yb)`` of tasks ``tb``; the hook order is the base class's."""
        self.train_mode()
        self.optimizer.zero_grad(set_to_none=True)
        with self.amp.autocast():
            loss, rest = _with_penalty(self.rows_loss(xb, yb, tb), self.penalty(task))
        self.amp.backward(loss, self.optimizer)
        self.after_backward(xb, yb, task)
        self.amp.step(self.optimizer)
        x, y = incoming if incoming is not None else (xb, yb)
        self.after_step(x, y, task)
        self.steps += 1
        return _reported(loss, rest)

    def rows_forward(self, x, task_ids: torch.Tensor) -> torch.Tensor:
        """Model outputs for rows belonging to tasks ``task_ids`` (shape (B,))."""
        out = self.model(x)
        if self.scenario != "task" or out.ndim != 2 or not self.task_classes:
            return out
        # rows come from registered tasks (or -1): the table's size is known on the host
        size = max(max(self.task_classes), max(self.seen_tasks, default=0)) + 2
        key = (size, out.shape[1], out.device, tuple(self.task_classes.items()))
        if getattr(self, "_mask_key", None) != key:   # rebuilt only when a task or its classes change
            table = torch.zeros((size, out.shape[1]))  # last row: task id -1, no mask
            for t, classes in self.task_classes.items():
                table[t] = float("-inf")
                table[t, list(classes)] = 0.0
            self._mask_key, self._mask_table = key, table.to(out.device)
        return out + self._mask_table[task_ids.to(out.device)]

    def rows_loss(self, x, y, task_ids: torch.Tensor) -> torch.Tensor:
        """Mean task loss over rows of (possibly) different tasks."""
        return self.criterion(self.rows_forward(x, task_ids), y)

    def task_ids_of(self, n: int, task: Task | None) -> torch.Tensor:
        """Task-id vector for ``n`` incoming rows (``-1`` when the task is unknown).

        The latest vector is reused while ``n`` and the task id repeat (every step of a task):
        treat it as read-only."""
        key = (n, task.task_id if task is not None else -1)
        cached = getattr(self, "_task_ids", None)
        if cached is None or cached[0] != key:
            cached = self._task_ids = (key, torch.full((n,), key[1], dtype=torch.int64, device=self.device))
        return cached[1]


def mask_to(out: torch.Tensor, classes, scenario: str) -> torch.Tensor:
    """Mask logits outside ``classes`` with ``-inf`` in the task-incremental scenario."""
    if scenario != "task" or classes is None or out.ndim != 2:
        return out
    mask = torch.full((out.shape[1],), float("-inf"), device=out.device)
    mask[list(classes)] = 0.0
    return out + mask


def per_sample_mean(model: nn.Module, sample_loss, x, y, transform=torch.square,
                    budget_bytes: int = 2 ** 25) -> dict[str, torch.Tensor]:
    """Mean over samples of ``transform(per-sample gradient)`` for each trainable parameter.

    Per-sample gradients come from ``torch.func`` (``vmap(grad(...))``) in chunks
    sized to stay within ``budget_bytes`` (32 MiB by default: measured 1.2-1.5x faster than
    256 MiB chunks for a CNN and the transformer, whose per-sample gradients then stay nearer
    the caches), and of at least 8 rows (a model of millions of parameters goes 8 rows at a
    time rather than one); with ``transform=torch.square`` the result is the diagonal empirical Fisher of
    ``sample_loss``.

    Models whose trainable parameters all sit in ``nn.Linear`` layers applied once to
    (rows, features) inputs (MLPs) take an exact shortcut for ``torch.square`` and ``torch.abs``:
    row ``i``'s gradient of a layer's weight is the outer product ``d_i a_i'`` of the gradient at
    its output and its input, so ``sum_i (d_i a_i')^2 = (d*d)' (a*a)`` and
    ``sum_i |d_i a_i'| = |d|' |a|``: one forward, one backward and one product per layer, with
    no per-sample gradient ever stored.

    Models made of sample-wise modules whose every trainable parameter sits in a ``nn.Linear``,
    ``nn.LayerNorm`` or :class:`~clkit.models.transformer.LearnedPosition` (clkit's MLP and
    transformer) take one batched forward and backward with per-sample products per layer (any
    ``transform``; attention runs batched in its fused kernel): the pass costs about one ordinary
    gradient over the same rows (``benchmarks/bench_strategies.py``, part 3). Other models use
    ``vmap``.

    Parameters
    ----------
    model : torch.nn.Module
        Evaluated in its current mode; buffers (batch-norm statistics) are read, not updated.
    sample_loss : callable
        ``sample_loss(outputs, y)`` on a batch of one row -> scalar.
    x : Tensor, shape (N, ...), or tuple of tensors
    y : Tensor, shape (N,) or (N, d)
    transform : callable
        Applied elementwise to each per-sample gradient before averaging.

    Returns
    -------
    dict name -> Tensor shaped like the parameter

    Examples
    --------
    >>> lin = nn.Linear(2, 1, bias=False)
    >>> with torch.no_grad():
    ...     _ = lin.weight.fill_(1.0)
    >>> x = torch.tensor([[1.0, 2.0], [3.0, 0.0]])
    >>> f = per_sample_mean(lin, lambda o, t: (o ** 2).sum(), x, torch.zeros(2))
    >>> f["weight"].tolist()   # per-sample grads 2 (w.x) x = (6, 12) and (18, 0); mean of squares
    [[180.0, 72.0]]
    """
    from torch.func import functional_call, grad, vmap

    if transform in (torch.square, torch.abs):
        fast = _linear_per_sample_mean(model, sample_loss, x, y, transform, budget_bytes)
        if fast is not None:
            return fast
    hooked = _hooked_per_sample_mean(model, sample_loss, x, y, transform, budget_bytes)
    if hooked is not None:
        return hooked
    params = {n: p.detach() for n, p in trainable(model)}
    buffers = {n: b.detach() for n, b in model.named_buffers()}

    def one(p, xi, yi):
        xi = tuple(v.unsqueeze(0) for v in xi) if isinstance(xi, (tuple, list)) else xi.unsqueeze(0)
        return sample_loss(functional_call(model, (p, buffers), (xi,)), yi.unsqueeze(0))

    g = vmap(grad(one), in_dims=(None, 0, 0), randomness="different")
    n = len(y)
    numel = sum(p.numel() for p in params.values())
    # at least 8 rows per chunk: a model of millions of parameters (WideVGG9: 4.6 M) would otherwise go
    # row by row, twice as slow (measured: 24 rows at 16x16 on one core, 2.05 s against 1.03 s)
    chunk = max(min(n, 8), min(n, budget_bytes // (4 * max(numel, 1))))
    keys = list(params)
    total = [torch.zeros_like(params[k]) for k in keys]
    # A model with attention that reaches this path (clkit's transformer takes the hooked one) runs
    # the fused CPU attention kernel sample by sample under vmap (it has no batching rule) and
    # warns; that was measured faster than the batched math kernel (torch 2.14, one thread, the
    # paper's forecaster: 2.1-2.3 s against 4.5-7.3 s), so the warning is silenced here.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*have not yet implemented the batching rule.*")
        for s in range(0, n, chunk):
            part = g(params, take(x, slice(s, s + chunk)), y[s:s + chunk])
            torch._foreach_add_(total, [transform(part[k]).sum(0) for k in keys])
    return {k: v / max(n, 1) for k, v in zip(keys, total)}


class _NotApplicable(Exception):
    pass


def _sample_wise_types():
    """Module types whose forward treats every sample (first dimension) on its own: the parameter-
    free ones and the containers of clkit's MLP and transformer (exact types: a subclass may mix
    samples)."""
    from ..models.mlp import MLP
    from ..models.transformer import EncoderBlock, LearnedPosition, SelfAttention, TimeSeriesTransformer, _Encoder

    return {nn.Linear, nn.LayerNorm, nn.Sequential, nn.ModuleList, nn.ReLU, nn.GELU, nn.Tanh, nn.Sigmoid,
            nn.Identity, nn.Flatten, nn.Dropout, MLP, TimeSeriesTransformer, EncoderBlock, SelfAttention,
            _Encoder, LearnedPosition}


def _hooked_per_sample_mean(model, sample_loss, x, y, transform, budget_bytes):
    """Per-sample gradients from one batched backward pass, for models made of sample-wise modules
    whose every trainable parameter sits in a ``nn.Linear``, ``nn.LayerNorm`` or
    :class:`~clkit.models.transformer.LearnedPosition`; ``None`` where that does not hold.

    With per-sample losses ``l_i`` and samples that never mix, the gradient of ``sum_i l_i`` at a
    layer's output, restricted to sample ``i``'s rows, is ``d l_i / d output``. Each parameter's
    per-sample gradient is then a local product: ``D_i' A_i`` over the sample's positions for a
    linear layer (its inputs ``A_i``), ``sum (D_i * x^_i)`` and ``sum D_i`` for a layer norm's
    weight and bias (``x^`` the normalised input), ``D_i`` for a learned position. One forward,
    one backward and one batched product per layer, in chunks of ``budget_bytes`` of per-sample
    gradients; attention runs batched in its fused kernel.
    """
    from ..models.transformer import LearnedPosition

    allowed = _sample_wise_types()
    rules = []
    for m in model.modules():
        if type(m) not in allowed or (type(m) is nn.Dropout and m.training and m.p > 0):
            return None
        if isinstance(m, (nn.Linear, nn.LayerNorm, LearnedPosition)):
            if any(p.requires_grad for p in m.parameters(recurse=False)):
                rules.append(m)
    named = trainable(model)
    names = {id(p): n for n, p in named}
    covered = {id(p) for m in rules for p in m.parameters(recurse=False) if p.requires_grad}
    if not named or covered != set(names):
        return None
    n = len(y)
    numel = sum(p.numel() for _, p in named)
    chunk = max(1, min(n, budget_bytes // (4 * max(numel, 1))))
    total = {k: torch.zeros_like(p) for k, p in named}

    def add(p, g):   # g: per-sample gradients, shape (rows, *p.shape)
        if p.requires_grad:
            total[names[id(p)]] += transform(g).sum(0)

    def sample_first(rows, captured):   # every layer sees the samples along its first dimension
        return all(a.shape[0] == rows for a, _ in captured)

    try:
        for rows, captured, deltas in _chunk_deltas(model, rules, sample_loss, x, y, chunk, sample_first):
            for m, (a, _), d in zip(rules, captured, deltas):
                if isinstance(m, nn.Linear):
                    A = a.reshape(rows, -1, m.in_features)
                    D = d.reshape(rows, -1, m.out_features)
                    add(m.weight, torch.bmm(D.transpose(1, 2), A))
                    if m.bias is not None:
                        add(m.bias, D.sum(1))
                elif isinstance(m, nn.LayerNorm):
                    shape = tuple(m.normalized_shape)
                    xhat = F.layer_norm(a, shape, None, None, m.eps).reshape(rows, -1, *shape)
                    D = d.reshape(rows, -1, *shape)
                    if m.weight is not None:
                        add(m.weight, (D * xhat).sum(1))
                    if m.bias is not None:
                        add(m.bias, D.sum(1))
                else:   # LearnedPosition: output = input + pos
                    add(m.pos, d.reshape(rows, *m.pos.shape))
    except _NotApplicable:
        return None
    return {k: v / max(n, 1) for k, v in total.items()}


def _chunk_deltas(model, modules, sample_loss, x, y, chunk, check):
    """Per chunk of rows, one forward and one backward of the summed per-row losses: yields the
    chunk's row count, each module's ``(input, output)`` and the gradient at each module's output
    (zeros where unused), without a graph. Raises :class:`_NotApplicable` when a module runs twice
    or ``check(rows, captured)`` fails."""
    from torch.func import vmap

    seen = {}

    def hook(module, inputs, output):
        if id(module) in seen:
            raise _NotApplicable   # applied twice: its products do not add up
        seen[id(module)] = (inputs[0].detach(), output)

    def row_loss(o, t):
        return sample_loss(o.unsqueeze(0), t.unsqueeze(0))

    handles = [m.register_forward_hook(hook) for m in modules]
    try:
        for s in range(0, len(y), chunk):
            seen.clear()
            with torch.enable_grad():
                out = model(take(x, slice(s, s + chunk)))
                if len(seen) != len(modules):
                    raise _NotApplicable
                captured = [seen[id(m)] for m in modules]
                if not check(len(out), captured):
                    raise _NotApplicable
                losses = vmap(row_loss)(out, y[s:s + chunk])   # one loss per row
                deltas = torch.autograd.grad(losses.sum(), [o for _, o in captured], allow_unused=True)
            deltas = [torch.zeros_like(o) if d is None else d for (_, o), d in zip(captured, deltas)]
            yield len(out), [(a, o.detach()) for a, o in captured], deltas   # nothing needs a graph
    finally:
        for h in handles:
            h.remove()


def _linear_per_sample_mean(model, sample_loss, x, y, transform, budget_bytes):
    """The outer-product shortcut of :func:`per_sample_mean`; ``None`` where it does not apply."""
    named = trainable(model)
    if not named:
        return None
    layers = []
    for m in model.modules():
        own = [p for p in m.parameters(recurse=False) if p.requires_grad]
        if own and not isinstance(m, nn.Linear):
            return None
        if own:
            layers.append(m)
    names = {id(p): n for n, p in named}
    n = len(y)
    width = max(m.in_features + m.out_features for m in layers)
    chunk = max(1, min(n, budget_bytes // (8 * width * len(layers))))
    total = {n_: torch.zeros_like(p) for n_, p in named}

    def rows_only(rows, captured):   # on sequences per-row outer products do not add up
        return all(a.ndim == 2 and o.ndim == 2 for a, o in captured)

    try:
        for _, captured, deltas in _chunk_deltas(model, layers, sample_loss, x, y, chunk, rows_only):
            for m, (a, _), d in zip(layers, captured, deltas):
                ta, td = transform(a), transform(d)
                if m.weight.requires_grad:
                    total[names[id(m.weight)]] += td.T @ ta
                if m.bias is not None and m.bias.requires_grad:
                    total[names[id(m.bias)]] += td.sum(0)
    except _NotApplicable:
        return None
    return {k: v / max(n, 1) for k, v in total.items()}
