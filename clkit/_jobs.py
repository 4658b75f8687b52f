"""Independent jobs in forked worker processes, results in order (notebooks 01 and 05).

A job is a zero-argument callable that seeds its own generators, so its result
does not depend on which process runs it or how many run at once. The children
are forked: they inherit the jobs, their data and the functions they call, and
only the results are pickled back.
"""

from __future__ import annotations

import warnings

from ._validate import check_int
from .device import fork_safe

__all__ = ["run_jobs"]

_JOBS: list = []


def _run_job(i):
    return _JOBS[i]()


def run_jobs(jobs, workers: int = 1, progress=None) -> list:
    """Run zero-argument callables (e.g. one :func:`clkit.taskification.forecasting.continual_forecasting` each); results in order.

    ``workers > 1`` runs them in that many forked processes (Linux / macOS ``fork``):
    the children inherit the jobs, their data and the functions they call, so nothing
    is pickled but the results. Each job is deterministic on its own (it seeds its
    own generator), so the results do not depend on ``workers``. ``progress`` is
    called with no arguments after each finished job.

    Where a fork would break autograd -- a machine with a GPU, even for a CPU run
    (:func:`clkit.device.fork_safe`) -- the jobs run one after another in this process
    instead, with a ``RuntimeWarning`` saying so: the same results, more time.

    Examples
    --------
    >>> run_jobs([lambda: 1, lambda: 2], workers=1)
    [1, 2]
    """
    jobs = list(jobs)
    workers = check_int("workers", workers, low=1)
    if workers > 1 and len(jobs) > 1 and not fork_safe():
        warnings.warn(f"workers={workers}: running the {len(jobs)} jobs one after another, since this machine has "
                      "an accelerator and a forked process could not train (PyTorch's autograd threads do not "
                      "survive a fork); the results are the same", RuntimeWarning, stacklevel=2)
        workers = 1
    if workers == 1 or len(jobs) < 2:
        out = []
        for job in jobs:
            out.append(job())
            if progress is not None:
                progress()
        return out
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    global _JOBS
    _JOBS = jobs
    try:
        results = [None] * len(jobs)
        with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=mp.get_context("fork")) as pool:
            futures = {pool.submit(_run_job, i): i for i in range(len(jobs))}
            for f in as_completed(futures):
                results[futures[f]] = f.result()
                if progress is not None:
                    progress()
        return results
    finally:
        _JOBS = []
