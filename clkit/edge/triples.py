"""RS and EDGE over every draw: expected distances and P(EDGE closer), not one lucky seed.

RS evaluates three random sequences; EDGE evaluates its hard sequence, one random
sequence and its easy sequence. Both are *random procedures*: what a reader wants is the
distribution of their distance to the truth over the draws, not one draw. On an
enumerable setting it can be computed exactly:

* RS over **every** triple of distinct sequences of the population when there are at most
  ``max_triples`` (6 classes / 3 tasks: C(90, 3) = 117,480), else over ``num_samples``
  uniformly drawn triples (:func:`rs_triples`);
* EDGE over **every** choice of its random sequence (the population minus hard and easy);
* the **oracle**: the same three-point protocol handed the population's true hardest and
  easiest sequences -- what a perfect similarity could give this estimator;
* the same two protocols read by an estimator that takes the lowest and highest of the three
  accuracies as the population's extremes (``EDGE-range``, ``oracle-range``;
  :func:`~clkit.edge.estimation.range_estimate`, beyond the paper): what the extremes could
  give an estimator built for them.

For each, the JSD and W1 of the three-point Gaussian to the truth
(:func:`~clkit.edge.compare.distances_many`); reported are the expected distances, the
expected difference EDGE - RS, and ``P(EDGE closer)`` = P(W1 of EDGE with a uniform random
member < W1 of RS with an independent uniform triple), ties counting one half
(:func:`prob_less`). EDGE's draws run over every (hard, easy) pair of its S-ties, so no
number depends on which tie member the search returned. The oracle's rows answer whether
an estimator *can* approximate the distribution from three sequences with the true
extremes; EDGE's rows whether the similarity's extremes are good enough for it.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_int

__all__ = ["rs_triples", "prob_less", "distances_chunked", "protocol_distributions"]


def rs_triples(n: int, *, max_triples: int = 200_000, num_samples: int = 10_000, seed: int = 0):
    """Every 3-subset of ``range(n)`` when there are at most ``max_triples``, else a uniform sample.

    Returns ``(triples (T, 3) int, exact: bool)``; sampled triples hold 3 distinct values
    (uniform over 3-subsets: three draws without replacement, a local generator).

    Examples
    --------
    >>> t, exact = rs_triples(5)
    >>> t.shape, exact, t[0].tolist()
    ((10, 3), True, [0, 1, 2])
    >>> t, exact = rs_triples(100, max_triples=1000, num_samples=50)
    >>> t.shape, exact, bool((np.diff(np.sort(t, axis=1), axis=1) > 0).all())
    ((50, 3), False, True)
    """
    n = check_int("n", n, low=3)
    max_triples = check_int("max_triples", max_triples, low=1)
    num_samples = check_int("num_samples", num_samples, low=1)
    if math.comb(n, 3) <= max_triples:
        # every i < j < k without Python loops: the pairs (i, j), then each k > j
        ii, jj = np.triu_indices(n, 1)
        counts = n - 1 - jj
        i, j = np.repeat(ii, counts), np.repeat(jj, counts)
        starts = np.repeat(np.cumsum(counts) - counts, counts)
        k = j + 1 + (np.arange(counts.sum()) - starts)
        return np.column_stack([i, j, k]).astype(np.int64), True
    rng = np.random.default_rng(seed)
    out = np.empty((num_samples, 3), dtype=np.int64)
    filled = 0
    while filled < num_samples:
        cand = rng.integers(0, n, size=(2 * (num_samples - filled), 3))
        ok = (cand[:, 0] != cand[:, 1]) & (cand[:, 0] != cand[:, 2]) & (cand[:, 1] != cand[:, 2])
        cand = cand[ok][: num_samples - filled]
        out[filled:filled + len(cand)] = cand
        filled += len(cand)
    return out, False


def prob_less(x, y) -> float:
    """P(X < Y) for X uniform over ``x`` and independent Y uniform over ``y``; ties count 1/2.

    Examples
    --------
    >>> prob_less([1.0, 3.0], [2.0, 4.0])       # pairs: 1<2, 1<4, 3>2, 3<4
    0.75
    >>> prob_less([1.0], [1.0])
    0.5
    """
    xs = np.asarray(x, dtype=float).ravel()
    ys = np.sort(np.asarray(y, dtype=float).ravel())
    greater = len(ys) - np.searchsorted(ys, xs, side="right")
    equal = np.searchsorted(ys, xs, side="right") - np.searchsorted(ys, xs, side="left")
    return float((greater + 0.5 * equal).sum() / (len(xs) * len(ys)))


def distances_chunked(true_values, samples, *, num_bins: int = 10, chunk: int = 2048,
                      estimator: str = "gaussian") -> dict:
    """:func:`~clkit.edge.compare.distances_many` over many rows, ``chunk`` rows at a time (bounded memory)."""
    from .compare import distances_many

    X = np.atleast_2d(np.asarray(samples, dtype=float))
    parts = [distances_many(true_values, X[s:s + chunk], num_bins=num_bins, estimator=estimator)
             for s in range(0, len(X), chunk)]
    return {k: np.concatenate([p[k] for p in parts]) for k in ("jsd", "wasserstein")}


def protocol_distributions(truth, all_sequences, hard, easy, *, scores=None, num_bins: int = 10,
                           max_triples: int = 200_000, num_samples: int = 10_000, seed: int = 0) -> dict:
    """RS, EDGE and the oracle over every draw, per learner (see the module docstring).

    Parameters
    ----------
    truth : dict or clkit.edge.truth.GroundTruth
        ``{learner: accuracies (L,)}`` over ``all_sequences`` or a ground truth (RS draws
        from its population; the distances are to the population's distribution).
    all_sequences : ndarray, shape (L, K, M)
    hard, easy : array_like, shape (K, M)
        EDGE's sequences.
    scores : array_like, shape (L,), optional
        ``S(O)`` of every sequence: EDGE's draws then run over every (hard, easy) pair of
        the S-ties of its sequences (:func:`~clkit.edge.structure.tie_pairs`), so no number
        depends on which tie member the search returned. Without it, ``hard`` and ``easy``
        alone.
    max_triples, num_samples, seed
        RS over every triple up to ``max_triples``, else ``num_samples`` sampled ones.

    Returns
    -------
    dict
        ``rows`` (list of dict: ``learner``, ``protocol``, ``jsd`` / ``w1`` (expected),
        ``d_jsd`` / ``d_w1`` (expected difference to RS) and ``p_closer_jsd`` /
        ``p_closer_w1`` (P(protocol closer than RS)); RS rows have ``d = 0``, ``p = 0.5``).
        Protocols: ``RS``, ``EDGE`` and ``oracle`` (the paper's three-point Gaussian), and
        ``EDGE-range`` / ``oracle-range``: the same sequences read by an estimator that
        takes their lowest and highest accuracy as the population's extremes
        (:func:`~clkit.edge.estimation.range_estimate`; RS keeps the paper's Gaussian).
        Also ``num_triples``, ``exact_rs`` (every triple?), ``num_edge_draws`` (EDGE's
        random members, times its tie pairs), ``num_tie_pairs``, ``population_size`` and
        ``spread`` (``{learner: {"std", "range"}}`` of the truth).

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> seqs = enumerate_sequences(6, 3)
    >>> acc = np.arange(90.0)
    >>> out = protocol_distributions({"toy": acc}, seqs, seqs[0], seqs[89])
    >>> out["num_triples"], out["exact_rs"]
    (117480, True)
    >>> o = {r["protocol"]: r for r in out["rows"]}
    >>> o["oracle-range"]["p_closer_w1"] > 0.5       # the true extremes help an estimator that reads them
    True
    """
    from .experiment import sequence_index
    from .structure import tie_pairs
    from .truth import resolve_truth

    h, e = (int(i) for i in sequence_index(all_sequences, np.stack([hard, easy])))
    pairs = np.array([[h, e]]) if scores is None else tie_pairs(scores, h, e)
    values, pop = resolve_truth(truth, all_sequences, np.unique(pairs))
    triples, exact = rs_triples(len(pop), max_triples=max_triples, num_samples=num_samples, seed=seed)
    rs_rows = pop[triples]
    rows = []

    def draws(pairs_):
        """EDGE's rows over every pair and every random member (the population minus the pair)."""
        return np.concatenate([np.column_stack([np.full(len(pop) - np.isin(pop, p).sum(), p[0]),
                                                np.setdiff1d(pop, p), np.full(len(pop) - np.isin(pop, p).sum(), p[1])])
                               for p in pairs_])

    X_edge = draws(pairs)
    spread = {}
    for name, acc in values.items():
        acc = np.asarray(acc, dtype=float)
        true = acc[pop]
        spread[name] = {"std": float(true.std()), "range": float(np.ptp(true))}
        lo, hi = int(pop[np.argmin(true)]), int(pop[np.argmax(true)])
        rs = distances_chunked(true, acc[rs_rows], num_bins=num_bins)
        rows.append({"learner": name, "protocol": "RS", "jsd": float(rs["jsd"].mean()),
                     "w1": float(rs["wasserstein"].mean()), "d_jsd": 0.0, "d_w1": 0.0,
                     "p_closer_jsd": 0.5, "p_closer_w1": 0.5})
        X_oracle = draws(np.array([[lo, hi]]))
        for proto, X, est in (("EDGE", X_edge, "gaussian"), ("oracle", X_oracle, "gaussian"),
                              ("EDGE-range", X_edge, "range"), ("oracle-range", X_oracle, "range")):
            d = distances_chunked(true, acc[X], num_bins=num_bins, estimator=est)
            rows.append({"learner": name, "protocol": proto, "jsd": float(d["jsd"].mean()),
                         "w1": float(d["wasserstein"].mean()),
                         "d_jsd": float(d["jsd"].mean() - rs["jsd"].mean()),
                         "d_w1": float(d["wasserstein"].mean() - rs["wasserstein"].mean()),
                         "p_closer_jsd": prob_less(d["jsd"], rs["jsd"]),
                         "p_closer_w1": prob_less(d["wasserstein"], rs["wasserstein"])})
    return {"rows": rows, "num_triples": int(len(triples)), "exact_rs": bool(exact),
            "num_edge_draws": int(len(X_edge)), "num_tie_pairs": int(len(pairs)), "spread": spread,
            "population_size": int(len(pop))}
