"""The built wheel works outside any checkout: notebooks, parameter sets, grids, course and class names ship
as package data copied from the checkout at build time, so that installed elsewhere it lists, runs a smoke
set, builds the course and runs a sweep (issue 42)."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "CITATION.cff"]
FOLDERS = ["clkit", "notebooks", "data/class_names"]


def _sources(tmp_path_factory) -> Path:
    """A copy of the checkout's sources that a build reads (nothing is written into the checkout)."""
    src = tmp_path_factory.mktemp("src")
    for f in FILES:
        shutil.copy2(ROOT / f, src / f)
    for d in FOLDERS:
        shutil.copytree(ROOT / d, src / d, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    return src


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel built from a copy of the checkout's sources (nothing written into the checkout)."""
    src = _sources(tmp_path_factory)
    out = tmp_path_factory.mktemp("dist")
    # build isolation: pip brings the setuptools pyproject.toml asks for (a venv's own may be older)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", "-w", str(out)],
                   check=True, capture_output=True, text=True)
    return next(out.glob("clkit-*.whl"))


def test_twine_check_passes_for_the_wheel_and_the_sdist(wheel, tmp_path_factory):
    """PyPI would accept both: metadata complete, README.md renders as the long description (issue 42)."""
    pytest.importorskip("twine")
    src, out = _sources(tmp_path_factory), tmp_path_factory.mktemp("sdist")
    subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(out)], cwd=src, check=True,
                   capture_output=True, text=True)
    [sdist] = out.glob("clkit-*.tar.gz")
    res = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
                         capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.count("PASSED") == 2, res.stdout + res.stderr


def test_the_wheel_carries_every_notebook_set_grid_and_class_list(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for nb in sorted((ROOT / "notebooks").glob("0*.ipynb")):
        assert f"clkit/_bundle/notebooks/{nb.name}" in names
    for y in (ROOT / "notebooks").rglob("*.yaml"):
        assert f"clkit/_bundle/notebooks/{y.relative_to(ROOT / 'notebooks').as_posix()}" in names
    for t in (ROOT / "data" / "class_names").glob("*.txt"):
        assert f"clkit/_bundle/data/class_names/{t.name}" in names
    assert "clkit/data/planetoid/cora/LICENSE" in names


def test_installed_outside_a_checkout_it_lists_and_runs(wheel, tmp_path):
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("CLKIT_NOTEBOOKS", None)
    work = tmp_path / "elsewhere"
    work.mkdir()

    def clkit(*args, timeout=300):
        return subprocess.run([sys.executable, "-m", "clkit", *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=timeout)

    where = subprocess.run([sys.executable, "-c", "import clkit, clkit._io as io; print(clkit.__file__); "
                            "print(io.resource_dir('notebooks'))"], cwd=work, env=env, capture_output=True,
                           text=True, check=True).stdout.split()
    assert where[0].startswith(str(site)) and where[1] == str(site / "clkit" / "_bundle" / "notebooks")
    listed = clkit("list")
    assert listed.returncode == 0 and "03_temporal_metrics" in listed.stdout and "paper" in listed.stdout
    run = clkit("run", "03", "--params", "smoke", "--out", str(work / "runs"), "--no-progress")
    assert run.returncode == 0, run.stdout + run.stderr
    res = json.loads((work / "runs" / "03_temporal_metrics" / "results.json").read_text())
    assert res["manifest"]["git"] is None and res["paper"]["key"] == "iovine2026tracking"
    copied = clkit("notebooks", "copy", str(work / "mine"))
    assert copied.returncode == 0 and (work / "mine" / "params" / "05_drift" / "smoke.yaml").exists()
    from_cls = subprocess.run([sys.executable, "-c", "from clkit.data.class_names import load_class_names; "
                               "print(len(load_class_names('cifar100')))"], cwd=work, env=env,
                              capture_output=True, text=True, check=True)
    assert from_cls.stdout.strip() == "100"

    # the course build: nbgrader's release of the five assignments, from the sources the wheel carries
    built = clkit("course", "build", "--out", str(work / "course"))
    assert built.returncode == 0, built.stdout + built.stderr
    course = json.loads((work / "course" / "course.json").read_text())
    for name in course["assignments"]:
        release = work / "course" / "release" / name / f"{name}.ipynb"
        assert release.exists() and "### BEGIN SOLUTION" not in release.read_text(), name
    assert len(course["assignments"]) == 5

    # a sweep on a local Dask cluster of one worker: one case of 03's smoke set (two learners)
    (work / "grid.yaml").write_text("params: smoke\ngrid:\n  learners: [[erm, finetune]]\n")
    swept = clkit("sweep", "03", "--grid", "grid.yaml", "--out", str(work / "sweep"), "--workers", "1",
                  "--no-progress")
    assert swept.returncode == 0, swept.stdout + swept.stderr
    case = work / "sweep" / "03_temporal_metrics" / "learners=erm+finetune"
    assert json.loads((case / "run.json").read_text())["status"] == "ok"
    assert json.loads((case / "results.json").read_text())["params"]["learners"] == ["erm", "finetune"]
    assert (work / "sweep" / "03_temporal_metrics" / "summary.csv").exists()
