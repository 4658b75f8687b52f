"""``clkit taskify bps``: profiles, D_prof between taskifications and BPS of a user stream."""

from __future__ import annotations

from ._output import add_out, guarded, show, write


def _floats(text: str, name: str) -> list:
    try:
        vals = [float(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{name} must be comma-separated numbers, got {text!r}") from None
    if not vals:
        raise ValueError(f"{name} must name at least one value, got {text!r}")
    return vals


def register(sub) -> None:
    p = sub.add_parser("taskify", help="temporal taskification: boundary-profile sensitivity of a stream")
    s = p.add_subparsers(dest="taskify_cmd", required=True)
    b = s.add_parser("bps", help="profiles, D_prof between fixed-window taskifications and BPS")
    b.add_argument("stream", help="STREAM.csv or .parquet: one row per time step")
    b.add_argument("--window", required=True, help="task lengths, comma-separated (e.g. 9,30,44)")
    b.add_argument("--delta", type=float, required=True, help="largest boundary move of the BPS neighbourhood")
    b.add_argument("--unit", default="steps", choices=("steps", "days"),
                   help="unit of --window / --delta / --offset: steps, or days (needs the sampling interval)")
    b.add_argument("--offset", type=float, default=0.0, help="shift of all boundaries (default 0)")
    b.add_argument("--time-column", default=None, help="time column (dates or numbers; default: row order)")
    b.add_argument("--value-columns", default=None, help="comma-separated feature columns (default: all numeric)")
    b.add_argument("--series-column", default=None, help="column identifying several aligned series")
    b.add_argument("--interval-minutes", type=float, default=None,
                   help="sampling interval (default: from a date time column, else 1)")
    b.add_argument("--samples", type=int, default=100, help="taskifications drawn per neighbourhood (default 100)")
    b.add_argument("--l-min", type=int, default=2, help="stability profile: smallest task lag (default 2)")
    b.add_argument("--alpha", type=float, default=0.5, help="D_prof weight of plasticity (default 0.5)")
    b.add_argument("--beta", type=float, default=0.5, help="D_prof weight of stability (default 0.5)")
    b.add_argument("--seed", type=int, default=0)
    add_out(b)
    b.set_defaults(func=guarded(bps))


def bps_result(data, windows, delta, *, unit: str = "steps", offset: float = 0.0, num_samples: int = 100,
               l_min: int = 2, alpha: float = 0.5, beta: float = 0.5, seed: int = 0) -> dict:
    """The computation behind ``clkit taskify bps`` on a :class:`~clkit.data.timeseries.TimeSeriesData`."""
    import numpy as np

    from .. import taskification as tk

    def steps(v):
        return tk.days_to_steps(v, data.interval_minutes) if unit == "days" else int(round(v))

    d = steps(delta)
    names = [f"{w:g}{'d' if unit == 'days' else ''}" for w in windows]
    splits = {n: tk.fixed_windows(data.length, steps(w), offset=steps(offset)) for n, w in zip(names, windows)}
    rows, profiles = {}, {}
    for n, tau in splits.items():
        tk.check_delta(tau, d)
        if tau.num_tasks - 1 < l_min:
            raise ValueError(f"--window {n}: {tau.num_tasks} tasks; the stability profile with --l-min {l_min} "
                             f"needs at least {l_min + 1}")
        r = tk.bps_over_series(data.values, tau, d, num_samples, seed, l_min=l_min, alpha=alpha, beta=beta)
        rows[n] = {"window_steps": steps(float(n.rstrip('d'))), "num_tasks": tau.num_tasks,
                   **{k: r[f"{k}_mean"] for k in ("plasticity", "stability", "bps")},
                   **{f"{k}_std": r[f"{k}_std"] for k in ("plasticity", "stability", "bps")}}
        profiles[n] = [tk.taskification_profile(data.values[s], tau, l_min) for s in range(data.num_series)]
    dprof = {}
    for a in names:
        for b in names:
            if a != b:
                v = [tk.profile_distance(pa, pb, alpha, beta) for pa, pb in zip(profiles[a], profiles[b])]
                dprof[f"{a}|{b}"] = float(np.mean(v))
    return {"source": data.source, "num_series": data.num_series, "length": data.length,
            "interval_minutes": data.interval_minutes, "delta_steps": d, "unit": unit, "windows": rows,
            "d_prof": dprof,
            "profiles": {n: [{"plasticity": p.plasticity, "stability": p.stability} for p in ps]
                         for n, ps in profiles.items()},
            "boundaries": {n: tau.boundaries for n, tau in splits.items()}}


def bps(args) -> int:
    import pandas as pd

    from .._validate import check_int, check_real
    from ..data.user import load_stream_table

    windows = _floats(args.window, "--window")
    check_real("--delta", args.delta, low=0)
    check_int("--samples", args.samples, low=1)
    cols = [c.strip() for c in args.value_columns.split(",")] if args.value_columns else None
    data = load_stream_table(args.stream, time_column=args.time_column, value_columns=cols,
                             series_column=args.series_column, interval_minutes=args.interval_minutes)
    res = bps_result(data, windows, args.delta, unit=args.unit, offset=args.offset, num_samples=args.samples,
                     l_min=args.l_min, alpha=args.alpha, beta=args.beta, seed=args.seed)
    table = pd.DataFrame([{"taskification": n, **r} for n, r in res["windows"].items()])
    print(data.source)
    show(table, f"BPS with delta = {res['delta_steps']} steps, {args.samples} neighbours per series")
    if res["d_prof"]:
        show(pd.DataFrame([{"pair": k, "D_prof": v} for k, v in res["d_prof"].items()]),
             "D_prof between taskifications (mean over series)")
    write(args.out, "bps", res, table)
    return 0
