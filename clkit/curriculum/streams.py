"""Training through a curriculum: the accuracy matrix ``R`` of every (seed, order, strategy).

``R[i, j]`` is the test accuracy on task ``j`` after training on task ``i``. In the
class-incremental scenario the single head over ``10 T`` outputs is used as a whole;
in the task-incremental one the strategies mask it to the task's ten classes
(:class:`clkit.strategies.Strategy`, ``scenario="task"``). :func:`run_streams` trains
every (seed, order, strategy) stream, optionally in worker processes; the paper's
Table 2 (single-task accuracy, the difficulty of each dataset) is
:func:`single_task_accuracy`.
"""

from __future__ import annotations

import inspect
import zlib
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np
import torch

from .._seed import torch_seeded
from .._validate import check_choice, check_int
from ..models.cnn import laid_out
from ..models.cnn import make_backbone as _builtin_backbone
from ..strategies import available_strategies, make_strategy
from ..learner_kwargs import settings_for
from ..strategies.base import _REGISTRY
from .benchmark import Benchmark, build_benchmark  # noqa: F401  (doctests)

__all__ = ["PAIRINGS", "task_seed", "strategy_kwargs", "single_task_accuracy", "run_stream", "run_streams",
           "measure_difficulty"]


def strategy_kwargs(name: str, hyper: dict) -> dict:
    """The entries of ``hyper`` that strategy ``name``'s constructor accepts.

    Examples
    --------
    >>> sorted(strategy_kwargs("ewc", {"ewc_lambda": 1.0, "memory_size": 200, "lr": 0.1}))
    ['ewc_lambda', 'lr']
    """
    check_choice("strategy", name, available_strategies())
    accepted = set()
    for klass in _REGISTRY[name].__mro__:
        if "__init__" in vars(klass):
            accepted |= set(inspect.signature(klass.__init__).parameters)
    return {k: v for k, v in hyper.items() if k in accepted}


def task_seed(seed: int, dataset: str) -> int:
    """The seed of one dataset's task within a run seeded ``seed``: the same whatever its position.

    Derived from ``seed`` and the dataset's name (numpy's ``SeedSequence`` over
    ``[seed, crc32(name)]``), so it does not depend on the order or on which other
    datasets are in the curriculum.

    Examples
    --------
    >>> task_seed(0, "digits") == task_seed(0, "digits"), task_seed(0, "digits") == task_seed(1, "digits")
    (True, False)
    """
    state = np.random.SeedSequence([check_int("seed", seed, low=0), zlib.crc32(str(dataset).encode())])
    return int(state.generate_state(1)[0])


def make_backbone(name: str, in_channels: int, num_classes: int, image_size: int, memory_format: str = "contiguous"):
    """A built-in backbone (:func:`clkit.models.cnn.make_backbone`) or a plugin factory ``"package.module:factory"``.

    Plugin names are resolved here, above the model layer, through :func:`clkit.plugins.build_model`
    (``clkit.models`` imports nothing from the strategy or plugin layers). ``memory_format``
    (``"contiguous"`` or ``"channels_last"``) applies to a plugin's model as to a built-in one
    (``model.to(memory_format=...)``: the 4-d weights only).

    Examples
    --------
    >>> make_backbone("small_cnn", 3, 30, 32).head.out_features
    30
    """
    if isinstance(name, str) and ":" in name:  # "package.module:factory" (see clkit.plugins)
        from ..plugins import build_model

        model = build_model(name, "04_curriculum", in_channels=in_channels, num_classes=num_classes,
                            image_size=image_size)
        return laid_out(model, memory_format)
    return _builtin_backbone(name, in_channels, num_classes, image_size, memory_format)


def _train_eval(strategy_name, order, train, test, *, backbone, scenario, epochs, seed, settings, pairing,
                progress=None, memory_format="contiguous"):
    channels, size = train[0].x.shape[1], train[0].x.shape[-1]
    with torch_seeded(seed):
        model = make_backbone(backbone, channels, 10 * len(order), size, memory_format)
    strat = make_strategy(strategy_name, model, scenario=scenario, epochs=epochs, seed=seed, **settings)
    T = len(order)
    R = np.full((T, T), np.nan)
    for i, task in enumerate(train):
        if pairing == "task":  # this task's batch order and new parameters: the same in every order
            ts = task_seed(seed, order[i])
            strat.reseed(ts)
            torch.manual_seed(ts)
        strat.train_task(task)
        R[i] = [strat.evaluate(t) for t in test]
        if progress is not None:
            progress.update(1)
    return R


def single_task_accuracy(bench: Benchmark, *, backbone: str = "small_cnn", epochs: int = 5, seed: int = 0,
                         progress=None, **hyper) -> dict:
    """The paper's Table 2: test accuracy of the backbone trained on each dataset alone.

    Parameters
    ----------
    bench : Benchmark
    backbone : str
        See :func:`make_backbone` (built-in name or plugin factory).
    epochs : int
    seed : int
    **hyper
        Optimiser settings passed to the naive strategy (``lr``, ``momentum``, ``batch_size``).

    Returns
    -------
    dict name -> accuracy
    """
    return {name: float(run_stream(bench, [name], "naive", scenario="class", backbone=backbone, epochs=epochs,
                                   seed=seed, progress=progress, **hyper)[0, 0])
            for name in bench.names}


PAIRINGS = ("task", "stream")


def run_stream(bench: Benchmark, order, strategy: str, *, scenario: str = "class", backbone: str = "small_cnn",
               epochs: int = 5, seed: int = 0, pairing: str = "task", learner_kwargs: dict | None = None,
               progress=None, memory_format: str = "contiguous", **hyper) -> np.ndarray:
    """Train ``strategy`` through the datasets in ``order``; return ``R`` (accuracy matrix).

    Pairing. Two orders of the same datasets are compared seed by seed, so everything
    random should be the same for a dataset in both. With ``pairing="task"`` (default)

    - the model is built once from ``seed`` (the same initial weights in every order);
    - every dataset keeps the same block of output rows whatever its position (labels
      by the datasets' sorted names, :meth:`Benchmark.tasks` ``blocks``), so its head
      rows start from the same weights;
    - before each task the strategy's batch-order and sampling generators and torch's
      global generator (parameters a strategy adds, e.g. PNN's columns; dropout) are
      reseeded from :func:`task_seed` of ``seed`` and the dataset.

    A learner that trains each task on its own (MSTE) then reaches exactly the same
    accuracy on a dataset in every order. ``pairing="stream"`` seeds once per stream
    (labels by position, one batch-order generator through the stream) -- the earlier
    behaviour, kept to show what pairing removes.

    Parameters
    ----------
    bench : Benchmark
    order : list of str
    strategy : str
        A registered strategy name.
    scenario : {"class", "task"}
    backbone : str
    epochs : int
    seed : int
        Model initialisation, batch order and memory sampling.
    pairing : {"task", "stream"}
    learner_kwargs : dict, optional
        ``{strategy: {keyword: value}}``: this strategy's own settings, over ``hyper``
        (:func:`clkit.learner_kwargs.settings_for`).
    memory_format : {"contiguous", "channels_last"}
        The backbone's layout (:func:`make_backbone`): channels_last is faster on CPU and gives the
        same results to float rounding, which training amplifies (so not the same numbers).
    **hyper
        Strategy and optimiser settings; each strategy takes the ones it accepts
        (:func:`strategy_kwargs`).

    Returns
    -------
    R : ndarray, shape (num_tasks, num_tasks)
        ``R[i, j]`` test accuracy on task ``j`` after training on task ``i`` (all cells,
        so forward transfer can be read above the diagonal).

    Examples
    --------
    >>> b = build_benchmark(["digits", "mnist_subset"], per_class_train=5, per_class_test=5, image_size=8,
    ...                     channels=1)
    >>> kw = dict(scenario="task", backbone="mlp", epochs=1, optimizer="adam", lr=0.01, batch_size=10)
    >>> m2i = run_stream(b, ["digits", "mnist_subset"], "mste", **kw)
    >>> i2m = run_stream(b, ["mnist_subset", "digits"], "mste", **kw)
    >>> bool(m2i[0, 0] == i2m[1, 1] and m2i[1, 1] == i2m[0, 0])   # each expert: the same in both orders
    True
    """
    check_choice("pairing", pairing, PAIRINGS)
    order = list(order)
    blocks = sorted(order) if pairing == "task" else order
    train, test = bench.tasks(order, scenario, blocks=blocks)
    settings = settings_for(strategy, strategy_kwargs(strategy, hyper), learner_kwargs)
    # torch's global generator is seeded for the whole stream as well, so code that draws from it
    # (e.g. layers a strategy adds while it trains) gives the same R whatever ran before in this
    # process -- the condition for results that do not depend on ``run_streams``' workers
    with torch_seeded(seed):
        return _train_eval(strategy, order, train, test, backbone=backbone, scenario=scenario, epochs=epochs,
                           seed=seed, settings=settings, pairing=pairing, progress=progress,
                           memory_format=memory_format)


def _stream_job(job):
    """Worker body of :func:`run_streams` (module level so worker processes can import it)."""
    key, bench, order, strategy, kwargs, num_threads = job
    if num_threads:
        torch.set_num_threads(num_threads)
    return key, run_stream(bench, order, strategy, **kwargs)


def run_streams(benches: dict, orders: dict, strategies, *, workers: int = 1, num_threads: int = 1, progress=None,
                **kwargs) -> dict:
    """Every (seed, order, strategy) stream; optionally in worker processes.

    Parameters
    ----------
    benches : dict seed -> Benchmark
        One benchmark per seed (the seed also drives :func:`run_stream`).
    orders : dict order name -> list of dataset names
    strategies : list of str
    workers : int
        Processes to use; ``1`` runs in this process. Every stream seeds its own model,
        batches and memories, so the results do not depend on ``workers``.
    num_threads : int
        torch threads in each worker (0: leave torch's default).
    progress : tqdm-like, optional
        Advanced by one per finished stream.
    **kwargs
        Passed to :func:`run_stream` (``scenario``, ``backbone``, ``epochs``, strategy settings).

    Returns
    -------
    dict seed -> order -> strategy -> R
    """
    workers = check_int("workers", workers, low=1)
    jobs = [((seed, o, s), bench, orders[o], s, {**kwargs, "seed": seed}, num_threads)
            for seed, bench in benches.items() for o in orders for s in strategies]
    out = {seed: {o: {} for o in orders} for seed in benches}

    def keep(key, R):
        seed, o, s = key
        out[seed][o][s] = R
        if progress is not None:
            progress.update(1)

    if workers == 1:
        for job in jobs:
            keep(*_stream_job(job))
        return out
    import multiprocessing as mp

    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(_stream_job, job) for job in jobs]
        for fut in as_completed(futures):
            keep(*fut.result())
    return out


def measure_difficulty(benches: dict, *, backbone: str = "small_cnn", epochs: int = 5, workers: int = 1,
                       num_threads: int = 1, progress=None, **hyper) -> dict:
    """Single-task accuracy of every dataset for every seed (the paper's Table 2, over seeds).

    The naive learner trains the backbone on each dataset alone (class scenario, one
    10-way head) and is tested on it.

    Parameters
    ----------
    benches : dict seed -> Benchmark
    backbone, epochs, workers, num_threads, progress
        As for :func:`run_streams`.
    **hyper
        Optimiser settings.

    Returns
    -------
    dict seed -> dataset -> accuracy
    """
    names = next(iter(benches.values())).names
    runs = run_streams(benches, {n: [n] for n in names}, ["naive"], scenario="class", backbone=backbone,
                       epochs=epochs, workers=workers, num_threads=num_threads, progress=progress, **hyper)
    return {s: {n: float(runs[s][n]["naive"][0, 0]) for n in names} for s in benches}
