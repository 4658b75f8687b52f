"""The 01_taskification notebook's verdicts, decided by :mod:`clkit.stats`.

Two families, each Holm-corrected as a whole (controls included):

**Splits (BPS), paired over series.** For every pair of splits ``(a, b)``: the per-series
BPS difference ``BPS_a − BPS_b`` (the paper's ranking) and the per-series ratio to the
null stream ``BPS_a / null_a − BPS_b / null_b`` (the ranking once the mechanical part,
shorter tasks being noisier on any stream, is divided out). Series pair the two splits:
the same values, cut two ways. The per-series ratio is ``bps[s] / null_bps[s]``; the
tables' "BPS / null" is the ratio of the means over series (close, not equal).

- *Null control*: the first split's BPS on two independent shuffles of every series
  (:func:`~clkit.taskification.profiles.null_stream` with ``seed`` and ``seed + 1``,
  the same neighbourhood draws). Both are BPS of a uniformly random time order of the
  same values, identically distributed, so the true difference is zero: it must come
  out "no difference".
- *Oracle control* (synthetic stream only): the first split's BPS on the stream minus
  on its shuffle. The generator plants regime changes, bursts and daily / weekly cycles,
  so structure must lift BPS above the structureless twin ("stream more fragile"). On a
  user's stream or CESNET the same comparison is a finding, not a control (its
  direction is not known in advance).

**Forecasting (CL), paired over seeds.** Seed ``s`` fixes the model initialisation and
batch order of every (method, split) run, so runs pair by seed.

- Every (method, split) cell against the better of the two no-learning baselines on
  average MSE (the baselines do not depend on the seed: a one-sample test of the cell's
  seeds against that number). "beats both baselines" needs a significant negative
  difference.
- EWC − Finetune (the ``naive`` learner) on forgetting and on average MSE, per split,
  when both ran: a family of its own (Holm over these rows only).
- *Null control*: Finetune under seeds ``seed + s`` against Finetune under seeds
  ``seed + cl_seeds + s`` on the first split: the same learner, data and protocol, only
  the initialisation and batch order redrawn, so the true difference in average MSE is
  zero. (A learner against itself with the *same* seed would differ by exactly 0 and
  test nothing.)

No oracle control exists for the CL family: no learner is known in advance to beat
persistence on this stream.
"""

from __future__ import annotations

import numpy as np

from .. import stats

__all__ = ["split_verdicts", "cl_verdicts", "forgetting_share"]


def split_verdicts(aligned: dict, null: dict, null_again, *, oracle: bool = True, min_pairs: int = 4) -> list:
    """Holm family of the splits' BPS ranking, with its null (and oracle) control.

    Parameters
    ----------
    aligned, null : dict split -> array of shape (num_series,)
        Per-series BPS of every split on the stream and on its shuffle (``seed``).
    null_again : array of shape (num_series,)
        Per-series BPS of the first split on a second shuffle (``seed + 1``).
    oracle : bool
        Whether the stream is known to carry structure (the synthetic generator).
    min_pairs : int
        Below this many series the oracle row is reported as a finding: with so few
        pairs (and Holm over the family) the rule cannot reach significance even for a
        large effect, so an oracle there could only "fail" for lack of power.

    Returns
    -------
    list of Verdict

    Examples
    --------
    >>> al = {"2d": [0.9, 1.0, 1.1, 1.0], "4d": [0.5, 0.6, 0.5, 0.55]}
    >>> nu = {"2d": [0.3, 0.31, 0.29, 0.3], "4d": [0.2, 0.21, 0.2, 0.19]}
    >>> vs = split_verdicts(al, nu, [0.31, 0.29, 0.3, 0.3])
    >>> [(v.role, v.decision) for v in vs][-2:]
    [('null control', 'no difference'), ('oracle control', 'stream more fragile')]
    """
    names = list(aligned)
    al = {n: np.asarray(aligned[n], dtype=float) for n in names}
    nu = {n: np.asarray(null[n], dtype=float) for n in names}
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            out.append(stats.paired(al[a], al[b], comparison=f"BPS {a} − {b}",
                                    higher=f"{a} more fragile", lower=f"{b} more fragile"))
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            out.append(stats.paired(al[a] / nu[a], al[b] / nu[b], comparison=f"BPS/null {a} − {b}",
                                    higher=f"{a} higher by ratio", lower=f"{b} higher by ratio"))
    first = names[0]
    out.append(stats.paired(nu[first], np.asarray(null_again, dtype=float),
                            comparison=f"null BPS {first}: shuffle − another shuffle",
                            role="null control", expect=stats.NO_DIFFERENCE))
    out.append(stats.paired(al[first], nu[first], comparison=f"BPS {first}: stream − shuffled stream",
                            higher="stream more fragile", lower="shuffle more fragile",
                            **(dict(role="oracle control", expect="stream more fragile")
                               if oracle and len(nu[first]) >= min_pairs else {})))
    return stats.holm(out)


def cl_verdicts(cl: dict, baselines: dict, methods, names, labels: dict, cl_seeds: int) -> list:
    """Holm family of the forecasting claims, with the seed-offset null control.

    Parameters
    ----------
    cl : dict (method, split, s) -> {"avg_mse", "forgetting", ...}
        Run ``s`` used seed ``seed + s``. The null control's runs are
        ``("naive", names[0], cl_seeds + s)`` for ``s < cl_seeds`` (when present).
    baselines : dict split -> {"constant_mean", "persistence_mean"}

    Examples
    --------
    >>> mse = [5.0, 5.2, 4.9, 5.1, 5.1, 5.0, 5.2, 4.95]  # seeds 0-3, then the null control's 4-7
    >>> cl = {("naive", "2d", s): {"avg_mse": v, "forgetting": 0.1} for s, v in enumerate(mse)}
    >>> base = {"2d": {"constant_mean": 9.0, "persistence_mean": 7.0}}
    >>> vs = cl_verdicts(cl, base, ["naive"], ["2d"], {"naive": "Finetune"}, 4)
    >>> [(v.comparison, v.decision) for v in vs]
    [('Finetune 2d − best baseline (avg MSE)', 'Finetune beats both baselines'), ('Finetune 2d: seeds − other seeds (avg MSE)', 'no difference')]
    """
    seeds = range(cl_seeds)
    out = []
    for m in methods:
        for n in names:
            best = min(baselines[n]["constant_mean"], baselines[n]["persistence_mean"])
            out.append(stats.paired([cl[(m, n, s)]["avg_mse"] for s in seeds], [best] * cl_seeds,
                                    comparison=f"{labels[m]} {n} − best baseline (avg MSE)",
                                    higher="a baseline better", lower=f"{labels[m]} beats both baselines"))
    n = names[0]
    if ("naive", n, cl_seeds) in cl:
        out.append(stats.paired([cl[("naive", n, s)]["avg_mse"] for s in seeds],
                                [cl[("naive", n, cl_seeds + s)]["avg_mse"] for s in seeds],
                                comparison=f"{labels['naive']} {n}: seeds − other seeds (avg MSE)",
                                role="null control", expect=stats.NO_DIFFERENCE))
    out = stats.holm(out)
    if "ewc" in methods and "naive" in methods:
        ewc = []
        for n in names:
            ewc.append(stats.paired([cl[("ewc", n, s)]["forgetting"] for s in seeds],
                                    [cl[("naive", n, s)]["forgetting"] for s in seeds],
                                    comparison=f"EWC − Finetune {n} (forgetting)",
                                    higher="EWC forgets more", lower="EWC forgets less"))
            ewc.append(stats.paired([cl[("ewc", n, s)]["avg_mse"] for s in seeds],
                                    [cl[("naive", n, s)]["avg_mse"] for s in seeds],
                                    comparison=f"EWC − Finetune {n} (avg MSE)",
                                    higher="EWC worse", lower="EWC better"))
        out += stats.holm(ewc)
    return out


def forgetting_share(cl_mean: dict, method: str, names) -> dict:
    """Forgetting as a percentage of the average MSE, per split (seed means).

    Examples
    --------
    >>> forgetting_share({("naive", "2d"): {"forgetting": 0.01, "avg_mse": 5.0}}, "naive", ["2d"])
    {'2d': 0.2}
    """
    return {n: 100 * cl_mean[(method, n)]["forgetting"] / cl_mean[(method, n)]["avg_mse"] for n in names}
