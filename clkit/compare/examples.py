"""The example runs notebook 06 reads: real training runs on real data, written as a trainer would.

Notebook 06 (*Bring your runs*) teaches :mod:`clkit.compare` on runs that were trained elsewhere.
So that it runs offline and from an installed wheel, clkit ships one such set of runs
(``clkit/compare/example_runs/``), written by :func:`make_example_runs` and re-made by
``python -m clkit.compare.examples OUT`` (a test checks the shipped files equal a fresh run).

What the runs are (choices of this generator, stated in the notebook):

- **Data**: scikit-learn's 8x8 handwritten digits (real, shipped with scikit-learn), split
  class-incrementally into five tasks of two classes, ``(0, 1), (2, 3), ..., (8, 9)``. Per seed,
  each class's images are shuffled and the first 100 train, the next 70 test.
- **Methods**: clkit strategies trained by
  :func:`clkit.plugins.train_sequences_sequentially` (a one-hidden-layer MLP of width 64, SGD with
  momentum, three epochs per task, the kit's EDGE ground-truth protocol): ``naive`` (fine-tuning),
  ``ewc``, ``lwf`` and ``replay``. The seed sets the split, the initial weights and the batch
  order; every method sees the same split under a seed, so runs pair on the seed.
- **A rerun of the reference**: ``naive-rerun`` is ``naive`` trained again on the same split
  of each seed, with another training seed (initial weights and batch order from
  ``seed + RERUN_OFFSET``). It pairs with ``naive`` exactly as the methods pair with each
  other, so it is the notebook's paired null control: a difference the rule must not see.
- **Files**: one accuracy matrix per run (``R[i, j]``, four decimals, cells above the diagonal
  empty) and a manifest ``runs.csv`` (``file, method, seed, reported_acc``).
- **reported_acc** is what many trainers print as their summary "average accuracy": the *average
  incremental accuracy*, the mean over steps of the accuracy on the tasks seen so far (PyCIL's
  ``Average Accuracy``), not the final-row mean ACC that clkit computes. It is there to show
  :func:`clkit.compare.metrics.disagreements` at work: the report lists every run where the two
  differ, and decides on the recomputed numbers.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from .._validate import check_int

__all__ = ["METHODS", "SEEDS", "RERUNS", "RERUN_SUFFIX", "RERUN_OFFSET", "example_runs_path", "make_example_runs"]

#: the methods of the shipped example runs (clkit strategy names)
METHODS = ("naive", "ewc", "lwf", "replay")
#: the seeds of the shipped example runs
SEEDS = tuple(range(8))
#: the methods trained a second time (same split, another training seed): the paired null control
RERUNS = ("naive",)
#: a rerun's method name is the method's plus this suffix
RERUN_SUFFIX = "-rerun"
#: a rerun's training seed is the split's seed plus this offset
RERUN_OFFSET = 1000
_TRAIN, _TEST, _TASKS = 100, 70, 5


def example_runs_path() -> Path:
    """The folder of the shipped example runs (its ``runs.csv`` is the manifest).

    Examples
    --------
    >>> (example_runs_path() / "runs.csv").is_file()
    True
    """
    return Path(__file__).with_name("example_runs")


def _digits_split(seed: int):
    """Per-class train / test arrays of the digits, shapes (10, 100, 64) and (10, 70, 64), in [0, 1]."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x, y = (d.data / 16.0).astype("float32"), d.target
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in range(10):
        rows = rng.permutation(np.flatnonzero(y == c))
        train.append(x[rows[:_TRAIN]])
        test.append(x[rows[_TRAIN:_TRAIN + _TEST]])
    return np.stack(train), np.stack(test)


def _matrix_csv(R: np.ndarray) -> str:
    head = ",".join(f"task{j}" for j in range(R.shape[1]))
    rows = [",".join("" if j > i else f"{R[i, j]:.4f}" for j in range(R.shape[1])) for i in range(R.shape[0])]
    return "\n".join([head, *rows]) + "\n"


def make_example_runs(out, *, methods=METHODS, seeds=SEEDS, reruns=RERUNS) -> Path:
    """Train every method for every seed and write the runs and their manifest into ``out``.

    Parameters
    ----------
    out : path
        Folder to write (created); existing run files of the same names are replaced.
    methods : sequence of str
        clkit strategy names (see the module docstring).
    seeds : sequence of int
    reruns : sequence of str
        Methods trained a second time on each seed's split with training seed ``seed + RERUN_OFFSET``,
        written as method ``name + RERUN_SUFFIX`` (the paired null control's runs).

    Returns
    -------
    Path
        ``out/runs.csv``, the manifest.

    Examples
    --------
    >>> import tempfile
    >>> from clkit.compare import read_runs
    >>> runs = read_runs(make_example_runs(tempfile.mkdtemp(), methods=["naive"], seeds=[0], reruns=()))
    >>> runs.runs[0].R.shape
    (5, 5)
    """
    from .._io import atomic_write_text
    from ..edge.learners import LearnerConfig
    from ..plugins import train_sequences_sequentially

    seeds = [check_int("seeds", s, low=0) for s in seeds]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    order = np.arange(10).reshape(1, _TASKS, 2)
    rows = ["file,method,seed,reported_acc"]
    jobs = [(m, m, 0) for m in methods] + [(m, m + RERUN_SUFFIX, RERUN_OFFSET) for m in reruns]
    for method, label, offset in jobs:
        for seed in seeds:
            x_train, x_test = _digits_split(seed)
            res = train_sequences_sequentially(x_train, x_test, order, method, LearnerConfig(), seed=seed + offset)
            R = np.asarray(res["acc_matrix"][0], dtype=float)
            R[np.triu_indices(_TASKS, 1)] = np.nan
            name = f"{label}_seed{seed}.csv"
            atomic_write_text(out / name, _matrix_csv(R))
            seen = [np.mean(np.round(R[i, :i + 1], 4)) for i in range(_TASKS)]
            rows.append(f"{name},{label},{seed},{np.mean(seen):.4f}")
    return atomic_write_text(out / "runs.csv", "\n".join(rows) + "\n")


if __name__ == "__main__":  # python -m clkit.compare.examples OUT
    print(make_example_runs(sys.argv[1] if len(sys.argv) > 1 else example_runs_path()))
