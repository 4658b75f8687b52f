"""HiDe-Prompt: hierarchical decomposition of prompt-based continual learning on a frozen ViT.

**HiDe-Prompt** (``"hide_prompt"``; Wang, Xie, Zhang, Huang, Su and Zhu, NeurIPS 2023, "Hierarchical
Decomposition of Prompt-Based Continual Learning: Rethinking Obscured Sub-optimality"). EDGE
(AIGNLAI/EDGE, commit ``a60c1179cf762e8c1197ab876a3c06db3a49b639``) holds no copy or config of it
(its PILOT tree has L2P, CODA-Prompt, EASE, MOS, RanPAC, ... but no HiDe-Prompt), so the EDGE
authors ran the authors' own release, ``github.com/thu-ml/HiDe-Prompt`` (commit
``0ed433334ff2cfb206c5e2899651c3044ec85f92``), which this module follows: ``main.py``,
``trainers/tii_trainer.py``, ``trainers/hideprompt_trainer.py``, ``engines/hide_tii_engine.py``,
``engines/hide_promtp_wtp_and_tap_engine.py``, ``vits/hide_prompt_vision_transformer.py``,
``peft/prompt/hide_prompt.py``, ``attention.py``, with the CIFAR-100 configuration
``configs/cifar100_hideprompt_5e.py`` as run by ``training_scripts/train_cifar100_vit.sh``
(supervised ViT-B/16, ``vit_base_patch16_224``). Three parts, each on the one frozen ViT:

- **TII** (task-identity inference; the script's first run, ``--train_inference_task_only``):
  the frozen ViT's [CLS] feature *without prompts* goes through a residual MLP (the reference's
  ``MlpMapping`` with ``original_model_mlp_structure=[2]``: ``LayerNorm(x + fc2(GELU(fc1(x))))``,
  ``d -> 2d -> d``, LayerNorm eps 1e-5) and its own linear head; trained per task for
  ``tii_epochs`` (20) with Adam at ``tii_lr`` (0.0005 x 24 / 256, constant), cross-entropy on the
  logits masked to the task's classes, gradient norm clipped at 1. After a task its per-class
  feature statistics are stored and, from the second task on, the MLP and head are re-trained on
  features sampled from them (TAP below, ``ca_batch`` rows per step = the batch size, as
  ``hide_tii_engine`` draws ``batch_size`` per centroid);
- **WTP** (within-task prediction): one prefix prompt per task (``pool_size`` slots; the task's
  slot is its position in the stream, the reference's ``use_prompt_mask``), ``prompt_length``
  (5) key and value tokens per head prepended to the keys and values of the attention of layers
  ``prompt_layers`` (0-4; ``use_prefix_tune_for_e_prompt``), initialised uniform(-1, 1); the
  head reads the [CLS] token after the final norm (``head_type='token'``). At a new task its
  slot starts as a copy of the previous slot (``shared_prompt_pool``); during training the slot
  used is ``(1 - m) P_t + m mean(P_0..P_{t-1})`` (the mean detached; ``prompt_momentum`` m =
  0.01) and after training ``P_t`` is set to that mix. Loss: cross-entropy of the logits masked
  to the task's classes plus ``reg`` (0.1) times the contrastive regulariser
  :func:`contrastive_loss` (the reference's ``orth_loss``: the batch features and every stored
  class centroid, similarity ``M M^T / 0.8``, each row's target its own index). Adam, the
  prompt at ``lr`` (0.03 x 24 / 256) and the head at ``head_lr_ratio`` (0.1) of it
  (``--larger_prompt_lr``), step decay x0.1 after 30 epochs (``--sched step``, timm's
  ``StepLRScheduler`` stepped with the finished epoch's index: epochs 0-30 at ``lr``, then 0.1
  ``lr``), gradient norm clipped at 1, 50 epochs, batch size 24, optimizer rebuilt per task;
- **TAP** (task-adaptive prediction): after each task the prompted [CLS] features of the task's
  classes (its own prompt) are summarised per class by ``n_centroids`` (10) k-means centroids with
  their per-dimension variances (``ca_storage_efficient_method='multi-centroid'``); from the second
  task on the head alone (the prompts stay) is re-trained for ``ca_epochs`` (30) epochs with SGD
  (``ca_lr`` = 0.005 x 24 / 256, momentum 0.9, weight decay 0: the group's ``args.weight_decay``,
  which argparse resolves to ``--weight-decay``'s 0.0, overrides SGD's 5e-4), cosine annealing,
  each epoch ``crct_num`` steps (``crct_num`` = the classes of the earlier tasks) of ``5 x
  batch_size`` features drawn from ``N(mean, diag(var) + 1e-4)`` of random centroids of the seen
  classes (centroids of zero variance skipped), logits masked to the seen classes.

**Prediction** is two-stage: the TII head's logits (masked to the seen classes) give a class,
whose task's prompt then runs the WTP forward pass and the head gives the logits.

Choices, documented:

- one frozen ViT serves both the TII and the WTP model (the reference builds two copies of the
  same pre-trained weights, both frozen). The reference trains TII for all tasks first and WTP
  second, loading TII's checkpoint of task ``t`` when it evaluates WTP at task ``t``; WTP's
  training never uses TII's output (the training prompt is the task's own), so running both per
  task, TII first, is the same computation. TII's frozen features are computed once per task
  (no data augmentation here, so every epoch would see the same features);
- the heads and the TII MLP are initialised as timm does (``trunc_normal(std=0.02)``, bias 0,
  drawn from the strategy's seed): ``model.head`` is re-initialised in place;
- **prefix layout**: the reference's ``EPrompt`` reshapes the selected prompts
  ``(layers, 2, B, ...)`` to ``(layers, B, 2, ...)`` with ``reshape`` instead of a transpose, so
  for a batch of ``B > 1`` rows row ``b`` gets as key and value prefix the entries ``2b`` and
  ``2b + 1`` of the flattened (key/value, row) grid: at training (all rows the same task) rows
  of the first half get the key prompt twice, rows of the second half the value prompt twice;
  at evaluation a row's prefix comes from other rows' inferred tasks. ``prefix_layout="per_row"``
  (the default) gives each row its own task's key and value prompts, the paper's prefix tuning,
  and an evaluation that does not depend on the batch; ``prefix_layout="authors"`` reproduces the
  reference's layout exactly (checked against it in the tests). For one row both agree;
- the contrastive term is computed in float32 (the reference promotes it to float64 through
  its float64 centroids); evaluation masks the classes not seen so far (the reference's WTP
  logits cover all classes; after the last task they are the same);
- k-means: :func:`kmeans` runs k-means++ seeding (one candidate per centroid; scikit-learn
  tries ``2 + log k`` and keeps the best) from the strategy's CPU generator and ``kmeans_iters``
  (300, scikit-learn's ``max_iter``) Lloyd iterations without a tolerance test (nothing is read
  back), one initialisation; a class with fewer samples than ``n_centroids`` gets one centroid
  per sample (scikit-learn refuses it). TAP draws only the feature rows it trains on (the
  reference draws ``5 x batch_size`` rows for every centroid, shuffles them and uses the first
  ``crct_num x 5 x batch_size``: the same distribution);
- the EDGE paper's pre-trained line (App. E.1.1; notebook 02's ``protocol: paper``) is taken as WTP's
  training (the constructor's optimizer keywords, ``epochs``, ``batch_size`` and ``milestones`` /
  ``lr_decay``: MultiStepLR per epoch, replacing ``lr_decay_epochs`` / ``lr_decay_rate``; the head keeps
  ``head_lr_ratio``); TII and TAP keep their own settings, ``tii_optimizer`` (weight decay 0) and
  ``tii_batch_size`` holding TII as released (by default it shares WTP's ``--opt`` / ``--weight-decay`` /
  ``--batch-size``, as the reference's two runs do);
- only ``top_k=1`` (the config's) is implemented; ``prompt_layers`` beyond the ViT's depth are
  dropped (the reference allocates but never uses them);
- not implemented: data augmentation and the config's other options off in the CIFAR-100 run
  (G-prompts, prompt keys, batch-wise prompts, the covariance/variance statistics, MAE/BEiT's
  AdamW for TAP); the reference's label smoothing option is not used by its own criterion.

The model is a :class:`~clkit.models.vit.ViTBackbone` (:func:`~clkit.models.vit.vit_backbone`):
a ``features`` timm ``VisionTransformer`` (``patch_embed``, ``_pos_embed``, ``blocks`` of timm
``Block`` with ``attn.qkv``, ``norm``) and a linear ``head`` of the ViT's width. Inputs are
images ``(N, C, H, W)``; classification only; needs task boundaries.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .._validate import check_choice, check_int, check_real
from ..device import move
from ..models.vit_prefix import prefix_block_forward
from ._vit_common import FrozenViTMixin, check_step_schedule, check_vit_model, step_lr
from .base import Strategy, Task, _sgd, epoch_means, register

__all__ = ["HiDePrompt", "HiDePromptNet", "contrastive_loss", "kmeans"]

def contrastive_loss(features: torch.Tensor, centroids: torch.Tensor | None = None,
                     temperature: float = 0.8) -> torch.Tensor:
    """HiDe-Prompt's contrastive regulariser (the reference's ``orth_loss`` without its ``reg`` factor).

    ``M`` stacks the stored ``centroids`` and the batch ``features``; the loss is the mean
    cross-entropy of the rows of ``M M^T / temperature`` with each row's own index as target
    (centroid rows included: their gradient flows through the feature columns).

    Examples
    --------
    >>> f = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> round(float(contrastive_loss(f)), 4)        # -log(e^1.25 / (e^1.25 + 1))
    0.2519
    >>> round(float(contrastive_loss(f, torch.tensor([[1.0, 1.0]]))), 4)
    0.7023
    """
    m = features if centroids is None or len(centroids) == 0 else torch.cat([centroids.to(features.dtype), features])
    sim = m @ m.T / temperature
    return F.cross_entropy(sim, torch.arange(len(m), device=m.device))


def _sqdist(x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    return ((x * x).sum(1, keepdim=True) - 2 * x @ c.T + (c * c).sum(1)).clamp_min(0)


def kmeans(x: torch.Tensor, k: int, generator: torch.Generator, iters: int = 300):
    """k-means (k-means++ seeding, ``iters`` Lloyd steps) on ``x`` ``(n, d)``: centroids' means and variances.

    The seeding draws its uniforms from the CPU ``generator`` and moves them to ``x``'s device;
    nothing is read back. An emptied cluster keeps its previous centre and a variance of 0.

    Returns
    -------
    means, variances : Tensor, shape (k, d)
        Per cluster the mean and the per-dimension (population) variance of its members.

    Examples
    --------
    >>> x = torch.tensor([[0.0, 0.0], [0.0, 2.0], [10.0, 0.0], [10.0, 2.0]])
    >>> m, v = kmeans(x, 2, torch.Generator().manual_seed(0))
    >>> sorted(m.tolist()), sorted(v.tolist())
    ([[0.0, 1.0], [10.0, 1.0]], [[0.0, 1.0], [0.0, 1.0]])
    """
    n = len(x)
    u = move(torch.rand(k, generator=generator, dtype=x.dtype), x.device)
    centers = x[(u[:1] * n).long().clamp_max(n - 1)]
    for j in range(1, k):
        cdf = _sqdist(x, centers).min(1).values.cumsum(0)
        pick = torch.searchsorted(cdf, (u[j] * cdf[-1]).reshape(1)).clamp_max(n - 1)
        centers = torch.cat([centers, x[pick]])
    for _ in range(iters + 1):
        onehot = F.one_hot(_sqdist(x, centers).argmin(1), k).to(x.dtype)        # (n, k)
        counts = onehot.sum(0)[:, None]
        means = torch.where(counts > 0, onehot.T @ x / counts.clamp_min(1), centers)
        centers = means
    var = onehot.T @ (x - onehot @ means) ** 2 / counts.clamp_min(1)
    return means, var


class _TIIMlp(nn.Module):
    """The reference's ``MlpMapping(hidden=[ratio])``: ``LayerNorm(x + fc2(GELU(fc1(x))))``."""

    def __init__(self, d: int, ratio: int):
        super().__init__()
        self.fc1, self.fc2, self.norm = nn.Linear(d, d * ratio), nn.Linear(d * ratio, d), nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x + self.fc2(F.gelu(self.fc1(x))))


class HiDePromptNet(nn.Module):
    """A frozen timm ViT with per-task prefix prompts and a head (WTP), and the TII MLP and head (behind :class:`HiDePrompt`).

    Parameters
    ----------
    vit : timm VisionTransformer
        Frozen here (``requires_grad`` off, always in evaluation mode).
    head : nn.Linear
        The WTP/TAP head ``d -> K``; re-initialised ``trunc_normal(0.02)``, bias 0.
    pool_size, prompt_length : int
        Prompt slots (tasks) and prefix tokens per slot.
    prompt_layers : tuple of int
        The blocks that get prefixes.
    tii_ratio : int
        Hidden width of the TII MLP, in multiples of ``d``.
    generator : torch.Generator
        CPU generator of every initial value.
    prefix_layout : {"per_row", "authors"}
        See the module notes.

    Examples
    --------
    >>> from clkit.models.vit import vit_backbone
    >>> v = vit_backbone(num_classes=4, tiny=True, seed=0)
    >>> net = HiDePromptNet(v.features, v.head, 3, 2, (0, 1), 2, torch.Generator().manual_seed(0))
    >>> tuple(net.prompt.shape), net.prompted(torch.zeros(2, 3, 32, 32), torch.tensor([0, 2])).shape
    ((2, 2, 3, 2, 2, 16), torch.Size([2, 32]))
    """

    def __init__(self, vit: nn.Module, head: nn.Linear, pool_size: int, prompt_length: int, prompt_layers,
                 tii_ratio: int, generator: torch.Generator, prefix_layout: str = "per_row"):
        super().__init__()
        d, k = head.in_features, head.out_features
        heads = vit.blocks[0].attn.num_heads
        self.vit, self.head = vit, head
        self.vit.requires_grad_(False)
        self.vit.eval()
        self.prompt_layers = tuple(prompt_layers)
        self.prefix_layout = prefix_layout
        shape = (len(self.prompt_layers), 2, pool_size, prompt_length, heads, d // heads)
        self.prompt = nn.Parameter(torch.rand(shape, generator=generator) * 2 - 1)
        self.tii_mlp = _TIIMlp(d, tii_ratio)
        self.tii_head = nn.Linear(d, k)
        with torch.no_grad():
            for lin in (self.tii_mlp.fc1, self.tii_mlp.fc2, self.tii_head, self.head):
                nn.init.trunc_normal_(lin.weight, std=0.02, a=-2.0, b=2.0, generator=generator)
                lin.bias.zero_()

    def train(self, mode: bool = True):
        super().train(mode)
        self.vit.eval()
        return self

    def cls(self, x) -> torch.Tensor:
        """The frozen ViT's [CLS] feature without prompts (after the final norm), no gradient."""
        with torch.no_grad():
            return self.vit(x)

    def tii(self, feats) -> torch.Tensor:
        """TII logits of unprompted [CLS] features."""
        return self.tii_head(self.tii_mlp(feats))

    def prompted(self, x, slots: torch.Tensor, momentum: float = 0.0, slot: int | None = None) -> torch.Tensor:
        """The [CLS] feature after the final norm with each row's prefix prompt, ``(N, d)``.

        ``slots`` ``(N,)`` gives each row's slot; ``momentum > 0`` needs every row at the one
        ``slot`` (an int ``> 0``) and mixes it with the detached mean of the earlier slots."""
        vit = self.vit
        tokens = vit._pos_embed(vit.patch_embed(x))
        tokens = getattr(vit, "norm_pre", nn.Identity())(tokens)
        p = self.prompt[:, :, slots]                                        # (layers, 2, B, L, H, hd)
        if momentum > 0:
            old = self.prompt[:, :, :slot].detach().mean(2, keepdim=True)
            p = (1 - momentum) * p + momentum * old
        n_layers, _, b = p.shape[:3]
        if self.prefix_layout == "authors":
            p = p.reshape(n_layers, b, 2, *p.shape[3:]).transpose(1, 2)    # the reference's reshape
        p = p.flatten(-2)                                                   # (layers, 2, B, L, d): heads side by side
        for i, blk in enumerate(vit.blocks):
            if i in self.prompt_layers:
                j = self.prompt_layers.index(i)
                tokens = prefix_block_forward(blk, tokens, p[j, 0], p[j, 1])
            else:
                tokens = blk(tokens)
        out = vit.norm(tokens)[:, 0]
        return getattr(vit, "fc_norm", nn.Identity())(out)


@register("hide_prompt")
class HiDePrompt(FrozenViTMixin, Strategy):
    """HiDe-Prompt: task-identity inference on frozen features, per-task prefix prompts, a head re-aligned on class statistics.

    Parameters
    ----------
    model : ViTBackbone
        A ``features`` timm ``VisionTransformer`` (frozen) and a linear ``head`` (``K`` classes).
    prompt_length : int, default 5
        Prefix tokens per slot and layer (the script's ``--length 5``).
    pool_size : int, default 10
        Prompt slots; the stream may have at most this many tasks (``--size``).
    prompt_layers : tuple of int, default (0, 1, 2, 3, 4)
        Blocks with prefixes (``e_prompt_layer_idx``); those beyond the depth are dropped.
    prompt_momentum : float, default 0.01
        ``m`` of the prompt mixing (``--prompt_momentum``), in ``[0, 1)``.
    reg : float, default 0.1
        Weight of :func:`contrastive_loss` (``--reg``).
    temperature : float, default 0.8
        Of :func:`contrastive_loss` (hard-coded in the reference).
    head_lr_ratio : float, default 0.1
        The head's learning rate over the prompts' (``--larger_prompt_lr``).
    lr_decay_epochs, lr_decay_rate : int, float, default 30, 0.1
        WTP's step schedule (``--decay-epochs``, ``--decay-rate``); ``lr_decay_rate=1``: constant.
    milestones, lr_decay : list of int or None, float, default None, 0.1
        WTP's MultiStepLR (x ``lr_decay`` after each milestone epoch); given, it replaces ``lr_decay_epochs``.
    clip_grad : float or None, default 1.0
        Gradient-norm clipping of WTP and TII steps (``--clip-grad``).
    tii_epochs : int, default 20
        TII epochs per task (the first script run's ``--epochs``).
    tii_lr : float, default 4.6875e-5
        TII's learning rate: 0.0005 x 24 / 256 (``--lr 0.0005`` scaled by the batch size).
    tii_optimizer, tii_batch_size : {"adam", "sgd", "adamw"}, int, optional
        TII's optimizer at weight decay 0 and minibatch; default the constructor's (its ``weight_decay``).
    tii_mlp_ratio : int, default 2
        TII MLP width in multiples of ``d`` (``--original_model_mlp_structure``).
    ca_epochs : int, default 30
        TAP epochs (``--crct_epochs``), for TII and WTP alike.
    ca_lr : float, default 4.6875e-4
        TAP's SGD learning rate: 0.005 x 24 / 256 (``--ca_lr`` scaled).
    ca_batch, tii_ca_batch : int, optional
        TAP rows per step for WTP and TII: default ``5 * batch_size`` and ``batch_size``.
    n_centroids : int, default 10
        Centroids per class (``--n_centroids``).
    kmeans_iters : int, default 300
        Lloyd iterations of :func:`kmeans`.
    prefix_layout : {"per_row", "authors"}, default "per_row"
        See the module notes.
    **kwargs
        Those of :class:`~clkit.strategies.Strategy`, with the reference's defaults
        ``optimizer="adam"``, ``lr=0.0028125`` (0.03 x 24 / 256, the prompts'), ``epochs=50``,
        ``batch_size=24``; ``seed`` also draws every initial value.

    Examples
    --------
    >>> from clkit.models.vit import vit_backbone
    >>> s = HiDePrompt(vit_backbone(num_classes=4, tiny=True, seed=0), epochs=1, tii_epochs=1, ca_epochs=1,
    ...                n_centroids=2, batch_size=8, kmeans_iters=5)
    >>> g = torch.Generator().manual_seed(0)
    >>> _ = s.train_task(Task(torch.randn(16, 3, 32, 32, generator=g), torch.tensor([0, 1] * 8), task_id=0))
    >>> s.predict(torch.randn(3, 3, 32, 32, generator=g)).isinf().sum(1).tolist()   # classes 2, 3 unseen
    [2, 2, 2]
    >>> HiDePrompt(vit_backbone(num_classes=4, tiny=True, seed=0), prompt_momentum=1.0)
    Traceback (most recent call last):
    ...
    ValueError: prompt_momentum must be a number in [0, 1), got 1.0
    """

    task_free = False
    supports_regression = False
    needs_vit_model = True

    def __init__(self, model, *, prompt_length: int = 5, pool_size: int = 10, prompt_layers=(0, 1, 2, 3, 4),
                 prompt_momentum: float = 0.01, reg: float = 0.1, temperature: float = 0.8,
                 head_lr_ratio: float = 0.1, lr_decay_epochs: int = 30, lr_decay_rate: float = 0.1,
                 clip_grad: float | None = 1.0, tii_epochs: int = 20, tii_lr: float = 0.0005 * 24 / 256,
                 tii_mlp_ratio: int = 2, ca_epochs: int = 30, ca_lr: float = 0.005 * 24 / 256,
                 ca_batch: int | None = None, tii_ca_batch: int | None = None, n_centroids: int = 10,
                 kmeans_iters: int = 300, prefix_layout: str = "per_row", milestones=None, lr_decay: float = 0.1,
                 tii_optimizer: str | None = None, tii_batch_size: int | None = None, **kwargs):
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        check_vit_model(model, qkv=True)
        self.prompt_length = check_int("prompt_length", prompt_length, low=1)
        self.pool_size = check_int("pool_size", pool_size, low=1)
        if not isinstance(prompt_layers, (tuple, list)) or not prompt_layers:
            raise ValueError(f"prompt_layers must be a non-empty tuple of block indices, got {prompt_layers!r}")
        depth = len(model.features.blocks)
        layers = tuple(check_int("prompt_layers", i, low=0) for i in prompt_layers)
        self.prompt_layers = tuple(i for i in layers if i < depth)
        if not self.prompt_layers:
            raise ValueError(f"prompt_layers must name a block of the ViT (0 ... {depth - 1}), got {prompt_layers!r}")
        self.prompt_momentum = check_real("prompt_momentum", prompt_momentum, low=0, high=1, high_open=True)
        self.reg = check_real("reg", reg, low=0)
        self.temperature = check_real("temperature", temperature, low=0, low_open=True)
        self.head_lr_ratio = check_real("head_lr_ratio", head_lr_ratio, low=0)
        self.lr_decay_epochs = check_int("lr_decay_epochs", lr_decay_epochs, low=1)
        self.lr_decay_rate = check_real("lr_decay_rate", lr_decay_rate, low=0, low_open=True)
        self.milestones, self.lr_decay = check_step_schedule(milestones, lr_decay)
        self.tii_optimizer = (None if tii_optimizer is None
                              else check_choice("tii_optimizer", tii_optimizer, ["adam", "sgd", "adamw"]))
        self._tii_batch = None if tii_batch_size is None else check_int("tii_batch_size", tii_batch_size, low=1)
        self.clip_grad = None if clip_grad is None else check_real("clip_grad", clip_grad, low=0, low_open=True)
        self.tii_epochs = check_int("tii_epochs", tii_epochs, low=0)
        self.tii_lr = check_real("tii_lr", tii_lr, low=0, low_open=True)
        self.tii_mlp_ratio = check_int("tii_mlp_ratio", tii_mlp_ratio, low=1)
        self.ca_epochs = check_int("ca_epochs", ca_epochs, low=0)
        self.ca_lr = check_real("ca_lr", ca_lr, low=0, low_open=True)
        self._ca_batch = None if ca_batch is None else check_int("ca_batch", ca_batch, low=1)
        self._tii_ca_batch = None if tii_ca_batch is None else check_int("tii_ca_batch", tii_ca_batch, low=1)
        self.n_centroids = check_int("n_centroids", n_centroids, low=1)
        self.kmeans_iters = check_int("kmeans_iters", kmeans_iters, low=0)
        self.prefix_layout = check_choice("prefix_layout", prefix_layout, ["per_row", "authors"])
        if kwargs.get("loss", "cross_entropy") != "cross_entropy":
            raise ValueError(f"strategy 'hide_prompt' is classification only: loss must be 'cross_entropy', "
                             f"got {kwargs['loss']!r}")
        kwargs = {"optimizer": "adam", "lr": 0.03 * 24 / 256, "epochs": 50, "batch_size": 24, **kwargs}
        seed = check_int("seed", kwargs.get("seed", 0))
        net = HiDePromptNet(model.features, model.head, self.pool_size, self.prompt_length, self.prompt_layers,
                            self.tii_mlp_ratio, torch.Generator().manual_seed(seed), self.prefix_layout)
        self.num_classes = model.head.out_features
        super().__init__(net, **kwargs)
        self.ca_batch = self._ca_batch or 5 * self.batch_size
        self.tii_ca_batch = self._tii_ca_batch or self.batch_size
        self.tii_batch_size = self._tii_batch or self.batch_size
        self.slots: dict[int, int] = {}                       # task_id -> prompt slot
        self._class_slot = move(torch.zeros(self.num_classes, dtype=torch.long), self.device)
        self._seen_mask: torch.Tensor | None = None
        self._train_mask: torch.Tensor | None = None
        self._prev_classes = 0                                # classes of the earlier tasks (TAP's crct_num)
        self._stats = {"tii": [], "wtp": []}                  # (means, variances, labels) per class
        self._centroids: torch.Tensor | None = None           # WTP centroid means for the contrastive term
        self._slot, self._new, self._task_classes = 0, False, None

    # ------------------------------------------------------------------ set-up
    def _optim(self, groups):
        """The constructor's optimizer kind over ``groups`` (each with its own ``lr``)."""
        return Strategy.make_optimizer(self, groups)

    def make_optimizer(self, params):
        """The constructor's optimizer over WTP's parameters: the prompts at ``lr``, the head at ``head_lr_ratio * lr``."""
        net = self.model
        return self._optim([{"params": [net.prompt], "lr": self.lr},
                            {"params": list(net.head.parameters()), "lr": self.lr * self.head_lr_ratio}])

    # frozen_modules (the ViT): FrozenViTMixin's
    def _mask(self, classes) -> torch.Tensor:
        """FrozenViTMixin's mask, classes outside the head ignored."""
        return super()._mask(c for c in classes if 0 <= int(c) < self.num_classes)

    def observe(self, x, y, task: Task | None = None) -> float:
        """Refused: HiDe-Prompt needs task boundaries (``task_free = False``); train it with ``train_task``."""
        raise ValueError("strategy 'hide_prompt' needs task boundaries (task_free = False); train it with train_task")

    # ------------------------------------------------------------------ task loop
    def before_task(self, task: Task) -> None:
        """Slot, masks, a fresh optimizer, the prompt copy from the previous slot, then TII's training, statistics and TAP."""
        self._check_classes(task, "HiDe-Prompt")
        self._new = task.task_id not in self.slots
        if self._new:
            if len(self.slots) >= self.pool_size:
                raise ValueError(f"pool_size ({self.pool_size}) prompt slots are all used: task {task.task_id} "
                                 f"would be task number {len(self.slots) + 1}; raise pool_size")
            self.slots[task.task_id] = len(self.slots)
        self._slot = self.slots[task.task_id]
        self._class_slot[list(task.classes)] = self._slot
        self._seen_mask = self._mask(self._seen_classes)
        self._train_mask = self._mask(task.classes)
        self.optimizer = self.make_optimizer(None)
        if self._new and self._slot > 0:
            with torch.no_grad():
                self.model.prompt[:, :, self._slot] = self.model.prompt[:, :, self._slot - 1]
        if self._new:
            self._train_tii(task)

    def _features(self, x, fn, bs: int = 256) -> torch.Tensor:
        with torch.no_grad():
            return torch.cat([fn(x[s:s + bs]) for s in range(0, len(x), bs)])

    def _clip(self, params) -> None:
        if self.clip_grad is not None:
            torch.nn.utils.clip_grad_norm_([p for p in params if p.grad is not None], self.clip_grad)

    def _tii_optim(self, groups):
        """TII's optimizer: ``tii_optimizer`` at weight decay 0, or (``None``) the constructor's (:meth:`_optim`)."""
        kind = self.tii_optimizer
        if kind is None:
            return self._optim(groups)
        if kind == "sgd":
            return _sgd(groups, lr=self.tii_lr, momentum=self.momentum, weight_decay=0.0)
        return (torch.optim.Adam if kind == "adam" else torch.optim.AdamW)(groups, lr=self.tii_lr, weight_decay=0.0)

    def _tii_batches(self, n: int):
        """TII's minibatch rows: :meth:`batches`' draws at ``tii_batch_size``."""
        perm = move(torch.randperm(n, generator=self.generator), self.device)
        for start in range(0, n, self.tii_batch_size):
            yield perm[start:start + self.tii_batch_size]

    def _train_tii(self, task: Task) -> None:
        """TII: ``tii_epochs`` on the task's frozen features (logits masked to the task), statistics, TAP."""
        net = self.model
        feats = self._features(task.x, net.cls)
        params = list(net.tii_mlp.parameters()) + list(net.tii_head.parameters())
        opt = self._tii_optim([{"params": params, "lr": self.tii_lr}])
        for _ in range(self.tii_epochs):
            for idx in self._tii_batches(len(feats)):
                opt.zero_grad(set_to_none=True)
                loss = F.cross_entropy(net.tii(feats[idx]) + self._train_mask, task.y[idx])
                loss.backward()
                self._clip(params)
                opt.step()
        opt.zero_grad(set_to_none=True)
        self._store_stats("tii", feats, task)
        if self._slot > 0:
            self._tap("tii", params, net.tii, self.tii_ca_batch)

    def train_task(self, task: Task, epochs: int | None = None) -> list[float]:
        """WTP's epochs with the step schedule (``lr * lr_decay_rate ** ((epoch - 1) // lr_decay_epochs)``, or with
        ``milestones`` :func:`~clkit.strategies._vit_common.step_lr`)."""
        task = task.to(self.device)
        epochs = self.begin_task(task, epochs)
        base = [g["lr"] for g in self.optimizer.param_groups]
        history = []
        for e in range(epochs):
            for g, lr in zip(self.optimizer.param_groups, base):
                g["lr"] = (lr * self.lr_decay_rate ** (max(e - 1, 0) // self.lr_decay_epochs) if self.milestones is None
                           else step_lr(lr, e, self.milestones, self.lr_decay))
            history.append([self.train_batch(task, idx) for idx in self.batches(len(task), self.device)])
        self.after_task(task)
        return epoch_means(history)

    def wtp_loss(self, x, y) -> torch.Tensor:
        """WTP's loss on a batch of the current task: masked cross-entropy plus ``reg`` times the contrastive term."""
        momentum = self.prompt_momentum if self._slot > 0 else 0.0
        slots = torch.full((len(y),), self._slot, dtype=torch.long, device=y.device)
        feats = self.model.prompted(x, slots, momentum, self._slot)
        logits = self.model.head(feats) + self._train_mask
        logits = self.mask_logits(logits, self._task_classes)
        return F.cross_entropy(logits, y) + self.reg * contrastive_loss(feats, self._centroids, self.temperature)

    def train_step(self, x, y, task: Task | None = None) -> torch.Tensor:
        """One WTP step: :meth:`wtp_loss`, backward, clipping, the optimizer's step."""
        self.train_mode()
        self._task_classes = task.classes if task is not None else None
        self.optimizer.zero_grad(set_to_none=True)
        with self.amp.autocast():
            loss = self.wtp_loss(x, y)
        self.amp.backward(loss, self.optimizer)
        self._clip([self.model.prompt, *self.model.head.parameters()])   # the WTP model's parameters only
        self.amp.step(self.optimizer)
        self.steps += 1
        return loss.detach()

    def after_task(self, task: Task) -> None:
        """Prompt momentum, WTP statistics with the task's prompt, TAP of the head (from the second task)."""
        net = self.model
        if not self._new:
            return
        self.momentum_update(self._slot)
        slots = torch.full((len(task),), self._slot, dtype=torch.long, device=self.device)
        net.eval()
        feats = self._features(task.x, lambda x: net.prompted(x, slots[:len(x)]))
        self._store_stats("wtp", feats, task)
        self._centroids = torch.cat([m for m, _, _ in self._stats["wtp"]])
        if self._slot > 0:
            self._tap("wtp", list(net.head.parameters()), net.head, self.ca_batch)
        self._prev_classes += len(task.classes)

    @torch.no_grad()
    def momentum_update(self, slot: int) -> None:
        """``P_slot <- (1 - m) P_slot + m mean(P_0 .. P_{slot-1})`` (none for slot 0 or ``m = 0``)."""
        m, p = self.prompt_momentum, self.model.prompt
        if slot > 0 and m > 0:
            p[:, :, slot] = (1 - m) * p[:, :, slot] + m * p[:, :, :slot].mean(2)

    # ------------------------------------------------------------------ statistics and TAP
    def _store_stats(self, which: str, feats: torch.Tensor, task: Task) -> None:
        labels = task.labels_host()
        for c in task.classes:
            rows = [i for i, v in enumerate(labels) if v == c]
            if not rows:
                continue
            f = feats[move(torch.tensor(rows), feats.device)]
            means, var = kmeans(f, min(self.n_centroids, len(rows)), self.generator, self.kmeans_iters)
            lab = torch.full((len(means),), int(c), dtype=torch.long, device=feats.device)
            self._stats[which].append((means, var, lab))

    def _tap(self, which: str, params, head_fn, per_step: int) -> None:
        """TAP: ``ca_epochs`` of SGD (cosine) on features drawn from the stored centroids, seen classes unmasked."""
        means = torch.cat([m for m, _, _ in self._stats[which]])
        var = torch.cat([v for _, v, _ in self._stats[which]])
        labels = torch.cat([c for _, _, c in self._stats[which]])
        invalid = (var.mean(1) == 0).to(means.dtype).repeat_interleave(per_step)
        total, steps = len(means) * per_step, self._prev_classes
        opt = torch.optim.SGD(params, lr=self.ca_lr, momentum=0.9, weight_decay=0.0)
        for epoch in range(self.ca_epochs):
            opt.param_groups[0]["lr"] = self.ca_lr * (1 + math.cos(math.pi * epoch / self.ca_epochs)) / 2
            keys = move(torch.rand(total, generator=self.generator), self.device) + 2 * invalid
            pick = torch.argsort(keys)[:steps * per_step] // per_step
            noise = move(torch.randn(len(pick), means.shape[1], generator=self.generator), self.device)
            feats = means[pick] + (var[pick] + 1e-4).sqrt() * noise
            tgt = labels[pick]
            for s in range(steps):
                sl = slice(s * per_step, (s + 1) * per_step)
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(head_fn(feats[sl]) + self._seen_mask, tgt[sl]).backward()
                opt.step()
        opt.zero_grad(set_to_none=True)

    # ------------------------------------------------------------------ prediction
    def infer_slots(self, x) -> torch.Tensor:
        """TII: each row's prompt slot, the task of the arg-max class of the TII logits masked to the seen classes."""
        logits = self.model.tii(self.model.cls(x))
        if self._seen_mask is not None:
            logits = logits + self._seen_mask
        return self._class_slot[logits.argmax(1)]

    def forward(self, x, task: Task | None = None, classes=None) -> torch.Tensor:
        """Two-stage logits: TII's slot per row (the given task's in the task-incremental scenario), then WTP's head;
        classes not seen so far at ``-inf``."""
        if self.scenario == "task" and task is not None and task.task_id in self.slots:
            slots = torch.full((len(x),), self.slots[task.task_id], dtype=torch.long, device=self.device)
        else:
            slots = self.infer_slots(x)
        return self._eval_logits(self.model.head(self.model.prompted(x, slots)), task, classes)

    def __repr__(self) -> str:
        return (f"HiDePrompt(prompt_length={self.prompt_length}, pool_size={self.pool_size}, reg={self.reg}, "
                f"scenario={self.scenario!r}, lr={self.lr}, epochs={self.epochs})")
