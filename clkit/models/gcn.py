"""A 2-layer GCN that holds its graph and maps node-index batches to logits (DRIFT backbone).

``logits = Â · relu(Â X W1 + b1) · W2 + b2`` with Â the symmetrically
normalised adjacency with self-loops (Kipf & Welling, 2017), normalised as
torch-geometric's ``gcn_norm`` does; this equals two stacked
``torch_geometric.nn.GCNConv`` layers (checked in tests/test_graphs.py), without
importing torch-geometric on the training path. No
dropout, no normalisation layers (DRIFT App. A.4).

Two shortcuts keep online training cheap without changing the function:
``Â X`` is fixed (features do not change), so it is computed once; and a batch
of nodes only needs the hidden states of its 1-hop neighbourhood, so
``forward(idx)`` gathers those rows of Â instead of propagating over the
whole graph. Asking for (nearly) all nodes switches to one sparse product over
the full graph, so evaluation is one inference pass over the graph.

**Devices.** The graph -- features, ``Â X``, Â's CSR arrays and node ids -- are
buffers: they move with the model (``model.to(device)``, done by the strategy that
trains it), once. The neighbourhood gather has sizes that depend on the batch's
node ids (how many neighbours, which of them unique), so it runs where reading those
sizes costs nothing: on the CPU. On an accelerator a batch is scored by propagating
over the whole graph and taking its rows -- fixed shapes, the same function, no value
read back from the device (on a GPU the two products over the graph take a few
milliseconds even at ogbn-arxiv size). Sparse products run as CSR products on the CPU
and CUDA and, where PyTorch has no sparse kernel (``meta``, MPS), as the same sum
over the nonzeros with ``index_add_``. The model also keeps a CPU copy of Â's
structure (``crow``, ``col``; made once, not a buffer) for host-side graph algorithms
-- subgraph sampling and curvature in :mod:`clkit.strategies.graph` -- which read it
instead of the device. Under autocast (``precision`` bf16/fp16) the linear layers run
in the lower precision and the propagation in float32.

**Large graphs.** :func:`clkit.models.sampling.set_neighbour_sampling` switches a model
to per-batch sampled L-hop graphs in training (``forward_blocks``' layers on the blocks
of :func:`clkit.models.sampling.sample_blocks`) and to layer-wise inference in node
chunks in evaluation; the models here and in :mod:`clkit.models.gnn` expose their two
layers as ``layer(l, h_src, adj, dst)`` for it.
"""

from __future__ import annotations


import torch
from torch import nn

from .._validate import check_int
from .adjacency import Adjacency, normalized_adjacency, propagate, rows_of, sum_adjacency  # noqa: F401 (re-exported)
from .sampling import SampledForward

__all__ = ["GCN", "AuthorsGCN", "Adjacency", "normalized_adjacency", "sum_adjacency", "propagate", "rows_of"]


class GCN(SampledForward, nn.Module):
    """Two-layer GCN over a fixed graph; ``model(idx)`` returns the logits of nodes ``idx``.

    Parameters
    ----------
    x : Tensor, shape (num_nodes, num_features)
    edge_index : Tensor of int64, shape (2, num_edges)
    num_classes : int
    hidden : int
        Hidden width (DRIFT: 256).

    Build it on the CPU (under the run's seed) and move it with ``model.to(device)``: the
    graph goes with it (see the module docstring for what runs where).

    Examples
    --------
    >>> x = torch.randn(5, 3)
    >>> ei = torch.tensor([[0, 1, 2, 3], [1, 0, 3, 2]])
    >>> net = GCN(x, ei, num_classes=2, hidden=8)
    >>> net(torch.tensor([0, 4])).shape
    torch.Size([2, 2])
    >>> torch.allclose(net(torch.tensor([1, 3])), net(torch.arange(5))[[1, 3]], atol=1e-6)
    True
    >>> net.to("meta")(torch.tensor([1, 3], device="meta")).shape   # no values, the same shapes
    torch.Size([2, 2])
    """

    #: Â's normalisation (``False``: un-normalised sums over A + I) and the layers' bias
    normalize = True
    bias = True
    #: message-passing layers (``layer(0, ...)``, ``layer(1, ...)``)
    num_layers = 2

    def __init__(self, x: torch.Tensor, edge_index: torch.Tensor, num_classes: int, hidden: int = 256):
        super().__init__()
        x = torch.as_tensor(x, dtype=torch.float32)
        n = x.shape[0]
        check_int("num_classes", num_classes, low=1)
        check_int("hidden", hidden, low=1)
        self.num_nodes = n
        self.register_buffer("x", x, persistent=False)
        self._set_adjacency(Adjacency.from_edges(torch.as_tensor(edge_index, dtype=torch.int64), n, self.normalize))
        self.lin1 = nn.Linear(x.shape[1], hidden, bias=self.bias)
        self.head = nn.Linear(hidden, num_classes, bias=self.bias)
        #: when set, logits of classes >= logit_limit are masked to -inf in forward / forward_subgraph
        #: (the loss over the classes seen so far); None = every class
        self.logit_limit: int | None = None

    def _set_adjacency(self, adj: Adjacency) -> None:
        """Use ``adj`` (built on the host) from now on: moved to the model's device, ``Â X`` recomputed there."""
        # host copy for graph algorithms and the neighbour sampler (not buffers)
        self._host_crow, self._host_col, self._host_val = adj.crow, adj.col, adj.val
        moved = adj.to(self.x.device)
        for name in ("crow", "col", "val", "row"):
            if name in self._buffers:
                setattr(self, name, getattr(moved, name))
            else:
                self.register_buffer(name, getattr(moved, name), persistent=False)
        ax = self._spmm(self.x)
        if "ax" in self._buffers:
            self.ax = ax
        else:
            self.register_buffer("ax", ax, persistent=False)

    def set_graph(self, edge_index: torch.Tensor) -> None:
        """Propagate over ``edge_index`` (on the host) from now on (same nodes and features; e.g. one task's
        subgraph). Normalised on the host, moved to the model's device once.

        Examples
        --------
        >>> net = GCN(torch.eye(3), torch.tensor([[0, 1], [1, 0]]), num_classes=2, hidden=2)
        >>> net.set_graph(torch.zeros((2, 0), dtype=torch.int64)); net.crow.tolist()   # self-loops only
        [0, 1, 2, 3]
        """
        self._set_adjacency(Adjacency.from_edges(torch.as_tensor(edge_index, dtype=torch.int64), self.num_nodes,
                                                 self.normalize))

    # ------------------------------------------------------------ propagation
    @property
    def on_host(self) -> bool:
        """The graph is on the CPU: batches take the neighbourhood gather (sizes read from the values)."""
        return self.x.device.type == "cpu"

    @property
    def adjacency(self) -> Adjacency:
        """The graph's adjacency, on the model's device."""
        return Adjacency(self.crow, self.col, self.val, self.row)

    def _spmm(self, h: torch.Tensor) -> torch.Tensor:
        """:math:`\\hat A h` over the whole graph."""
        return propagate(self.crow, self.col, self.val, self.row, h, self.num_nodes)

    def _rows(self, idx: torch.Tensor):
        """The nonzeros of rows ``idx`` of Â: (row position, column, value). Host path (reads a size)."""
        starts = self.crow[idx]
        lens = self.crow[idx + 1] - starts
        total = int(lens.sum())
        offsets = torch.cumsum(lens, 0) - lens
        rowid = torch.repeat_interleave(torch.arange(len(idx), device=idx.device), lens)
        pos = torch.repeat_interleave(starts - offsets, lens) + torch.arange(total, device=idx.device)
        return rowid, self.col[pos], self.val[pos]

    def hidden_states(self, nodes: torch.Tensor | None = None) -> torch.Tensor:
        """First-layer output ``relu(Â X W1 + b1)`` of ``nodes`` (all nodes when None), float32."""
        ax = self.ax if nodes is None else self.ax[nodes]
        return torch.relu(self.lin1(ax)).float()

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        """Penultimate representation ``(Â H)[idx]``, shape (len(idx), hidden); ``head`` maps it to logits.

        A negative entry ``-(v + 1)`` stands for node ``v`` entered as an *isolated*
        node (its edges removed, only its self-loop left): its representation is
        ``relu(x_v W1 + b1)``. Replayed nodes enter this way in DRIFT's released code.
        On an accelerator both forms are computed for every row and each row takes its
        own (fixed shapes, no read of which rows are negative).
        """
        idx = torch.as_tensor(idx, dtype=torch.int64)
        if self.neighbour_sampling:
            return self._embed_sampled(idx)
        if not self.on_host:
            neg = idx < 0
            iso = torch.relu(self.lin1(self.x[(-idx - 1).clamp(min=0)])).float()
            return torch.where(neg[:, None], iso, self._embed(idx.clamp(min=0)))
        neg = idx < 0
        if bool(neg.any()):
            z = torch.empty(len(idx), self.lin1.out_features, dtype=self.x.dtype, device=self.x.device)
            pos = ~neg
            if bool(pos.any()):
                z = z.index_put((pos.nonzero()[:, 0],), self.embed(idx[pos]))
            return z.index_put((neg.nonzero()[:, 0],), torch.relu(self.lin1(self.x[-idx[neg] - 1])).float())
        return self._embed(idx)

    def _embed(self, idx: torch.Tensor) -> torch.Tensor:
        if not self.on_host or len(idx) * 4 >= self.num_nodes:
            return self._spmm(self.hidden_states())[idx]
        rowid, cols, vals = self._rows(idx)
        uniq, inv = torch.unique(cols, return_inverse=True)
        h = self.hidden_states(uniq)
        z = torch.zeros(len(idx), h.shape[1], dtype=h.dtype, device=h.device)
        return z.index_add_(0, rowid, vals[:, None] * h[inv])

    def _limit(self, out: torch.Tensor) -> torch.Tensor:
        if self.logit_limit is None or self.logit_limit >= out.shape[1]:
            return out
        cols = torch.arange(out.shape[1], device=out.device)
        return out.masked_fill(cols[None, :] >= self.logit_limit, float("-inf"))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits of nodes ``idx``, shape (len(idx), num_classes)."""
        return self._limit(self.head(self.embed(idx)))

    def layer(self, layer: int, h: torch.Tensor, adj: Adjacency, dst=None) -> torch.Tensor:
        """Layer ``layer`` (0: ``relu(A h W1 + b1)``, 1: ``A h``, the head's input) for the rows of ``adj``.

        ``h``: the inputs of ``adj``'s columns; ``dst``: the columns of its rows (None: a prefix; unused
        here, GIN and GAT read it).
        """
        if layer == 0:
            return torch.relu(self.lin1(adj.matmul(h))).float()
        return adj.matmul(h)

    def forward_blocks(self, nodes: torch.Tensor, adj: Adjacency, centers: torch.Tensor) -> torch.Tensor:
        """Logits of ``centers`` computed on a graph of ``nodes`` with adjacency ``adj`` (on the model's device).

        ``adj`` must use the model's aggregation (``Adjacency.from_edges(..., normalize=model.normalize)``);
        several subgraphs joined by :meth:`Adjacency.block_diag` are scored in one pass (layer-wise in
        chunks of rows in evaluation when the model samples, :mod:`clkit.models.sampling`).
        """
        if self.neighbour_sampling and not self.training:
            return self._forward_blocks_layerwise(nodes, adj, centers)
        h = torch.relu(self.lin1(adj.matmul(self.x[nodes]))).float()
        return self._limit(self.head(adj.matmul(h)[centers]))

    def forward_subgraph(self, nodes: torch.Tensor, edge_index: torch.Tensor, centers: torch.Tensor) -> torch.Tensor:
        """Logits of ``centers`` computed on a stored subgraph only (subgraph-memory replay).

        Parameters
        ----------
        nodes : Tensor of int64, shape (n,)
            Global ids of the subgraph's nodes (their features are read from the graph).
        edge_index : Tensor of int64, shape (2, e)
            Edges in local numbering ``0 .. n-1``, on the host; Â is renormalised on the subgraph
            there and moved to the model's device.
        centers : Tensor of int64, shape (m,)
            Local ids whose logits are returned.
        """
        adj = Adjacency.from_edges(edge_index, len(nodes), self.normalize).to(self.x.device)
        return self.forward_blocks(nodes, adj, centers)

    def neighbors(self, node: int) -> torch.Tensor:
        """Neighbours of ``node`` (self-loop excluded), from the host copy of the graph (a CPU tensor)."""
        nb = self._host_col[self._host_crow[node]:self._host_crow[node + 1]]
        return nb[nb != node]

    def degrees(self) -> torch.Tensor:
        """Degree of every node (self-loop excluded), shape (num_nodes,), from the host copy (a CPU tensor)."""
        return self._host_crow[1:] - self._host_crow[:-1] - 1


class AuthorsGCN(GCN):
    """DRIFT's released "GCN" backbone: no bias, un-normalised neighbour sums, sampled neighbourhoods.

    ``logits = S · relu(S X W1) · W2`` with ``S = A + I`` (unit weights, no degree
    normalisation; DRIFT's ``Backbones/gnnconv.py`` ``GCNLayer`` aggregates with a
    plain sum and has no bias). In training mode a batch sees *sampled*
    neighbourhoods, as the authors' DGL ``NeighborSampler([10, 25])`` does: up to
    ``fanouts[1]`` = 25 in-edges (self-loop included) of every target node, and up to
    ``fanouts[0]`` = 10 of every node they reach for the first layer, drawn uniformly
    without replacement. In evaluation mode the full neighbourhood is used.

    Devices: on the CPU the sampler draws the batch's neighbourhoods from its own CPU
    generator (``seed``). On an accelerator it draws, from a generator on the device
    seeded with ``seed``, up to ``fanouts`` in-edges of *every* node at once (fixed
    shapes, nothing read back) and propagates over the sampled graph: each node a batch
    reaches gets a uniform draw without replacement, as on the CPU, but the draws are
    not the CPU's (a node listed twice in one batch shares one draw there).

    Parameters
    ----------
    x, edge_index, num_classes, hidden : as :class:`GCN`.
    fanouts : tuple (first layer, second layer) or None
        None trains on full neighbourhoods.
    seed : int
        Seeds the neighbour sampler's own generator.

    Examples
    --------
    >>> x = torch.ones(3, 1)
    >>> net = AuthorsGCN(x, torch.tensor([[0, 1], [1, 0]]), num_classes=1, hidden=1)
    >>> with torch.no_grad():
    ...     _ = net.lin1.weight.fill_(1.0); _ = net.head.weight.fill_(1.0)
    >>> net.eval()(torch.tensor([0, 2])).flatten().tolist()   # node 0: 2 * (1 + 1); node 2: isolated
    [4.0, 1.0]
    """

    normalize = False
    bias = False

    def __init__(self, x, edge_index, num_classes: int, hidden: int = 256, fanouts=(10, 25), seed: int = 0):
        super().__init__(x, edge_index, num_classes, hidden=hidden)
        self.fanouts = None if fanouts is None else tuple(check_int("fanouts", f, low=1) for f in fanouts)
        self.seed = int(seed)
        self.sampler = torch.Generator().manual_seed(self.seed)
        self._device_sampler = None

    def _sample(self, idx: torch.Tensor, fanout: int):
        """Up to ``fanout`` in-edges of each node of ``idx`` (uniform, without replacement). Host path."""
        rowid, cols, _ = self._rows(idx)
        keys = torch.rand(len(cols), generator=self.sampler)
        order = torch.argsort(rowid.double() * 2.0 + keys.double())  # rows in order, random within a row
        rowid, cols = rowid[order], cols[order]
        lens = torch.bincount(rowid, minlength=len(idx))
        rank = torch.arange(len(rowid)) - torch.repeat_interleave(torch.cumsum(lens, 0) - lens, lens)
        keep = rank < fanout
        return rowid[keep], cols[keep]

    def _generator(self):
        """The device sampler's generator (None where the device has none, e.g. ``meta``)."""
        dev = self.col.device
        if self._device_sampler is None or self._device_sampler[0] != dev:
            try:
                gen = torch.Generator(device=dev).manual_seed(self.seed)
            except RuntimeError:
                gen = None
            self._device_sampler = (dev, gen)
        return self._device_sampler[1]

    def sampled_nonzeros(self, fanout: int) -> torch.Tensor:
        """A mask over S's nonzeros keeping up to ``fanout`` of every row, uniformly without replacement
        (the accelerator path; fixed shapes), shape (nnz,)."""
        nnz = int(self.col.shape[0])
        keys = torch.rand(nnz, device=self.col.device, generator=self._generator())
        order = torch.argsort(self.row.double() * 2.0 + keys.double())   # rows in order, random within a row
        rank = torch.empty_like(order)
        rank[order] = torch.arange(nnz, device=order.device) - self.crow[self.row[order]]
        return rank < fanout

    def _embed(self, idx: torch.Tensor) -> torch.Tensor:
        if not self.training or self.fanouts is None:
            return super()._embed(idx)
        if not self.on_host:
            n = self.num_nodes
            keep2, keep1 = self.sampled_nonzeros(self.fanouts[1]), self.sampled_nonzeros(self.fanouts[0])
            sx = propagate(self.crow, self.col, self.val * keep1, self.row, self.x, n)
            h = torch.relu(self.lin1(sx)).float()
            return propagate(self.crow, self.col, self.val * keep2, self.row, h, n)[idx]
        rowid, cols = self._sample(idx, self.fanouts[1])
        uniq, inv = torch.unique(cols, return_inverse=True)
        r1, c1 = self._sample(uniq, self.fanouts[0])
        sx = torch.zeros(len(uniq), self.x.shape[1], dtype=self.x.dtype).index_add_(0, r1, self.x[c1])
        h = torch.relu(self.lin1(sx)).float()
        z = torch.zeros(len(idx), h.shape[1], dtype=h.dtype)
        return z.index_add_(0, rowid, h[inv])
