"""Notebook 04's paper rehearsal: a ``paper*`` set on fabricated files in the six datasets' own formats.

``rehearse: true`` keeps a paper set's structure -- the six datasets (MNIST, Omniglot,
Fashion-MNIST, SVHN, CIFAR-10, TinyImageNet) through clkit's real loaders, reading files
that :mod:`clkit.data.fixtures.images` writes in each dataset's own layout; the set's backbone
(Wide-VGG9, EfficientNet-b1 or ResNet34); the class-incremental scenario with the paper's 14
strategies (MSTE and PNN, task-incremental only, skipped: twelve run) and the paper's settings;
SGD; the difficulty measurement, the choice of tasks, M2I and I2M, the metrics, verdicts and
figures -- and cuts every size, count and number of epochs by :data:`clkit.rehearsal.RULE` (:data:`PLAN`).

The image side is one of those sizes: Wide-VGG9's four 2x2 poolings need at least 16 pixels,
so a rehearsal runs it at 16x16, which costs about a sixteenth of a 64x64 step (clkit's
``wide_vgg9`` ends in a global average pool, the same network at any size; the authors'
``wide_vgg9_bn`` flattens its last pool, so its first linear layer takes 512 inputs at 16x16
where it takes 8,192 at 64x64). The other paper sets' backbones, EfficientNet-b1 and ResNet34
with batch norm, need 33 pixels (:data:`clkit.models.cnn.MIN_IMAGE_SIZE`), so their rehearsals
run at 33x33 (:func:`plan_for`). The paper's 64x64 step is timed on a GPU by ``python benchmarks/gpu_check.py``.
"""

from __future__ import annotations

from dataclasses import replace

from ..data.fixtures import FIXTURES
from ..models.cnn import MIN_IMAGE_SIZE
from ..rehearsal import MIN_SEEDS, Cap, Plan

__all__ = ["PLAN", "CAPS", "fixture_sizes", "plan_for", "prepare"]

#: the rehearsal's image side: WideVGG9's four poolings need 16 pixels
_IMAGE_SIZE = 16

#: the largest Omniglot count per split: 20 drawings per character, split 10 / 10 by the loader
_OMNIGLOT_SPLIT = 10

#: every size, count and number of epochs of notebook 04, with its rehearsal value
CAPS = (
    Cap("per_class_train", 1, "training images per class (10 per task)"),
    Cap("per_class_test", 1, "test images per class (10 per task)"),
    Cap("image_size", _IMAGE_SIZE, "side of the images: WideVGG9's four poolings need 16; the GPU check times it "
                                   "at 64 px"),
    Cap("epochs", 1, "training epochs per task"),
    Cap("difficulty_epochs", 1, "epochs of each single-task run"),
    Cap("batch_size", 16, "mini-batch rows (a task's 10 rows in one step; Cumulative's later tasks in several)"),
    Cap("seeds", MIN_SEEDS, "seeds: the verdict rule's minimum"),
    Cap("memory_size", 5, "memory rows (replay, A-GEM, GDumb): fewer than a task's rows, so the memories choose"),
    Cap("agem_sample_size", 4, "A-GEM memory rows per reference gradient"),
    Cap("gem_patterns_per_task", 5, "GEM memory rows per task"),
    Cap("workers", 2, "worker processes (the CI machine has 2 cores)"),
)


def fixture_sizes(values: dict) -> dict:
    """The datasets a (cut) parameter set loads that have a fabricated writer, with their sizes.

    Every dataset gets ``per_class_train`` / ``per_class_test`` images per class; Omniglot,
    whose loader splits each character's drawings alternately, gets the larger of the two in
    both splits (at most its real 10).

    Examples
    --------
    >>> fixture_sizes({"datasets": ["mnist", "omniglot", "digits"], "per_class_train": 3, "per_class_test": 2})
    {'mnist': {'per_class_train': 3, 'per_class_test': 2}, 'omniglot': {'per_class_train': 3, 'per_class_test': 3}}
    >>> fixture_sizes({"datasets": ["omniglot"], "per_class_train": 500, "per_class_test": 500})
    {'omniglot': {'per_class_train': 10, 'per_class_test': 10}}
    """
    train, test = values["per_class_train"], values["per_class_test"]
    out = {}
    for name in values["datasets"]:
        if name not in FIXTURES:
            continue   # shipped offline (digits, mnist_subset) or a user's folder: read as it is
        if name == "omniglot":
            n = min(max(train, test), _OMNIGLOT_SPLIT)
            out[name] = {"per_class_train": n, "per_class_test": n}
        else:
            out[name] = {"per_class_train": train, "per_class_test": test}
    return out


#: the rehearsal of notebook 04's ``paper`` set (``clkit run 04 --params paper -p rehearse true``)
PLAN = Plan("04_curriculum", CAPS, switches={"download": False}, fixtures=fixture_sizes)


def plan_for(backbone) -> Plan:
    """:data:`PLAN` with the image side capped where ``backbone`` trains: 16 pixels, or the backbone's
    :data:`~clkit.models.cnn.MIN_IMAGE_SIZE` where that is larger (33 for EfficientNet-b1 and ResNet34
    with batch norm), so a rehearsal never cuts below what its backbone accepts.

    Examples
    --------
    >>> [c.cap for c in plan_for("wide_vgg9_bn").caps if c.name == "image_size"]
    [16]
    >>> [c.cap for c in plan_for("resnet34_bn").caps if c.name == "image_size"]
    [33]
    """
    side = max(_IMAGE_SIZE, MIN_IMAGE_SIZE.get(backbone, 0) if isinstance(backbone, str) else 0)
    if side == _IMAGE_SIZE:
        return PLAN
    what = f"side of the images: {backbone} needs {side} (batch norm); the GPU check times 64 px"
    caps = tuple(replace(c, cap=side, what=what) if c.name == "image_size" else c for c in CAPS)
    return replace(PLAN, caps=caps)


def prepare(values: dict, root=None):
    """:meth:`PLAN.prepare <clkit.rehearsal.Plan.prepare>` for the notebook's parameter ``values``.

    ``values`` may hold more than the parameters (the notebook passes its namespace); the
    fabricated files are drawn with the run's ``seed``. Returns the
    :class:`~clkit.rehearsal.Rehearsal` (its ``changes`` are the cut values).
    """
    names = {c.name for c in CAPS} | set(PLAN.switches) | {"datasets", "per_class_train", "per_class_test"}
    return plan_for(values.get("backbone")).prepare({k: values[k] for k in names if k in values}, root, seed=values.get("seed", 0))
