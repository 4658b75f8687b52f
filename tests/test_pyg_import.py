"""Reading a graph prints no warning from torch-geometric's import (it reached the notebook and the site)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from clkit.data._pyg import import_pyg


def test_loading_cora_in_a_fresh_process_raises_no_future_warning():
    code = ("from clkit.data.graphs import load_graph; g = load_graph('cora'); "
            "import torch_geometric.nn; print(g.num_nodes)")
    out = subprocess.run([sys.executable, "-W", "error::FutureWarning", "-c", code], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["2708"] and "Warning" not in out.stderr


def test_import_pyg_names_what_it_imports():
    assert import_pyg("torch_geometric.utils").__name__ == "torch_geometric.utils"
    with pytest.raises(ValueError, match="module must be torch_geometric"):
        import_pyg("numpy")
