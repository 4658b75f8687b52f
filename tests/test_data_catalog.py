"""The data catalog (issue 51): every paper set's files listed with a full address, each digest the one
its publisher or library documents (compared with the installed libraries' own source), none made up."""

from __future__ import annotations

import re

import pytest

from clkit.data import catalog
from clkit.data.catalog import UNVERIFIABLE, required_files
from clkit.notebooks import list_notebooks, load_params, param_sets

_SETS = [(nb, s) for nb in list_notebooks() for s in param_sets(nb)]
_PAPER = [(nb, s) for nb, s in _SETS if s.startswith("paper") or s in ("imagenet_r", "fashion6")]
_DIGEST = re.compile(r"^(md5:[0-9a-f]{32}|sha256:[0-9a-f]{64}|blake2b:[0-9a-f]{128}|sha256-prefix:[0-9a-f]{8,})$")


@pytest.mark.parametrize("nb,s", _PAPER)
def test_every_paper_set_lists_its_files_with_address_and_digest_source(nb, s):
    entries = required_files(nb, load_params(nb, s))
    assert entries, f"{nb} {s} opens downloadable files, the catalog lists none"
    for e in entries:
        assert e.locations and e.fix
        for a in e.artifacts:
            assert a.url.startswith(("http://", "https://")), a
            # the archive's own address, not a host (Google Drive's addresses carry the file's id)
            assert a.name in a.url or "drive.google.com/u/0/uc?id=" in a.url, a
            if a.digest:
                assert _DIGEST.match(a.digest), a.digest
                assert UNVERIFIABLE not in a.source and a.source
            else:
                assert a.source.startswith(UNVERIFIABLE), a


def test_torchvision_digests_are_torchvisions():
    from torchvision.datasets import (
        CIFAR10,
        CIFAR100,
        MNIST,
        SVHN,
        FashionMNIST,
        Omniglot,
    )

    assert catalog.dataset_entry("cifar10").artifacts[0].digest == f"md5:{CIFAR10.tgz_md5}"
    assert catalog.dataset_entry("cifar100").artifacts[0].digest == f"md5:{CIFAR100.tgz_md5}"
    c100 = catalog.dataset_entry("cifar100").locations[0].digests
    assert {k: v[4:] for k, v in c100.items()} == dict(CIFAR100.train_list + CIFAR100.test_list
                                                       + [[CIFAR100.meta["filename"], CIFAR100.meta["md5"]]])
    assert [a.digest[4:] for a in catalog.dataset_entry("mnist").artifacts] == [m for _, m in MNIST.resources]
    assert [a.digest[4:] for a in catalog.dataset_entry("fashion_mnist").artifacts] == \
        [m for _, m in FashionMNIST.resources]
    assert [a.digest[4:] for a in catalog.dataset_entry("svhn").artifacts] == \
        [SVHN.split_list[k][2] for k in ("train", "test")]
    assert catalog.dataset_entry("omniglot").artifacts[0].digest[4:] == Omniglot.zips_md5["images_background"]
    assert catalog.dataset_entry("cifar100").artifacts[0].url == CIFAR100.url


def test_wild_time_cesnet_clip_and_densenet_digests_are_the_libraries():
    import open_clip
    import wild_time_data.datasets as wtd
    from cesnet_tszoo.datasets.databases.cesnet_timeseries24.constants import CHECKSUMS
    from torchvision.models import DenseNet121_Weights

    assert catalog.dataset_entry("fmow").artifacts[0].digest == f"blake2b:{wtd.FMoW.checksum}"
    assert catalog.dataset_entry("yearbook").artifacts[0].digest == f"blake2b:{wtd.Yearbook.checksum}"
    assert catalog.dataset_entry("cesnet").artifacts[0].digest == \
        f"sha256:{CHECKSUMS['CESNET-TimeSeries24-ip_addresses_full-minutes']}"
    url = DenseNet121_Weights.IMAGENET1K_V1.url
    dn = catalog.densenet_entry().artifacts[0]
    assert dn.url == url and dn.digest == "sha256-prefix:" + url.rsplit("-", 1)[1].split(".")[0]
    clip = catalog.clip_entry("ViT-B-16", "openai")
    openai = [a for a in clip.artifacts if "openaipublic" in a.url][0]
    assert openai.url == open_clip.get_pretrained_url("ViT-B-16", "openai")
    assert openai.digest == "sha256:" + openai.url.split("/")[-2]
    hf = [a for a in clip.artifacts if "huggingface" in a.url][0]
    assert hf.digest == "" and hf.source.startswith(UNVERIFIABLE)   # none published: said, not made up


def test_entries_follow_the_parameters():
    names = lambda nb, **v: [e.name for e in required_files(nb, v)]
    assert names("01", dataset="synthetic") == [] and names("01", dataset="cesnet") == ["cesnet"]
    assert names("03", dataset="fmow", backbone="densenet121", pretrained_required=True) == ["fmow", "densenet121"]
    assert names("03", dataset="yearbook", backbone="yearbook_cnn") == ["yearbook"]
    assert names("02", dataset="cifar100", bounds_datasets=["cub200", "cifar100"], encoder="glove",
                 require_pretrained=False) == ["cifar100", "cub200"]
    v = names("02", dataset="cifar100", encoder="clip", require_pretrained=True, encoder_sizes=["RN50", "ViT-B-16"])
    assert v == ["cifar100", "vit:vit_base_patch16_224.augreg_in21k",   # the notebook's default vit_model
                 "clip:ViT-B-16/openai", "clip:RN50/openai"]
    root = "/somewhere/graphs"
    (e,) = required_files("05", {"dataset": "ogbn_arxiv", "data_dir": root})
    assert str(e.locations[0].folder) == f"{root}/ogbn_arxiv/raw"   # as load_online_graph(root=data_dir) looks


def test_required_files_validates():
    with pytest.raises(TypeError, match="params must be a dict"):
        required_files("05", ["dataset"])
    with pytest.raises(ValueError, match="dataset must be one of"):
        catalog.dataset_entry("nope")


_OFFLINE = [(nb, s) for nb, s in _SETS if (nb, s) not in _PAPER]


@pytest.mark.parametrize("nb,s", _OFFLINE)
def test_smoke_and_default_sets_pass_the_preflight_with_nothing_to_download(nb, s):
    from clkit.data.images import _SYSTEM_DIRS
    from clkit.data.preflight import check

    report = check(nb, load_params(nb, s), set_name=s)
    needs_fmnist = any(f.entry.name == "fashion_mnist" for f in report.findings)
    if needs_fmnist and not any(d.is_dir() for d in _SYSTEM_DIRS) and report.problems:
        pytest.skip("Fashion-MNIST is not installed here (make data installs dataset-fashion-mnist)")
    assert not report.problems, report.table()
    assert {f.entry.name for f in report.findings} <= {"fashion_mnist"}   # the only file they open off-package
