"""The ground truth's budget counts each method's own epochs and stages (clkit.edge.budget.strategy_epochs)."""

from types import SimpleNamespace

import numpy as np

from clkit.edge import enumerate_sequences
from clkit.edge.budget import strategy_epochs, truth_budget
from clkit.edge.learners import LearnerConfig


def test_strategy_epochs_counts_every_stage():
    cfg = LearnerConfig(epochs=5, init_epochs=9)
    plain = SimpleNamespace(epochs=4)
    assert [strategy_epochs(plain, cfg, t) for t in range(3)] == [9, 4, 4]       # the driver's init_epochs
    memo = SimpleNamespace(epochs=4, init_epochs=7)                              # MEMO schedules itself
    assert [strategy_epochs(memo, LearnerConfig(), t) for t in range(2)] == [7, 4]
    foster = SimpleNamespace(epochs=4, init_epochs=7, compression_epochs=None)  # compression: its epochs
    assert [strategy_epochs(foster, LearnerConfig(), t) for t in range(2)] == [7, 8]
    hide = SimpleNamespace(epochs=4, tii_epochs=2)
    assert strategy_epochs(hide, LearnerConfig(), 1) == 6


def test_learner_kwargs_epochs_reach_the_budget():
    """MEMO's own init_epochs / epochs from learner_kwargs (the protocol's) set its counted steps: 6 classes in
    3 tasks, 15 + 90 + 90 nodes, 8 rows a class, batch 8: 2 steps an epoch per task."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 8, 8)).astype("float32")
    data = {"x_train": x, "x_test": x[:, :4], "f_train": x, "f_test": x[:, :4]}
    cfg = LearnerConfig(hidden=8, epochs=1, batch_size=8)
    tb = truth_budget(data, enumerate_sequences(6, 3), [], ["memo"], config=cfg, seconds_per_timing=0.05,
                      learner_kwargs={"memo": {"init_epochs": 3, "epochs": 2, "batch_size": 8, "memory_size": 12}})
    steps = [w.count for w in tb.budget.work if w.name.startswith("memo steps")]
    assert steps == [(15 * 3 + 180 * 2) * 2]
