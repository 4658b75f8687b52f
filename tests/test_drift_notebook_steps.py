"""Notebook 05 stays a tutorial: at most 600 lines, its multi-call steps in clkit.drift.notebook_steps,
tested here outside the notebook on small hand-made rows and tiny synthetic graphs."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clkit.data.graphs import csbm
from clkit.drift import NOTEBOOK_PARAMETERS, StreamConfig, report
from clkit.drift import notebook_steps as steps
from clkit.run import notebook_parameters

ROOT = Path(__file__).resolve().parents[1]


class Record:
    """What a RunRecord's ``log`` keeps (the keys and values a step writes to results.json)."""

    def __init__(self):
        self.results = {}

    def log(self, **values):
        self.results.update(values)


def params(**over) -> dict:
    base = dict(dataset="csbm", data_dir="", num_nodes=160, num_classes=5, homophily=0.8, avg_degree=4.0,
                feature_signal=0.7, classes_per_task=2, test_fraction=0.2, overlaps=[], sigmas=[1.0, 8.0],
                sigma=3.0, p=0.3, k_bl=2, batch_size=10, batch_sizes=[10, 20], sampling="without", tau=0.9,
                seeds=[2, 1], sweep_methods=["bare", "er"], rehearse=False, backbone="gcn")
    return {**base, **over}


def test_the_notebook_is_at_most_600_lines_and_uses_the_steps():
    text = (ROOT / "notebooks" / "05_drift.py").read_text(encoding="utf-8")
    n = len(text.splitlines())
    assert n <= 600, f"notebooks/05_drift.py has {n} lines; move logic into the package (at most 600)"
    for call in ("steps.load_study_data", "steps.plan_sweep", "steps.record_results", "steps.setting_tables",
                 "steps.judge", "steps.paper_layout", "steps.train_study", "drift_split.parse_cases"):
        assert call in text, call
    assert "### Training" in text


def test_the_module_stays_small_and_the_parameters_are_the_notebooks():
    assert len((ROOT / "clkit" / "drift" / "notebook_steps.py").read_text().splitlines()) < 600
    assert set(NOTEBOOK_PARAMETERS) == set(notebook_parameters("05_drift"))
    assert set(steps.CSBM_PARAMETERS) <= set(NOTEBOOK_PARAMETERS)


# ------------------------------------------------------------------------------------------------- data

def test_load_study_data_splits_every_protocol_and_names_the_dropped_class():
    rec = Record()
    d = steps.load_study_data(params(), ["text", "authors"], rec)
    assert d.name == "csbm" and d.graph.num_nodes == 160
    # 5 classes, 2 per task: tasks (0, 1), (2, 3); class 4 fills no task and is dropped
    assert [tuple(t) for t in d.split0.task_classes] == [(0, 1), (2, 3)] and d.dropped == [4]
    assert set(rec.results) == {"data_source", "dataset_used", "graph_stats", "num_tasks", "task_classes",
                                "task_sizes", "dropped_classes"}
    assert rec.results["num_tasks"] == 2 and rec.results["dropped_classes"] == [4]
    sizes = rec.results["task_sizes"]
    # the text protocol streams 80 % of every class, the authors' 60 % (60/20/20): fewer nodes
    labels = d.graph.y.numpy() if hasattr(d.graph.y, "numpy") else np.asarray(d.graph.y)
    per_task = [int(np.isin(labels, c).sum()) for c in ((0, 1), (2, 3))]
    assert all(s <= n for s, n in zip(sizes["text"], per_task))
    assert all(a < t for a, t in zip(sizes["authors"], sizes["text"]))
    assert "csbm" in d.markdown.lower() or "synthetic" in d.markdown.lower()


def test_the_user_graph_rule():
    assert steps._is_user_graph("my/graph.pt") and steps._is_user_graph("pkg.mod:Dataset")
    assert not steps._is_user_graph("cora") and not steps._is_user_graph("auto")


# ------------------------------------------------------------------------------------------------ sweep

def test_plan_sweep_hand_computed_stream_and_overlap():
    g = csbm(200, 4, seed=1)
    rec = Record()
    sw = steps.plan_sweep(params(), g, ["text", "authors"], rec)
    split = steps.load_study_data(params(num_nodes=200, num_classes=4), ["text"]).split0
    # T = sum_k ceil(N_k / B) (Eq. 9's batch counts)
    assert sw.length == sum(-(-len(t) // 10) for t in split.task_nodes) == rec.results["stream_length"]
    assert sw.sigmas == {"text": [1.0, 8.0], "authors": [1.0, 8.0]} and sw.fits is None
    assert [c.setting for c in sw.configs_main] == ["hard", "gaussian", "boundary_local", "global"]
    assert {pr: c.sigma for pr, c in sw.null_configs.items()} == {"text": 1.0, "authors": 1.0}
    assert [c.batch_size for c in sw.configs["text"]["batch"]] == [20]  # the other batch size
    # overlap rises with σ; a hard-like σ = 0.25 leaves (almost) no batch without a dominant task
    assert sw.overlap[1.0] < sw.overlap[8.0] and sw.overlap_curve[0] <= 0.1 < sw.overlap_curve[-1]
    assert all(0 <= e <= 1 for e in sw.entropy_curve) and sw.entropy_curve[0] < sw.entropy_curve[-1]
    assert sw.grid_sigma[0] == 0.25 and sw.grid_sigma[-1] == pytest.approx(4 * 8.0)
    assert rec.results["sigma_sweep_overlap"] == {"1.0": sw.overlap[1.0], "8.0": sw.overlap[8.0]}
    assert sw.markdown("text").startswith(f"Stream of {sw.length} batches (text protocol)")
    assert sw.fits_table() is None


def test_plan_sweep_solves_sigma_per_protocol_for_target_overlaps():
    rec = Record()
    sw = steps.plan_sweep(params(overlaps=[0.2, 0.8]), csbm(300, 4, seed=0), ["text", "authors"], rec)
    for pr in ("text", "authors"):
        assert sw.sigmas[pr][0] < sw.sigmas[pr][1]
        assert [round(f.overlap, 1) for f in sw.fits[pr]] == [0.2, 0.8] or all(
            abs(f.overlap - t) <= 0.1 for f, t in zip(sw.fits[pr], (0.2, 0.8)))
    assert sw.sigmas["text"] != sw.sigmas["authors"]  # the authors' split streams fewer nodes
    assert set(rec.results["overlap_fits"]) == {"text", "authors"} and sw.fits_table() is not None


# ------------------------------------------------------------------------------------- results, tables

def _rows(configs, methods, seeds, value):
    return pd.DataFrame([dict(config=c.label(), setting=c.setting, batch_size=c.batch_size, sampling=c.sampling,
                              sigma=c.sigma, p=c.p, k_bl=c.k_bl, method=m, seed=s, **value(c, m, s))
                         for c in configs for m in methods for s in seeds])


def _metrics(c, m, s):
    a = {"bare": 0.4, "joint": 0.8, "er": 0.5}[m] + 0.02 * s
    return dict(AA=a, AF=np.nan if m == "joint" else -0.1, A_AUC=a, AF_s=np.nan if m == "joint" else -0.1,
                overlap=0.0 if c.setting == "hard" else 0.5, detector_firings=np.nan)


def test_record_results_means_and_sweep_stable_keys():
    main = [StreamConfig("hard", batch_size=10), StreamConfig("gaussian", sigma=3.0, batch_size=10)]
    rows = _rows(main, ["bare", "joint", "er"], [1, 2], _metrics)
    rec = Record()
    stats_by = steps.record_results({"text": (rows, {}, {}), "authors": (rows.assign(AA=rows.AA / 2), {}, {})},
                                    main, ["bare", "joint", "er"], rec)
    assert set(rec.results) == {"results", "results_by_protocol", "main", "main_by_protocol"}
    # bare on seeds 1, 2: 0.42, 0.44 -> mean 0.43, population std 0.01
    assert stats_by["text"][0].loc[(main[0].label(), "bare"), "AA"] == pytest.approx(0.43)
    assert stats_by["text"][1].loc[(main[0].label(), "bare"), "AA"] == pytest.approx(0.01)
    assert rec.results["main"]["hard"]["bare"]["AA"] == pytest.approx(0.43)
    assert rec.results["main_by_protocol"]["authors"]["hard"]["bare"]["AA"] == pytest.approx(0.215)
    assert set(rec.results["results"]) == {f"{c.label()} | {m}" for c in main for m in ("bare", "joint", "er")}
    assert f"{main[1].label()} | er" in rec.results["results_by_protocol"]["authors"]


def test_setting_tables_columns_as_the_paper_and_joint_without_forgetting():
    main = [StreamConfig("hard", batch_size=10), StreamConfig("gaussian", sigma=3.0, batch_size=10)]
    rows = _rows(main, ["bare", "joint", "er"], [1, 2], _metrics)
    s = report.summarise(rows)
    out = steps.setting_tables({"text": s, "authors": s}, main, 2)
    (t_hard, hard), (t_gauss, gauss) = out
    assert t_hard == f"**{main[0].label()}** (overlap O = 0.00)" and "(overlap O = 0.50)" in t_gauss
    assert list(hard.columns) == [("text", "AA"), ("text", "AF"), ("authors", "AA"), ("authors", "AF")]
    assert list(gauss.columns.get_level_values(1)[:2]) == ["A_AUC", "AF_s"]
    assert hard.loc["bare", ("text", "AA")] == "43.0 ± 1.0" and hard.loc["joint", ("text", "AF")] == "n/a (no stream)"


# ----------------------------------------------------------------------------------------------- judge

def test_judge_finds_implicit_rehearsal_and_records_it():
    """Bare gains 10 points from σ = 1 to σ = 8 on every one of 7 seeds (with small noise): finding (1) is
    significant and in the paper's direction; the null controls (same learner, seeds + 1000, no change)
    hold; every pipeline check holds."""
    rng = np.random.default_rng(0)
    seeds = list(range(1, 8))
    sweep = [StreamConfig("gaussian", sigma=s, batch_size=10) for s in (1.0, 8.0)]
    noise = {(m, s, c.sigma): 0.005 * rng.standard_normal() for m in ("bare", "er") for s in seeds for c in sweep}

    def value(c, m, s):
        a = 0.4 + (0.1 if c.sigma == 8.0 else 0.0) + (0.03 if m == "er" else 0.0) + noise[(m, s, c.sigma)]
        return dict(AA=a, AF=-0.1, A_AUC=a, AF_s=-0.1 - 0.01 * rng.random(), overlap=0.1 if c.sigma == 1.0 else 0.8,
                    detector_firings=np.nan)

    rows = _rows(sweep, ["bare", "er"], seeds, value)
    base = rows[rows.sigma == 1.0]
    null = base.assign(seed=base.seed + report.NULL_SEED_OFFSET)
    rec = Record()
    P = params(seeds=seeds, batch_size=10, sampling="without")
    verdicts, checks, findings = steps.judge({"text": (rows, {}, {})}, {"text": null}, P, {"text": [1.0, 8.0]},
                                             exact=True, record=rec)
    assert set(rec.results) == {"findings", "verdicts", "controls_hold", "pipeline_checks", "pipeline_checks_hold"}
    one = next(v for v in verdicts if "(1)" in v.comparison)
    assert one.significant and one.effect == pytest.approx(10.0, abs=1.0)   # percentage points
    assert rec.results["controls_hold"] is True and rec.results["pipeline_checks_hold"] is True
    assert all(c.holds for c in checks) and len(rec.results["verdicts"]) == len(verdicts)
    again = report.study_verdicts({"text": (rows, {}, {})}, {"text": null}, ["bare", "er"], {"text": [1.0, 8.0]},
                                  10, "without")
    assert [(v.comparison, v.p) for v in verdicts] == [(v.comparison, v.p) for v in again]
    assert list(findings.columns) == ["text"]


# ------------------------------------------------------------------------------------------- records

def test_records_in_fractions():
    rep = pd.DataFrame({"without": [40.0, 55.0], "with": [42.0, 50.0]}, index=["bare", "er"])
    assert steps.replacement_record(rep) == {"bare": {"without": 0.4, "with": 0.42},
                                             "er": {"without": 0.55, "with": 0.5}}
    bt = pd.DataFrame({"B=10": [40.0], "B=20": [44.0], "ΔA_AUC": [4.0]}, index=["er"])
    assert steps.batch_size_record(bt) == {"B=10": {"er": 0.4}, "B=20": {"er": 0.44}}
    adv = pd.DataFrame({"advantage_AA": [0.01234], "advantage_A_AUC": [-0.056], "setting": ["hard"]})
    shown = steps.percent_columns(adv, ["advantage_AA", "advantage_A_AUC"])
    assert shown.iloc[0].tolist() == [1.2, -5.6, "hard"] and adv.iloc[0, 0] == 0.01234   # the input is kept


def test_paper_layout_on_a_synthetic_graph_is_teaching_scale():
    main = [StreamConfig("hard", batch_size=10), StreamConfig("gaussian", sigma=3.0, batch_size=10),
            StreamConfig("boundary_local", k_bl=2, batch_size=10), StreamConfig("global", p=0.3, batch_size=10)]
    rows = _rows(main, ["bare", "joint", "er"], [1, 2], _metrics)
    rec = Record()
    paper, beside = steps.paper_layout({"text": (rows, {}, {})}, "csbm", params(batch_sizes=[10]),
                                       {"text": [1.0, 8.0]}, rec)
    assert set(rec.results) == {"paper_tables", "paper_comparison"}
    assert len(paper["text"]) == len(beside["text"]) > 0
    assert all(c.scale == "teaching" and c.paper_table == "" for c in beside["text"])
