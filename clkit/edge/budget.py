"""The budget of notebook 02's ground truth: what it trains, in how many chunks, and how long it should take here.

Before the ground truth trains, the notebook counts its work and times a few steps of it on
the run's device (:func:`truth_budget`):

* **trainings** -- for every learner, the task trainings of the prefix tree
  (:func:`clkit.edge.prefix.count_prefixes` of each chunk's sequences: 15 + 90 + 90 at 6
  classes / 3 tasks, 28 + 420 + 2,520 + 2,520 at 8 / 4), each ``epochs`` passes of
  ``ceil(rows / batch_size)`` steps (iCaRL's rows grow with its memory);
* **batched steps** -- a step trains every node of a chunk's level at once, so the steps of
  a level are ``epochs x steps per task`` whatever its width; the cost of one step grows with
  the width. Each learner's step is timed (:func:`clkit.budget.time_per_call`, in the run's
  precision, with the state of a later task: EWC's penalty, the old model, iCaRL's full
  memory) at the widest level of a chunk and at the narrowest level, and every level's cost
  is interpolated linearly in its width;
* **EWC's Fisher passes** (one forward-backward per minibatch of the task after it trains),
  counted at the cost of a step;
* **evaluation passes** -- after every task, every node predicts every test image, in groups
  of ``eval_nodes`` nodes; one group is timed at two widths as the steps are;
* **random sequences scored** -- S(O) of ``num_random`` random sequences for the
  percentiles of the hard / easy sequences and of each classic setting (host NumPy, timed on
  up to 2,000).

The memory plan (:mod:`clkit.edge.memory`) says how many chunks each learner's sequences
need on this device. Not in the estimate: data loading, the NCM features and the
similarity-source probes (MLP trainings of seconds), iCaRL's herding, the prefix-tree
bookkeeping and batch orders (host work), sequences a sampled truth trains on demand, the draws,
figures and verdicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from ..budget import (GPU_ASSUMPTION, GPU_THROUGHPUT, Budget, FlopEstimate, Work, format_flops, measured_assumption,
                      measured_throughput, time_per_call)
from .._validate import check_int
from .memory import _size
from .prefix import count_prefixes, count_states
from .state_truth import declared_state
from .strategy_flops import _row_flops, _strategy_flops, first_task_extra, strategy_epochs

__all__ = ["TruthBudget", "truth_budget", "measure_truth", "prefix_work", "scoring_settings", "strategy_epochs",
           "first_task_extra",
           "LEFT_OUT",
           "CPU_PROBE_WIDTH"]

#: what the estimate leaves out (:attr:`clkit.budget.Budget.leaves_out`, said after every budget)
LEFT_OUT = ("data loading, the NCM features and the similarity-source probes (MLP trainings of seconds), "
            "iCaRL's herding, the batch orders drawn on the host (one CPU generator per sequence and epoch), the "
            "prefix-tree bookkeeping, sequences a sampled truth trains on demand, the draws, figures and verdicts")


def prefix_work(sequences, num_chunks: int = 1) -> list[list[int]]:
    """Nodes per level of the prefix tree of each chunk (:func:`clkit.edge.memory.sequence_chunks`).

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> prefix_work(enumerate_sequences(6, 3))
    [[15, 90, 90]]
    >>> [sum(w) for w in zip(*prefix_work(enumerate_sequences(6, 3), 2))]     # one first task in both chunks
    [16, 90, 90]
    """
    from .memory import sequence_chunks

    seqs = np.asarray(sequences)
    return [count_prefixes(seqs[part]) for part in sequence_chunks(seqs, num_chunks)]


def _linear(t_lo, w_lo, t_hi, w_hi):
    """Seconds at a width between ``w_lo`` and ``w_hi`` from the timings there (linear, never decreasing)."""
    if w_hi <= w_lo:
        return lambda w: t_lo
    slope = max(0.0, (t_hi - t_lo) / (w_hi - w_lo))
    return lambda w: t_lo + slope * (w - w_lo)


def _timed(fn, device, seconds, warmup=1):
    return time_per_call(fn, device=device, warmup=warmup, repeats=3, max_seconds=seconds)


#: widest step timed on the CPU (wider chunks are extrapolated linearly: a step's cost there is
#: proportional to its width); accelerators are timed at the chunk's own width
CPU_PROBE_WIDTH = 4096


def scoring_settings(num_classes: int, num_tasks: int, classic_datasets=(), classic_num_tasks: int = 10,
                     user_lists: dict | None = None) -> list[tuple[int, int, int]]:
    """The random-sequence scorings of notebook 02: ``(num_classes, num_tasks, calls)`` per setting.

    Two percentiles (hard, easy) in the enumerable setting; per classic dataset one
    distribution of random scores and two percentiles. ``user_lists`` maps a dataset given
    as a file to its class names.

    Examples
    --------
    >>> scoring_settings(6, 3, ["cifar100", "cub200"], 10)
    [(6, 3, 2), (100, 10, 3), (200, 10, 3)]
    """
    from ..data.class_names import CLASS_NAME_LISTS

    user_lists = user_lists or {}
    out = [(int(num_classes), int(num_tasks), 2)]
    for d in classic_datasets:
        n = len(user_lists[d]) if d in user_lists else CLASS_NAME_LISTS[d]
        out.append((int(n), int(classic_num_tasks), 3))
    return out


def _probe_state(backend, width, t, M, m):
    """A state of ``width`` nodes as it is when task ``t`` trains (EWC sums, old model, iCaRL's memory)."""
    state = backend.select(backend.root(), np.zeros(width, dtype=np.int64))
    learner = backend.learner
    if learner == "ewc":
        state["fisher"] = [torch.zeros_like(p) for p in state["params"]]
        state["fisher_theta"] = [torch.zeros_like(p) for p in state["params"]]
    if learner in ("lwf", "icarl"):
        state["old"] = [p.clone() for p in state["params"]]
    if learner == "icarl" and t > 0:
        rows = torch.arange(t * M * m, device=backend.device) % backend.ntr
        cls = torch.arange(t * M * m, device=backend.device) % backend.C
        state["mem_x"] = backend.xtr[cls, rows].expand(width, -1, -1).contiguous()
        state["mem_y"] = cls.expand(width, -1).contiguous()
    return state


def _step_timer(backend, width, K, M, seconds, warmup=1):
    """Seconds of one batched step of ``width`` nodes at the last task (the largest memory)."""
    dev, cfg = backend.device, backend.cfg
    t = K - 1
    m = cfg.memory_per_class
    state = _probe_state(backend, width, t, M, m)
    params, buf = backend.start(state)
    classes = (torch.arange(width * M, device=dev).reshape(width, M) % backend.C)
    ar = torch.arange(width, device=dev)[:, None]
    total = M * backend.ntr + (state["mem_x"].shape[1] if "mem_x" in state else 0)
    order = torch.stack([torch.randperm(total, generator=torch.Generator().manual_seed(0))] * width).to(dev)
    seen = torch.ones(width, backend.C, dtype=torch.bool, device=dev)
    old_mask = seen.clone()
    old_mask[ar, classes] = False
    idx = order[:, :cfg.batch_size]

    def step():
        xb, yb = backend._batch(classes, idx, state.get("mem_x"), state.get("mem_y"), ar)
        backend.step(state, params, buf, xb, yb, seen, old_mask)
    return _timed(step, dev, seconds, warmup)


def _eval_timer(backend, width, K, M, xall, yall, nte, seconds, warmup=1):
    """Seconds of one evaluation group of ``width`` nodes (every test image) at the last task."""
    from .node_accuracy import class_accuracy

    state = _probe_state(backend, width, K - 1, M, backend.cfg.memory_per_class)
    seen = torch.ones(width, backend.C, dtype=torch.bool, device=backend.device)
    return _timed(lambda: class_accuracy(backend, state, xall, yall, nte, seen, width), backend.device, seconds,
                  warmup)


@dataclass
class TruthBudget:
    """The ground truth's budget: a :class:`clkit.budget.Budget` plus its memory plans and level counts.

    Attributes
    ----------
    budget : clkit.budget.Budget
    plans : dict
        ``{learner: ChunkPlan}`` (built-in learners).
    levels : list of int
        Prefix-tree nodes per level of the sequences trained (one chunk).
    sequences : int
        Sequences trained (``|Omega|`` or the sample).
    notes : list of str
    gpu : clkit.budget.FlopEstimate or None
        The strategies' training and evaluation on one GPU, from FLOPs.
    learners : dict
        Per learner: ``timed_s`` (seconds of its timed work on the run's device), ``gpu_s`` (its
        training and evaluation on one GPU from FLOPs; ``None`` for a batched learner), ``rate``
        (the FLOP/s and its source), ``row_step`` / ``row_forward`` (FLOPs of a training step and of a
        forward pass per input row), ``epochs`` (passes in the first task and in a later one,
        :func:`strategy_epochs`; 1 for a closed-form head), ``first_extra`` (forward passes over the first
        task's rows before them: :func:`first_task_extra`), ``step_s`` and ``batch_size`` (a strategy's timed
        minibatch step and its rows) and ``kind`` (``"batched"`` or ``"strategy"``). :func:`clkit.edge.budget_set.set_budget` prices Fig. 5 from them.
    """

    budget: Budget
    plans: dict
    levels: list
    sequences: int
    notes: list = field(default_factory=list)
    gpu: object = None
    learners: dict = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return self.budget.seconds

    def text(self) -> str:
        """The budget paragraph, the memory plan of every learner and what the estimate leaves out."""
        memory = ""
        if self.plans:
            first = next(iter(self.plans.values()))
            memory = (f"Memory (budget {_size(first.budget)}: {first.how}): "
                      + "; ".join(f"{name} {plan.describe(budget=False)}" for name, plan in self.plans.items()) + ".")
        gpu = self.gpu.text() if self.gpu is not None else ""
        return " ".join(p for p in (self.budget.text(), gpu, memory, " ".join(self.notes)) if p)

    def record(self) -> dict:
        """For ``results.json``: the budget's record plus chunks, levels and what it leaves out."""
        return {**self.budget.record(), "levels": list(self.levels), "sequences": self.sequences,
                "chunks": {name: {"num_chunks": p.num_chunks, "max_nodes": p.max_nodes, "eval_nodes": p.eval_nodes, "herd_nodes": p.herd_nodes,
                                  "node_train_bytes": p.node.train, "budget_bytes": p.budget, "how": p.how}
                           for name, p in self.plans.items()},
                "notes": list(self.notes), "left_out": LEFT_OUT,
                "learners": {n: {"kind": d["kind"], "timed_s": d["timed_s"], "gpu_s": d["gpu_s"],
                                 "row_step": d["row_step"], "row_forward": d["row_forward"], "epochs": list(d["epochs"]),
                                 "first_extra": d.get("first_extra", 0.0)}
                             for n, d in self.learners.items()},
                **({"gpu_estimate": self.gpu.record()} if self.gpu is not None else {})}


def _device_label(device) -> str:
    from ..device import RunDevice, as_device, device_info

    if isinstance(device, RunDevice):
        info, dev = device.info, device.device
    else:
        dev = as_device("cpu" if device is None else device)
        info = device_info(dev) if dev.type != "meta" else {"name": "meta"}
    name = info.get("name")
    return f"{dev} ({name})" if name and name != dev.type else str(dev)


def truth_budget(data: dict, all_sequences, own_learners, user_learners=(), config=None, *, seed: int = 0,
                 learner_kwargs: dict | None = None, mode: str = "exact", samples: int = 256, device=None,
                 precision: str | None = None, memory_budget: int | None = None, num_random: int = 0,
                 random_settings=(), seconds_per_timing: float = 2.0, inputs: dict | None = None) -> TruthBudget:
    """Count the ground truth's work and time a few of its steps on ``device`` (see the module docstring).

    Parameters
    ----------
    data : dict
        :func:`~clkit.edge.experiment.load_enumerable_data`'s arrays (``x_train``,
        ``x_test``, ``f_train``, ``f_test``); only their shapes and a few rows are used.
    all_sequences : ndarray, shape (L, K, M)
        ``Omega``.
    own_learners, user_learners, config, seed, learner_kwargs, mode, samples, device, precision, memory_budget, inputs
        As :func:`clkit.edge.report.ground_truth` (``mode="sample"`` counts the uniform
        sample; the sequences trained on demand are not counted; ``inputs`` gives a strategy
        its own inputs and network, as there).
    num_random : int
        Random sequences scored per percentile (the notebook's ``num_random``).
    random_settings : iterable of (num_classes, num_tasks, calls)
        The settings whose S(O) percentiles are computed and how many times each scores
        ``num_random`` random sequences.
    seconds_per_timing : float
        At most this long per timed quantity.

    Returns
    -------
    TruthBudget

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> from clkit.edge.learners import LearnerConfig
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(6, 20, 8)).astype("float32")
    >>> data = {"x_train": x, "x_test": x[:, :10], "f_train": x, "f_test": x[:, :10]}
    >>> cfg = LearnerConfig(hidden=8, epochs=2, batch_size=16)
    >>> tb = truth_budget(data, enumerate_sequences(6, 3), ["finetune"], config=cfg, seconds_per_timing=0.2)
    >>> tb.levels, tb.budget.trainings, [w.count for w in tb.budget.work]     # 2 epochs x ceil(40 / 16) = 6 steps
    ([15, 90, 90], 195, [18, 3])
    """
    from ..device import RunDevice, as_device, check_precision, move
    from ..plugins import resolve_strategy
    from .learners import LearnerConfig, _Batched, _Sequential, batched_plan, learner_config
    from .memory import chunk_plan
    from .shared import node_bytes_shared
    from .truth import sample_population

    config = LearnerConfig() if config is None else config
    kwargs = learner_kwargs or {}
    seqs = np.sort(np.asarray(all_sequences, dtype=np.int64), axis=-1)
    if mode == "sample":
        seqs = seqs[sample_population(len(seqs), check_int("truth_samples", samples, low=10, high=len(seqs)), seed)]
    L, K, M = seqs.shape
    if isinstance(device, RunDevice):
        dev, precision = device.device, device.precision if precision is None else precision
    else:
        dev = as_device("cpu" if device is None else device)
        precision = check_precision("fp32" if precision is None else precision, dev)
    work, plans, trainings, notes, per = [], {}, 0, [], {}
    levels = count_prefixes(seqs)
    for name in own_learners:
        xtr, xte = (data["f_train"], data["f_test"]) if name == "ncm" else (data["x_train"], data["x_test"])
        cfg = learner_config(name, config, kwargs.get(name))
        plan = plans[name] = batched_plan(name, cfg, xtr, xte, seqs, dev, memory_budget=memory_budget)
        widths = prefix_work(seqs, plan.num_chunks)
        trainings += sum(map(sum, widths))
        xtr_t = torch.as_tensor(np.asarray(xtr), dtype=torch.float32)
        xte_t = torch.as_tensor(np.asarray(xte), dtype=torch.float32)
        C, ntr, D = xtr_t.shape
        nte = xte_t.shape[1]
        backend = _Batched(name, cfg, seed, xtr_t, dev, precision, plan.herd_nodes)
        xall = move(xte_t.reshape(C * nte, D), dev)
        yall = torch.arange(C, device=dev).repeat_interleave(nte)
        flat = [w for chunk in widths for w in chunk]
        lo, hi = min(flat), max(flat)
        probe = min(hi, CPU_PROBE_WIDTH) if dev.type == "cpu" else hi      # the widest step timed
        e_lo, e_hi = min(lo, plan.eval_nodes), min(hi, plan.eval_nodes)
        v_lo = _eval_timer(backend, e_lo, K, M, xall, yall, nte, seconds_per_timing)
        v_hi = (_eval_timer(backend, e_hi, K, M, xall, yall, nte, seconds_per_timing, warmup=0)
                if e_hi > e_lo else v_lo)
        tev = _linear(v_lo, e_lo, v_hi, e_hi)
        groups = [(math.ceil(w / plan.eval_nodes), min(w, plan.eval_nodes)) for w in flat]
        n_eval = sum(g for g, _ in groups)
        s_eval = sum(g * tev(w) for g, w in groups)
        s_total = s_eval                                     # this learner's timed work
        if name != "ncm":
            t_lo = _step_timer(backend, lo, K, M, seconds_per_timing)
            t_hi = _step_timer(backend, probe, K, M, seconds_per_timing, warmup=0) if probe > lo else t_lo
            tstep = _linear(t_lo, lo, t_hi, probe)
            mem = cfg.memory_per_class * M if name == "icarl" else 0
            steps = [cfg.task_epochs(t) * math.ceil((M * ntr + t * mem) / cfg.batch_size) for chunk in widths
                     for t in range(len(chunk))]
            n_steps = sum(steps)
            s_steps = sum(s * tstep(w) for s, w in zip(steps, flat))
            at = (f"timed at {probe:,} and {lo:,} sequences: {_ms(t_hi)} / {_ms(t_lo)}" if probe > lo
                  else f"timed at {lo:,} sequences")
            if probe < hi:
                at += f", extrapolated linearly to {hi:,}"
            work.append(Work(f"{name} batched steps", n_steps, s_steps / n_steps, at))
            s_total += s_steps
            if name == "ewc":
                n_f = len(flat) * math.ceil(M * ntr / cfg.batch_size)
                s_f = sum(math.ceil(M * ntr / cfg.batch_size) * tstep(w) for w in flat)
                work.append(Work("ewc Fisher passes", n_f, s_f / n_f, "at the cost of a step"))
                s_total += s_f
        work.append(Work(f"{name} evaluation groups", n_eval, s_eval / n_eval,
                         f"up to {plan.eval_nodes:,} sequences x {C * nte:,} test images"))
        per[name] = {"kind": "batched", "timed_s": s_total, "gpu_s": None, "rate": None, "row_step": None,
                     "row_forward": None, "first_extra": 0.0, "epochs": (cfg.task_epochs(0), cfg.task_epochs(1))}
    gpu_flops, gpu_seconds, gpu_detail, gpu_rates = 0.0, 0.0, [], []
    for u in user_learners:
        cls = resolve_strategy(u, parameter="learners")
        xtr_u, _, factory = (inputs or {}).get(u, (data["x_train"], None, None))
        xtr_t = torch.as_tensor(np.asarray(xtr_u), dtype=torch.float32)
        ntr = xtr_t.shape[1]
        backend = _Sequential(cls, config, seed, xtr_t, factory, kwargs.get(u), dev, precision)
        strat = backend.root()[0]
        plan = chunk_plan(node_bytes_shared(strat), L, dev, budget=memory_budget)   # a frozen ViT: shared
        state = declared_state(strat)
        # a method declaring a smaller state trains once per state (clkit.edge.state_truth), in one pass
        widths = prefix_work(seqs, plan.num_chunks) if state == "prefix" else [count_states(seqs, state)]
        nodes = sum(map(sum, widths))
        trainings += nodes
        t_task = _strategy_step(strat, xtr_t, M, strat.batch_size, seconds_per_timing)
        closed = getattr(strat, "optimizer", True) is None
        if closed:   # no gradient steps (SimpleCIL, RanPAC): one pass per task
            probe_steps = math.ceil(min(4 * strat.batch_size, M * ntr) / strat.batch_size)
            work.append(Work(f"{u} tasks (one pass each, closed form)", nodes,
                             t_task * probe_steps * math.ceil(M * ntr / strat.batch_size) / probe_steps,
                             "timed on a task of four minibatches, scaled to a task's rows"))
        else:
            # its own epochs (learner_kwargs included), the first task's init_epochs where a schedule sets them
            n_steps = sum(n * strategy_epochs(strat, backend.cfg, t) for chunk in widths
                          for t, n in enumerate(chunk)) * math.ceil(M * ntr / strat.batch_size)
            work.append(Work(f"{u} steps (one sequence at a time)", n_steps, t_task,
                             "timed on four minibatches of its strategy"))
        notes.append(f"{u} (a strategy trained sequence after sequence): "
                     + (plan.describe() if state == "prefix" else
                        f"its truth by state ({state}): {nodes:,} trainings instead of {sum(levels):,} prefix-tree "
                        f"nodes") + "; its evaluation passes are not timed.")
        rows = _row_flops(strat, xtr_t)
        flops = _strategy_flops(strat, xtr_t, widths, M, ntr, np.shape(data["x_test"])[1], backend.cfg, rows)
        per[u] = {"kind": "strategy", "timed_s": work[-1].seconds, "gpu_s": None, "rate": None,
                  "row_step": rows and rows[0], "row_forward": rows and rows[1], "first_extra": first_task_extra(strat),
                  "step_s": t_task, "batch_size": int(strat.batch_size),
                  "epochs": (1, 1) if closed else (strategy_epochs(strat, backend.cfg, 0),
                                                   strategy_epochs(strat, backend.cfg, 1))}
        if flops is not None:
            # a scratch backbone timed on a GPU (resnet32) at its measured throughput, the rest at the assumed one
            backbone = getattr(factory, "backbone", None)
            measured = measured_throughput(backbone) if isinstance(backbone, str) else None
            gpu_flops += flops
            gpu_seconds += flops / (measured or GPU_THROUGHPUT)
            gpu_detail.append(f"{u} {format_flops(flops)}")
            rate = measured_assumption(backbone) if measured else GPU_ASSUMPTION
            per[u].update(gpu_s=flops / (measured or GPU_THROUGHPUT), rate=(measured or GPU_THROUGHPUT, rate))
            if rate not in gpu_rates:
                gpu_rates.append(rate)
    if num_random and random_settings:
        from .sequences import random_scores

        total, secs = 0, 0.0
        rng = np.random.default_rng(seed)
        for n_cls, n_tasks, calls in random_settings:
            E = rng.normal(size=(n_cls, 16))
            S = (E @ E.T) / np.outer(np.linalg.norm(E, axis=1), np.linalg.norm(E, axis=1))
            probe = min(num_random, 2000)
            t = time_per_call(lambda: random_scores(S, n_tasks, num_random=probe), warmup=0, repeats=1,
                              max_seconds=seconds_per_timing)
            total += calls * num_random
            secs += calls * t * num_random / probe
        work.append(Work("thousand random sequences scored (host)", max(1, total // 1000), secs / max(1, total // 1000),
                         "timed on up to 2,000 per setting"))
    learners = list(own_learners) + list(user_learners)
    per_task = math.ceil(M * np.shape(data["x_train"])[1] / config.batch_size)
    detail = (f"{len(learners)} learner{'s' if len(learners) != 1 else ''} x {sum(levels):,} prefix-tree tasks "
              f"({' + '.join(f'{c:,}' for c in levels)} per level, {L * K:,} without the tree; "
              f"{'all ' if mode == 'exact' else 'a uniform sample of '}{L:,} sequences), {config.epochs} "
              f"epoch{'s' if config.epochs != 1 else ''} of {per_task:,} steps per task"
              f"{' (iCaRL more: its memory)' if 'icarl' in learners else ''}")
    budget = Budget("02_edge", _device_label(device), trainings, work, parallel=1, detail=detail, leaves_out=LEFT_OUT)
    if precision != "fp32":
        notes.append(f"Steps timed in {precision} (autocast).")
    gpu = None
    if gpu_flops:
        gpu = FlopEstimate(gpu_flops, throughput=gpu_flops / gpu_seconds,
                           assumption=" and ".join(gpu_rates) if len(gpu_rates) > 1 else gpu_rates[0],
                           detail="the strategies' training and evaluation passes on their initial "
                                  "models (DER's grows: more), " + ", ".join(gpu_detail)
                                  + "; the batched learners and the frozen features' one pass are not counted")
    return TruthBudget(budget, plans, levels, L, notes, gpu, per)


def _strategy_step(strat, xtr, M, batch_size, seconds):
    """Seconds per minibatch step of a Strategy: a task of four minibatches of its first classes, on a copy."""
    import copy

    from ..strategies.base import Task

    probe = copy.deepcopy(strat)
    probe.epochs = 1
    rows = 4 * batch_size
    cls = list(range(M))
    per = math.ceil(rows / M)
    xs = torch.cat([xtr[c, :per] for c in cls])
    ys = torch.tensor(np.repeat(cls, min(per, xtr.shape[1])), dtype=torch.long)
    task = Task(xs, ys, task_id=0, classes=tuple(cls))
    steps = math.ceil(len(xs) / batch_size)
    return time_per_call(lambda: probe.train_task(task), device=probe.device, warmup=1, repeats=2,
                         max_seconds=seconds) / steps


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def measure_truth(num_classes: int, num_tasks: int, learners=("finetune",), *, device=None,
                  precision: str | None = None, n_train: int = 100, n_test: int = 200, hidden: int = 32,
                  epochs: int = 2, sample: int | None = None, seed: int = 0, train: bool = True) -> dict:
    """The batched ground truth at ``num_classes`` / ``num_tasks`` on ``device``: its budget, and its time.

    Fabricated Gaussian classes of Fashion-MNIST's pooled shape (196 inputs) stand in for
    the data (the cost does not depend on the values). The budget covers every order
    (``|Omega|``: 2,520 at 8 / 4, 113,400 at 10 / 5); with ``train`` the learners then train
    ``sample`` orders (a uniform sample; ``None``: all) and the wall time is measured (CUDA
    synchronised), so an estimate can be checked against a measurement -- the entry of the
    GPU check for issue item 6.

    Returns
    -------
    dict
        ``sequences`` (``|Omega|``), ``trained`` (sequences trained), ``estimate_s`` (every
        order), ``estimate_trained_s`` (the trained ones), ``measured_s`` (or None),
        ``chunks`` ({learner: chunks for every order}), ``device``, ``budget`` (the text).

    Examples
    --------
    >>> out = measure_truth(4, 2, device="cpu", n_train=10, n_test=5, hidden=4, epochs=1)
    >>> out["sequences"], out["trained"], out["measured_s"] > 0
    (6, 6, True)
    """
    import time

    from .combinatorics import enumerate_sequences
    from .experiment import run_learners
    from .learners import LearnerConfig, _run_device
    from .truth import sample_population

    dev, precision = _run_device(device, precision)
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(num_classes, 196)).astype(np.float32)
    make = lambda n: centres[:, None] + rng.normal(size=(num_classes, n, 196)).astype(np.float32)  # noqa: E731
    xtr, xte = make(n_train), make(n_test)
    data = {"x_train": xtr, "x_test": xte, "f_train": xtr[..., :64], "f_test": xte[..., :64]}
    seqs = enumerate_sequences(num_classes, num_tasks)
    cfg = LearnerConfig(hidden=hidden, epochs=epochs)
    full = truth_budget(data, seqs, list(learners), config=cfg, seed=seed, device=dev, precision=precision)
    part = seqs if sample is None else seqs[sample_population(len(seqs), sample, seed)]
    est = full if sample is None else truth_budget(data, part, list(learners), config=cfg, seed=seed, device=dev,
                                                   precision=precision)
    measured = None
    if train:
        sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
        sync()
        start = time.perf_counter()
        run_learners(data, part, list(learners), cfg, seed=seed, progress=False, device=dev, precision=precision)
        sync()
        measured = time.perf_counter() - start
    return {"sequences": len(seqs), "trained": len(part), "estimate_s": full.seconds,
            "estimate_trained_s": est.seconds, "measured_s": measured,
            "chunks": {n: p.num_chunks for n, p in full.plans.items()}, "device": str(dev), "budget": full.text()}
