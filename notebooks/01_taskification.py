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
# # Temporal taskification: how splitting a stream into tasks changes the benchmark
#
# *Filat, Burceanu, Hussain & Kalogiannis, "Temporal Taskification in Streaming
# Continual Learning: A Source of Evaluation Instability" (arXiv 2604.21930, 2026).*
#
# **The paper's claim.** Streaming continual learning turns one continuous stream into a
# sequence of tasks by cutting it in time. That cut is not neutral: different valid
# splits of the same stream induce different task distributions and therefore different
# CL regimes, and the measured forecasting error, forgetting and backward transfer
# change with them. The paper describes a taskification by two task-count-invariant
# *profiles* (the distribution of distances between adjacent tasks, and between distant
# tasks), compares taskifications by a *profile distance*, and measures how fragile a
# split is by the *Boundary-Profile Sensitivity* (BPS): the mean profile distance to
# splits whose boundaries moved by at most $\delta$. On CESNET-TimeSeries24 it finds
# that 9-day tasks are more fragile than 30- and 44-day tasks, and that the CL metrics
# differ strongly across the three splits.
#
# This notebook reproduces the pipeline: case studies of fragile boundaries (Fig. 1),
# task-to-task Wasserstein matrices (Fig. 2), the profile distance (Table 2), plasticity
# / stability / BPS and their shifted twin (Tables 3-4), a real offline stream, and the
# CL table (Table 1). Every BPS stands beside the BPS of a **null stream** (the same
# values in a random time order: no structure at all), and every learner beside two
# **no-learning forecasters** (the task's training mean, and persistence).
#
# Run it headless: `clkit run 01 --params smoke|default|paper [-p NAME VALUE]`; `-p device
# cuda` trains the forecasters on a GPU, and `--params paper -p rehearse true` rehearses the
# paper set on a fabricated CESNET database in minutes.

# %% tags=["parameters"]
# Parameters: edit a value, then Run All. Headless: clkit run 01 -p NAME VALUE
dataset: str = "synthetic"  # synthetic (CESNET-shaped generator, offline) | cesnet
# | PATH.csv or .parquet (your stream; time column below, "": one step per row)
time_column: str = ""
value_columns: list = []  # your stream: feature columns ([]: every numeric column)
# your stream: minutes per step (0: from the time column, else 1); 1440 makes every
# *_days value below count steps
interval_minutes: float = 0.0
num_series: int = 6  # series (IP addresses) analysed for profiles and BPS; the BPS
# verdicts pair them (6: 80 % power for 2 sd at Holm over 2 adjacent splits)
num_weeks: int = 40  # synthetic stream length in weeks (CESNET-TimeSeries24: 40)
window_days: list = [9, 30, 44]  # task lengths of the fixed-window splits, in days
offset_days: float = 2.0  # shift of all boundaries for the shifted twin (Table 4), days
delta_days: float = 1.0  # BPS neighbourhood: boundaries move by at most delta days
num_perturbations: int = 50  # taskifications drawn from the neighbourhood per series
l_min: int = 2  # stability profile: smallest task lag counted as long-range
alpha: float = 0.5  # profile distance weight of the plasticity term
beta: float = 0.5  # profile distance weight of the stability term
discrepancy: str = "quantile"  # task discrepancy d: quantile (W1, quantile form; exact
# for tasks < 8 x num_quantiles steps) | sliced (sliced W1) | exact (slow)
num_quantiles: int = 64  # quantile levels per task for the W1 quantile form
case_length: int = 3000  # length of the case-study streams, in steps
river_windows: list = [24, 48, 96]  # river occupancy task lengths, in 16-minute steps
river_delta: int = 6  # BPS neighbourhood for the river stream, in steps
# finetune, ER, EWC, LwF; also any clkit strategy, installed plugin or
# "package.module:ClassName"
methods: list = ["naive", "replay", "ewc", "lwf"]
# per-learner settings {learner: {keyword: value}}, e.g. {"ewc": {"ewc_lambda": 100.0},
# "replay": {"memory_size": 500}}; {}: the notebook's defaults (EWC lambda 1e6,
# chosen by measurement: notebooks/grids/01_taskification/ewc_lambda.yaml)
learner_kwargs: dict = {}
cl_series: int = 6  # series whose windows form the CL tasks
context_steps: int = 36  # forecaster context, 10-minute steps (paper: two days, 288)
stride: int = 64  # keep every stride-th target step as a window (paper: 1)
target_scaling: str = "task"  # target divisor: task (paper: per-task training max) |
# stream (each series' whole-stream max: one unit for every task)
split_order: str = "chronological"  # 80/10/10 inside a task: chronological | random
context_across_tasks: bool = False  # may a context reach into the previous task?
d_model: int = 8  # transformer width (paper: 32)
num_layers: int = 1  # transformer blocks (paper: 8)
num_heads: int = 2  # attention heads (paper: 4)
epochs: int = 8  # maximum epochs per task (early stopping on validation MSE)
patience: int = 3  # early-stopping patience in epochs (paper: 10)
lr_patience: int = 1  # epochs without improvement before LR x0.1 (paper: 5)
lr: float = 0.002  # AdamW learning rate (paper: 1e-4)
batch_size: int = 64  # mini-batch size (paper: 256; smaller: more steps per task)
cl_seeds: int = 7  # seeds per method and split, paired; 4 or more conclude (7: 80 %
# power for 2 sd at Holm over 4 methods x 2 adjacent splits)
torch_threads: int = 1  # torch CPU threads per CL run (1 is fastest here)
cl_workers: int = 2  # CL runs in parallel processes (one per core)
device: str = "auto"  # auto (CUDA if available, else CPU) | cpu | cuda | cuda:N | mps
precision: str = "fp32"  # fp32 | bf16 | fp16: autocast dtype (fp16 needs CUDA)
deterministic: bool = False  # PyTorch deterministic algorithms (reproducible, slower)
rehearse: bool = False  # the paper set on fabricated files, sizes cut (clkit.rehearsal)
# split (notebooks/grids/01_taskification/paper_split.yaml): train only these CL runs,
# "METHOD|SPLIT|SEED" (SEED: 0 .. cl_seeds - 1; Finetune's null control on every
# split takes cl_seeds ..); []: every run and every section
cl_runs: list = []
cl_from: str = ""  # merge: read the CL runs from this sweep folder's cases ("": train)
seed: int = 0  # seeds data generation, neighbourhood draws, model init, batch order

# %% [markdown]
# **Rehearsal.** `rehearse: true` runs this parameter set end to end on a fabricated
# CESNET-TimeSeries24 database written in cesnet-tszoo's own layout, read by the real
# loader, with sizes, counts and epochs cut by one rule (`clkit.taskification.rehearsal`);
# the transformer keeps its blocks, width and heads (its context, an input length, is
# cut). It checks that the paper's code paths run: its numbers describe fabricated data.

# %%
from IPython.display import Markdown, display

rh = None
if rehearse:
    from clkit.taskification import rehearsal

    rh = rehearsal.prepare(globals(), seed=seed)
    globals().update(rh.changes)
    display(Markdown(rh.note()), rh.table())

# %%
import pandas as pd
from clkit.progress import tqdm

import clkit.device
import clkit.taskification as tk
from clkit import stats
from clkit.taskification import budget as cl_budget, plots, report, split, tables, verdicts
from clkit.taskification.params import METHOD_LABELS, check_learner_settings, check_params
from clkit.plugins import split_learners
from clkit.data.user import is_user_path
from clkit.data.timeseries import load_river_stream
from clkit.models.transformer import TimeSeriesTransformer
from clkit.results import RunRecord

own_methods, user_methods = split_learners(
    methods, METHOD_LABELS, parameter="methods", notebook="01_taskification"
)
METHOD_LABELS = {**METHOD_LABELS, **{m: m for m in user_methods}}
P = check_params(
    dataset="cesnet" if is_user_path(dataset) else dataset,  # a file: checked on loading
    num_series=num_series, num_weeks=num_weeks, window_days=window_days,
    offset_days=offset_days, delta_days=delta_days, num_perturbations=num_perturbations,
    l_min=l_min, alpha=alpha, beta=beta, discrepancy=discrepancy,
    num_quantiles=num_quantiles, methods=own_methods, cl_series=cl_series,
    context_steps=context_steps, stride=stride, d_model=d_model, num_layers=num_layers,
    num_heads=num_heads, epochs=epochs, patience=patience, lr=lr, batch_size=batch_size,
    seed=seed, river_windows=river_windows, river_delta=river_delta,
    torch_threads=torch_threads, target_scaling=target_scaling, split_order=split_order,
    context_across_tasks=context_across_tasks, lr_patience=lr_patience,
    cl_seeds=cl_seeds, cl_workers=cl_workers,
)
learner_kwargs, settings = check_learner_settings(learner_kwargs, methods)
P.update(dataset=dataset, methods=methods, time_column=time_column,
         value_columns=value_columns, interval_minutes=interval_minutes,
         learner_kwargs=learner_kwargs, learner_settings=settings, device=device,
         precision=precision, deterministic=deterministic, rehearse=rehearse, cl_runs=cl_runs,
         cl_from=cl_from)
if cl_runs and cl_from:
    raise ValueError(f"cl_runs and cl_from: a case trains runs, a merge reads them; give one, got {cl_runs!r} "
                     f"and {cl_from!r}")
whole = not cl_runs  # a case of the split grid runs only its CL runs; a whole run (or merge) every section
record = RunRecord("01_taskification", params={**P, "case_length": case_length})
rd = clkit.device.setup(device, precision, deterministic)
print(rd.describe())
record.log(device=rd.record(), **({"rehearsal": rh.record()} if rh else {}))
DIST = dict(method=discrepancy, num_quantiles=num_quantiles, seed=seed)

# %% [markdown]
# ## 1. Case studies: where a boundary is fragile (Fig. 1)
#
# A taskification $\tau = (t_0, \dots, t_K)$, $t_0 < \dots < t_K$, cuts the stream into
# tasks $I_k = [t_{k-1}, t_k)$ with distributions $P_k$. With a discrepancy $d$ (here
# first-order Wasserstein) the **plasticity profile** $\Pi_{pl}^\tau$ is the empirical
# distribution of $d(P_k, P_{k+1})$ and the **stability profile** $\Pi_{st}^\tau$ that
# of $d(P_i, P_j)$ for $j - i \ge \ell_{min}$. Two taskifications are compared by
#
# $$D_{prof}(\tau, \sigma) = \left[\alpha\, D_{pl}(\tau,\sigma)^2
#   + \beta\, D_{st}(\tau,\sigma)^2\right]^{1/2},$$
#
# where $D_{pl}, D_{st}$ are distribution distances between the profiles (we use the
# exact 1-D W1), and $\mathrm{BPS}(\tau;\delta)$ is the mean of $D_{prof}(\tau, \sigma)$
# over taskifications $\sigma \in N_\delta(\tau)$ whose internal boundaries moved
# uniformly by at most $\delta$ (`tk.bps`). The three synthetic streams of Eqs. 3-5 each
# come with a taskification that has a boundary at the structure (*near*) and one whose
# boundaries avoid it (*far*). **Null BPS**: the near split on the same stream with its
# steps in a random order (`tk.null_stream`), the BPS that sampling noise alone gives.
#
# W1 between tasks uses the quantile form with `num_quantiles` levels, and switches to
# the exact W1 when a split's shortest task has fewer than 8 x `num_quantiles` steps: on
# short tasks the quantile form was off by 6-132 % on BPS in our measurements
# (`clkit.taskification.discrepancy`), on long ones by 0.3-3 %.

# %%
if whole:
    cases = tk.case_studies(case_length, seed=seed)
    case_rows, case_reports = report.case_study_table(cases, num_perturbations, seed)
    record.figure(plots.case_studies(cases, case_reports), "fig1_case_studies")
    record.log(case_studies=case_rows)
    rec_move = report.recurrence_move(case_rows)
    record.log(recurrence_component_change=rec_move)
    display(pd.DataFrame(case_rows).T.round(4))

# %% [markdown]
# ## 2. Data: a CESNET-TimeSeries24-shaped stream
#
# The paper uses the 100 densest IP addresses of CESNET-TimeSeries24 (40 weeks,
# 10-minute aggregation, 12 features, target `avg_duration`). `dataset="cesnet"` loads
# it through `cesnet-tszoo` (needs the downloaded database). The offline default is
# clkit's **synthetic** generator with the same shape and feature names: daily and
# weekly cycles, regime changes, short bursts and heavy-tailed noise. It is not real
# traffic; the numbers below describe the generator, and the paper's CESNET numbers are
# quoted for comparison only.

# %%
data, num_series, cl_series = report.load_data(
    dataset, num_series=num_series, cl_series=cl_series, num_weeks=num_weeks, seed=seed,
    time_column=time_column, value_columns=value_columns, interval_minutes=interval_minutes,
)
names, splits, shifted, delta = report.make_splits(
    data.length, data.interval_minutes, window_days, offset_days, delta_days
)
values, ti = data.values[:num_series], data.target_index
cl_selected = split.parse_runs(cl_runs, methods, names, cl_seeds)  # the CL runs this run trains or reads
record.log(
    data_source=data.source,
    num_tasks={n: t.num_tasks for n, t in splits.items()},
    exact_w1={n: tk.use_exact(t, discrepancy, num_quantiles) for n, t in splits.items()},
)
display(Markdown(
    f"**Data:** {data.source}; {num_series} series x {data.length} steps x "
    f"{len(data.features)} features; tasks per split: "
    + ", ".join(f"{n}: {t.num_tasks}" for n, t in splits.items())
))
day = tk.days_to_steps(1, data.interval_minutes)
record.figure(plots.stream(data, splits[names[0]].boundaries, day, names[0]), "stream")

# %% [markdown]
# ### Where this run computes, and what it will cost
#
# Only the continual forecasting of section 7 uses `device` (the transformer's training,
# its validation MSE after every epoch and the test MSE after every task, in `precision`);
# each run moves its windows there once. The case studies, W1 matrices, profiles, BPS
# and the no-learning baselines (sections 1-6 and 8) are NumPy analyses on the CPU on
# every device. The budget counts the CL trainings, their steps (an upper bound: early
# stopping ends most tasks sooner) and the windows evaluated, and prices them by timing
# a few real steps of the transformer on this run's device (`clkit.taskification.budget`).

# %%
def model_fn():  # the forecaster of section 7, built on the CPU under each run's seed
    return TimeSeriesTransformer(
        num_features=len(data.features), context=context_steps, d_model=d_model,
        num_layers=num_layers, num_heads=num_heads, target_index=ti,
    )


budget = cl_budget.cl_budget(
    splits, methods=methods, cl_seeds=cl_seeds, cl_series=cl_series, context=context_steps,
    stride=stride, context_across_tasks=context_across_tasks, epochs=epochs,
    batch_size=batch_size, model_fn=model_fn, num_features=len(data.features), device=rd,
    seed=seed, workers=rd.workers(cl_workers, fork=True), num_threads=torch_threads, settings=settings,
    analysed_bytes=values.size * 4, patience=patience, d_model=d_model, num_layers=num_layers,
    num_heads=num_heads, split_note=report.split_note(cl_selected, cl_from),
)
record.log(budget=budget.record())
display(Markdown(budget.text()))

# %% [markdown]
# ## 3. Task-to-task Wasserstein matrices and their comparison (Fig. 2)
#
# $D_{ij} = \frac1F \sum_f W_1(P_i^{(f)}, P_j^{(f)})$ on features standardised over the
# stream, computed from each task's quantile function
# $W_1 = \int_0^1 |F_i^{-1}(q) - F_j^{-1}(q)|\,dq$ (`tk.distance_matrix`; the stream is
# sorted once and every task reuses that sort). The matrices of different splits have
# different sizes; `tk.matrix_mse` upsamples them to a common size by bilinear
# interpolation on the time axis and reports their mean squared difference. Below: the
# matrices averaged over series.

# %%
if whole:
    mats = report.mean_matrices(values, splits, **DIST)
    mse_table = pd.DataFrame(tk.matrix_mse_table(mats), index=names, columns=names)
    record.figure(plots.wasserstein_matrices(mats, mse_table), "fig2_wasserstein_matrices")
    record.log(matrix_mse=mse_table.to_dict())
    display(mse_table.round(5))

# %% [markdown]
# ## 4. Profile distance between taskifications (Table 2)
#
# For each series, the profiles of every split and $D_{prof}$ (Eq. 2, $\alpha=$ `alpha`,
# $\beta=$ `beta`) for every pair; mean $\pm$ standard deviation over series.

# %%
if whole:
    dprof, table2 = report.profile_distance_table(values, splits, l_min, alpha, beta, **DIST)
    record.log(d_prof=dprof)
    display(table2)

# %% [markdown]
# ## 5. Plasticity, stability and BPS (Tables 3-4), beside the null stream
#
# For every series, `num_perturbations` taskifications from $N_\delta(\tau)$ ($\delta$ =
# `delta_days`); the rows are the means over the neighbourhood of $D_{pl}$
# ("plasticity"), $D_{st}$ ("stability") and $D_{prof}$ (BPS), then mean $\pm$ std over
# series. The shifted twin moves every boundary by `offset_days`.
#
# **Null BPS.** With $\delta$ fixed (one day), a shorter task has fewer steps, so moving
# its boundaries by up to a day changes its empirical distribution more *even when the
# stream has no structure at all*: BPS falls with task length on an i.i.d. stream too.
# The row "null BPS" is the BPS of the same split on the same series with their time
# steps shuffled (`tk.null_stream`: same values, no temporal structure); "BPS / null" is
# how far the stream's structure lifts the sensitivity above that floor. A shift of the
# boundaries changes nothing on an exchangeable stream, so one null row serves both
# tables.

# %%
bps_kw = dict(alpha=alpha, beta=beta, method=discrepancy, num_quantiles=num_quantiles)
if whole:
    bps = report.bps_tables(values, splits, shifted, delta, num_perturbations, seed,
                            l_min=l_min, **bps_kw)
    record.log(bps=bps["aligned"], bps_shifted=bps["shifted"], bps_null=bps["null"],
               bps_per_series={k: {n: r["bps"] for n, r in v.items()}
                               for k, v in bps["series"].items()})
    # Mean over the window lengths of this run, under keys that do not name a window, so the
    # rows of a sweep over window_days line up (clkit summary: bps_mean.aligned, ...).
    record.log(bps_mean=bps["bps_mean"])
    display(Markdown("**Table 3** (boundaries at 0, w, 2w, ...)"), bps["table3"])
    display(Markdown(f"**Table 4** (all boundaries shifted by {offset_days:g} days)"),
            bps["table4"])

# %%
if whole:
    fig = plots.bps_bars(bps["aligned"], bps["shifted"], bps["null"], offset_days)
    record.figure(fig, "tables3_4_bps")

# %% [markdown]
# ## 6. A real offline stream: room occupancy (river)
#
# `river` ships the room-occupancy sensor stream (temperature, humidity, light, CO2; one
# reading every 16 minutes; change points annotated by several people). The same
# analysis on real data: BPS of fixed-window splits of `river_windows` steps with
# $\delta$ = `river_delta`, beside the BPS of the same splits on the shuffled stream.

# %%
if whole:
    river = load_river_stream("occupancy")
    river_rows = report.river_bps(river.values[0], river.length, river_windows, river_delta,
                                  l_min, num_perturbations, seed, **bps_kw)
    record.log(river_source=river.source, river_bps=river_rows)
    display(Markdown(f"**Data:** {river.source}"))
    display(pd.DataFrame(river_rows).T.round(4))

# %% [markdown]
# ## 7. Continual forecasting under each taskification (Table 1)
#
# **Model.** A time-series transformer (`clkit.models.transformer`; paper: 12 features
# -> 32-d, 8 blocks, 4 heads, two days of context, next step). Each input window is
# standardised per feature over time, "following Ansari et al." (Chronos-2, 2025) as the
# paper does. The paper does not say how the forecast returns to the target's scale; a
# model that only sees standardised windows cannot know the series' level and does no
# better than predicting the training mean. We map the output back with the window's own
# statistics (reversible instance normalisation, Kim et al., ICLR 2022; location: the
# last observed target value as in NLinear, Zeng et al., AAAI 2023; scale: the window's
# standard deviation), so the network learns a correction to the last value.
#
# **Protocol.** Task after task with each strategy: AdamW, LR x0.1 after `lr_patience`
# stagnant epochs, early stopping on the task's validation MSE after `patience`. Inside
# each task the target steps are split 80/10/10 (`split_order`), contexts stay inside
# their task unless `context_across_tasks`, and the target (and the input's target
# channel) is divided by the series' maximum over the task's training steps
# (`target_scaling="task"`, the paper's choice). Each run trains on `device`: its windows
# move there once, batch orders come from CPU generators (the same on every device), and
# the host reads one validation MSE per epoch and one row of $M$ per task, nothing inside
# a step; `cl_workers` forked processes share the runs on the CPU of a machine without a
# GPU only (one process drives an accelerator, and autograd does not survive a fork on a
# machine that has one, even for a CPU run). $M_{i,j}$ is the test MSE $\times 10^3$ on task $j$ after task $i$, and
# with $T$ tasks
#
# $$\text{Average MSE} = \tfrac1T \textstyle\sum_j M_{T,j},\quad
# \mathrm{BWT} = \tfrac{1}{T-1}\textstyle\sum_{j<T} (M_{j,j} - M_{T,j}),$$
# $$\mathrm{Forgetting} = \tfrac{1}{T-1}\textstyle\sum_{j<T}
#   \big(M_{T,j} - \min_{k\in[j,T-1]} M_{k,j}\big),$$
#
# (`clkit.metrics` with `higher_is_better=False`), then the sample standard deviation of
# each across the taskifications for a fixed method. **Baselines** on the same test
# windows: *constant* (the task's training mean) and *persistence* (the last observed
# value), averaged over tasks like the average MSE.

# %%
cl_values = data.values[:cl_series]
cl_tasks, baselines = report.cl_tasks(
    cl_values, splits, context_steps, ti, stride=stride, target_scaling=target_scaling,
    split_order=split_order, context_across_tasks=context_across_tasks, seed=seed,
)
test_windows = {n: [len(t.test) for t in ts] for n, ts in cl_tasks.items()}
record.log(
    test_windows=test_windows,
    train_windows={n: [len(t.train) for t in ts] for n, ts in cl_tasks.items()},
    baselines={n: {k: b[k] for k in ("constant_mean", "persistence_mean")}
               for n, b in baselines.items()},
)
for n in names:
    print(f"{n}: test windows per task (all {cl_series} series) {test_windows[n]}")

if cl_from:  # the merge of a split run: the cases' error matrices, nothing trained
    cl = split.read_cl_runs(cl_from, cl_selected, record.params)
else:
    bar = tqdm(total=len(cl_selected), desc="CL runs (method, split, seed)")
    cl = report.run_cl(
        cl_tasks, model_fn, methods, cl_seeds, seed=seed, workers=rd.workers(cl_workers, fork=True),
        progress=bar.update, strategy_kwargs=settings, null_control=True, device=rd.device,
        precision=rd.precision, max_epochs=epochs, patience=patience, lr_patience=lr_patience,
        lr=lr, batch_size=batch_size, num_threads=torch_threads, only=cl_selected,
        checkpoint_dir=split.checkpoint_dir(cl_runs),  # a case killed at its wall time resumes from its last task
    )
    bar.close()
record.log(cl={f"{m}|{n}|{s}": {k: v for k, v in r.items() if k != "M"} | {"M": r["M"]}
               for (m, n, s), r in cl.items()})
if whole:
    cl_mean, cl_sd = report.cl_summary(cl, methods, names, cl_seeds)
    record.log(cl_mean={f"{m}|{n}": v for (m, n), v in cl_mean.items()},
               cl_seed_std={f"{m}|{n}": v for (m, n), v in cl_sd.items()})
    display(Markdown(f"**Table 1** (mean over {cl_seeds} seed(s); MSE x 10^3; the last two rows "
                     "learn nothing)"))
    display(report.table1(cl_mean, baselines, methods, names, METHOD_LABELS).round(2))

# %%
if methods and whole:
    fig = plots.cl_vs_baselines(cl_mean, cl_sd, baselines, methods, names, METHOD_LABELS,
                                cl_seeds)
    record.figure(fig, "cl_vs_baselines")
    fig = plots.cl_error_matrices(cl, methods[0], names, METHOD_LABELS[methods[0]])
    record.figure(fig, "cl_error_matrices")

# %% [markdown]
# ## 8. Separating the protocol from the learning
#
# Three choices shape the CL numbers before any learning: the target's divisor, the
# order of the 80/10/10 split, and whether contexts may cross task boundaries. The
# no-learning baselines show their effect directly, on every split. *Per-task max* is
# the paper's normalisation: each task's errors are measured in that task's own unit
# (its training maximum), so a task whose training part sits low (a short task inside
# one quiet regime) gets a small divisor and large scaled errors. *Stream max* divides
# every task of a series by one number, so errors of different splits share a unit. If
# the baselines already order the splits under per-task max but not under stream max,
# the CL table's ordering of splits is (at least partly) a property of the
# normalisation, not of continual learning. *Random split*: the test steps are spread
# over the task instead of being its last 10 % (contexts then overlap training windows).
# *Contexts across tasks*: a task keeps the targets of its first `context_steps` steps.
# The CL table above uses this run's settings (`target_scaling`, `split_order`,
# `context_across_tasks`).

# %%
if whole:
    target_only = cl_values[:, :, [ti]]  # the baselines need only the target channel
    proto, proto_log = report.protocol_table(target_only, splits, context_steps, stride, seed,
                                             cl_series)
    record.log(protocol=proto_log)
    lost = {n: context_steps / tk.days_to_steps(w, data.interval_minutes)
            for n, w in zip(names, window_days)}
    record.log(context_share_lost=lost)
    display(Markdown(
        "**No-learning baselines under each protocol** (average test MSE x 10^3 "
        f"over tasks; target steps per task and series at stride {stride}). "
        "Contexts inside tasks drop "
        + ", ".join(f"{100 * v:.0f} % of a {n} task" for n, v in lost.items())
        + " before stride."
    ))
    display(pd.DataFrame(proto).T.round(3))

# %% [markdown]
# ## 9. The paper's Tables 1-4, in the paper's layout
#
# The tables of sections 4, 5 and 7 again, laid out as the paper prints them on
# CESNET-TimeSeries24 (its rows, columns, labels, units and rounding; `clkit.taskification.tables`),
# with clkit's reference rows (no-learning baselines, null stream) below the paper's. Every cell
# is this run's own number (the paper's are in its Sec. 5, not copied here). Each table's note
# says where this run's data or settings are not the paper's (the synthetic default, a rehearsal,
# fewer series, other window lengths or a smaller transformer), and what the table cannot show.

# %%
if whole:
    paper_kw = dict(source=data.source, rehearsal=rehearse)
    paper_tables = {}

# %% [markdown]
# **The paper's Table 1** (continual forecasting: average MSE, BWT and forgetting per
# taskification and their standard deviation across taskifications, MSE x 10^3). When this
# run's data are not the paper's, the note under the table says so.

# %%
if whole:
    paper_tables["table1"] = tables.table1(
        cl_mean, baselines, methods, names, METHOD_LABELS, cl_seeds=cl_seeds,
        diffs=tables.differences(P, 1, **paper_kw),
    )
    display(Markdown(paper_tables["table1"].note), paper_tables["table1"].beside)

# %% [markdown]
# **The paper's Table 2** ($D_{prof}$ between taskification pairs, mean $\pm$ sd across
# series). When this run's data are not the paper's, the note under the table says so.

# %%
if whole:
    paper_tables["table2"] = tables.table2(dprof, names, num_series=num_series,
                                           diffs=tables.differences(P, 2, **paper_kw))
    display(Markdown(paper_tables["table2"].note), paper_tables["table2"].beside)

# %% [markdown]
# **The paper's Table 3** (plasticity, stability and BPS, mean $\pm$ sd across series, the
# boundaries at 0, w, 2w, ...). When this run's data are not the paper's, the note under the
# table says so.

# %%
if whole:
    paper_tables["table3"] = tables.bps_table(bps["aligned"], names, null=bps["null"], num_series=num_series,
                                              diffs=tables.differences(P, 3, **paper_kw))
    display(Markdown(paper_tables["table3"].note), paper_tables["table3"].beside)

# %% [markdown]
# **The paper's Table 4** (the same after shifting every boundary by `offset_days`). When this
# run's data are not the paper's, the note under the table says so.

# %%
if whole:
    paper_tables["table4"] = tables.bps_table(bps["shifted"], names, null=bps["null"], offset_days=offset_days,
                                              num_series=num_series, diffs=tables.differences(P, 4, **paper_kw))
    display(Markdown(paper_tables["table4"].note), paper_tables["table4"].beside)
    record.log(paper_tables={k: t.record() for k, t in paper_tables.items()})

# %% [markdown]
# ## 10. Verdicts: which differences the rule supports
#
# One rule for every comparison (`clkit.stats.paired`): the paired t-test on the
# differences $d_i = a_i - b_i$, $t = \bar d / (s_d/\sqrt n)$ with $n-1$ degrees of freedom,
# two-sided at $\alpha = 0.05$ (the exact sign-flip test where every pair differs by the same
# amount); a family judged at once is Holm-corrected (`stats.holm`), and each row's interval is
# at the level its decision uses, so it excludes 0 exactly when the row differs.
#
# **Primary** (the paper's two claims; the only rows that can be findings): *shorter tasks are
# more fragile* -- BPS of adjacent splits (9d − 30d, 30d − 44d), paired over series (the same
# values cut two ways), Holm over 2: with 6 series the rule has 80 % power for an effect of two
# standard deviations of the differences; and *the CL metrics differ across splits* -- each
# method's average MSE on adjacent splits, paired over seeds (seed $s$ fixes initialisation and
# batch order for every method and split), Holm over 8: 7 seeds give the same power.
# **Exploratory** (shown with their intervals, never findings): BPS of the other split pairs and
# every pair's BPS / null (the ranking beside the null stream, once the mechanical part is
# divided out); every (method, split) cell against the better no-learning baseline; EWC against
# Finetune.
#
# **Controls**, each judged alone at $\alpha$ (outside the families, so each can fail): BPS of
# the first split on two independent shuffles of every series (same values, random time order
# twice: truly no difference); Finetune against Finetune under the next `cl_seeds` seeds (only
# initialisation and batch order redrawn), on average MSE and on forgetting; on the synthetic
# stream, whose generator plants regime changes and cycles, BPS on the stream against its
# shuffle must come out "stream more fragile" (the oracle). **Pipeline checks** (true by
# construction unless the pipeline is broken): the null stream holds the stream's values in
# another order, and the CL runs pair by seed with complete error matrices. A failed control or
# check stops the findings; a row with fewer than 4 pairs is never read as one.

# %%
if whole:
    split_vs = verdicts.split_verdicts(
        {n: r["bps"] for n, r in bps["series"]["aligned"].items()},
        {n: r["bps"] for n, r in bps["series"]["null"].items()},
        bps["series"]["null_again"][names[0]]["bps"], oracle=dataset == "synthetic",
    )
    cl_vs = verdicts.cl_verdicts(cl, baselines, methods, names, METHOD_LABELS, cl_seeds)
    all_vs = split_vs + cl_vs
    checks = verdicts.pipeline_checks(values, seed, cl, cl_seeds)
    record.log(verdicts=[v.to_dict() for v in all_vs], pipeline_checks=checks,
               controls_hold=stats.controls_hold(all_vs)[0] and all(c["holds"] for c in checks))
    display(Markdown(report.checks_line(checks)))
    display(stats.verdict_table(all_vs))

# %% [markdown]
# ## 11. What this run shows

# %%
if whole:
    text, logs = report.closing_text(
        source=data.source, num_series=num_series, names=names, offset_days=offset_days,
        bps=bps, case_rows=case_rows, rec_move=rec_move, mse_table=mse_table, methods=methods,
        labels=METHOD_LABELS, cl_mean=cl_mean, cl_sd=cl_sd, cl_seeds=cl_seeds,
        baselines=baselines, proto=proto, river_rows=river_rows, verdicts=all_vs,
        settings=settings, checks=checks, cl=cl,
    )
    text = f"{rh.note()}\n\n{text}" if rh else text
    record.log(summary=text, **logs)
    display(Markdown(text))

# %%
record.save()
