"""Notebook 04's two protocols: the paper's text and the authors' released code (clkit.curriculum.protocol)."""

import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from clkit.curriculum import build_benchmark, check_params, run_stream, strategy_kwargs
from clkit.curriculum.protocol import (AUTHORS_EPOCHS, AUTHORS_SETTINGS, differences, learner_settings,
                                       strategy_epochs)
from clkit.learner_kwargs import settings_for
from clkit.models import MLP
from clkit.strategies import make_strategy

ROOT = Path(__file__).resolve().parents[1]
PAPER_STRATEGIES = ["naive", "cumulative", "mste", "ewc", "si", "mas", "lwf", "replay", "agem", "gem", "gdumb",
                    "generative_replay", "cwr", "pnn"]
HYPER = dict(optimizer="sgd", lr=0.001, momentum=0.9, batch_size=128, memory_size=200, agem_sample_size=256,
             gem_patterns_per_task=256)


def _built(name, protocol, learner_kwargs=None):
    """The strategy as notebook 04 builds it under ``protocol`` (task scenario: every strategy)."""
    settings = settings_for(name, strategy_kwargs(name, HYPER),
                            learner_settings(protocol, PAPER_STRATEGIES, learner_kwargs))
    return make_strategy(name, MLP(4, 20, hidden=(4,)), scenario="task", **settings)


@pytest.mark.parametrize("name, attr, paper, authors", [
    ("agem", "agem_patterns_per_task", 0, 256),        # one reservoir -> 256 rows per task
    ("agem", "agem_sample_size", 256, 64),             # the notebook's value -> Avalanche's default
    ("agem", "memory_size", 200, 200),
    ("si", "si_eps", 0.1, 0.001),
    ("si", "si_lambda", 1.0, 1.0),
    ("mas", "importance_update", "sum", "average"),
    ("mas", "mas_alpha", 0.5, 0.5),
    ("mas", "mas_lambda", 1.0, 1.0),
    ("lwf", "lwf_temperature", 2.0, 1.0),
    ("lwf", "lwf_alpha", 2.0, 2.0),
    ("generative_replay", "generator_latent", 32, 16),
    ("generative_replay", "generator_lr", 1e-3, 0.01),
    ("gem", "gem_patterns_per_task", 256, 256),
    ("gem", "gem_memory_strength", 0.5, 0.5),
])
def test_authors_protocol_sets_each_differing_parameter(name, attr, paper, authors):
    assert getattr(_built(name, "paper"), attr) == paper
    assert getattr(_built(name, "authors"), attr) == authors


def test_authors_epochs_are_the_released_configs_at_the_papers_scale():
    assert strategy_epochs("authors", PAPER_STRATEGIES, 50) == {"naive": 20, "lwf": 20, "agem": 20}
    assert strategy_epochs("paper", PAPER_STRATEGIES, 50) == {}
    # scaled with the run's epochs (20 / 50 of them, at least one)
    assert strategy_epochs("authors", ["naive", "replay"], 10) == {"naive": 4}
    assert strategy_epochs("authors", ["agem"], 1) == {"agem": 1}
    assert set(AUTHORS_EPOCHS) == {"naive", "lwf", "agem"}


def test_strategy_epochs_reach_the_training():
    b = build_benchmark(["digits", "mnist_subset"], per_class_train=5, per_class_test=5, image_size=8, channels=1)
    kw = dict(scenario="task", backbone="mlp", optimizer="adam", lr=0.01, batch_size=10)
    order = ["digits", "mnist_subset"]
    one = run_stream(b, order, "naive", epochs=1, **kw)
    three = run_stream(b, order, "naive", epochs=3, **kw)
    assert not np.array_equal(one, three)
    np.testing.assert_array_equal(run_stream(b, order, "naive", epochs=3, strategy_epochs={"naive": 1}, **kw), one)
    np.testing.assert_array_equal(run_stream(b, order, "naive", epochs=3, strategy_epochs={"lwf": 1}, **kw), three)
    with pytest.raises(ValueError, match="strategy_epochs"):
        run_stream(b, order, "naive", epochs=3, strategy_epochs={"naive": 0}, **kw)


def test_users_learner_kwargs_win_and_paper_leaves_them_alone():
    assert learner_settings("paper", PAPER_STRATEGIES, None) == {}
    assert learner_settings("paper", PAPER_STRATEGIES, {"si": {"si_eps": 0.2}}) == {"si": {"si_eps": 0.2}}
    out = learner_settings("authors", PAPER_STRATEGIES, {"si": {"si_eps": 0.2}, "ewc": {"ewc_lambda": 5.0}})
    assert out["si"] == {"si_eps": 0.2} and out["ewc"] == {"ewc_lambda": 5.0}
    assert out["mas"] == AUTHORS_SETTINGS["mas"]
    assert "agem" not in learner_settings("authors", ["naive", "si"])     # only the run's strategies
    assert _built("si", "authors", {"si": {"si_eps": 0.2}}).si_eps == 0.2


def test_bad_protocol_is_named():
    with pytest.raises(ValueError, match=r"protocol must be one of \['paper', 'authors'\], got 'code'"):
        learner_settings("code", ["si"])
    with pytest.raises(ValueError, match="protocol"):
        check_params(datasets=["digits"], scenario="task", strategies=["naive"], backbone="mlp", epochs=1,
                     difficulty_epochs=1, memory_size=10, per_class_train=5, per_class_test=5, image_size=8,
                     channels=1, lr=0.01, momentum=0.9, batch_size=8, seed=0, protocol="code")


def test_every_switched_difference_is_a_protocol_setting_and_the_docs_list_every_difference():
    d = differences()
    assert {"quantity", "paper", "authors", "where", "switched"} <= set(d.columns) and len(d) >= 10
    switched = " ".join(d.loc[d.switched, "quantity"]).lower()
    for name in AUTHORS_SETTINGS:
        assert {"agem": "a-gem", "si": "si ", "mas": "mas", "lwf": "lwf",
                "generative_replay": "generativereplay"}[name] in switched + " "
    docs = (ROOT / "docs" / "04_curriculum.md").read_text()
    section = docs.split("## Paper text versus the authors' code", 1)[1].split("\n## ", 1)[0]
    for quantity in d.quantity:
        assert quantity in section, f"docs/04_curriculum.md's table lacks {quantity!r}"


def test_every_parameter_set_names_its_protocol():
    for path in sorted((ROOT / "notebooks" / "params" / "04_curriculum").glob("*.yaml")):
        params = yaml.safe_load(path.read_text())
        assert params.get("protocol") == "paper", path.name
    nb = (ROOT / "notebooks" / "04_curriculum.py").read_text()
    assert re.search(r'^protocol: str = "paper"', nb, re.M)
