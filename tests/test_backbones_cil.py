"""Backbones of the class-incremental methods EDGE compares: PyCIL's CIFAR ResNet-32 and a timm ViT.

``resnet32`` must be the network the architecture description gives (He et al. 2016, as PyCIL
builds it): its parameter count is computed here from that description, not from the code.
``vit_backbone`` must load a local weights file exactly, refuse a missing or unfitting one with
the file named, say when it is randomly initialised, and plug into the prototype strategies.
"""

import numpy as np
import pytest
import torch
from torch import nn

from clkit._seed import torch_seeded
from clkit.models.cnn import BACKBONES, CifarResNet, make_backbone, resnet32
from clkit.models.vit import RANDOM_INIT, TINY_CONFIG, ViTBackbone, vit_backbone
from clkit.strategies import Task, make_strategy

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _count(module):
    return sum(p.numel() for p in module.parameters())


# ------------------------------------------------------------------------------------------ ResNet-32

def _resnet32_count_by_hand(in_channels, num_classes):
    """3x3 convolutions without bias, each followed by batch norm (2 parameters per channel);
    three stages of 5 basic blocks (two 3x3 convolutions each) at 16, 32, 64 channels; the
    option-A shortcuts have no parameters; a 64 -> K linear head with bias."""
    conv = lambda cin, cout: 9 * cin * cout + 2 * cout  # noqa: E731 -- conv + its batch norm
    total = conv(in_channels, 16)
    c = 16
    for w in (16, 32, 64):
        for _ in range(5):
            total += conv(c, w) + conv(w, w)
            c = w
    return total + 64 * num_classes + num_classes


def test_resnet32_parameter_count_is_the_architectures():
    # the literal: 464 (stem) + 5 * 4,672 + (13,952 + 4 * 18,560) + (55,552 + 4 * 73,984) + 650 (head)
    assert _resnet32_count_by_hand(3, 10) == 464 + 5 * 4672 + 13952 + 4 * 18560 + 55552 + 4 * 73984 + 650 == 464154
    for channels, classes in ((3, 10), (3, 100), (1, 10)):
        assert _count(resnet32(channels, classes)) == _resnet32_count_by_hand(channels, classes)
    assert _count(resnet32(3, 10).features) == 463504          # ~0.46 M, PyCIL's resnet32


def test_resnet32_shapes_batch_norm_and_strides():
    with torch_seeded(0):
        net = make_backbone("resnet32", 3, 10, 32)
    assert "resnet32" in BACKBONES and isinstance(net, CifarResNet)
    assert isinstance(net.features, nn.Sequential) and isinstance(net.head, nn.Linear)
    assert not any(isinstance(m, nn.Linear) for m in net.features)
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 31 and all(c.kernel_size == (3, 3) and c.bias is None for c in convs)   # no 1x1 shortcut
    assert sum(isinstance(m, nn.BatchNorm2d) for m in net.modules()) == 31
    assert [c.stride for c in convs].count((2, 2)) == 2
    stages = [m for m in net.features if isinstance(m, nn.Sequential)]
    assert len(stages) == 3 and all(len(s) == 5 for s in stages)
    seen = []
    hooks = [s.register_forward_hook(lambda m, i, o: seen.append(tuple(o.shape[1:]))) for s in stages]
    net.eval()
    with torch.no_grad():
        z = net.features(torch.zeros(2, 3, 32, 32))
        out = net(torch.zeros(2, 3, 32, 32))
    for h in hooks:
        h.remove()
    assert seen[:3] == [(16, 32, 32), (32, 16, 16), (64, 8, 8)]
    assert z.shape == (2, 64) and out.shape == (2, 10)
    assert make_backbone("resnet32", 1, 5, 28)(torch.zeros(1, 1, 28, 28)).shape == (1, 5)


def test_resnet32_shortcut_is_subsample_and_zero_pad():
    """A stride-2 block's shortcut: every second pixel, channels padded with zeros (option A)."""
    block = resnet32().features[4][0]
    x = torch.randn(2, 16, 8, 8, generator=torch.Generator().manual_seed(0))
    s = block.skip(x)
    assert s.shape == (2, 32, 4, 4)
    assert torch.equal(s[:, :16], x[:, :, ::2, ::2]) and s[:, 16:].eq(0).all()
    assert sum(p.numel() for p in block.skip.parameters()) == 0


def test_resnet32_is_seeded_and_trains_a_batch_of_one():
    with torch_seeded(3):
        a = resnet32(3, 4)
    with torch_seeded(3):
        b = resnet32(3, 4)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    with torch_seeded(0):
        s = make_strategy("naive", make_backbone("resnet32", 3, 2, 8), epochs=1, batch_size=2, seed=0)
    s.train_task(Task(torch.rand(3, 3, 8, 8), torch.tensor([0, 1, 0]), task_id=0, classes=(0, 1)))
    assert s.predict(torch.rand(2, 3, 8, 8)).shape == (2, 2)


# ------------------------------------------------------------------------------------------ ViT

def _images(n=4, seed=0, size=32, channels=3):
    return torch.rand(n, channels, size, size, generator=torch.Generator().manual_seed(seed))


def _outputs(net, x):
    net.eval()
    with torch.no_grad():
        return net.features(x), net(x)


def test_tiny_vit_shapes_and_layout():
    net = vit_backbone(num_classes=7, tiny=True, seed=0)
    assert isinstance(net, ViTBackbone) and isinstance(net.head, nn.Linear)
    assert net.head.in_features == TINY_CONFIG["embed_dim"] and net.head.out_features == 7
    z, out = _outputs(net, _images())
    assert z.shape == (4, 32) and out.shape == (4, 7)
    assert net.weights_source == RANDOM_INIT and "random" in repr(net)
    one = vit_backbone(num_classes=2, tiny=True, in_channels=1, seed=0)
    assert _outputs(one, _images(channels=1))[1].shape == (4, 2)


def test_tiny_vit_is_deterministic_under_a_seed_and_leaves_the_global_generator_alone():
    state = torch.get_rng_state()
    a, b = vit_backbone(num_classes=3, tiny=True, seed=0), vit_backbone(num_classes=3, tiny=True, seed=0)
    assert torch.equal(torch.get_rng_state(), state)
    c = vit_backbone(num_classes=3, tiny=True, seed=1)
    with torch_seeded(0):
        d = vit_backbone(num_classes=3, tiny=True)      # seed=None draws from the (seeded) global generator
    x = _images()
    for other in (b, d):
        assert all(torch.equal(p, q) for p, q in zip(a.parameters(), other.parameters()))
        assert torch.equal(_outputs(a, x)[1], _outputs(other, x)[1])
    assert not torch.equal(_outputs(a, x)[0], _outputs(c, x)[0])


@pytest.mark.parametrize("fmt", ["pth", "nested_pth", "safetensors"])
def test_loading_a_saved_state_dict_gives_identical_outputs(tmp_path, fmt):
    import timm

    # a timm ViT with its own (1000-class) classifier, as timm saves one: the classifier is ignored
    with torch_seeded(5):
        src = timm.create_model("vit_base_patch16_224", pretrained=False, **TINY_CONFIG)
    state = src.state_dict()
    assert state["head.weight"].shape == (1000, 32)
    path = tmp_path / f"w.{'safetensors' if fmt == 'safetensors' else 'pth'}"
    if fmt == "safetensors":
        from safetensors.torch import save_file

        save_file(state, str(path))
    else:
        torch.save({"model": state} if fmt == "nested_pth" else state, path)
    net = vit_backbone(pretrained_path=path, num_classes=4, tiny=True, seed=0)
    assert net.weights_source == str(path)
    x = _images()
    src.eval()
    with torch.no_grad():
        want = src.forward_head(src.forward_features(x), pre_logits=True)
    assert torch.equal(_outputs(net, x)[0], want)
    assert not torch.equal(_outputs(vit_backbone(num_classes=4, tiny=True, seed=0), x)[0], want)
    # the head is new (seeded), the same whether or not a file was loaded
    assert torch.equal(net.head.weight, vit_backbone(num_classes=4, tiny=True, seed=0).head.weight)


def test_missing_or_unfitting_file_raises_naming_it(tmp_path):
    missing = tmp_path / "nothing.safetensors"
    with pytest.raises(FileNotFoundError, match="nothing.safetensors") as err:
        vit_backbone(pretrained_path=missing, tiny=True)
    assert str(missing) in str(err.value) and "pretrained=True" in str(err.value)

    state = vit_backbone(tiny=True, seed=0).features.state_dict()
    lacking = tmp_path / "lacking.pth"
    torch.save({k: v for k, v in state.items() if k != "blocks.1.mlp.fc2.weight"}, lacking)
    with pytest.raises(ValueError, match=r"missing keys \(1\): blocks.1.mlp.fc2.weight") as err:
        vit_backbone(pretrained_path=lacking, tiny=True)
    assert str(lacking) in str(err.value)

    extra = tmp_path / "extra.pth"
    torch.save({**state, "blocks.2.norm1.weight": torch.ones(32)}, extra)
    with pytest.raises(ValueError, match=r"unexpected keys \(1\): blocks.2.norm1.weight"):
        vit_backbone(pretrained_path=extra, tiny=True)

    wide = tmp_path / "wide.pth"
    torch.save(vit_backbone(tiny=True, seed=0).features.state_dict(), wide)
    with pytest.raises(ValueError, match=r"wide.pth.*shape mismatches"):
        vit_backbone(pretrained_path=wide)                       # tiny weights, full-size ViT-B/16

    junk = tmp_path / "junk.pth"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match=r"cannot read .*junk.pth"):
        vit_backbone(pretrained_path=junk, tiny=True)


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="name must be a timm vision transformer.*'resnet50'"):
        vit_backbone("resnet50", tiny=True)
    with pytest.raises(ValueError, match="num_classes must be an integer >= 1, got 0"):
        vit_backbone(num_classes=0, tiny=True)
    with pytest.raises(ValueError, match="tiny must be True or False"):
        vit_backbone(tiny="yes")


def test_simplecil_on_the_tiny_vit_trains_a_task_and_predicts():
    model = vit_backbone(num_classes=3, tiny=True, seed=0)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    g = torch.Generator().manual_seed(0)
    y = torch.arange(3).repeat_interleave(6)
    # three visibly different kinds of image: dark, bright, striped
    base = torch.stack([torch.zeros(3, 32, 32), torch.ones(3, 32, 32),
                        (torch.arange(32) % 2).float().expand(3, 32, 32)])
    x = base[y] + 0.05 * torch.rand(len(y), 3, 32, 32, generator=g)
    s = make_strategy("simplecil", model, batch_size=5)
    s.train_task(Task(x, y, task_id=0))
    model.eval()
    with torch.no_grad():
        feats = model.features(x).double().numpy()
    means = np.stack([feats[y.numpy() == c].mean(0) for c in range(3)])
    np.testing.assert_allclose(s.prototypes.numpy(), means, rtol=1e-6, atol=1e-7)
    out = s.predict(x)
    assert out.shape == (18, 3) and out.argmax(1).tolist() == y.tolist()
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())   # frozen
