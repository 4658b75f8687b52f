"""Small backbones, one family per submodule.

- :mod:`clkit.models.mlp` -- multi-layer perceptrons (tabular data).
- :mod:`clkit.models.gcn` -- a 2-layer GCN that holds its graph (node-index batches -> logits).
- :mod:`clkit.models.cnn` -- ``SmallCNN``, ``WideVGG9``, ``ResNet`` (18/34) and
  ``make_backbone(name, ...)`` for image tasks (curriculum benchmark).
- :mod:`clkit.models.transformer` -- ``TimeSeriesTransformer``, a next-step forecaster over
  multivariate windows (taskification benchmark).

Further submodules (CNNs, the time-series transformer, the GCN) live beside it
and are imported on demand, so ``import clkit.models`` does not pull in
torch-geometric.
"""

from .mlp import MLP

__all__ = ["MLP"]
