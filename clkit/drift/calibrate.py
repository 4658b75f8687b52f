"""Choose DRIFT's mixing width by the overlap it produces: σ from a target overlap.

σ is measured in batches, so one σ means different things on different datasets:
the stream of a latent task lasts ``B_k = ceil(N_k / B)`` batches, and the share of
batches where tasks mix (the overlap index, Eq. 6, with the kit's τ = 0.9) depends
on σ relative to those lengths. On real Cora (3 latent tasks of 46, 99 and 58
batches at B = 10, text protocol) σ = 10 gives an overlap of only 0.06, so a sweep
over σ in batches can skip the moderate-overlap regime on one dataset and not on
another. To compare settings across datasets, choose the overlap and solve for σ
per dataset -- the authors' code does the same for the mixing entropy
(``calibrate_sigma_for_mixing_entropy``: bisection in log σ); here the root-finder is
:func:`scipy.optimize.brentq` on log σ, the measured quantity is the kit's own
:func:`~clkit.drift.schedule.overlap_index` (or
:func:`~clkit.drift.schedule.mixing_entropy`) of the schedule that
:func:`~clkit.drift.protocol.schedule` builds under either protocol, and both σ and
the overlap it achieves are reported.

The overlap index of ``T`` batches takes only the values ``j / T`` and jumps where a
batch's largest weight crosses τ, so a target is reached up to the nearest jump:
the solver brackets the jump and returns the side closer to the target (on Cora
and on the notebook's SBM within 0.02 of 0.1, 0.4 and 0.8; tested).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from .._validate import check_choice, check_int, check_real
from .schedule import DEFAULT_TAU, mixing_entropy, overlap_index

__all__ = ["SigmaFit", "schedule_overlap", "schedule_entropy", "sigma_for_overlap", "sigma_for_entropy",
           "stream_task_sizes", "sigma_for_overlap_on_graph", "sigmas_for_overlaps", "sigma_overlap_table", "sigma_overlap_markdown"]

MEASURES = ["overlap", "entropy"]


@dataclass(frozen=True)
class SigmaFit:
    """σ solved for a target overlap (or mixing entropy) and what it achieves.

    Attributes
    ----------
    measure : {"overlap", "entropy"}
    target : float
        The requested value.
    sigma : float
        Mixing width in batches.
    achieved : float
        The measure of the schedule at ``sigma`` (``overlap`` below is the overlap
        index at ``sigma`` whatever the measure, ``entropy`` the mixing entropy).
    overlap, entropy : float
    protocol : str
    tau : float
    batch_size, total_batches : int
    task_sizes : tuple of int
    """

    measure: str
    target: float
    sigma: float
    achieved: float
    overlap: float
    entropy: float
    protocol: str
    tau: float
    batch_size: int
    total_batches: int
    task_sizes: tuple

    def to_dict(self) -> dict:
        """Plain dict for results.json (task sizes as a list)."""
        d = asdict(self)
        d["task_sizes"] = list(self.task_sizes)
        return d


def _sizes(task_sizes) -> np.ndarray:
    sizes = np.asarray(task_sizes)
    if sizes.ndim != 1 or sizes.size < 2 or not np.issubdtype(sizes.dtype, np.integer) or (sizes < 1).any():
        raise ValueError(f"task_sizes must list at least two latent tasks, each >= 1 node, got "
                         f"{np.asarray(task_sizes).tolist()!r}")
    return sizes.astype(np.int64)


def _weights(sizes, batch_size, sigma, protocol):
    from .protocol import schedule

    return schedule(sizes, batch_size, sigma, protocol)[0]


def schedule_overlap(task_sizes, batch_size: int, sigma: float, *, protocol: str = "text",
                     tau: float = DEFAULT_TAU) -> float:
    """Overlap index (Eq. 6) of the Gaussian schedule of ``task_sizes`` at width ``sigma``.

    The same number :func:`clkit.drift.experiment.run_grid` reports as ``overlap``:
    the weights of :func:`clkit.drift.protocol.schedule` under ``protocol``, scored by
    :func:`clkit.drift.schedule.overlap_index`.

    Parameters
    ----------
    task_sizes : array_like of int, shape (K,)
        Stream (training) nodes of each latent task, K >= 2.
    batch_size : int
    sigma : float > 0
        Width in batches.
    protocol : {"text", "authors"}
    tau : float in (0, 1]

    Examples
    --------
    >>> schedule_overlap([100, 100, 100], 10, 0.5), schedule_overlap([100, 100, 100], 10, 100.0)
    (0.0, 1.0)
    """
    return overlap_index(_weights(_sizes(task_sizes), batch_size, sigma, protocol), tau)


def schedule_entropy(task_sizes, batch_size: int, sigma: float, *, protocol: str = "text") -> float:
    """Mean normalised mixing entropy of the Gaussian schedule (the authors' calibration target).

    Examples
    --------
    >>> round(schedule_entropy([100, 100], 10, 1000.0), 3)
    1.0
    """
    return mixing_entropy(_weights(_sizes(task_sizes), batch_size, sigma, protocol))


def sigma_for_overlap(overlap: float, task_sizes, batch_size: int = 10, *, protocol: str = "text",
                      tau: float = DEFAULT_TAU, xtol: float = 1e-7) -> SigmaFit:
    """The mixing width σ whose schedule has overlap index ``overlap`` (Eq. 6, threshold ``tau``).

    Solves ``O(σ) = overlap`` with :func:`scipy.optimize.brentq` on ``log σ``, bracketed
    by ``σ = 1e-3`` and ``σ = T`` (doubled until the overlap reaches the target). ``O``
    is a step function of σ (values ``j / T``), so the root is the jump nearest the
    target; of the two sides of that jump the one closer to the target is returned
    (ties: the smaller σ). Deterministic: the schedule has no randomness; the seed of
    a run only enters through the task sizes (:func:`stream_task_sizes`).

    Parameters
    ----------
    overlap : float in (0, 1]
        Target overlap index.
    task_sizes : array_like of int, shape (K,)
        Stream nodes of each latent task (K >= 2), e.g. from :func:`stream_task_sizes`.
    batch_size : int
    protocol : {"text", "authors"}
        Schedule at batch midpoints (text) or at integer batch index (authors' code).
    tau : float in (0, 1]
        Dominance threshold (default 0.9, the authors' value).
    xtol : float
        Tolerance on ``log σ``.

    Returns
    -------
    SigmaFit
        ``sigma`` and the ``overlap`` it achieves (plus the mixing entropy at that σ).

    Raises
    ------
    ValueError
        For a target outside (0, 1], or below the overlap of the sharpest schedule
        (a batch whose evaluation point is equidistant from two task centres stays a
        50/50 mix even as σ -> 0), naming the smallest reachable overlap.

    Examples
    --------
    >>> fit = sigma_for_overlap(0.4, [620, 640, 600], batch_size=10)
    >>> round(fit.sigma, 2), round(fit.overlap, 3), fit.total_batches
    (22.85, 0.398, 186)
    >>> fit = sigma_for_overlap(0.4, [620, 640, 600], batch_size=10, protocol="authors")
    >>> round(fit.sigma, 2), round(fit.overlap, 3)
    (22.9, 0.398)
    """
    return _solve("overlap", overlap, task_sizes, batch_size, protocol, tau, xtol)


def sigma_for_entropy(entropy: float, task_sizes, batch_size: int = 10, *, protocol: str = "text",
                      tau: float = DEFAULT_TAU, xtol: float = 1e-7) -> SigmaFit:
    """The σ whose schedule has mean normalised mixing entropy ``entropy`` (the authors' target).

    Same solver as :func:`sigma_for_overlap` (the entropy is continuous in σ, so it
    is met to ``xtol``); ``tau`` only sets the overlap reported beside it.

    Examples
    --------
    >>> fit = sigma_for_entropy(0.3, [620, 640, 600], batch_size=10)
    >>> round(fit.achieved, 4), round(fit.overlap, 2)
    (0.3, 0.46)
    """
    return _solve("entropy", entropy, task_sizes, batch_size, protocol, tau, xtol)


def _solve(measure, target, task_sizes, batch_size, protocol, tau, xtol) -> SigmaFit:
    from scipy.optimize import brentq

    from .protocol import PROTOCOLS
    from .schedule import task_centers

    check_choice("measure", measure, MEASURES)
    target = check_real(measure, target, low=0, high=1, low_open=True)
    sizes = _sizes(task_sizes)
    batch_size = check_int("batch_size", batch_size, low=1)
    protocol = check_choice("protocol", protocol, PROTOCOLS)
    tau = check_real("tau", tau, low=0, high=1, low_open=True)
    xtol = check_real("xtol", xtol, low=0, low_open=True)
    T = task_centers(sizes, batch_size)[2]

    def value(sigma):
        w = _weights(sizes, batch_size, sigma, protocol)
        return overlap_index(w, tau) if measure == "overlap" else mixing_entropy(w)

    lo, hi = math.log(1e-3), math.log(max(float(T), 1.0))
    v_lo = value(math.exp(lo))
    if v_lo > target:
        raise ValueError(f"{measure}={target} is below the smallest {measure} of this schedule, {v_lo:.4f} "
                         f"(at sigma -> 0; protocol={protocol!r}, T={T} batches); choose a target >= {v_lo:.4f}")
    for _ in range(40):
        if value(math.exp(hi)) >= target:
            break
        hi += math.log(2.0)
    else:  # pragma: no cover - the overlap of a wide enough schedule is 1
        raise ValueError(f"{measure}={target} is not reached for sigma up to {math.exp(hi):.3g} batches")
    if v_lo == target:
        root = lo
    else:
        root = brentq(lambda u: value(math.exp(u)) - target, lo, hi, xtol=xtol)
    cands = sorted({root - 2 * xtol, root, root + 2 * xtol} if measure == "overlap" else {root})
    best = min(cands, key=lambda u: (abs(value(math.exp(u)) - target), u))
    sigma = math.exp(best)
    w = _weights(sizes, batch_size, sigma, protocol)
    ov, ent = overlap_index(w, tau), mixing_entropy(w)
    return SigmaFit(measure, float(target), float(sigma), ov if measure == "overlap" else ent, ov, ent, protocol,
                    float(tau), batch_size, int(T), tuple(int(s) for s in sizes))


def stream_task_sizes(graph, classes_per_task: int = 2, test_fraction: float = 0.2, *, protocol: str = "text",
                      seed: int = 0) -> list:
    """Stream nodes per latent task of ``graph`` as a run with these settings streams them.

    The sizes of :func:`clkit.drift.experiment.protocol_data`'s split (the
    authors' protocol also holds out validation nodes, so its tasks are shorter).

    Examples
    --------
    >>> from clkit.data.graphs import csbm
    >>> stream_task_sizes(csbm(200, 4, seed=0)), stream_task_sizes(csbm(200, 4, seed=0), protocol="authors")
    ([80, 80], [60, 60])
    """
    from .experiment import protocol_data

    _, split = protocol_data(graph, classes_per_task, test_fraction, seed=seed, protocol=protocol)
    return [int(len(t)) for t in split.task_nodes]


def sigma_for_overlap_on_graph(overlap: float, graph, *, classes_per_task: int = 2, test_fraction: float = 0.2,
                               batch_size: int = 10, protocol: str = "text", tau: float = DEFAULT_TAU,
                               seed: int = 0) -> SigmaFit:
    """:func:`sigma_for_overlap` for the stream a run on ``graph`` would build (same split and seed).

    Examples
    --------
    >>> from clkit.data.graphs import csbm
    >>> fit = sigma_for_overlap_on_graph(0.4, csbm(2708, 6, seed=0))
    >>> round(fit.overlap, 2), fit.task_sizes
    (0.4, (724, 722, 722))
    """
    sizes = stream_task_sizes(graph, classes_per_task, test_fraction, protocol=protocol, seed=seed)
    return sigma_for_overlap(overlap, sizes, batch_size, protocol=protocol, tau=tau)


def sigmas_for_overlaps(overlaps, graph, *, protocols=("text", "authors"), classes_per_task: int = 2,
                        test_fraction: float = 0.2, batch_size: int = 10, tau: float = DEFAULT_TAU,
                        seed: int = 0) -> dict:
    """σ for each target overlap under each protocol, for a σ sweep given as overlaps.

    The two protocols stream different numbers of nodes (the authors' 60/20/20
    split), so one overlap needs a different σ under each: solve per protocol and
    build each protocol's stream configurations from its own list.

    Parameters
    ----------
    overlaps : sequence of float in (0, 1]
    graph : clkit.data.graphs.GraphData
    protocols : sequence of {"text", "authors"}
    classes_per_task, test_fraction, batch_size, tau, seed : as for the run.

    Returns
    -------
    dict
        ``protocol -> list of SigmaFit`` (one per overlap, in order).

    Examples
    --------
    >>> from clkit.data.graphs import csbm
    >>> fits = sigmas_for_overlaps([0.1, 0.8], csbm(2708, 6, seed=0))
    >>> {p: [round(f.sigma, 1) for f in fs] for p, fs in fits.items()}
    {'text': [13.5, 41.3], 'authors': [10.0, 31.2]}
    """
    if isinstance(overlaps, (str, bytes)) or not hasattr(overlaps, "__iter__"):
        raise TypeError(f"overlaps must be a list of floats in (0, 1], got {overlaps!r}")
    out = {}
    for pr in protocols:
        sizes = stream_task_sizes(graph, classes_per_task, test_fraction, protocol=pr, seed=seed)
        out[pr] = [sigma_for_overlap(o, sizes, batch_size, protocol=pr, tau=tau) for o in overlaps]
    return out


def sigma_overlap_table(datasets: dict, *, targets=(0.1, 0.4, 0.8), sigmas=(3.0, 10.0, 20.0, 40.0),
                        batch_size: int = 10, protocols=("text", "authors"), tau: float = DEFAULT_TAU) -> list:
    """How σ maps to overlap per dataset: overlap at fixed σ, and σ solved for target overlaps.

    Parameters
    ----------
    datasets : dict
        ``name -> {protocol: task_sizes}`` (e.g. from :func:`stream_task_sizes`).
    targets, sigmas : sequences of float
    batch_size : int
    protocols : sequence of {"text", "authors"}
    tau : float

    Returns
    -------
    list of dict
        One row per (dataset, protocol): ``dataset``, ``protocol``, ``T`` (batches),
        ``O(σ=s)`` for every ``s`` in ``sigmas`` and ``σ(O=o)`` / ``O achieved`` for
        every target ``o``.

    Examples
    --------
    >>> rows = sigma_overlap_table({"toy": {"text": [620, 640, 600]}}, targets=[0.4], sigmas=[10.0],
    ...                            protocols=["text"])
    >>> rows[0]["T"], round(rows[0]["O(σ=10)"], 3), round(rows[0]["σ(O=0.4)"], 2)
    (186, 0.081, 22.85)
    """
    rows = []
    for name, by_protocol in datasets.items():
        for pr in protocols:
            sizes = by_protocol[pr]
            row = {"dataset": name, "protocol": pr}
            for s in sigmas:
                row[f"O(σ={s:g})"] = schedule_overlap(sizes, batch_size, s, protocol=pr, tau=tau)
            for o in targets:
                fit = sigma_for_overlap(o, sizes, batch_size, protocol=pr, tau=tau)
                row["T"] = fit.total_batches
                row[f"σ(O={o:g})"] = fit.sigma
                row[f"O achieved ({o:g})"] = fit.overlap
            rows.append({"dataset": row.pop("dataset"), "protocol": row.pop("protocol"), "T": row.pop("T"), **row})
    return rows


def sigma_overlap_markdown(rows) -> str:
    """The rows of :func:`sigma_overlap_table` as a Markdown table (overlaps to 3, σ to 2 decimals).

    Examples
    --------
    >>> print(sigma_overlap_markdown([{"dataset": "toy", "protocol": "text", "T": 6, "O(σ=1)": 0.5,
    ...                                "σ(O=0.4)": 1.234}]))
    | dataset | protocol | T | O(σ=1) | σ(O=0.4) |
    |---|---|---|---|---|
    | toy | text | 6 | 0.500 | 1.23 |
    """
    if not rows:
        return ""
    cols = list(rows[0])

    def fmt(k, v):
        if isinstance(v, float):
            return f"{v:.2f}" if k.startswith("σ") else f"{v:.3f}"
        return str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(k, r[k]) for k in cols) + " |" for r in rows]
    return "\n".join(lines)
