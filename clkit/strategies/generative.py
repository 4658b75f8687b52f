"""Generative replay (Shin et al., 2017) with a small VAE generator.

A *scholar* is a solver (the model) plus a generator. While task ``t`` is
learned, every training step appends as many *generated* rows as the incoming
batch has: ``x~`` drawn from the generator frozen at the end of task ``t - 1``
and labelled by the solver frozen at the same moment -- the arg-max over the
classes seen so far (classification; in the task-incremental scenario each
generated row is masked to the task its label belongs to) or the old solver's
outputs (regression). The generator itself -- a variational auto-encoder with
one hidden layer in encoder and decoder (the paper's choice of generator, as
in Avalanche's ``GenerativeReplay``) -- is trained in the same loop on the
incoming rows plus its predecessor's samples, one Adam step per solver step,
so it keeps modelling every task seen. The first task trains both on real
data only.

Inputs must be float tensors (any shape; flattened for the VAE, which uses a
Gaussian likelihood whose variance -- one scalar -- is learned with the rest,
so the reconstruction term is scaled to the data and the posterior does not
collapse onto the prior). Needs task boundaries.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from .._seed import torch_seeded
from .._validate import check_int, check_real
from ._common import TaskAwareStrategy
from .base import Task, _cat, register

__all__ = ["VAE", "GenerativeReplay"]


class VAE(nn.Module):
    """Fully connected variational auto-encoder over inputs of shape ``in_shape``.

    Parameters
    ----------
    in_shape : tuple of int
        Shape of one input row, e.g. ``(3, 32, 32)``.
    latent_dim : int
    hidden : int

    Examples
    --------
    >>> vae = VAE((2, 3), latent_dim=4, hidden=8)
    >>> vae.sample(5, torch.Generator().manual_seed(0)).shape
    torch.Size([5, 2, 3])
    >>> float(vae.loss(torch.zeros(7, 2, 3)).detach()) > 0
    True
    """

    def __init__(self, in_shape, latent_dim: int = 32, hidden: int = 256):
        super().__init__()
        self.in_shape = tuple(in_shape)
        self.latent_dim = latent_dim
        d = math.prod(self.in_shape)
        self.encoder = nn.Sequential(nn.Flatten(), nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, 2 * latent_dim))
        self.decoder = nn.Sequential(nn.Linear(latent_dim, hidden), nn.ReLU(), nn.Linear(hidden, d))
        #: log of the decoder's observation variance (one scalar, learned)
        self.log_noise = nn.Parameter(torch.zeros(()))

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """Decoder mean for latent codes ``z`` (shape (B, latent_dim)) -> (B, *in_shape)."""
        return self.decoder(z).view(len(z), *self.in_shape)

    def loss(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Negative ELBO per row (Gaussian likelihood with learned variance, up to a constant), batch mean."""
        mu, logvar = self.encoder(x).chunk(2, dim=1)
        eps = torch.randn(mu.shape, generator=generator).to(mu)
        recon = self.decode(mu + eps * (0.5 * logvar).exp())
        sq = F.mse_loss(recon, x, reduction="none").flatten(1)
        rec = 0.5 * (sq * (-self.log_noise).exp() + self.log_noise).sum(1)
        kl = -0.5 * (1 + logvar - mu ** 2 - logvar.exp()).sum(1)
        return (rec + kl).mean()

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """``n`` samples ``decode(z)``, ``z ~ N(0, I)`` -> (n, *in_shape)."""
        z = torch.randn((n, self.latent_dim), generator=generator)
        return self.decode(z.to(next(self.parameters()).device))


@register("generative_replay")
class GenerativeReplay(TaskAwareStrategy):
    """Deep generative replay: VAE generator + the old solver's labels.

    Parameters
    ----------
    model : torch.nn.Module
    generator_latent : int
        Latent size of the VAE.
    generator_hidden : int
        Hidden width of the VAE's encoder and decoder.
    generator_lr : float
        Adam learning rate of the VAE.
    **kwargs
        Passed to :class:`~clkit.strategies.Strategy`.

    Examples
    --------
    >>> from clkit.models import MLP
    >>> s = GenerativeReplay(MLP(3, 4, hidden=(8,)), generator_latent=2, generator_hidden=8)
    >>> _ = s.train_task(Task(torch.randn(16, 3), torch.tensor([0, 1] * 8), task_id=0))
    >>> xb, yb, tb = s.replay(torch.randn(5, 3), torch.tensor([2, 3, 2, 3, 2]), Task(torch.zeros(1, 3), torch.tensor([2]), 1))
    >>> xb.shape, set(yb[5:].tolist()) <= {0, 1}
    (torch.Size([10, 3]), True)
    """

    task_free = False

    def __init__(self, model, *, generator_latent: int = 32, generator_hidden: int = 256,
                 generator_lr: float = 1e-3, **kwargs):
        super().__init__(model, **kwargs)
        self.generator_latent = check_int("generator_latent", generator_latent, low=1)
        self.generator_hidden = check_int("generator_hidden", generator_hidden, low=1)
        self.generator_lr = check_real("generator_lr", generator_lr, low=0, low_open=True)
        self.vae = None
        self.vae_optimizer = None
        self.old_vae = None
        self.old_solver = None
        self._generated = None

    def _build_vae(self, x) -> None:
        if not torch.is_tensor(x) or not torch.is_floating_point(x):
            raise TypeError("GenerativeReplay needs float tensor inputs x (a VAE generates them)")
        with torch_seeded(self.seed):
            self.vae = VAE(x.shape[1:], self.generator_latent, self.generator_hidden).to(self.device)
        self.vae_optimizer = torch.optim.Adam(self.vae.parameters(), lr=self.generator_lr)

    def replay(self, x, y, task: Task | None):
        tids = self.task_ids_of(len(y), task)
        self._generated = None
        if self.old_vae is None:
            return x, y, tids
        xg = self.old_vae.sample(len(y), self.generator)
        with torch.no_grad():
            out = self.old_solver(xg)
        if torch.is_floating_point(y):
            yg, tg = out.to(y.dtype), torch.full((len(y),), -1, dtype=torch.int64, device=y.device)
        else:   # the old solver's label among the old classes, and the task that owns it (on the device)
            old, owner = self._old_classes(task, out.device)
            yg = old[out.index_select(1, old).argmax(1)]
            tg = owner[yg]
        self._generated = xg
        return _cat(x, xg), torch.cat([y, yg.to(y.dtype)]), torch.cat([tids, tg])

    def _old_classes(self, task, device):
        """The classes of the earlier tasks (sorted) and a lookup class -> owning task, on ``device``;
        kept while the tasks stay the same."""
        key = (task.task_id if task is not None else None, tuple(self.task_classes.items()), device)
        cached = getattr(self, "_old_cache", None)
        if cached is None or cached[0] != key:
            earlier = {t: cl for t, cl in self.task_classes.items() if task is None or t != task.task_id}
            old = sorted({c for cl in earlier.values() for c in cl})
            owner = torch.full((max(old) + 1,), -1, dtype=torch.int64)
            for t, cl in earlier.items():
                owner[list(cl)] = t
            cached = self._old_cache = (key, torch.as_tensor(old, device=device), owner.to(device))
        return cached[1], cached[2]

    def before_task(self, task: Task) -> None:
        if self.vae is None:
            self._build_vae(task.x)

    def after_step(self, x, y, task) -> None:
        if self.vae is None:
            self._build_vae(x)
        batch = x if self._generated is None else torch.cat([x, self._generated])
        self.vae.train()
        self.vae_optimizer.zero_grad(set_to_none=True)
        self.vae.loss(batch, self.generator).backward()
        self.vae_optimizer.step()

    def after_task(self, task: Task) -> None:
        if self.vae is None:
            return
        self.old_vae = copy.deepcopy(self.vae).eval()
        self.old_solver = self.clone_model().eval()
