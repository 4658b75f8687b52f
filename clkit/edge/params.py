"""Validation of notebook 02_edge's parameters (one error per bad value, naming it)."""

from __future__ import annotations

from .._validate import check_choice, check_choices, check_int, check_real, check_type, check_seed
from ..data.class_names import CLASS_NAME_LISTS
from .combinatorics import check_num_tasks
from .experiment import DATASETS
from .learners import LEARNERS
from .similarity import ENCODERS

__all__ = ["check_params", "NOTEBOOK_SOURCES"]

#: similarity sources notebook 02 can compare: the chosen name encoder, other name
#: encoders, data-driven sources (clkit.edge.data_similarity) and the random null
NOTEBOOK_SOURCES = ("names", "clip", "minilm", "glove", "features", "backbone", "confusion", "random")


def check_params(*, dataset, classes, num_tasks, encoder, learners, n_train, n_test, epochs, hidden,
                 batch_size, lr, seeds, seed, granularities, num_random, num_bins, classic_datasets,
                 classic_num_tasks, edge_num_random=1, similarity_sources=("names",), num_null=5,
                 num_draws=30, intra_weight=0.0, truth="exact", truth_samples=256) -> dict:
    """Validate the parameters of notebook 02_edge; return them as a dict.

    Examples
    --------
    >>> p = dict(dataset="fashion_mnist", classes=[0, 1, 2, 3, 4, 5], num_tasks=3, encoder="auto",
    ...          learners=["finetune"], n_train=100, n_test=100, epochs=1, hidden=32, batch_size=32,
    ...          lr=0.05, seeds=[0, 42, 1993], seed=0, granularities=[], num_random=1000, num_bins=10,
    ...          classic_datasets=["cifar100"], classic_num_tasks=10)
    >>> check_params(**p)["num_tasks"]
    3
    >>> check_params(**{**p, "num_tasks": 4})
    Traceback (most recent call last):
    ...
    ValueError: num_tasks must divide num_classes into equal tasks: 6 classes cannot be split into 4 tasks (allowed: a divisor of 6 that is >= 2, e.g. [2, 3, 6])
    """
    from .images import IMAGE_DATASETS

    check_choice("dataset", dataset, list(DATASETS) + list(IMAGE_DATASETS))
    check_type("classes", classes, (list, tuple), "a list of class labels")
    top = {"cifar100": 99, "imagenet_r": 199, "cub200": 199}.get(dataset, 9)
    classes = [check_int("classes", c, low=0, high=top) for c in classes]
    if len(set(classes)) != len(classes):
        raise ValueError(f"classes has duplicates: {classes!r}")
    check_num_tasks(len(classes), num_tasks)   # all 10 classes at most: 10 / 5 -> 113,400 sequences (see the budget)
    check_choice("encoder", encoder, ENCODERS)
    if dataset not in IMAGE_DATASETS:   # the image protocol's learners are strategies (clkit.edge.images)
        learners = check_choices("learners", learners, LEARNERS)
    low = 2 if dataset in IMAGE_DATASETS else 10   # an image protocol's rehearsal keeps a few images per class
    check_int("n_train", n_train, low=low, high=6000)
    check_int("n_test", n_test, low=low, high=1000)
    check_int("epochs", epochs, low=1)
    check_int("hidden", hidden, low=1)
    check_int("batch_size", batch_size, low=1)
    check_real("lr", lr, low=0, low_open=True)
    check_type("seeds", seeds, (list, tuple), "a list of integer seeds")
    if len(seeds) < 2:
        raise ValueError(f"seeds must name at least 2 RS seeds (a std needs two values), got {seeds!r}")
    seeds = [check_int("seeds", s, low=0, high=2**32 - 1) for s in seeds]
    check_seed("seed", seed)
    check_type("granularities", granularities, (list, tuple), "a list of cluster counts ([] = default)")
    granularities = [check_int("granularities", g, low=1, high=len(classes)) for g in granularities]
    check_int("num_random", num_random, low=100)
    check_int("num_bins", num_bins, low=2)
    check_choices("classic_datasets", classic_datasets, [d for d in CLASS_NAME_LISTS if d != "fashion_mnist"],
                  min_len=0)
    for d in classic_datasets:
        check_num_tasks(CLASS_NAME_LISTS[d], classic_num_tasks)
    from .combinatorics import num_sequences

    check_int("edge_num_random", edge_num_random, low=1, high=num_sequences(len(classes), num_tasks) - 2)
    similarity_sources = check_choices("similarity_sources", similarity_sources, NOTEBOOK_SOURCES, min_len=0)
    check_int("num_null", num_null, low=1)
    check_int("num_draws", num_draws, low=2)
    check_real("intra_weight", intra_weight)
    from .truth import TRUTH_MODES

    check_choice("truth", truth, TRUTH_MODES)
    check_int("truth_samples", truth_samples, low=10)
    if truth == "sample":   # a sample of at most |Omega| sequences (|Omega| itself: exact the long way)
        check_int("truth_samples", truth_samples, low=10, high=num_sequences(len(classes), num_tasks))
    return dict(dataset=dataset, classes=classes, num_tasks=num_tasks, encoder=encoder, learners=learners,
                n_train=n_train, n_test=n_test, epochs=epochs, hidden=hidden, batch_size=batch_size, lr=lr,
                seeds=seeds, seed=seed, granularities=granularities, num_random=num_random, num_bins=num_bins,
                classic_datasets=list(classic_datasets), classic_num_tasks=classic_num_tasks,
                edge_num_random=edge_num_random, similarity_sources=list(similarity_sources),
                num_null=num_null, num_draws=num_draws, intra_weight=float(intra_weight), truth=truth,
                truth_samples=truth_samples)
