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

At run time, a layer whose input or output does not have the stacked rows as its first
dimension, or a tensor modified in place after it was recorded, falls back to per-group autograd
gradients through the same stacked graph (still exact, slower).

Dropout stays allowed: every row draws its own mask, so the groups do not interact and the
gradients are the exact per-group gradients for the masks drawn; the masks themselves are drawn
for the stacked rows at once, so they are other random numbers than a separate pass per group
would draw (same distribution, same seed gives the same run).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

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


class GroupGradients:
    """Per-group gradients of a sample-wise model from one stacked forward and backward.

    Parameters
    ----------
    model : torch.nn.Module
        Checked with :func:`one_pass_reason`; ``self.reason`` says why not where it fails (then
        :meth:`__call__` must not be used).

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

    def __call__(self, forward, x, sizes, losses_of, params, into) -> list[torch.Tensor]:
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

        Returns
        -------
        list of Tensor
            The group losses (with their graph).
        """
        n = sum(sizes)
        seen: dict[nn.Module, list] = {m: [] for m in self.layers}

        def hook(module, inputs, output):
            a = inputs[0]
            seen[module].append((a, output, a._version, output._version))

        handles = [m.register_forward_hook(hook) for m in self.layers]
        try:
            losses = losses_of(forward(x))
        finally:
            for h in handles:
                h.remove()
        calls = [(m, a, o) for m, rec in seen.items() for a, o, va, vo in rec
                 if a.ndim and o.ndim and len(a) == n and len(o) == n and a._version == va and o._version == vo]
        if len(calls) != sum(len(rec) for rec in seen.values()):
            self.fell_back += 1
            for g, loss in enumerate(losses):
                grads = torch.autograd.grad(loss, params, retain_graph=g + 1 < len(losses), allow_unused=True)
                torch._foreach_copy_(into[g], [torch.zeros_like(p) if d is None else d for d, p in zip(grads, params)])
            return losses
        deltas = torch.autograd.grad(sum(losses), [o for _, _, o in calls], allow_unused=True) if calls else []
        slot = {id(p): i for i, p in enumerate(params)}
        written = [set() for _ in sizes]

        def put(g, p, value=None, fn=None):
            """Write (first call) or add (later calls of a shared layer) into group g's slot of p."""
            i = slot.get(id(p))
            if i is None or not p.requires_grad:
                return
            target = into[g][i]
            if i in written[g]:
                target.add_(value if fn is None else fn(None))
            elif fn is not None:
                fn(target)
            else:
                target.copy_(value)
            written[g].add(i)

        with torch.no_grad():
            for (m, a, o), d in zip(calls, deltas):
                if d is None:
                    continue
                a = a.detach()
                whole = _normalised(m, a)
                start = 0
                for g, size in enumerate(sizes):
                    rows = slice(start, start + size)
                    start += size
                    _group_rule(m, a[rows], d[rows], None if whole is None else whole[rows], lambda p, v=None, f=None, g=g: put(g, p, v, f))
            for g in range(len(sizes)):   # parameters no recorded call reached: zero gradient
                for i, p in enumerate(params):
                    if i not in written[g]:
                        into[g][i].zero_()
        return losses


def _normalised(m, a):
    """The normalised input ``X^`` of a norm layer (computed once for all rows), else ``None``."""
    if isinstance(m, nn.LayerNorm):
        return F.layer_norm(a, tuple(m.normalized_shape), None, None, m.eps)
    if isinstance(m, nn.GroupNorm):
        return F.group_norm(a, m.num_groups, None, None, m.eps)
    return None


def _group_rule(m, a, d, xhat, put) -> None:
    """Hand each of ``m``'s parameter gradients on one group's rows to ``put(param, value, fn)``
    (``fn(out)`` writes into ``out``, or returns the value when ``out`` is ``None``)."""
    if isinstance(m, nn.Linear):
        A = a.reshape(-1, m.in_features)
        D = d.reshape(-1, m.out_features)
        put(m.weight, f=lambda out: torch.mm(D.T, A, out=out) if out is not None else D.T @ A)
        if m.bias is not None:
            put(m.bias, f=lambda out: torch.sum(D, 0, out=out) if out is not None else D.sum(0))
    elif isinstance(m, _CONV):
        dims = m.weight.ndim - 2
        bias = m.bias is not None and m.bias.requires_grad
        _, gw, gb = torch.ops.aten.convolution_backward(
            d, a, m.weight, [m.out_channels] if bias else None, m.stride, m.padding, m.dilation, False,
            [0] * dims, m.groups, [False, m.weight.requires_grad, bias])
        put(m.weight, gw)
        if bias:
            put(m.bias, gb)
    elif isinstance(m, nn.LayerNorm):
        k = len(m.normalized_shape)
        lead = tuple(range(d.ndim - k))
        if m.weight is not None:
            put(m.weight, (d * xhat).sum(lead))
        if m.bias is not None:
            put(m.bias, d.sum(lead))
    elif isinstance(m, nn.GroupNorm):
        other = (0, *range(2, d.ndim))
        if m.weight is not None:
            put(m.weight, (d * xhat).sum(other))
        if m.bias is not None:
            put(m.bias, d.sum(other))
    else:   # LearnedPosition: output = input + pos, pos of shape (1, steps, d_model)
        put(m.pos, d.sum(0, keepdim=True))
