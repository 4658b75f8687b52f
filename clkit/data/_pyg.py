"""Import torch-geometric without the deprecation warning its import prints.

torch-geometric 2.8 calls ``torch.jit.script`` at import time (``nn.pool.select``),
and torch 2.14 warns that ``torch.jit.script`` is deprecated: a ``FutureWarning``
with a path into site-packages, printed in the notebook and on the site, about
code that is not ours. :func:`import_pyg` imports the package once with that one
warning silenced; later ``from torch_geometric... import ...`` lines reuse it.
Other warnings pass through.
"""

from __future__ import annotations

import importlib
import warnings

__all__ = ["import_pyg"]


def import_pyg(module: str = "torch_geometric"):
    """Import ``module`` (a torch-geometric module) with torch's ``jit.script`` FutureWarning silenced.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     io = import_pyg("torch_geometric.io")
    >>> [str(w.message) for w in seen if "torch.jit.script" in str(w.message)]
    []
    """
    if not (module == "torch_geometric" or module.startswith("torch_geometric.")):
        raise ValueError(f"module must be torch_geometric or one of its modules, got {module!r}")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.* is deprecated", category=FutureWarning)
        return importlib.import_module(module)
