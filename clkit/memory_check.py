"""Every set's memory at the real sizes, by arithmetic: peak host and device bytes against a card and a host.

One function per notebook (:func:`plan_01` ... :func:`plan_05`; :func:`plan_for` picks by notebook)
turns a parameter set into a :class:`MemoryCheck`: the terms it holds on the host and on the card,
each named and sized at the set's *real* sizes (never the rehearsal's cut ones), compared with a
card (:data:`CARD_MEMORY`; default the one the budget names, :data:`clkit.cards.DEFAULT_CARD`) and
a host of ``host_gib`` GiB. Nothing is allocated: sizes are products of counts, and the two
figures a product cannot give -- a network's parameter count and the activations it keeps for the
backward pass -- come from building the network on PyTorch's ``meta`` device and running one
forward pass of the real batch shape there (:func:`network_bytes`), which stores no data.

How the activation estimate is made (:func:`saved_activation_bytes`): every tensor autograd saves
for the backward pass during that forward pass is counted once (by its storage), parameters
excepted. Attention is counted as CUDA runs it in float32, through the fused memory-efficient
kernel (queries, keys, values, output and the log-sum-exp saved; no ``L x L`` matrix), not as the
``meta`` device's unfused fallback would hold it. That is what stays alive until ``backward()``; the gradients' own working buffers and
the allocator's rounding are not counted, and are covered by :data:`DEVICE_RESERVE` (1 GiB,
CUDA's context and the allocator's slack; an allowance, not a measurement).

A card's memory is the vendor's figure in decimal gigabytes (80 GB for an H100 SXM): CUDA
reports slightly more for the H100 (79.2 GiB = 85.0 GB), so the check is on the safe side.

Examples
--------
>>> c = MemoryCheck("0X_demo", "paper", (("images", 3 * 2**30),), (("weights", 90 * 10**9),), "H100 SXM",
...                 host_gib=64, parameter="batch_size", advice="lower it")
>>> c.fits_host, c.fits_device
(True, False)
>>> c.row()["device plan"], c.row()["fits"]
('83.8 GiB of 74.5 GiB (H100 SXM)', 'no: device')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .cards import DEFAULT_CARD, card_spec

__all__ = ["CARD_MEMORY", "DEVICE_RESERVE", "PROCESS_BYTES", "DEFAULT_HOST_GIB", "CLIP_IMAGE_PARAMS",
           "GRAPHS", "MemoryCheck", "saved_activation_bytes", "network_bytes", "plan_01", "plan_02", "plan_03",
           "plan_04", "plan_05", "plan_for", "table"]

_GIB = 2 ** 30
_F = 4                                    # float32
_I = 8                                    # int64

#: each card's memory, bytes (vendors' datasheets, decimal GB: H100 SXM / PCIe 80 GB, H100 NVL 94 GB,
#: H200 / H200 NVL 141 GB, A100 80 / 40 GB, L40S 48 GB, L4 24 GB, A10 24 GB, V100 SXM2 32 GB,
#: RTX 4090 24 GB); the keys are :data:`clkit.cards.CARDS`'
CARD_MEMORY = {"H100 SXM": 80e9, "H100 PCIe": 80e9, "H100 NVL": 94e9, "H200": 141e9, "H200 NVL": 141e9,
               "A100 80GB SXM": 80e9, "A100 80GB PCIe": 80e9, "A100 40GB": 40e9, "L40S": 48e9, "L4": 24e9,
               "A10": 24e9, "V100 SXM2": 32e9, "RTX 4090": 24e9}

#: bytes set aside on the card for CUDA's context, cuBLAS workspaces and the allocator's slack (an allowance)
DEVICE_RESERVE = _GIB

#: bytes of the Python process itself with torch and the notebook's imports loaded (an allowance; a
#: fresh ``clkit run`` kernel measures 0.6-0.9 GiB resident before it loads data)
PROCESS_BYTES = _GIB

#: the host the table compares with unless told otherwise, GiB
DEFAULT_HOST_GIB = 64.0

#: parameters of open_clip's image towers (open_clip's docs/model_profile.csv, "image params"); only
#: the image tower is kept on the card for Fig. 4's features
CLIP_IMAGE_PARAMS = {"RN50": 38.32e6, "RN101": 56.26e6, "RN50x4": 87.14e6, "RN50x16": 167.33e6,
                     "RN50x64": 420.38e6, "ViT-B-32": 87.85e6, "ViT-B-16": 86.19e6, "ViT-L-14": 303.97e6}

#: the graphs of notebook 05: ``{dataset: (nodes, features, classes, directed edges as loaded)}``
#: (CoraFull: torch-geometric's CoraFull; ogbn-arxiv: 1,166,243 citations made undirected; Reddit:
#: torch-geometric's Reddit; Roman-Empire: 32,927 edges made undirected)
GRAPHS = {"corafull": (19_793, 8_710, 70, 126_842), "ogbn_arxiv": (169_343, 128, 40, 2_332_486),
          "reddit": (232_965, 602, 41, 114_615_892), "roman_empire": (22_662, 300, 18, 65_854)}


def _gib(b: float) -> str:
    return f"{b / _GIB:.3g} GiB"


@dataclass(frozen=True)
class MemoryCheck:
    """One set's memory plan: host and device terms (bytes), the card and host it is compared with.

    Attributes
    ----------
    notebook, set_name : str
    host, device : tuple of (str, int)
        Each term and its bytes.
    card : str
        A :data:`CARD_MEMORY` key.
    host_gib : float
        The host's memory, GiB.
    parameter : str
        What to change when the device plan does not fit (named in the refusal).
    advice : str
        How to change it.
    host_parameter, host_advice : str
        The same when only the host plan does not fit (default: :attr:`parameter`, :attr:`advice`).
    """

    notebook: str
    set_name: str
    host: tuple
    device: tuple
    card: str
    host_gib: float = DEFAULT_HOST_GIB
    parameter: str = ""
    advice: str = ""
    host_parameter: str = ""
    host_advice: str = ""

    @property
    def refused_parameter(self) -> str:
        """The parameter to change: the device's (:attr:`parameter`) unless only the host is over (:attr:`host_parameter`)."""
        if self.fits_device and not self.fits_host:
            return self.host_parameter or self.parameter
        return self.parameter

    @property
    def refused_advice(self) -> str:
        if self.fits_device and not self.fits_host:
            return self.host_advice or self.advice
        return self.advice

    @property
    def host_bytes(self) -> int:
        return int(sum(b for _, b in self.host))

    @property
    def device_bytes(self) -> int:
        return int(sum(b for _, b in self.device))

    @property
    def card_bytes(self) -> int:
        return int(CARD_MEMORY[self.card])

    @property
    def fits_host(self) -> bool:
        return self.host_bytes <= self.host_gib * _GIB

    @property
    def fits_device(self) -> bool:
        return self.device_bytes <= self.card_bytes

    @property
    def fits(self) -> bool:
        return self.fits_host and self.fits_device

    def row(self) -> dict:
        """``{set, host plan, device plan, fits, parameter}``: one line of :func:`table`."""
        bad = [w for w, ok in (("host", self.fits_host), ("device", self.fits_device)) if not ok]
        return {"set": f"{self.notebook[:2]} {self.set_name}",
                "host plan": f"{_gib(self.host_bytes)} of {self.host_gib:g} GiB",
                "device plan": f"{_gib(self.device_bytes)} of {_gib(self.card_bytes)} ({self.card})",
                "fits": "yes" if not bad else "no: " + " and ".join(bad),
                "parameter": self.refused_parameter}

    def terms(self) -> str:
        """Each term, host then device, one per line."""
        lines = [f"  host   {n}: {_gib(b)}" for n, b in self.host]
        return "\n".join(lines + [f"  device {n}: {_gib(b)}" for n, b in self.device])

    def check(self) -> MemoryCheck:
        """``self`` when it fits; else ``ValueError`` naming :attr:`parameter`, the plan and the card."""
        if self.fits:
            return self
        where = []
        if not self.fits_device:
            where.append(f"{_gib(self.device_bytes)} on the device, more than the {self.card}'s "
                         f"{_gib(self.card_bytes)} ({', '.join(f'{n} {_gib(b)}' for n, b in self.device)})")
        if not self.fits_host:
            where.append(f"{_gib(self.host_bytes)} on the host, more than its {self.host_gib:g} GiB")
        raise ValueError(f"{self.refused_parameter}: {self.notebook} --params {self.set_name} plans "
                         f"{' and '.join(where)}; {self.refused_advice}")


def saved_activation_bytes(model, x) -> int:
    """Bytes autograd saves for the backward pass in one forward pass of ``model`` on ``x`` (parameters excepted).

    Run it on the ``meta`` device: nothing is allocated. Each saved storage is counted once.

    Examples
    --------
    >>> import torch
    >>> with torch.device("meta"):
    ...     net = torch.nn.Sequential(torch.nn.Linear(10, 20), torch.nn.ReLU(), torch.nn.Linear(20, 5))
    ...     x = torch.empty(8, 10)
    >>> saved_activation_bytes(net, x)         # x (8x10), the ReLU's output (8x20), 4 bytes each
    960
    """
    from unittest import mock

    import torch

    params = {id(p) for p in model.parameters()}
    seen = {}

    def pack(t):
        base = t._base if t._base is not None else t
        if id(base) not in params and id(t) not in params:
            seen[id(base)] = (base, base.numel() * base.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), \
            mock.patch("torch.nn.functional.scaled_dot_product_attention", _fused_attention):
        model(x)
    return int(sum(b for _, b in seen.values()))


def _fused_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **_):
    """``F.scaled_dot_product_attention`` through the memory-efficient kernel, as CUDA picks it for float32."""
    import torch

    return torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, attn_mask, True, dropout_p, is_causal,
                                                                  scale=scale)[0]


def network_bytes(build, input_shape) -> tuple[int, int]:
    """``(parameters, saved activations)`` of ``build()`` on one batch of ``input_shape``, both in bytes, on ``meta``.

    Examples
    --------
    >>> import torch
    >>> network_bytes(lambda: torch.nn.Linear(10, 3), (4, 10))     # (10*3 + 3) * 4; the input 4 x 10 x 4
    (132, 160)
    """
    import torch

    with torch.device("meta"):
        model = build().to("meta")       # a tensor a constructor puts on the CPU itself moves too
        x = torch.empty(tuple(input_shape))
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    return int(params), saved_activation_bytes(model, x)


def _card(card):
    name = card_spec(card or DEFAULT_CARD)
    if name is None or name not in CARD_MEMORY:
        raise ValueError(f"card must be one of {sorted(CARD_MEMORY)} (or CUDA's name of one), got {card!r}")
    return name


def _host(host_gib):
    if isinstance(host_gib, bool) or not isinstance(host_gib, (int, float)) or not math.isfinite(host_gib) \
            or host_gib <= 0:
        raise ValueError(f"host_gib must be a positive number of GiB, got {host_gib!r}")
    return float(host_gib)


def plan_01(values: dict, set_name: str = "", *, card=None, host_gib: float = DEFAULT_HOST_GIB) -> MemoryCheck:
    """Notebook 01: CESNET series, the CL windows (:func:`clkit.taskification.budget.memory_plan`) and the transformer.

    Host: the process (:data:`PROCESS_BYTES`), the loaded stream ``num_series x T x 12`` float32 (``T`` =
    ``num_weeks`` of 10-minute steps), and 01's own plan: the CL windows of every split (views),
    the profile and BPS analyses (4 x the stream) and each of ``cl_workers``' batches and memory.
    Device (one process drives a card: :meth:`clkit.device.RunDevice.workers` gives 1 worker on an
    accelerator, so ``cl_workers`` counts on the host only): the transformer's weights, gradients and
    AdamW's two moments (4 x parameters), the activations of a training batch of ``2 x batch_size``
    windows (Replay's memory rows doubling it, the worst step) and a 4,096-window evaluation batch
    (no gradients, so tensors are freed layer by layer: two layers' worth of what training saves for one
    window, ``2 x saved(1 window) / num_layers x 4,096``).

    Examples
    --------
    >>> c = plan_01({"num_series": 2, "num_weeks": 1, "window_days": [1], "offset_days": 0, "cl_series": 2,
    ...              "context_steps": 8, "stride": 1, "context_across_tasks": False, "d_model": 8,
    ...              "num_layers": 1, "num_heads": 2, "batch_size": 4, "cl_workers": 1, "methods": ["naive"]})
    >>> [n for n, _ in c.host][:2], c.fits
    (['this process', 'the loaded stream (2 x 1008 steps x 12 features)'], True)
    """
    from .data.timeseries import CESNET_FEATURES
    from .models.transformer import TimeSeriesTransformer
    from .taskification import fixed_windows
    from .taskification.budget import memory_plan

    card, host_gib = _card(card), _host(host_gib)
    per_day = 144
    T = int(values["num_weeks"]) * 7 * per_day
    F = len(CESNET_FEATURES)
    S, ctx, B = int(values["num_series"]), int(values["context_steps"]), int(values["batch_size"])
    workers = max(1, int(values.get("cl_workers", 1)))
    offset = round(float(values.get("offset_days", 0)) * per_day)
    splits = {f"{d} days": fixed_windows(T, round(float(d) * per_day), offset) for d in values["window_days"]}
    replay = "replay" in values.get("methods", ())
    plan = memory_plan(splits, cl_series=int(values.get("cl_series", S)), context=ctx, stride=int(values["stride"]),
                       context_across_tasks=bool(values["context_across_tasks"]), num_features=F, batch_size=B,
                       workers=workers, memory_size=B if replay else 0, analysed_bytes=S * T * F * _F,
                       process_bytes=PROCESS_BYTES)
    host = ((plan.items[0][0].replace(" now", ""), plan.items[0][1]),
            (f"the loaded stream ({S} x {T} steps x {F} features)", S * T * F * _F)) + tuple(plan.items[1:])

    def build():
        return TimeSeriesTransformer(F, ctx, int(values["d_model"]), int(values["num_layers"]),
                                     int(values["num_heads"]), target_index=0)

    rows = 2 * B if replay else B
    params, acts = network_bytes(build, (rows, ctx, F))
    _, one = network_bytes(build, (1, ctx, F))
    device = ((f"weights, gradients, AdamW moments (4 x {params // _F:,} parameters)", 4 * params),
              (f"activations of a {rows}-window training batch", acts),
              ("a 4,096-window evaluation batch", 4096 * 2 * one // int(values["num_layers"])),
              ("CUDA context and allocator reserve", DEVICE_RESERVE))
    return MemoryCheck("01_taskification", set_name, host, device, card, host_gib, parameter="batch_size",
                       advice="lower batch_size",
                       host_parameter=plan.parameter, host_advice=plan.advice)


def plan_02(values: dict, set_name: str = "", *, card=None, host_gib: float = DEFAULT_HOST_GIB) -> MemoryCheck:
    """Notebook 02: CIFAR-100 classes at 224 px, the ViT learners, the prefix tree and Fig. 4's encoders.

    Host: the process, the chosen classes' images at 224 px, float32 (``len(classes) x (n_train + n_test)``),
    the bounds datasets' encoder features (768 floats an image; CUB-200 11,788 and ImageNet-R 30,000
    images) and the prefix tree's depth-first walk: ``num_tasks + 1`` learner states (parameters and
    momentum, 2 x the ViT's parameters) kept alive at once (:mod:`clkit.edge.prefix`).
    Device (an upper bound: every learner is priced as if it fine-tuned the whole ViT): the ViT's
    weights, gradients and momentum (3 x parameters), the activations of a ``batch_size`` training batch
    at 224 px, RanPAC's projection (768 x ``projection_dim``) and its Gram matrix and solve
    (2 x ``projection_dim`` squared), and the largest of Fig. 4's CLIP image towers (weights only,
    features without gradients).

    Examples
    --------
    >>> c = plan_02({"classes": [0, 1], "num_tasks": 1, "n_train": 2, "n_test": 1, "batch_size": 2,
    ...              "learner_kwargs": {}, "encoder_sizes": ["RN50"], "bounds_datasets": []})
    >>> c.host[1]                        # 2 classes x 3 images x 3 x 224 x 224 x 4 bytes
    ('CIFAR-100 images at 224 px (6 images)', 3612672)
    """
    import timm

    card, host_gib = _card(card), _host(host_gib)
    C, K = len(values["classes"]), int(values["num_tasks"])
    n_img = C * (int(values["n_train"]) + int(values["n_test"]))
    img = 3 * 224 * 224 * _F
    feats = {"cifar100": 0, "cub200": 11_788, "imagenet_r": 30_000}
    bounds = sum(feats.get(d, 0) for d in values.get("bounds_datasets", ()))
    B = int(values["batch_size"])
    params, acts = network_bytes(lambda: timm.create_model("vit_base_patch16_224", pretrained=False, num_classes=C),
                                 (B, 3, 224, 224))
    host = (("this process", PROCESS_BYTES), (f"CIFAR-100 images at 224 px ({n_img:,} images)", n_img * img),
            (f"bounds datasets' features ({bounds:,} images x 768)", bounds * 768 * _F),
            (f"prefix-tree walk: {K + 1} learner states (2 x {params // _F:,} parameters)", (K + 1) * 2 * params))
    proj = int((values.get("learner_kwargs") or {}).get("ranpac", {}).get("projection_dim", 0) or 0)
    clip = max((CLIP_IMAGE_PARAMS.get(e, max(CLIP_IMAGE_PARAMS.values())) for e in values.get("encoder_sizes", ())),
               default=0)
    device = (("ViT-B/16 weights, gradients and momentum (3 x parameters)", 3 * params),
              (f"activations of a {B}-image batch at 224 px", acts),
              (f"RanPAC projection and Gram matrix (projection_dim {proj:,})", (768 * proj + 2 * proj * proj) * _F),
              ("the largest Fig. 4 CLIP image tower (weights)", int(clip) * _F),
              ("CUDA context and allocator reserve", DEVICE_RESERVE))
    return MemoryCheck("02_edge", set_name, host, device, card, host_gib, parameter="batch_size",
                       advice="lower batch_size", host_parameter="n_train",
                       host_advice="lower n_train (training images per class), or run on a larger host")


def plan_03(values: dict, set_name: str = "", *, card=None, host_gib: float = DEFAULT_HOST_GIB) -> MemoryCheck:
    """Notebook 03: the Wild-Time images on host and card, by 03's own :func:`clkit.temporal.memory_plan.memory_plan`.

    Host: the process and the images as 03's plan counts them (``host_need_bytes``: uint8 pixels
    unpooled, float32 pooled). Device: every period's images (moved once), the batch converted to
    float32 at once (uint8 only, ``convert_bytes``) and 03's training allowance for the backbone.
    Synthetic sets hold kilobytes.

    Examples
    --------
    >>> fmow = {"dataset": "fmow", "image_size": 224, "backbone": "densenet121"}
    >>> plan_03(fmow, "paper").fits_device, plan_03(fmow, "paper", card="L4").fits_device
    (True, False)
    >>> plan_03(fmow, "paper", card="L4").refused_parameter
    'image_size'
    """
    from .temporal.memory_plan import memory_plan

    card, host_gib = _card(card), _host(host_gib)
    ds, size = values.get("dataset", "synthetic"), int(values.get("image_size", 32))
    if ds not in ("fmow", "yearbook"):
        return MemoryCheck("03_temporal_metrics", set_name, (("this process", PROCESS_BYTES),),
                           (("CUDA context and allocator reserve", DEVICE_RESERVE),), card, host_gib, "dataset")
    p = memory_plan(ds, image_size=size, max_per_period=int(values.get("max_per_period", 0) or 0),
                    backbone=values.get("backbone", "mlp"))
    kind = p.get("dtype", "float32")
    convert = int(p.get("convert_bytes", 0) or 0)
    host = (("this process", PROCESS_BYTES), (f"{ds} images at {size} px ({kind})", p["host_need_bytes"]))
    device = ((f"{ds} images at {size} px ({kind})", p["images_bytes"]),
              ("a batch converted to float32", convert),
              (f"training allowance for {p['backbone']}", p["device_need_bytes"] - p["images_bytes"] - convert),
              ("CUDA context and allocator reserve", DEVICE_RESERVE))
    return MemoryCheck("03_temporal_metrics", set_name, host, device, card, host_gib, parameter="image_size",
                       advice="set -p max_per_period N (images per split and year), or use the paper_32px set",
                       host_parameter="max_per_period",
                       host_advice="set -p max_per_period N (images per split and year), or run on a larger host")


def plan_04(values: dict, set_name: str = "", *, card=None, host_gib: float = DEFAULT_HOST_GIB) -> MemoryCheck:
    """Notebook 04: six datasets' images at ``image_size``, the backbone and the strategies' extra copies.

    Host: the process and every dataset's 10 classes at :func:`clkit.curriculum.budget.nominal_per_class`
    rows (train and test), float32 ``channels x image_size^2``. Device: the whole stream (an upper bound:
    tensors move at task boundaries), the backbone's weights, gradients and momentum (3 x parameters),
    the largest strategy's extra parameter-sized tensors (EWC / SI / MAS: 3; PNN: one column per task,
    each 3 x parameters, counted as ``tasks`` x 3), and the activations of a training batch of
    ``batch_size`` plus the largest replayed rows (``memory_size`` or ``gem_patterns_per_task``).

    Examples
    --------
    >>> c = plan_04({"datasets": ["mnist"], "per_class_train": 2, "per_class_test": 1, "image_size": 8,
    ...              "channels": 1, "backbone": "small_cnn", "batch_size": 2, "strategies": ["naive"]})
    >>> c.host[1]                        # 10 classes x 3 images x 8 x 8 x 4 bytes
    ('images of 1 datasets at 8 px (30 images)', 7680)
    """
    from .curriculum.budget import nominal_per_class
    from .models.cnn import make_backbone

    card, host_gib = _card(card), _host(host_gib)
    per = nominal_per_class(values["datasets"], int(values["per_class_train"]), int(values["per_class_test"]))
    n_img = sum(10 * (tr + te) for tr, te in per.values())
    size, ch = int(values["image_size"]), int(values["channels"])
    img = ch * size * size * _F
    strategies = list(values.get("strategies", ()))
    extra_rows = max([int(values.get("memory_size", 0) or 0) if "replay" in strategies else 0,
                      int(values.get("gem_patterns_per_task", 0) or 0) if "gem" in strategies else 0])
    B = int(values["batch_size"]) + extra_rows
    K = len(values["datasets"])
    params, acts = network_bytes(lambda: make_backbone(values["backbone"], ch, 10 * K, size), (B, ch, size, size))
    copies = max([3 if set(strategies) & {"ewc", "si", "mas"} else 0, 3 * (K - 1) if "pnn" in strategies else 0])
    host = (("this process", PROCESS_BYTES), (f"images of {K} datasets at {size} px ({n_img:,} images)", n_img * img))
    device = ((f"the stream's images ({n_img:,})", n_img * img),
              (f"{values['backbone']} weights, gradients and momentum (3 x {params // _F:,} parameters)", 3 * params),
              (f"strategies' extra parameter-sized copies ({copies})", copies * params),
              (f"activations of a {B}-image training batch", acts),
              ("CUDA context and allocator reserve", DEVICE_RESERVE))
    return MemoryCheck("04_curriculum", set_name, host, device, card, host_gib, parameter="batch_size",
                       advice="lower batch_size", host_parameter="per_class_train",
                       host_advice="lower per_class_train (or image_size), or run on a larger host")


def plan_05(values: dict, set_name: str = "", *, card=None, host_gib: float = DEFAULT_HOST_GIB) -> MemoryCheck:
    """Notebook 05: the graph (:data:`GRAPHS`) on host and card, and a whole-graph GCN step.

    Host: the process and two copies of the graph (the loader's and the drifted CL graph): features
    ``N x F`` float32, ``edge_index`` 2 x ``E`` int64, labels int64. Device: one graph with its
    normalised edge weights (float32 a edge), the two-layer GCN's weights, gradients and Adam's
    moments (4 x parameters, ``F x hidden + hidden x C``) and the activations of a whole-graph step
    (an upper bound: sampling keeps fewer): the input dropout's output and mask ``2 x N x F``, six
    ``N x hidden`` tensors and three ``N x C``.

    Examples
    --------
    >>> c = plan_05({"dataset": "roman_empire", "hidden": 256}, "paper_roman_empire")
    >>> c.host[1][1] == 2 * (22_662 * 300 * 4 + 2 * 65_854 * 8 + 22_662 * 8), c.fits
    (True, True)
    """
    card, host_gib = _card(card), _host(host_gib)
    ds = values.get("dataset", "corafull")
    if ds not in GRAPHS:
        raise ValueError(f"dataset must be one of {sorted(GRAPHS)} for a memory plan, got {ds!r}")
    N, F, C, E = GRAPHS[ds]
    H = int(values.get("hidden", 256))
    graph = N * F * _F + 2 * E * _I + N * _I
    params = (F * H + H + H * C + C) * _F
    host = (("this process", PROCESS_BYTES), (f"{ds} graph, two copies ({N:,} nodes, {E:,} edges, {F} features)",
                                              2 * graph))
    device = ((f"{ds} graph and edge weights", graph + E * _F),
              (f"GCN weights, gradients, Adam moments (4 x {params // _F:,} parameters)", 4 * params),
              ("activations of a whole-graph step", N * (2 * F + 6 * H + 3 * C) * _F),
              ("CUDA context and allocator reserve", DEVICE_RESERVE))
    return MemoryCheck("05_drift", set_name, host, device, card, host_gib, parameter="neighbour_sampling",
                       advice="set -p neighbour_sampling on (sampled 2-hop neighbourhoods), or lower hidden",
                       host_parameter="dataset", host_advice=f"{ds} needs a host with more memory (or a smaller dataset)")


_PLANS = {"01": plan_01, "02": plan_02, "03": plan_03, "04": plan_04, "05": plan_05}


def plan_for(notebook: str, values: dict, set_name: str = "", *, card=None,
             host_gib: float = DEFAULT_HOST_GIB) -> MemoryCheck | None:
    """The plan of ``notebook`` (``"02"`` or ``"02_edge"``) for ``values``; ``None`` where none applies (06).

    Examples
    --------
    >>> plan_for("06_your_runs", {}) is None
    True
    """
    fn = _PLANS.get(str(notebook)[:2])
    return None if fn is None else fn(values, set_name, card=card, host_gib=host_gib)


def table(checks) -> str:
    """The "memory at the real sizes" table: one row per :class:`MemoryCheck`, then each one's terms.

    Examples
    --------
    >>> print(table([MemoryCheck("05_drift", "x", (("a", 2**30),), (("b", 2**30),), "H100 SXM", 64, "hidden")]))
    memory at the real sizes (by arithmetic, nothing allocated)
    set          host plan          device plan                    fits  parameter
    05 x         1 GiB of 64 GiB    1 GiB of 74.5 GiB (H100 SXM)   yes   hidden
      host   a: 1 GiB
      device b: 1 GiB
    """
    rows = [c.row() for c in checks]
    keys = ["set", "host plan", "device plan", "fits", "parameter"]
    widths = {k: max([len(k)] + [len(r[k]) for r in rows]) + 2 for k in keys}
    widths["set"] = max(widths["set"], 13)
    out = ["memory at the real sizes (by arithmetic, nothing allocated)",
           "".join(k.ljust(widths[k]) for k in keys).rstrip()]
    for c, r in zip(checks, rows):
        out.append("".join(r[k].ljust(widths[k]) for k in keys).rstrip())
        out.append(c.terms())
    return "\n".join(out)
