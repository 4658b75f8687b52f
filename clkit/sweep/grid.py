"""Grid files: which parameter values a sweep runs.

A grid file is YAML. Its full form::

    description: DRIFT sigma sweep, three seeds (Fig. 3 at smoke scale)
    params: smoke            # base parameter set (or a YAML file); --params overrides
    grid:                    # cartesian product of these lists
      sigma: [1.0, 3.0, 6.0]
      seeds: [[1], [2], [3]]
    cases:                   # optional explicit extra cases, each merged onto the base
      - {sigma: 12.0, seeds: [1]}

The short form is the ``grid`` mapping alone (``{sigma: [1.0, 3.0], seed: [0, 1]}``).
Every grid value must be a list, even with one element; a parameter whose values
are lists (``seeds``, ``learners``) takes a list of lists. Case order is the
product order (the last name varies fastest), then the explicit cases;
duplicates are dropped.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import yaml

from ..notebooks import notebooks_dir

__all__ = ["Grid", "load_grid", "expand_grid", "grid_files", "resolve_grid"]

_KEYS = ("description", "params", "grid", "cases")


class Grid(dict):
    """A parsed grid file: ``description``, ``params``, ``grid`` and ``cases``."""

    @property
    def names(self) -> list[str]:
        """Parameter names the grid varies, in first-seen order."""
        names = list(self["grid"])
        for case in self["cases"]:
            names += [k for k in case if k not in names]
        return names


def load_grid(source, where: str = "grid") -> Grid:
    """Parse a grid from a YAML file path or an already-loaded mapping.

    Parameters
    ----------
    source : str, Path or dict
        The grid file, or its content.
    where : str
        How to name the source in error messages.

    Returns
    -------
    Grid
        With keys ``description`` (str), ``params`` (str or None), ``grid``
        (dict name -> list) and ``cases`` (list of dicts).

    Raises
    ------
    ValueError
        When the file is not a mapping of lists, a case is not a mapping, or the
        grid has no case at all.

    Examples
    --------
    >>> g = load_grid({"sigma": [1.0, 3.0], "seed": [0, 1]})
    >>> g["grid"], g["cases"]
    ({'sigma': [1.0, 3.0], 'seed': [0, 1]}, [])
    >>> load_grid({"sigma": 1.0})
    Traceback (most recent call last):
    ...
    ValueError: grid: parameter 'sigma' must map to a list of values, got float 1.0 (write [1.0] for one value)
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.is_file():
            raise ValueError(f"grid file {str(path)!r} does not exist")
        where = str(path)
        try:
            source = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise ValueError(f"grid file {where} is not valid YAML: {exc}") from None
    if not isinstance(source, dict):
        raise ValueError(f"{where}: a grid must be a mapping of parameter names to lists of values, "
                         f"got {type(source).__name__}")
    full = "grid" in source or "cases" in source
    if full:
        extra = sorted(set(source) - set(_KEYS))
        if extra:
            raise ValueError(f"{where}: unknown top-level key(s) {extra}; allowed: {list(_KEYS)} "
                             "(parameters to vary go under 'grid:')")
        grid, cases = source.get("grid") or {}, source.get("cases") or []
    else:
        grid, cases = source, []
    if not isinstance(grid, dict):
        raise ValueError(f"{where}: 'grid' must be a mapping of parameter names to lists, "
                         f"got {type(grid).__name__}")
    for name, values in grid.items():
        if not isinstance(values, list):
            raise ValueError(f"{where}: parameter {name!r} must map to a list of values, got "
                             f"{type(values).__name__} {values!r} (write [{values!r}] for one value)")
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        raise ValueError(f"{where}: 'cases' must be a list of mappings name: value, got {cases!r}")
    params = source.get("params") if full else None
    if params is not None and not isinstance(params, str):
        raise ValueError(f"{where}: 'params' must name a parameter set or YAML file, got {params!r}")
    g = Grid(description=str(source.get("description", "")) if full else "", params=params,
             grid={str(k): v for k, v in grid.items()}, cases=[dict(c) for c in cases])
    if not expand_grid(g):
        raise ValueError(f"{where}: the grid is empty (no case to run): grid={g['grid']}, cases={g['cases']}")
    return g


def expand_grid(grid: Grid) -> list[dict]:
    """All cases of a grid: the cartesian product, then the explicit cases, without duplicates.

    Examples
    --------
    >>> expand_grid(load_grid({"grid": {"a": [1, 2], "b": ["x"]}, "cases": [{"a": 9}, {"a": 1, "b": "x"}]}))
    [{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'x'}, {'a': 9}]
    """
    names = list(grid["grid"])
    cases = []
    if names:
        cases = [dict(zip(names, combo)) for combo in itertools.product(*grid["grid"].values())]
    cases += [dict(c) for c in grid["cases"]]
    seen, out = set(), []
    for case in cases:
        sig = json.dumps(case, sort_keys=True, default=str)
        if sig not in seen:
            seen.add(sig)
            out.append(case)
    return out


def grid_files(notebook: str) -> list[str]:
    """Names of the example grids shipped for ``notebook`` (``notebooks/grids/<notebook>/*.yaml``)."""
    return sorted(p.stem for p in (notebooks_dir() / "grids" / notebook).glob("*.yaml"))


def resolve_grid(notebook: str, grid: str) -> Path:
    """A grid argument as a path: an existing file, else a shipped grid name of ``notebook``.

    Raises ``ValueError`` naming both places looked in and the shipped grids.
    """
    path = Path(grid)
    if path.is_file():
        return path
    shipped = notebooks_dir() / "grids" / notebook / f"{grid}.yaml"
    if shipped.is_file():
        return shipped
    raise ValueError(f"grid must be a YAML file or one of {grid_files(notebook)} for {notebook}; "
                     f"got {grid!r} (looked for {path.resolve()} and {shipped})")
