"""Notebook 02_edge's classic settings and similarity sources.

The hard / easy / random sequences of the classic 100-class settings
(:func:`classic_settings`), the similarity matrices of every source (names, images,
nulls: :func:`similarity_sources`) and the study of which source predicts the truth
best (:func:`source_study`) with its tables and sentences. Re-exported by
:mod:`clkit.edge.report`, the notebook's entry point; nothing is trained here.
"""

from __future__ import annotations

import numpy as np

from .combinatorics import num_sequences

__all__ = ["classic_settings", "similarity_sources", "summarise_sources", "source_means", "source_text", "source_study", "source_claim", "score_label"]


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
    """One row per source: means over learners, winner counts; the null seeds pooled.

    Headers name their units (issue 55): R is Pearson's (unitless), the hard / easy sequences'
    accuracy as a percentile among all sequences, JSD in bits, W1 in accuracy points, wins and
    cases as counts."""
    import pandas as pd

    df = pd.DataFrame(rows)
    df["group"] = ["random (null)" if r in null_labels else r for r in df["source"]]
    out = {}
    for group, g in df.groupby("group", sort=False):
        per_src = g.groupby("source")["r"].mean()
        out[group] = {
            "R (mean over learners)": g["r"].mean(),
            "R sd over null seeds": per_src.std(ddof=1) if len(per_src) > 1 else np.nan,
            "hard acc., percentile": g["hard_pct"].mean(),
            "easy acc., percentile": g["easy_pct"].mean(),
            "EDGE JSD, bits": g["edge_jsd"].mean(),
            "RS JSD, bits": g["rs_jsd"].mean(),
            "EDGE W1, % points": g["edge_w1"].mean(),
            "RS W1, % points": g["rs_w1"].mean(),
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
    return {g: {"r": float(row["R (mean over learners)"]), "hard_pct": float(row["hard acc., percentile"]),
                "easy_pct": float(row["easy acc., percentile"]),
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
    pct = "; ".join(f"{g} {S_.loc[g, 'hard acc., percentile']:.0f}/{S_.loc[g, 'easy acc., percentile']:.0f}"
                    for g in real)
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


def score_label(intra_weight: float) -> str:
    """Name of the generalised score ``S + w I`` with the sign written once.

    Examples
    --------
    >>> score_label(-1.0), score_label(0.5)
    ('S − 1 I', 'S + 0.5 I')
    """
    w = float(intra_weight)
    return f"S − {abs(w):g} I" if w < 0 else f"S + {w:g} I"
