"""The M2I / I2M curriculum benchmark (notebook 04_curriculum; Faber et al., 2024).

Heterogeneous 10-class image datasets become the tasks of one continual stream,
ordered by their measured difficulty from easy to hard (M2I, the direct curriculum)
and from hard to easy (I2M, the inverse one). The package imports in one direction:

- :mod:`clkit.curriculum.benchmark` -- class-balanced, resized datasets, one per task;
- :mod:`clkit.curriculum.difficulty` -- the difficulty table over seeds and the choice
  of tasks whose difficulties differ beyond the seed spread (the paper's Table 2);
- :mod:`clkit.curriculum.streams` -- training every (seed, order, strategy) stream: the
  accuracy matrices ``R``;
- :mod:`clkit.curriculum.evaluate` -- the paper's ACC / BWT / FWT (Sect. 2.3) with the
  final-row mean and the weighting reference;
- :mod:`clkit.curriculum.params` -- validation of the notebook's parameters;
- :mod:`clkit.curriculum.protocol` -- the paper's text or the authors' released settings
  (``protocol: paper | authors``);
- :mod:`clkit.curriculum.analysis` -- per-seed metrics and their means;
- :mod:`clkit.curriculum.controls` -- the stochastic null control (one strategy against itself,
  seeds offset) and the pipeline checks (comparisons zero by construction);
- :mod:`clkit.curriculum.verdicts` -- every M2I − I2M verdict through :mod:`clkit.stats`: the
  primary family (the order verdict of the paper's headline strategies), the exploratory
  families, the controls;
- :mod:`clkit.curriculum.budget` -- the trainings, steps and evaluations of a run, and their
  time on its device, timed on a few steps before the first training;
- :mod:`clkit.curriculum.rehearsal` -- the ``paper`` set's rehearsal on fabricated files
  (``rehearse: true``);
- :mod:`clkit.curriculum.report` -- the notebook's tables and closing text;
- :mod:`clkit.curriculum.tables` -- the paper's Tables 3-8 layout from one run per scenario;
- :mod:`clkit.curriculum.paper_numbers` -- the paper's own Tables 3-8 values, beside a run's;
- :mod:`clkit.curriculum.plots` -- its figures.

Order versus weighting. ACC averages the lower triangle of ``R``, so the task in
position ``j`` (0-based) is counted ``T - j`` times: putting the easiest task first
raises ACC with no continual-learning effect at all (the paper itself warns of this,
Sect. 5). :func:`weighting_reference` gives the ACC of a learner that neither forgets
nor transfers; the final-row mean counts every task once and has no such term.
"""

from .benchmark import (PAPER_ORDER, Benchmark, balanced_indices, build_benchmark, build_benchmarks, check_loaded,
                        prepare_images)
from .difficulty import Curriculum, choose_curriculum, curriculum_orders, difficulty_table, select_tasks
from .evaluate import stream_metrics, weighting_reference
from .params import check_learner_settings, check_params, scenario_strategies
from .streams import (PAIRINGS, measure_difficulty, run_setting, run_stream, run_streams, single_task_accuracy,
                      strategy_kwargs, task_seed)
from . import analysis, budget, controls, paper_numbers, protocol, rehearsal, verdicts
from ..data.images import IMAGE_DATASETS
from . import plots, report, tables  # noqa: E402  (presentation, on top of the above)

__all__ = ["PAPER_ORDER", "Benchmark", "prepare_images", "balanced_indices", "build_benchmark",
           "single_task_accuracy", "curriculum_orders", "run_stream", "stream_metrics", "strategy_kwargs",
           "check_params", "check_learner_settings", "scenario_strategies", "weighting_reference", "difficulty_table", "select_tasks", "run_streams",
           "IMAGE_DATASETS", "build_benchmarks", "check_loaded", "Curriculum",
           "choose_curriculum", "measure_difficulty", "PAIRINGS", "task_seed", "run_setting", "analysis", "budget", "controls", "paper_numbers", "protocol", "rehearsal", "verdicts", "report",
           "plots"]
