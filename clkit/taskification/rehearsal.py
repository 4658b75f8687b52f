"""Notebook 01's paper rehearsal: the ``paper`` set on a fabricated CESNET-TimeSeries24 database.

``clkit run 01 --params paper -p rehearse true`` keeps the paper set's structure -- the CESNET
database read by :func:`~clkit.data.timeseries.load_cesnet_timeseries24` through cesnet-tszoo,
the 9/30/44-day splits, delta, the profiles and BPS, the transformer's architecture
(12 features -> 32-d, 8 blocks, 4 heads), the four learners, AdamW with its LR schedule and
early stopping, the metrics and the verdict rule -- and cuts sizes and counts by
:data:`clkit.rehearsal.RULE` (:data:`PLAN`). The database is fabricated in cesnet-tszoo's
own layout (:func:`clkit.data.fixtures.cesnet.write_cesnet_timeseries24`), 20 weeks long:
the shortest stream on which the 44-day split, shifted by two days, still has the three
tasks a stability profile with ``l_min = 2`` needs.

**The context is one of the sizes.** The transformer is the same network at any context
length (only its positional embedding has one row per step), and a step's cost grows
faster than linearly with it: on one CPU core a training window of the 8-block model costs
about 60 ms at the paper's 288 steps and 2.5 ms at 36 (attention is quadratic in the
context; the attention dropout's random draws with it). At 288 steps the rehearsal's ~7,000
training windows (52 runs, at least ten windows per task) take about five minutes of two
cores; at 36 steps (six hours) they take seconds. The paper's 288-step step is timed on a
GPU by ``python benchmarks/gpu_check.py``.

One cut is a floor rather than a cap: the paper keeps every target step (``stride: 1``),
which at 10-minute steps makes thousands of windows per task. :func:`prepare` raises the
stride to the largest value that still leaves the shortest task the ten target steps per
series that :func:`~clkit.taskification.forecasting.make_forecast_tasks` asks for
(:func:`rehearsal_stride`): the number of windows is a count, capped like the others.
"""

from __future__ import annotations

import shutil

from ..rehearsal import MIN_SEEDS, Cap, Plan, Rehearsal
from .boundaries import days_to_steps

__all__ = ["PLAN", "prepare", "rehearsal_stride", "PARAMETERS"]

#: the interval of CESNET-TimeSeries24 at the paper's aggregation, in minutes
CESNET_MINUTES = 10.0


def _fixtures(values: dict) -> dict:
    if values.get("dataset") != "cesnet":
        return {}
    # twice the series the run loads, so that the loader's ranking by density has a choice
    return {"cesnet": {"num_ips": 2 * max(values["num_series"], values["cl_series"]),
                       "num_weeks": values["num_weeks"]}}


PLAN = Plan(
    "01_taskification",
    caps=(
        Cap("num_series", 4, "series analysed for profiles and BPS (4: the fewest pairs the verdict rule judges)"),
        Cap("cl_series", 1, "series whose windows form the CL tasks"),
        Cap("num_weeks", 20, "weeks of the fabricated database (the shortest with three shifted 44-day tasks)"),
        Cap("num_perturbations", 5, "taskifications drawn from each neighbourhood"),
        Cap("case_length", 1200, "steps of each case-study stream"),
        Cap("context_steps", 36, "steps of context per window (the transformer's input length; 8 blocks, "
                                 "32-d, 4 heads kept; the GPU check times the paper's 288)"),
        Cap("epochs", 1, "maximum epochs per task"),
        Cap("cl_seeds", MIN_SEEDS, "seeds per method and split"),
    ),
    fixtures=_fixtures,
)

#: the notebook parameters :func:`prepare` reads
PARAMETERS = tuple(c.name for c in PLAN.caps) + ("dataset", "window_days", "stride")


def rehearsal_stride(window_days, context_steps: int, interval_minutes: float = CESNET_MINUTES) -> int:
    """The largest stride that leaves the shortest task ten target steps per series.

    Examples
    --------
    >>> rehearsal_stride([9, 30, 44], 288)     # (9 days - 288 steps) / 10 = (1296 - 288) / 10
    100
    """
    steps = days_to_steps(min(window_days), interval_minutes)
    return max(1, (steps - int(context_steps)) // 10)


def prepare(values, root=None, *, seed: int = 0) -> Rehearsal:
    """Cut the notebook's parameters by :data:`PLAN`, write the fabricated database, raise the stride.

    Parameters
    ----------
    values : mapping
        The notebook's parameters (its ``globals()`` will do: only :data:`PARAMETERS` are read).
    root : path-like, optional
        Where to write the fabricated files (default: :func:`clkit.rehearsal.default_root`);
        ``CLKIT_DATA`` points there afterwards. The CESNET loader's cache of an earlier
        rehearsal there is removed, so the database is read through cesnet-tszoo every time.
    seed : int
        Seeds the fabricated data.

    Returns
    -------
    clkit.rehearsal.Rehearsal
        ``.changes`` holds the new values (the notebook takes them), ``.table()`` what was cut.

    Examples
    --------
    >>> import tempfile
    >>> rh = prepare(dict(dataset="synthetic", num_series=100, cl_series=100, num_weeks=40, num_perturbations=100,
    ...                   case_length=3000, epochs=100, cl_seeds=6, window_days=[9, 30, 44], context_steps=288,
    ...                   stride=1), root=tempfile.mkdtemp())
    >>> rh.changes["num_series"], rh.changes["cl_seeds"], rh.changes["context_steps"], rh.changes["stride"], rh.files
    (4, 4, 36, 126, {})
    """
    values = {k: values[k] for k in PARAMETERS if k in values}
    rh = PLAN.prepare(values, root, seed=seed)
    # the loader's own cache of a previous rehearsal would be read before the database:
    # removed, so that every rehearsal reads the fabricated database through cesnet-tszoo
    shutil.rmtree(rh.root / "cesnet_timeseries24", ignore_errors=True)
    used = {**values, **rh.changes}
    floor = rehearsal_stride(used["window_days"], used["context_steps"])
    if used["stride"] < floor:
        rh.changes["stride"] = floor
        rh.rows.append({"parameter": "stride", "given": values["stride"], "used": floor,
                        "what": "windows per task: every stride-th target step (raised: the most that leaves the "
                                "shortest task 10 target steps per series)"})
    return rh
