"""Notebook 03's training steps: the accuracy matrices of a whole run, of a case of a split, or of its merge.

A whole run trains every matrix here; a case of a split (``temporal_cases``) trains its own
matrices only and records them (:mod:`clkit.temporal.split`); the merge (``temporal_from``) reads
every case's matrices and the notebook's later cells run on them as in one run.
"""

from __future__ import annotations

__all__ = ["run_cases_or_read", "learner_matrices", "run_verdicts", "NO_VERDICTS"]

#: the verdict cell's text where no verdicts ran
NO_VERDICTS = ("No verdicts: they need `verdict_seeds` ≥ 2 and finetune plus another "
               "sequential learner in `learners`.")


def run_cases_or_read(tasks, case_list, every, *, temporal_cases, temporal_from: str, train_kw: dict,
                      learner_settings, record=None) -> dict:
    """The matrices trained elsewhere, ``{(learner, seed): A}``: ``{}`` in a whole run.

    - A case (``temporal_cases``): trains ``case_list`` (:func:`clkit.temporal.split.run_cases`), logs them as
      ``temporal_case`` and returns ``{}`` (a case computes nothing more).
    - A merge (``temporal_from``): every case of ``every`` read back (:func:`clkit.temporal.split.read_cases`,
      the cases' parameters compared with ``record.params``); nothing is trained.

    Examples
    --------
    >>> run_cases_or_read(None, [], [], temporal_cases=[], temporal_from="x", train_kw={}, learner_settings={})
    Traceback (most recent call last):
    ...
    ValueError: temporal_from: a merge compares the cases' parameters with this run's: give record
    """
    from . import split

    if temporal_from:
        if record is None:
            raise ValueError("temporal_from: a merge compares the cases' parameters with this run's: give record")
        return split.read_cases(temporal_from, record.params, every)
    if temporal_cases:
        case = split.run_cases(case_list, tasks, train_kw=train_kw, learner_settings=learner_settings)
        if record is not None:
            record.log(temporal_case=case)
    return {}


def learner_matrices(tasks, learners, *, seed: int, train_kw: dict, learner_settings, known=None,
                     progress: bool = True) -> dict:
    """``{learner: A}`` of every learner on ``seed``, backward cells evaluated; read from ``known`` where there.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit.data.temporal import make_drifting_gaussians
    >>> from clkit.temporal import period_tasks
    >>> tasks = period_tasks(make_drifting_gaussians(3, 20, seed=0))
    >>> A = learner_matrices(tasks, ["finetune"], seed=0, train_kw=dict(epochs=1, hidden=[4], seed=0),
    ...                      learner_settings={}, known={("finetune", 0): np.eye(3)}, progress=False)
    >>> A["finetune"].tolist()[0]
    [1.0, 0.0, 0.0]
    """
    from .experiment import accuracy_matrix

    known = known or {}
    it = learners
    if progress:
        from ..progress import tqdm

        it = tqdm(learners, desc="learners")
    out = {}
    for name in it:
        if (name, int(seed)) in known:
            out[name] = known[(name, int(seed))]
        else:
            out[name] = accuracy_matrix(tasks, name, backward=True, strategy_kwargs=(learner_settings or {}).get(name),
                                        **(dict(train_kw) | {"seed": seed}))
    return out


def run_verdicts(tasks, judged, *, seed: int, verdict_seeds: int, train_kw: dict, learner_settings, oracle,
                 metric_kw: dict, acc_full: dict, rows: dict, back: dict, known=None) -> tuple:
    """The verdict cell: ``(verdicts, checks, per_seed, seeds, summary)``.

    Trains (or reads from ``known``, a merge's matrices) the judged learners on ``seed .. seed +
    verdict_seeds - 1`` and the null control (:func:`clkit.temporal.verdicts.seed_metrics`), judges them
    (:func:`~clkit.temporal.verdicts.verdicts`), checks the pipeline and words it; ``([], [], {}, [seed],
    NO_VERDICTS)`` where no verdicts run (:func:`clkit.temporal.budget.verdicts_run`).
    """
    from . import verdicts as tmv
    from .budget import verdicts_run

    if not verdicts_run(judged, verdict_seeds):
        return [], [], {}, [seed], NO_VERDICTS
    seeds = [seed + i for i in range(verdict_seeds)]
    per_seed, null = tmv.seed_metrics(tasks, judged, seeds, train_kw=train_kw, learner_kwargs=learner_settings,
                                      oracle=oracle, metric_kw=metric_kw, known=acc_full, progress=True,
                                      precomputed=known)
    verdicts = tmv.verdicts(per_seed, null)
    checks = tmv.pipeline_checks(per_seed, seeds, rows=rows, backward=back)
    return verdicts, checks, per_seed, seeds, tmv.verdict_text(verdicts, checks, small_n=4)
