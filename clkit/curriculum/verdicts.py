"""M2I − I2M verdicts through :mod:`clkit.stats`, with the controls each gap needs.

Three gaps are judged per strategy, each as one family over the strategies
(paired t over seeds, ``df = n - 1``; Holm over the family's findings):

``order`` -- the **order verdict**: the final-row mean (every task once, after the
    whole stream), M2I − I2M. It carries no weighting term.
``ACC`` -- the paper's comparison (its Tables 3-4): ACC, M2I − I2M. It carries the
    weighting term (ACC counts the task in position ``j`` ``T - j`` times).
``excess`` -- the ACC gap minus the gap the weighting reference gives (from the same
    seed's single-task accuracies): what ACC says beyond weighting.

Controls, and what each one controls:

- **MSTE** (one expert per task, trained on that task alone: it can neither forget
  nor transfer) is the null control of the *order* gap: with the task-level pairing
  of :func:`clkit.curriculum.streams.run_stream` its accuracy on a dataset is the same
  in both orders, so its final-row gap must come out "no difference". It tests the
  pipeline and the pairing (before the pairing it did not hold: the same seed gave
  MSTE different accuracies on a task under the two orders). In the *ACC* family it
  is an oracle: a learner whose ACC is pure weighting of its own task accuracies must
  come out "M2I higher" when the tasks differ in difficulty. It is left out of the
  *excess* family, where its gap would measure how its experts differ from the
  separate single-task runs, not the order.
- **The weighting reference** (a learner that keeps its single-task accuracy on every
  task; :func:`clkit.curriculum.evaluate.weighting_reference`) is the null control of
  the *order* gap's metric: its final-row mean is the same under both orders (zero
  by construction -- the row shows that the order verdict's metric has no weighting
  term). In the *ACC* family it is the oracle: weighting alone must come out "M2I
  higher", which shows that an effect of that size can show in this setting and that
  the rule detects it at this number of seeds.

Null controls are judged alone at the unadjusted level (the stricter test for a
control that must come out "no difference"); oracle controls are adjusted with the
family's findings (the rule as applied to the findings must detect them).
"""

from __future__ import annotations

import numpy as np

from .. import stats
from .analysis import seed_values
from .difficulty import Curriculum
from .evaluate import weighting_reference

__all__ = ["FAMILIES", "WEIGHTING", "NULL_LEARNERS", "order_verdicts", "bound_verdicts", "family_of",
           "detectable", "effects"]

#: family -> (metric label, wording of a positive / negative gap)
FAMILIES = {
    "order": ("final-row mean", "M2I higher", "I2M higher"),
    "ACC": ("ACC", "M2I higher", "I2M higher"),
    "excess": ("ACC gap − weighting gap", "above weighting", "below weighting"),
}
#: name of the weighting reference's rows
WEIGHTING = "weighting only"
#: learners that cannot forget or transfer: controls, never findings
NULL_LEARNERS = ("mste",)


def _label(who: str, family: str) -> str:
    return f"{who}: M2I − I2M ({FAMILIES[family][0]})"


def family_of(v: stats.Verdict) -> str:
    """The family a verdict of :func:`order_verdicts` belongs to (from its comparison text)."""
    for fam, (label, *_) in FAMILIES.items():
        if v.comparison.endswith(f"({label})"):
            return fam
    raise ValueError(f"not a verdict of order_verdicts: {v.comparison!r}")


def _values(per_seed, c: Curriculum, who: str, family: str, order: str) -> np.ndarray:
    """Per-seed values of one learner (or the weighting reference) for one family and order."""
    seeds = list(dict.fromkeys(per_seed["seed"]))
    if who == WEIGHTING:
        ref = [weighting_reference(c.accuracy[s], c.orders[order]) for s in seeds]
        return np.array([r["final_acc"] if family == "order" else r["ACC"] for r in ref])
    if family == "order":
        return np.array(seed_values(per_seed, order, who, "final_acc"))
    acc = np.array(seed_values(per_seed, order, who, "ACC"))
    if family == "ACC":
        return acc
    return acc - np.array(seed_values(per_seed, order, who, "ACC_ref"))


def _holm_findings(verdicts):
    """Holm over the findings and oracle controls of one family; null controls stay unadjusted."""
    idx = [i for i, v in enumerate(verdicts) if v.role != "null control"]
    adjusted = stats.holm([verdicts[i] for i in idx])
    out = list(verdicts)
    for i, v in zip(idx, adjusted):
        out[i] = v
    return out


def order_verdicts(per_seed, c: Curriculum, strategies, *, test: str = "t") -> list:
    """Every strategy's M2I − I2M verdict in the three families, with the control rows.

    Parameters
    ----------
    per_seed : pandas.DataFrame
        :func:`clkit.curriculum.analysis.metrics_per_seed`.
    c : Curriculum
    strategies : list of str
    test : {"t", "sign_flip"}
        :func:`clkit.stats.paired`'s test.

    Returns
    -------
    list of clkit.stats.Verdict
        Family by family (order, ACC, excess), the findings first, then the controls.
    """
    out = []
    for fam, (_, higher, lower) in FAMILIES.items():
        rows = []
        for who in [k for k in strategies if k not in NULL_LEARNERS] + [k for k in strategies if k in NULL_LEARNERS]:
            if who in NULL_LEARNERS and fam == "excess":
                continue
            role, expect = "finding", None
            if who in NULL_LEARNERS:
                role, expect = (("null control", stats.NO_DIFFERENCE) if fam == "order"
                                else ("oracle control", higher))
            rows.append(stats.paired(_values(per_seed, c, who, fam, "M2I"), _values(per_seed, c, who, fam, "I2M"),
                                     comparison=_label(who, fam), higher=higher, lower=lower, test=test,
                                     role=role, expect=expect))
        if fam != "excess":
            role, expect = ("null control", stats.NO_DIFFERENCE) if fam == "order" else ("oracle control", higher)
            rows.append(stats.paired(_values(per_seed, c, WEIGHTING, fam, "M2I"),
                                     _values(per_seed, c, WEIGHTING, fam, "I2M"), comparison=_label(WEIGHTING, fam),
                                     higher=higher, lower=lower, test=test, role=role, expect=expect))
        out += _holm_findings(rows)
    return out


def bound_verdicts(per_seed, reference: str, strategies, orders, *, test: str = "t") -> dict:
    """Final-row mean of every other strategy against a reference learner (``cumulative``, ``mste``).

    The paper calls Cumulative and MSTE upper bounds; this asks, per order, which
    strategies end above (or below) the reference, paired by seed, Holm over the
    strategies of one order.

    Returns
    -------
    dict order -> list of clkit.stats.Verdict
    """
    out = {}
    for o in orders:
        ref = seed_values(per_seed, o, reference, "final_acc")
        out[o] = stats.holm([stats.paired(seed_values(per_seed, o, k, "final_acc"), ref,
                                          comparison=f"{k} − {reference} ({o}, final-row mean)",
                                          higher=f"above {reference}", lower=f"below {reference}", test=test)
                             for k in strategies if k != reference])
    return out


def detectable(n: int, family_size: int, alpha: float = stats.ALPHA) -> dict:
    """Smallest detectable paired effect in units of the differences' sd (``d_z``, 80 % power).

    ``alone``: one comparison at ``alpha``; ``holm``: at Holm's strictest level
    ``alpha / family_size`` (the first comparison of the family).

    Examples
    --------
    >>> {k: round(v, 2) for k, v in detectable(6, 12).items()}
    {'alone': 1.43, 'holm': 2.56}
    """
    return {"alone": stats.min_detectable_effect(n, 1.0, alpha),
            "holm": stats.min_detectable_effect(n, 1.0, alpha / max(family_size, 1))}


#: ``results.json`` key of each family's effects (names kept from earlier runs, for sweeps)
EFFECT_KEYS = {"order": "m2i_minus_i2m_final", "ACC": "m2i_minus_i2m_acc", "excess": "m2i_minus_i2m_excess"}


def effects(verdicts) -> dict:
    """Mean M2I − I2M per learner and family, flat for sweep summaries.

    Returns
    -------
    dict with ``m2i_minus_i2m_final``, ``m2i_minus_i2m_acc``, ``m2i_minus_i2m_excess``
    (learner -> mean paired gap; the weighting reference under ``"weighting only"``)
    """
    out = {key: {} for key in EFFECT_KEYS.values()}
    for v in verdicts:
        out[EFFECT_KEYS[family_of(v)]][v.comparison.split(":")[0]] = v.effect
    return out
