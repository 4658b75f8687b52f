"""A Dask cluster for many notebook runs: a local cluster of processes or an existing scheduler.

Sweeps (:mod:`clkit.sweep`) and course grading (:mod:`clkit.course`) run one task
per case or submission on the client :func:`start_client` returns and close it
with :func:`close_client`. A local cluster has one thread per worker process, so a
task gets one core; with ``scheduler="tcp://host:port"`` the tasks go to an
existing cluster (``dask scheduler`` / ``dask worker``, dask-jobqueue,
Kubernetes), whose workers must run the same clkit environment and see the
folders on a shared file system. :func:`start_slurm` starts such a cluster on Slurm
(dask-jobqueue's ``SLURMCluster``, the ``slurm`` extra), one worker per batch job.

GPUs are Dask worker resources: a case whose ``device`` parameter is ``"cuda"`` or
``"cuda:N"`` (:func:`needs_gpu`; ``"auto"`` does not require one) is submitted with
``resources={"GPU": 1}`` (:func:`case_resources`), so it only starts on a worker that
declares a GPU: a local cluster's first workers, one per CUDA device, each seeing its
own device as ``cuda`` (:func:`start_client`); a Slurm job started with ``gpus=N``
(``--resources GPU=N``, :func:`slurm_kwargs`); or ``dask worker --resources GPU=1`` on
an existing cluster. :func:`check_gpu_workers` refuses such cases up front on a
cluster without a GPU worker, where they would otherwise wait forever.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import threading

__all__ = ["CONNECT_TIMEOUT_S", "CLUSTERS", "default_workers", "check_scheduler", "start_client", "close_client",
           "dask_setup", "slurm_kwargs", "start_slurm", "GPU", "needs_gpu", "case_resources", "local_gpus",
           "check_gpu_workers"]

CONNECT_TIMEOUT_S = 5
#: batch systems ``clkit sweep --cluster`` starts Dask workers on
CLUSTERS = ("slurm",)
#: the Dask worker resource a GPU case asks for and a GPU worker declares
GPU = "GPU"
_CUDA = re.compile(r"cuda(:\d+)?")


def needs_gpu(params) -> bool:
    """Whether a case's resolved parameters ask for a GPU: ``device`` is ``"cuda"`` or ``"cuda:N"``.

    ``"auto"`` takes a GPU when the worker has one but runs on the CPU otherwise, so it
    requires none.

    Examples
    --------
    >>> needs_gpu({"device": "cuda:1"}), needs_gpu({"device": "auto"}), needs_gpu({"seed": 0})
    (True, False, False)
    """
    device = params.get("device") if isinstance(params, dict) else None
    return isinstance(device, str) and _CUDA.fullmatch(device.strip()) is not None


def case_resources(params) -> dict:
    """The Dask resources a case's task asks for: ``{"GPU": 1}`` when :func:`needs_gpu`, else ``{}``.

    Examples
    --------
    >>> case_resources({"device": "cuda"}), case_resources({"device": "cpu"})
    ({'GPU': 1}, {})
    """
    return {GPU: 1} if needs_gpu(params) else {}


def local_gpus() -> int:
    """CUDA devices this process sees (0 without CUDA or without torch)."""
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - no torch, or a driver that cannot be queried: no GPU worker
        return 0


def check_gpu_workers(cases, workers, where: str) -> None:
    """Refuse cases that need a GPU (:func:`needs_gpu`) when no worker declares the ``GPU`` resource.

    Dask would keep such a task waiting for a worker that never comes; this says so before
    anything is submitted.

    Parameters
    ----------
    cases : list of dict
        The sweep's cases (``index``, ``name``, ``params``).
    workers : iterable of dict
        Each worker's resources, e.g. ``{"GPU": 1}`` (``client.scheduler_info()``'s ``resources``).
    where : str
        The cluster, as the message names it.

    Raises
    ------
    ValueError
        Some case needs a GPU and no worker has one; the message names the case, its
        ``device`` and the cluster.

    Examples
    --------
    >>> check_gpu_workers([{"index": 0, "name": "seed=0", "params": {"device": "cuda"}}], [{"GPU": 1}], "x")
    >>> check_gpu_workers([{"index": 0, "name": "seed=0", "params": {"device": "cuda"}}], [{}], "a local cluster")
    Traceback (most recent call last):
    ...
    ValueError: device: case 0 (seed=0) has device='cuda' (1 of 1 case(s) need a GPU), but a local cluster has no GPU worker (no worker declares the Dask resource GPU); ask for GPU workers (--cluster slurm --gpus N, 'dask worker --resources GPU=1' on an existing cluster, a machine with CUDA for a local one) or set device to 'auto' or 'cpu'
    """
    cases = list(cases)
    gpu_cases = [c for c in cases if needs_gpu(c.get("params"))]
    if not gpu_cases or any(float((w or {}).get(GPU, 0)) >= 1 for w in workers):
        return
    c = gpu_cases[0]
    raise ValueError(f"device: case {c.get('index')} ({c.get('name')}) has device={c['params']['device']!r} "
                     f"({len(gpu_cases)} of {len(cases)} case(s) need a GPU), but {where} has no GPU worker "
                     f"(no worker declares the Dask resource {GPU}); ask for GPU workers (--cluster slurm --gpus N, "
                     f"'dask worker --resources {GPU}=1' on an existing cluster, a machine with CUDA for a local "
                     "one) or set device to 'auto' or 'cpu'")


def default_workers() -> int:
    """Cores this process may use (the default number of local workers)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def check_scheduler(scheduler) -> str | None:
    """``scheduler`` if it is ``None`` or an address string; ``TypeError`` otherwise.

    Examples
    --------
    >>> check_scheduler("tcp://127.0.0.1:8786")
    'tcp://127.0.0.1:8786'
    >>> check_scheduler(8786)
    Traceback (most recent call last):
    ...
    TypeError: scheduler must be an address string like 'tcp://host:8786', got 8786
    """
    if scheduler is not None and not isinstance(scheduler, str):
        raise TypeError(f"scheduler must be an address string like 'tcp://host:8786', got {scheduler!r}")
    return scheduler


def start_client(workers: int, scheduler: str | None = None, gpus: int | None = None):
    """A Dask client and, for a local cluster, the cluster: ``(client, cluster or None)``.

    Close both with :func:`close_client`.

    Parameters
    ----------
    workers : int
        Worker processes of a local cluster (one thread each); ignored with ``scheduler``.
    scheduler : str, optional
        Address of an existing Dask scheduler (``tcp://host:port``).
    gpus : int, optional
        CUDA devices of a local cluster (default: :func:`local_gpus`). The first
        ``min(gpus, workers)`` workers each declare the resource ``GPU=1`` and see one
        device (``CUDA_VISIBLE_DEVICES``), as ``cuda``; the others are unchanged.

    Raises
    ------
    ConnectionError
        ``scheduler`` cannot be reached within :data:`CONNECT_TIMEOUT_S` seconds
        (the message names the address and how to start one).

    Notes
    -----
    A Ctrl-C typed into the terminal reaches the whole process group. The client
    handles it (stops the tasks, keeps what finished); the local workers ignore it
    (:func:`dask_setup`, loaded as the workers' preload, and SIGINT ignored while
    the local cluster starts, which the worker processes inherit), so that none of
    them ends with a traceback. A Ctrl-C typed in the seconds the local cluster
    takes to start is therefore ignored.
    """
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            return Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s"), None
        except Exception as exc:  # noqa: BLE001 - refused, timed out, or not a Dask scheduler at all
            raise ConnectionError(f"scheduler: could not connect to a Dask scheduler at {scheduler!r} (timeout "
                                  f"{CONNECT_TIMEOUT_S} s): {type(exc).__name__}: {exc}; start one with "
                                  "'dask scheduler' or leave --scheduler out for a local cluster") from None
    # ":0": the scheduler's HTTP server takes a free port instead of warning when 8787 is taken.
    # CRITICAL: a worker's heartbeat racing the shutdown logs an ERROR traceback after a run
    # that went well; a task that really fails is reported through its future instead.
    # The statistical profiler samples every worker thread 100 times a second; a task is one long
    # papermill call whose profile nobody reads, and on a small machine that time is taken from
    # the kernels running the notebooks.
    with _interrupt_ignored(), dask.config.set({"distributed.worker.profile.enabled": False,
                                                "distributed.worker.preload": [__name__]}):
        n_gpu = min(local_gpus() if gpus is None else gpus, workers)
        cluster = LocalCluster(n_workers=workers - n_gpu, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.CRITICAL)
        if n_gpu:
            _add_gpu_workers(cluster, n_gpu)
        client = Client(cluster)
        if n_gpu:
            client.wait_for_workers(workers, timeout=120)
    return client, cluster


def _add_gpu_workers(cluster, n: int) -> None:
    """Start ``n`` more workers on a local cluster, worker ``i`` declaring ``GPU=1`` and seeing CUDA device ``i``."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [d.strip() for d in visible.split(",")] if visible else [str(i) for i in range(n)]
    for i in range(min(n, len(ids))):
        [(name, spec)] = cluster.new_worker_spec().items()
        options = spec["options"]
        cluster.worker_spec[name] = {**spec, "options": {
            **options, "resources": {**(options.get("resources") or {}), GPU: 1},
            "env": {**(options.get("env") or {}), "CUDA_VISIBLE_DEVICES": ids[i]}}}
    cluster.scale(len(cluster.worker_spec))


@contextlib.contextmanager
def _interrupt_ignored():
    """Ignore SIGINT in this process for the block (main thread only; elsewhere nothing to do).

    Worker processes spawned meanwhile inherit the ignored signal through ``exec``,
    so that none takes a Ctrl-C before its :func:`dask_setup` runs.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def dask_setup(worker) -> None:
    """Dask's preload hook, run in each local worker process (see :func:`start_client`): ignore Ctrl-C.

    The client stops the workers after a Ctrl-C; a worker that also took it would
    end with a ``KeyboardInterrupt`` traceback of its event loop.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def close_client(client, cluster=None, topics=()) -> None:
    """Unsubscribe ``topics`` (best effort), close the client, then the local cluster if any."""
    for topic in topics:
        try:
            client.unsubscribe_topic(topic)
        except Exception:  # noqa: BLE001 - best effort while shutting down
            pass
    client.close()
    if cluster is not None:
        cluster.close()


_MEMORY = re.compile(r"^\d+(\.\d+)?\s*([KMGT]i?B|[KMGT]|B)$", re.IGNORECASE)
#: Slurm's --time forms: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS
_WALLTIME = re.compile(r"^(\d+|\d+:\d{2}|\d+:\d{2}:\d{2}|\d+-\d{1,2}(:\d{2}){0,2})$")


def _count(name: str, value, least: int) -> int:
    try:
        n = int(str(value))
    except ValueError:
        n = None
    if n is None or n < least:
        raise ValueError(f"{name} must be a whole number >= {least}, got {value!r}")
    return n


def slurm_kwargs(cores=1, memory="4GB", walltime="01:00:00", gpus=0, queue=None, account=None) -> dict:
    """dask-jobqueue ``SLURMCluster`` arguments for workers that run one case at a time each.

    Each batch job is one Dask worker with one thread (one case at a time, as a local
    cluster's workers) given ``cores`` CPUs (``--cpus-per-task``), ``memory``, ``walltime``
    and ``gpus`` GPUs (``--gres=gpu:N``) on partition ``queue``; a job with GPUs starts its
    worker with ``--resources GPU=N``, so that a case that needs a GPU (:func:`case_resources`)
    lands on it.

    Parameters
    ----------
    cores : int
        CPUs per job, >= 1.
    memory : str
        Memory per job: a number and a unit, e.g. ``"16GB"`` or ``"512MiB"``.
    walltime : str
        Slurm's time limit per job: ``MM``, ``MM:SS``, ``HH:MM:SS`` or ``D-HH[:MM[:SS]]``.
    gpus : int
        GPUs per job, >= 0.
    queue, account : str, optional
        Slurm partition (``-p``) and account (``-A``).

    Raises
    ------
    ValueError
        A value Slurm would not take; the message names the option, the value and what is allowed.

    Examples
    --------
    >>> kw = slurm_kwargs(cores=8, memory="16GB", walltime="02:00:00", gpus=1, queue="gpu")
    >>> kw["job_cpu"], kw["cores"], kw["processes"], kw["memory"], kw["walltime"], kw["queue"]
    (8, 1, 1, '16GB', '02:00:00', 'gpu')
    >>> kw["job_extra_directives"], kw["worker_extra_args"]
    (['--gres=gpu:1'], ['--resources', 'GPU=1'])
    >>> slurm_kwargs(walltime="2h")
    Traceback (most recent call last):
    ...
    ValueError: walltime must be Slurm's MM, MM:SS, HH:MM:SS or D-HH[:MM[:SS]], got '2h'
    """
    cores = _count("cores", cores, 1)
    gpus = _count("gpus", gpus, 0)
    if not isinstance(memory, str) or not _MEMORY.match(memory.strip()):
        raise ValueError(f"memory must be a number and a unit such as '16GB' or '512MiB', got {memory!r}")
    if not isinstance(walltime, str) or not _WALLTIME.match(walltime.strip()):
        raise ValueError(f"walltime must be Slurm's MM, MM:SS, HH:MM:SS or D-HH[:MM[:SS]], got {walltime!r}")
    for name, value in (("queue", queue), ("account", account)):
        if value is not None and (not isinstance(value, str) or not re.fullmatch(r"[\w.,-]+", value)):
            raise ValueError(f"{name} must be a Slurm {'partition' if name == 'queue' else 'account'} name "
                             f"(letters, digits, _ . , -), got {value!r}")
    kw = {"cores": 1, "processes": 1, "job_cpu": cores, "memory": memory.strip(), "walltime": walltime.strip(),
          "job_extra_directives": [f"--gres=gpu:{gpus}"] if gpus else [],
          "worker_extra_args": ["--resources", f"{GPU}={gpus}"] if gpus else []}
    if queue is not None:
        kw["queue"] = queue
    if account is not None:
        kw["account"] = account
    return kw


def start_slurm(jobs: int, **options):
    """A dask-jobqueue ``SLURMCluster`` asking Slurm for ``jobs`` batch jobs (:func:`slurm_kwargs` ``options``).

    Pass its ``scheduler_address`` to :func:`start_client` (``scheduler=``) and ``close()`` it at the end,
    which cancels the jobs. Needs the ``slurm`` extra (``pip install 'clkit[slurm]'``) and ``sbatch``.

    Raises
    ------
    ValueError
        ``jobs`` or an option is out of range (see :func:`slurm_kwargs`).
    ImportError
        dask-jobqueue is not installed; the message says how to install it.

    Examples
    --------
    >>> start_slurm(0)
    Traceback (most recent call last):
    ...
    ValueError: jobs must be a whole number >= 1, got 0
    """
    jobs = _count("jobs", jobs, 1)
    kw = slurm_kwargs(**options)
    import shutil

    if shutil.which("sbatch") is None:   # dask-jobqueue would print a traceback, then wait for workers forever
        raise ValueError("--cluster slurm: sbatch is not on PATH, so no Slurm job can be submitted from here; run "
                         "the sweep on a Slurm login node, or use a job array (clkit sweep ... --print-cases, then "
                         "clkit run-case OUT/NOTEBOOK INDEX in each task), or the local cluster (no --cluster)")
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError as exc:
        raise ImportError(f"--cluster slurm needs dask-jobqueue: pip install 'clkit[slurm]' ({exc})") from None
    cluster = SLURMCluster(**kw, scheduler_options={"dashboard_address": ":0"})
    cluster.scale(jobs=jobs)
    return cluster
