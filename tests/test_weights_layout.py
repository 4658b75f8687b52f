"""Fabricated weights in each library's real layout and naming, found by the preflight and loaded by the code
that loads the real ones (issue 51): timm's ``model.safetensors`` and open_clip's
``open_clip_model.safetensors`` in a Hugging Face cache (``models--<org>--<name>/refs/main`` and
``snapshots/<revision>/``), torchvision's ``densenet121-a639ec97.pth`` in ``$TORCH_HOME/hub/checkpoints``.

The fast tests use the tiny fabricated checkpoints; the full-size ones (ViT-B/16 and CLIP ViT-B/16 at
their real shapes, loaded by ``timm.create_model(..., pretrained=True)`` and
``open_clip.create_model_and_transforms(..., pretrained="openai")`` offline) run with the rehearsals."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from clkit.data import catalog
from clkit.data.preflight import check, check_entry

REV = "0123456789abcdef0123456789abcdef01234567"


def _hub_file(hub: Path, repo: str, name: str, src: Path) -> Path:
    """Place ``src`` as ``name`` of Hugging Face repo ``repo`` in the cache ``hub``, as huggingface_hub lays it out."""
    base = hub / f"models--{repo.replace('/', '--')}"
    (base / "refs").mkdir(parents=True, exist_ok=True)
    (base / "refs" / "main").write_text(REV)
    dest = base / "snapshots" / REV / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


def test_timm_safetensors_in_the_hub_cache_is_found_and_must_be_passed(tmp_path, monkeypatch):
    from clkit.data.fixtures.vit import write_vit

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    model = "vit_base_patch16_224.augreg_in21k_ft_in1k"
    entry = catalog.vit_entry(model)
    assert check_entry(entry).status == "missing"
    placed = _hub_file(tmp_path / "hub", f"timm/{model}", "model.safetensors", write_vit(tmp_path, seed=3))
    got = check_entry(entry)   # in the cache, but the notebook reads the file it is given
    assert got.status == "missing" and got.fix == f"pass -p vit_weights {placed}"
    got = check_entry(catalog.vit_entry(model, str(placed)), open=True)
    assert got.status == "unverified" and "the file given as vit_weights" in got.detail
    assert "opened: a tiny ViT" in got.detail   # vit_backbone read every parameter from it


def test_open_clip_safetensors_in_the_hub_cache_is_what_open_clip_would_read(tmp_path, monkeypatch):
    from clkit.data.fixtures.clip import write_clip
    from clkit.edge.protocol import _clip_cached

    hub = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(hub))
    entry = catalog.clip_entry("ViT-B-16", "openai")
    assert check_entry(entry).status == "missing"
    folder = write_clip(tmp_path, seed=0)
    placed = _hub_file(hub, "timm/vit_base_patch16_clip_224.openai", "open_clip_model.safetensors",
                       folder / "open_clip_model.safetensors")
    assert _clip_cached("ViT-B-16", "openai") == str(placed)   # notebook 02's own lookup finds the same file
    got = check_entry(entry, open=True)
    assert got.where == str(hub / "models--timm--vit_base_patch16_clip_224.openai" / "snapshots")
    assert got.status == "unverified" and "text encoder present" in got.detail
    local = check_entry(catalog.clip_entry(f"local-dir:{folder}", "local-dir"), open=True)
    assert local.status == "unverified" and "text encoder present" in local.detail


def test_torchvision_densenet_file_is_checked_against_its_published_prefix(tmp_path, monkeypatch):
    from clkit.data.fixtures.densenet import write_densenet121_checkpoint

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv("CLKIT_DATA", str(tmp_path / "cache"))
    path = write_densenet121_checkpoint(tmp_path / "torch" / "hub" / "checkpoints")
    assert path.name == "densenet121-a639ec97.pth"
    got = check_entry(catalog.densenet_entry(str(path)), open=True)
    # a fabricated file under the published name is not the published file: refused, both digests named
    assert got.status == "wrong" and "sha256-prefix:a639ec97" in got.detail and "sha256:" in got.detail
    got = check_entry(catalog.densenet_entry(str(path)), verify=False, open=True)
    assert got.status == "unverified" and "DenseNet-121 tensors" in got.detail   # load_densenet121_state read it
    resaved = write_densenet121_checkpoint(tmp_path / "w", old_keys=False, name="my_densenet.pth")
    got = check_entry(catalog.densenet_entry(str(resaved)), open=True)
    assert got.status == "unverified" and "keys and shapes" in got.detail   # another name: no digest applies
    report = check("03", {"dataset": "yearbook", "backbone": "densenet121", "pretrained_required": True,
                          "backbone_weights": ""}, set_name="paper")
    dn = next(f for f in report.findings if f.entry.name == "densenet121")
    assert dn.status == "missing" and "backbone_weights is empty" in dn.detail   # in torchvision's cache, not passed


@pytest.mark.paper_rehearsal
def test_full_size_vit_loads_through_timm_from_the_hub_cache_offline(tmp_path, monkeypatch):
    import timm
    from safetensors.torch import save_file

    model = "vit_base_patch16_224.augreg_in21k_ft_in1k"
    torch.manual_seed(0)
    net = timm.create_model(model, pretrained=False)
    src = tmp_path / "model.safetensors"
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, str(src))
    hub = tmp_path / "hub"
    placed = _hub_file(hub, f"timm/{model}", "model.safetensors", src)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(hub))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    loaded = timm.create_model(model, pretrained=True)   # timm's own path to the real weights
    assert torch.equal(loaded.state_dict()["blocks.0.attn.qkv.weight"], net.state_dict()["blocks.0.attn.qkv.weight"])
    got = check_entry(catalog.vit_entry(model, str(placed)), open=True)
    assert got.status == "unverified" and "every ViT parameter loaded" in got.detail


@pytest.mark.paper_rehearsal
def test_full_size_clip_loads_through_open_clip_from_the_hub_cache_offline(tmp_path, monkeypatch):
    import open_clip
    from safetensors.torch import save_file

    torch.manual_seed(0)
    net = open_clip.create_model("ViT-B-16", pretrained=None)
    src = tmp_path / "open_clip_model.safetensors"
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, str(src))
    hub = tmp_path / "hub"
    _hub_file(hub, "timm/vit_base_patch16_clip_224.openai", "open_clip_model.safetensors", src)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(hub))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    loaded, _, _ = open_clip.create_model_and_transforms("ViT-B-16", pretrained="openai")
    key = "token_embedding.weight"
    assert torch.equal(loaded.state_dict()[key], net.state_dict()[key])
    assert check_entry(catalog.clip_entry("ViT-B-16", "openai"), open=True).status == "unverified"
