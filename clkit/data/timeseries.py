"""Multivariate time-series streams for the taskification notebook.

Three sources, all returning a :class:`TimeSeriesData` with ``values`` of shape
``(num_series, T, num_features)``:

- :func:`synthetic_network_traffic` -- the offline default. A **synthetic** generator
  in the shape of CESNET-TimeSeries24 (per-IP traffic aggregated every 10 minutes,
  40 weeks, the dataset's 12 feature names, target ``avg_duration``): daily and
  weekly cycles, regime changes (piecewise-constant level shifts), short transients
  (bursts with exponential decay) and heavy-tailed (Student-t) noise. It is not
  real traffic; it only reproduces those qualitative properties.
- :func:`load_cesnet_timeseries24` -- the real dataset through ``cesnet-tszoo``
  (IP addresses, 10-minute aggregation). Offline it reads the clkit cache file
  ``<data_root>/cesnet_timeseries24/<name>.npz`` or an already downloaded tszoo
  database (through cesnet-tszoo); it downloads only with ``download=True`` and otherwise raises
  :class:`~clkit.data._cache.DatasetNotFoundError` at once.
- :func:`load_river_stream` -- real streams that the ``river`` wheel ships
  (``river.drift.datasets``: room occupancy sensors, Brent crude oil price, ...),
  available offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._validate import check_choice, check_int, check_real
from ._cache import DatasetNotFoundError, data_root
from ._reads import record_read

__all__ = ["TimeSeriesData", "CESNET_FEATURES", "CESNET_TARGET", "synthetic_network_traffic",
           "load_cesnet_timeseries24", "RIVER_STREAMS", "load_river_stream"]

#: The 12 per-IP features of CESNET-TimeSeries24 (Koumar et al., 2025).
CESNET_FEATURES = ("n_flows", "n_packets", "n_bytes", "n_dest_ip", "n_dest_asn", "n_dest_ports",
                   "tcp_udp_ratio_packets", "tcp_udp_ratio_bytes", "dir_ratio_packets", "dir_ratio_bytes",
                   "avg_duration", "avg_ttl")
#: The forecasting target of the taskification paper.
CESNET_TARGET = "avg_duration"
STEPS_PER_DAY_10MIN = 144


@dataclass
class TimeSeriesData:
    """A set of aligned multivariate series.

    Attributes
    ----------
    values : ndarray of float32, shape (num_series, T, num_features)
    features : tuple of str, length num_features
    target : str
        Name of the forecasting target (one of ``features``).
    interval_minutes : float
        Sampling interval.
    source : str
        Where the data came from (logged by notebooks as ``data_source``).
    changepoints : list of int
        Known change points (annotations or generator ground truth), in steps.
    """

    values: np.ndarray
    features: tuple
    target: str
    interval_minutes: float
    source: str
    changepoints: list = field(default_factory=list)

    @property
    def num_series(self) -> int:
        return int(self.values.shape[0])

    @property
    def length(self) -> int:
        return int(self.values.shape[1])

    @property
    def target_index(self) -> int:
        return self.features.index(self.target)


def _ar1(noise: np.ndarray, phi: float) -> np.ndarray:
    """AR(1) filter along the last axis: ``y[t] = phi * y[t-1] + noise[t]`` (vectorised, scipy)."""
    from scipy.signal import lfilter

    return lfilter([1.0], [1.0, -phi], noise, axis=-1)


def synthetic_network_traffic(num_series: int = 100, num_weeks: int = 40, interval_minutes: float = 10.0,
                              regime_rate: float = 0.15, transient_rate: float = 1.0, tail_df: float = 3.0,
                              seed: int = 0) -> TimeSeriesData:
    """Synthetic per-IP network traffic in the shape of CESNET-TimeSeries24 (documented as synthetic).

    For series ``s`` and step ``t`` a latent activity is

    .. math:: a_{s,t} = b_s\\,(1 + c_s \\cos(2\\pi (h_t - \\phi_s)/24))\\,(1 - w_s[\\text{weekend}_t])\\,
              e^{L_{s,t}}\\,(1 + B_{s,t})\\,e^{0.25\\,\\epsilon_{s,t}},

    with :math:`L` a piecewise-constant regime level (jumps :math:`N(0, 0.5^2)` at
    Poisson(``regime_rate`` per day) change points), :math:`B` bursts (Poisson(
    ``transient_rate`` per week) starts, log-normal height, exponential decay of
    1-6 hours) and :math:`\\epsilon` Student-t(``tail_df``) noise. Counts, bytes,
    destinations and ports follow from :math:`a` by per-series power laws; the
    ratios are logistic functions of regime-dependent logits; ``avg_duration``
    (the target) has its own regime level, a daily cycle and AR(1) noise, and
    lengthens during bursts; ``avg_ttl`` switches between regime-dependent means.

    Parameters
    ----------
    num_series : int
    num_weeks : int
        Stream length in weeks (CESNET-TimeSeries24 has 40).
    interval_minutes : float
        Sampling interval (the paper uses 10 minutes).
    regime_rate : float
        Expected regime changes per series per day.
    transient_rate : float
        Expected bursts per series per week.
    tail_df : float
        Degrees of freedom of the Student-t noise (smaller: heavier tails).
    seed : int

    Returns
    -------
    TimeSeriesData
        ``values`` of shape (num_series, num_weeks * 7 * 24 * 60 / interval_minutes, 12),
        ``changepoints`` are the regime changes of series 0.

    Examples
    --------
    >>> d = synthetic_network_traffic(num_series=2, num_weeks=1, seed=0)
    >>> d.values.shape, d.target, d.values.dtype.name
    ((2, 1008, 12), 'avg_duration', 'float32')
    >>> bool(np.isfinite(d.values).all() and (d.values[..., :6] >= 0).all())
    True
    """
    num_series = check_int("num_series", num_series, low=1)
    num_weeks = check_int("num_weeks", num_weeks, low=1)
    interval_minutes = check_real("interval_minutes", interval_minutes, low=0, low_open=True, high=1440)
    regime_rate = check_real("regime_rate", regime_rate, low=0)
    transient_rate = check_real("transient_rate", transient_rate, low=0)
    tail_df = check_real("tail_df", tail_df, low=1, low_open=True)
    rng = np.random.default_rng(check_int("seed", seed))
    S = num_series
    per_day = 24 * 60 / interval_minutes
    T = int(round(num_weeks * 7 * per_day))
    t = np.arange(T)
    hour = (t / per_day * 24.0) % 24.0
    weekend = ((t // per_day) % 7 >= 5).astype(float)            # stream starts on a Monday

    def per_series(low, high):
        return rng.uniform(low, high, size=(S, 1))

    # regime levels: jumps at Poisson change points, piecewise constant via cumsum
    p_change = regime_rate / per_day
    jumps = (rng.random((S, T)) < p_change) * rng.normal(0.0, 0.5, size=(S, T))
    jumps[:, 0] = 0.0
    level = np.cumsum(jumps, axis=1)
    regime_id = np.cumsum(jumps != 0, axis=1)
    regime_code = np.sin(1.7 * regime_id + per_series(0, 6))  # a bounded regime signature in [-1, 1]

    # bursts: Poisson starts with log-normal heights, exponential decay (AR(1) with no noise)
    p_burst = transient_rate / (7 * per_day)
    starts = (rng.random((S, T)) < p_burst) * rng.lognormal(1.0, 0.7, size=(S, T))
    decay_steps = rng.uniform(60, 360, size=S) / interval_minutes
    bursts = np.stack([_ar1(starts[s], float(np.exp(-1.0 / decay_steps[s]))) for s in range(S)]) if S else starts

    eps = rng.standard_t(tail_df, size=(S, T, 12)).clip(-25, 25)
    daily = 1 + per_series(0.3, 0.8) * np.cos(2 * np.pi * (hour[None, :] - per_series(12, 17)) / 24)
    weekly = 1 - per_series(0.1, 0.5) * weekend[None, :]
    base = np.exp(per_series(2.0, 6.0))
    act = base * daily * weekly * np.exp(level) * (1 + bursts) * np.exp(0.25 * eps[..., 0])

    def pos(x):
        return np.maximum(x, 0.0)

    def logistic(z):
        return 1 / (1 + np.exp(-z))

    X = np.empty((S, T, 12), dtype=np.float64)
    X[..., 0] = pos(act)                                                       # n_flows
    X[..., 1] = X[..., 0] * per_series(5, 40) * np.exp(0.2 * eps[..., 1])     # n_packets
    X[..., 2] = X[..., 1] * per_series(200, 1200) * np.exp(0.3 * eps[..., 2] + 0.3 * regime_code)  # n_bytes
    X[..., 3] = X[..., 0] ** per_series(0.6, 0.9) * np.exp(0.15 * eps[..., 3])                   # n_dest_ip
    X[..., 4] = X[..., 3] ** per_series(0.5, 0.8) * np.exp(0.1 * eps[..., 4])                    # n_dest_asn
    X[..., 5] = X[..., 0] ** per_series(0.5, 0.9) * np.exp(0.2 * eps[..., 5] + 0.2 * bursts)     # n_dest_ports
    X[..., 6] = logistic(per_series(-1, 2) + 0.8 * regime_code + 0.2 * eps[..., 6])              # tcp_udp packets
    X[..., 7] = logistic(per_series(-1, 2) + 0.8 * regime_code + 0.2 * eps[..., 7])              # tcp_udp bytes
    X[..., 8] = logistic(0.3 * (daily - 1) + 0.5 * regime_code + 0.2 * eps[..., 8])              # dir packets
    X[..., 9] = logistic(0.3 * (daily - 1) - 0.5 * regime_code + 0.2 * eps[..., 9])              # dir bytes
    dur_noise = _ar1(0.15 * eps[..., 10], 0.9)
    X[..., 10] = per_series(1.0, 30.0) * np.exp(0.7 * level + 0.4 * regime_code + dur_noise
                                                 - 0.2 * (daily - 1)) * (1 + 0.5 * bursts)      # avg_duration
    X[..., 11] = np.where(regime_code > 0, 64.0, 110.0) + 4 * eps[..., 11].clip(-5, 5)           # avg_ttl
    cps = np.flatnonzero(jumps[0] != 0).tolist() if S else []
    return TimeSeriesData(X.astype(np.float32), CESNET_FEATURES, CESNET_TARGET, interval_minutes,
                          f"synthetic CESNET-shaped network traffic (clkit generator, seed={seed}; not real data)",
                          cps)


def _cesnet_paths(root: Path, num_series: int):
    cache = root / "cesnet_timeseries24" / f"ip_addresses_10_minutes_top{num_series}.npz"
    # CESNET_TimeSeries24.get_dataset names its files the pre-2.0 way: "10_minutes" -> "minutes"
    db = root / "tszoo" / "databases" / "CESNET-TimeSeries24" / "CESNET-TimeSeries24-ip_addresses_full-minutes.h5"
    return cache, db


def _read_cache(path: Path, num_series: int) -> TimeSeriesData:
    with np.load(path, allow_pickle=False) as z:
        values = np.asarray(z["values"], dtype=np.float32)
        features = tuple(str(f) for f in z["features"])
    record_read(path)
    if values.ndim != 3 or values.shape[2] != len(features) or CESNET_TARGET not in features:
        raise ValueError(f"{path} is not a clkit CESNET cache: values {values.shape}, features {features}")
    if values.shape[0] < num_series:
        raise ValueError(f"{path} holds {values.shape[0]} series, fewer than num_series={num_series}")
    values = np.nan_to_num(values[:num_series], nan=0.0)
    return TimeSeriesData(values, features, CESNET_TARGET, 10.0, f"CESNET-TimeSeries24 (clkit cache {path.name})")


def load_cesnet_timeseries24(num_series: int = 100, root=None, download: bool = False) -> TimeSeriesData:
    """CESNET-TimeSeries24 per-IP series at 10-minute aggregation, the ``num_series`` densest IPs.

    Order of attempts:

    1. the clkit cache ``<root>/cesnet_timeseries24/ip_addresses_10_minutes_top<N>.npz``
       (arrays ``values`` (N, T, 12) and ``features`` (12,)), written after a
       successful tszoo load;
    2. an already downloaded tszoo database
       ``<root>/tszoo/databases/CESNET-TimeSeries24/CESNET-TimeSeries24-ip_addresses_full-minutes.h5``
       (or a download when ``download=True``), read by cesnet-tszoo: a pool of
       ``10 * num_series`` IPs (all of them when the database holds fewer) drawn by
       tszoo with a fixed ``random_state`` is ranked by density (share of 10-minute
       steps with flows) and the top ``num_series`` are kept; missing steps become 0.
       The cache of step 1 is then written (atomically). The tests run this path on a
       fabricated database (:func:`clkit.data.fixtures.cesnet.write_cesnet_timeseries24`);
    3. otherwise :class:`DatasetNotFoundError` (never a network call by default).

    Parameters
    ----------
    num_series : int
    root : path-like, optional
        Defaults to :func:`clkit.data._cache.data_root`.
    download : bool
        Allow cesnet-tszoo to download the database (several GB).

    Raises
    ------
    DatasetNotFoundError
        Neither the cache nor the database is there (or tszoo could not read it).
    ValueError
        The cache or the database holds fewer than ``num_series`` series.

    Examples
    --------
    >>> import tempfile
    >>> try:
    ...     load_cesnet_timeseries24(5, root=tempfile.mkdtemp())
    ... except DatasetNotFoundError as err:
    ...     print("CESNET-TimeSeries24" in str(err))
    True
    """
    num_series = check_int("num_series", num_series, low=1)
    root = Path(root) if root is not None else data_root()
    cache, db = _cesnet_paths(root, num_series)
    how = ("Run load_cesnet_timeseries24(download=True) once with network access (cesnet-tszoo downloads the "
           "database), or place a clkit cache file (arrays 'values' (N, T, 12), 'features') at the first path.")
    if cache.exists():
        return _read_cache(cache, num_series)
    if not db.exists() and not download:
        raise DatasetNotFoundError("CESNET-TimeSeries24", [cache, db], how)
    try:
        from cesnet_tszoo.configs import TimeBasedConfig
        from cesnet_tszoo.datasets import CESNET_TimeSeries24

        ds = CESNET_TimeSeries24.get_dataset(str(root), source_type="ip_addresses_full", aggregation="10_minutes",
                                             dataset_type="time_based", display_details=False)
        available = len(ds.get_available_ts_indices())
        # a pool of candidates (reproducible), ranked by density (share of 10-minute steps with flows);
        # only the 12 features (no IP or time columns), read in this process
        pool = min(10 * num_series, available)
        if available >= num_series:
            ds.set_dataset_config_and_initialize(
                TimeBasedConfig(ts_ids=pool, features_to_take=list(CESNET_FEATURES), train_time_period=1.0,
                                default_values=np.nan, include_time=False, include_ts_id=False,
                                init_workers=0, train_workers=0, all_workers=0, random_state=0),
                display_config_details=None)
            values = np.asarray(ds.get_all_numpy(workers=0), dtype=np.float32)   # (pool, T, 12)
        record_read(db)
    except Exception as err:  # noqa: BLE001 -- any failure means the data is not available
        raise DatasetNotFoundError("CESNET-TimeSeries24", [cache, db], how, cause=err) from err
    if available < num_series:
        raise ValueError(f"num_series must be at most the {available} IP addresses in {db}, got {num_series}")
    density = np.isfinite(values[..., 0]).mean(axis=1) * (np.nan_to_num(values[..., 0]) > 0).mean(axis=1)
    values = values[np.argsort(-density, kind="stable")[:num_series]]
    from .._io import atomic_save

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, values=values, features=np.array(CESNET_FEATURES))

    atomic_save(cache, write)
    return _read_cache(cache, num_series)


#: river's bundled drift streams: name -> (file, time column, feature columns, interval minutes, annotator).
RIVER_STREAMS = {
    "occupancy": ("occupancy.csv", "time", ["V1", "V2", "V3", "V4"], 16.0),
    "brent_crude_oil": ("brent_crude_oil.csv", "day", ["DPB"], 1440.0),
    "apple": ("apple.csv", "Date", ["Open", "High", "Low", "Close", "Volume"], 1440.0),
    "bitcoin": ("bitcoin.csv", "date", ["price"], 1440.0),
    "run_log": ("run_log.csv", "time", ["Pace", "Distance"], 1.0),
}


def load_river_stream(name: str = "occupancy") -> TimeSeriesData:
    """A real stream shipped inside the ``river`` wheel (``river.drift.datasets``), offline.

    ``"occupancy"``: room temperature, humidity, light and CO2 (Candanedo &
    Feldheim 2016), one reading every 16 minutes, 509 steps, with change points
    annotated by river's annotators (the union is returned as ``changepoints``).
    The others are daily prices (``brent_crude_oil``: 8,195 days, ``apple``,
    ``bitcoin``) and a running log. Interval values for daily series are nominal.

    Returns
    -------
    TimeSeriesData
        ``values`` of shape (1, T, num_features); ``target`` is the first feature.

    Examples
    --------
    >>> d = load_river_stream("occupancy")
    >>> d.values.shape, d.features
    ((1, 509, 4), ('temperature', 'humidity', 'light', 'co2'))
    """
    import pandas as pd

    check_choice("name", name, list(RIVER_STREAMS))
    fname, _, cols, interval = RIVER_STREAMS[name]
    try:
        import river.drift.datasets as rdd
    except ImportError as err:
        raise DatasetNotFoundError(f"river:{name}", [], "pip install river", cause=err) from err
    path = Path(rdd.__file__).parent / fname
    if not path.exists():
        raise DatasetNotFoundError(f"river:{name}", [path], "Reinstall river (pip install --force-reinstall river).")
    frame = pd.read_csv(record_read(path))
    values = frame[cols].to_numpy(dtype=np.float32)[None]
    features = ("temperature", "humidity", "light", "co2") if name == "occupancy" else tuple(c.lower() for c in cols)
    cps: list[int] = []
    klass = {"occupancy": "Occupancy", "brent_crude_oil": "BrentSpotPrice", "apple": "Apple",
             "bitcoin": "Bitcoin", "run_log": "RunLog"}[name]
    try:
        obj = getattr(rdd, klass)()
        cps = sorted({int(c) for v in getattr(obj, "annotations", {}).values() for c in v})
    except Exception:  # noqa: BLE001 -- annotations are optional metadata
        cps = []
    return TimeSeriesData(values, features, features[0], interval,
                          f"river.drift.datasets.{klass} ({path.name}, shipped with river; real data)", cps)
