"""The notebooks and their parameters: where they are, which parameters they declare, a run's values.

A notebook is ``notebooks/<NN>_<name>.ipynb`` (``$CLKIT_NOTEBOOKS`` overrides the
folder); it declares its parameters in the code cell tagged ``parameters``, one
typed literal with a comment each. Named parameter sets live in
``notebooks/params/<notebook>/<set>.yaml``. :func:`load_params` gives the values a
run injects: a set (or YAML file), then ``(name, value)`` overrides, each checked
against the parameters cell.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from ._io import repo_root

__all__ = ["PARAM_SETS", "notebooks_dir", "notebook_path", "list_notebooks", "resolve_notebook", "param_sets",
           "notebook_parameters", "load_params", "check_values"]

PARAM_SETS = ("smoke", "default", "paper")
_TYPES = {"int": (int,), "float": (float, int), "str": (str,), "bool": (bool,), "list": (list,),
          "dict": (dict,)}


def notebooks_dir() -> Path:
    """Folder holding the notebooks (``$CLKIT_NOTEBOOKS`` overrides)."""
    env = os.environ.get("CLKIT_NOTEBOOKS")
    return Path(env) if env else repo_root() / "notebooks"


def notebook_path(notebook: str) -> Path:
    """Path of the ``.ipynb`` of a notebook stem."""
    return notebooks_dir() / f"{notebook}.ipynb"


def list_notebooks() -> list[str]:
    """Stems of all notebooks, sorted."""
    return sorted(p.stem for p in notebooks_dir().glob("[0-9][0-9]_*.ipynb"))


def resolve_notebook(name: str) -> str:
    """Map a stem or its number prefix to the notebook stem.

    Raises ``ValueError`` naming the known notebooks when nothing matches.
    """
    stems = list_notebooks()
    name = Path(name).stem if name.endswith((".ipynb", ".py")) else name
    matches = [s for s in stems if s == name or s.split("_", 1)[0] == name]
    if len(matches) != 1:
        raise ValueError(f"notebook must be one of {stems} (or its number prefix), got {name!r}")
    return matches[0]


def param_sets(notebook: str) -> list[str]:
    """Named parameter sets of ``notebook`` (file stems under ``notebooks/params/<notebook>/``)."""
    d = notebooks_dir() / "params" / notebook
    return sorted(p.stem for p in d.glob("*.yaml"))


def notebook_parameters(notebook: str) -> dict:
    """The notebook's declared parameters: ``{name: {"type": ..., "default": ..., "help": ...}}``.

    Read with :mod:`ast` from the cell tagged ``parameters`` (papermill's own
    inspector gives up on comments that contain ``=``).
    """
    import ast

    import nbformat

    nb = nbformat.read(str(notebook_path(notebook)), as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    if not cells:
        raise ValueError(f"{notebook} has no code cell tagged 'parameters'")
    src = cells[0].source
    lines = src.splitlines()
    out = {}
    for node in ast.parse(src).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            line = lines[node.lineno - 1]
            out[node.target.id] = {"type": ast.unparse(node.annotation),
                                   "default": ast.literal_eval(node.value) if node.value is not None else None,
                                   "help": line.split("#", 1)[1].strip() if "#" in line else ""}
        elif isinstance(node, ast.Assign):
            for tgt in node.targets:
                if isinstance(tgt, ast.Name):
                    out[tgt.id] = {"type": "None", "default": ast.literal_eval(node.value), "help": ""}
    return out


def load_params(notebook: str, params: str = "default", overrides=()) -> dict:
    """Parameters for a run: a named set or YAML file, then ``(name, value)`` overrides.

    Names are checked against the notebook's parameters cell and values against
    its type annotations; a mismatch raises ``ValueError`` / ``TypeError`` naming
    the parameter.
    """
    if params in PARAM_SETS or (notebooks_dir() / "params" / notebook / f"{params}.yaml").exists():
        path = notebooks_dir() / "params" / notebook / f"{params}.yaml"
        if not path.exists():
            raise ValueError(f"params: {notebook} has no parameter set {params!r} "
                             f"(looked for {path}); available: {param_sets(notebook)}")
    else:
        path = Path(params)
        if not path.exists():
            raise ValueError(f"params must be one of {list(PARAM_SETS)} or a YAML file, got {params!r}")
    values = yaml.safe_load(path.read_text()) or {}
    if not isinstance(values, dict):
        raise ValueError(f"params file {path} must hold a mapping name: value")
    for name, raw in overrides:
        values[name] = yaml.safe_load(raw) if isinstance(raw, str) else raw
    check_values(notebook, values)
    return values


def check_values(notebook: str, values: dict, declared: dict | None = None) -> None:
    """Check parameter names and types against the notebook's parameters cell.

    Raises ``ValueError`` for a name the notebook does not declare and
    ``TypeError`` for a value whose type does not match the annotation.
    """
    declared = notebook_parameters(notebook) if declared is None else declared
    for name, value in values.items():
        if name not in declared:
            raise ValueError(f"{notebook} has no parameter {name!r}; parameters: {sorted(declared)}")
        types = _TYPES.get(declared[name]["type"])
        bad_bool = isinstance(value, bool) and declared[name]["type"] in ("int", "float")
        if types and (bad_bool or not isinstance(value, types)):
            raise TypeError(f"parameter {name} of {notebook} must be {declared[name]['type']}, "
                            f"got {type(value).__name__} {value!r}")
