"""What the frozen-ViT strategies share (L2P, CODA-Prompt, HiDe-Prompt, MOS; EASE the step schedule).

:func:`check_vit_model` checks the model they take (a :class:`~clkit.models.vit.ViTBackbone`:
a ``features`` timm ``VisionTransformer`` and a linear ``head`` of the ViT's width);
:class:`FrozenViTMixin` holds their common strategy methods: the ViT frozen in evaluation mode,
an optimizer over the trainable parameters only, the class masks (0 / ``-inf``), the check of a
task's classes, and the masking of training and evaluation logits. :func:`check_step_schedule` and
:func:`step_lr` give the five pre-trained ViT methods (EASE too) the optional step schedule of their
``milestones`` / ``lr_decay`` keywords (``torch.optim.lr_scheduler.MultiStepLR`` stepped once after each
epoch, restarted with each task's new optimizer: the EDGE paper's pre-trained line, App. E.1.1).
"""

from __future__ import annotations

import torch
from torch import nn

from ..device import move

__all__ = ["VIT_PARTS", "check_vit_model", "FrozenViTMixin", "check_step_schedule", "step_lr"]

VIT_PARTS = ("patch_embed", "_pos_embed", "blocks", "norm")


def check_vit_model(model, *, qkv: bool = False) -> None:
    """A ``TypeError`` unless ``model`` has a ``features`` timm ViT and a linear ``head`` of its width.

    Parameters
    ----------
    model : nn.Module
        The model given to the strategy.
    qkv : bool, default False
        Also require blocks with timm attention (``attn.qkv``; prefix tuning computes the attention itself).

    Examples
    --------
    >>> from clkit.models import MLP
    >>> check_vit_model(MLP(3, 4))
    Traceback (most recent call last):
    ...
    TypeError: model must be a clkit.models.vit.ViTBackbone (a `features` timm VisionTransformer with \
patch_embed, _pos_embed, blocks, norm and a linear `head`), got MLP: its `features` lacks patch_embed, \
_pos_embed, blocks, norm
    """
    feats, head = getattr(model, "features", None), getattr(model, "head", None)
    missing = [p for p in VIT_PARTS if not hasattr(feats, p)] if isinstance(feats, nn.Module) else ["features"]
    if qkv and not missing and not all(hasattr(getattr(b, "attn", None), "qkv") for b in feats.blocks):
        missing = ["blocks with timm attention (attn.qkv)"]
    if missing or not isinstance(head, nn.Linear):
        what = (f"its `features` lacks {', '.join(missing)}" if missing
                else f"its `head` is a {type(head).__name__}, not an nn.Linear")
        raise TypeError(f"model must be a clkit.models.vit.ViTBackbone (a `features` timm VisionTransformer with "
                        f"patch_embed, _pos_embed, blocks, norm and a linear `head`), got {type(model).__name__}: "
                        f"{what}")
    width = getattr(feats, "embed_dim", getattr(feats, "num_features", head.in_features))
    if head.in_features != width:
        raise TypeError(f"model.head must take the ViT's width {width}, got in_features={head.in_features}")


def check_step_schedule(milestones, lr_decay) -> tuple:
    """``(milestones, lr_decay)`` checked: ``None`` (no step schedule: the strategy's own) or strictly
    increasing epochs ``>= 1``, as a tuple; ``lr_decay`` a number ``> 0``.

    Examples
    --------
    >>> check_step_schedule([80, 120, 150], 0.1)
    ((80, 120, 150), 0.1)
    >>> check_step_schedule(None, 0.1)
    (None, 0.1)
    >>> check_step_schedule([120, 80], 0.1)
    Traceback (most recent call last):
    ...
    ValueError: milestones must be strictly increasing epochs >= 1 (e.g. [80, 120, 150]) or None, got [120, 80]
    """
    from .._validate import check_real

    lr_decay = check_real("lr_decay", lr_decay, low=0, low_open=True)
    if milestones is None:
        return None, lr_decay
    what = f"milestones must be strictly increasing epochs >= 1 (e.g. [80, 120, 150]) or None, got {milestones!r}"
    if isinstance(milestones, (str, bytes)) or not isinstance(milestones, (list, tuple)):
        raise TypeError(what)
    if any(isinstance(m, bool) or not isinstance(m, int) for m in milestones):
        raise TypeError(what)
    out = tuple(int(m) for m in milestones)
    if any(m < 1 for m in out) or any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError(what)
    return out, lr_decay


def step_lr(base_lr: float, epoch: int, milestones, lr_decay: float) -> float:
    """The rate of epoch ``epoch`` (0-based) under ``MultiStepLR(milestones, gamma=lr_decay)`` stepped after each
    epoch: ``base_lr * lr_decay ** #{m in milestones : m <= epoch}``.

    Examples
    --------
    >>> [round(step_lr(0.1, e, (80, 120, 150), 0.1), 10) for e in (0, 79, 80, 119, 120, 150, 169)]
    [0.1, 0.1, 0.01, 0.01, 0.001, 0.0001, 0.0001]
    """
    import bisect

    return base_lr * lr_decay ** bisect.bisect_right(milestones, epoch)


class FrozenViTMixin:
    """Methods of a :class:`~clkit.strategies.Strategy` whose model is a frozen ViT ``model.vit`` with a head.

    Put it before ``Strategy`` in the bases; the strategy sets ``num_classes`` and the masks
    ``_train_mask`` / ``_seen_mask`` (``None`` until the first task).
    """

    def make_optimizer(self, params):
        """The constructor's optimizer over the trainable parameters only."""
        return super().make_optimizer([p for p in params if p.requires_grad])

    def frozen_modules(self) -> list:
        """The ViT (evaluation mode: dropout and stochastic depth off)."""
        return [self.model.vit]

    def _mask(self, classes) -> torch.Tensor:
        """``(num_classes,)`` on the strategy's device: 0 at ``classes``, ``-inf`` elsewhere."""
        m = torch.full((self.num_classes,), float("-inf"))
        m[sorted(int(c) for c in classes)] = 0.0
        return move(m, self.device)

    def _check_classes(self, task, name: str) -> None:
        """A ``ValueError`` (naming the method ``name``) unless the task has classes, all of the head's."""
        if not task.classes:
            raise ValueError(f"{name} needs the task's classes (integer labels)")
        bad = [c for c in task.classes if not 0 <= int(c) < self.num_classes]
        if bad:
            raise ValueError(f"task {task.task_id} has class(es) {bad} outside the {self.num_classes} classes of "
                             f"model.head; allowed: 0 ... {self.num_classes - 1}")

    def _train_logits(self, logits: torch.Tensor, task) -> torch.Tensor:
        """Training logits plus the training mask, then masked to the task's classes (task-incremental)."""
        if self._train_mask is not None:
            logits = logits + self._train_mask.to(logits.dtype)
        return self.mask_logits(logits, task.classes if task is not None else None)

    def _eval_logits(self, out: torch.Tensor, task, classes) -> torch.Tensor:
        """Evaluation logits: classes not seen so far at ``-inf`` (class-incremental), or masked to
        ``classes`` (else the task's) in the task-incremental scenario."""
        if self._seen_mask is not None and self.scenario == "class":
            out = out + self._seen_mask.to(out.dtype)
        return self.mask_logits(out, classes if classes is not None else (task.classes if task is not None else None))
