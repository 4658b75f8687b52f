"""clkit compare on real Avalanche 0.6 output: a tiny experiment is trained here and read back.

Naive and Replay, two seeds each, on a 3-experience class-incremental benchmark of small random
tensors (6 classes, 2 per experience; equal test sets), an MLP, 1 epoch, CPU. Every run writes
Avalanche's ``CSVLogger`` folder and keeps the dicts ``strategy.eval(test_stream)`` returned after
each experience (dumped as JSON). clkit reads both, and the matrices must equal the accuracies
Avalanche itself reports under ``Top1_Acc_Exp/eval_phase/test_stream/Task000/Exp00j``.

Skipped without avalanche-lib (``pip install 'clkit[interop]'``); about 15 s with it.
"""

import json
import warnings

import numpy as np
import pytest

avalanche = pytest.importorskip("avalanche", reason="avalanche-lib not installed: pip install 'clkit[interop]'")

import torch  # noqa: E402

from clkit.compare import compare, disagreements, read_avalanche_csv, read_avalanche_results, read_runs  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Avalanche's own, about its API

T = 3
KEY = "Top1_Acc_Exp/eval_phase/test_stream/Task000/Exp{:03d}".format


def _dataset(seed, per_class):
    from torch.utils.data import TensorDataset

    g = torch.Generator().manual_seed(seed)
    y = torch.arange(6).repeat_interleave(per_class)
    x = 0.8 * torch.randn(len(y), 8, generator=g) + 2.0 * torch.nn.functional.one_hot(y, 8).float()
    ds = TensorDataset(x, y)
    ds.targets = y.tolist()
    return ds


def _train(method, seed, folder, eval_first=False):
    """One Avalanche run; returns the eval dicts after each training experience (and the one before, if any)."""
    from torch import nn
    from avalanche.benchmarks import nc_benchmark
    from avalanche.evaluation.metrics import accuracy_metrics, forgetting_metrics, loss_metrics
    from avalanche.logging import CSVLogger
    from avalanche.training.plugins import EvaluationPlugin
    from avalanche.training.supervised import Naive, Replay

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        bm = nc_benchmark(_dataset(0, 40), _dataset(1, 20), n_experiences=T, task_labels=False,
                          fixed_class_order=list(range(6)))
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 6))
        logger = CSVLogger(str(folder))
        evaluator = EvaluationPlugin(accuracy_metrics(experience=True, stream=True), loss_metrics(experience=True),
                                     forgetting_metrics(experience=True), loggers=[logger])
        kw = dict(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                  criterion=nn.CrossEntropyLoss(), train_mb_size=16, train_epochs=1, eval_mb_size=64,
                  device="cpu", evaluator=evaluator)
        strategy = Naive(**kw) if method == "naive" else Replay(mem_size=30, **kw)
        before = strategy.eval(bm.test_stream) if eval_first else None
        results = []
        for exp in bm.train_stream:
            strategy.train(exp)
            results.append(strategy.eval(bm.test_stream))
        logger.close()
    return before, results


@pytest.fixture(scope="module")
def runs_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("avalanche_runs")
    lines_csv, lines_json, dicts = ["file,method,seed"], ["file,method,seed"], {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in ("naive", "replay"):
            for seed in (0, 1):
                name = f"{method}_seed{seed}"
                before, results = _train(method, seed, root / name, eval_first=(method, seed) == ("naive", 0))
                dicts[(method, seed)] = (before, results)
                (root / f"{name}.json").write_text(json.dumps(results, default=str))
                lines_csv.append(f"{name},{method},{seed}")
                lines_json.append(f"../{name}.json,{method},{seed}")
    (root / "runs.csv").write_text("\n".join(lines_csv) + "\n")
    (root / "json").mkdir()
    (root / "json" / "runs.csv").write_text("\n".join(lines_json) + "\n")
    return root, dicts


def _avalanche_matrix(results):
    """Avalanche's own numbers, read here independently of clkit: row i = dict after experience i."""
    return np.array([[d[KEY(j)] for j in range(T)] for d in results])


def test_csvlogger_matrix_equals_avalanche_accuracies(runs_folder):
    root, dicts = runs_folder
    rs = read_runs(root)
    assert len(rs) == 4 and rs.methods == ["naive", "replay"]
    for run in rs:
        own = _avalanche_matrix(dicts[(run.method, int(run.seed))][1])
        assert run.R.shape == (T, T) and run.source.endswith("eval_results.csv")
        np.testing.assert_allclose(run.R, own, atol=5e-5)  # CSVLogger writes %.4f
        assert not np.isnan(run.R).any()  # every experience evaluated after each one: fwt defined
    # the evaluation before any training is logged with training_exp None and not used
    naive0 = rs.runs[0]
    assert (naive0.method, naive0.seed) == ("naive", "0")
    assert f"{T} row(s) before training (training_exp None) not used" in naive0.used
    assert "before training" not in rs.runs[1].used


def test_csvlogger_forgetting_column_is_row_after_training(runs_folder):
    """Avalanche's ExperienceForgetting (its CSV column) is R[j, j] - R[i, j]: rows are 'after training i'."""
    root, dicts = runs_folder
    lines = (root / "replay_seed1" / "eval_results.csv").read_text().splitlines()
    assert lines[0] == "eval_exp,training_exp,eval_accuracy,eval_loss,forgetting"
    R, _ = read_avalanche_csv(root / "replay_seed1" / "eval_results.csv")
    for line in lines[1:]:
        ev, tr, _, _, forgetting = line.split(",")
        i, j = int(tr), int(ev)
        if j < i:
            assert float(forgetting) == pytest.approx(R[j, j] - R[i, j], abs=2e-4)


def test_results_dicts_equal_avalanche_accuracies(runs_folder):
    root, dicts = runs_folder
    for (method, seed), (_, results) in dicts.items():
        R, reported, used = read_avalanche_results(results, run=f"{method} seed {seed}")
        np.testing.assert_array_equal(R, _avalanche_matrix(results))
        # equal test sets per experience: Avalanche's stream accuracy is clkit's ACC (final-row mean)
        assert reported["acc_stream"] == pytest.approx(R[-1].mean(), abs=1e-9)
        # ExperienceForgetting of the last dict: R[k, k] - R[T-1, k], k < T-1
        np.testing.assert_allclose(reported["forgetting_exp"], np.diag(R)[:-1] - R[-1, :-1], atol=1e-9)
        assert "Avalanche eval results, 3 dicts, 9 cells" in used and "other key(s) read, not used" in used
    rs = read_runs(root / "json")
    assert len(rs) == 4
    for run in rs:
        np.testing.assert_array_equal(run.R, _avalanche_matrix(dicts[(run.method, int(run.seed))][1]))
        assert run.source.endswith(".json") and set(run.reported) == {"acc_stream", "forgetting_exp"}
    assert disagreements(rs.runs).empty
    res = compare(rs, reference="naive")
    assert "ACC: replay − naive" in res["table"].index


def test_results_dicts_refused(runs_folder):
    _, dicts = runs_folder
    before, results = dicts[("naive", 0)]
    with pytest.raises(ValueError, match=r"run naive seed 0: 4 results dict\(s\) but experiences 0..2 evaluated"):
        read_avalanche_results([before] + results, run="naive seed 0")
    with pytest.raises(ValueError, match=r"no key Top1_Acc_Exp"):
        read_avalanche_results([{"Loss_Exp/eval_phase/test_stream/Task000/Exp000": 1.0}], run="naive seed 0")


def _train_plugin(folder, metrics_of, seed=0):
    """One Naive run with the EvaluationPlugin built by ``metrics_of(avalanche.evaluation.metrics)``."""
    from torch import nn
    from avalanche.benchmarks import nc_benchmark
    from avalanche.evaluation import metrics as am
    from avalanche.logging import CSVLogger
    from avalanche.training.plugins import EvaluationPlugin
    from avalanche.training.supervised import Naive

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        bm = nc_benchmark(_dataset(0, 40), _dataset(1, 20), n_experiences=T, task_labels=False,
                          fixed_class_order=list(range(6)))
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 6))
        logger = CSVLogger(str(folder))
        strategy = Naive(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                         criterion=nn.CrossEntropyLoss(), train_mb_size=16, train_epochs=1, eval_mb_size=64,
                         device="cpu", evaluator=EvaluationPlugin(*metrics_of(am), loggers=[logger]))
        results = []
        for exp in bm.train_stream:
            strategy.train(exp)
            results.append(strategy.eval(bm.test_stream))
        logger.close()
    return results


def test_real_csvlogger_without_experience_accuracy_refused(tmp_path):
    """Issue 54: without accuracy_metrics(experience=True) CSVLogger writes eval_accuracy as the literal 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _train_plugin(tmp_path / "run", lambda am: [am.accuracy_metrics(stream=True), am.loss_metrics(experience=True)])
    with pytest.raises(ValueError, match=r"eval_accuracy is the literal '0'.*accuracy_metrics\(experience=True\)"):
        read_avalanche_csv(tmp_path / "run" / "eval_results.csv")


def test_real_stream_forgetting_and_bwt_match_their_definitions(tmp_path):
    """Issue 54: StreamForgetting is the mean over k < T-1 of R[k, k] - R[T-1, k]; StreamBWT is clkit's BWT."""
    from clkit.compare.metrics import check_reported, framework_form
    from clkit.compare.runs import Run

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = _train_plugin(tmp_path / "run", lambda am: [
            am.accuracy_metrics(experience=True, stream=True), am.forgetting_metrics(experience=True, stream=True),
            am.bwt_metrics(stream=True)])
    R, reported, _ = read_avalanche_results(results, run="naive seed 0")
    assert {"acc_stream", "forgetting_stream", "bwt", "forgetting_exp"} <= set(reported)
    assert reported["forgetting_stream"] == pytest.approx(framework_form("forgetting_stream", R), abs=1e-9)
    table = check_reported([Run("naive", "0", None, None, R, "x", reported)])
    assert set(table["status"]) == {"agrees"}, table
