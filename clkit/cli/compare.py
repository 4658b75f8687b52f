"""``clkit compare``: runs from any trainer in (a folder with a manifest, a long CSV, Avalanche's CSVLogger,
mammoth / PyCIL logs, MLflow / W&B exports),
metrics recomputed, verdicts with a null control, a paragraph and a seed budget out (:mod:`clkit.compare`)."""

from __future__ import annotations

from ._output import guarded, show

USAGE = ("clkit compare RUNS [--reference METHOD | --compare A:B ...] [--metric acc] [--percent] "
         "[--target-effect E] [--tolerance T] [--oracle-shift S] [--oracle-sds K] [--out DIR] [--metric-pattern REGEX] [--method-key KEY] [--seed-key KEY] "
         "[--steps index|order] [--task-base 0|1]")


def register(sub) -> None:
    p = sub.add_parser("compare", help="many runs in, a verdict out: metrics recomputed from accuracy matrices, "
                                       "paired verdicts with a seed-vs-seed null control",
                       usage=USAGE, description=(
                           "RUNS is a folder with runs.csv / runs.yaml (file, method, seed, [order], "
                           "[taskification], [reported_acc, reported_bwt, reported_fwt, reported_forgetting]; "
                           "each file an accuracy matrix CSV R[i, j] or Avalanche's eval_results.csv), or a long "
                           "CSV (method, seed, [order], [taskification], i, j, accuracy), a mammoth / PyCIL results "
                           "folder, an MLflow file store (mlruns) or metric-history table, or W&B history exports. "
                           "See docs/compare.md."))
    p.add_argument("runs", help="folder with runs.csv / runs.yaml, a manifest file, or a long CSV")
    p.add_argument("--reference", default=None, metavar="METHOD",
                   help="compare every method against METHOD (also the null control's method)")
    p.add_argument("--compare", action="append", default=None, metavar="A:B",
                   help="a comparison A − B (repeatable); the null control uses --reference, else the B of the first")
    p.add_argument("--metric", default="acc", choices=["acc", "acc_all_seen", "bwt", "fwt", "forgetting"],
                   help="the primary metric (default acc, the final-row mean); the others are exploratory")
    p.add_argument("--percent", action="store_true",
                   help="scores (and reported numbers) are percentages 0-100: divide by 100 (without it, values "
                        "outside [0, 1] are refused)")
    p.add_argument("--target-effect", type=float, default=None, metavar="E",
                   help="plan the seeds needed to detect an effect E (fraction scale: 0.01 is one point)")
    p.add_argument("--oracle-shift", type=float, default=None, metavar="S",
                   help="add the pipeline check: a copy of the reference method with the share S (0-1] of its "
                        "final row's error removed, whose recomputed ACC gain must be exactly the planted one "
                        "(clkit.compare.oracle.pipeline_check; listed under pipeline checks, not a control)")
    p.add_argument("--oracle-sds", type=float, default=3.0, metavar="K",
                   help="the oracle control: a gain of K spreads of the sharpest ACC comparison's paired "
                        "differences planted into the null control's pairs, which the rule must find "
                        "(default 3; 0: no oracle)")
    p.add_argument("--tolerance", type=float, default=None, metavar="T",
                   help="reported numbers differing from the recomputed ones by more than T are listed "
                        "(default 1e-3, fraction scale)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write results.json, runs.csv, metrics.csv, verdicts.csv, disagreements.csv and two "
                        "figures into DIR")
    g = p.add_argument_group("MLflow / W&B exports (docs/compare.md)")
    g.add_argument("--metric-pattern", default=None, metavar="REGEX",
                   help="regex matching a whole metric key, the evaluated task in a named group 'task' (default: "
                        "acc_task_3, acc/task_3, eval_accuracy_task_3, ...)")
    g.add_argument("--method-key", default=None, metavar="KEY",
                   help="the param / tag / config key holding the method (default method)")
    g.add_argument("--seed-key", default=None, metavar="KEY",
                   help="the param / tag / config key holding the seed (default seed)")
    g.add_argument("--steps", default=None, choices=["index", "order"],
                   help="index (default): the step is the task trained; order: the k-th evaluation step is row k")
    g.add_argument("--task-base", default=None, type=int, choices=[0, 1],
                   help="the number of the first task in the metric keys (default 0; 1 for acc_task_1 .. acc_task_T)")
    p.set_defaults(func=guarded(compare))


def compare(args) -> int:
    from .. import compare as cmp
    from .._validate import check_real

    if args.compare is None and args.reference is None:
        raise ValueError("name the comparisons (--compare A:B, repeatable) or a --reference method")
    tol = cmp.metrics.TOLERANCE if args.tolerance is None else args.tolerance
    check_real("--tolerance", tol, low=0)
    if args.target_effect is not None:
        check_real("--target-effect", args.target_effect, low=0)
    if args.oracle_shift is not None:
        check_real("--oracle-shift", args.oracle_shift, low=0, high=1, low_open=True)
    check_real("--oracle-sds", args.oracle_sds, low=0)
    runs = cmp.read_runs(args.runs, percent=args.percent, metric_pattern=getattr(args, "metric_pattern", None),
                         method_key=getattr(args, "method_key", None), seed_key=getattr(args, "seed_key", None),
                         steps=getattr(args, "steps", None), task_base=getattr(args, "task_base", None))
    res = cmp.compare(runs, comparisons=args.compare, reference=args.reference, metric=args.metric,
                      target=args.target_effect, tol=tol, oracle_shift=args.oracle_shift,
                      oracle_sds=args.oracle_sds, percent=args.percent)
    show(res["runs"], f"{len(runs)} run(s) read from {runs.source} ({runs.format}); what was used from each:")
    for note in runs.notes:
        print(f"note: {note}")
    if res["not_compared"]:
        print(f"note: read but not compared: {', '.join(res['not_compared'])}")
    print()
    show(res["metrics"].drop(columns=["source"]),
         f"metrics recomputed from each R (clkit.metrics; {res['metrics'].columns.name or 'fractions (0-1)'}):")
    dis, checked = res["disagreements"], res["checks"]
    print()
    if len(checked):
        counts = checked["status"].value_counts()
        print(f"reported numbers checked, each against its own definition recomputed from R (clkit.compare.metrics."
              f"FORMS): {int(counts.get('agrees', 0))} agree within {tol:g}, {int(counts.get('disagrees', 0))} "
              f"disagree, {int(counts.get('not checkable', 0))} not checkable")
        for key, group in checked.groupby("metric", sort=False):
            print(f"  {key}: {group['definition'].iloc[0]} -- "
                  + ", ".join(f"{n} {st}" for st, n in group["status"].value_counts().items()))
        if len(dis):
            show(dis.drop(columns=["definition", "status"]),
                 f"reported numbers that disagree with their definition recomputed from R (|difference| > {tol:g}; "
                 f"{dis.columns.name}):")
        unchecked = checked[checked["status"] == "not checkable"]
        for key, group in unchecked.groupby("metric", sort=False):
            print(f"note: {key} of {len(group)} run(s) not checkable: {group['why'].iloc[0]}")
    else:
        print("reported numbers: none given")
    print()
    table = res["table"].reset_index()
    against = (f"its rerun {res['rerun']} on the same seeds" if res.get("rerun")
               else "itself on other seeds (no rerun given: unpaired, weaker)")
    show(table, f"verdicts (primary metric: {args.metric}; null control: {res['control']} against {against}; "
                f"{res['unit']}):")
    print()
    print(res["paragraph"])
    if res["planner"]:
        print()
        print("seed budget:")
        for line in res["planner"]:
            print(f"  {line}")
    if args.out is not None:
        params = {k: getattr(args, k) for k in ("runs", "reference", "compare", "metric", "percent",
                                                "target_effect", "oracle_shift", "oracle_sds")}
        params["tolerance"] = tol
        for path in cmp.write_report(res, args.out, params=params):
            print(f"wrote {path}")
    return 0
