"""The EDGE paper's image protocols (notebook 02): RGB class-incremental data and the networks its methods train.

The paper's enumerable ground truth is the first six classes of **CIFAR-100** and of
**ImageNet-R** in three tasks (all 90 orders), scored with two families of methods
(Tables 1-2):

* **non-pretrained** (EWC, iCaRL, DER, ...): a network trained from scratch on the raw
  images -- PyCIL's ResNet-32 on CIFAR's 32x32 images, a ResNet-18 with batch norm on the
  224x224 ones (PyCIL's ``resnet18``; the paper's App. E.1.1) -- here any
  :mod:`clkit.strategies` strategy (``"ewc"``, ``"icarl"``, ``"der"``, ``"lwf"``, ...);
* **pretrained** on a frozen ViT-B/16: the prototype methods (SimpleCIL, RanPAC: any
  :class:`~clkit.strategies.prototype._FrozenFeatureStrategy`) and the methods that train around
  the ViT (``needs_vit_model``: L2P, CODA-Prompt, HiDe-Prompt, EASE, MOS).

What this module decides (and notebook 02 states):

* **Data** (:func:`load_image_protocol`): the dataset's real loader
  (:func:`clkit.data.images.load_image_dataset`) at its own resolution (CIFAR-100 32x32,
  ImageNet-R and CUB-200 resized to ``image_size``, default 224), ``n_train`` / ``n_test``
  images per class drawn without replacement with ``seed``, scaled to [0, 1] and
  standardised per channel with the dataset's usual statistics (PyCIL's CIFAR-100 mean/std;
  the ImageNet ones otherwise): ``x_train`` (C, n_train, 3, H, W).
* **Frozen features, computed once** (:func:`frozen_features`): the pretrained ViT sees
  every training and test image once -- resized to its input side with bilinear
  interpolation and standardised with the ViT's own statistics (timm's ``pretrained_cfg``;
  PILOT feeds its ViTs the same way) -- and the features ``f_train`` / ``f_test`` (C, n, d)
  are reused by every prototype learner in every order. A prototype method on frozen
  features is a function of those features only, so training its head on the cached
  features gives exactly what training the method on (frozen backbone + head) does
  (``tests/test_edge_images.py`` checks SimpleCIL and RanPAC order by order); the 90-order
  ground truth then costs seconds on a CPU.
* **Prompt learners** (L2P) need the ViT inside every step; they train on the resized,
  ViT-standardised images (:func:`vit_inputs`).
* ``vit_model="tiny"`` builds :data:`clkit.models.vit.TINY_CONFIG` (32x32 input): for
  rehearsals and offline runs; a pretrained ViT-B/16 needs its weights file
  (``vit_weights``). Without a file the ViT is randomly initialised and the data source
  says so (a random ViT is no pretrained backbone: the run is then a pipeline check).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .._validate import check_choice, check_int

__all__ = ["IMAGE_DATASETS", "NATIVE_SIZE", "NORMALISATION", "SCRATCH_BACKBONES", "ViTSpec", "load_image_protocol",
           "frozen_features", "vit_inputs", "learner_kind", "split_learners", "strategy_inputs", "notebook_learners",
           "image_protocol_data", "check_image_params", "table_families"]

#: notebook 02's RGB class-incremental datasets (:data:`clkit.data.images.RGB_CIL_DATASETS`)
IMAGE_DATASETS = ("cifar100", "imagenet_r", "cub200")

#: each dataset's own resolution (ImageNet-R and CUB-200 vary in size and are resized; 224 is PyCIL's)
NATIVE_SIZE = {"cifar100": 32, "imagenet_r": 224, "cub200": 224}

#: per-channel (mean, std) of the non-pretrained networks' inputs: PyCIL's CIFAR-100 statistics
#: (``utils/data.py``, ``iCIFAR100``) and the ImageNet ones for the 224x224 datasets
NORMALISATION = {"cifar100": ((0.5071, 0.4867, 0.4408), (0.2675, 0.2565, 0.2761)),
                 "imagenet_r": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
                 "cub200": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))}

#: the non-pretrained network per dataset (PyCIL's choices: ``resnet32`` for CIFAR, ``resnet18`` otherwise)
SCRATCH_BACKBONES = {"cifar100": "resnet32", "imagenet_r": "resnet18_bn", "cub200": "resnet18_bn"}
#: shallower CIFAR ResNets (:class:`clkit.models.cnn.CifarResNet` with fewer basic blocks a stage: the
#: same stem, stages, widths and MEMO cut as ResNet-32, depth ``6 * blocks + 2``): ``backbone`` values
#: beside :data:`clkit.models.cnn.BACKBONES`, used by the rehearsal (:mod:`clkit.edge.rehearsal`) to cut
#: ResNet-32's cost about fivefold without changing any code path
CIFAR_RESNETS = {"resnet8": 1, "resnet14": 2, "resnet20": 3}

#: the built-in learners that need the ViT inside every training step (any strategy with ``needs_vit_model``
#: does too: :func:`learner_kind`)
PROMPT_LEARNERS = ("l2p", "coda_prompt", "hide_prompt", "ease", "mos")


@dataclass(frozen=True)
class ViTSpec:
    """Which pretrained ViT the pretrained learners use.

    Attributes
    ----------
    model : str
        A timm ViT name (``"vit_base_patch16_224.augreg_in21k"``, SimpleCIL's and RanPAC's
        ViT-B/16-IN21K) or ``"tiny"`` (:data:`clkit.models.vit.TINY_CONFIG`, 32x32 input).
    weights : str
        A local weights file ('' = none: random initialisation, said in the data source).
    seed : int
        Seed of a random initialisation (and of the heads).
    """

    model: str = "vit_base_patch16_224.augreg_in21k"
    weights: str = ""
    seed: int = 0

    @property
    def tiny(self) -> bool:
        return self.model == "tiny"

    def build(self, num_classes: int):
        """A :class:`clkit.models.vit.ViTBackbone` with ``num_classes`` outputs (its ``features`` frozen by the methods)."""
        from ..models.vit import vit_backbone

        name = "vit_base_patch16_224" if self.tiny else self.model
        return vit_backbone(name, pretrained_path=self.weights or None, num_classes=num_classes, tiny=self.tiny,
                            seed=self.seed)

    def input_side(self) -> int:
        from ..models.vit import TINY_CONFIG

        return TINY_CONFIG["img_size"] if self.tiny else 224

    def statistics(self) -> tuple:
        """(mean, std) the ViT expects: timm's ``pretrained_cfg`` for the name, (0.5, 0.5) for ``tiny``."""
        if self.tiny:
            return (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)
        import timm

        cfg = timm.models.get_pretrained_cfg(self.model.split(".")[0] if "." not in self.model else self.model)
        if cfg is None:
            return (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)
        return tuple(cfg.mean), tuple(cfg.std)


def _subsample(x, y, num_classes, n, rng, dataset, split):
    out = []
    for c in range(num_classes):
        idx = np.nonzero(y == c)[0]
        if len(idx) < n:
            raise ValueError(f"n_{split} = {n}: class {c} of {dataset}'s {split} split has only {len(idx)} images; "
                             f"allowed: at most {len(idx)}")
        out.append(x[np.sort(rng.choice(idx, size=n, replace=False))])
    return np.stack(out)


def _standardise(x_uint8, mean, std):
    """uint8 (..., H, W, 3) -> float32 (..., 3, H, W) in [0, 1], standardised per channel."""
    x = np.moveaxis(x_uint8.astype(np.float32) / 255.0, -1, -3)
    m = np.asarray(mean, np.float32)[:, None, None]
    s = np.asarray(std, np.float32)[:, None, None]
    return (x - m) / s


def _arrays(raw_tr, raw_te, dataset: str) -> dict:
    """The non-pretrained networks' inputs of uint8 images (C, n, H, W, 3): standardised (:data:`NORMALISATION`),
    with the raw images, the dataset and the image shape."""
    mean, std = NORMALISATION[dataset]
    H, W = raw_tr.shape[2:4]
    return {"x_train": _standardise(raw_tr, mean, std), "x_test": _standardise(raw_te, mean, std),
            "raw_train": raw_tr, "raw_test": raw_te, "dataset": dataset, "image_shape": (3, int(H), int(W))}


def load_image_protocol(dataset: str, classes, *, n_train: int, n_test: int, image_size: int | None = None,
                        seed: int = 0, download: bool = False) -> dict:
    """The experiment's classes of an RGB class-incremental benchmark, per class, for the non-pretrained networks.

    Parameters
    ----------
    dataset : {"cifar100", "imagenet_r", "cub200"}
    classes : list of int
        Official label indices, in order (class ``i`` of the experiment is ``classes[i]``;
        the paper: the first six).
    n_train, n_test : int
        Images per class, drawn without replacement with ``seed`` (CIFAR-100 has 500 / 100).
    image_size : int, optional
        ImageNet-R and CUB-200 only: the side they are resized to (default 224); CIFAR-100
        is 32x32.
    seed : int
    download : bool
        Allow the dataset's online path when it is not in the clkit cache.

    Returns
    -------
    dict
        ``x_train`` (C, n_train, 3, H, W) and ``x_test`` (C, n_test, 3, H, W) float32,
        standardised (:data:`NORMALISATION`); ``raw_train`` / ``raw_test`` the uint8 images
        (C, n, H, W, 3) (for :func:`frozen_features` / :func:`vit_inputs`); ``class_names``;
        ``dataset``; ``image_shape`` (3, H, W); ``data_source`` (str).

    Raises
    ------
    clkit.data.DatasetNotFoundError
        The dataset is not in the cache (naming where it looked and how to get it).

    Examples
    --------
    >>> import tempfile, os
    >>> from clkit.data.fixtures.images import write_cifar100
    >>> root = tempfile.mkdtemp(); _ = write_cifar100(root, classes=100, per_class_train=4, per_class_test=3)
    >>> old = os.environ.get("CLKIT_DATA"); os.environ["CLKIT_DATA"] = root
    >>> d = load_image_protocol("cifar100", [0, 1, 2, 3], n_train=4, n_test=2)
    >>> d["x_train"].shape, d["class_names"][:2]
    ((4, 4, 3, 32, 32), ['apple', 'aquarium_fish'])
    >>> _ = os.environ.pop("CLKIT_DATA") if old is None else os.environ.update(CLKIT_DATA=old)
    """
    from ..data.images import load_image_dataset

    check_choice("dataset", dataset, list(IMAGE_DATASETS))
    if isinstance(classes, (str, bytes)) or not isinstance(classes, (list, tuple)):
        raise TypeError(f"classes must be a list of class labels, got {classes!r}")
    n_train = check_int("n_train", n_train, low=1)
    n_test = check_int("n_test", n_test, low=1)
    seed = check_int("seed", seed, low=0)
    if dataset == "cifar100":
        if image_size not in (None, 0, 32):
            raise ValueError(f"image_size: CIFAR-100 is 32x32 (resizing it is the ViT's business, not the data's), "
                             f"got image_size={image_size!r}; allowed: 0 or 32")
        size = None
    else:
        size = NATIVE_SIZE[dataset] if image_size in (None, 0) else check_int("image_size", image_size, low=8)
    ds = load_image_dataset(dataset, download, image_size=size, classes=list(classes))
    C = len(classes)
    rng = np.random.default_rng(seed)
    raw_tr = _subsample(ds.x_train, ds.y_train, C, n_train, rng, dataset, "train")
    raw_te = _subsample(ds.x_test, ds.y_test, C, n_test, rng, dataset, "test")
    H, W = raw_tr.shape[2:4]
    return {
        **_arrays(raw_tr, raw_te, dataset), "class_names": list(ds.classes),
        "data_source": f"{dataset} ({ds.source}); classes {list(classes)}; {n_train}/{n_test} train/test images per "
                       f"class at {H}x{W} RGB, standardised with {'PyCIL' if dataset == 'cifar100' else 'ImageNet'}'s "
                       f"per-channel mean/std",
    }


def vit_inputs(raw, spec: ViTSpec, *, batch_size: int = 256) -> np.ndarray:
    """uint8 images (..., H, W, 3) -> float32 (..., 3, s, s): resized to the ViT's side ``s`` (bilinear,
    antialiased when shrinking) and standardised with its statistics (:meth:`ViTSpec.statistics`).

    Examples
    --------
    >>> x = np.zeros((2, 5, 8, 8, 3), np.uint8)
    >>> vit_inputs(x, ViTSpec("tiny")).shape
    (2, 5, 3, 32, 32)
    """
    raw = np.asarray(raw)
    lead, (H, W) = raw.shape[:-3], raw.shape[-3:-1]
    flat = raw.reshape(-1, H, W, 3)
    side = spec.input_side()
    mean, std = spec.statistics()
    out = np.empty((len(flat), 3, side, side), np.float32)
    m = torch.tensor(mean, dtype=torch.float32)[:, None, None]
    s = torch.tensor(std, dtype=torch.float32)[:, None, None]
    for i in range(0, len(flat), batch_size):
        x = torch.from_numpy(np.ascontiguousarray(flat[i:i + batch_size])).permute(0, 3, 1, 2).float() / 255.0
        if (H, W) != (side, side):
            x = nn.functional.interpolate(x, size=(side, side), mode="bilinear", align_corners=False,
                                          antialias=side < max(H, W))
        out[i:i + len(x)] = ((x - m) / s).numpy()
    return out.reshape(*lead, 3, side, side)


def frozen_features(raw_train, raw_test, spec: ViTSpec, *, device=None, batch_size: int = 128) -> dict:
    """The frozen ViT's features of every image, computed once: ``f_train`` (C, n_train, d), ``f_test`` (C, n_test, d).

    The ViT (:meth:`ViTSpec.build`) runs in evaluation mode without gradients on ``device``
    (default the CPU; a ``RunDevice`` brings its precision through autocast); the inputs are
    :func:`vit_inputs`. Also returns ``weights_source`` (the file, or random initialisation).

    Examples
    --------
    >>> out = frozen_features(np.zeros((2, 3, 8, 8, 3), np.uint8), np.zeros((2, 1, 8, 8, 3), np.uint8),
    ...                       ViTSpec("tiny"))
    >>> out["f_train"].shape, out["f_test"].shape
    ((2, 3, 32), (2, 1, 32))
    """
    from ..device import Amp, RunDevice, as_device, move, to_host

    dev = device.device if isinstance(device, RunDevice) else as_device(device or "cpu")
    precision = device.precision if isinstance(device, RunDevice) else "fp32"
    vit = spec.build(num_classes=1)
    net = vit.features.to(dev).eval()
    amp = Amp(precision, dev)

    def run(raw):
        x = vit_inputs(raw, spec)
        lead = x.shape[:2]
        flat = x.reshape(-1, *x.shape[2:])
        outs = []
        with torch.no_grad():
            for i in range(0, len(flat), batch_size):
                with amp.autocast():
                    outs.append(net(move(torch.from_numpy(flat[i:i + batch_size]), dev)).float())
        f = to_host(torch.cat(outs))
        return f.reshape(*lead, -1).astype(np.float32)

    return {"f_train": run(raw_train), "f_test": run(raw_test), "weights_source": vit.weights_source}


def learner_kind(name: str, kwargs: dict | None = None) -> str:
    """How a learner of the image protocol trains: ``"ncm"`` (the batched nearest-class-mean learner, on the
    frozen features), ``"frozen"`` (a prototype strategy on the cached features), ``"prompt"`` (the ViT in every
    step, on :func:`vit_inputs`) or ``"scratch"`` (a network trained from scratch on the images).

    Examples
    --------
    Any strategy that declares ``needs_vit_model`` (L2P, CODA-Prompt, HiDe-Prompt, EASE, MOS, or a
    user's) is ``"prompt"``: it takes the whole :class:`~clkit.models.vit.ViTBackbone` and trains
    around the frozen ViT.

    >>> [learner_kind(n) for n in ("ncm", "simplecil", "ranpac", "l2p", "ewc", "icarl", "der")]
    ['ncm', 'frozen', 'frozen', 'prompt', 'scratch', 'scratch', 'scratch']
    >>> [learner_kind(n) for n in ("coda_prompt", "hide_prompt", "ease", "mos", "foster", "memo", "tagfex")]
    ['prompt', 'prompt', 'prompt', 'prompt', 'scratch', 'scratch', 'scratch']

    ``kwargs`` (the learner's ``learner_kwargs``) matter to a strategy with a ``needs_vit_for(kwargs)``: RanPAC
    with its first-task adapter stage (the EDGE authors' RanPAC, ``protocol: authors``) needs the whole ViT.

    >>> learner_kind("ranpac", {"first_session_adaptation": True}), learner_kind("ranpac", {})
    ('prompt', 'frozen')
    """
    from ..plugins import resolve_strategy
    from ..strategies.prototype import _FrozenFeatureStrategy

    if name == "ncm":
        return "ncm"
    if name in PROMPT_LEARNERS:
        return "prompt"
    cls = resolve_strategy(name, parameter="learners")
    if getattr(cls, "needs_vit_model", False):
        return "prompt"
    if callable(getattr(cls, "needs_vit_for", None)) and cls.needs_vit_for(kwargs or {}):
        return "prompt"
    return "frozen" if issubclass(cls, _FrozenFeatureStrategy) else "scratch"


def split_learners(learners) -> tuple:
    """``(own, strategies)`` for the image protocol: ``own`` is ``["ncm"]`` where asked (the batched learner, on
    frozen features); every other name -- ``"ewc"``, ``"icarl"``, ``"lwf"`` included -- is a
    :mod:`clkit.strategies` strategy (registry name, entry point or import path), checked by
    :func:`clkit.plugins.split_learners`. ``"finetune"`` is the strategy ``"naive"`` there.

    Examples
    --------
    >>> split_learners(["ncm", "ewc", "simplecil"])
    (['ncm'], ['ewc', 'simplecil'])
    """
    from ..plugins import split_learners as _split

    names = ["naive" if n == "finetune" else n for n in learners] if isinstance(learners, (list, tuple)) else learners
    return _split(names, ["ncm"], parameter="learners", notebook="02_edge")


def strategy_inputs(data: dict, strategies, *, backbone: str = "auto", spec: ViTSpec | None = None,
                    learner_kwargs: dict | None = None) -> dict:
    """``{name: (x_train, x_test, model_factory)}`` for :func:`clkit.edge.report.ground_truth`'s strategies.

    * ``"scratch"``: the standardised images and ``make_backbone(backbone, 3, C, H)``
      (``backbone="auto"``: :data:`SCRATCH_BACKBONES`; a name of :data:`CIFAR_RESNETS`: that CIFAR ResNet);
    * ``"frozen"``: the cached features ``f_train`` / ``f_test`` and a head on them
      (``nn.Sequential(nn.Identity(), nn.Linear(d, C))``: the method's extractor is the identity,
      its statistics come from the features);
    * ``"prompt"``: :func:`vit_inputs` of the images and ``spec.build(C)``.

    The kind is :func:`learner_kind` of the name and its ``learner_kwargs`` entry (RanPAC with its adapter
    stage is ``"prompt"``).

    Examples
    --------
    >>> d = {"x_train": np.zeros((2, 3, 3, 32, 32), np.float32), "x_test": np.zeros((2, 1, 3, 32, 32), np.float32),
    ...      "f_train": np.zeros((2, 3, 8), np.float32), "f_test": np.zeros((2, 1, 8), np.float32),
    ...      "dataset": "cifar100", "image_shape": (3, 32, 32)}
    >>> ins = strategy_inputs(d, ["ewc", "simplecil"])
    >>> ins["ewc"][2](in_features=3072, num_classes=2).__class__.__name__, ins["simplecil"][0].shape
    ('CifarResNet', (2, 3, 8))
    """
    dataset = data.get("dataset", "cifar100")
    net = SCRATCH_BACKBONES.get(dataset, "resnet18_bn") if backbone == "auto" else backbone
    side = int(data["image_shape"][-1])
    out, vit_x = {}, None
    for name in strategies:
        kind = learner_kind(name, (learner_kwargs or {}).get(name))
        if kind == "frozen":
            if "f_train" not in data:
                raise ValueError(f"learners: {name!r} classifies frozen ViT features, and this run has none "
                                 f"(frozen_features was not run)")
            out[name] = (data["f_train"], data["f_test"], _feature_head)
        elif kind == "prompt":
            spec = spec or ViTSpec()
            if vit_x is None:
                vit_x = (vit_inputs(data["raw_train"], spec), vit_inputs(data["raw_test"], spec))
            out[name] = (*vit_x, _ViTFactory(spec))
        else:
            out[name] = (data["x_train"], data["x_test"], _ScratchFactory(net, side))
    return out


def _feature_head(*, in_features: int, num_classes: int) -> nn.Module:
    return nn.Sequential(nn.Identity(), nn.Linear(in_features, num_classes))


@dataclass(frozen=True)
class _ScratchFactory:
    backbone: str
    side: int

    def __call__(self, *, in_features: int, num_classes: int) -> nn.Module:
        from ..models.cnn import CifarResNet, make_backbone

        if self.backbone in CIFAR_RESNETS:
            return CifarResNet(3, num_classes, blocks=CIFAR_RESNETS[self.backbone])
        return make_backbone(self.backbone, 3, num_classes, self.side)


@dataclass(frozen=True)
class _ViTFactory:
    spec: ViTSpec

    def __call__(self, *, in_features: int, num_classes: int) -> nn.Module:
        return self.spec.build(num_classes)


def notebook_learners(dataset: str, learners) -> tuple:
    """Notebook 02's ``(own, strategies)``: on the Fashion-MNIST setting (or an ImageFolder) its batched
    learners and any strategies (:func:`clkit.plugins.split_learners`); on an image protocol
    (:data:`IMAGE_DATASETS`) :func:`split_learners`.

    Examples
    --------
    >>> notebook_learners("fashion_mnist", ["ewc", "ncm"]), notebook_learners("cifar100", ["ewc", "ncm"])
    ((['ewc', 'ncm'], []), (['ncm'], ['ewc']))
    """
    from ..plugins import split_learners as _split
    from .learners import LEARNERS

    if dataset in IMAGE_DATASETS:
        return split_learners(learners)
    return _split(learners, LEARNERS, parameter="learners", notebook="02_edge", extra_needs=("any_backbone",))


def image_protocol_data(dataset: str, classes, *, n_train: int, n_test: int, image_size: int | None = None,
                        seed: int = 0, download: bool = False, spec: ViTSpec | None = None, device=None) -> dict:
    """:func:`load_image_protocol` plus the frozen ViT features (:func:`frozen_features`, computed once).

    The data source says which ViT gave the features and where its weights came from.

    Examples
    --------
    >>> import tempfile, os
    >>> from clkit.data.fixtures.images import write_cifar100
    >>> root = tempfile.mkdtemp(); _ = write_cifar100(root, classes=100, per_class_train=4, per_class_test=3)
    >>> old = os.environ.get("CLKIT_DATA"); os.environ["CLKIT_DATA"] = root
    >>> d = image_protocol_data("cifar100", [0, 1], n_train=4, n_test=2, spec=ViTSpec("tiny"))
    >>> d["f_train"].shape, "random initialisation" in d["data_source"]
    ((2, 4, 32), True)
    >>> _ = os.environ.pop("CLKIT_DATA") if old is None else os.environ.update(CLKIT_DATA=old)
    """
    spec = spec or ViTSpec()
    data = load_image_protocol(dataset, classes, n_train=n_train, n_test=n_test, image_size=image_size, seed=seed,
                               download=download)
    feats = frozen_features(data["raw_train"], data["raw_test"], spec, device=device)
    data.update(f_train=feats["f_train"], f_test=feats["f_test"], vit=spec)
    name = "tiny ViT (clkit.models.vit.TINY_CONFIG)" if spec.tiny else spec.model
    data["data_source"] += (f"; frozen features (prototype learners, NCM, image similarity): {name} at "
                            f"{spec.input_side()}x{spec.input_side()}, weights: {feats['weights_source']}")
    return data


def table_families(learners, dataset: str) -> dict:
    """The paper's split of its Tables 1-2: ``{title: learners}``, pre-trained methods (Table 1: frozen-ViT
    prototype and prompt learners, NCM) and non-pre-trained ones (Table 2: trained from scratch); one table
    of every learner outside the image protocols.

    Examples
    --------
    >>> table_families(["ewc", "simplecil", "l2p"], "cifar100")
    {'Table 1 layout: pre-trained methods': ['simplecil', 'l2p'], 'Table 2 layout: non-pre-trained methods': ['ewc']}
    >>> table_families(["finetune", "ncm"], "fashion_mnist")
    {'Tables 1-2 layout': ['finetune', 'ncm']}
    """
    learners = list(learners)
    if dataset not in IMAGE_DATASETS:
        return {"Tables 1-2 layout": learners}
    pre = [n for n in learners if learner_kind(n) != "scratch"]
    scratch = [n for n in learners if learner_kind(n) == "scratch"]
    out = {}
    if pre:
        out["Table 1 layout: pre-trained methods"] = pre
    if scratch:
        out["Table 2 layout: non-pre-trained methods"] = scratch
    return out


def check_image_params(dataset: str, *, image_size, backbone, vit_model, vit_weights, download, seed: int = 0,
                       encoder_sizes=(), bounds_datasets=()):
    """Validate notebook 02's image-protocol parameters; the :class:`ViTSpec` on an image protocol, else ``None``.

    Examples
    --------
    >>> check_image_params("cifar100", image_size=0, backbone="auto", vit_model="tiny", vit_weights="",
    ...                    download=False)
    ViTSpec(model='tiny', weights='', seed=0)
    >>> check_image_params("fashion_mnist", image_size=0, backbone="auto", vit_model="tiny", vit_weights="",
    ...                    download=False) is None
    True
    >>> check_image_params("fashion_mnist", image_size=0, backbone="auto", vit_model="tiny", vit_weights="",
    ...                    download=False, bounds_datasets=["svhn"])
    Traceback (most recent call last):
    ...
    ValueError: bounds_datasets contains 'svhn'; allowed: ['cifar100', 'imagenet_r', 'cub200']
    >>> check_image_params("cifar100", image_size=0, backbone="vgg", vit_model="tiny", vit_weights="", download=False)
    Traceback (most recent call last):
    ...
    ValueError: backbone must be 'auto' or one of clkit.models.cnn.BACKBONES ['small_cnn', 'wide_vgg9', 'resnet18', 'resnet34', 'mlp', 'resnet32', 'wide_vgg9_bn', 'efficientnet_b1', 'resnet34_bn', 'resnet18_bn'] or ['resnet8', 'resnet14', 'resnet20'], got 'vgg'
    """
    from pathlib import Path

    from .._validate import check_type
    from ..models.cnn import BACKBONES

    check_int("image_size", image_size, low=0)
    if image_size and image_size < 8:
        raise ValueError(f"image_size must be 0 (the dataset's default) or >= 8, got {image_size!r}")
    check_type("backbone", backbone, str)
    if backbone != "auto" and backbone not in BACKBONES and backbone not in CIFAR_RESNETS:
        raise ValueError(f"backbone must be 'auto' or one of clkit.models.cnn.BACKBONES {list(BACKBONES)} or "
                         f"{list(CIFAR_RESNETS)}, got {backbone!r}")
    check_type("vit_model", vit_model, str)
    check_type("vit_weights", vit_weights, str)
    check_type("download", download, bool)
    check_type("encoder_sizes", encoder_sizes, (list, tuple), "a list of open_clip model names, e.g. ['RN50', "
               "'ViT-B-16', 'ViT-L-14']")
    for name in encoder_sizes:
        check_type("encoder_sizes", name, str, "a list of open_clip model names")
    from .._validate import check_choices

    check_choices("bounds_datasets", bounds_datasets, list(IMAGE_DATASETS), min_len=0)
    if dataset not in IMAGE_DATASETS and not bounds_datasets:
        return None
    if vit_model != "tiny" and not vit_model.startswith("vit_"):
        raise ValueError(f"vit_model must be 'tiny' or a timm vision transformer name (timm.list_models('vit_*'), "
                         f"e.g. 'vit_base_patch16_224.augreg_in21k'), got {vit_model!r}")
    if vit_weights and not Path(vit_weights).expanduser().is_file():
        from ..models.vit import _how_to_get

        raise ValueError(f"vit_weights: no weights file {vit_weights!r} (looked for exactly that path); "
                         f"{_how_to_get(vit_model if vit_model != 'tiny' else 'vit_base_patch16_224')}; or pass "
                         f"vit_weights '' for a randomly initialised ViT (then no pretrained backbone: said in the run)")
    if dataset == "cifar100" and image_size not in (0, 32):
        raise ValueError(f"image_size: CIFAR-100 is 32x32 (the ViT resizes its own inputs), got {image_size!r}; "
                         f"allowed: 0 or 32")
    return ViTSpec(vit_model, str(Path(vit_weights).expanduser()) if vit_weights else "", int(seed))
