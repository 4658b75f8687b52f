"""Class similarity from data: a model's class-mean features or its confusions.

The paper builds the similarity from class *names* (CLIP text encoder), which needs
no images. When images (or a trained model) are at hand, the similarity can come
from what a model actually finds alike. Sources of :func:`data_class_similarity`
(also reachable as ``class_similarity(..., source=...)``):

``"features"``
    Cosine similarity of the class-mean features of a model, centred on the mean
    of the class means (the component every class shares would otherwise make all
    cosines close to 1). The model is ``backbone`` (any callable mapping inputs to
    features, e.g. a pre-trained network) or, without one, a one-hidden-layer MLP
    that clkit trains for ``epochs`` on the classes (seconds on a CPU for a few
    thousand small images). Needs labelled inputs. Precomputed class features can
    be passed as ``features`` (shape (N, d) means, or (N, n, d) per image).
``"confusion"``
    Symmetrised soft confusion of the same model on a held-out ``holdout`` share
    of every class: ``P[i, j]`` is the mean softmax probability of class j on
    held-out images of class i, and ``sim = (P + P.T) / 2`` off the diagonal, 1 on
    it -- how often the model mixes up the two classes (pairwise separability).
    Needs labelled inputs and a model; ``confusion`` takes a precomputed (N, N)
    confusion matrix (counts or rates; rows are normalised).
``"random"``
    The null source: cosines of random Gaussian class vectors (``seed``). Any
    effect a source shows must exceed what this one shows.

Cost and needs, in short: names -- a text encoder, no data; features / confusion --
labelled images and a few seconds of training (or a backbone); random -- nothing.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_choice, check_int, check_real
from .similarity_matrix import ClassSimilarity, check_class_names, cosine_similarity

__all__ = ["DATA_SOURCES", "SOURCES", "data_class_similarity", "train_probe", "soft_confusion"]

DATA_SOURCES = ("features", "confusion", "random")
SOURCES = ("names",) + DATA_SOURCES


def _names(class_names, n):
    if class_names is None:
        return [str(i) for i in range(n)]
    names = check_class_names(list(class_names))
    if len(names) != n:
        raise ValueError(f"class_names must name the {n} classes of the data, got {len(names)} names")
    return names


def _per_class(x, y, num_classes):
    """Inputs as a list of (n_c, D) arrays, one per class."""
    X = np.asarray(x, dtype=np.float32)
    if y is None:
        if X.ndim < 3:
            raise ValueError(f"x must have shape (N classes, n per class, D...) when y is not given, "
                             f"got shape {X.shape}")
        if num_classes is not None and X.shape[0] != num_classes:
            raise ValueError(f"x holds {X.shape[0]} classes but num_classes is {num_classes}")
        return [X[c].reshape(X.shape[1], -1) for c in range(X.shape[0])]
    Y = np.asarray(y)
    if Y.ndim != 1 or len(Y) != len(X):
        raise ValueError(f"y must be a 1-D label array as long as x ({len(X)}), got shape {Y.shape}")
    if not np.issubdtype(Y.dtype, np.integer) or Y.min() < 0:
        raise ValueError(f"y must hold integer class labels 0..N-1, got dtype {Y.dtype}, min {Y.min()}")
    n = int(Y.max()) + 1 if num_classes is None else num_classes
    if Y.max() >= n:
        raise ValueError(f"y has label {int(Y.max())} but num_classes is {n}")
    out = [X[Y == c].reshape(int((Y == c).sum()), -1) for c in range(n)]
    empty = [c for c, a in enumerate(out) if len(a) < 2]
    if empty:
        raise ValueError(f"every class needs at least 2 examples in x; classes {empty} have fewer")
    return out


def train_probe(per_class, *, hidden: int = 64, epochs: int = 5, lr: float = 0.05, batch_size: int = 64,
                seed: int = 0, device=None, precision: str | None = None):
    """Train a one-hidden-layer MLP on per-class inputs; return ``(features, probabilities)`` callables.

    ``features(z)`` is the hidden ReLU layer, ``probabilities(z)`` the softmax output (host
    arrays in and out). Deterministic given ``seed`` (local generators, one thread).
    ``device`` / ``precision``: where and in which autocast precision it trains and runs
    (:func:`~clkit.edge.learners.train_mlp_classifier`; default the CPU, fp32).
    """
    import torch

    from .learners import feature_map, train_mlp_classifier

    x = np.concatenate(per_class).astype(np.float32)
    y = np.concatenate([np.full(len(a), c) for c, a in enumerate(per_class)])
    net = train_mlp_classifier(x, y, len(per_class), hidden, epochs=epochs, batch_size=batch_size, lr=lr,
                               seed=seed, device=device, precision=precision)
    return (feature_map(net[:2], num_threads=1),
            feature_map(torch.nn.Sequential(net, torch.nn.Softmax(dim=1)), num_threads=1))


def soft_confusion(probabilities, per_class) -> np.ndarray:
    """``P[i, j]``: mean predicted probability of class j over the inputs of class i."""
    return np.stack([np.asarray(probabilities(a)).mean(axis=0) for a in per_class])


def _split(per_class, holdout, rng):
    fit, held = [], []
    for a in per_class:
        perm = rng.permutation(len(a))
        h = max(1, int(round(holdout * len(a))))
        held.append(a[perm[:h]])
        fit.append(a[perm[h:]])
    return fit, held


def _check_confusion(confusion, n):
    C = np.asarray(confusion, dtype=float)
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise ValueError(f"confusion must be a square (N, N) matrix, got shape {C.shape}")
    if n is not None and C.shape[0] != n:
        raise ValueError(f"confusion has {C.shape[0]} classes but class_names name {n}")
    if not np.isfinite(C).all() or (C < 0).any():
        raise ValueError("confusion must hold finite non-negative counts or rates")
    rows = C.sum(axis=1, keepdims=True)
    if (rows == 0).any():
        raise ValueError(f"confusion has an all-zero row (class {int(np.argmin(rows))}); rows are normalised")
    return C / rows


def _confusion_similarity(P):
    S = (P + P.T) / 2
    np.fill_diagonal(S, 1.0)
    return S


def data_class_similarity(source: str, x=None, y=None, *, class_names=None, num_classes=None, backbone=None,
                          features=None, confusion=None, hidden: int = 64, epochs: int = 5, lr: float = 0.05,
                          holdout: float = 0.3, center: bool = True, seed: int = 0, device=None,
                          precision: str | None = None) -> ClassSimilarity:
    """Class similarity from data (see the module docstring for the sources).

    Parameters
    ----------
    source : {"features", "confusion", "random"}
    x, y : array_like, optional
        Labelled inputs: ``x`` of shape (N, n, D...) per class, or (n_total, D...)
        with integer labels ``y`` in ``0..N-1``.
    class_names : list of str, optional
    num_classes : int, optional
        Needed by ``"random"`` when neither data nor names give N.
    backbone : callable, optional
        ``backbone(inputs (n, D)) -> features (n, d)``; the class-mean features
        (``"features"``) or the probe trained on them (``"confusion"``) use it.
    features : array_like, optional
        Precomputed class features, (N, d) or (N, n, d) (``"features"`` only).
    confusion : array_like, optional
        Precomputed (N, N) confusion matrix (``"confusion"`` only).
    hidden, epochs, lr : MLP probe size and training (when clkit trains it).
    holdout : float
        Share of every class held out to measure confusions (0 < holdout < 1).
    center : bool
        Centre class-mean features on their mean before the cosine.
    seed : int
    device : clkit.device.RunDevice, torch.device or str, optional
        Where the MLP probe trains and runs (default the CPU).
    precision : {"fp32", "bf16", "fp16"}, optional
        Autocast of the probe's training (default the RunDevice's, else fp32).

    Returns
    -------
    ClassSimilarity
        ``.encoder`` says which source and model produced it.

    Examples
    --------
    >>> f = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    >>> data_class_similarity("features", features=f, center=False).matrix.round(2).tolist()
    [[1.0, 0.99, 0.0], [0.99, 1.0, 0.11], [0.0, 0.11, 1.0]]
    >>> data_class_similarity("confusion", confusion=[[8, 2], [1, 9]]).matrix.tolist()
    [[1.0, 0.15], [0.15, 1.0]]
    """
    check_choice("source", source, DATA_SOURCES)
    seed = check_int("seed", seed, low=0)
    holdout = check_real("holdout", holdout, low=0.0, high=1.0, low_open=True, high_open=True)
    lr = check_real("lr", lr, low=0.0, low_open=True)
    if backbone is not None and not callable(backbone):
        raise TypeError(f"backbone must be a callable mapping inputs to features, got {backbone!r}")
    rng = np.random.default_rng(seed)

    if source == "random":
        n = num_classes
        if n is None:
            n = len(class_names) if class_names is not None else (len(_per_class(x, y, None)) if x is not None else None)
        if n is None:
            raise ValueError("source='random' needs num_classes, class_names or data to know N")
        n = check_int("num_classes", n, low=2)
        E = rng.normal(size=(n, 16))
        return ClassSimilarity(cosine_similarity(E), f"random (null; seed {seed})", _names(class_names, n),
                               E / np.linalg.norm(E, axis=1, keepdims=True))

    if source == "features" and features is not None:
        F = np.asarray(features, dtype=float)
        if F.ndim == 3:
            F = F.mean(axis=1)
        if F.ndim != 2 or F.shape[0] < 2:
            raise ValueError(f"features must have shape (N, d) or (N, n, d) with N >= 2, got {np.shape(features)}")
        n = len(class_names) if class_names is not None else num_classes
        if n is not None and F.shape[0] != n:
            raise ValueError(f"features has {F.shape[0]} classes but there are {n} classes "
                             f"(class_names / num_classes)")
        means, used = F, "features (given)"
    elif source == "confusion" and confusion is not None:
        n = len(class_names) if class_names is not None else num_classes
        P = _check_confusion(confusion, n)
        return ClassSimilarity(_confusion_similarity(P), "confusion (given)", _names(class_names, len(P)), None)
    else:
        if x is None:
            raise ValueError(f"source={source!r} needs labelled inputs x (and y), or precomputed "
                             f"{'features' if source == 'features' else 'confusion'}")
        n_names = len(class_names) if class_names is not None else num_classes
        per_class = _per_class(x, y, n_names)
        if backbone is not None:
            per_class = [np.asarray(backbone(a), dtype=np.float32).reshape(len(a), -1) for a in per_class]
        if source == "features" and backbone is not None:       # no probe needed
            per_class_means = np.stack([a.mean(axis=0) for a in per_class])
            return _feature_result(per_class_means, "class-mean backbone features", class_names, center)
        fit, held = _split(per_class, holdout, rng)
        feats, probs = train_probe(fit, hidden=check_int("hidden", hidden, low=2),
                                   epochs=check_int("epochs", epochs, low=1), lr=lr, seed=seed, device=device,
                                   precision=precision)
        model = ("backbone + " if backbone is not None else "") + f"MLP probe ({hidden} hidden, {epochs} epochs)"
        if source == "confusion":
            P = soft_confusion(probs, held)
            return ClassSimilarity(_confusion_similarity(P), f"confusion of {model}",
                                   _names(class_names, len(per_class)), None)
        means = np.stack([feats(a).mean(axis=0) for a in per_class])
        used = f"class-mean features of {model}"
    return _feature_result(means, used, class_names, center)


def _feature_result(means, used, class_names, center):
    if center:
        means = means - means.mean(axis=0, keepdims=True)
    return ClassSimilarity(cosine_similarity(means), used + (" (centred)" if center else ""),
                           _names(class_names, len(means)), means / np.linalg.norm(means, axis=1, keepdims=True))
