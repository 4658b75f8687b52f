"""Continual-learning strategies behind one interface (see :mod:`clkit.strategies.base`).

``make_strategy(name, model, **kwargs)`` builds one by name;
``available_strategies()`` maps every name to where it comes from: built in, an
entry point of the group ``clkit.strategies`` of an installed package, or an import
path ``"package.module:ClassName"`` (resolved in :mod:`~clkit.strategies.registry`; see
:mod:`clkit.plugins`). ``make_strategy`` accepts all three.

One module per family:

- :mod:`~clkit.strategies.base` -- ``naive`` fine-tuning and the interface;
- :mod:`~clkit.strategies.importance` -- ``ewc``, ``si``, ``mas`` (quadratic penalties);
- :mod:`~clkit.strategies.distillation` -- ``lwf``;
- :mod:`~clkit.strategies.icarl` -- ``icarl`` (herding exemplars, BCE distillation, nearest mean
  of exemplars);
- :mod:`~clkit.strategies.rehearsal` -- ``replay``, ``er``, ``cumulative``, ``gdumb``;
- :mod:`~clkit.strategies.projection` -- ``gem``, ``agem``;
- :mod:`~clkit.strategies.architectural` -- ``mste``, ``pnn``, ``cwr`` (CWR*);
- :mod:`~clkit.strategies.der` -- ``der`` (dynamically expandable representation, rehearsal);
- :mod:`~clkit.strategies.foster` -- ``foster`` (feature boosting and compression, rehearsal);
- :mod:`~clkit.strategies.memo` -- ``memo`` (shared generalised blocks, a specialised block per
  task, herding rehearsal);
- :mod:`~clkit.strategies.tagfex` -- ``tagfex`` (DER guided by a contrastive task-agnostic
  extractor);
- :mod:`~clkit.strategies.generative` -- ``generative_replay`` (VAE + old solver);
- :mod:`~clkit.strategies.prototype` -- ``simplecil`` (closed-form heads on frozen features, no
  gradient training), :mod:`~clkit.strategies.ranpac` -- ``ranpac`` (the same, on random projections);
- :mod:`~clkit.strategies.prompt` -- ``l2p`` (a prompt pool for a frozen ViT, chosen per image by
  key-query matching);
- :mod:`~clkit.strategies.coda_prompt` -- ``coda_prompt`` (decomposed attention-weighted prefix
  prompts for a frozen ViT);
- :mod:`~clkit.strategies.hide_prompt` -- ``hide_prompt`` (per-task prefix prompts, task identity
  inferred from the frozen ViT's features, heads re-trained on class statistics);
- :mod:`~clkit.strategies.ease` -- ``ease`` (an adapter subspace per task on a frozen ViT,
  prototype complement);
- :mod:`~clkit.strategies.mos` -- ``mos`` (merged adapters, classifier alignment, self-refined
  adapter retrieval);
- :mod:`~clkit.strategies.memory` -- reservoir, class- and task-balanced buffers.

Task-incremental only: ``mste``, ``pnn`` (they need the task id to pick an
expert / column). Needing task boundaries (``task_free = False``): all but
``naive``, ``er``, ``agem``, ``gdumb`` and ``simplecil``.

Regression (``loss="mse"``) is supported by every strategy except ``gdumb``
(class-balanced memory needs labels), ``icarl`` (exemplars per class, nearest class mean),
``cwr`` (per-class output rows), ``simplecil`` and ``ranpac`` (class prototypes, one-hot targets);
``lwf`` distils with MSE there, ``generative_replay`` replays the old solver's outputs.
``der``, ``foster``, ``memo``, ``tagfex`` and the ViT methods (``l2p``, ``coda_prompt``,
``hide_prompt``, ``ease``, ``mos``) are classification only too (per-class heads, exemplars or
prototypes).
"""

from .architectural import CWRStar, MSTE, PNN, ProgressiveNet
from . import base as _base
from .base import Strategy, Task, register, take
from .coda_prompt import CODAPrompt
from .der import DER, DERNet
from .ease import EASE
from .foster import FOSTER, FOSTERNet
from .hide_prompt import HiDePrompt
from .memo import MEMO, MEMONet
from .mos import MOS
from .tagfex import TagFex
from .distillation import LwF
from .icarl import ICaRL
from .generative import VAE, GenerativeReplay
from .importance import EWC, MAS, SI
from .memory import ClassBalancedBuffer, ReservoirBuffer, TaskBalancedBuffer
from .projection import AGEM, GEM
from .prompt import L2P
from .prototype import SimpleCIL
from .ranpac import RanPAC
from .rehearsal import ER, Cumulative, GDumb, Replay
from .registry import available_strategies, resolve_strategy

Naive = Strategy


def _resolve_plugin(name):
    return resolve_strategy(name)


# a registry lookup of a name no module registered resolves it as a plugin (entry point, import path)
_base._REGISTRY.fallback = _resolve_plugin


def make_strategy(name: str, model, **kwargs) -> Strategy:
    """Build the strategy ``name`` (registry name, entry point or ``"package.module:Class"``) around ``model``.

    Raises ``ValueError`` naming the allowed strategies for an unknown name.
    """
    return resolve_strategy(name, parameter="strategy")(model, **kwargs)


__all__ = ["Strategy", "Naive", "Task", "available_strategies", "make_strategy", "register", "take",
           "EWC", "SI", "MAS", "LwF", "ICaRL", "Replay", "ER", "Cumulative", "GDumb", "AGEM", "GEM",
           "MSTE", "PNN", "ProgressiveNet", "CWRStar", "GenerativeReplay", "VAE", "SimpleCIL", "RanPAC",
           "DER", "DERNet", "L2P", "FOSTER", "FOSTERNet", "MEMO", "MEMONet", "TagFex", "CODAPrompt",
           "HiDePrompt", "EASE", "MOS", "ReservoirBuffer", "ClassBalancedBuffer", "TaskBalancedBuffer"]
