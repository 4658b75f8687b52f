"""EDGE's image protocols (clkit.edge.images): real loaders on fabricated files, frozen features computed
once, and the ground truth on cached features equal to training the method on images order by order."""

import numpy as np
import pytest
import torch

from clkit.data.fixtures.images import write_cifar100, write_imagenet_r
from clkit.edge import enumerate_sequences
from clkit.edge.bounds_run import classic_bounds_run
from clkit.edge.images import (NORMALISATION, ViTSpec, check_image_params, frozen_features, image_protocol_data,
                               learner_kind, load_image_protocol, notebook_learners, split_learners, strategy_inputs,
                               table_families, vit_inputs)
from clkit.edge.learners import LearnerConfig, train_strategy_sequences
from clkit.plugins import resolve_strategy
from clkit.strategies.base import Task


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    root = tmp_path_factory.mktemp("cache")
    write_cifar100(root, classes=100, per_class_train=6, per_class_test=4)
    write_imagenet_r(root, classes=6, per_class_train=8, per_class_test=2)
    return root


@pytest.fixture
def data_env(cache, monkeypatch):
    monkeypatch.setenv("CLKIT_DATA", str(cache))
    return cache


def test_cifar100_protocol_reads_the_real_layout_standardised(data_env):
    d = load_image_protocol("cifar100", [0, 1, 2, 3], n_train=5, n_test=3, seed=0)
    assert d["x_train"].shape == (4, 5, 3, 32, 32) and d["x_test"].shape == (4, 3, 3, 32, 32)
    assert d["class_names"] == ["apple", "aquarium_fish", "baby", "bear"]
    assert str(data_env) in d["data_source"] and d["image_shape"] == (3, 32, 32)
    # standardised with PyCIL's CIFAR-100 statistics: invert by hand
    mean, std = NORMALISATION["cifar100"]
    raw = d["raw_train"].astype(np.float32) / 255.0          # (C, n, H, W, 3)
    back = d["x_train"] * np.asarray(std, np.float32)[:, None, None] + np.asarray(mean, np.float32)[:, None, None]
    assert np.allclose(np.moveaxis(back, 2, -1), raw, atol=1e-6)
    # the same seed draws the same images; another seed others
    again = load_image_protocol("cifar100", [0, 1, 2, 3], n_train=5, n_test=3, seed=0)
    other = load_image_protocol("cifar100", [0, 1, 2, 3], n_train=5, n_test=3, seed=1)
    assert np.array_equal(d["raw_train"], again["raw_train"]) and not np.array_equal(d["raw_train"], other["raw_train"])


def test_imagenet_r_protocol_resizes_and_names_too_few_images(data_env):
    d = load_image_protocol("imagenet_r", [0, 1, 2], n_train=8, n_test=2, image_size=40)
    assert d["x_train"].shape == (3, 8, 3, 40, 40) and d["class_names"][0] == "goldfish"
    with pytest.raises(ValueError, match=r"n_train = 9: class 0 of imagenet_r's train split has only 8 images"):
        load_image_protocol("imagenet_r", [0, 1, 2], n_train=9, n_test=2, image_size=40)
    with pytest.raises(ValueError, match="image_size: CIFAR-100 is 32x32"):
        load_image_protocol("cifar100", [0, 1], n_train=2, n_test=2, image_size=64)


def test_frozen_features_are_the_vit_applied_to_each_image_once(data_env):
    spec = ViTSpec("tiny", seed=3)
    d = load_image_protocol("cifar100", [0, 1, 2], n_train=4, n_test=2)
    out = frozen_features(d["raw_train"], d["raw_test"], spec)
    vit = spec.build(num_classes=1).features.eval()
    with torch.no_grad():
        direct = vit(torch.from_numpy(vit_inputs(d["raw_train"], spec).reshape(-1, 3, 32, 32))).numpy()
    assert out["f_train"].shape == (3, 4, 32)
    assert np.allclose(out["f_train"].reshape(-1, 32), direct, atol=1e-5)
    assert "random initialisation" in out["weights_source"]


def test_vit_inputs_resize_and_use_the_vit_statistics():
    spec = ViTSpec("tiny")
    x = np.full((1, 1, 8, 8, 3), 255, np.uint8)
    v = vit_inputs(x, spec)
    assert v.shape == (1, 1, 3, 32, 32) and np.allclose(v, (1.0 - 0.5) / 0.5)


@pytest.mark.parametrize("name", ["simplecil", "ranpac"])
def test_ground_truth_on_cached_features_equals_training_the_method_on_images(data_env, name):
    """The 90-order ground truth of a prototype method on frozen features, computed once per image and
    shared by every order through the prefix tree, equals training the same method on (frozen ViT + head)
    image by image, order by order."""
    spec = ViTSpec("tiny", seed=1)
    d = image_protocol_data("cifar100", [0, 1, 2, 3, 4, 5], n_train=4, n_test=3, spec=spec)
    seqs = enumerate_sequences(6, 3)
    kw = {"projection_dim": 48} if name == "ranpac" else {}
    cfg = LearnerConfig(epochs=1, batch_size=8)
    xtr, xte, factory = strategy_inputs(d, [name], spec=spec)[name]
    fast = train_strategy_sequences(xtr, xte, seqs, resolve_strategy(name, parameter="learners"), cfg,
                                    model_factory=factory, strategy_kwargs=kw)
    xv_tr, xv_te = vit_inputs(d["raw_train"], spec), vit_inputs(d["raw_test"], spec)
    xall = torch.from_numpy(xv_te.reshape(-1, 3, 32, 32))
    yall = np.repeat(np.arange(6), 3)
    for l in [0, 17, 44, 89]:
        strat = resolve_strategy(name, parameter="learners")(spec.build(6), scenario="class", seed=0, epochs=1,
                                                             batch_size=8, **kw)
        seen = []
        for t, task in enumerate(np.sort(seqs[l], axis=-1)):
            xs = torch.from_numpy(np.concatenate([xv_tr[c] for c in task]))
            ys = torch.tensor(np.repeat(task, 4))
            strat.train_task(Task(xs, ys, task_id=t, classes=tuple(int(c) for c in task)))
            seen += [int(c) for c in task]
            logits = strat.predict(xall)
            masked = torch.full_like(logits, -1e9)
            masked[:, seen] = logits[:, seen]
            pred = masked.argmax(1).numpy()
            for j, tj in enumerate(np.sort(seqs[l], axis=-1)[: t + 1]):
                rows = np.isin(yall, tj)
                assert fast["acc_matrix"][l, t, j] == pytest.approx((pred[rows] == yall[rows]).mean(), abs=1e-6)   # float32 means


def test_learner_kinds_families_and_routing():
    assert [learner_kind(n) for n in ("ncm", "simplecil", "ranpac", "l2p", "ewc", "der")] == \
        ["ncm", "frozen", "frozen", "prompt", "scratch", "scratch"]
    assert split_learners(["finetune", "ewc", "ncm"]) == (["ncm"], ["naive", "ewc"])
    assert notebook_learners("fashion_mnist", ["finetune", "ewc"]) == (["finetune", "ewc"], [])
    with pytest.raises(ValueError, match="'l2p' lacks capability 'any_backbone'"):
        notebook_learners("fashion_mnist", ["l2p"])
    fam = table_families(["ewc", "simplecil", "icarl", "l2p", "ncm"], "cifar100")
    assert list(fam.values()) == [["simplecil", "l2p", "ncm"], ["ewc", "icarl"]]


def test_strategy_inputs_give_each_family_its_inputs_and_network():
    C = 3
    d = {"x_train": np.zeros((C, 2, 3, 32, 32), np.float32), "x_test": np.zeros((C, 1, 3, 32, 32), np.float32),
         "raw_train": np.zeros((C, 2, 32, 32, 3), np.uint8), "raw_test": np.zeros((C, 1, 32, 32, 3), np.uint8),
         "f_train": np.ones((C, 2, 8), np.float32), "f_test": np.ones((C, 1, 8), np.float32),
         "dataset": "cifar100", "image_shape": (3, 32, 32)}
    ins = strategy_inputs(d, ["icarl", "ranpac", "l2p"], spec=ViTSpec("tiny"))
    assert type(ins["icarl"][2](in_features=3072, num_classes=C)).__name__ == "CifarResNet"
    assert ins["ranpac"][0].shape == (C, 2, 8)
    assert ins["l2p"][0].shape == (C, 2, 3, 32, 32)
    assert type(ins["l2p"][2](in_features=3072, num_classes=C)).__name__ == "ViTBackbone"
    big = strategy_inputs({**d, "dataset": "imagenet_r"}, ["ewc"])["ewc"][2](in_features=3072, num_classes=C)
    assert type(big).__name__ == "TorchvisionNet"       # resnet18_bn


def test_image_parameters_are_checked_naming_them(tmp_path):
    base = dict(image_size=0, backbone="auto", vit_model="tiny", vit_weights="", download=False)
    assert check_image_params("cifar100", **base) == ViTSpec("tiny", "", 0)
    for change, match in [({"backbone": "vgg"}, "backbone must be 'auto' or one of"),
                          ({"vit_model": "resnet50"}, "vit_model must be 'tiny' or a timm vision transformer"),
                          ({"vit_weights": str(tmp_path / "none.safetensors")}, "vit_weights: no weights file"),
                          ({"image_size": 64}, "image_size: CIFAR-100 is 32x32"),
                          ({"image_size": 4}, "image_size must be 0"),
                          ({"bounds_datasets": ["mnist"]}, "bounds_datasets contains 'mnist'"),
                          ({"encoder_sizes": "RN50"}, "encoder_sizes must be")]:
        with pytest.raises((ValueError, TypeError), match=match):
            check_image_params("cifar100", **{**base, **change})


def test_classic_bounds_run_trains_every_class_of_the_split(data_env):
    res = classic_bounds_run("cifar100", ["simplecil", "ncm"], LearnerConfig(epochs=1, batch_size=16),
                             encoder="glove", spec=ViTSpec("tiny"), n_train=2, n_test=2)
    assert len(res.class_names) == 100 and res.num_tasks == 10
    assert res.num_trained == 5                     # RS's three and EDGE's hard and easy (its random is RS's)
    for learner in ("simplecil", "ncm"):
        b = res.bounds[learner]
        assert b["EDGE"]["min"] <= b["EDGE"]["max"] and 0 <= b["RS"]["min"] <= b["RS"]["max"] <= 100
    assert res.notes[0].startswith("data: cifar100") and "2/2 train/test images per class" in res.notes[0]


@pytest.mark.parametrize("name", ["ewc", "icarl"])
def test_depth_first_walk_equals_the_breadth_first_one(name):
    """Strategies walk the prefix tree depth first (only the current path's models alive); every node
    still starts from its parent's state, so the accuracy matrices equal the breadth-first walk's."""
    from clkit.edge.learners import _Sequential, _walk_tree, _walk_tree_depth_first

    rng = np.random.default_rng(0)
    x = torch.as_tensor((rng.normal(size=(6, 4, 5)) + 2 * np.eye(6, 5)[:, None, :]).astype(np.float32))
    seqs = np.sort(enumerate_sequences(6, 3), axis=-1)
    cfg = LearnerConfig(hidden=8, epochs=2, batch_size=4, lr=0.1)
    kw = {"memory_size": 6} if name == "icarl" else {}
    xall = x.reshape(-1, 5)
    yall = torch.arange(6).repeat_interleave(4)
    out = []
    for walk in (_walk_tree, _walk_tree_depth_first):
        backend = _Sequential(resolve_strategy(name, parameter="learners"), cfg, 3, x, None, kw)
        out.append(walk(backend, xall, yall, 4, seqs, None, True, 1000))
    assert np.array_equal(out[0], out[1], equal_nan=True) and np.isfinite(out[1][:, -1]).all()


def test_shallower_cifar_resnet_is_the_same_network_with_fewer_blocks():
    """backbone resnet8 (the rehearsal's cut of ResNet-32): CifarResNet with 1 basic block a stage -- same stem,
    widths and 64-d features, depth 6 * 1 + 2 = 8 (7 convolutions + the head)."""
    from torch import nn

    from clkit.models.cnn import resnet32

    assert check_image_params("cifar100", image_size=0, backbone="resnet8", vit_model="tiny", vit_weights="",
                              download=False) == ViTSpec("tiny", "", 0)
    d = {"x_train": np.zeros((2, 3, 3, 32, 32), np.float32), "x_test": np.zeros((2, 1, 3, 32, 32), np.float32),
         "dataset": "cifar100", "image_shape": (3, 32, 32)}
    small = strategy_inputs(d, ["ewc"], backbone="resnet8")["ewc"][2](in_features=3072, num_classes=5)
    big = resnet32(3, 5)
    convs = lambda m: sum(isinstance(x, nn.Conv2d) for x in m.modules())  # noqa: E731
    assert type(small) is type(big) and convs(small) == 7 and convs(big) == 31
    assert small.head.in_features == big.head.in_features == 64
    assert small(torch.zeros(2, 3, 32, 32)).shape == (2, 5)
