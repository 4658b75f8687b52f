"""Rehearsal of notebook 05_drift's ``paper`` set (``rehearse: true``; :mod:`clkit.rehearsal`).

The paper set reads CoraFull through torch-geometric's ``CoraFull`` loader. A rehearsal
writes a fabricated ``cora.npz`` in graph2gauss's layout into the rehearsal's data
cache (:func:`clkit.data.fixtures.graphs.write_corafull`), so the same loader --
``load_graph("corafull")`` -> ``torch_geometric.datasets.CoraFull`` -> ``read_npz`` --
runs on it offline; every method, both protocols, the GCN at the paper's width, the
metrics, figures and verdicts run as in a paper run. What the rule cuts: the graph's
size (the fixture's nodes, classes and vocabulary: :data:`FIXTURE_SIZES`), Joint's
epochs, the replay memory, the boundary-local window and the seeds (at the verdict
rule's minimum, 4). Datasets without a fabricated copy (Reddit, Roman-Empire,
ogbn-arxiv) are refused by name.

Examples
--------
>>> changes, rows = PLAN.cut({"dataset": "corafull", "joint_epochs": 200, "seeds": [1, 2, 3, 4, 5],
...                           "memory_size": 100, "hidden": 256, "data_dir": "/data"})
>>> changes
{'joint_epochs': 5, 'memory_size': 20, 'seeds': [1, 2, 3, 4], 'data_dir': ''}
>>> PLAN.fixtures({"dataset": "corafull"})
{'corafull': {'num_nodes': 120, 'num_classes': 6, 'num_features': 40}}
"""

from __future__ import annotations

from ..rehearsal import MIN_SEEDS, Cap, Plan

__all__ = ["PLAN", "FIXTURE_SIZES", "fixtures"]

#: the fabricated datasets' sizes: 6 classes make 3 latent tasks of 2 (CoraFull: 70 classes, 35 tasks), 20 nodes
#: per class on average, a 40-word vocabulary (CoraFull: 19,793 nodes, 8,710 words)
FIXTURE_SIZES = {"corafull": {"num_nodes": 120, "num_classes": 6, "num_features": 40}}

#: datasets a rehearsal reads without a fixture (shipped or generated): nothing to write
_OFFLINE = ("auto", "csbm", "cora", "citeseer")


def fixtures(values: dict) -> dict:
    """The fabricated datasets the (cut) parameters load, with their sizes.

    Raises ``ValueError`` naming the dataset when it has no fabricated copy.

    Examples
    --------
    >>> fixtures({"dataset": "csbm"})
    {}
    >>> fixtures({"dataset": "reddit"})
    Traceback (most recent call last):
    ...
    ValueError: dataset 'reddit' has no fabricated copy to rehearse on; rehearsable: corafull, auto, csbm, cora, citeseer
    """
    name = values.get("dataset")
    if name in FIXTURE_SIZES:
        return {name: dict(FIXTURE_SIZES[name])}
    if name in _OFFLINE:
        return {}
    raise ValueError(f"dataset {name!r} has no fabricated copy to rehearse on; rehearsable: "
                     f"{', '.join([*FIXTURE_SIZES, *_OFFLINE])}")


PLAN = Plan(
    "05_drift",
    caps=(
        Cap("joint_epochs", 5, "epochs of the offline Joint bound (text protocol)"),
        Cap("memory_size", 20, "replay memory, in nodes (the fabricated stream has ~100 nodes)"),
        Cap("k_bl", 2, "boundary-local window, in batches (a fabricated task lasts ~3 batches)"),
        Cap("seeds", MIN_SEEDS, "seeds (the verdict rule's minimum)"),
    ),
    switches={"data_dir": ""},
    fixtures=fixtures,
)
