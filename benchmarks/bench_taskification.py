"""Timing of BPS (targets: one 40,320 x 12 series with 9-day windows and 100 perturbations
in <= 2 s on 2 cores; 100 such series in <= 60 s), of the exact-W1 switch for short
tasks, and of notebook 01's smoke and default runs (targets: smoke <= 60 s, default
<= 150 s on 2 idle cores). Prints figures; not a pass/fail test. On a busy machine the
wall time overstates the idle time: the kernel's CPU time (single-threaded work) is
printed beside it with the load average.

Run: ``.venv/bin/python benchmarks/bench_taskification.py [--series 100] [--jobs 2]``
``[--notebook smoke,default] [--skip-bps]``
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time

import numpy as np

import clkit.taskification as tk
from clkit.data.timeseries import synthetic_network_traffic


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--series", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--perturbations", type=int, default=100)
    ap.add_argument("--notebook", default="smoke,default",
                    help="parameter sets of notebook 01 to time ('' for none)")
    ap.add_argument("--skip-bps", action="store_true", help="time only the notebook runs")
    args = ap.parse_args(argv)
    if not args.skip_bps:
        bench_bps(args)
        bench_switch()
    for params in filter(None, args.notebook.split(",")):
        bench_notebook(params)


def bench_switch():
    """Exact W1 vs the 64-quantile form on short tasks (where the switch uses exact)."""
    d = synthetic_network_traffic(num_series=1, num_weeks=4, seed=0)
    streams = {"synthetic series": d.values[0], "its null (shuffled)": tk.null_stream(d.values[0], seed=0)}
    for name, x in streams.items():
        for w in (48, 128, 384):
            tau = tk.fixed_windows(len(x), w)
            t0 = time.perf_counter()
            e = tk.bps(x, tau, max(1, w // 6), 100, method="exact")
            te = time.perf_counter() - t0
            t0 = time.perf_counter()
            q = tk.bps(x, tau, max(1, w // 6), 100, exact_below=0)
            tq = time.perf_counter() - t0
            print(f"BPS, {name}, {w}-step tasks ({tau.num_tasks}), 100 perturbations: exact {te:.2f} s, "
                  f"64-quantile {tq:.2f} s, quantile error {100 * abs(q - e) / e:.1f} % "
                  f"(the default uses {'exact' if tk.use_exact(tau) else 'quantile'})")


def bench_notebook(params):
    from clkit.run import run_notebook

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        run_notebook("01_taskification", params, out=tmp, progress=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    target = {"smoke": 60, "default": 150}.get(params)
    print(f"notebook 01, params={params}: wall {wall:.1f} s, kernel CPU {cpu:.1f} s"
          + (f" (target <= {target} s on 2 idle cores)" if target else "")
          + f"; load average {load0:.1f} -> {os.getloadavg()[0]:.1f}")


def bench_bps(args):
    t0 = time.perf_counter()
    data = synthetic_network_traffic(num_series=args.series, num_weeks=40, seed=0)
    print(f"generate {args.series} x {data.length} x {len(data.features)} synthetic series: "
          f"{time.perf_counter() - t0:.2f} s")
    delta = tk.days_to_steps(1)
    for days in (9, 30, 44):
        tau = tk.fixed_windows(data.length, tk.days_to_steps(days))
        tk.bps(data.values[0], tau, delta, 5)                              # warm-up
        times, cpu = [], []
        for rep in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            tk.bps(data.values[0], tau, delta, args.perturbations, seed=rep)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        print(f"BPS, one series, {days:2d}-day windows ({tau.num_tasks} tasks), {args.perturbations} perturbations: "
              f"median wall {np.median(times):.3f} s, CPU {np.median(cpu):.3f} s (target for 9 days: <= 2 s)")
    tau = tk.fixed_windows(data.length, tk.days_to_steps(9))
    t0, c0 = time.perf_counter(), time.process_time()
    tk.bps_over_series(data.values, tau, delta, args.perturbations, n_jobs=args.jobs)
    print(f"BPS, {args.series} series, 9-day windows, {args.perturbations} perturbations, {args.jobs} threads: "
          f"wall {time.perf_counter() - t0:.1f} s, CPU {time.process_time() - c0:.1f} s "
          f"(target for 100 series: <= 60 s); the load average was {__import__('os').getloadavg()[0]:.1f}")
    x = data.values[0]
    t0 = time.perf_counter()
    tk.distance_matrix(x, tau, method="exact")
    t_exact = time.perf_counter() - t0
    t0 = time.perf_counter()
    tk.distance_matrix(x, tau)
    print(f"31 x 31 task distance matrix: exact POT per pair {t_exact:.3f} s, quantile form "
          f"{time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()
