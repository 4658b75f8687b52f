"""Graph-specific continual-learning strategies: SSM, SEM and DMSG.

They need a model that holds its graph (:class:`clkit.models.gcn.GCN`): inputs
are node-index tensors, ``model.embed(idx)`` gives penultimate features and
``model.forward_subgraph`` evaluates nodes on a stored subgraph only.

- **SSM** (Zhang et al., 2022, sparsified subgraph memory): a reservoir memory of
  nodes, each replayed through its *sparsified computation subgraph* -- 2 hops
  with fan-outs ``(5, 5)`` -- rather than its full neighbourhood. Neighbours are
  kept by importance sampling without replacement, probability proportional to
  degree (a node's contribution to the topology).
- **SEM** (Zhang et al., 2023, subgraph episodic memory with Ricci-curvature
  sparsification): the same memory, but each hop keeps the neighbours whose
  edges have the highest curvature. *Choice*: the augmented Forman-Ricci
  curvature ``F(u, v) = 4 - deg(u) - deg(v) + 3 * triangles(u, v)`` stands in for
  Ollivier-Ricci (no optimal-transport solve per edge); high curvature marks
  edges inside dense communities, low (negative) curvature marks bridges.
- **DMSG** (Qiao et al., "Towards continuous reuse of graph models via holistic
  memory diversification", ICLR 2025 -- reference [31] of DRIFT; diversified memory
  selection and generation):
  a class-balanced memory whose rows are chosen for diversity in embedding
  space -- when a class exceeds its share (``memory_size / classes seen``), its
  most redundant row (smallest distance to its nearest same-class neighbour) is
  dropped -- plus a variational layer that encodes the embeddings of memory
  nodes as ``N(mu, sigma^2)``, samples synthetic embeddings for the classifier and
  reconstructs the embedding through a decoder (loss: CE on generated
  embeddings + KL + reconstruction). *Deviation*: the adversarial variational
  embedding term of the original is left out.

Replay is 1:1 (as many memory rows as incoming rows per step) and its loss is
added to the incoming batch's loss. Memory selection is task-free in all three.

**Devices.** The memories hold node ids and labels on the model's device; which
slots are written, sampled or evicted is decided on the host with the strategies'
CPU generators (the same draws on every device). Two steps are host-side graph
algorithms with sizes that depend on node ids, and read the ids they need, at the
points they need them (:func:`host_ids`, the only reads; on ``meta``, which has no
values, ids read as 0):

- SSM / SEM draw a memory node's sparsified subgraph from the host copy of the graph
  (:meth:`clkit.models.gcn.GCN.neighbors`) when the node enters the memory, so the
  reservoir reads the ids of the rows it writes -- only in the steps where it writes
  (every step while it fills, then with probability ``memory_size / rows seen``). Each
  subgraph's adjacency is normalised on the host once, moved to the device and kept;
  a replay step joins the sampled subgraphs into one block-diagonal graph on the
  device (:meth:`clkit.models.gcn.Adjacency.block_diag`) and scores them in one pass.
- DMSG keeps its memory a *set* of node ids (a node enters once): each step reads the
  incoming batch's ids to merge them with the memory's host copy, and, once the memory
  is full, the positions its diversity pruning keeps (the pruning itself runs on the
  device with fixed shapes).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._seed import torch_seeded
from .._validate import check_int, check_real
from ..device import move, to_host
from ._common import TaskAwareStrategy
from .base import Task, register, take
from .memory import ReservoirBuffer

__all__ = ["SSM", "SEM", "DMSG", "sparsified_subgraph", "forman_curvature", "host_ids"]


def _check_graph_model(model):
    for attr in ("embed", "forward_subgraph", "forward_blocks", "neighbors", "crow", "col"):
        if not hasattr(model, attr):
            raise TypeError(f"model must hold its graph (clkit.models.gcn.GCN); it lacks {attr!r}")


def host_ids(t) -> np.ndarray:
    """Node ids of ``t`` as int64 on the host: the one read the host-side graph steps make.

    On ``meta`` (shapes, no values) every id reads as 0, so those steps still run in
    shape-only tests.

    Examples
    --------
    >>> host_ids(torch.tensor([3, 1])).tolist(), host_ids(torch.ones(2, device="meta")).tolist()
    ([3, 1], [0, 0])
    """
    if isinstance(t, torch.Tensor) and t.device.type == "meta":
        return np.zeros(tuple(t.shape), dtype=np.int64)
    return to_host(t).astype(np.int64)


class NodeReservoir(ReservoirBuffer):
    """A :class:`~clkit.strategies.memory.ReservoirBuffer` of node ids with a host copy of the stored ids.

    The ids of the rows it writes are read when it writes them (:func:`host_ids`); ``ids_host``
    then names every slot's node without reading the device.

    Examples
    --------
    >>> buf = NodeReservoir(3, seed=0)
    >>> buf.add(torch.tensor([7, 8]), torch.tensor([0, 1])); buf.ids_host[: len(buf)].tolist()
    [7, 8]
    """

    def __init__(self, memory_size: int, seed: int = 0):
        super().__init__(memory_size, seed)
        self.ids_host = np.full(self.memory_size, -1, dtype=np.int64)

    def _write(self, slots, x, y, task_ids) -> None:
        super()._write(slots, x, y, task_ids)
        self.ids_host[np.array(slots, dtype=np.int64, ndmin=1)] = host_ids(x)

    def stored_ids(self) -> np.ndarray:
        """The node ids in the slots filled so far (host copy)."""
        return self.ids_host[: len(self)]


def forman_curvature(model, u: int, nbrs: torch.Tensor) -> torch.Tensor:
    """Augmented Forman-Ricci curvature of the edges ``(u, v)`` for ``v`` in ``nbrs``.

    ``F(u, v) = 4 - deg(u) - deg(v) + 3 * |N(u) ∩ N(v)|``.

    Examples
    --------
    >>> from clkit.models.gcn import GCN
    >>> ei = torch.tensor([[0, 1, 1, 2, 0, 2, 2, 3], [1, 0, 2, 1, 2, 0, 3, 2]])   # triangle 0-1-2 plus 2-3
    >>> net = GCN(torch.zeros(4, 1), ei, num_classes=2, hidden=2)
    >>> forman_curvature(net, 2, torch.tensor([0, 3])).tolist()   # 4-3-2+3 = 2 ; 4-3-1+0 = 0
    [2, 0]
    """
    deg = model.degrees()
    mine = set(model.neighbors(u).tolist())
    tri = torch.tensor([len(mine & set(model.neighbors(int(v)).tolist())) for v in nbrs], dtype=torch.int64)
    return 4 - deg[u] - deg[nbrs] + 3 * tri


def _select(model, u: int, fanout: int, rule: str, rng) -> torch.Tensor:
    nb = model.neighbors(u)
    if len(nb) <= fanout:
        return nb
    if rule == "curvature":
        curv = forman_curvature(model, u, nb)
        order = torch.argsort(-curv.float() * 1e6 + torch.arange(len(nb)).float(), stable=True)  # ties: lower id
        return nb[order[:fanout]]
    deg = model.degrees()[nb].double().numpy() + 1.0
    pick = rng.choice(len(nb), size=fanout, replace=False, p=deg / deg.sum())
    return nb[torch.as_tensor(np.sort(pick))]


def sparsified_subgraph(model, node: int, fanouts=(5, 5), rule: str = "degree", seed: int = 0):
    """The sparsified computation subgraph of ``node``.

    Parameters
    ----------
    model : GCN
    node : int
    fanouts : tuple of int
        Neighbours kept at each hop (DRIFT: (5, 5)).
    rule : {"degree", "curvature"}
        SSM's degree-proportional sampling or SEM's top-curvature edges.
    seed : int
        With ``node`` seeds the sampling, so a node's subgraph is fixed once drawn.

    Returns
    -------
    nodes : Tensor of int64, shape (n,) -- global ids, ``nodes[0] == node``
    edge_index : Tensor of int64, shape (2, e) -- local ids, both directions

    Examples
    --------
    >>> from clkit.models.gcn import GCN
    >>> ei = torch.tensor([[0, 0, 0, 1, 2, 3], [1, 2, 3, 0, 0, 0]])
    >>> net = GCN(torch.zeros(4, 1), ei, num_classes=2, hidden=2)
    >>> nodes, e = sparsified_subgraph(net, 0, fanouts=(2, 1), rule="curvature")
    >>> nodes.tolist(), e.shape[1]
    ([0, 1, 2], 4)
    """
    rng = np.random.default_rng([seed, int(node)])
    frontier, edges, seen = [int(node)], [], [int(node)]
    for fan in fanouts:
        nxt = []
        for u in frontier:
            for v in _select(model, u, fan, rule, rng).tolist():
                edges.append((u, v))
                if v not in seen:
                    seen.append(v)
                    nxt.append(v)
        frontier = nxt
    nodes = torch.tensor(seen, dtype=torch.int64)
    local = {g: i for i, g in enumerate(seen)}
    if edges:
        e = torch.tensor([(local[u], local[v]) for u, v in edges], dtype=torch.int64).T
        e = torch.unique(torch.cat([e, e.flip(0)], 1), dim=1)
    else:
        e = torch.zeros((2, 0), dtype=torch.int64)
    return nodes, e


class _SubgraphMemory(TaskAwareStrategy):
    """Reservoir memory of nodes replayed through their sparsified subgraphs (see the module docstring)."""

    rule = "degree"
    task_free = True
    #: needs a model that holds its graph (``clkit.models.gcn.GCN``); other backbones raise TypeError
    needs_graph_model = True

    def __init__(self, model, *, memory_size: int = 100, fanouts=(5, 5), **kwargs):
        _check_graph_model(model)
        super().__init__(model, **kwargs)
        self.memory_size = check_int("memory_size", memory_size, low=1)
        self.fanouts = tuple(check_int("fanouts", f, low=1) for f in fanouts)
        self.memory = NodeReservoir(self.memory_size, seed=self.seed)
        self._subgraphs: dict[int, tuple] = {}
        self._blocks: dict[int, tuple] = {}

    def subgraph(self, node: int):
        """The stored subgraph of a memory node (drawn once on the host, then kept): ``(nodes, edge_index)``."""
        if node not in self._subgraphs:
            self._subgraphs[node] = sparsified_subgraph(self.model, node, self.fanouts, self.rule, self.seed)
        return self._subgraphs[node]

    def _block(self, node: int):
        """A memory node's subgraph on the device: ``(nodes, Adjacency)``, normalised once on the host."""
        if node not in self._blocks:
            from ..models.gcn import Adjacency

            nodes, e = self.subgraph(node)
            adj = Adjacency.from_edges(e, len(nodes), getattr(self.model, "normalize", True))
            self._blocks[node] = (move(nodes, self.device), adj.to(self.device))
        return self._blocks[node]

    def replay_loss(self, n: int) -> torch.Tensor | float:
        """Loss of ``n`` memory nodes (at most the memory) scored on their subgraphs, in one pass."""
        from ..models.gcn import Adjacency

        size = len(self.memory)
        if size == 0:
            return 0.0
        slots = torch.randperm(size, generator=self.generator)[: min(n, size)]   # ReservoirBuffer.sample's draw
        if len(slots) == 0:
            return 0.0
        blocks = [self._block(int(v)) for v in self.memory.ids_host[slots.numpy()]]
        sizes = [len(b[0]) for b in blocks]
        centers = torch.as_tensor(np.cumsum([0] + sizes[:-1]), dtype=torch.int64)   # host index of the centres
        logits = self.model.forward_blocks(torch.cat([b[0] for b in blocks]),
                                           Adjacency.block_diag([b[1] for b in blocks]), centers)
        return self.criterion(logits, take(self.memory.y, slots))

    def train_step(self, x, y, task: Task | None = None) -> float:
        self._n_incoming = len(y)
        return super().train_step(x, y, task)

    def penalty(self, task):
        return self.replay_loss(self._n_incoming)

    def after_step(self, x, y, task) -> None:
        kept = set(self.memory.stored_ids().tolist())
        self.memory.add(x, y, task.task_id if task is not None else -1)
        now = set(self.memory.stored_ids().tolist())
        for gone in kept - now:  # forget subgraphs of evicted nodes
            self._subgraphs.pop(gone, None)
            self._blocks.pop(gone, None)


@register("ssm")
class SSM(_SubgraphMemory):
    """Sparsified subgraph memory (reservoir; degree-proportional neighbour sampling, fan-outs (5, 5)).

    Examples
    --------
    >>> from clkit.data.graphs import csbm
    >>> from clkit.models.gcn import GCN
    >>> g = csbm(200, 4, seed=0)
    >>> s = SSM(GCN(g.x, g.edge_index, 4, hidden=8), memory_size=10, optimizer="adam")
    >>> for t in range(3):
    ...     idx = torch.arange(10 * t, 10 * t + 10)
    ...     _ = s.observe(idx, g.y[idx])
    >>> len(s.memory), all(len(s.subgraph(int(v))[0]) <= 1 + 5 + 25 for v in s.memory.data()[0])
    (10, True)
    """

    rule = "degree"


@register("sem")
class SEM(_SubgraphMemory):
    """Subgraph episodic memory with curvature-based sparsification (top Forman-Ricci edges per hop)."""

    rule = "curvature"


class VariationalLayer(nn.Module):
    """Encoder ``z -> (mu, log sigma^2)``, reparameterised sample, decoder back to ``z``."""

    def __init__(self, dim: int):
        super().__init__()
        self.mu = nn.Linear(dim, dim)
        self.logvar = nn.Linear(dim, dim)
        self.decoder = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, z: torch.Tensor, generator: torch.Generator | None = None):
        """``(sample, mu, logvar, reconstruction)``; the noise is drawn from ``generator`` on the CPU (the same
        draws on every device) and moved to ``z``'s device."""
        mu, logvar = self.mu(z), self.logvar(z).clamp(-10, 10)
        eps = torch.randn(mu.shape, generator=generator).to(mu.device)
        sample = mu + torch.exp(0.5 * logvar) * eps
        return sample, mu, logvar, self.decoder(sample)


@register("dmsg")
class DMSG(TaskAwareStrategy):
    """Diversified memory selection and generation; see the module docstring.

    Parameters
    ----------
    model : GCN
    memory_size : int
        Memory nodes over all classes (DRIFT: 100).
    num_generated : int
        Synthetic embeddings generated per memory row in a step.
    kl_weight, recon_weight : float
        Weights of the KL and reconstruction terms.
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.data.graphs import csbm
    >>> from clkit.models.gcn import GCN
    >>> g = csbm(200, 4, seed=0)
    >>> s = DMSG(GCN(g.x, g.edge_index, 4, hidden=8), memory_size=8, optimizer="adam")
    >>> for t in range(5):
    ...     idx = torch.arange(10 * t, 10 * t + 10)
    ...     _ = s.observe(idx, g.y[idx])
    >>> len(s.mem_nodes), bool(np.ptp(np.bincount(s.mem_y.numpy())) <= 1)
    (8, True)
    """

    task_free = True
    needs_graph_model = True

    def __init__(self, model, *, memory_size: int = 100, num_generated: int = 1, kl_weight: float = 0.01,
                 recon_weight: float = 1.0, **kwargs):
        _check_graph_model(model)
        super().__init__(model, **kwargs)
        self.memory_size = check_int("memory_size", memory_size, low=1)
        self.num_generated = check_int("num_generated", num_generated, low=1)
        self.kl_weight = check_real("kl_weight", kl_weight, low=0)
        self.recon_weight = check_real("recon_weight", recon_weight, low=0)
        with torch_seeded(self.seed):  # no draw from the global generator; built on the CPU, then moved
            self.variational = VariationalLayer(model.head.in_features)
        self.variational.to(self.device)
        self.optimizer = self.make_optimizer(list(self.model.parameters()) + list(self.variational.parameters()))
        self.mem_nodes = torch.zeros(0, dtype=torch.int64, device=self.device)
        self.mem_y = torch.zeros(0, dtype=torch.int64, device=self.device)
        self.mem_host = np.zeros(0, dtype=np.int64)   # the memory's node ids on the host

    def train_step(self, x, y, task: Task | None = None) -> float:
        self._n_incoming = len(y)
        return super().train_step(x, y, task)

    def penalty(self, task):
        m = len(self.mem_nodes)
        if m == 0:
            return 0.0
        idx = torch.randperm(m, generator=self.generator)[: self._n_incoming]
        nodes, y = self.mem_nodes[idx], self.mem_y[idx]
        z = self.model.embed(nodes)
        real = self.criterion(self.model.head(z), y)
        zr = z.detach().repeat(self.num_generated, 1)
        sample, mu, logvar, recon = self.variational(zr, self.generator)
        gen = self.criterion(self.model.head(sample), y.repeat(self.num_generated))
        kl = -0.5 * torch.mean(torch.sum(1 + logvar - mu ** 2 - logvar.exp(), dim=1))
        rec = F.mse_loss(recon, zr)
        return real + gen + self.kl_weight * kl + self.recon_weight * rec

    @torch.no_grad()
    def after_step(self, x, y, task) -> None:
        ids = np.concatenate([self.mem_host, host_ids(x)])   # read: the batch's node ids
        uniq, first = np.unique(ids, return_index=True)
        first = torch.as_tensor(first)
        nodes, labels = torch.cat([self.mem_nodes, x.detach()])[first], torch.cat([self.mem_y, y])[first]
        excess = len(uniq) - self.memory_size
        if excess > 0:
            self.model.eval()
            keep = self._diverse_prune(self.model.embed(nodes), labels, excess, self.model.head.out_features)
            self.model.train()
            nodes, labels, uniq = nodes[keep], labels[keep], uniq[host_ids(keep)]   # read: the rows kept
        self.mem_nodes, self.mem_y, self.mem_host = nodes, labels, uniq

    @staticmethod
    def _diverse_prune(emb: torch.Tensor, labels: torch.Tensor, excess: int, num_classes: int) -> torch.Tensor:
        """Drop ``excess`` rows: each time, the most redundant row of the currently largest class.

        Runs on ``emb``'s device with fixed shapes (no value read): class counts by
        ``index_add_`` over ``num_classes`` bins, the largest class by ``argmax`` (the
        lowest label on ties), its row nearest to another live row of its class by
        ``argmin`` (the lowest position on ties). Returns the positions kept, ascending,
        shape (len(labels) - excess,).

        Examples
        --------
        >>> emb = torch.tensor([[0.0], [0.1], [5.0], [9.0]])
        >>> DMSG._diverse_prune(emb, torch.tensor([0, 0, 0, 1]), 1, 2).tolist()   # 0 and 1 are redundant
        [1, 2, 3]
        """
        n = len(labels)
        inf = float("inf")
        alive = torch.ones(n, dtype=torch.bool, device=emb.device)
        dist = torch.cdist(emb, emb)
        dist.fill_diagonal_(inf)
        dist.masked_fill_(labels[:, None] != labels[None, :], inf)
        top = torch.finfo(dist.dtype).max
        for _ in range(excess):
            counts = torch.zeros(num_classes, device=emb.device).index_add_(0, labels, alive.float())
            nn_dist = dist.masked_fill(~alive[None, :], inf).min(dim=1).values
            cand = alive & (labels == counts.argmax())
            drop = torch.where(cand, nn_dist.clamp(max=top), inf).argmin()
            alive = alive.index_fill(0, drop.view(1), False)
        return torch.argsort((~alive).to(torch.int32), stable=True)[: n - excess]
