"""σ from a target overlap (issue 25, item 4): clkit.drift.calibrate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clkit.data.graphs import csbm, load_graph
from clkit.drift.calibrate import (schedule_entropy, schedule_overlap, sigma_for_entropy, sigma_for_overlap,
                                   sigma_for_overlap_on_graph, sigma_overlap_markdown, sigma_overlap_table,
                                   sigmas_for_overlaps, stream_task_sizes)
from clkit.drift.experiment import protocol_data
from clkit.drift.schedule import overlap_index
from clkit.drift.streams import gaussian_stream

PROTOCOLS = ["text", "authors"]


@pytest.fixture(scope="module")
def graphs():
    """Real Cora (shipped copy when no user copy) and notebook 05's SBM (its default.yaml settings)."""
    return {"cora": load_graph("cora"),
            "csbm": csbm(2708, 6, homophily=0.8, avg_degree=4.0, feature_signal=0.7, seed=0)}


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("name", ["cora", "csbm"])
def test_target_overlap_is_reproduced(graphs, name, protocol):
    for target in (0.1, 0.4, 0.8):
        fit = sigma_for_overlap_on_graph(target, graphs[name], protocol=protocol, seed=0)
        assert abs(fit.overlap - target) <= 0.02, (name, protocol, target, fit)
        assert fit.overlap == schedule_overlap(fit.task_sizes, 10, fit.sigma, protocol=protocol)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_solved_sigma_gives_that_overlap_in_the_stream_a_run_builds(graphs, protocol):
    g, split = protocol_data(graphs["cora"], 2, 0.2, seed=3, protocol=protocol)
    fit = sigma_for_overlap_on_graph(0.4, graphs["cora"], protocol=protocol, seed=3)
    stream = gaussian_stream(split.task_nodes, 10, fit.sigma, seed=3, protocol=protocol)
    assert overlap_index(stream.weights, 0.9) == fit.overlap


def test_issue_figures_on_cora(graphs):
    """Issue 25: on Cora sigma = 10 gives overlap 0.06 (text) / 0.10 (authors): the moderate regime is skipped."""
    sizes = {p: stream_task_sizes(graphs["cora"], protocol=p) for p in PROTOCOLS}
    assert round(schedule_overlap(sizes["text"], 10, 10.0), 2) == 0.06
    assert round(schedule_overlap(sizes["authors"], 10, 10.0, protocol="authors"), 2) == 0.10
    assert sigma_for_overlap(0.4, sizes["text"]).sigma > 20


def test_two_equal_tasks_hand_computed():
    """Two tasks of 10 batches: mu = 5, 15; batch t mixes iff |t + 1/2 - 10| < sigma^2 ln 9 / 10.

    Overlap 0.4 = 8 mixed batches (t + 1/2 = 6.5 .. 13.5) iff 3.5 < sigma^2 ln 9 / 10 <= 4.5.
    """
    fit = sigma_for_overlap(0.4, [100, 100], 10)
    assert fit.overlap == 0.4 and fit.total_batches == 20
    assert math.sqrt(35 / math.log(9)) < fit.sigma <= math.sqrt(45 / math.log(9)) + 1e-6
    # a target between two reachable values (0.4 and 0.5) goes to the nearer one
    assert sigma_for_overlap(0.43, [100, 100], 10).overlap == 0.4
    assert sigma_for_overlap(0.48, [100, 100], 10).overlap == 0.5


def test_overlap_grows_with_sigma_and_spans_zero_to_one():
    sizes = [610, 640, 600]  # 61, 64, 60 batches: no batch midpoint equidistant from two centres
    ov = [schedule_overlap(sizes, 10, s) for s in np.geomspace(0.1, 1000, 30)]
    assert ov[0] == 0.0 and ov[-1] == 1.0 and all(b >= a for a, b in zip(ov, ov[1:]))
    # 62 then 64 batches: batch 62 (midpoint 62.5) is 31.5 from both centres, a 50/50 mix at any sigma
    assert schedule_overlap([620, 640, 600], 10, 0.1) == 1 / 186


def test_entropy_target_met_to_tolerance():
    fit = sigma_for_entropy(0.5, [620, 640, 600], 10, protocol="authors")
    assert abs(fit.achieved - 0.5) < 1e-6 and fit.entropy == fit.achieved
    assert abs(schedule_entropy([620, 640, 600], 10, fit.sigma, protocol="authors") - 0.5) < 1e-6


def test_unreachable_and_bad_targets_are_named():
    # authors' integer grid: two tasks of 10 batches tie at t = 10 even as sigma -> 0, so O >= 1/20
    with pytest.raises(ValueError, match=r"overlap=0.01 is below the smallest overlap .* 0.0500"):
        sigma_for_overlap(0.01, [100, 100], 10, protocol="authors")
    with pytest.raises(ValueError, match="overlap"):
        sigma_for_overlap(1.5, [100, 100], 10)
    with pytest.raises(ValueError, match="overlap"):
        sigma_for_overlap(0.0, [100, 100], 10)
    with pytest.raises(ValueError, match="task_sizes"):
        sigma_for_overlap(0.4, [100], 10)
    with pytest.raises(ValueError, match="protocol"):
        sigma_for_overlap(0.4, [100, 100], 10, protocol="paper")


def test_table_rows_agree_with_the_solver():
    rows = sigma_overlap_table({"toy": {"text": [620, 640, 600], "authors": [470, 480, 450]}},
                               targets=[0.4], sigmas=[10.0])
    assert [r["protocol"] for r in rows] == PROTOCOLS
    assert rows[1]["σ(O=0.4)"] == sigma_for_overlap(0.4, [470, 480, 450], protocol="authors").sigma
    md = sigma_overlap_markdown(rows)
    assert md.count("\n") == 3 and "| toy | authors |" in md


def test_overlap_sweep_is_solved_per_protocol(graphs):
    fits = sigmas_for_overlaps([0.1, 0.4, 0.8], graphs["cora"], seed=0)
    assert list(fits) == PROTOCOLS
    for pr, fs in fits.items():
        assert [f.protocol for f in fs] == [pr] * 3
        assert all(abs(f.overlap - o) <= 0.02 for f, o in zip(fs, [0.1, 0.4, 0.8]))
        assert [f.sigma for f in fs] == sorted(f.sigma for f in fs)
    # the authors' stream is shorter, so the same overlap needs a smaller sigma
    assert all(a.sigma < t.sigma for t, a in zip(fits["text"], fits["authors"]))
    with pytest.raises(TypeError, match="overlaps"):
        sigmas_for_overlaps(0.4, graphs["cora"])
