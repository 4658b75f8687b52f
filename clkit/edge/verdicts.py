"""Section 6's verdicts: RS versus EDGE paired over random draws, with controls and pipeline checks.

A *draw* is the pairing unit of :func:`clkit.stats.paired`: three random sequences
``r1, r2, r3`` form RS, and EDGE evaluates its hard sequence, ``r1`` and its easy sequence
(common random numbers). EDGE's distances in a draw are averaged over every (hard, easy)
pair of the S-ties of its sequences (:func:`~clkit.edge.structure.tie_pairs`): the search
cannot tell tie-mates apart (every sequence ties with its reverse), so no verdict depends
on which member float rounding or the tie rule returned.

The rows, and why:

* **Primary** -- the paper's claim, one Holm family (:data:`PRIMARY_FAMILY`): per learner,
  EDGE's Gaussian is closer to the true distribution than RS's, in JSD and in W1, the two
  distances the paper reports. ``2 x learners`` comparisons: at 30 draws an effect of two
  standard deviations of the differences is found with near-certain power.
* **Exploratory** (each kind its own family, shown with its interval, never a finding):
  the share of the true range EDGE's three sequences span against RS's; W1 of EDGE read by
  the range estimator (:func:`~clkit.edge.estimation.range_estimate`: its lowest and
  highest accuracy taken as the population's extremes) against RS; RS stratified by S(O)
  terciles against RS (it can only differ where S tracks accuracy).
* **Controls**, on the first learner, the null controls judged together (Holm over the three,
  :func:`clkit.stats.judge_controls`: a healthy run shows a false alarm at most α of the time,
  where three controls judged alone at α would show one 14 % of the time): two nulls of
  the primary family's kind -- RS against RS on an independent draw (W1, and JSD), and EDGE
  with a random similarity (each draw its own seeded random matrix, which knows nothing about
  the classes) against RS (W1) -- and an oracle that can fail: the range estimator handed
  the true hardest and easiest sequences must be closer than RS (W1). It fails where the
  truth is far from Gaussian (heavy tails stretch its range).
* **Pipeline checks** (true by construction; a failure means the code, not the data, is
  wrong): the oracle's sequences span the true range in every draw; the vectorised
  distances equal the per-protocol ones; RS never draws EDGE's sequences or their tie-mates.

With a sampled truth RS draws from the population, the sample its distances are taken to,
while EDGE's (and the random similarity's) sequences are looked up outside it: three of the
truth's own points fit it a little better. Measured (200 draws x 40 samples each): at a
sample of 40 RS gains about 0.13 standard deviations of the W1 differences, at 256 (the
``sampled`` set) under 0.01. Small samples therefore lean towards RS and can trip the
random-similarity null.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_int

__all__ = ["PRIMARY_FAMILY", "EXPLORATORY_FAMILIES", "section6_draws", "judge_section6", "checks_hold",
           "checks_text", "verdict_summary"]

#: the Holm family of the paper's claim
PRIMARY_FAMILY = "EDGE vs RS (the paper's claim: JSD and W1 per learner)"
#: the exploratory families, by kind of row
EXPLORATORY_FAMILIES = {"coverage": "range coverage EDGE − RS (exploratory)",
                        "range": "range-estimator EDGE − RS, W1 (exploratory)",
                        "stratified": "stratified RS − RS, W1 (exploratory)"}


def _coverage(acc, pop, rows):
    """Share of the population's accuracy range spanned by each row of sequence positions."""
    span = np.ptp(acc[pop])
    vals = acc[rows]
    return (vals.max(axis=-1) - vals.min(axis=-1)) / span if span > 0 else np.zeros(vals.shape[:-1])


def _edge_rows(pairs, middle):
    """(P, D, 3) positions: every (hard, easy) pair around each draw's random member."""
    pairs = np.asarray(pairs, dtype=np.int64)
    P, D = len(pairs), len(middle)
    return np.stack([np.broadcast_to(pairs[:, :1], (P, D)), np.broadcast_to(middle[None, :], (P, D)),
                     np.broadcast_to(pairs[:, 1:], (P, D))], axis=-1)


def _tied_distances(true, acc, rows, num_bins, estimator="gaussian", population_size=None):
    """JSD / W1 of (P, D, 3) rows, averaged over the P tie pairs: arrays of shape (D,)."""
    from .compare import distances_many

    P, D, _ = rows.shape
    d = distances_many(true, acc[rows.reshape(P * D, 3)], num_bins=num_bins, estimator=estimator,
                       population_size=population_size)
    return {k: v.reshape(P, D).mean(axis=0) for k, v in d.items()}


def section6_draws(truth, all_sequences, hard, easy, *, num_draws: int = 30, num_bins: int = 10, seed: int = 0,
                   scores=None) -> dict:
    """The per-draw values every row of section 6 is decided on (see the module docstring).

    Parameters
    ----------
    truth : dict or clkit.edge.truth.GroundTruth
        ``{learner: (L,)}`` over ``all_sequences``, or a ground truth: random sequences are
        then drawn from its population (a uniform sample of a uniform sample is uniform),
        distances are taken to the population's distribution and the oracle is the
        population's hardest / easiest sequence.
    all_sequences : ndarray, shape (L, K, M)
    hard, easy : array_like, shape (K, M)
        EDGE's sequences.
    num_draws, num_bins, seed : int
    scores : array_like, shape (L,), optional
        ``S(O)`` of every sequence: EDGE is averaged over its tie pairs and the stratified RS
        rows are added. Without it, ``hard`` and ``easy`` alone.

    Returns
    -------
    dict
        ``learners`` (names), ``arms`` (``{learner: {arm: (num_draws,)}}`` with ``w1_edge``,
        ``w1_rs``, ``jsd_edge``, ``jsd_rs``, ``cov_edge``, ``cov_rs``, ``w1_range_edge`` and,
        with ``scores``, ``w1_strat``), ``controls`` (``{arm: (num_draws,)}`` on the first
        learner: ``w1_rs``, ``jsd_rs``, ``cov_rs``, ``w1_rs2``, ``jsd_rs2``, ``w1_random``,
        ``w1_oracle_range``), ``checks`` (list of ``{"check", "holds", "detail"}``),
        ``tie_pairs`` (the (hard, easy) pairs EDGE is averaged over) and ``num_draws``.
    """
    from .compare import distances_many, stratified_draws
    from .data_similarity import data_class_similarity
    from .experiment import evaluate_protocol, sequence_index
    from .sequences import easy_sequence, hard_sequence, sequence_scores
    from .structure import tie_pairs
    from .truth import resolve_truth

    num_draws = check_int("num_draws", num_draws, low=2)
    all_sequences = np.asarray(all_sequences)
    h, e = sequence_index(all_sequences, np.stack([hard, easy])).tolist()
    pairs = np.array([[h, e]]) if scores is None else tie_pairs(np.asarray(scores, dtype=float), h, e)
    N, K = all_sequences.shape[1] * all_sequences.shape[2], all_sequences.shape[1]
    rand_pairs = []                                 # hard / easy ties of a fresh random similarity per draw
    for d in range(num_draws):
        rsim = data_class_similarity("random", num_classes=N, seed=seed + 7919 * (d + 1)).matrix
        rh, re_ = sequence_index(all_sequences, np.stack([hard_sequence(rsim, K), easy_sequence(rsim, K)]))
        rand_pairs.append(tie_pairs(sequence_scores(rsim, all_sequences), int(rh), int(re_)))
    needed = np.unique(np.concatenate([pairs.ravel()] + [p.ravel() for p in rand_pairs]))
    values, pop = resolve_truth(truth, all_sequences, needed)
    rng = np.random.default_rng(seed)
    pool = np.setdiff1d(pop, pairs.ravel())          # RS never draws EDGE's sequences or their tie-mates
    small = len(pool) < 3                              # tiny settings (e.g. 4 classes / 2 tasks)
    rs = np.array([rng.choice(pool, size=3, replace=small) for _ in range(num_draws)])
    rs2 = np.array([rng.choice(pool, size=3, replace=small) for _ in range(num_draws)])
    edge_rows = _edge_rows(pairs, rs[:, 0])
    arms, controls = {}, {}
    span_ok, same_ok = True, True
    for i, (name, acc) in enumerate(values.items()):
        acc = np.asarray(acc, dtype=float)
        true = acc[pop]
        rs_d = distances_many(true, acc[rs], num_bins=num_bins)
        ed = _tied_distances(true, acc, edge_rows, num_bins)
        arms[name] = {"w1_edge": ed["wasserstein"], "w1_rs": rs_d["wasserstein"], "jsd_edge": ed["jsd"],
                      "jsd_rs": rs_d["jsd"], "cov_edge": _coverage(acc, pop, edge_rows).mean(axis=0),
                      "cov_rs": _coverage(acc, pop, rs),
                      "w1_range_edge": _tied_distances(true, acc, edge_rows, num_bins, "range",
                                                       len(pop))["wasserstein"]}
        if scores is not None:
            strat = pop[stratified_draws(np.asarray(scores, dtype=float)[pop], 3, num_draws, seed=seed + 1)]
            arms[name]["w1_strat"] = distances_many(true, acc[strat], num_bins=num_bins)["wasserstein"]
        lo, hi = int(pop[np.argmin(true)]), int(pop[np.argmax(true)])
        oracle = _edge_rows([[lo, hi]], rs[:, 0])
        span_ok &= bool(np.all(_coverage(acc, pop, oracle[0]) == 1.0))
        one = evaluate_protocol(true, acc[rs[0]], num_bins=num_bins)
        same_ok &= bool(abs(one["wasserstein"] - rs_d["wasserstein"][0]) <= 1e-6 * max(1.0, one["wasserstein"])
                        and abs(one["jsd"] - rs_d["jsd"][0]) <= 1e-9)
        if i == 0:
            rs2_d = distances_many(true, acc[rs2], num_bins=num_bins)
            rand_w = np.array([_tied_distances(true, acc, _edge_rows(p, rs[d:d + 1, 0]), num_bins)["wasserstein"][0]
                               for d, p in enumerate(rand_pairs)])
            controls = {"learner": name, "w1_rs": rs_d["wasserstein"], "jsd_rs": rs_d["jsd"],
                        "cov_rs": arms[name]["cov_rs"], "w1_rs2": rs2_d["wasserstein"], "jsd_rs2": rs2_d["jsd"],
                        "w1_random": rand_w,
                        "w1_oracle_range": _tied_distances(true, acc, oracle, num_bins, "range",
                                                           len(pop))["wasserstein"]}
    members = np.unique(pairs.ravel())
    checks = [
        {"check": "the oracle's sequences span the true accuracy range in every draw", "holds": span_ok,
         "detail": f"{num_draws} draws x {len(values)} learner(s)"},
        {"check": "the vectorised distances equal the per-protocol ones", "holds": same_ok,
         "detail": "JSD and W1 of RS's first draw, every learner"},
        {"check": "RS never draws EDGE's sequences or their S-tie-mates", "holds": not bool(np.isin(rs, members).any()),
         "detail": f"{len(members)} sequence(s) kept out of {len(pop):,}"},
    ]
    return {"learners": list(values), "arms": arms, "controls": controls, "checks": checks,
            "tie_pairs": pairs.tolist(), "num_draws": num_draws}


def judge_section6(draws: dict) -> list:
    """The verdicts of :func:`section6_draws`' values (:mod:`clkit.stats`): primary, exploratory, controls.

    Returns a list of :class:`clkit.stats.Verdict`: the primary family (Holm over it), each
    exploratory family (Holm within it), then the controls (the null controls Holm-adjusted together,
    :func:`clkit.stats.judge_controls`; the oracle at its level: adjusting it would only make it fail
    more often).
    """
    from .. import stats

    closer = dict(higher="RS closer", lower="EDGE closer")
    primary, explo = [], {k: [] for k in EXPLORATORY_FAMILIES}
    for name in draws["learners"]:
        a = draws["arms"][name]
        for metric in ("w1", "jsd"):
            primary.append(stats.paired(a[f"{metric}_edge"], a[f"{metric}_rs"],
                                        comparison=f"{name}: {metric.upper()} EDGE − RS", **closer))
        explo["coverage"].append(stats.paired(a["cov_edge"], a["cov_rs"], comparison=f"{name}: range coverage EDGE − RS",
                                              higher="EDGE spans more", lower="RS spans more", scope="exploratory"))
        explo["range"].append(stats.paired(a["w1_range_edge"], a["w1_rs"],
                                           comparison=f"{name}: W1 range-estimator EDGE − RS", scope="exploratory",
                                           **closer))
        if "w1_strat" in a:
            explo["stratified"].append(stats.paired(a["w1_strat"], a["w1_rs"],
                                                    comparison=f"{name}: W1 stratified RS − RS", higher="RS closer",
                                                    lower="stratified RS closer", scope="exploratory"))
    out = stats.holm(primary, name=PRIMARY_FAMILY)
    for kind, rows in explo.items():
        out += stats.holm(rows, name=EXPLORATORY_FAMILIES[kind]) if rows else []
    c = draws["controls"]
    name = c["learner"]
    null = dict(role="null control", expect="no difference")
    out += [
        stats.paired(c["w1_rs2"], c["w1_rs"], comparison=f"{name}: W1 RS' − RS (null)", **null),
        stats.paired(c["jsd_rs2"], c["jsd_rs"], comparison=f"{name}: JSD RS' − RS (null)", **null),
        stats.paired(c["w1_random"], c["w1_rs"], comparison=f"{name}: W1 random-similarity EDGE − RS (null)", **null),
        stats.paired(c["w1_oracle_range"], c["w1_rs"], comparison=f"{name}: W1 range-estimator oracle − RS (oracle)",
                     higher="RS closer", lower="oracle closer", role="oracle control", expect="oracle closer"),
    ]
    return stats.judge_controls(out)


def checks_hold(checks) -> bool:
    """Whether every pipeline check holds."""
    return all(bool(c["holds"]) for c in checks)


def checks_text(checks) -> str:
    """One Markdown line on the pipeline checks.

    Examples
    --------
    >>> checks_text([{"check": "a", "holds": True, "detail": "x"}, {"check": "b", "holds": False, "detail": "y"}])
    '**Pipeline checks fail** (1 of 2): b (y). The code, not the data, is wrong here: no difference below is read as a finding.'
    """
    failed = [c for c in checks if not c["holds"]]
    if not failed:
        return (f"**Pipeline checks hold** ({len(checks)} of {len(checks)}; true by construction): "
                + "; ".join(c["check"] for c in checks) + ".")
    return (f"**Pipeline checks fail** ({len(failed)} of {len(checks)}): "
            + "; ".join(f"{c['check']} ({c['detail']})" for c in failed)
            + ". The code, not the data, is wrong here: no difference below is read as a finding.")


def verdict_summary(verdicts, checks, *, subject: str = "this run", small_n: int = 4) -> str:
    """The closing Markdown of section 6: pipeline checks, then :func:`clkit.stats.closing_text`
    (controls first, findings only from primary rows); no findings when a check fails."""
    from .. import stats

    head = checks_text(checks)
    if checks_hold(checks):
        return head + "\n\n" + stats.closing_text(verdicts, subject=subject, small_n=small_n)
    shown = [v for v in verdicts if v.role == "finding" and v.n]
    return head + "\n\nMeasured differences (not findings): " + "; ".join(
        f"{v.comparison} {v.effect:+.3g} (p = {v.p:.2g})" for v in shown) + "."
