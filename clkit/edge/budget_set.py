"""The budget of notebook 02's whole set on one GPU: every stage it runs, and where it must be split.

:func:`clkit.edge.budget.truth_budget` counts and times the ground truth. :func:`set_budget` adds the
rest of the set and prices every stage on one GPU:

* **ground truth** -- per learner, its line of the truth budget: on a CUDA run the seconds timed
  there, else the strategies' FLOPs (:func:`clkit.budget.training_flops`: each learner's own epochs
  per task, ``learner_kwargs`` included, training and evaluation) at the measured throughput of its
  backbone where ``benchmarks/gpu_check.py`` measured one (:data:`clkit.budget.MEASURED_STEPS`, on
  :data:`clkit.budget.MEASURED_CARD`), else at :data:`clkit.budget.GPU_ASSUMPTION`; a batched
  learner's line is the seconds timed on the run's device;
* **RS and EDGE estimates** -- with an exact truth every order they evaluate is in it (looked up,
  nothing trained); a sampled truth trains their orders and S-ties on demand (about two orders per
  sequence of RS and EDGE, each at the truth's cost of one order: its tasks without the prefix tree);
* **Fig. 4** -- each CLIP text encoder of ``encoder_sizes`` encodes the class names once
  (transformer FLOPs from open_clip's architecture: ``layers x context x (24 width^2 + 4 context
  width)`` a name); its EDGE triplet is looked up in the truth;
* **Fig. 5** -- per classic split and learner, the distinct RS and EDGE orders (RS's seeds, EDGE's
  hard and easy; its random member is RS's first) trained over ``classic_num_tasks`` tasks of the
  split's classes: the learner's epochs per task x the task's rows at its FLOPs per row (a
  from-scratch learner's scaled by its backbone's FLOPs at the split's image size), RanPAC's
  first-task adapter stage where it runs (:func:`clkit.edge.strategy_flops.first_task_extra`), its
  evaluation on the classes seen, and the frozen ViT's one pass over the split's images. Rows per class: at
  most ``n_train`` / ``n_test`` and the split's mean per class (:data:`CLASSIC_ROWS`; the run cuts
  every class to the smallest class's count, so this is an upper bound).

Where the total exceeds a day on one GPU the set is split (:mod:`clkit.edge.split`,
:data:`SPLIT_GRID`): every unit (one learner's truth, one learner on one split of Fig. 5) is a case,
and the budget names the longest. Not counted: what :data:`clkit.edge.budget.LEFT_OUT` says, model
and weight loading, the analysis (minutes on a CPU), a growing network's extra FLOPs (DER, MEMO,
FOSTER: more than their initial model's) and TagFex's second view.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..budget import GPU_ASSUMPTION, GPU_THROUGHPUT, format_duration, format_flops

__all__ = ["CLASSIC_ROWS", "SPLIT_GRID", "GPU_DAY", "CASE_LIMIT", "Stage", "SetBudget", "set_budget",
           "classic_orders", "text_encoder_flops"]

#: images per class of the classic splits (train, test): CIFAR-100's official 500 / 100; CUB-200's
#: official split, 5,994 / 5,794 over 200 classes (30 / 29 a class on average); ImageNet-R's 30,000
#: images, 80 / 20 per class (clkit.data.images.imagenet_r_split), 120 / 30 on average
CLASSIC_ROWS = {"cifar100": (500, 100), "cub200": (30, 29), "imagenet_r": (120, 30)}

#: the grid that splits notebook 02's paper set into cases
SPLIT_GRID = "notebooks/grids/02_edge/paper_split.yaml"

#: a set longer than this on one GPU ships a split; a case should stay under CASE_LIMIT
GPU_DAY = 86400.0
CASE_LIMIT = 12 * 3600.0


@dataclass
class Stage:
    """One stage of the set on one GPU.

    Attributes
    ----------
    name : str
    seconds : float
        Its time on one GPU (the whole run's: work a case repeats, such as a split's features, once).
    detail : str
    units : dict
        ``{unit key of clkit.edge.split: seconds}`` of the stage's independent units (as a case runs them).
    sources : list of str
        Whose step times or throughput priced it.
    """

    name: str
    seconds: float
    detail: str = ""
    units: dict = field(default_factory=dict)
    sources: list = field(default_factory=list)

    def line(self) -> str:
        return f"- **{self.name}**: about {format_duration(self.seconds)}" + (f" ({self.detail})" if self.detail
                                                                              else "")


@dataclass
class SetBudget:
    """The truth's budget (:class:`clkit.edge.budget.TruthBudget`) and every stage of the set on one GPU."""

    truth: object
    stages: list

    @property
    def seconds(self) -> float:
        """The whole set on one GPU (the stages summed)."""
        return float(sum(s.seconds for s in self.stages))

    @property
    def units(self) -> dict:
        """``{unit: seconds}`` of every case unit (:func:`clkit.edge.split.all_cases`)."""
        return {k: v for s in self.stages for k, v in s.units.items()}

    @property
    def sources(self) -> list:
        out = []
        for s in self.stages:
            out += [x for x in s.sources if x not in out]
        return out

    def split_text(self) -> str:
        """Whether the set needs its split, and its longest case."""
        units = {k: v for k, v in self.units.items() if np.isfinite(v)}
        if self.seconds <= GPU_DAY or not units:
            return f"Under a day on one GPU: one run does it ({SPLIT_GRID} splits it where wanted)."
        key = max(units, key=units.get)
        over = [k for k, v in units.items() if v > CASE_LIMIT]
        return (f"**More than a day on one GPU: split it** with {SPLIT_GRID} ({len(units)} cases, one per learner's "
                f"ground truth and per learner on each split of Fig. 5; the longest, {key}, about "
                f"{format_duration(units[key])}; `clkit sweep 02 --grid {SPLIT_GRID} --cluster slurm`, then "
                f"`clkit merge`)" + (f"; {len(over)} case(s) over 12 h ({', '.join(over[:4])}): give them a longer "
                                     "--walltime" if over else "") + ".")

    def text(self) -> str:
        """The truth's budget paragraph, then one line per stage, the total, the cards and the split."""
        lines = "\n".join(s.line() for s in self.stages)
        return (f"{self.truth.text()}\n\n**The whole set on one GPU: about {format_duration(self.seconds)}**, "
                f"estimated, not measured, stage by stage:\n\n{lines}\n\nPriced at "
                + "; ".join(self.sources) + f". {self.split_text()}")

    def record(self) -> dict:
        """For ``results.json``: the truth's record plus the stages, the total and the split."""
        units = self.units
        return {**self.truth.record(),
                "stages": [{"name": s.name, "seconds": s.seconds, "detail": s.detail, "units": s.units,
                            "sources": s.sources} for s in self.stages],
                "set_gpu_seconds": self.seconds, "gpu_sources": self.sources,
                "split": {"grid": SPLIT_GRID, "needed": bool(self.seconds > GPU_DAY), "cases": len(units),
                          "longest_s": max(units.values(), default=0.0)}}


def classic_orders(num_seeds: int, edge_num_random: int = 1) -> int:
    """Distinct orders Fig. 5 trains on one split: RS's seeds and EDGE's hard and easy (its random members are
    RS's first seeds' orders).

    Examples
    --------
    >>> classic_orders(3), classic_orders(3, 5)
    (5, 7)
    """
    return max(int(num_seeds), int(edge_num_random)) + 2


def text_encoder_flops(name: str, num_names: int) -> float | None:
    """FLOPs of encoding ``num_names`` class names with open_clip's text transformer ``name`` (its
    architecture's ``text_cfg``): ``layers x context x (24 width^2 + 4 context width)`` a name (the
    projections and the MLP, then attention's two products); ``None`` for a name open_clip does not know.

    Examples
    --------
    ViT-B-16's text tower is 12 layers of width 512 over 77 tokens:

    >>> text_encoder_flops("ViT-B-16", 6) == 6 * 12 * 77 * (24 * 512**2 + 4 * 77 * 512)
    True
    """
    import open_clip

    cfg = open_clip.get_model_config(name)
    if not cfg:
        return None
    t = cfg["text_cfg"]
    w, L, c = t.get("width", 512), t.get("layers", 12), t.get("context_length", 77)
    return float(num_names * L * c * (24 * w * w + 4 * c * w))


def _scratch_row_flops(dataset: str, backbone: str, num_classes: int, image_size: int = 0) -> tuple:
    """``(backbone name, training-step FLOPs per row)`` of a from-scratch network on ``dataset``'s images."""
    import torch

    from ..budget import training_flops
    from .images import NATIVE_SIZE, SCRATCH_BACKBONES, _ScratchFactory

    net = SCRATCH_BACKBONES.get(dataset, "resnet18_bn") if backbone == "auto" else backbone
    side = 32 if dataset == "cifar100" else int(image_size or NATIVE_SIZE.get(dataset, 224))
    model = _ScratchFactory(net, side)(in_features=3 * side * side, num_classes=num_classes)
    model.train()
    return net, training_flops(model, torch.zeros(2, 3, side, side))["step"] / 2


def _vit_forward_flops(spec, num_classes: int) -> float | None:
    """FLOPs of one image through the frozen ViT of ``spec`` (built on ``meta``: no weights read)."""
    import torch

    from ..budget import training_flops
    from ..models.vit import vit_backbone

    try:
        with torch.device("meta"):
            m = vit_backbone("vit_base_patch16_224" if spec.tiny else spec.model, num_classes=num_classes,
                             tiny=spec.tiny)
        side = spec.input_side()
        return training_flops(m.eval(), torch.zeros(1, 3, side, side))["forward"]
    except Exception:  # noqa: BLE001 -- a ViT the counter cannot trace is left out, said in the stage
        return None


def set_budget(truth, *, dataset: str, num_classes: int, num_tasks: int, n_train: int = 0, n_test: int = 0,
               seeds=(0, 42, 1993), edge_num_random: int = 1, encoder_sizes=(), bounds_datasets=(),
               bounds_learners=(), classic_num_tasks: int = 10, backbone: str = "auto", image_size: int = 0,
               spec=None, learner_kwargs: dict | None = None, mode: str = "exact") -> SetBudget:
    """Every stage of notebook 02's set on one GPU (see the module docstring), from the truth's budget.

    Parameters
    ----------
    truth : clkit.edge.budget.TruthBudget
        :func:`clkit.edge.budget.truth_budget` of this run (its per-learner lines).
    dataset : str
        The enumerable setting's dataset (its from-scratch backbone scales Fig. 5's).
    num_classes, num_tasks : int
        Its classes and tasks.
    n_train, n_test : int
        The run's caps on images per class (0: none).
    seeds, edge_num_random
        RS's seeds and EDGE's random members.
    encoder_sizes : list of str
        Fig. 4's open_clip architectures.
    bounds_datasets, bounds_learners : list of str
        Fig. 5's splits and learners (``check_bounds_learners``' list).
    classic_num_tasks : int
    backbone, image_size, spec
        The run's from-scratch backbone, image side and :class:`clkit.edge.images.ViTSpec`.
    learner_kwargs : dict
        The run's (protocol-filled) ``learner_kwargs``: which kind a learner is (RanPAC with its adapter).
    mode : {"exact", "sample"}

    Returns
    -------
    SetBudget

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> tb = SimpleNamespace(learners={"ewc": {"kind": "batched", "timed_s": 7200.0, "gpu_s": None,
    ...                                        "row_step": None, "row_forward": None, "epochs": (2, 2)}},
    ...                      levels=[15, 90, 90], budget=SimpleNamespace(device="cpu"), text=lambda: "")
    >>> b = set_budget(tb, dataset="fashion_mnist", num_classes=6, num_tasks=3)
    >>> [s.name for s in b.stages], b.units, round(b.seconds)
    (['ground truth', 'RS and EDGE estimates'], {'truth|ewc': 7200.0}, 7200)
    """
    from .bounds import CLASSIC_SPLITS
    from .images import learner_kind
    from .split import bounds_key, truth_key

    kwargs = learner_kwargs or {}
    on_gpu = "cuda" in str(truth.budget.device)
    stages = []
    # -- the ground truth, learner by learner
    units, parts, sources = {}, [], []
    for name, d in truth.learners.items():
        if d["gpu_s"] is not None and not on_gpu:
            secs, how = d["gpu_s"], "FLOPs"
            src = d["rate"][1] if d.get("rate") else GPU_ASSUMPTION
        else:
            secs, how, src = d["timed_s"], f"timed on {truth.budget.device}", f"steps timed on {truth.budget.device}"
        units[truth_key(name)] = float(secs)
        parts.append(f"{name} {format_duration(secs)} ({how}, {d['epochs'][0]} / {d['epochs'][1]} epochs in the first / "
                     "a later task)")
        if src not in sources:
            sources.append(src)
    stages.append(Stage("ground truth", sum(units.values()), "; ".join(parts), units, sources))
    # -- RS and EDGE
    if mode == "exact":
        stages.append(Stage("RS and EDGE estimates", 0.0, "every order they evaluate is in the exact truth: looked "
                                                          "up, nothing trained"))
    else:
        n_orders = 2 * (len(seeds) + 2 + int(edge_num_random))
        per_order = sum(units.values()) * int(num_tasks) / max(1, sum(truth.levels))
        stages.append(Stage("RS and EDGE estimates", n_orders * per_order,
                            f"a sampled truth trains their orders and S-ties on demand: about {n_orders} orders at "
                            f"{format_duration(per_order)} each, every learner (an order's tasks without the tree)",
                            sources=list(sources)))
    # -- Fig. 4
    if encoder_sizes:
        flops, unknown = 0.0, []
        for enc in encoder_sizes:
            f = text_encoder_flops(enc, num_classes)
            if f is None:
                unknown.append(enc)
            else:
                flops += f
        stages.append(Stage("Fig. 4 (CLIP text encoders)", flops / GPU_THROUGHPUT,
                            f"{len(encoder_sizes)} encoders x {num_classes} class names, {format_flops(flops)}; their "
                            "EDGE triplets are looked up in the truth; loading their weights is not counted"
                            + (f"; not priced (no open_clip architecture of that name): {', '.join(unknown)}"
                               if unknown else ""), sources=[GPU_ASSUMPTION]))
    # -- Fig. 5
    if bounds_datasets and bounds_learners:
        from ..budget import measured_assumption, measured_throughput

        D = classic_orders(len(seeds), edge_num_random)
        units5, parts5, src5, total = {}, [], [], 0.0
        base = {}
        for d in bounds_datasets:
            C = CLASSIC_SPLITS[d]["num_classes"]
            K = int(classic_num_tasks)
            M = C // K
            ntr = min(n_train or CLASSIC_ROWS[d][0], CLASSIC_ROWS[d][0])
            nte = min(n_test or CLASSIC_ROWS[d][1], CLASSIC_ROWS[d][1])
            vit = _vit_forward_flops(spec, C) if spec is not None else None
            feat_s = (C * (ntr + nte) * vit / GPU_THROUGHPUT) if vit else 0.0
            total += feat_s
            dparts = []
            for raw in bounds_learners:
                n = "naive" if raw == "finetune" else raw          # the strategy the image protocol trains
                info = truth.learners.get(n)
                key = bounds_key(d, raw)
                if n == "ncm" or info is None or (info["row_step"] is None and not info.get("step_s")):
                    units5[key] = feat_s
                    dparts.append(f"{n} not priced" if n != "ncm" else "ncm trains nothing")
                    continue
                if info["row_step"] is None:     # no FLOP count (a model the counter cannot trace): its timed steps
                    e0, e1 = info["epochs"]
                    steps = D * sum((e0 if t == 0 else e1) * math.ceil(M * ntr / info["batch_size"]) for t in range(K))
                    secs = steps * info["step_s"]
                    units5[key] = secs + feat_s
                    total += secs
                    dparts.append(f"{n} {format_duration(secs)} ({steps:,} steps at its step timed on "
                                  f"{truth.budget.device}; its evaluation not counted)")
                    src = f"steps timed on {truth.budget.device}"
                    if src not in src5:
                        src5.append(src)
                    continue
                step, fwd = info["row_step"], info["row_forward"]
                rate, src = (info["rate"] or (GPU_THROUGHPUT, GPU_ASSUMPTION))
                if learner_kind(n, kwargs.get(n)) == "scratch":
                    if dataset not in base:
                        base[dataset] = _scratch_row_flops(dataset, backbone, num_classes, image_size)[1]
                    net, row = _scratch_row_flops(d, backbone, C, image_size)
                    scale = row / base[dataset]
                    step, fwd = step * scale, fwd * scale
                    measured = measured_throughput(net)
                    rate, src = (measured, measured_assumption(net)) if measured else (GPU_THROUGHPUT, GPU_ASSUMPTION)
                e0, e1 = info["epochs"]
                flops = D * (sum((e0 if t == 0 else e1) * M * ntr * step + (t + 1) * M * nte * fwd for t in range(K))
                             + M * ntr * fwd * info.get("first_extra", 0.0))         # RanPAC's adapter stage
                secs = flops / rate
                units5[key] = secs + feat_s
                total += secs
                dparts.append(f"{n} {format_duration(secs)}")
                if src not in src5:
                    src5.append(src)
            parts5.append(f"{CLASSIC_SPLITS[d]['label']} ({C} classes in {K} tasks, {ntr} / {nte} images a class at "
                          f"most, {D} orders; features {format_duration(feat_s)}): " + ", ".join(dparts))
        if spec is not None and GPU_ASSUMPTION not in src5:
            src5.append(GPU_ASSUMPTION)
        stages.append(Stage("Fig. 5 (classic splits)", total, "; ".join(parts5), units5, src5))
    return SetBudget(truth, stages)
