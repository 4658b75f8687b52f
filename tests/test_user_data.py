"""clkit.data.user: the user's own files, each malformed one refused with a named message."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from clkit.data import user

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "data"


def test_stream_table_csv_and_parquet(tmp_path):
    t = pd.date_range("2024-01-01", periods=48, freq="30min")
    df = pd.DataFrame({"when": t[::-1], "a": np.arange(48.0)[::-1], "b": np.ones(48), "note": ["x"] * 48})
    df.to_csv(tmp_path / "s.csv", index=False)
    d = user.load_stream_table(tmp_path / "s.csv", time_column="when", value_columns=["a", "b"], target="b")
    assert d.values.shape == (1, 48, 2) and d.interval_minutes == 30.0 and d.target_index == 1
    assert d.values[0, :, 0].tolist() == list(range(48))  # sorted by time
    df.to_parquet(tmp_path / "s.parquet")
    d2 = user.load_stream_table(tmp_path / "s.parquet", time_column="when", value_columns=["a", "b"])
    np.testing.assert_array_equal(d.values, d2.values)
    two = pd.DataFrame({"ip": [1] * 5 + [2] * 5, "v": np.arange(10.0)})
    two.to_csv(tmp_path / "two.csv", index=False)
    assert user.load_stream_table(tmp_path / "two.csv", series_column="ip").values.shape == (2, 5, 1)


def test_stream_table_errors(tmp_path):
    f = tmp_path / "s.csv"
    pd.DataFrame({"t": range(6), "a": [1.0, 2, np.nan, 4, 5, 6]}).to_csv(f, index=False)
    with pytest.raises(ValueError, match=r"value_columns: column 'a' of '.*s.csv' has a missing value \(NaN\) at row 2"):
        user.load_stream_table(f, time_column="t")
    with pytest.raises(ValueError, match=r"value_columns: column\(s\) \['zz'\] not in .*its columns are \['t', 'a'\]"):
        user.load_stream_table(f, value_columns=["zz"])
    with pytest.raises(ValueError, match="time_column: column"):
        user.load_stream_table(f, time_column="time")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        user.load_stream_table(tmp_path / "nope.csv")
    (tmp_path / "s.txt").write_text("a\n1\n")
    with pytest.raises(ValueError, match="must be a CSV or Parquet file"):
        user.load_stream_table(tmp_path / "s.txt")
    pd.DataFrame({"t": [0, 1, 1, 2, 3], "a": range(5)}).to_csv(f, index=False)
    with pytest.raises(ValueError, match="repeated time stamps"):
        user.load_stream_table(f, time_column="t")


def test_class_name_files(tmp_path):
    (tmp_path / "n.txt").write_text("# c\ncat\n dog \n\nfrog\n")
    (tmp_path / "n.yaml").write_text("- cat\n- dog\n- frog\n")
    assert user.load_class_names_file(tmp_path / "n.txt") == user.load_class_names_file(tmp_path / "n.yaml") \
        == ["cat", "dog", "frog"]
    (tmp_path / "d.txt").write_text("cat\ncat\n")
    with pytest.raises(ValueError, match=r"repeats \['cat'\]"):
        user.load_class_names_file(tmp_path / "d.txt")
    (tmp_path / "one.txt").write_text("cat\n")
    with pytest.raises(ValueError, match="has 1 names, fewer than the 2 needed"):
        user.load_class_names_file(tmp_path / "one.txt")
    (tmp_path / "m.yaml").write_text("a: 1\nb: 2\n")
    with pytest.raises(ValueError, match="YAML list"):
        user.load_class_names_file(tmp_path / "m.yaml")


def write_image_folder(root, classes=("ant", "bee", "cat", "dog"), per_class=6, size=8, seed=0):
    from PIL import Image

    rng = np.random.default_rng(seed)
    for k, c in enumerate(classes):
        (root / c).mkdir(parents=True)
        for i in range(per_class):
            img = np.clip(rng.normal(40 + 50 * k, 10, size=(size, size)), 0, 255).astype(np.uint8)
            Image.fromarray(img).save(root / c / f"{i}.png")
    return root


def test_image_folder(tmp_path):
    root = write_image_folder(tmp_path / "imgs")
    ds = user.load_image_folder(root)
    assert ds.classes == ("ant", "bee", "cat", "dog") and ds.x_train.shape == (12, 8, 8) and len(ds.y_test) == 12
    assert ds.y_train.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    rgb = user.load_image_folder(root, image_size=4, channels=3)
    assert rgb.x_train.shape == (12, 4, 4, 3)
    enum = user.imagefolder_enumerable(root, [0, 1, 2, 3], n_train=3, n_test=3, image_size=8, feature_dim=5)
    assert enum["x_train"].shape == (4, 3, 64) and enum["f_test"].shape == (4, 3, 5)
    assert enum["class_names"] == ["ant", "bee", "cat", "dog"]
    with pytest.raises(ValueError, match="class 'ant' of .* has 3 train images, fewer than the 4 requested"):
        user.imagefolder_enumerable(root, n_train=4, n_test=3)
    (root / "ant" / "bad.png").write_text("not an image")
    with pytest.raises(ValueError, match="bad.png' is not a readable image"):
        user.load_image_folder(root)
    one = write_image_folder(tmp_path / "one", classes=("solo",))
    with pytest.raises(ValueError, match=r"has 1 class folders \['solo'\], fewer than the 2 needed"):
        user.load_image_folder(one)


def test_matrix_csv(tmp_path):
    f = tmp_path / "A.csv"
    f.write_text("p0,p1,p2\n0.9,0.8,0.7\n,0.9,0.8\n,,0.95\n")
    A = user.load_matrix_csv(f)
    assert A.shape == (3, 3) and np.isnan(A[2, 0]) and A[0, 2] == 0.7
    f.write_text("t,p0,p1\nr0,0.9,0.8\nr1,0.5,0.9\n")
    assert user.load_matrix_csv(f, nan_allowed="none").tolist() == [[0.9, 0.8], [0.5, 0.9]]
    f.write_text("0.9,0.8\n0.5\n")
    with pytest.raises(ValueError, match=r"is ragged: rows have \[1, 2\] cells"):
        user.load_matrix_csv(f)
    f.write_text("0.9,0.8,0.1,0.3\n0.5,0.9,0.2,0.3\n")
    with pytest.raises(ValueError, match=r"has 2 rows x 4 columns .*a performance matrix is square"):
        user.load_matrix_csv(f)
    f.write_text("0.9,\n0.5,0.9\n")
    with pytest.raises(ValueError, match=r"A matrix: .* missing value \(NaN\) at \[0, 1\] \(.*\); allowed: below the diagonal$"):
        user.load_matrix_csv(f)
    f.write_text("0.9,0.1\n0.5,abc\n")
    with pytest.raises(ValueError, match="row 1 has a non-numeric value 'abc'"):
        user.load_matrix_csv(f, name="R")


# R of examples/data/R.csv (bwt -0.3167, forgetting 0.3167) as two framework logs write it
R4 = [[0.95, 0.1, 0.12, 0.09], [0.7, 0.93, 0.11, 0.1], [0.55, 0.74, 0.92, 0.13], [0.48, 0.6, 0.77, 0.94]]


def _csv(rows):
    return "".join(",".join(f"{v:g}" for v in r) + "\n" for r in rows)


def test_matrix_with_an_average_column_is_refused_or_read_as_told(tmp_path):
    """Issue 28: a 4 x 5 all-numeric R (an "average" column at the end) was read as having an
    index column, silently: task 0 dropped, the average taken as task 3."""
    from clkit import metrics as mt

    f = tmp_path / "R_avg.csv"
    f.write_text(_csv([r + [float(np.mean(r))] for r in R4]))
    with pytest.raises(ValueError, match=r"R matrix: .*R_avg.csv' has 4 rows x 5 columns \(header row: no; index "
                                         r"column: no.*Nothing is guessed.*--columns"):
        user.load_matrix_csv(f, name="R", nan_allowed="above")
    lines = []
    R = user.load_matrix_csv(f, name="R", nan_allowed="above", cols="0:4", log=lines.append)
    assert R.tolist() == R4
    assert lines == [f"R matrix {str(f)!r}: read 4 x 4 (header row: no; index column: no; of 4 rows x 5 columns: "
                     "rows all, columns 0:4; scale 0-1)"]
    assert mt.backward_transfer(R) == pytest.approx(-0.3167, abs=1e-4)
    assert mt.forgetting(R) == pytest.approx(0.3167, abs=1e-4)
    assert user.load_matrix_csv(f, name="R", cols=[0, 1, 2, 3], log=None).tolist() == R4


def test_matrix_with_a_before_training_row_is_refused_or_read_as_told(tmp_path):
    """Issue 28: a 5 x 4 R whose first row holds the scores before training lost that row as a
    "header", silently."""
    f = tmp_path / "R_b.csv"
    f.write_text(_csv([[0.1, 0.12, 0.09, 0.11]] + R4))
    with pytest.raises(ValueError, match=r"has 5 rows x 4 columns \(header row: no.*--header.*--rows"):
        user.load_matrix_csv(f, name="R", nan_allowed="above")
    lines = []
    assert user.load_matrix_csv(f, name="R", rows="1:", log=lines.append).tolist() == R4
    assert "read 4 x 4 (header row: no; index column: no; of 5 rows x 4 columns: rows 1:, columns all" in lines[0]
    # a numeric header (pandas' column numbers) is taken only when declared
    f.write_text(_csv([[0, 1, 2, 3]] + R4))
    with pytest.raises(ValueError, match="has 5 rows x 4 columns"):
        user.load_matrix_csv(f, name="R")
    assert user.load_matrix_csv(f, name="R", header=True, log=None).tolist() == R4
    # pandas' to_csv with its row index: an empty first header cell marks the index column
    pd.DataFrame(R4, columns=[f"task_{j}" for j in range(4)]).to_csv(f)
    assert user.load_matrix_csv(f, name="R", log=lines.append).tolist() == R4
    assert "(header row: yes; index column: yes; scale 0-1)" in lines[-1]
    pd.DataFrame(R4).to_csv(f)  # numeric header and numeric index: both must be said
    with pytest.raises(ValueError, match=r"missing value \(NaN\) at \[0, 0\] .*pass header=True"):
        user.load_matrix_csv(f, name="R")
    assert user.load_matrix_csv(f, name="R", header=True, index_col=True, log=None).tolist() == R4
    with pytest.raises(ValueError, match=r"rows: \[7\] are not rows of a table with 4 rows"):
        user.load_matrix_csv(f, header=True, index_col=True, rows=[0, 1, 2, 7])
    with pytest.raises(ValueError, match="rows must be a slice like '1:'"):
        user.load_matrix_csv(f, header=True, index_col=True, rows="first")
    with pytest.raises(TypeError, match="header must be True, False or None"):
        user.load_matrix_csv(f, header="yes")


def test_matrix_in_percent_is_refused_or_rescaled_when_asked(tmp_path):
    """Issue 28: accuracies in percent were accepted without a word (the Drift Horizon's
    tolerances are absolute, so DH changed with the unit)."""
    f = tmp_path / "A_pct.csv"
    A = [[90.1, 85.9, 80.8], ["", 91.3, 86.9], ["", "", 90.0]]
    f.write_text("".join(",".join(str(v) for v in r) + "\n" for r in A))
    with pytest.raises(ValueError, match=r"A matrix: .* values outside \[0, 1\] \(e.g. 90.1, range 80.8 to 91.3\)"
                                         r".*looks like percent: pass scale='percent' \(clkit metrics: --percent\)"):
        user.load_matrix_csv(f)
    lines = []
    got = user.load_matrix_csv(f, scale="percent", log=lines.append)
    assert got[0].tolist() == pytest.approx([0.901, 0.859, 0.808]) and np.isnan(got[1, 0])
    assert "scale 0-100, divided by 100" in lines[0]
    f.write_text("0.9,1.2\n,0.8\n")
    with pytest.raises(ValueError, match=r"outside \[0, 1\] \(e.g. 1.2"):
        user.load_matrix_csv(f)
    f.write_text("0.9,-0.2\n,0.8\n")
    with pytest.raises(ValueError, match=r"outside \[0, 1\] \(e.g. -0.2.*scale='any'"):
        user.load_matrix_csv(f)
    f.write_text("12.5,80\n,3\n")  # errors (MSE): no range
    assert user.load_matrix_csv(f, scale="any", log=None)[0].tolist() == [12.5, 80.0]
    with pytest.raises(ValueError, match=r"scale must be one of \['unit', 'percent', 'any'\]"):
        user.load_matrix_csv(f, scale="fraction")


def test_metrics_cli_reads_only_what_it_is_told(tmp_path, capsys):
    """``clkit metrics cl|temporal`` on the issue's files: refused with the options named, or read
    as told with the shape printed; percent refused or rescaled with --percent."""
    from clkit.cli import main

    f = tmp_path / "R_avg.csv"
    f.write_text(_csv([r + [float(np.mean(r))] for r in R4]))
    assert main(["metrics", "cl", str(f)]) == 2
    err = capsys.readouterr().err
    assert "has 4 rows x 5 columns" in err and "--columns" in err and len(err.splitlines()) == 1
    assert main(["metrics", "cl", str(f), "--columns", "0:4", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "read 4 x 4 (header row: no; index column: no; of 4 rows x 5 columns: rows all, columns 0:4" in out
    res = json.loads((tmp_path / "o" / "metrics_cl.json").read_text())
    assert res["bwt"] == pytest.approx(-0.3167, abs=1e-4) and res["forgetting"] == pytest.approx(0.3167, abs=1e-4)
    b = tmp_path / "R_b.csv"
    b.write_text(_csv([[0.1, 0.12, 0.09, 0.11]] + R4))
    assert main(["metrics", "cl", str(b)]) == 2 and "has 5 rows x 4 columns" in capsys.readouterr().err
    assert main(["metrics", "cl", str(b), "--rows", "1,2,3,4", "--baseline", "0.1,0.12,0.09,0.11"]) == 0
    assert "rows [1, 2, 3, 4]" in capsys.readouterr().out
    # the same A(t, tau) as fractions and in percent: refused, or the same Drift Horizon with --percent
    A = EXAMPLES / "A.csv"
    pct = tmp_path / "A_pct.csv"
    pct.write_text("\n".join(",".join("" if not c else f"{100 * float(c):g}" for c in line.split(","))
                             for line in A.read_text().splitlines()[1:]) + "\n")
    assert main(["metrics", "temporal", str(pct)]) == 2
    assert "looks like percent" in capsys.readouterr().err
    for path, extra in ((A, []), (pct, ["--percent"])):
        assert main(["metrics", "temporal", str(path), "--out", str(tmp_path / path.stem), *extra]) == 0
    assert "divided by 100" in capsys.readouterr().out
    unit, percent = (json.loads((tmp_path / s / "metrics_temporal.json").read_text()) for s in ("A", "A_pct"))
    assert percent["dh"] == unit["dh"] and percent["per_period"]["dh"] == unit["per_period"]["dh"]
    assert percent["tas"] == pytest.approx(unit["tas"])
    assert main(["metrics", "cl", str(f), "--columns", "first"]) == 2
    assert "--columns must be a slice like '1:'" in capsys.readouterr().err


def test_period_table(tmp_path):
    f = tmp_path / "p.csv"
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"year": np.repeat([2001, 2000, 2002], 10), "f1": rng.normal(size=30),
                       "f2": rng.normal(size=30), "y": np.tile(["no", "yes"], 15)})
    df.to_csv(f, index=False)
    ds = user.load_period_table(f, period_column="year", label_column="y", test_fraction=0.3)
    assert ds.periods == ["2000", "2001", "2002"] and ds.num_classes == 2 and ds.input_shape == (2,)
    assert [len(a[1]) + len(b[1]) for a, b in zip(ds.train, ds.test)] == [10, 10, 10]
    with pytest.raises(ValueError, match=r"label_column: column\(s\) \['label'\] not in"):
        user.load_period_table(f, period_column="year")
    df.loc[3, "f2"] = np.nan
    df.to_csv(f, index=False)
    with pytest.raises(ValueError, match=r"column 'f2' of .* has a missing value \(NaN\) at row 3"):
        user.load_period_table(f, period_column="year", label_column="y")
    df = df.dropna()
    df.loc[len(df)] = [2003, 0.0, 0.0, "no"]
    df.to_csv(f, index=False)
    with pytest.raises(ValueError, match="period 2003 of .* has 1 rows; every period needs at least 2"):
        user.load_period_table(f, period_column="year", label_column="y")
    df.assign(y="no").to_csv(f, index=False)
    with pytest.raises(ValueError, match="has 1 class"):
        user.load_period_table(f, period_column="year", label_column="y")


def test_graph_file_and_class(tmp_path):
    from torch_geometric.data import Data

    g = Data(x=torch.randn(6, 3), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]), y=torch.tensor([0, 0, 1, 1, 5, 5]))
    torch.save(g, tmp_path / "g.pt")
    out = user.load_graph_file(tmp_path / "g.pt")
    assert out.num_nodes == 6 and out.y.tolist() == [0, 0, 1, 1, 2, 2]  # relabelled to 0..C-1
    with pytest.raises(ValueError, match="has 3 classes, fewer than the 4 needed"):
        user.load_graph_file(tmp_path / "g.pt", min_classes=4)
    torch.save({"x": torch.randn(3, 2), "y": torch.tensor([0, 1, 1])}, tmp_path / "noedges.pt")
    with pytest.raises(ValueError, match=r"has no \['edge_index'\]"):
        user.load_graph_file(tmp_path / "noedges.pt")
    bad = Data(x=torch.tensor([[0.0], [float("nan")]]), edge_index=torch.tensor([[0], [1]]), y=torch.tensor([0, 1]))
    torch.save(bad, tmp_path / "nan.pt")
    with pytest.raises(ValueError, match=r"NaN in the node features x \(node 1\)"):
        user.load_graph_file(tmp_path / "nan.pt")
    (tmp_path / "junk.pt").write_text("junk")
    with pytest.raises(ValueError, match="cannot be read with torch.load"):
        user.load_graph_file(tmp_path / "junk.pt")
    karate = user.load_graph_class("torch_geometric.datasets:KarateClub", tmp_path)
    assert karate.num_nodes == 34 and karate.num_classes == 4
    with pytest.raises(ValueError, match="dataset: 'torch_geometric.datasets:Nope' cannot be loaded"):
        user.load_graph_class("torch_geometric.datasets:Nope", tmp_path)


def test_labels(tmp_path):
    np.save(tmp_path / "y.npy", np.array([0, 1, 1, 2]))
    assert user.load_labels(tmp_path / "y.npy").tolist() == [0, 1, 1, 2]
    np.save(tmp_path / "f.npy", np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match="allowed: integer class labels"):
        user.load_labels(tmp_path / "f.npy")
    np.save(tmp_path / "m.npy", np.zeros((2, 2), int))
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        user.load_labels(tmp_path / "m.npy")


def test_relative_paths_resolve_against_the_invoking_folder(tmp_path, monkeypatch):
    """clkit run executes notebooks in notebooks/; a path typed relative to the shell's folder ($PWD) works."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "A.csv").write_text("0.9,0.8\n,0.9\n")
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    monkeypatch.setenv("PWD", str(tmp_path))
    assert user.load_matrix_csv("sub/A.csv").shape == (2, 2)
    with pytest.raises(FileNotFoundError, match=r"'sub/B.csv' does not exist \(looked in"):
        user.load_matrix_csv("sub/B.csv")
