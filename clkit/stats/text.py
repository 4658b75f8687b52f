"""Tables and closing texts generated from verdicts: what a notebook prints about its comparisons."""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from .controls import control_sensitivity, controls_hold, judge_controls
from .power import pairs_needed, power
from .verdict import NO_DIFFERENCE, NOT_TESTABLE, POWER, Verdict, _level, _num, _p, _p_text

__all__ = ["CI_COLUMN", "verdict_table", "closing_text", "family_power_text"]

#: the interval column of :func:`verdict_table`: simultaneous within a family, the level in each cell
CI_COLUMN = "CI (simultaneous in its family)"


def verdict_table(verdicts: Iterable[Verdict], digits: int = 3):
    """A DataFrame of verdicts: one row each, controls marked, for ``display``.

    Columns: comparison, role (finding, exploratory, or the control's kind), effect, the interval
    (``CI_COLUMN``: 95 % for a row judged alone; in a family of ``m`` the simultaneous level
    ``1 - α/m``, the same for every row of the family, named in the cell), p, n, decision, control
    (holds / FAILS / blank), detectable (the smallest effect the run could detect with 80 % power at
    ``α/m``), largest pair (the share of ``sum |d|`` carried by the largest pair, ``⚠`` above
    :func:`clkit.stats.skew_threshold`).

    Examples
    --------
    >>> from clkit.stats import paired
    >>> t = verdict_table([paired([1.0, 1.1, 0.9], [0.0, 0.1, 0.0], comparison="x")])
    >>> list(t.columns)
    ['role', 'effect', 'CI (simultaneous in its family)', 'p', 'n', 'decision', 'control', 'detectable', 'largest pair']
    """
    import pandas as pd

    rows = []
    for v in verdicts:
        fmt = f"{{:+.{digits}f}}"
        if np.isfinite(v.ci_low) and np.isfinite(v.ci_high):
            ci = f"{fmt.format(v.ci_low)} … {fmt.format(v.ci_high)} ({_level(v.ci_level)} %)"
        else:
            ci = "unbounded at this n" if v.decision != NOT_TESTABLE and v.n >= 2 else ""
        share = (f"{v.outlier_share:.2f}" + (" ⚠" if v.skewed else "")) if np.isfinite(v.outlier_share) else ""
        rows.append({
            "comparison": v.comparison, "role": v.role if v.role != "finding" or v.scope == "primary"
            else "exploratory",
            "effect": round(v.effect, digits) if np.isfinite(v.effect) else np.nan,
            CI_COLUMN: ci,
            "p": _p(v.p), "n": v.n, "decision": v.decision,
            "control": "" if v.control_ok is None else ("holds" if v.control_ok else "FAILS"),
            "detectable": (f"≥ {_num(v.mde)}" if np.isfinite(v.mde) and v.mde > 0 and not v.significant
                           else "none at this n" if v.mde == math.inf else ""),
            "largest pair": share,
        })
    return pd.DataFrame(rows).set_index("comparison")


def closing_text(verdicts: Sequence[Verdict], *, subject: str = "this run",
                 small_n: int | None = None, effect_sds: float = 2.0) -> str:
    """Markdown for a notebook's closing paragraph, generated from its verdicts.

    Controls are checked first, the null controls judged together (:func:`clkit.stats.judge_controls`):
    when a control of the primary comparisons (``scope="primary"``, the default) fails, the text says
    so and lists no findings; when only a control of exploratory comparisons fails, the exploratory
    differences are not listed. Each null control's detectable bias is then set beside the smallest
    finding it vouches for (:func:`clkit.stats.control_sensitivity`), saying when it could not have
    seen a defect of that size. Otherwise the primary findings are listed with their numbers, then the
    primary comparisons with no detected difference, the smallest effect each could detect (at
    ``α/m``) and how many pairs would detect the observed one; exploratory rows that differ are listed
    apart. A row whose largest pair carries more than :func:`clkit.stats.skew_threshold` of ``sum |d|``
    carries a caution. With ``small_n`` set, a row on fewer pairs is never read as a finding. Last, what the
    primary comparisons could detect: the power of each primary family to find an effect of
    ``effect_sds`` spreads of the differences at ``α/m``.

    Examples
    --------
    >>> from clkit.stats import paired
    >>> vs = [paired([0.30, 0.32, 0.31, 0.29], [0.0, 0.0, 0.0, 0.0], comparison="ER − Bare",
    ...              higher="ER higher", lower="Bare higher"),
    ...       paired([0.01, -0.02, 0.0, 0.01], [0.0, 0.0, 0.0, 0.0], comparison="Bare − Bare'",
    ...              role="null control", expect="no difference")]
    >>> print(closing_text(vs).splitlines()[0])
    **Controls hold** (1 of 1): Bare − Bare' came out 'no difference' as it must.
    """
    verdicts = judge_controls(verdicts)
    controls = [v for v in verdicts if v.control_ok is not None]
    findings = [v for v in verdicts if v.role == "finding"]
    enough = (lambda v: True) if small_n is None else (lambda v: v.n >= small_n)
    lines = []
    findings_ok = True
    if small_n is not None and verdicts and not any(enough(v) for v in verdicts):
        lines.append(f"**Too few pairs to conclude**: {subject} has at most "
                     f"{max(v.n for v in verdicts)} pair(s) per comparison (fewer than {small_n}); "
                     "the numbers below are shown, but no difference is read as a finding.")
        findings_ok = False
    ok, failed = controls_hold(verdicts)
    guarding = [v for v in failed if v.scope == "primary"]   # a primary family's control guards the findings
    exploring_ok = not any(v.scope == "exploratory" for v in failed)
    k = sum(v.family_name == "controls" for v in controls)
    together = f", the {k} null controls judged together (Holm over {k})" if k > 1 else ""
    if controls:
        if ok:
            lines.append(f"**Controls hold** ({len(controls)} of {len(controls)}{together}): "
                         + "; ".join(f"{v.comparison} came out '{v.decision}' as it must" for v in controls) + ".")
        else:
            lines.append(f"**Controls fail** ({len(failed)} of {len(controls)}{together}): "
                         + "; ".join(f"{v.comparison} came out '{v.decision}', must be '{v.expect}'"
                                     for v in failed)
                         + (f". The findings of {subject} cannot be read, so no difference below is read as a "
                            "finding." if guarding else
                            ". Only controls of exploratory comparisons failed: those comparisons are not read."))
            findings_ok = findings_ok and not guarding
    primary = [v for v in findings if v.scope == "primary" and enough(v)]
    exploratory = [v for v in findings if v.scope == "exploratory" and enough(v)] if exploring_ok else []
    small = [v for v in findings if not enough(v) and v.decision != NOT_TESTABLE]
    sig = [v for v in primary if v.significant]
    null = [v for v in primary if v.decision == NO_DIFFERENCE]
    untestable = [v for v in findings if v.decision == NOT_TESTABLE]
    if findings_ok:
        if sig:
            lines.append("**Findings** (" + f"{len(sig)} of {len(primary)}): " + " ".join(v.wording for v in sig))
            if any(v.family > 1 for v in sig):
                lines.append(_interval_note(sig))
        elif primary:
            lines.append(f"**No finding**: none of the {len(primary)} comparison(s) differs under the rule.")
        sens = [control_sensitivity(c, sig) for c in controls if c.role == "null control" and c.scope == "primary"]
        sens = [s["text"] for s in sens if s["text"]]
        if sens:
            lines.append("**What the controls could see**: " + " ".join(sens))
        if null:
            lines.append("**No difference detected**: " + "; ".join(_null_text(v) for v in null) + ".")
        moved = [v for v in exploratory if v.significant]
        if moved:
            lines.append("**Exploratory** (shown beside the claims, not findings): "
                         + " ".join(v.wording for v in moved))
        if small:
            lines.append(f"**Too few pairs** (fewer than {small_n}; shown, not findings): " + "; ".join(
                f"{v.comparison} {_num(v.effect, True)} ({_p_text(v.p)}, n = {v.n})" for v in small) + ".")
    else:
        lines.append("Measured differences (not findings): " + "; ".join(
            f"{v.comparison} {_num(v.effect, True)} ({_p_text(v.p)})" for v in findings if v.n) + ".")
    if untestable:
        lines.append("**Not testable**: " + "; ".join(f"{v.comparison} ({v.note})" for v in untestable) + ".")
    reach = family_power_text(primary, effect_sds)
    if reach and findings_ok:
        lines.append(reach)
    return "\n\n".join(lines)


def _interval_note(sig: Sequence[Verdict]) -> str:
    """What a family's intervals mean, and what a finding whose interval touches 0 means."""
    touching = [v for v in sig if v.ci_low <= 0 <= v.ci_high]
    text = ("Intervals in a family of m are simultaneous at 1 − α/m (together they cover every true effect "
            "with probability ≥ 95 %).")
    if touching:
        text += (" " + ", ".join(v.comparison for v in touching) + (" is" if len(touching) == 1 else " are")
                 + " decided by Holm's step-down test at a level above α/m: the direction is supported, while "
                 "its simultaneous interval still reaches 0, so its size may be close to none.")
    return text


def _null_text(v: Verdict) -> str:
    text = f"{v.comparison} ({_num(v.effect, True)}, {_p_text(v.p)}"
    if np.isfinite(v.mde) and v.mde > 0:
        text += f", detectable ≥ {_num(v.mde)}"
    need = v.pairs_for_observed
    if need is not None and need > v.n:
        text += f"; about {need} pairs would detect it"
    if v.skewed:
        text += f"; one pair carries {100 * v.outlier_share:.0f} % of the total |difference|"
    return text + ")"


def family_power_text(verdicts: Sequence[Verdict], effect_sds: float = 2.0) -> str:
    """What the primary comparisons could detect: per family (name, size ``m``, pairs ``n``), the power
    of the paired t-test at ``alpha / m`` (where Holm decides a row whatever the others do) to find an
    effect of ``effect_sds`` spreads of the differences (and how many pairs 80 % power would take when
    it is short of it).

    Examples
    --------
    >>> from clkit.stats import holm, paired
    >>> vs = holm([paired([0.3, 0.1, 0.2, 0.25], [0.0] * 4, comparison=c) for c in "abc"], name="main")
    >>> print(family_power_text(vs))
    **What the run could detect**: main (3 comparisons, 4 pairs): an effect of 2 spreads with 44 % power at α/3 (80 % would take 6 pairs).
    """
    groups: dict = {}
    for v in verdicts:
        if v.role == "finding" and v.scope == "primary" and v.decision != NOT_TESTABLE and v.n >= 2:
            groups.setdefault((v.family_name, v.family), []).append(v)
    parts = []
    for (name, m), rows in groups.items():
        n = min(v.n for v in rows)
        pw = power(n, effect_sds, rows[0].alpha / max(m, 1))
        need = pairs_needed(effect_sds, 1.0, family=m, alpha=rows[0].alpha)
        what = name or ", ".join(v.comparison for v in rows[:2]) + (" ..." if len(rows) > 2 else "")
        text = (f"{what} ({m} comparison{'s' if m != 1 else ''}, {n} pairs): an effect of {effect_sds:g} spreads "
                f"with {100 * pw:.0f} % power at α" + (f"/{m}" if m > 1 else ""))
        if pw < POWER and need is not None:
            text += f" ({round(100 * POWER)} % would take {need} pairs)"
        parts.append(text)
    return ("**What the run could detect**: " + "; ".join(parts) + ".") if parts else ""

