"""Batched class-incremental learners: equal to a plain per-sequence loop, independent per sequence."""

import dataclasses

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


def plain_scheduled(xtr, xte, seq, cfg, seed):
    """Fine-tuning as PyCIL trains: a new torch.optim.SGD and MultiStepLR every task, the first task its own."""
    C, _, D = xtr.shape
    W1, b1, W2, b2 = init_params(D, cfg.hidden, C, seed)
    net = torch.nn.Sequential(torch.nn.Linear(D, cfg.hidden), torch.nn.ReLU(), torch.nn.Linear(cfg.hidden, C))
    with torch.no_grad():
        net[0].weight.copy_(W1.T), net[0].bias.copy_(b1), net[2].weight.copy_(W2.T), net[2].bias.copy_(b2)
    seen = torch.zeros(C, dtype=torch.bool)
    R = np.full((len(seq), len(seq)), np.nan)
    for t, task in enumerate(seq):
        first = t == 0
        opt = torch.optim.SGD(net.parameters(), lr=cfg.init_lr if first else cfg.lr, momentum=cfg.momentum,
                              weight_decay=cfg.init_weight_decay if first else cfg.weight_decay)
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, list(cfg.init_milestones if first else cfg.milestones),
                                                     gamma=cfg.lr_decay)
        seen[list(task)] = True
        xs = torch.as_tensor(np.concatenate([xtr[c] for c in task]))
        ys = torch.as_tensor(np.repeat(task, xtr.shape[1]))
        for epoch in range(cfg.init_epochs if first else cfg.epochs):
            order = batch_order(seed, prefix_code(seq[: t + 1], C), t, epoch, len(xs))
            for s in range(0, len(xs), cfg.batch_size):
                idx = order[s:s + cfg.batch_size]
                loss = torch.nn.functional.cross_entropy(net(xs[idx]).masked_fill(~seen, -1e9), ys[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
            sched.step()
        with torch.no_grad():
            for j in range(t + 1):
                xe = torch.as_tensor(np.concatenate([xte[c] for c in seq[j]]))
                ye = torch.as_tensor(np.repeat(seq[j], xte.shape[1]))
                R[t, j] = (net(xe).masked_fill(~seen, -1e9).argmax(1) == ye).float().mean().item()
    return R, net


SCHED = LearnerConfig(hidden=16, epochs=3, batch_size=16, lr=0.05, init_epochs=4, init_lr=0.2, init_milestones=[1, 3],
                      milestones=[2], lr_decay=0.5, weight_decay=2e-4, init_weight_decay=5e-3, reset_optimizer=True)


def test_pycil_schedule_equals_a_new_sgd_and_multisteplr_every_task(toy):
    """The schedule (first task init_epochs / init_lr / init_milestones / init_weight_decay, later tasks their own,
    a new SGD each task) is what torch.optim.SGD + MultiStepLR give when rebuilt per task, as PyCIL does."""
    xtr, xte, seqs = toy
    out = train_sequences(xtr, xte, seqs, "finetune", SCHED, seed=3)
    for l in (0, 50):
        np.testing.assert_allclose(out["acc_matrix"][l], plain_scheduled(xtr, xte, seqs[l], SCHED, 3)[0], atol=1e-6)
    # the prefix tree shares the first task's 200-epoch-like training: alone or together, the same numbers
    alone = train_sequences(xtr, xte, seqs[[7, 63]], "finetune", SCHED, seed=3)
    np.testing.assert_allclose(alone["acc_matrix"], out["acc_matrix"][[7, 63]], atol=1e-6)


def test_schedule_on_a_strategy_equals_the_plain_loop(toy):
    """A plugin Strategy (clkit's naive fine-tuning on the same MLP) under the schedule: the weights after two
    tasks equal a plain loop with a new SGD + MultiStepLR per task, drawing the strategy's batch orders."""
    from clkit.edge.learners import scheduled_train_task
    from clkit.strategies import Strategy, Task

    xtr, _, _ = toy
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(20, 8), torch.nn.ReLU(), torch.nn.Linear(8, 6))
    ref = [p.detach().clone() for p in net.parameters()]
    s = Strategy(net, lr=SCHED.lr, momentum=0.9, weight_decay=SCHED.weight_decay, epochs=SCHED.epochs,
                 batch_size=16, seed=5)
    tasks = [Task(torch.as_tensor(np.concatenate(xtr[[a, b]])), torch.as_tensor(np.repeat([a, b], 40)), task_id=t,
                  classes=(a, b)) for t, (a, b) in enumerate([(0, 1), (2, 3)])]
    for t, task in enumerate(tasks):
        assert len(scheduled_train_task(s, task, t, SCHED)) == SCHED.task_epochs(t)
    plain = torch.nn.Sequential(torch.nn.Linear(20, 8), torch.nn.ReLU(), torch.nn.Linear(8, 6))
    with torch.no_grad():
        for p, r in zip(plain.parameters(), ref):
            p.copy_(r)
    g = torch.Generator().manual_seed(5)
    for t, task in enumerate(tasks):
        first = t == 0
        opt = torch.optim.SGD(plain.parameters(), lr=SCHED.init_lr if first else SCHED.lr, momentum=0.9,
                              weight_decay=SCHED.init_weight_decay if first else SCHED.weight_decay)
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, list(SCHED.init_milestones if first else SCHED.milestones),
                                                     gamma=SCHED.lr_decay)
        for _ in range(SCHED.task_epochs(t)):
            perm = torch.randperm(len(task.y), generator=g)
            for i in range(0, len(perm), 16):
                idx = perm[i:i + 16]
                loss = torch.nn.functional.cross_entropy(plain(task.x[idx]), task.y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
            sched.step()
    for a, b in zip(s.model.parameters(), plain.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert s.lr == SCHED.lr and "batches" not in vars(s)     # the strategy is left as it was built


def test_multistep_rates_match_torch():
    cfg = LearnerConfig(lr=0.1, init_lr=0.3, init_milestones=[60, 120, 170], milestones=[80, 120], lr_decay=0.1,
                        init_epochs=200, epochs=170)
    for t, n in ((0, 200), (1, 170)):
        opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=cfg.task_lr(t, 0))
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, list(cfg.init_milestones if t == 0 else cfg.milestones),
                                                     gamma=0.1)
        for e in range(n):
            assert cfg.task_lr(t, e) == pytest.approx(opt.param_groups[0]["lr"], rel=1e-12)
            opt.step()
            sched.step()


def test_schedule_fields_are_checked():
    for kw, match in [({"milestones": [80, 60]}, "milestones must be strictly increasing"),
                      ({"init_epochs": 0}, "init_epochs"), ({"lr_decay": 0}, "lr_decay"),
                      ({"icarl_classifier": "ncm"}, "icarl_classifier")]:
        with pytest.raises(ValueError, match=match):
            LearnerConfig(**kw)
    with pytest.raises(TypeError, match="milestones must be a list"):
        LearnerConfig(milestones=80)
    with pytest.raises(TypeError, match="reset_optimizer must be a bool"):
        LearnerConfig(reset_optimizer="yes")


def test_icarl_head_classifier_scores_with_the_heads_logits(toy):
    """icarl_classifier="head" (PyCIL's reported accuracy) trains exactly as "nme" and predicts by the logits:
    on the first task (no memory yet, no distillation) iCaRL's loss is fine-tuning's, so its head accuracies
    equal fine-tuning's; NME's differ."""
    xtr, xte, seqs = toy
    cfg = LearnerConfig(hidden=16, epochs=2, batch_size=16, lr=0.05, memory_per_class=5)
    ft = train_sequences(xtr, xte, seqs[:3], "finetune", cfg, seed=2)["acc_matrix"][:, 0, 0]
    head = train_sequences(xtr, xte, seqs[:3], "icarl", dataclasses.replace(cfg, icarl_classifier="head"),
                           seed=2)["acc_matrix"][:, 0, 0]
    np.testing.assert_allclose(head, ft, atol=1e-6)


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
