"""EDGE's loop closed: class orders out (``clkit edge orders``), per-order accuracies back in.

A user trains each class order of an orders manifest in their own framework (PyCIL, PILOT,
Avalanche, mammoth, ...) and hands the accuracies back; :func:`analyse_orders` computes
notebook 02's analysis from them with the notebook's own functions
(:mod:`clkit.edge.report`): RS against EDGE and, where the user trained every order
(``truth="exact"``) or a uniform sample of them (``truth="sample"``), against the true
distribution -- section 6's verdicts (:mod:`clkit.stats`), the draws, the structure of S(O),
the figures and the generated text. Without a truth (``truth="none"``, e.g. CIFAR-100 in 10
tasks, whose orders cannot be enumerated) it is Fig. 5's comparison: the lowest and highest
accuracy each protocol sees (:func:`clkit.edge.bounds.bounds_from_values`).

The manifest (:func:`order_manifest`, in ``orders.json`` under ``"manifest"``) names every
order by an id and its kinds:

==================  ==========================================================================
kind                the order is
==================  ==========================================================================
``rs``              one of RS's draws (``rs_seed<S>``: PyCIL's shuffle with seed S)
``edge-hard``       EDGE's hard order (``edge_hard``)
``edge-easy``       EDGE's easy order (``edge_easy``)
``edge-random``     EDGE's random member (RS's first seeds' orders, "the same seeds")
``truth``           in the ground truth: every order (exact) or the uniform sample
``lookup``          outside the sample, but looked up by the analysis (S-tie-mates of EDGE's
                    orders, the verdicts' random-similarity control)
``random``          an extra random order of ``--random`` (reported, not analysed)
==================  ==========================================================================

Results (:func:`read_order_results`) are accuracies per ``(method, order, seed)``: a tidy CSV
``order_id, seed, accuracy[, method]`` (the final average accuracy of the run), a long CSV of
accuracy matrices in :mod:`clkit.compare`'s format (``method, seed, order, i, j, accuracy``) or
anything :func:`clkit.compare.readers.read_runs` reads (a ``runs.csv`` manifest listing
Avalanche, mammoth or PyCIL logs with their ``order`` column). A matrix becomes one number with
:mod:`clkit.metrics`: ``final`` (the last row's mean) or ``incremental`` (Eq. 1 as notebook 02
reads it: the mean over steps of the accuracy on the tasks seen so far). Accuracies are in
percent from there on, as in notebook 02.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from .._io import check_lines, read_text
from .._validate import check_choice, check_int, check_type

__all__ = ["ORDER_KINDS", "TRUTH_CHOICES", "METRICS", "order_manifest", "load_manifest", "read_order_results",
           "analyse_orders", "truth_analysis", "write_analysis"]

#: kinds an order of the manifest can have (see the module docstring)
ORDER_KINDS = ("rs", "edge-hard", "edge-easy", "edge-random", "truth", "lookup", "random")
#: ground truths the user can train: none, every order, or a uniform sample
TRUTH_CHOICES = ("none", "exact", "sample")
#: how an accuracy matrix becomes one number per run
METRICS = ("final", "incremental")
#: the most orders a truth may hold (every one is trained by the user)
MAX_TRUTH_ORDERS = 200_000
_FORMAT = "clkit-edge-orders/1"


# -- the manifest ------------------------------------------------------------------------------

def _key(seq) -> bytes:
    from .combinatorics import canonical

    return canonical(seq).tobytes()


def _fake_train(num_classes: int):
    """Distinct made-up accuracies (a fixed function of the order): what a dry run of the analysis trains."""
    w = np.random.default_rng(0).normal(size=num_classes)

    def train(seqs):
        s = np.asarray(seqs)
        steps = 1.0 + np.arange(s.shape[1])[None, :, None]
        return {"dry-run": 50.0 + (w[s] * steps).sum(axis=(1, 2))}
    return train


def order_manifest(class_names, num_tasks: int, sim, *, hard=None, easy=None, rs_seeds=(0, 42, 1993),
                   edge_num_random: int = 1, truth: str = "none", truth_samples: int = 256, seed: int = 0,
                   num_draws: int = 30, num_bins: int = 10, extra: dict | None = None, encoder: str = "") -> dict:
    """Every order the user trains, with an id and its kinds, and what the analysis needs to read them back.

    Parameters
    ----------
    class_names : list of str, length N
    num_tasks : int
        ``K`` (divides N).
    sim : array_like (N, N) or ClassSimilarity
        The class similarity EDGE's orders come from (stored: the analysis recomputes S(O) from it).
    hard, easy : array_like (K, M), optional
        EDGE's orders (default: :func:`~clkit.edge.sequences.hard_sequence` /
        :func:`~clkit.edge.sequences.easy_sequence` of ``sim``).
    rs_seeds : sequence of int
        RS's draws (notebook 02's ``seeds``).
    edge_num_random : int
        EDGE's random members (the first ``rs_seeds``' orders, then further seeds).
    truth : {"none", "exact", "sample"}
        The ground truth the user trains: none, every order, or a uniform sample of
        ``truth_samples`` orders (drawn with ``seed``) plus every order the analysis looks up.
    truth_samples, seed, num_draws, num_bins : int
        Notebook 02's parameters of the same names; the analysis uses the ones stored here.
    extra : dict, optional
        ``{id: order (K, M)}`` reported beside the protocols (kind ``random``).
    encoder : str
        The encoder the similarity came from (recorded).

    Returns
    -------
    dict
        ``format``, ``class_names``, ``num_tasks``, ``similarity``, the parameters,
        ``protocols`` (``{"RS": [ids], "EDGE": [ids]}``) and ``orders``: one mapping per distinct
        order with ``order_id``, ``kinds``, ``tasks``, ``class_order`` (class indices in training order:
        Avalanche's ``fixed_class_order``, PyCIL's ``class_order``), ``position_of_class`` (the new label
        of each class: mammoth's ``args.class_order``) and ``position`` (its index in
        :func:`~clkit.edge.combinatorics.enumerate_sequences`, or None without a truth).

    Examples
    --------
    >>> sim = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    >>> m = order_manifest(["a", "b", "c", "d"], 2, sim, truth="exact")
    >>> m["protocols"]
    {'RS': ['rs_seed0', 'rs_seed42', 'edge_easy'], 'EDGE': ['edge_hard', 'rs_seed0', 'edge_easy']}
    >>> [(o["order_id"], o["kinds"]) for o in m["orders"]][:2]     # seed 1993 draws the easy order
    [('edge_hard', ['edge-hard', 'truth']), ('edge_easy', ['edge-easy', 'rs', 'truth'])]
    >>> len(m["orders"]), m["orders"][-1]["order_id"]      # all 6 orders of 4 classes in 2 tasks
    (6, 'omega_3')
    """
    from .combinatorics import check_num_tasks, enumerate_sequences, num_sequences
    from .report import protocol_sequences
    from .sequences import check_similarity, easy_sequence, hard_sequence
    from .truth import GroundTruth

    names = [str(n) for n in class_names]
    n, k, _ = check_num_tasks(len(names), check_int("num_tasks", num_tasks, low=2))
    S = check_similarity(getattr(sim, "matrix", sim), "sim")
    if S.shape != (n, n):
        raise ValueError(f"sim must be ({n}, {n}) for the {n} class_names, got {S.shape}")
    check_choice("truth", truth, TRUTH_CHOICES)
    check_type("rs_seeds", rs_seeds, (list, tuple), "a list of integer seeds")
    rs_seeds = [check_int("rs_seeds", s, low=0) for s in rs_seeds]
    edge_num_random = check_int("edge_num_random", edge_num_random, low=1)
    num_draws, num_bins = check_int("num_draws", num_draws, low=2), check_int("num_bins", num_bins, low=2)
    seed = check_int("seed", seed, low=0)
    hard = hard_sequence(S, k) if hard is None else np.asarray(hard)
    easy = easy_sequence(S, k) if easy is None else np.asarray(easy)
    protos = protocol_sequences(n, k, hard, easy, seeds=rs_seeds, edge_num_random=edge_num_random)
    medium = (rs_seeds + [s for s in range(10**6) if s not in rs_seeds])[:edge_num_random]
    named = [("edge_hard", "edge-hard", hard), ("edge_easy", "edge-easy", easy)]
    named += [(f"rs_seed{s}", "rs", q) for s, q in zip(rs_seeds, protos["RS"])]
    named += [(f"rs_seed{s}" if s in rs_seeds else f"edge_random_seed{s}", "edge-random", q)
              for s, q in zip(medium, protos["EDGE"][1:-1])]
    named += [(str(i), "random", np.asarray(q)) for i, q in (extra or {}).items()]
    orders, by_key = [], {}

    def add(order_id, kind, seq, position=None):
        key = _key(seq)
        if key not in by_key:
            by_key[key] = len(orders)
            seq = np.asarray(seq, dtype=np.int64)
            orders.append({"order_id": order_id, "kinds": [], "tasks": seq.tolist(),
                           "class_order": seq.reshape(-1).tolist(),
                           "position_of_class": np.argsort(seq.reshape(-1)).tolist(), "position": position})
        o = orders[by_key[key]]
        if kind not in o["kinds"]:
            o["kinds"].append(kind)
        if position is not None:
            o["position"] = position
        return o["order_id"]

    ids = {}
    for order_id, kind, seq in named:
        ids.setdefault(kind, []).append(add(order_id, kind, seq))
    out = {"format": _FORMAT, "class_names": names, "num_classes": n, "num_tasks": k, "encoder": encoder,
           "similarity": S.tolist(), "rs_seeds": rs_seeds, "edge_num_random": edge_num_random, "truth": truth,
           "truth_samples": None, "seed": seed, "num_draws": num_draws, "num_bins": num_bins,
           "protocols": {"RS": ids["rs"], "EDGE": [ids["edge-hard"][0], *ids["edge-random"], ids["edge-easy"][0]]}}
    if truth != "none":
        L = num_sequences(n, k)
        if L > MAX_TRUTH_ORDERS:
            raise ValueError(f"truth={truth!r}: {n} classes in {k} tasks have {L:,} orders, more than "
                             f"{MAX_TRUTH_ORDERS:,} can be enumerated; use truth='none' (RS against EDGE's bounds)")
        all_seqs = enumerate_sequences(n, k)
        width = len(str(L - 1))
        if truth == "exact":
            population, looked_up = np.arange(L), np.array([], dtype=np.int64)
        else:
            truth_samples = check_int("truth_samples", truth_samples, low=10, high=L)
            gt = GroundTruth(_fake_train(n), all_seqs, mode="sample", samples=truth_samples, seed=seed)
            truth_analysis(gt, all_seqs, S, protos, num_draws=num_draws, num_bins=num_bins, seed=seed,
                           figures=False)          # a dry run: which orders does the analysis look up?
            population = gt.population
            looked_up = np.setdiff1d(np.flatnonzero(gt.evaluated), population)
            out["truth_samples"] = int(truth_samples)
        for o in orders:
            o["position"] = int(np.flatnonzero((np.sort(all_seqs, -1) == np.sort(o["tasks"], -1)).all((1, 2)))[0])
        for kind, positions in (("truth", population), ("lookup", looked_up)):
            for p in positions.tolist():
                add(f"omega_{p:0{width}d}", kind, all_seqs[p], position=int(p))
    out["orders"] = orders
    return out


def load_manifest(path) -> dict:
    """The manifest of ``clkit edge orders``' ``orders.json`` (a file, or the folder holding it).

    Examples
    --------
    >>> import tempfile, os
    >>> load_manifest(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    FileNotFoundError: orders manifest: '.../orders.json' does not exist; write one with clkit edge orders ... --out DIR
    """
    p = Path(path)
    p = p / "orders.json" if p.is_dir() else p
    if not p.exists():
        raise FileNotFoundError(f"orders manifest: {str(p)!r} does not exist; write one with clkit edge orders ... "
                                "--out DIR")
    try:
        data = json.loads(read_text(p, "orders manifest"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"orders manifest {str(p)!r} is not JSON ({exc})") from None
    m = data.get("manifest") if isinstance(data, dict) else None
    if not isinstance(m, dict) or m.get("format") != _FORMAT:
        raise ValueError(f"orders manifest {str(p)!r} has no field 'manifest' of format {_FORMAT!r}; it was "
                         "written by an older clkit edge orders: run it again")
    m = dict(m, source=str(p))
    for o in m["orders"]:
        bad = [k for k in o["kinds"] if k not in ORDER_KINDS]
        if bad:
            raise ValueError(f"orders manifest {str(p)!r}: order {o['order_id']!r} has field kinds {bad}; "
                             f"allowed: {list(ORDER_KINDS)}")
    return m


# -- reading accuracies back ---------------------------------------------------------------------

def _metric(R, metric: str) -> float:
    """One number (fraction) of a run's matrix: ``final`` or ``incremental`` (Eq. 1, equal task test sets)."""
    from ..metrics import average_accuracy

    if metric == "final":
        return average_accuracy(R, mode="final")
    R = np.asarray(R, dtype=float)
    return float(np.mean([np.nanmean(R[i, :i + 1]) for i in range(len(R))]))


def _tidy_rows(f: Path, *, method: str, percent: bool) -> list:
    with open(check_lines(f, "results CSV"), newline="") as fh:
        reader = csv.DictReader(fh)
        rows, cols = list(reader), list(reader.fieldnames or [])
    where = f"results CSV {str(f)!r}"
    oid = "order_id" if "order_id" in cols else "order" if "order" in cols else None
    for need, have in (("order_id", oid), ("seed", "seed" in cols), ("accuracy", "accuracy" in cols)):
        if not have:
            raise ValueError(f"{where} has no column {need!r} (columns: {cols}); the tidy format is order_id, seed, "
                             "accuracy[, method]; a long matrix CSV has method, seed, order, i, j, accuracy")
    top = 100.0 if percent else 1.0
    out = []
    for n, row in enumerate(rows, start=2):
        m = (row.get("method") or "").strip() or method
        order, seed, cell = (row.get(oid, "") or "").strip(), (row.get("seed") or "").strip(), row.get("accuracy")
        run = f"{m} order {order or '?'} seed {seed or '?'}"
        for field, value in ((oid, order), ("seed", seed)):
            if not value:
                raise ValueError(f"{where} line {n} (run {run}): field {field} is empty")
        try:
            x = float(cell)
        except (TypeError, ValueError):
            raise ValueError(f"{where} line {n} (run {run}): field accuracy = {cell!r} is not a number") from None
        if not np.isfinite(x) or x < 0 or x > top:
            hint = " It looks like percent: pass percent=True (--percent)." if not percent and 1 < x <= 100 else ""
            raise ValueError(f"{where} line {n} (run {run}): field accuracy = {cell} is outside [0, {top:g}]; "
                             f"accuracies are {'percentages' if percent else 'fractions'}.{hint}")
        out.append({"method": m, "order_id": order, "seed": seed, "accuracy": x if percent else 100.0 * x,
                    "source": f"{f} line {n}", "used": "accuracy" + (" (percent)" if percent else " x 100")})
    if not out:
        raise ValueError(f"{where} has no rows")
    return out


def read_order_results(path, manifest: dict, *, percent: bool = False, metric: str = "incremental",
                       method: str = "learner"):
    """Per-order accuracies (percent) from ``path``, checked against ``manifest``; and every run read.

    Parameters
    ----------
    path : path-like
        A tidy CSV ``order_id, seed, accuracy[, method]`` (one number per run); a long CSV of
        accuracy matrices (``method, seed, order, i, j, accuracy``); or a folder / ``runs.csv`` /
        ``runs.yaml`` that :func:`clkit.compare.readers.read_runs` reads (Avalanche, mammoth, PyCIL
        logs; every run needs its ``order``).
    manifest : dict
        :func:`load_manifest` / :func:`order_manifest`.
    percent : bool
        The CSV's accuracies are percentages in [0, 100] (default: fractions in [0, 1]); mammoth's
        and PyCIL's logs are always percentages.
    metric : {"final", "incremental"}
        How a matrix becomes one number (module docstring); a tidy CSV's accuracy is used as given.
    method : str
        The method of rows without a ``method`` column.

    Returns
    -------
    table : DataFrame
        ``method, order_id, seed, accuracy`` (percent), one row per run.
    listing : DataFrame
        Every run read: the table's columns plus ``source`` and ``used``.

    Raises
    ------
    ValueError
        An order the manifest does not list, a run given twice, an order missing a seed the
        method's other orders have, an order of the analysis with no run, a value off the scale
        -- each naming the file, the run and the field.

    Examples
    --------
    >>> import tempfile, os
    >>> sim = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    >>> m = order_manifest(["a", "b", "c", "d"], 2, sim)
    >>> f = os.path.join(tempfile.mkdtemp(), "acc.csv")
    >>> _ = open(f, "w").write("order_id,seed,accuracy\\n" + "".join(
    ...     f"{o['order_id']},0,0.{50 + i}\\n" for i, o in enumerate(m["orders"])))
    >>> table, listing = read_order_results(f, m)
    >>> table.accuracy.round(6).tolist()
    [50.0, 51.0, 52.0, 53.0]
    >>> _ = open(f, "a").write("rs_seed7,0,0.5\\n")
    >>> read_order_results(f, m)
    Traceback (most recent call last):
    ...
    ValueError: ... line 6 (run learner order rs_seed7 seed 0): field order_id = 'rs_seed7' is not an order of the manifest ...
    """
    import pandas as pd

    from ..compare.readers import read_runs
    from ..compare.runs import seed_key

    check_choice("metric", metric, METRICS)
    check_type("percent", percent, bool)
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"results: {str(p)!r} does not exist; give a CSV (order_id, seed, accuracy) or a "
                                "folder / runs.csv that clkit compare reads")
    header = []
    if p.is_file() and p.suffix == ".csv" and p.name != "runs.csv":
        with open(check_lines(p, "results"), newline="") as fh:
            header = next(csv.reader(fh), [])
    if header and not {"i", "j"} <= set(header):
        rows = _tidy_rows(p, method=method, percent=percent)
    else:
        runs = read_runs(p, percent=percent)
        rows = []
        for r in runs:
            if r.order is None:
                raise ValueError(f"{r.source} (run {r.label}): field order is empty; every run must name the "
                                 "order_id of the orders manifest it trained (a runs.csv manifest's order column)")
            rows.append({"method": r.method, "order_id": r.order, "seed": r.seed,
                         "accuracy": 100.0 * _metric(r.R, metric), "source": r.source,
                         "used": f"{r.used}; {metric} average accuracy of R x 100"})
    known = {o["order_id"]: o for o in manifest["orders"]}
    seen = {}
    for row in rows:
        run = f"{row['method']} order {row['order_id']} seed {row['seed']}"
        if row["order_id"] not in known:
            raise ValueError(f"{row['source']} (run {run}): field order_id = {row['order_id']!r} is not an order of "
                             f"the manifest {manifest.get('source', '')!r} (ids like "
                             f"{', '.join(list(known)[:4])}, ...)")
        key = (row["method"], row["order_id"], row["seed"])
        if key in seen:
            raise ValueError(f"{row['source']} (run {run}): field seed: the run is given twice (first at "
                             f"{seen[key]})")
        seen[key] = row["source"]
    if percent and all(row["accuracy"] <= 1.0 for row in rows):
        raise ValueError(f"results {str(p)!r}: field accuracy: every value is at most 1 percent with percent=True; "
                         "these look like fractions: drop --percent")
    med = float(np.median([row["accuracy"] for row in rows]))
    odd = next((row for row in rows if row["accuracy"] <= 1.0), None) if med > 10 else None
    if odd is not None:
        raise ValueError(f"{odd['source']} (run {odd['method']} order {odd['order_id']} seed {odd['seed']}): field "
                         f"accuracy = {odd['accuracy']:g} percent among percentages of median {med:.3g}: a fraction "
                         "among percentages? Give every run on one scale")
    listing = pd.DataFrame(rows, columns=["method", "order_id", "seed", "accuracy", "source", "used"])
    needed = [o["order_id"] for o in manifest["orders"] if set(o["kinds"]) - {"random"}]
    for m, g in listing.groupby("method", sort=False):
        seeds = sorted(set(g["seed"]), key=seed_key)
        by_order = g.groupby("order_id")["seed"].apply(set).to_dict()
        missing = [o for o in needed if o not in by_order]
        if missing:
            raise ValueError(f"results {str(p)!r}: method {m!r} has no run of order {missing[0]!r} (field order_id; "
                             f"{len(missing)} of the manifest's {len(needed)} analysed orders missing: "
                             f"{', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''})")
        for o, have in by_order.items():
            lack = [s for s in seeds if s not in have]
            if lack:
                raise ValueError(f"results {str(p)!r}: method {m!r} order {o!r} misses field seed "
                                 f"{', '.join(lack)} (its other orders have seeds {', '.join(seeds)}); every order "
                                 "needs every seed")
    return listing[["method", "order_id", "seed", "accuracy"]].copy(), listing


# -- the analysis ---------------------------------------------------------------------------------

def truth_analysis(truth, all_sequences, sim, protocols: dict, *, num_draws: int = 30, num_bins: int = 10,
                   seed: int = 0, figures: bool = True) -> dict:
    """Notebook 02's analysis against a ground truth, with the notebook's calls and arguments.

    ``protocols`` is ``{"RS": (R, K, M), "EDGE": (hard, random(s), easy)}``; EDGE's rows are
    averaged over the S-ties of its hard and easy orders as in the notebook. Returns the
    notebook's objects under its names: ``ev`` (:func:`~clkit.edge.report.evaluate_protocols`),
    ``V`` (:func:`~clkit.edge.report.edge_verdicts`), ``D``
    (:func:`~clkit.edge.report.draws_report`), ``struct``
    (:func:`~clkit.edge.report.structure_report`), ``corr``, ``normal``, ``rank_rows``,
    ``rank_err``, ``truth_values``, ``S_all``, ``text`` (the generated paragraphs), ``log`` (what
    results.json records, under the notebook's keys) and, with ``figures``, ``figures``
    (``{name: matplotlib figure}``).
    """
    from . import plots, report
    from .sequences import sequence_scores

    S = np.asarray(sim, dtype=float)
    hard, easy = np.asarray(protocols["EDGE"][0]), np.asarray(protocols["EDGE"][-1])
    ties = report.protocol_ties(all_sequences, protocols, {"EDGE": S})
    ev = report.evaluate_protocols(truth, all_sequences, protocols, ties=ties, num_bins=num_bins, seed=seed)
    S_all = sequence_scores(S, all_sequences)
    V = report.edge_verdicts(truth, all_sequences, hard, easy, num_draws=num_draws, num_bins=num_bins, seed=seed,
                             scores=S_all)
    D = report.draws_report(truth, all_sequences, hard, easy, scores=S_all, num_bins=num_bins, seed=seed)
    struct = report.structure_report(truth, S_all, all_sequences, hard, easy)
    truth_values, pop = truth.population_values(), truth.population
    corr = report.correlations(S_all[pop], truth_values)
    normal, _ = report.normality_table(truth_values)
    rank_rows, rank_err = report.rankings(truth_values, ev["values"], ev["protocols"], ev["variants"])
    N, K = all_sequences.shape[1] * all_sequences.shape[2], all_sequences.shape[1]
    claim = report.claim_text(V["verdicts"], V["checks"], N=N, K=K)
    desc = truth.describe()
    from .tables import draw_table

    key = draw_table(V["verdicts"])
    text = "\n\n".join([
        f"**Ground truth.** {desc[0].upper() + desc[1:]}.",
        f"**The paper's claim.** {claim}",
        "**Key numbers** (EDGE − RS averaged over the paired draws, with intervals; the protocols' table is one "
        "draw):\n\n" + _markdown_table(key),
        f"**Section 6's verdicts.** {V['summary']}",
        f"**Order spread.** {report.spread_text(truth_values)}",
        f"**Over every draw.** {D['text']}",
        f"**What S(O) can explain.** {struct['text']}",
    ])
    log = dict(**ev["log"], **ev["log_mean"], verdicts=[v.to_dict() for v in V["verdicts"]],
               controls_hold=V["controls_hold"], pipeline_checks=V["checks"], checks_hold=V["checks_hold"],
               summary=V["summary"], **D["log"], draws_text=D["text"], **struct["log"], correlation=corr,
               normality=normal, ranking_error=rank_err, paper_claim=claim, truth_description=desc,
               true_accuracy={n: v.round(4) for n, v in truth_values.items()}, **truth.log(),
               rs_sequences=protocols["RS"], edge_sequences=protocols["EDGE"])
    log["key_numbers"] = key.to_dict(orient="index")
    out = dict(ev=ev, V=V, D=D, key=key, struct=struct, corr=corr, normal=normal, rank_rows=rank_rows, rank_err=rank_err,
               truth_values=truth_values, S_all=S_all, text=text, log=log)
    if figures:
        out["figures"] = {
            "distributions_rs_vs_edge": plots.distributions(truth_values, ev["table"], ev["values"],
                                                            num_bins=num_bins,
                                                            protocols=(("RS", "tab:blue"), ("EDGE", "tab:red"))),
            "similarity_vs_accuracy": plots.similarity_vs_accuracy(S_all[pop], truth_values, corr),
        }
    return out


def _markdown_table(frame) -> str:
    """A DataFrame as a Markdown table (index first), without optional dependencies."""
    head = [frame.index.name or ""] + [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join([str(i)] + [str(v) for v in row]) + " |" for i, row in zip(frame.index, frame.values)]
    return "\n".join(lines)


def _bounds_text(b) -> str:
    parts = []
    for n in b.learners:
        r, e, c = b.bounds[n]["RS"], b.bounds[n]["EDGE"], b.contains[n]
        parts.append(f"{n}: RS {r['min']:.2f} to {r['max']:.2f}, EDGE {e['min']:.2f} to {e['max']:.2f} ("
                     + ("EDGE's range contains RS's" if c["edge_contains_rs"] else "EDGE's range does not contain RS's")
                     + ")")
    held = sum(b.contains[n]["edge_contains_rs"] for n in b.learners)
    return ("**What each protocol sees** (Fig. 5: the lowest and highest accuracy over its orders, percent). "
            + "; ".join(parts) + f". EDGE's range contains RS's for {held} of {len(b.learners)} method(s)"
            + (" -- the paper's claim on the classic splits." if held == len(b.learners) else ".")
            + (" " + " ".join(b.notes) if b.notes else ""))


def analyse_orders(table, manifest: dict, *, figures: bool = True) -> dict:
    """Notebook 02's analysis of per-order accuracies read back (:func:`read_order_results`' table).

    Parameters
    ----------
    table : DataFrame
        ``method, order_id, seed, accuracy`` (percent); a method's accuracy of an order is the mean
        over its seeds.
    manifest : dict
        The orders manifest the runs trained (:func:`load_manifest`): its similarity, protocols,
        truth and parameters (``seed``, ``num_draws``, ``num_bins``) are the analysis'.
    figures : bool
        Draw the figures.

    Returns
    -------
    dict
        ``bounds`` (:class:`~clkit.edge.bounds.ClassicBounds`: RS's and EDGE's lowest and highest
        accuracy), ``truth`` (:func:`truth_analysis`' result, or None with ``truth="none"``),
        ``text`` (Markdown), ``log`` (results.json's results), ``tables`` (``{name: DataFrame}``)
        and ``figures``.

    Examples
    --------
    >>> import pandas as pd
    >>> sim = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    >>> m = order_manifest(["a", "b", "c", "d"], 2, sim)
    >>> t = pd.DataFrame({"method": "f", "order_id": [o["order_id"] for o in m["orders"]], "seed": "0",
    ...                   "accuracy": [40.0, 60.0, 50.0, 55.0]})
    >>> out = analyse_orders(t, m, figures=False)
    >>> out["bounds"].bounds["f"]
    {'RS': {'min': 50.0, 'max': 60.0}, 'EDGE': {'min': 40.0, 'max': 60.0}}
    """
    import pandas as pd

    from . import plots
    from .bounds import bounds_from_values
    from .combinatorics import enumerate_sequences
    from .truth import GroundTruth

    need = {"method", "order_id", "seed", "accuracy"}
    if not isinstance(table, pd.DataFrame) or not need <= set(table.columns):
        raise TypeError(f"table must be a DataFrame with columns {sorted(need)} (read_order_results' table), got "
                        f"{type(table).__name__}" + (f" with columns {list(table.columns)}"
                                                     if isinstance(table, pd.DataFrame) else ""))
    acc = table.groupby(["method", "order_id"], sort=False)["accuracy"].mean()
    methods = list(dict.fromkeys(table["method"]))
    orders = {o["order_id"]: o for o in manifest["orders"]}
    S = np.asarray(manifest["similarity"], dtype=float)
    names, K = manifest["class_names"], int(manifest["num_tasks"])

    def values_of(ids, method):
        try:
            return np.array([acc[(method, i)] for i in ids], dtype=float)
        except KeyError as exc:
            raise ValueError(f"table: method {method!r} has no accuracy of order {exc.args[0][1]!r} "
                             "(field order_id)") from None

    protos = {p: np.array([orders[i]["tasks"] for i in ids]) for p, ids in manifest["protocols"].items()}
    flat = {m: values_of(manifest["protocols"]["RS"] + manifest["protocols"]["EDGE"], m) for m in methods}
    b = bounds_from_values(names, K, S, protos, flat)
    out = {"bounds": b, "truth": None, "figures": {}, "tables": {"bounds": b.table()}}
    log = {"bounds": b.record(), "methods": methods, "truth_mode": manifest["truth"]}
    text = [_bounds_text(b)]
    if figures:
        out["figures"]["bounds_rs_vs_edge"] = plots.bounds_bars(b)
    if manifest["truth"] != "none":
        all_seqs = enumerate_sequences(len(names), K)
        by_pos = {o["position"]: o["order_id"] for o in manifest["orders"] if o["position"] is not None}

        def train(seqs):
            from .experiment import sequence_index

            pos = sequence_index(all_seqs, seqs).tolist()
            lost = [p for p in pos if p not in by_pos]
            if lost:
                raise ValueError(f"the analysis needs order {all_seqs[lost[0]].tolist()} (position {lost[0]}), which "
                                 f"the manifest does not list ({len(lost)} such); write the manifest again with "
                                 "clkit edge orders and the same --truth, --seed and --num-draws")
            return {m: values_of([by_pos[p] for p in pos], m) for m in methods}

        mode = "exact" if manifest["truth"] == "exact" else "sample"
        gt = GroundTruth(train, all_seqs, mode=mode, samples=manifest.get("truth_samples") or 256,
                         seed=int(manifest["seed"]))
        listed = sorted(o["position"] for o in manifest["orders"] if "truth" in o["kinds"])
        if listed != gt.population.tolist():
            raise ValueError(f"manifest {manifest.get('source', '')!r}: field kinds: its {len(listed)} truth orders are "
                             f"not the uniform sample of seed {manifest['seed']}; write it again with clkit edge orders")
        T = truth_analysis(gt, all_seqs, S, protos, num_draws=int(manifest["num_draws"]),
                           num_bins=int(manifest["num_bins"]), seed=int(manifest["seed"]), figures=figures)
        out["truth"] = T
        out["figures"].update(T.get("figures", {}))
        out["tables"].update(protocols=T["ev"]["frame"], verdicts=T["V"]["table"], draws=T["D"]["frame"].round(6),
                             structure=T["struct"]["table"])
        log.update(T["log"])
        text = [T["text"], text[0]]
    out["text"] = "\n\n".join(text)
    out["log"] = dict(log, text=out["text"])
    return out


def write_analysis(result: dict, out, *, params: dict | None = None, listing=None) -> list:
    """Write an :func:`analyse_orders` result as a notebook run does: ``results.json`` (a
    :class:`clkit.results.RunRecord` of notebook ``02_edge``), ``report.md``, one CSV per table,
    ``runs_read.csv`` and ``figures/*.png``, each atomically. Returns the paths written."""
    from .._io import atomic_write_text
    from ..plot import save_figure
    from ..results import RunRecord

    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    record = RunRecord("02_edge", params=dict(params or {}, source="clkit edge analyse"))
    record.log(**result["log"])
    paths = []
    for name, fig in result["figures"].items():
        paths.append(save_figure(fig, name, folder=d / "figures"))
        record.figures.append(str(paths[-1]))
    for name, frame in result["tables"].items():
        paths.append(atomic_write_text(d / f"{name}.csv", frame.to_csv()))
    if listing is not None:
        paths.append(atomic_write_text(d / "runs_read.csv", listing.to_csv(index=False)))
    paths.append(atomic_write_text(d / "report.md", result["text"] + "\n"))
    paths.append(record.save(d / "results.json"))
    return [Path(p) for p in paths]
