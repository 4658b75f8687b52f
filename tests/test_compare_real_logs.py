"""Issue 54: logs Avalanche, PyCIL and MLflow write by default, read exactly or refused with their cause.

Fixtures: ``tests/data/compare/avalanche_placeholder`` and ``pycil_multi_seed`` are fabricated in the
frameworks' formats by ``tests/make_framework_fixtures.py`` (Avalanche's ``csv_logger.py`` at v0.6.0,
PyCIL's ``trainer.py`` at f3509b8); the MLflow SQLite store is written here by mlflow-skinny itself.
"""

from pathlib import Path

import numpy as np
import pytest

from clkit.compare import (Run, check_reported, compare, disagreements, framework_form, read_avalanche_results,
                           read_mammoth_log, read_pycil_log, read_runs)
from clkit.compare.checks import check_scores

DATA = Path(__file__).parent / "data" / "compare"
MULTI = DATA / "pycil_multi_seed" / "logs" / "finetune" / "cifar100" / "0" / "10"


# ------------------------------------------------------------------------------------- placeholders

def test_avalanche_placeholder_zero_column_refused_with_cause():
    with pytest.raises(ValueError, match=r"naive_seed0/eval_results.csv' \(run naive seed 0\) line 2: field "
                                         r"eval_accuracy is the literal '0' in 9 of 9 row\(s\).*"
                                         r"accuracy_metrics\(experience=True\)"):
        read_runs(DATA / "avalanche_placeholder")


def test_measured_zero_accuracy_is_not_a_placeholder(tmp_path):
    f = tmp_path / "eval_results.csv"
    f.write_text("eval_exp,training_exp,eval_accuracy,eval_loss,forgetting\n"
                 "0,0,0.9000,0.3000,0\n1,0,0.0000,2.0000,0\n0,1,0.0000,1.1000,0.9000\n1,1,0.8000,0.5000,0\n")
    from clkit.compare import read_avalanche_csv

    R, reported, _ = read_avalanche_csv(f, with_reported=True)
    assert R.tolist() == [[0.9, 0.0], [0.0, 0.8]] and reported == {"forgetting_exp": [0.9]}


@pytest.mark.parametrize("percent", [False, True])
def test_all_zero_diagonal_refused_in_every_reader(percent):
    R = np.array([[0.0, np.nan], [0.3, 0.0]]) * (100 if percent else 1)
    with pytest.raises(ValueError, match=r"x \(run a seed 0\): field accuracy: the diagonal R\[k, k\] is 0 for all "
                                         r"2 tasks.*placeholder"):
        check_scores(R, where="x (run a seed 0)", percent=percent, declared=False)
    assert check_scores([[0.0, np.nan], [0.3, 0.2]], where="x").shape == (2, 2)  # one zero is a measurement


# ------------------------------------------------------------------------------- PyCIL, several seeds

def test_pycil_multi_seed_folder_skips_the_empty_sibling_with_a_note():
    rs = read_runs(DATA / "pycil_multi_seed" / "logs")
    assert [r.label for r in rs] == ["finetune seed 1993", "finetune seed 1994"]
    assert rs.notes[0] == "PyCIL logs read: 1"
    assert len(rs.notes) == 2 and rs.notes[1].startswith("skipped 1 empty PyCIL log(s)")
    assert "reproduce_1994_resnet32.log (its seed is in reproduce_1993_resnet32.log)" in rs.notes[1]
    single = {r.seed: r.R for r in read_runs(DATA / "pycil" / "logs" / "finetune")}
    for r in rs:  # the same numbers as the one-seed-per-file logs
        np.testing.assert_array_equal(r.R, single[r.seed])


def test_pycil_empty_log_in_a_manifest_reads_its_seed_from_the_sibling(tmp_path):
    (tmp_path / "runs.csv").write_text(f"file,method,seed,format\n{MULTI / 'reproduce_1994_resnet32.log'},"
                                       "finetune,1994,pycil\n")
    r = read_runs(tmp_path).runs[0]
    assert r.seed == "1994" and "read from reproduce_1993_resnet32.log" in r.used
    np.testing.assert_array_equal(r.R, read_pycil_log(MULTI / "reproduce_1993_resnet32.log", seed="1994").runs[0].R)


def test_pycil_empty_log_alone_names_the_cause(tmp_path):
    with pytest.raises(ValueError, match=r"the log is empty \(0 bytes\)\. PyCIL logs every seed of a multi-seed run"):
        read_runs(MULTI / "reproduce_1994_resnet32.log")
    lone = tmp_path / "logs" / "der" / "reproduce_7_resnet32.log"
    lone.parent.mkdir(parents=True)
    lone.write_text("")
    with pytest.raises(ValueError, match=r"empty \(0 bytes\) and no log beside it holds its seed"):
        read_runs(tmp_path / "logs")


# --------------------------------------------------------------------------- framework definitions

def _stream_dicts(R):
    """Avalanche 0.6 eval dicts of R, with StreamForgetting / StreamBWT / ExperienceForgetting computed as
    avalanche/evaluation/metrics/forgetting_bwt.py does (initial = R[k, k], last = R[T-1, k], k < T-1)."""
    T = len(R)
    k = "Top1_Acc_Exp/eval_phase/test_stream/Task000/Exp{:03d}".format
    dicts = [{k(j): float(R[i, j]) for j in range(T)} for i in range(T)]
    f = [R[j, j] - R[T - 1, j] for j in range(T - 1)]
    dicts[-1].update({"Top1_Acc_Stream/eval_phase/test_stream/Task000": float(R[-1].mean()),
                      "StreamForgetting/eval_phase/test_stream": float(np.mean(f)),
                      "StreamBWT/eval_phase/test_stream": -float(np.mean(f)),
                      **{f"ExperienceForgetting/eval_phase/test_stream/Task000/Exp{j:03d}": f[j] for j in range(T - 1)}})
    return dicts


def test_avalanche_stream_forgetting_is_its_own_definition_not_a_disagreement():
    # task 0 peaks after task 1: Chaudhry's max (0.9 - 0.3) differs from Avalanche's R[0, 0] - R[2, 0] (0.5 - 0.3)
    R = np.array([[0.5, 0.1, 0.1], [0.9, 0.8, 0.1], [0.3, 0.6, 0.7]])
    Rr, reported, used = read_avalanche_results(_stream_dicts(R), run="naive seed 0")
    assert set(reported) == {"acc_stream", "forgetting_stream", "bwt", "forgetting_exp"}
    assert reported["forgetting_stream"] == pytest.approx(((0.5 - 0.3) + (0.8 - 0.6)) / 2)
    assert framework_form("forgetting", R) == pytest.approx(((0.9 - 0.3) + (0.8 - 0.6)) / 2)  # 0.2 apart
    run = Run("naive", "0", None, None, Rr, "x.json", reported)
    table = check_reported([run])
    assert set(table["status"]) == {"agrees"} and disagreements([run]).empty
    assert "StreamBWT" in used and "StreamForgetting" in used
    # a changed StreamForgetting is a real disagreement, and says why
    run.reported["forgetting_stream"] += 0.01
    d = disagreements([run])
    assert d["metric"].tolist() == ["forgetting_stream"] and "R[k, k] - R[T-1, k]" in d.loc[0, "definition"]
    assert d.loc[0, "why"]


def test_mammoth_forward_transfer_is_not_checkable_not_a_disagreement(tmp_path):
    f = tmp_path / "logs.pyd"
    cells = {"accuracy_1_task1": 90.0, "accuracy_1_task2": 95.0, "accuracy_2_task2": 80.0,
             "accuracy_1_task3": 60.0, "accuracy_2_task3": 70.0, "accuracy_3_task3": 75.0}
    line = {"model": "er", "seed": 0, "accmean_task1": 90.0, "accmean_task2": 87.5, "accmean_task3": 205 / 3,
            **cells, "forward_transfer": 12.0, "backward_transfer": ((60 - 90) + (70 - 80)) / 2,
            "forgetting": ((95 - 60) + (80 - 70)) / 2}  # mammoth: max over all rows (95 after task 2)
    f.write_text(str(line) + "\n")
    rs = read_mammoth_log(f)
    table = check_reported(rs.runs)
    status = dict(zip(table["metric"], table["status"]))
    assert status == {"acc": "agrees", "bwt": "agrees", "fwt_random": "not checkable", "forgetting_max": "agrees"}
    assert disagreements(rs.runs).empty
    assert framework_form("forgetting", rs.runs[0].R) == pytest.approx(((95 - 60) + (80 - 70)) / 2 / 100)


def test_fixture_frameworks_agree_with_their_own_forms():
    for path in (DATA / "mammoth" / "class-il" / "seq-cifar10", DATA / "pycil" / "logs"):
        rs = read_runs(path)
        table = check_reported(rs.runs)
        assert len(table) >= 2 * len(rs) and set(table["status"]) == {"agrees"}, table
    av = read_runs(DATA / "avalanche")  # the CSV's ExperienceForgetting column, cell by cell
    table = check_reported(av.runs)
    assert (table["metric"] == "forgetting_exp").sum() == 4 and set(table["status"]) == {"agrees"}


def test_compare_reports_checks_and_only_real_disagreements():
    res = compare(read_runs(DATA / "pycil" / "logs"), reference="finetune")
    assert set(res["checks"]["status"]) == {"agrees"} and res["disagreements"].empty
    assert "agree with the same definition computed from R" in res["paragraph"]


# ------------------------------------------------------------------------------- MLflow SQLite store

@pytest.fixture(scope="module")
def mlflow_db(tmp_path_factory):
    """MLflow 3's default store (sqlite:///mlflow.db) written by mlflow-skinny: 2 methods x 2 seeds, 3 tasks."""
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("sqlalchemy")
    from mlflow.tracking import MlflowClient

    root = tmp_path_factory.mktemp("mlflow_sqlite")
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    exp = client.create_experiment("cl")
    logged = {}
    for m_i, method in enumerate(("naive", "replay")):
        for seed in (0, 1):
            run = client.create_run(exp, run_name=f"{method}_{seed}")
            rid = run.info.run_id
            client.log_param(rid, "method", method)
            client.log_param(rid, "seed", seed)
            R = np.full((3, 3), np.nan)
            for i in range(3):
                for j in range(i + 1):
                    R[i, j] = round(0.9 - 0.2 * (i - j) * (1 - 0.5 * m_i) - 0.01 * seed, 4)
                    client.log_metric(rid, f"acc_task_{j}", R[i, j], step=i, timestamp=1000 * i + j)
            client.set_terminated(rid)
            logged[(method, str(seed))] = R
    gone = client.create_run(exp, run_name="deleted")
    client.delete_run(gone.info.run_id)
    return root, logged


def test_mlflow_sqlite_store_read_through_the_client(mlflow_db):
    root, logged = mlflow_db
    for path in (root / "mlflow.db", root):
        rs = read_runs(path)
        assert rs.format == "mlflow" and len(rs) == 4
        for r in rs:
            np.testing.assert_array_equal(r.R, logged[(r.method, r.seed)])
            assert "MLflow SQLite store" in r.used and "read with MlflowClient" in r.used
        assert any("is deleted: not read" in n for n in rs.notes)


def test_mlflow_sqlite_in_a_manifest_and_on_the_command_line(mlflow_db, tmp_path, capsys):
    root, logged = mlflow_db
    (tmp_path / "runs.csv").write_text(f"file,method,seed,format\n{root / 'mlflow.db'},naive,1,mlflow\n"
                                       f"{root / 'mlflow.db'},replay,1,\n")  # format recognised from the file
    rs = read_runs(tmp_path)
    assert [r.label for r in rs] == ["naive seed 1", "replay seed 1"]
    for r in rs:  # the row's seed, then its method, choose the run in the store
        np.testing.assert_array_equal(r.R, logged[(r.method, "1")])
    from clkit.cli import main

    assert main(["compare", str(root / "mlflow.db"), "--reference", "naive"]) == 0
    out = capsys.readouterr().out
    assert "4 run(s) read from" in out and "utf-8" not in out


def test_sqlite_file_without_mlflow_tables_refused(tmp_path):
    import sqlite3

    f = tmp_path / "mlflow.db"
    sqlite3.connect(f).execute("create table t (a)").connection.commit()
    with pytest.raises(ValueError, match=r"SQLite database without MLflow's tables"):
        read_runs(f)
    assert sqlite3.connect(f).execute("select count(*) from sqlite_master").fetchone()[0] == 1  # left untouched
