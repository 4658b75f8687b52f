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
    """The clkit data cache.

    ``$CLKIT_DATA`` when set; else ``<checkout>/data/cache`` when clkit runs from a source
    checkout (its root holds ``pyproject.toml`` and ``data/``); else the user's cache,
    ``$XDG_CACHE_HOME/clkit`` (default ``~/.cache/clkit``) -- never inside an installed
    package's folder.

    Examples
    --------
    >>> data_root().name in {"cache", "clkit"} or "CLKIT_DATA" in os.environ
    True
    """
    env = os.environ.get("CLKIT_DATA")
    if env:
        root = Path(env)
    elif (repo_root() / "pyproject.toml").is_file() and (repo_root() / "data").is_dir():
        root = repo_root() / "data" / "cache"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "clkit"
    if create:
        root.mkdir(parents=True, exist_ok=True)
    return root
