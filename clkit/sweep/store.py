"""Where a sweep keeps its cases, and how a case becomes complete.

Layout of ``OUT/<notebook>/``::

    sweep.json          manifest: the grid's cases in order, with keys and parameters
    <key>/              one finished case (12 hex digits of its key)
        case.json       key, notebook hash, resolved parameters, clkit version
        run.json        status ("ok" or "failed"), error, runtime; written last
        results.json    what the notebook recorded
        <notebook>.ipynb (or .failed.ipynb), figures/
    .work/<key>.<id>/   a case being executed (never read as a result)

A case runs in its own folder under ``.work/`` and is moved to ``<key>/`` by one
directory rename once its ``run.json`` is written, so an interrupted sweep never
leaves a folder that looks complete. A case is *complete* when ``<key>/run.json``
says ``ok``, *failed* when it says ``failed``, and *pending* otherwise.

The key is the SHA-256 of the notebook stem, the notebook's content hash (cell
types and sources, so re-saving or clearing outputs does not change it), the
resolved parameters (base set merged with the case) and the clkit version:
change any of them and the case runs again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path

from .._io import atomic_write_json

__all__ = ["notebook_hash", "case_key", "case_dir", "case_status", "work_dir", "publish_case",
           "write_manifest", "read_manifest", "clean_work"]

KEY_LEN = 12


def notebook_hash(path) -> str:
    """SHA-256 of a notebook's cell types and sources (outputs and metadata ignored).

    Examples
    --------
    >>> import nbformat, tempfile, os
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    >>> p = os.path.join(tempfile.mkdtemp(), "n.ipynb"); nbformat.write(nb, p)
    >>> h = notebook_hash(p); nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="1")]
    >>> nbformat.write(nb, p); notebook_hash(p) == h
    True
    """
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    cells = [[c.cell_type, c.source] for c in nb.cells]
    return hashlib.sha256(json.dumps(cells).encode()).hexdigest()


def case_key(notebook: str, nb_hash: str, params: dict, version: str) -> str:
    """Stable key of a case (hex SHA-256); parameter order does not matter.

    Examples
    --------
    >>> case_key("n", "h", {"a": 1, "b": 2}, "0.1") == case_key("n", "h", {"b": 2, "a": 1}, "0.1")
    True
    >>> case_key("n", "h", {"a": 1}, "0.1") == case_key("n", "h", {"a": 1.0 + 1}, "0.1")
    False
    """
    blob = json.dumps({"notebook": notebook, "notebook_hash": nb_hash, "params": params,
                       "clkit": version}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def case_dir(root, key: str) -> Path:
    """Final folder of the case ``key`` under the sweep folder ``root``."""
    return Path(root) / key[:KEY_LEN]


def work_dir(root, key: str) -> Path:
    """A fresh, unique folder to execute the case ``key`` in."""
    return Path(root) / ".work" / f"{key[:KEY_LEN]}.{uuid.uuid4().hex[:8]}"


def case_status(root, key: str) -> dict:
    """``{"status": "ok"|"failed"|"pending", ...run.json}`` of a case.

    A folder whose ``run.json`` is missing, unreadable or belongs to another key
    counts as pending.
    """
    meta = case_dir(root, key) / "run.json"
    try:
        rec = json.loads(meta.read_text())
    except (OSError, ValueError):
        return {"status": "pending"}
    if rec.get("key") != key or rec.get("status") not in ("ok", "failed"):
        return {"status": "pending"}
    return rec


def publish_case(work: Path, root, key: str) -> Path:
    """Move a finished work folder to the case's final folder in one rename.

    An older result of the same key (a failed attempt) is moved aside first and
    deleted after; if another process published the same key meanwhile and it is
    complete, this attempt is discarded.
    """
    final = case_dir(root, key)
    if final.exists():
        if case_status(root, key)["status"] == "ok":
            shutil.rmtree(work, ignore_errors=True)
            return final
        trash = Path(root) / ".work" / f"old.{final.name}.{uuid.uuid4().hex[:8]}"
        os.replace(final, trash)
        shutil.rmtree(trash, ignore_errors=True)
    os.replace(work, final)
    return final


def clean_work(root, keys=None) -> int:
    """Remove leftover work folders (of ``keys`` only, if given); return how many."""
    work = Path(root) / ".work"
    if not work.is_dir():
        return 0
    prefixes = None if keys is None else {k[:KEY_LEN] for k in keys}
    n = 0
    for d in work.iterdir():
        stem = d.name.split(".", 1)[0] if not d.name.startswith("old.") else None
        if prefixes is None or stem in prefixes or d.name.startswith("old."):
            shutil.rmtree(d, ignore_errors=True) if d.is_dir() else d.unlink(missing_ok=True)
            n += 1
    if not any(work.iterdir()):
        work.rmdir()
    return n


def write_manifest(root, manifest: dict) -> Path:
    """Write ``sweep.json`` atomically."""
    return atomic_write_json(Path(root) / "sweep.json", manifest)


def read_manifest(root) -> dict:
    """Read ``sweep.json`` of a sweep folder."""
    return json.loads((Path(root) / "sweep.json").read_text())
