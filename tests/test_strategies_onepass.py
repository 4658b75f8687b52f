"""One-pass projections (clkit.strategies._onepass): the per-group gradients from one stacked
forward/backward equal separate autograd gradients, for the MLP and the small CNN, in training
with the projection firing and not firing."""

import pytest
import torch
import torch.nn.functional as F

from clkit._seed import torch_seeded
from clkit.models import MLP
from clkit.models.cnn import SmallCNN
from clkit.strategies import AGEM, GEM, Task
from clkit.strategies._common import trainable
from clkit.strategies._onepass import GroupGradients


def _net(kind):
    return MLP(12, 4, hidden=(16,)) if kind == "mlp" else SmallCNN(1, 4)


def _x(kind, n, g):
    return torch.randn(n, 12, generator=g) if kind == "mlp" else torch.randn(n, 1, 8, 8, generator=g)


def _close(a, b):
    torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6 * max(1.0, float(b.abs().max())))


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_group_gradients_equal_separate_autograd(kind):
    g = torch.Generator().manual_seed(0)
    with torch_seeded(1):
        net = _net(kind)
    params = [p for _, p in trainable(net)]
    sizes = [7, 64, 5]
    x, y = _x(kind, sum(sizes), g), torch.randint(0, 4, (sum(sizes),), generator=g)
    bounds = [0, 7, 71, 76]
    into = [[torch.empty_like(p) for p in params] for _ in sizes]
    gg = GroupGradients(net)
    assert gg.reason is None
    losses = gg(net, x, sizes, lambda out: [F.cross_entropy(out[a:b], y[a:b]) for a, b in zip(bounds, bounds[1:])],
                params, into)
    assert gg.fell_back == 0
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        sep = torch.autograd.grad(F.cross_entropy(net(x[a:b]), y[a:b]), params)
        _close(losses[i].detach(), F.cross_entropy(net(x[a:b]), y[a:b]).detach())
        for got, want in zip(into[i], sep):
            _close(got, want)


def _tasks(kind):
    g = torch.Generator().manual_seed(2)
    out = []
    for t in range(3):
        x = _x(kind, 48, g) + 0.5 * t
        out.append(Task(x, torch.randint(0, 4, (48,), generator=g), task_id=t))
    return out


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
@pytest.mark.parametrize("cls, kw", [(AGEM, {"agem_sample_size": 64, "memory_size": 64}),
                                     (AGEM, {"agem_sample_size": 64, "agem_patterns_per_task": 24}),
                                     (GEM, {"gem_patterns_per_task": 32})])
def test_one_pass_training_equals_separate_passes_with_projection_firing_and_not(kind, cls, kw):
    """Every step's memory gradients equal autograd on the same rows and weights; the projection
    fires in some steps and not in others; the whole run equals the separate-pass run."""
    runs, fired = [], []
    for one_pass in (True, False):
        with torch_seeded(4):
            s = cls(_net(kind), lr=0.1, epochs=2, batch_size=16,
                    scenario="class", one_pass=one_pass, **kw)
        if one_pass:
            proj = s.project

            def checked(rows, views, grads, s=s, proj=proj):
                if rows is not None:
                    assert s.last_pass == "one pass"
                    mx, my, mt, sizes = s._memory_rows
                    start = 0
                    for i, size in enumerate(sizes):
                        sl = slice(start, start + size)
                        start += size
                        want = torch.autograd.grad(s.rows_loss(mx[sl], my[sl], mt[sl]), s._params)
                        for got, w in zip(views[i + 1], want):
                            _close(got, w)
                    before = rows[0].clone()
                    proj(rows, views, grads)
                    after = torch.cat([gr.reshape(-1) for gr in grads])
                    fired.append(not torch.equal(before, after))
                else:
                    proj(rows, views, grads)

            s.project = checked
        for task in _tasks(kind):
            s.train_task(task)
        runs.append(s)
    assert any(fired) and not all(fired), f"projection fired in {sum(fired)} of {len(fired)} steps"
    for a, b in zip(runs[0].model.parameters(), runs[1].model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_group_gradients_cover_norm_layers_positions_and_sequences():
    """The LayerNorm / GroupNorm / LearnedPosition rules and Linear layers applied to (rows, steps,
    features) inputs equal separate autograd gradients: the transformer (every weight in Linear,
    LayerNorm or LearnedPosition) and a convolution with group normalisation."""
    from torch import nn

    from clkit.models.transformer import TimeSeriesTransformer

    g = torch.Generator().manual_seed(3)
    with torch_seeded(5):
        nets = {"transformer": TimeSeriesTransformer(num_features=3, context=6, d_model=8, num_layers=2,
                                                     num_heads=2, dropout=0.0),
                "groupnorm": nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.GroupNorm(2, 4), nn.ReLU(),
                                           nn.Flatten(), nn.Linear(4 * 5 * 5, 3))}
    inputs = {"transformer": torch.randn(11, 6, 3, generator=g), "groupnorm": torch.randn(11, 1, 5, 5, generator=g)}
    for name, net in nets.items():
        for p in net.parameters():   # away from the zero initialisation of the position table
            p.data.add_(0.1 * torch.randn(p.shape, generator=g))
        params = [p for _, p in trainable(net)]
        x = inputs[name]
        target = torch.randn(len(x), *net(x[:1]).shape[1:], generator=g)
        sizes, bounds = [4, 7], [0, 4, 11]
        into = [[torch.empty_like(p) for p in params] for _ in sizes]
        gg = GroupGradients(net)
        assert gg.reason is None, (name, gg.reason)
        assert {type(m).__name__ for m in gg.layers} >= ({"LayerNorm", "LearnedPosition", "Linear"}
                                                          if name == "transformer" else {"GroupNorm", "Conv2d"})
        gg(net, x, sizes, lambda out: [F.mse_loss(out[a:b], target[a:b]) for a, b in zip(bounds, bounds[1:])],
           params, into)
        assert gg.fell_back == 0, name
        for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
            sep = torch.autograd.grad(F.mse_loss(net(x[a:b]), target[a:b]), params, allow_unused=True)
            for got, want, p in zip(into[i], sep, params):
                _close(got, torch.zeros_like(p) if want is None else want)


@pytest.mark.parametrize("kind", ["mlp", "transformer"])
def test_batched_products_into_flat_rows_equal_separate_autograd(kind):
    """Groups of equal size with the flat rows given: every Linear layer's weight gradients come
    from one batched product written into the rows; they equal separate autograd gradients (also
    for a Linear applied to (rows, steps, features) inputs)."""
    from clkit.models.transformer import TimeSeriesTransformer
    from clkit.strategies._common import aligned_rows, flat_views

    g = torch.Generator().manual_seed(7)
    with torch_seeded(8):
        net = (MLP(12, 4, hidden=(16, 8)) if kind == "mlp" else
               TimeSeriesTransformer(num_features=3, context=5, d_model=8, num_layers=1, num_heads=2, dropout=0.0))
    params = [p for _, p in trainable(net)]
    sizes = [6, 6, 6]
    x = torch.randn(18, 12, generator=g) if kind == "mlp" else torch.randn(18, 5, 3, generator=g)
    target = torch.randn(18, *net(x[:1]).shape[1:], generator=g)
    rows = aligned_rows(3, sum(p.numel() for p in params))
    rows.fill_(float("nan"))   # every entry must be written
    views = [flat_views(r, params) for r in rows]
    gg = GroupGradients(net)
    for _ in range(2):   # the second call reuses the cached views across the rows
        gg(net, x, sizes, lambda out: [F.mse_loss(out[a:a + 6], target[a:a + 6]) for a in (0, 6, 12)],
           params, views, rows)
    assert gg.fell_back == 0 and not torch.isnan(rows).any()
    for i, a in enumerate((0, 6, 12)):
        sep = torch.autograd.grad(F.mse_loss(net(x[a:a + 6]), target[a:a + 6]), params, allow_unused=True)
        for got, want, p in zip(views[i], sep, params):
            _close(got, torch.zeros_like(p) if want is None else want)


@pytest.mark.parametrize("cls, kw", [(AGEM, {"agem_sample_size": 20, "memory_size": 30}),
                                     (GEM, {"gem_patterns_per_task": 20})])
def test_rows_gathered_in_place_give_the_separate_pass_run_with_uneven_batches(cls, kw):
    """The one-pass step gathers the batch (and A-GEM's memory sample) straight into its stacking
    buffer; with batches of changing size (50 rows, batches of 16: the last has 2) and A-GEM also
    used task-free (observe), the run equals the separate-pass run."""
    g = torch.Generator().manual_seed(11)
    tasks = [Task(torch.randn(50, 12, generator=g) + t, torch.randint(0, 4, (50,), generator=g), task_id=t)
             for t in range(3)]
    finals = []
    for one_pass in (True, False):
        with torch_seeded(12):
            s = cls(_net("mlp"), lr=0.1, epochs=2, batch_size=16, scenario="class", one_pass=one_pass, **kw)
        for task in tasks:
            s.train_task(task)
        if cls is AGEM:
            for start in range(0, 50, 16):
                s.observe(tasks[0].x[start:start + 16], tasks[0].y[start:start + 16])
        assert s.last_pass == ("one pass" if one_pass else "separate passes")
        finals.append([p.detach().clone() for p in s.model.parameters()])
    for a, b in zip(*finals):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_recording_hooks_are_inert_outside_a_call_and_go_with_close():
    """The hooks record nothing outside a call; copies and pickles of the model carry inactive
    recorders; close() removes them."""
    import copy
    import pickle

    with torch_seeded(0):
        net = _net("mlp")
    gg = GroupGradients(net)
    layers = [m for m in net.modules() if isinstance(m, torch.nn.Linear)]
    assert all(len(m._forward_hooks) == 1 for m in layers)
    x = torch.randn(3, 12)
    net(x)
    assert gg._recorder.into is None
    for clone in (copy.deepcopy(net), pickle.loads(pickle.dumps(net))):
        torch.testing.assert_close(clone(x), net(x))
    gg.close()
    assert all(len(m._forward_hooks) == 0 for m in layers)


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_output_changed_in_place_after_its_layer_stays_one_pass_and_exact(kind):
    """Layer outputs are taken by their gradient edge, not held: a forward that changes the head's
    output in place afterwards (here doubling it) still gets the one-pass gradients, and they are
    the exact gradients of the doubled output's losses."""
    g = torch.Generator().manual_seed(3)
    with torch_seeded(4):
        net = _net(kind)
    params = [p for _, p in trainable(net)]
    x, y = _x(kind, 20, g), torch.randint(0, 4, (20,), generator=g)
    into = [[torch.empty_like(p) for p in params] for _ in range(2)]
    gg = GroupGradients(net)
    gg(lambda v: net(v).mul_(2.0), x, [8, 12],
       lambda out: [F.cross_entropy(out[:8], y[:8]), F.cross_entropy(out[8:], y[8:])], params, into)
    assert gg.fell_back == 0
    for i, (a, b) in enumerate(((0, 8), (8, 20))):
        sep = torch.autograd.grad(F.cross_entropy(2.0 * net(x[a:b]), y[a:b]), params)
        for got, want in zip(into[i], sep):
            _close(got, want)


def test_negative_batch_indices_gather_the_same_rows_into_the_stacking_buffer():
    """train_batch gathers the batch into the stacking buffer with take(out=): negative indices
    (which index_select refuses) count from the end as x[idx] does, and the step equals the one on
    the same rows given by positive indices."""
    g = torch.Generator().manual_seed(13)
    tasks = [Task(torch.randn(20, 12, generator=g) + t, torch.randint(0, 4, (20,), generator=g), task_id=t)
             for t in range(2)]
    finals = []
    for idx in (torch.tensor([-1, -2, 3, 4]), torch.tensor([19, 18, 3, 4])):
        with torch_seeded(14):
            s = AGEM(_net("mlp"), lr=0.1, epochs=1, batch_size=8, scenario="class", memory_size=8, agem_sample_size=4)
        s.train_task(tasks[0])
        s.begin_task(tasks[1])
        s.train_batch(tasks[1], idx)
        assert s.last_pass == "one pass"
        finals.append([p.detach().clone() for p in s.model.parameters()])
    for a, b in zip(*finals):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def _image_tasks():
    g = torch.Generator().manual_seed(21)
    return [Task(torch.rand(48, 3, 12, 12, generator=g) + 0.3 * t, torch.randint(0, 6, (48,), generator=g), task_id=t)
            for t in range(3)]


def _checked_run(cls, kw, layout):
    """Train ``cls`` on the image tasks with ``one_pass_channels_last=layout``; in every step with
    memory, compare its gradient rows with float64 autograd on the same rows and pre-step weights
    and check the projected row against the constraints. Returns (strategy, largest relative
    error, smallest constraint slack, layouts the steps took)."""
    import copy

    with torch_seeded(22):
        s = cls(SmallCNN(3, 6, width=8, blocks=2), lr=0.05, epochs=1, batch_size=16, scenario="class",
                one_pass_channels_last=layout, **kw)
    worst, slack, layouts = [0.0], [float("inf")], set()
    proj, step_rows = s.project, s.step_rows

    def recording_step(xb, yb, tb, task, incoming=None):
        s._pre = (copy.deepcopy(s.model).double(), xb.clone(), yb.clone())
        return step_rows(xb, yb, tb, task, incoming)

    def checked(rows, views, grads):
        if rows is None:
            return proj(rows, views, grads)
        layouts.add(s.last_layout)
        ref_model, xb, yb = s._pre
        mx, my, _, sizes = s._memory_rows
        xs, ys = [xb, *mx.split(sizes)], [yb, *my.split(sizes)]
        ref_params = list(ref_model.parameters())
        for row, x, y in zip(rows, xs, ys):
            want = torch.autograd.grad(F.cross_entropy(ref_model(x.double()), y), ref_params)
            want = torch.cat([w.reshape(-1) for w in want])
            worst[0] = max(worst[0], float((row.double() - want).abs().max() / want.abs().max()))
        proj(rows, views, grads)
        g = torch.cat([gr.reshape(-1) for gr in grads])
        scale = float(g.norm()) * float(rows[1:].norm(dim=1).max())
        slack[0] = min(slack[0], float((rows[1:] @ g).min()) / scale)

    s.step_rows, s.project = recording_step, checked
    for task in _image_tasks():
        s.train_task(task)
    return s, worst[0], slack[0], layouts


@pytest.mark.parametrize("cls, kw", [(AGEM, {"agem_sample_size": 16, "memory_size": 32}),
                                     (GEM, {"gem_patterns_per_task": 16})])
def test_channels_last_one_pass_is_as_exact_as_the_contiguous_one(cls, kw):
    """The one-pass step on a contiguous CNN runs its stacked rows in channels_last by default on
    the CPU (parameters untouched): every group's gradient is within 2x the contiguous step's
    float32 error of float64 autograd on the same rows and weights, the gradients keep the
    parameters' layout, and the projected update satisfies the A-GEM / GEM constraints."""
    errors = {}
    for layout in (False, None):
        s, worst, slack, layouts = _checked_run(cls, kw, layout)
        assert layouts == {"contiguous" if layout is False else "channels_last"}
        assert all(p.is_contiguous() for p in s.model.parameters())
        assert all(p.grad.is_contiguous() for p in s.model.parameters())
        assert slack >= -1e-5, f"constraint violated by {slack} (relative)"
        errors[layout] = worst
    assert 0 < errors[False] < 1e-5
    assert errors[None] <= 2 * errors[False], errors


def test_channels_last_switch_is_validated_and_skips_what_it_cannot_serve():
    with pytest.raises(ValueError, match="one_pass_channels_last must be None, True or False, got 'yes'"):
        AGEM(SmallCNN(1, 4), one_pass_channels_last="yes")
    with pytest.raises(ValueError, match="one_pass_channels_last"):
        GEM(SmallCNN(1, 4), one_pass_channels_last=1)
    for net, layout, want in [(_net("mlp"), None, "contiguous"), (_net("mlp"), True, "contiguous"),
                              (_net("cnn"), None, "channels_last"), (_net("cnn"), False, "contiguous"),
                              (_net("cnn").to(memory_format=torch.channels_last), None, "contiguous")]:
        kind = "mlp" if isinstance(net, MLP) else "cnn"
        s = AGEM(net, lr=0.1, epochs=1, batch_size=16, memory_size=16, agem_sample_size=8,
                 one_pass_channels_last=layout)
        tasks = _tasks(kind)[:2]
        s.train_task(tasks[0])
        s.train_task(tasks[1])
        assert s.last_pass == "one pass" and s.last_layout == want, (kind, layout, s.last_layout)


def test_agem_per_task_memory_keeps_a_share_of_each_task_and_samples_evenly():
    """Avalanche's A-GEM memory: ``agem_patterns_per_task`` rows of each task (a subset of it, all
    rows when the task has fewer), the reservoir unused, and ``agem_sample_size // k`` rows of each
    of the ``k`` stored tasks per reference gradient."""
    tasks = _tasks("mlp")
    with torch_seeded(0):
        s = AGEM(_net("mlp"), lr=0.1, epochs=1, batch_size=16, scenario="class", agem_patterns_per_task=8,
                 agem_sample_size=10)
    for t in tasks[:2]:
        s.train_task(t)
    assert len(s.memory) == 0 and sorted(s.task_memories) == [0, 1]
    for k, t in enumerate(tasks[:2]):
        mx, my, mt = s.task_memories[k]
        assert len(my) == 8 and set(mt.tolist()) == {k}
        rows = {tuple(r.tolist()) for r in t.x}
        assert all(tuple(r.tolist()) in rows for r in mx)      # a subset of the task's own rows
        assert len({tuple(r.tolist()) for r in mx}) == 8       # without replacement
    mx, my, mt, sizes = s.memory_groups(tasks[2])
    assert sizes == [10] and sorted(mt.tolist()) == [0] * 5 + [1] * 5
    s.agem_sample_size = 64                                    # more than stored: every stored row
    assert s.memory_groups(tasks[2])[3] == [16]
    with torch_seeded(0):
        big = AGEM(_net("mlp"), epochs=1, batch_size=16, agem_patterns_per_task=500)
    big.train_task(tasks[0])
    assert len(big.task_memories[0][1]) == len(tasks[0])      # fewer rows than the share: all kept
    with pytest.raises(ValueError, match="agem_patterns_per_task"):
        AGEM(_net("mlp"), agem_patterns_per_task=-1)
