"""clkit.drift.streams and the stream cache: the properties the issue asks for."""

import numpy as np
import pytest

from clkit.drift import (boundary_local_stream, build_stream, gaussian_stream, global_stream, hard_stream,
                         overlap_index, task_centers)


def _tasks(sizes, start=0):
    out, s = [], start
    for n in sizes:
        out.append(np.arange(s, s + n))
        s += n
    return out


TASKS = _tasks([95, 120, 60, 101, 80])
NODE_TASK = np.repeat(np.arange(5), [95, 120, 60, 101, 80])


def _check_counts(stream, B):
    assert stream.batches.shape[1] == B
    assert (stream.counts.sum(1) == B).all()
    # counts are the realised composition of the node indices
    for t in range(stream.num_batches):
        np.testing.assert_array_equal(np.bincount(NODE_TASK[stream.batches[t]], minlength=5), stream.counts[t])


def test_hard_stream_is_task_pure_and_contiguous():
    s = hard_stream(TASKS, 10, seed=0)
    _check_counts(s, 10)
    assert ((s.counts == 10) | (s.counts == 0)).all()
    owner = s.counts.argmax(1)
    assert (np.diff(owner) >= 0).all()
    _, bk, T = task_centers([len(t) for t in TASKS], 10)
    assert s.num_batches == T and np.bincount(owner).tolist() == bk.tolist()
    # without replacement: each task's first N_k draws are a permutation of its nodes
    for k, nodes in enumerate(TASKS):
        drawn = s.batches[owner == k].ravel()
        assert set(drawn.tolist()) == set(nodes.tolist())


@pytest.mark.parametrize("sampling", ["without", "with"])
def test_gaussian_stream_counts_and_sampling(sampling):
    s = gaussian_stream(TASKS, 10, sigma=5.0, sampling=sampling, seed=3)
    _check_counts(s, 10)
    for k, nodes in enumerate(TASKS):
        drawn = s.batches[NODE_TASK[s.batches] == k]
        assert np.isin(drawn, nodes).all()
        freq = np.bincount(drawn - nodes[0], minlength=len(nodes))
        if sampling == "without":  # reshuffled queues: every node drawn floor or ceil(S/N) times
            assert freq.max() - freq.min() <= 1
    if sampling == "with":  # duplicates before exhaustion are practically certain
        first = s.batches[NODE_TASK[s.batches] == 1][:60]
        assert len(np.unique(first)) < 60


def test_tiny_sigma_gaussian_is_task_pure():
    s = gaussian_stream(_tasks([100] * 4), 10, sigma=1e-3)
    assert ((s.counts == 10) | (s.counts == 0)).all()


def test_samples_are_shuffled_within_batches():
    s = gaussian_stream(TASKS, 10, sigma=20.0, seed=0)
    tasks = NODE_TASK[s.batches]
    mixed = s.counts.max(1) < 10
    # batches with several tasks are not laid out task by task
    assert (np.diff(tasks[mixed], axis=1) < 0).any(axis=1).mean() > 0.5


def test_overlap_of_streams_rises_with_sigma():
    o = [overlap_index(gaussian_stream(TASKS, 10, sigma=s).weights) for s in [0.5, 3, 10, 30]]
    assert o == sorted(o) and o[-1] > o[0]


def test_boundary_local_mixes_only_inside_windows():
    k_bl = 2
    s = boundary_local_stream(TASKS, 10, k_bl, seed=1)
    h = hard_stream(TASKS, 10, seed=1)
    _check_counts(s, 10)
    # same samples as the hard stream, only moved within the windows
    assert sorted(s.batches.ravel().tolist()) == sorted(h.batches.ravel().tolist())
    windows = np.array(s.meta["windows"])
    _, bk, _ = task_centers([len(t) for t in TASKS], 10)
    bounds = np.cumsum(bk)[:-1]
    inside = np.zeros(s.num_batches, bool)
    for k, (a, b) in enumerate(windows):
        inside[a:b] = True
        assert (a, b) == (bounds[k] - k_bl, bounds[k] + k_bl)
        assert (s.counts[a:b, [k, k + 1]].sum(1) == 10).all()  # only tasks k and k+1
        assert s.counts[a:b, k].sum() == k_bl * 10  # the last K_bl*B samples of task k, redistributed
    assert ((s.counts[~inside] == 10) | (s.counts[~inside] == 0)).all()
    assert (s.counts[inside].max(1) < 10).mean() > 0.5


def test_global_mixing_spreads_a_fraction_p():
    p = 0.3
    s = global_stream(TASKS, 10, p, seed=2)
    _check_counts(s, 10)
    owner = s.weights.argmax(1)
    off_window = s.counts.sum() - s.counts[np.arange(s.num_batches), owner].sum()
    # pool slots are p of all slots; a pool draw lands outside its task's window most of the time
    assert 0.15 < off_window / s.counts.sum() <= p + 0.01
    early, late = s.counts[: s.num_batches // 5], s.counts[-s.num_batches // 5:]
    assert early[:, 4].sum() > 0 and late[:, 0].sum() > 0  # every task present all along


def test_stream_determinism_and_seed_separation():
    a = gaussian_stream(TASKS, 10, sigma=4.0, seed=7)
    b = gaussian_stream(TASKS, 10, sigma=4.0, seed=7)
    c = gaussian_stream(TASKS, 10, sigma=4.0, seed=8)
    np.testing.assert_array_equal(a.batches, b.batches)
    assert (a.batches != c.batches).any()
    np.testing.assert_array_equal(a.counts, c.counts)  # the schedule does not depend on the seed


def test_cache_round_trip_and_keys(tmp_path):
    a = build_stream(TASKS, "gaussian", dataset="toy", sigma=4.0, seed=1, root=tmp_path)
    b = build_stream(TASKS, "gaussian", dataset="toy", sigma=4.0, seed=1, root=tmp_path)
    assert not a.meta["cached"] and b.meta["cached"]
    np.testing.assert_array_equal(a.batches, b.batches)
    build_stream(TASKS, "gaussian", dataset="toy", sigma=5.0, seed=1, root=tmp_path)
    build_stream(TASKS, "gaussian", dataset="toy", sigma=4.0, seed=1, sampling="with", root=tmp_path)
    build_stream(TASKS, "global", dataset="toy", p=0.1, seed=1, root=tmp_path)
    files = sorted(f.name for f in (tmp_path / "toy").iterdir())
    assert len(files) == 4 and not any(f.startswith(".") for f in files)  # no temporary files left


@pytest.mark.parametrize("kw, name", [
    (dict(setting="gaussian", sigma=0.0), "sigma"),
    (dict(setting="gaussian", sigma=float("nan")), "sigma"),
    (dict(setting="global", p=1.0), "p"),
    (dict(setting="global", p=-0.1), "p"),
    (dict(setting="boundary_local", k_bl=0), "k_bl"),
    (dict(setting="gaussian", sigma=1.0, batch_size=0), "batch_size"),
    (dict(setting="gaussian", sigma=1.0, sampling="bootstrap"), "sampling"),
    (dict(setting="blurry"), "setting"),
])
def test_bad_input_names_the_parameter(kw, name, tmp_path):
    with pytest.raises(ValueError, match=name):
        build_stream(TASKS, dataset="toy", root=tmp_path, **kw)


def test_empty_task_is_rejected():
    with pytest.raises(ValueError, match="at least one training node"):
        hard_stream([np.arange(3), np.array([], dtype=int)], 2)
