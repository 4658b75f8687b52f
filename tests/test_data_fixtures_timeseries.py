"""Fabricated CESNET-TimeSeries24 and Wild-Time files, read by the real loaders.

The CESNET database goes through cesnet-tszoo (no cache yet), the Wild-Time files
through wild-time-data; everything lives under tmp_path (``CLKIT_DATA`` and ``HOME``).
"""

import hashlib

import numpy as np
import pytest

from clkit.data import DatasetNotFoundError
from clkit.data.fixtures import write
from clkit.data.fixtures.cesnet import cesnet_database_path, write_cesnet_timeseries24
from clkit.data.fixtures.wild_time import write_fmow, write_yearbook
from clkit.data.temporal import load_wild_time
from clkit.data.timeseries import CESNET_FEATURES, load_cesnet_timeseries24

STEPS_PER_WEEK = 7 * 144


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The clkit data cache, in tmp_path; ``~`` too, so ``~/wild-time-data`` is never the user's."""
    monkeypatch.setenv("CLKIT_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "data"


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _leftovers(folder):
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


def _db_rows(db):
    tables = pytest.importorskip("tables")
    with tables.open_file(db) as h5:
        group = h5.root.ip_addresses_full
        return (group.agg_10_minutes.read(), group.id_ranges_agg_10_minutes.read(),
                group.identifiers.read(), h5.root.times.times_10_minutes.read())


def test_cesnet_database_layout(cache):
    db = write_cesnet_timeseries24(cache, num_ips=6, num_weeks=1, seed=1)
    assert db == cesnet_database_path(cache)
    assert db.name == "CESNET-TimeSeries24-ip_addresses_full-minutes.h5" and _leftovers(db.parent) == []
    rows, ranges, ids, times = _db_rows(db)
    assert rows.dtype.names == ("id_ip", "id_time", *CESNET_FEATURES)
    np.testing.assert_array_equal(ids["id_ip"], ranges["id_ip"])
    for ip, start, end in ranges:                       # each IP's rows: contiguous, in time order
        block = rows[int(start):int(end)]
        assert (block["id_ip"] == ip).all() and (np.diff(block["id_time"].astype(int)) > 0).all()
    assert ranges["end"][-1] == len(rows) and (rows["n_flows"] >= 1).all()
    np.testing.assert_array_equal(times["id_time"], np.arange(STEPS_PER_WEEK))
    assert times["time"][0] == 1_696_809_600 and (np.diff(times["time"]) == 600).all()
    ratios = rows[["tcp_udp_ratio_packets", "dir_ratio_bytes"]]
    assert all(((ratios[f] >= 0) & (ratios[f] <= 1)).all() for f in ratios.dtype.names)


def test_cesnet_loader_reads_database_through_tszoo_then_its_cache(cache):
    db = write_cesnet_timeseries24(cache, num_ips=12, num_weeks=1, seed=3)
    npz = cache / "cesnet_timeseries24" / "ip_addresses_10_minutes_top4.npz"
    assert not npz.exists()
    d = load_cesnet_timeseries24(4, root=cache)
    assert npz.is_file() and _leftovers(npz.parent) == []
    assert d.values.shape == (4, STEPS_PER_WEEK, 12) and d.features == CESNET_FEATURES
    assert d.interval_minutes == 10 and d.target == "avg_duration" and np.isfinite(d.values).all()

    rows, ranges, _, _ = _db_rows(db)
    per_ip = (ranges["end"] - ranges["start"]).astype(int)
    assert per_ip.min() < 0.75 * STEPS_PER_WEEK and per_ip.max() > 0.9 * STEPS_PER_WEEK   # gaps differ
    active = (d.values[..., 0] > 0).sum(axis=1)                    # missing steps come back as 0
    assert list(active) == sorted(per_ip, reverse=True)[:4]         # the densest IPs, densest first
    for s in range(4):                                              # each series is one IP's rows
        ip = ranges["id_ip"][list(per_ip).index(active[s])]
        block = rows[rows["id_ip"] == ip]
        want = np.stack([block[f].astype(np.float32) for f in CESNET_FEATURES], axis=1)
        np.testing.assert_array_equal(d.values[s, block["id_time"]], want)

    db.unlink()                                                     # the second call needs only the cache
    again = load_cesnet_timeseries24(4, root=cache)
    np.testing.assert_array_equal(again.values, d.values)
    assert "cache" in again.source


def test_cesnet_sizes_and_missing_database(cache):
    write_cesnet_timeseries24(cache, num_ips=3, num_weeks=1)
    with pytest.raises(ValueError, match="num_series must be at most the 3 IP"):
        load_cesnet_timeseries24(4, root=cache)
    for bad in ({"num_ips": 0}, {"num_weeks": 41}, {"seed": -1}):
        name, value = next(iter(bad.items()))
        with pytest.raises(ValueError, match=rf"{name} must be .* got {value}"):
            write_cesnet_timeseries24(cache, **bad)
    cesnet_database_path(cache).unlink()
    with pytest.raises(DatasetNotFoundError) as err:
        load_cesnet_timeseries24(2, root=cache)
    assert "CESNET-TimeSeries24" in str(err.value) and str(cesnet_database_path(cache)) in str(err.value)


@pytest.mark.parametrize("name, sizes", [("cesnet", {"num_ips": 4, "num_weeks": 1}),
                                         ("yearbook", {"per_step": 3, "steps": [1930, 1990]}),
                                         ("fmow", {"per_step": 2, "steps": [0, 15]})])
def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path, name, sizes):
    h5py = pytest.importorskip("h5py")
    a, b, c = (write(name, tmp_path / root, seed=seed, **sizes)
               for root, seed in (("a", 5), ("b", 5), ("c", 6)))
    assert _digest(a) == _digest(b) != _digest(c)
    with h5py.File(a) as f:                             # no object stamped with the time of writing
        stamps = []
        f.visititems(lambda _, obj: stamps.append(h5py.h5o.get_info(obj.id).mtime))
    assert len(stamps) > 3 and not any(stamps)


def test_yearbook_periods_classes_splits(cache):
    path = write("yearbook", cache, per_step=4, steps=range(1930, 1935))
    assert path == cache / "wild-time" / "yearbook.hdf5" and _leftovers(path.parent) == []
    ds = load_wild_time("yearbook", period_length=2)
    assert ds.periods == ["1930", "1932", "1934"] and ds.num_classes == 2
    assert ds.input_shape == (1, 32, 32) and "wild-time-data" in ds.source
    assert [len(y) for _, y in ds.train] == [8, 8, 4] and [len(y) for _, y in ds.test] == [8, 8, 4]
    assert set(np.concatenate([y for _, y in ds.train]).tolist()) <= {0, 1}
    x = ds.train[0][0]
    assert x.dtype == np.float32 and 0 <= x.min() and x.max() <= 1


def test_yearbook_classes_learnable_and_drifting(cache):
    """A nearest-class-mean rule of the first decade: right within it, worse 70 years on."""
    write_yearbook(cache, per_step=24, steps=[*range(1930, 1940), *range(2004, 2014)])
    ds = load_wild_time("yearbook", period_length=10)

    def flat(part):
        return part[0].reshape(len(part[1]), -1), part[1]

    x, y = flat(ds.train[0])
    means = np.stack([x[y == k].mean(axis=0) for k in (0, 1)])

    def accuracy(part):
        xt, yt = flat(part)
        return float((np.argmin(((xt[:, None] - means) ** 2).sum(-1), axis=1) == yt).mean())

    early, late = accuracy(ds.test[0]), accuracy(ds.test[1])
    assert early > 0.9 and late < early - 0.2


def test_fmow_real_image_size_through_wild_time_data(cache):
    wtd = pytest.importorskip("wild_time_data")
    path = write_fmow(cache, per_step=3, steps=[0, 1, 5])
    raw = wtd.load_dataset("fmow", 5, "test", data_dir=str(path.parent))   # from disk, default transform
    assert len(raw) == 3 and tuple(raw[0][0].shape) == (3, 224, 224) and 0 <= int(raw[0][1]) < 62
    ds = load_wild_time("fmow")
    assert ds.periods == ["0", "1", "5"] and ds.num_classes == 62 and ds.input_shape == (3, 32, 32)
    assert [len(y) for _, y in ds.train] == [3, 3, 3] and [len(y) for _, y in ds.test] == [3, 3, 3]


def test_wild_time_bad_sizes_and_removed_file(cache):
    for kwargs, pattern in (({"per_step": 0}, "per_step must be .* got 0"),
                            ({"steps": [1929]}, r"steps must be .*1930\.\.2013.*1929"),
                            ({"steps": []}, "steps must be"), ({"steps": [1930.0]}, "steps must be")):
        with pytest.raises(ValueError, match=pattern):
            write_yearbook(cache, **kwargs)
    write_fmow(cache, per_step=1, steps=[3]).unlink()
    with pytest.raises(DatasetNotFoundError) as err:
        load_wild_time("fmow")
    assert "Wild-Time fmow" in str(err.value) and str(cache / "wild-time" / "fmow.hdf5") in str(err.value)
