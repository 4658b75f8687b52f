"""Notebook 03's paper rehearsal: the ``paper`` set on fabricated Wild-Time files, sizes cut by one rule.

``rehearse: true`` keeps the ``paper`` set's dataset (Wild-Time FMoW, or Yearbook with
``-p dataset yearbook``) and its loader (:func:`clkit.data.temporal.load_wild_time` through
``wild-time-data``), the set's backbone (DenseNet-121; ``-p backbone`` picks another),
the learners, the metrics' settings (delta, lambda, H, n) and the verdict rule, and caps
every size, count and number of epochs (:data:`CAPS`, :data:`clkit.rehearsal.RULE`). A set that
requires ImageNet weights (``pretrained_required``) without a ``backbone_weights`` file gets a
fabricated checkpoint in torchvision's DenseNet-121 layout
(:func:`clkit.data.fixtures.densenet.write_densenet121_checkpoint`), read by the users' loading
code; ``paper_scale`` is switched off (a rehearsal is not the paper's experiment). Wild-Time's
iterations per period (``train_update_iter``) are dropped: a fabricated period holds
:data:`PER_STEP` images, fewer than one of Wild-Time's mini-batches (32 or 64), so even one
iteration would become ``ceil(batch_size / 8)`` = 4 (Yearbook) or 8 (FMoW) epochs per period,
over the ``epochs`` cap; a rehearsal trains every period for the set's ``epochs`` (capped at
2), as the cap says. The conversion itself (iterations to epochs per period and learner) is
tested on its own (``tests/test_temporal_paper_sets.py``). The fabricated file
(:mod:`clkit.data.fixtures.wild_time`: every time step of the real file, real image sizes,
:data:`PER_STEP` images per split and step) is written to the rehearsal folder, which
becomes the data cache the loader reads first.

``max_per_period = 0`` ("all of the file's images") is capped at the rule's 16 (the fabricated file
holds 8 per split and year, so nothing is dropped; the notebook's memory plan then counts 16 of the
real file's images per split and year, not all of them). ``max_periods = 0`` means "all periods"; the rule caps the number the stream has
(:func:`stream_periods`: FMoW's 16 yearly steps and Yearbook's 84 are cut to the first
:data:`MAX_PERIODS`), so that a cap never turns "all" into more work.
"""

from __future__ import annotations

from ..rehearsal import MIN_SEEDS, Cap, Plan, Rehearsal

__all__ = ["CAPS", "PER_STEP", "MAX_PERIODS", "PLAN", "prepare", "stream_periods"]

NOTEBOOK = "03_temporal_metrics"

#: periods kept by a rehearsal (FMoW has 16, Yearbook 84): 12 is over what the paper's metrics need (FMoW's H = 6
#: and n = 6: 7 periods; Yearbook's n = 10: 11) and keeps a rehearsal of 03 within minutes on two cores (the cells
#: of A and the verdict seeds' trainings grow with the periods; 16 took up to 200 s on a loaded machine)
MAX_PERIODS = 12

#: images per split and time step of each fabricated Wild-Time file
PER_STEP = {"fmow": 8, "yearbook": 8}

CAPS = (
    Cap("epochs", 2, "training epochs per period"),
    Cap("max_per_period", 16, "Wild-Time images per period and split (0 = all of the file's)"),
    Cap("max_periods", MAX_PERIODS, "periods of the stream kept (0 = all)"),
    Cap("synthetic_periods", 6, "Part 1 (and a synthetic stream): periods"),
    Cap("synthetic_samples", 200, "Part 1: samples per period"),
    Cap("synthetic_epochs", 3, "Part 1: training epochs per period"),
    Cap("verdict_seeds", MIN_SEEDS, "seeds paired in the verdicts (the verdict rule's minimum)"),
)


def _cap(name: str):
    return next(c.cap for c in CAPS if c.name == name)


def _fixtures(values: dict) -> dict:
    """The fabricated datasets the (cut) parameters load: the Wild-Time file of ``dataset``, if any."""
    name = values.get("dataset")
    return {name: {"per_step": PER_STEP[name]}} if name in PER_STEP else {}


PLAN = Plan(NOTEBOOK, CAPS, switches={}, fixtures=_fixtures)


def stream_periods(values: dict) -> int | None:
    """How many periods the stream of ``values`` has with ``max_periods = 0`` (``None`` where unknown here).

    Wild-Time: its time steps grouped by ``period_length``; ``synthetic``: ``synthetic_periods``.

    Examples
    --------
    >>> stream_periods({"dataset": "yearbook", "period_length": 1}), stream_periods({"dataset": "fmow", "period_length": 5})
    (84, 4)
    >>> stream_periods({"dataset": "rainfall", "period_length": 365}) is None
    True
    """
    name = values.get("dataset")
    if name in PER_STEP:
        import wild_time_data as wtd

        length = values.get("period_length", 1)
        length = length if isinstance(length, int) and length > 0 else 1
        return -(-len(wtd.available_time_steps(name)) // length)
    if name == "synthetic":
        return values.get("synthetic_periods")
    return None


def prepare(values: dict, root=None, *, seed: int = 0) -> Rehearsal:
    """Cut the notebook's parameter ``values`` by :data:`PLAN` and write the fabricated files.

    ``values`` may be the notebook's ``globals()``: only the capped parameters and
    ``dataset``/``period_length`` are read. ``max_periods = 0`` (all) is capped as the
    number of periods the stream has (:func:`stream_periods`); the table then says
    "given 0". Returns the :class:`clkit.rehearsal.Rehearsal` (``CLKIT_DATA`` now points
    at its folder).

    Examples
    --------
    >>> import os, tempfile
    >>> old = os.environ.get("CLKIT_DATA")
    >>> rh = prepare({"dataset": "yearbook", "period_length": 1, "max_periods": 0, "epochs": 20,
    ...               "verdict_seeds": 6}, tempfile.mkdtemp())
    >>> rh.changes, sorted(rh.files)
    ({'epochs': 2, 'max_periods': 12, 'verdict_seeds': 4}, ['yearbook'])
    >>> [(r["parameter"], r["given"], r["used"]) for r in rh.rows][1]
    ('max_periods', 0, 12)
    >>> _ = os.environ.pop("CLKIT_DATA") if old is None else os.environ.update(CLKIT_DATA=old)
    """
    given = values
    values = {k: values[k] for k in ("dataset", "period_length", *(c.name for c in CAPS)) if k in values}
    total = stream_periods(values) if values.get("max_periods") == 0 else None
    if total:
        values["max_periods"] = total
    all_images = values.get("max_per_period") == 0 and values.get("dataset") in PER_STEP
    if all_images:   # "all of the file's" is capped too: the memory plan then counts the capped real size
        values["max_per_period"] = _cap("max_per_period")
    rh = PLAN.prepare(values, root, seed=seed)
    if all_images:
        rh.changes["max_per_period"] = values["max_per_period"]
        rh.rows.append({"parameter": "max_per_period", "given": 0, "used": values["max_per_period"],
                        "what": "Wild-Time images per period and split (0 = all of the file's)"})
    for row in rh.rows:
        if row["parameter"] == "max_periods" and total:
            row["given"] = 0
            row["what"] = f"periods of the stream kept (0 = all: {total})"
    if (given.get("backbone") == "densenet121" and given.get("pretrained_required")
            and not given.get("backbone_weights")):
        from ..data.fixtures.densenet import write_densenet121_checkpoint

        path = write_densenet121_checkpoint(rh.root / "weights", seed=seed)
        rh.changes["backbone_weights"] = str(path)
        rh.files["densenet121 weights"] = path
        rh.rows.append({"parameter": "backbone_weights", "given": "", "used": str(path),
                        "what": "a fabricated checkpoint in torchvision's DenseNet-121 layout (random values: "
                                "not ImageNet's, the network is not pretrained)"})
    iters = given.get("train_update_iter")
    if isinstance(iters, dict) and iters:
        rh.changes["train_update_iter"] = {}
        rh.rows.append({"parameter": "train_update_iter", "given": dict(iters), "used": {},
                        "what": "Wild-Time's iterations per period, not used: a fabricated period is smaller than "
                                "one mini-batch, so even 1 iteration would be several epochs; every period trains "
                                "`epochs` (capped) instead"})
    if given.get("paper_scale"):
        rh.changes["paper_scale"] = False
        rh.rows.append({"parameter": "paper_scale", "given": True, "used": False,
                        "what": "the run is not the paper's experiment (fabricated data, sizes cut)"})
    return rh
