"""Data loaders and generators.

Every loader tries, in order: the clkit cache (``$CLKIT_DATA`` or the
repository's ``data/cache``), known system locations, then the ecosystem's own
download. When none works it raises :class:`DatasetNotFoundError` naming the
dataset, where it looked and how to get it.

Submodules (imported on demand): :mod:`clkit.data.images`,
:mod:`clkit.data.temporal` and the per-modality loaders added beside them.
"""

from ._cache import DatasetNotFoundError, data_root

__all__ = ["DatasetNotFoundError", "data_root"]
