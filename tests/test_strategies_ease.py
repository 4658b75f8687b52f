"""EASE: known answers from the authors' code, the adapter ViT, learning on a tiny ViT, determinism,
frozen parts, the prototype complement, masks, the meta device, refusals."""

import copy

import pytest
import torch
from torch import nn

from clkit.models import MLP
from clkit.models.vit import ViTBackbone, vit_backbone
from clkit.models.vit_adapter import Adapter, AdapterStack, adapted_block, adapted_features
from clkit.strategies import Task
from clkit.strategies.base import _REGISTRY
from clkit.strategies.ease import EASE, complement_prototypes, reweight_logits

from strategy_helpers import assert_trains_on_meta, images as _images

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# ----------------------------------------------------------------------------- known answers
# Made by /tmp/authors_ease/make_numbers.py (re-run: export the PILOT tree of AIGNLAI/EDGE at commit
# a60c1179cf762e8c1197ab876a3c06db3a49b639 with `git archive HEAD PILOT | tar -x -C /tmp/authors_ease`, then
# `cd /tmp/authors_ease/PILOT && /work/main/.venv/bin/python ../make_numbers.py`). It drives the authors'
# PILOT/models/ease.py:Learner for 3 tasks of 2 classes (incremental_train -> _train -> _init_train -> replace_fc ->
# solve_sim_reset, eval, after_task) with PILOT/utils/inc_net.py:EaseNet, the authors' adapter ViT
# PILOT/backbone/vit_ease.py:VisionTransformer built tiny (16 px, patch 8, dim 24, depth 2, 2 heads, ffn_num 8) and
# PILOT/backbone/linears.py:EaseCosineLinear (forward_reweight's out_dim=768 default set to 24, EaseNet.out_dim
# likewise). Config as exps/ease.json but init_cls = increment = 2, 2 epochs, batch size 8 (one batch per task),
# lr 0.025, wd 5e-4, cosine, min_lr 0, alpha 0.1. Weights: the ViT from _timm_weights() (split into their q/k/v);
# each task's adapters and proxy head overwritten at the start of the task by _adapter_weights / _proxy_weight;
# adapter dropout 0. Data: _data(). The authors' label k is clkit's class ORDER[k] (a shuffled class order).
# Recorded: the loss of every step, the gradient norms at each task's first step (adapter block 0 down.w, down.b,
# up.w, up.b, block 1 the same, proxy weight, proxy sigma), the eval logits on 6 test images after each task,
# ||P[c, j]|| and P[c, j] @ v (v = randn(24), seed 9) of the prototype matrix fc.weight after each task, the
# trained adapters' parameter norms, the last proxy sigma.
AUTH_LOSS = [0.644122, 0.6438166, 0.6822749, 0.681181, 0.7125885, 0.7119372]
AUTH_GRAD_FIRST_STEP = [[0.01764882, 0.001327705, 0.01387592, 0.001341177, 0.007543126, 0.0001765192, 0.01106631, 0.000246385,
  0.09789129, 0.04423006],
 [0.01938409, 0.001374734, 0.01036528, 0.0009700825, 0.01724439, 0.0004575313, 0.01051402, 0.0002580477,
  0.2068542, 0.009063433],
 [0.01538465, 0.0009381264, 0.01354033, 0.001921878, 0.008179029, 0.0002216341, 0.01292345, 0.0007837496,
  0.1539664, 0.04129969]]
AUTH_LOGITS = [[[0.921299, 0.8381467], [0.8255791, 0.939564], [0.6043046, 0.6901633], [0.6317093, 0.6710143],
  [0.8220502, 0.7463834], [0.8519691, 0.8189257]],
 [[0.9947716, 0.9116742, 0.8145369, 0.6318194], [0.9134244, 1.027414, 0.8513625, 0.8575236],
  [0.6899766, 0.7759397, 1.026008, 0.6532097], [0.7053977, 0.7445412, 0.3889539, 1.011384],
  [0.8956839, 0.8201146, 0.8993083, 0.5564508], [0.93501, 0.9019077, 0.6789768, 0.9227278]],
 [[0.9981923, 0.9151452, 0.8152348, 0.6403298, 0.7864319, 0.839259],
  [0.9153654, 1.029529, 0.8566863, 0.8636233, 0.872596, 0.9924949],
  [0.675759, 0.7619335, 1.012667, 0.6602196, 0.6466716, 0.7320651],
  [0.7112412, 0.7503272, 0.4108963, 1.0057, 0.8863548, 0.7943143],
  [0.8952339, 0.8193354, 0.8937271, 0.5667253, 0.8459663, 0.6668238],
  [0.94198, 0.9090265, 0.6938674, 0.9264469, 0.9057788, 1.001038]]]
AUTH_PROTO_NORMS = [[[4.806795], [4.782191]],
 [[4.806795, 4.090999], [4.782191, 4.090008], [4.508298, 4.475771], [4.795625, 4.766975]],
 [[4.806795, 4.129498, 4.335957], [4.782191, 4.122494, 4.333488], [4.508298, 4.475771, 4.334037],
  [4.795625, 4.766975, 4.336333], [4.576779, 4.637383, 4.620931], [4.490307, 4.430758, 4.502993]]]
AUTH_PROTO_DOT = [[[-9.009303], [-9.278533]],
 [[-9.009302, -8.335868], [-9.278532, -8.32537], [-5.587534, -6.278265], [-10.54528, -10.29488]],
 [[-9.009302, -9.067969, -9.345922], [-9.278532, -9.072638, -9.403333], [-5.587534, -6.278265, -9.38865],
  [-10.54528, -10.29488, -9.338627], [-8.115362, -8.369648, -8.036798], [-10.50745, -11.0966, -10.68314]]]
AUTH_ADAPTER_NORMS = [[[4.530516, 0.8541173, 4.316743, 1.314156], [4.061976, 0.6879119, 3.752214, 1.519834]],
 [[4.277297, 0.5201397, 4.200529, 1.268956], [4.277042, 0.9950958, 4.274659, 1.483204]],
 [[3.755316, 0.9342093, 4.44014, 1.421727], [3.856901, 1.220437, 3.637732, 1.184001]]]
AUTH_PROXY_SIGMA = 0.9979722

D, DEPTH, HEADS, IMG, PATCH, R = 24, 2, 2, 16, 8, 8
ORDER = [3, 0, 5, 1, 2, 4]
ADAPTER_KEYS = ("down_proj.weight", "down_proj.bias", "up_proj.weight", "up_proj.bias")


def _timm_vit():
    from timm.models.vision_transformer import VisionTransformer

    return VisionTransformer(img_size=IMG, patch_size=PATCH, embed_dim=D, depth=DEPTH, num_heads=HEADS, num_classes=0)


def _timm_weights(vit):
    g = torch.Generator().manual_seed(0)
    sd = {}
    for name, p in sorted(vit.state_dict().items()):
        t = torch.randn(p.shape, generator=g)
        sd[name] = 1 + 0.1 * t if ("norm" in name and name.endswith("weight")) else 0.3 * t
    return sd


def _adapter_weights(task, block):
    g = torch.Generator().manual_seed(500 + 10 * task + block)
    return {"down_proj.weight": 0.3 * torch.randn(R, D, generator=g), "down_proj.bias": 0.3 * torch.randn(R, generator=g),
            "up_proj.weight": 0.3 * torch.randn(D, R, generator=g), "up_proj.bias": 0.3 * torch.randn(D, generator=g)}


def _proxy_weight(task, n):
    return 0.3 * torch.randn(n, D, generator=torch.Generator().manual_seed(700 + task))


def _data():
    templates = torch.randn(6, 3, IMG, IMG, generator=torch.Generator().manual_seed(100))
    g = torch.Generator().manual_seed(1)
    y = torch.arange(6).repeat_interleave(4)
    x = templates[y] + 0.5 * torch.randn(24, 3, IMG, IMG, generator=g)
    xt = templates[torch.arange(6)] + 0.5 * torch.randn(6, 3, IMG, IMG, generator=torch.Generator().manual_seed(2))
    return x, y, xt


class _Recipe(EASE):
    """EASE whose new adapters and proxy heads take the recipe's weights; records the first step's gradients."""

    def before_task(self, task):
        super().before_task(task)
        t = len(self.task_order) - 1
        with torch.no_grad():
            for b, ad in enumerate(self.model.adapters[-1]):
                for k, v in _adapter_weights(t, b).items():
                    dict(ad.named_parameters())[k].copy_(v)
            self.model.proxy.weight.copy_(_proxy_weight(t, self.model.proxy.weight.shape[0]))
        self.grads = []
        params = [p for ad in self.model.adapters[-1] for p in ad.parameters()] + \
            [self.model.proxy.weight, self.model.proxy.sigma]
        self.optimizer.register_step_pre_hook(
            lambda o, a, k: self.grads.append([float(p.grad.norm()) for p in params]))


def _known_answer_run():
    vit = _timm_vit()
    vit.load_state_dict(_timm_weights(vit))
    s = _Recipe(ViTBackbone(vit, nn.Linear(D, 6), "test"), ffn_num=R, adapter_dropout=0.0, epochs=2, batch_size=8)
    x, y, xt = _data()
    order = torch.tensor(ORDER)
    out = {"loss": [], "grad": [], "logits": [], "norms": [], "dot": [], "adapter": []}
    v = torch.randn(D, generator=torch.Generator().manual_seed(9))
    for t in range(3):
        rows = (y == 2 * t) | (y == 2 * t + 1)
        task = Task(x[rows], order[y[rows]], task_id=t, classes=(ORDER[2 * t], ORDER[2 * t + 1]))
        out["loss"] += s.train_task(task)
        out["grad"].append(s.grads[0])
        seen = order[: 2 * t + 2]
        out["logits"].append(s.predict(xt)[:, seen])
        P = s.model.protos[seen]
        out["norms"].append(P.norm(dim=2))
        out["dot"].append(P @ v)
        out["adapter"].append(torch.tensor([[float(p.detach().norm()) for p in ad.parameters()] for ad in s.model.adapters[-1]]))
    return s, out


def test_known_answers_from_the_authors_code():
    s, out = _known_answer_run()
    close = dict(rel=1e-5, abs=1e-7)
    assert out["loss"] == pytest.approx(AUTH_LOSS, **close)
    for t in range(3):
        assert out["grad"][t] == pytest.approx(AUTH_GRAD_FIRST_STEP[t], rel=1e-5, abs=1e-7)
        torch.testing.assert_close(out["logits"][t], torch.tensor(AUTH_LOGITS[t]), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(out["norms"][t], torch.tensor(AUTH_PROTO_NORMS[t]), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(out["dot"][t], torch.tensor(AUTH_PROTO_DOT[t]), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(out["adapter"][t], torch.tensor(AUTH_ADAPTER_NORMS[t]), rtol=1e-5, atol=1e-6)
    assert float(s.model.proxy.sigma.detach()) == pytest.approx(AUTH_PROXY_SIGMA, rel=1e-5)
    # the predictions: argmax over the seen classes agrees with the authors' argmax, mapped through ORDER
    assert s.predict(_data()[2]).argmax(1).tolist() == [ORDER[int(k)] for k in torch.tensor(AUTH_LOGITS[2]).argmax(1)]


# ----------------------------------------------------------------------------- the adapter ViT and the head

def test_adapter_block_is_the_authors_formula_and_a_new_adapter_is_the_identity():
    vit = _timm_vit().eval()
    vit.load_state_dict(_timm_weights(vit))
    x = torch.randn(2, 3, IMG, IMG, generator=torch.Generator().manual_seed(3))
    new = AdapterStack(DEPTH, D, R, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(adapted_features(vit, x, new), vit(x))          # lora init: up_proj zero
    ad = Adapter(D, R, dropout=0.0)
    with torch.no_grad():
        for k, v in _adapter_weights(0, 0).items():
            dict(ad.named_parameters())[k].copy_(v)
    blk, h = vit.blocks[0], torch.randn(2, 5, D, generator=torch.Generator().manual_seed(4))
    mid = h + blk.attn(blk.norm1(h))
    hand = mid + blk.mlp(blk.norm2(mid)) + 0.1 * ad.up_proj(torch.relu(ad.down_proj(mid)))
    torch.testing.assert_close(adapted_block(blk, h, ad), hand)
    seq = blk.mlp(blk.norm2(mid))
    torch.testing.assert_close(adapted_block(blk, h, ad, mode="sequential"),
                               mid + seq + 0.1 * ad.up_proj(torch.relu(ad.down_proj(seq))))
    # dropout: training mode only, masks from the given generator, kept units scaled by 1 / (1 - p)
    drop = Adapter(D, R, dropout=0.5, generator=torch.Generator().manual_seed(0)).train()
    g1, g2 = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    assert torch.equal(drop(mid, g1), drop(mid, g2)) and torch.equal(drop.eval()(mid), Adapter.forward(drop, mid))


def test_reweight_and_complement_follow_the_authors_formulas():
    g = torch.Generator().manual_seed(0)
    feats, protos = torch.randn(4, 3, 5, generator=g), torch.randn(6, 3, 5, generator=g)
    toc = torch.tensor([0, 0, 1, 1, 2, -1])
    out = reweight_logits(feats, protos, toc, 0.1)
    cos = torch.nn.functional.cosine_similarity(feats[:, None], protos[None], dim=3)   # (N, K, T)
    for c in range(5):
        w = torch.full((3,), 0.1 / 2)
        w[toc[c]] = 1.0
        torch.testing.assert_close(out[:, c], (cos[:, c] * w).sum(1))
    assert out[:, 5].isinf().all()
    # complement: class 0 of task 0 in subspaces 1 and 2, by the authors' double loop
    p = torch.randn(5, 3, 4, generator=g)
    classes = [torch.tensor([0]), torch.tensor([1, 2]), torch.tensor([3, 4])]
    done = complement_prototypes(p.clone(), classes)
    for j, later in ((1, [1, 2, 3, 4]), (2, [3, 4])):
        sim = torch.softmax(torch.stack([torch.cosine_similarity(p[0, 0], p[l, 0], dim=0) for l in later]), 0)
        torch.testing.assert_close(done[0, j], sum(s * p[l, j] for s, l in zip(sim, later)))
    assert torch.equal(done[1:3, :2], p[1:3, :2]) and torch.equal(done[3:], p[3:]) and torch.equal(done[:, 0], p[:, 0])


# ----------------------------------------------------------------------------- the strategy

def _stream(n=16, seed=0, splits=((0, 1), (2, 3))):
    return [Task(*_images(n, list(c), seed=seed + i), task_id=i) for i, c in enumerate(splits)]


def _ease(seed=0, **kw):
    return EASE(vit_backbone(num_classes=6, tiny=True, seed=0), **{"ffn_num": 8, "epochs": 1, "batch_size": 16,
                                                                     "seed": seed, **kw})


def test_learns_three_tasks_above_chance():
    tasks = _stream(n=24, splits=((0, 1), (2, 3), (4, 5)))
    s = _ease(epochs=3, lr=0.05)
    for t in tasks:
        s.train_task(t)
    xt, yt = _images(60, [0, 1, 2, 3, 4, 5], seed=50)
    acc = s.evaluate(Task(xt, yt))
    assert acc > 0.5, acc                               # chance: 1/6
    assert len(s.model.adapters) == 3 and s.model.protos.shape == (6, 3, 32)
    assert s.model.task_of_class.tolist() == [0, 0, 1, 1, 2, 2]


def test_frozen_parts_stay_and_only_the_current_adapter_and_proxy_train():
    ta, tb = _stream()
    s = _ease(lr=0.5)
    vit0 = copy.deepcopy(s.model.vit.state_dict())
    s.train_task(ta)
    a0 = copy.deepcopy(s.model.adapters[0].state_dict())
    proto0 = s.model.protos[[0, 1], 0].clone()
    s.train_task(tb)
    trainable = {n for n, p in s.model.named_parameters() if p.requires_grad}
    assert trainable == {n for n, _ in s.model.named_parameters() if n.startswith(("adapters.1.", "proxy."))}
    assert all(torch.equal(v, s.model.vit.state_dict()[k]) for k, v in vit0.items())
    assert all(torch.equal(v, s.model.adapters[0].state_dict()[k]) for k, v in a0.items())
    assert torch.equal(s.model.protos[[0, 1], 0], proto0)          # an old class keeps its own prototype
    s.train_mode()
    assert not s.model.vit.training and not s.model.adapters[0].training and s.model.adapters[1].training


def test_cosine_schedule_and_defaults():
    s = _ease(lr=0.1, min_lr=0.01)
    assert [round(s._cosine_lr(e, 4), 6) for e in range(4)] == [0.1, 0.086820, 0.055, 0.023180]
    d = EASE(vit_backbone(num_classes=4, tiny=True))
    assert (d.ffn_num, d.adapter_scale, d.adapter_dropout, d.alpha, d.min_lr, d.lr, d.epochs, d.batch_size,
            d.weight_decay, d.momentum) == (64, 0.1, 0.1, 0.1, 0.0, 0.025, 20, 48, 5e-4, 0.9)
    assert _REGISTRY["ease"] is EASE and EASE.needs_vit_model


def test_masks_unseen_classes_and_task_scenario():
    ta, tb = _stream()
    s = _ease()
    x, _ = _images(4, [0, 1, 2, 3], seed=5)
    assert torch.equal(s.predict(x), torch.zeros(4, 6))               # before any task
    s.train_task(ta)
    out = s.predict(x)
    assert out[:, 2:].isinf().all() and out[:, :2].isfinite().all()
    ts = _ease(scenario="task")
    ts.train_task(ta)
    ts.train_task(tb)
    out = ts.predict(x, tb)
    assert out[:, :2].isinf().all() and out[:, 2:4].isfinite().all()


def test_same_seed_same_run_other_seed_differs_and_deepcopy():
    ta, tb = _stream()
    xt, _ = _images(8, [0, 1, 2, 3], seed=9)

    def run(seed):
        s = _ease(seed=seed)
        return s, [s.train_task(t) for t in (ta, tb)]

    torch.manual_seed(0)
    a, ha = run(1)
    torch.manual_seed(123)                      # the global generator plays no part (dropout included)
    b, hb = run(1)
    c, hc = run(2)
    assert ha == hb and ha != hc
    assert torch.equal(a.predict(xt), b.predict(xt)) and not torch.equal(a.predict(xt), c.predict(xt))
    d = copy.deepcopy(a)
    assert torch.equal(d.predict(xt), a.predict(xt))


def test_trains_on_a_non_cpu_device():
    """Every tensor on ``meta``, nothing read inside a step, no CPU tensor mixed in."""
    meta = torch.device("meta")
    s = EASE(vit_backbone(num_classes=4, tiny=True, seed=0), ffn_num=4, device=meta, epochs=2, batch_size=8)
    ta, tb = _stream()
    assert_trains_on_meta(s, (ta, tb), 2)


# ----------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("model, match", [
    (MLP(6, 4, hidden=(8,)), "model must be a clkit.models.vit.ViTBackbone.*MLP"),
    ("vit", "model must be a torch.nn.Module, got str"),
])
def test_wrong_models_are_refused(model, match):
    with pytest.raises(TypeError, match=match):
        EASE(model)


@pytest.mark.parametrize("kwargs, match", [
    (dict(ffn_num=0), "ffn_num"), (dict(alpha=-0.1), "alpha"), (dict(adapter_dropout=1.0), "adapter_dropout"),
    (dict(min_lr=-1), "min_lr"), (dict(min_lr=0.5, lr=0.1), r"min_lr must be <= lr"),
    (dict(loss="mse"), "classification only"), (dict(num_classes=0), "num_classes"),
    (dict(ffn_num=2.0), "ffn_num must be an integer"),
])
def test_bad_parameters_are_refused_naming_them(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        EASE(vit_backbone(num_classes=4, tiny=True), **kwargs)


def test_bad_streams_are_refused():
    ta, tb = _stream()
    s = _ease()
    with pytest.raises(ValueError, match=r"class\(es\) \[7\].*allowed: 0 \.\.\. 5"):
        s.train_task(Task(torch.zeros(2, 3, 32, 32), torch.tensor([0, 7])))
    s.train_task(ta)
    s.train_task(ta)                                            # the latest task trains on: no new adapter
    assert len(s.model.adapters) == 1
    with pytest.raises(ValueError, match=r"repeats class\(es\) \[1\]"):
        s.train_task(Task(*_images(4, [1, 2]), task_id=5))
    s.train_task(tb)
    with pytest.raises(ValueError, match="continue only the latest task"):
        s.train_task(ta)
    with pytest.raises(ValueError, match="needs task boundaries"):
        s.observe(torch.zeros(2, 3, 32, 32), torch.tensor([4, 5]))
