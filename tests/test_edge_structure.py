"""Ties, ceilings and reversal of S(O) (clkit.edge.structure)."""

import numpy as np
import pytest

from clkit.edge import enumerate_sequences, sequence_scores
from clkit.edge.structure import (eta_squared, first_task_classes, reversal_pairs, score_classes,
                                  structure_table, tie_percentiles)


def _sim6():
    rng = np.random.default_rng(0)
    a = rng.uniform(size=(6, 6))
    sim = (a + a.T) / 2
    np.fill_diagonal(sim, 1.0)
    return sim


def test_three_tasks_tie_in_sixes_and_every_member_gets_the_same_percentile():
    seqs = enumerate_sequences(6, 3)
    S = sequence_scores(_sim6(), seqs)
    cls = score_classes(S)
    assert cls.max() + 1 == 15 and (np.bincount(cls) == 6).all()      # S depends on the middle task only
    middle = np.sort(seqs[:, 1], axis=-1)
    for c in range(15):                                              # one middle task per class
        assert len(np.unique(middle[cls == c], axis=0)) == 1
    acc = np.random.default_rng(1).normal(size=len(seqs))
    for c in range(15):
        members = np.nonzero(cls == c)[0]
        outs = [tie_percentiles(acc, S, i) for i in members]
        assert len({(o["pct"], o["pct_min"], o["pct_max"]) for o in outs}) == 1
        assert outs[0]["tie_size"] == 6
        assert outs[0]["pct_min"] <= outs[0]["pct"] <= outs[0]["pct_max"]


def test_eta_squared_on_a_planted_example():
    groups = np.repeat(np.arange(5), 20)
    rng = np.random.default_rng(2)
    signal = np.array([0.0, 1.0, 2.0, 3.0, 4.0])[groups]
    noise = rng.normal(size=100)
    noise -= np.bincount(groups, weights=noise)[groups] / 20        # zero mean within each group
    noise *= np.sqrt(2.0 / noise.var())                              # var(signal) = 2 = var(noise)
    assert eta_squared(signal + noise, groups) == pytest.approx(0.5, abs=1e-12)
    assert eta_squared(signal, groups) == pytest.approx(1.0)
    # R^2 of any score constant on the groups never exceeds the ceiling
    score = np.array([0.3, 0.1, 0.9, 0.4, 0.7])[groups]
    assert np.corrcoef(score, signal + noise)[0, 1] ** 2 <= eta_squared(signal + noise, groups) + 1e-12
    with pytest.raises(ValueError, match="same length"):
        eta_squared([1.0, 2.0], [0])


def test_reversal_leaves_s_unchanged_and_structure_table():
    seqs = enumerate_sequences(8, 4)
    sim = np.random.default_rng(3).uniform(size=(8, 8))
    sim = (sim + sim.T) / 2
    S = sequence_scores(sim, seqs)
    rev = reversal_pairs(seqs)
    assert (rev >= 0).all() and np.allclose(S, S[rev])
    acc = np.random.default_rng(4).normal(size=len(seqs))
    first = first_task_classes(seqs)
    assert first.max() + 1 == 28
    table = structure_table({"planted": S + 0.0 * acc, "null": acc}, S, seqs)
    assert table.loc["planted", "R"] == pytest.approx(1.0)
    assert table.loc["planted", "eta^2 S-classes"] == pytest.approx(1.0)
    assert table.loc["planted", "mean |A(O) - A(reverse)|"] == pytest.approx(0.0, abs=1e-12)
    assert table.loc["null", "eta^2 S-classes"] < 0.9 and abs(table.loc["null", "R"]) < 0.1


def test_stratified_rs_is_unbiased_and_tighter_when_s_matters():
    from clkit.edge.compare import stratified_draws, stratified_mean

    rng = np.random.default_rng(5)
    S = rng.uniform(size=301)
    acc = 10 * S + rng.normal(size=301)                  # accuracy follows S (R about 0.95)
    d = stratified_draws(S, 3, 4000, seed=1)
    est = stratified_mean(acc, S, d)
    assert abs(est.mean() - acc.mean()) < 4 * est.std() / np.sqrt(len(est))
    plain = acc[np.stack([rng.choice(301, 3, replace=False) for _ in range(4000)])].mean(axis=1)
    assert est.std() < 0.5 * plain.std()                 # stratification removes most of the variance
    with pytest.raises(ValueError, match="empty stratum"):
        stratified_draws([0.1, 0.2], 3, 1)


def test_the_ceiling_sentences_follow_the_numbers():
    """Issue 38: "within 0.1 of its chance value: no similarity could rank these orders much better"
    was printed for ncm at eta^2 0.22 (below chance 0.50), for ewc / lwf whatever their excess, and on a
    sample where eta^2 is 0.93 by chance alone. Each sentence now holds for the learners it names."""
    import pandas as pd

    from clkit.edge.report import ceiling_text
    from clkit.edge.structure import beyond_chance, ceiling

    t = pd.DataFrame({"R^2": [0.004, 0.0004, 0.003, 0.003], "eta^2 S-classes": [0.224, 0.544, 0.628, 0.600],
                      "eta^2 by chance": [0.4998] * 4, "eta^2 first task": [0.697, 0.433, 0.468, 0.450],
                      "eta^2 first task by chance": [0.0107] * 4},
                     index=["ncm", "ewc", "finetune", "lwf"])          # the default run's numbers
    c = ceiling(t)
    assert c["at_chance"] == ["ncm"] and c["near"] == ["ewc"] and c["room"] == ["finetune", "lwf"]
    for name, row in t.iterrows():
        b = beyond_chance(row["eta^2 S-classes"], row["eta^2 by chance"])
        assert (name in c["at_chance"]) == (b <= 0) and (name in c["room"]) == (b - row["R^2"] >= 0.1)
    text = ceiling_text(t, "minilm")
    assert "For ncm the S-class eta^2 (0.22) is at or below its chance value (0.50)" in text
    assert "For ewc a function of S could explain at most 0.09" in text and "much better" in text
    assert "For finetune, lwf a function of S could explain up to 0.26, 0.20" in text
    assert "within 0.1 of its chance value" not in text
    sampled = t.assign(**{"eta^2 by chance": 0.93})
    assert ceiling_text(sampled, "minilm").startswith("The S-class ceiling says nothing here")
    assert not ceiling(sampled)["room"] and not ceiling(sampled)["near"]
