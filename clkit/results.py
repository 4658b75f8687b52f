"""Machine-readable results of one notebook run.

Every notebook records its key numbers through a :class:`RunRecord`; the
``clkit`` runner places the JSON next to the executed notebook and
``clkit summary`` tabulates many of them.

Where things go
---------------
``CLKIT_OUT_DIR`` (set by ``clkit run``) holds ``results.json``; otherwise
``<work>/runs/interactive/<notebook>/``. Figures go to ``CLKIT_FIGURES_DIR`` when
set (``clkit run`` sets it to the run's folder), else to ``<work>/figures/<notebook>/``.
``<work>`` is :func:`clkit._io.work_dir`: the folder the user works in, never the
installed package. The figures' folder is :func:`clkit.plot.figures_dir`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ._io import atomic_write_json, to_jsonable, work_dir
from .plot import figures_dir, save_figure

__all__ = ["RunRecord", "results_dir", "figures_dir", "work_dir"]  # figures_dir: clkit.plot; work_dir: clkit._io


def results_dir(notebook: str) -> Path:
    """Folder for ``results.json`` of ``notebook`` (see module docstring)."""
    env = os.environ.get("CLKIT_OUT_DIR")
    return Path(env) if env else work_dir() / "runs" / "interactive" / notebook


class SavedPath(type(Path())):
    """The path of a file a run saved; a notebook cell that ends with the call shows ``saved NAME``
    (IPython's plain-text display) instead of ``PosixPath('/machine/specific/.partial/...')``.

    Examples
    --------
    >>> p = SavedPath("/tmp/x/figures/stream.png")
    >>> p.name, isinstance(p, Path), p.display()
    ('stream.png', True, 'saved stream.png')
    """

    def display(self) -> str:
        return f"saved {self.name}"

    def _repr_pretty_(self, printer, cycle) -> None:   # IPython's text/plain display
        printer.text(self.display())


class RunRecord:
    """Collects a notebook's key numbers and figures, then saves them as JSON.

    Parameters
    ----------
    notebook : str
        Notebook stem, e.g. ``"03_temporal_metrics"``.
    params : dict, optional
        The run's parameters (recorded verbatim).

    Examples
    --------
    >>> import tempfile, json
    >>> rec = RunRecord("demo", params={"seed": 0})
    >>> rec.log(accuracy=0.9, data_source="synthetic")
    >>> path = rec.save(Path(tempfile.mkdtemp()) / "results.json")
    >>> json.loads(path.read_text())["results"]["accuracy"]
    0.9
    """

    def __init__(self, notebook: str, params: dict | None = None):
        self.notebook = notebook
        self.params = dict(params or {})
        self.results: dict = {}
        self.figures: list[str] = []
        self._t0 = time.perf_counter()

    def log(self, **values) -> None:
        """Record named values (numbers, strings, lists, dicts, arrays)."""
        self.results.update(to_jsonable(values))

    def figure(self, fig, name: str, **kwargs) -> Path:
        """Save ``fig`` as ``<figures_dir>/<name>.png`` and remember its path."""
        path = save_figure(fig, name, notebook=self.notebook, **kwargs)
        self.figures.append(str(path))
        return SavedPath(path)

    def as_dict(self) -> dict:
        """The record as a JSON-ready dict (without timing, which varies by run), headed by the paper the
        notebook implements (:func:`clkit.citation.paper`, where it is one of clkit's) and the run's
        :func:`clkit.manifest.manifest` (clkit's version and commit, libraries, machine, and the seeds among
        the parameters: :func:`clkit.manifest.seeds`)."""
        from .citation import paper
        from .manifest import manifest

        return {
            "notebook": self.notebook,
            "paper": paper(self.notebook),
            "manifest": manifest(params=self.params),
            "params": to_jsonable(self.params),
            "results": self.results,
            "figures": [Path(f).name for f in self.figures],
        }

    def save(self, path=None) -> Path:
        """Write ``results.json`` atomically; returns its path."""
        path = Path(path) if path is not None else results_dir(self.notebook) / "results.json"
        return SavedPath(atomic_write_json(path, self.as_dict()))
