"""TagFex: known answers from the authors' code, the TA/TS structure (interpolated expansion, frozen
extractors, fresh merge layers), the two views, learning, determinism, the meta device and refusals."""

import pytest
import torch
from torch import nn

from clkit import device as dv
from clkit._seed import torch_seeded
from clkit.models import MLP
from clkit.strategies import Task
from clkit.strategies.tagfex import TagFex, flip_crop, info_nce, info_nce_distill, tokens

from strategy_helpers import TinyBN as _BN, blob_stream

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# --------------------------------------------------------------------------- known answers
# Made by /tmp/authors_tagfex/make_numbers.py with the authors' code: AIGNLAI/EDGE at commit
# a60c1179cf762e8c1197ab876a3c06db3a49b639, PyCIL/models/tagfex.py (TagFex._train ->
# _init_train on task 0, _update_representation + weight_align on task 1, init_epoch = epochs = 1,
# their SGD: lr 0.1, momentum 0.9, weight decay 5e-4 then 2e-4), PyCIL/utils/inc_net.py (TagFexNet,
# TSAttention, update_fc). Recipe: `git archive HEAD PyCIL` into /tmp/authors_tagfex, then
# `cd PyCIL && /work/main/.venv/bin/python ../make_numbers.py`. The backbone is `_Tiny` below (conv
# 3->8, 3x3, pad 1, BN, ReLU; PyCIL's fmaps = [that map], features = its average), plugged in by
# replacing utils.inc_net.get_convnet; args: proj dims 16/12, 2 heads, the json's factors and
# temperatures. Every weight is overwritten by `_fill(shape, k)` (same k here): TS0 conv k=0, TA
# k=10, fc 20/21, projector 30..33, predictor 40/41; after update_fc(4): the new fc entries 50/51,
# aux_fc 52/53, trans_classifier 54/55, TSAttention 60..68. Views and rows: task 0 x1 = fill 100,
# x2 = fill 101 (6, 3, 4, 4), y = [0,1,0,1,1,0]; task 1 x1 = 110, x2 = 111 (8 rows),
# y = [2,3,0,2,3,1,3,2]; test rows fill 120 (5 rows). Losses were read at loss.backward(), the
# InfoNCE/KD values at their functions, the cross-entropies and KL at F, gradients at the SGD step.
AUTHORS = {
    "task0": {"loss": 3.2820260524749756, "infonce": 2.3945248126983643, "g_ts0_conv": 0.12135016918182373,
              "g_ta_conv": 0.17867574095726013, "g_fc": 0.5301671624183655, "g_proj0": 0.24774347245693207,
              "g_proj2": 0.07216794043779373, "ts0_conv_after": 7.173315048217773,
              "ta_bn_rm_after": [0.11872176826000214, -0.20425325632095337, 0.05233416706323624,
                                 0.054985444992780685, 0.06908324360847473, 0.02164071798324585,
                                 -0.06612607836723328, 0.1437104046344757],
              "logits_test": [[0.32501932978630066, 1.6034598350524902], [0.1389475166797638, 1.8734086751937866],
                              [0.7736237049102783, 1.8084303140640259], [0.11014744639396667, 1.071137547492981],
                              [0.33301326632499695, 2.0286388397216797]]},
    "task1_expand": {"ts1_conv_w_sum": -4.526442527770996, "ts1_conv_w_norm": 6.805116176605225,
                     "ts1_bn_w": [1.0436583757400513, 1.0912377834320068, 0.9849340915679932, 1.0847276449203491,
                                  1.1698228120803833, 0.907278299331665, 0.875484049320221, 0.8787634968757629],
                     "fc_old_block": [[-0.19983486831188202, 0.7352097630500793, -0.5591533780097961,
                                       -0.0994916781783104, -0.18577879667282104, -0.3205322325229645,
                                       -0.2911996841430664, -0.26488158106803894],
                                      [0.3454374670982361, 0.0799601674079895, -0.5107482075691223,
                                       -0.29068124294281006, 0.5061582326889038, 0.442058265209198,
                                       -0.36526960134506226, 1.020277738571167]]},
    "task1": {"loss": 8.918230056762695, "infonce": 2.7566258907318115, "kd": 2.6960723400115967,
              "clf": 1.7567065954208374, "aux": 1.1738203763961792, "trans": 0.6858776211738586,
              "transfer": 0.05362039804458618, "g_ts1_conv": 0.3307533264160156, "g_ta_conv": 0.12478257715702057,
              "g_fc": 1.643208384513855, "g_aux": 0.5832891464233398, "g_trans": 0.10731571912765503,
              "g_attn_q": 0.1097426638007164, "g_attn_kta": 0.1711854487657547, "g_proj0": 0.11395464837551117,
              "g_predictor": 0.09793349355459213,
              "logits_test": [[-0.4075160026550293, 1.2740769386291504, 0.4852081835269928, 1.6888786554336548],
                              [-0.6137539148330688, 0.828650712966919, 0.7269330024719238, 2.403244733810425],
                              [0.20372331142425537, 1.2825254201889038, 1.1202389001846313, 1.3305773735046387],
                              [-0.455819308757782, 0.2149915099143982, 0.2286531627178192, 2.6969645023345947],
                              [0.1775951385498047, 1.3515551090240479, 0.3970394432544708, 1.3505114316940308]],
              "fc_norms": [2.1548240184783936, 2.0748088359832764, 2.1778335571289062, 2.051799774169922]},
}


def _fill(shape, k, scale=0.5):
    return torch.randn(shape, generator=torch.Generator().manual_seed(1000 + k)) * scale


class _Tiny(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(8, num_classes)

    def forward(self, x):
        return self.head(self.features(x))


def _set_conv(f, k):
    conv, bn = f[0], f[1]
    with torch.no_grad():
        conv.weight.copy_(_fill((8, 3, 3, 3), k)); conv.bias.copy_(_fill((8,), k + 1))
        bn.weight.copy_(1 + _fill((8,), k + 2, 0.1)); bn.bias.copy_(_fill((8,), k + 3, 0.1))
        bn.running_mean.copy_(_fill((8,), k + 4, 0.1)); bn.running_var.copy_(_fill((8,), k + 5).abs() + 0.5)


class _Views:
    """``augment`` handing out preset views in order (the same views the authors' run got)."""

    def __init__(self, views):
        self.views = list(views)

    def __call__(self, x, generator):
        return self.views.pop(0)


def _close(a, b, rel=1e-5, abs_=1e-6):
    a, b = torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64)
    assert torch.allclose(a, b, rtol=rel, atol=abs_), (a, b)


def _gn(p):
    return float(p.grad.norm())


def test_known_answers_match_the_authors_code():
    x0 = (_fill((6, 3, 4, 4), 100, 1.0), _fill((6, 3, 4, 4), 101, 1.0))
    x1 = (_fill((8, 3, 4, 4), 110, 1.0), _fill((8, 3, 4, 4), 111, 1.0))
    xt = _fill((5, 3, 4, 4), 120, 1.0)
    y0, y1 = torch.tensor([0, 1, 0, 1, 1, 0]), torch.tensor([2, 3, 0, 2, 3, 1, 3, 2])
    s = TagFex(_Tiny(), lr=0.1, momentum=0.9, weight_decay=5e-4, memory_size=4, proj_hidden_dim=16,
               proj_output_dim=12, attn_num_heads=2, augment=_Views([*x0, *x1]))
    net = s.model
    t0 = Task(x0[0], y0, task_id=0)
    s.begin_task(t0)
    _set_conv(net.extractors[0], 0); _set_conv(net.ta, 10)
    with torch.no_grad():
        net.head.weight[:2] = _fill((2, 8), 20); net.head.bias[:2] = _fill((2,), 21)
        net.projector[0].weight.copy_(_fill((16, 8), 30)); net.projector[0].bias.copy_(_fill((16,), 31))
        net.projector[2].weight.copy_(_fill((12, 16), 32)); net.projector[2].bias.copy_(_fill((12,), 33))
        net.predictor.weight.copy_(_fill((8, 8), 40)); net.predictor.bias.copy_(_fill((8,), 41))
    A = AUTHORS["task0"]
    _close(float(s.train_step(x0[0], y0, t0)), A["loss"])
    _close(float(s.loss_parts["infonce"]), A["infonce"])
    _close(_gn(net.extractors[0][0].weight), A["g_ts0_conv"])
    _close(_gn(net.ta[0].weight), A["g_ta_conv"])
    _close(_gn(net.head.weight), A["g_fc"])
    _close(_gn(net.projector[0].weight), A["g_proj0"])
    _close(_gn(net.projector[2].weight), A["g_proj2"])
    assert net.predictor.weight.grad is None
    _close(float(net.extractors[0][0].weight.detach().norm()), A["ts0_conv_after"])
    _close(net.ta[1].running_mean, A["ta_bn_rm_after"])
    s.after_task(t0)
    _close(s.predict(xt)[:, :2], A["logits_test"])
    assert bool(s.predict(xt)[:, 2:].isneginf().all())

    s.weight_decay = 2e-4                          # PyCIL's later tasks
    t1 = Task(x1[0][y1 >= 2], y1[y1 >= 2], task_id=1)   # the task: classes 2, 3; the step's batch adds old rows
    s.begin_task(t1)
    E = AUTHORS["task1_expand"]
    ts1 = net.extractors[1]
    _close(float(ts1[0].weight.detach().sum()), E["ts1_conv_w_sum"])
    _close(float(ts1[0].weight.detach().norm()), E["ts1_conv_w_norm"])
    _close(ts1[1].weight, E["ts1_bn_w"])
    assert torch.equal(ts1[1].running_mean, torch.zeros(8)) and torch.equal(ts1[1].running_var, torch.ones(8))
    _close(net.head.weight[:2, :8], E["fc_old_block"])
    with torch.no_grad():
        keep = net.head.weight[:2, :8].clone()
        net.head.weight.copy_(_fill((4, 16), 50)); net.head.weight[:2, :8] = keep; net.head.bias[2:] = _fill((2,), 51)
        net.aux_head.weight.copy_(_fill((3, 8), 52)); net.aux_head.bias.copy_(_fill((3,), 53))
        net.trans_head.weight.copy_(_fill((2, 8), 54)); net.trans_head.bias.copy_(_fill((2,), 55))
        a = net.attn
        a.norm_ts.weight.copy_(1 + _fill((8,), 60, 0.1)); a.norm_ts.bias.copy_(_fill((8,), 61, 0.1))
        a.norm_ta.weight.copy_(1 + _fill((8,), 62, 0.1)); a.norm_ta.bias.copy_(_fill((8,), 63, 0.1))
        for i, w in enumerate([a.weight_q, a.weight_k_ts, a.weight_k_ta, a.weight_v_ts, a.weight_v_ta]):
            w.copy_(_fill((8, 8), 64 + i))
    B = AUTHORS["task1"]
    _close(float(s.train_step(x1[0], y1, t1)), B["loss"])
    for k in ("infonce", "kd", "clf", "aux", "trans", "transfer"):
        _close(float(s.loss_parts[k]), B[k])
    _close(_gn(ts1[0].weight), B["g_ts1_conv"])
    assert net.extractors[0][0].weight.grad is None
    _close(_gn(net.ta[0].weight), B["g_ta_conv"])
    _close(_gn(net.head.weight), B["g_fc"])
    _close(_gn(net.aux_head.weight), B["g_aux"])
    _close(_gn(net.trans_head.weight), B["g_trans"])
    _close(_gn(net.attn.weight_q), B["g_attn_q"])
    _close(_gn(net.attn.weight_k_ta), B["g_attn_kta"])
    _close(_gn(net.projector[0].weight), B["g_proj0"])
    _close(_gn(net.predictor.weight), B["g_predictor"])
    s.after_task(t1)                               # weight aligning
    _close(net.head.weight.norm(dim=1), B["fc_norms"])
    _close(s.predict(xt), B["logits_test"])


# --------------------------------------------------------------------------- pieces
def test_info_nce_is_cross_entropy_over_the_other_rows():
    g = torch.Generator().manual_seed(0)
    f, z = torch.randn(6, 5, generator=g), torch.randn(6, 5, generator=g)
    for got, a, b in ((info_nce(f, 0.3), f, f), (info_nce_distill(f, z, 0.3), f, z)):
        sim = nn.functional.normalize(a, dim=1) @ nn.functional.normalize(b, dim=1).T / 0.3
        want = 0.0
        for i in range(6):
            others = [j for j in range(6) if j != i]
            want += -sim[i, (i + 3) % 6] + torch.logsumexp(sim[i, others], 0)
        _close(float(got), float(want / 6))


def test_flip_crop_is_a_shifted_window_and_seeded():
    x = torch.arange(2 * 3 * 5 * 5, dtype=torch.float32).reshape(2, 3, 5, 5)
    a = flip_crop(x, torch.Generator().manual_seed(3))
    assert torch.equal(a, flip_crop(x, torch.Generator().manual_seed(3)))
    assert a.shape == x.shape
    pad = nn.functional.pad(x, (4, 4, 4, 4))
    for n in range(2):   # each view is a 5x5 window of the padded image, maybe flipped
        wins = [pad[n, :, i:i + 5, j:j + 5] for i in range(9) for j in range(9)]
        assert any(torch.equal(a[n], w) or torch.equal(a[n], w.flip(-1)) for w in wins)


def test_tokens_of_a_pooled_cnn_and_of_an_mlp():
    m = _Tiny()
    f, tok = tokens(m.features, torch.randn(2, 3, 4, 4))
    assert tok.shape == (2, 16, 8)
    x = torch.randn(2, 3, 4, 4)
    m.eval()
    _close(tokens(m.features, x)[0], m.features(x))
    f, tok = tokens(MLP(3, 2, hidden=(4,)).features, torch.randn(5, 3))
    assert f.shape == (5, 4) and tok.shape == (5, 1, 4)


# --------------------------------------------------------------------------- behaviour
def _stream(num_tasks=3, n=48, seed=0):
    return blob_stream(num_tasks, n, seed)


def _tagfex(seed=0, **kw):
    with torch_seeded(0):
        model = _BN()
    kw = {"lr": 0.05, "epochs": 4, "batch_size": 16, "memory_size": 12, "seed": seed, "proj_hidden_dim": 16,
          "proj_output_dim": 8, "attn_num_heads": 2, **kw}
    return TagFex(model, **kw)


def _state(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def test_learns_three_tasks_above_chance_with_frozen_old_extractors():
    tasks = _stream()
    s = _tagfex()
    s.train_task(tasks[0])
    for t in (1, 2):
        frozen = [_state(e) for e in s.model.extractors]
        ta_before = _state(s.model.ta)
        s.train_task(tasks[t])
        for e, st in zip(s.model.extractors, frozen):      # old TS: weights and BN statistics unchanged
            assert all(torch.equal(v, st[k]) for k, v in e.state_dict().items())
        assert not all(torch.equal(v, ta_before[k]) for k, v in s.model.ta.state_dict().items())  # TA trains
        assert s.old_ta is not None and not any(p.requires_grad for p in s.old_ta.parameters())
        assert len(s.model.extractors) == t + 1 and s.model.trans_head.out_features == 2
    accs = [s.evaluate(t) for t in tasks]
    assert sum(accs) / 3 > 0.5, accs                      # chance over six classes: 1/6
    assert sorted(set(s.memory_labels.tolist())) == list(range(6)) and len(s.memory_labels) == 12


def test_new_extractor_interpolates_old_ts_and_ta():
    tasks = _stream(2)
    s = _tagfex(init_interpolation_factor=0.7)
    s.train_task(tasks[0])
    old, ta = _state(s.model.extractors[0]), _state(s.model.ta)
    s.begin_task(tasks[1])
    new = s.model.extractors[1]
    for k, p in new.named_parameters():
        _close(p, 0.7 * old[k] + 0.3 * ta[k])
    assert torch.equal(new[1].running_var, torch.ones(8))


def test_same_seed_same_results_and_views_depend_on_the_seed():
    x = torch.randn(4, 3, 6, 6)
    runs = []
    for seed in (0, 0, 1):
        with torch_seeded(0):
            m = _Tiny(6)
        s = TagFex(m, lr=0.05, epochs=2, batch_size=8, memory_size=6, proj_hidden_dim=8, proj_output_dim=4,
                   attn_num_heads=2, seed=seed)
        g = torch.Generator().manual_seed(5)
        for t in range(2):
            y = torch.tensor([2 * t, 2 * t + 1] * 6)
            s.train_task(Task(torch.randn(12, 3, 6, 6, generator=g), y, task_id=t))
        runs.append((s.predict(x), s.views(x)[0]))
    assert torch.equal(runs[0][0], runs[1][0]) and torch.equal(runs[0][1], runs[1][1])
    assert not torch.equal(runs[0][0], runs[2][0])


def test_trains_on_meta_without_reading_the_device():
    meta = torch.device("meta")
    for model, shape in ((MLP(6, 6, hidden=(8,)), (6,)), (_Tiny(6), (3, 4, 4))):
        s = TagFex(model, device=meta, epochs=2, batch_size=8, memory_size=6, proj_hidden_dim=8,
                   proj_output_dim=4, attn_num_heads=2)
        g = torch.Generator().manual_seed(0)
        with dv.DeviceAudit(meta):
            for t in range(3):
                y = torch.tensor([2 * t, 2 * t + 1] * 8)
                s.train_task(Task(torch.randn(16, *shape, generator=g), y, task_id=t))
        assert all(p.device == meta for p in s.model.parameters()) and s.steps > 0


def test_default_arguments_on_the_device_tests_model():
    s = TagFex(MLP(6, 6, hidden=(8,)), epochs=1, batch_size=8, memory_size=6)   # 8 heads divide 8 features
    s.train_task(Task(torch.randn(16, 6), torch.tensor([0, 1] * 8), task_id=0))
    s.train_task(Task(torch.randn(16, 6), torch.tensor([2, 3] * 8), task_id=1))
    assert s.model.projector[0].out_features == 2048 and s.model.projector[2].out_features == 1024


@pytest.mark.parametrize("kw, match", [
    ({"memory_size": -1}, "memory_size"),
    ({"init_interpolation_factor": 1.5}, "init_interpolation_factor"),
    ({"infonce_temp": 0}, "infonce_temp"),
    ({"kd_temp": -1.0}, "kd_temp"),
    ({"attn_num_heads": 3}, "attn_num_heads"),
    ({"proj_hidden_dim": 0}, "proj_hidden_dim"),
    ({"aux_factor": -1}, "aux_factor"),
    ({"augment": "jitter"}, "augment"),
    ({"align_weights": 1}, "align_weights"),
    ({"loss": "mse"}, "loss"),
])
def test_refuses_bad_arguments(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        TagFex(MLP(4, 6, hidden=(8,)), **kw)


def test_refuses_a_model_without_features_and_head():
    with pytest.raises(TypeError, match="features"):
        TagFex(nn.Linear(3, 2))
