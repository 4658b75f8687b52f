"""One statistical rule for every verdict a notebook prints.

A notebook compares two conditions (M2I vs I2M, ER vs Bare, a method vs fine-tuning)
over seeds that pair everything random between them. Every such comparison is decided
here, by one rule, and reported as one :class:`Verdict` from which the notebook's
tables and closing text are generated (``docs/statistics.md`` says it at length).

The rule
--------
- **Paired t-test** on the per-seed differences ``d`` with ``n - 1`` degrees of freedom,
  two-sided, at ``alpha = 0.05`` (:func:`paired`), its spread floored at the metric's
  resolution (``max(sd, r)``: accuracy on ``n_test`` examples, ``r = 1 / n_test``), so that p
  moves continuously as the spread goes to 0. Each metric is tested on the scale chosen for it in
  advance (``METRIC_SCALES``: the difference, or the log ratio for MSE-like and ratio metrics).
  ``test="sign_flip"`` uses the paired permutation test instead.
- **Holm's correction** over a family of ``m`` comparisons (:func:`holm`): decisions on the
  adjusted p; intervals simultaneous at ``1 - alpha / m`` for every row; the detectable effect and
  the pairs needed at ``alpha / m`` (their 80 % power holds under the step-down rule).
- A difference is a finding only when its (adjusted) ``p < alpha``; otherwise "no difference",
  with the **smallest effect the run could have detected** (:func:`min_detectable_effect`).
- Each row carries a skew diagnostic (``outlier_share``: the largest pair's share of
  ``sum |d|``); above ``SKEW_CAUTION`` the texts caution.
- **Controls**: null controls judged together, Holm over the null controls (:func:`judge_controls`,
  :func:`controls_hold`), each one's detectable bias set beside the smallest finding it vouches for
  (:func:`control_sensitivity`); comparisons identical up to sign tested once
  (:func:`drop_sign_duplicates`).

Examples
--------
>>> v = paired([0.80, 0.82, 0.79, 0.81, 0.83], [0.70, 0.71, 0.72, 0.69, 0.73],
...            comparison="M2I − I2M", higher="M2I higher", lower="I2M higher")
>>> v.decision, round(v.effect, 3), v.n
('M2I higher', 0.1, 5)
>>> paired([0.1, -0.1, 0.05], [0.0, 0.0, 0.0]).decision
'no difference'
"""

from __future__ import annotations

from .controls import control_sensitivity, controls_hold, drop_sign_duplicates, judge_controls
from .power import (DEFAULT_DESIGNS, POWER, _detectable_dz, min_detectable_effect, pairs_needed,  # noqa: F401
                    power, smallest_constant)
# private helpers (_level, _p_text, ...) stay importable from clkit.stats: callers use them
from .rule import (CONTROLS, DEFAULT_RELATIVE_RESOLUTION,  # noqa: F401
                   METRIC_SCALES, _differences, _interval, effect_size,
                   empirical_p, holm, holm_adjust, outlier_share, paired, paired_p, scale_for, sign_flip_p)
from .record import rederive
from .text import CI_COLUMN, closing_text, family_power_text, verdict_table
from .verdict import (ALPHA, CONFIDENCE,  # noqa: F401
                      NO_DIFFERENCE, NOT_TESTABLE, ROLES, SCALES, SCOPES, SKEW_CAUTION, Verdict,
                      _ci_text, _level, _num, _p, _p_text, decide, skew_threshold)

__all__ = ["ALPHA", "CONFIDENCE", "POWER", "NO_DIFFERENCE", "NOT_TESTABLE", "ROLES", "SCOPES", "SCALES", "SKEW_CAUTION",
           "Verdict", "paired", "decide", "holm", "effect_size", "min_detectable_effect", "empirical_p", "sign_flip_p",
           "power", "pairs_needed", "holm_adjust", "rederive", "controls_hold", "verdict_table", "closing_text",
           "family_power_text", "judge_controls", "control_sensitivity", "drop_sign_duplicates", "paired_p",
           "outlier_share", "scale_for", "smallest_constant", "METRIC_SCALES", "DEFAULT_RELATIVE_RESOLUTION",
           "DEFAULT_DESIGNS", "CONTROLS", "CI_COLUMN", "skew_threshold"]
