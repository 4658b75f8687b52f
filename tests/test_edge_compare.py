"""clkit.edge.compare: judging similarity sources on a synthetic enumerable truth."""

import numpy as np
import pytest

from clkit import edge
from clkit.edge.compare import accuracy_percentile, compare_sources, paired_draws


def planted_sim(seed=0):
    X = np.random.default_rng(seed).normal(size=(6, 4))
    return edge.cosine_similarity(X)


def test_a_source_that_drives_accuracy_is_recognised_and_the_null_is_not():
    sim = planted_sim()
    seqs = edge.enumerate_sequences(6, 3)
    acc = 50 + 10 * edge.sequence_scores(sim, seqs)          # accuracy follows S(O) exactly
    null = edge.class_similarity(source="random", num_classes=6, seed=11).matrix
    rows = compare_sources({"true": sim, "null": null}, {"toy": acc}, seqs, 3, num_draws=20)
    true, nul = rows
    assert true["r"] == pytest.approx(1.0)
    assert true["hard_acc"] == pytest.approx(acc.min()) and true["easy_acc"] == pytest.approx(acc.max())
    assert true["hard_pct"] < 5 and true["easy_pct"] > 95     # mid-rank among ties (reversals)
    assert abs(nul["r"]) < true["r"]
    # RS's draws are the same for every source
    assert true["rs_jsd"] == nul["rs_jsd"] and true["rs_w1_sd"] == nul["rs_w1_sd"]
    assert true["edge_w1"] < true["rs_w1"]
    # who is closer is a clkit.stats verdict (paired t over the draws, Holm over the call)
    # (even a source whose S *is* the accuracy gets no significant W1 win at 20 draws: the
    # three-point Gaussian, not the source, limits EDGE -- see clkit.edge.triples)
    for row in rows:
        for m in ("jsd", "w1"):
            assert (row[f"{m}_winner"] != "tie") == (row[f"{m}_p"] < 0.05)
    assert nul["w1_winner"] == "tie" and nul["jsd_winner"] == "tie"


def test_intra_weight_scores_the_generalised_score():
    sim = planted_sim(1)
    seqs = edge.enumerate_sequences(6, 3)
    acc = 50 - 10 * edge.intra_task_scores(sim, seqs)        # accuracy falls with intra-task similarity
    paper = compare_sources({"s": sim}, {"toy": acc}, seqs, 3, num_draws=5)[0]
    gen = compare_sources({"s": sim}, {"toy": acc}, seqs, 3, intra_weight=-100.0, num_draws=5)[0]
    assert gen["r"] > 0.99 > paper["r"]
    assert gen["hard_pct"] < 5 and gen["easy_pct"] > 95


def test_paired_draws_pair_edge_with_rs_and_repeat():
    acc = np.arange(90.0)
    d = paired_draws(acc, [0, 89], 1, num_draws=7, seed=3)
    assert d["protocol"]["jsd"].shape == (7,) and (d["rs"]["wasserstein"] >= 0).all()
    again = paired_draws(acc, [0, 89], 1, num_draws=7, seed=3)
    assert np.array_equal(d["protocol"]["jsd"], again["protocol"]["jsd"])
    # with no fixed sequences and one random member the "protocol" is RS's first draw alone:
    # the pairing shares the random sequences (common random numbers)
    same = paired_draws(acc, [], 3, num_draws=5, seed=1)
    assert np.array_equal(same["protocol"]["wasserstein"], same["rs"]["wasserstein"])
    assert accuracy_percentile([1, 2, 3], 2) == pytest.approx(50.0)


def test_bad_input_is_refused():
    seqs = edge.enumerate_sequences(6, 3)
    sim = planted_sim()
    with pytest.raises(ValueError, match="truth\\['a'\\] has 5 accuracies for 90 sequences"):
        compare_sources({"s": sim}, {"a": np.ones(5)}, seqs, 3)
    with pytest.raises(ValueError, match="edge_num_random"):
        compare_sources({"s": sim}, {"a": np.ones(90)}, seqs, 3, edge_num_random=0)
    with pytest.raises(ValueError, match=r"sims\['s'\] must be a square"):
        compare_sources({"s": np.ones((6, 5))}, {"a": np.ones(90)}, seqs, 3)


def test_vectorised_distances_equal_the_per_protocol_ones():
    from clkit.edge.compare import distances_many
    from clkit.edge.experiment import evaluate_protocol

    rng = np.random.default_rng(0)
    acc = rng.normal(60, 4, size=90)
    samples = [acc[[1, 5, 9]], acc[[0, 0, 0]], acc[[3, 80]], np.array([acc.max() + 5, acc.max() + 6, 50.0]),
               np.array([acc.min(), acc.min(), acc.min()])]
    for bins in (10, 4):
        many = [distances_many(acc, s[None], num_bins=bins) for s in samples]
        for s, got in zip(samples, many):
            ev = evaluate_protocol(acc, s, num_bins=bins)
            assert got["jsd"][0] == pytest.approx(ev["jsd"], abs=1e-9)
            assert got["wasserstein"][0] == pytest.approx(ev["wasserstein"], rel=1e-6, abs=1e-9)
    both = distances_many(acc, np.stack([acc[[1, 5, 9]], acc[[2, 3, 4]]]))
    assert both["jsd"].shape == (2,)
