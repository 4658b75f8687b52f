# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Temporal taskification: how splitting a stream into tasks changes the benchmark
#
# *Filat, Burceanu, Hussain & Kalogiannis, "Temporal Taskification in Streaming Continual
# Learning: A Source of Evaluation Instability" (arXiv 2604.21930, 2026).*
#
# **The paper's claim.** Streaming continual learning turns one continuous stream into a
# sequence of tasks by cutting it in time. That cut is not neutral: different valid splits of the
# same stream induce different task distributions and therefore different CL regimes, and the
# measured forecasting error, forgetting and backward transfer change with them. The paper
# describes a taskification by two task-count-invariant *profiles* (the distribution of
# distances between adjacent tasks, and between distant tasks), compares taskifications by a
# *profile distance*, and measures how fragile a split is by the *Boundary-Profile Sensitivity*
# (BPS): the mean profile distance to splits whose boundaries moved by at most $\delta$. On
# CESNET-TimeSeries24 it finds that 9-day tasks are more fragile than 30- and 44-day tasks, and
# that the CL metrics differ strongly across the three splits.
#
# This notebook reproduces the pipeline: case studies of fragile boundaries (Fig. 1), task-to-task
# Wasserstein matrices (Fig. 2), the profile distance (Table 2), plasticity / stability / BPS and
# their shifted twin (Tables 3-4), a real offline stream, and the CL table (Table 1).
#
# Run it headless: `clkit run 01_taskification --params smoke|default|paper [-p NAME VALUE]`.

# %% tags=["parameters"]
dataset: str = "synthetic"  # main stream: synthetic (CESNET-shaped generator, offline) | cesnet (CESNET-TimeSeries24 via cesnet-tszoo)
# user stream (dataset: PATH.csv or .parquet): time column ("": one step per row)
time_column: str = ""
value_columns: list = []  # user stream: feature columns ([]: every numeric column)
# user stream: minutes per step (0: from the time column, else 1); 1440 makes every
# *_days value below count steps
interval_minutes: float = 0.0
num_series: int = 10  # series (IP addresses) analysed for profiles and BPS
num_weeks: int = 40  # synthetic stream length in weeks (CESNET-TimeSeries24: 40)
window_days: list = [9, 30, 44]  # task lengths of the fixed-window taskifications, in days
offset_days: float = 2.0  # shift of all boundaries for the shifted twin (Table 4), in days
delta_days: float = 1.0  # BPS neighbourhood: each internal boundary moves by at most delta, in days
num_perturbations: int = 100  # taskifications drawn from the neighbourhood per series
l_min: int = 2  # stability profile: smallest task lag counted as long-range
alpha: float = 0.5  # profile distance weight of the plasticity term
beta: float = 0.5  # profile distance weight of the stability term
discrepancy: str = "quantile"  # task discrepancy d: quantile (per-feature W1, quantile form) | sliced (sliced W1) | exact (POT per pair, slow)
num_quantiles: int = 64  # quantile levels per task for the W1 quantile form
case_length: int = 3000  # length of the case-study streams, in steps
river_windows: list = [24, 48, 96]  # task lengths for the real river occupancy stream, in 16-minute steps
river_delta: int = 6  # BPS neighbourhood for the river stream, in steps
# CL strategies: naive (finetune), replay (ER), ewc, lwf; also any clkit strategy,
# installed plugin or "package.module:ClassName"
methods: list = ["naive", "replay", "ewc", "lwf"]
cl_series: int = 4  # series whose windows form the CL tasks
context_steps: int = 288  # forecaster context, in 10-minute steps (paper: two days, 288)
stride: int = 6  # keep every stride-th target step as a training window
d_model: int = 32  # transformer width (paper: 32)
num_layers: int = 8  # transformer blocks (paper: 8)
num_heads: int = 4  # attention heads (paper: 4)
epochs: int = 20  # maximum epochs per task (early stopping on validation MSE)
patience: int = 10  # early-stopping patience in epochs (paper: 10)
lr: float = 0.0001  # AdamW learning rate (paper: 1e-4)
batch_size: int = 256  # mini-batch size (paper: 256)
torch_threads: int = 1  # torch CPU threads for CL training (1 is fastest for small models; raise for big ones)
seed: int = 0  # one seed for data generation, neighbourhood draws, model initialisation and batch order

# %%
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
from IPython.display import Markdown, display
from tqdm.auto import tqdm

import clkit.taskification as tk
from clkit.taskification.forecasting import continual_forecasting, make_forecast_tasks, regression_cl_metrics
from clkit.taskification.params import METHOD_LABELS, check_params
from clkit.plugins import split_learners
from clkit.data.user import is_user_path, load_stream_table
from clkit.data.timeseries import load_cesnet_timeseries24, load_river_stream, synthetic_network_traffic
from clkit.models.transformer import TimeSeriesTransformer
from clkit.plot import matrix_heatmap
from clkit.results import RunRecord

own_methods, user_methods = split_learners(methods, METHOD_LABELS, parameter="methods",
                                           notebook="01_taskification")
METHOD_LABELS = {**METHOD_LABELS, **{m: m for m in user_methods}}
# a user file is checked when it is loaded (section 2)
P = check_params(dataset="cesnet" if is_user_path(dataset) else dataset,
                 num_series=num_series, num_weeks=num_weeks, window_days=window_days,
                 offset_days=offset_days, delta_days=delta_days, num_perturbations=num_perturbations, l_min=l_min,
                 alpha=alpha, beta=beta, discrepancy=discrepancy,
                 num_quantiles=num_quantiles,
                 methods=own_methods,
                 cl_series=cl_series, context_steps=context_steps, stride=stride, d_model=d_model,
                 num_layers=num_layers, num_heads=num_heads, epochs=epochs, patience=patience, lr=lr,
                 batch_size=batch_size, seed=seed, river_windows=river_windows, river_delta=river_delta,
                 torch_threads=torch_threads)
P.update(dataset=dataset, methods=methods, time_column=time_column,
         value_columns=value_columns, interval_minutes=interval_minutes)
record = RunRecord("01_taskification", params={**P, "case_length": case_length})
DIST = dict(method=discrepancy, num_quantiles=num_quantiles, seed=seed)

# %% [markdown]
# ## 1. Case studies: where a boundary is fragile (Fig. 1)
#
# A taskification $\tau = (t_0, \dots, t_K)$, $t_0 < \dots < t_K$, cuts the stream into tasks
# $I_k = [t_{k-1}, t_k)$ with distributions $P_k$. With a discrepancy $d$ (here first-order
# Wasserstein) the **plasticity profile** $\Pi_{pl}^\tau$ is the empirical distribution of
# $d(P_k, P_{k+1})$ and the **stability profile** $\Pi_{st}^\tau$ that of $d(P_i, P_j)$ for
# $j - i \ge \ell_{min}$. Two taskifications are compared by
#
# $$D_{prof}(\tau, \sigma) = \left[\alpha\, D_{pl}(\tau,\sigma)^2 + \beta\, D_{st}(\tau,\sigma)^2\right]^{1/2},$$
#
# where $D_{pl}, D_{st}$ are distribution distances between the profiles (we use the exact 1-D
# W1), and $\mathrm{BPS}(\tau;\delta)$ is the mean of $D_{prof}(\tau, \sigma)$ over taskifications
# $\sigma \in N_\delta(\tau)$ whose internal boundaries moved uniformly by at most $\delta$
# (`tk.bps`). The three synthetic streams of Eqs. 3-5 each come with a taskification that has a
# boundary at the structure (*near*) and one whose boundaries avoid it (*far*).

# %%
cases = tk.case_studies(case_length, seed=seed)
case_rows = {}
fig, axes = plt.subplots(3, 2, figsize=(12, 8), gridspec_kw=dict(width_ratios=[4, 1]))
for row, (name, cs) in enumerate(cases.items()):
    near = tk.bps_report(cs.stream, cs.near, cs.delta, num_perturbations, seed)
    far = tk.bps_report(cs.stream, cs.far, cs.delta, num_perturbations, seed)
    case_rows[name] = {"near BPS": near.bps, "far BPS": far.bps, "near plasticity": near.plasticity,
                       "near stability": near.stability, "far plasticity": far.plasticity,
                       "far stability": far.stability}
    ax = axes[row, 0]
    ax.plot(cs.stream, lw=0.5, color="grey")
    for b in cs.near.boundaries:
        ax.axvspan(b - cs.delta, b + cs.delta, color="tab:red", alpha=0.15, lw=0)
        ax.axvline(b, color="tab:red", lw=0.8)
    for b in cs.far.boundaries:
        ax.axvline(b, color="tab:blue", lw=0.8, ls="--")
    ax.set_title(f"{name}: near boundaries (red, shaded $\\pm\\delta$) vs far (blue dashed)")
    axes[row, 1].bar(["near", "far"], [near.bps, far.bps], color=["tab:red", "tab:blue"])
    axes[row, 1].set_title("BPS")
axes[-1, 0].set_xlabel("time step")
fig.tight_layout()
record.figure(fig, "fig1_case_studies")
case_table = pd.DataFrame(case_rows).T
record.log(case_studies=case_rows)
case_table.round(4)

# %% [markdown]
# ## 2. Data: a CESNET-TimeSeries24-shaped stream
#
# The paper uses the 100 densest IP addresses of CESNET-TimeSeries24 (40 weeks, 10-minute
# aggregation, 12 features, target `avg_duration`). `dataset="cesnet"` loads it through
# `cesnet-tszoo` (needs the downloaded database). The offline default is clkit's **synthetic**
# generator with the same shape and feature names: daily and weekly cycles, regime changes,
# short bursts and heavy-tailed noise. It is not real traffic; the numbers below describe the
# generator, and the paper's CESNET numbers are quoted for comparison only.

# %%
if is_user_path(dataset):
    data = load_stream_table(dataset, time_column=time_column or None,
                             value_columns=value_columns or None,
                             interval_minutes=interval_minutes or None)
elif dataset == "cesnet":
    data = load_cesnet_timeseries24(num_series)
else:
    data = synthetic_network_traffic(num_series=num_series, num_weeks=num_weeks, seed=seed)
steps = lambda days: tk.days_to_steps(days, data.interval_minutes)  # noqa: E731
delta = steps(delta_days)
names = [f"{w:g}d" for w in window_days]
splits = {n: tk.fixed_windows(data.length, steps(w)) for n, w in zip(names, window_days)}
shifted = {n: tk.fixed_windows(data.length, steps(w), offset=steps(offset_days)) for n, w in zip(names, window_days)}
for n, tau in splits.items():
    tk.check_delta(tau, delta)
    tk.check_delta(shifted[n], delta)
record.log(data_source=data.source, num_tasks={n: t.num_tasks for n, t in splits.items()})
display(Markdown(f"**Data:** {data.source}; {data.num_series} series x {data.length} steps x "
                 f"{len(data.features)} features; tasks per split: "
                 + ", ".join(f"{n}: {t.num_tasks}" for n, t in splits.items())))

fig, ax = plt.subplots(figsize=(12, 3))
ti = data.target_index
ax.plot(np.arange(data.length) / steps(1), data.values[0, :, ti], lw=0.3)
for b in splits[names[0]].boundaries:
    ax.axvline(b / steps(1), color="tab:red", lw=0.5)
ax.set(xlabel="day", ylabel=data.target, title=f"series 0, {data.target}, with the {names[0]} boundaries")
record.figure(fig, "stream")

# %% [markdown]
# ## 3. Task-to-task Wasserstein matrices and their comparison (Fig. 2)
#
# $D_{ij} = \frac1F \sum_f W_1(P_i^{(f)}, P_j^{(f)})$ on features standardised over the stream,
# computed from each task's quantile function $W_1 = \int_0^1 |F_i^{-1}(q) - F_j^{-1}(q)|\,dq$
# (`tk.distance_matrix`; the stream is sorted once and every task reuses that sort). The
# matrices of different splits have different sizes; `tk.matrix_mse` upsamples them to a common
# size by bilinear interpolation on the time axis and reports their mean squared difference.
# Below: the matrices averaged over series.

# %%
mats = {n: np.mean([tk.distance_matrix(data.values[s], tau, **DIST) for s in range(data.num_series)], axis=0)
        for n, tau in splits.items()}
mse_table = pd.DataFrame(tk.matrix_mse_table(mats), index=names, columns=names)
size = max(m.shape[0] for m in mats.values())
fig, axes = plt.subplots(2, len(names), figsize=(4.2 * len(names), 8), squeeze=False)
for c, n in enumerate(names):
    matrix_heatmap(mats[n], ax=axes[0, c], title=f"{n}: W1 between tasks", xlabel="task", ylabel="task",
                   annot=False)
    a, b = names[c], names[(c + 1) % len(names)]
    diff = np.abs(tk.upsample_matrix(mats[a], size) - tk.upsample_matrix(mats[b], size))
    matrix_heatmap(diff, ax=axes[1, c], annot=False, xlabel="", ylabel="",
                   title=f"|{a} - {b}| upsampled, MSE={mse_table.loc[a, b]:.4f}")
fig.tight_layout()
record.figure(fig, "fig2_wasserstein_matrices")
record.log(matrix_mse=mse_table.to_dict())
mse_table.round(5)

# %% [markdown]
# ## 4. Profile distance between taskifications (Table 2)
#
# For each series, the profiles of every split and $D_{prof}$ (Eq. 2, $\alpha=$ `alpha`,
# $\beta=$ `beta`) for every pair; mean $\pm$ standard deviation over series.

# %%
profiles = {n: [tk.taskification_profile(data.values[s], tau, l_min, **DIST) for s in range(data.num_series)]
            for n, tau in splits.items()}
dprof = {}
table2 = pd.DataFrame("", index=names, columns=names)
for a in names:
    for b in names:
        if a != b:
            v = np.array([tk.profile_distance(pa, pb, alpha, beta) for pa, pb in zip(profiles[a], profiles[b])])
            dprof[f"{a}|{b}"] = {"mean": v.mean(), "std": v.std(ddof=1) if v.size > 1 else 0.0}
            table2.loc[a, b] = f"{v.mean():.3f} ± {dprof[f'{a}|{b}']['std']:.3f}"
record.log(d_prof=dprof)
table2

# %% [markdown]
# ## 5. Plasticity, stability and BPS (Tables 3-4)
#
# For every series, `num_perturbations` taskifications from $N_\delta(\tau)$ ($\delta$ =
# `delta_days`); the rows are the means over the neighbourhood of $D_{pl}$ ("plasticity"),
# $D_{st}$ ("stability") and $D_{prof}$ (BPS), then mean $\pm$ std over series. The shifted twin
# moves every boundary by `offset_days`.

# %%
def bps_table(taus):
    res, cells = {}, {}
    for n, tau in tqdm(taus.items(), desc="BPS"):
        r = tk.bps_over_series(data.values, tau, delta, num_perturbations, seed, l_min=l_min, alpha=alpha,
                               beta=beta, method=discrepancy, num_quantiles=num_quantiles)
        res[n] = {k: r[f"{k}_mean"] for k in ("plasticity", "stability", "bps")}
        res[n].update({f"{k}_std": r[f"{k}_std"] for k in ("plasticity", "stability", "bps")})
        cells[n] = {k.capitalize() if k != "bps" else "BPS": f"{r[f'{k}_mean']:.4f} ± {r[f'{k}_std']:.4f}"
                    for k in ("plasticity", "stability", "bps")}
    return res, pd.DataFrame(cells)


table3_res, table3 = bps_table(splits)
table4_res, table4 = bps_table(shifted)
record.log(bps=table3_res, bps_shifted=table4_res)
# Mean over the window lengths of this run, under keys that do not name a window, so the rows of a
# sweep over window_days line up (clkit summary: bps_mean.aligned, ...).
record.log(bps_mean={"aligned": float(np.mean([r["bps"] for r in table3_res.values()])),
                     "shifted": float(np.mean([r["bps"] for r in table4_res.values()]))})
display(Markdown("**Table 3** (boundaries at 0, w, 2w, ...)"), table3)
display(Markdown(f"**Table 4** (all boundaries shifted by {offset_days:g} days)"), table4)

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.5), sharey=True)
for ax, (title, res) in zip(axes, [("aligned", table3_res), (f"shifted {offset_days:g} d", table4_res)]):
    x = np.arange(len(names))
    for i, k in enumerate(["plasticity", "stability", "bps"]):
        ax.bar(x + (i - 1) * 0.27, [res[n][k] for n in names], 0.27, yerr=[res[n][f"{k}_std"] for n in names],
               label=k if k != "bps" else "BPS", capsize=2)
    ax.set_xticks(x, names)
    ax.set_title(title)
axes[0].legend()
axes[0].set_ylabel("mean over series")
record.figure(fig, "tables3_4_bps")

# %% [markdown]
# ## 6. A real offline stream: room occupancy (river)
#
# `river` ships the room-occupancy sensor stream (temperature, humidity, light, CO2; one
# reading every 16 minutes; change points annotated by several people). The same analysis on
# real data: BPS of fixed-window splits of `river_windows` steps with $\delta$ = `river_delta`.

# %%
river = load_river_stream("occupancy")
river_rows = {}
for w in river_windows:
    tau = tk.fixed_windows(river.length, w)
    if tau.num_tasks - 1 < l_min:
        continue
    r = tk.bps_report(river.values[0], tau, river_delta, num_perturbations, seed, l_min=l_min, alpha=alpha,
                      beta=beta, method=discrepancy, num_quantiles=num_quantiles)
    river_rows[f"{w} steps"] = {"tasks": tau.num_tasks, "plasticity": r.plasticity, "stability": r.stability,
                                "BPS": r.bps}
record.log(river_source=river.source, river_bps=river_rows)
display(Markdown(f"**Data:** {river.source}"))
pd.DataFrame(river_rows).T.round(4)

# %% [markdown]
# ## 7. Continual forecasting under each taskification (Table 1)
#
# A time-series transformer (`clkit.models.transformer`; paper: 12 features -> 32-d, 8 blocks,
# 4 heads, two days of context, next step, per-window feature standardisation) is trained task
# after task with each strategy, AdamW, LR x0.1 after 5 stagnant epochs and early stopping on
# the task's validation MSE. Inside each task the target steps are split 80/10/10 in time order
# and the target is divided by the series' maximum over the task's training steps.
# $M_{i,j}$ is the test MSE $\times 10^3$ on task $j$ after task $i$, and with $T$ tasks
#
# $$\text{Average MSE} = \tfrac1T \textstyle\sum_j M_{T,j},\quad
# \mathrm{BWT} = \tfrac{1}{T-1}\textstyle\sum_{j<T} (M_{j,j} - M_{T,j}),\quad
# \mathrm{Forgetting} = \tfrac{1}{T-1}\textstyle\sum_{j<T} \big(M_{T,j} - \min_{k\in[j,T-1]} M_{k,j}\big),$$
#
# (`clkit.metrics` with `higher_is_better=False`), then the sample standard deviation of each
# across the taskifications for a fixed method.

# %%
cl_values = data.values[:cl_series]
cl_tasks = {n: make_forecast_tasks(cl_values, tau, context_steps, data.target_index, stride=stride)
            for n, tau in splits.items()}


def model_fn():
    return TimeSeriesTransformer(num_features=len(data.features), context=context_steps, d_model=d_model,
                                 num_layers=num_layers, num_heads=num_heads)


cl = {}
bar = tqdm(total=len(methods) * sum(len(t) for t in cl_tasks.values()), desc="CL training (tasks)")
for m in methods:
    for n in names:
        M = continual_forecasting(cl_tasks[n], model_fn, m, max_epochs=epochs, patience=patience, lr=lr,
                                  batch_size=batch_size, seed=seed, num_threads=torch_threads, progress=bar.update)
        cl[(m, n)] = {"M": M, **regression_cl_metrics(M)}
bar.close()
rows = {}
for m in methods:
    row = {}
    for key, label in [("avg_mse", "Avg MSE"), ("bwt", "BWT"), ("forgetting", "Forgetting")]:
        vals = np.array([cl[(m, n)][key] for n in names])
        row.update({(label, n): v for n, v in zip(names, vals)})
        row[("Std. across taskifications", label)] = vals.std(ddof=1) if len(vals) > 1 else 0.0
    rows[METHOD_LABELS[m]] = row
table1 = pd.DataFrame(rows).T
record.log(cl={f"{m}|{n}": {k: v for k, v in r.items() if k != "M"} | {"M": r["M"]} for (m, n), r in cl.items()})
table1.round(2)

# %%
if methods:
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.8), squeeze=False)
    for ax, n in zip(axes[0], names):
        matrix_heatmap(cl[(methods[0], n)]["M"], ax=ax, title=f"{METHOD_LABELS[methods[0]]}, {n}: M (MSE x1e3)",
                       annot=cl[(methods[0], n)]["M"].shape[0] <= 8)
    fig.tight_layout()
    record.figure(fig, "cl_error_matrices")

# %% [markdown]
# ## 8. What this run shows

# %%
order = sorted(names, key=lambda n: -table3_res[n]["bps"])
order_s = sorted(names, key=lambda n: -table4_res[n]["bps"])
near_wins = [n for n, r in case_rows.items() if r["near BPS"] > r["far BPS"]]
pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
closest = min(pairs, key=lambda p: mse_table.loc[p[0], p[1]]) if pairs else None
text = (f"On {data.source} ({data.num_series} series), BPS ranks the splits {' > '.join(order)} "
        f"(aligned) and {' > '.join(order_s)} (shifted by {offset_days:g} days); the paper finds "
        f"9d > 30d > 44d for both on CESNET-TimeSeries24. "
        f"The shortest split {'is' if order[0] == names[0] else 'is not'} the most fragile here. "
        f"In the case studies, the boundary placed at the structure has the higher BPS in "
        f"{len(near_wins)} of {len(case_rows)} streams ({', '.join(near_wins) or 'none'}). ")
if closest:
    text += (f"The most similar task-to-task matrices (smallest upsampled MSE) are {closest[0]} and "
             f"{closest[1]}. ")
if methods and len(names) > 1:
    spread = {METHOD_LABELS[m]: table1.loc[METHOD_LABELS[m], ("Std. across taskifications", "Avg MSE")]
              for m in methods}
    text += ("Changing only the taskification moves the average MSE of every method: its standard deviation "
             "across splits is " + ", ".join(f"{k} {v:.2f}" for k, v in spread.items()) + " (MSE x10^3 units). ")
    best = {METHOD_LABELS[m]: min(names, key=lambda n: cl[(m, n)]["avg_mse"]) for m in methods}
    worst = {METHOD_LABELS[m]: max(names, key=lambda n: cl[(m, n)]["avg_mse"]) for m in methods}
    text += ("The lowest average MSE comes from the "
             + ", ".join(f"{n} split for {k}" for k, n in best.items()) + "; the highest from the "
             + ", ".join(f"{n} split for {k}" for k, n in worst.items())
             + " (the paper: 30d lowest and 44d highest for all four methods on CESNET). ")
text += ("On the real occupancy stream, BPS per window length is "
         + ", ".join(f"{k}: {v['BPS']:.3f}" for k, v in river_rows.items()) + ". " if river_rows else "")
text += ("The conclusion the paper draws, that benchmark numbers depend on how the stream is cut, holds "
         "whenever these spreads are large compared with the differences between methods.")
record.log(summary=text, bps_order=order, bps_order_shifted=order_s)
display(Markdown(text))

# %%
record.save()
