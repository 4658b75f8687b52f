"""Sliding windows over a time series, gathered on demand instead of stored.

A forecasting task holds one input window of ``context`` steps per target step. Stored as a
tensor ``(N, context, F)`` they repeat every step ``context`` times: at CESNET-TimeSeries24's
paper size (100 series, 40 weeks at 10 minutes, 12 features, two days of context, every target
step) the three taskifications' windows take about 134 GiB. :class:`WindowView` keeps the
series once (``base``, shape ``(rows, F)``) and the first row of every window (``starts``,
shape ``(N,)``); indexing it with a batch of window numbers gathers exactly those windows,
``base[starts[i] : starts[i] + context]`` for each ``i``, as one ``index_select``. The
values are copies of the same floats, so a batch drawn from a view is bitwise the batch
drawn from the stored windows (``tests/test_timeseries_windows.py``), and so is everything
trained on it.

It offers what :mod:`clkit.strategies` reads from a task's inputs: ``len``, ``shape``,
``dtype``, ``device``, ``to(device)`` (moves the series and the start rows, once) and
indexing by an integer, a slice, an integer tensor or array (the rows of a batch, on any
device). ``view[:]`` (or :meth:`materialise`) returns the stored windows.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["WindowView", "view_bytes"]


class WindowView:
    """Windows ``base[starts[i] : starts[i] + context]`` of a 2-D series, gathered when indexed.

    Parameters
    ----------
    base : Tensor, shape (rows, F)
        The series (several series concatenated along the rows), already scaled as the windows
        should read them.
    starts : Tensor of int64, shape (N,)
        The first row of every window; ``starts + context <= rows``.
    context : int
        Rows per window.

    Examples
    --------
    >>> base = torch.arange(12.0).reshape(6, 2)          # 6 steps, 2 features
    >>> v = WindowView(base, torch.tensor([0, 2, 3]), context=3)
    >>> len(v), tuple(v.shape)
    (3, (3, 3, 2))
    >>> v[torch.tensor([2, 0])][:, :, 0].tolist()        # windows 2 and 0, feature 0
    [[6.0, 8.0, 10.0], [0.0, 2.0, 4.0]]
    >>> v[1:].shape, v[1][0].tolist()
    (torch.Size([2, 3, 2]), [4.0, 5.0])
    >>> torch.equal(v[:], torch.stack([base[s:s + 3] for s in (0, 2, 3)]))
    True
    """

    def __init__(self, base: torch.Tensor, starts: torch.Tensor, context: int):
        if not isinstance(base, torch.Tensor) or base.ndim != 2:
            raise ValueError(f"base must be a 2-D tensor (rows, F), got {getattr(base, 'shape', type(base).__name__)}")
        starts = torch.as_tensor(starts, dtype=torch.int64)
        if starts.ndim != 1:
            raise ValueError(f"starts must be 1-D (one row per window), got shape {tuple(starts.shape)}")
        if not (isinstance(context, (int, np.integer)) and context >= 1):
            raise ValueError(f"context must be an integer >= 1, got {context!r}")
        if len(starts) and (int(starts.min()) < 0 or int(starts.max()) + int(context) > base.shape[0]):
            raise ValueError(f"windows of starts in [{int(starts.min())}, {int(starts.max())}] and context {context} "
                             f"leave base's {base.shape[0]} rows")
        self.base = base
        self.starts = starts.to(base.device)
        self.context = int(context)
        self._offsets = torch.arange(self.context, device=base.device)

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def shape(self) -> torch.Size:
        return torch.Size((len(self.starts), self.context, self.base.shape[1]))

    @property
    def ndim(self) -> int:
        return 3

    @property
    def dtype(self) -> torch.dtype:
        return self.base.dtype

    @property
    def device(self) -> torch.device:
        return self.base.device

    @property
    def nbytes(self) -> int:
        """Bytes the view holds (the series and the start rows), not the windows it stands for."""
        return self.base.numel() * self.base.element_size() + self.starts.numel() * 8

    def to(self, device, non_blocking: bool = True) -> "WindowView":
        """The view on ``device`` (``self`` when it is there already): the series and start rows move once."""
        from ..device import as_device, move

        device = as_device(device)
        if self.base.device == device or (device.index is None and self.base.device.type == device.type):
            return self
        moved = object.__new__(WindowView)   # checked once, where it was made: no read of the device here
        moved.base = move(self.base, device, non_blocking=non_blocking)
        moved.starts = move(self.starts, device, non_blocking=non_blocking)
        moved.context = self.context
        moved._offsets = torch.arange(self.context, device=moved.base.device)
        for name, value in vars(self).items():
            if name not in ("base", "starts", "context", "_offsets"):
                setattr(moved, name, value)
        return moved

    def _gather(self, starts: torch.Tensor) -> torch.Tensor:
        rows = (starts[:, None] + self._offsets).reshape(-1)
        return self.base.index_select(0, rows).reshape(len(starts), self.context, self.base.shape[1])

    def __getitem__(self, key):
        if isinstance(key, tuple):      # (rows, ...): gather the rows, then index the rest
            return self[key[0]][(slice(None),) + tuple(key[1:])]
        if isinstance(key, (int, np.integer)):
            return self._gather(self.starts[int(key)].reshape(1))[0]
        if isinstance(key, slice):
            return self._gather(self.starts[key])
        idx = torch.as_tensor(key)
        if idx.dtype == torch.bool:
            return self._gather(self.starts[idx.to(self.starts.device)])
        idx = idx.to(device=self.starts.device, dtype=torch.int64).reshape(-1)
        return self._gather(self.starts.index_select(0, idx))

    def materialise(self) -> torch.Tensor:
        """Every window, stored: a tensor of shape ``(N, context, F)``."""
        return self._gather(self.starts)

    def last(self, feature: int) -> torch.Tensor:
        """The last step of every window in one feature, shape ``(N,)``, without gathering the windows.

        Examples
        --------
        >>> WindowView(torch.arange(12.0).reshape(6, 2), torch.tensor([0, 2]), 3).last(1).tolist()
        [5.0, 9.0]
        """
        return self.base[self.starts + (self.context - 1), int(feature)]

    def __repr__(self) -> str:
        return (f"WindowView({len(self)} windows of {self.context} x {self.base.shape[1]} over {self.base.shape[0]} "
                f"rows, {self.dtype}, {self.device})")


def view_bytes(rows: int, num_windows: int, num_features: int, itemsize: int = 4) -> int:
    """Bytes of a :class:`WindowView`: ``rows`` of ``num_features`` values and one int64 start per window.

    Examples
    --------
    >>> view_bytes(1000, 900, 12)       # 1000 * 12 * 4 + 900 * 8
    55200
    """
    return int(rows) * int(num_features) * int(itemsize) + int(num_windows) * 8
