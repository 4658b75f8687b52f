"""The two dependency lists stay in step, and the package layout follows DESIGN.md."""

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[ ;]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pyproject_deps():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = {_name(d) for d in meta["dependencies"]}
    for extra in meta["optional-dependencies"].values():   # test, trackers, slurm: all in environment.yml
        deps |= {_name(d) for d in extra}
    return deps


def _conda_deps():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    names = set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            names |= {_name(d) for d in dep["pip"] if not d.startswith("-e")}
        elif _name(dep) not in ("python", "pip"):
            names.add(_name(dep))
    return names


def test_dependencies_in_step():
    py, conda = _pyproject_deps(), _conda_deps()
    assert py - conda == set(), f"in pyproject.toml only: {sorted(py - conda)}"
    assert conda - py == set(), f"in environment.yml only: {sorted(conda - py)}"


def test_versions_in_step():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    py = {_name(d): d.replace(" ", "") for d in meta["dependencies"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = [d for dep in env["dependencies"] if isinstance(dep, dict) for d in dep["pip"]]
    for d in pip:
        if _name(d) in py:
            assert py[_name(d)] == d.replace(" ", ""), f"version bounds differ for {_name(d)}"


def test_ci_calls_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make run" in readme
    assert "make test" in ci


def test_shared_modules_do_not_import_paper_modules():
    shared = ["metrics", "distances", "strategies", "models", "data", "plot", "results", "run", "_io",
              "progress", "run_progress",
              "_validate", "_seed"]
    paper = ["temporal", "taskification", "edge", "curriculum", "drift"]
    for name in shared:
        path = ROOT / "clkit" / name
        files = list(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
        for f in files:
            if not f.exists():
                continue
            text = f.read_text()
            for p in paper:
                assert not re.search(rf"(from|import)\s+(clkit|\.+)\.?{p}\b", text), f"{f} imports clkit.{p}"


# --- committed notebooks (issue 15 items 2 and 5) -------------------------------------------

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PARAMS_FIRST_LINE = r"# Parameters: edit a value, then Run All\. Headless: clkit run ({stem}|{num}) -p NAME VALUE"


def _read(nb):
    import nbformat

    return nbformat.read(str(nb), as_version=4)


def test_committed_notebooks_carry_no_outputs():
    assert len(NOTEBOOKS) >= 5
    for nb in NOTEBOOKS:
        for i, cell in enumerate(_read(nb).cells):
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, \
                    f"{nb.name} cell {i} stores outputs: run nbstripout (see .pre-commit-config.yaml)"
        assert "widgets" not in _read(nb).metadata, f"{nb.name} stores widget state"


def test_notebook_pairs_in_step():
    """The .py (what people edit) and the .ipynb (what JupyterLab and papermill open) agree."""
    import jupytext

    for nb in NOTEBOOKS:
        py = nb.with_suffix(".py")
        assert py.exists(), f"{nb.name} has no paired {py.name}"
        a = [(c.cell_type, c.source) for c in jupytext.read(str(py)).cells]
        b = [(c.cell_type, c.source) for c in _read(nb).cells]
        assert a == b, (f"{py.name} and {nb.name} differ: run "
                        f"jupytext --to ipynb --update notebooks/{py.name}")


FILTER = "-jupytext.text_representation.jupytext_version"


@pytest.mark.parametrize("version", ["1.19.6", "1.19.7", "99.0.0"])
def test_saved_pairs_carry_no_jupytext_version(monkeypatch, version):
    """Saving a notebook writes its paired .py as jupytext does (the JupyterLab contents manager,
    ``jupytext --sync``, the pre-commit hook): under any jupytext version the text equals the
    committed .py, because each notebook's own metadata filters the version out of the header
    (issue 55: jupytext 1.19.7 rewrote ``jupytext_version: 1.19.6`` on every save)."""
    import jupytext
    import jupytext.formats
    import jupytext.header

    monkeypatch.setattr(jupytext.header, "__version__", version)
    monkeypatch.setattr(jupytext.formats, "__version__", version)
    for nb in NOTEBOOKS:
        py = nb.with_suffix(".py")
        notebook = jupytext.read(str(nb))
        assert notebook.metadata["jupytext"].get("notebook_metadata_filter") == FILTER, nb.name
        assert jupytext.writes(notebook, fmt="py:percent") == py.read_text(), \
            f"saving {nb.name} under jupytext {version} would rewrite {py.name}"
        assert not re.search(r"^#\s+jupytext_version:", py.read_text(), re.M), py.name
    # the control: without the filter the same save writes the version (the test can fail)
    notebook = jupytext.read(str(NOTEBOOKS[0]))
    del notebook.metadata["jupytext"]["notebook_metadata_filter"]
    assert f"jupytext_version: {version}" in jupytext.writes(notebook, fmt="py:percent")


def test_notebook_metadata_as_jupyterlab_writes_it():
    """JupyterLab rewrites kernelspec and language_info on open; when they already match,
    an untouched notebook is not marked modified (tests/test_browser.py checks it live)."""
    import platform

    for nb in NOTEBOOKS:
        meta = _read(nb).metadata
        assert meta.kernelspec == {"display_name": "Python 3 (ipykernel)", "language": "python",
                                   "name": "python3"}, nb.name
        assert meta.language_info["name"] == "python" and meta.language_info["version"], nb.name
        assert meta.jupytext["formats"] == "ipynb,py:percent", nb.name
        header = nb.with_suffix(".py").read_text().split("# ---", 2)[1]
        assert "display_name: Python 3 (ipykernel)" in header, nb.with_suffix(".py").name
    versions = {_read(nb).metadata.language_info["version"] for nb in NOTEBOOKS}
    assert len(versions) == 1, f"notebooks store different Python versions: {versions}"
    if versions != {platform.python_version()}:
        import warnings

        warnings.warn(f"notebooks store Python {versions.pop()}, this is {platform.python_version()}: "
                      "JupyterLab will mark them modified on open", stacklevel=1)


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_cell_explains_interactive_use(nb):
    """Item 5: the parameters cell says, first, how to use it; its lines fit the cell
    (88 characters; the first line, which names the notebook, may be longer)."""
    cells = [c for c in _read(nb).cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1, nb.name
    lines = cells[0].source.splitlines()
    first = PARAMS_FIRST_LINE.format(stem=re.escape(nb.stem), num=nb.stem[:2])
    assert re.fullmatch(first, lines[0]), f"{nb.name}: first line {lines[0]!r}"
    long = [ln for ln in lines[1:] if len(ln) > 88]
    assert not long, f"{nb.name}: parameters lines over 88 characters: {long}"


def test_pre_commit_config_strips_and_syncs():
    cfg = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = {h["id"] for repo in cfg["repos"] for h in repo["hooks"]}
    assert {"nbstripout", "jupytext"} <= hooks
