"""Sparse graph primitives of the graph backbones: CSR adjacencies and one propagation step.

:class:`Adjacency` holds ``A + I`` (normalised, :func:`normalized_adjacency`, or summed,
:func:`sum_adjacency`) as CSR arrays, rows = message targets; :func:`propagate` is one
``A h``. Used by :mod:`clkit.models.gcn`, :mod:`clkit.models.gnn` and the block sampler
:mod:`clkit.models.sampling` (their shared base, so none of them imports another for it).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

__all__ = ["Adjacency", "normalized_adjacency", "sum_adjacency", "propagate", "rows_of"]


def normalized_adjacency(edge_index: torch.Tensor, num_nodes: int):
    """CSR arrays of :math:`\\hat A = D^{-1/2}(A + I)D^{-1/2}` (rows = message targets).

    The same normalisation as torch-geometric's ``gcn_norm`` with
    ``add_self_loops=True`` (self-loops replaced by unit ones, degrees counted at
    the target node; tests/test_graphs.py checks the equality), written in plain
    torch: importing torch-geometric costs seconds and its ``gcn_norm`` is slow on
    the many small subgraphs that subgraph replay normalises. Computed on the device
    of ``edge_index`` (its sizes depend on the values: meant for the host).

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
    loops = torch.arange(num_nodes, dtype=torch.int64, device=ei.device)
    src = torch.cat([ei[0][keep], loops])
    dst = torch.cat([ei[1][keep], loops])
    deg = torch.bincount(dst, minlength=num_nodes).float()
    dinv = deg.pow(-0.5)
    dinv[torch.isinf(dinv)] = 0.0
    w = dinv[src] * dinv[dst]
    order = torch.argsort(dst * num_nodes + src, stable=True)
    dst, src, w = dst[order], src[order], w[order]
    crow = torch.zeros(num_nodes + 1, dtype=torch.int64, device=ei.device)
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


def _csr(crow, col, val, n, m=None):
    with warnings.catch_warnings():  # "sparse CSR support is in beta"
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(crow, col, val, (n, n if m is None else m))


def rows_of(crow: torch.Tensor, nnz: int) -> torch.Tensor:
    """The row of every nonzero of a CSR matrix, shape (nnz,), from ``crow`` (fixed shapes: runs on ``meta``).

    Examples
    --------
    >>> rows_of(torch.tensor([0, 2, 2, 3]), 3).tolist()
    [0, 0, 2]
    """
    return torch.searchsorted(crow[1:], torch.arange(nnz, device=crow.device), right=True)


def propagate(crow, col, val, row, h: torch.Tensor, num_rows: int) -> torch.Tensor:
    """``A h`` for the CSR matrix ``A`` (``crow``, ``col``, ``val``; ``row``: the row of each nonzero).

    ``A`` has ``num_rows`` rows and ``len(h)`` columns (square for a graph; rectangular for a
    sampled block, :mod:`clkit.models.sampling`).

    A CSR product on the CPU and CUDA; elsewhere (``meta``, MPS: no sparse kernels) the
    same sum over the nonzeros with ``index_add_``. ``h`` is propagated in float32, outside autocast.

    Examples
    --------
    >>> crow, col, val = normalized_adjacency(torch.tensor([[0, 1], [1, 0]]), 2)
    >>> propagate(crow, col, val, rows_of(crow, 4), torch.tensor([[2.0], [4.0]]), 2).flatten().tolist()
    [3.0, 3.0]
    """
    h = h.float()
    if h.device.type in ("cpu", "cuda"):
        with torch.autocast(h.device.type, enabled=False):   # autocast would cast the product to bf16/fp16
            return torch.sparse.mm(_csr(crow, col, val, num_rows, h.shape[0]), h)
    out = torch.zeros((num_rows, h.shape[1]), dtype=h.dtype, device=h.device)
    return out.index_add_(0, row, val[:, None] * h[col])


@dataclass(frozen=True)
class Adjacency:
    """A graph's (normalised) adjacency: CSR arrays and the row of every nonzero.

    Built on the host from an edge list (:meth:`from_edges`; its sizes depend on the
    values), moved to a device once (:meth:`to`), then used there without reading it
    (:meth:`matmul`). Disjoint subgraphs join into one block-diagonal matrix
    (:meth:`block_diag`) -- the same arrays as normalising the union of their edges,
    since every degree is counted inside its own block -- so many small subgraphs are
    propagated in one pass.

    Examples
    --------
    >>> a = Adjacency.from_edges(torch.tensor([[0, 1], [1, 0]]), 2)
    >>> b = Adjacency.block_diag([a, Adjacency.from_edges(torch.zeros((2, 0), dtype=torch.int64), 1)])
    >>> b.num_nodes, b.crow.tolist(), b.col.tolist(), b.row.tolist()
    (3, [0, 2, 4, 5], [0, 1, 0, 1, 2], [0, 0, 1, 1, 2])
    >>> u = Adjacency.from_edges(torch.tensor([[0, 1], [1, 0]]), 3)     # the union's edges, normalised at once
    >>> bool(torch.equal(u.val, b.val)) and bool(torch.equal(u.crow, b.crow))
    True
    """

    crow: torch.Tensor
    col: torch.Tensor
    val: torch.Tensor
    row: torch.Tensor

    @classmethod
    def from_edges(cls, edge_index, num_nodes: int, normalize: bool = True) -> "Adjacency":
        """Â (``normalize=True``, :func:`normalized_adjacency`) or A + I (:func:`sum_adjacency`) of ``edge_index``."""
        crow, col, val = (normalized_adjacency if normalize else sum_adjacency)(edge_index, num_nodes)
        return cls(crow, col, val, rows_of(crow, int(col.shape[0])))

    @property
    def num_nodes(self) -> int:
        return int(self.crow.shape[0]) - 1

    @property
    def nnz(self) -> int:
        return int(self.col.shape[0])

    def to(self, device) -> "Adjacency":
        """The same arrays on ``device`` (``self`` when they are there)."""
        if self.crow.device == torch.device(device):
            return self
        from ..device import move

        return Adjacency(*(move(t, device) for t in (self.crow, self.col, self.val, self.row)))

    def matmul(self, h: torch.Tensor) -> torch.Tensor:
        """``A h`` (:func:`propagate`)."""
        return propagate(self.crow, self.col, self.val, self.row, h, self.num_nodes)

    @staticmethod
    def block_diag(parts) -> "Adjacency":
        """The block-diagonal adjacency of ``parts`` (node ``j`` of part ``i`` is node ``offset_i + j``).

        Offsets come from the parts' shapes: nothing is read from their device.
        """
        parts = list(parts)
        if not parts:
            raise ValueError("block_diag needs at least one adjacency, got none")
        if len(parts) == 1:
            return parts[0]
        crows, cols, vals, rows = [parts[0].crow[:1]], [], [], []
        nodes = nnz = 0
        for p in parts:
            crows.append(p.crow[1:] + nnz)
            cols.append(p.col + nodes)
            rows.append(p.row + nodes)
            vals.append(p.val)
            nodes += p.num_nodes
            nnz += p.nnz
        return Adjacency(torch.cat(crows), torch.cat(cols), torch.cat(vals), torch.cat(rows))
