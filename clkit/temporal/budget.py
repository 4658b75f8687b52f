"""Notebook 03's budget: its trainings, steps and evaluation passes, counted and timed before it trains.

The notebook trains every learner through the periods of its stream (``erm`` a fresh model
per period), evaluates a row of ``A(t, tau)`` after each period, trains the judged learners
again for every further verdict seed (plus fine-tuning on shifted seeds, the null control),
and before all that trains per-period ERM on Part 1's two synthetic streams.
:func:`count_work` counts that work exactly from the sizes of the periods;
:func:`calibrate` times a few real steps of each learner's strategy around the notebook's
MLP, and one evaluation pass, on the run's device (:func:`clkit.budget.time_per_call`);
:func:`run_budget` multiplies the two into a :class:`clkit.budget.Budget`.

Counted (for a stream of ``T`` periods with ``n_t`` training samples, batch ``B``):

- **steps of one pass through the stream** ``S = epochs * sum_t ceil(n_t / B)`` (the same
  for ``erm``, which trains each period once, on a fresh model);
- **runs**: every learner once; with verdicts, each judged learner ``verdict_seeds - 1``
  more times (its first seed is the run above) and fine-tuning ``verdict_seeds`` times more
  (the null control's shifted seeds);
- **ends of periods**: ``T`` per run (the strategy's end-of-task work: EWC's Fisher pass,
  A-GEM's memory, SI's importance, MoCo+SML's online pass of its streaming classifier; erm
  builds a new model there);
- **evaluation passes**: one per cell of ``A``, ``T * T`` per run (the backward view is
  evaluated too); Part 1 evaluates the forward cells, ``T1 (T1 + 1) / 2`` per stream.

Not in it: data loading, figures, the paired tests, and the first steps of the run (slower
while caches warm up).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validate import check_int

__all__ = ["count_work", "calibrate", "run_budget", "verdicts_run", "StreamShape", "published_shape",
           "WILD_TIME_SIZES", "PART1_STREAMS", "NOT_TIMED"]

#: Part 1 trains per-period ERM on two synthetic streams (difficulty only, shift only)
PART1_STREAMS = 2

#: the sentence the notebook prints after the budget: what its estimate counts and leaves out
NOT_TIMED = ("The verdict seeds' trainings are counted above (the paired tests are not); the first steps of a "
             "run, slower while caches warm up, are not.")


def verdicts_run(judged, verdict_seeds: int) -> bool:
    """Whether the notebook trains the verdict seeds: ``verdict_seeds >= 2``, finetune and another judged learner.

    Examples
    --------
    >>> verdicts_run(["finetune", "ewc"], 4), verdicts_run(["finetune"], 4), verdicts_run(["finetune", "si"], 1)
    (True, False, False)
    """
    judged = list(judged)
    return verdict_seeds >= 2 and "finetune" in judged and len(judged) > 1


def _synthetic_train_size(samples: int) -> int:
    """Training samples per period of :func:`clkit.data.temporal.make_drifting_gaussians` (half are test)."""
    return samples - max(1, int(round(samples * 0.5)))


def count_work(*, learners, train_sizes, epochs: int, batch_size: int, judged=(), verdict_seeds: int = 0,
               synthetic_periods: int = 0, synthetic_samples: int = 0, synthetic_epochs: int = 0,
               train_update_iter: dict | None = None) -> dict:
    """The notebook's work, counted: trainings, steps per learner and evaluation passes.

    Parameters
    ----------
    learners : list of str
        Part 2's learners (each trained once).
    train_sizes : sequence of int, length T
        Training samples of each period.
    epochs, batch_size : int
        Part 2's training settings.
    judged : list of str
        The learners judged by the verdicts (every sequential learner of the notebook).
    verdict_seeds : int
        Seeds paired in the verdicts (:func:`verdicts_run` says whether they train).
    synthetic_periods, synthetic_samples, synthetic_epochs : int
        Part 1 (0 periods: no Part 1).

    Returns
    -------
    dict
        ``runs`` ``{learner: trainings through the stream}``, ``steps`` ``{learner: steps}``,
        ``period_ends`` ``{learner: periods trained}`` (``runs * T``),
        ``trainings`` (period trainings: ``train_task`` calls, Part 1 included),
        ``eval_passes`` (cells of A evaluated in Part 2), ``part1_steps``,
        ``part1_eval_passes``, ``num_periods`` and ``detail`` (how the trainings are counted).

    Examples
    --------
    A hand count: 3 periods of 100, 130 and 64 samples in batches of 64 take 2 + 3 + 1 = 6
    steps per epoch, 12 in 2 epochs; erm, finetune and ewc run once, then finetune and ewc 2
    more seeds each and finetune 3 more (null control); Part 1: 2 streams x 4 periods of 10
    training samples (1 step) x 5 epochs, 10 forward cells each.

    >>> w = count_work(learners=["erm", "finetune", "ewc"], train_sizes=[100, 130, 64], epochs=2,
    ...                batch_size=64, judged=["finetune", "ewc"], verdict_seeds=3,
    ...                synthetic_periods=4, synthetic_samples=20, synthetic_epochs=5)
    >>> w["runs"], w["steps"]
    ({'erm': 1, 'finetune': 6, 'ewc': 3}, {'erm': 12, 'finetune': 72, 'ewc': 36})
    >>> w["trainings"], w["eval_passes"], w["part1_steps"], w["part1_eval_passes"]
    (38, 90, 40, 20)

    With Wild-Time's iterations per period (``train_update_iter``), each period trains
    ``ceil(iterations * B / n_t)`` epochs (:func:`~clkit.temporal.wildtime_settings.period_epochs`); erm:
    30 epochs x 10 steps, then 3 x 100; si: 5 x 10, then 1 x 100 (at least the iterations per period):

    >>> count_work(learners=["erm", "si"], train_sizes=[640, 6400], epochs=1, batch_size=64,
    ...            train_update_iter={"erm": 300, "default": 50})["steps"]
    {'erm': 600, 'si': 150}
    """
    learners = list(learners)
    sizes = [check_int("train_sizes", int(n), low=0) for n in train_sizes]
    epochs = check_int("epochs", epochs, low=0)
    batch_size = check_int("batch_size", batch_size, low=1)
    T = len(sizes)
    from .wildtime_settings import period_epochs

    def per_pass(m):   # steps of one pass of learner m: per-period epochs from Wild-Time's iterations, if given
        if not train_update_iter:
            return epochs * sum(math.ceil(n / batch_size) for n in sizes)
        eps = period_epochs(sizes, learner=m, epochs=max(epochs, 1), batch_size=batch_size,
                            train_update_iter=train_update_iter)
        return sum(e * math.ceil(n / batch_size) for e, n in zip(eps, sizes))
    judged = [m for m in judged if m in learners] if verdicts_run(judged, verdict_seeds) else []
    runs = {m: 1 + (verdict_seeds - 1 if m in judged else 0) + (verdict_seeds if m == "finetune" and judged else 0)
            for m in learners}
    n1 = _synthetic_train_size(synthetic_samples) if synthetic_periods else 0
    part1_steps = PART1_STREAMS * synthetic_periods * synthetic_epochs * math.ceil(n1 / batch_size) if n1 else 0
    part1_trainings = PART1_STREAMS * synthetic_periods
    trainings = sum(runs.values()) * T + part1_trainings
    extra = sum(runs.values()) - len(learners)
    detail = (f"Part 1: {PART1_STREAMS} streams x {synthetic_periods} periods (erm); " if synthetic_periods else "")
    detail += f"Part 2: {len(learners)} learners x {T} periods"
    if extra:
        detail += (f"; verdicts: {len(judged)} learners x {verdict_seeds - 1} more seeds + {verdict_seeds} "
                   f"null-control finetune runs, x {T} periods")
    return {"runs": runs, "steps": {m: r * per_pass(m) for m, r in runs.items()},
            "period_ends": {m: r * T for m, r in runs.items()}, "trainings": trainings,
            "eval_passes": sum(runs.values()) * T * T, "part1_steps": part1_steps,
            "part1_eval_passes": PART1_STREAMS * synthetic_periods * (synthetic_periods + 1) // 2,
            "num_periods": T, "detail": detail}


#: at most this many rows in a calibration task (a larger period's end-of-period work is scaled up)
CAL_ROWS = 4096


def calibrate(learners, input_shape, num_classes: int, *, hidden=(64,), lr: float = 1e-3, batch_size: int = 64,
              train_size: int = 256, eval_size: int = 256, learner_kwargs: dict | None = None, device="cpu",
              precision: str = "fp32", seed: int = 0, num_threads: int | None = 1, repeats: int = 3,
              backbone: str = "mlp", backbone_weights=None) -> dict:
    """Seconds per training step, per end of period and per evaluation pass, timed on ``device``.

    Each learner's strategy is built as :func:`~clkit.temporal.accuracy_matrix` builds it
    (the notebook's ``backbone``, by default its MLP; Adam, ``precision``) and trained one
    epoch on a first random task of the data's shape (so EWC has its Fisher term, SI its
    importance, A-GEM a filled memory, CORAL one earlier domain: its later periods' steps, with
    up to ``coral_groups - 1`` earlier domains, take up to that many times the rows).
    Then, on a second task of ``train_size`` rows (at most 16 batches of them):

    - **a step**: whole epochs of :meth:`~clkit.strategies.Strategy.train_batch` over the
      strategy's own batch orders, timed after a warm-up epoch (the median of ``repeats``
      epochs, CUDA synchronised; :func:`clkit.budget.time_per_call`), per step;
    - **an end of period**: the strategy's ``after_task`` on ``train_size`` rows (at most
      :data:`CAL_ROWS`, scaled up linearly beyond); for ``erm`` also building the strategy and
      its model, which it does every period;
    - **an evaluation pass**: a row of :func:`~clkit.temporal.accuracy_row` over 8 test periods
      of ``eval_size`` rows (at most :data:`CAL_ROWS`, scaled up linearly beyond), per period.

    Learners sharing a strategy and settings (``erm``, ``finetune``) are timed once.

    Returns
    -------
    dict
        ``step``, ``period_end`` ``{learner: seconds}``, ``eval`` (seconds per pass) and
        ``calibration`` ``{learner: what was timed}``.

    Examples
    --------
    >>> c = calibrate(["erm", "finetune"], (8,), 2, hidden=(8,), batch_size=16, repeats=1)
    >>> sorted(c["step"]), c["step"]["erm"] == c["step"]["finetune"] > 0, c["eval"] > 0, c["period_end"]["erm"] > 0
    (['erm', 'finetune'], True, True, True)
    """
    import time

    import torch

    from .._seed import torch_threads
    from ..budget import time_per_call
    from ..device import as_device
    from ..learner_kwargs import settings_for
    from ..strategies import Task
    from .experiment import accuracy_row, build_learner, learner_strategy

    device = as_device(device)
    in_features = int(np.prod(input_shape))
    gen = torch.Generator().manual_seed(seed)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def task(n, task_id):
        x = torch.rand((n, *input_shape), generator=gen)
        y = torch.randint(0, num_classes, (n,), generator=gen)
        return Task(x, y, task_id=task_id, classes=tuple(range(num_classes))).to(device)

    def build(m, kwargs):
        return build_learner(m, in_features, num_classes, seed=seed, hidden=hidden, lr=lr, epochs=1,
                             batch_size=batch_size, strategy_kwargs=kwargs, device=device, precision=precision,
                             backbone=backbone, input_shape=tuple(input_shape), backbone_weights=backbone_weights)

    n_step = max(1, min(int(train_size), 16 * batch_size))
    n_end = max(1, min(int(train_size), CAL_ROWS))
    batches = math.ceil(n_step / batch_size)
    timed, out = {}, {"step": {}, "period_end": {}, "calibration": {}}
    arch = ("MLP " + "-".join(str(v) for v in (in_features, *hidden, num_classes)) if backbone == "mlp" else
            f"{backbone} {tuple(input_shape)} -> {num_classes}")
    with torch_threads(num_threads):
        for m in learners:
            kwargs = settings_for(m, None, learner_kwargs) if learner_kwargs else {}
            key = (learner_strategy(m)[0], repr(sorted(kwargs.items())))
            if key not in timed:
                build(m, kwargs)                     # warm-up: the first build in a process imports
                start = time.perf_counter()
                s = build(m, kwargs)
                sync()
                built = time.perf_counter() - start
                s.train_task(task(max(2 * batch_size, min(getattr(s, "memory_size", 0), CAL_ROWS)), 0))
                current = task(n_step, 1)
                s.begin_task(current)
                epoch = time_per_call(lambda: [s.train_batch(current, idx) for idx in s.batches(n_step, device)],
                                      device=device, warmup=1, repeats=repeats)
                ending = task(n_end, 2)
                end = time_per_call(lambda: s.after_task(ending), device=device, warmup=0, repeats=1)
                timed[key] = (epoch / batches, end * max(1.0, train_size / n_end), built,
                              f"{repeats} epochs of {batches} steps of {arch}, batch {batch_size}, {key[0]}")
                probe = s
            step, end, built, out["calibration"][m] = timed[key]
            out["step"][m], out["period_end"][m] = step, end + (built if learner_strategy(m)[1] else 0.0)
        # at most CAL_ROWS rows per test period, scaled up linearly beyond (a huge eval_size must not
        # allocate its periods here: -p synthetic_samples 1000000000 killed the kernel in this cell)
        n_eval = max(1, min(int(eval_size), CAL_ROWS))
        tests = [task(n_eval, 3 + k) for k in range(8)]
        out["eval"] = (time_per_call(lambda: accuracy_row(probe, tests), device=device, repeats=repeats) / len(tests)
                       * max(1.0, eval_size / n_eval) if learners else 0.0)
    return out


@dataclass(frozen=True)
class StreamShape:
    """What the budget needs of a stream: period sizes, input shape and classes.

    Attributes
    ----------
    train_sizes, test_sizes : tuple of int, length num_periods
    input_shape : tuple
    num_classes : int
    source : str
    """

    train_sizes: tuple
    test_sizes: tuple
    input_shape: tuple
    num_classes: int
    source: str = ""

    @classmethod
    def of(cls, data) -> "StreamShape":
        """The shape of a :class:`~clkit.data.temporal.PeriodDataset` or :class:`~clkit.temporal.PeriodTasks`.

        Examples
        --------
        >>> from clkit.data.temporal import make_drifting_gaussians
        >>> s = StreamShape.of(make_drifting_gaussians(3, 10, seed=0))
        >>> s.train_sizes, s.test_sizes, s.input_shape, s.num_classes
        ((5, 5, 5), (5, 5, 5), (8,), 2)
        """
        if isinstance(data, StreamShape):
            return data
        if hasattr(data, "source"):                      # a PeriodDataset: host arrays
            train, test = [len(y) for _, y in data.train], [len(y) for _, y in data.test]
        else:                                            # PeriodTasks
            train, test = [len(t) for t in data.train], [len(t) for t in data.test]
        return cls(tuple(train), tuple(test), tuple(data.input_shape), int(data.num_classes),
                   getattr(data, "source", ""))


#: published sizes of the Wild-Time streams the paper uses: (images, time steps, input shape after
#: clkit's 32-pixel pooling, classes). Yearbook: 37,189 portraits, 1930-2013; FMoW-Time: the
#: 141,696 images of FMoW-WILDS regrouped by year, 2002-2017 (16 steps).
WILD_TIME_SIZES = {"yearbook": (37_189, 84, (1, 32, 32), 2), "fmow": (141_696, 16, (3, 32, 32), 62)}


def published_shape(name: str, *, period_length: int = 1, max_per_period: int = 0,
                    test_fraction: float = 0.1) -> StreamShape:
    """A Wild-Time stream's shape from its published size (:data:`WILD_TIME_SIZES`), without its file.

    For a budget before the file is there: the images are spread evenly over the time
    steps and split ``test_fraction`` for test (an assumption: the per-year counts and
    Wild-Time's split are in the file only); ``period_length`` and ``max_per_period`` as in
    :func:`clkit.data.temporal.load_wild_time`. Steps and evaluation passes scale with the
    totals, so the even spread changes the estimate only through rounding.

    Examples
    --------
    >>> s = published_shape("fmow")
    >>> len(s.train_sizes), sum(s.train_sizes) + sum(s.test_sizes), s.input_shape, s.num_classes
    (16, 141696, (3, 32, 32), 62)
    """
    from .._validate import check_choice, check_real

    total, steps, shape, classes = WILD_TIME_SIZES[check_choice("name", name, list(WILD_TIME_SIZES))]
    period_length = check_int("period_length", period_length, low=1)
    test_fraction = check_real("test_fraction", test_fraction, low=0, high=1, low_open=True, high_open=True)
    per_step = np.full(steps, total // steps) + (np.arange(steps) < total % steps)
    test = np.maximum(1, np.rint(per_step * test_fraction)).astype(int)
    train = per_step - test
    if max_per_period:
        train, test = np.minimum(train, max_per_period), np.minimum(test, max_per_period)
    periods = -(-steps // period_length)
    group = np.arange(steps) // period_length
    return StreamShape(tuple(int(train[group == k].sum()) for k in range(periods)),
                       tuple(int(test[group == k].sum()) for k in range(periods)), shape, classes,
                       f"published size of Wild-Time {name} ({total:,} images, {steps} steps; even spread, "
                       f"{test_fraction:.0%} test assumed)")


def run_budget(data, *, learners, train_kw: dict, judged=(), verdict_seeds: int = 0,
               learner_kwargs: dict | None = None, synthetic_periods: int = 0, synthetic_samples: int = 0,
               synthetic_epochs: int = 0, synthetic_features: int = 8, where: str | None = None,
               repeats: int = 5):
    """The notebook's :class:`clkit.budget.Budget`: :func:`count_work` times :func:`calibrate`.

    Parameters
    ----------
    data : PeriodDataset, PeriodTasks or StreamShape
        Part 2's stream (only its sizes and shapes are used).
    learners : list of str
    train_kw : dict
        The notebook's :func:`~clkit.temporal.accuracy_matrix` settings: ``epochs``,
        ``hidden``, ``lr``, ``batch_size``, ``seed``, ``device``, ``precision`` and
        ``backbone`` / ``backbone_weights`` (Part 1's synthetic streams always use the MLP).
    judged, verdict_seeds, learner_kwargs :
        As in the notebook's verdicts.
    synthetic_periods, synthetic_samples, synthetic_epochs, synthetic_features : int
        Part 1's streams (0 periods: none).
    where : str, optional
        The device in the text (the notebook passes ``rd.describe()``).

    The timed evaluation pass has the mean test-period size of ``data``.

    Examples
    --------
    >>> from clkit.data.temporal import make_drifting_gaussians
    >>> kw = dict(epochs=1, hidden=(8,), lr=1e-3, batch_size=16, seed=0, device="cpu", precision="fp32")
    >>> b = run_budget(make_drifting_gaussians(2, 80, seed=0), learners=["erm", "finetune"], train_kw=kw, repeats=1)
    >>> b.trainings, [w.count for w in b.work]
    (4, [6, 6, 4, 8])
    """
    from ..budget import Budget, Work
    from ..device import as_device

    shape = StreamShape.of(data)
    epochs, batch_size = train_kw.get("epochs", 5), train_kw.get("batch_size", 64)
    model_kw = dict(hidden=tuple(train_kw.get("hidden", (64,))), lr=train_kw.get("lr", 1e-3), batch_size=batch_size,
                    device=train_kw.get("device", "cpu"), precision=train_kw.get("precision", "fp32"),
                    seed=train_kw.get("seed", 0), repeats=repeats)
    nets = dict(backbone=train_kw.get("backbone", "mlp"), backbone_weights=train_kw.get("backbone_weights"))
    counts = count_work(learners=learners, train_sizes=shape.train_sizes, epochs=epochs, batch_size=batch_size,
                        judged=judged, verdict_seeds=verdict_seeds, synthetic_periods=synthetic_periods,
                        synthetic_samples=synthetic_samples, synthetic_epochs=synthetic_epochs,
                        train_update_iter=train_kw.get("train_update_iter"))
    mean_train, mean_test = (max(1, int(round(float(np.mean(sizes))))) if sizes else 1
                             for sizes in (shape.train_sizes, shape.test_sizes))
    cal = calibrate(learners, shape.input_shape, shape.num_classes, train_size=mean_train, eval_size=mean_test,
                    learner_kwargs=learner_kwargs, **model_kw, **nets)
    work = [Work(f"training steps ({m})", counts["steps"][m], cal["step"][m], cal["calibration"][m])
            for m in learners if counts["steps"][m]]
    ends = sum(counts["period_ends"].values())
    if ends:
        work.append(Work("ends of periods (EWC's Fisher pass, A-GEM's memory, SI's importance, MoCo+SML's "
                         "streaming classifier; erm's new model)",
                         ends, sum(counts["period_ends"][m] * cal["period_end"][m] for m in learners) / ends,
                         f"after_task on a period of {mean_train} training samples"))
    work.append(Work("evaluation passes (cells of A, one test period each)", counts["eval_passes"], cal["eval"],
                     f"a period of {mean_test} test samples"))
    if counts["part1_steps"]:
        n1 = _synthetic_train_size(synthetic_samples)
        p1 = calibrate(["erm"], (synthetic_features,), 2, train_size=n1, eval_size=synthetic_samples - n1, **model_kw)
        work += [Work("Part 1 training steps (erm)", counts["part1_steps"], p1["step"]["erm"],
                      p1["calibration"]["erm"]),
                 Work("Part 1 periods (erm's new model)", PART1_STREAMS * synthetic_periods, p1["period_end"]["erm"],
                      "building the strategy and its model"),
                 Work("Part 1 evaluation passes", counts["part1_eval_passes"], p1["eval"],
                      f"a period of {synthetic_samples - n1} test samples")]
    return Budget("03_temporal_metrics", where or str(as_device(model_kw["device"])), counts["trainings"], work,
                  detail=counts["detail"])
