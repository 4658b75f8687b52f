"""clkit's version is ``clkit.__version__``, the same in every clone of main (issue 55): tags never reach
the published main, so a tag-based version gave ``0.1.0.post1.dev615`` (commits counted from the
first) and this file's tests skipped ("no v* tag"). An editable install of a clone without tags, an
sdist built there and installed outside git, ``clkit --version`` and every manifest say the same."""

import re
import subprocess
import venv
from pathlib import Path

import pytest

import clkit
from clkit import manifest as mf
from clkit.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _run(*args, **kwargs):
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600, **kwargs)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout.strip()


@pytest.fixture(scope="module")
def tagless(tmp_path_factory):
    """A clone of the checkout without tags (as every clone of the published main is), and a venv beside it."""
    base = tmp_path_factory.mktemp("version")
    clone = base / "clkit"
    _run("git", "clone", "-q", "--no-tags", "--no-hardlinks", ROOT, clone)
    assert _run("git", "-C", clone, "tag") == ""
    env = base / "venv"
    venv.create(env, with_pip=True)
    return clone, env / "bin" / "python"


def test_the_version_is_pep_440_and_said_once():
    from packaging.version import Version

    v = Version(clkit.__version__)                      # refuses anything that is not PEP 440
    assert str(v) == clkit.__version__ and v.local is None
    assert mf.version() == clkit.__version__
    assert 'version = {attr = "clkit.__version__"}' in (ROOT / "pyproject.toml").read_text()
    assert "setuptools_scm" not in (ROOT / "pyproject.toml").read_text()


def test_a_tagless_clone_installs_and_builds_the_same_version(tagless, tmp_path):
    clone, py = tagless
    _run(py, "-m", "pip", "install", "-q", "--no-deps", "-e", clone)
    ask = "import importlib.metadata as m, clkit.manifest as mf; print(m.version('clkit'), mf.version())"
    assert _run(py, "-c", ask, cwd=tmp_path).split() == [clkit.__version__] * 2
    # an sdist built in the clone, installed outside git: the version travels in its PKG-INFO
    _run(py, "-m", "pip", "install", "-q", "setuptools>=77")
    _run(py, "setup.py", "-q", "sdist", "-d", tmp_path / "dist", cwd=clone)
    [sdist] = (tmp_path / "dist").glob("clkit-*.tar.gz")
    assert sdist.name == f"clkit-{clkit.__version__}.tar.gz"
    _run(py, "-m", "pip", "uninstall", "-q", "-y", "clkit")
    _run(py, "-m", "pip", "install", "-q", "--no-deps", "--target", tmp_path / "site", sdist)
    assert (tmp_path / "site" / "clkit" / "_bundle" / "notebooks" / "05_drift.ipynb").is_file()   # setup.py ran
    [meta] = (tmp_path / "site").glob("clkit-*.dist-info")
    assert meta.name == f"clkit-{clkit.__version__}.dist-info"


def test_version_flag_names_version_commit_and_dirty_flag(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    out = capsys.readouterr().out.strip()
    git = mf.git_state()
    want = f"clkit {clkit.__version__}"
    if git is not None:
        want += f" (commit {git['commit'][:12]}{', uncommitted changes' if git['dirty'] else ''})"
    assert out == want
    assert mf.manifest(gpu=False)["git"] == git


def test_changelog_says_how_releases_are_cut_and_names_a_release_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "## Cutting a release" in text
    release = re.sub(r"\.dev\d+$", "", clkit.__version__)
    if release == clkit.__version__:                     # a release commit: its heading is there
        assert re.search(rf"^## {re.escape(release)} ", text, re.M), f"CHANGELOG.md has no heading for {release}"
    else:
        assert "## Unreleased" in text
