"""Live progress of a headless notebook run, and the time each cell took.

``clkit run`` executes notebooks through papermill. :class:`CellProgress` is
told when each code cell starts and ends (through :func:`progress_engine`, a
papermill engine) and shows one line per notebook: cells done / total, the
section being run (the last markdown heading above the cell) and the elapsed
time. On a terminal the line is redrawn in place every second; elsewhere (a CI
log) one line is printed whenever a new section starts.

:func:`cell_timings` reads the durations papermill stores in an executed
notebook's cell metadata; ``clkit run`` writes them to ``timings.csv`` and
``--top-cells N`` prints the slowest cells.
"""

from __future__ import annotations

import re
import sys
import threading
import time

__all__ = ["CellProgress", "cell_sections", "cell_timings", "format_elapsed", "progress_engine",
           "top_cells"]


def format_elapsed(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) for a duration in seconds.

    >>> format_elapsed(5.4), format_elapsed(83), format_elapsed(3725)
    ('0:05', '1:23', '1:02:05')
    """
    s = int(seconds)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def cell_sections(cells) -> list[str]:
    """For each cell, the last markdown heading at or above it ("" before the first).

    Markup (``*``, `````, ``$``, backslashes) is dropped so the text reads well in
    a terminal.

    >>> from types import SimpleNamespace as C
    >>> cells = [C(cell_type="code", source="x = 1"),
    ...          C(cell_type="markdown", source="# Title\\n\\n## 1. The *data*"),
    ...          C(cell_type="code", source="y = 2")]
    >>> cell_sections(cells)
    ['', '1. The data', '1. The data']
    """
    out, current = [], ""
    for cell in cells:
        if cell.cell_type == "markdown":
            heads = _HEADING.findall(cell.source)
            if heads:
                current = re.sub(r"[*_`$\\]", "", heads[-1]).strip()
        out.append(current)
    return out


class CellProgress:
    """One status line for a notebook being executed.

    Parameters
    ----------
    notebook : str
        Name shown at the start of the line.
    cells : list
        The notebook's cells (to count code cells and find section headings).
    stream : file, optional
        Where to write (default ``sys.stderr``).
    live : bool, optional
        Redraw the line in place every ``interval`` seconds (default: when
        ``stream`` is a terminal); otherwise print a line per new section.
    """

    def __init__(self, notebook: str, cells, stream=None, live: bool | None = None,
                 interval: float = 1.0):
        self.notebook = notebook
        self.stream = stream if stream is not None else sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)()) if live is None else live
        self.interval = interval
        self.sections = cell_sections(cells)
        self.code = [i for i, c in enumerate(cells) if c.cell_type == "code"]
        self.total = len(self.code)
        self.done = 0
        self.section = ""
        self.started = False
        self._printed_section = None
        self._t0 = time.perf_counter()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = None

    # papermill's NotebookExecutionManager calls these through progress_engine
    def cell_start(self, index: int) -> None:
        with self._lock:
            self.started = True
            self.section = self.sections[index] if 0 <= index < len(self.sections) else ""
            if not self.live and self.section != self._printed_section:
                self._printed_section = self.section
                self._write(self.line() + "\n")

    def cell_complete(self, index: int) -> None:
        with self._lock:
            self.done = min(self.done + 1, self.total)

    def line(self) -> str:
        elapsed = format_elapsed(time.perf_counter() - self._t0)
        sec = f"  | {self.section}" if self.section else "" if self.started else "  | starting the kernel"
        text = f"[clkit] {self.notebook}  {self.done}/{self.total} cells  {elapsed}{sec}"
        return text[:119] if self.live else text

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # closed stream: progress is best effort
            pass

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                self._write("\r\033[K" + self.line())

    def __enter__(self):
        self._t0 = time.perf_counter()
        if self.live:
            self._write(self.line())
            self._thread = threading.Thread(target=self._loop, daemon=True, name="clkit-progress")
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._write("\r\033[K")  # the caller prints the notebook's final line
        return False


def progress_engine(progress: CellProgress):
    """A papermill engine class reporting cell starts and ends to ``progress``.

    Register it with ``papermill.engines.papermill_engines.register(name, engine)``.
    """
    from papermill.engines import NBClientEngine

    class _Engine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, **kwargs):
            start, complete = nb_man.cell_start, nb_man.cell_complete

            def cell_start(cell, cell_index=None, **kw):
                if cell_index is not None and cell.cell_type == "code":
                    progress.cell_start(cell_index)
                return start(cell, cell_index, **kw)

            def cell_complete(cell, cell_index=None, **kw):
                if cell_index is not None and cell.cell_type == "code":
                    progress.cell_complete(cell_index)
                return complete(cell, cell_index, **kw)

            nb_man.cell_start, nb_man.cell_complete = cell_start, cell_complete
            return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)

    return _Engine


def cell_timings(nb) -> list[dict]:
    """Durations of an executed notebook's code cells, from papermill's cell metadata.

    Returns one dict per executed code cell: ``cell`` (index among all cells),
    ``section``, ``duration_s`` and ``first_line`` of the source. papermill's
    injected-parameters cell is labelled ``(injected parameters)``.
    """
    sections = cell_sections(nb.cells)
    rows = []
    for i, cell in enumerate(nb.cells):
        meta = cell.metadata.get("papermill", {})
        if cell.cell_type != "code" or meta.get("duration") is None:
            continue
        tags = cell.metadata.get("tags", [])
        first = next((ln for ln in cell.source.splitlines() if ln.strip()), "")
        if "injected-parameters" in tags:
            first = "(injected parameters)"
        rows.append({"cell": i, "section": sections[i], "duration_s": round(float(meta["duration"]), 3),
                     "first_line": first[:80]})
    return rows


def top_cells(rows: list[dict], n: int) -> list[dict]:
    """The ``n`` slowest rows of :func:`cell_timings`, slowest first.

    >>> top_cells([{"duration_s": 1.0}, {"duration_s": 3.0}, {"duration_s": 2.0}], 2)
    [{'duration_s': 3.0}, {'duration_s': 2.0}]
    """
    return sorted(rows, key=lambda r: r["duration_s"], reverse=True)[:n]
