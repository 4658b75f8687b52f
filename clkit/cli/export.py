"""``clkit export``: runs into an MLflow store or TensorBoard event files (:mod:`clkit.export`)."""

from __future__ import annotations

import sys

__all__ = ["register"]


def register(sub) -> None:
    """Add ``export`` to ``clkit``'s subparsers."""
    e = sub.add_parser("export", help="write runs' parameters, metrics, verdicts and figures to MLflow or TensorBoard")
    e.add_argument("runs", help="a run folder or a folder of runs or sweeps (every results.json under it)")
    e.add_argument("--to", required=True, help="mlflow or tensorboard")
    e.add_argument("--out", default=None,
                   help="MLflow: a store folder or tracking URI (default mlruns); "
                        "TensorBoard: the log folder (default tb), one subfolder per run")
    e.add_argument("--figures", default=None, metavar="DIR",
                   help="the --figures DIR the runs were made with, when their figures are not in the run folders")
    e.set_defaults(func=_cmd_export)


def _cmd_export(args) -> int:
    from ..export import export_runs

    out = args.out if args.out is not None else {"mlflow": "mlruns", "tensorboard": "tb"}.get(args.to, "")
    try:
        counts = export_runs(args.runs, to=args.to, out=out, figures=args.figures,
                             log=lambda line: print(line, flush=True))
    except (ValueError, ImportError) as exc:
        print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt as exc:
        from .._signals import exit_status, stop_word

        print(f"[clkit] {stop_word(exc)}: export stopped; the runs already written to {out} stay, and rerunning "
              "the same command resumes (unchanged runs are skipped)", file=sys.stderr, flush=True)
        return exit_status(exc)
    from ..export import how_to_open

    print(f"[clkit] {args.to}: {counts['written']} written, {counts['replaced']} replaced, "
          f"{counts['unchanged']} unchanged -> {out}; {how_to_open(args.to, out)}", flush=True)
    return 0
