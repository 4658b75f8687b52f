"""Frozen backbones shared between the prefix tree's strategy nodes, not copied.

The ground truth's sequential driver (:class:`clkit.edge.learners._Sequential`) gives every
node of the prefix tree its own strategy: where sequences part, the parent's strategy is
deep-copied for each child. For a strategy around a frozen pre-trained ViT (``needs_vit_model``:
L2P, CODA-Prompt, HiDe-Prompt, EASE, MOS) that copied the whole ViT-B/16 (86 M parameters) with
every node, although no node ever changes it: its parameters have ``requires_grad`` off, it stays
in evaluation mode, and only the prompts, adapters and heads train. :func:`node_copy` deep-copies
everything *but* the frozen ViT (``strategy.model.vit``; the copy refers to the same module), so a
branch costs the trained parts only, and :func:`node_bytes_shared` counts a node's bytes without it
(the memory plan then chunks by prompts and heads, not by whole ViTs).

What is shared is decided per node: the ViT is shared only when every one of its parameters is
frozen (``requires_grad`` off); otherwise the node is deep-copied whole, as before. Results are
those of the whole copies (``tests/test_edge_shared.py`` trains L2P and EASE both ways).
"""

from __future__ import annotations

import copy

from torch import nn

__all__ = ["frozen_backbone", "node_copy", "node_bytes_shared"]


def frozen_backbone(strategy) -> nn.Module | None:
    """The frozen pre-trained module a strategy node may share (``strategy.model.vit`` of a ``needs_vit_model``
    strategy whose parameters are all frozen), else ``None``.

    Examples
    --------
    >>> from clkit.strategies import Strategy
    >>> frozen_backbone(Strategy(nn.Linear(2, 2))) is None
    True
    """
    if not getattr(type(strategy), "needs_vit_model", False):
        return None
    vit = getattr(getattr(strategy, "model", None), "vit", None)
    if not isinstance(vit, nn.Module) or any(p.requires_grad for p in vit.parameters()):
        return None
    return vit


def node_copy(strategy):
    """A deep copy of one prefix-tree node's strategy that shares its frozen backbone (:func:`frozen_backbone`).

    The ViT, its submodules, parameters and buffers are put in ``copy.deepcopy``'s memo, so the copy
    refers to them; everything else (prompts, adapters, heads, optimizer state, memories) is copied.

    Examples
    --------
    >>> from clkit.models.vit import vit_backbone
    >>> from clkit.strategies.prompt import L2P
    >>> s = L2P(vit_backbone(num_classes=4, tiny=True, seed=0), epochs=1)
    >>> c = node_copy(s)
    >>> c.model.vit is s.model.vit, c.model.head is s.model.head
    (True, False)
    """
    vit = frozen_backbone(strategy)
    if vit is None:
        return copy.deepcopy(strategy)
    memo = {id(m): m for m in vit.modules()}
    memo.update({id(t): t for t in vit.parameters()})
    memo.update({id(t): t for t in vit.buffers()})
    return copy.deepcopy(strategy, memo)


def node_bytes_shared(strategy):
    """:func:`clkit.edge.memory.strategy_node_bytes` of a node whose frozen backbone is shared: the model's
    bytes without the ViT's (counted once for the run, not per node).

    Examples
    --------
    >>> from clkit.models.vit import vit_backbone
    >>> from clkit.strategies.prompt import L2P
    >>> from clkit.edge.memory import strategy_node_bytes
    >>> s = L2P(vit_backbone(num_classes=4, tiny=True, seed=0), epochs=1)
    >>> node_bytes_shared(s).state < strategy_node_bytes(s).state
    True
    """
    from .memory import NodeBytes, strategy_node_bytes

    whole = strategy_node_bytes(strategy)
    vit = frozen_backbone(strategy)
    if vit is None:
        return whole
    shared = sum(t.numel() * t.element_size() for t in list(vit.parameters()) + list(vit.buffers()))
    own = max(whole.state - shared, 0)
    return NodeBytes(int(own), int(4 * own), int(own))
