"""Wild-Time's training settings per dataset, read from its released code, and their translation to clkit.

The paper (Sect. 5.2) re-ran "the official Wild-Time implementation". Its settings come from
Wild-Time's scripts and ``main.py`` at commit ``1875f1e996fcd2058619cd8162e1ac532d04e0b5``
(github.com/huaxiuyao/Wild-Time, 2022-07-20), the eval-stream runs (``scripts/eval-stream/*.sh``,
``--eval_next_timesteps``):

========  ==========================================================================================
FMoW      ``networks/fmow.py``: ImageNet-pretrained DenseNet-121 (``densenet121(pretrained=True)``),
          224x224 RGB (``data/fmow/data_generator.py``: ``resolution = 224``, ImageNet
          ``Normalize``); ``main.py``: Adam with ``amsgrad=True``, ``StepLR(step_size=1,
          gamma=0.96)``; ``scripts/eval-stream/fmow.sh``: ``--mini_batch_size=64 --lr=1e-4
          --weight_decay=0.0``, ``--train_update_iter=3000`` for ERM and CORAL, ``500`` for FT, EWC,
          SI and A-GEM, ``--eval_next_timesteps=6``
Yearbook  ``networks/yearbook.py``: four conv blocks of 32 channels, 32x32 inputs; ``main.py``: Adam;
          ``scripts/eval-stream/yearbook.sh``: ``--mini_batch_size=32 --lr=0.001``,
          ``--train_update_iter=100`` for every method, ``--eval_next_timesteps=10``
========  ==========================================================================================

Wild-Time counts training in **iterations per time step** (``train_update_iter`` mini-batches
drawn with replacement), clkit's strategies in epochs. :func:`epochs_for_iterations` converts:
a period of ``n_t`` training images gets ``ceil(iterations * batch_size / n_t)`` epochs -- at
least as many examples seen as Wild-Time's iterations, each image once per epoch (without
replacement: clkit's choice, documented). MoCo+SML is not in that commit's scripts; it gets
the setting of the sequential learners (FT's). Adam's ``amsgrad`` and FMoW's per-step
``StepLR`` are not reproduced (clkit's strategies use plain Adam at a fixed rate): the
``paper`` sets' headers say so.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_choice, check_int

__all__ = ["WILD_TIME_COMMIT", "WILD_TIME_SETTINGS", "iterations_for", "epochs_for_iterations", "period_epochs",
           "describe"]

WILD_TIME_COMMIT = "1875f1e996fcd2058619cd8162e1ac532d04e0b5"

#: dataset -> Wild-Time's settings (files named above, at :data:`WILD_TIME_COMMIT`)
WILD_TIME_SETTINGS = {
    "fmow": {"backbone": "densenet121", "pretrained": True, "image_size": 224, "normalize": "imagenet",
             "batch_size": 64, "lr": 1e-4, "weight_decay": 0.0, "eval_next_timesteps": 6,
             "train_update_iter": {"erm": 3000, "coral": 3000, "default": 500},
             "source": f"scripts/eval-stream/fmow.sh, networks/fmow.py, main.py @ {WILD_TIME_COMMIT[:7]}"},
    "yearbook": {"backbone": "yearbook_cnn", "pretrained": False, "image_size": 32, "normalize": "none",
                 "batch_size": 32, "lr": 1e-3, "weight_decay": 0.0, "eval_next_timesteps": 10,
                 "train_update_iter": {"default": 100},
                 "source": f"scripts/eval-stream/yearbook.sh, networks/yearbook.py, main.py @ {WILD_TIME_COMMIT[:7]}"},
}


def iterations_for(train_update_iter: dict, learner: str) -> int:
    """A learner's iterations per period from ``{learner: iterations, "default": iterations}`` (0: none given).

    Examples
    --------
    >>> it = WILD_TIME_SETTINGS["fmow"]["train_update_iter"]
    >>> iterations_for(it, "erm"), iterations_for(it, "finetune"), iterations_for({}, "si")
    (3000, 500, 0)
    """
    if not isinstance(train_update_iter, dict):
        raise TypeError(f"train_update_iter must be a dict {{learner: iterations}}, got {train_update_iter!r}")
    for key, value in train_update_iter.items():
        check_int(f"train_update_iter[{key!r}]", value, low=1)
    return int(train_update_iter.get(learner, train_update_iter.get("default", 0)))


def epochs_for_iterations(iterations: int, batch_size: int, n_train: int) -> int:
    """Whole epochs over ``n_train`` examples that see at least ``iterations * batch_size`` of them.

    ``ceil(iterations * batch_size / n_train)``, at least 1 (an empty period: 1).

    Examples
    --------
    >>> epochs_for_iterations(500, 64, 8000), epochs_for_iterations(500, 64, 7999), epochs_for_iterations(100, 32, 5000)
    (4, 5, 1)
    """
    iterations = check_int("iterations", iterations, low=1)
    batch_size = check_int("batch_size", batch_size, low=1)
    n_train = check_int("n_train", n_train, low=0)
    return max(1, math.ceil(iterations * batch_size / n_train)) if n_train else 1


def period_epochs(train_sizes, *, learner: str, epochs: int, batch_size: int, train_update_iter: dict) -> list:
    """Epochs of each period for ``learner``: ``epochs`` everywhere, or converted from Wild-Time's iterations.

    Parameters
    ----------
    train_sizes : sequence of int, length num_periods
        Training examples per period.
    learner : str
    epochs : int
        Used where ``train_update_iter`` gives the learner no iterations.
    batch_size : int
    train_update_iter : dict
        ``{learner: iterations per period, "default": ...}``; ``{}``: every period ``epochs``.

    Returns
    -------
    list of int, length num_periods

    Examples
    --------
    >>> period_epochs([1000, 64000], learner="erm", epochs=2, batch_size=64,
    ...               train_update_iter={"erm": 3000, "default": 500})
    [192, 3]
    >>> period_epochs([1000, 64000], learner="si", epochs=2, batch_size=64, train_update_iter={})
    [2, 2]
    """
    epochs = check_int("epochs", epochs, low=1)
    iters = iterations_for(train_update_iter, learner)
    sizes = [int(n) for n in np.asarray(train_sizes).ravel()]
    if not iters:
        return [epochs] * len(sizes)
    return [epochs_for_iterations(iters, batch_size, n) for n in sizes]


def describe(dataset: str) -> str:
    """One line naming Wild-Time's setting of ``dataset`` and where it was read.

    Examples
    --------
    >>> describe("yearbook")  # doctest: +ELLIPSIS
    "Wild-Time's Yearbook setting: yearbook_cnn, 32 px, batch 32, Adam lr 0.001, iterations per period 100 for every learner ..."
    """
    s = WILD_TIME_SETTINGS[check_choice("dataset", dataset, list(WILD_TIME_SETTINGS))]
    its = s["train_update_iter"]
    named = [f"{v} for {k}" for k, v in its.items() if k != "default"]
    it = ", ".join(named + [f"{its['default']} for {'the others' if named else 'every learner'}"])
    label = {"fmow": "FMoW", "yearbook": "Yearbook"}[dataset]
    return (f"Wild-Time's {label} setting: {s['backbone']}{' (ImageNet-pretrained)' if s['pretrained'] else ''}, "
            f"{s['image_size']} px, batch {s['batch_size']}, Adam lr {s['lr']:g}, iterations per period {it} "
            f"({s['source']})")
