"""Every paper set's memory plan at the real sizes, by arithmetic (issue 51): computed without allocating,
hand-checked terms, and a plan over the card or the host refused naming the parameter to change."""

from __future__ import annotations

import resource

import pytest
import torch

from clkit.cli import main
from clkit.data import preflight
from clkit.memory_check import (CARD_MEMORY, DEVICE_RESERVE, GRAPHS, PROCESS_BYTES, MemoryCheck, network_bytes,
                                plan_01, plan_02, plan_04, plan_05, plan_for, saved_activation_bytes, table)
from clkit.notebooks import list_notebooks, load_params, param_sets

_PAPER = [(nb, s) for nb in list_notebooks() for s in param_sets(nb) if s.startswith("paper")]
_GIB = 2 ** 30


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024     # Linux: KiB


def test_every_notebook_with_paper_sets_has_a_plan():
    assert {nb[:2] for nb, _ in _PAPER} == {"01", "02", "03", "04", "05"}
    assert len(_PAPER) >= 12


@pytest.mark.parametrize("nb,s", _PAPER)
def test_paper_set_plan_is_arithmetic_and_fits_an_h100_and_a_64_gib_host(nb, s):
    before = _peak_rss()
    c = plan_for(nb, load_params(nb, s, ()), s)
    # nothing allocated: 02's ViT batch alone would be 14 GiB, 01's activations 6 GiB, 03's images 20 GiB
    assert _peak_rss() - before < 1.5 * _GIB
    assert c.card == "H100 SXM" and c.host_gib == 64
    assert all(b >= 0 for _, b in c.host + c.device)
    assert ("this process", PROCESS_BYTES) in c.host
    assert ("CUDA context and allocator reserve", DEVICE_RESERVE) in c.device
    assert c.device_bytes > DEVICE_RESERVE and c.host_bytes > PROCESS_BYTES
    assert c.fits, c.terms()
    assert c.check() is c
    row = c.row()
    assert row["fits"] == "yes" and row["parameter"] and "(H100 SXM)" in row["device plan"]


def test_saved_activations_hand_counted():
    with torch.device("meta"):
        net = torch.nn.Sequential(torch.nn.Linear(10, 20), torch.nn.ReLU(), torch.nn.Linear(20, 5))
        x = torch.empty(8, 10)
    # the first Linear saves its input 8 x 10; ReLU saves its output 8 x 20, which the second Linear saves too
    assert saved_activation_bytes(net, x) == (8 * 10 + 8 * 20) * 4
    params, acts = network_bytes(lambda: torch.nn.Linear(10, 3), (4, 10))
    assert (params, acts) == ((10 * 3 + 3) * 4, 4 * 10 * 4)


def test_attention_is_counted_fused_without_the_l_by_l_matrix():
    class Attn(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.scaled_dot_product_attention(x, x, x)

    L, d = 256, 8
    with torch.device("meta"):
        x = torch.empty(1, 2, L, d, requires_grad=True)
    saved = saved_activation_bytes(Attn(), x)
    assert 2 * 2 * L * d * 4 <= saved < 2 * L * L * 4      # q (= k = v) and the output; no 2 x L x L scores


def test_plan_05_terms_by_hand():
    c = plan_05({"dataset": "corafull", "hidden": 256}, "paper")
    N, F, C, E = GRAPHS["corafull"]
    assert (N, F, C, E) == (19_793, 8_710, 70, 126_842)
    graph = N * F * 4 + 2 * E * 8 + N * 8
    assert dict(c.host)[next(n for n, _ in c.host if "two copies" in n)] == 2 * graph
    dev = [b for _, b in c.device]
    assert dev[0] == graph + E * 4
    assert dev[1] == 4 * (F * 256 + 256 + 256 * C + C) * 4
    assert dev[2] == N * (2 * F + 6 * 256 + 3 * C) * 4
    assert c.device_bytes == sum(dev)


def test_plan_01_04_02_terms_by_hand():
    v = load_params("01_taskification", "paper", ())
    c = plan_01(v, "paper")
    assert dict(c.host)["the loaded stream (100 x 40320 steps x 12 features)"] == 100 * 40_320 * 12 * 4
    assert dict(c.host)["profile and BPS analyses"] == 4 * 100 * 40_320 * 12 * 4
    c = plan_04({"datasets": ["mnist", "tinyimagenet"], "per_class_train": 500, "per_class_test": 500,
                 "image_size": 16, "channels": 3, "backbone": "small_cnn", "batch_size": 4,
                 "strategies": ["naive"]}, "x")
    n = 10 * (500 + 500) + 10 * (500 + 50)       # TinyImageNet has 50 test images a class
    assert c.host[1][1] == n * 3 * 16 * 16 * 4
    c = plan_02({"classes": list(range(6)), "num_tasks": 3, "n_train": 500, "n_test": 100, "batch_size": 2,
                 "learner_kwargs": {"ranpac": {"projection_dim": 100}}, "encoder_sizes": ["ViT-L-14"],
                 "bounds_datasets": ["cub200"]}, "x")
    terms = dict(c.host)
    assert terms["CIFAR-100 images at 224 px (3,600 images)"] == 3600 * 3 * 224 * 224 * 4
    assert terms["bounds datasets' features (11,788 images x 768)"] == 11_788 * 768 * 4
    dev = dict(c.device)
    assert dev["RanPAC projection and Gram matrix (projection_dim 100)"] == (768 * 100 + 2 * 100 * 100) * 4
    assert dev["the largest Fig. 4 CLIP image tower (weights)"] == int(303.97e6) * 4
    vit = next(b for n, b in c.device if n.startswith("ViT-B/16"))
    assert 85e6 * 12 < vit < 87e6 * 12                   # 3 x 4 bytes x ViT-B/16's ~86M parameters


def test_plan_over_the_card_is_refused_naming_the_parameter():
    v = dict(load_params("02_edge", "paper", ()), batch_size=2048)
    c = plan_02(v, "paper")
    assert not c.fits_device
    with pytest.raises(ValueError, match=r"^batch_size: 02_edge --params paper plans .* more than the H100 SXM's"):
        c.check()
    c = plan_05({"dataset": "reddit", "hidden": 256}, "paper_reddit", card="L4", host_gib=4)
    assert c.fits_device and not c.fits_host and c.row()["fits"] == "no: host"
    with pytest.raises(ValueError, match=r"^dataset: .* on the host, more than its 4 GiB"):
        c.check()
    f = preflight.memory_finding("05_drift", {"dataset": "reddit", "hidden": 256}, "paper_reddit", card="L4",
                                 host_gib=4)
    assert f.problem and f.status == "too big" and f.detail.startswith("dataset:")


def test_bad_card_and_host_are_refused():
    with pytest.raises(ValueError, match=r"card must be one of .*got 'TPU'"):
        plan_05({"dataset": "corafull"}, card="TPU")
    with pytest.raises(ValueError, match=r"host_gib must be a positive number of GiB, got -1"):
        plan_05({"dataset": "corafull"}, host_gib=-1)
    assert plan_for("06_your_runs", {}) is None
    assert set(CARD_MEMORY) >= {"H100 SXM", "H200"}


def test_table_names_set_plans_fit_and_parameter():
    c = MemoryCheck("05_drift", "paper", (("a", 2 * _GIB),), (("b", 90 * 10 ** 9),), "H100 SXM", 64, "hidden")
    text = table([c])
    assert "05 paper" in text and "2 GiB of 64 GiB" in text and "83.8 GiB of 74.5 GiB (H100 SXM)" in text
    assert "no: device" in text and "hidden" in text


def _run(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_data_check_prints_the_memory_table_and_refuses_an_overfull_plan(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CLKIT_DATA", str(tmp_path))
    monkeypatch.setattr(preflight, "check", lambda nb, v, **k: preflight.Report(nb, "paper_roman_empire", []))
    rc, out, _ = _run(["data", "check", "05", "--params", "paper_roman_empire", "--no-open"], capsys)
    assert rc == 0 and "memory at the real sizes" in out and "05 paper_roman_empire" in out and " yes " in out
    rc, out, err = _run(["data", "check", "05", "--params", "paper_roman_empire", "--no-open", "--card", "L4",
                         "--host-gib", "0.5"], capsys)
    assert rc == 2 and "no: host" in out and "dataset: 05_drift --params paper_roman_empire" in err
    rc, _, err = _run(["data", "check", "05", "--params", "paper", "--card", "TPU"], capsys)
    assert rc == 2 and "--card must be one of" in err and "'TPU'" in err
    rc, _, err = _run(["data", "check", "05", "--params", "paper", "--host-gib", "nan"], capsys)
    assert rc == 2 and "--host-gib" in err
    rc, out, _ = _run(["data", "check", "05", "--params", "smoke"], capsys)      # not a paper set: no table
    assert rc == 0 and "memory at the real sizes" not in out


def test_run_preflight_refuses_a_paper_plan_over_the_card_it_runs_on(monkeypatch):
    monkeypatch.setattr(preflight, "check", lambda nb, v, **k: preflight.Report(nb, "paper_reddit", []))
    values = dict(load_params("05_drift", "paper_reddit", ()))
    monkeypatch.setattr(preflight, "_run_card", lambda: ("L4", 2.0))
    report = preflight.preflight_run("05_drift", values, "paper_reddit")
    assert report.problems and "dataset: 05_drift --params paper_reddit" in report.message()
    monkeypatch.setattr(preflight, "_run_card", lambda: ("H100 SXM", 64.0))
    assert not preflight.preflight_run("05_drift", values, "paper_reddit").problems
    monkeypatch.setattr(preflight, "_run_card", lambda: None)       # off CUDA: not checked here
    assert not preflight.preflight_run("05_drift", values, "paper_reddit").problems
    monkeypatch.setattr(preflight, "_run_card", lambda: ("L4", 2.0))
    assert preflight.preflight_run("05_drift", dict(values, rehearse=True), "paper_reddit") is None
