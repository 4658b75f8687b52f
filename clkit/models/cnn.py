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
- :func:`efficientnet_b1` and :func:`resnet34_bn` -- torchvision's own EfficientNet-B1 and
  ResNet-34, batch normalisation included (the paper's mid-size and large backbones as
  torchvision and Avalanche build them), wrapped in :class:`TorchvisionNet` to give them the
  same ``features``/``head`` layout.
- :class:`CifarResNet` and :func:`resnet32` -- the CIFAR ResNet of He et al. (2016, section 4.2)
  as PyCIL builds it for its class-incremental methods: 3x3 stem of 16 channels, three stages of
  basic blocks (16, 32, 64 channels), batch normalisation, parameter-free (option A) shortcuts;
  ResNet-32 has 5 blocks per stage, 64-d features and about 0.46 M parameters.

No batch normalisation in :class:`SmallCNN` and :class:`WideVGG9`: per-sample
gradients (EWC's Fisher, MAS) and tiny replay batches are then well defined.
:class:`ResNet` uses group normalisation for the same reason. The two torchvision
backbones keep batch normalisation, as the paper ran them; see :class:`TorchvisionNet`
for what that means for strategies.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["SmallCNN", "WideVGG9", "AuthorsWideVGG9", "ResNet", "TorchvisionNet", "efficientnet_b1", "resnet34_bn",
           "resnet18_bn", "CifarResNet", "resnet32", "make_backbone", "laid_out", "BACKBONES", "MEMORY_FORMATS", "MIN_IMAGE_SIZE"]


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


class AuthorsWideVGG9(nn.Module):
    """The M2I/I2M authors' Wide-VGG9 (``wide_vgg9_bn``): batch norm after every conv, flattened pools.

    As their ``VGGSlim(config="wide_VGG9", batch_norm=True, init_weights=False)`` builds it
    (lifelonglab/M2I_I2M_benchmark, models/VGGSlim.py, read, not copied): six 3x3 convs
    (64, M, 128, M, 256, 256, M, 512, 512, M), each followed by ``BatchNorm2d`` and ReLU; the
    four 2x2 max-pools are flattened as they are (``512 * (image_size // 16) ** 2`` inputs,
    8192 at the paper's 64x64; no average pool), then ``Linear(., 512)``-ReLU-``Linear(512,
    512)``-ReLU and the head; PyTorch's default initialisation. The paper's "4.5M parameters"
    is the convolutions alone (4,500,864 for RGB); the whole network has about 9.0M at 64x64.
    clkit's ``wide_vgg9`` (:class:`WideVGG9`) is a lighter variant (no batch norm, global
    average pool, 128-unit hidden layers).

    Examples
    --------
    >>> import torch
    >>> net = AuthorsWideVGG9(3, 10, image_size=64)
    >>> net(torch.zeros(2, 3, 64, 64)).shape, net.features[-4].in_features
    (torch.Size([2, 10]), 8192)
    >>> sum(p.numel() for m in net.modules() if isinstance(m, nn.Conv2d) for p in m.parameters())
    4500864
    """

    def __init__(self, in_channels: int = 3, num_classes: int = 10, image_size: int = 64):
        super().__init__()
        if image_size < 16:
            raise ValueError(f"image_size must be >= 16 for wide_vgg9_bn (four 2x2 pools), got {image_size!r}")
        layers, c = [], in_channels
        for v in (64, "M", 128, "M", 256, 256, "M", 512, 512, "M"):
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(c, v, 3, padding=1), nn.BatchNorm2d(v), nn.ReLU()]
                c = v
        flat = c * (image_size // 16) ** 2
        layers += [nn.Flatten(), nn.Linear(flat, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU()]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(512, num_classes)

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


class TorchvisionNet(nn.Module):
    """A torchvision classifier split into ``features`` (an ``nn.Sequential`` ending in a flat
    vector) and a linear ``head``, the layout :class:`SmallCNN` has and the strategies rely on
    (PNN's columns, CWR*'s consolidated output layer, ``head.out_features``).

    Built by :func:`efficientnet_b1` and :func:`resnet34_bn`; the modules are torchvision's own,
    so the parameters are the torchvision model's, one for one (only the first convolution is
    replaced when ``in_channels != 3``).

    **Batch normalisation.** These backbones keep running statistics, updated by every forward
    pass in training mode. clkit's strategies evaluate in evaluation mode
    (:meth:`clkit.strategies.Strategy.predict`; EWC's Fisher, MAS and the task-free scores
    switch to it too, and the distillation and generative-replay snapshots are put in it), so
    evaluation uses the running statistics. Two consequences to know when reading results:

    - freezing parameters (``requires_grad_(False)``: PNN's earlier columns, CWR*'s
      representation after the first task) does not freeze the running statistics, which keep
      following the newer tasks' batches in training mode: with these backbones PNN's earlier
      columns, and so its predictions on earlier tasks, do change (measured), and CWR*'s
      representation drifts;
    - a training batch must hold more than one value per channel at every normalisation layer:
      the final feature map is ``ceil(image_size / 32)`` pixels wide, so images of at least
      :data:`MIN_IMAGE_SIZE` (33) pixels make any batch, even a task's last batch of one row,
      valid.

    Parameters
    ----------
    features : nn.Sequential
        Ends in a flat ``(N, D)`` vector.
    head : nn.Linear
        ``D -> num_classes``.

    Examples
    --------
    >>> net = TorchvisionNet(nn.Sequential(nn.Flatten()), nn.Linear(12, 5))
    >>> net(torch.zeros(2, 3, 2, 2)).shape
    torch.Size([2, 5])
    """

    def __init__(self, features: nn.Sequential, head: nn.Linear):
        super().__init__()
        self.features = features
        self.head = head

    def forward(self, x):
        return self.head(self.features(x))


def _first_conv(conv: nn.Conv2d, in_channels: int) -> nn.Conv2d:
    """``conv`` itself for 3 input channels, else a fresh one with ``in_channels`` inputs and the same
    outputs, kernel, stride, padding and bias, initialised as torchvision initialises both models'
    convolutions (Kaiming normal, ``fan_out``; the bias, if any, zero)."""
    if in_channels == conv.in_channels:
        return conv
    new = nn.Conv2d(in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                    bias=conv.bias is not None)
    nn.init.kaiming_normal_(new.weight, mode="fan_out", nonlinearity="relu")
    if new.bias is not None:
        nn.init.zeros_(new.bias)
    return new


def efficientnet_b1(in_channels: int = 3, num_classes: int = 10) -> TorchvisionNet:
    """EfficientNet-B1 from torchvision (``torchvision.models.efficientnet_b1(weights=None,
    num_classes=...)``), batch normalisation and SiLU as torchvision builds it.

    ``features`` is torchvision's ``features``, ``avgpool``, a flatten and the classifier's
    dropout (p = 0.2); ``head`` is the classifier's ``nn.Linear(1280, num_classes)``. The stem
    convolution (3x3, stride 2, padding 1, no bias) is replaced when ``in_channels != 3``.

    In training mode its dropout and stochastic depth draw from torch's global generator (seeded
    per task by the streams).

    Parameters (measured at 64x64 with torchvision 0.29, RGB input; the count does not depend on
    the image size): 6,525,994 at 10 classes, 6,590,044 at 60 (notebook 04's six tasks),
    6,641,284 at 100 classes, 7,794,184 at 1000 classes. The paper's "7.8M parameters" is this
    last count, torchvision's ImageNet-sized head; with the benchmark's 10 classes per task the
    network is 6.5-6.6 M. A 1-channel stem has 576 fewer.

    Examples
    --------
    >>> import torch
    >>> net = efficientnet_b1(3, 10)
    >>> net(torch.zeros(2, 3, 64, 64)).shape
    torch.Size([2, 10])
    >>> sum(p.numel() for p in net.parameters()), sum(p.numel() for p in efficientnet_b1(3, 100).parameters())
    (6525994, 6641284)
    >>> efficientnet_b1(1, 10).features[0][0]
    Conv2d(1, 32, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)
    """
    from torchvision.models import efficientnet_b1 as tv_efficientnet_b1

    tv = tv_efficientnet_b1(weights=None, num_classes=num_classes)
    tv.features[0][0] = _first_conv(tv.features[0][0], in_channels)
    dropout, linear = tv.classifier
    return TorchvisionNet(nn.Sequential(*tv.features, tv.avgpool, nn.Flatten(), dropout), linear)


def resnet34_bn(in_channels: int = 3, num_classes: int = 10) -> TorchvisionNet:
    """ResNet-34 from torchvision (``torchvision.models.resnet34(weights=None, num_classes=...)``),
    with batch normalisation as torchvision builds it.

    ``features`` is ``conv1, bn1, relu, maxpool, layer1..layer4, avgpool`` and a flatten; ``head``
    is ``fc`` (``nn.Linear(512, num_classes)``). ``conv1`` (7x7, stride 2, padding 3, no bias) is
    replaced when ``in_channels != 3``. Unlike :class:`ResNet` (``"resnet34"``: group norm, a 3x3
    stride-1 stem, no max-pool), this is the ImageNet network unchanged.

    Parameters (measured at 64x64 with torchvision 0.29, RGB input; the count does not depend on
    the image size): 21,289,802 at 10 classes, 21,315,452 at 60 (notebook 04's six tasks),
    21,335,972 at 100 classes, 21,797,672 at 1000 classes. The paper reports 63.5M for its
    ResNet34: none of these counts comes near it (three times the ImageNet-headed 21.8 M), and
    we do not know what the paper counted. A 1-channel stem has 6,272 fewer.

    Examples
    --------
    >>> import torch
    >>> net = resnet34_bn(3, 10)
    >>> net(torch.zeros(2, 3, 64, 64)).shape
    torch.Size([2, 10])
    >>> sum(p.numel() for p in net.parameters()), sum(p.numel() for p in resnet34_bn(3, 100).parameters())
    (21289802, 21335972)
    >>> resnet34_bn(1, 10).features[0]
    Conv2d(1, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)
    """
    from torchvision.models import resnet34 as tv_resnet34

    tv = tv_resnet34(weights=None, num_classes=num_classes)
    conv1 = _first_conv(tv.conv1, in_channels)
    features = nn.Sequential(conv1, tv.bn1, tv.relu, tv.maxpool, tv.layer1, tv.layer2, tv.layer3, tv.layer4,
                             tv.avgpool, nn.Flatten())
    return TorchvisionNet(features, tv.fc)


def resnet18_bn(in_channels: int = 3, num_classes: int = 10) -> TorchvisionNet:
    """ResNet-18 from torchvision (``torchvision.models.resnet18(weights=None, num_classes=...)``),
    with batch normalisation: the network PyCIL trains from scratch on ImageNet-scale images (its
    ``resnet18``, torchvision's definition) and the EDGE paper's non-pretrained backbone beyond
    CIFAR (App. E.1.1). The same layout as :func:`resnet34_bn` (``features`` up to the flatten,
    ``head`` = ``fc``, ``nn.Linear(512, num_classes)``).

    Examples
    --------
    >>> import torch
    >>> net = resnet18_bn(3, 6)
    >>> net(torch.zeros(2, 3, 64, 64)).shape, sum(p.numel() for p in net.parameters())
    (torch.Size([2, 6]), 11179590)
    """
    from torchvision.models import resnet18 as tv_resnet18

    tv = tv_resnet18(weights=None, num_classes=num_classes)
    conv1 = _first_conv(tv.conv1, in_channels)
    features = nn.Sequential(conv1, tv.bn1, tv.relu, tv.maxpool, tv.layer1, tv.layer2, tv.layer3, tv.layer4,
                             tv.avgpool, nn.Flatten())
    return TorchvisionNet(features, tv.fc)


class _ShortcutA(nn.Module):
    """He et al.'s option-A shortcut: keep every ``stride``-th pixel, pad the channels with zeros
    up to ``cout`` (no parameters)."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.stride, self.pad = stride, cout - cin

    def forward(self, x):
        x = x[:, :, ::self.stride, ::self.stride]
        return torch.cat([x, x.new_zeros(x.shape[0], self.pad, *x.shape[2:])], 1) if self.pad else x


class _CifarBasic(nn.Module):
    """Basic block: conv3x3-BN-ReLU-conv3x3-BN, plus the shortcut, then ReLU."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.skip = nn.Identity() if stride == 1 and cin == cout else _ShortcutA(cin, cout, stride)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.body(x) + self.skip(x))


class CifarResNet(nn.Module):
    """The CIFAR ResNet of He et al. (2016, "Deep Residual Learning", section 4.2), as PyCIL's
    ``convs/cifar_resnet.py`` builds it (``resnet32`` is PyCIL's default CIFAR backbone).

    A 3x3 convolution to 16 channels, batch norm and ReLU; three stages of ``blocks`` basic blocks
    (16, 32, 64 channels; the first block of stages 2 and 3 has stride 2); global average pooling to
    a 64-d feature vector; a linear head. Depth is ``6 * blocks + 2``. Convolutions have no bias;
    every one is followed by batch normalisation. The shortcuts are He et al.'s option A, PyCIL's
    ``DownsampleA``: where a block halves the resolution and doubles the channels, the shortcut
    takes every second pixel and pads the channels with zeros, so it has no parameters.

    Differences from PyCIL, none of which changes the network at 32x32 input: the pooling is
    adaptive (PyCIL's ``AvgPool2d(8)`` assumes 32x32 input), the stem takes ``in_channels``
    planes, and ``forward`` returns logits (PyCIL returns a dict of feature maps and features; its
    incremental heads live outside the backbone). Initialisation follows PyCIL: convolutions
    N(0, 2 / (9 * out_channels)) (Kaiming normal, ``fan_out``), batch norm weight 1 and bias 0,
    head Kaiming normal (``fan_in``) with zero bias. It draws from torch's global generator (build
    under :func:`clkit._seed.torch_seeded` for a seeded network).

    Batch normalisation behaves as in :class:`TorchvisionNet` (running statistics, updated in
    training mode); the final feature map is ``ceil(image_size / 4)`` pixels wide, so any image of
    at least 5 pixels trains with a batch of one row.

    Parameters
    ----------
    in_channels, num_classes : int
    blocks : int
        Basic blocks per stage: 5 gives ResNet-32, 3 ResNet-20, 9 ResNet-56.

    Examples
    --------
    >>> import torch
    >>> net = CifarResNet(3, 10, blocks=1)
    >>> net.features(torch.zeros(2, 3, 32, 32)).shape, net(torch.zeros(2, 3, 32, 32)).shape
    (torch.Size([2, 64]), torch.Size([2, 10]))
    """

    def __init__(self, in_channels: int = 3, num_classes: int = 10, blocks: int = 5):
        from .._validate import check_int

        super().__init__()
        check_int("blocks", blocks, low=1)
        mods = [nn.Conv2d(in_channels, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
        c = 16
        for s, w in enumerate((16, 32, 64)):
            stage = []
            for b in range(blocks):
                stage.append(_CifarBasic(c, w, 2 if (b == 0 and s > 0) else 1))
                c = w
            mods.append(nn.Sequential(*stage))
        self.features = nn.Sequential(*mods, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(c, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        nn.init.kaiming_normal_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, x):
        return self.head(self.features(x))


def resnet32(in_channels: int = 3, num_classes: int = 10) -> CifarResNet:
    """ResNet-32 for CIFAR (:class:`CifarResNet` with 5 blocks per stage), PyCIL's ``resnet32``.

    ``features`` maps ``(N, C, H, W)`` to ``(N, 64)``; ``head`` is ``nn.Linear(64, num_classes)``.
    Parameters: 463,504 in ``features`` with RGB input (the stem's 432 weights and 32 batch-norm
    parameters; 23,360, 88,192 and 351,488 in the three stages), plus ``65 * num_classes`` in the
    head: 464,154 at 10 classes, 470,004 at 100. A 1-channel stem has 288 fewer.

    Examples
    --------
    >>> import torch
    >>> net = resnet32(3, 100)
    >>> net(torch.zeros(2, 3, 32, 32)).shape
    torch.Size([2, 100])
    >>> sum(p.numel() for p in net.features.parameters()), sum(p.numel() for p in net.parameters())
    (463504, 470004)
    """
    return CifarResNet(in_channels, num_classes, blocks=5)


BACKBONES = ("small_cnn", "wide_vgg9", "resnet18", "resnet34", "mlp", "resnet32", "wide_vgg9_bn", "efficientnet_b1",
             "resnet34_bn", "resnet18_bn")

#: smallest image side each batch-normalised backbone trains on with any batch (see :class:`TorchvisionNet`)
MIN_IMAGE_SIZE = {"efficientnet_b1": 33, "resnet34_bn": 33, "resnet18_bn": 33, "wide_vgg9_bn": 16}


#: memory formats a backbone's weights (and so its activations) can be laid out in
MEMORY_FORMATS = ("contiguous", "channels_last")


def make_backbone(name: str, in_channels: int, num_classes: int, image_size: int,
                  memory_format: str = "contiguous") -> nn.Module:
    """Build a backbone by name, one of :data:`BACKBONES`: ``"small_cnn"``, ``"wide_vgg9"``, ``"resnet18"``,
    ``"resnet34"`` (group norm), ``"mlp"``, PyCIL's CIFAR ``"resnet32"`` (:func:`resnet32`, batch norm), the
    curriculum authors' ``"wide_vgg9_bn"`` (:class:`AuthorsWideVGG9`), or the paper's batch-normalised
    torchvision networks
    ``"efficientnet_b1"`` (:func:`efficientnet_b1`) and ``"resnet34_bn"`` (:func:`resnet34_bn`), and PyCIL's
    ImageNet-scale ``"resnet18_bn"`` (:func:`resnet18_bn`).

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
    ValueError: backbone must be one of ['small_cnn', 'wide_vgg9', 'resnet18', 'resnet34', 'mlp', 'resnet32', 'wide_vgg9_bn', 'efficientnet_b1', 'resnet34_bn', 'resnet18_bn'], got 'vgg'
    >>> net = make_backbone("small_cnn", 3, 30, 32, memory_format="channels_last")
    >>> net.features[0].weight.is_contiguous(memory_format=torch.channels_last)
    True
    >>> net = make_backbone("resnet34_bn", 1, 30, 64, memory_format="channels_last")
    >>> net.head.out_features, net.features[0].weight.is_contiguous(memory_format=torch.channels_last)
    (30, True)
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
    if name == "resnet32":
        return resnet32(in_channels, num_classes)
    if name == "wide_vgg9_bn":
        return AuthorsWideVGG9(in_channels, num_classes, image_size)
    if name == "efficientnet_b1":
        return efficientnet_b1(in_channels, num_classes)
    if name == "resnet34_bn":
        return resnet34_bn(in_channels, num_classes)
    if name == "resnet18_bn":
        return resnet18_bn(in_channels, num_classes)
    return MLP(in_channels * image_size * image_size, num_classes, hidden=(256, 128))
