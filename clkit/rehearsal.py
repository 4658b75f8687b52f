"""Paper rehearsal: a notebook's ``paper`` parameter set run end to end on fabricated files.

``rehearse: true`` runs the same notebook code a real paper run does -- the paper's data
loaders, models, learners, protocol, metrics, figures and verdicts -- on data that
:mod:`clkit.data.fixtures` writes in each real dataset's own on-disk format, so it finishes
in minutes on two CPU cores, offline, and CI can run every ``paper`` set.

**The one rule.** A rehearsal keeps the parameter set's structure and cuts its sizes: every
parameter that is a size, a count or a number of epochs is capped at the value its paper
package lists (``min(given, cap)``; a list is cut to its first ``cap`` entries), seeds at the
verdict rule's minimum (:data:`MIN_SEEDS`, so every verdict is still computed); every other
parameter -- datasets, loaders, architectures, learners, protocol, metrics and the verdict
rule -- is left as it is. Downloads are switched off (the fabricated files
are in the cache the loaders read first). The run prints the table of what was cut
(:meth:`Rehearsal.table`) and records it in ``results.json``; its numbers describe
fabricated data and say nothing about the paper's.

A paper package declares its caps and fixtures in a :class:`Plan`; the notebook calls
``plan.prepare(values, root)`` in its validation cell and takes the returned values.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

__all__ = ["Cap", "Plan", "Rehearsal", "RULE", "MIN_SEEDS", "cut_value", "default_root"]

#: the verdict rule's minimum of paired seeds (clkit.stats): a rehearsal keeps at least this many
MIN_SEEDS = 4

RULE = ("the paper set's structure is kept (datasets and their loaders, architectures, learners, protocol, "
        "metrics and verdict rule) and every size, count and number of epochs is capped at a rehearsal value: "
        "min(given, cap), a list cut to its first cap entries; seeds are capped at the verdict rule's minimum "
        f"of {MIN_SEEDS}, so every verdict is still computed")


@dataclass(frozen=True)
class Cap:
    """One capped parameter: its name, the cap and what it counts (for the table)."""

    name: str
    cap: int | float
    what: str = ""


def cut_value(value, cap):
    """``min(value, cap)`` for a number, the first ``cap`` entries of a list, anything else as it is.

    Examples
    --------
    >>> cut_value(500, 20), cut_value(0.5, 1), cut_value([3, 10, 20], 2), cut_value("cifar10", 2)
    (20, 0.5, [3, 10], 'cifar10')
    >>> cut_value(True, 1)
    True
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return type(value)(min(value, cap))
    if isinstance(value, list):
        return value[: int(cap)]
    return value


_CACHE_BEFORE = "CLKIT_DATA_BEFORE_REHEARSAL"


def default_root(notebook: str) -> Path:
    """Where a rehearsal writes its fabricated files: ``<clkit data cache>/rehearsal/<notebook>``.

    The user's data cache (:func:`clkit.data._cache.data_root`, as it was before any rehearsal
    in this process pointed ``CLKIT_DATA`` elsewhere), so the paths a run records stay valid
    after the run (a run's own folder is renamed when it ends); the files are the same for
    the same seed and sizes, so a second rehearsal writes them again in place.

    Examples
    --------
    >>> default_root("04_curriculum").parts[-2:]
    ('rehearsal', '04_curriculum')
    """
    from .data._cache import data_root

    before = os.environ.get(_CACHE_BEFORE)   # set by this process's first rehearsal
    if before:
        return Path(before) / "rehearsal" / notebook
    if before is None:
        return data_root() / "rehearsal" / notebook
    current = os.environ.pop("CLKIT_DATA", None)   # there was no CLKIT_DATA before: the default cache
    try:
        return data_root() / "rehearsal" / notebook
    finally:
        if current is not None:
            os.environ["CLKIT_DATA"] = current


@dataclass
class Rehearsal:
    """What a rehearsal changed and wrote.

    Attributes
    ----------
    notebook : str
    changes : dict
        ``{parameter: rehearsal value}`` for every parameter the rule changed (the notebook
        takes these values).
    rows : list of dict
        One row per capped or switched parameter: name, given, used, what.
    root : Path
        The data cache the fabricated files were written to (``CLKIT_DATA`` for this run).
    files : dict
        ``{dataset: path written}``.
    """

    notebook: str
    changes: dict
    rows: list
    root: Path
    files: dict = field(default_factory=dict)

    def table(self):
        """The cut parameters as a pandas DataFrame (name, given, used, what)."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=["parameter", "given", "used", "what"]).set_index("parameter")

    def note(self) -> str:
        """The Markdown sentence every rehearsal run shows first and puts before its closing text."""
        data = ", ".join(sorted(self.files)) or "none"
        return (f"**Rehearsal run** of a paper parameter set on fabricated files in the real datasets' "
                f"own formats ({data}; written to `{self.root}`), sizes cut by one rule: {RULE}. "
                "It checks that the paper-scale code paths run; its numbers describe fabricated data, "
                "not the paper's.")

    def record(self) -> dict:
        """For ``results.json``."""
        return {"rule": RULE, "cut": self.rows, "data_root": str(self.root),
                "files": {k: str(v) for k, v in self.files.items()}}


@dataclass(frozen=True)
class Plan:
    """A paper package's rehearsal: its caps, switches and fabricated datasets.

    Parameters
    ----------
    notebook : str
    caps : tuple of Cap
        Sizes, counts and epochs capped by the rule.
    switches : dict
        ``{parameter: value}`` set whatever was given (only ``download``-like switches that
        would reach the network).
    fixtures : callable
        ``fixtures(values) -> {dataset: dict(sizes)}``: the datasets the (cut) parameters
        load, each with the sizes to fabricate it at.
    after : callable, optional
        ``after(values, files) -> dict``: further parameter values that depend on the written
        files (e.g. the path of a fabricated checkpoint); its optional key ``"_what"``
        (``{parameter: text}``) says what a value is in the table (default: a fabricated file's path).
    """

    notebook: str
    caps: tuple
    switches: dict = field(default_factory=dict)
    fixtures: Callable = lambda values: {}
    after: Callable | None = None

    def cut(self, values: dict) -> tuple[dict, list]:
        """The rehearsal values of ``values`` under the rule, and the table rows of what changed.

        Examples
        --------
        >>> plan = Plan("nb", (Cap("epochs", 1, "epochs per task"), Cap("seeds", 4)), {"download": False})
        >>> changes, rows = plan.cut({"epochs": 50, "seeds": 3, "download": True, "lr": 0.1})
        >>> changes, [r["parameter"] for r in rows]
        ({'epochs': 1, 'download': False}, ['epochs', 'download'])
        """
        changes, rows = {}, []
        for cap in self.caps:
            if cap.name not in values:
                continue
            used = cut_value(values[cap.name], cap.cap)
            if used != values[cap.name]:
                changes[cap.name] = used
                rows.append({"parameter": cap.name, "given": values[cap.name], "used": used, "what": cap.what})
        for name, used in self.switches.items():
            if name in values and values[name] != used:
                changes[name] = used
                rows.append({"parameter": name, "given": values[name], "used": used,
                             "what": "the fabricated files are local"})
        return changes, rows

    def prepare(self, values: dict, root=None, *, seed: int = 0) -> Rehearsal:
        """Cut ``values``, write the fabricated datasets under ``root`` and point the loaders there.

        ``root`` defaults to :func:`default_root`; ``CLKIT_DATA`` is set to it in this process
        (the loaders read their cache from it), so the kernel that runs the notebook reads the
        fabricated files; the cache it replaced is remembered for :func:`default_root`.
        """
        from .data.fixtures import write

        changes, rows = self.cut(values)
        used = {**values, **changes}
        root = Path(root) if root is not None else default_root(self.notebook)
        root.mkdir(parents=True, exist_ok=True)
        files = {name: write(name, root, seed=seed, **sizes) for name, sizes in self.fixtures(used).items()}
        os.environ.setdefault(_CACHE_BEFORE, os.environ.get("CLKIT_DATA", ""))   # the user's cache, once
        os.environ["CLKIT_DATA"] = str(root)
        if self.after is not None:
            extra = dict(self.after(used, files))
            what = extra.pop("_what", {})   # after() may say what a value is (default: a fabricated file's path)
            for name, value in extra.items():
                if values.get(name) != value:
                    rows.append({"parameter": name, "given": values.get(name), "used": value,
                                 "what": what.get(name, "points at a fabricated file")})
            changes.update(extra)
        return Rehearsal(self.notebook, changes, rows, root, files)
