"""JupyterLab: the repository's tracked notebooks stay without outputs when saved.

The notebooks in ``notebooks/`` are kept in git without outputs (their paired
``.py`` carries the diffs). Run All in JupyterLab would autosave the outputs into
them and leave ``git status`` dirty. A git clean filter (nbstripout's) cannot fix
that: git reports a file whose size changed as modified without running the
filter. So the fix acts where the file is written: :func:`pre_save_hook`, a
Jupyter server contents-manager hook, strips outputs from a notebook that git
tracks and on which it sets the attribute ``clkit-strip-outputs`` (the
repository's ``.gitattributes`` sets it on ``notebooks/*.ipynb``). Every other
notebook (copies from ``clkit notebooks copy``, a new untracked notebook in
``notebooks/``, anything outside a git repository) is saved as it is, outputs
included.

``make install`` enables the hook for the project's virtual environment with
:func:`enable`, which merges :data:`SERVER_CONFIG` into
``.venv/etc/jupyter/jupyter_server_config.json`` (Jupyter reads that file from every
environment's ``etc/jupyter``; the ``jupyter_server_config.d/`` folder beside it
only enables extensions).
The outputs stay visible in the open notebook; a reopened tracked notebook shows
none. To keep outputs, work in copies (``clkit notebooks copy DIR``).

What is stripped (nbstripout's defaults, cell ids kept): code cells' outputs and
execution counts; cell metadata ``execution``, ``ExecuteTime``, ``collapsed``,
``scrolled``; notebook metadata ``widgets`` and ``signature``. A committed notebook
is a fixed point of :func:`strip_outputs` (tested), so a saved tracked notebook is
byte-identical to the committed one when only outputs changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["ATTRIBUTE", "SERVER_CONFIG", "strip_outputs", "strips_outputs", "pre_save_hook", "enable"]

ATTRIBUTE = "clkit-strip-outputs"
SERVER_CONFIG = {"ContentsManager": {"pre_save_hook": "clkit.lab.pre_save_hook"}}

_CELL_KEYS = ("execution", "ExecuteTime", "collapsed", "scrolled")
_NB_KEYS = ("widgets", "signature")


def strip_outputs(nb: dict) -> dict:
    """Remove outputs and run-time metadata from a notebook's JSON, in place; return it.

    Parameters
    ----------
    nb : dict
        The notebook as nbformat 4 JSON (``cells``, ``metadata``).

    Examples
    --------
    >>> nb = {"metadata": {"widgets": {}}, "cells": [
    ...     {"cell_type": "code", "execution_count": 3, "metadata": {"scrolled": True, "tags": ["x"]},
    ...      "outputs": [{"output_type": "stream", "name": "stdout", "text": "1"}], "source": "1"}]}
    >>> cell = strip_outputs(nb)["cells"][0]
    >>> cell["outputs"], cell["execution_count"], cell["metadata"], nb["metadata"]
    ([], None, {'tags': ['x']}, {})
    """
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise TypeError(f"nb must be a notebook's JSON (a dict with a 'cells' list), got {type(nb).__name__}")
    for key in _NB_KEYS:
        nb.get("metadata", {}).pop(key, None)
    for cell in nb["cells"]:
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        meta = cell.get("metadata", {})
        for key in _CELL_KEYS:
            meta.pop(key, None)
    return nb


def strips_outputs(path) -> bool:
    """Whether ``path`` is tracked by git and marked ``clkit-strip-outputs`` (False outside git).

    Examples
    --------
    >>> import tempfile, os
    >>> strips_outputs(os.path.join(tempfile.mkdtemp(), "a.ipynb"))
    False
    """
    path = Path(path).absolute()
    if not path.parent.is_dir():
        return False

    def git(*args) -> bytes | None:
        try:
            out = subprocess.run(["git", *args, "--", path.name], cwd=path.parent, capture_output=True,
                                 timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout if out.returncode == 0 else None

    attr = git("check-attr", "-z", ATTRIBUTE)
    fields = (attr or b"").split(b"\0")  # path NUL attribute NUL value NUL
    if len(fields) < 3 or fields[2] != b"set":
        return False
    return bool(git("ls-files", "-z"))


def pre_save_hook(model: dict, path: str, contents_manager=None, **kwargs) -> None:
    """Jupyter server ``pre_save_hook``: strip outputs of notebooks git marks ``clkit-strip-outputs``.

    ``path`` is relative to the server's root; the contents manager maps it to the
    file. Other files and unmarked notebooks are left untouched.
    """
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    root = getattr(contents_manager, "root_dir", None) or os.getcwd()
    os_path = Path(root) / path.strip("/")
    if strips_outputs(os_path):
        strip_outputs(model["content"])


def enable(prefix=None) -> Path:
    """Merge :data:`SERVER_CONFIG` into ``PREFIX/etc/jupyter/jupyter_server_config.json``; return it.

    ``prefix`` is the environment's root (default: this Python's ``sys.prefix``).
    Other settings in the file are kept; the file is replaced atomically.

    Examples
    --------
    >>> import tempfile, json
    >>> p = enable(tempfile.mkdtemp())
    >>> json.loads(p.read_text())["ContentsManager"]["pre_save_hook"]
    'clkit.lab.pre_save_hook'
    """
    from ._io import atomic_write_json

    path = Path(sys.prefix if prefix is None else prefix) / "etc" / "jupyter" / "jupyter_server_config.json"
    config: dict = {}
    if path.exists():
        try:
            config = json.loads(path.read_text())
        except ValueError as e:
            raise ValueError(f"{path} is not valid JSON ({e}); fix or remove it, then run `make install`") from e
        if not isinstance(config, dict):
            raise ValueError(f"{path} holds {type(config).__name__}, not a JSON object; fix or remove it")
    for section, values in SERVER_CONFIG.items():
        config.setdefault(section, {}).update(values)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_json(path, config)
