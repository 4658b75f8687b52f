"""AdaptFormer adapters on a frozen timm vision transformer (the adapter ViT of EASE, MOS and RanPAC).

The pre-trained-model methods of the PILOT tree (AIGNLAI/EDGE, commit
``a60c1179cf762e8c1197ab876a3c06db3a49b639``: ``PILOT/backbone/vit_ease.py``, ``vit_mos.py`` and
``vit_adapter.py`` hold the same ``Adapter`` class and ``Block.forward``) tune a frozen ViT through
one small bottleneck **adapter** per transformer block (AdaptFormer; Chen et al., NeurIPS 2022):

- ``Adapter``: ``up(dropout(ReLU(down(x)))) * scale``, ``down: d -> r`` (``r`` = ``ffn_num``,
  64 in the configs), ``up: r -> d``; the authors' ``ffn_adapter_init_option="lora"``: ``down.weight``
  Kaiming-uniform with ``a = sqrt(5)`` (``U(-1/sqrt(d), 1/sqrt(d))``), the other three tensors zero,
  so a new adapter starts as the identity of the block; ``scale`` 0.1 (``ffn_adapter_scalar``),
  dropout 0.1 on the bottleneck, no layer norm (``ffn_adapter_layernorm_option="none"``; ``"in"``
  and ``"out"`` are offered as the authors' class does);
- ``Block`` with an adapter (``ffn_option="parallel"``, the configs' choice): after the attention
  residual ``x``, the block returns ``x + (mlp(norm2(x)) + adapter(x))`` -- the adapter reads the
  block's input to the MLP branch *before* ``norm2``; ``"sequential"`` returns
  ``x + (mlp(norm2(x)) + adapter(mlp(norm2(x))))``.

Here the blocks are a timm ``VisionTransformer``'s own ``Block`` modules (their attention, MLP,
layer scale and drop path), not a copy of the authors' ViT class (which splits ``qkv`` into
three projections and renames the MLP: the same function, checked to 1e-6 in
``tests/test_strategies_ease.py``). The ViT itself is never modified: :func:`adapted_features`
runs its pieces with the adapters inserted, so one frozen ViT serves any number of adapter sets.

Dropout draws its masks from a generator on the activations' device, seeded by the caller
(:class:`AdapterStack` ``seed``), never from torch's global generator.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .._validate import check_choice, check_int, check_real

__all__ = ["Adapter", "AdapterStack", "adapted_block", "vit_tokens", "adapted_features", "check_vit"]

_VIT_PARTS = ("patch_embed", "_pos_embed", "blocks", "norm")


class Adapter(nn.Module):
    """One AdaptFormer bottleneck: ``up(dropout(ReLU(down(x)))) * scale`` (the authors' ``Adapter``).

    Parameters
    ----------
    dim : int
        The ViT's width ``d``.
    bottleneck : int
        ``r`` (the authors' ``ffn_num``).
    scale : float
        Multiplies the output (``ffn_adapter_scalar``, 0.1).
    dropout : float
        Dropout probability on the bottleneck in training mode (0.1 in the authors' ``get_new_adapter``).
    layernorm : {"none", "in", "out"}
        A layer norm on the input (``"in"``) or the output (``"out"``), or none (the configs).
    generator : torch.Generator, optional
        A CPU generator for the ``"lora"`` initialisation (``down.weight`` ``U(-1/sqrt(d), 1/sqrt(d))``,
        the rest zero); ``None`` leaves every tensor zero.

    Examples
    --------
    >>> a = Adapter(8, 4, generator=torch.Generator().manual_seed(0))
    >>> float(a.up_proj.weight.detach().abs().sum()), bool(a.down_proj.weight.abs().max() <= 8 ** -0.5)
    (0.0, True)
    >>> a(torch.ones(2, 3, 8)).detach().abs().sum().item()      # a new adapter adds nothing
    0.0
    """

    def __init__(self, dim: int, bottleneck: int, *, scale: float = 0.1, dropout: float = 0.1,
                 layernorm: str = "none", generator: torch.Generator | None = None):
        super().__init__()
        self.dim = check_int("dim", dim, low=1)
        self.bottleneck = check_int("bottleneck", bottleneck, low=1)
        self.scale = check_real("scale", scale)
        self.dropout = check_real("dropout", dropout, low=0, high=1, high_open=True)
        self.layernorm = check_choice("layernorm", layernorm, ["none", "in", "out"])
        self.norm = nn.LayerNorm(dim) if layernorm != "none" else None
        self.down_proj = nn.Linear(dim, bottleneck)
        self.up_proj = nn.Linear(bottleneck, dim)
        with torch.no_grad():
            for p in (self.down_proj.weight, self.down_proj.bias, self.up_proj.weight, self.up_proj.bias):
                p.zero_()
            if generator is not None:   # kaiming_uniform_(a=sqrt(5)): bound = sqrt(6 / ((1 + 5) fan_in))
                bound = 1.0 / math.sqrt(dim)
                self.down_proj.weight.copy_((torch.rand(bottleneck, dim, generator=generator) * 2 - 1) * bound)

    def forward(self, x: torch.Tensor, generator: torch.Generator | None = None, residual=None,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        """The adapter's output (``+ residual`` when one is given, the authors' ``add_residual``).

        ``mask`` (broadcast to the bottleneck ``(..., r)``, already scaled by ``1 / (1 - p)``)
        multiplies the bottleneck: dropout drawn by the caller (MOS), on top of the adapter's own."""
        if self.layernorm == "in":
            x = self.norm(x)
        h = torch.relu(self.down_proj(x))
        if mask is not None:
            h = h * mask
        if self.training and self.dropout > 0:
            keep = torch.rand(h.shape, device=h.device, generator=generator) >= self.dropout
            h = h * keep.to(h.dtype) / (1.0 - self.dropout)
        up = self.up_proj(h) * self.scale
        if self.layernorm == "out":
            up = self.norm(up)
        return up if residual is None else up + residual


class AdapterStack(nn.ModuleList):
    """One :class:`Adapter` per block of a ViT (the authors' ``cur_adapter``), with its dropout generator.

    Parameters
    ----------
    depth, dim, bottleneck : int
        Blocks of the ViT, its width, the adapters' ``r``.
    generator : torch.Generator, optional
        CPU generator of the initialisation (blocks in order).
    seed : int
        Seeds the dropout generator (created on the activations' device at first use).
    **kwargs
        ``scale``, ``dropout``, ``layernorm`` of :class:`Adapter`.

    Examples
    --------
    >>> s = AdapterStack(2, 8, 4, generator=torch.Generator().manual_seed(0))
    >>> len(s), sum(p.numel() for p in s.parameters())
    (2, 152)
    """

    def __init__(self, depth: int, dim: int, bottleneck: int, *, generator: torch.Generator | None = None,
                 seed: int = 0, **kwargs):
        super().__init__([Adapter(dim, bottleneck, generator=generator, **kwargs) for _ in range(depth)])
        self.seed = check_int("seed", seed)
        self._gen: tuple | None = None

    def dropout_generator(self, device: torch.device) -> torch.Generator | None:
        """The dropout generator on ``device`` (None where the device has none, e.g. ``meta``)."""
        if self._gen is None or self._gen[0] != device:
            try:
                gen = torch.Generator(device=device).manual_seed(self.seed)
            except RuntimeError:
                gen = None
            self._gen = (device, gen)
        return self._gen[1]


def adapted_block(block: nn.Module, x: torch.Tensor, adapter: Adapter | None = None, *, mode: str = "parallel",
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """A timm ``Block``'s forward with an AdaptFormer adapter on its MLP branch (the authors' ``Block.forward``).

    ``mode="parallel"``: ``x + (mlp(norm2(x)) + adapter(x))`` with ``x`` after the attention residual;
    ``"sequential"``: ``x + adapter(m, residual=m)`` with ``m = mlp(norm2(x))``; no adapter: the block.

    Examples
    --------
    >>> from timm.models.vision_transformer import Block
    >>> blk, x = Block(8, 2).eval(), torch.randn(1, 3, 8)
    >>> torch.allclose(adapted_block(blk, x, Adapter(8, 4)), blk(x))   # a zero adapter: the plain block
    True
    """
    x = x + block.drop_path1(block.ls1(block.attn(block.norm1(x))))
    mlp = block.drop_path2(block.ls2(block.mlp(block.norm2(x))))
    if adapter is None:
        return x + mlp
    if mode == "parallel":
        return x + (mlp + adapter(x, generator))
    return x + adapter(mlp, generator, residual=mlp)


def vit_tokens(vit: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The token sequence entering the first block: patch embedding, class token and position embedding."""
    h = vit._pos_embed(vit.patch_embed(x))
    for name in ("patch_drop", "norm_pre"):
        part = getattr(vit, name, None)
        if part is not None:
            h = part(h)
    return h


def adapted_features(vit: nn.Module, x: torch.Tensor, adapters=None, *, tokens: torch.Tensor | None = None,
                     mode: str = "parallel", generator: torch.Generator | None = None) -> torch.Tensor:
    """The ViT's pooled features ``(N, d)`` with ``adapters[i]`` inside block ``i`` (``None``: the plain ViT).

    The pooling is the ViT's own (``forward_head(..., pre_logits=True)``: the [CLS] token for
    ``global_pool="token"``, the authors' ``x[:, 0]`` after the final norm). ``tokens`` (from
    :func:`vit_tokens`) skips the embedding when several adapter sets read the same images.

    Examples
    --------
    >>> from clkit.models.vit import vit_backbone
    >>> vit = vit_backbone(tiny=True, seed=0).features.eval()
    >>> x = torch.randn(2, 3, 32, 32)
    >>> torch.allclose(adapted_features(vit, x, AdapterStack(2, 32, 4)), vit(x), atol=1e-6)
    True
    """
    h = vit_tokens(vit, x) if tokens is None else tokens
    for i, blk in enumerate(vit.blocks):
        h = adapted_block(blk, h, None if adapters is None else adapters[i], mode=mode, generator=generator)
    h = vit.norm(h)
    if hasattr(vit, "forward_head"):
        return vit.forward_head(h, pre_logits=True)
    return h[:, 0]


def check_vit(model, method: str) -> nn.Module:
    """``model.features`` when it is a timm ``VisionTransformer`` made of ``Block``s, else a ``TypeError``
    that says what ``method`` needs."""
    feats = getattr(model, "features", None)
    missing = [p for p in _VIT_PARTS if not hasattr(feats, p)] if isinstance(feats, nn.Module) else ["features"]
    if not missing:
        blk = feats.blocks[0] if len(feats.blocks) else None
        missing = [p for p in ("norm1", "attn", "ls1", "drop_path1", "norm2", "mlp", "ls2", "drop_path2")
                   if not hasattr(blk, p)]
        missing = [f"blocks[0].{p}" for p in missing]
    if missing:
        raise TypeError(f"model must be a clkit.models.vit.ViTBackbone (a `features` timm VisionTransformer with "
                        f"patch_embed, _pos_embed, blocks of timm Blocks, norm) for {method}, got "
                        f"{type(model).__name__}: its `features` lacks {', '.join(missing)}")
    return feats
