"""Training-step cost of every strategy relative to naive fine-tuning (prints figures; never fails).

Three parts:

1. **Step cost** (issues 17, 27): MLP 784-256-10 and ``small_cnn`` (3x32x32 -> 30), batch 64,
   class-incremental, one CPU thread. Each strategy learns two tasks (so penalties, teachers and
   memories are in place; EWC holds two Fisher terms, GEM two constraints), then one step on task 3
   is timed as ``train_task`` runs it. The table leads with clkit's milliseconds per step beside
   Avalanche 0.6's (``avalanche_reference.py`` run in its own venv, passed with ``--avalanche-json``;
   without it the quoted 2026-11-25 figures, and the table says so), then ratios with the bare
   PyTorch step on the same rows as the common unit, and, for A-GEM/GEM, the one-pass lower bound
   (a bare step on the batch and the memory rows stacked) and a hand-written exact one-pass step
   (:func:`projection_prototype`, checked against separate autograd passes on every run), with
   each case's minor page faults per step. On ``small_cnn`` clkit's A-GEM / GEM run their stacked
   rows in channels_last (``one_pass_channels_last``, the default on the CPU); the "NCHW pass" rows
   are the same steps with it off. ``--markdown FILE`` writes this table.
2. The same ratios for every registered strategy on SmallCNN (3x32x32, 30 outputs, batch 128).
3. End-of-task importance passes (EWC's per-sample Fisher, MAS's importance): clkit's (the
   outer-product shortcut for MLPs, one batched backward with per-sample products per layer for
   the transformer, ``torch.func.vmap`` over ``grad`` otherwise) against a per-sample autograd
   loop and one ordinary batched gradient.
4. Memory layout (``--only layout``): ``small_cnn`` at 8x8 (notebook 04's default), 32x32 and
   64x64 (the paper's) pixels, batch 64, in the default layout and in ``channels_last``
   (``make_backbone(..., memory_format="channels_last")``, notebook 04's ``memory_format``): ms
   per step of the bare step, naive, A-GEM and GEM (64 reference rows) in each layout, and the
   time channels_last saves.

Timing: one thread; CPU time of the thread (``time.thread_time``), so time spent descheduled on a
busy machine does not count; the strategies are timed in interleaved rounds (every strategy
once per round, the minimum of ``--inner`` steps), and a ratio is the median over rounds of the
per-round ratio to naive. Cache contention from other processes still inflates the
memory-bound parts: on a loaded machine, run it several times (``--runs``) and read the medians.

Allocator (``--allocator``): with glibc's default settings, how much of a step's memory goes back
to the system at the end of the step (and is page-faulted in again, zeroed, by the next) depends on
the sizes the *process* freed before: glibc raises its mmap and trim thresholds to the largest
block freed so far. Measured on small_cnn at 64 + 64 rows: 0 to 17,000 minor page faults per
step, up to twice the step's time, changing with which other cases ran in the same process. By
default (``steady``) the bench serves every block from the heap and never trims it (``mallopt``)
so no case pays for another's history; ``--allocator default`` leaves glibc as it is. The table
prints the minor page faults per step of every case either way. ``--allocator both`` runs part 1
once per allocator, each in its own process (glibc's settings cannot be undone in a process), and
``--markdown`` then writes both tables, each under its allocator's name (``--markdown`` without
``--allocator`` does so).

Usage: .venv/bin/python benchmarks/bench_strategies.py [--runs N] [--rounds R] [--quick] [--only PART]
       [--avalanche-json FILE] [--markdown docs/generated/bench-strategies.md]   (--help for all options)
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import statistics
import time
import warnings

import torch
import torch.nn.functional as F

from clkit._seed import torch_seeded
from clkit.curriculum import strategy_kwargs
from clkit.models import MLP
from clkit.models.cnn import SmallCNN
from clkit.strategies import Task, available_strategies, make_strategy

#: issue 27's targets (ratio to the bare torch step; 'met' also reads the ratio to naive)
TARGETS = {"ewc": 1.3, "si": 1.3, "mas": 1.3, "lwf": 1.3, "agem": 2.0, "gem": 3.0}
#: Avalanche 0.6.0 here (2-core AMD EPYC, torch 2.14.1, one thread, glibc heap kept as with
#: --allocator steady, 2026-11-25): ms per training iteration, first iteration to last epoch, median
#: of 5 (benchmarks/avalanche_reference.py; quoted)
AVALANCHE_HERE = {"naive": 1.46, "ewc": 2.39, "si": 2.19, "mas": 1.93, "lwf": 1.94, "agem": 6.17,
                  "agem (64 ref. rows)": 2.93, "gem": 7.74, "gem (64 rows/task)": 4.19}
SKIP = {"gdumb": "trains from scratch on its memory at task ends; no per-step cost on incoming data",
        "cumulative": "a naive step on the union of the data (same per-step cost, more steps)"}


def _cpu():
    return time.thread_time()


def _faults():
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt


#: glibc's mallopt parameters
M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4


def steady_allocator() -> str:
    """Serve every block from glibc's heap (no ``mmap``) and switch heap trimming off
    (``mallopt``), so memory a step frees stays mapped for the next step whatever the process
    allocated before; returns what was done. Outside glibc nothing changes."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        done = libc.mallopt(M_MMAP_MAX, 0) == 1 and libc.mallopt(M_TRIM_THRESHOLD, 2 ** 31 - 1) == 1
    except (OSError, AttributeError):
        done = False
    return ("steady (glibc mallopt: no mmap, no trimming)" if done
            else "as the system has it (not glibc, or mallopt refused)")


def interleaved(fns: dict, rounds: int, inner: int, faults: dict | None = None) -> dict[str, list[float]]:
    """Seconds per call of each callable: per round, the minimum of ``inner`` calls. ``faults``, if
    given, receives each callable's minor page faults per call (one mean per round)."""
    for fn in fns.values():   # warm-up
        for _ in range(3):
            fn()
    out = {k: [] for k in fns}
    if faults is not None:
        faults.update({k: [] for k in fns})
    for _ in range(rounds):
        for k, fn in fns.items():
            best = float("inf")
            f0 = _faults()
            for _ in range(inner):
                t0 = _cpu()
                fn()
                best = min(best, _cpu() - t0)
            if faults is not None:
                faults[k].append((_faults() - f0) / inner)
            out[k].append(best)
    return out


def ratios(times: dict[str, list[float]], base: str = "naive") -> dict[str, float]:
    """Median over rounds of each entry's per-round ratio to ``base``."""
    return {k: statistics.median(a / b for a, b in zip(v, times[base])) for k, v in times.items()}


# ---------------------------------------------------------------------- part 1: MLP table
def mlp_tasks(n=512, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for t in range(3):
        x = torch.rand(n, 784, generator=g)
        y = 2 * t + torch.randint(0, 2, (n,), generator=g)
        out.append(Task(x, y, task_id=t, classes=(2 * t, 2 * t + 1)))
    return out


def ready(name, model, data, batch, scenario, **kw):
    """``name`` after two tasks, positioned at the start of task 3; returns a one-step callable."""
    s = make_strategy(name, model, scenario=scenario, epochs=1, batch_size=batch, lr=0.01,
                      **strategy_kwargs(name, kw))
    for task in data[:2]:
        s.train_task(task)
    t3 = data[2]
    s.begin_task(t3)
    idx = torch.arange(batch)
    return s, (lambda: s.train_batch(t3, idx))   # the step train_task runs


MLP_CASES = [  # (label, strategy, kwargs, extra rows in the one stacked pass)
    ("naive", "naive", {}, 0),
    ("ewc", "ewc", {}, 0),
    ("si", "si", {}, 0),
    ("mas", "mas", {}, 0),
    ("lwf", "lwf", {}, 0),   # the teacher's pass is recorded at the task start (printed apart)
    ("agem (64 ref. rows)", "agem", {"memory_size": 256, "agem_sample_size": 64}, 64),
    ("gem (64 rows/task)", "gem", {"gem_patterns_per_task": 64}, 128),
    ("agem", "agem", {"memory_size": 256, "agem_sample_size": 256}, 256),
    ("gem", "gem", {"gem_patterns_per_task": 256}, 512),
]
CNN_CASES = [c for c in MLP_CASES if c[1] in ("naive", "agem", "gem")]
#: clkit's one-pass step in the NCHW layout (one_pass_channels_last=False), after its default
#: (channels_last stacked rows on the CPU) at 64 reference rows
CNN_CASES[2:2] = [("agem (64, NCHW pass)", "agem", {"memory_size": 256, "agem_sample_size": 64,
                                                    "one_pass_channels_last": False}, 64)]
CNN_CASES[4:4] = [("gem (64/task, NCHW pass)", "gem", {"gem_patterns_per_task": 64,
                                                       "one_pass_channels_last": False}, 128)]
#: the hand-written one-pass steps (projection_prototype) in the table: (method, extra rows) -> label
PROTO = {("agem", 64): "agem prototype (64)", ("gem", 128): "gem prototype (64/task)"}
#: Avalanche 0.6's names in avalanche_reference.py
AVA_NAMES = {"naive": "Naive", "ewc": "EWC", "si": "SI", "mas": "MAS", "lwf": "LwF", "agem": "A-GEM (256/256)",
             "agem (64 ref. rows)": "A-GEM (256/64)", "gem": "GEM (256)", "gem (64 rows/task)": "GEM (64)"}
#: the bare torch step of the quoted Avalanche run (ms)
AVALANCHE_HERE_BARE = 0.70


def bare_step(model, x, y):
    """A bare PyTorch step (zero_grad, forward, cross-entropy, backward, SGD with momentum 0.9)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def gathered_bare_step(model, task):
    """The bare step on rows 0..63 of ``task``, gathered by index every step (``index_select``) as a
    training loop fetches its batch and as clkit's steps (``train_batch``) do."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    idx = torch.arange(64)

    def step():
        xb, yb = task.x.index_select(0, idx), task.y.index_select(0, idx)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(xb), yb).backward()
        opt.step()

    return step


def projection_prototype(model, x, y, method="agem", batch=64, margin=0.5):
    """A hand-written exact one-pass A-GEM or GEM step for ``head(features(x))`` models (MLP,
    SmallCNN): the floor the kit's generic step is read against.

    ``x, y`` hold the batch (first ``batch`` rows) and the reference rows already stacked (A-GEM:
    one group; GEM: groups of ``batch`` rows, one per earlier task), so the prototype neither samples
    the memory nor gathers rows. One forward through the layers in order (the loop keeps each weight
    layer's input and output: no hooks), one backward to those outputs, each group's weight
    gradients from its own rows (``mm`` / the convolution's weight-gradient kernel) written into flat
    rows, the projection of the batch row (A-GEM: on the reference row; GEM: the dual for one or two
    constraints in closed form, :func:`clkit.strategies.projection.small_dual`, with ``margin``),
    then SGD with momentum 0.9 (PyTorch's fused kernel, as clkit's) on the projected row. Returns ``(step, grads)``: the step, and a
    function giving the gradient rows (for the exactness check).
    """
    from clkit.strategies._onepass import _group_rule
    from clkit.strategies.projection import small_dual

    layers = [*model.features, model.head]
    weighted = {m for m in layers if any(True for _ in m.parameters(recurse=False))}
    params = [p for m in layers for p in m.parameters(recurse=False)]
    sizes = [p.numel() for p in params]
    bounds = list(range(0, x.shape[0] + 1, batch))
    groups = list(zip(bounds, bounds[1:]))
    rows = torch.zeros(len(groups), sum(sizes))
    views = [[r.view(p.shape) for r, p in zip(row.split(sizes), params)] for row in rows]
    slot = {id(p): i for i, p in enumerate(params)}
    for p, v in zip(params, views[0]):
        p.grad = v                       # SGD reads the projected batch row
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9, fused=True)   # as clkit's

    def grads():
        h, rec = x, []
        for m in layers:
            o = m(h)
            if m in weighted:
                rec.append((m, h, o))
            h = o
        loss = sum(F.cross_entropy(h[lo:hi], y[lo:hi]) for lo, hi in groups)
        deltas = torch.autograd.grad(loss, [o for _, _, o in rec])
        with torch.no_grad():
            for (m, a, _), d in zip(rec, deltas):
                w, b = slot[id(m.weight)], slot[id(m.bias)]
                for g, (lo, hi) in enumerate(groups):
                    if isinstance(m, torch.nn.Linear):
                        torch.mm(d[lo:hi].T, a[lo:hi], out=views[g][w])
                        torch.sum(d[lo:hi], 0, out=views[g][b])
                    else:   # the convolution's weight-gradient kernel, as clkit calls it
                        gw, gb = _group_rule(m, a[lo:hi].detach(), d[lo:hi], None)
                        views[g][w].copy_(gw)
                        views[g][b].copy_(gb)
        return rows

    def step():
        grads()
        with torch.no_grad():
            if method == "agem":
                dots = torch.mv(rows, rows[1])          # (g.r, r.r)
                if dots[0] < 0:
                    rows[0].sub_(rows[1], alpha=float(dots[0] / dots[1]))
            else:
                Gg = torch.mv(rows[1:], rows[0])
                if bool((Gg < 0).any()):
                    gram = rows[1:] @ rows[1:].T
                    v = small_dual(gram.tolist(), Gg.tolist(), margin)
                    rows[0].addmv_(rows[1:].T, torch.tensor(v))
        opt.step()

    return step, grads


def prototype_error(model, x, y, batch=64):
    """Largest difference between the prototype's gradient rows and separate autograd passes."""
    _, grads = projection_prototype(model, x, y, "gem", batch)
    rows = grads().clone()
    worst = 0.0
    for row, lo in zip(rows, range(0, x.shape[0], batch)):
        sep = torch.autograd.grad(F.cross_entropy(model(x[lo:lo + batch]), y[lo:lo + batch]), list(model.parameters()))
        flat = torch.cat([g.reshape(-1) for g in sep])
        worst = max(worst, float((row - flat).abs().max()))
    return worst


def _setup(kind):
    """The three tasks and a model factory (same initial weights every call) of part 1's ``kind``
    (``"mlp"`` or ``"cnn"``)."""
    data = mlp_tasks() if kind == "mlp" else cnn_tasks(n=512)

    def net():
        with torch_seeded(0):
            return MLP(784, 10, hidden=(256,)) if kind == "mlp" else SmallCNN(3, 30)

    return data, net


def _proto_inputs(kind):
    """A fresh model of ``kind`` and 192 stacked rows for the prototype's exactness check."""
    data, net = _setup(kind)
    return net(), torch.cat([t.x for t in data])[:192], torch.cat([t.y for t in data])[:192]


def step_table(kind, cases, rounds, inner, faults=None):
    """CPU seconds per step (per round) of every case, the bare step and the one-pass lower bounds
    (and, into ``faults``, their minor page faults per step: see :func:`interleaved`).

    The lower bound of a projection with ``k`` memory rows is a bare step on ``64 + k`` stacked rows:
    one forward and one backward over every row the step must differentiate (the per-group weight
    gradients and the projection itself come on top of it).
    """
    data, net = _setup(kind)
    fns, keep = {}, []
    for label, name, kw, _ in cases:
        s, fn = ready(name, net(), data, 64, "class", **kw)
        keep.append(s)
        fns[label] = fn
    x, y = torch.cat([t.x for t in data])[:576], torch.cat([t.y for t in data])[:576]
    for extra in sorted({0} | {c[3] for c in cases}):
        fns[f"bare{64 + extra}"] = bare_step(net(), x[:64 + extra], y[:64 + extra])
    if kind == "mlp":
        fns["bare64 gathered"] = gathered_bare_step(net(), data[2])
    for (method, extra), label in PROTO.items():
        if any((c[1], c[3]) == (method, extra) for c in cases):
            fns[label] = projection_prototype(net(), x[:64 + extra], y[:64 + extra], method)[0]
    if "lwf" in fns:
        lwf = keep[[c[0] for c in cases].index("lwf")]
        fns["lwf record"] = lambda: lwf.record(data[2])   # once per task, before its first step
    return interleaved(fns, rounds, inner, faults)


def load_avalanche(path):
    """(ms per step by our label, bare ms, source) from a saved avalanche_reference.py JSON, or the quoted run."""
    if path is None:
        return ({k: v for k, v in AVALANCHE_HERE.items()}, AVALANCHE_HERE_BARE,
                "no Avalanche venv on this run: quoted from avalanche_reference.py, 2026-11-25, same machine kind")
    import json

    text = open(path).read()
    data = json.loads(text[:text.index("\n\n")] if "\n\n" in text else text)
    ms = {ours: data["median_loop_ms"][theirs] for ours, theirs in AVA_NAMES.items()
          if theirs in data["median_loop_ms"]}
    return ms, data["bare_ms"], f"measured now from {path} (Avalanche {data['versions']['avalanche']})"


def print_steps(runs, rounds, inner, avalanche_json=None, cnn_rounds=None, allocator=""):
    """Part 1: ms per step beside Avalanche's, then ratios to the bare torch step; returns Markdown."""
    ava, ava_bare, ava_source = load_avalanche(avalanche_json)
    print("1. Step cost: MLP 784-256-10 and small_cnn (3x32x32 -> 30), batch 64, class-incremental, one thread,\n"
          "   step on task 3 (two tasks learnt before), CPU time of the thread")
    rows, md_rows, records, errors = [], [], [], {}
    cnn_rounds = cnn_rounds or max(5, rounds // 2)
    for kind, cases, r_ in (("mlp", MLP_CASES, rounds), ("small_cnn", CNN_CASES, cnn_rounds)):
        per_run, per_run_faults = [], []
        for i in range(runs if kind == "mlp" else 1):
            faults = {}
            times = step_table("mlp" if kind == "mlp" else "cnn", cases, r_, inner if kind == "mlp" else 2, faults)
            per_run.append(times)
            per_run_faults.append(faults)
            if "lwf record" in times:
                records.append(ratios(times, "naive")["lwf record"])
        ms = {k: statistics.median(statistics.median(t[k]) for t in per_run) * 1e3 for k in per_run[0]}
        pf = {k: statistics.median(statistics.median(f[k]) for f in per_run_faults) for k in per_run[0]}
        rb = {k: statistics.median(ratios(t, "bare64")[k] for t in per_run) for k in per_run[0]}
        if kind == "mlp":
            gathered = rb["bare64 gathered"]
        rn = {k: statistics.median(ratios(t, "naive")[k] for t in per_run) for k in per_run[0]}
        listed = []
        for case in cases:   # each prototype right after the kit's step at 64 rows (per task)
            proto = None if "one_pass_channels_last" in case[2] else PROTO.get((case[1], case[3]))
            listed += [case] if proto is None else [case, (proto, case[1], {}, case[3])]
        errors[kind] = prototype_error(*_proto_inputs("mlp" if kind == "mlp" else "cnn"))
        for label, name, kw, extra in listed:
            target = TARGETS.get(label.split(" ")[0]) if (extra in (0, 64, 128)) else None
            bound = rb[f"bare{64 + extra}"] if extra else None
            met = "" if target is None else {(True, True): "yes", (True, False): "yes (x bare)",
                                             (False, True): "yes (x naive)", (False, False): "no"}[
                                                 (rb[label] <= target, rn[label] <= target)]
            a_ms = ava.get(label) if kind == "mlp" else None
            rows.append((kind, label, ms[label], a_ms, rb[label], None if a_ms is None else a_ms / ava_bare,
                         rn[label], bound, target, met, pf[label]))
        rows.append((kind, "bare torch step", ms["bare64"], ava_bare if kind == "mlp" else None, 1.0,
                     1.0 if kind == "mlp" else None, ms["bare64"] / ms["naive"], None, None, "", pf["bare64"]))

    def f(v, fmt):
        return "-" if v is None else format(v, fmt)

    head = ["model", "method", "clkit ms/step",
            "Avalanche 0.6 ms/step" + (" (quoted: no venv)" if avalanche_json is None else ""), "clkit x bare", "Avalanche x bare",
            "clkit x naive", "one-pass bound x bare", "target x bare", "met", "page faults/step"]
    print(f"{head[0]:<10}{head[1]:<22}{'clkit ms':>9}{'Aval. ms':>9}{'x bare':>8}{'Aval. x':>8}{'x naive':>8}"
          f"{'bound':>7}{'target':>7}  {'met':<14}{'faults':>7}")
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for kind, label, c_ms, a_ms, rb_, ra, rn_, bound, target, met, pf_ in rows:
        print(f"{kind:<10}{label:<22}{c_ms:>9.2f}{f(a_ms, '.2f'):>9}{rb_:>7.2f}x{f(ra, '.2f') + ('' if ra is None else 'x'):>8}{rn_:>7.2f}x"
              f"{f(bound, '.2f'):>7}{f(target, '.1f'):>7}  {met:<14}{pf_:>7.0f}")
        md.append(f"| {kind} | {label} | {c_ms:.2f} | {f(a_ms, '.2f')} | {rb_:.2f} | {f(ra, '.2f')} | {rn_:.2f} | "
                  f"{f(bound, '.2f')} | {f(target, '.1f')} | {met} | {pf_:.0f} |")
    steps = -(-len(mlp_tasks()[2]) // 64)
    record = statistics.median(records)
    notes = [
        f"Medians of {runs} run(s) x {rounds} interleaved rounds (MLP), of 1 run x {cnn_rounds} rounds (small_cnn); "
        "CPU time of one thread "
        "(`time.thread_time`), so time descheduled on a loaded machine does not count.",
        "Unit: the bare PyTorch step (zero_grad, forward, cross-entropy, backward, SGD momentum 0.9) on the same "
        "64 rows, with PyTorch's default SGD; 'x naive' is the ratio to clkit's naive step. clkit's SGD (and the "
        "prototypes') runs PyTorch's fused kernel, so 'x naive' compares like with like and 'x bare' includes that "
        "saving. Targets (issue 27): EWC/SI/MAS/LwF <= 1.3, A-GEM <= 2 and GEM <= 3 at 64 reference rows (per task "
        "for GEM); 'met': 'yes' where both ratios meet the target, 'yes (x bare)' or 'yes (x naive)' where only "
        "that one does.",
        "One-pass bound: a bare step on the batch and the memory rows stacked (64 + 64, 128, 256 or 512 rows): "
        "one forward and one backward over every row the step must differentiate. A-GEM/GEM 256 rows have no "
        "target; compare their ratio with this bound.",
        f"Avalanche: {ava_source}; 'Avalanche x bare' uses its own bare torch step ({ava_bare:.2f} ms). "
        "Its SI is inert on CPU (see avalanche_reference.py). Not measured for small_cnn.",
        f"LwF records the teacher's outputs once per task, outside the step: {record:.2f} naive steps for 512 "
        f"rows, +{record / steps:.2f}x per step over one epoch of {steps} steps.",
        "Prototypes: hand-written exact one-pass A-GEM / GEM steps (`projection_prototype`) with the batch and "
        "the reference rows stacked beforehand (no memory sampling, no gathering, no hooks, GEM's dual in closed "
        "form): the cheapest exact steps found here, so the floor to read the targets against. Their gradient "
        "rows equal separate autograd passes: largest difference "
        + ", ".join(("0, bitwise" if e == 0 else f"{e:.1e}") + f" ({k})" for k, e in errors.items()) + ".",
        f"Allocator: {allocator}. 'page faults/step': minor page faults of the thread per step (median over "
        "rounds; each is a 4 KiB page the step touched after the system took it back, at ~2 us each). With "
        "glibc's default settings they depend on what the process freed before (`--help`: Allocator).",
        "Layout (small_cnn): clkit's one-pass A-GEM / GEM step runs the stacked rows in channels_last on the "
        "CPU (`one_pass_channels_last`, parameters and gradients left contiguous); the 'NCHW pass' rows are the "
        "same step with `one_pass_channels_last=False`. The bare step, the one-pass bound and the prototypes "
        "run in the default (NCHW) layout, so clkit's default step can lie below that bound.",
        f"Every clkit step gathers its batch from the task by index (`train_batch`, as `train_task` runs it); "
        f"the bare step does not. A bare step that gathers its 64 rows the same way costs {gathered:.2f}x the "
        "bare step (MLP): that much of each clkit ratio is fetching the batch.",
    ]
    print("\n".join("(" + n + ")" for n in notes) + "\n")
    return md, notes


# ---------------------------------------------------------------------- part 2: SmallCNN
def cnn_tasks(n=256, seed=0, size=32):
    g = torch.Generator().manual_seed(seed)
    out = []
    for t in range(3):
        x = torch.rand(n, 3, size, size, generator=g)
        y = 10 * t + torch.randint(0, 10, (n,), generator=g)
        out.append(Task(x, y, task_id=t, classes=tuple(range(10 * t, 10 * t + 10))))
    return out


def print_cnn(rounds, inner):
    print("2. Every strategy: SmallCNN (3x32x32 -> 30), batch 128, task-incremental, step on task 3")
    data = cnn_tasks()
    fns, notes = {}, {}
    kw = {"memory_size": 200, "gem_patterns_per_task": 256, "agem_sample_size": 256}
    for name in available_strategies():
        if name in SKIP:
            notes[name] = SKIP[name]
            continue
        with torch_seeded(0):
            model = SmallCNN(3, 30)
        try:
            _, fns[name] = ready(name, model, data, 128, "task", **kw)
        except (TypeError, ValueError) as exc:   # strategies for other model families (graphs)
            notes[name] = f"not applicable to an image CNN: {str(exc)[:60]}"
    times = interleaved(fns, rounds, inner)
    r = ratios(times)
    print(f"{'strategy':<20}{'step (ms)':>10}{'x naive':>9}")
    for name in available_strategies():
        if name in notes:
            print(f"{name:<20}{'-':>10}{'-':>9}  ({notes[name]})")
        else:
            print(f"{name:<20}{statistics.median(times[name]) * 1e3:>10.1f}{r[name]:>9.2f}")
    print("(A-GEM: 256 reference rows, GEM: 256 rows per past task: a step touches 3x and 5x the rows "
          "of a naive step)\n")


# ---------------------------------------------------------------------- part 3: importance
def _loop(model, loss, x, y, transform):
    params = [p for p in model.parameters() if p.requires_grad]
    total = [torch.zeros_like(p) for p in params]
    for i in range(len(y)):
        for t, g in zip(total, torch.autograd.grad(loss(model(x[i:i + 1]), y[i:i + 1]), params)):
            t += transform(g)
    return total


def _time(fn, repeat=3):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = _cpu()
        fn()
        best = min(best, _cpu() - t0)
    return best


def print_importance(quick):
    from clkit.models.transformer import TimeSeriesTransformer
    from clkit.strategies._common import per_sample_mean

    print("3. End-of-task importance pass (per-sample gradients), one thread, CPU time")
    g = torch.Generator().manual_seed(0)
    with torch_seeded(0):
        mlp = MLP(784, 10, hidden=(256,)).eval()
        ctx = 96 if quick else 288
        tr = TimeSeriesTransformer(12, context=ctx, d_model=32, num_layers=8, num_heads=4).eval()
    cases = [("MLP 784-256-10, 512 rows, EWC Fisher", mlp, torch.rand(512, 784, generator=g),
              torch.randint(0, 10, (512,), generator=g), F.cross_entropy, torch.square),
             ("MLP 784-256-10, 512 rows, MAS", mlp, torch.rand(512, 784, generator=g),
              torch.zeros(512), lambda o, t: o.pow(2).sum(), torch.abs),
             (f"transformer (8 blocks, {ctx} steps), 64 windows, EWC Fisher", tr,
              torch.randn(64, ctx, 12, generator=g), torch.randn(64, 1, generator=g), F.mse_loss, torch.square)]
    print(f"{'model, rows, importance':<58}{'clkit (ms)':>11}{'loop (ms)':>11}{'batch grad (ms)':>17}")
    for label, model, x, y, loss, transform in cases:
        params = [p for p in model.parameters() if p.requires_grad]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fast = _time(lambda: per_sample_mean(model, loss, x, y, transform))
            slow = _time(lambda: _loop(model, loss, x, y, transform), repeat=1)
            batch = _time(lambda: torch.autograd.grad(loss(model(x), y), params))
        print(f"{label:<58}{fast * 1e3:>11.0f}{slow * 1e3:>11.0f}{batch * 1e3:>17.0f}")
    print("(clkit: the MLP takes the exact outer-product shortcut (no per-sample gradient stored), the\n"
          " transformer one batched forward/backward with per-sample products per layer (attention in its\n"
          " fused kernel, no vmap); loop: one autograd backward per row; batch grad: one ordinary gradient\n"
          " of the mean loss over the same rows, the cost of any pass that differentiates them)\n")


#: the heading of each allocator's table in the Markdown output
ALLOCATOR_TITLES = {"steady": "Steady allocator (`--allocator steady`: glibc mallopt, no mmap, no trimming)",
                    "default": "glibc's default allocator (`--allocator default`)"}


def write_markdown(path, sections, args):
    """Write part 1's table(s) and notes as a Markdown file (atomically): ``sections`` is a list of
    ``(allocator, md, notes, load)``, one table per allocator, each under its name (``load``: the
    1-minute load average when that table was measured)."""
    import datetime
    import platform

    from clkit._io import atomic_write_text

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    flag = "" if args.allocator == "steady" else f" --allocator {args.allocator}"
    lines = [
        f"Measured {stamp} by `benchmarks/bench_strategies.py --runs {args.runs} --rounds {args.rounds} "
        f"--inner {args.inner}{flag}` "
        f"(torch {torch.__version__}, {platform.processor() or platform.machine()}, one thread). "
        "1-minute load average (the higher of its values at the start and at the end of each table's run): "
        + ", ".join(f"{load:.1f} ({name})" for name, _, _, load in sections)
        + f" on {os.cpu_count()} cores (other programs sharing the machine inflate absolute milliseconds "
        "through cache contention; CPU time, not wall-clock, and ratios from interleaved rounds limit the "
        "effect)."]
    for name, md, notes, _ in sections:
        if len(sections) > 1:
            lines += ["", f"#### {ALLOCATOR_TITLES[name]}"]
        lines += ["", *md, "", *[f"- {n}" for n in notes]]
    text = "\n".join([*lines, ""])
    atomic_write_text(path, text)
    print(f"wrote {path}")
    splice_block(PAGE, "bench-strategies", text)


#: the user-guide page whose generated block holds part 1's table
PAGE = __import__("pathlib").Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def splice_block(page, name, text):
    """Replace the lines between ``<!-- BEGIN generated: name -->`` and ``<!-- END generated: name -->``
    in ``page`` with ``text`` (atomically); nothing happens when the page or its markers are missing."""
    from clkit._io import atomic_write_text

    begin, end = f"<!-- BEGIN generated: {name} -->", f"<!-- END generated: {name} -->"
    if not page.exists():
        return
    old = page.read_text()
    if begin not in old or end not in old:
        return
    head, rest = old.split(begin, 1)
    _, tail = rest.split(end, 1)
    atomic_write_text(page, head + begin + "\n" + text.rstrip("\n") + "\n" + end + tail)
    print(f"updated the generated block of {page}")


# ---------------------------------------------------------------------- part 4: layout
LAYOUT_CASES = [c for c in MLP_CASES if c[0] in ("naive", "agem (64 ref. rows)", "gem (64 rows/task)")]


def print_layout(rounds, inner):
    """ms per step of small_cnn in the default layout and in channels_last, at three image sizes."""
    print("4. Memory layout: small_cnn (3 channels -> 30), batch 64, class-incremental, step on task 3: "
          "ms per step (CPU time, one thread)")
    print(f"{'pixels':>6}  {'case':<22}{'contiguous':>11}{'channels_last':>14}{'saved':>7}")
    for px in (8, 32, 64):
        data = cnn_tasks(size=px)
        fns = {}
        for layout in (torch.contiguous_format, torch.channels_last):
            def net():
                with torch_seeded(0):
                    return SmallCNN(3, 30).to(memory_format=layout)
            fns[(layout, "bare step")] = bare_step(net(), data[2].x[:64], data[2].y[:64])
            for label, name, kw, _ in LAYOUT_CASES:
                fns[(layout, label)] = ready(name, net(), data, 64, "class", **kw)[1]
        times = interleaved(fns, rounds, inner)
        for label in ["bare step"] + [c[0] for c in LAYOUT_CASES]:
            a = statistics.median(times[(torch.contiguous_format, label)]) * 1e3
            b = statistics.median(times[(torch.channels_last, label)]) * 1e3
            print(f"{px:>6}  {label:<22}{a:>11.2f}{b:>14.2f}{1 - b / a:>7.0%}")
    print("(channels_last: the same network and initial weights, other rounding; the bare step is each "
          "layout's own)\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="Prints figures; never fails on speed. See docs/benchmarks.md.")
    ap.add_argument("--runs", type=int, default=3, help="repetitions of the MLP step table (medians printed)")
    ap.add_argument("--rounds", type=int, default=30, help="interleaved timing rounds (MLP)")
    ap.add_argument("--inner", type=int, default=5, help="steps per round (minimum taken)")
    ap.add_argument("--quick", action="store_true", help="fewer rounds, a shorter transformer context")
    ap.add_argument("--only", choices=["steps", "cnn", "importance", "layout"], default=None,
                    help="run one part: steps (part 1), cnn (part 2), importance (part 3), layout (part 4)")
    ap.add_argument("--avalanche-json", default=None, metavar="FILE",
                    help="output of benchmarks/avalanche_reference.py run in an Avalanche venv; "
                         "without it the quoted figures are shown and the table says so")
    ap.add_argument("--allocator", choices=["steady", "default", "both"], default=None,
                    help="steady: no mmap, no heap trimming (glibc mallopt), so freed memory stays mapped between steps "
                         "(every case timed without page-faulting its memory in again); default: leave glibc as is; "
                         "both: part 1 once with each, each in its own process (--markdown writes both tables). "
                         "Unset: both with --markdown (the documented table names both), steady otherwise")
    ap.add_argument("--sections-json", default=None, help=argparse.SUPPRESS)   # internal: --allocator both
    ap.add_argument("--markdown", default=None, metavar="FILE",
                    help="also write part 1's table to FILE (e.g. docs/generated/bench-strategies.md), atomically")
    args = ap.parse_args(argv)
    if args.allocator is None:
        args.allocator = "both" if args.markdown and args.only in (None, "steps") else "steady"
    torch.set_num_threads(1)
    if args.quick:
        args.rounds, args.runs = 8, 1
    if args.allocator == "both":
        if args.only in (None, "steps"):
            sections = both_allocators(args)
            if args.markdown:
                write_markdown(args.markdown, sections, args)
        if args.only == "steps":
            return
        args.only = args.only or "rest"   # the other parts with the steady allocator, in this process
        args.allocator = "steady"
    allocator = steady_allocator() if args.allocator == "steady" else "glibc's default settings (--allocator default)"
    print(f"torch {torch.__version__}, threads: {torch.get_num_threads()}, allocator: {allocator}\n")
    if args.only in (None, "steps"):
        load = os.getloadavg()[0]
        md, notes = print_steps(args.runs, args.rounds, args.inner, args.avalanche_json, allocator=allocator)
        load = max(load, os.getloadavg()[0])
        if args.sections_json:
            import json

            with open(args.sections_json, "w") as fh:
                json.dump([args.allocator, md, notes, load], fh)
        elif args.markdown:
            write_markdown(args.markdown, [(args.allocator, md, notes, load)], args)
    if args.only == "rest":
        args.only = None
        parts = ("cnn", "importance", "layout")
    else:
        parts = (args.only,) if args.only else ("cnn", "importance", "layout")
    if "cnn" in parts:
        print_cnn(max(3, args.rounds // 5), 3)
    if "importance" in parts:
        print_importance(args.quick)
    if "layout" in parts:
        print_layout(max(3, args.rounds // 10), 3)


def both_allocators(args):
    """Part 1 once per allocator, each in a fresh process of this script (their output passes
    through); returns ``[(allocator, md, notes, load), ...]``, steady first."""
    import json
    import subprocess
    import sys
    import tempfile

    sections = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("steady", "default"):
            out = os.path.join(tmp, f"{name}.json")
            cmd = [sys.executable, os.path.abspath(__file__), "--only", "steps", "--runs", str(args.runs),
                   "--rounds", str(args.rounds), "--inner", str(args.inner), "--allocator", name,
                   "--sections-json", out]
            if args.avalanche_json:
                cmd += ["--avalanche-json", args.avalanche_json]
            subprocess.run(cmd, check=True)
            with open(out) as fh:
                sections.append(tuple(json.load(fh)))
    return sections


if __name__ == "__main__":
    main()
