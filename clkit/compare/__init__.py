"""Many runs in, a verdict out: clkit's metrics and verdicts on results from any trainer.

Runs trained elsewhere (Avalanche, a lab's own loop, ...) are read into one record shape
(:class:`Runs` of :class:`Run`, :mod:`clkit.compare.readers`), checked
(:mod:`clkit.compare.checks`), their metrics recomputed from the accuracy matrices with
:mod:`clkit.metrics` (:mod:`clkit.compare.metrics`; a framework's own numbers are only compared
with them), and the comparisons decided by :mod:`clkit.stats` with a seed-vs-seed null control
(:mod:`clkit.compare.verdicts`); :mod:`clkit.compare.report` writes the table, the paragraph,
the seed planner, the figures and ``results.json``. The command line is ``clkit compare``.

Input formats (``docs/compare.md`` has examples)
------------------------------------------------
1. **A folder of runs** with a manifest ``runs.csv`` (or ``runs.yaml``), one row per run:
   ``file, method, seed`` and optionally ``order`` (class-order id), ``taskification`` and the
   framework's summary numbers ``reported_acc, reported_bwt, reported_fwt,
   reported_forgetting``. ``file`` is the run's accuracy matrix ``R`` as CSV (T x T, row i =
   after training task i, column j = task j; cells above the diagonal may be empty or NaN),
   or Avalanche's ``eval_results.csv`` (or the ``CSVLogger`` folder holding it), or a JSON file of
   Avalanche's ``strategy.eval`` results dicts.
2. **A long CSV**: ``method, seed, [order], [taskification], i, j, accuracy``, one row per cell.
3. **Avalanche 0.6's CSVLogger** ``eval_results.csv`` (header
   ``eval_exp,training_exp,eval_accuracy,eval_loss,forgetting``), listed in a manifest, and the
   **results dicts** ``strategy.eval`` returns (:func:`read_avalanche_results`: a list, or a JSON
   file of it); both checked against real runs of avalanche-lib 0.6.0
   (``tests/test_compare_avalanche.py``; :mod:`clkit.compare.readers`).
4. **mammoth's ``logs.pyd``** and **PyCIL's training log** (:mod:`clkit.compare.frameworks`): a
   results folder of either with no manifest, one log file, or a manifest row (``format`` column
   ``mammoth`` / ``pycil``, or recognised from the file). Both formats were inferred from the
   frameworks' code (commits named there), not produced by running them; both log percentages,
   which these readers always divide by 100.
5. **MLflow and W&B run exports** (:mod:`clkit.compare.trackers`): per-task accuracies logged as
   metrics whose key names the evaluated task (``acc_task_3``, ``acc/task_3``,
   ``eval_accuracy_task_3``, or a ``metric_pattern`` regex with a group ``task``) at the step of the
   task trained; method and seed from the run's params / tags / config (``method_key``,
   ``seed_key``) or a manifest row (``format`` ``mlflow`` / ``wandb``). MLflow: a file store
   (``mlruns``, checked against runs logged with mlflow-skinny 3.17.2) or a ``get_metric_history``
   table (:func:`read_mlflow_store`, :func:`read_mlflow_history`); W&B: a ``history()`` CSV or
   ``scan_history()`` JSON lines with a ``config.yaml`` sidecar (:func:`read_wandb_history`; format
   inferred from wandb 0.31.0's code, not produced by a run).

Scores are fractions in [0, 1]; with ``percent=True`` (``--percent``) percentages, divided by 100.
A value outside the scale, NaN on or below the diagonal, different task counts, a duplicated
``(method, seed, order, taskification)`` or a method missing a seed the others have raise a
``ValueError`` naming the file, the run and the field. Every run read is listed with what was
used from it.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> runs = [Run(m, str(s), None, None, np.tril(0.6 + 0.03 * rng.standard_normal((3, 3)))
...             + (0.05 if m == "er" else 0.0) * (np.arange(3) == 2)[:, None], f"{m}_{s}.csv")
...         for m in ("finetune", "er") for s in range(8)]
>>> res = compare(runs, reference="finetune")
>>> res["table"].loc["ACC: er − finetune", "decision"]
'er higher'
"""

from __future__ import annotations

from .checks import check_runs, check_scores
from .metrics import FORMS, check_reported, disagreements, framework_form, metrics_table, run_metrics
from .frameworks import read_mammoth_log, read_pycil_log
from .mlflow_db import read_mlflow_db
from .trackers import read_mlflow_history, read_mlflow_store, read_wandb_history
from .readers import read_avalanche_csv, read_avalanche_results, read_folder, read_long_csv, read_runs
from .report import compare, paragraph, write_report
from .runs import Run, Runs
from .verdicts import comparisons_for, null_pairs, planner, verdicts

__all__ = ["Run", "Runs", "read_runs", "read_folder", "read_long_csv", "read_avalanche_csv", "read_avalanche_results",
           "read_mammoth_log",
           "read_pycil_log", "read_mlflow_store", "read_mlflow_history", "read_wandb_history", "check_scores",
           "check_runs", "run_metrics", "metrics_table", "disagreements", "check_reported", "framework_form", "FORMS",
           "read_mlflow_db", "comparisons_for", "null_pairs", "verdicts",
           "planner", "compare", "paragraph", "write_report"]
