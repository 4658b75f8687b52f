"""Training-step cost of every strategy relative to naive fine-tuning (prints figures; never fails).

Same model (SmallCNN, 3x32x32 input, 30 outputs), same batch (128 rows) for every strategy. Each
strategy first learns two small tasks (so memories, penalties, constraints and teachers are in
place: GEM holds two constraints), then the median time of one ``train_step`` on task 3 is measured.
Memory sizes are the paper's (A-GEM 256 reference rows, GEM 256 rows per past task); a step then
touches 3x (A-GEM) and 5x (GEM, two past tasks) the rows of a naive step, which bounds the ratio
from below. Smaller memories are timed too.

Targets (issue 3): EWC, SI, MAS <= 1.5x; A-GEM <= 2.5x; GEM <= 4x naive.
With ``--notebook`` it also times the default run of notebook 04 (target <= 5 min on 2 cores).

Usage: .venv/bin/python benchmarks/bench_strategies.py [--repeat N] [--notebook]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

import torch

from clkit._seed import torch_seeded
from clkit.models.cnn import SmallCNN
from clkit.strategies import Task, available_strategies, make_strategy

TARGETS = {"ewc": 1.5, "si": 1.5, "mas": 1.5, "agem": 2.5, "gem": 4.0}
SKIP = {"gdumb": "trains from scratch on its memory at task ends; no per-step cost on incoming data",
        "cumulative": "a naive step on the union of the data (same per-step cost, more steps)"}


def tasks(n=256, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for t in range(3):
        x = torch.rand(n, 3, 32, 32, generator=g)
        y = 10 * t + torch.randint(0, 10, (n,), generator=g)
        out.append(Task(x, y, task_id=t, classes=tuple(range(10 * t, 10 * t + 10))))
    return out


def step_time(name, data, repeat, **override):
    with torch_seeded(0):
        model = SmallCNN(3, 30)
    kw = {"memory_size": 200, "gem_patterns_per_task": 256, "agem_sample_size": 256, **override}
    from clkit.curriculum import strategy_kwargs

    s = make_strategy(name, model, scenario="task", epochs=1, batch_size=128, **strategy_kwargs(name, kw))
    for task in data[:2]:
        s.train_task(task)
    t3 = data[2]
    s._register_task(t3)
    s.before_task(t3)
    xb, yb = t3.x[:128], t3.y[:128]
    s.train_step(xb, yb, t3)  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        s.train_step(xb, yb, t3)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--notebook", action="store_true")
    args = ap.parse_args()
    data = tasks()
    print(f"torch threads: {torch.get_num_threads()}")
    base = step_time("naive", data, args.repeat)
    print(f"{'strategy':<20}{'step (ms)':>10}{'x naive':>9}  target")
    print(f"{'naive':<20}{base * 1e3:>10.1f}{1.0:>9.2f}")
    for name in available_strategies():
        if name == "naive":
            continue
        if name in SKIP:
            print(f"{name:<20}{'-':>10}{'-':>9}  ({SKIP[name]})")
            continue
        try:
            t = step_time(name, data, args.repeat)
        except (TypeError, ValueError) as exc:   # strategies for other model families (graphs)
            print(f"{name:<20}{'-':>10}{'-':>9}  (not applicable to an image CNN: {str(exc)[:60]})")
            continue
        target = TARGETS.get(name)
        mark = "" if target is None else f"<= {target}x {'ok' if t / base <= target else 'MISSED'}"
        print(f"{name:<20}{t * 1e3:>10.1f}{t / base:>9.2f}  {mark}")
    # the memory work grows with the rows it touches: A-GEM's reference batch, GEM's rows per past task
    for name, kw in [("agem", {"agem_sample_size": 128}), ("gem", {"gem_patterns_per_task": 64})]:
        t = step_time(name, data, args.repeat, **kw)
        label = f"{name} {kw}"
        print(f"{label:<20}{t * 1e3:>10.1f}{t / base:>9.2f}  (targets above are for the paper's 256 rows)")
    if args.notebook:
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "clkit.run", "run", "04_curriculum", "--params", "default",
                            "--out", out], check=True)
            print(f"notebook 04_curriculum, default parameters: {time.perf_counter() - t0:.1f} s (target <= 300 s)")


if __name__ == "__main__":
    main()
