"""uint8 images converted per batch on the device (issue 52: FMoW at 224 px on an 80 GB H100).

The float path (load_wild_time scales and normalises on the host) and the uint8 path (the network's
ImageInput does it per batch) must give the same inputs and the same A(t, tau), and the memory plan
counts the uint8 images.
"""

import numpy as np
import pytest
import torch

from clkit.data.fixtures.wild_time import write_fmow
from clkit.data.temporal import load_wild_time
from clkit.temporal import experiment as te
from clkit.temporal.image_input import ImageInput, model_input, with_image_input
from clkit.temporal.memory_plan import CONVERT_BATCH, check_memory_plan, image_dtype, memory_plan


@pytest.fixture(scope="module")
def fmow_both(tmp_path_factory):
    root = tmp_path_factory.mktemp("fmow")
    write_fmow(root, per_step=3, steps=[0, 1, 2])
    kw = dict(name="fmow", image_size=224, data_dir=root / "wild-time", normalize="imagenet", max_per_period=3)
    return load_wild_time(**kw), load_wild_time(**kw, dtype="uint8")


def test_uint8_images_convert_to_the_float_paths_inputs(fmow_both):
    f, u = fmow_both
    assert u.meta["dtype"] == "uint8" and f.meta["dtype"] == "float32"
    for (xf, yf), (xu, yu) in zip(f.train + f.test, u.train + u.test):
        assert xu.dtype == np.uint8 and xf.dtype == np.float32 and xu.shape == xf.shape
        assert xu.nbytes * 4 == xf.nbytes and np.array_equal(yf, yu)
        conv = ImageInput("imagenet")(torch.from_numpy(xu)).numpy()
        np.testing.assert_allclose(conv, xf, rtol=0, atol=1e-6)
    pt = te.period_tasks(u, "cpu")
    assert pt.image_normalize == "imagenet" and pt.train[0].x.dtype == torch.uint8
    assert te.period_tasks(f, "cpu").image_normalize is None


@pytest.mark.parametrize("learner,backbone", [("finetune", "mlp"), ("ewc", "mlp"), ("agem", "mlp"),
                                              ("coral", "yearbook_cnn"), ("moco_sml", "yearbook_cnn")])
def test_accuracy_matrix_is_the_same_on_uint8_images(fmow_both, learner, backbone):
    """Same seed, same batches: A(t, tau) from uint8 periods equals the float periods' (float tolerance)."""
    f, u = fmow_both
    kw = dict(epochs=1, hidden=(4,), batch_size=4, seed=3, backward=True, backbone=backbone)
    A_f = te.accuracy_matrix(f, learner, **kw)
    A_u = te.accuracy_matrix(u, learner, **kw)
    assert A_f.shape == (3, 3) and not np.isnan(A_f).any()
    np.testing.assert_allclose(A_u, A_f, atol=1e-6)


def test_with_image_input_keeps_the_initial_weights_and_converts_once():
    from clkit.models.wildtime import make_wildtime_backbone

    torch.manual_seed(0)
    a = make_wildtime_backbone("yearbook_cnn", (3, 32, 32), 4)
    torch.manual_seed(0)
    b = with_image_input(make_wildtime_backbone("yearbook_cnn", (3, 32, 32), 4), "imagenet")
    assert [k for k in a.state_dict()] == [k.replace("features.net.", "features.") for k in b.state_dict()]
    x = torch.randint(0, 256, (2, 3, 32, 32), dtype=torch.uint8)
    xf = model_input(b, x)
    assert xf.dtype == torch.float32 and torch.equal(b(x), b(xf)) and torch.equal(b(xf), a(xf))
    with pytest.raises(ValueError, match="normalize='imagenet' needs 3-channel"):
        ImageInput("imagenet", channels=1)


def test_uint8_refuses_pooling(tmp_path):
    write_fmow(tmp_path, per_step=2, steps=[0])
    with pytest.raises(ValueError, match="dtype='uint8' keeps the images unpooled: image_size must be at least"):
        load_wild_time("fmow", image_size=32, data_dir=tmp_path / "wild-time", dtype="uint8")


def test_memory_plan_of_the_paper_set_fits_an_h100():
    """FMoW at 224 px as uint8: 141,696 x 3 x 224 x 224 bytes = 19.9 GiB + 4096 images converted at once
    (4096 x 602,112 B = 2.3 GiB) + 16 GiB DenseNet-121 allowance = 38.2 GiB: within an H100 SXM (80 GB);
    the host needs the 19.9 GiB once (a 32 GiB host holds it); a 32 GB card is refused, naming image_size."""
    h100 = 85_520_809_984                      # torch.cuda total_memory of an H100 80GB HBM3 (SXM)
    assert image_dtype("fmow", 224) == "uint8" and image_dtype("fmow", 32) == "float32"
    p = memory_plan("fmow", image_size=224, backbone="densenet121", device_bytes=h100, host_bytes=32 * 2**30,
                    device_name="NVIDIA H100 80GB HBM3")
    assert p["images_bytes"] == 141_696 * 3 * 224 * 224
    assert p["convert_bytes"] == CONVERT_BATCH * 3 * 224 * 224 * 4
    assert p["device_need_bytes"] == p["images_bytes"] + p["convert_bytes"] + 16 * 2**30
    assert round(p["device_need_bytes"] / 2**30, 1) == 38.2 and p["fits_device"] and p["fits_host"]
    check_memory_plan(p)
    small = memory_plan("fmow", image_size=224, backbone="densenet121", device_bytes=32 * 10**9)
    with pytest.raises(ValueError, match=r"image_size 224 does not fit the device.*uint8.*max_per_period"):
        check_memory_plan(small)
    f32 = memory_plan("fmow", image_size=32, backbone="densenet121")
    assert f32["dtype"] == "float32" and f32["convert_bytes"] == 0 and f32["images_bytes"] == 141_696 * 3 * 32 * 32 * 4
