"""GIN and GAT backbones as DRIFT's released code builds them (``--backbone GIN`` / ``GAT``).

Same interface as :class:`clkit.models.gcn.GCN`: the model holds its graph,
``model(idx)`` maps node indices to logits, ``embed`` / ``head`` split off the last
linear map, ``forward_blocks`` / ``forward_subgraph`` score nodes on other graphs, a
negative index ``-(v + 1)`` enters node ``v`` isolated (only its self-loop), and
``logit_limit`` masks the classes not seen yet. The graph is ``A + I`` with unit weights:
the authors' subgraphs carry one self-loop per node (``dgl.add_self_loop`` in
``dataset/utils.py``), so a node is its own neighbour.

Followed from github.com/UConn-DSIS/DRIFT (``Backbones/gnns.py``, ``Backbones/gnnconv.py``,
``Backbones/model_factory.py`` and the defaults of ``main.py``):

- **GIN** (``GIN_args = {'h_dims': [256], 'dropout': 0.0}``): two ``GINConv(Linear, 'sum')``
  layers, ``eps`` = 0 fixed, ReLU between them, no dropout:
  ``h = relu(W1 ((1 + eps) x_i + sum_{j in N(i) + i} x_j) + b1)`` and
  ``logits = W2 ((1 + eps) h_i + sum_{j in N(i) + i} h_j) + b2`` -- with the self-loop,
  ``x_i`` counts ``2 + eps`` times.
- **GAT** (``GAT_args = {'num_layers': 1, 'num_hidden': 32, 'heads': 8, 'out_heads': 1,
  'feat_drop': .6, 'attn_drop': .6, 'negative_slope': 0.2, 'residual': False}``): a
  ``GATConv(d, 32, 8 heads)`` layer, heads concatenated, ELU, then ``GATConv(256, C, 1
  head)`` (mean over its one head). Each layer: feature dropout 0.6 on its input,
  ``W`` without bias, ``e_ij = LeakyReLU_0.2(a_src . W h_j + a_dst . W h_i)``, softmax over
  the in-edges of ``i`` (self-loop included), attention dropout 0.6, ``sum_j alpha_ij W h_j``;
  no bias, no residual. ``W`` and ``a`` initialised ``xavier_normal_(gain=sqrt(2))``. Their
  ``PairNorm`` layers are built but never called, so there are none here. ``hidden`` is
  the concatenated width: ``hidden = 256`` with 8 heads is their 8 x 32.

Training neighbourhoods: with ``fanouts`` (the authors' protocol: ``(10, 25)``, their
``NeighborSampler``) every node keeps up to ``fanouts[0]`` in-edges (self-loop included)
for the first layer and ``fanouts[1]`` for the second, drawn uniformly without
replacement from the model's own generator (``seed``); evaluation uses full
neighbourhoods. Dropout draws from the same generator (no global RNG).

Cost: every forward propagates over the whole graph it holds (fixed shapes, the same on
every device, nothing read back); fine at Cora scale. For large graphs,
:func:`clkit.models.sampling.set_neighbour_sampling` trains on each batch's sampled L-hop
graph instead (its two layers, ``layer(l, h_src, adj, dst)``, run on the sampled blocks) and
evaluates layer by layer in node chunks.
"""

from __future__ import annotations


import torch
from torch import nn
from torch.nn import functional as F

from .._validate import check_int, check_real
from .adjacency import Adjacency, propagate
from .sampling import SampledForward

__all__ = ["GIN", "GAT", "GraphBackbone", "BACKBONES", "make_graph_backbone"]

#: the graph backbones of notebook 05 (``backbone``)
BACKBONES = ["gcn", "gin", "gat"]


class GraphBackbone(SampledForward, nn.Module):
    """The graph-holding part shared by :class:`GIN` and :class:`GAT` (see the module docstring).

    Subclasses define ``head`` (the last linear map) and ``layer(l, h_src, adj, dst, mask)``: layer
    ``l`` (0 or 1; 1 gives the head's input) for the rows of ``adj`` from the inputs ``h_src`` of its
    columns; row ``i`` is column ``dst[i]`` (None: ``i``, the rows a prefix of the columns).
    """

    #: the aggregation is over A + I with unit weights (``Adjacency.from_edges(..., normalize=False)``)
    normalize = False
    num_layers = 2

    def __init__(self, x: torch.Tensor, edge_index: torch.Tensor, num_classes: int, hidden: int, *,
                 fanouts=None, seed: int = 0):
        super().__init__()
        x = torch.as_tensor(x, dtype=torch.float32)
        self.num_nodes = int(x.shape[0])
        self.num_classes = check_int("num_classes", num_classes, low=1)
        self.hidden = check_int("hidden", hidden, low=1)
        if fanouts is not None:
            if not isinstance(fanouts, (tuple, list)) or len(fanouts) != 2:
                raise ValueError(f"fanouts must be None or two positive ints (first layer, second layer), "
                                 f"got {fanouts!r}")
            fanouts = tuple(check_int("fanouts", f, low=1) for f in fanouts)
        self.fanouts = fanouts
        self.seed = check_int("seed", seed)
        self.register_buffer("x", x, persistent=False)
        self._gen = None
        self._set_adjacency(Adjacency.from_edges(torch.as_tensor(edge_index, dtype=torch.int64), self.num_nodes,
                                                 False))
        #: when set, logits of classes >= logit_limit are masked to -inf (the loss over the classes seen so far)
        self.logit_limit: int | None = None

    # ------------------------------------------------------------ the graph
    def _set_adjacency(self, adj: Adjacency) -> None:
        self._host_crow, self._host_col, self._host_val = adj.crow, adj.col, adj.val
        moved = adj.to(self.x.device)
        for name in ("crow", "col", "val", "row"):
            if name in self._buffers:
                setattr(self, name, getattr(moved, name))
            else:
                self.register_buffer(name, getattr(moved, name), persistent=False)

    def set_graph(self, edge_index: torch.Tensor) -> None:
        """Propagate over ``edge_index`` (host edge list; the same nodes) from now on."""
        self._set_adjacency(Adjacency.from_edges(torch.as_tensor(edge_index, dtype=torch.int64), self.num_nodes,
                                                 False))

    @property
    def on_host(self) -> bool:
        return self.x.device.type == "cpu"

    @property
    def adjacency(self) -> Adjacency:
        return Adjacency(self.crow, self.col, self.val, self.row)

    def neighbors(self, node: int) -> torch.Tensor:
        """Neighbours of ``node`` (self-loop excluded), from the host copy of the graph."""
        nb = self._host_col[self._host_crow[node]:self._host_crow[node + 1]]
        return nb[nb != node]

    def degrees(self) -> torch.Tensor:
        """Degree of every node (self-loop excluded), from the host copy of the graph."""
        return self._host_crow[1:] - self._host_crow[:-1] - 1

    # ------------------------------------------------------------ randomness
    def _generator(self):
        """The model's generator on its device (None where the device has none, e.g. ``meta``)."""
        dev = self.x.device
        if self._gen is None or self._gen[0] != dev:
            try:
                gen = torch.Generator(device=dev).manual_seed(self.seed)
            except RuntimeError:
                gen = None
            self._gen = (dev, gen)
        return self._gen[1]

    def _dropout(self, t: torch.Tensor, p: float) -> torch.Tensor:
        if not self.training or p <= 0:
            return t
        keep = torch.rand(t.shape, device=t.device, generator=self._generator()) >= p
        return t * keep.to(t.dtype) / (1.0 - p)

    def _sampled(self, adj: Adjacency, fanout: int) -> torch.Tensor:
        """A mask over ``adj``'s nonzeros keeping up to ``fanout`` of every row, uniformly without replacement."""
        nnz = adj.nnz
        keys = torch.rand(nnz, device=adj.col.device, generator=self._generator())
        order = torch.argsort(adj.row.double() * 2.0 + keys.double())
        rank = torch.empty_like(order)
        rank[order] = torch.arange(nnz, device=order.device) - adj.crow[adj.row[order]]
        return rank < fanout

    def _masks(self, adj: Adjacency):
        if not self.training or self.fanouts is None:
            return None, None
        return self._sampled(adj, self.fanouts[0]), self._sampled(adj, self.fanouts[1])

    # ------------------------------------------------------------ forward
    def layer(self, layer: int, h: torch.Tensor, adj: Adjacency, dst=None, mask=None) -> torch.Tensor:
        raise NotImplementedError  # pragma: no cover

    def _embed_all(self, x: torch.Tensor, adj: Adjacency, masks) -> torch.Tensor:
        """The head's input for every node of ``adj`` (``masks``: sampled nonzeros per layer, or None)."""
        return self.layer(1, self.layer(0, x, adj, None, masks[0]), adj, None, masks[1])

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        """The head's input for nodes ``idx``; ``-(v + 1)`` enters node ``v`` isolated (only its self-loop)."""
        idx = torch.as_tensor(idx, dtype=torch.int64, device=self.x.device)
        if self.neighbour_sampling:
            return self._embed_sampled(idx)
        adj = self.adjacency
        full = self._embed_all(self.x, adj, self._masks(adj))[idx.clamp(min=0)]
        neg = idx < 0
        if self.on_host and not bool(neg.any()):
            return full
        alone = Adjacency.from_edges(torch.zeros((2, 0), dtype=torch.int64), len(idx), False).to(self.x.device)
        iso = self._embed_all(self.x[(-idx - 1).clamp(min=0)], alone, (None, None))
        return torch.where(neg[:, None], iso, full)

    def _limit(self, out: torch.Tensor) -> torch.Tensor:
        if self.logit_limit is None or self.logit_limit >= out.shape[1]:
            return out
        cols = torch.arange(out.shape[1], device=out.device)
        return out.masked_fill(cols[None, :] >= self.logit_limit, float("-inf"))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits of nodes ``idx``, shape (len(idx), num_classes)."""
        return self._limit(self.head(self.embed(idx)))

    def forward_blocks(self, nodes: torch.Tensor, adj: Adjacency, centers: torch.Tensor) -> torch.Tensor:
        """Logits of ``centers`` on a graph of ``nodes`` with adjacency ``adj`` (``normalize=False``; full
        neighbourhoods; layer-wise in chunks of rows in evaluation when the model samples)."""
        if self.neighbour_sampling and not self.training:
            return self._forward_blocks_layerwise(nodes, adj, centers)
        return self._limit(self.head(self._embed_all(self.x[nodes], adj, (None, None))[centers]))

    def forward_subgraph(self, nodes: torch.Tensor, edge_index: torch.Tensor, centers: torch.Tensor) -> torch.Tensor:
        """Logits of ``centers`` on a stored subgraph (local edge list on the host)."""
        adj = Adjacency.from_edges(edge_index, len(nodes), False).to(self.x.device)
        return self.forward_blocks(nodes, adj, centers)


class GIN(GraphBackbone):
    """Two-layer GIN as DRIFT's released code (``--backbone GIN``); see the module docstring.

    Parameters
    ----------
    x, edge_index, num_classes : as :class:`clkit.models.gcn.GCN`
    hidden : int -- hidden width (theirs: 256)
    eps : float -- GIN's fixed epsilon (theirs: 0)
    fanouts : tuple or None -- sampled training neighbourhoods (theirs: (10, 25))
    seed : int -- seeds the sampler

    Examples
    --------
    >>> net = GIN(torch.eye(3), torch.tensor([[0, 1], [1, 0]]), num_classes=2, hidden=4)
    >>> net(torch.tensor([0, 2])).shape, net(torch.tensor([-1])).shape
    (torch.Size([2, 2]), torch.Size([1, 2]))
    """

    def __init__(self, x, edge_index, num_classes: int, hidden: int = 256, *, eps: float = 0.0, fanouts=None,
                 seed: int = 0):
        super().__init__(x, edge_index, num_classes, hidden, fanouts=fanouts, seed=seed)
        self.register_buffer("eps", torch.tensor(float(check_real("eps", eps))), persistent=False)
        self.lin1 = nn.Linear(self.x.shape[1], self.hidden)
        self.head = nn.Linear(self.hidden, self.num_classes)

    def _aggregate(self, adj: Adjacency, h: torch.Tensor, mask, dst=None) -> torch.Tensor:
        val = adj.val if mask is None else adj.val * mask.to(adj.val.dtype)
        h = h.float()
        own = h[:adj.num_nodes] if dst is None else h[dst]
        return (1 + self.eps) * own + propagate(adj.crow, adj.col, val, adj.row, h, adj.num_nodes)

    def layer(self, layer, h, adj, dst=None, mask=None):
        """GIN layer ``layer`` (0: with the MLP ``relu(lin1(.))``; 1: the head's input)."""
        agg = self._aggregate(adj, h, mask, dst)
        return torch.relu(self.lin1(agg)) if layer == 0 else agg


class GAT(GraphBackbone):
    """GAT as DRIFT's released code (``--backbone GAT``); see the module docstring.

    Parameters
    ----------
    x, edge_index, num_classes : as :class:`clkit.models.gcn.GCN`
    hidden : int -- the first layer's concatenated width, ``heads x`` its per-head width (theirs: 8 x 32)
    heads : int -- first-layer heads (theirs: 8; the output layer has 1)
    feat_drop, attn_drop : float -- dropout on each layer's input and on the attention (theirs: 0.6, 0.6)
    negative_slope : float -- the attention's LeakyReLU (theirs: 0.2)
    fanouts : tuple or None -- sampled training neighbourhoods (theirs: (10, 25))
    seed : int -- seeds the sampler and the dropout

    Examples
    --------
    >>> net = GAT(torch.eye(3), torch.tensor([[0, 1], [1, 0]]), num_classes=2, hidden=4, heads=2).eval()
    >>> net(torch.tensor([0, 2])).shape
    torch.Size([2, 2])
    >>> alpha = net.attention(net.fc1(net.x), net.adjacency, 1)   # per node and head, summing to 1
    >>> torch.zeros(3, 2).index_add_(0, net.row, alpha).round(decimals=5).tolist()
    [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    """

    def __init__(self, x, edge_index, num_classes: int, hidden: int = 256, *, heads: int = 8,
                 feat_drop: float = 0.6, attn_drop: float = 0.6, negative_slope: float = 0.2, fanouts=None,
                 seed: int = 0):
        super().__init__(x, edge_index, num_classes, hidden, fanouts=fanouts, seed=seed)
        self.heads = check_int("heads", heads, low=1)
        if self.hidden % self.heads:
            raise ValueError(f"hidden must be a multiple of heads={self.heads} (the heads' concatenated width), "
                             f"got {self.hidden}")
        self.feat_drop = check_real("feat_drop", feat_drop, low=0, high=1, high_open=True)
        self.attn_drop = check_real("attn_drop", attn_drop, low=0, high=1, high_open=True)
        self.negative_slope = check_real("negative_slope", negative_slope, low=0)
        per = self.hidden // self.heads
        gain = nn.init.calculate_gain("relu")
        self.fc1 = nn.Linear(self.x.shape[1], self.hidden, bias=False)
        self.att_src1 = nn.Parameter(torch.empty(1, self.heads, per))
        self.att_dst1 = nn.Parameter(torch.empty(1, self.heads, per))
        self.head = nn.Linear(self.hidden, self.num_classes, bias=False)
        self.att_src2 = nn.Parameter(torch.empty(1, 1, self.num_classes))
        self.att_dst2 = nn.Parameter(torch.empty(1, 1, self.num_classes))
        for w in (self.fc1.weight, self.att_src1, self.att_dst1, self.head.weight, self.att_src2, self.att_dst2):
            nn.init.xavier_normal_(w, gain=gain)

    def attention(self, wh: torch.Tensor, adj: Adjacency, layer: int, mask=None, dst=None) -> torch.Tensor:
        """Attention weights over ``adj``'s nonzeros, shape (nnz, heads): for every node the weights of its
        in-edges (self-loop included) sum to 1 (before attention dropout).

        ``wh``: the layer's transformed features ``W h`` of ``adj``'s columns, shape (n, heads, width) or
        (n, heads * width); row ``i`` of ``adj`` is column ``dst[i]`` (None: ``i``).
        """
        a_src, a_dst = (self.att_src1, self.att_dst1) if layer == 1 else (self.att_src2, self.att_dst2)
        wh = wh.reshape(wh.shape[0], a_src.shape[1], a_src.shape[2]).float()
        el = (wh * a_src).sum(-1)
        er = (wh * a_dst).sum(-1)
        er = er[:adj.num_nodes] if dst is None else er[dst]
        e = F.leaky_relu(el[adj.col] + er[adj.row], self.negative_slope)
        if mask is not None:
            e = e.masked_fill(~mask[:, None], float("-inf"))
        rows = adj.row[:, None].expand_as(e)
        emax = torch.full((adj.num_nodes, e.shape[1]), float("-inf"), device=e.device, dtype=e.dtype)
        emax = emax.scatter_reduce(0, rows, e, reduce="amax", include_self=True)
        ex = torch.exp(e - emax[adj.row])
        denom = torch.zeros_like(emax).index_add_(0, adj.row, ex)
        return ex / denom[adj.row]

    def layer(self, layer, h, adj, dst=None, mask=None):
        """GAT layer ``layer`` (0: the 8-head layer, heads concatenated, ELU; 1: the head's input)."""
        n = adj.num_nodes
        if layer == 0:
            per = self.hidden // self.heads
            wh = self.fc1(self._dropout(h, self.feat_drop)).reshape(h.shape[0], self.heads, per).float()
            alpha = self._dropout(self.attention(wh, adj, 1, mask, dst), self.attn_drop)
            out = torch.zeros((n, self.heads, per), dtype=wh.dtype, device=wh.device)
            out = out.index_add_(0, adj.row, alpha[:, :, None] * wh[adj.col])
            return F.elu(out.reshape(n, self.hidden))
        h2 = self._dropout(h, self.feat_drop)
        alpha2 = self._dropout(self.attention(self.head(h2), adj, 2, mask, dst), self.attn_drop)
        # the output layer is sum_j alpha_ij W2 h_j = W2 (sum_j alpha_ij h_j): the head's input
        out = torch.zeros((n, h2.shape[1]), dtype=h2.dtype, device=h2.device)
        return out.index_add_(0, adj.row, alpha2[:, :1] * h2[adj.col].float())


def make_graph_backbone(backbone: str, x, edge_index, num_classes: int, *, hidden: int = 256,
                        protocol: str = "text", seed: int = 0):
    """The backbone ``backbone`` of notebook 05 (``"gcn"``, ``"gin"``, ``"gat"``) under ``protocol``.

    ``"gcn"``: :class:`clkit.models.gcn.GCN` (text) or :class:`clkit.models.gcn.AuthorsGCN`
    (authors). ``"gin"`` / ``"gat"``: the authors' architectures, trained on sampled
    neighbourhoods ``(10, 25)`` under the authors' protocol and on full ones under the text's.
    Build it under the run's seed (:func:`clkit._seed.torch_seeded`).

    Examples
    --------
    >>> type(make_graph_backbone("gin", torch.eye(3), torch.zeros((2, 0), dtype=torch.int64), 2, hidden=8,
    ...                          protocol="authors")).__name__
    'GIN'
    >>> make_graph_backbone("sage", torch.eye(3), torch.zeros((2, 0), dtype=torch.int64), 2)
    Traceback (most recent call last):
    ...
    ValueError: backbone must be one of ['gcn', 'gin', 'gat'], got 'sage'
    """
    from .._validate import check_choice
    from .gcn import GCN, AuthorsGCN

    backbone = check_choice("backbone", backbone, BACKBONES)
    authors = check_choice("protocol", protocol, ["text", "authors"]) == "authors"
    if backbone == "gcn":
        if authors:
            return AuthorsGCN(x, edge_index, num_classes, hidden=hidden, seed=seed)
        return GCN(x, edge_index, num_classes, hidden=hidden)
    cls = GIN if backbone == "gin" else GAT
    return cls(x, edge_index, num_classes, hidden=hidden, fanouts=(10, 25) if authors else None, seed=seed)
