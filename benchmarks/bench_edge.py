"""Timings of clkit.edge (printed, never asserted).

Run: ``.venv/bin/python benchmarks/bench_edge.py [--sequences-only] [--markdown docs/generated/bench-edge.md]``
(``--help`` lists the options). All times are CPU times (``time.process_time``).

- hard + easy sequence generation for 100 classes / 10 tasks and 200 / 10, in one run on
  the same matrices: the authors' released procedure (github.com/AIGNLAI/EDGE,
  ``PILOT/utils/edge.py`` at commit d6f68a0) *as released* -- loaded from a checkout
  given with ``--authors-repo`` (``git clone https://github.com/AIGNLAI/EDGE``), its
  ``clip`` import stubbed (the similarity is passed in), nothing else changed; it
  hard-codes N = 200 and keeps the first easy candidate -- and as a *bug-fixed
  transcription* (N = n instead of the hard-coded 200, the easy update, the role
  pairing fixed; with its loops and vectorised), clkit's version of the paper's
  Algorithms 1-2 alone (``improve=False``) and clkit with the incremental local search
  (the default). Each with the S(O) of its hard and easy sequence. (The paper reports
  0.5 s and 0.9 s.);
- enumeration of 9 classes / 3 tasks (1680 sequences);
- the ground truth of the notebook's default: all 2,520 sequences of 8 classes / 4
  tasks, per learner, through the prefix tree; and the sampled ground truth
  (``truth: sample``) of 256 uniformly drawn sequences.
"""

from __future__ import annotations

import time

import numpy as np


def best_of(fn, repeat=3):
    """Least CPU time (``time.process_time``, seconds) of ``repeat`` calls, and the last result."""
    times = []
    for _ in range(repeat):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return min(times), out


def _authors_partition(cluster_sim, n, k):
    """Complete linkage on ``cluster_sim`` into k clusters, balanced into k tasks of n // k."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    d = np.array(cluster_sim, dtype=float)
    np.fill_diagonal(d, 0)
    ids = fcluster(linkage(squareform(d, checks=False), method="complete"), k, criterion="maxclust")
    size = n // k
    groups = [np.flatnonzero(ids == g).tolist() for g in range(1, k + 1)]
    tasks = [[] for _ in range(k)]
    for g in sorted(groups, key=len, reverse=True):
        chunks = [g[s:s + size] for s in range(0, len(g), size)] if len(g) >= size else [g]
        for ch in chunks:
            min(tasks, key=len).extend(ch)
    for t in tasks:                                   # move the overflow to the smallest task
        while len(t) > size:
            min(tasks, key=len).append(t.pop())
    return tasks


def _authors_order(sim, tasks, pick):
    """Greedy task order on mean task-to-task similarity (start: largest row sum)."""
    k = len(tasks)
    P = np.zeros((len(sim), k))
    for t, members in enumerate(tasks):
        P[members, t] = 1.0 / len(members)
    ts = P.T @ sim @ P                                # mean similarity between tasks
    np.fill_diagonal(ts, 0.0)
    order = [int(np.argmax(ts.sum(axis=1)))]
    left = np.ones(k, dtype=bool)
    left[order[0]] = False
    acc = ts[order[0]].copy()                         # summed similarity to the tasks so far
    while left.any():
        cand = np.flatnonzero(left)
        nxt = int(cand[np.argmin(acc[cand]) if pick is min else np.argmax(acc[cand])])
        order.append(nxt)
        left[nxt] = False
        acc += ts[nxt]
    return [c for t in order for c in tasks[t]]


def _adjacent_mean(sim, order, k):
    seq = np.asarray(order).reshape(k, -1)
    return sim[seq[:-1, :, None], seq[1:, None, :]].mean()


def _authors_order_loops(sim, tasks, pick):
    """The same greedy order with the released code's Python loops (pairs, O(K^3) sums)."""
    k = len(tasks)
    ts = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            if i != j:
                tot = 0.0
                for a in tasks[i]:
                    for b in tasks[j]:
                        tot += sim[a][b]
                ts[i][j] = tot / (len(tasks[i]) * len(tasks[j]))
    order = [int(np.argmax(np.sum(ts, axis=1)))]
    left = set(range(k)) - set(order)
    while left:
        nxt = pick(left, key=lambda x: sum(ts[t][x] for t in order))
        order.append(nxt)
        left.remove(nxt)
    return [c for t in order for c in tasks[t]]


def _adjacent_mean_loops(sim, order, k):
    m = len(order) // k
    tot, cnt = 0.0, 0
    for i in range(k - 1):
        for a in order[i * m:(i + 1) * m]:
            for b in order[(i + 1) * m:(i + 2) * m]:
                tot += sim[a][b]
                cnt += 1
    return tot / cnt


def authors_hard_easy_loops(sim, num_tasks):
    """:func:`authors_hard_easy` with the released code's loops (its time as released)."""
    sim = np.asarray(sim, dtype=np.float32)
    n = len(sim)
    counts = [c for c in (10, 20, 50, 100, 200) if c <= n]
    hard = [_authors_order_loops(sim, _authors_partition(sim, n, c), min) for c in counts]
    easy = [_authors_order_loops(sim, _authors_partition(1 - sim, n, c), max) for c in counts]
    hard = min(hard, key=lambda o: _adjacent_mean_loops(sim, o, num_tasks))
    easy = max(easy, key=lambda o: _adjacent_mean_loops(sim, o, num_tasks))
    return hard, easy


def authors_hard_easy(sim, num_tasks):
    """The authors' released hard/easy selection (see module docstring), as lists of classes.

    Their Python loops (over class pairs, and the O(K^3) greedy sums) are replaced by
    matrix products and running sums with the same result, so the time measured here
    is a lower bound on theirs.

    Candidates for cluster counts 10, 20, 50, 100, 200 (those <= N): hard from a
    partition clustered on the *similarity* read as a distance and ordered by least
    summed similarity, easy from ``1 - sim`` ordered by most; each picked by the mean
    adjacent-task similarity of the order cut into ``num_tasks`` tasks.
    """
    sim = np.asarray(sim, dtype=np.float32)
    n = len(sim)
    counts = [c for c in (10, 20, 50, 100, 200) if c <= n]
    hard = [_authors_order(sim, _authors_partition(sim, n, c), min) for c in counts]
    easy = [_authors_order(sim, _authors_partition(1 - sim, n, c), max) for c in counts]
    hard = min(hard, key=lambda o: _adjacent_mean(sim, o, num_tasks))
    easy = max(easy, key=lambda o: _adjacent_mean(sim, o, num_tasks))
    return hard, easy


def load_released(repo):
    """The authors' released ``utils/edge.py`` from a checkout of github.com/AIGNLAI/EDGE, as a module.

    Nothing is copied into clkit: the file is read from ``repo`` at run time. Its
    ``import clip`` (OpenAI's CLIP package, only needed to compute the similarity) is
    satisfied by an empty stand-in module; torch, numpy and scipy are the real ones.
    """
    import importlib.util
    import sys
    import types
    from pathlib import Path

    for rel in ("PILOT/utils/edge.py", "PyCIL/utils/edge.py"):
        path = Path(repo) / rel
        if path.is_file():
            break
    else:
        raise FileNotFoundError(f"--authors-repo {repo}: neither PILOT/utils/edge.py nor PyCIL/utils/edge.py "
                                "found; clone it with: git clone https://github.com/AIGNLAI/EDGE")
    saved = sys.modules.get("clip")
    sys.modules["clip"] = types.ModuleType("clip")     # stub: the similarity matrix is passed in
    try:
        spec = importlib.util.spec_from_file_location("edge_as_released", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        if saved is None:
            sys.modules.pop("clip", None)
        else:
            sys.modules["clip"] = saved
    return mod, str(path)


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] + " CPU times (time.process_time).")
    ap.add_argument("--sequences-only", action="store_true", help="only the hard/easy sequence generation")
    ap.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown (atomically), "
                    "e.g. docs/generated/bench-edge.md")
    ap.add_argument("--authors-repo", metavar="DIR", help="a checkout of github.com/AIGNLAI/EDGE: also time "
                    "its released hard/easy selection as released (PILOT/utils/edge.py, clip import stubbed)")
    args = ap.parse_args(argv)
    released = load_released(args.authors_repo) if args.authors_repo else None
    if released:
        print(f"authors' code as released: {released[1]}")
    else:
        print("authors' code as released: not timed (pass --authors-repo DIR, a clone of "
              "https://github.com/AIGNLAI/EDGE)")

    from clkit import edge
    from clkit.edge.experiment import load_enumerable_data, run_learners
    from clkit.edge.learners import LearnerConfig

    rows = []

    def report(what, seconds, note=""):
        rows.append((what, seconds, note))
        print(f"  {what}: {seconds * 1000:.1f} ms CPU {note}".rstrip() if seconds else f"  {what}: {note}")

    def s_pair(sim, k, hard, easy):
        try:
            return (f"{edge.sequence_score(sim, np.array(hard).reshape(k, -1)):.3f} / "
                    f"{edge.sequence_score(sim, np.array(easy).reshape(k, -1)):.3f}")
        except (ValueError, TypeError) as err:            # e.g. not a sequence of all N classes
            return f"not a valid sequence ({err})"

    edge.hard_sequence(np.eye(4), 2)  # import scipy.cluster once
    print("hard+easy sequence generation (CPU time, best of 5; the machine may be loaded)")
    for n, k in [(100, 10), (200, 10)]:
        # positive similarities like CLIP's text cosines (the authors' hard candidates
        # cluster on the similarity itself, which must then be a valid distance)
        X = 1.0 + np.random.default_rng(0).normal(size=(n, 64))
        sims = {"gaussian features": edge.cosine_similarity(X)}
        centres = 1.0 + np.random.default_rng(1).normal(size=(10, 64))
        Xc = centres[np.arange(n) % 10] + 0.6 * np.random.default_rng(2).normal(size=(n, 64))
        sims["10 planted clusters"] = edge.cosine_similarity(Xc)
        for label, sim in sims.items():
            if released:
                t_as, (xh, xe) = best_of(lambda: released[0]._select_hard_easy(sim.copy(), k), repeat=1)
                report(f"N={n} K={k} {label}: authors' procedure as released", t_as,
                       f"S(O) hard / easy {s_pair(sim, k, xh, xe)}")
            t_auth, (ah, ae) = best_of(lambda: authors_hard_easy(sim, k), repeat=5)
            t_rel, (rh, re_) = best_of(lambda: authors_hard_easy_loops(sim, k), repeat=1)
            assert rh == ah and re_ == ae          # the vectorised transcription picks the same orders
            s_ah = edge.sequence_score(sim, np.array(ah).reshape(k, -1))
            s_ae = edge.sequence_score(sim, np.array(ae).reshape(k, -1))
            t_paper, _ = best_of(lambda: (edge.hard_sequence(sim, k, improve=False),
                                          edge.easy_sequence(sim, k, improve=False)), repeat=5)
            t_full, (h, e) = best_of(lambda: (edge.hard_sequence(sim, k, return_info=True),
                                              edge.easy_sequence(sim, k, return_info=True)), repeat=5)
            r = edge.random_scores(sim, k, num_random=2000, seed=0)
            tag = f"N={n} K={k} {label}"
            report(f"{tag}: authors' procedure, bug-fixed transcription with its loops", t_rel,
                   f"S(O) hard / easy {s_ah:.3f} / {s_ae:.3f}")
            report(f"{tag}: authors' procedure, bug-fixed transcription vectorised", t_auth, "same orders")
            report(f"{tag}: clkit paper algorithm (improve=False)", t_paper,
                   f"S(O) hard / easy {h[1]['paper_score']:.3f} / {e[1]['paper_score']:.3f}")
            report(f"{tag}: clkit with search ({h[1]['method']})", t_full,
                   f"S(O) hard / easy {h[1]['score']:.3f} / {e[1]['score']:.3f}")
            report(f"{tag}: 2,000 random orders (range of S(O))", 0.0, f"S(O) {r.min():.3f} .. {r.max():.3f}")
    if not args.sequences_only:
        t, seqs = best_of(lambda: edge.enumerate_sequences(9, 3))
        report(f"enumerate 9 classes / 3 tasks ({len(seqs)} sequences)", t)
        data = load_enumerable_data(classes=list(range(8)), n_train=100, n_test=200, seed=0)
        all_seqs = edge.enumerate_sequences(8, 4)
        cfg = LearnerConfig(epochs=2, hidden=32)
        for learner in ("finetune", "ewc", "lwf", "ncm"):
            t, _ = best_of(lambda: run_learners(data, all_seqs, [learner], cfg, seed=0, progress=False), repeat=1)
            report(f"ground truth 8/4 (2,520 sequences, prefix tree), default scale, {learner}", t)
        from clkit.edge.report import ground_truth

        for learner in ("finetune", "ewc", "lwf", "ncm"):
            t, gt = best_of(lambda: ground_truth(data, all_seqs, [learner], config=cfg, seed=0, mode="sample",
                                                 samples=256, progress=False), repeat=1)
            report(f"sampled ground truth 8/4 (256 of 2,520 sequences), default scale, {learner}", t)
    if args.markdown:
        from clkit._io import atomic_write_text

        lines = ["| what | CPU ms | note |", "|---|---|---|"]
        lines += [f"| {w} | {s * 1000:.1f} | {note} |" if s else f"| {w} | | {note} |" for w, s, note in rows]
        atomic_write_text(args.markdown, "\n".join(lines) + "\n")
        print(f"wrote {args.markdown}")


if __name__ == "__main__":
    main()
