"""CODA-Prompt: known answers from the authors' code (losses, gradients, Adam updates, logits over two tasks,
Gram-Schmidt, the orthogonality penalty, the cosine schedule), the prefix helper, frozen parts, learning on a
tiny ViT, drop_last, determinism, the meta device, refusals."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from clkit.models import MLP
from clkit.models.vit import RANDOM_INIT, ViTBackbone, vit_backbone
from clkit.models.vit_prefix import prefix_attention, prefix_block_forward
from clkit.strategies import Task, make_strategy
from clkit.strategies.coda_prompt import CODAPrompt, cosine_lr, gram_schmidt

from strategy_helpers import assert_trains_on_meta, images as _images, pretrained_like as _pretrained_like, two_tasks

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = dict(pool_size=4, prompt_length=2, n_tasks=2)

# ----------------------------------------------------------------------------- known answers
# Made by /tmp/authors_coda/make_numbers.py (re-run: export the PILOT tree of AIGNLAI/EDGE at commit
# a60c1179cf762e8c1197ab876a3c06db3a49b639 with `git --git-dir=DIR archive HEAD PILOT | tar -x -C /tmp/authors_coda`,
# then `cd /tmp/authors_coda/PILOT && PYTHONPATH=. /work/main/.venv/bin/python ../make_numbers.py`; the script
# shims the timm 1.0 module paths other PILOT backbones import, and the scratch copy of
# PILOT/backbone/vit_coda_promtpt.py line 337 gets `.clone()` after `torch.zeros((1,), requires_grad=True).to(...)`:
# on the CPU `.to()` returns the leaf itself and its `+=` fails; on CUDA, where the authors ran it, it is a copy).
# Recipe: the authors' VisionTransformer (PILOT/backbone/vit_coda_promtpt.py) at img 16, patch 8, width 24, depth 2,
# 2 heads, every parameter in sorted-name order = randn(generator seed 0) * 0.3 (+1 for LayerNorm weights); the
# head nn.Linear(24, 6) the same with seed 1; CodaPrompt(24, n_tasks=3, [pool 6, length 4, ortho_mu 0], key_dim=24)
# (PILOT/backbone/prompt.py), task 0's components from its gram_schmidt after torch.manual_seed(11) in the order
# K, A, P per layer; wrapped in CodaPromptVitNet (PILOT/utils/inc_net.py, its forward). Task 0: images
# randn(8, 3, 16, 16, seed 7), labels [0, 1] * 4; one step of Learner._init_train's loss (PILOT/models/coda_prompt.py:
# logits[:, :total], logits[:, :known] = -inf, cross-entropy + prompt_loss.sum()) with its get_optimizer's fresh Adam
# (lr 0.001, weight decay 0). Then torch.manual_seed(12), process_task_count() (Gram-Schmidt of task 1), task 1:
# images seed 8, labels [2, 3] * 4, the same step. Logits are rows of the batch, flattened.
TASK0 = dict(
    loss=1.17290604,
    logits=[-0.224803418, 1.57248855, -1.12220907, 1.24797237, -0.669035077, 1.47979498, -0.790049076, 1.64788413,
            0.150538534, 1.43943059, -1.20398581, 2.20857358, -1.52495992, 1.6955353, -0.0554870963, 1.59247732],
    grads={"k0": 0.0360848531, "a0": 0.0269732513, "p0": 0.0642106384, "k1": 0.00269683986, "a1": 0.00222864049,
           "p1": 0.00731312763, "fc_w": 2.48416138, "fc_b": 0.555051684},
    p0_update=0.0138562405,
    eval_logits=[-0.204944596, 1.55251336, -1.10810435, 1.23391974, -0.645438313, 1.45761383, -0.774668455,
                 1.6320591, 0.164094791, 1.42532313, -1.18539, 2.18961215, -1.50364566, 1.67478967, -0.0369154662,
                 1.57260013],
)
TASK1_ROWS_K0 = [0.0346663706, -0.134074464, 0.160616085, -0.113348186, -0.175788611, -0.239737153, 0.18422927,
                 0.0873445496, 0.105111554, -0.270423234]             # keys of layer 0, rows 2-3, first 5 entries
TASK1_ROWS_P1 = [-0.0214759, -0.141701236, -0.185039118, 0.108306512, 0.23359488, 0.0156916883]   # P_1[2:4, 0, :3]
TASK1 = dict(
    loss=0.504694819,
    logits=[1.1237421, -0.0543385446, 1.28287971, 0.264177591, 0.21569863, -1.27695382, -0.697088122, 0.475980908,
            -0.85305047, -1.37582803, -1.60284293, -0.817593694, -1.36800039, -1.260993, -1.03237665, -0.262494773],
    grads={"k0": 0.00394633086, "a0": 0.00348605658, "p0": 0.014016008, "k1": 0.00256635295, "a1": 0.00316329696,
           "p1": 0.00603172416, "fc_w": 0.74303931, "fc_b": 0.0500037633},
    p0_update=0.0138550159,
    eval_logits=[-0.793902159, -1.52316093, 1.1192193, -0.0499342233, -0.475250423, 1.46108437, 1.2709831,
                 0.275982738, -1.21456504, 1.4960556, 0.21724163, -1.27721059, 0.756713688, 1.29905438, -0.707902014,
                 0.4856776, 0.437211752, -0.214773834, -0.846578419, -1.38209438, -2.32154536, 0.947147012,
                 -1.61128795, -0.809105992, -0.747486353, 1.02475405, -1.3671428, -1.26154149, -0.758484185,
                 1.16163993, -1.03698981, -0.257654607],
)
# then the components of layers 0, 1 set to randn * 0.5 (generator seed 21; layer 0: K, A, P, then layer 1), task
# count 1, ortho_mu 0.1, one training forward on task 1's batch: prompt_loss.sum(), the loss, the components' gradients
ORTHO = dict(penalty=25.972147, loss=26.4562416,
             grads=[0.738696039, 0.679634571, 3.43719292, 0.637981474, 0.274566144, 3.91504455])
# CodaPrompt(5, 3, [6, 4, 0.0]).gram_schmidt(sin(arange(30)).reshape(6, 5)) with task_count 1 after torch.manual_seed(3)
GS_OUT = [0.0, 0.841470957, 0.909297407, 0.141120002, -0.756802499, -0.958924294, -0.279415488, 0.656986594,
          0.989358246, 0.412118495, 0.516004026, -0.0230538882, 0.66263032, -0.176464573, 0.512825251, -0.617746651,
          0.150518715, 0.090981029, -0.725191474, 0.248098731] + [0.0] * 10
# the learning rates of 4 epochs under PILOT/models/coda_prompt.py's CosineSchedule(K=4), base 0.001
COSINE_LRS = [0.001, 0.001, 0.000868631514, 0.000509041416]


def _fill(module, seed, scale=0.3):
    g = torch.Generator().manual_seed(seed)
    params = dict(module.named_parameters())
    with torch.no_grad():
        for name in sorted(params):
            parts = name.split(".")
            v = torch.randn(params[name].shape, generator=g) * scale
            params[name].copy_(1 + v if name.endswith("weight") and len(parts) > 1 and "norm" in parts[-2] else v)


def _authors_tiny():
    import timm

    vit = timm.create_model("vit_base_patch16_224", pretrained=False, num_classes=0, img_size=16, patch_size=8,
                            embed_dim=24, depth=2, num_heads=2)
    _fill(vit, 0)
    head = nn.Linear(24, 6)
    _fill(head, 1)
    return ViTBackbone(vit, head, RANDOM_INIT)


def _batch(seed, labels):
    return torch.randn(8, 3, 16, 16, generator=torch.Generator().manual_seed(seed)), torch.tensor(labels * 4)


def _grads(net):
    out = {f"{k}{i}": float(getattr(net, a).grad[i].norm()) for i in (0, 1)
           for k, a in (("k", "keys"), ("a", "attention"), ("p", "prompts"))}
    out.update(fc_w=float(net.head.weight.grad.norm()), fc_b=float(net.head.bias.grad.norm()))
    return out


def _close(got, want, rel=1e-5, abs_=1e-6):
    torch.testing.assert_close(torch.as_tensor(got, dtype=torch.float64).flatten(),
                               torch.tensor(want, dtype=torch.float64), rtol=rel, atol=abs_)


def test_two_tasks_match_the_authors_code():
    s = CODAPrompt(_authors_tiny(), pool_size=6, prompt_length=4, n_tasks=3, epochs=1, batch_size=8, seed=11)
    net = s.model
    for known, (x, y), want, task_id in ((0, _batch(7, [0, 1]), TASK0, 0), (2, _batch(8, [2, 3]), TASK1, 1)):
        if task_id == 1:   # Gram-Schmidt of task 1 with the authors' draws, on a copy (before_task does it below)
            c = copy.deepcopy(s)
            c.model.init_components(1, torch.Generator().manual_seed(12))
            _close(c.model.keys[0, 2:4, :5].detach(), TASK1_ROWS_K0)
            _close(c.model.prompts[1, 2:4, 0, :3].detach(), TASK1_ROWS_P1)
            s._component_generator.manual_seed(12)
            ref = c.model
        else:
            ref = net
        before = ref.prompts[0].detach().clone()
        with torch.no_grad():
            logits = ref(x, train=True)[:, known:known + 2]
        _close(logits, want["logits"])
        losses = s.train_task(Task(x, y, task_id=task_id))
        _close(losses, [want["loss"]])
        got = _grads(net)
        for k, v in want["grads"].items():
            assert got[k] == pytest.approx(v, rel=1e-5, abs=1e-9), k
        _close(float((net.prompts[0].detach() - before).norm()), [want["p0_update"]])
        _close(s.predict(x)[:, :known + 2], want["eval_logits"])
    # the orthogonality penalty (ortho_mu 0.1) on non-orthogonal components, task count 1
    g = torch.Generator().manual_seed(21)
    with torch.no_grad():
        for i in (0, 1):
            for p in (net.keys, net.attention, net.prompts):
                p[i].copy_(torch.randn(p[i].shape, generator=g) * 0.5)
    net.ortho_mu = 0.1
    net.zero_grad(set_to_none=True)
    x, y = _batch(8, [2, 3])
    logits, penalty = net(x, train=True, penalty=True)
    loss = F.cross_entropy(logits + s._train_mask, y) + penalty
    loss.backward()
    _close([float(penalty.detach()), float(loss.detach())], [ORTHO["penalty"], ORTHO["loss"]])
    _close([float(getattr(net, a).grad[i].norm()) for i in (0, 1) for a in ("keys", "attention", "prompts")],
           ORTHO["grads"])


def test_gram_schmidt_and_cosine_schedule_match_the_authors_code():
    vv = torch.arange(30, dtype=torch.float32).reshape(6, 5).sin()
    out = gram_schmidt(vv, 2, 4, torch.Generator().manual_seed(3))
    _close(out, GS_OUT)
    assert torch.equal(out[:2], vv[:2]) and not out[4:].any()
    _close(out[2:4].norm(dim=1), [1.0, 1.0])
    basis = gram_schmidt(torch.eye(6, 5) * 2, 2, 5, torch.Generator().manual_seed(0))   # earlier rows orthogonal:
    gram = basis @ basis.T                                                              # the new rows are too
    torch.testing.assert_close(gram[2:5, :5], torch.cat([torch.zeros(3, 2), torch.eye(3)], 1), atol=1e-6, rtol=0)
    _close([cosine_lr(0.001, e, 4) for e in range(4)], COSINE_LRS, rel=1e-9)
    assert cosine_lr(0.001, 0, 1) == 0.001
    p3 = gram_schmidt(torch.zeros(4, 3, 2), 0, 2, torch.Generator().manual_seed(0))   # 3-d: flattened rows
    assert p3.shape == (4, 3, 2)
    _close(p3.reshape(4, 6)[:2] @ p3.reshape(4, 6)[:2].T, [1, 0, 0, 1], abs_=1e-6)


def test_prefix_block_forward_is_attention_over_prefix_and_tokens():
    """Recompute a prefixed block by hand: keys/values [prefix ; tokens] split into heads."""
    vit = _authors_tiny().features
    blk = vit.blocks[0]
    g = torch.Generator().manual_seed(0)
    x, pk, pv = (torch.randn(2, n, 24, generator=g) for n in (5, 3, 3))
    with torch.no_grad():
        h = blk.norm1(x)
        q, k, v = blk.attn.qkv(h).reshape(2, 5, 3, 2, 12).permute(2, 0, 3, 1, 4)
        k = torch.cat([pk.reshape(2, 3, 2, 12).transpose(1, 2), k], 2)
        v = torch.cat([pv.reshape(2, 3, 2, 12).transpose(1, 2), v], 2)
        a = ((q @ k.transpose(-2, -1)) * 12 ** -0.5).softmax(-1) @ v
        y = x + blk.attn.proj(a.transpose(1, 2).reshape(2, 5, 24))
        y = y + blk.mlp(blk.norm2(y))
        torch.testing.assert_close(prefix_block_forward(blk, x, pk, pv), y, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(prefix_block_forward(blk, x), blk(x))
    with pytest.raises(ValueError, match="together"):
        prefix_attention(blk.attn, x, pk, None)


# ----------------------------------------------------------------------------- training

def _stream(n=16, seed=0):
    return two_tasks(n, seed)


def _coda(seed=0, **kw):
    kw = {**SMALL, "lr": 0.01, "epochs": 1, "batch_size": 8, "seed": seed, **kw}
    return CODAPrompt(vit_backbone(num_classes=4, tiny=True, seed=0), **kw)


def test_learns_two_tasks_above_chance():
    s = CODAPrompt(_pretrained_like(), **SMALL, lr=0.01, epochs=4, batch_size=16, seed=0)
    accs = []
    for classes, tid in (([0, 1], 0), ([2, 3], 1)):
        x, y = _images(64, classes, seed=tid)
        losses = s.train_task(Task(x, y, task_id=tid))
        assert losses[-1] < losses[0]
        xt, yt = _images(32, classes, seed=10 + tid)
        accs.append(s.evaluate(Task(xt, yt, task_id=tid)))
    xt, yt = _images(64, [0, 1, 2, 3], seed=20)
    final = s.evaluate(Task(xt, yt))
    assert min(accs) > 0.8 and final > 0.4, (accs, final)   # chance: 0.5 per task, 0.25 over all four


def test_vit_frozen_old_components_and_head_rows_frozen_later_ones_zero():
    s = _coda()
    net = s.model
    vit0 = {k: v.clone() for k, v in net.vit.state_dict().items()}
    assert {id(p) for g in s.optimizer.param_groups for p in g["params"]} == \
        {id(net.prompts), id(net.keys), id(net.attention), id(net.head.weight), id(net.head.bias)}
    assert not net.keys[:, 2:].any() and not net.prompts[:, 2:].any()          # task 1's components: zero
    ta, tb = _stream()
    s.train_task(ta)
    after0 = {n: p.detach().clone() for n, p in net.named_parameters() if not n.startswith("vit.")}
    assert not net.keys[:, 2:].any()
    s.train_task(tb)
    for k, v in net.vit.state_dict().items():
        assert torch.equal(v, vit0[k]), k
    for name in ("prompts", "keys", "attention"):
        p = getattr(net, name).detach()
        assert torch.equal(p[:, :2], after0[name][:, :2]), name           # task 0's components frozen
        assert not torch.equal(p[:, 2:], after0[name][:, 2:]), name       # task 1's trained
    assert torch.equal(net.head.weight[:2], after0["head.weight"][:2])     # task 0's classes' rows untouched
    assert not torch.equal(net.head.weight[2:], after0["head.weight"][2:])
    assert net.task_count == 1 and not net.vit.training


def test_new_components_are_orthonormal_and_orthogonal_to_the_old_ones():
    s = _coda(pool_size=6, n_tasks=3)
    net = s.model
    eye4 = torch.eye(4)
    for p in (net.keys, net.attention, net.prompts):      # task 0's components: orthonormal, the rest zero
        for i in range(len(net.layers)):
            rows = p[i].detach().reshape(6, -1)
            torch.testing.assert_close(rows[:2] @ rows[:2].T, eye4[:2, :2], atol=1e-5, rtol=0)
            assert not rows[2:].any()
    fresh = copy.deepcopy(net)
    fresh.init_components(1, torch.Generator().manual_seed(5))   # untrained earlier rows: an orthonormal basis
    for p in (fresh.keys, fresh.attention, fresh.prompts):
        for i in range(len(fresh.layers)):
            rows = p[i].detach().reshape(6, -1)
            torch.testing.assert_close(rows[:4] @ rows[:4].T, eye4, atol=1e-5, rtol=0)
            assert not rows[4:].any()
    ta, tb = _stream()
    s.train_task(ta)
    s.begin_task(tb)                                      # trained earlier rows: the new ones nearly orthogonal
    for p in (net.keys, net.attention, net.prompts):
        for i in range(len(net.layers)):
            rows = p[i].detach().reshape(6, -1)
            torch.testing.assert_close(rows[2:4].norm(dim=1), torch.ones(2))
            assert (rows[2:4] @ rows[:2].T).abs().max() < 0.05
            assert not rows[4:].any()


def test_masks_train_to_the_task_evaluate_to_the_seen_classes():
    ta, tb = _stream()
    s = _coda()
    s.train_task(ta)
    x, _ = _images(4, [0, 1, 2, 3], seed=5)
    out = s.predict(x)
    assert out.isinf()[:, 2:].all() and not out.isinf()[:, :2].any()
    s.begin_task(tb)
    assert torch.isfinite(s._train_mask).nonzero().flatten().tolist() == [2, 3]
    assert not s.predict(x).isinf().any()
    ts = _coda(scenario="task")
    ts.train_task(ta)
    out = ts.predict(x, tb)
    assert out.isinf()[:, :2].all() and not out.isinf()[:, 2:].any()


def test_drop_last_and_the_cosine_rate_per_epoch():
    x, y = _images(20, [0, 1])
    s = _coda(epochs=3, batch_size=8)
    seen = []
    step = s.train_step
    s.train_step = lambda *a, **k: (seen.append(s.optimizer.param_groups[0]["lr"]), step(*a, **k))[1]
    s.train_task(Task(x, y, task_id=0))
    assert s.steps == 6                                   # 2 full batches per epoch; the 4 left over dropped
    assert seen == [cosine_lr(0.01, e, 3) for e in (0, 0, 1, 1, 2, 2)]
    keep = _coda(drop_last=False, batch_size=8)
    keep.train_task(Task(x, y, task_id=0))
    assert keep.steps == 3
    small = _coda(batch_size=32)
    small.train_task(Task(x, y, task_id=0))
    assert small.steps == 1                               # a task smaller than one batch still trains
    const = _coda(epochs=2, scheduler="constant")
    const.train_task(Task(x, y, task_id=0))
    assert const.optimizer.param_groups[0]["lr"] == 0.01


def test_same_seed_same_run_other_seed_differs_and_deepcopy():
    ta, tb = _stream()
    xt, _ = _images(8, [0, 1, 2, 3], seed=9)

    def run(seed):
        s = _coda(seed=seed)
        return s, [s.train_task(t) for t in (ta, tb)]

    torch.manual_seed(0)
    a, ha = run(1)
    torch.manual_seed(123)                  # the global generator plays no part
    b, hb = run(1)
    c, hc = run(2)
    assert ha == hb and ha != hc
    assert torch.equal(a.predict(xt), b.predict(xt)) and not torch.equal(a.predict(xt), c.predict(xt))
    d = copy.deepcopy(a)
    assert torch.equal(d.predict(xt), a.predict(xt))


def test_registered_defaults_and_task_boundaries():
    s = make_strategy("coda_prompt", vit_backbone(num_classes=4, tiny=True, seed=0), **SMALL)
    assert isinstance(s, CODAPrompt)
    d = CODAPrompt(vit_backbone(num_classes=4, tiny=True, seed=0))
    assert (d.pool_size, d.prompt_length, d.ortho_mu, d.n_tasks, d.scheduler, d.drop_last) == \
        (100, 8, 0.0, 10, "cosine", True)
    assert (d.lr, d.epochs, d.batch_size, d.weight_decay, type(d.optimizer).__name__) == (0.001, 20, 128, 0.0, "Adam")
    assert d.model.layers == (0, 1) and d.model.per_task == 10          # the tiny ViT has 2 blocks
    with pytest.raises(ValueError, match="needs task boundaries"):
        s.observe(torch.zeros(2, 3, 32, 32), torch.tensor([0, 1]))
    ta, tb = _stream()
    s.train_task(ta)
    s.train_task(tb)
    with pytest.raises(ValueError, match="n_tasks=2"):
        s.train_task(Task(*_images(4, [0, 1]), task_id=2))


def test_trains_on_a_non_cpu_device():
    meta = torch.device("meta")
    s = CODAPrompt(vit_backbone(num_classes=4, tiny=True, seed=0), device=meta, epochs=2, batch_size=8, ortho_mu=0.1,
                   **SMALL)
    ta, tb = _stream()
    assert_trains_on_meta(s, (ta, tb), 2)


# ----------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("model, match", [
    (MLP(6, 4, hidden=(8,)), "model must be a clkit.models.vit.ViTBackbone.*MLP"),
    ("vit", "model must be a torch.nn.Module, got str"),
])
def test_wrong_models_are_refused(model, match):
    with pytest.raises(TypeError, match=match):
        CODAPrompt(model)


@pytest.mark.parametrize("kwargs, match", [
    (dict(prompt_length=5), "prompt_length must be even"), (dict(prompt_length=0), "prompt_length"),
    (dict(pool_size=3, n_tasks=4), r"pool_size must be >= n_tasks \(4\)"), (dict(n_tasks=0), "n_tasks"),
    (dict(ortho_mu=-0.1), "ortho_mu"), (dict(layers=(7, 8)), "layers must name at least one"),
    (dict(layers=3), "layers must be a sequence"), (dict(layers=(0, -1)), "layers"),
    (dict(scheduler="steplr"), "scheduler"), (dict(drop_last=1), "drop_last"),
    (dict(loss="mse"), "classification only"), (dict(seed=1.5), "seed must be an integer"),
])
def test_bad_parameters_are_refused_naming_them(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        CODAPrompt(vit_backbone(num_classes=4, tiny=True, seed=0), **kwargs)


def test_labels_outside_the_head_are_refused():
    with pytest.raises(ValueError, match=r"class\(es\) \[4\].*allowed: 0 \.\.\. 3"):
        _coda().train_task(Task(torch.zeros(2, 3, 32, 32), torch.tensor([0, 4])))
