"""Neighbour-sampled mini-batches and memory-bounded full inference for the graph backbones, in plain torch.

A graph backbone that holds a large graph need not propagate over all of it at every
training step: a batch's logits depend only on its L-hop computation graph. As DGL's
``MultiLayerNeighborSampler`` does in DRIFT's released code (``NeighborSampler([10,
25])``, one *block* per layer), :func:`sample_blocks` draws that graph layer by layer,
from the output layer down: every node whose output a layer must give (the targets at the
last layer; the targets and the nodes they drew at the layer below, ...) keeps up to that
layer's fanout of its in-edges (self-loop included: the models' graphs carry one),
uniformly without replacement, from a ``torch.Generator`` passed in (no global RNG).
The result is one node list -- the targets first, then each layer's new nodes -- and one
rectangular :class:`~clkit.models.gcn.Adjacency` per layer, in local numbering, whose
rows (the nodes whose output the layer gives) are a prefix of its columns (its inputs).
The kept edges carry the model's own values (GCN's Â entries, the unit sums of the
authors' layers), so with fanouts at least the largest in-degree the sampled graph is
the exact L-hop neighbourhood and the logits are those of full-graph propagation.

A draw costs what it keeps, not the frontier's degrees (Reddit's mean in-degree is 491,
the authors' fanouts 10 and 25): a row with at most ``fanout`` in-edges keeps them all and
draws nothing; a longer row keeps a uniform ``fanout``-subset of its CSR positions, drawn
by Floyd's algorithm for all such rows at once (:func:`_floyd`); only kept entries are
gathered, and node ids are relabelled by sorting the block's own nodes
(``torch.searchsorted``), so a call allocates nothing of the graph's size.

:func:`layerwise_inference` is the evaluation counterpart over full neighbourhoods:
layer 1 for every node, in chunks of rows, then layer 2 from those outputs. A chunk
gathers only its rows' in-neighbours, so the temporaries grow with the chunk's edges, not
the graph's (GAT's per-edge messages are ``edges x hidden``), and no node's layer-1 output
is computed twice. (The authors' code scores test nodes in batches of their own blocks,
drawn by the same ``NeighborSampler`` as in training -- sampled neighbourhoods at
evaluation too -- or by ``MultiLayerFullNeighborSampler`` without ``--sample_nbs``; the
models here evaluate on full neighbourhoods, as before.)

PyG's ``NeighborLoader`` needs ``pyg-lib`` or ``torch-sparse``; this path needs neither.
Sizes here depend on the values (how many neighbours, which are new), so sampling runs on
the host copy of the graph and the blocks move to the model's device: on an accelerator a
sampled model call reads its node ids back once (and chunked inference its chunks' sizes),
where the whole-graph path reads nothing; sampled models do not run on ``meta``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Blocks", "sample_blocks", "layerwise_inference", "NEIGHBOUR_SAMPLING", "AUTO_NODES", "AUTO_EDGES",
           "AUTO_NODES_GNN", "AUTO_EDGES_GNN", "resolve_neighbour_sampling", "set_neighbour_sampling", "INFERENCE_CHUNK"]

#: the ``neighbour_sampling`` modes of notebook 05 (:func:`resolve_neighbour_sampling`)
NEIGHBOUR_SAMPLING = ["full", "sampled", "auto"]
#: ``"auto"`` samples when the graph has more nodes than this (ogbn-arxiv: 169,343) ...
AUTO_NODES = 100_000
#: ... or more directed edges than this (ogbn-arxiv, undirected: 2.3 M; CoraFull: 126 k)
AUTO_EDGES = 1_000_000
#: ``"auto"`` samples GIN and GAT above this many nodes (at 5,000 nodes a whole-graph step is ~35x (GIN) and
#: ~20x (GAT) a sampled one; benchmarks/bench_drift_sampling.py) ...
AUTO_NODES_GNN = 5_000
#: ... or this many directed edges (a graph of 5,000 nodes at mean degree 10)
AUTO_EDGES_GNN = 50_000
#: rows per chunk of :func:`layerwise_inference` when a model samples
INFERENCE_CHUNK = 16_384


@dataclass(frozen=True)
class Blocks:
    """The sampled L-hop computation graph of a batch (:func:`sample_blocks`).

    Attributes
    ----------
    nodes : Tensor of int64, shape (n,)
        Global ids: the targets first (in the order given), then each layer's new nodes.
    adjs : tuple of Adjacency
        One per layer, the input layer first. ``adjs[l]`` has ``adjs[l].num_nodes`` rows
        (local ids ``0 ..``, a prefix of ``nodes``) and columns in local ids ``< n``;
        the last one's rows are the targets.
    """

    nodes: torch.Tensor
    adjs: tuple

    @property
    def num_targets(self) -> int:
        return self.adjs[-1].num_nodes

    def to(self, device) -> "Blocks":
        """The same blocks on ``device``."""
        from ..device import move

        return Blocks(move(self.nodes, device), tuple(a.to(device) for a in self.adjs))


def _rows(crow: torch.Tensor, col: torch.Tensor, val, idx: torch.Tensor, fanout=None, generator=None):
    """Up to ``fanout`` nonzeros of every row ``idx``: (row position, column, value), rows in order.

    A row with at most ``fanout`` nonzeros (every row when ``fanout`` is None or <= 0) keeps
    all of them, in CSR order, and draws nothing. A longer row keeps a uniform ``fanout``-subset
    of its positions, drawn by Floyd's algorithm vectorised over those rows
    (:func:`_floyd`). Only the kept entries are gathered: the work and memory are
    O(sum over rows of min(degree, fanout)), never the rows' total degree nor the graph's size.
    ``val`` None stands for ones.
    """
    starts = crow[idx]
    lens = crow[idx + 1] - starts
    if fanout is None or fanout <= 0:
        take = lens
        big = None
    else:
        big = lens > fanout
        take = torch.where(big, torch.full_like(lens, fanout), lens)
    total = int(take.sum())
    rowid = torch.repeat_interleave(torch.arange(len(idx)), take)
    off = torch.arange(total) - torch.repeat_interleave(torch.cumsum(take, 0) - take, take)
    if big is not None and bool(big.any()):
        off[big[rowid]] = _floyd(lens[big], fanout, generator).reshape(-1)
    pos = starts[rowid] + off
    v = torch.ones(total) if val is None else val[pos]
    return rowid, col[pos], v


def _floyd(n: torch.Tensor, k: int, generator) -> torch.Tensor:
    """``k`` distinct positions in ``[0, n_r)`` for every row ``r``, a uniform ``k``-subset each (needs n_r >= k).

    Floyd's algorithm (Bentley & Floyd, CACM 30(9), 1987), one step for all rows at once: for
    ``j = n - k, ..., n - 1`` draw ``t`` uniform in ``[0, j]`` and keep ``t``, or ``j`` where
    ``t`` was kept before. Every k-subset comes out with probability ``1 / C(n, k)``. Costs
    ``k`` float64 draws per row and O(k^2) comparisons per row; shape (len(n), k).
    """
    rows = len(n)
    picks = torch.empty(rows, k, dtype=torch.int64)
    u = torch.rand(rows, k, generator=generator, dtype=torch.float64)
    for i in range(k):
        j = n - k + i
        t = (u[:, i] * (j + 1).double()).long().clamp_(max=j)   # floor(u (j + 1)), u in [0, 1)
        if i:
            dup = (picks[:, :i] == t[:, None]).any(1)
            t = torch.where(dup, j, t)
        picks[:, i] = t
    return picks


def _check_fanouts(fanouts):
    if not isinstance(fanouts, (list, tuple)) or not fanouts:
        raise ValueError(f"fanouts must be a non-empty list of ints or None (one per layer, input layer "
                         f"first; None or -1: every in-edge), got {fanouts!r}")
    for f in fanouts:
        if f is not None and (isinstance(f, bool) or not isinstance(f, int) or f == 0 or f < -1):
            raise ValueError(f"fanouts must hold positive ints, -1 or None (every in-edge), got {fanouts!r}")
    return list(fanouts)


def sample_blocks(crow, col, targets, fanouts, *, val=None, generator=None) -> Blocks:
    """Sample the L-hop computation graph of ``targets`` from a CSR graph (rows = message targets).

    Parameters
    ----------
    crow, col : Tensor of int64
        The graph's CSR arrays on the host (e.g. a model's ``_host_crow``, ``_host_col``),
        self-loops included where the model's aggregation has them.
    targets : Tensor of int64, shape (m,)
        Distinct node ids whose outputs are wanted.
    fanouts : sequence of int or None, length L
        In-edges kept per node and layer, the input layer first (DGL's order: the authors'
        ``(10, 25)`` keeps 25 at the output layer); None or -1 keeps all of them.
    val : Tensor, shape (nnz,), optional
        The nonzeros' values (default: ones), carried to the blocks.
    generator : torch.Generator, optional
        CPU generator of the draws (e.g. ``torch.Generator().manual_seed(seed)``).

    Returns
    -------
    Blocks

    Examples
    --------
    A path 0 - 1 - 2 - 3 - 4 - 5 with self-loops: the 2-hop graph of node 0.

    >>> from clkit.models.gcn import Adjacency
    >>> ei = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 4, 4, 5], [1, 0, 2, 1, 3, 2, 4, 3, 5, 4]])
    >>> a = Adjacency.from_edges(ei, 6, normalize=False)
    >>> b = sample_blocks(a.crow, a.col, torch.tensor([0]), [None, None])
    >>> b.nodes.tolist(), [adj.num_nodes for adj in b.adjs], b.adjs[-1].col.tolist()
    ([0, 1, 2], [2, 1], [0, 1])
    >>> g = torch.Generator().manual_seed(0)
    >>> [int(n) for n in torch.diff(sample_blocks(a.crow, a.col, torch.tensor([2]), [1, 1],
    ...                                          generator=g).adjs[0].crow)]   # one in-edge per row
    [1, 1]
    """
    from .adjacency import Adjacency

    fanouts = _check_fanouts(fanouts)
    crow = torch.as_tensor(crow, dtype=torch.int64).cpu()
    col = torch.as_tensor(col, dtype=torch.int64).cpu()
    val = None if val is None else torch.as_tensor(val).cpu()
    targets = torch.as_tensor(targets, dtype=torch.int64).cpu().reshape(-1)
    num_nodes = len(crow) - 1
    if len(targets) and (int(targets.min()) < 0 or int(targets.max()) >= num_nodes):
        raise ValueError(f"targets must be node ids in [0, {num_nodes}), got values in "
                         f"[{int(targets.min())}, {int(targets.max())}]")
    known, perm = torch.sort(targets)              # the nodes so far, sorted, and their local ids
    if len(known) > 1 and bool((known[1:] == known[:-1]).any()):
        raise ValueError("targets must be distinct node ids (pass torch.unique(targets))")
    nodes, adjs = targets, []
    for fanout in reversed(fanouts):                   # the output layer first
        n_dst = len(nodes)
        rowid, src, v = _rows(crow, col, val, nodes, fanout, generator)
        at = torch.searchsorted(known, src)
        seen = at < len(known)
        seen[seen.clone()] = known[at[seen]] == src[seen]
        new = torch.unique(src[~seen])
        nodes = torch.cat([nodes, new])
        known, order = torch.sort(torch.cat([known, new]))
        perm = torch.cat([perm, torch.arange(n_dst, n_dst + len(new))])[order]
        c = torch.zeros(n_dst + 1, dtype=torch.int64)
        c[1:] = torch.cumsum(torch.bincount(rowid, minlength=n_dst), 0)
        adjs.append(Adjacency(c, perm[torch.searchsorted(known, src)], v, rowid))
    return Blocks(nodes, tuple(reversed(adjs)))


def _row_chunk(adj: Adjacency, a: int, b: int):
    """Rows ``a:b`` of ``adj`` with their in-neighbours relabelled: (source ids, chunk adjacency, dst positions)."""
    from .adjacency import Adjacency

    lo, hi = int(adj.crow[a]), int(adj.crow[b])
    dst = torch.arange(a, b, device=adj.col.device)
    src, inv = torch.unique(torch.cat([dst, adj.col[lo:hi]]), return_inverse=True)
    sub = Adjacency(adj.crow[a:b + 1] - lo, inv[b - a:], adj.val[lo:hi], adj.row[lo:hi] - a)
    return src, sub, inv[:b - a]


def layerwise_inference(model, x: torch.Tensor, adj, chunk_size: int = INFERENCE_CHUNK) -> torch.Tensor:
    """The head's input for every node of ``adj``, one layer at a time over chunks of ``chunk_size`` rows.

    ``model`` has ``num_layers`` and ``layer(l, h_src, adj, dst)`` (the backbones of
    :mod:`clkit.models.gcn` and :mod:`clkit.models.gnn`); ``adj`` is square, its values the
    model's aggregation. Equals one pass over the whole graph up to float rounding.

    Examples
    --------
    >>> from clkit.models.gnn import GIN
    >>> net = GIN(torch.randn(6, 3), torch.tensor([[0, 1, 2, 3, 4], [1, 2, 3, 4, 5]]), 2, hidden=4).eval()
    >>> z = layerwise_inference(net, net.x, net.adjacency, chunk_size=4)
    >>> torch.allclose(net.head(z), net(torch.arange(6)), atol=1e-5)
    True
    """
    from .._validate import check_int

    check_int("chunk_size", chunk_size, low=1)
    n = adj.num_nodes
    h = x
    for layer in range(model.num_layers):
        parts = []
        for a in range(0, n, chunk_size):
            src, sub, dst = _row_chunk(adj, a, min(n, a + chunk_size))
            parts.append(model.layer(layer, h[src], sub, dst))
        h = torch.cat(parts)
    return h


def resolve_neighbour_sampling(mode: str, num_nodes: int, num_edges: int, *, backbone: str | None = None,
                               protocol: str = "text") -> bool:
    """Whether a run samples its training neighbourhoods: ``mode`` ``"full"`` (never), ``"sampled"`` (always)
    or ``"auto"``, decided per backbone.

    The ``"auto"`` rule, by what a whole-graph training step costs each backbone:

    * ``backbone="gcn"`` under the text protocol: never. Its step gathers the batch's 1-hop
      rows of the fixed ``Â X`` on the host, or propagates ``Â`` over the whole graph on an
      accelerator -- two sparse products, nothing per edge times hidden -- so sampling
      (which, with the text's full fanouts, gives the same logits) only adds work.
    * ``backbone="gin"`` or ``"gat"``: above :data:`AUTO_NODES_GNN` nodes or
      :data:`AUTO_EDGES_GNN` edges. Their whole-graph step runs the layers' MLP / attention
      over every node and edge (GAT: messages ``edges x hidden``, 8 heads); measured in
      ``benchmarks/bench_drift_sampling.py`` (one thread, hidden 64, a batch of 10), a
      whole-graph step is about 35x (GIN) and 20x (GAT) a sampled one at 5,000 nodes, 40x
      (GAT) at 10k and 130x (GIN) / 300x (GAT) at 50k. Below the threshold (Cora, the
      smoke graphs) the whole-graph path keeps earlier numbers unchanged.
    * the authors' GCN, or ``backbone`` None (the size rule alone): above :data:`AUTO_NODES`
      nodes or :data:`AUTO_EDGES` directed edges (ogbn-arxiv, Reddit). On the host its
      step already draws only the batch's neighbourhoods; on an accelerator it draws a mask
      over every edge per step, which sampled blocks avoid on the large graphs.

    Parameters
    ----------
    mode : {"full", "sampled", "auto"}
    num_nodes, num_edges : int
        The graph's nodes and directed edges.
    backbone : {"gcn", "gin", "gat"} or None
        The run's backbone (None: the size rule).
    protocol : {"text", "authors"}
        Which GCN ``"gcn"`` is: the text's (never samples under auto) or the authors'.

    Returns
    -------
    bool

    Examples
    --------
    >>> resolve_neighbour_sampling("auto", 2708, 10556), resolve_neighbour_sampling("auto", 169343, 2315598)
    (False, True)
    >>> [resolve_neighbour_sampling("auto", 19793, 126842, backbone=b) for b in ("gcn", "gin", "gat")]
    [False, True, True]
    >>> [resolve_neighbour_sampling("auto", 232965, 114615892, backbone="gcn", protocol=pr)
    ...  for pr in ("text", "authors")]
    [False, True]
    >>> resolve_neighbour_sampling("some", 1, 1)
    Traceback (most recent call last):
    ...
    ValueError: neighbour_sampling must be one of ['full', 'sampled', 'auto'], got 'some'
    """
    from .._validate import check_choice

    mode = check_choice("neighbour_sampling", mode, NEIGHBOUR_SAMPLING)
    if backbone is not None:
        check_choice("backbone", backbone, ["gcn", "gin", "gat"])
    protocol = check_choice("protocol", protocol, ["text", "authors"])
    if mode != "auto":
        return mode == "sampled"
    if backbone == "gcn" and protocol == "text":
        return False
    if backbone in ("gin", "gat"):
        return num_nodes > AUTO_NODES_GNN or num_edges > AUTO_EDGES_GNN
    return num_nodes > AUTO_NODES or num_edges > AUTO_EDGES


def set_neighbour_sampling(model, on: bool, *, seed: int = 0, chunk_size: int = INFERENCE_CHUNK):
    """Switch ``model`` (a backbone of :mod:`clkit.models.gcn` / :mod:`clkit.models.gnn`) to sampled batches.

    On: in training mode ``model(idx)`` scores ``idx`` on its sampled L-hop graph
    (:func:`sample_blocks`; the model's ``fanouts``, every in-edge where it has none, drawn
    from a CPU generator seeded with ``seed``); in evaluation mode a few nodes are scored on
    their exact L-hop graph and many (a quarter of the graph or more) by
    :func:`layerwise_inference` in chunks of ``chunk_size`` rows. Off: the model's own
    whole-graph path. Returns ``model``.

    Examples
    --------
    >>> from clkit.models.gcn import GCN
    >>> net = set_neighbour_sampling(GCN(torch.eye(4), torch.tensor([[0, 1], [1, 2]]), 2, hidden=3), True)
    >>> net.neighbour_sampling, net(torch.tensor([2, 0])).shape
    (True, torch.Size([2, 2]))
    """
    model.neighbour_sampling = bool(on)
    model.inference_chunk = int(chunk_size)
    model.block_sampler = torch.Generator().manual_seed(int(seed))
    return model


class SampledForward:
    """Mixin of the backbones: the sampled / layer-wise path of ``embed`` and ``forward_blocks``.

    The host needs ``x``, ``num_nodes``, ``_host_crow``, ``_host_col``, ``_host_val``,
    ``normalize``, ``num_layers`` and ``layer(l, h_src, adj, dst)``.
    """

    #: switched on by :func:`set_neighbour_sampling`
    neighbour_sampling = False
    inference_chunk = INFERENCE_CHUNK
    block_sampler = None

    def _forward_blocks_layerwise(self, nodes: torch.Tensor, adj, centers: torch.Tensor) -> torch.Tensor:
        """``forward_blocks`` in evaluation when the model samples: :func:`layerwise_inference` in chunks of rows
        (the host's ``head`` and ``_limit`` give the logits)."""
        return self._limit(self.head(layerwise_inference(self, self.x[nodes], adj, self.inference_chunk)[centers]))

    def _isolated(self, v: torch.Tensor) -> torch.Tensor:
        """The head's input of nodes ``v`` entered alone (only their self-loops)."""
        from .adjacency import Adjacency

        alone = Adjacency.from_edges(torch.zeros((2, 0), dtype=torch.int64), len(v), self.normalize).to(self.x.device)
        h = self.x[v]
        for layer in range(self.num_layers):
            h = self.layer(layer, h, alone, None)
        return h

    def _embed_sampled(self, idx: torch.Tensor) -> torch.Tensor:
        """``embed(idx)`` with sampling on: sampled blocks (training), exact blocks or layer-wise (evaluation)."""
        dev = self.x.device
        host = idx.cpu()
        neg = host < 0
        if not self.training and len(idx) * 4 >= self.num_nodes:
            z = layerwise_inference(self, self.x, self.adjacency, self.inference_chunk)
            out = z[idx.clamp(min=0)]
            if not bool(neg.any()):
                return out
            return out.index_put((neg.nonzero()[:, 0].to(dev),), self._isolated(-idx[neg.to(dev)] - 1))
        fanouts = getattr(self, "fanouts", None) if self.training else None
        fanouts = list(fanouts) if fanouts is not None else [None] * self.num_layers
        pos = (~neg).nonzero()[:, 0]
        uniq, inv = torch.unique(host[pos], return_inverse=True)
        out = None
        if len(uniq):
            b = sample_blocks(self._host_crow, self._host_col, uniq, fanouts, val=self._host_val,
                              generator=self.block_sampler).to(dev)
            h = self.x[b.nodes]
            for layer, adj in enumerate(b.adjs):
                h = self.layer(layer, h, adj, None)
            if not bool(neg.any()):
                return h[inv.to(dev)]
            out = torch.zeros(len(idx), h.shape[1], dtype=h.dtype, device=dev)
            out = out.index_put((pos.to(dev),), h[inv.to(dev)])
        iso = self._isolated(-host[neg].to(dev) - 1)
        if out is None:
            out = torch.zeros(len(idx), iso.shape[1], dtype=iso.dtype, device=dev)
        return out.index_put((neg.nonzero()[:, 0].to(dev),), iso)
