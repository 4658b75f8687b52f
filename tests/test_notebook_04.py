"""Notebook 04_curriculum, executed with its smoke parameters."""

from pathlib import Path

import numpy as np
import pytest
import torch

from clkit import curriculum as cur
from clkit import metrics as m

pytestmark = pytest.mark.notebook


@pytest.fixture(scope="module")
def smoke(run_smoke):
    return run_smoke("04_curriculum")


def test_smoke_run_records_the_curriculum_study(smoke):
    results, out = smoke
    r = results["results"]
    assert r["datasets_loaded"] == ["digits", "mnist_subset", "fashion_mnist"] and r["datasets_missing"] == []
    assert set(r["data_source"]) == set(r["datasets_loaded"]) and r["seeds"] == [0, 1]
    assert results["params"]["learner_kwargs"] == {"replay": {"memory_size": 40}}     # recorded with the params
    # difficulty: mean and spread over seeds; the ordering is computed from them, I2M is its reverse
    d, sd = r["difficulty"], r["difficulty_sd"]
    for n, per in ((n, [r["difficulty_per_seed"][str(s)][n] for s in r["seeds"]]) for n in d):
        assert d[n] == pytest.approx(np.mean(per)) and sd[n] == pytest.approx(np.std(per, ddof=1))
    assert r["order_m2i"] == sorted(r["tasks"], key=lambda n: -d[n]) and r["order_i2m"] == r["order_m2i"][::-1]
    assert all(0.1 < v <= 1.0 for v in d.values())        # every task learnable above chance
    for g in r["difficulty_gaps"]:
        assert g["separated"] == (g["gap"] > g["spread"])
    # the weighting-only reference is recomputed from the recorded single-task accuracies
    refs = {o: [cur.weighting_reference(r["difficulty_per_seed"][str(s)], r[f"order_{o.lower()}"])["ACC"]
                for s in r["seeds"]] for o in ("M2I", "I2M")}
    w = r["weighting_reference"]
    assert w["M2I"] == pytest.approx(np.mean(refs["M2I"])) and w["I2M"] == pytest.approx(np.mean(refs["I2M"]))
    assert r["m2i_minus_i2m_acc"]["weighting only"] == pytest.approx(np.mean(np.subtract(refs["M2I"], refs["I2M"])))
    assert r["m2i_minus_i2m_acc"]["weighting only"] > 0    # easiest first: weighting favours M2I
    strategies = {"naive", "cumulative", "mste", "replay"}
    for order in ("M2I", "I2M"):
        mo = r["metrics"][order]
        assert set(mo) == strategies
        for s, v in mo.items():
            assert v["ACC_ref"] == pytest.approx(w[order])                 # shown beside every strategy's ACC
            assert {"ACC", "ACC_ref", "final_acc", "BWT_eq2", "BWT_code", "FWT", "rank"} <= set(v)
            assert 0 <= v["ACC"] <= 1 and 0 <= v["final_acc"] <= 1 and 0 <= v["FWT"] <= 1   # task-IL: FWT defined
            # both BWT forms, recomputed from the per-seed matrices
            Rs = [np.array(r["acc_matrix_per_seed"][str(k)][order][s]) for k in r["seeds"]]
            assert v["BWT_eq2"] == pytest.approx(np.mean([m.backward_transfer(R, "diaz_rodriguez") for R in Rs]))
            assert v["BWT_code"] == pytest.approx(np.mean([m.backward_transfer(R, "consecutive") for R in Rs]))
            assert v["final_acc"] == pytest.approx(np.mean([R[-1].mean() for R in Rs]))
            # the code's BWT telescopes: 2 / (T (T - 1)) * sum_{j < T} (R_Tj - R_jj), not 2 / T * sum (issue 26)
            for R in Rs:
                T = len(R)
                drops = sum(R[-1, j] - R[j, j] for j in range(T - 1))
                assert m.backward_transfer(R, "consecutive") == pytest.approx(2 / (T * (T - 1)) * drops)
        assert mo["mste"]["BWT_eq2"] == 0.0                # one expert per task cannot forget
        assert mo["cumulative"]["final_acc"] > mo["naive"]["final_acc"]
    b = r["bwt_identity"]
    assert b["BWT_code"] == pytest.approx(b["identity"]) and b["factor"] == pytest.approx(1 / 3)
    assert "2/(T(T−1))" in r["summary"]


def test_mste_and_the_weighting_reference_are_pipeline_checks_not_controls(smoke):
    """Paired per task, MSTE's accuracy on every dataset is the same under M2I and I2M, seed by seed:
    zero by construction, so a pipeline check (recorded, shown), never a control or a finding."""
    r = smoke[0]["results"]
    m2i, i2m = r["order_m2i"], r["order_i2m"]
    for s in r["seeds"]:
        A = np.array(r["acc_matrix_per_seed"][str(s)]["M2I"]["mste"])
        B = np.array(r["acc_matrix_per_seed"][str(s)]["I2M"]["mste"])
        assert [A[-1, m2i.index(n)] for n in m2i] == [B[-1, i2m.index(n)] for n in m2i]
    checks = {k["name"].split(":")[0]: k for k in r["pipeline_checks"]}
    assert set(checks) == {"MSTE", "weighting reference", "BWT (code)"} and all(k["holds"] for k in checks.values())
    assert "**Pipeline checks hold** (3 of 3" in r["summary"] and r["pipeline_checks_hold"] is True
    verdicts = r["verdicts"]
    assert not any(v["comparison"].startswith(("mste", "weighting only")) and "(ACC)" not in v["comparison"]
                   for v in verdicts)
    assert r["m2i_minus_i2m_final"]["mste"] == 0.0 and r["m2i_minus_i2m_final"]["weighting only"] == 0.0
    # two seeds: the text draws no conclusion and lists no findings
    assert "Too few pairs to conclude" in r["summary"] and "**Findings**" not in r["summary"]
    assert r["strategies_better_under_m2i"] == [] and r["strategies_better_under_i2m"] == []
    assert isinstance(r["controls_hold"], bool) and r["detectable"]["d_z_alone"] > 3


def test_verdicts_rederive_from_the_record_with_one_primary_family_and_controls_alone(smoke):
    """Every verdict row of the smoke run (the bounds' too) is consistent and decided again from
    results.json alone; replay's order verdict is the only primary row (gem and generative_replay do
    not run in smoke); the three null controls are replay against itself on seeds 2-3, judged
    alone, their arms the recorded per-seed metrics."""
    from clkit import stats
    from clkit.plan import verdict_rows

    r = smoke[0]["results"]
    rows = verdict_rows(smoke[0])
    assert len(rows) == len(r["verdicts"]) + sum(len(vs) for b in r["bound_verdicts"].values() for vs in b.values())
    for v, w in zip(rows, stats.rederive(rows)):
        assert (w.decision, w.family, w.family_name, w.scope, w.role) == (
            v["decision"], v["family"], v["family_name"], v["scope"], v["role"]), v["comparison"]
        assert w.p == pytest.approx(v["p"]) and w.ci_level == pytest.approx(v["ci_level"])
        if v["ci_low"] is not None and np.isfinite(v["ci_low"]):
            assert w.ci_low == pytest.approx(v["ci_low"]) and w.ci_high == pytest.approx(v["ci_high"])
            assert (v["ci_low"] > 0 or v["ci_high"] < 0) == v["significant"], v["comparison"]
    prim = [v for v in rows if v["role"] == "finding" and v["scope"] == "primary"]
    assert [v["comparison"] for v in prim] == ["replay: M2I − I2M (final-row mean)"]
    assert prim[0]["family_name"] == cur.verdicts.FAMILY_NAMES[("order", "primary")]
    names = {v["family_name"] for v in rows if v["role"] == "finding" and v["scope"] == "exploratory"}
    assert len(names) == 3 + 4 and all("(exploratory)" in n for n in names)     # 3 gaps, 2 references x 2 orders
    assert r["primary"] == ["replay"] and "Not run: generative_replay, gem." in r["summary"]
    nulls = [v for v in rows if v["role"] == "null control"]
    assert [v["comparison"] for v in nulls] == [
        f"replay against itself: M2I, seeds 2–3 − seeds 0–1 ({m})"
        for m in ("final-row mean", "ACC", "ACC gap − weighting gap")]
    assert all(v["family"] == 1 and v["family_name"] == "" and v["expect"] == "no difference" for v in nulls)
    assert {k: v for k, v in r["null_control"].items() if k != "difficulty_per_seed"} == {
        "strategy": "replay", "order": "M2I", "seeds": [0, 1], "offset_seeds": [2, 3]}
    ctrl = {row["seed"]: row for row in r["null_control_per_seed"]}
    main = {row["seed"]: row for row in r["metrics_per_seed"] if row["strategy"] == "replay" and row["order"] == "M2I"}
    assert nulls[0]["a"] == [ctrl[s]["final_acc"] for s in (2, 3)] and nulls[0]["b"] == [main[s]["final_acc"]
                                                                                         for s in (0, 1)]
    # the offset seeds' weighting reference comes from their own single-task runs (recorded), not the run's
    acc = r["null_control"]["difficulty_per_seed"]
    assert set(acc) == {"2", "3"} and set(r["difficulty_per_seed"]) == {"0", "1"}
    assert ctrl[2]["ACC_ref"] == pytest.approx(cur.weighting_reference(acc["2"], r["order_m2i"])["ACC"])


def test_the_null_control_trips_on_the_smoke_runs_when_an_arm_is_shifted(smoke):
    """The verdict function over the smoke run's recorded per-seed metrics: with the control's arm
    replaced by the run's own seeds shifted by 0.05 (a broken pairing that reuses the seeds and
    favours one arm), the final-row null control fails and the findings are stopped."""
    import pandas as pd

    r = smoke[0]["results"]
    per_seed = pd.DataFrame(r["metrics_per_seed"])
    acc = {int(s): a for s, a in r["difficulty_per_seed"].items()}
    c = cur.Curriculum(acc, cur.difficulty_table({n: [acc[s][n] for s in acc] for n in r["tasks"]}),
                       r["order_m2i"], r["difficulty_gaps"])
    strategies = smoke[0]["params"]["strategies"]
    control = cur.controls.NullControl.plan(strategies, r["seeds"])
    good = pd.DataFrame(r["null_control_per_seed"])
    vs = cur.verdicts.order_verdicts(per_seed, c, strategies, control=control, control_per_seed=good)
    assert [v.to_dict()["p"] for v in vs] == pytest.approx([v["p"] for v in r["verdicts"]])
    assert all(v.control_ok for v in vs if v.role == "null control")
    bad = per_seed[(per_seed.strategy == "replay") & (per_seed.order == "M2I")].copy()
    bad["final_acc"] += 0.05 + np.array([0.0, 0.001])
    vs = cur.verdicts.order_verdicts(per_seed, c, strategies, control=control, control_per_seed=bad)
    failed = [v.comparison for v in vs if v.role == "null control" and v.control_ok is False]
    assert failed == [control.label("final-row mean")]


def test_smoke_figures(smoke):
    results, out = smoke
    figures = {Path(f).name for f in results["figures"]}
    strategies = {"naive", "cumulative", "mste", "replay"}
    assert figures == ({"difficulty.png", "m2i_vs_i2m.png", "acc_matrices_M2I.png", "acc_matrices_I2M.png"}
                       | {f"acc_matrix_{s}.png" for s in strategies})   # the paper's Figs. 2-13 layout, then per strategy
    assert all((out / "figures" / f).exists() or (out / f).exists() for f in figures)


def test_bad_parameters_fail_naming_the_parameter(run_smoke):
    with pytest.raises(RuntimeError, match="memory_size"):
        run_smoke("04_curriculum", memory_size=-1)
    with pytest.raises(RuntimeError, match="strategies: 'pnn' is task-incremental only"):   # nothing left to run
        run_smoke("04_curriculum", strategies=["pnn"], scenario="class", learner_kwargs={})
    with pytest.raises(RuntimeError, match="num_tasks"):
        run_smoke("04_curriculum", num_tasks=1)
    with pytest.raises(RuntimeError, match=r"learner_kwargs\['replay'\]: unknown keyword 'memory'"):
        run_smoke("04_curriculum", learner_kwargs={"replay": {"memory": 5}})


# ------------------------------------------------------------------ device, budget, rehearsal (issue 37)
def test_device_cpu_gives_the_auto_run_and_records_the_device(smoke, run_smoke):
    """``-p device cpu`` on this machine is what ``auto`` chose: the same numbers; both record the
    device, precision and budget."""
    results, _ = smoke
    cpu, _ = run_smoke("04_curriculum", device="cpu")
    for res in (results, cpu):
        d = res["results"]["device"]
        assert d["precision"] == "fp32" and d["deterministic"] is False and d["device_name"]
    if torch.cuda.is_available():
        pytest.skip("auto chose CUDA here: the comparison is the GPU check's (benchmarks/gpu_check.py)")
    assert results["results"]["device"]["device"] == "cpu" and results["results"]["device"]["requested"] == "auto"
    assert cpu["results"]["device"]["requested"] == "cpu" and results["params"]["device"] == "auto"
    for key in ("acc_matrix_per_seed", "difficulty_per_seed", "verdicts", "metrics"):
        assert cpu["results"][key] == results["results"][key]


def test_budget_is_printed_and_recorded_with_a_hand_count(smoke):
    """The smoke set: 3 datasets of 200 training rows (20 per class), batch 32 (7 steps per epoch),
    2 seeds; 6 single-task runs of 2 epochs; naive, cumulative, mste and replay under both orders;
    the null control's 2 more seeds: their single-task runs and replay under M2I."""
    results, out = smoke
    b = results["results"]["budget"]
    per_epoch = 7                                     # ceil(200 / 32)
    single = 6 * 2 * per_epoch
    plain = 3 * 2 * per_epoch                         # naive, mste, replay: 3 tasks x 2 epochs
    cumulative = 2 * (7 + 13 + 19)                    # 200, 400, 600 rows
    # the null control: the offset seeds' 6 single-task runs and replay under M2I on 2 seeds
    assert b["trainings"] == 6 + 4 * 2 * 2 + 6 + 2
    work = {w["name"]: w for w in b["work"]}
    assert work["training steps"]["count"] == 2 * single + 2 * 2 * (3 * plain + cumulative) + 2 * plain
    assert "mlp on 1x8x8 images, batch 32, fp32, timed on cpu" in work["training steps"]["calibration"]
    assert all(w["seconds_each"] > 0 for w in b["work"]) and b["estimated_seconds"] > 0
    nb = (out / "04_curriculum.ipynb").read_text()
    assert "**Budget:** 30 trainings" in nb


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without CUDA")
def test_cuda_without_cuda_and_fp16_on_the_cpu_are_refused(run_smoke):
    with pytest.raises(RuntimeError, match=r"device 'cuda' needs CUDA.*available: cpu"):
        run_smoke("04_curriculum", device="cuda")
    with pytest.raises(RuntimeError, match="precision 'fp16' needs a CUDA device"):
        run_smoke("04_curriculum", device="cpu", precision="fp16")


#: the paper sets, one per backbone of the paper, with the backbone each runs
PAPER_BACKBONES = {"paper": "wide_vgg9_bn", "paper_efficientnet_b1": "efficientnet_b1", "paper_resnet34": "resnet34_bn"}


def test_every_paper_set_is_one_backbone_of_the_paper():
    from clkit.notebooks import load_params, param_sets

    assert {s for s in param_sets("04_curriculum") if s.startswith("paper")} == set(PAPER_BACKBONES)
    for name, backbone in PAPER_BACKBONES.items():
        p = load_params("04_curriculum", name)
        assert p["backbone"] == backbone and len(p["strategies"]) == 14 and "pnn" in p["strategies"]


@pytest.mark.parametrize("name", sorted(PAPER_BACKBONES))
def test_paper_set_has_the_seeds_its_verdicts_need(name):
    """Enough seeds for the rule's minimum, and for 80 % power on the primary family (Holm over its
    three strategies) for an effect of 2 sd of the paired differences."""
    from clkit.notebooks import load_params
    from clkit.rehearsal import MIN_SEEDS
    from clkit.stats import POWER, pairs_needed, power

    p = load_params("04_curriculum", name)
    assert p["seeds"] >= MIN_SEEDS == cur.report.SMALL_N
    family = len(cur.controls.PRIMARY)
    assert p["seeds"] >= pairs_needed(2.0, 1.0, family=family) and power(p["seeds"], 2.0, 0.05 / family) >= POWER


# every paper set's rehearsal runs in `make rehearse` (2-6 min each on 2 cores), which CI runs
# after `make test`
@pytest.mark.paper_rehearsal
@pytest.mark.parametrize("paper_set", sorted(PAPER_BACKBONES))
def test_paper_set_rehearsed_end_to_end(tmp_path, paper_set):
    """``--params <paper set> -p rehearse true``: the six datasets through clkit's real loaders, reading
    the files fabricated in their own formats; the set's backbone, the class scenario, the paper's 14
    strategies less the two task-incremental ones (skipped with a note); then verdicts, figures, and the
    rehearsal, budget (with its one-GPU line, estimated from FLOPs) and device in results.json."""
    import json

    from clkit.models.cnn import MIN_IMAGE_SIZE
    from clkit.run import run_notebook

    out = run_notebook("04_curriculum", paper_set, [("rehearse", True)], out=tmp_path, progress=False)
    results = json.loads((out / "results.json").read_text())
    p, r = results["params"], results["results"]
    six = ["mnist", "omniglot", "fashion_mnist", "svhn", "cifar10", "tinyimagenet"]
    assert r["datasets_loaded"] == six and r["datasets_missing"] == []
    layout = {"mnist": "MNIST/raw", "omniglot": "omniglot-py/images_background/Alphabet_of_the_Magi",
              "fashion_mnist": "fashion-mnist", "svhn": "svhn", "cifar10": "cifar-10-batches-py",
              "tinyimagenet": "tiny-imagenet-200"}
    root = r["rehearsal"]["data_root"]
    for name, folder in layout.items():          # each real loader read its own fabricated layout
        assert r["data_source"][name] == str(Path(root) / folder)
    assert Path(root).parts[-2:] == ("rehearsal", "04_curriculum")
    backbone = PAPER_BACKBONES[paper_set]
    assert (p["backbone"], p["scenario"], p["optimizer"], p["download"]) == (backbone, "class", "sgd", False)
    assert p["image_size"] == max(16, MIN_IMAGE_SIZE.get(backbone, 0)) and p["seeds"] == 4 and r["seeds"] == [0, 1, 2, 3]
    assert len(p["strategies"]) == 14 and r["strategies_run"] == [s for s in p["strategies"] if s not in ("mste", "pnn")]
    assert "mste, pnn (task-incremental only" in r["strategies_skipped"]
    rh = r["rehearsal"]
    cut = {row["parameter"]: (row["given"], row["used"]) for row in rh["cut"]}
    assert cut["epochs"] == (50, 1) and cut["per_class_train"] == (500, 1) and cut["download"] == (True, False)
    assert cut["seeds"] == (6, 4) and cut["image_size"] == (64, p["image_size"])
    assert set(rh["files"]) == set(six) and "min(given, cap)" in rh["rule"]
    assert r["summary"].startswith("**Rehearsal run** of a paper parameter set")
    # 6 x 4 single-task runs, 12 x 2 x 4 streams; the null control: 4 more seeds' single-task runs, 4 streams
    assert r["budget"]["trainings"] == 6 * 4 * 2 + 12 * 2 * 4 + 4 and r["device"]["device_type"] in ("cpu", "cuda")
    gpu = r["budget"]["gpu_estimate"]
    assert gpu["measured"] is False and gpu["flops"] > 0 and backbone in gpu["detail"]
    judged = {v["comparison"] for v in r["verdicts"]}
    run = r["strategies_run"]
    for s in run:   # every gap of every strategy, the weighting oracle, the null controls
        assert {f"{s}: M2I − I2M (final-row mean)", f"{s}: M2I − I2M (ACC)"} <= judged
    assert "weighting only: M2I − I2M (ACC)" in judged and r["null_control"]["offset_seeds"] == [4, 5, 6, 7]
    assert r["null_control"]["strategy"] == "replay" and set(r["null_control"]["difficulty_per_seed"]) == set("4567")
    assert [v["comparison"] for v in r["verdicts"] if v["scope"] == "primary" and v["role"] == "finding"] == [
        f"{s}: M2I − I2M (final-row mean)" for s in ("replay", "gem", "generative_replay")]
    assert isinstance(r["controls_hold"], bool) and isinstance(r["conclusive"], bool)
    for s in run:
        assert np.array(r["acc_matrix"]["M2I"][s]).shape == (len(r["tasks"]),) * 2
    figures = {Path(f).name for f in results["figures"]}
    assert {"difficulty.png", "m2i_vs_i2m.png", "acc_matrices_M2I.png", "acc_matrices_I2M.png"} <= figures
    assert {f"acc_matrix_{s}.png" for s in run} <= figures
    nb = (out / "04_curriculum.ipynb").read_text()
    assert "estimated from FLOPs, not measured" in nb and "Skipped in the class-incremental scenario" in nb


def test_smoke_run_records_the_paper_protocol_and_the_papers_numbers_for_reference(smoke):
    """``protocol: paper`` (every parameter set's) changes nothing: no per-learner settings beyond the
    set's own, every strategy at ``epochs``; the paper's numbers are shown at teaching scale only for
    reference (no cell marked)."""
    results, _ = smoke
    r = results["results"]
    assert results["params"]["protocol"] == "paper"
    assert r["protocol"] == {"name": "paper", "learner_kwargs": results["params"]["learner_kwargs"],
                             "strategy_epochs": {}}
    assert r["paper_scale"] is False
    for order, rows in r["beside_paper"].items():
        assert {row["strategy"] for row in rows} == set(r["metrics"][order])
        assert all(row["outside"] == "" for row in rows)
        for row in rows:
            assert row["ACC"] == pytest.approx(r["metrics"][order][row["strategy"]]["ACC"])
