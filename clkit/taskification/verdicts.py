"""The 01_taskification notebook's verdicts, decided by :mod:`clkit.stats`.

The paper makes two claims the notebook tests; they are its **primary** families, the only rows
that can be findings (each Holm-adjusted on its own, :data:`FAMILIES`):

- **Shorter tasks are more fragile** (its Tables 3-4: BPS 9d > 30d > 44d): BPS of every pair of
  *adjacent* splits (in the order of ``window_days``; the ranking is their chain), paired over
  series (the same values, cut two ways). Two comparisons for three splits: 6 series give 80 %
  power for an effect of 2 standard deviations of the differences at Holm's α/2.
- **The CL metrics differ across splits** (its Table 1: "the 30-day split yields the lowest error
  across all methods, whereas the 44-day split results in the strongest degradation"): every
  method's average MSE on adjacent splits, paired over seeds (seed ``s`` fixes initialisation and
  batch order for every method and split). Eight comparisons for four methods and three splits:
  7 seeds give 80 % power for 2 standard deviations at α/8.

Everything else is **exploratory** (own Holm families, shown with intervals, never findings):
BPS of the other split pairs and every split pair's BPS / null (beside the null: the ranking once
the mechanical part, shorter tasks being noisier on any stream, is divided out); every (method,
split) cell against the better no-learning baseline; EWC against Finetune (per split, forgetting
and average MSE, and EWC's average MSE relative to Finetune's, averaged over splits).

**Controls**, each judged alone at its nominal level (never in a family):

- *Null control* of the BPS rows: the first split's BPS on two independent shuffles of every
  series (:func:`~clkit.taskification.profiles.null_stream` with ``seed`` and ``seed + 1``, the
  same neighbourhood draws): identically distributed, the true difference is zero.
- *Oracle control* (synthetic stream only): the first split's BPS on the stream minus on its
  shuffle. The generator plants regime changes, bursts and daily / weekly cycles, so structure
  must lift BPS above the structureless twin ("stream more fragile"). On a user's stream or
  CESNET the same comparison is an exploratory row (its direction is not known in advance).
- *Null controls* of the CL rows: Finetune under seeds ``seed + s`` against Finetune under
  ``seed + cl_seeds + s`` on one split, on average MSE (primary) and on forgetting (beside
  the exploratory EWC rows): the same learner, data and protocol, only initialisation and batch
  order redrawn, so the true difference is zero. The split is the one where Finetune's seeds
  agree most (:func:`tightest_split`: the smallest seed sd of log average MSE over the main
  seeds), so that the control is at least as sharp as the rows it vouches for; on the noisiest
  split it would let through a one-arm bias the size of the largest finding.

**Scales**, chosen per metric in advance (:data:`clkit.stats.METRIC_SCALES`), never per run:
average MSE is tested on the log-ratio scale (``log a − log b``: one seed's blow-up makes MSE
differences skewed, their log ratios are not), its effect read as a ratio; forgetting, BPS and
the BPS / null ratios' differences on the difference scale (they may be 0 or negative).

**Pipeline checks** (:func:`pipeline_checks`) hold by construction unless the pipeline is broken:
the null stream holds the stream's values in another order, and the CL runs pair by seed with
complete error matrices. A failed one stops the findings as a failed control does
(:func:`clkit.taskification.report.verdict_text`).
"""

from __future__ import annotations

import numpy as np

from .. import stats

__all__ = ["FAMILIES", "MSE_SCALE", "split_verdicts", "cl_verdicts", "tightest_split", "null_split_of", "ewc_pairs",
           "pipeline_checks", "forgetting_share"]

#: the scale average MSE is tested on (chosen in advance, :func:`clkit.stats.scale_for`)
MSE_SCALE = stats.scale_for("mse")[0]

#: the Holm families, by key
FAMILIES = {
    "bps": "01 primary: BPS of adjacent splits (paired over series)",
    "bps_other": "01 exploratory: BPS of the other split pairs and BPS / null (paired over series)",
    "cl": "01 primary: average MSE of adjacent splits, per method (paired over seeds)",
    "cells": "01 exploratory: each (method, split) − the better no-learning baseline (avg MSE)",
    "ewc": "01 exploratory: EWC − Finetune (paired over seeds)",
}


def _pairs(names):
    """Adjacent and other pairs of splits, in the order given.

    Examples
    --------
    >>> _pairs(["9d", "30d", "44d"])
    ([('9d', '30d'), ('30d', '44d')], [('9d', '44d')])
    """
    names = list(names)
    adjacent = list(zip(names, names[1:]))
    other = [(a, b) for i, a in enumerate(names) for b in names[i + 2:]]
    return adjacent, other


def split_verdicts(aligned: dict, null: dict, null_again, *, oracle: bool = True, min_pairs: int = 4) -> list:
    """The BPS families (primary: adjacent splits; exploratory: the rest), with their controls.

    Parameters
    ----------
    aligned, null : dict split -> array of shape (num_series,)
        Per-series BPS of every split on the stream and on its shuffle (``seed``), splits in the
        order of ``window_days``.
    null_again : array of shape (num_series,)
        Per-series BPS of the first split on a second shuffle (``seed + 1``).
    oracle : bool
        Whether the stream is known to carry structure (the synthetic generator).
    min_pairs : int
        Below this many series the oracle row is reported as an exploratory row: with so few
        pairs the rule cannot reach significance even for a large effect, so an oracle there
        could only "fail" for lack of power.

    Returns
    -------
    list of Verdict
        The controls, the primary family, the exploratory family.

    Examples
    --------
    >>> al = {"2d": [0.9, 1.0, 1.1, 1.0], "4d": [0.5, 0.6, 0.5, 0.55]}
    >>> nu = {"2d": [0.3, 0.31, 0.29, 0.3], "4d": [0.2, 0.21, 0.2, 0.19]}
    >>> vs = split_verdicts(al, nu, [0.31, 0.29, 0.3, 0.3])
    >>> [(v.role, v.decision) for v in vs][:2]
    [('null control', 'no difference'), ('oracle control', 'stream more fragile')]
    >>> [(v.comparison, v.scope, v.family) for v in vs][2:]
    [('BPS 2d − 4d', 'primary', 1), ('BPS/null 2d − 4d', 'exploratory', 1)]
    """
    names = list(aligned)
    al = {n: np.asarray(aligned[n], dtype=float) for n in names}
    nu = {n: np.asarray(null[n], dtype=float) for n in names}
    first = names[0]
    is_oracle = oracle and len(nu[first]) >= min_pairs
    controls = [stats.paired(nu[first], np.asarray(null_again, dtype=float),
                             comparison=f"null BPS {first}: shuffle − another shuffle",
                             role="null control", expect=stats.NO_DIFFERENCE)]
    stream_vs_null = stats.paired(al[first], nu[first], comparison=f"BPS {first}: stream − shuffled stream",
                                  higher="stream more fragile", lower="shuffle more fragile",
                                  **(dict(role="oracle control", expect="stream more fragile") if is_oracle
                                     else dict(scope="exploratory")))
    adjacent, other = _pairs(names)

    def bps(a, b, scope):
        return stats.paired(al[a], al[b], comparison=f"BPS {a} − {b}", higher=f"{a} more fragile",
                            lower=f"{b} more fragile", scope=scope)

    primary = [bps(a, b, "primary") for a, b in adjacent]
    explo = [bps(a, b, "exploratory") for a, b in other]
    explo += [stats.paired(al[a] / nu[a], al[b] / nu[b], comparison=f"BPS/null {a} − {b}",
                           higher=f"{a} higher by ratio", lower=f"{b} higher by ratio", scope="exploratory")
              for a, b in adjacent + other]
    if not is_oracle:
        explo.append(stream_vs_null)
    else:
        controls.append(stream_vs_null)
    return controls + stats.holm(primary, name=FAMILIES["bps"]) + stats.holm(explo, name=FAMILIES["bps_other"])


def tightest_split(cl: dict, names, cl_seeds: int, method: str = "naive") -> str:
    """The split where ``method``'s seeds agree most: the smallest seed sd of ``log`` average MSE.

    The CL null control is run there (:func:`clkit.taskification.report.run_cl` with
    ``null_split``), chosen from the main seeds' spread before the null runs exist, on the scale
    the rows are tested on. Ties go to the earlier split.

    Examples
    --------
    >>> cl = {("naive", n, s): {"avg_mse": v} for n, vals in {"9d": [30, 380, 60], "30d": [10, 11, 10.5]}.items()
    ...       for s, v in enumerate(vals)}
    >>> tightest_split(cl, ["9d", "30d"], 3)
    '30d'
    """
    names = list(names)
    if cl_seeds < 2:
        return names[0]
    sd = {n: float(np.std(np.log([cl[(method, n, s)]["avg_mse"] for s in range(cl_seeds)]), ddof=1)) for n in names}
    return min(names, key=lambda n: (sd[n], names.index(n)))


def null_split_of(cl: dict, names, cl_seeds: int) -> str | None:
    """The split of the CL null control: among the splits with null runs (``("naive", split, cl_seeds + s)``
    for every ``s``), the tightest by the main seeds (:func:`tightest_split`); ``None`` without null runs.

    Null runs may be trained on one split (:func:`clkit.taskification.report.run_cl`'s ``null_split``)
    or on every split (``null_split="all"``, what a split grid can schedule before any result exists);
    the choice among them reads only the main seeds' spread, never the null runs' outcome.

    Examples
    --------
    >>> cl = {("naive", n, s): {"avg_mse": v} for n, vals in {"9d": [30, 380], "30d": [10, 11]}.items()
    ...       for s, v in enumerate(vals)}
    >>> null_split_of({**cl, ("naive", "9d", 2): {}, ("naive", "9d", 3): {}}, ["9d", "30d"], 2)
    '9d'
    >>> null_split_of({**cl, **{("naive", n, 2 + s): {} for n in ("9d", "30d") for s in range(2)}}, ["9d", "30d"], 2)
    '30d'
    """
    have = [n for n in names if all(("naive", n, cl_seeds + s) in cl for s in range(cl_seeds))]
    if not have:
        return None
    return have[0] if len(have) == 1 else tightest_split(cl, have, cl_seeds)


def cl_verdicts(cl: dict, baselines: dict, methods, names, labels: dict, cl_seeds: int) -> list:
    """The forecasting families (primary: average MSE of adjacent splits per method), with their controls.

    Parameters
    ----------
    cl : dict (method, split, s) -> {"avg_mse", "forgetting", ...}
        Run ``s`` used seed ``seed + s``. The null controls' runs are
        ``("naive", split, cl_seeds + s)`` for ``s < cl_seeds`` (when present), on the split
        :func:`null_split_of` picks.
    baselines : dict split -> {"constant_mean", "persistence_mean"}

    Returns
    -------
    list of Verdict
        The null controls (average MSE: primary; forgetting: exploratory), the primary family,
        then the exploratory ones (cells against the baselines; EWC − Finetune).

    Examples
    --------
    >>> mse = [5.0, 5.2, 4.9, 5.1, 5.1, 5.0, 5.2, 4.95]  # seeds 0-3, then the null control's 4-7 (both splits)
    >>> cl = {("naive", n, s): {"avg_mse": v if n == "2d" else mse[::-1][s], "forgetting": v / 50}
    ...       for n in ("2d", "4d") for s, v in enumerate(mse)}
    >>> base = {n: {"constant_mean": 9.0, "persistence_mean": 7.0} for n in ("2d", "4d")}
    >>> vs = cl_verdicts(cl, base, ["naive"], ["2d", "4d"], {"naive": "Finetune"}, 4)
    >>> [(v.comparison, v.scope, v.decision) for v in vs][1:4]  # doctest: +NORMALIZE_WHITESPACE
    [('Finetune 4d: seeds − other seeds (forgetting)', 'exploratory', 'no difference'),
     ('Finetune avg MSE 2d − 4d', 'primary', 'no difference'),
     ('Finetune 2d − best baseline (avg MSE)', 'exploratory', 'Finetune beats both baselines')]
    """
    seeds = range(cl_seeds)
    where = null_split_of(cl, names, cl_seeds)
    controls = []
    if where is not None:
        for key, scope in (("avg_mse", "primary"), ("forgetting", "exploratory")):
            controls.append(stats.paired([cl[("naive", where, s)][key] for s in seeds],
                                         [cl[("naive", where, cl_seeds + s)][key] for s in seeds],
                                         comparison=f"{labels['naive']} {where}: seeds − other seeds "
                                                    f"({'avg MSE' if key == 'avg_mse' else key})",
                                         role="null control", expect=stats.NO_DIFFERENCE, scope=scope,
                                         scale=MSE_SCALE if key == "avg_mse" else "difference"))

    def mse(m, n):
        return [cl[(m, n, s)]["avg_mse"] for s in seeds]

    adjacent, _ = _pairs(names)
    primary = [stats.paired(mse(m, a), mse(m, b), comparison=f"{labels[m]} avg MSE {a} − {b}",
                            higher=f"{labels[m]} higher on {a}", lower=f"{labels[m]} higher on {b}",
                            scale=MSE_SCALE)
               for m in methods for a, b in adjacent]
    cells = []
    for m in methods:
        for n in names:
            best = min(baselines[n]["constant_mean"], baselines[n]["persistence_mean"])
            cells.append(stats.paired(mse(m, n), [best] * cl_seeds, comparison=f"{labels[m]} {n} − best baseline "
                                      "(avg MSE)", higher="a baseline better",
                                      lower=f"{labels[m]} beats both baselines", scope="exploratory",
                                      scale=MSE_SCALE))
    out = controls + stats.holm(primary, name=FAMILIES["cl"]) + stats.holm(cells, name=FAMILIES["cells"])
    if "ewc" in methods and "naive" in methods:
        ewc = []
        for n in names:
            ewc.append(stats.paired([cl[("ewc", n, s)]["forgetting"] for s in seeds],
                                    [cl[("naive", n, s)]["forgetting"] for s in seeds],
                                    comparison=f"EWC − Finetune {n} (forgetting)",
                                    higher="EWC forgets more", lower="EWC forgets less", scope="exploratory"))
            ewc.append(stats.paired(mse("ewc", n), mse("naive", n), comparison=f"EWC − Finetune {n} (avg MSE)",
                                    higher="EWC worse", lower="EWC better", scope="exploratory", scale=MSE_SCALE))
        rel = ewc_pairs(cl, names, cl_seeds)["per_seed"]
        ewc.append(stats.paired(rel, None, comparison="EWC / Finetune − 1 (avg MSE, mean over splits)",
                                higher="EWC worse", lower="EWC better", scope="exploratory"))
        out += stats.holm(ewc, name=FAMILIES["ewc"])
    return out


def ewc_pairs(cl: dict, names, cl_seeds: int) -> dict:
    """EWC's average MSE against Finetune's in every (seed, split) pair, relative: ``EWC / Finetune − 1``.

    Returns
    -------
    dict
        ``relative`` (split -> per-seed list), ``higher`` (pairs where EWC's is higher), ``pairs``,
        ``low`` / ``high`` (the smallest and largest relative difference) and ``per_seed`` (each
        seed's mean over splits: the unit the rule pairs, since a seed is shared by every split).

    Examples
    --------
    >>> cl = {(m, n, s): {"avg_mse": 1.0 + (m == "ewc") * 0.1 * (s + 1)} for m in ("ewc", "naive")
    ...       for n in ("2d", "4d") for s in range(2)}
    >>> p = ewc_pairs(cl, ["2d", "4d"], 2)
    >>> p["higher"], p["pairs"], round(p["low"], 3), round(p["high"], 3), [round(x, 3) for x in p["per_seed"]]
    (4, 4, 0.1, 0.2, [0.1, 0.2])
    """
    rel = {n: [cl[("ewc", n, s)]["avg_mse"] / cl[("naive", n, s)]["avg_mse"] - 1 for s in range(cl_seeds)]
           for n in names}
    flat = np.array([v for n in names for v in rel[n]], dtype=float)
    return {"relative": rel, "higher": int((flat > 0).sum()), "pairs": int(flat.size),
            "low": float(flat.min()), "high": float(flat.max()),
            "per_seed": [float(np.mean([rel[n][s] for n in names])) for s in range(cl_seeds)]}


def pipeline_checks(values, seed: int, cl: dict, cl_seeds: int) -> list:
    """What holds by construction, checked: ``[{"check", "holds", "detail"}]``.

    - the null stream (:func:`~clkit.taskification.profiles.null_stream` with ``seed``) holds every
      series' values in another time order;
    - the CL runs pair: every (method, split) has a run for each of the ``cl_seeds`` seeds, and
      every run's error matrix ``M`` is complete (finite in every cell).

    Examples
    --------
    >>> x = np.arange(24.0).reshape(2, 12, 1)
    >>> cl = {("naive", "2d", s): {"M": [[1.0, 2.0], [1.5, 1.0]]} for s in range(2)}
    >>> [c["holds"] for c in pipeline_checks(x, 0, cl, 2)]
    [True, True]
    >>> pipeline_checks(x, 0, {**cl, ("ewc", "2d", 0): {"M": [[1.0, float("nan")], [1.0, 1.0]]}}, 2)[1]["detail"]
    "ewc 2d: seeds [0] of 2; non-finite cells in ['ewc|2d|0']"
    """
    from .profiles import null_stream

    values = np.asarray(values)
    shuffled = null_stream(values, seed)
    same = all(np.array_equal(np.sort(values[s], axis=0), np.sort(shuffled[s], axis=0)) for s in range(len(values)))
    moved = all(not np.array_equal(values[s], shuffled[s]) for s in range(len(values)))
    seeds: dict = {}
    for m, n, s in cl:
        if s < cl_seeds:
            seeds.setdefault((m, n), set()).add(s)
    missing = [f"{m} {n}: seeds {sorted(got)} of {cl_seeds}" for (m, n), got in seeds.items()
               if got != set(range(cl_seeds))]
    broken = [f"{m}|{n}|{s}" for (m, n, s), r in cl.items() if not np.isfinite(np.asarray(r["M"], float)).all()]
    problems = missing + ([f"non-finite cells in {broken}"] if broken else [])
    return [
        {"check": "the null stream holds the stream's values in another order", "holds": same and moved,
         "detail": (f"{len(values)} series" if same and moved else
                    "its values differ from the stream's" if not same else "a series kept its order")},
        {"check": "the CL runs pair by seed, each with a complete error matrix", "holds": not problems,
         "detail": "; ".join(problems) if problems else f"{len(seeds)} (method, split) x {cl_seeds} seeds"},
    ]


def forgetting_share(cl_mean: dict, method: str, names) -> dict:
    """Forgetting as a percentage of the average MSE, per split (seed means).

    Examples
    --------
    >>> forgetting_share({("naive", "2d"): {"forgetting": 0.01, "avg_mse": 5.0}}, "naive", ["2d"])
    {'2d': 0.2}
    """
    return {n: 100 * cl_mean[(method, n)]["forgetting"] / cl_mean[(method, n)]["avg_mse"] for n in names}
