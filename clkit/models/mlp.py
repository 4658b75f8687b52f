"""Multi-layer perceptron."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["MLP"]


class MLP(nn.Module):
    """A ReLU multi-layer perceptron.

    Parameters
    ----------
    in_features : int
    out_features : int
    hidden : sequence of int
        Widths of the hidden layers (empty: a linear model).
    dropout : float

    Examples
    --------
    >>> net = MLP(4, 3, hidden=(8,))
    >>> net(torch.zeros(2, 4)).shape
    torch.Size([2, 3])
    """

    def __init__(self, in_features: int, out_features: int, hidden=(64,), dropout: float = 0.0):
        super().__init__()
        layers, width = [], in_features
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            if dropout:
                layers.append(nn.Dropout(dropout))
            width = h
        self.features = nn.Sequential(nn.Flatten(), *layers)
        self.head = nn.Linear(width, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))
