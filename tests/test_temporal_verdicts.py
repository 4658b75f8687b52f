"""Verdicts of notebook 03 (clkit.temporal.verdicts) on hand-built per-seed metrics."""

import numpy as np
import pytest

import clkit.temporal.verdicts as tmv
from clkit.data.temporal import make_drifting_gaussians


def _rows(values):
    return [{k: v for k in tmv.METRICS} for v in values]


def test_null_control_holds_and_a_real_effect_is_found_with_holm():
    ft = _rows([0.50, 0.52, 0.49, 0.51, 0.50, 0.53])
    ft_other = _rows([0.51, 0.50, 0.50, 0.52, 0.49, 0.52])
    better = _rows([0.60, 0.63, 0.58, 0.61, 0.61, 0.62])
    vs = tmv.verdicts({"finetune": ft, "si": better, "erm": better}, ft_other)
    controls = [v for v in vs if v.role == "null control"]
    assert len(controls) == 5 and all(v.control_ok for v in controls)
    found = {v.comparison: v.decision for v in vs if v.role == "finding"}
    assert set(found) == {f"{label}: si − finetune" for label, _, _ in tmv.METRICS.values()}
    assert found["TAS: si − finetune"] == "si higher"
    assert found["forgetting: si − finetune"] == "si forgets more"  # lower is better
    assert all(v.p >= v.p_raw for v in vs if v.role == "finding")  # Holm-adjusted
    with pytest.raises(ValueError, match="reference"):
        tmv.verdicts({"si": better}, ft)


def test_seed_metrics_pairs_seeds_and_reuses_known_matrices():
    ds = make_drifting_gaussians(3, 80, drift=0.5, seed=2)
    kw = dict(delta=0.9, epsilon=0.02, lam=0.15, n=1)
    train = dict(epochs=1, hidden=[8], lr=0.01, batch_size=32, seed=0)
    per_seed, null = tmv.seed_metrics(ds, ["finetune"], [0, 1], train_kw=train, metric_kw=kw)
    assert len(per_seed["finetune"]) == 2 and len(null) == 2
    assert per_seed["finetune"][0] != null[0]  # the null arm is trained with other seeds
    fake = np.full((3, 3), 0.5)
    again, _ = tmv.seed_metrics(ds, ["finetune"], [0, 1], train_kw=train, metric_kw=kw,
                                known={"finetune": fake})
    assert again["finetune"][0] == tmv.metric_values(fake, **kw)
    assert again["finetune"][1] == per_seed["finetune"][1]
    with pytest.raises(ValueError, match="finetune"):
        tmv.seed_metrics(ds, ["ewc"], [0], train_kw=train, metric_kw=kw)

