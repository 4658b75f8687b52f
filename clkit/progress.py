"""Progress bars that leave a readable line in a saved notebook.

``from clkit.progress import tqdm`` works like ``from tqdm.auto import tqdm``:
in a Jupyter kernel it shows tqdm's widget bar while the loop runs, elsewhere
tqdm's text bar. The difference is what stays in the notebook: when the bar
closes, its widget output is replaced by the finished bar as plain text
(``learners: 100%|##########| 5/5 [00:17<00:00]``). A notebook saved and reopened
later (or rendered as HTML) then shows that line instead of "Error displaying
widget: model not found", since widget models live only as long as the kernel.
A bar with ``leave=False`` leaves an empty line.

In a kernel an open bar is redrawn every :data:`REFRESH_S` seconds, until it closes or its
cell ends, even when the loop does not advance (a step of several minutes), so its elapsed time and rate
keep moving in JupyterLab, and ``clkit run`` (which relays the bars of a running
cell to the terminal, :mod:`clkit.run_progress`) sees it alive.
"""

from __future__ import annotations

import threading
import time
import weakref

__all__ = ["tqdm", "trange", "final_line", "REFRESH_S"]

#: seconds between two redraws of an open bar in a kernel when its loop does not advance
REFRESH_S = 1.0
_OPEN = weakref.WeakSet()
_REFRESHER = []


def _refresh_open_bars() -> None:
    while True:
        time.sleep(REFRESH_S / 2)
        now = time.time()
        for bar in list(_OPEN):
            try:
                if not bar.disable and getattr(bar, "displayed", True) and now - bar.last_print_t >= REFRESH_S:
                    bar.refresh()
            except Exception:  # noqa: BLE001 - a bar closed meanwhile; redrawing is best effort
                pass


def _forget_open_bars(*_args) -> None:
    """When a cell ends (finished, failed or interrupted), stop redrawing the bars it left open.

    A bar updated by hand stays open when its cell is interrupted; redrawn after the cell, its
    widget would keep changing the notebook after the user saved it.
    """
    _OPEN.clear()


def _keep_alive(bar) -> None:
    """Redraw ``bar`` every :data:`REFRESH_S` seconds until it closes or its cell ends (one daemon
    thread for all bars)."""
    _OPEN.add(bar)
    if not _REFRESHER:
        try:
            from IPython import get_ipython

            ip = get_ipython()
            if ip is not None:
                ip.events.register("post_run_cell", _forget_open_bars)
        except Exception:  # noqa: BLE001 - outside IPython there is no cell to end
            pass
        thread = threading.Thread(target=_refresh_open_bars, daemon=True, name="clkit-bar-refresh")
        _REFRESHER.append(thread)
        thread.start()


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with ipykernel
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def final_line(bar) -> str:
    """The bar's current state as one line of text (80 columns, ASCII bar).

    >>> from tqdm.std import tqdm as text_tqdm
    >>> import io
    >>> b = text_tqdm(range(4), desc="demo", file=io.StringIO(), mininterval=0)
    >>> for _ in b: pass
    >>> final_line(b).startswith("demo: 100%|##########| 4/4")
    True
    """
    d = dict(bar.format_dict)
    d.update(ncols=80, ascii=True)
    d["bar_format"] = (d.get("bar_format") or "{l_bar}{bar:10}{r_bar}").replace("<bar/>", "{bar:10}")
    return bar.format_meter(**d)


def _notebook_class():
    from IPython.display import display
    from tqdm.notebook import tqdm_notebook

    class tqdm(tqdm_notebook):  # noqa: N801 - the name users know
        """tqdm's notebook bar that turns into plain text when it closes."""

        def __init__(self, *args, **kwargs):
            kwargs = dict(kwargs)
            show = kwargs.pop("display", True)
            self._handle = None
            super().__init__(*args, display=False, **kwargs)
            if not self.disable and show and self.delay <= 0:
                self._handle = display(self.container, display_id=True)
                self.displayed = True
            if not self.disable:
                _keep_alive(self)

        def display(self, msg=None, pos=None, close=False, bar_style=None, check_delay=True):
            if check_delay and self.delay > 0 and not self.displayed:
                self._handle = display(self.container, display_id=True)
                self.displayed = True
            return super().display(msg=msg, pos=pos, close=close, bar_style=bar_style, check_delay=False)

        def close(self):
            _OPEN.discard(self)
            if self.disable:
                return super().close()
            super().close()
            failed = self.container.children[-2].bar_style == "danger"
            leave = (self.pos == 0) if self.leave is None else self.leave
            text = final_line(self) + ("  (stopped)" if failed else "") if (leave or failed) else ""
            handle, self._handle = self._handle, None
            if handle is not None:
                handle.update({"text/plain": text}, raw=True)
                try:
                    self.container.close()  # the view is gone: free the widget models
                except Exception:  # noqa: BLE001 - best effort
                    pass

    return tqdm


def _select():
    if _in_kernel():
        try:
            import ipywidgets  # noqa: F401

            return _notebook_class()
        except ImportError:
            pass
    from tqdm.std import tqdm as text_tqdm

    return text_tqdm


tqdm = _select()


def trange(*args, **kwargs):
    """``tqdm(range(*args), **kwargs)``."""
    return tqdm(range(*args), **kwargs)
