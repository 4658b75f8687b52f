"""Producing the temporal accuracy matrix ``A(t, tau)``: learners trained period after period.

``accuracy_matrix`` trains one learner through the periods of a stream (with the backward
cells ``tau < t`` when asked) on the run's device; ``period_tasks`` moves a stream's periods
to that device once; ``majority_accuracy_matrix`` is the no-learning baseline;
``check_learner_settings`` validates the notebook's ``learner_kwargs``.

**Where the work runs.** Models are built on the CPU under their seed (the same initial
weights on every device) and moved by their strategy; the periods move once
(:func:`period_tasks`, pinned and non-blocking to CUDA), batch orders come from the
strategies' CPU generators, and a row of ``A`` is computed on the device and read back
once (:func:`clkit.device.to_host`), after the training on its period.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .params import LEARNERS

__all__ = ["PeriodTasks", "period_tasks", "accuracy_matrix", "learner_strategy", "build_learner", "accuracy_row",
           "majority_accuracy_matrix", "check_learner_settings", "SUPPLIED_KEYWORDS"]


# --------------------------------------------------------------------------- the periods on a device

@dataclass(frozen=True)
class PeriodTasks:
    """A stream's periods as :class:`clkit.strategies.Task` objects on one device.

    Attributes
    ----------
    train, test : tuple of Task, length num_periods
        Period t's training and test split (``task_id = t``), on ``device``; their host
        labels are kept (:meth:`~clkit.strategies.Task.labels_host`).
    num_classes : int
    input_shape : tuple
        Shape of one input, e.g. ``(8,)`` or ``(3, 32, 32)``.
    device : torch.device
    image_normalize : str or None
        ``None``: the inputs are the network's (float). Otherwise the inputs are uint8 images
        (``load_wild_time(dtype="uint8")``) and every network built on them converts each batch
        on the device with this normalisation (:mod:`clkit.temporal.image_input`).
    """

    train: tuple
    test: tuple
    num_classes: int
    input_shape: tuple
    device: torch.device
    image_normalize: str | None = None

    @property
    def num_periods(self) -> int:
        return len(self.train)

    def tasks(self, split: str = "train") -> list:
        """The periods of ``split`` (as :meth:`PeriodDataset.tasks`, already on :attr:`device`)."""
        from .._validate import check_choice

        return list(self.train if check_choice("split", split, ["train", "test"]) == "train" else self.test)


def period_tasks(data, device="cpu") -> PeriodTasks:
    """The periods of ``data`` on ``device``, moved once (a :class:`PeriodTasks` already there is returned as is).

    Parameters
    ----------
    data : clkit.data.temporal.PeriodDataset or PeriodTasks
    device : str, torch.device or clkit.device.RunDevice

    Examples
    --------
    >>> from clkit.data.temporal import make_drifting_gaussians
    >>> pt = period_tasks(make_drifting_gaussians(3, 10, seed=0), torch.device("meta"))
    >>> pt.num_periods, pt.train[0].x.device, pt.test[2].labels_host().shape, pt.input_shape
    (3, device(type='meta'), (5,), (8,))
    >>> period_tasks(pt, "meta") is pt
    True
    """
    from ..device import as_device

    device = as_device(device)
    if isinstance(data, PeriodTasks) and data.device == device:
        return data
    if isinstance(data, PeriodTasks):
        return PeriodTasks(tuple(t.to(device) for t in data.train), tuple(t.to(device) for t in data.test),
                           data.num_classes, data.input_shape, device, data.image_normalize)
    train, test = data.tasks("train"), data.tasks("test")
    meta = getattr(data, "meta", None) or {}
    raw = meta.get("dtype") == "uint8"
    return PeriodTasks(tuple(t.to(device) for t in train), tuple(t.to(device) for t in test),
                       int(data.num_classes), tuple(data.input_shape), device,
                       meta.get("normalize", "none") if raw else None)


# --------------------------------------------------------------------------- producing A(t, tau)

#: learner name -> (strategy name in clkit.strategies, trains one fresh model per period?)
_LEARNER_STRATEGY = {"erm": ("naive", True), "finetune": ("naive", False), "ewc": ("ewc", False),
                     "si": ("si", False), "agem": ("agem", False),
                     "coral": ("clkit.temporal.learners:CORAL", False),
                     "moco_sml": ("clkit.temporal.learners:MoCoSML", False)}


def learner_strategy(learner: str) -> tuple[str, bool]:
    """``(strategy name, fresh model per period?)`` of a learner of notebook 03.

    Examples
    --------
    >>> learner_strategy("erm"), learner_strategy("ewc"), learner_strategy("replay")
    (('naive', True), ('ewc', False), ('replay', False))
    >>> learner_strategy("coral")       # notebook 03's own learners (clkit.temporal.learners)
    ('clkit.temporal.learners:CORAL', False)
    """
    if learner not in LEARNERS:  # a clkit strategy name, entry point or "package.module:Class"
        __import__("clkit.plugins").plugins.resolve_strategy(learner, parameter="learner")
    return _LEARNER_STRATEGY.get(learner, (learner, False))


def build_learner(learner: str, in_features: int, num_classes: int, *, seed: int, hidden=(64,), lr: float = 1e-3,
                  epochs: int = 5, batch_size: int = 64, strategy_kwargs: dict | None = None, device="cpu",
                  precision: str = "fp32", backbone: str = "mlp", input_shape=None, backbone_weights=None,
                  image_normalize: str | None = None):
    """The strategy of ``learner`` around a fresh backbone, built on the CPU under ``seed`` and moved to ``device``.

    The model's initial weights depend on ``seed`` only (not on the device); the strategy
    (Adam, ``lr``, ``epochs``, ``batch_size``, ``precision``) draws its batch orders from a CPU
    generator seeded with ``seed``.

    Parameters
    ----------
    backbone : {"mlp", "yearbook_cnn", "densenet121"}
        ``"mlp"`` (default): :class:`clkit.models.MLP` with ``hidden`` layers over the
        ``in_features`` flattened inputs; the others: Wild-Time's image networks
        (:mod:`clkit.models.wildtime`) for inputs of ``input_shape`` ``(C, H, W)``.
    input_shape : tuple, optional
        One input's shape (needed by the image backbones; default ``(in_features,)``).
    backbone_weights : path-like, optional
        densenet121 only: a local ImageNet state-dict file (default: random initialisation).
    image_normalize : {None, "none", "imagenet"}
        ``None``: float inputs. Otherwise the inputs are uint8 images and the model converts
        each batch on its device (:func:`clkit.temporal.image_input.with_image_input`; same
        initial weights).

    Examples
    --------
    >>> s = build_learner("ewc", 8, 2, seed=0, hidden=(4,), device=torch.device("meta"))
    >>> type(s).__name__, next(s.model.parameters()).device
    ('EWC', device(type='meta'))
    >>> type(build_learner("coral", 3 * 32 * 32, 2, seed=0, backbone="yearbook_cnn",
    ...                    input_shape=(3, 32, 32)).model).__name__
    'YearbookCNN'
    """
    from .._seed import torch_seeded
    from ..models.mlp import MLP
    from ..models.wildtime import make_wildtime_backbone
    from ..strategies import make_strategy

    name, _ = learner_strategy(learner)
    kw = dict(optimizer="adam", lr=lr, epochs=epochs, batch_size=batch_size)
    kw.update(strategy_kwargs or {})
    with torch_seeded(seed):
        if backbone == "mlp":
            model = MLP(in_features, num_classes, hidden=tuple(hidden))
        else:
            model = make_wildtime_backbone(backbone, input_shape if input_shape is not None else (in_features,),
                                           num_classes, weights=backbone_weights)
    if image_normalize is not None:
        from .image_input import with_image_input

        model = with_image_input(model, image_normalize, channels=int(input_shape[0]))
    return make_strategy(name, model, seed=seed, device=device, precision=precision, **kw)


def _accuracy(strategy, task) -> torch.Tensor:
    """Accuracy of ``strategy`` on ``task`` as a 0-dim tensor on the device (NaN for an empty task)."""
    out = strategy.predict(task.x, task)
    if not len(task):
        return torch.full((), float("nan"), device=out.device)
    return (out.argmax(1) == task.y.to(out.device)).float().mean()


def accuracy_row(strategy, tests) -> np.ndarray:
    """Accuracies of ``strategy`` on each task of ``tests``, computed on the device and read once.

    The same numbers as ``[strategy.evaluate(t) for t in tests]`` (argmax accuracy of
    :meth:`~clkit.strategies.Strategy.predict`) with one read of the device instead of one per
    task; a strategy that overrides ``evaluate`` is asked task by task. NaN on ``meta``.

    Returns
    -------
    ndarray, shape (len(tests),), float64
    """
    from ..device import to_host
    from ..strategies.base import Strategy

    tests = list(tests)
    if not tests:
        return np.zeros(0)
    if type(strategy).evaluate is not Strategy.evaluate:
        return np.array([strategy.evaluate(t) for t in tests], dtype=float)
    return to_host(torch.stack([_accuracy(strategy, t) for t in tests])).astype(np.float64)


def accuracy_matrix(dataset, learner: str, *, epochs: int = 5, hidden=(64,), lr: float = 1e-3,
                    batch_size: int = 64, seed: int = 0, strategy_kwargs: dict | None = None,
                    num_threads: int | None = 1, progress: bool = False, backward: bool = False,
                    device=None, precision: str = "fp32", backbone: str = "mlp",
                    backbone_weights=None, train_update_iter: dict | None = None) -> np.ndarray:
    """Train ``learner`` period by period and fill A(t, tau) for tau >= t (and tau < t with ``backward``).

    Parameters
    ----------
    dataset : clkit.data.temporal.PeriodDataset or PeriodTasks
        The stream; a :class:`PeriodTasks` (from :func:`period_tasks`) is used where it is,
        so a run that trains many learners moves its periods once.
    learner : {"erm", "finetune", "ewc", "si", "agem", "coral", "moco_sml"} or a clkit strategy
        ``"erm"``: a fresh model trained on period t only (Wild-Time's per-period
        ERM; its diagonal is the oracle). The others train one model sequentially
        through the periods with the :mod:`clkit.strategies` of that name
        (``"finetune"`` = naive fine-tuning; ``"coral"`` and ``"moco_sml"``:
        :mod:`clkit.temporal.learners`), and row t is evaluated after period t.
    epochs, hidden, lr, batch_size : training settings (Adam, an MLP with ``hidden`` layers).
    backbone, backbone_weights :
        The model (:func:`build_learner`): ``"mlp"`` (default), ``"yearbook_cnn"`` or
        ``"densenet121"`` (Wild-Time's networks, for image periods).
    seed : int
        Seeds model initialisation and batch order (erm's model of period t: ``seed + 1000 t``).
    strategy_kwargs : dict, optional
        Extra strategy hyper-parameters (e.g. ``{"ewc_lambda": 10}``).
    num_threads : int or None
        Torch threads while training (default 1: these small models run fastest on one
        thread; results do not depend on it). ``None`` keeps torch's setting.
    backward : bool
        Also evaluate the past periods (tau < t) after training on t -- the backward view
        (:func:`backward_summary`), beyond the paper. The forward cells are the same either
        way (evaluation does not change the model); :func:`~clkit.temporal.metrics.forward_view` gives the paper's
        matrix back.
    device : str, torch.device or clkit.device.RunDevice, optional
        Where models train and rows are evaluated; default: the device of a
        :class:`PeriodTasks` ``dataset``, else the CPU.
    precision : {"fp32", "bf16", "fp16"}
        Autocast of the forward passes (:class:`clkit.device.Amp`).
    train_update_iter : dict, optional
        Wild-Time's iterations per period, ``{learner: iterations, "default": iterations}``:
        period t then trains ``ceil(iterations * batch_size / n_t)`` epochs
        (:func:`clkit.temporal.wildtime_settings.period_epochs`) instead of ``epochs``.

    Returns
    -------
    A : ndarray, shape (num_periods, num_periods)
        Test accuracies; NaN below the diagonal (not evaluated, as in the paper) unless
        ``backward``. Row t is read from the device once; all NaN on ``meta``.

    Examples
    --------
    >>> from clkit.data.temporal import make_drifting_gaussians
    >>> ds = make_drifting_gaussians(3, 40, seed=0)
    >>> A = accuracy_matrix(ds, "finetune", epochs=1, hidden=(8,))
    >>> A.shape, bool(np.isnan(A[1, 0])), bool((A[np.triu_indices(3)] >= 0).all())
    ((3, 3), True, True)
    """
    from .._seed import torch_threads

    _, fresh = learner_strategy(learner)
    if device is None:
        device = dataset.device if isinstance(dataset, PeriodTasks) else "cpu"
    tasks = period_tasks(dataset, device)
    T = tasks.num_periods
    in_features = int(np.prod(tasks.input_shape))

    def build(s):
        return build_learner(learner, in_features, tasks.num_classes, seed=s, hidden=hidden, lr=lr, epochs=epochs,
                             batch_size=batch_size, strategy_kwargs=strategy_kwargs, device=tasks.device,
                             precision=precision, backbone=backbone, input_shape=tasks.input_shape,
                             backbone_weights=backbone_weights, image_normalize=tasks.image_normalize)

    from .wildtime_settings import period_epochs

    per_period = period_epochs([len(t) for t in tasks.train], learner=learner, epochs=epochs,
                               batch_size=batch_size, train_update_iter=train_update_iter or {})
    A = np.full((T, T), np.nan)
    strategy = None
    periods = range(T)
    if progress:
        from ..progress import tqdm

        periods = tqdm(periods, desc=learner, leave=False)
    with torch_threads(num_threads):
        for t in periods:
            if fresh or strategy is None:
                strategy = build(seed + (1000 * t if fresh else 0))
            strategy.train_task(tasks.train[t], epochs=per_period[t])
            first = 0 if backward else t
            A[t, first:] = accuracy_row(strategy, tasks.test[first:])
    return A


def majority_accuracy_matrix(train_labels, test_labels) -> np.ndarray:
    """A(t, tau) of the no-learning baseline that predicts period t's majority class.

    The model "trained up to period t" is the constant predictor of the most frequent
    training label of period t (ties: the smallest label). It learns nothing about
    the inputs, so any learner's A(t, tau) should be read beside it: on an imbalanced
    stream (e.g. rain or no rain) it scores well above chance.

    Parameters
    ----------
    train_labels, test_labels : sequence of array_like, length num_periods
        Integer labels of each period's training and test split (NumPy arrays, lists, or
        tensors: it learns nothing from the inputs, so it runs on the host, on labels read
        with :func:`clkit.device.to_host`; pass ``task.labels_host()`` of tasks on a device).

    Returns
    -------
    A : ndarray, shape (num_periods, num_periods)
        Accuracy on period tau's test labels; NaN below the diagonal (tau < t).

    Examples
    --------
    >>> majority_accuracy_matrix([[0, 0, 1], [1, 1, 0]], [[0, 1], [1, 1]]).tolist()
    [[0.5, 0.0], [nan, 1.0]]
    """
    if len(train_labels) != len(test_labels) or len(train_labels) == 0:
        raise ValueError("train_labels and test_labels must be non-empty lists of the same "
                         f"length (one per period), got {len(train_labels)} and {len(test_labels)}")
    from ..device import to_host

    T = len(train_labels)
    majority = []
    for t, y in enumerate(train_labels):
        y = to_host(y).astype(int).ravel()
        if y.size == 0:
            raise ValueError(f"train_labels[{t}] is empty: every period needs training labels")
        majority.append(int(np.bincount(y - y.min()).argmax() + y.min()))
    A = np.full((T, T), np.nan)
    for tau, y in enumerate(test_labels):
        y = to_host(y).astype(int).ravel()
        if y.size == 0:
            continue
        for t in range(tau + 1):
            A[t, tau] = float(np.mean(y == majority[t]))
    return A


# --------------------------------------------------------------------------- per-learner settings

#: keywords notebook 03 supplies to every strategy itself (not user settings)
SUPPLIED_KEYWORDS = ("model", "loss", "optimizer", "lr", "batch_size", "seed", "epochs", "scenario", "device",
                     "precision")


def check_learner_settings(learner_kwargs, learners) -> dict:
    """Validate ``learner_kwargs`` against each learner's strategy; return every learner's settings.

    A learner's allowed keywords are those of its :mod:`clkit.strategies` class
    (``erm`` and ``finetune`` are ``naive``; ``coral`` and ``moco_sml`` the classes of
    :mod:`clkit.temporal.learners`) less :data:`SUPPLIED_KEYWORDS`.

    Returns
    -------
    dict
        ``{learner: {keyword: value}}`` for every learner (``{}`` where none is set).

    Examples
    --------
    >>> check_learner_settings({"si": {"si_lambda": 10.0}}, ["finetune", "si"])
    {'finetune': {}, 'si': {'si_lambda': 10.0}}
    >>> check_learner_settings({"coral": {"coral_lambda": 1.0}, "moco_sml": {"moco_queue": 256}},
    ...                        ["coral", "moco_sml"])
    {'coral': {'coral_lambda': 1.0}, 'moco_sml': {'moco_queue': 256}}
    >>> check_learner_settings({"ewc": {"lam": 1.0}}, ["ewc"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: learner_kwargs['ewc']: unknown keyword 'lam'; ewc accepts [...
    """
    from ..learner_kwargs import allowed_keywords, check_learner_kwargs, settings_for
    from ..plugins import resolve_strategy

    learners = list(learners)
    allowed = {m: allowed_keywords(resolve_strategy(_LEARNER_STRATEGY.get(m, (m, False))[0], parameter="learners"),
                                   exclude=SUPPLIED_KEYWORDS) for m in learners}
    checked = check_learner_kwargs(learner_kwargs, allowed, learners=learners)
    return {m: settings_for(m, None, checked) for m in learners}
