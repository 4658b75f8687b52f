"""Verdicts of notebook 03: each method against fine-tuning, paired over seeds.

Every metric the notebook shows is compared as ``method − finetune`` with
:func:`clkit.stats.paired` over training seeds that pair initialisation and batch order (the
data split is the same for every seed). The comparisons form two Holm families
(:func:`clkit.stats.holm`):

- **Primary** (:data:`PRIMARY`): TAS, SH and DH, the paper's three metrics, of every judged
  learner against fine-tuning. These are the comparisons the paper's Table 1 makes between its
  learners (SI and FT "maintaining higher TAS and SH", A-GEM far below both, the Drift Horizon
  "consistently around six years for most models"); only they can be findings. With the three
  learners of the default run the family has 9 comparisons, and 8 seeds give 80 % power for an
  effect of 2 standard deviations of the differences at Holm's strictest level (α/9).
- **Exploratory** (:data:`EXPLORATORY`): OOD accuracy (the Wild-Time metric the paper argues
  against) and the backward view (backward accuracy and forgetting, beyond the paper), shown with
  their intervals, never listed as findings.

**Null controls**, one per metric, in the scope of the metric's family: ``finetune − finetune'``,
where finetune' is fine-tuning trained with seeds shifted by :data:`NULL_SEED_OFFSET`. Both arms
are independent draws of the *same* training process on the same data, so the difference has
mean zero by exchangeability, and the rule must call it "no difference". Each control is judged
alone at its nominal level (outside the findings' family), so it fails at the rule's level when
the rule is right and more often when it is not (e.g. seeds x periods pooled as independent pairs).

**Pipeline checks** (:func:`pipeline_checks`) are comparisons that hold by construction (the
verdicts' first seed is the run the tables show; the control's seeds are not the findings');
a failed one stops the findings as a failed control does (:func:`verdict_text`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import stats
from . import experiment, metrics, report

__all__ = ["METRICS", "PRIMARY", "EXPLORATORY", "NULL_SEED_OFFSET", "FAMILIES", "metric_values", "verdicts",
           "pipeline_checks", "checks_text", "verdict_text", "control_reach_text", "seed_metrics"]

NULL_SEED_OFFSET = 10_000
"""Seed shift of the null control's second fine-tuning arm."""

#: metric key -> (label, view, higher is better)
METRICS = {
    "tas": ("TAS", "forward", True),
    "sh": ("SH", "forward", True),
    "dh": ("DH", "forward", True),
    "ood": ("OOD accuracy", "forward", True),
    "backward_accuracy": ("backward accuracy", "backward", True),
    "forgetting": ("forgetting", "backward", False),
}
#: the paper's metrics: the primary family (the claims of its Table 1)
PRIMARY = ("tas", "sh", "dh")
#: shown beside them: Wild-Time's OOD accuracy and the backward view
EXPLORATORY = ("ood", "backward_accuracy", "forgetting")
#: scope -> the name of its Holm family
FAMILIES = {"primary": "03 primary: TAS, SH, DH − finetune",
            "exploratory": "03 exploratory: OOD, backward accuracy, forgetting − finetune"}


def metric_values(A, *, oracle=None, **metric_kw) -> dict:
    """The metrics judged by :func:`verdicts` for one accuracy matrix A, shape (T, T), and the
    paper tables' other columns (``id``, ``ood_min``, ``tas_min``: their spread over seeds).

    ``metric_kw`` go to :func:`clkit.temporal.summarize_learner` (delta, epsilon, lam, n, ...).

    Examples
    --------
    >>> A = [[0.9, 0.8], [0.7, 0.9]]
    >>> v = metric_values(A, delta=0.8, epsilon=0.01, lam=0.1, n=1)
    >>> sorted(v), round(v["forgetting"], 2)
    (['backward_accuracy', 'dh', 'forgetting', 'id', 'ood', 'ood_min', 'sh', 'tas', 'tas_min'], 0.2)
    """
    s = metrics.summarize_learner(A, oracle=oracle, **metric_kw)
    b = report.backward_summary(A)
    return {"tas": s["tas"], "sh": s["sh"], "dh": s["dh"], "ood": s["ood"],
            "backward_accuracy": b["backward_accuracy"], "forgetting": b["forgetting"],
            "id": s["id"], "ood_min": s["ood_min"], "tas_min": s["tas_min"]}


def _directions(name: str, key: str) -> tuple[str, str]:
    """How a significant positive / negative ``name − reference`` reads on metric ``key``."""
    if key == "forgetting":
        return f"{name} forgets more", f"{name} forgets less"
    return f"{name} higher", f"{name} lower"


def verdicts(per_seed: dict, null: list, reference: str = "finetune") -> list:
    """Per family (primary, then exploratory): its null controls, then its ``method − reference`` rows.

    Each family's findings are Holm-adjusted together (:data:`FAMILIES` names them); each null
    control carries its family's ``scope`` and, in ``guards``, the family and metric whose findings
    it vouches for (:func:`control_reach_text`); the null controls are judged together by
    :func:`clkit.stats.closing_text`.

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
    >>> [(v.role, v.scope, v.family) for v in vs][:4]
    [('null control', 'primary', 1), ('null control', 'primary', 1), ('null control', 'primary', 1), ('finding', 'primary', 3)]
    >>> vs[-1].comparison, vs[-1].decision, vs[-1].scope
    ('forgetting: ewc − finetune', 'ewc forgets more', 'exploratory')
    """
    if reference not in per_seed:
        raise ValueError(f"reference {reference!r} is not among the learners {sorted(per_seed)}")
    ref = per_seed[reference]
    if len(null) != len(ref):
        raise ValueError(f"null must hold one entry per seed of {reference} ({len(ref)}), got {len(null)}")
    out = []
    for scope, keys in (("primary", PRIMARY), ("exploratory", EXPLORATORY)):
        out += [replace(stats.paired([d[m] for d in ref], [d[m] for d in null],
                                     comparison=f"{METRICS[m][0]}: {reference} − {reference} (other seeds)",
                                     role="null control", expect=stats.NO_DIFFERENCE, scope=scope),
                        guards=_guards(scope, m)) for m in keys]
        findings = []
        for name, rows in per_seed.items():
            if name in (reference, "erm"):
                continue
            for m in keys:
                higher, lower = _directions(name, m)
                findings.append(stats.paired([d[m] for d in rows], [d[m] for d in ref],
                                             comparison=f"{METRICS[m][0]}: {name} − {reference}",
                                             higher=higher, lower=lower, scope=scope))
        out += stats.holm(findings, name=FAMILIES[scope])
    return out


def _guards(scope: str, key: str) -> str:
    """What a null control vouches for: the findings of its own metric in its family (its units)."""
    return f"{FAMILIES[scope]} / {METRICS[key][0]} rows"


def control_reach_text(vs) -> str:
    """Each primary null control's detectable bias beside the smallest primary finding *of its metric*.

    A null control of TAS vouches for the TAS findings only (SH and DH are on other scales), so
    each control is set beside the smallest significant finding of its own metric
    (:func:`clkit.stats.control_sensitivity`, the controls judged together first as in
    :func:`clkit.stats.closing_text`), and the sentence says when it could not have seen a defect
    of that size. Empty when no primary finding is significant.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> ft = [{k: 0.5 + 0.01 * rng.standard_normal() for k in METRICS} for _ in range(8)]
    >>> ft2 = [{k: 0.5 + 0.01 * rng.standard_normal() for k in METRICS} for _ in range(8)]
    >>> ew = [{k: d[k] - 0.003 + 0.0001 * rng.standard_normal() for k in METRICS} for d in ft]
    >>> text = control_reach_text(verdicts({"finetune": ft, "ewc": ew}, ft2))
    >>> text.count("could not have seen a defect of that size"), text.count("TAS: ewc − finetune")
    (3, 1)
    """
    judged = stats.judge_controls([v for v in vs if v.scope == "primary"])
    parts = []
    for c in judged:
        if c.role != "null control":
            continue
        label = c.comparison.split(": ", 1)[0]
        mine = [v for v in judged if v.role == "finding" and v.comparison.startswith(f"{label}: ")]
        sens = stats.control_sensitivity(replace(c, guards=""), mine)
        if sens["text"]:
            parts.append(sens["text"])
    return ("**What each control could see** (against the findings of its own metric): " + " ".join(parts)
            if parts else "")


def pipeline_checks(per_seed: dict, seeds, *, rows: dict, backward: dict, reference: str = "finetune") -> list:
    """What holds by construction in the verdicts' pipeline, checked: ``[{"check", "holds", "detail"}]``.

    - the verdicts' first seed is the run the notebook's tables show: every judged learner's
      metrics at ``seeds[0]`` equal its table row (``rows``: :func:`summarize_learner` of the
      forward view; ``backward``: :func:`backward_summary`), so the verdicts use the same
      matrices, oracle and metric settings;
    - the null control's second arm never trains with a seed of the findings (``seeds`` and
      ``seeds + NULL_SEED_OFFSET`` are disjoint).

    Examples
    --------
    >>> row = {"tas": 0.9, "sh": 2.0, "dh": 3.0, "ood": 0.8}
    >>> back = {"backward_accuracy": 0.7, "forgetting": 0.1}
    >>> per = {"finetune": [row | back, row | back]}
    >>> [c["holds"] for c in pipeline_checks(per, [0, 1], rows={"finetune": row}, backward={"finetune": back})]
    [True, True]
    """
    seeds = [int(s) for s in seeds]
    off = []
    for name, values in per_seed.items():
        table = {**{k: rows[name][k] for k in ("tas", "sh", "dh", "ood")},
                 **{k: backward[name][k] for k in ("backward_accuracy", "forgetting")}}
        off += [f"{name} {METRICS[k][0]} {values[0][k]:.6g} vs {table[k]:.6g}" for k in METRICS
                if not np.isclose(values[0][k], table[k], rtol=1e-9, atol=1e-12, equal_nan=True)]
    clash = sorted(set(seeds) & {s + NULL_SEED_OFFSET for s in seeds})
    return [
        {"check": f"the verdicts' seed {seeds[0]} is the run the tables show",
         "holds": not off, "detail": "; ".join(off) if off else
         f"{len(per_seed)} learners x {len(METRICS)} metrics equal their table values"},
        {"check": f"the null control's {reference}' seeds are not the findings' seeds",
         "holds": not clash, "detail": (f"shared seeds {clash}" if clash else
                                        f"seeds {seeds[0]}..{seeds[-1]} and {seeds[0] + NULL_SEED_OFFSET}.."
                                        f"{seeds[-1] + NULL_SEED_OFFSET}")},
    ]


def checks_text(checks) -> str:
    """One Markdown line on the pipeline checks (they hold by construction unless the pipeline is broken).

    Examples
    --------
    >>> checks_text([{"check": "x", "holds": True, "detail": "ok"}])
    '**Pipeline checks hold** (1 of 1): x.'
    >>> checks_text([{"check": "x", "holds": False, "detail": "a vs b"}])
    '**Pipeline checks fail** (1 of 1): x (a vs b).'
    """
    checks = list(checks)
    if not checks:
        return ""
    failed = [c for c in checks if not c["holds"]]
    if failed:
        return (f"**Pipeline checks fail** ({len(failed)} of {len(checks)}): "
                + "; ".join(f"{c['check']} ({c['detail']})" for c in failed) + ".")
    return f"**Pipeline checks hold** ({len(checks)} of {len(checks)}): " + "; ".join(c["check"] for c in checks) + "."


def verdict_text(vs, checks=(), *, small_n: int = 4, subject: str = "this run") -> str:
    """The verdicts' closing Markdown: the pipeline checks, the primary family, then the exploratory one.

    A failed pipeline check stops every finding (the differences are listed as measured, not judged).
    Otherwise the primary rows and their controls go through :func:`clkit.stats.closing_text`
    (controls first, findings only from primary rows with at least ``small_n`` pairs, what the run
    could detect), and the exploratory rows and their controls through it again, apart: a failed
    exploratory control stops only the exploratory list.

    Examples
    --------
    >>> ft = [{k: 0.5 + 0.01 * i for k in METRICS} for i in range(4)]
    >>> ft2 = [{k: 0.5 + 0.01 * j for k in METRICS} for j in (1, 0, 3, 2)]
    >>> ew = [{k: 0.7 + 0.01 * i for k in METRICS} for i in (0, 2, 1, 3)]
    >>> text = verdict_text(verdicts({"finetune": ft, "ewc": ew}, ft2))
    >>> text.splitlines()[0][:25], "**Findings** (3 of 3)" in text
    ('**Controls hold** (3 of 3', True)
    """
    vs, checks = list(vs), list(checks)
    head = checks_text(checks)
    if any(not c["holds"] for c in checks):
        moved = [v for v in vs if v.role == "finding" and v.n]
        return "\n\n".join([head + f" The pipeline cannot be trusted on {subject}, so no difference is read as "
                            "a finding.", "Measured differences (not findings): " + "; ".join(
                                f"{v.comparison} {v.effect:+.3g}" for v in moved) + "."])
    parts = [stats.closing_text([v for v in vs if v.scope == "primary"], subject=subject, small_n=small_n)]
    if stats.controls_hold([v for v in vs if v.scope == "primary"])[0]:
        parts.append(control_reach_text(vs))
    explo = [v for v in vs if v.scope == "exploratory"]
    if explo:
        text = stats.closing_text(explo, subject="the exploratory part", small_n=small_n)
        rows = [v for v in explo if v.role == "finding"]
        if stats.controls_hold(explo)[0] and not any(v.significant for v in rows):
            text += f"\n\nNone of the {len(rows)} exploratory comparisons differs under the rule."
        parts.append(f"*Exploratory* ({FAMILIES['exploratory']}; never findings):\n\n{text}")
    return "\n\n".join(p for p in [head, *parts] if p)


def seed_metrics(dataset, learners, seeds, *, train_kw: dict, learner_kwargs=None, oracle=None,
                 metric_kw: dict, known: dict | None = None, progress: bool = False,
                 precomputed: dict | None = None) -> tuple:
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
    precomputed : dict, optional
        ``{(learner, seed): A}`` trained elsewhere (the cases of a split run,
        :func:`clkit.temporal.split.read_cases`): read instead of trained.
    """
    from ..learner_kwargs import settings_for

    if "finetune" not in learners:
        raise ValueError(f"learners must include 'finetune' (the reference), got {list(learners)!r}")
    known = known or {}

    def A_of(name, s):
        if s == seeds[0] and name in known:
            return known[name]
        if precomputed and (name, s) in precomputed:
            return precomputed[(name, s)]
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
