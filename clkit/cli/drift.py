"""``clkit drift stream``: a DRIFT batch schedule and node-index batches, with its overlap index."""

from __future__ import annotations

from pathlib import Path

from ._output import add_out, guarded, show, write

SETTINGS = ("gaussian", "hard", "boundary_local", "global")


def register(sub) -> None:
    p = sub.add_parser("drift", help="DRIFT protocol: task-free streams")
    s = p.add_subparsers(dest="drift_cmd", required=True)
    d = s.add_parser("stream", help="batch schedule and node-index batches of a task-free stream")
    d.add_argument("source", help="LABELS.npy (1-D node labels), GRAPH.pt (torch.save'd torch-geometric Data) "
                                  "or package.module:DatasetClass (with --root)")
    d.add_argument("--root", default=None, help="root folder of a dataset class")
    d.add_argument("--sigma", type=float, default=10.0, help="Gaussian mixing width, in batches (default 10)")
    d.add_argument("--batch-size", type=int, default=10, help="nodes per batch (default 10)")
    d.add_argument("--setting", default="gaussian", choices=SETTINGS, help="stream construction (default gaussian)")
    d.add_argument("--classes-per-task", type=int, default=2, help="classes per latent task (default 2)")
    d.add_argument("--k-bl", type=int, default=2, help="boundary_local: batches mixed on each side (default 2)")
    d.add_argument("--p", type=float, default=0.2, help="global: fraction spread over the stream (default 0.2)")
    d.add_argument("--sampling", default="without", choices=("without", "with"), help="node sampling")
    d.add_argument("--test-fraction", type=float, default=0.0,
                   help="hold out this fraction of each class (clkit.data.graphs.split_per_class) before "
                        "building the stream (default 0: every node streams)")
    d.add_argument("--tau", type=float, default=None, help="dominance threshold of the overlap index")
    d.add_argument("--seed", type=int, default=0)
    add_out(d)
    d.set_defaults(func=guarded(stream))


def read_labels(source: str, root=None):
    import numpy as np

    from ..data.user import load_graph_source, load_labels

    if source.endswith(".npy"):
        return load_labels(source), f"labels {source!r}"
    if source.endswith(".pt") or Path(source).exists() or ":" in source:
        g = load_graph_source(source, root)
        return np.asarray(g.y), g.source
    raise ValueError(f"source: {source!r} must be a .npy label file, a .pt graph or package.module:DatasetClass")


def stream_result(y, *, setting: str = "gaussian", sigma: float = 10.0, batch_size: int = 10,
                  classes_per_task: int = 2, k_bl: int = 2, p: float = 0.2, sampling: str = "without",
                  test_fraction: float = 0.0, tau=None, seed: int = 0) -> dict:
    """The stream behind ``clkit drift stream``, built with :mod:`clkit.drift`."""
    import numpy as np

    from .. import drift
    from ..data.graphs import split_per_class

    from .._validate import check_int

    y = np.asarray(y, dtype=np.int64)
    check_int("--batch-size", batch_size, low=1, high=len(y))   # a batch holds at most every node, once
    task_of_class, task_classes = drift.latent_tasks(y, classes_per_task, drop_remainder=True)
    nodes = np.arange(len(y))
    test_idx = np.array([], dtype=np.int64)
    if test_fraction:
        nodes, test_idx = split_per_class(y, test_fraction, seed)
    node_task = np.where(y[nodes] >= 0, task_of_class[np.clip(y[nodes], 0, None)], -1)
    task_nodes = [nodes[node_task == k] for k in range(len(task_classes))]
    if len(task_nodes) < 2:
        raise ValueError(f"the labels give {len(task_nodes)} latent task of {classes_per_task} classes; a stream "
                         f"needs at least 2 (at least {2 * classes_per_task} classes)")
    kw = dict(sampling=sampling, seed=seed)
    if setting == "gaussian":
        s = drift.gaussian_stream(task_nodes, batch_size, sigma, **kw)
    elif setting == "hard":
        s = drift.hard_stream(task_nodes, batch_size, **kw)
    elif setting == "boundary_local":
        s = drift.boundary_local_stream(task_nodes, batch_size, k_bl, **kw)
    elif setting == "global":
        s = drift.global_stream(task_nodes, batch_size, p, **kw)
    else:
        raise ValueError(f"--setting must be one of {list(SETTINGS)}, got {setting!r}")
    tau_kw = {} if tau is None else {"tau": tau}
    realised = s.counts / s.counts.sum(1, keepdims=True)
    return {"setting": setting, "meta": s.meta, "num_batches": s.num_batches, "batch_size": s.batch_size,
            "num_tasks": s.num_tasks, "task_classes": [list(map(int, t)) for t in task_classes],
            "overlap_index": drift.overlap_index(s.weights, **tau_kw),
            "overlap_index_realised": drift.overlap_index(realised, **tau_kw),
            "weights": s.weights, "counts": s.counts, "batches": s.batches, "test_nodes": test_idx}


def check_stream_args(args) -> None:
    """The stream's numeric options checked before anything heavy is imported or read (issue 55:
    ``--sigma inf`` and a huge ``--batch-size`` were refused only after the graph was loaded, 15-17 s
    and 766 MB); the batch size against the node count is checked once the labels are read."""
    from .._validate import check_int, check_real

    check_real("--sigma", args.sigma, low=0, low_open=True)
    check_int("--batch-size", args.batch_size, low=1)
    check_int("--classes-per-task", args.classes_per_task, low=1)
    check_int("--k-bl", args.k_bl, low=0)
    check_real("--p", args.p, low=0, high=1)
    check_real("--test-fraction", args.test_fraction, low=0, high=1, high_open=True)
    if args.tau is not None:
        check_real("--tau", args.tau, low=0, high=1, low_open=True)
    if args.source.endswith(".npy") and Path(args.source).is_file():   # its length without reading it all
        import numpy as np

        try:
            n = len(np.load(args.source, mmap_mode="r", allow_pickle=False))
        except (ValueError, OSError, TypeError):
            return   # not a plain array file: the label loader says what is wrong with it
        check_int("--batch-size", args.batch_size, low=1, high=n)


def stream(args) -> int:
    check_stream_args(args)
    import pandas as pd

    y, where = read_labels(args.source, args.root)
    res = stream_result(y, setting=args.setting, sigma=args.sigma, batch_size=args.batch_size,
                        classes_per_task=args.classes_per_task, k_bl=args.k_bl, p=args.p, sampling=args.sampling,
                        test_fraction=args.test_fraction, tau=args.tau, seed=args.seed)
    res["source"] = where
    K = res["num_tasks"]
    table = pd.DataFrame(res["counts"], columns=[f"task_{k}" for k in range(K)])
    table.insert(0, "batch", range(res["num_batches"]))
    table["nodes"] = [" ".join(map(str, b)) for b in res["batches"]]
    print(f"{where}: {K} latent tasks {res['task_classes']}, {res['num_batches']} batches of {res['batch_size']} "
          f"({res['setting']}); overlap index {res['overlap_index']:.4f} "
          f"(realised batches: {res['overlap_index_realised']:.4f})")
    show(table.drop(columns="nodes").head(40), "samples of each latent task per batch (first 40 batches)")
    write(args.out, "stream", res, table)
    return 0
