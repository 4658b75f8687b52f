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
  5 second-hop nodes, picked uniformly (SSM). SEM (:class:`AuthorsSEM`) keeps, as the
  released ``sem_utils.py`` does, the block edges of highest neighbourhood-overlap
  curvature proxy, on the sampled blocks of the batch that stored the node, edges
  directed toward the centre (:mod:`clkit.drift.authors_methods`);
  ``curvature="forman"`` offers the text's Forman-Ricci reading under the same budget;
- **GSS**: as ``gss_model.py`` -- a staging buffer of 10, a separate optimiser step
  replaying 10 memory nodes, replacement considered only when the staged batch's
  gradient has cosine below 0 with all of ``memory_strength = 5`` gradients of 10
  memory nodes each (:class:`AuthorsGSS`);
- **DMSG** (:class:`AuthorsDMSG`, ``dmsg_model.py`` with ``GCN_dmsg``): replay weight
  20, the 5 most diverse nodes of each batch then a reservoir of 100 entries, the
  same-label similarity loss, KL / ln 2 and an adversarial term behind a gradient
  reversal, the variational layer as the second half of a first layer twice as wide
  (:mod:`clkit.drift.authors_methods` says what remains different); the text protocol
  runs the kit's :class:`clkit.strategies.DMSG`.

Devices: every learner runs on the device it is given (``device``, ``precision``: the
run's), with the host reads of the kit's strategies (:mod:`clkit.strategies.graph`,
:mod:`clkit.strategies.task_free`) and these: AuthorsGSS reads the cosines of the staged
nodes' gradients once per flush of its staging buffer (at most twice: the batch's, then
the nodes', only when the batch passes), since its replacement draws use them;
AuthorsMAS* reads its task loss and penalty together, once per step, for its detector;
AuthorsSEM reads the batch's ids as SSM does (in the steps where its reservoir writes) and
builds the stored subgraphs from the host copy of the graph; AuthorsDMSG reads the
positions of the nodes it chooses from each batch, once per step.
"""

from __future__ import annotations

import numpy as np
import torch

from .._validate import check_choice, check_int, check_real
from ..device import host_float, to_host
from ..strategies import make_strategy
from ..strategies.graph import SSM, forman_curvature
from .authors_methods import AuthorsDMSG, AuthorsSEMMemory, isolate  # noqa: F401 -- isolate re-exported
from ..strategies.importance import quadratic_penalty
from ..strategies.projection import AGEM
from ..strategies.rehearsal import ER
from ..strategies._common import TaskAwareStrategy
from ..strategies.base import _cat
from ..strategies.task_free import MASStar

__all__ = ["ER_LOSS_FORMS", "AuthorsER", "AuthorsAGEM", "AuthorsGSS", "AuthorsMASStar", "AuthorsSSM", "AuthorsSEM",
           "AuthorsDMSG", "make_authors_learner", "AUTHORS_WEIGHT_DECAY"]

#: weight decay of every method in the authors' code
AUTHORS_WEIGHT_DECAY = 5e-4


#: ER's loss forms: the authors' sum of two means, the text's (and clkit's ER) one mean over batch and replay
ER_LOSS_FORMS = ["two_means", "one_mean"]


class AuthorsER(ER):
    """ER whose reservoir replays its nodes as isolated nodes, ``replay_size`` of them per step.

    ``replay_size`` (default 10): the rows replayed each step, ``min(replay_size, stored)``,
    as ``er_model.py``'s ``min(batch_size * memory_proportion, buffer_size)`` with their
    ``memory_proportion = 1`` (``er_args``), so a partial batch (the last of a task segment
    in their loops) still replays a full batch's worth. ``None``: as many rows as the
    incoming batch (``len(y)``), clkit's :class:`clkit.strategies.ER` rule, which the text
    protocol runs (the paper's text says only that batches are "augmented with nodes
    sampled uniformly from the buffer", App. A.2).

    ``loss_form="two_means"`` (the released ``er_model.py``): ``CE(batch) + CE(replayed
    rows)``, two means added, so the replay has the weight of the whole batch and the
    step is about twice the one-mean step (with weight decay, the decay's relative
    strength halves). ``"one_mean"`` (the paper's text and :class:`clkit.strategies.ER`):
    one mean over the batch and the replayed rows together. Both draw the same memory
    rows from the same generator.

    Examples
    --------
    >>> import copy
    >>> from clkit.models.gcn import GCN
    >>> net = GCN(torch.eye(4), torch.tensor([[0, 1], [1, 0]]), num_classes=2, hidden=3)
    >>> x, y = torch.arange(4), torch.tensor([0, 1, 0, 1])
    >>> losses = {}
    >>> for form in ER_LOSS_FORMS:
    ...     s = AuthorsER(copy.deepcopy(net), memory_size=4, loss_form=form, seed=0)
    ...     _ = s.observe(x, y)   # fills the memory (no replay yet)
    ...     losses[form] = s.observe(x, y)
    >>> round(float(losses["two_means"] / losses["one_mean"]), 2)   # 4 + 4 rows: two means = 2 x one mean
    2.0
    >>> s = AuthorsER(copy.deepcopy(net), memory_size=4, replay_size=3, seed=0)
    >>> _ = s.observe(x, y)   # 4 rows stored
    >>> s.replay_count(1), s.replay_count(10)
    (3, 3)
    >>> s.replay_size = None   # clkit's rule: as many as the batch
    >>> s.replay_count(1), s.replay_count(10)
    (1, 4)
    """

    def __init__(self, model, *, loss_form: str = "two_means", replay_size: int | None = 10, **kwargs):
        super().__init__(model, **kwargs)
        self.loss_form = check_choice("loss_form", loss_form, ER_LOSS_FORMS)
        self.replay_size = None if replay_size is None else check_int("replay_size", replay_size, low=1)

    def replay_count(self, n_batch: int) -> int:
        """Rows replayed with an incoming batch of ``n_batch`` rows: ``min(replay_size, stored)``
        (``replay_size=None``: ``min(n_batch, stored)``)."""
        return min(n_batch if self.replay_size is None else self.replay_size, len(self.memory))

    def replay(self, x, y, task):
        tids = self.task_ids_of(len(y), task)
        mx, my, mt = self.memory.sample(self.replay_count(len(y)), self.generator)
        if mx is None or len(my) == 0:
            return x, y, tids
        return _cat(x, mx), torch.cat([y, my]), torch.cat([tids, mt])

    def train_step(self, x, y, task=None) -> torch.Tensor:
        if self.loss_form == "one_mean":
            return super().train_step(x, y, task)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        with self.amp.autocast():
            loss = self.criterion(self.forward(x, task), y)
            mx, my, _ = self.memory.sample(self.replay_count(len(y)), self.generator)
            if mx is not None and len(my):
                loss = loss + self.criterion(self.forward(mx, task), my)
            loss = loss + self.penalty(task)
        self.amp.backward(loss, self.optimizer)
        self.after_backward(x, y, task)
        self.amp.step(self.optimizer)
        self.after_step(x, y, task)
        self.steps += 1
        return loss.detach()

    def after_step(self, x, y, task) -> None:
        super().after_step(isolate(x), y, task)


class AuthorsAGEM(AGEM):
    """A-GEM with isolated memory nodes and a 10-row reference gradient."""

    def __init__(self, model, *, agem_sample_size: int = 10, **kwargs):
        super().__init__(model, agem_sample_size=agem_sample_size, **kwargs)

    def after_step(self, x, y, task) -> None:
        super().after_step(isolate(x), y, task)


class AuthorsGSS(TaskAwareStrategy):
    """GSS as the authors' ``gss_model.py`` runs it (greedy gradient-based sample selection).

    Incoming nodes are staged in a ring buffer of ``n_memories`` = 10. Every step is
    one optimiser step on the incoming batch and, once the memory holds nodes, a
    *separate* optimiser step on ``n_constraints`` = 10 random memory nodes (entered
    isolated). When the staging buffer is full it is flushed into the memory of
    ``memory_size`` = 100 nodes: while the memory has room the staged nodes are added
    with their score (0.1 for the very first ones); once full, the staged batch's
    gradient is compared with ``memory_strength`` = 5 gradients of 10 random memory
    nodes each, and only when its largest cosine is below ``sim_threshold`` = 0 are
    replacements considered: memory slots are drawn in proportion to their min-max
    normalised scores, and each staged node replaces its slot with probability
    ``(c_slot + 1) / ((c_node + 1) + (c_slot + 1))``, where ``c`` is the largest
    cosine between a node's gradient and the memory gradients.
    """

    task_free = True

    def __init__(self, model, *, memory_size: int = 100, n_memories: int = 10, n_constraints: int = 10,
                 memory_strength: int = 5, sim_threshold: float = 0.0, **kwargs):
        super().__init__(model, **kwargs)
        self.memory_size = check_int("memory_size", memory_size, low=1)
        self.n_memories = check_int("n_memories", n_memories, low=1)
        self.n_constraints = check_int("n_constraints", n_constraints, low=1)
        self.memory_strength = check_int("memory_strength", memory_strength, low=1)
        self.sim_threshold = check_real("sim_threshold", sim_threshold)
        self.stage_x, self.stage_y = [], []   # staged rows, tensors on the device
        self._staged = 0
        self.mem_x = torch.zeros(0, dtype=torch.int64, device=self.device)
        self.mem_y = torch.zeros(0, dtype=torch.int64, device=self.device)
        self.mem_cos = torch.zeros(0)   # each slot's score c, on the host (read at the flushes)
        self.replacements = 0

    def _params(self):
        return [p for p in self.model.parameters() if p.requires_grad]

    def _grad(self, x, y) -> torch.Tensor:
        params = self._params()
        g = torch.autograd.grad(self.criterion(self.model(x), y), params, allow_unused=True)
        return torch.cat([(gi if gi is not None else torch.zeros_like(p)).reshape(-1) for gi, p in zip(g, params)])

    def _memory_grads(self) -> torch.Tensor:
        order = torch.randperm(len(self.mem_y), generator=self.generator)
        size = min(self.n_constraints, len(self.mem_y))
        grads = []
        for i in range(self.memory_strength):
            sel = order[i * size:(i + 1) * size]
            if len(sel) == 0:
                break
            grads.append(self._grad(isolate(self.mem_x[sel]), self.mem_y[sel]))
        return torch.stack(grads)

    @staticmethod
    def _max_cos(mem_grads, g) -> torch.Tensor:
        """The largest cosine between ``g`` and the rows of ``mem_grads`` (a 0-dim tensor on their device)."""
        w = mem_grads.norm(dim=1) + 1e-8
        return ((mem_grads @ g) / (w * (g.norm() + 1e-8))).max()

    @staticmethod
    def _read(cosines) -> list[float]:
        """The cosines read from the device in one copy; a value that is not finite counts as 0."""
        return [v if np.isfinite(v) else 0.0 for v in to_host(torch.stack(list(cosines))).tolist()]

    def _node_cosines(self, mem_grads, sx, sy) -> torch.Tensor:
        """``c`` of every staged node (its own gradient against the memory gradients), on the host."""
        return torch.tensor(self._read(self._max_cos(mem_grads, self._grad(sx[i:i + 1], sy[i:i + 1]))
                                       for i in range(len(sy))))

    def train_step(self, x, y, task=None) -> torch.Tensor:
        room = self.n_memories - self._staged
        if room > 0 and len(y):
            self.stage_x.append(x[:room].detach())
            self.stage_y.append(y[:room])
            self._staged += min(room, len(y))
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        with self.amp.autocast():
            loss = self.criterion(self.model(x), y)
        self.amp.backward(loss, self.optimizer)
        self.amp.step(self.optimizer)
        if len(self.mem_y):
            sel = torch.randperm(len(self.mem_y), generator=self.generator)[: self.n_constraints]
            self.optimizer.zero_grad(set_to_none=True)
            with self.amp.autocast():
                replayed = self.criterion(self.model(isolate(self.mem_x[sel])), self.mem_y[sel])
            self.amp.backward(replayed, self.optimizer)
            self.amp.step(self.optimizer)
        if self._staged == self.n_memories:
            self._flush()
        self.steps += 1
        return loss.detach()

    def _flush(self) -> None:
        sx, sy = torch.cat(self.stage_x), torch.cat(self.stage_y)
        self.stage_x, self.stage_y, self._staged = [], [], 0
        self.model.eval()
        try:
            if len(self.mem_y) == 0:
                self.mem_x, self.mem_y, self.mem_cos = sx, sy, torch.full((len(sy),), 0.1)
                return
            mem_grads = self._memory_grads()
            if len(self.mem_y) < self.memory_size:
                cos = self._node_cosines(mem_grads, sx, sy)
                self.mem_x, self.mem_y = torch.cat([self.mem_x, sx]), torch.cat([self.mem_y, sy])
                self.mem_cos = torch.cat([self.mem_cos, cos])
                return
            if self._read([self._max_cos(mem_grads, self._grad(sx, sy))])[0] >= self.sim_threshold:
                return
            c = torch.nan_to_num(self.mem_cos.clone())
            rng = float(c.max() - c.min())
            weights = torch.ones_like(c) if rng < 1e-6 else (c - c.min()) / (rng + 1e-6)
            if int((weights > 0).sum()) < len(sy):
                weights = weights + 1e-6
            slots = torch.multinomial(weights, len(sy), replacement=False, generator=self.generator)
            item = self._node_cosines(mem_grads, sx, sy)
            probs = torch.stack([(item + 1) / 2, (self.mem_cos[slots] + 1) / 2], 1).clamp(min=0)
            outcome = torch.multinomial(probs + 1e-12, 1, generator=self.generator)[:, 0]
            for i in torch.nonzero(outcome == 1)[:, 0].tolist():
                j = int(slots[i])
                self.mem_x[j], self.mem_y[j], self.mem_cos[j] = sx[i], sy[i], item[i]
                self.replacements += 1
        finally:
            self.model.train()


class AuthorsMASStar(MASStar):
    """MAS* as in the authors' ``tfmas_model.py``; see the module docstring.

    ``penalty_factor`` (0.25 = ``MAS_weight / 2``) multiplies ``sum Omega (theta - theta*)^2``.
    ``num_updates`` counts the detector's firings.
    """

    def __init__(self, model, *, penalty_factor: float = 0.25, **kwargs):
        super().__init__(model, **kwargs)
        self.penalty_factor = check_real("penalty_factor", penalty_factor, low=0)
        self._penalty = 0.0   # the step's penalty: 0.0, or a tensor on the device until after_step reads it

    def penalty(self, task):
        if not self.omega:
            self._penalty = 0.0
            return 0.0
        pen = self.penalty_factor * quadratic_penalty(self.model, [(self.omega, self.anchor)])
        self._penalty = pen.detach()
        return pen

    def watched_loss(self) -> float:
        """Task loss plus penalty, as the authors' detector sees it: both read in one copy, added on the host."""
        if isinstance(self._penalty, torch.Tensor):
            v = to_host(torch.stack([self._task_loss.float().reshape(()), self._penalty.float().reshape(())]))
            return float(v[0]) + float(v[1])
        return host_float(self._task_loss) + self._penalty

    def importance(self, x) -> dict[str, torch.Tensor]:
        """``|d mean(f(x)[:, :seen]^2) / d theta|`` on the current batch."""
        params = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        out = self.model(x)
        limit = getattr(self.model, "logit_limit", None) or out.shape[1]
        grads = torch.autograd.grad(out[:, :limit].pow(2).mean(), [p for _, p in params], allow_unused=True)
        return {n: (g.abs() if g is not None else torch.zeros_like(p)).detach() for (n, p), g in zip(params, grads)}

    def after_step(self, x, y, task) -> None:
        if self.detector.update(self.watched_loss()):
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


class AuthorsSEM(AuthorsSEMMemory, AuthorsSSM):
    """SEM with the authors' budget (10 subgraphs of at most 1 + 5 + 5 nodes) and their first-hop rule.

    ``curvature="overlap"`` (default; the released ``sem_utils.py``): the subgraph of a node is
    built when the reservoir stores it, from the sampled blocks of the batch it came in, keeping
    the block edges of highest neighbourhood-overlap proxy
    :func:`clkit.drift.authors_methods.overlap_curvature` (5 at the first hop, 5 in all at the
    second), stored as edges directed toward the centre plus self-loops
    (:func:`clkit.drift.authors_methods.overlap_subgraph`). ``curvature="forman"`` (the curvature
    the paper's text names, the kit's earlier reading): the 5 first-hop neighbours of highest
    Forman-Ricci curvature on the whole graph, 5 second-hop nodes drawn uniformly
    (:func:`small_subgraph`). ``block_fanouts``: in-edges per node of the input and output
    blocks, ``"model"`` (default) the backbone's sampler (:class:`clkit.models.gcn.AuthorsGCN`:
    (10, 25)), None full neighbourhoods. See :mod:`clkit.drift.authors_methods`.

    Examples
    --------
    >>> from clkit.data.graphs import csbm
    >>> from clkit.models.gcn import AuthorsGCN
    >>> g = csbm(200, 4, avg_degree=12, seed=0)
    >>> s = AuthorsSEM(AuthorsGCN(g.x, g.edge_index, 4, hidden=8), optimizer="adam")
    >>> for t in range(3):
    ...     idx = torch.arange(10 * t, 10 * t + 10)
    ...     _ = s.observe(idx, g.y[idx])
    >>> len(s.memory), all(len(s.subgraph(int(v))[0]) <= 11 for v in s.memory.stored_ids())
    (10, True)
    """

    subgraph_rule = "curvature"

    def __init__(self, model, *, memory_size: int = 100, curvature: str = "overlap", block_fanouts="model",
                 **kwargs):
        super().__init__(model, memory_size=memory_size, **kwargs)
        self._init_overlap(curvature, block_fanouts)


_CLASSES = {"er": AuthorsER, "agem": AuthorsAGEM, "gss": AuthorsGSS, "mas_star": AuthorsMASStar,
            "ssm": AuthorsSSM, "sem": AuthorsSEM, "dmsg": AuthorsDMSG}


def make_authors_learner(method: str, model, *, lr: float = 5e-3, memory_size: int = 100, seed: int = 0,
                         weight_decay: float = AUTHORS_WEIGHT_DECAY, device="cpu", precision: str = "fp32",
                         stream_batch_size: int | None = None, **kwargs):
    """The DRIFT learner ``method`` as the authors' code runs it: Adam, weight decay 5e-4.

    ``device`` / ``precision``: the run's (the model moves there; :mod:`clkit.device`).
    ``stream_batch_size``: the stream's batch size B; ER then replays ``B x memory_proportion``
    = ``B`` rows (:class:`AuthorsER`'s ``replay_size``; default 10, their B), and DMSG replays
    ``min(B, |memory|)`` nodes and chooses ``B // 2`` per batch (:class:`AuthorsDMSG`).
    ``kwargs`` go to the method's class (e.g. ``loss_form="one_mean"`` for ER).

    Examples
    --------
    >>> from clkit.models import MLP
    >>> type(make_authors_learner("er", MLP(2, 2))).__name__, make_authors_learner("bare", MLP(2, 2)).weight_decay
    ('AuthorsER', 0.0005)
    """
    from .evaluate import METHODS, REGISTRY_NAME

    check_choice("method", method, [m for m in METHODS if m != "joint"])
    kw = dict(optimizer="adam", lr=check_real("lr", lr, low=0, low_open=True), scenario="class", seed=seed,
              weight_decay=check_real("weight_decay", weight_decay, low=0), device=device, precision=precision)
    if method == "bare":
        return make_strategy("naive", model, **kw)
    memory_size = check_int("memory_size", memory_size, low=1)
    if method == "er" and stream_batch_size is not None:
        kwargs = {"replay_size": check_int("stream_batch_size", stream_batch_size, low=1), **kwargs}
    if method == "dmsg" and stream_batch_size is not None:
        kwargs = {"stream_batch_size": check_int("stream_batch_size", stream_batch_size, low=1), **kwargs}
    if method in _CLASSES:
        return _CLASSES[method](model, memory_size=memory_size, **kw, **kwargs)
    return make_strategy(REGISTRY_NAME[method], model, memory_size=memory_size, **kw, **kwargs)
