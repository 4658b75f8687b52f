"""The curriculum paper's batch-normalised backbones: torchvision's EfficientNet-B1 and ResNet-34.

``make_backbone("efficientnet_b1" | "resnet34_bn", ...)`` must be torchvision's network (the same
parameters, batch normalisation kept), adapted to the input channels, with the ``features``/``head``
layout the strategies rely on, and train deterministically through a strategy and the streams.
"""

import numpy as np
import pytest
import torch
from torch import nn

from clkit._seed import torch_seeded
from clkit.models.cnn import BACKBONES, MIN_IMAGE_SIZE, make_backbone
from clkit.strategies import Task, make_strategy

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PAPER = ("efficientnet_b1", "resnet34_bn")


def _torchvision(name, num_classes):
    from torchvision.models import efficientnet_b1, resnet34

    return (efficientnet_b1 if name == "efficientnet_b1" else resnet34)(weights=None, num_classes=num_classes)


def _count(model):
    return sum(p.numel() for p in model.parameters())


def _first_conv(model):
    return next(m for m in model.modules() if isinstance(m, nn.Conv2d))


def _task(channels=3, size=64, n=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return Task(torch.rand(n, channels, size, size, generator=g), torch.arange(n) % 2, task_id=0,
                classes=(0, 1))


def _state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_names_are_listed_and_old_names_still_build():
    assert set(PAPER) <= set(BACKBONES)
    assert {"small_cnn", "wide_vgg9", "resnet18", "resnet34", "mlp"} <= set(BACKBONES)
    with pytest.raises(ValueError, match=r"backbone must be one of \[.*'efficientnet_b1', 'resnet34_bn', 'resnet18_bn'\], got 'vgg'"):
        make_backbone("vgg", 3, 10, 64)
    # "resnet34" stays clkit's group-norm ResNet, not torchvision's
    assert not any(isinstance(m, nn.BatchNorm2d) for m in make_backbone("resnet34", 3, 10, 64).modules())


@pytest.mark.parametrize("name", PAPER)
@pytest.mark.parametrize("channels", [1, 3])
def test_output_shape_layout_and_batch_norm(name, channels):
    with torch_seeded(0):
        net = make_backbone(name, channels, 10, 64)
    assert isinstance(net.features, nn.Sequential) and isinstance(net.head, nn.Linear)
    assert net.head.out_features == 10
    assert not any(isinstance(m, nn.Linear) for m in net.features)   # PNN: laterals into the head only
    assert _first_conv(net).in_channels == channels
    assert sum(isinstance(m, nn.BatchNorm2d) for m in net.modules()) > 10
    net.eval()
    with torch.no_grad():
        z = net.features(torch.zeros(2, channels, 64, 64))
        out = net(torch.zeros(2, channels, 64, 64))
    assert z.shape == (2, net.head.in_features) and out.shape == (2, 10)


@pytest.mark.parametrize("name", PAPER)
def test_parameter_counts_are_torchvisions(name):
    for classes in (10, 100):
        tv = _torchvision(name, classes)
        assert _count(make_backbone(name, 3, classes, 64)) == _count(tv)
        # one input channel: torchvision's count less the first convolution's two missing input planes
        conv = _first_conv(tv)
        fewer = conv.out_channels * conv.kernel_size[0] * conv.kernel_size[1] * (conv.in_channels - 1)
        assert _count(make_backbone(name, 1, classes, 64)) == _count(tv) - fewer
    if name == "efficientnet_b1":   # the paper's 7.8M is torchvision's count with an ImageNet head
        assert round(_count(_torchvision(name, 1000)) / 1e6, 1) == 7.8


@pytest.mark.parametrize("name", PAPER)
def test_one_naive_step_changes_weights_and_is_deterministic(name):
    def run():
        with torch_seeded(0):
            model = make_backbone(name, 3, 2, 64)
            before = _state(model)
            s = make_strategy("naive", model, epochs=1, batch_size=2, lr=0.05, seed=0)
            t = _task(n=2)
            s.train_step(t.x, t.y, t)
        return before, _state(s.model), s

    before, after, s = run()
    moved = [k for k in before if before[k].is_floating_point() and not torch.equal(before[k], after[k])]
    assert any(k.endswith("weight") for k in moved)
    assert any(k.endswith("running_mean") for k in moved)      # batch norm statistics follow the batch
    _, again, _ = run()
    assert all(torch.equal(after[k], again[k]) for k in after)
    # evaluation uses the running statistics: predicting twice leaves them and the outputs unchanged
    x = _task(n=3, seed=1).x
    out = s.predict(x)
    assert not s.model.training and torch.equal(s.predict(x), out)
    assert all(torch.equal(v, after[k]) for k, v in _state(s.model).items())


def test_task_with_a_last_batch_of_one_row_trains():
    """Five rows in batches of two: the last batch has one row, still valid at MIN_IMAGE_SIZE."""
    size = MIN_IMAGE_SIZE["resnet34_bn"]
    with torch_seeded(0):
        s = make_strategy("naive", make_backbone("resnet34_bn", 1, 2, size), epochs=1, batch_size=2, seed=0)
    s.train_task(Task(torch.rand(5, 1, size, size), torch.tensor([0, 1, 0, 1, 0]), task_id=0, classes=(0, 1)))
    assert 0.0 <= s.evaluate(_task(1, size, n=2)) <= 1.0


@pytest.mark.parametrize("name", PAPER)
def test_channels_last(name):
    with torch_seeded(0):
        plain = make_backbone(name, 3, 2, 64)
    with torch_seeded(0):
        nhwc = make_backbone(name, 3, 2, 64, memory_format="channels_last")
    assert all(p.is_contiguous(memory_format=torch.channels_last) for p in nhwc.parameters() if p.dim() == 4)
    x = _task(n=2).x
    plain.eval(), nhwc.eval()
    with torch.no_grad():
        assert torch.allclose(plain(x), nhwc(x), atol=1e-4)
    s = make_strategy("naive", nhwc, epochs=1, batch_size=2, seed=0)
    assert torch.isfinite(s.train_step(x, torch.tensor([0, 1])))


def test_notebook_parameters_accept_the_new_backbones():
    from clkit.curriculum.params import check_params

    kw = dict(datasets=["digits"], scenario="class", strategies=["naive"], epochs=1, difficulty_epochs=1,
              memory_size=10, per_class_train=5, per_class_test=5, channels=3, lr=0.01, momentum=0.9,
              batch_size=8, seed=0)
    for name in PAPER:
        check_params(backbone=name, image_size=64, memory_format="channels_last", **kw)
        with pytest.raises(ValueError, match="image_size must be >= 33"):
            check_params(backbone=name, image_size=32, **kw)
    check_params(backbone="resnet34", image_size=8, **kw)   # the group-norm ResNet has no such bound


def test_one_epoch_stream_with_resnet34_bn():
    import clkit.curriculum as cur
    from clkit.data.images import ImageDataset

    def fake(name, seed):
        rng = np.random.default_rng(seed)
        y = np.repeat(np.arange(10), 2)
        x = np.clip((y * 25)[:, None, None] + rng.integers(-5, 5, (len(y), 6, 6)), 0, 255).astype(np.uint8)
        return ImageDataset(name, x, y, x.copy(), y.copy(), tuple(map(str, range(10))), "synthetic test data")

    b = cur.build_benchmark([fake("a", 0), fake("b", 1)], per_class_train=1, per_class_test=1, image_size=40,
                            channels=1)
    kw = dict(scenario="class", backbone="resnet34_bn", epochs=1, lr=0.01, batch_size=4, seed=0)
    R = cur.run_stream(b, ["a", "b"], "naive", **kw)
    assert R.shape == (2, 2) and not np.isnan(R).any()
    assert np.array_equal(R, cur.run_stream(b, ["a", "b"], "naive", **kw))


# ------------------------------------------------------------------ the authors' Wide-VGG9

def test_the_authors_wide_vgg9_is_their_vggslim_with_batch_norm():
    """wide_vgg9_bn: the M2I authors' VGGSlim('wide_VGG9', batch_norm=True): counts from the
    architecture description (conv 4,500,864 as their config's comment says; BN 2 x channels;
    the classifier on 512 x 4 x 4 = 8192 flattened inputs at 64x64)."""
    convs = [(3, 64), (64, 128), (128, 256), (256, 256), (256, 512), (512, 512)]
    conv = sum(ci * co * 9 + co for ci, co in convs)
    assert conv == 4_500_864
    bn = sum(2 * co for _, co in convs)
    for size, classes in ((64, 10), (32, 60)):
        flat = 512 * (size // 16) ** 2
        mlp = flat * 512 + 512 + 512 * 512 + 512 + 512 * classes + classes
        net = make_backbone("wide_vgg9_bn", 3, classes, size)
        assert _count(net) == conv + bn + mlp
        assert net(torch.zeros(2, 3, size, size)).shape == (2, classes)
    assert sum(isinstance(m, nn.BatchNorm2d) for m in net.modules()) == 6
    assert isinstance(net.head, nn.Linear) and net.head.in_features == 512
    with pytest.raises(ValueError, match="image_size"):
        make_backbone("wide_vgg9_bn", 3, 10, 8)


def test_cwr_on_the_authors_wide_vgg9_keeps_its_frozen_statistics():
    """CWR* freezes everything but the head after the first task: with batch norm in the
    representation, its running statistics must not move either."""
    g = torch.Generator().manual_seed(0)
    tasks = [Task(torch.rand(12, 3, 16, 16, generator=g), torch.tensor([2 * t, 2 * t + 1] * 6), task_id=t)
             for t in range(2)]
    with torch_seeded(0):
        s = make_strategy("cwr", make_backbone("wide_vgg9_bn", 3, 4, 16), epochs=1, batch_size=6, lr=0.01)
    s.train_task(tasks[0])
    before = {k: v.clone() for k, v in s.model.features.state_dict().items()}
    s.train_task(tasks[1])
    after = s.model.features.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
