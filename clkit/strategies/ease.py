"""EASE: an expandable subspace ensemble of adapters on a frozen pre-trained ViT.

**EASE** (``"ease"``; Zhou, Sun, Ye and Zhan, CVPR 2024, "Expandable Subspace Ensemble for
Pre-Trained Model-Based Class-Incremental Learning"), as the EDGE authors ran it: the PILOT tree
of ``github.com/AIGNLAI/EDGE`` at commit ``a60c1179cf762e8c1197ab876a3c06db3a49b639``
(``PILOT/models/ease.py:Learner``, ``PILOT/utils/inc_net.py:EaseNet``,
``PILOT/backbone/vit_ease.py``, ``PILOT/backbone/linears.py:EaseCosineLinear``, the CIFAR-100
config ``PILOT/exps/ease.json``):

- the pre-trained ViT is frozen; **each task gets a new set of AdaptFormer adapters** (one per
  block, parallel to the MLP branch; bottleneck ``ffn_num`` 64, scale 0.1, dropout 0.1, "lora"
  initialisation: :mod:`clkit.models.vit_adapter`). The adapter of task ``t`` defines the
  subspace ``f_t(x)``: the [CLS] feature after the final norm of the ViT run with that adapter.
  Only the current adapter trains; the earlier ones are frozen (and in evaluation mode: the
  authors keep them as deep copies outside the module tree, taken in evaluation mode);
- **training** (``_init_train``): cross-entropy of a task-local cosine classifier (``proxy_fc``,
  an ``EaseCosineLinear``: ``sigma * cos(f_t(x), w_k)`` over the task's classes, ``w``
  ``U(-1/sqrt(d), 1/sqrt(d))``, a learnable ``sigma`` starting at 1) on ``f_t(x)``, targets the
  position of the label within the task; SGD (momentum 0.9, ``lr`` 0.025, weight decay 5e-4) on
  the adapter and the proxy head, rebuilt at each task; the learning rate follows a cosine
  schedule over the epochs (``CosineAnnealingLR(T_max=epochs, eta_min=min_lr)``, stepped per
  epoch; ``min_lr`` 0); 20 epochs, batch size 48. ``milestones`` / ``lr_decay`` replace the cosine by
  ``MultiStepLR(milestones, gamma=lr_decay)`` stepped per epoch (:func:`~clkit.strategies._vit_common.step_lr`,
  restarted each task): the EDGE paper's pre-trained line (App. E.1.1; notebook 02's ``protocol: paper``);
- **prototypes** (``replace_fc``, after the task's training, adapters in evaluation mode): for
  every class of the task and every subspace ``j <= t``, ``P[c, j]`` = the mean of ``f_j(x)``
  over the class's training rows;
- **semantic-guided prototype complement** (``solve_sim_reset``, the config's
  ``recalc_sim=True``): an old class ``c`` (task ``i``) has no rows in later subspaces; for
  every ``j`` in ``i+1 .. t``, with ``L`` the classes of tasks ``j .. t``,
  ``P[c, j] = sum_{l in L} softmax_l(cos(P[c, i], P[l, i])) P[l, j]`` -- recomputed for every old
  task after every task;
- **prediction** (``EaseCosineLinear.forward_reweight``, ``use_reweight=True``): the logit of a
  class ``c`` of task ``i`` is ``sum_j w_ij cos(f_j(x), P[c, j])`` over the ``t + 1`` subspaces,
  ``w_ii = 1`` and ``w_ij = alpha / t`` otherwise (``alpha`` 0.1); the classifier's ``sigma`` is
  never trained there (it stays 1) and is left out.

Choices, documented:

- tasks may hold any classes in any order (EDGE evaluates class orders): a task's classes are
  taken in ``task.classes`` order (sorted when the task infers them, as the authors' remapped
  labels are), and "the classes of tasks ``j .. t``" are the classes of those tasks, wherever they
  lie in the head -- the authors' ranges ``init_cls + (j - 1) inc ...`` over relabelled classes.
  A task's classes must not overlap an earlier task's (EASE is class-incremental); a repeated
  ``task_id`` is allowed only for the latest task (its adapter trains on and its prototypes are
  recomputed);
- dropout masks come from a generator on the device seeded from ``seed`` (the authors: torch's
  global generator); every initialisation is drawn from a CPU generator seeded from ``seed``;
- no data augmentation (the authors' CIFAR-224 transforms crop and flip at training), as
  everywhere in clkit; prototypes use the task's rows as given (the authors: test transforms);
- options off in the config are not implemented: ``use_init_ptm`` (the plain ViT as an extra
  subspace, with ``beta``), ``use_diagonal``, ``use_old_data`` (exemplars), ``moni_adam``,
  ``recalc_sim=False``; the cosine schedule is applied by :meth:`EASE.train_task` (a caller that
  drives ``begin_task`` / ``train_step`` / ``after_task`` itself trains at the constant ``lr``);
- logits of classes not seen yet are ``-inf`` (the authors' head has rows for the seen classes
  only); before the first task every logit is 0. The task-incremental scenario masks to the
  task's classes, as for every strategy.

The model is a :class:`~clkit.models.vit.ViTBackbone` (``features``: a timm ``VisionTransformer``
built of timm ``Block`` s; its ``head`` only gives the number of classes, ``num_classes``
overrides it). Inputs are images ``(N, C, H, W)``. Classification only; needs task boundaries.
Frozen features cannot be cached: every adapter acts inside every block. Cost at prediction:
``t + 1`` passes of the ViT (one per adapter); after a task, ``t + 1`` passes over its rows.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .._validate import check_int, check_real
from ..device import move
from ..models.vit_adapter import AdapterStack, adapted_features, check_vit, vit_tokens
from ._vit_common import check_step_schedule, step_lr
from .base import Strategy, Task, epoch_means, register
from .ranpac_adapter import CosineClassifier

__all__ = ["EASE", "EASENet", "complement_prototypes", "reweight_logits"]


def reweight_logits(feats: torch.Tensor, protos: torch.Tensor, task_of_class: torch.Tensor, alpha: float):
    """EASE's prediction: ``sum_j w_cj cos(f_j, P[c, j])``, ``w = 1`` on the class's own subspace, ``alpha / t`` else.

    Parameters
    ----------
    feats : Tensor, shape (N, T, d)
        ``f_j(x)`` for the ``T = t + 1`` subspaces.
    protos : Tensor, shape (K, T, d)
    task_of_class : Tensor, shape (K,), int64
        The subspace (task) of each class; ``-1`` for a class not seen (its logit is ``-inf``).
    alpha : float

    Examples
    --------
    >>> f = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])               # one row, two subspaces
    >>> p = torch.tensor([[[1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [0.0, 2.0]], [[1.0, 1.0], [0.0, 0.0]]])
    >>> reweight_logits(f, p, torch.tensor([0, 1, -1]), 0.1)      # class 0: 1*1 + 0.1*0; class 1: 0.1*0 + 1*1
    tensor([[1., 1., -inf]])
    """
    t = feats.shape[1] - 1
    cos = torch.einsum("ntd,ktd->nkt", F.normalize(feats.float(), p=2, dim=2), F.normalize(protos.float(), p=2, dim=2))
    own = task_of_class[:, None] == torch.arange(t + 1, device=protos.device)[None]
    other = alpha / t if t > 0 else 0.0
    w = torch.where(own, torch.ones((), device=protos.device), torch.full((), other, device=protos.device))
    logits = (cos * w[None]).sum(2)
    return logits.masked_fill((task_of_class < 0)[None], float("-inf"))


def complement_prototypes(protos: torch.Tensor, task_classes: list) -> torch.Tensor:
    """The semantic-guided prototype complement (the authors' ``solve_sim_reset``), in place on ``protos``.

    ``protos`` is ``(K, T, d)``; ``task_classes[i]`` the class indices (an int64 tensor on the same
    device) of task ``i``. For each old task ``i`` and later subspace ``j``, ``L`` = the classes of tasks
    ``j .. T-1``: ``P[c, j] = softmax_l(cos(P[c, i], P[l, i])) @ P[L, j]`` for ``c`` of task ``i``.

    Examples
    --------
    >>> p = torch.zeros(3, 2, 2)
    >>> p[0, 0] = torch.tensor([1.0, 0.0]); p[1, 0] = torch.tensor([1.0, 0.0]); p[2, 0] = torch.tensor([0.0, 1.0])
    >>> p[1, 1] = torch.tensor([2.0, 0.0]); p[2, 1] = torch.tensor([0.0, 2.0])
    >>> out = complement_prototypes(p, [torch.tensor([0]), torch.tensor([1, 2])])
    >>> [round(v, 4) for v in out[0, 1].tolist()]                 # softmax(1, 0) over classes 1, 2
    [1.4621, 0.5379]
    """
    T = protos.shape[1]
    for i in range(T - 1):
        old = task_classes[i]
        a_hat = protos[old, i]
        for j in range(i + 1, T):
            later = torch.cat(task_classes[j:])
            a, b = protos[later, i], protos[later, j]
            sim = F.softmax(F.cosine_similarity(a_hat[:, None, :], a[None, :, :], dim=2), dim=1)
            protos[old, j] = sim @ b
    return protos


class EASENet(nn.Module):
    """A frozen timm ViT, one :class:`~clkit.models.vit_adapter.AdapterStack` per task, the prototypes.

    Attributes
    ----------
    adapters : nn.ModuleList of AdapterStack
        Task ``t``'s adapters at index ``t``; the last one trains.
    proxy : clkit.strategies.ranpac_adapter.CosineClassifier or None
        The current task's training head.
    protos : Tensor (buffer), shape (K, T, d)
    task_of_class : Tensor (buffer), shape (K,), int64, ``-1`` for classes not seen

    Examples
    --------
    >>> from clkit.models.vit import vit_backbone
    >>> net = EASENet(vit_backbone(num_classes=4, tiny=True, seed=0).features, 4, 8)
    >>> net.add_task(2, torch.Generator().manual_seed(0), seed=0)
    >>> net.features(torch.zeros(3, 3, 32, 32)).shape, net(torch.zeros(3, 3, 32, 32)).shape
    (torch.Size([3, 1, 32]), torch.Size([3, 4]))
    """

    def __init__(self, vit: nn.Module, num_classes: int, ffn_num: int, *, scale: float = 0.1, dropout: float = 0.1,
                 alpha: float = 0.1):
        super().__init__()
        self.vit = vit.requires_grad_(False).eval()
        self.dim = int(getattr(vit, "embed_dim", getattr(vit, "num_features", 0)))
        self.num_classes, self.ffn_num, self.scale, self.dropout, self.alpha = num_classes, ffn_num, scale, dropout, alpha
        self.adapters = nn.ModuleList()
        self.proxy: CosineClassifier | None = None
        self.register_buffer("protos", torch.zeros(num_classes, 0, self.dim))
        self.register_buffer("task_of_class", torch.full((num_classes,), -1, dtype=torch.int64))

    def add_task(self, n_classes: int, generator: torch.Generator, seed: int) -> None:
        """A new adapter set (the authors' ``get_new_adapter``) and proxy head; the earlier adapters freeze."""
        device = self.protos.device
        for stack in self.adapters:
            stack.requires_grad_(False)
        if self.proxy is not None:
            self.proxy.requires_grad_(False)
        stack = AdapterStack(len(self.vit.blocks), self.dim, self.ffn_num, generator=generator, seed=seed,
                             scale=self.scale, dropout=self.dropout)
        self.adapters.append(stack.to(device))
        self.proxy = CosineClassifier(self.dim, n_classes, generator).to(device)
        grown = torch.zeros(self.num_classes, len(self.adapters), self.dim, device=device, dtype=self.protos.dtype)
        grown[:, :-1] = self.protos
        self.protos = grown

    def train(self, mode: bool = True):
        super().train(mode)
        self.vit.eval()
        for stack in list(self.adapters)[:-1]:
            stack.eval()
        return self

    def train_logits(self, x: torch.Tensor) -> torch.Tensor:
        """The proxy head on the current subspace, ``(N, n_task_classes)`` (dropout in training mode)."""
        stack = self.adapters[-1]
        return self.proxy(adapted_features(self.vit, x, stack, generator=stack.dropout_generator(x.device)))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """``f_j(x)`` for every subspace, ``(N, T, d)`` float32 (the embedding computed once)."""
        tokens = vit_tokens(self.vit, x)
        outs = [adapted_features(self.vit, x, stack, tokens=tokens, generator=stack.dropout_generator(x.device))
                for stack in self.adapters]
        return torch.stack(outs, 1).float()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Evaluation logits ``(N, K)`` (:func:`reweight_logits`); zeros before the first task."""
        if not len(self.adapters):
            return torch.zeros(len(x), self.num_classes, device=self.protos.device)
        return reweight_logits(self.features(x), self.protos, self.task_of_class, self.alpha)


@register("ease")
class EASE(Strategy):
    """EASE: a new adapter subspace per task on a frozen ViT, prototypes in every subspace, reweighted cosine.

    Parameters
    ----------
    model : ViTBackbone
        ``features``: a timm ``VisionTransformer`` (frozen); ``head.out_features``: the classes.
    ffn_num : int, default 64
        The adapters' bottleneck (``ffn_num`` of ``exps/ease.json``).
    adapter_scale : float, default 0.1
        ``ffn_adapter_scalar`` (``utils/inc_net.py:get_backbone``).
    adapter_dropout : float, default 0.1
        Dropout on the bottleneck (``vit_ease.py:get_new_adapter``).
    alpha : float, default 0.1
        Weight of the other subspaces at prediction, divided by ``t`` (``alpha`` of the config).
    min_lr : float, default 0.0
        ``eta_min`` of the cosine schedule (the config's ``min_lr``).
    num_classes : int, optional
        Classes of the stream; default ``model.head.out_features``.
    milestones : list of int, optional
        Epochs (0-based, increasing) after which the rate is multiplied by ``lr_decay`` in every task
        (MultiStepLR stepped per epoch); given, it replaces the cosine. ``None`` (default): the cosine.
    lr_decay : float, default 0.1
        The factor at each milestone.
    lr, epochs, batch_size, weight_decay, momentum
        Defaults 0.025, 20, 48, 5e-4, 0.9 (the config's ``init_lr``/``later_lr``, ``init_epochs``/
        ``later_epochs``, ``batch_size``, ``weight_decay``; PILOT's SGD momentum).
    **kwargs
        The other :class:`~clkit.strategies.Strategy` keywords (``seed`` draws every initialisation
        and the dropout masks).

    Examples
    --------
    >>> from clkit.models.vit import vit_backbone
    >>> s = EASE(vit_backbone(num_classes=4, tiny=True, seed=0), ffn_num=4, epochs=1, batch_size=8)
    >>> g = torch.Generator().manual_seed(0)
    >>> _ = s.train_task(Task(torch.randn(8, 3, 32, 32, generator=g), torch.tensor([0, 1] * 4), task_id=0))
    >>> s.predict(torch.randn(3, 3, 32, 32, generator=g)).isinf().sum(1).tolist()   # classes 2, 3 unseen
    [2, 2, 2]
    >>> EASE(vit_backbone(num_classes=4, tiny=True), alpha=-1)
    Traceback (most recent call last):
    ...
    ValueError: alpha must be a number >= 0, got -1.0
    """

    task_free = False
    supports_regression = False
    #: the model must be a timm ViT (a :class:`~clkit.models.vit.ViTBackbone`)
    needs_vit_model = True

    def __init__(self, model, *, ffn_num: int = 64, adapter_scale: float = 0.1, adapter_dropout: float = 0.1,
                 alpha: float = 0.1, min_lr: float = 0.0, num_classes: int | None = None, milestones=None,
                 lr_decay: float = 0.1, **kwargs):
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        self.milestones, self.lr_decay = check_step_schedule(milestones, lr_decay)
        vit = check_vit(model, "EASE")
        self.ffn_num = check_int("ffn_num", ffn_num, low=1)
        self.adapter_scale = check_real("adapter_scale", adapter_scale)
        self.adapter_dropout = check_real("adapter_dropout", adapter_dropout, low=0, high=1, high_open=True)
        self.alpha = check_real("alpha", alpha, low=0)
        if num_classes is None:
            head = getattr(model, "head", None)
            if not isinstance(head, nn.Linear):
                raise TypeError(f"model.head must be an nn.Linear giving the number of classes, or pass num_classes; "
                                f"got {type(head).__name__}")
            num_classes = head.out_features
        self.num_classes = check_int("num_classes", num_classes, low=1)
        if kwargs.get("loss", "cross_entropy") != "cross_entropy":
            raise ValueError(f"strategy 'ease' is classification only: loss must be 'cross_entropy', "
                             f"got {kwargs['loss']!r}")
        for key, value in (("lr", 0.025), ("epochs", 20), ("batch_size", 48), ("weight_decay", 5e-4),
                           ("momentum", 0.9)):
            kwargs.setdefault(key, value)
        self.min_lr = check_real("min_lr", min_lr, low=0)
        if self.min_lr > check_real("lr", kwargs["lr"], low=0, low_open=True):
            raise ValueError(f"min_lr must be <= lr ({kwargs['lr']}), got {min_lr}")
        net = EASENet(vit, self.num_classes, self.ffn_num, scale=self.adapter_scale, dropout=self.adapter_dropout,
                      alpha=self.alpha)
        super().__init__(net, **kwargs)
        self.init_generator = torch.Generator().manual_seed(self.seed)
        self.task_order: list[int] = []          # task ids, one per adapter
        self.task_class_lists: list[tuple] = []  # their classes, in task.classes order
        self._targets: torch.Tensor | None = None
        self._class_index: list[torch.Tensor] = []

    # ------------------------------------------------------------------ set-up
    def make_optimizer(self, params):
        """The constructor's optimizer over the trainable parameters (current adapter, proxy head); None if none."""
        params = [p for p in params if p.requires_grad]
        return super().make_optimizer(params) if params else None

    def frozen_modules(self) -> list:
        """The ViT and the adapters of the earlier tasks (evaluation mode)."""
        return [self.model.vit, *list(self.model.adapters)[:-1]]

    def before_task(self, task: Task) -> None:
        if not task.classes:
            raise ValueError("EASE needs the task's classes (integer labels)")
        classes = tuple(int(c) for c in task.classes)
        bad = [c for c in classes if not 0 <= c < self.num_classes]
        if bad:
            raise ValueError(f"task {task.task_id} has class(es) {bad} outside the {self.num_classes} classes of "
                             f"the model; allowed: 0 ... {self.num_classes - 1}")
        if self.task_order and task.task_id == self.task_order[-1]:
            if set(classes) != set(self.task_class_lists[-1]):
                raise ValueError(f"task {task.task_id} is trained again with other classes {classes}; "
                                 f"it had {self.task_class_lists[-1]}")
            return                                   # the latest task trains on
        if task.task_id in self.task_order:
            raise ValueError(f"task {task.task_id} was trained before another task: EASE can continue only the "
                             f"latest task ({self.task_order[-1]})")
        seen = {c for cl in self.task_class_lists for c in cl}
        again = sorted(seen & set(classes))
        if again:
            raise ValueError(f"task {task.task_id} repeats class(es) {again} of earlier tasks; EASE is "
                             f"class-incremental: every task needs new classes")
        t = len(self.task_order)
        self.model.add_task(len(classes), self.init_generator, seed=self.seed + 1000 * t)
        self.task_order.append(task.task_id)
        self.task_class_lists.append(classes)
        targets = torch.full((self.num_classes,), -100, dtype=torch.int64)
        targets[list(classes)] = torch.arange(len(classes))
        self._targets = move(targets, self.device)
        self._class_index.append(move(torch.tensor(classes, dtype=torch.int64), self.device))
        self.optimizer = self.make_optimizer(self.model.parameters())
        self.refresh_train_mode()

    def observe(self, x, y, task: Task | None = None) -> float:
        """Refused: EASE needs task boundaries (``task_free = False``); train it with ``train_task``."""
        raise ValueError("strategy 'ease' needs task boundaries (task_free = False); train it with train_task")

    # ------------------------------------------------------------------ training
    def _cosine_lr(self, epoch: int, epochs: int) -> float:
        """The rate of ``epoch``: the cosine to ``min_lr``, or :func:`step_lr` with ``milestones``."""
        if self.milestones is not None:
            return step_lr(self.lr, epoch, self.milestones, self.lr_decay)
        return self.min_lr + (self.lr - self.min_lr) * (1 + math.cos(math.pi * epoch / epochs)) / 2

    def train_task(self, task: Task, epochs: int | None = None) -> list[float]:
        """Train the task's adapter and proxy head (cosine schedule over ``epochs``, or the step one with
        ``milestones``), then compute the prototypes."""
        task = task.to(self.device)
        epochs = self.begin_task(task, epochs)
        history = []
        for e in range(epochs):
            for group in self.optimizer.param_groups:
                group["lr"] = self._cosine_lr(e, epochs)
            history.append([self.train_batch(task, idx) for idx in self.batches(len(task), self.device)])
        self.after_task(task)
        return epoch_means(history)

    def train_step(self, x, y, task: Task | None = None) -> torch.Tensor:
        """One step: cross-entropy of the proxy head on the current subspace, targets the positions in the task."""
        self.train_mode()
        self.optimizer.zero_grad(set_to_none=True)
        with self.amp.autocast():
            logits = self.model.train_logits(x)
        loss = F.cross_entropy(logits.float(), self._targets[y])
        self.amp.backward(loss, self.optimizer)
        self.after_backward(x, y, task)
        self.amp.step(self.optimizer)
        self.steps += 1
        return loss.detach()

    @torch.no_grad()
    def after_task(self, task: Task) -> None:
        """Prototypes of the task's classes in every subspace (``replace_fc``), then the complement of the old ones."""
        task = task.to(self.device)
        net = self.model
        net.eval()
        k, T = len(self.task_class_lists[-1]), len(net.adapters)
        sums = torch.zeros(k, T, net.dim, device=self.device)
        counts = torch.zeros(k, device=self.device)
        pos = self._targets[task.y]
        for s in range(0, len(task), self.batch_size):
            with self.amp.autocast():
                f = net.features(task.x[s:s + self.batch_size])
            sums.index_add_(0, pos[s:s + self.batch_size], f.float())
            counts.index_add_(0, pos[s:s + self.batch_size], torch.ones(len(f), device=self.device))
        net.protos[self._class_index[-1]] = sums / counts.clamp(min=1)[:, None, None]
        net.task_of_class[self._class_index[-1]] = T - 1
        complement_prototypes(net.protos, self._class_index)

    # ------------------------------------------------------------------ inference
    def forward(self, x, task: Task | None = None, classes=None) -> torch.Tensor:
        """Evaluation logits (classes not seen at ``-inf``), masked to the task's classes in the task scenario."""
        out = self.model(x)
        return self.mask_logits(out, classes if classes is not None else (task.classes if task is not None else None))

    def __repr__(self) -> str:
        return (f"EASE(ffn_num={self.ffn_num}, alpha={self.alpha}, tasks={len(self.task_order)}, "
                f"scenario={self.scenario!r}, lr={self.lr}, epochs={self.epochs})")
