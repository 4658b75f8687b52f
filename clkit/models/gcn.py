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

__all__ = ["GCN", "normalized_adjacency"]


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

    def __init__(self, x: torch.Tensor, edge_index: torch.Tensor, num_classes: int, hidden: int = 256):
        super().__init__()
        x = torch.as_tensor(x, dtype=torch.float32)
        n = x.shape[0]
        check_int("num_classes", num_classes, low=1)
        check_int("hidden", hidden, low=1)
        self.num_nodes = n
        crow, col, val = normalized_adjacency(torch.as_tensor(edge_index, dtype=torch.int64), n)
        self.register_buffer("x", x, persistent=False)
        self.register_buffer("crow", crow, persistent=False)
        self.register_buffer("col", col, persistent=False)
        self.register_buffer("val", val, persistent=False)
        self.register_buffer("ax", self._spmm(x), persistent=False)
        self.lin1 = nn.Linear(x.shape[1], hidden)
        self.head = nn.Linear(hidden, num_classes)

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
        """Penultimate representation ``(Â H)[idx]``, shape (len(idx), hidden); ``head`` maps it to logits."""
        idx = torch.as_tensor(idx, dtype=torch.int64)
        if len(idx) * 4 >= self.num_nodes:
            return self._spmm(self.hidden_states())[idx]
        rowid, cols, vals = self._rows(idx)
        uniq, inv = torch.unique(cols, return_inverse=True)
        h = self.hidden_states(uniq)
        z = torch.zeros(len(idx), h.shape[1], dtype=h.dtype, device=h.device)
        return z.index_add_(0, rowid, vals[:, None] * h[inv])

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits of nodes ``idx``, shape (len(idx), num_classes)."""
        return self.head(self.embed(idx))

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
        crow, col, val = normalized_adjacency(edge_index, len(nodes))
        adj = _csr(crow, col, val, len(nodes))
        h = torch.relu(self.lin1(torch.sparse.mm(adj, self.x[nodes])))
        return self.head(torch.sparse.mm(adj, h)[centers])

    def neighbors(self, node: int) -> torch.Tensor:
        """Neighbours of ``node`` (self-loop excluded)."""
        nb = self.col[self.crow[node]:self.crow[node + 1]]
        return nb[nb != node]

    def degrees(self) -> torch.Tensor:
        """Degree of every node (self-loop excluded), shape (num_nodes,)."""
        return self.crow[1:] - self.crow[:-1] - 1
