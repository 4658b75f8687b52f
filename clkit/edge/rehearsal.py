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

Fixtures (:mod:`clkit.data.fixtures`): Fashion-MNIST's four gzipped IDX files, read by the
real loader (:func:`clkit.data.images.load_fashion_mnist`) from the rehearsal's cache, and,
when the run encodes with CLIP, a tiny ViT-B-16-shaped open_clip folder loaded through
open_clip's own ``local-dir:`` names (:func:`clkit.data.fixtures.clip.clip_params` sets
``clip_model`` / ``clip_pretrained``).
"""

from __future__ import annotations

from ..rehearsal import MIN_SEEDS, Cap, Plan

__all__ = ["CAPS", "PLAN", "prepare"]

CAPS = (
    Cap("n_train", 100, "training images per class"),
    Cap("n_test", 100, "test images per class"),
    Cap("epochs", 1, "training epochs per task"),
    Cap("num_random", 2000, "random sequences per S(O) percentile"),
    Cap("truth_samples", 64, "sequences of a sampled ground truth"),
    Cap("num_null", 2, "random-similarity seeds of the null"),
    Cap("num_draws", MIN_SEEDS, "random draws the verdicts pair (the rule's minimum)"),
)


def _uses_clip(values: dict) -> bool:
    return values.get("encoder") in ("clip", "auto") or "clip" in (values.get("similarity_sources") or ())


def _fixtures(values: dict) -> dict:
    """The datasets the (cut) parameters load, with their sizes."""
    out = {}
    if values.get("dataset", "fashion_mnist") == "fashion_mnist":
        out["fashion_mnist"] = {"per_class_train": int(values["n_train"]), "per_class_test": int(values["n_test"])}
    if _uses_clip(values):
        out["clip"] = {}
    return out


def _after(values: dict, files: dict) -> dict:
    from ..data.fixtures.clip import clip_params

    return clip_params(files["clip"]) if "clip" in files else {}


PLAN = Plan("02_edge", CAPS, switches={}, fixtures=_fixtures, after=_after)


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
    keys = {c.name for c in CAPS} | {"dataset", "encoder", "similarity_sources", "clip_model", "clip_pretrained"}
    return PLAN.prepare({k: v for k, v in values.items() if k in keys}, root, seed=seed)
