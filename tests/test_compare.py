"""clkit.compare and ``clkit compare``: readers, checks, recomputed metrics, verdicts with a null control."""

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from clkit import stats
from clkit.compare import (Run, check_runs, compare, disagreements, read_avalanche_csv, read_folder, read_long_csv,
                           read_runs, run_metrics, write_report)

DATA = Path(__file__).parent / "data" / "compare"


def _write_matrix(path, R):
    path.write_text("\n".join(",".join("" if np.isnan(v) else repr(float(v)) for v in row) for row in R) + "\n")


def _matrix(rng, T=4, base=0.7, noise=0.03, final_shift=0.0):
    """A plausible R: trained tasks near ``base``, forgetting with distance, NaN above the diagonal."""
    R = np.full((T, T), np.nan)
    for i in range(T):
        for j in range(i + 1):
            R[i, j] = base + 0.2 - 0.08 * (i - j) + noise * rng.standard_normal()
    R[-1] += final_shift
    return np.clip(R, 0, 1)


def _folder(tmp_path, spec):
    """Write matrices and runs.csv for ``spec``: [(method, seed, R, extra manifest fields)]."""
    head = ["file", "method", "seed"]
    extra_cols = sorted({k for *_, e in spec for k in e})
    lines = [",".join(head + extra_cols)]
    for method, seed, R, extra in spec:
        f = f"{method}_{seed}.csv"
        _write_matrix(tmp_path / f, R)
        lines.append(",".join([f, method, str(seed)] + [str(extra.get(c, "")) for c in extra_cols]))
    (tmp_path / "runs.csv").write_text("\n".join(lines) + "\n")
    return tmp_path


def _planted(seed_offset_c=100):
    """8 seeds of A; B = A + 0.05 on every final-row cell (plus its own small noise); C = A's process, other seeds."""
    runs = []
    for s in range(8):
        a = _matrix(np.random.default_rng(s))
        b = a.copy()
        b[-1] = np.clip(a[-1] + 0.05 + 0.01 * np.random.default_rng(1000 + s).standard_normal(a.shape[1]), 0, 1)
        c = _matrix(np.random.default_rng(seed_offset_c + s))
        runs += [Run("A", str(s), None, None, a, f"A_{s}.csv"), Run("B", str(s), None, None, b, f"B_{s}.csv"),
                 Run("C", str(s), None, None, c, f"C_{s}.csv")]
    return runs


# ---------------------------------------------------------------- readers

def test_tidy_folder_reader():
    rs = read_runs(DATA / "tidy")
    assert rs.format == "folder" and len(rs) == 6 and rs.methods == ["finetune", "er"]
    r = rs.runs[3]
    assert r.label == "er seed 0 order o1" and r.source.endswith("er_seed0.csv")
    assert r.R[0, 0] == pytest.approx(0.8970) and np.isnan(r.R[0, 1]) and r.R[2, 1] == pytest.approx(0.7445)
    assert set(r.reported) == {"acc", "bwt", "forgetting"}
    assert "manifest columns not used: framework_note" in r.used and "header row: yes" in r.used
    assert any("framework_note" in n for n in rs.notes)
    assert len(rs.listing()) == 6


def test_yaml_manifest(tmp_path):
    _write_matrix(tmp_path / "a.csv", np.array([[90.0, np.nan], [60.0, 80.0]]))
    (tmp_path / "runs.yaml").write_text("runs:\n  - {file: a.csv, method: ewc, seed: 3, reported_acc: 70}\n")
    rs = read_folder(tmp_path, percent=True)
    assert rs.runs[0].R.tolist()[1] == [0.6, 0.8] and rs.runs[0].reported == {"acc": 0.7}
    assert "divided by 100" in rs.runs[0].used


def test_avalanche_csvlogger_reader():
    # the fixture is in the format of avalanche/logging/csv_logger.py (v0.6.0), fabricated: see readers' docstring
    rs = read_runs(DATA / "avalanche")
    assert len(rs) == 4 and rs.methods == ["naive", "replay"]
    r = rs.runs[0]
    assert r.source.endswith("naive_seed0/eval_results.csv")
    assert r.R.shape == (3, 3)
    assert r.R[0].tolist() == [0.9390, 0.0007, 0.0129]
    assert r.R[2].tolist() == [0.3492, 0.6647, 0.9394]
    assert "3 row(s) before training (training_exp None) not used" in r.used
    assert "eval_loss read, not used" in r.used
    assert "before training" not in rs.runs[1].used


def test_avalanche_repeated_and_tensor_rows(tmp_path):
    f = tmp_path / "eval_results.csv"
    head = "eval_exp,training_exp,eval_accuracy,eval_loss,forgetting\n"
    f.write_text(head + "0,0,0.5000,1.0,0\n0,0,0.9000,0.3,0\n1,0,0.1000,2.0,0\n0,1,0.6000,1.0,0.3\n1,1,0.8000,0.4,0\n")
    R, used = read_avalanche_csv(f, run="naive seed 0")
    assert R[0, 0] == 0.9 and "1 repeated (training_exp, eval_exp) row(s): the last one used" in used
    f.write_text(head + "0,0,\ntensor([0.9])\n")
    with pytest.raises(ValueError, match=r"eval_results.csv' \(run naive seed 0\) line 2: 3 cells"):
        read_avalanche_csv(f, run="naive seed 0")


def test_long_csv_reader():
    with pytest.raises(ValueError, match=r"long.csv rows 2-4 \(run lwf seed 0 order a\): field accuracy R\[0, 0\] = 90 "
                                         r"is outside \[0, 1\].*percent"):
        read_runs(DATA / "long.csv")
    rs = read_long_csv(DATA / "long.csv", percent=True)
    assert rs.format == "long" and len(rs) == 8
    r = rs.runs[1]
    assert r.label == "lwf seed 0 order b"
    assert r.R.tolist()[0][0] == pytest.approx(0.91) and np.isnan(r.R[0, 1]) and r.R[1, 0] == pytest.approx(0.61)
    assert "columns not used: wandb_step" in r.used and "wandb_step" in rs.notes[0]


# ---------------------------------------------------------------- metrics

def test_recomputed_metrics_by_hand():
    R = np.array([[0.9, 0.2, 0.1], [0.5, 0.8, 0.3], [0.3, 0.6, 0.7]])
    m = run_metrics(R)
    assert m["acc"] == pytest.approx((0.3 + 0.6 + 0.7) / 3)
    assert m["acc_all_seen"] == pytest.approx((0.9 + 0.5 + 0.8 + 0.3 + 0.6 + 0.7) / 6)
    assert m["bwt"] == pytest.approx(((0.3 - 0.9) + (0.6 - 0.8)) / 2)
    assert m["fwt"] == pytest.approx((0.2 + 0.1 + 0.3) / 3)
    assert m["forgetting"] == pytest.approx(((0.9 - 0.3) + (0.8 - 0.6)) / 2)
    from clkit.cli.metrics import cl_result   # the same numbers as `clkit metrics cl`
    ref = cl_result(R)
    assert all(m[k] == pytest.approx(ref[k]) for k in m)


def test_disagreement_with_reported_number_listed():
    rs = read_runs(DATA / "tidy")
    d = disagreements(rs)
    assert d[["run", "metric"]].values.tolist() == [["er seed 1 order o1", "acc"]]
    assert d.loc[0, "reported"] == pytest.approx(0.7771) and d.loc[0, "recomputed"] == pytest.approx(0.72710, abs=1e-4)
    res = compare(rs, reference="finetune")
    assert "Reported numbers disagree" in res["paragraph"] and len(res["disagreements"]) == 1


# ---------------------------------------------------------------- verdicts

def test_planted_effect_found_and_null_control_holds():
    res = compare(_planted(), comparisons=["B:A"], reference="A")
    t = res["table"]
    assert t.loc["ACC: B − A", "decision"] == "B higher"
    assert t.loc["ACC: B − A", "effect"] == pytest.approx(0.05, abs=0.01)
    assert t.loc["ACC: A − A (other seeds)", "decision"] == stats.NO_DIFFERENCE
    assert t.loc["ACC: A − A (other seeds)", "control"] == "holds"
    assert "**Controls hold**" in res["paragraph"] and "**Findings** (1 of 1)" in res["paragraph"]
    assert res["not_compared"] == ["C"]
    assert res["planner"][0].startswith("ACC: B − A: observed +0.048 (sd of differences 0.0080, 8 pairs)")


def test_seed_shifted_copy_not_found_different():
    res = compare(_planted(), comparisons=["C:A"])
    v = next(v for v in res["verdicts"] if v.comparison == "ACC: C − A")
    assert v.decision == stats.NO_DIFFERENCE and v.n == 8
    assert "No finding" in res["paragraph"]


def test_null_control_pairs_within_order():
    from clkit.compare import null_pairs

    rs = [Run("a", str(s), o, None, np.eye(2), "x") for o in ("o2", "o1") for s in (1, 0, 2)]
    assert [(x.order, x.seed, y.seed) for x, y in null_pairs(rs, "a")] == [("o1", "0", "1"), ("o2", "0", "1")]


def test_results_json_rederives(tmp_path):
    res = compare(_planted(), reference="A", target=0.01)
    paths = write_report(res, tmp_path / "out", params={"reference": "A"})
    names = sorted(p.name for p in paths)
    assert names == ["acc_per_method.png", "checks.csv", "disagreements.csv", "mean_R.png", "metrics.csv",
                     "results.json", "runs.csv", "verdicts.csv"]
    rec = json.loads((tmp_path / "out" / "results.json").read_text())
    rows = rec["results"]["verdicts"]
    again = stats.rederive(rows)
    assert [v.decision for v in again] == [r["decision"] for r in rows]
    assert rec["results"]["num_runs"] == 24 and rec["figures"] == ["acc_per_method.png", "mean_R.png"]
    assert any("to detect 0.01 you need" in line for line in rec["results"]["planner"])
    assert not list((tmp_path / "out").glob(".*tmp*"))


# ---------------------------------------------------------------- errors name the file, the run and the field

def test_different_task_counts(tmp_path):
    rng = np.random.default_rng(0)
    _folder(tmp_path, [("a", 0, _matrix(rng, 3), {}), ("a", 1, _matrix(rng, 3), {}), ("b", 0, _matrix(rng, 3), {}),
                       ("b", 1, _matrix(rng, 4), {})])
    with pytest.raises(ValueError, match=r"field num_tasks.*b_1\.csv \(run b seed 1\) has 4"):
        compare(read_runs(tmp_path), reference="a")


def test_missing_seed_listed(tmp_path):
    rng = np.random.default_rng(0)
    _folder(tmp_path, [("a", s, _matrix(rng, 3), {}) for s in range(4)]
            + [("b", s, _matrix(rng, 3), {}) for s in (0, 2)])
    with pytest.raises(ValueError, match=r"method 'b' is missing .*field seed.*: seed 1 \(a has it: .*a_1\.csv\), "
                                         r"seed 3 \(a has it: .*a_3\.csv\)"):
        compare(read_runs(tmp_path), reference="a")


def test_duplicated_run(tmp_path):
    rng = np.random.default_rng(0)
    _folder(tmp_path, [("a", 0, _matrix(rng, 3), {}), ("b", 0, _matrix(rng, 3), {})])
    (tmp_path / "runs.csv").write_text("file,method,seed\na_0.csv,a,0\nb_0.csv,a,0\n")
    with pytest.raises(ValueError, match=r"duplicated run a seed 0 \(field seed\): in .*a_0\.csv and in .*b_0\.csv"):
        check_runs(read_runs(tmp_path))


@pytest.mark.parametrize("cell", [(1, 1), (2, 0)])
def test_nan_on_or_below_diagonal(tmp_path, cell):
    R = _matrix(np.random.default_rng(0), 3)
    R[cell] = np.nan
    _folder(tmp_path, [("a", 0, R, {})])
    with pytest.raises(ValueError, match=rf"a_0\.csv' \(run a seed 0\): field accuracy.*missing value \(NaN\) at "
                                         rf"\[{cell[0]}, {cell[1]}\]"):
        read_runs(tmp_path)


def test_nan_below_diagonal_long_csv(tmp_path):
    f = tmp_path / "long.csv"
    f.write_text("method,seed,i,j,accuracy\na,0,0,0,0.9\na,0,1,1,0.8\n")
    with pytest.raises(ValueError, match=r"long\.csv rows 2-3 \(run a seed 0\): field accuracy R\[1, 0\] is missing"):
        read_runs(f)


def test_percent_vs_fraction(tmp_path):
    R = _matrix(np.random.default_rng(0), 3) * 100
    _folder(tmp_path, [("a", 0, R, {})])
    with pytest.raises(ValueError, match=r"a_0\.csv' \(run a seed 0\): field accuracy R\[0, 0\] = .* is outside "
                                         r"\[0, 1\].*--percent"):
        read_runs(tmp_path)
    assert np.nanmax(read_runs(tmp_path, percent=True).runs[0].R) <= 1
    _folder(tmp_path, [("a", 0, R / 100, {"reported_acc": "oops"})])
    with pytest.raises(ValueError, match=r"line 2 \(run a seed 0\): field reported_acc = 'oops' is not a number"):
        read_runs(tmp_path)


def test_bad_comparisons():
    runs = _planted()
    with pytest.raises(ValueError, match="method 'Z' is not among"):
        compare(runs, comparisons=["Z:A"])
    with pytest.raises(ValueError, match="A:B"):
        compare(runs, comparisons=["A-B"])
    with pytest.raises(ValueError, match="--compare A:B.*--reference"):
        compare(runs)


# ---------------------------------------------------------------- command line

def _cli(argv):
    from clkit.cli import compare as cli_compare

    ap = argparse.ArgumentParser(prog="clkit")
    sub = ap.add_subparsers(dest="cmd", required=True)
    cli_compare.register(sub)
    args = ap.parse_args(argv)
    return args.func(args)


def test_cli_compare(tmp_path, capsys):
    assert _cli(["compare", str(DATA / "tidy"), "--reference", "finetune", "--target-effect", "0.01",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "6 run(s) read" in out and "ACC: er − finetune" in out and "er seed 1 order o1" in out
    assert "seed budget:" in out and "to detect 0.01 you need" in out
    assert (tmp_path / "results.json").exists() and (tmp_path / "mean_R.png").exists()
    assert json.loads((tmp_path / "results.json").read_text())["params"]["reference"] == "finetune"


def test_cli_bad_input_one_line(capsys):
    assert _cli(["compare", str(DATA / "long.csv"), "--reference", "lwf"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("clkit compare: error:") and "run lwf seed 0 order a" in err[0]
    assert _cli(["compare", str(DATA / "long.csv"), "--percent"]) == 2


def test_metrics_tables_name_their_unit():
    """Issue 55: the recomputed metrics are fractions, and the tables' header says so."""
    from clkit.compare.metrics import UNITS, check_reported, metrics_table
    from clkit.compare.runs import Run

    runs = [Run("a", "0", None, None, np.array([[0.9, np.nan], [0.6, 0.8]]), "a0.csv", reported={"acc": 0.7})]
    assert metrics_table(runs).columns.name == UNITS == "metrics as fractions (0-1)"
    assert "fractions (0-1)" in check_reported(runs).columns.name
