"""Timing of neighbour-sampled training steps against whole-graph steps (prints figures; not a test).

A synthetic CSBM graph of 50,000 nodes (mean degree 10, 64 features, 20 classes); for each
backbone (GCN as the text builds it, GIN and GAT as the authors' code builds them, hidden
64, the authors' fanouts (10, 25) for GIN / GAT) one Adam step on a batch of 10 nodes is
timed with ``neighbour_sampling`` off (every step propagates over the whole graph; the
text GCN gathers its 1-hop rows instead) and on (the batch's sampled 2-hop graph,
:mod:`clkit.models.sampling`), plus one full-graph evaluation pass: the whole graph at once
against layer-wise inference in chunks of 16,384 nodes.

Run: ``.venv/bin/python benchmarks/bench_drift_sampling.py [--nodes 50000] [--threads 1]``
"""

from __future__ import annotations

import argparse
import time

import torch


def best_of(fn, repeat=5):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    from clkit.data.graphs import csbm
    from clkit.models.gcn import GCN
    from clkit.models.gnn import GAT, GIN
    from clkit.models.sampling import set_neighbour_sampling

    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=50_000)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    g = csbm(args.nodes, 20, avg_degree=10.0, num_features=64, seed=0)
    print(f"CSBM: {g.num_nodes:,} nodes, {g.edge_index.shape[1]:,} directed edges, 64 features; "
          f"{args.threads} torch thread(s); best of 5")
    builders = {"gcn (text)": lambda: GCN(g.x, g.edge_index, 20, hidden=64),
                "gin (10, 25)": lambda: GIN(g.x, g.edge_index, 20, hidden=64, fanouts=(10, 25)),
                "gat (10, 25)": lambda: GAT(g.x, g.edge_index, 20, hidden=64, fanouts=(10, 25))}
    gen = torch.Generator().manual_seed(0)
    batch = torch.randperm(g.num_nodes, generator=gen)[:10]
    yb = g.y[batch]
    print(f"{'backbone':<14}{'full step':>12}{'sampled step':>14}{'speed-up':>10}"
          f"{'full eval':>12}{'chunked eval':>14}")
    for name, build in builders.items():
        row = []
        for sampled in (False, True):
            torch.manual_seed(0)
            net = set_neighbour_sampling(build(), sampled, seed=0)
            opt = torch.optim.Adam(net.parameters(), lr=5e-3)

            def step():
                net.train()
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(batch), yb).backward()
                opt.step()

            step()   # warm-up
            row.append(best_of(step))
        evals = []
        for sampled in (False, True):
            net = set_neighbour_sampling(build(), sampled, seed=0).eval()
            with torch.no_grad():
                evals.append(best_of(lambda: net(torch.arange(g.num_nodes)), repeat=2))
        print(f"{name:<14}{row[0] * 1e3:>10.1f}ms{row[1] * 1e3:>12.1f}ms{row[0] / row[1]:>9.1f}x"
              f"{evals[0]:>11.2f}s{evals[1]:>13.2f}s")


if __name__ == "__main__":
    main()
