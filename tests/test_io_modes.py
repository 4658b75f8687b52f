"""Files clkit writes follow the umask like an ordinary ``open(path, "w")`` (issue 43: they were 0600)."""

import os
import stat

import pytest

from clkit._io import atomic_save, atomic_write_json, atomic_write_text


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda m: os.umask(m)
    os.umask(old)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_written_files_get_0666_less_the_umask(tmp_path, umask, mask, mode):
    umask(mask)
    files = [atomic_write_text(tmp_path / "a.txt", "x"), atomic_write_json(tmp_path / "results.json", {"a": 1}),
             atomic_save(tmp_path / "t.csv", lambda tmp: open(tmp, "w").write("a,b\n"))]
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    assert stat.S_IMODE(plain.stat().st_mode) == mode          # what open() gives: the reference
    assert [stat.S_IMODE(f.stat().st_mode) for f in files] == [mode] * 3


def test_overwriting_keeps_the_umask_mode_and_leaves_no_temporary_file(tmp_path, umask):
    umask(0o022)
    p = atomic_write_text(tmp_path / "r.json", "1")
    atomic_write_text(p, "2")
    assert p.read_text() == "2" and stat.S_IMODE(p.stat().st_mode) == 0o644
    assert sorted(x.name for x in tmp_path.iterdir()) == ["r.json"]


# ------------------------------------------------------------------ a seed beyond what the generators take

@pytest.mark.parametrize("seed, ok", [(0, True), (2**32 - 1, True), (2**32, False), (-1, False),
                                      (99999999999999999999, False)])
def test_a_runs_seed_is_bounded_and_named(seed, ok):
    """``-p seed 99999999999999999999`` reached torch as "Overflow when unpacking long long"; now the
    notebooks' checks refuse it naming ``seed``. The largest allowed seed plus a run's offsets still
    seeds torch and NumPy."""
    import numpy as np
    import torch

    from clkit._validate import MAX_SEED, check_seed

    if ok:
        assert check_seed("seed", seed) == seed
        torch.Generator().manual_seed(seed + 1000)
        np.random.default_rng(seed + 1000)
    else:
        with pytest.raises(ValueError, match=rf"seed must be an integer in \[0, {MAX_SEED}\], got {seed}"):
            check_seed("seed", seed)
