"""The ground truth of the enumerable experiment: every sequence (exact) or a uniform sample.

EDGE is judged against the true accuracy distribution over all class sequences
``Omega``. Training every sequence (``mode="exact"``) costs ``|Omega|`` trainings (2,520 at
8 classes / 4 tasks). ``mode="sample"`` trains a uniform sample of ``samples`` sequences
(without replacement) -- the *population* that stands for ``Omega`` in every
distribution statistic (mean, std, percentiles, JSD / W1, R, eta^2) -- plus every
sequence an estimator evaluates (EDGE's hard / easy sequences and their S-tie-mates, the
RS draws, each similarity source's extremes), which are *looked up* but never enter the
population (they are not uniform). Because the batched learners key all randomness by
the sequence's prefix (:mod:`clkit.edge.prefix`), a sequence gets exactly the accuracy
it gets in the exact mode, whenever and among whichever others it is trained: a sampled
truth differs from the exact one only by which sequences form the population.

Sampling error (reported beside every number computed from a sampled population):

* a percentile ``p`` (0-100) of a value among ``n`` sampled sequences has standard error
  ``sqrt(p (100 - p) / n * (|Omega| - n) / (|Omega| - 1))`` (binomial with the finite-
  population correction; :func:`percentile_se`) and a 95 % Wilson interval
  (:func:`percentile_interval`), which, unlike ``p ± 2 se``, is not of width 0 when the
  sample shows 0 or 100;
* a distance (JSD, W1) to the sampled truth gets a bootstrap standard error and bias: the
  population is resampled with replacement ``num_boot`` times (:func:`bootstrap`).

Measured against the exact truth of the same setting (8 classes / 4 tasks, n_train 500,
256 of 2,520 sequences sampled; ``--params full`` vs ``--params sampled``): the sampled
tie-averaged percentiles of EDGE's hard / easy sequences lie within 1.1 reported standard
errors of the exact ones (10 of 10), W1 within 1.1-1.9 standard errors. The JSD does not:
it runs higher by 0.00-0.04 bits (up to 3 standard errors), because its bins span the
*sample's* accuracy range, narrower than the true range, and a histogram of 256 values is
noisier; the bootstrap bias (``jsd_bias``) captures only the histogram-noise part
(about 0.008). Compare sampled JSDs with each other, not with exact ones.

The object keeps its arrays over ``Omega`` (the enumerated sequences, in
:func:`~clkit.edge.combinatorics.enumerate_sequences` order) with ``NaN`` where a
sequence has not been trained, so code that looks a sequence up by its position in
``Omega`` works unchanged in both modes.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_choice, check_int

__all__ = ["TRUTH_MODES", "GroundTruth", "sample_population", "percentile_se", "percentile_interval", "bootstrap",
           "resolve_truth"]

#: ground-truth modes of notebook 02 (parameter ``truth``)
TRUTH_MODES = ("exact", "sample")


def percentile_se(pct, n: int, population_size: int | None = None) -> float:
    """Standard error (percentage points) of a percentile estimated from ``n`` uniform draws.

    ``sqrt(p (100 - p) / n)``, times the finite-population correction
    ``sqrt((N - n) / (N - 1))`` when the draws are without replacement from ``N``
    (``population_size``); 0 when the sample is the whole population.

    Examples
    --------
    >>> round(percentile_se(50.0, 100), 3)
    5.0
    >>> percentile_se(50.0, 90, population_size=90)
    0.0
    """
    n = check_int("n", n, low=1)
    p = float(np.clip(pct, 0.0, 100.0))
    se = math.sqrt(p * (100.0 - p) / n)
    if population_size is not None:
        big = check_int("population_size", population_size, low=n)
        se *= math.sqrt((big - n) / (big - 1)) if big > 1 else 0.0
    return float(se)


def percentile_interval(pct, n: int, population_size: int | None = None,
                        confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval (percentage points) of a percentile estimated from ``n`` uniform draws.

    The percentile is a proportion of the sample; its Wilson interval stays honest at the
    boundary, where the standard error of :func:`percentile_se` is 0 (a sample in which no
    sequence lies below the hard one reads "0.0 ± 0.0", yet the population may hold some).
    Without replacement from ``N`` (``population_size``) the sample counts as
    ``n (N - 1) / (N - n)`` draws (the finite-population correction); the whole population
    gives the point itself.

    Examples
    --------
    >>> [round(x, 1) for x in percentile_interval(0.0, 256, 2520)]
    [0.0, 1.3]
    >>> percentile_interval(37.5, 90, population_size=90)
    (37.5, 37.5)
    """
    from scipy.stats import norm

    n = check_int("n", n, low=1)
    p = float(np.clip(pct, 0.0, 100.0)) / 100.0
    if population_size is not None:
        big = check_int("population_size", population_size, low=n)
        if big == n:
            return float(np.clip(pct, 0.0, 100.0)), float(np.clip(pct, 0.0, 100.0))
        n_eff = n * (big - 1) / (big - n)
    else:
        n_eff = float(n)
    z = float(norm.ppf(0.5 + confidence / 2))
    denom = 1 + z * z / n_eff
    centre = (p + z * z / (2 * n_eff)) / denom
    half = z * math.sqrt(p * (1 - p) / n_eff + z * z / (4 * n_eff * n_eff)) / denom
    return float(100.0 * max(0.0, centre - half)), float(100.0 * min(1.0, centre + half))


def bootstrap(statistic, values, *, num_boot: int = 200, seed: int = 0) -> dict:
    """Bootstrap standard error and bias of ``statistic(values)`` over resamples of ``values``.

    Parameters
    ----------
    statistic : callable
        ``statistic(resampled values) -> float or array``.
    values : array_like, shape (n,)
        The sampled population.
    num_boot : int
    seed : int

    Returns
    -------
    dict
        ``se``: the standard deviation over resamples; ``bias``: their mean minus
        ``statistic(values)`` (the bootstrap estimate of the plug-in bias; e.g. a JSD to
        the histogram of a sample is biased upward, and ``estimate - bias`` corrects it to
        first order). Both have the shape of ``statistic``'s output.

    Examples
    --------
    >>> v = np.arange(100.0)
    >>> out = bootstrap(np.mean, v, num_boot=2000, seed=0)
    >>> float(out["se"]) // 1, abs(float(out["bias"])) < 0.2      # sd / sqrt(n) = 2.9; the mean is unbiased
    (2.0, True)
    """
    v = np.asarray(values, dtype=float)
    num_boot = check_int("num_boot", num_boot, low=2)
    rng = np.random.default_rng(seed)
    reps = np.array([np.asarray(statistic(v[rng.integers(0, len(v), len(v))]), dtype=float)
                     for _ in range(num_boot)])
    return {"se": reps.std(axis=0, ddof=1), "bias": reps.mean(axis=0) - np.asarray(statistic(v), dtype=float)}


def sample_population(num_sequences: int, samples: int, seed: int = 0) -> np.ndarray:
    """Positions (sorted) of the uniform sample a sampled :class:`GroundTruth` trains: ``samples`` of
    ``range(num_sequences)`` without replacement, from a local generator seeded with ``seed``.

    Examples
    --------
    >>> sample_population(90, 5, seed=0).tolist()
    [24, 27, 44, 55, 73]
    """
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(num_sequences, size=samples, replace=False))


class GroundTruth:
    """True accuracies of class sequences per learner: all of ``Omega``, or a uniform sample.

    Parameters
    ----------
    train : callable
        ``train(sequences (P, K, M)) -> {learner: accuracies (P,)}`` (percent); it must
        give a sequence the same accuracy whatever else it is trained with (the batched
        learners do).
    sequences : array_like of int, shape (L, K, M)
        ``Omega``: every class sequence (:func:`~clkit.edge.combinatorics.enumerate_sequences`).
    mode : {"exact", "sample"}
    samples : int
        Size of the uniform sample (``mode="sample"``; at most ``L``; ``L`` is the exact
        truth drawn the long way).
    seed : int
        Seed of the sample (a local generator).
    extra : array_like, shape (P, K, M), optional
        Sequences to train beside the population (looked up, never in the population).

    Attributes
    ----------
    sequences : ndarray (L, K, M)
    values : dict
        ``{learner: (L,)}`` accuracies, ``NaN`` where a sequence was not trained.
    population : ndarray of int, shape (n,)
        Positions of the population (all ``L`` when exact; the sample, sorted, otherwise).
    mode, samples

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> seqs = enumerate_sequences(6, 3)                       # 90 sequences
    >>> train = lambda s: {"first": np.asarray(s)[:, 0, 0].astype(float)}
    >>> gt = GroundTruth(train, seqs, mode="sample", samples=10, seed=0)
    >>> len(gt.population), int(gt.evaluated.sum())
    (10, 10)
    >>> _ = gt.require(positions=[0, 1, 2]); len(gt.population), int(gt.evaluated.sum()) >= 11
    (10, True)
    """

    def __init__(self, train, sequences, *, mode: str = "exact", samples: int = 256, seed: int = 0, extra=None):
        if not callable(train):
            raise TypeError(f"train must be a callable sequences -> {{learner: accuracies}}, got {train!r}")
        self.mode = check_choice("truth", mode, TRUTH_MODES)
        self.sequences = np.asarray(sequences)
        if self.sequences.ndim != 3 or len(self.sequences) < 2:
            raise ValueError(f"sequences must have shape (L, K, M) with L >= 2, got {self.sequences.shape}")
        L = len(self.sequences)
        self._train = train
        self.values: dict = {}
        #: final accuracies (after the last task) where ``train``'s result carries them (its ``final`` attribute)
        self.final: dict = {}
        if self.mode == "exact":
            self.samples = L
            self.population = np.arange(L)
        else:
            self.samples = check_int("truth_samples", samples, low=10, high=L)
            self.population = sample_population(L, self.samples, seed)
        todo = self.population if extra is None else np.union1d(self.population, self.index(extra))
        self._fill(todo)

    # -- bookkeeping -------------------------------------------------------------------
    @property
    def exact(self) -> bool:
        """True when the population is all of ``Omega``."""
        return self.samples == len(self.sequences)

    @property
    def evaluated(self) -> np.ndarray:
        """Boolean mask (L,) of the sequences trained so far."""
        first = next(iter(self.values.values()))
        return np.isfinite(first)

    def index(self, sequences) -> np.ndarray:
        """Positions of ``sequences`` (P, K, M) in ``Omega`` (order inside a task ignored)."""
        from .experiment import sequence_index

        return sequence_index(self.sequences, np.asarray(sequences).reshape(-1, *self.sequences.shape[1:]))

    def _fill(self, idx):
        idx = np.unique(np.asarray(idx, dtype=np.int64))
        if self.values:
            idx = idx[~self.evaluated[idx]]
        if len(idx) == 0:
            return
        out = self._train(self.sequences[idx])
        for name, acc in out.items():
            acc = np.asarray(acc, dtype=float)
            if acc.shape != (len(idx),):
                raise ValueError(f"train returned {acc.shape} accuracies for learner {name!r}, expected ({len(idx)},)")
            if name not in self.values:
                self.values[name] = np.full(len(self.sequences), np.nan)
            self.values[name][idx] = acc
        for name, acc in (getattr(out, "final", None) or {}).items():
            self.final.setdefault(name, np.full(len(self.sequences), np.nan))[idx] = np.asarray(acc, dtype=float)

    def require(self, sequences=None, *, positions=None) -> np.ndarray:
        """Train whichever of ``sequences`` (or ``positions`` in ``Omega``) are not yet trained.

        Returns their positions in ``Omega``. A no-op in exact mode.
        """
        idx = self.index(sequences) if sequences is not None else np.asarray(positions, dtype=np.int64)
        self._fill(idx)
        return idx

    def population_values(self) -> dict:
        """``{learner: accuracies of the population (n,)}`` -- what stands for ``Omega``."""
        return {name: v[self.population] for name, v in self.values.items()}

    def population_final(self) -> dict:
        """``{learner: final accuracies of the population (n,)}`` (accuracy on every class after the last
        task, what the EDGE release's trainer returns), for the learners whose training reported them."""
        return {name: v[self.population] for name, v in self.final.items()}

    def describe(self) -> str:
        """One sentence: which truth this is and what it cost."""
        L = len(self.sequences)
        if self.exact:
            return f"exact ground truth: all {L:,} sequences trained"
        return (f"sampled ground truth: a uniform sample of {self.samples:,} of the {L:,} sequences "
                f"(seeded, without replacement) stands for all of them; {int(self.evaluated.sum()):,} "
                f"sequences trained in all (the sample plus every sequence an estimator evaluates); "
                f"percentiles and distances carry their sampling error")

    def log(self) -> dict:
        """What results.json records about the truth."""
        return {"truth_mode": self.mode, "truth_population": int(len(self.population)),
                "truth_trained": int(self.evaluated.sum()), "num_sequences_omega": int(len(self.sequences))}


def resolve_truth(truth, all_sequences, needed=None):
    """``(values, population)`` of a truth given as a dict or a :class:`GroundTruth`.

    A dict ``{learner: (L,)}`` is an exact truth over ``all_sequences`` (population: all).
    A :class:`GroundTruth` first trains the ``needed`` positions (in ``Omega``), then returns
    its arrays (``NaN`` where untrained) and its population.
    """
    if isinstance(truth, GroundTruth):
        if len(truth.sequences) != len(all_sequences):
            raise ValueError(f"all_sequences has {len(all_sequences)} sequences but the ground truth "
                             f"covers {len(truth.sequences)}: pass the truth's own Omega")
        if needed is not None:
            truth.require(positions=np.asarray(needed, dtype=np.int64).ravel())
        return truth.values, truth.population
    if not isinstance(truth, dict):
        raise TypeError(f"truth must be a dict {{learner: accuracies}} or a GroundTruth, got {type(truth).__name__}")
    return truth, np.arange(len(all_sequences))
