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
# # Bring your runs: metrics and verdicts on results from any trainer
#
# **The problem.** Most continual-learning results are trained in Avalanche, mammoth, PyCIL or a
# lab's own loop, and compared by their frameworks' summary numbers over one run or a few. Two
# things go wrong there. The summary numbers are not always the metric their name suggests
# (an "average accuracy" is often the *average incremental* accuracy, not the final one), and a
# difference between two methods over three seeds says nothing until it is compared with the
# difference between two sets of seeds of the *same* method.
#
# **What this notebook does.** It reads many runs (methods × seeds, optionally × class orders
# × taskifications) as accuracy matrices, recomputes the metrics from the matrices with
# `clkit.metrics`, lists where the framework's own numbers disagree, and decides the
# comparisons you name with `clkit.stats` — the rule every notebook of clkit uses — beside a
# **null control** (the reference method against itself on other seeds: must come out "no
# difference") and an **oracle control** (a planted effect on your own runs: must be found).
# It ends with a seed budget for your next study. The command `clkit compare` does the same
# without a notebook (docs/compare.md).
#
# Run it headless: `clkit run 06_your_runs --params smoke|default [-p runs PATH]`.

# %% tags=["parameters"]
# Parameters: edit a value, then Run All. Headless: clkit run 06 -p NAME VALUE
# runs: example (runs shipped with clkit: 4 methods x 8 seeds on real digits) or
# PATH: a folder with runs.csv / runs.yaml, a long CSV, a mammoth / PyCIL log
runs: str = "example"
reference: str = "naive"  # every method against this one; also the controls' method
compare: list = []  # or name comparisons "A:B" (A - B), e.g. ["replay:naive"]
metric: str = "acc"  # primary metric: acc | acc_all_seen | bwt | fwt | forgetting
percent: bool = False  # scores are percentages 0-100 (divided by 100)
target_effect: float = 0.01  # seed budget: pairs to detect it, 0.01 is one point
tolerance: float = 0.001  # reported numbers further than this from clkit's are listed
oracle_shift: float = 0.1  # oracle: share of the final row's error removed (0: none)

# %%
from IPython.display import Markdown, display
import matplotlib.pyplot as plt

import clkit.compare as cmp
import clkit.stats as stats
from clkit.compare import params as cparams, plots as cplots
from clkit.results import RunRecord

P = cparams.check_params(runs=runs, reference=reference, compare=compare, metric=metric,
                         percent=percent, target_effect=target_effect, tolerance=tolerance,
                         oracle_shift=oracle_shift)
record = RunRecord("06_your_runs", params=P)

# %% [markdown]
# ## The runs
#
# Each run is an **accuracy matrix** $R$ with $T$ rows and $T$ columns: $R_{i,j}$ is the
# accuracy on task $j$ after training task $i$ (cells above the diagonal — tasks not trained
# yet — may be missing). Every run read is listed with what was used from it; nothing is
# dropped silently, and runs with different task counts, a method missing a seed another method
# has, duplicated seeds or scores outside $[0, 1]$ are refused with an error naming the file,
# the run and the field.

# %%
read = cmp.read_runs(cparams.resolve_runs(runs), percent=percent)
display(Markdown(cparams.data_note(runs, read)))
record.log(data_source=cparams.data_label(runs), num_runs=len(read), methods=read.methods)
read.listing().drop(columns=["source"])

# %% [markdown]
# ## The metrics, recomputed from $R$
#
# | metric | formula | clkit |
# |---|---|---|
# | ACC (final average accuracy) | $\frac1T \sum_{j} R_{T-1,j}$ | `clkit.metrics.average_accuracy(R)` |
# | ACC (all seen) | $\frac{2}{T(T+1)} \sum_{j \le i} R_{i,j}$, every cell trained so far | `average_accuracy(R, mode="all_seen")` |
# | BWT (backward transfer) | $\frac{1}{T-1}\sum_{j<T-1} (R_{T-1,j} - R_{j,j})$ | `backward_transfer(R)` |
# | forgetting | $\frac{1}{T-1}\sum_{j<T-1} \max_{i<T-1} R_{i,j} - R_{T-1,j}$ | `forgetting(R)` |
# | FWT (forward transfer) | needs the cells above the diagonal | `forward_transfer(R, mode="diaz_rodriguez")` |
#
# A framework's own summary numbers (manifest columns `reported_acc`, ...) are never used:
# they are compared with the recomputed ones, and every disagreement beyond `tolerance` is listed.
# The example runs' `reported_acc` is the *average incremental accuracy*
# $\frac1T \sum_{i} \frac{1}{i+1}\sum_{j \le i} R_{i,j}$ (the mean over steps of the accuracy on
# the tasks seen so far), which many trainers print as their "average accuracy": it is not ACC.

# %%
result = cmp.compare(read, comparisons=compare or None, reference=reference or None,
                     metric=metric, target=target_effect or None, tol=tolerance,
                     oracle_shift=oracle_shift or None)
result["metrics"].drop(columns=["source"]).groupby("method", sort=False).mean(numeric_only=True)

# %%
dis = result["disagreements"]
display(Markdown(f"**{len(dis)} reported number(s) disagree** with the recomputed ones "
                 f"(|difference| > {tolerance:g})." if len(dis) else
                 "**Reported numbers:** none given, or all agree with the recomputed ones."))
cparams.shown_sources(dis, runs).head(8)  # sources relative to the runs' folder: no machine path

# %% [markdown]
# ## Figures: every run, and each method's mean $R$

# %%
ax = cplots.metric_strip(result["metrics"], metric)
record.figure(ax.figure, f"{metric}_per_method")
plt.show()

# %%
fig = cplots.mean_matrices(result["run_list"], read.methods)
record.figure(fig, "mean_R")
plt.show()

# %% [markdown]
# ## Verdicts
#
# Each comparison $A - B$ is paired over the runs the two methods share (same seed, class
# order and taskification) and decided by `clkit.stats.paired`: a paired t-test (the exact
# sign-flip test when the differences have no spread), two-sided at $\alpha = 0.05$, Holm
# over the primary comparisons; the other metrics form an exploratory family shown with their
# intervals, never as findings. Each row's interval is at the level its decision uses.
#
# * **Null control.** The reference method's runs, sorted by seed, first half paired with the
#   second half: two independent draws of the same training, so "no difference" is the only
#   right answer. It needs 4 runs of the reference.
# * **Oracle control.** A copy of the reference's runs with `oracle_shift` of every final-row
#   cell's error removed, $R'_{T-1,j} = R_{T-1,j} + s\,(1 - R_{T-1,j})$, paired with the
#   originals: a planted ACC gain of $s\,(1-\mathrm{ACC})$ per run that the rule must find
#   (`clkit.compare.oracle`). Each run is paired with its own copy, so this checks the pipeline
#   (reading, pairing, the metric, the direction), not the power (that is `detectable`, below).
# * **Detectable** is the smallest effect the row could have found (80 % power at its level);
#   "no difference" above it is not "no effect".

# %%
display(result["table"])
record.log(verdicts=[v.to_dict() for v in result["verdicts"]],
           controls_hold=stats.controls_hold(result["verdicts"])[0],
           per_run=result["metrics"].drop(columns=["source"]).to_dict(orient="records"),
           acc_mean=result["metrics"].groupby("method", sort=False)["acc"].mean().to_dict(),
           disagreements=len(dis))

# %% [markdown]
# ## Seed budget for your next study
#
# From each comparison's observed difference and the spread of its paired differences: how
# many seeds (pairs) the same rule needs to detect the observed effect with 80 % power at the
# row's Holm level, and how many to detect `target_effect`.

# %%
display(Markdown("\n".join(f"* {line}" for line in result["planner"]) or "*(no primary comparison)*"))
record.log(planner=result["planner"])

# %% [markdown]
# ## What this run shows

# %%
display(Markdown(result["paragraph"]))
record.log(summary=result["paragraph"])

# %%
record.save()
