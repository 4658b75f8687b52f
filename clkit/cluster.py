"""A Dask cluster for many notebook runs: a local cluster of processes or an existing scheduler.

Sweeps (:mod:`clkit.sweep`) and course grading (:mod:`clkit.course`) run one task
per case or submission on the client :func:`start_client` returns and close it
with :func:`close_client`. A local cluster has one thread per worker process, so a
task gets one core; with ``scheduler="tcp://host:port"`` the tasks go to an
existing cluster (``dask scheduler`` / ``dask worker``, dask-jobqueue,
Kubernetes), whose workers must run the same clkit environment and see the
folders on a shared file system.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading

__all__ = ["CONNECT_TIMEOUT_S", "default_workers", "check_scheduler", "start_client", "close_client", "dask_setup"]

CONNECT_TIMEOUT_S = 5


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


def start_client(workers: int, scheduler: str | None = None):
    """A Dask client and, for a local cluster, the cluster: ``(client, cluster or None)``.

    Close both with :func:`close_client`.

    Parameters
    ----------
    workers : int
        Worker processes of a local cluster (one thread each); ignored with ``scheduler``.
    scheduler : str, optional
        Address of an existing Dask scheduler (``tcp://host:port``).

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
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.CRITICAL)
        client = Client(cluster)
    return client, cluster


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
