"""The fused (flat, one-node) penalties and the vectorised importances equal their per-parameter
reference implementations to 1e-6 on random models."""

import pytest
import torch
from torch import nn

from clkit._seed import torch_seeded
from clkit.models import MLP
from clkit.strategies import EWC, MAS, SI, Task
from clkit.strategies._common import per_sample_mean, trainable
from clkit.strategies.importance import FusedQuadratic, quadratic_penalty

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class _Net(nn.Module):
    """A small random model with a convolution, a norm layer and an unused-by-terms parameter."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3)
        self.norm = nn.LayerNorm(12)
        self.head = nn.Linear(12, 5)

    def forward(self, x):
        h = self.conv(x).mean(dim=(2, 3)).repeat(1, 4)
        return self.head(torch.relu(self.norm(h)))


def _random_terms(model, k, g):
    terms = []
    for _ in range(k):
        omega = {n: torch.rand(p.shape, generator=g) * 3 for n, p in trainable(model)}
        anchor = {n: p.detach() + 0.3 * torch.randn(p.shape, generator=g) for n, p in trainable(model)}
        terms.append((omega, anchor))
    return terms


@pytest.mark.parametrize("k", [1, 3])
def test_fused_penalty_value_and_gradient_equal_the_per_parameter_sum(k):
    g = torch.Generator().manual_seed(k)
    with torch_seeded(k):
        model = _Net()
    terms = _random_terms(model, k, g)
    coefficient = 0.7
    ref = coefficient * quadratic_penalty(model, terms)
    ref_grads = torch.autograd.grad(ref, [p for _, p in trainable(model)])
    fused = FusedQuadratic(trainable(model), terms, coefficient)
    value = fused()
    grads = torch.autograd.grad(value, [p for _, p in trainable(model)])
    assert float(value.detach()) == pytest.approx(float(ref.detach()), rel=1e-6)
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6 * float(b.abs().max()))
    # the in-place path a strategy's step takes: value from the residual, gradient added to .grad
    u = fused.residual()
    assert float(fused.value()) == pytest.approx(float(ref.detach()), rel=1e-6)
    from_params = float(fused.value())
    fused.residual(torch.cat([p.detach().reshape(-1) for p in fused.params]))   # SI's flat copy
    assert float(fused.value()) == from_params
    for per_parameter in (True, False):   # theta - B per parameter or by one copy: the same numbers
        fused._per_parameter = per_parameter
        fused.residual()
        assert float(fused.value()) == from_params
    u = fused.residual()
    base = [torch.randn(p.shape, generator=g) for p in fused.params]
    acc = [b.clone() for b in base]
    fused.add_grad_(acc, u)
    for a, b0, b in zip(acc, base, ref_grads):
        torch.testing.assert_close(a - b0, b, rtol=1e-6, atol=1e-6 * float(b.abs().max()))
    # a scaled loss scales the gradient
    twice = torch.autograd.grad(2 * fused(), [p for _, p in trainable(model)])
    for a, b in zip(twice, ref_grads):
        torch.testing.assert_close(a, 2 * b, rtol=1e-6, atol=2e-6 * float(b.abs().max()))


def _tasks(seed=0, n=48):
    g = torch.Generator().manual_seed(seed)
    out = []
    for t in range(3):
        x = torch.randn(n, 6, generator=g) + t
        out.append(Task(x, 2 * t + (x[:, t] > t).long(), task_id=t, classes=(2 * t, 2 * t + 1)))
    return out


class _ReferenceSI(SI):
    """SI as it was written per parameter (the reference for the fused path integral)."""

    def penalty(self, task):
        return self.coefficient * quadratic_penalty(self.model, self.terms)

    def after_backward(self, x, y, task):
        omega, anchor = self.terms[0] if self.terms else ({}, {})
        self._grad, self._before = {}, {}
        for name, p in trainable(self.model):
            gr = p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
            if name in omega:
                gr -= 2 * self.coefficient * omega[name] * (p.detach() - anchor[name])
            self._grad[name] = gr
            self._before[name] = p.detach().clone()

    def after_step(self, x, y, task):
        for name, p in trainable(self.model):
            self.path[name] -= self._grad[name] * (p.detach() - self._before[name])


@pytest.mark.parametrize("cls, kw", [(EWC, {"ewc_lambda": 50.0}), (SI, {"si_lambda": 3.0}),
                                     (MAS, {"mas_lambda": 4.0})])
def test_strategies_train_like_the_per_parameter_reference(cls, kw):
    """Three tasks with the fused penalty and the reference: same weights, importances, paths."""
    ref_cls = _ReferenceSI if cls is SI else type("Ref", (cls,), {
        "penalty": lambda self, task: self.coefficient * quadratic_penalty(self.model, self.terms)})
    runs = []
    for c in (cls, ref_cls):
        with torch_seeded(3):
            s = c(MLP(6, 6, hidden=(16,)), lr=0.05, epochs=2, batch_size=16, scenario="task", **kw)
        for task in _tasks():
            s.train_task(task)
        runs.append(s)
    fused, ref = runs
    for a, b in zip(fused.model.parameters(), ref.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
    assert len(fused.terms) == len(ref.terms)
    for (om_a, an_a), (om_b, an_b) in zip(fused.terms, ref.terms):
        for n in om_a:
            torch.testing.assert_close(om_a[n], om_b[n], rtol=1e-6, atol=1e-6 * float(om_b[n].abs().max()))
            torch.testing.assert_close(an_a[n], an_b[n], rtol=1e-6, atol=1e-6)
    if cls is SI:   # SGD: clkit takes the step's change as lr * (momentum buffer), the reference
        # theta_old - theta_new after float rounding of theta: equal to ~1e-6 of the largest entry
        for n in fused.path:
            torch.testing.assert_close(fused.path[n], ref.path[n], rtol=1e-5,
                                       atol=1e-5 * float(ref.path[n].abs().max()))
    with torch.no_grad():   # away from the anchor, the penalties agree too
        for p in fused.model.parameters():
            p.add_(0.1)
    expected = fused.coefficient * quadratic_penalty(fused.model, fused.terms)
    assert float(fused.penalty(None).detach()) == pytest.approx(float(expected.detach()), rel=1e-6)


def _loop_mean(model, sample_loss, x, y, transform):
    """Per-sample gradients one row at a time with autograd (the reference)."""
    params = [p for _, p in trainable(model)]
    total = [torch.zeros_like(p) for p in params]
    for i in range(len(y)):
        grads = torch.autograd.grad(sample_loss(model(x[i:i + 1]), y[i:i + 1]), params)
        for t, gr in zip(total, grads):
            t += transform(gr)
    return {n: t / len(y) for (n, _), t in zip(trainable(model), total)}


def test_vectorised_importance_equals_the_per_sample_loop():
    from clkit.models.transformer import TimeSeriesTransformer

    g = torch.Generator().manual_seed(0)
    cases = []
    with torch_seeded(0):
        cases.append((_Net(), torch.randn(10, 2, 5, 5, generator=g), torch.randint(0, 5, (10,), generator=g),
                      lambda o, t: torch.nn.functional.cross_entropy(o, t), torch.square))
        cases.append((MLP(7, 3, hidden=(9,)), torch.randn(12, 7, generator=g), torch.zeros(12),
                      lambda o, t: o.pow(2).sum(), torch.abs))
        tr = TimeSeriesTransformer(3, context=8, d_model=8, num_layers=2, num_heads=2).eval()
        cases.append((tr, torch.randn(6, 8, 3, generator=g), torch.randn(6, 1, generator=g),
                      torch.nn.functional.mse_loss, torch.square))
    for model, x, y, loss, transform in cases:
        model.eval()
        fast = per_sample_mean(model, loss, x, y, transform, budget_bytes=4 * 5 * sum(
            p.numel() for p in model.parameters()))   # several chunks
        ref = _loop_mean(model, loss, x, y, transform)
        for n in ref:
            torch.testing.assert_close(fast[n], ref[n], rtol=1e-6, atol=1e-6 * max(float(ref[n].abs().max()), 1e-6))


def test_fused_distillation_equals_the_reference_kl():
    from clkit.strategies.distillation import _FusedDistillation, distillation_loss

    g = torch.Generator().manual_seed(0)
    for t in (1.0, 2.0, 3.5):
        s = (3 * torch.randn(16, 5, generator=g)).requires_grad_()
        teacher = 3 * torch.randn(16, 5, generator=g)
        ref = distillation_loss(s, teacher, t)
        (ref_grad,) = torch.autograd.grad(ref, s)
        fused = _FusedDistillation.apply(s, teacher, t)
        (grad,) = torch.autograd.grad(3 * fused, s)
        assert float(fused.detach()) == pytest.approx(float(ref.detach()), rel=1e-6)
        torch.testing.assert_close(grad, 3 * ref_grad, rtol=1e-6, atol=1e-7)


def test_linear_shortcut_is_taken_for_mlps_and_equals_the_loop():
    from clkit.strategies._common import _linear_per_sample_mean

    g = torch.Generator().manual_seed(1)
    with torch_seeded(1):
        mlp = MLP(6, 4, hidden=(8, 5)).eval()
    x, y = torch.randn(20, 6, generator=g), torch.randint(0, 4, (20,), generator=g)
    for loss, transform in [(torch.nn.functional.cross_entropy, torch.square),
                            (lambda o, t: o[:, [1, 3]].pow(2).sum(), torch.abs)]:
        fast = _linear_per_sample_mean(mlp, loss, x, y, transform, budget_bytes=4 * 6 * 8 * 7)   # chunks
        assert fast is not None
        ref = _loop_mean(mlp, loss, x, y, transform)
        for n in ref:
            torch.testing.assert_close(fast[n], ref[n], rtol=1e-6, atol=1e-6 * float(ref[n].abs().max()))

    class Twice(nn.Module):   # one layer applied twice: per-row outer products do not add up
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, z):
            return self.lin(torch.tanh(self.lin(z)))

    with torch_seeded(2):
        twice = Twice()
    z = torch.randn(7, 3, generator=g)
    assert _linear_per_sample_mean(twice, lambda o, t: o.pow(2).sum(), z, torch.zeros(7), torch.abs, 2 ** 20) is None
    ref = _loop_mean(twice, lambda o, t: o.pow(2).sum(), z, torch.zeros(7), torch.abs)
    got = per_sample_mean(twice, lambda o, t: o.pow(2).sum(), z, torch.zeros(7), torch.abs)
    for n in ref:
        torch.testing.assert_close(got[n], ref[n], rtol=1e-6, atol=1e-6 * float(ref[n].abs().max()))


@pytest.mark.parametrize("loss", ["cross_entropy", "mse"])
def test_lwf_recorded_teacher_outputs_train_like_a_teacher_forward_per_batch(loss):
    """Li & Hoiem record the old model's outputs once per task; the per-batch forward is the reference."""
    from clkit.strategies import LwF

    runs = []
    for limit in (LwF.record_limit, 0):   # 0: nothing recorded, the teacher runs on every batch
        with torch_seeded(4):
            s = LwF(MLP(6, 6, hidden=(16,)), loss=loss, lr=0.05, epochs=2, batch_size=16)
        s.record_limit = limit
        for task in _tasks():
            if loss == "mse":
                task = Task(task.x, torch.nn.functional.one_hot(task.y, 6).float(), task_id=task.task_id)
            s.train_task(task)
        runs.append(s)
    fast, ref = runs
    for a, b in zip(fast.model.parameters(), ref.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
    # the recording is the teacher's output on the task's rows, and it is dropped after the task
    t = _tasks()[2]
    fast.before_task(t)
    assert fast.recorded is not None and ref.recorded is None
    torch.testing.assert_close(fast.recorded, fast.teacher(t.x))
    fast.after_task(t)
    assert fast.recorded is None



@pytest.mark.parametrize("transform", [torch.square, torch.abs])
def test_transformer_per_sample_gradients_come_from_one_batched_backward(transform):
    """The written-out transformer takes the hooked path (no vmap), in chunks, equal to the loop."""
    from clkit.models.transformer import TimeSeriesTransformer
    from clkit.strategies._common import _hooked_per_sample_mean

    g = torch.Generator().manual_seed(7)
    with torch_seeded(7):
        tr = TimeSeriesTransformer(3, context=8, d_model=8, num_layers=2, num_heads=2, target_index=1).eval()
    x, y = torch.randn(7, 8, 3, generator=g), torch.randn(7, 1, generator=g)
    numel = sum(p.numel() for p in tr.parameters())
    fast = _hooked_per_sample_mean(tr, torch.nn.functional.mse_loss, x, y, transform, budget_bytes=4 * 3 * numel)
    assert fast is not None and set(fast) == {n for n, _ in trainable(tr)}
    ref = _loop_mean(tr, torch.nn.functional.mse_loss, x, y, transform)
    for n in ref:
        torch.testing.assert_close(fast[n], ref[n], rtol=1e-5, atol=1e-6 * max(float(ref[n].abs().max()), 1e-6))
    # models outside the sample-wise set keep the vmap path
    assert _hooked_per_sample_mean(_Net(), lambda o, t: o.sum(), torch.randn(2, 2, 5, 5), torch.zeros(2),
                                   transform, 2 ** 20) is None
    tr.train()   # active dropout: samples would not be reproducible one by one
    assert _hooked_per_sample_mean(tr, torch.nn.functional.mse_loss, x, y, transform, 2 ** 20) is None


def test_written_out_transformer_equals_pytorch_encoder_layers():
    """Same initial weights (same draws) and the same outputs as nn.TransformerEncoder, dropout included."""
    from clkit.models.transformer import TimeSeriesTransformer, standardize_windows

    class Reference(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(3, 8)
            self.pos = nn.Parameter(torch.zeros(1, 8, 8))
            nn.init.normal_(self.pos, std=0.02)
            layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=32, dropout=0.1, batch_first=True,
                                               norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(8)
            self.head = nn.Linear(8, 1)

        def forward(self, x):
            h = self.encoder(self.embed(standardize_windows(x)) + self.pos)
            return self.head(self.norm(h[:, -1]))

    with torch_seeded(0):
        ours = TimeSeriesTransformer(3, context=8, d_model=8, num_layers=2, num_heads=2, dropout=0.1)
    with torch_seeded(0):
        ref = Reference()
    torch.testing.assert_close(ours.position.pos, ref.pos, rtol=0, atol=0)
    for a, b in zip(ours.encoder.layers, ref.encoder.layers):
        torch.testing.assert_close(a.self_attn.in_proj.weight, b.self_attn.in_proj_weight, rtol=0, atol=0)
        torch.testing.assert_close(a.self_attn.out_proj.weight, b.self_attn.out_proj.weight, rtol=0, atol=0)
        torch.testing.assert_close(a.linear2.weight, b.linear2.weight, rtol=0, atol=0)
    x = torch.randn(5, 8, 3, generator=torch.Generator().manual_seed(1))
    for training in (False, True):   # training: dropout masks drawn in the same order and layout
        ours.train(training)
        ref.train(training)
        with torch_seeded(2):
            a = ours(x)
            ga = torch.autograd.grad(a.sum(), ours.embed.weight)[0]
        with torch_seeded(2):
            b = ref(x)
            gb = torch.autograd.grad(b.sum(), ref.embed.weight)[0]
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(ga, gb, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("optimizer, momentum", [("sgd", 0.9), ("sgd", 0.0), ("adam", 0.0)])
def test_si_foreach_path_equals_the_reference_after_fifty_steps(optimizer, momentum):
    """SI's foreach path integral (updated every step) equals the per-parameter reference, with
    SGD momentum (one addcmul on the momentum buffer), plain SGD (on the gradient) and Adam (on a
    copy of the pre-step weights), after >= 50 optimiser steps (the second task is penalised)."""
    tasks = _tasks(seed=1, n=64)[:2]
    runs = []
    for c in (SI, _ReferenceSI):
        with torch_seeded(5):
            s = c(MLP(6, 6, hidden=(16,)), lr=0.05 if optimizer == "sgd" else 0.01, momentum=momentum,
                  optimizer=optimizer, epochs=7, batch_size=16, scenario="task", si_lambda=2.0)
        steps = []
        s.after_step = (lambda f: (lambda *a: (steps.append(1), f(*a))))(s.after_step)
        for task in tasks:
            s.train_task(task)
        runs.append((s, len(steps)))
    (fused, n_steps), (ref, _) = runs
    assert n_steps >= 50
    assert (fused._step_from is None) == (optimizer == "adam")
    for a, b in zip(fused.model.parameters(), ref.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
    for n in fused.path:
        assert float(fused.path[n].abs().max()) > 0   # the path integral moved during task 2
        torch.testing.assert_close(fused.path[n], ref.path[n], rtol=1e-5,
                                   atol=1e-5 * float(ref.path[n].abs().max()))
    for (om_a, _), (om_b, _) in zip(fused.terms, ref.terms):
        for n in om_a:
            torch.testing.assert_close(om_a[n], om_b[n], rtol=1e-6, atol=1e-6 * float(om_b[n].abs().max()))


def test_sgd_uses_the_fused_kernel_with_the_default_update():
    """A strategy's SGD runs PyTorch's fused kernel on CPU float parameters; over 20 momentum steps
    with weight decay its weights equal the default implementation's to float rounding. Parameters
    the fused kernel refuses (complex) get the default implementation, which steps."""
    from clkit.strategies import make_strategy
    from clkit.strategies.base import _sgd

    with torch_seeded(0):
        net = MLP(6, 3, hidden=(8,))
    s = make_strategy("naive", net, optimizer="sgd", lr=0.05, momentum=0.9, weight_decay=1e-3)
    assert s.optimizer.defaults["fused"] is True
    ref = MLP(6, 3, hidden=(8,))
    ref.load_state_dict(net.state_dict())
    plain = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3)
    g = torch.Generator().manual_seed(1)
    for _ in range(20):
        for a, b in zip(net.parameters(), ref.parameters()):
            a.grad = torch.randn(a.shape, generator=g)
            b.grad = a.grad.clone()
        s.optimizer.step()
        plain.step()
    for a, b in zip(net.parameters(), ref.parameters()):
        torch.testing.assert_close(a.detach(), b.detach(), rtol=1e-6, atol=1e-6)
    z = nn.Parameter(torch.ones(2, dtype=torch.complex64))
    opt = _sgd([z], lr=0.5, momentum=0.9)
    z.grad = torch.ones(2, dtype=torch.complex64)
    opt.step()
    assert opt.defaults["fused"] is None and torch.allclose(z.detach(), torch.full((2,), 0.5 + 0j))


def test_fused_sgd_falls_back_where_a_gradient_has_other_strides():
    """PyTorch's fused SGD walks tensors as flat memory: a channels_last weight with a contiguous
    gradient would get its update scrambled. The strategies' SGD then steps that group with the
    default implementation, so the update equals plain SGD's (and stays there)."""
    from clkit.strategies.base import _sgd

    g = torch.Generator().manual_seed(0)
    w0 = torch.randn(8, 3, 3, 3, generator=g).contiguous(memory_format=torch.channels_last)
    w, ref = nn.Parameter(w0.clone()), nn.Parameter(w0.clone())
    assert not w.is_contiguous()
    opt = _sgd([w], lr=0.1, momentum=0.9)
    plain = torch.optim.SGD([ref], lr=0.1, momentum=0.9)
    for _ in range(3):
        w.grad = torch.randn(w.shape, generator=g)   # contiguous, as the flat gradient rows give it
        ref.grad = w.grad.clone()
        opt.step()
        plain.step()
    torch.testing.assert_close(w.detach(), ref.detach(), rtol=1e-6, atol=1e-6)
    assert opt.param_groups[0]["fused"] is False


def test_fused_sgd_falls_back_where_a_momentum_buffer_has_other_strides():
    """Issue 43: a contiguous parameter with a channels_last momentum buffer (an optimizer state loaded
    from a channels_last run) was stepped 0.38 away from SGD's update by the fused kernel; now the
    group falls back and the steps equal plain SGD's."""
    from clkit.strategies.base import _sgd

    g = torch.Generator().manual_seed(1)
    w0 = torch.randn(8, 3, 3, 3, generator=g)
    buf = torch.randn(8, 3, 3, 3, generator=g)
    w, ref = nn.Parameter(w0.clone()), nn.Parameter(w0.clone())
    opt = _sgd([w], lr=0.1, momentum=0.9)
    plain = torch.optim.SGD([ref], lr=0.1, momentum=0.9)
    opt.state[w]["momentum_buffer"] = buf.clone().contiguous(memory_format=torch.channels_last)
    plain.state[ref]["momentum_buffer"] = buf.clone()
    for _ in range(3):
        w.grad = torch.randn(w.shape, generator=g)
        ref.grad = w.grad.clone()
        opt.step()
        plain.step()
    torch.testing.assert_close(w.detach(), ref.detach(), rtol=1e-6, atol=1e-6)
    assert opt.param_groups[0]["fused"] is False


@pytest.mark.parametrize("name", ["agem", "gem"])
def test_projections_train_a_channels_last_cnn_as_a_contiguous_one(name):
    """A-GEM and GEM assign each weight's gradient from their flat rows (contiguous); on a model in
    channels_last they still train it exactly as the same model in the default layout (to float
    rounding), which the fused SGD kernel alone would not."""
    from clkit.models.cnn import SmallCNN
    from clkit.strategies import make_strategy

    g = torch.Generator().manual_seed(0)
    tasks = [Task(torch.rand(48, 3, 8, 8, generator=g), 3 * t + torch.randint(0, 3, (48,), generator=g),
                  task_id=t, classes=(3 * t, 3 * t + 1, 3 * t + 2)) for t in range(2)]
    out = []
    for layout in (torch.contiguous_format, torch.channels_last):
        with torch_seeded(0):
            net = SmallCNN(3, 6, width=4, blocks=2).to(memory_format=layout)
        kw = {"memory_size": 24, "agem_sample_size": 16} if name == "agem" else {"gem_patterns_per_task": 16}
        s = make_strategy(name, net, epochs=2, batch_size=16, lr=0.05, seed=0, **kw)
        for t in tasks:
            s.train_task(t)
        out.append([p.detach().clone() for p in net.parameters()])
    for a, b in zip(*out):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("big", [False, True])
def test_si_writes_its_total_gradient_over_the_residual_buffer_exactly(big):
    """SI's step writes loss gradient + penalty gradient over the penalty's residual buffer
    (FusedQuadratic.total_over_residual, one addcmul per parameter, for few large tensors; new
    tensors for many small ones): bitwise the out-of-place sum, the unregularised gradient
    untouched; a penalty evaluated outside a step afterwards takes a new buffer, so .grad stays
    as it was."""
    g = torch.Generator().manual_seed(7)
    model = MLP(784, 10, hidden=(256,)) if big else _Net()
    fused = FusedQuadratic(trainable(model), _random_terms(model, 1, g), 1.5)
    assert fused._per_parameter == big
    grads = [torch.randn(p.shape, generator=g) for p in fused.params]
    kept = [t.clone() for t in grads]
    u = fused.residual(in_step=True)
    want = [t.clone() for t in fused.plus_grad(grads, u)]
    got = fused.total_over_residual(grads)
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert (got[0].data_ptr() == fused.u.data_ptr()) == big
    assert all(torch.equal(a, b) for a, b in zip(grads, kept))
    seen = [t.clone() for t in got]
    fused()   # outside a step
    assert all(torch.equal(a, b) for a, b in zip(got, seen))

    tasks = _tasks(seed=4, n=32)[:2]
    with torch_seeded(6):
        s = SI(MLP(6, 6, hidden=(16,)), lr=0.05, epochs=1, batch_size=16, scenario="task", si_lambda=2.0)
    s.train_task(tasks[0])
    s.begin_task(tasks[1])
    s.train_batch(tasks[1], torch.arange(16))   # a step at the anchor: the penalty gradient is 0
    pre = {n: p.detach().clone() for n, p in trainable(s.model)}
    s.train_batch(tasks[1], torch.arange(16, 32))
    (omega, anchor), = s.terms
    for (n, p), unreg in zip(trainable(s.model), s.unregularised_gradient.values()):
        want = unreg + 2 * s.coefficient * omega[n] * (pre[n] - anchor[n])
        torch.testing.assert_close(p.grad, want, rtol=1e-6, atol=1e-7)
    before = [p.grad.clone() for p in s._params]
    float(s.penalty(None).detach())   # outside a step
    assert all(torch.equal(p.grad, b) for p, b in zip(s._params, before))


def test_si_on_few_large_tensors_trains_like_the_per_parameter_reference():
    """The same with few large tensors (the residual buffer reused for the total gradient):
    weights and path integral equal the per-parameter reference after two tasks."""
    g = torch.Generator().manual_seed(8)
    tasks = []
    for t in range(2):
        x = torch.randn(64, 300, generator=g) + t
        tasks.append(Task(x, 2 * t + (x[:, t] > t).long(), task_id=t, classes=(2 * t, 2 * t + 1)))
    runs = []
    for c in (SI, _ReferenceSI):
        with torch_seeded(9):
            s = c(MLP(300, 4, hidden=(256,)), lr=0.05, epochs=3, batch_size=16, scenario="task", si_lambda=2.0)
        for task in tasks:
            s.train_task(task)
        runs.append(s)
    fused, ref = runs
    assert fused.fused()._per_parameter
    for a, b in zip(fused.model.parameters(), ref.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
    for n in fused.path:
        assert float(fused.path[n].abs().max()) > 0
        torch.testing.assert_close(fused.path[n], ref.path[n], rtol=1e-5, atol=1e-5 * float(ref.path[n].abs().max()))
