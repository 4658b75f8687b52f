"""clkit.edge.encoders (Fig. 4 / Table A4: EDGE with CLIP text encoders of different sizes).

Offline: the data cache in tmp_path, no socket may connect, Hugging Face's cache looked up as
empty; CLIP weights are tiny open_clip folders fabricated by clkit.data.fixtures.clip.
"""

import shutil
import socket

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import clkit.edge.similarity as similarity  # noqa: E402
from clkit.data.fixtures.clip import clip_params, write_clip  # noqa: E402
from clkit.edge import enumerate_sequences, sequence_scores  # noqa: E402
from clkit.edge.encoders import PAPER_ENCODERS, PAPER_TABLE_A4, encoder_comparison  # noqa: E402
from clkit.edge.experiment import evaluate_protocol  # noqa: E402
from clkit.edge.plots import encoder_distributions  # noqa: E402
from clkit.edge.similarity_matrix import ClassSimilarity  # noqa: E402
from clkit.edge.tables import UNITS  # noqa: E402

SIM4 = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
NAMES4 = ["a", "b", "c", "d"]
SEQS4 = enumerate_sequences(4, 2)     # [01|23] [02|13] [03|12] [12|03] [13|02] [23|01]
TRUTH4 = {"f": 10.0 * SEQS4[:, 0, 0] + SEQS4[:, 0, 1]}          # 1, 2, 3, 12, 13, 23


@pytest.fixture(autouse=True)
def offline(tmp_path, monkeypatch):
    import huggingface_hub

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setenv("CLKIT_DATA", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(similarity, "_reachable", lambda *a, **k: False)
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *a, **k: None)


def fixed_similarity(monkeypatch, matrix):
    """class_similarity returns ``matrix`` for every encoder (records which encoders were asked)."""
    asked = []

    def fake(names, encoder, *, clip_model, clip_pretrained, **kw):
        assert encoder == "clip"
        asked.append((clip_model, clip_pretrained))
        return ClassSimilarity(np.asarray(matrix, float), f"clip:{clip_model}/{clip_pretrained}", list(names),
                               np.eye(len(names)), [])

    monkeypatch.setattr(similarity, "class_similarity", fake)
    return asked


def test_paper_encoders_are_open_clip_names():
    import open_clip

    known = set(open_clip.list_pretrained())
    assert PAPER_ENCODERS == (("RN50", "openai"), ("RN50x64", "openai"), ("RN101", "openai"),
                              ("ViT-B-16", "openai"), ("ViT-B-32", "openai"), ("ViT-L-14", "openai"))
    assert all(pair in known for pair in PAPER_ENCODERS)
    assert list(PAPER_TABLE_A4) == ["RS estimate"] + [f"EDGE with {m}" for m, _ in PAPER_ENCODERS]


def test_hand_computed_triplet_and_ties(monkeypatch):
    fixed_similarity(monkeypatch, SIM4)
    # S: [01|23] and [23|01] = 0.5 (hard, a tie of two); the other four = 1.1 (easy, a tie of four)
    assert sequence_scores(SIM4, SEQS4).tolist() == pytest.approx([0.5, 1.1, 1.1, 1.1, 1.1, 0.5])
    res = encoder_comparison(NAMES4, 2, TRUTH4, SEQS4, {"toy": ("RN50", "openai")}, ties=False)
    # RS (seeds 0, 42, 1993): [23|01] -> 23, [13|02] -> 13, [02|13] -> 2
    assert res.rs["sequences"].tolist() == [[[2, 3], [0, 1]], [[1, 3], [0, 2]], [[0, 2], [1, 3]]]
    assert res.rs["values"]["f"].tolist() == [23.0, 13.0, 2.0]
    assert res.rs["estimates"]["f"]["mean"] == pytest.approx(38 / 3)
    run = res.runs["toy"]
    # EDGE: hard [01|23] -> 1, RS seed 0's [23|01] -> 23, easy [02|13] -> 2
    assert run.sequences.tolist() == [[[0, 1], [2, 3]], [[2, 3], [0, 1]], [[0, 2], [1, 3]]]
    assert run.values["f"].tolist() == [1.0, 23.0, 2.0]
    assert (run.hard_S, run.easy_S, run.s_tie) == (pytest.approx(0.5), pytest.approx(1.1), False)
    assert (run.hard_ties, run.easy_ties) == (2, 4)
    assert run.estimates == run.picked
    assert run.estimates["f"] == evaluate_protocol(TRUTH4["f"], [1.0, 23.0, 2.0])

    tied = encoder_comparison(NAMES4, 2, TRUTH4, SEQS4, {"toy": ("RN50", "openai")}).runs["toy"]
    assert tied.tie_pairs == 8 and tied.picked == run.picked
    # averaged over hard in {1, 23} x easy in {2, 3, 12, 13} (the middle 23 kept)
    each = [evaluate_protocol(TRUTH4["f"], [h, 23.0, e]) for h in (1.0, 23.0) for e in (2.0, 3.0, 12.0, 13.0)]
    for key in ("mean", "std", "jsd", "wasserstein"):
        assert tied.estimates["f"][key] == pytest.approx(np.mean([x[key] for x in each]))


def test_table_layout_units_and_record(monkeypatch):
    import json

    fixed_similarity(monkeypatch, SIM4)
    truth = {**TRUTH4, "g": 100.0 - TRUTH4["f"]}
    res = encoder_comparison(NAMES4, 2, truth, SEQS4, [("RN50", "openai"), ("ViT-L-14", "openai")])
    tab = res.table()
    assert list(tab.index) == ["RS estimate", "EDGE with RN50", "EDGE with ViT-L-14"]
    assert list(tab.columns) == [("f", "JSD_d"), ("f", "W_d"), ("g", "JSD_d"), ("g", "W_d")]
    assert tab.attrs["units"] == UNITS
    assert tab.loc["RS estimate", ("f", "W_d")] == round(res.rs["estimates"]["f"]["wasserstein"], 4)
    assert 0 <= tab.loc["EDGE with RN50", ("g", "JSD_d")] <= 1           # bits
    rec = json.loads(json.dumps(res.record()))
    assert set(rec["encoders"]) == {"RN50", "ViT-L-14"} and rec["skipped"] == {}
    assert rec["encoders"]["RN50"]["hard"] == [[0, 1], [2, 3]]
    assert set(res.sequences) == {"RS", "RN50", "ViT-L-14"} and ("g", "RN50") in res.estimates


def test_missing_weights_are_skipped_with_the_reason(tmp_path):
    res = encoder_comparison(NAMES4, 2, TRUTH4, SEQS4,
                             [("ViT-B-16", "openai"), ("no-such-model", "openai"),
                              ("local-dir:" + str(tmp_path / "nowhere"), "local-dir")])
    assert res.runs == {}
    assert list(res.skipped) == ["ViT-B-16", "no-such-model", "nowhere"]
    assert "not cached and huggingface.co is unreachable" in res.skipped["ViT-B-16"]
    assert "open_clip knows no pretrained tag" in res.skipped["no-such-model"]
    assert "open_clip_config.json" in res.skipped["nowhere"]
    assert list(res.table().index) == ["RS estimate"]      # nothing substituted
    assert any(n.startswith("ViT-B-16 skipped: ") for n in res.notes)


def test_tiny_clip_folders_give_a_row_per_encoder(tmp_path):
    names = ["apple", "aquarium fish", "baby", "bear", "beaver", "bed"]
    seqs = enumerate_sequences(6, 3)
    rng = np.random.default_rng(0)
    E = rng.normal(size=(6, 4))
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    truth = {"toy": 50 + 10 * sequence_scores(E @ E.T, seqs), "noise": rng.normal(60, 2, size=len(seqs))}
    labels = ["RN50", "ViT-B-16", "ViT-L-14"]
    encoders = {lab: tuple(clip_params(write_clip(tmp_path / "w", seed=i, layers=1)).values())
                for i, lab in enumerate(labels)}
    # weights_dir: an open_clip folder named after the model is used for that model
    wdir = tmp_path / "weights"
    shutil.copytree(encoders["RN50"][0][len("local-dir:"):], wdir / "RN50")
    res = encoder_comparison(names, 3, truth, seqs, {**encoders, "RN101": ("RN50", "openai"),
                                                     "missing": ("RN101", "openai")}, weights_dir=wdir)
    assert list(res.runs) == labels + ["RN101"] and list(res.skipped) == ["missing"]
    assert list(res.table().index) == ["RS estimate"] + [f"EDGE with {lab}" for lab in labels + ["RN101"]]
    assert res.runs["RN101"].model == f"local-dir:{wdir / 'RN50'}"
    for lab in labels:
        run = res.runs[lab]
        assert run.encoder.startswith("clip:local-dir:") and run.similarity.shape == (6, 6)
        assert run.sequences.shape == (3, 3, 2) and run.hard_S <= run.easy_S
        assert np.isfinite(res.table().loc[f"EDGE with {lab}"].to_numpy()).all()
    # different random weights: different similarities
    assert not np.allclose(res.runs["RN50"].similarity, res.runs["ViT-B-16"].similarity)
    np.testing.assert_allclose(res.runs["RN101"].similarity, res.runs["RN50"].similarity, atol=1e-6)
    fig = encoder_distributions(res)
    assert len(fig.axes) == 2 * 4                     # learners x encoders that loaded
    assert len(encoder_distributions(res, learners=["toy"]).axes) == 4
    import matplotlib.pyplot as plt

    plt.close("all")


def test_uninformative_similarity_reports_an_s_tie(monkeypatch):
    uniform = np.full((6, 6), 0.5)
    np.fill_diagonal(uniform, 1.0)
    fixed_similarity(monkeypatch, uniform)
    seqs = enumerate_sequences(6, 3)
    truth = {"f": np.arange(len(seqs), dtype=float)}
    res = encoder_comparison(list("abcdef"), 3, truth, seqs, [("RN50", "openai")])
    run = res.runs["RN50"]
    assert run.hard_S == pytest.approx(run.easy_S) and run.s_tie
    assert np.array_equal(run.hard, run.easy)           # the canonical tie rule: the same sequence
    assert (run.hard_ties, run.easy_ties) == (90, 90)    # every sequence ties
    assert run.tie_pairs == 64                           # thinned to 8 x 8 pairs
    assert any("S-tie" in n and "not an informed one" in n for n in res.notes)
    # the row is the tie average, not the picked triplet's
    assert run.estimates["f"]["mean"] != pytest.approx(run.picked["f"]["mean"])


def test_sequences_outside_the_truth_are_trained_once(monkeypatch):
    fixed_similarity(monkeypatch, SIM4)
    keep = [1, 2, 3, 4, 5]                               # the hard sequence [01|23] is not in the truth
    calls = []

    def train(s):
        calls.append(s.tolist())
        return {"f": 10.0 * s[:, 0, 0] + s[:, 0, 1]}

    truth = {"f": TRUTH4["f"][keep]}
    with pytest.raises(ValueError, match="train="):
        encoder_comparison(NAMES4, 2, truth, SEQS4[keep], [("RN50", "openai")])
    res = encoder_comparison(NAMES4, 2, truth, SEQS4[keep], [("RN50", "openai"), ("RN101", "openai")],
                             train=train)
    assert calls == [[[[0, 1], [2, 3]]]]
    assert res.runs["RN101"].values["f"].tolist() == [1.0, 23.0, 2.0]
    assert any("not among all_sequences" in n for n in res.notes)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(num_tasks=3), ValueError, "num_tasks"),
    (dict(truth_values={"f": [1.0, 2.0]}), ValueError, "truth_values"),
    (dict(truth_values=[1.0] * 6), TypeError, "truth_values"),
    (dict(all_sequences=SEQS4[:, None]), ValueError, "all_sequences"),
    (dict(encoders="RN50"), TypeError, "encoders"),
    (dict(encoders=[("RN50",)]), TypeError, "encoders"),
    (dict(encoders=[("RN50", "openai"), ("RN50", "openai")]), ValueError, "encoders"),
    (dict(train=3), TypeError, "train"),
    (dict(edge_num_random=0), ValueError, "edge_num_random"),
    (dict(seeds=0), TypeError, "seeds"),
])
def test_bad_input_names_the_parameter(kwargs, exc, match):
    args = dict(class_names=NAMES4, num_tasks=2, truth_values=TRUTH4, all_sequences=SEQS4,
                encoders=[("no-such-model", "openai")])
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        encoder_comparison(**args)
