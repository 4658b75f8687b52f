"""Notebook 05_drift's steps that are more than one call: loading the graph and its latent-task splits,
planning the σ sweep, recording the grid's results, the per-setting tables, judging the σ sweep's
findings and the records of the replacement, batch-size, paper-layout and advantage sections.

The notebook stays a tutorial (a claim, a formula, one call, a figure, a paragraph); the wiring of its
parameters into :mod:`clkit.drift.report`, :mod:`clkit.drift.calibrate`, :mod:`clkit.drift.tables` and
:mod:`clkit.drift.paper_numbers` lives here, so every step is tested outside the notebook
(tests/test_drift_notebook_steps.py). ``params`` is always the notebook's parameters as a dict
(``{k: globals()[k] for k in clkit.drift.NOTEBOOK_PARAMETERS}``, after a rehearsal's cuts); ``record``
a :class:`clkit.results.RunRecord` (or anything with its ``log`` method), which receives exactly the
results.json keys the notebook wrote before these steps moved here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from . import report
from .experiment import null_control_configs, protocol_data, study_configs
from .schedule import gaussian_weights, mixing_entropy, overlap_index, task_centers

__all__ = [
    "CSBM_PARAMETERS",
    "SETTING_COLUMNS",
    "StudyData",
    "Sweep",
    "batch_size_record",
    "judge",
    "load_study_data",
    "main_results",
    "paper_layout",
    "percent_columns",
    "plan_sweep",
    "record_results",
    "replacement_record",
    "setting_tables",
    "train_study",
]

#: the notebook parameters that shape the contextual SBM (used only with ``dataset = "csbm"``)
CSBM_PARAMETERS = ("num_nodes", "num_classes", "homophily", "avg_degree", "feature_signal")


def _is_user_graph(dataset: str) -> bool:
    from clkit.data.user import is_user_path

    return is_user_path(dataset) or ":" in dataset


@dataclass
class StudyData:
    """The graph of a run and its latent-task data under each protocol.

    Attributes
    ----------
    graph : clkit.data.graphs.GraphData
    name : str
        The dataset used (``"auto"`` resolved; ``"user-<name>"`` for a user's graph).
    data : dict
        ``protocol -> (graph, LatentTaskSplit)`` (:func:`clkit.drift.experiment.protocol_data`).
    split0 : LatentTaskSplit
        The first protocol's split (the tasks, their classes and sizes).
    dropped : list of int
        Classes left out of every latent task (a last class that fills no task).
    markdown : str
        The data section's text (:func:`clkit.drift.report.data_markdown`).
    """

    graph: object
    name: str
    data: dict
    split0: object
    dropped: list
    markdown: str


def load_study_data(params: dict, protocols, record=None) -> StudyData:
    """Load the run's graph (``dataset``) and split it into latent tasks under every protocol.

    ``dataset = "auto"`` resolves to Cora (:func:`clkit.data.graphs.resolve_auto`); a path or a
    ``"package.module:Class"`` loads the user's graph; ``"csbm"`` draws the contextual SBM of
    :data:`CSBM_PARAMETERS`. Every split and draw uses the smallest seed. Logs ``data_source``,
    ``dataset_used``, ``graph_stats``, ``num_tasks``, ``task_classes``, ``task_sizes`` (per protocol)
    and ``dropped_classes``.

    Parameters
    ----------
    params : dict
        The notebook's parameters (``dataset``, ``data_dir``, ``classes_per_task``, ``test_fraction``,
        ``seeds`` and :data:`CSBM_PARAMETERS`).
    protocols : list of {"text", "authors"}
    record : RunRecord, optional

    Returns
    -------
    StudyData

    Examples
    --------
    >>> P = dict(dataset="csbm", data_dir="", num_nodes=120, num_classes=4, homophily=0.8, avg_degree=4.0,
    ...          feature_signal=0.7, classes_per_task=2, test_fraction=0.2, seeds=[3, 1])
    >>> d = load_study_data(P, ["text"])
    >>> d.name, d.split0.num_tasks, d.split0.task_classes, d.dropped
    ('csbm', 2, [(0, 1), (2, 3)], [])
    """
    from clkit.data.graphs import load_graph, resolve_auto
    from clkit.data.user import load_graph_source

    dataset, root, cpt = params["dataset"], params["data_dir"] or None, params["classes_per_task"]
    seed = min(params["seeds"])
    if _is_user_graph(dataset):
        graph = load_graph_source(dataset, root, min_classes=2 * cpt)
        name = f"user-{graph.name}"  # names the stream cache folder
    else:
        name = resolve_auto(root) if dataset == "auto" else dataset
        kw = {k: params[k] for k in CSBM_PARAMETERS} if name == "csbm" else {}
        graph = load_graph(name, root=root, seed=seed, **kw)
    data = {pr: protocol_data(graph, cpt, params["test_fraction"], seed=seed, protocol=pr) for pr in protocols}
    stats = graph.stats()
    split0 = data[protocols[0]][1]
    dropped = sorted(set(range(graph.num_classes)) - {c for t in split0.task_classes for c in t})
    if record is not None:
        record.log(data_source=graph.source, dataset_used=name, graph_stats=stats, num_tasks=split0.num_tasks,
                   task_classes=split0.task_classes,
                   task_sizes={pr: [len(t) for t in data[pr][1].task_nodes] for pr in protocols},
                   dropped_classes=dropped)
    text = report.data_markdown(graph, stats, data, dataset, name, dropped, cpt)
    return StudyData(graph, name, data, split0, dropped, text)


@dataclass
class Sweep:
    """The run's stream configurations and the σ sweep's overlap, as :func:`plan_sweep` plans them.

    Attributes
    ----------
    sigmas : dict
        ``protocol -> list of σ`` of the sweep (solved per protocol from ``overlaps``, else ``sigmas``).
    configs : dict
        ``protocol -> {role: list of StreamConfig}`` (:func:`clkit.drift.experiment.study_configs`).
    null_configs : dict
        ``protocol -> StreamConfig`` of the null controls (the Gaussian setting at the smallest σ).
    configs_main : list of StreamConfig
        The first protocol's four main settings (hard, Gaussian, boundary-local, global).
    fits : dict or None
        ``protocol -> list of SigmaFit`` when σ was solved for ``overlaps``.
    length : int
        T, the first protocol's stream length in batches.
    grid_sigma, overlap_curve, entropy_curve : ndarray, list, list
        Overlap index (Eq. 6) and normalised mixing entropy of the Gaussian weights (Eq. 10) on a σ grid.
    overlap : dict
        ``σ -> overlap index`` along the first protocol's sweep.
    tau : float
        The overlap index's dominance threshold.
    """

    sigmas: dict
    configs: dict
    null_configs: dict
    configs_main: list
    fits: dict | None
    length: int
    grid_sigma: np.ndarray
    overlap_curve: list
    entropy_curve: list
    overlap: dict
    tau: float

    def markdown(self, protocol: str) -> str:
        """One line: the stream's length and the sweep's overlap indices."""
        return (f"Stream of {self.length} batches ({protocol} protocol). Overlap index of the σ sweep "
                f"(τ = {self.tau:g}): " + ", ".join(f"σ = {s:g}: O = {o:.2f}" for s, o in self.overlap.items()))

    def fits_table(self):
        """The σ solved for each target overlap (:func:`clkit.drift.report.overlap_fits_table`), or None."""
        return report.overlap_fits_table(self.fits) if self.fits else None

    def mixing_figure(self, streams: dict, seed: int, protocol: str):
        """α_k(t) of the main settings and overlap / entropy against σ (:func:`clkit.drift.plots.mixing_curves`)."""
        from . import plots

        return plots.mixing_curves(streams, self.configs_main, seed, self.grid_sigma, self.overlap_curve,
                                   self.entropy_curve, self.overlap, self.tau, protocol)


def plan_sweep(params: dict, graph, protocols, record=None, *, split0=None) -> Sweep:
    """Every stream configuration of the study, under every protocol, and the σ sweep's overlap.

    With ``overlaps`` non-empty, σ is solved per protocol for each target overlap on this graph
    (:func:`clkit.drift.calibrate.sigmas_for_overlaps`, logged as ``overlap_fits``); else the sweep is
    ``sigmas``. The overlap index O(σ) and the mixing entropy are computed on 40 σ from 0.25 to
    4 max(σ) for the first protocol's task sizes (task centres Eq. 9, weights Eq. 10); logs
    ``stream_length`` and ``sigma_sweep_overlap``.

    Parameters
    ----------
    params : dict
        The notebook's parameters (``overlaps``, ``sigmas``, ``sigma``, ``p``, ``k_bl``, ``batch_size``,
        ``batch_sizes``, ``sampling``, ``tau``, ``classes_per_task``, ``test_fraction``, ``seeds``).
    graph : GraphData
    protocols : list of str
    record : RunRecord, optional
    split0 : LatentTaskSplit, optional
        The first protocol's split (default: computed as :func:`load_study_data` does).

    Returns
    -------
    Sweep

    Examples
    --------
    >>> from clkit.data.graphs import csbm
    >>> P = dict(overlaps=[], sigmas=[1.0, 8.0], sigma=3.0, p=0.3, k_bl=2, batch_size=10, batch_sizes=[10],
    ...          sampling="without", tau=0.9, classes_per_task=2, test_fraction=0.2, seeds=[1])
    >>> sw = plan_sweep(P, csbm(200, 4, seed=1), ["text"])
    >>> sw.sigmas, [c.setting for c in sw.configs_main], sw.null_configs["text"].sigma
    ({'text': [1.0, 8.0]}, ['hard', 'gaussian', 'boundary_local', 'global'], 1.0)
    >>> sw.overlap[1.0] < sw.overlap[8.0]
    True
    """
    from . import calibrate

    seed, bs, tau = min(params["seeds"]), params["batch_size"], params["tau"]
    fits = None
    if params["overlaps"]:  # sigma for each target overlap, solved per protocol on this graph
        fits = calibrate.sigmas_for_overlaps(params["overlaps"], graph, protocols=protocols,
                                             classes_per_task=params["classes_per_task"],
                                             test_fraction=params["test_fraction"], batch_size=bs, tau=tau,
                                             seed=seed)
        sweep_sigmas = {pr: [f.sigma for f in fits[pr]] for pr in protocols}
        if record is not None:
            record.log(overlap_fits={pr: [asdict(f) for f in fits[pr]] for pr in protocols})
    else:
        sweep_sigmas = {pr: list(params["sigmas"]) for pr in protocols}
    configs = {pr: study_configs(sigma=params["sigma"], sigmas=sweep_sigmas[pr], p=params["p"],
                                 k_bl=params["k_bl"], batch_size=bs, batch_sizes=params["batch_sizes"],
                                 sampling=params["sampling"]) for pr in protocols}
    # the null controls: Bare and the sweep's CL method at each protocol's smallest σ
    null_cfg = null_control_configs(sweep_sigmas, bs, params["sampling"])
    if split0 is None:
        split0 = protocol_data(graph, params["classes_per_task"], params["test_fraction"], seed=seed,
                               protocol=protocols[0])[1]
    sigmas = sweep_sigmas[protocols[0]]
    mu, _, T = task_centers([len(t) for t in split0.task_nodes], bs)
    grid_sigma = np.geomspace(0.25, 4 * max(max(sigmas), params["sigma"]), 40)
    overlap_curve = [overlap_index(gaussian_weights(mu, T, s), tau) for s in grid_sigma]
    entropy_curve = [mixing_entropy(gaussian_weights(mu, T, s)) for s in grid_sigma]
    sweep_overlap = {s: overlap_index(gaussian_weights(mu, T, s), tau) for s in sigmas}
    if record is not None:
        record.log(stream_length=T, sigma_sweep_overlap={str(s): o for s, o in sweep_overlap.items()})
    return Sweep(sweep_sigmas, configs, null_cfg, configs[protocols[0]]["main"], fits, T, grid_sigma,
                 overlap_curve, entropy_curve, sweep_overlap, tau)


def main_results(stats_by: dict, configs_main, methods) -> dict:
    """The four main settings' means under keys that do not depend on σ, p, k_bl or B.

    ``{protocol: {setting: {method: {metric: value}}}}``, so the rows of a parameter sweep line up
    (``clkit summary``: ``main.gaussian.er.A_AUC``, ...).

    Examples
    --------
    >>> from clkit.drift import StreamConfig
    >>> cfg = StreamConfig("hard", batch_size=10)
    >>> mean = pd.DataFrame({"AA": [0.5]}, index=pd.MultiIndex.from_tuples([(cfg.label(), "bare")]))
    >>> main_results({"text": (mean, mean)}, [cfg], ["bare"])
    {'text': {'hard': {'bare': {'AA': 0.5}}}}
    """
    return {pr: {c.setting: {m: mean.loc[(c.label(), m)].to_dict() for m in methods} for c in configs_main}
            for pr, (mean, _) in stats_by.items()}


def train_study(params: dict, data: dict, configs: dict, null_configs, case_list, record=None, **grid_kw) -> tuple:
    """The study's runs: trained in one run, trained in part by a case of a split, or read back by its merge.

    - A whole run (``drift_cases`` and ``drift_from`` empty): :func:`clkit.drift.experiment.run_protocols`;
      ``nulls`` is ``None`` (the notebook's null-control section trains them).
    - A case (``drift_cases``): :func:`clkit.drift.split.run_cases` trains ``case_list`` only, as the whole
      study trains those runs, and logs their rows as ``drift_case`` (its curves go beside results.json);
      returns ``(None, None)``: a case computes nothing more.
    - A merge (``drift_from``): :func:`clkit.drift.split.read_cases` reads every case under the folder and
      returns ``(runs, nulls)`` as one run computes them; nothing is trained.

    Parameters
    ----------
    params : dict
        The notebook's parameters (``methods``, ``sweep_methods``, ``seeds``, ``drift_cases``, ``drift_from``).
    data, configs, null_configs
        :attr:`StudyData.data`, :attr:`Sweep.configs`, :attr:`Sweep.null_configs`.
    case_list : list of (str, int)
        :func:`clkit.drift.split.parse_cases` of ``drift_cases``.
    record : RunRecord, optional
        A case logs ``drift_case``; the merge compares its parameters (``record.params``) with the cases'.
    **grid_kw
        :func:`clkit.drift.experiment.run_grid`'s keywords (``dataset`` names the stream cache).

    Returns
    -------
    (runs, nulls)
        ``protocol -> (rows, curves, streams)`` and ``protocol -> rows`` (or ``None``, as above).

    Examples
    --------
    >>> train_study(dict(methods=["bare"], sweep_methods=["bare"], seeds=[1], drift_cases=[], drift_from="x"),
    ...             {}, {}, None, [], record=None)
    Traceback (most recent call last):
    ...
    ValueError: drift_from: a merge compares the cases' parameters with this run's: give record
    """
    from . import split
    from .experiment import run_protocols

    ms, sweep, seeds = params["methods"], params["sweep_methods"], params["seeds"]
    if params.get("drift_from"):
        if record is None:
            raise ValueError("drift_from: a merge compares the cases' parameters with this run's: give record")
        return split.read_cases(params["drift_from"], record.params, data, configs, ms, sweep, seeds,
                                null_configs=null_configs, null_offset=report.NULL_SEED_OFFSET,
                                dataset=grid_kw.get("dataset", "graph"), cache=grid_kw.get("cache", True))
    if params.get("drift_cases"):
        case = split.run_cases(case_list, data, configs, ms, sweep, seeds, null_configs=null_configs,
                               null_offset=report.NULL_SEED_OFFSET, **grid_kw)
        if record is not None:
            record.log(drift_case=case)
        return None, None
    return run_protocols(data, configs, ms, sweep, seeds, **grid_kw), None


def record_results(runs: dict, configs_main, methods, record=None) -> dict:
    """Summarise the grid's rows per protocol and log them: ``results`` and ``main`` (the first protocol),
    ``results_by_protocol`` and ``main_by_protocol`` (all).

    Parameters
    ----------
    runs : dict
        ``protocol -> (rows, curves, streams)`` (:func:`clkit.drift.experiment.run_protocols`).
    configs_main : list of StreamConfig
    methods : list of str
    record : RunRecord, optional

    Returns
    -------
    dict
        ``protocol -> (mean, std)`` over seeds per (configuration, method) (:func:`clkit.drift.report.summarise`).

    Examples
    --------
    >>> from clkit.drift import StreamConfig
    >>> cfg = StreamConfig("hard", batch_size=10)
    >>> rows = pd.DataFrame({"config": [cfg.label()] * 2, "method": ["bare"] * 2, "seed": [1, 2],
    ...                      "AA": [0.4, 0.6], "AF": [0.0, -0.2], "A_AUC": [0.3, 0.5], "AF_s": [0.0, -0.2],
    ...                      "overlap": [0.0, 0.0], "detector_firings": [np.nan, np.nan]})
    >>> s = record_results({"text": (rows, None, None)}, [cfg], ["bare"])
    >>> round(float(s["text"][0].loc[(cfg.label(), "bare"), "AA"]), 3)
    0.5
    """
    stats_by = {pr: report.summarise(r[0]) for pr, r in runs.items()}
    main_by = main_results(stats_by, configs_main, methods)
    if record is not None:
        p0 = next(iter(stats_by))
        record.log(results=report.keyed(stats_by[p0][0]))
        record.log(results_by_protocol={pr: report.keyed(s[0]) for pr, s in stats_by.items()})
        record.log(main=main_by[p0])
        record.log(main_by_protocol=main_by)
    return stats_by


#: the columns of each main setting's table, as the paper prints them (hard, Gaussian, boundary-local, global)
SETTING_COLUMNS = {"hard": ["AA", "AF"], "gaussian": ["A_AUC", "AF_s"], "boundary_local": ["AA", "AF"],
                   "global": ["AA", "AF"]}


def setting_tables(stats_by: dict, configs_main, n_seeds: int) -> list:
    """One table per main setting, every protocol side by side, ``mean ± std`` in %.

    Hard, global and boundary-local mixing read AA / AF, the Gaussian setting A_AUC / AF_s
    (:data:`SETTING_COLUMNS`); each title names the configuration and its overlap index (first protocol).

    Returns
    -------
    list of (str, DataFrame)
        ``(Markdown title, table)`` per configuration of ``configs_main``; the table's columns are
        ``(protocol, metric)``.

    Examples
    --------
    >>> from clkit.drift import StreamConfig
    >>> cfg = StreamConfig("hard", batch_size=10)
    >>> idx = pd.MultiIndex.from_tuples([(cfg.label(), "bare")])
    >>> mean = pd.DataFrame({"AA": [0.5], "AF": [-0.1], "overlap": [0.0]}, index=idx)
    >>> std = pd.DataFrame({"AA": [0.02], "AF": [0.01], "overlap": [0.0]}, index=idx)
    >>> title, table = setting_tables({"text": (mean, std)}, [cfg], 2)[0]
    >>> title, table.loc["bare", ("text", "AA")]
    ('**hard B=10 without** (overlap O = 0.00)', '50.0 ± 2.0')
    """
    mean0 = next(iter(stats_by.values()))[0]
    out = []
    for cfg in configs_main:
        cols = SETTING_COLUMNS[cfg.setting]
        ov = mean0.loc[cfg.label(), "overlap"].iloc[0]
        table = pd.concat({pr: report.setting_table(s, cfg, cols, n_seeds) for pr, s in stats_by.items()}, axis=1)
        out.append((f"**{cfg.label()}** (overlap O = {ov:.2f})", table))
    return out


def judge(runs: dict, nulls: dict, params: dict, sweep_sigmas: dict, *, exact: bool, record=None) -> tuple:
    """The σ sweep's verdicts, the pipeline checks and the findings table under every protocol of ``runs``.

    Verdicts: :func:`clkit.drift.report.study_verdicts` (paired tests over seeds, Holm within the primary
    and the exploratory family, null controls alone); checks: :func:`clkit.drift.report.pipeline_checks`
    (``exact``: MAS* must equal Bare bit for bit where its detector never fired -- on the CPU); findings:
    :func:`clkit.drift.report.verdict_findings`. Logs ``findings``, ``verdicts``, ``controls_hold``,
    ``pipeline_checks`` and ``pipeline_checks_hold``.

    Parameters
    ----------
    runs, nulls : dict
        :func:`clkit.drift.experiment.run_protocols` and :func:`clkit.drift.experiment.run_null_control`.
    params : dict
        The notebook's parameters (``sweep_methods``, ``batch_size``, ``sampling``, ``seeds``).
    sweep_sigmas : dict
        ``protocol -> σ sweep`` (:attr:`Sweep.sigmas`).
    exact : bool
    record : RunRecord, optional

    Returns
    -------
    (list of Verdict, list of PipelineCheck, DataFrame)

    Examples
    --------
    Bare and ER gain 10 points from σ = 1 to σ = 8 on both seeds; no null controls here:

    >>> rows = pd.DataFrame([dict(setting="gaussian", batch_size=10, sampling="without", sigma=s, seed=k,
    ...                           overlap=o, method=m, A_AUC=0.4 + 0.1 * (s > 1) + 0.01 * k, AF_s=-0.1, AA=0.5)
    ...                      for s, o in ((1.0, 0.1), (8.0, 0.8)) for k in (1, 2) for m in ("bare", "er")])
    >>> P = dict(sweep_methods=["bare", "er"], batch_size=10, sampling="without", seeds=[1, 2])
    >>> verdicts, checks, _ = judge({"text": (rows, {}, {})}, {}, P, {"text": [1.0, 8.0]}, exact=True)
    >>> [v.comparison[6:10] for v in verdicts], [round(v.effect, 1) for v in verdicts]
    (['(1) ', '(2) ', '(3a)', '(3b)'], [10.0, 0.0, 0.0, 0.0])
    >>> [c.holds for c in checks]
    [True, True]
    """
    from clkit import stats

    args = (runs, nulls, params["sweep_methods"], sweep_sigmas, params["batch_size"], params["sampling"])
    verdicts = report.study_verdicts(*args)
    checks = report.pipeline_checks(*args, params["seeds"], exact=exact)
    findings = report.verdict_findings(verdicts, list(runs), checks=checks)
    if record is not None:
        record.log(findings=findings.to_dict(), verdicts=[v.to_dict() for v in verdicts],
                   controls_hold=stats.controls_hold(verdicts)[0],
                   pipeline_checks=[c._asdict() for c in checks], pipeline_checks_hold=report.checks_hold(checks))
    return verdicts, checks, findings


def replacement_record(rep: pd.DataFrame) -> dict:
    """``{method: {"without": A_AUC, "with": A_AUC}}`` as fractions, from the percentages of
    :func:`clkit.drift.report.replacement` (one row per online method).

    Examples
    --------
    >>> rep = pd.DataFrame({"without": [50.0], "with": [62.5]}, index=["er"])
    >>> replacement_record(rep)
    {'er': {'without': 0.5, 'with': 0.625}}
    """
    return {m: {"without": a / 100, "with": b / 100} for m, a, b in zip(rep.index, rep["without"], rep["with"])}


def batch_size_record(table: pd.DataFrame) -> dict:
    """``{"B=<b>": {method: A_AUC}}`` as fractions, from :func:`clkit.drift.report.batch_size_table`'s
    percentage columns (the ΔA_AUC column is left out).

    Examples
    --------
    >>> t = pd.DataFrame({"B=10": [40.0], "B=20": [45.0], "ΔA_AUC": [5.0]}, index=["bare"])
    >>> batch_size_record(t)
    {'B=10': {'bare': 0.4}, 'B=20': {'bare': 0.45}}
    """
    return {c: table[c].div(100).to_dict() for c in table.columns if c.startswith("B=")}


def percent_columns(table: pd.DataFrame, columns, digits: int = 1) -> pd.DataFrame:
    """``table`` with ``columns`` (fractions) shown in %, rounded to ``digits``.

    Examples
    --------
    >>> percent_columns(pd.DataFrame({"a": [0.1234], "b": ["x"]}), ["a"])
    a  b
    0  12.3  x
    """
    return table.assign(**{k: (100 * table[k]).round(digits) for k in columns})


def paper_layout(runs: dict, name: str, params: dict, sweep_sigmas: dict, record=None) -> tuple:
    """The run's numbers in the paper's layout, and each table beside the paper's own numbers.

    :func:`clkit.drift.tables.paper_tables` per protocol (this run's dataset as the column group), then
    :func:`clkit.drift.paper_numbers.beside_paper` at the scale :func:`~clkit.drift.paper_numbers.comparison_scale`
    allows (one of the paper's four graphs, not rehearsed: ``"paper"``; else ``"teaching"``). Logs
    ``paper_tables`` and ``paper_comparison``.

    Parameters
    ----------
    runs : dict
        :func:`clkit.drift.experiment.run_protocols`.
    name : str
        The dataset used.
    params : dict
        The notebook's parameters (``sigma``, ``p``, ``k_bl``, ``batch_size``, ``batch_sizes``, ``sampling``,
        ``rehearse``, ``backbone``).
    sweep_sigmas : dict
    record : RunRecord, optional

    Returns
    -------
    (dict, dict)
        ``protocol -> list of PaperTable`` and ``protocol -> list of Comparison`` (one per table).

    Examples
    --------
    >>> from clkit.drift.experiment import StreamConfig
    >>> main = [StreamConfig("hard", batch_size=10), StreamConfig("gaussian", sigma=3.0, batch_size=10)]
    >>> rows = pd.DataFrame([dict(config=c.label(), setting=c.setting, sigma=c.sigma, p=c.p, k_bl=c.k_bl,
    ...                           batch_size=10, sampling="without", method=m, seed=k, overlap=0.5, AA=0.5,
    ...                           AF=-0.1, A_AUC=0.5, AF_s=-0.1) for c in main for m in ("bare", "er") for k in (1, 2)])
    >>> P = dict(sigma=3.0, p=0.3, k_bl=2, batch_size=10, batch_sizes=[10], sampling="without", rehearse=False,
    ...          backbone="gcn")
    >>> paper, beside = paper_layout({"text": (rows, {}, {})}, "csbm", P, {"text": [1.0, 8.0]})
    >>> [t.title for t in paper["text"]]
    ['Table 2: Gaussian mixing (σ = 3, B = 10)', 'Table 3: hard transitions (B = 10)']
    >>> [c.scale for c in beside["text"]]   # a synthetic graph: the paper's numbers for reference only
    ['teaching', 'teaching']
    """
    from . import paper_numbers, tables

    kw = {k: params[k] for k in ("sigma", "p", "k_bl", "batch_size", "batch_sizes", "sampling")}
    paper = {pr: tables.paper_tables({name: r[0]}, sigmas=sweep_sigmas[pr], **kw) for pr, r in runs.items()}
    scale = paper_numbers.comparison_scale(name, params["rehearse"])
    beside = {pr: [paper_numbers.beside_paper(t, name, scale=scale, backbone=params["backbone"]) for t in ts]
              for pr, ts in paper.items()}
    if record is not None:
        record.log(paper_tables={pr: [t.record() for t in ts] for pr, ts in paper.items()})
        record.log(paper_comparison={pr: [c.record() for c in cs] for pr, cs in beside.items()})
    return paper, beside
