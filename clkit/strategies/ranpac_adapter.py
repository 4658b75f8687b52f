"""RanPAC's first-session adaptation: an AdaptFormer adapter tuned on the first task, then frozen.

The EDGE authors' RanPAC (AIGNLAI/EDGE, commit ``a60c1179cf762e8c1197ab876a3c06db3a49b639``,
``PILOT/models/ranpac.py`` with ``PILOT/exps/ranpac.json``, ``PILOT/backbone/vit_adapter.py``,
``PILOT/utils/inc_net.py:SimpleVitNet`` and ``PILOT/backbone/linears.py:CosineLinear``) trains, on the
first task only (``_init_train``):

- one AdaptFormer adapter per block (:class:`~clkit.models.vit_adapter.AdapterStack`; ``ffn_num`` 64,
  ``"lora"`` initialisation, scale 0.1, dropout 0.1, parallel to the MLP) inside the frozen ViT;
- a cosine head over the first task's classes, ``sigma * cos(f, w_k)`` (``CosineLinear``: ``w``
  ``U(-1/sqrt(d), 1/sqrt(d))``, a learnable ``sigma`` starting at 1);
- cross-entropy, SGD (momentum 0.9, ``init_lr`` 0.01, ``weight_decay`` 5e-4 on every trained tensor,
  ``sigma`` included), ``tuned_epoch`` 20 epochs of shuffled batches of 48, a cosine rate per epoch
  (``CosineAnnealingLR(T_max=tuned_epoch, eta_min=min_lr)``, ``min_lr`` 0).

Then the adapters are frozen for good and the features of every later step are the adapted ViT's.
The cosine head's ``sigma`` carries over to the ridge head's cosine classifier (``update_fc`` copies
``fc.sigma``), so RanPAC's logits are ``sigma * cos(h, W_k)``.

Here the adapters run inside a timm ViT (:func:`~clkit.models.vit_adapter.adapted_features`), the
batches come from the strategy's seeded generator and the adapters' dropout from their own
generator, never from torch's global one (the authors' differ there, which no fixed check can match;
the known-answer test sets dropout to 0 in both).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..models.vit_adapter import AdapterStack, adapted_features

__all__ = ["AdaptedViT", "CosineClassifier", "adapt_first_task"]


class AdaptedViT(nn.Module):
    """A frozen timm ViT with AdaptFormer adapters (none until :func:`adapt_first_task` adds them).

    The forward pass returns the pooled features ``(N, d)`` (:func:`~clkit.models.vit_adapter.adapted_features`);
    with no adapters it is the plain ViT's.

    Parameters
    ----------
    vit : torch.nn.Module
        A timm ``VisionTransformer`` (a :class:`~clkit.models.vit.ViTBackbone`'s ``features``).

    Examples
    --------
    >>> from clkit.models.vit import vit_backbone
    >>> vit = vit_backbone(tiny=True, seed=0).features.eval()
    >>> x = torch.randn(2, 3, 32, 32)
    >>> torch.allclose(AdaptedViT(vit)(x), vit(x), atol=1e-6)
    True
    """

    def __init__(self, vit: nn.Module):
        super().__init__()
        self.vit = vit
        self.adapters: AdapterStack | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gen = self.adapters.dropout_generator(x.device) if self.adapters is not None and self.training else None
        return adapted_features(self.vit, x, self.adapters, generator=gen)


class CosineClassifier(nn.Module):
    """The authors' ``CosineLinear``: ``sigma * cos(x, w_k)``, ``w`` ``(k, d)`` drawn ``U(-1/sqrt(d), 1/sqrt(d))``
    from ``generator``, ``sigma`` a learnable scalar starting at 1. RanPAC's adapter-stage head and EASE's
    training head of a task (the authors' ``EaseCosineLinear`` as ``proxy_fc``: the same layer).

    Examples
    --------
    >>> h = CosineClassifier(4, 3, torch.Generator().manual_seed(0))
    >>> h(torch.randn(2, 4)).shape, float(h.sigma.detach())
    (torch.Size([2, 3]), 1.0)
    """

    def __init__(self, dim: int, n_classes: int, generator: torch.Generator):
        super().__init__()
        bound = 1.0 / math.sqrt(dim)
        self.weight = nn.Parameter((torch.rand(n_classes, dim, generator=generator) * 2 - 1) * bound)
        self.sigma = nn.Parameter(torch.ones(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.sigma * F.linear(F.normalize(x, p=2, dim=1), F.normalize(self.weight, p=2, dim=1))


def adapt_first_task(extractor: AdaptedViT, x, y, classes, *, ffn_num: int, epochs: int, lr: float,
                     momentum: float, weight_decay: float, min_lr: float, batch_size: int, scale: float,
                     dropout: float, seed: int, generator: torch.Generator, init_generator: torch.Generator,
                     amp, device: torch.device) -> dict:
    """Tune new adapters of ``extractor`` on the rows ``(x, y)`` of the first task, then freeze them.

    Parameters
    ----------
    extractor : AdaptedViT
        Gets its :class:`~clkit.models.vit_adapter.AdapterStack` (on ``device``).
    x : torch.Tensor, shape (N, 3, H, W)
    y : torch.Tensor of int, shape (N,)
        Labels among ``classes``.
    classes : sequence of int
        The task's classes; the cosine head's output ``k`` is ``classes[k]``.
    ffn_num, epochs, lr, momentum, weight_decay, min_lr, batch_size, scale, dropout
        As in the module's description.
    seed : int
        Seeds the adapters' dropout generator.
    generator : torch.Generator
        CPU generator of the batch orders (one permutation per epoch).
    init_generator : torch.Generator
        CPU generator of the initialisation: the adapters' ``down_proj`` (block by block), then the
        cosine head's weight.
    amp : clkit.device.Amp
        The strategy's autocast / scaler.
    device : torch.device

    Returns
    -------
    dict
        ``losses``: the mean loss of each epoch (0-dim tensors on the device); ``sigma``: the cosine
        head's trained scale (0-dim tensor); ``head``: the trained :class:`CosineClassifier`.
    """
    vit = extractor.vit
    dim = int(getattr(vit, "embed_dim", getattr(vit, "num_features")))
    adapters = AdapterStack(len(vit.blocks), dim, ffn_num, generator=init_generator, seed=seed, scale=scale,
                            dropout=dropout).to(device)
    head = CosineClassifier(dim, len(classes), init_generator).to(device)
    extractor.adapters = adapters
    lookup = torch.full((int(max(classes)) + 1,), -100, dtype=torch.int64)
    lookup[list(classes)] = torch.arange(len(classes))
    targets = lookup.to(device)[y]
    params = list(adapters.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    vit.eval()
    adapters.train()
    losses = []
    n = len(y)
    for e in range(epochs):
        rate = min_lr + (lr - min_lr) * (1 + math.cos(math.pi * e / epochs)) / 2
        for g in opt.param_groups:
            g["lr"] = rate
        perm = torch.randperm(n, generator=generator).to(device)
        step_losses = []
        for s in range(0, n, batch_size):
            idx = perm[s:s + batch_size]
            with amp.autocast():
                logits = head(extractor(x[idx]))
            loss = F.cross_entropy(logits.float(), targets[idx])
            opt.zero_grad(set_to_none=True)
            amp.backward(loss, opt)
            amp.step(opt)
            step_losses.append(loss.detach())
        losses.append(torch.stack(step_losses).mean())
    adapters.eval()
    for p in params:
        p.requires_grad_(False)
    return {"losses": losses, "sigma": head.sigma.detach().reshape(()), "head": head}
