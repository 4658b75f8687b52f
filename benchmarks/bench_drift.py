"""Timings for clkit.drift (prints figures; not a pass/fail test).

1. Building the Gaussian stream for an ogbn-arxiv-sized label vector (169,343 nodes,
   40 classes -> 20 latent tasks, batch 10, sigma 60); target <= 1 s on 2 cores.
   The other settings are timed too.
2. One authors-protocol run of Bare and of ER on the smoke graph next to the text protocol
   (the ratio authors / text is printed).
3. Optionally (``--notebook``) the default notebook run through the clkit runner; target <= 130 s.

Run: ``.venv/bin/python benchmarks/bench_drift.py [--notebook]``
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time

import numpy as np

import clkit.drift as drift


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        times.append(time.process_time() - t0)
    return min(times), out


def protocol_ratio():
    """Bare and ER on the smoke graph (CSBM, 400 nodes, 8 classes), text vs authors protocol."""
    from clkit.data.graphs import csbm

    g = csbm(400, 8, avg_degree=6.0, feature_signal=0.7, seed=1)
    cfg = [drift.StreamConfig("gaussian", sigma=3.0)]
    for method in ("bare", "er"):
        t = {}
        for prot in drift.PROTOCOLS:
            g2, sp = drift.protocol_data(g, 2, 0.2, seed=1, protocol=prot)
            t[prot], _ = best_of(lambda: drift.run_grid(g2, sp, cfg, [method], [1], hidden=16, memory_size=40,
                                                        eval_every=4, cache=False, progress=False, protocol=prot))
        print(f"{method:5s} one smoke stream: text {t['text']:.3f} s, authors {t['authors']:.3f} s, "
              f"authors / text = {t['authors'] / t['text']:.2f}")


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="Figures are CPU time (time.process_time), best of 3; never fails on speed.")
    ap.add_argument("--notebook", action="store_true", help="also time notebook 05's default run (CPU and wall)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 40, 169_343)
    t_split, split = best_of(lambda: drift.split_tasks(y, 2, 0.2, seed=0))
    print(f"latent tasks + per-class split (169,343 nodes): {t_split:.3f} s")
    cases = {
        "gaussian sigma=60 without": lambda: drift.gaussian_stream(split.task_nodes, 10, 60.0, seed=0),
        "gaussian sigma=60 with": lambda: drift.gaussian_stream(split.task_nodes, 10, 60.0, sampling="with", seed=0),
        "hard": lambda: drift.hard_stream(split.task_nodes, 10, seed=0),
        "boundary_local K=5": lambda: drift.boundary_local_stream(split.task_nodes, 10, 5, seed=0),
        "global p=0.3": lambda: drift.global_stream(split.task_nodes, 10, 0.3, seed=0),
    }
    for name, fn in cases.items():
        t, s = best_of(fn)
        flag = "  (target <= 1 s)" if name == "gaussian sigma=60 without" else ""
        print(f"{name:28s} {t:.3f} s  -> {s.num_batches} batches of {s.batch_size}{flag}")
    with tempfile.TemporaryDirectory() as d:
        t_build, _ = best_of(lambda: drift.build_stream(split.task_nodes, "gaussian", dataset="bench", sigma=60.0,
                                                        root=d, cache=True), repeat=1)
        t_load, _ = best_of(lambda: drift.build_stream(split.task_nodes, "gaussian", dataset="bench", sigma=60.0,
                                                       root=d, cache=True))
    print(f"build_stream, first (build + atomic write): {t_build:.3f} s; cached load: {t_load:.3f} s")
    protocol_ratio()
    if args.notebook:
        from _timing import Timer

        with tempfile.TemporaryDirectory() as d, Timer() as t:
            subprocess.run([sys.executable, "-m", "clkit", "run", "05_drift", "--params", "default", "--out", d],
                           check=True)
        print(f"notebook 05_drift --params default: {t} (target <= 130 s)")


if __name__ == "__main__":
    main()
