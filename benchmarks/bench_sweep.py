"""Timings of ``clkit sweep`` (prints figures; not a pass/fail test).

1. Speed-up: the same 8 smoke cases of a notebook (default ``05_drift``; one
   case per seed) swept with 1 and with 2 local workers, each into a fresh
   folder, cluster start-up included; target >= 1.6x on 2 cores.
2. Per-case overhead of the sweep machinery over a bare papermill run
   (target <= 1 s): ``(sweep wall time with 1 worker - sum of bare runs) / cases``,
   where a bare run is ``papermill.execute_notebook`` of the same case in this
   process, with one thread per kernel as on the Dask workers. Measured for the
   smoke cases and, more precisely, for a notebook that does nothing (where
   papermill's own kernel start is all the work).

Run: ``.venv/bin/python benchmarks/bench_sweep.py [--notebook 05] [--cases 8] [--skip-bare]``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from clkit import notebooks, run
from clkit.sweep import plan_sweep, run_sweep

SEED_PARAM = {"01_taskification": "seed", "02_edge": "seed", "03_temporal_metrics": "seed",
              "04_curriculum": "seed", "05_drift": "seeds"}


def _grid(notebook: str, n: int) -> dict:
    name = SEED_PARAM[notebook]
    values = [[s] for s in range(1, n + 1)] if name == "seeds" else list(range(n))
    return {"grid": {name: values}}


def _sweep(notebook, grid, workers, params):
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        counts = run_sweep(notebook, grid, params=params, out=out, workers=workers, progress=False,
                           log=lambda line: None)
        wall = time.perf_counter() - t0
    if counts["failed"] or counts["done"] != counts["total"]:
        raise SystemExit(f"sweep did not complete: {counts}")
    return wall


def _bare(notebook, grid, params) -> float:
    """Sum of plain papermill runs of every case, one after the other, in this process."""
    import papermill as pm

    plan = plan_sweep(notebook, grid, params=params, out=tempfile.gettempdir())
    total = 0.0
    with tempfile.TemporaryDirectory() as out:
        os.environ["CLKIT_OUT_DIR"] = out
        os.environ["CLKIT_FIGURES_DIR"] = out
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[var] = "1"  # as Dask sets it for each worker: one core per case
        for case in plan["cases"]:
            t0 = time.perf_counter()
            pm.execute_notebook(plan["notebook_path"], str(Path(out) / "nb.ipynb"), parameters=case["params"],
                                kernel_name="python3", cwd=str(Path(plan["notebook_path"]).parent),
                                progress_bar=False, extra_arguments=run.KERNEL_ARGS)
            total += time.perf_counter() - t0
    return total


def _empty_notebook(folder: Path) -> None:
    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[v4.new_code_cell("seed: int = 0  # nothing to do", metadata={"tags": ["parameters"]}),
                                v4.new_code_cell("seed")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(folder / "00_empty.ipynb"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notebook", default="05")
    ap.add_argument("--cases", type=int, default=8)
    ap.add_argument("--params", default="smoke")
    ap.add_argument("--skip-bare", action="store_true", help="skip the bare runs of the smoke cases")
    args = ap.parse_args(argv)
    nb = notebooks.resolve_notebook(args.notebook)
    grid = _grid(nb, args.cases)
    print(f"machine: {os.cpu_count()} cores; {args.cases} {args.params} cases of {nb}", flush=True)

    w1 = _sweep(nb, grid, 1, args.params)
    print(f"1 worker : {w1:7.1f} s wall ({w1 / args.cases:.1f} s per case)", flush=True)
    w2 = _sweep(nb, grid, 2, args.params)
    print(f"2 workers: {w2:7.1f} s wall ({w2 / args.cases:.1f} s per case)", flush=True)
    print(f"speed-up 1 -> 2 workers: {w1 / w2:.2f}x (target >= 1.6x)", flush=True)
    if not args.skip_bare:
        bare = _bare(nb, grid, args.params)
        print(f"bare papermill, sequential: {bare:7.1f} s; sweep overhead per case: "
              f"{(w1 - bare) / args.cases:+.2f} s (target <= 1 s)", flush=True)

    with tempfile.TemporaryDirectory() as folder:
        os.environ["CLKIT_NOTEBOOKS"] = folder
        _empty_notebook(Path(folder))
        n = 16
        empty_grid = {"grid": {"seed": list(range(n))}}
        w1 = _sweep("00_empty", empty_grid, 1, None)
        bare = _bare("00_empty", empty_grid, None)
        print(f"empty notebook, {n} cases: sweep with 1 worker {w1:.1f} s, bare papermill {bare:.1f} s; "
              f"overhead per case {(w1 - bare) / n:+.2f} s (cluster start-up included)", flush=True)
        os.environ.pop("CLKIT_NOTEBOOKS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
