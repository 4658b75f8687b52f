"""The data files this process read, with their SHA-256, for the run's manifest.

Every clkit loader calls :func:`record_read` where it opens a real data file (a Planetoid
raw file, an IDX file, a CIFAR batch, a user's CSV, ...); generated (synthetic) data
records nothing. :func:`data_files` -- part of :func:`clkit.manifest.manifest`, so of every
``results.json`` and ``run.json`` -- lists them as ``{"path", "sha256", "bytes"}``, so two
runs can be told apart by the data they read and not only by the code.

Recording costs one ``stat``; the SHA-256 is computed when :func:`data_files` is first
asked, streamed in 1 MiB chunks, and cached per process for the file's (path, size,
modification time), so a file read by several cells, or a manifest written twice, is
hashed once. Files read as one collection (an image folder: thousands of files) are
recorded with a ``group`` folder and listed as one entry whose ``sha256`` covers every
file's relative path and SHA-256 and whose ``files`` counts them.

Paths carry no machine-specific prefix where one can be avoided: a file inside the clkit
package reads ``clkit/...``, one in the data cache ``<data>/...`` (:func:`clkit.data._cache.data_root`),
one in an installed library ``<site-packages>/...``, one in the folder ``clkit run`` was
started from (``$PWD``) or the working folder relative to it, one in the home folder
``~/...``; anything else (``/usr/share/datasets/...``) stays absolute.

Examples
--------
>>> import tempfile, pathlib
>>> f = pathlib.Path(tempfile.mkdtemp()) / "tiny.csv"
>>> _ = f.write_text("a,b\\n1,2\\n")
>>> _ = record_read(f)
>>> [e for e in data_files() if e["path"].endswith("tiny.csv")][0]["sha256"][:12]
'492d5ea49605'
>>> forget_reads()
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

__all__ = ["record_read", "data_files", "file_sha256", "display_path", "machine_folders", "forget_reads"]

_CHUNK = 1 << 20
_LOCK = threading.Lock()
#: resolved path -> {"group": resolved folder or None, "uncompressed_sha256": str or None}
_READS: dict[str, dict] = {}
#: (resolved path, size, mtime_ns) -> SHA-256
_HASHES: dict[tuple, str] = {}


def record_read(path, *, group=None, uncompressed_sha256: str | None = None) -> Path:
    """Note that this process read the data file ``path``; returns ``path`` as a :class:`~pathlib.Path`.

    Parameters
    ----------
    path : path-like
        A file; anything that is not an existing file is ignored (the loader reports it).
    group : path-like, optional
        The folder of a collection read file by file (an image folder): listed as one entry.
    uncompressed_sha256 : str, optional
        The SHA-256 of a compressed file's content, where the loader checked it (listed
        beside the file's own).

    Examples
    --------
    >>> record_read("/nonexistent/file.csv")
    PosixPath('/nonexistent/file.csv')
    >>> [e for e in data_files() if "nonexistent" in e["path"]]
    []
    """
    p = Path(path)
    try:
        if not p.is_file():
            return p
        key = str(p.resolve())
    except OSError:
        return p
    entry = {"group": str(Path(group).resolve()) if group is not None else None,
             "uncompressed_sha256": uncompressed_sha256}
    with _LOCK:
        _READS[key] = entry
    return p


def file_sha256(path) -> str:
    """SHA-256 (hex) of the file at ``path``, streamed, cached per (path, size, modification time).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "empty"
    >>> _ = f.write_bytes(b"")
    >>> file_sha256(f)
    'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
    """
    p = Path(path).resolve()
    st = p.stat()
    key = (str(p), st.st_size, st.st_mtime_ns)
    with _LOCK:
        if key in _HASHES:
            return _HASHES[key]
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    digest = h.hexdigest()
    with _LOCK:
        _HASHES[key] = digest
    return digest


def machine_folders(project=None) -> list[tuple[Path, str]]:
    """This machine's folders a shared file should not show, each with what is shown instead.

    clkit's package folder as ``clkit``, the data root (:func:`clkit.data._cache.data_root`) as
    ``<data>``, the environment's ``site-packages`` as ``<site-packages>`` and its prefix as
    ``<python>``, the project folder (default: ``$PWD`` and the working folder) as nothing
    (paths relative to it), the home folder as ``~``. Deepest first, so the first folder that
    holds a path is the most specific one. A run's manifest (:func:`display_path`) and the site
    (``clkit.site``) both use it.

    Examples
    --------
    >>> pairs = machine_folders("/home/ann/project")
    >>> (Path("/home/ann/project").resolve(), "") in pairs
    True
    >>> depths = [len(folder.parts) for folder, _ in pairs]
    >>> depths == sorted(depths, reverse=True)
    True
    """
    import sys
    import sysconfig

    from ._cache import data_root

    pairs = [(Path(__file__).resolve().parent.parent, "clkit"), (data_root().resolve(), "<data>")]
    for key in ("purelib", "platlib"):
        if sysconfig.get_paths().get(key):
            pairs.append((Path(sysconfig.get_paths()[key]).resolve(), "<site-packages>"))
    pairs.append((Path(sys.prefix).resolve(), "<python>"))
    projects = [project] if project is not None else [os.environ.get("PWD"), os.getcwd()]
    pairs += [(Path(f).resolve(), "") for f in projects if f]
    pairs.append((Path.home().resolve(), "~"))
    unique = list(dict.fromkeys(pairs))
    return sorted(unique, key=lambda fs: -len(fs[0].parts))


def display_path(path) -> str:
    """``path`` without the machine's prefix, where one of the module docstring's folders holds it.

    Examples
    --------
    >>> from clkit.data.shipped import shipped_planetoid_dir
    >>> display_path(shipped_planetoid_dir("cora") / "ind.cora.x.gz")
    'clkit/data/planetoid/cora/ind.cora.x.gz'
    >>> display_path("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")
    '/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz'
    """
    p = Path(path).resolve()
    for folder, shown in machine_folders():
        if p == folder or folder in p.parents:
            rel = p.relative_to(folder).as_posix()
            return f"{shown}/{rel}" if shown else rel
    return p.as_posix()


def data_files() -> list[dict]:
    """The data files read so far, sorted by path: ``{"path", "sha256", "bytes"}`` each
    (``"uncompressed_sha256"`` where the loader checked a compressed file's content;
    ``"files"`` for a group). A file that changed or vanished since it was read is listed
    as it is now (or with ``sha256`` ``None``).

    Examples
    --------
    >>> isinstance(data_files(), list)
    True
    """
    with _LOCK:
        reads = dict(_READS)
    singles, groups = [], {}
    for path, info in reads.items():
        if info["group"] is not None:
            groups.setdefault(info["group"], []).append(path)
            continue
        try:
            entry = {"path": display_path(path), "sha256": file_sha256(path), "bytes": Path(path).stat().st_size}
        except OSError:
            entry = {"path": display_path(path), "sha256": None, "bytes": None}
        if info["uncompressed_sha256"]:
            entry["uncompressed_sha256"] = info["uncompressed_sha256"]
        singles.append(entry)
    for folder, paths in groups.items():
        h, total, ok = hashlib.sha256(), 0, True
        for path in sorted(paths, key=lambda q: Path(q).relative_to(folder).as_posix()):
            try:
                h.update(f"{Path(path).relative_to(folder).as_posix()}\t{file_sha256(path)}\n".encode())
                total += Path(path).stat().st_size
            except OSError:
                ok = False
        singles.append({"path": display_path(folder), "sha256": h.hexdigest() if ok else None,
                        "bytes": total, "files": len(paths)})
    return sorted(singles, key=lambda e: e["path"])


def forget_reads() -> None:
    """Empty the record (the hash cache stays): a test or a fresh analysis in the same kernel."""
    with _LOCK:
        _READS.clear()
