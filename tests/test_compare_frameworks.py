"""mammoth's logs.pyd and PyCIL's log into clkit compare (fixtures: tests/make_framework_fixtures.py)."""

import argparse
import shutil

import numpy as np
import pytest

from clkit.compare import read_folder, read_mammoth_log, read_pycil_log, read_runs
from clkit.compare.checks import check_runs

from test_compare import DATA

MAMMOTH = DATA / "mammoth" / "class-il" / "seq-cifar10"
PYCIL = DATA / "pycil"
PYCIL_ICARL = PYCIL / "logs" / "icarl" / "cifar100" / "0" / "10" / "reproduce_1993_resnet32.log"


def test_mammoth_reader_hand_checked():
    rs = read_mammoth_log(MAMMOTH / "derpp" / "logs.pyd")
    assert rs.format == "mammoth" and [r.label for r in rs] == ["derpp seed 0", "derpp seed 1"]
    R = rs.runs[0].R  # counts 980; 901, 960; 870, 890, 955 out of 1000
    np.testing.assert_allclose(R[np.tril_indices(3)], [0.98, 0.901, 0.96, 0.87, 0.89, 0.955])
    assert np.isnan(R[np.triu_indices(3, 1)]).all()
    rep = rs.runs[0].reported
    assert rep["acc"] == pytest.approx((0.87 + 0.89 + 0.955) / 3)
    assert rep["bwt"] == pytest.approx(((0.87 - 0.98) + (0.89 - 0.96)) / 2) and "fwt" not in rep
    assert rep["forgetting_max"] == pytest.approx(0.09)  # mammoth's form: max over all rows, the last included


def test_pycil_reader_hand_checked():
    r = read_pycil_log(PYCIL_ICARL).runs[0]
    assert r.label == "icarl seed 1993" and "lines 1-55" in r.source
    np.testing.assert_allclose(r.R[np.tril_indices(3)], [0.915, 0.78, 0.85, 0.69, 0.72, 0.835])
    assert r.reported == pytest.approx({"acc_stream": (0.69 + 0.72 + 0.835) / 3, "forgetting_max": 0.1775}, abs=1e-4)
    nme = read_pycil_log(PYCIL_ICARL, head="nme").runs[0]
    np.testing.assert_allclose(nme.R[2], [0.685, 0.715, 0.83])


def test_pycil_several_seeds_in_one_log_and_wider_tasks(tmp_path):
    # train() loops over seeds in one process; basicConfig keeps the first file: both runs in one log
    a = PYCIL_ICARL.read_text()
    b = (PYCIL_ICARL.parent / "reproduce_1994_resnet32.log").read_text()
    f = tmp_path / "both.log"
    f.write_text(a + b)
    rs = read_pycil_log(f)
    assert [r.seed for r in rs] == ["1993", "1994"]
    assert read_pycil_log(f, method="iCaRL", seed="1994", label="iCaRL seed 1994").runs[0].R[2, 0] == \
        pytest.approx(0.684)
    # tasks of 20 classes: two 10-class groups each, averaged
    g = tmp_path / "wide.log"
    g.write_text(a.replace("init_cls: 10", "init_cls: 20").replace("increment: 10", "increment: 20")
                 .replace("'10-19': np.float64(85.0), ", "'10-19': np.float64(85.0), '20-29': np.float64(70.0), "
                          "'30-39': np.float64(80.0), ", 1))
    lines = [ln for ln in g.read_text().splitlines() if "CNN: {" not in ln or "'30-39'" in ln or "'10-19'" not in ln]
    # keep task 0 (00-09, 10-19 -> make it 2 groups) and the edited task 1 row only
    text = "\n".join(lines).replace("'00-09': np.float64(91.5), 'old'", "'00-09': np.float64(91.5), "
                                    "'10-19': np.float64(89.5), 'old'", 1)
    g.write_text(text + "\n")
    R = read_pycil_log(g).runs[0].R
    np.testing.assert_allclose(R, [[0.905, np.nan], [0.815, 0.75]])


def test_pycil_bad_increment(tmp_path):
    f = tmp_path / "b.log"
    f.write_text(PYCIL_ICARL.read_text().replace("increment: 10", "increment: 5"))
    with pytest.raises(ValueError, match=r"b\.log.*run icarl seed 1993.*field increment = 5"):
        read_pycil_log(f)


def test_cli_compare_mammoth_and_pycil_folders(tmp_path, capsys):
    from clkit.cli import compare as cli_compare

    for folder, ref, other in ((MAMMOTH, "sgd", "derpp"), (PYCIL, "finetune", "icarl")):
        ap = argparse.ArgumentParser(prog="clkit")
        sub = ap.add_subparsers(dest="cmd", required=True)
        cli_compare.register(sub)
        args = ap.parse_args(["compare", str(folder), "--reference", ref, "--out", str(tmp_path / ref)])
        assert args.func(args) == 0
        out = capsys.readouterr().out
        assert "4 run(s) read" in out and f"ACC: {other} − {ref}" in out
        assert (tmp_path / ref / "results.json").exists()


def test_manifest_format_column(tmp_path):
    shutil.copytree(MAMMOTH, tmp_path / "m")
    (tmp_path / "runs.csv").write_text(
        "file,method,seed,format,reported_acc\n"
        "m/sgd/logs.pyd,SGD,1,mammoth,\n"
        "m/derpp/logs.pyd,DER++,1,mammoth,0.5\n")
    rs = read_folder(tmp_path)
    assert [r.label for r in rs] == ["SGD seed 1", "DER++ seed 1"]
    assert rs.runs[0].R[2, 0] == pytest.approx(0.322)
    assert rs.runs[1].reported["acc"] == 0.5 and "used over the log's" in rs.runs[1].used
    (tmp_path / "runs.csv").write_text("file,method,seed,format\nm/sgd/logs.pyd,SGD,7,mammoth\n")
    with pytest.raises(ValueError, match=r"logs\.pyd.*run SGD seed 7.*field seed"):
        read_folder(tmp_path)
    (tmp_path / "runs.csv").write_text("file,method,seed,format\nm/sgd/logs.pyd,SGD,1,weka\n")
    with pytest.raises(ValueError, match=r"run SGD seed 1.*field format = 'weka'"):
        read_folder(tmp_path)
    # PyCIL log recognised without a format column
    shutil.copy(PYCIL_ICARL, tmp_path / "icarl.log")
    (tmp_path / "runs.csv").write_text("file,method,seed\nicarl.log,icarl,1993\n")
    assert read_folder(tmp_path).runs[0].R[1, 0] == pytest.approx(0.78)


def test_truncated_logs(tmp_path):
    f = tmp_path / "logs.pyd"
    text = (MAMMOTH / "sgd" / "logs.pyd").read_text()
    f.write_text(text[: len(text) - 200])
    with pytest.raises(ValueError, match=r"logs\.pyd' line 2 \(run sgd seed 1\): field line: .*truncated"):
        read_mammoth_log(f)
    g = tmp_path / "p.log"
    g.write_text("\n".join(PYCIL_ICARL.read_text().splitlines()[:40]) + "\n")
    with pytest.raises(ValueError, match=r"p\.log' lines 1-\d+ \(run icarl seed 1993\): field Forgetting \(CNN\)"):
        read_pycil_log(g)


def test_missing_task(tmp_path):
    f = tmp_path / "logs.pyd"
    f.write_text((MAMMOTH / "sgd" / "logs.pyd").read_text().replace("'accuracy_2_task3': 35.5, ", "", 1))
    with pytest.raises(ValueError, match=r"logs\.pyd' line 1 \(run sgd seed 0\): field accuracy_J_task3 misses "
                                         r"task\(s\) \[2\]"):
        read_mammoth_log(f)
    g = tmp_path / "p.log"
    g.write_text(PYCIL_ICARL.read_text().replace("'10-19': np.float64(72.0), ", "", 1))
    with pytest.raises(ValueError, match=r"p\.log' line \d+ \(run icarl seed 1993\): field CNN groups after task 3.*"
                                         r"missing \['10-19'\]"):
        read_pycil_log(g)


def test_task_count_differs_between_runs(tmp_path):
    shutil.copytree(MAMMOTH, tmp_path / "m")
    f = tmp_path / "m" / "derpp" / "logs.pyd"
    first, second = f.read_text().splitlines()
    # drop task 3 from seed 1's line
    cut = second[: second.index(", 'accmean_task3'")] + second[second.index(", 'accuracy_1_task1'"):]
    cut = cut[: cut.index(", 'accuracy_1_task3'")] + cut[cut.index(", 'cpu_memory_usage'"):]
    f.write_text(first + "\n" + cut + "\n")
    rs = read_runs(tmp_path / "m")
    with pytest.raises(ValueError, match=r"field num_tasks.*derpp.*logs\.pyd line 2 \(run derpp seed 1\) has 2"):
        check_runs(rs.runs)


def test_pycil_b50_inc10_tasks_are_the_mean_of_their_ten_class_groups(tmp_path):
    """PyCIL's B50-Inc10 setting (init_cls 50, increment 10): task 0 holds the groups 00-09 … 40-49,
    each later task one group; a task's accuracy is the mean of its groups (equal test sets per group)."""
    t = "2024-01-01 00:00:00,000 [trainer.py] => "
    g1 = {"00-09": 90.0, "10-19": 80.0, "20-29": 70.0, "30-39": 60.0, "40-49": 50.0}
    g2 = {**{k: v - 10 for k, v in g1.items()}, "50-59": 88.0}
    g3 = {**{k: v - 20 for k, v in g1.items()}, "50-59": 66.0, "60-69": 77.0}

    def cnn(groups):
        total = sum(groups.values()) / len(groups)
        return "CNN: {'total': " + repr(total) + ", " + ", ".join(f"'{k}': np.float64({v})" for k, v in
                                                                      groups.items()) + ", 'old': 0, 'new': 0}"

    lines = ["model_name: der", "init_cls: 50", "increment: 10", "seed: 1993"]
    for g in (g1, g2, g3):
        lines += ["All params: 5", cnn(g)]
    lines.append("Forgetting (CNN): 12.5")
    f = tmp_path / "reproduce_1993_resnet32.log"
    f.write_text("".join(t + s + "\n" for s in lines))
    r = read_pycil_log(f).runs[0]
    expect = np.array([[70.0, np.nan, np.nan],      # mean of 90, 80, 70, 60, 50
                       [60.0, 88.0, np.nan],
                       [50.0, 66.0, 77.0]]) / 100
    np.testing.assert_allclose(r.R, expect, equal_nan=True)
    assert r.reported["acc_stream"] == pytest.approx((70 + 60 + 50 + 40 + 30 + 66 + 77) / 7 / 100)  # last total
    assert "mean of up to 5 10-class groups per task" in r.used
