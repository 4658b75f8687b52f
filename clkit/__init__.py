"""clkit: a Jupyter-first research kit for evaluating continual learning.

Modules are organised by concept (the README's Layout section):

- :mod:`clkit.metrics` -- pure functions over a performance matrix ``R[i, j]``.
- :mod:`clkit.distances` -- distances between distributions.
- :mod:`clkit.strategies` -- continual-learning strategies behind one interface.
- :mod:`clkit.models` -- small backbones.
- :mod:`clkit.data` -- loaders (real, offline real, synthetic).
- :mod:`clkit.plot`, :mod:`clkit.results`, :mod:`clkit.run` -- figures, recorded
  results and the papermill runner.
- one module per paper: :mod:`clkit.temporal`, :mod:`clkit.taskification`,
  :mod:`clkit.edge`, :mod:`clkit.curriculum`, :mod:`clkit.drift`.

Submodules are imported on demand so that ``import clkit`` stays cheap.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
