"""File helpers: atomic writes (nothing ever writes half a file), the working folder, NumPy files."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["atomic_write_text", "atomic_write_json", "atomic_save", "to_jsonable", "flatten_scalars", "repo_root",
           "work_dir", "replace_dir", "load_npy", "resource_dir", "BUNDLE", "MAX_LINE_BYTES", "check_lines",
           "read_text", "LineTooLong", "DiskFull", "is_disk_full"]

#: the longest line (in bytes) a reader of user files accepts: a longer one (a binary file, a log
#: written as one line) is refused by :func:`check_lines` before it is read whole into memory
MAX_LINE_BYTES = 64 * 2**20
_SCAN_CHUNK = 2**20


class LineTooLong(ValueError):
    """A user file holds a line longer than :data:`MAX_LINE_BYTES` (a ``ValueError``)."""


def _size_text(n: int) -> str:
    return f"{n // 2**20} MiB" if n >= 2**20 and n % 2**20 == 0 else f"{n} bytes"


def check_lines(path, what: str = "", limit: int | None = None) -> Path:
    """Refuse, in one sentence, a file with a line longer than ``limit`` bytes (default
    :data:`MAX_LINE_BYTES`), before anything reads it line by line or whole.

    The file is scanned in 1 MiB pieces (memory stays at one piece however long a line is);
    ``what`` names the file's role in the message (``"R matrix"``). Returns ``Path(path)``.

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "m.csv")
    >>> _ = open(f, "w").write("0.9,0.1\\n" + "9" * 40 + "\\n")
    >>> check_lines(f, "R matrix", limit=16)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    clkit._io.LineTooLong: R matrix: '.../m.csv' line 2 is longer than 16 bytes, the most clkit reads in one line; is it the file you meant (a text file, one record per line)?
    >>> check_lines(f, limit=64).name
    'm.csv'
    """
    path = Path(path)
    limit = MAX_LINE_BYTES if limit is None else int(limit)
    line, run = 1, 0   # the line being read, and its bytes so far (without its newline)

    def refuse():
        head = f"{what}: " if what else ""
        raise LineTooLong(f"{head}{str(path)!r} line {line} is longer than {_size_text(limit)}, the most clkit "
                          "reads in one line; is it the file you meant (a text file, one record per line)?")

    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_SCAN_CHUNK), b""):
            if len(chunk) <= limit:   # a line inside the piece is shorter than the limit: check its ends
                first = chunk.find(b"\n")
                if first < 0:
                    run += len(chunk)
                elif run + first > limit:
                    refuse()
                else:
                    line += chunk.count(b"\n")
                    run = len(chunk) - chunk.rfind(b"\n") - 1
                if run > limit:
                    refuse()
                continue
            start = 0
            while True:
                nl = chunk.find(b"\n", start)
                run += (len(chunk) if nl < 0 else nl) - start
                if run > limit:
                    refuse()
                if nl < 0:
                    break
                line, run, start = line + 1, 0, nl + 1
    return path


def read_text(path, what: str = "", errors: str = "strict", encoding: str = "utf-8") -> str:
    """``Path(path).read_text()`` after :func:`check_lines` (a line longer than :data:`MAX_LINE_BYTES`
    is refused in one sentence instead of read whole).

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> _ = open(f, "w").write("a\\nb\\n")
    >>> read_text(f)
    'a\\nb\\n'
    """
    return check_lines(path, what).read_text(encoding=encoding, errors=errors)


def repo_root() -> Path:
    """The checkout's root (the folder holding ``clkit/``)."""
    return Path(__file__).resolve().parent.parent


#: the folder inside an installed package that holds what a checkout keeps at its top level
#: (``notebooks/``, ``data/class_names/``): ``setup.py`` copies them in at build time
BUNDLE = Path(__file__).resolve().parent / "_bundle"


def resource_dir(name: str) -> Path:
    """A top-level folder of the kit (``"notebooks"``, ``"data/class_names"``): the checkout's own when
    clkit runs from one (it has ``pyproject.toml`` and the folder), else the copy an installed wheel
    carries (:data:`BUNDLE`), so there is one source: the checkout's.

    Examples
    --------
    >>> resource_dir("notebooks").name
    'notebooks'
    """
    here = repo_root() / name
    if (repo_root() / "pyproject.toml").is_file() and here.is_dir():
        return here
    return BUNDLE / name


def work_dir() -> Path:
    """The folder a notebook run interactively writes under: the working directory.

    JupyterLab starts a notebook's kernel in the notebook's own folder, so when
    that folder is called ``notebooks`` its parent (the project folder) is used,
    giving ``runs/`` and ``figures/`` beside ``notebooks/`` as ``clkit run`` does.

    Examples
    --------
    >>> import os, tempfile
    >>> old = os.getcwd()
    >>> root = Path(tempfile.mkdtemp()).resolve()
    >>> (root / "notebooks").mkdir()
    >>> os.chdir(root / "notebooks")
    >>> work_dir() == root
    True
    >>> os.chdir(old)
    """
    cwd = Path.cwd()
    return cwd.parent if cwd.name == "notebooks" else cwd


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is a full disk (``ENOSPC``) or an exhausted quota (``EDQUOT``).

    >>> is_disk_full(OSError(errno.ENOSPC, "No space left on device")), is_disk_full(OSError(errno.EACCES, "x"))
    (True, False)
    """
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1))


class DiskFull(OSError):
    """A write failed for want of space: one sentence naming the folder (``str(exc)``), what was kept and
    what to do. ``folder`` is the folder being written.

    Examples
    --------
    >>> print(DiskFull("/data/runs"))
    no space left on the device holding /data/runs (a full disk or quota); nothing there was replaced: files written before are kept as they were; free some space or write elsewhere, then rerun
    """

    def __init__(self, folder, kept: str = "nothing there was replaced: files written before are kept as they were"):
        self.folder = Path(folder)
        message = (f"no space left on the device holding {self.folder} (a full disk or quota); {kept}; free some "
                   "space or write elsewhere, then rerun")
        super().__init__(errno.ENOSPC, message)

    def __str__(self) -> str:
        return self.strerror


def _umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_save(path, write) -> Path:
    """Call ``write(tmp_path)`` then rename the temporary file onto ``path``.

    The temporary file lives in the destination folder, so the rename is atomic. The file
    gets the mode an ordinary ``open(path, "w")`` would give it -- ``0o666`` less the umask
    (``0644`` under the usual ``022``) -- not ``mkstemp``'s private ``0600``, so a lab sharing
    a results folder, a TA reading grades or a cluster worker running as another user can
    read what clkit writes.

    Examples
    --------
    >>> import os, stat, tempfile
    >>> old = os.umask(0o022)
    >>> p = atomic_save(os.path.join(tempfile.mkdtemp(), "x.txt"), lambda tmp: open(tmp, "w").write("x"))
    >>> oct(stat.S_IMODE(os.stat(p).st_mode))
    '0o644'
    >>> _ = os.umask(old)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + path.suffix, dir=path.parent)
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFull(path.parent, f"{path.name} was not written (an earlier {path.name} is kept)") from None
        raise
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if is_disk_full(exc) and not isinstance(exc, DiskFull):   # one sentence naming the folder
            raise DiskFull(path.parent, f"{path.name} was not written (an earlier {path.name} is kept)") from None
        raise
    return path


def replace_dir(src, dest) -> Path:
    """Move the finished folder ``src`` onto ``dest`` by renames, replacing an older ``dest``.

    ``src`` must be on the same file system (build it beside ``dest`` or in a work
    folder of the same tree). An older ``dest`` is renamed aside first and deleted
    after, so ``dest`` is at every moment the old folder, absent for an instant, or
    the new one, never a mix. Used by ``clkit run`` (a run goes into a temporary
    folder and is published when the notebook ran to its end) and ``clkit course grade``.

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


def load_npy(path, name: str = "array") -> np.ndarray:
    """A NumPy array from a ``.npy`` file, never unpickled; a clear ``ValueError`` for anything else.

    ``name`` says what the file holds in the message (``"labels"``, ``"R matrix"``).

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> np.save(os.path.join(d, "y.npy"), np.array([0, 1, 1]))
    >>> load_npy(os.path.join(d, "y.npy"), "labels").tolist()
    [0, 1, 1]
    >>> _ = open(os.path.join(d, "bad.npy"), "wb").write(b"not numpy at all")
    >>> load_npy(os.path.join(d, "bad.npy"), "labels")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: labels: '.../bad.npy' is not a NumPy array file (.npy, as numpy.save writes): it does not start with NumPy's header
    """
    path = Path(path)
    with open(path, "rb") as fh:
        magic = fh.read(6)
    if magic != b"\x93NUMPY":
        raise ValueError(f"{name}: {str(path)!r} is not a NumPy array file (.npy, as numpy.save writes): "
                         "it does not start with NumPy's header")
    try:
        arr = np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - a damaged header, object arrays, a truncated file
        reason = ("it holds Python objects, not numbers" if "pickle" in str(exc)
                  else f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'unreadable'}")
        raise ValueError(f"{name}: {str(path)!r} is not a readable NumPy array file: {reason}") from None
    if not isinstance(arr, np.ndarray):  # np.load gives an NpzFile for .npz content
        raise ValueError(f"{name}: {str(path)!r} is a NumPy .npz archive, not one array (.npy)")
    return arr
