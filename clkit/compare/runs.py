"""The one record shape every reader of :mod:`clkit.compare` produces: :class:`Run` and :class:`Runs`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Run", "Runs", "seed_key"]


def seed_key(value) -> tuple:
    """Sort key of a seed or order id: numbers by value, then text.

    Examples
    --------
    >>> sorted(["10", "2", "b", "1"], key=seed_key)
    ['1', '2', '10', 'b']
    """
    text = "" if value is None else str(value)
    return (0, float(text), "") if re.fullmatch(r"[-+]?\d+(\.\d*)?", text) else (1, 0.0, text)


@dataclass
class Run:
    """One training run: an accuracy matrix and where it came from.

    Attributes
    ----------
    method : str
        The continual-learning method (strategy) the run trained.
    seed : str
        Its seed, as written in the input (text, so ``"0"`` and ``"s0"`` both work).
    order : str or None
        Class-order id; runs of two methods pair on ``(seed, order, taskification)``.
    taskification : str or None
        How the stream was split into tasks.
    R : ndarray, shape (num_tasks, num_tasks)
        ``R[i, j]`` = accuracy on task j after training task i, as a fraction in [0, 1];
        NaN only above the diagonal.
    source : str
        The file (and the rows of it) the matrix was read from.
    reported : dict
        The framework's own summary numbers (``acc``, ``bwt``, ``fwt``, ``forgetting``), on the
        matrix's scale; compared with the recomputed ones, never used in their place.
    used : str
        What was taken from the source and what was read but not used.

    Examples
    --------
    >>> r = Run("ewc", "0", None, None, np.array([[0.9, np.nan], [0.6, 0.8]]), "R.csv")
    >>> r.label, r.num_tasks, r.key
    ('ewc seed 0', 2, ('0', None, None))
    """

    method: str
    seed: str
    order: str | None
    taskification: str | None
    R: np.ndarray
    source: str
    reported: dict = field(default_factory=dict)
    used: str = ""

    @property
    def key(self) -> tuple:
        """What pairs two methods' runs: ``(seed, order, taskification)``."""
        return (self.seed, self.order, self.taskification)

    @property
    def label(self) -> str:
        """``method seed s [order o] [taskification t]``, as messages name the run."""
        text = f"{self.method} seed {self.seed}"
        if self.order is not None:
            text += f" order {self.order}"
        if self.taskification is not None:
            text += f" taskification {self.taskification}"
        return text

    @property
    def num_tasks(self) -> int:
        return int(self.R.shape[0])


@dataclass
class Runs:
    """Every run read from one input, with what was read from where.

    Attributes
    ----------
    runs : list of Run
    source : str
        The folder or file read.
    format : str
        ``"folder"`` (manifest + matrices), ``"long"`` or ``"avalanche"`` (per run, in ``used``).
    notes : list of str
        Input-level remarks (manifest columns read but not used, ...).

    Examples
    --------
    >>> rs = Runs([Run("a", "0", None, None, np.eye(2), "x.csv")], "runs/", "folder")
    >>> rs.methods, len(rs)
    (['a'], 1)
    """

    runs: list
    source: str
    format: str
    notes: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.runs)

    def __iter__(self):
        return iter(self.runs)

    @property
    def methods(self) -> list:
        """The methods in the order they first appear."""
        return list(dict.fromkeys(r.method for r in self.runs))

    def of(self, method: str) -> list:
        """The runs of ``method``, sorted by ``(seed, order, taskification)``."""
        return sorted((r for r in self.runs if r.method == method),
                      key=lambda r: tuple(seed_key(k) for k in r.key))

    def listing(self):
        """A DataFrame: one row per run read, with its source and what was used from it."""
        import pandas as pd

        return pd.DataFrame([{"method": r.method, "seed": r.seed, "order": r.order, "taskification": r.taskification,
                              "num_tasks": r.num_tasks, "source": r.source, "used": r.used} for r in self.runs])
