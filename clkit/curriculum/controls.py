"""Notebook 04's controls that can fail, and its pipeline checks.

A **control** is a comparison whose outcome is known before the run and that the rule can get
wrong. Notebook 04 has two kinds (:mod:`clkit.curriculum.verdicts` judges them):

- The **stochastic null control** (:class:`NullControl`): one strategy against *itself* under
  the same order, its runs on seeds ``seed + S .. seed + 2S - 1`` against its runs on the run's
  seeds ``seed .. seed + S - 1`` (``S`` seeds), paired by position. Both arms are independent
  runs of one learner -- other images, initial weights and batch orders -- so every difference
  is noise: the rule must say "no difference", and does so in 95 % of such runs. It is of the
  same kind as the findings (a paired t over seeds on the same metric of trained learners), so a
  rule that is too liberal for these metrics (a skewed or stepwise seed spread, seeds x tasks
  pooled as if independent, a shifted arm) trips it. One is judged per metric the verdicts use
  (final-row mean, ACC, ACC beyond the weighting reference), each alone at its nominal level.
  It doubles the runs of one strategy under one order, so it costs about ``1 / (2 K)`` of the
  ``K`` strategies' streams, and the single-task runs of the offset seeds (for their weighting
  reference).
- The **oracles** of the ACC family (MSTE, the weighting reference) must come out "M2I higher";
  :mod:`clkit.curriculum.verdicts` says when they can fail.

A **pipeline check** (:func:`pipeline_checks`) is a comparison that is zero by construction: it
cannot fail under a broken rule, only under a broken pipeline. MSTE (one expert per task) reaches
the same accuracy on a dataset under both orders with the task-level pairing of
:func:`clkit.curriculum.streams.run_stream`; the weighting reference's final-row mean is the
same mean of the same accuracies under both orders; the authors' BWT telescopes. A failed check
stops the findings as a failed control does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .difficulty import Curriculum
from .evaluate import bwt_identity, weighting_reference

__all__ = ["PRIMARY", "NULL_LEARNERS", "NullControl", "control_strategy", "seed_span", "Check", "pipeline_checks",
           "checks_hold"]

#: the strategies whose order verdict is the notebook's claim: the paper's headline examples of
#: "a better performance in the curriculum learning setting" (Sect. 4.4, Tables 3-4, VGG9:
#: Replay, GenerativeReplay, GEM)
PRIMARY = ("replay", "generative_replay", "gem")
#: learners that cannot forget or transfer: their order gap is zero by construction (pipeline checks)
NULL_LEARNERS = ("mste",)


def control_strategy(strategies, primary=PRIMARY) -> str:
    """The strategy the null control runs again: the first primary strategy of the run, else the
    first one that can forget.

    Examples
    --------
    >>> control_strategy(["naive", "mste", "gem", "replay"]), control_strategy(["mste", "ewc"])
    ('replay', 'ewc')
    """
    strategies = list(strategies)
    for k in primary:
        if k in strategies and k not in NULL_LEARNERS:
            return k
    for k in strategies:
        if k not in NULL_LEARNERS:
            return k
    raise ValueError(f"strategies: the null control needs a strategy that can forget (not {list(NULL_LEARNERS)}), "
                     f"got {strategies}")


def seed_span(seeds) -> str:
    """``seeds 3–5`` (consecutive seeds, as the run draws them), or ``seed 3``.

    Examples
    --------
    >>> seed_span([3, 4, 5]), seed_span([7])
    ('seeds 3–5', 'seed 7')
    """
    seeds = list(seeds)
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}–{seeds[-1]}"


@dataclass(frozen=True)
class NullControl:
    """One strategy against itself under one order, seeds offset by their number.

    Attributes
    ----------
    strategy : str
    order : str
        ``"M2I"`` (the direct curriculum, the claim's) by default.
    seeds : tuple of int
        The run's seeds (the arm ``b``).
    offset_seeds : tuple of int
        ``seeds`` shifted by their number (the arm ``a``), paired by position.

    Examples
    --------
    >>> c = NullControl.plan(["naive", "replay"], [0, 1, 2])
    >>> c.strategy, c.offset_seeds, c.label("final-row mean")
    ('replay', (3, 4, 5), 'replay against itself: M2I, seeds 3–5 − seeds 0–2 (final-row mean)')
    >>> c.orders({"M2I": ["a", "b"], "I2M": ["b", "a"]})
    {'M2I': ['a', 'b']}
    """

    strategy: str
    order: str
    seeds: tuple
    offset_seeds: tuple

    @classmethod
    def plan(cls, strategies, seeds, primary=PRIMARY, order: str = "M2I") -> "NullControl":
        """The control of a run of ``strategies`` on ``seeds`` (:func:`control_strategy`)."""
        seeds = tuple(int(s) for s in seeds)
        if order not in ("M2I", "I2M"):
            raise ValueError(f"order must be 'M2I' or 'I2M', got {order!r}")
        shift = len(seeds)
        return cls(control_strategy(strategies, primary), order, seeds, tuple(s + shift for s in seeds))

    def orders(self, orders: dict) -> dict:
        """The one order the control runs, from the curriculum's ``{"M2I": ..., "I2M": ...}``."""
        return {self.order: orders[self.order]}

    def label(self, metric: str) -> str:
        """The comparison's name in tables and text."""
        return (f"{self.strategy} against itself: {self.order}, {seed_span(self.offset_seeds)} − {seed_span(self.seeds)} "
                f"({metric})")

    def record(self) -> dict:
        """For ``results.json``."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


@dataclass(frozen=True)
class Check:
    """A pipeline check: a property that holds by construction when the pipeline works.

    Attributes
    ----------
    name : str
    holds : bool
    detail : str
        What was compared and what came out.
    """

    name: str
    holds: bool
    detail: str

    def to_dict(self) -> dict:
        return asdict(self)


def pipeline_checks(R: dict, c: Curriculum, strategies, *, tol: float = 1e-12) -> list:
    """The notebook's pipeline checks over every seed's accuracy matrices.

    Parameters
    ----------
    R : dict seed -> order -> strategy -> ndarray (T, T)
        :func:`clkit.curriculum.streams.run_streams` on the curriculum's tasks.
    c : Curriculum
    strategies : list of str
    tol : float
        Rounding allowed in the BWT identity (a sum in two orders).

    Returns
    -------
    list of Check
        MSTE's final row the same under both orders, task by task and seed by seed (when MSTE
        runs); the weighting reference's final-row mean the same under both orders on every
        seed; the authors' BWT equal to ``2 / (T (T - 1))`` times the summed final-row drops on
        every matrix.

    Examples
    --------
    >>> from clkit.curriculum.difficulty import choose_curriculum
    >>> c = choose_curriculum({0: {"a": 0.9, "b": 0.5}, 1: {"a": 0.92, "b": 0.52}})
    >>> R = {s: {"M2I": {"mste": [[0.9, 0], [0.9, 0.5]]}, "I2M": {"mste": [[0.5, 0], [0.5, 0.9]]}} for s in (0, 1)}
    >>> [(k.name.split(":")[0], k.holds) for k in pipeline_checks(R, c, ["mste"])]
    [('MSTE', True), ('weighting reference', True), ('BWT (code)', True)]
    """
    out = []
    seeds = list(R)
    if any(k in NULL_LEARNERS for k in strategies):
        k = next(k for k in strategies if k in NULL_LEARNERS)
        worst, where = 0.0, ""
        for s in seeds:
            last = {o: np.asarray(R[s][o][k], dtype=float)[-1] for o in c.orders}
            for n in c.tasks:
                d = abs(last["M2I"][c.m2i.index(n)] - last["I2M"][c.i2m.index(n)])
                if d > worst:
                    worst, where = float(d), f" (seed {s}, {n})"
        out.append(Check("MSTE: the same final-row accuracy on every task under M2I and I2M", worst == 0.0,
                         f"largest |M2I − I2M| over {len(c.tasks)} tasks x {len(seeds)} seeds: {worst:.3g}{where}"))
    gaps = [weighting_reference(c.accuracy[s], c.m2i)["final_acc"] - weighting_reference(c.accuracy[s], c.i2m)[
        "final_acc"] for s in seeds]
    worst = float(np.max(np.abs(gaps))) if gaps else 0.0
    out.append(Check("weighting reference: the same final-row mean under M2I and I2M", worst == 0.0,
                     f"largest |M2I − I2M| over {len(seeds)} seeds: {worst:.3g}"))
    worst, count = 0.0, 0
    for s in seeds:
        for o in R[s]:
            for k in strategies:
                b = bwt_identity(R[s][o][k])
                worst, count = max(worst, abs(b["BWT_code"] - b["identity"])), count + 1
    out.append(Check("BWT (code): equal to 2/(T(T−1)) · Σ_(j<T) (R_Tj − R_jj)", worst <= tol,
                     f"largest difference over {count} matrices: {worst:.3g} (rounding allowed: {tol:g})"))
    return out


def checks_hold(checks) -> tuple:
    """Whether every pipeline check holds, and the failing ones.

    Examples
    --------
    >>> checks_hold([Check("a", True, ""), Check("b", False, "off by 1")])
    (False, [Check(name='b', holds=False, detail='off by 1')])
    """
    failed = [k for k in checks if not k.holds]
    return (not failed, failed)
