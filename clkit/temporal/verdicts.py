"""Verdicts of notebook 03: each method against fine-tuning, paired over seeds.

Every metric the notebook shows -- the paper's forward view (TAS, OOD, first-crossing SH)
and the backward view (backward accuracy, forgetting; :func:`clkit.temporal.backward_summary`)
-- is compared as ``method − finetune`` with :func:`clkit.stats.paired` over training seeds
that pair initialisation and batch order (the data split is the same for every seed), and
the family is Holm-adjusted with :func:`clkit.stats.holm`.

**Null control.** ``finetune − finetune'``, where finetune' is fine-tuning trained with
seeds shifted by :data:`NULL_SEED_OFFSET`: both arms are independent draws of the *same*
training process on the same data, so the difference has mean zero by exchangeability,
and the rule must call it "no difference" on every metric (Holm across the five
control rows, so that a true null fails the family at most at the rule's level).
"""

from __future__ import annotations

from .. import stats
from . import experiment, metrics, report

__all__ = ["METRICS", "NULL_SEED_OFFSET", "metric_values", "verdicts"]

NULL_SEED_OFFSET = 10_000
"""Seed shift of the null control's second fine-tuning arm."""

#: metric key -> (label, view, higher is better)
METRICS = {
    "tas": ("TAS", "forward", True),
    "ood": ("OOD accuracy", "forward", True),
    "sh": ("SH", "forward", True),
    "backward_accuracy": ("backward accuracy", "backward", True),
    "forgetting": ("forgetting", "backward", False),
}


def metric_values(A, *, oracle=None, **metric_kw) -> dict:
    """The metrics judged by :func:`verdicts` for one accuracy matrix A, shape (T, T).

    ``metric_kw`` go to :func:`clkit.temporal.summarize_learner` (delta, epsilon, lam, n, ...).

    Examples
    --------
    >>> A = [[0.9, 0.8], [0.7, 0.9]]
    >>> v = metric_values(A, delta=0.8, epsilon=0.01, lam=0.1, n=1)
    >>> sorted(v), round(v["forgetting"], 2)
    (['backward_accuracy', 'forgetting', 'ood', 'sh', 'tas'], 0.2)
    """
    s = metrics.summarize_learner(A, oracle=oracle, **metric_kw)
    b = report.backward_summary(A)
    return {"tas": s["tas"], "ood": s["ood"], "sh": s["sh"],
            "backward_accuracy": b["backward_accuracy"], "forgetting": b["forgetting"]}


def verdicts(per_seed: dict, null: list, reference: str = "finetune") -> list:
    """Null controls, then every ``method − reference`` finding (Holm across the family).

    Parameters
    ----------
    per_seed : dict
        ``{learner: [metric_values(...) per seed]}``, seeds in the same order for all.
    null : list of dict
        ``metric_values`` of the reference trained with seeds + :data:`NULL_SEED_OFFSET`.
    reference : str

    Returns
    -------
    list of clkit.stats.Verdict

    Examples
    --------
    >>> ft = [{k: 0.5 + 0.01 * i for k in METRICS} for i in range(4)]
    >>> ft2 = [{k: 0.5 + 0.01 * j for k in METRICS} for j in (1, 0, 3, 2)]
    >>> ew = [{k: 0.7 + 0.01 * i for k in METRICS} for i in (0, 2, 1, 3)]
    >>> vs = verdicts({"finetune": ft, "ewc": ew}, ft2)
    >>> [(v.role, v.decision) for v in vs][:1], vs[-1].comparison, vs[-1].decision
    ([('null control', 'no difference')], 'forgetting: ewc − finetune', 'ewc forgets more')
    """
    if reference not in per_seed:
        raise ValueError(f"reference {reference!r} is not among the learners {sorted(per_seed)}")
    ref = per_seed[reference]
    # the controls are one family too: Holm keeps the chance that a true null fails any
    # of them at alpha (five correlated metrics, each at alpha, would fail ~20 % of runs)
    controls = stats.holm([stats.paired([d[m] for d in ref], [d[m] for d in null],
                             comparison=f"{label}: {reference} − {reference} (other seeds)",
                             role="null control", expect="no difference")
                for m, (label, _, _) in METRICS.items()])
    findings = []
    for name, rows in per_seed.items():
        if name in (reference, "erm"):
            continue
        for m, (label, view, up) in METRICS.items():
            better, worse = f"{name} {'higher' if up else 'lower'}", f"{name} {'lower' if up else 'higher'}"
            if m == "forgetting":
                better, worse = f"{name} forgets less", f"{name} forgets more"
            findings.append(stats.paired([d[m] for d in rows], [d[m] for d in ref],
                                         comparison=f"{label}: {name} − {reference}",
                                         higher=worse if not up else better,
                                         lower=better if not up else worse))
    return controls + stats.holm(findings)


def seed_metrics(dataset, learners, seeds, *, train_kw: dict, learner_kwargs=None, oracle=None,
                 metric_kw: dict, known: dict | None = None, progress: bool = False) -> tuple:
    """Train each learner on every seed; return ``(per_seed, null)`` for :func:`verdicts`.

    Parameters
    ----------
    dataset : clkit.data.temporal.PeriodDataset or clkit.temporal.PeriodTasks
        The stream; pass the run's :func:`~clkit.temporal.period_tasks` so that every seed
        trains on the periods already on the device.
    learners : list of str
        Learners to judge (``"finetune"`` must be among them: the reference).
    seeds : list of int
        Training seeds (initialisation and batch order; the data split is fixed).
    train_kw : dict
        :func:`clkit.temporal.accuracy_matrix` settings, ``device`` and ``precision`` included
        (its ``seed`` is replaced).
    learner_kwargs : dict, optional
        Per-learner strategy settings (validated ``{learner: {keyword: value}}``).
    oracle : array_like, shape (T,), optional
        The oracle shared by every seed (the notebook's per-period ERM diagonal).
    metric_kw : dict
        :func:`clkit.temporal.summarize_learner` settings.
    known : dict, optional
        ``{learner: A}`` (backward view evaluated) already trained with ``seeds[0]``.
    """
    from ..learner_kwargs import settings_for

    if "finetune" not in learners:
        raise ValueError(f"learners must include 'finetune' (the reference), got {list(learners)!r}")
    known = known or {}

    def A_of(name, s):
        if s == seeds[0] and name in known:
            return known[name]
        return experiment.accuracy_matrix(dataset, name, backward=True, **(train_kw | {"seed": s}),
                                  strategy_kwargs=settings_for(name, None, learner_kwargs))

    it = [(name, s) for name in learners for s in seeds]
    if progress:
        from ..progress import tqdm

        it = tqdm(it, desc="seeds")
    per_seed: dict = {name: [] for name in learners}
    for name, s in it:
        per_seed[name].append(metric_values(A_of(name, s), oracle=oracle, **metric_kw))
    null = [metric_values(A_of("finetune", s + NULL_SEED_OFFSET), oracle=oracle, **metric_kw)
            for s in seeds]
    return per_seed, null
