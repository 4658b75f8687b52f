"""Shared fixtures: executing a notebook with its smoke parameters."""

import json

import pytest


@pytest.fixture(scope="session")
def run_smoke(tmp_path_factory):
    """``run_smoke(notebook, **overrides)`` executes the notebook via papermill and returns
    ``(results_dict, out_dir)``. Results are cached per (notebook, overrides) within a session."""
    from clkit.run import run_notebook

    cache = {}

    def _run(notebook, out=None, **overrides):
        key = (notebook, out, tuple(sorted((k, repr(v)) for k, v in overrides.items())))
        if key not in cache:
            outdir = out or tmp_path_factory.mktemp(notebook)
            path = run_notebook(notebook, "smoke", list(overrides.items()), out=outdir, progress=False)
            cache[key] = (json.loads((path / "results.json").read_text()), path)
        return cache[key]

    return _run


@pytest.fixture
def one_torch_thread():
    """Small models: one torch thread is faster than many on a shared machine."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
