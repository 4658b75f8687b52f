"""Temporal taskification of a stream and its structural diagnostics (the taskification paper).

- :mod:`~clkit.taskification.boundaries` -- :class:`Taskification`, :func:`fixed_windows`,
  :func:`days_to_steps`, the boundary neighbourhood :func:`perturb_boundaries`;
- :mod:`~clkit.taskification.discrepancy` -- task distributions and the Wasserstein
  discrepancy matrix :func:`distance_matrix` (exact W1 for short tasks, :func:`use_exact`);
- :mod:`~clkit.taskification.profiles` -- plasticity / stability profiles, the profile
  distance :func:`profile_distance` (Eq. 2), :func:`bps` and its structureless reference
  :func:`null_stream`;
- :mod:`~clkit.taskification.compare` -- comparing task-to-task matrices of different sizes;
- :mod:`~clkit.taskification.case_studies` -- the synthetic streams of Eqs. 3-5;
- :mod:`~clkit.taskification.forecasting` -- continual forecasting under a taskification
  (error matrix ``M``, average MSE, BWT, forgetting, no-learning baselines) on the run's device;
- :mod:`~clkit.taskification.budget` -- the CL part's trainings, steps and passes, counted and
  timed on the run's device before it trains;
- :mod:`~clkit.taskification.rehearsal` -- the ``paper`` set's rehearsal plan (fabricated CESNET
  database, sizes cut by :data:`clkit.rehearsal.RULE`).
"""

from .boundaries import Taskification, check_delta, days_to_steps, fixed_windows, perturb_boundaries
from .discrepancy import EXACT_BELOW_QUANTILES, check_stream, distance_matrix, task_quantiles, use_exact
from .compare import interpolation_matrix, matrix_mse, matrix_mse_table, upsample_matrix
from .case_studies import CaseStudy, case_studies, changepoint_stream, recurrence_stream, transient_stream
from .profiles import (BPSReport, Profile, bps, bps_over_series, bps_report, plasticity_profile, profile_components,
                       null_stream, profile_distance, stability_profile, taskification_profile)

__all__ = ["Taskification", "check_delta", "days_to_steps", "fixed_windows", "perturb_boundaries",
           "check_stream", "distance_matrix", "task_quantiles", "use_exact", "EXACT_BELOW_QUANTILES", "null_stream",
           "BPSReport", "Profile", "bps", "bps_over_series", "bps_report", "plasticity_profile", "profile_components",
           "profile_distance", "stability_profile", "taskification_profile",
           "interpolation_matrix", "matrix_mse", "matrix_mse_table", "upsample_matrix",
           "CaseStudy", "case_studies", "changepoint_stream", "recurrence_stream", "transient_stream"]
