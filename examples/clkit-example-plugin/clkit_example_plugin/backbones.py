"""A backbone factory for notebook 04 (``backbone: clkit_example_plugin.backbones:tiny_cnn``)."""

from torch import nn


def tiny_cnn(in_channels: int, num_classes: int, image_size: int) -> nn.Module:
    """One convolution, global average pooling, a linear head: (B, C, S, S) -> (B, num_classes)."""
    return nn.Sequential(nn.Conv2d(in_channels, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(16, num_classes))
