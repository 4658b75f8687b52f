"""Rehearsal of notebook 05_drift's paper sets (``rehearse: true``; :mod:`clkit.rehearsal`).

The paper sets read the DRIFT paper's four graphs through their ecosystem loaders
(:func:`clkit.data.graphs.load_online_graph`): ``paper`` CoraFull (torch-geometric's
``CoraFull``), ``paper_arxiv`` ogbn-arxiv (``ogb``'s ``PygNodePropPredDataset``),
``paper_reddit`` Reddit (torch-geometric's ``Reddit``) and ``paper_roman_empire``
Roman-Empire (torch-geometric's ``HeterophilousGraphDataset``). A rehearsal writes a
fabricated copy of the set's dataset in its real raw layout into the rehearsal's data
cache (:mod:`clkit.data.fixtures`: ``cora.npz``; ogb's gzipped CSVs; ``reddit_data.npz``
and ``reddit_graph.npz``; ``roman_empire.npz``), so the same loader runs on it offline;
every method, both protocols, the GCN at the paper's width, the metrics, figures and
verdicts run as in a paper run. What the rule cuts: the graph's size (the fixture's
nodes and classes: :data:`FIXTURE_SIZES`), Joint's epochs, the replay memory, the
boundary-local window and the seeds (at the verdict rule's minimum, 4).

``neighbour_sampling: auto`` picks by the backbone and the graph's size, and a fabricated graph is small:
a rehearsal of a set whose real graph is above the thresholds
(:func:`clkit.models.sampling.resolve_neighbour_sampling`; ogbn-arxiv and Reddit) runs
``sampled``, the code path the paper run takes (:func:`after`; said in the table).

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

from ..data.fixtures.graphs import REAL_SIZES
from ..rehearsal import MIN_SEEDS, Cap, Plan

__all__ = ["PLAN", "FIXTURE_SIZES", "REAL_GRAPHS", "fixtures", "after"]

#: the fabricated datasets' sizes: 6 classes make 3 latent tasks of 2, 20 nodes per class on average
#: (CoraFull: 70 classes, 35 tasks, a 40-word vocabulary for its 8,710; ogbn-arxiv, Roman-Empire:
#: their real feature widths, 128 and 300); Reddit 7 classes, so that one class is left over and
#: dropped as the real graph's 41st, its real 602 features and a mean degree of 20 (real: 492)
FIXTURE_SIZES = {
    "corafull": {"num_nodes": 120, "num_classes": 6, "num_features": 40},
    "ogbn_arxiv": {"num_nodes": 120, "num_classes": 6, "num_features": 128},
    "reddit": {"num_nodes": 140, "num_classes": 7, "num_features": 602, "avg_degree": 20.0},
    "roman_empire": {"num_nodes": 120, "num_classes": 6, "num_features": 300},
}

#: the real graphs' nodes and directed edges as the loaders return them, which ``neighbour_sampling: auto``
#: sees in a paper run (CoraFull, Reddit, Roman-Empire: :data:`clkit.data.fixtures.graphs.REAL_SIZES`;
#: ogbn-arxiv: 169,343 papers, its 1,166,243 citations made undirected, 2,315,598 as the paper counts them)
REAL_GRAPHS = {**{name: (s["num_nodes"], s["num_edges"]) for name, s in REAL_SIZES.items()},
               "ogbn_arxiv": (169343, 2315598)}

#: datasets a rehearsal reads without a fixture (shipped or generated): nothing to write
_OFFLINE = ("auto", "csbm", "cora", "citeseer")


def fixtures(values: dict) -> dict:
    """The fabricated datasets the (cut) parameters load, with their sizes.

    Raises ``ValueError`` naming the dataset when it has no fabricated copy.

    Examples
    --------
    >>> fixtures({"dataset": "csbm"})
    {}
    >>> fixtures({"dataset": "roman_empire"})
    {'roman_empire': {'num_nodes': 120, 'num_classes': 6, 'num_features': 300}}
    >>> fixtures({"dataset": "graph.pt"})
    Traceback (most recent call last):
    ...
    ValueError: dataset 'graph.pt' has no fabricated copy to rehearse on; rehearsable: corafull, ogbn_arxiv, reddit, roman_empire, auto, csbm, cora, citeseer
    """
    name = values.get("dataset")
    if name in FIXTURE_SIZES:
        return {name: dict(FIXTURE_SIZES[name])}
    if name in _OFFLINE:
        return {}
    raise ValueError(f"dataset {name!r} has no fabricated copy to rehearse on; rehearsable: "
                     f"{', '.join([*FIXTURE_SIZES, *_OFFLINE])}")


def after(values: dict, files: dict) -> dict:
    """``neighbour_sampling: auto`` resolved as on the real graph, so the rehearsal takes the paper run's path.

    Examples
    --------
    >>> after({"dataset": "reddit", "neighbour_sampling": "auto"}, {})["neighbour_sampling"]
    'sampled'
    >>> after({"dataset": "roman_empire", "neighbour_sampling": "auto"}, {})
    {}
    >>> after({"dataset": "ogbn_arxiv", "neighbour_sampling": "full"}, {})
    {}
    """
    from ..models.sampling import resolve_neighbour_sampling

    name = values.get("dataset")
    if values.get("neighbour_sampling") != "auto" or name not in REAL_GRAPHS:
        return {}
    nodes, edges = REAL_GRAPHS[name]
    backbone = values.get("backbone", "gcn")
    # under protocol both, one value serves both runs: sampled where either protocol's run samples (the text
    # GCN then samples with full fanouts, the same logits as its whole-graph path)
    protocol = values.get("protocol", "both")      # the notebook's default
    protocols = ["text", "authors"] if protocol == "both" else [protocol]
    if not any(resolve_neighbour_sampling("auto", nodes, edges, backbone=backbone,
                                          protocol="authors" if pr == "authors" else "text") for pr in protocols):
        return {}
    return {"neighbour_sampling": "sampled",
            "_what": {"neighbour_sampling": f"auto samples on the real {name} ({nodes:,} nodes, {edges:,} edges); "
                                            "the fabricated graph is small, so it is set as the real one resolves"}}


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
    after=after,
)
