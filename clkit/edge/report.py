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
           "truth_table", "protocol_ties", "evaluate_protocols", "normality_table", "rankings", "correlations",
           "classic_settings", "similarity_sources", "summarise_sources", "source_text",
           "source_claim", "claim_text", "spread_text", "ceiling_text", "closing_text", "edge_verdicts",
           "draws_report", "draws_text", "structure_report", "findings_markdown", "write_findings"]

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
                 memory_budget: int | None = None, inputs: dict | None = None):
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
    ``inputs`` (``{strategy: (x_train, x_test, model_factory)}``, e.g.
    :func:`clkit.edge.images.strategy_inputs`) gives a strategy its own inputs and network (the
    image protocol's images, cached frozen features or ViT inputs); by default a strategy trains
    the one-hidden-layer MLP on ``data["x_train"]``.

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
            xtr, xte, factory = (inputs or {}).get(u, (data["x_train"], data["x_test"], None))
            out[u] = 100 * train_strategy_sequences(
                xtr, xte, seqs, resolve_strategy(u, parameter="learners"), config, seed=seed,
                model_factory=factory, strategy_kwargs=kwargs.get(u), device=device, precision=precision,
                memory_budget=memory_budget)["avg_acc"]
        return out

    return GroundTruth(train, all_sequences, mode=mode, samples=samples, seed=seed, extra=extra)


def truth_lookup(truth):
    """``train(sequences) -> {learner: accuracies}`` from a :class:`~clkit.edge.truth.GroundTruth`: the
    sequences' values, trained on demand where a sampled truth has not trained them (what
    :func:`clkit.edge.encoders.encoder_comparison` takes for sequences outside the population).

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> from clkit.edge.truth import GroundTruth
    >>> s = enumerate_sequences(4, 2)
    >>> gt = GroundTruth(lambda q: {"a": np.arange(len(q), dtype=float)}, s)
    >>> truth_lookup(gt)(s[[2, 4]])["a"].tolist()
    [2.0, 4.0]
    """
    def train(sequences):
        idx = truth.require(sequences)
        return {name: np.asarray(v)[idx] for name, v in truth.values.items()}
    return train


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
    frame = pd.DataFrame(table).T[cols].round(3)
    tied = [p for p, r in protocols.items() if len(r) > 1]
    col = "accuracies (EDGE: hard, random, easy" + ("; tie means" if tied else "") + ")"
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


def normality_table(truth: dict):
    """Box-Cox + three normality tests per learner (Table A3): ``(dict, DataFrame)``."""
    import pandas as pd

    from .estimation import normality_tests

    normal = {name: normality_tests(acc) for name, acc in truth.items()}
    return normal, pd.DataFrame(normal).T.round(4)


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
            x = np.asarray(data["x_train"])   # images (C, n, 3, H, W): the MLP probe reads their pixels
            res = class_similarity(source=src, x=x.reshape(*x.shape[:2], -1), class_names=class_names, hidden=hidden,
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
    lines.append(f"learners where EDGE / RS is closer (exploratory: paired t over the draws, Holm over the "
                 f"section's family; of {num_learners}): {wins}")
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

    kw = dict(edge_num_random=edge_num_random, num_draws=num_draws, num_bins=num_bins, seed=seed,
              return_verdicts=True)
    rows, verdicts = compare_sources(sims, truth, all_sequences, num_tasks,
                                     family="section 9: EDGE − RS per source, paper's S (exploratory)", **kw)
    gen_rows, gen_verdicts = compare_sources(
        sims, truth, all_sequences, num_tasks, intra_weight=intra_weight,
        family=f"section 9: EDGE − RS per source, {score_label(intra_weight)} (exploratory)", **kw) \
        if intra_weight else ([], [])
    summary = summarise_sources(rows, null_labels)
    gen_summary = summarise_sources(gen_rows, null_labels) if gen_rows else None
    learners = list(dict.fromkeys(r["learner"] for r in rows))
    per_learner = pd.DataFrame(rows).pivot(index="source", columns="learner", values="r")[learners]
    tables = [("**Paper's score S(O)** (means over learners; wins counted over learners (x null seeds), "
               "significant by paired t over the draws, Holm over the section's exploratory family)",
               summary.round(3)),
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
           "source_verdicts": [v.to_dict() for v in verdicts + gen_verdicts],
           "source_summary": summary.to_dict(orient="index"),
           "source_summary_generalised": gen_summary.to_dict(orient="index") if gen_summary is not None else {},
           "source_mean": source_means(summary),
           "paper_claim_supported_by": sorted(set(winners + gen_winners))}
    return {"rows": rows, "gen_rows": gen_rows, "summary": summary, "gen_summary": gen_summary, "tables": tables,
            "text": text, "gen_text": gen_text, "claim": claim, "log": log, "verdicts": verdicts + gen_verdicts}


def source_claim(winners, names_labels, N: int, K: int) -> str:
    """Section 9's sentence on the sources whose EDGE beat RS (exploratory: beside the claim, never a finding)."""
    if winners:
        return ("Beyond the claim (section 9, exploratory), EDGE's estimate is closer than RS's for most learners on "
                f"both metrics with: {', '.join(sorted(set(winners)))}"
                + (" (a class-name similarity among them)." if any(g in names_labels for g in winners)
                   else " (no class-name similarity among them)."))
    return ("Beyond the claim (section 9, exploratory), no similarity source made EDGE's estimate closer than RS's "
            f"for most learners on both JSD and W1 ({N} classes in {K} tasks); the sources differ in how close their "
            "hard/easy sequences come to the accuracy extremes and how well their score tracks accuracy.")


def claim_text(verdicts, checks=(), *, N: int, K: int) -> str:
    """The paper's claim as section 6's primary family decided it (findings only from primary rows).

    Examples
    --------
    >>> from clkit import stats
    >>> v = stats.holm([stats.paired([1.0, 1.2, 0.9, 1.1], [2.0, 2.1, 2.2, 2.0], comparison="a: W1 EDGE − RS",
    ...                              higher="RS closer", lower="EDGE closer")], name="claim")
    >>> print(claim_text(v, N=8, K=4))
    Section 6's primary family (1 comparison, Holm, 4 paired draws): EDGE is closer than RS in 1 of its 1 comparison (a: W1 EDGE − RS). The run supports the paper's claim for most comparisons.
    """
    from .. import stats
    from .verdicts import checks_hold

    verdicts = list(verdicts)
    primary = [v for v in verdicts if v.role == "finding" and v.scope == "primary" and v.decision != "not testable"]
    if not primary:
        return "Not judged: no primary comparison ran."
    if not stats.controls_hold(verdicts)[0] or not checks_hold(checks):
        return ("Not judged: a control or pipeline check of section 6 failed, so no difference is read as a "
                "finding (the numbers are in its table).")
    m, n = len(primary), min(v.n for v in primary)
    closer = [v.comparison for v in primary if v.decision == v.lower]
    farther = [v.comparison for v in primary if v.decision == v.higher]
    what = (f"Section 6's primary family ({m} comparison{'s' if m != 1 else ''}, Holm, {n} paired draws): EDGE is "
            f"closer than RS in "
            f"{len(closer)} of its {m} comparison{'s' if m != 1 else ''}" + (f" ({', '.join(closer)})" if closer else ""))
    if farther:
        what += f"; RS is closer in {len(farther)} ({', '.join(farther)})"
    what += "; no difference detected in the rest" if m - len(closer) - len(farther) else ""
    verdict = ("The run supports the paper's claim for most comparisons." if len(closer) > m / 2 else
               f"On this setting ({N} classes in {K} tasks) the run does not support the paper's claim that "
               "EDGE approximates the accuracy distribution better than RS." if not closer else
               "The run supports the claim for some comparisons only.")
    return what + ". " + verdict


def spread_text(truth: dict) -> str:
    """How far each learner's accuracy moves with the order (true std and range over the orders), from the numbers.

    NCM on frozen features trains nothing and forgets nothing: its *final* accuracy is the same
    for every order, but Eq. 1's average incremental accuracy tests different classes at each
    step, so it is not an order-insensitive control; the sentence says where its spread ranks.

    Examples
    --------
    >>> print(spread_text({"finetune": np.array([40.0, 44.0]), "ncm": np.array([60.0, 70.0])}))
    Spread over the orders (true std / range, points): finetune 2.00 / 4.0, ncm 5.00 / 10.0; widest: ncm. ncm (frozen features, nothing trained or forgotten) has the same final accuracy in every order, yet its average incremental accuracy moves with the order (std 5.00, rank 1 of 2): it is no order-insensitive control.
    """
    sd = {n: float(np.std(v)) for n, v in truth.items()}
    order = sorted(sd, key=lambda n: -sd[n])
    text = ("Spread over the orders (true std / range, points): "
            + ", ".join(f"{n} {sd[n]:.2f} / {np.ptp(truth[n]):.1f}" for n in truth) + f"; widest: {order[0]}.")
    if "ncm" in sd and len(sd) > 1:
        rank = order.index("ncm") + 1
        least = min((n for n in sd if n != "ncm"), key=lambda n: sd[n])
        text += (f" ncm (frozen features, nothing trained or forgotten) has the same final accuracy in every order, yet "
                 f"its average incremental accuracy moves with the order (std {sd['ncm']:.2f}, rank {rank} of "
                 f"{len(sd)}): " + ("it is no order-insensitive control." if sd["ncm"] >= sd[least] else
                                    f"it moves less than every other learner here (least of the others: {least} "
                                    f"{sd[least]:.2f})."))
    return text


def ceiling_text(structure, encoder: str) -> str:
    """The sentences on what S(O) can rank, per learner, only where each holds (:func:`clkit.edge.structure.ceiling`).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"R^2": [0.0, 0.0], "eta^2 S-classes": [0.22, 0.63], "eta^2 by chance": [0.5] * 2,
    ...                   "eta^2 first task": [0.7, 0.2], "eta^2 first task by chance": [0.01] * 2},
    ...                  index=["ncm", "finetune"])
    >>> print(ceiling_text(t, "glove").split(". ")[0])
    For ncm the S-class eta^2 (0.22) is at or below its chance value (0.50): sequences with equal S differ at least as much as random ones, so no function of S ranks these orders
    """
    from .structure import ROOM, ceiling

    c = ceiling(structure)
    if not c["informative"]:
        return (f"The S-class ceiling says nothing here: with most S-classes holding one or two sequences eta^2 is "
                f"{c['chance']:.2f} by chance alone.")
    def listed(names, value):
        return ", ".join(f"{value(n):.2f}" for n in names)

    eta, r2, beyond = structure["eta^2 S-classes"].get, structure["R^2"].get, c["beyond"].get
    parts = []
    if c["at_chance"]:
        parts.append(f"For {', '.join(c['at_chance'])} the S-class eta^2 ({listed(c['at_chance'], eta)}) is at or "
                     f"below its chance value ({c['chance']:.2f}): sequences with equal S differ at least as much "
                     "as random ones, so no function of S ranks these orders.")
    if c["near"]:
        parts.append(f"For {', '.join(c['near'])} a function of S could explain at most {listed(c['near'], beyond)} "
                     f"of the variance beyond chance, within {ROOM:g} of the {encoder} names' R^2 "
                     f"({listed(c['near'], r2)}): no similarity scored through S(O) could rank these orders much "
                     "better.")
    if c["room"]:
        parts.append(f"For {', '.join(c['room'])} a function of S could explain up to {listed(c['room'], beyond)} "
                     f"of the variance beyond chance against the {encoder} names' R^2 of {listed(c['room'], r2)}: "
                     "another similarity scored through S(O) could rank these orders better.")
    if c["first"]:
        parts.append(f"The first task alone explains more of the spread beyond chance than any function of S for "
                     + ", ".join(f"{n} ({c['first_beyond'][n]:.2f})" for n in c["first"]) + ".")
    return " ".join(parts)


def closing_text(*, truth, table, corr, corr_img, corr_intra, normal, rank_err, agree, seq_rows, hard_info,
                 easy_info, encoder, num_sequences_run, N, K, L1, num_draws, src_text, gen_text, claim,
                 structure=None, truth_text: str = "", draws=None, verdicts=None, checks=()):
    """The 'What this run shows' Markdown and the lists the notebook records.

    Every sentence is generated from the numbers it cites. ``structure`` is
    :func:`structure_report`'s ``table``: with it, what S(O) can rank is said per learner only
    where it holds (:func:`ceiling_text`). ``truth_text`` says which ground truth the numbers
    come from (:meth:`~clkit.edge.truth.GroundTruth.describe`). ``draws`` is
    :func:`draws_report`'s ``frame``: with it the RS-vs-EDGE bullet leads with P(EDGE closer)
    over every draw (and the oracles'), the paper's single seeds second. ``verdicts`` and
    ``checks`` are section 6's (:func:`edge_verdicts`): the paper's claim is read from its
    primary family (:func:`claim_text`); ``claim`` is section 9's exploratory sentence beside it.

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
    else:
        verdict = (f"Only {len(clear)} of {len(learners)} learners show a clear positive correlation "
                   "(R > 0.2, p < 0.05).")
    if structure is not None:
        verdict += " " + ceiling_text(structure.loc[[n for n in learners if n in structure.index]], encoder)
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
                      + ", ".join(f"{n} {p(n, 'oracle'):.2f}" for n in learners)
                      + ". Read by the range estimator (the lowest and highest accuracy taken as the extremes): "
                        "EDGE " + ", ".join(f"{n} {p(n, 'EDGE-range'):.2f}" for n in learners)
                      + ", oracle " + ", ".join(f"{n} {p(n, 'oracle-range'):.2f}" for n in learners)
                      + " (what each says about the estimator and the similarity: section 6). ")
    primary_claim = claim_text(verdicts, checks, N=N, K=K) if verdicts is not None else ""
    log["paper_claim"] = primary_claim
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
  {rank_err['RS']:.3g}, EDGE {rank_err['EDGE']:.3g}, EDGE-img {rank_err['EDGE-img']:.3g} (EDGE's averaged
  over its tie variants). With the
  image-prototype similarity (MAE {agree['mae']:.2f}, Spearman {agree['spearman']:.2f}
  against the text similarity), EDGE-img beats RS in JSD for {len(img_better_jsd)} and
  in W for {len(img_better_w)} learners (single draws too; section 6's verdicts pair
  {num_draws} draws, section 9 judges each source over them). EDGE's implied std
  (averaged over the S-ties of its hard and easy sequences) is below the true std for
  {len(narrow)} of {len(learners)} learners.
* **Order spread.** {spread_text(truth)}
* **Similarity sources (section 9).** {src_text} {gen_text}
  Intra-task similarity I(O) of the {encoder} names vs accuracy:
  {', '.join(f"{n} {corr_intra[n]:+.2f}" for n in learners)}.
* **The paper's claim.** {primary_claim} {claim}
* **Near-Gaussian truth** (>= 2 of 3 tests with p > 0.05 after Box-Cox):
  {', '.join(gauss) or 'none'}.
* **Similarity vs accuracy.** Pearson R is positive for {len(pos_corr)} of {len(learners)}
  learners ({', '.join(f"{n} {corr[n]['r']:.2f}" for n in learners)}); with the image
  similarity: {', '.join(f"{n} {corr_img[n]['r']:.2f}" for n in learners)}. {verdict}
"""
    return text, log


def check_edge_learner_kwargs(learner_kwargs, learners, *, batched=None) -> dict:
    """Validate the notebook's ``learner_kwargs`` for this run's ``learners``.

    The built-in learners accept the :class:`~clkit.edge.learners.LearnerConfig` fields
    listed in :data:`~clkit.edge.learners.LEARNER_KEYWORDS`; any other (a Strategy) its
    constructor's keywords except those the notebook supplies (model, scenario, seed, device,
    precision) -- so a strategy may take its own ``epochs``, ``optimizer``, ``lr`` or
    ``batch_size`` (e.g. L2P's Adam and few epochs beside ResNet learners' many). ``batched``
    names the run's batched learners (default: every built-in name); on an image protocol
    (:mod:`clkit.edge.images`) only ``"ncm"`` is, and ``"ewc"`` names the strategy.

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
    batched = LEARNER_KEYWORDS if batched is None else set(batched)   # the image protocols: "ewc" is a strategy
    for name in learners:
        if name in LEARNER_KEYWORDS and name in batched:
            allowed[name] = {k: getattr(base, k) for k in LEARNER_KEYWORDS[name]}
        else:
            allowed[name] = allowed_keywords(resolve_strategy(name, parameter="learners"),
                                             exclude=("model", "scenario", "seed", "device", "precision"))
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
    if edge_wins:
        lines.append(f"EDGE as the paper runs it is closer than RS in more than half of the draws for "
                     f"{', '.join(edge_wins)}.")
    return "\n".join(lines)


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
    from .structure import beyond_chance

    r = results.get("results", results)
    truth = (f"{r['num_enumerated']:,} sequences, all trained (exact ground truth)." if r.get("truth_mode", "exact")
             == "exact" else r.get("truth_description", "sampled ground truth") + ".")
    lines = [f"Setting: {r['data_source']}; {truth}", "", r.get("summary", ""), ""]
    if r.get("paper_claim"):
        lines += [f"**The paper's claim.** {r['paper_claim']}", ""]
    if r.get("draws_text"):
        lines += [r["draws_text"], ""]
    st = r.get("structure", {})
    if st:
        n_cls = int(next(iter(st.values()))["S classes"])
        chance = next(iter(st.values())).get("eta^2 by chance", float("nan"))
        lines += [f"What S(O) can explain ({n_cls:,} distinct S values, η² {chance:.2f} by chance alone; "
                  f"S(O) = S(reverse O) always):", "",
                  "| learner | R | R² | η² S-classes (ceiling of R²) | η² beyond chance | η² first task | "
                  "mean abs. A(O) − A(reverse) |",
                  "|---|---|---|---|---|---|---|"]
        for name, row in st.items():
            beyond = beyond_chance(row["eta^2 S-classes"], row.get("eta^2 by chance", float("nan")))
            lines.append(f"| {name} | {row['R']:.3f} | {row['R^2']:.3f} | {row['eta^2 S-classes']:.3f} | "
                         f"{beyond:.3f} | {row['eta^2 first task']:.3f} | {row['mean |A(O) - A(reverse)|']:.2f} |")
        lines.append("")
    ties = r.get("tie_percentiles", {})
    if ties:
        sampled = any(t.get("pct_low", t["pct"]) != t.get("pct_high", t["pct"]) for t in ties.values())
        lines += ["Accuracy percentile of EDGE's sequences, averaged over their S-tie (range over the tie"
                  + ("; 95 % Wilson interval of the sampled percentile" if sampled else "") + "):", "",
                  "| learner / sequence | percentile | range | tie size |" + (" 95 % interval |" if sampled else ""),
                  "|---|---|---|---|" + ("---|" if sampled else "")]
        for key, t in ties.items():
            lines.append(f"| {key} | {t['pct']:.1f} | {t['pct_min']:.1f}–{t['pct_max']:.1f} | {t['tie_size']} |"
                         + (f" {t['pct_low']:.1f}–{t['pct_high']:.1f} |" if sampled else ""))
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

