"""Notebook 02_edge's protocols: RS and EDGE evaluated against the ground truth.

The sequences each protocol trains (:func:`protocol_sequences`), the ties of their
scores, their estimates against the truth (:func:`evaluate_protocols`), rankings and
correlations, the structure of the truth around the hard / easy sequences, Section 6's
verdicts and the draws report. Re-exported by :mod:`clkit.edge.report`, the notebook's
entry point; nothing is trained here.
"""

from __future__ import annotations

import numpy as np
__all__ = ["protocol_sequences", "protocol_ties", "correlation_table", "evaluate_protocols", "rankings", "correlations", "structure_report", "edge_verdicts", "draws_report", "draws_text"]


def protocol_sequences(num_classes: int, num_tasks: int, hard, easy, image_sim=None, *, seeds=(0, 42, 1993),
                       edge_num_random: int = 1, granularities=None, shuffle: str = "pycil") -> dict:
    """The sequences each protocol of notebook 02 evaluates: ``{"RS", "EDGE"[, "EDGE-img"]}``.

    RS: the sequences of ``seeds`` (PyCIL's class shuffle); EDGE: ``hard``, ``edge_num_random``
    random sequences (the first RS seeds', then further seeds) and ``easy``; EDGE-img: the
    same with hard / easy from ``image_sim`` (the image-prototype similarity). ``shuffle`` names the
    seeds' class-order generator (:func:`clkit.edge.combinatorics.random_sequences`: ``"pycil"``,
    ``"edge_release"``).

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> s = enumerate_sequences(4, 2)
    >>> out = protocol_sequences(4, 2, s[0], s[5])
    >>> sorted(out), out["EDGE"].shape
    (['EDGE', 'RS'], (3, 2, 2))
    """
    from .combinatorics import random_sequences
    from .sequences import easy_sequence, hard_sequence

    seeds = list(seeds)
    medium_seeds = (seeds + [s for s in range(10**6) if s not in seeds])[:edge_num_random]
    medium = random_sequences(num_classes, num_tasks, seeds=medium_seeds, shuffle=shuffle)
    out = {"RS": random_sequences(num_classes, num_tasks, seeds=seeds, shuffle=shuffle),
           "EDGE": np.concatenate([np.asarray(hard)[None], medium, np.asarray(easy)[None]])}
    if image_sim is not None:
        out["EDGE-img"] = np.concatenate([hard_sequence(image_sim, num_tasks, granularities=granularities)[None],
                                          medium,
                                          easy_sequence(image_sim, num_tasks, granularities=granularities)[None]])
    return out


def protocol_ties(all_sequences, protocol_sequences: dict, sims: dict) -> dict:
    """Every (hard, easy) pair of the S-ties of each EDGE-like protocol's first and last sequence.

    ``sims`` ``{protocol: similarity}`` names the protocols whose first and last sequences a
    search returned from that similarity (EDGE: the names', EDGE-img: the images'); the result
    is :func:`evaluate_protocols`' ``ties``.

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> s = enumerate_sequences(4, 2)
    >>> sim = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    >>> protocol_ties(s, {"EDGE": s[[0, 2, 1]]}, {"EDGE": sim})["EDGE"].tolist()   # 0 ties with its reverse 5
    [[0, 1], [0, 2], [0, 3], [0, 4], [5, 1], [5, 2], [5, 3], [5, 4]]
    """
    from .experiment import sequence_index
    from .sequences import sequence_scores
    from .structure import tie_pairs

    out = {}
    for proto, sim in sims.items():
        if sim is None or proto not in protocol_sequences:
            continue
        seqs = np.asarray(protocol_sequences[proto])
        first, last = sequence_index(all_sequences, seqs[[0, -1]])
        out[proto] = tie_pairs(sequence_scores(sim, all_sequences), int(first), int(last))
    return out


def correlation_table(**corrs):
    """Pearson R per learner (rows) for each named correlation dict (columns), rounded."""
    import pandas as pd

    return pd.DataFrame({label: {n: c["r"] for n, c in corr.items()} for label, corr in corrs.items()}).round(3)


#: the shown frame's column headers, with their units (accuracies in percent; JSD in bits; W1 in accuracy
#: points); the distances are of one draw (the paper's seeds): the draw-averaged paired effects with their
#: intervals are :func:`clkit.edge.tables.draw_table`'s
FRAME_UNITS = {"mean": "mean, %", "std": "std, %", "min": "min, %", "max": "max, %",
               "jsd": "JSD, bits (one draw)", "wasserstein": "W1, % points (one draw)",
               "jsd_se": "JSD se, bits", "wasserstein_se": "W1 se, % points", "jsd_bias": "JSD bias, bits",
               "wasserstein_bias": "W1 bias, % points"}


def evaluate_protocols(truth, all_sequences, protocol_sequences: dict, *, ties: dict | None = None,
                       num_bins: int = 10, num_boot: int = 200, seed: int = 0):
    """Every protocol's Gaussian estimate judged against every learner's truth.

    Parameters
    ----------
    truth : dict or clkit.edge.truth.GroundTruth
        ``{learner: accuracies (L,)}`` over ``all_sequences`` (exact), or a ground truth
        whose population stands for them (the protocols' sequences are trained on demand).
    all_sequences : ndarray, shape (L, K, M)
    protocol_sequences : dict
        ``{protocol: sequences (P, K, M)}``.
    ties : dict, optional
        ``{protocol: (V, 2) positions}``: for a protocol whose first and last sequences are a
        search's hard and easy ones, every (hard, easy) pair of their S-ties
        (:func:`~clkit.edge.structure.tie_pairs`). Its numbers are then averaged over these
        variants (the search cannot tell tie-mates apart; which one it returned must not
        change a number) and its accuracies listed are the tie means per position.
    num_boot, seed : int
        Bootstrap resamples of a sampled population for the sampling error of JSD / W1
        (``jsd_se`` / ``wasserstein_se``) and their plug-in bias (``jsd_bias`` /
        ``wasserstein_bias``: estimate minus bias is the first-order corrected value); not
        computed for an exact truth.

    Returns
    -------
    dict
        ``table`` ``{(learner, protocol): evaluate_protocol(...)}`` plus ``(learner,
        "truth")`` rows; ``values`` ``{(learner, protocol): sampled accuracies}`` (tie means);
        ``variants`` ``{(learner, protocol): (V, P) accuracies}`` (one row per tie variant);
        ``frame`` (DataFrame for display); ``log`` (the values the notebook records);
        ``note`` (Markdown: with a sampled truth, that its JSD is not comparable with an exact
        run's; else empty).
    """
    import pandas as pd

    from .compare import distances_many
    from .experiment import evaluate_protocol, sequence_index
    from .truth import bootstrap, resolve_truth

    protocols = {}
    for p, seqs_ in protocol_sequences.items():
        idx = sequence_index(all_sequences, seqs_)
        alt = np.asarray((ties or {}).get(p, np.empty((0, 2))), dtype=np.int64).reshape(-1, 2)
        if len(alt):                     # every (hard, easy) pair of the ties, the middle kept
            rows = np.repeat(idx[None], len(alt), axis=0)
            rows[:, 0], rows[:, -1] = alt[:, 0], alt[:, 1]
            protocols[p] = rows
        else:
            protocols[p] = idx[None]
    needed = np.unique(np.concatenate([r.ravel() for r in protocols.values()])) if protocols else None
    values_all, pop = resolve_truth(truth, all_sequences, needed)
    sampled = len(pop) < len(all_sequences)
    table, values, variants = {}, {}, {}
    for name, acc in values_all.items():
        true = acc[pop]
        for proto, rows in protocols.items():
            each = [evaluate_protocol(true, acc[r], num_bins=num_bins) for r in rows]
            table[(name, proto)] = {k: float(np.mean([e[k] for e in each])) for k in each[0]}
            variants[(name, proto)] = acc[rows]
            values[(name, proto)] = acc[rows].mean(axis=0)
            if sampled:
                def both(t, X=acc[rows]):
                    d = distances_many(t, X, num_bins=num_bins)
                    return [float(d["jsd"].mean()), float(d["wasserstein"].mean())]

                bt = bootstrap(both, true, num_boot=num_boot, seed=seed)
                table[(name, proto)].update(jsd_se=float(bt["se"][0]), wasserstein_se=float(bt["se"][1]),
                                            jsd_bias=float(bt["bias"][0]), wasserstein_bias=float(bt["bias"][1]))
        table[(name, "truth")] = {"mean": true.mean(), "std": true.std(), "min": true.min(), "max": true.max()}
    cols = ["mean", "std", "min", "max", "jsd", "wasserstein"] + (
        ["jsd_se", "wasserstein_se", "jsd_bias", "wasserstein_bias"] if sampled else [])
    frame = pd.DataFrame(table).T[cols].round(3).rename(columns=FRAME_UNITS)
    tied = [p for p, r in protocols.items() if len(r) > 1]
    col = "accuracies, % (EDGE: hard, random, easy" + ("; tie means" if tied else "") + ")"
    frame[col] = [
        ", ".join(f"{v:.1f}" for v in values[key]) if key in values else
        ("all" if not sampled else f"sample of {len(pop)}") for key in frame.index]
    log = {"protocols": {f"{n}/{p}": {k: float(v) for k, v in row.items()} for (n, p), row in table.items()},
           "protocol_tie_variants": {p: int(len(r)) for p, r in protocols.items()}}
    # JSD and W1 of each protocol averaged over this run's learners, under keys that do not
    # name a learner, so the rows of a sweep over learners line up
    log_mean = {"protocol_mean": {p: {m: float(np.mean([table[(n, p)][m] for n in values_all]))
                                      for m in ("jsd", "wasserstein")} for p in protocols}}
    note = ""
    if sampled:
        bias = [table[(n, p)]["jsd_bias"] for n in values_all for p in protocols]
        note = (f"**Sampled JSD is not comparable with an exact run's JSD.** Its bins span the sample's "
                f"accuracy range (narrower than the true one) and a histogram of {len(pop):,} values is noisier, "
                f"both of which raise it: the bootstrap puts the noise part alone at "
                f"{min(bias):+.3f} to {max(bias):+.3f} bits here (column jsd_bias). Compare this run's JSDs with "
                f"each other; W1 carries only its sampling error (wasserstein_se).")
    if tied:
        note = (note + "\n\n" if note else "") + (
            "Rows of " + ", ".join(tied) + " are averaged over every (hard, easy) pair of the S-ties of their "
            "hard and easy sequences (" + ", ".join(f"{p}: {len(protocols[p])}" for p in tied) + " pairs): the "
            "search cannot tell tie-mates apart, so no number depends on which one it returned.")
    return {"table": table, "values": values, "variants": variants, "frame": frame, "log": log,
            "log_mean": log_mean, "protocols": list(protocols), "note": note}


def rankings(truth: dict, values: dict, protocols, variants: dict | None = None):
    """Rankings by lower / upper bound and stability under the truth and each protocol.

    Returns ``(rows, ranking_error)``: ``rows`` ``{(dimension, protocol): ranks}`` and the
    total Spearman footrule per protocol (Tables A5/A6). With ``variants``
    (:func:`evaluate_protocols`' tie variants, the same number for every learner of a
    protocol) ranks and errors are averaged over the variants.
    """
    from .estimation import rank_methods, ranking_distance

    rows, err = {}, {p: 0 for p in protocols}
    if len(truth) < 2:
        return rows, err
    first = next(iter(truth))
    for dim in ("lower", "upper", "stability"):
        ref = rank_methods(truth, dim)
        rows[(dim, "truth")] = ref
        for proto in protocols:
            runs = ([{n: variants[(n, proto)][v] for n in truth} for v in range(len(variants[(first, proto)]))]
                    if variants else [{n: values[(n, proto)] for n in truth}])
            each = [rank_methods(r, dim) for r in runs]
            if len(each) == 1:
                rows[(dim, proto)] = each[0]
                err[proto] += ranking_distance(ref, each[0])
            else:
                rows[(dim, proto)] = {n: float(np.mean([r[n] for r in each])) for n in truth}
                err[proto] += float(np.mean([ranking_distance(ref, r) for r in each]))
    return rows, err


def correlations(scores, truth: dict) -> dict:
    """Pearson R of ``scores`` with every learner's accuracies: ``{learner: {"r", "p"}}``."""
    from .estimation import similarity_correlation

    return {name: similarity_correlation(scores, acc) for name, acc in truth.items()}


def structure_report(truth, scores, all_sequences, hard, easy) -> dict:
    """What S(O) can explain in this run: ceilings, tie-averaged percentiles, reversal.

    ``truth`` is a dict ``{learner: (L,)}`` over ``all_sequences`` or a
    :class:`~clkit.edge.truth.GroundTruth` (then the table is computed over its population,
    the tie-mates of ``hard`` / ``easy`` are trained on demand and every percentile carries
    its sampling error ``pct_se``). ``scores`` is ``S(O)`` of every sequence of
    ``all_sequences``.

    Returns ``table`` (per learner: R, R^2, eta^2 of the S-classes -- the ceiling of
    R^2 --, eta^2 of the first task, mean |A(O) - A(reverse)|), ``ties`` (per learner and
    hard/easy: the tie-averaged accuracy percentile with its range over the S-tie),
    ``text`` (Markdown, generated from those numbers) and ``log`` (for results.json).
    """
    import pandas as pd

    from .experiment import sequence_index
    from .structure import ceiling, structure_table, tie_members, tie_percentiles
    from .truth import resolve_truth

    scores = np.asarray(scores, dtype=float)
    idx = sequence_index(all_sequences, np.stack([hard, easy]))
    needed = np.union1d(tie_members(scores, idx[0]), tie_members(scores, idx[1]))
    values, pop = resolve_truth(truth, all_sequences, needed)
    sampled = len(pop) < len(all_sequences)
    table = structure_table({n: v[pop] for n, v in values.items()}, scores[pop], np.asarray(all_sequences)[pop])
    ties = {}
    for name, acc in values.items():
        for role, i in zip(("hard", "easy"), idx):
            ties[f"{name}/{role}"] = tie_percentiles(acc, scores, int(i), population=pop)
    ties_frame = pd.DataFrame(ties).T
    if not sampled:
        ties_frame = ties_frame.drop(columns=["pct_se", "pct_low", "pct_high"])
    n_cls = int(table["S classes"].iloc[0]) if len(table) else 0
    cl = ceiling(table)
    chance = cl["chance"]
    where = (f"over all {len(scores):,} sequences" if not sampled else
             f"over the uniform sample of {len(pop):,} of the {len(scores):,} sequences")
    lines = [f"S(O) takes {n_cls:,} distinct values {where}; every sequence has the same S as its reverse, so "
             f"S cannot tell them apart. With {n_cls:,} S-classes eta^2 is {chance:.2f} by chance alone (accuracy "
             "unrelated to S); beyond chance means (eta^2 - chance) / (1 - chance)."]
    if not cl["informative"]:
        lines.append(f"With eta^2 at {chance:.2f} by chance (most S-classes hold one or two sequences of the "
                     "sample) the ceiling says nothing about what a function of S could explain here.")
    for name, row in table.iterrows():
        rev = row["mean |A(O) - A(reverse)|"]
        rev_text = (f"a sequence and its reverse differ by {rev:.2f} points on average" if np.isfinite(rev)
                    else "no sequence of the sample has its reverse in it (reversal gap not measured)")
        b = cl["beyond"][name]
        what = ("" if not cl["informative"] else
                ": at or below chance, sequences of equal S differ at least as much as random ones" if b <= 0 else
                f": beyond chance a function of S could explain about {b:.2f}")
        lines.append(f"- {name}: R = {row['R']:.2f} (R^2 = {row['R^2']:.2f}); eta^2 of the S-classes "
                     f"{row['eta^2 S-classes']:.2f}{what}; the first task alone {row['eta^2 first task']:.2f} "
                     f"({cl['first_beyond'][name]:.2f} beyond chance); {rev_text}.")
    if sampled:
        widest = max(ties.items(), key=lambda kv: kv[1]["pct_high"] - kv[1]["pct_low"])
        lines.append(f"Percentiles are taken among the sample: each carries a 95 % Wilson interval (columns "
                     f"pct_low, pct_high), widest for {widest[0]}: {widest[1]['pct']:.1f} "
                     f"({widest[1]['pct_low']:.1f} to {widest[1]['pct_high']:.1f}); a percentile of 0 or 100 "
                     "in the sample is not one in all sequences.")
    log = {"structure": {n: {k: float(v) for k, v in r.items()} for n, r in table.iterrows()},
           "tie_percentiles": ties}
    return {"table": table, "ties": ties_frame, "text": "\n".join(lines), "log": log}


def edge_verdicts(truth, all_sequences, hard, easy, *, num_draws: int = 30, num_bins: int = 10,
                  seed: int = 0, small_n: int = 4, scores=None) -> dict:
    """RS versus EDGE judged by :mod:`clkit.stats`, paired over random draws (section 6).

    :func:`clkit.edge.verdicts.section6_draws` computes every row's per-draw values (EDGE
    averaged over the S-ties of its sequences when ``scores`` is given),
    :func:`~clkit.edge.verdicts.judge_section6` decides them: the primary family (the
    paper's claim: JSD and W1 per learner, EDGE − RS), exploratory families (range coverage,
    the range estimator, stratified RS), and controls judged alone (two nulls of the
    primary kind, a random-similarity null, an oracle that can fail). See
    :mod:`clkit.edge.verdicts` for why each row is there.

    Returns ``verdicts`` (list of Verdict), ``table`` (DataFrame), ``controls_hold``
    (bool), ``checks`` (the pipeline checks, ``{"check", "holds", "detail"}``),
    ``checks_hold`` (bool), ``tie_pairs`` and ``summary`` (Markdown:
    :func:`~clkit.edge.verdicts.verdict_summary`).
    """
    from .. import stats
    from .verdicts import checks_hold, judge_section6, section6_draws, verdict_summary

    draws = section6_draws(truth, all_sequences, hard, easy, num_draws=num_draws, num_bins=num_bins, seed=seed,
                           scores=scores)
    verdicts = judge_section6(draws)
    ok, _ = stats.controls_hold(verdicts)
    return {"verdicts": verdicts, "table": stats.verdict_table(verdicts), "controls_hold": bool(ok),
            "checks": draws["checks"], "checks_hold": checks_hold(draws["checks"]), "tie_pairs": draws["tie_pairs"],
            "summary": verdict_summary(verdicts, draws["checks"], subject="this run", small_n=small_n)}


def draws_report(truth, all_sequences, hard, easy, *, scores=None, num_bins: int = 10, seed: int = 0,
                 max_triples: int = 200_000, num_samples: int = 10_000) -> dict:
    """RS, EDGE and the oracle over every draw (:mod:`clkit.edge.triples`), as a table and text.

    With ``scores`` (S(O) of every sequence) EDGE runs over every (hard, easy) pair of its
    S-ties. Returns ``frame`` (DataFrame indexed by learner and protocol), ``text``
    (Markdown generated from the numbers, :func:`draws_text`) and ``log``.
    """
    import pandas as pd

    from .triples import protocol_distributions

    out = protocol_distributions(truth, all_sequences, hard, easy, scores=scores, num_bins=num_bins, seed=seed,
                                 max_triples=max_triples, num_samples=num_samples)
    frame = pd.DataFrame(out["rows"]).set_index(["learner", "protocol"])
    log = {"draws": {f"{r['learner']}/{r['protocol']}": {k: v for k, v in r.items() if k not in ("learner", "protocol")}
                     for r in out["rows"]},
           "draws_num_triples": out["num_triples"], "draws_exact_rs": out["exact_rs"],
           "draws_tie_pairs": out["num_tie_pairs"]}
    return {"frame": frame, "text": draws_text(frame, out), "log": log}


def draws_text(frame, out: dict) -> str:
    """What the draws say, per learner, and which limit each number shows (from ``frame``'s P(closer)).

    Two questions, each answered from its own rows: can an estimator beat RS with the *true*
    extremes (the oracles), and do the similarity's extremes come close enough (EDGE against
    its oracle, read by the same estimator)? Where both fail, both are limits. ``out`` is
    :func:`~clkit.edge.triples.protocol_distributions`' result (counts and the truth's spread).
    """
    from .estimation import expected_extreme_z

    how = (f"all {out['num_triples']:,} triples" if out["exact_rs"]
           else f"{out['num_triples']:,} uniformly drawn triples")
    ties = out.get("num_tie_pairs", 1)
    lines = [f"Over every draw (RS: {how} of the truth's sequences; EDGE and the oracle: every choice of the "
             f"random member" + (f", EDGE over the {ties} (hard, easy) pairs of its S-ties" if ties > 1 else "")
             + "), P(closer to the truth than RS, W1) with the expected W1 difference; the paper's three-point "
               "Gaussian, then the range estimator (lowest and highest accuracy read as the population's extremes):"]
    gauss_limit, sim_limit, range_fails, edge_wins = [], [], [], []
    for name, g in frame.groupby(level=0, sort=False):
        p = {proto: g.loc[(name, proto)] for proto in ("EDGE", "oracle", "EDGE-range", "oracle-range")}
        lines.append(f"- {name}: Gaussian: EDGE {p['EDGE']['p_closer_w1']:.2f} ({p['EDGE']['d_w1']:+.2f}), "
                     f"oracle {p['oracle']['p_closer_w1']:.2f} ({p['oracle']['d_w1']:+.2f}); range estimator: "
                     f"EDGE {p['EDGE-range']['p_closer_w1']:.2f} ({p['EDGE-range']['d_w1']:+.2f}), oracle "
                     f"{p['oracle-range']['p_closer_w1']:.2f} ({p['oracle-range']['d_w1']:+.2f}).")
        if p["oracle"]["p_closer_w1"] < 0.5:
            gauss_limit.append(name)
        if p["oracle-range"]["p_closer_w1"] > 0.5 and p["EDGE-range"]["p_closer_w1"] < 0.5:
            sim_limit.append((name, p["oracle-range"]["p_closer_w1"], p["EDGE-range"]["p_closer_w1"]))
        if p["oracle-range"]["p_closer_w1"] <= 0.5:
            range_fails.append(name)
        if p["EDGE"]["p_closer_w1"] > 0.5:
            edge_wins.append(f"{name} ({p['EDGE']['p_closer_w1']:.2f})")
    if gauss_limit:
        lines.append(f"For {', '.join(gauss_limit)} even the true hardest and easiest sequences leave the paper's "
                     "three-point Gaussian farther from the truth than RS more often than not: its estimator is a "
                     "limit (two extremes and one draw make its standard deviation too wide).")
    if sim_limit:
        lines.append("With the true extremes the range estimator beats RS more often than not, with the "
                     "similarity's it does not (" + "; ".join(f"{n} {o:.2f} against {e:.2f}" for n, o, e in sim_limit)
                     + "): the similarity's hard and easy sequences, too far from the extremes, are a limit too.")
    both = [n for n, _, _ in sim_limit if n in gauss_limit]
    if both:
        lines.append(f"So for {', '.join(both)} both the estimator and the similarity limit EDGE here.")
    if range_fails:
        z = expected_extreme_z(out["population_size"])
        parts = []
        for n in range_fails:
            sp = out["spread"][n]
            implied = sp["range"] / (2 * z)
            parts.append(f"{n} (range / {2 * z:.2f} = {implied:.2f} against a true std of {sp['std']:.2f}: it "
                         + ("overstates" if implied > sp["std"] else "understates") + " the spread)")
        lines.append("Not even the range estimator with the true extremes beats RS more often than not for "
                     + "; ".join(parts) + ": there the truth's extremes are not where a Gaussian's would be.")
    sentence = majority_text(frame, out)
    if sentence:
        lines.append(sentence)
    return "\n".join(lines)


def majority_text(frame, out: dict, alpha: float = 0.05) -> str:
    """"EDGE is closer than RS in more than half of the draws", said only where it holds.

    Counted over every draw (``out["exact_rs"]``: all of RS's triples, every random member), a
    share above 0.5 is a fact of the population of draws and is said as such ("of all draws").
    Over sampled triples it is an estimate: it is said only where a two-sided binomial test of
    ``k`` closer draws in ``n = out["num_triples"]`` against 1/2 rejects at ``alpha / L``
    (Bonferroni over the ``L`` learners; :func:`scipy.stats.binomtest`, exact), with its p.

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"learner": ["a", "b"], "protocol": ["EDGE"] * 2, "p_closer_w1": [0.52, 0.7]}
    ...                  ).set_index(["learner", "protocol"])
    >>> majority_text(f, {"exact_rs": False, "num_triples": 200})
    'EDGE as the paper runs it is closer than RS in more than half of the draws for b (0.70; binomial test over 200 sampled draws, p < 0.0001, Bonferroni over 2 learners); not shown to differ from half for a (0.52, p = 0.62).'
    >>> majority_text(f, {"exact_rs": True, "num_triples": 200})
    'EDGE as the paper runs it is closer than RS in more than half of all draws (counted over every draw, not sampled) for a (0.52), b (0.70).'
    """
    from scipy.stats import binomtest

    from .. import stats

    learners = list(dict.fromkeys(frame.index.get_level_values(0)))
    share = {n: float(frame.loc[(n, "EDGE"), "p_closer_w1"]) for n in learners}
    above = [n for n in learners if share[n] > 0.5]
    if not above:
        return ""
    if out.get("exact_rs"):
        return ("EDGE as the paper runs it is closer than RS in more than half of all draws (counted over every "
                "draw, not sampled) for " + ", ".join(f"{n} ({share[n]:.2f})" for n in above) + ".")
    n = int(out["num_triples"])
    p = {m: float(binomtest(int(round(share[m] * n)), n, 0.5).pvalue) for m in above}
    level = alpha / len(learners)
    shown = [m for m in above if p[m] < level]
    rest = [m for m in above if p[m] >= level]
    text = ""
    if shown:
        text = ("EDGE as the paper runs it is closer than RS in more than half of the draws for "
                + ", ".join(f"{m} ({share[m]:.2f}; binomial test over {n} sampled draws, {stats._p_text(p[m])}"
                            f"{', Bonferroni over ' + str(len(learners)) + ' learners' if len(learners) > 1 else ''})"
                            for m in shown))
    if rest:
        text += ("; not shown to differ from half for " if text else
                 "EDGE's share of draws closer than RS is not shown to differ from half for ") + \
            ", ".join(f"{m} ({share[m]:.2f}, {stats._p_text(p[m])})" for m in rest)
    return text + "."
