"""MOS: model surgery for class-incremental learning on a frozen pre-trained ViT.

**MOS** (``"mos"``; Sun, Zhou, Ye and Zhan, AAAI 2025, "MOS: Model Surgery for Pre-Trained
Model-Based Class-Incremental Learning"), as the EDGE authors ran it: the PILOT tree of
``github.com/AIGNLAI/EDGE`` at commit ``a60c1179cf762e8c1197ab876a3c06db3a49b639``, files
``PILOT/models/mos.py`` (``Learner``), ``PILOT/backbone/vit_mos.py`` (the ViT with adapters),
``PILOT/utils/inc_net.py`` (``MOSNet``, the ``tuning_config``) and ``PILOT/exps/mos.json``
(CIFAR-100). Checked numerically against that code (``tests/test_strategies_mos.py``).

The method, per task ``t`` (0-based, in learning order):

- the ViT is frozen; each block gets a **parallel AdaptFormer adapter** (``ReLU`` bottleneck of
  width ``ffn_num`` = 16, dropout 0.1 after the ``ReLU``, output scaled by 0.1, no layer norm,
  "lora" initialisation: the down projection PyTorch's default uniform, the up projection and
  both biases zero) added beside the block's MLP: ``x = x + attn(norm1(x));
  x = x + (mlp(norm2(x)) + adapter(x))``. One set of adapters (``cur_adapter``) is trained
  through all tasks and a **snapshot** of it is stored after each task (``adapter_list``), with
  the prefix sums ``S_t`` of the snapshots;
- **adapter merging** (EMA, ``adapter_momentum`` = 0.1): ``A <- (1 - m) A + m S_{t-1} / t`` pulls
  the adapter towards the mean of the earlier tasks' snapshots, after each optimiser step (and,
  in the authors' code, inside every forward; see ``reweight`` below);
- **loss**: cross-entropy over the current task's classes (the earlier classes at ``-inf``, the
  head reading the adapted [CLS] feature) plus ``reg`` (0.1) times the **orthogonality term**
  ``CE(M M^T / 0.8, arange)`` with ``M`` the stored class means of the earlier tasks stacked on the
  batch's features (the batch alone at the first task);
- schedule: SGD, momentum 0.9, ``lr`` 0.03 for the adapters and ``0.1 * lr`` for the head, weight
  decay 5e-4, ``epochs`` 20 with a cosine decay per epoch to 0, batch size 48; the optimiser is
  rebuilt at every task (``milestones`` / ``lr_decay``: a ``MultiStepLR`` step schedule instead of the
  cosine, restarted each task; the EDGE paper's pre-trained line);
- after training: the snapshot; each class's feature **mean and covariance** (+ 1e-4 I) with the
  current adapter (batches of ``3 * batch_size``); from the second task on, **classifier
  alignment**: ``ca_epochs`` (30) epochs, each drawing ``5 * batch_size`` features per seen class
  from its Gaussian, shuffling them, and taking one SGD step per seen class (``ca_lr`` 0.005,
  momentum 0.9, weight decay 5e-4, cosine) on the head; then the **prototypes** of the task's
  classes (their mean feature through the first task's adapter) go into a cosine classifier;
- **inference** (``_eval_cnn``): the prototype classifier on the first adapter's features picks
  a class and hence a task ``k``; **self-refined retrieval** then repeats at most 4 times: the
  head on adapter ``k``'s features predicts a class, whose task becomes the next ``k``, until it
  stays; with ``ensemble`` the output is ``softmax(head logits) + softmax(T * prototype logits)``
  over the seen classes (``T`` the number of tasks so far).

Faithful to the authors' code where it departs from the paper:

- ``reweight="authors"`` (default): ``reweight_adapter`` writes the EMA into the adapters'
  ``.data`` **in place**, and ``forward_features`` calls it once *per block* of every forward with
  ``adapter_id > 0``: a training forward applies it ``depth`` times to the trained adapter (block
  ``l`` sees it after ``l + 1`` applications; the backward pass then reads the values left by the
  last one), the class-mean pass does too, and every inference forward applies it ``depth`` times
  to the **stored snapshot** ``k >= 1`` it uses, so evaluation drifts snapshot ``k`` towards
  ``S_{k-1} / k`` (the mean of the earlier snapshots). clkit does the same, on the authors'
  batches: :meth:`MOS.predict` runs in chunks of ``batch_size`` (their test loader's) and changes
  the stored snapshots, so predictions depend on how much was evaluated before (the authors
  evaluate once per task over all seen classes; clkit's callers may evaluate more often).
  ``reweight="step"``: the paper's reading, the EMA only after each optimiser step, forwards
  leave the adapters as they are, and inference does not change the model;
- the prototypes of the second and later tasks are computed in training mode (after classifier
  alignment's ``model.train()``), so with adapter dropout on;
- the head is trained over all its rows with weight decay (rows of other classes get no gradient
  but decay), as the authors' optimiser does.

Choices where clkit differs:

- random draws (adapter initialisation, dropout masks, batch order, Gaussian samples, the
  shuffle of classifier alignment) come from CPU generators seeded from ``seed``, the dropout
  masks and samples drawn on the CPU and moved to the device; the authors use the global
  generator. The Gaussian draws take the same values as ``MultivariateNormal.sample`` from a
  generator in the same state (checked);
- the class order within a task is ``task.classes``; classes need not be contiguous: "seen
  classes" replace the authors' ``[:total_classes]`` slices;
- the self-refined retrieval is vectorised over the batch (the authors loop over rows); the
  result is the same;
- each :meth:`MOS.train_task` call is one MOS session (a new snapshot); only the authors'
  ``"covariance"`` storage of classifier alignment is implemented (their ``"variance"`` and
  ``"multi-centroid"`` options are not), and the ``"cosine"`` or ``"constant"`` schedules or the
  ``milestones`` step one.

The model is a :class:`~clkit.models.vit.ViTBackbone` (a ``features`` timm ``VisionTransformer``
and a linear ``head`` of the ViT's width; ``head.out_features`` classes). MOS cannot use cached
frozen features: the adapters change every block's output. Classification only; needs task
boundaries. Cost per training batch: one adapted ViT pass with gradients; inference: ``T + 1``
adapted passes (without gradients).
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from .._validate import check_choice, check_int, check_real
from ..device import move
from ..models.vit_adapter import Adapter
from ._vit_common import FrozenViTMixin, check_step_schedule, check_vit_model, step_lr
from .base import Strategy, Task, _sgd, epoch_means, register

__all__ = ["MOS", "MOSNet", "MOSAdapter"]


class MOSAdapter(Adapter):
    """The AdaptFormer bottleneck of MOS: :class:`~clkit.models.vit_adapter.Adapter` (EASE's) without
    its own dropout, ``scale * up(relu(down(x)) * mask)`` (no residual, no norm).

    Initialised as the authors' ``init_option="lora"``: the down weight Kaiming-uniform
    (``a = sqrt(5)``, drawn from ``generator``), the up weight and both biases zero. MOS draws the
    dropout itself (:meth:`MOS._dropout_masks`) and passes it as ``mask``.

    Examples
    --------
    >>> a = MOSAdapter(8, 2, torch.Generator().manual_seed(0))
    >>> a(torch.ones(3, 8)).abs().sum().item(), tuple(a.down_proj.weight.shape)
    (0.0, (2, 8))
    """

    def __init__(self, d: int, r: int, generator: torch.Generator, scale: float = 0.1):
        super().__init__(d, r, scale=scale, dropout=0.0, generator=generator)


class MOSNet(nn.Module):
    """A frozen timm ViT with MOS's trained adapters, their snapshots and prefix sums, a head and prototypes.

    Parameters
    ----------
    vit : timm.models.vision_transformer.VisionTransformer
        Frozen (``requires_grad`` off, always in evaluation mode).
    head : nn.Linear
        ``d -> num_classes``; trained.
    ffn_num : int
        Adapter bottleneck width.
    momentum : float
        The EMA weight ``m`` of adapter merging.
    generator : torch.Generator
        CPU generator of the adapters' initialisation.

    Examples
    --------
    >>> from clkit.models.vit import vit_backbone
    >>> vb = vit_backbone(num_classes=4, tiny=True, seed=0)
    >>> net = MOSNet(vb.features, vb.head, 4, 0.1, torch.Generator().manual_seed(0))
    >>> x = torch.zeros(2, 3, 32, 32)
    >>> torch.allclose(net.features(x, net.cur_adapter, 0), vb.features(x), atol=1e-6)   # zero up projections
    True
    """

    def __init__(self, vit: nn.Module, head: nn.Linear, ffn_num: int, momentum: float, generator: torch.Generator,
                 scale: float = 0.1):
        super().__init__()
        self.vit, self.head, self.momentum = vit, head, momentum
        self.vit.requires_grad_(False)
        self.vit.eval()
        d = head.in_features
        self.cur_adapter = nn.ModuleList(MOSAdapter(d, ffn_num, generator, scale) for _ in vit.blocks)
        self.adapter_list = nn.ModuleList()     # snapshot t of cur_adapter after task t
        self.adapter_sums = nn.ModuleList()     # S_t: the sum of snapshots 0 ... t
        self.register_buffer("protos", torch.zeros(head.out_features, d))

    def train(self, mode: bool = True):
        super().train(mode)
        self.vit.eval()
        return self

    def reweight(self, adapters: nn.ModuleList, idx: int) -> None:
        """The authors' ``reweight_adapter``: ``A <- (1 - m) A + m S_{idx-1} / idx`` in place, every layer."""
        m = self.momentum
        if m == 0 or idx == 0:
            return
        for a, s in zip(adapters, self.adapter_sums[idx - 1]):
            for lin, ls in ((a.down_proj, s.down_proj), (a.up_proj, s.up_proj)):
                lin.weight.data = (1 - m) * lin.weight.data + m * ls.weight.data / idx
                lin.bias.data = (1 - m) * lin.bias.data + m * ls.bias.data / idx

    def snapshot(self) -> None:
        """``adapter_update``: store a frozen copy of ``cur_adapter`` and the next prefix sum."""
        snap = copy.deepcopy(self.cur_adapter).requires_grad_(False)
        total = copy.deepcopy(snap)
        if len(self.adapter_sums):
            with torch.no_grad():
                for a, s in zip(total, self.adapter_sums[-1]):
                    for p, q in zip(a.parameters(), s.parameters()):
                        p.data = p.data + q.data
        self.adapter_list.append(snap)
        self.adapter_sums.append(total)

    def features(self, x, adapters: nn.ModuleList, idx: int, *, inplace: bool = False, masks=None):
        """The final-normed [CLS] feature ``(N, d)`` with ``adapters``; ``inplace`` reweights them before each block."""
        vit = self.vit
        h = vit._pos_embed(vit.patch_embed(x))
        for part in ("patch_drop", "norm_pre"):
            mod = getattr(vit, part, None)
            if mod is not None:
                h = mod(h)
        for i, blk in enumerate(vit.blocks):
            if inplace:
                self.reweight(adapters, idx)
            h = h + blk.drop_path1(blk.ls1(blk.attn(blk.norm1(h))))
            ad = adapters[i](h, mask=None if masks is None else masks[i])
            h = h + (blk.drop_path2(blk.ls2(blk.mlp(blk.norm2(h)))) + ad)
        return vit.forward_head(vit.norm(h), pre_logits=True)

    def proto_logits(self, f) -> torch.Tensor:
        """The cosine classifier on the prototypes (the authors' ``CosineLinear``, sigma 1)."""
        return F.linear(F.normalize(f, p=2, dim=1), F.normalize(self.protos, p=2, dim=1))

    def forward(self, x):
        """Head logits on the features with the current adapters (no reweighting; a plain forward)."""
        return self.head(self.features(x, self.cur_adapter, 0))


@register("mos")
class MOS(FrozenViTMixin, Strategy):
    """MOS: per-task adapter snapshots with EMA merging, classifier alignment and self-refined retrieval.

    Parameters
    ----------
    model : ViTBackbone
        A ``features`` timm ``VisionTransformer`` (frozen) and a linear ``head`` (trained).
    ffn_num : int, default 16
        Adapter bottleneck width (``mos.json``'s ``ffn_num``).
    adapter_momentum : float, default 0.1
        EMA weight of adapter merging, in ``[0, 1]`` (``adapter_momentum``).
    reg : float, default 0.1
        Weight of the orthogonality term (``reg``).
    ca_epochs : int, default 30
        Classifier-alignment epochs (``crct_epochs``); 0 skips the alignment.
    ca_lr : float, default 0.005
        Classifier-alignment learning rate (``ca_lr``).
    ca_samples : int, optional
        Gaussian samples per class and epoch; default ``5 * batch_size`` (the authors').
    ensemble : bool, default True
        Add the prototype classifier's softmax (``ensemble``).
    adapter_dropout : float, default 0.1
        Dropout after the adapters' ReLU (hard-coded in ``init_adapters``).
    head_lr_scale : float, default 0.1
        The head's learning rate is ``head_lr_scale * lr`` (``get_optimizer``).
    scheduler : {"cosine", "constant"}, default "cosine"
        Per-epoch learning-rate schedule of training (cosine to ``min_lr``; ``min_lr`` 0).
    milestones : list of int, optional
        Epochs (0-based, increasing) after which the rates are multiplied by ``lr_decay`` in every task
        (MultiStepLR stepped per epoch, :func:`~clkit.strategies._vit_common.step_lr`); given, it replaces
        ``scheduler`` (the EDGE paper's pre-trained line, App. E.1.1). ``None`` (default): ``scheduler``.
    lr_decay : float, default 0.1
        The factor at each milestone.
    reweight : {"authors", "step"}, default "authors"
        Where the EMA is applied: as the authors' code does (in place inside every forward and
        after each step; inference changes the snapshots), or after each step only.
    **kwargs
        Those of :class:`~clkit.strategies.Strategy`; defaults here: ``lr=0.03`` (``init_lr``),
        ``momentum=0.9``, ``weight_decay=5e-4``, ``epochs=20`` (``tuned_epoch``), ``batch_size=48``.

    Examples
    --------
    >>> from clkit.models.vit import vit_backbone
    >>> s = MOS(vit_backbone(num_classes=4, tiny=True, seed=0), ffn_num=4, epochs=1, batch_size=8, ca_epochs=1)
    >>> g = torch.Generator().manual_seed(0)
    >>> for t, cls in enumerate([(0, 1), (2, 3)]):
    ...     _ = s.train_task(Task(torch.randn(16, 3, 32, 32, generator=g), torch.tensor(cls * 8), task_id=t))
    >>> len(s.model.adapter_list), s.predict(torch.randn(3, 3, 32, 32, generator=g)).shape
    (2, torch.Size([3, 4]))
    >>> MOS(vit_backbone(num_classes=4, tiny=True), reweight="never")
    Traceback (most recent call last):
    ...
    ValueError: reweight must be one of ['authors', 'step'], got 'never'
    """

    task_free = False
    supports_regression = False
    needs_vit_model = True

    def __init__(self, model, *, ffn_num: int = 16, adapter_momentum: float = 0.1, reg: float = 0.1,
                 ca_epochs: int = 30, ca_lr: float = 0.005, ca_samples: int | None = None, ensemble: bool = True,
                 adapter_dropout: float = 0.1, head_lr_scale: float = 0.1, scheduler: str = "cosine",
                 reweight: str = "authors", milestones=None, lr_decay: float = 0.1, **kwargs):
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        check_vit_model(model)
        self.milestones, self.lr_decay = check_step_schedule(milestones, lr_decay)
        self.ffn_num = check_int("ffn_num", ffn_num, low=1)
        self.adapter_momentum = check_real("adapter_momentum", adapter_momentum, low=0, high=1)
        self.reg = check_real("reg", reg, low=0)
        self.ca_epochs = check_int("ca_epochs", ca_epochs, low=0)
        self.ca_lr = check_real("ca_lr", ca_lr, low=0, low_open=True)
        self.ca_samples = None if ca_samples is None else check_int("ca_samples", ca_samples, low=2)
        if not isinstance(ensemble, bool):
            raise ValueError(f"ensemble must be True or False, got {ensemble!r}")
        self.ensemble = ensemble
        self.adapter_dropout = check_real("adapter_dropout", adapter_dropout, low=0, high=1, high_open=True)
        self.head_lr_scale = check_real("head_lr_scale", head_lr_scale, low=0)
        self.scheduler = check_choice("scheduler", scheduler, ["cosine", "constant"])
        self.reweight = check_choice("reweight", reweight, ["authors", "step"])
        if kwargs.get("loss", "cross_entropy") != "cross_entropy":
            raise ValueError(f"strategy 'mos' is classification only: loss must be 'cross_entropy', "
                             f"got {kwargs['loss']!r}")
        for k, v in dict(lr=0.03, momentum=0.9, weight_decay=5e-4, epochs=20, batch_size=48).items():
            kwargs.setdefault(k, v)
        seed = check_int("seed", kwargs.get("seed", 0))
        self.num_classes = model.head.out_features
        net = MOSNet(model.features, model.head, self.ffn_num, self.adapter_momentum,
                     torch.Generator().manual_seed(seed))
        super().__init__(net, **kwargs)
        self.class_order: list[int] = []          # classes in learning order (the authors' label order)
        self.cls_mean: dict[int, torch.Tensor] = {}
        self.cls_cov: dict[int, torch.Tensor] = {}
        self.cls2task = move(torch.zeros(self.num_classes, dtype=torch.long), self.device)
        self.n_tasks = 0                          # sessions trained (snapshots stored)
        self._train_mask = self._seen_mask = None
        self._mean_stack = None

    # ------------------------------------------------------------------ set-up
    def make_optimizer(self, params=None):
        """The authors' ``get_optimizer``: adapters at ``lr``, the head at ``head_lr_scale * lr``, both with weight decay."""
        spec = check_choice("optimizer", self._optimizer_spec, ["sgd", "adam", "adamw"])
        groups = [dict(params=list(self.model.cur_adapter.parameters()), lr=self.lr, weight_decay=self.weight_decay),
                  dict(params=list(self.model.head.parameters()), lr=self.lr * self.head_lr_scale,
                       weight_decay=self.weight_decay)]
        for g in groups:
            g["initial_lr"] = g["lr"]
        if spec == "sgd":
            return _sgd(groups, lr=self.lr, momentum=self.momentum)
        return (torch.optim.Adam if spec == "adam" else torch.optim.AdamW)(groups, lr=self.lr)

    # frozen_modules (the ViT), _mask: FrozenViTMixin's
    def before_task(self, task: Task) -> None:
        self._check_classes(task, "MOS")
        t = self.n_tasks
        self.class_order += [int(c) for c in task.classes if int(c) not in self.class_order]
        idx = move(torch.tensor([int(c) for c in task.classes]), self.device)
        self.cls2task = self.cls2task.index_fill(0, idx, t)
        self._train_mask = self._mask(task.classes)
        self._seen_mask = self._mask(self.class_order)
        means = [self.cls_mean[c] for c in self.class_order if c in self.cls_mean]
        self._mean_stack = torch.stack(means) if means else None
        self.optimizer = self.make_optimizer()

    def observe(self, x, y, task: Task | None = None) -> float:
        """Refused: MOS needs task boundaries (``task_free = False``); train it with ``train_task``."""
        raise ValueError("strategy 'mos' needs task boundaries (task_free = False); train it with train_task")

    # ------------------------------------------------------------------ training
    def _dropout_masks(self, shape) -> list | None:
        p = self.adapter_dropout
        if p == 0 or not self.model.training:
            return None
        return [move((torch.rand(shape, generator=self.generator) >= p).float() / (1 - p), self.device)
                for _ in self.model.vit.blocks]

    def _patch_tokens(self, x) -> int:
        return self.model.vit.patch_embed.num_patches + getattr(self.model.vit, "num_prefix_tokens", 1)

    def orth_loss(self, features: torch.Tensor) -> torch.Tensor:
        """``reg * CE(M M^T / 0.8, arange)``, ``M`` the earlier classes' means stacked on ``features``."""
        m = features if self._mean_stack is None else torch.cat([self._mean_stack.to(features.dtype), features])
        sim = m @ m.T / 0.8
        return self.reg * F.cross_entropy(sim, torch.arange(len(m), device=m.device))

    def train_step(self, x, y, task: Task | None = None) -> torch.Tensor:
        """One step: masked cross-entropy plus the orthogonality term, then the EMA merge."""
        self.train_mode()
        net, t = self.model, self.n_tasks
        self.optimizer.zero_grad(set_to_none=True)
        masks = self._dropout_masks((len(y), self._patch_tokens(x), self.ffn_num))
        with self.amp.autocast():
            f = net.features(x, net.cur_adapter, t, inplace=self.reweight == "authors", masks=masks)
            logits = net.head(f) + self._train_mask
            loss = self.criterion(logits, y) + self.orth_loss(f)
        self.amp.backward(loss, self.optimizer)
        self.amp.step(self.optimizer)
        if self.adapter_momentum > 0:
            net.reweight(net.cur_adapter, t)     # adapter_merge
        self.steps += 1
        return loss.detach()

    def _cosine(self, base: float, epoch: int, total: int) -> float:
        return base * (1 + math.cos(math.pi * epoch / total)) / 2

    def train_task(self, task: Task, epochs: int | None = None) -> list[float]:
        """Train one MOS session on ``task`` (cosine schedule per epoch, or the step one with ``milestones``), then snapshot, statistics,
        classifier alignment (from the second session on) and prototypes."""
        task = task.to(self.device)
        epochs = self.begin_task(task, epochs)
        history = []
        for e in range(epochs):
            if self.milestones is not None:
                for g in self.optimizer.param_groups:
                    g["lr"] = step_lr(g["initial_lr"], e, self.milestones, self.lr_decay)
            elif self.scheduler == "cosine":
                for g in self.optimizer.param_groups:
                    g["lr"] = self._cosine(g["initial_lr"], e, epochs)
            history.append([self.train_batch(task, idx) for idx in self.batches(len(task), self.device)])
        self.after_task(task)
        return epoch_means(history)

    def _class_rows(self, task: Task):
        labels = task.labels_host()
        for c in task.classes:
            rows = torch.as_tensor((labels == int(c)).nonzero()[0])
            yield int(c), move(rows, self.device)

    @torch.no_grad()
    def after_task(self, task: Task) -> None:
        net, t = self.model, self.n_tasks
        net.snapshot()
        net.eval()                                # _compute_mean: the current adapter, reweighted per forward
        for c, rows in self._class_rows(task):
            chunk = 3 * self.batch_size
            f = torch.cat([net.features(task.x[rows[s:s + chunk]], net.cur_adapter, t,
                                        inplace=self.reweight == "authors")
                           for s in range(0, len(rows), chunk)]).float()
            self.cls_mean[c] = f.mean(0)
            centred = f - self.cls_mean[c]           # torch.cov(f.T) (it has no meta kernel)
            cov = centred.T @ centred / (len(f) - 1)
            self.cls_cov[c] = cov + torch.eye(f.shape[1], device=f.device) * 1e-4
        if t > 0:
            self.classifier_align()
        # replace_fc: prototypes through the first adapter, in training mode from the second session on
        n, feats = len(task), []
        for s in range(0, n, self.batch_size):
            xb = task.x[s:s + self.batch_size]
            masks = self._dropout_masks((len(xb), self._patch_tokens(xb), self.ffn_num))
            feats.append(net.features(xb, net.adapter_list[0], 0, masks=masks))
        feats = torch.cat(feats).float()
        for c, rows in self._class_rows(task):
            net.protos[c] = feats[rows].mean(0)
        self.n_tasks += 1
        self.refresh_train_mode()

    @torch.enable_grad()
    def classifier_align(self) -> None:
        """The authors' ``classifer_align``: SGD on the head with features drawn from the classes' Gaussians."""
        net = self.model
        net.train()
        params = list(net.head.parameters())
        opt = _sgd([dict(params=params, lr=self.ca_lr, weight_decay=self.weight_decay, initial_lr=self.ca_lr)],
                   lr=self.ca_lr, momentum=0.9)
        classes = self.class_order
        n = self.ca_samples or 5 * self.batch_size
        tril = {c: torch.linalg.cholesky(self.cls_cov[c]) for c in classes}
        labels = move(torch.tensor(classes).repeat_interleave(n), self.device)
        d = net.head.in_features
        for e in range(self.ca_epochs):
            opt.param_groups[0]["lr"] = self._cosine(self.ca_lr, e, self.ca_epochs)
            data = [self.cls_mean[c] + torch.matmul(tril[c], move(torch.randn(n, d, generator=self.generator),
                                                                    self.device).unsqueeze(-1)).squeeze(-1)
                    for c in classes]
            perm = move(torch.randperm(n * len(classes), generator=self.generator), self.device)
            inputs, targets = torch.cat(data)[perm], labels[perm]
            for i in range(len(classes)):
                logits = net.head(inputs[i * n:(i + 1) * n]) + self._seen_mask
                loss = F.cross_entropy(logits, targets[i * n:(i + 1) * n])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()

    # ------------------------------------------------------------------ inference
    def _infer(self, x) -> torch.Tensor:
        net, T = self.model, self.n_tasks
        inplace = self.reweight == "authors"
        seen = self._seen_mask
        f0 = net.features(x, net.adapter_list[0], 0)
        orig = net.proto_logits(f0) + seen
        feats = torch.stack([f0] + [net.features(x, net.adapter_list[k], k, inplace=inplace) for k in range(1, T)], 1)
        rows = torch.arange(len(x), device=x.device)
        prev = self.cls2task[orig.argmax(1)]
        active = torch.ones(len(x), dtype=torch.bool, device=x.device)
        final = torch.zeros_like(orig)
        for it in range(4):                        # MAX_ITER = 4
            logits = net.head(feats[rows, prev]) + seen
            cur = self.cls2task[logits.argmax(1)]
            stop = (cur == prev) | (it == 3)
            final = torch.where((active & stop)[:, None], logits, final)
            active = active & ~stop
            prev = torch.where(active, cur, prev)
        if not self.ensemble:
            return final
        out = F.softmax(final, dim=1) + F.softmax(orig / (1 / T), dim=1)
        return out + seen

    @torch.no_grad()
    def predict(self, x, task: Task | None = None, batch_size: int = 4096) -> torch.Tensor:
        """MOS inference (the authors' ``_eval_cnn`` scores): ``(N, num_classes)``, unseen classes ``-inf``.

        With ``reweight="authors"`` it runs in chunks of the strategy's ``batch_size`` (the authors'
        test loader) and moves the stored snapshots ``k >= 1`` as their code does."""
        self.model.eval()
        n = len(x)
        bs = self.batch_size if self.reweight == "authors" else batch_size
        outs = []
        for s in range(0, n, bs):
            xb = move(x[s:s + bs], self.device)
            with self.amp.autocast():
                if self.n_tasks == 0:
                    out = self.model.head(self.model.vit(xb))
                else:
                    out = self._infer(xb)
            outs.append(self.mask_logits(out.float(), task.classes if task is not None else None))
        return torch.cat(outs) if outs else torch.empty(0, self.num_classes, device=self.device)

    def __repr__(self) -> str:
        return (f"MOS(ffn_num={self.ffn_num}, adapter_momentum={self.adapter_momentum}, reg={self.reg}, "
                f"reweight={self.reweight!r}, scenario={self.scenario!r}, lr={self.lr}, epochs={self.epochs})")
