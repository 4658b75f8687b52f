"""Controls judged as one family, each control's sensitivity beside the findings it vouches for, and
comparisons identical up to sign tested once.

Null controls are judged together, Holm-adjusted over the null controls of a run: with ``k`` null
controls each judged alone at 0.05, a healthy run reports a failed control ``1 - 0.95**k`` of the
time (14-19 % at 3-4 controls); judged together, at most ``alpha``. Oracle controls are not adjusted:
an oracle fails by *not* finding its planted effect, and adjusting it would only make that false alarm
more frequent; its sensitivity is its power, stated by its planted effect against its detectable one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Sequence

import numpy as np

from .rule import CONTROLS, _differences, _adjusted, holm_adjust
from .verdict import NOT_TESTABLE, POWER, Verdict, _num

__all__ = ["judge_controls", "controls_hold", "control_sensitivity", "drop_sign_duplicates"]


def judge_controls(verdicts: Iterable[Verdict], alpha: float | None = None) -> list[Verdict]:
    """The verdicts with the null controls among them Holm-adjusted together (``family_name="controls"``).

    Each null control's p is adjusted over the ``k`` null controls, its decision re-taken, its interval
    and detectable bias taken at ``alpha / k`` (so each control's own sensitivity is still stated, at
    the level it is judged). Other rows are returned as they are. Idempotent (it adjusts ``p_raw``).

    Examples
    --------
    >>> from clkit.stats import paired
    >>> c = [paired([0.3, 0.1, 0.25, 0.2], [0.0] * 4, comparison=f"null {i}", role="null control",
    ...             expect="no difference") for i in range(3)]
    >>> [v.decision for v in c], [v.decision for v in judge_controls(c)]
    (['higher', 'higher', 'higher'], ['higher', 'higher', 'higher'])
    >>> j = judge_controls(c)
    >>> j[0].family, j[0].family_name, j[0].rule
    (3, 'controls', 'paired t, df = 3, two-sided, α = 0.05, Holm over 3 null controls')
    """
    verdicts = list(verdicts)
    idx = [i for i, v in enumerate(verdicts)
           if v.role == "null control" and v.decision != NOT_TESTABLE and np.isfinite(v.p_raw)]
    if len(idx) < 2:
        return verdicts
    adjusted = holm_adjust([verdicts[i].p_raw for i in idx])
    out = list(verdicts)
    for i, p in zip(idx, adjusted):
        v = _adjusted(verdicts[i], float(p), len(idx), CONTROLS, alpha, "Holm over")
        out[i] = replace(v, rule=v.rule + " null controls")
    return out


def controls_hold(verdicts: Iterable[Verdict]) -> tuple[bool, list[Verdict]]:
    """Whether every control row came out as it must, and the failing ones, with the null controls
    judged together (:func:`judge_controls`).

    Examples
    --------
    >>> from clkit.stats import paired
    >>> ok = paired([0.1, -0.1, 0.0], [0.0, 0.0, 0.0], comparison="null", role="null control",
    ...             expect="no difference")
    >>> controls_hold([ok])
    (True, [])
    """
    failed = [v for v in judge_controls(verdicts) if v.control_ok is False]
    return (not failed, failed)


def control_sensitivity(control: Verdict, findings: Sequence[Verdict]) -> dict:
    """A null control's detectable bias beside the smallest finding it vouches for.

    The findings it vouches for: the significant primary finding rows of the family it guards
    (``control.guards``; all significant primary rows when it guards none by name). A control whose
    detectable bias (80 % power at its level) exceeds that finding's ``|effect|`` could not have seen a
    defect of that size: it does not vouch for the finding.

    Returns
    -------
    dict
        ``control``, ``detectable``, ``finding`` (name or ``None``), ``smallest`` (its ``|effect|``),
        ``sees`` (True / False, ``None`` when there is nothing to compare), ``text``.

    Examples
    --------
    >>> from clkit.stats import paired
    >>> c = paired([0.5, -0.4, 0.3, -0.2], [0.0] * 4, comparison="null", role="null control",
    ...            expect="no difference")
    >>> f = paired([0.30, 0.32, 0.31, 0.29], [0.0] * 4, comparison="ER − Bare")
    >>> s = control_sensitivity(c, [f])
    >>> s["sees"], round(s["detectable"], 2)
    (False, 0.89)
    """
    vouched = [v for v in findings if v.role == "finding" and v.scope == "primary" and v.significant
               and (not control.guards or v.family_name == control.guards)]
    out = {"control": control.comparison, "detectable": control.mde, "finding": None, "smallest": float("nan"),
           "sees": None, "text": ""}
    if not vouched or not np.isfinite(control.mde):
        return out
    f = min(vouched, key=lambda v: abs(v.effect))
    out.update(finding=f.comparison, smallest=abs(f.effect))
    if f.scale != control.scale:
        out["text"] = (f"{control.comparison} is on the {control.scale} scale, {f.comparison} on the {f.scale} "
                       "scale: their sizes are not compared.")
        return out
    sees = bool(control.mde <= abs(f.effect))
    out["sees"] = sees
    out["text"] = (f"{control.comparison} could detect a bias ≥ {_num(control.mde)} ({round(100 * POWER)} % power "
                   f"at its level); the smallest finding it vouches for, {f.comparison}, is {_num(abs(f.effect))}: "
                   + ("it could have seen a defect of that size." if sees else
                      "it could not have seen a defect of that size, so it does not vouch for that finding."))
    return out


def drop_sign_duplicates(verdicts: Sequence[Verdict]) -> list[Verdict]:
    """The verdicts with comparisons identical up to sign kept once: a row whose paired differences are
    the exact negatives of an earlier row's (same role, scale and pairs, up to float rounding) is
    dropped, and the kept row's note says so. One hypothesis is then counted once in its family
    (e.g. BWT and forgetting, which are negatives of each other). Run it before :func:`clkit.stats.holm`.

    Examples
    --------
    >>> from clkit.stats import paired
    >>> bwt = paired([-0.1, -0.2, -0.15], [-0.3, -0.25, -0.3], comparison="BWT: ewc − ft")
    >>> fgt = paired([0.1, 0.2, 0.15], [0.3, 0.25, 0.3], comparison="forgetting: ewc − ft")
    >>> kept = drop_sign_duplicates([bwt, fgt])
    >>> [v.comparison for v in kept], kept[0].note
    (['BWT: ewc − ft'], '(forgetting: ewc − ft is the same comparison with the sign reversed: tested once)')
    """
    kept: list[Verdict] = []
    diffs: list = []
    for v in verdicts:
        d = _differences(v.a, v.b if v.b else None, v.scale) if v.a else None
        twin = None
        if d is not None and np.any(d != 0):
            for k, (w, e) in enumerate(zip(kept, diffs)):
                if (e is not None and e.shape == d.shape and w.role == v.role and w.scale == v.scale
                        and np.allclose(d, -e, rtol=1e-9, atol=1e-12 * float(np.abs(d).max()))):
                    twin = k
                    break
        if twin is None:
            kept.append(v)
            diffs.append(d)
            continue
        w = kept[twin]
        note = f"({v.comparison} is the same comparison with the sign reversed: tested once)"
        kept[twin] = replace(w, note=(w.note + " " + note).strip())
    return kept
