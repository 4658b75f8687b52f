"""Fig. 4 / Table A4 of the EDGE paper: EDGE with CLIP text encoders of different sizes.

Appendix E.1.2 (Table A4) builds EDGE's class similarity with six CLIP text encoders --
ResNet-50, ResNet-50x64, ResNet-101, ViT-B/16, ViT-B/32, ViT-L/14, all OpenAI's weights --
and reports, for HidePrompt on CIFAR-100, the JSD_d and W_d between each EDGE triplet's
Gaussian estimate and the true distribution, beside RS's. :func:`encoder_comparison` does
the same for any learners: per encoder whose weights load, the similarity, EDGE's hard /
easy sequences, the triplet (hard, random, easy; the random one is RS's first seed's, as in
:func:`clkit.edge.report.protocol_sequences`) and its distances per learner; an encoder
whose weights are missing is *skipped* with the reason :func:`clkit.edge.class_similarity`
gives -- never replaced by another encoder.

Units are those of :mod:`clkit.edge.tables` (:data:`clkit.edge.tables.UNITS`): JSD in bits,
W (first-order Wasserstein) in the accuracies' units (%-points when the truth is in %).

S-ties. A search ranking sequences by S(O) cannot tell tie-mates apart, so with
``ties=True`` (default, as :func:`clkit.edge.report.evaluate_protocols`) EDGE's numbers are
averaged over every (hard, easy) pair of the S-ties of its hard and easy sequences among
``all_sequences`` (:func:`clkit.edge.structure.tie_pairs`, thinned to at most 64 pairs); the
numbers of the triplet the search returned are kept as ``picked``. With an uninformative
similarity (the same for every class pair) every sequence has the same S(O): hard and easy
tie (the canonical tie rule even returns the same sequence for both), the encoder's record
says ``s_tie = True`` with a note, and its row is the average over the thinned tie pairs --
in effect a random three-sequence estimate, not an informed one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._validate import check_int, check_type
from .bounds import train_distinct
from .combinatorics import RS_SEEDS, canonical, check_num_tasks
from .similarity import DEFAULT_TEMPLATES, EncoderUnavailableError

__all__ = ["PAPER_ENCODERS", "PAPER_TABLE_A4", "EncoderRun", "EncoderComparison", "encoder_comparison",
           "open_clip_pairs", "skipped_text"]

#: Table A4's encoders as open_clip ``(model, pretrained)`` names (``open_clip.list_pretrained()``),
#: in the table's order: ResNet50, ResNet50x64, ResNet101, ViT-B/16, ViT-B/32, ViT-L/14.
PAPER_ENCODERS = (("RN50", "openai"), ("RN50x64", "openai"), ("RN101", "openai"), ("ViT-B-16", "openai"),
                  ("ViT-B-32", "openai"), ("ViT-L-14", "openai"))

#: Table A4's numbers (HidePrompt on CIFAR-100, 6 classes / 3 tasks): ``{row: (JSD_d, W_d)}``; the
#: paper quotes the JSD in bits (:data:`clkit.edge.tables.UNITS`).
PAPER_TABLE_A4 = {"RS estimate": (0.2694, 2.8688), "EDGE with RN50": (0.0863, 1.5677),
                  "EDGE with RN50x64": (0.1986, 3.2553), "EDGE with RN101": (0.1386, 1.7020),
                  "EDGE with ViT-B-16": (0.1236, 1.5196), "EDGE with ViT-B-32": (0.1237, 2.3599),
                  "EDGE with ViT-L-14": (0.0846, 1.0642)}

_WEIGHT_EXTS = ("safetensors", "bin", "pt", "pth")


def _floats(estimates: dict) -> dict:
    return {n: {k: float(x) for k, x in e.items()} for n, e in estimates.items()}


@dataclass
class EncoderRun:
    """One encoder's EDGE: similarity, sequences and estimates (see :class:`EncoderComparison`).

    ``estimates[learner]`` is :func:`clkit.edge.experiment.evaluate_protocol`'s dict (``mean``,
    ``std``, ``jsd``, ``wasserstein``, ``min``, ``max`` ...), averaged over the S-tie pairs when
    there are several; ``picked[learner]`` the same for the triplet the search returned.
    """

    label: str
    model: str
    pretrained: str
    encoder: str
    similarity: np.ndarray
    hard: np.ndarray
    easy: np.ndarray
    sequences: np.ndarray
    values: dict
    estimates: dict
    picked: dict
    hard_S: float
    easy_S: float
    s_tie: bool
    hard_ties: int | None
    easy_ties: int | None
    tie_pairs: int
    notes: list = field(default_factory=list)

    def record(self) -> dict:
        return {"model": self.model, "pretrained": self.pretrained, "encoder": self.encoder,
                "hard": self.hard.tolist(), "easy": self.easy.tolist(), "sequences": self.sequences.tolist(),
                "values": {n: [float(x) for x in v] for n, v in self.values.items()},
                "estimates": _floats(self.estimates), "picked": _floats(self.picked), "hard_S": self.hard_S,
                "easy_S": self.easy_S, "s_tie": bool(self.s_tie), "hard_ties": self.hard_ties,
                "easy_ties": self.easy_ties, "tie_pairs": int(self.tie_pairs), "notes": list(self.notes)}


@dataclass
class EncoderComparison:
    """:func:`encoder_comparison`'s result.

    Attributes
    ----------
    truth : dict
        ``{learner: true accuracies (L,)}``.
    rs : dict
        ``{"sequences", "values" {learner: (P,)}, "estimates" {learner: dict}}``.
    runs : dict
        ``{label: EncoderRun}`` for every encoder whose weights loaded, in the given order.
    skipped : dict
        ``{label: reason}`` for every encoder whose weights did not load.
    """

    truth: dict
    rs: dict
    runs: dict
    skipped: dict
    num_bins: int
    notes: list = field(default_factory=list)

    @property
    def learners(self) -> list:
        return list(self.truth)

    @property
    def sequences(self) -> dict:
        """``{"RS": (P, K, M), label: EDGE triplet (3, K, M), ...}``."""
        return {"RS": self.rs["sequences"], **{lab: r.sequences for lab, r in self.runs.items()}}

    @property
    def estimates(self) -> dict:
        """``{(learner, "RS" | label): estimate dict}`` (EDGE's tie-averaged)."""
        out = {(n, "RS"): self.rs["estimates"][n] for n in self.learners}
        out.update({(n, lab): r.estimates[n] for lab, r in self.runs.items() for n in self.learners})
        return out

    def table(self, digits: int = 4):
        """Table A4's layout: rows ``"RS estimate"``, ``"EDGE with <label>"``; columns (learner, JSD_d / W_d).

        JSD_d in bits, W_d in the accuracies' units (:data:`clkit.edge.tables.UNITS`, also in
        the frame's ``attrs["units"]``). Skipped encoders have no row (see :attr:`skipped`).
        """
        import pandas as pd

        from .tables import UNITS

        rows = {"RS estimate": self.rs["estimates"]}
        rows.update({f"EDGE with {lab}": r.estimates for lab, r in self.runs.items()})
        cols = pd.MultiIndex.from_tuples([(n, m) for n in self.learners for m in ("JSD_d", "W_d")])
        data = [[est[n][key] for n in self.learners for key in ("jsd", "wasserstein")] for est in rows.values()]
        df = pd.DataFrame(data, index=list(rows), columns=cols).astype(float).round(digits)
        df.attrs["units"] = UNITS
        return df

    def record(self) -> dict:
        """JSON-able: RS's and every encoder's sequences and estimates, the skipped ones with reasons."""
        return {"learners": self.learners, "num_bins": int(self.num_bins),
                "rs": {"sequences": np.asarray(self.rs["sequences"]).tolist(),
                       "values": {n: [float(x) for x in v] for n, v in self.rs["values"].items()},
                       "estimates": _floats(self.rs["estimates"])},
                "encoders": {lab: r.record() for lab, r in self.runs.items()},
                "skipped": dict(self.skipped), "notes": list(self.notes)}


def _label(model: str) -> str:
    return Path(model[len("local-dir:"):]).name if model.startswith("local-dir:") else model


def _specs(encoders, weights_dir):
    """``[(label, model, pretrained)]`` from a list of pairs or a ``{label: pair}`` dict."""
    if isinstance(encoders, dict):
        items = list(encoders.items())
    elif isinstance(encoders, (list, tuple)):
        items = [(None, e) for e in encoders]
    else:
        raise TypeError(f"encoders must be a list of (model, pretrained) pairs or a dict {{label: pair}}, "
                        f"got {type(encoders).__name__}")
    if not items:
        raise ValueError("encoders must name at least one (model, pretrained) pair, got none")
    out = []
    for lab, pair in items:
        if (not isinstance(pair, (list, tuple)) or len(pair) != 2
                or not all(isinstance(x, str) and x for x in pair)):
            raise TypeError(f"encoders must hold (model, pretrained) pairs of strings, got {pair!r}")
        model, pretrained = pair
        if weights_dir is not None and not model.startswith("local-dir:"):
            model, pretrained = _local_weights(Path(weights_dir), model, pretrained)
        out.append((str(lab) if lab is not None else _label(pair[0]), model, pretrained))
    labels = [lab for lab, _, _ in out]
    dup = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dup:
        raise ValueError(f"encoders must have distinct labels, got {dup} more than once (pass a dict {{label: pair}})")
    return out


def _local_weights(root: Path, model: str, pretrained: str):
    """An open_clip folder ``root/<model>`` or a weights file ``root/<model>[-<pretrained>].<ext>``, if any."""
    folder = root / model
    if (folder / "open_clip_config.json").is_file():
        return f"local-dir:{folder}", "local-dir"
    for stem in (f"{model}-{pretrained}", model):
        for ext in _WEIGHT_EXTS:
            if (root / f"{stem}.{ext}").is_file():
                return model, str(root / f"{stem}.{ext}")
    return model, pretrained                        # open_clip's own cache lookup


def _check_truth(truth_values, L):
    if not isinstance(truth_values, dict) or not truth_values:
        raise TypeError(f"truth_values must be a non-empty dict {{learner: accuracies over all_sequences}}, "
                        f"got {type(truth_values).__name__}")
    out = {}
    for n, v in truth_values.items():
        a = np.asarray(v, dtype=float).ravel()
        if a.shape != (L,) or not np.isfinite(a).all():
            raise ValueError(f"truth_values[{n!r}] must hold {L} finite accuracies (one per sequence of "
                             f"all_sequences), got shape {a.shape}")
        out[str(n)] = a
    return out


class _Lookup:
    """Accuracies of sequences: from the truth where they are in ``all_sequences``, else trained once."""

    def __init__(self, all_sequences, truth, train):
        self.all, self.truth, self.train = all_sequences, truth, train
        self.known = {s.tobytes() for s in canonical(all_sequences)}
        self.trained = {}

    def positions(self, seqs):
        """Positions in all_sequences (-1 where absent)."""
        from .experiment import sequence_index

        seqs = canonical(seqs)
        inside = np.array([s.tobytes() in self.known for s in seqs], dtype=bool)
        pos = np.full(len(seqs), -1, dtype=np.int64)
        if inside.any():
            pos[inside] = sequence_index(self.all, seqs[inside])
        return pos

    def values(self, seqs) -> dict:
        seqs = canonical(seqs)
        pos = self.positions(seqs)
        out = {n: np.full(len(seqs), np.nan) for n in self.truth}
        for n in self.truth:
            out[n][pos >= 0] = self.truth[n][pos[pos >= 0]]
        missing = [i for i in np.flatnonzero(pos < 0) if seqs[i].tobytes() not in self.trained]
        if missing:
            if self.train is None:
                raise ValueError(f"sequence {seqs[missing[0]].tolist()} is not among all_sequences; pass "
                                 f"train=callable(sequences) -> {{learner: accuracies}} to train sequences "
                                 f"outside the truth")
            got = train_distinct(self.train, seqs[missing], list(self.truth))
            for j, i in enumerate(missing):
                self.trained[seqs[i].tobytes()] = {n: float(got[n][j]) for n in self.truth}
        for i in np.flatnonzero(pos < 0):
            for n in self.truth:
                out[n][i] = self.trained[seqs[i].tobytes()][n]
        return out


def _edge_run(label, model, pretrained, sim, num_tasks, look, truth, *, seeds, edge_num_random, num_bins,
              granularities, ties):
    from .experiment import evaluate_protocol
    from .report import protocol_sequences
    from .sequences import easy_sequence, hard_sequence, sequence_scores
    from .structure import tie_members, tie_pairs

    S = np.asarray(sim.matrix, dtype=float)
    n = len(S)
    hard = hard_sequence(S, num_tasks, granularities=granularities)
    easy = easy_sequence(S, num_tasks, granularities=granularities)
    seqs = protocol_sequences(n, num_tasks, hard, easy, seeds=seeds, edge_num_random=edge_num_random)["EDGE"]
    vals = look.values(seqs)
    picked = {ln: evaluate_protocol(truth[ln], vals[ln], num_bins=num_bins) for ln in truth}
    hs, es = (float(x) for x in sequence_scores(S, np.stack([hard, easy])))
    s_tie = bool(np.isclose(hs, es, rtol=1e-9, atol=1e-12))
    notes, estimates, hard_ties, easy_ties, npairs = [], picked, None, None, 1
    ih, ie = look.positions(np.stack([hard, easy]))
    if ih >= 0 and ie >= 0:
        scores = sequence_scores(S, look.all)
        hard_ties, easy_ties = len(tie_members(scores, int(ih))), len(tie_members(scores, int(ie)))
        if ties:
            pairs = tie_pairs(scores, int(ih), int(ie))
            npairs = len(pairs)
            if npairs > 1:
                rows = np.repeat(look.positions(seqs)[None], npairs, axis=0)
                rows[:, 0], rows[:, -1] = pairs[:, 0], pairs[:, 1]
                estimates = {}
                for ln in truth:
                    each = [evaluate_protocol(truth[ln], truth[ln][r], num_bins=num_bins) for r in rows]
                    estimates[ln] = {k: float(np.mean([e[k] for e in each])) for k in each[0]}
    elif ties:
        notes.append("hard or easy is not among all_sequences: S-ties not averaged (the returned triplet's numbers)")
    if s_tie:
        notes.append(f"hard and easy have the same S(O) = {hs:.6g} (an S-tie"
                     + (", the very same sequence" if np.array_equal(canonical(hard), canonical(easy)) else "")
                     + "): this similarity does not tell sequences apart, so EDGE's triplet is arbitrary"
                     + (f"; its row is averaged over {npairs} tie pairs, in effect a random three-sequence "
                        f"estimate" if npairs > 1 else "") + ", not an informed one")
    return EncoderRun(label, model, pretrained, sim.encoder, S, np.asarray(hard), np.asarray(easy), seqs, vals,
                      estimates, picked, hs, es, s_tie, hard_ties, easy_ties, npairs, notes)


def encoder_comparison(class_names, num_tasks: int, truth_values, all_sequences, encoders=PAPER_ENCODERS, *,
                       seeds=RS_SEEDS, edge_num_random: int = 1, num_bins: int = 10, ties: bool = True,
                       templates=DEFAULT_TEMPLATES, cache: bool = True, weights_dir=None, device=None,
                       granularities=None, train=None) -> EncoderComparison:
    """EDGE with each CLIP text encoder (Table A4 / Fig. 4), judged against the true distribution.

    Parameters
    ----------
    class_names : list of str, length N
        The classes of the experiment, in class-index order.
    num_tasks : int
        ``K``; must divide N.
    truth_values : dict
        ``{learner: accuracies (L,)}``, one per sequence of ``all_sequences`` (the truth).
    all_sequences : array_like, shape (L, K, M)
        The sequences of the truth (e.g. :func:`clkit.edge.enumerate_sequences`); a protocol's
        sequences are looked up there (:func:`clkit.edge.experiment.sequence_index`).
    encoders : list of (model, pretrained) pairs, or dict ``{label: (model, pretrained)}``
        open_clip names (default :data:`PAPER_ENCODERS`); ``("local-dir:<folder>", ...)`` loads
        an open_clip model folder offline. A pair's label is its model (a folder's name).
    seeds : sequence of int
        RS's seeds (default 0, 42, 1993); EDGE's random sequence is the first one's.
    edge_num_random : int
        Random sequences in EDGE's triplet.
    num_bins : int
        JSD bins (:func:`clkit.edge.estimation.distribution_distances`).
    ties : bool
        Average EDGE's numbers over the S-ties of hard and easy (module docstring).
    templates, cache, device
        As :func:`clkit.edge.class_similarity` takes them (``encoder="clip"``).
    weights_dir : path-like, optional
        Where to look first for an encoder's weights: an open_clip folder ``<weights_dir>/<model>/``
        (``open_clip_config.json`` + weights) or a file ``<weights_dir>/<model>-<pretrained>.<ext>`` /
        ``<model>.<ext>`` (ext: safetensors, bin, pt, pth); else open_clip's own cache.
    granularities : list of int, optional
        Clustering granularities of the hard / easy search.
    train : callable, optional
        ``train(sequences) -> {learner: accuracies}`` for protocol sequences not in
        ``all_sequences`` (each trained once); without it such a sequence is a ``ValueError``.

    Returns
    -------
    EncoderComparison
        ``.table()`` (Table A4 layout), ``.runs`` (per encoder: similarity, hard / easy,
        triplet, values, estimates), ``.skipped`` (``{label: reason}``), ``.record()``.

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> seqs = enumerate_sequences(4, 2)
    >>> truth = {"f": 10.0 * seqs[:, 0, 0] + seqs[:, 0, 1]}
    >>> res = encoder_comparison(["a", "b", "c", "d"], 2, truth, seqs, [("no-such-model", "openai")])
    >>> res.runs, list(res.skipped), list(res.table().index)
    ({}, ['no-such-model'], ['RS estimate'])
    """
    from .combinatorics import random_sequences
    from .experiment import evaluate_protocol
    from .similarity import class_similarity
    from .similarity_matrix import check_class_names

    names = check_class_names(class_names)
    num_tasks = check_int("num_tasks", num_tasks, low=2)
    n, k, m = check_num_tasks(len(names), num_tasks)
    all_seqs = np.asarray(all_sequences)
    if all_seqs.ndim != 3 or all_seqs.shape[1:] != (k, m) or not np.issubdtype(all_seqs.dtype, np.integer):
        raise ValueError(f"all_sequences must be an integer array of shape (L, {k}, {m}), got {all_seqs.shape}")
    truth = _check_truth(truth_values, len(all_seqs))
    check_type("seeds", seeds, (list, tuple), "a list of integer seeds")
    edge_num_random = check_int("edge_num_random", edge_num_random, low=1)
    num_bins = check_int("num_bins", num_bins, low=1)
    check_type("ties", ties, bool)
    if train is not None and not callable(train):
        raise TypeError(f"train must be None or a callable train(sequences) -> {{learner: accuracies}}, "
                        f"got {type(train).__name__}")
    specs = _specs(encoders, weights_dir)
    look = _Lookup(all_seqs, truth, train)
    rs_seqs = random_sequences(n, k, seeds=seeds)
    rs_vals = look.values(rs_seqs)
    rs = {"sequences": rs_seqs, "values": rs_vals,
          "estimates": {ln: evaluate_protocol(truth[ln], rs_vals[ln], num_bins=num_bins) for ln in truth}}
    runs, skipped = {}, {}
    for label, model, pretrained in specs:
        try:
            sim = class_similarity(names, "clip", templates=templates, clip_model=model,
                                   clip_pretrained=pretrained, cache=cache, device=device)
        except (EncoderUnavailableError, ImportError, OSError) as exc:
            skipped[label] = str(exc)
            continue
        runs[label] = _edge_run(label, model, pretrained, sim, k, look, truth, seeds=list(seeds),
                                edge_num_random=edge_num_random, num_bins=num_bins, granularities=granularities,
                                ties=ties)
    notes = [f"{lab} skipped: {why}" for lab, why in skipped.items()]
    notes += [f"{lab}: {note}" for lab, r in runs.items() for note in r.notes]
    return EncoderComparison(truth, rs, runs, skipped, num_bins, notes)


def open_clip_pairs(names, pretrained: str = "openai") -> dict:
    """Notebook 02's ``encoder_sizes`` (open_clip model names) as :func:`encoder_comparison`'s encoders.

    ``{label: (model, pretrained)}``: each name with the ``pretrained`` tag (the paper's: OpenAI's
    weights); a ``local-dir:<folder>`` name (a rehearsal's fabricated folder) keeps it and is
    labelled by its folder.

    Examples
    --------
    >>> open_clip_pairs(["RN50", "ViT-L-14"])
    {'RN50': ('RN50', 'openai'), 'ViT-L-14': ('ViT-L-14', 'openai')}
    >>> open_clip_pairs(["local-dir:/tmp/clip/ViT-B-16-tiny-seed1-ab"])
    {'ViT-B-16-tiny-seed1-ab': ('local-dir:/tmp/clip/ViT-B-16-tiny-seed1-ab', 'local-dir')}
    """
    out = {}
    for n in names:
        if n.startswith("local-dir:"):
            out[Path(n[len("local-dir:"):]).name] = (n, "local-dir")
        else:
            out[n] = (n, pretrained)
    return out


def skipped_text(comparison) -> str:
    """One sentence on the encoders a comparison skipped (and why), or that none was.

    >>> class C: skipped = {"RN50": "no weights in the cache"}
    >>> skipped_text(C())
    'Skipped (weights not on this machine; never replaced by another encoder): RN50 -- no weights in the cache.'
    """
    if not comparison.skipped:
        return "Every encoder loaded."
    parts = "; ".join(f"{k} -- {v}" for k, v in comparison.skipped.items())
    return f"Skipped (weights not on this machine; never replaced by another encoder): {parts}."
