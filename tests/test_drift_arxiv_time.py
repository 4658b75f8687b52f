"""The time-evolving ogbn-arxiv stream: fabricated raw files read by ogb, year bins, time order, run_grid."""

import numpy as np
import pytest

from clkit.drift.experiment import STREAMS, check_params, run_time_stream, time_split
from clkit.drift.streams import TIME_SETTING, time_stream, year_bins

pytest.importorskip("ogb")


@pytest.fixture(scope="module")
def arxiv(tmp_path_factory):
    from clkit.data.fixtures import write
    from clkit.data.graphs import load_graph

    root = tmp_path_factory.mktemp("cache")
    raw = write("ogbn_arxiv", root, seed=1, num_nodes=300, num_classes=4, num_features=8)
    assert raw == root / "ogbn_arxiv" / "ogbn_arxiv" / "raw"
    return load_graph("ogbn_arxiv", root=root / "ogbn_arxiv")


def test_fixture_read_by_ogb_keeps_years(arxiv, tmp_path):
    from clkit.data.fixtures import write

    assert arxiv.num_nodes == 300 and arxiv.num_classes == 4 and arxiv.x.shape[1] == 8
    assert arxiv.node_year is not None and arxiv.node_year.shape == (300,)
    years = arxiv.node_year.numpy()
    assert 1971 <= years.min() and years.max() <= 2020
    assert np.bincount(years - years.min())[-1] > np.bincount(years - years.min())[0]   # later years larger
    ei = arxiv.edge_index.numpy()
    assert set(map(tuple, ei.T)) == set(map(tuple, ei[::-1].T))    # made undirected for the GCN
    assert "PygNodePropPredDataset" in arxiv.source
    # deterministic bytes for a seed
    a = write("ogbn_arxiv", tmp_path / "a", seed=1, num_nodes=300, num_classes=4, num_features=8)
    b = write("ogbn_arxiv", tmp_path / "b", seed=1, num_nodes=300, num_classes=4, num_features=8)
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in ("edge.csv.gz", "node_year.csv.gz"))


def test_year_bins_are_consecutive_and_balanced():
    years = np.random.default_rng(0).integers(1990, 2021, 5000)
    task, ranges = year_bins(years, 5)
    assert len(ranges) == 5
    assert all(ranges[k][1] < ranges[k + 1][0] for k in range(4))       # consecutive ranges
    for k, (lo, hi) in enumerate(ranges):
        assert ((years >= lo) & (years <= hi) == (task == k)).all()    # a year is never split
    sizes = np.bincount(task)
    assert sizes.max() < 1.6 * sizes.min()
    with pytest.raises(ValueError, match="num_tasks"):
        year_bins(years, 0)


def test_time_split_and_stream_order(arxiv):
    years = arxiv.node_year.numpy()
    split = time_split(arxiv.y.numpy(), years, num_tasks=3, test_fraction=0.2, seed=0)
    assert split.num_tasks == 3 and len(split.task_years) == 3
    everything = np.concatenate([*split.task_nodes, split.test_idx])
    assert np.array_equal(np.sort(everything), np.arange(300))          # every node once
    s1 = time_stream(split.task_nodes, years, 10, seed=1)
    s2 = time_stream(split.task_nodes, years, 10, seed=1)
    s3 = time_stream(split.task_nodes, years, 10, seed=2)
    flat = s1.batches.ravel()
    flat = flat[flat >= 0]
    assert np.array_equal(np.sort(flat), np.sort(np.concatenate(split.task_nodes)))
    assert (np.diff(years[flat]) >= 0).all()                             # publication order
    assert np.array_equal(s1.batches, s2.batches) and not np.array_equal(s1.batches, s3.batches)
    assert np.array_equal(np.sort(years[s3.batches.ravel()[s3.batches.ravel() >= 0]]), np.sort(years[flat]))
    assert s1.setting == TIME_SETTING
    # tasks arrive in order: the first batch is task 0, the last one the last task
    assert s1.counts[0].argmax() == 0 and s1.counts[-1].argmax() == 2


def test_run_time_stream_evaluates_every_year_bin(arxiv):
    split, rows, curves = run_time_stream(arxiv, ["bare", "er"], [1], num_tasks=3, batch_size=20, hidden=8,
                                          eval_every=3, progress=False, cache=False, memory_size=20)
    assert list(rows["method"]) == ["bare", "er"] and (rows["setting"] == TIME_SETTING).all()
    assert np.isfinite(rows["AA"]).all() and np.isfinite(rows["A_AUC"]).all()
    (_, acc), = [v for k, v in curves.items() if k[1] == "bare"]
    assert acc.shape[1] == 3
    # sampled training gives the same numbers on this small graph (the text GCN keeps every in-edge)
    _, rows2, _ = run_time_stream(arxiv, ["bare"], [1], num_tasks=3, batch_size=20, hidden=8, eval_every=3,
                                  progress=False, cache=False, neighbour_sampling="sampled")
    assert rows2["AA"].iloc[0] == pytest.approx(rows["AA"].iloc[0], abs=1e-6)


def test_time_setting_needs_years_and_arxiv():
    from clkit.data.graphs import csbm
    from clkit.drift.experiment import StreamConfig, run_grid, split_tasks

    g = csbm(100, 4, seed=0)
    with pytest.raises(ValueError, match="node years"):
        run_time_stream(g, ["bare"], [1])
    with pytest.raises(ValueError, match="needs a graph with node years"):
        run_grid(g, split_tasks(g.y.numpy(), 2), [StreamConfig(TIME_SETTING)], ["bare"], [1], cache=False,
                 progress=False)
    base = dict(setting="gaussian", sigma=1.0, sigmas=[1.0], p=0.3, k_bl=2, batch_size=10, batch_sizes=[10],
                sampling="without", methods=["bare"], memory_size=10, eval_every=5, seeds=[1],
                classes_per_task=2, tau=0.9, hidden=8, lr=0.01, joint_epochs=1, test_fraction=0.2)
    assert STREAMS == ["latent", "arxiv_time"]
    with pytest.raises(ValueError, match="stream='arxiv_time' needs dataset='ogbn_arxiv'.*got dataset='cora'"):
        check_params(dataset="cora", stream="arxiv_time", **base)
    with pytest.raises(ValueError, match="stream must be one of"):
        check_params(dataset="cora", stream="years", **base)
    with pytest.raises(ValueError, match="neighbour_sampling must be one of"):
        check_params(dataset="cora", neighbour_sampling="blocks", **base)
    check_params(dataset="ogbn_arxiv", stream="arxiv_time", neighbour_sampling="auto", **base)


@pytest.mark.notebook     # about 25 s on 2 cores
def test_notebook_runs_the_time_stream_on_the_fabricated_arxiv(tmp_path):
    """Notebook 05 with dataset ogbn_arxiv (the real ogb loader on its fabricated raw files), stream
    arxiv_time and sampled neighbourhoods: the year-bin section runs, records every method's rows and
    draws its figure."""
    import json

    from clkit.data.fixtures import write
    from clkit.run import run_notebook

    write("ogbn_arxiv", tmp_path / "cache", seed=1, num_nodes=300, num_classes=8, num_features=8)
    out = run_notebook("05_drift", "smoke", [("dataset", "ogbn_arxiv"), ("stream", "arxiv_time"),
                                             ("neighbour_sampling", "sampled"),
                                             ("data_dir", str(tmp_path / "cache" / "ogbn_arxiv")),
                                             ("seeds", "[1]"), ("methods", "[bare, er]")],
                       out=tmp_path / "runs", progress=False)
    r = json.loads((out / "results.json").read_text())["results"]
    t = r["arxiv_time"]
    assert len(t["task_years"]) >= 2 and {row["method"] for row in t["rows"]} == {"bare", "er"}
    assert (out / "figures" / "arxiv_time.png").is_file()
