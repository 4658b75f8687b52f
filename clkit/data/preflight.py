"""Preflight: every file a run will open, found, complete and verified before anything trains.

:func:`check` takes a notebook and its parameter values, lists what the run opens
(:func:`clkit.data.catalog.required_files`) and checks each entry:

- **found** in the first of its loader's folders that holds every file (``"a|b"``: either name;
  ``*`` matches within a folder), and complete (a file count where the catalog gives one:
  ImageNet-R's 30,000 images, CUB's 11,788);
- **verified**: each file with a published digest is hashed and compared (md5, SHA-256,
  BLAKE2b or a SHA-256 prefix, as published). A verified file is remembered by its path, size
  and modification time in ``<data cache>/.clkit-verified.json``, so a second check of an
  unchanged multi-gigabyte file costs nothing;
- with ``open=True`` (``clkit data check``) **opened** through the real loader (a subset where
  the loader allows: one image per class).

The statuses: ``found``; ``unverified`` (found, ``unverifiable: no published digest`` or a copy
whose bytes legitimately differ, e.g. Debian's recompressed Fashion-MNIST); ``missing`` (naming
the first absent file and every folder looked in); ``wrong`` (a digest differs: both digests
named; or too few files; or the loader refused it). ``missing`` and ``wrong`` are problems:
``clkit run`` refuses to start (exit 2, nothing written) and ``clkit data check`` exits 2.
"""

from __future__ import annotations

import glob
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from .catalog import UNVERIFIABLE, Entry, Location, required_files

__all__ = ["PROBLEMS", "Finding", "MemoryFinding", "Report", "check", "check_entry", "file_digest", "memory_finding",
           "verify_file"]

#: the statuses that stop a run
PROBLEMS = ("missing", "wrong")

_ALGOS = {"md5": hashlib.md5, "sha256": hashlib.sha256, "sha256-prefix": hashlib.sha256, "blake2b": hashlib.blake2b}


def file_digest(path, algo: str = "sha256", chunk: int = 1 << 22) -> str:
    """The hex digest of a file (``algo`` in md5, sha256, blake2b), read in chunks.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "f"); _ = open(p, "wb").write(b"abc")
    >>> file_digest(p, "md5")
    '900150983cd24fb0d6963f7d28e17f72'
    """
    if algo not in _ALGOS:
        raise ValueError(f"algo must be one of {sorted(_ALGOS)}, got {algo!r}")
    h = _ALGOS[algo]()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def _memo_path() -> Path:
    from ._cache import data_root

    return data_root() / ".clkit-verified.json"


def _memo_key(path: Path, digest: str) -> str:
    st = path.stat()
    return f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{digest}"


def _memo_read() -> dict:
    try:
        return json.loads(_memo_path().read_text())
    except (OSError, ValueError):
        return {}


def _memo_add(key: str) -> None:
    memo = _memo_read()
    memo[key] = True
    path = _memo_path()
    try:
        from .._io import atomic_save

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_save(path, lambda tmp: Path(tmp).write_text(json.dumps(memo, indent=0)))
    except OSError:   # a read-only cache: the file is hashed again next time
        pass


def verify_file(path, digest: str, *, memo: bool = True) -> tuple[bool, str]:
    """Compare a file with a published digest ``"<algo>:<hex>"``; return ``(ok, "<algo>:<actual hex>")``.

    ``sha256-prefix:<hex>`` (torchvision's file names) passes when the SHA-256 starts with it.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "f"); _ = open(p, "wb").write(b"abc")
    >>> verify_file(p, "md5:900150983cd24fb0d6963f7d28e17f72", memo=False)
    (True, 'md5:900150983cd24fb0d6963f7d28e17f72')
    >>> verify_file(p, "sha256-prefix:ba7816bf", memo=False)[0]
    True
    """
    algo, _, want = digest.partition(":")
    if algo not in _ALGOS or not want:
        raise ValueError(f"digest must be '<algo>:<hex>' with algo in {sorted(_ALGOS)}, got {digest!r}")
    path = Path(path)
    key = _memo_key(path, digest) if memo else ""
    if memo and _memo_read().get(key):
        return True, digest
    got = file_digest(path, "sha256" if algo == "sha256-prefix" else algo)
    ok = got.startswith(want.lower()) if algo == "sha256-prefix" else got == want.lower()
    if ok and memo:
        _memo_add(key)
    return ok, f"{'sha256' if algo == 'sha256-prefix' else algo}:{got}"


@dataclass
class Finding:
    """What the check found for one entry: ``status`` (found | unverified | missing | wrong), the
    folder it was found in (or the first looked in), one line of detail and the fix."""

    entry: Entry
    status: str
    where: str
    detail: str
    fix: str = ""

    @property
    def problem(self) -> bool:
        return self.status in PROBLEMS

    def row(self) -> dict:
        return {"file": self.entry.name, "kind": self.entry.kind, "status": self.status, "where": self.where,
                "detail": self.detail, "fix": self.fix if self.problem else ""}


def _resolve(folder: Path, rel: str):
    """The existing path for ``rel`` (``a|b`` alternatives, ``*`` globs) in ``folder``, or None."""
    for alt in rel.split("|"):
        if any(ch in alt for ch in "*?["):
            hits = sorted(glob.glob(str(folder / alt)))
            if hits:
                return Path(hits[-1])
        elif (folder / alt).exists():
            return folder / alt
    return None


def _look(loc: Location):
    """``(paths, first missing)`` of a location."""
    paths = {}
    for rel in loc.files:
        p = _resolve(loc.folder, rel)
        if p is None:
            return paths, rel
        paths[rel] = p
    return paths, None


def check_entry(entry: Entry, *, verify: bool = True, open: bool = False) -> Finding:
    """Check one catalog entry: found, complete, verified (``verify``), opened (``open``).

    ``verify=False`` (a rehearsal's fabricated files, whose bytes are not the publisher's) checks
    presence and the loader only.
    """
    found = None
    for loc in entry.locations:
        paths, missing = _look(loc)
        if missing is None:
            found = (loc, paths)
            break
    looked = ", ".join(str(loc.folder) for loc in entry.locations)
    if found is None:   # name the file of the most nearly complete location (the download's, on a tie)
        def have(loc):
            return sum(_resolve(loc.folder, rel) is not None for rel in loc.files)

        loc = max(entry.locations, key=lambda loc: (have(loc), str(loc.folder) == str(entry.dest)))
        _, missing = _look(loc)
        first = str(loc.folder / missing.split("|")[0])
        return Finding(entry, "missing", str(loc.folder), f"no {first} (looked in: {looked})",
                       _fix(entry))
    loc, paths = found
    if loc.count and verify:   # a rehearsal's fabricated copy is small by design
        pattern, n = loc.count
        have = len(glob.glob(str(loc.folder / pattern)))
        if have < n:
            return Finding(entry, "wrong", str(loc.folder), f"incomplete: {have:,} files match {pattern}, the "
                           f"complete dataset has {n:,} (a partial download or extraction)", _fix(entry))
    param = entry.options.get("param")
    if param and not entry.options.get("given"):
        at = next(iter(paths.values()))
        return Finding(entry, "missing", str(loc.folder), f"{param} is empty (the file is at {at})",
                       f"pass -p {param} {at}")
    status, notes, checked = "found", [], 0
    if verify and loc.verify:
        for rel, digest in loc.digests.items():
            p = _resolve(loc.folder, rel) if "|" not in rel else None
            if p is None or not digest:
                continue   # the uncompressed alternative of a .gz file: no published digest
            ok, got = verify_file(p, digest)
            if not ok:
                return Finding(entry, "wrong", str(loc.folder),
                               f"{p} differs from its published digest: expected {digest}, got {got} "
                               f"(digest from {_source(entry, rel)})", _fix(entry, wrong=True))
            checked += 1
        if checked:
            notes.append(f"{checked} file(s) match their published digests")
    if not verify:
        status, notes = "unverified", ["digests not checked (a rehearsal's fabricated files)"]
    elif not loc.verify:
        status, notes = "unverified", [loc.note or "a copy whose bytes differ from the publisher's"]
    elif not checked:
        status, notes = "unverified", [UNVERIFIABLE + ("" if not loc.digests else
                                                      " for the uncompressed files (the digests are the .gz files')")]
        if loc.count:
            notes.append(f"complete: at least {loc.count[1]:,} files match {loc.count[0]}")
    if open and entry.opener:
        try:
            notes.append(_OPENERS[entry.opener](entry, loc, paths))
        except Exception as exc:  # noqa: BLE001 -- the loader's own refusal, reported
            return Finding(entry, "wrong", str(loc.folder), f"the loader could not read it: {type(exc).__name__}: "
                           f"{str(exc)[:300]}", _fix(entry, wrong=True))
    return Finding(entry, status, str(loc.folder), "; ".join(n for n in notes if n) or "present")


def _source(entry: Entry, rel: str) -> str:
    name = rel.split("|")[0].rsplit("/", 1)[-1]
    for a in entry.artifacts:
        if a.name == name:
            return a.source
    return entry.artifacts[0].source if entry.artifacts else "the catalog"


def _fix(entry: Entry, wrong: bool = False) -> str:
    what = entry.options.get("notebook_hint", "")
    base = entry.fix or "clkit data get"
    urls = ", ".join(f"{a.url} ({a.size})" if a.size else a.url for a in entry.artifacts)
    where = f"; it comes from {urls}" if urls else ""
    pre = "remove it and " if wrong else ""
    return f"{pre}{base}{what}{where}"


# ------------------------------------------------------------------ openers (the real loaders)


def _open_image(entry, loc, paths):
    from .images import RGB_CIL_DATASETS, load_image_dataset, tinyimagenet_wnids

    name = entry.options["dataset"]
    if name == "tinyimagenet":
        words = dict(line.split("\t", 1) for line in (loc.folder / "words.txt").read_text().splitlines() if "\t" in line)
        wnids = tinyimagenet_wnids(words, (loc.folder / "wnids.txt").read_text().split())
        return f"opened: {len(wnids)} classes named"
    if name == "fashion_mnist":
        from .images import _read_idx_split

        x, y = _read_idx_split(loc.folder, "test")
        return f"opened: {len(y):,} test images {tuple(x.shape[1:])}"
    ds = load_image_dataset(name, classes=[0], max_per_class=1) if name in RGB_CIL_DATASETS else \
        load_image_dataset(name)
    return f"opened: {ds.name}, {len(ds.y_train) + len(ds.y_test):,} images read"


def _open_wild_time(entry, loc, paths):
    import h5py

    with h5py.File(paths[next(iter(paths))], "r") as f:
        steps = list(f.keys())
    if not steps:
        raise ValueError("the file holds no time steps")
    return f"opened: {len(steps)} time steps"


def _open_cesnet(entry, loc, paths):
    p = paths[next(iter(paths))]
    if p.suffix == ".npz":
        from .timeseries import _read_cache

        d = _read_cache(p, 1)
        return f"opened: clkit cache, {d.values.shape[1]:,} steps"
    import h5py

    with h5py.File(p, "r") as f:
        return f"opened: {len(list(f.keys()))} groups"


def _open_graph(entry, loc, paths):
    from .graphs import load_online_graph

    g = load_online_graph(entry.options["dataset"], root=entry.options["root"])
    return f"opened: {g.num_nodes:,} nodes"


def _open_vit(entry, loc, paths):
    from ..models.vit import TINY_CONFIG, _read_state_dict, vit_backbone

    p = paths[next(iter(paths))]
    proj = _read_state_dict(p).get("patch_embed.proj.weight")
    if proj is not None and proj.shape[0] == TINY_CONFIG["embed_dim"]:   # a rehearsal's fabricated tiny ViT
        vit_backbone("vit_base_patch16_224", pretrained_path=p, tiny=True)
        return "opened: a tiny ViT (clkit.models.vit.TINY_CONFIG; fabricated weights, a rehearsal's)"
    vit_backbone(entry.options["model"], pretrained_path=p)
    return "opened: every ViT parameter loaded"


def _open_clip(entry, loc, paths):
    p = next(q for q in paths.values() if q.suffix in (".safetensors", ".bin", ".pt", ".pth"))
    if p.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(p), "pt") as f:
            keys = list(f.keys())
    else:
        import torch

        state = torch.load(p, map_location="cpu", weights_only=False, mmap=True)
        state = state.state_dict() if hasattr(state, "state_dict") else state
        keys = list(state)
    if not any(k.endswith("token_embedding.weight") for k in keys):
        raise ValueError(f"{p} holds no CLIP text encoder (no token_embedding.weight among {len(keys)} tensors)")
    return f"opened: {len(keys)} tensors, text encoder present"


def _open_densenet(entry, loc, paths):
    from ..models.wildtime import load_densenet121_state

    state = load_densenet121_state(paths[next(iter(paths))])
    if not any(k.startswith("features.") for k in state):
        raise ValueError("no features.* tensors: not a DenseNet-121 state dict")
    return f"opened: {len(state)} DenseNet-121 tensors"


_OPENERS = {"image": _open_image, "wild_time": _open_wild_time, "cesnet": _open_cesnet, "graph": _open_graph,
            "vit": _open_vit, "clip": _open_clip, "densenet": _open_densenet}


# ------------------------------------------------------------------ the report


@dataclass
class Report:
    """The findings of one notebook's check; :meth:`table` prints them, :attr:`problems` stops a run."""

    notebook: str
    params: str
    findings: list

    @property
    def problems(self) -> list:
        return [f for f in self.findings if f.problem]

    def table(self) -> str:
        if not self.findings:
            return (f"{self.notebook} (params={self.params}) opens no downloadable file: its data ships with clkit "
                    "or its dependencies, or is synthetic")
        rows = [f.row() for f in self.findings]
        w = max(len(r["file"]) for r in rows)
        lines = [f"{'file':{w}s}  {'status':10s}  where / detail"]
        for r in rows:
            lines.append(f"{r['file']:{w}s}  {r['status']:10s}  {r['where']}: {r['detail']}")
            if r["fix"]:
                lines.append(f"{'':{w}s}  {'':10s}  fix: {r['fix']}")
        return "\n".join(lines)

    def message(self) -> str:
        """One paragraph for a refused run: each missing or wrong file, where it was looked for, the fix."""
        parts = [f"{f.entry.title} {f.status}: {f.detail}; fix: {f.fix}" for f in self.problems]
        return (f"{self.notebook} needs files that are not ready (checked before any training): " + " | ".join(parts)
                + f". Run `clkit data check {self.notebook[:2]} --params {self.params}` for the table, "
                  f"`clkit data get {self.notebook[:2]} --params {self.params}` to fetch what can be fetched")


def check(notebook: str, params: dict | None = None, *, set_name: str = "", verify: bool = True,
          open: bool = False) -> Report:
    """Check every file ``notebook`` opens with parameter values ``params`` (:func:`required_files`).

    Returns a :class:`Report`; ``set_name`` only names the set in its messages.

    Examples
    --------
    >>> check("05_drift", {"dataset": "csbm"}).problems
    []
    """
    from ..notebooks import resolve_notebook

    notebook = resolve_notebook(notebook)
    entries = required_files(notebook, params)
    findings = [check_entry(e, verify=verify, open=open) for e in entries]
    if set_name:   # the fix as a command to paste
        for f in findings:
            f.fix = f.fix.replace("clkit data get", f"clkit data get {notebook[:2]} --params {set_name}", 1)
    return Report(notebook, set_name or "custom", findings)


@dataclass
class _MemoryEntry:
    name: str = "memory plan"
    title: str = "the memory plan at the real sizes"
    kind: str = "memory"


@dataclass
class MemoryFinding(Finding):
    """A :class:`Finding` for a set's memory plan (:mod:`clkit.memory_check`): a problem when it does not fit."""

    fits: bool = True

    @property
    def problem(self) -> bool:
        return not self.fits


def memory_finding(notebook: str, values: dict, set_name: str, *, card=None, host_gib=None,
                   plan=None) -> MemoryFinding | None:
    """The set's memory plan (:func:`clkit.memory_check.plan_for`, or ``plan`` made already) as a finding;
    ``None`` where no plan applies.

    ``card`` and ``host_gib`` default to the set's card and :data:`clkit.memory_check.DEFAULT_HOST_GIB`.

    Examples
    --------
    >>> f = memory_finding("05_drift", {"dataset": "corafull", "hidden": 256}, "paper")
    >>> f.status, f.problem, f.where
    ('fits', False, 'H100 SXM')
    >>> memory_finding("05_drift", {"dataset": "reddit", "hidden": 256}, "x", card="L4", host_gib=4).problem
    True
    """
    from ..memory_check import DEFAULT_HOST_GIB, plan_for

    c = plan if plan is not None else plan_for(notebook, values, set_name, card=card,
                                                 host_gib=DEFAULT_HOST_GIB if host_gib is None else host_gib)
    if c is None:
        return None
    try:
        c.check()
        return MemoryFinding(_MemoryEntry(), "fits", c.card, c.row()["device plan"], fits=True)
    except ValueError as exc:
        return MemoryFinding(_MemoryEntry(), "too big", c.card, str(exc), fix=c.refused_advice, fits=False)


def _run_card():
    """``(card name, host GiB)`` of a CUDA machine, or ``None`` off CUDA (the run preflight checks memory there only)."""
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        name = torch.cuda.get_device_name(0)
    except (ImportError, RuntimeError, AssertionError):
        return None
    from ..budget import host_memory_gib
    from ..cards import card_spec
    from ..memory_check import CARD_MEMORY

    spec = card_spec(name)
    return None if spec not in CARD_MEMORY else (spec, host_memory_gib())


def preflight_run(notebook: str, values: dict, set_name: str) -> Report | None:
    """The check ``clkit run`` does before it starts a notebook: ``None`` for a rehearsal (its validation
    cell writes fabricated files in a cache of its own).

    A ``paper*`` set run on a CUDA card of :data:`clkit.memory_check.CARD_MEMORY` also has its memory plan
    checked against that card and this host (:func:`memory_finding`): a plan over either is a problem,
    so the run is refused (exit 2) naming the parameter to change. Off CUDA the memory is not checked
    here (``clkit data check`` prints the plan)."""
    if values.get("rehearse") is True:
        return None
    report = check(notebook, values, set_name=set_name)
    machine = _run_card() if str(set_name).startswith("paper") else None
    if machine is not None:
        f = memory_finding(notebook, values, set_name, card=machine[0], host_gib=machine[1] or None)
        if f is not None and f.problem:
            report.findings.append(f)
    return report
