"""Issue 50, EWC's lambda: PyCIL's ``loss_clf + lamda * sum F (p - mean)^2 / 2`` with ``lamda = 1000``
(AIGNLAI/EDGE a60c117, PyCIL/models/ewc.py: ``compute_ewc`` and ``_update_representation``) equals clkit's
``ewc_lambda / 2 * sum F (theta - theta*)^2`` with ``ewc_lambda = lamda``; both protocols set it."""

import pytest
import torch

from clkit.edge.protocol import PYCIL_EWC_LAMBDA, SETTINGS, protocol_learner_kwargs
from clkit.strategies.importance import EWC


def _pycil_penalty(named_params, fisher, mean, lamda):
    """PyCIL's ``lamda * compute_ewc()``, written out (numbers carry over, its code does not)."""
    loss = 0.0
    for n, p in named_params:
        loss += torch.sum(fisher[n] * (p[: len(mean[n])] - mean[n]).pow(2)) / 2
    return lamda * loss


def test_both_protocols_give_ewc_pycils_lambda():
    assert PYCIL_EWC_LAMBDA == 1000.0
    for protocol in ("paper", "authors"):
        assert SETTINGS[protocol]["ewc"]["ewc_lambda"] == 1000.0
        assert protocol_learner_kwargs(protocol, "cifar100", ["ewc"])["ewc"]["ewc_lambda"] == 1000.0
    # the run's value wins
    assert protocol_learner_kwargs("authors", "cifar100", ["ewc"], {"ewc": {"ewc_lambda": 5.0}})["ewc"][
        "ewc_lambda"] == 5.0


def test_the_penalty_equals_pycils_on_a_hand_computed_example():
    """A 2 -> 2 linear layer: weight [[1, 2], [3, 4]], bias [0.5, -0.5]; anchor 0; Fisher 1e-4 on the
    weight, 2e-4 on the bias. By hand: sum F d^2 = 1e-4 (1 + 4 + 9 + 16) + 2e-4 (0.25 + 0.25) = 3.1e-3;
    PyCIL: 1000 * 3.1e-3 / 2 = 1.55."""
    model = torch.nn.Linear(2, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
        model.bias.copy_(torch.tensor([0.5, -0.5]))
    fisher = {"weight": torch.full((2, 2), 1e-4), "bias": torch.full((2,), 2e-4)}
    mean = {"weight": torch.zeros(2, 2), "bias": torch.zeros(2)}
    pycil = _pycil_penalty(model.named_parameters(), fisher, mean, 1000)
    assert float(pycil.detach()) == pytest.approx(1.55, rel=1e-6)

    kw = protocol_learner_kwargs("authors", "cifar100", ["ewc"])["ewc"]
    s = EWC(model, ewc_lambda=kw["ewc_lambda"], epochs=1)
    s.terms = [(fisher, mean)]
    assert float(s.penalty(None).detach()) == pytest.approx(1.55, rel=1e-6)
    # the EWC paper's default (lambda 1) is a thousand times weaker: the mapping matters
    s1 = EWC(model, epochs=1)
    s1.terms = [(fisher, mean)]
    assert float(s1.penalty(None).detach()) == pytest.approx(1.55e-3, rel=1e-6)


def test_the_gradients_agree_too():
    g = torch.Generator().manual_seed(0)
    model = torch.nn.Linear(3, 2)
    fisher = {n: torch.rand(p.shape, generator=g) * 1e-4 for n, p in model.named_parameters()}
    mean = {n: p.detach() + torch.randn(p.shape, generator=g) for n, p in model.named_parameters()}
    pycil = _pycil_penalty(model.named_parameters(), fisher, mean, PYCIL_EWC_LAMBDA)
    g_pycil = torch.autograd.grad(pycil, list(model.parameters()))
    s = EWC(model, ewc_lambda=PYCIL_EWC_LAMBDA, epochs=1)
    s.terms = [(fisher, mean)]
    g_clkit = torch.autograd.grad(s.penalty(None), list(model.parameters()))
    for a, b in zip(g_pycil, g_clkit):
        torch.testing.assert_close(a, b)
