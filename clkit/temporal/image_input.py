"""Images kept as uint8 and turned into the network's float inputs one batch at a time, on the device.

FMoW at 224 px is 141,696 images of 3 x 224 x 224: 21.3 GB as the uint8 pixels of the file,
85.3 GB as float32. Notebook 03 moves a stream's periods to the run's device once (the device
rule: tensors move at task boundaries), so held as float32 they need an H200-class card; held as
uint8 they fit an 80 GB H100 beside DenseNet-121's training memory
(:mod:`clkit.temporal.memory_plan`). :class:`ImageInput` is the first layer of such a network's
``features``: a uint8 batch ``x`` becomes

.. math:: x' = \\frac{x / 255 - \\mu_c}{\\sigma_c}

in float32 (per channel ``c``; ``mu = 0, sigma = 1`` for ``normalize="none"``), the same
operations, in the same order and precision, as :func:`clkit.data.temporal.load_wild_time`'s
float path (``astype(float32) / 255``, then ``-= mean``, ``/= std``), so the numbers agree
(``tests/test_temporal_image_input.py`` checks a fabricated FMoW-shaped file end to end). A
floating-point batch passes through unchanged, so a strategy may convert a batch itself first
(:func:`model_input`: MoCo-SML augments the float view) and the layer does not convert twice.
"""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn

from .._validate import check_choice

__all__ = ["ImageInput", "with_image_input", "model_input"]


class ImageInput(nn.Module):
    """uint8 images (N, C, H, W) -> float32 ``(x / 255 - mean) / std``; float inputs unchanged.

    Parameters
    ----------
    normalize : {"none", "imagenet"}
        The per-channel mean and std (:data:`clkit.data.temporal.NORMALIZE`) applied after
        scaling to [0, 1].
    channels : int
        Image channels (``"imagenet"`` needs 3).

    Examples
    --------
    >>> layer = ImageInput("imagenet")
    >>> x = torch.full((1, 3, 2, 2), 255, dtype=torch.uint8)
    >>> [round(v, 4) for v in layer(x)[0, :, 0, 0].tolist()]      # (1 - mean) / std per channel
    [2.2489, 2.4286, 2.64]
    >>> y = torch.zeros(1, 3, 2, 2)
    >>> layer(y) is y
    True
    """

    def __init__(self, normalize: str = "none", channels: int = 3):
        super().__init__()
        from ..data.temporal import NORMALIZE

        self.normalize = check_choice("normalize", normalize, list(NORMALIZE))
        stats = NORMALIZE[normalize]
        if stats is not None and channels != len(stats[0]):
            raise ValueError(f"normalize={normalize!r} needs {len(stats[0])}-channel images, got channels={channels}")
        mean, std = stats if stats is not None else ((0.0,) * channels, (1.0,) * channels)
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1), persistent=False)
        self._affine = stats is not None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_floating_point(x):
            return x
        out = x.to(torch.float32) / 255.0
        if self._affine:
            out = out - self.mean
            out = out / self.std
        return out

    def extra_repr(self) -> str:
        return f"uint8 -> float32, normalize={self.normalize!r}"


def with_image_input(model: nn.Module, normalize: str, channels: int = 3) -> nn.Module:
    """``model`` converting uint8 images itself: :class:`ImageInput` first in its ``features``.

    A model with ``features`` and ``head`` (Wild-Time's networks; CORAL and MoCo-SML call
    ``features`` directly) gets ``features = Sequential(input=ImageInput, net=features)``; any
    other model is wrapped whole (``Sequential(input=ImageInput, net=model)``). No parameters are
    added, so the initial weights under a seed are unchanged.

    Examples
    --------
    >>> from clkit.models.wildtime import make_wildtime_backbone
    >>> m = with_image_input(make_wildtime_backbone("yearbook_cnn", (1, 32, 32), 2), "none", channels=1)
    >>> m(torch.zeros(3, 1, 32, 32, dtype=torch.uint8)).shape, type(m.features.input).__name__
    (torch.Size([3, 2]), 'ImageInput')
    """
    layer = ImageInput(normalize, channels)
    if hasattr(model, "features") and hasattr(model, "head"):
        model.features = nn.Sequential(OrderedDict(input=layer, net=model.features))
        return model
    return nn.Sequential(OrderedDict(input=layer, net=model))


def model_input(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``x`` as ``model`` sees it after its :class:`ImageInput` (``x`` itself where it has none or ``x`` is float).

    Examples
    --------
    >>> from clkit.models.wildtime import make_wildtime_backbone
    >>> m = with_image_input(make_wildtime_backbone("yearbook_cnn", (1, 32, 32), 2), "none", channels=1)
    >>> model_input(m, torch.full((1, 1, 32, 32), 255, dtype=torch.uint8)).max().item()
    1.0
    """
    if torch.is_floating_point(x):
        return x
    for module in model.modules():
        if isinstance(module, ImageInput):
            return module(x)
    return x
