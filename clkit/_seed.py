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
    """Run the block with torch's generators seeded to ``seed``; restore them afterwards.

    The CPU generator, and every CUDA device's generator once CUDA is initialised in this process
    (``torch.manual_seed`` seeds them; ``fork_rng`` restores them), so draws on a GPU inside the
    block are seeded locally too (issue 55). Before CUDA is initialised, CUDA's lazy seeding is left
    to torch: forking it would initialise CUDA here, which breaks workers forked later.

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
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    devices = list(range(torch.cuda.device_count())) if cuda else []
    with _GLOBAL_GENERATOR, torch.random.fork_rng(devices=devices):
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
