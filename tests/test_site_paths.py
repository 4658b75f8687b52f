"""The site shows no absolute path of the machine that built it (issue 43)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

from clkit.site import _without_machine_paths, machine_prefixes


def test_outputs_lose_the_machines_paths(tmp_path):
    project = tmp_path / "proj"
    sp = next(p for p, r in machine_prefixes(project) if r == "<site-packages>/")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[
        nbformat.v4.new_output("stream", name="stderr",
                               text=f"{sp}torch/jit/_script.py:1491: FutureWarning: deprecated\n"),
        nbformat.v4.new_output("display_data", data={
            "text/plain": f"read from {project}/data/cache/cora/raw",
            "text/markdown": f"Cora shipped from {project}/clkit/data/planetoid/cora; home {Path.home()}/x",
            "text/html": f"<td>{project}/runs/a.json</td>"}),
        nbformat.v4.new_output("error", ename="E", evalue="v", traceback=[f"File {sys.prefix}/bin/x"]),
    ])])
    out = _without_machine_paths(nb, machine_prefixes(project)).cells[0].outputs
    assert out[0]["text"] == "<site-packages>/torch/jit/_script.py:1491: FutureWarning: deprecated\n"
    assert out[1]["data"]["text/plain"] == "read from data/cache/cora/raw"
    assert out[1]["data"]["text/markdown"] == "Cora shipped from clkit/data/planetoid/cora; home ~/x"
    assert out[1]["data"]["text/html"] == "<td>runs/a.json</td>"
    assert out[2]["traceback"] == ["File <python>/bin/x"]


def test_prefixes_longest_first_and_the_package_named_as_in_a_manifest(tmp_path):
    pairs = machine_prefixes(tmp_path)
    assert [len(a) for a, _ in pairs] == sorted((len(a) for a, _ in pairs), reverse=True)
    package = str(Path(__import__("clkit").__file__).resolve().parent) + "/"
    assert (package, "clkit/") in pairs and (str(tmp_path.resolve()) + "/", "") in pairs
