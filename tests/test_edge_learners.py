"""Batched class-incremental learners: equal to a plain per-sequence loop, independent per sequence."""

import numpy as np
import pytest
import torch

from clkit.edge import enumerate_sequences
from clkit.edge.learners import (LEARNERS, LearnerConfig, batch_order, init_params, prefix_code,
                                 train_sequences)


@pytest.fixture(scope="module")
def toy():
    """6 Gaussian classes in 20-D, 40 training / 30 test points each."""
    rng = np.random.default_rng(0)
    centres = 1.5 * rng.normal(size=(6, 20))
    xtr = (centres[:, None, :] + rng.normal(size=(6, 40, 20))).astype(np.float32)
    xte = (centres[:, None, :] + rng.normal(size=(6, 30, 20))).astype(np.float32)
    return xtr, xte, enumerate_sequences(6, 3)


CFG = LearnerConfig(hidden=16, epochs=2, batch_size=16, lr=0.05, memory_per_class=5)


def plain_finetune(xtr, xte, seq, cfg, seed):
    """One sequence, one nn.Module, torch.optim.SGD: the reference implementation."""
    C, _, D = xtr.shape
    W1, b1, W2, b2 = init_params(D, cfg.hidden, C, seed)
    net = torch.nn.Sequential(torch.nn.Linear(D, cfg.hidden), torch.nn.ReLU(), torch.nn.Linear(cfg.hidden, C))
    with torch.no_grad():
        net[0].weight.copy_(W1.T), net[0].bias.copy_(b1), net[2].weight.copy_(W2.T), net[2].bias.copy_(b2)
    opt = torch.optim.SGD(net.parameters(), lr=cfg.lr, momentum=cfg.momentum)
    seen = torch.zeros(C, dtype=torch.bool)
    R = np.full((len(seq), len(seq)), np.nan)
    for t, task in enumerate(seq):
        seen[list(task)] = True
        xs = torch.as_tensor(np.concatenate([xtr[c] for c in task]))
        ys = torch.as_tensor(np.repeat(task, xtr.shape[1]))
        for epoch in range(cfg.epochs):
            order = batch_order(seed, prefix_code(seq[: t + 1], C), t, epoch, len(xs))
            for s in range(0, len(xs), cfg.batch_size):
                idx = order[s:s + cfg.batch_size]
                logits = net(xs[idx]).masked_fill(~seen, -1e9)
                loss = torch.nn.functional.cross_entropy(logits, ys[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
        with torch.no_grad():
            for j in range(t + 1):
                xe = torch.as_tensor(np.concatenate([xte[c] for c in seq[j]]))
                ye = torch.as_tensor(np.repeat(seq[j], xte.shape[1]))
                R[t, j] = (net(xe).masked_fill(~seen, -1e9).argmax(1) == ye).float().mean().item()
    return R


def test_batched_finetune_equals_a_plain_loop_for_each_sequence(toy):
    xtr, xte, seqs = toy
    out = train_sequences(xtr, xte, seqs, "finetune", CFG, seed=3)
    for l in (0, 41, 89):
        np.testing.assert_allclose(out["acc_matrix"][l], plain_finetune(xtr, xte, seqs[l], CFG, 3), atol=1e-6)


@pytest.mark.parametrize("learner", LEARNERS)
def test_each_sequence_trains_as_if_alone(toy, learner):
    xtr, xte, seqs = toy
    full = train_sequences(xtr, xte, seqs, learner, CFG, seed=1)
    pick = [7, 63]
    alone = train_sequences(xtr, xte, seqs[pick], learner, CFG, seed=1)
    np.testing.assert_allclose(alone["acc_matrix"], full["acc_matrix"][pick], atol=1e-4)


def test_results_are_deterministic_and_shaped(toy):
    xtr, xte, seqs = toy
    a = train_sequences(xtr, xte, seqs, "lwf", CFG, seed=0)
    b = train_sequences(xtr, xte, seqs, "lwf", CFG, seed=0)
    assert np.array_equal(a["acc_matrix"], b["acc_matrix"], equal_nan=True)
    assert a["acc_matrix"].shape == (90, 3, 3) and np.isnan(a["acc_matrix"][:, 0, 1:]).all()
    assert np.allclose(a["avg_acc"], a["seen_acc"].mean(axis=1))
    assert np.allclose(a["seen_acc"][:, 0], a["acc_matrix"][:, 0, 0])


def test_ncm_depends_on_order_only_through_the_seen_classes(toy):
    _, _, seqs = toy
    rng = np.random.default_rng(1)
    centres = 0.3 * rng.normal(size=(6, 20))           # overlapping classes
    xtr = centres[:, None, :] + rng.normal(size=(6, 40, 20))
    xte = centres[:, None, :] + rng.normal(size=(6, 30, 20))
    out = train_sequences(xtr, xte, seqs, "ncm", CFG)
    assert np.ptp(out["final_acc"]) < 1e-6         # all classes seen: the same classifier for every order
    assert np.ptp(out["avg_acc"]) > 0             # Eq. 1 still depends on the order


def test_finetune_forgets_and_replay_remembers(toy):
    xtr, xte, seqs = toy
    ft = train_sequences(xtr, xte, seqs, "finetune", CFG)
    ic = train_sequences(xtr, xte, seqs, "icarl", CFG)
    assert ft["acc_matrix"][:, 2, 0].mean() < 0.2       # catastrophic forgetting of task 1
    assert ic["acc_matrix"][:, 2, 0].mean() > ft["acc_matrix"][:, 2, 0].mean() + 0.3
    assert ic["final_acc"].mean() > ft["final_acc"].mean()


def test_bad_learner_arguments():
    x = np.zeros((4, 5, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="learner must be one of"):
        train_sequences(x, x, [[[0, 1], [2, 3]]], "gdumb")
    with pytest.raises(ValueError, match="sequences must have shape"):
        train_sequences(x, x, [[[0, 1, 2], [3, 4, 5]]], "finetune")
    with pytest.raises(ValueError, match="epochs"):
        LearnerConfig(epochs=0)


@pytest.mark.parametrize("learner", ["ewc", "icarl"])
def test_prefix_tree_sharing_equals_training_each_sequence(toy, learner):
    xtr, xte, seqs = toy
    pick = list(range(0, 90, 3))                        # 30 sequences, many sharing a first task
    shared = train_sequences(xtr, xte, seqs[pick], learner, CFG, seed=2)
    alone = train_sequences(xtr, xte, seqs[pick], learner, CFG, seed=2, share_prefixes=False)
    np.testing.assert_allclose(shared["acc_matrix"], alone["acc_matrix"], atol=1e-5)


def test_learner_config_applies_only_the_learners_keywords():
    from clkit.edge.learners import learner_config

    assert learner_config("lwf", CFG, {"lwf_lambda": 3.0}).lwf_lambda == 3.0
    assert learner_config("ncm", CFG, {}) is CFG
    with pytest.raises(ValueError, match="unknown keyword 'ewc_lambda'; lwf accepts"):
        learner_config("lwf", CFG, {"ewc_lambda": 1.0})


def test_learners_side_by_side_equal_one_after_another(toy):
    """run_learners on the CPU trains the learners in threads: same numbers, torch threads restored."""
    from clkit.edge.experiment import run_learners

    xtr, xte, seqs = toy
    data = {"x_train": xtr, "x_test": xte, "f_train": xtr, "f_test": xte}
    names = ["finetune", "ewc", "lwf", "ncm"]
    before = torch.get_num_threads()
    one = run_learners(data, seqs, names, CFG, seed=3, progress=False, workers=1)
    two = run_learners(data, seqs, names, CFG, seed=3, progress=False, workers=2)
    assert torch.get_num_threads() == before
    assert list(two) == names
    for name in names:
        assert np.array_equal(one[name]["acc_matrix"], two[name]["acc_matrix"], equal_nan=True), name
    with pytest.raises(ValueError, match="workers"):
        run_learners(data, seqs, names, CFG, progress=False, workers=0)
