"""The batched learners of notebook 02 (``finetune``, ``ewc``, ``lwf``, ``icarl``, ``ncm``): one MLP per node of
the prefix tree, stored as a slice of batched weight tensors and trained with batched matrix products.

The definitions of the learners and of the batching are in :mod:`clkit.edge.learners` (which
drives them and re-exports the backend); this module holds the backend, :class:`_Batched`, its
loss pieces and the per-node fp16 loss scaling :class:`_NodeScaler`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..device import autocast, move
from .learner_config import batch_order, init_params
from .node_accuracy import NEG as _NEG
from .node_accuracy import masked_logits as _masked

__all__: list = []

_CPU = torch.device("cpu")


def _features(params, x):
    W1, b1 = params[0], params[1]
    return torch.relu(torch.baddbmm(b1.unsqueeze(1), x, W1))


def _logits(params, x):
    W2, b2 = params[2], params[3]
    return torch.baddbmm(b2.unsqueeze(1), _features(params, x), W2)


def _ce(logits, y):
    """Sum over sequences of the per-sequence mean cross-entropy; logits (L, B, C), y (L, B)."""
    L, B, C = logits.shape
    return F.cross_entropy(logits.reshape(L * B, C), y.reshape(L * B), reduction="sum") / B


def _kd(new_logits, old_logits, old_mask, T):
    """PyCIL's KD loss over the old classes, summed over sequences (mean over the batch)."""
    m = old_mask[:, None, :]
    soft = torch.softmax(old_logits.masked_fill(~m, _NEG) / T, dim=-1)
    logp = torch.log_softmax(new_logits.masked_fill(~m, _NEG) / T, dim=-1)
    return -(torch.where(m, soft * logp, soft.new_zeros(()))).sum() / new_logits.shape[1]


def _herding(feats, m):
    """Herding selection: feats (G, n, H) unit rows -> indices (G, m)."""
    G, n, _ = feats.shape
    dev = feats.device
    rows = torch.arange(G, device=dev)
    mu = feats.mean(dim=1, keepdim=True)                       # (G, 1, H)
    chosen = torch.zeros(G, n, dtype=torch.bool, device=dev)
    total = torch.zeros(G, 1, feats.shape[2], device=dev)
    idx = []
    for k in range(1, m + 1):
        cand = (total + feats) / k                              # (G, n, H)
        dist = ((mu - cand) ** 2).sum(-1).masked_fill(chosen, math.inf)
        j = dist.argmin(dim=1)                                  # (G,)
        idx.append(j)
        chosen[rows, j] = True
        total = total + feats[rows, j].unsqueeze(1)
    return torch.stack(idx, dim=1)


def _unit(z):
    return z / z.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _bcast(v, like):
    """A per-node vector (n,) shaped to broadcast against ``like`` (n, ...)."""
    return v.view(-1, *([1] * (like.dim() - 1)))


class _NodeScaler:
    """fp16 loss scaling for every node (sequence) on its own, on the device.

    :class:`torch.amp.GradScaler` keeps one scale for a whole model and skips a step when any
    gradient overflows; here every node is an independent model, so each keeps its own scale
    (``state["scale"]``, ``state["growth"]``, selected along the prefix tree like the
    parameters) and only a node whose gradients overflowed skips its step. GradScaler's
    rules: start at 2**16, halve on an overflow, double after 2,000 steps without one.
    The gradient of the logits is multiplied by the node's scale in the backward pass (so
    the half-precision products see scaled values) and the parameter gradients are divided
    by it; no value is read on the host.
    """

    INIT, GROWTH_INTERVAL = 2.0 ** 16, 2000

    @staticmethod
    def root(device):
        return {"scale": torch.full((1,), _NodeScaler.INIT, device=device),
                "growth": torch.zeros(1, dtype=torch.int32, device=device)}

    @staticmethod
    def scale_backward(logits, scale):
        logits.register_hook(lambda g: g * scale.view(-1, 1, 1))
        return logits

    @staticmethod
    def unscale(grads, scale):
        """``(gradients / scale, ok)``: ``ok`` (n,) is True where every gradient of the node is finite."""
        inv = 1.0 / scale
        grads = [g * _bcast(inv, g) for g in grads]
        ok = torch.stack([torch.isfinite(g).flatten(1).all(dim=1) for g in grads]).all(dim=0)
        return grads, ok

    @staticmethod
    def update(state, ok):
        grown = state["growth"] + 1
        double = ok & (grown >= _NodeScaler.GROWTH_INTERVAL)
        state["scale"] = torch.where(ok, torch.where(double, state["scale"] * 2, state["scale"]),
                                     state["scale"] * 0.5)
        state["growth"] = torch.where(ok & ~double, grown, torch.zeros_like(grown))


# --------------------------------------------------------------------------- backends

class _Batched:
    """The batched learners: state = tensors with a leading node dimension, on ``device``."""

    def __init__(self, learner, config, seed, xtr, device=_CPU, precision="fp32", herd_nodes=None):
        self.learner, self.cfg, self.seed = learner, config, seed
        self.device, self.precision = device, precision
        self.xtr = move(xtr, device)                                      # once per run
        self.C, self.ntr = xtr.shape[0], xtr.shape[1]
        self.herd_nodes = herd_nodes
        self.fp16 = precision == "fp16"
        if learner == "ncm":
            self.means = _unit(_unit(self.xtr).mean(dim=1))                # (C, D)

    def autocast(self):
        return autocast(self.device, self.precision)

    def root(self):
        if self.learner == "ncm":
            return {}
        base = move(init_params(self.xtr.shape[2], self.cfg.hidden, self.C, self.seed), self.device)
        state = {"params": [p.unsqueeze(0) for p in base], "buf": [torch.zeros_like(p).unsqueeze(0) for p in base]}
        if self.fp16:
            state.update(_NodeScaler.root(self.device))
        return state

    def select(self, state, idx):
        idx = move(torch.as_tensor(idx), self.device)

        def pick(v):
            if v is None:
                return None
            if isinstance(v, list):
                return [pick(u) for u in v]
            return v[idx]
        return {k: pick(v) for k, v in state.items()}

    def _batch(self, classes, idx, mem_x, mem_y, ar):
        """Rows ``idx`` (n, b) of each node's task data (its M classes, then its memory); ``ar``: arange(n)[:, None]."""
        T = classes.shape[1] * self.ntr
        slot = torch.clamp(idx // self.ntr, max=classes.shape[1] - 1)
        cls = classes[ar, slot]
        xb = self.xtr[cls, idx % self.ntr]
        if mem_x is None:
            return xb, cls
        in_mem = idx >= T
        j = torch.clamp(idx - T, min=0)
        xb = torch.where(in_mem[..., None], mem_x[ar, j], xb)
        return xb, torch.where(in_mem, mem_y[ar, j], cls)

    def _loss(self, params, xb, yb, seen, old, old_mask, scale=None):
        """The step's loss (summed over nodes) under autocast; fp16: the logits' gradient scaled per node."""
        cfg = self.cfg
        with self.autocast():
            logits = _logits(params, xb).float()
            if scale is not None:
                _NodeScaler.scale_backward(logits, scale)
            loss = _ce(_masked(logits, seen), yb)
            if old is not None:
                with torch.no_grad():
                    old_logits = _logits(old, xb).float()
                lam = cfg.lwf_lambda if self.learner == "lwf" else cfg.kd_lambda
                loss = loss + lam * _kd(logits, old_logits, old_mask, cfg.temperature)
        return loss

    def step(self, state, params, buf, xb, yb, seen, old_mask, lr=None, wd=0.0):
        """One SGD-with-momentum step of every node on its minibatch (xb (n, b, D), yb (n, b)), in place;
        ``lr`` (default ``cfg.lr``) and weight decay ``wd`` (``torch.optim.SGD``'s: ``wd * p`` added to the
        gradient before the momentum) from the schedule."""
        cfg = self.cfg
        lr = cfg.lr if lr is None else lr
        fis, fth = state.get("fisher"), state.get("fisher_theta")
        scale = state.get("scale")
        loss = self._loss(params, xb, yb, seen, state.get("old"), old_mask, scale)
        grads = torch.autograd.grad(loss, params)
        ok = None
        if scale is not None:
            grads, ok = _NodeScaler.unscale(grads, scale)
        with torch.no_grad():
            for i, (p, g, b) in enumerate(zip(params, grads, buf)):
                if fis is not None:               # EWC: lambda (sum_k F_k p - sum_k F_k theta*_k)
                    g = g + cfg.ewc_lambda * (fis[i] * p - fth[i])
                if wd:
                    g = g + wd * p
                if ok is None:
                    b.mul_(cfg.momentum).add_(g)
                    p.sub_(lr * b)
                else:                             # fp16: a node whose gradients overflowed skips its step
                    keep = _bcast(ok, b)
                    b.copy_(torch.where(keep, b * cfg.momentum + g, b))
                    p.sub_(torch.where(keep, lr * b, b.new_zeros(())))
            if ok is not None:
                _NodeScaler.update(state, ok)

    def start(self, state):
        """Trainable copies of a level's parameters and momentum (the state itself is kept)."""
        params = [p.detach().clone().requires_grad_(True) for p in state["params"]]
        return params, [b.clone() for b in state["buf"]]

    def train(self, state, prefixes, codes, t, seen, old_mask):
        if self.learner == "ncm":
            return state
        cfg, learner, dev = self.cfg, self.learner, self.device
        classes = move(torch.as_tensor(prefixes[:, t]), dev)
        n = len(classes)
        ar = torch.arange(n, device=dev)[:, None]
        state = dict(state)
        params, buf = self.start(state)
        if cfg.reset_optimizer:                   # a new SGD for this task: momentum from zero
            buf = [torch.zeros_like(b) for b in buf]
        mem_x, mem_y = state.get("mem_x"), state.get("mem_y")
        total = classes.shape[1] * self.ntr + (mem_x.shape[1] if mem_x is not None else 0)
        wd = cfg.task_weight_decay(t)
        for epoch in range(cfg.task_epochs(t)):
            lr = cfg.task_lr(t, epoch)
            # batch orders from CPU generators keyed by the prefix, moved once per epoch
            order = move(torch.stack([batch_order(self.seed, c, t, epoch, total) for c in codes]), dev)
            for start in range(0, total, cfg.batch_size):
                xb, yb = self._batch(classes, order[:, start:start + cfg.batch_size], mem_x, mem_y, ar)
                self.step(state, params, buf, xb, yb, seen, old_mask, lr, wd)
        fis, fth = state.get("fisher"), state.get("fisher_theta")
        out = {"params": [p.detach() for p in params], "buf": buf}
        if self.fp16:
            out.update(scale=state["scale"], growth=state["growth"])
        if learner == "ewc":
            fisher = self._fisher(params, classes, seen, ar)
            theta = out["params"]
            out["fisher"] = fisher if fis is None else [a + f for a, f in zip(fis, fisher)]
            out["fisher_theta"] = ([f * p for f, p in zip(fisher, theta)] if fth is None
                                   else [a + f * p for a, f, p in zip(fth, fisher, theta)])
        if learner in ("lwf", "icarl"):
            out["old"] = [p.clone() for p in out["params"]]
        if learner == "icarl":
            ex, ey = self._exemplars(out["params"], classes)
            out["mem_x"] = ex if mem_x is None else torch.cat([mem_x, ex], dim=1)
            out["mem_y"] = ey if mem_y is None else torch.cat([mem_y, ey], dim=1)
        return out

    def _fisher(self, params, classes, seen, ar):
        """EWC's minibatch empirical Fisher of the task just trained, in float32 (no autocast: squared
        gradients underflow in half precision)."""
        cfg, n = self.cfg, len(classes)
        fisher = [torch.zeros_like(p) for p in params]
        nb, T = 0, classes.shape[1] * self.ntr
        for start in range(0, T, cfg.batch_size):
            rows = torch.arange(start, min(T, start + cfg.batch_size), device=self.device).expand(n, -1)
            xb, yb = self._batch(classes, rows, None, None, ar)
            grads = torch.autograd.grad(_ce(_masked(_logits(params, xb), seen), yb), params)
            for f, g in zip(fisher, grads):
                f += g.detach() ** 2
            nb += 1
        return [f / nb for f in fisher]

    def _exemplars(self, params, classes):
        """iCaRL's herding on the new classes (float32), in groups of ``herd_nodes`` nodes."""
        n, M = classes.shape
        m = self.cfg.memory_per_class
        group = self.herd_nodes or n
        ex, ey = [], []
        with torch.no_grad():
            for s in range(0, n, group):
                cl = classes[s:s + group]
                g = len(cl)
                new_x = self.xtr[cl]                                           # (g, M, ntr, D)
                feats = _unit(torch.stack([_features([p[s:s + group] for p in params], new_x[:, j])
                                           for j in range(M)], dim=1))
                pick = _herding(feats.reshape(g * M, *feats.shape[2:]), m)
                flat = new_x.reshape(g * M, *new_x.shape[2:])
                ex.append(flat[torch.arange(g * M, device=self.device)[:, None], pick].reshape(g, M * m, -1))
                ey.append(cl[:, :, None].expand(g, M, m).reshape(g, -1))
        return torch.cat(ex), torch.cat(ey)

    def scores(self, state, rows, x):
        """Class scores (r, B, C) of nodes ``rows`` (a slice) on the inputs ``x`` (B, D) shared by all nodes."""
        if self.learner == "ncm":
            return (_unit(x) @ self.means.T).expand(rows.stop - rows.start, -1, -1)
        params = [p[rows] for p in state["params"]]
        with self.autocast():
            hid = torch.relu(torch.matmul(x, params[0]) + params[1].unsqueeze(1))     # (r, B, H)
            if self.learner == "icarl" and self.cfg.icarl_classifier == "nme":
                fm = _unit(_features(params, state["mem_x"][rows]))           # (r, n_mem, H)
                onehot = F.one_hot(state["mem_y"][rows], self.C).to(fm.dtype)  # (r, n_mem, C)
                means = _unit(torch.einsum("lnc,lnh->lch", onehot, fm) / onehot.sum(1).clamp_min(1).unsqueeze(-1))
                return torch.einsum("lbh,lch->lbc", _unit(hid), means).float()
            return torch.baddbmm(params[3].unsqueeze(1), hid, params[2]).float()

