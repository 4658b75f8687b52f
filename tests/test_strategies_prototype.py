"""SimpleCIL and RanPAC (clkit.strategies.prototype, clkit.strategies.ranpac): known answers computed by hand with NumPy."""

import numpy as np
import pytest
import torch
from torch import nn

from clkit.models import MLP
from clkit.strategies import RanPAC, SimpleCIL, Task, available_strategies, make_strategy
from clkit.strategies.ranpac import RIDGE_GRID

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _three_classes(n=30, seed=0):
    """2-D features of 3 classes around different directions; tasks A = {0, 1}, B = {2}."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.tensor([[2.0, 0.0], [0.0, 2.0], [-1.5, -1.5]])
    y = torch.arange(3).repeat_interleave(n)
    x = centres[y] + 0.8 * torch.randn(3 * n, 2, generator=g)
    a, b = y < 2, y == 2
    return Task(x[a], y[a], task_id=0), Task(x[b], y[b], task_id=1), x, y


def _relu_features(W_rand, x):
    return np.maximum(x.numpy().astype(np.float32) @ W_rand.numpy(), 0).astype(np.float64)


# ------------------------------------------------------------------------------------------ SimpleCIL

def test_simplecil_prototypes_are_class_means_and_predictions_are_argmax_cosine():
    ta, tb, x, y = _three_classes()
    s = SimpleCIL(nn.Identity(), num_classes=3)
    s.train_task(ta)
    s.train_task(tb)
    X, Y = x.numpy().astype(np.float64), y.numpy()
    means = np.stack([X[Y == c].mean(0) for c in range(3)])
    np.testing.assert_allclose(s.prototypes.numpy(), means, rtol=1e-12, atol=1e-12)
    q = torch.randn(50, 2, generator=torch.Generator().manual_seed(5))
    Q = q.numpy().astype(np.float64)
    cos = (Q / np.linalg.norm(Q, axis=1, keepdims=True)) @ (means / np.linalg.norm(means, axis=1, keepdims=True)).T
    out = s.predict(q)
    np.testing.assert_allclose(out.numpy(), cos, atol=1e-6)
    assert out.argmax(1).tolist() == cos.argmax(1).tolist()


def test_simplecil_uses_the_model_features_frozen_and_in_eval_mode():
    ta, tb, x, y = _three_classes()
    torch.manual_seed(0)
    model = MLP(2, 3, hidden=(5,), dropout=0.5)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    s = make_strategy("simplecil", model, batch_size=7)
    assert s.num_classes == 3 and s.optimizer is None and s.task_free
    s.train_task(ta)
    s.train_task(tb)
    model.eval()
    with torch.no_grad():
        feats = model.features(x).double().numpy()
    means = np.stack([feats[y.numpy() == c].mean(0) for c in range(3)])
    np.testing.assert_allclose(s.prototypes.numpy(), means, rtol=1e-6, atol=1e-7)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    s.model.train()
    assert not s.model.features.training
    assert torch.equal(s.model(x), s.predict(x))   # dropout stays off: the extractor is frozen


def test_simplecil_masks_unseen_classes_keeps_old_prototypes_and_observes_online():
    ta, tb, x, y = _three_classes()
    s = SimpleCIL(nn.Identity(), num_classes=3)
    assert s.predict(x[:2]).eq(0).all()                       # nothing seen: all logits 0
    s.train_task(ta)
    assert torch.isneginf(s.predict(x)[:, 2]).all()            # class 2 not seen yet
    old = s.prototypes[:2].clone()
    s.train_task(tb)
    assert torch.equal(s.prototypes[:2], old)                  # no forgetting of the statistics
    online = SimpleCIL(nn.Identity(), num_classes=3)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(1))
    for i in range(0, len(y), 8):
        online.observe(x[perm[i:i + 8]], y[perm[i:i + 8]])
    torch.testing.assert_close(online.prototypes, s.prototypes, rtol=1e-12, atol=1e-12)
    assert online.seen_classes == {0, 1, 2}


def test_task_scenario_masks_to_the_task_classes():
    ta, tb, x, y = _three_classes()
    s = SimpleCIL(nn.Identity(), num_classes=3, scenario="task")
    s.train_task(ta)
    s.train_task(tb)
    out = s.predict(ta.x, ta)
    assert torch.isneginf(out[:, 2]).all() and torch.isfinite(out[:, :2]).all()
    assert s.evaluate(ta) >= s.evaluate(Task(ta.x, ta.y, classes=(0, 1, 2)))


# ------------------------------------------------------------------------------------------ RanPAC

def test_ranpac_head_equals_numpy_ridge_solution():
    ta, tb, x, y = _three_classes()
    lam = 0.7
    s = RanPAC(nn.Identity(), num_classes=3, projection_dim=16, ridge=lam, seed=3, batch_size=11)
    s.train_task(ta)
    s.train_task(tb)
    W_rand = s.model.head.W_rand
    assert W_rand.shape == (2, 16)
    torch.testing.assert_close(W_rand, torch.randn(2, 16, generator=torch.Generator().manual_seed(3)))
    H = _relu_features(W_rand, x)
    Y = np.eye(3)[y.numpy()]
    G, C = H.T @ H, H.T @ Y
    np.testing.assert_allclose(s.G.numpy(), G, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(s.C.numpy(), C, rtol=1e-10, atol=1e-9)
    W = np.linalg.solve(G + lam * np.eye(16), C)
    assert s.head_weight.dtype == torch.float64
    np.testing.assert_allclose(s.head_weight.numpy(), W, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(s.predict(x).numpy(), H @ W, rtol=1e-4, atol=1e-4)
    assert s.ridges == [lam, lam]
    assert s.evaluate(Task(x, y)) > 0.9


def test_ranpac_head_does_not_depend_on_the_task_order():
    ta, tb, x, y = _three_classes()
    heads = []
    for order in ((ta, tb), (tb, ta)):
        s = RanPAC(nn.Identity(), num_classes=3, projection_dim=16, ridge=0.1, seed=1)
        for t in order:
            s.train_task(t)
        heads.append((s.G.clone(), s.C.clone(), s.head_weight.clone(), s.predict(x)))
    for a, b in zip(*heads):
        assert torch.equal(a, b)


def test_ranpac_chooses_lambda_like_the_paper_on_a_held_out_split():
    """Re-derive the choice by hand: fit on a seeded 80 % of the task's rows, MSE on the rest."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(60, 2, generator=g)
    y = ((x[:, 0] + 0.7 * torch.randn(60, generator=g)) > 0).long()   # noisy: needs some ridge
    s = RanPAC(nn.Identity(), num_classes=2, projection_dim=24, seed=4)
    s.train_task(Task(x, y))
    perm = torch.randperm(60, generator=torch.Generator().manual_seed(4)).numpy()   # the strategy's seed
    fit, val = perm[:48], perm[48:]
    H = _relu_features(s.model.head.W_rand, x)
    Y = np.eye(2)[y.numpy()]
    errors = [np.mean((H[val] @ np.linalg.solve(H[fit].T @ H[fit] + lam * np.eye(24), H[fit].T @ Y[fit])
                       - Y[val]) ** 2) for lam in RIDGE_GRID]
    best = RIDGE_GRID[int(np.argmin(errors))]
    assert sorted(errors)[1] > 1.0001 * min(errors)   # the hand-made answer is not a near tie
    assert s.ridges == [best]
    W = np.linalg.solve(H.T @ H + best * np.eye(24), H.T @ Y)   # then solved with every row
    np.testing.assert_allclose(s.head_weight.numpy(), W, rtol=1e-7, atol=1e-9)


def test_ranpac_own_loop_solves_once_per_task_as_train_task_does():
    """Issue 55: ``train_step`` kept re-solving the ridge head, with its lambda search, on every
    batch. Now the own-loop route (begin_task, train_step per batch, after_task) keeps the
    features and solves once in after_task: the same lambda and head as train_task."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(60, 2, generator=g)
    y = ((x[:, 0] + 0.7 * torch.randn(60, generator=g)) > 0).long()
    tasks = [Task(x[:30], y[:30], task_id=0), Task(x[30:], y[30:], task_id=1)]
    whole = RanPAC(nn.Identity(), num_classes=2, projection_dim=24, seed=4)
    loop = RanPAC(nn.Identity(), num_classes=2, projection_dim=24, seed=4)
    for task in tasks:
        whole.train_task(task)
        loop.begin_task(task)
        for s in range(0, 30, 7):                        # batches of 7 rows, each row once
            loop.train_step(task.x[s:s + 7], task.y[s:s + 7], task)
        loop.after_task(task)
    assert loop.ridges == whole.ridges and len(loop.ridges) == 2   # one choice per task, not per batch
    torch.testing.assert_close(loop.head_weight, whole.head_weight, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(loop.predict(x), whole.predict(x))
    fresh = RanPAC(nn.Identity(), num_classes=2, projection_dim=24, seed=4)
    fresh.begin_task(tasks[0])
    fresh.train_step(tasks[0].x, tasks[0].y, tasks[0])
    assert fresh.ridges == [] and float(fresh.model.head.G.abs().sum()) == 0.0   # kept, not absorbed yet


def test_same_seed_same_run_other_seed_other_projection():
    ta, tb, x, y = _three_classes()

    def run(seed):
        s = make_strategy("ranpac", MLP(2, 3, hidden=(6,)), projection_dim=32, seed=seed)
        for t in (ta, tb):
            assert len(s.train_task(t, epochs=2)) == 2
        return s

    torch.manual_seed(0)
    a = run(5)
    torch.manual_seed(0)
    b = run(5)
    torch.manual_seed(0)
    c = run(6)
    assert torch.equal(a.head_weight, b.head_weight) and a.ridges == b.ridges
    assert torch.equal(a.predict(x), b.predict(x))
    assert not torch.equal(a.model.head.W_rand, c.model.head.W_rand)


def test_epochs_read_each_row_once_and_zero_epochs_absorb_nothing():
    ta, tb, x, y = _three_classes()
    s = RanPAC(nn.Identity(), num_classes=3, projection_dim=8, ridge=1.0, batch_size=7)
    losses = s.train_task(ta, epochs=3)
    assert len(losses) == 3 and len(set(losses)) == 1 and np.isfinite(losses[0])
    assert s.steps == -(-len(ta) // 7)   # one feature pass: the loss reuses the task's features
    G = s.G.clone()
    assert s.train_task(tb, epochs=0) == [] and torch.equal(s.G, G)
    one = RanPAC(nn.Identity(), num_classes=3, projection_dim=8, ridge=1.0)
    one.train_task(ta, epochs=1)
    assert torch.equal(one.G, G)


# ------------------------------------------------------------------------------------------ checks

@pytest.mark.parametrize("kwargs, parameter", [
    (dict(ridge=0.0), "ridge"), (dict(ridge=-1.0), "ridge"), (dict(projection_dim=0), "projection_dim"),
    (dict(ridge_grid=[]), "ridge_grid"), (dict(ridge_grid=[1.0, -1.0]), "ridge_grid"),
    (dict(val_fraction=1.0), "val_fraction"), (dict(val_fraction=0.0), "val_fraction"),
    (dict(num_classes=0), "num_classes"), (dict(loss="mse"), "regression"),
])
def test_bad_parameters_are_refused_naming_them(kwargs, parameter):
    with pytest.raises(ValueError, match=parameter):
        RanPAC(MLP(2, 3, hidden=()), **kwargs)


def test_refusals_of_the_model_and_the_labels():
    with pytest.raises(ValueError, match="num_classes must be given"):
        SimpleCIL(nn.Identity())
    s = SimpleCIL(nn.Identity(), num_classes=2)
    with pytest.raises(ValueError, match=r"class\(es\) \[2\].*num_classes"):
        s.train_task(Task(torch.zeros(3, 2), torch.tensor([0, 1, 2])))


def test_registered_with_their_capabilities():
    from clkit.plugins import capabilities

    names = available_strategies()
    assert "simplecil" in names and "ranpac" in names
    assert "task_free" in capabilities(SimpleCIL) and "task_free" not in capabilities(RanPAC)
    for cls in (SimpleCIL, RanPAC):
        assert "class_scenario" in capabilities(cls) and "regression" not in capabilities(cls)


# ---------------------------------------------------------------------------- as EDGE learners

@pytest.mark.parametrize("name, kwargs", [("simplecil", {}), ("ranpac", {"projection_dim": 32, "ridge": 1.0})])
def test_the_prefix_tree_truth_of_all_90_orders_equals_training_each_order_alone(name, kwargs):
    """EDGE's ground truth on frozen features (6 classes in 3 tasks: all 6!/(2!)^3 = 90 orders,
    EDGE's default MLP as the frozen extractor): the shared truth (for these methods keyed on their
    declared state, :mod:`clkit.edge.state_truth`) gives the same accuracies as training every order on its own; the final accuracy does
    not depend on the order (order-invariant statistics, fixed ridge), the average incremental
    accuracy does."""
    from clkit.edge.combinatorics import enumerate_sequences
    from clkit.edge.learners import LearnerConfig, train_strategy_sequences
    from clkit.plugins import resolve_strategy

    rng = np.random.default_rng(0)
    centres = 2.0 * rng.normal(size=(6, 5))
    x_train = centres[:, None, :] + rng.normal(size=(6, 12, 5))
    x_test = centres[:, None, :] + rng.normal(size=(6, 10, 5))
    seqs = enumerate_sequences(6, 3)
    assert len(seqs) == 90
    cfg = LearnerConfig(hidden=16, epochs=1, batch_size=8)
    learner = resolve_strategy(name)
    tree = train_strategy_sequences(x_train, x_test, seqs, learner, cfg, seed=0, strategy_kwargs=kwargs)
    alone = train_strategy_sequences(x_train, x_test, seqs, learner, cfg, seed=0, strategy_kwargs=kwargs,
                                     share_prefixes=False)
    np.testing.assert_array_equal(tree["acc_matrix"], alone["acc_matrix"])
    np.testing.assert_allclose(tree["final_acc"], tree["final_acc"][0], atol=1e-12)
    assert np.ptp(tree["avg_acc"]) > 0


# ------------------------------------------------------------------ RanPAC as the EDGE authors ran it
# Made by /tmp/authors_ranpac/make_numbers.py (re-run: export the PILOT tree of AIGNLAI/EDGE at commit
# a60c1179cf762e8c1197ab876a3c06db3a49b639 with `git archive HEAD PILOT | tar -x -C /tmp/authors_ranpac`, then
# `cd /tmp/authors_ranpac/PILOT && /work/main/.venv/bin/python ../make_numbers.py`). It drives the authors'
# PILOT/models/ranpac.py:Learner for 3 tasks of 2 classes (incremental_train -> _train -> _init_train on task 0 ->
# setup_RP -> replace_fc; after_task) with PILOT/utils/inc_net.py:SimpleVitNet, the authors' adapter ViT
# PILOT/backbone/vit_adapter.py:VisionTransformer built tiny (16 px, patch 8, dim 24, depth 2, 2 heads, ffn_num 8)
# and PILOT/backbone/linears.py:CosineLinear. Config as exps/ranpac.json but init_cls = increment = 2, tuned_epoch 2,
# batch_size 8 (one batch per epoch), init_lr 0.01, weight_decay 5e-4, min_lr 0, sgd, M 40. Weights: the ViT from
# _ranpac_vit_weights() (split into their q/k/v); the adapters and the cosine head overwritten at the start of
# _init_train by _ranpac_adapter_weights / _ranpac_head_weight; adapter dropout 0; W_rand = randn(24, 40) from
# torch.Generator().manual_seed(0) (clkit's for seed 0); optimise_ridge_parameter returns 10 (the clkit side:
# ridge=10; the choice of lambda is checked above); G and Q held in float64 as clkit's (the authors' float32 sums
# put the ridge weights 3e-5 relative off a float64 solve here; each task's h^T h stays their float32 product).
# Data: _ranpac_data(); the authors' label k is clkit's class ORDER[k]. Recorded: the loss of each step, the
# gradient norms at the first step (block 0 down.w, down.b, up.w, up.b, block 1 the same, fc weight, fc sigma),
# the trained adapters' norms and sigma, and after each task the eval logits on 6 test images, W @ v
# (v = randn(40), seed 9) and the norm of each class's ridge weight.
RP_LOSS = [0.6441220045089722, 0.6439998745918274]
RP_GRAD = [0.01764882169663906, 0.0013277048710733652, 0.013875922188162804, 0.0013411768013611436, 0.007543125655502081,
 0.00017651915550231934, 0.01106631476432085, 0.000246384966885671, 0.09789128601551056, 0.044230058789253235]
RP_ADAPTER_NORMS = [[4.530595302581787, 0.8541494607925415, 4.316823959350586, 1.314170479774475],
 [4.062039852142334, 0.6879237294197083, 3.7522737979888916, 1.5198559761047363]]
RP_SIGMA = 1.000853180885315
RP_LOGITS = [[[0.16860148310661316, 0.13111434876918793], [-0.03513576090335846, 0.31052762269973755],
  [0.03318941965699196, 0.23530814051628113], [0.2737782299518585, -0.05093654990196228],
  [0.3312920033931732, -0.07931507378816605], [0.26525813341140747, -0.028517892584204674]],
 [[0.18985258042812347, 0.04318833351135254, 0.09684276580810547, -0.010712763294577599],
  [0.0023873087484389544, 0.25088274478912354, 0.08219290524721146, -0.07908067107200623],
  [0.001502326806075871, 0.010456922464072704, 0.3853488266468048, -0.014774399809539318],
  [-0.013467262499034405, -0.03459687530994415, -0.014672588557004929, 0.3768143951892853],
  [0.2657763361930847, -0.19513864815235138, 0.14202745258808136, 0.09084995836019516],
  [0.02811415307223797, 0.03277553245425224, -0.05971969664096832, 0.2564130127429962]],
 [[0.14492209255695343, 0.023948729038238525, 0.08273380249738693, 0.001880997559055686, -0.005309108179062605,
   0.03494710102677345],
  [0.01071170438081026, 0.19231665134429932, 0.0410076342523098, -0.06538448482751846, 0.061956021934747696,
   0.02007080614566803],
  [-0.02975885383784771, 0.04577687755227089, 0.3809067904949188, 0.0345287062227726, -0.01331248227506876,
   -0.0454174168407917],
  [-0.04138816520571709, 0.01744963228702545, -0.021047918125987053, 0.1912194937467575, 0.13970696926116943,
   -0.04377038776874542],
  [0.1443842500448227, -0.08902610838413239, 0.15163658559322357, -0.015883559361100197, 0.11590860784053802,
   -0.028825297951698303],
  [-0.04072638601064682, 0.07671739161014557, -0.01836843602359295, 0.11311186850070953, 0.09511137008666992,
   0.03088451735675335]]]
RP_W_DOT = [[0.046948157250881195, -0.08904612064361572],
 [0.10992297530174255, -0.08266603201627731, -0.02789563685655594, -0.006216123700141907],
 [-0.015798300504684448, 0.1276942640542984, -0.05043778568506241, 0.0497964508831501, -0.09175483882427216,
  -0.0713178813457489]]
RP_W_NORM = [[0.16836826503276825, 0.1686895340681076],
 [0.18377409875392914, 0.1987667828798294, 0.12753696739673615, 0.131439208984375],
 [0.2088242769241333, 0.19338002800941467, 0.1280122995376587, 0.17236162722110748, 0.1661914736032486,
  0.1881868839263916]]
RP_D, RP_DEPTH, RP_HEADS, RP_IMG, RP_PATCH, RP_R, RP_M = 24, 2, 2, 16, 8, 8, 40
RP_ORDER = [3, 0, 5, 1, 2, 4]


def _ranpac_vit():
    from timm.models.vision_transformer import VisionTransformer

    vit = VisionTransformer(img_size=RP_IMG, patch_size=RP_PATCH, embed_dim=RP_D, depth=RP_DEPTH, num_heads=RP_HEADS,
                            num_classes=0)
    g = torch.Generator().manual_seed(0)
    sd = {}
    for name, p in sorted(vit.state_dict().items()):        # _ranpac_vit_weights() of the recipe
        t = torch.randn(p.shape, generator=g)
        sd[name] = 1 + 0.1 * t if ("norm" in name and name.endswith("weight")) else 0.3 * t
    vit.load_state_dict(sd)
    return vit


def _ranpac_adapter_weights(block):
    g = torch.Generator().manual_seed(500 + block)
    R, D = RP_R, RP_D
    return {"down_proj.weight": 0.3 * torch.randn(R, D, generator=g), "down_proj.bias": 0.3 * torch.randn(R, generator=g),
            "up_proj.weight": 0.3 * torch.randn(D, R, generator=g), "up_proj.bias": 0.3 * torch.randn(D, generator=g)}


def _ranpac_head_weight(n):
    return 0.3 * torch.randn(n, RP_D, generator=torch.Generator().manual_seed(700))


def _ranpac_data():
    IMG = RP_IMG
    templates = torch.randn(6, 3, IMG, IMG, generator=torch.Generator().manual_seed(100))
    y = torch.arange(6).repeat_interleave(4)
    x = templates[y] + 0.5 * torch.randn(24, 3, IMG, IMG, generator=torch.Generator().manual_seed(1))
    xt = templates[torch.arange(6)] + 0.5 * torch.randn(6, 3, IMG, IMG, generator=torch.Generator().manual_seed(2))
    return x, y, xt


def test_ranpac_adapter_stage_and_cosine_head_match_the_authors_code(monkeypatch):
    """Same ViT, adapters, head, data and W_rand as the authors' RanPAC: the same losses, first-step
    gradients, trained adapters and sigma, ridge weights and cosine logits after every task (1e-5)."""
    from clkit.models.vit import ViTBackbone
    from clkit.strategies import ranpac_adapter

    class _Stack(ranpac_adapter.AdapterStack):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            with torch.no_grad():
                for b, ad in enumerate(self):
                    for key, v in _ranpac_adapter_weights(b).items():
                        dict(ad.named_parameters())[key].copy_(v)

    class _Head(ranpac_adapter.CosineClassifier):
        def __init__(self, dim, n, gen):
            super().__init__(dim, n, gen)
            with torch.no_grad():
                self.weight.copy_(_ranpac_head_weight(n))

    monkeypatch.setattr(ranpac_adapter, "AdapterStack", _Stack)
    monkeypatch.setattr(ranpac_adapter, "CosineClassifier", _Head)
    grads = []
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    hook = register_optimizer_step_pre_hook(
        lambda o, a, k: grads.append([float(p.grad.norm()) for g in o.param_groups for p in g["params"]]))
    try:
        s = RanPAC(ViTBackbone(_ranpac_vit(), nn.Linear(RP_D, 6), "test"), projection_dim=RP_M, ridge=10.0,
                   head="cosine", first_session_adaptation=True, ffn_num=RP_R, tuned_epochs=2, adapter_lr=0.01,
                   adapter_batch_size=8, adapter_dropout=0.0, seed=0, batch_size=8)
        x, y, xt = _ranpac_data()
        order = torch.tensor(RP_ORDER)
        v = torch.randn(RP_M, generator=torch.Generator().manual_seed(9)).double()
        for t in range(3):
            rows = (y == 2 * t) | (y == 2 * t + 1)
            s.train_task(Task(x[rows], order[y[rows]], task_id=t, classes=(RP_ORDER[2 * t], RP_ORDER[2 * t + 1])))
            seen = RP_ORDER[: 2 * t + 2]
            np.testing.assert_allclose(s.predict(xt)[:, seen].numpy(), RP_LOGITS[t], rtol=1e-5, atol=1e-6)
            W = s.head_weight[:, seen].T
            np.testing.assert_allclose((W @ v).numpy(), RP_W_DOT[t], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(W.norm(dim=1).numpy(), RP_W_NORM[t], rtol=1e-5, atol=1e-6)
            if t == 0:
                np.testing.assert_allclose(s.adaptation_losses, RP_LOSS, rtol=1e-5)
                np.testing.assert_allclose(grads[0], RP_GRAD, rtol=1e-5, atol=1e-7)
                assert len(grads) == 2                    # 2 epochs of one batch, then no gradient step
                norms = [[float(p.norm()) for p in ad.parameters()] for ad in s.model.features.adapters]
                np.testing.assert_allclose(norms, RP_ADAPTER_NORMS, rtol=1e-5)
                assert float(s.model.head.scale) == pytest.approx(RP_SIGMA, rel=1e-6)
    finally:
        hook.remove()
    assert all(not p.requires_grad for p in s.model.features.adapters.parameters())


def test_ranpac_cosine_head_is_sigma_times_the_cosine_to_the_ridge_columns():
    """By hand: logit_k = sigma * <h, W_k> / (|h| |W_k|); the linear head's argmax can differ (a long column)."""
    ta, tb, x, y = _three_classes()
    lin = RanPAC(nn.Identity(), num_classes=3, projection_dim=20, ridge=1.0, seed=3)
    cos = RanPAC(nn.Identity(), num_classes=3, projection_dim=20, ridge=1.0, seed=3, head="cosine")
    for s in (lin, cos):
        s.train_task(ta)
        s.train_task(tb)
    torch.testing.assert_close(lin.head_weight, cos.head_weight, rtol=0, atol=0)   # the same ridge solution
    q = torch.randn(40, 2, generator=torch.Generator().manual_seed(4))
    H = _relu_features(cos.model.head.W_rand, q)
    W = cos.head_weight.numpy()
    want = (H @ W) / np.linalg.norm(H, axis=1, keepdims=True).clip(1e-12) / np.linalg.norm(W, axis=0).clip(1e-12)
    np.testing.assert_allclose(cos.predict(q).numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lin.predict(q).numpy(), H @ W, rtol=1e-5, atol=1e-5)
    assert float(cos.model.head.scale) == 1.0                   # no adapter stage: sigma stays 1


def test_ranpac_declares_its_truth_state_and_defaults_keep_the_simplified_method():
    from clkit.models.vit import vit_backbone
    from clkit.strategies.ranpac import RANPAC_AUTHORS

    m = MLP(2, 3, hidden=())
    assert RanPAC(m, ridge=1.0).truth_state == "set" and RanPAC(m).truth_state == "set_last"
    assert SimpleCIL.truth_state == "set"
    vit = vit_backbone(num_classes=4, tiny=True, seed=0)
    a = RanPAC(vit, **{**RANPAC_AUTHORS, "projection_dim": 16})
    assert a.truth_state == "first_set_last" and RanPAC(vit, first_session_adaptation=True, ridge=1.0).truth_state \
        == "first_set"
    d = RanPAC(m)
    assert (d.head, d.first_session_adaptation, d.projection_dim, d.ridge) == ("linear", False, 1000, None)
    assert RANPAC_AUTHORS["tuned_epochs"] == 20 and RANPAC_AUTHORS["ffn_num"] == 64 and RANPAC_AUTHORS["head"] == "cosine"


def test_ranpac_adapter_stage_learns_on_a_tiny_vit_and_freezes_after_the_first_task():
    from clkit.models.vit import vit_backbone

    g = torch.Generator().manual_seed(0)
    templates = torch.randn(4, 3, 32, 32, generator=g)
    y = torch.arange(4).repeat_interleave(6)
    x = templates[y] + 0.3 * torch.randn(24, 3, 32, 32, generator=g)
    s = RanPAC(vit_backbone(num_classes=4, tiny=True, seed=0), projection_dim=64, head="cosine",
               first_session_adaptation=True, ffn_num=4, tuned_epochs=3, adapter_lr=0.05, adapter_batch_size=6,
               seed=1)
    s.train_task(Task(x[y < 2], y[y < 2], task_id=0, classes=(0, 1)))
    losses = s.adaptation_losses
    assert len(losses) == 3 and losses[-1] < losses[0]
    before = [p.clone() for p in s.model.features.adapters.parameters()]
    s.train_task(Task(x[y >= 2], y[y >= 2], task_id=1, classes=(2, 3)))
    assert all(torch.equal(a, b) for a, b in zip(before, s.model.features.adapters.parameters()))
    assert s.adaptation_losses == losses                       # one adapter stage only
    assert s.evaluate(Task(x, y)) > 0.9


@pytest.mark.parametrize("kwargs, match", [
    (dict(head="dot"), "head"), (dict(tuned_epochs=-1), "tuned_epochs"), (dict(ffn_num=0), "ffn_num"),
    (dict(adapter_lr=0.0), "adapter_lr"), (dict(adapter_dropout=1.0), "adapter_dropout"),
    (dict(adapter_batch_size=0), "adapter_batch_size"),
])
def test_ranpac_bad_adapter_settings_are_refused_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RanPAC(MLP(2, 3, hidden=()), **kwargs)


def test_ranpac_adapter_stage_needs_a_vit():
    with pytest.raises(TypeError, match="first_session_adaptation"):
        RanPAC(MLP(2, 3, hidden=()), first_session_adaptation=True)
    with pytest.raises(TypeError, match="first_session_adaptation must be a bool"):
        RanPAC(MLP(2, 3, hidden=()), first_session_adaptation="yes")
