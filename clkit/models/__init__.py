"""Small backbones, one family per submodule.

- :mod:`clkit.models.mlp` -- multi-layer perceptrons (tabular data).
- :mod:`clkit.models.gcn` -- a 2-layer GCN that holds its graph (node-index batches -> logits).
- :mod:`clkit.models.gnn` -- ``GIN`` and ``GAT`` as DRIFT's released code builds them, with the
  GCN's interface (``make_graph_backbone``: notebook 05's ``backbone``).
- :mod:`clkit.models.cnn` -- ``SmallCNN``, ``WideVGG9``, ``ResNet`` (18/34) and
  ``make_backbone(name, ...)`` for image tasks (curriculum benchmark).
- :mod:`clkit.models.transformer` -- ``TimeSeriesTransformer``, a next-step forecaster over
  multivariate windows (taskification benchmark).
- :mod:`clkit.models.cnn` also has ``resnet32``, PyCIL's CIFAR ResNet-32.
- :mod:`clkit.models.wildtime` -- Wild-Time's Yearbook CNN and FMoW DenseNet-121 (notebook 03's
  ``backbone``).
- :mod:`clkit.models.vit` -- ``vit_backbone``, a timm ViT (ViT-B/16 by default; weights from a local
  file) as ``features`` + ``head``, for the prototype strategies (SimpleCIL, RanPAC).

Further submodules (CNNs, the ViT, the time-series transformer, the GCN) live beside it
and are imported on demand, so ``import clkit.models`` does not pull in
torch-geometric.
"""

from .mlp import MLP

__all__ = ["MLP", "GIN", "GAT"]


def __getattr__(name):
    """``GIN`` / ``GAT`` from :mod:`clkit.models.gnn`, imported on first use."""
    if name in ("GIN", "GAT"):
        from . import gnn

        return getattr(gnn, name)
    raise AttributeError(f"module 'clkit.models' has no attribute {name!r}")
