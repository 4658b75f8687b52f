"""Gradients of several groups of rows from one stacked forward and backward pass.

The gradient-projection methods need, every step, the gradient of the loss on the incoming batch
and, separately, the gradient of the loss on each group of memory rows (A-GEM: one group, GEM: one
per earlier task). Computed one group at a time that is one forward and one backward per group.
For a *sample-wise* model -- every module treats the rows of its input (the first dimension) on
its own -- all groups can share one pass: stack the rows, run one forward, take the losses
``L_g`` of the groups on their slices of the output and one backward of ``sum_g L_g`` to the
output ``Y`` of every layer that holds trainable parameters. Because rows never mix, the part of
``dL/dY`` that sits on group ``g``'s rows is exactly ``dL_g/dY_g``, and each parameter's gradient
of ``L_g`` is a local product on that group's rows:

- ``nn.Linear``: ``dY_g' X_g`` for the weight (rows and any further leading dimensions flattened;
  ``X_g`` the layer's input), ``sum dY_g`` for the bias;
- ``nn.Conv1d/2d/3d``: the convolution's own weight-gradient kernel
  (``aten.convolution_backward``) on the group's input and output gradient -- measured 4x faster
  than an ``unfold``-based product or ``torch.func.vmap`` over the groups
  (``benchmarks/bench_strategies.py``, part 4);
- ``nn.LayerNorm`` / ``nn.GroupNorm``: ``sum dY_g * X^_g`` and ``sum dY_g`` (``X^`` the
  normalised input);
- :class:`~clkit.models.transformer.LearnedPosition`: ``sum dY_g``.

The pass costs one forward and one backward over all rows (the backward skips the weight
gradients, which the products then form group by group), against one of each per group.

Which models qualify (:func:`one_pass_reason`): every module must be of a type known to be
sample-wise -- the parameter-free activations, pooling, flattening and dropout layers, the layers
above, and the exact container types of clkit's models (MLP, SmallCNN, WideVGG9, ResNet, the
transformer); a user's own container class is not assumed to be sample-wise, as its ``forward``
could mix rows. Excluded, with the reason reported:

- batch normalisation (``nn.BatchNorm*``, ``nn.SyncBatchNorm``): in training mode it normalises
  with the statistics of the rows it sees, so stacked groups would change each other's outputs
  and gradients (and its running statistics would be updated once, from the mixture, instead of
  once per group);
- in-place activations (``inplace=True``): they overwrite the layer outputs the products need;
- convolutions with a padding mode other than ``"zeros"`` or a string padding;
- trainable parameters outside the layers above;
- any other module type.

A layer's output is taken by its gradient edge (``torch.autograd.graph.get_gradient_edge``), not
held: the outputs are freed as in an ordinary pass (the convolutions' outputs of a CNN are the
largest tensors of the step), and an output changed in place afterwards still gets the gradient
the layer produced. At run time, a layer whose input or output does not have the stacked rows as
its first dimension, or whose input was changed in place after the call, falls back to per-group
autograd gradients through the same stacked graph (still exact, slower).

Dropout stays allowed: every row draws its own mask, so the groups do not interact and the
gradients are the exact per-group gradients for the masks drawn; the masks themselves are drawn
for the stacked rows at once, so they are other random numbers than a separate pass per group
would draw (same distribution, same seed gives the same run).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.graph import get_gradient_edge

__all__ = ["GroupGradients", "one_pass_reason"]

_CONV = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_RULES = (nn.Linear, *_CONV, nn.LayerNorm, nn.GroupNorm)


def _sample_wise_types() -> set:
    """Exact module types whose forward treats every row of its input on its own."""
    from ..models.cnn import ResNet, SmallCNN, WideVGG9, _Basic
    from ..models.mlp import MLP
    from ..models.transformer import EncoderBlock, LearnedPosition, SelfAttention, TimeSeriesTransformer, _Encoder

    return {nn.Sequential, nn.ModuleList, nn.Identity, nn.Flatten, nn.Unflatten,
            nn.ReLU, nn.LeakyReLU, nn.ELU, nn.GELU, nn.SiLU, nn.Tanh, nn.Sigmoid, nn.Softplus,
            nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d,
            nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d,
            nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d,
            nn.AdaptiveMaxPool1d, nn.AdaptiveMaxPool2d, nn.AdaptiveMaxPool3d,
            *_RULES, LearnedPosition,
            MLP, SmallCNN, WideVGG9, ResNet, _Basic, TimeSeriesTransformer, EncoderBlock, SelfAttention, _Encoder}


def one_pass_reason(model: nn.Module) -> str | None:
    """Why :class:`GroupGradients` cannot serve ``model``; ``None`` when it can.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> one_pass_reason(MLP(4, 2)) is None
    True
    >>> one_pass_reason(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))
    'BatchNorm1d normalises with the statistics of the rows it sees: stacked groups would mix'
    """
    from ..models.transformer import LearnedPosition

    allowed = _sample_wise_types()
    for m in model.modules():
        name = type(m).__name__
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            return f"{name} normalises with the statistics of the rows it sees: stacked groups would mix"
        if type(m) not in allowed:
            return f"module type {name} is not known to treat the rows of its input independently"
        if getattr(m, "inplace", False):
            return f"{name}(inplace=True) overwrites the layer outputs the per-group products need"
        if isinstance(m, _CONV) and (m.padding_mode != "zeros" or isinstance(m.padding, str)):
            return f"{name} with padding {m.padding!r} / padding_mode {m.padding_mode!r} (only explicit zero padding)"
        own = [p for p in m.parameters(recurse=False) if p.requires_grad]
        if own and not isinstance(m, (*_RULES, LearnedPosition)):
            return f"trainable parameters in a {name}, which has no per-group gradient rule"
    return None


class _Recorder:
    """The forward hook of :class:`GroupGradients`: while ``into`` is a list, each layer call
    appends ``(layer, input, input version, gradient edge of the output, output rows)`` (the edge
    ``None`` where the output needs no gradient, the rows -1 for a 0-d output); otherwise it does
    nothing. A copied or pickled model gets an inactive recorder."""

    __slots__ = ("into",)

    def __init__(self):
        self.into = None

    def __call__(self, module, inputs, output):
        into = self.into
        if into is not None:
            a = inputs[0]
            into.append((module, a, a._version, get_gradient_edge(output) if output.requires_grad else None,
                         output.size(0) if output.dim() else -1))

    def __reduce__(self):   # copies and pickles start inactive
        return (_Recorder, ())


class GroupGradients:
    """Per-group gradients of a sample-wise model from one stacked forward and backward.

    Parameters
    ----------
    model : torch.nn.Module
        Checked with :func:`one_pass_reason`; ``self.reason`` says why not where it fails (then
        :meth:`__call__` must not be used).

    Notes
    -----
    A forward hook on each layer with trainable parameters records the layer's input and output
    during :meth:`__call__` and does nothing otherwise; the hooks stay on the model until
    :meth:`close` (or until this object is garbage-collected).

    Examples
    --------
    >>> from clkit.models import MLP
    >>> torch.manual_seed(0) and None
    >>> net = MLP(3, 2, hidden=(4,))
    >>> params = list(net.parameters())
    >>> x, y = torch.randn(5, 3), torch.tensor([0, 1, 1, 0, 1])
    >>> into = [[torch.empty_like(p) for p in params] for _ in range(2)]
    >>> losses = GroupGradients(net)(net, x, [2, 3], lambda out: [F.cross_entropy(out[:2], y[:2]),
    ...                                                           F.cross_entropy(out[2:], y[2:])], params, into)
    >>> sep = torch.autograd.grad(F.cross_entropy(net(x[2:]), y[2:]), params)
    >>> max(float((a - b).abs().max()) for a, b in zip(into[1], sep)) < 1e-6
    True
    """

    def __init__(self, model: nn.Module):
        self.model = model
        self.reason = one_pass_reason(model)
        self.layers = [m for m in model.modules()
                       if any(p.requires_grad for p in m.parameters(recurse=False))] if self.reason is None else []
        self.fell_back = 0   # steps that took the same-graph autograd fallback at run time
        self._plan_for = None   # (params, {layer: slots}, slots no layer covers, params object)
        self._views, self._views_for, self._views_params = {}, None, None   # views across the group rows (_across)
        self._views_rows = None
        # one forward hook per layer, kept for the life of this object (registering and removing
        # them every step cost ~20 us of a 1.4 ms MLP step); it records only during __call__
        self._recorder = _Recorder()
        self._handles = [m.register_forward_hook(self._recorder) for m in self.layers]

    def close(self) -> None:
        """Remove the forward hooks from the model's layers (also done when this object is
        garbage-collected)."""
        for h in getattr(self, "_handles", ()):
            h.remove()
        self._handles = []

    def __del__(self):
        self.close()

    def _plan(self, params):
        """For each layer, the slots in ``params`` of its weight and bias (``None`` where not
        differentiated); and the slots no layer covers (their gradient is zero). Cached."""
        plan = self._plan_for
        if plan is not None and (plan[3] is params or (len(plan[0]) == len(params)
                                                       and all(a is b for a, b in zip(plan[0], params)))):
            self._plan_for = (*plan[:3], params)   # the identity check first next time
            return plan[1], plan[2]
        slot = {id(p): i for i, p in enumerate(params)}

        def at(p):
            return slot.get(id(p)) if p is not None and p.requires_grad else None

        slots = {m: ((at(m.pos), None) if not hasattr(m, "weight") else (at(m.weight), at(m.bias)))
                 for m in self.layers}
        covered = {i for pair in slots.values() for i in pair if i is not None}
        self._layer_slots = sorted(covered)
        self._plan_for = (list(params), slots, [i for i in range(len(params)) if i not in covered], params)
        return slots, self._plan_for[2]

    def _across(self, rows, i, params):
        """Slot ``i``'s gradients of every group as one view ``(G, *shape)`` of ``rows``
        (cached for the rows of the latest :meth:`__call__`)."""
        cache = self._views
        view = cache.get(i)
        if view is None:
            start = sum(p.numel() for p in params[:i])
            view = cache[i] = rows[:, start:start + params[i].numel()].view(rows.shape[0], *params[i].shape)
        return view

    def __call__(self, forward, x, sizes, losses_of, params, into, rows=None, total_of=None) -> list[torch.Tensor]:
        """Write the gradient of each group's loss into ``into``; return the group losses.

        Parameters
        ----------
        forward : callable
            ``forward(x) -> outputs`` through ``self.model`` (e.g. with a task mask).
        x : Tensor, shape (N, ...), or tuple of tensors
            The groups' rows stacked, group 0 first.
        sizes : list of int
            Rows per group (summing to N).
        losses_of : callable
            ``losses_of(outputs) -> list`` of one scalar loss per group, each computed on its
            group's rows only.
        params : list of Parameter
            The parameters to differentiate (the model's trainable ones).
        into : list (one per group) of lists of Tensor shaped like ``params``
            Overwritten with the gradients.
        rows : Tensor, shape (G, P'), optional
            The flat rows ``into`` are views of (``into[g]`` laid out over ``rows[g]`` in the
            order of ``params``, as :func:`~clkit.strategies._common.flat_views`). With it, and
            groups of equal size, a Linear layer's weight gradients of every group come from one
            batched product (``torch.bmm``) written straight into the rows.
        total_of : callable, optional
            ``total_of(outputs) -> (total, first)``: the sum of the group losses as one scalar
            with its graph (e.g. a per-row loss weighted by ``1 / group size``: one loss call and
            one backward node instead of one per group) and group 0's loss value. Used for the
            one-pass gradients; ``losses_of`` is then called only for the fallback.

        Returns
        -------
        list of Tensor
            The group losses (with their graph); with ``total_of``, ``[first]`` (no graph) unless
            the fallback ran.
        """
        n = sum(sizes)
        slots, uncovered = self._plan(params)
        self._recorder.into = recorded = []
        try:
            out = forward(x)
            losses = losses_of(out) if total_of is None else total_of(out)
        finally:
            self._recorder.into = None
        calls = [(m, a, e) for m, a, va, e, rows in recorded
                 if e is not None and rows == n and a.dim() and a.size(0) == n and a._version == va]
        complete = len(calls) == len(recorded)
        recorded.clear()    # the inputs are dropped one by one below (calls[j] = None)
        if not complete:
            self.fell_back += 1
            if total_of is not None:
                losses = losses_of(out)
            for g, loss in enumerate(losses):
                grads = torch.autograd.grad(loss, params, retain_graph=g + 1 < len(losses), allow_unused=True)
                torch._foreach_copy_(into[g], [torch.zeros_like(p) if d is None else d for d, p in zip(grads, params)])
            return losses
        # the output gradient of every call; autograd sums the group losses itself
        if total_of is not None:
            total, first = losses
            losses = [first]
        else:
            total = losses
        deltas = list(torch.autograd.grad(total, [e for _, _, e in calls], allow_unused=True)) if calls else []
        bounds = [0]
        for size in sizes:
            bounds.append(bounds[-1] + size)
        groups = list(zip(range(len(sizes)), bounds, bounds[1:]))
        batched = rows is not None and len(sizes) > 1 and all(size == sizes[0] for size in sizes)
        if batched and (rows is not self._views_rows or params is not self._views_params):
            key = (rows.data_ptr(), rows.shape, rows.stride(), rows.dtype)
            if self._views_for != key or self._views_params is not params:   # other rows or parameters
                self._views, self._views_for, self._views_params = {}, key, params
            self._views_rows = rows
        written = set()    # slots written by an earlier call (a layer called twice adds)
        with torch.no_grad():
            for j, (m, a, _) in enumerate(calls):
                d, deltas[j], calls[j] = deltas[j], None, None   # each output gradient freed once used
                if d is None:
                    continue
                w, b = slots[m]
                add_w, add_b = w in written, b in written
                if type(m) is nn.Linear:      # the common case without the general rule's indirection
                    A = a.reshape(-1, m.in_features)
                    D = d.reshape(-1, m.out_features)
                    per = A.size(0) // n    # further leading dimensions flattened with the rows
                    if batched and not add_w and not add_b:
                        k = len(sizes)
                        Dk = D.view(k, -1, m.out_features)
                        if w is not None:
                            torch.bmm(Dk.transpose(1, 2), A.view(k, -1, m.in_features), out=self._across(rows, w, params))
                        if b is not None:
                            torch.sum(Dk, 1, out=self._across(rows, b, params))
                        written.update((w, b))
                        continue
                    for g, lo, hi in groups:
                        Dg, Ag = D[lo * per:hi * per], A[lo * per:hi * per]
                        if w is not None:
                            if add_w:
                                into[g][w].addmm_(Dg.T, Ag)
                            else:
                                torch.mm(Dg.T, Ag, out=into[g][w])
                        if b is not None:
                            if add_b:
                                into[g][b].add_(Dg.sum(0))
                            else:
                                torch.sum(Dg, 0, out=into[g][b])
                else:
                    a = a.detach()
                    whole = _normalised(m, a)
                    for g, lo, hi in groups:
                        for i, value in zip((w, b), _group_rule(m, a[lo:hi], d[lo:hi],
                                                                None if whole is None else whole[lo:hi])):
                            if i is not None and value is not None:
                                if i in written:
                                    into[g][i].add_(value)
                                else:
                                    into[g][i].copy_(value)
                written.update((w, b))
            for i in uncovered:              # parameters no layer holds: zero gradient
                for g in range(len(sizes)):
                    into[g][i].zero_()
            for i in self._layer_slots:      # parameters of layers no recorded call reached
                if i not in written:
                    for g in range(len(sizes)):
                        into[g][i].zero_()
        return losses


def _normalised(m, a):
    """The normalised input ``X^`` of a norm layer (computed once for all rows), else ``None``."""
    if isinstance(m, nn.LayerNorm):
        return F.layer_norm(a, tuple(m.normalized_shape), None, None, m.eps)
    if isinstance(m, nn.GroupNorm):
        return F.group_norm(a, m.num_groups, None, None, m.eps)
    return None


def _group_rule(m, a, d, xhat):
    """``m``'s (weight, bias) gradients on one group's rows (``None`` where ``m`` has none; for
    :class:`~clkit.models.transformer.LearnedPosition` the first is the position table's).
    ``nn.Linear`` never comes here: :meth:`GroupGradients.__call__` forms its products itself
    (and :func:`one_pass_reason` admits exact module types only, so no subclass of it)."""
    if isinstance(m, _CONV):
        dims = m.weight.ndim - 2
        bias = m.bias is not None and m.bias.requires_grad
        _, gw, gb = torch.ops.aten.convolution_backward(
            d, a, m.weight, [m.out_channels] if bias else None, m.stride, m.padding, m.dilation, False,
            [0] * dims, m.groups, [False, m.weight.requires_grad, bias])
        return gw, (gb if bias else None)
    if isinstance(m, nn.LayerNorm):
        lead = tuple(range(d.ndim - len(m.normalized_shape)))
        return ((d * xhat).sum(lead) if m.weight is not None else None,
                d.sum(lead) if m.bias is not None else None)
    if isinstance(m, nn.GroupNorm):
        other = (0, *range(2, d.ndim))
        return ((d * xhat).sum(other) if m.weight is not None else None,
                d.sum(other) if m.bias is not None else None)
    return d.sum(0, keepdim=True), None   # LearnedPosition: output = input + pos, pos (1, steps, d_model)
