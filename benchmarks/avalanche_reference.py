"""Reference figures for issue 17: Avalanche 0.6's cost per training iteration, same set-up as
part 1 of ``bench_strategies.py`` (prints figures; not part of the kit, its tests or CI).

Avalanche is not a clkit dependency. Run this in a separate environment::

    python3 -m venv /tmp/ava && /tmp/ava/bin/pip install torch==2.14.1 avalanche-lib==0.6.0 quadprog
    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647 \
        /tmp/ava/bin/python benchmarks/avalanche_reference.py > avalanche.txt

(The two glibc settings keep freed memory mapped between steps, as ``bench_strategies.py
--allocator steady`` does for clkit's steps.)

(``quadprog``: Avalanche's GEM calls it, but avalanche-lib does not install it.) The loop-only
figures it prints (``median_loop_ms``, first iteration to last epoch) are quoted in
``bench_strategies.AVALANCHE_HERE``.

Caveat found while measuring: Avalanche 0.6's SI is inert on CPU (it stores its reference weights
with ``param.detach().cpu()``, which on CPU is a view of the live weight, so every weight change it
records is 0 and its penalty stays 0); its timing covers the work it does, not a working SI.

Set-up: MLP 784-256-10, SGD(lr=0.01, momentum=0.9), train_mb_size=64, 1 CPU thread.
3 experiences of 512 random rows; labels 2t + randint(0,2) (class-incremental, 10 outputs).
Each measurement: fresh model+strategy, train exp1 and exp2 (1 epoch each, untimed),
then time.thread_time() around strategy.train(exp3) with train_epochs=EPOCHS.
"""
import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import argparse
import json
import statistics
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

try:   # only in the Avalanche venv; --help works without it
    import avalanche
    from avalanche.benchmarks.scenarios.deprecated.generic_benchmark_creation import (
        create_generic_benchmark_from_tensor_lists,
    )
    from avalanche.core import SupervisedPlugin
    from avalanche.training import (
        AGEM,
        EWC,
        GEM,
        LwF,
        MAS,
        Naive,
        SynapticIntelligence,
    )
except ImportError:
    avalanche = None
    SupervisedPlugin = object

EPOCHS = int(os.environ.get("EPOCHS", 4))
REPS = int(os.environ.get("REPS", 5))
N_PER_EXP = 512
MB = 64

# ---------------------------------------------------------------- data
g = torch.Generator().manual_seed(0)
train_tensors, test_tensors = [], []
for t in range(3):
    x = torch.rand(N_PER_EXP, 784, generator=g)
    y = 2 * t + torch.randint(0, 2, (N_PER_EXP,), generator=g)
    train_tensors.append([x, y])
    test_tensors.append([x[:64].clone(), y[:64].clone()])
train_stream = None   # Avalanche's experiences, built in main()


def make_model():
    return nn.Sequential(
        nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)
    )


class IterTimer(SupervisedPlugin):
    """Counts iterations and records thread_time from the first iteration's start
    to the end of the last epoch (excludes per-experience setup/teardown such as
    dataloader creation, EWC Fisher / MAS importance / GEM memory update)."""

    def __init__(self):
        super().__init__()
        self.reset()

    def reset(self):
        self.iters = 0
        self.t_first = None
        self.t_last = None

    def before_training_iteration(self, strategy, **kw):
        if self.t_first is None:
            self.t_first = time.thread_time()

    def after_training_iteration(self, strategy, **kw):
        self.iters += 1

    def after_training_epoch(self, strategy, **kw):
        self.t_last = time.thread_time()


STRATS = {
    "Naive": lambda **kw: Naive(**kw),
    "EWC": lambda **kw: EWC(ewc_lambda=1, mode="separate", **kw),
    "SI": lambda **kw: SynapticIntelligence(si_lambda=1, **kw),
    "MAS": lambda **kw: MAS(lambda_reg=1, **kw),
    "LwF": lambda **kw: LwF(alpha=2, temperature=2, **kw),
    "A-GEM (256/256)": lambda **kw: AGEM(patterns_per_exp=256, sample_size=256, **kw),
    "GEM (256)": lambda **kw: GEM(patterns_per_exp=256, memory_strength=0.5, **kw),
    "A-GEM (256/64)": lambda **kw: AGEM(patterns_per_exp=256, sample_size=64, **kw),
    "GEM (64)": lambda **kw: GEM(patterns_per_exp=64, memory_strength=0.5, **kw),
}


def run_strategy(name, seed):
    torch.manual_seed(seed)
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    timer = IterTimer()
    strat = STRATS[name](
        model=model,
        optimizer=opt,
        criterion=nn.CrossEntropyLoss(),
        train_mb_size=MB,
        train_epochs=1,
        eval_mb_size=MB,
        device="cpu",
        plugins=[timer],
        evaluator=None,  # -> EvaluationPlugin() with no metrics, no loggers
    )
    strat.train(train_stream[0])
    strat.train(train_stream[1])
    strat.train_epochs = EPOCHS
    timer.reset()
    t0 = time.thread_time()
    strat.train(train_stream[2])
    t1 = time.thread_time()
    n = timer.iters
    return (t1 - t0) / n, (timer.t_last - timer.t_first) / n, n


def bare_torch(seed, steps=32 * 4):
    torch.manual_seed(seed)
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = train_tensors[2]
    perm = torch.randperm(N_PER_EXP)
    batches = [
        (x[perm[i : i + MB]], y[perm[i : i + MB]]) for i in range(0, N_PER_EXP, MB)
    ]
    # warm-up
    for xb, yb in batches:
        opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
    t0 = time.thread_time()
    for k in range(steps):
        xb, yb = batches[k % len(batches)]
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
    t1 = time.thread_time()
    return (t1 - t0) / steps


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description="Avalanche 0.6's cost per training iteration in the set-up of bench_strategies.py part 1 "
                    "(the reference figures it quotes).",
        epilog="Needs avalanche-lib 0.6.0 in its own venv (see the module docstring); prints JSON, then a "
               "Markdown table. Never fails on speed.")
    ap.add_argument("--epochs", type=int, default=EPOCHS,
                    help="epochs on the timed third experience (default: $EPOCHS or 4)")
    ap.add_argument("--reps", type=int, default=REPS, help="repetitions, medians printed (default: $REPS or 5)")
    return ap.parse_args(argv)


def main(argv=None):
    global EPOCHS, REPS, train_stream
    args = parse_args(argv)
    if avalanche is None:
        sys.exit("avalanche_reference.py needs avalanche-lib 0.6.0, which is not a clkit dependency: "
                 "python3 -m venv /tmp/ava && /tmp/ava/bin/pip install torch==2.14.1 avalanche-lib==0.6.0 "
                 "quadprog, then run it with /tmp/ava/bin/python")
    EPOCHS, REPS = args.epochs, args.reps
    train_stream = list(create_generic_benchmark_from_tensor_lists(
        train_tensors, test_tensors, task_labels=[0, 0, 0]).train_stream)
    names = list(STRATS)
    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always")
        # untimed warm-up round (lazy imports, allocator, qp solver init)
        for nm in names:
            run_strategy(nm, 1234)
        bare_torch(1234)
        res = {nm: [] for nm in names}
        res_loop = {nm: [] for nm in names}
        res_bare = []
        iters = {}
        for r in range(REPS):
            order = names[r % len(names):] + names[: r % len(names)]  # rotate
            for nm in order:
                tot, loop, n = run_strategy(nm, r)
                res[nm].append(tot)
                res_loop[nm].append(loop)
                iters[nm] = n
            res_bare.append(bare_torch(r))
            print(f"rep {r} done", file=sys.stderr, flush=True)
    warn_msgs = sorted({f"{w.category.__name__}: {w.message}" for w in wlist})

    med = {nm: statistics.median(v) for nm, v in res.items()}
    med_loop = {nm: statistics.median(v) for nm, v in res_loop.items()}
    bare = statistics.median(res_bare)
    out = {
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "avalanche": avalanche.__version__,
        },
        "epochs": EPOCHS,
        "reps": REPS,
        "iters": iters,
        "raw_s_per_iter": res,
        "raw_loop_s_per_iter": res_loop,
        "raw_bare_s_per_iter": res_bare,
        "median_ms": {k: v * 1e3 for k, v in med.items()},
        "median_loop_ms": {k: v * 1e3 for k, v in med_loop.items()},
        "ratio": {k: v / med["Naive"] for k, v in med.items()},
        "ratio_loop": {k: v / med_loop["Naive"] for k, v in med_loop.items()},
        "bare_ms": bare * 1e3,
        "warnings": warn_msgs,
    }
    print(json.dumps(out, indent=1))
    print()
    print("| method | iters | Avalanche ms/iter (train() total) | ratio to Naive | loop-only ms/iter | loop-only ratio |")
    print("|---|---|---|---|---|---|")
    for nm in names:
        print(
            f"| {nm} | {iters[nm]} | {med[nm]*1e3:.3f} | {med[nm]/med['Naive']:.2f} | "
            f"{med_loop[nm]*1e3:.3f} | {med_loop[nm]/med_loop['Naive']:.2f} |"
        )
    print(f"\nbare torch step: {bare*1e3:.3f} ms/iter")
    print(f"Naive / bare = {med['Naive']/bare:.2f}")


if __name__ == "__main__":
    main()
