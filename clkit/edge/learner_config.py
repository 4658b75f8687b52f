"""Configuration of notebook 02's class-incremental learners: :class:`LearnerConfig`, the learners' keywords,
initial weights, minibatch orders and PyCIL's per-task schedule for any strategy.

Split out of :mod:`clkit.edge.learners` (which re-exports every name here): the settings the batched
learners (:mod:`clkit.edge.batched`) and the sequential strategies' driver both read.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from .._seed import torch_seeded
from .._validate import check_choice, check_int, check_real

__all__ = ["LEARNERS", "LEARNER_KEYWORDS", "SCHEDULE_KEYWORDS", "LearnerConfig", "split_schedule",
           "scheduled_train_task", "learner_config", "init_params", "batch_order"]

LEARNERS = ("finetune", "ewc", "lwf", "icarl", "ncm")
#: the schedule fields of :class:`LearnerConfig` (a strategy's ``learner_kwargs`` may set them too)
SCHEDULE_KEYWORDS = ("init_epochs", "init_lr", "init_milestones", "milestones", "lr_decay", "weight_decay",
                     "init_weight_decay", "reset_optimizer")
_OPTIM = ("hidden", "epochs", "batch_size", "lr", "momentum") + SCHEDULE_KEYWORDS
#: the keywords of :class:`LearnerConfig` each built-in learner uses (its ``learner_kwargs``)
LEARNER_KEYWORDS = {
    "finetune": _OPTIM,
    "ewc": _OPTIM + ("ewc_lambda",),
    "lwf": _OPTIM + ("lwf_lambda", "temperature"),
    "icarl": _OPTIM + ("kd_lambda", "temperature", "memory_per_class", "icarl_classifier"),
    "ncm": (),
}
_CPU = torch.device("cpu")


@dataclass(frozen=True)
class LearnerConfig:
    """Hyper-parameters of the batched learners (and the optimiser of plugin strategies).

    Attributes
    ----------
    hidden : int
        Width of the MLP's hidden layer.
    epochs : int
        Passes over each task's training data.
    batch_size : int
    lr : float
        SGD learning rate.
    momentum : float
    ewc_lambda : float
        EWC penalty weight.
    lwf_lambda : float
        LwF distillation weight (PyCIL's ``lamda = 3``).
    kd_lambda : float
        iCaRL distillation weight (PyCIL adds the KD term with weight 1).
    temperature : float
        Distillation temperature ``T``.
    memory_per_class : int
        iCaRL exemplars per class.
    icarl_classifier : {"nme", "head"}
        How the batched iCaRL predicts: the nearest mean of exemplars (the paper's iCaRL) or the
        head's logits over the seen classes (what PyCIL's trainer reports, its "CNN" accuracy).
        Its loss is PyCIL's either way (cross-entropy plus ``kd_lambda`` x KD at ``temperature``).

    **Schedule** (the defaults are one constant rate, the same ``epochs`` every task and one
    optimizer for the whole sequence; PyCIL's ``_init_train`` / ``_update_representation`` are
    ``init_epochs=200, init_milestones=(60, 120, 170), init_weight_decay=5e-4`` for the first
    task and ``milestones``, ``lr_decay=0.1``, ``weight_decay=2e-4``, a new SGD each task after;
    :mod:`clkit.edge.protocol` holds both settings). Strategies (:func:`train_strategy_sequences`)
    take these from their ``learner_kwargs`` (:data:`SCHEDULE_KEYWORDS`), except ``weight_decay``,
    which is their own constructor keyword (the later tasks' decay there):

    init_epochs : int, optional
        Epochs of the first task (``None``: ``epochs``).
    init_lr : float, optional
        Learning rate of the first task (``None``: ``lr``; a strategy: its own ``lr``).
    init_milestones, milestones : tuple of int
        Epochs (0-based, strictly increasing) from which the rate is multiplied by one more
        ``lr_decay`` -- ``torch.optim.lr_scheduler.MultiStepLR`` stepped once per epoch -- in the
        first task and in every later task.
    lr_decay : float
        The factor of each milestone (PyCIL's ``lrate_decay`` / ``init_lr_decay``).
    weight_decay : float
        SGD weight decay of the batched learners (``p`` added to the gradient times it, as
        ``torch.optim.SGD`` does) in the tasks after the first.
    init_weight_decay : float, optional
        Weight decay of the first task (``None``: the later tasks').
    reset_optimizer : bool
        A new optimizer at the start of every task (momentum buffers back to zero), as PyCIL
        builds one in each ``_train``; ``False`` keeps one optimizer (and its momentum) throughout.

    Examples
    --------
    >>> c = LearnerConfig(lr=0.1, epochs=170, init_epochs=200, init_milestones=[60, 120, 170],
    ...                   milestones=[80, 120], weight_decay=2e-4, init_weight_decay=5e-4)
    >>> c.task_epochs(0), c.task_epochs(1), c.scheduled
    (200, 170, True)
    >>> [round(c.task_lr(0, e), 6) for e in (0, 59, 60, 120, 170)]
    [0.1, 0.1, 0.01, 0.001, 0.0001]
    >>> [round(c.task_lr(2, e), 6) for e in (79, 80, 169)], c.task_weight_decay(0), c.task_weight_decay(1)
    ([0.1, 0.01, 0.001], 0.0005, 0.0002)
    >>> LearnerConfig().scheduled
    False
    """

    hidden: int = 64
    epochs: int = 3
    batch_size: int = 32
    lr: float = 0.05
    momentum: float = 0.9
    ewc_lambda: float = 1000.0
    lwf_lambda: float = 3.0
    kd_lambda: float = 1.0
    temperature: float = 2.0
    memory_per_class: int = 20
    icarl_classifier: str = "nme"
    init_epochs: int | None = None
    init_lr: float | None = None
    init_milestones: tuple = ()
    milestones: tuple = ()
    lr_decay: float = 0.1
    weight_decay: float = 0.0
    init_weight_decay: float | None = None
    reset_optimizer: bool = False

    def __post_init__(self):
        check_int("hidden", self.hidden, low=1)
        check_int("epochs", self.epochs, low=1)
        check_int("batch_size", self.batch_size, low=1)
        check_real("lr", self.lr, low=0, low_open=True)
        check_real("momentum", self.momentum, low=0, high=1, high_open=True)
        check_real("ewc_lambda", self.ewc_lambda, low=0)
        check_real("lwf_lambda", self.lwf_lambda, low=0)
        check_real("kd_lambda", self.kd_lambda, low=0)
        check_real("temperature", self.temperature, low=0, low_open=True)
        check_int("memory_per_class", self.memory_per_class, low=1)
        check_choice("icarl_classifier", self.icarl_classifier, ["nme", "head"])
        if self.init_epochs is not None:
            check_int("init_epochs", self.init_epochs, low=1)
        if self.init_lr is not None:
            check_real("init_lr", self.init_lr, low=0, low_open=True)
        for name in ("init_milestones", "milestones"):
            object.__setattr__(self, name, _milestones(name, getattr(self, name)))
        check_real("lr_decay", self.lr_decay, low=0, low_open=True)
        check_real("weight_decay", self.weight_decay, low=0)
        if self.init_weight_decay is not None:
            check_real("init_weight_decay", self.init_weight_decay, low=0)
        if not isinstance(self.reset_optimizer, bool):
            raise TypeError(f"reset_optimizer must be a bool (true: a new optimizer every task), "
                            f"got {self.reset_optimizer!r}")

    @property
    def scheduled(self) -> bool:
        """Whether any schedule field differs from the constant default (strategies then train task by task
        under :meth:`task_lr`; otherwise exactly as before the schedule existed)."""
        return (self.init_epochs is not None or self.init_lr is not None or bool(self.init_milestones)
                or bool(self.milestones) or self.init_weight_decay is not None or self.reset_optimizer)

    def task_epochs(self, task: int, base: int | None = None) -> int:
        """Epochs of task ``task`` (0-based): ``init_epochs`` for the first where set, else ``base`` or ``epochs``."""
        if task == 0 and self.init_epochs is not None:
            return self.init_epochs
        return self.epochs if base is None else base

    def task_lr(self, task: int, epoch: int, base: float | None = None) -> float:
        """Learning rate of epoch ``epoch`` (0-based) of task ``task``: the task's initial rate times
        ``lr_decay`` to the number of its milestones ``<= epoch`` (MultiStepLR stepped after each epoch)."""
        import bisect

        first = task == 0
        lr0 = self.init_lr if first and self.init_lr is not None else (self.lr if base is None else base)
        ms = self.init_milestones if first else self.milestones
        return lr0 * self.lr_decay ** bisect.bisect_right(ms, epoch)

    def task_weight_decay(self, task: int, base: float | None = None) -> float:
        """Weight decay of task ``task``: ``init_weight_decay`` for the first where set, else ``base`` or
        ``weight_decay``."""
        if task == 0 and self.init_weight_decay is not None:
            return self.init_weight_decay
        return self.weight_decay if base is None else base


def _milestones(name: str, value) -> tuple:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list of epochs (0-based, increasing), e.g. [60, 120, 170], got {value!r}")
    out = tuple(check_int(name, v, low=1) for v in value)
    if any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError(f"{name} must be strictly increasing, got {list(out)}")
    return out


def learner_config(learner: str, config: LearnerConfig, kwargs: dict | None = None) -> LearnerConfig:
    """``config`` with one built-in learner's settings (its ``learner_kwargs`` entry) applied.

    Raises ``ValueError`` naming the learner and its allowed keywords for any other key.

    Examples
    --------
    >>> learner_config("ewc", LearnerConfig(), {"ewc_lambda": 10.0}).ewc_lambda
    10.0
    >>> learner_config("finetune", LearnerConfig(), {"ewc_lambda": 10.0})
    Traceback (most recent call last):
    ...
    ValueError: learner_kwargs['finetune']: unknown keyword 'ewc_lambda'; finetune accepts ['batch_size', 'epochs', 'hidden', 'init_epochs', 'init_lr', 'init_milestones', 'init_weight_decay', 'lr', 'lr_decay', 'milestones', 'momentum', 'reset_optimizer', 'weight_decay']
    """
    check_choice("learner", learner, LEARNERS)
    kwargs = dict(kwargs or {})
    bad = [k for k in kwargs if k not in LEARNER_KEYWORDS[learner]]
    if bad:
        raise ValueError(f"learner_kwargs[{learner!r}]: unknown keyword {bad[0]!r}; {learner} accepts "
                         f"{sorted(LEARNER_KEYWORDS[learner])}")
    return dataclasses.replace(config, **kwargs) if kwargs else config


def init_params(in_features: int, hidden: int, num_classes: int, seed: int):
    """Initial MLP weights (PyTorch's ``nn.Linear`` default init under ``seed``).

    Returns
    -------
    tuple of tensors ``(W1 (D, H), b1 (H,), W2 (H, C), b2 (C,))``; ``x @ W1 + b1``.

    Examples
    --------
    >>> [tuple(p.shape) for p in init_params(4, 3, 2, seed=0)]
    [(4, 3), (3,), (3, 2), (2,)]
    """
    with torch_seeded(seed):
        l1 = torch.nn.Linear(in_features, hidden)
        l2 = torch.nn.Linear(hidden, num_classes)
    return (l1.weight.detach().T.contiguous(), l1.bias.detach().clone(),
            l2.weight.detach().T.contiguous(), l2.bias.detach().clone())


def batch_order(seed: int, code: int, task: int, epoch: int, n: int) -> torch.Tensor:
    """Minibatch order of one prefix's task data for one epoch.

    Depends only on ``(seed, prefix, task, epoch)`` (``code``: :func:`prefix_code` of the
    tasks up to this one), so a sequence is trained on the same batches whether it runs
    alone, with others, or shares its prefix.

    Examples
    --------
    >>> bool((batch_order(0, 5, 1, 0, 10) == batch_order(0, 5, 1, 0, 10)).all())
    True
    """
    g = torch.Generator().manual_seed((seed * 1_000_003 + code * 7919 + task * 101 + epoch) % (2**63 - 1))
    return torch.randperm(n, generator=g)



def split_schedule(config: LearnerConfig, strategy_kwargs: dict | None, learner=None) -> tuple:
    """``(config, kwargs)``: a strategy's ``learner_kwargs`` split into the schedule fields of ``config``
    (:data:`SCHEDULE_KEYWORDS` but ``weight_decay``, the strategy's own keyword) and its constructor's keywords.

    A keyword that ``learner`` (a Strategy class)'s constructor names itself stays with the strategy: a
    method that schedules its own stages (MEMO's ``init_epochs`` / ``milestones``, FOSTER's
    ``init_epochs``) gets its values, and the driver's schedule stays off for it.

    Examples
    --------
    >>> cfg, kw = split_schedule(LearnerConfig(), {"init_epochs": 200, "milestones": [80, 120], "lr": 0.1})
    >>> cfg.init_epochs, cfg.milestones, kw
    (200, (80, 120), {'lr': 0.1})
    >>> from clkit.strategies.memo import MEMO
    >>> cfg, kw = split_schedule(LearnerConfig(), {"init_epochs": 200, "milestones": [80, 120]}, MEMO)
    >>> cfg.scheduled, kw
    (False, {'init_epochs': 200, 'milestones': [80, 120]})
    """
    import inspect

    kw = dict(strategy_kwargs or {})
    own = set(inspect.signature(learner.__init__).parameters) if isinstance(learner, type) else set()
    sched = {k: kw.pop(k) for k in SCHEDULE_KEYWORDS if k in kw and k != "weight_decay" and k not in own}
    return (dataclasses.replace(config, **sched) if sched else config), kw



def scheduled_train_task(strategy, task, t: int, config: LearnerConfig):
    """``strategy.train_task(task)`` as task ``t`` (0-based) of a sequence under ``config``'s schedule.

    The strategy's own ``lr`` / ``weight_decay`` / ``epochs`` (its constructor's, from
    ``learner_kwargs``) are the later tasks' values; the first task takes ``init_lr`` /
    ``init_weight_decay`` / ``init_epochs`` where set. With ``reset_optimizer`` a new optimizer
    (:meth:`~clkit.strategies.Strategy.make_optimizer`, over the parameter groups of the one in
    place after the strategy's ``before_task``) starts the task, as PyCIL builds one per task; every
    epoch sets its rate, ``task_lr`` (MultiStepLR). Works with any strategy whose ``train_task`` draws
    one :meth:`~clkit.strategies.Strategy.batches` per epoch (every clkit strategy does): the rate is
    set when an epoch's batches are drawn.

    Examples
    --------
    >>> from clkit.strategies import Strategy, Task
    >>> s = Strategy(torch.nn.Linear(2, 2), lr=0.1, epochs=3, batch_size=4)
    >>> cfg = LearnerConfig(init_epochs=2, init_lr=0.5, init_milestones=[1], reset_optimizer=True)
    >>> task = Task(torch.zeros(4, 2), torch.tensor([0, 1, 0, 1]), task_id=0)
    >>> len(scheduled_train_task(s, task, 0, cfg)), s.optimizer.param_groups[0]["lr"]
    (2, 0.05)
    >>> len(scheduled_train_task(s, task, 1, cfg)), s.optimizer.param_groups[0]["lr"]
    (3, 0.1)
    """
    base = getattr(strategy, "_edge_schedule_base", None)
    if base is None:                       # the constructor's values: the later tasks' settings
        base = strategy._edge_schedule_base = (strategy.lr, strategy.weight_decay, strategy.epochs)
    lr0, wd0, ep0 = base
    wd = config.task_weight_decay(t, wd0)
    strategy.lr, strategy.weight_decay = config.task_lr(t, 0, lr0), wd
    epochs = config.task_epochs(t, ep0)
    draw = strategy.batches
    epoch = {"i": 0}

    def batches(n, device=None):
        if epoch["i"] == 0 and config.reset_optimizer:
            groups = [{"params": g["params"]} for g in strategy.optimizer.param_groups]
            strategy.optimizer = strategy.make_optimizer(groups)
        for g in strategy.optimizer.param_groups:
            g["lr"] = config.task_lr(t, epoch["i"], lr0)
            if "weight_decay" in g:
                g["weight_decay"] = wd
        epoch["i"] += 1
        return draw(n, device)

    strategy.batches = batches
    try:
        return strategy.train_task(task, epochs=epochs)
    finally:
        del strategy.batches               # the class's method again (deep copies carry no patch)
        strategy.lr = lr0

