"""Tables and closing text of notebook 02_edge, computed from the run's numbers.

Every function here takes what the notebook computed (true accuracies, protocol
estimates, similarity sources) and returns a table (a ``pandas.DataFrame``), a dict
to record, or Markdown text; nothing is trained here but the ground truth. The
notebook's cells are a few calls into this module, :mod:`clkit.edge.plots` and the
computing modules.

This module is the notebook's entry point (``report.X``); the functions live in

- :mod:`clkit.edge.report_truth` -- sequence counts, sample sizes, extreme sequences,
  the ground truth and its tables;
- :mod:`clkit.edge.report_protocols` -- RS and EDGE evaluated against the truth,
  rankings, correlations, structure, verdicts and draws;
- :mod:`clkit.edge.report_classic` -- the classic settings and the similarity sources;

and here: the claim, spread, ceiling and closing texts and the findings of a run.
"""

from __future__ import annotations

import numpy as np

from .combinatorics import num_sequences
from .report_truth import (  # noqa: F401  (the notebook calls them as report.X)
    SEQUENCE_COUNT_SETTINGS, sequence_count_table, sample_size_text, extreme_sequences, truth_table,
    ground_truth, final_accuracy_log, truth_lookup, normality_table, check_edge_learner_kwargs)
from .report_truth import _method
from .report_protocols import (  # noqa: F401  (the notebook calls them as report.X)
    protocol_sequences, protocol_ties, correlation_table, evaluate_protocols, rankings,
    correlations, structure_report, edge_verdicts, draws_report, draws_text)
from .report_classic import (  # noqa: F401  (the notebook calls them as report.X)
    classic_settings, similarity_sources, summarise_sources, source_means, source_text,
    source_study, source_claim, score_label)

__all__ = ["SEQUENCE_COUNT_SETTINGS", "sequence_count_table", "sample_size_text", "extreme_sequences",
           "truth_table", "protocol_ties", "evaluate_protocols", "normality_table", "rankings", "correlations",
           "classic_settings", "similarity_sources", "summarise_sources", "source_text",
           "source_claim", "claim_text", "spread_text", "ceiling_text", "closing_text", "edge_verdicts",
           "draws_report", "draws_text", "structure_report", "findings_markdown", "write_findings"]


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
        parts.append("The first task alone explains more of the spread beyond chance than any function of S for "
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
