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
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from .._validate import check_int

__all__ = ["GCN", "AuthorsGCN", "normalized_adjacency", "sum_adjacency"]


def normalized_adjacency(edge_index: torch.Tensor, num_nodes: int):
    """CSR arrays of :math:`\\hat A = D^{-1/2}(A + I)D^{-1/2}` (rows = message targets).

    The same normalisation as torch-geometric's ``gcn_norm`` with
    ``add_self_loops=True`` (self-loops replaced by unit ones, degrees counted at
    the target node; tests/test_graphs.py checks the equality), written in plain
    torch: importing torch-geometric costs seconds and its ``gcn_norm`` is slow on
    the many small subgraphs that subgraph replay normalises.

    Returns
    -------
    crow : Tensor of int64, shape (num_nodes + 1,)
    col : Tensor of int64, shape (nnz,)
    val : Tensor of float32, shape (nnz,)

    Examples
    --------
    >>> crow, col, val = normalized_adjacency(torch.tensor([[0, 1], [1, 0]]), 2)
    >>> crow.tolist(), col.tolist(), [round(v, 3) for v in val.tolist()]
    ([0, 2, 4], [0, 1, 0, 1], [0.5, 0.5, 0.5, 0.5])
    """
    ei = torch.as_tensor(edge_index, dtype=torch.int64)
    keep = ei[0] != ei[1]
    loops = torch.arange(num_nodes, dtype=torch.int64)
    src = torch.cat([ei[0][keep], loops])
    dst = torch.cat([ei[1][keep], loops])
    deg = torch.bincount(dst, minlength=num_nodes).float()
    dinv = deg.pow(-0.5)
    dinv[torch.isinf(dinv)] = 0.0
    w = dinv[src] * dinv[dst]
    order = torch.argsort(dst * num_nodes + src, stable=True)
    dst, src, w = dst[order], src[order], w[order]
    crow = torch.zeros(num_nodes + 1, dtype=torch.int64)
    crow[1:] = torch.cumsum(torch.bincount(dst, minlength=num_nodes), 0)
    return crow, src.contiguous(), w.float().contiguous()


def sum_adjacency(edge_index: torch.Tensor, num_nodes: int):
    """CSR arrays of :math:`A + I` with unit weights (un-normalised neighbour sums).

    The same sparsity pattern as :func:`normalized_adjacency` (self-loops replaced
    by unit ones), every value 1: the aggregation of DRIFT's released "GCN" layer.

    Examples
    --------
    >>> crow, col, val = sum_adjacency(torch.tensor([[0, 1], [1, 0]]), 3)
    >>> crow.tolist(), col.tolist(), val.tolist()
    ([0, 2, 4, 5], [0, 1, 0, 1, 2], [1.0, 1.0, 1.0, 1.0, 1.0])
    """
    crow, col, val = normalized_adjacency(edge_index, num_nodes)
    return crow, col, torch.ones_like(val)


def _csr(crow, col, val, n):
    with warnings.catch_warnings():  # "sparse CSR support is in beta"
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(crow, col, val, (n, n))


class GCN(nn.Module):
    """Two-layer GCN over a fixed graph; ``model(idx)`` returns the logits of nodes ``idx``.

    Parameters
    ----------
    x : Tensor, shape (num_nodes, num_features)
    edge_index : Tensor of int64, shape (2, num_edges)
    num_classes : int
    hidden : int
        Hidden width (DRIFT: 256).

    Examples
    --------
    >>> x = torch.randn(5, 3)
    >>> ei = torch.tensor([[0, 1, 2, 3], [1, 0, 3, 2]])
    >>> net = GCN(x, ei, num_classes=2, hidden=8)
    >>> net(torch.tensor([0, 4])).shape
    torch.Size([2, 2])
    >>> torch.allclose(net(torch.tensor([1, 3])), net(torch.arange(5))[[1, 3]], atol=1e-6)
    True
    """

    #: Â's normalisation (``False``: un-normalised sums over A + I) and the layers' bias
    normalize = True
    bias = True

    def __init__(self, x: torch.Tensor, edge_index: torch.Tensor, num_classes: int, hidden: int = 256):
        super().__init__()
        x = torch.as_tensor(x, dtype=torch.float32)
        n = x.shape[0]
        check_int("num_classes", num_classes, low=1)
        check_int("hidden", hidden, low=1)
        self.num_nodes = n
        adjacency = normalized_adjacency if self.normalize else sum_adjacency
        crow, col, val = adjacency(torch.as_tensor(edge_index, dtype=torch.int64), n)
        self.register_buffer("x", x, persistent=False)
        self.register_buffer("crow", crow, persistent=False)
        self.register_buffer("col", col, persistent=False)
        self.register_buffer("val", val, persistent=False)
        self.register_buffer("ax", self._spmm(x), persistent=False)
        self.lin1 = nn.Linear(x.shape[1], hidden, bias=self.bias)
        self.head = nn.Linear(hidden, num_classes, bias=self.bias)
        #: when set, logits of classes >= logit_limit are masked to -inf in forward / forward_subgraph
        #: (the loss over the classes seen so far); None = every class
        self.logit_limit: int | None = None

    def set_graph(self, edge_index: torch.Tensor) -> None:
        """Propagate over ``edge_index`` from now on (same nodes and features; e.g. one task's subgraph).

        Examples
        --------
        >>> net = GCN(torch.eye(3), torch.tensor([[0, 1], [1, 0]]), num_classes=2, hidden=2)
        >>> net.set_graph(torch.zeros((2, 0), dtype=torch.int64)); net.crow.tolist()   # self-loops only
        [0, 1, 2, 3]
        """
        adjacency = normalized_adjacency if self.normalize else sum_adjacency
        crow, col, val = adjacency(torch.as_tensor(edge_index, dtype=torch.int64), self.num_nodes)
        self.crow, self.col, self.val = crow, col, val
        self.ax = self._spmm(self.x)

    # ------------------------------------------------------------ propagation
    def _adj(self):
        return _csr(self.crow, self.col, self.val, self.num_nodes)

    def _spmm(self, h: torch.Tensor) -> torch.Tensor:
        """:math:`\\hat A h` over the whole graph."""
        return torch.sparse.mm(self._adj(), h)

    def _rows(self, idx: torch.Tensor):
        """The nonzeros of rows ``idx`` of Â: (row position, column, value)."""
        starts = self.crow[idx]
        lens = self.crow[idx + 1] - starts
        total = int(lens.sum())
        offsets = torch.cumsum(lens, 0) - lens
        rowid = torch.repeat_interleave(torch.arange(len(idx), device=idx.device), lens)
        pos = torch.repeat_interleave(starts - offsets, lens) + torch.arange(total, device=idx.device)
        return rowid, self.col[pos], self.val[pos]

    def hidden_states(self, nodes: torch.Tensor | None = None) -> torch.Tensor:
        """First-layer output ``relu(Â X W1 + b1)`` of ``nodes`` (all nodes when None)."""
        ax = self.ax if nodes is None else self.ax[nodes]
        return torch.relu(self.lin1(ax))

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        """Penultimate representation ``(Â H)[idx]``, shape (len(idx), hidden); ``head`` maps it to logits.

        A negative entry ``-(v + 1)`` stands for node ``v`` entered as an *isolated*
        node (its edges removed, only its self-loop left): its representation is
        ``relu(x_v W1 + b1)``. Replayed nodes enter this way in DRIFT's released code.
        """
        idx = torch.as_tensor(idx, dtype=torch.int64)
        neg = idx < 0
        if bool(neg.any()):
            z = torch.empty(len(idx), self.lin1.out_features, dtype=self.x.dtype, device=self.x.device)
            pos = ~neg
            if bool(pos.any()):
                z = z.index_put((pos.nonzero()[:, 0],), self.embed(idx[pos]))
            return z.index_put((neg.nonzero()[:, 0],), torch.relu(self.lin1(self.x[-idx[neg] - 1])))
        return self._embed(idx)

    def _embed(self, idx: torch.Tensor) -> torch.Tensor:
        if len(idx) * 4 >= self.num_nodes:
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

    def forward_subgraph(self, nodes: torch.Tensor, edge_index: torch.Tensor, centers: torch.Tensor) -> torch.Tensor:
        """Logits of ``centers`` computed on a stored subgraph only (subgraph-memory replay).

        Parameters
        ----------
        nodes : Tensor of int64, shape (n,)
            Global ids of the subgraph's nodes (their features are read from the graph).
        edge_index : Tensor of int64, shape (2, e)
            Edges in local numbering ``0 .. n-1``; Â is renormalised on the subgraph.
        centers : Tensor of int64, shape (m,)
            Local ids whose logits are returned.
        """
        adjacency = normalized_adjacency if self.normalize else sum_adjacency
        crow, col, val = adjacency(edge_index, len(nodes))
        adj = _csr(crow, col, val, len(nodes))
        h = torch.relu(self.lin1(torch.sparse.mm(adj, self.x[nodes])))
        return self._limit(self.head(torch.sparse.mm(adj, h)[centers]))

    def neighbors(self, node: int) -> torch.Tensor:
        """Neighbours of ``node`` (self-loop excluded)."""
        nb = self.col[self.crow[node]:self.crow[node + 1]]
        return nb[nb != node]

    def degrees(self) -> torch.Tensor:
        """Degree of every node (self-loop excluded), shape (num_nodes,)."""
        return self.crow[1:] - self.crow[:-1] - 1


class AuthorsGCN(GCN):
    """DRIFT's released "GCN" backbone: no bias, un-normalised neighbour sums, sampled neighbourhoods.

    ``logits = S · relu(S X W1) · W2`` with ``S = A + I`` (unit weights, no degree
    normalisation; DRIFT's ``Backbones/gnnconv.py`` ``GCNLayer`` aggregates with a
    plain sum and has no bias). In training mode a batch sees *sampled*
    neighbourhoods, as the authors' DGL ``NeighborSampler([10, 25])`` does: up to
    ``fanouts[1]`` = 25 in-edges (self-loop included) of every target node, and up to
    ``fanouts[0]`` = 10 of every node they reach for the first layer, drawn uniformly
    without replacement. In evaluation mode the full neighbourhood is used.

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
        self.sampler = torch.Generator().manual_seed(int(seed))

    def _sample(self, idx: torch.Tensor, fanout: int):
        """Up to ``fanout`` in-edges of each node of ``idx`` (uniform, without replacement)."""
        rowid, cols, _ = self._rows(idx)
        keys = torch.rand(len(cols), generator=self.sampler)
        order = torch.argsort(rowid.double() * 2.0 + keys.double())  # rows in order, random within a row
        rowid, cols = rowid[order], cols[order]
        lens = torch.bincount(rowid, minlength=len(idx))
        rank = torch.arange(len(rowid)) - torch.repeat_interleave(torch.cumsum(lens, 0) - lens, lens)
        keep = rank < fanout
        return rowid[keep], cols[keep]

    def _embed(self, idx: torch.Tensor) -> torch.Tensor:
        if not self.training or self.fanouts is None:
            return super()._embed(idx)
        rowid, cols = self._sample(idx, self.fanouts[1])
        uniq, inv = torch.unique(cols, return_inverse=True)
        r1, c1 = self._sample(uniq, self.fanouts[0])
        sx = torch.zeros(len(uniq), self.x.shape[1], dtype=self.x.dtype).index_add_(0, r1, self.x[c1])
        h = torch.relu(self.lin1(sx))
        z = torch.zeros(len(idx), h.shape[1], dtype=h.dtype)
        return z.index_add_(0, rowid, h[inv])
