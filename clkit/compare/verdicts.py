"""Verdicts on runs: the named comparisons paired over seeds, with a seed-vs-seed null control.

Every comparison is decided by :mod:`clkit.stats` (paired t over the runs' shared
``(seed, order, taskification)``, Holm within a family) -- this module only chooses what is
paired:

- **Findings**: ``A − B`` for each comparison, on each metric of
  :data:`clkit.compare.metrics.METRICS` that every run of both methods defines. The chosen
  ``metric`` (default ``acc``) forms the **primary** family; the others are **exploratory**
  (shown with their intervals, never listed as findings), as in notebook 03's verdicts.
- **Null control** per metric, in its family's scope: the control method (the reference)
  against itself. Both arms are independent draws of the same training process, so the rule
  must call it "no difference" (:func:`clkit.stats.controls_hold`). Two designs, the first
  preferred:

  * **paired** (``rerun``): a second set of the control method's runs trained again on the
    same keys ``(seed, order, taskification)`` -- same data split, another training seed --
    paired with the first key by key. It has as many pairs as the findings and the same pairing,
    so its detectable bias is on the findings' scale. By convention such runs are named
    ``<control>-rerun`` (:data:`RERUN_SUFFIX`) and found automatically; they are never compared
    as a method.
  * **split-half** (fallback, without a rerun): the control's runs grouped by
    ``(order, taskification)``, sorted by seed, the first half paired with the second half
    (seed ``s_k`` with ``s_{k + n/2}``): half as many pairs as the findings, and unpaired in the
    data (different splits), so it is blunter than the findings it guards; the row's note says
    so. It needs at least 4 runs of the control method (2 pairs); without them there is no control.
- **Mirrored metrics**: for one comparison, an exploratory metric whose paired differences are
  the exact negatives of an earlier metric's on every pair (forgetting is ``-BWT`` whenever no
  task's accuracy peaks after its own training step) is one hypothesis: it is tested once, under
  the earlier metric (:func:`clkit.stats.drop_sign_duplicates`, before Holm), whose note names the
  other. The null controls are judged together (:func:`clkit.stats.judge_controls`), each with
  ``guards`` naming the family it vouches for.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import stats
from .metrics import METRICS, run_metrics
from .runs import seed_key

__all__ = ["FAMILIES", "RERUN_SUFFIX", "unit_label", "rerun_of", "comparisons_for", "null_pairs", "rerun_pairs", "verdicts",
           "planner"]

#: scope -> the name of its Holm family
FAMILIES = {"primary": "compare primary", "exploratory": "compare exploratory"}
#: the name of a control method's rerun (same keys, another training seed): ``<control>-rerun``
RERUN_SUFFIX = "-rerun"


def rerun_of(methods, control: str) -> str | None:
    """The rerun method of ``control`` among ``methods`` (``control + RERUN_SUFFIX``), or ``None``.

    Examples
    --------
    >>> rerun_of(["naive", "ewc", "naive-rerun"], "naive"), rerun_of(["naive", "ewc"], "naive")
    ('naive-rerun', None)
    """
    name = f"{control}{RERUN_SUFFIX}"
    return name if name in set(methods) else None


def comparisons_for(methods, *, compare=None, reference=None) -> list:
    """The ``(A, B)`` pairs to decide: ``compare`` as given, else every method against ``reference``.

    Examples
    --------
    >>> comparisons_for(["ft", "ewc", "er"], reference="ft")
    [('ewc', 'ft'), ('er', 'ft')]
    >>> comparisons_for(["ft", "ewc"], compare=["ewc:ft"])
    [('ewc', 'ft')]
    """
    methods = list(methods)
    out = []
    if compare:
        for c in compare:
            pair = tuple(c.split(":")) if isinstance(c, str) else tuple(c)
            if len(pair) != 2 or not all(pair):
                raise ValueError(f"--compare must read A:B (two method names), got {c!r}")
            for m in pair:
                if m not in methods:
                    raise ValueError(f"--compare {c}: method {m!r} is not among the runs' methods {methods}")
            if pair[0] == pair[1]:
                raise ValueError(f"--compare {c}: a method against itself is the null control, not a comparison")
            out.append(pair)
        return list(dict.fromkeys(out))
    if reference is None:
        raise ValueError(f"name the comparisons (--compare A:B) or a --reference method among {methods}")
    if reference not in methods:
        raise ValueError(f"--reference {reference!r} is not among the runs' methods {methods}")
    out = [(m, reference) for m in methods if m != reference]
    if not out:
        raise ValueError(f"only the reference method {reference!r} was read: nothing to compare it with")
    return out


def _values(runs, method, key):
    return {r.key: run_metrics(r.R)[key] for r in runs if r.method == method}


def null_pairs(runs, method) -> list:
    """The null control's pairs of ``method``'s runs: ``[(run_a, run_b)]``, first half of each
    ``(order, taskification)`` group's seeds against the second half.

    Examples
    --------
    >>> from clkit.compare.runs import Run
    >>> rs = [Run("a", str(s), None, None, np.eye(2), f"a{s}.csv") for s in (3, 0, 2, 1, 4)]
    >>> [(x.seed, y.seed) for x, y in null_pairs(rs, "a")]
    [('0', '2'), ('1', '3')]
    """
    groups: dict = {}
    for r in runs:
        if r.method == method:
            groups.setdefault((r.order, r.taskification), []).append(r)
    out = []
    for g in sorted(groups, key=lambda k: tuple(seed_key(x) for x in k)):
        rs = sorted(groups[g], key=lambda r: seed_key(r.seed))
        half = len(rs) // 2
        out += list(zip(rs[:half], rs[half:2 * half]))
    return out


def rerun_pairs(runs, method, rerun) -> list:
    """The paired null control's pairs: ``[(run of method, run of rerun)]`` on every key both have,
    in seed order (the pairing of the findings).

    Examples
    --------
    >>> from clkit.compare.runs import Run
    >>> rs = [Run(m, str(s), None, None, np.eye(2), "x") for m in ("a", "a-rerun") for s in (1, 0, 2)]
    >>> [(x.seed, y.seed, y.method) for x, y in rerun_pairs(rs, "a", "a-rerun")]
    [('0', '0', 'a-rerun'), ('1', '1', 'a-rerun'), ('2', '2', 'a-rerun')]
    """
    first = {r.key: r for r in runs if r.method == method}
    second = {r.key: r for r in runs if r.method == rerun}
    keys = sorted(set(first) & set(second), key=lambda t: tuple(seed_key(x) for x in t))
    return [(first[k], second[k]) for k in keys]


def _directions(a, b, key):
    if key == "forgetting":
        return f"{a} forgets more", f"{a} forgets less"
    return f"{a} higher", f"{b} higher"


def verdicts(runs, comparisons, *, metric: str = "acc", control: str | None = None,
             rerun: str | None = None) -> list:
    """Per family (primary ``metric``, then the other metrics): null control, then the ``A − B`` rows.

    Parameters
    ----------
    runs : iterable of Run
        Checked runs (:func:`clkit.compare.checks.check_runs`): the compared methods share their keys.
    comparisons : list of (str, str)
    metric : str
        The primary metric, a key of :data:`clkit.compare.metrics.METRICS`.
    control : str, optional
        The method of the null control (default: the second method of the first comparison).
    rerun : str, optional
        The control's rerun method (same keys, another training seed): the paired null control.
        Default: ``control + RERUN_SUFFIX`` when such runs are present, else the split-half null.

    Returns
    -------
    list of clkit.stats.Verdict

    Examples
    --------
    >>> from clkit.compare.runs import Run
    >>> rng = np.random.default_rng(0)
    >>> def R(shift):
    ...     return np.tril(0.6 + 0.05 * rng.standard_normal((3, 3))) + shift * (np.arange(3) == 2)[:, None]
    >>> rs = [Run(m, str(s), None, None, R(0.1 if m == "b" else 0.0), "x") for m in "ab" for s in range(6)]
    >>> vs = verdicts(rs, [("b", "a")])
    >>> [(v.comparison, v.role, v.decision, v.n) for v in vs[:2]]
    [('ACC: a − a (other seeds)', 'null control', 'no difference', 3), ('ACC: b − a', 'finding', 'b higher', 6)]
    >>> rs += [Run("a-rerun", str(s), None, None, R(0.0), "x") for s in range(6)]
    >>> [(v.comparison, v.n) for v in verdicts(rs, [("b", "a")])[:1]]
    [('ACC: a-rerun − a (same keys, retrained)', 6)]
    """
    runs = list(runs)
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {list(METRICS)}, got {metric!r}")
    control = comparisons[0][1] if control is None else control
    rerun = rerun_of({r.method for r in runs}, control) if rerun is None else rerun
    if rerun is not None and not any(r.method == rerun for r in runs):
        raise ValueError(f"rerun method {rerun!r} is not among the runs' methods {sorted({r.method for r in runs})}")
    methods = {m for c in comparisons for m in c} | {control} | ({rerun} if rerun else set())
    per = {r.key + (r.method,): run_metrics(r.R) for r in runs if r.method in methods}
    defined = [k for k in METRICS if all(np.isfinite(v[k]) for v in per.values())]
    if metric not in defined:
        raise ValueError(f"metric {metric!r} is not defined for every compared run (FWT needs the cells above the "
                         "diagonal); choose another")
    if rerun is not None:
        nulls = [(x.key + (control,), y.key + (rerun,)) for x, y in rerun_pairs(runs, control, rerun)]
        null_name, null_note = f"{rerun} − {control} (same keys, retrained)", ""
    else:
        nulls = [(x.key + (control,), y.key + (control,)) for x, y in null_pairs(runs, control)]
        null_name = f"{control} − {control} (other seeds)"
        null_note = ("(split-half: first half of the seeds against the second, unpaired in the data and half as "
                     f"many pairs as the findings; a rerun of {control} on the same seeds, '{control}{RERUN_SUFFIX}', "
                     "gives a paired control)")
    keys_of = {(a, b): sorted({r.key for r in runs if r.method == a}, key=lambda t: tuple(seed_key(x) for x in t))
               for a, b in comparisons}
    out = []
    seen_nulls: list = []
    for scope, keys in (("primary", [metric]), ("exploratory", [k for k in defined if k != metric])):
        if not keys:
            continue
        family_nulls = []
        for k in keys:
            if len(nulls) >= 2:
                v = stats.paired([per[y][k] for _, y in nulls], [per[x][k] for x, _ in nulls],
                                 comparison=f"{METRICS[k][0]}: {null_name}",
                                 role="null control", expect=stats.NO_DIFFERENCE, scope=scope)
                family_nulls.append(replace(v, note=(v.note + " " + null_note).strip(), guards=FAMILIES[scope]))
        kept = stats.drop_sign_duplicates(seen_nulls + family_nulls)[len(seen_nulls):]   # one null per hypothesis
        seen_nulls += family_nulls
        out += kept
        findings = []
        for a, b in comparisons:
            keys_ab = keys_of[(a, b)]
            for k in keys:
                higher, lower = _directions(a, b, k)
                findings.append(stats.paired([per[t + (a,)][k] for t in keys_ab], [per[t + (b,)][k] for t in keys_ab],
                                             comparison=f"{METRICS[k][0]}: {a} − {b}", higher=higher, lower=lower,
                                             scope=scope))
        out += stats.holm(stats.drop_sign_duplicates(findings), name=FAMILIES[scope])
    return stats.judge_controls(out)


def unit_label(percent: bool = False, what: str = "effect, CI and detectable") -> str:
    """The unit said in a 06 table's header (its columns' name): the metrics are always fractions (0-1);
    with ``percent`` the header also says the runs' percentages were divided by 100 when read.

    Examples
    --------
    >>> unit_label()
    'effect, CI and detectable: fractions (0-1)'
    >>> unit_label(True, "reported, recomputed and difference")
    "reported, recomputed and difference: fractions (0-1; the runs' percentages 0-100 were divided by 100)"
    """
    scale = "fractions (0-1; the runs' percentages 0-100 were divided by 100)" if percent else "fractions (0-1)"
    return f"{what}: {scale}"


def planner(verdicts, target: float | None = None) -> list:
    """Lines of the seed budget for each primary comparison, from its observed effect and spread.

    With the observed mean difference and the sd of the paired differences, how many pairs (seeds,
    or seed x order) the rule needs to detect the observed effect with 80 % power at the row's Holm
    level (:func:`clkit.stats.pairs_needed`); with ``target``, also how many to detect ``target``.
    A "no difference" row repeats its ``detectable`` (the row's ``mde``), so the plan, the table
    and the closing text state one figure per row.

    Examples
    --------
    >>> v = stats.paired([0.61, 0.63, 0.60, 0.64], [0.60, 0.60, 0.61, 0.61], comparison="ACC: b − a")
    >>> planner([v], target=0.01)[0]
    'ACC: b − a: observed +0.015 (sd of differences 0.019, 4 pairs; detectable ≥ 0.041, the figure of the verdict table and the closing text); about 15 pairs would detect it with 80 % power at α = 0.05; to detect 0.01 you need 31 pairs.'
    """
    lines = []
    for v in verdicts:
        if v.role != "finding" or v.scope != "primary" or v.decision == stats.NOT_TESTABLE:
            continue
        level = f"α = {v.alpha:g}" + (f"/{v.family}" if v.family > 1 else "")
        text = (f"{v.comparison}: observed {stats._num(v.effect, True)} (sd of differences {stats._num(v.sd)}, "
                f"{v.n} pairs"
                + (f"; detectable ≥ {stats._num(v.mde)}, the figure of the verdict table and the closing text"
                   if not v.significant and np.isfinite(v.mde) and v.mde > 0 else "") + "); ")
        if v.sd == 0:   # decided by the exact sign-flip test: its smallest p is 2 / 2**n
            level_ = v.alpha / max(v.family, 1)
            n_min = next(n for n in range(2, 64) if 2.0 ** (1 - n) < level_)
            lines.append(text + f"the differences have no spread, so the rule's exact sign-flip test decides: it "
                                f"needs at least {n_min} pairs at {level}; the runs have {v.n}.")
            continue
        need = v.pairs_for_observed
        if need is None:
            text += "no number of pairs detects a zero effect"
        elif need <= v.n:
            text += f"{need} pairs would detect it with 80 % power at {level}; the runs have {v.n}"
        else:
            text += f"about {need} pairs would detect it with 80 % power at {level}"
        if target is not None:
            t = stats.pairs_needed(target, v.sd, family=v.family, alpha=v.alpha)
            text += (f"; to detect {target:g} you need {t} pairs" if t is not None
                     else f"; {target:g} cannot be planned for (no spread or beyond 100000 pairs)")
        lines.append(text + ".")
    return lines
