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
# **null control** (the reference method against a rerun of itself on the same seeds: must come
# out "no difference") and an **oracle control** (an effect of a stated size in seed-noise units,
# planted into the null control's pairs: must be found), with a **pipeline check** beside them.
# It ends with a seed budget for your next study. The command `clkit compare` does the same
# without a notebook (docs/compare.md).
#
# Run it headless: `clkit run 06_your_runs --params smoke|default [-p runs PATH]`.

# %% tags=["parameters"]
# Parameters: edit a value, then Run All. Headless: clkit run 06 -p NAME VALUE
# runs: example (runs shipped with clkit: 4 methods x 8 seeds on real digits, and a
# rerun of naive on the same seeds, naive-rerun, for the paired null control) or
# PATH: a folder with runs.csv / runs.yaml, a long CSV, a mammoth / PyCIL log
runs: str = "example"
reference: str = "naive"  # every method against this one; also the controls' method
compare: list = []  # or name comparisons "A:B" (A - B), e.g. ["replay:naive"]
metric: str = "acc"  # primary metric: acc | acc_all_seen | bwt | fwt | forgetting
percent: bool = False  # scores are percentages 0-100 (divided by 100)
target_effect: float = 0.01  # seed budget: pairs to detect it, 0.01 is one point
tolerance: float = 0.001  # reported numbers further than this from clkit's are listed
# pipeline check: share of the last row's error removed (0: none)
oracle_shift: float = 0.1
# oracle control: planted gain, in spreads of the sharpest comparison's differences
oracle_sds: float = 3.0  # (0: none)

# %%
from IPython.display import Markdown, display
import matplotlib.pyplot as plt

import clkit.compare as cmp
import clkit.stats as stats
from clkit.compare import params as cparams, plots as cplots
from clkit.results import RunRecord

P = cparams.check_params(runs=runs, reference=reference, compare=compare, metric=metric,
                         percent=percent, target_effect=target_effect, tolerance=tolerance,
                         oracle_shift=oracle_shift, oracle_sds=oracle_sds)
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
                     oracle_shift=oracle_shift or None, oracle_sds=oracle_sds or None, percent=percent)
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
# order and taskification) and decided by `clkit.stats.paired`: a paired t-test (its spread
# floored at the metric's resolution), two-sided at $\alpha = 0.05$, Holm over the primary
# comparisons; the other metrics form an exploratory family shown with their intervals, never as
# findings. Intervals are simultaneous within a family (level $1 - \alpha/m$). Two metrics whose
# paired differences are exact negatives (BWT and forgetting, when no task peaks after its own
# step) are one hypothesis, tested once.
#
# * **Null control** (paired). The reference's runs against its rerun, `naive-rerun`: the same
#   seeds, so the same data split, trained again with another training seed. It pairs seed by
#   seed like the findings and has as many pairs, so "no difference" is the only right answer
#   and its detectable bias is on the findings' scale. Without a rerun the control falls back to
#   the split-half design (first half of the seeds against the second: half the pairs, unpaired
#   in the data; its row says so). The null controls of all metrics are judged together (Holm).
# * **Oracle control.** A gain of $g = k\,s_{\min}$ on ACC, $k$ = `oracle_sds` spreads of the
#   sharpest comparison's paired ACC differences, planted into the rerun arm of every null pair
#   (each final-row cell moved $g/(1-\mathrm{ACC})$ of the way to 1). The pairs keep their seed
#   noise, so the rule must *find* $g$; its row states the power it has to do so, and a broken
#   rule, or a gain lost in the noise, fails it.
# * **Pipeline check** (not a control). A copy of the reference's runs with `oracle_shift` of
#   every final-row cell's error removed, $R'_{T-1,j} = R_{T-1,j} + s\,(1 - R_{T-1,j})$: its
#   recomputed ACC gain must equal $s\,(1-\mathrm{ACC})$ exactly on every run (reading, pairing,
#   the metric, the direction). It has no noise, so it tests no statistics.
# * **Detectable** is the smallest effect the row could have found (80 % power at $\alpha/m$);
#   "no difference" above it is not "no effect". The closing text sets each null control's own
#   detectable bias beside the smallest finding it vouches for.

# %%
display(result["table"])
record.log(verdicts=[v.to_dict() for v in result["verdicts"]],
           controls_hold=stats.controls_hold(result["verdicts"])[0], pipeline_checks=result["pipeline"],
           per_run=result["metrics"].drop(columns=["source"]).to_dict(orient="records"),
           acc_mean=result["metrics"].groupby("method", sort=False)["acc"].mean().to_dict(),
           disagreements=len(dis))

# %% [markdown]
# ## Seed budget for your next study
#
# From each comparison's observed difference and the spread of its paired differences: how
# many seeds (pairs) the same rule needs to detect the observed effect with 80 % power at
# $\alpha/m$, and how many to detect `target_effect`; a "no difference" row repeats its
# `detectable`, the same figure as the table and the closing text.

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
