"""The EDGE paper's Tables 1-2 layout, filled from a run's protocol evaluation.

The paper's Tables 1 (pre-trained methods) and 2 (non-pre-trained) give, per method
(columns), the true minimum and maximum accuracy over all sequences with the minimum and
maximum each protocol (RS, EDGE) saw, then ``JSD_RS``, ``JSD_EDGE``, ``W_RS`` and ``W_EDGE``:
the distances between each protocol's Gaussian estimate and the true distribution.
:func:`paper_table` lays a run's numbers out the same way (rows and columns as printed in
the paper); :data:`UNITS` says how its units relate to the paper's, which the paper itself
states two ways.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["paper_table", "draw_table", "UNITS", "ROWS"]

#: the paper's row labels, in its order, each with its unit (issue 55), and what each reads from a
#: protocol's record. RS's rows and every distance are of one draw (the paper's three seeds): the
#: draw-averaged paired effects with their intervals are :func:`draw_table`'s.
ROWS = (("min (truth), %", "truth", "min"), ("min RS, % (one draw)", "RS", "min"), ("min EDGE, %", "EDGE", "min"),
        ("max (truth), %", "truth", "max"), ("max RS, % (one draw)", "RS", "max"), ("max EDGE, %", "EDGE", "max"),
        ("JSD_RS, bits (one draw)", "RS", "jsd"), ("JSD_EDGE, bits (one draw)", "EDGE", "jsd"),
        ("W_RS, % points (one draw)", "RS", "wasserstein"), ("W_EDGE, % points (one draw)", "EDGE", "wasserstein"))

#: how this table's units relate to the paper's
UNITS = ("Units: accuracies in % (as the paper). JSD in bits, in [0, 1] (the paper defines JSD as bounded "
         "by ln 2, i.e. in nats, yet quotes its Table A4 value in bits; nats = bits x 0.693). W is the "
         "first-order Wasserstein distance in accuracy points (the paper's definition; its appendix also "
         "calls W_d the 2-Wasserstein distance). The JSD's discretisation (10 bins over the true range plus "
         "two tail bins) is clkit's choice (clkit.edge.estimation): the paper does not fix it, so its JSD "
         "values compare with ours in direction, not digit for digit. Rows marked 'one draw' come from the "
         "paper's three seeds alone, which decides nothing: the key numbers are the draw-averaged paired "
         "differences EDGE − RS with their intervals (clkit.edge.tables.draw_table).")


def paper_table(protocols: dict, learners=None, *, digits: int = 2) -> pd.DataFrame:
    """The paper's Tables 1-2 layout: one column per learner, the paper's ten rows.

    Parameters
    ----------
    protocols : dict
        ``{"learner/protocol": {"min", "max", "jsd", "wasserstein", ...}}`` as a run records it
        (``results["protocols"]``, from :func:`clkit.edge.report.evaluate_protocols`), with
        ``"learner/truth"`` rows holding the true ``min`` and ``max``. EDGE's rows are
        averaged over its S-ties there.
    learners : sequence of str, optional
        Columns, in order (default: every learner with a truth row, in record order).
    digits : int
        Rounding of the shown values.

    Returns
    -------
    pandas.DataFrame
        Index: :data:`ROWS`' labels; columns: the learners. A protocol a run did not
        evaluate is left NaN.

    Examples
    --------
    >>> rec = {"ewc/truth": {"min": 50.0, "max": 70.0}, "ewc/RS": {"min": 55.0, "max": 65.0, "jsd": 0.3,
    ...        "wasserstein": 2.0}, "ewc/EDGE": {"min": 51.0, "max": 69.0, "jsd": 0.2, "wasserstein": 1.5}}
    >>> paper_table(rec).index[6]
    'JSD_RS, bits (one draw)'
    >>> paper_table(rec)["ewc"].tolist()
    [50.0, 55.0, 51.0, 70.0, 65.0, 69.0, 0.3, 0.2, 2.0, 1.5]
    >>> paper_table(rec, ["lwf"])
    Traceback (most recent call last):
    ...
    ValueError: learners must be among the recorded ones ['ewc'], got ['lwf']
    """
    if not isinstance(protocols, dict):
        raise TypeError(f"protocols must be a dict of 'learner/protocol' records, got {type(protocols).__name__}")
    recorded = [k.split("/", 1)[0] for k in protocols if k.endswith("/truth")]
    learners = recorded if learners is None else list(learners)
    missing = [n for n in learners if n not in recorded]
    if missing or not learners:
        raise ValueError(f"learners must be among the recorded ones {recorded}, got {missing or learners}")
    data = {n: [protocols.get(f"{n}/{proto}", {}).get(key, float("nan")) for _, proto, key in ROWS]
            for n in learners}
    return pd.DataFrame(data, index=[label for label, _, _ in ROWS]).astype(float).round(digits)


def draw_table(verdicts, *, digits: int = 3) -> pd.DataFrame:
    """The key numbers: per learner, EDGE − RS in W1 and JSD averaged over the paired draws, with intervals.

    Read from section 6's primary rows (:func:`clkit.edge.verdicts.judge_section6`): the mean over
    the draws of the paired difference, its interval (simultaneous in the family, its level in the
    header), the decision and the number of draws. Negative: EDGE closer. This is the table to copy;
    :func:`paper_table`'s distance rows are one draw.

    Parameters
    ----------
    verdicts : list of clkit.stats.Verdict
        Section 6's verdicts (other rows are ignored).
    digits : int

    Returns
    -------
    pandas.DataFrame
        Index: learners; per distance, columns ``"<d> EDGE − RS, <unit> (mean over n draws)"``,
        ``"<d> CI (<level> %)"`` and ``"<d> decision"``.

    Examples
    --------
    >>> from clkit.stats import paired, holm
    >>> vs = holm([paired([0.1, -0.3, 0.2, 0.4, 0.3], [0.0] * 5, comparison="ewc: W1 EDGE − RS",
    ...                   higher="RS closer", lower="EDGE closer"),
    ...            paired([-0.02, -0.03, -0.01, -0.025, -0.02], [0.0] * 5, comparison="ewc: JSD EDGE − RS",
    ...                   higher="RS closer", lower="EDGE closer")], name="primary")
    >>> t = draw_table(vs)
    >>> list(t.columns)[:2], t.loc["ewc", "JSD decision"]
    (['W1 EDGE − RS, % points (mean over 5 draws)', 'W1 CI (97.5 %)'], 'EDGE closer')
    """
    from .. import stats

    units = {"W1": "% points", "JSD": "bits"}
    rows: dict = {}
    for v in verdicts:
        if v.role != "finding" or v.scope != "primary" or ": " not in v.comparison:
            continue
        name, what = v.comparison.split(": ", 1)
        d = what.split(" ", 1)[0]
        if d not in units or not what.endswith("EDGE − RS"):
            continue
        row = rows.setdefault(name, {})
        row[f"{d} EDGE − RS, {units[d]} (mean over {v.n} draws)"] = round(v.effect, digits)
        ci = (f"{v.ci_low:+.{digits}f} … {v.ci_high:+.{digits}f}" if np.isfinite(v.ci_low) and np.isfinite(v.ci_high)
              else "unbounded")
        row[f"{d} CI ({stats._level(v.ci_level)} %)"] = ci
        row[f"{d} decision"] = v.decision
    if not rows:
        raise ValueError("verdicts hold no primary 'learner: W1/JSD EDGE − RS' row "
                         "(clkit.edge.verdicts.judge_section6)")
    return pd.DataFrame(rows).T
