"""Convolutional backbones for image tasks (curriculum benchmark).

Each has ``features`` (an ``nn.Sequential`` ending in a flat vector) and a
linear ``head``, the layout the architectural strategies (PNN, CWR*) rely on.

- :class:`SmallCNN` -- two or three conv blocks, for smoke/default runs on a CPU.
- :class:`WideVGG9` -- the curriculum paper's small backbone: six 3x3 conv layers
  (widths ``64, 128, 256, 256, 512, 512`` times ``width``) and three fully
  connected layers (9 weight layers); about 4.5 M parameters at 64x64 input with
  ``width=1`` (the paper's count).
- :class:`ResNet` -- a ResNet with basic blocks; ``layers=(3, 4, 6, 3)`` is
  ResNet-34 (the paper's large backbone), ``(2, 2, 2, 2)`` ResNet-18.

No batch normalisation in :class:`SmallCNN` and :class:`WideVGG9`: per-sample
gradients (EWC's Fisher, MAS) and tiny replay batches are then well defined.
:class:`ResNet` uses group normalisation for the same reason.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["SmallCNN", "WideVGG9", "ResNet", "make_backbone", "laid_out", "BACKBONES", "MEMORY_FORMATS"]


class SmallCNN(nn.Module):
    """A small CNN: conv(3x3)-ReLU-maxpool blocks, global average pooling, linear head.

    Parameters
    ----------
    in_channels : int
    num_classes : int
    width : int
        Channels of the first block (doubled in each further block).
    blocks : int

    Examples
    --------
    >>> import torch
    >>> net = SmallCNN(3, 20, width=8)
    >>> net(torch.zeros(2, 3, 32, 32)).shape
    torch.Size([2, 20])
    """

    def __init__(self, in_channels: int = 3, num_classes: int = 10, width: int = 16, blocks: int = 3):
        super().__init__()
        layers, c = [], in_channels
        for b in range(blocks):
            w = width * 2 ** b
            layers += [nn.Conv2d(c, w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
            c = w
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(c, num_classes)

    def forward(self, x):
        return self.head(self.features(x))


class WideVGG9(nn.Module):
    """VGG-9: six 3x3 conv layers in four pooled stages, then two hidden FC layers and the head.

    Examples
    --------
    >>> import torch
    >>> net = WideVGG9(3, 60)
    >>> net(torch.zeros(1, 3, 64, 64)).shape
    torch.Size([1, 60])
    >>> round(sum(p.numel() for p in net.parameters()) / 1e6, 1)
    4.5
    """

    def __init__(self, in_channels: int = 3, num_classes: int = 10, width: float = 1.0, hidden: int = 128):
        super().__init__()
        cfg = [64, "M", 128, "M", 256, 256, "M", 512, 512, "M"]
        layers, c = [], in_channels
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                w = int(v * width)
                layers += [nn.Conv2d(c, w, 3, padding=1), nn.ReLU()]
                c = w
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                   nn.Linear(c, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x):
        return self.head(self.features(x))


class _Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.GroupNorm(min(32, cout // 4), cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.GroupNorm(min(32, cout // 4), cout))
        self.skip = (nn.Identity() if stride == 1 and cin == cout else
                     nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.GroupNorm(min(32, cout // 4), cout)))
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.body(x) + self.skip(x))


class ResNet(nn.Module):
    """ResNet with basic blocks and group normalisation.

    Parameters
    ----------
    in_channels, num_classes : int
    layers : tuple of int
        Blocks per stage; ``(3, 4, 6, 3)`` = ResNet-34.
    width : int
        Channels of the first stage (64 in ResNet-34).

    Examples
    --------
    >>> import torch
    >>> net = ResNet(3, 10, layers=(1, 1), width=8)
    >>> net(torch.zeros(2, 3, 32, 32)).shape
    torch.Size([2, 10])
    """

    def __init__(self, in_channels: int = 3, num_classes: int = 10, layers=(3, 4, 6, 3), width: int = 64):
        super().__init__()
        mods = [nn.Conv2d(in_channels, width, 3, 1, 1, bias=False), nn.GroupNorm(min(32, width // 4), width), nn.ReLU()]
        c = width
        for s, n in enumerate(layers):
            w = width * 2 ** s
            for b in range(n):
                mods.append(_Basic(c, w, 2 if (b == 0 and s > 0) else 1))
                c = w
        self.features = nn.Sequential(*mods, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(c, num_classes)

    def forward(self, x):
        return self.head(self.features(x))


BACKBONES = ("small_cnn", "wide_vgg9", "resnet18", "resnet34", "mlp")


#: memory formats a backbone's weights (and so its activations) can be laid out in
MEMORY_FORMATS = ("contiguous", "channels_last")


def make_backbone(name: str, in_channels: int, num_classes: int, image_size: int,
                  memory_format: str = "contiguous") -> nn.Module:
    """Build a backbone by name: ``"small_cnn"``, ``"wide_vgg9"``, ``"resnet18"``, ``"resnet34"`` or ``"mlp"``.

    ``memory_format="channels_last"`` lays the convolution weights out channel-innermost
    (``torch.channels_last``, NHWC); the convolutions then compute and return their activations in
    that layout, and pooling, ReLU and normalisation layers follow it. It is the same network: the
    weights at initialisation are equal and the outputs agree to float rounding -- but not bitwise,
    so a training run drifts apart from the contiguous one over many steps. On CPU it is faster
    (SmallCNN steps 20-40 % less time on one core, ``benchmarks/bench_strategies.py --only layout``);
    the MLP has no convolution weights and is unchanged.

    Examples
    --------
    >>> make_backbone("small_cnn", 3, 30, 32).head.out_features
    30
    >>> make_backbone("vgg", 3, 30, 32)
    Traceback (most recent call last):
    ...
    ValueError: backbone must be one of ['small_cnn', 'wide_vgg9', 'resnet18', 'resnet34', 'mlp'], got 'vgg'
    >>> net = make_backbone("small_cnn", 3, 30, 32, memory_format="channels_last")
    >>> net.features[0].weight.is_contiguous(memory_format=torch.channels_last)
    True
    """
    from .._validate import check_choice

    check_choice("backbone", name, list(BACKBONES))
    return laid_out(_build(name, in_channels, num_classes, image_size), memory_format)


def laid_out(model: nn.Module, memory_format: str) -> nn.Module:
    """``model`` with its 4-d weights in ``channels_last`` where ``memory_format="channels_last"``
    (converted in place, ``model.to(memory_format=...)``; other parameters are left as they are);
    ``"contiguous"``, PyTorch's default layout, leaves the model as it was built (a plugin factory
    that lays out its own model keeps its choice).

    Examples
    --------
    >>> conv = laid_out(nn.Conv2d(3, 4, 3), "channels_last")
    >>> conv.weight.is_contiguous(memory_format=torch.channels_last), conv.weight.is_contiguous()
    (True, False)
    >>> laid_out(conv, "nhwc")
    Traceback (most recent call last):
    ...
    ValueError: memory_format must be one of ['contiguous', 'channels_last'], got 'nhwc'
    """
    from .._validate import check_choice

    check_choice("memory_format", memory_format, list(MEMORY_FORMATS))
    return model.to(memory_format=torch.channels_last) if memory_format == "channels_last" else model


def _build(name, in_channels, num_classes, image_size):
    from .mlp import MLP

    if name == "small_cnn":
        return SmallCNN(in_channels, num_classes)
    if name == "wide_vgg9":
        return WideVGG9(in_channels, num_classes)
    if name == "resnet18":
        return ResNet(in_channels, num_classes, layers=(2, 2, 2, 2))
    if name == "resnet34":
        return ResNet(in_channels, num_classes, layers=(3, 4, 6, 3))
    return MLP(in_channels * image_size * image_size, num_classes, hidden=(256, 128))
