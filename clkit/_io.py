"""Atomic file writes: nothing ever writes half a file."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["atomic_write_text", "atomic_write_json", "atomic_save", "to_jsonable", "flatten_scalars", "repo_root",
           "replace_dir"]


def repo_root() -> Path:
    """The checkout's root (the folder holding ``clkit/``)."""
    return Path(__file__).resolve().parent.parent


def atomic_save(path, write) -> Path:
    """Call ``write(tmp_path)`` then rename the temporary file onto ``path``.

    The temporary file lives in the destination folder, so the rename is atomic.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + path.suffix, dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def replace_dir(src, dest) -> Path:
    """Move the finished folder ``src`` onto ``dest`` in one rename, replacing an older ``dest``.

    ``src`` must be on the same file system (build it beside ``dest`` or in a work
    folder of the same tree). An older ``dest`` is renamed aside first and deleted
    after, so ``dest`` is at every moment either the old or the new folder.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> for name in ("old", "new"):
    ...     (root / name).mkdir(); _ = (root / name / "f.txt").write_text(name)
    >>> _ = replace_dir(root / "new", root / "old")
    >>> (root / "old" / "f.txt").read_text(), sorted(p.name for p in root.iterdir())
    ('new', ['old'])
    """
    import shutil
    import uuid

    src, dest = Path(src), Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    trash = None
    if dest.exists():
        trash = dest.with_name(f".{dest.name}.old.{uuid.uuid4().hex[:8]}")
        os.replace(dest, trash)
    os.replace(src, dest)
    if trash is not None:
        shutil.rmtree(trash, ignore_errors=True)
    return dest


def atomic_write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically."""
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
    return atomic_save(path, write)


def to_jsonable(obj):
    """Convert NumPy/torch scalars and arrays (recursively) to JSON types.

    Non-finite floats become ``None`` so the file stays strict JSON.

    Examples
    --------
    >>> to_jsonable({"a": np.float32(0.5), "b": np.array([1, 2]), "c": float("nan")})
    {'a': 0.5, 'b': [1, 2], 'c': None}
    """
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if hasattr(obj, "detach") and hasattr(obj, "cpu"):  # torch tensor
        obj = obj.detach().cpu().numpy()
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if np.isfinite(f) else None
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, Path):
        return str(obj)
    return obj


def atomic_write_json(path, obj) -> Path:
    """Write ``obj`` as indented, key-sorted JSON atomically."""
    return atomic_write_text(path, json.dumps(to_jsonable(obj), indent=2, sort_keys=True) + "\n")


def flatten_scalars(d: dict, prefix: str = "", depth: int = 2) -> dict:
    """Scalar leaves of a nested dict, keys joined with dots; lists and deeper levels dropped.

    Examples
    --------
    >>> flatten_scalars({"a": 1, "b": {"c": 2.0, "d": [1, 2]}, "e": {"f": {"g": {"h": 3}}}})
    {'a': 1, 'b.c': 2.0}
    >>> flatten_scalars({"a": 1, "b": {"c": 2}}, depth=0)
    {'a': 1}
    """
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and depth > 0:
            out.update(flatten_scalars(v, key + ".", depth - 1))
        elif isinstance(v, (int, float, str, bool)) or v is None:
            out[key] = v
    return out
