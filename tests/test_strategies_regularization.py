"""EWC, SI, MAS and LwF: the property that defines each."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from clkit._seed import torch_seeded
from clkit.models import MLP
from clkit.strategies import EWC, MAS, SI, LwF, Task, make_strategy

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _linear(w):
    lin = nn.Linear(len(w), 1, bias=False)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([w]))
    return lin


def _tasks(seed=0, n=64):
    g = torch.Generator().manual_seed(seed)
    x0, x1 = torch.randn(n, 4, generator=g), torch.randn(n, 4, generator=g) + 2
    return (Task(x0, (x0[:, 0] > 0).long(), task_id=0, classes=(0, 1)),
            Task(x1, 2 + (x1[:, 1] > 2).long(), task_id=1, classes=(2, 3)))


def _params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def test_ewc_penalty_zero_at_anchor_and_quadratic():
    with torch_seeded(0):
        s = EWC(MLP(4, 4, hidden=(8,)), ewc_lambda=3.0, epochs=2)
    t0, _ = _tasks()
    s.train_task(t0)
    assert float(s.penalty(None).detach()) == 0.0
    direction = [torch.randn_like(p) for p in s.model.parameters()]
    anchor = [p.detach().clone() for p in s.model.parameters()]
    values = []
    for step in (0.5, 1.0, 2.0):
        with torch.no_grad():
            for p, a, d in zip(s.model.parameters(), anchor, direction):
                p.copy_(a + step * d)
        values.append(float(s.penalty(None).detach()))
    assert values[1] > 0
    assert values[0] == pytest.approx(values[1] / 4, rel=1e-5)
    assert values[2] == pytest.approx(values[1] * 4, rel=1e-5)
    # the penalty is (lambda / 2) sum_k F_k d_k^2 with F the stored Fisher
    F_, _ = s.terms[0]
    expected = 1.5 * sum((F_[n] * (2 * d) ** 2).sum() for (n, _), d in zip(s.model.named_parameters(), direction))
    assert values[2] == pytest.approx(float(expected), rel=1e-5)


def test_ewc_fisher_is_mean_squared_per_sample_gradient_regression():
    """Linear model, MSE: per-sample gradient 2 (w.x - y) x, Fisher = its mean square."""
    lin = _linear([0.5, -1.0])
    x = torch.tensor([[1.0, 2.0], [0.0, 1.0], [3.0, -1.0]])
    y = torch.tensor([[1.0], [0.0], [2.0]])
    s = EWC(lin, loss="mse")
    fisher = s.fisher(Task(x, y))["weight"]
    r = (x @ torch.tensor([0.5, -1.0]))[:, None] - y
    expected = ((2 * r * x) ** 2).mean(0, keepdim=True)
    torch.testing.assert_close(fisher, expected)
    # and it is not the square of the mean (batch) gradient
    assert not torch.allclose(fisher, ((2 * r * x).mean(0, keepdim=True)) ** 2)


def test_ewc_one_anchor_per_task_and_reduces_forgetting():
    t0, t1 = _tasks()
    accs = {}
    for name, kw in [("naive", {}), ("ewc", {"ewc_lambda": 2000.0})]:
        with torch_seeded(1):
            s = make_strategy(name, MLP(4, 4, hidden=(16,)), lr=0.05, epochs=20, batch_size=16, **kw)
        s.train_task(t0)
        s.train_task(t1)
        accs[name] = s.evaluate(t0)
        if name == "ewc":
            assert len(s.terms) == 2
    assert accs["ewc"] > accs["naive"]


def test_si_path_integral_equals_lr_times_squared_gradients():
    """With plain SGD, delta theta = -lr g, so w = sum_steps lr g^2."""
    grads = []

    class Recorder(SI):
        def after_backward(self, x, y, task):
            grads.append(self.model.weight.grad.detach().clone())
            super().after_backward(x, y, task)

    lin = _linear([0.3, -0.2])
    s = Recorder(lin, loss="mse", lr=0.05, momentum=0.0, epochs=3, batch_size=4, si_eps=0.1)
    x = torch.randn(12, 2, generator=torch.Generator().manual_seed(0))
    task = Task(x, x @ torch.tensor([[1.0], [2.0]]))
    start = lin.weight.detach().clone()
    s.train_task(task)
    expected_w = 0.05 * torch.stack(grads).pow(2).sum(0)
    torch.testing.assert_close(s.path["weight"], expected_w)
    delta = lin.weight.detach() - start
    torch.testing.assert_close(s.terms[0][0]["weight"], expected_w / (delta ** 2 + 0.1))
    assert float(s.penalty(None).detach()) == 0.0


def test_si_importance_uses_unregularised_gradient():
    """On task 2 the penalty's gradient 2 c Omega (theta - theta*) is removed from g."""
    lin = _linear([0.3, -0.2])
    s = SI(lin, loss="mse", lr=0.05, momentum=0.0, epochs=2, batch_size=4, si_lambda=5.0)
    x = torch.randn(12, 2, generator=torch.Generator().manual_seed(0))
    s.train_task(Task(x, x @ torch.tensor([[1.0], [2.0]]), task_id=0))
    omega = s.terms[0][0]["weight"].clone()
    anchor = s.terms[0][1]["weight"].clone()
    # one manual step on task 2, compared with the strategy's own bookkeeping
    s.before_task(Task(x, -x @ torch.tensor([[1.0], [2.0]]), task_id=1))
    xb, yb = x[:4], -x[:4] @ torch.tensor([[1.0], [2.0]])
    before = lin.weight.detach().clone()
    s.train_step(xb, yb, None)
    w = lin.weight.detach()
    change = before - w                   # theta_old - theta_new of that step
    torch.testing.assert_close(change, 0.05 * (s.unregularised_gradient["weight"] + 2 * 5.0 * omega * (before - anchor)))
    unreg = 2 * ((before @ xb.T).T - yb).mul(xb).mean(0, keepdim=True)
    torch.testing.assert_close(s.unregularised_gradient["weight"], unreg)


def test_mas_importance_is_mean_abs_gradient_of_squared_output_norm():
    lin = _linear([1.0, -2.0])
    s = MAS(lin, loss="mse", mas_lambda=2.0)
    x = torch.tensor([[1.0, 1.0], [2.0, 0.5], [0.0, -1.0]])
    task = Task(x, torch.zeros(3, 1))
    s.after_task(task)
    out = x @ torch.tensor([1.0, -2.0])
    expected = (2 * out[:, None] * x).abs().mean(0, keepdim=True)
    torch.testing.assert_close(s.terms[0][0]["weight"], expected)
    assert float(s.penalty(None).detach()) == 0.0
    with torch.no_grad():
        lin.weight += torch.tensor([[1.0, 0.0]])
    assert float(s.penalty(None).detach()) == pytest.approx(2.0 * float(expected[0, 0]))
    # importance accumulates over tasks (sum) and re-anchors
    s.after_task(task)
    out2 = x @ lin.weight.detach()[0]
    torch.testing.assert_close(s.terms[0][0]["weight"], expected + (2 * out2[:, None] * x).abs().mean(0, keepdim=True))
    assert float(s.penalty(None).detach()) == 0.0


def test_lwf_distillation_zero_against_itself_then_keeps_old_outputs():
    t0, t1 = _tasks()
    with torch_seeded(0):
        s = LwF(MLP(4, 4, hidden=(16,)), lr=0.05, epochs=15, batch_size=16, lwf_alpha=1.0)
    s.train_task(t0)
    s.before_task(t1)
    raw = s.model(t1.x)
    assert float(s.distillation(raw, t1.x).detach()) == pytest.approx(0.0, abs=1e-6)
    s.train_task(t1)
    assert s.old_classes == [0, 1]
    drift = {}
    for name, kw in [("naive", {}), ("lwf", {"lwf_alpha": 10.0})]:
        with torch_seeded(0):
            m = make_strategy(name, MLP(4, 4, hidden=(16,)), lr=0.05, epochs=15, batch_size=16, **kw)
        m.train_task(t0)
        before = m.predict(t0.x)[:, :2].softmax(1)
        m.train_task(t1)
        drift[name] = float((m.predict(t0.x)[:, :2].softmax(1) - before).abs().mean())
    assert drift["lwf"] < drift["naive"]


def test_lwf_regression_distils_with_mse():
    with torch_seeded(0):
        s = LwF(MLP(3, 2, hidden=(8,)), loss="mse", epochs=1)
    x = torch.randn(16, 3)
    s.train_task(Task(x, torch.randn(16, 2), task_id=0))
    s.before_task(Task(x, torch.randn(16, 2), task_id=1))
    with torch.no_grad():
        s.model.head.bias += 1.0
        raw = s.model(x)
    assert float(s.distillation(raw, x)) == pytest.approx(F.mse_loss(raw, s.teacher(x)).item())
    assert float(s.distillation(raw, x)) == pytest.approx(1.0, rel=1e-5)


@pytest.mark.parametrize("name", ["ewc", "si", "mas", "lwf"])
def test_regularisers_need_task_boundaries(name):
    s = make_strategy(name, MLP(2, 2))
    assert s.task_free is False
    with pytest.raises(ValueError, match="task boundaries"):
        s.observe(torch.zeros(2, 2), torch.tensor([0, 1]))


@pytest.mark.parametrize("name, param", [("ewc", "ewc_lambda"), ("si", "si_lambda"), ("mas", "mas_lambda"),
                                         ("lwf", "lwf_alpha"), ("lwf", "lwf_temperature")])
def test_bad_hyper_parameters_are_named(name, param):
    with pytest.raises(ValueError, match=param):
        make_strategy(name, MLP(2, 2), **{param: -1.0})


def test_mas_running_average_equals_hand_computation():
    """Avalanche 0.2.1's update, Omega <- alpha Omega + (1 - alpha) Omega_new from Omega = 0,
    against the hand-computed importances of a linear model (alpha 0.25: not symmetric)."""
    lin = _linear([1.0, -2.0])
    a = 0.25
    s = MAS(lin, loss="mse", mas_lambda=2.0, importance_update="average", mas_alpha=a)
    x = torch.tensor([[1.0, 1.0], [2.0, 0.5], [0.0, -1.0]])
    task = Task(x, torch.zeros(3, 1))
    # task 1: f(x) = x . w = (-1, 1, 2); Omega_1 = mean_i |2 f(x_i) x_i| = (mean(2, 4, 0), mean(2, 1, 4))
    s.after_task(task)
    omega1 = torch.tensor([[2.0, 7.0 / 3.0]])
    torch.testing.assert_close(s.terms[0][0]["weight"], (1 - a) * omega1)
    # weights move to (2, -2): f(x) = (0, 3, 2); Omega_2 = (mean(0, 12, 0), mean(0, 3, 4)) = (4, 7/3)
    with torch.no_grad():
        lin.weight += torch.tensor([[1.0, 0.0]])
    assert float(s.penalty(None).detach()) == pytest.approx(2.0 * (1 - a) * 2.0)   # lambda Omega_1,0 (1)^2
    s.after_task(task)
    omega2 = torch.tensor([[4.0, 7.0 / 3.0]])
    torch.testing.assert_close(s.terms[0][0]["weight"], a * (1 - a) * omega1 + (1 - a) * omega2)
    assert float(s.penalty(None).detach()) == 0.0                  # re-anchored at the latest weights
    # the default is unchanged: the sum, Omega_1 + Omega_2
    lin = _linear([1.0, -2.0])
    s = MAS(lin, loss="mse")
    assert s.importance_update == "sum"
    s.after_task(task)
    with torch.no_grad():
        lin.weight += torch.tensor([[1.0, 0.0]])
    s.after_task(task)
    torch.testing.assert_close(s.terms[0][0]["weight"], omega1 + omega2)


@pytest.mark.parametrize("kw, match", [({"importance_update": "mean"}, "importance_update"),
                                       ({"mas_alpha": 1.5}, "mas_alpha"), ({"mas_alpha": -0.1}, "mas_alpha")])
def test_mas_bad_update_settings_are_named(kw, match):
    with pytest.raises(ValueError, match=match):
        MAS(MLP(2, 2), **kw)
