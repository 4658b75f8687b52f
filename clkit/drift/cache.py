"""Build a DRIFT stream once per configuration and cache it on disk.

App. A.3: "for every (dataset, sigma, sampling) configuration, the full stream
is generated once and stored as a fixed sequence of mini-batches", so every
method sees the identical stream. The cache lives under
``data_root()/drift_streams/<dataset>/`` and is keyed by (dataset, setting,
sigma / p / k_bl as relevant, batch size, sampling, seed) plus a digest of the
task node lists, so a different split or class grouping never reuses a stream.
Files are written atomically.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from .._io import atomic_save
from .._validate import check_choice, check_int, check_real, check_type
from ..data._cache import data_root
from .streams import (SAMPLINGS, SETTINGS, Stream, authors_boundary_local_stream, authors_global_stream,
                      boundary_local_stream, gaussian_stream, global_stream, hard_stream)

__all__ = ["build_stream", "stream_key"]


def _setting_params(setting, sigma, p, k_bl) -> dict:
    check_choice("setting", setting, SETTINGS)
    if setting == "gaussian":
        return {"sigma": check_real("sigma", sigma, low=0, low_open=True)}
    if setting == "global":
        return {"p": check_real("p", p, low=0, high=1, high_open=True)}
    if setting == "boundary_local":
        return {"k_bl": check_int("k_bl", k_bl, low=1)}
    return {}


def stream_key(task_nodes, setting: str, *, dataset: str, batch_size: int, sampling: str, seed: int,
               sigma=None, p=None, k_bl=None, protocol: str = "text") -> str:
    """A readable, unique file stem for one stream configuration.

    Examples
    --------
    >>> stream_key([np.arange(3)], "gaussian", dataset="csbm", batch_size=10, sampling="without",
    ...            seed=1, sigma=20.0)[:45]
    'gaussian_sigma=20.0_B=10_without_seed=1_nodes'
    """
    params = _setting_params(setting, sigma, p, k_bl)
    digest = hashlib.sha1()
    for nodes in task_nodes:
        digest.update(np.asarray(nodes, dtype=np.int64).tobytes())
        digest.update(b"|")
    digest.update(dataset.encode())
    parts = [setting] + [f"{k}={v!r}" for k, v in params.items()] + [f"B={batch_size}", sampling, f"seed={seed}",
                                                                  f"nodes{digest.hexdigest()[:12]}"]
    if protocol != "text":  # Gaussian schedule; the other settings: the authors' constructions
        parts.append(protocol)
    return "_".join(parts)


def build_stream(task_nodes, setting: str, *, dataset: str, batch_size: int = 10, sampling: str = "without",
                 seed: int = 0, sigma: float | None = None, p: float | None = None, k_bl: int | None = None,
                 cache: bool = True, root=None, protocol: str = "text") -> Stream:
    """Build (or load from the cache) the stream of one configuration.

    Parameters
    ----------
    task_nodes : list of ndarray of int
        Training nodes of each latent task, in task order.
    setting : {"hard", "gaussian", "boundary_local", "global"}
    dataset : str
        Dataset name (part of the cache key).
    batch_size, sampling, seed
        See :func:`clkit.drift.streams.gaussian_stream`.
    sigma : float
        Gaussian width in batches (``setting="gaussian"``).
    p : float in [0, 1)
        Global-mixing fraction (``setting="global"``).
    k_bl : int >= 1
        Boundary-local window in batches (``setting="boundary_local"``).
    cache : bool
        Read/write the on-disk cache (``False``: always build, write nothing).
    root : path, optional
        Cache folder (default ``data_root()/drift_streams``).
    protocol : {"text", "authors"}
        Schedule convention of the Gaussian setting and, under ``"authors"``, the
        constructions of the authors' code for the other settings: the hard setting's
        partial last batch per task, :func:`clkit.drift.streams.authors_boundary_local_stream`
        and :func:`clkit.drift.streams.authors_global_stream` (``sampling`` is then
        ignored; :mod:`clkit.drift.protocol`).

    Returns
    -------
    Stream

    Examples
    --------
    >>> import tempfile
    >>> tasks = [np.arange(30), np.arange(30, 60)]
    >>> d = tempfile.mkdtemp()
    >>> a = build_stream(tasks, "gaussian", dataset="toy", sigma=2.0, root=d)
    >>> b = build_stream(tasks, "gaussian", dataset="toy", sigma=2.0, root=d)   # loaded from disk
    >>> bool((a.batches == b.batches).all()), b.meta["cached"]
    (True, True)
    """
    check_type("dataset", dataset, str)
    check_choice("sampling", sampling, SAMPLINGS)
    batch_size = check_int("batch_size", batch_size, low=1)
    seed = check_int("seed", seed)
    params = _setting_params(setting, sigma, p, k_bl)
    from .protocol import get_protocol

    prot = get_protocol(protocol)
    protocol = prot.name
    key = stream_key(task_nodes, setting, dataset=dataset, batch_size=batch_size, sampling=sampling, seed=seed,
                     sigma=sigma, p=p, k_bl=k_bl, protocol=protocol)
    path = Path(root) if root is not None else data_root() / "drift_streams"
    path = path / dataset / f"{key}.npz"
    if cache and path.exists():
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            meta["cached"] = True
            segment = z["segment"] if "segment" in z.files else None
            return Stream(z["batches"], z["counts"], z["weights"], setting, meta, segment=segment)
    kw = dict(sampling=sampling, seed=seed)
    if setting == "gaussian":
        stream = gaussian_stream(task_nodes, batch_size, params["sigma"], protocol=protocol, **kw)
    elif setting == "hard":
        stream = hard_stream(task_nodes, batch_size, partial_last=prot.hard_task_loop, **kw)
    elif setting == "global" and prot.hard_task_loop:
        stream = authors_global_stream(task_nodes, batch_size, params["p"], seed=seed)
    elif setting == "global":
        stream = global_stream(task_nodes, batch_size, params["p"], **kw)
    elif prot.hard_task_loop:
        stream = authors_boundary_local_stream(task_nodes, batch_size, params["k_bl"], seed=seed)
    else:
        stream = boundary_local_stream(task_nodes, batch_size, params["k_bl"], **kw)
    stream.meta.update(dataset=dataset, batch_size=batch_size, key=key)
    if cache:
        def write(tmp):
            with open(tmp, "wb") as fh:
                extra = {} if stream.segment is None else {"segment": stream.segment}
                np.savez(fh, batches=stream.batches, counts=stream.counts, weights=stream.weights,
                         meta=np.array(json.dumps(stream.meta)), **extra)
        atomic_save(path, write)
    stream.meta["cached"] = False
    return stream
