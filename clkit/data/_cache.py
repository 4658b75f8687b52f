"""The clkit data cache and the missing-data error."""

from __future__ import annotations

import os
from pathlib import Path

from .._io import repo_root

__all__ = ["DatasetNotFoundError", "data_root"]


class DatasetNotFoundError(FileNotFoundError):
    """A dataset could not be found or downloaded.

    The message names the dataset, every place that was tried and how to get it.

    Examples
    --------
    >>> err = DatasetNotFoundError("Yearbook", ["/tmp/x"], "pip install wild-time-data")
    >>> "Yearbook" in str(err) and "/tmp/x" in str(err)
    True
    """

    def __init__(self, dataset: str, looked: list, how: str, cause: BaseException | None = None):
        self.dataset = dataset
        self.looked = [str(p) for p in looked]
        self.how = how
        msg = f"dataset {dataset!r} not found. Looked in: {', '.join(self.looked) or '(nowhere)'}. {how}"
        if cause is not None:
            msg += f" (last error: {type(cause).__name__}: {cause})"
        super().__init__(msg)


def data_root(create: bool = False) -> Path:
    """The clkit data cache: ``$CLKIT_DATA`` or ``<repo>/data/cache``."""
    env = os.environ.get("CLKIT_DATA")
    root = Path(env) if env else repo_root() / "data" / "cache"
    if create:
        root.mkdir(parents=True, exist_ok=True)
    return root
