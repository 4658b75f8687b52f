"""Notebook 03's report: the backward view, the Stability Horizon facts and their texts.

Beyond the paper: ``backward_summary`` reads ``A(t, tau)`` for ``tau < t`` (accuracy on past
periods, forgetting); ``stability_facts`` tells the two SH facts from the numbers;
``backward_text`` and ``part1_table`` word / tabulate what the notebook shows.
"""

from __future__ import annotations

import warnings

import numpy as np

from .metrics import _accuracy_matrix, summarize_learner, transfer_ratio

__all__ = ["backward_summary", "backward_table", "stability_facts", "backward_text", "part1_table",
           "horizons_table", "learner_table", "closing_text", "horizon_unit", "learner_column", "FRACTION"]


# --------------------------------------------------------------------------- the backward view

def backward_summary(A) -> dict:
    """The backward view of A(t, tau): accuracy on *past* periods (tau < t), beyond the paper.

    The paper's metrics (TTR, SH, DH, TAS) look only forward (tau >= t), so a method that
    keeps what it learned can only show there as a cost. This view shows the benefit:

    * backward accuracy ``BA(t) = mean_{tau < t} A(t, tau)`` (t >= 1): after training on
      t, how well the model still does on the periods before it;
    * forgetting of period tau ``F(tau) = max_{tau <= t < T-1} A(t, tau) - A(T-1, tau)``
      (tau < T-1; Chaudhry et al.'s definition): the drop from its best to the end.

    Parameters
    ----------
    A : array_like, shape (T, T)
        With the cells tau < t evaluated (:func:`accuracy_matrix` with ``backward=True``).

    Returns
    -------
    dict
        ``backward_accuracy`` (mean of BA over t >= 1), ``final_backward_accuracy``
        (BA(T-1)), ``forgetting`` (mean of F), ``max_forgetting``, and ``per_period`` with
        the lists ``backward_accuracy`` (NaN at t = 0) and ``forgetting`` (NaN at T-1).
        All NaN (and ``evaluated: False``) when ``A`` has no backward cell, as for a
        matrix from the paper's protocol.

    Examples
    --------
    >>> A = [[0.9, 0.2, 0.1], [0.6, 0.8, 0.3], [0.5, 0.7, 0.9]]
    >>> s = backward_summary(A)
    >>> [round(x, 3) for x in s["per_period"]["backward_accuracy"][1:]], round(s["backward_accuracy"], 3)
    ([0.6, 0.6], 0.6)
    >>> [round(x, 3) for x in s["per_period"]["forgetting"][:2]], round(s["forgetting"], 3)
    ([0.4, 0.1], 0.25)
    """
    A = _accuracy_matrix(A)
    T = A.shape[0]
    lower = A[np.tril_indices(T, -1)]
    nan_T = [float("nan")] * T
    if T < 2 or not np.isfinite(lower).any():
        return {"evaluated": False, "backward_accuracy": float("nan"), "final_backward_accuracy": float("nan"),
                "forgetting": float("nan"), "max_forgetting": float("nan"),
                "per_period": {"backward_accuracy": nan_T, "forgetting": nan_T}}
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # rows/columns without a cell give NaN
        ba = np.array([np.nanmean(A[t, :t]) if t else np.nan for t in range(T)])
        fg = np.array([np.nanmax(A[tau:T - 1, tau]) - A[T - 1, tau] for tau in range(T - 1)] + [np.nan])
    return {"evaluated": True,
            "backward_accuracy": float(np.nanmean(ba[1:])), "final_backward_accuracy": float(ba[-1]),
            "forgetting": float(np.nanmean(fg[:-1])), "max_forgetting": float(np.nanmax(fg[:-1])),
            "per_period": {"backward_accuracy": ba.tolist(), "forgetting": fg.tolist()}}


def backward_table(summaries: dict):
    """One row per learner: mean backward accuracy, final backward accuracy, mean and max forgetting.

    ``summaries``: ``{learner: backward_summary(A)}``; learners without backward cells
    (user matrices) are left out. Every header names its unit: accuracies and forgetting
    are fractions (0-1; forgetting a difference of accuracies, in the same unit).

    Examples
    --------
    >>> s = backward_summary([[0.9, 0.2], [0.6, 0.8]])
    >>> backward_table({"ft": s}).round(2).to_dict("records")  # doctest: +NORMALIZE_WHITESPACE
    [{'backward accuracy (fraction)': 0.6, 'final backward accuracy (fraction)': 0.6,
      'forgetting (fraction)': 0.3, 'max forgetting (fraction)': 0.3}]
    """
    import pandas as pd

    return pd.DataFrame({name: {f"backward accuracy {FRACTION}": s["backward_accuracy"],
                                f"final backward accuracy {FRACTION}": s["final_backward_accuracy"],
                                f"forgetting {FRACTION}": s["forgetting"], f"max forgetting {FRACTION}": s["max_forgetting"]}
                         for name, s in summaries.items() if s.get("evaluated")}).T


def stability_facts(rows: dict, baseline: dict, acc: dict, *, delta: float, oracle=None,
                    periods=None) -> str:
    """Sentences on what the mean Stability Horizon measures in this run, from the numbers.

    Two checks the paper's tables invite: (1) the no-learning baseline's Eq. 3 SH beside
    the learners' range -- a baseline above every learner means a long SH is no sign of
    learning; (2) where the learners' rows first fall below ``delta``: when most rows of
    every learner first cross at the *same* test period, mean SH mostly measures the
    distance to one event in the data.

    Parameters
    ----------
    rows : {learner: summarize_learner(...)}
    baseline : summarize_learner(...) of the majority-class baseline
    acc : {learner: A}
    periods : list, optional
        Period labels for the text (default: indices).

    Examples
    --------
    >>> A = np.array([[1.0, 1.0, 0.5], [np.nan, 1.0, 0.5], [np.nan, np.nan, 1.0]])
    >>> r = {"ft": summarize_learner(A, delta=0.9, epsilon=0.01, lam=0.1, n=1)}
    >>> b = summarize_learner(np.ones((3, 3)), delta=0.9, epsilon=0.01, lam=0.1, n=1)
    >>> print(stability_facts(r, b, {"ft": A}, delta=0.9))  # doctest: +NORMALIZE_WHITESPACE
    The majority-class baseline's Eq. 3 SH is 1.50, above every learner (0.50–0.50): a long
    Stability Horizon here is no sign of learning. Every learner's rows before test period 2
    first fall below δ = 0.9 at test period 2 (2 of 2 such rows), so the mean SH mostly
    measures the distance to that one period.
    """
    names = [m for m in rows if m != "erm"] or list(rows)
    sh3 = {m: rows[m]["sh_eq3"] for m in names}
    lo, hi = min(sh3.values()), max(sh3.values())
    b = baseline["sh_eq3"]
    where = ("above every learner" if b > hi else "below every learner" if b < lo else "within the learners' range")
    text = (f"The majority-class baseline's Eq. 3 SH is {b:.2f}, {where} ({lo:.2f}–{hi:.2f})"
            + (": a long Stability Horizon here is no sign of learning." if b > hi else "."))
    firsts = {}
    for m in names:
        g = transfer_ratio(acc[m], oracle)
        T = g.shape[0]
        f = []
        for t in range(T - 1):
            below = [tau for tau in range(t, T) if np.isfinite(g[t, tau]) and g[t, tau] < delta]
            f.append(below[0] if below else None)
        firsts[m] = f
    counts = {}
    for f in firsts.values():
        for tau in f:
            if tau is not None:
                counts[tau] = counts.get(tau, 0) + 1
    if not counts:
        return text + f" No learner's row falls below δ = {delta}."
    tau_star = max(counts, key=lambda k: (counts[k], -k))
    label = periods[tau_star] if periods is not None else tau_star
    rows_before = [(m, [x for t, x in enumerate(f) if t < tau_star]) for m, f in firsts.items()]
    hit = sum(sum(x == tau_star for x in f) for _, f in rows_before)
    total = sum(len(f) for _, f in rows_before)
    every = all(f and all(x == tau_star for x in f) for _, f in rows_before)
    share = hit / total if total else 0.0
    if every:
        text += (f" Every learner's rows before test period {label} first fall below δ = {delta} at test "
                 f"period {label} ({hit} of {total} such rows), so the mean SH mostly measures the distance "
                 "to that one period.")
    else:
        text += (f" The most common first crossing below δ = {delta} is test period {label}: {hit} of the "
                 f"{total} learner rows before it ({share:.0%}) first cross there"
                 + (", so the mean SH largely measures the distance to that one period." if share >= 0.5 else "."))
    return text


def backward_text(summaries: dict, rows: dict, verdicts=(), seed: int = 0, small_n: int = 4) -> str:
    """Sentences on the backward view beside the forward TAS, from the numbers.

    The ranges are seed ``seed``'s (the tables' run). Where ``verdicts`` hold the backward rows
    (:func:`clkit.temporal.verdicts.verdicts`: backward accuracy and forgetting, exploratory), the
    text says over how many seeds they were compared with finetune and which differ under the rule
    (none is read when the exploratory controls fail, nor on fewer than ``small_n`` seeds); without
    them it says that these are descriptions of one seed.

    Examples
    --------
    >>> b = {"finetune": backward_summary([[0.9, 0.2], [0.5, 0.8]]),
    ...      "ewc": backward_summary([[0.9, 0.2], [0.8, 0.7]])}
    >>> r = {"finetune": {"tas": 0.6}, "ewc": {"tas": 0.55}}
    >>> print(backward_text(b, r))  # doctest: +NORMALIZE_WHITESPACE
    Backward view (beyond the paper): mean accuracy on past periods ranges from 50.0% (finetune)
    to 80.0% (ewc), mean forgetting from 10.0% (ewc) to 40.0% (finetune); the forward TAS of the
    same learners ranges from 55.0% (ewc) to 60.0% (finetune). These are one seed's values (seed 0),
    descriptions, not tested differences.
    """
    from .. import stats

    ok = {m: s for m, s in summaries.items() if s.get("evaluated") and m != "erm"}
    if not ok:
        return "No learner has backward cells (user matrices follow the paper's forward protocol)."
    ba = {m: s["backward_accuracy"] for m, s in ok.items()}
    fg = {m: s["forgetting"] for m, s in ok.items()}
    tas = {m: rows[m]["tas"] for m in ok if m in rows}
    lo_b, hi_b = min(ba, key=ba.get), max(ba, key=ba.get)
    lo_f, hi_f = min(fg, key=fg.get), max(fg, key=fg.get)
    text = (f"Backward view (beyond the paper): mean accuracy on past periods ranges from {ba[lo_b]:.1%} "
            f"({lo_b}) to {ba[hi_b]:.1%} ({hi_b}), mean forgetting from {fg[lo_f]:.1%} ({lo_f}) to "
            f"{fg[hi_f]:.1%} ({hi_f})")
    if tas:
        lo_t, hi_t = min(tas, key=tas.get), max(tas, key=tas.get)
        text += (f"; the forward TAS of the same learners ranges from {tas[lo_t]:.1%} ({lo_t}) to "
                 f"{tas[hi_t]:.1%} ({hi_t})")
    judged = [v for v in verdicts if v.role == "finding" and v.comparison.startswith(("backward accuracy:",
                                                                                      "forgetting:"))]
    if not judged:
        return text + f". These are one seed's values (seed {seed}), descriptions, not tested differences."
    controls = [v for v in verdicts if v.role != "finding" and v.scope == judged[0].scope]
    n = min(v.n for v in judged)
    text += f". These are seed {seed}'s values; the {len(judged)} exploratory rows above compare them with finetune " \
            f"over {n} seeds: "
    if not stats.controls_hold(controls)[0]:
        return text + "their null controls fail, so no difference is read there."
    moved = [v for v in judged if v.significant and v.n >= small_n]
    return text + ("; ".join(f"{v.comparison}: {v.decision}" for v in moved) if moved
                   else "none differs under the rule") + " (exploratory, not findings)."


def horizon_unit(dataset: str, period_length: int = 1) -> str:
    """The unit of SH and DH (counted in periods) in notebook 03's own tables: ``"years"`` where a period is a year.

    :func:`clkit.temporal.tables.period_unit` decides (Wild-Time's yearly streams with
    ``period_length`` 1, the rainfall stream with 365 days a period); else ``"periods"``.

    Examples
    --------
    >>> horizon_unit("fmow", 1), horizon_unit("yearbook", 2), horizon_unit("rainfall", 365)
    ('years', 'periods', 'years')
    """
    from .tables import period_unit

    return "years" if period_unit(dataset, period_length) == "y" else "periods"


def part1_table(part1: dict):
    """Part 1's table: ID, OOD, TAS, SH, SH (Eq. 3), DH and the ID-OOD gap per stream and source.

    ``part1`` is ``{stream: {"true": summary, "erm": summary}}`` of :func:`summarize_learner`
    summaries. Returns a DataFrame indexed by (stream, source); every header names its unit:
    accuracies and the gap are fractions (0-1), SH and DH periods (Part 1's synthetic streams
    have no calendar).

    Examples
    --------
    >>> from clkit.temporal import summarize_learner
    >>> s = summarize_learner([[0.9, 0.7], [np.nan, 0.8]], n=1, horizon=1, delta=0.5, epsilon=0.02, lam=0.15)
    >>> list(part1_table({"toy": {"true": s, "erm": s}}).columns)  # doctest: +NORMALIZE_WHITESPACE
    ['ID (fraction)', 'OOD (fraction)', 'TAS (fraction)', 'SH (periods)', 'SH (Eq. 3) (periods)', 'DH (periods)',
     'ID-OOD gap (fraction)']
    """
    import pandas as pd

    table = pd.DataFrame({(name, src): {k: part1[name][src][k] for k in ("id", "ood", "tas", "sh", "sh_eq3", "dh")}
                          for name in part1 for src in ("true", "erm")}).T
    table["ID-OOD gap"] = table["id"] - table["ood"]
    table.columns = [f"ID {FRACTION}", f"OOD {FRACTION}", f"TAS {FRACTION}", "SH (periods)", "SH (Eq. 3) (periods)",
                     "DH (periods)", f"ID-OOD gap {FRACTION}"]
    return table


def horizons_table(rows: dict, learners, periods, unit: str = "periods"):
    """SH and DH (integers, in ``unit``: :func:`horizon_unit`) per training period (all but the last) per learner.

    Examples
    --------
    >>> rows = {"ft": {"per_period": {"sh": [1, 2, 0], "dh": [2, 2, 0]}}}
    >>> list(horizons_table(rows, ["ft"], [2000, 2001, 2002], unit="years").columns)
    [('ft', 'SH (years)'), ('ft', 'DH (years)')]
    """
    import pandas as pd

    return pd.DataFrame({(name, f"{key.upper()} ({unit})"): [int(v) for v in rows[name]["per_period"][key][:-1]]
                         for name in learners for key in ("sh", "dh")},
                        index=pd.Index(list(periods)[:-1], name="training period"))


def learner_table(rows: dict, baseline: dict, chance: float, unit: str = "periods"):
    """Every metric of the paper's Tables 1 and 2 per learner (and SH by Eq. 3), the baselines as last rows.

    Every header names its unit: accuracies (ID, OOD, TAS and their minima) are fractions (0-1),
    SH and DH are in ``unit`` (:func:`horizon_unit`: years on Wild-Time's yearly streams).
    The paper's own layouts (rows, labels, units, seed spread): :func:`clkit.temporal.tables.paper_table`.

    Examples
    --------
    >>> r = {"id": .8, "ood": .7, "ood_min": .6, "tas": .9, "tas_min": .8, "sh": 2., "sh_eq3": 2., "dh": 3.}
    >>> t = learner_table({"ft": r}, r, 0.5, unit="years")
    >>> list(t.columns)  # doctest: +NORMALIZE_WHITESPACE
    ['ID (fraction)', 'OOD (fraction)', 'OOD min (fraction)', 'TAS (fraction)', 'TAS min (fraction)',
     'SH (years)', 'SH (Eq. 3) (years)', 'DH (years)']
    >>> list(t.index)
    ['ft', 'majority (baseline)', 'chance (baseline)']
    """
    import pandas as pd

    keys = ("id", "ood", "ood_min", "tas", "tas_min", "sh", "sh_eq3", "dh")
    table = pd.DataFrame({name: {k: r[k] for k in keys} for name, r in rows.items()}).T
    table.loc["majority (baseline)"] = [baseline[k] for k in keys]
    table.loc["chance (baseline)"] = [chance, chance, chance] + [np.nan] * 5
    table.columns = [learner_column(k, unit) for k in keys]
    return table


#: the unit of notebook 03's accuracy columns
FRACTION = "(fraction)"

_LABELS = {"id": "ID", "ood": "OOD", "ood_min": "OOD min", "tas": "TAS", "tas_min": "TAS min", "sh": "SH",
           "sh_eq3": "SH (Eq. 3)", "dh": "DH"}


def learner_column(key: str, unit: str = "periods") -> str:
    """:func:`learner_table`'s header of metric ``key``, unit included.

    Examples
    --------
    >>> learner_column("ood"), learner_column("sh_eq3", "years")
    ('OOD (fraction)', 'SH (Eq. 3) (years)')
    """
    return f"{_LABELS[key]} " + (f"({unit})" if key in ("sh", "sh_eq3", "dh") else FRACTION)


def closing_text(*, dataset_name: str, rows: dict, table, baseline: dict, chance: float, n: int, seed: int,
                 delta: float, horizon: int, verdict_seeds: int = 0) -> str:
    """Notebook 03's "What this run shows" paragraph, generated from its numbers.

    ``table`` is :func:`learner_table`'s DataFrame; ``rows`` the learners' summaries;
    ``horizon`` the effective ``H`` (DH's sentinel is ``H + 1``); ``verdict_seeds`` the seeds the
    verdicts compared (0: none ran, and the differences are one seed's descriptions).
    """
    learned = table.loc[list(rows)]
    learned = learned.set_axis([c[:c.rfind(" (")] for c in learned.columns], axis=1)  # headers less their units
    T = len(next(iter(rows.values()))["per_period"]["id"])
    ref = "erm" if "erm" in rows else next(iter(rows))
    id_trend = np.polyfit(np.arange(T), rows[ref]["per_period"]["id"], 1)[0]
    n_above = int((learned["OOD"] > baseline["ood"]).sum())
    return (
        f"On **{dataset_name}** ({T} periods), the ID accuracy of {ref} changes by "
        f"{id_trend * (T - 1):+.3f} over the stream (linear-fit slope × (T − 1)) — that part of "
        f"any decline is intrinsic difficulty, which TAS factors out. "
        f"Across learners, OOD accuracy ranges from {learned['OOD'].min():.1%} to "
        f"{learned['OOD'].max():.1%}; the no-learning majority-class baseline reaches "
        f"{baseline['ood']:.1%} (chance {chance:.1%}), and {n_above} of {len(learned)} learners "
        f"are above it. TAS ranges from {learned['TAS'].min():.1%} (**{learned['TAS'].idxmin()}**) to "
        f"{learned['TAS'].max():.1%} (**{learned['TAS'].idxmax()}**) on the next {n} periods "
        + (f"(seed {seed}; the verdicts above test the differences from finetune over {verdict_seeds} seeds). "
           if verdict_seeds >= 2 else f"(seed {seed} alone: descriptions, not tested differences). ") +
        f"First-crossing Stability Horizons average {learned['SH'].min():.2f}–"
        f"{learned['SH'].max():.2f} periods at δ = {delta} (Eq. 3 read literally: "
        f"{learned['SH (Eq. 3)'].min():.2f}–{learned['SH (Eq. 3)'].max():.2f}), and the Drift "
        f"Horizon averages {learned['DH'].min():.2f}–{learned['DH'].max():.2f} (sentinel "
        f"{horizon + 1} = never crossed). Part 1 showed, on data with known ground "
        "truth, how TAS reads: a falling ID/OOD pair with a steady TAS means harder data, a "
        "falling TAS means adaptation lag.")
