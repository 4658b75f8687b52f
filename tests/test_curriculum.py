"""The curriculum benchmark builder, difficulty ordering, streams and bad input."""

import numpy as np
import pytest
import torch

import clkit.curriculum as cur
from clkit.data import DatasetNotFoundError
from clkit.data.images import ImageDataset, load_image_dataset, tinyimagenet_wnids
from clkit.notebooks import param_sets


def _fake(name, num_classes=10, n=12, shape=(6, 6), seed=0, rgb=False, level=None):
    """A synthetic ImageDataset whose class c has constant brightness (easy to learn)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(num_classes), n)
    base = (np.arange(num_classes) * (255 // num_classes))[y] if level is None else np.full(len(y), level)
    full = (*shape, 3) if rgb else shape
    x = np.clip(base[:, None, None] + rng.integers(-5, 5, (len(y), *shape)), 0, 255).astype(np.uint8)
    if rgb:
        x = np.repeat(x[..., None], 3, axis=-1).reshape(len(y), *full)
    return ImageDataset(name, x, y, x.copy(), y.copy(), tuple(map(str, range(num_classes))), "synthetic test data")


def test_prepare_images_resizes_and_replicates_channels():
    grey = np.zeros((2, 28, 28), np.uint8)
    grey[:, :14] = 255
    t = cur.prepare_images(grey, 14, 3)
    assert t.shape == (2, 3, 14, 14) and t.dtype == torch.float32
    assert torch.equal(t[:, 0], t[:, 1]) and torch.equal(t[:, 1], t[:, 2])   # grey replicated
    assert float(t[0, 0, :6].min()) == 1.0 and float(t[0, 0, 8:].max()) == 0.0
    rgb = np.zeros((1, 8, 8, 3), np.uint8)
    rgb[..., 0] = 255
    g = cur.prepare_images(rgb, 8, 1)
    assert g.shape == (1, 1, 8, 8) and torch.allclose(g, torch.full_like(g, 1 / 3))


def test_benchmark_is_class_balanced_and_records_fewer_images():
    b = cur.build_benchmark(["digits", "mnist_subset"], per_class_train=200, per_class_test=40, image_size=12)
    x, y = b.train["digits"]
    assert x.shape[1:] == (3, 12, 12) and 0.0 <= float(x.min()) and float(x.max()) <= 1.0
    counts = torch.bincount(y).tolist()
    assert len(set(counts)) == 1 and counts[0] == b.per_class["digits"][0] == 87   # smallest digits class
    assert b.per_class["mnist_subset"] == (200, 40)
    assert set(torch.bincount(b.test["mnist_subset"][1]).tolist()) == {40}


def test_train_and_test_images_are_disjoint_for_split_free_datasets():
    d = load_image_dataset("mnist_subset")
    train = {r.tobytes() for r in d.x_train}
    assert not any(r.tobytes() in train for r in d.x_test[:500])


def test_tasks_offset_labels_per_position_and_scenario_check():
    b = cur.build_benchmark([_fake("a"), _fake("b", seed=1)], per_class_train=5, per_class_test=3, image_size=6)
    train, test = b.tasks(["b", "a"], "task")
    assert train[0].meta["dataset"] == "b" and train[1].classes == tuple(range(10, 20))
    assert int(test[1].y.min()) == 10 and int(test[1].y.max()) == 19
    with pytest.raises(ValueError, match="scenario"):
        b.tasks(["a"], "domain")
    with pytest.raises(ValueError, match="order"):
        b.tasks(["a", "zzz"])


def test_difficulty_ordering_is_computed_from_single_task_accuracy():
    easy = _fake("easy", n=20)                              # brightness encodes the class
    hard = _fake("hard", n=20, level=128, seed=3)           # all classes look alike: chance level
    b = cur.build_benchmark([hard, easy], per_class_train=20, per_class_test=20, image_size=6, channels=1)
    acc = cur.single_task_accuracy(b, backbone="mlp", epochs=15, optimizer="adam", lr=0.01, batch_size=20)
    assert acc["easy"] > 0.8 > 0.3 > acc["hard"]
    m2i, i2m = cur.curriculum_orders(acc)
    assert m2i == ["easy", "hard"] and i2m == ["hard", "easy"]


def test_run_stream_fills_R_and_metrics_follow_the_paper():
    b = cur.build_benchmark([_fake("a", n=20), _fake("b", n=20, seed=2)], per_class_train=20, per_class_test=10,
                            image_size=6, channels=1)
    R = cur.run_stream(b, ["a", "b"], "naive", scenario="class", backbone="mlp", epochs=20, optimizer="adam",
                       lr=0.01, batch_size=20)
    assert R.shape == (2, 2) and not np.isnan(R).any()
    assert R[0, 0] > 0.5 and R[0, 1] == 0.0        # class-IL: unseen classes are never predicted
    assert R[1, 0] < R[0, 0]                        # naive forgets
    m = cur.stream_metrics(R, "class")
    assert m["ACC"] == pytest.approx((R[0, 0] + R[1, 0] + R[1, 1]) / 3)
    assert m["final_acc"] == pytest.approx((R[1, 0] + R[1, 1]) / 2)
    assert m["BWT_eq2"] == pytest.approx(R[1, 0] - R[0, 0]) == m["BWT_code"]   # T = 2: the forms agree
    assert np.isnan(m["FWT"])
    Rt = cur.run_stream(b, ["a", "b"], "pnn", scenario="task", backbone="mlp", epochs=10, optimizer="adam",
                        lr=0.01, batch_size=20)
    assert Rt[1, 0] == Rt[0, 0]                     # PNN: no forgetting
    assert cur.stream_metrics(Rt, "task")["FWT"] == pytest.approx(Rt[0, 1])


def test_strategy_kwargs_pick_what_each_constructor_takes():
    hyper = {"memory_size": 10, "ewc_lambda": 2.0, "gem_patterns_per_task": 5, "lr": 0.1, "optimizer": "adam"}
    assert cur.strategy_kwargs("replay", hyper) == {"memory_size": 10, "lr": 0.1, "optimizer": "adam"}
    assert cur.strategy_kwargs("gem", hyper) == {"gem_patterns_per_task": 5, "lr": 0.1, "optimizer": "adam"}


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="datasets"):
        cur.build_benchmark(["mnistt"])
    with pytest.raises(ValueError, match="10 classes"):
        cur.build_benchmark([_fake("five", num_classes=5)], image_size=6)
    with pytest.raises(TypeError, match="datasets"):
        cur.build_benchmark("digits")
    ok = dict(datasets=["digits"], scenario="task", strategies=["naive"], backbone="small_cnn", epochs=1,
              difficulty_epochs=1, memory_size=10, per_class_train=5, per_class_test=5, image_size=16, channels=3,
              lr=0.01, momentum=0.9, batch_size=8, seed=0)
    cur.check_params(**ok)
    cur.check_params(**{**ok, "seeds": 3, "num_tasks": 0, "workers": 2})
    for key, bad, match in [("seeds", 0, "seeds"), ("workers", 0, "workers"), ("num_tasks", 1, "num_tasks"),
                            ("num_tasks", 5, "num_tasks"),("memory_size", -1, "memory_size"), ("strategies", ["ewc", "foo"], "strategies"),
                            ("datasets", ["imagenet"], "datasets"), ("scenario", "domain", "scenario"),
                            ("backbone", "vit", "backbone"), ("channels", 2, "channels"),
                            ("memory_format", "nhwc", "memory_format")]:
        with pytest.raises(ValueError, match=match):
            cur.check_params(**{**ok, key: bad})
    with pytest.raises(ValueError, match="task-incremental only"):
        cur.check_params(**{**ok, "scenario": "class", "strategies": ["naive", "mste"]})


def test_task_only_strategies_are_skipped_with_a_note_in_the_class_scenario():
    """One set with the paper's 14 strategies runs in both scenarios: MSTE and PNN need the task id, so
    the class scenario skips them, says so, and validates what is left; with nothing left it fails."""
    paper = ["naive", "cumulative", "mste", "ewc", "replay", "cwr", "pnn"]
    kept, note = cur.scenario_strategies(paper, "class")
    assert kept == ["naive", "cumulative", "ewc", "replay", "cwr"]
    assert "mste, pnn" in note and "task-incremental only" in note and "scenario='task'" in note
    assert cur.scenario_strategies(paper, "task") == (paper, "")
    assert cur.scenario_strategies(["naive", "pkg.mod:Learner"], "class") == (["naive", "pkg.mod:Learner"], "")
    with pytest.raises(ValueError, match="^strategies: 'mste', 'pnn' are task-incremental only"):
        cur.scenario_strategies(["mste", "pnn"], "class")


@pytest.mark.parametrize("backbone,side", [("wide_vgg9_bn", 16), ("wide_vgg9", 16), ("efficientnet_b1", 33),
                                           ("resnet34_bn", 33)])
def test_the_rehearsal_never_cuts_the_image_below_what_its_backbone_trains_on(backbone, side):
    from clkit.models.cnn import MIN_IMAGE_SIZE

    changes, rows = cur.rehearsal.plan_for(backbone).cut({"image_size": 64, "epochs": 50, "backbone": backbone})
    assert changes == {"image_size": side, "epochs": 1} and side >= MIN_IMAGE_SIZE.get(backbone, 0)
    assert "backbone" not in changes


def test_order_matrices_draw_every_strategy_of_one_order_on_one_scale():
    import matplotlib.pyplot as plt

    R = {"M2I": {k: np.tril(np.full((3, 3), v)) for k, v in (("naive", 0.2), ("replay", 0.7), ("ewc", 0.4))}}
    fig = cur.plots.order_matrices(R, {"M2I": ["a", "b", "c"]}, "M2I", ["naive", "replay", "ewc"], title="x")
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["naive", "replay", "ewc"]
    for ax, v in zip(panels, (0.2, 0.7, 0.4)):
        img = ax.get_images()[0]
        assert img.get_clim() == (0, 1) and np.allclose(np.tril(img.get_array().filled(0)), np.tril(np.full((3, 3), v)))
    with pytest.raises(ValueError, match="order"):
        cur.plots.order_matrices(R, {"M2I": ["a", "b", "c"]}, "I2M", ["naive"])
    plt.close(fig)


def test_online_datasets_fail_fast_offline_with_a_helpful_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CLKIT_DATA", str(tmp_path))
    for name in ["svhn", "tinyimagenet"]:
        with pytest.raises(DatasetNotFoundError) as err:
            load_image_dataset(name)
        assert str(tmp_path) in str(err.value) and "download=True" in str(err.value)
    b = cur.build_benchmark(["digits", "cifar10"], per_class_train=2, per_class_test=2, image_size=8,
                            skip_missing=True)
    assert b.names == ["digits"] and list(b.missing) == ["cifar10"]


def test_tinyimagenet_classes_are_chosen_by_name_not_folder_order(tmp_path, monkeypatch):
    """A fake archive whose folders are in another order: labels follow the paper's class list."""
    from PIL import Image

    from clkit.data.images import TINYIMAGENET_CLASSES

    base = tmp_path / "tiny-imagenet-200"
    wnids = [f"n{9000 - i}" for i in range(12)]            # 2 distractor classes
    words = {w: n for w, n in zip(wnids, reversed([*TINYIMAGENET_CLASSES, "goldfish", "cat, house cat"]))}
    (base / "val" / "images").mkdir(parents=True)
    (base / "wnids.txt").write_text("\n".join(wnids))
    (base / "words.txt").write_text("\n".join(f"{w}\t{n}" for w, n in words.items()))
    ann = []
    for k, w in enumerate(wnids):
        (base / "train" / w / "images").mkdir(parents=True)
        img = Image.fromarray(np.full((64, 64, 3), k * 20, np.uint8))
        img.save(base / "train" / w / "images" / f"{w}_0.JPEG")
        img.save(base / "val" / "images" / f"val_{k}.JPEG")
        ann.append(f"val_{k}.JPEG\t{w}\t0\t0\t63\t63")
    (base / "val" / "val_annotations.txt").write_text("\n".join(ann))
    monkeypatch.setenv("CLKIT_DATA", str(tmp_path))
    d = load_image_dataset("tinyimagenet")
    assert d.classes == TINYIMAGENET_CLASSES and len(d.y_train) == 10
    expected = tinyimagenet_wnids(words, wnids)
    for label, w in enumerate(expected):
        k = wnids.index(w)
        assert words[w] == TINYIMAGENET_CLASSES[label]
        assert abs(int(d.x_train[d.y_train == label][0, 0, 0, 0]) - k * 20) <= 2


@pytest.mark.parametrize("graph_only", ["ssm", "sem", "dmsg"])
def test_graph_only_strategies_are_refused(graph_only):
    from clkit.curriculum import check_params

    with pytest.raises(ValueError, match="strategies"):
        check_params(datasets=["digits"], scenario="task", strategies=[graph_only], backbone="small_cnn",
                     epochs=1, difficulty_epochs=1, memory_size=10, per_class_train=5, per_class_test=5,
                     image_size=16, channels=3, lr=0.01, momentum=0.9, batch_size=8, seed=0)


def _no_forgetting(acc, order):
    """R of a learner that neither forgets nor transfers: R[i, j] = a_j for i >= j, chance above."""
    T = len(order)
    return np.array([[acc[order[j]] if i >= j else 0.1 for j in range(T)] for i in range(T)])


def test_no_forgetting_R_reproduces_the_weighting_only_gap_exactly():
    acc = {"easy": 0.97, "mid": 0.81, "hard": 0.42, "hardest": 0.23}
    m2i, i2m = cur.curriculum_orders(acc)
    for scenario in ("class", "task"):
        got = {o: cur.stream_metrics(_no_forgetting(acc, order), scenario) for o, order in (("M2I", m2i), ("I2M", i2m))}
        ref = {o: cur.weighting_reference(acc, order) for o, order in (("M2I", m2i), ("I2M", i2m))}
        assert got["M2I"]["ACC"] - got["I2M"]["ACC"] == pytest.approx(ref["M2I"]["ACC"] - ref["I2M"]["ACC"], abs=1e-15)
        assert got["M2I"]["ACC"] == pytest.approx(ref["M2I"]["ACC"], abs=1e-15)
        # hand computation: weights (4, 3, 2, 1) / 10
        assert ref["M2I"]["ACC"] - ref["I2M"]["ACC"] == pytest.approx(
            (4 * 0.97 + 3 * 0.81 + 2 * 0.42 + 0.23 - (4 * 0.23 + 3 * 0.42 + 2 * 0.81 + 0.97)) / 10)
        # the final row counts every task once: no weighting term, no BWT
        assert got["M2I"]["final_acc"] == pytest.approx(got["I2M"]["final_acc"]) == pytest.approx(np.mean(list(acc.values())))
        assert got["M2I"]["BWT_eq2"] == got["M2I"]["BWT_code"] == 0.0


def test_weighting_reference_rejects_unknown_tasks():
    with pytest.raises(ValueError, match="order"):
        cur.weighting_reference({"a": 0.5}, ["a", "b"])


def test_difficulty_table_and_task_selection_by_seed_spread():
    runs = {"a": [0.95, 0.96, 0.94], "b": [0.93, 0.96, 0.95], "c": [0.70, 0.74, 0.72], "d": [0.40, 0.45, 0.35]}
    t = cur.difficulty_table(runs)
    assert t["c"]["mean"] == pytest.approx(0.72) and t["c"]["sd"] == pytest.approx(0.02) and t["c"]["n"] == 3
    chosen, gaps = cur.select_tasks(t)
    # a and b differ by less than their spread: only one of them is kept (a: larger gap to c)
    assert chosen == ["a", "c", "d"] and all(g["separated"] for g in gaps)
    assert gaps[0]["spread"] == pytest.approx(np.hypot(t["a"]["sd"], t["c"]["sd"]))
    chosen4, gaps4 = cur.select_tasks(t, num_tasks=4)
    assert chosen4 == ["a", "b", "c", "d"] and [g["separated"] for g in gaps4] == [False, True, True]
    assert cur.select_tasks(t, num_tasks=2)[0] == ["a", "d"]          # the widest-separated pair
    with pytest.raises(ValueError, match="num_tasks"):
        cur.select_tasks(t, num_tasks=1)
    with pytest.raises(ValueError, match="2 seeds"):
        cur.select_tasks(cur.difficulty_table({"a": [0.9], "b": [0.5]}))


def test_run_streams_gives_the_same_R_with_worker_processes():
    benches = {s: cur.build_benchmark([_fake("a", n=10, seed=s), _fake("b", n=10, seed=s + 5)], per_class_train=10,
                                      per_class_test=5, image_size=6, channels=1, seed=s) for s in (0, 1)}
    orders = {"M2I": ["a", "b"], "I2M": ["b", "a"]}
    kw = dict(scenario="class", backbone="mlp", epochs=2, optimizer="adam", lr=0.01, batch_size=20)
    one = cur.run_streams(benches, orders, ["naive"], workers=1, **kw)
    two = cur.run_streams(benches, orders, ["naive"], workers=2, **kw)
    for s in (0, 1):
        for o in orders:
            np.testing.assert_array_equal(one[s][o]["naive"], two[s][o]["naive"])
    # seeds differ (the tiny fake tasks give coarse accuracies: compare both orders' matrices)
    assert any(not np.array_equal(one[0][o]["naive"], one[1][o]["naive"]) for o in orders)


def test_a_stream_does_not_depend_on_what_ran_before_in_the_process():
    """PNN adds adapter layers while it trains; the stream seeds torch's global generator too."""
    b = cur.build_benchmark([_fake("a", n=10), _fake("b", n=10, seed=2)], per_class_train=10, per_class_test=5,
                            image_size=6, channels=1)
    kw = dict(scenario="task", backbone="mlp", epochs=1, optimizer="adam", lr=0.01, batch_size=20, seed=3)
    first = cur.run_stream(b, ["a", "b"], "pnn", **kw)
    torch.rand(1000)                                   # another job consumed the global generator
    np.testing.assert_array_equal(cur.run_stream(b, ["a", "b"], "pnn", **kw), first)


# ---------------------------------------------------------------- pairing (issue 23)
def _three():
    return cur.build_benchmark(["digits", "mnist_subset", "fashion_mnist"], per_class_train=15, per_class_test=10,
                               image_size=8, channels=1, seed=4)


def _per_dataset(R, order):
    """Accuracy on each dataset, per row: dataset -> [R[i, pos] for i >= pos]."""
    return {n: [R[i, k] for i in range(k, len(order))] for k, n in enumerate(order)}


def test_a_learner_that_cannot_forget_is_identical_under_both_orders():
    """MSTE trains every task alone: with the task-level pairing its accuracy on each dataset is the same in
    M2I and I2M (every row from the task on), so its final-row gap is exactly zero."""
    b = _three()
    m2i = ["digits", "mnist_subset", "fashion_mnist"]
    kw = dict(scenario="task", backbone="mlp", epochs=2, optimizer="adam", lr=0.01, batch_size=16, seed=1)
    A, B = cur.run_stream(b, m2i, "mste", **kw), cur.run_stream(b, m2i[::-1], "mste", **kw)
    assert _per_dataset(A, m2i) == {n: v[:1] * len(v) for n, v in _per_dataset(A, m2i).items()}  # no forgetting
    pa, pb = _per_dataset(A, m2i), _per_dataset(B, m2i[::-1])
    assert all(pa[n][0] == pb[n][0] for n in m2i)                    # bit for bit, every dataset
    assert cur.stream_metrics(A, "task")["final_acc"] == cur.stream_metrics(B, "task")["final_acc"]
    # the earlier per-stream seeding did not pair the training randomness: the same seed, other accuracies
    S = {o: cur.run_stream(b, order, "mste", pairing="stream", **kw) for o, order in (("M2I", m2i), ("I2M", m2i[::-1]))}
    sa, sb = _per_dataset(S["M2I"], m2i), _per_dataset(S["I2M"], m2i[::-1])
    assert any(sa[n][0] != sb[n][0] for n in m2i)


def test_pairing_gives_a_dataset_its_rows_and_batch_order_whatever_its_position(monkeypatch):
    b = _three()
    seen = []
    real = cur.streams.make_strategy

    def spy(name, model, **kw):
        s = real(name, model, **kw)
        train = s.train_task
        s.train_task = lambda task: (seen.append((task.meta["dataset"], task.classes[0],
                                                  [x.tolist() for x in s.batches(len(task))])), train(task))[1]
        return s

    monkeypatch.setattr(cur.streams, "make_strategy", spy)
    order = ["digits", "mnist_subset", "fashion_mnist"]
    kw = dict(scenario="class", backbone="mlp", epochs=1, batch_size=32, seed=2)
    cur.run_stream(b, order, "naive", **kw)
    cur.run_stream(b, order[::-1], "naive", **kw)
    first, second = {d: (c, bt) for d, c, bt in seen[:3]}, {d: (c, bt) for d, c, bt in seen[3:]}
    assert first == second                                           # same label block, same batches
    assert sorted(c for c, _ in first.values()) == [0, 10, 20]
    assert cur.task_seed(2, "digits") != cur.task_seed(2, "mnist_subset")


def test_build_benchmarks_loads_once_and_equals_seed_by_seed():
    kw = dict(per_class_train=4, per_class_test=3, image_size=8, channels=1)
    many = cur.build_benchmarks(["digits", "mnist_subset"], [0, 3], **kw)
    for s in (0, 3):
        one = cur.build_benchmark(["digits", "mnist_subset"], seed=s, **kw)
        for n in one.names:
            assert torch.equal(many[s].train[n][0], one.train[n][0]) and torch.equal(many[s].test[n][1], one.test[n][1])
    with pytest.raises(ValueError, match="blocks"):
        many[0].tasks(["digits", "mnist_subset"], blocks=["digits"])


def test_final_row_mean_does_not_depend_on_the_order_of_the_values():
    rng = np.random.default_rng(0)
    for _ in range(200):
        v = rng.random(5)
        R = np.tile(v, (5, 1))
        assert cur.stream_metrics(R, "task")["final_acc"] == cur.stream_metrics(R[:, ::-1], "task")["final_acc"]


# ---------------------------------------------------------------- per-learner settings (issue 26)
def test_learner_kwargs_reach_the_strategy_over_the_shared_settings(monkeypatch):
    b = cur.build_benchmark([_fake("a", n=6), _fake("b", n=6, seed=2)], per_class_train=6, per_class_test=3,
                            image_size=6, channels=1)
    built = {}
    real = cur.streams.make_strategy

    def spy(name, model, **kw):
        built[name] = kw
        return real(name, model, **kw)

    monkeypatch.setattr(cur.streams, "make_strategy", spy)
    kw = dict(scenario="class", backbone="mlp", epochs=1, memory_size=50, lr=0.01, ewc_lambda=1.0)
    cur.run_stream(b, ["a", "b"], "replay", learner_kwargs={"replay": {"memory_size": 7}, "ewc": {"ewc_lambda": 9.0}},
                   **kw)
    cur.run_stream(b, ["a", "b"], "ewc", learner_kwargs={"ewc": {"ewc_lambda": 9.0}}, **kw)
    assert built["replay"]["memory_size"] == 7 and "ewc_lambda" not in built["replay"]
    assert built["ewc"]["ewc_lambda"] == 9.0 and built["ewc"]["lr"] == 0.01


@pytest.mark.parametrize("bad, error, words", [
    ({"ewc": {"lam": 1.0}}, ValueError, ["learner_kwargs['ewc']", "unknown keyword 'lam'", "ewc_lambda"]),
    ({"si": {"si_lambda": 1.0}}, ValueError, ["'si' is not a learner of this run"]),
    ({"ewc": {"ewc_lambda": "big"}}, TypeError, ["learner_kwargs['ewc']['ewc_lambda']"]),
    ({"replay": {"memory_size": -3}}, ValueError, ["learner_kwargs['replay']", "memory_size"]),
    ({"naive": {"epochs": 3}}, ValueError, ["unknown keyword 'epochs'"]),       # the notebook supplies epochs
])
def test_bad_learner_kwargs_fail_naming_the_learner(bad, error, words):
    with pytest.raises(error) as exc:
        cur.check_learner_settings(bad, ["naive", "ewc", "replay"], scenario="class", lr=0.01, memory_size=10)
    assert all(w in str(exc.value) for w in words), str(exc.value)


# ---------------------------------------------------------------- learner_kwargs (issue 26)
#: the paper sets, one per backbone of the paper (paper.yaml: Wide-VGG9)
PAPER_SETS = [s for s in param_sets("04_curriculum") if s.startswith("paper")]


@pytest.mark.parametrize("params", ["smoke", "default", *PAPER_SETS])
def test_shipped_parameter_sets_pass_validation_and_paper_keeps_its_strengths(params):
    from clkit.notebooks import load_params, notebook_parameters

    values = {k: d["default"] for k, d in notebook_parameters("04_curriculum").items()}
    values.update(load_params("04_curriculum", params))
    for scenario in ("class", "task"):   # one set serves both scenarios: mste, pnn skipped in class
        kept, _ = cur.scenario_strategies(values["strategies"], scenario)
        cur.check_params(**values | {"scenario": scenario, "strategies": kept})
    if params.startswith("paper"):   # the paper's settings (Sect. 4), now stated per learner
        assert values["learner_kwargs"] == {"ewc": {"ewc_lambda": 1.0}, "si": {"si_lambda": 1.0},
                                            "lwf": {"lwf_alpha": 2.0}, "gem": {"gem_memory_strength": 0.5}}
        assert (values["optimizer"], values["lr"], values["batch_size"], values["epochs"]) == ("sgd", 0.001, 128, 50)
        assert (values["image_size"], values["per_class_train"], values["per_class_test"]) == (64, 500, 500)
        assert sorted(values["strategies"]) == sorted(s for g in cur.tables.GROUPS.values() for s in g)   # the 14
    dotted = load_params("04_curriculum", params, [("learner_kwargs.ewc.ewc_lambda", "100")])
    assert dotted["learner_kwargs"]["ewc"]["ewc_lambda"] == 100


def test_learner_kwargs_reach_the_strategy_and_bad_ones_name_the_learner(monkeypatch):
    b = cur.build_benchmark([_fake("a", n=4), _fake("b", n=4, seed=1)], per_class_train=4, per_class_test=2,
                            image_size=6, channels=1)
    built = {}
    real = cur.streams.make_strategy

    def spy(name, model, **kw):
        built[name] = kw
        return real(name, model, **kw)

    monkeypatch.setattr(cur.streams, "make_strategy", spy)
    cur.run_stream(b, ["a", "b"], "ewc", scenario="class", backbone="mlp", epochs=1, lr=0.01,
                   learner_kwargs={"ewc": {"ewc_lambda": 7.0}, "si": {"si_lambda": 3.0}})
    assert built["ewc"]["ewc_lambda"] == 7.0 and built["ewc"]["lr"] == 0.01
    with pytest.raises(ValueError, match=r"learner_kwargs\['ewc'\].*ewc_lambda"):
        cur.check_learner_settings({"ewc": {"ewc_lambda": -1}}, ["ewc"])
    with pytest.raises(ValueError, match="unknown keyword 'lam'"):
        cur.check_learner_settings({"ewc": {"lam": 1}}, ["ewc"])


def test_memory_format_reaches_the_backbone_of_every_stream(monkeypatch):
    """``memory_format="channels_last"`` lays out the convolution weights of the backbone each
    stream trains (built-in or plugin factory), and starts from the same weights as the contiguous
    layout; an unknown layout is refused naming the parameter."""
    b = cur.build_benchmark([_fake("a", n=6), _fake("b", n=6, seed=2)], per_class_train=6, per_class_test=3,
                            image_size=8, channels=1)
    seen = []
    real = cur.streams.make_strategy

    def spy(name, model, **kw):
        seen.append([p.detach().clone() for p in model.parameters()])
        return real(name, model, **kw)

    monkeypatch.setattr(cur.streams, "make_strategy", spy)
    kw = dict(scenario="class", backbone="small_cnn", epochs=1, batch_size=8)
    cur.run_stream(b, ["a", "b"], "naive", **kw)
    R = cur.run_stream(b, ["a", "b"], "naive", memory_format="channels_last", **kw)
    assert np.isfinite(R[np.tril_indices(2)]).all()
    contiguous, last = seen
    conv2 = 2   # the second convolution's weight (the first's, with one input channel, is both)
    assert contiguous[conv2].is_contiguous() and last[conv2].is_contiguous(memory_format=torch.channels_last)
    assert not last[conv2].is_contiguous()
    assert all(torch.equal(x, y) for x, y in zip(contiguous, last))
    plugin = cur.streams.make_backbone(f"{__name__}:cnn_factory", 3, 10, 8, memory_format="channels_last")
    assert plugin.features[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert not plugin.features[0].weight.is_contiguous()
    for name in ("small_cnn", f"{__name__}:cnn_factory"):
        with pytest.raises(ValueError, match="memory_format.*'nhwc'"):
            cur.streams.make_backbone(name, 3, 10, 8, memory_format="nhwc")


def cnn_factory(in_channels, num_classes, image_size):
    """A plugin backbone factory (``"test_curriculum:cnn_factory"``; not "tests.…": avalanche-lib ships a "tests" package)."""
    from clkit.models.cnn import SmallCNN

    return SmallCNN(in_channels, num_classes, width=4)
