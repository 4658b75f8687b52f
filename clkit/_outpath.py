"""One check of a command's output folder, before any work: ``--out`` (and ``--figures``) of every
writing command (issue 55: ``clkit metrics cl``, ``compare``, ``edge orders``, ``edge analyse`` and
``export`` given an existing file ended in a traceback, ``edge analyse`` after 32 s of work).

Nothing is created here: a refused folder leaves no trace, and the command creates it when it writes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["check_out_folder", "is_uri"]

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


def is_uri(value: str) -> bool:
    """Whether ``value`` is a URI (``sqlite:///x.db``, ``http://host``, ``file:///p``), not a folder path.

    Examples
    --------
    >>> is_uri("sqlite:///mlflow.db"), is_uri("file:///tmp/mlruns"), is_uri("runs/out"), is_uri("/tmp/x")
    (True, True, False, False)
    """
    return bool(_URI.match(str(value)))


def check_out_folder(flag: str, folder) -> None:
    """Refuse, in one ``ValueError`` naming ``flag``, a folder the command could not write into.

    An existing path must be a folder the process may write; a missing one must have, as its nearest
    existing parent, a folder the process may write (so that it can be created). A ``file://`` URI is
    checked as its path; other URIs (a tracking server, an SQLite store) are left to their client.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); f = d / "report.md"; _ = f.write_text("x")
    >>> check_out_folder("--out", d / "new" / "sub")            # created later, by the command
    >>> check_out_folder("--out", f)
    Traceback (most recent call last):
    ...
    ValueError: --out ...report.md is a file, not a folder; give a folder (it is created when missing)
    >>> check_out_folder("--out", f / "sub")
    Traceback (most recent call last):
    ...
    ValueError: --out ...report.md/sub cannot be created: ...report.md is a file, not a folder
    """
    text = str(folder)
    if is_uri(text):
        if not text.startswith("file:"):
            return
        text = re.sub(r"^file:(//)?", "", text)
    path = Path(text).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ValueError(f"{flag} {path} is a file, not a folder; give a folder (it is created when missing)")
        if not os.access(path, os.W_OK | os.X_OK):
            raise ValueError(f"{flag} {path} is not writable (a read-only folder?); give a folder you can write")
        return
    parent = next((p for p in path.absolute().parents if p.exists()), None)
    if parent is None:
        return
    if not parent.is_dir():
        raise ValueError(f"{flag} {path} cannot be created: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {path} cannot be created: {parent} is not writable (a read-only folder?)")
