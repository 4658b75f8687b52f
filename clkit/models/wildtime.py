"""Wild-Time's image backbones: the Yearbook CNN and the FMoW DenseNet-121.

Both are split as ``features`` (input -> penultimate vector) and ``head`` (a linear layer
to the logits), like :class:`clkit.models.MLP`, so that a strategy can reach the
penultimate features (CORAL, MoCo+SML in :mod:`clkit.temporal.learners`).

- :class:`YearbookCNN` -- Wild-Time's ``YearbookNetwork`` re-derived: four blocks of
  ``Conv2d(3x3, 32 channels, padding 1) -> BatchNorm2d -> ReLU -> MaxPool2d(2)``, the
  spatial mean of the last block (32 features), a linear head. Wild-Time feeds it
  32x32 portraits with 3 channels.
- :func:`densenet121` -- torchvision's DenseNet-121 as Wild-Time's ``FMoWNetwork`` uses it:
  the convolutional ``features``, then ReLU, global average pooling (1024 features) and a
  linear head. Wild-Time starts from ImageNet weights; clkit downloads nothing, so the
  weights come from a local state-dict file when one is given and the network is
  randomly initialised otherwise (:data:`DenseNet121.weights_source` says which).
- :func:`make_wildtime_backbone` -- a backbone by name (notebook 03's ``backbone``).
- :func:`check_backbone_weights` -- the ImageNet weights file a run needs, checked before
  anything is built; a missing file is refused naming it and where to get it
  (:data:`IMAGENET_WEIGHTS`: torchvision's ``DenseNet121_Weights.IMAGENET1K_V1``).
"""

from __future__ import annotations

import re
from pathlib import Path

import torch
from torch import nn

from .._validate import check_choice, check_int

__all__ = ["YearbookCNN", "DenseNet121", "densenet121", "make_wildtime_backbone", "describe_backbone", "penultimate",
           "BACKBONES", "IMAGENET_WEIGHTS", "check_backbone_weights", "load_densenet121_state"]

#: torchvision's ImageNet DenseNet-121 (``DenseNet121_Weights.IMAGENET1K_V1``, the weights Wild-Time's
#: ``FMoWNetwork`` loads with ``densenet121(pretrained=True)``): where it is, and its digest as torchvision
#: documents it -- the file name carries the first 8 hex digits of the file's SHA-256, which
#: ``torch.hub.load_state_dict_from_url(check_hash=True)`` checks
IMAGENET_WEIGHTS = {
    "name": "densenet121-a639ec97.pth",
    "url": "https://download.pytorch.org/models/densenet121-a639ec97.pth",
    "sha256_prefix": "a639ec97",
    "num_params": 7_978_856,
    "how": ("python -c \"import torch, torchvision; torch.save(torchvision.models.densenet121("
            "weights='IMAGENET1K_V1').state_dict(), 'densenet121-a639ec97.pth')\" on a machine with network, or "
            "download https://download.pytorch.org/models/densenet121-a639ec97.pth (its SHA-256 starts with "
            "a639ec97); torchvision's own cache keeps it in ~/.cache/torch/hub/checkpoints/"),
}


def check_backbone_weights(backbone_weights, *, backbone: str = "densenet121", required: bool = False):
    """The ImageNet weights file of a run, checked before anything is built; ``None`` where none is given.

    Parameters
    ----------
    backbone_weights : str or path-like
        A local file with torchvision's ``densenet121`` state dict; ``""`` or ``None``: none.
    backbone : str
        The run's backbone; weights are for ``"densenet121"`` only.
    required : bool
        The parameter set needs ImageNet weights (the ``paper`` set: Wild-Time starts FMoW's
        DenseNet-121 from them); a missing or absent file then raises ``ValueError`` naming it
        and where to get it (:data:`IMAGENET_WEIGHTS`).

    Returns
    -------
    Path or None

    Examples
    --------
    >>> check_backbone_weights("") is None
    True
    >>> check_backbone_weights("", required=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: backbone_weights is required by this parameter set ...
    >>> check_backbone_weights("w.pth", backbone="mlp")
    Traceback (most recent call last):
    ...
    ValueError: backbone_weights is for backbone='densenet121' only, got backbone='mlp' with backbone_weights='w.pth'
    """
    if backbone_weights is not None and not isinstance(backbone_weights, (str, Path)):
        raise TypeError(f"backbone_weights must be a path (str), got {type(backbone_weights).__name__}")
    given = str(backbone_weights or "")
    if given and backbone != "densenet121":
        raise ValueError(f"backbone_weights is for backbone='densenet121' only, got backbone={backbone!r} "
                         f"with backbone_weights={given!r}")
    where = (f"get torchvision's ImageNet DenseNet-121, {IMAGENET_WEIGHTS['name']} ({IMAGENET_WEIGHTS['url']}, "
             f"SHA-256 starting {IMAGENET_WEIGHTS['sha256_prefix']}): {IMAGENET_WEIGHTS['how']}")
    if not given:
        if required and backbone == "densenet121":
            raise ValueError("backbone_weights is required by this parameter set (Wild-Time starts DenseNet-121 from "
                             f"ImageNet weights), got ''; {where}; then pass -p backbone_weights PATH")
        return None
    path = Path(given).expanduser()
    if not path.is_file():
        raise ValueError(f"backbone_weights must be a local file with densenet121's ImageNet state dict, got "
                         f"{given!r} (no such file: {path.resolve()}); {where}")
    return path


#: notebook 03's backbones: "mlp" (clkit.models.MLP) and Wild-Time's two image networks
BACKBONES = ("mlp", "yearbook_cnn", "densenet121")


def _check_image_shape(input_shape, name: str) -> tuple:
    shape = tuple(int(s) for s in input_shape)
    if len(shape) != 3 or min(shape) < 1:
        raise ValueError(f"input_shape must be (channels, height, width) for the {name} backbone, got {input_shape!r}")
    return shape


class _GlobalMean(nn.Module):
    """Mean over the spatial dimensions: (N, C, H, W) -> (N, C)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=(2, 3))


class YearbookCNN(nn.Module):
    """Wild-Time's Yearbook network: 4 conv blocks of 32 channels, a spatial mean, a linear head.

    Parameters
    ----------
    in_channels : int
        Input channels (Wild-Time: 3).
    num_classes : int
    width : int
        Channels of every block (Wild-Time: 32).

    Attributes
    ----------
    features : nn.Sequential
        (N, C, H, W) -> (N, width): the four blocks, then the mean over H and W.
    head : nn.Linear
        (N, width) -> (N, num_classes).

    Examples
    --------
    >>> net = YearbookCNN(3, 2)
    >>> net(torch.zeros(4, 3, 32, 32)).shape, net.features(torch.zeros(4, 3, 32, 32)).shape
    (torch.Size([4, 2]), torch.Size([4, 32]))
    """

    def __init__(self, in_channels: int = 3, num_classes: int = 2, width: int = 32):
        super().__init__()
        in_channels = check_int("in_channels", in_channels, low=1)
        num_classes = check_int("num_classes", num_classes, low=1)
        width = check_int("width", width, low=1)

        def block(c_in):
            return nn.Sequential(nn.Conv2d(c_in, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
                                 nn.MaxPool2d(2))

        self.features = nn.Sequential(block(in_channels), block(width), block(width), block(width), _GlobalMean())
        self.head = nn.Linear(width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


class DenseNet121(nn.Module):
    """torchvision's DenseNet-121 as Wild-Time's FMoW network: features, ReLU, global pool, linear head.

    Build it with :func:`densenet121`.

    Attributes
    ----------
    features : nn.Sequential
        (N, C, H, W) -> (N, 1024).
    head : nn.Linear
        (N, 1024) -> (N, num_classes).
    weights_source : str
        Where the convolutional weights came from (a file, or "random initialisation").
    """

    def __init__(self, encoder: nn.Module, num_classes: int, weights_source: str):
        super().__init__()
        self.features = nn.Sequential(encoder, nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(1024, num_classes)
        self.weights_source = weights_source

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


_OLD_KEY = re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$")


def load_densenet121_state(path) -> dict:
    """The ``features.*`` tensors of a torchvision DenseNet-121 state-dict file, keys as the module names them.

    torchvision's published ``densenet121-a639ec97.pth`` names the dense layers' entries the old
    way (``denselayer1.norm.1.weight``); like torchvision's own loader, they are renamed to the
    module's names (``denselayer1.norm1.weight``). A file saved from
    ``torchvision.models.densenet121(...).state_dict()`` already has them. The 1000-class
    ``classifier.*`` entries are dropped (the head is new: 62 classes for FMoW).

    Parameters
    ----------
    path : path-like
        A file written by ``torch.save`` (read with ``weights_only=True``).

    Returns
    -------
    dict
        ``{key: tensor}`` without the classifier's entries.
    """
    state = torch.load(Path(path), map_location="cpu", weights_only=True)
    if not isinstance(state, dict):
        raise ValueError(f"weights: {str(path)!r} holds a {type(state).__name__}, not a state dict")
    out = {}
    for key, value in state.items():
        if key.startswith("classifier."):
            continue
        m = _OLD_KEY.match(key)
        out[m.group(1) + m.group(2) if m else key] = value
    return out


def densenet121(num_classes: int, in_channels: int = 3, weights=None) -> DenseNet121:
    """DenseNet-121 (torchvision) with a ``num_classes`` head; ImageNet weights only from a local file.

    Parameters
    ----------
    num_classes : int
    in_channels : int
        Input channels; other than 3, the first convolution is replaced (and not loaded).
    weights : path-like, optional
        A local file holding torchvision's ``densenet121`` ImageNet state dict (the
        classifier's entries are ignored). ``None``: random initialisation (clkit never
        downloads weights).

    Examples
    --------
    >>> net = densenet121(62)
    >>> net(torch.zeros(2, 3, 32, 32)).shape, net.weights_source
    (torch.Size([2, 62]), 'random initialisation (no ImageNet weights file given)')
    """
    from torchvision.models import densenet121 as tv_densenet121

    num_classes = check_int("num_classes", num_classes, low=1)
    in_channels = check_int("in_channels", in_channels, low=1)
    net = tv_densenet121(weights=None)
    source = "random initialisation (no ImageNet weights file given)"
    if weights is not None and str(weights) != "":
        path = Path(weights).expanduser()
        if not path.is_file():
            raise ValueError("weights must be a local file with densenet121's ImageNet state dict, got "
                             f"{str(weights)!r} (not a file)")
        state = load_densenet121_state(path)
        missing, unexpected = net.load_state_dict(state, strict=False)
        missing = [k for k in missing if not k.startswith("classifier.") and not k.endswith("num_batches_tracked")]
        if missing or unexpected:
            raise ValueError(f"weights: {str(path)!r} is not a densenet121 state dict (missing {missing[:3]}, "
                             f"unexpected {list(unexpected)[:3]})")
        source = f"ImageNet weights from {path}"
    if in_channels != 3:
        net.features.conv0 = nn.Conv2d(in_channels, 64, kernel_size=7, stride=2, padding=3, bias=False)
        source += f"; first convolution new for {in_channels} input channels"
    return DenseNet121(net.features, num_classes, source)


def make_wildtime_backbone(name: str, input_shape, num_classes: int, *, hidden=(64,), weights=None) -> nn.Module:
    """Notebook 03's backbone ``name`` for inputs of ``input_shape`` (built under the caller's seed).

    Parameters
    ----------
    name : {"mlp", "yearbook_cnn", "densenet121"}
        ``"mlp"``: :class:`clkit.models.MLP` with ``hidden`` layers over the flattened input;
        ``"yearbook_cnn"``: :class:`YearbookCNN`; ``"densenet121"``: :func:`densenet121`.
    input_shape : tuple
        One input's shape, ``(C, H, W)`` for the image backbones.
    num_classes : int
    hidden : sequence of int
        MLP widths (ignored by the image backbones).
    weights : path-like, optional
        densenet121 only: a local ImageNet state-dict file.

    Examples
    --------
    >>> type(make_wildtime_backbone("yearbook_cnn", (3, 32, 32), 2)).__name__
    'YearbookCNN'
    >>> make_wildtime_backbone("resnet", (8,), 2)
    Traceback (most recent call last):
    ...
    ValueError: backbone must be one of ['mlp', 'yearbook_cnn', 'densenet121'], got 'resnet'
    """
    import numpy as np

    from .mlp import MLP

    check_choice("backbone", name, list(BACKBONES))
    if name == "mlp":
        return MLP(int(np.prod(input_shape)), num_classes, hidden=tuple(hidden))
    shape = _check_image_shape(input_shape, name)
    if name == "yearbook_cnn":
        return YearbookCNN(shape[0], num_classes)
    return densenet121(num_classes, shape[0], weights=weights)


def penultimate(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``model.features(x)`` flattened to (N, d): the penultimate features of a features + head backbone.

    Examples
    --------
    >>> penultimate(YearbookCNN(3, 2), torch.zeros(2, 3, 16, 16)).shape
    torch.Size([2, 32])
    """
    if not hasattr(model, "features"):
        raise TypeError(f"model must have a 'features' submodule (features + head), got {type(model).__name__}")
    return torch.flatten(model.features(x), 1)



def describe_backbone(name: str, *, hidden=(64,), weights=None) -> str:
    """One line saying which backbone a run trains and where its initial weights come from.

    Examples
    --------
    >>> describe_backbone("mlp", hidden=[64])
    'MLP with hidden layers [64] (random initialisation)'
    >>> describe_backbone("densenet121")
    "torchvision DenseNet-121 as Wild-Time's FMoW network, random initialisation (no ImageNet weights file given)"
    """
    check_choice("backbone", name, list(BACKBONES))
    if name == "mlp":
        return f"MLP with hidden layers {list(hidden)} (random initialisation)"
    if name == "yearbook_cnn":
        return "Wild-Time's Yearbook CNN (4 conv blocks of 32 channels; random initialisation)"
    source = (f"ImageNet weights from {Path(weights).expanduser()}" if weights
              else "random initialisation (no ImageNet weights file given)")
    return f"torchvision DenseNet-121 as Wild-Time's FMoW network, {source}"
