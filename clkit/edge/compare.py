"""Which class similarity makes EDGE work? Sources compared on the enumerable setting.

On a setting whose sequences can all be trained (e.g. 6 classes in 3 tasks: 90
sequences) the true accuracy of every sequence is known, so each similarity source
can be judged by what EDGE needs from it:

* ``r``: Pearson R between the (generalised) score of a sequence and its accuracy,
  over all sequences (the paper's Fig. 2c premise: accuracy rises with S(O));
* ``hard_pct`` / ``easy_pct``: the accuracy percentile (mid-rank, 0-100) of the
  source's hard and easy sequences among all sequences, averaged over the sequence's
  S-tie (EDGE cannot tell tie-mates apart) -- EDGE needs them near 0 and 100;
* EDGE vs RS: JSD and W1 of the Gaussian estimated from hard + ``edge_num_random``
  random + easy, against RS's three random sequences, each over ``num_draws``
  random draws (the random sequences change from draw to draw, the extremes do
  not; EDGE's random sequences are RS's first ones, so the draw pairs them). EDGE's
  distances are averaged over every (hard, easy) pair of the S-ties of its sequences
  (:func:`~clkit.edge.structure.tie_pairs`), so no number depends on which tie member
  the search returned. Who is closer is decided by :mod:`clkit.stats`: the paired
  t-test over the draws, Holm-adjusted over every (source, learner, metric) of one call
  (one exploratory family); ``"tie"`` when the difference is not significant.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_int, check_real, check_type
from .estimation import similarity_correlation
from .experiment import sequence_index
from .sequences import check_similarity, easy_sequence, generalised_scores, hard_sequence

__all__ = ["accuracy_percentile", "compare_sources", "distances_many", "gaussian_distances", "paired_draws",
           "stratified_draws", "stratified_mean"]


def accuracy_percentile(acc, value) -> float:
    """Mid-rank percentile of ``value`` among the accuracies ``acc`` (0-100).

    Examples
    --------
    >>> accuracy_percentile([1, 2, 3, 4], 1)
    12.5
    >>> accuracy_percentile([1, 2, 3, 4], 4)
    87.5
    """
    from .structure import midrank_percentiles

    return float(midrank_percentiles(acc, value)[0])


#: rows of the W1 integrand computed at once (about 4 MB with 4,000 quantiles)
_W1_ROWS = 128


def distances_many(true_values, samples, *, num_bins: int = 10, quantiles: int = 4000,
                   estimator: str = "gaussian", population_size: int | None = None) -> dict:
    """JSD / W1 of many Gaussian estimates at once (each row of ``samples`` is one protocol run).

    The same quantities as :func:`clkit.edge.estimation.distribution_distances` applied to
    ``gaussian_estimate(row)`` (tested equal), vectorised over rows: the JSD on
    ``num_bins`` bins over the true range plus two open tails, and the exact W1 between the
    truth and ``quantiles`` Gaussian quantiles (integrated over the merged breakpoints of the
    two quantile functions). ``estimator="range"`` takes each row's Gaussian from
    :func:`~clkit.edge.estimation.range_estimate` instead (its lowest and highest values read
    as the extremes of ``population_size`` values, default ``len(true_values)``).

    Returns ``{"jsd": (D,), "wasserstein": (D,)}``.
    """
    from .estimation import expected_extreme_z

    X = np.atleast_2d(np.asarray(samples, dtype=float))
    if estimator == "gaussian":
        mean, std = X.mean(axis=1), X.std(axis=1)
    elif estimator == "range":
        z = expected_extreme_z(len(np.ravel(true_values)) if population_size is None else population_size)
        mean, std = X.mean(axis=1), (X.max(axis=1) - X.min(axis=1)) / (2 * z)
    else:
        raise ValueError(f"estimator must be 'gaussian' or 'range', got {estimator!r}")
    return gaussian_distances(true_values, mean, std, num_bins=num_bins, quantiles=quantiles)


def gaussian_distances(true_values, mean, std, *, num_bins: int = 10, quantiles: int = 4000) -> dict:
    """JSD / W1 between the truth and the Gaussians ``N(mean[d], std[d]^2)``, vectorised over ``d``.

    See :func:`distances_many` (which calls it with each row's estimate).

    Examples
    --------
    >>> d = gaussian_distances(np.arange(100.0), [49.5, 80.0], [28.9, 1.0])   # uniform truth
    >>> d["wasserstein"].round(1).tolist(), d["jsd"].round(2).tolist()
    ([4.4, 33.8], [0.07, 0.63])
    """
    from scipy.stats import norm

    from .estimation import _std_normal_quantiles

    v = np.sort(np.asarray(true_values, dtype=float))
    mean, std = np.atleast_1d(np.asarray(mean, dtype=float)), np.atleast_1d(np.asarray(std, dtype=float))
    lo, hi = v[0], v[-1]
    if hi - lo <= 0:
        pad = 1e-9 * max(1.0, abs(lo))
        lo, hi = lo - pad, hi + pad
    edges = np.linspace(lo, hi, num_bins + 1)
    inner = np.histogram(v, bins=edges)[0].astype(float)
    p = np.concatenate([[(v < edges[0]).sum()], inner, [(v > edges[-1]).sum()]]) / len(v)
    safe = np.where(std > 0, std, 1.0)
    cdf = norm.cdf((edges[None, :] - mean[:, None]) / safe[:, None])
    q = np.concatenate([cdf[:, :1], np.diff(cdf, axis=1), 1.0 - cdf[:, -1:]], axis=1)
    for d in np.flatnonzero(std == 0):                  # point mass at the mean
        q[d] = 0.0
        x = mean[d]
        q[d, 0 if x < edges[0] else (len(edges) if x > edges[-1] else
                                     1 + min(np.searchsorted(edges, x, side="right") - 1, num_bins - 1))] = 1.0
    q = q / q.sum(axis=1, keepdims=True)
    m = (p[None, :] + q) / 2

    def kl(a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(a > 0, a * np.log2(a / b), 0.0)
        return t.sum(axis=1)

    jsd = 0.5 * kl(np.broadcast_to(p, q.shape), m) + 0.5 * kl(q, m)
    z = _std_normal_quantiles(quantiles)
    n = len(v)
    br = np.union1d(np.arange(n + 1) / n, np.arange(quantiles + 1) / quantiles)
    mid, width = (br[:-1] + br[1:]) / 2, np.diff(br)
    iu = np.minimum((mid * n).astype(int), n - 1)
    iv = np.minimum((mid * quantiles).astype(int), quantiles - 1)
    zi, vu = z[iv], v[iu]
    w1 = np.empty(len(mean))
    for s in range(0, len(mean), _W1_ROWS):   # rows in blocks that stay in cache; each row's sum is unchanged
        est = std[s:s + _W1_ROWS, None] * zi[None, :]
        est += mean[s:s + _W1_ROWS, None]
        np.subtract(vu[None, :], est, out=est)
        np.abs(est, out=est)
        est *= width[None, :]
        w1[s:s + _W1_ROWS] = est.sum(axis=1)
    return {"jsd": np.maximum(jsd, 0.0), "wasserstein": w1}


def paired_draws(acc, fixed_idx, num_random: int, num_draws: int, seed: int, num_bins: int = 10,
                 population=None, estimator: str = "gaussian") -> dict:
    """RS and a protocol with ``fixed_idx`` sequences over the *same* random draws.

    Each draw lists ``max(3, num_random) + F`` distinct random sequences (``F`` fixed ones;
    uniform from ``population``, a local generator; the same for any ``fixed_idx``): RS
    takes the first three, the protocol the fixed ones plus the first ``num_random`` of the
    list that are not among them (common random numbers: the draw is the pairing unit of
    :func:`clkit.stats.paired`, and RS's draws are identical for every source).

    Parameters
    ----------
    fixed_idx : array_like of int, shape (F,) or (P, F)
        The protocol's fixed sequences, or ``P`` alternatives for them (e.g. every (hard,
        easy) pair of their S-ties, :func:`~clkit.edge.structure.tie_pairs`): the protocol's
        distance in a draw is then the mean over the alternatives.
    estimator : {"gaussian", "range"}
        The protocol's estimate (:func:`distances_many`); RS always takes the paper's Gaussian.

    Returns ``{"rs": {"jsd", "wasserstein"}, "protocol": {...}}``, arrays of shape
    (num_draws,).
    """
    acc = np.asarray(acc, dtype=float)
    pop = np.arange(len(acc)) if population is None else np.asarray(population, dtype=np.int64)
    rng = np.random.default_rng(seed)
    fixed = np.asarray(fixed_idx, dtype=np.int64)
    alts = fixed.reshape(1, -1) if fixed.ndim <= 1 else fixed
    F = alts.shape[1]
    m = min(len(pop), max(3, num_random) + F)
    draws = np.array([rng.choice(pop, size=m, replace=False) for _ in range(num_draws)])
    true = acc[pop]
    proto = np.array([[*fixed, *[i for i in row if i not in fixed][:num_random]]
                      for fixed in (alt.tolist() for alt in alts) for row in draws.tolist()])
    d = distances_many(true, acc[proto], num_bins=num_bins, estimator=estimator)   # one call for every alternative
    out = {k: v.reshape(len(alts), num_draws).mean(axis=0) for k, v in d.items()}
    return {"rs": distances_many(true, acc[draws[:, :3]], num_bins=num_bins), "protocol": out}


def compare_sources(sims: dict, truth, all_sequences, num_tasks: int, *, intra_weight: float = 0.0,
                    edge_num_random: int = 1, num_draws: int = 30, num_bins: int = 10, seed: int = 0,
                    family: str = "sources: EDGE − RS per source", return_verdicts: bool = False):
    """Judge every similarity source on every learner (see the module docstring).

    Parameters
    ----------
    sims : dict
        ``{source label: (N, N) similarity}``.
    truth : dict or clkit.edge.truth.GroundTruth
        ``{learner: accuracies (L,)}`` over ``all_sequences`` (L, K, M) (exact), or a
        ground truth (exact or sampled) over them: statistics are then taken over its
        population and each source's hard / easy sequences (with their S-ties) are trained
        on demand.
    num_tasks : int
    intra_weight : float
        Score and search with ``S + intra_weight * I`` (0: the paper's S).
    edge_num_random : int
        Random sequences in EDGE's medium case (the paper: 1).
    num_draws : int
        Random draws for the EDGE / RS distances (same generator seed for every
        source, so RS's draws are identical across sources).
    seed : int
    family : str
        Name of the Holm family of the call's verdicts (every one exploratory: which source
        makes EDGE work is a question beside the paper's claim, not the claim itself).
    return_verdicts : bool
        Also return the verdicts (:class:`clkit.stats.Verdict`, with their per-draw values).

    Returns
    -------
    rows : list of dict
        One row per (source, learner): ``source``, ``learner``, ``r``, ``r_p``,
        ``hard_pct``, ``easy_pct`` (averaged over the sequence's S-tie, since EDGE cannot
        tell tie-mates apart; :func:`~clkit.edge.structure.tie_percentiles`) with
        ``hard_pct_min`` / ``hard_pct_max`` / ``easy_pct_min`` / ``easy_pct_max`` (range
        over the tie), ``pct_se`` (sampling error of a percentile; 0 for an exact truth),
        ``hard_pct_low`` / ``hard_pct_high`` / ``easy_pct_low`` / ``easy_pct_high`` (95 %
        Wilson intervals, :func:`~clkit.edge.truth.percentile_interval`), ``hard_acc``,
        ``easy_acc`` (averaged over the S-tie of the sequence the search returned),
        ``tie_pairs`` (the (hard, easy) pairs EDGE's distances are averaged over,
        :func:`~clkit.edge.structure.tie_pairs`: none of these numbers depends on which tie
        member the search returned), ``edge_jsd`` / ``rs_jsd`` / ``edge_w1`` / ``rs_w1`` (means
        over draws), ``rs_jsd_sd`` / ``rs_w1_sd`` (RS's seed spread), ``jsd_winner`` /
        ``w1_winner`` (``"EDGE"`` / ``"RS"`` / ``"tie"`` by :mod:`clkit.stats`, see the module
        docstring)
        and ``jsd_p`` / ``w1_p`` (Holm-adjusted p-values).
    verdicts : list of Verdict
        With ``return_verdicts``: source × learner × metric, in the order of ``rows``.
    """
    from .structure import tie_members, tie_pairs, tie_percentiles
    from .truth import GroundTruth, resolve_truth

    check_type("sims", sims, dict, "a dict {source: similarity matrix}")
    check_type("truth", truth, (dict, GroundTruth), "a dict {learner: accuracies} or a GroundTruth")
    all_sequences = np.asarray(all_sequences)
    values, pop = resolve_truth(truth, all_sequences)
    if not sims or not values:
        raise ValueError("sims and truth must each hold at least one entry")
    w = check_real("intra_weight", intra_weight)
    edge_num_random = check_int("edge_num_random", edge_num_random, low=1, high=len(pop) - 2)
    num_draws = check_int("num_draws", num_draws, low=2)
    for learner, acc in values.items():
        if len(acc) != len(all_sequences):
            raise ValueError(f"truth[{learner!r}] has {len(acc)} accuracies for {len(all_sequences)} sequences")
    from .. import stats

    rows, tests = [], []
    for label, sim in sims.items():
        S = check_similarity(sim, f"sims[{label!r}]")
        scores = generalised_scores(S, all_sequences, w)
        hard = hard_sequence(S, num_tasks, intra_weight=w)
        easy = easy_sequence(S, num_tasks, intra_weight=w)
        h, e = sequence_index(all_sequences, np.stack([hard, easy]))
        pairs = tie_pairs(scores, h, e)
        needed = np.union1d(tie_members(scores, h), tie_members(scores, e))
        values, pop = resolve_truth(truth, all_sequences, needed)
        for name, acc in values.items():
            acc = np.asarray(acc, dtype=float)
            corr = similarity_correlation(scores[pop], acc[pop])
            pd_ = paired_draws(acc, pairs, edge_num_random, num_draws, seed, num_bins, population=pop)
            ed, rs = pd_["protocol"], pd_["rs"]
            th = tie_percentiles(acc, scores, int(h), population=pop)
            te = tie_percentiles(acc, scores, int(e), population=pop)
            rows.append({
                "source": label, "learner": name, "r": corr["r"], "r_p": corr["p"],
                "hard_pct": th["pct"], "easy_pct": te["pct"],
                "hard_pct_min": th["pct_min"], "hard_pct_max": th["pct_max"],
                "easy_pct_min": te["pct_min"], "easy_pct_max": te["pct_max"],
                "pct_se": max(th["pct_se"], te["pct_se"]),
                "hard_pct_low": th["pct_low"], "hard_pct_high": th["pct_high"],
                "easy_pct_low": te["pct_low"], "easy_pct_high": te["pct_high"],
                "hard_acc": float(acc[np.unique(pairs[:, 0])].mean()),
                "easy_acc": float(acc[np.unique(pairs[:, 1])].mean()), "tie_pairs": int(len(pairs)),
                "edge_jsd": float(ed["jsd"].mean()), "rs_jsd": float(rs["jsd"].mean()),
                "rs_jsd_sd": float(rs["jsd"].std()),
                "edge_w1": float(ed["wasserstein"].mean()), "rs_w1": float(rs["wasserstein"].mean()),
                "rs_w1_sd": float(rs["wasserstein"].std()),
            })
            for metric, key in (("jsd", "jsd"), ("w1", "wasserstein")):
                tests.append((len(rows) - 1, metric, stats.paired(
                    ed[key], rs[key], comparison=f"{label} / {name}: {metric.upper()} EDGE − RS",
                    higher="RS closer", lower="EDGE closer", scope="exploratory")))
    adjusted = stats.holm([v for _, _, v in tests], name=family)
    for (i, metric, _), v in zip(tests, adjusted):
        rows[i][f"{metric}_winner"] = ("tie" if not v.significant else "EDGE" if v.effect < 0 else "RS")
        rows[i][f"{metric}_p"] = float(v.p)
    return (rows, adjusted) if return_verdicts else rows


def _strata(scores, num_strata: int):
    """Positions sorted by score, equal scores (within the tie tolerance, in position order) kept in
    that order whatever their last bits, then cut into ``num_strata`` near-equal strata."""
    from .structure import score_classes

    order = np.argsort(score_classes(scores), kind="stable")
    return np.array_split(order, num_strata)


def stratified_draws(scores, num_strata: int, num_draws: int, seed: int = 0, exclude=()) -> np.ndarray:
    """RS stratified by S(O) quantiles: one uniform sequence from each of ``num_strata`` strata.

    The sequences are sorted by ``scores`` (ties, within the tolerance of
    :func:`~clkit.edge.structure.score_classes`, in position order, so the strata do not
    depend on float rounding) and cut into ``num_strata`` strata of (near) equal size
    (``np.array_split``); each draw takes one sequence uniformly from every
    stratum (beyond the paper: it uses the similarity without EDGE's three-point
    Gaussian). Returns indices of shape ``(num_draws, num_strata)``.

    Examples
    --------
    >>> d = stratified_draws([0.1, 0.5, 0.2, 0.9, 0.3, 0.7], 3, 2, seed=0)
    >>> d.shape, sorted(set(d[0]) & {0, 2}) != []      # one of the two lowest scores
    ((2, 3), True)
    """
    num_strata = check_int("num_strata", num_strata, low=1)
    num_draws = check_int("num_draws", num_draws, low=1)
    ex = set(int(i) for i in exclude)
    strata = [np.array([i for i in s if int(i) not in ex]) for s in _strata(scores, num_strata)]
    if any(len(s) == 0 for s in strata):
        raise ValueError(f"num_strata={num_strata} leaves an empty stratum among {len(scores)} sequences")
    rng = np.random.default_rng(seed)
    return np.array([[int(rng.choice(s)) for s in strata] for _ in range(num_draws)], dtype=np.int64)


def stratified_mean(values, scores, draws) -> np.ndarray:
    """The stratified estimate of the mean accuracy for each draw: stratum means weighted by size.

    Unbiased for the mean of ``values`` over all sequences (each stratum's draw is uniform
    in it and weighted by its share), whatever the relation between S and accuracy.

    Examples
    --------
    >>> v, s = np.arange(6.0), np.arange(6.0)
    >>> stratified_mean(v, s, [[0, 2, 4], [1, 3, 5]]).tolist()
    [2.0, 3.0]
    """
    draws = np.asarray(draws, dtype=np.int64)
    sizes = np.array([len(s) for s in _strata(scores, draws.shape[1])], dtype=float)
    return (np.asarray(values, dtype=float)[draws] * (sizes / sizes.sum())).sum(axis=1)

