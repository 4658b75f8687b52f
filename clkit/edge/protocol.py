"""Two settings of notebook 02's image protocols: the EDGE paper's text and the authors' released code.

The EDGE paper states its training settings in App. E.1.1; its numbers come from the authors'
release (github.com/AIGNLAI/EDGE, read at commit :data:`EDGE_RELEASE`: a PyCIL tree for the
non-pretrained methods, a PILOT tree for the pretrained ViT ones), which differs. Both are
available, selected by one name (the notebook's ``protocol``):

``"paper"`` -- App. E.1.1 as written: SGD, learning rate 0.1, weight decay 5e-4, the rate times
    0.1 at epochs 60 / 120 / 170 ("non-pre-trained"), 170 epochs, batch 128, the same schedule in
    every task (the text names one); a new optimizer per task (the text is silent; PyCIL, whose
    numbers these are, builds one in every task); iCaRL as Rebuffi et al. define it (sigmoid
    BCE with distillation, nearest-mean-of-exemplars prediction); RS orders from PyCIL's shuffle
    (``np.random.seed(seed); np.random.permutation(N)``: ``shuffle="pycil"``).

``"authors"`` -- PyCIL's ``models/{ewc,icarl,der}.py`` in the release (their ``exps/*.json``
    set only memory and seeds; the schedule is in the modules' constants): the first task
    ``init_epoch = 200`` epochs at ``init_lr = 0.1``, milestones 60 / 120 / 170,
    ``init_weight_decay = 5e-4``; later tasks ``epochs`` at ``lrate = 0.1`` with weight decay
    2e-4 and the module's milestones -- EWC 180 epochs, milestones 70 / 120 / 150; iCaRL 170,
    80 / 120; DER 170, 80 / 120 / 150 -- all decays 0.1, batch 128, momentum 0.9, a new SGD in every
    task (``_train`` builds optimizer and ``MultiStepLR`` each time); iCaRL's loss is cross-entropy
    plus KD at T = 2 (``_KD_loss``) and the trainer returns the network head's ("CNN")
    accuracy; RS orders from ``np.random.default_rng(seed).permutation(N)``
    (``trainer.py``, ``--eval random``: ``shuffle="edge_release"``).

Both leave the memory as the parameter set gives it (see docs/02_edge.md: the release's
``memory_size: 2000`` with ``fixed_memory: false`` asks for ``2000 // s`` exemplars per class,
more than a CIFAR class has at 6 classes).

The paper's other three methods trained from scratch (PyCIL's ``models/{foster,memo,tagfex}.py`` and
``exps/{foster,memo,tagfex}.json`` in the same release):

- **FOSTER** (``authors``): ``exps/foster.json``: the first task ``init_epochs`` 200, boosting
  ``boosting_epochs`` 170 and compression ``compression_epochs`` 130 epochs, SGD lr 0.1, weight
  decay 5e-4 in every stage (compression: none), batch 128, each stage annealed by its own
  ``CosineAnnealingLR`` (the strategy's ``lr_schedule="cosine"``; no milestones);
- **MEMO** (``authors``): ``exps/memo.json`` (``scheduler: steplr``): :data:`clkit.strategies.memo.MEMO_CIFAR100`
  -- 200 first-task epochs at lr 0.1, weight decay 5e-4, steps 60 / 120 / 170; then 170 epochs, weight
  decay 2e-4, steps 80 / 120 / 150; batch 128 -- passed to MEMO's own keywords (it schedules itself);
- **TagFex** (``authors``): the module constants of ``models/tagfex.py`` (its json sets none): as
  EWC's first task (200 epochs, steps 60 / 120 / 170, weight decay 5e-4), then 170 epochs, steps
  80 / 120 / 150, weight decay 2e-4, batch 128, a new SGD every task -- through
  :func:`clkit.edge.learners.scheduled_train_task` (TagFex has no schedule of its own).
  (Its json trains PyCIL's ``resnet18`` on CIFAR; the set keeps every CIFAR method on ResNet-32.)

``paper`` gives App. E.1.1's shared schedule to all six (170 epochs every task, steps 60 / 120 / 170,
weight decay 5e-4, batch 128); FOSTER keeps its two stages (each 170 epochs; compression 130: the text
names no compression) and MEMO takes the schedule through its own keywords.

The pre-trained ViT methods (``l2p``, ``coda_prompt``, ``hide_prompt``, ``ease``, ``mos``):

- ``authors``: the released configs, :data:`PILOT` -- PILOT's ``exps/*.json`` (HiDe-Prompt: thu-ml/HiDe-Prompt's
  ``cifar100_hideprompt_5e``), their strategies' constructor defaults (L2P: Adam 0.001875, batch 16, 5 epochs;
  CODA-Prompt: Adam 0.001, cosine, 20; EASE / MOS: SGD 0.025 / 0.03, cosine, batch 48, 20; HiDe-Prompt: Adam,
  step every 30 epochs, batch 24, 50); :data:`SETTINGS` writes them out because the ground truth's driver
  otherwise hands every strategy the run's ``epochs`` / ``lr`` / ``batch_size``;
- ``paper``: App. E.1.1's pre-trained line, :data:`VIT_PAPER` -- SGD, learning rate 0.1, weight decay 5e-4,
  the rate times 0.1 at epochs 80 / 120 / 150 (``milestones`` / ``lr_decay``: ``MultiStepLR`` stepped per
  epoch, :func:`clkit.strategies._vit_common.step_lr`, replacing each method's own schedule), 170 epochs,
  batch 128. The text names no momentum: 0.9, PyCIL's and PILOT's (every SGD of both trees). Each method
  builds a new optimizer per task (as in the release), so the schedule restarts every task: the text's one
  schedule, and what PyCIL's ``_train`` does for the methods trained from scratch. Method-specific structure
  stays: HiDe-Prompt's and MOS's heads at ``head_lr_ratio`` / ``head_lr_scale`` (0.1) of the rate. For
  HiDe-Prompt the text's "training" is WTP's (the prompts' and head's, the method's ``lr`` / ``epochs`` /
  ``batch_size``); its auxiliary stages keep the release's settings (TII: Adam 0.0005 x 24 / 256 at weight
  decay 0, batch 24, ``tii_epochs``; TAP: ``ca_lr``, ``ca_epochs``, ``ca_batch`` 120, ``tii_ca_batch`` 24).

CODA-Prompt's pool is split over the stream's tasks (``n_tasks`` = ``num_tasks``, as PILOT's
``args["nb_tasks"]``) under both.

**RanPAC** -- the one pre-trained method whose two settings differ in kind:

- ``paper``: the frozen-feature RanPAC (:class:`clkit.strategies.ranpac.RanPAC` without its adapter stage,
  ``first_session_adaptation=False``, the linear head ``h W``): it classifies the cached frozen ViT
  features (:func:`clkit.edge.images.strategy_inputs`' ``"frozen"`` inputs, computed once per image), so
  its ground truth needs one training per (set of classes, last task);
- ``authors``: :data:`clkit.strategies.ranpac.RANPAC_AUTHORS`, PILOT's ``models/ranpac.py`` with
  ``exps/ranpac.json`` -- an AdaptFormer adapter tuned on the first task (``tuned_epoch`` 20, ``ffn_num``
  64, SGD 0.01, batch 48), PILOT's cosine head, ``M`` = 10,000, the ridge chosen per task. Its features
  depend on the first task, so it trains on the ViT's own inputs (``"prompt"`` inputs: the routing reads
  ``first_session_adaptation`` from these settings, :meth:`RanPAC.needs_vit_for`) and its accuracy
  depends on the class order through the first task too.

**EWC's lambda** (both protocols; the text names none, the release's ``PyCIL/models/ewc.py`` sets
``lamda = 1000``). PyCIL's later-task loss is ``CE + lamda * sum_k F_k (theta_k - theta*_k)^2 / 2``
(``compute_ewc`` halves the sum, ``_update_representation`` multiplies it by ``lamda``);
:class:`clkit.strategies.importance.EWC`'s penalty is ``ewc_lambda / 2 * sum_k F_k (theta_k - theta*_k)^2``.
For the same Fisher ``F`` and anchor ``theta*`` the two are equal with ``ewc_lambda = lamda``, so
:data:`SETTINGS` gives ``ewc_lambda = 1000`` (the strategy's own default is the EWC paper's 1). What stays
different, stated: PyCIL's ``F`` is the minibatch empirical Fisher (squared gradients of batch means, clamped
at ``fishermax`` = 1e-4) merged over tasks into one anchor (``alpha F_old + (1 - alpha) F_new``, ``alpha`` =
known / total classes); clkit's EWC keeps one per-sample Fisher and anchor per task
(tests/test_edge_protocol_ewc.py computes both penalties by hand).

A value the run's ``learner_kwargs`` gives always wins over the protocol's.
"""

from __future__ import annotations

import copy

from .._validate import check_choice

__all__ = ["PROTOCOLS", "EDGE_RELEASE", "SETTINGS", "PILOT", "VIT_PAPER", "PYCIL_EWC_LAMBDA",
           "protocol_learner_kwargs", "stream_settings", "rs_shuffle", "check_pretrained"]

PROTOCOLS = ("paper", "authors")

#: the commit of github.com/AIGNLAI/EDGE the ``"authors"`` settings were read from
EDGE_RELEASE = "a60c1179cf762e8c1197ab876a3c06db3a49b639"

_PAPER = {"lr": 0.1, "batch_size": 128, "epochs": 170, "weight_decay": 0.0005, "init_milestones": [60, 120, 170],
          "milestones": [60, 120, 170], "lr_decay": 0.1, "reset_optimizer": True}
_PYCIL_FIRST = {"lr": 0.1, "batch_size": 128, "init_epochs": 200, "init_lr": 0.1, "init_milestones": [60, 120, 170],
                "init_weight_decay": 0.0005, "weight_decay": 0.0002, "lr_decay": 0.1, "reset_optimizer": True}

#: the pre-trained ViT methods' released settings (PILOT's exps/*.json; HiDe-Prompt's own config) = their
#: strategies' constructor defaults (tests/test_edge_protocol.py builds each and compares); L2P's are
#: ``PILOT/exps/l2p.json`` (Adam, lr 0.03 x 16 / 256, batch 16, 5 epochs), which its strategy does not default to
PILOT = {
    "l2p": {"optimizer": "adam", "lr": 0.001875, "batch_size": 16, "epochs": 5},
    "coda_prompt": {"optimizer": "adam", "lr": 0.001, "weight_decay": 0.0, "batch_size": 128, "epochs": 20},
    "hide_prompt": {"optimizer": "adam", "lr": 0.03 * 24 / 256, "batch_size": 24, "epochs": 50},
    "ease": {"optimizer": "sgd", "lr": 0.025, "momentum": 0.9, "weight_decay": 0.0005, "batch_size": 48,
             "epochs": 20},
    "mos": {"optimizer": "sgd", "lr": 0.03, "momentum": 0.9, "weight_decay": 0.0005, "batch_size": 48,
            "epochs": 20},
}

#: App. E.1.1's pre-trained line ("SGD ... initial learning rate 0.1, weight decay 5x10^-4, LR decay factor 0.1 at
#: epochs ... {80, 120, 150} (pre-trained). Training: 170 epochs, batch size 128"); momentum 0.9 (PyCIL / PILOT's:
#: the text names none)
VIT_PAPER = {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.0005, "milestones": [80, 120, 150],
             "lr_decay": 0.1, "epochs": 170, "batch_size": 128}
#: HiDe-Prompt's auxiliary stages as released (TII: Adam at weight decay 0, batch 24; TAP: 5 x 24 and 24 rows a step)
#: while its WTP training takes :data:`VIT_PAPER`
_HIDE_AUX = {"tii_optimizer": "adam", "tii_batch_size": 24, "ca_batch": 5 * 24, "tii_ca_batch": 24}

#: PyCIL's EWC penalty weight (``PyCIL/models/ewc.py``: ``lamda = 1000``), as clkit's ``ewc_lambda`` (equal: see above)
PYCIL_EWC_LAMBDA = 1000.0
#: RanPAC per protocol: the frozen-feature one (text) and :data:`~clkit.strategies.ranpac.RANPAC_AUTHORS` (release)
_RANPAC_PAPER = {"first_session_adaptation": False, "head": "linear"}


def _ranpac_authors() -> dict:
    from ..strategies.ranpac import RANPAC_AUTHORS

    return dict(RANPAC_AUTHORS)


_FOSTER = {"lr": 0.1, "batch_size": 128, "weight_decay": 0.0005, "lr_schedule": "cosine"}
_MEMO_PAPER = {"init_epochs": 170, "init_lr": 0.1, "init_weight_decay": 0.0005, "init_lr_decay": 0.1,
               "init_milestones": [60, 120, 170], "epochs": 170, "lr": 0.1, "weight_decay": 0.0005, "lr_decay": 0.1,
               "milestones": [60, 120, 170], "batch_size": 128}

#: per protocol and learner, the ``learner_kwargs`` it sets (LearnerConfig's schedule fields and the
#: strategies' own keywords; a keyword the strategy's constructor names goes to the strategy)
SETTINGS = {
    "paper": {
        "ewc": {**_PAPER, "ewc_lambda": PYCIL_EWC_LAMBDA},
        "icarl": {**_PAPER, "loss_variant": "paper", "classifier": "nme"},
        "der": dict(_PAPER),
        "foster": {**_FOSTER, "init_epochs": 170, "epochs": 170, "compression_epochs": 130},
        "memo": dict(_MEMO_PAPER),
        "tagfex": dict(_PAPER),
        "ranpac": dict(_RANPAC_PAPER),
        **{name: dict(VIT_PAPER) for name in PILOT},
        "hide_prompt": {**VIT_PAPER, **_HIDE_AUX},
    },
    "authors": {
        "ewc": {**_PYCIL_FIRST, "epochs": 180, "milestones": [70, 120, 150], "ewc_lambda": PYCIL_EWC_LAMBDA},
        "icarl": {**_PYCIL_FIRST, "epochs": 170, "milestones": [80, 120], "loss_variant": "pycil",
                  "icarl_temperature": 2.0, "classifier": "head"},
        "der": {**_PYCIL_FIRST, "epochs": 170, "milestones": [80, 120, 150]},
        "foster": {**_FOSTER, "init_epochs": 200, "epochs": 170, "compression_epochs": 130},
        "memo": {"init_epochs": 200, "init_lr": 0.1, "init_weight_decay": 0.0005, "init_lr_decay": 0.1,
                 "init_milestones": [60, 120, 170], "epochs": 170, "lr": 0.1, "weight_decay": 0.0002,
                 "lr_decay": 0.1, "milestones": [80, 120, 150], "batch_size": 128},
        "tagfex": {**_PYCIL_FIRST, "epochs": 170, "milestones": [80, 120, 150]},
        "ranpac": _ranpac_authors(),
        **PILOT,
    },
}


def protocol_learner_kwargs(protocol: str, dataset: str, learners, learner_kwargs=None, *,
                            num_tasks: int | None = None) -> dict:
    """The run's ``learner_kwargs`` with ``protocol``'s settings of its learners (:data:`SETTINGS`) filled in.

    Only on the image protocols (:data:`clkit.edge.images.IMAGE_DATASETS`), where ``ewc`` / ``icarl`` /
    ``der`` are the strategies trained from scratch; elsewhere (Fashion-MNIST's batched MLPs) the
    settings come back unchanged. ``num_tasks`` (the stream's tasks) sets CODA-Prompt's ``n_tasks``
    and raises HiDe-Prompt's ``pool_size`` to it where smaller. A keyword the run gives wins over the
    protocol's.

    Examples
    --------
    >>> kw = protocol_learner_kwargs("authors", "cifar100", ["icarl", "simplecil"], {"icarl": {"memory_size": 120}})
    >>> kw["icarl"]["memory_size"], kw["icarl"]["init_epochs"], kw["icarl"]["milestones"], kw["icarl"]["classifier"]
    (120, 200, [80, 120], 'head')
    >>> sorted(kw)
    ['icarl']
    >>> protocol_learner_kwargs("authors", "fashion_mnist", ["ewc"], {})
    {}
    >>> kw = protocol_learner_kwargs("authors", "cifar100", ["coda_prompt", "memo"], num_tasks=3)
    >>> kw["coda_prompt"]["n_tasks"], kw["coda_prompt"]["epochs"], kw["memo"]["init_epochs"]
    (3, 20, 200)
    >>> kw = protocol_learner_kwargs("paper", "cifar100", ["coda_prompt"], num_tasks=3)["coda_prompt"]
    >>> kw["optimizer"], kw["lr"], kw["milestones"], kw["epochs"], kw["batch_size"]
    ('sgd', 0.1, [80, 120, 150], 170, 128)
    >>> protocol_learner_kwargs("text", "cifar100", ["ewc"])
    Traceback (most recent call last):
    ...
    ValueError: protocol must be one of ['paper', 'authors'], got 'text'
    """
    from .images import IMAGE_DATASETS

    check_choice("protocol", protocol, list(PROTOCOLS))
    learner_kwargs = {} if learner_kwargs is None else learner_kwargs
    out = {k: dict(v) for k, v in learner_kwargs.items()} if isinstance(learner_kwargs, dict) else learner_kwargs
    if dataset not in IMAGE_DATASETS or not isinstance(out, dict):
        return out if out is not None else {}
    for name in learners:
        if name in SETTINGS[protocol]:
            given = out.get(name) if isinstance(out.get(name), dict) else {}
            out[name] = {**copy.deepcopy(SETTINGS[protocol][name]), **given}
    return stream_settings(learners, out, num_tasks) if num_tasks is not None else out


def stream_settings(learners, learner_kwargs: dict, num_tasks: int, *, force: bool = False) -> dict:
    """``learner_kwargs`` with the settings that follow the stream's number of tasks: CODA-Prompt's ``n_tasks``
    (its pool split over the tasks, PILOT's ``args["nb_tasks"]``; a given value is kept unless ``force``, e.g.
    Fig. 5's classic splits of another length) and HiDe-Prompt's ``pool_size`` raised to ``num_tasks``.

    Examples
    --------
    >>> stream_settings(["coda_prompt"], {"coda_prompt": {"n_tasks": 3}}, 10, force=True)
    {'coda_prompt': {'n_tasks': 10}}
    >>> stream_settings(["hide_prompt", "ewc"], {}, 12)
    {'hide_prompt': {'pool_size': 12}}
    """
    out = {k: dict(v or {}) for k, v in learner_kwargs.items()}
    if "coda_prompt" in learners:
        kw = out.setdefault("coda_prompt", {})
        if force or "n_tasks" not in kw:
            kw["n_tasks"] = int(num_tasks)
    if "hide_prompt" in learners and out.get("hide_prompt", {}).get("pool_size", 10) < num_tasks:
        out.setdefault("hide_prompt", {})["pool_size"] = int(num_tasks)
    return out


def rs_shuffle(protocol: str, shuffle: str = "auto") -> str:
    """The RS orders' generator (:func:`clkit.edge.combinatorics.random_sequences`' ``shuffle``): ``shuffle``
    itself, or with ``"auto"`` the protocol's (``paper``: PyCIL's ``"pycil"``, ``authors``: ``"edge_release"``).

    Examples
    --------
    >>> rs_shuffle("paper"), rs_shuffle("authors"), rs_shuffle("authors", "pycil")
    ('pycil', 'edge_release', 'pycil')
    """
    from .combinatorics import RS_SHUFFLES

    check_choice("protocol", protocol, list(PROTOCOLS))
    check_choice("rs_shuffle", shuffle, ["auto", *RS_SHUFFLES])
    if shuffle != "auto":
        return shuffle
    return "pycil" if protocol == "paper" else "edge_release"


def _clip_cached(clip_model: str, clip_pretrained: str) -> str | None:
    """Where open_clip would find ``clip_model`` / ``clip_pretrained`` without the network (None: nowhere)."""
    from pathlib import Path

    if clip_model.startswith("local-dir:"):
        folder = Path(clip_model[len("local-dir:"):])
        return str(folder) if (folder / "open_clip_config.json").is_file() else None
    if Path(clip_pretrained).expanduser().is_file():
        return clip_pretrained
    try:
        import open_clip
        from huggingface_hub import try_to_load_from_cache

        cfg = open_clip.get_pretrained_cfg(clip_model, clip_pretrained) or {}
        repo = (cfg.get("hf_hub") or "").rstrip("/")
        for fname in ("open_clip_model.safetensors", "open_clip_pytorch_model.bin"):
            hit = try_to_load_from_cache(repo, fname) if repo else None
            if isinstance(hit, str):
                return hit
    except Exception:  # noqa: BLE001 -- no open_clip / no cache: not cached
        return None
    return None


def check_pretrained(require_pretrained: bool, *, spec, encoder: str, clip_model: str, clip_pretrained: str,
                     download: bool = False) -> None:
    """Stop a run that must use pretrained weights (the ``paper`` set) before it trains, naming what is missing.

    With ``require_pretrained``: an image protocol's ViT (``spec``, a :class:`clkit.edge.images.ViTSpec`)
    needs its weights file (``vit_weights``; a ``tiny`` ViT, a rehearsal's, brings its fabricated one),
    and ``encoder="clip"`` needs the CLIP text encoder's weights in the open_clip / Hugging Face cache, a
    ``local-dir:`` folder or a file -- or ``download`` with huggingface.co reachable (then open_clip
    fetches them once). Raises
    ``ValueError`` naming the file and how to get it; without ``require_pretrained`` nothing is checked
    (a random ViT is allowed and said in the data source).

    Examples
    --------
    >>> from clkit.edge.images import ViTSpec
    >>> check_pretrained(False, spec=ViTSpec(), encoder="clip", clip_model="ViT-B-16", clip_pretrained="openai")
    >>> check_pretrained(True, spec=ViTSpec("vit_base_patch16_224.augreg_in21k_ft_in1k"), encoder="glove",
    ...                  clip_model="ViT-B-16", clip_pretrained="openai")
    Traceback (most recent call last):
    ...
    ValueError: vit_weights: this run requires pretrained weights (require_pretrained: true, the paper set) and vit_weights is empty; the ViT vit_base_patch16_224.augreg_in21k_ft_in1k needs its file: get it on a machine with internet by running timm.create_model('vit_base_patch16_224.augreg_in21k_ft_in1k', pretrained=True), which writes it (the Hugging Face cache, ~/.cache/huggingface/hub/models--timm--vit_base_patch16_224.augreg_in21k_ft_in1k/snapshots/*/model.safetensors), or save model.state_dict() of such a model with torch.save; then pass that file as pretrained_path (-p vit_weights PATH); or -p require_pretrained false for a pipeline check with a random ViT
    """
    if not isinstance(require_pretrained, bool):
        raise TypeError(f"require_pretrained must be a bool, got {require_pretrained!r}")
    if not require_pretrained:
        return
    if spec is not None and not spec.weights:
        from ..models.vit import _how_to_get

        name = "vit_base_patch16_224" if spec.tiny else spec.model
        raise ValueError(f"vit_weights: this run requires pretrained weights (require_pretrained: true, the paper "
                         f"set) and vit_weights is empty; the ViT {name} needs its file: {_how_to_get(name)} "
                         f"(-p vit_weights PATH); or -p require_pretrained false for a pipeline check with a "
                         f"random ViT")
    if encoder == "clip" and _clip_cached(clip_model, clip_pretrained) is None:
        from .similarity import _reachable

        if download and _reachable("huggingface.co"):
            return                                  # open_clip fetches them once, in section 3
        hub = ""
        try:
            import open_clip

            repo = ((open_clip.get_pretrained_cfg(clip_model, clip_pretrained) or {}).get("hf_hub") or "").rstrip("/")
            hub = (f" (open_clip_model.safetensors of {repo} in ~/.cache/huggingface/hub/"
                   f"models--{repo.replace('/', '--')})") if repo else ""
        except Exception:  # noqa: BLE001 -- only for the hint
            pass
        raise ValueError(f"clip_model / clip_pretrained: this run requires pretrained weights (require_pretrained: "
                         f"true) and the CLIP weights {clip_model}/{clip_pretrained} are not cached{hub}; get them "
                         f"on a machine with internet with open_clip.create_model_and_transforms({clip_model!r}, "
                         f"pretrained={clip_pretrained!r}), pass a weights file as clip_pretrained or an open_clip "
                         f"folder as clip_model 'local-dir:PATH', or run with -p download true where huggingface.co is "
                         f"reachable")
