"""The device plumbing: resolving ``device`` / ``precision`` / ``deterministic``, and every strategy
step running on a device other than the CPU.

No GPU is needed: ``torch.device("meta")`` holds shapes but no values, so a training loop run there
fails on any tensor made on the CPU instead of the model's device, and on any read of a value inside
a step (``.item()``, ``.tolist()``, ``.numpy()``) -- as it would stall or fail on a GPU.
:class:`clkit.device.DeviceAudit` adds the mixes that ``meta`` lets through. Tests that need CUDA
are marked ``gpu`` (run by ``benchmarks/gpu_check.py``).
"""

import numpy as np
import pytest
import torch

from clkit import device as dv
from clkit.models import MLP
from clkit.models.cnn import SmallCNN
from clkit.strategies import Task, make_strategy
from clkit.strategies import _all  # noqa: F401 -- registers every strategy
from clkit.strategies.base import _REGISTRY, epoch_means

META = torch.device("meta")
GRAPH = {"ssm", "sem", "dmsg", "gss", "mas_star"}   # node-index strategies: tests/test_drift_device.py
# L2P needs a ViT (tests/test_strategies_prompt.py runs it on the meta device)
VECTOR = sorted(n for n in dict(_REGISTRY) if n not in GRAPH and not getattr(_REGISTRY[n], "needs_vit_model", False))
SMALL = dict(memory_size=12, agem_sample_size=6, gem_patterns_per_task=5, generator_hidden=8,
             generator_latent=2, generator_epochs=1)


def _kwargs(name):
    """The keywords of ``SMALL`` the strategy's constructor takes."""
    import inspect

    cls = _REGISTRY[name]
    accepted = set()
    for klass in cls.__mro__:
        if "__init__" in vars(klass):
            accepted |= set(inspect.signature(klass.__init__).parameters)
    return {k: v for k, v in SMALL.items() if k in accepted}


def _tasks(shape=(6,), num_tasks=3, per_task=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for t in range(num_tasks):
        y = torch.tensor([2 * t, 2 * t + 1] * (per_task // 2))
        out.append(Task(torch.randn(per_task, *shape, generator=g), y, task_id=t))
    return out


# ---------------------------------------------------------------------------------------- resolving

def test_resolve_device_names_and_refusals():
    assert dv.resolve_device("cpu") == torch.device("cpu")
    assert dv.resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="device must be one of auto | cpu"):
        dv.resolve_device("gpu")
    with pytest.raises(TypeError, match="device must be a string"):
        dv.resolve_device(3)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without CUDA")
def test_cuda_without_cuda_is_refused_naming_what_is_there():
    with pytest.raises(ValueError, match=r"device 'cuda' needs CUDA.*available: cpu"):
        dv.setup("cuda")
    with pytest.raises(ValueError, match="device 'cuda:1' needs CUDA"):
        dv.setup("cuda:1")


def test_setup_checks_precision_and_deterministic():
    with pytest.raises(ValueError, match="precision must be one of fp32 | bf16 | fp16, got 'fp8'"):
        dv.setup("cpu", precision="fp8")
    with pytest.raises(ValueError, match="precision 'fp16' needs a CUDA device"):
        dv.setup("cpu", precision="fp16")
    with pytest.raises(ValueError, match="'meta' computes no values"):
        dv.setup("meta")
    rd = dv.setup("cpu", precision="bf16")
    rec = rd.record()
    assert rec["device"] == "cpu" and rec["precision"] == "bf16" and rec["deterministic"] is False
    assert rec["device_cores"] >= 1 and rec["device_torch"] == torch.__version__
    assert "precision bf16" in rd.describe()


def test_deterministic_switches_torch_and_sets_cublas(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    try:
        rd = dv.setup("cpu", deterministic=True)
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
        assert dv.os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
        assert "deterministic algorithms on" in rd.describe()
    finally:
        dv.set_deterministic(False)
    assert not torch.are_deterministic_algorithms_enabled()


def test_move_and_to_host_on_meta():
    x = torch.arange(6.0).reshape(3, 2)
    m = dv.move((x, {"y": torch.zeros(3)}), META)
    assert m[0].device == META and m[1]["y"].device == META
    assert np.isnan(dv.to_host(m[0])).all() and dv.to_host(m[0]).shape == (3, 2)
    assert np.isnan(dv.host_float(m[0].sum()))
    assert dv.to_host(x).tolist() == x.tolist()


def test_task_moves_once_and_keeps_host_labels():
    t = _tasks(num_tasks=1)[0]
    m = t.to(META)
    assert m.x.device == META and m.to(META) is m and t.to("cpu") is t
    assert m.labels_host().tolist() == t.y.tolist() and m.classes == (0, 1)


def test_epoch_means_reads_once_and_matches_numbers():
    hist = [[torch.tensor(1.0), torch.tensor(2.0)], [torch.tensor(4.0)]]
    assert epoch_means(hist) == [1.5, 4.0]
    assert all(np.isnan(v) for v in epoch_means([[torch.ones((), device=META)]]))


def test_amp_bf16_on_cpu_autocasts_the_forward():
    amp = dv.Amp("bf16", torch.device("cpu"))
    lin = torch.nn.Linear(4, 2)
    with amp.autocast():
        out = lin(torch.randn(3, 4))
    assert out.dtype == torch.bfloat16 and lin.weight.dtype == torch.float32


# ------------------------------------------------------------------------------ strategies on meta

@pytest.mark.parametrize("name", VECTOR)
def test_every_strategy_trains_on_a_non_cpu_device(name):
    """Each strategy trains three tasks with every tensor on ``meta`` (tasks given on the CPU, moved
    once by ``train_task``), with no value read inside a step and no CPU tensor mixed in."""
    cls = _REGISTRY[name]
    scenario = "task" if cls.task_incremental_only else "class"
    model = MLP(6, 6, hidden=(8,))
    s = make_strategy(name, model, device=META, scenario=scenario, epochs=2, batch_size=8, **_kwargs(name))
    with dv.DeviceAudit(META):
        for task in _tasks():
            history = s.train_task(task)
            assert len(history) == 2
    assert all(p.device == META for p in s.model.parameters())
    assert s.steps > 0


# meta tensors hold no values: GDumb's host mirror of the labels reads them as NaN and casts them
@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("name", [n for n in VECTOR if _REGISTRY[n].task_free and n != "naive"] + ["naive"])
def test_task_free_strategies_observe_on_a_non_cpu_device(name):
    s = make_strategy(name, MLP(6, 6, hidden=(8,)), device=META, batch_size=8, **_kwargs(name))
    g = torch.Generator().manual_seed(1)
    with dv.DeviceAudit(META):
        for step in range(6):
            x = torch.randn(8, 6, generator=g).to(META)
            y = torch.tensor([0, 1, 2, 3] * 2).to(META)
            s.observe(x, y)
    assert s.steps > 0 or name == "gdumb"


@pytest.mark.parametrize("name", ["agem", "gem", "naive", "ewc", "lwf"])
def test_cnn_strategies_on_a_non_cpu_device(name):
    """The one-pass gradient groups of A-GEM and GEM (convolutions), and a CNN under the others."""
    model = SmallCNN(3, 6, width=4, blocks=2)
    s = make_strategy(name, model, device=META, epochs=1, batch_size=8, **_kwargs(name))
    with dv.DeviceAudit(META):
        for task in _tasks(shape=(3, 8, 8)):
            s.train_task(task)
    if name in ("agem", "gem"):
        assert s.last_pass == "one pass", s.one_pass_reason


def test_evaluation_on_meta_gives_nan_not_an_error():
    s = make_strategy("naive", MLP(6, 6, hidden=(8,)), device=META, epochs=1, batch_size=8)
    task = _tasks(num_tasks=1)[0]
    s.train_task(task)
    assert np.isnan(s.evaluate(task))


@pytest.mark.parametrize("name", ["naive", "ewc", "si", "agem", "gem", "replay", "lwf"])
def test_bf16_training_on_cpu_runs_and_keeps_float32_parameters(name):
    s = make_strategy(name, MLP(6, 6, hidden=(8,)), precision="bf16", epochs=1, batch_size=8, **_kwargs(name))
    for task in _tasks():
        losses = s.train_task(task)
        assert np.isfinite(losses).all()
    assert all(p.dtype == torch.float32 for p in s.model.parameters())
    assert 0.0 <= s.evaluate(_tasks()[0]) <= 1.0


def test_fp32_step_results_do_not_depend_on_the_new_plumbing():
    """train_step returns a tensor now; the model after training equals a plain SGD loop's."""
    torch.manual_seed(0)
    model = MLP(6, 6, hidden=(8,))
    ref = MLP(6, 6, hidden=(8,))
    ref.load_state_dict(model.state_dict())
    s = make_strategy("naive", model, epochs=1, batch_size=8, optimizer="sgd", lr=0.1, momentum=0.0)
    task = _tasks(num_tasks=1)[0]
    perm = torch.randperm(len(task), generator=torch.Generator().manual_seed(0))
    s.train_task(task)
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for i in range(0, len(task), 8):
        idx = perm[i:i + 8]
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ref(task.x[idx]), task.y[idx]).backward()
        opt.step()
    for a, b in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", ["naive", "ewc", "si", "mas", "lwf", "agem", "gem", "replay", "er", "gdumb",
                                  "cumulative", "generative_replay", "cwr"])
def test_strategy_on_cuda_matches_cpu(name):
    """The same training on CUDA and on the CPU ends within float32 rounding of each other
    (batch orders and memory samples come from the same CPU generators)."""
    runs = {}
    for dev in ("cpu", "cuda"):
        torch.manual_seed(0)
        model = MLP(6, 6, hidden=(8,))
        s = make_strategy(name, model, device=dev, epochs=1, batch_size=8, **_kwargs(name))
        for task in _tasks():
            s.train_task(task)
        runs[dev] = [p.detach().cpu() for p in s.model.parameters()]
    for a, b in zip(runs["cpu"], runs["cuda"]):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4)


def test_plugin_sequence_training_takes_the_device():
    """clkit.plugins.train_sequences_sequentially (EDGE's truth for any Strategy) trains on the device it
    is given: on meta every accuracy is NaN and no CPU tensor meets the device."""
    from clkit.plugins import train_sequences_sequentially

    rng = np.random.default_rng(0)
    x = (rng.normal(size=(4, 20, 3)) + 3 * np.eye(4, 3)[:, None, :]).astype("float32")
    with dv.DeviceAudit(META):
        out = train_sequences_sequentially(x, x, [[[0, 1], [2, 3]], [[2, 3], [0, 1]]], "ewc", device=META)
    assert out["acc_matrix"].shape == (2, 2, 2) and np.isnan(out["avg_acc"]).all()
    cpu = train_sequences_sequentially(x, x, [[[0, 1], [2, 3]]], "naive", device="cpu", precision="bf16")
    assert 0.0 <= cpu["avg_acc"][0] <= 1.0
