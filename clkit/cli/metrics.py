"""``clkit metrics cl|temporal``: CL metrics of R[i, j] and temporal metrics of A(t, tau) from CSV."""

from __future__ import annotations

import argparse

from ._output import add_out, guarded, show, write


def register(sub) -> None:
    p = sub.add_parser("metrics", help="metrics of a performance matrix from CSV (no training)")
    s = p.add_subparsers(dest="metrics_cmd", required=True)
    c = s.add_parser("cl", help="ACC, BWT, FWT, forgetting of R[i, j] (score on task j after task i)")
    c.add_argument("matrix", help="R.csv: square matrix, one row and column per task; cells above the diagonal "
                                  "may be empty")
    add_matrix_options(c)
    c.add_argument("--error", action="store_true", help="R holds errors (e.g. MSE): lower is better")
    c.add_argument("--baseline", default=None, metavar="B",
                   help="comma-separated scores at initialisation b_j, for FWT (Lopez-Paz & Ranzato); "
                        "without it FWT is the mean of the upper triangle (Diaz-Rodriguez et al.)")
    add_out(c)
    c.set_defaults(func=guarded(cl))
    t = s.add_parser("temporal", help="g, Stability / Drift Horizon, TAS, ID / OOD of A(t, tau)")
    t.add_argument("matrix", help="A.csv: A(t, tau) for tau >= t; cells below the diagonal may be empty")
    add_matrix_options(t)
    t.add_argument("--delta", type=float, default=0.9, help="Stability Horizon tolerance (default 0.9)")
    t.add_argument("--epsilon", type=float, default=0.02, help="Drift Horizon per-step tolerance (default 0.02)")
    t.add_argument("--lam", type=float, default=0.15, help="Drift Horizon threshold lambda (default 0.15)")
    t.add_argument("--n", type=int, default=3, help="future periods averaged by TAS / OOD (default 3)")
    t.add_argument("--horizon", type=int, default=0, help="maximum horizon H for SH / DH (0: all)")
    add_out(t)
    t.set_defaults(func=guarded(temporal))


def add_matrix_options(parser) -> None:
    """How to read the matrix file: nothing is guessed from its shape (:func:`clkit.data.user.load_matrix_csv`)."""
    g = parser.add_argument_group("reading the matrix (a header row / index column is taken by itself only when "
                                  "it has text)")
    g.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                   help="the first row is (--header) or is not (--no-header) column labels")
    g.add_argument("--index-col", action=argparse.BooleanOptionalAction, default=None,
                   help="the first column is (--index-col) or is not (--no-index-col) row labels")
    g.add_argument("--rows", default=None, metavar="SEL",
                   help="the task rows among the data rows: a slice '1:' (e.g. leave out a row of scores before "
                        "training) or indices '0,1,2'")
    g.add_argument("--columns", default=None, metavar="SEL",
                   help="the task columns: a slice '0:4' (e.g. leave out an average column) or indices '0,1,2'")
    g.add_argument("--percent", action="store_true",
                   help="the scores are in percent (0-100): divide them by 100 (without it, values outside "
                        "[0, 1] are refused)")


def _selection_arg(value, option: str):
    if value is None or ":" in value:
        return value
    try:
        return [int(v) for v in value.split(",")]
    except ValueError:
        raise ValueError(f"{option} must be a slice like '1:' or comma-separated indices like '0,1,2', "
                         f"got {value!r}") from None


def read_matrix(args, name: str, nan_allowed: str, scale: str):
    """The matrix of ``args.matrix`` read as the options say; prints the shape it read."""
    from ..data.user import load_matrix_csv

    if args.percent and scale == "any":
        raise ValueError("--percent: R holds errors (--error), which have no percent scale")
    return load_matrix_csv(args.matrix, name=name, nan_allowed=nan_allowed, header=args.header,
                           index_col=args.index_col, rows=_selection_arg(args.rows, "--rows"),
                           cols=_selection_arg(args.columns, "--columns"),
                           scale="percent" if args.percent else scale)


def parse_baseline(text: str, num_tasks: int, *, percent: bool = False, error: bool = False):
    """``--baseline``: one finite score per task, on the matrix's scale.

    With ``--percent`` the scores are divided by 100 like the matrix; scores (not errors) must
    then lie in [0, 1] like the matrix's, so a percent baseline given without ``--percent`` (or
    a fraction given with it) is refused, not silently mixed. NaN and inf are refused: a NaN
    would drop its task from FWT without a word.

    Examples
    --------
    >>> parse_baseline("10,11,9,10", 4, percent=True).tolist()
    [0.1, 0.11, 0.09, 0.1]
    >>> parse_baseline("5,5,5,5", 4)
    Traceback (most recent call last):
    ...
    ValueError: --baseline: 5 is outside [0, 1], the scale of R's scores (in percent? add --percent)
    """
    import numpy as np

    try:
        b = np.array([float(v) for v in text.split(",")])
    except ValueError:
        raise ValueError(f"--baseline must be comma-separated numbers, got {text!r}") from None
    if b.shape != (num_tasks,):
        raise ValueError(f"--baseline has {len(b)} values; R has {num_tasks} tasks")
    bad = b[~np.isfinite(b)]
    if bad.size:
        raise ValueError(f"--baseline: {bad[0]:g} is not a finite number; give a score for every task")
    if percent and not error:
        from .._scale import check_not_fractions

        check_not_fractions(b, where="--baseline")
    if percent:
        b = b / 100.0
    if not error:
        out = b[(b < 0) | (b > 1)]
        if out.size:
            hint = "in percent? add --percent" if not percent else "with --percent they are percentages, 0-100"
            raise ValueError(f"--baseline: {out[0] * (100 if percent else 1):g} is outside "
                             f"{'[0, 100]' if percent else '[0, 1]'}, the scale of R's scores ({hint})")
    return b


def cl_result(R, *, error: bool = False, baseline=None) -> dict:
    """ACC / BWT / FWT / forgetting of ``R`` with :mod:`clkit.metrics` (behind ``clkit metrics cl``)."""
    from .. import metrics as mt

    hib = not error
    fwt_mode = "lopez_paz" if baseline is not None else "diaz_rodriguez"
    return {
        "num_tasks": int(len(R)), "higher_is_better": hib,
        "acc": mt.average_accuracy(R), "acc_all_seen": mt.average_accuracy(R, mode="all_seen"),
        "bwt": mt.backward_transfer(R, higher_is_better=hib),
        "fwt": mt.forward_transfer(R, b=baseline, mode=fwt_mode), "fwt_mode": fwt_mode,
        "forgetting": mt.forgetting(R, higher_is_better=hib),
    }


def cl(args) -> int:
    import pandas as pd

    R = read_matrix(args, "R", "above", "any" if args.error else "unit")
    b = None if args.baseline is None else parse_baseline(args.baseline, len(R), percent=args.percent,
                                                          error=args.error)
    res = cl_result(R, error=args.error, baseline=b)
    res["matrix"] = R
    table = pd.DataFrame([{"metric": k, "value": res[k]} for k in ("acc", "acc_all_seen", "bwt", "fwt",
                                                                     "forgetting")])
    show(table, f"R from {args.matrix}: {len(R)} tasks ({'errors' if args.error else 'scores'}; "
                f"FWT: {res['fwt_mode']})")
    write(args.out, "metrics_cl", res, table)
    return 0


def temporal(args) -> int:
    import pandas as pd

    from .. import temporal as tm
    from .._validate import check_int, check_real
    A = read_matrix(args, "A", "below", "unit")
    check_real("--delta", args.delta, low=0, high=1)
    check_real("--epsilon", args.epsilon, low=0)
    check_real("--lam", args.lam, low=0)
    check_int("--n", args.n, low=1)
    if args.n > len(A) - 1:   # the first period has len(A) - 1 future periods, the others fewer
        raise ValueError(f"--n {args.n} averages {args.n} future periods, but A has {len(A)} periods (the first has "
                         f"{len(A) - 1} after it); give --n between 1 and {len(A) - 1}")
    check_int("--horizon", args.horizon, low=0)
    s = tm.summarize_learner(A, delta=args.delta, epsilon=args.epsilon, lam=args.lam, n=args.n,
                             horizon=args.horizon or None)
    g = tm.transfer_ratio(A)
    res = {"num_periods": int(len(A)), "delta": args.delta, "epsilon": args.epsilon, "lam": args.lam, "n": args.n,
           "horizon": args.horizon, **{k: v for k, v in s.items() if k != "per_period"},
           "per_period": s["per_period"], "g": g, "A": A}
    pp = s["per_period"]
    table = pd.DataFrame({"t": range(len(A)), "id": pp["id"], "ood": pp["ood"], "tas": pp["tas"],
                          "sh": pp["sh"], "dh": pp["dh"]})
    show(table, f"A(t, tau) from {args.matrix}: {len(A)} periods; per period t")
    print(f"mean: ID {s['id']:.4g}  OOD {s['ood']:.4g}  TAS {s['tas']:.4g}  SH {s['sh']:.4g}  DH {s['dh']:.4g}")
    write(args.out, "metrics_temporal", res, table)
    return 0
