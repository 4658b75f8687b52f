"""``clkit data get`` against a local HTTP server (issue 51): every dataset clkit downloads itself is
fabricated in its real layout, packed as its real archive, served on 127.0.0.1, fetched, verified
against the digest registered for the test, unpacked and read by the real loader; an interrupted
download resumes with an HTTP Range request; a file that differs from its digest is refused."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import http.server
import shutil
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

from clkit.data import catalog
from clkit.data.download import DownloadError, fetch, get


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves ``server.files`` (name -> bytes) with Range support; ``server.cut`` names files whose first
    response stops after half the bytes (a dropped connection)."""

    def log_message(self, *args):   # quiet
        pass

    def do_GET(self):
        name = self.path.lstrip("/")
        data = self.server.files.get(name)
        if data is None:
            self.send_error(404)
            return
        self.server.requests.append((name, self.headers.get("Range")))
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            start = int(rng[len("bytes="):].split("-")[0])
            if start >= len(data):
                self.send_error(416)
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if name in self.server.cut:
            self.server.cut.discard(name)
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


@pytest.fixture()
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.files, srv.cut, srv.requests = {}, set(), []
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}/"
    yield srv
    srv.shutdown()
    srv.server_close()


def _md5(data: bytes) -> str:
    return "md5:" + hashlib.md5(data).hexdigest()


def test_fetch_resumes_an_interrupted_download_with_range(server, tmp_path):
    data = bytes(range(256)) * 4000
    server.files["a.bin"] = data
    server.cut.add("a.bin")
    dest = tmp_path / "a.bin"
    with pytest.raises(DownloadError, match="resumes"):
        fetch(server.url + "a.bin", dest, _md5(data), progress=False)
    partial = tmp_path / "a.bin.partial"
    assert not dest.exists() and 0 < partial.stat().st_size < len(data)   # never half a file in place
    fetch(server.url + "a.bin", dest, _md5(data), progress=False)
    assert dest.read_bytes() == data and not partial.exists()
    assert server.requests[-1] == ("a.bin", f"bytes={len(data) // 2}-")   # resumed where it stopped


@pytest.mark.parametrize("damage", ["byte", "truncated"])
def test_fetch_refuses_a_file_that_differs_from_its_digest(server, tmp_path, damage):
    data = b"fabricated archive " * 1000
    bad = bytearray(data)
    if damage == "byte":
        bad[100] ^= 0xFF
    else:
        bad = bad[:-10]
    server.files["x.tar.gz"] = bytes(bad)
    want = _md5(data)
    with pytest.raises(DownloadError) as err:
        fetch(server.url + "x.tar.gz", tmp_path / "x.tar.gz", want, progress=False)
    assert want in str(err.value) and _md5(bytes(bad)) in str(err.value)   # both digests named
    assert not (tmp_path / "x.tar.gz").exists() and not (tmp_path / "x.tar.gz.partial").exists()
    with pytest.warns(UserWarning, match="differs"):
        fetch(server.url + "x.tar.gz", tmp_path / "x.tar.gz", want, progress=False, allow_unverified=True)
    assert (tmp_path / "x.tar.gz").read_bytes() == bytes(bad)


def test_fetch_validates_its_address(tmp_path):
    with pytest.raises(ValueError, match="url must be an http"):
        fetch("ftp://x/y", tmp_path / "y")


def _pack(src: Path, name: str, unpacks: str) -> bytes:
    """The bytes of archive ``name`` holding ``src`` as its folder ``unpacks`` ("." : src's entries at the top)."""
    out = src.parent / f".{name}"
    if name.endswith(".zip"):
        with zipfile.ZipFile(out, "w") as zf:
            for p in sorted(src.rglob("*")):
                rel = p.relative_to(src) if unpacks == "." else Path(unpacks) / p.relative_to(src)
                zf.write(p, str(rel))
    else:
        mode = "w:gz" if name.endswith((".tar.gz", ".tgz")) else "w"
        with tarfile.open(out, mode) as tf:
            tf.add(src, arcname=unpacks)
    data = out.read_bytes()
    out.unlink()
    return data


#: every dataset clkit downloads itself, the sizes of its fabricated copy
_FABRICATE = {"mnist": {}, "fashion_mnist": {}, "svhn": {}, "cifar10": {}, "cifar100": {"classes": 3},
              "omniglot": {}, "tinyimagenet": {}, "imagenet_r": {"classes": 3}, "cub200": {"classes": 3},
              "corafull": {"num_nodes": 700, "num_classes": 70}, "roman_empire": {"num_nodes": 200},
              "reddit": {"num_nodes": 410}}


def test_every_dataset_clkit_downloads_is_in_this_test():
    downloadable = {n for n in catalog.DATASETS if catalog.dataset_entry(n).get == "clkit"}
    assert downloadable == set(_FABRICATE)


def _read(name: str, entry):
    if name in ("corafull", "roman_empire", "reddit"):
        from clkit.data.graphs import load_online_graph

        return load_online_graph(name, root=entry.options["root"]).num_nodes
    from clkit.data.images import load_image_dataset

    ds = load_image_dataset(name)
    return len(ds.y_train) + len(ds.y_test)


@pytest.mark.parametrize("name", sorted(_FABRICATE))
def test_data_get_fetches_verifies_unpacks_and_the_loader_reads(name, server, tmp_path, monkeypatch):
    from clkit.data.fixtures import write

    src_root, dst_root = tmp_path / "publisher", tmp_path / "cache"
    write(name, src_root, **_FABRICATE[name])
    monkeypatch.setenv("CLKIT_DATA", str(dst_root))
    entry = catalog.dataset_entry(name)
    rel = Path(entry.dest).relative_to(dst_root)
    arts = []
    for art in entry.artifacts:   # the archive the publisher serves, built from the fabricated layout
        if art.unpacks:
            src = src_root / rel / ("" if art.unpacks == "." else art.unpacks)
            data = _pack(src, art.name, art.unpacks)
        else:
            found = sorted(src_root.rglob(art.name))   # the fixture's own folder (Fashion-MNIST: fashion-mnist/)
            if found:
                data = found[0].read_bytes()
            else:   # MNIST's fabricated files are uncompressed; the publisher serves them gzipped
                data = gzip.compress(sorted(src_root.rglob(art.name[:-3]))[0].read_bytes(), mtime=0)
        server.files[art.name] = data
        arts.append(dataclasses.replace(art, url=server.url + art.name, digest=_md5(data)))
    digests = {a.name: a.digest for a in arts}
    locs = tuple(dataclasses.replace(loc, digests={k: digests.get(k.split("/")[-1], v) for k, v in loc.digests.items()
                                                   if k.split("/")[-1] in digests},
                                     count=(loc.count[0], 1) if loc.count else None)
                 for loc in entry.locations if str(loc.folder).startswith(str(dst_root)))   # not system copies
    entry = dataclasses.replace(entry, artifacts=tuple(arts), locations=locs)
    said = get(entry, progress=False)
    assert said.startswith(f"{name}: fetched"), said
    assert _read(name, entry) > 0
    assert not list(dst_root.rglob("*.partial")) and not list(dst_root.rglob(".unpack-*"))
    assert get(entry, progress=False).startswith(f"{name}: already there")


def test_data_get_refuses_a_corrupted_archive_naming_both_digests(server, tmp_path, monkeypatch):
    from clkit.data.fixtures import write

    write("cifar10", tmp_path / "publisher")
    good = _pack(tmp_path / "publisher" / "cifar-10-batches-py", "cifar-10-python.tar.gz", "cifar-10-batches-py")
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0x01   # one byte changed
    server.files["cifar-10-python.tar.gz"] = bytes(bad)
    monkeypatch.setenv("CLKIT_DATA", str(tmp_path / "cache"))
    entry = catalog.dataset_entry("cifar10")
    art = dataclasses.replace(entry.artifacts[0], url=server.url + "cifar-10-python.tar.gz", digest=_md5(good))
    entry = dataclasses.replace(entry, artifacts=(art,))
    with pytest.raises(DownloadError) as err:
        get(entry, progress=False)
    assert _md5(good) in str(err.value) and _md5(bytes(bad)) in str(err.value)
    assert not (tmp_path / "cache" / "cifar-10-batches-py").exists()   # nothing unpacked, nothing half-written


def test_unpack_refuses_members_outside_the_folder(tmp_path):
    from clkit.data.download import unpack

    z = tmp_path / "evil.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("../outside.txt", "x")
    with pytest.raises(DownloadError, match="leaves the folder"):
        unpack(z, tmp_path / "dest", ".")
    assert not (tmp_path / "outside.txt").exists()
    shutil.rmtree(tmp_path / "dest", ignore_errors=True)
