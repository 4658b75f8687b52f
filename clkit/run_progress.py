"""Live progress of a headless notebook run, and the time each cell took.

``clkit run`` executes notebooks through papermill. :class:`CellProgress` is
told when each code cell starts and ends (through :func:`progress_engine`, a
papermill engine) and shows one line per notebook: cells done / total, the
section being run (the last markdown heading above the cell) and the elapsed
time. On a terminal the line is redrawn in place every second; elsewhere (a CI
log) one line is printed whenever a new section starts.

Inside a long cell the cell's own progress bars are relayed: :func:`bar_state`
reads a tqdm bar's state (count, rate, ETA) from the kernel's output messages as
nbclient receives them -- a text bar's ``stream`` output and the comm updates of
:mod:`clkit.progress`'s widget bar alike. On a terminal the bar's state ends the
redrawn line; in a log a line ``... | cell 13/23 | training: 45% 45/100
[00:10<00:12, 4.50it/s]`` is printed at most every ``relay_s`` seconds (10), and
when a cell shows nothing for ``heartbeat_s`` seconds (20) a line ``still in cell
13/23, 2:31`` is, so a run is never silent for more than 30 s.

:func:`cell_timings` reads the durations papermill stores in an executed
notebook's cell metadata; ``clkit run`` writes them to ``timings.csv`` and
``--top-cells N`` prints the slowest cells.
"""

from __future__ import annotations

import html
import re
import sys
import threading
import time

__all__ = ["CellProgress", "bar_state", "cell_sections", "cell_timings", "format_elapsed", "progress_engine",
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


# a tqdm meter's right part: "45/100 [00:10<00:12, 4.50it/s]" (total and ETA may be "?")
_METER = re.compile(r"\d+(?:\.\d+)?[kMGT]?[A-Za-z]*(?:/\S+)?\s*\[[^\]]*\]")
_PERCENT = re.compile(r"\d+%$")


def _clean(text: str) -> str:
    """A widget's HTML text (or a stream's) as plain text: entities decoded, figure spaces as spaces."""
    return " ".join(html.unescape(text).replace("\u2007", " ").replace("\xa0", " ").split())


def bar_state(msg: dict, widgets: dict | None = None) -> str | None:
    """A tqdm bar's current state from one kernel output message, or ``None`` when it shows none.

    ``msg`` is a Jupyter message (``msg_type``, ``content``) as nbclient receives it: a
    ``stream`` (a text bar: the last ``\\r``-separated piece that holds a meter) or a
    ``comm_msg`` updating a widget (:mod:`clkit.progress` and ``tqdm.notebook`` bars: the
    left label "desc: 45%" and the right meter "45/100 [00:10<00:12, 4.50it/s]" arrive as two
    widget updates; ``widgets``, a dict kept by the caller, holds the last label seen).

    Examples
    --------
    >>> bar_state({"msg_type": "stream", "content": {"name": "stderr",
    ...            "text": "\\rtrain:  40%|####      | 4/10 [00:04<00:06,  1.00it/s]"}})
    'train: 40% 4/10 [00:04<00:06, 1.00it/s]'
    >>> w = {}
    >>> bar_state({"msg_type": "comm_msg", "content": {"data": {"method": "update",
    ...            "state": {"value": "train:\u200750%"}}}}, w) is None
    True
    >>> bar_state({"msg_type": "comm_msg", "content": {"data": {"method": "update",
    ...            "state": {"value": "\u20075/10\u2007[00:05&lt;00:05,\u2007\u20071.00it/s]"}}}}, w)
    'train: 50% 5/10 [00:05<00:05, 1.00it/s]'
    >>> bar_state({"msg_type": "stream", "content": {"name": "stdout", "text": "hello\\n"}}) is None
    True
    """
    kind, content = msg.get("msg_type"), msg.get("content") or {}
    if kind == "stream":
        for piece in reversed(re.split(r"[\r\n]", content.get("text", ""))):
            piece = _clean(piece)
            if _METER.search(piece):
                left, _, right = piece.partition("|")
                if right and "|" in right:   # "desc: 40%|####   | 4/10 [...]": drop the drawn bar
                    piece = f"{left.strip()} {right.split('|', 1)[1].strip()}"
                return piece
        return None
    if kind == "comm_msg":
        state = ((content.get("data") or {}).get("state") or {})
        value = state.get("value")
        if not isinstance(value, str):
            return None
        text = _clean(value)
        widgets = {} if widgets is None else widgets
        if _PERCENT.search(text):
            widgets["label"] = text
            return None
        if _METER.match(text):
            return f"{widgets.get('label', '')} {text}".strip()
    return None


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
    relay_s : float, optional
        In a log (not ``live``), the least time between two relayed bar lines (default 10 s).
    heartbeat_s : float, optional
        In a log, a line "still in cell N/T, m:ss" when nothing was printed for this long
        (default 20 s, so no run is silent for more than 30 s).
    """

    def __init__(self, notebook: str, cells, stream=None, live: bool | None = None,
                 interval: float = 1.0, relay_s: float = 10.0, heartbeat_s: float = 20.0):
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
        self.relay_s, self.heartbeat_s = float(relay_s), float(heartbeat_s)
        self.bar = ""               # the running cell's last bar state (bar_state)
        self._widgets = {}
        self._bar_new = False
        self._t0 = time.perf_counter()
        self._cell_t0 = self._t0
        self._last_write = self._t0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = None

    # papermill's NotebookExecutionManager calls these through progress_engine
    def cell_start(self, index: int) -> None:
        with self._lock:
            self.started = True
            self.section = self.sections[index] if 0 <= index < len(self.sections) else ""
            self.bar, self._bar_new, self._widgets = "", False, {}
            self._cell_t0 = time.perf_counter()
            if not self.live and self.section != self._printed_section:
                self._printed_section = self.section
                self._write(self.line() + "\n")

    def cell_complete(self, index: int) -> None:
        with self._lock:
            self.done = min(self.done + 1, self.total)

    def message(self, msg: dict) -> None:
        """One kernel output message of the running cell (nbclient's ``process_message``): keep its bar
        state (:func:`bar_state`); in a log, print it when ``relay_s`` passed since the last line."""
        state = bar_state(msg, self._widgets)
        if not state:
            return
        with self._lock:
            self.bar, self._bar_new = state, True
            if not self.live and time.perf_counter() - self._last_write >= self.relay_s:
                self._relay()

    def _relay(self) -> None:
        self._bar_new = False
        self._write(f"{self.line()}  | {self.bar}\n")

    def _heartbeat(self) -> None:
        """In a log: the bar's news (``relay_s`` after the last line) or, after ``heartbeat_s`` of silence,
        "still in cell N/T, m:ss"."""
        quiet = time.perf_counter() - self._last_write
        if not self.started:   # a kernel slow to start (a loaded machine) is said too
            if quiet >= self.heartbeat_s:
                self._write(f"[clkit] {self.notebook}  starting the kernel, "
                            f"{format_elapsed(time.perf_counter() - self._t0)}\n")
            return
        if self.done >= self.total:
            return
        if self._bar_new and quiet >= self.relay_s:
            self._relay()
        elif quiet >= self.heartbeat_s:
            cell = format_elapsed(time.perf_counter() - self._cell_t0)
            self._write(f"[clkit] {self.notebook}  still in cell {self.done + 1}/{self.total}, {cell}"
                        + (f"  | {self.bar}" if self.bar else "") + "\n")

    def line(self) -> str:
        elapsed = format_elapsed(time.perf_counter() - self._t0)
        sec = f"  | {self.section}" if self.section else "" if self.started else "  | starting the kernel"
        text = f"[clkit] {self.notebook}  {self.done}/{self.total} cells  {elapsed}{sec}"
        if self.live and self.bar:
            text += f"  | {self.bar}"
        return text[:119] if self.live else text

    def _write(self, text: str) -> None:
        self._last_write = time.perf_counter()
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # closed stream: progress is best effort
            pass

    def _loop(self) -> None:
        tick = self.interval if self.live else min(1.0, self.relay_s, self.heartbeat_s) / 2
        while not self._stop.wait(tick):
            with self._lock:
                if self.live:
                    self._write("\r\033[K" + self.line())
                else:
                    self._heartbeat()

    def __enter__(self):
        self._t0 = self._last_write = time.perf_counter()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="clkit-progress")
        if self.live:
            self._write(self.line())
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            if self.live:
                self._write("\r\033[K")  # the caller prints the notebook's final line
        return False


_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning))(?::\s*(.*))?$")


def failure_output(cell, exc) -> dict:
    """The ``error`` output a failed cell should hold, from nbclient's ``CellExecutionError`` ``exc``.

    A kernel out of memory (an address-space limit, ``ulimit -v``) may fail to format its traceback
    and then sends no error output; its reply still names the error, or the cell's last output
    (IPython's fallback traceback on stderr) does: ``MemoryError``. Without either, the reason says
    what the cell printed last.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> cell = NS(outputs=[{"output_type": "stream", "name": "stderr",
    ...                     "text": "Traceback (most recent call last):\\n  ...\\nMemoryError\\n"}])
    >>> out = failure_output(cell, NS(ename="", evalue="", traceback=""))
    >>> out["ename"], out["evalue"][:40]
    ('MemoryError', 'the kernel could not report the error in')
    """
    ename = (getattr(exc, "ename", "") or "").strip()
    evalue = (getattr(exc, "evalue", "") or "").strip()
    tb = getattr(exc, "traceback", "") or ""
    last = ""
    for out in reversed(list(getattr(cell, "outputs", []) or [])):
        text = out.get("text") if out.get("output_type") == "stream" else None
        lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
        if lines:
            last = lines[-1]
            break
    if ename in ("", "<Error>", "UnknownError", "CellExecutionError"):
        hit = _EXC_LINE.match(last)
        if hit:
            ename, evalue = hit.group(1), hit.group(2) or evalue
        else:
            ename = ename or "CellExecutionError"
    if not evalue:
        evalue = ("the kernel could not report the error in full (out of memory? an address-space limit, "
                  "ulimit -v, leaves it none to format its traceback)"
                  + (f"; the cell's last output: {last[:200]}" if last and not _EXC_LINE.match(last) else ""))
    return {"output_type": "error", "ename": ename, "evalue": evalue,
            "traceback": tb.splitlines() if isinstance(tb, str) else list(tb)}


def progress_engine(progress: CellProgress | None):
    """A papermill engine class reporting cell starts and ends, and the cells' output messages
    (:meth:`CellProgress.message`), to ``progress`` (``None``: none), and giving a cell that failed
    without an error output one (:func:`failure_output`), so the failed notebook and the run's
    message name the cause.

    Register it with ``papermill.engines.papermill_engines.register(name, engine)``.
    """
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine

    class _Client(PapermillNotebookClient):
        def process_message(self, msg, *args, **kwargs):
            try:
                if progress is not None:
                    progress.message(msg)
            except Exception:  # noqa: BLE001 - progress is best effort, never a run's failure
                pass
            return super().process_message(msg, *args, **kwargs)

    class _Patched:
        """``papermill.engines.PapermillNotebookClient`` replaced by :class:`_Client` for one call."""

        def __enter__(self):
            import papermill.engines as engines

            self.saved, engines.PapermillNotebookClient = engines.PapermillNotebookClient, _Client

        def __exit__(self, *exc):
            import papermill.engines as engines

            engines.PapermillNotebookClient = self.saved

    class _Engine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, **kwargs):
            start, complete, failed = nb_man.cell_start, nb_man.cell_complete, nb_man.cell_exception

            def cell_start(cell, cell_index=None, **kw):
                if progress is not None and cell_index is not None and cell.cell_type == "code":
                    progress.cell_start(cell_index)
                return start(cell, cell_index, **kw)

            def cell_complete(cell, cell_index=None, **kw):
                if progress is not None and cell_index is not None and cell.cell_type == "code":
                    progress.cell_complete(cell_index)
                return complete(cell, cell_index, **kw)

            def cell_exception(cell, cell_index=None, **kw):
                try:
                    if not any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
                        import nbformat

                        cell.outputs.append(nbformat.from_dict(failure_output(cell, kw.get("exception"))))
                except Exception:  # noqa: BLE001 - naming the cause is best effort; the run's failure stands
                    pass
                return failed(cell, cell_index, **kw)

            nb_man.cell_start, nb_man.cell_complete, nb_man.cell_exception = cell_start, cell_complete, cell_exception
            with _Patched():
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
