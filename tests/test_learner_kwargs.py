"""Per-learner settings reach the learner and bad ones fail naming the learner."""

import pytest
import torch

from clkit.learner_kwargs import allowed_keywords, check_learner_kwargs, settings_for
from clkit.strategies import make_strategy
from clkit.strategies.base import Strategy
from clkit.strategies.importance import EWC


class Recorder(Strategy):
    """A hand-made strategy that records the settings it was built with."""

    def __init__(self, model, *, strength: float = 1.0, mode: str = "a", **kwargs):
        super().__init__(model, **kwargs)
        self.recorded = dict(strength=strength, mode=mode, lr=self.lr)


def test_allowed_keywords_walk_the_constructor_chain():
    kw = allowed_keywords(Recorder, exclude=("model",))
    assert kw["strength"] == 1.0 and kw["mode"] == "a" and kw["lr"] == 1e-3 and "model" not in kw
    assert "**" not in kw  # Strategy.__init__ closes the chain
    assert "**" in allowed_keywords(lambda **kw: None)


def test_settings_reach_the_strategy():
    allowed = {"rec": allowed_keywords(Recorder, exclude=("model",))}
    ok = check_learner_kwargs({"rec": {"strength": 7, "lr": 0.5}}, allowed)
    s = Recorder(torch.nn.Linear(2, 2), **settings_for("rec", {"lr": 0.1, "mode": "b"}, ok))
    assert s.recorded == {"strength": 7, "mode": "b", "lr": 0.5}
    ewc = make_strategy("ewc", torch.nn.Linear(2, 2), **settings_for("ewc", {}, {"ewc": {"ewc_lambda": 123.0}}))
    assert ewc.ewc_lambda == 123.0


@pytest.mark.parametrize("bad, exc, words", [
    ({"rec": {"strenght": 1}}, ValueError, ["learner_kwargs['rec']", "'strenght'", "did you mean 'strength'"]),
    ({"ewc": {"ewc_lambda": 1}}, ValueError, ["'ewc' is not a learner of this run", "['rec']"]),
    ({"rec": {"strength": "x"}}, TypeError, ["['strength']", "float", "str 'x'"]),
    ({"rec": {"mode": 3}}, TypeError, ["['mode']", "str like its default"]),
    ({"rec": 5}, TypeError, ["learner_kwargs['rec'] must be a mapping"]),
    ([("rec", {})], TypeError, ["learner_kwargs must be a mapping"]),
])
def test_bad_settings_are_named(bad, exc, words):
    allowed = {"rec": allowed_keywords(Recorder, exclude=("model",))}
    with pytest.raises(exc) as info:
        check_learner_kwargs(bad, allowed)
    for w in words:
        assert w in str(info.value)


def test_ewc_lambda_type_and_int_for_float():
    allowed = {"ewc": allowed_keywords(EWC, exclude=("model",))}
    assert check_learner_kwargs({"ewc": {"ewc_lambda": 100}}, allowed) == {"ewc": {"ewc_lambda": 100}}
    with pytest.raises(TypeError):
        check_learner_kwargs({"ewc": {"epochs": 1.5}}, allowed)
