"""A comparison from runs to report: metrics, disagreements, verdicts, paragraph, planner, files.

:func:`compare` does the work and returns a dict (no files); :func:`write_report` writes it into
a folder as a notebook run does: ``results.json`` (:class:`clkit.results.RunRecord`, verdicts as
:meth:`clkit.stats.Verdict.to_dict` so :func:`clkit.stats.rederive` can decide them again),
``runs.csv`` (every run read and what was used from it), ``metrics.csv`` (per-run metrics),
``verdicts.csv``, ``disagreements.csv`` and two figures saved atomically by
:func:`clkit.plot.save_figure`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import stats
from .checks import check_runs
from .metrics import TOLERANCE, check_reported, metrics_table
from .plots import mean_matrices, metric_strip
from .verdicts import RERUN_SUFFIX, comparisons_for, planner, unit_label, verdicts

__all__ = ["compare", "paragraph", "write_report"]


def paragraph(verdicts_, disagree, *, subject: str = "this set of runs", tol: float = TOLERANCE, small_n: int = 4,
              checked=None, pipeline=None) -> str:
    """The closing text: :func:`clkit.stats.closing_text` on the verdicts (rows on fewer than ``small_n``
    pairs are never findings, as in every notebook; it sets each null control's detectable bias
    beside the smallest finding it vouches for), the pipeline checks (``pipeline``: dicts of :func:`clkit.compare.oracle.pipeline_check`; not
    controls), then what the frameworks' own numbers did (never stronger than the numbers: it
    lists, it does not judge).

    Examples
    --------
    >>> import pandas as pd
    >>> v = stats.paired([0.1, -0.1, 0.05], [0.0] * 3, comparison="ACC: b − a")
    >>> print(paragraph([v], pd.DataFrame(columns=["run"])).splitlines()[-1])
    **No null control**: fewer than 4 runs of the control method, so the rule's calibration on these runs is unchecked.
    """
    # the notebooks' gate: a comparison on fewer than small_n pairs is shown, never read as a finding
    text = stats.closing_text(verdicts_, subject=subject, small_n=small_n)
    if pipeline:
        ok = [c for c in pipeline if c["passed"]]
        text += (f"\n\n**Pipeline checks** ({len(ok)} of {len(pipeline)} pass; exact arithmetic, not controls): "
                 + "; ".join(c["text"] for c in pipeline) + ".")
    if not any(v.role == "null control" for v in verdicts_):
        text += ("\n\n**No null control**: fewer than 4 runs of the control method, so the rule's calibration on "
                 "these runs is unchecked.")
    if len(disagree):
        runs = disagree["run"].nunique()
        text += (f"\n\n**Reported numbers disagree** with those recomputed from the accuracy matrices in "
                 f"{len(disagree)} case(s) over {runs} run(s) (|difference| > {tol:g}; each compared with its own "
                 "definition, the reason such numbers differ listed beside it); the verdicts use the recomputed "
                 "ones.")
    if checked is not None and len(checked):
        agree = int((checked["status"] == "agrees").sum())
        unchecked = checked[checked["status"] == "not checkable"]
        text += (f"\n\nOf the {len(checked)} number(s) the logs report, {agree} agree with the same definition "
                 f"computed from R within {tol:g}")
        if len(unchecked):
            text += (f"; {len(unchecked)} cannot be checked from R ("
                     + ", ".join(sorted(set(unchecked["metric"]))) + ")")
        text += "."
    return text


def compare(runs, *, comparisons=None, reference: str | None = None, metric: str = "acc",
            target: float | None = None, tol: float = TOLERANCE, oracle_shift: float | None = None,
            oracle_sds: float | None = 3.0, rerun: str | None = None, percent: bool = False) -> dict:
    """Check the runs, recompute their metrics and decide the comparisons.

    Parameters
    ----------
    runs : Runs or list of Run
    comparisons : list of str or (str, str), optional
        Comparisons ``"A:B"`` (``A − B``); default: every method against ``reference``.
    reference : str, optional
        The reference method (and the null control's method; default with ``comparisons``: the B of
        the first comparison).
    metric : str
        The primary metric (``acc``, ``acc_all_seen``, ``bwt``, ``fwt``, ``forgetting``).
    target : float, optional
        An effect to plan the number of seeds for (fraction scale, e.g. 0.01 for 1 point).
    tol : float
        Tolerance of :func:`clkit.compare.metrics.disagreements`.
    oracle_shift : float, optional
        In (0, 1]: add the pipeline check (:func:`clkit.compare.oracle.pipeline_check`), a copy of the
        control method with this fraction of its final row's error removed, whose recomputed ACC gain
        must be exactly the planted one. ``None`` or 0: none. It is listed under pipeline checks, not
        counted as a control.
    oracle_sds : float, optional
        Add the oracle control (:func:`clkit.compare.oracle.oracle_verdict`): a gain of this many
        spreads of the sharpest ACC comparison's paired differences planted into the null control's
        pairs, which the rule must call higher (default 3). ``None`` or 0: no oracle.
    rerun : str, optional
        The control method's rerun (same keys, another training seed) for the paired null control;
        default ``<control>-rerun`` when present. It is never compared as a method.
    percent : bool
        The runs were read with ``percent=True`` (their 0-100 scores divided by 100): the tables'
        headers say so. Every table holds fractions (0-1) either way.

    Returns
    -------
    dict
        ``runs`` (listing DataFrame), ``metrics`` (per-run DataFrame), ``disagreements``,
        ``run_list`` (the Run records), ``comparisons``, ``verdicts`` (list of Verdict),
        ``table`` (:func:`clkit.stats.verdict_table`),
        ``paragraph``, ``planner`` (lines), ``control``, ``rerun`` (or ``None``), ``pipeline`` (pipeline
        checks, dicts), ``metric``, ``not_compared`` (methods read, not compared), ``unit`` (the
        verdict table's unit, :func:`clkit.compare.verdicts.unit_label`). Each table's header (its
        columns' name) names its unit: fractions (0-1).

    Examples
    --------
    >>> import numpy as np
    >>> from clkit.compare.runs import Run
    >>> rng = np.random.default_rng(1)
    >>> rs = [Run(m, str(s), None, None, np.tril(0.6 + 0.03 * rng.standard_normal((3, 3)))
    ...           + (0.1 if m == "b" else 0) * (np.arange(3) == 2)[:, None], "x") for m in "ab" for s in range(8)]
    >>> res = compare(rs, reference="a")
    >>> res["table"].loc["ACC: b − a", "decision"], res["table"].loc["ACC: a − a (other seeds)", "control"]
    ('b higher', 'holds')
    >>> res["table"].columns.name
    'effect, CI and detectable: fractions (0-1)'
    """
    from .runs import Runs

    listing = runs.listing() if isinstance(runs, Runs) else Runs(list(runs), "", "").listing()
    runs = list(runs)
    from .oracle import oracle_verdict, pipeline_check
    from .verdicts import null_pairs, rerun_pairs

    methods = list(dict.fromkeys(r.method for r in runs))
    reruns = [m for m in methods if m.endswith(RERUN_SUFFIX) and m[:-len(RERUN_SUFFIX)] in methods]
    if rerun is not None and rerun not in methods:
        raise ValueError(f"rerun {rerun!r} is not among the runs' methods {methods}")
    pairs = comparisons_for([m for m in methods if m not in reruns and m != rerun], compare=comparisons,
                            reference=reference)
    control = reference if reference is not None else pairs[0][1]
    if control not in methods:
        raise ValueError(f"--reference {control!r} is not among the runs' methods {methods}")
    if rerun is None and f"{control}{RERUN_SUFFIX}" in methods:
        rerun = f"{control}{RERUN_SUFFIX}"
    involved = list(dict.fromkeys([m for p in pairs for m in p] + [control] + ([rerun] if rerun else [])))
    check_runs(runs, involved)
    vs = verdicts(runs, pairs, metric=metric, control=control, rerun=rerun)
    null_runs = rerun_pairs(runs, control, rerun) if rerun else null_pairs(runs, control)
    spreads = [(v.sd, v.comparison) for v in vs if v.role == "finding" and v.comparison.startswith("ACC: ")
               and np.isfinite(v.sd) and v.sd > 0]
    if oracle_sds and len(null_runs) >= 2 and spreads:
        sd, which = min(spreads)
        oracle = oracle_verdict(null_runs, oracle_sds * sd,
                                unit=f"{oracle_sds:g} sd of the sharpest comparison's ACC differences ({which}, "
                                     f"sd {stats._num(sd)})")
        vs.insert(1 if vs and vs[0].role == "null control" else 0, oracle)
    pipeline = [pipeline_check(runs, control, oracle_shift)] if oracle_shift else []
    checked = check_reported(runs, tol)
    dis = checked[checked["status"] == "disagrees"].reset_index(drop=True)
    table = stats.verdict_table(vs)
    table.columns.name = unit_label(percent)
    for t in (checked, dis):
        t.columns.name = unit_label(percent, "reported, recomputed and difference")
    return {"runs": listing, "run_list": runs, "metrics": metrics_table(runs), "disagreements": dis,
            "checks": checked,
            "comparisons": pairs,
            "verdicts": vs, "table": table, "unit": table.columns.name,
            "paragraph": paragraph(vs, dis, tol=tol, checked=checked, pipeline=pipeline),
            "planner": planner(vs, target), "control": control, "rerun": rerun, "pipeline": pipeline,
            "metric": metric, "not_compared":
            [m for m in methods if m not in involved]}


def write_report(result: dict, out, *, params: dict | None = None) -> list:
    """Write ``result`` of :func:`compare` into ``out``: results.json, CSVs, two figures; returns the paths.

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> from clkit.compare.runs import Run
    >>> rs = [Run(m, str(s), None, None, np.array([[0.9, np.nan], [0.5 + 0.01 * s + (m == "b") * 0.1, 0.8]]),
    ...           f"{m}{s}.csv") for m in "ab" for s in range(4)]
    >>> paths = write_report(compare(rs, reference="a"), tempfile.mkdtemp())
    >>> sorted(p.name for p in paths)
    ['acc_per_method.png', 'checks.csv', 'disagreements.csv', 'mean_R.png', 'metrics.csv', 'results.json', 'runs.csv', 'verdicts.csv']
    """
    import matplotlib.pyplot as plt

    from .._io import atomic_write_text
    from ..plot import save_figure
    from ..results import RunRecord

    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    rec = RunRecord("compare", params=params or {})
    m = result["metrics"]
    rec.log(metric=result["metric"], control=result["control"], rerun=result.get("rerun"),
            unit=result.get("unit", unit_label()),
            pipeline_checks=result.get("pipeline", []),
            comparisons=[list(c) for c in result["comparisons"]],
            not_compared=result["not_compared"], num_runs=len(m),
            runs=result["runs"].to_dict(orient="records"),
            per_run=m.to_dict(orient="records"),
            disagreements=result["disagreements"].to_dict(orient="records"),
            checks=result["checks"].to_dict(orient="records") if "checks" in result else [],
            verdicts=[v.to_dict() for v in result["verdicts"]],
            controls_hold=stats.controls_hold(result["verdicts"])[0],
            paragraph=result["paragraph"], planner=result["planner"])
    paths = []
    tables = [("runs", result["runs"]), ("metrics", m), ("disagreements", result["disagreements"]),
              ("verdicts", result["table"].reset_index())]
    if "checks" in result:
        tables.append(("checks", result["checks"]))
    for name, table in tables:
        paths.append(atomic_write_text(d / f"{name}.csv", table.to_csv(index=False)))
    ax = metric_strip(m, result["metric"])
    paths.append(save_figure(ax.figure, f"{result['metric']}_per_method", folder=d))
    plt.close(ax.figure)
    fig = mean_matrices(result["run_list"], list(dict.fromkeys(m["method"])))
    paths.append(save_figure(fig, "mean_R", folder=d))
    plt.close(fig)
    rec.figures = [str(p) for p in paths if p.suffix == ".png"]
    paths.append(rec.save(d / "results.json"))
    return paths

