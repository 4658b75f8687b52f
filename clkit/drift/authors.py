"""The DRIFT methods as the authors' released code runs them (protocol ``"authors"``).

Each class is a thin variant of the kit's strategy (:mod:`clkit.strategies`); what
changes, following github.com/UConn-DSIS/DRIFT (``Baselines/*``):

- every replay memory stores its nodes as *isolated* nodes: a stored node ``v`` is
  kept as ``-(v + 1)``, which :meth:`clkit.models.gcn.GCN.embed` evaluates without
  its edges (the authors build the memory graph from the nodes alone);
- **A-GEM**: the reference gradient from 10 memory rows (``batch_size x memory_proportion``);
- **MAS\\***: importance from the *current* batch only, as the gradient of the mean
  squared output over the classes seen so far; penalty ``MAS_weight / 2 = 0.25`` times
  ``sum Omega (theta - theta*)^2``; the shift detector sees the total loss (task loss
  plus penalty);
- **SSM / SEM**: a budget of ``memory_size // 10`` subgraphs (``budget // sum(nei_budget)``),
  each at most ``1 + 5 + 5`` nodes: the centre, up to 5 first-hop neighbours and up to
  5 second-hop nodes, picked uniformly (SSM). SEM keeps the 5 first-hop neighbours of
  highest Forman-Ricci curvature -- *not* the authors' neighbourhood-overlap curvature
  proxy (``sem_utils.py``);
- **GSS** and **DMSG** are the kit's versions with isolated replay and the protocol's
  weight decay; their other differences from the released code (GSS's 5 x 10 buffer
  gradients, similarity threshold 0 and separate replay step; DMSG's replay weight 20,
  diversity pruning, same-label similarity loss and 512-wide variational backbone) are
  not reproduced.
"""

from __future__ import annotations

import numpy as np
import torch

from .._validate import check_choice, check_int, check_real
from ..strategies import make_strategy
from ..strategies.graph import SEM, SSM, forman_curvature
from ..strategies.importance import quadratic_penalty
from ..strategies.projection import AGEM
from ..strategies.rehearsal import ER
from ..strategies.task_free import GSS, MASStar

__all__ = ["AuthorsER", "AuthorsAGEM", "AuthorsGSS", "AuthorsMASStar", "AuthorsSSM", "AuthorsSEM",
           "make_authors_learner", "AUTHORS_WEIGHT_DECAY"]

#: weight decay of every method in the authors' code
AUTHORS_WEIGHT_DECAY = 5e-4


def isolate(idx: torch.Tensor) -> torch.Tensor:
    """Node indices marked as isolated (``v -> -(v + 1)``; see :meth:`clkit.models.gcn.GCN.embed`).

    Examples
    --------
    >>> isolate(torch.tensor([0, 3])).tolist()
    [-1, -4]
    """
    return -torch.as_tensor(idx, dtype=torch.int64) - 1


class AuthorsER(ER):
    """ER whose reservoir replays its nodes as isolated nodes."""

    def after_step(self, x, y, task) -> None:
        super().after_step(isolate(x), y, task)


class AuthorsAGEM(AGEM):
    """A-GEM with isolated memory nodes and a 10-row reference gradient."""

    def __init__(self, model, *, agem_sample_size: int = 10, **kwargs):
        super().__init__(model, agem_sample_size=agem_sample_size, **kwargs)

    def after_step(self, x, y, task) -> None:
        super().after_step(isolate(x), y, task)


class AuthorsGSS(GSS):
    """GSS whose memory replays its nodes as isolated nodes."""

    def after_step(self, x, y, task) -> None:
        super().after_step(isolate(x), y, task)


class AuthorsMASStar(MASStar):
    """MAS* as in the authors' ``tfmas_model.py``; see the module docstring.

    ``penalty_factor`` (0.25 = ``MAS_weight / 2``) multiplies ``sum Omega (theta - theta*)^2``.
    ``num_updates`` counts the detector's firings.
    """

    def __init__(self, model, *, penalty_factor: float = 0.25, **kwargs):
        super().__init__(model, **kwargs)
        self.penalty_factor = check_real("penalty_factor", penalty_factor, low=0)
        self._penalty = 0.0

    def penalty(self, task):
        if not self.omega:
            self._penalty = 0.0
            return 0.0
        pen = self.penalty_factor * quadratic_penalty(self.model, [(self.omega, self.anchor)])
        self._penalty = float(pen.detach())
        return pen

    def importance(self, x) -> dict[str, torch.Tensor]:
        """``|d mean(f(x)[:, :seen]^2) / d theta|`` on the current batch."""
        params = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        out = self.model(x)
        limit = getattr(self.model, "logit_limit", None) or out.shape[1]
        grads = torch.autograd.grad(out[:, :limit].pow(2).mean(), [p for _, p in params], allow_unused=True)
        return {n: (g.abs() if g is not None else torch.zeros_like(p)).detach() for (n, p), g in zip(params, grads)}

    def after_step(self, x, y, task) -> None:
        if self.detector.update(self._task_loss + self._penalty):
            self.num_updates += 1
            new = self.importance(x)
            w = 1.0 / self.num_updates
            self.omega = {n: (1 - w) * self.omega[n] + w * v if n in self.omega else v for n, v in new.items()}
            self.anchor = {n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad}


def small_subgraph(model, node: int, hops=(5, 5), rule: str = "uniform", seed: int = 0):
    """A subgraph of at most ``1 + hops[0] + hops[1]`` nodes around ``node``.

    Up to ``hops[0]`` first-hop neighbours (uniform, or the highest Forman-Ricci
    curvature with ``rule="curvature"``), then up to ``hops[1]`` nodes drawn uniformly
    from their neighbours not yet taken; edges: centre to first hop, and each
    second-hop node to the first-hop nodes it is adjacent to.

    Examples
    --------
    >>> from clkit.data.graphs import csbm
    >>> from clkit.models.gcn import GCN
    >>> g = csbm(300, 4, avg_degree=12, seed=0)
    >>> nodes, e = small_subgraph(GCN(g.x, g.edge_index, 4, hidden=4), 0)
    >>> len(nodes) <= 11, int(nodes[0]), bool((e < len(nodes)).all())
    (True, 0, True)
    """
    rule = check_choice("rule", rule, ["uniform", "curvature"])
    rng = np.random.default_rng([seed, int(node)])
    nb = model.neighbors(int(node))
    if len(nb) > hops[0]:
        if rule == "curvature":
            curv = forman_curvature(model, int(node), nb).float()
            nb = nb[torch.argsort(-curv, stable=True)[: hops[0]]]
        else:
            nb = nb[torch.as_tensor(np.sort(rng.choice(len(nb), hops[0], replace=False)))]
    first = [int(v) for v in nb.tolist()]
    taken = {int(node), *first}
    cand = sorted({int(w) for u in first for w in model.neighbors(u).tolist()} - taken)
    if len(cand) > hops[1]:
        cand = [cand[i] for i in np.sort(rng.choice(len(cand), hops[1], replace=False))]
    nodes = [int(node)] + first + cand
    local = {v: i for i, v in enumerate(nodes)}
    edges = [(0, local[v]) for v in first]
    for w in cand:
        nbw = set(model.neighbors(w).tolist())
        edges += [(local[u], local[w]) for u in first if u in nbw]
    if edges:
        e = torch.tensor(edges, dtype=torch.int64).T
        e = torch.cat([e, e.flip(0)], 1)
    else:
        e = torch.zeros((2, 0), dtype=torch.int64)
    return torch.tensor(nodes, dtype=torch.int64), e


class AuthorsSSM(SSM):
    """SSM with ``memory_size // 10`` subgraphs of at most 1 + 5 + 5 nodes (uniform neighbours)."""

    subgraph_rule = "uniform"

    def __init__(self, model, *, memory_size: int = 100, **kwargs):
        memory_size = check_int("memory_size", memory_size, low=1)
        super().__init__(model, memory_size=max(1, memory_size // 10), **kwargs)

    def subgraph(self, node: int):
        if node not in self._subgraphs:
            self._subgraphs[node] = small_subgraph(self.model, node, self.fanouts, self.subgraph_rule, self.seed)
        return self._subgraphs[node]


class AuthorsSEM(SEM):
    """SEM with the authors' budget; first hop by Forman-Ricci curvature (not their proxy)."""

    subgraph_rule = "curvature"

    def __init__(self, model, *, memory_size: int = 100, **kwargs):
        memory_size = check_int("memory_size", memory_size, low=1)
        super().__init__(model, memory_size=max(1, memory_size // 10), **kwargs)

    subgraph = AuthorsSSM.subgraph


_CLASSES = {"er": AuthorsER, "agem": AuthorsAGEM, "gss": AuthorsGSS, "mas_star": AuthorsMASStar,
            "ssm": AuthorsSSM, "sem": AuthorsSEM}


def make_authors_learner(method: str, model, *, lr: float = 5e-3, memory_size: int = 100, seed: int = 0,
                         weight_decay: float = AUTHORS_WEIGHT_DECAY):
    """The DRIFT learner ``method`` as the authors' code runs it: Adam, weight decay 5e-4.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> type(make_authors_learner("er", MLP(2, 2))).__name__, make_authors_learner("bare", MLP(2, 2)).weight_decay
    ('AuthorsER', 0.0005)
    """
    from .evaluate import METHODS, REGISTRY_NAME

    check_choice("method", method, [m for m in METHODS if m != "joint"])
    kw = dict(optimizer="adam", lr=check_real("lr", lr, low=0, low_open=True), scenario="class", seed=seed,
              weight_decay=check_real("weight_decay", weight_decay, low=0))
    if method == "bare":
        return make_strategy("naive", model, **kw)
    memory_size = check_int("memory_size", memory_size, low=1)
    if method in _CLASSES:
        return _CLASSES[method](model, memory_size=memory_size, **kw)
    return make_strategy(REGISTRY_NAME[method], model, memory_size=memory_size, **kw)
