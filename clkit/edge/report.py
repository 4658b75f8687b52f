"""Tables and closing text of notebook 02_edge, computed from the run's numbers.

Every function here takes what the notebook computed (true accuracies, protocol
estimates, similarity sources) and returns a table (a ``pandas.DataFrame``), a dict
to record, or Markdown text; nothing is trained here. The notebook's cells are a few
calls into this module, :mod:`clkit.edge.plots` and the computing modules.
"""

from __future__ import annotations

import numpy as np

from .combinatorics import num_sequences
from .._validate import check_int

__all__ = ["SEQUENCE_COUNT_SETTINGS", "sequence_count_table", "sample_size_text", "extreme_sequences",
           "truth_table", "evaluate_protocols", "normality_table", "rankings", "correlations",
           "classic_settings", "similarity_sources", "summarise_sources", "source_text",
           "source_claim", "closing_text"]

#: (N, K) settings of Table A2 plus the classic 100 / 10 and 200 / 10
SEQUENCE_COUNT_SETTINGS = ((4, 2), (6, 2), (8, 2), (10, 2), (6, 3), (9, 3), (8, 4), (100, 10), (200, 10))


def sequence_count_table(settings=SEQUENCE_COUNT_SETTINGS):
    """|Omega| for each (N, K) of ``settings`` (Lemma 1) as a table, and as exact strings.

    Returns
    -------
    table : DataFrame
        Columns N, K, M, |Omega| (an integer below 10^9, else in scientific notation).
    counts : dict
        ``{"N/K": str(|Omega|)}`` (exact integers as strings, for results.json).

    Examples
    --------
    >>> table, counts = sequence_count_table([(6, 3), (100, 10)])
    >>> counts["6/3"], len(counts["100/10"])
    ('90', 93)
    >>> table["|Omega|"].tolist()
    [90, '2.357e+92']
    """
    import pandas as pd

    rows = []
    for n_, k_ in settings:
        om = num_sequences(n_, k_)
        rows.append({"N": n_, "K": k_, "M": n_ // k_, "|Omega|": om if om < 10**9 else f"{float(om):.3e}"})
    counts = {f"{r['N']}/{r['K']}": str(num_sequences(r["N"], r["K"])) for r in rows}
    return pd.DataFrame(rows), counts


def sample_size_text(num_classes: int = 100, num_tasks: int = 10, epsilon: float = 0.1, delta: float = 0.05,
                     value_range: float = 0.1):
    """Theorem 1 and 2 sample sizes for one setting, and the sentence that reports them.

    Returns
    -------
    numbers : dict
        ``theorem1_L_100_10``, ``theorem1_L_100_10_remark1``, ``theorem2_L_100_10_R01``
        (keys as recorded by the notebook).
    text : str
        Markdown.
    """
    from .estimation import theorem1_sample_size, theorem2_sample_size

    L1 = theorem1_sample_size(num_classes, num_tasks, epsilon, delta)
    L1_approx = theorem1_sample_size(num_classes, num_tasks, epsilon, delta, approx=True)
    L2 = theorem2_sample_size(num_classes, num_tasks, value_range=value_range, epsilon=epsilon, delta=delta)
    text = (f"For N = {num_classes}, K = {num_tasks}, ε = {epsilon:g}, δ = {delta:g}: Theorem 1 needs "
            f"**L ≥ {L1:,}** random sequences (Remark 1's approximation $N\\ln(N/e)$: {L1_approx:,}, "
            f"the paper's 'order of 2·10⁴'); with the extremes known and R = {value_range:g}, "
            f"Theorem 2 needs **L ≥ {L2}** (the paper says 'around 50', which matches a "
            f"base-10 logarithm of |Ω| ≈ 10⁹²; with the natural log as in Eq. 4 it is {L2}).")
    return {"theorem1_L_100_10": L1, "theorem1_L_100_10_remark1": L1_approx, "theorem2_L_100_10_R01": L2}, text


def _method(info) -> str:
    """How the improved sequence was found, in words ("exhaustive search" when every sequence was scored)."""
    return {"exhaustive": "exhaustive search", "local search": "local search"}.get(info.get("method"), "paper algorithm")


def extreme_sequences(sim, num_tasks: int, class_names, *, granularities=None, num_random: int = 10_000,
                      seed: int = 0):
    """Hard and easy sequences of ``sim`` with their S(O) and S-percentile among random sequences.

    Returns
    -------
    out : dict
        ``hard`` / ``easy`` (K, M) arrays, ``hard_info`` / ``easy_info`` (the generators'
        info), ``table`` (DataFrame), ``log`` (the values the notebook records).
    """
    import pandas as pd

    from .sequences import easy_sequence, hard_sequence, score_percentile

    hard, hard_info = hard_sequence(sim, num_tasks, granularities=granularities, return_info=True)
    easy, easy_info = easy_sequence(sim, num_tasks, granularities=granularities, return_info=True)
    rows, log = [], {}
    for name, seq, info in [("hard", hard, hard_info), ("easy", easy, easy_info)]:
        pct = score_percentile(sim, seq, num_random=num_random, seed=seed)
        rows.append({
            "sequence": name,
            "tasks": [[class_names[c] for c in t] for t in seq],
            "S (paper algorithm)": round(info["paper_score"], 4),
            f"S (after {_method(info)})": round(info["score"], 4),
            "percentile among random": round(pct, 2),
        })
        log.update({f"{name}_sequence": seq, f"{name}_score": info["score"],
                    f"{name}_paper_score": info["paper_score"], f"{name}_percentile": pct})
    return {"hard": hard, "easy": easy, "hard_info": hard_info, "easy_info": easy_info,
            "table": pd.DataFrame(rows), "rows": rows, "log": log}


def truth_table(truth: dict):
    """Mean, std, min and max of every learner's true accuracies (a DataFrame, rounded)."""
    import pandas as pd

    return pd.DataFrame({name: {"mean": v.mean(), "std": v.std(), "min": v.min(), "max": v.max()}
                         for name, v in truth.items()}).T.round(2)


def ground_truth(data: dict, all_sequences, own_learners, user_learners=(), config=None, *, seed: int = 0,
                 learner_kwargs: dict | None = None, mode: str = "exact", samples: int = 256, extra=None,
                 progress: bool = True, device=None, precision: str | None = None,
                 memory_budget: int | None = None):
    """Train the learners on all sequences (``mode="exact"``) or on a uniform sample of them.

    ``own_learners`` are the batched learners of :mod:`clkit.edge.learners`
    (:func:`~clkit.edge.experiment.run_learners`), ``user_learners`` ordinary strategies
    trained sequence after sequence (:func:`~clkit.edge.learners.train_strategy_sequences`,
    what :func:`clkit.plugins.train_sequences_sequentially` runs); accuracies are Eq. 1's
    average incremental accuracy in percent. ``extra`` sequences (EDGE's, RS's) are trained
    beside the sample; any other sequence is trained when a report first needs it
    (:class:`~clkit.edge.truth.GroundTruth`). Every learner trains on ``device`` (a
    ``RunDevice`` brings its precision) in chunks that fit ``memory_budget`` (default: the
    device's, :func:`clkit.edge.memory.memory_budget`); the accuracies come back to the host.

    Returns
    -------
    clkit.edge.truth.GroundTruth
    """
    from ..plugins import resolve_strategy
    from .experiment import run_learners
    from .learners import LearnerConfig, train_strategy_sequences
    from .truth import GroundTruth

    config = LearnerConfig() if config is None else config
    kwargs = learner_kwargs or {}
    calls = {"n": 0}

    def train(seqs):
        calls["n"] += 1
        out = run_learners(data, seqs, list(own_learners), config, seed=seed, learner_kwargs=kwargs,
                           progress=progress and calls["n"] == 1, device=device, precision=precision,
                           memory_budget=memory_budget) if own_learners else {}
        out = {name: 100 * r["avg_acc"] for name, r in out.items()}
        for u in user_learners:  # an ordinary Strategy: sequence after sequence, same protocol
            out[u] = 100 * train_strategy_sequences(
                data["x_train"], data["x_test"], seqs, resolve_strategy(u, parameter="learners"), config,
                seed=seed, strategy_kwargs=kwargs.get(u), device=device, precision=precision,
                memory_budget=memory_budget)["avg_acc"]
        return out

    return GroundTruth(train, all_sequences, mode=mode, samples=samples, seed=seed, extra=extra)


def protocol_sequences(num_classes: int, num_tasks: int, hard, easy, image_sim=None, *, seeds=(0, 42, 1993),
                       edge_num_random: int = 1, granularities=None) -> dict:
    """The sequences each protocol of notebook 02 evaluates: ``{"RS", "EDGE"[, "EDGE-img"]}``.

    RS: the sequences of ``seeds`` (PyCIL's class shuffle); EDGE: ``hard``, ``edge_num_random``
    random sequences (the first RS seeds', then further seeds) and ``easy``; EDGE-img: the
    same with hard / easy from ``image_sim`` (the image-prototype similarity).

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
    medium = random_sequences(num_classes, num_tasks, seeds=medium_seeds)
    out = {"RS": random_sequences(num_classes, num_tasks, seeds=seeds),
           "EDGE": np.concatenate([np.asarray(hard)[None], medium, np.asarray(easy)[None]])}
    if image_sim is not None:
        out["EDGE-img"] = np.concatenate([hard_sequence(image_sim, num_tasks, granularities=granularities)[None],
                                          medium,
                                          easy_sequence(image_sim, num_tasks, granularities=granularities)[None]])
    return out


def correlation_table(**corrs):
    """Pearson R per learner (rows) for each named correlation dict (columns), rounded."""
    import pandas as pd

    return pd.DataFrame({label: {n: c["r"] for n, c in corr.items()} for label, corr in corrs.items()}).round(3)


def evaluate_protocols(truth, all_sequences, protocol_sequences: dict, *, num_bins: int = 10,
                       num_boot: int = 200, seed: int = 0):
    """Every protocol's Gaussian estimate judged against every learner's truth.

    Parameters
    ----------
    truth : dict or clkit.edge.truth.GroundTruth
        ``{learner: accuracies (L,)}`` over ``all_sequences`` (exact), or a ground truth
        whose population stands for them (the protocols' sequences are trained on demand).
    all_sequences : ndarray, shape (L, K, M)
    protocol_sequences : dict
        ``{protocol: sequences (P, K, M)}``.
    num_boot, seed : int
        Bootstrap resamples of a sampled population for the sampling error of JSD / W1
        (``jsd_se`` / ``wasserstein_se``) and their plug-in bias (``jsd_bias`` /
        ``wasserstein_bias``: estimate minus bias is the first-order corrected value); not
        computed for an exact truth.

    Returns
    -------
    dict
        ``table`` ``{(learner, protocol): evaluate_protocol(...)}`` plus ``(learner,
        "truth")`` rows; ``values`` ``{(learner, protocol): sampled accuracies}``;
        ``frame`` (DataFrame for display); ``log`` (the values the notebook records).
    """
    import pandas as pd

    from .compare import distances_many
    from .experiment import evaluate_protocol, sequence_index
    from .truth import bootstrap, resolve_truth

    protocols = {p: sequence_index(all_sequences, s) for p, s in protocol_sequences.items()}
    needed = np.concatenate(list(protocols.values())) if protocols else None
    values_all, pop = resolve_truth(truth, all_sequences, needed)
    sampled = len(pop) < len(all_sequences)
    table, values = {}, {}
    for name, acc in values_all.items():
        true = acc[pop]
        for proto, idx in protocols.items():
            table[(name, proto)] = evaluate_protocol(true, acc[idx], num_bins=num_bins)
            values[(name, proto)] = acc[idx]
            if sampled:
                def both(t, x=acc[idx]):
                    d = distances_many(t, x, num_bins=num_bins)
                    return [float(d["jsd"][0]), float(d["wasserstein"][0])]

                bt = bootstrap(both, true, num_boot=num_boot, seed=seed)
                table[(name, proto)].update(jsd_se=float(bt["se"][0]), wasserstein_se=float(bt["se"][1]),
                                            jsd_bias=float(bt["bias"][0]), wasserstein_bias=float(bt["bias"][1]))
        table[(name, "truth")] = {"mean": true.mean(), "std": true.std(), "min": true.min(), "max": true.max()}
    cols = ["mean", "std", "min", "max", "jsd", "wasserstein"] + (
        ["jsd_se", "wasserstein_se", "jsd_bias", "wasserstein_bias"] if sampled else [])
    frame = pd.DataFrame(table).T[cols].round(3)
    frame["accuracies (EDGE: hard, random, easy)"] = [
        ", ".join(f"{v:.1f}" for v in values[key]) if key in values else
        ("all" if not sampled else f"sample of {len(pop)}") for key in frame.index]
    log = {"protocols": {f"{n}/{p}": {k: float(v) for k, v in row.items()} for (n, p), row in table.items()}}
    # JSD and W1 of each protocol averaged over this run's learners, under keys that do not
    # name a learner, so the rows of a sweep over learners line up
    log_mean = {"protocol_mean": {p: {m: float(np.mean([table[(n, p)][m] for n in values_all]))
                                      for m in ("jsd", "wasserstein")} for p in protocols}}
    return {"table": table, "values": values, "frame": frame, "log": log, "log_mean": log_mean,
            "protocols": list(protocols)}


def normality_table(truth: dict):
    """Box-Cox + three normality tests per learner (Table A3): ``(dict, DataFrame)``."""
    import pandas as pd

    from .estimation import normality_tests

    normal = {name: normality_tests(acc) for name, acc in truth.items()}
    return normal, pd.DataFrame(normal).T.round(4)


def rankings(truth: dict, values: dict, protocols):
    """Rankings by lower / upper bound and stability under the truth and each protocol.

    Returns ``(rows, ranking_error)``: ``rows`` ``{(dimension, protocol): ranks}`` and the
    total Spearman footrule per protocol (Tables A5/A6).
    """
    from .estimation import rank_methods, ranking_distance

    rows, err = {}, {p: 0 for p in protocols}
    if len(truth) >= 2:
        for dim in ("lower", "upper", "stability"):
            ref = rank_methods(truth, dim)
            rows[(dim, "truth")] = ref
            for proto in protocols:
                r = rank_methods({n: values[(n, proto)] for n in truth}, dim)
                rows[(dim, proto)] = r
                err[proto] += ranking_distance(ref, r)
    return rows, err


def correlations(scores, truth: dict) -> dict:
    """Pearson R of ``scores`` with every learner's accuracies: ``{learner: {"r", "p"}}``."""
    from .estimation import similarity_correlation

    return {name: similarity_correlation(scores, acc) for name, acc in truth.items()}


_CLASSIC_SHOWN = ["num_classes", "num_sequences", "hard_paper_S", "hard_S", "hard_percentile", "random_S_min",
                  "random_S_mean", "random_S_max", "easy_paper_S", "easy_S", "easy_percentile"]


def classic_settings(names_by_dataset: dict, num_tasks: int, encoder, *, num_random: int, seed: int,
                     clip_model: str = "ViT-B-16", clip_pretrained: str = "openai", device=None):
    """Hard / easy sequences of the classic settings from their class names alone.

    Returns ``(classic, table)``: ``{dataset: numbers and sequences}`` and a DataFrame
    of the numbers (None without datasets). The text encoder runs on ``device``.
    """
    import pandas as pd

    from .sequences import easy_sequence, hard_sequence, random_scores, score_percentile
    from .similarity import class_similarity

    classic = {}
    for ds, names in names_by_dataset.items():
        csim = class_similarity(names, encoder, clip_model=clip_model, clip_pretrained=clip_pretrained,
                                device=device)
        h, hi = hard_sequence(csim, num_tasks, return_info=True)
        e, ei = easy_sequence(csim, num_tasks, return_info=True)
        rnd = random_scores(csim, num_tasks, num_random=num_random, seed=seed)
        classic[ds] = {
            "num_classes": len(names), "encoder": csim.encoder,
            "num_sequences": "%.3e" % num_sequences(len(names), num_tasks),
            "hard_paper_S": hi["paper_score"], "hard_S": hi["score"],
            "hard_percentile": score_percentile(csim, h, num_random=num_random, seed=seed),
            "random_S_mean": float(rnd.mean()), "random_S_min": float(rnd.min()),
            "random_S_max": float(rnd.max()),
            "easy_paper_S": ei["paper_score"], "easy_S": ei["score"],
            "easy_percentile": score_percentile(csim, e, num_random=num_random, seed=seed),
            "hard_first_task": [names[c] for c in h[0]], "easy_first_task": [names[c] for c in e[0]],
            "hard_sequence": h, "easy_sequence": e,
        }
    table = (pd.DataFrame({d: {k: v[k] for k in _CLASSIC_SHOWN} for d, v in classic.items()})
             if classic else None)
    return classic, table


def similarity_sources(sources, *, name_sim, class_names, data: dict, hidden: int, seed: int, num_null: int,
                       clip_model: str = "ViT-B-16", clip_pretrained: str = "openai", log=print, device=None,
                       precision: str | None = None):
    """The similarity matrices of the sources compared in section 9.

    Returns ``(matrices, null_labels)``: ``{label: (N, N) matrix}`` in the order of
    ``sources`` (the random null as ``num_null`` seeded matrices ``"random #j"``) and the
    labels of the null's matrices. An encoder that cannot load is skipped with a note.
    Text encoders and the data sources' MLP probes run on ``device`` (probes trained in
    ``precision``).
    """
    from .similarity import EncoderUnavailableError, class_similarity

    out = {}
    N = len(class_names)
    for src in sources:
        if src == "names":
            out[f"names ({name_sim.encoder.split(':')[0]})"] = name_sim.matrix
        elif src in ("clip", "minilm", "glove"):
            if name_sim.encoder.startswith(src):
                continue  # the same as "names"
            try:
                out[f"names ({src})"] = class_similarity(class_names, src, clip_model=clip_model,
                                                         clip_pretrained=clip_pretrained, device=device).matrix
            except (EncoderUnavailableError, ImportError, OSError) as exc:
                log(f"{src} skipped: {exc}")
        elif src in ("features", "confusion"):
            res = class_similarity(source=src, x=data["x_train"], class_names=class_names, hidden=hidden,
                                   epochs=5, seed=seed, device=device, precision=precision)
            out[src] = res.matrix
            log(f"{src}: {res.encoder}")
        elif src == "backbone":
            out["backbone"] = class_similarity(source="features", features=data["f_train"],
                                               class_names=class_names).matrix
    null_labels = []
    if "random" in sources:
        for j in range(num_null):
            null_labels.append(f"random #{j}")
            out[null_labels[-1]] = class_similarity(source="random", num_classes=N, seed=seed + j).matrix
    return out, null_labels


def summarise_sources(rows, null_labels):
    """One row per source: means over learners, winner counts; the null seeds pooled."""
    import pandas as pd

    df = pd.DataFrame(rows)
    df["group"] = ["random (null)" if r in null_labels else r for r in df["source"]]
    out = {}
    for group, g in df.groupby("group", sort=False):
        per_src = g.groupby("source")["r"].mean()
        out[group] = {
            "R (mean over learners)": g["r"].mean(),
            "R sd over null seeds": per_src.std(ddof=1) if len(per_src) > 1 else np.nan,
            "hard acc. pct": g["hard_pct"].mean(),
            "easy acc. pct": g["easy_pct"].mean(),
            "EDGE JSD": g["edge_jsd"].mean(),
            "RS JSD": g["rs_jsd"].mean(),
            "EDGE W1": g["edge_w1"].mean(),
            "RS W1": g["rs_w1"].mean(),
            "EDGE wins JSD": int((g["jsd_winner"] == "EDGE").sum()),
            "RS wins JSD": int((g["jsd_winner"] == "RS").sum()),
            "EDGE wins W1": int((g["w1_winner"] == "EDGE").sum()),
            "RS wins W1": int((g["w1_winner"] == "RS").sum()),
            "cases": len(g),
        }
    table_ = pd.DataFrame(out).T
    counts = ["EDGE wins JSD", "RS wins JSD", "EDGE wins W1", "RS wins W1", "cases"]
    return table_.astype({c: int for c in counts} | {c: float for c in table_ if c not in counts})


def source_means(summary) -> dict:
    """Per-source means under short keys that do not depend on the sources chosen.

    So the rows of a sweep over seeds line up (``clkit summary --columns "source_mean.*"``).
    """
    return {g: {"r": float(row["R (mean over learners)"]), "hard_pct": float(row["hard acc. pct"]),
                "easy_pct": float(row["easy acc. pct"]),
                "edge_wins": int(row["EDGE wins JSD"] + row["EDGE wins W1"]),
                "rs_wins": int(row["RS wins JSD"] + row["RS wins W1"])}
            for g, row in summary.iterrows()}


def source_text(summary, label: str, num_null: int, num_learners: int):
    """Plain statements about the sources, from the summary table: ``(text, winners)``."""
    if summary is None or not len(summary):
        return "", []
    real = [g for g in summary.index if g != "random (null)"]
    lines = []
    if "random (null)" in summary.index:
        nr = summary.loc["random (null)", "R (mean over learners)"]
        nsd = summary.loc["random (null)", "R sd over null seeds"]
        nsd = 0.0 if not np.isfinite(nsd) else nsd
        above = [g for g in real if summary.loc[g, "R (mean over learners)"] > nr + 2 * nsd]
        lines.append(f"the null (random similarity, {num_null} seeds) gives mean R {nr:+.2f} "
                     f"(sd {nsd:.2f}); sources above null mean + 2 sd: {', '.join(above) or 'none'}")
    rs_list = "; ".join(f"{g} {summary.loc[g, 'R (mean over learners)']:+.2f}" for g in real)
    lines.append(f"mean R per source: {rs_list}")
    S_ = summary
    pct = "; ".join(f"{g} {S_.loc[g, 'hard acc. pct']:.0f}/{S_.loc[g, 'easy acc. pct']:.0f}" for g in real)
    lines.append(f"hard/easy accuracy percentiles (ideal 0/100): {pct}")
    winners = [g for g in real
               if summary.loc[g, "EDGE wins JSD"] > summary.loc[g, "cases"] / 2
               and summary.loc[g, "EDGE wins W1"] > summary.loc[g, "cases"] / 2]
    wins = "; ".join(f"{g} JSD {S_.loc[g, 'EDGE wins JSD']}/{S_.loc[g, 'RS wins JSD']}, "
                     f"W1 {S_.loc[g, 'EDGE wins W1']}/{S_.loc[g, 'RS wins W1']}" for g in real)
    lines.append(f"learners where EDGE / RS is significantly closer (paired t over the draws, Holm; of "
                 f"{num_learners}): {wins}")
    return f"*{label}:* " + "; ".join(lines) + ".", winners


def source_study(sims: dict, null_labels, truth, all_sequences, num_tasks: int, *, intra_weight: float = 0.0,
                 num_null: int = 5, edge_num_random: int = 1, num_draws: int = 30, num_bins: int = 10,
                 seed: int = 0) -> dict:
    """Section 9 of notebook 02: every similarity source judged on the truth, with its texts.

    Runs :func:`~clkit.edge.compare.compare_sources` with the paper's ``S`` and, when
    ``intra_weight`` is not 0, with the generalised score ``S + intra_weight * I``;
    summarises both (:func:`summarise_sources`) and words them (:func:`source_text`,
    :func:`source_claim`).

    Returns
    -------
    dict
        ``rows`` / ``gen_rows`` (per source and learner), ``summary`` / ``gen_summary``
        (DataFrames; ``gen_summary`` is None without the generalised score), ``tables``
        (``[(title, DataFrame)]`` to display), ``text`` / ``gen_text`` / ``claim``
        (Markdown for the closing text) and ``log`` (for results.json).
    """
    import pandas as pd

    from .compare import compare_sources

    kw = dict(edge_num_random=edge_num_random, num_draws=num_draws, num_bins=num_bins, seed=seed)
    rows = compare_sources(sims, truth, all_sequences, num_tasks, **kw)
    gen_rows = compare_sources(sims, truth, all_sequences, num_tasks, intra_weight=intra_weight, **kw) \
        if intra_weight else []
    summary = summarise_sources(rows, null_labels)
    gen_summary = summarise_sources(gen_rows, null_labels) if gen_rows else None
    learners = list(dict.fromkeys(r["learner"] for r in rows))
    per_learner = pd.DataFrame(rows).pivot(index="source", columns="learner", values="r")[learners]
    tables = [("**Paper's score S(O)** (means over learners; wins counted over learners (x null seeds), "
               "significant by paired t over the draws, Holm)", summary.round(3)),
              ("Pearson R(S(O), A(O)) per source and learner", per_learner.round(2))]
    text, winners = source_text(summary, "paper's S", num_null, len(learners))
    gen_text, gen_winners = "", []
    if gen_summary is not None:
        tables.append((f"**Generalised score {score_label(intra_weight)}** (beyond the paper)", gen_summary.round(3)))
        gen_text, gen_winners = source_text(gen_summary, score_label(intra_weight), num_null, len(learners))
    names_labels = [g for g in summary.index if g.startswith("names")]
    N = int(np.asarray(all_sequences).shape[1] * np.asarray(all_sequences).shape[2])
    claim = source_claim(winners + gen_winners, names_labels, N, num_tasks)
    log = {"source_comparison": rows, "source_comparison_generalised": gen_rows,
           "source_summary": summary.to_dict(orient="index"),
           "source_summary_generalised": gen_summary.to_dict(orient="index") if gen_summary is not None else {},
           "source_mean": source_means(summary),
           "paper_claim_supported_by": sorted(set(winners + gen_winners))}
    return {"rows": rows, "gen_rows": gen_rows, "summary": summary, "gen_summary": gen_summary, "tables": tables,
            "text": text, "gen_text": gen_text, "claim": claim, "log": log}


def source_claim(winners, names_labels, N: int, K: int) -> str:
    """The sentence on the paper's claim, from the sources whose EDGE beat RS."""
    if winners:
        return ("EDGE's estimate is significantly closer to the truth than RS's (paired t over the draws, Holm) "
                "for most learners on both metrics with: "
                f"{', '.join(sorted(set(winners)))}. "
                + ("That includes a class-name similarity, as the paper proposes."
                   if any(g in names_labels for g in winners)
                   else "None of them is a class-name similarity, the paper's choice: with "
                        "names the claim is not reproduced here."))
    return ("No similarity source made EDGE's estimate significantly closer to the truth than RS's "
            "(paired t over the draws, Holm) for most learners on both JSD and W1. On this setting "
            f"({N} Fashion-MNIST classes in {K} tasks, small MLP learners) the run does "
            "not support the paper's claim that EDGE approximates the accuracy "
            "distribution better than RS; what differs between sources is how close their "
            "hard/easy sequences come to the accuracy extremes and how well their score "
            "tracks accuracy (above).")


def closing_text(*, truth, table, corr, corr_img, corr_intra, normal, rank_err, agree, seq_rows, hard_info,
                 easy_info, encoder, num_sequences_run, N, K, L1, num_draws, src_text, gen_text, claim,
                 structure=None, truth_text: str = "", draws=None):
    """The 'What this run shows' Markdown and the lists the notebook records.

    ``structure`` is :func:`structure_report`'s ``table``: with it, a weak correlation is
    attributed from the numbers -- to the S-class ceiling (eta^2 near its chance value:
    no similarity scored through S(O) could do better) or to the similarity (eta^2 well
    above R^2) -- instead of to the similarity by default. ``truth_text`` says which
    ground truth the numbers come from (:meth:`~clkit.edge.truth.GroundTruth.describe`).
    ``draws`` is :func:`draws_report`'s ``frame``: with it the RS-vs-EDGE bullet leads with
    P(EDGE closer) over every draw (and the oracle's), the paper's single seeds second.

    Returns ``(markdown, log)``.
    """
    learners = list(truth)
    better_jsd = [n for n in learners if table[(n, "EDGE")]["jsd"] < table[(n, "RS")]["jsd"]]
    img_better_jsd = [n for n in learners if table[(n, "EDGE-img")]["jsd"] < table[(n, "RS")]["jsd"]]
    img_better_w = [n for n in learners
                    if table[(n, "EDGE-img")]["wasserstein"] < table[(n, "RS")]["wasserstein"]]
    better_w = [n for n in learners if table[(n, "EDGE")]["wasserstein"] < table[(n, "RS")]["wasserstein"]]
    wider = [n for n in learners if table[(n, "EDGE")]["range_coverage"] > table[(n, "RS")]["range_coverage"]]
    rs_std_under = [n for n in learners if table[(n, "RS")]["std"] < truth[n].std()]
    pos_corr = [n for n in learners if corr[n]["r"] > 0]
    gauss = [n for n in learners
             if np.nansum([normal[n][k] > 0.05 for k in ("shapiro_p", "dagostino_p", "ks_p")]) >= 2]
    clear = [n for n in learners if corr[n]["r"] > 0.2 and corr[n]["p"] < 0.05]
    if len(clear) > len(learners) / 2:
        verdict = "Accuracy rises clearly with S(O) for most learners, as in the paper's Fig. 2c."
    elif structure is None:
        verdict = (f"Only {len(clear)} of {len(learners)} learners show a clear positive correlation "
                   "(R > 0.2, p < 0.05).")
    else:
        capped = [n for n in learners if n in structure.index and
                  structure.loc[n, "eta^2 S-classes"] - structure.loc[n, "eta^2 by chance"] < 0.1]
        room = [n for n in learners if n in structure.index and n not in capped and
                structure.loc[n, "eta^2 S-classes"] - structure.loc[n, "R^2"] >= 0.1]
        parts = [f"Only {len(clear)} of {len(learners)} learners show a clear positive correlation "
                 "(R > 0.2, p < 0.05)."]
        if capped:
            parts.append(f"For {', '.join(capped)} the S-class ceiling eta^2 is within 0.1 of its chance value "
                         f"({structure['eta^2 by chance'].iloc[0]:.2f}): no similarity scored through S(O) "
                         "could rank these orders much better, whatever its source.")
        if room:
            parts.append(f"For {', '.join(room)} eta^2 exceeds R^2 by 0.1 or more: a function of S could "
                         f"explain more than the {encoder} names' S does, so there the similarity is the limit.")
        first = [n for n in learners if n in structure.index and
                 structure.loc[n, "eta^2 first task"] > structure.loc[n, "eta^2 S-classes"]]
        if first:
            parts.append(f"The first task alone explains more of the spread than any function of S for "
                         f"{', '.join(first)}.")
        verdict = " ".join(parts)
    narrow = [n for n in learners if table[(n, "EDGE")]["std"] < truth[n].std()]
    log = {"edge_std_below_truth": narrow, "edge_better_jsd": better_jsd, "edge_better_w": better_w,
           "edge_img_better_jsd": img_better_jsd, "edge_img_better_w": img_better_w,
           "edge_wider_range": wider, "rs_underestimates_std": rs_std_under,
           "positive_correlation": pos_corr, "near_gaussian": gauss}
    over_draws = ""
    if draws is not None:
        def p(n, proto):
            return draws.loc[(n, proto), "p_closer_w1"]
        over_draws = ("Over every draw, P(EDGE's W1 < RS's) is "
                      + ", ".join(f"{n} {p(n, 'EDGE'):.2f}" for n in learners)
                      + "; handed the true extremes (oracle): "
                      + ", ".join(f"{n} {p(n, 'oracle'):.2f}" for n in learners) + ". ")
    truth_line = f"* **Ground truth.** {truth_text[0].upper() + truth_text[1:]}.\n" if truth_text else ""
    text = f"""
{truth_line}* **Combinatorics.** {N} classes in {K} tasks give {num_sequences_run} sequences; 100
  classes in 10 tasks give about 10^{len(str(num_sequences(100, 10))) - 1}, so
  three random sequences say little about the distribution (Theorem 1 asks for {L1:,} of
  them at ε = 0.1, δ = 0.05).
* **Similarity and sequences** ({encoder}). The hard sequence sits at the
  percentile {seq_rows[0]['percentile among random']:.1f} and the easy one at percentile
  {seq_rows[1]['percentile among random']:.1f} of S(O) among random
  sequences. The {_method(hard_info)} changed S from {hard_info['paper_score']:.3f} to
  {hard_info['score']:.3f} (hard) and {easy_info['paper_score']:.3f} to
  {easy_info['score']:.3f} (easy).
* **RS vs EDGE** over {len(learners)} learners. {over_draws}With the paper's seeds alone
  (one draw each, which decides nothing) EDGE's Gaussian is closer to the truth in
  JSD for {len(better_jsd)} ({', '.join(better_jsd) or 'none'}) and in Wasserstein
  distance for {len(better_w)} ({', '.join(better_w) or 'none'}); its sampled range is
  wider than RS's for {len(wider)}. RS underestimates the true standard deviation for
  {len(rs_std_under)} of {len(learners)} learners. Total ranking error: RS
  {rank_err['RS']}, EDGE {rank_err['EDGE']}, EDGE-img {rank_err['EDGE-img']}. With the
  image-prototype similarity (MAE {agree['mae']:.2f}, Spearman {agree['spearman']:.2f}
  against the text similarity), EDGE-img beats RS in JSD for {len(img_better_jsd)} and
  in W for {len(img_better_w)} learners (single draws too; section 6's verdicts pair
  {num_draws} draws, section 9 judges each source over them). EDGE's implied std (from the
  accuracies listed in the table) is below the true std for {len(narrow)} of
  {len(learners)} learners.
* **Similarity sources (section 9).** {src_text} {gen_text}
  Intra-task similarity I(O) of the {encoder} names vs accuracy:
  {', '.join(f"{n} {corr_intra[n]:+.2f}" for n in learners)}.
* **The paper's claim.** {claim}
* **Near-Gaussian truth** (>= 2 of 3 tests with p > 0.05 after Box-Cox):
  {', '.join(gauss) or 'none'}.
* **Similarity vs accuracy.** Pearson R is positive for {len(pos_corr)} of {len(learners)}
  learners ({', '.join(f"{n} {corr[n]['r']:.2f}" for n in learners)}); with the image
  similarity: {', '.join(f"{n} {corr_img[n]['r']:.2f}" for n in learners)}. {verdict}
"""
    return text, log


def check_edge_learner_kwargs(learner_kwargs, learners) -> dict:
    """Validate the notebook's ``learner_kwargs`` for this run's ``learners``.

    The built-in learners accept the :class:`~clkit.edge.learners.LearnerConfig` fields
    listed in :data:`~clkit.edge.learners.LEARNER_KEYWORDS`; any other (a Strategy) its
    constructor's keywords except those the notebook supplies (model, optimiser, epochs,
    batch size, scenario, seed).

    Examples
    --------
    >>> check_edge_learner_kwargs({"ewc": {"ewc_lambda": 100.0}}, ["finetune", "ewc"])
    {'ewc': {'ewc_lambda': 100.0}}
    >>> check_edge_learner_kwargs({"ncm": {"lr": 0.1}}, ["ncm"])
    Traceback (most recent call last):
    ...
    ValueError: learner_kwargs['ncm']: unknown keyword 'lr'; ncm takes no settings
    """
    from ..learner_kwargs import allowed_keywords, check_learner_kwargs
    from ..plugins import resolve_strategy
    from .learners import LEARNER_KEYWORDS, LearnerConfig

    base = LearnerConfig()
    allowed = {}
    for name in learners:
        if name in LEARNER_KEYWORDS:
            allowed[name] = {k: getattr(base, k) for k in LEARNER_KEYWORDS[name]}
        else:
            allowed[name] = allowed_keywords(resolve_strategy(name, parameter="learners"),
                                             exclude=("model", "optimizer", "epochs", "batch_size", "scenario",
                                                      "seed", "device", "precision"))
    return check_learner_kwargs(learner_kwargs, allowed, learners=list(learners))


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
    from .structure import structure_table, tie_members, tie_percentiles
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
        ties_frame = ties_frame.drop(columns="pct_se")
    n_cls = int(table["S classes"].iloc[0]) if len(table) else 0
    chance = float(table["eta^2 by chance"].iloc[0]) if len(table) else float("nan")
    where = (f"over all {len(scores):,} sequences" if not sampled else
             f"over the uniform sample of {len(pop):,} of the {len(scores):,} sequences (so eta^2 by chance "
             f"is high when most S-classes hold one sampled sequence)")
    lines = [f"S(O) takes {n_cls} distinct values {where}; every sequence has the "
             f"same S as its reverse, so S cannot tell them apart. With {n_cls} S-classes eta^2 is "
             f"{chance:.2f} by chance alone (accuracy unrelated to S)."]
    for name, row in table.iterrows():
        rev = row["mean |A(O) - A(reverse)|"]
        rev_text = (f"a sequence and its reverse differ by {rev:.2f} points on average" if np.isfinite(rev)
                    else "no sequence of the sample has its reverse in it (reversal gap not measured)")
        lines.append(f"- {name}: R = {row['R']:.2f} (R^2 = {row['R^2']:.2f}); any function of S could explain at "
                     f"most eta^2 = {row['eta^2 S-classes']:.2f} of the variance, the first task alone "
                     f"{row['eta^2 first task']:.2f}; {rev_text}.")
    if sampled:
        se = float(ties_frame["pct_se"].max())
        lines.append(f"Percentiles are taken among the sample: each carries a sampling error of at most "
                     f"{se:.1f} percentile points (column pct_se).")
    log = {"structure": {n: {k: float(v) for k, v in r.items()} for n, r in table.iterrows()},
           "tie_percentiles": ties}
    return {"table": table, "ties": ties_frame, "text": "\n".join(lines), "log": log}


def edge_verdicts(truth, all_sequences, hard, easy, *, num_draws: int = 30, num_bins: int = 10,
                  seed: int = 0, small_n: int = 4, scores=None) -> dict:
    """RS versus EDGE judged by :mod:`clkit.stats`, paired over random draws, with controls.

    For each of ``num_draws`` draws, three random sequences ``r1, r2, r3`` (never EDGE's
    hard/easy) form RS and ``hard, r1, easy`` forms EDGE (common random numbers: the
    pairing unit is the draw). Per learner, two findings: the Wasserstein-1 distance of
    each Gaussian estimate to the true distribution (EDGE - RS; lower is closer) and the
    share of the true accuracy range the three accuracies span (EDGE - RS). Controls, on
    the first learner: two *nulls* that must come out no difference -- RS versus RS on an
    independent draw (W1), and a *random-similarity EDGE* (each draw takes the hard and
    easy sequence of its own seeded random similarity matrix, a similarity that knows
    nothing about the classes) versus RS (W1) -- and an *oracle* (EDGE handed the true
    hardest and easiest sequence: its range coverage must exceed RS's). The family is Holm-adjusted.
    With ``scores`` (S(O) of every sequence) a third finding per learner, beyond the
    paper: RS stratified by S(O) terciles (:func:`~clkit.edge.compare.stratified_draws`,
    three sequences like RS and EDGE) against RS, W1.

    ``truth`` is a dict ``{learner: (L,)}`` over ``all_sequences`` or a
    :class:`~clkit.edge.truth.GroundTruth`: random sequences are then drawn from its
    population (a uniform sample of a uniform sample is uniform), distances are taken to
    the population's distribution and the oracle is the population's hardest / easiest
    sequence. The verdicts are conditional on that population (its own sampling error is
    reported by :func:`evaluate_protocols` and :func:`structure_report`).

    Returns ``verdicts`` (list of Verdict), ``table`` (DataFrame), ``controls_hold``
    (bool) and ``summary`` (Markdown, ``stats.closing_text``).
    """
    from .. import stats
    from .compare import distances_many, stratified_draws
    from .experiment import sequence_index

    num_draws = check_int("num_draws", num_draws, low=2)
    from .data_similarity import data_class_similarity
    from .sequences import easy_sequence, hard_sequence
    from .truth import resolve_truth

    h, e = sequence_index(all_sequences, np.stack([hard, easy])).tolist()
    all_sequences = np.asarray(all_sequences)
    N, K = all_sequences.shape[1] * all_sequences.shape[2], all_sequences.shape[1]
    rand_ext = []                                      # hard / easy of a fresh random similarity per draw
    for d in range(num_draws):
        rsim = data_class_similarity("random", num_classes=N, seed=seed + 7919 * (d + 1)).matrix
        rand_ext.append([hard_sequence(rsim, K), easy_sequence(rsim, K)])
    rand_idx = sequence_index(all_sequences, np.array(rand_ext).reshape(-1, *all_sequences.shape[1:]))
    rand_idx = rand_idx.reshape(num_draws, 2)
    values, pop = resolve_truth(truth, all_sequences, np.concatenate([[h, e], rand_idx.ravel()]))
    rng = np.random.default_rng(seed)
    pool = np.setdiff1d(pop, [h, e])
    small = len(pool) < 3                               # tiny settings (e.g. 4 classes / 2 tasks)
    rs = np.array([rng.choice(pool, size=3, replace=small) for _ in range(num_draws)])
    rs2 = np.array([rng.choice(pool, size=3, replace=small) for _ in range(num_draws)])
    verdicts = []

    def coverage(acc, rows):
        span = np.ptp(acc[pop])
        return (acc[rows].max(axis=1) - acc[rows].min(axis=1)) / span if span > 0 else np.zeros(len(rows))

    for i, (name, acc) in enumerate(values.items()):
        acc = np.asarray(acc, dtype=float)
        true = acc[pop]
        edge_rows = np.column_stack([np.full(num_draws, h), rs[:, 0], np.full(num_draws, e)])
        w_rs = distances_many(true, acc[rs], num_bins=num_bins)["wasserstein"]
        w_edge = distances_many(true, acc[edge_rows], num_bins=num_bins)["wasserstein"]
        verdicts.append(stats.paired(w_edge, w_rs, comparison=f"{name}: W1 EDGE − RS", higher="RS closer",
                                     lower="EDGE closer"))
        verdicts.append(stats.paired(coverage(acc, edge_rows), coverage(acc, rs),
                                     comparison=f"{name}: range coverage EDGE − RS",
                                     higher="EDGE spans more", lower="RS spans more"))
        if scores is not None:
            strat = pop[stratified_draws(np.asarray(scores, dtype=float)[pop], 3, num_draws, seed=seed + 1)]
            w_st = distances_many(true, acc[strat], num_bins=num_bins)["wasserstein"]
            verdicts.append(stats.paired(w_st, w_rs, comparison=f"{name}: W1 stratified RS − RS",
                                         higher="RS closer", lower="stratified RS closer"))
        if i == 0:
            w_rs2 = distances_many(true, acc[rs2], num_bins=num_bins)["wasserstein"]
            verdicts.append(stats.paired(w_rs2, w_rs, comparison=f"{name}: W1 RS' − RS (null)",
                                         role="null control", expect="no difference"))
            rand_rows = np.column_stack([rand_idx[:, 0], rs[:, 0], rand_idx[:, 1]])
            w_rand = distances_many(true, acc[rand_rows], num_bins=num_bins)["wasserstein"]
            verdicts.append(stats.paired(w_rand, w_rs, comparison=f"{name}: W1 random-similarity EDGE − RS (null)",
                                         role="null control", expect="no difference"))
            oracle = np.column_stack([np.full(num_draws, int(pop[np.argmin(true)])), rs[:, 0],
                                      np.full(num_draws, int(pop[np.argmax(true)]))])
            verdicts.append(stats.paired(coverage(acc, oracle), coverage(acc, rs),
                                         comparison=f"{name}: range coverage oracle − RS",
                                         higher="oracle spans more", lower="RS spans more",
                                         role="oracle control", expect="oracle spans more"))
    verdicts = stats.holm(verdicts)
    ok, _ = stats.controls_hold(verdicts)
    return {"verdicts": verdicts, "table": stats.verdict_table(verdicts), "controls_hold": bool(ok),
            "summary": stats.closing_text(verdicts, subject="this run", small_n=small_n)}


def draws_report(truth, all_sequences, hard, easy, *, num_bins: int = 10, seed: int = 0,
                 max_triples: int = 200_000, num_samples: int = 10_000) -> dict:
    """RS, EDGE and the oracle over every draw (:mod:`clkit.edge.triples`), as a table and text.

    Returns ``frame`` (DataFrame indexed by learner and protocol), ``text`` (Markdown
    generated from the numbers: per learner P(EDGE closer) and the oracle's, and whether
    the three-point estimator or the similarity is the limit) and ``log``.
    """
    import pandas as pd

    from .triples import protocol_distributions

    out = protocol_distributions(truth, all_sequences, hard, easy, num_bins=num_bins, seed=seed,
                                 max_triples=max_triples, num_samples=num_samples)
    frame = pd.DataFrame(out["rows"]).set_index(["learner", "protocol"])
    how = (f"all {out['num_triples']:,} triples" if out["exact_rs"]
           else f"{out['num_triples']:,} uniformly drawn triples")
    lines = [f"Over every draw (RS: {how} of the truth's sequences; EDGE and the oracle: every one of "
             f"their {out['num_edge_draws']:,} choices of the random member), W1 to the truth:"]
    limited, sim_limited = [], []
    for name, g in frame.groupby(level=0, sort=False):
        e, o = g.loc[(name, "EDGE")], g.loc[(name, "oracle")]
        lines.append(f"- {name}: P(EDGE closer than RS) = {e['p_closer_w1']:.2f} (expected W1 difference "
                     f"{e['d_w1']:+.2f}); with the true extremes (oracle) {o['p_closer_w1']:.2f} "
                     f"({o['d_w1']:+.2f}).")
        if o["p_closer_w1"] < 0.5:
            limited.append(name)
        elif e["p_closer_w1"] < 0.5:
            sim_limited.append(name)
    if limited:
        lines.append(f"For {', '.join(limited)} even the true hardest and easiest sequences leave the "
                     "three-point Gaussian farther from the truth than RS more often than not: there the "
                     "estimator (two extremes and one draw fitted by one Gaussian), not the similarity, is "
                     "the limit.")
    if sim_limited:
        lines.append(f"For {', '.join(sim_limited)} the oracle is closer than RS more often than not while "
                     "EDGE is not: there the similarity's extremes are the limit.")
    log = {"draws": {f"{r['learner']}/{r['protocol']}": {k: v for k, v in r.items() if k not in ("learner", "protocol")}
                     for r in out["rows"]},
           "draws_num_triples": out["num_triples"], "draws_exact_rs": out["exact_rs"]}
    return {"frame": frame, "text": "\n".join(lines), "log": log}


def findings_markdown(results: dict) -> str:
    """The default run's findings for docs/02_edge.md, generated from its results.json.

    ``results`` is the ``"results"`` mapping of a run's results.json (or the whole file).
    Lists the setting (and which ground truth), the verdict summary (``summary``), RS / EDGE /
    the oracle over every draw (``draws_text``), what S(O) can explain per
    learner (R, the eta^2 ceiling, the first task's share, the reversal gap) and the
    tie-averaged accuracy percentiles of EDGE's hard and easy sequences.

    Examples
    --------
    >>> r = {"data_source": "toy", "num_enumerated": 90, "summary": "**Controls hold**",
    ...      "structure": {"ncm": {"R": 0.1, "R^2": 0.01, "eta^2 S-classes": 0.2, "eta^2 first task": 0.5,
    ...                            "mean |A(O) - A(reverse)|": 1.0, "S classes": 15}},
    ...      "tie_percentiles": {"ncm/hard": {"pct": 40.0, "pct_min": 10.0, "pct_max": 70.0, "tie_size": 6}}}
    >>> print(findings_markdown(r).splitlines()[0])
    Setting: toy; 90 sequences, all trained (exact ground truth).
    """
    r = results.get("results", results)
    truth = (f"{r['num_enumerated']:,} sequences, all trained (exact ground truth)." if r.get("truth_mode", "exact")
             == "exact" else r.get("truth_description", "sampled ground truth") + ".")
    lines = [f"Setting: {r['data_source']}; {truth}", "", r.get("summary", ""), ""]
    if r.get("draws_text"):
        lines += [r["draws_text"], ""]
    st = r.get("structure", {})
    if st:
        n_cls = int(next(iter(st.values()))["S classes"])
        chance = next(iter(st.values())).get("eta^2 by chance", float("nan"))
        lines += [f"What S(O) can explain ({n_cls:,} distinct S values, η² {chance:.2f} by chance alone; "
                  f"S(O) = S(reverse O) always):", "",
                  "| learner | R | R² | η² S-classes (ceiling of R²) | η² first task | mean abs. A(O) − A(reverse) |",
                  "|---|---|---|---|---|---|"]
        for name, row in st.items():
            lines.append(f"| {name} | {row['R']:.3f} | {row['R^2']:.3f} | {row['eta^2 S-classes']:.3f} | "
                         f"{row['eta^2 first task']:.3f} | {row['mean |A(O) - A(reverse)|']:.2f} |")
        lines.append("")
    ties = r.get("tie_percentiles", {})
    if ties:
        lines += ["Accuracy percentile of EDGE's sequences, averaged over their S-tie (range over the tie):", "",
                  "| learner / sequence | percentile | range | tie size |", "|---|---|---|---|"]
        for key, t in ties.items():
            lines.append(f"| {key} | {t['pct']:.1f} | {t['pct_min']:.1f}–{t['pct_max']:.1f} | {t['tie_size']} |")
    return "\n".join(lines).rstrip() + "\n"


def write_findings(results_json, doc_path, name: str = "findings-02_edge") -> str:
    """Replace the ``<!-- BEGIN generated: name -->`` block of ``doc_path`` with
    :func:`findings_markdown` of a run's results.json (atomic write); returns the block.

    The same text is written to ``docs/generated/<name>.md`` beside ``doc_path`` (the
    file ``clkit.docs`` checks the block against).

    Usage: ``python -c "from clkit.edge import report; report.write_findings('RUN/results.json',
    'docs/02_edge.md')"`` after ``clkit run 02 --params default --out RUN``.
    """
    import json
    from pathlib import Path

    from .._io import atomic_write_text

    text = findings_markdown(json.loads(Path(results_json).read_text()))
    doc = Path(doc_path).read_text()
    begin, end = f"<!-- BEGIN generated: {name} -->", f"<!-- END generated: {name} -->"
    if begin not in doc or end not in doc:
        raise ValueError(f"{doc_path} has no block {begin!r} ... {end!r}")
    head, rest = doc.split(begin, 1)
    atomic_write_text(Path(doc_path).parent / "generated" / f"{name}.md", text)
    atomic_write_text(doc_path, head + begin + "\n" + text + end + rest.split(end, 1)[1])
    return text


def score_label(intra_weight: float) -> str:
    """Name of the generalised score ``S + w I`` with the sign written once.

    Examples
    --------
    >>> score_label(-1.0), score_label(0.5)
    ('S − 1 I', 'S + 0.5 I')
    """
    w = float(intra_weight)
    return f"S − {abs(w):g} I" if w < 0 else f"S + {w:g} I"

