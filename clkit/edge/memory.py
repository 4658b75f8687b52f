"""How many class sequences the batched learners train at once: the sequence dimension cut by memory.

The batched learners (:mod:`clkit.edge.learners`) hold one slice of every tensor per node of
the prefix tree, so their memory grows with the widest level: 2,520 nodes at 8 classes /
4 tasks, 113,400 at 10 classes / 5 tasks. :func:`node_bytes` estimates what one node needs
while its level trains -- its state twice (the level's input and its output), and the
working set of a step -- and :func:`memory_budget` what a run may use on its device (CUDA:
80 % of the free memory; the CPU and MPS: half of the host's available memory).
:func:`chunk_plan` turns the two into a number of sequences per chunk:
:func:`sequence_chunks` sorts the sequences and cuts them into contiguous chunks of at most
that many, and the prefix tree of each chunk is walked on its own. Sorted chunks share
almost no prefix: at a boundary at most one node per level is trained in both chunks (and
gives both the same state: every random choice is keyed by the prefix). Evaluation and
iCaRL's herding run over a level's nodes in their own, smaller groups (``eval_nodes``,
``herd_nodes``); neither changes a number.

The estimate counts float32 tensors only (autocast's low-precision copies of the weights
are small beside them) and leaves room for the allocator, cuBLAS and the test set in the
20 % (CUDA) or half (host) it does not hand out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validate import check_int

__all__ = ["NodeBytes", "ChunkPlan", "node_bytes", "strategy_node_bytes", "memory_budget", "chunk_plan",
           "sequence_chunks", "EVAL_BYTES_CPU"]

_F = 4                         # bytes of a float32
_I = 8                         # bytes of an int64
#: parameter-sized tensors in a node's state: params and momentum; EWC adds the Fisher sums,
#: LwF / iCaRL the old model
_STATE = {"finetune": 2, "ewc": 4, "lwf": 3, "icarl": 3, "ncm": 0}
#: bytes of one evaluation or herding group on the CPU (the groups run one after the other; small
#: enough that a group's activations stay in cache: 16 MiB groups evaluate 2,520 sequences at 8 / 4
#: about 40 % faster than 64 MiB ones on an AMD EPYC)
EVAL_BYTES_CPU = 2 ** 24


@dataclass(frozen=True)
class NodeBytes:
    """Estimated bytes of one prefix-tree node (one sequence's model).

    Attributes
    ----------
    state : int
        The node's state between tasks (parameters, momentum, Fisher sums, old model,
        exemplars at the last task).
    train : int
        Peak while its level trains: ``2 * state`` plus a step's working set.
    eval : int
        One node's share of an evaluation pass over the test images.
    herd : int
        One node's share of iCaRL's herding (0 for the other learners).
    """

    state: int
    train: int
    eval: int
    herd: int = 0


def node_bytes(learner: str, config, *, num_classes: int, n_train: int, n_test: int, in_features: int,
               num_tasks: int) -> NodeBytes:
    """Estimated bytes one node of a built-in batched learner needs (see the module docstring).

    Parameters
    ----------
    learner : {"finetune", "ewc", "lwf", "icarl", "ncm"}
    config : clkit.edge.learners.LearnerConfig
    num_classes, n_train, n_test, in_features, num_tasks : int
        ``C``, training and test inputs per class, ``D`` and ``K``.

    Examples
    --------
    >>> from clkit.edge.learners import LearnerConfig
    >>> nb = node_bytes("finetune", LearnerConfig(hidden=32), num_classes=8, n_train=100, n_test=200,
    ...                 in_features=196, num_tasks=4)
    >>> nb.state                      # params + momentum: 2 x (196*32 + 32 + 32*8 + 8) float32
    52544
    >>> nb.train > 2 * nb.state, nb.herd
    (True, 0)
    """
    if learner not in _STATE:
        raise ValueError(f"learner must be one of {sorted(_STATE)}, got {learner!r}")
    C, D, K = num_classes, in_features, num_tasks
    M = C // K
    H = config.hidden
    if learner == "ncm":                                      # class means only, shared by every node
        return NodeBytes(0, 0, C * n_test * 3 * C * _F)
    P = D * H + H + H * C + C
    mem_rows = (K - 1) * M * config.memory_per_class if learner == "icarl" else 0
    state = _STATE[learner] * P * _F + mem_rows * (D * _F + _I)
    B = config.batch_size
    work = (3 * P * _F                                        # parameters with gradients, new momentum, grads
            + (M * n_train + mem_rows) * _I                   # the epoch's batch order
            + B * (2 * D + 3 * H + 8 * C) * _F)               # one step's inputs and activations (old model too)
    evals = C * n_test * (H + 3 * C) * _F + mem_rows * (H + C) * _F
    herd = M * n_train * (D + 3 * H + 1) * _F if learner == "icarl" else 0
    return NodeBytes(int(state), int(2 * state + work), int(evals), int(herd))


def strategy_node_bytes(strategy) -> NodeBytes:
    """Estimated bytes of one node of the sequential path: a :class:`~clkit.strategies.Strategy`.

    Its model's parameters and buffers four times (the model, gradients, optimiser state,
    the deep copy made where sequences part); a strategy's own memories are not counted.
    """
    model = strategy.model
    size = sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))
    return NodeBytes(int(size), int(4 * size), int(size))


def _host_available() -> int | None:
    """Bytes of host memory available now (``MemAvailable``), or ``None`` where unknown
    (:func:`clkit._validate.available_memory`)."""
    from .._validate import available_memory

    return available_memory()


def memory_budget(device) -> tuple[int, str]:
    """Bytes the batched learners may hold on ``device``, and how that was decided.

    CUDA: 80 % of the free memory (``torch.cuda.mem_get_info``); the CPU and MPS: half of
    the host's available memory; ``meta`` (no memory): unlimited.

    Examples
    --------
    >>> import torch
    >>> memory_budget(torch.device("meta"))[1]
    'meta device: no memory is used (unlimited)'
    >>> memory_budget(torch.device("cpu"))[0] > 0
    True
    """
    import torch

    from ..device import as_device

    device = as_device(device)
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        return int(0.8 * free), f"80 % of the {free / 2**30:.1f} GiB free of {total / 2**30:.1f} GiB on {device}"
    if device.type == "meta":
        return 2 ** 62, "meta device: no memory is used (unlimited)"
    avail = _host_available()
    if avail is None:
        return 2 ** 33, "8 GiB (the host's available memory is unknown)"
    return int(0.5 * avail), f"half of the host's {avail / 2**30:.1f} GiB available memory"


@dataclass(frozen=True)
class ChunkPlan:
    """How one learner's sequences are cut to fit the memory budget.

    Attributes
    ----------
    num_sequences : int
    max_nodes : int
        Sequences per chunk (the widest level of a chunk has at most this many nodes).
    num_chunks : int
    eval_nodes : int
        Nodes per evaluation group.
    node : NodeBytes
    budget : int
        Bytes the plan may use.
    how : str
        Where the budget comes from.
    """

    num_sequences: int
    max_nodes: int
    num_chunks: int
    eval_nodes: int
    node: NodeBytes
    budget: int
    how: str
    herd_nodes: int = 0

    def describe(self, budget: bool = True) -> str:
        """One clause: chunks, sizes and (``budget=True``) where the budget comes from.

        Examples
        --------
        >>> p = ChunkPlan(90, 90, 1, 40, NodeBytes(1000, 3 * 2**20, 10), 2**30, "a test")
        >>> p.describe()
        '1 chunk of 90 sequences (3.0 MiB each while training; budget 1.0 GiB: a test)'
        >>> p.describe(budget=False)
        '1 chunk of 90 sequences (3.0 MiB each while training)'
        """
        what = ("1 chunk" if self.num_chunks == 1 else f"{self.num_chunks:,} chunks")
        big = "; one sequence needs more than the budget" if self.node.train > self.budget else ""
        how = f"; budget {_size(self.budget)}: {self.how}" if budget else ""
        return (f"{what} of {'' if self.num_chunks == 1 else 'at most '}{self.max_nodes:,} sequences "
                f"({_size(self.node.train)} each while training{how}{big})")


def _size(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def chunk_plan(node: NodeBytes, num_sequences: int, device, *, budget: int | None = None) -> ChunkPlan:
    """Sequences per chunk for ``num_sequences`` nodes of ``node`` bytes each within the device's budget.

    Parameters
    ----------
    node : NodeBytes
        :func:`node_bytes` (or :func:`strategy_node_bytes`).
    num_sequences : int
    device : torch.device
    budget : int, optional
        Bytes to use instead of :func:`memory_budget`.

    Examples
    --------
    >>> import torch
    >>> nb = NodeBytes(state=100, train=1000, eval=50)
    >>> p = chunk_plan(nb, 2520, torch.device("cpu"), budget=1_000_000)
    >>> p.num_chunks, p.max_nodes                # 1,000 nodes fit: 3 balanced chunks of 840
    (3, 840)
    >>> chunk_plan(nb, 90, torch.device("cpu"), budget=10**9).num_chunks
    1
    """
    from ..device import as_device

    device = as_device(device)
    num_sequences = check_int("num_sequences", num_sequences, low=1)
    if budget is None:
        budget, how = memory_budget(device)
    else:
        budget = check_int("memory_budget", budget, low=1)
        how = "given"
    fit = max(1, budget // max(1, node.train))
    chunks = 1 if fit >= num_sequences else math.ceil(num_sequences / fit)
    max_nodes = math.ceil(num_sequences / chunks)
    group_bytes = EVAL_BYTES_CPU if device.type in ("cpu", "meta") else max(EVAL_BYTES_CPU, budget // 8)
    eval_nodes = max(1, group_bytes // max(1, node.eval))
    herd_nodes = max(1, group_bytes // max(1, node.herd))
    return ChunkPlan(num_sequences, max_nodes, chunks, int(eval_nodes), node, int(budget), how, int(herd_nodes))


def sequence_chunks(sequences, num_chunks: int) -> list[np.ndarray]:
    """Positions of ``sequences`` (L, K, M) cut into ``num_chunks`` contiguous runs of the sorted order.

    Sequences are sorted lexicographically (classes ascending inside each task), so a chunk
    holds whole subtrees of the prefix tree except at its two ends; the runs differ in length
    by at most one. One chunk is every position in the given order.

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> parts = sequence_chunks(enumerate_sequences(4, 2), 2)
    >>> [p.tolist() for p in parts]
    [[0, 1, 2], [3, 4, 5]]
    """
    seqs = np.sort(np.asarray(sequences, dtype=np.int64), axis=-1)
    num_chunks = check_int("num_chunks", num_chunks, low=1)
    if num_chunks == 1:
        return [np.arange(len(seqs))]
    flat = seqs.reshape(len(seqs), -1)
    order = np.lexsort(flat.T[::-1])
    return [part for part in np.array_split(order, num_chunks) if len(part)]
