"""The 01_taskification notebook's computations, tables and closing text.

Each function is one step of the notebook (a case-study table, the BPS tables, the CL
table, the protocol table, the closing paragraph); the notebook calls it and records
what it returns. Figures are in :mod:`clkit.taskification.plots`.
"""

from __future__ import annotations

import numpy as np

from ..progress import tqdm
from .boundaries import check_delta, days_to_steps, fixed_windows
from .forecasting import baseline_mse, continual_forecasting, make_forecast_tasks, regression_cl_metrics, run_jobs
from .resume import CHECKPOINT_METHODS
from .profiles import bps_over_series, bps_report, null_stream, profile_distance, taskification_profile
from .discrepancy import distance_matrix

__all__ = ["load_data", "make_splits", "case_study_table", "recurrence_move", "mean_matrices",
           "profile_distance_table", "bps_tables", "river_bps", "cl_tasks", "run_cl", "cl_summary", "table1",
           "protocol_table", "checks_line", "verdict_text", "closing_text", "findings_markdown", "write_findings",
           "replace_block", "CL_KEYS"]

#: the CL metrics of Table 1 and their column labels
CL_KEYS = [("avg_mse", "Avg MSE"), ("bwt", "BWT"), ("forgetting", "Forgetting")]


def load_data(dataset: str, *, num_series: int, cl_series: int, num_weeks: int, seed: int, time_column: str = "",
              value_columns=(), interval_minutes: float = 0.0):
    """The stream: a user file, CESNET-TimeSeries24 or the synthetic generator.

    Returns
    -------
    (data, num_series, cl_series)
        A user file may hold fewer series than asked for; both counts are capped at it.
        CESNET's source names the data cache it was read from.
    """
    from ..data.timeseries import load_cesnet_timeseries24, synthetic_network_traffic
    from ..data.user import is_user_path, load_stream_table

    if is_user_path(dataset):
        data = load_stream_table(dataset, time_column=time_column or None, value_columns=value_columns or None,
                                 interval_minutes=interval_minutes or None)
        return data, min(num_series, data.num_series), min(cl_series, data.num_series)
    if dataset == "cesnet":
        from dataclasses import replace

        from ..data._cache import data_root

        data = load_cesnet_timeseries24(max(num_series, cl_series))
        return replace(data, source=f"{data.source} in {data_root()}"), num_series, cl_series
    data = synthetic_network_traffic(num_series=max(num_series, cl_series), num_weeks=num_weeks, seed=seed)
    return data, num_series, cl_series


def make_splits(length: int, interval_minutes: float, window_days, offset_days: float, delta_days: float):
    """The fixed-window splits, their shifted twins and delta in steps (checked against every split).

    Returns
    -------
    (names, splits, shifted, delta)
        ``names`` like ``["9d", "30d"]``; ``splits`` / ``shifted`` map a name to a Taskification.

    Examples
    --------
    >>> names, s, sh, d = make_splits(480, 60.0, [2, 4], 1.0, 0.5)  # 20 days of hourly steps
    >>> names, s["2d"].num_tasks, sh["4d"].boundaries[:2].tolist(), d
    (['2d', '4d'], 10, [24, 120], 12)
    """
    steps = lambda days: days_to_steps(days, interval_minutes)  # noqa: E731
    delta = steps(delta_days)
    names = [f"{w:g}d" for w in window_days]
    splits = {n: fixed_windows(length, steps(w)) for n, w in zip(names, window_days)}
    shifted = {n: fixed_windows(length, steps(w), offset=steps(offset_days)) for n, w in zip(names, window_days)}
    for n, tau in splits.items():
        check_delta(tau, delta)
        check_delta(shifted[n], delta)
    return names, splits, shifted, delta


def case_study_table(cases: dict, num_perturbations: int, seed: int):
    """BPS of the near split, the far split and the near split on the null stream, per case study.

    Returns
    -------
    (rows, reports)
        ``rows[name]``: near / far / null BPS, near / null, and each split's plasticity
        and stability; ``reports[name]``: the three :class:`BPSReport` (for the figure).
    """
    rows, reports = {}, {}
    for name, cs in cases.items():
        near = bps_report(cs.stream, cs.near, cs.delta, num_perturbations, seed)
        far = bps_report(cs.stream, cs.far, cs.delta, num_perturbations, seed)
        null = bps_report(null_stream(cs.stream, seed), cs.near, cs.delta, num_perturbations, seed)
        reports[name] = {"near": near, "far": far, "null": null}
        rows[name] = {"near BPS": near.bps, "far BPS": far.bps, "null BPS": null.bps, "near / null": near.bps / null.bps,
                      "near plasticity": near.plasticity, "near stability": near.stability,
                      "far plasticity": far.plasticity, "far stability": far.stability}
    return rows, reports


def recurrence_move(case_rows: dict) -> dict:
    """Change of the plasticity and stability components from the far to the near split (recurrence case)."""
    rec = case_rows["recurrence"]
    return {"plasticity": rec["near plasticity"] - rec["far plasticity"],
            "stability": rec["near stability"] - rec["far stability"]}


def mean_matrices(values, splits: dict, **dist) -> dict:
    """Task-to-task W1 matrix of every split, averaged over series (``values``: series x steps x features)."""
    return {n: np.mean([distance_matrix(values[s], tau, **dist) for s in range(len(values))], axis=0)
            for n, tau in splits.items()}


def profile_distance_table(values, splits: dict, l_min: int, alpha: float, beta: float, **dist):
    """Table 2: D_prof between every ordered pair of splits, mean and sd over series.

    Returns
    -------
    (dprof, table)
        ``dprof["a|b"] = {"mean", "std"}``; ``table`` the formatted ``mean ± sd`` DataFrame.
    """
    import pandas as pd

    names = list(splits)
    profiles = {n: [taskification_profile(values[s], tau, l_min, **dist) for s in range(len(values))]
                for n, tau in splits.items()}
    dprof = {}
    table = pd.DataFrame("", index=names, columns=names)
    for a in names:
        for b in names:
            if a != b:
                v = np.array([profile_distance(pa, pb, alpha, beta) for pa, pb in zip(profiles[a], profiles[b])])
                dprof[f"{a}|{b}"] = {"mean": v.mean(), "std": v.std(ddof=1) if v.size > 1 else 0.0}
                table.loc[a, b] = f"{v.mean():.3f} ± {dprof[f'{a}|{b}']['std']:.3f}"
    return dprof, table


def _bps_table(values, taus, null, delta, num_perturbations, seed, bps_kw, per_series):
    import pandas as pd

    res, cells = {}, {}
    for n, tau in tqdm(taus.items(), desc="BPS"):
        r = bps_over_series(values, tau, delta, num_perturbations, seed, **bps_kw)
        res[n] = {k: r[f"{k}_mean"] for k in ("plasticity", "stability", "bps")}
        res[n].update({f"{k}_std": r[f"{k}_std"] for k in ("plasticity", "stability", "bps")})
        res[n]["null_bps"] = null[n]["bps"]
        res[n]["ratio_to_null"] = res[n]["bps"] / null[n]["bps"]
        cells[n] = {(k.capitalize() if k != "bps" else "BPS"): f"{r[f'{k}_mean']:.4f} ± {r[f'{k}_std']:.4f}"
                    for k in ("plasticity", "stability", "bps")}
        cells[n]["null BPS"] = f"{null[n]['bps']:.4f} ± {null[n]['bps_std']:.4f}"
        cells[n]["BPS / null"] = f"{res[n]['ratio_to_null']:.2f}"
        if per_series is not None:
            per_series[n] = r
    return res, pd.DataFrame(cells)


def bps_tables(values, splits: dict, shifted: dict, delta: int, num_perturbations: int, seed: int, **bps_kw):
    """Tables 3-4 beside the null stream (same values, shuffled in time).

    Returns
    -------
    dict
        ``null``, ``aligned``, ``shifted`` (per split: plasticity, stability, bps, their
        sd over series, null_bps, ratio_to_null), ``table3`` / ``table4`` (formatted
        DataFrames), ``bps_mean`` (means over splits, keys that name no window) and
        ``series`` (the raw :func:`bps_over_series` output per split: ``aligned``,
        ``null`` and ``null_again``, the first split on a second shuffle with seed
        ``seed + 1``, same neighbourhood draws: the null control of
        :func:`clkit.taskification.verdicts.split_verdicts`).
    """
    null_values = null_stream(values, seed)
    null, raw_null = {}, {}
    for n, tau in tqdm(splits.items(), desc="null BPS"):
        r = bps_over_series(null_values, tau, delta, num_perturbations, seed, **bps_kw)
        null[n] = {"bps": r["bps_mean"], "bps_std": r["bps_std"]}
        raw_null[n] = r
    raw_aligned = {}
    aligned, table3 = _bps_table(values, splits, null, delta, num_perturbations, seed, bps_kw, raw_aligned)
    shift, table4 = _bps_table(values, shifted, null, delta, num_perturbations, seed, bps_kw, None)
    first = next(iter(splits))
    again = {first: bps_over_series(null_stream(values, seed + 1), splits[first], delta, num_perturbations, seed,
                                    **bps_kw)}
    bps_mean = {"aligned": float(np.mean([r["bps"] for r in aligned.values()])),
                "shifted": float(np.mean([r["bps"] for r in shift.values()])),
                "null": float(np.mean([r["bps"] for r in null.values()]))}
    return {"null": null, "aligned": aligned, "shifted": shift, "table3": table3, "table4": table4,
            "bps_mean": bps_mean, "series": {"aligned": raw_aligned, "null": raw_null,
                                                    "null_again": again}}


def river_bps(river_values, length: int, windows, river_delta: int, l_min: int, num_perturbations: int, seed: int,
              **bps_kw) -> dict:
    """BPS of fixed-window splits of a real stream beside the same splits on its shuffled twin.

    Windows leaving fewer than ``l_min + 1`` tasks are skipped.
    """
    river_null = null_stream(river_values, seed)
    rows = {}
    for w in windows:
        tau = fixed_windows(length, w)
        if tau.num_tasks - 1 < l_min:
            continue
        r = bps_report(river_values, tau, river_delta, num_perturbations, seed, l_min=l_min, **bps_kw)
        r0 = bps_report(river_null, tau, river_delta, num_perturbations, seed, l_min=l_min, **bps_kw)
        rows[f"{w} steps"] = {"tasks": tau.num_tasks, "plasticity": r.plasticity, "stability": r.stability,
                              "BPS": r.bps, "null BPS": r0.bps, "BPS / null": r.bps / r0.bps}
    return rows


def cl_tasks(cl_values, splits: dict, context_steps: int, target_index: int, **task_kw):
    """The forecasting tasks of every split and their no-learning baselines.

    Returns
    -------
    (tasks, baselines)
    """
    tasks = {n: make_forecast_tasks(cl_values, tau, context_steps, target_index, **task_kw)
             for n, tau in splits.items()}
    return tasks, {n: baseline_mse(ts, target_index) for n, ts in tasks.items()}


def run_cl(tasks: dict, model_fn, methods, cl_seeds: int, *, seed: int, workers: int = 1, progress=None,
           strategy_kwargs: dict | None = None, null_control: bool = False, device="cpu", precision: str = "fp32",
           only=None, null_split: str | None = "all", checkpoint_dir=None, **train_kw) -> dict:
    """Every (method, split, seed) CL run; ``{(m, n, s): {"M", "avg_mse", "bwt", "forgetting"}}``.

    Run ``s`` uses seed ``seed + s`` (model initialisation and batch order), the same for
    every method and split, so runs pair across methods and splits by ``s``.
    ``strategy_kwargs[m]`` are method ``m``'s settings. ``null_control`` adds Finetune
    (``naive``) on the split ``null_split`` under seeds ``seed + cl_seeds + s`` as runs
    ``("naive", null_split, cl_seeds + s)``: the seed-offset null control of
    :func:`clkit.taskification.verdicts.cl_verdicts`. ``null_split`` is a split name (``None``: the
    first), ``"all"`` (the default: null runs on every split; the verdicts use the tightest,
    :func:`clkit.taskification.verdicts.null_split_of`: what a split grid can schedule), or
    ``"tightest"``: the split where Finetune's main seeds agree most
    (:func:`clkit.taskification.verdicts.tightest_split`), chosen after the main runs and before the
    null runs are trained (not with ``only``: a case names its split).

    Every run trains on ``device`` in ``precision``
    (:func:`~clkit.taskification.forecasting.continual_forecasting`). ``workers > 1`` forks
    processes, which only the CPU of a machine without an accelerator allows (neither CUDA
    nor autograd's accelerator threads survive a fork): pass
    ``RunDevice.workers(workers, fork=True)``, which is 1 elsewhere
    (:func:`clkit.device.fork_safe`; ``run_jobs`` also falls back to one process there).

    ``only`` (a list of ``(method, split, seed index)``, :func:`clkit.taskification.split.parse_runs`)
    trains those runs alone, each exactly as in the whole set: a case of the split grid.
    ``checkpoint_dir`` (a case's folder, :func:`clkit.taskification.resume.checkpoint_dir`): run ``(m, n, s)``
    checkpoints into and resumes from its subfolder ``m_n_s`` (:mod:`clkit.taskification.resume`; a method
    outside :data:`~clkit.taskification.resume.CHECKPOINT_METHODS`, e.g. a user's learner, starts over instead).
    """
    from ..device import as_device

    if workers > 1 and as_device(device).type != "cpu":
        raise ValueError(f"workers must be 1 on device {as_device(device)} (the runs would fork and CUDA does not "
                         f"survive a fork), got {workers}; pass RunDevice.workers(cl_workers, fork=True)")
    train_kw.update(device=device, precision=precision)
    runs = [(m, n, s) for m in methods for n in tasks for s in range(cl_seeds)]
    deferred = null_control and "naive" in methods and null_split == "tightest"
    if null_split not in (None, "tightest", "all") and null_split not in tasks:
        raise ValueError(f"null_split must be a split name {list(tasks)}, 'tightest' or 'all', got {null_split!r}")
    if deferred and only is not None:
        raise ValueError("null_split='tightest' picks the split after the main runs; a case (only=...) names it")
    if null_control and "naive" in methods and not deferred:
        where = list(tasks) if null_split == "all" else [null_split or next(iter(tasks))]
        runs += [("naive", n, cl_seeds + s) for n in where for s in range(cl_seeds)]
    if only is not None:
        unknown = [r for r in only if tuple(r) not in runs]
        if unknown:
            raise ValueError(f"only: {unknown[:3]} are not runs of these methods, splits and seeds")
        runs = [tuple(r) for r in only]

    def job(m, n, s):
        ckpt = f"{checkpoint_dir}/{m}_{n}_{s}" if checkpoint_dir is not None and m in CHECKPOINT_METHODS else None
        return lambda: continual_forecasting(tasks[n], model_fn, m, seed=seed + s, checkpoint_dir=ckpt,
                                             strategy_kwargs=(strategy_kwargs or {}).get(m), **train_kw)

    Ms = run_jobs([job(*r) for r in runs], workers=workers, progress=progress)
    out = {r: {"M": M, **regression_cl_metrics(M)} for r, M in zip(runs, Ms)}
    if deferred:
        from .verdicts import tightest_split

        where = tightest_split(out, list(tasks), cl_seeds)
        nulls = [("naive", where, cl_seeds + s) for s in range(cl_seeds)]
        Ms = run_jobs([job(*r) for r in nulls], workers=workers, progress=progress)
        out.update({r: {"M": M, **regression_cl_metrics(M)} for r, M in zip(nulls, Ms)})
    return out


def split_note(cl_selected, cl_from: str = "") -> str:
    """The budget's sentence on the split: what a case or a merge does, and where the split grid is."""
    grid = "notebooks/grids/01_taskification/paper_split.yaml"
    if cl_from:
        return f"A merge: the CL runs are read from the cases under {cl_from}, none is trained (the timing above is of the whole set)."
    return (f"Too long for one machine? Split it: {grid} makes one case per CL run (clkit sweep 01 --grid {grid} "
            "--cluster slurm, or clkit run-case), and clkit merge SWEEP_DIR --out DIR writes the results.json of "
            f"one run from them; this run trains {len(cl_selected)} CL run(s).")


def cl_summary(cl: dict, methods, names, cl_seeds: int):
    """Seed mean and seed sd (nan for one seed) of every CL metric per (method, split)."""
    mean = {(m, n): {k: float(np.mean([cl[(m, n, s)][k] for s in range(cl_seeds)])) for k, _ in CL_KEYS}
            for m in methods for n in names}
    sd = {(m, n): {k: (float(np.std([cl[(m, n, s)][k] for s in range(cl_seeds)], ddof=1)) if cl_seeds > 1
                       else float("nan")) for k, _ in CL_KEYS}
          for m in methods for n in names}
    return mean, sd


def table1(cl_mean: dict, baselines: dict, methods, names, labels: dict):
    """Table 1: every metric per split and its sd across splits, methods then the two baselines."""
    import pandas as pd

    rows = {}
    for m in methods:
        row = {}
        for key, label in CL_KEYS:
            vals = np.array([cl_mean[(m, n)][key] for n in names])
            row.update({(label, n): v for n, v in zip(names, vals)})
            row[("Std. across taskifications", label)] = vals.std(ddof=1) if len(vals) > 1 else 0.0
        rows[labels[m]] = row
    for b, label in [("constant_mean", "Constant (training mean)"), ("persistence_mean", "Persistence (last value)")]:
        vals = np.array([baselines[n][b] for n in names])
        row = {("Avg MSE", n): v for n, v in zip(names, vals)}
        row[("Std. across taskifications", "Avg MSE")] = vals.std(ddof=1) if len(vals) > 1 else 0.0
        rows[label] = row
    return pd.DataFrame(rows).T


#: the protocol variants of the notebook's section 8
PROTOCOL_VARIANTS = {
    "per-task max (paper)": dict(target_scaling="task"),
    "stream max": dict(target_scaling="stream"),
    "per-task max, random split": dict(target_scaling="task", split_order="random"),
    "per-task max, contexts across tasks": dict(target_scaling="task", context_across_tasks=True),
}


def protocol_table(target_only, splits: dict, context_steps: int, stride: int, seed: int, num_series: int):
    """No-learning baselines under each protocol variant (target channel only).

    Returns
    -------
    (proto, log)
        ``proto[variant][(column, split)]`` and ``log["variant|split"] = {constant, persistence}``.
    """
    proto, log = {}, {}
    for vname, kw in PROTOCOL_VARIANTS.items():
        kw = {"stride": stride, "split_order": "chronological", "context_across_tasks": False, "seed": seed, **kw}
        row = {}
        for n, tau in splits.items():
            ts = make_forecast_tasks(target_only, tau, context_steps, 0, **kw)
            b = baseline_mse(ts, 0)
            row[("Constant", n)] = b["constant_mean"]
            row[("Persistence", n)] = b["persistence_mean"]
            row[("target steps / task", n)] = np.mean([len(t.train) + len(t.val) + len(t.test) for t in ts]) / num_series
            log[f"{vname}|{n}"] = {"constant": b["constant_mean"], "persistence": b["persistence_mean"]}
        proto[vname] = row
    return proto, log


def _supported(vs, what: str, scope: str = "") -> str:
    """What the rule says of ``vs`` (rows already gated), in words.

    Examples
    --------
    >>> from clkit import stats
    >>> v = stats.paired([1.0, 1.2, 1.1, 1.3], [0.0] * 4, comparison="BPS 9d − 30d", higher="9d more fragile")
    >>> _supported([v], "adjacent-split", "primary")
    'the rule supports 1 of 1 adjacent-split differences (primary; BPS 9d − 30d: 9d more fragile)'
    """
    sig = [v for v in vs if v.significant]
    tag = f"{scope}; " if scope else ""
    if not vs:
        return f"too few pairs to judge the {what} differences"
    if not sig:
        return f"the rule supports none of the {len(vs)} {what} differences" + (f" ({scope})" if scope else "")
    return (f"the rule supports {len(sig)} of {len(vs)} {what} differences ({tag}"
            + "; ".join(f"{v.comparison}: {v.decision}" for v in sig) + ")")


def _effect(v) -> str:
    """A row's effect as its scale reads: ``×1.8`` (log-ratio rows, as a ratio) or ``+0.012``."""
    if getattr(v, "scale", "difference") == "log_ratio":
        return f"×{np.exp(v.effect):.3g}"
    return f"{v.effect:+.3g}"


def mechanical_text(judged) -> str:
    """Each primary BPS finding beside its control-normalised row (``BPS/null`` of the same pair).

    A split pair whose BPS differs while its BPS / null ratio does not is *mechanical*: dividing by
    the null stream (same values, shuffled) removes it, so shorter tasks being noisier on any
    stream accounts for it. Where the ratio differs in the same direction too, it is not only
    mechanical; in the other direction, the ordering reverses once divided. Rows without a
    judged ratio row are not read. Empty with no primary BPS finding.

    Examples
    --------
    >>> from clkit import stats
    >>> f = stats.paired([1.0, 1.2, 1.1, 1.3], [0.0] * 4, comparison="BPS 9d − 30d", higher="9d more fragile")
    >>> r = stats.paired([0.1, -0.1, 0.2, -0.3], [0.0] * 4, comparison="BPS/null 9d − 30d", scope="exploratory")
    >>> mechanical_text([f, r])[:80]
    'BPS 9d − 30d (9d more fragile) is mechanical: divided by the null stream, BPS/nu'
    """
    from .. import stats

    parts = []
    for v in judged:
        if not (v.role == "finding" and v.scope == "primary" and v.significant and v.comparison.startswith("BPS ")):
            continue
        pair = v.comparison[len("BPS "):]
        r = next((w for w in judged if w.comparison == f"BPS/null {pair}"), None)
        if r is None or r.decision == stats.NOT_TESTABLE:
            continue
        nums = f"{r.effect:+.3g}, {stats._p_text(r.p)}"
        if not r.significant:
            parts.append(f"{v.comparison} ({v.decision}) is mechanical: divided by the null stream, {r.comparison} "
                         f"shows no difference ({nums})")
        elif np.sign(r.effect) == np.sign(v.effect):
            parts.append(f"{v.comparison} ({v.decision}) is not only mechanical: {r.comparison} differs in the same "
                         f"direction ({nums})")
        else:
            parts.append(f"{v.comparison} ({v.decision}) reverses once divided by the null stream: {r.comparison} "
                         f"{r.decision} ({nums})")
    return ("; ".join(parts) + ". ") if parts else ""


def order_established(rows, order, labels: dict, methods) -> bool:
    """Whether the findings establish ``order`` (highest first) for every method: each adjacent pair's row
    of each method is significant and points the way ``order`` does.

    Examples
    --------
    >>> from clkit import stats
    >>> up = stats.paired([3.0, 3.2, 3.1, 3.3], [1.0] * 4, comparison="Finetune avg MSE 9d − 30d")
    >>> order_established([up], ["9d", "30d"], {"naive": "Finetune"}, ["naive"])
    True
    >>> order_established([up], ["30d", "9d"], {"naive": "Finetune"}, ["naive"])
    False
    """
    rank = {n: i for i, n in enumerate(order)}
    seen = 0
    for m in methods:
        for v in rows:
            head = f"{labels[m]} avg MSE "
            if not v.comparison.startswith(head):
                continue
            a, b = v.comparison[len(head):].split(" − ")
            if not v.significant or (v.effect > 0) != (rank[a] < rank[b]):
                return False
            seen += 1
    return seen > 0


def spread_vs_baseline_text(across_splits: float, base_sd: float) -> str:
    """The sentence on the spread across taskifications beside the no-learning baseline's own, from the numbers.

    Examples
    --------
    >>> spread_vs_baseline_text(40.0, 50.1)[:71]
    'The spread across taskifications (40) is no larger than the no-learning'
    >>> spread_vs_baseline_text(60.1, 50.1)[:68]
    'The spread across taskifications (60.1) is larger than the no-learni'
    >>> spread_vs_baseline_text(90.0, 50.1)
    ''
    """
    if not (np.isfinite(across_splits) and np.isfinite(base_sd)) or base_sd <= 0:
        return ""
    nums = f"({across_splits:.3g})", f"({base_sd:.3g})"
    if across_splits <= base_sd:
        return (f"The spread across taskifications {nums[0]} is no larger than the no-learning baseline's own "
                f"{nums[1]}, so the target normalisation can account for it; it is not evidence that the learners "
                "respond to the taskification. ")
    if across_splits <= 1.5 * base_sd:
        return (f"The spread across taskifications {nums[0]} is larger than the no-learning baseline's own "
                f"{nums[1]}, by {across_splits / base_sd:.2f}x (under 1.5x), so the target normalisation can "
                "account for most of it; it is weak evidence that the learners respond to the taskification. ")
    return ""


def checks_line(checks) -> str:
    """The pipeline checks in one Markdown line (they hold by construction unless the pipeline is broken).

    Examples
    --------
    >>> checks_line([{"check": "x", "holds": False, "detail": "a vs b"}])[:45]
    '**Pipeline checks fail** (1 of 1): x (a vs b)'
    """
    failed = [c for c in checks if not c["holds"]]
    if not checks:
        return ""
    if failed:
        return (f"**Pipeline checks fail** ({len(failed)} of {len(checks)}): "
                + "; ".join(f"{c['check']} ({c['detail']})" for c in failed)
                + ". The pipeline cannot be trusted, so no difference is read as a finding.")
    return f"**Pipeline checks hold** ({len(checks)} of {len(checks)}): " + "; ".join(c["check"] for c in checks) + "."


def verdict_text(verdicts, checks=(), *, small_n: int = 4) -> str:
    """The verdicts' Markdown: pipeline checks, the primary families, then the exploratory ones.

    A failed pipeline check lists the differences as measured, not judged. Otherwise the primary
    rows with their controls go through :func:`clkit.stats.closing_text` (controls first, findings
    only from primary rows with at least ``small_n`` pairs, what the run could detect); the
    exploratory rows are listed apart with their own controls, and only while every control holds.

    Examples
    --------
    >>> from clkit import stats
    >>> vs = [stats.paired([1.0, 1.2, 1.1, 1.3], [0.0] * 4, comparison="BPS 9d − 30d", higher="9d more fragile"),
    ...       stats.paired([0.1, -0.1, 0.2, 0.0], [0.0] * 4, comparison="BPS/null 9d − 30d", scope="exploratory")]
    >>> print(verdict_text(vs, [{"check": "x", "holds": True, "detail": ""}]).splitlines()[0])
    **Pipeline checks hold** (1 of 1): x.
    """
    from .. import stats

    verdicts, checks = list(verdicts), list(checks)
    head = checks_line(checks)
    if any(not c["holds"] for c in checks):
        return head + "\n\nMeasured differences (not findings): " + "; ".join(
            f"{v.comparison} {v.effect:+.3g}" for v in verdicts if v.role == "finding" and v.n) + "."
    parts = [head, stats.closing_text([v for v in verdicts if v.scope == "primary"], subject="this run",
                                      small_n=small_n)]
    explo = [v for v in verdicts if v.scope == "exploratory"]
    if explo:
        if not stats.controls_hold(verdicts)[0]:
            text = "not read: a control fails (above)."
        else:
            text = stats.closing_text(explo, subject="the exploratory part", small_n=small_n)
            rows = [v for v in explo if v.role == "finding" and v.n >= small_n]
            if rows and not any(v.significant for v in rows):
                text += f"\n\nNone of the {len(rows)} exploratory comparisons differs under the rule."
        names = sorted({v.family_name for v in explo if v.family_name})
        parts.append(f"*Exploratory* ({'; '.join(names)}; never findings):\n\n{text}")
    return "\n\n".join(p for p in parts if p)


def closing_text(*, source: str, num_series: int, names, offset_days: float, bps: dict, case_rows: dict,
                 rec_move: dict, mse_table, methods, labels: dict, cl_mean: dict, cl_sd: dict, cl_seeds: int,
                 baselines: dict, proto: dict, river_rows: dict, verdicts=None, settings=None, small_n: int = 4,
                 checks=(), cl=None):
    """The closing text of the notebook, generated from the verdicts and the numbers.

    The first part is :func:`verdict_text` over ``verdicts`` and the pipeline ``checks``
    (controls, then the primary findings, with "too few pairs" below ``small_n`` per row; the
    exploratory rows apart); the second the paper's sentences, which state means as means and
    name only the differences the rule supports, each beside the verdicts of its own rows. Where
    a control or a pipeline check fails, no difference is called supported. ``cl`` (the per-seed
    runs) gives EWC's per-pair numbers against Finetune.

    Returns
    -------
    (text, logs)
        ``logs``: what the notebook records beside it (``bps_order``, ``bps_order_shifted``,
        ``bps_order_null`` and, with several methods and splits, ``spread``; with
        Finetune, ``forgetting_share``).
    """
    from .. import stats

    verdicts = list(verdicts or [])
    checks = list(checks)
    trusted = stats.controls_hold(verdicts)[0] and bool(verdicts) and all(c["holds"] for c in checks)
    judged = [v for v in verdicts if v.n >= small_n] if trusted else []   # the gate is per row
    trusted = trusted and bool(judged)
    fmt = lambda v: f"{v:.3g}"  # noqa: E731
    t3, t4, null_res = bps["aligned"], bps["shifted"], bps["null"]
    order = sorted(names, key=lambda n: -t3[n]["bps"])
    order_s = sorted(names, key=lambda n: -t4[n]["bps"])
    order_null = sorted(names, key=lambda n: -null_res[n]["bps"])
    order_ratio = sorted(names, key=lambda n: -t3[n]["ratio_to_null"])
    near_wins = [n for n, r in case_rows.items() if r["near BPS"] > r["far BPS"]]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    closest = min(pairs, key=lambda p: mse_table.loc[p[0], p[1]]) if pairs else None
    logs = {}

    def rows(prefix, scope=None):
        return [v for v in judged if v.role == "finding" and v.comparison.startswith(prefix)
                and (scope is None or v.scope == scope)]

    not_judged = "no difference is judged (see above)"
    text = (
        f"On {source} ({num_series} series), the means over series order BPS {' > '.join(order)} "
        f"(aligned) and {' > '.join(order_s)} (shifted by {offset_days:g} days); the paper "
        f"finds 9d > 30d > 44d for both on CESNET-TimeSeries24. ")
    if verdicts:
        text += ("Paired over the series, " + (_supported(rows("BPS ", "primary"), "adjacent-split", "primary")
                                               if trusted else not_judged) + ". ")
    text += (
        f"The null stream (same values, shuffled in time) ranks them {' > '.join(order_null)} "
        f"(null BPS " + ", ".join(f"{n} {fmt(null_res[n]['bps'])}" for n in names)
        + ")" + (", the same order as the stream (with delta fixed, shorter tasks are noisier on any stream). "
                 if order_null == order else ". ")
        + (mechanical_text(judged) if trusted else "")
        + "The structure of the stream lifts BPS above the null by "
        + ", ".join(f"{t3[n]['ratio_to_null']:.1f}x ({n})" for n in names)
        + f"; by that ratio the means over series order the splits {' > '.join(order_ratio)}")
    if verdicts:
        ratio = rows("BPS/null ")
        if not trusted:
            text += f"; per series, {not_judged}. "
        elif not ratio or any(v.significant for v in ratio):
            text += f", and per series {_supported(ratio, 'ratio', 'exploratory')}. "
        else:
            text += (f", but per series the rule finds no difference between the splits' ratios in any of the "
                     f"{len(ratio)} pairs (exploratory), so that order is not established. ")
    else:
        text += " (means, not tested). "
    text += (
        f"In the case studies, the boundary placed at the structure has the higher BPS in "
        f"{len(near_wins)} of {len(case_rows)} streams ({', '.join(near_wins) or 'none'}), at "
        + ", ".join(f"{r['near / null']:.1f}x" for r in case_rows.values()) + " the null. ")
    bigger = max(rec_move, key=lambda k: abs(rec_move[k]))
    text += (
        f"For the recurrence case the paper attributes the fragility to the stability "
        f"profile; here, from the far to the near split, the plasticity component changes "
        f"by {rec_move['plasticity']:+.3f} and the stability component by "
        f"{rec_move['stability']:+.3f}, so {bigger} moves more"
        + (" (agreeing with the paper). " if bigger == "stability"
           else " (not what the paper describes: with boundaries on the extremes, a small shift "
           "makes neighbouring tasks alternate, which is an adjacent-task effect). "))
    if closest:
        text += (f"The most similar task-to-task matrices (smallest upsampled MSE) are "
                 f"{closest[0]} and {closest[1]}. ")
    if methods:
        cells = [(m, n) for m in methods for n in names]
        beat = [(m, n) for m, n in cells
                if cl_mean[(m, n)]["avg_mse"] < min(baselines[n]["constant_mean"], baselines[n]["persistence_mean"])]
        judged_cells = [v for v in judged if v.comparison.endswith("best baseline (avg MSE)")]
        won = [v for v in judged_cells if v.decision.endswith("beats both baselines")]
        text += (
            f"Forecasting: {len(beat)} of {len(cells)} (method, split) cells have a seed-mean average MSE "
            f"below both no-learning baselines (constant and persistence); "
            + (f"paired over {cl_seeds} seeds (exploratory), {len(won)} of {len(judged_cells)} cells beat both "
               "baselines under the rule" if trusted else "no cell is judged to beat them (see above)")
            + "; per split, "
            "persistence scores " + ", ".join(f"{fmt(baselines[n]['persistence_mean'])} ({n})" for n in names)
            + " and the best method "
            + ", ".join(f"{fmt(min(cl_mean[(m, n)]['avg_mse'] for m in methods))} ({n})" for n in names) + ". ")
        best = {labels[m]: min(names, key=lambda n: cl_mean[(m, n)]["avg_mse"]) for m in methods}
        worst = {labels[m]: max(names, key=lambda n: cl_mean[(m, n)]["avg_mse"]) for m in methods}
        text += ("By seed means, the lowest average MSE comes from the "
                 + ", ".join(f"{n} split for {k}" for k, n in best.items())
                 + "; the highest from the " + ", ".join(f"{n} split for {k}" for k, n in worst.items())
                 + " (the paper: 30d lowest and 44d highest for all four methods on CESNET)"
                 + ((f"; paired over seeds, " + (_supported(rows(tuple(f"{labels[m]} avg MSE " for m in methods),
                                                                  "primary"), "adjacent-split average-MSE", "primary")
                                                 if trusted else not_judged)) if verdicts else "") + ". ")
        pt = [proto["per-task max (paper)"][("Persistence", n)] for n in names]
        ps = [proto["stream max"][("Persistence", n)] for n in names]
        text += ("Without any learning, persistence orders the splits "
                 + " > ".join(sorted(names, key=lambda n: -pt[names.index(n)])) + " under per-task max scaling "
                 + f"(spread {max(pt) / min(pt):.1f}x between splits) and "
                 + " > ".join(sorted(names, key=lambda n: -ps[names.index(n)]))
                 + f" under one stream max (spread {max(ps) / min(ps):.1f}x). ")
        cl_order = sorted(names, key=lambda n: -np.mean([cl_mean[(m, n)]["avg_mse"] for m in methods]))
        base_order = sorted(names, key=lambda n: -pt[names.index(n)])
        inflation = (max(pt) / min(pt)) / (max(ps) / min(ps))
        cl_rows = rows(tuple(f"{labels[m]} avg MSE " for m in methods), "primary") if verdicts else []
        established = order_established(cl_rows, cl_order, labels, methods) if trusted else False
        ranking = ("the methods order the splits " + " > ".join(cl_order) + " (every adjacent difference a "
                   "finding)" if established else "the seed means rank the splits " + " > ".join(cl_order)
                   + f" (means, not an order: the rule supports {sum(v.significant for v in cl_rows)} of "
                   f"{len(cl_rows)} adjacent differences)" if cl_rows and trusted else
                   "the seed means rank the splits " + " > ".join(cl_order) + " (means, not tested)")
        if inflation > 1.5:
            text += (f"Per-task scaling widens the differences between splits {inflation:.1f}x before any learning"
                     + ("; " + ranking + ", the baselines' own order, so that ordering says more about the "
                        "normalisation than about continual learning. " if cl_order == base_order
                        else "; " + ranking + ", differently from the baselines. "))
        else:
            text += ("The normalisation does not widen the differences between splits here "
                     f"({inflation:.1f}x). ")
        if len(names) > 1 and len(methods) > 1:
            A = np.array([[cl_mean[(m, n)]["avg_mse"] for n in names] for m in methods])
            across_splits = float(np.mean(A.std(axis=1, ddof=1)))
            across_methods = float(np.mean(A.std(axis=0, ddof=1)))
            seed_sd = float(np.mean([cl_sd[k]["avg_mse"] for k in cl_sd])) if cl_seeds > 1 else float("nan")
            base_sd = float(np.std(pt, ddof=1))
            logs["spread"] = {"across_splits": across_splits, "across_methods": across_methods,
                              "across_seeds": seed_sd, "persistence_across_splits": base_sd}
            seed_txt = (f"across seeds {fmt(seed_sd)} ({cl_seeds} seeds)" if cl_seeds > 1
                        else "across seeds unknown (one seed)")
            text += (f"Average MSE spread (std, MSE x 10^3): across taskifications for a fixed "
                     f"method {fmt(across_splits)} (mean over methods), across methods for a "
                     f"fixed split {fmt(across_methods)} (mean over splits), {seed_txt}; "
                     f"persistence alone moves by {fmt(base_sd)} across taskifications. ")
            if cl_seeds > 1 and across_splits > max(across_methods, seed_sd):
                text += ("By these spreads (descriptive, not a test) the taskification moves the numbers more "
                         "than the choice of method or the seed does, as the paper says. ")
            elif cl_seeds > 1:
                text += ("By these spreads (descriptive, not a test) the taskification does not move the numbers "
                         "more than " + ("the choice of method" if across_methods >= seed_sd else "the seed")
                         + " does, so this run does not support the paper's conclusion. ")
            else:
                text += ("With one seed the seed spread is unknown, so whether the taskification "
                         "moves the numbers more than the method does is not decided here "
                         "(cl_seeds > 1 decides it). ")
            text += spread_vs_baseline_text(across_splits, base_sd)
    if "naive" in methods and names:
        share = {n: 100 * cl_mean[("naive", n)]["forgetting"] / cl_mean[("naive", n)]["avg_mse"] for n in names}
        logs["forgetting_share"] = share
        little = max(abs(v) for v in share.values()) < 1.0
        text += ("Finetune's forgetting is " + ", ".join(f"{v:.2g} % ({n})" for n, v in share.items())
                 + " of its average MSE" + (" (under 1 %: little to protect)" if little else ""))
        if "ewc" in methods:
            lam = (settings or {}).get("ewc", {}).get("ewc_lambda")
            text += f". EWC (lambda = {lam:g}) against Finetune" if lam is not None else ". EWC against Finetune"
            if cl is not None:
                from .verdicts import ewc_pairs

                ep = ewc_pairs(cl, names, cl_seeds)
                logs["ewc_vs_finetune_avg_mse"] = {k: ep[k] for k in ("higher", "pairs", "low", "high")}
                text += (f": EWC's average MSE is higher than Finetune's in {ep['higher']} of {ep['pairs']} "
                         f"seed x split pairs (EWC / Finetune − 1 from {ep['low']:+.1%} to {ep['high']:+.1%})")
            ewc_vs = [v for v in judged if v.comparison.startswith("EWC ")]
            rel = [v for v in ewc_vs if v.comparison.startswith("EWC / Finetune")]
            split_rows = [v for v in ewc_vs if v.comparison.startswith("EWC − Finetune")]
            sig = [v for v in split_rows if v.significant]
            text += "; paired over seeds (exploratory): "
            if not trusted or not ewc_vs:
                text += "not judged (see above). "
            else:
                if rel:
                    v = rel[0]
                    ci = (f"{100 * v.ci_level:.3g} % CI {v.ci_low:+.1%} to {v.ci_high:+.1%}"
                          if np.isfinite(v.ci_low) and np.isfinite(v.ci_high) else "interval unbounded at this n")
                    text += (f"EWC / Finetune − 1, averaged over the splits per seed, is {v.effect:+.1%} on average "
                             f"({ci}; n = {v.n} seeds: the rule pairs seeds, not seed x split pairs, since the "
                             "splits of one seed share its draw): "
                             + (v.decision if v.significant else "no difference detected") + "; ")
                if sig:
                    text += ("per split, " + "; ".join(f"{v.comparison}: {v.decision} ({_effect(v)})" for v in sig)
                             + f"; no difference detected in the other {len(split_rows) - len(sig)}. ")
                else:
                    text += (f"per split, no difference detected in any of the {len(split_rows)} comparisons "
                             "(forgetting, average MSE)" + (": with so little forgetting, the penalty has little to "
                                                           "remove. " if little else ". "))
        else:
            text += ". "
    text += ("On the real occupancy stream, BPS / null per window length is "
             + ", ".join(f"{k}: {v['BPS / null']:.1f}x" for k, v in river_rows.items()) + ". "
             if river_rows else "")
    logs.update(bps_order=order, bps_order_shifted=order_s, bps_order_null=order_null)
    if verdicts:
        text = verdict_text(verdicts, checks, small_n=small_n) + "\n\n" + text
    return text, logs


def findings_markdown(results: dict) -> str:
    """The default run's findings as Markdown for docs/01_taskification.md (a generated block).

    Parameters
    ----------
    results : dict
        A run's ``results.json`` (the whole record, or its ``"results"`` part).

    Returns
    -------
    str
        The key numbers (BPS and BPS / null per split, Finetune's forgetting share, the
        controls), the verdict table, then the run's closing text (``summary``).

    Examples
    --------
    >>> r = {"bps": {"9d": {"bps": 0.0135, "null_bps": 0.00113, "ratio_to_null": 12.0}}, "controls_hold": True,
    ...      "verdicts": [], "summary": "**No finding**.", "data_source": "synthetic", "forgetting_share": {"9d": 0.8}}
    >>> print(findings_markdown(r).splitlines()[0])
    Data: synthetic.
    """
    r = results.get("results", results)
    lines = [f"Data: {r.get('data_source', '?')}.", ""]
    if r.get("bps"):
        lines += ["| split | BPS | null BPS | BPS / null |", "|---|---|---|---|"]
        lines += [f"| {n} | {v['bps']:.4g} | {v['null_bps']:.4g} | {v['ratio_to_null']:.1f} |"
                  for n, v in r["bps"].items()]
        lines.append("")
    if r.get("forgetting_share"):
        lines += ["Finetune's forgetting as % of its average MSE: "
                  + ", ".join(f"{n} {v:.2g} %" for n, v in r["forgetting_share"].items()) + ".", ""]
    vs = r.get("verdicts") or []
    if vs:
        checks = r.get("pipeline_checks") or []
        lines += [f"Controls hold: {'yes' if r.get('controls_hold') else 'NO'}."
                  + (f" Pipeline checks hold: {'yes' if all(c['holds'] for c in checks) else 'NO'}." if checks else ""),
                  "", "| comparison | role | effect | CI (level of the decision) | p | n | decision |",
                  "|---|---|---|---|---|---|---|"]
        for v in vs:
            ci = (f"{v['ci_low']:+.3g} … {v['ci_high']:+.3g} ({100 * v.get('ci_level', 0.95):.3g} %)"
                  if v.get("ci_low") is not None and v.get("ci_high") is not None
                  and np.isfinite([v["ci_low"], v["ci_high"]]).all() else "")
            p = f"{v['p']:.2g}" if v.get("p") is not None and np.isfinite(v["p"]) else ""
            eff = f"{v['effect']:+.3g}" if v.get("effect") is not None else ""
            role = "exploratory" if v["role"] == "finding" and v.get("scope") == "exploratory" else v["role"]
            lines.append(f"| {v['comparison']} | {role} | {eff} | {ci} | {p} | {v['n']} | {v['decision']} |")
        lines.append("")
    lines.append(r.get("summary", ""))
    return "\n".join(lines).rstrip() + "\n"


def write_findings(results_json, doc, name: str = "findings-01_taskification") -> str:
    """Replace the generated block ``name`` of ``doc`` with :func:`findings_markdown` of a run (atomic write).

    The block lies between ``<!-- BEGIN generated: NAME -->`` and ``<!-- END generated: NAME -->``.
    Returns the new block text.
    """
    import json
    from pathlib import Path

    block = findings_markdown(json.loads(Path(results_json).read_text()))
    replace_block(doc, name, block)
    return block


def replace_block(doc, name: str, block: str) -> None:
    """Write ``block`` between the ``<!-- BEGIN/END generated: NAME -->`` lines of ``doc`` (atomic)."""
    from pathlib import Path

    from .._io import atomic_write_text

    begin, end = f"<!-- BEGIN generated: {name} -->", f"<!-- END generated: {name} -->"
    text = Path(doc).read_text()
    if begin not in text or end not in text:
        raise ValueError(f"doc {doc} has no generated block {name!r} (lines {begin!r} ... {end!r})")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    atomic_write_text(doc, f"{head}{begin}\n{block.rstrip()}\n{end}{tail}")
