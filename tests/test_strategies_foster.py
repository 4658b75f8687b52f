"""FOSTER: known answers of the authors' PyCIL code, the two stages' structure (frozen old extractor, student
built from it, teacher predicts), the class-balanced weights, memory, learning, determinism, meta, refusals."""

import math

import numpy as np
import pytest
import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_pre_hook

import clkit.strategies.foster as foster_mod
from clkit import device as dv
from clkit._seed import torch_seeded
from clkit.models import MLP
from clkit.strategies import Task, make_strategy
from clkit.strategies.foster import FOSTER, bkd_loss, class_weights, kd_loss

from strategy_helpers import TinyBN, blob_stream, state as _state

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# ----------------------------------------------------------------------------------------- known answers
# Made by /tmp/authors_foster/make_numbers.py (kept outside the repository; re-run it with
#   git --git-dir=$(fetch github:AIGNLAI/EDGE) archive HEAD PyCIL | tar -x -C /tmp/authors_foster
#   cd /tmp/authors_foster/PyCIL && /work/main/.venv/bin/python ../make_numbers.py):
# AIGNLAI/EDGE commit a60c1179cf762e8c1197ab876a3c06db3a49b639, PyCIL/models/foster.py FOSTER.incremental_train
# (with PyCIL/utils/inc_net.py FOSTERNet) run for three tasks of two classes on the stream of `_ka_stream`, with
# a fake data manager (dataset "tiny": new-class counts from the data), batch 64 (the whole training set: one
# step per epoch, shuffling changes nothing), memory_per_class 6, fixed_memory, 3 epochs in every stage,
# lr 0.1, weight decay 5e-4, the rest of exps/foster.json (config A) or oofc "az", both weight alignings,
# wa_value 0.9, lambda_okd 0.5, T 3, beta1 0.9, beta2 0.8 (config B). Two patches of initialisation only:
# get_convnet returns `_ka_body()` (wrapped to return {"features": ...}) and SimpleLinear's k-th layer gets the
# first rows of `_ka_draw(k, in)`, bias 0. Recorded: every loss.backward() value (3 first-task steps, then per
# later task 3 boosting and 3 compression steps), the total gradient norm at every optimizer step, and the
# logits on the probe rows of the teacher (`_network`) after task 1 and 2 and of the student (`_snet`) after 2.
KA = {
    "A": dict(
        losses=[0.603290677, 0.553103268, 0.496023983, 3.69964647, 3.44883442, 3.13198066, 1.3780719, 1.37570429,
                1.37237513, 5.09447765, 4.90080404, 4.65864325, 1.69747269, 1.69690239, 1.69610465],
        grads=[0.74744645, 0.637964459, 0.541193988, 1.61078417, 1.52205574, 1.36880032, 0.154135897, 0.153618397,
               0.150475336, 1.41668367, 1.31910456, 1.19017025, 0.0757144334, 0.0749174154, 0.0737830324],
        teacher1=[[-2.07452369, -2.79922986, 2.02991009, -3.14012122],
                  [-1.95110631, -0.33763057, -0.240483433, 0.307906091],
                  [-0.199151173, -2.11316681, 0.347802907, -2.08344007],
                  [0.0723101124, -0.878845215, -0.640758693, -0.043737784]],
        teacher2=[[-1.92702055, -4.87232351, -0.987972915, 1.83186567, 0.351830989, -0.0551051684],
                  [-1.54286218, -1.60076666, -0.266057938, 0.687757969, 0.023773497, 0.00630260538],
                  [0.355438501, -3.0097661, -1.3397609, 0.672322094, 0.369341105, 0.281814456],
                  [0.517099261, -0.935326457, -0.811833978, -0.459444165, 0.100068972, 0.0112805394]],
        student2=[[0.11971055, -3.26190853, -0.00990602095, 2.94834375, -0.870915592, -1.93343008],
                  [-0.901515067, -0.782909036, 0.356234431, 0.665425718, -0.0340422168, -0.136848569],
                  [0.919671655, -2.34358358, -0.73986572, 1.14138389, -0.69879663, -1.8490392],
                  [0.329832554, -0.912781, -0.301913857, -0.267308682, -0.422402024, -0.743508399]],
        weights2=[1.16568387, 1.16568387, 1.16568387, 1.16568387, 0.755550146, 0.581714272]),
    "B": dict(
        losses=[0.603290677, 0.553103268, 0.496023983, 3.15148306, 2.98348784, 2.75934911, 1.38045728, 1.3798486,
                1.37899077, 4.15319252, 4.05834007, 3.93257332, 1.75779915, 1.75756371, 1.7572304],
        grads=[0.74744645, 0.637964459, 0.541193988, 1.30741823, 1.26718713, 1.21642212, 0.078151146, 0.0775990918,
               0.0771927772, 0.984273867, 0.943216106, 0.900850168, 0.0485645623, 0.0483785128, 0.0481138352],
        teacher1=[[-2.27639294, -2.60152006, 3.10882831, -2.3749733],
                  [-2.04360032, -0.295734674, -0.631207883, 0.276084334],
                  [-0.3284702, -2.0082469, 0.736800015, -2.05002952],
                  [0.0210756678, -0.859573245, -0.550184786, -0.291010946]],
        teacher2=[[-1.88365221, -4.88416004, -1.08741462, 1.70782673, 2.44179416, -1.3391583],
                  [-1.5379324, -1.61188507, -0.296070486, 0.709240019, 1.0700742, 0.027294375],
                  [0.348283827, -3.01065874, -1.30646467, 0.65407759, 1.9980979, -0.626808584],
                  [0.559001088, -0.942930639, -0.829262853, -0.449873537, 0.751533926, -0.0189744085]],
        student2=[[0.144461691, -3.26228309, -0.0746336803, 2.84997153, -0.954802454, -2.13998461],
                  [-0.892701328, -0.789071381, 0.342938781, 0.61846298, -0.0181912016, -0.146900609],
                  [0.926980138, -2.35348821, -0.731618583, 1.11510336, -0.76468575, -2.05273199],
                  [0.346254587, -0.931357086, -0.286907792, -0.280612111, -0.454441309, -0.839381814]],
        weights2=[1.12634945, 1.12634945, 1.12634945, 1.12634945, 0.81029284, 0.684309185]),
}
KA_CONFIG = {"A": {}, "B": dict(oofc="az", is_teacher_wa=True, is_student_wa=True, wa_value=0.9, lambda_okd=0.5,
                                T=3, beta1=0.9, beta2=0.8)}


def _ka_body():
    g = torch.Generator().manual_seed(7)
    body = nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.ReLU())
    with torch.no_grad():
        body[0].weight.copy_(torch.randn(6, 5, generator=g) * 0.4)
        body[0].bias.copy_(torch.randn(6, generator=g) * 0.1)
        body[1].weight.copy_(1 + 0.1 * torch.randn(6, generator=g))
        body[1].bias.copy_(0.1 * torch.randn(6, generator=g))
    return body


def _ka_draw(k, n_in):
    g = torch.Generator().manual_seed(100 + k)
    return (torch.rand(6, n_in, generator=g) * 2 - 1) * math.sqrt(3.0 / n_in)


def _ka_stream():
    g = torch.Generator().manual_seed(3)
    means = 2.0 * torch.randn(6, 5, generator=g)
    y = torch.cat([torch.full((n,), c) for c, n in enumerate([6, 6, 6, 6, 10, 14])])
    x = means[y] + torch.randn(len(y), 5, generator=g)
    probe = torch.randn(4, 5, generator=g) * 2.0
    return [Task(x[y // 2 == t], y[y // 2 == t], task_id=t) for t in range(3)], probe


class _KAModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.features, self.head = _ka_body(), nn.Linear(6, 6)
        with torch.no_grad():
            self.head.weight.copy_(_ka_draw(0, 6))   # PyCIL's first SimpleLinear (its fc of task 0)
            self.head.bias.zero_()

    def forward(self, x):
        return self.head(self.features(x))


@pytest.mark.parametrize("config", ["A", "B"])
def test_known_answers_of_the_authors_code(config, monkeypatch):
    # PyCIL creates SimpleLinear layers fc0, fe0 | fc1, fe1, snet fc1, snet fe1 | fc2, fe2, snet fc2, ...: draws
    # k = 0..9; clkit creates head, fe_head, student head per later task (no fe head on the first task or student)
    ks = iter([2, 3, 4, 6, 7, 8])

    def init(n_in, n_out, generator, device):
        lin = nn.Linear(n_in, n_out)
        with torch.no_grad():
            lin.weight.copy_(_ka_draw(next(ks), n_in))
            lin.bias.zero_()
        return lin.to(device)

    monkeypatch.setattr(foster_mod, "_init_linear", init)
    tasks, probe = _ka_stream()
    s = FOSTER(_KAModel(), memory_per_class=6, epochs=3, batch_size=64, **KA_CONFIG[config])
    grads, losses, logits = [], [], {}

    def hook(opt, args, kwargs):
        grads.append(math.sqrt(sum(float((p.grad ** 2).sum()) for g in opt.param_groups for p in g["params"]
                                   if p.grad is not None)))

    handle = register_optimizer_step_pre_hook(hook)
    try:
        for t in tasks:
            losses += s.train_task(t) + s.compression_history
            logits[f"teacher{t.task_id}"] = s.predict(probe)[:, :2 * t.task_id + 2]
    finally:
        handle.remove()
    ka = KA[config]
    np.testing.assert_allclose(losses, ka["losses"], rtol=1e-5)
    np.testing.assert_allclose(grads, ka["grads"], rtol=1e-5)
    np.testing.assert_allclose(s._weights.numpy(), ka["weights2"], rtol=1e-6)
    for key in ("teacher1", "teacher2"):
        np.testing.assert_allclose(logits[key].numpy(), ka[key], rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        np.testing.assert_allclose(s.student(probe).numpy(), ka["student2"], rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------------------- structure
def _stream(num_tasks=3, n=40, seed=0):
    return blob_stream(num_tasks, n, seed)


def _foster(seed=0, **kw):
    with torch_seeded(0):
        model = TinyBN()
    kw = {"lr": 0.05, "epochs": 2, "batch_size": 16, "memory_per_class": 5, "seed": seed, **kw}
    return FOSTER(model, **kw)


def test_boosting_freezes_the_old_extractor_and_the_student_starts_from_it():
    tasks = _stream()
    s = _foster()
    s.train_task(tasks[0])
    assert len(s.model.extractors) == 1 and s.student is None
    base = _state(s.model.extractors[0])
    head0 = _state(s.model.head)
    s.begin_task(tasks[1])
    ext = s.model.extractors
    assert len(ext) == 2 and not any(p.requires_grad for p in ext[0].parameters())
    assert not any(p.requires_grad for p in s.model.old_head.parameters())
    for k, v in _state(ext[1]).items():   # PyCIL: load_state_dict of the previous extractor
        assert torch.equal(v, base[k]), k
    assert torch.equal(s.model.head.weight[:2, :8], head0["weight"][:2]) and s.model.head.in_features == 16
    assert torch.equal(s.model.head.bias[2:], torch.zeros(4))
    params = {id(p) for g in s.optimizer.param_groups for p in g["params"]}
    assert params == {id(p) for p in s.model.parameters() if p.requires_grad}
    for _ in range(2):
        for i in s.batches(len(tasks[1]), s.device):
            s.train_step(tasks[1].x[i], tasks[1].y[i], tasks[1])
    for k, v in _state(ext[0]).items():   # weights and batch-norm statistics did not move
        assert torch.equal(v, base[k]), k
    assert not torch.equal(_state(ext[1])["1.running_mean"], base["1.running_mean"])
    s.after_task(tasks[1])   # compression: the student is a trained copy of the old extractor
    assert len(s.student.extractors) == 1 and s.student.head.in_features == 8
    assert not torch.equal(_state(s.student.extractors[0])["0.weight"], base["0.weight"])
    teacher = s.model
    s.train_task(tasks[2])   # PyCIL: self._network = self._snet, then boosted again
    assert s.model is not teacher and len(s.model.extractors) == 2


def test_teacher_predicts_and_unseen_classes_are_masked():
    tasks = _stream()
    s = _foster()
    s.train_task(tasks[0])
    out = s.predict(tasks[0].x)
    assert torch.isinf(out[:, 2:]).all() and torch.isfinite(out[:, :2]).all()
    s.train_task(tasks[1])
    with torch.no_grad():
        s.model.eval()
        t = s.model(tasks[0].x)[:, :4]
        st = s.student(tasks[0].x)[:, :4]
    assert torch.allclose(s.predict(tasks[0].x)[:, :4], t) and not torch.allclose(t, st)
    s.predict_with = "student"
    assert torch.allclose(s.predict(tasks[0].x)[:, :4], st)
    assert torch.isinf(s.predict(tasks[0].x)[:, 4:]).all()
    task_s = _foster(scenario="task")
    for t in tasks:
        task_s.train_task(t)
    assert torch.isinf(task_s.predict(tasks[0].x, tasks[0])[:, 2:]).all()


def test_oofc_az_keeps_new_rows_on_old_columns_at_zero_and_weight_align():
    tasks = _stream()
    s = _foster(oofc="az", is_teacher_wa=True, compression_epochs=1)
    s.train_task(tasks[0])
    s.train_task(tasks[1])
    assert torch.equal(s.model.head.weight[2:4, :8], torch.zeros(2, 8))
    norms = s.model.head.weight.detach().norm(dim=1)
    assert float(norms[2:4].mean()) == pytest.approx(float(norms[:2].mean()), rel=1e-5)   # aligned, value 1


def test_class_weights_and_distillation_losses():
    w = class_weights([20] * 50 + [500] * 10, 0.96)
    assert w.sum() == pytest.approx(60) and w[0] > w[-1]
    assert class_weights([0, 4], 0.5).tolist() == pytest.approx(class_weights([1, 4], 0.5).tolist())
    z, t = torch.randn(5, 3), torch.randn(5, 3)
    assert float(bkd_loss(z, t, 2.0, torch.ones(3))) == pytest.approx(float(kd_loss(z, t, 2.0)), rel=1e-6)


def test_memory_fixed_per_class_or_shared_budget():
    tasks = _stream()
    s = _foster(memory_per_class=5, epochs=1, compression_epochs=1)
    for t in tasks:
        s.train_task(t)
    assert np.bincount(s.memory_labels).tolist() == [5] * 6
    assert torch.equal(s.memory_y, torch.as_tensor(s.memory_labels))
    for c in range(6):   # memory rows are rows of their task
        src = tasks[c // 2]
        assert all((src.x == r).all(1).any() for r in s.memory_x[s.memory_y == c])
    s2 = _foster(fixed_memory=False, memory_size=12, epochs=1, compression_epochs=1)
    s2.train_task(tasks[0])
    assert np.bincount(s2.memory_labels).tolist() == [6, 6]
    s2.train_task(tasks[1])
    assert np.bincount(s2.memory_labels).tolist() == [3, 3, 3, 3]
    steps = s2.steps
    s2.train_task(tasks[2], epochs=1)   # 40 + 12 rows, batches of 16: 4 boosting + 4 compression steps
    assert s2.steps - steps == 8


def test_same_seed_same_model():
    tasks = _stream()
    runs = []
    for seed in (3, 3, 4):
        s = _foster(seed=seed)
        for t in tasks:
            s.train_task(t)
        runs.append((_state(s.model), _state(s.student), s.memory_labels.copy()))
    for i in (0, 1):
        for k, v in runs[0][i].items():
            assert torch.equal(v, runs[1][i][k]), k
    assert np.array_equal(runs[0][2], runs[1][2])
    assert any(not torch.equal(v, runs[2][0][k]) for k, v in runs[0][0].items())


def test_trains_on_the_meta_device():
    meta = torch.device("meta")
    s = FOSTER(MLP(6, 6, hidden=(8,)), device=meta, epochs=2, batch_size=8, memory_per_class=3)
    g = torch.Generator().manual_seed(0)
    with dv.DeviceAudit(meta):
        for t in range(3):
            y = torch.tensor([2 * t, 2 * t + 1] * 10)
            assert len(s.train_task(Task(torch.randn(20, 6, generator=g), y, task_id=t))) == 2
    assert all(p.device == meta for p in s.model.parameters()) and s.steps > 0
    assert s.predict(torch.zeros(3, 6)).device == meta


def test_bad_parameters_raise_naming_them():
    with pytest.raises(ValueError, match="memory_per_class must be an integer >= 0, got -1"):
        _foster(memory_per_class=-1)
    with pytest.raises(ValueError, match="beta1"):
        _foster(beta1=1.0)
    with pytest.raises(ValueError, match="T must be"):
        _foster(T=0)
    with pytest.raises(ValueError, match="oofc must be one of"):
        _foster(oofc="zero")
    with pytest.raises(ValueError, match="is_teacher_wa must be True or False, got 'yes'"):
        _foster(is_teacher_wa="yes")
    with pytest.raises(ValueError, match="predict_with"):
        _foster(predict_with="both")
    with pytest.raises(ValueError, match="compression_epochs"):
        _foster(compression_epochs=-2)
    with pytest.raises(ValueError, match="loss must be 'cross_entropy', got 'mse'"):
        _foster(loss="mse")
    with pytest.raises(TypeError, match="linear `head`"):
        FOSTER(nn.Sequential(nn.Linear(2, 2)))
    with pytest.raises(ValueError, match="needs task boundaries"):
        _foster().observe(torch.zeros(2, 4), torch.tensor([0, 1]))


def test_foster_beats_naive_fine_tuning():
    tasks = _stream(n=80, seed=1)
    g = torch.Generator().manual_seed(9)
    tests = [Task(t.x + 0.5 * torch.randn(t.x.shape, generator=g), t.y, task_id=t.task_id) for t in tasks]
    acc = {}
    for name in ("naive", "foster"):
        with torch_seeded(0):
            model = MLP(4, 6, hidden=(16,))
        if name == "naive":
            s = make_strategy(name, model, lr=0.05, epochs=5, batch_size=16, seed=0)
        else:
            s = FOSTER(model, lr=0.05, epochs=5, batch_size=16, seed=0, memory_per_class=10)
        for t in tasks:
            s.train_task(t)
        acc[name] = float(np.mean([s.evaluate(t) for t in tests]))
    assert acc["naive"] < 0.5
    assert acc["foster"] > acc["naive"] + 0.25, acc
