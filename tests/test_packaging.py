"""The two dependency lists stay in step, and the package layout follows DESIGN.md."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[ ;]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pyproject_deps():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = {_name(d) for d in meta["dependencies"]}
    deps |= {_name(d) for d in meta["optional-dependencies"]["test"]}
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
