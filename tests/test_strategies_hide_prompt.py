"""HiDe-Prompt: known answers from the authors' code (TII, WTP, prefix layouts, two-stage prediction, momentum,
TAP, multi-centroid statistics), learning on a tiny ViT, frozen parts, determinism, the meta device, refusals."""

import copy

import pytest
import timm
import torch
import torch.nn.functional as F
from torch import nn

from clkit.models import MLP
from clkit.models.vit import ViTBackbone, vit_backbone
from clkit.strategies import Task
from clkit.strategies.base import _REGISTRY
from clkit.strategies.hide_prompt import HiDePrompt, contrastive_loss, kmeans

from strategy_helpers import assert_trains_on_meta, images as _images, pretrained_like as _pretrained_like, two_tasks

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# ----------------------------------------------------------------------------- known answers
# Recorded by /tmp/authors_hide/make_numbers.py with the authors' code, github.com/thu-ml/HiDe-Prompt commit
# 0ed433334ff2cfb206c5e2899651c3044ec85f92 (AIGNLAI/EDGE @ a60c1179cf762e8c1197ab876a3c06db3a49b639 holds no
# copy: the EDGE authors ran this release). Re-run: export the repository (git archive HEAD | tar -x -C
# /tmp/authors_hide), put the script there, run it with the project's venv python (torch 2.14.1, timm 1.0.31).
# It builds the authors' vits/hide_prompt_vision_transformer.VisionTransformer at 16 px, patch 8, width 24,
# depth 2, 2 heads, 6 classes: the TII model with mlp_structure=[2], the WTP model with prefix E-prompts in
# layers [0, 1], pool 3, length 2, top_k 1, prompt mask on (the CIFAR-100 config otherwise); fills the weights
# with the recipe of `_weights` below; x = randn(4, 3, 16, 16, seed 2), task 0 = classes (0, 1), y0 = [0,1,0,1],
# task 1 = classes (2, 3), y1 = [2,3,3,2]. Quantities: TII -- hide_tii_engine.train_one_epoch's masked
# cross-entropy and gradient norms, the task ids of hide_promtp_wtp_and_tap_engine.evaluate (TII logits masked
# to the seen classes 0-3); WTP -- train_one_epoch's loss (CE masked to the task + orth_loss with reg 0.1;
# task 1 with cls_mean = 2 classes x 2 float64 centroids randn(seed 3) and prompt_momentum 0.01) and gradient
# norms, for the 4-row batch (the authors' prefix layout) and one row; evaluation logits model(x, task_id=1,
# prompt_id=TII's) for the batch and row by row; train_and_evaluate's momentum update of slot 1;
# train_task_adaptive_prediction's loss on fixed features randn(5, 24, seed 4) (fc_only=True, seen classes
# 0-3); _compute_mean's multi-centroid statistics (n_centroids=2, sklearn KMeans, single-process gloo group)
# on fixed points.
TII_FEAT_SUM, TII_FEAT_ROW0 = -6.821315765380859, [-1.861178994178772, 1.7144744396209717, -0.6520138382911682,
                                                   0.6299532651901245]
TII_LOSS = 1.3403511047363281
TII_GRAD = {"fc1": 1.4378994703292847, "fc2": 1.7077398300170898, "norm": 0.8717825412750244,
            "head": 2.2464487552642822}
TII_LOGITS_SEEN = [[-2.142314910888672, 1.8053207397460938, -1.3695528507232666, 1.652272343635559],
                   [0.565457284450531, 2.1238720417022705, -1.3181480169296265, 1.2281224727630615],
                   [-0.2827818691730499, 0.5380560755729675, -0.7481589913368225, 2.245192527770996],
                   [-0.7141014337539673, 3.287619113922119, -0.5887466669082642, 0.6554599404335022]]
TII_TASK = [0, 0, 1, 0]
# (loss, prompt grad norm, head.weight grad norm, feature sum)
WTP = {"task0_b4": (0.8220811486244202, 0.1353175938129425, 1.6690360307693481, -6.82186222076416),
       "task0_b1": (1.278060793876648, 0.18547005951404572, 4.579281330108643, -2.1531713008880615),
       "task1_b4": (1.391431898860813, 0.22055944800376892, 2.663612127304077, -6.5971574783325195),
       "task1_b1": (2.399860642478338, 0.38825833797454834, 6.749081134796143, -1.5239043235778809)}
EVAL_B4 = [[0.6633609533309937, 1.6774919033050537, 0.20438970625400543, -0.01515280082821846, -0.30561432242393494,
            1.5218716859817505],
           [0.326362669467926, -0.3705582618713379, -0.6587055921554565, -3.2657246589660645, -1.594956398010254,
            -1.8741751909255981],
           [0.10982446372509003, -0.2329745590686798, 0.35016030073165894, -2.5303616523742676, -1.4339544773101807,
            -0.9734588861465454],
           [-2.0817360877990723, -0.9718677997589111, -1.6251091957092285, -1.8488308191299438, -1.028643250465393,
            -0.17320631444454193]]
EVAL_ROWS = [[0.6279991269111633, 1.5795302391052246, 0.11919178068637848, -0.06676797568798065,
              -0.14257532358169556, 1.443766713142395],
             [0.5612375736236572, -0.21202343702316284, -0.9371925592422485, -3.0860989093780518,
              -1.4602539539337158, -2.0612123012542725],
             [-1.0610930919647217, -1.253851294517517, -1.0816766023635864, -2.2728357315063477,
              -1.5443252325057983, -1.1041476726531982],
             [-1.8900842666625977, -1.190712332725525, -1.7643615007400513, -2.046210289001465,
              -0.9513027667999268, -0.18003733456134796]]
MOMENTUM_SLOT1_SUM = -6.818096160888672
TAP_WTP = (2.5157504081726074, 2.2222583293914795)                       # loss, head grad
TAP_TII = (3.045959711074829, 2.4149010181427, 2.084459066390991)        # loss, head grad, fc1 grad
STATS_POINTS = [[0.0, 0.0, 1.0], [0.5, 0.0, 1.0], [0.0, 0.4, 1.2], [5.0, 5.0, 0.0], [5.5, 5.0, 0.1],
                [5.0, 5.8, 0.0], [9.0, 0.0, 0.0]]
STATS = {0: ([[0.1666666716337204, 0.13333334028720856, 1.0666667222976685],
              [5.166666507720947, 5.266666889190674, 0.03333333507180214]],
             [[0.0555555522441864, 0.035555556416511536, 0.008888893760740757],
              [0.0555555522441864, 0.1422223001718521, 0.0022222220432013273]]),
         1: ([[0.0, 0.0, 1.0], [7.0, 2.5, 0.0]], [[0.0, 0.0, 0.0], [4.0, 6.25, 0.0]])}   # class 1: points 0, 3, 6

RTOL = 1e-5
D, K = 24, 6


def _tiny(num_classes=K):
    vit = timm.create_model("vit_base_patch16_224", pretrained=False, num_classes=0, img_size=16, patch_size=8,
                            embed_dim=D, depth=2, num_heads=2)
    return ViTBackbone(vit, nn.Linear(D, num_classes), "test")


def _weights(s):
    """The known-answer recipe: backbone keys in sorted order from randn(seed 0) (LayerNorm weights 1 + 0.1 randn,
    the rest 0.3 randn); then from seed 1 the prompts (uniform(-1, 1)), WTP head, TII MLP and TII head."""
    net = s.model
    g = torch.Generator().manual_seed(0)
    state = net.vit.state_dict()
    with torch.no_grad():
        for k in sorted(state):
            shape = state[k].shape
            if k.endswith(("norm1.weight", "norm2.weight")) or k == "norm.weight":
                state[k].copy_(1 + 0.1 * torch.randn(shape, generator=g))
            else:
                state[k].copy_(0.3 * torch.randn(shape, generator=g))
        g = torch.Generator().manual_seed(1)

        def r(*shape, a=0.3):
            return a * torch.randn(*shape, generator=g)
        net.prompt.copy_(torch.rand(net.prompt.shape, generator=g) * 2 - 1)
        mlp = net.tii_mlp
        for p, v in ((net.head.weight, r(K, D)), (net.head.bias, r(K, a=0.1)), (mlp.fc1.weight, r(2 * D, D)),
                     (mlp.fc1.bias, r(2 * D, a=0.1)), (mlp.fc2.weight, r(D, 2 * D)), (mlp.fc2.bias, r(D, a=0.1)),
                     (mlp.norm.weight, 1 + r(D, a=0.1)), (mlp.norm.bias, r(D, a=0.1)),
                     (net.tii_head.weight, r(K, D)), (net.tii_head.bias, r(K, a=0.1))):
            p.copy_(v)


def _known(layout="per_row"):
    s = HiDePrompt(_tiny(), pool_size=3, prompt_length=2, prefix_layout=layout)
    _weights(s)
    x = torch.randn(4, 3, 16, 16, generator=torch.Generator().manual_seed(2))
    return s, x


def _mask(classes):
    m = torch.full((K,), float("-inf"))
    m[list(classes)] = 0.0
    return m


def test_tii_features_loss_gradients_and_task_inference_match_the_authors():
    s, x = _known()
    net = s.model
    feats = net.cls(x)
    assert float(feats.sum()) == pytest.approx(TII_FEAT_SUM, rel=RTOL)
    torch.testing.assert_close(feats[0, :4], torch.tensor(TII_FEAT_ROW0), rtol=RTOL, atol=1e-6)
    loss = F.cross_entropy(net.tii(feats) + _mask([0, 1]), torch.tensor([0, 1, 0, 1]))
    loss.backward()
    assert float(loss.detach()) == pytest.approx(TII_LOSS, rel=RTOL)
    got = {"fc1": net.tii_mlp.fc1.weight, "fc2": net.tii_mlp.fc2.weight, "norm": net.tii_mlp.norm.weight,
           "head": net.tii_head.weight}
    for k, p in got.items():
        assert float(p.grad.norm()) == pytest.approx(TII_GRAD[k], rel=1e-4), k
    s._seen_mask = _mask([0, 1, 2, 3])
    s._class_slot = torch.tensor([0, 0, 1, 1, 2, 2])
    with torch.no_grad():
        torch.testing.assert_close(net.tii(feats)[:, :4], torch.tensor(TII_LOGITS_SEEN), rtol=RTOL, atol=1e-5)
        assert s.infer_slots(x).tolist() == TII_TASK


@pytest.mark.parametrize("case", ["task0_b4", "task0_b1", "task1_b4", "task1_b1"])
def test_wtp_loss_and_gradients_match_the_authors(case):
    """Four rows: the authors' prefix layout; one row: both layouts agree with the authors."""
    task = int(case[4])
    rows = slice(None) if case.endswith("b4") else slice(task, task + 1)
    layouts = ["authors"] if case.endswith("b4") else ["authors", "per_row"]
    for layout in layouts:
        s, x = _known(layout)
        y = torch.tensor([0, 1, 0, 1] if task == 0 else [2, 3, 3, 2])[rows]
        s._slot, s._train_mask = task, _mask([0, 1] if task == 0 else [2, 3])
        if task == 1:
            s._centroids = torch.randn(2, 2, D, generator=torch.Generator().manual_seed(3),
                                       dtype=torch.float64).reshape(4, D).float()
        loss = s.wtp_loss(x[rows], y)
        loss.backward()
        want = WTP[case]
        assert float(loss.detach()) == pytest.approx(want[0], rel=RTOL), layout
        assert float(s.model.prompt.grad.norm()) == pytest.approx(want[1], rel=1e-4), layout
        assert float(s.model.prompt.grad[:, :, task].norm()) == pytest.approx(want[1], rel=1e-4)
        assert float(s.model.head.weight.grad.norm()) == pytest.approx(want[2], rel=1e-4), layout
        slots = torch.full((len(y),), task)
        with torch.no_grad():
            feats = s.model.prompted(x[rows], slots, 0.01 if task else 0.0, task)
        assert float(feats.sum()) == pytest.approx(want[3], rel=1e-4), layout


def test_two_stage_prediction_matches_the_authors_per_row_and_in_the_authors_layout():
    for layout, want in (("per_row", EVAL_ROWS), ("authors", EVAL_B4)):
        s, x = _known(layout)
        s._seen_mask, s._class_slot = _mask([0, 1, 2, 3]), torch.tensor([0, 0, 1, 1, 2, 2])
        with torch.no_grad():
            slots = s.infer_slots(x)
            torch.testing.assert_close(s.model.head(s.model.prompted(x, slots)), torch.tensor(want),
                                       rtol=RTOL, atol=1e-5)
        out = s.predict(x)                          # the strategy's prediction: unseen classes 4, 5 at -inf
        torch.testing.assert_close(out[:, :4], torch.tensor(want)[:, :4], rtol=RTOL, atol=1e-5)
        assert out[:, 4:].isinf().all()
    s, x = _known("per_row")                        # per-row prediction does not depend on the batch
    s._seen_mask, s._class_slot = _mask([0, 1, 2, 3]), torch.tensor([0, 0, 1, 1, 2, 2])
    torch.testing.assert_close(s.predict(x), torch.cat([s.predict(x[i:i + 1]) for i in range(4)]))


def test_prompt_momentum_update_and_tap_losses_match_the_authors():
    s, _ = _known()
    s.momentum_update(1)
    assert float(s.model.prompt[:, :, 1].detach().sum()) == pytest.approx(MOMENTUM_SLOT1_SUM, rel=RTOL)
    s, _ = _known()
    f = torch.randn(5, D, generator=torch.Generator().manual_seed(4))
    t = torch.tensor([0, 1, 2, 3, 2])
    loss = F.cross_entropy(s.model.head(f) + _mask([0, 1, 2, 3]), t)
    loss.backward()
    assert (float(loss.detach()), float(s.model.head.weight.grad.norm())) == pytest.approx(TAP_WTP, rel=1e-5)
    loss = F.cross_entropy(s.model.tii(f) + _mask([0, 1, 2, 3]), t)
    loss.backward()
    got = (float(loss.detach()), float(s.model.tii_head.weight.grad.norm()), float(s.model.tii_mlp.fc1.weight.grad.norm()))
    assert got == pytest.approx(TAP_TII, rel=1e-4)


def test_multi_centroid_statistics_match_the_authors():
    pts = torch.tensor(STATS_POINTS)
    for c, rows in ((0, slice(0, 6)), (1, [0, 3, 6])):
        for seed in (1, 2, 3):      # class 0 is unambiguous; class 1 has a second Lloyd fixed point ({0, 3}, {6}),
            #                         reached from seeds 0, 4, 8 (one k-means++ seeding, no restarts)
            m, v = kmeans(pts[rows], 2, torch.Generator().manual_seed(seed))
            order = sorted(range(2), key=lambda i: m[i].tolist())
            torch.testing.assert_close(m[order], torch.tensor(STATS[c][0]), rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(v[order], torch.tensor(STATS[c][1]), rtol=1e-4, atol=1e-6)


def test_contrastive_loss_by_hand():
    f = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    c = torch.randn(2, 4, generator=torch.Generator().manual_seed(1))
    m = torch.cat([c, f])
    sim = m @ m.T / 0.8
    hand = -(sim.diag() - sim.logsumexp(1)).mean()
    assert float(contrastive_loss(f, c)) == pytest.approx(float(hand), rel=1e-6)


# ----------------------------------------------------------------------------- training

FAST = dict(epochs=3, tii_epochs=10, ca_epochs=3, batch_size=16, n_centroids=2, kmeans_iters=10, pool_size=3,
            prompt_length=2, lr=0.01, tii_lr=0.01, ca_lr=0.01)


def _stream(n=32, seed=0):
    return two_tasks(n, seed)


def test_learns_two_tasks_above_chance_with_frozen_vit_and_kept_prompts():
    s = HiDePrompt(_pretrained_like(), **FAST)
    vit0 = {k: v.clone() for k, v in s.model.vit.state_dict().items()}
    ta, tb = _stream(48)
    s.train_task(ta)
    p0 = s.model.prompt.detach().clone()
    s.train_task(tb)
    p1 = s.model.prompt.detach()
    assert torch.equal(p1[:, :, 0], p0[:, :, 0])             # slot 0 untouched by task 1
    assert not torch.equal(p1[:, :, 1], p0[:, :, 0])          # slot 1 started as slot 0's copy, then trained
    assert torch.equal(p1[:, :, 2], p0[:, :, 2])              # unused slot
    for k, v in s.model.vit.state_dict().items():
        assert torch.equal(v, vit0[k]), k
    xt, yt = _images(64, [0, 1, 2, 3], seed=7)
    acc = float((s.predict(xt).argmax(1) == yt).float().mean())
    task_acc = float((s.infer_slots(xt) == yt // 2).float().mean())
    assert acc > 0.5 and task_acc > 0.6, (acc, task_acc)
    assert len(s._centroids) == 4 * 2 and s.slots == {0: 0, 1: 1}
    assert all(p.grad is None for p in [*s.model.tii_mlp.parameters(), *s.model.tii_head.parameters()])


def test_same_seed_same_run_other_seed_differs_and_deepcopy():
    ta, tb = _stream(16)
    xt, _ = _images(6, [0, 1, 2, 3], seed=9)
    kw = {**FAST, "epochs": 1, "tii_epochs": 1, "ca_epochs": 1}

    def run(seed):
        s = HiDePrompt(_pretrained_like(), seed=seed, **kw)
        return s, [s.train_task(t) for t in (ta, tb)]

    torch.manual_seed(0)
    a, ha = run(1)
    torch.manual_seed(5)                       # the global generator plays no part
    b, hb = run(1)
    c, hc = run(2)
    assert ha == hb and ha != hc
    assert torch.equal(a.predict(xt), b.predict(xt)) and not torch.equal(a.predict(xt), c.predict(xt))
    d = copy.deepcopy(a)
    assert torch.equal(d.predict(xt), a.predict(xt))


def test_defaults_registered_and_task_scenario_uses_the_known_task():
    assert _REGISTRY["hide_prompt"] is HiDePrompt and HiDePrompt.needs_vit_model
    d = HiDePrompt(vit_backbone(num_classes=4, tiny=True, seed=0))
    assert (d.prompt_length, d.pool_size, d.prompt_layers, d.prompt_momentum, d.reg, d.epochs, d.batch_size) == \
        (5, 10, (0, 1), 0.01, 0.1, 50, 24)
    assert (d.lr, d.tii_lr, d.ca_lr, d.tii_epochs, d.ca_epochs, d.ca_batch, d.tii_ca_batch, d.n_centroids) == \
        (pytest.approx(0.0028125), pytest.approx(4.6875e-5), pytest.approx(4.6875e-4), 20, 30, 120, 24, 10)
    assert isinstance(d.optimizer, torch.optim.Adam) and d.optimizer.param_groups[1]["lr"] == pytest.approx(0.00028125)
    s = HiDePrompt(_pretrained_like(), scenario="task", **{**FAST, "epochs": 1, "tii_epochs": 1, "ca_epochs": 1})
    ta, tb = _stream(16)
    s.train_task(ta)
    s.train_task(tb)
    out = s.predict(_images(3, [0, 1], seed=3)[0], tb)
    assert out[:, :2].isinf().all() and not out[:, 2:].isinf().any()
    with pytest.raises(ValueError, match="needs task boundaries"):
        s.observe(torch.zeros(2, 3, 32, 32), torch.tensor([0, 1]))


def test_trains_on_a_non_cpu_device():
    meta = torch.device("meta")
    s = HiDePrompt(vit_backbone(num_classes=4, tiny=True, seed=0), device=meta,
                   **{**FAST, "epochs": 1, "tii_epochs": 1, "ca_epochs": 1, "kmeans_iters": 2})
    ta, tb = _stream(16)
    assert_trains_on_meta(s, (ta, tb), 1)


# ----------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("model, match", [
    (MLP(6, 4, hidden=(8,)), "model must be a clkit.models.vit.ViTBackbone.*MLP"),
    ("vit", "model must be a torch.nn.Module, got str"),
])
def test_wrong_models_are_refused(model, match):
    with pytest.raises(TypeError, match=match):
        HiDePrompt(model)


@pytest.mark.parametrize("kwargs, match", [
    (dict(prompt_length=0), "prompt_length"), (dict(pool_size=0), "pool_size"),
    (dict(prompt_layers=(7,)), "prompt_layers must name a block"), (dict(prompt_layers=()), "prompt_layers"),
    (dict(prompt_momentum=1.0), r"prompt_momentum must be a number in \[0, 1\)"), (dict(reg=-1), "reg"),
    (dict(temperature=0), "temperature"), (dict(clip_grad=0.0), "clip_grad"), (dict(tii_epochs=-1), "tii_epochs"),
    (dict(ca_lr=0), "ca_lr"), (dict(n_centroids=0), "n_centroids"), (dict(prefix_layout="rows"), "prefix_layout"),
    (dict(loss="mse"), "classification only"), (dict(ca_batch=0), "ca_batch"),
])
def test_bad_parameters_are_refused_naming_them(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        HiDePrompt(vit_backbone(num_classes=4, tiny=True, seed=0), **kwargs)


def test_labels_outside_the_head_and_too_many_tasks_are_refused():
    s = HiDePrompt(vit_backbone(num_classes=4, tiny=True, seed=0), **{**FAST, "pool_size": 1, "epochs": 0,
                                                                      "tii_epochs": 0, "ca_epochs": 0})
    with pytest.raises(ValueError, match=r"class\(es\) \[4\].*allowed: 0 \.\.\. 3"):
        s.train_task(Task(torch.zeros(2, 3, 32, 32), torch.tensor([0, 4])))
    ta, tb = _stream(4)
    s.train_task(ta)
    with pytest.raises(ValueError, match=r"pool_size \(1\) prompt slots are all used"):
        s.train_task(tb)
