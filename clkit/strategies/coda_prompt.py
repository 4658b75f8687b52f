"""CODA-Prompt: decomposed, attention-weighted prefix prompts for a frozen pre-trained ViT.

**CODA-Prompt** (``"coda_prompt"``; Smith, Karlinsky, Gutta, Cascante-Bonilla, Kim, Arbelle, Panda,
Feris and Kira, CVPR 2023, "CODA-Prompt: COntinual Decomposed Attention-based Prompting for
Rehearsal-Free Continual Learning"), as the EDGE authors ran it: the PILOT tree of ``AIGNLAI/EDGE``
at commit ``a60c1179cf762e8c1197ab876a3c06db3a49b639``, files ``PILOT/models/coda_prompt.py``
(``Learner``), ``PILOT/backbone/prompt.py`` (``CodaPrompt``), ``PILOT/backbone/vit_coda_promtpt.py``
(the prefix-tuned ViT), ``PILOT/utils/inc_net.py`` (``CodaPromptVitNet``) and ``PILOT/exps/coda_prompt.json``
(CIFAR-100, 10 tasks of 10 classes):

- the pre-trained ViT is **frozen** (only the prompt components and the linear head are in the
  optimizer); the **query** ``q(x)`` is the frozen ViT's [CLS] token after its final norm, computed
  without prompts and without gradient;
- each prompted layer ``l`` (the first five blocks, ``e_layers = [0, 1, 2, 3, 4]``) holds a pool of
  ``M`` components (``pool_size``, 100): prompts ``P_l`` ``(M, L, d)`` (``prompt_length`` L = 8), keys
  ``K_l`` ``(M, d)`` and attention vectors ``A_l`` ``(M, d)``. The prompt of an image is the weighted sum
  ``sum_m alpha_m P_l[m]`` with ``alpha_m = cos(q(x) * A_l[m], K_l[m])``; its first ``L / 2`` tokens are
  prefix keys and the last ``L / 2`` prefix values of that block's attention (prefix tuning,
  :func:`clkit.models.vit_prefix.prefix_block_forward`);
- the pool is split evenly over ``n_tasks`` (10) tasks: task ``t`` owns components
  ``[t * M/n_tasks, (t + 1) * M/n_tasks)``. At the start of task ``t`` those components are
  (re)initialised by **Gram-Schmidt** (:func:`gram_schmidt`): random normal vectors made orthogonal to
  all earlier components (flattened for ``P``) and normalised; components of later tasks are zero.
  While task ``t`` trains, the components of earlier tasks are used but **frozen** (detached) and later
  ones are not used; at evaluation the components of tasks ``0 .. t`` are used;
- the **classifier** is the model's linear ``head`` on the prompted pass's [CLS] token after the
  final norm. Training logits are masked to the current task's classes (the authors set the logits of
  earlier classes to ``-inf`` and cut later ones); evaluation logits to the classes seen so far;
- **loss**: cross-entropy (batch mean) plus ``ortho_mu`` times the orthogonality penalty
  ``mean((X X^T - I)^2)`` of ``K_l``, ``A_l`` and the flattened ``P_l`` (the components in use),
  summed over the layers; ``ortho_mu = 0`` in the CIFAR-100 config (``prompt_param = [100, 8, 0.0]``);
- **optimizer**: Adam, ``lr = 0.001``, ``weight_decay = 0``, batch size 128, 20 epochs, over the whole
  pool and the head, created anew at each task, with the authors' cosine schedule per epoch
  (:func:`cosine_lr`); the last incomplete batch of an epoch is dropped (their ``drop_last=True``).
  PILOT's other scheduler, ``steplr`` (``MultiStepLR(milestones, gamma)``, stepped per epoch), is
  ``milestones`` / ``lr_decay`` (:func:`~clkit.strategies._vit_common.step_lr`), which replace the
  cosine when given: the EDGE paper's pre-trained line (App. E.1.1, notebook 02's ``protocol: paper``).

Checked against the authors' code (``tests/test_strategies_coda_prompt.py``): losses, gradient norms,
Adam updates and logits of a tiny ViT over two tasks, the Gram-Schmidt initialisation draw for draw,
the orthogonality penalty and the learning-rate schedule.

Deviations, documented:

- random draws come from a CPU generator seeded with the strategy's ``seed`` (the authors use torch's
  global generator); the components are drawn in the order ``K, A, P`` per layer for every task (the
  authors draw ``P, K, A`` for the first task, after uniform values they overwrite, and ``K, A, P`` for
  the later ones), and only for the layers the ViT has (the authors also draw for unused layers
  beyond its depth): the same distribution, other values;
- :func:`gram_schmidt` skips a zero earlier component instead of redrawing forever (the authors' loop
  ``redo``\\es until the projection's denominator is ``>= 1e-8``, which never happens for a zero column);
- ``epochs=1`` trains at the base learning rate (the authors' schedule divides by ``epochs - 1`` and
  fails); a task smaller than one batch trains on one partial batch instead of not at all;
- the authors' ``torch.zeros((1,), requires_grad=True).to(device)`` accumulator fails on the CPU (an
  in-place update of a leaf); their orthogonality penalty builds its identity matrix on the CPU
  (fails on CUDA when ``ortho_mu > 0``): clkit computes the same values on any device;
- not implemented: data augmentation (PILOT's random-resized crops and flips),
  more tasks than ``n_tasks`` (refused: the authors' slices would run past the pool).

The model is a :class:`~clkit.models.vit.ViTBackbone` or anything with a ``features`` timm
``VisionTransformer`` (``patch_embed``, ``_pos_embed``, ``blocks``, ``norm``) and a linear ``head`` of the
ViT's width. Inputs are images ``(N, C, H, W)``. Classification only; needs task boundaries. Features
cannot be cached: the prompts change the first blocks' attention (only the query could be). Cost: two
passes of the ViT per batch (the query without gradient, the prompted pass with gradients flowing
through the frozen blocks to the components).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .._validate import check_choice, check_int, check_real
from ..device import move
from ..models.vit_prefix import prefix_attention, prefix_block_forward
from ._vit_common import FrozenViTMixin, check_step_schedule, check_vit_model, step_lr
from .base import Strategy, Task, epoch_means, register

__all__ = ["CODAPrompt", "CODAPromptNet", "gram_schmidt", "cosine_lr", "prefix_block_forward",
           "prefix_attention"]


def gram_schmidt(vv: torch.Tensor, start: int, stop: int, generator: torch.Generator) -> torch.Tensor:
    """CODA-Prompt's component initialisation: rows ``start:stop`` of ``vv`` replaced by orthonormal random rows.

    Rows ``< start`` are kept, rows ``start:stop`` become random normal vectors (one ``torch.randn(D)``
    per row from ``generator``, in order) made orthogonal to every earlier row by classical
    Gram-Schmidt and normalised, rows ``>= stop`` become zero (the authors' ``CodaPrompt.gram_schmidt``;
    a 3-d ``vv`` is flattened to ``(M, D)`` for it and reshaped back).

    Parameters
    ----------
    vv : Tensor, shape (M, ...)
    start, stop : int
        ``0 <= start <= stop <= M``.
    generator : torch.Generator
        A CPU generator (the draws are moved to ``vv``'s device).

    Returns
    -------
    Tensor, shaped like ``vv``

    Examples
    --------
    >>> out = gram_schmidt(torch.ones(4, 3), 1, 3, torch.Generator().manual_seed(0))
    >>> out[0].tolist(), out[3].tolist()
    ([1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
    >>> gram = out[:3] @ out[:3].T
    >>> torch.allclose(gram[1:, :], torch.tensor([[0.0, 1, 0], [0, 0, 1]]), atol=1e-5)
    True
    """
    shape = vv.shape
    flat = vv.reshape(shape[0], -1)
    dim = flat.shape[1]
    rows = [flat[:start]]
    if stop > start:
        draws = move(torch.stack([torch.randn(dim, generator=generator) for _ in range(start, stop)]), vv.device)
        draws = draws.to(flat.dtype)
        for i in range(stop - start):
            vk = draws[i]
            u = torch.cat(rows, 0)                                   # (k, D): every earlier row
            denom = (u * u).sum(1)
            coef = torch.where(denom < 1e-8, torch.zeros_like(denom), (u @ vk) / denom.clamp_min(1e-30))
            rows.append((vk - coef @ u).unsqueeze(0))
        new = torch.cat(rows[1:], 0)
        rows = [flat[:start], new / new.norm(dim=1, keepdim=True)]
    rows.append(torch.zeros_like(flat[stop:]))
    return torch.cat(rows, 0).reshape(shape)


def cosine_lr(base_lr: float, epoch: int, epochs: int) -> float:
    """The learning rate of ``epoch`` (0-based) under the authors' ``CosineSchedule`` over ``epochs`` epochs.

    ``base_lr * cos(99 pi e / (200 (epochs - 1)))`` with ``e = max(epoch - 1, 0)``: their scheduler
    steps once when it is built and restarts its counter, so the first two epochs share the base rate.
    With ``epochs == 1`` the base rate (the authors' formula divides by zero).

    Examples
    --------
    >>> [round(cosine_lr(0.001, e, 4), 12) for e in range(4)]
    [0.001, 0.001, 0.000868631514, 0.000509041416]
    """
    if epochs <= 1:
        return base_lr
    return base_lr * math.cos(99 * math.pi * max(epoch - 1, 0) / (200 * (epochs - 1)))


def _ortho_penalty(t: torch.Tensor) -> torch.Tensor:
    """``mean((t t^T - I)^2)`` (the authors' ``ortho_penalty``), on ``t``'s device."""
    return ((t @ t.T - torch.eye(t.shape[0], device=t.device, dtype=t.dtype)) ** 2).mean()


class CODAPromptNet(nn.Module):
    """A frozen timm ViT with CODA-Prompt's component pools in its first blocks and a linear head.

    Parameters
    ----------
    vit : timm.models.vision_transformer.VisionTransformer
        Frozen here (``requires_grad`` off, always in evaluation mode).
    head : nn.Linear
        ``d -> num_classes``; trained.
    pool_size, prompt_length, n_tasks : int
        ``M`` components of ``L`` tokens, ``M // n_tasks`` per task.
    layers : tuple of int
        The prompted blocks (those beyond the ViT's depth are dropped).
    ortho_mu : float
        Weight of the orthogonality penalty.
    generator : torch.Generator
        CPU generator of the first task's Gram-Schmidt draws.

    Attributes
    ----------
    prompts : nn.Parameter, shape (len(layers), M, L, d)
    keys, attention : nn.Parameter, shape (len(layers), M, d)
    task_count : int
        The task whose components train (the authors' ``task_count``).

    Examples
    --------
    >>> from clkit.models.vit import vit_backbone
    >>> net = vit_backbone(num_classes=4, tiny=True, seed=0)
    >>> coda = CODAPromptNet(net.features, net.head, 4, 2, 2, (0, 1, 2), 0.0, torch.Generator().manual_seed(0))
    >>> tuple(coda.prompts.shape), coda.layers, coda(torch.zeros(3, 3, 32, 32)).shape
    ((2, 4, 2, 32), (0, 1), torch.Size([3, 4]))
    >>> coda.keys[0, 2:].abs().sum().item()          # task 1's components are zero until it starts
    0.0
    """

    def __init__(self, vit: nn.Module, head: nn.Linear, pool_size: int, prompt_length: int, n_tasks: int,
                 layers, ortho_mu: float, generator: torch.Generator):
        super().__init__()
        d = head.in_features
        self.vit, self.head = vit, head
        self.vit.requires_grad_(False)
        self.vit.eval()
        self.pool_size, self.prompt_length, self.n_tasks, self.ortho_mu = pool_size, prompt_length, n_tasks, ortho_mu
        self.layers = tuple(sorted({int(i) for i in layers if int(i) < len(vit.blocks)}))
        self.per_task = pool_size // n_tasks
        n = len(self.layers)
        self.prompts = nn.Parameter(torch.zeros(n, pool_size, prompt_length, d))
        self.keys = nn.Parameter(torch.zeros(n, pool_size, d))
        self.attention = nn.Parameter(torch.zeros(n, pool_size, d))
        self.task_count = 0
        self.init_components(0, generator)

    def train(self, mode: bool = True):
        super().train(mode)
        self.vit.eval()
        return self

    @torch.no_grad()
    def init_components(self, task_count: int, generator: torch.Generator) -> None:
        """Start task ``task_count``: Gram-Schmidt its components (``K, A, P`` per layer) and use them."""
        s, f = task_count * self.per_task, (task_count + 1) * self.per_task
        for i in range(len(self.layers)):
            for param in (self.keys, self.attention, self.prompts):
                param[i].copy_(gram_schmidt(param[i], s, f, generator))
        self.task_count = task_count

    def query(self, x) -> torch.Tensor:
        """``q(x)``: the frozen ViT's [CLS] token after its final norm, without prompts, ``(N, d)``, no gradient."""
        with torch.no_grad():
            return self.vit.forward_features(x)[:, 0]

    def _components(self, i: int, train: bool):
        s, f = self.task_count * self.per_task, (self.task_count + 1) * self.per_task
        out = []
        for param in (self.keys, self.attention, self.prompts):
            t = param[i, :f]
            if train and s > 0:   # earlier tasks' components: used, frozen
                t = torch.cat([t[:s].detach(), t[s:]], 0)
            out.append(t)
        return out

    def prefixes(self, q: torch.Tensor, i: int, train: bool = False):
        """Prefix keys and values ``(N, L/2, d)`` of the ``i``-th prompted layer, and its penalty (0-dim)."""
        k, a, p = self._components(i, train)
        aq = F.normalize(torch.einsum("bd,kd->bkd", q, a), dim=2)
        alpha = torch.einsum("bkd,kd->bk", aq, F.normalize(k, dim=1))
        prompt = torch.einsum("bk,kld->bld", alpha, p)
        half = self.prompt_length // 2
        penalty = None
        if train and self.ortho_mu > 0:
            penalty = self.ortho_mu * (_ortho_penalty(k) + _ortho_penalty(a) + _ortho_penalty(p.reshape(len(p), -1)))
        return prompt[:, :half], prompt[:, half:], penalty

    def forward(self, x, train: bool = False, penalty: bool = False):
        """Logits ``(N, K)``; with ``penalty=True`` also the orthogonality penalty (0-dim, zero when off).

        ``train=True`` freezes the earlier tasks' components (detached) and computes the penalty."""
        vit = self.vit
        q = self.query(x)
        tokens = vit._pos_embed(vit.patch_embed(x))
        for name in ("patch_drop", "norm_pre"):
            mod = getattr(vit, name, None)
            if mod is not None:
                tokens = mod(tokens)
        total = q.new_zeros(())
        where = {layer: i for i, layer in enumerate(self.layers)}
        for b, block in enumerate(vit.blocks):
            if b in where:
                pk, pv, pen = self.prefixes(q, where[b], train)
                tokens = prefix_block_forward(block, tokens, pk, pv)
                if pen is not None:
                    total = total + pen
            else:
                tokens = block(tokens)
        logits = self.head(vit.norm(tokens)[:, 0])
        return (logits, total) if penalty else logits


@register("coda_prompt")
class CODAPrompt(FrozenViTMixin, Strategy):
    """CODA-Prompt: a frozen ViT prompted in its first blocks by attention-weighted sums of components.

    Parameters
    ----------
    model : ViTBackbone
        A ``features`` timm ``VisionTransformer`` (frozen) and a linear ``head`` (trained);
        ``head.out_features`` is the number of classes of the stream.
    pool_size : int, default 100
        Components per prompted layer (``prompt_param[0]`` of the CIFAR-100 config), ``>= n_tasks``.
    prompt_length : int, default 8
        Tokens per component, even: half prefix keys, half prefix values (``prompt_param[1]``).
    ortho_mu : float, default 0.0
        Weight of the orthogonality penalty (``prompt_param[2]``), ``>= 0``.
    n_tasks : int, default 10
        Tasks the pool is split over (the config's 10 tasks of CIFAR-100); more tasks are refused.
    layers : tuple of int, default (0, 1, 2, 3, 4)
        Prompted blocks (the authors' ``e_layers``); those beyond the ViT's depth are ignored.
    scheduler : {"cosine", "constant"}, default "cosine"
        The authors' per-epoch cosine schedule (:func:`cosine_lr`) or a constant rate.
    milestones : list of int, optional
        PILOT's ``steplr``: epochs (0-based, increasing) after which the rate is multiplied by ``lr_decay``
        in every task; given, it replaces ``scheduler``. ``None`` (default): ``scheduler``.
    lr_decay : float, default 0.1
        The factor at each milestone.
    drop_last : bool, default True
        Drop an epoch's last incomplete batch (the authors' loader), unless it is the only one.
    optimizer, lr, weight_decay, epochs, batch_size : default "adam", 0.001, 0.0, 20, 128
        The config's ``optimizer``, ``init_lr``, ``weight_decay``, ``tuned_epoch``, ``batch_size``.
    **kwargs
        Those of :class:`~clkit.strategies.Strategy` (``seed`` also draws the components).

    Examples
    --------
    >>> from clkit.models.vit import vit_backbone
    >>> s = CODAPrompt(vit_backbone(num_classes=4, tiny=True, seed=0), pool_size=4, prompt_length=2, n_tasks=2,
    ...                epochs=1, batch_size=8)
    >>> g = torch.Generator().manual_seed(0)
    >>> _ = s.train_task(Task(torch.randn(16, 3, 32, 32, generator=g), torch.tensor([0, 1] * 8), task_id=0))
    >>> s.predict(torch.randn(3, 3, 32, 32, generator=g)).isinf().sum(1).tolist()   # classes 2, 3 unseen
    [2, 2, 2]
    >>> CODAPrompt(vit_backbone(num_classes=4, tiny=True, seed=0), prompt_length=5)
    Traceback (most recent call last):
    ...
    ValueError: prompt_length must be even (half prefix keys, half prefix values), got 5
    """

    task_free = False
    supports_regression = False
    #: the model must be a timm ViT (a :class:`~clkit.models.vit.ViTBackbone`)
    needs_vit_model = True

    def __init__(self, model, *, pool_size: int = 100, prompt_length: int = 8, ortho_mu: float = 0.0,
                 n_tasks: int = 10, layers=(0, 1, 2, 3, 4), scheduler: str = "cosine", drop_last: bool = True,
                 optimizer="adam", lr: float = 0.001, weight_decay: float = 0.0, epochs: int = 20,
                 batch_size: int = 128, milestones=None, lr_decay: float = 0.1, **kwargs):
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        check_vit_model(model)
        self.milestones, self.lr_decay = check_step_schedule(milestones, lr_decay)
        self.n_tasks = check_int("n_tasks", n_tasks, low=1)
        self.pool_size = check_int("pool_size", pool_size, low=1)
        if self.pool_size < self.n_tasks:
            raise ValueError(f"pool_size must be >= n_tasks ({self.n_tasks}): each task needs a component, "
                             f"got {self.pool_size}")
        self.prompt_length = check_int("prompt_length", prompt_length, low=2)
        if self.prompt_length % 2:
            raise ValueError(f"prompt_length must be even (half prefix keys, half prefix values), got {prompt_length}")
        self.ortho_mu = check_real("ortho_mu", ortho_mu, low=0)
        if isinstance(layers, (str, bytes)) or not hasattr(layers, "__iter__"):
            raise TypeError(f"layers must be a sequence of block indices, got {layers!r}")
        layers = tuple(check_int("layers", i, low=0) for i in layers)
        if not layers or not any(i < len(model.features.blocks) for i in layers):
            raise ValueError(f"layers must name at least one of the ViT's blocks 0 ... "
                             f"{len(model.features.blocks) - 1}, got {layers!r}")
        self.scheduler = check_choice("scheduler", scheduler, ["cosine", "constant"])
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last must be True or False, got {drop_last!r}")
        self.drop_last = drop_last
        if kwargs.get("loss", "cross_entropy") != "cross_entropy":
            raise ValueError(f"strategy 'coda_prompt' is classification only: loss must be 'cross_entropy', "
                             f"got {kwargs['loss']!r}")
        seed = check_int("seed", kwargs.get("seed", 0))
        self._component_generator = torch.Generator().manual_seed(seed)
        net = CODAPromptNet(model.features, model.head, self.pool_size, self.prompt_length, self.n_tasks, layers,
                            self.ortho_mu, self._component_generator)
        self.num_classes = model.head.out_features
        super().__init__(net, optimizer=optimizer, lr=lr, weight_decay=weight_decay, epochs=epochs,
                         batch_size=batch_size, **kwargs)
        self.trained_tasks: list[int] = []
        self._train_mask: torch.Tensor | None = None
        self._seen_mask: torch.Tensor | None = None

    # ------------------------------------------------------------------ set-up
    # make_optimizer (trainable parameters: components, head), frozen_modules (the ViT), _mask: FrozenViTMixin's
    def before_task(self, task: Task) -> None:
        """A new task: its components by Gram-Schmidt (after the first task), a fresh optimizer, the masks."""
        self._check_classes(task, "CODA-Prompt")
        if task.task_id not in self.trained_tasks:
            if len(self.trained_tasks) >= self.n_tasks:
                raise ValueError(f"CODA-Prompt was built for n_tasks={self.n_tasks} tasks (its pool is split over "
                                 f"them); task {task.task_id} would be task {len(self.trained_tasks) + 1}")
            if self.trained_tasks:
                self.model.init_components(len(self.trained_tasks), self._component_generator)
            self.trained_tasks.append(task.task_id)
            self.optimizer = self.make_optimizer(self.model.parameters())
        self._seen_mask = self._mask(self._seen_classes)
        self._train_mask = self._mask(task.classes)

    def observe(self, x, y, task: Task | None = None) -> float:
        """Refused: CODA-Prompt needs task boundaries; train it with ``train_task``."""
        raise ValueError("strategy 'coda_prompt' needs task boundaries (task_free = False); train it with train_task")

    # ------------------------------------------------------------------ training
    def train_task(self, task: Task, epochs: int | None = None) -> list[float]:
        """Train on a task: ``epochs`` passes, the learning rate set per epoch (:func:`cosine_lr`, or
        :func:`~clkit.strategies._vit_common.step_lr` with ``milestones``), the last
        incomplete batch dropped (``drop_last``); returns the mean loss per epoch."""
        task = task.to(self.device)
        epochs = self.begin_task(task, epochs)
        for group in self.optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        history = []
        n = len(task)
        for e in range(epochs):
            for group in self.optimizer.param_groups:
                if self.milestones is not None:
                    group["lr"] = step_lr(group["initial_lr"], e, self.milestones, self.lr_decay)
                else:
                    group["lr"] = (cosine_lr(group["initial_lr"], e, epochs) if self.scheduler == "cosine"
                                   else group["initial_lr"])
            steps = []
            for idx in self.batches(n, self.device):
                if self.drop_last and len(idx) < self.batch_size and n >= self.batch_size:
                    continue
                steps.append(self.train_batch(task, idx))
            history.append(steps)
        self.after_task(task)
        return epoch_means(history)

    def forward(self, x, task: Task | None = None, classes=None) -> torch.Tensor:
        """Evaluation logits: the components of the tasks so far; unseen classes at ``-inf`` (class-incremental),
        or the logits masked to the task's classes (task-incremental)."""
        return self._eval_logits(self.model(x), task, classes)

    def train_step(self, x, y, task: Task | None = None) -> torch.Tensor:
        """One step: cross-entropy of the logits masked to the task's classes plus the orthogonality penalty."""
        self.train_mode()
        self.optimizer.zero_grad(set_to_none=True)
        with self.amp.autocast():
            logits, penalty = self.model(x, train=True, penalty=True)
            logits = self._train_logits(logits, task)
            loss = self.criterion(logits, y) + penalty
        self.amp.backward(loss, self.optimizer)
        self.after_backward(x, y, task)
        self.amp.step(self.optimizer)
        self.steps += 1
        return loss.detach()

    def __repr__(self) -> str:
        return (f"CODAPrompt(pool_size={self.pool_size}, prompt_length={self.prompt_length}, n_tasks={self.n_tasks}, "
                f"scenario={self.scenario!r}, lr={self.lr}, epochs={self.epochs})")
