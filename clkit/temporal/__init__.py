"""Metrics for temporal distribution shift (Iovine, Ziffer & Della Valle, 2026).

All functions take the temporal accuracy matrix ``A`` of shape
``(num_periods, num_periods)``: ``A[t, tau]`` is the accuracy on the test data of
period ``tau`` of the model trained up to period ``t`` (NaN where not evaluated;
the paper evaluates ``tau >= t`` only). The *oracle* accuracy of period ``tau`` is
the accuracy of a model trained directly on ``tau``; by default the diagonal
``A[tau, tau]`` (Eq. 2 literally), or any vector passed as ``oracle`` -- e.g. the
diagonal of per-period ERM, shared by all learners so that their scores are
comparable (the notebook's default).

=============================  ==============================================================
metric                         definition (0-based, ``h`` = steps into the future)
=============================  ==============================================================
:func:`transfer_ratio`         g(t, tau) = A(t, tau) / oracle(tau), clipped to [0, 1] (Eq. 2)
:func:`stability_horizon`      SH_delta(t): how many steps g stays >= delta (Eq. 3)
:func:`drift_horizon`          DH_t: first h in [1, H] where the cumulative statistic S_h
                               exceeds lambda; H + 1 when never (Eq. 4-5)
:func:`temporal_adaptation_score`  TAS_t = mean_k A(t, t+k) / mean_k oracle(t+k),
                               k = 1..n, clipped to [0, 1] (Eq. 6)
:func:`id_accuracy`, :func:`ood_accuracy`  Wild-Time's ID (diagonal) and OOD (mean over
                               the next n periods) accuracies per training period
=============================  ==============================================================

Edge cases (all documented per function and tested)
---------------------------------------------------
- NaN cells are "not evaluated": they are skipped, never counted as failures.
- Oracle accuracy 0: a model cannot do worse than an oracle scoring 0, so
  ``g = 1`` there (also for 0/0); TAS likewise gives 1 when the oracle mean is 0.
- Fewer than ``n`` future steps: TAS and OOD use the steps that exist
  (``partial=True``, the default) or give NaN (``partial=False``); the last
  period has no future and always gives NaN.
- Horizons near the end of the stream are right-censored: SH counts at most the
  steps that exist; DH's sentinel ``H + 1`` means "not crossed within the
  observable window", exactly as the paper's Table 1 (H = 6, sentinel 7).

Modules
-------
- :mod:`clkit.temporal.metrics` -- the paper's metrics on ``A`` (above) and the forward view;
- :mod:`clkit.temporal.params` -- notebook 03's parameters (datasets, learners, validation);
- :mod:`clkit.temporal.experiment` -- producing ``A(t, tau)``: learners trained period after
  period on the run's device (periods moved once, a row read once), the majority-class
  baseline, per-learner settings;
- :mod:`clkit.temporal.learners` -- the paper's learners that are not :mod:`clkit.strategies`:
  Wild-Time's CORAL and MoCo+SML (``coral``, ``moco_sml``);
- :mod:`clkit.temporal.report` -- beyond the paper: the backward view (``tau < t``), the
  Stability Horizon facts and the notebook's texts and tables;
- :mod:`clkit.temporal.verdicts` -- each method against fine-tuning, paired over seeds
  (:mod:`clkit.stats`), with a null control;
- :mod:`clkit.temporal.plots` -- the notebook's figures;
- :mod:`clkit.temporal.budget` -- the run's work counted and timed on its device before it trains;
- :mod:`clkit.temporal.rehearsal` -- the ``paper`` set's rehearsal plan (caps, fabricated Wild-Time files).

Every public name of the first four is importable from ``clkit.temporal`` itself.
"""

from .experiment import (SUPPLIED_KEYWORDS, PeriodTasks, accuracy_matrix, accuracy_row, build_learner,
                         check_learner_settings, learner_strategy, majority_accuracy_matrix, period_tasks)
from .metrics import (drift_horizon, forward_view, id_accuracy, ood_accuracy, stability_horizon,
                      summarize_learner, temporal_adaptation_score, transfer_ratio)
from .params import DATASETS, LEARNERS, check_params
from .report import (FRACTION, backward_summary, backward_table, backward_text, closing_text, horizon_unit,
                     horizons_table, learner_column, learner_table, part1_table, stability_facts)

__all__ = [
    "transfer_ratio", "stability_horizon", "drift_horizon", "temporal_adaptation_score", "id_accuracy",
    "ood_accuracy", "summarize_learner", "forward_view",
    "accuracy_matrix", "majority_accuracy_matrix", "check_learner_settings", "SUPPLIED_KEYWORDS",
    "PeriodTasks", "period_tasks", "learner_strategy", "build_learner", "accuracy_row",
    "check_params", "DATASETS", "LEARNERS",
    "backward_summary", "backward_table", "stability_facts", "backward_text", "part1_table", "horizons_table",
    "learner_table", "closing_text", "horizon_unit", "learner_column", "FRACTION",
]
