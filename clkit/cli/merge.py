"""``clkit merge``: one run's results from the finished cases of a split sweep (:mod:`clkit.sweep.merge`)."""

from __future__ import annotations

import sys

__all__ = ["register"]


def register(sub) -> None:
    """Add ``merge`` to ``clkit``'s subparsers."""
    s = sub.add_parser("merge", help="merge the finished cases of a split sweep into the results of one run")
    s.add_argument("sweep_dir", help="the folder clkit sweep --out wrote (or its notebook folder)")
    s.add_argument("--out", default="runs/merged", help="where the merged run goes (default runs/merged)")
    s.set_defaults(func=_cmd_merge)


def _cmd_merge(args) -> int:
    from ..run import ParameterError
    from ..sweep.merge import merge_sweep

    try:
        folder = merge_sweep(args.sweep_dir, out=args.out)
    except (ValueError, ParameterError) as exc:
        print(f"[clkit] ERROR: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"[clkit] ERROR: the merge run failed: {exc}", file=sys.stderr)
        return 1
    print(f"merged: {folder / 'results.json'}")
    return 0
