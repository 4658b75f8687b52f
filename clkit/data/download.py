"""Downloads for ``clkit data get``: resumable, verified, never half a file.

:func:`fetch` downloads one address to ``<dest>.partial`` (resuming with an HTTP ``Range``
request when a partial file is already there), shows a tqdm bar, compares the finished file
with its published digest and only then renames it onto ``dest``. A file whose digest differs
is refused -- the message names both digests -- and removed, unless ``allow_unverified``.

:func:`get` fetches one catalog entry (:mod:`clkit.data.catalog`): its archives into
``<data cache>/downloads/``, unpacked into a temporary folder beside the destination and
renamed into place; entries whose library has its own download path (open_clip, timm,
cesnet-tszoo, wild-time-data, ogb) are fetched through it, then verified where a digest exists.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import uuid
import zipfile
from pathlib import Path

from .catalog import Artifact, Entry

__all__ = ["DownloadError", "fetch", "get", "unpack"]


class DownloadError(OSError):
    """A download failed (network, server) or its file differs from the published digest."""


def fetch(url: str, dest, digest: str = "", *, allow_unverified: bool = False, progress: bool = True,
          timeout: float = 30.0, chunk: int = 1 << 20) -> Path:
    """Download ``url`` to ``dest`` through ``dest.partial``, resuming it, verifying ``digest``.

    Parameters
    ----------
    url : str
        An ``http(s)://`` address.
    dest : path-like
        The finished file; it appears only once complete and verified.
    digest : str
        ``"<algo>:<hex>"`` (:func:`clkit.data.preflight.verify_file`); ``""``: none published.
    allow_unverified : bool
        Keep a file whose digest differs (the mismatch is still reported as a warning).

    Raises
    ------
    DownloadError
        The server failed, or the file's digest differs (naming both digests); the partial file
        is kept after a network failure (the next call resumes it) and removed after a mismatch.
    """
    import urllib.error
    import urllib.request
    import warnings

    from .preflight import verify_file

    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(f"url must be an http(s):// address, got {url!r}")
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".partial")
    have = partial.stat().st_size if partial.exists() else 0
    total = None
    req = urllib.request.Request(url, headers={"User-Agent": "clkit"})
    if have:
        req.add_header("Range", f"bytes={have}-")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            resumed = have and resp.status == 206
            if not resumed:
                have = 0   # the server sent the whole file: start again
            total = resp.headers.get("Content-Length")
            total = int(total) + have if total is not None else None
            from tqdm.auto import tqdm

            with open(partial, "ab" if resumed else "wb") as fh, tqdm(
                    total=total, initial=have, unit="B", unit_scale=True, desc=dest.name, disable=not progress,
                    leave=False) as bar:
                for block in iter(lambda: resp.read(chunk), b""):
                    fh.write(block)
                    bar.update(len(block))
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:   # the partial file is already complete
            pass
        else:
            raise DownloadError(f"{url}: the server answered {exc.code} {exc.reason}; {partial} is kept "
                                f"({have:,} bytes) and the next `clkit data get` resumes it") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise DownloadError(f"{url}: {exc}; {partial} is kept and the next `clkit data get` resumes it") from exc
    if total is not None and partial.stat().st_size < total:
        raise DownloadError(f"{url}: the connection closed after {partial.stat().st_size:,} of {total:,} bytes; "
                            f"{partial} is kept and the next `clkit data get` resumes it")
    if digest:
        ok, got = verify_file(partial, digest, memo=False)
        if not ok:
            if not allow_unverified:
                partial.unlink()
                raise DownloadError(f"{url}: the downloaded file differs from its published digest: expected "
                                    f"{digest}, got {got}; it was removed (pass --allow-unverified to keep such a "
                                    f"file)")
            warnings.warn(f"{dest.name}: digest differs (expected {digest}, got {got}); kept because "
                          f"--allow-unverified was given", UserWarning, stacklevel=2)
    os.replace(partial, dest)
    return dest


def unpack(archive, dest, unpacks: str) -> Path:
    """Unpack ``archive`` (tar, tar.gz, tgz, zip) so that its ``unpacks`` folder lands in ``dest``.

    The archive is extracted into a temporary folder beside ``dest`` (tar's ``data`` filter: no
    absolute paths, links out of the folder or device files), and its ``unpacks`` folder renamed
    into ``dest/<unpacks>`` (``"."``: every top-level entry moved into ``dest``), replacing an older
    copy. Returns what was placed.
    """
    from .._io import replace_dir

    archive, dest = Path(archive), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    work = dest / f".unpack-{uuid.uuid4().hex[:8]}"
    work.mkdir()
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    target = (work / info.filename).resolve()
                    if not str(target).startswith(str(work.resolve())):
                        raise DownloadError(f"{archive}: member {info.filename!r} leaves the folder")
                zf.extractall(work)
        else:
            with tarfile.open(archive) as tf:
                tf.extractall(work, filter="data")
        if unpacks == ".":
            for item in work.iterdir():
                target = dest / item.name
                if target.is_dir():
                    shutil.rmtree(target)
                os.replace(item, target)
            return dest
        src = work / unpacks
        if not src.exists():
            raise DownloadError(f"{archive} holds no {unpacks}/ (it holds {sorted(p.name for p in work.iterdir())})")
        return replace_dir(src, dest / unpacks)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _downloads() -> Path:
    from ._cache import data_root

    return data_root(create=True) / "downloads"


def _fetch_artifact(art: Artifact, entry: Entry, *, allow_unverified: bool, progress: bool) -> Path:
    if art.unpacks:
        archive = fetch(art.url, _downloads() / art.name, art.digest, allow_unverified=allow_unverified,
                        progress=progress)
        return unpack(archive, entry.dest, art.unpacks)
    return fetch(art.url, Path(entry.dest) / art.name, art.digest, allow_unverified=allow_unverified,
                 progress=progress)


def get(entry: Entry, *, allow_unverified: bool = False, progress: bool = True) -> str:
    """Fetch ``entry`` into the cache, verified; return one line saying what was done.

    An entry already found and verified (:func:`clkit.data.preflight.check_entry`) is left alone.
    """
    from .preflight import check_entry, verify_file

    before = check_entry(entry)
    if not before.problem:
        return f"{entry.name}: already there ({before.where}: {before.detail})"
    if entry.get == "clkit":
        for art in entry.artifacts:
            _fetch_artifact(art, entry, allow_unverified=allow_unverified, progress=progress)
    elif entry.get == "loader":
        _LOADERS[entry.opener](entry)
        for loc in entry.locations:   # verify what the library wrote, where a digest is published
            for rel, digest in loc.digests.items():
                p = Path(loc.folder) / rel
                if p.is_file() and digest:
                    ok, got = verify_file(p, digest)
                    if not ok and not allow_unverified:
                        p.unlink()
                        raise DownloadError(f"{p}: differs from its published digest: expected {digest}, got {got}; "
                                            "it was removed (pass --allow-unverified to keep such a file)")
    else:
        raise DownloadError(f"{entry.name}: no download exists; {entry.fix}")
    after = check_entry(entry)
    if after.problem and not allow_unverified:
        raise DownloadError(f"{entry.name}: fetched, but the check says {after.status}: {after.detail}")
    return f"{entry.name}: fetched ({after.where}: {after.detail})"


def _get_cesnet(entry):
    from .timeseries import load_cesnet_timeseries24

    load_cesnet_timeseries24(entry.options["num_series"], download=True)


def _get_wild_time(entry):
    from wild_time_data.utils import maybe_download

    art = entry.artifacts[0]
    drive = art.url.split("id=", 1)[1].split("&", 1)[0]
    maybe_download(drive, entry.options["data_dir"], art.name)


def _get_graph(entry):
    from .graphs import load_online_graph

    load_online_graph(entry.options["dataset"], root=entry.options["root"])


def _get_vit(entry):
    import timm

    timm.create_model(entry.options["model"], pretrained=True)


def _get_clip(entry):
    import open_clip

    open_clip.create_model_and_transforms(entry.options["model"], pretrained=entry.options["pretrained"])


_LOADERS = {"cesnet": _get_cesnet, "wild_time": _get_wild_time, "graph": _get_graph, "vit": _get_vit,
            "clip": _get_clip}
