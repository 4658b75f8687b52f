"""SEM and DMSG as the DRIFT authors' released code runs them (protocol ``"authors"``).

Re-derived from github.com/UConn-DSIS/DRIFT (commit 156a787; ``Baselines/sem_utils.py``,
``Baselines/sem_model.py``, ``Baselines/dmsg_model.py``, ``Baselines/dmsg_utils.py``,
``Backbones/gnns.py``); no code is copied. What their code does, and where it differs
from the paper's text (both are offered, named):

**SEM** (:class:`AuthorsSEM`). The paper's text (App. A.2, after Zhang et al., TNNLS 2023)
keeps the neighbours of highest *Ricci curvature*; the kit's text protocol runs
:class:`clkit.strategies.SEM` with the augmented Forman-Ricci curvature
(:func:`clkit.strategies.graph.forman_curvature`). The released ``sem_utils.py``
(``_ricci_score``, ``sparsify_blocks_ricci``) scores an edge ``s -> d`` of a *sampled
DGL block* by a neighbourhood-overlap proxy::

    kappa(s, d) = (|N_in(d) ∩ N_out(s)| + 1) / (max(|N_in(d)|, |N_out(s)|) + 1)

where, inside the block, ``N_in(d)`` are the sources with an edge into ``d`` (the
block's in-edges of ``d``, self-loop included: their graphs carry self-loops,
``dataset/utils.py``) and ``N_out(s)`` the block's *destination* nodes that ``s`` sends
to. Because a block's destinations are its first sources, the intersection counts the
destination nodes ``w`` with ``w -> d`` and ``s -> w`` (:func:`overlap_curvature`). The
blocks are those of the training step that stored the node: the output block's
destinations are the incoming batch, the input block's the batch and the sources it
reached, each node's in-edges sampled by their ``NeighborSampler([10, 25])`` (25 for the
output block, 10 for the input block; full neighbourhoods when the backbone has no
sampler). So the proxy depends on which batch a node arrived in. A stored subgraph is
built hop by hop from the centre (:func:`overlap_subgraph`): all block edges into the
current targets (the centre, then the first-hop sources) are candidates -- the self-loop
``d -> d`` too -- and when there are more than the hop's budget (5, then 5 *in total*
for the second hop) the highest ``kappa`` are kept (``torch.topk``); the kept sources
become the next targets, and the stored edges are the kept ``s -> d`` edges, *directed
toward the centre*, plus one self-loop per node. The memory holds ``budget //
sum(nei_budget)`` = 100 // 10 = 10 subgraphs in a reservoir, replayed with the batch
(``sem_model.py``: memory proportion 1, the replay loss added to the batch's).

``AuthorsSEM(curvature="overlap")`` (the default; what the authors' protocol runs)
reproduces that; ``curvature="forman"`` keeps the kit's earlier reading under the
authors' budget (the 5 first-hop neighbours of highest Forman-Ricci curvature on the
whole graph, 5 second-hop nodes drawn uniformly, both edge directions), the curvature
the paper's text names. Differences that remain in the released variant: the blocks are
an independent draw of the same sampler (the kit's backbone does not hand its own draw
to the strategy), drawn from the strategy's seeded generator only when the memory
writes; ties in ``kappa`` go to the earlier candidate (block edges in order of their
target, then of source id; ``torch.topk``'s order on ties, over DGL's edge order, is
not specified); a self-loop kept as a "neighbour" makes the centre's self-loop count
twice, as in their multigraph (the centre's own row is summed twice by the sum
aggregation of :class:`clkit.models.gcn.AuthorsGCN`); replay uses the stored subgraph's
full neighbourhoods (their replay samples at most 10 / 25 in-edges per node, which only a
centre kept as its own neighbour, with more than 10 in-edges in its subgraph, could exceed).
A note on the proxy: a self-loop ``d -> d`` scores 1 whenever every in-neighbour of ``d``
in the block is also one of the block's destinations that ``d`` sends to, so the released
rule often spends hop budget on self-loops (adding no node).

**DMSG** (:class:`AuthorsDMSG`). The paper's text cites DMSG (Qiao et al., ICLR 2025):
a diversified memory plus generated embeddings; the kit's text protocol runs
:class:`clkit.strategies.DMSG` (class-balanced diversity pruning; a variational layer
trained with CE on generated embeddings, KL and reconstruction). The released
``dmsg_model.py`` with ``GCN_dmsg`` (``Backbones/gnns.py``) does this instead, per
step (``observe_cis``):

- *backbone*: the first GCN layer is twice as wide (``2 x hidden``); its first half,
  after the ReLU, is the representation ``mu`` the classifier sees in a normal pass,
  its second half gives ``std = softplus(h, beta=10)``. A ReLU'd linear layer splits by
  columns, so this is the kit's backbone plus a second ``hidden``-wide half of the first
  layer (:attr:`AuthorsDMSG.std_layer`, default ``nn.Linear`` initialisation as theirs),
  used only in the variational pass. Dropout is 0 in their configuration.
- *loss*: ``1 x CE(batch) + 20 x CE(replay) + 1 x L_adv + 1 x L_vae``
  (``sgreplay_args['loss_weights'] = [1, 20, 1, 1]``), both CEs over the classes seen so
  far. The replay is ``min(B, |memory|)`` memory nodes entered as isolated nodes (their
  auxiliary graph has only self-loops) through the variational pass
  ``z = mu + eps * std``, ``eps ~ N(0, I)``. ``L_vae = BCE-with-logits(z z^T, [y_i =
  y_j])`` with the diagonal weighted 0 (a mean over all ``n^2`` entries) ``+ KL / ln 2``
  with ``KL = mean_i -1/2 sum_j (1 + 2 ln std - mu^2 - std^2)``. ``L_adv = BCE-with-logits(
  D(GRL([z; mu])), [1; 0])``: a discriminator ``D`` (``hidden -> 64 -> ReLU -> 1``)
  behind a gradient-reversal layer (rate 1); ``D`` is *not* in their optimiser, so it
  keeps its initial weights and only the reversed gradient reaches the backbone
  (:func:`dmsg_loss_terms`).
- *memory*: after the step, the model's logits of the batch (all classes, after the
  update) are read; ``max(1, B // 2)`` = 5 nodes are chosen greedily for diversity
  (``my_sampler``: the largest logit norm first, then repeatedly the node farthest, in
  Euclidean distance between softmax probabilities, from the chosen ones;
  :func:`diverse_select`) and enter a reservoir of ``budget`` = 100 node entries
  (appended while there is room; then each replaces entry ``j ~ U{0, .., n - 1}`` when
  ``j < budget``, ``n`` counting the *chosen* nodes so far; the same node may hold
  several entries).

Differences that remain: the batch logits for the choice come from a fresh neighbour
sample in training mode (theirs reuse the step's sampled blocks, in evaluation mode,
which changes nothing else with dropout 0); ``eps``, the replay draw and the reservoir
draws come from the strategy's seeded CPU generator (theirs from the global one).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._seed import torch_seeded
from .._validate import check_choice, check_int, check_real
from ..device import move
from ..strategies._common import TaskAwareStrategy
from ..strategies.graph import NodeReservoir, _check_graph_model, host_ids

__all__ = ["SEM_CURVATURES", "overlap_curvature", "sample_blocks", "overlap_subgraph", "AuthorsSEMMemory",
           "diverse_select", "dmsg_loss_terms", "GradientReversal", "AuthorsDMSG", "DMSG_LOSS_WEIGHTS"]

#: AuthorsSEM's first-hop rules: the released neighbourhood-overlap proxy, the text's (Forman-)Ricci curvature
SEM_CURVATURES = ["overlap", "forman"]
#: the released DMSG's loss weights (batch CE, replay CE, adversarial, VAE): ``sgreplay_args['loss_weights']``
DMSG_LOSS_WEIGHTS = (1.0, 20.0, 1.0, 1.0)


# ---------------------------------------------------------------------------------------------- SEM

def overlap_curvature(s: int, d: int, in_nbrs: dict, out_nbrs: dict) -> float:
    """The released SEM's curvature proxy of the block edge ``s -> d``.

    ``(|N_in(d) ∩ N_out(s)| + 1) / (max(|N_in(d)|, |N_out(s)|) + 1)`` (``sem_utils.py``,
    ``_ricci_score``).

    Parameters
    ----------
    s, d : int
        Source and destination of the edge.
    in_nbrs : dict of int -> set of int
        ``N_in(d)``: the sources with an edge into each destination of the block
        (self-loop included where the block has it).
    out_nbrs : dict of int -> set of int
        ``N_out(s)``: the block's destinations each source sends to.

    Returns
    -------
    float

    Examples
    --------
    >>> inn = {0: {0, 1, 2}, 1: {0, 1}}            # destinations 0 and 1, self-loops included
    >>> out = {0: {0, 1}, 1: {0, 1}, 2: {0}}       # who sends where
    >>> overlap_curvature(1, 0, inn, out)          # (|{0,1,2} ∩ {0,1}| + 1) / (max(3, 2) + 1) = 3 / 4
    0.75
    >>> overlap_curvature(2, 0, inn, out)          # (|{0}| + 1) / (3 + 1)
    0.5
    """
    n_in, n_out = in_nbrs.get(d, set()), out_nbrs.get(s, set())
    return (len(n_in & n_out) + 1) / (max(len(n_in), len(n_out)) + 1)


def _in_edges(model, v: int) -> np.ndarray:
    """In-neighbours of ``v`` in the model's (host) graph, its self-loop included, ascending."""
    nb = host_ids(model.neighbors(int(v)))
    return np.sort(np.concatenate([nb, [int(v)]]))


def sample_blocks(model, batch, fanouts=(10, 25), seed=0):
    """The two sampled blocks of a training step on ``batch``, as DGL's ``sample_blocks`` builds them.

    Parameters
    ----------
    model : GCN
        Holds the graph (:meth:`clkit.models.gcn.GCN.neighbors`); every node has a self-loop.
    batch : array_like of int
        The batch's node ids (repeats are kept once, first occurrence first).
    fanouts : (int, int) or None
        In-edges kept per destination in the input block and the output block (the authors'
        ``n_nbs_sample = [10, 25]``), drawn uniformly without replacement; None keeps all.
    seed : int or numpy.random.Generator

    Returns
    -------
    list of (dst, in_nbrs)
        ``[input block, output block]``; ``dst`` the destination ids in order (the output
        block's: the batch; the input block's: the output block's sources, destinations
        first), ``in_nbrs`` a dict ``dst -> ndarray`` of its sampled sources.

    Examples
    --------
    >>> from clkit.models.gcn import GCN
    >>> ei = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])            # path 0 - 1 - 2
    >>> net = GCN(torch.zeros(3, 1), ei, num_classes=2, hidden=2)
    >>> (d0, in0), (d1, in1) = sample_blocks(net, [0], fanouts=None)
    >>> d1, in1[0].tolist(), d0, in0[1].tolist()
    ([0], [0, 1], [0, 1], [0, 1, 2])
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    fan = (None, None) if fanouts is None else tuple(check_int("fanouts", f, low=1) for f in fanouts)
    dst1 = list(dict.fromkeys(int(v) for v in np.asarray(batch).reshape(-1)))

    def block(dst, fanout):
        inn = {}
        for v in dst:
            nb = _in_edges(model, v)
            if fanout is not None and len(nb) > fanout:
                nb = np.sort(rng.choice(nb, fanout, replace=False))
            inn[v] = nb
        return inn

    in1 = block(dst1, fan[1])
    dst0 = list(dict.fromkeys([*dst1, *(int(u) for v in dst1 for u in in1[v])]))
    in0 = block(dst0, fan[0])
    return [(dst0, in0), (dst1, in1)]


def _out_nbrs(dst, in_nbrs) -> dict:
    out: dict[int, set] = {}
    for d in dst:
        for s in in_nbrs[d]:
            out.setdefault(int(s), set()).add(int(d))
    return out


def overlap_subgraph(blocks, center: int, fanouts=(5, 5)):
    """The subgraph the released SEM stores for ``center`` (``sparsify_blocks_ricci``).

    Hop by hop from the output block: every block edge ``s -> d`` into the current
    targets (first the centre; then the sources kept at the first hop) is a candidate,
    the self-loop too; when there are more than the hop's budget the highest
    :func:`overlap_curvature` are kept (ties: the earlier candidate, edges ordered by
    target then source). The kept sources are the next targets.

    Parameters
    ----------
    blocks : list of (dst, in_nbrs)
        From :func:`sample_blocks`; ``center`` must be a destination of the last block.
    center : int
    fanouts : (int, int)
        Edges kept at the first and second hop (the authors' ``nei_budget = (5, 5)``).

    Returns
    -------
    nodes : Tensor of int64, shape (n,) -- global ids, ``nodes[0] == center``
    edge_index : Tensor of int64, shape (2, e) -- local ids, the kept edges ``s -> d`` (row 0 the
        source, row 1 the destination: toward the centre) and one self-loop per node; a kept
        self-loop appears twice.

    Examples
    --------
    >>> blocks = [([0, 1], {0: [0, 1], 1: [0, 1, 2]}), ([0], {0: [0, 1]})]   # input block, output block
    >>> nodes, e = overlap_subgraph(blocks, 0, fanouts=(5, 5))   # nothing to cut: every edge is kept
    >>> nodes.tolist()
    [0, 1, 2]
    >>> e.tolist()   # hop 1: 0->0, 1->0; hop 2 (targets 0 and 1): 0->0, 1->0, 0->1, 1->1, 2->1; self-loops
    [[0, 1, 0, 1, 0, 1, 2, 0, 1, 2], [0, 0, 0, 0, 1, 1, 1, 0, 1, 2]]
    """
    f1, f2 = (check_int("fanouts", f, low=1) for f in fanouts)
    center = int(center)
    if center not in blocks[-1][1]:
        raise ValueError(f"center {center} is not a destination of the output block")
    local = {center: 0}
    edges: list[tuple[int, int]] = []
    targets = [center]
    for (dst, inn), fan in zip(reversed(blocks), (f1, f2)):
        tset = set(targets)
        cand = [(int(s), int(d)) for d in dst if d in tset for s in inn[d]]
        if not cand:
            break
        if len(cand) > fan:
            in_sets = {d: set(int(u) for u in inn[d]) for d in dst}
            out_sets = _out_nbrs(dst, inn)
            score = torch.tensor([overlap_curvature(s, d, in_sets, out_sets) for s, d in cand], dtype=torch.float64)
            order = torch.argsort(-score, stable=True)[:fan]     # highest first, earlier candidate on ties
            cand = [cand[i] for i in order.tolist()]
        for s, _ in cand:
            local.setdefault(s, len(local))
        edges += [(local[s], local[d]) for s, d in cand]
        targets = sorted({s for s, _ in cand})
    nodes = list(local)
    edges += [(i, i) for i in range(len(nodes))]
    return torch.tensor(nodes, dtype=torch.int64), torch.tensor(edges, dtype=torch.int64).T.contiguous()



def isolate(idx: torch.Tensor) -> torch.Tensor:
    """Node indices marked as isolated (``v -> -(v + 1)``; see :meth:`clkit.models.gcn.GCN.embed`).

    Examples
    --------
    >>> isolate(torch.tensor([0, 3])).tolist()
    [-1, -4]
    """
    return -torch.as_tensor(idx, dtype=torch.int64) - 1

class _WriteLog(NodeReservoir):
    """A :class:`NodeReservoir` that remembers the slots each ``add`` wrote."""

    def __init__(self, memory_size: int, seed: int = 0):
        super().__init__(memory_size, seed)
        self.written: list[int] = []

    def _write(self, slots, x, y, task_ids) -> None:
        super()._write(slots, x, y, task_ids)
        self.written += np.array(slots, dtype=np.int64, ndmin=1).tolist()


class AuthorsSEMMemory:
    """Mixin body of :class:`clkit.drift.authors.AuthorsSEM` (kept here with the functions it uses).

    ``curvature="overlap"``: each node's subgraph is built when the reservoir writes it, from
    the blocks of the batch it came in (:func:`sample_blocks` with the backbone's own
    ``fanouts``, :func:`overlap_subgraph` with the memory's), stored with directed edges.
    ``"forman"``: the kit's earlier reading (:func:`clkit.drift.authors.small_subgraph`).
    """

    def _init_overlap(self, curvature: str, block_fanouts) -> None:
        self.curvature = check_choice("curvature", curvature, SEM_CURVATURES)
        if block_fanouts == "model":
            block_fanouts = getattr(self.model, "fanouts", None)
        self.block_fanouts = None if block_fanouts is None else tuple(
            check_int("block_fanouts", f, low=1) for f in block_fanouts)
        self._block_rng = np.random.default_rng([self.seed, 40])
        if self.curvature == "overlap":
            self.memory = _WriteLog(self.memory_size, seed=self.seed)

    def _block(self, node: int):
        """A memory node's subgraph on the device; with ``"overlap"`` its edges keep their multiplicity
        (a kept self-loop counts twice under a sum aggregation, as in the released multigraph)."""
        if self.curvature != "overlap" or getattr(self.model, "normalize", True):
            return super()._block(node)
        if node not in self._blocks:
            from ..models.gcn import Adjacency, rows_of

            nodes, e = self.subgraph(node)
            n = len(nodes)
            key = e[1] * n + e[0]                                 # rows = message targets
            uniq, counts = torch.unique(key, return_counts=True)  # sorted by (target, source)
            crow = torch.zeros(n + 1, dtype=torch.int64)
            crow[1:] = torch.cumsum(torch.bincount(uniq // n, minlength=n), 0)
            adj = Adjacency(crow, (uniq % n).contiguous(), counts.float(), rows_of(crow, len(uniq)))
            self._blocks[node] = (move(nodes, self.device), adj.to(self.device))
        return self._blocks[node]

    def subgraph(self, node: int):
        if self.curvature == "overlap" and node in self._subgraphs:
            return self._subgraphs[node]
        return super().subgraph(node)

    def after_step(self, x, y, task) -> None:
        if self.curvature != "overlap":
            return super().after_step(x, y, task)
        kept = set(self.memory.stored_ids().tolist())
        self.memory.written = []
        self.memory.add(x, y, task.task_id if task is not None else -1)
        written = sorted(set(self.memory.ids_host[self.memory.written].tolist()))
        if written:
            blocks = sample_blocks(self.model, host_ids(x), self.block_fanouts, self._block_rng)
            for v in written:
                self._subgraphs[v] = overlap_subgraph(blocks, v, self.fanouts)
                self._blocks.pop(v, None)
        now = set(self.memory.stored_ids().tolist())
        for gone in kept - now:
            self._subgraphs.pop(gone, None)
            self._blocks.pop(gone, None)


# --------------------------------------------------------------------------------------------- DMSG

def diverse_select(reps: torch.Tensor, k: int) -> torch.Tensor:
    """The released DMSG's choice of ``k`` diverse rows (``dmsg_utils.py``, ``my_sampler``).

    All rows when ``k >= len(reps)``. Otherwise the row of largest Euclidean norm of
    ``reps`` first, then ``k - 1`` times the row whose smallest distance to the rows
    chosen so far is largest, distances between the rows' softmax probabilities
    (``argmax``: the first row on ties). Runs on ``reps``'s device with fixed shapes.

    Parameters
    ----------
    reps : Tensor, shape (n, c)
        The batch's logits.
    k : int >= 1

    Returns
    -------
    Tensor of int64, shape (min(k, n),) -- positions, in the order chosen.

    Examples
    --------
    >>> reps = torch.tensor([[3.0, 0.0], [2.9, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> diverse_select(reps, 2).tolist()   # the largest norm (row 0), then the farthest from it
    [0, 2]
    >>> diverse_select(reps, 9).tolist()
    [0, 1, 2, 3]
    """
    k = check_int("k", k, low=1)
    n = int(reps.shape[0])
    if k >= n:
        return torch.arange(n, device=reps.device)
    p = F.softmax(reps.float(), dim=1)
    first = reps.float().norm(dim=1).argmax()
    chosen = [first]
    taken = torch.zeros(n, dtype=torch.bool, device=reps.device).index_fill(0, first.view(1), True)
    min_d = torch.cdist(p.index_select(0, first.view(1)), p).view(-1)
    for _ in range(k - 1):
        nxt = min_d.masked_fill(taken, -1000.0).argmax()
        chosen.append(nxt)
        taken = taken.index_fill(0, nxt.view(1), True)
        min_d = torch.minimum(min_d, torch.cdist(p.index_select(0, nxt.view(1)), p).view(-1))
    return torch.stack(chosen)


class _Reverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, rate):
        ctx.rate = rate
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return -ctx.rate * grad, None


class GradientReversal(nn.Module):
    """Identity forward; the gradient is multiplied by ``-rate`` on the way back.

    Examples
    --------
    >>> x = torch.ones(2, requires_grad=True)
    >>> GradientReversal(2.0)(x).sum().backward(); x.grad.tolist()
    [-2.0, -2.0]
    """

    def __init__(self, rate: float = 1.0):
        super().__init__()
        self.rate = float(rate)

    def forward(self, x):
        return _Reverse.apply(x, self.rate)


def dmsg_loss_terms(replay_logits, replay_y, z, mu, std, disc_logits) -> dict:
    """The released DMSG's replay-side loss terms (``dmsg_model.py``, ``observe_cis``).

    Parameters
    ----------
    replay_logits : Tensor, shape (n, c) -- logits of the replayed nodes (variational pass)
    replay_y : Tensor of int64, shape (n,)
    z : Tensor, shape (n, h) -- the sampled representation ``mu + eps * std``
    mu, std : Tensor, shape (n, h)
    disc_logits : Tensor, shape (2n,) -- the discriminator's logits of ``[z; mu]``

    Returns
    -------
    dict
        ``replay`` (CE), ``similarity`` (BCE-with-logits of ``z z^T`` against same-label
        pairs, diagonal weighted 0, a mean over ``n^2``), ``kl`` (``mean_i -1/2 sum_j (1 +
        2 ln std - mu^2 - std^2) / ln 2``), ``vae`` = ``similarity + kl``, ``adv``
        (BCE-with-logits of ``disc_logits`` against ``[1] * n + [0] * n``).

    Examples
    --------
    >>> one = torch.ones(1, 1)
    >>> t = dmsg_loss_terms(torch.zeros(1, 2), torch.tensor([0]), one, one, one, torch.zeros(2))
    >>> round(float(t["replay"]), 4), float(t["similarity"]), round(float(t["kl"]), 4), round(float(t["adv"]), 4)
    (0.6931, 0.0, 0.7213, 0.6931)
    """
    n = z.shape[0]
    replay = F.cross_entropy(replay_logits, replay_y)
    same = (replay_y[:, None] == replay_y[None, :]).float()
    off = 1.0 - torch.eye(n, device=z.device)
    similarity = F.binary_cross_entropy_with_logits(z @ z.T, same, weight=off)
    kl = (-0.5 * (1 + 2 * std.log() - mu.pow(2) - std.pow(2)).sum(1).mean()) / math.log(2)
    target = torch.cat([torch.ones(n, device=z.device), torch.zeros(mu.shape[0], device=z.device)])
    adv = F.binary_cross_entropy_with_logits(disc_logits, target)
    return {"replay": replay, "similarity": similarity, "kl": kl, "vae": similarity + kl, "adv": adv}


class AuthorsDMSG(TaskAwareStrategy):
    """DMSG as the authors' ``dmsg_model.py`` runs it; see the module docstring.

    Parameters
    ----------
    model : GCN
        The backbone (the authors' protocol: :class:`clkit.models.gcn.AuthorsGCN`); its first
        layer gets a second half (:attr:`std_layer`) for the variational pass.
    memory_size : int
        Reservoir entries (their ``budget``, 100).
    stream_batch_size : int
        The stream's batch size ``B`` (their ``args.batch_size``, 10): ``min(B, |memory|)``
        nodes are replayed, ``max(1, B // 2)`` chosen from each batch.
    loss_weights : 4 floats
        Batch CE, replay CE, adversarial and VAE weights (:data:`DMSG_LOSS_WEIGHTS`).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.data.graphs import csbm
    >>> from clkit.models.gcn import AuthorsGCN
    >>> g = csbm(200, 4, seed=0)
    >>> s = AuthorsDMSG(AuthorsGCN(g.x, g.edge_index, 4, hidden=8), memory_size=12, optimizer="adam")
    >>> for t in range(4):
    ...     idx = torch.arange(10 * t, 10 * t + 10)
    ...     _ = s.observe(idx, g.y[idx])
    >>> len(s.mem_ids), s.num_chosen   # 5 chosen per batch; 12 entries, then the reservoir
    (12, 20)
    """

    task_free = True
    needs_graph_model = True

    def __init__(self, model, *, memory_size: int = 100, stream_batch_size: int = 10,
                 loss_weights=DMSG_LOSS_WEIGHTS, **kwargs):
        _check_graph_model(model)
        super().__init__(model, **kwargs)
        self.memory_size = check_int("memory_size", memory_size, low=1)
        self.stream_batch_size = check_int("stream_batch_size", stream_batch_size, low=1)
        w = tuple(loss_weights)
        if len(w) != 4:
            raise ValueError(f"loss_weights must hold 4 weights (batch, replay, adversarial, VAE), got {w!r}")
        self.loss_weights = tuple(check_real("loss_weights", v, low=0) for v in w)
        lin1 = model.lin1
        hidden = lin1.out_features
        with torch_seeded(self.seed):   # built on the CPU under the seed, then moved
            self.std_layer = nn.Linear(lin1.in_features, hidden, bias=lin1.bias is not None)
            self.discriminator = nn.Sequential(nn.Linear(hidden, 64), nn.ReLU(), nn.Linear(64, 1))
        self.std_layer.to(self.device)
        self.discriminator.to(self.device).requires_grad_(False)   # not in their optimiser: fixed weights
        self.reverse = GradientReversal(1.0)
        self.optimizer = self.make_optimizer(list(self.model.parameters()) + list(self.std_layer.parameters()))
        self.mem_ids: list[int] = []   # node ids, one per entry (host)
        self.mem_nodes = torch.zeros(0, dtype=torch.int64, device=self.device)
        self.mem_y = torch.zeros(0, dtype=torch.int64, device=self.device)
        self.num_chosen = 0            # their n_seen_examples: nodes chosen so far
        self.last_terms: dict = {}

    def _limit(self, logits):
        limit = getattr(self.model, "_limit", None)
        return limit(logits) if limit is not None else logits

    def variational(self, nodes: torch.Tensor, eps: torch.Tensor | None = None):
        """``(z, mu, std)`` of memory ``nodes`` entered isolated: ``mu = relu(x W1)`` (the backbone's first
        layer, as :meth:`clkit.models.gcn.GCN.embed` of an isolated node), ``std = softplus(relu(x W_std),
        beta=10)``, ``z = mu + eps * std``; ``eps`` drawn from the strategy's generator when None."""
        mu = self.model.embed(isolate(nodes))
        std = F.softplus(torch.relu(self.std_layer(self.model.x[nodes])), beta=10).float()
        if eps is None:
            eps = torch.randn(mu.shape, generator=self.generator).to(mu.device)
        return mu + eps * std, mu, std

    def replay_terms(self, nodes: torch.Tensor, y: torch.Tensor, eps: torch.Tensor | None = None) -> dict:
        """:func:`dmsg_loss_terms` of replaying ``nodes`` (labels ``y``)."""
        z, mu, std = self.variational(nodes, eps)
        logits = self._limit(self.model.head(z))
        disc = self.discriminator(self.reverse(torch.cat([z, mu]))).view(-1)
        return dmsg_loss_terms(logits, y, z, mu, std, disc)

    def penalty(self, task):
        m = len(self.mem_ids)
        if m == 0:
            self.last_terms = {}
            return 0.0
        sel = torch.randperm(m, generator=self.generator)[: min(self.stream_batch_size, m)]
        sel = move(sel, self.device)
        t = self.replay_terms(self.mem_nodes[sel], self.mem_y[sel])
        self.last_terms = {k: v.detach() for k, v in t.items()}
        _, w_replay, w_adv, w_vae = self.loss_weights
        return w_replay * t["replay"] + w_adv * t["adv"] + w_vae * t["vae"]

    def train_step(self, x, y, task=None) -> torch.Tensor:
        w_batch = self.loss_weights[0]
        if w_batch == 1.0:
            return super().train_step(x, y, task)
        self.train_mode()
        self.optimizer.zero_grad(set_to_none=True)
        with self.amp.autocast():
            loss = w_batch * self.criterion(self.forward(x, task), y) + self.penalty(task)
        self.amp.backward(loss, self.optimizer)
        self.amp.step(self.optimizer)
        self.after_step(x, y, task)
        self.steps += 1
        return loss.detach()

    @torch.no_grad()
    def after_step(self, x, y, task) -> None:
        n = len(y)
        if n == 0:
            return
        k = min(max(1, self.stream_batch_size // 2), n)
        reps = self.model.head(self.model.embed(x))   # all classes, after the update, sampled neighbourhoods
        pos_dev = diverse_select(reps, k)
        pos = host_ids(pos_dev)                          # read: the positions chosen
        ids = host_ids(x)[pos]
        for i, (v, p) in enumerate(zip(ids.tolist(), pos_dev)):
            if len(self.mem_ids) < self.memory_size:
                self.mem_ids.append(int(v))
                self.mem_y = torch.cat([self.mem_y, y.index_select(0, p.view(1))])
                self.num_chosen += 1
                continue
            j = int(torch.randint(0, max(self.num_chosen, 1), (1,), generator=self.generator))
            if j < self.memory_size:
                self.mem_ids[j] = int(v)
                slot = move(torch.tensor([j]), self.device)
                self.mem_y = self.mem_y.index_copy(0, slot, y.index_select(0, p.view(1)))
            self.num_chosen += 1
        self.mem_nodes = move(torch.tensor(self.mem_ids, dtype=torch.int64), self.device)
