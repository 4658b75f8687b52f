"""Notebook 05_drift runs with its smoke parameters and records the paper's key numbers."""

import pytest

pytestmark = pytest.mark.notebook


def test_smoke_results(run_smoke):
    results, out = run_smoke("05_drift")
    r = results["results"]
    assert r["data_source"].startswith("synthetic")
    assert r["num_tasks"] == 4
    # overlap grows along the sigma sweep
    sweep = {float(k): v for k, v in r["sigma_sweep_overlap"].items()}
    assert sweep[min(sweep)] < sweep[max(sweep)]
    table = r["results"]
    methods = results["params"]["methods"]
    labels = {k.split(" | ")[0] for k in table}
    # hard, Gaussian, boundary-local, global + the sigma sweep (2 new sigmas) + with-replacement
    assert len(labels) == 4 + 2 + 1
    for label in labels:
        joint = table[f"{label} | joint"]["AA"]
        for m in methods:
            row = table[f"{label} | {m}"]
            if m == "joint":
                continue
            assert 0 <= row["A_AUC"] <= 1 and -1 <= row["AF_s"] <= 0 and row["AF"] == row["AF_s"]
            assert joint > row["AA"]  # Joint is the upper bound
    hard = [k for k in labels if k.startswith("hard")][0]
    # the main settings again under sweep-stable keys
    sigma = results["params"].get("sigma", 3.0)
    gauss = [k for k in labels if k.startswith(f"gaussian σ={float(sigma)} ") and k.endswith(" without")][0]
    assert set(r["main"]) == {"hard", "gaussian", "boundary_local", "global"}
    assert r["main"]["gaussian"]["er"] == table[f"{gauss} | er"] and r["main"]["hard"]["bare"] == table[f"{hard} | bare"]
    assert table[f"{hard} | bare"]["AF"] <= 0
    # implicit rehearsal: Bare's A_AUC grows from the smallest to the largest sigma
    sig = r["sigma_sweep"]
    lo, hi = min(sweep), max(sweep)
    assert sig[f"sigma={hi:g} | bare"]["A_AUC"] > sig[f"sigma={lo:g} | bare"]["A_AUC"]
    assert "overlap acts as implicit rehearsal" in r["summary"]  # the closing paragraph follows the numbers
    figs = set(results["figures"])
    assert figs == {"mixing_curves.png", "dynamics.png", "sigma_sweep.png", "replacement_scatter.png",
                    "advantage_vs_overlap.png"}
    for f in figs:
        assert (out / "figures" / f).stat().st_size > 1000


def test_bad_sigma_fails_naming_it(run_smoke):
    with pytest.raises(RuntimeError, match="sigma"):
        run_smoke("05_drift", sigma=-1.0)


def test_bad_p_fails_naming_it(run_smoke):
    with pytest.raises(RuntimeError, match="p must be"):
        run_smoke("05_drift", p=1.0)
