"""DRIFT: task-free continual graph learning under Gaussian task mixing (notebook 05_drift).

- :mod:`clkit.drift.schedule` -- latent tasks, task centres (Eq. 9), Gaussian
  weights (Eq. 10), largest-remainder batch counts (Eq. 5), overlap index (Eq. 6);
- :mod:`clkit.drift.streams` -- hard / Gaussian / boundary-local / global-mixing
  streams of node-index batches, with or without replacement;
- :mod:`clkit.drift.cache` -- :func:`build_stream`, built once per configuration
  and cached on disk;
- :mod:`clkit.drift.evaluate` -- online training along a stream with periodic
  evaluation on every latent task's test set, and the Joint upper bound;
- :mod:`clkit.drift.experiment` -- latent-task splits, the paper's metrics and a
  grid over methods x stream configurations x seeds;
- :mod:`clkit.drift.protocol` -- the two evaluation protocols, ``"text"`` (the
  paper's description) and ``"authors"`` (its released code);
- :mod:`clkit.drift.authors` -- the methods as the released code runs them;
- :mod:`clkit.drift.report` -- the notebook's tables, findings and closing text;
- :mod:`clkit.drift.plots` -- the notebook's figures;
- :mod:`clkit.drift.budget` -- the study's work counted and timed on the run's device;
- :mod:`clkit.drift.rehearsal` -- the ``paper*`` sets' rehearsal plan (fabricated CoraFull, ogbn-arxiv,
  Reddit, Roman-Empire).

Imports run one way: schedule -> streams -> protocol -> cache, evaluate ->
authors -> experiment -> budget, report, plots; rehearsal stands alone.
"""

from .experiment import (NOTEBOOK_PARAMETERS, GridPart, LatentTaskSplit, StreamConfig, check_learner_settings, check_params, grid_plan,
                         null_control_configs, null_control_methods, protocol_data, run_grid, run_null_control, run_protocols,
                         split_tasks, stream_metrics, study_configs, TIME_TASKS, time_split, run_time_stream)
from .protocol import (AUTHORS_EVAL_EVERY, AUTHORS_TAU, eval_intervals, PROTOCOLS, Protocol, TaskEvaluator, get_protocol, protocol_eval_points,
                       protocol_metrics)
from .evaluate import METHODS, StreamRun, eval_points, make_learner, run_stream, task_accuracy, train_joint
from .cache import build_stream, stream_key
from .schedule import (DEFAULT_TAU, gaussian_weights, hard_weights, largest_remainder, latent_tasks,
                       mixing_entropy, overlap_index, task_centers)
from .streams import (SAMPLINGS, SETTINGS, Stream, authors_boundary_local_stream, authors_global_stream,
                      boundary_local_stream, fill_counts, gaussian_stream, global_stream, hard_stream, time_stream,
                      year_bins)

__all__ = [
    "NOTEBOOK_PARAMETERS", "GridPart", "LatentTaskSplit", "StreamConfig", "check_learner_settings", "check_params", "grid_plan",
    "null_control_configs", "null_control_methods", "protocol_data", "run_grid", "run_null_control", "run_protocols", "study_configs",
    "AUTHORS_EVAL_EVERY", "eval_intervals", "AUTHORS_TAU", "PROTOCOLS", "Protocol", "TaskEvaluator", "get_protocol", "protocol_eval_points",
    "protocol_metrics", "split_tasks", "stream_metrics", "METHODS",
    "StreamRun", "eval_points", "make_learner", "run_stream", "task_accuracy", "train_joint",
    "build_stream", "stream_key",
    "DEFAULT_TAU", "gaussian_weights", "hard_weights", "largest_remainder", "latent_tasks", "mixing_entropy",
    "overlap_index", "task_centers", "SAMPLINGS", "SETTINGS", "Stream", "boundary_local_stream", "fill_counts",
    "gaussian_stream", "global_stream", "hard_stream", "authors_boundary_local_stream", "authors_global_stream",
    "TIME_TASKS", "time_split", "run_time_stream", "time_stream", "year_bins",
]
