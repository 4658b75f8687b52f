"""Timing of BPS (the issue's targets: one 40,320 x 12 series with 9-day windows and 100 perturbations
in <= 2 s on 2 cores; 100 such series in <= 60 s). Prints figures; not a pass/fail test.

Run: ``.venv/bin/python benchmarks/bench_taskification.py [--series 100] [--jobs 2]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import clkit.taskification as tk
from clkit.data.timeseries import synthetic_network_traffic


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--series", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--perturbations", type=int, default=100)
    args = ap.parse_args(argv)

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
