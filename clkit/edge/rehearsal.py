"""Notebook 02's paper rehearsal: the ``paper`` set on fabricated Fashion-MNIST files and a tiny CLIP folder.

``rehearse: true`` keeps the paper set's structure -- its classes and tasks (every class
sequence, the exact ground truth), the five learners at their architecture (hidden width
kept), the CLIP ViT-B-16-shaped text encoder, every protocol, similarity source, draw
report and verdict -- and cuts its sizes by clkit's one rule (:mod:`clkit.rehearsal`):

* ``n_train`` / ``n_test`` (images per class), ``epochs``;
* ``num_random``: the 100,000 random sequences behind each S(O) percentile. At 6 classes it
  costs 0.05 s, but the classic settings score them three times per dataset at 100-200
  classes (about 20 s per call at 200 classes on one core), so it is capped;
* ``truth_samples`` (a sampled truth), ``num_null`` (random-similarity seeds) and
  ``num_draws`` -- the random draws the verdicts pair (notebook 02's verdicts pair draws, not
  seeds) -- at the verdict rule's minimum :data:`clkit.rehearsal.MIN_SEEDS`, so every verdict
  is still computed.

The image protocols (``dataset`` = cifar100 | imagenet_r | cub200, the ``paper`` sets) keep
their learners (networks trained from scratch, the frozen-ViT prototype methods, L2P) and cut
further (:data:`IMAGE_CAPS`): two training and four test images per class, one epoch, ImageNet-R / CUB-200 at 32x32,
the ViT to :data:`clkit.models.vit.TINY_CONFIG` -- a fabricated timm checkpoint
(:func:`clkit.data.fixtures.vit.write_vit`) loaded through ``vit_weights`` -- CIFAR's ResNet-32 to
ResNet-8 (:data:`SCRATCH_CUT`), RanPAC's projection to :data:`RANPAC_PROJECTION` dimensions and the
newer methods' pools, projectors, centroids, k-means iterations and stage epochs
(:data:`METHOD_CUTS`); Fig. 5's classic splits are trained by one learner of each kind
(:data:`BOUNDS_KINDS`, ``bounds_learners``) and on the first dataset only. Every one of the twelve
methods still trains every node of the ground truth (the prefix tree or its declared state), and
the budget, the tables beside the paper and the weights check run as in the paper run. The run's
table of cuts says each of these. The dataset's files are fabricated in its own layout (CIFAR-100's
pickles, ImageNet-R's folders) and read by its real loader.

Fixtures (:mod:`clkit.data.fixtures`): Fashion-MNIST's four gzipped IDX files, read by the
real loader (:func:`clkit.data.images.load_fashion_mnist`) from the rehearsal's cache, and,
when the run encodes with CLIP, a tiny ViT-B-16-shaped open_clip folder loaded through
open_clip's own ``local-dir:`` names (:func:`clkit.data.fixtures.clip.clip_params` sets
``clip_model`` / ``clip_pretrained``).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..rehearsal import MIN_SEEDS, Cap, Plan

__all__ = ["CAPS", "IMAGE_CAPS", "PLAN", "IMAGE_PLAN", "SCRATCH_CUT", "BOUNDS_KINDS", "prepare"]

CAPS = (
    Cap("n_train", 100, "training images per class"),
    Cap("n_test", 100, "test images per class"),
    Cap("epochs", 1, "training epochs per task"),
    Cap("num_random", 2000, "random sequences per S(O) percentile"),
    Cap("truth_samples", 64, "sequences of a sampled ground truth"),
    Cap("num_null", 2, "random-similarity seeds of the null"),
    Cap("num_draws", MIN_SEEDS, "random draws the verdicts pair (the rule's minimum)"),
)


#: the image protocols' caps (``dataset`` = cifar100 | imagenet_r | cub200): a network trained from
#: scratch per node of the prefix tree costs about a thousand times an MLP step, so the image
#: counts are cut further (two a class: one minibatch a task, BatchNorm still sees four rows); the
#: ViT is cut to :data:`clkit.models.vit.TINY_CONFIG` (a fabricated checkpoint, loaded through
#: ``vit_weights``), CIFAR's ResNet-32 to :data:`SCRATCH_CUT` and RanPAC's random projection to 64
#: dimensions
IMAGE_CAPS = (
    Cap("n_train", 2, "training images per class"),
    Cap("n_test", 4, "test images per class"),
    Cap("epochs", 1, "training epochs per task"),
    Cap("image_size", 32, "side ImageNet-R / CUB-200 are resized to (0 = 224)"),
    Cap("bounds_datasets", 1, "classic splits trained for Fig. 5 (the first)"),
    Cap("classic_num_tasks", 2, "tasks of the classic splits (Fig. 5 trains every class in them)"),
) + CAPS[3:]

#: RanPAC's projection width in a rehearsal (a size: ``learner_kwargs["ranpac"]["projection_dim"]``)
RANPAC_PROJECTION = 64

#: the from-scratch methods' CIFAR ResNet in a rehearsal: ResNet-32 (5 basic blocks a stage) cut to
#: ResNet-8 (1 a stage, :data:`clkit.edge.images.CIFAR_RESNETS`) -- the same class, stem, stages,
#: widths, shortcuts and MEMO cut, a fifth of the convolutions. Six methods x 195 prefix-tree nodes of
#: ResNet-32 were the rehearsal's ~15 minutes on two cores (issue 50 follow-up, profiled per method)
SCRATCH_CUT = {"resnet32": "resnet8"}

#: Fig. 5's classic splits train every class of the split under RS's and EDGE's sequences with every
#: learner: a rehearsal trains them with one learner of each kind (:func:`clkit.edge.images.learner_kind`:
#: from scratch, on frozen features, around the ViT) -- the first of each in ``learners`` -- so each of
#: :func:`clkit.edge.bounds_run.classic_bounds_run`'s code paths runs once (``bounds_learners``)
BOUNDS_KINDS = ("ncm", "scratch", "frozen", "prompt")

#: the seven newer methods' sizes in a rehearsal (beside ``epochs`` / ``init_epochs`` to 1): their other
#: epoch counts to 1, CODA-Prompt's pool to 2 components a task, HiDe-Prompt's k-means to 2 centroids and
#: 5 iterations, TagFex's projector to 64 / 32 wide; applied only where the set runs the method and only
#: where they cut
METHOD_CUTS = {
    "foster": {"compression_epochs": 1},
    "hide_prompt": {"tii_epochs": 1, "ca_epochs": 1, "n_centroids": 2, "kmeans_iters": 5},
    "mos": {"ca_epochs": 1},
    "coda_prompt": {"pool_size": "2 per task"},
    "tagfex": {"proj_hidden_dim": 64, "proj_output_dim": 32},
}


def _image(values: dict) -> bool:
    from .images import IMAGE_DATASETS

    return values.get("dataset") in IMAGE_DATASETS


def _uses_clip(values: dict) -> bool:
    return values.get("encoder") in ("clip", "auto") or "clip" in (values.get("similarity_sources") or ())


def _fixtures(values: dict) -> dict:
    """The datasets the (cut) parameters load, with their sizes."""
    out = {}
    if values.get("dataset", "fashion_mnist") == "fashion_mnist":
        out["fashion_mnist"] = {"per_class_train": int(values["n_train"]), "per_class_test": int(values["n_test"])}
    if _uses_clip(values):
        out["clip"] = {}
    if _image(values) or values.get("bounds_datasets"):
        ntr, nte = int(values["n_train"]), int(values["n_test"])
        top = max(values.get("classes") or [0]) + 1
        if values["dataset"] == "cifar100" or "cifar100" in (values.get("bounds_datasets") or ()):
            # every fine label: any `classes`, and Fig. 5's classic split of all 100
            out["cifar100"] = {"classes": 100, "per_class_train": ntr, "per_class_test": nte}
        if values["dataset"] in ("imagenet_r", "cub200"):   # ImageNet-R holds out 20% of a class (rounded half up)
            sizes = ({"per_class_train": max(ntr, 4 * nte), "per_class_test": nte} if values["dataset"] == "imagenet_r"
                     else {"per_class_train": ntr, "per_class_test": nte})
            out[values["dataset"]] = {"classes": top, **sizes}
        out["vit"] = {}
    return out


def _after(values: dict, files: dict) -> dict:
    from ..data.fixtures.clip import clip_params

    out = clip_params(files["clip"]) if "clip" in files else {}
    if values.get("encoder_sizes"):   # Fig. 4: one tiny CLIP folder per encoder, each its own seed
        from ..data.fixtures.clip import write_clip

        root = Path(files["vit"]).parents[2] if "vit" in files else Path(os.environ.get("CLKIT_DATA", "."))
        out["encoder_sizes"] = [f"local-dir:{write_clip(root, seed=1 + i)}" for i, _ in
                                enumerate(values["encoder_sizes"])]
    if "vit" in files:
        out.update(vit_model="tiny", vit_weights=str(files["vit"]))
        from .protocol import protocol_learner_kwargs

        # the protocol's settings first (clkit.edge.protocol: PyCIL's 200 first-task epochs), then the caps
        kw = protocol_learner_kwargs(values.get("protocol", "paper"), values.get("dataset", ""),
                                     values.get("learners") or (), values.get("learner_kwargs") or {},
                                     num_tasks=values.get("num_tasks"))
        kw = {k: dict(v or {}) for k, v in kw.items()}
        cut = []
        for name, settings in kw.items():   # a learner's own epochs are epochs: capped as the run's
            for key in ("epochs", "init_epochs", "compression_epochs"):
                if isinstance(settings.get(key), int) and settings[key] > 1:
                    settings[key] = 1
                    cut.append(f"{name} {key}")
        learners = list(values.get("learners") or ())
        for name, cuts in METHOD_CUTS.items():
            if name not in learners:
                continue
            settings = kw.setdefault(name, {})
            for key, small in cuts.items():
                if small == "2 per task":
                    small = 2 * int(settings.get("n_tasks", values.get("num_tasks", 3)))
                if settings.get(key, float("inf")) > small:
                    settings[key] = small
                    cut.append(f"{name} {key} {small}")
        from .images import SCRATCH_BACKBONES, learner_kind

        net = SCRATCH_BACKBONES.get(values.get("dataset"), "") if values.get("backbone", "auto") == "auto" \
            else values.get("backbone")
        if net in SCRATCH_CUT and any(learner_kind(n) == "scratch" for n in learners):
            out["backbone"] = SCRATCH_CUT[net]
            out.setdefault("_what", {})["backbone"] = (f"the from-scratch methods' {net} cut to {SCRATCH_CUT[net]} "
                                                       f"(clkit.models.cnn.CifarResNet, 1 basic block a stage)")
        if values.get("bounds_datasets") and not values.get("bounds_learners"):
            kinds = {}
            for n in learners:
                kinds.setdefault(learner_kind(n), n)
            picked = [kinds[k] for k in BOUNDS_KINDS if k in kinds]
            if len(picked) < len(learners):
                out["bounds_learners"] = picked
                out.setdefault("_what", {})["bounds_learners"] = (
                    "Fig. 5 trained by one learner of each kind (from scratch, frozen features, around the ViT): "
                    "the classic splits' other methods skipped")
        if "ranpac" in (values.get("learners") or ()) and kw.get("ranpac", {}).get("projection_dim", 1000) > \
                RANPAC_PROJECTION:
            kw.setdefault("ranpac", {})["projection_dim"] = RANPAC_PROJECTION
            cut.append(f"RanPAC's projection to {RANPAC_PROJECTION}")
        if cut:
            out["learner_kwargs"] = kw
            out.setdefault("_what", {})["learner_kwargs"] = "per-learner sizes cut: " + ", ".join(cut)
    if "encoder_sizes" in out:
        out.setdefault("_what", {})["encoder_sizes"] = "a fabricated tiny CLIP folder per encoder (seeds 1, 2, ...)"
    if "vit" in files:
        out.setdefault("_what", {})["vit_model"] = "the ViT cut to clkit.models.vit.TINY_CONFIG (32 px)"
    return out


PLAN = Plan("02_edge", CAPS, switches={}, fixtures=_fixtures, after=_after)
#: the image protocols' rehearsal (``dataset`` = cifar100 | imagenet_r | cub200)
IMAGE_PLAN = Plan("02_edge", IMAGE_CAPS, switches={"download": False}, fixtures=_fixtures, after=_after)


def prepare(values: dict, root=None, *, seed: int = 0):
    """:meth:`PLAN.prepare <clkit.rehearsal.Plan.prepare>` on the notebook's parameters (e.g. ``globals()``).

    Returns the :class:`clkit.rehearsal.Rehearsal`; the notebook takes ``rh.changes``.

    Examples
    --------
    >>> import os, tempfile
    >>> old = os.environ.get("CLKIT_DATA")
    >>> rh = prepare({"n_train": 6000, "n_test": 1000, "epochs": 10, "encoder": "glove",
    ...               "similarity_sources": ["names"], "num_draws": 30}, tempfile.mkdtemp())
    >>> rh.changes, sorted(rh.files)
    ({'n_train': 100, 'n_test': 100, 'epochs': 1, 'num_draws': 4}, ['fashion_mnist'])
    >>> _ = os.environ.pop("CLKIT_DATA") if old is None else os.environ.update(CLKIT_DATA=old)
    """
    plan = IMAGE_PLAN if _image(values) or values.get("bounds_datasets") else PLAN
    keys = ({c.name for c in plan.caps} | set(plan.switches)
            | {"dataset", "encoder", "similarity_sources", "clip_model", "clip_pretrained", "classes", "learners",
               "learner_kwargs", "vit_model", "vit_weights", "encoder_sizes", "bounds_datasets",
               "classic_num_tasks", "protocol", "num_tasks", "backbone", "bounds_learners"})
    return plan.prepare({k: v for k, v in values.items() if k in keys}, root, seed=seed)
