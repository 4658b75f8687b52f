"""Local seeding for torch code that draws from torch's global generator (module init)."""

from __future__ import annotations

import contextlib

import torch

__all__ = ["torch_seeded"]


@contextlib.contextmanager
def torch_seeded(seed: int):
    """Run the block with torch's CPU generator seeded to ``seed``; restore it afterwards.

    Use it around model construction so results depend on ``seed`` only and the
    caller's global random state is untouched.

    Examples
    --------
    >>> with torch_seeded(0):
    ...     a = torch.rand(2)
    >>> with torch_seeded(0):
    ...     b = torch.rand(2)
    >>> bool((a == b).all())
    True
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
