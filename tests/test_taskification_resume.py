"""A CL run of notebook 01 checkpoints after every task and resumes bitwise (clkit.taskification.resume)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from clkit.models.transformer import TimeSeriesTransformer
from clkit.taskification import fixed_windows
from clkit.taskification import resume
from clkit.taskification.forecasting import continual_forecasting, make_forecast_tasks

KW = dict(max_epochs=3, patience=2, lr_patience=1, lr=3e-3, batch_size=8, seed=3)
SETTINGS = {"replay": {"memory_size": 12}, "ewc": {"ewc_lambda": 50.0}, "lwf": {"lwf_alpha": 2.0}}


@pytest.fixture(scope="module")
def tasks():
    v = np.random.default_rng(0).random((2, 180, 2)).astype(np.float32)
    return make_forecast_tasks(v, fixed_windows(180, 60), context=8, target_index=0, stride=2)


def model_fn():
    return TimeSeriesTransformer(2, 8, 4, 1, 1, target_index=0)


class Killed(Exception):
    pass


def _killer(after: int):
    """A progress callback that stops the run once task ``after`` (0-based) has finished."""
    done = []

    def progress():
        done.append(1)
        if len(done) == after + 1:
            raise Killed
    return progress


def _run(tasks, method, **kw):
    return continual_forecasting(tasks, model_fn, method, strategy_kwargs=SETTINGS.get(method), **KW, **kw)


@pytest.mark.parametrize("method", ["naive", "ewc", "replay", "lwf"])
def test_a_run_stopped_after_a_task_resumes_to_the_uninterrupted_matrix_bitwise(tasks, method, tmp_path):
    whole = _run(tasks, method)
    assert whole.shape == (3, 3) and np.isfinite(whole).all()
    with pytest.raises(Killed):
        _run(tasks, method, checkpoint_dir=tmp_path, progress=_killer(0))
    saved = torch.load(tmp_path / resume.CHECKPOINT_FILE, weights_only=True)
    assert saved["task"] == 0
    M1 = saved["M"].numpy()
    assert np.array_equal(M1[0], whole[0]) and np.isnan(M1[1:]).all()   # the first row only
    with pytest.raises(Killed):     # a second kill, after task 1 of the resumed run
        _run(tasks, method, checkpoint_dir=tmp_path, progress=_killer(1))
    assert torch.load(tmp_path / resume.CHECKPOINT_FILE, weights_only=True)["task"] == 1
    calls = []
    resumed = _run(tasks, method, checkpoint_dir=tmp_path, progress=lambda: calls.append(1))
    assert np.array_equal(resumed, whole), (resumed - whole)        # bitwise, NaN-free
    assert len(calls) == 3                                           # the bar counts the tasks done before too
    # a finished run's checkpoint holds every row: a rerun trains nothing and returns the same matrix
    assert np.array_equal(_run(tasks, method, checkpoint_dir=tmp_path), whole)


def test_the_state_differs_between_methods_as_their_papers_say(tasks, tmp_path):
    """Replay keeps a task-balanced memory, EWC one Fisher/anchor term per task; both resume from them."""
    for method in ("replay", "ewc"):
        with pytest.raises(Killed):
            _run(tasks, method, checkpoint_dir=tmp_path / method, progress=_killer(1))
        st = torch.load(tmp_path / method / resume.CHECKPOINT_FILE, weights_only=True)["strategy"]
        if method == "replay":
            assert st["memory"]["size"] == 12 and st["memory"]["tasks"] == [0, 1]
            assert np.bincount(st["memory"]["task_ids_host"][:12].numpy()).tolist() == [6, 6]
        else:
            assert len(st["terms"]) == 2 and set(st["terms"][0][0]) == set(st["terms"][0][1])
            assert all((f >= 0).all() for f in st["terms"][1][0].values())   # a Fisher diagonal: squares


def test_without_a_checkpoint_folder_nothing_changes(tasks, tmp_path):
    a = _run(tasks, "naive")
    b = _run(tasks, "naive", checkpoint_dir=tmp_path)
    assert np.array_equal(a, b) and (tmp_path / resume.CHECKPOINT_FILE).exists()


def test_a_checkpoint_of_other_parameters_or_data_is_refused_naming_the_folder(tasks, tmp_path):
    with pytest.raises(Killed):
        _run(tasks, "naive", checkpoint_dir=tmp_path, progress=_killer(0))
    with pytest.raises(ValueError, match=f"checkpoint_dir: '{tmp_path}'.*another run"):
        continual_forecasting(tasks, model_fn, "naive", checkpoint_dir=tmp_path, **{**KW, "lr": 1e-3})
    with pytest.raises(ValueError, match="another run"):   # same settings, another method
        _run(tasks, "ewc", checkpoint_dir=tmp_path)
    other = make_forecast_tasks(np.random.default_rng(1).random((2, 180, 2)).astype(np.float32),
                                fixed_windows(180, 60), context=8, target_index=0, stride=2)
    with pytest.raises(ValueError, match="another run"):   # other data
        _run(other, "naive", checkpoint_dir=tmp_path)


def test_a_method_whose_state_is_unknown_is_refused(tasks, tmp_path):
    with pytest.raises(ValueError, match="method 'si' cannot be checkpointed.*allowed: naive, replay, ewc, lwf"):
        continual_forecasting(tasks, model_fn, "si", checkpoint_dir=tmp_path, **KW)
    assert not any(tmp_path.iterdir())


def test_a_failed_write_keeps_the_previous_checkpoint_whole(tasks, tmp_path, monkeypatch):
    with pytest.raises(Killed):
        _run(tasks, "naive", checkpoint_dir=tmp_path, progress=_killer(0))
    before = (tmp_path / resume.CHECKPOINT_FILE).read_bytes()
    real = torch.save

    def half(obj, path):      # writes half a file, then dies (a kill or a full disk mid-write)
        real(obj, path)
        with open(path, "r+b") as f:
            f.truncate(len(before) // 2)
        raise OSError("killed mid-write")

    monkeypatch.setattr(torch, "save", half)
    with pytest.raises(OSError, match="mid-write"):
        _run(tasks, "naive", checkpoint_dir=tmp_path)
    monkeypatch.undo()
    assert (tmp_path / resume.CHECKPOINT_FILE).read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [resume.CHECKPOINT_FILE]    # no temporary file left
    assert np.array_equal(_run(tasks, "naive", checkpoint_dir=tmp_path), _run(tasks, "naive"))


def test_an_unreadable_checkpoint_is_refused_naming_the_folder(tasks, tmp_path):
    (tmp_path / resume.CHECKPOINT_FILE).write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match=f"'{tmp_path}' holds an unreadable checkpoint.pt"):
        _run(tasks, "naive", checkpoint_dir=tmp_path)


def test_the_case_folder_comes_from_the_runner_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(resume.CHECKPOINT_ENV, raising=False)
    assert resume.checkpoint_dir(["naive|9d|0"]) is None
    monkeypatch.setenv(resume.CHECKPOINT_ENV, str(tmp_path))
    assert resume.checkpoint_dir(["naive|9d|0"]) == tmp_path
    assert resume.checkpoint_dir([]) is None     # a whole run (or a merge) is not a case


RESUMING_BODY = """\
import json, os
import numpy as np
from clkit.results import RunRecord
from clkit.models.transformer import TimeSeriesTransformer
from clkit.taskification import fixed_windows, resume
from clkit.taskification.forecasting import continual_forecasting, make_forecast_tasks
folder = resume.checkpoint_dir(['naive|a|0'])
resumed = (folder / 'run' / 'checkpoint.pt').exists()
def progress():
    if not resumed:
        os._exit(9)              # the wall time: the job dies after task 0, its checkpoint written
v = np.random.default_rng(0).random((2, 180, 2)).astype(np.float32)
tasks = make_forecast_tasks(v, fixed_windows(180, 60), context=8, target_index=0, stride=2)
M = continual_forecasting(tasks, lambda: TimeSeriesTransformer(2, 8, 4, 1, 1, target_index=0), 'naive',
                          checkpoint_dir=folder / 'run', progress=progress, max_epochs=3, patience=2, lr_patience=1,
                          lr=3e-3, batch_size=8, seed=seed)
rec = RunRecord('00_tiny', params=dict(seed=seed))
rec.log(M=M.tolist(), resumed=resumed, folder=str(folder))
rec.save()
"""


@pytest.mark.sweep
def test_a_sweep_case_killed_mid_run_resumes_on_rerun_and_its_checkpoints_go_once_it_finished(tmp_path):
    """clkit run-case twice, as a requeued array task: the kernel dies after task 0; the rerun resumes."""
    import json

    import nbformat
    from tiny_notebook import notebooks_at

    from clkit.sweep import prepare_cases, run_case_of

    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[v4.new_code_cell("seed: int = 3  # a seed", metadata={"tags": ["parameters"]}),
                                v4.new_code_cell(RESUMING_BODY)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (tmp_path / "nb").mkdir()
    nbformat.write(nb, str(tmp_path / "nb" / "00_tiny.ipynb"))
    with notebooks_at(tmp_path / "nb"):
        plan = prepare_cases("00", {"seed": [3]}, out=tmp_path / "out")
        root = Path(plan["root"])
        first = run_case_of(root, 0)
        assert first["status"] == "failed"                     # killed: the case is not complete
        ckpt = root / ".checkpoints" / plan["cases"][0]["key"]
        assert torch.load(ckpt / "run" / resume.CHECKPOINT_FILE, weights_only=True)["task"] == 0
        second = run_case_of(root, 0)
    assert second["status"] == "ok", second["error"]
    res = json.loads(next(root.glob("*/results.json")).read_text())["results"]
    assert res["resumed"] is True and res["folder"] == str(ckpt.resolve())
    whole = continual_forecasting(make_forecast_tasks(np.random.default_rng(0).random((2, 180, 2)).astype(np.float32),
                                                      fixed_windows(180, 60), context=8, target_index=0, stride=2),
                                  model_fn, "naive", **KW)
    assert np.array_equal(np.array(res["M"]), whole)             # JSON round-trips float64 exactly
    assert not (root / ".checkpoints").exists()                  # a finished case's checkpoints are gone
    assert os.environ.get(resume.CHECKPOINT_ENV) is None         # the runner's process is left as it was


def test_the_split_grid_figures_are_what_the_budget_functions_give():
    """The hours and jobs quoted in paper_split.yaml, split.py and docs/01_taskification.md (H100 SXM)."""
    from clkit.taskification.report import make_splits
    from clkit.taskification.split import attempts, case_hours

    names, splits, _, _ = make_splits(40 * 7 * 144, 10.0, [9, 30, 44], 2.0, 1.0)   # the paper set's 40 weeks
    h = case_hours(splits, ["naive", "replay", "ewc", "lwf"], cl_series=100, context=288, epochs=100,
                   batch_size=256, patience=10, cal={"forward_window": 0.076, "step_window": 1.0})
    others = [v for (m, _), v in h.items() if m != "replay"]
    replay = [v for (m, _), v in h.items() if m == "replay"]

    def span(rows, key):     # the quoted figures, to their one decimal
        return pytest.approx((min(r[key] for r in rows), max(r[key] for r in rows)), abs=0.05)
    assert (13.2, 16.4) == span(others, "upper_h") and (23.1, 25.9) == span(replay, "upper_h")
    assert (1.5, 1.8) == span(others, "lower_h") and (2.5, 2.8) == span(replay, "lower_h")
    assert (0.4, 2.7) == span(others, "longest_task_h") and (0.8, 4.5) == span(replay, "longest_task_h")
    assert {r["attempts"] for r in others} == {2} and {r["attempts"] for r in replay} == {3}
    assert [h[("naive", n)]["tasks"] for n in names] == [31, 9, 6]
    with pytest.raises(ValueError, match="task 1 takes .* raise the wall time"):
        attempts([3600, 5 * 3600], wall_s=4 * 3600)


def test_run_cl_gives_each_run_of_a_case_its_own_folder_and_lets_other_methods_start_over(tasks, tmp_path):
    from clkit.taskification.report import run_cl

    kw = {k: v for k, v in KW.items() if k != "seed"}
    only = [("naive", "a", 0), ("ewc", "a", 1), ("si", "a", 0)]
    got = run_cl({"a": tasks}, model_fn, ["naive", "ewc", "si"], 2, seed=3, only=only, checkpoint_dir=tmp_path,
                 strategy_kwargs=SETTINGS, **kw)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ewc_a_1", "naive_a_0"]    # si is not checkpointed
    plain = run_cl({"a": tasks}, model_fn, ["naive", "ewc", "si"], 2, seed=3, only=only, strategy_kwargs=SETTINGS,
                   **kw)
    assert all(np.array_equal(got[r]["M"], plain[r]["M"]) for r in only)
    assert np.array_equal(got[("naive", "a", 0)]["M"], _run(tasks, "naive"))      # seed 3 + 0
