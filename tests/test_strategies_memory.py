"""Rehearsal memories: reservoir uniformity, class and task balance."""

import numpy as np
import pytest
import torch
from scipy import stats

from clkit.strategies import ClassBalancedBuffer, ReservoirBuffer, TaskBalancedBuffer

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("batch", [1, 7, 30])
def test_reservoir_is_a_uniform_sample(batch):
    """Every stream position ends in memory with probability M/N (chi-square, 1500 runs)."""
    n, m, runs = 30, 5, 1500
    counts = np.zeros(n)
    for seed in range(runs):
        buf = ReservoirBuffer(m, seed=seed)
        x = torch.arange(n, dtype=torch.float32)[:, None]
        for s in range(0, n, batch):
            buf.add(x[s:s + batch], torch.arange(n)[s:s + batch])
        stored = buf.data()[1].numpy()
        assert len(set(stored.tolist())) == m  # no duplicates
        counts[stored] += 1
    expected = np.full(n, runs * m / n)
    p = stats.chisquare(counts, expected).pvalue
    assert p > 1e-3, (p, counts)


def test_reservoir_stores_rows_of_any_shape_and_tuples():
    buf = ReservoirBuffer(4, seed=0)
    x = (torch.randn(10, 3, 5, 5), torch.arange(10))
    buf.add(x, torch.arange(10) % 3, task_id=2)
    bx, by, bt = buf.data()
    assert bx[0].shape == (4, 3, 5, 5) and bx[1].shape == (4,)
    assert torch.equal(bx[1] % 3, by) and (bt == 2).all()
    # rows are stored intact: the image stored for index i is image i
    assert torch.equal(bx[0], x[0][bx[1]])


def test_reservoir_zero_memory_and_bad_size():
    buf = ReservoirBuffer(0)
    buf.add(torch.zeros(3, 1), torch.zeros(3))
    assert len(buf) == 0 and buf.seen == 3
    with pytest.raises(ValueError, match="memory_size"):
        ReservoirBuffer(-1)


def test_class_balanced_buffer_stays_balanced():
    rng = np.random.default_rng(0)
    buf = ClassBalancedBuffer(30, seed=0)
    # a strongly imbalanced stream, classes arriving one after another
    for c, n in enumerate([200, 50, 15, 80]):
        buf.add(torch.randn(n, 2), torch.full((n,), c))
        counts = buf.class_counts()
        quota = 30 // len(counts)
        assert sum(counts.values()) == 30
        # every class holds its quota, or everything it offered when fewer
        offered = {0: 200, 1: 50, 2: 15, 3: 80}
        for k, v in counts.items():
            assert v >= min(quota, offered[k])
        assert max(counts.values()) - min(v for k, v in counts.items() if offered[k] >= quota) <= 1
    y = torch.as_tensor(rng.integers(0, 5, 500))
    buf = ClassBalancedBuffer(50, seed=1)
    buf.add(torch.randn(500, 3), y)
    assert set(buf.class_counts().values()) == {10}


def test_class_balanced_rejects_float_labels():
    with pytest.raises(TypeError, match="integer class labels"):
        ClassBalancedBuffer(5).add(torch.zeros(3, 1), torch.zeros(3))


def test_task_balanced_buffer_shares_and_uniform_subsets():
    buf = TaskBalancedBuffer(9, seed=0)
    for t in range(3):
        buf.add_task(torch.arange(100.0)[:, None] + 1000 * t, torch.full((100,), t), task_id=t)
        x, y, tids = buf.data()
        assert torch.equal(y, tids)
        share = torch.bincount(tids).tolist()
        assert sorted(share) == sorted([9 // (t + 1) + (i < 9 % (t + 1)) for i in range(t + 1)])
        assert len(torch.unique(x)) == len(x)
