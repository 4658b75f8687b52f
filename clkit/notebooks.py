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
import re
import warnings
from pathlib import Path

import yaml

from ._io import resource_dir

__all__ = ["PARAM_SETS", "notebooks_dir", "notebook_path", "list_notebooks", "resolve_notebook", "param_sets",
           "notebook_parameters", "load_params", "check_values", "merge_params", "lookup", "parse_value"]

PARAM_SETS = ("smoke", "default", "paper")
_TYPES = {"int": (int,), "float": (float, int), "str": (str,), "bool": (bool,), "list": (list,),
          "dict": (dict,)}


def notebooks_dir() -> Path:
    """Folder holding the notebooks (``$CLKIT_NOTEBOOKS`` overrides)."""
    env = os.environ.get("CLKIT_NOTEBOOKS")
    return Path(env) if env else resource_dir("notebooks")


def notebook_path(notebook: str) -> Path:
    """Path of the ``.ipynb`` of a notebook stem."""
    return notebooks_dir() / f"{notebook}.ipynb"


def list_notebooks() -> list[str]:
    """Stems of all notebooks, sorted."""
    return sorted(p.stem for p in notebooks_dir().glob("[0-9][0-9]_*.ipynb"))


def resolve_notebook(name) -> str:
    """Map a stem, its file name or its number (``03``, ``3``) to the notebook stem.

    Raises ``ValueError`` naming the known notebooks when nothing matches.

    Examples
    --------
    >>> resolve_notebook("3"), resolve_notebook("03"), resolve_notebook("notebooks/03_temporal_metrics.py")
    ('03_temporal_metrics', '03_temporal_metrics', '03_temporal_metrics')
    """
    stems = list_notebooks()
    name = str(name)
    name = Path(name).stem if name.endswith((".ipynb", ".py")) else name
    number = int(name) if name.isdigit() else None
    matches = [s for s in stems if s == name or s.split("_", 1)[0] == name
               or (number is not None and s.split("_", 1)[0].isdigit() and int(s.split("_", 1)[0]) == number)]
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


def parse_value(name: str, raw):
    """A ``-p NAME VALUE`` value parsed as YAML (``3`` -> 3, ``"[a, b]"`` -> list); non-strings pass through.

    Raises ``ValueError`` in one line naming the parameter, the text and what is
    malformed (never the parser's multi-line report).

    Examples
    --------
    >>> parse_value("learners", "[finetune, ewc]"), parse_value("lr", "0.001"), parse_value("n", 4)
    (['finetune', 'ewc'], 0.001, 4)
    >>> parse_value("learners", "[finetune")
    Traceback (most recent call last):
    ...
    ValueError: -p learners: '[finetune' is not a valid YAML value: expected ',' or ']', but got '<stream end>' at column 10 (a list is written "[a, b]", a mapping "{key: value}"; quote text with special characters)
    """
    if not isinstance(raw, str):
        return raw
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ValueError(f"-p {name}: {raw!r} is not a valid YAML value: {_yaml_problem(exc)} (a list is written "
                         '"[a, b]", a mapping "{key: value}"; quote text with special characters)') from None


def _yaml_problem(exc: "yaml.YAMLError") -> str:
    """The parser's complaint and where, in one line."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return problem
    where = f"column {mark.column + 1}" if mark.line == 0 else f"line {mark.line + 1}, column {mark.column + 1}"
    return f"{problem} at {where}"


def _declared_of(notebook: str, declared: dict | None) -> dict:
    return notebook_parameters(notebook) if declared is None else declared


def _unknown(notebook: str, name: str, declared: dict, dotted: str | None = None) -> ValueError:
    """The error for a parameter the notebook does not declare, with the closest names."""
    import difflib

    close = difflib.get_close_matches(name, list(declared), n=3, cutoff=0.6)
    msg = f"{notebook} has no parameter {name!r}" + (f" (in {dotted!r})" if dotted else "")
    if close:
        msg += f" (did you mean {' or '.join(map(repr, close))}?)"
    return ValueError(f"{msg}; parameters: {sorted(declared)}")


def merge_params(notebook: str, base: dict, updates: dict, declared: dict | None = None) -> dict:
    """``base`` with ``updates`` applied; a dotted name sets one key inside a dict parameter.

    A plain name replaces the parameter. A dotted name ``NAME.KEY[.KEY...]`` (e.g.
    ``learner_kwargs.ewc.ewc_lambda``) sets one key inside the dict parameter
    ``NAME``: the dict is ``base``'s (else the notebook's default), copied, with the
    intermediate mappings created where absent. Plain names are applied first, then
    dotted ones in their order, so ``learner_kwargs`` and
    ``learner_kwargs.ewc.ewc_lambda`` together give the dict with that one key
    overridden. ``base`` is not modified.

    Raises
    ------
    ValueError
        An unknown parameter (the dotted name is quoted) or an empty key (``a..b``).
    TypeError
        A dotted name under a parameter that is not a dict, or under a key that holds
        something other than a mapping, naming the dotted parameter.

    Examples
    --------
    >>> declared = {"learner_kwargs": {"type": "dict", "default": {"si": {"si_lambda": 1.0}}},
    ...             "seed": {"type": "int", "default": 0}}
    >>> merge_params("nb", {"seed": 1}, {"learner_kwargs.ewc.ewc_lambda": 100}, declared)
    {'seed': 1, 'learner_kwargs': {'si': {'si_lambda': 1.0}, 'ewc': {'ewc_lambda': 100}}}
    >>> merge_params("nb", {}, {"seed.x": 1}, declared)
    Traceback (most recent call last):
    ...
    TypeError: parameter seed.x of nb: seed is int, not a dict (a dotted name sets one key inside a dict parameter)
    """
    import copy

    out = dict(base)
    dotted = [(n, v) for n, v in updates.items() if "." in str(n)]
    out.update((n, v) for n, v in updates.items() if "." not in str(n))
    if not dotted:
        return out
    declared = _declared_of(notebook, declared)
    for name, value in dotted:
        top, *keys = str(name).split(".")
        if not top or not all(keys):
            raise ValueError(f"parameter {name!r} of {notebook}: empty key in a dotted name (write NAME.KEY.KEY)")
        if top not in declared:
            raise _unknown(notebook, top, declared, dotted=name)
        if declared[top]["type"] != "dict":
            raise TypeError(f"parameter {name} of {notebook}: {top} is {declared[top]['type']}, not a dict "
                            "(a dotted name sets one key inside a dict parameter)")
        current = out[top] if top in out else declared[top]["default"]
        if not isinstance(current, dict):
            raise TypeError(f"parameter {name} of {notebook}: {top} is {type(current).__name__} {current!r}, "
                            "not a dict")
        root = node = copy.deepcopy(current)
        for depth, key in enumerate(keys[:-1]):
            child = node.setdefault(key, {})
            if not isinstance(child, dict):
                raise TypeError(f"parameter {name} of {notebook}: {'.'.join([top, *keys[:depth + 1]])} is "
                                f"{type(child).__name__} {child!r}, not a mapping")
            node = child
        node[keys[-1]] = value
        out[top] = root
    return out


def lookup(values: dict, name: str, declared: dict):
    """The value of ``name`` (plain or dotted) in a run's ``values``, notebook defaults filled in.

    ``None`` when a dotted name's key is set nowhere.

    Examples
    --------
    >>> declared = {"learner_kwargs": {"type": "dict", "default": {}}, "seed": {"type": "int", "default": 0}}
    >>> values = {"learner_kwargs": {"ewc": {"ewc_lambda": 100}}}
    >>> lookup(values, "learner_kwargs.ewc.ewc_lambda", declared), lookup(values, "seed", declared)
    (100, 0)
    >>> print(lookup(values, "learner_kwargs.si.si_lambda", declared))
    None
    """
    top, *keys = name.split(".")
    node = values[top] if top in values else declared[top]["default"]
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


#: the empty params files already told of (:func:`load_params` says it once per file and notebook)
_TOLD_EMPTY: set = set()


def load_params(notebook: str, params: str = "default", overrides=()) -> dict:
    """Parameters for a run: a named set or YAML file, then ``(name, value)`` overrides.

    Names are checked against the notebook's parameters cell and values against
    its type annotations; a mismatch raises ``ValueError`` / ``TypeError`` naming
    the parameter. A dotted name (``learner_kwargs.ewc.ewc_lambda``), in the file
    or an override, sets one key inside a dict parameter (:func:`merge_params`).
    Values of overrides given as text are parsed as YAML (:func:`parse_value`).
    """
    path = _params_file(notebook, params)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"params file {path} is not a text (UTF-8) YAML file: byte {exc.start} is "
                         f"0x{exc.object[exc.start]:02x}") from None
    try:
        values = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"params file {path} is not valid YAML: {_yaml_problem(exc)}") from None
    if values is None:   # empty, or only comments: the notebook's own defaults, said aloud (once per process:
        told = (str(path.resolve()), notebook)   # clkit run reads the file before the run and again in it)
        if told not in _TOLD_EMPTY:
            _TOLD_EMPTY.add(told)
            warnings.warn(f"params file {path} sets no parameter: the run uses {notebook}'s own defaults",
                          UserWarning, stacklevel=2)
        values = {}
    if not isinstance(values, dict):
        raise ValueError(f"params file {path} must hold a mapping name: value")
    declared = notebook_parameters(notebook)
    values = merge_params(notebook, {}, values, declared)
    updates = {}
    for name, raw in overrides:
        value = parse_value(name, raw)
        if isinstance(value, str) and isinstance(raw, str) and declared.get(name, {}).get("type") == "float":
            try:  # YAML 1.1 reads 1e-3 as text; a float parameter means the number
                value = float(value)
            except ValueError:
                pass
        updates.pop(name, None)  # the last -p of a name wins, in its own place in the order
        updates[name] = value
    updates = {name: resolve_path_value(name, value, declared) for name, value in updates.items()}
    values = merge_params(notebook, values, updates, declared)
    check_values(notebook, values, declared)
    return values


#: file endings that mark a ``-p`` value as a path even without a folder part
PATH_SUFFIXES = (".csv", ".parquet", ".pt", ".pth", ".ckpt", ".safetensors", ".bin", ".yaml", ".yml", ".json",
                 ".jsonl", ".log", ".pyd", ".db", ".sqlite", ".npy", ".npz", ".txt", ".gz", ".zip", ".tar")


def _looks_like_path(text: str, default) -> bool:
    """A folder part, ``~`` or a file ending of :data:`PATH_SUFFIXES` (not a keyword, URL or ``module:Name``)."""
    if not text or "://" in text or os.path.isabs(text) or re.fullmatch(r"[\w.-]+:[\w.-]*", text):
        return False  # empty, a URL, already absolute, "package.module:Name", "cuda:0", "A:B"
    if "/" in text or os.sep in text or text.startswith(("./", "../", "~")) or text in (".", ".."):
        return True
    return Path(text).suffix.lower() in PATH_SUFFIXES


def resolve_path_value(name: str, value, declared: dict | None = None, cwd=None):
    """A ``-p NAME VALUE`` path, relative to the caller's folder, made absolute before the notebook runs.

    papermill runs a notebook with ``notebooks/`` as its working folder, so a relative path given on the
    command line would be looked up there. A text value (or a text item of a list) of a ``str`` / ``list``
    parameter is taken as a path when it has a folder part (``runs/mine``, ``./x``, ``~/x``), a file ending
    of :data:`PATH_SUFFIXES`, or names a file or folder that exists in ``cwd`` (default: the current folder)
    and is not the parameter's default keyword; it is returned as an absolute path (``~`` expanded), so a
    missing one is reported under the absolute path it was looked for at. Keywords (``example``,
    ``synthetic``), ``package.module:Name``, ``cuda:0``, ``A:B`` comparisons and URLs pass unchanged.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); os.mkdir(os.path.join(d, "myruns"))
    >>> resolve_path_value("runs", "myruns", cwd=d) == os.path.join(d, "myruns")
    True
    >>> resolve_path_value("runs", "runs/none.csv", cwd=d) == os.path.join(d, "runs", "none.csv")
    True
    >>> resolve_path_value("runs", "example", {"runs": {"type": "str", "default": "example"}}, cwd=d)
    'example'
    >>> resolve_path_value("compare", ["replay:naive"], cwd=d), resolve_path_value("device", "cuda:0", cwd=d)
    (['replay:naive'], 'cuda:0')
    """
    spec = (declared or {}).get(name, {})
    if spec and spec.get("type") not in ("str", "list"):
        return value
    default = spec.get("default")
    base = os.getcwd() if cwd is None else str(cwd)

    def one(text, dflt):
        if not isinstance(text, str):
            return text
        here = os.path.join(base, text)
        bare = not os.path.isabs(text) and text != dflt and os.path.exists(here)  # a file or folder here
        if not (_looks_like_path(text, dflt) or bare):
            return text
        if text.startswith("~"):
            return os.path.expanduser(text)
        return os.path.normpath(os.path.join(base, text))

    if isinstance(value, list):
        return [one(v, None if not isinstance(default, list) or v not in default else v) for v in value]
    return one(value, default)


def _params_file(notebook: str, params: str) -> Path:
    """The YAML file of a parameter set name or path; ``ValueError`` saying what is missing."""
    shipped = notebooks_dir() / "params" / notebook / f"{params}.yaml"
    if params in PARAM_SETS or shipped.exists():
        if not shipped.exists():
            raise ValueError(f"params: {notebook} has no parameter set {params!r} "
                             f"(looked for {shipped}); available: {param_sets(notebook)}")
        return shipped
    path = Path(params)
    if path.is_file():
        return path
    sets = param_sets(notebook)
    if path.suffix in (".yaml", ".yml") or len(path.parts) > 1:
        what = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise ValueError(f"params: the file {params} {what} (looked for {path.resolve()}); {notebook}'s sets: "
                         f"{', '.join(sets)}")
    raise ValueError(f"params: {notebook} has no parameter set {params!r}; the shipped sets are {sets} "
                     "(or give a YAML file)")


def check_values(notebook: str, values: dict, declared: dict | None = None) -> None:
    """Check parameter names and types against the notebook's parameters cell.

    Raises ``ValueError`` for a name the notebook does not declare and
    ``TypeError`` for a value whose type does not match the annotation.
    """
    declared = _declared_of(notebook, declared)
    for name, value in values.items():
        if name not in declared:
            raise _unknown(notebook, name, declared)
        types = _TYPES.get(declared[name]["type"])
        bad_bool = isinstance(value, bool) and declared[name]["type"] in ("int", "float")
        if types and (bad_bool or not isinstance(value, types)):
            raise TypeError(f"parameter {name} of {notebook} must be {declared[name]['type']}, "
                            f"got {type(value).__name__} {value!r}")
