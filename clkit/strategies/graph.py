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
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._seed import torch_seeded
from .._validate import check_int, check_real
from ._common import TaskAwareStrategy
from .base import Task, register
from .memory import ReservoirBuffer

__all__ = ["SSM", "SEM", "DMSG", "sparsified_subgraph", "forman_curvature"]


def _check_graph_model(model):
    for attr in ("embed", "forward_subgraph", "neighbors", "crow", "col"):
        if not hasattr(model, attr):
            raise TypeError(f"model must hold its graph (clkit.models.gcn.GCN); it lacks {attr!r}")


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
    """Reservoir memory of nodes replayed through their sparsified subgraphs."""

    rule = "degree"
    task_free = True
    #: needs a model that holds its graph (``clkit.models.gcn.GCN``); other backbones raise TypeError
    needs_graph_model = True

    def __init__(self, model, *, memory_size: int = 100, fanouts=(5, 5), **kwargs):
        _check_graph_model(model)
        super().__init__(model, **kwargs)
        self.memory_size = check_int("memory_size", memory_size, low=1)
        self.fanouts = tuple(check_int("fanouts", f, low=1) for f in fanouts)
        self.memory = ReservoirBuffer(self.memory_size, seed=self.seed)
        self._subgraphs: dict[int, tuple] = {}

    def subgraph(self, node: int):
        """The stored subgraph of a memory node (drawn once, then kept)."""
        if node not in self._subgraphs:
            self._subgraphs[node] = sparsified_subgraph(self.model, node, self.fanouts, self.rule, self.seed)
        return self._subgraphs[node]

    def replay_loss(self, n: int) -> torch.Tensor | float:
        mx, my, _ = self.memory.sample(n, self.generator)
        if mx is None or len(my) == 0:
            return 0.0
        nodes, edges, centers, offset = [], [], [], 0
        for v in mx.tolist():
            sn, se = self.subgraph(int(v))
            nodes.append(sn)
            edges.append(se + offset)
            centers.append(offset)
            offset += len(sn)
        logits = self.model.forward_subgraph(torch.cat(nodes), torch.cat(edges, 1), torch.tensor(centers))
        return self.criterion(logits, my)

    def train_step(self, x, y, task: Task | None = None) -> float:
        self._n_incoming = len(y)
        return super().train_step(x, y, task)

    def penalty(self, task):
        return self.replay_loss(self._n_incoming)

    def after_step(self, x, y, task) -> None:
        kept = set(self.memory.data()[0].tolist()) if len(self.memory) else set()
        self.memory.add(x, y, task.task_id if task is not None else -1)
        now = set(self.memory.data()[0].tolist())
        for gone in kept - now:  # forget subgraphs of evicted nodes
            self._subgraphs.pop(gone, None)


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
        mu, logvar = self.mu(z), self.logvar(z).clamp(-10, 10)
        eps = torch.randn(mu.shape, generator=generator)
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
        with torch_seeded(self.seed):  # no draw from the global generator
            self.variational = VariationalLayer(model.head.in_features)
        self.optimizer = self.make_optimizer(list(self.model.parameters()) + list(self.variational.parameters()))
        self.mem_nodes = torch.zeros(0, dtype=torch.int64)
        self.mem_y = torch.zeros(0, dtype=torch.int64)

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
        nodes = torch.cat([self.mem_nodes, x.detach()])
        labels = torch.cat([self.mem_y, y])
        nodes, first = np.unique(nodes.numpy(), return_index=True)
        nodes, labels = torch.as_tensor(nodes), labels[torch.as_tensor(first)]
        excess = len(nodes) - self.memory_size
        if excess > 0:
            self.model.eval()
            keep = self._diverse_prune(self.model.embed(nodes), labels, excess)
            self.model.train()
            nodes, labels = nodes[keep], labels[keep]
        self.mem_nodes, self.mem_y = nodes, labels

    @staticmethod
    def _diverse_prune(emb: torch.Tensor, labels: torch.Tensor, excess: int) -> torch.Tensor:
        """Drop ``excess`` rows: each time, the most redundant row of the currently largest class."""
        alive = torch.ones(len(labels), dtype=torch.bool)
        dist = torch.cdist(emb, emb)
        dist.fill_diagonal_(float("inf"))
        dist[labels[:, None] != labels[None, :]] = float("inf")
        for _ in range(excess):
            counts = torch.bincount(labels[alive], minlength=int(labels.max()) + 1)
            big = int(torch.argmax(counts))
            cand = torch.nonzero(alive & (labels == big)).ravel()
            nn_dist = dist[cand][:, alive].min(dim=1).values
            drop = cand[int(torch.argmin(nn_dist))]
            alive[drop] = False
        return torch.nonzero(alive).ravel()
