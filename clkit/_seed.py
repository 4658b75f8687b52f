"""Local torch state: seeding for code that draws from the global generator, and thread count."""

from __future__ import annotations

import contextlib
import threading

import torch

__all__ = ["torch_seeded", "torch_threads"]

#: held for the whole of a torch_seeded block: torch's CPU generator is one per process, so two
#: threads seeding and drawing from it at once would take each other's numbers
_GLOBAL_GENERATOR = threading.RLock()


@contextlib.contextmanager
def torch_seeded(seed: int):
    """Run the block with torch's CPU generator seeded to ``seed``; restore it afterwards.

    Use it around model construction so results depend on ``seed`` only and the
    caller's global random state is untouched. The block holds a process-wide lock: threads
    that build models side by side (e.g. :func:`clkit.edge.experiment.run_learners`) take
    turns at the one global generator instead of drawing each other's numbers, so keep the
    block to the draws that need it.

    Examples
    --------
    >>> with torch_seeded(0):
    ...     a = torch.rand(2)
    >>> with torch_seeded(0):
    ...     b = torch.rand(2)
    >>> bool((a == b).all())
    True
    """
    with _GLOBAL_GENERATOR, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


@contextlib.contextmanager
def torch_threads(num_threads: int | None = 1):
    """Run the block with ``num_threads`` torch intra-op threads; restore the setting afterwards.

    Small models train fastest on one thread, and one thread does not oversubscribe a
    shared CPU. ``None`` leaves the setting alone.

    Examples
    --------
    >>> before = torch.get_num_threads()
    >>> with torch_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    from ._validate import check_int

    before = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(check_int("num_threads", num_threads, low=1))
    try:
        yield
    finally:
        torch.set_num_threads(before)
