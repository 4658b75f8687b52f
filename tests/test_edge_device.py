"""Notebook 02's learners on a device other than the CPU, its memory chunks, fp16 scaling and its budget.

No GPU is needed: ``torch.device("meta")`` holds shapes but no values, so every learner that
trains there with :class:`clkit.device.DeviceAudit` watching makes no tensor on the CPU for
device work and reads no value inside a step (the accuracies come back as NaN). Every kernel
the built-in learners use has a meta implementation (batched products, cross-entropy, the
softmaxes of the distillation, herding's argmin, ``one_hot`` with a given number of classes),
so nothing is left out here; CLIP's text tower runs on meta too. Tests that need CUDA are
marked ``gpu``.
"""

import numpy as np
import pytest
import torch

from clkit import device as dv
from clkit.edge import enumerate_sequences
from clkit.edge import learners as L
from clkit.edge import memory
from clkit.edge.budget import prefix_work, scoring_settings, truth_budget

META = torch.device("meta")
CFG = L.LearnerConfig(hidden=8, epochs=1, batch_size=16, memory_per_class=3)


@pytest.fixture(scope="module")
def toy():
    """6 Gaussian classes in 8-D: 20 training / 10 test points each, and 30 of the 90 sequences."""
    rng = np.random.default_rng(0)
    centres = 2 * rng.normal(size=(6, 8))
    xtr = (centres[:, None, :] + rng.normal(size=(6, 20, 8))).astype(np.float32)
    xte = (centres[:, None, :] + rng.normal(size=(6, 10, 8))).astype(np.float32)
    return xtr, xte, enumerate_sequences(6, 3)[::3]


# ---------------------------------------------------------------------------------- meta device

@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("learner", L.LEARNERS)
def test_every_builtin_learner_trains_all_sequences_on_a_non_cpu_device(toy, learner, precision):
    """train_sequences on meta under DeviceAudit, in three memory chunks (fp16: the per-sequence loss
    scaling path; autocast itself is a no-op on meta)."""
    xtr, xte, seqs = toy
    plan = L.batched_plan(learner, CFG, xtr, xte, seqs, META)
    budget = max(1, plan.node.train) * 10 if learner != "ncm" else None
    with dv.DeviceAudit(META):
        out = L.train_sequences(xtr, xte, seqs, learner, CFG, device=META, precision=precision,
                                memory_budget=budget)
    assert out["acc_matrix"].shape == (30, 3, 3) and np.isnan(out["avg_acc"]).all()
    assert out["chunks"].num_chunks == (3 if learner != "ncm" else 1)


def test_a_run_device_brings_its_precision(toy):
    xtr, xte, seqs = toy
    rd = dv.RunDevice(META, precision="fp16")
    assert L._run_device(rd, None) == (META, "fp16")
    assert L._run_device(None, None) == (torch.device("cpu"), "fp32")
    with pytest.raises(ValueError, match="precision 'fp16' needs a CUDA device"):
        L.train_sequences(xtr, xte, seqs[:2], "finetune", CFG, device="cpu", precision="fp16")


@pytest.mark.parametrize("strategy", ["naive", "ewc", "lwf"])
def test_sequential_strategy_path_on_a_non_cpu_device(toy, strategy):
    """Plugin learners (any Strategy) through the same prefix tree: models built on the CPU under the
    seed and moved by the strategy, deep-copied where sequences part, evaluated on device inputs."""
    from clkit.plugins import resolve_strategy

    xtr, xte, seqs = toy
    with dv.DeviceAudit(META):
        out = L.train_strategy_sequences(xtr, xte, seqs[:6], resolve_strategy(strategy), CFG, device=META)
    assert out["acc_matrix"].shape == (6, 3, 3) and np.isnan(out["avg_acc"]).all()


def test_mlp_probe_and_feature_map_on_a_non_cpu_device():
    x = np.random.default_rng(0).normal(size=(40, 5)).astype(np.float32)
    y = np.repeat([0, 1], 20)
    with dv.DeviceAudit(META):
        net = L.train_mlp_classifier(x, y, 2, 4, epochs=2, batch_size=8, lr=0.1, seed=0, device=META)
        feats = L.feature_map(net[:2])(x)
    assert next(net.parameters()).device == META
    assert feats.shape == (40, 4) and np.isnan(feats).all()


def test_data_similarity_probe_runs_on_the_device():
    from clkit.edge.data_similarity import train_probe

    rng = np.random.default_rng(1)
    per_class = [rng.normal(loc=c, size=(10, 3)).astype(np.float32) for c in range(3)]
    with dv.DeviceAudit(META):
        feats, probs = train_probe(per_class, hidden=4, epochs=1, seed=0, device=META)
        assert np.isnan(feats(per_class[0])).all() and probs(per_class[0]).shape == (10, 3)


def test_clip_text_tower_on_a_non_cpu_device(tmp_path):
    """The tiny ViT-B-16-shaped open_clip folder loads on the CPU, moves to the device, encodes the
    tokens there (moved once) and returns the embeddings to the host."""
    from clkit.data.fixtures.clip import clip_params, write_clip
    from clkit.edge import similarity

    p = clip_params(write_clip(tmp_path, layers=1))
    with dv.DeviceAudit(META):
        E = similarity._clip_encode(["a photo of a cat.", "a photo of a dog."], p["clip_model"],
                                    p["clip_pretrained"], META)
    assert E.shape == (2, 32) and np.isnan(E).all()
    cpu = similarity._clip_encode(["a photo of a cat."], p["clip_model"], p["clip_pretrained"], torch.device("cpu"))
    assert np.isfinite(cpu).all()


def test_embedding_cache_does_not_depend_on_the_device(tmp_path, monkeypatch):
    from clkit.edge import similarity

    monkeypatch.setenv("CLKIT_DATA", str(tmp_path))
    seen = []

    def fake_clip(texts, model, pretrained, device):
        seen.append(device)
        return np.arange(2 * len(texts), dtype=np.float32).reshape(len(texts), 2)

    monkeypatch.setattr(similarity, "_clip_encode", fake_clip)
    first = similarity.encode_texts(["cat", "dog"], "clip", device=META)
    again = similarity.encode_texts(["cat", "dog"], "clip", device="cpu")      # from the cache
    assert seen == [META] and np.array_equal(first, again)
    assert len(list((tmp_path / "embeddings").glob("*.npy"))) == 1


def test_sentence_encoder_is_placed_on_the_given_device(monkeypatch):
    """The sentence encoder is no longer pinned to the CPU: it gets the run's device (by name)."""
    from clkit.edge import similarity

    made = []

    class FakeST:
        def __init__(self, path, device):
            made.append(device)

        def encode(self, texts, **kw):
            return np.ones((len(texts), 3), dtype=np.float32)

    import sentence_transformers

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", FakeST)
    monkeypatch.setattr(similarity, "_MODELS", {})
    out = similarity._minilm_encode(["a", "b"], torch.device("cuda", 1))
    assert made == ["cuda:1"] and out.shape == (2, 3)


# ---------------------------------------------------------------------------------- numbers

@pytest.mark.parametrize("learner", ["ewc", "icarl"])
def test_memory_chunks_and_groups_change_no_number(toy, learner):
    """The sequences cut into 5 chunks (duplicated boundary prefixes), evaluation and herding in groups of
    2 nodes: bitwise the same accuracies as one chunk."""
    xtr, xte, seqs = toy
    one = L.train_sequences(xtr, xte, seqs, learner, CFG)
    plan = L.batched_plan(learner, CFG, xtr, xte, seqs, "cpu", memory_budget=one["chunks"].node.train * 6)
    plan = memory.ChunkPlan(plan.num_sequences, plan.max_nodes, plan.num_chunks, 2, plan.node, plan.budget, "test", 2)
    cut = L.train_sequences(xtr, xte, seqs, learner, CFG, chunks=plan)
    assert plan.num_chunks == 5
    assert np.array_equal(one["acc_matrix"], cut["acc_matrix"], equal_nan=True)


def test_bf16_on_cpu_trains_close_to_fp32(toy):
    xtr, xte, seqs = toy
    a = L.train_sequences(xtr, xte, seqs, "lwf", CFG, precision="fp32")["avg_acc"]
    b = L.train_sequences(xtr, xte, seqs, "lwf", CFG, precision="bf16")["avg_acc"]
    assert np.isfinite(b).all() and np.abs(a - b).mean() < 0.05


def test_fp16_scaler_skips_only_the_sequence_that_overflowed(toy):
    """Node 0's scale overflows its gradients: its step is skipped and its scale halved; node 1 takes the
    same step as without scaling."""
    xtr, xte, _ = toy
    b = L._Batched("finetune", CFG, 0, torch.as_tensor(xtr))
    state = b.select(b.root(), np.zeros(2, dtype=np.int64))
    plain = b.select(b.root(), np.zeros(2, dtype=np.int64))
    state.update(scale=torch.tensor([3e38, 1.0]), growth=torch.zeros(2, dtype=torch.int32))
    classes = torch.tensor([[0, 1], [0, 1]])
    ar = torch.arange(2)[:, None]
    xb, yb = b._batch(classes, torch.arange(16).expand(2, -1), None, None, ar)
    xb = xb * 1e4                                                       # large activations: 3e38 x grad overflows
    seen = torch.zeros(2, 6, dtype=torch.bool)
    seen[:, :2] = True
    p, buf = b.start(state)
    p0 = [t.detach().clone() for t in p]
    b.step(state, p, buf, xb, yb, seen, seen.clone())
    q, qbuf = b.start(plain)
    b.step(plain, q, qbuf, xb, yb, seen, seen.clone())
    assert all(torch.equal(a[0], c[0]) for a, c in zip(p, p0))            # node 0 unchanged
    assert all(torch.allclose(a[1], c[1], atol=1e-6) for a, c in zip(p, q))  # node 1 as unscaled
    assert state["scale"].tolist() == [torch.tensor(3e38).item() / 2, 1.0] and state["growth"].tolist() == [0, 1]


def test_memory_budget_and_plans():
    assert memory.memory_budget(META)[0] > 2 ** 60
    size, how = memory.memory_budget(torch.device("cpu"))
    assert size > 0 and "available memory" in how
    nb = memory.node_bytes("icarl", L.LearnerConfig(hidden=64), num_classes=8, n_train=500, n_test=500,
                           in_features=196, num_tasks=4)
    assert nb.herd > 0 and nb.train > 2 * nb.state
    plan = memory.chunk_plan(nb, 2520, torch.device("cpu"), budget=nb.train * 1000)
    assert (plan.num_chunks, plan.max_nodes) == (3, 840)
    assert "3 chunks of at most 840 sequences" in plan.describe()
    parts = memory.sequence_chunks(enumerate_sequences(8, 4), 3)
    assert sorted(np.concatenate(parts).tolist()) == list(range(2520))


# ---------------------------------------------------------------------------------- budget

def test_budget_counts_match_a_hand_count(toy):
    """6 classes / 3 tasks (30 sequences), 20 training images per class, batch 16, 1 epoch."""
    xtr, xte, seqs = toy
    data = {"x_train": xtr, "x_test": xte, "f_train": xtr, "f_test": xte}
    levels = prefix_work(seqs)[0]
    tb = truth_budget(data, seqs, ["finetune", "ewc", "icarl", "ncm"], config=CFG, seconds_per_timing=0.2,
                      num_random=1000, random_settings=scoring_settings(6, 3, ["cifar100"], 10))
    assert tb.levels == levels and tb.budget.trainings == 4 * sum(levels)
    w = {x.name: x.count for x in tb.budget.work}
    per_task = -(-2 * 20 // 16)                                    # ceil(40 / 16) = 3 steps
    assert w["finetune batched steps"] == 3 * per_task
    assert w["ewc Fisher passes"] == 3 * per_task
    # iCaRL's rows grow by its memory: 40, 40 + 6, 40 + 12 -> 3, 3, 4 steps
    assert w["icarl batched steps"] == 3 + 3 + 4
    assert w["ncm evaluation groups"] == 3 and "ncm batched steps" not in w
    assert w["thousand random sequences scored (host)"] == (2 + 3) * 1000 // 1000
    assert tb.seconds > 0 and "figures and verdicts are not in it" in tb.text() and "1 chunk of 30 sequences" in tb.text()
    rec = tb.record()
    assert rec["trainings"] == 4 * sum(levels) and rec["chunks"]["ewc"]["num_chunks"] == 1


def test_budget_counts_chunk_boundaries_and_samples(toy):
    xtr, xte, _ = toy
    data = {"x_train": xtr, "x_test": xte, "f_train": xtr, "f_test": xte}
    seqs = enumerate_sequences(6, 3)
    assert [sum(c) for c in zip(*prefix_work(seqs, 2))] == [16, 90, 90]  # one first task in both chunks
    nb = L.batched_plan("finetune", CFG, xtr, xte, seqs, "cpu").node.train
    tb = truth_budget(data, seqs, ["finetune"], config=CFG, memory_budget=nb * 45, seconds_per_timing=0.1)
    assert tb.plans["finetune"].num_chunks == 2 and tb.budget.trainings == 16 + 90 + 90
    tb = truth_budget(data, seqs, ["finetune"], config=CFG, mode="sample", samples=20, seconds_per_timing=0.1)
    assert tb.sequences == 20 and "a uniform sample of 20 sequences" in tb.budget.detail


def test_the_gpu_line_prices_a_timed_scratch_backbone_at_its_measured_throughput():
    """EWC from scratch on PyCIL's ResNet-32 (timed on an H200 by gpu_check) is priced at that step's
    FLOP/s; iCaRL on small_cnn (never timed) at the assumed one; together, each at its own rate."""
    from clkit import budget as B
    from clkit.edge.images import strategy_inputs

    rng = np.random.default_rng(0)
    data = {"x_train": rng.normal(size=(2, 8, 3, 16, 16)).astype(np.float32),
            "x_test": rng.normal(size=(2, 4, 3, 16, 16)).astype(np.float32), "dataset": "cifar100",
            "image_shape": (3, 16, 16)}
    seqs = enumerate_sequences(2, 2)
    inputs = {"ewc": strategy_inputs(data, ["ewc"], backbone="resnet32")["ewc"],
              "icarl": strategy_inputs(data, ["icarl"], backbone="small_cnn")["icarl"]}

    def gpu(names):
        return truth_budget(data, seqs, [], names, config=CFG, seconds_per_timing=0.05,
                            inputs={n: inputs[n] for n in names}).gpu

    ewc, icarl, both = gpu(["ewc"]), gpu(["icarl"]), gpu(["ewc", "icarl"])
    assert ewc.throughput == pytest.approx(B.measured_throughput("resnet32")) and "H200" in ewc.assumption
    assert icarl.throughput == B.GPU_THROUGHPUT and icarl.assumption == B.GPU_ASSUMPTION
    assert both.flops == pytest.approx(ewc.flops + icarl.flops)
    assert both.seconds == pytest.approx(ewc.seconds + icarl.seconds)
    assert both.assumption == f"{ewc.assumption} and {icarl.assumption}"


# ---------------------------------------------------------------------------------- CUDA

@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("learner", L.LEARNERS)
def test_cuda_ground_truth_matches_the_cpu(toy, learner):
    """The same sequences on CUDA and on the CPU: same batches (CPU generators), same initial weights;
    accuracies within float32 rounding (an argmax may flip on a near tie)."""
    xtr, xte, seqs = toy
    cpu = L.train_sequences(xtr, xte, seqs, learner, CFG, device="cpu")["avg_acc"]
    cuda = L.train_sequences(xtr, xte, seqs, learner, CFG, device="cuda")["avg_acc"]
    assert np.abs(cpu - cuda).mean() < 0.01 and np.abs(cpu - cuda).max() < 0.05
