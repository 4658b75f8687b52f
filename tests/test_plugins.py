"""clkit.plugins: learners by registry name, import path or entry point; capabilities; factories."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from clkit import plugins
from clkit.models import MLP
from clkit.strategies import Strategy, Task, available_strategies, make_strategy
from plugin_env import install_example_plugin  # not "tests.plugin_env": avalanche-lib ships a "tests" package


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory):
    site = install_example_plugin(tmp_path_factory.mktemp("site"))
    bad = install_example_plugin(tmp_path_factory.mktemp("site_bad"), dist="broken_plugin",
                                 entry_points={"broken": "no_such_module_xyz:Thing",
                                               "not_a_strategy": "clkit.models.mlp:MLP"})
    sys.path[:0] = [str(site), str(bad)]
    yield site
    for p in (str(site), str(bad)):
        sys.path.remove(p)


class NoBoundaries(Strategy):
    """A user strategy that needs task boundaries and has no regression."""
    task_free = False
    supports_regression = False


def test_entry_point_is_discovered_with_its_origin(plugin_site):
    eps = plugins.strategy_entry_points()
    assert eps["tiny_replay"].value == "clkit_example_plugin:TinyReplay"
    origins = available_strategies()
    assert origins["tiny_replay"] == "entry point of clkit-example-plugin 0.1.0 (clkit_example_plugin:TinyReplay)"
    assert origins["ewc"] == "built-in (clkit.strategies.importance:EWC)"
    assert list(origins) == sorted(origins)


def test_entry_point_strategy_trains_online_and_keeps_a_reservoir(plugin_site):
    s = make_strategy("tiny_replay", MLP(2, 2, hidden=()), memory_size=5, replay_size=3, seed=1)
    assert type(s).__name__ == "TinyReplay" and s.name == "tiny_replay"
    for _ in range(4):
        s.observe(torch.randn(4, 2), torch.tensor([0, 1, 0, 1]))
    assert len(s.mem_y) == 5 and s.num_seen == 16
    # registered on first use: the registry (and notebooks reading it) see the class
    from clkit.strategies.base import _REGISTRY
    assert _REGISTRY["tiny_replay"] is type(s)


def test_import_path_resolves_registers_and_is_listed():
    path = f"{__name__}:NoBoundaries"
    assert plugins.resolve_strategy(path) is NoBoundaries
    assert available_strategies()[path] == "import path"
    s = make_strategy(path, MLP(2, 2))
    assert isinstance(s, NoBoundaries)


def test_capabilities_mirror_builtin_declarations():
    caps = plugins.capabilities
    assert caps(plugins.resolve_strategy("naive")) == {"task_free", "regression", "class_scenario",
                                                        "task_scenario", "graph", "generic_model", "any_backbone"}
    assert "task_free" not in caps(plugins.resolve_strategy("ewc"))
    assert "class_scenario" not in caps(plugins.resolve_strategy("pnn"))
    assert "regression" not in caps(plugins.resolve_strategy("gdumb"))
    assert "generic_model" not in caps(plugins.resolve_strategy("ssm"))
    assert "any_backbone" not in caps(plugins.resolve_strategy("l2p")) and "generic_model" in caps(
        plugins.resolve_strategy("l2p"))


def test_plugin_lacking_a_capability_is_refused_naming_learner_capability_notebook(plugin_site):
    path = f"{__name__}:NoBoundaries"
    with pytest.raises(ValueError, match=r"methods: learner '.*NoBoundaries' lacks capability 'task_free'.*"
                                         r"notebook 05_drift"):
        plugins.split_learners(["bare", path], ["bare"], parameter="methods", notebook="05_drift")
    with pytest.raises(ValueError, match="lacks capability 'regression'.*01_taskification"):
        plugins.split_learners([path], ["naive"], parameter="methods", notebook="01_taskification")
    with pytest.raises(ValueError, match="'tiny_replay' lacks capability 'task_scenario'.*04_curriculum"):
        plugins.use_strategies(["naive", "tiny_replay"], notebook="04_curriculum", extra_needs=["task_scenario"])
    assert plugins.split_learners(["finetune", "tiny_replay"], ["finetune"], parameter="learners",
                                  notebook="02_edge") == (["finetune"], ["tiny_replay"])


def test_bad_learners_give_clear_errors(plugin_site):
    with pytest.raises(ValueError, match=r"learners: 'no_pkg_xyz\.mod:Cls' cannot be loaded: importing 'no_pkg_xyz"):
        plugins.resolve_strategy("no_pkg_xyz.mod:Cls", parameter="learners")
    with pytest.raises(ValueError, match="has no attribute 'Nope'"):
        plugins.resolve_strategy("clkit.models.mlp:Nope")
    with pytest.raises(TypeError, match="must name a subclass of clkit.strategies.Strategy, got class MLP"):
        plugins.resolve_strategy("clkit.models.mlp:MLP")
    with pytest.raises(TypeError, match="subclass of clkit.strategies.Strategy"):
        plugins.resolve_strategy("not_a_strategy")
    with pytest.raises(ValueError, match=r"entry point 'broken' = 'no_such_module_xyz:Thing'.*cannot be loaded"):
        plugins.resolve_strategy("broken")
    with pytest.raises(ValueError, match=r"strategy must be one of \[.*'tiny_replay'.*\] or an import path"):
        make_strategy("ewcc", MLP(2, 2))
    with pytest.raises(ValueError, match="not an import path"):
        plugins.load_object("a:b:c")
    with pytest.raises(ValueError, match="duplicates"):
        plugins.split_learners(["ewc", "ewc"], ["ewc"], parameter="learners", notebook="02_edge")


def linear_factory(in_features, num_classes):
    return torch.nn.Linear(in_features, num_classes)


def wrong_signature(width):
    return torch.nn.Linear(width, 2)


def not_a_module(in_features, num_classes):
    return "model"


def test_backbone_factories_are_checked_against_the_documented_signature():
    m = plugins.build_model(f"{__name__}:linear_factory", "02_edge", in_features=3, num_classes=4)
    assert isinstance(m, torch.nn.Linear) and m.out_features == 4
    with pytest.raises(TypeError, match=r"wrong signature.*02_edge calls factory\(in_features: int, num_classes"):
        plugins.resolve_factory(f"{__name__}:wrong_signature", "02_edge")
    with pytest.raises(TypeError, match="returned str, not a torch.nn.Module"):
        plugins.build_model(f"{__name__}:not_a_module", "03_temporal_metrics", in_features=3, num_classes=2)
    for nb in plugins.NOTEBOOK_NEEDS:
        assert plugins._factory_kwargs(nb)


def test_sequential_ground_truth_matches_batched_finetune_protocol():
    """An ordinary Strategy on every sequence gives the same structure as the batched learners, and a
    plain loop over train_task reproduces it (same init for every sequence, class-incremental masking)."""
    from clkit.edge import enumerate_sequences
    from clkit.edge.learners import LearnerConfig, train_sequences

    rng = np.random.default_rng(0)
    x = (rng.normal(size=(4, 30, 5)) + 2.5 * np.eye(4, 5)[:, None, :]).astype(np.float32)
    seqs = enumerate_sequences(4, 2)
    cfg = LearnerConfig(hidden=8, epochs=2, batch_size=10, lr=0.05)
    seq = plugins.train_sequences_sequentially(x, x, seqs, "naive", cfg, seed=3)
    bat = train_sequences(x, x, seqs, "finetune", cfg, seed=3)
    assert seq["acc_matrix"].shape == bat["acc_matrix"].shape == (6, 2, 2)
    assert np.isnan(seq["acc_matrix"][:, 0, 1]).all()
    np.testing.assert_allclose(seq["avg_acc"], seq["seen_acc"].mean(1))
    # both learn the easy first task well
    assert seq["acc_matrix"][:, 0, 0].mean() > 0.75 and bat["acc_matrix"][:, 0, 0].mean() > 0.75
    # one sequence by hand
    from clkit._seed import torch_seeded
    with torch_seeded(3):
        model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    s = make_strategy("naive", model, lr=0.05, momentum=0.9, epochs=2, batch_size=10, seed=3)
    s0 = seqs[0]
    xt = torch.as_tensor(x)
    for t in range(2):
        cls = [int(c) for c in s0[t]]
        s.train_task(Task(torch.cat([xt[c] for c in cls]), torch.tensor(sum([[c] * 30 for c in cls], [])), task_id=t))
    seen = torch.zeros(4, dtype=torch.bool)
    seen[list(s0.reshape(-1))] = True
    cls0 = [int(c) for c in s0[0]]
    out = s.predict(torch.cat([xt[c] for c in cls0])).masked_fill(~seen, float("-inf")).argmax(1)
    acc = float((out == torch.tensor(sum([[c] * 30 for c in cls0], []))).float().mean())
    assert seq["acc_matrix"][0, 1, 0] == pytest.approx(acc)


def test_sequential_ground_truth_runs_the_example_plugin(plugin_site):
    rng = np.random.default_rng(1)
    x = (rng.normal(size=(4, 12, 3)) + 3 * np.eye(4, 3)[:, None, :]).astype(np.float32)
    out = plugins.train_sequences_sequentially(x, x, [[[0, 1], [2, 3]], [[2, 3], [0, 1]]], "tiny_replay")
    assert out["avg_acc"].shape == (2,) and np.all((0 <= out["avg_acc"]) & (out["avg_acc"] <= 1))


# --------------------------------------------------------------------------- the five notebooks

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "data"


@pytest.fixture(scope="session")
def plugin_notebooks(tmp_path_factory):
    """``run(notebook) -> results``: each notebook once per session with the example plugin (an
    installed distribution's entry point, visible to the kernel through PYTHONPATH) and user data
    written here; smoke parameters otherwise."""
    import json
    import os

    from clkit.run import run_notebook
    from plugin_env import write_graph, write_image_folder

    base = tmp_path_factory.mktemp("plugin_notebooks")
    site = install_example_plugin(base / "site")
    write_image_folder(base / "img4", num_classes=4, per_class=24)
    write_image_folder(base / "img10", num_classes=10, per_class=16)
    write_graph(base / "graph.pt", num_nodes=120, num_classes=4)
    A4 = base / "A4.csv"
    A4.write_text("0.9,0.8,0.75,0.7\n,0.9,0.82,0.7\n,,0.88,0.8\n,,,0.91\n")
    overrides = {
        "01_taskification": {"methods": "[naive, tiny_replay]", "dataset": str(EXAMPLES / "stream.csv"),
                             "time_column": "time", "window_days": "[1, 2]", "offset_days": "0.5",
                             "delta_days": "0.25", "stride": "6", "context_steps": "12"},
        "02_edge": {"dataset": str(base / "img4"), "classes": "[0, 1, 2, 3]", "num_tasks": "2",
                    "learners": "[finetune, ncm, tiny_replay]", "n_train": "12", "n_test": "12",
                    "classic_datasets": f"[{EXAMPLES / 'class_names.txt'}]", "classic_num_tasks": "4"},
        "03_temporal_metrics": {"dataset": str(EXAMPLES / "periods.csv"), "period_column": "year",
                                "learners": "[erm, finetune, tiny_replay]", "acc_matrices": f"[{A4}]"},
        "04_curriculum": {"datasets": f"[digits, mnist_subset, {base / 'img10'}]",
                          "strategies": "[naive, tiny_replay]", "per_class_train": "8", "per_class_test": "8",
                          "backbone": "clkit_example_plugin.backbones:tiny_cnn", "seeds": "2",
                          "scenario": "class",  # tiny_replay does not support the task scenario (smoke's)
                          "learner_kwargs": "{}"},  # smoke's settings are for its replay, not run here
        "05_drift": {"dataset": str(base / "graph.pt"), "methods": "[bare, er, tiny_replay]", "seeds": "[1]"},
    }
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(site)] + ([old] if old else []))
    cache = {}

    def run(notebook, extra=None):
        key = (notebook, repr(extra))
        if key not in cache:
            ov = dict(overrides[notebook], **(extra or {}))
            path = run_notebook(notebook, "smoke", list(ov.items()), out=base / "runs" / str(len(cache)),
                                progress=False)
            cache[key] = json.loads((path / "results.json").read_text())["results"]
        return cache[key]

    run.base = base
    yield run
    if old is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old


@pytest.mark.notebook
def test_notebook01_user_stream_and_plugin(plugin_notebooks):
    from clkit import taskification as tk
    from clkit.data.user import load_stream_table

    r = plugin_notebooks("01_taskification")
    assert "stream.csv" in r["data_source"]
    assert {"tiny_replay|1d", "tiny_replay|2d", "naive|1d"} <= set(r["cl_mean"])
    assert np.isfinite(r["cl_mean"]["tiny_replay|1d"]["avg_mse"])
    # the notebook's BPS equals the library's on the same file
    data = load_stream_table(EXAMPLES / "stream.csv", time_column="time")
    ref = tk.bps_over_series(data.values, tk.fixed_windows(data.length, 144), 36, 10, 0)
    assert r["bps"]["1d"]["bps"] == pytest.approx(ref["bps_mean"])


@pytest.mark.notebook
def test_notebook02_imagefolder_class_names_and_plugin(plugin_notebooks):
    from clkit.data.user import imagefolder_enumerable
    from clkit.edge import enumerate_sequences, hard_sequence, class_similarity
    from clkit.edge.learners import LearnerConfig

    r = plugin_notebooks("02_edge")
    assert "user ImageFolder" in r["data_source"]
    assert list(r["true_accuracy"]) == ["finetune", "ncm", "tiny_replay"]
    data = imagefolder_enumerable(plugin_notebooks.base / "img4", [0, 1, 2, 3], n_train=12, n_test=12, seed=0)
    ref = plugins.train_sequences_sequentially(data["x_train"], data["x_test"], enumerate_sequences(4, 2),
                                               "tiny_replay", LearnerConfig(hidden=32, epochs=2, batch_size=32,
                                                                            lr=0.05), seed=0)
    np.testing.assert_allclose(r["true_accuracy"]["tiny_replay"], (100 * ref["avg_acc"]).round(4), atol=1e-3)
    from clkit.data.user import load_class_names_file

    names = load_class_names_file(EXAMPLES / "class_names.txt")
    (key, classic), = r["classic"].items()
    assert key.endswith("class_names.txt") and classic["num_classes"] == 12
    assert classic["hard_sequence"] == np.asarray(hard_sequence(class_similarity(names, "glove"), 4)).tolist()


@pytest.mark.notebook
def test_notebook03_period_table_matrix_and_plugin(plugin_notebooks):
    from clkit.data.user import load_matrix_csv

    r = plugin_notebooks("03_temporal_metrics")
    assert "periods.csv" in r["data_source"] and r["num_periods"] == 4
    assert {"erm", "finetune", "tiny_replay", "A4"} <= set(r["learners"])
    A = np.array(r["acc_matrix"]["A4"], dtype=float)
    np.testing.assert_array_equal(np.isnan(A), np.isnan(load_matrix_csv(plugin_notebooks.base / "A4.csv")))


@pytest.mark.notebook
def test_notebook04_imagefolder_tasks_backbone_and_plugin(plugin_notebooks):
    r = plugin_notebooks("04_curriculum")
    assert any("user ImageFolder" in s for s in r["data_source"].values())
    assert all("tiny_replay" in m for m in r["metrics"].values())


@pytest.mark.notebook
def test_notebook05_saved_graph_and_plugin(plugin_notebooks):
    r = plugin_notebooks("05_drift")
    assert "graph.pt" in r["data_source"]
    assert all("tiny_replay" in methods for methods in r["main"].values())


@pytest.mark.notebook
def test_notebooks_refuse_a_plugin_lacking_a_capability_before_training(plugin_notebooks, tmp_path):
    from clkit.run import run_notebook

    with pytest.raises(RuntimeError, match=r"learner 'clkit.strategies.importance:EWC' lacks capability "
                                           r"'task_free'.*notebook 05_drift"):
        run_notebook("05_drift", "smoke", [("methods", "[bare, 'clkit.strategies.importance:EWC']")],
                     out=tmp_path, progress=False)
    with pytest.raises(RuntimeError, match=r"'tiny_replay' lacks capability 'task_scenario'.*04_curriculum"):
        run_notebook("04_curriculum", "smoke", [("strategies", "[naive, tiny_replay]"), ("scenario", "task")],
                     out=tmp_path, progress=False)
