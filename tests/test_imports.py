"""The import graph of clkit/ has no circle (issue 29).

The graph is built from the source with :mod:`ast`, so it sees every import the
interpreter could run: module-level and function-level, absolute (``clkit.x``) and
relative (``from ..x import y``), plus ``__import__("clkit.x")`` and
``importlib.import_module("clkit.x")`` with a literal name. An edge goes to the
module named: ``from .a import f`` -> ``pkg.a``; ``from . import a`` -> ``pkg.a``
when ``a`` is a submodule, else ``pkg`` (the package's ``__init__``). A package's
``__init__`` is *not* added as a target of its submodules' imports: re-exporting
submodules from ``__init__`` is the normal downward direction, and the interpreter
runs the parent first anyway. An import from *outside* a package, though, runs that
package's ``__init__`` before the submodule named (``from .pkg import _all`` loads
``pkg`` too), so it adds an edge to every package above the target that does not
hold the importing module (issue 42: ``clkit.strategies`` -> ``clkit.plugins`` ->
``clkit.strategies._all`` is a circle through ``clkit.strategies``).

A circle is reported as the path that closes it, e.g.
``clkit.plot -> clkit.results -> clkit.plot``, with the line of each import.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "clkit"


def module_name(path: Path, root: Path) -> str:
    """Dotted name of a source file under the package folder ``root``."""
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _targets(node, mod: str, is_pkg: bool, known: set[str]) -> list[str]:
    """Modules of ``known`` that the import statement / call ``node`` loads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = mod.split(".") if is_pkg else mod.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        return [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix for a in node.names]
    if isinstance(node, ast.Call):  # __import__("clkit.x") / importlib.import_module("clkit.x")
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name in ("__import__", "import_module") and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            return [node.args[0].value]
    return []


def _parents_outside(target: str, mod: str, known: set[str]) -> list[str]:
    """The packages above ``target`` whose ``__init__`` an import from ``mod`` runs.

    Those of them that hold ``mod`` itself are left out (the interpreter runs them
    before ``mod``; that is the downward direction).
    """
    parts = target.split(".")
    return [p for p in (".".join(parts[:i]) for i in range(1, len(parts)))
            if p in known and p != mod and not mod.startswith(p + ".")]


def import_graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """``{module: {imported module: line}}`` over the package folder ``root`` (only its own modules)."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    known = set(files)
    graph = {}
    for mod, path in files.items():
        edges = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _targets(node, mod, path.name == "__init__.py", known):
                # "import clkit.a.b" names clkit.a.b; an attribute import "from clkit.a import f" names clkit.a
                while target and target not in known and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in known and target != mod:
                    edges.setdefault(target, node.lineno)
                    # importing clkit.a.b from outside clkit.a runs clkit.a's __init__ first
                    for parent in _parents_outside(target, mod, known):
                        edges.setdefault(parent, node.lineno)
        graph[mod] = edges
    return graph


def tangles(graph: dict[str, dict]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan): each holds a circle."""
    index, low, stack, on, comps = {}, {}, [], set(), []

    def strong(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(comps, key=min)


def shortest_circle(graph: dict[str, dict], comp: set[str]) -> list[str]:
    """The shortest closed path ``[a, b, ..., a]`` through the first module of a tangle (breadth-first)."""
    start = min(comp)
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return [*reversed(path), start]
                if w in comp and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no circle through {start} in {comp}")  # pragma: no cover - a tangle has one


def find_cycles(graph: dict[str, dict]) -> list[list[str]]:
    """One circle per tangle, each as a closed path ``[a, b, ..., a]``."""
    return [shortest_circle(graph, comp) for comp in tangles(graph)]


def describe(cycle: list[str], graph: dict[str, dict]) -> str:
    """``a -> b (line 3) -> a (line 9)``: where each import of the circle is."""
    return " -> ".join([cycle[0]] + [f"{b} (line {graph[a][b]} of {a})" for a, b in zip(cycle, cycle[1:])])


def test_the_checker_finds_relative_and_function_level_circles(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from .sub import b\n\ndef f():\n    return b.g()\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def g():\n    from ..a import f  # lazy: still an edge\n    return f\n")
    (pkg / "c.py").write_text("import pkg.sub.b\nfrom pkg import a\n")
    graph = import_graph(pkg)
    assert graph["pkg.c"] == {"pkg.sub.b": 1, "pkg.sub": 1, "pkg.a": 2}
    assert graph["pkg.a"] == {"pkg.sub.b": 1, "pkg.sub": 1}
    assert find_cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.a"]]
    assert describe(find_cycles(graph)[0], graph) == \
        "pkg.a -> pkg.sub.b (line 1 of pkg.a) -> pkg.a (line 2 of pkg.sub.b)"
    (pkg / "sub" / "b.py").write_text("def g():\n    return 1\n")
    assert find_cycles(import_graph(pkg)) == []
    (pkg / "d.py").write_text("import importlib\nM = importlib.import_module('pkg.e')\n")
    (pkg / "e.py").write_text("def h():\n    return __import__('pkg.d')\n")
    assert find_cycles(import_graph(pkg)) == [["pkg.d", "pkg.e", "pkg.d"]]


def test_the_checker_sees_the_package_an_import_from_outside_runs(tmp_path):
    """``from .sub import _all`` from outside ``sub`` runs ``sub/__init__`` too: an edge to ``pkg.sub``."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import base\n\ndef resolve():\n    from .. import plugins\n")
    (pkg / "sub" / "base.py").write_text("")
    (pkg / "sub" / "_all.py").write_text("from . import base\n")
    (pkg / "plugins.py").write_text("def registry():\n    from .sub import _all\n")
    graph = import_graph(pkg)
    assert graph["pkg.plugins"] == {"pkg.sub._all": 2, "pkg.sub": 2}
    assert graph["pkg.sub._all"] == {"pkg.sub.base": 1}  # its own package is not an edge
    assert find_cycles(graph) == [["pkg.plugins", "pkg.sub", "pkg.plugins"]]
    (pkg / "sub" / "__init__.py").write_text("from . import base\n")
    assert find_cycles(import_graph(pkg)) == []


def test_clkit_has_no_import_circle():
    graph = import_graph()
    assert "clkit.plot" in graph and "clkit.cli" in graph
    found = [f"{describe(shortest_circle(graph, comp), graph)}\n  (modules tangled with it: {sorted(comp)})"
             for comp in tangles(graph)]
    assert not found, "import circles in clkit/:\n" + "\n".join(found)


def test_libraries_never_import_the_command_line():
    """clkit.cli sits on top: nothing outside it imports it (``python -m clkit`` runs it)."""
    graph = import_graph()
    up = sorted(f"{m} -> {t} (line {line})" for m, edges in graph.items()
                if not m.startswith("clkit.cli") and m != "clkit.__main__"
                for t, line in edges.items() if t == "clkit.cli" or t.startswith("clkit.cli."))
    assert not up, f"library modules importing clkit.cli: {up}"


if __name__ == "__main__":  # pragma: no cover - print the circles
    g = import_graph()
    for comp in tangles(g):
        print(describe(shortest_circle(g, comp), g), f"\n  (modules tangled with it: {sorted(comp)})")
