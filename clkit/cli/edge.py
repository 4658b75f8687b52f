"""``clkit edge orders``: EDGE's hard, easy and random class orders with S(O) and percentile, and the
manifest of every order to train; ``clkit edge analyse``: notebook 02's analysis of the accuracies
a user's trainer got on them (:mod:`clkit.edge.readback`)."""

from __future__ import annotations

from pathlib import Path

from ._output import add_out, guarded, show, write


def register(sub) -> None:
    p = sub.add_parser("edge", help="EDGE protocol: hard / easy / random class orders")
    s = p.add_subparsers(dest="edge_cmd", required=True)
    o = s.add_parser("orders", help="hard, easy and random class orders with S(O) and its percentile")
    o.add_argument("names", help="class names: a text file (one per line), a YAML list, a shipped list "
                                 "(cifar100, cub200, imagenet_r, ...) or comma-separated names")
    o.add_argument("--tasks", type=int, required=True, help="number of tasks K (must divide the number of classes)")
    o.add_argument("--encoder", default="auto", help="text encoder: auto | clip | minilm | glove (default auto)")
    o.add_argument("--random", type=int, default=1, metavar="N", help="random orders to report (default 1)")
    o.add_argument("--num-random", type=int, default=10000,
                   help="random orders sampled for the percentile of S(O) (default 10000)")
    o.add_argument("--seed", type=int, default=0, help="seed of the random orders and the percentile sample; "
                                                        "with --truth also of the truth sample and the verdicts' draws")
    o.add_argument("--rs-seeds", default="0,42,1993", metavar="S,S,...",
                   help="RS's draws, comma-separated (default 0,42,1993, PyCIL's shuffle)")
    o.add_argument("--edge-num-random", type=int, default=1, metavar="N",
                   help="random orders in EDGE's triplet (the first RS seeds'; default 1)")
    o.add_argument("--truth", choices=("none", "exact", "sample"), default="none",
                   help="orders the manifest adds for a ground truth: none (default), exact (every order) or "
                        "sample (a uniform sample plus what the analysis looks up); enumerable settings only")
    o.add_argument("--truth-samples", type=int, default=256, metavar="N", help="size of the uniform sample (--truth sample)")
    o.add_argument("--num-draws", type=int, default=30, help="the verdicts' paired draws (default 30)")
    o.add_argument("--num-bins", type=int, default=10, help="bins of the JSD over the true range (default 10)")
    add_out(o)
    o.set_defaults(func=guarded(orders))
    a = s.add_parser("analyse", help="notebook 02's analysis of per-order accuracies trained elsewhere")
    a.add_argument("orders", help="orders.json of clkit edge orders (or its --out folder)")
    a.add_argument("results", help="per-order accuracies: a CSV order_id, seed, accuracy[, method]; a long CSV "
                                   "method, seed, order, i, j, accuracy; or a folder / runs.csv clkit compare reads "
                                   "(Avalanche, mammoth, PyCIL logs with an order column)")
    a.add_argument("--percent", action="store_true", help="the CSV's accuracies are percentages (default fractions)")
    a.add_argument("--metric", choices=("final", "incremental"), default="incremental",
                   help="one number per accuracy matrix: incremental (mean over steps of the accuracy on the tasks "
                        "seen; notebook 02's Eq. 1, the default) or final (mean of the last row)")
    a.add_argument("--method", default="learner", help="method of rows without a method column (default learner)")
    a.add_argument("--out", required=True, metavar="DIR", help="write results.json, report.md, tables and figures here")
    a.set_defaults(func=guarded(analyse))


def read_names(spec: str) -> tuple[list, str]:
    """Class names from a file, a shipped list name or a comma-separated string."""
    from ..data.class_names import CLASS_NAME_LISTS, load_class_names
    from ..data.user import load_class_names_file

    if Path(spec).exists():
        return load_class_names_file(spec), f"file {spec!r}"
    if spec in CLASS_NAME_LISTS:
        return load_class_names(spec), f"shipped list {spec!r}"
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if len(names) < 2:
        raise ValueError(f"names: {spec!r} is neither a file, a shipped list ({sorted(CLASS_NAME_LISTS)}) nor "
                         "at least 2 comma-separated names")
    if len(set(names)) != len(names):
        raise ValueError(f"names: {spec!r} repeats a name")
    return names, "command line"


def orders_result(names, num_tasks: int, *, encoder: str = "auto", num_random_orders: int = 1,
                  num_random: int = 10000, seed: int = 0, rs_seeds=(0, 42, 1993), edge_num_random: int = 1,
                  truth: str = "none", truth_samples: int = 256, num_draws: int = 30, num_bins: int = 10) -> dict:
    """Hard, easy and random orders of ``names`` (the computation behind ``clkit edge orders``)."""
    import numpy as np

    from .. import edge
    from .._validate import check_fits, check_int
    from ..edge.combinatorics import check_num_tasks, num_sequences
    from ..edge.readback import order_manifest

    check_int("--random", num_random_orders, low=0)
    check_int("--num-random", num_random, low=100)
    check_num_tasks(len(names), num_tasks)
    distinct = num_sequences(len(names), num_tasks)
    if num_random_orders > distinct:
        raise ValueError(f"--random {num_random_orders}: {len(names)} classes in {num_tasks} tasks have only "
                         f"{distinct:,} distinct orders (N!/(M!)^K); ask for at most that many")
    n = len(names)   # each random order: n classes as int64 (a permutation, its tasks and its score)
    check_fits("--random", num_random_orders, 4.0 * num_random_orders * n * 8, "the random orders")
    check_fits("--num-random", num_random, 4.0 * num_random * n * 8, "the orders of the percentile sample")
    sim = edge.class_similarity(names, encoder)
    hard, hi = edge.hard_sequence(sim, num_tasks, return_info=True)
    easy, ei = edge.easy_sequence(sim, num_tasks, return_info=True)
    orders = {"hard": hard, "easy": easy}
    if num_random_orders:
        rnd = edge.random_sequences(len(names), num_tasks, seeds=[seed + i for i in range(num_random_orders)])
        orders.update({f"random_{i}" if num_random_orders > 1 else "random": r for i, r in enumerate(rnd)})
    out = {"num_classes": len(names), "num_tasks": num_tasks, "encoder": sim.encoder, "encoder_notes": sim.notes,
           "class_names": list(names), "num_random": num_random, "seed": seed, "orders": {}}
    for key, seq in orders.items():
        seq = np.asarray(seq)
        out["orders"][key] = {
            "tasks": seq.tolist(), "class_order": seq.reshape(-1).tolist(),
            # new label of each original class (mammoth's args.class_order maps targets through it)
            "position_of_class": np.argsort(seq.reshape(-1)).tolist(),
            "task_names": [[names[c] for c in t] for t in seq],
            "S": edge.sequence_score(sim, seq),
            "percentile": edge.score_percentile(sim, seq, num_random=num_random, seed=seed),
        }
    out["orders"]["hard"]["paper_S"] = hi["paper_score"]
    out["orders"]["easy"]["paper_S"] = ei["paper_score"]
    out["manifest"] = order_manifest(
        names, num_tasks, sim, hard=hard, easy=easy, rs_seeds=list(rs_seeds), edge_num_random=edge_num_random,
        truth=truth, truth_samples=truth_samples, seed=seed, num_draws=num_draws, num_bins=num_bins,
        extra={k: v for k, v in orders.items() if k.startswith("random")}, encoder=sim.encoder)
    return out


def _seeds(text: str) -> list:
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--rs-seeds {text!r}: give comma-separated integer seeds, e.g. 0,42,1993") from None


def orders(args) -> int:
    import pandas as pd

    names, where = read_names(args.names)
    res = orders_result(names, args.tasks, encoder=args.encoder, num_random_orders=args.random,
                        num_random=args.num_random, seed=args.seed, rs_seeds=_seeds(args.rs_seeds),
                        edge_num_random=args.edge_num_random, truth=args.truth, truth_samples=args.truth_samples,
                        num_draws=args.num_draws, num_bins=args.num_bins)
    res["names_from"] = where
    table = pd.DataFrame([{"order": k, "S": v["S"], "percentile": v["percentile"],
                           "class_order": " ".join(map(str, v["class_order"])),
                           "first_task": ", ".join(v["task_names"][0])} for k, v in res["orders"].items()])
    show(table, f"{len(names)} classes from {where}, {args.tasks} tasks, similarity: {res['encoder']}")
    for note in res["encoder_notes"]:
        print("  note:", note)
    m = res["manifest"]
    manifest = pd.DataFrame([{"order_id": o["order_id"], "kinds": ";".join(o["kinds"]), "position": o["position"],
                              "class_order": " ".join(map(str, o["class_order"]))} for o in m["orders"]])
    print(f"manifest: {len(m['orders'])} orders to train (RS {', '.join(m['protocols']['RS'])}; EDGE "
          f"{', '.join(m['protocols']['EDGE'])}; truth: {m['truth']}); train each, then clkit edge analyse")
    if write(args.out, "orders", res, table):      # the manifest is orders.json's "manifest"; a CSV of it to loop over
        from .._io import atomic_write_text

        print(f"wrote {atomic_write_text(Path(args.out) / 'orders_manifest.csv', manifest.to_csv(index=False))}")
    return 0


def analyse(args) -> int:
    from ..edge.readback import analyse_orders, load_manifest, read_order_results, write_analysis

    manifest = load_manifest(args.orders)
    table, listing = read_order_results(args.results, manifest, percent=args.percent, metric=args.metric,
                                        method=args.method)
    show(listing.drop(columns=["used"]), f"{len(listing)} runs read from {args.results}")
    res = analyse_orders(table, manifest)
    print()
    print(res["text"])
    paths = write_analysis(res, args.out, listing=listing, params={
        "orders": str(args.orders), "results": str(args.results), "percent": args.percent, "metric": args.metric,
        **{k: manifest[k] for k in ("num_tasks", "truth", "truth_samples", "seed", "num_draws", "num_bins",
                                     "rs_seeds", "edge_num_random", "encoder")}})
    for p in paths:
        print(f"wrote {p}")
    return 0
