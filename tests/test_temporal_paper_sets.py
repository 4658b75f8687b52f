"""Notebook 03 at the paper's setting: the 224-px pretrained DenseNet-121 path, Wild-Time's settings,
the paper sets and the paper's own numbers beside a run's (issue 52)."""

import math

import numpy as np
import pytest
import torch
import yaml

import clkit.temporal as tm
from clkit.data.fixtures.densenet import old_style_key, write_densenet121_checkpoint
from clkit.data.fixtures.wild_time import write_fmow
from clkit.data.temporal import load_wild_time, wild_time_bytes
from clkit.models.wildtime import IMAGENET_WEIGHTS, check_backbone_weights, densenet121, load_densenet121_state
from clkit.temporal import paper_numbers as tpn
from clkit.temporal import rehearsal as trh
from clkit.temporal.tables import paper_table
from clkit.temporal.wildtime_settings import WILD_TIME_SETTINGS, period_epochs

NB = "03_temporal_metrics"


def _params(name):
    from clkit.notebooks import notebooks_dir

    path = notebooks_dir() / "params" / NB / f"{name}.yaml"
    return yaml.safe_load(path.read_text()), path.read_text()


# ------------------------------------------------------------------ the pretrained checkpoint, 224 px

@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return write_densenet121_checkpoint(tmp_path_factory.mktemp("w"), seed=3)


def test_fabricated_checkpoint_has_torchvisions_published_layout(checkpoint):
    """Every key of torchvision's DenseNet-121 but num_batches_tracked, the dense layers named the old way."""
    from torchvision.models import densenet121 as tv

    sd = torch.load(checkpoint, weights_only=True)
    want = {old_style_key(k): v.shape for k, v in tv(weights=None).state_dict().items()
            if not k.endswith("num_batches_tracked")}
    assert {k: v.shape for k, v in sd.items()} == want
    assert "features.denseblock4.denselayer16.conv.2.weight" in sd
    assert sum(v.numel() for k, v in sd.items() if "running" not in k) == IMAGENET_WEIGHTS["num_params"]


@pytest.mark.parametrize("old_keys", [True, False])
def test_checkpoint_loads_into_the_network_in_either_key_style(tmp_path, old_keys):
    path = write_densenet121_checkpoint(tmp_path, seed=1, old_keys=old_keys)
    net = densenet121(62, weights=path)
    raw = torch.load(path, weights_only=True)
    key = "features.denseblock2.denselayer3.norm.2.weight" if old_keys else "features.denseblock2.denselayer3.norm2.weight"
    loaded = net.features[0].denseblock2.denselayer3.norm2.weight
    assert torch.equal(loaded, raw[key]) and str(path) in net.weights_source
    assert torch.equal(net.features[0].conv0.weight, raw["features.conv0.weight"])
    assert tuple(net.head.weight.shape) == (62, 1024)          # a new head: the 1000-class one is dropped
    assert not any(k.startswith("classifier.") for k in load_densenet121_state(path))


def test_not_a_densenet_state_dict_is_refused(tmp_path):
    torch.save({"conv.weight": torch.zeros(3)}, tmp_path / "x.pth")
    with pytest.raises(ValueError, match="is not a densenet121 state dict"):
        densenet121(62, weights=tmp_path / "x.pth")


def test_required_weights_missing_names_the_file_and_where_to_get_it(tmp_path):
    with pytest.raises(ValueError, match=r"backbone_weights is required.*densenet121-a639ec97\.pth.*"
                                         r"download\.pytorch\.org/models/densenet121-a639ec97\.pth.*a639ec97"):
        check_backbone_weights("", required=True)
    with pytest.raises(ValueError, match=r"backbone_weights must be a local file.*nope\.pth.*a639ec97"):
        check_backbone_weights(str(tmp_path / "nope.pth"), required=True)
    assert check_backbone_weights("", backbone="yearbook_cnn", required=True) is None   # Yearbook: from scratch
    with pytest.raises(TypeError, match="backbone_weights must be a path"):
        check_backbone_weights(3)


def test_224px_path_reads_the_checkpoint_and_trains_one_step(tmp_path, checkpoint):
    """Fabricated FMoW file (2 years, 2 images a split) at 224 px with ImageNet normalisation, the pretrained
    DenseNet-121 read from the torchvision-layout checkpoint, one step of fine-tuning per period, A filled."""
    write_fmow(tmp_path, per_step=2, steps=[0, 1])
    data = load_wild_time("fmow", image_size=224, normalize="imagenet", data_dir=tmp_path / "wild-time")
    assert data.input_shape == (3, 224, 224) and data.meta == {"image_size": 224, "normalize": "imagenet",
                                                                "dtype": "float32"}
    raw = load_wild_time("fmow", image_size=224, data_dir=tmp_path / "wild-time")
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    np.testing.assert_allclose(data.train[0][0], (raw.train[0][0] - mean[:, None, None]) / std[:, None, None],
                               rtol=1e-5, atol=1e-5)
    assert float(raw.train[0][0].max()) <= 1.0 and float(data.train[0][0].min()) < 0
    A = tm.accuracy_matrix(data, "finetune", epochs=1, batch_size=2, lr=1e-4, backbone="densenet121",
                           backbone_weights=checkpoint, train_update_iter={"default": 1})
    assert A.shape == (2, 2) and np.isfinite(A[np.triu_indices(2)]).all() and np.isnan(A[1, 0])
    u8 = load_wild_time("fmow", image_size=224, normalize="imagenet", data_dir=tmp_path / "wild-time", dtype="uint8")
    A_u8 = tm.accuracy_matrix(u8, "finetune", epochs=1, batch_size=2, lr=1e-4, backbone="densenet121",
                              backbone_weights=checkpoint, train_update_iter={"default": 1})
    np.testing.assert_allclose(A_u8, A, atol=1e-6)      # the pretrained network on uint8 periods: the same A
    with pytest.raises(ValueError, match="normalize='imagenet' needs 3-channel images"):
        from clkit.data.fixtures.wild_time import write_yearbook

        write_yearbook(tmp_path, per_step=2, steps=[1930, 1931])
        load_wild_time("yearbook", normalize="imagenet", data_dir=tmp_path / "wild-time")


def test_224px_memory_is_counted():
    assert wild_time_bytes("fmow", 224) == 141_696 * 3 * 224 * 224 * 4
    assert wild_time_bytes("fmow", 32) * 49 == wild_time_bytes("fmow", 224)
    assert wild_time_bytes("yearbook", 224) == 37_921 * 32 * 32 * 4         # never upsampled


# ------------------------------------------------------------------ Wild-Time's settings and the sets

def test_iterations_become_whole_epochs_per_period():
    # hand count: 3000 x 64 = 192,000 examples; a year of 5,000 images -> 38.4 -> 39 epochs
    assert period_epochs([5000, 192_000, 0], learner="erm", epochs=9, batch_size=64,
                         train_update_iter=WILD_TIME_SETTINGS["fmow"]["train_update_iter"]) == [39, 1, 1]
    assert period_epochs([5000], learner="si", epochs=9, batch_size=64,
                         train_update_iter=WILD_TIME_SETTINGS["fmow"]["train_update_iter"]) == [math.ceil(32000 / 5000)]
    with pytest.raises(ValueError, match=r"train_update_iter\['erm'\]"):
        period_epochs([10], learner="erm", epochs=1, batch_size=4, train_update_iter={"erm": 0})


def test_epochs_per_period_reach_the_strategy():
    """accuracy_matrix trains period t for period_epochs(...)[t] epochs: more iterations, more steps taken."""
    from clkit.data.temporal import make_drifting_gaussians

    ds = make_drifting_gaussians(2, 40, seed=0)         # 20 training samples a period, batch 10: 2 steps an epoch
    few = tm.accuracy_matrix(ds, "finetune", epochs=1, batch_size=10, hidden=(4,), train_update_iter={"default": 2})
    many = tm.accuracy_matrix(ds, "finetune", epochs=1, batch_size=10, hidden=(4,), train_update_iter={"default": 40})
    same = tm.accuracy_matrix(ds, "finetune", epochs=1, batch_size=10, hidden=(4,))
    assert np.array_equal(few, same, equal_nan=True) and not np.array_equal(few, many, equal_nan=True)


@pytest.mark.parametrize("name, dataset", [("paper", "fmow"), ("paper_yearbook", "yearbook")])
def test_paper_sets_carry_wild_times_settings(name, dataset):
    p, text = _params(name)
    w = WILD_TIME_SETTINGS[dataset]
    assert p["dataset"] == dataset and p["backbone"] == w["backbone"] and p["image_size"] == w["image_size"]
    assert p["image_normalize"] == w["normalize"] and p["pretrained_required"] == w["pretrained"]
    assert p["lr"] == w["lr"] and p["batch_size"] == w["batch_size"] and p["train_update_iter"] == w["train_update_iter"]
    assert p["paper_scale"] is True and "1875f1e" in text and "What it is not" in text
    assert set(p["learners"]) == set(tm.LEARNERS) and p["verdict_seeds"] >= trh.MIN_SEEDS


def test_cheaper_set_says_what_it_is_not():
    p, text = _params("paper_32px")
    assert p["image_size"] == 32 and p["paper_scale"] is False and "NOT the paper's network" in text


def test_paper_set_names_its_card_and_memory():
    _, text = _params("paper")
    assert "80 GB H100 holds it" in text and "21.3 GB" in text and "38.2 GiB" in text and "not measured on" in text
    assert "notebooks/grids/03_temporal_metrics/paper_split.yaml" in text      # the set over a day names its split


def test_rehearsal_fabricates_the_checkpoint_and_cuts_the_iterations(tmp_path):
    import os

    old = os.environ.get("CLKIT_DATA")
    try:
        p, _ = _params("paper")
        rh = trh.prepare(p, tmp_path, seed=0)
    finally:
        os.environ.pop("CLKIT_DATA") if old is None else os.environ.update(CLKIT_DATA=old)
    # a fabricated period (8 images) is smaller than one mini-batch: the iterations are dropped and every period
    # trains the capped `epochs`, ceil(1 x 64 / 8) = 8 epochs would be over the cap
    assert rh.changes["train_update_iter"] == {}
    assert [r["used"] for r in rh.rows if r["parameter"] == "train_update_iter"] == [{}]
    assert rh.changes["paper_scale"] is False
    w = rh.changes["backbone_weights"]
    assert w.endswith("densenet121-a639ec97.pth") and densenet121(62, weights=w).weights_source.startswith("ImageNet")


# ------------------------------------------------------------------ the paper's numbers beside a run's

def test_paper_numbers_are_the_papers():
    assert tpn.PAPER_TABLES["fmow"]["A-GEM"] == {"ID": 16.2, "OOD": 6.9, "TAS": 42.9, "SH": 1.7, "DH": 6.3}
    assert tpn.PAPER_TABLES["yearbook"]["MoCo"]["TAS Min"] == 89.3
    assert tpn.PAPER_TABLES["yearbook"]["EWC"]["OOD Min"] == 70.3 and "EWC" not in tpn.PAPER_TABLES["fmow"]
    assert tpn.PAPER_SPREAD == {"fmow": None, "yearbook": None}
    text = open(__import__("pathlib").Path("/work/shared/papers/temporal_metrics.txt")).read() \
        if __import__("pathlib").Path("/work/shared/papers/temporal_metrics.txt").exists() else None
    if text:
        for layout, rows in tpn.PAPER_TABLES.items():
            for label, cells in rows.items():
                line = "\t".join([label] + [f"{v:.1f}%" if "H" not in c else f"{v:.1f} y" for c, v in cells.items()])
                assert line in text, line


def test_marks_exactly_the_cells_beyond_two_sd():
    rows = {"si": {"id": .31, "ood": .27, "tas": .8, "sh": 5.0, "dh": 6.0}}
    # SH over 3 seeds: mean 4.0, sd 0.5 -> paper 4.8 is 1.6 sd off (within); DH mean 5.0 sd 0.1 -> 6.0 is 10 sd off
    per = {"si": [{"sh": 3.5, "dh": 4.9}, {"sh": 4.0, "dh": 5.0}, {"sh": 4.5, "dh": 5.1}]}
    t = paper_table(rows, "fmow", per_seed=per, seeds=[0, 1, 2], horizon_unit="y")
    b = tpn.beside_paper(t, paper_scale=True)
    assert b.loc["SI", ("SH", "vs paper")] == "within ±2 sd" and b.loc["SI", ("DH", "vs paper")] == "outside ±2 sd"
    assert b.loc["SI", ("ID", "vs paper")] == "one seed: not judged" and b.loc["SI", ("DH", "paper")] == "6.0 y"
    assert "1 cell marked" in tpn.beside_note(t, paper_scale=True)
    rec = tpn.beside_record(t, paper_scale=False)
    assert rec["marked"] == 0 and rec["rows"]["SI"]["DH"]["vs_paper"] == "not comparable"
    assert "not meaningful" in tpn.beside_note(t, paper_scale=False)
    with pytest.raises(TypeError, match="paper_scale must be a bool"):
        tpn.beside_paper(t, paper_scale=1)


# ------------------------------------------------------------------ the memory plan: which card the set needs

def test_memory_plan_counts_the_images_and_names_the_card():
    """FMoW at 224 px as uint8: 141,696 x 3 x 224 x 224 bytes = 19.9 GiB of images + 2.3 GiB converted at once + 16 GiB
    allowance for DenseNet-121 = 38.2 GiB: within an 80 GB H100 (79.6 GiB in all); a 32 GB card is refused; at
    32 px (pooled, float32) 1.6 GiB + 16 fits either."""
    from clkit.temporal.memory_plan import TRAINING_ALLOWANCE_GIB, check_memory_plan, memory_plan

    h100, v100 = 85_520_809_984, 34_089_730_048       # torch.cuda total_memory of an H100 80GB and a V100 32GB
    p = memory_plan("fmow", image_size=224, backbone="densenet121", device_bytes=h100, device_name="NVIDIA H100 80GB HBM3")
    assert p["images_bytes"] == 141_696 * 3 * 224 * 224 and p["dtype"] == "uint8"
    assert p["device_need_bytes"] == p["images_bytes"] + p["convert_bytes"] + TRAINING_ALLOWANCE_GIB["densenet121"] * 2**30
    assert p["fits_device"] is True and p["fits_host"] is None
    check_memory_plan(p)
    p = memory_plan("fmow", image_size=224, backbone="densenet121", device_bytes=v100, device_name="Tesla V100-SXM2-32GB")
    with pytest.raises(ValueError, match=r"image_size 224 does not fit the device.*Tesla V100.*38 GiB.*"
                                         r"max_per_period.*paper_32px"):
        check_memory_plan(p)
    assert memory_plan("fmow", image_size=32, backbone="densenet121", device_bytes=v100)["fits_device"] is True
    small = memory_plan("fmow", image_size=224, backbone="densenet121", host_bytes=16 * 2**30)
    assert small["fits_host"] is False and small["fits_device"] is None
    with pytest.raises(ValueError, match="does not fit the host"):
        check_memory_plan(small)
    check_memory_plan(memory_plan("yearbook", image_size=32, backbone="yearbook_cnn", device_bytes=v100))


def test_paper_set_is_refused_on_a_too_small_card_before_loading(monkeypatch):
    """The notebook's plan on a CUDA device of a V100's size (32 GB) refuses the paper set, on an H100's size it
    passes; nothing is read first."""
    import clkit.temporal.memory_plan as mp

    class Props:
        total_memory, name = 34_089_730_048, "Tesla V100-SXM2-32GB"

    class H100:
        total_memory, name = 85_520_809_984, "NVIDIA H100 80GB HBM3"

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: Props)
    monkeypatch.setattr("clkit.data.temporal.load_wild_time", lambda *a, **k: pytest.fail("loaded before the plan"))
    monkeypatch.setattr("clkit._validate.available_memory", lambda: 32 * 2**30)
    p, _ = _params("paper")
    with pytest.raises(ValueError, match="Tesla V100-SXM2-32GB"):
        mp.run_memory_plan(p["dataset"], torch.device("cuda", 0), image_size=p["image_size"], backbone=p["backbone"])
    capped = mp.run_memory_plan("fmow", torch.device("cuda", 0), image_size=224, max_per_period=100,
                                backbone="densenet121")
    assert capped["fits_device"] is True and capped["images_bytes"] <= 2 * 100 * 16 * 3 * 224 * 224
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: H100)
    full = mp.run_memory_plan(p["dataset"], torch.device("cuda", 0), image_size=p["image_size"], backbone=p["backbone"])
    assert full["fits_device"] and full["fits_host"] and full["dtype"] == "uint8"


def test_loader_periods_equal_the_joined_stream(tmp_path):
    """The loader joins each period's split from its steps' parts (releasing them): same arrays as indexing the
    whole concatenated stream by period and split, in the same order."""
    write_fmow(tmp_path, per_step=3, steps=[0, 1, 2, 3])
    d = load_wild_time("fmow", period_length=2, data_dir=tmp_path / "wild-time")
    import wild_time_data as wtd

    for k, split in ((0, "train"), (1, "test")):
        parts = [wtd.load_dataset("fmow", s, split, in_memory=True, data_dir=str(tmp_path / "wild-time"))
                 for s in wtd.available_time_steps("fmow")[2 * k:2 * k + 2]]
        want_y = np.concatenate([np.asarray(p.y) for p in parts])
        x, y = (d.train if split == "train" else d.test)[k]
        assert np.array_equal(y, want_y) and x.shape == (6, 3, 32, 32) and x.dtype == np.float32
    assert d.num_periods == 2 and d.source.endswith("32x32 px")
