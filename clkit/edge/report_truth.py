"""Notebook 02_edge's ground truth: sequence counts, sample sizes, extreme sequences, truth tables.

How many sequences a setting has (Lemma 1) and how many a protocol needs (Theorems 1
and 2), the hard / easy sequences of a similarity matrix, EDGE's ground truth (every
learner's accuracy on every sequence: the batched learners and any ``Strategy``) and
the tables and lookups made of it, and the check of the learners' keyword arguments.
Re-exported by :mod:`clkit.edge.report`, the notebook's entry point; nothing here
trains except :func:`ground_truth`.
"""

from __future__ import annotations

import numpy as np

from .combinatorics import num_sequences

__all__ = ["SEQUENCE_COUNT_SETTINGS", "sequence_count_table", "sample_size_text", "extreme_sequences", "truth_table", "ground_truth", "final_accuracy_log", "truth_lookup", "normality_table", "check_edge_learner_kwargs"]


#: (N, K) settings of Table A2 plus the classic 100 / 10 and 200 / 10
SEQUENCE_COUNT_SETTINGS = ((4, 2), (6, 2), (8, 2), (10, 2), (6, 3), (9, 3), (8, 4), (100, 10), (200, 10))


def sequence_count_table(settings=SEQUENCE_COUNT_SETTINGS):
    """|Omega| for each (N, K) of ``settings`` (Lemma 1) as a table, and as exact strings.

    Returns
    -------
    table : DataFrame
        Columns N, K, M, |Omega| (an integer below 10^9, else in scientific notation).
    counts : dict
        ``{"N/K": str(|Omega|)}`` (exact integers as strings, for results.json).

    Examples
    --------
    >>> table, counts = sequence_count_table([(6, 3), (100, 10)])
    >>> counts["6/3"], len(counts["100/10"])
    ('90', 93)
    >>> table["|Omega|"].tolist()
    [90, '2.357e+92']
    """
    import pandas as pd

    rows = []
    for n_, k_ in settings:
        om = num_sequences(n_, k_)
        rows.append({"N": n_, "K": k_, "M": n_ // k_, "|Omega|": om if om < 10**9 else f"{float(om):.3e}"})
    counts = {f"{r['N']}/{r['K']}": str(num_sequences(r["N"], r["K"])) for r in rows}
    return pd.DataFrame(rows), counts


def sample_size_text(num_classes: int = 100, num_tasks: int = 10, epsilon: float = 0.1, delta: float = 0.05,
                     value_range: float = 0.1):
    """Theorem 1 and 2 sample sizes for one setting, and the sentence that reports them.

    Returns
    -------
    numbers : dict
        ``theorem1_L_100_10``, ``theorem1_L_100_10_remark1``, ``theorem2_L_100_10_R01``
        (keys as recorded by the notebook).
    text : str
        Markdown.
    """
    from .estimation import theorem1_sample_size, theorem2_sample_size

    L1 = theorem1_sample_size(num_classes, num_tasks, epsilon, delta)
    L1_approx = theorem1_sample_size(num_classes, num_tasks, epsilon, delta, approx=True)
    L2 = theorem2_sample_size(num_classes, num_tasks, value_range=value_range, epsilon=epsilon, delta=delta)
    text = (f"For N = {num_classes}, K = {num_tasks}, ε = {epsilon:g}, δ = {delta:g}: Theorem 1 needs "
            f"**L ≥ {L1:,}** random sequences (Remark 1's approximation $N\\ln(N/e)$: {L1_approx:,}, "
            f"the paper's 'order of 2·10⁴'); with the extremes known and R = {value_range:g}, "
            f"Theorem 2 needs **L ≥ {L2}** (the paper says 'around 50', which matches a "
            f"base-10 logarithm of |Ω| ≈ 10⁹²; with the natural log as in Eq. 4 it is {L2}).")
    return {"theorem1_L_100_10": L1, "theorem1_L_100_10_remark1": L1_approx, "theorem2_L_100_10_R01": L2}, text


def _method(info) -> str:
    """How the improved sequence was found, in words ("exhaustive search" when every sequence was scored)."""
    return {"exhaustive": "exhaustive search", "local search": "local search"}.get(info.get("method"), "paper algorithm")


def extreme_sequences(sim, num_tasks: int, class_names, *, granularities=None, num_random: int = 10_000,
                      seed: int = 0):
    """Hard and easy sequences of ``sim`` with their S(O) and S-percentile among random sequences.

    Returns
    -------
    out : dict
        ``hard`` / ``easy`` (K, M) arrays, ``hard_info`` / ``easy_info`` (the generators'
        info), ``table`` (DataFrame), ``log`` (the values the notebook records).
    """
    import pandas as pd

    from .sequences import easy_sequence, hard_sequence, score_percentile

    hard, hard_info = hard_sequence(sim, num_tasks, granularities=granularities, return_info=True)
    easy, easy_info = easy_sequence(sim, num_tasks, granularities=granularities, return_info=True)
    rows, log = [], {}
    for name, seq, info in [("hard", hard, hard_info), ("easy", easy, easy_info)]:
        pct = score_percentile(sim, seq, num_random=num_random, seed=seed)
        rows.append({
            "sequence": name,
            "tasks": [[class_names[c] for c in t] for t in seq],
            "S (paper algorithm)": round(info["paper_score"], 4),
            f"S (after {_method(info)})": round(info["score"], 4),
            "percentile among random": round(pct, 2),
        })
        log.update({f"{name}_sequence": seq, f"{name}_score": info["score"],
                    f"{name}_paper_score": info["paper_score"], f"{name}_percentile": pct})
    return {"hard": hard, "easy": easy, "hard_info": hard_info, "easy_info": easy_info,
            "table": pd.DataFrame(rows), "rows": rows, "log": log}


def truth_table(truth: dict):
    """Mean, std, min and max of every learner's true accuracies, in percent (a DataFrame, rounded;
    the headers name the unit).

    Examples
    --------
    >>> import numpy as np
    >>> list(truth_table({"ewc": np.array([50.0, 60.0])}).columns)
    ['mean, %', 'std, %', 'min, %', 'max, %']
    """
    import pandas as pd

    return pd.DataFrame({name: {"mean, %": v.mean(), "std, %": v.std(), "min, %": v.min(), "max, %": v.max()}
                         for name, v in truth.items()}).T.round(2)


def ground_truth(data: dict, all_sequences, own_learners, user_learners=(), config=None, *, seed: int = 0,
                 learner_kwargs: dict | None = None, mode: str = "exact", samples: int = 256, extra=None,
                 progress: bool = True, device=None, precision: str | None = None,
                 memory_budget: int | None = None, inputs: dict | None = None):
    """Train the learners on all sequences (``mode="exact"``) or on a uniform sample of them.

    ``own_learners`` are the batched learners of :mod:`clkit.edge.learners`
    (:func:`~clkit.edge.experiment.run_learners`), ``user_learners`` ordinary strategies
    trained sequence after sequence (:func:`~clkit.edge.learners.train_strategy_sequences`,
    what :func:`clkit.plugins.train_sequences_sequentially` runs); accuracies are Eq. 1's
    average incremental accuracy in percent (the final accuracy, after the last task, is kept beside it:
    ``GroundTruth.final`` / ``population_final()``). ``extra`` sequences (EDGE's, RS's) are trained
    beside the sample; any other sequence is trained when a report first needs it
    (:class:`~clkit.edge.truth.GroundTruth`). Every learner trains on ``device`` (a
    ``RunDevice`` brings its precision) in chunks that fit ``memory_budget`` (default: the
    device's, :func:`clkit.edge.memory.memory_budget`); the accuracies come back to the host.
    ``inputs`` (``{strategy: (x_train, x_test, model_factory)}``, e.g.
    :func:`clkit.edge.images.strategy_inputs`) gives a strategy its own inputs and network (the
    image protocol's images, cached frozen features or ViT inputs); by default a strategy trains
    the one-hidden-layer MLP on ``data["x_train"]``.

    Returns
    -------
    clkit.edge.truth.GroundTruth
    """
    from ..plugins import resolve_strategy
    from .experiment import run_learners
    from .learners import LearnerConfig, train_strategy_sequences
    from .truth import GroundTruth

    config = LearnerConfig() if config is None else config
    kwargs = learner_kwargs or {}
    calls = {"n": 0}

    def train(seqs):
        calls["n"] += 1
        out = run_learners(data, seqs, list(own_learners), config, seed=seed, learner_kwargs=kwargs,
                           progress=progress and calls["n"] == 1, device=device, precision=precision,
                           memory_budget=memory_budget) if own_learners else {}
        res = _Accuracies({name: 100 * r["avg_acc"] for name, r in out.items()})
        res.final = {name: 100 * r["final_acc"] for name, r in out.items()}
        for u in user_learners:  # an ordinary Strategy: sequence after sequence, same protocol
            xtr, xte, factory = (inputs or {}).get(u, (data["x_train"], data["x_test"], None))
            r = train_strategy_sequences(
                xtr, xte, seqs, resolve_strategy(u, parameter="learners"), config, seed=seed,
                model_factory=factory, strategy_kwargs=kwargs.get(u), device=device, precision=precision,
                memory_budget=memory_budget)
            res[u], res.final[u] = 100 * r["avg_acc"], 100 * r["final_acc"]
        return res

    return GroundTruth(train, all_sequences, mode=mode, samples=samples, seed=seed, extra=extra)


def final_accuracy_log(truth, protocol_sequences: dict | None = None) -> dict:
    """What results.json records of the final accuracies (after the last task; the EDGE release's metric):
    per learner over the truth's population, and per protocol per learner on its sequences (in order).

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> from clkit.edge.truth import GroundTruth
    >>> def train(q):
    ...     out = _Accuracies(a=np.full(len(q), 50.0)); out.final = {"a": np.arange(len(q), dtype=float)}
    ...     return out
    >>> s = enumerate_sequences(4, 2)
    >>> log = final_accuracy_log(GroundTruth(train, s), {"RS": s[[3, 1]]})
    >>> log["true_final_accuracy"]["a"].tolist(), log["protocol_final_accuracy"]["RS"]["a"].tolist()
    ([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [3.0, 1.0])
    """
    out = {"true_final_accuracy": {k: np.round(v, 4) for k, v in truth.population_final().items()}}
    if protocol_sequences:
        out["protocol_final_accuracy"] = {
            proto: {k: np.round(v[truth.require(seqs)], 4) for k, v in truth.final.items()}
            for proto, seqs in protocol_sequences.items()}
    return out


class _Accuracies(dict):
    """``{learner: average incremental accuracies}`` with ``final``: ``{learner: final accuracies}`` beside them
    (:class:`~clkit.edge.truth.GroundTruth` keeps both)."""

    final: dict


def truth_lookup(truth):
    """``train(sequences) -> {learner: accuracies}`` from a :class:`~clkit.edge.truth.GroundTruth`: the
    sequences' values, trained on demand where a sampled truth has not trained them (what
    :func:`clkit.edge.encoders.encoder_comparison` takes for sequences outside the population).

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> from clkit.edge.truth import GroundTruth
    >>> s = enumerate_sequences(4, 2)
    >>> gt = GroundTruth(lambda q: {"a": np.arange(len(q), dtype=float)}, s)
    >>> truth_lookup(gt)(s[[2, 4]])["a"].tolist()
    [2.0, 4.0]
    """
    def train(sequences):
        idx = truth.require(sequences)
        return {name: np.asarray(v)[idx] for name, v in truth.values.items()}
    return train


def normality_table(truth: dict):
    """Box-Cox + three normality tests per learner (Table A3): ``(dict, DataFrame)``.

    Box-Cox needs positive values: a learner with an accuracy of 0 on some order (a rehearsal's
    few test images can give one) gets NaN throughout, and its row of the table says why.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> normal, table = normality_table({"a": rng.normal(50, 3, 40), "b": np.r_[0.0, rng.normal(50, 3, 39)]})
    >>> normal["b"]["shapiro_p"] != normal["b"]["shapiro_p"], list(table.index)
    (True, ['a', 'b (an accuracy of 0: no Box-Cox)'])
    """
    import pandas as pd

    from .estimation import normality_tests

    normal, labels = {}, {}
    for name, acc in truth.items():
        a = np.asarray(acc, dtype=float)
        if (a[np.isfinite(a)] <= 0).any():
            normal[name] = dict.fromkeys(("lambda", "shapiro_p", "dagostino_p", "ks_p"), float("nan"))
            labels[name] = f"{name} (an accuracy of 0: no Box-Cox)"
        else:
            normal[name] = normality_tests(acc)
    return normal, pd.DataFrame(normal).T.rename(index=labels).round(4)


def check_edge_learner_kwargs(learner_kwargs, learners, *, batched=None) -> dict:
    """Validate the notebook's ``learner_kwargs`` for this run's ``learners``.

    The built-in learners accept the :class:`~clkit.edge.learners.LearnerConfig` fields
    listed in :data:`~clkit.edge.learners.LEARNER_KEYWORDS`; any other (a Strategy) its
    constructor's keywords except those the notebook supplies (model, scenario, seed, device,
    precision), plus the schedule's :data:`~clkit.edge.learners.SCHEDULE_KEYWORDS` -- so a strategy may take its own ``epochs``, ``optimizer``, ``lr`` or
    ``batch_size`` (e.g. L2P's Adam and few epochs beside ResNet learners' many). ``batched``
    names the run's batched learners (default: every built-in name); on an image protocol
    (:mod:`clkit.edge.images`) only ``"ncm"`` is, and ``"ewc"`` names the strategy.

    Examples
    --------
    >>> check_edge_learner_kwargs({"ewc": {"ewc_lambda": 100.0}}, ["finetune", "ewc"])
    {'ewc': {'ewc_lambda': 100.0}}
    >>> check_edge_learner_kwargs({"ncm": {"lr": 0.1}}, ["ncm"])
    Traceback (most recent call last):
    ...
    ValueError: learner_kwargs['ncm']: unknown keyword 'lr'; ncm takes no settings
    """
    from ..learner_kwargs import allowed_keywords, check_learner_kwargs
    from ..plugins import resolve_strategy
    from .learners import LEARNER_KEYWORDS, SCHEDULE_KEYWORDS, LearnerConfig

    base = LearnerConfig()
    allowed = {}
    batched = LEARNER_KEYWORDS if batched is None else set(batched)   # the image protocols: "ewc" is a strategy
    for name in learners:
        if name in LEARNER_KEYWORDS and name in batched:
            allowed[name] = {k: getattr(base, k) for k in LEARNER_KEYWORDS[name]}
        else:
            allowed[name] = allowed_keywords(resolve_strategy(name, parameter="learners"),
                                             exclude=("model", "scenario", "seed", "device", "precision"))
            # the training schedule (LearnerConfig's fields; the strategy keeps its own weight_decay)
            allowed[name] = {**{k: getattr(base, k) for k in SCHEDULE_KEYWORDS}, **allowed[name]}
    return check_learner_kwargs(learner_kwargs, allowed, learners=list(learners))
