"""The enumerable experiment (Sect. 5.1) on real offline data.

Fashion-MNIST (offline through the Debian package, or torchvision online), a few
of its classes (the paper: the first six), ``num_tasks`` tasks: every class
sequence is trained with every learner (batched, :mod:`clkit.edge.learners`),
giving the ground-truth accuracy distribution; protocols (RS, EDGE) are judged
against it.

Data choices (documented in the notebook): ``n_train`` / ``n_test`` images per
class drawn without replacement with ``seed``; images average-pooled by ``pool``
(2: 28x28 -> 14x14 = 196 inputs) and standardised with the training mean / std.
The NCM learner's frozen features come from an MLP pre-trained on the *other*
Fashion-MNIST classes (never on the experiment's classes), standing in for the
pre-trained backbone of the paper's prototype methods.
"""

from __future__ import annotations

import threading

import numpy as np
import torch

from .._seed import torch_seeded
from .._validate import check_choices, check_int
from ..data.images import FASHION_MNIST_CLASSES, load_fashion_mnist
from .combinatorics import canonical
from .estimation import distribution_distances, extremes, gaussian_estimate
from ..device import as_device
from .learners import (LEARNERS, LearnerConfig, batched_plan, feature_map, learner_config, train_mlp_classifier,
                       train_sequences)

__all__ = ["DATASETS", "load_enumerable_data", "run_learners", "learner_workers", "sequence_index", "evaluate_protocol"]

DATASETS = ("fashion_mnist",)


def _pool(x, pool):
    n, h, w = x.shape
    x = x[:, : h - h % pool, : w - w % pool].astype(np.float32) / 255.0
    return x.reshape(n, h // pool, pool, w // pool, pool).mean(axis=(2, 4)).reshape(n, -1)


def _per_class(x, y, classes, n, rng):
    out = []
    for c in classes:
        idx = np.nonzero(y == c)[0]
        if len(idx) < n:
            raise ValueError(f"class {c} has only {len(idx)} images, fewer than the {n} requested")
        out.append(x[np.sort(rng.choice(idx, size=n, replace=False))])
    return np.stack(out)


def _pretrain_features(x, y, hidden, seed, epochs=2, batch_size=64, lr=0.05, device=None, precision=None):
    """Train a one-hidden-layer MLP on (x, y) on ``device``; return its frozen feature map (host arrays out)."""
    classes = np.unique(y)
    y = np.searchsorted(classes, y)
    net = train_mlp_classifier(x, y, len(classes), hidden, epochs=epochs, batch_size=batch_size, lr=lr,
                               seed=seed, device=device, precision=precision)
    return feature_map(net[:2])


def load_enumerable_data(dataset: str = "fashion_mnist", classes=(0, 1, 2, 3, 4, 5), *, n_train: int = 500,
                         n_test: int = 500, pool: int = 2, feature_dim: int = 64, seed: int = 0, device=None,
                         precision: str | None = None) -> dict:
    """Images of the experiment's classes, per class, plus frozen features for NCM.

    Parameters
    ----------
    dataset : {"fashion_mnist"}
    classes : list of int
        Class labels of the dataset used, in order (class ``i`` of the experiment is
        ``classes[i]``).
    n_train, n_test : int
        Images per class (sampled with ``seed``).
    pool : int
        Average-pooling factor.
    feature_dim : int
        Width of the frozen feature extractor (pre-trained on the other classes).
    seed : int
    device : clkit.device.RunDevice, torch.device or str, optional
        Where the feature extractor is trained and applied (default the CPU); the arrays
        returned are on the host.
    precision : {"fp32", "bf16", "fp16"}, optional
        Autocast of its training (default the RunDevice's, else fp32).

    Returns
    -------
    dict
        ``x_train`` (C, n_train, D), ``x_test`` (C, n_test, D), ``f_train`` /
        ``f_test`` (C, n, feature_dim) frozen features, ``class_names`` (list of
        str), ``data_source`` (str).
    """
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {list(DATASETS)}, got {dataset!r}")
    if isinstance(classes, (str, bytes)) or not isinstance(classes, (list, tuple)):
        raise TypeError(f"classes must be a list of class labels, got {classes!r}")
    classes = [check_int("classes", c, low=0, high=len(FASHION_MNIST_CLASSES) - 1) for c in classes]
    if len(set(classes)) != len(classes) or len(classes) < 2:
        raise ValueError(f"classes must name at least 2 distinct labels in 0..9, got {classes!r}")
    n_train = check_int("n_train", n_train, low=10, high=6000)
    n_test = check_int("n_test", n_test, low=10, high=1000)
    pool = check_int("pool", pool, low=1, high=7)
    feature_dim = check_int("feature_dim", feature_dim, low=2)
    seed = check_int("seed", seed, low=0)
    xtr_all, ytr_all, source = load_fashion_mnist("train")
    xte_all, yte_all, _ = load_fashion_mnist("test")
    rng = np.random.default_rng(seed)
    xtr = _pool(_per_class(xtr_all, ytr_all, classes, n_train, rng).reshape(-1, 28, 28), pool)
    xte = _pool(_per_class(xte_all, yte_all, classes, n_test, rng).reshape(-1, 28, 28), pool)
    mu, sd = xtr.mean(axis=0), xtr.std(axis=0) + 1e-3
    xtr, xte = (xtr - mu) / sd, (xte - mu) / sd
    C = len(classes)
    others = [c for c in range(len(FASHION_MNIST_CLASSES)) if c not in classes]
    if others:
        idx = np.nonzero(np.isin(ytr_all, others))[0]
        idx = np.sort(rng.choice(idx, size=min(len(idx), 600 * len(others)), replace=False))
        xo = (_pool(xtr_all[idx], pool) - mu) / sd
        feats = _pretrain_features(xo.astype(np.float32), ytr_all[idx], feature_dim, seed, device=device,
                                   precision=precision)
        how = f"MLP pre-trained on the other classes {[FASHION_MNIST_CLASSES[c] for c in others]}"
    else:  # every class is in the experiment: fixed random ReLU features
        with torch_seeded(seed):
            lin = torch.nn.Linear(xtr.shape[1], feature_dim)
        feats = feature_map(torch.nn.Sequential(lin, torch.nn.ReLU()).to(as_device(device or "cpu")))
        how = "random ReLU features (no class left for pre-training)"
    return {
        "x_train": xtr.reshape(C, n_train, -1).astype(np.float32),
        "x_test": xte.reshape(C, n_test, -1).astype(np.float32),
        "f_train": feats(xtr.astype(np.float32)).reshape(C, n_train, -1),
        "f_test": feats(xte.astype(np.float32)).reshape(C, n_test, -1),
        "class_names": [FASHION_MNIST_CLASSES[c] for c in classes],
        "data_source": f"Fashion-MNIST ({source}); classes {classes}; {n_train}/{n_test} train/test images "
                       f"per class; {pool}x{pool} average pooling; NCM features: {how}",
    }


#: Relative cost of one learner's batched training (measured on 02's default, one thread:
#: finetune 9.0 s, EWC 16.0 s, LwF 10.1 s, NCM 0.3 s); the longest start first.
_COST = {"ewc": 3.0, "icarl": 3.0, "lwf": 2.0, "finetune": 1.8, "ncm": 0.1}


def learner_workers(device, num_jobs: int) -> int:
    """How many learners :func:`run_learners` trains at once: one per CPU core, up to ``num_jobs``.

    The batched products are small: one learner keeps one core busy however many
    threads torch has, so on the CPU the learners train side by side in threads (torch
    releases the GIL in its kernels), each on one intra-op thread. The cores are
    torch's thread setting (``OMP_NUM_THREADS``, ``torch.set_num_threads``). An
    accelerator trains them one after another (one device queue).

    Examples
    --------
    >>> import torch
    >>> learner_workers("cpu", 3) == min(3, torch.get_num_threads())
    True
    >>> learner_workers("meta", 3), learner_workers("cpu", 1)
    (1, 1)
    """
    num_jobs = check_int("num_jobs", num_jobs, low=0)
    dev = as_device(getattr(device, "device", device) if device is not None else "cpu")
    if dev.type != "cpu":
        return 1
    return max(1, min(num_jobs, torch.get_num_threads()))


def run_learners(data: dict, sequences, learners, config: LearnerConfig = LearnerConfig(), *, seed: int = 0,
                 progress: bool = True, learner_kwargs: dict | None = None, device=None,
                 precision: str | None = None, memory_budget: int | None = None,
                 workers: int | None = None) -> dict:
    """Train every learner on every sequence (batched); return ``{learner: train_sequences output}``.

    ``learner_kwargs`` (``{learner: {keyword: value}}``, the notebook parameter) overrides
    ``config`` per learner with the keywords of :data:`~clkit.edge.learners.LEARNER_KEYWORDS`.
    ``device``, ``precision`` and ``memory_budget`` go to
    :func:`~clkit.edge.learners.train_sequences` (the sequences are cut into chunks that fit
    the device's memory; the progress bar counts the tasks of every chunk). On the CPU the
    learners train side by side, ``workers`` at once (default :func:`learner_workers`: one
    per core), each on one torch thread and with an equal share of the memory budget; the
    results are the same as one after another (each learner's numbers come from its own
    generators, keyed by ``seed`` and the sequence's prefix).
    """
    from .._seed import torch_threads
    from .memory import memory_budget as device_budget

    learners = check_choices("learners", learners, LEARNERS)
    seqs = np.asarray(sequences)
    n = learner_workers(device, len(learners)) if workers is None else check_int("workers", workers, low=1)
    n = min(n, max(1, len(learners)))
    if n > 1:
        total = memory_budget if memory_budget is not None else device_budget(
            getattr(device, "device", device) if device is not None else "cpu")[0]
        memory_budget = max(1, int(total) // n)
    jobs = []
    for name in learners:
        xtr, xte = (data["f_train"], data["f_test"]) if name == "ncm" else (data["x_train"], data["x_test"])
        cfg = learner_config(name, config, (learner_kwargs or {}).get(name))
        plan = batched_plan(name, cfg, xtr, xte, seqs, device, memory_budget=memory_budget)
        jobs.append((name, xtr, xte, cfg, plan))
    bar = None
    if progress:
        from ..progress import tqdm

        bar = tqdm(total=sum(seqs.shape[1] * plan.num_chunks for *_, plan in jobs), desc="training all sequences")
    lock = threading.Lock()

    def tick():
        with lock:
            bar.update()

    def train(job, threads):
        name, xtr, xte, cfg, plan = job
        return train_sequences(xtr, xte, seqs, name, cfg, seed=seed, device=device, precision=precision,
                               chunks=plan, progress=tick if bar is not None else None, num_threads=threads)

    out = {}
    try:
        if n == 1:
            for job in jobs:
                out[job[0]] = train(job, 1)
        else:
            from concurrent.futures import ThreadPoolExecutor

            order = sorted(jobs, key=lambda j: -_COST.get(j[0], 1.0))
            with torch_threads(1), ThreadPoolExecutor(n, thread_name_prefix="clkit-learner") as pool:
                futures = {job[0]: pool.submit(train, job, None) for job in order}
                done = {name: f.result() for name, f in futures.items()}
            out = {job[0]: done[job[0]] for job in jobs}
    finally:
        if bar is not None:
            bar.close()
    return out


def sequence_index(all_sequences, sequences) -> np.ndarray:
    """Positions of ``sequences`` (P, K, M) within ``all_sequences`` (L, K, M).

    Examples
    --------
    >>> from clkit.edge import enumerate_sequences
    >>> sequence_index(enumerate_sequences(4, 2), [[[2, 3], [1, 0]]]).tolist()
    [5]
    """
    allc = canonical(all_sequences)
    lookup = {s.tobytes(): i for i, s in enumerate(allc)}
    out = []
    for s in canonical(sequences):
        key = s.tobytes()
        if key not in lookup:
            raise ValueError(f"sequence {s.tolist()} is not among all_sequences")
        out.append(lookup[key])
    return np.array(out, dtype=np.int64)


def evaluate_protocol(true_values, sampled_values, *, num_bins: int = 10) -> dict:
    """Gaussian estimate from sampled accuracies, its JSD / W1 to the truth, and extremes.

    Examples
    --------
    >>> out = evaluate_protocol([1.0, 2.0, 3.0, 4.0], [1.0, 4.0])
    >>> out["mean"], out["std"], out["min_gap"], out["max_gap"]
    (2.5, 1.5, 0.0, 0.0)
    """
    mean, std = gaussian_estimate(sampled_values)
    out = {"mean": mean, "std": std}
    out.update(distribution_distances(true_values, mean, std, num_bins=num_bins))
    ext = extremes(true_values, sampled_values)
    out.update({k: ext[k] for k in ("min", "max", "min_gap", "max_gap", "range_coverage")})
    return out
