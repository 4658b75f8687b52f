"""clkit._seed: seeded blocks on torch's one global generator stay seeded when threads run them at once."""

import threading
import time

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
