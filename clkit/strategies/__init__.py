"""Continual-learning strategies behind one interface (see :mod:`clkit.strategies.base`).

``make_strategy(name, model, **kwargs)`` builds one by name;
``available_strategies()`` lists the names.

One module per family:

- :mod:`~clkit.strategies.base` -- ``naive`` fine-tuning and the interface;
- :mod:`~clkit.strategies.importance` -- ``ewc``, ``si``, ``mas`` (quadratic penalties);
- :mod:`~clkit.strategies.distillation` -- ``lwf``;
- :mod:`~clkit.strategies.rehearsal` -- ``replay``, ``er``, ``cumulative``, ``gdumb``;
- :mod:`~clkit.strategies.projection` -- ``gem``, ``agem``;
- :mod:`~clkit.strategies.architectural` -- ``mste``, ``pnn``, ``cwr`` (CWR*);
- :mod:`~clkit.strategies.generative` -- ``generative_replay`` (VAE + old solver);
- :mod:`~clkit.strategies.memory` -- reservoir, class- and task-balanced buffers.

Task-incremental only: ``mste``, ``pnn`` (they need the task id to pick an
expert / column). Needing task boundaries (``task_free = False``): all but
``naive``, ``er``, ``agem`` and ``gdumb``.

Regression (``loss="mse"``) is supported by every strategy except ``gdumb``
(class-balanced memory needs labels) and ``cwr`` (per-class output rows);
``lwf`` distils with MSE there, ``generative_replay`` replays the old solver's outputs.
"""

from .architectural import CWRStar, MSTE, PNN, ProgressiveNet
from .base import Strategy, Task, available_strategies, make_strategy, register, take
from .distillation import LwF
from .generative import VAE, GenerativeReplay
from .importance import EWC, MAS, SI
from .memory import ClassBalancedBuffer, ReservoirBuffer, TaskBalancedBuffer
from .projection import AGEM, GEM
from .rehearsal import ER, Cumulative, GDumb, Replay

Naive = Strategy

__all__ = ["Strategy", "Naive", "Task", "available_strategies", "make_strategy", "register", "take",
           "EWC", "SI", "MAS", "LwF", "Replay", "ER", "Cumulative", "GDumb", "AGEM", "GEM",
           "MSTE", "PNN", "ProgressiveNet", "CWRStar", "GenerativeReplay", "VAE",
           "ReservoirBuffer", "ClassBalancedBuffer", "TaskBalancedBuffer"]
