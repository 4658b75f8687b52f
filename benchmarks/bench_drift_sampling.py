"""Timing of neighbour-sampled training steps against whole-graph steps (prints figures; not a test).

A synthetic CSBM graph of 50,000 nodes (mean degree 10, 64 features, 20 classes); for each
backbone (GCN as the text builds it, GIN and GAT as the authors' code builds them, hidden
64, the authors' fanouts (10, 25) for GIN / GAT) one Adam step on a batch of 10 nodes is
timed with ``neighbour_sampling`` off (every step propagates over the whole graph; the
text GCN gathers its 1-hop rows instead) and on (the batch's sampled 2-hop graph,
:mod:`clkit.models.sampling`), plus one full-graph evaluation pass: the whole graph at once
against layer-wise inference in chunks of 16,384 nodes.

Then the block sampler alone at Reddit's mean degree (491 in-edges a node, self-loop included;
``--degree``): :func:`clkit.models.sampling.sample_blocks` with the authors' fanouts (10, 25)
for a batch of 10 targets (a DRIFT step) and of 1,024 (a Joint batch), against the earlier
algorithm kept here as the reference (it gathered every in-edge of the frontier, drew a key
per edge and argsorted them, and filled a node-id map of size N on every call). The graph is
a random CSR of ``--sampler-nodes`` nodes at that degree (the sampler's cost depends on the
frontier's degrees, not on N, except the reference's map of size N).

Run: ``.venv/bin/python benchmarks/bench_drift_sampling.py [--nodes 50000] [--threads 1]
[--degree 491] [--sampler-nodes 40000] [--skip-steps]``
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


def reference_sample_blocks(crow, col, targets, fanouts, generator):
    """The earlier sampler (before issue 52): every in-edge of the frontier, a key per edge, one argsort."""
    num_nodes = len(crow) - 1
    local = torch.full((num_nodes,), -1, dtype=torch.int64)
    local[targets] = torch.arange(len(targets))
    nodes, sizes = targets, []
    for fanout in reversed(fanouts):
        idx = nodes
        starts = crow[idx]
        lens = crow[idx + 1] - starts
        total = int(lens.sum())
        offsets = torch.cumsum(lens, 0) - lens
        rowid = torch.repeat_interleave(torch.arange(len(idx)), lens)
        pos = torch.repeat_interleave(starts - offsets, lens) + torch.arange(total)
        src = col[pos]
        keys = torch.rand(len(rowid), generator=generator, dtype=torch.float64)
        order = torch.argsort(rowid.double() * 2.0 + keys)
        rank = torch.arange(len(rowid)) - torch.repeat_interleave(offsets, lens)
        keep = order[rank < fanout]
        src = src[keep]
        new = torch.unique(src[local[src] < 0])
        local[new] = torch.arange(len(nodes), len(nodes) + len(new))
        nodes = torch.cat([nodes, new])
        sizes.append(len(keep))
    return nodes, sizes


def bench_sampler(num_nodes, degree, repeat=20):
    """Times of one 2-layer (10, 25) draw at ``degree`` in-edges a node: (batch, reference ms, new ms)."""
    from clkit.models.sampling import sample_blocks

    gen = torch.Generator().manual_seed(0)
    crow = torch.arange(num_nodes + 1, dtype=torch.int64) * degree
    col = torch.randint(0, num_nodes, (num_nodes * degree,), generator=gen)
    print(f"\nblock sampler, fanouts (10, 25), random graph of {num_nodes:,} nodes x {degree} in-edges "
          f"({num_nodes * degree / 1e6:.1f}M edges); best of {repeat}")
    print(f"{'targets':>8}{'reference (argsort)':>22}{'Floyd, kept only':>20}{'speed-up':>10}{'kept edges':>12}")
    for batch in (10, 1024):
        targets = torch.randperm(num_nodes, generator=gen)[:batch]
        g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
        ref = best_of(lambda: reference_sample_blocks(crow, col, targets, [10, 25], g1), repeat)
        new = best_of(lambda: sample_blocks(crow, col, targets, [10, 25], generator=g2), repeat)
        kept = sum(int(a.col.numel()) for a in sample_blocks(crow, col, targets, [10, 25], generator=g2).adjs)
        print(f"{batch:>8}{ref * 1e3:>20.2f}ms{new * 1e3:>18.2f}ms{ref / new:>9.1f}x{kept:>12,}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=50_000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--degree", type=int, default=491)
    ap.add_argument("--sampler-nodes", type=int, default=40_000)
    ap.add_argument("--skip-steps", action="store_true", help="only the sampler at --degree")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if not args.skip_steps:
        bench_steps(args.nodes)
    bench_sampler(args.sampler_nodes, args.degree)


def bench_steps(nodes):
    from clkit.data.graphs import csbm
    from clkit.models.gcn import GCN
    from clkit.models.gnn import GAT, GIN
    from clkit.models.sampling import set_neighbour_sampling

    g = csbm(nodes, 20, avg_degree=10.0, num_features=64, seed=0)
    print(f"CSBM: {g.num_nodes:,} nodes, {g.edge_index.shape[1]:,} directed edges, 64 features; "
          f"{torch.get_num_threads()} torch thread(s); best of 5")
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
