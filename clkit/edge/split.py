"""Splitting notebook 02's paper set into cases, and reading the finished cases back.

The long parts of notebook 02 are independent of each other:

- the **ground truth of one learner** (every order of the enumerable setting, or the uniform sample):
  each learner trains on its own, under its own seed, whatever else the run trains (the batched
  learners key every draw by the sequence's prefix; a strategy builds every node from ``seed``);
- **Fig. 5 on one dataset for one learner** (:func:`clkit.edge.bounds_run.classic_bounds_run`: the
  RS and EDGE orders of a classic split, trained by that learner alone).

Everything else -- the RS and EDGE estimates, Tables 1-2, the verdicts, the draws, Fig. 4 (the CLIP
encoders' EDGE triplets, looked up in the truth), section 9 -- reads these trainings and takes
minutes on a CPU. At the paper's size the trainings take days of one GPU
(:func:`clkit.edge.budget_set.set_budget`), so the set is cut into one case per unit
(``notebooks/grids/02_edge/paper_split.yaml``):

- a **case** is the notebook with ``edge_cases: ["truth|LEARNER", "bounds|DATASET|LEARNER", ...]``:
  it trains only those units and records them (:func:`truth_record` under ``truth_case``, Fig. 5's
  records under ``bounds``); the analysis is skipped (the merge computes it once);
- the **merge** (``clkit merge SWEEP_DIR --out DIR``, :mod:`clkit.sweep.merge`) runs the notebook once
  more with ``cases_from: SWEEP_DIR``: every section runs as in one run, and the ground truth
  (:func:`merged_truth`) and Fig. 5 (:func:`merged_bounds`) are read from the cases
  (:func:`read_cases`) instead of trained. JSON holds the accuracies exactly (float64 round-trips), so
  the merged ``results.json`` holds the numbers and verdicts of one run.

A sampled truth (``truth: sample``) trains some orders on demand, when a later section first needs
them (EDGE's S-ties, the draws' controls); a case cannot know them, so a merge of a sampled truth
refuses an order no case trained, naming it (the paper set's truth is exact: every order is in every
case).

The notebook declares this to :mod:`clkit.sweep.merge` by :data:`MERGE`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["MERGE", "CASE_SKIPS", "CaseSelection", "CaseResults", "Split", "prepare", "truth_key", "bounds_key",
           "all_cases", "parse_cases", "truth_record", "read_cases", "merged_truth", "merged_bounds", "split_note"]

#: how notebook 02's cases combine (read by :mod:`clkit.sweep.merge`): the grid parameter that cuts the set
#: into cases, its value in a whole run, and the parameter that makes a run read the finished cases
MERGE = {"case_parameter": "edge_cases", "whole_value": [], "merge_parameter": "cases_from"}

#: parameters that may differ between the cases and the merged run (what a case is, where it ran)
CASE_SKIPS = ("edge_cases", "cases_from", "device", "precision", "deterministic")


def truth_key(learner: str) -> str:
    """``"truth|ewc"``: the ground truth of one learner, as ``edge_cases`` names it.

    Examples
    --------
    >>> truth_key("ewc")
    'truth|ewc'
    """
    return f"truth|{learner}"


def bounds_key(dataset: str, learner: str) -> str:
    """``"bounds|cub200|ewc"``: Fig. 5 on one classic split for one learner.

    Examples
    --------
    >>> bounds_key("cub200", "l2p")
    'bounds|cub200|l2p'
    """
    return f"bounds|{dataset}|{learner}"


def all_cases(learners, bounds_datasets=(), bounds_learners=()) -> list[str]:
    """Every unit of a whole run: the truth of each learner, then Fig. 5 per dataset and learner.

    Examples
    --------
    >>> all_cases(["ewc", "l2p"], ["cifar100"], ["l2p"])
    ['truth|ewc', 'truth|l2p', 'bounds|cifar100|l2p']
    """
    return [truth_key(n) for n in learners] + [bounds_key(d, n) for d in bounds_datasets for n in bounds_learners]


@dataclass
class CaseSelection:
    """The units one run trains (a case) or all of them (a whole run or a merge).

    Attributes
    ----------
    whole : bool
        True for a whole run or a merge: every section runs.
    truth : list of str
        Learners whose ground truth this run trains, in the run's order.
    bounds : dict
        ``{dataset: [learner, ...]}`` of Fig. 5, in the run's order (datasets without a learner left out).
    """

    whole: bool
    truth: list
    bounds: dict = field(default_factory=dict)

    def pick(self, names) -> list:
        """The names of ``names`` (e.g. the run's own or user learners) whose truth this run trains.

        Examples
        --------
        >>> CaseSelection(False, ["ewc"]).pick(["ncm", "ewc", "l2p"])
        ['ewc']
        """
        return [n for n in names if n in self.truth]

    def keys(self) -> list[str]:
        """The units as ``edge_cases`` names them."""
        return [truth_key(n) for n in self.truth] + [bounds_key(d, n) for d, ns in self.bounds.items() for n in ns]


def parse_cases(edge_cases, learners, bounds_datasets=(), bounds_learners=()) -> CaseSelection:
    """The units ``edge_cases`` selects (``[]``: every unit, a whole run), checked against this run's set.

    Parameters
    ----------
    edge_cases : list of str
        ``"truth|LEARNER"`` and ``"bounds|DATASET|LEARNER"`` entries (:func:`all_cases`).
    learners : list of str
        The run's learners (their ground truths).
    bounds_datasets, bounds_learners : list of str
        Fig. 5's datasets and learners.

    Raises
    ------
    TypeError
        ``edge_cases`` not a list of strings.
    ValueError
        Naming ``edge_cases``, the entry and the units allowed.

    Examples
    --------
    >>> s = parse_cases(["bounds|cifar100|l2p", "truth|l2p"], ["ewc", "l2p"], ["cifar100"], ["ewc", "l2p"])
    >>> s.whole, s.truth, s.bounds
    (False, ['l2p'], {'cifar100': ['l2p']})
    >>> parse_cases([], ["ewc"]).whole
    True
    >>> parse_cases(["truth|der"], ["ewc"])
    Traceback (most recent call last):
    ...
    ValueError: edge_cases: 'truth|der' is not a unit of this set; allowed: truth|ewc
    """
    if not isinstance(edge_cases, (list, tuple)) or not all(isinstance(e, str) for e in edge_cases):
        raise TypeError(f"edge_cases must be a list of 'truth|LEARNER' / 'bounds|DATASET|LEARNER' strings, "
                        f"got {edge_cases!r}")
    every = all_cases(learners, bounds_datasets, bounds_learners)
    if not edge_cases:
        return CaseSelection(True, list(learners), {d: list(bounds_learners) for d in bounds_datasets
                                                     if bounds_learners})
    for entry in edge_cases:
        if entry not in every:
            shown = ", ".join(every[:12]) + (" ..." if len(every) > 12 else "")
            raise ValueError(f"edge_cases: {entry!r} is not a unit of this set; allowed: {shown}")
    chosen = set(edge_cases)
    bounds = {d: [n for n in bounds_learners if bounds_key(d, n) in chosen] for d in bounds_datasets}
    return CaseSelection(False, [n for n in learners if truth_key(n) in chosen], {d: b for d, b in bounds.items() if b})


def truth_record(truth, learners=None) -> dict:
    """What a case records of its ground truth (``results.json``'s ``truth_case``): every trained order's
    accuracies at full precision.

    Parameters
    ----------
    truth : clkit.edge.truth.GroundTruth
    learners : list of str, optional
        The learners to record (default: all of ``truth``'s).

    Returns
    -------
    dict
        ``num_sequences`` (``|Omega|``), ``mode``, ``samples``, ``positions`` (the trained orders'
        positions in ``Omega``), ``values`` and ``final`` (``{learner: accuracies at those positions}``).

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> from clkit.edge.truth import GroundTruth
    >>> gt = GroundTruth(lambda q: {"a": np.arange(len(q)) / 3}, enumerate_sequences(4, 2))
    >>> r = truth_record(gt); r["positions"], r["values"]["a"][1]
    ([0, 1, 2, 3, 4, 5], 0.3333333333333333)
    """
    names = list(truth.values) if learners is None else list(learners)
    pos = np.flatnonzero(truth.evaluated)
    return {"num_sequences": int(len(truth.sequences)), "mode": truth.mode, "samples": int(truth.samples),
            "positions": pos.tolist(),
            "values": {n: [float(x) for x in truth.values[n][pos]] for n in names},
            "final": {n: [float(x) for x in truth.final[n][pos]] for n in names if n in truth.final}}


@dataclass
class CaseResults:
    """What the finished cases of a split hold: :func:`read_cases`' result.

    Attributes
    ----------
    root : pathlib.Path
    truth : dict
        ``{learner: {"positions", "values", "final", "num_sequences", "case"}}``.
    bounds : dict
        ``{dataset: {learner: (ClassicBounds record, case folder)}}``.
    """

    root: Path
    truth: dict
    bounds: dict


def _trained(name: str) -> str:
    """The name a learner's accuracies carry on the image protocol (``finetune`` trains the strategy ``naive``)."""
    return "naive" if name == "finetune" else name


def _case_results(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).rglob("results.json") if ".work" not in p.parts)


def _differs(want: dict, got: dict) -> list:
    return sorted(k for k in set(want) | set(got) if json.dumps(want.get(k), sort_keys=True, default=str)
                  != json.dumps(got.get(k), sort_keys=True, default=str))


def read_cases(root, params: dict, selection: CaseSelection | None = None) -> CaseResults:
    """The units of the finished cases under ``root`` (a sweep folder) that ran with ``params``.

    Every ``results.json`` of notebook 02 under ``root`` whose parameters equal ``params`` (but for
    :data:`CASE_SKIPS`) contributes its ``truth_case`` learners and its ``bounds`` learners; each unit
    must come from exactly one case. With ``selection`` every unit it names must be found.

    Raises
    ------
    ValueError
        ``cases_from`` naming the folder and the unit that is missing, twice or from cases with other
        parameters.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"cases_from: {str(root)!r} is not a folder of finished cases (a clkit sweep's --out)")
    want = {k: v for k, v in params.items() if k not in CASE_SKIPS}
    truth, bounds, differing = {}, {}, []
    for path in _case_results(root):
        res = json.loads(path.read_text())
        if res.get("notebook") not in (None, "02_edge"):
            continue
        got = {k: v for k, v in res.get("params", {}).items() if k not in CASE_SKIPS}
        diff = _differs(want, got)
        if diff:
            differing.append(f"{path.parent.name} ({', '.join(diff[:4])})")
            continue
        r = res.get("results", {})
        tc = r.get("truth_case") or {}
        for name in tc.get("values", {}):
            if name in truth:
                raise ValueError(f"cases_from: the truth of {name} is in two cases under {root}: "
                                 f"{truth[name]['case']} and {path.parent}")
            truth[name] = {"positions": tc["positions"], "values": tc["values"][name],
                           "final": tc.get("final", {}).get(name), "num_sequences": tc["num_sequences"],
                           "case": path.parent}
        for d, rec in (r.get("bounds") or {}).items():
            for name in rec.get("values", {}):
                if name in bounds.get(d, {}):
                    raise ValueError(f"cases_from: Fig. 5 of {name} on {d} is in two cases under {root}: "
                                     f"{bounds[d][name][1]} and {path.parent}")
                bounds.setdefault(d, {})[name] = (rec, path.parent)
    found = CaseResults(root, truth, bounds)
    if selection is not None:
        missing = [truth_key(n) for n in selection.truth if n not in truth]
        missing += [bounds_key(d, n) for d, ns in selection.bounds.items() for n in ns
                    if _trained(n) not in bounds.get(d, {})]
        if missing:
            extra = f"; cases with other parameters: {', '.join(differing[:3])}" if differing else ""
            raise ValueError(f"cases_from: {len(missing)} unit(s) missing under {root}: {', '.join(missing[:6])}"
                             f"{' ...' if len(missing) > 6 else ''} (run the split grid's cases first: clkit sweep "
                             f"02 --grid notebooks/grids/02_edge/paper_split.yaml){extra}")
    return found


def merged_truth(cases: CaseResults, all_sequences, learners, *, mode: str = "exact", samples: int = 256,
                 seed: int = 0):
    """The ground truth of one run, read from the cases: a :class:`~clkit.edge.truth.GroundTruth` whose
    ``train`` looks the orders up in the cases' records (nothing is trained).

    Parameters
    ----------
    cases : CaseResults
    all_sequences : ndarray, shape (L, K, M)
        ``Omega``, as the cases enumerated it.
    learners : list of str
        In the order a whole run's :func:`clkit.edge.report.ground_truth` returns them (its own learners,
        then the strategies).
    mode, samples, seed
        As :func:`clkit.edge.report.ground_truth` (the population is drawn from ``seed`` as there).

    Raises
    ------
    ValueError
        ``cases_from``: a learner without a case, a case of another ``Omega``, or (a sampled truth) an
        order no case trained.

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> from clkit.edge.truth import GroundTruth
    >>> s = enumerate_sequences(4, 2)
    >>> rec = truth_record(GroundTruth(lambda q: {"a": q[:, 0, 0] * 1.5}, s))
    >>> cases = CaseResults(Path("."), {"a": {**rec, "values": rec["values"]["a"], "final": None, "case": "c"}}, {})
    >>> merged_truth(cases, s, ["a"]).values["a"].tolist()
    [0.0, 0.0, 0.0, 1.5, 1.5, 3.0]
    """
    from .report_truth import _Accuracies
    from .truth import GroundTruth

    seqs = np.asarray(all_sequences)
    L = len(seqs)
    tables = {}
    for name in learners:
        if name not in cases.truth:
            raise ValueError(f"cases_from: no case under {cases.root} holds the ground truth of {name} "
                             f"({truth_key(name)})")
        rec = cases.truth[name]
        if rec["num_sequences"] != L:
            raise ValueError(f"cases_from: the case {rec['case']} trained {rec['num_sequences']:,} orders of Omega, "
                             f"this run enumerates {L:,}")
        pos = np.asarray(rec["positions"], dtype=np.int64)
        avg, fin = np.full(L, np.nan), np.full(L, np.nan)
        avg[pos] = np.asarray(rec["values"], dtype=float)
        if rec.get("final") is not None:
            fin[pos] = np.asarray(rec["final"], dtype=float)
        tables[name] = (avg, fin if rec.get("final") is not None else None)

    def train(q):
        from .experiment import sequence_index

        idx = sequence_index(seqs, np.asarray(q))
        out = _Accuracies()
        out.final = {}
        for name, (avg, fin) in tables.items():
            v = avg[idx]
            if not np.isfinite(v).all():
                gone = np.asarray(q)[~np.isfinite(v)][0].tolist()
                raise ValueError(f"cases_from: the order {gone} of {name} was trained by no case under {cases.root} "
                                 "(a sampled truth trains orders on demand, which a case cannot know: merge an "
                                 "exact truth, or run the set whole)")
            out[name] = v
            if fin is not None:
                out.final[name] = fin[idx]
        return out

    return GroundTruth(train, seqs, mode=mode, samples=samples, seed=seed)


def merged_bounds(cases: CaseResults, dataset: str, learners, class_names=None):
    """Fig. 5 on ``dataset`` read from the cases: the :class:`~clkit.edge.bounds.ClassicBounds` one run's
    :func:`~clkit.edge.bounds_run.classic_bounds_run` returns, its learners in the order of ``learners``.

    Every case ran the same RS and EDGE orders (they depend on the class names and seeds, not on the
    learner); a case whose orders differ is refused.

    Raises
    ------
    ValueError
        ``cases_from``: a learner without a case on ``dataset``, or cases with different orders.
    """
    from .bounds import bounds_from_values

    held = cases.bounds.get(dataset, {})
    learners = [_trained(n) for n in learners]
    missing = [n for n in learners if n not in held]
    if missing:
        raise ValueError(f"cases_from: Fig. 5 on {dataset} of {missing} is in no case under {cases.root} "
                         f"({', '.join(bounds_key(dataset, n) for n in missing)})")
    first, where = held[learners[0]]
    seqs = {p: np.asarray(s, dtype=np.int64) for p, s in first["sequences"].items()}
    for n in learners[1:]:
        rec, case = held[n]
        if any(not np.array_equal(seqs[p], np.asarray(s)) for p, s in rec["sequences"].items()):
            raise ValueError(f"cases_from: the cases {where} and {case} trained different orders on {dataset}")
    flat = {n: np.concatenate([np.asarray(held[n][0]["values"][n][p], dtype=float) for p in ("RS", "EDGE")])
            for n in learners}
    N = int(first["num_classes"])
    if class_names is None:            # the record holds their number; the shipped list names them where it fits
        from ..data.class_names import load_class_names
        from .bounds import CLASSIC_SPLITS

        try:
            class_names = load_class_names(CLASSIC_SPLITS[dataset]["class_names"])
        except (KeyError, ValueError, OSError):
            class_names = None
    names = list(class_names) if class_names is not None and len(class_names) == N else [f"class {i}" for i in
                                                                                         range(N)]
    out = bounds_from_values(names, int(first["num_tasks"]), np.zeros((N, N)), seqs, flat)
    out.hard_S, out.easy_S, out.notes = float(first["hard_S"]), float(first["easy_S"]), list(first["notes"])
    return out


def split_note(selection: CaseSelection, cases_from: str = "") -> str:
    """One sentence: whether this run is a whole run, a case (and its units) or a merge.

    Examples
    --------
    >>> split_note(CaseSelection(False, ["ewc"], {"cub200": ["l2p"]}))
    'A case of the split (notebooks/grids/02_edge/paper_split.yaml): it trains truth|ewc, bounds|cub200|l2p and records them; the analysis runs in the merge (clkit merge).'
    """
    if cases_from:
        return (f"The merge of a split run: the ground truth and Fig. 5 are read from the finished cases under "
                f"{cases_from}, nothing is trained; every other number is computed here as in one run.")
    if selection.whole:
        return ""
    return (f"A case of the split (notebooks/grids/02_edge/paper_split.yaml): it trains {', '.join(selection.keys())} "
            "and records them; the analysis runs in the merge (clkit merge).")


@dataclass
class Split:
    """What one run of notebook 02 trains and reads: a whole run, a case of the split, or its merge.

    Built by :func:`prepare` in the validation cell; the notebook then calls :meth:`truth` and :meth:`fig5`
    where it trains, :meth:`log` after the truth, and runs its analysis only where :attr:`whole`.

    Attributes
    ----------
    selection : CaseSelection
    cases_from : str
        The sweep folder a merge reads ("" otherwise).
    cases : CaseResults or None
        The finished cases (a merge), read and checked before any work.
    """

    selection: CaseSelection
    cases_from: str = ""
    cases: CaseResults | None = None

    @property
    def whole(self) -> bool:
        """True for a whole run or a merge (every section runs); False for a case."""
        return self.selection.whole

    def trains_truth(self) -> bool:
        """Whether this run has a ground truth at all (a case of Fig. 5 units only has none)."""
        return bool(self.selection.truth)

    def truth(self, train, own_learners, user_learners, all_sequences, *, mode: str = "exact", samples: int = 256,
              seed: int = 0):
        """The run's :class:`~clkit.edge.truth.GroundTruth`: ``train(own, user)`` (e.g. a
        :func:`clkit.edge.report.ground_truth` call) on the learners this run trains, or, in a merge, the
        cases' records (:func:`merged_truth`, in the whole run's order: the batched learners, then the
        strategies)."""
        if self.cases is not None:
            return merged_truth(self.cases, all_sequences, list(own_learners) + list(user_learners), mode=mode,
                                samples=samples, seed=seed)
        return train(self.selection.pick(own_learners), self.selection.pick(user_learners))

    def fig5(self, train_one, bounds_datasets, bounds_learners) -> dict:
        """Fig. 5 ``{dataset: ClassicBounds}``: ``train_one(dataset, learners)`` (e.g.
        :func:`clkit.edge.bounds_run.classic_bounds_run`) on this run's units, or, in a merge, the cases'
        records (:func:`merged_bounds`) in the whole run's learner order."""
        if self.cases is not None:
            from .images import split_learners

            own, strategies = split_learners(list(bounds_learners))
            return {d: merged_bounds(self.cases, d, own + strategies) for d in bounds_datasets}
        return {d: train_one(d, ls) for d, ls in self.selection.bounds.items()}

    def log(self, record, truth=None) -> None:
        """A case records its truth at full precision (``truth_case``) and what it is (``split_case``)."""
        if not self.whole:
            record.log(split_case=self.selection.keys(),
                       **({"truth_case": truth_record(truth)} if truth is not None else {}))

    def note(self) -> str:
        """:func:`split_note`."""
        return split_note(self.selection, self.cases_from)


def prepare(edge_cases, cases_from, *, learners, bounds_datasets=(), bounds_learners=(), params=None) -> Split:
    """Check ``edge_cases`` / ``cases_from`` and, for a merge, read the finished cases now (before any work).

    Parameters
    ----------
    edge_cases : list of str
        ``[]`` (a whole run or a merge) or the units of a case (:func:`parse_cases`).
    cases_from : str
        ``""`` or the sweep folder of a merge.
    learners : list of str
        Every learner of the truth (the batched ones, then the strategies).
    bounds_datasets, bounds_learners : list of str
        Fig. 5's datasets and learners.
    params : dict
        The run's parameters (``record.params``); the cases must have run with the same (but for
        :data:`CASE_SKIPS`).

    Raises
    ------
    ValueError
        ``edge_cases`` and ``cases_from`` both given; a bad unit; a missing or doubled case.
    TypeError
        ``cases_from`` not a string.

    Examples
    --------
    >>> prepare(["truth|ewc"], "", learners=["ewc", "l2p"]).whole
    False
    >>> prepare(["truth|ewc"], "runs/x", learners=["ewc"])
    Traceback (most recent call last):
    ...
    ValueError: edge_cases and cases_from: a case trains units, a merge reads them; give one, got ['truth|ewc'] and 'runs/x'
    """
    if not isinstance(cases_from, str):
        raise TypeError(f"cases_from must be a string (a clkit sweep's --out folder, or ''), got {cases_from!r}")
    sel = parse_cases(edge_cases, learners, bounds_datasets, bounds_learners)
    if edge_cases and cases_from:
        raise ValueError(f"edge_cases and cases_from: a case trains units, a merge reads them; give one, got "
                         f"{list(edge_cases)!r} and {cases_from!r}")
    cases = read_cases(cases_from, params or {}, sel) if cases_from else None
    return Split(sel, cases_from, cases)
