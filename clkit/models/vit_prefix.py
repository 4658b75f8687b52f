"""Prefix-tuning of a timm vision-transformer block: prompts prepended to the keys and values of its attention.

Prefix tuning (Li and Liang, 2021), as the prompt methods for pre-trained ViTs use it (CODA-Prompt,
DualPrompt, HiDe-Prompt in the PILOT tree of ``AIGNLAI/EDGE``, ``PILOT/backbone/vit_coda_promtpt.py``,
``Attention.forward``): a block's self-attention gets extra key tokens ``P_k`` and value tokens
``P_v`` (one set per image) that every query attends to, while the sequence itself keeps its length::

    q, k, v = qkv(norm1(x))                       # (B, heads, N, head_dim)
    k = [P_k ; k],  v = [P_v ; v]                 # prefixes first, split into the same heads
    x = x + proj(softmax(q k^T * scale) v)
    x = x + mlp(norm2(x))

:func:`prefix_block_forward` runs a timm ``Block`` this way with its own weights (nothing in the block
is changed or copied), so a frozen ViT can be prompted without a custom ViT class. It follows timm's
``Block.forward`` and ``Attention.forward`` (timm 1.0: ``q_norm``/``k_norm``, the ``norm`` after the
attention, the optional sigmoid ``gate``, ``ls1``/``ls2`` layer scales, drop path); the prefix keys
enter after ``k_norm`` (the authors' ViT has no query/key normalisation; in ViT-B/16 it is the
identity). Attention is computed with :func:`torch.nn.functional.scaled_dot_product_attention` and
the block's ``scale``; attention dropout applies in training mode as in timm.

Shared: CODA-Prompt (:mod:`clkit.strategies.coda_prompt`) imports it, and other prefix-tuning methods
may; keep the names :func:`prefix_attention` and :func:`prefix_block_forward` stable.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["prefix_attention", "prefix_block_forward"]


def _heads(t: torch.Tensor, num_heads: int, head_dim: int) -> torch.Tensor:
    """``(B, L, heads * head_dim)`` -> ``(B, heads, L, head_dim)`` (the authors' reshape and permute)."""
    return t.reshape(t.shape[0], -1, num_heads, head_dim).permute(0, 2, 1, 3)


def prefix_attention(attn: nn.Module, x: torch.Tensor, prefix_k: torch.Tensor | None = None,
                     prefix_v: torch.Tensor | None = None) -> torch.Tensor:
    """A timm ``Attention`` module's output on ``x`` with prefix keys/values prepended.

    Parameters
    ----------
    attn : timm.models.vision_transformer.Attention
        Its ``qkv``, ``num_heads``, ``scale``, ``proj`` (and ``q_norm``, ``k_norm``, ``norm``, ``gate``,
        ``attn_drop``, ``proj_drop`` where present) are used.
    x : Tensor, shape (B, N, C)
        The (normalised) tokens.
    prefix_k, prefix_v : Tensor, shape (B, Lk, C) and (B, Lv, C), optional
        Prefix keys and values (``Lk == Lv``), split into heads like the block's keys and values.
        ``None`` (both): plain self-attention.

    Returns
    -------
    Tensor, shape (B, N, C_out)

    Examples
    --------
    >>> from timm.models.vision_transformer import Attention
    >>> a = Attention(8, num_heads=2, qkv_bias=True).eval()
    >>> x = torch.randn(2, 3, 8, generator=torch.Generator().manual_seed(0))
    >>> torch.allclose(prefix_attention(a, x), a(x), atol=1e-6)
    True
    >>> prefix_attention(a, x, torch.zeros(2, 4, 8), torch.zeros(2, 4, 8)).shape
    torch.Size([2, 3, 8])
    """
    if (prefix_k is None) != (prefix_v is None):
        raise ValueError("prefix_k and prefix_v must be given together (both None: no prefix)")
    b, n, _ = x.shape
    num_heads = attn.num_heads
    head_dim = getattr(attn, "head_dim", None) or attn.qkv.out_features // (3 * num_heads)
    gate = getattr(attn, "gate", None)
    gate = gate(x).sigmoid() if gate is not None else None
    qkv = attn.qkv(x).reshape(b, n, 3, num_heads, head_dim).permute(2, 0, 3, 1, 4)
    q, k, v = qkv.unbind(0)
    q_norm, k_norm = getattr(attn, "q_norm", None), getattr(attn, "k_norm", None)
    if q_norm is not None:
        q = q_norm(q)
    if k_norm is not None:
        k = k_norm(k)
    if prefix_k is not None:
        if prefix_k.shape[1] != prefix_v.shape[1]:
            raise ValueError(f"prefix_k and prefix_v must have as many tokens, got {prefix_k.shape[1]} and "
                             f"{prefix_v.shape[1]}")
        k = torch.cat([_heads(prefix_k.to(k.dtype), num_heads, head_dim), k], dim=2)
        v = torch.cat([_heads(prefix_v.to(v.dtype), num_heads, head_dim), v], dim=2)
    drop = getattr(attn, "attn_drop", None)
    p = drop.p if (drop is not None and attn.training and isinstance(drop, nn.Dropout)) else 0.0
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=p, scale=attn.scale)
    out = out.transpose(1, 2).reshape(b, n, num_heads * head_dim)
    norm = getattr(attn, "norm", None)
    if norm is not None:
        out = norm(out)
    if gate is not None:
        out = out * gate
    out = attn.proj(out)
    proj_drop = getattr(attn, "proj_drop", None)
    return proj_drop(out) if proj_drop is not None else out


def prefix_block_forward(block: nn.Module, x: torch.Tensor, prefix_k: torch.Tensor | None = None,
                         prefix_v: torch.Tensor | None = None) -> torch.Tensor:
    """A timm ViT ``Block`` on tokens ``x`` with prefix keys/values in its attention (prefix tuning).

    Parameters
    ----------
    block : timm.models.vision_transformer.Block
        ``norm1``, ``attn``, ``ls1``, ``drop_path1``, ``norm2``, ``mlp``, ``ls2``, ``drop_path2`` (the
        layer scales and drop paths may be absent: identities).
    x : Tensor, shape (B, N, C)
    prefix_k, prefix_v : Tensor, shape (B, L, C), optional
        The prefixes (see :func:`prefix_attention`); ``None``: exactly ``block(x)``.

    Returns
    -------
    Tensor, shape (B, N, C)

    Examples
    --------
    >>> from timm.models.vision_transformer import Block
    >>> blk = Block(8, num_heads=2, qkv_bias=True).eval()
    >>> x = torch.randn(2, 3, 8, generator=torch.Generator().manual_seed(0))
    >>> torch.allclose(prefix_block_forward(blk, x), blk(x), atol=1e-6)
    True
    >>> pk = torch.randn(2, 4, 8, generator=torch.Generator().manual_seed(1))
    >>> bool((prefix_block_forward(blk, x, pk, pk) - blk(x)).abs().max() > 1e-3)   # the prefix changes the output
    True
    """
    if prefix_k is None and prefix_v is None:
        return block(x)
    ident = nn.Identity()
    ls1, ls2 = getattr(block, "ls1", ident), getattr(block, "ls2", ident)
    dp1 = getattr(block, "drop_path1", getattr(block, "drop_path", ident))
    dp2 = getattr(block, "drop_path2", getattr(block, "drop_path", ident))
    x = x + dp1(ls1(prefix_attention(block.attn, block.norm1(x), prefix_k, prefix_v)))
    return x + dp2(ls2(block.mlp(block.norm2(x))))
