"""Class-name lists shipped with clkit (``data/class_names/*.txt``).

Official class order of each dataset, one name per line (``#`` lines are
comments stating the source and order):

- ``cifar10`` (10), ``cifar100`` (100 fine labels), ``fashion_mnist`` (10);
- ``cub200``: CUB-200-2011 species, ``classes.txt`` order, underscores as spaces;
- ``imagenet_r``: the 200 ImageNet-R classes in sorted-WordNet-id order, named by
  the CLIP ImageNet class names.
"""

from __future__ import annotations

from .._io import resource_dir

__all__ = ["CLASS_NAME_LISTS", "load_class_names"]

CLASS_NAME_LISTS = {"cifar10": 10, "cifar100": 100, "cub200": 200, "imagenet_r": 200, "fashion_mnist": 10}


def load_class_names(dataset: str) -> list[str]:
    """The class names of ``dataset`` in its official label order.

    Parameters
    ----------
    dataset : {"cifar10", "cifar100", "cub200", "imagenet_r", "fashion_mnist"}

    Examples
    --------
    >>> load_class_names("cifar100")[:3]
    ['apple', 'aquarium_fish', 'baby']
    >>> len(load_class_names("imagenet_r"))
    200
    """
    if dataset not in CLASS_NAME_LISTS:
        raise ValueError(f"dataset must be one of {list(CLASS_NAME_LISTS)}, got {dataset!r}")
    path = resource_dir("data/class_names") / f"{dataset}.txt"
    lines = path.read_text(encoding="utf-8").splitlines()
    names = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]
    if len(names) != CLASS_NAME_LISTS[dataset]:
        raise ValueError(f"{path} lists {len(names)} classes, expected {CLASS_NAME_LISTS[dataset]}")
    return names
