"""clkit.lab: JupyterLab saves the tracked notebooks without outputs, every other notebook as it is."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from clkit.lab import ATTRIBUTE, SERVER_CONFIG, pre_save_hook, strip_outputs, strips_outputs

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
HAS_GIT = shutil.which("git") is not None


def _ran(nb: dict) -> dict:
    """The notebook as JupyterLab saves it after running: outputs, counts, run-time metadata."""
    nb = json.loads(json.dumps(nb))
    n = 0
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            n += 1
            cell["execution_count"] = n
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": f"cell {n}\n"},
                               {"output_type": "display_data", "metadata": {},
                                "data": {"text/plain": "<Figure>", "image/png": "iVBORw0KGgo="}}]
            cell["metadata"]["execution"] = {"iopub.status.busy": "2026-11-27T07:00:00Z"}
            cell["metadata"]["scrolled"] = True
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_notebooks_are_fixed_points(path):
    """Stripping a run of the committed notebook gives back its committed bytes."""
    text = path.read_text()
    stripped = strip_outputs(_ran(json.loads(text)))
    assert nbformat.writes(nbformat.from_dict(stripped)) + "\n" == text


def test_strip_outputs_keeps_sources_tags_and_ids():
    nb = _ran({"metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5,
               "cells": [{"cell_type": "markdown", "id": "m1", "metadata": {}, "source": "# t"},
                         {"cell_type": "code", "id": "c1", "metadata": {"tags": ["parameters"]},
                          "execution_count": None, "outputs": [], "source": "seed = 0"}]})
    out = strip_outputs(nb)
    code = out["cells"][1]
    assert (code["outputs"], code["execution_count"]) == ([], None)
    assert code["metadata"] == {"tags": ["parameters"]} and code["id"] == "c1"
    assert code["source"] == "seed = 0" and out["cells"][0]["source"] == "# t"
    assert out["metadata"] == {"kernelspec": {"name": "python3"}}


@pytest.mark.parametrize("bad", [None, [], {"cells": "x"}])
def test_strip_outputs_refuses_what_is_not_a_notebook(bad):
    with pytest.raises(TypeError, match="nb must be"):
        strip_outputs(bad)


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    """A git repository with the project's .gitattributes, .gitignore and one committed, output-free notebook."""
    _git(tmp_path, "init", "-q")
    shutil.copy2(ROOT / ".gitattributes", tmp_path / ".gitattributes")
    shutil.copy2(ROOT / ".gitignore", tmp_path / ".gitignore")  # .ipynb_checkpoints/
    (tmp_path / "notebooks").mkdir()
    src = NOTEBOOKS[0]
    shutil.copy2(src, tmp_path / "notebooks" / src.name)
    _git(tmp_path, "add", ".gitattributes", ".gitignore", f"notebooks/{src.name}")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "init")
    return tmp_path, f"notebooks/{src.name}"


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_the_project_marks_its_notebooks():
    out = subprocess.run(["git", "check-attr", ATTRIBUTE, "--", "notebooks/03_temporal_metrics.ipynb",
                          "notebooks/03_temporal_metrics.py", "README.md"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert [line.rsplit(": ", 1)[1] for line in out] == ["set", "unspecified", "unspecified"]


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_which_notebooks_are_stripped(repo, tmp_path_factory):
    root, rel = repo
    assert strips_outputs(root / rel)
    shutil.copy2(root / rel, root / "notebooks" / "scratch.ipynb")  # untracked: kept as saved
    assert not strips_outputs(root / "notebooks" / "scratch.ipynb")
    (root / "mine").mkdir()
    shutil.copy2(root / rel, root / "mine" / "copy.ipynb")
    _git(root, "add", "mine/copy.ipynb")  # tracked but not marked
    assert not strips_outputs(root / "mine" / "copy.ipynb")
    outside = tmp_path_factory.mktemp("nogit") / "a.ipynb"
    shutil.copy2(root / rel, outside)
    assert not strips_outputs(outside)


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_a_server_with_the_hook_leaves_git_status_clean(repo):
    """Jupyter server's own contents manager, configured as ``make install`` configures it."""
    from jupyter_server.services.contents.filemanager import FileContentsManager
    from traitlets.config import Config

    root, rel = repo
    cm = FileContentsManager(config=Config(SERVER_CONFIG), root_dir=str(root))
    committed = (root / rel).read_bytes()
    ran = _ran(json.loads(committed))
    cm.save({"type": "notebook", "content": json.loads(json.dumps(ran))}, rel)
    assert (root / rel).read_bytes() == committed
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True,
                            check=True).stdout
    assert status == ""
    # the same run saved as an untracked copy keeps its outputs
    cm.save({"type": "notebook", "content": json.loads(json.dumps(ran))}, "notebooks/scratch.ipynb")
    saved = json.loads((root / "notebooks" / "scratch.ipynb").read_text())
    assert any(c.get("outputs") for c in saved["cells"])


def test_hook_ignores_files_and_directories(tmp_path):
    model = {"type": "file", "format": "text", "content": "x"}
    pre_save_hook(model=model, path="a.py", contents_manager=None)
    assert model["content"] == "x"


def test_enable_merges_into_an_existing_config(tmp_path):
    from clkit.lab import enable

    cfg = tmp_path / "etc" / "jupyter" / "jupyter_server_config.json"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(json.dumps({"ServerApp": {"port": 9999}, "ContentsManager": {"allow_hidden": True}}))
    assert enable(tmp_path) == cfg
    assert json.loads(cfg.read_text()) == {"ServerApp": {"port": 9999}, "ContentsManager": {
        "allow_hidden": True, "pre_save_hook": "clkit.lab.pre_save_hook"}}
    cfg.write_text("{not json")
    with pytest.raises(ValueError, match="jupyter_server_config.json is not valid JSON"):
        enable(tmp_path)


def test_jupyter_reads_the_config_enable_writes(tmp_path):
    """The file :func:`enable` writes is where a Jupyter server looks (its environment's etc/jupyter)."""
    from jupyter_core.paths import jupyter_config_path

    from clkit.lab import enable

    assert str(enable(tmp_path).parent) == str(tmp_path / "etc" / "jupyter")
    assert str(Path(sys.prefix) / "etc" / "jupyter") in jupyter_config_path()


def test_make_install_writes_the_server_config():
    make = (ROOT / "Makefile").read_text()
    assert "etc/jupyter/jupyter_server_config.json" in make and "clkit.lab import enable" in make
    from traitlets.utils.importstring import import_item

    assert import_item(SERVER_CONFIG["ContentsManager"]["pre_save_hook"]) is pre_save_hook
