"""Fig. 5 of the EDGE paper: the lowest and highest accuracy each protocol sees on the classic splits.

In the classic class-incremental settings (Sect. 5.2) the sequences cannot be enumerated,
so there is no true distribution to compare with: the paper compares what each protocol
*sees* -- the minimum ``min_A`` and maximum ``max_A`` accuracy over its sequences -- and
reports that EDGE (hard, one random, easy sequence) finds a lower minimum and a higher
maximum than RS (the three seeds 0, 42, 1993) "across nearly all scenarios".
:func:`classic_bounds` computes these bars for one dataset from a caller-supplied
``train`` callable (which trains every learner on every sequence it is given) and says,
per learner, whether EDGE's range contains RS's.

EDGE's random sequence is RS's first seed's (:func:`clkit.edge.report.protocol_sequences`),
so a sequence both protocols evaluate is trained once: ``train`` receives each distinct
sequence once (order inside a task ignored).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validate import check_int, check_type
from .combinatorics import RS_SEEDS, canonical, check_num_tasks

__all__ = ["CLASSIC_SPLITS", "ClassicBounds", "classic_bounds", "bounds_from_values", "train_distinct"]

#: The paper's classic splits (Sect. 5.2, Fig. 5; Appendix E.2, Tables A7-A8): CIFAR-100, CUB-200
#: and ImageNet-R, each "partitioned into 10 sequential tasks" of equal size (Appendix E.2, which
#: also lists the hard / easy sequences: 10 tasks of 10 classes for CIFAR-100, of 20 for CUB-200
#: and ImageNet-R). ``class_names`` names the list of :func:`clkit.data.class_names.load_class_names`.
CLASSIC_SPLITS = {
    "cifar100": {"label": "CIFAR-100", "class_names": "cifar100", "num_classes": 100, "num_tasks": 10,
                 "classes_per_task": 10},
    "cub200": {"label": "CUB-200", "class_names": "cub200", "num_classes": 200, "num_tasks": 10,
               "classes_per_task": 20},
    "imagenet_r": {"label": "ImageNet-R", "class_names": "imagenet_r", "num_classes": 200, "num_tasks": 10,
                   "classes_per_task": 20},
}


def train_distinct(train, sequences, learners=None, *, name: str = "train") -> dict:
    """Call ``train`` once on the distinct sequences of ``sequences``; map the results back.

    Parameters
    ----------
    train : callable
        ``train(sequences (D, K, M)) -> {learner: accuracies (D,)}``.
    sequences : array_like, shape (P, K, M)
    learners : sequence of str, optional
        Learners every result must hold (default: whatever ``train`` returns).
    name : str
        The parameter name used in error messages.

    Returns
    -------
    dict
        ``{learner: accuracies (P,)}`` in the order of ``sequences``.

    Examples
    --------
    >>> calls = []
    >>> def train(s):
    ...     calls.append(len(s))
    ...     return {"f": s[:, 0, 0].astype(float)}
    >>> train_distinct(train, [[[0, 1], [2, 3]], [[1, 0], [3, 2]], [[2, 3], [0, 1]]])["f"].tolist(), calls
    ([0.0, 0.0, 2.0], [2])
    """
    if not callable(train):
        raise TypeError(f"{name} must be a callable train(sequences) -> {{learner: accuracies}}, "
                        f"got {type(train).__name__}")
    seqs = canonical(sequences)
    if seqs.ndim != 3:
        raise ValueError(f"sequences must have shape (P, K, M), got {seqs.shape}")
    keys = [s.tobytes() for s in seqs]
    first = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    distinct = seqs[list(first.values())]
    out = train(distinct)
    if not isinstance(out, dict) or not out:
        raise TypeError(f"{name} must return a non-empty dict {{learner: accuracies}}, got {type(out).__name__}")
    want = list(out) if learners is None else list(learners)
    missing = [n for n in want if n not in out]
    if missing:
        raise ValueError(f"{name} returned no accuracies for the learners {missing}")
    pos = {k: j for j, k in enumerate(first)}
    where = np.array([pos[k] for k in keys], dtype=np.int64)
    res = {}
    for n in want:
        v = np.asarray(out[n], dtype=float).ravel()
        if v.shape != (len(distinct),) or not np.isfinite(v).all():
            raise ValueError(f"{name} must return {len(distinct)} finite accuracies per learner (one per "
                             f"sequence), got {v.shape} for {n!r}")
        res[n] = v[where]
    return res


@dataclass
class ClassicBounds:
    """What each protocol sees on one classic split: :func:`classic_bounds`' result.

    Attributes
    ----------
    class_names : list of str
    num_tasks : int
    sequences : dict
        ``{"RS": (len(seeds), K, M), "EDGE": (2 + edge_num_random, K, M)}`` (EDGE: hard,
        random(s), easy).
    values : dict
        ``{learner: {"RS": accuracies, "EDGE": accuracies}}`` in the order of ``sequences``.
    bounds : dict
        ``{learner: {"RS": {"min", "max"}, "EDGE": {"min", "max"}}}`` (the Fig. 5 bars).
    contains : dict
        ``{learner: {"edge_lower_min", "edge_higher_max", "edge_contains_rs"}}``: EDGE's min
        strictly below RS's, its max strictly above, and its range containing RS's
        (``min_EDGE <= min_RS`` and ``max_EDGE >= max_RS``).
    hard_S, easy_S : float
        S(O) of EDGE's hard and easy sequences.
    num_trained : int
        Distinct sequences trained.
    """

    class_names: list
    num_tasks: int
    sequences: dict
    values: dict
    bounds: dict
    contains: dict
    hard_S: float
    easy_S: float
    num_trained: int
    notes: list = field(default_factory=list)

    @property
    def learners(self) -> list:
        return list(self.values)

    def table(self, digits: int = 2):
        """One row per learner: min and max under RS and EDGE, and the containment flags."""
        import pandas as pd

        rows = {}
        for n in self.learners:
            b, c = self.bounds[n], self.contains[n]
            rows[n] = {"min RS": b["RS"]["min"], "min EDGE": b["EDGE"]["min"], "max RS": b["RS"]["max"],
                       "max EDGE": b["EDGE"]["max"], "EDGE lower min": c["edge_lower_min"],
                       "EDGE higher max": c["edge_higher_max"], "EDGE contains RS": c["edge_contains_rs"]}
        df = pd.DataFrame(rows).T
        num = ["min RS", "min EDGE", "max RS", "max EDGE"]
        df[num] = df[num].astype(float).round(digits)
        for col in df.columns[4:]:
            df[col] = df[col].astype(bool)
        return df

    def record(self) -> dict:
        """JSON-able summary (sequences as lists, accuracies, bounds, flags)."""
        return {"num_classes": len(self.class_names), "num_tasks": self.num_tasks,
                "sequences": {p: np.asarray(s).tolist() for p, s in self.sequences.items()},
                "values": {n: {p: [float(x) for x in v] for p, v in d.items()} for n, d in self.values.items()},
                "bounds": {n: {p: {k: float(x) for k, x in d.items()} for p, d in b.items()}
                           for n, b in self.bounds.items()},
                "contains": {n: {k: bool(x) for k, x in c.items()} for n, c in self.contains.items()},
                "hard_S": float(self.hard_S), "easy_S": float(self.easy_S), "num_trained": int(self.num_trained),
                "notes": list(self.notes)}


def _matrix(sim, n):
    from .sequences import check_similarity

    S = check_similarity(getattr(sim, "matrix", sim), "sim")
    if S.shape != (n, n):
        raise ValueError(f"sim must be ({n}, {n}) for the {n} class_names, got {S.shape}")
    return S


def classic_bounds(class_names, num_tasks: int, sim, train, *, seeds=RS_SEEDS, edge_num_random: int = 1,
                   shuffle: str = "pycil",
                   granularities=None) -> ClassicBounds:
    """Fig. 5 for one dataset: each protocol's lowest and highest accuracy, per learner.

    Parameters
    ----------
    class_names : list of str, length N
        The dataset's classes in label order (e.g. ``load_class_names("cifar100")``).
    num_tasks : int
        ``K`` (the paper: 10, :data:`CLASSIC_SPLITS`); must divide N.
    sim : array_like (N, N) or ClassSimilarity
        Class similarity EDGE's hard / easy sequences come from.
    train : callable
        ``train(sequences (D, K, M)) -> {learner: accuracies (D,)}``; called once, with each
        distinct sequence of both protocols once.
    seeds : sequence of int
        RS's seeds (default 0, 42, 1993).
    shuffle : {"pycil", "edge_release"}
        The seeds' class-order generator (:func:`clkit.edge.combinatorics.random_sequences`).
    edge_num_random : int
        Random sequences in EDGE's triplet (the first ``seeds``' sequences, shared with RS).
    granularities : list of int, optional
        Clustering granularities of the hard / easy search.

    Returns
    -------
    ClassicBounds

    Examples
    --------
    >>> sim = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    >>> train = lambda s: {"f": 10.0 * s[:, 0, 0] + s[:, 0, 1]}   # first task's classes
    >>> res = classic_bounds(["a", "b", "c", "d"], 2, sim, train)
    >>> res.bounds["f"], res.contains["f"]["edge_contains_rs"], res.num_trained
    ({'RS': {'min': 2.0, 'max': 23.0}, 'EDGE': {'min': 1.0, 'max': 23.0}}, True, 4)
    """
    from .report import protocol_sequences
    from .sequences import easy_sequence, hard_sequence
    from .similarity_matrix import check_class_names

    names = check_class_names(class_names)
    num_tasks = check_int("num_tasks", num_tasks, low=2)
    n, k, _ = check_num_tasks(len(names), num_tasks)
    S = _matrix(sim, n)
    if not callable(train):
        raise TypeError(f"train must be a callable train(sequences) -> {{learner: accuracies}}, "
                        f"got {type(train).__name__}")
    check_type("seeds", seeds, (list, tuple), "a list of integer seeds")
    edge_num_random = check_int("edge_num_random", edge_num_random, low=1)
    hard = hard_sequence(S, k, granularities=granularities)
    easy = easy_sequence(S, k, granularities=granularities)
    protos = protocol_sequences(n, k, hard, easy, seeds=seeds, edge_num_random=edge_num_random, shuffle=shuffle,
                                granularities=granularities)
    stacked = np.concatenate([protos[p] for p in ("RS", "EDGE")])
    flat = train_distinct(train, stacked)
    return bounds_from_values(names, k, S, {p: protos[p] for p in ("RS", "EDGE")}, flat)


def bounds_from_values(class_names, num_tasks: int, sim, sequences: dict, flat: dict) -> ClassicBounds:
    """Fig. 5's bars from accuracies already trained: what :func:`classic_bounds` computes after ``train``.

    Parameters
    ----------
    class_names : list of str, length N
    num_tasks : int
    sim : array_like, shape (N, N)
        The similarity EDGE's hard (``sequences["EDGE"][0]``) and easy (``[-1]``) sequences came from.
    sequences : dict
        ``{"RS": (R, K, M), "EDGE": (E, K, M)}`` (EDGE: hard, random(s), easy).
    flat : dict
        ``{learner: accuracies (R + E,)}``: RS's sequences, then EDGE's, in that order.

    Returns
    -------
    ClassicBounds
        As :func:`classic_bounds` returns it.

    Examples
    --------
    >>> seqs = {"RS": np.array([[[0, 2], [1, 3]]]), "EDGE": np.array([[[0, 1], [2, 3]], [[0, 2], [1, 3]],
    ...                                                                [[0, 3], [1, 2]]])}
    >>> b = bounds_from_values(["a", "b", "c", "d"], 2, np.eye(4), seqs, {"f": np.array([50.0, 40.0, 50.0, 60.0])})
    >>> b.bounds["f"], b.num_trained
    ({'RS': {'min': 50.0, 'max': 50.0}, 'EDGE': {'min': 40.0, 'max': 60.0}}, 3)
    """
    from .sequences import sequence_scores

    order = ("RS", "EDGE")
    protos = {p: np.asarray(sequences[p]) for p in order}
    stacked = np.concatenate([protos[p] for p in order])
    S = np.asarray(sim, dtype=float)
    hard, easy = protos["EDGE"][0], protos["EDGE"][-1]
    names, k = list(class_names), int(num_tasks)
    num_trained = len({s.tobytes() for s in canonical(stacked)})
    cut = np.cumsum([len(protos[p]) for p in order])[:-1]
    values, bounds, contains = {}, {}, {}
    for name, v in flat.items():
        parts = dict(zip(order, np.split(v, cut)))
        values[name] = parts
        bounds[name] = {p: {"min": float(parts[p].min()), "max": float(parts[p].max())} for p in order}
        rs, ed = bounds[name]["RS"], bounds[name]["EDGE"]
        contains[name] = {"edge_lower_min": ed["min"] < rs["min"], "edge_higher_max": ed["max"] > rs["max"],
                          "edge_contains_rs": ed["min"] <= rs["min"] and ed["max"] >= rs["max"]}
    hs, es = sequence_scores(S, np.stack([hard, easy]))
    notes = []
    if np.isclose(hs, es, rtol=1e-9, atol=1e-12):
        notes.append("EDGE's hard and easy sequences have the same S(O) (an S-tie): the similarity does not "
                     "tell these sequences apart, so EDGE's extremes are no better informed than random ones.")
    return ClassicBounds(names, k, {p: protos[p] for p in order}, values, bounds, contains, float(hs), float(es),
                         num_trained, notes)
