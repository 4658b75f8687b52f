"""The GPU check: every notebook's smoke set on CUDA beside the CPU, the ``gpu`` tests, paper-sized steps timed.

One command, made to finish in under 8 minutes on one GPU (16 CPU cores beside it)::

    python benchmarks/gpu_check.py                                   # prints the table
    python benchmarks/gpu_check.py --markdown docs/generated/gpu-check.md
    python benchmarks/gpu_check.py --device cpu --quick              # the script itself, on a CPU (what CI checks)

Three parts, in this order, each printed (and written to ``--markdown``) as it finishes
(``--only tests,smoke,steps`` picks some):

1. **tests** -- ``pytest -m gpu`` (the CUDA-only tests, skipped on machines without CUDA).
2. **smoke** -- each notebook's ``smoke`` set run twice through ``clkit run``, ``-p device cuda`` and
   ``-p device cpu`` (in parallel processes), and their ``results.json`` compared: every number under
   ``results`` (device, budget and timing records left out) within ``|a - b| <= ATOL + RTOL |b|``
   (``ATOL = 0.02``, ``RTOL = 0.05``: accuracies on smoke-sized test sets move by a few samples when the
   float rounding of a long training differs), and every verdict's decision equal. The table counts what
   agrees and names the largest difference; differences are reported, not hidden: a run on another
   device is the same computation rounded otherwise, and verdicts that lie near alpha can move.
3. **steps** -- paper-sized units timed on the device (``clkit.budget.time_per_call``: warm-up calls,
   CUDA synchronised, the median): notebook 04's WideVGG9 step at 64x64 (batch 128, SGD) and the
   steps of its three paper backbones (wide_vgg9_bn, efficientnet_b1, resnet34_bn), notebook 02's
   paper-set steps (PyCIL's ResNet-32 at 32x32, batch 128; L2P on a frozen ViT-B/16 at 224x224,
   batch 16, Adam) -- what the budgets' FLOP estimates stand in for until measured --, notebook 05's
   GCN, GIN and GAT steps and full evaluation passes on a random graph the size of ogbn-arxiv (169,343 nodes, 1,166,243
   edges, 128 features, 40 classes), notebook 02's batched ground truth at 8 classes in 4 tasks (all
   2,520 orders, finetune) and the estimate for 10 classes in 5 tasks (113,400 orders), and notebook
   01's transformer at the paper's size (12 features, 288 steps of context, d_model 32, 8 blocks, 4
   heads, batch 256).

The card is named in the table's title (``clkit.device.device_info``). Exit status 1 when a run or a
test fails; differences in numbers are printed, not failed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ("01_taskification", "02_edge", "03_temporal_metrics", "04_curriculum", "05_drift")
ATOL, RTOL = 0.02, 0.05
#: results keys that describe the run, not its numbers
SKIP = {"device", "budget", "rehearsal", "timing", "run_seconds", "figures", "data_source", "summary"}


def numeric_leaves(obj, prefix: str = "") -> dict:
    """``{dotted key: number}`` of every finite or non-finite number inside nested dicts and lists
    (booleans and strings left out; keys in :data:`SKIP` left out at any depth).

    Examples
    --------
    >>> numeric_leaves({"a": 1, "b": {"c": [0.5, True, "x"]}, "device": {"x": 3}})
    {'a': 1.0, 'b.c.0': 0.5}
    """
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            if str(k) not in SKIP:
                out.update(numeric_leaves(v, f"{prefix}{k}."))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.update(numeric_leaves(v, f"{prefix}{i}."))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        out[prefix[:-1]] = float(obj)
    elif obj is None:
        out[prefix[:-1]] = math.nan   # a non-finite number saved as null
    return out


def compare_results(a: dict, b: dict, atol: float = ATOL, rtol: float = RTOL) -> dict:
    """Compare two runs' ``results``: numbers within tolerance, verdict decisions equal.

    Returns ``{"numbers", "close", "largest": (key, a, b), "missing", "verdicts", "same_verdicts",
    "moved": [comparison, ...]}`` (``b`` is the reference).

    Examples
    --------
    >>> r = compare_results({"x": 1.0, "verdicts": [{"comparison": "c", "decision": "higher"}]},
    ...                     {"x": 1.01, "verdicts": [{"comparison": "c", "decision": "higher"}]})
    >>> r["numbers"], r["close"], r["same_verdicts"], r["moved"]
    (1, 1, 1, [])
    """
    na, nb = numeric_leaves(a), numeric_leaves(b)
    keys = sorted(set(na) & set(nb))
    close, largest, worst = 0, None, -1.0
    for k in keys:
        x, y = na[k], nb[k]
        if (math.isnan(x) and math.isnan(y)) or x == y:
            close += 1
            continue
        diff = abs(x - y)
        if math.isfinite(diff) and diff <= atol + rtol * abs(y):
            close += 1
        if not math.isfinite(diff) or diff > worst:
            worst, largest = (math.inf if not math.isfinite(diff) else diff), (k, x, y)
    va = {v.get("comparison"): v.get("decision") for v in a.get("verdicts", []) if isinstance(v, dict)}
    vb = {v.get("comparison"): v.get("decision") for v in b.get("verdicts", []) if isinstance(v, dict)}
    common = sorted(set(va) & set(vb), key=str)
    moved = [c for c in common if va[c] != vb[c]]
    return {"numbers": len(keys), "close": close, "largest": largest,
            "missing": sorted(set(na) ^ set(nb)), "verdicts": len(common), "same_verdicts": len(common) - len(moved),
            "moved": moved}


def _run_smoke(notebook: str, device: str, out: Path) -> tuple[dict | None, float, str]:
    """``clkit run NB --params smoke -p device DEVICE``; (results or None, seconds, error tail)."""
    cmd = [sys.executable, "-m", "clkit", "run", notebook, "--params", "smoke", "-p", "device", device,
           "--out", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    found = sorted(out.rglob("results.json"))
    if proc.returncode or not found:
        return None, seconds, (proc.stdout + proc.stderr)[-1500:] + _failed_cell_traceback(out)
    return json.loads(found[0].read_text()).get("results", {}), seconds, ""


def _failed_cell_traceback(out: Path) -> str:
    """The traceback of the failed cell in ``out``'s ``*.failed.ipynb`` (colour codes removed), or ``""``."""
    import re

    for path in sorted(out.rglob("*.failed.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8")).get("cells", []):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    text = "\n".join(output.get("traceback", []))
                    return "\n--- traceback of the failed cell ---\n" + re.sub(r"\x1b\[[0-9;]*m", "", text)[-4000:]
    return ""


def _error_line(tail: str) -> str:
    r"""The line of a failed run's output that says why (``[clkit] ERROR: ...``), else its last line.

    Examples
    --------
    >>> _error_line("[clkit] running\n[clkit] ERROR: 02_edge failed in cell 7: X\n[clkit] failed: 02_edge\n")
    '[clkit] ERROR: 02_edge failed in cell 7: X'
    """
    lines = tail.strip().splitlines() or ["(no output)"]
    return next((line for line in lines if "ERROR" in line), lines[-1])[:300]


def part_smoke(device: str, workers: int, notebooks=NOTEBOOKS) -> tuple[list, bool]:
    """Each notebook's smoke set on ``device`` and on the CPU; the comparison rows and whether all ran."""
    tmp = Path(tempfile.mkdtemp(prefix="clkit-gpu-check-"))
    jobs = [(nb, dev) for nb in notebooks for dev in (device, "cpu")]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = dict(zip(jobs, pool.map(lambda j: _run_smoke(j[0], j[1], tmp / f"{j[0]}-{j[1].replace(':', '')}"),
                                       jobs)))
    rows, ok = [], True
    for nb in notebooks:
        (ra, ta, ea), (rb, tb, eb) = done[(nb, device)], done[(nb, "cpu")]
        for dev, res, err in ((device, ra, ea), ("cpu", rb, eb)):
            if res is None:   # the whole error in the log; the table names its line
                print(f"--- {nb} on {dev} failed ---\n{err}\n", flush=True)
        if ra is None or rb is None:
            ok = False
            rows.append({"notebook": nb, "time": f"{ta:.0f} s / {tb:.0f} s", "numbers": "run failed",
                         "verdicts": "", "largest difference": "; ".join(
                             f"{dev}: {_error_line(err)}" for dev, res, err in ((device, ra, ea), ("cpu", rb, eb))
                             if res is None)})
            continue
        c = compare_results(ra, rb)
        key = c["largest"]
        rows.append({"notebook": nb, "time": f"{ta:.0f} s / {tb:.0f} s",
                     "numbers": f"{c['close']} of {c['numbers']} within tolerance",
                     "verdicts": f"{c['same_verdicts']} of {c['verdicts']} equal"
                                 + (f" (moved: {'; '.join(c['moved'])})" if c["moved"] else ""),
                     "largest difference": "none" if key is None else f"{key[0]}: {key[1]:.4g} vs {key[2]:.4g}"})
    return rows, ok


def gpu_test_files() -> list[str]:
    """The test files that hold ``gpu`` tests (collecting only these needs none of the browser or course
    packages, which a GPU machine may lack).

    Examples
    --------
    >>> "tests/test_device.py" in gpu_test_files()
    True
    """
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py")
                  if "mark.gpu" in p.read_text(encoding="utf-8"))


def part_tests() -> tuple[list, bool]:
    """``pytest -m gpu``: the CUDA-only tests."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
                           *gpu_test_files()], cwd=ROOT, capture_output=True, text=True)
    tail = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    return [{"part": "pytest -m gpu", "result": tail, "time": f"{time.perf_counter() - t0:.0f} s"}], \
        proc.returncode in (0, 5)


def _timed(name: str, fn, device, repeats: int = 5) -> dict:
    from clkit.budget import time_per_call

    try:
        seconds = time_per_call(fn, device=device, warmup=2, repeats=repeats, max_seconds=60)
        return {"unit": name, "seconds": seconds}
    except Exception as exc:  # noqa: BLE001 -- one unit failing must not hide the others
        return {"unit": name, "seconds": math.nan, "error": f"{type(exc).__name__}: {exc}"[:200]}


def _sgd_step(model, label: str, notebook: str, size: int, batch: int, classes: int, device):
    import torch

    from clkit.strategies import Task, make_strategy

    s = make_strategy("naive", model, device=device, optimizer="sgd", lr=0.001, batch_size=batch)
    g = torch.Generator().manual_seed(0)
    task = Task(torch.randn(batch, 3, size, size, generator=g),
                torch.randint(0, classes, (batch,), generator=g)).to(device)
    idx = torch.arange(batch, device=task.device)
    return f"{label} SGD step, {size}x{size}, batch {batch} ({notebook})", lambda: s.train_batch(task, idx)


def step_backbone(name: str, notebook: str, size: int, classes: int, label: str | None = None):
    """One SGD step of a ``clkit.models.cnn`` backbone on a batch of 128 RGB images at ``size`` (the smallest
    size it takes, batch 16, with ``quick``)."""
    def build(device, quick: bool):
        from clkit.models.cnn import MIN_IMAGE_SIZE, make_backbone

        s, batch = (max(16, MIN_IMAGE_SIZE.get(name, 16)), 16) if quick else (size, 128)
        return _sgd_step(make_backbone(name, 3, classes, s), label or name, notebook, s, batch, classes, device)
    return build


def step_wide_vgg9(device, quick: bool):
    """One SGD step of WideVGG9 on a batch of 128 RGB images (64x64; 16x16 with ``quick``)."""
    return step_backbone("wide_vgg9", "04", 64, 60, label="WideVGG9")(device, quick)


def step_l2p(device, quick: bool):
    """One L2P step (02's paper set): a frozen ViT-B/16 at 224x224 with its prompt pool, Adam, batch 16
    (the tiny ViT at 32x32 with ``quick``)."""
    import torch

    from clkit.models.vit import vit_backbone
    from clkit.strategies import Task, make_strategy

    size, batch = (32, 16) if quick else (224, 16)
    model = vit_backbone(num_classes=6, tiny=quick, seed=0)
    s = make_strategy("l2p", model, device=device, optimizer="adam", lr=0.001875, batch_size=batch)
    g = torch.Generator().manual_seed(0)
    task = Task(torch.randn(batch, 3, size, size, generator=g), torch.randint(0, 2, (batch,), generator=g),
                task_id=0, classes=(0, 1)).to(device)
    s.begin_task(task, 1)
    idx = torch.arange(batch, device=task.device)
    return f"L2P step, ViT-B/16{' (tiny)' if quick else ''} {size}x{size}, batch {batch} (02)", \
        lambda: s.train_batch(task, idx)


def _random_graph(nodes: int, edges: int, features: int, classes: int, seed: int = 0):
    import torch

    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, nodes, (edges,), generator=g)
    dst = torch.randint(0, nodes, (edges,), generator=g)
    edge_index = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])
    return torch.randn(nodes, features, generator=g), edge_index, torch.randint(0, classes, (nodes,), generator=g)


def graph_units(device, quick: bool, backbone: str = "gcn"):
    """Notebook 05's ``backbone`` (``gcn``, ``gin``, ``gat``, as ``clkit.models.gnn.make_graph_backbone`` builds
    it under the text's protocol) on an ogbn-arxiv-sized random graph: one online step (batch 10) with ER, and
    one evaluation pass over every node."""
    import torch

    from clkit.models.gnn import make_graph_backbone
    from clkit.strategies import make_strategy

    nodes, edges = (5000, 30000) if quick else (169_343, 1_166_243)
    x, edge_index, y = _random_graph(nodes, edges, 128, 40)
    model = make_graph_backbone(backbone, x, edge_index, 40, hidden=256)
    s = make_strategy("er", model, device=device, optimizer="adam", lr=5e-3, memory_size=100, batch_size=10)
    y_dev = y.to(device)
    g = torch.Generator().manual_seed(1)

    def step():
        idx = torch.randint(0, nodes, (10,), generator=g).to(device)
        s.observe(idx, y_dev[idx])

    everything = torch.arange(nodes, device=device)

    def evaluate():
        with torch.no_grad():
            s.model.eval()
            out = s.model(everything)
            return (out.argmax(1) == y_dev).float().mean()

    size = f"{nodes:,} nodes, {2 * edges:,} directed edges"
    name = backbone.upper()
    return (f"{name} online step with ER, batch 10, {size} (05)", step,
            f"{name} evaluation of every node, {size} (05)", evaluate)


def transformer_step(device, quick: bool):
    """One AdamW step of the paper's forecaster: 12 features, 288 steps of context, d_model 32, 8 blocks,
    4 heads, batch 256 (context 36, batch 32 with ``quick``)."""
    import torch

    from clkit.models.transformer import TimeSeriesTransformer
    from clkit.strategies import Task, make_strategy

    context, batch = (36, 32) if quick else (288, 256)
    model = TimeSeriesTransformer(num_features=12, context=context, d_model=32, num_layers=8, num_heads=4,
                                  target_index=0)
    s = make_strategy("naive", model, device=device, loss="mse", optimizer="adamw", lr=1e-4, batch_size=batch)
    g = torch.Generator().manual_seed(0)
    task = Task(torch.randn(batch, context, 12, generator=g), torch.randn(batch, 1, generator=g)).to(device)
    idx = torch.arange(batch, device=task.device)
    return (f"transformer AdamW step, context {context}, d_model 32, 8 blocks, batch {batch} (01)",
            lambda: s.train_batch(task, idx))


def edge_truth(device, quick: bool) -> dict:
    """Notebook 02's batched ground truth, finetune, on synthetic class data: every order of 8 classes in
    4 tasks (6 classes in 3 with ``quick``), timed whole; 10 classes in 5 tasks estimated from it by the
    number of prefix-tree tasks."""
    import numpy as np
    import torch

    from clkit.edge.combinatorics import enumerate_sequences
    from clkit.edge.learners import LearnerConfig, train_sequences
    from clkit.edge.prefix import count_prefixes

    n, k = (6, 3) if quick else (8, 4)
    rng = np.random.default_rng(0)
    xtr = torch.as_tensor(rng.normal(size=(n, 100, 196)).astype(np.float32))
    xte = torch.as_tensor(rng.normal(size=(n, 200, 196)).astype(np.float32))
    seqs = enumerate_sequences(n, k)
    config = LearnerConfig(hidden=32, epochs=2, batch_size=32, lr=0.05)
    t0 = time.perf_counter()
    train_sequences(xtr, xte, seqs, "finetune", config, device=device)
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    tasks_here = sum(count_prefixes(seqs))
    tasks_10_5 = sum(count_prefixes(enumerate_sequences(10, 5)))
    return {"unit": f"EDGE truth, finetune, {n} classes / {k} tasks ({len(seqs):,} orders, {tasks_here:,} tasks)",
            "seconds": seconds, "estimate": f"10 classes / 5 tasks (113,400 orders, {tasks_10_5:,} tasks): about "
                                           f"{seconds * tasks_10_5 / tasks_here:.0f} s"}


def part_steps(device: str, quick: bool) -> list:
    """The paper-sized units, timed on ``device``."""
    rows = []
    units = (("WideVGG9 (04)", step_wide_vgg9),
             ("wide_vgg9_bn (04 paper)", step_backbone("wide_vgg9_bn", "04 paper", 64, 60)),
             ("efficientnet_b1 (04 paper_efficientnet_b1)", step_backbone("efficientnet_b1", "04", 64, 60)),
             ("resnet34_bn (04 paper_resnet34)", step_backbone("resnet34_bn", "04", 64, 60)),
             ("resnet32 (02 paper)", step_backbone("resnet32", "02 paper", 32, 6)),
             ("L2P (02 paper)", step_l2p),
             ("transformer (01)", transformer_step))
    for name, build in units:
        try:
            rows.append(_timed(*build(device, quick), device))
        except Exception as exc:  # noqa: BLE001
            rows.append({"unit": name, "seconds": math.nan, "error": f"{type(exc).__name__}: {exc}"[:200]})
    for backbone in ("gcn", "gin", "gat"):
        try:
            step_name, step, eval_name, evaluate = graph_units(device, quick, backbone)
            rows.append(_timed(step_name, step, device))
            rows.append(_timed(eval_name, evaluate, device, repeats=3))
        except Exception as exc:  # noqa: BLE001
            rows.append({"unit": f"{backbone.upper()} (05)", "seconds": math.nan,
                         "error": f"{type(exc).__name__}: {exc}"[:200]})
    try:
        rows.append(edge_truth(device, quick))
    except Exception as exc:  # noqa: BLE001
        rows.append({"unit": "EDGE truth (02)", "seconds": math.nan, "error": f"{type(exc).__name__}: {exc}"[:200]})
    return rows


# ------------------------------------------------------------------ --paper-units (issue 51)

#: RATIO_FLAG: a measured step further than this factor from the budget's FLOP estimate is flagged
RATIO_FLAG = 1.5


def _cnn_unit(label, build_model, size: int, channels: int, batch: int, classes: int):
    """A unit builder: one SGD step of ``build_model()`` on ``batch`` images ``channels`` x ``size`` x ``size``;
    returns (name, step, model, x, y) so the budget's FLOP estimate can be counted on the same model."""
    def build(device, quick: bool):
        import torch

        from clkit.strategies import Task, make_strategy

        s_, b_ = (min(size, 32), min(batch, 8)) if quick else (size, batch)
        model = build_model(s_)
        st = make_strategy("naive", model, device=device, optimizer="sgd", lr=0.001, batch_size=b_)
        g = torch.Generator().manual_seed(0)
        x, y = torch.randn(b_, channels, s_, s_, generator=g), torch.randint(0, classes, (b_,), generator=g)
        task = Task(x, y).to(device)
        idx = torch.arange(b_, device=task.device)
        return (f"{label} SGD step, {s_}x{s_}, batch {b_}", lambda: st.train_batch(task, idx), model, x, y)
    return build


def _backbone(name, size, classes):
    def build_model(s_):
        from clkit.models.cnn import MIN_IMAGE_SIZE, make_backbone

        return make_backbone(name, 3, classes, max(s_, MIN_IMAGE_SIZE.get(name, 8)))
    return _cnn_unit(name, build_model, size, 3, 128, classes)


def _wildtime(name, shape, batch, classes):
    def build_model(s_):
        from clkit.models.wildtime import make_wildtime_backbone

        return make_wildtime_backbone(name, (shape[0], s_, s_), classes, hidden=(256, 128))
    return _cnn_unit(name, build_model, shape[1], shape[0], batch, classes)


def _wrap(build):
    """An existing builder returning (name, step) as a unit without a FLOP estimate."""
    def unit(device, quick):
        name, step = build(device, quick)
        return name, step, None, None, None
    return unit


def _graph(dataset, backbone="gcn"):
    def unit(device, quick):
        from clkit.data.fixtures.graphs import REAL_SIZES
        from clkit.drift.rehearsal import REAL_GRAPHS

        nodes, edges = REAL_GRAPHS[dataset]
        feats = REAL_SIZES.get(dataset, {}).get("num_features", 128)
        classes = REAL_SIZES.get(dataset, {}).get("num_classes", 40)
        if quick:
            nodes, edges, feats = 2000, 8000, min(feats, 64)
        import torch

        from clkit.models.gnn import make_graph_backbone
        from clkit.strategies import make_strategy

        x, edge_index, y = _random_graph(nodes, edges // 2, feats, classes)
        model = make_graph_backbone(backbone, x, edge_index, classes, hidden=256)
        st = make_strategy("er", model, device=device, optimizer="adam", lr=5e-3, memory_size=100, batch_size=10)
        y_dev, g = y.to(device), torch.Generator().manual_seed(1)

        def step():
            idx = torch.randint(0, nodes, (10,), generator=g).to(device)
            st.observe(idx, y_dev[idx])
        name = f"{backbone.upper()} online step with ER, batch 10, {nodes:,} nodes, {edges:,} edges, {feats} features"
        return name, step, None, None, None
    return unit


def paper_units_plan() -> list:
    """One unit per paper parameter set: ``[{"set", "unit", "build"}]`` (CPU-side, nothing built).

    The sizes are the real ones: image resolution and batch of the set, the real graph's nodes, edges and
    features, the forecaster's 288 steps of context. Reddit (232,965 nodes, 114.6 M edges) is trained with
    sampled neighbourhoods (``neighbour_sampling: auto``), which a whole-graph step does not stand for:
    its row says so instead of timing a step the run never takes.
    """
    return [
        {"set": "01_taskification paper", "unit": "transformer, context 288, batch 256", "build": _wrap(transformer_step)},
        {"set": "02_edge paper", "unit": "resnet32 at 32x32, batch 128", "build": _backbone("resnet32", 32, 6)},
        {"set": "02_edge paper", "unit": "L2P on ViT-B/16 at 224x224, batch 16", "build": _wrap(step_l2p)},
        {"set": "02_edge imagenet_r", "unit": "L2P on ViT-B/16 at 224x224, batch 16", "build": _wrap(step_l2p)},
        {"set": "03_temporal_metrics paper", "unit": "DenseNet-121 at 224x224, batch 64, 62 classes",
         "build": _wildtime("densenet121", (3, 224), 64, 62)},
        {"set": "03_temporal_metrics paper_32px", "unit": "DenseNet-121 at 32x32, batch 128, 62 classes",
         "build": _wildtime("densenet121", (3, 32), 128, 62)},
        {"set": "03_temporal_metrics paper_yearbook", "unit": "Yearbook CNN at 32x32, batch 32, 2 classes",
         "build": _wildtime("yearbook_cnn", (1, 32), 32, 2)},
        {"set": "04_curriculum paper", "unit": "wide_vgg9_bn at 64x64, batch 128",
         "build": _backbone("wide_vgg9_bn", 64, 60)},
        {"set": "04_curriculum paper_efficientnet_b1", "unit": "efficientnet_b1 at 64x64, batch 128",
         "build": _backbone("efficientnet_b1", 64, 60)},
        {"set": "04_curriculum paper_resnet34", "unit": "resnet34_bn at 64x64, batch 128",
         "build": _backbone("resnet34_bn", 64, 60)},
        {"set": "05_drift paper", "unit": "GCN on CoraFull's size", "build": _graph("corafull")},
        {"set": "05_drift paper_arxiv", "unit": "GCN on ogbn-arxiv's size", "build": _graph("ogbn_arxiv")},
        {"set": "05_drift paper_roman_empire", "unit": "GCN on Roman-Empire's size", "build": _graph("roman_empire")},
        {"set": "05_drift paper_reddit", "unit": "not timed: sampled neighbourhoods (neighbour_sampling auto)",
         "build": None},
    ]


def part_paper_units(device: str, quick: bool, dry_run: bool = False) -> list:
    """Each paper set's unit: seconds per step, peak device memory, the budget's FLOP estimate and their ratio
    (flagged beyond :data:`RATIO_FLAG`). ``dry_run``: the plan only, nothing built or run."""
    rows = []
    for u in paper_units_plan():
        row = {"set": u["set"], "unit": u["unit"]}
        if dry_run or u["build"] is None:
            rows.append(row)
            continue
        import torch

        try:
            if str(device).startswith("cuda"):
                torch.cuda.reset_peak_memory_stats()
            name, step, model, x, y = u["build"](device, quick)
            row.update(_timed(name, step, device))
            if str(device).startswith("cuda"):
                row["peak_gib"] = round(torch.cuda.max_memory_allocated() / 2 ** 30, 2)
            if model is not None:
                from clkit.budget import FlopEstimate, target_card, training_flops

                # the budget's own estimate of one step on this card (FLOPs, held to the step floor)
                est = FlopEstimate(training_flops(model, x, y)["step"], card=target_card(device), steps=1).seconds
                row["estimate_s"] = round(est, 5)
                ratio = row["seconds"] / est if est else math.nan
                row["measured/estimate"] = round(ratio, 2)
                row["flag"] = "OFF" if not (1 / RATIO_FLAG <= ratio <= RATIO_FLAG) else ""
        except Exception as exc:  # noqa: BLE001 -- one unit failing must not hide the others
            row.update(seconds=math.nan, error=f"{type(exc).__name__}: {exc}"[:200])
        rows.append(row)
    return rows


def markdown(title: str, rows: list) -> str:
    """A Markdown table of ``rows`` (dicts) under a bold title."""
    if not rows:
        return f"**{title}**: nothing run.\n"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    lines = [f"**{title}**", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c, "")
            cells.append(f"{v * 1e3:.1f} ms" if c == "seconds" and isinstance(v, float) and v < 1
                         else f"{v:.2f} s" if c == "seconds" and isinstance(v, float) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", help="the device checked against the CPU (default cuda)")
    parser.add_argument("--only", default="smoke,tests,steps", help="parts to run: smoke,tests,steps")
    parser.add_argument("--quick", action="store_true", help="small sizes (checks the script, not the card)")
    parser.add_argument("--workers", type=int, default=min(10, os.cpu_count() or 2),
                        help="smoke runs at a time (default: up to 10)")
    parser.add_argument("--notebooks", default=",".join(NOTEBOOKS), help="notebooks of the smoke part")
    parser.add_argument("--markdown", help="also write the tables to this Markdown file")
    parser.add_argument("--paper-units", action="store_true",
                        help="only: one unit of each paper set at the real size, timed, peak memory, against the "
                             f"budget's FLOP estimate (flagged beyond {RATIO_FLAG}x)")
    parser.add_argument("--dry-run", action="store_true", help="with --paper-units: print the plan, run nothing")
    args = parser.parse_args(argv)
    if args.dry_run and not args.paper_units:
        parser.error("--dry-run goes with --paper-units")
    if args.paper_units and args.dry_run:
        sys.path.insert(0, str(ROOT))
        print(markdown("Paper units (plan; nothing run)", part_paper_units("meta", False, dry_run=True)))
        return 0
    sys.path.insert(0, str(ROOT))
    from clkit.device import device_info, resolve_device

    device = resolve_device(args.device)
    info = device_info(device)
    card = info.get("name", str(device))
    if device.type == "cuda":
        card += f", {info.get('memory_gib')} GiB, CUDA {info.get('cuda')}, driver {info.get('driver') or 'unknown'}"
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    parts = {"paper_units"} if args.paper_units else set(args.only.split(","))
    out, ok = [f"### GPU check on {card} ({device}; torch {info['torch']}; {stamp})\n"], True
    t0 = time.perf_counter()

    def emit(block: str) -> None:
        """Print a finished part at once and rewrite the Markdown file: a run stopped at a time limit keeps
        the parts it finished."""
        out.append(block)
        print(block, flush=True)
        if args.markdown:
            from clkit._io import atomic_write_text

            atomic_write_text(Path(args.markdown), "\n".join(out))

    print(out[0], flush=True)
    if "tests" in parts:
        rows, good = part_tests()
        ok &= good
        emit(markdown("CUDA-only tests", rows))
    if "smoke" in parts:
        rows, good = part_smoke(str(device), args.workers, args.notebooks.split(","))
        ok &= good
        emit(markdown(f"Smoke sets on {device} vs cpu (numbers within |a - b| <= {ATOL} + {RTOL} |b|)", rows))
    if "steps" in parts:
        emit(markdown(f"Paper-sized units on {device}" + (" (quick sizes)" if args.quick else ""),
                      part_steps(str(device), args.quick)))
    if "paper_units" in parts:
        rows = part_paper_units(str(device), args.quick)
        emit(markdown(f"Paper units on {device}" + (" (quick sizes)" if args.quick else "")
                      + f": measured step vs the budget's FLOP estimate (flag beyond {RATIO_FLAG}x)", rows))
        ok &= not any("error" in r for r in rows)
    emit(f"Total: {time.perf_counter() - t0:.0f} s.\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
