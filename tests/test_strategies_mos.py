"""MOS: known answers from the authors' code, the EMA reweighting, what is frozen and trained, learning on a tiny
ViT, determinism, the meta device, refusals."""

import copy

import pytest
import torch
from torch import nn

from clkit.models import MLP
from clkit.models.vit import ViTBackbone
from clkit.strategies.base import _REGISTRY, Task
from clkit.strategies.mos import MOS, MOSNet

from strategy_helpers import (assert_trains_on_meta, images as _images, pretrained_like as _pretrained_like,
                              tiny_vit as _vit, two_tasks)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# ----------------------------------------------------------------------------- known answers
#
# Made by /tmp/authors_mos/make_numbers.py (kept outside the repository) from AIGNLAI/EDGE at commit
# a60c1179cf762e8c1197ab876a3c06db3a49b639, PILOT tree: PILOT/models/mos.py's Learner (incremental_train, then
# _eval_cnn, then after_task, for two tasks) with PILOT/backbone/vit_mos.py's VisionTransformer (img 16, patch 8,
# dim 24, depth 2, 2 heads, mlp_ratio 4, qkv_bias, LayerNorm eps 1e-6, 6 classes; tuning_config as in
# PILOT/utils/inc_net.py get_backbone with ffn_num=4, adapter_momentum=0.1) and MOSNet built around it.
# Its weights are _recipe()'s (timm's qkv split into q/k/v_proj, mlp.fc1/fc2 renamed fc1/fc2); its adapters are set
# to the recipe's and their dropout to 0. Args: batch_size 4, init_lr 0.03, tuned_epoch 2, sgd, cosine, min_lr 0,
# weight_decay 5e-4, reg 0.1, ca_lr 0.005, crct_epochs 2, covariance, ensemble True; topk 1. The DataLoaders are
# replaced by an in-order batcher (no shuffle); the global torch RNG is seeded with 1234 at the entry of
# classifer_align. Recorded: ce + orth of each optimiser step (cross_entropy and orth_loss wrapped), gradient norms
# at each step (a step pre-hook), the head, prototypes (fc), class statistics, snapshots after each task, and the
# scores torch.topk receives in _eval_cnn. To re-run: cd /tmp/authors_mos && /work/main/.venv/bin/python
# make_numbers.py (it needs `git archive` of the PILOT folder there and a shim module for timm's moved weight_init).

D, DEPTH, R = 24, 2, 4
LOSSES = [0.851464985, 1.572783159, 3.63213536, 0.860580657, 1.463790408, 3.43561447, 0.851940783, 0.411659052,
          1.985502949, 0.790286622, 0.429207174, 1.857358923]
GRADS = {0: (0.07362192869186401, 0.0553029328584671, 3.5581893920898438),       # |dL/d down0.W|, |up1.W|, |head.W|
         6: (0.04923374205827713, 0.031078845262527466, 3.31825852394104),
         11: (0.15416781604290009, 0.061172448098659515, 5.015555381774902)}
AFTER = {0: dict(head_w_sum=-0.9182596802711487, head_w_norm=3.3096425533294678, fc_w_sum=-6.655116081237793,
                 snap_up1_sum=[1.0659451484680176], cur_down0_sum=0.1763753890991211,
                 mean_sums=[-2.4453001022338867, -1.9899364709854126, -2.2198781967163086],
                 cov_traces=[3.138941526412964, 3.7099874019622803, 3.7589569091796875]),
         1: dict(head_w_sum=-0.9181597232818604, head_w_norm=3.2754204273223877, fc_w_sum=-11.35849380493164,
                 snap_up1_sum=[1.0659451484680176, 1.065882921218872], cur_down0_sum=0.1723843812942505,
                 mean_sums=[-2.4453001022338867, -1.9899364709854126, -2.2198781967163086, -1.7653965950012207,
                            -1.3698698282241821, -1.568329095840454],
                 cov_traces=[3.138941526412964, 3.7099874019622803, 3.7589569091796875, 4.088193416595459,
                             4.406667709350586, 2.3005828857421875])}
EVAL0 = [[0.8000001, 0.7557235, 0.4442765], [0.9455907, 0.671816, 0.3825933], [0.6177591, 0.9405164, 0.4417246],
         [0.8992827, 0.7458619, 0.3548554]]
EVAL1 = [[0.3796648, 0.3777857, 0.2520897, 0.3662997, 0.3740113, 0.2501489],
         [0.4917559, 0.3917208, 0.2127791, 0.2828823, 0.3279276, 0.2929342],
         [0.3691447, 0.583895, 0.3176929, 0.2952664, 0.2356967, 0.1983042],
         [0.3002174, 0.3077599, 0.275491, 0.5633426, 0.2687802, 0.2844089],
         [0.4487637, 0.2728292, 0.1795346, 0.2699342, 0.6619024, 0.1670359],
         [0.229676, 0.387011, 0.4015822, 0.3380444, 0.2405033, 0.4031831],
         [0.4613331, 0.3850533, 0.2097097, 0.304775, 0.4251907, 0.2139383],
         [0.3356625, 0.2954792, 0.3113949, 0.5136043, 0.2678121, 0.2760471]]


def _recipe():
    """Fixed weights and data (the same recipe as make_numbers.py): a tiny timm ViT, a head, adapters, images."""
    import timm

    g = torch.Generator().manual_seed(0)
    vit = timm.create_model("vit_base_patch16_224", pretrained=False, num_classes=0, img_size=16, patch_size=8,
                            embed_dim=D, depth=DEPTH, num_heads=2)
    with torch.no_grad():
        for name, p in sorted(vit.named_parameters()):
            if "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
        head = nn.Linear(D, 6)
        head.weight.copy_(0.3 * torch.randn(head.weight.shape, generator=g))
        head.bias.copy_(0.1 * torch.randn(head.bias.shape, generator=g))
        adapters = [dict(down_w=0.3 * torch.randn(R, D, generator=g), down_b=0.1 * torch.randn(R, generator=g),
                         up_w=0.3 * torch.randn(D, R, generator=g), up_b=0.1 * torch.randn(D, generator=g))
                    for _ in range(DEPTH)]
    templates = torch.randn(6, 3, 16, 16, generator=g)
    y = torch.arange(6).repeat_interleave(4)
    x = templates[y] + 0.5 * torch.randn(len(y), 3, 16, 16, generator=g)
    yt = torch.tensor([0, 1, 2, 3, 4, 5, 0, 3])
    xt = templates[yt] + 0.5 * torch.randn(len(yt), 3, 16, 16, generator=g)
    return vit, head, adapters, x, y, xt, yt


def test_known_answers_from_the_authors_code():
    vit, head, adapters, x, y, xt, yt = _recipe()
    s = MOS(ViTBackbone(vit, head, "recipe"), ffn_num=R, batch_size=4, epochs=2, ca_epochs=2, adapter_dropout=0.0)
    with torch.no_grad():
        for a, w in zip(s.model.cur_adapter, adapters):
            a.down_proj.weight.copy_(w["down_w"]); a.down_proj.bias.copy_(w["down_b"])
            a.up_proj.weight.copy_(w["up_w"]); a.up_proj.bias.copy_(w["up_b"])
    s.batches = lambda n, device=None: [torch.arange(i, min(i + 4, n)) for i in range(0, n, 4)]   # in order
    grads, losses = [], []
    make, step = s.make_optimizer, s.train_step

    def make_recording(params=None):
        opt = make(params)
        m = s.model
        opt.register_step_pre_hook(lambda *_: grads.append((
            float(m.cur_adapter[0].down_proj.weight.grad.norm()), float(m.cur_adapter[1].up_proj.weight.grad.norm()),
            float(m.head.weight.grad.norm()))))
        return opt

    def step_recording(*a, **k):
        out = step(*a, **k)
        losses.append(float(out))
        return out
    s.make_optimizer, s.train_step = make_recording, step_recording
    rel = dict(rel=1e-5, abs=1e-6)
    for t, expected in ((0, EVAL0), (1, EVAL1)):
        keep = (y >= 3 * t) & (y < 3 * t + 3)
        if t == 1:
            s.generator.manual_seed(1234)    # the authors' global seed at classifer_align (batches draw nothing here)
        s.train_task(Task(x[keep], y[keep], task_id=t))
        out = s.predict(xt[yt < 3 * (t + 1)])
        assert out[:, :3 * (t + 1)].flatten().tolist() == pytest.approx(sum(expected, []), **rel)
        assert torch.isinf(out[:, 3 * (t + 1):]).all()
        m, a = s.model, AFTER[t]
        assert float(m.head.weight.detach().sum()) == pytest.approx(a["head_w_sum"], **rel)
        assert float(m.head.weight.detach().norm()) == pytest.approx(a["head_w_norm"], **rel)
        assert float(m.protos.sum()) == pytest.approx(a["fc_w_sum"], **rel)
        assert [float(sn[1].up_proj.weight.sum()) for sn in m.adapter_list] == pytest.approx(a["snap_up1_sum"], **rel)
        assert float(m.cur_adapter[0].down_proj.weight.detach().sum()) == pytest.approx(a["cur_down0_sum"], **rel)
        assert [float(s.cls_mean[c].sum()) for c in range(3 * (t + 1))] == pytest.approx(a["mean_sums"], **rel)
        assert [float(s.cls_cov[c].trace()) for c in range(3 * (t + 1))] == pytest.approx(a["cov_traces"], **rel)
    assert losses == pytest.approx(LOSSES, **rel)
    for i, g in GRADS.items():
        assert grads[i] == pytest.approx(g, **rel)


# ----------------------------------------------------------------------------- mechanics

def _stream(n=16, seed=0):
    return two_tasks(n, seed)


def _mos(model=None, **kw):
    kw = {"ffn_num": 4, "epochs": 1, "batch_size": 8, "ca_epochs": 1, **kw}
    return MOS(model or _vit(), **kw)


def test_reweight_is_the_ema_towards_the_mean_of_earlier_snapshots():
    net = MOSNet(_vit().features, _vit().head, 3, 0.1, torch.Generator().manual_seed(0))
    with torch.no_grad():
        for a in net.cur_adapter:
            a.up_proj.weight.fill_(1.0)
    net.snapshot()                                    # S_0 = snapshot 0
    with torch.no_grad():
        for a in net.cur_adapter:
            a.up_proj.weight.fill_(3.0)
    net.snapshot()                                    # S_1 = snapshot 0 + snapshot 1
    assert float(net.adapter_sums[1][0].up_proj.weight[0, 0]) == 4.0
    assert not any(p.requires_grad for p in net.adapter_list.parameters())
    with torch.no_grad():
        for a in net.cur_adapter:
            a.up_proj.weight.fill_(5.0)
    net.reweight(net.cur_adapter, 2)                  # 0.9 * 5 + 0.1 * 4 / 2
    assert float(net.cur_adapter[1].up_proj.weight[0, 0].detach()) == pytest.approx(4.7)
    net.reweight(net.cur_adapter, 0)                  # idx 0: unchanged
    assert float(net.cur_adapter[1].up_proj.weight[0, 0].detach()) == pytest.approx(4.7)


def test_authors_inference_moves_the_later_snapshots_step_mode_does_not():
    ta, tb = _stream()
    xt, _ = _images(4, [0, 1, 2, 3], seed=9)
    for mode, changes in (("authors", True), ("step", False)):
        s = _mos(reweight=mode)
        s.train_task(ta)
        s.train_task(tb)
        snap0 = copy.deepcopy(s.model.adapter_list[0].state_dict())
        snap1 = copy.deepcopy(s.model.adapter_list[1].state_dict())
        s.predict(xt)
        now1 = s.model.adapter_list[1].state_dict()
        assert all(torch.equal(v, s.model.adapter_list[0].state_dict()[k]) for k, v in snap0.items())
        assert any(not torch.equal(v, now1[k]) for k, v in snap1.items()) == changes, mode


def test_vit_frozen_adapters_and_head_trained_snapshots_stored():
    s = _mos()
    vit0 = {k: v.clone() for k, v in s.model.vit.state_dict().items()}
    head0 = s.model.head.weight.detach().clone()
    up0 = s.model.cur_adapter[0].up_proj.weight.detach().clone()
    assert float(up0.abs().sum()) == 0.0                         # "lora" init: up projection zero
    ta, tb = _stream()
    s.train_task(ta)
    s.train_task(tb)
    for k, v in s.model.vit.state_dict().items():
        assert torch.equal(v, vit0[k]), k
    assert not torch.equal(s.model.head.weight, head0)
    assert not torch.equal(s.model.cur_adapter[0].up_proj.weight, up0)
    assert len(s.model.adapter_list) == 2 and s.n_tasks == 2 and s.class_order == [0, 1, 2, 3]
    assert s.cls2task.tolist() == [0, 0, 1, 1]
    assert set(s.cls_mean) == {0, 1, 2, 3} and s.cls_cov[0].shape == (32, 32)
    assert {id(p) for g in s.optimizer.param_groups for p in g["params"]} == \
        {id(p) for p in list(s.model.cur_adapter.parameters()) + list(s.model.head.parameters())}
    assert [g["initial_lr"] for g in s.optimizer.param_groups] == pytest.approx([0.03, 0.003])
    assert s.predict(_images(3, [0], seed=3)[0]).shape == (3, 4)


def test_learns_two_tasks_above_chance():
    xa, ya = _images(48, [0, 1], seed=0)
    xb, yb = _images(48, [2, 3], seed=1)
    xt, yt = _images(64, [0, 1, 2, 3], seed=2)
    s = MOS(_pretrained_like(), ffn_num=4, epochs=3, batch_size=16, ca_epochs=3)
    s.train_task(Task(xa, ya, task_id=0))
    s.train_task(Task(xb, yb, task_id=1))
    acc = s.evaluate(Task(xt, yt, task_id=1))
    old = s.evaluate(Task(*_images(32, [0, 1], seed=3), task_id=0))
    assert acc > 0.6 and old > 0.6, (acc, old)          # chance: 0.25 over the four classes


def test_same_seed_same_run_other_seed_differs_global_generator_plays_no_part():
    ta, tb = _stream()
    xt, _ = _images(8, [0, 1, 2, 3], seed=9)

    def run(seed):
        s = _mos(seed=seed)
        h = [s.train_task(t) for t in (ta, tb)]
        return s, h, s.predict(xt)

    torch.manual_seed(0)
    a, ha, pa = run(1)
    torch.manual_seed(123)
    b, hb, pb = run(1)
    c, hc, pc = run(2)
    assert ha == hb and ha != hc
    assert torch.equal(pa, pb) and not torch.equal(pa, pc)
    d = copy.deepcopy(a)
    assert torch.equal(d.predict(xt), a.predict(xt))


def test_trains_on_a_non_cpu_device():
    meta = torch.device("meta")
    s = MOS(_vit(), ffn_num=4, epochs=2, batch_size=8, ca_epochs=1, device=meta)
    ta, tb = _stream()
    assert_trains_on_meta(s, (ta, tb), 2)


def test_registered_defaults_and_task_boundaries():
    assert _REGISTRY["mos"] is MOS and MOS.needs_vit_model
    d = MOS(_vit())
    assert (d.ffn_num, d.adapter_momentum, d.reg, d.ca_epochs, d.ca_lr, d.ensemble, d.adapter_dropout,
            d.head_lr_scale, d.scheduler, d.reweight) == (16, 0.1, 0.1, 30, 0.005, True, 0.1, 0.1, "cosine", "authors")
    assert (d.lr, d.momentum, d.weight_decay, d.epochs, d.batch_size) == (0.03, 0.9, 5e-4, 20, 48)
    with pytest.raises(ValueError, match="needs task boundaries"):
        d.observe(torch.zeros(2, 3, 32, 32), torch.tensor([0, 1]))


# ----------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("model, match", [
    (MLP(6, 4, hidden=(8,)), "model must be a clkit.models.vit.ViTBackbone.*MLP"),
    ("vit", "model must be a torch.nn.Module, got str"),
])
def test_wrong_models_are_refused(model, match):
    with pytest.raises(TypeError, match=match):
        MOS(model)


@pytest.mark.parametrize("kwargs, match", [
    (dict(ffn_num=0), "ffn_num"), (dict(adapter_momentum=1.5), "adapter_momentum"), (dict(reg=-1.0), "reg"),
    (dict(ca_epochs=-1), "ca_epochs"), (dict(ca_lr=0.0), "ca_lr"), (dict(ca_samples=1), "ca_samples"),
    (dict(ensemble=1), "ensemble"), (dict(adapter_dropout=1.0), "adapter_dropout"),
    (dict(scheduler="step"), "scheduler"), (dict(reweight="never"), "reweight"),
    (dict(loss="mse"), "classification only"), (dict(optimizer="rmsprop"), "optimizer"),
    (dict(seed=1.5), "seed must be an integer"),
])
def test_bad_parameters_are_refused_naming_them(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        MOS(_vit(), **kwargs)


def test_labels_outside_the_head_are_refused():
    s = _mos()
    with pytest.raises(ValueError, match=r"class\(es\) \[4\].*allowed: 0 \.\.\. 3"):
        s.train_task(Task(torch.zeros(2, 3, 32, 32), torch.tensor([0, 4])))
