"""Two protocols for the curriculum benchmark: the paper's text and the authors' released code.

The paper (Faber et al., 2024, Sect. 4) states one configuration for every strategy: SGD with
learning rate 0.001 and momentum 0.9, batch 128, 50 epochs, a memory of 200 samples, and the
strategies' usual strengths. Its numbers come from the released code,
github.com/lifelonglab/M2I_I2M_benchmark (read at commit :data:`AUTHORS_COMMIT`), which calls
Avalanche 0.2.1 (its ``requirements.txt``; Avalanche read at tag v0.2.1, commit
:data:`AVALANCHE_COMMIT`). Where the code does something else, both are available, selected by
one name (``protocol`` in notebook 04):

``"paper"`` -- the text, and the settings notebook 04 had before this parameter existed (its
    results unchanged).

``"authors"`` -- what the released configs and their Avalanche calls do, for each setting a
    strategy of clkit can take (:data:`AUTHORS_SETTINGS`, :data:`AUTHORS_EPOCHS`):

    - **A-GEM**: ``AGEM(patterns_per_exp=args.patterns_per_exp)`` with ``patterns_per_exp: 256``
      in ``config/*/agem_config_param.yml`` and ``sample_size`` not passed (the configs'
      ``sample_size: 1300`` is never read: ``strategies/strategies_provider.py``), so Avalanche's
      default 64: 256 rows kept per task, 64 rows per reference gradient drawn evenly over the
      stored tasks (``agem_patterns_per_task=256``, ``agem_sample_size=64``,
      :class:`clkit.strategies.AGEM`);
    - **SI**: ``SynapticIntelligence(eps=args.si_eps)`` with ``si_eps: 0.001`` in
      ``config/*/si_config_param.yml`` (clkit's default damping is Zenke et al.'s 0.1):
      ``si_eps=0.001``;
    - **MAS**: ``MAS(lambda_reg=args.mas_lambda_reg)``; ``alpha`` is not passed (the configs'
      ``alpha: 0.5`` equals Avalanche's default), and Avalanche 0.2.1's ``MASPlugin`` keeps a
      running average ``alpha * old + (1 - alpha) * new`` from zero where clkit sums:
      ``importance_update="average"``, ``mas_alpha=0.5`` (:class:`clkit.strategies.MAS`);
    - **LwF**: ``LwF(temperature=args.softmax_temperature)`` with ``softmax_temperature: 1`` in
      ``config/*/lwf_config_param.yml`` (clkit's default temperature is 2): ``lwf_temperature=1.0``;
    - **GenerativeReplay**: the generator is Avalanche's ``MlpVAE((3, 64, 64), nhid=16)`` trained
      by Adam at lr 0.01 (``strategies_provider.py``): ``generator_latent=16``,
      ``generator_lr=0.01`` (clkit: 32 and 0.001);
    - **epochs**: ``config/class_incremental/{naive,lwf,agem}_config_param.yml`` and the three
      ``config/task_incremental`` files of the same names say ``epochs: 20``, every other config
      50. Notebook 04's ``epochs`` is the paper's 50 in the paper sets and smaller at teaching
      scale, so the authors' protocol trains Naive, LwF and A-GEM for ``epochs * 20 / 50``
      epochs (rounded, at least 1): 20 at the paper's 50 (:func:`strategy_epochs`).

    What the released code does differently that no clkit parameter can switch (Avalanche's
    per-batch Fisher and MAS gradients, SI's clipped importance, the ResNet-34 trunk of every
    config, ...) is listed in :func:`differences` and in docs/04_curriculum.md, with both
    values; the ``authors`` protocol does not claim those.

A user's ``learner_kwargs`` stay the last word: the protocol's settings go under them
(:func:`learner_settings`).
"""

from __future__ import annotations

import pandas as pd

from .._validate import check_choice, check_int

__all__ = ["PROTOCOLS", "AUTHORS_COMMIT", "AVALANCHE_COMMIT", "AUTHORS_SETTINGS", "AUTHORS_EPOCHS",
           "PAPER_EPOCHS", "check_protocol", "learner_settings", "strategy_epochs", "differences"]

PROTOCOLS = ("paper", "authors")
#: lifelonglab/M2I_I2M_benchmark, the commit read (HEAD of its default branch)
AUTHORS_COMMIT = "254e26e7f36e468027860a52e8b85a5c6bce1d49"
#: ContinualAI/avalanche at tag v0.2.1, the version the authors' requirements.txt pins
AVALANCHE_COMMIT = "ce65eb007f60acfce9087e57ff1d710a586bfd8a"
#: the paper's epochs (Sect. 4: ``epochs=50``), the released configs' for all but three strategies
PAPER_EPOCHS = 50

#: per strategy, the constructor settings of the released code (clkit keyword names)
AUTHORS_SETTINGS = {
    "agem": {"agem_patterns_per_task": 256, "agem_sample_size": 64},
    "si": {"si_eps": 0.001},
    "mas": {"importance_update": "average", "mas_alpha": 0.5},
    "lwf": {"lwf_temperature": 1.0},
    "generative_replay": {"generator_latent": 16, "generator_lr": 0.01},
}
#: strategies whose released configs (class- and task-incremental) train fewer epochs, and how many
AUTHORS_EPOCHS = {"naive": 20, "lwf": 20, "agem": 20}


def check_protocol(protocol) -> str:
    """``protocol`` if it is one of :data:`PROTOCOLS`; else ``ValueError`` naming it.

    Examples
    --------
    >>> check_protocol("authors")
    'authors'
    >>> check_protocol("code")
    Traceback (most recent call last):
    ...
    ValueError: protocol must be one of ['paper', 'authors'], got 'code'
    """
    return check_choice("protocol", protocol, PROTOCOLS)


def learner_settings(protocol, strategies, learner_kwargs: dict | None = None) -> dict:
    """Per-learner settings of a run: the protocol's (``authors``) under the user's ``learner_kwargs``.

    Parameters
    ----------
    protocol : {"paper", "authors"}
    strategies : list of str
        The run's strategies; the protocol's settings are given to these only.
    learner_kwargs : dict, optional
        ``{learner: {keyword: value}}``, the user's: a keyword set there wins.

    Returns
    -------
    dict
        ``{learner: {keyword: value}}`` (with ``"paper"``: ``learner_kwargs`` unchanged).

    Examples
    --------
    >>> learner_settings("paper", ["si", "mas"], {"si": {"si_lambda": 2.0}})
    {'si': {'si_lambda': 2.0}}
    >>> out = learner_settings("authors", ["si", "mas", "naive"], {"si": {"si_lambda": 2.0}})
    >>> out["si"], out["mas"]
    ({'si_eps': 0.001, 'si_lambda': 2.0}, {'importance_update': 'average', 'mas_alpha': 0.5})
    >>> learner_settings("authors", ["si"], {"si": {"si_eps": 0.5}})["si"]
    {'si_eps': 0.5}
    """
    protocol = check_protocol(protocol)
    user = {k: dict(v) for k, v in (learner_kwargs or {}).items()}
    if protocol == "paper":
        return user
    out = {name: dict(AUTHORS_SETTINGS[name]) for name in strategies if name in AUTHORS_SETTINGS}
    for name, kw in user.items():
        out[name] = {**out.get(name, {}), **kw}
    return out


def strategy_epochs(protocol, strategies, epochs: int) -> dict:
    """Epochs per strategy where the protocol's differ from ``epochs``: ``{strategy: epochs}``.

    ``"authors"``: Naive, LwF and A-GEM train ``round(epochs * 20 / 50)`` epochs (at least 1), the
    released configs' 20 at the paper's 50 (:data:`AUTHORS_EPOCHS`); the rest train ``epochs``.
    ``"paper"``: every strategy trains ``epochs`` (an empty dict).

    Examples
    --------
    >>> strategy_epochs("authors", ["naive", "lwf", "agem", "replay"], 50)
    {'naive': 20, 'lwf': 20, 'agem': 20}
    >>> strategy_epochs("authors", ["naive", "replay"], 3), strategy_epochs("paper", ["naive"], 50)
    ({'naive': 1}, {})
    """
    protocol = check_protocol(protocol)
    epochs = check_int("epochs", epochs, low=1)
    if protocol == "paper":
        return {}
    return {name: max(1, round(epochs * AUTHORS_EPOCHS[name] / PAPER_EPOCHS))
            for name in strategies if name in AUTHORS_EPOCHS}


# (strategy or quantity, what the paper's text or clkit's `paper` protocol uses, what the released
#  code does, where it is in the released code, whether `protocol: authors` switches it)
_DIFFERENCES = (
    ("A-GEM memory", "200 rows in one reservoir (the paper's memory of 200)",
     "256 rows per task (patterns_per_exp), kept per task", "config/*/agem_config_param.yml; "
     "strategies/strategies_provider.py", True),
    ("A-GEM reference sample", "notebook's agem_sample_size (64 by default; Chaudhry et al.: 256)",
     "64 (Avalanche's default: the configs' sample_size 1300 is not passed), drawn evenly over tasks",
     "strategies/strategies_provider.py; avalanche AGEM v0.2.1", True),
    ("SI damping xi", "0.1 (Zenke et al.)", "0.001 (si_eps)", "config/*/si_config_param.yml", True),
    ("MAS importance update", "sum over tasks", "running average alpha * old + (1 - alpha) * new from 0, alpha 0.5",
     "avalanche/training/plugins/mas.py v0.2.1", True),
    ("LwF temperature", "2", "1 (softmax_temperature)", "config/*/lwf_config_param.yml", True),
    ("GenerativeReplay generator", "VAE latent 32, Adam lr 0.001", "MlpVAE nhid 16, Adam lr 0.01 (weight decay 1e-4)",
     "strategies/strategies_provider.py", True),
    ("epochs of Naive, LwF, A-GEM", "50 (Sect. 4)", "20", "config/{class,task}_incremental/{naive,lwf,agem}"
     "_config_param.yml", True),
    ("MAS importance measure", "mean over samples of |d ||f(x)||^2 / d theta| (Aljundi et al.), eval mode",
     "3 x mean over batches of |d mean_i ||f(x_i)||_2 / d theta| (the norm, not squared; len(batch) = 3 "
     "items of the batch tuple), train mode", "avalanche/training/plugins/mas.py v0.2.1", False),
    ("SI importance", "w / (Delta^2 + xi) clipped at 0 from below, penalty si_lambda * sum Omega (dtheta)^2, "
     "gradient of the unregularised loss", "w / (Delta^2 + xi) clipped at 0.001 from above, penalty "
     "si_lambda / 2 * sum Omega (dtheta)^2, gradient of the total loss",
     "avalanche/training/plugins/synaptic_intelligence.py v0.2.1", False),
    ("EWC Fisher and penalty", "per-sample empirical Fisher, penalty ewc_lambda / 2 * sum F (dtheta)^2",
     "squared mini-batch gradients averaged over batches (eval mode), penalty ewc_lambda * sum F (dtheta)^2",
     "avalanche/training/plugins/ewc.py v0.2.1", False),
    ("backbone of the configs", "Wide-VGG9, EfficientNet-B1, ResNet-34 (three tables)",
     "ResNet-34 from torchvision (pretrained=False) for all but GenerativeReplay (EfficientNet-B1, not "
     "pretrained) and PNN", "config/*/*.yml model_name; models/model_provider.py", False),
    ("task-incremental head", "the task id selects the task's ten outputs",
     "one 60-way head, labels 0-9 in every task (class ids from zero per experience), no masking",
     "scenarios/scenarios_providers.py", False),
    ("GenerativeReplay generator training", "as many epochs as the solver", "16 epochs, batch 128",
     "strategies/strategies_provider.py", False),
)


def differences() -> pd.DataFrame:
    """Every difference found between the paper's text and the released code, with both values.

    Columns: ``quantity``, ``paper`` (the text, and clkit's ``paper`` protocol), ``authors``
    (the released code), ``where`` (file in lifelonglab/M2I_I2M_benchmark at :data:`AUTHORS_COMMIT`,
    or in Avalanche v0.2.1), ``switched`` (whether ``protocol="authors"`` follows the code there).

    Examples
    --------
    >>> d = differences()
    >>> d.loc[d.quantity == "SI damping xi", ["paper", "authors", "switched"]].values.tolist()
    [['0.1 (Zenke et al.)', '0.001 (si_eps)', True]]
    """
    return pd.DataFrame(list(_DIFFERENCES), columns=["quantity", "paper", "authors", "where", "switched"])
