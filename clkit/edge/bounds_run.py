"""Fig. 5's classic splits on the image protocols: every class of a dataset trained under RS's and EDGE's orders.

:func:`classic_bounds_run` loads a whole classic split (all classes of CIFAR-100, ImageNet-R or
CUB-200, each cut to the smallest class's image count), computes the frozen ViT features once and
hands :func:`clkit.edge.bounds.classic_bounds` the training of notebook 02's learners on those
classes. It sits above :mod:`clkit.edge.images` and :mod:`clkit.edge.protocol` (it uses both;
neither imports it), so the imports go one way.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_choice
from .images import (IMAGE_DATASETS, NATIVE_SIZE, ViTSpec, _arrays, _subsample, frozen_features, split_learners,
                     strategy_inputs)
from .protocol import stream_settings

__all__ = ["classic_bounds_run", "check_bounds_learners"]


def _equal_counts(x, y, num_classes: int, rng, dataset: str, split: str):
    """Per class the same number of images: the smallest class's count (ImageNet-R's classes vary)."""
    counts = np.bincount(y, minlength=num_classes)
    n = int(counts.min())
    if n < 1:
        raise ValueError(f"{dataset}'s {split} split has a class without images (class {int(counts.argmin())})")
    return _subsample(x, y, num_classes, n, rng, dataset, split), n


def classic_bounds_run(dataset: str, learners, config, *, num_tasks: int = 10, encoder: str = "clip",
                       clip_model: str = "ViT-B-16", clip_pretrained: str = "openai", spec: ViTSpec | None = None,
                       backbone: str = "auto", learner_kwargs: dict | None = None, n_train: int | None = None,
                       n_test: int | None = None,
                       image_size: int | None = None, seed: int = 0, download: bool = False, device=None,
                       seeds=(0, 42, 1993), edge_num_random: int = 1, progress: bool = False,
                       shuffle: str = "pycil"):
    """Fig. 5 on one dataset: every class of its classic split trained under RS's and EDGE's sequences.

    Loads all classes of ``dataset`` (:data:`~clkit.edge.images.IMAGE_DATASETS`) through its loader, each class cut
    to the same number of images (the smallest class's, at most ``n_train`` / ``n_test``; drawn
    with ``seed``), computes the frozen ViT features once, builds the similarity of the class names
    with ``encoder`` and hands :func:`clkit.edge.bounds.classic_bounds` a ``train`` that trains
    each learner (:func:`~clkit.edge.images.split_learners`: ``"ncm"`` batched, the rest strategies with their
    :func:`~clkit.edge.images.strategy_inputs`) on the given sequences with ``config`` -- the ground truth's
    training, on ``N / num_tasks`` classes per task.

    Returns
    -------
    clkit.edge.bounds.ClassicBounds
        Its first note says which data, ViT weights and class-name encoder the run used.
    """
    from ..data.images import load_image_dataset
    from ..plugins import resolve_strategy
    from .bounds import classic_bounds
    from .experiment import run_learners
    from .learners import train_strategy_sequences
    from .similarity import class_similarity

    check_choice("bounds_datasets", dataset, list(IMAGE_DATASETS))
    spec = spec or ViTSpec()
    size = None if dataset == "cifar100" else (image_size or NATIVE_SIZE[dataset])
    ds = load_image_dataset(dataset, download, image_size=size)
    C = len(ds.classes)
    rng = np.random.default_rng(seed)
    raw_tr, ntr = _equal_counts(ds.x_train, ds.y_train, C, rng, dataset, "train")
    raw_te, nte = _equal_counts(ds.x_test, ds.y_test, C, rng, dataset, "test")
    raw_tr, raw_te = raw_tr[:, :n_train or None], raw_te[:, :n_test or None]
    ntr, nte = raw_tr.shape[1], raw_te.shape[1]
    H, W = raw_tr.shape[2:4]
    data = _arrays(raw_tr, raw_te, dataset)
    feats = frozen_features(raw_tr, raw_te, spec, device=device)
    data.update(f_train=feats["f_train"], f_test=feats["f_test"])
    own, strategies = split_learners(learners)
    # the classic split's own number of tasks (CODA-Prompt's pool is split over them)
    kwargs = stream_settings(strategies, learner_kwargs or {}, num_tasks, force=True)
    inputs = strategy_inputs(data, strategies, backbone=backbone, spec=spec, learner_kwargs=kwargs)

    def train(seqs):
        out = {k: 100 * v["avg_acc"] for k, v in run_learners(
            data, seqs, own, config, seed=seed, learner_kwargs=kwargs, progress=progress, device=device).items()} \
            if own else {}
        for name in strategies:
            xtr, xte, factory = inputs[name]
            out[name] = 100 * train_strategy_sequences(
                xtr, xte, seqs, resolve_strategy(name, parameter="learners"), config, seed=seed,
                model_factory=factory, strategy_kwargs=kwargs.get(name), device=device)["avg_acc"]
        return out

    names = list(ds.classes)
    sim = class_similarity(names, encoder, clip_model=clip_model, clip_pretrained=clip_pretrained, device=device)
    res = classic_bounds(names, num_tasks, sim, train, seeds=seeds, edge_num_random=edge_num_random,
                         shuffle=shuffle)
    res.notes.insert(0, f"data: {dataset} ({ds.source}): all {C} classes, {ntr}/{nte} train/test images per class "
                       f"(the smallest class's count, at most n_train / n_test), {H}x{W}; "
                       f"frozen features: {'tiny ViT' if spec.tiny else spec.model}, weights: {feats['weights_source']}; "
                       f"class-name encoder: {sim.encoder}")
    return res


def check_bounds_learners(bounds_learners, learners) -> list:
    """Fig. 5's learners: ``bounds_learners`` (each one of the run's ``learners``) or, when empty, ``learners``.

    Examples
    --------
    >>> check_bounds_learners([], ["ewc", "ranpac"]), check_bounds_learners(["ranpac"], ["ewc", "ranpac"])
    (['ewc', 'ranpac'], ['ranpac'])
    >>> check_bounds_learners(["l2p"], ["ewc"])
    Traceback (most recent call last):
    ...
    ValueError: bounds_learners contains 'l2p', which is not one of this run's learners ['ewc']; allowed: a subset of learners, or [] for all of them
    """
    from .._validate import check_type

    check_type("bounds_learners", bounds_learners, (list, tuple), "a list of learner names")
    for name in bounds_learners:
        if name not in learners:
            raise ValueError(f"bounds_learners contains {name!r}, which is not one of this run's learners "
                             f"{list(learners)}; allowed: a subset of learners, or [] for all of them")
    return list(bounds_learners) or list(learners)
