"""SIGTERM handled like Ctrl-C: the stop that ``timeout``, ``kill`` and a Slurm time limit send.

Python's default for SIGTERM ends the process at once: no ``finally`` block runs, so a run's
lock and temporary folders stay behind and nothing says what was kept. Inside
:func:`terminate_as_interrupt` a SIGTERM raises :class:`Terminated`, a ``KeyboardInterrupt``,
so every path that keeps work safe on Ctrl-C (publishing held, temporary folders removed, a
sweep's finished cases kept) does the same on SIGTERM, and the command's last line says
which signal stopped it (:func:`stop_word`). ``clkit`` exits 143 (128 + 15) after SIGTERM,
130 after Ctrl-C, as a shell reports them.
"""

from __future__ import annotations

import contextlib
import signal
import threading

__all__ = ["Terminated", "terminate_as_interrupt", "stop_word", "exit_status", "HELD_SIGNALS"]

#: the signals a block that must not be left half done holds until its end
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """A SIGTERM, raised where Python would have raised ``KeyboardInterrupt`` for Ctrl-C."""


def _raise_terminated(signum, frame):
    raise Terminated("SIGTERM")


@contextlib.contextmanager
def terminate_as_interrupt():
    """Within the block, SIGTERM raises :class:`Terminated` (main thread only; elsewhere a no-op).

    Examples
    --------
    >>> import os
    >>> try:
    ...     with terminate_as_interrupt():
    ...         os.kill(os.getpid(), signal.SIGTERM)
    ... except KeyboardInterrupt as exc:
    ...     print(type(exc).__name__, stop_word(exc), exit_status(exc))
    Terminated terminated (SIGTERM) 143
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stop_word(exc: BaseException | None) -> str:
    """``"terminated (SIGTERM)"`` for :class:`Terminated`, else ``"interrupted"`` (Ctrl-C).

    Examples
    --------
    >>> stop_word(KeyboardInterrupt()), stop_word(Terminated())
    ('interrupted', 'terminated (SIGTERM)')
    """
    return "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"


def exit_status(exc: BaseException | None) -> int:
    """The shell's status for the stop: 143 after SIGTERM, 130 after Ctrl-C.

    Examples
    --------
    >>> exit_status(KeyboardInterrupt()), exit_status(Terminated())
    (130, 143)
    """
    return 143 if isinstance(exc, Terminated) else 130
