"""The curriculum paper's own numbers from Tables 3-8, to set beside a run's.

Tables 3-8 of Faber et al. (2024) give, per backbone (Wide-VGG9: Tables 3-4, EfficientNet-B1:
5-6, ResNet-34: 7-8) and order (M2I, I2M), each strategy's ACC, BWT, FWT and ACC rank in the
class- and task-incremental settings. In the text the kit has (``papers/curriculum.txt``, a
plain-text extraction of the published article) the table *bodies* are images and did not
survive; what survives are the values the text quotes:

- Sect. 5 (RQ2) quotes ACC under both orders for 25 (backbone, strategy, setting) cells, as
  "from <I2M> to <M2I>" (the direct curriculum is the higher one except for LwF with
  EfficientNet, "where the model's performance is higher in the inverse curriculum setting
  (I2M) is LwF (from 0.203 to 0.165 ...)", which fixes the direction): :data:`PAPER_ACC`;
- Sect. 4.2 quotes some ACC ranks (1 = best of the run's strategies): :data:`PAPER_RANK`, only
  those whose order and setting the sentence fixes. Sect. 4.2.1's "AGEM is very weak in the
  class-incremental setting (ranked 12 and 10, respectively), but quite robust in the
  task-incremental setting (ranked 6 and 5)" is read as (M2I, I2M), the tables' two orders.

Units: ACC is a fraction in [0, 1], three decimals as printed. Spread: the paper reports
"average performance" with no standard deviation or number of runs in the surviving text, so
no spread of the paper's can be shown. :func:`beside_paper` therefore marks a cell by this
run's own seed spread instead: at paper scale a cell is marked when the paper's value lies
outside ``mean +- 2 sd`` of this run's per-seed values (about a 95 % band for one run of the
same experiment), and left unmarked with fewer than two seeds. At teaching scale (anything but
the paper's datasets, sizes, epochs and backbone) the comparison is not meaningful and the
paper's values are shown for reference only.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .._validate import check_choice

__all__ = ["PAPER_BACKBONES", "PAPER_ACC", "PAPER_RANK", "TABLE_NUMBERS", "paper_acc", "is_paper_scale",
           "beside_paper"]

#: clkit backbone -> the paper's name for it (the three backbones of Tables 3-8)
PAPER_BACKBONES = {"wide_vgg9_bn": "Wide-VGG9", "efficientnet_b1": "EfficientNet", "resnet34_bn": "ResNet"}
#: clkit backbone -> the paper's table numbers (M2I, I2M)
TABLE_NUMBERS = {"wide_vgg9_bn": (3, 4), "efficientnet_b1": (5, 6), "resnet34_bn": (7, 8)}

# Sect. 5, as printed: (backbone, strategy, setting) -> (I2M, M2I)
_FROM_TO = {
    ("wide_vgg9_bn", "replay", "class"): (0.550, 0.755), ("wide_vgg9_bn", "replay", "task"): (0.571, 0.730),
    ("wide_vgg9_bn", "generative_replay", "class"): (0.351, 0.558),
    ("wide_vgg9_bn", "generative_replay", "task"): (0.423, 0.616),
    ("wide_vgg9_bn", "gem", "class"): (0.297, 0.572), ("wide_vgg9_bn", "gem", "task"): (0.269, 0.613),
    ("wide_vgg9_bn", "lwf", "class"): (0.216, 0.222), ("wide_vgg9_bn", "lwf", "task"): (0.262, 0.349),
    ("wide_vgg9_bn", "ewc", "class"): (0.190, 0.220), ("wide_vgg9_bn", "ewc", "task"): (0.340, 0.395),
    ("efficientnet_b1", "replay", "class"): (0.417, 0.655), ("efficientnet_b1", "replay", "task"): (0.438, 0.605),
    ("efficientnet_b1", "generative_replay", "class"): (0.313, 0.517),
    ("efficientnet_b1", "generative_replay", "task"): (0.390, 0.551),
    ("efficientnet_b1", "cumulative", "class"): (0.606, 0.834),
    ("efficientnet_b1", "cumulative", "task"): (0.596, 0.656),
    ("efficientnet_b1", "cwr", "class"): (0.053, 0.326), ("efficientnet_b1", "cwr", "task"): (0.171, 0.367),
    ("efficientnet_b1", "gem", "class"): (0.218, 0.312), ("efficientnet_b1", "gem", "task"): (0.276, 0.420),
    ("efficientnet_b1", "lwf", "class"): (0.203, 0.165), ("efficientnet_b1", "lwf", "task"): (0.241, 0.240),
    ("resnet34_bn", "cumulative", "class"): (0.614, 0.788), ("resnet34_bn", "cwr", "class"): (0.102, 0.331),
    ("resnet34_bn", "generative_replay", "class"): (0.313, 0.447), ("resnet34_bn", "gdumb", "class"): (0.204, 0.357),
    ("resnet34_bn", "replay", "class"): (0.419, 0.630),
    ("resnet34_bn", "agem", "task"): (0.375, 0.464), ("resnet34_bn", "cumulative", "task"): (0.562, 0.750),
    ("resnet34_bn", "cwr", "task"): (0.228, 0.403), ("resnet34_bn", "generative_replay", "task"): (0.424, 0.632),
    ("resnet34_bn", "gdumb", "task"): (0.180, 0.294), ("resnet34_bn", "replay", "task"): (0.443, 0.612),
}

#: ``{backbone: {order: {setting: {strategy: ACC}}}}``, settings ``"class"`` and ``"task"``
PAPER_ACC: dict = {}
for (_b, _k, _s), (_i2m, _m2i) in _FROM_TO.items():
    for _o, _v in (("M2I", _m2i), ("I2M", _i2m)):
        PAPER_ACC.setdefault(_b, {}).setdefault(_o, {}).setdefault(_s, {})[_k] = _v

#: ``{backbone: {order: {setting: {strategy: rank}}}}``: the ranks Sect. 4.2 fixes
PAPER_RANK = {
    "wide_vgg9_bn": {"M2I": {"class": {"agem": 12, "cwr": 5}, "task": {"agem": 6}},
                     "I2M": {"class": {"agem": 10}, "task": {"agem": 5}}},
    "efficientnet_b1": {"M2I": {"class": {"agem": 10, "gem": 5}, "task": {"agem": 7, "gem": 5}},
                        "I2M": {"class": {"agem": 10, "si": 8, "mas": 9, "ewc": 7},
                                "task": {"agem": 8, "si": 6, "mas": 9, "ewc": 7}}},
    "resnet34_bn": {"M2I": {"class": {"agem": 7, "naive": 11, "ewc": 10}, "task": {"agem": 6, "naive": 8, "ewc": 9}},
                    "I2M": {"class": {"naive": 11, "cwr": 12, "ewc": 8, "mas": 7, "lwf": 10, "gdumb": 6},
                            "task": {"naive": 9, "cwr": 11, "ewc": 8, "mas": 7, "lwf": 12, "gdumb": 13}}},
}

_SETTINGS = {"class": "class-incremental", "task": "task-incremental"}


def paper_acc(backbone: str, order: str, scenario: str, strategy: str) -> float:
    """The paper's ACC for one cell of Tables 3-8, NaN where its text quotes none.

    Examples
    --------
    >>> paper_acc("wide_vgg9_bn", "M2I", "class", "replay"), paper_acc("wide_vgg9_bn", "I2M", "class", "replay")
    (0.755, 0.55)
    >>> math.isnan(paper_acc("wide_vgg9_bn", "M2I", "class", "naive"))
    True
    """
    return PAPER_ACC.get(backbone, {}).get(order, {}).get(scenario, {}).get(strategy, math.nan)


def is_paper_scale(params: dict) -> bool:
    """Whether a run's parameters are the paper's experiment (so its numbers are comparable).

    The paper's six datasets, 500 + 500 images per class at 64 px, 3 channels, 50 epochs, one of
    its three backbones (:data:`PAPER_BACKBONES`), SGD lr 0.001 momentum 0.9, batch 128, memory
    200, and not a rehearsal.

    Examples
    --------
    >>> p = dict(datasets=["mnist", "omniglot", "fashion_mnist", "svhn", "cifar10", "tinyimagenet"],
    ...          backbone="wide_vgg9_bn", per_class_train=500, per_class_test=500, image_size=64, channels=3,
    ...          epochs=50, optimizer="sgd", lr=0.001, momentum=0.9, batch_size=128, memory_size=200)
    >>> is_paper_scale(p), is_paper_scale(p | {"epochs": 3}), is_paper_scale(p | {"rehearse": True})
    (True, False, False)
    """
    from .benchmark import PAPER_ORDER

    want = dict(per_class_train=500, per_class_test=500, image_size=64, channels=3, epochs=50, optimizer="sgd",
                lr=0.001, momentum=0.9, batch_size=128, memory_size=200)
    return (sorted(params.get("datasets", [])) == sorted(PAPER_ORDER) and params.get("backbone") in PAPER_BACKBONES
            and all(params.get(k) == v for k, v in want.items()) and not params.get("rehearse", False))


def beside_paper(results: dict, scenario: str, backbone: str, *, paper_scale: bool) -> tuple[dict, str]:
    """A run's ACC per strategy and order beside the paper's (Tables 3-8), and a note on how to read it.

    Parameters
    ----------
    results : dict
        A notebook 04 record (``results.json``'s ``"results"``): its ``"metrics"`` (order ->
        strategy -> ``ACC``, ``rank``) and, for the spread, ``"metrics_per_seed"`` (records with
        ``order``, ``strategy``, ``ACC``).
    scenario : {"class", "task"}
    backbone : str
        The run's backbone; one of :data:`PAPER_BACKBONES` has paper numbers, any other gets
        the note that the paper has no table for it.
    paper_scale : bool
        Whether the run is the paper's experiment (:func:`is_paper_scale`): only then are cells
        marked.

    Returns
    -------
    tables : dict
        ``{order: DataFrame}``, rows the run's strategies, columns ``ACC`` (this run's seed
        mean), ``sd`` (over seeds), ``paper ACC``, ``rank``, ``paper rank`` and ``outside``
        (``"yes"`` / ``"no"`` at paper scale where the paper quotes a value and the run has at
        least two seeds, else ``""``).
    note : str
        What the comparison means at this scale.

    Examples
    --------
    >>> res = {"metrics": {"M2I": {"replay": {"ACC": 0.70, "rank": 1}, "naive": {"ACC": 0.2, "rank": 2}}},
    ...        "metrics_per_seed": [{"order": "M2I", "strategy": "replay", "ACC": a} for a in (0.69, 0.70, 0.71)]}
    >>> t, note = beside_paper(res, "class", "wide_vgg9_bn", paper_scale=True)
    >>> row = t["M2I"].loc["replay"]
    >>> float(row["ACC"]), float(row["paper ACC"]), row["outside"]
    (0.7, 0.755, 'yes')
    >>> t, note = beside_paper(res, "class", "wide_vgg9_bn", paper_scale=False)
    >>> t["M2I"].loc["replay", "outside"], note.startswith("Teaching scale")
    ('', True)
    """
    scenario = check_choice("scenario", scenario, list(_SETTINGS))
    per_seed = pd.DataFrame(results.get("metrics_per_seed") or [])
    tables = {}
    for order, rows in results["metrics"].items():
        out = []
        for k, m in rows.items():
            acc = float(m.get("ACC", math.nan))
            vals = (per_seed.loc[(per_seed["order"] == order) & (per_seed["strategy"] == k), "ACC"].to_numpy(float)
                    if len(per_seed) else np.array([]))
            sd = float(np.std(vals, ddof=1)) if len(vals) >= 2 else math.nan
            paper = paper_acc(backbone, order, scenario, k)
            rank = PAPER_RANK.get(backbone, {}).get(order, {}).get(scenario, {}).get(k)
            outside = ""
            if paper_scale and not math.isnan(paper) and not math.isnan(sd):
                outside = "yes" if abs(paper - acc) > 2 * sd else "no"
            out.append({"strategy": k, "ACC": acc, "sd": sd, "paper ACC": paper, "rank": m.get("rank", math.nan),
                        "paper rank": math.nan if rank is None else rank, "outside": outside})
        tables[order] = pd.DataFrame(out).set_index("strategy")
    if backbone not in PAPER_BACKBONES:
        note = (f"The paper has no table for backbone {backbone!r} (its Tables 3-8: "
                f"{', '.join(f'{v} ({k})' for k, v in PAPER_BACKBONES.items())}); no paper values are shown.")
    elif not paper_scale:
        a, b = TABLE_NUMBERS[backbone]
        note = (f"Teaching scale: this run is not the paper's experiment (datasets, sizes, epochs or optimiser "
                f"differ), so the comparison with the paper's Tables {a}-{b} ({PAPER_BACKBONES[backbone]}, "
                f"{_SETTINGS[scenario]}) is not meaningful; the paper's values are shown for reference only.")
    else:
        a, b = TABLE_NUMBERS[backbone]
        note = (f"Paper scale: beside the paper's Tables {a}-{b} ({PAPER_BACKBONES[backbone]}, {_SETTINGS[scenario]}). "
                f"The paper reports no spread, so `outside` says whether its value lies outside this run's mean "
                f"+- 2 sd over seeds; NaN where the paper's text quotes no value (its table bodies are images, "
                f"not in the text).")
    return tables, note
