"""Builders shared by the strategy tests: tiny Gaussian-blob streams and a batch-norm model (DER,
MEMO, FOSTER, TagFex), template images and a tiny ViT (L2P, CODA-Prompt, HiDe-Prompt, EASE, MOS),
and the meta-device run."""

import torch
from torch import nn

from clkit import device as dv
from clkit.models.vit import vit_backbone
from clkit.strategies import Task


class TinyBN(nn.Module):
    """``features`` with batch normalisation, a linear ``head``."""

    def __init__(self, d_in=4, d=8, num_classes=6):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(d_in, d), nn.BatchNorm1d(d), nn.ReLU())
        self.head = nn.Linear(d, num_classes)

    def forward(self, x):
        return self.head(self.features(x))


def blob_stream(num_tasks=3, n=60, seed=0, d=4, spread=3.0):
    """Task ``t`` holds classes ``2t, 2t + 1``, each a Gaussian blob around its own mean."""
    g = torch.Generator().manual_seed(seed)
    means = spread * torch.randn(2 * num_tasks, d, generator=g)
    tasks = []
    for t in range(num_tasks):
        y = torch.tensor([2 * t, 2 * t + 1] * (n // 2))
        tasks.append(Task(means[y] + torch.randn(n, d, generator=g), y, task_id=t))
    return tasks


def state(module):
    """A detached copy of ``module``'s state dict."""
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def tiny_vit(num_classes=4, seed=0):
    return vit_backbone(num_classes=num_classes, tiny=True, seed=seed)


def images(n, classes, seed=0, noise=0.5):
    """Class ``c`` is a fixed random 32x32 RGB template (the same for every seed) plus noise: separable by
    content, not by position (a random ViT's attention pools over positions almost uniformly)."""
    templates = torch.randn(8, 3, 32, 32, generator=torch.Generator().manual_seed(100))
    g = torch.Generator().manual_seed(seed)
    y = torch.tensor([classes[i % len(classes)] for i in range(n)])
    return templates[y] + noise * torch.randn(n, 3, 32, 32, generator=g), y


def two_tasks(n, seed=0):
    """Task 0 of classes 0, 1 and task 1 of classes 2, 3, ``n`` images each (:func:`images`)."""
    xa, ya = images(n, [0, 1], seed=seed)
    xb, yb = images(n, [2, 3], seed=seed + 1)
    return Task(xa, ya, task_id=0), Task(xb, yb, task_id=1)


def pretrained_like(num_classes=4, seed=0):
    """The tiny ViT with its blocks' linear layers at std 1/sqrt(fan_in) (timm's 0.02 makes the blocks nearly
    the identity, so prompts would barely change anything; a pre-trained ViT has no such problem)."""
    net = tiny_vit(num_classes, seed)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in net.features.blocks.modules():
            if isinstance(m, nn.Linear):
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) / m.in_features ** 0.5)
    return net


def assert_trains_on_meta(s, tasks, epochs):
    """Train ``s`` (built with ``device=meta``) on ``tasks`` and predict under a device audit: every
    tensor on ``meta``, nothing read inside a step, no CPU tensor mixed in."""
    meta = torch.device("meta")
    with dv.DeviceAudit(meta):
        for t in tasks:
            assert len(s.train_task(t)) == epochs
        out = s.predict(torch.zeros(3, 3, 32, 32))
    assert out.device == meta and all(p.device == meta for p in s.model.parameters())
