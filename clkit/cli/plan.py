"""``clkit plan``: how many seeds a study needs, from a pilot run's verdicts (:mod:`clkit.plan`)."""

from __future__ import annotations

import sys

__all__ = ["register"]


def register(sub) -> None:
    """Add ``plan`` to ``clkit``'s subparsers."""
    s = sub.add_parser("plan", help="pairs (seeds, series, orders) a study needs, planned from a pilot run")
    s.add_argument("results", help="a pilot run's results.json or its run folder (e.g. runs/default/04_curriculum)")
    s.add_argument("--effect-sds", type=float, default=2.0,
                   help="effect to detect, in spreads of each row's paired differences (default 2)")
    s.add_argument("--effect", type=float, default=None, help="an effect in the metric's own units, too")
    s.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    s.add_argument("--family", type=int, default=None,
                   help="plan at this Holm family size (default: each row's own family)")
    s.set_defaults(func=_cmd_plan)


def _cmd_plan(args) -> int:
    import pandas as pd

    from ..plan import PILOT_PAIRS, plan

    try:
        table = plan(args.results, effect=args.effect, effect_sds=args.effect_sds, power=args.power,
                     family=args.family)
    except ValueError as exc:   # bad input: one line, exit 2 (as every clkit command)
        print(f"[clkit] ERROR: {exc}", file=sys.stderr)
        return 2
    with pd.option_context("display.max_rows", 500, "display.width", 200, "display.max_colwidth", 60):
        print(table.to_string(na_rep="", float_format="{:.4g}".format))   # NaN shown blank, as the legend says
    print(f"\npairs needed for {round(100 * args.power)} % power at alpha / family (the level at which Holm "
          "decides a row whatever the other rows do, so the power holds under the rule; the same figures the "
          "verdict tables print); sd: the spread the rule uses (floored at the metric's resolution, on the row's "
          "scale); blank: no effect to detect, or more than 100,000")
    few = table[table["pairs now"] < PILOT_PAIRS] if "pairs now" in table else table.iloc[:0]
    if len(few):
        print(f"caution: {len(few)} row(s) rest on a pilot of fewer than {PILOT_PAIRS} pairs "
              f"({', '.join(map(str, sorted(set(few['pairs now']))))}): their spread, and so every 'pairs for' "
              "figure, is a rough guess (a 2-pair sd is off by a factor 2 or more in 43 % of pilots); run a larger "
              "pilot before planning on it")
    return 0
