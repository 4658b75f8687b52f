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

import pandas as pd

__all__ = ["paper_table", "UNITS", "ROWS"]

#: the paper's row labels, in its order, and what each reads from a protocol's record
ROWS = (("min (truth)", "truth", "min"), ("min RS", "RS", "min"), ("min EDGE", "EDGE", "min"),
        ("max (truth)", "truth", "max"), ("max RS", "RS", "max"), ("max EDGE", "EDGE", "max"),
        ("JSD_RS", "RS", "jsd"), ("JSD_EDGE", "EDGE", "jsd"),
        ("W_RS", "RS", "wasserstein"), ("W_EDGE", "EDGE", "wasserstein"))

#: how this table's units relate to the paper's
UNITS = ("Units: accuracies in % (as the paper). JSD in bits, in [0, 1] (the paper defines JSD as bounded "
         "by ln 2, i.e. in nats, yet quotes its Table A4 value in bits; nats = bits x 0.693). W is the "
         "first-order Wasserstein distance in accuracy points (the paper's definition; its appendix also "
         "calls W_d the 2-Wasserstein distance). The JSD's discretisation (10 bins over the true range plus "
         "two tail bins) is clkit's choice (clkit.edge.estimation): the paper does not fix it, so its JSD "
         "values compare with ours in direction, not digit for digit.")


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
