"""L2P: key-query selection and its surrogate (known answers), the prompted sequence, the frozen ViT,
the trained parts, learning on a tiny ViT, masks, determinism, deep copies, the meta device, refusals."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from clkit.models import MLP
from clkit.strategies import L2P, Task, available_strategies, make_strategy
from clkit.strategies.prompt import select_prompts

from strategy_helpers import assert_trains_on_meta, images as _images, pretrained_like, tiny_vit as _vit, two_tasks

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = dict(pool_size=4, prompt_length=2, top_k=2)


def _stream(n=32, seed=0):
    return two_tasks(n, seed)


def _l2p(seed=0, **kw):
    kw = {**SMALL, "lr": 0.05, "epochs": 1, "batch_size": 16, "seed": seed, **kw}
    return L2P(_vit(), **kw)


# ----------------------------------------------------------------------------- known answers

def test_selection_and_surrogate_known_answer():
    keys = torch.eye(5)
    q = torch.tensor([[0.0, 0.6, 0.0, 0.8, 0.0]])    # unit: cos 0.8 with key 3, 0.6 with key 1
    idx, loss = select_prompts(q, keys, 2)
    assert idx.tolist() == [[3, 1]]
    assert float(loss) == pytest.approx((1 - 0.8) + (1 - 0.6), abs=1e-6)
    # two rows: the surrogate is the batch mean of the per-row sums; keys are normalised too
    q2 = torch.tensor([[0.0, 0.6, 0.0, 0.8, 0.0], [0.3, 0.0, 0.0, 0.0, 0.4]])
    idx, loss = select_prompts(q2, 3.0 * keys, 2)
    assert idx.tolist() == [[3, 1], [4, 0]]
    hand = ((1 - 0.8) + (1 - 0.6) + (1 - 0.8) + (1 - 0.6)) / 2
    assert float(loss) == pytest.approx(hand, abs=1e-6)
    # the surrogate is differentiable in the keys and equals the reference's reduce_sim up to top_k
    k = (torch.rand(5, 5, generator=torch.Generator().manual_seed(0)) * 2 - 1).requires_grad_()
    idx, loss = select_prompts(q2, k, 3)
    reduce_sim = (F.normalize(k, dim=1)[idx] * F.normalize(q2, dim=1)[:, None]).sum() / 2
    assert float(loss.detach()) == pytest.approx(3 - float(reduce_sim.detach()), abs=1e-6)
    loss.backward()
    assert k.grad is not None and k.grad.abs().sum() > 0


def test_batchwise_selection_takes_the_most_frequent_ids_ties_to_the_smaller():
    keys = torch.eye(4)
    q = torch.tensor([[1.0, 0.5, 0, 0], [0, 1.0, 0, 0.5], [0, 0.5, 0, 1.0], [0, 0, 1.0, 0.5]])
    per_row, _ = select_prompts(q, keys, 2)
    assert per_row.tolist() == [[0, 1], [1, 3], [3, 1], [2, 3]]
    idx, loss = select_prompts(q, keys, 2, batchwise=True)      # counts: 0:1, 1:3, 2:1, 3:3
    assert idx.tolist() == [[1, 3]] * 4
    cos = F.normalize(q, dim=1)[:, [1, 3]]
    assert float(loss) == pytest.approx(float((1 - cos).sum() / 4), abs=1e-6)
    q = torch.tensor([[1.0, 0.5, 0, 0], [0, 0, 0.5, 1.0]])       # rows [0, 1] and [3, 2]: all tie
    idx, _ = select_prompts(q, keys, 2, batchwise=True)
    assert idx.tolist() == [[0, 1], [0, 1]]


def test_prompted_sequence_is_cls_prompts_patches_and_head_reads_prompt_mean():
    """Recompute the prompted forward by hand from timm's pieces."""
    s = _l2p()
    net = s.model
    vit = net.vit
    x, _ = _images(3, [0, 1, 2])
    idx = torch.tensor([[2, 0], [1, 3], [0, 1]])
    with torch.no_grad():
        tokens = vit.patch_embed(x)
        cls = vit.cls_token.expand(3, -1, -1) + vit.pos_embed[:, :1]
        patches = tokens + vit.pos_embed[:, 1:]
        prompts = net.prompts[idx].reshape(3, 4, -1) + vit.pos_embed[:, :1]
        seq = torch.cat([cls, prompts, patches], 1)
        assert seq.shape[1] == 1 + 4 + 16
        out = vit.norm(vit.blocks(seq))
        hand = net.head(out[:, 1:5].mean(1))
        got = net.head(net.prompted(x, idx))
    torch.testing.assert_close(got, hand)
    # the query is the unprompted ViT's CLS feature
    torch.testing.assert_close(net.query(x), vit(x))
    with torch.no_grad():
        ids, _ = select_prompts(vit(x), net.keys, 2)
        torch.testing.assert_close(net(x), net.head(net.prompted(x, ids)))


def test_prompts_and_keys_are_uniform_minus_one_one_from_the_seed():
    a, b, c = _l2p(seed=3), _l2p(seed=3), _l2p(seed=4)
    p = a.model.prompts.detach()
    assert p.min() >= -1 and p.max() <= 1 and p.min() < -0.5 and p.max() > 0.5
    assert torch.equal(p, b.model.prompts) and torch.equal(a.model.keys, b.model.keys)
    assert not torch.equal(p, c.model.prompts)


# ----------------------------------------------------------------------------- training

def test_vit_frozen_prompts_keys_head_trained():
    s = _l2p()
    vit0 = {k: v.clone() for k, v in s.model.vit.state_dict().items()}
    trained0 = {n: p.detach().clone() for n, p in s.model.named_parameters() if not n.startswith("vit.")}
    assert set(trained0) == {"prompts", "keys", "head.weight", "head.bias"}
    assert {id(p) for g in s.optimizer.param_groups for p in g["params"]} == \
        {id(p) for n, p in s.model.named_parameters() if not n.startswith("vit.")}
    ta, tb = _stream()
    s.train_task(ta)
    s.train_task(tb)
    assert not s.model.vit.training and s.model.training
    for k, v in s.model.vit.state_dict().items():
        assert torch.equal(v, vit0[k]), k
    for n, p in s.model.named_parameters():
        if not n.startswith("vit."):
            assert not torch.equal(p.detach(), trained0[n]), n
            assert not (n == "keys" and torch.isnan(p).any())
    assert s.last_ids.shape == (len(tb) % 16 or 16, 2)


def _pretrained_like(seed=0):
    """The tiny ViT with its blocks' linear layers drawn at std ``1 / sqrt(fan_in)``.

    timm's random initialisation (std 0.02) leaves the blocks' contributions to the residual stream
    negligible next to uniform(-1, 1) prompts, so the prompt tokens' outputs carry almost no image
    information (measured: the head stays at chance after 30 epochs); a pre-trained ViT has no such
    problem. The frozen ViT here stands in for one."""
    return pretrained_like(seed=seed)


def test_learns_a_separable_image_set_above_chance_and_above_the_untrained_baseline():
    x, y = _images(96, [0, 1, 2, 3], seed=0)
    xt, yt = _images(64, [0, 1, 2, 3], seed=1)
    task, test = Task(x, y, task_id=0), Task(xt, yt, task_id=0)
    s = L2P(_pretrained_like(), **SMALL, lr=0.05, epochs=5, batch_size=16)
    s._register_task(task)          # baseline: the untrained prompts and head, the same masks
    s.before_task(task)
    baseline = s.evaluate(test)
    losses = s.train_task(task)
    acc = s.evaluate(test)
    assert losses[-1] < 0.5 * losses[0]
    assert baseline < 0.5 and acc > 0.8, (baseline, acc)


def test_train_mask_task_masks_other_tasks_seen_masks_unseen_and_eval_masks_unseen():
    ta, tb = _stream(n=16)
    for mode, allowed in (("task", [2, 3]), ("seen", [0, 1, 2, 3])):
        s = _l2p(train_mask=mode)
        s.train_task(ta)
        x, _ = _images(4, [0, 1, 2, 3], seed=5)
        assert s.predict(x).isinf()[:, 2:].all() and not s.predict(x).isinf()[:, :2].any()
        s.begin_task(tb)
        finite = torch.isfinite(s._train_mask).nonzero().flatten().tolist()
        assert finite == allowed
        assert not s.predict(x).isinf().any()                 # every class seen now
    ts = _l2p(scenario="task")
    ts.train_task(ta)
    out = ts.predict(_images(4, [0, 1], seed=6)[0], tb)      # task scenario: tb's classes only
    assert out.isinf()[:, :2].all() and not out.isinf()[:, 2:].any()


def test_clip_grad_bounds_the_step_and_adam_and_bf16_train():
    ta, _ = _stream(n=16)
    s = _l2p(clip_grad=0.01, momentum=0.0, lr=1.0, batch_size=16)
    before = torch.cat([p.detach().flatten().clone() for n, p in s.model.named_parameters() if "vit." not in n])
    s.train_task(ta)                                    # one step of plain SGD: |step| = lr * |clipped grad|
    after = torch.cat([p.detach().flatten() for n, p in s.model.named_parameters() if "vit." not in n])
    assert 0 < float((after - before).norm()) <= 0.01 + 1e-6
    for kw in (dict(optimizer="adam", lr=1e-3), dict(precision="bf16")):
        losses = _l2p(epochs=2, **kw).train_task(ta)
        assert len(losses) == 2 and all(torch.isfinite(torch.tensor(losses)))


def test_same_seed_same_run_other_seed_differs_and_deepcopy():
    ta, tb = _stream(n=16)
    xt, _ = _images(8, [0, 1, 2, 3], seed=9)

    def run(seed):
        s = _l2p(seed=seed)
        h = [s.train_task(t) for t in (ta, tb)]
        return s, h

    torch.manual_seed(0)
    a, ha = run(1)
    torch.manual_seed(123)                      # the global generator plays no part
    b, hb = run(1)
    c, hc = run(2)
    assert ha == hb and ha != hc
    assert torch.equal(a.predict(xt), b.predict(xt)) and not torch.equal(a.predict(xt), c.predict(xt))
    d = copy.deepcopy(a)
    assert torch.equal(d.predict(xt), a.predict(xt))
    d.train_task(ta)
    assert not torch.equal(d.model.prompts, a.model.prompts)
    assert torch.equal(a.predict(xt), b.predict(xt))     # the original is untouched


def test_registered_and_built_by_name():
    from clkit.plugins import capabilities

    assert "l2p" in available_strategies()
    s = make_strategy("l2p", _vit(), **SMALL)
    assert isinstance(s, L2P) and (s.pool_size, s.top_k, s.pull_constraint) == (4, 2, 0.1)
    d = L2P(_vit())
    assert (d.pool_size, d.prompt_length, d.top_k, d.pull_constraint, d.batchwise_prompt, d.train_mask) == \
        (10, 5, 5, 0.1, True, "task")
    caps = capabilities(L2P)
    assert "class_scenario" in caps and "task_free" not in caps and "regression" not in caps
    with pytest.raises(ValueError, match="needs task boundaries"):
        s.observe(torch.zeros(2, 3, 32, 32), torch.tensor([0, 1]))


def test_trains_on_a_non_cpu_device():
    """Every tensor on ``meta``, nothing read inside a step, no CPU tensor mixed in."""
    meta = torch.device("meta")
    s = L2P(_vit(), device=meta, epochs=2, batch_size=8, **SMALL)
    ta, tb = _stream(n=16)
    assert_trains_on_meta(s, (ta, tb), 2)


# ----------------------------------------------------------------------------- refusals

class _NotViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Linear(3, 4)
        self.head = nn.Linear(4, 2)


@pytest.mark.parametrize("model, match", [
    (MLP(6, 4, hidden=(8,)), "model must be a clkit.models.vit.ViTBackbone.*MLP"),
    (_NotViT(), "features` lacks patch_embed"),
    ("vit", "model must be a torch.nn.Module, got str"),
])
def test_wrong_models_are_refused(model, match):
    with pytest.raises(TypeError, match=match):
        L2P(model)


def test_head_of_the_wrong_width_is_refused():
    net = _vit()
    net.head = nn.Linear(7, 4)
    with pytest.raises(TypeError, match="in_features=7"):
        L2P(net)


@pytest.mark.parametrize("kwargs, match", [
    (dict(pool_size=3, top_k=5), r"top_k must be <= pool_size \(3\), got 5"),
    (dict(pool_size=0), "pool_size"), (dict(top_k=0), "top_k"), (dict(prompt_length=0), "prompt_length"),
    (dict(pull_constraint=-0.1), "pull_constraint"), (dict(batchwise_prompt=1), "batchwise_prompt"),
    (dict(train_mask="all"), "train_mask"), (dict(clip_grad=0.0), "clip_grad"),
    (dict(loss="mse"), "classification only"), (dict(seed=1.5), "seed must be an integer"),
    (dict(top_k=2.0), "top_k must be an integer"),
])
def test_bad_parameters_are_refused_naming_them(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        L2P(_vit(), **kwargs)


def test_labels_outside_the_head_are_refused():
    s = _l2p()
    with pytest.raises(ValueError, match=r"class\(es\) \[4\].*allowed: 0 \.\.\. 3"):
        s.train_task(Task(torch.zeros(2, 3, 32, 32), torch.tensor([0, 4])))
