"""Time of importing clkit and of resolving plugin names (target: entry-point discovery < 50 ms).

Run: .venv/bin/python benchmarks/bench_plugins.py [--edge]

``--edge`` also times EDGE's ground truth with the batched learner and with an ordinary
``Strategy`` trained sequence after sequence (``clkit.plugins.train_sequences_sequentially``).

Each figure is measured in a fresh interpreter (cold imports) with the example plugin made
visible the way pip would: its distribution metadata (``*.dist-info/entry_points.txt``) on
``sys.path``.
"""

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SNIPPET = r"""
import sys, time
sys.path.insert(0, {site!r})
t0 = time.process_time(); import clkit; t1 = time.process_time()
from clkit import plugins; import importlib.metadata; t2 = time.process_time()
import clkit.strategies._all; t2b = time.process_time()
eps = plugins.strategy_entry_points(); t3 = time.process_time()
eps = plugins.strategy_entry_points(); t4 = time.process_time()
names = plugins.available_strategies(); t5 = time.process_time()
cls = plugins.resolve_strategy("tiny_replay"); t6 = time.process_time()
cls2 = plugins.resolve_strategy("clkit.strategies.importance:EWC"); t7 = time.process_time()
print(t1 - t0, t2 - t1, t2b - t2, t3 - t2b, t4 - t3, t5 - t4, t6 - t5, t7 - t6, len(names))
"""

LABELS = ["import clkit", "import clkit.plugins, importlib.metadata", "import every strategy (torch, scipy)",
          "entry-point discovery (first)",
          "entry-point discovery (again)", "available_strategies()", "resolve 'tiny_replay' (imports plugin)",
          "resolve an import path"]


def main(repeats: int = 3):
    from tests.plugin_env import install_example_plugin

    site = install_example_plugin(Path(tempfile.mkdtemp()) / "site")
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", SNIPPET.format(site=str(site))], capture_output=True, text=True,
                             check=True, cwd=ROOT)
        runs.append([float(v) for v in out.stdout.split()])
    print(f"{len(runs[0]) and int(runs[0][-1])} strategy names; best of {repeats} fresh interpreters:")
    for i, label in enumerate(LABELS):
        best = min(r[i] for r in runs)
        print(f"  {label:45s} {1000 * best:9.1f} ms")
    print("target: entry-point discovery under 50 ms")


def bench_edge_ground_truth():
    """EDGE's ground truth, 90 sequences (6 classes, 3 tasks): batched finetune vs an ordinary Strategy."""
    import time

    import numpy as np

    from clkit.edge import enumerate_sequences
    from clkit.edge.learners import LearnerConfig, train_sequences
    from clkit.plugins import train_sequences_sequentially

    rng = np.random.default_rng(0)
    x = (rng.normal(size=(6, 100, 196)) + np.eye(6, 196)[:, None, :]).astype(np.float32)
    seqs = enumerate_sequences(6, 3)
    cfg = LearnerConfig(hidden=32, epochs=2)
    t0 = time.process_time()
    train_sequences(x, x, seqs, "finetune", cfg)
    t1 = time.process_time()
    train_sequences_sequentially(x, x, seqs, "naive", cfg)
    t2 = time.process_time()
    print(f"EDGE ground truth, {len(seqs)} sequences x 3 tasks, 100 images per class, 2 epochs (CPU time):")
    print(f"  batched finetune (clkit.edge.learners)          {t1 - t0:8.2f} s")
    print(f"  ordinary Strategy, sequence after sequence      {t2 - t1:8.2f} s")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="fresh interpreters per figure (best printed)")
    ap.add_argument("--edge", action="store_true", help="also time EDGE's ground truth (CPU time)")
    args = ap.parse_args()
    main(args.repeats)
    if args.edge:
        bench_edge_ground_truth()
