"""Where a sweep keeps its cases, and how a case becomes complete.

Layout of ``OUT/<notebook>/``::

    sweep.json          manifest: the grid's cases in order, with keys, folder names and parameters
    seed=1,x=0/         one finished case, named by what the grid varies (see below)
        case.json       key, folder name, notebook hash, resolved parameters, clkit version
        run.json        key, status ("ok" or "failed"), error, runtime; written last
        results.json    what the notebook recorded
        <notebook>.ipynb (or .failed.ipynb), figures/
    .work/<host>_<pid>_<id>/   a case being executed by process <pid> on <host> (never read as a result)

**Folder names** (:func:`case_name`). A case's folder is named by its own overrides -- the
values the grid sets, not the base parameter set -- as ``name=value`` pairs sorted by name
and joined by ``,``, using only ``A-Z a-z 0-9 . _ = , + -``:

* numbers as Python writes them (``0.01``, ``1e-05``, ``1e20`` -- the ``+`` of an exponent
  dropped), ``true``/``false``/``null``, strings as they are (``learner=ewc``);
* dotted parameter names as written (``learner_kwargs.ewc.ewc_lambda=100``);
* a list as its items joined by ``+`` (``seeds=1+2+3``; a one-element list ``[1]`` is ``1``),
  a mapping as dotted ``key=value`` items joined by ``+``
  (``learner_kwargs=ewc.ewc_lambda=100+si.si_lambda=1``);
* a case with no overrides is ``base``.

When the name would be longer than ``MAX_NAME`` (80) characters, or a value cannot be
written exactly in those characters (a string with other characters such as ``cuda:0`` or
``a,b``, one that reads as a number or ``true``, an empty or nested list), the name is a
readable prefix (unsafe characters as ``_``), ``-`` and 8 hex digits of the SHA-256 of the
case's overrides: ``device=cuda_0-1f2e3d4c``. Two cases of one grid never share a folder:
where two would still render alike (a one-element list and its element) both get the hex
suffix. The names are stored per case in ``sweep.json`` and read from there.

**Identity.** The key is the SHA-256 of the notebook stem, the notebook's content hash
(cell types and sources, so re-saving or clearing outputs does not change it), the
resolved parameters (base set merged with the case) and the clkit version; the folder
name only locates a case. ``run.json`` and ``case.json`` keep the full key, and a case is
*complete* only when ``<folder>/run.json`` says ``ok`` for the case's current key,
*failed* when it says ``failed`` for that key, and *pending* otherwise -- so an edited
notebook, another clkit version or another base set (``--params``) into the same folder
reruns the case, and the new result replaces the old one in the same folder. Sweep
folders written before the names were readable (cases in ``<key[:12]>/``) are not read:
their cases count as pending and rerun into readable folders; delete the hex folders.

**Work folders.** A case runs in its own folder under ``.work/``, named by the owning
process (``<host>_<pid>_<8 hex>``), and is moved to its final folder by one directory
rename once its ``run.json`` is written, so an interrupted sweep never leaves a folder
that looks complete. A killed worker leaves its work folder behind; the next
``clkit sweep`` or ``clkit run-case`` into the same folder removes those whose process on
this host is gone (:func:`clean_work`), keeps those of processes still running (a sweep
running beside it), and leaves, reporting them, those of other hosts (or of an unknown
owner) older than ``STALE_H`` hours.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import time
import uuid
from pathlib import Path

from .._io import atomic_write_json

__all__ = ["notebook_hash", "case_key", "case_name", "case_names", "manifest_names", "case_dir", "case_status",
           "work_dir", "make_work_dir", "publish_case", "write_manifest", "read_manifest", "clean_work", "clean_line"]

MAX_NAME = 80  # characters of a case folder's name at most
DIGEST = 8  # hex digits of the overrides' SHA-256 appended to a shortened or inexact name
STALE_H = 6  # hours after which a work folder of another host is reported
BASE_NAME = "base"
_SAFE_TEXT = re.compile(r"[A-Za-z0-9._-]+")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_OWNER = re.compile(r"(?P<host>[A-Za-z0-9.-]+)_(?P<pid>[0-9]+)_(?P<id>[0-9a-f]{8})(?P<old>_old)?")


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


def _digest(case: dict, n: int = DIGEST) -> str:
    """``n`` hex digits of the SHA-256 of a case's overrides (canonical JSON, as :func:`expand_grid` dedups)."""
    blob = json.dumps(case, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:n]


def _typed(text: str) -> bool:
    """Whether a string would read as another type in a name (``true``, ``null``, ``1e5``, ``nan``)."""
    if text in ("true", "false", "null", "empty"):
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def _render(value, inner: bool = False) -> tuple[str, bool]:
    """``(text, exact)``: ``value`` in the folder-name alphabet; ``exact`` when no information was lost.

    ``inner``: an item of a list or mapping, where lists, mappings and empty strings cannot be exact.
    """
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value], True
    if isinstance(value, int):
        return str(value), True
    if isinstance(value, float):
        return repr(value).replace("+", ""), True
    if isinstance(value, str):
        if value == "":
            return "", not inner
        if _SAFE_TEXT.fullmatch(value) and not _typed(value):
            return value, True
        return _UNSAFE.sub("_", value), False
    if isinstance(value, (list, tuple, dict)) and (inner or not value):
        if not value:
            return "empty", False
        if isinstance(value, (list, tuple)):  # a list in a list: items joined by "_"
            return "_".join(_render(v, inner=True)[0] for v in value), False
        return _UNSAFE.sub("_", json.dumps(value, sort_keys=True, default=str)).strip("_"), False
    if isinstance(value, (list, tuple)):
        items = [_render(v, inner=True) for v in value]
        return "+".join(t for t, _ in items), all(e for _, e in items)
    if isinstance(value, dict):
        items = []
        for path, leaf in _leaves(value):
            names = [_render_name(k) for k in path]
            text, exact = _render(leaf, inner=True)
            items.append((".".join(n for n, _ in names) + "=" + text, exact and all(e for _, e in names)))
        return "+".join(t for t, _ in items), all(e for _, e in items)
    return _UNSAFE.sub("_", str(value)), False


def _leaves(d: dict, path=()):
    """``(path, value)`` of a nested mapping's leaves, keys sorted; an empty mapping is a leaf."""
    for k in sorted(d, key=str):
        v = d[k]
        if isinstance(v, dict) and v:
            yield from _leaves(v, (*path, k))
        else:
            yield (*path, k), v


def _render_name(name) -> tuple[str, bool]:
    """A parameter or mapping key name in the folder-name alphabet, and whether exactly."""
    text = str(name)
    if _SAFE_TEXT.fullmatch(text):
        return text, True
    return _UNSAFE.sub("_", text), False


def _readable(case: dict) -> tuple[str, bool]:
    """The full readable name of a non-empty case and whether it renders every value exactly."""
    parts, exact = [], True
    for name in sorted(case, key=str):
        n, n_exact = _render_name(name)
        v, v_exact = _render(case[name])
        parts.append(f"{n}={v}")
        exact = exact and n_exact and v_exact
    return ",".join(parts), exact


def _shorten(text: str, case: dict, n: int = DIGEST) -> str:
    """A readable prefix of ``text``, ``-`` and ``n`` hex digits of the case's overrides."""
    return f"{text[:max(MAX_NAME - n - 1, 1)].rstrip(',=+')}-{_digest(case, n)}"


def case_name(case: dict) -> str:
    """Folder name of a case from its own overrides (format in the module docstring).

    Parameters
    ----------
    case : dict
        The case as the grid gives it: parameter name (dotted names allowed) -> value.

    Returns
    -------
    str
        ``name=value`` pairs sorted by name, joined by ``,``; ``base`` for no overrides;
        at most ``MAX_NAME`` characters from ``A-Z a-z 0-9 . _ = , + -``.

    Raises
    ------
    ValueError
        When ``case`` is not a mapping.

    Examples
    --------
    >>> case_name({"seed": 1, "lr": 0.01})
    'lr=0.01,seed=1'
    >>> case_name({"learner_kwargs.ewc.ewc_lambda": 100, "seeds": [1, 2]})
    'learner_kwargs.ewc.ewc_lambda=100,seeds=1+2'
    >>> case_name({"learner_kwargs": {"ewc": {"ewc_lambda": 1e-05}}}), case_name({})
    ('learner_kwargs=ewc.ewc_lambda=1e-05', 'base')
    >>> case_name({"device": "cuda:0"})
    'device=cuda_0-8921d8d1'
    """
    if not isinstance(case, dict):
        raise ValueError(f"case must be a mapping of parameter names to values, got {type(case).__name__} {case!r}")
    if not case:
        return BASE_NAME
    text, exact = _readable(case)
    if exact and len(text) <= MAX_NAME:
        return text
    return _shorten(text, case)


def case_names(cases: list) -> list[str]:
    """Folder names of a grid's cases (:func:`case_name`), never the same for two different cases.

    Cases whose names would coincide although their overrides differ all get the hex
    suffix (longer if 8 digits still coincide); identical cases share their folder.

    Examples
    --------
    >>> case_names([{"a": 1, "b": 2}, {"a": "1,b=2"}, {"seeds": [1]}, {"seeds": 1}])
    ['a=1,b=2', 'a=1_b_2-6a3dbf46', 'seeds=1-55604f71', 'seeds=1-f60c1bac']
    """
    names = [case_name(c) for c in cases]
    sigs = [json.dumps(c, sort_keys=True, default=str) for c in cases]
    for n in (DIGEST, 16, 64):
        groups: dict[str, set] = {}
        for name, sig in zip(names, sigs):
            groups.setdefault(name, set()).add(sig)
        clash = {name for name, found in groups.items() if len(found) > 1}
        if not clash:
            return names
        names = [_shorten(_readable(c)[0] if c else BASE_NAME, c, n) if name in clash else name
                 for name, c in zip(names, cases)]
    raise ValueError(f"cases: different cases still share a folder name: {sorted(clash)}")  # pragma: no cover


def manifest_names(manifest: dict) -> list[str]:
    """Folder names of a manifest's cases: as stored in ``sweep.json``, else computed (older manifests)."""
    cases = manifest["cases"]
    if all(c.get("name") for c in cases):
        return [c["name"] for c in cases]
    return case_names([c.get("case", {}) for c in cases])


def case_dir(root, name: str) -> Path:
    """Final folder of the case named ``name`` (:func:`case_name`) under the sweep folder ``root``.

    Examples
    --------
    >>> case_dir("runs/sweep/03_temporal_metrics", "seed=1").as_posix()
    'runs/sweep/03_temporal_metrics/seed=1'
    """
    return Path(root) / name


def _host() -> str:
    """This machine's name in the work-folder alphabet."""
    return re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname()) or "host"


def work_dir(root, pid: int | None = None) -> Path:
    """A fresh, unique folder ``.work/<host>_<pid>_<8 hex>`` to execute a case in (not created).

    ``pid`` is the owning process (default: this one); :func:`clean_work` removes the folder
    once that process is gone.

    Examples
    --------
    >>> import os
    >>> work_dir("out").name.split("_")[-2] == str(os.getpid())
    True
    """
    pid = os.getpid() if pid is None else pid
    return Path(root) / ".work" / f"{_host()}_{pid}_{uuid.uuid4().hex[:8]}"


def case_status(root, key: str, name: str) -> dict:
    """``{"status": "ok"|"failed"|"pending", ...run.json}`` of the case ``key`` in folder ``name``.

    A folder whose ``run.json`` is missing, unreadable or belongs to another key
    (an edited notebook, another clkit version or base set) counts as pending.

    Examples
    --------
    >>> import tempfile
    >>> case_status(tempfile.mkdtemp(), "ab" * 32, "seed=1")
    {'status': 'pending'}
    """
    meta = case_dir(root, name) / "run.json"
    try:
        rec = json.loads(meta.read_text())
    except (OSError, ValueError):
        return {"status": "pending"}
    if not isinstance(rec, dict) or rec.get("key") != key or rec.get("status") not in ("ok", "failed"):
        return {"status": "pending"}
    return rec


def publish_case(work: Path, root, key: str, name: str) -> Path:
    """Move a finished work folder to the case's final folder ``name`` in one rename.

    An older result in that folder (a failed attempt, or a result of another key:
    the notebook changed) is moved aside first and deleted after; if another
    process published the same key meanwhile and it is complete, this attempt is
    discarded.
    """
    final = case_dir(root, name)
    if final.exists():
        if case_status(root, key, name)["status"] == "ok":
            shutil.rmtree(work, ignore_errors=True)
            return final
        trash = work_dir(root)
        trash = trash.with_name(trash.name + "_old")
        for _ in range(5):  # another sweep may remove an empty .work/ meanwhile
            trash.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(final, trash)
                break
            except FileNotFoundError:
                if not final.exists():
                    break
        shutil.rmtree(trash, ignore_errors=True)
    os.replace(work, final)
    return final


def make_work_dir(root) -> Path:
    """Create and return a fresh :func:`work_dir` (retrying when a concurrent cleanup removes an empty ``.work``).

    Examples
    --------
    >>> import tempfile
    >>> make_work_dir(tempfile.mkdtemp()).is_dir()
    True
    """
    for attempt in range(5):
        work = work_dir(root)
        try:
            work.mkdir(parents=True)
            return work
        except FileNotFoundError:  # .work/ went between creating it and the folder in it
            if attempt == 4:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except OverflowError:
        return False
    try:
        import psutil

        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except Exception:  # noqa: BLE001 - psutil missing, or the process went meanwhile
        return True


def clean_work(root, stale_h: float = STALE_H) -> dict:
    """Remove the work folders of dead processes on this host; remove ``.work`` when empty.

    Parameters
    ----------
    root : str or Path
        The sweep folder ``OUT/<notebook>``.
    stale_h : float
        Work folders of other hosts (or of an unknown owner, e.g. from an older clkit)
        older than this many hours are reported in ``left``; they are never removed.

    Returns
    -------
    dict
        ``removed`` (names of the folders removed), ``running`` (how many belong to
        processes still running here: kept) and ``left`` (names reported, kept).

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp()); work_dir(root).mkdir(parents=True)
    >>> clean_work(root)["running"], (root / ".work").exists()
    (1, True)
    """
    if float(stale_h) < 0:
        raise ValueError(f"stale_h must be >= 0 hours, got {stale_h!r}")
    work = Path(root) / ".work"
    out = {"removed": [], "running": 0, "left": []}
    if not work.is_dir():
        return out
    host, now = _host(), time.time()
    for d in sorted(work.iterdir()):
        m = _OWNER.fullmatch(d.name)
        if m and m["host"] == host:
            if _alive(int(m["pid"])):
                out["running"] += 1
                continue
            shutil.rmtree(d, ignore_errors=True) if d.is_dir() else d.unlink(missing_ok=True)
            out["removed"].append(d.name)
            continue
        try:
            age_h = (now - d.stat().st_mtime) / 3600
        except OSError:
            continue
        if age_h > stale_h:
            out["left"].append(d.name)
    try:
        work.rmdir()  # only when empty
    except OSError:
        pass
    return out


def clean_line(cleaned: dict, root, stale_h: float = STALE_H) -> str | None:
    """One line saying what :func:`clean_work` did, or ``None`` when there was nothing to say.

    Examples
    --------
    >>> print(clean_line({"removed": ["h_12_0a1b2c3d"], "running": 1, "left": []}, "out/nb"))  # doctest: +ELLIPSIS
    [clkit] out/nb/.work: removed 1 leftover work folder(s) ... (h_12_0a1b2c3d); kept 1 of running processes
    """
    removed, left = cleaned["removed"], cleaned["left"]
    if not removed and not left:
        return None
    parts = []
    if removed:
        shown = ", ".join(removed[:3]) + (f" and {len(removed) - 3} more" if len(removed) > 3 else "")
        parts.append(f"removed {len(removed)} leftover work folder(s) of processes gone from this host ({shown})")
    if cleaned["running"]:
        parts.append(f"kept {cleaned['running']} of running processes")
    if left:
        shown = ", ".join(left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
        parts.append(f"left {len(left)} older than {stale_h:g} h of other hosts or unknown owners ({shown}): "
                     "remove them by hand once no sweep runs there")
    return f"[clkit] {Path(root) / '.work'}: " + "; ".join(parts)


def write_manifest(root, manifest: dict) -> Path:
    """Write ``sweep.json`` atomically."""
    return atomic_write_json(Path(root) / "sweep.json", manifest)


def read_manifest(root) -> dict:
    """Read ``sweep.json`` of a sweep folder, or a ``ValueError`` naming the file and what is wrong with it
    (issue 55: a truncated file gave a JSON error without the file's name, ``[]`` a ``list indices`` error).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "sweep.json").write_text("[]")
    >>> read_manifest(d)
    Traceback (most recent call last):
    ...
    ValueError: .../sweep.json is not a sweep manifest: a JSON list, where clkit sweep writes an object with its cases (notebook, cases, ...); prepare the sweep again (clkit sweep NOTEBOOK --grid GRID --out OUT --print-cases)
    """
    path = Path(root) / "sweep.json"
    again = "prepare the sweep again (clkit sweep NOTEBOOK --grid GRID --out OUT --print-cases)"
    try:
        plan = json.loads(path.read_text())
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a sweep manifest: not text; {again}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not a sweep manifest: invalid JSON at line {exc.lineno} column {exc.colno} "
                         f"({exc.msg}; a file cut short?); {again}") from None
    if not isinstance(plan, dict):
        raise ValueError(f"{path} is not a sweep manifest: a JSON {type(plan).__name__.replace('dict', 'object')}, "
                         f"where clkit sweep writes an object with its cases (notebook, cases, ...); {again}")
    missing = [k for k in ("notebook", "cases") if k not in plan]
    if missing or not isinstance(plan.get("cases"), list):
        raise ValueError(f"{path} is not a sweep manifest: {'no ' + ', '.join(missing) if missing else 'cases is not a list'}"
                         f"; {again}")
    return plan
