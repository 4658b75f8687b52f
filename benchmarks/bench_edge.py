"""Timings of clkit.edge (printed, never asserted).

Run: ``.venv/bin/python benchmarks/bench_edge.py``

- hard + easy sequence generation for 100 classes / 10 tasks and 200 / 10
  (issue targets <= 0.05 s and <= 0.1 s on 2 cores; the paper reports 0.5 s and 0.9 s);
- enumeration of 9 classes / 3 tasks (1680 sequences);
- training all 90 sequences of 6 classes / 3 tasks with every learner at the
  notebook's default scale (target <= 60 s).
"""

from __future__ import annotations

import time

import numpy as np


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main():
    from clkit import edge
    from clkit.edge.experiment import load_enumerable_data, run_learners
    from clkit.edge.learners import LearnerConfig

    edge.hard_sequence(np.eye(4), 2)  # import scipy.cluster once
    for n, k, target in [(100, 10, 0.05), (200, 10, 0.1)]:
        X = np.random.default_rng(0).normal(size=(n, 64))
        sim = edge.cosine_similarity(X)
        t_paper, _ = best_of(lambda: (edge.hard_sequence(sim, k, improve=False),
                                      edge.easy_sequence(sim, k, improve=False)))
        t_full, (h, e) = best_of(lambda: (edge.hard_sequence(sim, k, return_info=True),
                                          edge.easy_sequence(sim, k, return_info=True)))
        print(f"hard+easy N={n} K={k}: paper algorithm {t_paper:.3f} s, with local search {t_full:.3f} s "
              f"(target {target} s; paper 0.5/0.9 s) | S hard {h[1]['paper_score']:.3f} -> {h[1]['score']:.3f}, "
              f"easy {e[1]['paper_score']:.3f} -> {e[1]['score']:.3f}")
    t, seqs = best_of(lambda: edge.enumerate_sequences(9, 3))
    print(f"enumerate 9 classes / 3 tasks: {len(seqs)} sequences in {t * 1000:.1f} ms")
    t, seqs = best_of(lambda: edge.enumerate_sequences(12, 4), repeat=1)
    print(f"enumerate 12 classes / 4 tasks: {len(seqs)} sequences in {t:.2f} s")

    t = time.perf_counter()
    data = load_enumerable_data(n_train=500, n_test=500, seed=0)
    print(f"load Fashion-MNIST subset + pre-train NCM features: {time.perf_counter() - t:.1f} s")
    all_seqs = edge.enumerate_sequences(6, 3)
    total = 0.0
    for learner in ("finetune", "ewc", "lwf", "icarl", "ncm"):
        t = time.perf_counter()
        run_learners(data, all_seqs, [learner], LearnerConfig(), seed=0, progress=False)
        dt = time.perf_counter() - t
        total += dt
        print(f"train 90 sequences, {learner:8s}: {dt:.1f} s")
    print(f"train 90 sequences, all five learners (default scale): {total:.1f} s (target <= 60 s)")


if __name__ == "__main__":
    main()
