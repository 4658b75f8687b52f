"""clkit.data.fixtures.graphs (CoraFull's raw cora.npz) and clkit.data.fixtures.clip (a tiny open_clip folder).

The fabricated files are read by the real loaders -- torch-geometric's ``CoraFull`` and
open_clip's ``local-dir:`` loader -- offline: every test forbids sockets and points the
clkit data cache at a temporary folder.
"""

import logging
import socket

import numpy as np
import pytest
import torch

from clkit.data import DatasetNotFoundError, fixtures
from clkit.data import graphs
from clkit.data.fixtures.clip import CONFIG_NAME, WEIGHTS_NAME, clip_params, write_clip
from clkit.data.fixtures.graphs import CORAFULL_HOMOPHILY, write_corafull
from clkit.data.graphs import edge_homophily, load_graph
from clkit.edge.similarity import EncoderUnavailableError, class_similarity, encode_texts

SMALL = dict(num_nodes=300, num_classes=10, num_features=100)


@pytest.fixture(autouse=True)
def offline(tmp_path, monkeypatch):
    """The data cache in tmp_path, Hugging Face offline, and no socket may connect."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setenv("CLKIT_DATA", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


# --------------------------------------------------------------------------- CoraFull

def test_corafull_is_read_by_torch_geometric_offline(tmp_path, monkeypatch):
    path = write_corafull(tmp_path, seed=0)
    assert path == tmp_path / "corafull" / "cora" / "raw" / "cora.npz"
    monkeypatch.setattr(graphs, "_host_reachable", lambda host, timeout: pytest.fail("network probe"))
    g = load_graph("corafull")
    assert g.source.startswith("corafull via CoraFull from")
    assert (g.num_nodes, g.num_classes, g.x.shape[1]) == (1400, 70, 500)
    counts = torch.bincount(g.y, minlength=70)
    assert int(counts.min()) >= 7  # every class splits into train, validation and test nodes
    # torch-geometric made the directed citations undirected: every edge both ways, no self-loop
    ei = g.edge_index
    assert (ei[0] != ei[1]).all()
    assert set(map(tuple, ei.T.tolist())) == set(map(tuple, ei.flip(0).T.tolist()))
    assert 5.0 < g.stats()["avg_degree"] < 6.5
    assert CORAFULL_HOMOPHILY - 0.1 < edge_homophily(ei, g.y) <= CORAFULL_HOMOPHILY + 0.02
    # binary bags of words that name the class: nearest class centroid far above chance (1/70)
    x = g.x.numpy()
    assert set(np.unique(x)) == {0.0, 1.0} and x.sum(1).min() >= 1
    test = np.random.default_rng(0).random(g.num_nodes) < 0.3
    y = g.y.numpy()
    means = np.stack([x[~test & (y == c)].mean(0) for c in range(70)])
    scores = (x[test] / np.linalg.norm(x[test], axis=1, keepdims=True)) @ (
        means / np.linalg.norm(means, axis=1, keepdims=True)).T
    assert (scores.argmax(1) == y[test]).mean() > 0.3

    # the second load reads the processed copy torch-geometric wrote
    processed = tmp_path / "corafull" / "cora" / "processed" / "data_undirected.pt"
    stamp = processed.stat().st_mtime_ns
    again = load_graph("corafull")
    assert processed.stat().st_mtime_ns == stamp
    assert torch.equal(again.edge_index, g.edge_index) and torch.equal(again.x, g.x)


def test_corafull_is_deterministic_for_a_seed(tmp_path):
    a = write_corafull(tmp_path / "a", seed=3, **SMALL).read_bytes()
    b = write_corafull(tmp_path / "b", seed=3, **SMALL).read_bytes()
    c = np.load(write_corafull(tmp_path / "c", seed=4, **SMALL))
    assert a == b
    with np.load(tmp_path / "a" / "corafull" / "cora" / "raw" / "cora.npz") as f:
        assert not np.array_equal(f["labels"], c["labels"])
        assert not np.array_equal(f["adj_indices"], c["adj_indices"])
    assert fixtures.write("corafull", tmp_path / "d", seed=3, **SMALL).read_bytes() == a
    assert not list((tmp_path / "a").rglob("*.tmp*"))  # no temporary file left behind


def test_corafull_missing_names_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setattr(graphs, "_host_reachable", lambda host, timeout: False)
    with pytest.raises(DatasetNotFoundError, match="corafull") as err:
        load_graph("corafull")
    message = str(err.value)
    assert str(tmp_path / "corafull" / "cora" / "raw" / "cora.npz") in message
    assert "github.com" in message and "CoraFull" in message


@pytest.mark.parametrize("sizes, match", [
    (dict(num_nodes=50, num_classes=10), r"num_nodes must be an integer in \[100, 19793\], got 50"),
    (dict(num_classes=71), r"num_classes must be an integer in \[2, 70\], got 71"),
    (dict(num_features=5), r"num_features must be an integer in \[10, 8710\], got 5"),
])
def test_corafull_rejects_bad_sizes(tmp_path, sizes, match):
    with pytest.raises(ValueError, match=match):
        write_corafull(tmp_path, **sizes)


# --------------------------------------------------------------------------- CLIP

TEXTS = ["a photo of a cat.", "a photo of a dog.", "a photo of a truck."]


def test_clip_folder_loads_through_open_clip_offline(tmp_path, caplog):
    import open_clip

    folder = write_clip(tmp_path, seed=0)
    assert folder.parent == tmp_path / "clip"
    assert sorted(p.name for p in folder.iterdir()) == [CONFIG_NAME, WEIGHTS_NAME]
    params = clip_params(folder)
    with caplog.at_level(logging.INFO):
        E = encode_texts(TEXTS, "clip", cache=False, **params)
    # open_clip's own local-dir loader read the weights file (not a random initialisation)
    assert f"Loading full pretrained weights from: {folder / WEIGHTS_NAME}" in caplog.text
    assert E.shape == (3, 32) and E.dtype == np.float32 and np.isfinite(E).all()
    assert not np.allclose(E[0], E[1])
    tok = open_clip.get_tokenizer(params["clip_model"])
    assert isinstance(tok, open_clip.tokenizer.SimpleTokenizer) and tok.context_length == 77

    sim = class_similarity(["cat", "dog", "truck"], "clip", **params)
    assert sim.encoder == f"clip:{params['clip_model']}/{params['clip_pretrained']}"
    assert sim.matrix.shape == (3, 3) and np.allclose(np.diag(sim.matrix), 1.0)


def test_clip_weights_are_deterministic_for_a_seed(tmp_path):
    before = torch.random.get_rng_state()
    a, b = write_clip(tmp_path / "a", seed=1, layers=1), write_clip(tmp_path / "b", seed=1, layers=1)
    c = write_clip(tmp_path / "c", seed=2, layers=1)
    assert torch.equal(torch.random.get_rng_state(), before)  # the caller's random state is untouched
    assert (a / WEIGHTS_NAME).read_bytes() == (b / WEIGHTS_NAME).read_bytes()
    assert a.name == b.name != c.name
    ea, eb, ec = (encode_texts(TEXTS, "clip", cache=False, **clip_params(p)) for p in (a, b, c))
    assert np.array_equal(ea, eb) and not np.allclose(ea, ec)
    assert fixtures.write("clip", tmp_path / "d", seed=1, layers=1).name == a.name
    assert [p.name for p in (tmp_path / "a" / "clip").iterdir()] == [a.name]  # no work folder left


def test_clip_missing_files_give_encoder_unavailable(tmp_path):
    with pytest.raises(EncoderUnavailableError, match="open_clip_config.json"):
        encode_texts(TEXTS, "clip", cache=False, **clip_params(tmp_path / "nowhere"))
    folder = write_clip(tmp_path, seed=5, layers=1)
    (folder / WEIGHTS_NAME).unlink()
    with pytest.raises(EncoderUnavailableError, match=str(folder)):
        class_similarity(["cat", "dog"], "clip", cache=False, **clip_params(folder))


@pytest.mark.parametrize("sizes, match", [
    (dict(width=30, heads=4), "width must be a multiple of heads = 4, got 30"),
    (dict(layers=0), r"layers must be an integer in \[1, 12\], got 0"),
    (dict(context_length=100), r"context_length must be an integer in \[8, 77\], got 100"),
])
def test_clip_rejects_bad_sizes(tmp_path, sizes, match):
    with pytest.raises(ValueError, match=match):
        write_clip(tmp_path, **sizes)
