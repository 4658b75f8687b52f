"""Notebook 02's two settings of the pre-trained ViT methods (clkit.edge.protocol): ``paper`` gives L2P,
CODA-Prompt, HiDe-Prompt, EASE and MOS the EDGE paper's pre-trained line (App. E.1.1: SGD, lr 0.1, weight decay
5e-4, x0.1 at epochs 80 / 120 / 150, 170 epochs, batch 128; momentum 0.9, PyCIL / PILOT's), ``authors`` their
released configs; read back from each constructed strategy, its optimizer and its per-epoch rates."""

import math

import pytest
import torch
from strategy_helpers import assert_trains_on_meta

from clkit.edge.learner_config import LearnerConfig, split_schedule
from clkit.edge.protocol import PILOT, SETTINGS, VIT_PAPER, protocol_learner_kwargs
from clkit.models.vit import vit_backbone
from clkit.plugins import resolve_strategy
from clkit.strategies import Task
from clkit.strategies._vit_common import check_step_schedule, step_lr
from clkit.strategies.coda_prompt import cosine_lr

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VIT = ("l2p", "coda_prompt", "hide_prompt", "ease", "mos")
#: architecture and auxiliary-stage sizes only (a tiny ViT): none of the optimizer line's keys
SMALL = {"l2p": {"pool_size": 4, "prompt_length": 2, "top_k": 2},
         "coda_prompt": {"pool_size": 4, "prompt_length": 2},
         "hide_prompt": {"tii_epochs": 1, "ca_epochs": 1, "n_centroids": 2, "kmeans_iters": 2},
         "ease": {"ffn_num": 4}, "mos": {"ffn_num": 4, "ca_epochs": 1}}


def _build(name, protocol, device="cpu", **over):
    kw = protocol_learner_kwargs(protocol, "cifar100", [name], {name: {**SMALL[name], **over}}, num_tasks=2)[name]
    return resolve_strategy(name)(vit_backbone(num_classes=4, tiny=True, seed=0), device=device, **kw)


def _task(task_id=0, classes=(0, 1), n=4):
    g = torch.Generator().manual_seed(task_id)
    return Task(torch.randn(n, 3, 32, 32, generator=g), torch.tensor(list(classes) * (n // 2)), task_id=task_id)


def _rates(s, task, epochs=None):
    """Train ``task`` (one batch per epoch: 4 rows) recording every step's optimizer (kind, rates, weight decays,
    momenta); returns the epoch losses and the records."""
    seen, step = [], s.train_step

    def spy(x, y, t=None):
        opt = s.optimizer
        seen.append((type(opt).__name__, [g["lr"] for g in opt.param_groups],
                     [g["weight_decay"] for g in opt.param_groups], [g.get("momentum") for g in opt.param_groups]))
        return step(x, y, t)

    s.train_step = spy
    try:
        return s.train_task(task, epochs), seen
    finally:
        del s.train_step


def test_step_schedule_is_torchs_multisteplr_by_hand():
    """MultiStepLR([80, 120, 150], 0.1) on a 2-parameter model, stepped after each of 170 epochs: 0.1 until epoch
    80, then 0.01, after 120 0.001, after 150 1e-4; step_lr gives the same rate every epoch."""
    w = torch.nn.Parameter(torch.zeros(2))
    opt = torch.optim.SGD([w], lr=0.1, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[80, 120, 150], gamma=0.1)
    torch_rates = []
    for _ in range(170):
        torch_rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert torch_rates[79] == 0.1 and torch_rates[80] == pytest.approx(0.01, rel=1e-12)
    assert torch_rates[119] == pytest.approx(0.01) and torch_rates[120] == pytest.approx(0.001, rel=1e-12)
    assert torch_rates[150] == pytest.approx(1e-4, rel=1e-12) and torch_rates[169] == pytest.approx(1e-4)
    ours = [step_lr(0.1, e, (80, 120, 150), 0.1) for e in range(170)]
    assert ours == pytest.approx(torch_rates, rel=1e-12)


def test_paper_settings_are_the_texts_pretrained_line():
    """App. E.1.1 as written, for every ViT method: SGD 0.1, weight decay 5e-4, 80 / 120 / 150 by 0.1, 170, 128;
    momentum 0.9 (the text names none); HiDe-Prompt's TII / TAP keep the release's optimizer and batches."""
    assert VIT_PAPER == {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.0005,
                         "milestones": [80, 120, 150], "lr_decay": 0.1, "epochs": 170, "batch_size": 128}
    for name in VIT:
        p = SETTINGS["paper"][name]
        assert {k: p[k] for k in VIT_PAPER} == VIT_PAPER, name
        assert SETTINGS["authors"][name] == PILOT[name] and "milestones" not in PILOT[name]
    h = SETTINGS["paper"]["hide_prompt"]
    assert (h["tii_optimizer"], h["tii_batch_size"], h["ca_batch"], h["tii_ca_batch"]) == ("adam", 24, 120, 24)
    # the driver leaves milestones / lr_decay with each strategy (its own keywords): no driver schedule on top
    for name in VIT:
        cfg, kw = split_schedule(LearnerConfig(), dict(SETTINGS["paper"][name]), resolve_strategy(name))
        assert not cfg.scheduled and kw["milestones"] == [80, 120, 150] and kw["lr_decay"] == 0.1, name


@pytest.mark.parametrize("name", VIT)
def test_paper_line_reaches_the_strategy_and_its_optimizer(name):
    """One tiny task under ``paper``: 170 epochs, batch 128, SGD(momentum 0.9, weight decay 5e-4) at 0.1 times 0.1
    at each of 80 / 120 / 150 (the heads of HiDe-Prompt / MOS at their 0.1 ratio); a second task restarts it."""
    s = _build(name, "paper")
    assert (s.epochs, s.batch_size, s.lr, s.momentum, s.weight_decay) == (170, 128, 0.1, 0.9, 0.0005)
    assert (s.milestones, s.lr_decay, s._optimizer_spec) == ((80, 120, 150), 0.1, "sgd")
    history, seen = _rates(s, _task())
    assert len(history) == 170 and len(seen) == 170          # 4 rows, batch 128: one step per epoch
    ratio = {"hide_prompt": s.head_lr_ratio if name == "hide_prompt" else None,
             "mos": getattr(s, "head_lr_scale", None)}.get(name)
    for e, (kind, lrs, wds, moms) in enumerate(seen):
        expect = 0.1 * 0.1 ** sum(m <= e for m in (80, 120, 150))
        assert kind == "SGD" and set(wds) == {0.0005} and set(moms) == {0.9}, e
        assert lrs[0] == pytest.approx(expect, rel=1e-12), e
        if ratio is not None:
            assert lrs[1] == pytest.approx(expect * ratio, rel=1e-12), e
    assert seen[80][1][0] == pytest.approx(0.01) and seen[120][1][0] == pytest.approx(0.001)
    _, again = _rates(s, _task(1, (2, 3)), epochs=2)          # a new task: a new optimizer, the schedule from 0.1
    assert [r[1][0] for r in again] == pytest.approx([0.1, 0.1])


def test_hide_prompt_tii_keeps_the_release_under_paper():
    """HiDe-Prompt under ``paper``: WTP takes the text's line; TII stays Adam at tii_lr, weight decay 0, batch 24
    (``tii_optimizer`` / ``tii_batch_size``); by default TII follows the constructor's optimizer (as released)."""
    s = _build("hide_prompt", "paper")
    w = torch.nn.Parameter(torch.zeros(2))
    tii = s._tii_optim([{"params": [w], "lr": s.tii_lr}])
    assert isinstance(tii, torch.optim.Adam) and tii.param_groups[0]["weight_decay"] == 0.0
    assert tii.param_groups[0]["lr"] == pytest.approx(0.0005 * 24 / 256)
    assert s.tii_batch_size == 24 and s.ca_batch == 120 and s.tii_ca_batch == 24
    assert [len(b) for b in s._tii_batches(50)] == [24, 24, 2]
    a = _build("hide_prompt", "authors")
    assert a.tii_optimizer is None and a.tii_batch_size == a.batch_size == 24
    assert isinstance(a._tii_optim([{"params": [w], "lr": a.tii_lr}]), torch.optim.Adam)
    with pytest.raises(ValueError, match="tii_optimizer"):
        _build("hide_prompt", "authors", tii_optimizer="rmsprop")


@pytest.mark.parametrize("name", VIT)
def test_authors_keep_their_released_configs(name):
    """Under ``authors`` no step schedule: each method's own (L2P constant, CODA-Prompt its cosine_lr, HiDe-Prompt
    constant before epoch 31, EASE / MOS the cosine to 0) at its release's optimizer, rate and batch."""
    s = _build(name, "authors")
    cfg = PILOT[name]
    assert s.milestones is None and s._optimizer_spec == cfg["optimizer"]
    assert (s.lr, s.batch_size, s.epochs) == (pytest.approx(cfg["lr"]), cfg["batch_size"], cfg["epochs"])
    _, seen = _rates(s, _task(), epochs=4)
    kinds = {"adam": "Adam", "sgd": "SGD"}
    base = cfg["lr"]
    expect = {"l2p": [base] * 4, "hide_prompt": [base] * 4,
              "coda_prompt": [cosine_lr(base, e, 4) for e in range(4)],
              "ease": [base * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(4)],
              "mos": [base * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(4)]}[name]
    assert all(r[0] == kinds[cfg["optimizer"]] for r in seen)
    assert [r[1][0] for r in seen] == pytest.approx(expect, rel=1e-12)


@pytest.mark.parametrize("name", VIT)
def test_defaults_have_no_step_schedule_and_bad_milestones_are_refused(name):
    cls = resolve_strategy(name)
    small = {**SMALL[name], **({"n_tasks": 2} if name == "coda_prompt" else {})}
    s = cls(vit_backbone(num_classes=4, tiny=True, seed=0), **small)
    assert s.milestones is None and s.lr_decay == 0.1
    with pytest.raises(ValueError, match=r"milestones must be strictly increasing.*\[120, 80\]"):
        cls(vit_backbone(num_classes=4, tiny=True, seed=0), milestones=[120, 80], **small)
    with pytest.raises(TypeError, match="milestones"):
        cls(vit_backbone(num_classes=4, tiny=True, seed=0), milestones="80,120", **small)
    with pytest.raises(ValueError, match="lr_decay"):
        cls(vit_backbone(num_classes=4, tiny=True, seed=0), milestones=[2], lr_decay=0.0, **small)


def test_check_step_schedule_refusals():
    assert check_step_schedule((1, 5), 0.5) == ((1, 5), 0.5)
    with pytest.raises(ValueError, match="milestones"):
        check_step_schedule([0, 3], 0.1)
    with pytest.raises(TypeError, match="milestones"):
        check_step_schedule([1.5], 0.1)


@pytest.mark.parametrize("name", VIT)
def test_paper_line_trains_on_the_meta_device(name):
    """The step schedule under a device audit: SGD with milestones, two tasks, every tensor on ``meta``."""
    s = _build(name, "paper", device=torch.device("meta"), epochs=3, milestones=[1, 2])
    assert_trains_on_meta(s, (_task(0, (0, 1), 8), _task(1, (2, 3), 8)), 3)


def test_the_driver_passes_the_paper_schedule_to_each_task(monkeypatch):
    """Through the ground truth's driver (train_strategy_sequences, prefix tree): every task of every order
    starts a new SGD at 0.1 and steps at the milestones (cut here to 3 epochs, steps at 1 / 2)."""
    from clkit.edge import enumerate_sequences
    from clkit.edge.learners import train_strategy_sequences
    from clkit.strategies.ease import EASE

    g = torch.Generator().manual_seed(0)
    tmpl = torch.randn(4, 3, 32, 32, generator=g)
    xtr = (tmpl[:, None] + 0.3 * torch.randn(4, 4, 3, 32, 32, generator=g)).numpy()
    xte = (tmpl[:, None] + 0.3 * torch.randn(4, 2, 3, 32, 32, generator=g)).numpy()
    kw = protocol_learner_kwargs("paper", "cifar100", ["ease"], {"ease": {"epochs": 3, "milestones": [1, 2],
                                                                          "ffn_num": 4}}, num_tasks=2)["ease"]
    seen, step = [], EASE.train_step

    def spy(self, x, y, task=None):
        seen.append((type(self.optimizer).__name__, self.optimizer.param_groups[0]["lr"]))
        return step(self, x, y, task)

    monkeypatch.setattr(EASE, "train_step", spy)
    out = train_strategy_sequences(xtr, xte, enumerate_sequences(4, 2)[:2], EASE, LearnerConfig(epochs=1, lr=0.05),
                                   seed=0, strategy_kwargs=kw,
                                   model_factory=lambda in_features, num_classes: vit_backbone(
                                       num_classes=num_classes, tiny=True, seed=0))
    assert out["final_acc"].shape == (2,)
    assert [k for k, _ in seen] == ["SGD"] * 12   # two orders, no shared first task: 4 tasks x 3 epochs x 1 batch
    assert [lr for _, lr in seen] == pytest.approx([0.1, 0.01, 0.001] * 4, rel=1e-12)
