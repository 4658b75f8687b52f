"""Vision transformers through timm: ViT-B/16, the pre-trained backbone of the prototype methods.

SimpleCIL and RanPAC (:mod:`clkit.strategies.prototype`, :mod:`clkit.strategies.ranpac`) classify
frozen features of a pre-trained ViT-B/16. :func:`vit_backbone` builds one with timm (``timm.create_model``) in the
``features``/``head`` layout of the CNN backbones (:mod:`clkit.models.cnn`):

- ``features`` -- timm's ``VisionTransformer`` with its classifier removed: images ``(N, C, H, W)``
  to the final-normalised CLS token ``(N, d)`` (``d = 768`` for ViT-B/16);
- ``head`` -- a fresh ``nn.Linear(d, num_classes)``.

Weights come only from a local file (``pretrained_path``; nothing is downloaded). Without one the
network is randomly initialised, and ``model.weights_source`` says so. ``tiny=True`` builds a
small configuration of the same architecture (32x32 images, 8x8 patches, width 32, 2 blocks,
2 heads; 32,224 parameters in ``features`` with RGB input) for offline tests and smoke runs.

The ViT is not one of :data:`clkit.models.cnn.BACKBONES`: that list is notebook 04's choice of
networks trained from scratch on small images, where a randomly initialised ViT-B/16 (86 M
parameters) has no use; build it with :func:`vit_backbone` and pass it to a strategy.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from torch import nn

__all__ = ["ViTBackbone", "vit_backbone", "TINY_CONFIG", "RANDOM_INIT"]

#: the tiny configuration ``tiny=True`` builds (timm ``VisionTransformer`` keyword arguments)
TINY_CONFIG = {"img_size": 32, "patch_size": 8, "embed_dim": 32, "depth": 2, "num_heads": 2}

#: ``weights_source`` of a randomly initialised backbone
RANDOM_INIT = "random initialisation (no pretrained_path given)"


class ViTBackbone(nn.Module):
    """A timm vision transformer as ``features`` (images to CLS-token features) and a linear ``head``.

    Parameters
    ----------
    features : timm.models.vision_transformer.VisionTransformer
        With its classifier removed (``num_classes=0``): maps ``(N, C, H, W)`` to ``(N, d)``.
    head : nn.Linear
        ``d -> num_classes``.
    weights_source : str
        Where the weights of ``features`` came from: the file's path, or :data:`RANDOM_INIT`.

    Examples
    --------
    >>> net = vit_backbone(num_classes=5, tiny=True, seed=0)
    >>> net(torch.zeros(2, 3, 32, 32)).shape, net.features(torch.zeros(2, 3, 32, 32)).shape
    (torch.Size([2, 5]), torch.Size([2, 32]))
    >>> net.weights_source
    'random initialisation (no pretrained_path given)'
    """

    def __init__(self, features: nn.Module, head: nn.Linear, weights_source: str):
        super().__init__()
        self.features = features
        self.head = head
        self.weights_source = weights_source

    def forward(self, x):
        return self.head(self.features(x))

    def extra_repr(self) -> str:
        return f"weights_source={self.weights_source!r}"


def _how_to_get(name: str) -> str:
    try:
        from timm.models import get_pretrained_cfg

        hub = get_pretrained_cfg(name).hf_hub_id
    except Exception:  # noqa: BLE001 -- only for the hint
        hub = None
    where = (f" (the Hugging Face cache, ~/.cache/huggingface/hub/models--{hub.replace('/', '--')}/snapshots/*/"
             "model.safetensors)") if hub else " (the Hugging Face cache, ~/.cache/huggingface/hub)"
    return (f"get it on a machine with internet by running timm.create_model({name!r}, pretrained=True), which writes "
            f"it{where}, or save model.state_dict() of such a model with torch.save; then pass that file as "
            f"pretrained_path")


def _read_state_dict(path: Path) -> dict:
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path), device="cpu")
    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict):
        raise ValueError(f"pretrained_path: {str(path)!r} holds a {type(state).__name__}, not a state dict")
    return state


def _load(model: nn.Module, path: Path, name: str) -> None:
    """Load the weights in ``path`` into ``model`` (a timm ViT without classifier), strictly: every
    parameter of ``model`` must come from the file, and every key of the file (its classifier
    ``head.*`` aside) must be used."""
    from timm.models import adapt_input_conv
    from timm.models.vision_transformer import checkpoint_filter_fn

    if not path.is_file():
        raise FileNotFoundError(f"pretrained_path: no weights file {str(path)!r} (looked for exactly that path); "
                                f"{_how_to_get(name)}")
    try:
        raw = _read_state_dict(path)
    except ValueError:
        raise
    except Exception as err:  # noqa: BLE001 -- unreadable file: say which one
        raise ValueError(f"pretrained_path: cannot read {str(path)!r} as a state dict (safetensors, or a "
                         f"torch.save'd dict): {err}") from err
    # timm's own converter: unwraps {'model': ...}/{'state_dict': ...}, maps OpenAI/open_clip CLIP keys
    # to timm's, resamples the position embedding to this model's grid
    state = checkpoint_filter_fn(raw, model)
    state = {k: v for k, v in state.items() if not k.startswith("head.")}   # the classifier is always fresh
    conv = "patch_embed.proj.weight"
    if conv in state and state[conv].shape[1] != model.patch_embed.proj.weight.shape[1]:
        state[conv] = adapt_input_conv(model.patch_embed.proj.weight.shape[1], state[conv])
    own = model.state_dict()
    wrong = [f"{k}: file {tuple(v.shape)}, model {tuple(own[k].shape)}" for k, v in state.items()
             if k in own and own[k].shape != v.shape]
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if wrong or missing or unexpected:
        parts = [f"{label} ({len(keys)}): {', '.join(keys[:5])}{', ...' if len(keys) > 5 else ''}"
                 for label, keys in (("shape mismatches", wrong), ("missing keys", missing),
                                     ("unexpected keys", unexpected)) if keys]
        raise ValueError(f"pretrained_path: the weights in {str(path)!r} do not fit {name!r} "
                         f"({model.patch_embed.proj.weight.shape[0]}-wide, {len(model.blocks)} blocks): "
                         f"{'; '.join(parts)}. Pass the name of the architecture the file was saved from "
                         f"(e.g. 'vit_base_patch16_clip_224' for CLIP weights), or {_how_to_get(name)}")
    model.load_state_dict(state, strict=True)


def vit_backbone(name: str = "vit_base_patch16_224", *, pretrained_path: str | os.PathLike | None = None,
                 num_classes: int = 10, img_size: int | None = None, in_channels: int = 3, tiny: bool = False,
                 seed: int | None = None) -> ViTBackbone:
    """A timm vision transformer (ViT-B/16 by default) as a clkit backbone: ``features`` + linear ``head``.

    Parameters
    ----------
    name : str
        A timm vision-transformer name, with or without a pretrained tag
        (``"vit_base_patch16_224"``, ``"vit_base_patch16_224.augreg_in21k"`` -- the ImageNet-21k
        ViT-B/16 of SimpleCIL and RanPAC -- or ``"vit_base_patch16_clip_224"`` for CLIP weights).
    pretrained_path : str or path-like, optional
        A local weights file: ``.safetensors`` (what timm caches from the Hugging Face hub) or a
        ``torch.save``'d state dict (``.pth``/``.bin``, possibly under a ``"model"`` or
        ``"state_dict"`` key; OpenAI or open_clip CLIP checkpoints are converted by timm's
        ``checkpoint_filter_fn``). Every parameter of ``features`` must come from it; its
        classifier (``head.*``) is ignored, the ``head`` is always new. For CLIP that classifier is
        the image projection, so ``features`` are CLIP's 768-d image tokens before it (checked
        against open_clip's ``encode_image``: features times ``visual.proj`` agree to 1e-4). The position embedding is
        resampled when ``img_size`` differs from the file's. ``None``: random initialisation
        (timm's), recorded in ``weights_source``.
    num_classes : int
        Outputs of ``head``.
    img_size : int, optional
        Input side; default 224 (32 with ``tiny=True``).
    in_channels : int
        Input planes; with a file made for 3, timm's ``adapt_input_conv`` folds its patch embedding.
    tiny : bool
        Build :data:`TINY_CONFIG` (same family as ``name``: only the sizes are overridden) instead
        of the full-size network. A file must then hold tiny weights.
    seed : int, optional
        Seed of the random initialisation (of the ``head`` too, with a file); ``None`` draws from
        torch's global generator, as the CNN backbones do.

    Returns
    -------
    ViTBackbone
        ``features`` maps ``(N, in_channels, img_size, img_size)`` to ``(N, d)`` (the CLS token after
        the final layer norm; ``d = 768`` for ViT-B/16); ``head`` is ``nn.Linear(d, num_classes)``;
        ``weights_source`` is the file's path or :data:`RANDOM_INIT`. Dropout and stochastic depth
        are timm's defaults for the name (0 for ``vit_base_patch16_224``).

    Raises
    ------
    FileNotFoundError
        ``pretrained_path`` is not a file (the message says how to get one).
    ValueError
        A bad parameter, an unknown or non-ViT ``name``, or a file whose weights do not fit
        (mismatched shapes, missing or unexpected keys, all named with the file).

    Examples
    --------
    >>> net = vit_backbone(num_classes=3, tiny=True, seed=0)
    >>> sum(p.numel() for p in net.features.parameters()), net.head
    (32224, Linear(in_features=32, out_features=3, bias=True))
    >>> vit_backbone(pretrained_path="/nowhere/vit.safetensors", tiny=True)
    Traceback (most recent call last):
    ...
    FileNotFoundError: pretrained_path: no weights file '/nowhere/vit.safetensors' (looked for exactly that path); ...
    >>> vit_backbone("resnet50", tiny=True)
    Traceback (most recent call last):
    ...
    ValueError: name must be a timm vision transformer (timm.list_models('vit_*')), got 'resnet50'
    """
    import timm
    from timm.models.vision_transformer import VisionTransformer

    from .._seed import torch_seeded
    from .._validate import check_int

    check_int("num_classes", num_classes, low=1)
    check_int("in_channels", in_channels, low=1)
    if not isinstance(tiny, bool):
        raise ValueError(f"tiny must be True or False, got {tiny!r}")
    kwargs = dict(TINY_CONFIG) if tiny else {}
    if img_size is not None:
        kwargs["img_size"] = check_int("img_size", img_size, low=1)
    if seed is not None:
        check_int("seed", seed, low=0)
    arch = name.split(".")[0] if isinstance(name, str) else name
    if not isinstance(name, str) or not arch.startswith("vit_") or arch not in timm.list_models():
        raise ValueError(f"name must be a timm vision transformer (timm.list_models('vit_*')), got {name!r}")

    def build():
        vit = timm.create_model(name, pretrained=False, num_classes=0, in_chans=in_channels, **kwargs)
        if not isinstance(vit, VisionTransformer):
            raise ValueError(f"name must be a timm vision transformer (timm.list_models('vit_*')), got {name!r}")
        return vit, nn.Linear(vit.num_features, num_classes)

    if seed is None:
        features, head = build()
    else:
        with torch_seeded(seed):
            features, head = build()
    source = RANDOM_INIT
    if pretrained_path is not None:
        path = Path(pretrained_path).expanduser()
        _load(features, path, name)
        source = str(path)
    return ViTBackbone(features, head, source)
