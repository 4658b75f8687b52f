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

import contextlib
import inspect
import zlib
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np
import torch

from .._seed import torch_seeded, torch_threads
from .._validate import check_choice, check_int
from ..device import RunDevice, as_device, check_precision, set_deterministic
from ..models.cnn import laid_out
from ..models.cnn import make_backbone as _builtin_backbone
from ..strategies import available_strategies, make_strategy
from ..learner_kwargs import settings_for
from ..strategies.base import _REGISTRY
from .benchmark import Benchmark, build_benchmark  # noqa: F401  (doctests)

__all__ = ["PAIRINGS", "task_seed", "strategy_kwargs", "single_task_accuracy", "run_setting", "run_stream",
           "run_streams", "worker_pool", "measure_difficulty"]


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
                progress=None, memory_format="contiguous", device=torch.device("cpu"), precision="fp32"):
    channels, size = train[0].x.shape[1], train[0].x.shape[-1]
    with torch_seeded(seed):   # built on the CPU under the seed: the same initial weights on every device
        model = make_backbone(backbone, channels, 10 * len(order), size, memory_format)
    # the strategy moves the model to the device (its layout kept: Module.to preserves strides)
    strat = make_strategy(strategy_name, model, scenario=scenario, epochs=epochs, seed=seed, device=device,
                          precision=precision, **settings)
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
                         progress=None, device="cpu", precision: str | None = None, **hyper) -> dict:
    """The paper's Table 2: test accuracy of the backbone trained on each dataset alone.

    Parameters
    ----------
    bench : Benchmark
    backbone : str
        See :func:`make_backbone` (built-in name or plugin factory).
    epochs : int
    seed : int
    device, precision
        As for :func:`run_stream`.
    **hyper
        Optimiser settings passed to the naive strategy (``lr``, ``momentum``, ``batch_size``).

    Returns
    -------
    dict name -> accuracy
    """
    bench = bench.to(device)
    return {name: float(run_stream(bench, [name], "naive", scenario="class", backbone=backbone, epochs=epochs,
                                   seed=seed, progress=progress, device=device, precision=precision, **hyper)[0, 0])
            for name in bench.names}


def run_setting(device="cpu", precision: str | None = None, deterministic: bool | None = None):
    """``(torch.device, precision, deterministic)`` of a run from a :class:`~clkit.device.RunDevice` or a device.

    A :class:`~clkit.device.RunDevice` (what ``clkit.device.setup`` returns in the notebook)
    gives all three; ``precision`` and ``deterministic`` given here override it. With a
    ``torch.device`` or a name, ``precision`` defaults to ``"fp32"`` and ``deterministic`` to
    this process's setting (``torch.are_deterministic_algorithms_enabled()``), which worker
    processes then take over.

    Examples
    --------
    >>> from clkit.device import setup
    >>> run_setting(setup("cpu", "bf16"))
    (device(type='cpu'), 'bf16', False)
    >>> run_setting(torch.device("meta"), deterministic=True)
    (device(type='meta'), 'fp32', True)
    >>> run_setting("cpu", precision="fp16")
    Traceback (most recent call last):
    ...
    ValueError: precision 'fp16' needs a CUDA device (loss scaling), got device cpu; use fp32 or bf16 there
    """
    if isinstance(device, RunDevice):
        precision = device.precision if precision is None else precision
        deterministic = device.deterministic if deterministic is None else deterministic
    dev = as_device(device)
    precision = check_precision("fp32" if precision is None else precision, dev)
    if deterministic is None:
        deterministic = torch.are_deterministic_algorithms_enabled()
    if not isinstance(deterministic, bool):
        raise TypeError(f"deterministic must be true or false, got {type(deterministic).__name__} {deterministic!r}")
    return dev, precision, deterministic


PAIRINGS = ("task", "stream")


def run_stream(bench: Benchmark, order, strategy: str, *, scenario: str = "class", backbone: str = "small_cnn",
               epochs: int = 5, seed: int = 0, pairing: str = "task", learner_kwargs: dict | None = None,
               strategy_epochs: dict | None = None, progress=None, memory_format: str = "contiguous", device="cpu",
               precision: str | None = None, **hyper) -> np.ndarray:
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
    strategy_epochs : dict, optional
        ``{strategy: epochs}``: strategies that train another number of epochs than ``epochs``
        (the authors' protocol, :func:`clkit.curriculum.protocol.strategy_epochs`).
    memory_format : {"contiguous", "channels_last"}
        The backbone's layout (:func:`make_backbone`): channels_last is faster on CPU and gives the
        same results to float rounding, which training amplifies (so not the same numbers).
    device : str, torch.device or clkit.device.RunDevice
        Where the stream trains (:func:`run_setting`). The model is built on the CPU under the
        seed and then moved (the same initial weights on every device); the benchmark's images
        move there once (:meth:`Benchmark.to`; :func:`run_streams` moves them once per seed for
        all its streams); batch orders come from CPU generators (the same on every device).
    precision : {"fp32", "bf16", "fp16"}, optional
        Autocast of the forward passes (default: the RunDevice's, else fp32).
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
    device, precision, _ = run_setting(device, precision, False)
    order = list(order)
    blocks = sorted(order) if pairing == "task" else order
    train, test = bench.to(device).tasks(order, scenario, blocks=blocks)
    settings = settings_for(strategy, strategy_kwargs(strategy, hyper), learner_kwargs)
    if strategy_epochs and strategy in strategy_epochs:
        epochs = check_int(f"strategy_epochs[{strategy!r}]", strategy_epochs[strategy], low=1)
    # torch's global generator is seeded for the whole stream as well, so code that draws from it
    # (e.g. layers a strategy adds while it trains) gives the same R whatever ran before in this
    # process -- the condition for results that do not depend on ``run_streams``' workers
    with torch_seeded(seed):
        return _train_eval(strategy, order, train, test, backbone=backbone, scenario=scenario, epochs=epochs,
                           seed=seed, settings=settings, pairing=pairing, progress=progress,
                           memory_format=memory_format, device=device, precision=precision)


def _init_worker(num_threads: int, deterministic: bool) -> None:
    """Initializer of :func:`run_streams`' worker processes: the parent run's torch threads and
    deterministic algorithms (spawned processes start with torch's defaults)."""
    if num_threads:
        torch.set_num_threads(num_threads)
    set_deterministic(deterministic)


@contextlib.contextmanager
def _in_process(num_threads: int, deterministic: bool):
    """The worker set-up of :func:`_init_worker` for streams run in this process, undone afterwards."""
    was = torch.are_deterministic_algorithms_enabled()
    if was != deterministic:
        set_deterministic(deterministic)
    try:
        with torch_threads(num_threads or None):
            yield
    finally:
        if was != deterministic:
            set_deterministic(was)


def _stream_job(job):
    """Worker body of :func:`run_streams` (module level so worker processes can import it)."""
    key, bench, order, strategy, kwargs = job
    return key, run_stream(bench, order, strategy, **kwargs)


def worker_pool(workers: int, *, num_threads: int = 1, deterministic: bool = False) -> ProcessPoolExecutor:
    """The processes :func:`run_streams` trains in: ``workers`` spawned processes, each set up by
    :func:`_init_worker` (torch threads, deterministic algorithms) before its first stream
    (tests/test_curriculum_device.py asks a worker for both)."""
    import multiprocessing as mp

    return ProcessPoolExecutor(max_workers=check_int("workers", workers, low=1), mp_context=mp.get_context("spawn"),
                               initializer=_init_worker, initargs=(num_threads, deterministic))


def run_streams(benches: dict, orders: dict, strategies, *, device="cpu", precision: str | None = None,
                deterministic: bool | None = None, workers: int = 1, num_threads: int = 1, progress=None,
                **kwargs) -> dict:
    """Every (seed, order, strategy) stream; optionally in worker processes.

    Parameters
    ----------
    benches : dict seed -> Benchmark
        One benchmark per seed (the seed also drives :func:`run_stream`).
    orders : dict order name -> list of dataset names
    strategies : list of str
    device : str, torch.device or clkit.device.RunDevice
        Where the streams train (:func:`run_setting`). In this process, each seed's images move
        to the device once, for all the streams of that seed, and leave it before the next seed.
    precision : {"fp32", "bf16", "fp16"}, optional
        Autocast of the forward passes (default: the RunDevice's, else fp32).
    deterministic : bool, optional
        PyTorch's deterministic algorithms, in this process and in every worker process
        (default: the RunDevice's, else this process's setting).
    workers : int
        Processes to use on the CPU; ``1`` runs in this process. On any other device the
        streams run in this process (one process drives an accelerator; CUDA does not survive
        a fork): ``workers`` is taken as 1 (:meth:`clkit.device.RunDevice.workers`). Every stream
        seeds its own model, batches and memories, so the results do not depend on ``workers``.
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
    device, precision, deterministic = run_setting(device, precision, deterministic)
    if device.type != "cpu":
        workers = 1
    kwargs = {**kwargs, "device": device, "precision": precision}
    out = {seed: {o: {} for o in orders} for seed in benches}

    def keep(key, R):
        seed, o, s = key
        out[seed][o][s] = R
        if progress is not None:
            progress.update(1)

    def jobs(seed, bench):
        return [((seed, o, s), bench, orders[o], s, {**kwargs, "seed": seed}) for o in orders for s in strategies]

    if workers == 1:
        with _in_process(num_threads, deterministic):
            for seed, bench in benches.items():
                on_device = bench.to(device)   # once per seed, for all its streams
                for job in jobs(seed, on_device):
                    keep(*_stream_job(job))
                del on_device
        return out
    with worker_pool(workers, num_threads=num_threads, deterministic=deterministic) as pool:
        futures = [pool.submit(_stream_job, job) for seed, bench in benches.items() for job in jobs(seed, bench)]
        for fut in as_completed(futures):
            keep(*fut.result())
    return out


def measure_difficulty(benches: dict, *, backbone: str = "small_cnn", epochs: int = 5, device="cpu",
                       precision: str | None = None, deterministic: bool | None = None, workers: int = 1,
                       num_threads: int = 1, progress=None, **hyper) -> dict:
    """Single-task accuracy of every dataset for every seed (the paper's Table 2, over seeds).

    The naive learner trains the backbone on each dataset alone (class scenario, one
    10-way head) and is tested on it.

    Parameters
    ----------
    benches : dict seed -> Benchmark
    backbone, epochs, device, precision, deterministic, workers, num_threads, progress
        As for :func:`run_streams`.
    **hyper
        Optimiser settings.

    Returns
    -------
    dict seed -> dataset -> accuracy
    """
    names = next(iter(benches.values())).names
    runs = run_streams(benches, {n: [n] for n in names}, ["naive"], scenario="class", backbone=backbone,
                       epochs=epochs, device=device, precision=precision, deterministic=deterministic,
                       workers=workers, num_threads=num_threads, progress=progress, **hyper)
    return {s: {n: float(runs[s][n]["naive"][0, 0]) for n in names} for s in benches}
