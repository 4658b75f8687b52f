"""Notebook 02's steps that are more than one call: checking its parameters and setting the run up (its
split included), loading the enumerable data, the budget, the ground truth, and the classic / Fig. 5 /
similarity-source sections.

The notebook stays a tutorial (a claim, a formula, one call, a figure, a paragraph); the wiring of
its parameters into the package's functions lives here, so every step is tested outside the notebook
(tests/test_edge_notebook_steps.py). Each function takes the :class:`Run` that :func:`check_params`
returns: the parameters as given, the checked ones, the device and the run's record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "PARAMETERS",
    "Run",
    "budget",
    "check_params",
    "classic_bounds",
    "classic_settings",
    "encoder_sizes",
    "ground_truth",
    "load_data",
    "similarity_sources",
]

#: notebook 02's parameters (its parameters cell; tests/test_edge_notebook_steps.py compares the two)
PARAMETERS = (
    "dataset", "classes", "num_tasks", "truth", "truth_samples", "encoder", "clip_model", "clip_pretrained",
    "learners", "learner_kwargs", "n_train", "n_test", "epochs", "hidden", "batch_size", "lr", "seeds", "seed",
    "granularities", "num_random", "num_bins", "edge_num_random", "similarity_sources", "num_null", "num_draws",
    "intra_weight", "classic_datasets", "classic_num_tasks", "device", "precision", "deterministic", "rehearse",
    "encoder_sizes", "bounds_datasets", "bounds_learners", "image_size", "backbone", "vit_model", "vit_weights",
    "download", "protocol", "rs_shuffle", "require_pretrained", "edge_cases", "cases_from",
)


@dataclass
class Run:
    """One run of notebook 02 after its validation cell.

    Attributes
    ----------
    values : dict
        The parameters as the notebook holds them (:data:`PARAMETERS`).
    P : dict
        The checked parameters (:func:`clkit.edge.params.check_params`), with ``learner_kwargs`` completed by
        the protocol's settings (:func:`clkit.edge.protocol.protocol_learner_kwargs`).
    own_learners, user_learners : list of str
        The batched learners and the strategies (:func:`clkit.edge.images.notebook_learners`).
    user_lists : dict
        ``{path: class names}`` of the classic datasets given as files.
    shuffle : str
        The RS orders' generator (:func:`clkit.edge.protocol.rs_shuffle`).
    spec : clkit.edge.images.ViTSpec or None
        The image protocol's ViT (None on Fashion-MNIST / an ImageFolder).
    bounds_by : list of str
        Fig. 5's learners.
    device : clkit.device.RunDevice
    record : clkit.results.RunRecord
    split : clkit.edge.split.Split or None
        What this run trains and reads (:func:`clkit.edge.split.prepare`): a whole run, a case of the split
        (``edge_cases``) or its merge (``cases_from``). ``None`` is a whole run.
    """

    values: dict
    P: dict
    own_learners: list
    user_learners: list
    user_lists: dict
    shuffle: str
    spec: object
    bounds_by: list
    device: object
    record: object
    split: object = None
    extra: dict = field(default_factory=dict)

    def __getitem__(self, name):
        return self.values[name]

    @property
    def whole(self) -> bool:
        """True for a whole run or a merge (every section runs), False for a case of the split (it trains its
        units and skips the analysis)."""
        return self.split is None or self.split.whole

    def describe(self) -> str:
        """The device, and what the run is when it is a case or a merge of the split."""
        note = self.split.note() if self.split is not None else ""
        return self.device.describe() + (f"\n{note}" if note else "")

    @property
    def N(self) -> int:
        """Number of classes of the enumerable experiment."""
        return len(self.values["classes"])

    @property
    def K(self) -> int:
        """Number of tasks."""
        return int(self.values["num_tasks"])

    @property
    def grans(self):
        """The generator's granularities (``None``: all)."""
        return self.values["granularities"] or None


def _values(namespace) -> dict:
    missing = [n for n in PARAMETERS if n not in namespace]
    if missing:
        raise TypeError(f"namespace: notebook 02's parameters {missing} are missing (it must hold every one of "
                        f"{list(PARAMETERS)}, e.g. the notebook's globals())")
    return {n: namespace[n] for n in PARAMETERS}


def check_params(namespace, *, rehearsal=None, notebook: str = "02_edge") -> Run:
    """Check every parameter of notebook 02 before any work, set up the device, start the run's record.

    The checks (each raises ``ValueError`` / ``TypeError`` naming the parameter, its value and what is
    allowed): :func:`clkit.edge.params.check_params`; the protocol's learner settings and the learners'
    keywords (:func:`clkit.edge.report.check_edge_learner_kwargs`); the RS generator; classic name lists
    given as files; the image protocol's settings (:func:`clkit.edge.images.check_image_params`); Fig. 5's
    learners; the pretrained weights a ``require_pretrained`` run needs
    (:func:`clkit.edge.protocol.check_pretrained`); then the device (:func:`clkit.device.setup`); last the
    split (:func:`clkit.edge.split.prepare`: ``edge_cases`` must name units of this set, a case and a merge
    exclude each other, and a merge reads and checks its finished cases now, before any work).

    Parameters
    ----------
    namespace : mapping
        Holds every name of :data:`PARAMETERS` (the notebook passes ``globals()``).
    rehearsal : clkit.rehearsal.Rehearsal, optional
        Logged with the device when the run is a rehearsal.

    Returns
    -------
    Run

    Examples
    --------
    >>> check_params({"dataset": "fashion_mnist"})
    Traceback (most recent call last):
    ...
    TypeError: namespace: notebook 02's parameters ['classes', ...
    """
    import clkit.device

    from .._validate import check_type
    from ..data.user import is_user_path, load_class_names_file
    from ..results import RunRecord
    from . import bounds_run, combinatorics, images, protocol, split
    from .params import check_params as check_edge_params
    from .report_truth import check_edge_learner_kwargs

    v = _values(namespace)
    dataset, learners = v["dataset"], v["learners"]
    own, user = images.notebook_learners(dataset, learners)
    user_lists = {d: load_class_names_file(d) for d in v["classic_datasets"] if is_user_path(d)}
    P = check_edge_params(
        dataset="fashion_mnist" if is_user_path(dataset) else dataset, classes=v["classes"],
        num_tasks=v["num_tasks"], encoder=v["encoder"], learners=own or ["ncm"], n_train=v["n_train"],
        n_test=v["n_test"], epochs=v["epochs"], hidden=v["hidden"], batch_size=v["batch_size"], lr=v["lr"],
        seeds=v["seeds"], seed=v["seed"], granularities=v["granularities"], num_random=v["num_random"],
        num_bins=v["num_bins"], classic_datasets=[d for d in v["classic_datasets"] if d not in user_lists],
        classic_num_tasks=v["classic_num_tasks"], edge_num_random=v["edge_num_random"],
        similarity_sources=v["similarity_sources"], num_null=v["num_null"], num_draws=v["num_draws"],
        intra_weight=v["intra_weight"], truth=v["truth"], truth_samples=v["truth_samples"],
    )
    P.update(dataset=dataset, learners=learners, classic_datasets=v["classic_datasets"])
    P["learner_kwargs"] = check_edge_learner_kwargs(
        protocol.protocol_learner_kwargs(v["protocol"], dataset, learners, v["learner_kwargs"],
                                         num_tasks=v["num_tasks"]),
        own + user, batched=own,
    )
    shuffle = protocol.rs_shuffle(v["protocol"], v["rs_shuffle"])
    for names in user_lists.values():
        combinatorics.check_num_tasks(len(names), v["classic_num_tasks"])
    check_type("clip_model", v["clip_model"], str)
    check_type("clip_pretrained", v["clip_pretrained"], str)
    check_type("rehearse", v["rehearse"], bool)
    spec = images.check_image_params(
        dataset, image_size=v["image_size"], backbone=v["backbone"], vit_model=v["vit_model"],
        vit_weights=v["vit_weights"], download=v["download"], seed=v["seed"],
        encoder_sizes=v["encoder_sizes"], bounds_datasets=v["bounds_datasets"],
    )
    bounds_by = bounds_run.check_bounds_learners(v["bounds_learners"], learners)
    protocol.check_pretrained(
        v["require_pretrained"], spec=spec, encoder=v["encoder"], clip_model=v["clip_model"],
        clip_pretrained=v["clip_pretrained"], download=v["download"],
    )
    rd = clkit.device.setup(v["device"], v["precision"], v["deterministic"])
    keep = ("clip_model", "clip_pretrained", "device", "precision", "deterministic", "rehearse", "image_size",
            "backbone", "vit_model", "vit_weights", "download", "encoder_sizes", "bounds_datasets")
    record = RunRecord(notebook, params=dict(
        P, **{k: v[k] for k in keep}, bounds_learners=bounds_by, protocol=v["protocol"], rs_shuffle=shuffle,
        require_pretrained=v["require_pretrained"],
    ))
    record.log(device=rd.record(), **({"rehearsal": rehearsal.record()} if rehearsal else {}))
    sp = split.prepare(v["edge_cases"], v["cases_from"], learners=own + user, bounds_datasets=v["bounds_datasets"],
                       bounds_learners=bounds_by, params=record.params)
    return Run(v, P, own, user, user_lists, shuffle, spec, bounds_by, rd, record, sp)


def load_data(run: Run) -> tuple:
    """``(data, inputs)``: the enumerable experiment's data and each strategy's inputs and network.

    Fashion-MNIST (:func:`clkit.edge.experiment.load_enumerable_data`), an ImageFolder tree
    (:func:`clkit.data.user.imagefolder_enumerable`) or an image protocol
    (:func:`clkit.edge.images.image_protocol_data`: images and the frozen ViT features, computed once).
    ``inputs`` (image protocols only, else ``None``): :func:`clkit.edge.images.strategy_inputs` with the run's
    ``learner_kwargs`` (RanPAC with its adapter stage trains on the ViT's inputs). The data source, the class
    names and whether the ViT was random go into the run's record.
    """
    from ..data.user import imagefolder_enumerable, is_user_path
    from . import images
    from .experiment import load_enumerable_data

    v = run.values
    common = dict(n_train=v["n_train"], n_test=v["n_test"], seed=v["seed"])
    if is_user_path(v["dataset"]):
        data = imagefolder_enumerable(v["dataset"], v["classes"], **common)
    elif run.spec is not None:  # the paper's RGB protocols: images + frozen ViT features (once)
        data = images.image_protocol_data(v["dataset"], v["classes"], image_size=v["image_size"],
                                          download=v["download"], spec=run.spec, device=run.device, **common)
    else:
        data = load_enumerable_data(v["dataset"], v["classes"], device=run.device, **common)
    inputs = None
    if run.spec is not None:
        inputs = images.strategy_inputs(data, run.user_learners, backbone=v["backbone"], spec=run.spec,
                                        learner_kwargs=run.P["learner_kwargs"])
    run.record.log(data_source=data["data_source"], class_names=data["class_names"])
    if run.spec is not None:  # say in the results whether the ViT was pretrained
        run.record.log(vit_weights_random=not run.spec.weights)
    return data, inputs


def budget(run: Run, data: dict, inputs, all_sequences, config):
    """The set's budget before any training: :func:`clkit.edge.budget.truth_budget` counts and times the
    ground truth of this run's learners on its device, then :func:`clkit.edge.budget_set.set_budget` prices
    every stage on one GPU (the truth per learner, the RS / EDGE estimates, Fig. 4, Fig. 5) and says when
    the set needs its split. Logged as ``budget``.

    A case of the split prices the ground truth of its learners only: Fig. 5 prices a learner from the
    steps its truth budget timed, which a case of another learner's truth does not time, so a case's Fig. 5
    units (and Fig. 4, which it does not run) are priced by the whole run's budget, whose ``units`` name
    every case of the split. A merge trains nothing and a case of Fig. 5 units alone has no truth to time:
    both return ``None`` and log nothing.

    Parameters
    ----------
    run : Run
    data : dict
        :func:`load_data`'s data.
    inputs : dict or None
        :func:`load_data`'s strategy inputs.
    all_sequences : ndarray, shape (L, K, M)
        ``Omega`` (:func:`clkit.edge.enumerate_sequences`).
    config : clkit.edge.learners.LearnerConfig

    Returns
    -------
    clkit.edge.budget_set.SetBudget or None
    """
    from . import budget as truth_budgets
    from .budget_set import set_budget

    sp, v = run.split, run.values
    if sp is not None and (sp.cases is not None or not sp.trains_truth()):
        return None
    pick = sp.selection.pick if sp is not None else list
    truth = truth_budgets.truth_budget(
        data, all_sequences, pick(run.own_learners), pick(run.user_learners), config, seed=v["seed"],
        learner_kwargs=run.P["learner_kwargs"], mode=v["truth"], samples=v["truth_samples"], device=run.device,
        num_random=v["num_random"], inputs=inputs, random_settings=truth_budgets.scoring_settings(
            run.N, run.K, v["classic_datasets"], v["classic_num_tasks"], run.user_lists))
    whole = run.whole   # a case prices its truth units only (Fig. 5 prices a learner from its truth's timing)
    work = set_budget(
        truth, dataset=v["dataset"], num_classes=run.N, num_tasks=run.K, n_train=v["n_train"], n_test=v["n_test"],
        seeds=v["seeds"], edge_num_random=v["edge_num_random"], encoder_sizes=v["encoder_sizes"] if whole else (),
        bounds_datasets=v["bounds_datasets"] if whole else (), bounds_learners=run.bounds_by,
        classic_num_tasks=v["classic_num_tasks"], backbone=v["backbone"], image_size=v["image_size"], spec=run.spec,
        learner_kwargs=run.P["learner_kwargs"], mode=v["truth"])
    run.record.log(budget=work.record())
    return work


def ground_truth(run: Run, data: dict, inputs, all_sequences, config):
    """Section 5's ground truth: :func:`clkit.edge.report.ground_truth` on this run's learners, or, in a
    merge, the finished cases' records (:meth:`clkit.edge.split.Split.truth`).

    A whole run or a merge logs ``num_enumerated``, ``true_accuracy`` (rounded to 4 decimals),
    ``truth_description``, the truth's own log (:meth:`clkit.edge.truth.GroundTruth.log`) and, for a
    sampled truth, ``truth_population_index``. A case logs what it is (``split_case``) and its truth at full
    precision (``truth_case``, :func:`clkit.edge.split.truth_record`: what the merge reads); a case of
    Fig. 5 units alone trains no truth and returns ``None``.

    Parameters
    ----------
    run, data, inputs, all_sequences, config
        As :func:`budget`.

    Returns
    -------
    clkit.edge.truth.GroundTruth or None
    """
    from .report_truth import ground_truth as train_truth

    v = run.values

    def train(own, user):
        return train_truth(data, all_sequences, own, user, config, seed=v["seed"],
                           learner_kwargs=run.P["learner_kwargs"], mode=v["truth"], samples=v["truth_samples"],
                           device=run.device, inputs=inputs)

    sp = run.split
    if sp is None:
        truth = train(run.own_learners, run.user_learners)
    else:
        truth = sp.truth(train, run.own_learners, run.user_learners, all_sequences, mode=v["truth"],
                         samples=v["truth_samples"], seed=v["seed"]) if sp.trains_truth() else None
        sp.log(run.record, truth)
    if run.whole:
        values = truth.population_values()
        run.record.log(num_enumerated=len(all_sequences), true_accuracy={k: a.round(4) for k, a in values.items()},
                       truth_description=truth.describe(), **truth.log())
        if not truth.exact:
            run.record.log(truth_population_index=truth.population)
    return truth


def encoder_sizes(run: Run, class_names, truth):
    """Fig. 4 / Table A4: EDGE's triplet from each open_clip text encoder of ``encoder_sizes`` (openai weights),
    judged against ``truth`` (:func:`clkit.edge.encoders.encoder_comparison`; an order outside a sampled truth is
    trained by it). Logged as ``encoder_sizes_result``; ``None`` (said) when ``encoder_sizes`` is empty or the
    run is a case of the split (the merge runs it).

    Parameters
    ----------
    run : Run
    class_names : list of str
        The enumerable setting's classes.
    truth : clkit.edge.truth.GroundTruth
        :func:`ground_truth`'s.

    Returns
    -------
    clkit.edge.encoders.EncoderComparison or None
    """
    from . import encoders
    from .report_truth import truth_lookup

    if not run.whole:
        return None
    if not run.values["encoder_sizes"]:
        print("encoder_sizes is empty: Fig. 4 skipped (the paper set compares six CLIP encoders)")
        return None
    enc = encoders.encoder_comparison(
        class_names, run.K, truth.population_values(), truth.sequences[truth.population],
        encoders.open_clip_pairs(run.values["encoder_sizes"]), device=run.device, train=truth_lookup(truth))
    run.record.log(encoder_sizes_result=enc.record())
    return enc


def classic_settings(run: Run) -> tuple:
    """``(classic, table, lines)``: section 8's hard and easy sequences of the classic datasets from their
    class names alone (:func:`clkit.edge.report_classic.classic_settings`; a dataset given as a file uses
    its names), and one line per dataset naming the first classes of each sequence's first task.
    Logged as ``classic``. A case of the split skips it (``({}, None, [])``): the merge runs it once."""
    from ..data.class_names import load_class_names
    from .report_classic import classic_settings as _classic

    if not run.whole:
        return {}, None, []
    v = run.values
    names = {ds: run.user_lists[ds] if ds in run.user_lists else load_class_names(ds) for ds in v["classic_datasets"]}
    classic, table = _classic(names, v["classic_num_tasks"], v["encoder"], num_random=v["num_random"],
                              seed=v["seed"], clip_model=v["clip_model"], clip_pretrained=v["clip_pretrained"],
                              device=run.device)
    lines = [f"{d}: hard task 1 = {c['hard_first_task'][:8]}...\n{' ' * len(d)}  easy task 1 = "
             f"{c['easy_first_task'][:8]}..." for d, c in classic.items()]
    run.record.log(classic=classic)
    return classic, table, lines


def classic_bounds(run: Run, config) -> dict:
    """Fig. 5: ``{dataset: ClassicBounds}`` for every dataset of ``bounds_datasets``
    (:func:`clkit.edge.bounds_run.classic_bounds_run` with the run's learners, settings and ViT). A case of
    the split trains only its units (``bounds|DATASET|LEARNER``), a merge reads every unit from the cases
    (:meth:`clkit.edge.split.Split.fig5`). Logged as ``bounds`` (a case's records are what the merge reads).
    """
    from .bounds_run import classic_bounds_run

    v = run.values

    def one(d, learners):
        return classic_bounds_run(
            d, learners, config, num_tasks=v["classic_num_tasks"], encoder=v["encoder"],
            clip_model=v["clip_model"], clip_pretrained=v["clip_pretrained"], spec=run.spec, backbone=v["backbone"],
            learner_kwargs=run.P["learner_kwargs"], n_train=v["n_train"], n_test=v["n_test"], seed=v["seed"],
            download=v["download"], device=run.device, shuffle=run.shuffle)

    out = (run.split.fig5(one, v["bounds_datasets"], run.bounds_by) if run.split is not None
           else {d: one(d, run.bounds_by) for d in v["bounds_datasets"]})
    run.record.log(bounds={d: b.record() for d, b in out.items()})
    return out


def similarity_sources(run: Run, name_sim, data: dict, truth, all_sequences) -> dict:
    """Section 9: every similarity source of ``similarity_sources`` built
    (:func:`clkit.edge.report_classic.similarity_sources`) and judged against the truth
    (:func:`clkit.edge.report_classic.source_study`); the study's dict plus ``"null_labels"`` and
    ``"corr_intra"`` (Pearson R of the intra-task score ``I(O)`` with accuracy, per learner). Logged."""
    from .report_classic import similarity_sources as _sources
    from .report_classic import source_study
    from .report_protocols import correlations
    from .sequences import intra_task_scores

    v = run.values
    sims, null_labels = _sources(v["similarity_sources"], name_sim=name_sim, class_names=data["class_names"],
                                 data=data, hidden=v["hidden"], seed=v["seed"], num_null=v["num_null"],
                                 clip_model=v["clip_model"], clip_pretrained=v["clip_pretrained"],
                                 device=run.device)
    out = source_study(sims, null_labels, truth, all_sequences, run.K, intra_weight=v["intra_weight"],
                       num_null=v["num_null"], edge_num_random=v["edge_num_random"], num_draws=v["num_draws"],
                       num_bins=v["num_bins"], seed=v["seed"])
    pop = truth.population
    corr_intra = {n: c["r"] for n, c in correlations(intra_task_scores(name_sim, all_sequences[pop]),
                                                    truth.population_values()).items()}
    run.record.log(**out["log"], correlation_intra=corr_intra)
    return {**out, "null_labels": null_labels, "corr_intra": corr_intra}
