"""L2P: learning to prompt a frozen pre-trained vision transformer.

**L2P** (``"l2p"``; Wang, Zhang, Lee, Zhang, Sun, Ren, Su, Perot, Dy and Pfister, CVPR 2022,
"Learning to Prompt for Continual Learning"), checked against the PyTorch reimplementation the
authors endorse (``github.com/JH-LEE-KR/l2p-pytorch``: ``prompt.py``, ``vision_transformer.py``,
``engine.py``, ``configs/cifar100_l2p.py``):

- the pre-trained ViT is frozen (``requires_grad`` off, always in evaluation mode); only the
  prompt pool, its keys and the linear head are trained;
- the **query** ``q(x)`` is the frozen ViT's own output on the image without prompts: its
  [CLS] token after the final norm (the reference's ``embedding_key='cls'``, the
  ``pre_logits`` of a second, unprompted copy of the model);
- the **pool** holds ``pool_size`` prompts of ``prompt_length`` tokens of width ``d``, each with
  a learnable key ``k_i`` of width ``d``; prompts and keys are initialised uniform(-1, 1) (the
  reference's ``prompt_init='uniform'``, ``prompt_key_init='uniform'``), drawn from a CPU
  generator seeded with the strategy's ``seed`` (the same pool on every device);
- **selection**: the ``top_k`` keys of largest cosine similarity between the l2-normalised
  query and the l2-normalised keys (:func:`select_prompts`); their prompts, concatenated in
  that order, are inserted between the [CLS] token and the patch tokens (the sequence is
  ``[CLS, prompts, patches]`` as in the reference); each prompt token gets the [CLS] token's
  position embedding (the reference extends the position embedding for the prompt tokens
  with copies of the [CLS] entry when it loads the pre-trained weights; a ViT without a class
  token, or with ``no_embed_class``, adds none);
- the **classifier** (the reference's ``head_type='prompt'``, its default) reads the mean of
  the prompt tokens' outputs after the final norm (and the ViT's ``fc_norm``, an identity for
  token pooling), through the model's ``head``;
- **loss**: cross-entropy plus ``pull_constraint`` (0.1, the reference configs'
  ``pull_constraint_coeff``) times the surrogate ``sum_{i selected} (1 - cos(q(x), k_i))``
  averaged over the batch. The reference subtracts ``0.1 * sum cos / B`` (``reduce_sim``: the
  sum over the batch and the selected keys divided by the batch size); the two differ by the
  constant ``0.1 * top_k``, so the gradients are the same and the reported loss is the paper's
  ``1 - cos`` form (never negative).

Choices, documented:

- ``train_mask="task"`` (the default, the reference's ``train_mask=True``): at training the
  logits of every class *not of the current task* are ``-inf``; ``train_mask="seen"`` masks only
  the classes not seen so far (the rest of clkit's class-incremental convention, e.g. DER).
  At evaluation (class-incremental) the logits of classes not seen so far are ``-inf`` (before
  the first task every logit is the head's); the task-incremental scenario masks to the task's
  classes instead, as for every strategy;
- ``batchwise_prompt=True`` (the reference's default): at training every row of a batch uses
  the ``top_k`` prompt ids chosen most often by the rows of the batch (ties: the smaller id;
  the reference's ``torch.topk`` over the counts leaves ties unspecified). **At evaluation the
  selection is always per row**: the reference applies the batch-wise choice at test time too,
  which makes a row's prediction depend on the other rows of its batch; a clkit evaluation
  must not depend on the batch size;
- optimizer: the :class:`~clkit.strategies.Strategy` default (SGD, ``lr``, ``momentum``);
  the reference's Adam is ``optimizer="adam"`` (it used ``lr = 0.03 * batch_size / 256`` with
  batch size 16, betas (0.9, 0.999)) and its gradient clipping ``clip_grad=1.0``. The optimizer
  is rebuilt at each new task (the reference's ``reinit_optimizer=True``); the rate is constant
  unless ``milestones`` is given: then ``MultiStepLR(milestones, gamma=lr_decay)`` stepped once after
  each epoch, restarted with each task's optimizer (:func:`~clkit.strategies._vit_common.step_lr`; the
  EDGE paper's pre-trained line, App. E.1.1, notebook 02's ``protocol: paper``);
- not implemented: the reference's options off by default in its configs (``use_prompt_mask``,
  shared pools, prefix tuning, other head types), data augmentation and label smoothing.

The model is a :class:`~clkit.models.vit.ViTBackbone` (:func:`~clkit.models.vit.vit_backbone`)
or anything with a ``features`` timm ``VisionTransformer`` (``patch_embed``, ``_pos_embed``,
``blocks``, ``norm``) and a linear ``head`` with ``in_features`` equal to the ViT's width.
Inputs are images ``(N, C, H, W)``. Classification only; needs task boundaries. Cost: two
passes of the ViT per batch (the query pass without gradients, the prompted pass with
gradients flowing to the prompts through the frozen blocks).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .._validate import check_choice, check_int, check_real
from ._vit_common import FrozenViTMixin, check_step_schedule, check_vit_model, step_lr
from .base import Strategy, Task, epoch_means, register

__all__ = ["L2P", "L2PNet", "select_prompts"]

def select_prompts(query: torch.Tensor, keys: torch.Tensor, top_k: int, *, batchwise: bool = False):
    """L2P's key-query matching: the ``top_k`` keys closest (cosine) to each query, and the surrogate loss.

    Parameters
    ----------
    query : Tensor, shape (N, d)
        The queries ``q(x)`` (normalised here).
    keys : Tensor, shape (P, d)
        The pool's keys (normalised here).
    top_k : int
        Prompts selected per row, ``1 <= top_k <= P``.
    batchwise : bool
        Every row gets the ``top_k`` ids selected most often by the rows of the batch (most
        frequent first; ties go to the smaller id).

    Returns
    -------
    idx : Tensor, shape (N, top_k), int64
        Selected prompt ids, most similar (or most frequent) first.
    surrogate : Tensor, 0-dim
        ``sum_k (1 - cos(q, k_idx))`` averaged over the rows (differentiable in ``keys``).

    Examples
    --------
    >>> keys = torch.eye(4)
    >>> q = torch.tensor([[0.1, 0.6, 0.0, 0.8]])          # closest to key 3, then key 1
    >>> idx, loss = select_prompts(q, keys, 2)
    >>> idx.tolist(), round(float(loss), 4)                # 2 - (0.8 + 0.6) / sqrt(1.01)
    ([[3, 1]], 0.6069)
    >>> q = torch.tensor([[1.0, 0.5, 0, 0], [0, 1.0, 0, 0.5], [0, 0.5, 0, 1.0]])   # ids [0, 1], [1, 3], [3, 1]
    >>> select_prompts(q, keys, 2, batchwise=True)[0].tolist()   # id 1 three times, 3 twice, 0 once
    [[1, 3], [1, 3], [1, 3]]
    """
    pool = keys.shape[0]
    qn = F.normalize(query.float(), dim=1)
    kn = F.normalize(keys.float(), dim=1)
    sim = qn @ kn.T                                                      # (N, P)
    idx = torch.topk(sim, top_k, dim=1).indices                         # (N, top_k)
    if batchwise:
        counts = F.one_hot(idx, pool).sum((0, 1))                        # (P,), static shape: no read
        order = counts * pool - torch.arange(pool, device=counts.device)   # ties: the smaller id first
        idx = torch.topk(order, top_k).indices.expand(len(idx), -1)
    chosen = sim.gather(1, idx)                                          # (N, top_k) cosines
    surrogate = (1.0 - chosen).sum() / max(len(idx), 1)
    return idx, surrogate


class L2PNet(nn.Module):
    """A frozen timm ViT with an L2P prompt pool and a linear head (behind :class:`L2P`).

    Parameters
    ----------
    vit : timm.models.vision_transformer.VisionTransformer
        Frozen here (``requires_grad`` off; it stays in evaluation mode whatever ``train()`` is called with).
    head : nn.Linear
        ``d -> num_classes``; trained.
    pool_size, prompt_length, top_k : int
        ``P`` prompts of ``L`` tokens, ``top_k`` selected per row.
    generator : torch.Generator
        A CPU generator for the uniform(-1, 1) prompts and keys.

    Attributes
    ----------
    prompts : nn.Parameter, shape (P, L, d)
    keys : nn.Parameter, shape (P, d)

    Examples
    --------
    >>> from clkit.models.vit import vit_backbone
    >>> net = vit_backbone(num_classes=4, tiny=True, seed=0)
    >>> l2p = L2PNet(net.features, net.head, 6, 2, 3, torch.Generator().manual_seed(0))
    >>> tuple(l2p.prompts.shape), tuple(l2p.keys.shape), l2p(torch.zeros(2, 3, 32, 32)).shape
    ((6, 2, 32), (6, 32), torch.Size([2, 4]))
    >>> l2p.train().vit.training
    False
    """

    def __init__(self, vit: nn.Module, head: nn.Linear, pool_size: int, prompt_length: int, top_k: int,
                 generator: torch.Generator):
        super().__init__()
        d = head.in_features
        self.vit = vit
        self.head = head
        self.pool_size, self.prompt_length, self.top_k = pool_size, prompt_length, top_k
        self.vit.requires_grad_(False)
        self.vit.eval()
        self.prompts = nn.Parameter(torch.rand(pool_size, prompt_length, d, generator=generator) * 2 - 1)
        self.keys = nn.Parameter(torch.rand(pool_size, d, generator=generator) * 2 - 1)

    def train(self, mode: bool = True):
        super().train(mode)
        self.vit.eval()
        return self

    def query(self, x) -> torch.Tensor:
        """``q(x)``: the frozen ViT's [CLS] feature without prompts, ``(N, d)``, no gradient."""
        with torch.no_grad():
            return self.vit(x)

    def _prompt_pos(self):
        vit = self.vit
        if getattr(vit, "cls_token", None) is None or getattr(vit, "pos_embed", None) is None \
                or getattr(vit, "no_embed_class", False):
            return None
        return vit.pos_embed[:, :1]

    def prompted(self, x, idx: torch.Tensor) -> torch.Tensor:
        """The mean of the selected prompts' output tokens after the final norm, ``(N, d)``."""
        vit = self.vit
        tokens = vit._pos_embed(vit.patch_embed(x))                          # [CLS (, reg), patches]
        n, k = idx.shape
        prompt = self.prompts[idx].reshape(n, k * self.prompt_length, -1)   # (N, k L, d)
        pos = self._prompt_pos()
        if pos is not None:
            prompt = prompt + pos
        prefix = getattr(vit, "num_prefix_tokens", 1 if getattr(vit, "cls_token", None) is not None else 0)
        prompt = prompt.to(tokens.dtype)
        tokens = torch.cat([tokens[:, :prefix], prompt, tokens[:, prefix:]], dim=1)
        norm_pre = getattr(vit, "norm_pre", None)
        if norm_pre is not None:
            tokens = norm_pre(tokens)
        out = vit.norm(vit.blocks(tokens))
        pooled = out[:, prefix:prefix + k * self.prompt_length].mean(dim=1)
        fc_norm = getattr(vit, "fc_norm", None)
        return fc_norm(pooled) if fc_norm is not None else pooled

    def forward(self, x, batchwise: bool = False, surrogate: bool = False):
        """Logits ``(N, K)``; with ``surrogate=True`` also the pull-constraint surrogate and the ids."""
        idx, loss = select_prompts(self.query(x), self.keys, self.top_k, batchwise=batchwise)
        logits = self.head(self.prompted(x, idx))
        return (logits, loss, idx) if surrogate else logits


@register("l2p")
class L2P(FrozenViTMixin, Strategy):
    """L2P: a frozen ViT, a pool of prompts chosen per image by key-query matching, a trained head.

    Parameters
    ----------
    model : ViTBackbone
        A ``features`` timm ``VisionTransformer`` (frozen) and a linear ``head`` (trained);
        ``head.out_features`` is the number of classes of the stream.
    pool_size : int, default 10
        Prompts in the pool (``>= top_k``).
    prompt_length : int, default 5
        Tokens per prompt.
    top_k : int, default 5
        Prompts selected per image, ``1 <= top_k <= pool_size``.
    pull_constraint : float, default 0.1
        Weight of the surrogate ``sum_selected (1 - cos(q, k))`` (batch mean), ``>= 0``.
    batchwise_prompt : bool, default True
        At training, every row uses the batch's most frequent ``top_k`` ids (evaluation is
        always per row; see the module notes).
    train_mask : {"task", "seen"}, default "task"
        Training logits masked to the current task's classes (the reference) or to the
        classes seen so far (clkit's class-incremental convention).
    clip_grad : float, optional
        Clip the gradients' total norm to this value (the reference: 1.0); ``None``: no clipping.
    milestones : list of int, optional
        Epochs (0-based, increasing) after which the rate is multiplied by ``lr_decay`` in every task
        (MultiStepLR stepped per epoch); ``None`` (default): a constant rate, as the reference.
    lr_decay : float, default 0.1
        The factor at each milestone.
    **kwargs
        Those of :class:`~clkit.strategies.Strategy` (``seed`` also draws the prompts and keys).

    Attributes
    ----------
    last_ids : Tensor, shape (B, top_k)
        The prompt ids of the latest training batch.

    Examples
    --------
    >>> from clkit.models.vit import vit_backbone
    >>> s = L2P(vit_backbone(num_classes=4, tiny=True, seed=0), pool_size=4, prompt_length=2, top_k=2,
    ...         lr=0.05, batch_size=8)
    >>> g = torch.Generator().manual_seed(0)
    >>> _ = s.train_task(Task(torch.randn(16, 3, 32, 32, generator=g), torch.tensor([0, 1] * 8), task_id=0))
    >>> s.predict(torch.randn(3, 3, 32, 32, generator=g)).isinf().sum(1).tolist()   # classes 2, 3 unseen
    [2, 2, 2]
    >>> L2P(vit_backbone(num_classes=4, tiny=True, seed=0), pool_size=3, top_k=5)
    Traceback (most recent call last):
    ...
    ValueError: top_k must be <= pool_size (3), got 5
    """

    task_free = False
    supports_regression = False
    #: the model must be a timm ViT (a :class:`~clkit.models.vit.ViTBackbone`): notebooks whose networks are
    #: CNNs or MLPs (04, EDGE's Fashion-MNIST setting) do not offer it
    needs_vit_model = True

    def __init__(self, model, *, pool_size: int = 10, prompt_length: int = 5, top_k: int = 5,
                 pull_constraint: float = 0.1, batchwise_prompt: bool = True, train_mask: str = "task",
                 clip_grad: float | None = None, milestones=None, lr_decay: float = 0.1, **kwargs):
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        check_vit_model(model)
        self.milestones, self.lr_decay = check_step_schedule(milestones, lr_decay)
        self.pool_size = check_int("pool_size", pool_size, low=1)
        self.prompt_length = check_int("prompt_length", prompt_length, low=1)
        self.top_k = check_int("top_k", top_k, low=1)
        if self.top_k > self.pool_size:
            raise ValueError(f"top_k must be <= pool_size ({self.pool_size}), got {self.top_k}")
        self.pull_constraint = check_real("pull_constraint", pull_constraint, low=0)
        if not isinstance(batchwise_prompt, bool):
            raise ValueError(f"batchwise_prompt must be True or False, got {batchwise_prompt!r}")
        self.batchwise_prompt = batchwise_prompt
        self.train_mask = check_choice("train_mask", train_mask, ["task", "seen"])
        self.clip_grad = None if clip_grad is None else check_real("clip_grad", clip_grad, low=0, low_open=True)
        if kwargs.get("loss", "cross_entropy") != "cross_entropy":
            raise ValueError(f"strategy 'l2p' is classification only: loss must be 'cross_entropy', "
                             f"got {kwargs['loss']!r}")
        seed = check_int("seed", kwargs.get("seed", 0))
        net = L2PNet(model.features, model.head, self.pool_size, self.prompt_length, self.top_k,
                     torch.Generator().manual_seed(seed))
        self.num_classes = model.head.out_features
        super().__init__(net, **kwargs)
        self.trained_tasks: list[int] = []
        self._train_mask: torch.Tensor | None = None   # added to the training logits (0 / -inf)
        self._seen_mask: torch.Tensor | None = None    # added to the evaluation logits
        self.last_ids: torch.Tensor | None = None

    # ------------------------------------------------------------------ set-up
    # make_optimizer (trainable parameters: prompts, keys, head), frozen_modules (the ViT), _mask:
    # FrozenViTMixin's
    def before_task(self, task: Task) -> None:
        self._check_classes(task, "L2P")
        seen = self._seen_classes   # the task's classes included (registered before this hook)
        self._seen_mask = self._mask(seen)
        self._train_mask = self._mask(task.classes if self.train_mask == "task" else seen)
        if task.task_id not in self.trained_tasks:   # the reference re-initialises the optimizer per task
            self.trained_tasks.append(task.task_id)
            self.optimizer = self.make_optimizer(self.model.parameters())

    def train_task(self, task: Task, epochs: int | None = None) -> list[float]:
        """Train on a task (``epochs`` passes); with ``milestones`` the rate of each epoch is
        :func:`~clkit.strategies._vit_common.step_lr` of ``lr``. Returns the mean loss per epoch."""
        if self.milestones is None:
            return super().train_task(task, epochs)
        task = task.to(self.device)
        epochs = self.begin_task(task, epochs)
        base = [g.setdefault("initial_lr", g["lr"]) for g in self.optimizer.param_groups]  # a task trained on
        history = []
        for e in range(epochs):
            for g, lr in zip(self.optimizer.param_groups, base):
                g["lr"] = step_lr(lr, e, self.milestones, self.lr_decay)
            history.append([self.train_batch(task, idx) for idx in self.batches(len(task), self.device)])
        self.after_task(task)
        return epoch_means(history)

    def observe(self, x, y, task: Task | None = None) -> float:
        """Refused: L2P needs task boundaries (``task_free = False``); train it with ``train_task``."""
        raise ValueError("strategy 'l2p' needs task boundaries (task_free = False); train it with train_task")

    # ------------------------------------------------------------------ forward and step
    def forward(self, x, task: Task | None = None, classes=None) -> torch.Tensor:
        """Evaluation logits: per-row prompt selection; classes not seen so far at ``-inf`` (class-incremental),
        or the logits masked to the task's classes (task-incremental)."""
        return self._eval_logits(self.model(x), task, classes)

    def after_backward(self, x, y, task: Task | None) -> None:
        if self.clip_grad is not None:
            torch.nn.utils.clip_grad_norm_([p for p in self.model.parameters() if p.grad is not None],
                                           self.clip_grad, foreach=True)

    def train_step(self, x, y, task: Task | None = None) -> torch.Tensor:
        """One step: cross-entropy of the (masked) logits plus ``pull_constraint`` times the surrogate."""
        self.train_mode()
        self.optimizer.zero_grad(set_to_none=True)
        with self.amp.autocast():
            logits, surrogate, idx = self.model(x, batchwise=self.batchwise_prompt, surrogate=True)
            logits = self._train_logits(logits, task)
            loss = self.criterion(logits, y) + self.pull_constraint * surrogate
        self.amp.backward(loss, self.optimizer)
        self.after_backward(x, y, task)
        self.amp.step(self.optimizer)
        self.last_ids = idx.detach()
        self.steps += 1
        return loss.detach()

    def __repr__(self) -> str:
        return (f"L2P(pool_size={self.pool_size}, prompt_length={self.prompt_length}, top_k={self.top_k}, "
                f"scenario={self.scenario!r}, lr={self.lr}, epochs={self.epochs})")
