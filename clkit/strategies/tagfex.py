"""TagFex: task-agnostic guided feature expansion (a non-pretrained dynamic network).

**TagFex** (``"tagfex"``; Zheng, Zhou, Ye and Zhan, CVPR 2025, "Task-Agnostic Guided Feature
Expansion for Class-Incremental Learning"), as the PyCIL tree of the EDGE authors runs it
(repository AIGNLAI/EDGE, commit ``a60c1179cf762e8c1197ab876a3c06db3a49b639``:
``PyCIL/models/tagfex.py``, ``PyCIL/utils/inc_net.py:TagFexNet`` and ``TSAttention``,
``PyCIL/exps/tagfex.json``). It is DER (:mod:`clkit.strategies.der`) plus a task-agnostic branch:

- a **task-agnostic (TA) extractor** ``model.ta`` (same architecture as ``features``, its own
  initialisation) with a **projector** (linear ``d -> proj_hidden_dim``, ReLU, linear
  ``-> proj_output_dim``), trained at every task by the InfoNCE loss :func:`info_nce` between
  two views of each row (temperature ``infonce_temp``); it is never frozen;
- **task-specific (TS) extractors** as DER's: at each task after the first a new one is appended
  and the older ones are frozen (weights and batch-norm statistics). The new one's parameters
  are ``f * old_TS + (1 - f) * TA`` (``f = init_interpolation_factor``); its buffers are fresh
  (PyCIL builds a new network and overwrites its *parameters* only: batch-norm statistics start
  at mean 0, variance 1); the unified head over the concatenated TS features and the auxiliary
  head (``|new| + 1`` outputs) are DER's (:class:`~clkit.strategies.der.DERNet`);
- a **merge attention** (:class:`TokenAttention`, PyCIL's ``TSAttention``, ``attn_num_heads``
  heads; queries from the newest TS tokens, keys/values from TA tokens (detached) and TS tokens)
  whose token mean feeds a fresh **merged classifier** over the task's classes (cross-entropy on
  the rows of the task's classes, ``trans_cls_factor``), re-initialised each task;
- a **transfer** term: ``KL(softmax(merged / T) || softmax(logits[:, new] / T))`` (merged logits
  detached, ``T = kd_temp``, PyCIL's ``kl_div(..., reduction="batchmean")``), on the task's rows,
  counted (``transfer_factor``) only when the merged classifier's cross-entropy is below the
  unified head's;
- a **predictor** (linear ``d -> d``) and the TA distillation :func:`info_nce_distill`: the
  frozen previous projector applied to ``predictor(TA(x))`` against the frozen previous TA
  extractor's features, temperature ``infonce_kd_temp``;
- the loss of task 0 is ``CE + contrast_factor * InfoNCE``; of a later task, with
  ``a = |known| / |seen|``, ``CE + aux_factor * CE_aux + contrast_factor * ((1 - a) InfoNCE +
  contrast_kd_factor * a * KD) + trans_cls_factor * CE_merged + transfer_factor * transfer``.
  Every term is computed on the batch of both views stacked (``2B`` rows, view 2 after view 1);
- after each task but the first, DER's weight aligning (:func:`~clkit.strategies.der.weight_align`);
  the memory keeps ``memory_size // num_seen_classes`` rows per class, chosen by herding
  (:func:`~clkit.strategies.icarl.herding`) on the L2-normalised concatenated TS features, as
  PyCIL's ``_construct_exemplar``; the rows of older classes are cut to their first rows;
- prediction is the unified head's logits (PyCIL's ``_eval_cnn``, the CNN accuracy EDGE reports).

Constructor defaults are ``exps/tagfex.json``'s (CIFAR-100): ``memory_size`` 2000,
``init_interpolation_factor`` 0.95, ``infonce_temp`` 0.2, ``kd_temp`` 2, ``infonce_kd_temp``
0.2, ``proj_hidden_dim`` 2048, ``proj_output_dim`` 1024, ``attn_num_heads`` 8,
``contrast_factor`` 1, ``trans_cls_factor`` 1, ``transfer_factor`` 1, ``aux_factor`` 2,
``contrast_kd_factor`` 2.

**Two views.** PyCIL's ``cifar100_aa`` data set returns each training row twice, each through
random crop (4-pixel padding), horizontal flip, colour jitter, AutoAugment and Cutout. A clkit
strategy gets tensors, so the views are made by ``augment``: ``"flip_crop"`` (default) draws a
random 4-pixel-padded crop and a horizontal flip per row of an image batch ``(N, C, H, W)``
(:func:`flip_crop`; zero padding in the input's own, normalised, space) from a CPU generator
seeded from ``seed`` (reproducible on every device) and leaves other inputs unchanged; ``"none"``
uses the rows as both views; a callable ``augment(x, generator) -> x'`` is called twice per batch
(view 1, then view 2). Colour jitter, AutoAugment and Cutout are not reproduced.

**Tokens.** The attention works on spatial tokens (PyCIL: the last feature map, ``(N, H*W, C)``).
When ``features`` is an ``nn.Sequential`` ending in ``AdaptiveAvgPool2d(1), Flatten()`` (clkit's
CNNs) the map before the pooling gives the tokens and its token mean the features; for any other
``features`` (e.g. an MLP) the feature vector is the one token.

Choices against PyCIL, documented:

- the first task trains the base model as given (``features``, ``head``); the TA extractor is a
  copy of ``features`` re-initialised by its modules' ``reset_parameters`` under a generator
  seeded from ``seed`` (:func:`~clkit._seed.torch_seeded`; skipped for a model on ``meta``);
  new layers (heads, projector, predictor, attention) are drawn from the strategy's CPU generator
  with PyCIL's distributions (Kaiming uniform gain 1 and zero bias; Xavier normal; LayerNorm 1/0);
- the merged cross-entropy and the transfer term on a batch with no row of the task's classes are
  0 (PyCIL's mean over no rows is NaN); the ``CE_merged < CE`` test is a ``torch.where`` (no read
  back to the host), which gives the same loss and gradients;
- unseen classes' logits are ``-inf`` (PyCIL's head has rows for seen classes only); one optimizer
  and schedule for every task (PyCIL: 200 epochs at lr 0.1, weight decay 5e-4 on task 0, 170 epochs,
  weight decay 2e-4 later, MultiStep decays); in the task-incremental scenario rows are masked to
  their own task's classes, as DER.

The model needs ``features`` (mapping a batch to ``(N, d)``, the TA copy must accept the same
input) and a linear ``head`` (``d`` inputs, one output per class of the stream); ``d`` must be a
multiple of ``attn_num_heads``. Classification only; needs task boundaries.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._seed import torch_seeded
from .._validate import check_choice, check_int, check_real
from ..device import move
from ._common import TaskAwareStrategy
from .base import Task, _cat, register, take
from .der import DER, _init_linear, expand_heads
from .icarl import herding

__all__ = ["TagFex", "TagFexNet", "TokenAttention", "info_nce", "info_nce_distill", "flip_crop", "tokens"]


def _contrast(a: torch.Tensor, b: torch.Tensor, t: float) -> torch.Tensor:
    """PyCIL's InfoNCE on cosine similarities ``a_i . b_j``: the diagonal left out, the positive of
    row ``i`` the column ``(i + n / 2) mod n``, mean over rows."""
    n = a.shape[0]
    sim = F.cosine_similarity(a[:, None, :], b[None, :, :], dim=-1)
    eye = torch.eye(n, dtype=torch.bool, device=sim.device)
    sim = sim.masked_fill(eye, -9e15) / t
    pos = (torch.arange(n, device=sim.device) - n // 2) % n   # PyCIL: eye.roll(n // 2, dims=0)
    return (torch.logsumexp(sim, dim=-1) - sim.gather(1, pos[:, None])[:, 0]).mean()


def info_nce(feats: torch.Tensor, t: float) -> torch.Tensor:
    """InfoNCE over ``2B`` rows, views stacked (row ``i`` and ``i + B`` are positives), temperature ``t``
    (PyCIL's ``infoNCE_loss``).

    Examples
    --------
    >>> f = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    >>> round(float(info_nce(f, 1.0)), 4)     # log(e + 2) - 1
    0.5514
    """
    return _contrast(feats, feats, t)


def info_nce_distill(p_feats: torch.Tensor, z_feats: torch.Tensor, t: float) -> torch.Tensor:
    """PyCIL's ``infoNCE_distill_loss``: InfoNCE between ``p_feats`` (rows of the student) and
    ``z_feats`` (the teacher's), the positive of row ``i`` the teacher's row ``i + B`` (the other view).

    Examples
    --------
    >>> z = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    >>> round(float(info_nce_distill(z, z, 1.0)), 4)
    0.5514
    """
    return _contrast(p_feats, z_feats, t)


def flip_crop(x: torch.Tensor, generator: torch.Generator, padding: int = 4) -> torch.Tensor:
    """A random ``padding``-pixel zero-padded crop and a horizontal flip (probability 1/2) of each
    image of ``x`` ``(N, C, H, W)``; the offsets and flips are drawn on the CPU from ``generator``
    and moved to ``x``'s device (no value is read from it).

    Examples
    --------
    >>> x = torch.arange(4.0).reshape(1, 1, 1, 4)
    >>> flip_crop(x, torch.Generator().manual_seed(0), padding=0).tolist()   # flipped
    [[[[3.0, 2.0, 1.0, 0.0]]]]
    """
    n, c, h, w = x.shape
    p = check_int("padding", padding, low=0)
    dy = torch.randint(0, 2 * p + 1, (n, 1), generator=generator)
    dx = torch.randint(0, 2 * p + 1, (n, 1), generator=generator)
    flip = torch.rand(n, 1, generator=generator) < 0.5
    rows = dy + torch.arange(h)
    cols = dx + torch.arange(w)
    cols = torch.where(flip, cols.flip(1), cols)
    rows, cols = move(rows, x.device), move(cols, x.device)
    xp = F.pad(x, (p, p, p, p)) if p else x
    out = xp.gather(2, rows[:, None, :, None].expand(n, c, h, w + 2 * p))
    return out.gather(3, cols[:, None, None, :].expand(n, c, h, w))


def _pools_at_end(ext: nn.Module) -> bool:
    return (isinstance(ext, nn.Sequential) and len(ext) >= 3 and isinstance(ext[-1], nn.Flatten)
            and ext[-1].start_dim == 1 and isinstance(ext[-2], nn.AdaptiveAvgPool2d)
            and ext[-2].output_size in (1, (1, 1)))


def tokens(ext: nn.Module, x):
    """``(features, tokens)`` of extractor ``ext`` on ``x``: for a ``Sequential`` ending in
    ``AdaptiveAvgPool2d(1), Flatten()`` the map before the pooling as ``(N, H*W, C)`` tokens and
    their mean; otherwise ``ext(x)`` and it as one token ``(N, 1, d)``.

    Examples
    --------
    >>> f, tok = tokens(nn.Sequential(nn.Identity(), nn.AdaptiveAvgPool2d(1), nn.Flatten()), torch.ones(2, 3, 4, 4))
    >>> f.shape, tok.shape
    (torch.Size([2, 3]), torch.Size([2, 16, 3]))
    """
    if _pools_at_end(ext):
        h = x
        for m in list(ext)[:-2]:
            h = m(h)
        tok = h.flatten(2).transpose(1, 2)
        return tok.mean(1), tok
    f = ext(x)
    return f, f[:, None, :]


class TokenAttention(nn.Module):
    """PyCIL's ``TSAttention``: layer-normalised TS and TA tokens, queries from TS, keys and values
    from TA and TS concatenated, ``num_heads`` heads, default scale. Weights are drawn from
    ``generator`` (Xavier normal) on the CPU and moved to ``device``.

    Examples
    --------
    >>> att = TokenAttention(4, 2, torch.Generator().manual_seed(0))
    >>> att(torch.ones(3, 5, 4), torch.randn(3, 5, 4)).shape
    torch.Size([3, 5, 4])
    """

    def __init__(self, dim: int, num_heads: int, generator: torch.Generator, device="cpu"):
        super().__init__()
        self.num_heads = num_heads
        self.norm_ts = nn.LayerNorm(dim, device=device)
        self.norm_ta = nn.LayerNorm(dim, device=device)
        std = math.sqrt(2.0 / (dim + dim))
        for name in ("weight_q", "weight_k_ts", "weight_k_ta", "weight_v_ts", "weight_v_ta"):
            w = torch.randn(dim, dim, generator=generator) * std
            self.register_parameter(name, nn.Parameter(move(w, device)))

    def forward(self, ta, ts):
        bs, n, c = ta.shape
        ta, ts = self.norm_ta(ta), self.norm_ts(ts)
        heads = lambda z: z.reshape(bs, -1, self.num_heads, c // self.num_heads).transpose(1, 2)  # noqa: E731
        q = heads(ts @ self.weight_q)
        k = torch.cat((heads(ta @ self.weight_k_ta), heads(ts @ self.weight_k_ts)), dim=2)
        v = torch.cat((heads(ta @ self.weight_v_ta), heads(ts @ self.weight_v_ts)), dim=2)
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(2)


def _fresh_copy(module: nn.Module, seed: int) -> nn.Module:
    """A copy of ``module`` with every submodule's ``reset_parameters`` run under ``torch_seeded(seed)``
    (on a CPU copy; a module on ``meta`` is copied as is)."""
    new = copy.deepcopy(module)
    dev = next((p.device for p in new.parameters()), torch.device("cpu"))
    if dev.type == "meta":
        return new
    new = new.to("cpu")
    with torch_seeded(seed):
        for m in new.modules():
            if callable(getattr(m, "reset_parameters", None)):
                m.reset_parameters()
    return new.to(dev)


def _frozen(module: nn.Module) -> nn.Module:
    frozen = copy.deepcopy(module)
    frozen.requires_grad_(False)
    return frozen.eval()


class TagFexNet(nn.Module):
    """TS extractors with DER's unified and auxiliary heads, the TA extractor, projector, predictor,
    merge attention and merged classifier (behind :class:`TagFex`).

    Parameters
    ----------
    base : torch.nn.Module
        Has ``features`` and a linear ``head``: the first TS extractor and unified head.
    ta : torch.nn.Module
        The task-agnostic extractor (same architecture as ``base.features``).
    generator : torch.Generator
        CPU generator of the new layers' weights.
    proj_hidden_dim, proj_output_dim, attn_num_heads, init_interpolation_factor
        See :class:`TagFex`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> base, g = MLP(3, 4, hidden=(4,)), torch.Generator().manual_seed(0)
    >>> net = TagFexNet(base, copy.deepcopy(base.features), g, proj_hidden_dim=6, proj_output_dim=5,
    ...                 attn_num_heads=2)
    >>> net.expand(g, old_classes=[0, 1], new_classes=[2, 3])
    >>> out = net(torch.zeros(2, 3), full=True)
    >>> out["logits"].shape, out["aux"].shape, out["embedding"].shape, out["trans"].shape
    (torch.Size([2, 4]), torch.Size([2, 3]), torch.Size([2, 5]), torch.Size([2, 2]))
    """

    def __init__(self, base: nn.Module, ta: nn.Module, generator: torch.Generator, *, proj_hidden_dim: int = 2048,
                 proj_output_dim: int = 1024, attn_num_heads: int = 8, init_interpolation_factor: float = 0.95):
        super().__init__()
        head = getattr(base, "head", None)
        if not isinstance(head, nn.Linear):
            raise TypeError(f"TagFex needs a model with a linear `head` (e.g. clkit.models.MLP), "
                            f"got {type(base).__name__}")
        if not isinstance(getattr(base, "features", None), nn.Module):
            raise TypeError(f"TagFex needs a model with a `features` module, got {type(base).__name__}")
        d = self.feature_dim = head.in_features
        if d % attn_num_heads:
            raise ValueError(f"attn_num_heads must divide the feature size {d}, got {attn_num_heads}")
        self.num_classes = head.out_features
        self.num_heads = attn_num_heads
        self.factor = init_interpolation_factor
        dev = head.weight.device
        self.extractors = nn.ModuleList([base.features])
        self.head = head
        self.ta = ta
        self.projector = nn.Sequential(_init_linear(d, proj_hidden_dim, generator, dev), nn.ReLU(),
                                       _init_linear(proj_hidden_dim, proj_output_dim, generator, dev))
        self.predictor = _init_linear(d, d, generator, dev)
        self.aux_head: nn.Linear | None = None
        self.attn: TokenAttention | None = None
        self.trans_head: nn.Linear | None = None

    def expand(self, generator: torch.Generator, old_classes, new_classes) -> None:
        """Freeze the TS extractors, append ``f * newest + (1 - f) * TA`` (parameters; fresh batch-norm
        statistics), widen the unified head as DER, and build a fresh auxiliary head, attention and
        merged classifier (``len(new_classes)`` outputs)."""
        for p in self.extractors.parameters():
            p.requires_grad_(False)
            p.grad = None
        last = self.extractors[-1]
        new = copy.deepcopy(last)
        f = self.factor
        with torch.no_grad():
            for pn, po, pa in zip(new.parameters(), last.parameters(), self.ta.parameters(), strict=True):
                pn.copy_(f * po + (1 - f) * pa)
        for m in new.modules():
            if callable(getattr(m, "reset_running_stats", None)):
                m.reset_running_stats()
        new.requires_grad_(True)
        self.extractors.append(new)
        expand_heads(self, len(self.extractors), generator, old_classes, new_classes)
        dev = self.head.weight.device
        self.attn = TokenAttention(self.feature_dim, self.num_heads, generator, dev)
        self.trans_head = _init_linear(self.feature_dim, len(new_classes), generator, dev)

    def forward(self, x, full: bool = False):
        """Unified logits ``(N, C)``; with ``full=True`` a dict of ``logits``, ``aux`` (auxiliary
        logits, ``None`` before the first expansion), ``ta_feature``, ``embedding`` (projector),
        and after an expansion ``trans`` (merged classifier) and ``predicted`` (predictor)."""
        ts = [tokens(ext, x) for ext in self.extractors]
        feats = ts[0][0] if len(ts) == 1 else torch.cat([f for f, _ in ts], 1)
        logits = self.head(feats)
        if not full:
            return logits
        ta_feat, ta_tok = tokens(self.ta, x)
        out = {"logits": logits, "aux": self.aux_head(ts[-1][0]) if self.aux_head is not None else None,
               "ta_feature": ta_feat, "embedding": self.projector(ta_feat)}
        if self.trans_head is not None:
            out["trans"] = self.trans_head(self.attn(ta_tok.detach(), ts[-1][1]).mean(1))
            out["predicted"] = self.predictor(ta_feat)
        return out

    def ts_features(self, x) -> torch.Tensor:
        """The concatenated TS features (PyCIL's ``extract_vector``)."""
        return torch.cat([tokens(ext, x)[0] for ext in self.extractors], 1)


@register("tagfex")
class TagFex(DER):
    """TagFex: DER's expansion guided by a contrastively trained task-agnostic extractor.

    Parameters
    ----------
    model : torch.nn.Module
        Has ``features`` and a linear ``head`` (see :class:`TagFexNet`).
    memory_size : int
        Rehearsal rows over all classes, ``memory_size // num_seen_classes`` per class (2000).
    init_interpolation_factor : float
        Weight ``f`` of the previous TS extractor in a new one's initialisation (0.95).
    infonce_temp, infonce_kd_temp : float
        Temperatures of the InfoNCE and of the TA distillation (0.2, 0.2).
    kd_temp : float
        Temperature of the transfer term (2).
    proj_hidden_dim, proj_output_dim : int
        Projector sizes (2048, 1024).
    attn_num_heads : int
        Heads of the merge attention (8).
    contrast_factor, contrast_kd_factor, aux_factor, trans_cls_factor, transfer_factor : float
        Loss weights (1, 2, 2, 1, 1).
    align_weights : bool
        DER's weight aligning after each task but the first (PyCIL: on).
    augment : {"flip_crop", "none"} or callable
        How the two views are made (see the module notes).
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = TagFex(MLP(2, 4, hidden=(4,)), memory_size=4, proj_hidden_dim=8, proj_output_dim=4, attn_num_heads=2)
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([0, 1] * 4), task_id=0))
    >>> _ = s.train_task(Task(torch.randn(8, 2), torch.tensor([2, 3] * 4), task_id=1))
    >>> len(s.model.extractors), s.model.head.in_features, s.model.trans_head.out_features
    (2, 8, 2)
    >>> sorted(s.memory_labels.tolist())
    [0, 1, 2, 3]
    """

    def __init__(self, model, *, memory_size: int = 2000, init_interpolation_factor: float = 0.95,
                 infonce_temp: float = 0.2, kd_temp: float = 2.0, infonce_kd_temp: float = 0.2,
                 proj_hidden_dim: int = 2048, proj_output_dim: int = 1024, attn_num_heads: int = 8,
                 contrast_factor: float = 1.0, trans_cls_factor: float = 1.0, transfer_factor: float = 1.0,
                 aux_factor: float = 2.0, contrast_kd_factor: float = 2.0, align_weights: bool = True,
                 augment="flip_crop", **kwargs):
        self.memory_size = check_int("memory_size", memory_size, low=0)
        factor = check_real("init_interpolation_factor", init_interpolation_factor, low=0, high=1)
        self.infonce_temp = check_real("infonce_temp", infonce_temp, low=0, low_open=True)
        self.kd_temp = check_real("kd_temp", kd_temp, low=0, low_open=True)
        self.infonce_kd_temp = check_real("infonce_kd_temp", infonce_kd_temp, low=0, low_open=True)
        hid = check_int("proj_hidden_dim", proj_hidden_dim, low=1)
        outd = check_int("proj_output_dim", proj_output_dim, low=1)
        heads = check_int("attn_num_heads", attn_num_heads, low=1)
        self.contrast_factor = check_real("contrast_factor", contrast_factor, low=0)
        self.trans_cls_factor = check_real("trans_cls_factor", trans_cls_factor, low=0)
        self.transfer_factor = check_real("transfer_factor", transfer_factor, low=0)
        self.aux_factor = self.aux_weight = check_real("aux_factor", aux_factor, low=0)
        self.contrast_kd_factor = check_real("contrast_kd_factor", contrast_kd_factor, low=0)
        if not isinstance(align_weights, bool):
            raise ValueError(f"align_weights must be True or False, got {align_weights!r}")
        self.align_weights = align_weights
        if not callable(augment):
            check_choice("augment", augment, ["flip_crop", "none"])
        self.augment = augment
        if kwargs.get("loss", "cross_entropy") != "cross_entropy":
            raise ValueError(f"strategy 'tagfex' is classification only: loss must be 'cross_entropy', "
                             f"got {kwargs['loss']!r}")
        seed = check_int("seed", kwargs.get("seed", 0))
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not isinstance(getattr(model, "features", None), nn.Module):
            raise TypeError(f"TagFex needs a model with a `features` module, got {type(model).__name__}")
        gen = torch.Generator().manual_seed(seed)
        net = TagFexNet(model, _fresh_copy(model.features, seed), gen, proj_hidden_dim=hid, proj_output_dim=outd,
                        attn_num_heads=heads, init_interpolation_factor=factor)
        TaskAwareStrategy.__init__(self, net, **kwargs)   # DER's own __init__ would wrap a DERNet
        self.init_generator = gen                                              # new layers' weights
        self.view_generator = torch.Generator().manual_seed(seed + 1)          # the two views
        self.memory_rng = np.random.default_rng(self.seed)
        self.trained_tasks: list[int] = []
        self.classes_before: tuple = ()
        self._aux_table = self._trans_table = self._new_cols = None
        self._seen_mask: torch.Tensor | None = None
        self._kd_share = 0.0
        self.old_ta = self.old_projector = None
        self.loss_parts: dict = {}
        self.memory_x = self.memory_y = self.memory_tids = None
        self.memory_labels = np.zeros(0, dtype=np.int64)
        self.memory_tids_host = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ structure
    def before_task(self, task: Task) -> None:
        if task.task_id in self.trained_tasks:
            return
        if self.trained_tasks:   # PyCIL's after_task: frozen copies of the TA extractor and projector
            self.old_ta, self.old_projector = _frozen(self.model.ta), _frozen(self.model.projector)
        super().before_task(task)
        if self._aux_table is not None and len(self.trained_tasks) > 1:
            dev = self.model.head.weight.device
            self._trans_table = self._aux_table - 1
            self._new_cols = move(torch.as_tensor([int(c) for c in task.classes], dtype=torch.int64), dev)
            new = len(set(task.classes) - set(self.classes_before))
            self._kd_share = len(self.classes_before) / (len(self.classes_before) + new)

    # ------------------------------------------------------------------ loss
    def views(self, x):
        """The two views of the batch ``x`` (see ``augment``)."""
        if callable(self.augment):
            return self.augment(x, self.view_generator), self.augment(x, self.view_generator)
        if self.augment == "none" or not isinstance(x, torch.Tensor) or x.ndim != 4:
            return x, x
        return flip_crop(x, self.view_generator), flip_crop(x, self.view_generator)

    def rows_loss(self, x, y, task_ids: torch.Tensor) -> torch.Tensor:
        """TagFex's loss on two views of the rows ``x`` (see :meth:`tagfex_loss`)."""
        x1, x2 = self.views(x)
        return self.tagfex_loss(x1, x2, y, task_ids)

    def tagfex_loss(self, x1, x2, y, task_ids: torch.Tensor) -> torch.Tensor:
        """The loss of PyCIL's ``_init_train`` (first task) or ``_update_representation`` on the views
        ``x1``, ``x2`` of rows labelled ``y``; the terms are kept (detached) in ``self.loss_parts``."""
        x, y2, t2 = _cat(x1, x2), torch.cat([y, y]), torch.cat([task_ids, task_ids])
        out = self.model(x, full=True)
        clf = self.criterion(self._rows_mask(out["logits"], t2), y2)
        nce = info_nce(out["embedding"], self.infonce_temp)
        parts = {"clf": clf, "infonce": nce}
        if self.old_ta is None or out["aux"] is None:
            loss = clf + self.contrast_factor * nce
        else:
            aux = F.cross_entropy(out["aux"], self._aux_table[y2])
            with torch.no_grad():
                old_feat = tokens(self.old_ta, x)[0]
            kd = info_nce_distill(self.old_projector(out["predicted"]), self.old_projector(old_feat),
                                  self.infonce_kd_temp)
            tt = self._trans_table[y2]
            cur = (tt >= 0).to(clf.dtype)
            count = cur.sum().clamp_min(1.0)
            trans = (F.cross_entropy(out["trans"], tt.clamp_min(0), reduction="none") * cur).sum() / count
            T = self.kd_temp
            logp = F.log_softmax(out["logits"].index_select(1, self._new_cols) / T, dim=1)
            q = F.softmax(out["trans"].detach() / T, dim=1)
            kl = ((torch.special.xlogy(q, q) - q * logp).sum(1) * cur).sum() / count
            transfer = torch.where(trans < clf, kl, torch.zeros_like(kl))
            a = self._kd_share
            loss = (clf + self.aux_factor * aux
                    + self.contrast_factor * (nce * (1 - a) + self.contrast_kd_factor * kd * a)
                    + self.trans_cls_factor * trans + self.transfer_factor * transfer)
            parts.update(aux=aux, kd=kd, trans=trans, transfer=transfer)
        self.loss_parts = {k: v.detach() for k, v in parts.items()}
        return loss

    # ------------------------------------------------------------------ memory
    @torch.no_grad()
    def embed(self, x, batch_size: int = 4096) -> torch.Tensor:
        """L2-normalised concatenated TS features (evaluation mode), PyCIL's herding vectors."""
        self.model.eval()
        n = len(x[0]) if isinstance(x, (tuple, list)) else len(x)
        f = torch.cat([self.model.ts_features(move(take(x, slice(s, s + batch_size)), self.device)).float()
                       for s in range(0, n, batch_size)])
        return f / (f.norm(dim=1, keepdim=True) + 1e-8)

    def _update_memory(self, task: Task) -> None:
        """Keep ``memory_size // num_seen_classes`` rows per class: the first rows kept of older
        classes, herding picks (in order) of the task's classes."""
        reduced = self._reduce_memory(task)
        if reduced is None:
            return
        labels, per_class, keep = reduced
        xs, ys, lab = [], [], []
        for c in task.classes:
            rows = np.nonzero(labels == int(c))[0]
            k = min(per_class, len(rows))
            if k == 0:
                continue
            rows_t = torch.from_numpy(rows)
            xc = take(task.x, rows_t)
            pick = herding(self.embed(xc), k)
            xs.append(take(xc, pick))
            ys.append(take(take(task.y, rows_t), pick))
            lab.extend([int(c)] * k)
        parts_x, parts_y = [], []
        if keep and self.memory_y is not None:
            keep_t = torch.from_numpy(np.asarray(keep, dtype=np.int64))
            parts_x.append(take(self.memory_x, keep_t))
            parts_y.append(take(self.memory_y, keep_t))
        parts_x += xs
        parts_y += ys
        if not parts_y:
            return
        x_new = parts_x[0]
        for p in parts_x[1:]:
            x_new = _cat(x_new, p)
        keep = np.asarray(keep, dtype=np.int64)
        self.memory_x, self.memory_y = x_new, torch.cat(parts_y)
        self.memory_labels = np.concatenate([self.memory_labels[keep], np.asarray(lab, dtype=np.int64)])
        self.memory_tids_host = np.concatenate([self.memory_tids_host[keep],
                                                np.full(len(lab), task.task_id, dtype=np.int64)])
        self.memory_tids = move(torch.from_numpy(self.memory_tids_host.copy()), self.device)
