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
