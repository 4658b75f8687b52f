"""Continual-learning strategies behind one interface (see :mod:`clkit.strategies.base`).

``make_strategy(name, model, **kwargs)`` builds one by name;
``available_strategies()`` lists the names.
"""

from .base import Strategy, Task, available_strategies, make_strategy, register, take

Naive = Strategy

__all__ = ["Strategy", "Naive", "Task", "available_strategies", "make_strategy", "register", "take"]
