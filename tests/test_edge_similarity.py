"""Class similarity from names (offline encoders, CLIP fail-fast, cache) and the shipped name lists."""

import time

import numpy as np
import pytest

from clkit.data.class_names import CLASS_NAME_LISTS, load_class_names
from clkit.data.images import FASHION_MNIST_CLASSES
from clkit.edge import EncoderUnavailableError, class_similarity, cosine_similarity
from clkit.edge.similarity import _reachable


def test_cosine_similarity_is_symmetric_with_unit_diagonal():
    E = np.random.default_rng(0).normal(size=(7, 4))
    S = cosine_similarity(E)
    assert np.allclose(S, S.T) and np.allclose(np.diag(S), 1.0)
    assert S[0, 1] == pytest.approx(E[0] @ E[1] / np.linalg.norm(E[0]) / np.linalg.norm(E[1]))


def test_callable_encoder_templates_are_averaged():
    calls = []

    def enc(texts):
        calls.append(list(texts))
        return np.array([[1.0, 0.0] if "cat" in t else [0.0, 1.0] for t in texts])

    res = class_similarity(["cat", "dog"], encoder=enc, templates=["a {}", "the {}"])
    assert calls == [["a cat", "the cat", "a dog", "the dog"]]
    assert res.encoder == "callable" and res.matrix[0, 1] == pytest.approx(0.0)
    assert np.asarray(res).shape == (2, 2)


def test_captions_replace_templated_names():
    seen = []
    class_similarity(["cat", "dog"], encoder=lambda t: seen.extend(t) or np.eye(2),
                     captions=["a small furry pet", "a loyal barking pet"])
    assert seen == ["a small furry pet", "a loyal barking pet"]


def test_glove_encoder_is_offline_semantic_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("CLKIT_DATA", str(tmp_path))
    res = class_similarity(["cat", "dog", "truck"], "glove")
    S = res.matrix
    assert res.encoder == "glove:6B-50d"
    assert S[0, 1] > S[0, 2] and S[0, 1] > S[1, 2]
    files = list((tmp_path / "embeddings").glob("*.npy"))
    assert len(files) == 1
    again = class_similarity(["cat", "dog", "truck"], "glove")
    assert np.array_equal(again.matrix, S)


def test_minilm_is_offline_and_auto_reports_which_encoder(tmp_path, monkeypatch):
    monkeypatch.setenv("CLKIT_DATA", str(tmp_path))
    if _reachable("huggingface.co", timeout=1.0):
        pytest.skip("network reachable: CLIP may load here")
    start = time.perf_counter()
    with pytest.raises(EncoderUnavailableError, match="offline"):
        class_similarity(["apple", "pear"], "clip")
    assert time.perf_counter() - start < 60          # fails fast: no download attempt hangs
    res = class_similarity(["apple", "pear", "truck"], "auto")
    assert res.encoder == "minilm:all-MiniLM-L6-v2"
    assert any("clip unavailable" in n for n in res.notes)
    assert res.matrix[0, 1] > res.matrix[0, 2]


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(class_names=["cat", "dog", "cat"]), ValueError, "class_names has duplicates"),
    (dict(class_names=["cat"]), ValueError, "class_names must name at least 2"),
    (dict(class_names="cat dog"), TypeError, "class_names must be a list"),
    (dict(class_names=["cat", "dog"], encoder="bert"), ValueError, "encoder must be one of"),
    (dict(class_names=["cat", "dog"], templates=["a photo"]), ValueError, "templates"),
    (dict(class_names=["cat", "dog"], captions=["only one"]), ValueError, "captions"),
])
def test_bad_similarity_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        class_similarity(**kwargs)


@pytest.mark.parametrize("dataset,first,last", [
    ("cifar10", "airplane", "truck"), ("cifar100", "apple", "worm"),
    ("cub200", "Black footed Albatross", "Common Yellowthroat"), ("imagenet_r", "goldfish", "acorn"),
    ("fashion_mnist", "T-shirt/top", "Ankle boot")])
def test_shipped_class_names_are_official_lists(dataset, first, last):
    names = load_class_names(dataset)
    assert len(names) == CLASS_NAME_LISTS[dataset] == len(set(names))
    assert (names[0], names[-1]) == (first, last)


def test_class_name_lists_spot_checks():
    c100 = load_class_names("cifar100")
    assert c100 == sorted(c100) and c100[:6] == ["apple", "aquarium_fish", "baby", "bear", "beaver", "bed"]
    assert load_class_names("cub200")[16] == "Cardinal"                 # 017.Cardinal
    assert load_class_names("imagenet_r")[:4] == ["goldfish", "great white shark", "hammerhead shark", "stingray"]
    assert tuple(load_class_names("fashion_mnist")) == FASHION_MNIST_CLASSES
    with pytest.raises(ValueError, match="dataset must be one of"):
        load_class_names("mnist")


def test_prototype_similarity_and_agreement():
    from clkit.edge import prototype_similarity, similarity_agreement

    rng = np.random.default_rng(0)
    centres = rng.normal(size=(6, 8))
    feats = centres[:, None, :] + 0.01 * rng.normal(size=(6, 50, 8))
    img = prototype_similarity(feats, [f"c{i}" for i in range(6)])
    assert img.encoder == "image-prototypes"
    assert np.allclose(img.matrix, cosine_similarity(centres), atol=1e-2)
    same = similarity_agreement(img, img.matrix, 3)
    assert same == {"mae": 0.0, "spearman": pytest.approx(1.0), "csg": 1.0}
    other = similarity_agreement(img, cosine_similarity(rng.normal(size=(6, 8))), 3)
    assert other["mae"] > 0 and other["spearman"] < 1
    with pytest.raises(ValueError, match="features must have shape"):
        prototype_similarity(np.zeros((6, 8)))
