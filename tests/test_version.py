"""clkit's version comes from git (setuptools-scm, issue 42): an editable install of a tagged clone, an
sdist built there and installed outside git, and ``clkit --version`` say the tag-based version."""

import subprocess
import sys
import venv
from pathlib import Path

import pytest

from clkit import manifest as mf
from clkit.cli import main

ROOT = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=clkit test", "-c", "user.email=test@clkit.invalid"]


def _run(*args, **kwargs):
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600, **kwargs)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout.strip()


@pytest.fixture(scope="module")
def tagged(tmp_path_factory):
    """A clone of the checkout's HEAD, tagged v9.8.7 (its own tag, so the checkout's tags do not matter) with
    one commit after the tag, and a venv (setuptools and setuptools-scm from the package index) beside it."""
    base = tmp_path_factory.mktemp("version")
    clone = base / "clkit"
    _run("git", "clone", "-q", "--no-hardlinks", ROOT, clone)
    _run(*GIT, "-C", clone, "tag", "-a", "v9.8.7", "-m", "test tag")
    _run(*GIT, "-C", clone, "commit", "-q", "--allow-empty", "-m", "one commit after the tag")
    env = base / "venv"
    venv.create(env, with_pip=True)
    return clone, env / "bin" / "python"


def test_editable_install_and_sdist_carry_the_tag_based_version(tagged, tmp_path):
    clone, py = tagged
    _run(py, "-m", "pip", "install", "-q", "--no-deps", "-e", clone)
    ask = "import importlib.metadata as m, clkit.manifest as mf; print(m.version('clkit'), mf.version())"
    assert _run(py, "-c", ask, cwd=tmp_path).split() == ["9.8.7.post1.dev1"] * 2
    # an sdist built in git, installed outside it: the version travels in its PKG-INFO
    _run(py, "-m", "pip", "install", "-q", "setuptools>=77", "setuptools-scm>=8")
    _run(py, "setup.py", "-q", "sdist", "-d", tmp_path / "dist", cwd=clone)
    [sdist] = (tmp_path / "dist").glob("clkit-*.tar.gz")
    assert sdist.name == "clkit-9.8.7.post1.dev1.tar.gz"
    _run(py, "-m", "pip", "uninstall", "-q", "-y", "clkit")
    _run(py, "-m", "pip", "install", "-q", "--no-deps", "--target", tmp_path / "site", sdist)
    assert (tmp_path / "site" / "clkit" / "_bundle" / "notebooks" / "05_drift.ipynb").is_file()   # setup.py ran
    [meta] = (tmp_path / "site").glob("clkit-*.dist-info")
    assert meta.name == "clkit-9.8.7.post1.dev1.dist-info"


def test_version_flag_names_version_commit_and_dirty_flag(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    out = capsys.readouterr().out.strip()
    git = mf.git_state()
    want = f"clkit {mf.version()}"
    if git is not None:
        want += f" (commit {git['commit'][:12]}{', uncommitted changes' if git['dirty'] else ''})"
    assert out == want


def test_checkout_version_follows_its_last_tag():
    git = mf.git_state()
    if git is None:
        pytest.skip("not a git checkout")
    described = subprocess.run(["git", "-C", str(ROOT), "describe", "--tags", "--long", "--match", "v[0-9]*"],
                               capture_output=True, text=True)
    if described.returncode != 0:
        pytest.skip("no v* tag in this checkout (a shallow clone?)")
    assert mf.version() == mf.scm_version(described.stdout, git["dirty"])
    import clkit

    assert mf.version().startswith(clkit.__version__)      # __version__: the release (sweeps key cases on it)
    assert mf.manifest(gpu=False)["git"] == git


def test_scm_version_refuses_what_is_not_describe_output():
    with pytest.raises(ValueError, match="describe must be"):
        mf.scm_version("abc", False)
