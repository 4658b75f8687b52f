"""Calibrate EWC's strength for 01_taskification (issue 26): Finetune and EWC under several lambdas.

Runs the notebook's CL protocol at a parameter set's scale (default: the default run) for Finetune
and EWC at every lambda of notebooks/grids/01_taskification/ewc_lambda.yaml, on the same seeds, and
prints per split and lambda: EWC's average MSE, BWT and forgetting (seed means), EWC − Finetune on
each with the paired verdict (clkit.stats.paired, Holm over the lambdas of one split and metric),
and Finetune's forgetting as % of its average MSE. CPU time is printed (the machine may be loaded).

    python benchmarks/calibrate_01_ewc.py [--params default] [--seeds 4] [--workers 2]
        [--markdown docs/generated/01_ewc_calibration.md] [--doc docs/01_taskification.md]
"""

from __future__ import annotations

import argparse
import resource

import numpy as np

from clkit import stats
from clkit._io import atomic_write_text
from clkit.models.transformer import TimeSeriesTransformer
from clkit.notebooks import load_params
from clkit.sweep.grid import expand_grid, load_grid, resolve_grid
from clkit.taskification import report

NB = "01_taskification"
METRICS = [("avg_mse", "avg MSE"), ("bwt", "BWT"), ("forgetting", "forgetting")]


def _cpu() -> float:
    """User + system CPU seconds of this process and its finished children."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default="default")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--markdown", help="write the table to this Markdown file (atomically)")
    ap.add_argument("--doc", help="also replace the 'ewc calibration' generated block of this page")
    a = ap.parse_args(argv)
    lambdas = [c["learner_kwargs.ewc.ewc_lambda"] for c in expand_grid(load_grid(resolve_grid(NB, "ewc_lambda")))]
    v = load_params(NB, a.params)
    data, _, cl_series = report.load_data(v["dataset"], num_series=v["num_series"], cl_series=v["cl_series"],
                                          num_weeks=v["num_weeks"], seed=v["seed"])
    names, splits, _, _ = report.make_splits(data.length, data.interval_minutes, v["window_days"], v["offset_days"],
                                             v["delta_days"])
    tasks, _ = report.cl_tasks(data.values[:cl_series], splits, v["context_steps"], data.target_index,
                               stride=v["stride"], target_scaling=v["target_scaling"], split_order=v["split_order"],
                               context_across_tasks=v["context_across_tasks"], seed=v["seed"])

    def model_fn():
        return TimeSeriesTransformer(num_features=len(data.features), context=v["context_steps"], d_model=v["d_model"],
                                     num_layers=v["num_layers"], num_heads=v["num_heads"],
                                     target_index=data.target_index)

    train = dict(max_epochs=v["epochs"], patience=v["patience"], lr_patience=v["lr_patience"], lr=v["lr"],
                 batch_size=v["batch_size"], num_threads=1)
    t0 = _cpu()
    from clkit.taskification.forecasting import continual_forecasting, regression_cl_metrics, run_jobs

    jobs = [("naive", None, n, s) for n in names for s in range(a.seeds)]
    jobs += [("ewc", lam, n, s) for lam in lambdas for n in names for s in range(a.seeds)]

    def job(m, lam, n, s):
        kw = {"ewc_lambda": lam} if m == "ewc" else None
        return lambda: continual_forecasting(tasks[n], model_fn, m, seed=v["seed"] + s, strategy_kwargs=kw, **train)

    Ms = run_jobs([job(*j) for j in jobs], workers=a.workers)
    res = {j[:3] + (j[3],): regression_cl_metrics(M) for j, M in zip(jobs, Ms)}
    cpu = _cpu() - t0
    seeds = range(a.seeds)
    rows = ["| split | λ | " + " | ".join(f"EWC {lab}" for _, lab in METRICS) + " | "
            + " | ".join(f"EWC − Finetune {lab}" for _, lab in METRICS) + " |",
            "|---|---|" + "---|" * (2 * len(METRICS))]
    for n in names:
        fin = {k: [res[("naive", None, n, s)][k] for s in seeds] for k, _ in METRICS}
        verdicts = {k: stats.holm([stats.paired([res[("ewc", lam, n, s)][k] for s in seeds], fin[k],
                                                comparison=f"{n} λ={lam:g} {k}") for lam in lambdas])
                    for k, _ in METRICS}
        rows.append(f"| {n} | Finetune | " + " | ".join(f"{np.mean(fin[k]):.3g} ± {np.std(fin[k], ddof=1):.2g}"
                                                       for k, _ in METRICS) + " |" + " |" * len(METRICS))
        for i, lam in enumerate(lambdas):
            cells = [np.array([res[("ewc", lam, n, s)][k] for s in seeds]) for k, _ in METRICS]
            rows.append(f"| {n} | {lam:g} | " + " | ".join(f"{c.mean():.3g} ± {c.std(ddof=1):.2g}" for c in cells)
                        + " | " + " | ".join(f"{verdicts[k][i].effect:+.3g} ({verdicts[k][i].decision}, "
                                             f"p = {verdicts[k][i].p:.2g})" for k, _ in METRICS) + " |")
    share = {n: 100 * np.mean([res[("naive", None, n, s)]["forgetting"] for s in seeds])
             / np.mean([res[("naive", None, n, s)]["avg_mse"] for s in seeds]) for n in names}
    text = (f"Parameter set `{a.params}`, {a.seeds} seeds (paired by seed: same initialisation and batch order), "
            f"{len(jobs)} runs, {cpu:.0f} s CPU (user + system, workers included). Mean ± sd over seeds, MSE × 10³; EWC − Finetune: paired t, "
            "Holm over the λ values of one split and metric.\n\n" + "\n".join(rows)
            + "\n\nFinetune's forgetting as % of its average MSE: "
            + ", ".join(f"{n} {v_:.2g} %" for n, v_ in share.items()) + ".\n")
    print(text)
    if a.markdown:
        atomic_write_text(a.markdown, text)
    if a.doc:
        report.replace_block(a.doc, "01_taskification-ewc-calibration", text)


if __name__ == "__main__":
    main()
