"""clkit: a Jupyter-first research kit for evaluating continual learning.

Modules are organised by concept (the README's Layout section):

- :mod:`clkit.metrics` -- pure functions over a performance matrix ``R[i, j]``.
- :mod:`clkit.distances` -- distances between distributions.
- :mod:`clkit.strategies` -- continual-learning strategies behind one interface.
- :mod:`clkit.models` -- small backbones.
- :mod:`clkit.data` -- loaders (real, offline real, synthetic).
- :mod:`clkit.plot`, :mod:`clkit.results` -- figures and recorded results.
- :mod:`clkit.notebooks`, :mod:`clkit.run`, :mod:`clkit.sweep`, :mod:`clkit.summary`,
  :mod:`clkit.cluster` -- the notebooks' parameters, papermill runs, sweeps on Dask
  and their tables; :mod:`clkit.course` -- the graded course.
- :mod:`clkit.cli` -- the ``clkit`` command, on top of everything else (nothing
  imports it).
- one package per paper (its ``report`` and ``plots`` modules serve the notebook):
  :mod:`clkit.temporal`, :mod:`clkit.taskification`,
  :mod:`clkit.edge`, :mod:`clkit.curriculum`, :mod:`clkit.drift`.

Submodules are imported on demand so that ``import clkit`` stays cheap.
"""

#: the version, the same in every clone of main, tagged or not (tags never reach the published main):
#: ``X.Y.Z`` at a release commit, ``X.Y.Z.dev0`` on every commit towards the next release X.Y.Z; builds
#: between two releases are told apart by the commit in every manifest (CHANGELOG.md: cutting a release)
__version__ = "0.2.0.dev0"
__all__ = ["__version__"]
