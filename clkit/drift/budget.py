"""The budget of a DRIFT run: its trainings, steps and evaluation passes, and their time on the run's device.

Before notebook 05_drift trains, :func:`estimate` counts the work of the study it is
about to run -- the :func:`clkit.drift.experiment.run_grid` calls of
:func:`~clkit.drift.experiment.grid_plan` (methods x stream configurations x seeds,
under each protocol, plus Joint and the null control) -- and times it:

- **online steps**: one per batch of every run's stream (the stream's length comes
  from building it: streams are cached, so the run then loads them);
- **evaluation passes**: every run's evaluation points
  (:func:`~clkit.drift.protocol.protocol_eval_points`, Δ per protocol) and one per Joint
  training;
- **Joint steps**: epochs x batches of the offline bound, once per seed and protocol;
- **graph swaps**: the authors' hard loop moves the model to each task's subgraph at
  every task change (normalised on the host, ``Â X`` recomputed on the device).

Each unit is timed on the run's device at the run's graph size
(:func:`clkit.budget.time_per_call`: warm-up calls, CUDA synchronised, the median):
a few real ``observe`` steps of every method under every protocol on the first
stream's batches, one evaluation pass, one Joint step and one graph swap per protocol.
Not in the estimate (:data:`LEAVES_OUT`, said in its text): loading the graph, building
streams the first time, the σ calibration, the first steps' extra cost, figures and
verdicts.

Examples
--------
>>> from clkit.data.graphs import csbm
>>> import clkit.drift as drift
>>> g = csbm(120, 4, seed=0)
>>> data = {pr: drift.protocol_data(g, 2, 0.2, seed=0, protocol=pr) for pr in ("text", "authors")}
>>> c = drift.study_configs(sigma=2.0, sigmas=[2.0], p=0.3, k_bl=1, batch_size=10, batch_sizes=[10],
...                         sampling="without")
>>> plan = count(data, c, ["bare", "joint"], ["bare"], [1, 2], eval_every={"text": 4, "authors": 4},
...              joint_epochs=3, cache=False)
>>> plan.trainings, plan.online_runs, plan.joint_trainings
(22, 18, 4)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from .._seed import torch_seeded, torch_threads
from .._validate import check_int
from ..budget import Budget, Work, free_cores, time_per_call
from .cache import build_stream
from .experiment import grid_plan
from .protocol import get_protocol, protocol_eval_points

__all__ = ["StudyCount", "count", "calibrate", "estimate", "LEAVES_OUT"]

#: what :func:`estimate` does not count (said in the budget's text)
LEAVES_OUT = ("loading the graph, building the streams the first time, the σ calibration, the first steps' "
              "extra cost (caches, a memory filling), figures and verdicts")


@dataclass
class StudyCount:
    """What a DRIFT study will do (:func:`count`).

    Attributes
    ----------
    runs : list of dict
        One per (protocol, role, configuration, method): ``seeds`` (runs), ``steps`` and
        ``evals`` per run, ``task_changes`` per run (the authors' hard loop).
    joint : list of dict
        One per protocol with Joint: ``trainings``, ``steps`` per training.
    streams : dict
        ``(protocol, configuration) -> Stream`` (the first seed's; for calibration).
    """

    runs: list = field(default_factory=list)
    joint: list = field(default_factory=list)
    streams: dict = field(default_factory=dict)

    @property
    def online_runs(self) -> int:
        return sum(r["seeds"] for r in self.runs)

    @property
    def joint_trainings(self) -> int:
        return sum(j["trainings"] for j in self.joint)

    @property
    def trainings(self) -> int:
        return self.online_runs + self.joint_trainings

    def steps(self, protocol: str | None = None, method: str | None = None) -> int:
        """Online steps (of one protocol and method when given)."""
        return sum(r["seeds"] * r["steps"] for r in self.runs
                   if protocol in (None, r["protocol"]) and method in (None, r["method"]))

    def evaluations(self, protocol: str | None = None) -> int:
        """Evaluation passes of the online runs and of Joint."""
        online = sum(r["seeds"] * r["evals"] for r in self.runs if protocol in (None, r["protocol"]))
        return online + sum(j["trainings"] for j in self.joint if protocol in (None, j["protocol"]))

    def detail(self) -> str:
        """How the trainings are counted, per protocol and role."""
        parts = []
        for pr in dict.fromkeys(r["protocol"] for r in self.runs):
            roles = []
            for role, what in (("main", "methods"), ("sweep", "sweep methods"), ("null", "null control")):
                rows = [r for r in self.runs if r["protocol"] == pr and r["role"] == role]
                if not rows:
                    continue
                cfgs = len({r["config"] for r in rows})
                meths = len({r["method"] for r in rows})
                seeds = rows[0]["seeds"]
                label = (" and ".join(dict.fromkeys(r["method"] for r in rows)) + " (null controls)" if role == "null"
                         else f"{meths} {what}")
                roles.append(f"{label} x {cfgs} configuration{'s' * (cfgs > 1)} x {seeds} seeds")
            parts.append(f"{pr}: " + " + ".join(roles))
        joint = f"; Joint {self.joint_trainings} trainings (once per seed and protocol)" if self.joint else ""
        return "; ".join(parts) + joint


def count(data: dict, configs: dict, methods, sweep_methods, seeds, *, eval_every, joint_epochs: int,
          null_configs=None, null_offset: int | None = None, dataset: str = "graph", cache: bool = True) -> StudyCount:
    """Count the work of notebook 05_drift's study (the parts of :func:`~clkit.drift.experiment.grid_plan`).

    Parameters
    ----------
    data : dict -- ``protocol -> (graph, split)`` (:func:`~clkit.drift.experiment.protocol_data`)
    configs, methods, sweep_methods, seeds : as :func:`~clkit.drift.experiment.run_protocols`
    eval_every : int or dict ``protocol -> Δ``
    joint_epochs : int -- the text protocol's Joint epochs (the authors' protocol fixes its own)
    null_configs, null_offset : the null control (:func:`~clkit.drift.experiment.null_control_configs`)
    dataset, cache : the stream cache's key and switch (:func:`~clkit.drift.cache.build_stream`); the
        streams built here are the run's (cached, so it loads them)

    Returns
    -------
    StudyCount
    """
    out = StudyCount()
    for part in grid_plan(list(data), configs, methods, sweep_methods, seeds, null_configs=null_configs,
                          null_offset=null_offset):
        graph, split = data[part.protocol]
        p = get_protocol(part.protocol)
        every = eval_every[part.protocol] if isinstance(eval_every, dict) else eval_every
        if "joint" in part.methods:
            n_train = sum(len(t) for t in split.task_nodes)
            epochs = p.joint_epochs or joint_epochs
            out.joint.append({"protocol": part.protocol, "trainings": len(part.seeds),
                              "steps": epochs * math.ceil(n_train / p.joint_batch_size),
                              "batch_size": p.joint_batch_size, "epochs": epochs})
        for cfg in part.configs:
            key = (part.protocol, cfg)
            if key not in out.streams:
                out.streams[key] = build_stream(split.task_nodes, cfg.setting, dataset=dataset,
                                                batch_size=cfg.batch_size, sampling=cfg.sampling, seed=part.seeds[0],
                                                sigma=cfg.sigma, p=cfg.p, k_bl=cfg.k_bl, cache=cache,
                                                protocol=p.name)
            stream = out.streams[key]
            loop = p.hard_task_loop and cfg.setting != "gaussian"
            tasks = stream.segment if stream.segment is not None else stream.counts.argmax(1)
            evals = len(protocol_eval_points(stream.num_batches, every, p, task_of_batch=tasks if loop else None))
            changes = int(np.count_nonzero(tasks[1:] != tasks[:-1])) + 1 if loop else 0
            for m in part.methods:
                if m == "joint":
                    continue
                out.runs.append({"protocol": part.protocol, "role": part.role, "config": cfg.label(), "method": m,
                                 "seeds": len(part.seeds), "steps": stream.num_batches, "evals": evals,
                                 "task_changes": changes})
    return out


def _model(graph, protocol, hidden: int, seed: int, backbone: str = "gcn", sampled: bool = False):
    from ..models.gnn import make_graph_backbone
    from ..models.sampling import set_neighbour_sampling

    with torch_seeded(seed):
        model = make_graph_backbone(backbone, graph.x, graph.edge_index, graph.num_classes, hidden=hidden,
                                    protocol="authors" if get_protocol(protocol).backbone == "authors" else "text",
                                    seed=seed)
    return set_neighbour_sampling(model, True, seed=seed) if sampled else model


def _sampled(data: dict, neighbour_sampling: str, backbone: str = "gcn", protocol=None) -> bool:
    """Whether the run samples neighbourhoods on its graph (as :func:`clkit.drift.experiment.run_grid` decides,
    per backbone and protocol); ``protocol`` None: whether any of ``data``'s protocols samples."""
    from ..models.sampling import resolve_neighbour_sampling

    graph = next(iter(data.values()))[0]
    names = list(data) if protocol is None else [protocol]
    return any(resolve_neighbour_sampling(neighbour_sampling, graph.num_nodes, int(graph.edge_index.shape[1]),
                                          backbone=backbone,
                                          protocol="authors" if get_protocol(pr).backbone == "authors" else "text")
               for pr in names)


def calibrate(data: dict, study: StudyCount, *, hidden: int, lr: float = 5e-3, memory_size: int = 100,
              learner_kwargs: dict | None = None, device="cpu", precision: str = "fp32", seed: int = 0,
              steps: int = 8, warmup: int | None = None, backbone: str = "gcn",
              neighbour_sampling: str = "full") -> dict:
    """Seconds per unit of work on ``device``, timed at the run's graph size (with ``backbone``'s network).

    For each protocol: ``observe`` steps of every method the study runs (``steps`` timed
    after ``warmup``, on the protocol's first stream's batches; the median), one
    evaluation pass (:class:`~clkit.drift.protocol.TaskEvaluator`), one Joint step (a
    batch of the protocol's Joint batch size) and, under the authors' protocol, one graph
    swap (:meth:`~clkit.models.gcn.GCN.set_graph` to a task's subgraph). One model per
    protocol serves every method (timing does not depend on its weights). Timed with one
    torch thread, as the runs train (:func:`clkit.drift.evaluate.run_stream`), and with the run's
    ``neighbour_sampling`` (sampled steps and chunked evaluation where the run samples). ``warmup``
    defaults to the steps that fill a replay memory of ``memory_size`` nodes, plus two:
    while a memory fills, every step stores (SSM, SEM: draws the subgraphs of) a whole
    batch, about twice a later step's cost.

    Returns
    -------
    dict
        ``{"step": {(protocol, method): s}, "eval": {protocol: s}, "joint": {protocol: s},
        "swap": {protocol: s}}``.
    """
    from ..device import as_device

    device = as_device(device)
    with torch_threads(1):
        return _calibrate(data, study, hidden, lr, memory_size, learner_kwargs, device, precision, seed, steps,
                          warmup, backbone, {pr: _sampled(data, neighbour_sampling, backbone, pr) for pr in data})


def _calibrate(data, study, hidden, lr, memory_size, learner_kwargs, device, precision, seed, steps, warmup,
               backbone="gcn", sampled=False):
    from ..device import move
    from ..strategies import Strategy, Task
    from .authors import make_authors_learner
    from .evaluate import METHODS, make_learner
    from .protocol import TaskEvaluator, induced_subgraph

    out = {"step": {}, "eval": {}, "joint": {}, "swap": {}}
    for pr, (graph, split) in data.items():
        p = get_protocol(pr)
        online = list(dict.fromkeys(r["method"] for r in study.runs if r["protocol"] == pr))
        stream = next((s for (q, _), s in study.streams.items() if q == pr), None)
        if stream is None:
            continue
        fill = warmup if warmup is not None else math.ceil(memory_size / stream.batch_size) + 2
        model = _model(graph, pr, hidden, seed, backbone, sampled.get(pr, False) if isinstance(sampled, dict)
                       else sampled)
        y = move(torch.as_tensor(graph.y, dtype=torch.int64), device)
        rows = torch.as_tensor(stream.batches[np.all(stream.batches >= 0, axis=1)], dtype=torch.int64)
        batches = move(rows, device)
        for m in online:
            kw = dict(lr=lr, memory_size=memory_size, seed=seed, device=device, precision=precision,
                      **(learner_kwargs or {}).get(m, {}))
            if p.learners == "authors" and m in METHODS:
                learner = make_authors_learner(m, model, weight_decay=p.weight_decay, **kw)
            else:
                learner = make_learner(m, model, **kw)
            t = iter(range(10 ** 9))

            def step():
                i = next(t) % len(batches)
                learner.observe(batches[i], y[batches[i]])

            out["step"][(pr, m)] = time_per_call(step, device=device, warmup=fill, repeats=steps, max_seconds=60)
        evaluator = TaskEvaluator(graph.edge_index, graph.y, split, p, device=device, precision=precision)
        out["eval"][pr] = time_per_call(lambda: evaluator(model), device=device, warmup=1, repeats=3)
        if study.joint:
            train = torch.as_tensor(np.concatenate(split.task_nodes)[: p.joint_batch_size], dtype=torch.int64)
            joint = Strategy(model, optimizer="adam", lr=lr, batch_size=p.joint_batch_size,
                             weight_decay=p.weight_decay, device=device, precision=precision)
            task = Task(train, torch.as_tensor(graph.y)[train]).to(device)
            out["joint"][pr] = time_per_call(lambda: joint.train_step(task.x, task.y), device=device,
                                             warmup=1, repeats=3)
        if any(r["task_changes"] for r in study.runs if r["protocol"] == pr):
            own = np.concatenate([np.asarray(split.task_nodes[0]),
                                  np.asarray(split.test_idx)[np.asarray(split.test_task) == 0]])
            sub = torch.as_tensor(own)[induced_subgraph(graph.edge_index, own)]
            out["swap"][pr] = time_per_call(lambda: model.set_graph(sub), device=device, warmup=1, repeats=3)
    return out


def _ms_list(times: dict) -> str:
    return ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in times.items())


def estimate(data: dict, configs: dict, methods, sweep_methods, seeds, *, eval_every, joint_epochs: int,
             hidden: int, lr: float = 5e-3, memory_size: int = 100, learner_kwargs: dict | None = None,
             null_configs=None, null_offset: int | None = None, dataset: str = "graph", cache: bool = True,
             device="cpu", precision: str = "fp32", describe: str | None = None, steps: int = 8,
             backbone: str = "gcn", workers: int = 1, neighbour_sampling: str = "full", split_note: str = "",
             **_) -> Budget:
    """Count the study's work (:func:`count`), time it on ``device`` (:func:`calibrate`): a :class:`clkit.budget.Budget`.

    ``describe`` names the device in the text (``rd.describe()``: on CUDA the card the steps were
    timed on); ``workers`` processes share the seeds (:func:`clkit.drift.experiment.run_grid`), which
    divides the time -- on the CPU by no more processes than cores are free
    (:func:`clkit.budget.free_cores`, said in the text);
    ``neighbour_sampling`` times the steps and passes as the run makes them (sampled where it
    samples); ``split_note`` (:func:`clkit.drift.split.split_note`) names the split grid of a set
    too long for one machine, or the case or merge this run is; other keywords of the notebook's grid
    (``tau``, ...) are accepted and ignored.
    """
    from ..device import as_device

    study = count(data, configs, methods, sweep_methods, seeds, eval_every=eval_every, joint_epochs=joint_epochs,
                  null_configs=null_configs, null_offset=null_offset, dataset=dataset, cache=cache)
    t = calibrate(data, study, hidden=hidden, lr=lr, memory_size=memory_size, learner_kwargs=learner_kwargs,
                  device=device, precision=precision, seed=min(seeds), steps=steps, backbone=backbone,
                  neighbour_sampling=neighbour_sampling)
    graph = next(iter(data.values()))[0]
    size = (f"{graph.num_nodes:,} nodes, {graph.x.shape[1]:,} features, {backbone.upper()} hidden {hidden}"
            + (", sampled neighbourhoods" if _sampled(data, neighbour_sampling, backbone) else ""))
    step_s = sum(study.steps(pr, m) * s for (pr, m), s in t["step"].items())
    n_steps = study.steps()
    per = {f"{pr} {m}": s for (pr, m), s in t["step"].items()}
    work = [Work("online steps", n_steps, step_s / max(n_steps, 1),
                 f"median of {steps} timed observe steps per method and protocol, after the memory filled, at "
                 f"{size}: {_ms_list(per)}")]
    n_eval = {pr: study.evaluations(pr) for pr in t["eval"]}
    total_eval = sum(n_eval.values())
    work.append(Work("evaluation passes", total_eval,
                     sum(n_eval[pr] * s for pr, s in t["eval"].items()) / max(total_eval, 1),
                     "one timed pass per protocol: " + _ms_list(t["eval"])))
    if study.joint:
        n_joint = {j["protocol"]: j["trainings"] * j["steps"] for j in study.joint}
        total = sum(n_joint.values())
        work.append(Work("Joint steps", total, sum(n_joint[pr] * t["joint"].get(pr, 0.0) for pr in n_joint)
                         / max(total, 1), "one timed step per protocol: " + _ms_list(t["joint"])))
    swaps = sum(r["seeds"] * r["task_changes"] for r in study.runs)
    if swaps and t["swap"]:
        work.append(Work("graph swaps (authors' hard loop)", swaps, float(np.mean(list(t["swap"].values()))),
                         "one timed swap to a task's subgraph"))
    name = describe or str(as_device(device))
    workers = check_int("workers", workers, low=1)
    cores = free_cores() if as_device(device).type == "cpu" and workers > 1 else None
    return Budget("05_drift", name, study.trainings, work, parallel=workers, detail=study.detail(),
                  leaves_out=LEAVES_OUT, cores=cores, note=split_note)
