"""clkit.data.timeseries: synthetic CESNET-shaped generator, river streams, CESNET loader paths."""

import time

import numpy as np
import pytest

from clkit.data._cache import DatasetNotFoundError
from clkit.data.timeseries import (CESNET_FEATURES, load_cesnet_timeseries24, load_river_stream,
                                   synthetic_network_traffic)


@pytest.fixture(scope="module")
def traffic():
    return synthetic_network_traffic(num_series=6, num_weeks=4, seed=3)


def test_shape_names_and_determinism(traffic):
    assert traffic.values.shape == (6, 4 * 7 * 144, 12)
    assert traffic.features == CESNET_FEATURES and traffic.target == "avg_duration"
    assert "synthetic" in traffic.source and "not real" in traffic.source
    again = synthetic_network_traffic(num_series=6, num_weeks=4, seed=3)
    np.testing.assert_array_equal(traffic.values, again.values)
    assert not np.array_equal(traffic.values, synthetic_network_traffic(6, 4, seed=4).values)


def test_value_ranges(traffic):
    v = traffic.values
    assert np.isfinite(v).all()
    assert (v[..., :6] >= 0).all()                                  # counts
    assert ((v[..., 6:10] > 0) & (v[..., 6:10] < 1)).all()         # ratios
    assert (v[..., 10] > 0).all()                                    # avg_duration


def test_daily_and_weekly_cycles(traffic):
    flows = np.log(traffic.values[..., 0])
    per_day = 144
    by_hour = flows.reshape(6, -1, per_day).mean(axis=(0, 1))        # mean daily profile
    assert by_hour.max() - by_hour.min() > 0.3
    days = flows.reshape(6, -1, per_day).mean(axis=2)                # (series, day)
    dow = np.arange(days.shape[1]) % 7
    assert days[:, dow < 5].mean() > days[:, dow >= 5].mean()       # weekend dip


def test_heavy_tails_and_regime_changes(traffic):
    from scipy.stats import kurtosis

    resid = np.diff(np.log(traffic.values[..., 1]), axis=1).ravel()
    assert kurtosis(resid) > 1.0                                      # heavier than Gaussian
    assert len(traffic.changepoints) > 0
    d = synthetic_network_traffic(1, 4, regime_rate=0.0, transient_rate=0.0, seed=0)
    assert d.changepoints == []


def test_generator_bad_input():
    with pytest.raises(ValueError, match="num_series"):
        synthetic_network_traffic(num_series=0)
    with pytest.raises(ValueError, match="tail_df"):
        synthetic_network_traffic(1, 1, tail_df=1.0)


def test_river_occupancy_is_real_and_offline():
    d = load_river_stream("occupancy")
    assert d.values.shape == (1, 509, 4) and np.isfinite(d.values).all()
    assert "real data" in d.source and 238 in d.changepoints
    b = load_river_stream("brent_crude_oil")
    assert b.values.shape[1] > 8000
    with pytest.raises(ValueError, match="name"):
        load_river_stream("mnist")


def test_cesnet_fails_fast_offline(tmp_path):
    t0 = time.perf_counter()
    with pytest.raises(DatasetNotFoundError) as err:
        load_cesnet_timeseries24(100, root=tmp_path)
    assert time.perf_counter() - t0 < 5
    msg = str(err.value)
    assert "CESNET-TimeSeries24" in msg and str(tmp_path) in msg and "download=True" in msg


def test_cesnet_reads_cache_file_written_here(tmp_path):
    rng = np.random.default_rng(0)
    values = rng.random((5, 300, 12)).astype(np.float32)
    values[0, 3, 2] = np.nan                                          # missing step
    folder = tmp_path / "cesnet_timeseries24"
    folder.mkdir()
    np.savez(folder / "ip_addresses_10_minutes_top3.npz", values=values[:3], features=np.array(CESNET_FEATURES))
    d = load_cesnet_timeseries24(3, root=tmp_path)
    assert d.values.shape == (3, 300, 12) and d.target == "avg_duration" and d.interval_minutes == 10
    assert "CESNET-TimeSeries24" in d.source and np.isfinite(d.values).all() and d.values[0, 3, 2] == 0
    np.testing.assert_allclose(d.values[1], values[1])
    np.savez(folder / "ip_addresses_10_minutes_top4.npz", values=values[:, :, :5], features=np.array(CESNET_FEATURES[:5]))
    with pytest.raises(ValueError, match="not a clkit CESNET cache"):
        load_cesnet_timeseries24(4, root=tmp_path)
