"""The exact 10 classes / 5 tasks ground truth of the frozen-feature methods, keyed on their state (printed, never asserted).

Run: ``.venv/bin/python benchmarks/bench_edge_state_truth.py [--methods simplecil ranpac_fixed ranpac]
[--projection-dim 256] [--prefix-sample 90]`` (``--help`` lists the options). Times are wall-clock seconds on
one torch thread (``time.perf_counter``).

For each method: the number of states it trains (:func:`clkit.edge.prefix.count_states` of its declared
``truth_state``) against the 247,005 nodes of the prefix tree, and the time of the whole exact truth over all
113,400 sequences of 10 classes in 5 tasks of 2 -- fabricated 10-class data (Gaussian classes, 32 dimensions,
100 training / 50 test rows per class; EDGE's one-hidden-layer MLP of width 64 as the frozen extractor).
With ``--prefix-sample N`` the prefix-tree walk also trains the first ``N`` sequences, and the state truth's
accuracies of those sequences are compared with it (the same numbers, printed as the largest difference); the
full prefix walk at 10/5 is what issue 50 estimates at ~37 minutes for SimpleCIL on one CPU core.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None):
    from clkit.edge import enumerate_sequences
    from clkit.edge.learners import LearnerConfig, train_strategy_sequences
    from clkit.edge.prefix import count_states
    from clkit.strategies import RanPAC, SimpleCIL

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="+", default=["simplecil", "ranpac_fixed", "ranpac"],
                    choices=["simplecil", "ranpac_fixed", "ranpac"])
    ap.add_argument("--projection-dim", type=int, default=256, help="RanPAC's M (the class default is 1000)")
    ap.add_argument("--prefix-sample", type=int, default=90, help="sequences also trained by the prefix walk")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    C, D = 10, 32
    centres = 0.3 * rng.normal(size=(C, D))
    x_train = (centres[:, None] + rng.normal(size=(C, 100, D))).astype(np.float32)
    x_test = (centres[:, None] + rng.normal(size=(C, 50, D))).astype(np.float32)
    seqs = enumerate_sequences(10, 5)
    cfg = LearnerConfig(hidden=64, epochs=1, batch_size=256)
    prefix_nodes = sum(count_states(seqs, "prefix"))
    methods = {"simplecil": (SimpleCIL, {}), "ranpac_fixed": (RanPAC, {"projection_dim": args.projection_dim, "ridge": 1.0}),
               "ranpac": (RanPAC, {"projection_dim": args.projection_dim})}
    print(f"10 classes / 5 tasks: {len(seqs):,} sequences, {prefix_nodes:,} prefix-tree nodes")
    for name in args.methods:
        cls, kw = methods[name]
        t0 = time.perf_counter()
        out = train_strategy_sequences(x_train, x_test, seqs, cls, cfg, seed=0, strategy_kwargs=kw)
        dt = time.perf_counter() - t0
        states = sum(out.get("states_per_task", [prefix_nodes]))
        line = (f"{name:13s} state {out.get('truth_state', 'prefix'):9s} {states:6,} trainings "
                f"({out.get('states_per_task')}) exact truth {dt:8.1f} s; avg acc {100 * out['avg_acc'].mean():.2f} % "
                f"(spread {100 * np.ptp(out['avg_acc']):.2f} pp), final {100 * out['final_acc'].mean():.2f} %")
        if args.prefix_sample:
            sub = seqs[: args.prefix_sample]
            prefix_cls = type(f"Prefix{cls.__name__}", (cls,), {"truth_state": "prefix"})
            t0 = time.perf_counter()
            walk = train_strategy_sequences(x_train, x_test, sub, prefix_cls, cfg, seed=0, strategy_kwargs=kw)
            dp = time.perf_counter() - t0
            diff = np.nanmax(np.abs(walk["acc_matrix"] - out["acc_matrix"][: len(sub)]))
            nodes = sum(count_states(sub, "prefix"))
            line += (f"; prefix walk of the first {len(sub)} sequences ({nodes} nodes) {dp:.1f} s, "
                     f"largest difference {diff:.1e}; the whole prefix tree at that rate ~{dp / nodes * prefix_nodes / 60:.0f} min")
        print(line, flush=True)


if __name__ == "__main__":
    main()
