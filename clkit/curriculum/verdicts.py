"""M2I − I2M verdicts through :mod:`clkit.stats`: one primary family, exploratory families, controls.

Three gaps are measured per strategy (paired t over seeds, ``df = n - 1``; Holm within a family):

``order`` -- the **order verdict**: the final-row mean (every task once, after the whole
    stream), M2I − I2M. It carries no weighting term.
``ACC`` -- the paper's comparison (its Tables 3-4): ACC, M2I − I2M. It carries the
    weighting term (ACC counts the task in position ``j`` ``T - j`` times).
``excess`` -- the ACC gap minus the gap the weighting reference gives (from the same
    seed's single-task accuracies): what ACC says beyond weighting.

**The primary family** -- the claim the notebook tests, the only rows that can be findings --
is the order verdict of the paper's headline strategies (:data:`PRIMARY`: Replay,
GenerativeReplay, GEM, "significant examples" of a better M2I in the paper's Sect. 4.4). The
paper's claim is that the curriculum order helps; its own metric cannot say so: ACC favours
M2I by weighting alone (the paper warns of it, Sect. 5), so "M2I higher in ACC" would come out
for a learner with no order effect at all. The final-row mean counts every task once. Three
comparisons keep the family small: at the default 6 seeds it has 85 % power for an effect of
2 spreads of the differences at α/m = α/3,
the level every detectable figure uses (``stats.pairs_needed(2.0, 1.0, family=3)`` = 6).

**Exploratory families** (shown with their intervals, never findings), each Holm-adjusted on
its own and named (:data:`FAMILY_NAMES`): the order verdict of the other strategies, ACC, ACC
beyond weighting; and (:func:`bound_verdicts`) every strategy against Cumulative and MSTE, per
order.

**Controls** (judged alone, at their nominal level; :mod:`clkit.curriculum.controls`; which
rows each one guards: :func:`guards`):

- a **stochastic null control** per metric: the control strategy against itself under the
  same order, seeds offset (:class:`~clkit.curriculum.controls.NullControl`); it must come out
  "no difference". The final-row one is the control of every family judged on the final-row
  mean (the order families and the bounds), the ACC one of the ACC family, the excess one of
  the excess family.
- two **oracles** in the ACC family that must come out "M2I higher". *MSTE* (one expert per
  task): its ACC gap is weighting of its own task accuracies, which are not the ones the order
  was chosen from, so it fails when the measured difficulty does not carry over to another
  learner (a tie, a wrong ranking, too few seeds). *The weighting reference*: its mean gap is
  positive by construction (the order sorts the same accuracies; the rearrangement
  inequality), so it can fail only by its spread -- when the tasks do not differ in difficulty
  beyond the seed spread at this number of seeds, i.e. when M2I vs I2M is no curriculum.

MSTE's and the weighting reference's final-row gaps are zero by construction: they are
pipeline checks (:func:`clkit.curriculum.controls.pipeline_checks`), not controls.
"""

from __future__ import annotations

import numpy as np

from .. import stats
from .analysis import seed_values
from .controls import NULL_LEARNERS, PRIMARY, NullControl
from .difficulty import Curriculum
from .evaluate import weighting_reference

__all__ = ["FAMILIES", "FAMILY_NAMES", "PRIMARY", "WEIGHTING", "NULL_LEARNERS", "NEAR", "order_verdicts",
           "bound_verdicts", "family_of", "guards", "is_near", "detectable", "effects", "EFFECT_KEYS"]

#: metric -> (label, wording of a positive / negative gap)
FAMILIES = {
    "order": ("final-row mean", "M2I higher", "I2M higher"),
    "ACC": ("ACC", "M2I higher", "I2M higher"),
    "excess": ("ACC gap − weighting gap", "above weighting", "below weighting"),
}
#: (metric, scope) -> the Holm family's name
FAMILY_NAMES = {
    ("order", "primary"): "order verdict, the paper's headline strategies (primary)",
    ("order", "exploratory"): "order verdict, the other strategies (exploratory)",
    ("ACC", "exploratory"): "ACC, the paper's comparison (exploratory)",
    ("excess", "exploratory"): "ACC beyond weighting (exploratory)",
}
#: name of the weighting reference's rows
WEIGHTING = "weighting only"
#: a verdict is *near its level* when ``alpha / NEAR <= p < alpha * NEAR``: another seed, or the
#: last bit of a rounding, can move it across (GEM's order verdict and SI's ACC verdict flipped so)
NEAR = 2.0


def _label(who: str, family: str) -> str:
    return f"{who}: M2I − I2M ({FAMILIES[family][0]})"


def family_of(v: stats.Verdict) -> str:
    """The metric (``"order"``, ``"ACC"``, ``"excess"``) of a verdict of :func:`order_verdicts`.

    Examples
    --------
    >>> family_of(stats.paired([0.1, 0.2], [0.0, 0.1], comparison="gem: M2I − I2M (ACC)"))
    'ACC'
    """
    for fam, (label, *_) in FAMILIES.items():
        if v.comparison.endswith(f"({label})"):
            return fam
    raise ValueError(f"not a verdict of order_verdicts: {v.comparison!r}")


def guards(verdicts) -> dict:
    """The controls each metric's rows are read under.

    ``order`` -- the primary family's (and the bounds') -- its null control and the ACC family's
    oracles (whether the curriculum is one at this number of seeds): the findings need them all.
    ``ACC`` and ``excess``: each its own null control, which decides whether that exploratory
    family is read; a failure there does not stop the findings, which never come from it.

    Examples
    --------
    >>> null = stats.paired([0.1, -0.1, 0.05], [0.0] * 3, comparison="r against itself (ACC)",
    ...                     role="null control", expect="no difference")
    >>> {k: [v.comparison for v in vs] for k, vs in guards([null]).items()}
    {'order': [], 'ACC': ['r against itself (ACC)'], 'excess': []}
    """
    out = {f: [] for f in FAMILIES}
    for v in verdicts:
        if v.role == "null control":
            out[family_of(v)].append(v)
        elif v.role == "oracle control":
            out["order"].append(v)
    return out


def is_near(v: stats.Verdict, factor: float = NEAR) -> bool:
    """Whether a verdict's p lies within ``factor`` of its level: ``alpha / factor <= p < alpha * factor``.

    Examples
    --------
    >>> v = stats.paired([0.30, 0.10, 0.22, 0.05, 0.2], [0.0] * 5)
    >>> round(v.p, 3), is_near(v)
    (0.017, False)
    >>> is_near(stats.paired([0.30, 0.10, 0.22, -0.05, 0.2], [0.0] * 5))
    True
    """
    return bool(np.isfinite(v.p) and v.alpha / factor <= v.p < v.alpha * factor)


def _metric(per_seed, order: str, who: str, family: str) -> np.ndarray:
    """Per-seed values of one learner in one order: final-row mean, ACC, or ACC − the weighting reference."""
    if family == "order":
        return np.array(seed_values(per_seed, order, who, "final_acc"))
    acc = np.array(seed_values(per_seed, order, who, "ACC"))
    return acc if family == "ACC" else acc - np.array(seed_values(per_seed, order, who, "ACC_ref"))


def _gap_values(per_seed, c: Curriculum, who: str, family: str, order: str) -> np.ndarray:
    """Per-seed values of one arm of an M2I − I2M comparison (a learner, or the weighting reference)."""
    if who == WEIGHTING:
        seeds = list(dict.fromkeys(per_seed["seed"]))
        return np.array([weighting_reference(c.accuracy[s], c.orders[order])["final_acc" if family == "order"
                                                                              else "ACC"] for s in seeds])
    return _metric(per_seed, order, who, family)


def order_verdicts(per_seed, c: Curriculum, strategies, *, primary=PRIMARY, control: NullControl | None = None,
                   control_per_seed=None, test: str = "t") -> list:
    """Every strategy's M2I − I2M verdicts: the primary family, the exploratory ones, the controls.

    Parameters
    ----------
    per_seed : pandas.DataFrame
        :func:`clkit.curriculum.analysis.metrics_per_seed` of the run's seeds.
    c : Curriculum
    strategies : list of str
    primary : sequence of str
        The strategies whose order verdict is the claim (those the run has; default
        :data:`PRIMARY`). A null learner (MSTE) is never primary.
    control : NullControl, optional
        The stochastic null control; with ``control_per_seed`` (the metrics of its runs on the
        offset seeds, :func:`~clkit.curriculum.analysis.metrics_per_seed`), one null-control row
        per metric.
    test : {"t", "sign_flip"}
        :func:`clkit.stats.paired`'s test.

    Returns
    -------
    list of clkit.stats.Verdict
        Metric by metric (order, ACC, excess): the findings (primary first), then the controls.
    """
    primary = [k for k in primary if k in strategies and k not in NULL_LEARNERS]
    out = []
    for fam, (_, higher, lower) in FAMILIES.items():
        common = dict(higher=higher, lower=lower, test=test)
        by_scope = {"primary": [], "exploratory": []}
        for who in strategies:
            if who in NULL_LEARNERS:
                continue
            scope = "primary" if fam == "order" and who in primary else "exploratory"
            by_scope[scope].append(stats.paired(_gap_values(per_seed, c, who, fam, "M2I"),
                                                _gap_values(per_seed, c, who, fam, "I2M"),
                                                comparison=_label(who, fam), scope=scope, **common))
        for scope, rows in by_scope.items():
            out += stats.holm(rows, name=FAMILY_NAMES[(fam, scope)]) if rows else []
        if fam == "ACC":   # the oracles: weighting alone favours M2I
            for who in [k for k in strategies if k in NULL_LEARNERS] + [WEIGHTING]:
                out.append(stats.paired(_gap_values(per_seed, c, who, fam, "M2I"),
                                        _gap_values(per_seed, c, who, fam, "I2M"), comparison=_label(who, fam),
                                        role="oracle control", expect=higher, **common))
        if control is not None and control_per_seed is not None:
            out.append(stats.paired(_metric(control_per_seed, control.order, control.strategy, fam),
                                    _metric(per_seed, control.order, control.strategy, fam),
                                    comparison=control.label(FAMILIES[fam][0]), role="null control",
                                    expect=stats.NO_DIFFERENCE, **common))
    return out


def bound_verdicts(per_seed, reference: str, strategies, orders, *, test: str = "t") -> dict:
    """Final-row mean of every other strategy against a reference learner (``cumulative``, ``mste``).

    The paper calls Cumulative and MSTE upper bounds; this asks, per order, which
    strategies end above (or below) the reference, paired by seed, Holm over the
    strategies of one order. Exploratory: one named family per reference and order (its control
    is the final-row null control of :func:`order_verdicts`).

    Returns
    -------
    dict order -> list of clkit.stats.Verdict
    """
    out = {}
    for o in orders:
        ref = seed_values(per_seed, o, reference, "final_acc")
        out[o] = stats.holm([stats.paired(seed_values(per_seed, o, k, "final_acc"), ref,
                                          comparison=f"{k} − {reference} ({o}, final-row mean)",
                                          higher=f"above {reference}", lower=f"below {reference}", test=test,
                                          scope="exploratory")
                             for k in strategies if k != reference],
                            name=f"final-row mean against {reference}, {o} (exploratory)")
    return out


def detectable(n: int, family_size: int, alpha: float = stats.ALPHA) -> dict:
    """Smallest detectable paired effect in units of the differences' sd (``d_z``, 80 % power).

    ``alone``: one comparison at ``alpha``; ``holm``: at
    ``alpha / family_size``, the level every detectable figure uses.

    Examples
    --------
    >>> {k: round(v, 2) for k, v in detectable(6, 3).items()}
    {'alone': 1.43, 'holm': 1.87}
    """
    return {"alone": stats.min_detectable_effect(n, 1.0, alpha),
            "holm": stats.min_detectable_effect(n, 1.0, alpha / max(family_size, 1))}


#: ``results.json`` key of each gap's mean per learner (names kept from earlier runs, for sweeps)
EFFECT_KEYS = {"order": "m2i_minus_i2m_final", "ACC": "m2i_minus_i2m_acc", "excess": "m2i_minus_i2m_excess"}


def effects(per_seed, c: Curriculum, strategies) -> dict:
    """Mean M2I − I2M per learner and gap, flat for sweep summaries (every learner, the null ones
    and the weighting reference included, whether or not a verdict judges it).

    Returns
    -------
    dict with ``m2i_minus_i2m_final``, ``m2i_minus_i2m_acc``, ``m2i_minus_i2m_excess``
    (learner -> mean paired gap; the weighting reference under ``"weighting only"``, not in the
    excess, where it is 0 by definition)
    """
    out = {}
    for fam, key in EFFECT_KEYS.items():
        who = list(strategies) + ([WEIGHTING] if fam != "excess" else [])
        out[key] = {k: float(np.mean(_gap_values(per_seed, c, k, fam, "M2I") - _gap_values(per_seed, c, k, fam, "I2M")))
                    for k in who}
    return out
