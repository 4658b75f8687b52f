"""Frozen ViTs shared between the prefix tree's strategy nodes (clkit.edge.shared), results unchanged."""

import copy

import numpy as np
import pytest
import torch

from clkit.edge import learners as L
from clkit.edge.images import ViTSpec, _ViTFactory
from clkit.edge.learners import LearnerConfig, train_strategy_sequences
from clkit.edge.memory import strategy_node_bytes
from clkit.edge import enumerate_sequences
from clkit.edge.shared import frozen_backbone, node_bytes_shared, node_copy
from clkit.plugins import resolve_strategy

SPEC = ViTSpec("tiny")
_TRAIN = L._Sequential.train
KW = {"l2p": {"pool_size": 4, "top_k": 2, "epochs": 1, "batch_size": 4, "optimizer": "adam", "lr": 0.01},
      "coda_prompt": {"pool_size": 4, "n_tasks": 2, "epochs": 2, "batch_size": 4},
      "ease": {"epochs": 1, "batch_size": 4},
      "mos": {"epochs": 1, "batch_size": 4, "ca_epochs": 1},
      "hide_prompt": {"epochs": 1, "batch_size": 4, "tii_epochs": 1, "ca_epochs": 1, "n_centroids": 2,
                      "kmeans_iters": 3}}


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 4, 3, 32, 32)).astype(np.float32) + np.arange(4)[:, None, None, None, None] * 0.5
    return x, x[:, :2]


def _run(name, share: bool, monkeypatch, seen: list):
    xtr, xte = _data()
    monkeypatch.setattr(L, "node_copy", node_copy if share else copy.deepcopy)
    def spy(self, state, *a, **k):
        seen.extend(state)
        return _TRAIN(self, state, *a, **k)

    monkeypatch.setattr(L._Sequential, "train", spy)
    return train_strategy_sequences(xtr, xte, enumerate_sequences(4, 2), resolve_strategy(name),
                                    LearnerConfig(epochs=1, batch_size=4, lr=0.01), seed=0,
                                    model_factory=_ViTFactory(SPEC), strategy_kwargs=KW[name])


@pytest.mark.parametrize("name", ["l2p", "coda_prompt", "ease", "mos", "hide_prompt"])
def test_frozen_vit_shared_across_nodes_results_unchanged(name, monkeypatch):
    shared, whole = [], []
    a = _run(name, True, monkeypatch, shared)
    b = _run(name, False, monkeypatch, whole)
    # 6 sequences of 4 classes in 2 tasks: 6 first-task nodes and 6 second-task nodes
    assert len(shared) == len(whole) == 12
    vits = {id(s.model.vit) for s in shared}
    assert len(vits) == 1                                     # one ViT for every node
    assert len({id(s.model.vit) for s in whole}) == 6         # whole copies: one per first-task node
    assert len({id(s.model) for s in shared}) == 6            # the trained parts are the nodes' own
    np.testing.assert_array_equal(a["acc_matrix"], b["acc_matrix"])


def test_shared_only_when_frozen():
    from clkit.models.vit import vit_backbone

    s = resolve_strategy("l2p")(vit_backbone(num_classes=4, tiny=True, seed=0), epochs=1)
    assert frozen_backbone(s) is s.model.vit
    assert node_bytes_shared(s).state < strategy_node_bytes(s).state / 2   # the ViT dominates a node
    s.model.vit.blocks[0].attn.qkv.weight.requires_grad_(True)           # no longer frozen: copied whole
    assert frozen_backbone(s) is None
    c = node_copy(s)
    assert c.model.vit is not s.model.vit
    assert torch.equal(c.model.vit.blocks[0].attn.qkv.weight, s.model.vit.blocks[0].attn.qkv.weight)
    assert node_bytes_shared(s) == strategy_node_bytes(s)
