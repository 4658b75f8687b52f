"""Timings for notebook 03 and clkit.temporal (prints figures; never fails on speed).

Targets (2 CPU cores): all temporal metrics on a 200 x 200 matrix <= 50 ms;
notebook smoke run <= 60 s, default run <= 3 min.

Usage: .venv/bin/python benchmarks/bench_temporal.py [--notebook] [--repeat N]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from clkit import temporal as tm


def bench_metrics(size=200, repeat=20):
    rng = np.random.default_rng(0)
    A = np.triu(rng.uniform(0.4, 1.0, (size, size)))
    A[np.tril_indices(size, -1)] = np.nan
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        tm.transfer_ratio(A)
        tm.stability_horizon(A, delta=0.8)
        tm.drift_horizon(A, epsilon=0.01, lam=0.15)
        tm.temporal_adaptation_score(A, n=5)
        tm.id_accuracy(A)
        tm.ood_accuracy(A, n=5)
        times.append(time.process_time() - t0)
    return float(np.median(times)), float(np.min(times))


def bench_notebook(params):
    from clkit.run import run_notebook

    from _timing import Timer

    with tempfile.TemporaryDirectory() as out, Timer() as t:
        run_notebook("03_temporal_metrics", params, out=out, progress=False)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="CPU time (time.process_time; the notebook runs: this process and its kernels).")
    ap.add_argument("--notebook", action="store_true", help="also time the smoke and default notebook runs")
    ap.add_argument("--repeat", type=int, default=20, help="repetitions of the metrics timing (median and best)")
    args = ap.parse_args()
    med, best = bench_metrics(repeat=args.repeat)
    print(f"all temporal metrics, 200 x 200 matrix: median {med * 1e3:.1f} ms, best {best * 1e3:.1f} ms CPU "
          f"(target <= 50 ms)")
    if args.notebook:
        for params, target in (("smoke", 60), ("default", 180)):
            print(f"notebook 03 --params {params}: {bench_notebook(params)} (target <= {target} s)", flush=True)


if __name__ == "__main__":
    main()
