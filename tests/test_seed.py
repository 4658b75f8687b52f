"""clkit._seed: seeded blocks on torch's one global generator stay seeded when threads run them at once."""

import threading
import time

import pytest
import torch

from clkit._seed import torch_seeded


def _draws(seed, pause):
    with torch_seeded(seed):
        a = torch.rand(4)
        time.sleep(pause)          # another thread gets the interpreter here
        b = torch.rand(4)
    return torch.cat([a, b])


def test_threads_in_seeded_blocks_draw_their_own_numbers():
    """Without the lock, a thread seeding the generator between another's two draws hands it its numbers
    (the race that made notebook 02's learners-in-threads give other EWC numbers under load)."""
    expected = {s: _draws(s, 0.0) for s in range(6)}
    got = {}

    def work(s):
        got[s] = _draws(s, 0.01)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in range(6):
        assert torch.equal(got[s], expected[s]), s


def test_seeded_blocks_nest_and_restore_the_callers_state():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    with torch_seeded(1):
        with torch_seeded(2):                      # the lock is re-entrant
            inner = torch.rand(2)
        outer = torch.rand(2)
    assert torch.equal(torch.random.get_rng_state(), before)
    with torch_seeded(2):
        assert torch.equal(torch.rand(2), inner)
    with torch_seeded(1):
        assert torch.equal(torch.rand(2), outer)


def test_pnn_adapters_come_from_the_strategy_seed_not_the_global_generator():
    """Issue 55: PNN's lateral adapters drew from torch's global generator, so a rerun gave other
    adapters whenever anything else had drawn before."""
    from clkit.models import MLP
    from clkit.strategies import Task, make_strategy

    def adapters(noise: int, seed: int = 3):
        torch.rand(noise)                                   # other code drew before: the global state moved
        with torch_seeded(0):
            model = MLP(4, 4, hidden=(5,))
        s = make_strategy("pnn", model, scenario="task", seed=seed, epochs=0)
        for t in range(3):
            s.train_task(Task(torch.zeros(2, 4), torch.tensor([2 * t, 2 * t + 1]), task_id=t))
        return [p.detach().clone() for lat in s.model.laterals for p in lat.parameters()]

    a, b, c = adapters(1), adapters(17), adapters(1, seed=4)
    assert len(a) == 3 and all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, c))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_seeded_cuda_draws_repeat_and_leave_the_callers_cuda_state():
    torch.zeros(1, device="cuda")                           # CUDA initialised, as in a GPU run
    before = torch.cuda.get_rng_state()
    with torch_seeded(5):
        a = torch.rand(4, device="cuda")
    with torch_seeded(5):
        b = torch.rand(4, device="cuda")
    assert torch.equal(a, b) and torch.equal(torch.cuda.get_rng_state(), before)
