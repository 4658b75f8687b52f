"""TinyReplay: online experience replay with a reservoir memory, as a clkit plugin.

Each training step mixes ``replay_size`` samples drawn from a memory of at most
``memory_size`` past samples into the incoming batch; the memory is a reservoir sample
of everything seen (Vitter 1985; as in Chaudhry et al., "On Tiny Episodic Memories in
Continual Learning", 2019). No task boundaries are needed.
"""

import torch

from clkit.strategies import Strategy

__all__ = ["TinyReplay"]


class TinyReplay(Strategy):
    """Reservoir replay: online, class-incremental, classification or regression, any model."""

    # capabilities, declared like clkit's built-in strategies
    task_free = True               # trains online through observe(): no task boundaries
    supports_regression = True     # loss="mse" is fine
    task_incremental_only = False  # class-incremental (single head, no task id)
    supports_task_scenario = False # replayed labels of old tasks would fall outside the task mask
    supports_graph = True          # inputs may be node indices of a graph model
    needs_graph_model = False      # any nn.Module

    def __init__(self, model, *, memory_size: int = 200, replay_size: int = 32, **kwargs):
        super().__init__(model, **kwargs)
        if self.scenario == "task":
            raise ValueError("tiny_replay supports scenario='class' only")
        if not isinstance(memory_size, int) or memory_size < 1:
            raise ValueError(f"memory_size must be an integer >= 1, got {memory_size!r}")
        self.memory_size, self.replay_size = memory_size, replay_size
        self.mem_x = self.mem_y = None
        self.num_seen = 0

    def augment_batch(self, x, y, task):
        if self.mem_x is None or self.replay_size == 0:
            return x, y
        n = len(self.mem_y)
        idx = torch.randint(n, (min(self.replay_size, n),), generator=self.generator)
        return torch.cat([x, self.mem_x[idx]]), torch.cat([y, self.mem_y[idx]])

    def after_step(self, x, y, task):
        x, y = x.detach(), y.detach()
        for i in range(len(y)):
            self.num_seen += 1
            if self.mem_x is None:
                self.mem_x, self.mem_y = x[i:i + 1].clone(), y[i:i + 1].clone()
            elif len(self.mem_y) < self.memory_size:
                self.mem_x, self.mem_y = torch.cat([self.mem_x, x[i:i + 1]]), torch.cat([self.mem_y, y[i:i + 1]])
            else:
                j = int(torch.randint(self.num_seen, (1,), generator=self.generator))
                if j < self.memory_size:
                    self.mem_x[j], self.mem_y[j] = x[i], y[i]
