"""Clocks shared by the benchmarks: CPU time first (it does not grow when the machine is busy), wall
time beside it. CPU time covers this process and its children that have finished (``os.times``)."""

from __future__ import annotations

import os
import time


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished child processes."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Timer:
    """``with Timer() as t: ...`` then ``t.cpu`` and ``t.wall`` (seconds); ``str(t)`` prints both."""

    def __enter__(self):
        self._wall, self._cpu = time.perf_counter(), cpu_seconds()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self._wall
        self.cpu = cpu_seconds() - self._cpu
        return False

    def __str__(self):
        return f"CPU {self.cpu:.3f} s (wall {self.wall:.3f} s)"
